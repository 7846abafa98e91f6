"""Committed offsets: OffsetCommit / OffsetFetch / OffsetDelete (KIP-848 "OffsetCommit API",
"OffsetFetch API"; Kafka's OffsetMetadataManager).

Offsets are records keyed by (group, topic name, partition); the value keeps the topic id so a
recreated topic does not inherit the old topic's offsets. Member checks (invariant I6):

- A commit from a member of a consumer group carries its member epoch in
  GenerationIdOrMemberEpoch: unknown member -> UNKNOWN_MEMBER_ID; an epoch greater than the
  member's -> STALE_MEMBER_EPOCH as Kafka's ``ConsumerGroup.validateMemberEpoch`` answers (the
  KIP-848 text says FENCED_MEMBER_EPOCH; a connect group keeps it, as the Connect draft);
  smaller -> checked per partition (KIP-1251, Kafka 4.3, ``assignment_epochs.py``): accepted
  for a partition the member has held since that epoch or earlier, STALE_MEMBER_EPOCH for the
  others. A member using the classic protocol keeps the exact generation check, and a
  mismatch is ILLEGAL_GENERATION (Kafka's ``validateMemberEpoch``).
- The empty group id: OffsetCommit and OffsetFetch accept it as Kafka does ("for backwards
  compatibility", GroupCoordinatorService); OffsetDelete answers INVALID_GROUP_ID.
- A commit at a negative epoch (the admin client, or a consumer without group management:
  librdkafka's simple consumer sends its own member id with -1) is allowed while the group
  has no member (UNKNOWN_MEMBER_ID otherwise, or STALE_MEMBER_EPOCH for a member's own id),
  and creates offsets for a group that does not exist yet (Kafka's
  ``ConsumerGroup.validateOffsetCommit`` and ``OffsetMetadataManager.validateOffsetCommit``).
- A commit at an epoch >= 0 for a group that does not exist: GROUP_ID_NOT_FOUND from v9 on,
  ILLEGAL_GENERATION before; a consumer-protocol member's commit below v9: UNSUPPORTED_VERSION
  (the same two methods).
- OffsetFetch with a member id (v9, consumer protocol) checks the member and its epoch
  (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); without one it is an admin read. A fetch for a
  group that does not exist answers -1 offsets without error, with or without a member id.
- OffsetFetch with RequireStable (v7+) answers UNSTABLE_OFFSET_COMMIT for a partition with a
  pending transactional offset (Kafka's ``fetchOffsets``; ``transactional_offsets.py``).
- OffsetDelete refuses partitions of topics the group is subscribed to
  (GROUP_SUBSCRIBED_TO_TOPIC), answers GROUP_ID_NOT_FOUND for an unknown group and
  NON_EMPTY_GROUP for a classic group with members that does not use the consumer protocol
  type (Kafka's ``ClassicGroup.validateOffsetDelete``).

Choice recorded here: a commit for a topic the metadata image does not know, or a partition
beyond its count, is UNKNOWN_TOPIC_OR_PARTITION (as a Kafka broker answers); a topic id that
does not resolve is UNKNOWN_TOPIC_ID.

Hot path (the simulator's: members auto-commit every owned partition every 5 s): a commit validates
all its partitions, then appends their records as one batch (``Shard.append_batch`` with
:func:`replay_commit`, one dispatch per request instead of one per partition, and one lookup of
the group's offsets). The records, their order and the state are those of appending each record
as its partition is validated; a rebuild replays them one by one through :func:`replay`. The
keys of the records and the results of accepted partitions are shared values (built once per
partition, not once per commit). Not done here: commits are not coalesced across requests, and
every accepted partition still gets its own record (compaction keeps the newest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from groupcoord.coordinator import transactional_offsets
from groupcoord.coordinator.group import PartitionCheck
from groupcoord.coordinator.messages import (
    FetchedPartition,
    FetchedTopic,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
    TopicResult,
)
from groupcoord.coordinator.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    new_offset_record,
    offset_commit_record,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

MAX_METADATA_SIZE = 4096
_E = ErrorCode


def replay(shard: ShardContext, record: Record) -> None:
    """Apply one offset commit record (a value or a tombstone) to the shard's offsets."""
    key: OffsetCommitKey = record.key  # type: ignore[assignment]
    value: OffsetCommitValue | None = record.value  # type: ignore[assignment]
    if value is None:
        offs = shard.offsets.get(key.group_id)
        if offs is not None:
            offs.pop((key.topic, key.partition), None)
            if not offs:
                del shard.offsets[key.group_id]
        return
    _group_offsets(shard, key.group_id)[(key.topic, key.partition)] = value
    if shard.txn_offsets.pending:
        shard.txn_offsets.committed(key.group_id, key.topic, key.partition)


def _group_offsets(shard: ShardContext, group_id: str) -> dict[tuple[str, int], OffsetCommitValue]:
    """The group's committed offsets, created empty if it has none."""
    offs = shard.offsets.get(group_id)
    if offs is None:
        offs = shard.offsets[group_id] = {}
    return offs


def _validate_member(shard: ShardContext, group_id: str, member_id: str | None, epoch: int,
                     committing: bool, group_instance_id: str | None = None,
                     api_version: int = 10) -> None:
    group = shard.groups.get(group_id)
    if group is None:
        if epoch < 0 or not committing:
            # A fetch for a group that does not exist (never created, or deleted) is answered
            # with -1 offsets and no error, member id or not (Kafka's fetchOffsets). A commit
            # at a negative epoch is accepted whatever member id it carries: Kafka 4.3's
            # ``OffsetMetadataManager.validateOffsetCommit`` takes it for the admin client or
            # a consumer without group management and creates a simple group (here: offsets
            # with no group).
            return
        # Kafka's OffsetMetadataManager.validateOffsetCommit: a member's commit (epoch >= 0)
        # to a group that does not exist is GROUP_ID_NOT_FOUND from version 9 on (both group
        # protocols understand it), ILLEGAL_GENERATION before (what older clients expect).
        if api_version >= 9:
            raise CoordinatorError(_E.group_id_not_found, f"Group {group_id} not found.")
        raise CoordinatorError(_E.illegal_generation,
                               f"Group {group_id} has no generation {epoch}.")
    if committing:
        group.validate_offset_commit_version(member_id or "", epoch, api_version)
    group.validate_offset_request(group_id, member_id or "", epoch, committing,
                                  group_instance_id=group_instance_id)


def replay_commit(shard: ShardContext, group_id: str, records: list[Record]) -> None:
    """Replay the records of one commit of ``group_id`` in order: the effect of :func:`replay`
    on each, whose records are all values (no tombstone) of that one group, so the group's
    offsets are looked up (or created) once instead of once per record."""
    if not records:
        return  # replaying nothing creates no offsets
    offs = _group_offsets(shard, group_id)
    for record in records:
        key: OffsetCommitKey = record.key  # type: ignore[assignment]
        offs[(key.topic, key.partition)] = record.value  # type: ignore[assignment]
    txn = shard.txn_offsets
    if txn.pending and group_id in txn.pending:
        for record in records:
            key = record.key  # type: ignore[assignment]
            txn.committed(group_id, key.topic, key.partition)


#: A commit's keys and accepted partition results are values that nothing mutates, the same
#: for every commit of a partition (members auto-commit every owned partition every few
#: seconds): each is built once and shared, like the keys ``Record.decode`` shares.
#: ``_KEYS`` holds a group's keys of one topic by partition, bounded (cleared when full); an
#: accepted result depends on the partition index only (below the topic's partition count).
_KEYS: dict[tuple[str, str], dict[int, OffsetCommitKey]] = {}
_KEYS_SIZE = 8192
_ACCEPTED: dict[int, PartitionResult] = {}


def _topic_keys(group_id: str, topic: str) -> dict[int, OffsetCommitKey]:
    if len(_KEYS) >= _KEYS_SIZE:
        _KEYS.clear()
    keys: dict[int, OffsetCommitKey] = {}
    _KEYS[(group_id, topic)] = keys
    return keys


def _older_epoch_check(shard: ShardContext, group_id: str,
                       r: OffsetCommitRequest) -> PartitionCheck | None:
    """KIP-1251 (Kafka 4.3): a commit from a member of a consumer group (not using the classic
    protocol) at an epoch older than its own is checked per partition
    (``Group.older_epoch_commit_check``) instead of refused as a whole; None: the usual checks."""
    group = shard.groups.get(group_id)
    if group is None or not r.member_id:
        return None
    return group.older_epoch_commit_check(r.member_id, r.generation_id_or_member_epoch)


def commit(shard: ShardContext, r: OffsetCommitRequest, now: int) -> OffsetCommitResponse:
    """Validate a commit, then write one offset record per accepted partition. The records are
    appended as one batch (``Shard.append_batch``) after the validation of every partition,
    which is the same state as appending each as it is validated: the validation reads only
    the metadata image and the group, never offsets."""
    gid = r.group_id
    check = _older_epoch_check(shard, gid, r)
    if check is None:
        _validate_member(shard, gid, r.member_id, r.generation_id_or_member_epoch, True,
                         r.group_instance_id, r.api_version)
    image = shard.metadata
    expire = now + r.retention_time_ms if r.retention_time_ms > 0 else -1
    topics = []
    records: list[Record] = []
    ok = _E.none
    for t in r.topics:
        name = t.name
        topic = image.by_id.get(t.topic_id) if t.topic_id is not None else image.by_name.get(name)
        if t.topic_id is not None and topic is not None:
            name = topic.name
        results = []
        if topic is None:
            code = _E.unknown_topic_id if t.topic_id is not None else _E.unknown_topic_or_partition
            results = [PartitionResult(p.partition_index, code) for p in t.partitions]
        else:
            topic_id = topic.topic_id
            num_partitions = topic.num_partitions
            keys = _KEYS.get((gid, name))
            if keys is None:
                keys = _topic_keys(gid, name)
            for p in t.partitions:
                index = p.partition_index
                metadata = p.committed_metadata
                if not 0 <= index < num_partitions:
                    results.append(PartitionResult(index, _E.unknown_topic_or_partition))
                elif metadata is not None and len(metadata) > MAX_METADATA_SIZE:
                    results.append(PartitionResult(index, _E.offset_metadata_too_large))
                elif check is not None and not check(topic_id, index):
                    results.append(PartitionResult(index, _E.stale_member_epoch))
                else:
                    key = keys.get(index)
                    if key is None:
                        key = keys[index] = OffsetCommitKey(gid, name, index)
                    records.append(new_offset_record(
                        key, p.committed_offset, p.committed_leader_epoch, metadata or "", now,
                        expire, topic_id))
                    accepted = _ACCEPTED.get(index)
                    if accepted is None:
                        accepted = _ACCEPTED[index] = PartitionResult(index, ok)
                    results.append(accepted)
        topics.append(TopicResult(name, tuple(results), t.topic_id))
    if records:
        shard.append_batch(records, lambda batch: replay_commit(shard, gid, batch))
    return OffsetCommitResponse(tuple(topics))


def fetch(shard: ShardContext, r: OffsetFetchRequest, now: int) -> OffsetFetchResponse:
    if r.member_id:
        _validate_member(shard, r.group_id, r.member_id, r.member_epoch, False)
    offs = shard.offsets.get(r.group_id, {})
    image = shard.metadata
    topics = []
    by_topic: dict[str, list[int]] = {}
    if r.topics is None:
        for (topic, partition) in sorted(offs):
            by_topic.setdefault(topic, []).append(partition)
        if r.require_stable:  # partitions with only a pending offset are unstable too
            for pid in shard.txn_offsets.open_producers(r.group_id):
                for (topic, partition) in sorted(shard.txn_offsets.of(r.group_id, pid)):
                    if (topic, partition) not in offs:
                        parts = by_topic.setdefault(topic, [])
                        if partition not in parts:
                            parts.append(partition)
            for parts in by_topic.values():
                parts.sort()
    wanted: list[tuple[str, UUID | None, list[int]]] = []
    if r.topics is None:
        wanted = [(name, None, parts) for name, parts in by_topic.items()]
    else:
        for t in r.topics:
            name = t.name
            if t.topic_id is not None:
                meta = image.by_id.get(t.topic_id)
                name = meta.name if meta is not None else ""
            wanted.append((name, t.topic_id, list(t.partition_indexes)))
    stable = r.require_stable and r.group_id in shard.txn_offsets.pending
    for name, topic_id, partitions in wanted:
        meta = image.by_name.get(name)
        out = []
        for p in partitions:
            if stable and shard.txn_offsets.has_pending(r.group_id, name, p):
                out.append(FetchedPartition(p, error_code=_E.unstable_offset_commit))
                continue
            v = offs.get((name, p))
            if v is not None and v.topic_id is not None and meta is not None and v.topic_id != meta.topic_id:
                v = None  # committed for an earlier incarnation of a recreated topic
            if topic_id is not None and meta is None:
                out.append(FetchedPartition(p, error_code=_E.unknown_topic_id))
            elif v is None:
                out.append(FetchedPartition(p))
            else:
                out.append(FetchedPartition(p, v.offset, v.leader_epoch, v.metadata))
        topics.append(FetchedTopic(name, tuple(out), topic_id if topic_id is not None else
                                   (meta.topic_id if meta is not None else None)))
    return OffsetFetchResponse(r.group_id, tuple(topics))


def delete(shard: ShardContext, r: OffsetDeleteRequest, now: int) -> OffsetDeleteResponse:
    if not r.group_id:
        raise CoordinatorError(_E.invalid_group_id, "The group id can't be empty.")
    group = shard.groups.get(r.group_id)
    offs = shard.offsets.get(r.group_id)
    if group is None and offs is None and r.group_id not in shard.txn_offsets.pending:
        raise CoordinatorError(_E.group_id_not_found, f"Group {r.group_id} not found.")
    if group is not None:
        group.validate_offset_delete()
    topics = []
    for t in r.topics:
        name = t.name
        results = []
        for p in t.partition_indexes:
            if group is not None and group.is_subscribed_to(name):
                results.append(PartitionResult(p, _E.group_subscribed_to_topic))
                continue
            if offs is not None and (name, p) in offs:
                shard.append(offset_commit_record(r.group_id, name, p, None))
            transactional_offsets.drop_pending(shard, r.group_id, name, p)
            results.append(PartitionResult(p, _E.none))
        topics.append(TopicResult(name, tuple(results)))
    return OffsetDeleteResponse(tuple(topics))


def error_response(request: Any, e: CoordinatorError) -> Any:
    """The error response of an offsets or admin request failing as a whole."""
    from groupcoord.coordinator import messages as m

    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(tuple(
            TopicResult(t.name, tuple(PartitionResult(p.partition_index, e.code)
                                      for p in t.partitions), t.topic_id)
            for t in request.topics), e.code, e.message)
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(request.group_id, (), e.code, e.message)
    if isinstance(request, OffsetDeleteRequest):
        return OffsetDeleteResponse((), e.code, e.message)
    if isinstance(request, m.DescribeGroupConfigsRequest):
        return m.DescribeGroupConfigsResponse(request.group_id, (), e.code, e.message)
    if isinstance(request, m.AlterGroupConfigsRequest):
        return m.AlterGroupConfigsResponse(request.group_id, e.code, e.message)
    if isinstance(request, m.ListGroupsRequest):
        return m.ListGroupsResponse((), e.code)
    response = transactional_offsets.error_response(request, e)
    if response is not None:
        return response
    raise e
