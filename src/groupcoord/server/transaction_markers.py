"""The transaction markers (KIP-98 "WriteTxnMarkers"): how a committed or aborted transaction
reaches its partitions and its groups.

Kafka's coordinator sends WriteTxnMarkers to the leader of every partition of the transaction;
the leader appends a control batch (a COMMIT or ABORT marker) and, for a ``__consumer_offsets``
partition, the group coordinator makes the transaction's pending offsets visible (commit) or drops
them (abort). In one process that is two calls, the seam between the transaction coordinator and
the data:

- ``PartitionLog.append_control(producer_id, producer_epoch, commit, coordinator_epoch,
  timestamp_ms) -> offset`` on every partition of the transaction (``server/partition_log.py``);
- ``CoordinatorRuntime.complete_transaction(group_id, producer_id, producer_epoch, commit,
  coordinator_epoch)`` for every group the transaction added with AddOffsetsToTxn
  (``server/runtime.py``), which answers an error code (0: done).

Markers are idempotent at their targets (a partition ignores a marker of a producer epoch it has
already completed; a group with nothing pending for the producer has nothing to complete), so a
job is written again whole after a failure or a restart. :meth:`TransactionMarkers.write` raises
:class:`MarkerError` naming the first target that failed (an exception, or an error code from
the group coordinator); the transaction then stays in its Prepare state and the driver tries
again later (``server/transaction_runtime.py``). A target that refuses the marker as stale
(INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: it has seen a newer epoch) is
skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.transactions.coordinator import MarkerJob

__all__ = ["GroupTransactions", "MarkerError", "PartitionMarkers", "TransactionMarkers"]

log = logging.getLogger(__name__)

#: What a target answers a marker it has gone past (Kafka's TransactionMarkerRequestCompletion
#: Handler drops the transaction's remaining markers to that target on these).
STALE = (int(ErrorCode.invalid_producer_epoch), int(ErrorCode.transaction_coordinator_fenced))


class PartitionMarkers(Protocol):
    """What a partition log offers the markers (``server/partition_log.py``)."""

    def append_control(self, producer_id: int, producer_epoch: int, commit: bool,
                       coordinator_epoch: int, timestamp_ms: int) -> int: ...


class GroupTransactions(Protocol):
    """What the group coordinator offers the markers (``server/runtime.py``)."""

    def complete_transaction(self, group_id: str, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int = -1) -> int: ...


class MarkerError(Exception):
    """A marker could not be written; the message names the partition or group."""


class TransactionMarkers:
    """Writes a :class:`MarkerJob`: ``partition(topic, index)`` gives the partition's log (None:
    the topic or partition is gone, skipped as Kafka skips a deleted partition's marker),
    ``groups`` the group coordinator."""

    def __init__(self, partition: Callable[[str, int], PartitionMarkers | None],
                 groups: GroupTransactions) -> None:
        self.partition = partition
        self.groups = groups
        #: Markers written, for metrics and tests.
        self.written = 0

    def write(self, job: MarkerJob, now_ms: int) -> None:
        for topic, index in job.partitions:
            plog = self.partition(topic, index)
            if plog is None:
                log.warning("transaction %r: partition %s-%d is gone; its marker is skipped",
                            job.transactional_id, topic, index)
                continue
            try:
                plog.append_control(job.producer_id, job.producer_epoch, job.commit,
                                    job.coordinator_epoch, now_ms)
            except Exception as e:  # any failure leaves the job to retry
                if self._stale(job, f"{topic}-{index}", getattr(e, "code", None)):
                    continue
                raise MarkerError(f"marker for {topic}-{index}: {e}") from e
            self.written += 1
        for group in job.groups:
            try:
                code = self.groups.complete_transaction(group, job.producer_id,
                                                        job.producer_epoch, job.commit,
                                                        job.coordinator_epoch)
            except Exception as e:  # likewise
                raise MarkerError(f"offsets of group {group!r}: {e}") from e
            if code and not self._stale(job, f"group {group!r}", code):
                raise MarkerError(f"offsets of group {group!r}: {error_name(int(code))}")
            self.written += 1

    @staticmethod
    def _stale(job: MarkerJob, target: str, code: object) -> bool:
        """Whether a target refused the marker as stale: it has seen a newer producer epoch
        (INVALID_PRODUCER_EPOCH) or a newer coordinator (TRANSACTION_COORDINATOR_FENCED). Kafka's
        coordinator then stops sending that transaction's markers to it; here the target is
        skipped (a newer epoch's marker has ended what this one would) and the job goes on."""
        if code not in STALE:
            return False
        log.warning("transaction %r: %s refused the marker at producer epoch %d, coordinator "
                    "epoch %d as stale (%s); skipped", job.transactional_id, target,
                    job.producer_epoch, job.coordinator_epoch, error_name(int(str(code))))
        return True
