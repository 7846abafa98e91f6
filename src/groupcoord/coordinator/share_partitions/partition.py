"""One share partition's in-flight records (KIP-932 "In-flight records", "Delivery count and
acquisition locks"; Kafka's ``SharePartition`` in ``core`` is the upstream counterpart).

The rule, in a few lines:

- The **share-partition start offset** (SPSO) is the first offset not yet done with; the
  **end offset** (:attr:`SharePartition.next_offset`, exclusive here; Kafka's SPEO is inclusive)
  is the first offset never fetched. Every offset of the in-flight window ``[SPSO, end)`` has a
  state: AVAILABLE, ACQUIRED (by one member, until its lock's deadline), ACKNOWLEDGED or
  ARCHIVED, and a delivery count. Offsets below the SPSO are done; offsets from the end on
  have never been delivered.
- **Acquire** (a ShareFetch): the records given by the log read (whole batches, as Kafka
  acquires batch-aligned) that are AVAILABLE, or new beyond the end, become ACQUIRED by the
  member with their delivery count + 1 and a lock until ``now + share.record.lock.duration.ms``.
  A batch is taken whole once started; acquisition stops after the batch that reaches
  MaxRecords (the limit "can be exceeded for alignment of batch boundaries") and never widens
  the window beyond ``group.share.partition.max.record.locks`` offsets from the SPSO. An
  AVAILABLE record already at the delivery limit (the limit was lowered) is archived instead.
- **Acknowledge** (ShareAcknowledge or acknowledgements in a ShareFetch): each offset must be
  ACQUIRED by the acknowledging member, else the partition's acknowledgement fails with
  INVALID_RECORD_STATE and nothing of it is applied (a partition's acknowledgements are atomic,
  as Kafka's). ACCEPT -> ACKNOWLEDGED; REJECT and GAP -> ARCHIVED; RELEASE -> AVAILABLE, or
  ARCHIVED at the delivery limit; RENEW keeps the record ACQUIRED with a fresh lock (KIP-1222;
  the clients here do not send it). Offsets below the SPSO are accepted silently (already done).
- **Lock expiry** (:meth:`SharePartition.expire`, driven by the driver's timers with the time
  passed in) and a **member leaving** or closing its share session
  (:meth:`SharePartition.release_member`) release its ACQUIRED records as RELEASE does.
- The SPSO then moves past the prefix of ACKNOWLEDGED / ARCHIVED records.
- Records no client may see are archived when the log read reaches them, never acquired: the
  control batches (transaction markers), and with ``share.isolation.level=read_committed`` the
  batches of aborted transactions (as Kafka's share partition filters aborted transactional
  records out of what it acquires).

The durable part (states, delivery counts, SPSO, state epoch) is :meth:`SharePartition.value`,
a ``records.ShareStateValue``; :meth:`SharePartition.from_value` rebuilds a partition from it,
every ACQUIRED record then AVAILABLE with its delivery count kept (Kafka does the same on
recovery), so no record is held by two members across a restart. Kafka persists on
acknowledgement and release but not on acquisition, so a crash may lose a delivery count
increment; the driver here also writes after an acquisition, so a poison record cannot escape
the delivery limit by crashing the broker.

Time is an argument; nothing reads a clock. Per-offset state is kept in a dict over the window,
which the max-record-locks bound keeps small.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from groupcoord.coordinator.share_partitions.config import ShareConfig
from groupcoord.coordinator.share_partitions.records import ShareStateValue, StateBatch
from groupcoord.protocol.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's ``RecordState`` codes, which are also the persisted ones."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    """AcknowledgeTypes of ShareFetch / ShareAcknowledge."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member: str | None = None
    deadline_ms: int = 0


@dataclass(slots=True, frozen=True)
class AcquiredRange:
    """Offsets ``first_offset..last_offset`` acquired with ``delivery_count`` (ShareFetch's
    AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True, frozen=True)
class Acknowledgement:
    """One AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class ShareCounters:
    """What share partitions did to records since the counters were made (KIP-932 "Metrics":
    records acquired, acknowledged by type, archived, acquisition locks expired). One object is
    shared by every partition of a broker (``server.share_partitions``), so the counts survive
    a partition replaced by a reset or a replay; counters, not state: nothing durable reads
    them.

    ``acquired``: record deliveries (one per acquisition; ``redelivered`` those with a delivery
    count above 1). ``accepted`` / ``released`` / ``rejected`` / ``renewed``: records
    acknowledged with that type (a gap is none of them). ``archived``: records archived
    because they were rejected or reached ``share.delivery.count.limit`` (at a release, a lock
    expiry or the next acquisition), not the offsets the log does not hold or the control and
    aborted batches that are never delivered. ``lock_expired``: acquisition locks that
    expired (the record released, or archived at the limit). ``member_released``: records
    released because the member holding them left or closed its share session. Every
    acquisition ends in one of ``accepted``, ``released``, ``rejected``, ``lock_expired``,
    ``member_released``, or is still ACQUIRED (a RENEW keeps it acquired; an acknowledgement
    below a moved start offset ends it uncounted)."""

    __slots__ = ("accepted", "acquired", "archived", "lock_expired", "member_released",
                 "redelivered", "rejected", "released", "renewed")

    def __init__(self) -> None:
        self.acquired = 0
        self.redelivered = 0
        self.accepted = 0
        self.released = 0
        self.rejected = 0
        self.renewed = 0
        self.archived = 0
        self.lock_expired = 0
        self.member_released = 0


class SharePartition:
    """The in-flight state of one (share group, topic partition)."""

    __slots__ = ("config", "counters", "next_offset", "records", "start_offset", "state_epoch")

    def __init__(self, config: ShareConfig, start_offset: int, state_epoch: int = 0,
                 counters: ShareCounters | None = None) -> None:
        self.config = config
        self.counters = ShareCounters() if counters is None else counters
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.state_epoch = state_epoch
        #: offset -> its state, for every offset of ``[start_offset, next_offset)``.
        self.records: dict[int, InFlight] = {}

    # ------------------------------------------------------------------ durable state

    def value(self) -> ShareStateValue:
        """The durable state: ACQUIRED written as AVAILABLE with its delivery count."""
        batches: list[StateBatch] = []
        first = -1
        key: tuple[int, int] | None = None
        for offset in range(self.start_offset, self.next_offset):
            rec = self.records[offset]
            state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
            k = (int(state), rec.delivery_count)
            if k != key:
                if key is not None:
                    batches.append(StateBatch(first, offset - 1, key[0], key[1]))
                first, key = offset, k
        if key is not None:
            batches.append(StateBatch(first, self.next_offset - 1, key[0], key[1]))
        return ShareStateValue(self.state_epoch, self.start_offset, tuple(batches))

    @classmethod
    def from_value(cls, config: ShareConfig, value: ShareStateValue,
                   counters: ShareCounters | None = None) -> SharePartition:
        """Replay: the partition a :meth:`value` describes (offsets of the window the value
        does not cover, which only an older writer could leave, become AVAILABLE, never
        delivered)."""
        sp = cls(config, value.start_offset, value.state_epoch, counters)
        for b in value.batches:
            lo = max(b.first_offset, sp.start_offset)
            for offset in range(sp.next_offset, lo):
                sp.records[offset] = InFlight(RecordState.AVAILABLE, 0)
            for offset in range(lo, b.last_offset + 1):
                sp.records[offset] = InFlight(RecordState(b.state), b.delivery_count)
            sp.next_offset = max(sp.next_offset, b.last_offset + 1)
        sp._advance()
        return sp

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: start again at ``start_offset`` with an empty window and a
        new state epoch (the caller checks that the group has no members)."""
        self.start_offset = self.next_offset = start_offset
        self.records.clear()
        self.state_epoch += 1

    def move_start(self, log_start_offset: int) -> bool:
        """The log's start moved past the SPSO (DeleteRecords): the SPSO moves to it and every
        in-flight record below it is done (archived: gone from the window, an acquired one
        with its lock; its member's later acknowledgement is accepted silently), as Kafka's
        ``SharePartition`` moves its start offset to a new log start offset. Whether the
        partition changed."""
        if log_start_offset <= self.start_offset:
            return False
        for offset in range(self.start_offset, min(self.next_offset, log_start_offset)):
            del self.records[offset]
        self.start_offset = log_start_offset
        self.next_offset = max(self.next_offset, log_start_offset)
        self._advance()
        return True

    # ------------------------------------------------------------------ acquisition

    def fetch_offset(self) -> int | None:
        """Where the next log read should start: the first AVAILABLE offset of the window, else
        the end if the window may still grow; None when there is nothing to acquire."""
        for offset in range(self.start_offset, self.next_offset):
            if self.records[offset].state is RecordState.AVAILABLE:
                return offset
        if self.next_offset - self.start_offset < self.config.max_record_locks:
            return self.next_offset
        return None

    def acquire(self, member: str, batches: Iterable[tuple[int, int]], max_records: int,
                now_ms: int, record_limit: bool = False,
                undeliverable: Container[int] = ()) -> list[AcquiredRange]:
        """Acquire for ``member`` from the log's batches ``(base offset, last offset)`` in
        offset order; returns the acquired ranges (contiguous, same delivery count).
        ``record_limit`` (ShareFetch v2's ShareAcquireMode 1, KIP-1206): never more than
        ``max_records``, even inside a batch. The batches whose base offset is in
        ``undeliverable`` (control batches, aborted transactions under read_committed) are
        archived instead: never delivered, they count for nothing."""
        deadline = now_ms + self.config.lock_duration_ms
        limit = self.config.delivery_count_limit
        window = self.config.max_record_locks
        acquired: list[AcquiredRange] = []
        count = 0
        run_first = run_last = run_count = -1

        counters = self.counters

        def take(offset: int, dc: int) -> None:
            nonlocal run_first, run_last, run_count, count
            count += 1
            counters.acquired += 1
            if dc > 1:
                counters.redelivered += 1
            if run_last == offset - 1 and run_count == dc:
                run_last = offset
                return
            if run_first >= 0:
                acquired.append(AcquiredRange(run_first, run_last, run_count))
            run_first = run_last = offset
            run_count = dc

        full = False
        for base, last in batches:
            if max_records > 0 and count >= max_records:
                break
            if base in undeliverable:
                if not self._archive(base, last, window):
                    break
                continue
            for offset in range(max(base, self.start_offset), last + 1):
                if record_limit and count >= max_records:
                    full = True
                    break
                if offset < self.next_offset:
                    rec = self.records[offset]
                    if rec.state is not RecordState.AVAILABLE:
                        continue
                    if rec.delivery_count >= limit:
                        rec.state = RecordState.ARCHIVED
                        counters.archived += 1
                        continue
                    rec.state = RecordState.ACQUIRED
                    rec.delivery_count += 1
                    rec.member = member
                    rec.deadline_ms = deadline
                    take(offset, rec.delivery_count)
                    continue
                if offset - self.start_offset >= window:
                    full = True
                    break
                for hole in range(self.next_offset, offset):  # offsets the log does not hold
                    self.records[hole] = InFlight(RecordState.ARCHIVED, 0)
                self.records[offset] = InFlight(RecordState.ACQUIRED, 1, member, deadline)
                self.next_offset = offset + 1
                take(offset, 1)
            if full:
                break
        if run_first >= 0:
            acquired.append(AcquiredRange(run_first, run_last, run_count))
        self._advance()
        return acquired

    def _archive(self, first: int, last: int, window: int) -> bool:
        """Archive the AVAILABLE or new offsets ``first..last``; False if the window is full."""
        for offset in range(max(first, self.start_offset), last + 1):
            if offset < self.next_offset:
                rec = self.records[offset]
                if rec.state is RecordState.AVAILABLE:
                    rec.state = RecordState.ARCHIVED
                continue
            if offset - self.start_offset >= window:
                return False
            for hole in range(self.next_offset, offset + 1):
                self.records[hole] = InFlight(RecordState.ARCHIVED, 0)
            self.next_offset = offset + 1
        return True

    # ------------------------------------------------------------------ acknowledgement

    def acknowledge(self, member: str, acks: Sequence[Acknowledgement], now_ms: int) -> int:
        """Apply ``member``'s acknowledgements for this partition, all or none; the error code
        (0: applied). The batches are in ascending order and do not overlap, else
        INVALID_REQUEST (Kafka 4.x's ``KafkaApis.validateAcknowledgementBatches``: a batch whose
        first offset is not above the previous batch's last offset is refused)."""
        previous_last = -1
        for ack in acks:
            if ack.first_offset <= previous_last:
                return ErrorCode.invalid_request
            previous_last = ack.last_offset
        for ack in acks:
            code = self._check(member, ack)
            if code:
                return code
        limit = self.config.delivery_count_limit
        counters = self.counters
        for ack in acks:
            one = ack.types[0] if len(ack.types) == 1 else None
            for offset in range(max(ack.first_offset, self.start_offset), ack.last_offset + 1):
                kind = one if one is not None else ack.types[offset - ack.first_offset]
                rec = self.records.get(offset)
                if rec is None:  # below the start offset
                    continue
                if kind == AckType.RENEW:
                    rec.deadline_ms = now_ms + self.config.lock_duration_ms
                    counters.renewed += 1
                    continue
                if kind == AckType.ACCEPT:
                    rec.state = RecordState.ACKNOWLEDGED
                    counters.accepted += 1
                elif kind == AckType.RELEASE and rec.delivery_count < limit:
                    rec.state = RecordState.AVAILABLE
                    counters.released += 1
                else:  # GAP, REJECT, RELEASE at the limit
                    rec.state = RecordState.ARCHIVED
                    if kind == AckType.REJECT:
                        counters.rejected += 1
                        counters.archived += 1
                    elif kind == AckType.RELEASE:
                        counters.released += 1
                        counters.archived += 1
                rec.member = None
                rec.deadline_ms = 0
        self._advance()
        return 0

    def _check(self, member: str, ack: Acknowledgement) -> int:
        n = ack.last_offset - ack.first_offset + 1
        if n <= 0 or ack.first_offset < 0 or len(ack.types) not in (1, n) or any(
                t not in AckType._value2member_map_ for t in ack.types):
            return ErrorCode.invalid_request
        if ack.last_offset >= self.next_offset:
            return ErrorCode.invalid_record_state
        for offset in range(max(ack.first_offset, self.start_offset), ack.last_offset + 1):
            rec = self.records[offset]
            if rec.state is not RecordState.ACQUIRED or rec.member != member:
                return ErrorCode.invalid_record_state
        return 0

    # ------------------------------------------------------------------ locks

    def _release(self, rec: InFlight) -> None:
        rec.state = (RecordState.ARCHIVED if rec.delivery_count >= self.config.delivery_count_limit
                     else RecordState.AVAILABLE)
        if rec.state is RecordState.ARCHIVED:
            self.counters.archived += 1
        rec.member = None
        rec.deadline_ms = 0

    def expire(self, now_ms: int) -> bool:
        """Release every record whose acquisition lock has expired; whether any was."""
        changed = False
        for rec in self.records.values():
            if rec.state is RecordState.ACQUIRED and rec.deadline_ms <= now_ms:
                self._release(rec)
                self.counters.lock_expired += 1
                changed = True
        if changed:
            self._advance()
        return changed

    def release_member(self, member: str) -> bool:
        """Release every record ``member`` holds (it left the group or closed its share
        session); whether it held any."""
        changed = False
        for rec in self.records.values():
            if rec.state is RecordState.ACQUIRED and rec.member == member:
                self._release(rec)
                self.counters.member_released += 1
                changed = True
        if changed:
            self._advance()
        return changed

    def next_deadline(self) -> int | None:
        """The earliest lock deadline, None when nothing is acquired."""
        deadlines = [r.deadline_ms for r in self.records.values()
                     if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def acquired(self, member: str | None = None) -> int:
        """How many records are ACQUIRED (by ``member``, or by anyone)."""
        return sum(1 for r in self.records.values() if r.state is RecordState.ACQUIRED
                   and (member is None or r.member == member))

    def _advance(self) -> None:
        records = self.records
        start = self.start_offset
        while start < self.next_offset and records[start].state in DONE:
            del records[start]
            start += 1
        self.start_offset = start
