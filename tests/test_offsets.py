"""OffsetCommit / OffsetFetch / OffsetDelete (KIP-848 "OffsetCommit API", "OffsetFetch API";
invariant I6), one test per error code and rule of ``coordinator/offsets.py``'s docstring.
"""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
)
from groupcoord.coordinator.offsets import MAX_METADATA_SIZE
from groupcoord.coordinator.records import OffsetCommitKey, Record, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image, topic_id

E = ErrorCode


# ----------------------------------------------------------------------------- helpers


def commit_req(group: str = "g", member: str = "", epoch: int = -1,
               **topics: dict[int, int]) -> OffsetCommitRequest:
    """``commit_req("g", "A", 1, foo={0: 10, 1: 20})``."""
    return OffsetCommitRequest(
        group_id=group, member_id=member, generation_id_or_member_epoch=epoch,
        topics=tuple(OffsetCommitTopic(name, tuple(OffsetCommitPartition(p, o)
                                                   for p, o in sorted(ps.items())))
                     for name, ps in topics.items()))


def codes(r: OffsetCommitResponse) -> dict[str, list[tuple[int, int]]]:
    return {t.name: [(p.partition_index, p.error_code) for p in t.partitions] for t in r.topics}


def fetched(r: OffsetFetchResponse) -> dict[str, dict[int, int]]:
    """topic -> partition -> committed offset (-1 when none)."""
    assert r.error_code == 0, r.error_message
    out: dict[str, dict[int, int]] = {}
    for t in r.topics:
        for p in t.partitions:
            assert p.error_code == 0
            out.setdefault(t.name, {})[p.partition_index] = p.committed_offset
    return out


def offset_records(records: list[Record]) -> list[Record]:
    return [rec for rec in records if rec.key.type is RecordType.OFFSET_COMMIT]


def group_with_member(partitions: int = 2) -> tuple[Shard, Client]:
    """Group "g" with member A alone at epoch 1 owning foo."""
    shard = Shard(metadata=image(foo=partitions, bar=1))
    c = Client(shard)
    assert c.heartbeat("A", 0).member_epoch == 1
    return shard, c


def group_with_member_at_epoch_2() -> tuple[Shard, Client]:
    """A at epoch 2 (previous epoch 1), B at 2: for stale/fenced epochs on both sides."""
    shard = Shard(metadata=image(foo=2, bar=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    c.heartbeat("B", 0)
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert c.heartbeat("A", 1, owned_tps=["foo-0"]).member_epoch == 2
    return shard, c


def assert_commit_refused(c: Client, req: OffsetCommitRequest, code: int) -> None:
    before, n = c.shard.state_digest(), len(c.records)
    r = c.handle(req)
    assert r.error_code == code, r.error_message
    assert r.error_message and r.error_message.strip()
    # Every partition of the request carries the group-level error.
    assert {ec for parts in codes(r).values() for _, ec in parts} == {code}
    assert len(c.records) == n
    assert c.shard.state_digest() == before


# ----------------------------------------------------------------------------- OffsetCommit


def test_commit_with_member_epoch_ok() -> None:
    """Upstream: ConsumerGroup.validateOffsetCommit (the member at its epoch)."""
    _, c = group_with_member()
    n = len(c.records)
    c.now = 1_000
    r = c.handle(commit_req("g", "A", 1, foo={0: 10, 1: 20}))
    assert r.error_code == 0 and r.error_message is None
    assert codes(r) == {"foo": [(0, 0), (1, 0)]}
    recs = offset_records(c.records[n:])
    assert [(rec.key.topic, rec.key.partition, rec.value.offset) for rec in recs] == [
        ("foo", 0, 10), ("foo", 1, 20)]
    assert all(rec.value.topic_id == topic_id("foo") for rec in recs)
    assert all(rec.value.commit_timestamp == 1_000 for rec in recs)
    assert fetched(c.handle(OffsetFetchRequest("g"))) == {"foo": {0: 10, 1: 20}}


def test_commit_stores_leader_epoch_metadata_and_retention() -> None:
    shard, c = group_with_member()
    c.now = 5_000
    req = OffsetCommitRequest("g", (OffsetCommitTopic("foo", (
        OffsetCommitPartition(0, 42, committed_leader_epoch=7, committed_metadata="meta"),)),),
        generation_id_or_member_epoch=1, member_id="A", retention_time_ms=60_000)
    assert c.handle(req).error_code == 0
    v = shard.offsets["g"][("foo", 0)]
    assert (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp) == (
        42, 7, "meta", 5_000, 65_000)
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0,)),)))
    p = r.topics[0].partitions[0]
    assert (p.committed_offset, p.committed_leader_epoch, p.metadata) == (42, 7, "meta")


def test_commit_unknown_member_id() -> None:
    """Upstream: ConsumerGroup.validateOffsetCommit (getOrMaybeCreateMember: UNKNOWN_MEMBER_ID)."""
    _, c = group_with_member()
    assert_commit_refused(c, commit_req("g", "Z", 1, foo={0: 1}), E.unknown_member_id)


def test_commit_ahead_of_the_member_epoch_is_stale_member_epoch() -> None:
    """Kafka's ``ConsumerGroup.validateMemberEpoch`` (via ``validateOffsetCommit``): an epoch
    ahead of the member's is STALE_MEMBER_EPOCH, as any other epoch than its own; the KIP-848
    text's FENCED_MEMBER_EPOCH is not what Kafka answers (nor what its consumer expects from
    an OffsetCommit)."""
    _, c = group_with_member()
    assert_commit_refused(c, commit_req("g", "A", 2, foo={0: 1}), E.stale_member_epoch)


def test_commit_at_an_older_epoch_is_checked_per_partition() -> None:
    """KIP-1251 (Kafka 4.3): A got foo-0 at epoch 1 and kept it at epoch 2; foo-1 was revoked.
    A commit at epoch 1 is accepted for foo-0 and STALE_MEMBER_EPOCH for foo-1 (A no longer
    holds it); at epoch 0 (before A got foo-0) both are stale.
    Upstream: ConsumerGroup.validateOffsetCommit with KIP-1251's assignment epochs (Kafka 4.3).
    """
    shard, c = group_with_member_at_epoch_2()
    assert shard.groups["g"].members["A"].member_epoch == 2
    n = len(c.records)
    r = c.handle(commit_req("g", "A", 1, foo={0: 7, 1: 8}))
    assert r.error_code == 0, r.error_message
    assert codes(r) == {"foo": [(0, 0), (1, E.stale_member_epoch)]}
    assert [(rec.key.partition, rec.value.offset) for rec in offset_records(c.records[n:])] == [
        (0, 7)]
    r = c.handle(commit_req("g", "A", 0, foo={0: 9}))
    assert codes(r) == {"foo": [(0, E.stale_member_epoch)]}
    assert fetched(c.handle(OffsetFetchRequest("g"))) == {"foo": {0: 7}}
    # The current epoch works for what A holds.
    assert c.handle(commit_req("g", "A", 2, foo={0: 1})).error_code == 0


def test_partition_assigned_at_a_later_epoch_refuses_an_older_commit() -> None:
    """B got foo-1 at epoch 2 (once A released it): a commit of B at epoch 1 for foo-1 is
    STALE_MEMBER_EPOCH (a zombie's commit stays fenced), at epoch 2 it is accepted.
    Upstream: ConsumerGroup.validateOffsetCommit with KIP-1251's assignment epochs (Kafka 4.3).
    """
    shard, c = group_with_member_at_epoch_2()
    c.heartbeat("B", 2, owned_tps=[])
    b = shard.groups["g"].members["B"]
    assert (b.member_epoch, b.assigned_partitions.get(topic_id("foo"))) == (2, frozenset({1}))
    r = c.handle(commit_req("g", "B", 1, foo={1: 5}))
    assert codes(r) == {"foo": [(1, E.stale_member_epoch)]}
    r = c.handle(commit_req("g", "B", 2, foo={1: 5}))
    assert codes(r) == {"foo": [(1, 0)]}


def test_assignment_epochs_survive_a_rebuild_from_the_log() -> None:
    """The current-assignment record carries the assignment epochs (KIP-1251's tagged
    AssignmentEpochs): a shard rebuilt from the records accepts the same older commit."""
    shard, c = group_with_member_at_epoch_2()
    rebuilt = Shard(metadata=image(foo=2, bar=1))
    rebuilt.replay_all(Record.decode(*rec.encode()) for rec in c.records)
    assert rebuilt.groups["g"].members["A"].assignment_epochs == \
        shard.groups["g"].members["A"].assignment_epochs == {topic_id("foo"): {0: 1}}
    r = rebuilt.handle(commit_req("g", "A", 1, foo={0: 7}), 10).response
    assert codes(r) == {"foo": [(0, 0)]}


def test_commit_with_member_epoch_does_not_touch_membership() -> None:
    shard, c = group_with_member()
    before = shard.state_digest()["groups"]
    c.handle(commit_req("g", "A", 1, foo={0: 1}))
    assert shard.state_digest()["groups"] == before


def test_member_commit_on_nonexistent_group_is_group_id_not_found() -> None:
    """Kafka's ``OffsetMetadataManager.validateOffsetCommit``: a commit with a member epoch
    (>= 0) for a group that does not exist (e.g. deleted) is GROUP_ID_NOT_FOUND from
    OffsetCommit v9 on, ILLEGAL_GENERATION before; nothing is created."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(commit_req("gone", "A", 3, foo={0: 1}))
    assert r.error_code == E.group_id_not_found and r.error_message
    assert codes(r) == {"foo": [(0, E.group_id_not_found)]}
    old = replace(commit_req("gone", "A", 3, foo={0: 1}), api_version=8)
    r = c.handle(old)
    assert r.error_code == E.illegal_generation and codes(r) == {"foo": [(0, E.illegal_generation)]}
    assert c.records == [] and shard.offsets == {} and shard.groups == {}


def test_consumer_protocol_member_commit_below_v9_is_unsupported_version() -> None:
    """Kafka's ``ConsumerGroup.validateOffsetCommit``: a member of the consumer protocol commits
    with OffsetCommit v9 or later (the version that carries a member epoch); v8 is
    UNSUPPORTED_VERSION, v9 is accepted; an unknown member stays UNKNOWN_MEMBER_ID."""
    _, c = group_with_member()
    assert_commit_refused(c, replace(commit_req("g", "A", 1, foo={0: 1}), api_version=8),
                          E.unsupported_version)
    assert_commit_refused(c, replace(commit_req("g", "Z", 1, foo={0: 1}), api_version=8),
                          E.unknown_member_id)
    assert c.handle(replace(commit_req("g", "A", 1, foo={0: 1}), api_version=9)).error_code == 0


def test_admin_commit_on_nonexistent_group_creates_offsets() -> None:
    """Upstream: OffsetMetadataManager.validateOffsetCommit (a commit with a negative epoch creates a simple
    classic group).
    """
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    r = c.handle(commit_req("simple", foo={0: 5}))
    assert r.error_code == 0 and codes(r) == {"foo": [(0, 0)]}
    assert len(offset_records(c.records)) == 1
    assert "simple" not in shard.groups  # offsets only, no consumer group is created
    assert fetched(c.handle(OffsetFetchRequest("simple"))) == {"foo": {0: 5}}


def test_admin_commit_on_empty_group_allowed() -> None:
    """Upstream: ConsumerGroup.validateOffsetCommit (a negative epoch while the group is empty)."""
    shard, c = group_with_member()
    c.heartbeat("A", -1)
    assert shard.groups["g"].members == {}
    r = c.handle(commit_req("g", foo={0: 7}))
    assert r.error_code == 0 and codes(r) == {"foo": [(0, 0)]}
    assert shard.offsets["g"][("foo", 0)].offset == 7


def test_admin_commit_refused_when_group_has_members() -> None:
    """Upstream: ConsumerGroup.validateOffsetCommit (UNKNOWN_MEMBER_ID for a negative epoch while members
    exist).
    """
    _, c = group_with_member()
    assert_commit_refused(c, commit_req("g", foo={0: 7}), E.unknown_member_id)


def test_simple_consumer_commit_with_its_member_id_on_empty_group_allowed() -> None:
    """Kafka 4.3's ``ConsumerGroup.validateOffsetCommit``: a negative epoch commits while the
    group has no member, whatever member id comes with it (librdkafka's simple consumer sends
    its client-generated id with epoch -1 after a manual ``assign()``). Membership untouched."""
    shard, c = group_with_member()
    c.heartbeat("A", -1)
    assert shard.groups["g"].members == {}
    before = shard.state_digest()["groups"]
    r = c.handle(commit_req("g", "client-generated-id", -1, foo={0: 7, 1: 8}))
    assert r.error_code == 0, r.error_message
    assert codes(r) == {"foo": [(0, 0), (1, 0)]}
    assert fetched(c.handle(OffsetFetchRequest("g"))) == {"foo": {0: 7, 1: 8}}
    assert shard.state_digest()["groups"] == before


def test_simple_consumer_commit_with_its_member_id_on_nonexistent_group_allowed() -> None:
    """Kafka 4.3's ``OffsetMetadataManager.validateOffsetCommit``: a group that does not exist
    takes a commit at a negative epoch, member id or not (Kafka creates a simple group; here
    the offsets stand alone and no group is created)."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(commit_req("simple", "client-generated-id", -1, foo={0: 4}))
    assert r.error_code == 0 and codes(r) == {"foo": [(0, 0)]}
    assert "simple" not in shard.groups
    assert fetched(c.handle(OffsetFetchRequest("simple"))) == {"foo": {0: 4}}


def test_simple_consumer_commit_refused_while_the_group_has_members() -> None:
    """The empty-group exception only: with members, an unknown member id at epoch -1 is
    UNKNOWN_MEMBER_ID and a member's own id at epoch -1 is STALE_MEMBER_EPOCH (Kafka 4.3's
    ``ConsumerGroup.validateOffsetCommit`` then ``validateMemberEpoch``)."""
    _, c = group_with_member()
    assert_commit_refused(c, commit_req("g", "client-generated-id", -1, foo={0: 7}),
                          E.unknown_member_id)
    assert_commit_refused(c, commit_req("g", "A", -1, foo={0: 7}), E.stale_member_epoch)


def test_commit_unknown_topic_or_partition() -> None:
    """Upstream: KafkaApis.handleOffsetCommitRequest (UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata
    does not have).
    """
    _, c = group_with_member()
    n = len(c.records)
    r = c.handle(commit_req("g", "A", 1, foo={0: 1, 2: 3}, nope={0: 4}))
    assert r.error_code == 0
    assert codes(r) == {"foo": [(0, 0), (2, E.unknown_topic_or_partition)],
                        "nope": [(0, E.unknown_topic_or_partition)]}
    # Only the valid partition is written.
    assert [(rec.key.topic, rec.key.partition) for rec in offset_records(c.records[n:])] == [("foo", 0)]


def test_commit_negative_partition_is_unknown() -> None:
    """Upstream: KafkaApis.handleOffsetCommitRequest (UNKNOWN_TOPIC_OR_PARTITION)."""
    shard, c = group_with_member()
    r = c.handle(commit_req("g", "A", 1, foo={-1: 1}))
    assert codes(r) == {"foo": [(-1, E.unknown_topic_or_partition)]}
    assert "g" not in shard.offsets


def test_commit_by_topic_id() -> None:
    shard, c = group_with_member()
    req = OffsetCommitRequest("g", (OffsetCommitTopic("", (OffsetCommitPartition(1, 99),),
                                                      topic_id=topic_id("foo")),),
                              generation_id_or_member_epoch=1, member_id="A")
    r = c.handle(req)
    assert r.error_code == 0
    assert [(t.name, t.topic_id, [p.error_code for p in t.partitions]) for t in r.topics] == [
        ("foo", topic_id("foo"), [0])]
    assert shard.offsets["g"][("foo", 1)].offset == 99


def test_commit_unknown_topic_id() -> None:
    """Upstream: KafkaApis.handleOffsetCommitRequest (v10: UNKNOWN_TOPIC_ID)."""
    _, c = group_with_member()
    n = len(c.records)
    unknown = UUID(int=0xDEAD)
    req = OffsetCommitRequest("g", (OffsetCommitTopic("", (OffsetCommitPartition(0, 1),),
                                                      topic_id=unknown),),
                              generation_id_or_member_epoch=1, member_id="A")
    r = c.handle(req)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in r.topics] == [(unknown, [(0, E.unknown_topic_id)])]
    assert len(c.records) == n


def test_commit_offset_metadata_too_large() -> None:
    """Upstream: OffsetMetadataManager.commitOffset (isMetadataInvalid: OFFSET_METADATA_TOO_LARGE)."""
    shard, c = group_with_member()
    n = len(c.records)
    req = OffsetCommitRequest("g", (OffsetCommitTopic("foo", (
        OffsetCommitPartition(0, 1, committed_metadata="x" * (MAX_METADATA_SIZE + 1)),
        OffsetCommitPartition(1, 2, committed_metadata="y" * MAX_METADATA_SIZE),
    )),), generation_id_or_member_epoch=1, member_id="A")
    r = c.handle(req)
    assert codes(r) == {"foo": [(0, E.offset_metadata_too_large), (1, 0)]}
    assert [(rec.key.partition) for rec in offset_records(c.records[n:])] == [1]
    assert ("foo", 0) not in shard.offsets["g"]


def test_commit_null_metadata_is_stored_as_empty() -> None:
    """Upstream: OffsetMetadataManager.commitOffset (OffsetAndMetadata.fromRequest: null metadata as empty).
    """
    shard, c = group_with_member()
    req = OffsetCommitRequest("g", (OffsetCommitTopic("foo", (
        OffsetCommitPartition(0, 3, committed_metadata=None),)),),
        generation_id_or_member_epoch=1, member_id="A")
    assert codes(c.handle(req)) == {"foo": [(0, 0)]}
    assert shard.offsets["g"][("foo", 0)].metadata == ""


def test_commit_with_an_empty_group_id_is_accepted_as_kafka_does() -> None:
    """Kafka's GroupCoordinatorService accepts OffsetCommit and OffsetFetch for the empty group
    id ("for backwards compatibility"); only JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
    OffsetDelete and ConsumerGroupDescribe refuse it (INVALID_GROUP_ID).
    Upstream: GroupCoordinatorService.commitOffsets (the empty group id accepted for backwards compatibility).
    """
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(commit_req("", foo={0: 1}))
    assert r.error_code == 0 and codes(r) == {"foo": [(0, 0)]}
    assert fetched(c.handle(OffsetFetchRequest(""))) == {"foo": {0: 1}}


def test_offset_delete_with_an_empty_group_id_is_invalid_group_id() -> None:
    """Upstream: GroupCoordinatorService.deleteOffsets (isGroupIdNotEmpty: INVALID_GROUP_ID)."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(OffsetDeleteRequest("", (OffsetFetchTopic("foo", (0,)),)))
    assert r.error_code == E.invalid_group_id and r.error_message
    assert c.records == []


# ----------------------------------------------------------------------------- OffsetFetch


def committed_group() -> tuple[Shard, Client]:
    shard, c = group_with_member()
    assert c.handle(commit_req("g", "A", 1, foo={0: 10, 1: 11}, bar={0: 20})).error_code == 0
    return shard, c


def test_fetch_all_topics() -> None:
    _, c = committed_group()
    r = c.handle(OffsetFetchRequest("g"))
    assert fetched(r) == {"bar": {0: 20}, "foo": {0: 10, 1: 11}}
    assert {t.name: t.topic_id for t in r.topics} == {"bar": topic_id("bar"), "foo": topic_id("foo")}


def test_fetch_some_topics_and_uncommitted_partitions() -> None:
    _, c = committed_group()
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (1, 5)),)))
    assert fetched(r) == {"foo": {1: 11, 5: -1}}


def test_fetch_by_topic_id() -> None:
    _, c = committed_group()
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("", (0,), topic_id=topic_id("bar")),)))
    assert fetched(r) == {"bar": {0: 20}}
    assert r.topics[0].topic_id == topic_id("bar")


def test_fetch_unknown_topic_id() -> None:
    _, c = committed_group()
    unknown = UUID(int=0xBEEF)
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("", (0,), topic_id=unknown),)))
    assert r.error_code == 0
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in r.topics] == [
        (unknown, [E.unknown_topic_id])]


def test_fetch_with_member_and_current_epoch() -> None:
    """Upstream: ConsumerGroup.validateOffsetFetch (the member at its epoch)."""
    _, c = committed_group()
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0,)),), member_id="A",
                                    member_epoch=1))
    assert fetched(r) == {"foo": {0: 10}}


def test_fetch_stale_member_epoch() -> None:
    """Upstream: ConsumerGroup.validateOffsetFetch (STALE_MEMBER_EPOCH)."""
    _, c = committed_group()
    for epoch in (0, 2):  # smaller and greater are both stale for a read
        r = c.handle(OffsetFetchRequest("g", None, member_id="A", member_epoch=epoch))
        assert r.error_code == E.stale_member_epoch
        assert r.error_message and r.topics == ()


def test_fetch_unknown_member_id() -> None:
    """Upstream: ConsumerGroup.validateOffsetFetch (UNKNOWN_MEMBER_ID)."""
    _, c = committed_group()
    r = c.handle(OffsetFetchRequest("g", None, member_id="Z", member_epoch=1))
    assert r.error_code == E.unknown_member_id
    assert r.error_message and r.topics == ()


def test_fetch_unknown_group_returns_minus_one_offsets_without_error() -> None:
    """Upstream: OffsetMetadataManager.fetchOffsets (GroupIdNotFoundException caught: every partition -1, no
    error).
    """
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    r = c.handle(OffsetFetchRequest("nope", (OffsetFetchTopic("foo", (0, 1)),)))
    assert fetched(r) == {"foo": {0: -1, 1: -1}}
    r = c.handle(OffsetFetchRequest("nope"))
    assert r.error_code == 0 and r.topics == ()
    assert c.records == [] and shard.groups == {}


def test_fetch_unknown_group_with_member_id_returns_minus_one_offsets_without_error() -> None:
    """A consumer fetching for a group that is gone (deleted, or never created) gets -1 offsets,
    as Kafka answers (OffsetMetadataManager.fetchOffsets: a GroupIdNotFoundException fails no
    partition). GROUP_ID_NOT_FOUND is not an error OffsetFetch v9 lists.
    Upstream: OffsetMetadataManager.fetchOffsets (GroupIdNotFoundException caught: every partition -1, no
    error).
    """
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    r = c.handle(OffsetFetchRequest("nope", (OffsetFetchTopic("foo", (0,)),), member_id="A",
                                    member_epoch=1))
    assert fetched(r) == {"foo": {0: -1}}


def test_fetch_does_not_return_offsets_of_a_recreated_topic() -> None:
    shard, c = committed_group()
    new_foo = TopicMetadata(UUID(int=0xF00F), "foo", 2)
    shard.update_metadata(shard.metadata.with_topic(new_foo), c.now)
    # Named fetch: the old incarnation's offsets are not returned.
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0, 1)),)))
    assert fetched(r) == {"foo": {0: -1, 1: -1}}
    # By the new id: same.
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("", (0,), topic_id=new_foo.topic_id),)))
    assert fetched(r) == {"foo": {0: -1}}
    # All topics: no committed offset of the old foo shows up; bar is unaffected.
    r = c.handle(OffsetFetchRequest("g"))
    got = fetched(r)
    assert got["bar"] == {0: 20}
    assert all(o == -1 for o in got.get("foo", {}).values())
    # Committing by the old topic id is refused.
    req = OffsetCommitRequest("g", (OffsetCommitTopic("", (OffsetCommitPartition(0, 1),),
                                                      topic_id=topic_id("foo")),),
                              generation_id_or_member_epoch=-1, member_id="")
    c.heartbeat("A", -1)
    r = c.handle(req)
    assert [p.error_code for p in r.topics[0].partitions] == [E.unknown_topic_id]
    # A new commit on the recreated topic is returned.
    assert c.handle(commit_req("g", foo={0: 3})).error_code == 0
    assert fetched(c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0,)),)))) == {"foo": {0: 3}}


# ----------------------------------------------------------------------------- OffsetDelete


def test_offset_delete_group_id_not_found() -> None:
    """Upstream: OffsetMetadataManager.validateOffsetDelete (GROUP_ID_NOT_FOUND)."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(OffsetDeleteRequest("nope", (OffsetFetchTopic("foo", (0,)),)))
    assert r.error_code == E.group_id_not_found and r.error_message
    assert c.records == []


def test_offset_delete_group_subscribed_to_topic() -> None:
    """Upstream: OffsetMetadataManager.deleteOffsets (isSubscribedToTopic: GROUP_SUBSCRIBED_TO_TOPIC)."""
    shard, c = committed_group()
    before, n = shard.state_digest(), len(c.records)
    r = c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0, 1)),)))
    assert r.error_code == 0
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
        ("foo", [(0, E.group_subscribed_to_topic), (1, E.group_subscribed_to_topic)])]
    assert len(c.records) == n
    assert shard.state_digest() == before


def test_offset_delete_success() -> None:
    """Upstream: OffsetMetadataManager.deleteOffsets."""
    _, c = committed_group()
    n = len(c.records)
    # bar is not subscribed by the group's member: its offsets can be deleted.
    r = c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("bar", (0,)),)))
    assert r.error_code == 0
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
        ("bar", [(0, 0)])]
    recs = c.records[n:]
    assert [(rec.key, rec.value) for rec in recs] == [(OffsetCommitKey("g", "bar", 0), None)]
    assert fetched(c.handle(OffsetFetchRequest("g"))) == {"foo": {0: 10, 1: 11}}


def test_offset_delete_on_empty_group_deletes_subscribed_topics_too() -> None:
    """Upstream: ConsumerGroup.isSubscribedToTopic (an empty group subscribes to nothing)."""
    _, c = committed_group()
    c.heartbeat("A", -1)
    r = c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0, 1)),)))
    assert [p.error_code for p in r.topics[0].partitions] == [0, 0]
    assert fetched(c.handle(OffsetFetchRequest("g"))) == {"bar": {0: 20}}


def test_offset_delete_on_offsets_only_group() -> None:
    """Upstream: OffsetMetadataManager.deleteOffsets (a group holding offsets only)."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.handle(commit_req("simple", foo={0: 1}))
    r = c.handle(OffsetDeleteRequest("simple", (OffsetFetchTopic("foo", (0,)),)))
    assert r.error_code == 0 and [p.error_code for p in r.topics[0].partitions] == [0]
    assert "simple" not in shard.offsets


def test_offsets_replay_equivalence() -> None:
    shard, c = committed_group()
    c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("bar", (0,)),)))
    rebuilt = Shard(metadata=shard.metadata)
    for rec in c.records:
        rebuilt.replay(rec)
    assert rebuilt.state_digest() == shard.state_digest()
