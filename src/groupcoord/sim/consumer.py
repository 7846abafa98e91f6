"""Consumer groups (KIP-848) in the simulator: real members against the real coordinator.

Each simulated *process* runs a real :class:`groupcoord.client.consumer.ConsumerMember`
(sans-IO) against the real :class:`Shard`, through the faulty network of ``sim.network``. A
process has a stable name (``c1``, ``c2``, ...; also the instance id of a static member); each
(re)start is a new incarnation with a new member id. Processes auto-commit the positions of
the partitions they own every ``commit_interval_ms`` and on revocation; a process stopped by a
fatal error (UNRELEASED_INSTANCE_ID, say) is restarted after ``restart_delay_ms``, as an
orchestrator would. A *slow* process defers the completion of its revocations (the listener's
``DEFER``) by ``delay_ms``.

**Invariants checked after every step** (docs/design.md), incrementally on what the step changed,
and in full (:meth:`ConsumerSimulation.full_check`) at every checkpoint and at the end
(the checks are in ``sim/consumer_invariants.py``, I5 in ``sim/consumer_convergence.py``, the
process model in ``sim/process.py``; this module drives the members):

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
  protocol: STALE_MEMBER_EPOCH as a whole); a commit from a fenced process must never be
  accepted, and one
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

**Variant ``client``** (KIP-848 "Client-Side Assignor"): the members advertise a
local ``uniform`` assignor (:class:`groupcoord.client.assignors.ClientSideUniformAssignor`) instead of
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

import random
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from groupcoord.client.assignors import ClientSideUniformAssignor
from groupcoord.client.consumer import (
    DEFER,
    ClientMemberState,
    ConsumerMember,
    Partitions,
    RebalanceListener,
    TopicIdPartition,
)
from groupcoord.coordinator.messages import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.result import DEFERRED, Result
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.application import Application
from groupcoord.sim.consumer_convergence import ConsumerConvergence
from groupcoord.sim.consumer_invariants import PER_PARTITION
from groupcoord.sim.members import (
    assign_response_kind,
    describe_request,
    fatal_reason,
    heartbeat_detail,
    in_flight,
    loading_response,
)
from groupcoord.sim.process import _LEFT, _RETRY_BACKOFF_MAX_MS, CLIENT_VARIANT, Proc, _Msg
from groupcoord.sim.scenario import Event, pick_owner, start_offsets_ms

_E = ErrorCode


def _commit_codes(resp: OffsetCommitResponse) -> set[int]:
    """The error codes of a commit answer's partitions (0 among them: some were accepted)."""
    return {pr.error_code for t in resp.topics for pr in t.partitions}



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



class ConsumerSimulation(ConsumerConvergence):
    """KIP-848 consumer groups under faults (protocol ``consumer``, variants = assignors)."""

    protocol = "consumer"
    #: Whether the processes commit offsets (auto-commits, commits on revocation): Connect
    #: workers commit none.
    commits_offsets = True
    #: The statistic that counts revoked resources (None: not counted).
    revoked_stat: str | None = None
    #: The lowest member epoch of a join's first answer that draws a heartbeat phase.
    first_epoch = 1

    def setup(self) -> None:
        sc = self.scenario
        self.gid = sc.group_id
        #: The members' applications (``sim.application``; nothing runs when idle).
        self.app = Application(self)
        self.procs: dict[str, Proc] = {}
        self._names: set[str] = set()  # every name used or reserved
        self._live: list[Proc] | None = None  # live processes by index (cache)
        self.by_mid: dict[str, Proc] = {}
        #: The member last asked to compute the assignment (name, member id): :meth:`leader`.
        self._assigner: tuple[str, str] | None = None
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
        #: Bumped at every change of ``legit`` (its writers in ``sim.consumer_invariants`` and
        #: ``sim.classic``): :meth:`assignment_balanced` keeps its answer while it holds.
        self.legit_version = 0
        self._balanced_memo: tuple[int, Any, list[Proc], bool] | None = None
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
        #: How many of those incarnations are dead (stopped or restarted since): kept as the
        #: keys come and go and as processes stop, so that :meth:`settled` reads one number
        #: instead of every request in flight after every step.
        self._dead_in_flight = 0
        self.stats: dict[str, int] = {
            "heartbeats": 0, "commits": 0, "commits_accepted": 0, "commits_rejected": 0,
            "zombie_commits_rejected": 0, "fatal_restarts": 0, "fenced": 0, "timeouts": 0,
            "spawned": 0, "crashed": 0, "left": 0, "slow_revocations": 0, "i1_checks": 0,
            "i2_checks": 0, "i6_checks": 0}
        if self.variant == CLIENT_VARIANT:
            self.stats.update({"prepares": 0, "installs": 0, "assign_errors": 0})
        sc_topics = sc.topics_subscribed() if sc.regex is None else None
        for i, at in enumerate(start_offsets_ms(sc, self.seed)):
            self.at(at, self._spawn_event, (f"c{i + 1}", sc_topics, sc.regex))
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
        self.app.spawned(p)
        p.next_commit_at = self.now + sc.commit_interval_ms \
            if sc.commit_interval_ms and self.commits_offsets else None
        self.stats["spawned"] += 1
        self.trace("start", name, f"#{p.gen}", f"member {p.member.member_id}")
        if regex is not None:
            p.member.subscribe(regex=regex, now_ms=self.now)
        else:
            p.member.subscribe(topics or (), now_ms=self.now)
        self._universe_dirty = True
        p.ready_at = self.now + self.app.startup_ms()
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
            local_assignors=(ClientSideUniformAssignor(),) if client else ())

    def _stop(self, p: Proc, why: str) -> None:
        """The process is gone: it consumes nothing from now on."""
        p.alive = False
        if (p.name, p.gen) in self._requests_in_flight:
            self._dead_in_flight += 1
        self._live = None
        p.tick_at = None
        self._stop_consuming(p, p.consuming)
        p.consuming = frozenset()
        self.app.stopped(p)
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

    def leader(self) -> Proc | None:
        """The member a scenario's ``@leader`` names, at this moment. Consumer and connect
        groups have no leader in the classic sense; with a client-side assignor (the Connect
        draft, KIP-848's ShouldComputeAssignment) it is the running member the coordinator
        last chose to compute the assignment. Otherwise (KIP-848 with a server-side assignor:
        nobody leads) it is the running member that started first, so the event is still
        well defined. ``sim.classic`` answers with the classic group's leader."""
        if self._assigner is not None:
            name, mid = self._assigner
            p = self.procs.get(name)
            if p is not None and p.alive and not p.leaving and p.member.member_id == mid:
                return p
        live = self.live()
        return live[0] if live else None

    def follower(self) -> Proc | None:
        """The member a scenario's ``@follower`` names: the first running member (in start
        order) that is not :meth:`leader`."""
        lead = self.leader()
        return next((p for p in self.live() if p is not lead), None)

    def resolve_members(self, names: Iterable[str]) -> list[str]:
        out: list[str] = []
        for n in names:
            if n in ("@leader", "@follower"):
                who = self.leader() if n == "@leader" else self.follower()
                if who is not None and who.name not in out:
                    out.append(who.name)
            elif n == "@owner":  # a member that holds a partition now (sim.scenario)
                owners = [q.name for q in self.live() if q.consuming and not q.leaving]
                if (w := pick_owner(owners, self.seed, self.now)) is not None and w not in out:
                    out.append(w)
            elif n in ("any", "*", "all"):
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
        lead = self.leader()
        names = self.resolve_members([ev["member"]])
        p = self.procs.get(names[0]) if names else None
        if p is None or not p.alive:
            self.noop(names[0] if names else "", f"{ev.kind} {ev['member']}: not running")
            return None
        self.event_targets.append({"at_ms": self.now, "kind": ev.kind, "member": p.name,
                                   "leader": None if lead is None else lead.name})
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
        elif k in ("crash", "kill"):  # a kill is a crash: no membership tied to a connection
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
        """Let the member send what is due and auto-commit when its interval is due (on its
        own timer, as the Java consumer's auto-commit: ``auto.commit.interval.ms``, not at the
        next heartbeat, which made every interval under a heartbeat one heartbeat), and
        schedule its next wake-up."""
        m = p.member
        now = self.now
        if now < p.ready_at:  # still starting: its first request goes once it is up
            if p.tick_at != p.ready_at:
                p.tick_at = p.ready_at
                self.at(p.ready_at, self._tick, (p, p.gen))
            return
        timeouts = m.stats["timeouts"]
        state_before = m.state
        req = m.poll_request(now)
        while req is not None:  # besides a heartbeat, an assigner can owe a Prepare or Install
            self._send(p, req, m.last_correlation_id)
            req = m.poll_request(now)
        if m.state is not state_before:
            self.dirty = True
        if m.stats["timeouts"] != timeouts:
            self.stats["timeouts"] += 1
            self.trace("timeout", p.name, m.member_epoch)
        c = p.next_commit_at  # the auto-commit's own timer, heartbeat or not
        if c is not None and now >= c:
            p.next_commit_at = now + self.scenario.commit_interval_ms
            if p.consuming and not p.leaving:
                self._commit(p, p.consuming, "auto")
        if m.owned is not p.consuming:
            self._sync(p)
        if p.leaving and m.state is ClientMemberState.UNJOINED:
            self.stats["left"] += 1
            self._stop(p, "exit")
            return
        self._schedule(p)

    def _schedule(self, p: Proc) -> None:
        if not p.alive:
            return
        d = p.member.next_deadline()
        c = p.next_commit_at
        if c is not None and (d is None or c < d):
            d = c
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
            n = flying.get(key, 0)
            if not n and not p.alive:
                self._dead_in_flight += 1
            flying[key] = n + 1
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
        self.app.commit_sent(p, req, parts, why)
        self._send(p, req, -1)

    def on_revoked(self, p: Proc, parts: Partitions) -> object:
        """The process gives up what it owned: commits the positions (when the protocol's
        processes commit offsets); a slow one defers the end of the revocation (``DEFER``,
        the same object for consumers and workers) by :meth:`slow_revocation_ms`."""
        if self.revoked_stat is not None:
            self.stats[self.revoked_stat] += len(parts)
        self.trace("revoke", p.name, p.member.member_epoch, parts)
        if self.app.on:  # the application's callback (``sim.application``)
            slow = 0
            if self.now < p.slow_until and p.slow_delay > 0:
                self.stats["slow_revocations"] += 1
                slow = self.slow_revocation_ms(p)
            return self.app.revoke(p, parts, slow)
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
        self.trace("revoked", p.name, p.member.member_epoch, "deferred revocation completed")
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
                self._dead_in_flight -= 1
                self.dirty = True  # the last request of a dead incarnation: test convergence
        if not self._arrives(msg):
            return
        p = msg.proc
        req = msg.body
        codes = None
        if isinstance(req, OffsetCommitRequest):
            expected = self._expected_commit_error(req)
            older = self._older_commit_expectations(req) if expected == PER_PARTITION else None
            fenced = msg.gen == p.gen and p.member is not None \
                and p.member.member_id == req.member_id and self.is_fenced(p)
            res = self._handle(msg)
            self.coordinator_result(res)
            codes = _commit_codes(res.response)
            if older is not None:
                self._check_older_commit(p, req, res.response, older, fenced)
            else:
                self._check_commit(p, req, codes, expected, fenced)
            self.app.commit_answered(req, res.response, codes)
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
        if m.state is ClientMemberState.FATAL:
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
                and m.state not in _LEFT and m.state is not ClientMemberState.LEAVING:
            self._accept_success(p, req, body, msg.inc, before)
        accepted = m.on_response(body, self.now, msg.cid)
        if not accepted:
            self.trace("hb< stale", p.name, body.member_epoch)
        elif body.error_code:
            self.trace("hb<", p.name, before, error_name(body.error_code))
            if body.error_code in (_E.fenced_member_epoch, _E.unknown_member_id):
                self.stats["fenced"] += 1
        else:
            if getattr(body, "should_compute_assignment", False):
                self._assigner = (p.name, m.member_id)  # chosen to compute (see leader())
            detail = heartbeat_detail(body, before)
            if detail is not None:
                self.trace("hb<", p.name, body.member_epoch, detail)
        if m.state is not state_before or m.member_epoch != before:
            self.dirty = True
            if state_before is ClientMemberState.JOINING and m.state is not \
                    ClientMemberState.JOINING and m.state not in _LEFT \
                    and m.member_epoch >= self.first_epoch:
                self.spread_heartbeat(p, m.member_epoch)  # a KIP-848 join: its own phase
        self._settle(p)

    def heartbeat_phase_ms(self, p: Proc, join: int) -> int:
        """The shift of ``p``'s heartbeat phase at its join ``join`` (a generation or member
        epoch): uniform in ``[0, heartbeat_spread_ms)``, drawn from the seed per member name,
        incarnation and join (not per call sequence: a run and its control draw the same
        phase for the same join). 0 when the scenario spreads nothing.

        The field's phases spread: the Java consumer restarts its heartbeat timer when the
        JoinGroup response reaches it (``AbstractCoordinator``: the heartbeat thread is enabled
        and its timers reset), but the responses of one round reach the members over a network
        round, the heartbeat thread wakes only every ``retry.backoff.ms`` (100 ms) to see if a
        beat is due, and a GC or scheduling pause delays a beat; librdkafka restarts its timer
        at the join as well. A KIP-848 member's phase is its own (KIP-848: each member
        heartbeats on its own interval from its first answer). The timer keeps the shifted
        phase until the next join, since each beat is timed from the previous answer."""
        spread = self.scenario.heartbeat_spread_ms
        if spread <= 0:
            return 0
        return random.Random(f"heartbeat:{self.seed}:{p.name}:{p.gen}:{join}").randrange(spread)

    def spread_heartbeat(self, p: Proc, join: int) -> None:
        """Shift ``p``'s next heartbeat by :meth:`heartbeat_phase_ms` (traced when it moves)."""
        off = self.heartbeat_phase_ms(p, join)
        delay = getattr(p.member, "delay_heartbeat", None)  # consumers and Connect workers
        if off and delay is not None:
            delay(off)
            self.trace("hb phase", p.name, join, f"+{off} ms")

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

    # ================================================================== checkpoints, summary

    def checkpoint(self) -> None:
        super().checkpoint()
        if self.coord.up:
            self.full_check()

    def protocol_summary(self) -> dict[str, Any]:
        live = self.live()
        return {"members_live": len(live), "processes": len(self.procs), **self.stats,
                **self.app.summary()}

    def work_totals(self) -> dict[str, float] | None:
        return self.app.totals()

    def work_recovered(self) -> bool:
        return not self.app.on or self.app.model.recovered()

    def assignment_balanced(self) -> bool:
        """Every resource has an owner and the live members' counts differ by at most one
        (Connect: connectors and tasks counted apart, as KIP-415's assignor spreads each)."""
        if self._unowned:
            return False
        live = self.live()
        if not live:
            return True
        universe = self.universe
        memo = self._balanced_memo  # the same owners, resources and live processes: same answer
        if memo is not None and memo[0] == self.legit_version and memo[1] is universe \
                and memo[2] is live:
            return memo[3]
        balanced = self._balanced(live, universe)
        self._balanced_memo = (self.legit_version, universe, live, balanced)
        return balanced

    def _balanced(self, live: list[Proc], universe: frozenset[Any]) -> bool:
        counts = {p.name: [0, 0] for p in live}
        for key, p in self.legit.items():
            if key not in universe:
                continue
            c = counts.get(p.name)
            if c is None:
                return False  # owned by a process that is gone
            c[1 if key[1] >= 0 else 0] += 1
        for kind in (0, 1):
            values = [c[kind] for c in counts.values()]
            if max(values) - min(values) > 1:
                return False
        return True

    def work_lag(self) -> float:
        return self.app.model.lag_now if self.app.on else 0.0
