"""Transactional offsets: TxnOffsetCommit and the end of a transaction in a group (KIP-98,
KIP-447; Kafka's ``OffsetMetadataManager.commitTransactionalOffset`` and
``replayEndTransactionMarker``, read in a 4.0 snapshot of apache/kafka and the 4.x
``ConsumerGroup.validateOffsetCommit``).

- **TxnOffsetCommit** stores each accepted partition's offset as *pending* for (group,
  producer id): a record per partition (``records.py``: type 48). OffsetFetch does not return
  it; with RequireStable it answers UNSTABLE_OFFSET_COMMIT for the partition (``offsets.py``).
- **KIP-447 fencing** (``Group.validate_transactional_offset_commit``): a request without group
  metadata (generation -1, no member id, no instance id: TxnOffsetCommit v0-v2, or a producer
  given only a group id) is accepted whatever the group; otherwise the member, its generation
  (or KIP-848 member epoch) and instance id are checked as an OffsetCommit's, a stale member
  epoch answered ILLEGAL_GENERATION, and a classic group's state is not checked (a transaction
  may commit while the group completes a rebalance). A group that does not exist accepts a
  request at generation -1 (Kafka creates a simple group; here offsets without a group) and
  answers ILLEGAL_GENERATION otherwise.
- **Producer epochs**: a TxnOffsetCommit or a marker at an epoch older than the producer's
  latest in the group is INVALID_PRODUCER_EPOCH, a marker from an older transaction
  coordinator epoch TRANSACTION_COORDINATOR_FENCED (what the producer state of Kafka's
  ``__consumer_offsets`` partition answers, ``ProducerAppendInfo``).
- **End of a transaction** (:func:`complete`, the transaction coordinator's marker for the
  group): on commit each pending offset becomes the committed offset unless a regular commit of
  its partition was written after it (Kafka keeps the most recent of the two); on abort they are
  dropped. Its records: the committed offsets, tombstones of the pending ones, the producer's
  epochs (type 49). Choice (the brief of this interface): one call per group, where Kafka's
  marker covers every group of a ``__consumer_offsets`` partition. A marker for a producer with
  nothing pending (a repeated marker after a restart of the transaction coordinator) only
  records the producer's epochs.
- **Deletion** (Kafka's ``deleteOffsets``, ``deleteAllOffsets``, ``cleanupExpiredOffsets``):
  OffsetDelete and DeleteGroups drop the pending offsets of the partitions they delete; the
  offsets retention keeps an offset with a pending transactional offset and never deletes a
  group with an open transaction (``offsets_retention.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.coordinator.messages import (
    CompleteTransactionRequest,
    CompleteTransactionResponse,
    PartitionResult,
    TopicResult,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from groupcoord.coordinator.records import (
    OffsetCommitKey,
    Record,
    TxnOffsetCommitValue,
    TxnOffsetKey,
    TxnProducerKey,
    TxnProducerValue,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

_E = ErrorCode
#: Kafka's ``OffsetConfig.offsetMetadataMaxSize`` default (as ``offsets.py``).
MAX_METADATA_SIZE = 4096


def replay_offset(shard: ShardContext, record: Record) -> None:
    shard.txn_offsets.replay_offset(record.key, record.value)  # type: ignore[arg-type]


def replay_producer(shard: ShardContext, record: Record) -> None:
    shard.txn_offsets.replay_producer(record.key, record.value)  # type: ignore[arg-type]


def _check_epoch(shard: ShardContext, group_id: str, producer_id: int, epoch: int) -> None:
    known = shard.txn_offsets.epoch(group_id, producer_id)
    if known is not None and epoch < known:
        raise CoordinatorError(_E.invalid_producer_epoch,
                               f"Producer {producer_id} at epoch {epoch} is older than its "
                               f"epoch {known} in group {group_id}.")


def commit(shard: ShardContext, r: TxnOffsetCommitRequest, now: int) -> TxnOffsetCommitResponse:
    """TxnOffsetCommit: validate (module docstring), then one pending offset record per
    accepted partition."""
    gid = r.group_id
    if not gid:
        raise CoordinatorError(_E.invalid_group_id, "The group id can't be empty.")
    if r.producer_id < 0 or r.producer_epoch < 0:
        raise CoordinatorError(_E.invalid_producer_id_mapping,
                               f"No transactional producer id {r.producer_id} epoch "
                               f"{r.producer_epoch}.")
    group = shard.groups.get(gid)
    if group is None:
        if r.generation_id >= 0:
            raise CoordinatorError(_E.illegal_generation,
                                   f"Group {gid} has no generation {r.generation_id}.")
    else:
        group.validate_transactional_offset_commit(gid, r.member_id, r.generation_id,
                                                   r.group_instance_id)
    _check_epoch(shard, gid, r.producer_id, r.producer_epoch)
    image = shard.metadata
    topics = []
    for t in r.topics:
        topic = image.by_name.get(t.name)
        results = []
        for p in t.partitions:
            index = p.partition_index
            if topic is None or not 0 <= index < topic.num_partitions:
                results.append(PartitionResult(index, _E.unknown_topic_or_partition))
            elif p.committed_metadata is not None and len(p.committed_metadata) > MAX_METADATA_SIZE:
                results.append(PartitionResult(index, _E.offset_metadata_too_large))
            else:
                shard.append(Record(TxnOffsetKey(gid, r.producer_id, t.name, index),
                                    TxnOffsetCommitValue(r.producer_epoch, p.committed_offset,
                                                         p.committed_leader_epoch,
                                                         p.committed_metadata or "", now,
                                                         topic.topic_id)))
                results.append(PartitionResult(index, _E.none))
        topics.append(TopicResult(t.name, tuple(results)))
    return TxnOffsetCommitResponse(tuple(topics))


def complete(shard: ShardContext, r: CompleteTransactionRequest,
             now: int) -> CompleteTransactionResponse:
    """The end marker of the producer's transaction for the group (module docstring)."""
    gid, pid = r.group_id, r.producer_id
    txn = shard.txn_offsets
    _check_epoch(shard, gid, pid, r.producer_epoch)
    known_coordinator = txn.coordinator_epoch(gid, pid)
    if r.coordinator_epoch < known_coordinator:
        raise CoordinatorError(_E.transaction_coordinator_fenced,
                               f"Marker of producer {pid} from coordinator epoch "
                               f"{r.coordinator_epoch}, older than {known_coordinator}.")
    for (topic, partition), p in sorted(txn.of(gid, pid).items()):
        if r.commit and not p.superseded:
            # Pending offsets of other producers written after this one stay newer than the
            # offset it commits: written again after it (Kafka compares record offsets).
            later = txn.newer_than(gid, topic, partition, p.seq)
            shard.append(Record(OffsetCommitKey(gid, topic, partition), p.value.committed()))
            for other_pid, other in later:
                if other_pid != pid:
                    shard.append(Record(TxnOffsetKey(gid, other_pid, topic, partition),
                                        other.value))
        shard.append(Record(TxnOffsetKey(gid, pid, topic, partition), None))
    value = TxnProducerValue(r.producer_epoch, max(r.coordinator_epoch, known_coordinator))
    if txn.producers.get(gid, {}).get(pid) != value:
        shard.append(Record(TxnProducerKey(gid, pid), value))
    return CompleteTransactionResponse()


def drop_pending(shard: ShardContext, group_id: str, topic: str, partition: int) -> None:
    """Tombstones for every pending offset of the partition in the group (its committed offset
    is deleted: Kafka's offset tombstone removes the pending ones too)."""
    txn = shard.txn_offsets
    for pid in txn.open_producers(group_id):
        if (topic, partition) in txn.of(group_id, pid):
            shard.append(Record(TxnOffsetKey(group_id, pid, topic, partition), None))


def drop_group(shard: ShardContext, group_id: str) -> None:
    """Tombstones for the group's pending offsets and transactional producers (the group is
    deleted)."""
    txn = shard.txn_offsets
    for pid in txn.open_producers(group_id):
        for topic, partition in sorted(txn.of(group_id, pid)):
            shard.append(Record(TxnOffsetKey(group_id, pid, topic, partition), None))
    for pid in sorted(txn.producers.get(group_id, {})):
        shard.append(Record(TxnProducerKey(group_id, pid), None))


def error_response(request: object, e: CoordinatorError) -> object | None:
    """The error response of a transactional request failing as a whole; None for another."""
    if isinstance(request, TxnOffsetCommitRequest):
        return TxnOffsetCommitResponse(tuple(
            TopicResult(t.name, tuple(PartitionResult(p.partition_index, e.code)
                                      for p in t.partitions)) for t in request.topics),
            e.code, e.message)
    if isinstance(request, CompleteTransactionRequest):
        return CompleteTransactionResponse(e.code, e.message)
    return None
