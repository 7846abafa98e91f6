"""The DescribeTransactions response (KIP-664, API 65 v0) read by hand.

kio's reader refuses a negative ``TransactionStartTimeMs`` ("cannot parse negative timestamp"),
and -1 is what Kafka sends for a transactional id with no transaction yet (the Java admin client
reads it as "no start time"). This reader gives every field as plain values, the start time as
an int (-1 kept). Layout (flexible version): response header v1 (tagged fields), then
ThrottleTimeMs int32 and a compact array of TransactionState {ErrorCode int16,
TransactionalId, TransactionState (compact strings), TransactionTimeoutMs int32,
TransactionStartTimeMs int64, ProducerId int64, ProducerEpoch int16, Topics: compact array of
{Topic compact string, Partitions compact array of int32, tagged fields}, tagged fields},
tagged fields.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["DescribedTransaction", "read_describe_transactions"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(slots=True, frozen=True)
class DescribedTransaction:
    error_code: int
    transactional_id: str
    state: str
    timeout_ms: int
    start_time_ms: int
    producer_id: int
    producer_epoch: int
    #: (topic, partitions)
    topics: tuple[tuple[str, tuple[int, ...]], ...]


class _FieldReader:
    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            if self.pos >= len(self.buf):
                raise ValueError("truncated DescribeTransactions response")
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise ValueError("bad varint in DescribeTransactions response")

    def fixed(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise ValueError("truncated DescribeTransactions response")
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return int(v)

    def string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            return ""
        if self.pos + n > len(self.buf):
            raise ValueError("truncated DescribeTransactions response")
        s = self.buf[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def count(self) -> int:
        return max(self.uvarint() - 1, 0)

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


def read_describe_transactions(frame: bytes) -> tuple[int, list[DescribedTransaction]]:
    """``(correlation id, transactions)`` of a response frame (without its size prefix);
    ValueError for bytes that are not one."""
    r = _FieldReader(frame, 0)
    corr = r.fixed(_I32)
    r.skip_tags()  # response header v1
    r.fixed(_I32)  # throttle time
    out = []
    for _ in range(r.count()):
        error = r.fixed(_I16)
        tid = r.string()
        state = r.string()
        timeout = r.fixed(_I32)
        start = r.fixed(_I64)
        pid = r.fixed(_I64)
        epoch = r.fixed(_I16)
        topics = []
        for _ in range(r.count()):
            topic = r.string()
            parts = tuple(r.fixed(_I32) for _ in range(r.count()))
            r.skip_tags()
            topics.append((topic, parts))
        r.skip_tags()
        out.append(DescribedTransaction(error, tid, state, timeout, start, pid, epoch,
                                        tuple(topics)))
    r.skip_tags()
    return corr, out
