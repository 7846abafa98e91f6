"""Consumer groups (KIP-848) in the simulator: real members against the real coordinator.

Each simulated *process* runs a real :class:`groupcoord.client.consumer.ConsumerMember`
(sans-IO) against the real :class:`Shard`, through the faulty network of ``sim.network``. A
process has a stable name (``c1``, ``c2``, ...; also the instance id of a static member); each
(re)start is a new incarnation with a new member id. Processes auto-commit the positions of
the partitions they own every ``commit_interval_ms`` and on revocation; a process stopped by a
fatal error (UNRELEASED_INSTANCE_ID, say) is restarted after ``restart_delay_ms``, as an
orchestrator would. A *slow* process defers the completion of its revocations (the listener's
``DEFER``) by ``delay_ms``.

**Invariants checked after every step** (DESIGN.md), incrementally on what the step changed,
and in full (:meth:`ConsumerSimulation.full_check`) at every checkpoint and at the end:

- **I1, coordinator view**: a shadow index of who holds each partition (assigned or pending
  revocation) is kept from the records the coordinator writes, record by record; a current
  assignment record that gives a member a partition still held by another member is a
  violation (the resource is given before the old owner acknowledged its revocation or was
  fenced: fencing removes the member and its holdings first).
- **I1, members' view** (what each process actually consumes): when a process starts consuming
  a partition, every other process still consuming it must be *fenced*: the coordinator
  removed its member (or the incarnation the process knows) since the process last heard from
  it. A process that is not fenced may only consume partitions the coordinator has it hold,
  and the coordinator may not release a partition a non-fenced process still consumes
  (a revocation must be acknowledged by the process first). Fenced processes (zombies that do
  not know yet) are allowed to lag: I6 makes their commits fail.
- **I2** whenever a new target assignment is installed (assignment epoch = group epoch): every
  partition of every subscribed topic is assigned exactly once, only to existing members that
  subscribe to its topic.
- **I3**: assignment epoch <= group epoch, neither decreases; member epochs <= assignment epoch
  (-2 for a static member gone temporarily); a member's epoch never decreases within one
  incarnation; on the client side an accepted response never lowers the member's epoch (except
  a rejoin at 0) and is never ahead of the coordinator's epoch for that member.
- **I4**: checkpoints and failovers rebuild the shard from its (compacted) log and compare
  ``state_digest()`` (``sim.engine``).
- **I5**: once the faults stop (the scenario's quiet time), every live process must reach the
  target assignment within :meth:`ConsumerSimulation.i5_bound`: coordinator Stable, every live
  process a member at the group epoch owning exactly its assigned partitions, no member that is
  not a live process, and no request of a dead process still on its way to the coordinator (it
  would still arrive: a crashed process's join adds a member its session timeout removes), so
  a run that ends early once converged ends settled.
- **I6**: every OffsetCommit is checked against the coordinator's state when it is handled: an
  unknown member must get UNKNOWN_MEMBER_ID, an epoch above the member's FENCED_MEMBER_EPOCH,
  below it (KIP-1251, Kafka 4.3) per partition: accepted where the member has held the
  partition since that epoch, STALE_MEMBER_EPOCH elsewhere (a member using the classic
  protocol: STALE_MEMBER_EPOCH as a whole); a commit from a fenced process must never be accepted, and one
  at the member's current epoch never refused with one of those (per-partition errors such as
  UNKNOWN_TOPIC_ID for a topic deleted meanwhile are not about fencing).

**The I5 bound.** After the quiet time T_q nothing is disturbed and no message is lost. The
slowest path to convergence is a crashed (or cut off) static member restarted under its
instance id: its old incarnation expires at most one session timeout S after T_q; its restarts
fail with UNRELEASED_INSTANCE_ID until then and are retried every restart delay R (plus the
request timeout Q and the maximal retry backoff B of a request in flight). Once the last member
change happened, a revoking member hears of it on its next heartbeat (at most one heartbeat
interval H), acknowledges at once, and the new owner gets the partition on its next heartbeat:
two intervals, with one more interval of slack for a member whose heartbeat was in flight, and
a few one-way latencies L (the network's maximum, reorder spike included) per round trip::

    bound = S + R + Q + B + 3 * H + 20 * L

Slow revocations need no term: the quiet time already includes each ``slow`` window and its
delay.

**Shared by every protocol.** ``sim.classic``, ``sim.connect`` and ``sim.classic_connect``
extend :class:`ConsumerSimulation`; its driving code serves their members as well (they have the
same driver interface: ``poll_request``, ``on_response`` and ``on_request_failed`` by
correlation id, ``next_deadline``, ``inflight`` / ``assign_inflight``), with ``sim.members``
for how each message type is traced and answered by a loading coordinator. What differs is in
hooks: :attr:`ConsumerSimulation.commits_offsets` (workers commit none),
:meth:`ConsumerSimulation.on_group_response` (classic answers), :meth:`ConsumerSimulation._handle`
(parked requests), :meth:`ConsumerSimulation.on_group_record` (the records shadowed),
:meth:`ConsumerSimulation.slow_revocation_ms`, :meth:`ConsumerSimulation.check_holding` and
:meth:`ConsumerSimulation.check_process` (I1 in full), :meth:`ConsumerSimulation.gap_group` and
:meth:`ConsumerSimulation.gap_members` (an I5 violation's description), the wording of violations
(:attr:`ConsumerSimulation.member_word`, :attr:`ConsumerSimulation.verbs`,
:attr:`ConsumerSimulation.epoch_word`).

**Variant ``client``** (issue #3, KIP-848 "Client-Side Assignor"): the members advertise a
local ``uniform`` assignor (:class:`groupcoord.client.assignors.UniformAssignor`) instead of
asking for a server-side one; the member the coordinator chooses sends PrepareAssignment and
InstallAssignment through the same faulty network as its heartbeats (both are driven here:
``poll_request`` is called until it returns None, and a failover resets them too). Its I5 bound
adds, after the last member change, the assigner's round (its next heartbeat, two round trips,
then the members' heartbeat: 2 H), a lost Prepare or Install given up after Q + B, and the
coordinator's assigner deadline (the rebalance timeout T, when the chosen member was cut off
until the quiet time)::

    bound(client) = bound + T + Q + B + 2 * H + 10 * L
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

from groupcoord.client.assignors import UniformAssignor
from groupcoord.client.consumer import (
    DEFER,
    ConsumerMember,
    MemberState,
    Partitions,
    RebalanceListener,
    TopicIdPartition,
)
from groupcoord.coordinator.assignment_epochs import commit_check
from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
)
from groupcoord.coordinator.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    Record,
    RecordType,
)
from groupcoord.coordinator.result import DEFERRED, Result
from groupcoord.coordinator.subscription import regex_matches, subscribed_topic_ids
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.engine import Simulation, Violation
from groupcoord.sim.members import (
    assign_response_kind,
    describe_request,
    fatal_reason,
    heartbeat_detail,
    in_flight,
    loading_response,
)
from groupcoord.sim.network import REORDER_SPIKE
from groupcoord.sim.scenario import Event

_E = ErrorCode
_CURRENT = RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
_TARGET_META = RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA
_TARGET_MEMBER = RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
_OFFSET = RecordType.OFFSET_COMMIT
#: The member-level errors of a commit (I6); per-partition ones (a topic deleted meanwhile,
#: UNKNOWN_TOPIC_ID) are not about fencing.
#: :meth:`ConsumerSimulation._expected_commit_error`: the answer depends on each partition.
_PER_PARTITION = -1

_FENCING_CODES = frozenset({int(_E.unknown_member_id), int(_E.fenced_member_epoch),
                            int(_E.stale_member_epoch)})
_LEFT = (MemberState.UNJOINED, MemberState.UNSUBSCRIBED, MemberState.FATAL)
_RETRY_BACKOFF_MAX_MS = 1_000
STATIC_LEAVE_EPOCH = -2
#: The variant whose members compute the assignment themselves (a local uniform assignor).
CLIENT_VARIANT = "client"


def _as_is(resources: Iterable[Any]) -> Iterable[Any]:
    return resources


def _commit_codes(resp: OffsetCommitResponse) -> set[int]:
    """The error codes of a commit answer's partitions (0 among them: some were accepted)."""
    return {pr.error_code for t in resp.topics for pr in t.partitions}


def _held(v: ConsumerGroupCurrentMemberAssignmentValue) -> frozenset[TopicIdPartition]:
    return frozenset([(t, p) for a in (v.assigned_partitions, v.partitions_pending_revocation)
                      for t, ps in a.items() for p in ps])


class Proc:
    """A simulated consumer process (one name, successive incarnations)."""

    __slots__ = ("alive", "consuming", "gen", "in_ch", "inc_seen", "index", "instance_id",
                 "leaving", "member", "name", "next_commit_at", "out_ch", "regex", "slow_delay",
                 "slow_until", "tick_at", "topics")

    def __init__(self, name: str, index: int, member: ConsumerMember) -> None:
        self.name = name
        self.index = index
        self.gen = 0
        self.member = member
        self.alive = False
        self.instance_id: str | None = None
        self.topics: tuple[str, ...] | None = None
        self.regex: str | None = None
        self.tick_at: int | None = None
        self.next_commit_at: int | None = None
        #: The coordinator's incarnation of this member as of the last accepted success (-1:
        #: none); the process is fenced when the coordinator's differs.
        self.inc_seen = -1
        #: What the process consumes, as the invariant checker last saw it.
        self.consuming: Partitions = frozenset()
        self.slow_until = 0
        self.slow_delay = 0
        self.leaving = False
        self.out_ch = self.in_ch = ""  # network channel names of the current incarnation


class _Listener(RebalanceListener):
    __slots__ = ("proc", "sim")

    def __init__(self, sim: ConsumerSimulation, proc: Proc) -> None:
        self.sim = sim
        self.proc = proc

    def on_partitions_revoked(self, partitions: Partitions) -> object:
        return self.sim.on_revoked(self.proc, partitions)

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        self.sim.trace("assigned", self.proc.name, self.proc.member.member_epoch, partitions)

    def on_partitions_lost(self, partitions: Partitions) -> None:
        self.sim.trace("lost", self.proc.name, self.proc.member.member_epoch, partitions)


class _Msg:
    __slots__ = ("body", "cid", "codes", "coord_gen", "gen", "inc", "proc")

    def __init__(self, proc: Proc, gen: int, cid: int, body: Any, coord_gen: int,
                 inc: int = -1, codes: set[int] | None = None) -> None:
        self.proc = proc
        self.gen = gen
        self.cid = cid
        self.body = body
        self.coord_gen = coord_gen
        self.inc = inc
        #: A commit answer's error codes (:func:`_commit_codes`), when the simulator read them
        #: already (I6, :meth:`ConsumerSimulation._check_commit`).
        self.codes = codes


class ConsumerSimulation(Simulation):
    """KIP-848 consumer groups under faults (protocol ``consumer``, variants = assignors)."""

    protocol = "consumer"
    #: Whether the processes commit offsets (auto-commits, commits on revocation): Connect
    #: workers commit none.
    commits_offsets = True
    #: The statistic that counts revoked resources (None: not counted).
    revoked_stat: str | None = None
    #: The records of the group type's current assignments and of its target.
    current_type = _CURRENT
    target_types: tuple[RecordType, ...] = (_TARGET_META, _TARGET_MEMBER)
    #: How violations name a member, and what a process does with its resources.
    member_word = "member"
    verbs = ("consumed", "consumes")
    epoch_word = "epoch"
    #: The commit errors that say the committer is not (or no longer) the member it claims.
    fencing_codes = _FENCING_CODES

    def setup(self) -> None:
        sc = self.scenario
        self.gid = sc.group_id
        self.procs: dict[str, Proc] = {}
        self._names: set[str] = set()  # every name used or reserved
        self._live: list[Proc] | None = None  # live processes by index (cache)
        self.by_mid: dict[str, Proc] = {}
        self._next_index = 1
        # Shadow of the coordinator (from its records): holder per partition, holdings per
        # member, incarnations (removals) per member id, presence.
        self.coord_holder: dict[TopicIdPartition, str] = {}
        self.coord_held: dict[str, frozenset[TopicIdPartition]] = {}
        # The (assigned, pending) mappings of each member's last current-assignment record: a
        # record with the same (immutable) mappings, an epoch bump, leaves its holdings as they
        # are.
        self._coord_parts: dict[str, tuple[Any, Any]] = {}
        # Topic ids each subscription (names, regex) resolves to, for one subscription metadata.
        self._sub_ids: tuple[Any, dict[tuple[Any, Any], frozenset[UUID]]] = (None, {})
        self.coord_epoch: dict[str, int] = {}
        self.removals: dict[str, int] = {}
        self.present: dict[str, int] = {}
        # Members' side: who consumes each partition; the legitimate (non-fenced) consumer.
        self.consumers: dict[TopicIdPartition, list[Proc]] = {}
        self.legit: dict[TopicIdPartition, Proc] = {}
        self.last_owner: dict[TopicIdPartition, str] = {}
        self.universe: frozenset[TopicIdPartition] = frozenset()
        self._universe_key: Any = None
        self._universe_dirty = True
        self._target_dirty = False
        self._group_records = False
        self._blocker: Proc | None = None
        self._epochs = (0, 0)
        #: Names of processes that will be restarted (bounce, fatal error).
        self.pending_restarts: set[str] = set()
        #: Requests on their way to the coordinator (deliveries scheduled, duplicates counted)
        #: per incarnation ``(name, gen)``: see :meth:`settled`.
        self._requests_in_flight: dict[tuple[str, int], int] = {}
        self.stats: dict[str, int] = {
            "heartbeats": 0, "commits": 0, "commits_accepted": 0, "commits_rejected": 0,
            "zombie_commits_rejected": 0, "fatal_restarts": 0, "fenced": 0, "timeouts": 0,
            "spawned": 0, "crashed": 0, "left": 0, "slow_revocations": 0, "i1_checks": 0,
            "i2_checks": 0, "i6_checks": 0}
        if self.variant == CLIENT_VARIANT:
            self.stats.update({"prepares": 0, "installs": 0, "assign_errors": 0})
        sc_topics = sc.topics_subscribed() if sc.regex is None else None
        for i in range(sc.members):
            name = f"c{i + 1}"
            self.at(i * sc.join_stagger_ms, self._spawn_event, (name, sc_topics, sc.regex))
        self.arm_timer()

    # ================================================================== processes

    def _new_name(self) -> str:
        i = len(self._names) + 1
        while f"c{i}" in self._names:
            i += 1
        return f"c{i}"

    def _spawn_event(self, arg: tuple[str, tuple[str, ...] | None, str | None]) -> None:
        name, topics, regex = arg
        self.spawn(name, topics, regex)

    def spawn(self, name: str, topics: tuple[str, ...] | None = None,
              regex: str | None = None) -> Proc:
        """Start a process (a new incarnation with a new member id) and subscribe."""
        sc = self.scenario
        p = self.procs.get(name)
        if p is not None and p.alive:
            return p
        self.pending_restarts.discard(name)
        if topics is None and regex is None and p is not None:
            topics, regex = p.topics, p.regex
        if topics is None and regex is None:
            topics = sc.topics_subscribed() if sc.regex is None else None
            regex = sc.regex
        instance_id = name if sc.static else None
        member = self.new_member(name, instance_id)
        if p is None:
            p = Proc(name, self._next_index, member)
            self._next_index += 1
            self.procs[name] = p
            self._names.add(name)
        p.member = member
        member.listener = _Listener(self, p)
        p.topics, p.regex = topics, regex
        p.gen += 1
        p.out_ch = f"{name}#{p.gen}>"
        p.in_ch = f"{name}#{p.gen}<"
        p.alive = True
        self._live = None
        p.leaving = False
        p.inc_seen = -1
        p.consuming = frozenset()
        p.tick_at = None
        p.instance_id = instance_id
        self.by_mid[p.member.member_id] = p
        p.next_commit_at = self.now + sc.commit_interval_ms \
            if sc.commit_interval_ms and self.commits_offsets else None
        self.stats["spawned"] += 1
        self.trace("start", name, f"#{p.gen}", f"member {p.member.member_id}")
        if regex is not None:
            p.member.subscribe(regex=regex, now_ms=self.now)
        else:
            p.member.subscribe(topics or (), now_ms=self.now)
        self._universe_dirty = True
        self._drive(p)
        return p

    def new_member(self, name: str, instance_id: str | None) -> Any:
        """The member of a new incarnation of process ``name`` (``sim.classic`` overrides it)."""
        sc = self.scenario
        client = self.variant == CLIENT_VARIANT
        return ConsumerMember(
            sc.group_id, member_id=self.new_member_id(), instance_id=instance_id,
            rebalance_timeout_ms=sc.rebalance_timeout_ms,
            server_assignor=None if client else self.variant or None, client_id=name,
            request_timeout_ms=sc.request_timeout_ms, retry_backoff_max_ms=_RETRY_BACKOFF_MAX_MS,
            local_assignors=(UniformAssignor(),) if client else ())

    def _stop(self, p: Proc, why: str) -> None:
        """The process is gone: it consumes nothing from now on."""
        p.alive = False
        self._live = None
        p.tick_at = None
        self._stop_consuming(p, p.consuming)
        p.consuming = frozenset()
        self.network.forget(p.out_ch)
        self.network.forget(p.in_ch)
        self._universe_dirty = True
        self.trace(why, p.name, f"#{p.gen}")

    def crash(self, p: Proc) -> None:
        if not p.alive:
            return
        self.stats["crashed"] += 1
        self._stop(p, "crash")

    def leave(self, p: Proc, permanent: bool) -> None:
        if not p.alive or p.leaving:
            return
        p.leaving = True
        self.trace("leave", p.name, p.member.member_epoch, "permanent" if permanent or
                   p.instance_id is None else "temporary (-2)")
        p.member.leave(self.now, permanent=permanent)
        self._sync(p)
        self._drive(p)

    def _restart_later(self, p: Proc, delay_ms: int) -> None:
        self.pending_restarts.add(p.name)
        self.at(self.now + delay_ms, self._restart_event, (p.name, p.gen))

    def _restart_event(self, arg: tuple[str, int]) -> None:
        name, gen = arg
        p = self.procs[name]
        if p.gen != gen:
            return
        if not p.alive:
            self.spawn(name)
        elif p.leaving:  # still closing (a slow revocation): restart once it exited
            self.at(self.now + 100, self._restart_event, arg)

    # ================================================================== scenario events

    def live(self) -> list[Proc]:
        """Live processes in start order (cached until one starts or stops)."""
        live = self._live
        if live is None:
            live = self._live = [p for p in sorted(self.procs.values(), key=lambda p: p.index)
                                 if p.alive]
        return live

    def live_count(self) -> int:
        return sum(1 for p in self.procs.values() if p.alive)

    def resolve_members(self, names: Iterable[str]) -> list[str]:
        out: list[str] = []
        for n in names:
            if n in ("any", "*", "all"):
                live = [p.name for p in self.live() if p.name not in out]
                if n == "any":
                    if live:
                        out.append(self.choice_rng.choice(live))
                else:
                    out.extend(live)
            elif n not in out:
                out.append(n)
        return sorted(out)

    def _one(self, ev: Event) -> Proc | None:
        names = self.resolve_members([ev["member"]])
        p = self.procs.get(names[0]) if names else None
        if p is None or not p.alive:
            self.trace("skip", names[0] if names else "", "", f"{ev.kind}: not running")
            return None
        return p

    def apply_member_event(self, ev: Event) -> None:
        k = ev.kind
        sc = self.scenario
        if k == "join":
            names = list(ev["members"]) if ev["members"] else [
                self._new_name() for _ in range(ev["count"])]
            for n in names:
                self._names.add(n)
                self.spawn(n)
        elif k == "scale-out":
            for _ in range(ev["count"]):
                n = self._new_name()
                self._names.add(n)
                self.spawn(n)
        elif k == "scale-in":
            for p in sorted(self.live(), key=lambda p: -p.index)[:ev["count"]]:  # newest first
                self.leave(p, permanent=True)
        elif k == "leave":
            one = self._one(ev)
            if one is not None:
                self.leave(one, permanent=True)
        elif k == "crash":
            one = self._one(ev)
            if one is not None:
                self.crash(one)
        elif k == "bounce":
            one = self._one(ev)
            if one is not None:
                self._bounce(one, ev["down_ms"], ev["hard"])
        elif k == "rolling-bounce":
            for i, p in enumerate(list(self.live())):
                self.at(self.now + i * ev["interval_ms"], self._bounce_event,
                        (p.name, ev["down_ms"], ev["hard"]))
        elif k == "slow":
            for p in self._targets(ev):
                p.slow_until = self.now + ev["duration_ms"]
                p.slow_delay = ev["delay_ms"]
                self.trace("slow", p.name, "", f"revocations take {ev['delay_ms']} ms for "
                           f"{ev['duration_ms']} ms")
        elif k == "subscribe":
            for p in self._targets(ev):
                p.topics, p.regex = ev["topics"], ev["regex"]
                self.trace("subscribe", p.name, "", ",".join(ev["topics"]) if ev["topics"]
                           else f"/{ev['regex']}/")
                if ev["regex"] is not None:
                    p.member.subscribe(regex=ev["regex"], now_ms=self.now)
                else:
                    p.member.subscribe(ev["topics"], now_ms=self.now)
                self._universe_dirty = True
                self._drive(p)
        else:
            raise ValueError(f"unknown event kind {k!r} for {sc.name}")

    def _targets(self, ev: Event) -> list[Proc]:
        if ev["member"] == "all":
            return list(self.live())
        one = self._one(ev)
        return [] if one is None else [one]

    def _bounce_event(self, arg: tuple[str, int, bool]) -> None:
        name, down, hard = arg
        p = self.procs[name]
        if p.alive:
            self._bounce(p, down, hard)

    def _bounce(self, p: Proc, down_ms: int, hard: bool) -> None:
        self.trace("bounce", p.name, "", f"{'hard' if hard else 'graceful'}, down {down_ms} ms")
        if hard:
            self.crash(p)
        else:
            self.leave(p, permanent=False)
        self._restart_later(p, down_ms)

    # ================================================================== driving members

    def _tick(self, arg: tuple[Proc, int]) -> None:
        p, gen = arg
        if p.gen != gen or not p.alive or p.tick_at != self.now:
            self.step -= 1  # a superseded wake-up: not an event of the simulation
            return
        p.tick_at = None
        self._drive(p)

    def _drive(self, p: Proc) -> None:
        """Let the member send what is due (an auto-commit that is due goes with a heartbeat,
        as a consumer's poll loop does), and schedule its next wake-up."""
        m = p.member
        now = self.now
        timeouts = m.stats["timeouts"]
        state_before = m.state
        req = m.poll_request(now)
        sent = req is not None
        while req is not None:  # besides a heartbeat, an assigner can owe a Prepare or Install
            self._send(p, req, m.last_correlation_id)
            req = m.poll_request(now)
        if m.state is not state_before:
            self.dirty = True
        if m.stats["timeouts"] != timeouts:
            self.stats["timeouts"] += 1
            self.trace("timeout", p.name, m.member_epoch)
        if sent:
            c = p.next_commit_at
            if c is not None and now >= c:
                p.next_commit_at = now + self.scenario.commit_interval_ms
                if p.consuming and not p.leaving:
                    self._commit(p, p.consuming, "auto")
        if m.owned is not p.consuming:
            self._sync(p)
        if p.leaving and m.state is MemberState.UNJOINED:
            self.stats["left"] += 1
            self._stop(p, "exit")
            return
        self._schedule(p)

    def _schedule(self, p: Proc) -> None:
        if not p.alive:
            return
        d = p.member.next_deadline()
        if d is None:
            return
        now = self.now
        if d < now:
            d = now
        if d != p.tick_at:  # a wake-up at another time supersedes the pending one
            p.tick_at = d
            self.at(d, self._tick, (p, p.gen))

    def _send(self, p: Proc, req: Any, cid: int) -> None:
        """Count and trace a request of ``p`` (``sim.members``), then put it on the network."""
        self.counters["messages"] += 1
        seen = describe_request(req)
        if seen is not None:
            stat, event, epoch, detail = seen
            self.stats[stat] += 1
            self.trace(event, p.name, epoch, detail)
        self._post(p, req, cid)

    def _post(self, p: Proc, req: Any, cid: int) -> None:
        """Put a request of ``p`` on the network, to the coordinator."""
        msg = _Msg(p, p.gen, cid, req, self.coord.generation)
        key = (p.name, p.gen)
        flying = self._requests_in_flight
        for t in self.network.route(self.now, p.out_ch, p.name, False):
            flying[key] = flying.get(key, 0) + 1
            self.at(t, self._to_coordinator, msg)

    def _arrives(self, msg: _Msg) -> bool:
        """Whether a request reaches a coordinator that handles it: not from a process cut
        off, not on a connection that died with a failed-over coordinator; a coordinator
        still loading answers COORDINATOR_LOAD_IN_PROGRESS."""
        c = self.coord
        if msg.proc.name in self.network.cut:
            self.network.stats["cut"] += 1
            return False
        if msg.coord_gen != c.generation:
            return False
        if not c.up:
            self._respond(msg, loading_response(msg.body, _E.coordinator_load_in_progress), -1)
            return False
        return True

    def _commit(self, p: Proc, parts: Partitions, why: str) -> None:
        m = p.member
        # Positions are the simulated time: every owned partition moved since the last commit.
        req = m.positions_commit_request(self.now, None if parts is m.owned else parts,
                                         self.topic_names, why)
        if req is None:
            return
        self.stats["commits"] += 1
        self.trace("commit>", p.name, req.generation_id_or_member_epoch, why)
        self._send(p, req, -1)

    def on_revoked(self, p: Proc, parts: Partitions) -> object:
        """The process gives up what it owned: commits the positions (when the protocol's
        processes commit offsets); a slow one defers the end of the revocation (``DEFER``,
        the same object for consumers and workers) by :meth:`slow_revocation_ms`."""
        if self.revoked_stat is not None:
            self.stats[self.revoked_stat] += len(parts)
        self.trace("revoke", p.name, p.member.member_epoch, parts)
        if self.commits_offsets:
            self._commit(p, parts, "revoke")
        if self.now < p.slow_until and p.slow_delay > 0:
            self.stats["slow_revocations"] += 1
            self.at(self.now + self.slow_revocation_ms(p), self._revocation_done, (p, p.gen))
            return DEFER
        return None

    def slow_revocation_ms(self, p: Proc) -> int:
        """How long a slow process takes to finish a revocation."""
        return p.slow_delay

    def _revocation_done(self, arg: tuple[Proc, int]) -> None:
        p, gen = arg
        if p.gen != gen or not p.alive:
            return
        self.trace("revoked", p.name, p.member.member_epoch, "slow revocation completed")
        p.member.complete_revocation(self.now)
        self._sync(p)
        self._drive(p)

    def _to_coordinator(self, msg: _Msg) -> None:
        """The coordinator handles a request (I6 on a commit, every invariant after it with
        ``full_checks``) and answers it, unless it parked it (:meth:`_handle`)."""
        key = (msg.proc.name, msg.gen)
        flying = self._requests_in_flight
        if flying[key] > 1:
            flying[key] -= 1
        else:
            del flying[key]
            if msg.gen != msg.proc.gen or not msg.proc.alive:
                self.dirty = True  # the last request of a dead incarnation: test convergence
        if not self._arrives(msg):
            return
        p = msg.proc
        req = msg.body
        codes = None
        if isinstance(req, OffsetCommitRequest):
            expected = self._expected_commit_error(req)
            older = self._older_commit_expectations(req) if expected == _PER_PARTITION else None
            fenced = msg.gen == p.gen and p.member is not None \
                and p.member.member_id == req.member_id and self.is_fenced(p)
            res = self._handle(msg)
            self.coordinator_result(res)
            codes = _commit_codes(res.response)
            if older is not None:
                self._check_older_commit(p, req, res.response, older, fenced)
            else:
                self._check_commit(p, req, codes, expected, fenced)
        else:
            res = self._handle(msg)
            self.coordinator_result(res)
            if self.full_checks:
                self.full_check()
        if res.response is not DEFERRED:
            self._respond(msg, res.response, self._incarnation(req), codes)

    def _handle(self, msg: _Msg) -> Result[Any]:
        """The coordinator's call for one request (``sim.classic`` passes the message as the
        token of a request it may park: JoinGroup, SyncGroup)."""
        return self.coord.shard.handle(msg.body, self.now)

    def _incarnation(self, req: Any) -> int:
        """The coordinator's incarnation of the request's member, sent back with the answer
        (I1: a process learns of its removal from it)."""
        return self.present.get(req.member_id, -1)

    def _respond(self, req_msg: _Msg, resp: Any, inc: int, codes: set[int] | None = None) -> None:
        p = req_msg.proc
        self.counters["messages"] += 1
        msg = _Msg(p, req_msg.gen, req_msg.cid, resp, req_msg.coord_gen, inc, codes)
        ch = p.in_ch if req_msg.gen == p.gen else f"{p.name}#{req_msg.gen}<"
        for t in self.network.route(self.now, ch, p.name, True):
            self.at(t, self._to_member, msg)

    def _deliverable(self, msg: _Msg) -> bool:
        """Whether a response reaches its process: the incarnation that sent the request is
        alive, not cut off, and the connection did not die with a failed-over coordinator."""
        p = msg.proc
        if msg.gen != p.gen or not p.alive:
            return False
        if p.name in self.network.cut:
            self.network.stats["cut"] += 1
            return False
        return msg.coord_gen == self.coord.generation  # else reset by the failover

    def _settle(self, p: Proc) -> None:
        """After a response: what the process consumes follows its member; a member stopped
        by a fatal error exits and restarts later (as an orchestrator would); else drive it."""
        self._sync(p)
        m = p.member
        if m.state is MemberState.FATAL:
            self.trace("fatal", p.name, "", fatal_reason(m.fatal_error))
            self._stop(p, "exit")
            self.stats["fatal_restarts"] += 1
            self._restart_later(p, self.scenario.restart_delay_ms)
            return
        self._drive(p)

    def _to_member(self, msg: _Msg) -> None:
        """An answer reaches its process: a commit's is traced; an assigner's Prepare or
        Install answer goes to the member; a group request's to :meth:`on_group_response`."""
        if not self._deliverable(msg):
            return
        p = msg.proc
        body = msg.body
        m = p.member
        if isinstance(body, OffsetCommitResponse):
            codes = msg.codes if msg.codes is not None else _commit_codes(body)
            if any(codes):  # an error besides the accepted partitions' 0
                self.trace("commit<", p.name, m.member_epoch,
                           ",".join(sorted(error_name(c) for c in codes if c)))
            return
        kind = assign_response_kind(body)
        if kind is not None:  # a Prepare's or Install's answer (assigner duties)
            if not m.on_response(body, self.now, msg.cid):
                self.trace(f"{kind} stale", p.name, m.member_epoch)
            elif body.error_code:
                self.stats["assign_errors"] += 1
                self.trace(kind, p.name, m.member_epoch, error_name(body.error_code))
            else:
                self.trace(kind, p.name, m.member_epoch)
            self._drive(p)
            return
        self.on_group_response(msg)

    def on_group_response(self, msg: _Msg) -> None:
        """The answer to a heartbeat (consumer and connect groups): client-side I1 and I3 on
        a success, then the member handles it."""
        p = msg.proc
        body = msg.body
        m = p.member
        inflight = m.inflight
        req = inflight.request if inflight is not None and inflight.correlation_id == msg.cid \
            else None
        before = m.member_epoch
        state_before = m.state
        if req is not None and body.error_code == 0 and req.member_epoch >= 0 \
                and m.state not in _LEFT and m.state is not MemberState.LEAVING:
            self._accept_success(p, req, body, msg.inc, before)
        accepted = m.on_response(body, self.now, msg.cid)
        if not accepted:
            self.trace("hb< stale", p.name, body.member_epoch)
        elif body.error_code:
            self.trace("hb<", p.name, before, error_name(body.error_code))
            if body.error_code in (_E.fenced_member_epoch, _E.unknown_member_id):
                self.stats["fenced"] += 1
        else:
            detail = heartbeat_detail(body, before)
            if detail is not None:
                self.trace("hb<", p.name, body.member_epoch, detail)
        if m.state is not state_before or m.member_epoch != before:
            self.dirty = True
        self._settle(p)

    def on_coordinator_down(self) -> None:
        """Connections to the old coordinator reset: members with a request in flight learn
        of it one latency later."""
        for p in list(self.live()):
            for cid in in_flight(p.member):  # a group request; a Prepare or Install
                self.at(self.now + self.network.draw(), self._connection_reset, (p, p.gen, cid))

    def _connection_reset(self, arg: tuple[Proc, int, int]) -> None:
        p, gen, cid = arg
        if p.gen != gen or not p.alive:
            return
        if p.member.on_request_failed(self.now, cid):
            self.trace("conn-reset", p.name, p.member.member_epoch)
        self._drive(p)

    # ================================================================== invariants: members

    def is_fenced(self, p: Proc) -> bool:
        inc = self.present.get(p.member.member_id)
        return inc is None or inc != p.inc_seen

    def _accept_success(self, p: Proc, req: ConsumerGroupHeartbeatRequest,
                        body: ConsumerGroupHeartbeatResponse, inc: int, before: int) -> None:
        """A success response the member is about to accept: client-side I1 and I3."""
        if inc != p.inc_seen and p.consuming:
            raise Violation("I1", f"{p.name} (member {req.member_id}) kept consuming "
                                  f"{self.format_resource(p.consuming)} into a new incarnation "
                                  f"of its membership")
        if req.member_epoch != 0 and body.member_epoch < before:
            raise Violation("I3", f"{p.name}: member epoch would go from {before} down to "
                                  f"{body.member_epoch}")
        if inc >= 0 and self.present.get(req.member_id) == inc:
            coord = self.coord_epoch.get(req.member_id)
            if coord is not None and coord >= 0 and body.member_epoch > coord:
                raise Violation("I3", f"{p.name}: accepted epoch {body.member_epoch} is ahead of "
                                      f"the coordinator's {coord}")
        p.inc_seen = inc

    def _sync(self, p: Proc) -> None:
        """Apply the change of what a process consumes to the checker's view (stops first)."""
        owned = p.member.owned if p.alive else frozenset()
        cur = p.consuming
        if owned is cur or owned == cur:
            p.consuming = owned
            return
        gone = cur - owned
        if gone:
            self._stop_consuming(p, gone)
        new = owned - cur
        p.consuming = owned
        if new:
            self._start_consuming(p, new)
        self.dirty = True

    def _stop_consuming(self, p: Proc, parts: Iterable[TopicIdPartition]) -> None:
        legit = self.legit
        universe = self.universe
        lost = 0
        for tp in parts:
            lst = self.consumers.get(tp)
            if lst is not None and p in lst:
                lst.remove(p)
            if legit.get(tp) is p:
                del legit[tp]
                if tp in universe:
                    lost += 1
        if lost:
            self.set_unowned(self._unowned + lost)

    def _start_consuming(self, p: Proc, parts: Iterable[TopicIdPartition]) -> None:
        fenced = self.is_fenced(p)
        mid = p.member.member_id
        legit = self.legit
        universe = self.universe
        gained = 0
        self.stats["i1_checks"] += 1
        for tp in parts:  # deterministic order: ids and ints hash the same in every process
            lst = self.consumers.setdefault(tp, [])
            if not fenced:
                holder = self.coord_holder.get(tp)
                if holder != mid:
                    raise Violation("I1", f"{p.name} (member {mid}) starts consuming "
                                          f"{self._tp(tp)} which the coordinator "
                                          f"{'holds for ' + self._who(holder) if holder else 'gives nobody'}")
                for q in lst:
                    if q is not p and q.alive and not self.is_fenced(q):
                        raise Violation("I1", f"{self._tp(tp)} is consumed by {q.name} (member "
                                              f"{q.member.member_id}, not fenced) and now also by "
                                              f"{p.name} (member {mid})")
                last = self.last_owner.get(tp)
                if last is not None and last != p.name:
                    self.counters["moved"] += 1
                self.last_owner[tp] = p.name
                if tp not in legit and tp in universe:
                    gained += 1
                legit[tp] = p
            lst.append(p)
        if gained:
            self.set_unowned(self._unowned - gained)

    def _tp(self, tp: TopicIdPartition) -> str:
        return f"{self.topic_names.get(tp[0], str(tp[0]))}-{tp[1]}"

    def _who(self, mid: str | None) -> str:
        p = self.by_mid.get(mid or "")
        return f"{p.name} (member {mid})" if p is not None else f"member {mid}"

    # ================================================================== invariants: coordinator

    def on_records(self, records: list[Record]) -> bool:
        """Shadow the coordinator's holdings record by record (I1, I3 per member); True when
        a group record was among them (offset commits do not change the group)."""
        group = False
        for rec in records:
            t = rec.key.type
            if t is _OFFSET:
                continue
            group = True
            self.on_group_record(rec, t)
        return group

    def on_group_record(self, rec: Record, t: RecordType) -> None:
        """One record of a group: a current assignment is shadowed (:meth:`_current_record`,
        of the group type's :attr:`current_type`, seen through :meth:`current_view`), a
        target marks I2 due."""
        self._group_records = True
        if t is self.current_type:
            key: Any = rec.key
            if key.group_id == self.gid:
                v = rec.value
                self._current_record(key.member_id, None if v is None else self.current_view(v))
        elif t in self.target_types:
            self._target_dirty = True

    def current_view(self, v: Any) -> Any:
        """A current-assignment value as :meth:`_current_record` reads it (assigned and
        pending partitions, member epoch)."""
        return v

    def _current_record(self, mid: str, v: ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
        old = self.coord_held.get(mid, frozenset())
        holder = self.coord_holder
        if v is None:  # the member is removed: it is fenced, and releases everything
            self.removals[mid] = self.removals.get(mid, 0) + 1
            self.present.pop(mid, None)
            self.coord_held.pop(mid, None)
            self._coord_parts.pop(mid, None)
            self.coord_epoch.pop(mid, None)
            for tp in old:
                if holder.get(tp) == mid:
                    del holder[tp]
            p = self.by_mid.get(mid)
            if p is not None and p.alive and p.member.member_id == mid:
                self._fenced_now(p)
            return
        if mid not in self.present:
            self.present[mid] = self.removals.get(mid, 0)
        assigned, pending = v.assigned_partitions, v.partitions_pending_revocation
        prev = self._coord_parts.get(mid)
        if prev is not None and (prev[0] is assigned or prev[0] == assigned) \
                and (prev[1] is pending or prev[1] == pending):
            new = old
        else:
            new = _held(v)
            self._coord_parts[mid] = (assigned, pending)
        prev_epoch = self.coord_epoch.get(mid)
        epoch = v.member_epoch
        if prev_epoch is not None and epoch < prev_epoch and epoch != STATIC_LEAVE_EPOCH \
                and prev_epoch != STATIC_LEAVE_EPOCH:
            raise Violation("I3", f"member {self._who(mid)} epoch decreased from {prev_epoch} to "
                                  f"{epoch} without leaving")
        self.coord_epoch[mid] = epoch
        if new is old or new == old:
            return
        for tp in new - old:
            h = holder.get(tp)
            if h is not None and h != mid:
                raise Violation("I1", f"the coordinator gives {self._tp(tp)} to {self._who(mid)} "
                                      f"while {self._who(h)} still holds it (not revoked, not "
                                      f"fenced)")
            holder[tp] = mid
        released = old - new
        if released:
            p = self.by_mid.get(mid)
            if p is not None and p.alive and p.member.member_id == mid and not self.is_fenced(p):
                still = released & p.consuming
                if still:
                    raise Violation("I1", f"the coordinator released {self.format_resource(still)} "
                                          f"from {p.name} (member {mid}) which still consumes "
                                          f"them: a revocation taken as acknowledged")
            for tp in released:
                if holder.get(tp) == mid:
                    del holder[tp]
        self.coord_held[mid] = new

    def _fenced_now(self, p: Proc) -> None:
        """The coordinator removed ``p``'s member: its consumption is no longer legitimate."""
        legit = self.legit
        lost = 0
        for tp in p.consuming:
            if legit.get(tp) is p:
                del legit[tp]
                if tp in self.universe:
                    lost += 1
        if lost:
            self.set_unowned(self._unowned + lost)
        if p.consuming:
            self.trace("zombie", p.name, p.member.member_epoch, p.consuming)

    def _group(self) -> ConsumerGroup | None:
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        return g if isinstance(g, ConsumerGroup) else None

    def group_epoch(self) -> int:
        g = self._group()
        return g.group_epoch if g is not None else self._epochs[0]

    def after_step(self) -> None:
        """The incremental checks of one step (I1 and I6 ran inside it): I3 on the group's
        epochs and I2 on a newly installed target when the step wrote group records; then
        convergence, when something changed, for the open disturbance windows and I5."""
        if not (self.dirty or self._group_records or self._universe_dirty):
            return
        if self._universe_dirty:
            self._recompute_universe()
        if self._group_records:
            self._group_records = False
            self._check_group()
        if self.dirty and (self._open or self.now >= self.quiet_at):
            self.dirty = False
            if self.converged():
                self.note_converged()
                if self.now >= self.quiet_at and self.end_at is not None and \
                        self.now >= (self.scenario.end_ms or 0):
                    self.end_at = self.now  # converged after the faults stopped: done
            else:
                self.converged_at = None

    def _check_group(self) -> None:
        g = self._group()
        if g is not None:
            ge, ae = g.group_epoch, g.assignment_epoch
            pe, pa = self._epochs
            if (ge, ae) != (pe, pa):
                if ge < pe or ae < pa:
                    raise Violation("I3", f"group epoch {pe}->{ge} / assignment epoch {pa}->{ae} "
                                          f"decreased")
                if ae > ge:
                    raise Violation("I3", f"assignment epoch {ae} > group epoch {ge}")
                self._epochs = (ge, ae)
            if self._target_dirty:
                self._target_dirty = False
                if ae == ge:
                    self.check_target(g)

    def check_target(self, g: ConsumerGroup) -> None:
        """I2: the installed target assigns every subscribed partition exactly once, to an
        existing member subscribed to its topic."""
        self.stats["i2_checks"] += 1
        meta = g.subscription_metadata
        by_id = {t.topic_id: t for t in meta.values()}
        subscribed_topics: set[UUID] = set()
        subs: dict[str, frozenset[UUID]] = {}
        if self._sub_ids[0] is not meta:  # the coordinator replaces it, never mutates it
            self._sub_ids = (meta, {})
        ids_of = self._sub_ids[1]
        for mid in sorted(g.members):
            m = g.members[mid]
            key = (m.subscribed_topic_names, m.subscribed_topic_regex)
            ids = ids_of.get(key)
            if ids is None:
                ids = ids_of[key] = subscribed_topic_ids(*key, meta)
            subs[mid] = ids
            subscribed_topics |= ids
        assigned: dict[UUID, set[int]] = {}
        for mid in sorted(g.target_assignment):
            if mid not in g.members:
                raise Violation("I2", f"the target assigns partitions to {self._who(mid)}, not a "
                                      f"member")
            for t, ps in g.target_assignment[mid].items():
                if not ps:
                    continue
                if t not in subs[mid]:
                    raise Violation("I2", f"the target gives {self._who(mid)} partitions of "
                                          f"{self.topic_names.get(t, t)} it does not subscribe to")
                n = by_id[t].num_partitions if t in by_id else -1
                if min(ps) < 0 or max(ps) >= n:
                    bad = sorted(q for q in ps if not 0 <= q < n)[0]
                    raise Violation("I2", f"the target assigns {self._tp((t, bad))}, not a "
                                          f"partition of the subscribed metadata")
                have = assigned.setdefault(t, set())
                twice = have & ps
                if twice:
                    q = min(twice)
                    other = next(o for o in sorted(g.target_assignment)
                                 if q in g.target_assignment[o].get(t, ()) and o != mid)
                    raise Violation("I2", f"the target assigns {self._tp((t, q))} twice "
                                          f"({self._who(other)}, {self._who(mid)})")
                have |= ps
        for t in sorted(subscribed_topics, key=lambda u: u.bytes):
            n = by_id[t].num_partitions
            have = assigned.get(t, set())
            if len(have) != n:
                q = min(set(range(n)) - have)
                raise Violation("I2", f"the target at epoch {g.assignment_epoch} leaves "
                                      f"{self._tp((t, q))} unassigned")

    # ================================================================== I6

    def _expected_commit_error(self, req: OffsetCommitRequest) -> int:
        g = self._group()
        m = g.members.get(req.member_id) if g is not None else None
        if m is None:
            return int(_E.unknown_member_id)
        if req.generation_id_or_member_epoch > m.member_epoch:
            return int(_E.fenced_member_epoch)
        if 0 <= req.generation_id_or_member_epoch < m.member_epoch and m.classic is None:
            return _PER_PARTITION  # KIP-1251: :meth:`_check_older_commit`
        if req.generation_id_or_member_epoch != m.member_epoch:
            return int(_E.stale_member_epoch)
        return 0

    def _older_commit_expectations(self, req: OffsetCommitRequest) -> dict[tuple[str, int], int]:
        """KIP-1251 (Kafka 4.3): what each partition of a commit at an epoch older than the
        member's must get, from the group as it is before the commit: accepted (0) where the
        member has held the partition since that epoch or earlier, else STALE_MEMBER_EPOCH.
        Topics the image does not know are left to the per-partition topic checks."""
        g = self._group()
        assert g is not None
        check = commit_check(g.members[req.member_id], req.generation_id_or_member_epoch)
        image = self.coord.shard.metadata
        out: dict[tuple[str, int], int] = {}
        for t in req.topics:
            topic = image.by_id.get(t.topic_id) if t.topic_id is not None \
                else image.by_name.get(t.name)
            if topic is None:
                continue
            for part in t.partitions:
                if 0 <= part.partition_index < topic.num_partitions:
                    ok = check(topic.topic_id, part.partition_index)
                    out[(topic.name, part.partition_index)] = 0 if ok else int(
                        _E.stale_member_epoch)
        return out

    def _check_older_commit(self, p: Proc, req: OffsetCommitRequest,
                            resp: OffsetCommitResponse, expected: dict[tuple[str, int], int],
                            fenced: bool) -> None:
        """I6 on a commit at an epoch older than the member's (KIP-1251): each partition gets
        exactly its expectation, and nothing of a fenced process is accepted."""
        self.stats["i6_checks"] += 1
        accepted = False
        for t in resp.topics:
            for pr in t.partitions:
                want = expected.get((t.name, pr.partition_index))
                if want is not None and pr.error_code != want:
                    raise Violation("I6", f"a commit from {self._committer(p, req)} got "
                                          f"{error_name(pr.error_code)} for {t.name}-"
                                          f"{pr.partition_index}, expected {error_name(want)}")
                accepted = accepted or pr.error_code == 0
        if fenced and accepted:
            raise Violation("I6", f"a commit from fenced {self._committer(p, req)} was accepted")
        self.stats["commits_accepted" if accepted else "commits_rejected"] += 1

    def _check_commit(self, p: Proc, req: OffsetCommitRequest, codes: set[int],
                      expected: int, fenced: bool) -> None:
        """I6 on a commit handled (``codes``: its answer's, :func:`_commit_codes`): one from a
        fenced process, or one the group as it was must refuse (``expected``,
        :meth:`_expected_commit_error`), is never accepted, and gets exactly the expected
        error; a current one is never refused as not the member's."""
        self.stats["i6_checks"] += 1
        accepted = 0 in codes
        if (fenced or expected) and accepted:
            raise Violation("I6", f"a commit from {'fenced ' if fenced else ''}"
                                  f"{self._committer(p, req)} was accepted, expected "
                                  f"{error_name(expected)}")
        if expected and codes != {expected}:
            raise Violation("I6", f"a commit from {self._committer(p, req)} got "
                                  f"{sorted(error_name(c) for c in codes)}, expected "
                                  f"{error_name(expected)}")
        if not expected and codes & self.fencing_codes:
            raise Violation("I6", f"a commit from {self._committer(p, req)}, current, was "
                                  f"refused with {sorted(error_name(c) for c in codes)}")
        if accepted:
            self.stats["commits_accepted"] += 1
        else:
            self.stats["commits_rejected"] += 1
            if fenced:
                self.stats["zombie_commits_rejected"] += 1

    def _committer(self, p: Proc, req: OffsetCommitRequest) -> str:
        """Who sent a commit, for an I6 violation (built only when one is raised)."""
        return f"{p.name} (member {req.member_id}, {self.epoch_word} " \
               f"{req.generation_id_or_member_epoch})"

    # ================================================================== universe, convergence

    def on_image_changed(self) -> None:
        self._universe_dirty = True

    def _recompute_universe(self) -> None:
        self._universe_dirty = False
        image = self.image
        subs = sorted({(p.topics, p.regex) for p in self.procs.values()
                       if p.alive and p.member is not None and p.member.state not in _LEFT},
                      key=repr)
        key = (id(image), tuple(subs))
        if key == self._universe_key:
            return
        self._universe_key = key
        names: set[str] = set()
        for topics, regex in subs:
            if topics:
                names.update(t for t in topics if t in image.by_name)
            if regex:
                names.update(regex_matches(regex, sorted(image.by_name)))
        u = frozenset((image.by_name[n].topic_id, i) for n in names
                      for i in range(image.by_name[n].num_partitions))
        self.universe = u
        self.set_unowned(sum(1 for tp in u if tp not in self.legit))

    def _proc_converged(self, p: Proc, members: dict[str, Any], epoch: int) -> bool:
        m = p.member
        if m.state is not MemberState.STABLE or m.member_epoch != epoch:
            return False
        cm = members.get(m.member_id)
        if cm is None or not cm.is_reconciled_to(epoch) or cm.partitions_pending_revocation:
            return False
        # ... and no subscription change the coordinator has not seen yet
        return cm.subscribed_topic_regex == m.subscribed_regex and (
            m.subscribed_topics is None or cm.subscribed_topic_names == m.subscribed_topics)

    def settled(self) -> bool:
        """Nothing is pending that will still change the group by itself: the coordinator is
        up, nobody is cut off, no restart is due, and no request of a dead incarnation (a
        process that crashed or exited since it sent it) is still on its way to the
        coordinator. Such a request still arrives and is handled (the bytes were sent): a
        join of a crashed process makes the coordinator add a member nobody runs, which only
        its session timeout removes. Requests of live processes need no test: what they may
        still change shows in their member's state (joining, leaving, an ack pending)."""
        if not self.coord.up or self.network.cut or self.pending_restarts:
            return False
        procs = self.procs
        for name, gen in self._requests_in_flight:
            p = procs[name]
            if p.gen != gen or not p.alive:
                return False
        return True

    def converged(self) -> bool:
        """Every live process is a member at the group epoch owning exactly its target, the
        coordinator has no other member, nothing is pending (:meth:`settled`). Cheap tests
        first; the process that failed the last check is tested first (it usually still
        blocks)."""
        if not self.settled():
            return False
        g = self._group()
        if g is None or not g.members:  # an empty group converged once nobody is running
            return not any(p.member.state not in _LEFT for p in self.live())
        members = g.members
        epoch = g.group_epoch
        if epoch != g.assignment_epoch:
            return False
        left = _LEFT
        b = self._blocker
        if b is not None and b.alive and b.member.state not in left \
                and not self._proc_converged(b, members, epoch):
            return False
        n = 0
        for p in self.live():
            if p.member.state in left:
                continue
            n += 1
            if not self._proc_converged(p, members, epoch):
                self._blocker = p
                return False
        self._blocker = None
        if n != len(members):
            return False
        for p in self.live():
            m = p.member
            if m.state in left:
                continue
            if self.is_fenced(p):
                return False
            target = g.target_of(m.member_id)
            if sum(len(ps) for ps in target.values()) != len(m.owned):
                return False
            if self.coord_held.get(m.member_id, frozenset()) != m.owned:
                return False
        return True

    def check_convergence(self, final: bool) -> None:
        if not final:
            return
        if self.end_at is not None and self.now >= self.end_at and not self.converged():
            raise Violation("I5", f"not converged {self.now - self.quiet_at} ms after the faults "
                                  f"stopped (bound {self.i5_bound()} ms): "
                                  f"{self._convergence_gap()}")

    def _convergence_gap(self) -> str:
        return self.describe_gap(self._group())

    def describe_gap(self, g: Any) -> str:
        """What keeps group ``g`` from convergence, for an I5 violation: the group
        (:meth:`gap_group`), then the members (:meth:`gap_members`)."""
        if not self.coord.up:
            return "coordinator down"
        if g is None:
            return "no group"
        return "; ".join([self.gap_group(g), *self.gap_members(g)])

    def gap_group(self, g: Any) -> str:
        return (f"group epoch {g.group_epoch}, assignment epoch {g.assignment_epoch}, "
                f"state {g.state().value}")

    def gap_members(self, g: Any) -> list[str]:
        """Each member of the coordinator or live process: its epoch on either side."""
        parts = []
        live = {p.member.member_id: p for p in self.live() if p.member.state not in _LEFT}
        for mid in sorted(set(g.members) | set(live)):
            cm = g.members.get(mid)
            p = live.get(mid)
            mine = "-" if p is None else f"e={p.member.member_epoch} {p.member.state.value}"
            parts.append(f"{p.name if p else '(no process)'}/{mid}: coordinator "
                         f"{'-' if cm is None else f'e={cm.member_epoch} {cm.state.name}'}, "
                         f"{self.member_word} {mine}")
        return parts

    def i5_bound(self) -> int:
        """The I5 bound of the module docstring (L includes the reorder spike)."""
        sc = self.scenario
        lat = self.scenario.latency.max_ms * (1 + REORDER_SPIKE)
        bound = (sc.session_timeout_ms + sc.restart_delay_ms + sc.request_timeout_ms
                 + _RETRY_BACKOFF_MAX_MS + 3 * sc.heartbeat_interval_ms + 20 * lat)
        if self.variant == CLIENT_VARIANT:
            bound += (sc.rebalance_timeout_ms + sc.request_timeout_ms + _RETRY_BACKOFF_MAX_MS
                      + 2 * sc.heartbeat_interval_ms + 10 * lat)
        return int(bound)

    # ================================================================== full check

    def full_check(self) -> None:
        """Every invariant on the whole state (checkpoints, the end, ``full_checks`` runs).

        A quick pass (:meth:`_quick_full_check`) first finds out whether a check fails; only
        when one does do the checks run one by one in a canonical order (:meth:`_full_check`),
        which reports the violation, the same in every process."""
        try:
            self._quick_full_check()
        except Violation:
            self._full_check(ordered=True)
            raise

    def _quick_full_check(self) -> None:
        """The checks of :meth:`_full_check`, failing in exactly the same states (and calling
        :meth:`check_target` and :meth:`check_process` at the same points), on whole sets in
        hash order: a (topic id, partition) is hashed once on the coordinator's side and never
        on the processes' side (its hash is a Python call, ``UUID.__hash__``, while
        ``dict.fromkeys``, ``dict.update`` and comparisons of dicts and frozensets reuse the
        hashes they store). Its violations only say that a check fails."""
        g = self._group()
        if g is not None:
            holders: dict[Any, str] = {}
            ae = g.assignment_epoch
            for mid, m in g.members.items():
                if m.member_epoch > ae:
                    raise Violation("I3", "a member epoch is ahead of the assignment epoch")
                held = list(self.coordinator_holdings(m))
                n = len(holders)
                holders.update(dict.fromkeys(held, mid))
                if len(holders) != n + len(held):  # held twice, by two members or by one
                    raise Violation("I1", "a resource is held twice (coordinator)")
            if holders != self.coord_holder:
                raise Violation("I1", "the coordinator's holdings differ from the ones its records "
                                      "describe")
            if g.group_epoch == ae and g.members:
                self.check_target(g)
        seen: dict[Any, Proc] = {}
        for p in self.live():
            self.check_process(p)
            if self.is_fenced(p):
                continue
            consuming = p.consuming
            n = len(seen)
            seen.update(dict.fromkeys(consuming, p))
            if len(seen) != n + len(consuming):
                raise Violation("I1", "a resource is consumed by two processes, neither fenced")
            if not self.holds_all(p, consuming):
                raise Violation("I1", "a process consumes what the coordinator does not hold "
                                      "for it")

    def holds_all(self, p: Proc, resources: Partitions) -> bool:
        """Whether :meth:`check_holding` passes for every one of ``resources`` (the quick
        full check's): the coordinator holds each for ``p``'s member. ``coord_held`` has, for
        each member, exactly the resources ``coord_holder`` gives it (:meth:`_current_record`
        updates both together), so a subset test of two frozensets answers it."""
        return resources <= self.coord_held.get(p.member.member_id, frozenset())

    def _full_check(self, ordered: bool) -> None:
        order = self.ordered if ordered else _as_is
        g = self._group()
        if g is not None:
            holders: dict[TopicIdPartition, str] = {}
            for mid in sorted(g.members) if ordered else g.members:
                m = g.members[mid]
                if m.member_epoch > g.assignment_epoch:
                    raise Violation("I3", f"{self.member_word} {self._who(mid)} epoch "
                                          f"{m.member_epoch} > assignment epoch "
                                          f"{g.assignment_epoch}")
                for tp in order(self.coordinator_holdings(m)):
                    if tp in holders:
                        raise Violation("I1", f"{self._tp(tp)} is held by {self._who(holders[tp])} "
                                              f"and {self._who(mid)} (coordinator)")
                    holders[tp] = mid
            if holders != self.coord_holder:
                raise Violation("I1", "the coordinator's holdings differ from the ones its records "
                                      "describe")
            if g.group_epoch == g.assignment_epoch and g.members:
                self.check_target(g)
        self.check_processes(order)

    def ordered(self, resources: Iterable[Any]) -> list[Any]:
        """Resources in a canonical order (the same in every process: no hash order)."""
        return sorted(resources, key=lambda tp: (tp[0].bytes, tp[1]))

    def coordinator_holdings(self, m: Any) -> Iterable[Any]:
        """What the coordinator's member ``m`` holds (assigned or pending revocation)."""
        return m.owned_partitions()

    def check_processes(self, order: Callable[[Iterable[Any]], Iterable[Any]]) -> None:
        """I1 on the processes' side over the whole state: no resource consumed by two
        unfenced processes, each checked by :meth:`check_holding` (``order``: the order in
        which a process's resources are checked)."""
        seen: dict[Any, Proc] = {}
        consumed = self.verbs[0]
        for p in self.live():
            self.check_process(p)
            if self.is_fenced(p):
                continue
            for tp in order(p.consuming):
                if tp in seen:
                    raise Violation("I1", f"{self._tp(tp)} is {consumed} by {seen[tp].name} and "
                                          f"{p.name}, neither fenced")
                seen[tp] = p
                self.check_holding(p, tp)

    def check_process(self, p: Proc) -> None:
        """A check of one live process before :meth:`check_processes` looks at what it
        consumes (``sim.classic_connect``: a worker silent for too long)."""

    def check_holding(self, p: Proc, tp: Any) -> None:
        """An unfenced process consumes only what the coordinator holds for it."""
        if self.coord_holder.get(tp) != p.member.member_id:
            raise Violation("I1", f"{p.name} {self.verbs[1]} {self._tp(tp)} which the "
                                  f"coordinator does not hold for it")

    def checkpoint(self) -> None:
        super().checkpoint()
        if self.coord.up:
            self.full_check()

    def protocol_summary(self) -> dict[str, Any]:
        live = self.live()
        return {"members_live": len(live), "processes": len(self.procs), **self.stats}
