"""The record log interface (docs/design.md "storage/"): what a shard's state is rebuilt from.

A log holds, per shard, an ordered sequence of entries ``(key, value)`` of encoded records
(``value is None`` is a tombstone). ``append`` takes one request's records as a batch and makes
them durable atomically (all or none) before returning; ``read`` yields a shard's entries in
append order. The storage layer knows nothing of what the bytes mean: records are encoded and
decoded by ``coordinator.records``; for compaction, two entries are "the same key" when their
key bytes are equal.

Every entry gets an **offset** (per shard, strictly increasing, never reused, starting at 1)
and an **append time** in ms: ``append(shard, batch, now_ms)`` stamps the batch with the
caller's ``now_ms`` (drivers pass their clock, so a simulation stays deterministic); without
it the wall clock is used. The append time is only used to age tombstones during compaction.

Compaction (KIP-848 "Fail Over": the coordinator log is a compacted log) keeps the
newest entry of every key and drops a tombstone once it is the newest entry of its key and was
appended at least ``tombstone_retention_ms`` before ``now_ms``. Kept entries keep their offsets
and order, so the compacted log is a subsequence of the original: replaying it gives the same
state as replaying the whole log as long as replay treats each key as an upsert (the I4 tests
check this on real shards). A compaction is safe to interrupt at any point: superseded entries
go first, oldest first, and a tombstone only after every older entry of its key is gone.

Loading a shard goes through :func:`replay_entries`, which names the file, the shard and the
offset of an entry the caller could not apply (a row whose bytes do not decode), so bad data on
disk is reported, never skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Entry = tuple[bytes, bytes | None]
#: ``(offset, key, value)``
OffsetEntry = tuple[int, bytes, bytes | None]


class LogError(Exception):
    """The log could not be read or written; the message names the file and the problem."""


@dataclass(slots=True, frozen=True)
class ShardStats:
    entries: int
    tombstones: int
    #: Offsets of the oldest and newest entry present (``None`` when the shard is empty).
    first_offset: int | None
    last_offset: int | None


@dataclass(slots=True, frozen=True)
class LogStats:
    location: str
    shards: Mapping[int, ShardStats] = field(default_factory=dict)
    #: Bytes on disk (database and write-ahead log); ``None`` for a memory log.
    size_bytes: int | None = None

    @property
    def entries(self) -> int:
        return sum(s.entries for s in self.shards.values())

    @property
    def tombstones(self) -> int:
        return sum(s.tombstones for s in self.shards.values())


@dataclass(slots=True, frozen=True)
class CompactionResult:
    shard: int
    #: Entries present when the compaction took its snapshot (later appends are left alone).
    scanned: int
    #: Entries dropped because a newer entry of the same key exists.
    superseded: int
    #: Tombstones dropped because they were older than the retention.
    tombstones: int
    #: Write transactions used, and the longest one (how long an append could have waited).
    chunks: int = 0
    max_chunk_ms: float = 0.0

    @property
    def removed(self) -> int:
        return self.superseded + self.tombstones


class RecordLog(Protocol):
    @property
    def location(self) -> str:
        """What to name in messages: the database file, or ``"memory"``."""

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        """Durably append ``batch`` to ``shard``'s log, atomically; ``now_ms`` stamps the entries
        (wall clock when omitted). Raises :class:`LogError`; then nothing of the batch is kept."""

    def read(self, shard: int) -> Iterator[Entry]:
        """Every entry of ``shard``'s log in append order (a consistent snapshot)."""

    def read_with_offsets(self, shard: int) -> Iterator[OffsetEntry]:
        """As :meth:`read`, with each entry's offset."""

    def shards(self) -> list[int]:
        """The shards that have a log, sorted."""

    def compact(self, shard: int, now_ms: int, tombstone_retention_ms: int) -> CompactionResult:
        """Keep the newest entry per key; drop tombstones appended at or before
        ``now_ms - tombstone_retention_ms`` (none when the retention is negative). May run on
        another thread than the appends."""

    def stats(self) -> LogStats:
        ...

    def close(self) -> None:
        ...


def append_shards(log: RecordLog, batches: Sequence[tuple[int, Sequence[Entry]]],
                  now_ms: int | None = None) -> None:
    """Append several shards' batches: in one commit where the log offers ``append_many``
    (group commit: the SQLite log), else one :meth:`RecordLog.append` per shard in order (each
    atomic; a failure raises :class:`LogError` after the shards before it were written)."""
    many = getattr(log, "append_many", None)
    if many is not None and len(batches) > 1:
        many(batches, now_ms)
        return
    for shard, batch in batches:
        log.append(shard, batch, now_ms)


def check_shard(shard: int) -> int:
    if type(shard) is not int or shard < 0:
        raise LogError(f"invalid shard {shard!r}: shards are integers >= 0")
    return shard


def replay_entries(log: RecordLog, shard: int, apply: Callable[[bytes, bytes | None], object]) -> int:
    """Feed every entry of ``shard`` to ``apply(key, value)`` in order; return how many.

    An exception from ``apply`` (typically bytes that do not decode) becomes a :class:`LogError`
    naming the log's file, the shard and the entry's offset, chained to the original error.
    """
    count = 0
    offset = 0
    try:
        for offset, key, value in log.read_with_offsets(shard):  # noqa: B007 - named on error
            apply(key, value)
            count += 1
    except LogError:
        raise
    except Exception as e:
        raise LogError(f"{log.location}: shard {shard}, entry at offset {offset}: cannot apply "
                       f"the record ({e}); the log is damaged or was written by another version"
                       ) from e
    return count


def superseded_and_expired(
    entries: Iterator[tuple[int, bytes, bool, int]], expire_before_ms: int | None,
) -> tuple[int, list[int], list[int]]:
    """The compaction plan for one shard's ``(offset, key, is_tombstone, append_ms)`` entries in
    offset order: ``(scanned, superseded offsets, expired tombstone offsets)``, both ascending.
    A tombstone expires when it is the newest entry of its key and was appended at or before
    ``expire_before_ms`` (``None``: tombstones are kept)."""
    newest: dict[bytes, tuple[int, bool, int]] = {}
    superseded: list[int] = []
    scanned = 0
    for offset, key, tomb, ts in entries:
        scanned += 1
        prev = newest.get(key)
        if prev is not None:
            superseded.append(prev[0])
        newest[key] = (offset, tomb, ts)
    superseded.sort()
    expired: list[int] = []
    if expire_before_ms is not None:
        expired = sorted(off for off, tomb, ts in newest.values() if tomb and ts <= expire_before_ms)
    return scanned, superseded, expired
