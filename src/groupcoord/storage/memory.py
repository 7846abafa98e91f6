"""An in-memory record log: the test and simulation backend (nothing survives the process).

Same contract as :class:`groupcoord.storage.sqlite.SqliteLog` (see ``storage/log.py``): atomic
batches (a batch with an entry that is not ``(bytes, bytes | None)`` is refused whole), offsets
from 1 that are never reused, append times, compaction, stats. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

from groupcoord.storage.log import (
    CompactionResult,
    Entry,
    LogError,
    LogStats,
    OffsetEntry,
    ShardStats,
    check_shard,
    superseded_and_expired,
)

#: ``(offset, key, value, append_ms)``
_Row = tuple[int, bytes, bytes | None, int]


def check_batch(location: str, shard: int, batch: Sequence[Entry]) -> None:
    """Raise :class:`LogError` unless every entry is ``(bytes, bytes | None)``."""
    for i, entry in enumerate(batch):
        try:
            key, value = entry
        except (TypeError, ValueError):
            raise LogError(f"{location}: append to shard {shard}: entry {i} of the batch is not a "
                           f"(key, value) pair; nothing of the batch was written") from None
        if type(key) is not bytes or (value is not None and type(value) is not bytes):
            raise LogError(f"{location}: append to shard {shard}: entry {i} of the batch is "
                           f"({type(key).__name__}, {type(value).__name__}), not (bytes, bytes | "
                           f"None); nothing of the batch was written")


class MemoryLog:
    location = "memory"

    def __init__(self) -> None:
        self._shards: dict[int, list[_Row]] = {}
        self._next: dict[int, int] = {}
        self._lock = threading.Lock()

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        check_shard(shard)
        if not batch:
            return
        check_batch(self.location, shard, batch)
        ts = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        with self._lock:
            rows = self._shards.setdefault(shard, [])
            first = self._next.get(shard, 1)
            rows.extend((first + i, k, v, ts) for i, (k, v) in enumerate(batch))
            self._next[shard] = first + len(batch)

    def read(self, shard: int) -> Iterator[Entry]:
        with self._lock:
            rows = list(self._shards.get(shard, ()))
        for _, k, v, _ in rows:
            yield k, v

    def read_with_offsets(self, shard: int) -> Iterator[OffsetEntry]:
        with self._lock:
            rows = list(self._shards.get(shard, ()))
        for off, k, v, _ in rows:
            yield off, k, v

    def shards(self) -> list[int]:
        with self._lock:
            return sorted(self._shards)

    def size(self, shard: int) -> int:
        return len(self._shards.get(shard, ()))

    def compact(self, shard: int, now_ms: int, tombstone_retention_ms: int) -> CompactionResult:
        check_shard(shard)
        with self._lock:
            rows = list(self._shards.get(shard, ()))
        expire = now_ms - tombstone_retention_ms if tombstone_retention_ms >= 0 else None
        scanned, superseded, expired = superseded_and_expired(
            ((off, k, v is None, ts) for off, k, v, ts in rows), expire)
        drop = set(superseded).union(expired)
        if drop:
            with self._lock:
                self._shards[shard] = [r for r in self._shards[shard] if r[0] not in drop]
        return CompactionResult(shard, scanned, len(superseded), len(expired),
                                chunks=1 if drop else 0)

    def stats(self) -> LogStats:
        with self._lock:
            shards = {
                s: ShardStats(len(rows), sum(1 for r in rows if r[2] is None),
                              rows[0][0] if rows else None, rows[-1][0] if rows else None)
                for s, rows in sorted(self._shards.items())
            }
        return LogStats(self.location, shards, None)

    def close(self) -> None:
        pass
