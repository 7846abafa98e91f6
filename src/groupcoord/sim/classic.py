"""Classic consumer groups in the simulator: real classic members against the real coordinator.

Protocol ``classic`` (variants ``eager``, ``eager-roundrobin``: eager with the ``roundrobin``
assignor instead of ``range``, and ``cooperative``): each simulated process runs a
:class:`groupcoord.client.classic_consumer.ClassicConsumerMember` (JoinGroup / SyncGroup /
Heartbeat / LeaveGroup, the leader computing the assignment) against the classic groups of the
real :class:`Shard` (``coordinator/classic/handlers.py``), through the faulty network of
``sim.network``. Everything protocol-independent of a group of consumer processes (process
names and incarnations, the scenario's member events, the network plumbing, auto-commits and
commits on revocation, slow revocations, restarts after fatal errors, the bookkeeping of what
each process consumes, downtime and moves) is :class:`groupcoord.sim.consumer.ConsumerSimulation`,
which this class extends with the classic protocol's responses and invariants (how its requests
are traced, and answered by a loading coordinator, is ``sim.members``').

Classic specifics. JoinGroup and SyncGroup are answered late: the driver passes each request's
message as the shard's token, and answers the ``Result.completions`` of every coordinator call
(requests, timers, metadata updates) once the call's records are persisted. The live state of a
classic group is soft: a failover rebuilds the group from its last ClassicGroupMetadata record
(Stable with the committed generation, or Empty) and members find out by their errors
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a lost JoinGroup) and rejoin, as Kafka's clients do.
Members get the metadata image when it changes (a metadata refresh), which makes the leader (or
a regex subscriber) rejoin.

**Fencing.** A classic process is *fenced* when its commits would be refused: its member id is
not a member of the coordinator's live group, or its generation is not the group's generation.
A fenced process (a zombie that does not know yet) may lag behind: the generation keeps its
commits out (I6).

**Invariants checked after every step** (docs/design.md):

- **I1, coordinator view**, on each ClassicGroupMetadata record of a new generation (the
  leader's assignment): no partition assigned twice, and no partition given to one member while
  another member of that generation still claims to own it (the owned partitions of its
  ConsumerProtocolSubscription, the claim of the highest generation winning as in KIP-792;
  claims older than the previous generation are given up by their member on joining): a
  partition moves only once its owner revoked it (eager members revoke everything before
  joining, cooperative members revoke after SyncGroup and rejoin).
- **I1, members' view**: when a process starts consuming a partition (after SyncGroup) or
  becomes unfenced while consuming (a cooperative member's JoinGroup response), no other
  unfenced process may be consuming it; an unfenced process starts consuming only what the
  committed assignment gives its member id.
- **I2** on each new generation's assignment: only partitions of topics the member subscribes
  to. Completeness is I5's (the cooperative first round withholds moving partitions).
- **I3**: the committed generation never decreases; the live generation never decreases while
  one coordinator serves; a member's generation never goes down except after a reset
  (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a failover's lost generation).
- **I4**: checkpoints and failovers rebuild the shard from its log and compare digests
  (``sim.engine``; the classic digest is the committed view).
- **I5**: once the faults stop, within :meth:`ClassicConsumerSimulation.i5_bound`: the group is
  Stable, every live process is a member at the group's generation owning exactly its committed
  assignment, the group has no other member, and together they consume every subscribed
  partition (so the cooperative second round happened).
- **I6**: every OffsetCommit is checked when the coordinator handles it: accepted only from a
  member of the group at the group's generation outside CompletingRebalance (never from a
  fenced process), and never refused with a fencing error when it is one.

Not modelled: Connect's classic protocols (``connect`` protocol type), rack awareness.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from groupcoord.client.classic_consumer import ClassicConsumerMember
from groupcoord.client.consumer import ClientMemberState, TopicIdPartition
from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupState
from groupcoord.coordinator.messages import OffsetCommitRequest
from groupcoord.coordinator.records import ClassicGroupMetadataValue, Record, RecordType
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.application import PollGatedClassicConsumer
from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.engine import Violation
from groupcoord.sim.network import REORDER_SPIKE
from groupcoord.sim.process import Proc, _Msg

_E = ErrorCode
_CLASSIC = RecordType.CLASSIC_GROUP_METADATA
_OFFSET = RecordType.OFFSET_COMMIT
_LEFT = (ClientMemberState.UNJOINED, ClientMemberState.UNSUBSCRIBED, ClientMemberState.FATAL)
_FENCING_CODES = frozenset({int(_E.unknown_member_id), int(_E.illegal_generation),
                            int(_E.fenced_instance_id), int(_E.rebalance_in_progress)})
_RETRY_BACKOFF_MAX_MS = 1_000
_STABLE = ClassicGroupState.STABLE
_member_state = attrgetter("member.state")
_NAMES: dict[type, str] = {JoinGroupRequest: "join", SyncGroupRequest: "sync",
                           HeartbeatRequest: "hb", LeaveGroupRequest: "leave"}


def _cm(p: Proc) -> ClassicConsumerMember:
    """The classic member of a process (``Proc.member`` is typed for the KIP-848 one)."""
    m: Any = p.member
    return m


#: Decoded subscriptions and assignments by their bytes (the same bytes decode to the same
#: value; the checks only read what they get): a new generation's I1/I2 check and the holders
#: decode every member's, and under cooperative rebalancing most members join with, and get,
#: what they had. Bounded: cleared when full.
_CLAIMS: dict[bytes, tuple[frozenset[str], dict[str, list[int]], int]] = {}
_ASSIGNED: dict[bytes, dict[str, list[int]]] = {}
_DECODED_SIZE = 4096


def _claims(metadata: bytes | None) -> tuple[frozenset[str], dict[str, list[int]], int]:
    """(topics, owned partitions, generation) of a ConsumerProtocolSubscription."""
    raw = metadata or b""
    hit = _CLAIMS.get(raw) if type(raw) is bytes else None
    if hit is None:
        try:
            s = decode_subscription(raw)
            hit = (frozenset(s.topics), s.owned_partitions, s.generation_id)
        except ConsumerProtocolError:
            hit = (frozenset(), {}, -1)
        if type(raw) is bytes:
            if len(_CLAIMS) >= _DECODED_SIZE:
                _CLAIMS.clear()
            _CLAIMS[raw] = hit
    return hit


def _assigned(raw: bytes) -> dict[str, list[int]]:
    hit = _ASSIGNED.get(raw) if type(raw) is bytes else None
    if hit is None:
        try:
            hit = decode_assignment(raw).partitions if raw else {}
        except ConsumerProtocolError:
            hit = {}
        if type(raw) is bytes:
            if len(_ASSIGNED) >= _DECODED_SIZE:
                _ASSIGNED.clear()
            _ASSIGNED[raw] = hit
    return hit


class ClassicConsumerSimulation(ConsumerSimulation):
    """Classic consumer groups under faults (protocol ``classic``: ``eager``, ``cooperative``)."""

    protocol = "classic"
    revoked_stat = "partitions_revoked"
    epoch_word = "generation"
    fencing_codes = _FENCING_CODES

    def setup(self) -> None:
        #: The last committed value of the group, the live view's (generation, members) as
        #: last seen (fencing changes), and the live generation per coordinator generation.
        self.committed: ClassicGroupMetadataValue | None = None
        self._fence_key: tuple[int, int] | None = None
        self._fence_members: frozenset[str] = frozenset()
        #: The group and its ``members_version`` when ``_fence_members`` was last seen equal
        #: to its members (a strong reference: no other group can take its place by ``id``).
        self._fence_group: ClassicGroup | None = None
        self._fence_version = -1
        self._live_gen = (-1, -1)
        #: (process, incarnation) -> the coordinator generation that gave it its generation
        #: (a failover loses the generations it had not committed: they may go down then).
        self._adopted_under: dict[tuple[str, int], int] = {}
        #: member id -> (assignment bytes, metadata image, its partitions) of the last
        #: :meth:`_committed_of` (converged() asks after every step that changed something).
        self._committed_memo: dict[str, tuple[bytes, MetadataImage,
                                              frozenset[TopicIdPartition]]] = {}
        super().setup()
        self.stats.update({"joins": 0, "syncs": 0, "leaves": 0, "rebalances": 0,
                           "generations": 0, "partitions_revoked": 0,
                           "i3_checks": 0})

    # ================================================================== members

    def new_member(self, name: str, instance_id: str | None) -> ClassicConsumerMember:
        sc = self.scenario
        protocol, _, assignor = (self.variant or "eager").partition("-")
        m = PollGatedClassicConsumer(
            sc.group_id, protocol=protocol, assignor=assignor or None, instance_id=instance_id,
            client_id=name, session_timeout_ms=sc.session_timeout_ms,
            rebalance_timeout_ms=sc.rebalance_timeout_ms,
            heartbeat_interval_ms=sc.heartbeat_interval_ms,
            request_timeout_ms=sc.request_timeout_ms, retry_backoff_max_ms=_RETRY_BACKOFF_MAX_MS)
        m.update_metadata(self.image.by_name.values(), self.now)
        return m

    def on_image_changed(self) -> None:
        super().on_image_changed()
        self._rebuild_holders()
        for p in list(self.live()):
            _cm(p).update_metadata(self.app.classic_view(p), self.now)
            self._drive(p)

    def is_fenced(self, p: Proc) -> bool:
        g = self._classic()
        m = _cm(p)
        return g is None or m.member_id not in g.members or m.generation != g.generation_id

    def _classic(self) -> ClassicGroup | None:
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        return g if isinstance(g, ClassicGroup) else None

    def group_epoch(self) -> int:
        g = self._classic()
        return g.generation_id if g is not None else max(self._live_gen[1], 0)

    # ================================================================== network

    def _handle(self, msg: _Msg) -> Result[Any]:
        """JoinGroup and SyncGroup may be parked: the message is the token the coordinator
        completes them with (:meth:`coordinator_result`)."""
        return self.coord.shard.handle(msg.body, self.now, msg)

    def _incarnation(self, req: Any) -> int:
        return -1  # classic members are fenced by their generation (:meth:`is_fenced`)

    def coordinator_result(self, res: Result[Any]) -> None:
        """Persist, then answer the requests the call completed (parked JoinGroup/SyncGroup);
        then look for members the call fenced."""
        super().coordinator_result(res)
        for token, response in res.completions:
            if isinstance(token, _Msg):
                self._respond(token, response, -1)
        self._check_fencing()

    def on_group_response(self, msg: _Msg) -> None:
        """The answer to a JoinGroup, SyncGroup, Heartbeat or LeaveGroup: the member handles
        it first (what it changed, lost partitions or an assignment, is applied at once), then
        client-side I3 and I1 on a JoinGroup adopted (:meth:`_joined`)."""
        p = msg.proc
        body = msg.body
        m = _cm(p)
        before = m.generation
        state_before = m.state
        inflight = m.inflight
        req = inflight.request if inflight is not None and inflight.correlation_id == msg.cid \
            else None
        accepted = m.on_response(body, self.now, msg.cid)
        self._sync(p)  # what the response changed (lost partitions, an assignment) first
        kind = _NAMES.get(type(req)) if req is not None else None
        if not accepted or kind is None:
            self.trace("resp stale", p.name, before)
        else:
            code = getattr(body, "error_code", 0)
            if code:
                self.trace(f"{kind}<", p.name, before, error_name(code))
                if code in (_E.illegal_generation, _E.unknown_member_id):
                    self.stats["fenced"] += 1
            elif isinstance(body, JoinGroupResponse):
                self.by_mid[m.member_id] = p
                self.trace("join<", p.name, m.generation,
                           "leader" if body.leader == m.member_id else "")
                self._joined(p, before)
            elif isinstance(body, SyncGroupResponse):
                self.stats["rebalances"] += 1
                self.trace("sync<", p.name, m.generation, self.describe_assignment(body.assignment))
                self.spread_heartbeat(p, m.generation)  # the timer restarts at the join
        if m.state is not state_before or m.generation != before:
            self.dirty = True
        self._settle(p)

    def describe_assignment(self, raw: bytes) -> str:
        """A SyncGroup assignment for the trace (``sim.classic_connect`` reads Connect's)."""
        return ",".join(f"{t}:{len(ps)}" for t, ps in sorted(_assigned(raw).items())) or "-"

    def leader(self) -> Proc | None:
        """The classic group's leader at the coordinator (the member whose JoinGroup response
        names it leader and who computes the assignment), if it is running; while the
        coordinator is down or the group has none, what :meth:`ConsumerSimulation.leader`
        falls back to."""
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        lid = getattr(g, "leader_id", None)
        p = self.by_mid.get(lid) if lid else None
        if p is not None and p.alive and not p.leaving and p.member.member_id == lid:
            return p
        return super().leader()

    def _joined(self, p: Proc, before: int) -> None:
        """A JoinGroup response adopted: client-side I3, and I1 for what a cooperative member
        keeps consuming into the new generation (it may have become unfenced)."""
        m = _cm(p)
        self.stats["i3_checks"] += 1
        key = (p.name, p.gen)
        if before >= 0 and m.generation < before and \
                self._adopted_under.get(key) == self.coord.generation:
            raise Violation("I3", f"{p.name} (member {m.member_id}): generation would go from "
                                  f"{before} down to {m.generation} without a reset")
        self._adopted_under[key] = self.coord.generation
        if not p.consuming or self.is_fenced(p):
            return
        legit = self.legit
        gained = 0
        for tp in self.ordered(p.consuming):
            for q in self.consumers.get(tp, ()):
                if q is not p and q.alive and not self.is_fenced(q):
                    raise Violation("I1", f"{self._tp(tp)} is consumed by {q.name} (member "
                                          f"{q.member.member_id}, generation "
                                          f"{_cm(q).generation}) and by {p.name} (member "
                                          f"{m.member_id}) now in generation {m.generation}")
            if legit.get(tp) is not p:
                if tp not in legit and tp in self.universe:
                    gained += 1
                legit[tp] = p
                self.legit_version += 1
        if gained:
            self.set_unowned(self._unowned - gained)

    def _check_fencing(self) -> None:
        """I3 on the live generation; processes the last coordinator call removed from the
        group stop counting as owners (downtime). A member between two generations (its
        JoinGroup response in flight) is fenced for I1 and I6 but, still consuming and about
        to learn its generation, keeps counting as the owner: the downtime of a cooperative
        rebalance is the downtime of the partitions that move."""
        g = self._classic()
        key = None if g is None else (self.coord.generation, g.generation_id)
        # (the members compared with the last ones' set in place: no set built per call; and
        # not compared at all while the same group's ``members_version`` stays the one they
        # were last seen equal at: a 1,000-member group is compared after every call)
        if key == self._fence_key:
            if g is None:
                return
            if g is self._fence_group and g.members_version == self._fence_version and \
                    len(g.members) == len(self._fence_members):
                return
            if g.members.keys() == self._fence_members:
                self._fence_group = g
                self._fence_version = g.members_version
                return
        self._fence_key = key
        self._fence_members = frozenset(g.members) if g is not None else frozenset()
        self._fence_group = g
        self._fence_version = -1 if g is None else g.members_version
        if g is not None:
            gen = (self.coord.generation, g.generation_id)
            if gen[0] == self._live_gen[0] and gen[1] < self._live_gen[1]:
                raise Violation("I3", f"the group's generation went from {self._live_gen[1]} "
                                      f"down to {gen[1]}")
            self._live_gen = gen
        legit = self.legit
        members = g.members if g is not None else {}
        for p in self.live():
            if p.consuming and _cm(p).member_id not in members and any(
                    legit.get(tp) is p for tp in p.consuming):
                self._fenced_now(p)

    # ================================================================== I6

    def _expected_commit_error(self, req: OffsetCommitRequest) -> int:
        """The error a commit must get from the group as it is (0: it must be accepted)."""
        g = self._classic()
        if g is None or req.member_id not in g.members:
            return int(_E.unknown_member_id)
        iid = req.group_instance_id
        if iid is not None and g.static_members.get(iid) != req.member_id:
            return int(_E.fenced_instance_id)
        if req.generation_id_or_member_epoch != g.generation_id:
            return int(_E.illegal_generation)
        if g.state is ClassicGroupState.COMPLETING_REBALANCE:
            return int(_E.rebalance_in_progress)
        return 0

    # ================================================================== coordinator records

    def on_group_record(self, rec: Record, t: RecordType) -> None:
        if t is _CLASSIC and rec.key.group_id == self.gid:
            self._classic_record(rec.value)  # type: ignore[arg-type]

    def _classic_record(self, v: ClassicGroupMetadataValue | None) -> None:
        prev = self.committed
        self.committed = v
        if v is None:
            self._rebuild_holders()
            return
        self.stats["i3_checks"] += 1
        if prev is not None and v.generation < prev.generation:
            raise Violation("I3", f"committed generation went from {prev.generation} down to "
                                  f"{v.generation}")
        if prev is None or v.generation != prev.generation:
            self.stats["generations"] += 1
            self._check_assignment(v)
        self._rebuild_holders()

    def _check_assignment(self, v: ClassicGroupMetadataValue) -> None:
        """I1 (coordinator view) and I2 on a new generation's assignment."""
        self.stats["i2_checks"] += 1
        self.stats["i1_checks"] += 1
        subs = {m.member_id: _claims(m.subscription) for m in v.members}
        best: dict[tuple[str, int], tuple[int, str | None]] = {}
        for mid in sorted(subs):
            _, owned, gen = subs[mid]
            if gen < v.generation - 1:
                continue  # it missed a generation: it gives them up when it joins this one
            for t, ps in owned.items():
                for q in ps:
                    prev = best.get((t, q))
                    if prev is None or gen > prev[0]:
                        best[(t, q)] = (gen, mid)
                    elif gen == prev[0]:
                        raise Violation("I1", f"{t}-{q} is claimed as owned in generation {gen} "
                                              f"by {self._who(prev[1])} and {self._who(mid)}")
        given: dict[tuple[str, int], str] = {}
        for m in v.members:
            for t, ps in _assigned(m.assignment).items():
                if t not in subs[m.member_id][0]:
                    raise Violation("I2", f"generation {v.generation} gives {self._who(m.member_id)}"
                                          f" partitions of {t}, which it does not subscribe to")
                for q in ps:
                    if (t, q) in given:
                        raise Violation("I1", f"generation {v.generation} assigns {t}-{q} to "
                                              f"{self._who(given[(t, q)])} and "
                                              f"{self._who(m.member_id)}")
                    given[(t, q)] = m.member_id
                    owner = best.get((t, q))
                    if owner is not None and owner[1] not in (None, m.member_id):
                        raise Violation("I1", f"generation {v.generation} gives {t}-{q} to "
                                              f"{self._who(m.member_id)} while "
                                              f"{self._who(owner[1])} still owns it (claimed in "
                                              f"generation {owner[0]}, not revoked)")

    def _rebuild_holders(self) -> None:
        """Who holds each partition by the committed assignment (on the current image)."""
        holder: dict[TopicIdPartition, str] = {}
        v = self.committed
        if v is not None:
            by_name = self.image.by_name
            for m in v.members:
                for t, ps in _assigned(m.assignment).items():
                    meta = by_name.get(t)
                    if meta is not None:
                        for q in ps:
                            holder[(meta.topic_id, q)] = m.member_id
        self.coord_holder = holder

    def _check_group(self) -> None:
        pass  # I3 on the live group runs in _check_fencing, on committed records above

    # ================================================================== convergence

    def _committed_of(self, g: ClassicGroup, mid: str) -> frozenset[TopicIdPartition]:
        """The partitions the group's assignment of ``mid`` names (decoded once per assignment
        and metadata image: the same bytes in the same image name the same partitions)."""
        raw = g.members[mid].assignment
        image = self.image
        memo = self._committed_memo.get(mid)
        if memo is not None and memo[1] is image and (memo[0] is raw or memo[0] == raw):
            return memo[2]
        by_name = image.by_name
        out = frozenset((by_name[t].topic_id, q) for t, ps in _assigned(raw).items()
                        if t in by_name for q in ps)
        self._committed_memo[mid] = (raw, image, out)
        return out

    def converged(self) -> bool:
        """The group is Stable, every live process is a member at its generation owning its
        committed assignment, nobody else is a member, every subscribed partition is consumed."""
        if not self.settled():
            return False
        g = self._classic()
        if g is not None and g.members and g.state is not _STABLE:
            return False  # (the cheap test first: a rebalance in progress)
        # (the members that left counted in C first: in a large group the counts mostly
        # differ, and the filtered list is then not needed)
        everyone = self.live()
        left = sum(map(_LEFT.__contains__, map(_member_state, everyone)))
        if g is None or not g.members:
            return left == len(everyone)
        if len(g.members) != len(everyone) - left:
            return False
        live = [p for p in everyone if p.member.state not in _LEFT] if left else everyone
        owned: set[TopicIdPartition] = set()
        for p in live:
            m = _cm(p)
            if m.state is not ClientMemberState.STABLE or m.generation != g.generation_id or \
                    m.member_id not in g.members or (m.inflight is not None and not isinstance(
                        m.inflight.request, HeartbeatRequest)) or m.rejoin_pending:
                return False
            if self._committed_of(g, m.member_id) != m.owned:
                return False
            owned |= m.owned
        return owned == self.universe

    def _convergence_gap(self) -> str:
        return self.describe_gap(self._classic())

    def gap_group(self, g: Any) -> str:
        return f"generation {g.generation_id}, state {g.state.value}, {len(g.members)} members"

    def gap_members(self, g: Any) -> list[str]:
        parts = []
        for p in self.live():
            m = _cm(p)
            parts.append(f"{p.name}/{m.member_id or '-'}: gen {m.generation} {m.state.value}"
                         f"{' ' + m.phase.value if m.state is ClientMemberState.JOINING else ''}, "
                         f"owns {len(m.owned)}, member {'yes' if m.member_id in g.members else 'no'}")
        return parts

    def i5_bound(self) -> int:
        """After the quiet time: a crashed or cut-off member's session expires (S); a static
        restart waits for it and retries every restart delay (R); the rebalance it starts
        takes a join phase and a sync phase of at most one rebalance timeout (T) each, plus
        the initial delay of an empty group (D) and a heartbeat interval (H) for the members
        to hear of it; the cooperative second round as much again; a lost JoinGroup/SyncGroup
        costs its timeout (Q + T) and a backoff (B); L is the maximal one-way latency::

            bound = S + R + D + 2 * (2 * T + H) + Q + T + B + 40 * L
        """
        sc = self.scenario
        lat = sc.latency.max_ms * (1 + REORDER_SPIKE)
        t = sc.rebalance_timeout_ms
        return int(sc.session_timeout_ms + sc.restart_delay_ms
                   + self.config.classic_initial_rebalance_delay_ms
                   + 2 * (2 * t + sc.heartbeat_interval_ms + sc.heartbeat_spread_ms)
                   + sc.request_timeout_ms + t
                   + _RETRY_BACKOFF_MAX_MS + 40 * lat + self.work_bound_ms())

    def work_bound_ms(self) -> int:
        """What working members add (``sim.application``): each of the two rounds waits for
        the members' next ``poll()`` and a revocation's commit, and a member learns of new
        partitions at its next metadata refresh (``metadata.max.age.ms``)."""
        if not self.app.on:
            return 0
        return 4 * self.app.reaction_bound_ms() + self.scenario.workload.metadata_max_age_ms

    # ================================================================== full check

    def full_check(self) -> None:
        """At checkpoints and the end (every step with ``full_checks``): I1 on the members'
        side over the whole state (no partition consumed by two unfenced processes; what
        :meth:`check_process` and :meth:`check_holding` add: ``sim.classic_connect``'s strict
        checks of workers) and I3 (the live generation is never behind the committed one)."""
        self.check_processes(self.ordered)
        g = self._classic()
        c = self.committed
        if g is not None and c is not None and g.generation_id < c.generation:
            raise Violation("I3", f"live generation {g.generation_id} is behind the committed "
                                  f"generation {c.generation}")

    def check_holding(self, p: Proc, tp: Any) -> None:
        """Nothing: what the coordinator holds is checked per committed generation
        (:meth:`_check_assignment`); a process consumes its assignment once SyncGroup answered."""

    def protocol_summary(self) -> dict[str, Any]:
        out = super().protocol_summary()
        g = self._classic()
        out["generation"] = g.generation_id if g is not None else None
        return out
