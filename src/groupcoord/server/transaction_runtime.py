"""The transaction coordinator's driver: the pure ``transactions`` core on the asyncio loop, its
record log (Kafka's ``__transaction_state``), its timers and its markers.

- **Write before respond**, as the group coordinator's runtime (``server/runtime.py``): a
  handler's records are appended to the transaction log (one shard per partition of the log,
  ``transaction.state.log.num.partitions``) before the answer. A failed append answers
  COORDINATOR_NOT_AVAILABLE (retriable) and the coordinator is rebuilt from its log.
- **Markers** (``server/transaction_markers.py``): a handler's marker jobs are written once
  its records are durable, then the completions (CompleteCommit / CompleteAbort) are appended.
  EndTxn is answered as Kafka's ``TransactionCoordinator.handleEndTransaction`` answers it: once
  PrepareCommit / PrepareAbort is durable; its markers and completion follow (``run(...,
  defer_markers=True)``) in one loop callback scheduled with ``call_soon``, after the answer was
  written to the socket and before the loop reads anything more, so a client that begins its
  next transaction at once finds the previous one complete (a request that does arrive in
  between, pipelined, gets CONCURRENT_TRANSACTIONS and retries, as with Kafka). The callback
  writes every EndTxn of that loop iteration together and group-commits their completions: one
  append of the transaction log (``storage.log.append_shards``: one SQLite commit for all the
  shards). Until a marker is written the partition's last stable offset stays at the
  transaction's first offset, and the group's offsets stay pending (RequireStable answers
  UNSTABLE_OFFSET_COMMIT), so read_committed never sees a half-done transaction; a crash in
  between leaves PrepareCommit in the log, which loading completes. With the server's group
  commit (``server/group_commit.py``) the appends of a loop iteration are committed by a
  callback scheduled at the iteration's first append, so before this one: PrepareCommit is
  durable before its markers are written, and a group lost on the way rebuilds the coordinator
  (:meth:`TransactionRuntime.reload`) before the callback finds the jobs gone. InitProducerId's fencing
  abort writes its markers before it answers (it answers with the epoch after the abort). A job
  that fails stays in its Prepare state (requests about it get CONCURRENT_TRANSACTIONS,
  retriable) and is tried again every ``MARKER_RETRY_MS``.
- **Loading** (start, or the coordinator of a log partition moving to another broker): the log
  is replayed, each partition taken over gets the next coordinator epoch, and the transactions
  found in PrepareCommit / PrepareAbort get their markers written again (a restart between the
  two steps completes the transaction).
- **Timers**: one loop timer at the core's next deadline (a transaction's timeout, an id's
  expiration, a marker retry) calls :meth:`TransactionRuntime.expire`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.runtime import Clock
from groupcoord.server.transaction_markers import MarkerError, TransactionMarkers
from groupcoord.storage.log import LogError, RecordLog, append_shards, replay_entries
from groupcoord.transactions.config import TransactionConfig
from groupcoord.transactions.coordinator import MarkerJob, TransactionCoordinator, TxnResult
from groupcoord.transactions.records import CoordinatorEpochRecord, TxnRecord, decode, encode

__all__ = ["MARKER_RETRY_MS", "TransactionRuntime"]

log = logging.getLogger(__name__)

#: How long a marker job that failed waits before it is tried again.
MARKER_RETRY_MS = 200

Operation = Callable[[TransactionCoordinator], TxnResult]


class TransactionRuntime:
    def __init__(self, log_: RecordLog, config: TransactionConfig,
                 producer_ids: Callable[[], int], markers: TransactionMarkers,
                 clock: Clock | None = None) -> None:
        self.log = log_
        self.config = config
        self.producer_ids = producer_ids
        self.markers = markers
        self.clock = clock or Clock()
        self.coordinator = TransactionCoordinator(config, producer_ids)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        #: Marker jobs that failed, with when to try them again.
        self._retry: list[tuple[int, MarkerJob]] = []
        #: EndTxn's marker jobs, written by one ``call_soon`` callback after the answers.
        self._deferred: list[MarkerJob] = []
        self._drain_handle: asyncio.Handle | None = None
        #: Counters, for logs, metrics and tests.
        self.append_failures = 0
        self.marker_failures = 0
        self.completed = {True: 0, False: 0}

    # ------------------------------------------------------------------ lifecycle

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Replay the log and take every partition over (raises :class:`LogError`)."""
        self._loop = loop
        self._rebuild()
        self.take_over(range(self.config.partitions))

    def stop(self) -> None:
        # deferred markers not written yet stay in their Prepare state in the log: loading
        # writes them again
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None
        self._deferred.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None

    def _rebuild(self) -> None:
        coordinator = TransactionCoordinator(self.config, self.producer_ids)
        for shard in self.log.shards():
            replay_entries(self.log, shard,
                           lambda k, v: coordinator.replay(decode(k, v)))
        self.coordinator = coordinator
        self._retry.clear()
        self._deferred.clear()  # what is still in a Prepare state is in pending_markers()

    def reload(self) -> None:
        """The log lost records the coordinator had appended (a group commit that failed,
        ``server/group_commit.py``): rebuilt from the log; what it has in a Prepare state is
        completed by the retry timer."""
        now = self.clock.now_ms()
        self._rebuild()
        self._retry = [(now + MARKER_RETRY_MS, job) for job in self.coordinator.pending_markers()]
        self._schedule()

    def take_over(self, partitions: Iterable[int]) -> None:
        """Become the coordinator of ``partitions``: next coordinator epochs, pending markers
        written again."""
        result = self.coordinator.load(partitions)
        if self._persist(result.records):
            self._write_markers(result.markers)
        self._schedule()

    # ------------------------------------------------------------------ requests

    def run(self, op: Operation, defer_markers: bool = False) -> TxnResult:
        """Run a handler of the core: its records persisted, its markers written (with
        ``defer_markers``, EndTxn's: by a callback right after the answer, when the runtime runs
        on a loop). An InitProducerId that aborted an open transaction first is asked again once
        the abort is complete."""
        result = self._run_once(op, defer_markers and self._loop is not None)
        if result.retry_after_markers and not result.error:
            again = self._run_once(op)
            if again.retry_after_markers:  # the abort did not complete: the client retries
                again = TxnResult(error=int(ErrorCode.concurrent_transactions),
                                  message="The open transaction is being aborted.")
            result = again
        self._schedule()
        return result

    def _run_once(self, op: Operation, defer: bool = False) -> TxnResult:
        result = op(self.coordinator)
        if not self._persist(result.records):
            return TxnResult(error=int(ErrorCode.coordinator_not_available),
                             message="The transaction log could not be written; try again.")
        if defer and result.markers and self._loop is not None:
            self._deferred.extend(result.markers)
            if self._drain_handle is None:
                self._drain_handle = self._loop.call_soon(self._drain)
        else:
            self._write_markers(result.markers)
        return result

    def _drain(self) -> None:
        """The deferred marker jobs of this loop iteration, written together."""
        self._drain_handle = None
        jobs, self._deferred = self._deferred, []
        try:
            self._write_markers(jobs)
        except Exception:  # a callback must never kill the loop; the jobs are retried
            log.exception("transaction markers failed")
            now = self.clock.now_ms()
            live = {self._key(j) for j in self.coordinator.pending_markers()}
            self._retry.extend((now + MARKER_RETRY_MS, j) for j in jobs if self._key(j) in live)
        self._schedule()

    @staticmethod
    def _key(job: MarkerJob) -> tuple[str, int, int, bool]:
        return job.transactional_id, job.producer_id, job.producer_epoch, job.commit

    def _persist(self, records: list[TxnRecord]) -> bool:
        if not records:
            return True
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for r in records:
            p = (r.partition if isinstance(r, CoordinatorEpochRecord)
                 else self.coordinator.partition_of(r.transactional_id))
            by_partition.setdefault(p, []).append(encode(r))
        now = self.clock.now_ms()
        try:
            append_shards(self.log, sorted(by_partition.items()), now)
        except LogError as e:
            self.append_failures += 1
            log.error("transaction log append failed (%s); reloading the transactions from the "
                      "log", e)
            self._rebuild()
            # what the log has in a Prepare state is completed by the retry timer
            self._retry = [(now + MARKER_RETRY_MS, job)
                           for job in self.coordinator.pending_markers()]
            return False
        return True

    def _write_markers(self, jobs: Iterable[MarkerJob]) -> None:
        """Write the jobs' markers, then append their completions in one go (group commit)."""
        records: list[TxnRecord] = []
        done: list[MarkerJob] = []
        for job in jobs:
            now = self.clock.now_ms()
            try:
                self.markers.write(job, now)
            except MarkerError as e:
                self.marker_failures += 1
                log.warning("transaction %r: %s; the %s is tried again in %d ms",
                            job.transactional_id, e, "commit" if job.commit else "abort",
                            MARKER_RETRY_MS)
                self._retry.append((now + MARKER_RETRY_MS, job))
                continue
            completion = self.coordinator.markers_written(job, now).records
            if completion:
                records.extend(completion)
                done.append(job)
        if self._persist(records):
            for job in done:
                self.completed[job.commit] += 1

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (self.coordinator.next_deadline(),
                                 min((t for t, _ in self._retry), default=None)) if d is not None]
        return min(deadlines) if deadlines else None

    def expire(self, now_ms: int | None = None) -> None:
        """Fire what is due: timed-out transactions aborted, expired ids removed, failed
        markers tried again."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        due = [job for t, job in self._retry if t <= now]
        self._retry = [(t, job) for t, job in self._retry if t > now]
        # a retried job may be stale (completed since, or the log reloaded): the core checks
        live = {self._key(j) for j in self.coordinator.pending_markers()}
        self._write_markers(j for j in due if self._key(j) in live)
        result = self.coordinator.expire(now)
        if self._persist(result.records):
            self._write_markers(result.markers)
        self._schedule()

    def _schedule(self) -> None:
        loop = self._loop
        if loop is None:
            return
        at = self.next_deadline()
        if at == self._timer_at and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = at
        if at is not None:
            self._timer = loop.call_at(self.clock.monotonic_of(at), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        try:
            self.expire()
        except Exception:  # a timer must never kill the loop
            log.exception("transaction timers failed")
            self._schedule()
