"""The transaction coordinator's driver: the pure ``transactions`` core on the asyncio loop, its
record log (Kafka's ``__transaction_state``), its timers and its markers.

- **Write before respond**, as the group coordinator's runtime (``server/runtime.py``): a
  handler's records are appended to the transaction log (one shard per partition of the log,
  ``transaction.state.log.num.partitions``) before the answer. A failed append answers
  COORDINATOR_NOT_AVAILABLE (retriable) and the coordinator is rebuilt from its log.
- **Markers** (``server/transaction_markers.py``): a handler's marker jobs are written right
  after its records are durable, then the completion (CompleteCommit / CompleteAbort) is
  appended. Kafka answers EndTxn once PrepareCommit is durable and sends the markers after; so
  does this driver, which writes them before it returns (one process: no network in between), so
  the client's next transaction rarely finds the previous one still completing. A job that fails
  stays in its Prepare state (requests about it get CONCURRENT_TRANSACTIONS, retriable) and is
  tried again every ``MARKER_RETRY_MS``.
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
from groupcoord.storage.log import LogError, RecordLog, replay_entries
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

    def take_over(self, partitions: Iterable[int]) -> None:
        """Become the coordinator of ``partitions``: next coordinator epochs, pending markers
        written again."""
        result = self.coordinator.load(partitions)
        if self._persist(result.records):
            self._write_markers(result.markers)
        self._schedule()

    # ------------------------------------------------------------------ requests

    def run(self, op: Operation) -> TxnResult:
        """Run a handler of the core: its records persisted, its markers written. An
        InitProducerId that aborted an open transaction first is asked again once the abort is
        complete."""
        result = self._run_once(op)
        if result.retry_after_markers and not result.error:
            again = self._run_once(op)
            if again.retry_after_markers:  # the abort did not complete: the client retries
                again = TxnResult(error=int(ErrorCode.concurrent_transactions),
                                  message="The open transaction is being aborted.")
            result = again
        self._schedule()
        return result

    def _run_once(self, op: Operation) -> TxnResult:
        result = op(self.coordinator)
        if not self._persist(result.records):
            return TxnResult(error=int(ErrorCode.coordinator_not_available),
                             message="The transaction log could not be written; try again.")
        self._write_markers(result.markers)
        return result

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
            for p, batch in sorted(by_partition.items()):
                self.log.append(p, batch, now)
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
            if self._persist(self.coordinator.markers_written(job, now).records):
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
        live = {(j.transactional_id, j.producer_id, j.producer_epoch, j.commit)
                for j in self.coordinator.pending_markers()}
        self._write_markers(j for j in due if (j.transactional_id, j.producer_id,
                                                j.producer_epoch, j.commit) in live)
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
