"""Share groups (KIP-932) in the simulator: the share consumer processes, the group's settings,
and what ``sim.share``'s :class:`~groupcoord.sim.share.ShareSimulation` checks of its group: I3 on
the epochs, I2 as share groups relax it, the partitions stopped (downtime), convergence (I5) and
its bound, S1-S4 in full at checkpoints and at the end (``sim.share``'s module docstring states
them), as ``sim.consumer_convergence`` does for consumer groups.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from groupcoord.coordinator.modern.share.model import ShareGroup
from groupcoord.coordinator.records import Assignment
from groupcoord.sim.engine import Simulation, Violation
from groupcoord.sim.share_partitions import (
    Acquired,
    ShareInvariantError,
    SimSharePartitions,
    TopicIdPartition,
)

#: Kafka's ``fetch.max.wait.ms`` default: how long a fetch that finds nothing waits at the broker.
FETCH_MAX_WAIT_MS = 500


@dataclass(slots=True, frozen=True)
class ShareSettings:
    """The share group's settings in a simulation: the lock duration and delivery count limit
    (KIP-932's ``share.record.lock.duration.ms`` and ``share.delivery.count.limit``, Kafka's
    defaults) and the fraction of records that are poison (their processing always fails)."""

    lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    poison_rate: float = 0.0


@dataclass(slots=True)
class _ShareProc:
    """A share consumer process; ``gen`` counts its incarnations."""

    name: str
    index: int
    gen: int = 0
    alive: bool = False
    member_id: str = ""
    epoch: int = 0
    assigned: frozenset[TopicIdPartition] = frozenset()
    hb_interval: int = 0
    hb_cid: int = 0  # correlation id of the heartbeat in flight (0: none)
    hb_sent: int = 0
    next_hb: int = 0
    fetching: bool = False
    fetch_cid: int = 0
    rotate: int = 0
    batch: list[Acquired] = field(default_factory=list)
    #: When each record of ``batch`` is done, in ms after ``busy_since`` (a graceful leave
    #: acknowledges those done before it: ``ShareSimulation.leave``).
    batch_ends: list[float] = field(default_factory=list)
    acks: dict[TopicIdPartition, list[tuple[int, int]]] = field(default_factory=dict)
    #: The subscription: topic names, or a regex the consumer resolves against the topics
    #: that exist (share groups subscribe by names: KIP-932 has no regex subscription).
    topics: tuple[str, ...] | None = None
    regex: str | None = None
    sent_topics: tuple[str, ...] | None = None
    slow_until: int = 0
    slow_delay: int = 0
    busy_since: int | None = None
    #: Records this process processed successfully (every incarnation).
    processed: int = 0
    #: The incarnation lost as a host (a crash: its connections stay open, so a ShareFetch it
    #: sent is still answered by the broker, acquiring records for it); None if none is.
    lost_gen: int | None = None

class ShareConvergence(Simulation):
    """The share group's checks and convergence (:class:`~groupcoord.sim.share.ShareSimulation`
    runs the members)."""

    settings: ShareSettings
    procs: dict[str, _ShareProc]
    partitions: SimSharePartitions
    pending_restarts: set[str]
    gid: str
    _epochs: tuple[int, int]
    _member_epochs: dict[str, int]
    stats: dict[str, int]
    #: The backlog at the quiet time (:meth:`i5_bound`), once the faults stopped.
    _backlog_at_quiet: tuple[int, int] | None = None

    def live(self) -> list[_ShareProc]:
        return sorted((p for p in self.procs.values() if p.alive), key=lambda p: p.index)
    def group(self) -> ShareGroup | None:
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        return g if isinstance(g, ShareGroup) else None

    def group_epoch(self) -> int:
        g = self.group()
        return g.group_epoch if g is not None else self._epochs[0]
    def _check_group(self) -> None:
        """I3 (epochs) and I2 as share groups relax it, on the coordinator's group."""
        g = self.group()
        if g is None:
            return
        ge, ae = g.group_epoch, g.assignment_epoch
        if ae > ge or ge < self._epochs[0] or ae < self._epochs[1]:
            raise Violation("I3", f"group epoch {ge}, assignment epoch {ae} after "
                                  f"{self._epochs[0]}, {self._epochs[1]}")
        self._epochs = (ge, ae)
        for mid, m in g.members.items():
            if m.member_epoch > ae:
                raise Violation("I3", f"member {mid[:8]} at epoch {m.member_epoch} above the "
                                      f"assignment epoch {ae}")
            before = self._member_epochs.get(mid)
            if before is not None and m.member_epoch < before:
                raise Violation("I3", f"member {mid[:8]}'s epoch went from {before} to "
                                      f"{m.member_epoch}")
            self._member_epochs[mid] = m.member_epoch
        for mid in [m for m in self._member_epochs if m not in g.members]:
            del self._member_epochs[mid]
        if ae == ge and g.members:
            self._check_target(g)
        self._count_unowned(g)

    #: Partitions held at the record-lock limit at the last look (:meth:`_count_unowned`).
    _limited: frozenset[TopicIdPartition] = frozenset()

    def _count_unowned(self, g: ShareGroup | None) -> None:
        """Downtime (partitions stopped: records there and none can be delivered): subscribed
        partitions that no live process has in the assignment it heartbeated, so that none
        fetches them (a crashed member's wait until its session expires, a partition between
        its last member's leave and the next one's heartbeat), the consumer groups' "no active
        owner"; and partitions held at the record-lock limit (``SimSharePartitions.at_limit``:
        fetched, but nothing can be acquired, e.g. behind a crashed member's locks)."""
        if g is None:
            return
        held = {tp for p in self.procs.values() if p.alive for tp in p.assigned}
        universe = self._universe(g.subscribed_topic_names())
        self.set_unowned(len((universe - held) | (universe & self._limited)))

    def _check_limit(self) -> None:
        """After the broker acquired, acknowledged or expired records: recount the stopped
        partitions if the set held at the record-lock limit changed."""
        limited = self.partitions.at_limit(self.now)
        if limited != self._limited:
            self._limited = limited
            self._count_unowned(self.group())

    def _universe(self, names: Iterable[str]) -> frozenset[TopicIdPartition]:
        return frozenset((t.topic_id, i) for name in names
                         if (t := self.image.topic(name)) is not None
                         for i in range(t.num_partitions))

    def _check_target(self, g: ShareGroup) -> None:
        held: set[TopicIdPartition] = set()
        for mid, a in g.target.items():
            m = g.members.get(mid)
            for tp in _flatten(a):
                name = self.topic_names.get(tp[0])
                if m is None or name not in m.subscribed_topic_names:
                    raise Violation("I2", f"target gives {name}-{tp[1]} to {mid[:8]}, not a "
                                          f"member subscribed to it")
                held.add(tp)
        missing = self._universe(g.subscribed_topic_names()) - held
        if missing:
            raise Violation("I2", f"target assigns no member {self.format_resource(missing)}")

    def converged(self) -> bool:
        """Every live process a member at the group epoch that heartbeated its target, no
        other member, and no restart due (the consumer groups' rule, KIP-848 "Reconciliation":
        a bounced member counts from its leave until it is back with its assignment)."""
        if self.pending_restarts:
            return False
        g = self.group()
        live = self.live()
        if g is None or not live:  # a group left empty computes no target: nothing to reach
            return not live and (g is None or not g.members)
        if g.assignment_epoch != g.group_epoch or any(p.hb_cid and p.epoch == 0 for p in live):
            return False
        if set(g.members) != {p.member_id for p in live}:
            return False
        for p in live:
            m = g.members[p.member_id]
            if p.epoch != g.group_epoch or m.member_epoch != g.group_epoch \
                    or p.assigned != _flatten(g.target.get(p.member_id, {})):
                return False
        return True

    def _drained(self) -> bool:
        """S4 holds now: every record produced before the faults stopped is done (or no
        live member could consume it)."""
        if not self.live() or self.scenario.workload.idle:
            return True
        parts = self.partitions
        quiet = self.quiet_at
        return all(parts.undone_before(tp, parts.log_end(tp, quiet)) == 0
                   for tp in parts.live_partitions())

    def full_check(self) -> None:
        try:
            self.partitions.full_check(self.now)
        except ShareInvariantError as e:
            raise Violation(e.invariant, e.message) from None

    def checkpoint(self) -> None:
        super().checkpoint()
        self.full_check()

    def check_convergence(self, final: bool) -> None:
        if not final or self.end_at is None:
            return
        if not self.converged():
            raise Violation("I5", f"not converged {self.i5_bound()} ms after the faults stopped "
                                  f"(group epoch {self.group_epoch()}; live "
                                  f"{', '.join(f'{p.name}@{p.epoch}' for p in self.live())})")
        if not self._drained():
            over = self.over_capacity()
            if over:  # S4 is liveness under capacity: this workload never drains (its lag says so)
                self.stats["s4_not_checked_over_capacity"] = len(over)
                return
            parts = self.partitions
            left = {f"{self.topic_names.get(tp[0])}-{tp[1]}":
                    parts.undone_before(tp, parts.log_end(tp, self.quiet_at))
                    for tp in parts.live_partitions()}
            raise Violation("S4", f"records produced before the faults stopped still neither "
                                  f"acknowledged nor archived at the end: "
                                  f"{ {k: v for k, v in sorted(left.items()) if v} }")

    def poison_rate(self) -> float:
        """The fraction of poison records: the settings' when they set one, else the
        workload's (``poison_rate``: the same records a consumer group meets in the lab)."""
        return self.settings.poison_rate or self.scenario.workload.poison_rate

    def over_capacity(self) -> list[str]:
        """The live members that cannot keep up with what they hold: their partitions'
        production (a partition shared by several members split evenly among them) times the
        mean cost of a record, the processing time plus a poison record's attempts up to the
        delivery limit, is a second's work or more each second.

        S4 ("once the faults stop, every record produced before is acknowledged or
        archived", KIP-932's liveness as the issue states it) is a property of the protocol
        only while the members can do the work: after a crash leaves three members on four
        partitions, the one holding two of them at 60 records/s each and 10 ms a record is
        120 % busy and its backlog grows for ever, under any protocol. Such a run's S4 is not
        checked (``s4_not_checked_over_capacity`` in its summary); S1-S3, the safety
        invariants, are checked as always, and the lag shows the backlog."""
        wl = self.scenario.workload
        if wl.idle:
            return []
        parts = self.partitions
        live = self.live()
        holders: dict[TopicIdPartition, int] = {}
        for p in live:
            for tp in p.assigned:
                holders[tp] = holders.get(tp, 0) + 1
        a = wl.poison_attempt_ms
        per_record = wl.processing_ms.average + (
            0.0 if a is None else self.poison_rate() * self.settings.delivery_count_limit
            * a.average)
        out = []
        for p in live:
            rate = sum(parts.producing[tp][1] / holders[tp] for tp in p.assigned
                       if tp in parts.producing and tp not in parts.gone)
            if rate * per_record >= 1000.0:
                out.append(p.name)
        return out

    def i5_bound(self) -> int:
        sc = self.scenario
        s = self.settings
        lat = self.network.max_latency_ms
        base = (sc.session_timeout_ms + s.lock_duration_ms + sc.restart_delay_ms
                + sc.request_timeout_ms + 3 * sc.heartbeat_interval_ms
                + sc.assignment_interval_ms + 20 * lat)
        wl = sc.workload
        if wl.idle:
            return base
        # Draining: the backlog at the quiet time over the live members, twice the mean
        # processing time per record; each poison record's deliveries, a fetch round each.
        # the backlog at the quiet time, taken when the faults stop (the done counts read later
        # are those of a later time: the same formula then undercounts, down to below zero)
        lag = 0
        if self.now >= self.quiet_at:
            if self._backlog_at_quiet is None or self._backlog_at_quiet[0] != self.quiet_at:
                self._backlog_at_quiet = (self.quiet_at, self.partitions.lag(self.quiet_at))
            lag = self._backlog_at_quiet[1]
        members = max(1, len(self.live()))
        drain = 2 * lag * wl.processing_ms.average / members
        # As in the field (``poison_attempt_ms``), each delivery also costs its attempt, up to
        # the lock duration when the attempt outlasts it (then the lock's expiry redelivers it).
        a = wl.poison_attempt_ms
        attempt = 0.0 if a is None else min(
            float(s.lock_duration_ms), a.bounded_max if a.bounded_max is not None
            else 20 * a.average)
        poison = math.ceil(s.delivery_count_limit * (FETCH_MAX_WAIT_MS + wl.fetch_latency_ms
                                                     + 4 * lat + attempt)) \
            if self.poison_rate() > 0 else 0
        return base + math.ceil(drain) + poison


def _flatten(a: Assignment) -> frozenset[TopicIdPartition]:
    return frozenset((t, p) for t, ps in a.items() for p in ps)
