"""The coordinator runtime: N shards driven by one asyncio event loop (docs/design.md "The core contract").

- Groups live in shard ``partition_for(group_id, N)``, Kafka's ``partitionFor``:
  ``Utils.abs(groupId.hashCode()) % groupMetadataTopicPartitionCount`` with Java's
  ``String.hashCode`` (over UTF-16 code units) and ``Utils.abs`` (MIN_VALUE maps to 0).
- Every call into a shard runs on the loop thread, one at a time (shards are serial).
- **Write before respond**: a request's records are appended to the shard's log before its
  response is returned. If the append fails the response is replaced by
  COORDINATOR_NOT_AVAILABLE (retriable: clients look the coordinator up again and retry) and the
  shard, whose memory is now ahead of its log, is rebuilt from the log.
- Loading a shard = replaying its log through ``storage.replay_entries`` (bad data is a
  LogError naming the file, the shard and the offset), then ``on_loaded(now)`` (the spec's "Fail
  Over" duties: session timers re-armed, metadata re-checked against the current image), whose
  records are appended too. The server loads in the background (``start(background=True)``):
  the replay runs on a loader thread into a shard nobody else sees, the load duties on the loop;
  meanwhile requests for that shard get COORDINATOR_LOAD_IN_PROGRESS (retriable) and the other
  shards serve. A shard that fails to load answers COORDINATOR_NOT_AVAILABLE and is loaded
  again by its first request ``load_retry_backoff_s`` later; ``wait_loaded`` raises its LogError.
- **Deferred responses** (classic JoinGroup / SyncGroup, ``Result.response is DEFERRED``):
  :meth:`CoordinatorRuntime.handle_deferrable` returns a future, answered when a later result
  (of any request or timer of that shard) carries its completion, always after that result's
  records are durable. If the shard is reloaded (a failed append), every pending deferred
  request of it is answered NOT_COORDINATOR (as Kafka answers the requests pending on an
  unloaded coordinator) and dropped. Cancelling a future (its connection closed) forgets the
  request: a completion for it later is discarded.
- Timers run on the wall clock: one loop timer at the earliest ``next_deadline()`` of all shards
  calls ``expire_timers(now)``; the time given to shards is a monotonic clock anchored to the
  wall clock at start (so offset commit timestamps are real times and never go backwards).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from groupcoord.coordinator import offsets as offsets_mod
from groupcoord.coordinator.classic import messages as classic
from groupcoord.coordinator.config import CoordinatorConfig, ShareGroupConfig, effective_share_group_config
from groupcoord.coordinator.ids import MemberIdSource
from groupcoord.coordinator.messages import (
    CompleteTransactionRequest,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
)
from groupcoord.coordinator.modern.share.messages import ShareGroupHeartbeatRequest
from groupcoord.coordinator.records import MemberKey, Record, RecordType
from groupcoord.coordinator.result import DEFERRED, Result
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.timers import TimerChange
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.errors import CoordinatorError, ErrorCode
from groupcoord.server.metrics import CoordinatorMetrics
from groupcoord.storage.log import LogError, RecordLog, replay_entries

log = logging.getLogger(__name__)

#: Shards replayed at the same time (background loads): a large shard does not hold up others.
LOADER_THREADS = 4


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
    if isinstance(request, classic.JoinGroupRequest):
        return classic.JoinGroupResponse(code, member_id=request.member_id)
    if isinstance(request, classic.SyncGroupRequest):
        return classic.SyncGroupResponse(code)
    if isinstance(request, classic.HeartbeatRequest):
        return classic.HeartbeatResponse(code)
    if isinstance(request, classic.LeaveGroupRequest):
        return classic.LeaveGroupResponse(code)
    if isinstance(request, classic.DescribeGroupsRequest):
        return classic.DescribeGroupsResponse(tuple(
            classic.DescribedClassicGroup(g, code, message, "Dead") for g in request.group_ids))
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
        #: Sensors for ``--metrics-port`` (rebalances, load times, compactions).
        self.metrics = CoordinatorMetrics()
        #: Background loads: shard -> future done when the load finished (or failed).
        self._loading: dict[int, asyncio.Future[None]] = {}
        #: Shards whose last load failed, with why.
        self.load_errors: dict[int, LogError] = {}
        self.background_loads = False
        self._loader: ThreadPoolExecutor | None = None
        #: A shard that failed to load is tried again by a request this much later.
        self.load_retry_backoff_s = 5.0
        self._retry_at: dict[int, float] = {}
        self._error_shard: Shard | None = None  # error responses while a shard is unavailable
        self._closing = False
        #: Deferred requests waiting for a completion: token -> (shard, request, future).
        self._deferred: dict[Hashable, tuple[int, Any, asyncio.Future[Any]]] = {}
        #: Groups whose rebalance is held (control plane): given to every shard, also to a
        #: shard loaded later (``Shard.held_groups``).
        self.held_groups: frozenset[str] = frozenset()
        self._tokens = itertools.count(1)
        #: Called with (group id, member id) for each share group member the coordinator
        #: removed (KIP-932: its session timed out, or it was fenced), once the removal is
        #: durable; not for a member that left by itself (a ShareGroupHeartbeat at epoch -1).
        #: Set by the server: the share partitions release what the member had acquired.
        self.share_member_removed: Callable[[str, str], None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, loop: asyncio.AbstractEventLoop, *, background: bool = False) -> None:
        """Load every shard from the log and start the timer.

        ``background=False`` (tests, tools): every shard is loaded when this returns.
        ``background=True`` (the server): shards load on a loader thread; requests for a shard
        still loading get COORDINATOR_LOAD_IN_PROGRESS; :meth:`wait_loaded` waits for them.
        """
        self._loop = loop
        self.background_loads = background
        for i in range(self.num_shards):
            self._begin_load(i)
        self._reschedule()

    def stop(self) -> None:
        self._closing = True  # a replay in progress stops at its next record
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = None
        for done in self._loading.values():
            if not done.done():
                done.set_result(None)
        self._loading.clear()
        if self._loader is not None:
            self._loader.shutdown(wait=True, cancel_futures=True)
            self._loader = None

    def is_loading(self, i: int) -> bool:
        return i in self._loading

    async def wait_loaded(self) -> None:
        """Wait until no shard is loading; raise the LogError of a shard that failed to load."""
        while self._loading:
            await asyncio.wait(list(self._loading.values()))
        for i, e in sorted(self.load_errors.items()):
            if self.shards[i] is None:
                raise e

    def _begin_load(self, i: int) -> None:
        """Load shard ``i``: now, or on the loader thread in background mode."""
        if i in self._loading or self._closing:
            return
        if not self.background_loads or self._loop is None:
            self._load(i)
            return
        loop = self._loop
        if self._loader is None:
            self._loader = ThreadPoolExecutor(max_workers=min(self.num_shards, LOADER_THREADS),
                                              thread_name_prefix="groupcoord-load")
        shard = Shard(i, self.config, self.image, self.member_ids)
        done: asyncio.Future[None] = loop.create_future()
        self._loading[i] = done
        work = loop.run_in_executor(self._loader, self._replay, i, shard)
        work.add_done_callback(lambda w: self._replayed(i, shard, w, done))

    def _replay(self, i: int, shard: Shard) -> tuple[int, float]:
        """Replay shard ``i``'s log into ``shard`` (any thread: ``shard`` is not shared yet):
        ``(records, ms)``. Raises :class:`LogError` naming the file, shard and offset."""
        t0 = time.perf_counter()

        def apply(key: bytes, value: bytes | None) -> None:
            if self._closing:
                raise RuntimeError("the coordinator is stopping")
            shard.replay(Record.decode(key, value))

        n = replay_entries(self.log, i, apply)
        return n, (time.perf_counter() - t0) * 1000

    def _replayed(self, i: int, shard: Shard, work: asyncio.Future[tuple[int, float]],
                  done: asyncio.Future[None]) -> None:
        """On the loop: a background replay ended; run the load duties and serve."""
        try:
            exc = None if work.cancelled() else work.exception()
            if self._closing or work.cancelled() or self._loading.get(i) is not done:
                return
            del self._loading[i]
            if exc is not None:
                self._load_failed(i, exc)
            else:
                n, ms = work.result()
                self._install(i, shard, n, ms)
        finally:
            if not done.done():
                done.set_result(None)

    def _load(self, i: int) -> Shard | None:
        """Load shard ``i`` now, on this thread."""
        shard = Shard(i, self.config, self.image, self.member_ids)
        try:
            n, ms = self._replay(i, shard)
        except Exception as e:
            self._load_failed(i, e)
            return None
        return self._install(i, shard, n, ms)

    def _load_failed(self, i: int, e: BaseException) -> None:
        self.shards[i] = None
        err = e if isinstance(e, LogError) else LogError(f"shard {i}: cannot load: {e}")
        self.load_errors[i] = err
        self._retry_at[i] = time.monotonic() + self.load_retry_backoff_s
        log.error("shard %d: cannot load from the log, it stays unavailable: %s", i, err)

    def _install(self, i: int, shard: Shard, n: int, replay_ms: float) -> Shard | None:
        """The load duties of a replayed shard (records appended), then it serves."""
        t0 = time.perf_counter()
        shard.metadata = self.image  # topics may have changed while it was loading
        shard.held_groups = self.held_groups
        shard.finish_clock = self.clock.now_ms  # stamps the end of target computations
        result = shard.on_loaded(self.clock.now_ms())
        if result.records:
            try:
                self.log.append(i, [r.encode() for r in result.records], self.clock.now_ms())
            except Exception as e:
                self._load_failed(i, LogError(f"shard {i}: cannot persist the records of its "
                                              f"load duties: {e}"))
                return None
            self.metrics.appended(result.records)
            if self.share_member_removed is not None:
                self._share_members_removed(result.records, None)
        self.shards[i] = shard
        self.load_errors.pop(i, None)
        self.loads += 1
        ms = replay_ms + (time.perf_counter() - t0) * 1000
        self.metrics.loaded(ms)
        self._maybe_wake_at(shard)
        log.info("shard %d loaded: %d records, %d groups in %.1f ms", i, n, len(shard.groups), ms)
        return shard

    def _shard(self, i: int) -> Shard | None:
        shard = self.shards[i]
        if (shard is None and i not in self._loading
                and time.monotonic() >= self._retry_at.get(i, 0.0)):
            self._begin_load(i)
            shard = self.shards[i]
        return shard

    def _unavailable(self, i: int, request: Any) -> Any:
        """The response to a request for shard ``i``, which is loading or failed to load."""
        if i in self._loading:
            code, message = ErrorCode.coordinator_load_in_progress, \
                f"Coordinator shard {i} is loading; retry."
        else:
            code, message = ErrorCode.coordinator_not_available, \
                f"Coordinator shard {i} is not available."
        try:
            return error_response(request, code, message)
        except CoordinatorError as e:  # a request type only the shard's managers know
            if self._error_shard is None:
                self._error_shard = Shard(i, self.config, self.image, self.member_ids)
            return self._error_shard._error_response(request, e)

    def _persist(self, i: int, result: Result[Any], request: Any = None) -> bool:
        """Append ``result``'s records to shard ``i``'s log; on failure reload the shard.
        ``request``: the request that produced them (None: timers, metadata)."""
        if result.records:
            try:
                self.log.append(i, [r.encode() for r in result.records], self.clock.now_ms())
            except Exception as e:
                self.append_failures += 1
                log.error("shard %d: log append failed (%s); reloading the shard from its log",
                          i, e)
                self.shards[i] = None
                self._fail_deferred(i)
                self._begin_load(i)
                self._reschedule()
                return False
            self.metrics.appended(result.records)
            if self.share_member_removed is not None:
                self._share_members_removed(result.records, request)
        if result.timers:
            self._timers_changed(self.shards[i], result.timers)
        for token, response in result.completions:
            self._complete(token, response)
        return True

    def _share_members_removed(self, records: list[Record], request: Any) -> None:
        """Tell :attr:`share_member_removed` of the share members whose metadata the records
        tombstone, except the one leaving by its own heartbeat."""
        leaving = None
        if isinstance(request, ShareGroupHeartbeatRequest) and request.member_epoch == -1:
            leaving = (request.group_id, request.member_id)
        removed = [(k.group_id, k.member_id) for r in records
                   if r.value is None and (k := r.key).type is SHARE_MEMBER_METADATA
                   and isinstance(k, MemberKey)]
        notify = self.share_member_removed
        for group_id, member_id in removed:
            if notify is not None and (group_id, member_id) != leaving:
                try:
                    notify(group_id, member_id)
                except Exception:
                    log.exception("share member removal of %s/%s failed", group_id, member_id)

    def hold_rebalance(self, group_id: str, hold: bool) -> None:
        """Hold (or release) the group's rebalance: its heartbeats are answered, but no new
        target assignment is computed while held (``Shard.held_groups``); on release the next
        heartbeat computes it."""
        held = set(self.held_groups)
        if hold:
            held.add(group_id)
        else:
            held.discard(group_id)
        self.held_groups = frozenset(held)
        for shard in self.shards:
            if shard is not None:
                shard.held_groups = self.held_groups

    def reload_shard(self, i: int) -> None:
        """Load shard ``i`` again from its log (its coordinator moved to another broker, which
        loads the groups as a Kafka coordinator loads a ``__consumer_offsets`` partition):
        COORDINATOR_LOAD_IN_PROGRESS meanwhile, pending deferred requests NOT_COORDINATOR."""
        self.shards[i] = None
        self._loading.pop(i, None)
        self._fail_deferred(i)
        self._begin_load(i)
        self._reschedule()

    # ------------------------------------------------------------------ requests

    def shard_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_shards)

    def handle(self, shard_index: int, request: Any) -> Any:
        """Handle ``request`` on a shard; records are durable before this returns."""
        shard = self._shard(shard_index)
        if shard is None:
            return self._unavailable(shard_index, request)
        result = shard.handle(request, self.clock.now_ms())
        if not self._persist(shard_index, result, request):
            return error_response(request, ErrorCode.coordinator_not_available,
                                  "The coordinator could not persist the request; retry.")
        return result.response

    def handle_group(self, group_id: str, request: Any) -> Any:
        return self.handle(self.shard_of(group_id), request)

    def share_group_config(self, group_id: str) -> ShareGroupConfig:
        """The share settings of ``group_id`` (KIP-932: record lock duration, delivery count
        limit, auto offset reset, isolation level, ...): its group configs on its shard, else
        the broker's (also while its shard loads). A read: no record, no request."""
        shard = self._shard(self.shard_of(group_id))
        if shard is None:
            return effective_share_group_config(self.config, {})
        return shard.share_group_config(group_id)

    def complete_transaction(self, group_id: str, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int = -1) -> int:
        """The transaction coordinator's end marker for ``group_id`` (Kafka's
        ``GroupCoordinator.completeTransaction``): the producer's pending transactional offsets
        in the group become committed offsets (``commit``) or are dropped, durably when this
        returns (``coordinator/transactional_offsets.py``). Returns the error code, 0 when
        done: INVALID_PRODUCER_EPOCH (the producer has a newer epoch in the group: nothing
        changed), TRANSACTION_COORDINATOR_FENCED, or a retriable COORDINATOR_LOAD_IN_PROGRESS /
        COORDINATOR_NOT_AVAILABLE (the shard is loading or its log append failed: call again).
        Completing a transaction again (a marker repeated after a restart) is harmless."""
        response = self.handle_group(group_id, CompleteTransactionRequest(
            group_id, producer_id, producer_epoch, commit, coordinator_epoch))
        if response.error_code:
            log.info("completing the transaction of producer %d (epoch %d) in group %r: error "
                     "%d %s", producer_id, producer_epoch, group_id, response.error_code,
                     response.error_message)
        return int(response.error_code)

    # ------------------------------------------------------------------ deferred responses

    def handle_deferrable(self, group_id: str, request: Any) -> Any:
        """Handle a request that the core may answer later (classic JoinGroup / SyncGroup):
        its response now, or an :class:`asyncio.Future` of it (module docstring)."""
        i = self.shard_of(group_id)
        shard = self._shard(i)
        if shard is None:
            return self._unavailable(i, request)
        token = next(self._tokens)
        result = shard.handle(request, self.clock.now_ms(), token)
        if not self._persist(i, result):
            return error_response(request, ErrorCode.coordinator_not_available,
                                  "The coordinator could not persist the request; retry.")
        if result.response is not DEFERRED:
            return result.response
        loop = self._loop or asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._deferred[token] = (i, request, fut)
        fut.add_done_callback(lambda f: self._forget(token, f))
        return fut

    @property
    def pending_deferred(self) -> int:
        """Deferred requests not answered yet (tests, metrics)."""
        return len(self._deferred)

    def _forget(self, token: Hashable, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():  # the connection closed: a later completion is discarded
            self._deferred.pop(token, None)

    def _complete(self, token: Hashable, response: Any) -> None:
        entry = self._deferred.pop(token, None)
        if entry is None:
            log.debug("completion for a forgotten request (its connection closed): %r", token)
            return
        fut = entry[2]
        if not fut.done():
            fut.set_result(response)

    def _fail_deferred(self, i: int) -> None:
        """Shard ``i`` is reloaded: answer its pending deferred requests NOT_COORDINATOR."""
        tokens = [t for t, (shard, _, _) in self._deferred.items() if shard == i]
        if tokens:
            log.info("shard %d: answering %d pending requests NOT_COORDINATOR", i, len(tokens))
        for token in tokens:
            _, request, fut = self._deferred.pop(token)
            if not fut.done():
                fut.set_result(error_response(request, ErrorCode.not_coordinator,
                                              f"Coordinator shard {i} was reloaded; find the "
                                              f"coordinator and retry."))

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

    def _timers_changed(self, shard: Shard | None, changes: list[TimerChange]) -> None:
        """Wake up earlier if a timer was set before the wake-up armed. The armed wake-up is
        never later than any shard's next deadline (every change of a shard's timers passes
        here or :meth:`_reschedule`), so a timer set at or after it (a session renewed by a
        heartbeat: nearly every request) or a cancelled one needs nothing: the wake-up finds
        what is due and arms the next. Asking the shard for its next deadline instead, on
        every heartbeat, cost a tenth of the server's time per heartbeat (its timer heap
        re-filed the renewed sessions at the top each time)."""
        at = self._timer_at
        if at is not None:
            for change in changes:
                dl = change.deadline_ms
                if dl is not None and dl < at:
                    break
            else:
                return
        self._maybe_wake_at(shard)

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

SHARE_MEMBER_METADATA = RecordType.SHARE_GROUP_MEMBER_METADATA
