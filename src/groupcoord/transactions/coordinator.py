"""The transaction coordinator's handlers, replay, timeouts and marker jobs (KIP-98, KIP-360,
KIP-588, KIP-664; the behaviour of Kafka's ``TransactionCoordinator`` and
``TransactionMetadata``, transaction version 1: the flow where the client adds every partition
with AddPartitionsToTxn and EndTxn keeps the producer epoch).

The contract is the group coordinator's (docs/design.md "The core contract"): a handler returns
a :class:`TxnResult` whose ``records`` it has already applied through :meth:`replay`; the driver
appends them to the transaction log before it answers. Committing or aborting is two steps, as in
Kafka: EndTxn writes PrepareCommit / PrepareAbort and returns a :class:`MarkerJob` (a control
marker for every partition of the transaction, the offsets of every group it added completed);
once the driver has written the markers it calls :meth:`markers_written`, which writes
CompleteCommit / CompleteAbort. A transaction left in a Prepare state (a restart between the two
steps, a marker that could not be written) gets its job again from :meth:`load` and
:meth:`pending_markers`: markers are idempotent at the partitions (same producer epoch, same or
newer coordinator epoch).

Choices, where Kafka's behaviour needs a driver's round trip:

- InitProducerId for an id with an open transaction fences it (epoch bumped) and aborts it, as
  Kafka does, and Kafka then answers CONCURRENT_TRANSACTIONS so the client asks again, which bumps
  the epoch once more. Here the result says ``retry_after_markers``: the driver writes the abort's
  markers and asks again itself, so the client gets the second answer at once (the same epochs
  as Kafka's, one round trip less).
- A timed-out transaction (``start + transaction.timeout.ms`` passed, Kafka's
  ``abortTimedOutTransactions``) is fenced and aborted the same way by :meth:`expire`; its
  producer recovers with InitProducerId giving its old epoch (KIP-588): the old epoch is the
  ``last_producer_epoch``, so the answer is the bumped epoch without a second bump.
- PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH to the request versions that predate it
  (the wire edge maps it: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn below v2, InitProducerId
  below v4), as Kafka's ``KafkaApis`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from groupcoord.coordinator.timers import Timers
from groupcoord.protocol.errors import ErrorCode
from groupcoord.transactions.config import TransactionConfig
from groupcoord.transactions.records import CoordinatorEpochRecord, TransactionRecord, TxnRecord
from groupcoord.transactions.state import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
    check_transition,
)

__all__ = ["MarkerJob", "ProducerIdSource", "TransactionCoordinator", "TxnResult",
           "java_string_hash", "partition_for"]

E = ErrorCode
S = TransactionState
#: Where the next producer id comes from (the server's durable allocator; tests count).
ProducerIdSource = Callable[[], int]


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit int (UTF-16 code units)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@lru_cache(maxsize=1 << 16)
def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``partitionFor``: ``Utils.abs(key.hashCode) % partitions`` (cached: every request
    and record of an id asks it)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(slots=True, frozen=True)
class MarkerJob:
    """Commit or abort markers to write for one transaction (Kafka's ``WriteTxnMarkers``): a
    control record on every partition, the pending offsets of every group completed."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]
    groups: tuple[str, ...]


@dataclass(slots=True)
class TxnResult:
    """What a handler returns; ``records`` are applied already, the driver persists them."""

    error: int = 0
    message: str | None = None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    records: list[TxnRecord] = field(default_factory=list)
    markers: list[MarkerJob] = field(default_factory=list)
    #: InitProducerId aborted an open transaction first: write ``markers``, call
    #: :meth:`TransactionCoordinator.markers_written`, then ask again.
    retry_after_markers: bool = False

    def extend(self, other: TxnResult) -> None:
        self.records.extend(other.records)
        self.markers.extend(other.markers)


def _fail(code: int, message: str) -> TxnResult:
    return TxnResult(error=int(code), message=message)


class TransactionCoordinator:
    """Every transactional id of the broker, in the partitions of the transaction log."""

    def __init__(self, config: TransactionConfig, producer_ids: ProducerIdSource) -> None:
        self.config = config
        self.producer_ids = producer_ids
        self.txns: dict[str, TransactionMetadata] = {}
        #: Coordinator epoch per transaction-log partition (:class:`CoordinatorEpochRecord`).
        self.coordinator_epochs: dict[int, int] = {}
        #: ("timeout", id): an Ongoing transaction's end; ("expire", id): the id's expiration.
        self.timers = Timers()

    # ------------------------------------------------------------------ records

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.partitions)

    def replay(self, record: TxnRecord) -> None:
        """Apply one record: the only way state changes (live and when loading)."""
        if isinstance(record, CoordinatorEpochRecord):
            self.coordinator_epochs[record.partition] = record.epoch
            return
        tid = record.transactional_id
        meta = record.metadata
        self.timers.cancel(("timeout", tid))
        self.timers.cancel(("expire", tid))
        if meta is None:
            self.txns.pop(tid, None)
            return
        self.txns[tid] = meta
        if meta.state is S.ONGOING:
            # Kafka aborts when ``start + timeout < now``: the first due millisecond is +1.
            self.timers.schedule(("timeout", tid), meta.start_ms + meta.timeout_ms + 1)
        elif meta.state is S.EMPTY or meta.state.completed:
            self.timers.schedule(("expire", tid), meta.last_update_ms + self.config.id_expiration_ms)

    def _write(self, result: TxnResult, record: TxnRecord) -> None:
        if isinstance(record, TransactionRecord) and record.metadata is not None:
            old = self.txns.get(record.transactional_id)
            if old is not None:
                check_transition(old.state, record.metadata.state)
        self.replay(record)
        result.records.append(record)

    def _put(self, result: TxnResult, meta: TransactionMetadata) -> None:
        self._write(result, TransactionRecord(meta.transactional_id, meta))

    def coordinator_epoch(self, transactional_id: str) -> int:
        return self.coordinator_epochs.get(self.partition_of(transactional_id), 0)

    def load(self, partitions: Iterable[int]) -> TxnResult:
        """The coordinator took over ``partitions`` (their records replayed): each gets the next
        coordinator epoch, and every transaction of them left in PrepareCommit / PrepareAbort
        gets its marker job again (Kafka's recovery on becoming the coordinator)."""
        result = TxnResult()
        taken = sorted(set(partitions))
        for p in taken:
            self._write(result, CoordinatorEpochRecord(p, self.coordinator_epochs.get(p, 0) + 1))
        wanted = set(taken)
        result.markers.extend(job for job in self.pending_markers()
                              if self.partition_of(job.transactional_id) in wanted)
        return result

    def pending_markers(self) -> list[MarkerJob]:
        """The marker jobs of every transaction in a Prepare state, by transactional id."""
        return [self._job(m) for _, m in sorted(self.txns.items()) if m.state.preparing]

    def _job(self, m: TransactionMetadata) -> MarkerJob:
        return MarkerJob(m.transactional_id, m.producer_id, m.producer_epoch,
                         m.state is S.PREPARE_COMMIT, self.coordinator_epoch(m.transactional_id),
                         m.partitions, m.groups)

    # ------------------------------------------------------------------ InitProducerId

    def init_producer_id(self, transactional_id: str, timeout_ms: int, now_ms: int,
                         expected_producer_id: int = NO_PRODUCER_ID,
                         expected_epoch: int = NO_PRODUCER_EPOCH) -> TxnResult:
        """A producer with ``transactional_id`` starts (or recovers, KIP-360 / KIP-588, when it
        gives the producer id and epoch it has): its producer id and a new epoch, which fences
        every older producer of the id."""
        if not transactional_id:
            return _fail(E.invalid_request, "The transactional id must not be empty.")
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return _fail(E.invalid_transaction_timeout,
                         f"transaction.timeout.ms {timeout_ms} is not within 1.."
                         f"{self.config.max_timeout_ms} (transaction.max.timeout.ms).")
        expected = expected_producer_id != NO_PRODUCER_ID
        meta = self.txns.get(transactional_id)
        result = TxnResult()
        if meta is None:
            meta = TransactionMetadata(transactional_id, self.producer_ids(), NO_PRODUCER_EPOCH,
                                       NO_PRODUCER_EPOCH, NO_PRODUCER_ID, timeout_ms, S.EMPTY,
                                       last_update_ms=now_ms)
        elif expected and not self._valid_expected(meta, expected_producer_id, expected_epoch):
            return _fail(E.producer_fenced,
                         f"Producer id {expected_producer_id} epoch {expected_epoch} is not the "
                         f"current producer of {transactional_id!r}.")
        if meta.state.preparing:
            return _fail(E.concurrent_transactions,
                         f"The transaction of {transactional_id!r} is completing.")
        if meta.state is S.ONGOING:
            fenced = self._fence_and_abort(meta, now_ms, result)
            result.markers.append(fenced)
            result.retry_after_markers = True
            return result
        if meta.epoch_exhausted and (not expected or expected_epoch == meta.producer_epoch):
            # Kafka's prepareProducerIdRotation: a new id at epoch 0.
            new = replace(meta, producer_id=self.producer_ids(), producer_epoch=0,
                          last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH,
                          previous_producer_id=meta.producer_id, timeout_ms=timeout_ms,
                          state=S.EMPTY, partitions=(), groups=(), start_ms=-1,
                          last_update_ms=now_ms)
        else:
            bumped = meta.producer_epoch + 1
            if not expected:
                epoch, last = bumped, NO_PRODUCER_EPOCH
            elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
                epoch, last = bumped, meta.producer_epoch
            elif expected_epoch == meta.last_producer_epoch:  # a retry, or recovery after a fence
                epoch, last = meta.producer_epoch, meta.last_producer_epoch
            else:
                return _fail(E.producer_fenced,
                             f"Producer epoch {expected_epoch} of {transactional_id!r} is fenced "
                             f"by epoch {meta.producer_epoch}.")
            new = replace(meta, producer_epoch=epoch, last_producer_epoch=last,
                          timeout_ms=timeout_ms, state=S.EMPTY, partitions=(), groups=(),
                          start_ms=-1, last_update_ms=now_ms)
        self._put(result, new)
        result.producer_id, result.producer_epoch = new.producer_id, new.producer_epoch
        return result

    @staticmethod
    def _valid_expected(meta: TransactionMetadata, pid: int, epoch: int) -> bool:
        """Kafka's ``isValidProducerId``: new metadata, the current producer id (its epoch is
        checked when bumped), or the id before a rotation at an exhausted epoch (a retry)."""
        return (meta.producer_epoch == NO_PRODUCER_EPOCH or pid == meta.producer_id
                or (pid == meta.previous_producer_id and epoch >= MAX_PRODUCER_EPOCH - 1))

    def _fence_and_abort(self, meta: TransactionMetadata, now_ms: int,
                         result: TxnResult) -> MarkerJob:
        """Kafka's prepareFenceProducerEpoch, then the abort: PrepareAbort at the bumped epoch
        (kept when exhausted), the old epoch remembered for a KIP-588 recovery."""
        epoch = meta.producer_epoch if meta.producer_epoch >= MAX_PRODUCER_EPOCH else (
            meta.producer_epoch + 1)
        prepared = replace(meta, producer_epoch=epoch, last_producer_epoch=meta.producer_epoch,
                           state=S.PREPARE_ABORT, last_update_ms=now_ms)
        self._put(result, prepared)
        return self._job(prepared)

    # ------------------------------------------------------------------ the transaction

    def _check_producer(self, transactional_id: str, producer_id: int,
                        producer_epoch: int) -> TransactionMetadata | TxnResult:
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return _fail(E.invalid_producer_id_mapping,
                         f"Producer id {producer_id} is not the producer of "
                         f"{transactional_id!r}.")
        if meta.producer_epoch != producer_epoch:
            return _fail(E.producer_fenced,
                         f"Producer epoch {producer_epoch} of {transactional_id!r} is fenced by "
                         f"epoch {meta.producer_epoch}.")
        if meta.state.preparing:
            return _fail(E.concurrent_transactions,
                         f"The previous transaction of {transactional_id!r} is completing.")
        return meta

    def _begin_or_extend(self, meta: TransactionMetadata, now_ms: int,
                         partitions: Iterable[tuple[str, int]] = (),
                         groups: Iterable[str] = ()) -> TxnResult:
        result = TxnResult(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
        new_parts = set(partitions)
        new_groups = set(groups)
        if meta.state is S.ONGOING:
            if new_parts <= set(meta.partitions) and new_groups <= set(meta.groups):
                return result  # already in the transaction: nothing to write
            start = meta.start_ms
            new_parts |= set(meta.partitions)
            new_groups |= set(meta.groups)
        else:  # Empty, CompleteCommit, CompleteAbort: a new transaction
            start = now_ms
        self._put(result, replace(meta, state=S.ONGOING, partitions=tuple(sorted(new_parts)),
                                  groups=tuple(sorted(new_groups)), start_ms=start,
                                  last_update_ms=now_ms))
        return result

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], now_ms: int) -> TxnResult:
        """AddPartitionsToTxn: the partitions join the transaction (which starts if none is open)."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, TxnResult):
            return meta
        return self._begin_or_extend(meta, now_ms, partitions=partitions)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn v4+ ``VerifyOnly`` (KIP-890 part 1): for each partition, 0 if it is
        in the producer's open transaction, else the error; changes nothing."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        parts = list(partitions)
        if isinstance(meta, TxnResult):
            return dict.fromkeys(parts, meta.error)
        inside = set(meta.partitions) if meta.state is S.ONGOING else set()
        return {tp: 0 if tp in inside else int(E.transaction_abortable) for tp in parts}

    def verify_group(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     group_id: str) -> TxnResult:
        """The KIP-890 part 1 check of a TxnOffsetCommit: the group was added to the producer's
        open transaction by AddOffsetsToTxn (else INVALID_TXN_STATE); changes nothing."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, TxnResult):
            return meta
        if meta.state is not S.ONGOING or group_id not in meta.groups:
            return _fail(E.invalid_txn_state,
                         f"Group {group_id!r} is not in the open transaction of "
                         f"{transactional_id!r} (AddOffsetsToTxn first).")
        return TxnResult(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                    group_id: str, now_ms: int) -> TxnResult:
        """AddOffsetsToTxn: the group's offsets are committed (or dropped) with the transaction.
        Kafka adds the group's ``__consumer_offsets`` partition; here the group itself, whose
        coordinator the marker job completes."""
        meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(meta, TxnResult):
            return meta
        return self._begin_or_extend(meta, now_ms, groups=(group_id,))

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                commit: bool, now_ms: int) -> TxnResult:
        """EndTxn: PrepareCommit / PrepareAbort and the marker job; a retry of an end already
        done answers success, the other end INVALID_TXN_STATE (Kafka's ``endTransaction``)."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return _fail(E.invalid_producer_id_mapping,
                         f"Producer id {producer_id} is not the producer of "
                         f"{transactional_id!r}.")
        if meta.producer_epoch != producer_epoch:
            return _fail(E.producer_fenced,
                         f"Producer epoch {producer_epoch} of {transactional_id!r} is fenced by "
                         f"epoch {meta.producer_epoch}.")
        ok = TxnResult(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
        word = "commit" if commit else "abort"
        state = meta.state
        if state is S.ONGOING:
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            prepared = replace(meta, state=target, last_update_ms=now_ms)
            self._put(ok, prepared)
            ok.markers.append(self._job(prepared))
            return ok
        if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            return ok  # a retry of an end that is done
        if state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return _fail(E.concurrent_transactions,
                         f"The {word} of {transactional_id!r} is being completed.")
        return _fail(E.invalid_txn_state,
                     f"Cannot {word} the transaction of {transactional_id!r}: it is "
                     f"{state.label}.")

    def markers_written(self, job: MarkerJob, now_ms: int) -> TxnResult:
        """Every marker of ``job`` is written: CompleteCommit / CompleteAbort. A job that no
        longer matches (written twice, or the id moved on) changes nothing."""
        result = TxnResult()
        meta = self.txns.get(job.transactional_id)
        target = S.PREPARE_COMMIT if job.commit else S.PREPARE_ABORT
        if (meta is None or meta.state is not target or meta.producer_id != job.producer_id
                or meta.producer_epoch != job.producer_epoch):
            return result
        done = S.COMPLETE_COMMIT if job.commit else S.COMPLETE_ABORT
        self._put(result, replace(meta, state=done, partitions=(), groups=(),
                                  last_update_ms=now_ms))
        return result

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def expire(self, now_ms: int) -> TxnResult:
        """Timed-out transactions fenced and aborted (their marker jobs in the result), expired
        transactional ids removed (tombstones)."""
        result = TxnResult()
        while (due := self.timers.pop_next_due(now_ms)) is not None:
            (kind, tid), _ = due
            meta = self.txns.get(tid)
            if meta is None:
                continue
            if kind == "timeout" and meta.state is S.ONGOING:
                result.markers.append(self._fence_and_abort(meta, now_ms, result))
            elif kind == "expire" and (meta.state is S.EMPTY or meta.state.completed):
                self._write(result, TransactionRecord(tid, None))
        return result

    def expire_now(self, transactional_id: str, now_ms: int) -> TxnResult:
        """A test's fault: the open transaction of the id times out now (as :meth:`expire`)."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state is not S.ONGOING:
            state = "unknown" if meta is None else meta.state.label
            return _fail(E.invalid_txn_state,
                         f"{transactional_id!r} has no open transaction ({state}).")
        result = TxnResult()
        result.markers.append(self._fence_and_abort(meta, now_ms, result))
        return result

    # ------------------------------------------------------------------ admin (KIP-664)

    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        return self.txns.get(transactional_id)

    def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
             min_duration_ms: int = -1, pattern: str | None = None,
             now_ms: int = 0) -> tuple[list[TransactionMetadata], list[str]]:
        """ListTransactions: the transactions matching every filter given (an empty filter
        matches all), sorted by id; and the state names of ``states`` that are not states.
        ``min_duration_ms`` >= 0 keeps open transactions running at least that long (KIP-994),
        ``pattern`` is a regular expression the whole id matches (ValueError if not one)."""
        states = list(states)
        wanted: set[TransactionState] = set()
        unknown: list[str] = []
        for name in states:
            s = TransactionState.of_label(name)
            if s is None:
                unknown.append(name)
            else:
                wanted.add(s)
        pids = set(producer_ids)
        regex = re.compile(pattern) if pattern else None
        out = []
        for tid, m in sorted(self.txns.items()):
            if (states and m.state not in wanted) or (pids and m.producer_id not in pids):
                continue
            if min_duration_ms >= 0 and (m.state is not S.ONGOING
                                         or now_ms - m.start_ms < min_duration_ms):
                continue
            if regex is not None and regex.fullmatch(tid) is None:
                continue
            out.append(m)
        return out, unknown
