"""The share partitions of the simulated share group (KIP-932), and their invariants.

The broker side of ``sim.share``: every partition of the group's topics is a real
:class:`groupcoord.coordinator.share_partitions.partition.SharePartition` (the pure state machine
the server's ShareFetch and ShareAcknowledge drive: acquisition, acknowledgement, lock expiry,
delivery counts, the start offset), driven here with the simulated clock. Nothing of the rules
is re-implemented: :class:`SimSharePartitions` reads the log, hands the core its batches and
acknowledgements, and fires its lock timers.

**The log.** Records arrive at the workload's rate per partition from the moment a partition
exists (a fluid production, no event per record: the log end at time ``t`` is
``rate x (t - created)``). A share partition starts at offset 0 when first fetched (as
``share.auto.offset.reset=earliest``), so every record produced counts. A record is *poison*
(its processing always fails; the member RELEASEs it) with the probability the settings give,
decided per (partition, offset) from the run's seed.

**Invariants** (docs/design.md "Invariants": share groups move I1's exclusivity down to records),
checked on every acquisition and acknowledgement against a *shadow* kept here from what the
core answered, independent of its internal state, so that a wrong answer of the core shows:

- **S1 exclusivity**: a record is acquired by at most one member at a time: an acquisition
  of a record whose last lock (another member's, or the same member's) has neither expired nor
  ended by an acknowledgement or a release is a violation; an acknowledgement by the member that
  holds a live lock must be applied, any other refused (INVALID_RECORD_STATE).
- **S2 delivery count**: a record's delivery count is the number of times it was acquired, and
  never above ``share.delivery.count.limit``: a record released or expired at the limit is
  archived and never acquired again.
- **S3 done is final**: a record acknowledged (ACCEPT), rejected or archived is never acquired
  again; the share-partition start offset is the end of the shadow's done prefix.
- **S4 liveness** (at the end of a run, ``sim.share``): once the faults stop and the locks
  expire, every record produced before the faults stopped is acknowledged or archived (or still
  available with no consumer left).

Time is the simulation's; nothing here draws from the simulation's random streams (poison is a
hash of the seed and the record), so adding share partitions shifts no other draw.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from groupcoord.coordinator.share_partitions.config import ShareConfig
from groupcoord.coordinator.share_partitions.partition import (
    DONE,
    Acknowledgement,
    AckType,
    RecordState,
    SharePartition,
)
from groupcoord.protocol.errors import ErrorCode
from groupcoord.sim.workload import is_poison

TopicIdPartition = tuple[UUID, int]


class ShareInvariantError(Exception):
    """A share-partition invariant broken: ``invariant`` (S1-S4) and what happened."""

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(message)
        self.invariant = invariant
        self.message = message


@dataclass(slots=True)
class _Shadow:
    """What the simulation knows of one partition from the core's answers."""

    #: Every offset below this is done (acknowledged, rejected or archived).
    done_below: int = 0
    #: Done offsets at or above ``done_below``.
    done: set[int] = field(default_factory=set)
    #: offset -> (member id, lock deadline) of its last acquisition still held.
    locks: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: offset -> how many times it was acquired (offsets not yet done).
    deliveries: dict[int, int] = field(default_factory=dict)
    #: (deadline, offset) of every lock in acquisition order: deadlines never decrease (each
    #: is the acquisition's time plus the one lock duration), so the front is the next due.
    queue: deque[tuple[int, int]] = field(default_factory=deque)
    #: One past the highest offset ever acquired (every done or locked offset is below it).
    high: int = 0
    #: How many offsets are done (``done_below + len(done)``).
    count: int = 0

    def next_deadline(self) -> int | None:
        q = self.queue
        locks = self.locks
        while q and locks.get(q[0][1], ("", -1))[1] != q[0][0]:
            q.popleft()  # acknowledged, released or re-acquired since
        return q[0][0] if q else None

    def finish(self, offset: int) -> None:
        self.locks.pop(offset, None)
        self.deliveries.pop(offset, None)
        self.done.add(offset)
        self.count += 1
        while self.done_below in self.done:
            self.done.discard(self.done_below)
            self.done_below += 1


@dataclass(slots=True, frozen=True)
class Acquired:
    """One record a member acquired: its delivery count, the lock's deadline (which the
    simulation uses only to check S1 on the member side), and whether it is poison."""

    tp: TopicIdPartition
    offset: int
    delivery_count: int
    deadline_ms: int
    poison: bool


class SimSharePartitions:
    """The simulated broker's share partitions of one share group."""

    def __init__(self, config: ShareConfig, seed: int, poison_rate: float = 0.0) -> None:
        self.config = config
        self.seed = seed
        self.poison_rate = poison_rate
        self.parts: dict[TopicIdPartition, SharePartition] = {}
        self.shadow: dict[TopicIdPartition, _Shadow] = {}
        #: topic partition -> (creation time, records per second).
        self.producing: dict[TopicIdPartition, tuple[int, float]] = {}
        #: Every record archived (rejected, or released or expired at the delivery limit).
        self.archived: set[tuple[TopicIdPartition, int]] = set()
        #: Partitions whose topic was deleted: no longer produced, fetched or checked.
        self.gone: set[TopicIdPartition] = set()
        self._measure: list[tuple[int, float, _Shadow | None]] | None = None
        self.stats: dict[str, int] = {"acquired": 0, "redelivered": 0, "archived": 0,
                                      "accepted": 0, "released": 0, "acks_refused": 0, "acks_done": 0,
                                      "locks_expired": 0}

    # ------------------------------------------------------------------ the log

    def set_topics(self, partitions: Mapping[TopicIdPartition, float], now: int) -> None:
        """The partitions consumed now with their production rates (a new one starts producing
        now; one no longer there, its topic deleted or no longer subscribed, is *gone*: not
        fetched, measured or checked for S4 until it is consumed again)."""
        self._measure = None
        for tp, rate in partitions.items():
            if tp not in self.producing:
                self.producing[tp] = (now, rate)
            self.gone.discard(tp)
        for tp in self.producing:
            if tp not in partitions:
                self.gone.add(tp)

    def log_end(self, tp: TopicIdPartition, now: int) -> int:
        start, rate = self.producing[tp]
        return int(rate * max(0, now - start) / 1000.0)

    def produced_time(self, tp: TopicIdPartition, offset: int) -> int:
        """When record ``offset`` of ``tp`` is produced (the first ms the log holds it)."""
        start, rate = self.producing[tp]
        if rate <= 0:
            return 1 << 62
        t = start + int((offset + 1) * 1000.0 / rate)
        while self.log_end(tp, t) <= offset:
            t += 1
        return t

    def is_poison(self, tp: TopicIdPartition, offset: int) -> bool:
        """The run's poison records: the same as a consumer group's (``sim.workload``)."""
        return is_poison(self.seed, tp, offset, self.poison_rate)

    def live_partitions(self) -> list[TopicIdPartition]:
        return [tp for tp in self.producing if tp not in self.gone]

    def live_count(self) -> int:
        return len(self._measured())

    def _measured(self) -> list[tuple[int, float, _Shadow | None]]:
        """(creation time, rate, shadow) of every live partition, cached between changes
        (the lag is sampled after every fetch: no hashing of topic ids there)."""
        m = self._measure
        if m is None:
            m = self._measure = [(start, rate, self.shadow.get(tp)) for tp, (start, rate)
                                 in self.producing.items() if tp not in self.gone]
        return m

    # ------------------------------------------------------------------ driving the core

    def _part(self, tp: TopicIdPartition) -> SharePartition:
        sp = self.parts.get(tp)
        if sp is None:
            sp = self.parts[tp] = SharePartition(self.config, 0)
            self.shadow[tp] = _Shadow()
            self._measure = None
        return sp

    def _archive(self, tp: TopicIdPartition, sh: _Shadow, offset: int) -> None:
        self.stats["archived"] += 1
        self.archived.add((tp, offset))
        sh.finish(offset)

    def expire(self, now: int) -> None:
        """Fire every acquisition lock due (the core releases, or archives at the limit)."""
        limit = self.config.delivery_count_limit
        for tp, sp in self.parts.items():
            sh = self.shadow[tp]
            d = sh.next_deadline()
            if d is None or d > now:
                continue
            if not sp.expire(now):
                raise ShareInvariantError("S1", f"{_tp(tp)}: a lock due at {d} ms not released "
                                          f"at {now} ms")
            q = sh.queue
            while q and q[0][0] <= now:
                deadline, offset = q.popleft()
                if sh.locks.get(offset, ("", -1))[1] != deadline:
                    continue
                self.stats["locks_expired"] += 1
                del sh.locks[offset]
                if sh.deliveries.get(offset, 0) >= limit:
                    self._archive(tp, sh, offset)
            self._check_start(tp, sp, sh)

    def next_deadline(self) -> int | None:
        ds = [d for sh in self.shadow.values() if (d := sh.next_deadline()) is not None]
        return min(ds) if ds else None

    def acknowledge(self, member: str, tp: TopicIdPartition,
                    acks: Sequence[tuple[int, int]], now: int) -> int:
        """Apply ``member``'s acknowledgements ``(offset, AckType)`` of ``tp``; the core's
        error code. S1: applied exactly when the member holds a live lock on every offset."""
        if tp in self.gone or tp not in self.parts:
            return ErrorCode.unknown_topic_or_partition
        self.expire(now)
        sp = self.parts[tp]
        sh = self.shadow[tp]
        batches = [Acknowledgement(o, o, (t,)) for o, t in sorted(acks)]
        start = sp.start_offset  # offsets below it are done: the core accepts them silently
        held = all(o < start or (sh.locks.get(o, ("", 0))[0] == member and sh.locks[o][1] > now)
                   for o, _ in acks)
        code = sp.acknowledge(member, batches, now)
        if (code == 0) != held:
            raise ShareInvariantError("S1", f"{_tp(tp)}: acknowledgement of offsets "
                                      f"{sorted(o for o, _ in acks)} by {member} "
                                      f"{'applied' if code == 0 else 'refused'} while the member "
                                      f"{'holds no live lock on all' if not held else 'holds them'}")
        if code:
            self.stats["acks_refused"] += 1
            return code
        limit = self.config.delivery_count_limit
        for o, t in acks:
            if o < start:
                self.stats["acks_done"] += 1
                continue
            del sh.locks[o]
            if t == AckType.ACCEPT:
                self.stats["accepted"] += 1
                sh.finish(o)
            elif t == AckType.RELEASE and sh.deliveries[o] < limit:
                self.stats["released"] += 1
            else:
                self._archive(tp, sh, o)
        self._check_start(tp, sp, sh)
        return 0

    def acquire(self, member: str, tps: Iterable[TopicIdPartition], max_records: int,
                now: int) -> list[Acquired]:
        """A ShareFetch's acquisition for ``member`` over ``tps`` in order, at most
        ``max_records`` in all (each partition's log read in one-record batches)."""
        self.expire(now)
        out: list[Acquired] = []
        limit = self.config.delivery_count_limit
        window = self.config.max_record_locks
        for tp in tps:
            left = max_records - len(out)
            if left <= 0:
                break
            if tp in self.gone or tp not in self.producing:
                continue
            sp = self._part(tp)
            first = sp.fetch_offset()
            if first is None:
                continue
            end = min(self.log_end(tp, now), sp.start_offset + window)
            if first >= end:
                continue
            ranges = sp.acquire(member, ((o, o) for o in range(first, end)), left, now,
                                record_limit=True)
            sh = self.shadow[tp]
            deadline = now + self.config.lock_duration_ms
            for r in ranges:
                for o in range(r.first_offset, r.last_offset + 1):
                    self._check_acquired(tp, sh, member, o, r.delivery_count, now, limit)
                    sh.locks[o] = (member, deadline)
                    sh.queue.append((deadline, o))
                    sh.high = max(sh.high, o + 1)
                    sh.deliveries[o] = r.delivery_count
                    self.stats["acquired"] += 1
                    if r.delivery_count > 1:
                        self.stats["redelivered"] += 1
                    out.append(Acquired(tp, o, r.delivery_count, deadline, self.is_poison(tp, o)))
            self._check_start(tp, sp, sh)
        return out

    def release_member(self, member: str, now: int) -> None:
        """``member`` closed its share session (it left): the core releases what it holds."""
        self.expire(now)
        limit = self.config.delivery_count_limit
        for tp, sp in self.parts.items():
            if not sp.release_member(member):
                continue
            sh = self.shadow[tp]
            for o, (m, _) in sorted(sh.locks.items()):
                if m == member:
                    del sh.locks[o]
                    if sh.deliveries.get(o, 0) >= limit:
                        self._archive(tp, sh, o)
            self._check_start(tp, sp, sh)

    # ------------------------------------------------------------------ checks

    def _check_acquired(self, tp: TopicIdPartition, sh: _Shadow, member: str, o: int, dc: int,
                        now: int, limit: int) -> None:
        if o < sh.done_below or o in sh.done:
            raise ShareInvariantError("S3", f"{_tp(tp)}: offset {o}, already acknowledged or "
                                      f"archived, acquired again by {member}")
        held = sh.locks.get(o)
        if held is not None and held[1] > now:
            raise ShareInvariantError("S1", f"{_tp(tp)}: offset {o} acquired by {member} while "
                                      f"{held[0]} holds its lock until {held[1]} ms")
        expected = sh.deliveries.get(o, 0) + 1
        if dc != expected or dc > limit:
            raise ShareInvariantError("S2", f"{_tp(tp)}: offset {o} acquired with delivery count "
                                      f"{dc}; acquired {expected - 1} times before, limit {limit}")

    def _check_start(self, tp: TopicIdPartition, sp: SharePartition, sh: _Shadow) -> None:
        if sp.start_offset != sh.done_below:
            raise ShareInvariantError("S3", f"{_tp(tp)}: share-partition start offset "
                                      f"{sp.start_offset}, but every offset below "
                                      f"{sh.done_below} is done")

    def full_check(self, now: int) -> None:
        """Every partition's whole state against the shadow (a checkpoint, the end of a run):
        delivery counts within the limit (S2), ACQUIRED exactly where a live lock is (S1), DONE
        exactly where the shadow has it (S3), and the durable value round-trips (what a
        broker's restart would rebuild: every ACQUIRED record AVAILABLE, counts kept)."""
        limit = self.config.delivery_count_limit
        for tp, sp in sorted(self.parts.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            sh = self.shadow[tp]
            self._check_start(tp, sp, sh)
            for o, rec in sp.records.items():
                if rec.delivery_count > limit:
                    raise ShareInvariantError("S2", f"{_tp(tp)}: offset {o} has delivery count "
                                              f"{rec.delivery_count} above the limit {limit}")
                lock = sh.locks.get(o)
                if (rec.state is RecordState.ACQUIRED) != (lock is not None):
                    raise ShareInvariantError("S1", f"{_tp(tp)}: offset {o} is {rec.state.name} "
                                              f"(member {rec.member}), the simulation's lock "
                                              f"{lock}")
                if lock is not None and (rec.member != lock[0] or rec.deadline_ms != lock[1]):
                    raise ShareInvariantError("S1", f"{_tp(tp)}: offset {o} acquired by "
                                              f"{rec.member} until {rec.deadline_ms}, the "
                                              f"simulation's lock {lock}")
                if (rec.state in DONE) != (o in sh.done):
                    raise ShareInvariantError("S3", f"{_tp(tp)}: offset {o} is {rec.state.name}, "
                                              f"done in the simulation: {o in sh.done}")
            value = sp.value()
            if SharePartition.from_value(self.config, value).value() != value:
                raise ShareInvariantError("S3", f"{_tp(tp)}: the durable share state does not "
                                          f"rebuild to itself")

    def share_lag(self, now: int) -> int:
        """The broker's share lag, summed over the live partitions: the log end offset minus
        the share-partition start offset (KIP-932's lag of a share group; the records in flight
        and those acknowledged above the start offset count in it, unlike :meth:`lag`)."""
        total = 0
        for tp in self.producing:
            if tp not in self.gone:
                sp = self.parts.get(tp)
                total += self.log_end(tp, now) - (0 if sp is None else sp.start_offset)
        return total

    def at_limit(self, now: int) -> frozenset[TopicIdPartition]:
        """The partitions held at the record-lock limit: records produced beyond the in-flight
        window, the window as wide as ``group.share.partition.max.record.locks`` and nothing in
        it available, so no member can acquire a record (stopped until the start offset moves:
        an acknowledgement, or a dead member's locks expiring)."""
        limit = self.config.max_record_locks
        return frozenset(tp for tp, sp in self.parts.items() if tp not in self.gone
                         and sp.next_offset - sp.start_offset >= limit
                         and self.log_end(tp, now) > sp.next_offset and sp.fetch_offset() is None)

    def undone_before(self, tp: TopicIdPartition, end: int) -> int:
        """How many offsets below ``end`` are not done yet (S4)."""
        sh = self.shadow.get(tp)
        if sh is None:
            return end
        done = len(sh.done) if end >= sh.high else sum(1 for o in sh.done if o < end)
        return max(0, end - sh.done_below) - done

    def lag(self, now: int) -> int:
        """Records produced and not yet acknowledged or archived, over every live partition
        (every done offset was produced: it counts whole)."""
        total = 0
        for start, rate, sh in self._measured():
            total += int(rate * max(0, now - start) / 1000.0) - (0 if sh is None else sh.count)
        return total

    def backlog(self, now: int) -> tuple[int, int]:
        """(lag, available): the lag, and what of it is neither done nor acquired."""
        lag = locked = 0
        for start, rate, sh in self._measured():
            lag += int(rate * max(0, now - start) / 1000.0)
            if sh is not None:
                lag -= sh.count
                locked += len(sh.locks)
        return lag, lag - locked


def _tp(tp: TopicIdPartition) -> str:
    return f"{str(tp[0])[:8]}-{tp[1]}"
