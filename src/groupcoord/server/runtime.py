"""The coordinator runtime: N shards driven by one asyncio event loop (DESIGN.md "The core contract").

- Groups live in shard ``partition_for(group_id, N)``, Kafka's ``partitionFor``:
  ``Utils.abs(groupId.hashCode()) % groupMetadataTopicPartitionCount`` with Java's
  ``String.hashCode`` (over UTF-16 code units) and ``Utils.abs`` (MIN_VALUE maps to 0).
- Every call into a shard runs on the loop thread, one at a time (shards are serial).
- **Write before respond**: a request's records are appended to the shard's log before its
  response is returned. If the append fails the response is replaced by
  COORDINATOR_NOT_AVAILABLE (retriable: clients look the coordinator up again and retry) and the
  shard, whose memory is now ahead of its log, is rebuilt from the log.
- Loading a shard = replaying its log, then ``on_loaded(now)`` (the spec's "Fail Over" duties:
  session timers re-armed, metadata re-checked), whose records are appended too.
- Timers run on the wall clock: one loop timer at the earliest ``next_deadline()`` of all shards
  calls ``expire_timers(now)``; the time given to shards is a monotonic clock anchored to the
  wall clock at start (so offset commit timestamps are real times and never go backwards).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from groupcoord.coordinator import offsets as offsets_mod
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import MemberIdSource
from groupcoord.coordinator.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
)
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.errors import CoordinatorError, ErrorCode
from groupcoord.storage.log import RecordLog

log = logging.getLogger(__name__)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int (UTF-16 code units)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@lru_cache(maxsize=1 << 16)
def partition_for(group_id: str, num_shards: int) -> int:
    """Kafka's ``partitionFor(groupId)``: ``Utils.abs(hashCode) % partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_shards


def error_response(request: Any, code: int, message: str) -> Any:
    """The response to ``request`` failing as a whole with ``code``."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return ConsumerGroupDescribeResponse(tuple(DescribedGroup(g, code, message)
                                                   for g in request.group_ids))
    if isinstance(request, DeleteGroupsRequest):
        return DeleteGroupsResponse(tuple(DeletableGroupResult(g, code, message)
                                          for g in request.group_ids))
    return offsets_mod.error_response(request, CoordinatorError(code, message))


class Clock:
    """Milliseconds: monotonic, anchored to the wall clock when created."""

    def __init__(self) -> None:
        self._wall0 = int(time.time() * 1000)
        self._mono0 = time.monotonic()

    def now_ms(self) -> int:
        return self._wall0 + int((time.monotonic() - self._mono0) * 1000)

    def monotonic_of(self, ms: int) -> float:
        """``time.monotonic()`` value (the asyncio loop's clock) at clock time ``ms``."""
        return self._mono0 + (ms - self._wall0) / 1000.0


class CoordinatorRuntime:
    def __init__(self, log_: RecordLog, num_shards: int, config: CoordinatorConfig,
                 image: MetadataImage, member_ids: MemberIdSource,
                 clock: Clock | None = None) -> None:
        if num_shards < 1:
            raise ValueError("at least one shard is needed")
        self.log = log_
        self.num_shards = num_shards
        self.config = config
        self.image = image
        self.member_ids = member_ids
        self.clock = clock or Clock()
        self.shards: list[Shard | None] = [None] * num_shards
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters, for logs and tests.
        self.append_failures = 0
        self.loads = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Load every shard from the log and start the timer."""
        self._loop = loop
        for i in range(self.num_shards):
            self._load(i)
        self._reschedule()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = None

    def _load(self, i: int) -> Shard | None:
        t0 = time.perf_counter()
        shard = Shard(i, self.config, self.image, self.member_ids)
        try:
            n = 0
            for k, v in self.log.read(i):
                shard.replay(Record.decode(k, v))
                n += 1
        except Exception:
            log.exception("shard %d: cannot load from the log; it stays unavailable", i)
            self.shards[i] = None
            return None
        result = shard.on_loaded(self.clock.now_ms())
        if result.records:
            try:
                self.log.append(i, [r.encode() for r in result.records], self.clock.now_ms())
            except Exception:
                log.exception("shard %d: cannot persist the records of its load; it stays "
                              "unavailable", i)
                self.shards[i] = None
                return None
        self.shards[i] = shard
        self.loads += 1
        self._maybe_wake_at(shard)
        log.info("shard %d loaded: %d records, %d groups in %.1f ms", i, n, len(shard.groups),
                 (time.perf_counter() - t0) * 1000)
        return shard

    def _shard(self, i: int) -> Shard | None:
        shard = self.shards[i]
        if shard is None:
            shard = self._load(i)
        return shard

    def _persist(self, i: int, result: Result[Any]) -> bool:
        """Append ``result``'s records to shard ``i``'s log; on failure reload the shard."""
        if result.records:
            try:
                self.log.append(i, [r.encode() for r in result.records], self.clock.now_ms())
            except Exception as e:
                self.append_failures += 1
                log.error("shard %d: log append failed (%s); reloading the shard from its log",
                          i, e)
                self.shards[i] = None
                self._load(i)
                self._reschedule()
                return False
        if result.timers:
            self._maybe_wake_at(self.shards[i])
        return True

    # ------------------------------------------------------------------ requests

    def shard_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_shards)

    def handle(self, shard_index: int, request: Any) -> Any:
        """Handle ``request`` on a shard; records are durable before this returns."""
        shard = self._shard(shard_index)
        if shard is None:
            return error_response(request, ErrorCode.coordinator_not_available,
                                  f"Coordinator shard {shard_index} is not available.")
        result = shard.handle(request, self.clock.now_ms())
        if not self._persist(shard_index, result):
            return error_response(request, ErrorCode.coordinator_not_available,
                                  "The coordinator could not persist the request; retry.")
        return result.response

    def handle_group(self, group_id: str, request: Any) -> Any:
        return self.handle(self.shard_of(group_id), request)

    def group_ids_by_shard(self, group_ids: Sequence[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for g in group_ids:
            out.setdefault(self.shard_of(g), []).append(g)
        return out

    def update_metadata(self, image: MetadataImage) -> None:
        """A new topic image for every shard (topics created, deleted, partitions added)."""
        self.image = image
        now = self.clock.now_ms()
        for i in range(self.num_shards):
            shard = self.shards[i]
            if shard is None:
                continue
            self._persist(i, shard.update_metadata(image, now))

    # ------------------------------------------------------------------ timers

    def _maybe_wake_at(self, shard: Shard | None) -> None:
        if shard is None:
            return
        dl = shard.next_deadline()
        if dl is not None and (self._timer_at is None or dl < self._timer_at):
            self._arm(dl)

    def _arm(self, deadline: int) -> None:
        if self._loop is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.call_at(self.clock.monotonic_of(deadline) + 0.0005, self._fire)

    def _reschedule(self) -> None:
        best: int | None = None
        for shard in self.shards:
            if shard is None:
                continue
            dl = shard.next_deadline()
            if dl is not None and (best is None or dl < best):
                best = dl
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = None
        if best is not None:
            self._arm(best)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        now = self.clock.now_ms()
        for i in range(self.num_shards):
            shard = self.shards[i]
            if shard is None:
                continue
            dl = shard.next_deadline()
            if dl is None or dl > now:
                continue
            for result in shard.expire_timers(now):
                if not self._persist(i, result):
                    break
        self._reschedule()

    def expire_now(self) -> None:
        """Run due timers now (tests)."""
        self._fire()


MemberIdFactory = Callable[[], str]
