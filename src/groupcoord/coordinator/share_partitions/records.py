"""The durable share state of one share partition, as a record (KIP-932 "Share-group state
persistence"; Kafka's share coordinator keeps it as ShareSnapshot / ShareUpdate records of the
``__share_group_state`` topic, keyed by group, topic id and partition).

One record type, :class:`ShareStateValue`, keyed by :class:`ShareStateKey`: the state epoch,
the share-partition start offset and the state batches of the in-flight window (offset ranges
with their state and delivery count). Each record is a whole snapshot of its key, never a
delta, so a compacted log (newest entry per key, ``storage/log.py``) replays to the same state;
a tombstone is Kafka's DeleteShareGroupState. Acquisition locks are not part of it (Kafka does
not persist them either): a record that is ACQUIRED is written as AVAILABLE with its delivery
count, which is exactly what it becomes when the state is read back after a restart.

Encoding (big-endian, versioned): key = int16 type (0) | int16 length + UTF-8 group id | 16-byte
topic id | int32 partition; value = int16 version (0) | int32 state epoch | int64 start offset |
int32 count | count x (int64 first offset, int64 last offset, int8 state, int16 delivery count).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from uuid import UUID

KEY_TYPE = 0
VALUE_VERSION = 0

_HEAD = struct.Struct(">hiqi")
_BATCH = struct.Struct(">qqbh")
_KEY_HEAD = struct.Struct(">hh")
_KEY_TAIL = struct.Struct(">16si")


class ShareStateDecodeError(ValueError):
    """Bytes that are not a share-state record of a version this code reads."""


@dataclass(slots=True, frozen=True, order=True)
class ShareStateKey:
    group_id: str
    topic_id: UUID
    partition: int

    def encode(self) -> bytes:
        group = self.group_id.encode()
        return (_KEY_HEAD.pack(KEY_TYPE, len(group)) + group
                + _KEY_TAIL.pack(self.topic_id.bytes, self.partition))

    @classmethod
    def decode(cls, data: bytes) -> ShareStateKey:
        try:
            kind, n = _KEY_HEAD.unpack_from(data, 0)
            if kind != KEY_TYPE:
                raise ShareStateDecodeError(f"unknown share-state key type {kind}")
            group = data[4:4 + n].decode()
            topic, partition = _KEY_TAIL.unpack_from(data, 4 + n)
            if len(data) != 4 + n + _KEY_TAIL.size:
                raise ShareStateDecodeError("share-state key has trailing bytes")
        except (struct.error, UnicodeDecodeError) as e:
            raise ShareStateDecodeError(f"bad share-state key: {e}") from e
        return cls(group, UUID(bytes=topic), partition)


@dataclass(slots=True, frozen=True)
class StateBatch:
    """Offsets ``first_offset..last_offset`` (inclusive), all in ``state`` (a
    :class:`~groupcoord.coordinator.share_partitions.partition.RecordState` value) with
    ``delivery_count``."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(slots=True, frozen=True)
class ShareStateValue:
    state_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()

    def encode(self) -> bytes:
        parts = [_HEAD.pack(VALUE_VERSION, self.state_epoch, self.start_offset, len(self.batches))]
        parts.extend(_BATCH.pack(b.first_offset, b.last_offset, b.state, b.delivery_count)
                     for b in self.batches)
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> ShareStateValue:
        try:
            version, epoch, start, count = _HEAD.unpack_from(data, 0)
            if version != VALUE_VERSION:
                raise ShareStateDecodeError(f"unknown share-state value version {version}")
            if len(data) != _HEAD.size + count * _BATCH.size:
                raise ShareStateDecodeError(
                    f"share-state value of {len(data)} bytes does not hold {count} batches")
            batches = tuple(StateBatch(*_BATCH.unpack_from(data, _HEAD.size + i * _BATCH.size))
                            for i in range(count))
        except struct.error as e:
            raise ShareStateDecodeError(f"bad share-state value: {e}") from e
        return cls(epoch, start, batches)
