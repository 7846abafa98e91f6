"""The coordinator's hot paths made faster for the simulator's targets (docs/benchmarks.md) keep their
behaviour: the log's bytes, the order and effect of offset records, the owners index and its
digest, the uniform assignor's results, and the value semantics of the per-partition messages.

Each test compares the fast code with the plain formulation it replaced (written out here) or
with the rebuilt-from-the-log state that invariant I4 compares.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from uuid import UUID

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors.base import GroupSpec, MemberSubscription
from groupcoord.coordinator.assignors.uniform import UniformAssignor
from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    PartitionResult,
    TopicResult,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.modern.consumer.model import (
    ConsumerGroup,
    ConsumerGroupMember,
    with_current_assignment,
)
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.offsets import MAX_METADATA_SIZE, replay_commit
from groupcoord.coordinator.records import (
    KEY_VERSION,
    ClassicMemberMetadata,
    ClientAssignor,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    RecordType,
    current_assignment_record,
    current_assignment_tombstone,
    group_configuration_record,
    group_epoch_record,
    member_metadata_record,
    offset_commit_record,
    partition_metadata_record,
    target_assignment_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.timers import TimerChange
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.protocol.errors import ErrorCode

from .support import image, topic_id

E = ErrorCode
FOO, BAR = topic_id("foo"), topic_id("bar")

# ----------------------------------------------------------------------------- Record.encode


def _sample_records() -> list[Record]:
    member = ConsumerGroupMemberMetadataValue(
        "inst", "rack", "client", "/10.0.0.1", ("foo", "bar"), None, "uniform", 45_000,
        (ClientAssignor("a", 0, 1, 1, 0, b"\x00\x01"),))
    return [
        group_epoch_record("g", 7),
        partition_metadata_record("g", {"foo": TopicMetadata(FOO, "foo", 3),
                                        "bar": TopicMetadata(BAR, "bar", 2)}),
        member_metadata_record("g", "m1", member),
        target_assignment_metadata_record("g", 7),
        target_member_record("g", "m1", {FOO: frozenset({2, 0}), BAR: frozenset({1})}),
        current_assignment_record("g", "m1", ConsumerGroupCurrentMemberAssignmentValue(
            7, 6, int(MemberState.UNREVOKED_PARTITIONS), {FOO: frozenset({0})},
            {BAR: frozenset({1, 0})})),
        current_assignment_tombstone("g", "m1"),
        offset_commit_record("g", "foo", 2, OffsetCommitValue(42, 3, "meta", 1_000, 2_000, FOO)),
        offset_commit_record("g", "foo", 2, OffsetCommitValue(42, -1, "", 1_000)),
        offset_commit_record("g", "foo", 2, None),
        group_configuration_record("g", {"group.consumer.session.timeout.ms": "45000"}),
    ]


def _packb_encoding(r: Record) -> tuple[bytes, bytes | None]:
    """The encoding the shared packer replaced: one ``msgpack.packb`` per key and value."""
    k = msgpack.packb([int(r.key.type), KEY_VERSION, *r.key.fields()])
    return k, None if r.value is None else msgpack.packb([r.value.VERSION, *r.value.fields()])


def test_encode_writes_the_bytes_packb_wrote_and_they_decode_back() -> None:
    for r in _sample_records():
        encoded = r.encode()
        assert encoded == _packb_encoding(r), r.key
        assert Record.decode(*encoded) == r


def test_the_shared_packer_is_clean_after_a_failed_encode() -> None:
    class Unpackable:
        pass

    bad = offset_commit_record("g", "foo", 0, OffsetCommitValue(1, -1, "", 0))
    bad.value.metadata = Unpackable()  # type: ignore[union-attr]
    try:
        bad.encode()
    except TypeError:
        pass
    else:  # pragma: no cover - msgpack must refuse an unknown type
        raise AssertionError("an unpackable field was encoded")
    for r in _sample_records():
        assert r.encode() == _packb_encoding(r)


def test_offset_keys_encode_the_same_from_the_bounded_cache(monkeypatch: Any) -> None:
    from groupcoord.coordinator import records

    monkeypatch.setattr(records, "_OFFSET_KEY_BYTES_SIZE", 5)
    monkeypatch.setattr(records, "_OFFSET_KEY_BYTES", {})
    for _ in range(2):  # the second round hits the cache or refills it after a clear
        for p in range(12):
            for gid, topic in (("g", "foo"), ("g2", "foo"), ("g", "b\u00e4r")):
                r = offset_commit_record(gid, topic, p, OffsetCommitValue(p, -1, "", 0))
                assert r.encode() == _packb_encoding(r)
                assert len(records._OFFSET_KEY_BYTES) <= 5


# ----------------------------------------------------------------------------- offsets batch


def _commit(group: str, *topics: tuple[str, tuple[tuple[int, int, str | None], ...]],
            retention_ms: int = -1) -> OffsetCommitRequest:
    return OffsetCommitRequest(group, tuple(
        OffsetCommitTopic(name, tuple(OffsetCommitPartition(p, o, -1, md) for p, o, md in ps))
        for name, ps in topics), retention_time_ms=retention_ms)


def _rebuilt(shard: Shard, records: list[Record]) -> Shard:
    fresh = Shard(metadata=shard.metadata)
    for r in records:
        fresh.replay(Record.decode(*r.encode()))
    return fresh


def test_a_commit_appends_one_record_per_accepted_partition_in_request_order() -> None:
    shard = Shard(metadata=image(foo=3, bar=2))
    too_large = "x" * (MAX_METADATA_SIZE + 1)
    req = _commit("g",
                  ("foo", ((2, 20, ""), (5, 50, ""), (0, 10, "m"), (1, 11, too_large))),
                  ("nope", ((0, 1, ""),)),
                  ("bar", ((1, 31, None), (0, 30, ""))), retention_ms=60_000)
    res = shard.handle(req, 1_000)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in res.response.topics] == [
        ("foo", [(2, E.none), (5, E.unknown_topic_or_partition), (0, E.none),
                 (1, E.offset_metadata_too_large)]),
        ("nope", [(0, E.unknown_topic_or_partition)]),
        ("bar", [(1, E.none), (0, E.none)])]
    assert [(r.key.topic, r.key.partition, r.value.offset, r.value.metadata,  # type: ignore[union-attr]
             r.value.expire_timestamp, r.value.topic_id)  # type: ignore[union-attr]
            for r in res.records] == [
        ("foo", 2, 20, "", 61_000, FOO), ("foo", 0, 10, "m", 61_000, FOO),
        ("bar", 1, 31, "", 61_000, BAR), ("bar", 0, 30, "", 61_000, BAR)]
    assert all(isinstance(r.key, OffsetCommitKey) for r in res.records)
    assert {k: v.offset for k, v in shard.offsets["g"].items()} == {
        ("foo", 2): 20, ("foo", 0): 10, ("bar", 1): 31, ("bar", 0): 30}
    assert _rebuilt(shard, res.records).state_digest() == shard.state_digest()


def test_a_partition_committed_twice_in_one_request_keeps_the_last_offset() -> None:
    shard = Shard(metadata=image(foo=1))
    res = shard.handle(_commit("g", ("foo", ((0, 5, ""), (0, 9, "")))), 0)
    assert [r.value.offset for r in res.records] == [5, 9]  # type: ignore[union-attr]
    assert shard.offsets["g"][("foo", 0)].offset == 9
    assert _rebuilt(shard, res.records).state_digest() == shard.state_digest()


def test_a_commit_that_accepts_nothing_writes_nothing_and_creates_no_offsets() -> None:
    shard = Shard(metadata=image(foo=1))
    res = shard.handle(_commit("g", ("foo", ((3, 5, ""),)), ("nope", ((0, 1, ""),))), 0)
    assert res.records == []
    assert "g" not in shard.offsets
    assert shard.state_digest() == Shard(metadata=shard.metadata).state_digest()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["foo", "bar", "nope"]), st.integers(0, 4),
                          st.integers(0, 1_000), st.booleans()), max_size=20),
       st.integers(0, 3))
def test_batched_commits_equal_one_append_per_partition(
        parts: list[tuple[str, int, int, bool]], split: int) -> None:
    """The batch equals the formulation it replaced (``Shard.append`` of each record as its
    partition is validated), for every mix of valid and invalid partitions."""
    topics: dict[str, list[tuple[int, int, str | None]]] = {}
    for name, p, off, big in parts:
        topics.setdefault(name, []).append((p, off, "y" * (MAX_METADATA_SIZE + 1) if big else ""))
    req = _commit("g", *((n, tuple(ps)) for n, ps in topics.items()))
    batched = Shard(metadata=image(foo=3, bar=2))
    one_by_one = Shard(metadata=image(foo=3, bar=2))
    res = batched.handle(req, split)
    for r in res.records:
        one_by_one.append(r)
    expected = []
    for t in req.topics:
        for cp in t.partitions:
            meta = batched.metadata.by_name.get(t.name)
            if meta is None or cp.partition_index >= meta.num_partitions or \
                    len(cp.committed_metadata or "") > MAX_METADATA_SIZE:
                continue
            expected.append((t.name, cp.partition_index, cp.committed_offset))
    assert [(r.key.topic, r.key.partition, r.value.offset)  # type: ignore[union-attr]
            for r in res.records] == expected
    assert batched.state_digest() == one_by_one.state_digest()
    assert _rebuilt(batched, res.records).state_digest() == batched.state_digest()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g", "h"]), st.sampled_from(["foo", "bar"]),
                          st.integers(0, 2), st.one_of(st.none(), st.integers(0, 99))),
                max_size=30),
       st.lists(st.tuples(st.sampled_from(["foo", "bar"]), st.integers(0, 2), st.integers(0, 99)),
                max_size=10),
       st.sampled_from(["g", "h"]))
def test_replay_commit_equals_replaying_each_record(
        before: list[tuple[str, str, int, int | None]], commit: list[tuple[str, int, int]],
        gid: str) -> None:
    """A commit's records (values of one group) replayed at once equal replaying each, whatever
    offsets (of that group or another, tombstones included) the shard held before."""
    batched, each = Shard(), Shard()
    for g, t, p, off in before:
        r = offset_commit_record(g, t, p, None if off is None else
                                 OffsetCommitValue(off, -1, "", 0, -1, FOO))
        batched.replay(r)
        each.replay(r)
    records = [offset_commit_record(gid, t, p, OffsetCommitValue(off, -1, "", 1, -1, FOO))
               for t, p, off in commit]
    replay_commit(batched, gid, records)
    for r in records:
        each.replay(r)
    assert batched.offsets == each.offsets
    assert [list(o.items()) for o in batched.offsets.values()] == \
        [list(o.items()) for o in each.offsets.values()]  # the same order too
    assert list(batched.offsets) == list(each.offsets)
    assert batched.state_digest() == each.state_digest()


# ----------------------------------------------------------------------------- owners index


def _reference_owners(members: list[ConsumerGroupMember | str]) -> dict[UUID, dict[int, str]]:
    """The per-partition formulation ``_hold``/``_release`` replaced, step by step."""
    owners: dict[UUID, dict[int, str]] = {}
    current: dict[str, ConsumerGroupMember] = {}

    def release(m: ConsumerGroupMember) -> None:
        for t, p in m.owned_partitions():
            ps = owners.get(t)
            if ps is not None and ps.get(p) == m.member_id:
                del ps[p]
                if not ps:
                    del owners[t]

    for step in members:
        if isinstance(step, str):
            old = current.pop(step, None)
            if old is not None:
                release(old)
            continue
        old = current.get(step.member_id)
        if old is not None:
            release(old)
        current[step.member_id] = step
        for t, p in step.owned_partitions():
            owners.setdefault(t, {})[p] = step.member_id
    return owners


PARTS = st.dictionaries(st.sampled_from([FOO, BAR]), st.frozensets(st.integers(0, 5), max_size=4),
                        max_size=2)
STEPS = st.lists(st.one_of(
    st.builds(lambda mid, a, r: ConsumerGroupMember(mid, assigned_partitions=a,
                                                    partitions_pending_revocation=r),
              st.sampled_from(["a", "b", "c"]), PARTS, PARTS),
    st.sampled_from(["a", "b", "c"])), max_size=25)


def _group_after(steps: list[ConsumerGroupMember | str]) -> ConsumerGroup:
    """A group after putting the members of ``steps`` and removing the ids among them."""
    group = ConsumerGroup("g")
    for step in steps:
        if isinstance(step, str):
            group.remove_member(step)
        else:
            group.put_member(step)
    return group


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_owners_follow_the_per_partition_rules_and_digest_as_before(
        steps: list[ConsumerGroupMember | str]) -> None:
    group = _group_after(steps)
    expected = _reference_owners(steps)
    assert group.owners == expected
    assert [list(ps.items()) for ps in group.owners.values()] == \
        [list(ps.items()) for ps in expected.values()]  # insertion order too
    assert group.digest()["owners"] == sorted(
        (str(t), p, mid) for t, ps in expected.items() for p, mid in ps.items())


def _plain_assignment_digest(a: Mapping[UUID, frozenset[int]]) -> list[tuple[str, list[int]]]:
    return sorted((str(t), sorted(ps)) for t, ps in a.items() if ps)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.dictionaries(st.sampled_from(["a", "b", "d"]), PARTS, max_size=3))
def test_the_group_digest_equals_its_plain_formulation(
        steps: list[ConsumerGroupMember | str], targets: dict[str, dict[UUID, frozenset[int]]]) -> None:
    """The digest with ``str`` of topic ids memoised (UUIDs equal but not identical included)
    equals the formulation without the memo."""
    group = _group_after(steps)
    for mid, a in targets.items():  # other UUID objects of the same topic ids
        group.target_assignment[mid] = {UUID(bytes=t.bytes): ps for t, ps in a.items()}
    d = group.digest()
    assert d["members"] == {mid: (
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
        m.subscribed_topic_regex, m.server_assignor, m.rebalance_timeout_ms, m.client_assignors,
        m.member_epoch, m.previous_member_epoch, m.state.name,
        _plain_assignment_digest(m.assigned_partitions),
        _plain_assignment_digest(m.partitions_pending_revocation),
        None if m.classic is None else m.classic.to_list())
        for mid, m in sorted(group.members.items())}
    assert d["target"] == {mid: _plain_assignment_digest(a)
                           for mid, a in sorted(group.target_assignment.items())}
    assert d["owners"] == sorted((str(t), p, mid) for t, ps in group.owners.items()
                                 for p, mid in ps.items())
    assert list(d["members"]) == sorted(group.members)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g", "h"]), st.sampled_from(["foo", "bar", "b"]),
                          st.integers(0, 12), st.integers(0, 99)), max_size=30))
def test_the_offsets_digest_equals_its_plain_formulation(
        ops: list[tuple[str, str, int, int]]) -> None:
    shard = Shard()
    for g, t, p, off in ops:
        shard.replay(offset_commit_record(g, t, p, OffsetCommitValue(off, p - 1, t, off * 2, -1)))
    assert shard.state_digest()["offsets"] == {
        gid: sorted((k, v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                     v.expire_timestamp) for k, v in offs.items())
        for gid, offs in sorted(shard.offsets.items())}


@settings(max_examples=100, deadline=None)
@given(st.builds(ConsumerGroupMember, st.sampled_from(["a", "b"]),
                 instance_id=st.one_of(st.none(), st.just("i")),
                 subscribed_topic_names=st.just(("foo",)), rebalance_timeout_ms=st.integers(-1, 9),
                 member_epoch=st.integers(0, 9), previous_member_epoch=st.integers(0, 9),
                 state=st.sampled_from(list(MemberState)), assigned_partitions=PARTS,
                 partitions_pending_revocation=PARTS,
                 classic=st.one_of(st.none(), st.builds(ClassicMemberMetadata, st.integers(1, 9),
                                                        st.just(())))),
       st.integers(0, 9), st.integers(0, 9), st.sampled_from(list(MemberState)), PARTS, PARTS)
def test_with_current_assignment_is_replace_of_the_current_assignment_fields(
        m: ConsumerGroupMember, epoch: int, previous: int, state: MemberState,
        assigned: dict[UUID, frozenset[int]], revoking: dict[UUID, frozenset[int]]) -> None:
    got = with_current_assignment(m, epoch, previous, state, assigned, revoking)
    assert got == replace(m, member_epoch=epoch, previous_member_epoch=previous, state=state,
                          assigned_partitions=assigned, partitions_pending_revocation=revoking)
    assert got.assigned_partitions is assigned and got.classic is m.classic


# ----------------------------------------------------------------------------- uniform memo


def _spec(sizes: Mapping[UUID, int], current: Mapping[str, Mapping[UUID, frozenset[int]]]) -> GroupSpec:
    topics = {t: TopicMetadata(t, "foo" if t == FOO else "bar", n) for t, n in sizes.items()}
    subs = frozenset(sizes)
    return GroupSpec({mid: MemberSubscription(mid, subs, a) for mid, a in current.items()}, topics)


def test_the_memo_keeps_at_most_memo_records_outputs_and_the_same_results() -> None:
    memo = UniformAssignor(memo_records=3)
    plain = UniformAssignor(memo_members=0)
    served: list[bool] = []
    recall = memo._recall

    def spy(*args: Any) -> Any:
        out = recall(*args)
        served.append(out is not None)
        return out

    memo._recall = spy  # type: ignore[method-assign,assignment]
    outputs: dict[int, Any] = {}
    for g in range(10):  # ten small groups sharing one instance, as the built-in one is shared
        sizes = {FOO: 4 + g, BAR: 2}
        members: dict[str, Mapping[UUID, frozenset[int]]] = {
            f"g{g}-m{i}": {} for i in range(1 + g % 3)}
        out = memo.assign(_spec(sizes, members))
        assert out == plain.assign(_spec(sizes, members))
        outputs[g] = (sizes, out)
        assert len(memo._records) <= 3
    # The most recent group's output is remembered: one member joining is served by the memo.
    sizes, out = outputs[9]
    joined = {**out, "g9-new": {}}
    served.clear()
    assert memo.assign(_spec(sizes, joined)) == plain.assign(_spec(sizes, joined))
    assert served == [True]
    # The oldest group's output was evicted: the full read, with the same result.
    sizes, out = outputs[0]
    joined = {**out, "g0-new": {}}
    served.clear()
    assert memo.assign(_spec(sizes, joined)) == plain.assign(_spec(sizes, joined))
    assert served == [False]


# ----------------------------------------------------------------------------- messages


def test_per_partition_messages_keep_value_equality_and_hashing() -> None:
    assert OffsetCommitPartition(1, 10) == OffsetCommitPartition(1, 10, -1, "")
    assert OffsetCommitPartition(1, 10) != OffsetCommitPartition(1, 11)
    assert PartitionResult(3) == PartitionResult(3, E.none)
    assert PartitionResult(3) != PartitionResult(3, E.unknown_topic_or_partition)
    # Frozen containers of them still hash (requests and responses can be set members or keys).
    a = TopicResult("foo", (PartitionResult(0), PartitionResult(1, 3)), FOO)
    b = TopicResult("foo", (PartitionResult(0), PartitionResult(1, 3)), FOO)
    assert hash(a) == hash(b) and len({a, b}) == 1
    c = OffsetCommitTopic("foo", (OffsetCommitPartition(0, 5),))
    assert len({c, OffsetCommitTopic("foo", (OffsetCommitPartition(0, 5),))}) == 1


def test_hot_request_and_response_messages_keep_value_equality_hashing_and_pickling() -> None:
    """The per-request messages (and timer changes) made plain slotted dataclasses (hot paths)
    are the values they were as frozen ones: equal by fields, hashable, picklable."""
    samples: list[tuple[Any, Any, Any]] = [
        (ConsumerGroupHeartbeatRequest("g", "m", 3, topic_partitions=(TopicPartitions(FOO, (1,)),)),
         ConsumerGroupHeartbeatRequest("g", "m", 3, topic_partitions=(TopicPartitions(FOO, (1,)),)),
         ConsumerGroupHeartbeatRequest("g", "m", 4)),
        (ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3),
         ConsumerGroupHeartbeatResponse(0, None, "m", 3),
         ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, should_compute_assignment=True)),
        (_commit("g", ("foo", ((0, 1, ""),))), _commit("g", ("foo", ((0, 1, ""),))),
         _commit("g", ("foo", ((0, 2, ""),)))),
        (OffsetCommitResponse((TopicResult("foo", (PartitionResult(0),), FOO),)),
         OffsetCommitResponse((TopicResult("foo", (PartitionResult(0, E.none),), FOO),), 0, None),
         OffsetCommitResponse((TopicResult("foo", (PartitionResult(0, 3),), FOO),))),
        (TimerChange(("session", "g", "m"), 5), TimerChange(("session", "g", "m"), 5),
         TimerChange(("session", "g", "m"), None)),
    ]
    for a, same, other in samples:
        assert a == same and hash(a) == hash(same) and len({a, same}) == 1
        assert a != other
        assert pickle.loads(pickle.dumps(a)) == a
        assert replace(a) == a


def test_record_type_keys_still_name_their_type() -> None:
    # The encode fast path packs the key type as an int; decode maps it back to the enum.
    r = offset_commit_record("g", "foo", 0, None)
    assert Record.decode(*r.encode()).key.type is RecordType.OFFSET_COMMIT


# ----------------------------------------------------------------------------- Shard.replay_all


def test_replay_all_equals_replaying_each_record() -> None:
    """``Shard.replay_all`` (a rebuild's replay) has the effect of ``replay`` on each record in
    order: every record type of the samples, offsets overwritten and deleted."""
    records = [
        *_sample_records(),
        offset_commit_record("g", "foo", 0, OffsetCommitValue(5, -1, "", 1, -1, FOO)),
        offset_commit_record("g", "foo", 1, OffsetCommitValue(6, -1, "m", 1, -1, FOO)),
        offset_commit_record("g", "foo", 0, None),
        offset_commit_record("h", "bar", 0, OffsetCommitValue(7, 3, "", 2, 9, BAR)),
    ]
    at_once, each = Shard(), Shard()
    at_once.replay_all(iter(records))
    for r in records:
        each.replay(r)
    assert at_once.state_digest() == each.state_digest()
    assert at_once.offsets == each.offsets and list(at_once.offsets) == list(each.offsets)


def test_replay_all_calls_an_overridden_replay() -> None:
    class Counting(Shard):
        replayed = 0

        def replay(self, record: Record) -> None:
            Counting.replayed += 1
            super().replay(record)

    records = _sample_records()
    Counting().replay_all(records)
    assert Counting.replayed == len(records)


# ----------------------------------------------------------------------------- new_offset_record


def test_offset_records_built_field_by_field_are_those_of_the_constructors() -> None:
    """``offsets.commit`` and ``Record.decode`` build offset records with ``new_offset_record``
    and set every field: valid only while both classes are plain slotted dataclasses whose
    ``__init__`` assigns exactly these fields (a new field must be set there too)."""
    from dataclasses import fields

    assert [f.name for f in fields(Record)] == ["key", "value"]
    assert [f.name for f in fields(OffsetCommitValue)] == [
        "offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp",
        "topic_id"]
    for cls in (Record, OffsetCommitValue):
        assert "__slots__" in vars(cls) and not hasattr(cls, "__post_init__")
    shard = Shard(0, None, image(foo=3))
    commit = OffsetCommitRequest("g", (OffsetCommitTopic("foo", (
        OffsetCommitPartition(0, 5, 2, "meta"), OffsetCommitPartition(2, 7, -1, None)), FOO),),
        retention_time_ms=100)
    records = shard.handle(commit, 1_000).records
    assert records == [
        Record(OffsetCommitKey("g", "foo", 0), OffsetCommitValue(5, 2, "meta", 1_000, 1_100, FOO)),
        Record(OffsetCommitKey("g", "foo", 2), OffsetCommitValue(7, -1, "", 1_000, 1_100, FOO))]
    for r in records:
        decoded = Record.decode(*r.encode())
        assert decoded == r and type(decoded.value) is OffsetCommitValue
        assert Record.decode(*r.encode()).encode() == r.encode()
    no_topic_id = Record.decode(*offset_commit_record(
        "g", "foo", 1, OffsetCommitValue(1, 0, "", 2, -1, None)).encode())
    assert no_topic_id.value == OffsetCommitValue(1, 0, "", 2, -1, None)


# ----------------------------------------------------------------------------- offsets digest


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g", "h"]), st.text(max_size=3),
                          st.integers(-2, 2**40), st.integers(0, 99)), max_size=60))
def test_offsets_digest_is_sorted_by_topic_then_partition(
        commits: list[tuple[str, str, int, int]]) -> None:
    """The digest's offsets (two stable sorts of the keys) are in the order of ``sorted``."""
    shard = Shard()
    for g, t, p, off in commits:
        shard.replay(offset_commit_record(g, t, p, OffsetCommitValue(off, -1, "m", off, -1, FOO)))
    assert shard.state_digest()["offsets"] == {
        gid: [(k, v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp)
              for k, v in sorted(offs.items(), key=lambda kv: kv[0])]
        for gid, offs in sorted(shard.offsets.items())}
