"""The Connect embedded protocol (KIP-415 "Connect protocol's format"): fixed byte vectors for v0,
v1 and v2 worker metadata and assignments, built field by field from the format; round trips;
version tolerance; malformed input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.client.connect import (
    CONNECT_PROTOCOL_TYPE,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocolCompatibility,
    ConnectProtocolError,
    WorkerMetadata,
    decode_assignment,
    decode_worker_metadata,
    encode_assignment,
    encode_worker_metadata,
    join_protocols,
)

# -- the format's primitives, written out independently of the module under test ---------------


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return i16(len(raw)) + raw


def entries(*pairs: tuple[str, list[int]]) -> bytes:
    """[connector:STRING tasks:[int32]]"""
    out = i32(len(pairs))
    for connector, tasks in pairs:
        out += string(connector) + i32(len(tasks)) + b"".join(i32(t) for t in tasks)
    return out


A0, A1, B0 = ConnectorTaskId("A", 0), ConnectorTaskId("A", 1), ConnectorTaskId("B", 0)
URL = "http://worker-1:8083/"
LEADER, LEADER_URL = "connect-1-7d4f", "http://leader:8083/"


def test_protocol_names() -> None:
    assert CONNECT_PROTOCOL_TYPE == "connect"
    assert [(m.config, m.protocol, m.version) for m in ConnectProtocolCompatibility] == [
        ("eager", "default", 0), ("compatible", "compatible", 1), ("sessioned", "sessioned", 2),
    ]
    assert ConnectProtocolCompatibility.from_protocol("default") is ConnectProtocolCompatibility.EAGER
    assert ConnectProtocolCompatibility.from_config("Sessioned") is ConnectProtocolCompatibility.SESSIONED
    assert ConnectProtocolCompatibility.from_version(1) is ConnectProtocolCompatibility.COMPATIBLE
    with pytest.raises(ValueError):
        ConnectProtocolCompatibility.from_config("cooperative")
    with pytest.raises(ValueError):
        ConnectProtocolCompatibility.from_protocol("eager")


# -- fixed vectors: assignments ------------------------------------------------------------------

V0_ASSIGNMENT = ConnectAssignment(0, 0, LEADER, LEADER_URL, 42, ("A",), (A0, A1, B0))
V0_ASSIGNMENT_BYTES = (
    i16(0)                      # version
    + i16(0)                    # error
    + string(LEADER)            # leader
    + string(LEADER_URL)        # leader url
    + i64(42)                   # config offset
    + entries(("A", [-1, 0, 1]), ("B", [0]))  # the connector itself is task -1
)

V1_ASSIGNMENT = ConnectAssignment(1, 0, LEADER, LEADER_URL, 42, ("A",), (A0,), ("B",), (B0,), 5000)
V1_ASSIGNMENT_BYTES = (
    i16(1) + i16(0) + string(LEADER) + string(LEADER_URL) + i64(42)
    + entries(("A", [-1, 0]))   # assignment
    + entries(("B", [-1, 0]))   # revoked
    + i32(5000)                 # scheduled delay
)

V2_ASSIGNMENT = ConnectAssignment(2, 1, LEADER, LEADER_URL, 7, (), (), (), (), 0)
V2_ASSIGNMENT_BYTES = (
    i16(2) + i16(1) + string(LEADER) + string(LEADER_URL) + i64(7)
    + entries() + entries() + i32(0)
)


@pytest.mark.parametrize(
    ("value", "raw"),
    [(V0_ASSIGNMENT, V0_ASSIGNMENT_BYTES), (V1_ASSIGNMENT, V1_ASSIGNMENT_BYTES),
     (V2_ASSIGNMENT, V2_ASSIGNMENT_BYTES)],
    ids=["v0", "v1", "v2"],
)
def test_assignment_vectors(value: ConnectAssignment, raw: bytes) -> None:
    assert encode_assignment(value) == raw
    assert decode_assignment(raw) == value


def test_v0_assignment_cannot_carry_v1_fields() -> None:
    with pytest.raises(ConnectProtocolError, match="version 0"):
        encode_assignment(ConnectAssignment(0, 0, LEADER, LEADER_URL, 1, delay=10))


def test_entries_are_canonical_and_connectors_deduplicated() -> None:
    a = ConnectAssignment(1, 0, "l", "u", 0, ("B", "A", "B"), (A1, B0, A0, ConnectorTaskId("C", 3)))
    raw = encode_assignment(a)
    expected = (i16(1) + i16(0) + string("l") + string("u") + i64(0)
                + entries(("A", [-1, 0, 1]), ("B", [-1, 0]), ("C", [3])) + entries() + i32(0))
    assert raw == expected
    back = decode_assignment(raw)
    assert back.connectors == ("A", "B")
    assert back.tasks == (A0, A1, B0, ConnectorTaskId("C", 3))
    # Decoding keeps the wire order, whatever it is.
    reordered = (i16(1) + i16(0) + string("l") + string("u") + i64(0)
                 + entries(("B", [0, -1]), ("A", [1])) + entries() + i32(0))
    assert decode_assignment(reordered).connectors == ("B",)
    assert decode_assignment(reordered).tasks == (B0, A1)


# -- fixed vectors: worker metadata --------------------------------------------------------------


def test_v0_metadata_vector() -> None:
    raw = i16(0) + string(URL) + i64(42)
    meta = WorkerMetadata(0, URL, 42)
    assert encode_worker_metadata(meta) == raw
    assert decode_worker_metadata(raw) == meta
    # v0 has no allocation field: an allocation given is not written.
    assert encode_worker_metadata(WorkerMetadata(0, URL, 42, V1_ASSIGNMENT)) == raw


def test_v1_metadata_vectors() -> None:
    null = i16(1) + string(URL) + i64(-1) + i32(-1)
    assert encode_worker_metadata(WorkerMetadata(1, URL, -1)) == null
    assert decode_worker_metadata(null) == WorkerMetadata(1, URL, -1, None)

    with_allocation = i16(1) + string(URL) + i64(42) + i32(len(V1_ASSIGNMENT_BYTES)) + V1_ASSIGNMENT_BYTES
    meta = WorkerMetadata(1, URL, 42, V1_ASSIGNMENT)
    assert encode_worker_metadata(meta) == with_allocation
    assert decode_worker_metadata(with_allocation) == meta
    assert meta.current.connectors == ("A",) and meta.current.tasks == (A0,)


def test_v2_metadata_vector() -> None:
    allocation = ConnectAssignment(2, 0, LEADER, LEADER_URL, 42, ("A", "B"), (A0, A1, B0), delay=250)
    allocation_bytes = (i16(2) + i16(0) + string(LEADER) + string(LEADER_URL) + i64(42)
                        + entries(("A", [-1, 0, 1]), ("B", [-1, 0])) + entries() + i32(250))
    raw = i16(2) + string(URL) + i64(42) + i32(len(allocation_bytes)) + allocation_bytes
    meta = WorkerMetadata(2, URL, 42, allocation)
    assert encode_worker_metadata(meta) == raw
    assert decode_worker_metadata(raw) == meta


def test_join_protocols_in_preference_order() -> None:
    allocation = ConnectAssignment(2, 0, LEADER, LEADER_URL, 42, ("A",), (A0,))
    offered = join_protocols(URL, 42, allocation, ConnectProtocolCompatibility.SESSIONED)
    assert [name for name, _ in offered] == ["sessioned", "compatible", "default"]
    by_name = {name: decode_worker_metadata(raw) for name, raw in offered}
    assert by_name["sessioned"].version == 2 and by_name["sessioned"].allocation is not None
    assert by_name["sessioned"].allocation.version == 2
    assert by_name["compatible"].version == 1 and by_name["compatible"].allocation is not None
    assert by_name["compatible"].allocation.version == 1
    assert by_name["default"] == WorkerMetadata(0, URL, 42)
    assert [n for n, _ in join_protocols(URL, 1, None, ConnectProtocolCompatibility.COMPATIBLE)] == [
        "compatible", "default"]
    eager = join_protocols(URL, 1, allocation, ConnectProtocolCompatibility.EAGER)
    assert eager == [("default", i16(0) + string(URL) + i64(1))]


# -- versions ----------------------------------------------------------------------------------


def test_v1_reader_tolerates_missing_optional_fields() -> None:
    head = i16(1) + i16(0) + string(LEADER) + string(LEADER_URL) + i64(3)
    assert decode_assignment(head) == ConnectAssignment(1, 0, LEADER, LEADER_URL, 3)
    only_assigned = head + entries(("A", [-1]))
    assert decode_assignment(only_assigned) == ConnectAssignment(1, 0, LEADER, LEADER_URL, 3, ("A",))
    no_delay = only_assigned + entries(("B", [0]))
    assert decode_assignment(no_delay) == ConnectAssignment(
        1, 0, LEADER, LEADER_URL, 3, ("A",), revoked_tasks=(B0,))
    # Nullable arrays: -1 reads as empty.
    nulls = head + i32(-1) + i32(-1) + i32(9)
    assert decode_assignment(nulls) == ConnectAssignment(1, 0, LEADER, LEADER_URL, 3, delay=9)
    # A v1 metadata that ends before its allocation.
    assert decode_worker_metadata(i16(1) + string(URL) + i64(5)) == WorkerMetadata(1, URL, 5)


def test_newer_versions_read_by_the_known_fields() -> None:
    future = i16(7) + i16(0) + string(LEADER) + string(LEADER_URL) + i64(3) + entries(("A", [0])) \
        + entries() + i32(11) + b"future fields"
    assert decode_assignment(future) == ConnectAssignment(7, 0, LEADER, LEADER_URL, 3, (), (A0,), delay=11)
    meta = i16(9) + string(URL) + i64(5) + i32(-1) + b"\x01\x02"
    assert decode_worker_metadata(meta) == WorkerMetadata(9, URL, 5)
    # v0 payloads with trailing bytes: the v0 fields only.
    assert decode_worker_metadata(i16(0) + string(URL) + i64(5) + b"\xff") == WorkerMetadata(0, URL, 5)
    assert decode_assignment(V0_ASSIGNMENT_BYTES + b"\x00\x00") == V0_ASSIGNMENT


# -- malformed input -----------------------------------------------------------------------------

BAD_ASSIGNMENTS = {
    "empty": b"",
    "half version": b"\x00",
    "negative version": i16(-1) + i16(0) + string("l") + string("u") + i64(0) + entries(),
    "truncated leader": i16(1) + i16(0) + i16(10) + b"abc",
    "negative string length": i16(1) + i16(0) + i16(-2),
    "invalid utf-8": i16(1) + i16(0) + i16(2) + b"\xff\xfe" + string("u") + i64(0),
    "no config offset": i16(1) + i16(0) + string("l") + string("u") + b"\x00\x00",
    "v0 without assignment": i16(0) + i16(0) + string("l") + string("u") + i64(0),
    "v0 null assignment": i16(0) + i16(0) + string("l") + string("u") + i64(0) + i32(-1),
    "huge count": i16(1) + i16(0) + string("l") + string("u") + i64(0) + i32(1 << 30),
    "negative task count": i16(1) + i16(0) + string("l") + string("u") + i64(0) + i32(1)
    + string("A") + i32(-1),
    "cut task list": i16(1) + i16(0) + string("l") + string("u") + i64(0) + i32(1) + string("A")
    + i32(2) + i32(0),
    "cut delay": i16(1) + i16(0) + string("l") + string("u") + i64(0) + entries() + entries() + b"\x00\x00",
}


@pytest.mark.parametrize("raw", BAD_ASSIGNMENTS.values(), ids=BAD_ASSIGNMENTS.keys())
def test_malformed_assignments(raw: bytes) -> None:
    with pytest.raises(ConnectProtocolError) as e:
        decode_assignment(raw)
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith("connect assignment:")


BAD_METADATA = {
    "empty": b"",
    "negative version": i16(-3) + string(URL) + i64(0),
    "no url": i16(1),
    "truncated offset": i16(1) + string(URL) + b"\x00" * 7,
    "allocation longer than input": i16(1) + string(URL) + i64(0) + i32(100) + b"\x00\x01",
    "garbage allocation": i16(1) + string(URL) + i64(0) + i32(3) + b"\x00\x01\x02",
    "cut allocation length": i16(1) + string(URL) + i64(0) + b"\xff\xff",
}


@pytest.mark.parametrize("raw", BAD_METADATA.values(), ids=BAD_METADATA.keys())
def test_malformed_metadata(raw: bytes) -> None:
    with pytest.raises(ConnectProtocolError, match="connect worker metadata"):
        decode_worker_metadata(raw)


def test_garbage_allocation_names_the_field() -> None:
    with pytest.raises(ConnectProtocolError, match="allocation: connect assignment: truncated"):
        decode_worker_metadata(BAD_METADATA["garbage allocation"])


@pytest.mark.parametrize(
    "value",
    [
        ConnectAssignment(1, 0, "x" * 40_000, "u", 0),
        ConnectAssignment(1, 1 << 15, "l", "u", 0),
        ConnectAssignment(1, 0, "l", "u", 1 << 63),
        ConnectAssignment(1, 0, "l", "u", 0, delay=1 << 31),
        ConnectAssignment(1, 0, "l", "u", 0, tasks=(ConnectorTaskId("A", 1 << 31),)),
        ConnectAssignment(-1, 0, "l", "u", 0),
    ],
    ids=["long string", "error", "offset", "delay", "task id", "version"],
)
def test_unencodable_values(value: ConnectAssignment) -> None:
    with pytest.raises(ConnectProtocolError):
        encode_assignment(value)


def test_decoder_accepts_bytearray_and_memoryview() -> None:
    assert decode_assignment(bytearray(V1_ASSIGNMENT_BYTES)) == V1_ASSIGNMENT
    assert decode_assignment(memoryview(V1_ASSIGNMENT_BYTES)) == V1_ASSIGNMENT


# -- round trips ---------------------------------------------------------------------------------

names = st.text(min_size=0, max_size=12)
task_ids = st.builds(ConnectorTaskId, names, st.integers(0, (1 << 31) - 1))


@st.composite
def assignments(draw: st.DrawFn, version: int | None = None) -> ConnectAssignment:
    v = draw(st.integers(0, 5)) if version is None else version
    cooperative = v >= 1
    return ConnectAssignment(
        version=v,
        error=draw(st.integers(-(1 << 15), (1 << 15) - 1)),
        leader=draw(names),
        leader_url=draw(names),
        config_offset=draw(st.integers(-(1 << 63), (1 << 63) - 1)),
        connectors=tuple(draw(st.lists(names, unique=True, max_size=5))),
        tasks=tuple(draw(st.lists(task_ids, unique=True, max_size=8))),
        revoked_connectors=tuple(draw(st.lists(names, unique=True, max_size=3))) if cooperative else (),
        revoked_tasks=tuple(draw(st.lists(task_ids, unique=True, max_size=4))) if cooperative else (),
        delay=draw(st.integers(-(1 << 31), (1 << 31) - 1)) if cooperative else 0,
    )


def normalized(a: ConnectAssignment) -> tuple[object, ...]:
    return (a.version, a.error, a.leader, a.leader_url, a.config_offset, sorted(a.connectors),
            sorted(a.tasks), sorted(a.revoked_connectors), sorted(a.revoked_tasks), a.delay)


@settings(max_examples=300, deadline=None)
@given(assignments())
def test_assignment_round_trip(a: ConnectAssignment) -> None:
    raw = encode_assignment(a)
    back = decode_assignment(raw)
    assert normalized(back) == normalized(a)
    assert encode_assignment(back) == raw  # decoding keeps the wire order


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 4), names, st.integers(-(1 << 63), (1 << 63) - 1),
    st.one_of(st.none(), assignments(version=1), assignments(version=2)),
)
def test_metadata_round_trip(
    version: int, url: str, offset: int, allocation: ConnectAssignment | None
) -> None:
    meta = WorkerMetadata(version, url, offset, allocation)
    raw = encode_worker_metadata(meta)
    back = decode_worker_metadata(raw)
    assert (back.version, back.url, back.config_offset) == (version, url, offset)
    if version == 0 or allocation is None:
        assert back.allocation is None
    else:
        assert back.allocation is not None
        assert normalized(back.allocation) == normalized(allocation)
    assert encode_worker_metadata(back) == raw


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_never_crashes(raw: bytes) -> None:
    for decode in (decode_assignment, decode_worker_metadata):
        with contextlib.suppress(ConnectProtocolError):
            decode(raw)


@settings(max_examples=200, deadline=None)
@given(assignments(), st.data())
def test_every_truncation_is_an_error_or_a_prefix_reading(a: ConnectAssignment, data: st.DataObject) -> None:
    raw = encode_assignment(a)
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        decode_assignment(raw[:cut])
    except ConnectProtocolError:
        return
    # Only the v1 layout may end early, and only at an optional field's boundary.
    assert a.version >= 1
