"""Hand-written encoders for the hot path: the ConsumerGroupHeartbeat response (API 68 v0/v1).

kio's writers are generic pure Python (~10 µs for a heartbeat response); steady-state heartbeats
dominate a coordinator's traffic, so this one response is encoded directly. The layout is the
upstream schema ``ConsumerGroupHeartbeatResponse.json`` (flexible in every version; v0 and v1
have the same response fields):

    ThrottleTimeMs int32, ErrorCode int16, ErrorMessage compact nullable string,
    MemberId compact nullable string, MemberEpoch int32, HeartbeatIntervalMs int32,
    Assignment nullable struct (int8 -1 = null, 1 = present; KIP-893) of
        TopicPartitions compact array of (TopicId uuid, Partitions compact array of int32,
        tagged fields), tagged fields;
    tagged fields: none, or groupcoord's ShouldComputeAssignment (tag 0, bool) when it is true
    (``protocol/schemas/ConsumerGroupHeartbeatResponse.json``; only members that advertised
    client-side assignors are ever told to compute, so real clients get upstream's bytes).

Tests check the bytes equal kio's encoding of the same response.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from uuid import UUID

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_HDR = struct.Struct(">ih")
_TAIL = struct.Struct(">ii")


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_nullable_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    n = len(b) + 1
    return (bytes((n,)) if n < 0x80 else uvarint(n)) + b


def consumer_group_heartbeat_response(
    error_code: int, error_message: str | None, member_id: str | None, member_epoch: int,
    heartbeat_interval_ms: int,
    assignment: Iterable[tuple[UUID, Sequence[int]]] | None,
    throttle_time_ms: int = 0,
    should_compute_assignment: bool = False,
) -> bytes:
    """The body of a ConsumerGroupHeartbeat v0/v1 response."""
    parts = [_HDR.pack(throttle_time_ms, error_code), compact_nullable_string(error_message),
             compact_nullable_string(member_id), _TAIL.pack(member_epoch, heartbeat_interval_ms)]
    if assignment is None:
        parts.append(b"\xff")
    else:
        tps = list(assignment)
        parts.append(b"\x01")
        parts.append(uvarint(len(tps) + 1))
        for topic_id, partitions in tps:
            parts.append(topic_id.bytes)
            parts.append(uvarint(len(partitions) + 1))
            if partitions:
                parts.append(struct.pack(f">{len(partitions)}i", *partitions))
            parts.append(b"\x00")
        parts.append(b"\x00")
    # Top-level tagged fields: count, then (tag 0, size 1, true) for ShouldComputeAssignment.
    parts.append(b"\x01\x00\x01\x01" if should_compute_assignment else b"\x00")
    return b"".join(parts)
