"""The record codec (records.py): every record type round-trips through encode/decode, tombstones
included; equal states encode to equal bytes; bad bytes raise RecordDecodeError with a message.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any
from uuid import UUID

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.records import (
    KEY_VERSION,
    VALUE_TYPES,
    ClassicGroupMemberMetadata,
    ClassicGroupMetadataValue,
    ClientAssignor,
    ConnectGroupConnectorsTasksMetadataValue,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
    ConnectGroupMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataValue,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupConfigurationValue,
    GroupKey,
    MemberKey,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    RecordDecodeError,
    RecordType,
    RegexKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    TxnOffsetCommitValue,
    TxnOffsetKey,
    TxnProducerKey,
    TxnProducerValue,
    connect_connectors_tasks_record,
    connect_current_assignment_record,
    connect_target_member_record,
    current_assignment_record,
    group_configuration_record,
    partition_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.topics import TopicMetadata

# ------------------------------------------------------------------------------ strategies

texts = st.text(max_size=12)
ids = st.text(min_size=1, max_size=12)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
uuids = st.uuids().filter(lambda u: u.int != 0)
#: Assignments as the coordinator holds them: topic id -> non-empty partition set (an empty set
#: is not state: it encodes like an absent topic, see test_empty_partition_sets_are_not_state).
assignments = st.dictionaries(uuids, st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=8),
                              max_size=4)
#: Connect assignments: connector name -> task numbers (-1: the connector itself), non-empty.
connect_assignments = st.dictionaries(ids, st.frozensets(st.integers(-1, 2**31 - 1), min_size=1,
                                                         max_size=6), max_size=4)
client_assignors = st.builds(ClientAssignor, ids, int32, int32, st.integers(0, 127), int32,
                             st.binary(max_size=16))

VALUES: dict[RecordType, st.SearchStrategy[Any]] = {
    RecordType.OFFSET_COMMIT: st.builds(OffsetCommitValue, int64, int32, texts, int64, int64,
                                        st.none() | uuids),
    RecordType.CONSUMER_GROUP_METADATA: st.builds(ConsumerGroupMetadataValue, int32),
    RecordType.CONSUMER_GROUP_PARTITION_METADATA: st.builds(
        ConsumerGroupPartitionMetadataValue,
        st.lists(st.builds(TopicMetadata, uuids, ids, st.integers(0, 10_000)), max_size=4).map(tuple)),
    RecordType.CONSUMER_GROUP_MEMBER_METADATA: st.builds(
        ConsumerGroupMemberMetadataValue,
        st.none() | ids, st.none() | ids, texts, texts, st.lists(ids, max_size=4).map(tuple),
        st.none() | ids, st.none() | ids, int32, st.lists(client_assignors, max_size=2).map(tuple)),
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: st.builds(
        ConsumerGroupTargetAssignmentMetadataValue, int32),
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: st.builds(
        ConsumerGroupTargetAssignmentMemberValue, assignments),
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: st.builds(
        ConsumerGroupCurrentMemberAssignmentValue, int32, int32, st.integers(0, 3), assignments,
        assignments),
    RecordType.GROUP_CONFIGURATION: st.builds(
        GroupConfigurationValue,
        st.lists(st.tuples(ids, texts), max_size=3).map(tuple)),
    RecordType.CLASSIC_GROUP_METADATA: st.builds(
        ClassicGroupMetadataValue, texts, int32, st.none() | ids, st.none() | ids, int64,
        st.lists(st.builds(ClassicGroupMemberMetadata, ids, st.none() | ids, texts, texts, int32,
                           int32, st.none() | st.binary(max_size=16), st.binary(max_size=16)),
                 max_size=3).map(tuple)),
    RecordType.CONNECT_GROUP_METADATA: st.builds(ConnectGroupMetadataValue, int32),
    RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA: st.builds(
        ConnectGroupConnectorsTasksMetadataValue, int64,
        st.dictionaries(ids, st.integers(0, 1000), max_size=4).map(lambda d: tuple(sorted(d.items())))),
    RecordType.CONNECT_GROUP_MEMBER_METADATA: st.builds(
        ConnectGroupMemberMetadataValue, st.none() | ids, texts, texts, texts, int32,
        st.lists(client_assignors, max_size=2).map(tuple)),
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA: st.builds(
        ConnectGroupTargetAssignmentMetadataValue, int32, st.integers(0, 32767), int32),
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER: st.builds(
        ConnectGroupTargetAssignmentMemberValue, connect_assignments, st.integers(0, 32767),
        st.integers(0, 32767), st.binary(max_size=16)),
    RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION: st.builds(
        ConsumerGroupRegularExpressionValue,
        st.lists(ids, unique=True, max_size=4).map(lambda ts: tuple(sorted(ts))), int64),
    RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT: st.builds(
        ConnectGroupCurrentMemberAssignmentValue, int32, int32, st.integers(0, 3),
        connect_assignments, connect_assignments, st.integers(0, 32767), st.integers(0, 32767),
        st.binary(max_size=16)),
    RecordType.TXN_OFFSET_COMMIT: st.builds(TxnOffsetCommitValue, st.integers(0, 32767), int64,
                                            int32, texts, int64, st.none() | uuids),
    RecordType.TXN_PRODUCER: st.builds(TxnProducerValue, st.integers(0, 32767), int32),
    # share groups (KIP-932); the target records reuse the consumer groups' values
    RecordType.SHARE_GROUP_METADATA: st.builds(ShareGroupMetadataValue, int32,
                                               st.integers(0, 2**63 - 1)),
    RecordType.SHARE_GROUP_MEMBER_METADATA: st.builds(
        ShareGroupMemberMetadataValue, st.none() | ids, texts, texts,
        st.lists(ids, max_size=4).map(tuple)),
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: st.builds(
        ConsumerGroupTargetAssignmentMetadataValue, int32, st.integers(0, 2**62)),
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: st.builds(
        ConsumerGroupTargetAssignmentMemberValue, assignments),
    RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: st.builds(
        ShareGroupCurrentMemberAssignmentValue, int32, int32, st.integers(0, 3), assignments),
}

MEMBER_TYPES = {
    RecordType.CONSUMER_GROUP_MEMBER_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    RecordType.CONNECT_GROUP_MEMBER_METADATA,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    RecordType.SHARE_GROUP_MEMBER_METADATA,
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
}


def keys(rtype: RecordType) -> st.SearchStrategy[Any]:
    if rtype is RecordType.OFFSET_COMMIT:
        return st.builds(OffsetCommitKey, ids, ids, st.integers(0, 2**31 - 1))
    if rtype in MEMBER_TYPES:
        return st.builds(MemberKey, st.just(rtype), ids, ids)
    if rtype is RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
        return st.builds(RegexKey, ids, texts)
    if rtype is RecordType.TXN_OFFSET_COMMIT:
        return st.builds(TxnOffsetKey, ids, st.integers(0, 2**63 - 1), ids,
                         st.integers(0, 2**31 - 1))
    if rtype is RecordType.TXN_PRODUCER:
        return st.builds(TxnProducerKey, ids, st.integers(0, 2**63 - 1))
    return st.builds(GroupKey, st.just(rtype), ids)


def records(rtype: RecordType, tombstone: bool | None = None) -> st.SearchStrategy[Record]:
    value = st.none() if tombstone else VALUES[rtype]
    if tombstone is None:
        value = st.none() | VALUES[rtype]
    return st.builds(Record, keys(rtype), value)


any_record = st.sampled_from(sorted(VALUES)).flatmap(records)


def test_every_record_type_has_a_strategy() -> None:
    """A new record type needs a value strategy above (and its key shape in MEMBER_TYPES)."""
    missing = set(RecordType) - set(VALUES)
    assert not missing, f"no value strategy for {sorted(t.name for t in missing)}"
    assert set(VALUE_TYPES) == set(RecordType)


def _require_strategy(rtype: RecordType) -> None:
    if rtype not in VALUES:
        pytest.skip(f"no value strategy for {rtype.name} (see test_every_record_type_has_a_strategy)")


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("rtype", list(RecordType), ids=lambda t: t.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip(rtype: RecordType, data: st.DataObject) -> None:
    _require_strategy(rtype)
    rec = data.draw(records(rtype, tombstone=False))
    key, value = rec.encode()
    assert isinstance(key, bytes) and isinstance(value, bytes)
    back = Record.decode(key, value)
    assert back == rec
    assert type(back.value) is VALUE_TYPES[rtype]
    assert back.encode() == (key, value)  # canonical: re-encoding gives the same bytes


@pytest.mark.parametrize("rtype", list(RecordType), ids=lambda t: t.name)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_tombstone_round_trip(rtype: RecordType, data: st.DataObject) -> None:
    _require_strategy(rtype)
    rec = data.draw(records(rtype, tombstone=True))
    key, value = rec.encode()
    assert value is None
    back = Record.decode(key, None)
    assert back == rec and back.value is None
    assert back.key.type is rtype


@settings(max_examples=100, deadline=None)
@given(rec=any_record)
def test_key_bytes_do_not_depend_on_the_value(rec: Record) -> None:
    """A tombstone has the key bytes of the records it deletes (log compaction by key)."""
    assert Record(rec.key, None).encode()[0] == rec.encode()[0]


def test_key_layout_is_type_version_fields() -> None:
    k, v = Record(MemberKey(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, "g", "m"),
                  ConsumerGroupTargetAssignmentMemberValue({})).encode()
    assert msgpack.unpackb(k) == [7, KEY_VERSION, "g", "m"]
    assert v is not None and msgpack.unpackb(v) == [0, []]


# ------------------------------------------------------------------------------ equal states, equal bytes


def _shuffled(a: dict[UUID, frozenset[int]], rng: random.Random) -> dict[UUID, frozenset[int]]:
    items = list(a.items())
    rng.shuffle(items)
    out = {}
    for t, ps in items:
        parts = list(ps)
        rng.shuffle(parts)
        fs: frozenset[int] = frozenset()
        for p in parts:  # built one by one: a different construction history
            fs = fs | {p}
        out[t] = fs
    return out


ENCODERS: list[Callable[[dict[UUID, frozenset[int]], dict[UUID, frozenset[int]]], Record]] = [
    lambda a, b: target_member_record("g", "m", a),
    lambda a, b: current_assignment_record("g", "m", ConsumerGroupCurrentMemberAssignmentValue(
        3, 2, 1, a, b)),
]


@settings(max_examples=100, deadline=None)
@given(a=assignments, b=assignments, seed=st.integers(0, 2**32 - 1))
def test_assignment_encoding_is_order_independent(a: dict[UUID, frozenset[int]],
                                                  b: dict[UUID, frozenset[int]], seed: int) -> None:
    rng = random.Random(seed)
    for make in ENCODERS:
        assert make(a, b).encode() == make(_shuffled(a, rng), _shuffled(b, rng)).encode()


def _shuffled_connect(a: dict[str, frozenset[int]], rng: random.Random) -> dict[str, frozenset[int]]:
    items = list(a.items())
    rng.shuffle(items)
    return {c: frozenset(rng.sample(sorted(ts), len(ts))) for c, ts in items}


@settings(max_examples=100, deadline=None)
@given(a=connect_assignments, b=connect_assignments,
       connectors=st.dictionaries(ids, st.integers(0, 100), max_size=4), seed=st.integers(0, 2**32 - 1))
def test_connect_encoding_is_order_independent(a: dict[str, frozenset[int]],
                                               b: dict[str, frozenset[int]],
                                               connectors: dict[str, int], seed: int) -> None:
    rng = random.Random(seed)
    a2, b2 = _shuffled_connect(a, rng), _shuffled_connect(b, rng)
    assert (connect_target_member_record("g", "m", ConnectGroupTargetAssignmentMemberValue(a)).encode()
            == connect_target_member_record("g", "m", ConnectGroupTargetAssignmentMemberValue(a2)).encode())
    assert (connect_current_assignment_record("g", "m", ConnectGroupCurrentMemberAssignmentValue(
        4, 3, 0, a, b)).encode() == connect_current_assignment_record(
        "g", "m", ConnectGroupCurrentMemberAssignmentValue(4, 3, 0, a2, b2)).encode())
    items = list(connectors.items())
    rng.shuffle(items)
    assert (connect_connectors_tasks_record("g", 7, connectors).encode()
            == connect_connectors_tasks_record("g", 7, dict(items)).encode())


@settings(max_examples=50, deadline=None)
@given(a=assignments, empty=st.lists(uuids, max_size=3))
def test_empty_partition_sets_are_not_state(a: dict[UUID, frozenset[int]], empty: list[UUID]) -> None:
    padded = dict(a)
    for t in empty:
        padded.setdefault(t, frozenset())
    plain = target_member_record("g", "m", a)
    assert target_member_record("g", "m", padded).encode() == plain.encode()
    assert Record.decode(*target_member_record("g", "m", padded).encode()) == plain


@settings(max_examples=50, deadline=None)
@given(topics=st.lists(st.builds(TopicMetadata, uuids, ids, st.integers(0, 100)), max_size=5,
                       unique_by=lambda t: t.name),
       configs=st.dictionaries(ids, texts, max_size=4), seed=st.integers(0, 2**32 - 1))
def test_group_records_are_order_independent(topics: list[TopicMetadata], configs: dict[str, str],
                                             seed: int) -> None:
    rng = random.Random(seed)
    shuffled_topics = topics[:]
    rng.shuffle(shuffled_topics)
    items = list(configs.items())
    rng.shuffle(items)
    assert (partition_metadata_record("g", {t.name: t for t in topics}).encode()
            == partition_metadata_record("g", {t.name: t for t in shuffled_topics}).encode())
    assert (group_configuration_record("g", configs).encode()
            == group_configuration_record("g", dict(items)).encode())


# ------------------------------------------------------------------------------ bad bytes


def _raises(key: bytes, value: bytes | None) -> RecordDecodeError:
    with pytest.raises(RecordDecodeError) as info:
        Record.decode(key, value)
    assert str(info.value), "RecordDecodeError without a message"
    return info.value


def test_unknown_record_type() -> None:
    for t in (0, max(RecordType) + 1, 99, -1):
        e = _raises(msgpack.packb([t, KEY_VERSION, "g"]), None)
        assert str(t) in str(e)
    _raises(msgpack.packb(["consumer", KEY_VERSION, "g"]), None)


@pytest.mark.parametrize("rtype", list(RecordType), ids=lambda t: t.name)
def test_unknown_key_version(rtype: RecordType) -> None:
    fields = ["g", "t", 0] if rtype is RecordType.OFFSET_COMMIT else ["g", "m"]
    for version in (KEY_VERSION + 1, 7, -1):
        e = _raises(msgpack.packb([int(rtype), version, *fields]), None)
        assert "version" in str(e) and str(version) in str(e)


@pytest.mark.parametrize("rtype", list(RecordType), ids=lambda t: t.name)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_unknown_value_version(rtype: RecordType, data: st.DataObject) -> None:
    _require_strategy(rtype)
    rec = data.draw(records(rtype, tombstone=False))
    key, value = rec.encode()
    assert value is not None
    fields = msgpack.unpackb(value)
    for version in (VALUE_TYPES[rtype].VERSION + 1, 100, -1):
        e = _raises(key, msgpack.packb([version, *fields[1:]]))
        assert "version" in str(e) and str(version) in str(e)


GARBAGE: list[tuple[bytes, bytes | None]] = [
    (b"", None),
    (b"\xc1", None),                                           # never-used msgpack byte
    (b"\x93\x03", None),                                       # truncated array
    (msgpack.packb("not a list"), None),
    (msgpack.packb(42), None),
    (msgpack.packb([]), None),
    (msgpack.packb([3]), None),                                # no key version
    (msgpack.packb([3, 0]), None),                             # no group id
    (msgpack.packb([5, 0, "g"]), None),                        # member key without member id
    (msgpack.packb([1, 0, "g", "t"]), None),                   # offset key without partition
    (msgpack.packb([3, 0, "g"]), b""),
    (msgpack.packb([3, 0, "g"]), b"\xc1"),
    (msgpack.packb([3, 0, "g"]), msgpack.packb(7)),            # value not a list
    (msgpack.packb([3, 0, "g"]), msgpack.packb([])),           # no value version
    (msgpack.packb([3, 0, "g"]), msgpack.packb([0])),          # no epoch
    (msgpack.packb([3, 0, "g"]), msgpack.packb(["0", 1])),     # version not an int
    (msgpack.packb([7, 0, "g", "m"]), msgpack.packb([0, [[b"short", [1]]]])),  # bad uuid
    (msgpack.packb([7, 0, "g", "m"]), msgpack.packb([0, [[1, 2, 3]]])),
    (msgpack.packb([4, 0, "g"]), msgpack.packb([0, [[b"\x00" * 16, "t"]]])),
    (msgpack.packb([5, 0, "g", "m"]), msgpack.packb([0, None, None, "c", "h", ["t"]])),
]


@pytest.mark.parametrize("key,value", GARBAGE)
def test_garbage_raises(key: bytes, value: bytes | None) -> None:
    _raises(key, value)


@settings(max_examples=200, deadline=None)
@given(rec=any_record, data=st.data())
def test_truncated_records_raise(rec: Record, data: st.DataObject) -> None:
    key, value = rec.encode()
    if value is not None and data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(value) - 1))
        _raises(key, value[:cut])
    else:
        cut = data.draw(st.integers(0, len(key) - 1))
        _raises(key[:cut], value)


@settings(max_examples=300, deadline=None)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=40))
def test_random_bytes_decode_or_raise_decode_error(key: bytes, value: bytes | None) -> None:
    """Any bytes: a record or RecordDecodeError, never another exception."""
    try:
        rec = Record.decode(key, value)
    except RecordDecodeError as e:
        assert str(e)
    else:
        assert isinstance(rec, Record)
