"""The consumer embedded protocol (ConsumerProtocolSubscription / Assignment v0-v3): fixed byte
vectors written out field by field from the message schemas, round trips, forward
compatibility and malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def _i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def _i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _str(s: str | None) -> bytes:
    return _i16(-1) if s is None else _i16(len(s)) + s.encode()


def _bytes(b: bytes | None) -> bytes:
    return _i32(-1) if b is None else _i32(len(b)) + b


# Subscription to [foo, bar], user data b"ud", owning foo-1, foo-2, generation 5, rack "r1".
SUB_V0 = _i16(0) + _i32(2) + _str("foo") + _str("bar") + _bytes(b"ud")
SUB_V1 = (_i16(1) + _i32(2) + _str("foo") + _str("bar") + _bytes(b"ud")
          + _i32(1) + _str("foo") + _i32(2) + _i32(1) + _i32(2))
SUB_V2 = _i16(2) + SUB_V1[2:] + _i32(5)
SUB_V3 = _i16(3) + SUB_V2[2:] + _str("r1")

# Assignment of bar-0, foo-3 with no user data.
ASG_BODY = (_i32(2) + _str("bar") + _i32(1) + _i32(0) + _str("foo") + _i32(1) + _i32(3)
            + _bytes(None))


@pytest.mark.parametrize("version,expected", [(0, SUB_V0), (1, SUB_V1), (2, SUB_V2),
                                              (3, SUB_V3)])
def test_subscription_fixed_bytes(version: int, expected: bytes) -> None:
    raw = encode_subscription(["foo", "bar"], user_data=b"ud", owned_partitions={"foo": [2, 1]},
                              generation_id=5, rack_id="r1", version=version)
    assert raw == expected
    sub = decode_subscription(expected)
    assert sub.version == version
    assert sub.topics == ("foo", "bar")
    assert sub.user_data == b"ud"
    assert sub.owned_partitions == ({} if version < 1 else {"foo": [1, 2]})
    assert sub.generation_id == (-1 if version < 2 else 5)
    assert sub.rack_id == (None if version < 3 else "r1")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_fixed_bytes(version: int) -> None:
    raw = encode_assignment({"foo": [3], "bar": [0]}, version=version)
    assert raw == _i16(version) + ASG_BODY
    a = decode_assignment(raw)
    assert a.partitions == {"bar": [0], "foo": [3]}
    assert a.user_data is None
    assert a.version == version


def test_newer_versions_read_as_latest_and_trailing_bytes_ignored() -> None:
    sub = decode_subscription(_i16(7) + SUB_V3[2:] + b"\x00\x01future")
    assert (sub.version, sub.topics, sub.rack_id) == (7, ("foo", "bar"), "r1")
    a = decode_assignment(_i16(4) + ASG_BODY + b"\xff")
    assert a.partitions == {"bar": [0], "foo": [3]}


@pytest.mark.parametrize("raw", [b"", b"\x00", _i16(-1) + SUB_V0[2:], SUB_V0[:-3],
                                 SUB_V1[:-1], _i16(0) + _i32(5)])
def test_malformed_subscription(raw: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(raw)


def test_malformed_assignment_and_unknown_encode_version() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(_i16(0) + ASG_BODY[:-2])
    with pytest.raises(ConsumerProtocolError):
        encode_assignment({}, version=4)
    with pytest.raises(ConsumerProtocolError):
        encode_subscription([], version=-1)


_topic = st.text(alphabet="abcxyz-_.", min_size=1, max_size=8)
_parts = st.dictionaries(_topic, st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=5),
                         max_size=4).map(lambda d: {t: sorted(ps) for t, ps in d.items() if ps})


@given(topics=st.lists(_topic, max_size=5), ud=st.none() | st.binary(max_size=16),
       owned=_parts, gen=st.integers(-1, 2**31 - 1), rack=st.none() | _topic,
       version=st.integers(0, 3))
def test_subscription_round_trip(topics: list[str], ud: bytes | None,
                                 owned: dict[str, list[int]], gen: int, rack: str | None,
                                 version: int) -> None:
    sub = decode_subscription(encode_subscription(
        topics, user_data=ud, owned_partitions=owned, generation_id=gen, rack_id=rack,
        version=version))
    assert sub.topics == tuple(topics)
    assert sub.user_data == ud
    assert sub.owned_partitions == (owned if version >= 1 else {})
    assert sub.generation_id == (gen if version >= 2 else -1)
    assert sub.rack_id == (rack if version >= 3 else None)


@given(parts=_parts, ud=st.none() | st.binary(max_size=16), version=st.integers(0, 3))
def test_assignment_round_trip(parts: dict[str, list[int]], ud: bytes | None,
                               version: int) -> None:
    a = decode_assignment(encode_assignment(parts, user_data=ud, version=version))
    assert (a.partitions, a.user_data, a.version) == (parts, ud, version)


@given(parts=st.lists(st.integers(-(2**32), 2**32) | st.booleans(), max_size=6),
       version=st.integers(1, 3))
def test_partition_numbers_checked_as_kio_checks_them(parts: list[int], version: int) -> None:
    """Partition numbers are range-checked without kio's phantom ``i32`` call per number (a
    fast path for plain ints): the same bytes as the bytes written field by field, and a value
    outside int32 refused with kio's ``TypeError`` as before."""
    if all(-(2**31) <= p < 2**31 for p in parts):
        body = _i32(1) + _str("t") + _i32(len(parts)) + b"".join(_i32(p) for p in sorted(parts))
        assert encode_assignment({"t": parts}, version=version) == \
            _i16(version) + body + _bytes(None)
        sub = encode_subscription((), owned_partitions={"t": parts}, version=version)
        assert sub[:2 + 4 + 4 + len(body)] == _i16(version) + _i32(0) + _bytes(None) + body
    else:
        with pytest.raises(TypeError, match="i32"):
            encode_assignment({"t": parts}, version=version)
        with pytest.raises(TypeError, match="i32"):
            encode_subscription((), owned_partitions={"t": parts}, version=version)
