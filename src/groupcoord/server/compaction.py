"""Background compaction of the coordinator's record log (docs/durability-and-metrics.md).

Every ``log.compaction.interval.ms`` (default 5 minutes; ``0`` turns it off) the server compacts
each shard's log with ``RecordLog.compact(shard, now, tombstone_retention)``: the newest entry of
every key is kept, and a tombstone is dropped once it is the newest entry of its key and older
than ``log.cleaner.delete.retention.ms`` (Kafka's broker name; default 24 hours; ``-1`` keeps
tombstones forever). Replaying a compacted log gives the same state (``storage/log.py``).

The compaction runs on a thread of its own, never on the event loop: the SQLite backend plans
from a read-only snapshot and deletes in small write transactions that appends interleave with
(see ``storage/sqlite.py``), so requests keep being served and answered meanwhile. One
compaction runs at a time; the next is scheduled ``interval`` after the previous one ended. A
failed compaction is logged and tried again at the next interval (the log stays valid: a
compaction is safe to interrupt at any point).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from groupcoord.storage.log import CompactionResult, LogError, RecordLog

log = logging.getLogger(__name__)

INTERVAL_CONFIG = "log.compaction.interval.ms"
RETENTION_CONFIG = "log.cleaner.delete.retention.ms"
DEFAULT_INTERVAL_MS = 300_000
DEFAULT_TOMBSTONE_RETENTION_MS = 86_400_000


@dataclass(slots=True, frozen=True)
class CompactionConfig:
    """``interval_ms`` <= 0 disables the background compaction."""

    interval_ms: int = DEFAULT_INTERVAL_MS
    tombstone_retention_ms: int = DEFAULT_TOMBSTONE_RETENTION_MS

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> CompactionConfig:
        """Read the two broker configs; ValueError names a bad one."""
        def parse(name: str, default: int, minimum: int) -> int:
            raw = props.get(name)
            if raw is None:
                return default
            try:
                value = int(raw.strip())
            except ValueError:
                raise ValueError(f"{name} must be an integer, got {raw!r}") from None
            if value < minimum:
                raise ValueError(f"{name} must be at least {minimum}, got {value}")
            return value

        return cls(parse(INTERVAL_CONFIG, DEFAULT_INTERVAL_MS, 0),
                   parse(RETENTION_CONFIG, DEFAULT_TOMBSTONE_RETENTION_MS, -1))

    @property
    def enabled(self) -> bool:
        return self.interval_ms > 0


class BackgroundCompaction:
    """Compacts every shard of ``log`` periodically on a compaction thread."""

    def __init__(self, log_: RecordLog, num_shards: int, config: CompactionConfig,
                 now_ms: Callable[[], int],
                 on_done: Callable[[list[CompactionResult], float], None] | None = None) -> None:
        self.log = log_
        self.num_shards = num_shards
        self.config = config
        self._now_ms = now_ms
        self._on_done = on_done
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._running: asyncio.Future[tuple[list[CompactionResult], float]] | None = None
        self._stopping = False
        #: Compactions finished (for tests and logs).
        self.runs = 0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.config.enabled:
            log.info("background log compaction is off (%s=0)", INTERVAL_CONFIG)
            return
        self._loop = loop
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupcoord-compact")
        self._schedule()

    def _schedule(self) -> None:
        if self._loop is not None and not self._stopping:
            self._timer = self._loop.call_later(self.config.interval_ms / 1000.0, self.run_now)

    def run_now(self) -> asyncio.Future[tuple[list[CompactionResult], float]] | None:
        """Start a compaction now (unless one is running); the future of its results and its
        duration in ms."""
        if self._loop is None or self._executor is None or self._stopping:
            return None
        if self._running is not None and not self._running.done():
            return self._running
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = self._now_ms()
        fut = self._loop.run_in_executor(self._executor, self._compact_all, now)
        self._running = fut
        fut.add_done_callback(self._finished)
        return fut

    def _compact_all(self, now_ms: int) -> tuple[list[CompactionResult], float]:
        """On the compaction thread: every shard in turn; the results and the time taken."""
        t0 = time.perf_counter()
        results = []
        for shard in range(self.num_shards):
            if self._stopping:
                break
            results.append(self.log.compact(shard, now_ms, self.config.tombstone_retention_ms))
        return results, (time.perf_counter() - t0) * 1000

    def _finished(self, fut: asyncio.Future[tuple[list[CompactionResult], float]]) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            if not self._stopping:
                log.error("background log compaction failed (retried in %d ms): %s",
                          self.config.interval_ms, exc if isinstance(exc, LogError) else repr(exc))
        else:
            results, ms = fut.result()
            self.runs += 1
            log.info("log compaction: %d entries scanned, %d removed in %.1f ms (longest write "
                     "%.1f ms)", sum(r.scanned for r in results), sum(r.removed for r in results),
                     ms, max((r.max_chunk_ms for r in results), default=0.0))
            if self._on_done is not None:
                self._on_done(results, ms)
        self._schedule()

    def stop(self) -> None:
        """Stop scheduling. A compaction in progress stops after its current shard, or at its
        next write once the log is closed (the LogError is then ignored)."""
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


__all__ = ["INTERVAL_CONFIG", "RETENTION_CONFIG", "BackgroundCompaction", "CompactionConfig"]
