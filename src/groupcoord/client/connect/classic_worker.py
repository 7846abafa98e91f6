"""A sans-IO Kafka Connect worker in a classic group (JoinGroup / SyncGroup / Heartbeat /
LeaveGroup with protocol type ``connect``), as upstream's ``WorkerCoordinator`` and the
rebalance part of ``DistributedHerder`` behave.

Implements KIP-415 "Changes to Connect's Rebalancing Process" and
"Compatibility, Deprecation, and Migration Plan" on the worker's side, with the upstream facts of
NOTES.md ("Connect worker reactions", KIP-814 "Connect has no static membership"):

- ``connect.protocol`` = ``eager`` | ``compatible`` | ``sessioned`` (default ``sessioned``). The
  JoinGroup offers, most preferred first, sessioned -> [sessioned, compatible, default],
  compatible -> [compatible, default], eager -> [default] (upstream
  ``ConnectProtocolCompatibility`` / ``metadataRequest``, via :func:`.protocol.join_protocols`);
  the coordinator's vote picks the protocol every member supports, so one eager worker moves the
  whole group to ``default``.
- **Joining**: a dynamic member (no ``group.instance.id``: Connect has no static membership); a
  JoinGroup v4+ answered MEMBER_ID_REQUIRED is sent again at once with the id it carries. The
  metadata holds the worker's url, the config offset it has read to and (v1+) its current
  allocation: the last assignment it received with the connectors and tasks it runs now.
- **Eager** (the previous generation used ``default``): everything the worker runs is revoked
  (``on_revoked``) before the JoinGroup; the assignment received is the complete set.
- **Cooperative** (``compatible`` / ``sessioned``): the worker keeps its work through the join;
  the SyncGroup assignment lists newly assigned items, revoked items and a delay. It stops the
  revoked items (``on_revoked``, which may :data:`~.listener.DEFER`), starts the new ones
  (``on_assigned``, never in the same step as a revocation) and, if anything was revoked,
  rejoins at once; otherwise with a delay > 0 it rejoins when the delay expires (upstream's
  ``scheduledRebalance``).
- **Leader**: the member the JoinGroup response names leader runs the assignor on the members'
  metadata (:class:`~.assignors.EagerAssignor` under ``default``, one
  :class:`~.assignors.IncrementalCooperativeAssignor` instance kept across the rounds it leads
  otherwise, passing the last generation it completed) and sends every member's assignment in
  its SyncGroup; followers send none. :attr:`ClassicConnectWorker.last_leader_round` keeps what
  it computed (the rounds the KIP's tables print).
- **Pluggable assignors** (the Connect draft's ``ConnectAssignor``: name, assign, onAssignment,
  as the connect group type's worker, :mod:`.worker`): ``assignors`` takes names from the
  registry of :mod:`.assignors` (:func:`~.assignors.register_assignor`) or instances, in
  preference order; default: the two built-in ones above. The classic protocol names no
  assignor on the wire (upstream picks it by the Connect protocol the group selected), so the
  assignor run for a round is the first whose version range holds the selected protocol's
  version (``default`` 0, ``compatible`` 1, ``sessioned`` 2), and the worker offers only the
  protocols of its ``connect.protocol`` that one of its assignors holds (a worker whose
  assignors hold none of them is refused when it is built). Every worker calls that assignor's
  ``on_assignment`` with each assignment it receives, before its listener starts the work.
- **Heartbeat**: every ``heartbeat_interval_ms`` while in a generation. REBALANCE_IN_PROGRESS ->
  rejoin. ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID (also on JoinGroup / SyncGroup) -> the member id
  and generation are reset and the worker joins again as a new member. Like upstream, a
  cooperative worker keeps its work through that rejoin and reports it in its metadata (the leader
  then sees it as running, or revokes it when duplicated); an eager worker revokes it before
  joining, as always.
- **CONFIG_MISMATCH** (the leader's config is behind an offset a member reported): the worker
  keeps its work; the leader, and a worker whose config is behind the assignment's offset, read
  the config to the end (:meth:`ConfigStore.read_to_end`); everyone rejoins (upstream
  ``handleRebalanceCompleted``). A leader whose snapshot from the join is behind takes the
  store's current snapshot first (upstream ``ensureLeaderConfig``); the assignment then names
  that snapshot's offset, which may be past every member's (they catch up before starting).
- **Config changes**: when the worker's config view holds a different set of connectors/tasks
  than the one it joined with, it rejoins (upstream's herder requests a rebalance when it reads
  connector or task configuration changes). :meth:`ClassicConnectWorker.request_rejoin` does the
  same on demand.
- **SkipAssignment** (KIP-814) is refused: the worker stops with a fatal error, as upstream's
  ``onLeaderElected`` throws ("Connect does not support static membership").
- **Downgrade to eager** (KIP-415 migration plan): a leader that completed a cooperative
  generation and now sees the group select ``default`` first sends every member an empty v0
  assignment; a worker that receives a v0 assignment after a cooperative generation stops
  everything it still runs and rejoins at once, so the next round is a clean eager one.
- **Leaving** (:meth:`ClassicConnectWorker.leave`): everything is revoked, then LeaveGroup.
- **Poll timeout during a revocation** (``rebalance.timeout.ms`` as the poll interval):
  upstream's ``WorkerGroupMember`` gives ``AbstractCoordinator``'s ``Heartbeat`` the rebalance
  timeout as its ``maxPollIntervalMs``; the herder's thread polls the member between its
  steps, but blocks in a revocation (the herder's ``onRevoked`` runs its stops through
  ``startAndStop`` and returns when the last has finished). The heartbeat thread goes on
  meanwhile, and once the poll timer has run out it calls ``handlePollTimeoutExpiry``
  (``WorkerCoordinator``: the herder logs "worker poll timeout has expired", then
  ``maybeLeaveGroup``): a LeaveGroup, sent once and never retried, and the member id and
  generation reset (``resetGenerationOnLeaveGroup``). The revocation runs on; when it ends the
  worker joins again as a new member (``joinGroupIfNeeded`` loops while a rejoin is needed).
  The timer's start: an eager revocation runs in ``onJoinPrepare``, in the poll that found the
  rebalance, so the model starts the timer at the revocation (upstream's last
  ``pollHeartbeat`` came at most one wait for the next heartbeat earlier); an incremental
  cooperative one runs in ``onJoinComplete``, after the SyncGroup, and the JoinGroup's answer
  re-enabled the heartbeat thread, whose ``enable`` resets the timer
  (``Heartbeat.resetTimeouts``): the model starts it there. Read in Apache Kafka's
  ``clients`` and ``connect/runtime`` at the 4.0.0-SNAPSHOT trunk commit ``1eb7644349cb``
  (2024-10-25; not re-read at 4.3). One difference: upstream's ``onJoinComplete`` still hands
  the assignment of the generation the worker left to the herder, whose snapshot carries its
  new items into the next JoinGroup's allocation; the model's worker drops that assignment
  (its allocation is what it runs), so the next generation hands those items out afresh.
- **Coordinator unreachable**: when requests keep failing (:meth:`on_request_failed`) for
  ``coordinator_unreachable_ms`` since the last answer, the worker gives up its work
  (``on_lost``) rather than run it outside the group (upstream ``WorkerCoordinator.poll``).

Sans-IO like :mod:`groupcoord.client.consumer`: no IO, no clock, no randomness; ``now_ms`` is an
argument. A driver sends what :meth:`~ClassicConnectWorker.poll_request` returns (one request in
flight at a time), hands the answer to :meth:`~ClassicConnectWorker.on_response` (or reports
:meth:`~ClassicConnectWorker.on_request_failed`) and wakes the worker at
:meth:`~ClassicConnectWorker.next_deadline`.

Choices and gaps:

- The allocation in the metadata lists what the worker runs (its revocations already applied),
  with no revoked items (upstream's herder clears them once handled) and the delay of the last
  assignment; after an eager revocation it is empty (upstream would still report the old set).
- A successful assignment whose config offset differs from the worker's (after catching up)
  makes the worker rejoin after applying it; upstream does not start the new work in that case.
- Not here: ``worker.unsync.backoff.ms`` (leaving the group when the config cannot be read in
  time: reading is instantaneous here), session keys of ``sessioned`` (KIP-507), the REST
  forwarding the leader url serves. The asyncio driver against a broker is
  :mod:`groupcoord.client.connect.async_classic_worker`.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from groupcoord.client.classic_member import ClassicMember, ClassicRequest
from groupcoord.client.connect.assignors import (
    DEFAULT_MAX_DELAY_MS,
    ConnectAssignor,
    ConnectGroupAssignment,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    decode_members,
    resolve_assignors,
)
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import DEFER, ConnectRebalanceListener
from groupcoord.client.consumer import RETRIABLE_ERRORS
from groupcoord.coordinator.classic.messages import (
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.protocol.connect_protocol import (
    CONNECT_PROTOCOL_TYPE,
    CONNECT_PROTOCOL_V0,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectProtocolCompatibility,
    decode_assignment,
    encode_assignment,
    join_protocols,
)
from groupcoord.protocol.errors import ErrorCode

__all__ = [
    "ClassicConnectWorker",
    "ConfigStore",
    "LeaderRound",
    "WorkerState",
]

log = logging.getLogger(__name__)

_E = ErrorCode
EAGER = ConnectProtocolCompatibility.EAGER

#: Errors after which the member id and generation are reset and the worker joins as new.
RESET_ERRORS = frozenset({int(_E.unknown_member_id), int(_E.illegal_generation)})

Request = ClassicRequest
Response = JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse


class ConfigStore(Protocol):
    """The worker's view of the Connect config topic (upstream ``ConfigBackingStore``)."""

    def snapshot(self) -> ConfigSnapshot:
        """What the worker has read so far (may be behind the topic)."""
        ...

    def read_to_end(self) -> ConfigSnapshot:
        """Catch up with the topic and return the fresh snapshot."""
        ...


class WorkerState(enum.Enum):
    UNJOINED = "unjoined"    #: not started, or left
    JOINING = "joining"      #: a JoinGroup is to be sent (or is in flight)
    SYNCING = "syncing"      #: a SyncGroup is to be sent (or is in flight)
    STABLE = "stable"        #: in a generation: heartbeats
    LEAVING = "leaving"      #: stopping everything, then LeaveGroup
    FATAL = "fatal"          #: stopped by a fatal error


@dataclass(slots=True, frozen=True)
class LeaderRound:
    """One round this worker computed as leader: generation, protocol and the assignor's answer."""

    generation: int
    protocol: str
    now_ms: int
    result: ConnectGroupAssignment


def _minus(a: ConnectorsAndTasks, b: ConnectorsAndTasks) -> ConnectorsAndTasks:
    bc, bt = set(b.connectors), set(b.tasks)
    if b.is_empty():
        return a
    return ConnectorsAndTasks(tuple(c for c in a.connectors if c not in bc),
                              tuple(t for t in a.tasks if t not in bt))


def _intersect(a: ConnectorsAndTasks, b: ConnectorsAndTasks) -> ConnectorsAndTasks:
    bc, bt = set(b.connectors), set(b.tasks)
    return ConnectorsAndTasks(tuple(c for c in a.connectors if c in bc),
                              tuple(t for t in a.tasks if t in bt))


class ClassicConnectWorker(ClassicMember):
    """One Connect worker in a classic group, as a sans-IO state machine (see the module doc).

    The request plumbing (settings, the request in flight with its correlation id, the four
    requests) is :class:`groupcoord.client.classic_member.ClassicMember`'s."""

    protocol_type = CONNECT_PROTOCOL_TYPE

    def __init__(
        self,
        group_id: str,
        url: str,
        config: ConfigStore,
        *,
        protocol: ConnectProtocolCompatibility | str = ConnectProtocolCompatibility.SESSIONED,
        listener: ConnectRebalanceListener | None = None,
        client_id: str = "connect-worker",
        client_host: str = "",
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        request_timeout_ms: int = 40_000,
        retry_backoff_ms: int = 100,
        max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        honor_reported_delay: bool = False,
        assignors: Sequence[str | ConnectAssignor] | None = None,
        coordinator_unreachable_ms: int | None = None,
        join_version: int = 9,
        sync_version: int = 5,
        heartbeat_version: int = 4,
        leave_version: int = 5,
    ) -> None:
        if heartbeat_interval_ms <= 0 or session_timeout_ms <= 0 or rebalance_timeout_ms <= 0:
            raise ValueError("timeouts and the heartbeat interval must be > 0")
        super().__init__(group_id, client_id=client_id, client_host=client_host,
                         session_timeout_ms=session_timeout_ms,
                         rebalance_timeout_ms=rebalance_timeout_ms,
                         heartbeat_interval_ms=heartbeat_interval_ms,
                         request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                         join_version=join_version, sync_version=sync_version,
                         heartbeat_version=heartbeat_version, leave_version=leave_version)
        self.url = url
        self.config_store = config
        self.mode = (protocol if isinstance(protocol, ConnectProtocolCompatibility)
                     else ConnectProtocolCompatibility.from_config(protocol))
        self.listener = listener or ConnectRebalanceListener()
        self.coordinator_unreachable_ms = (heartbeat_interval_ms if coordinator_unreachable_ms is None
                                           else coordinator_unreachable_ms)
        #: The assignors (the Connect draft's ``ConnectAssignor``), in preference order.
        self.assignors: tuple[ConnectAssignor, ...] = (
            (IncrementalCooperativeAssignor(max_delay_ms, honor_reported_delay=honor_reported_delay),
             EagerAssignor()) if assignors is None else resolve_assignors(assignors, max_delay_ms))
        if not self._offered():
            raise ValueError(f"no assignor of {[a.name for a in self.assignors]} holds a Connect "
                             f"protocol version connect.protocol={self.mode.config} offers")

        self.state = WorkerState.UNJOINED
        self.leader_id = ""
        #: The protocol of the last completed generation (upstream ``currentConnectProtocol``).
        self.current_protocol = self.mode
        #: What the worker runs now (what the listener was told to start and not yet to stop).
        self.running = ConnectorsAndTasks()
        #: The last assignment received (None: none yet).
        self.assignment: ConnectAssignment | None = None
        self.last_completed_generation = -1
        self.last_leader_round: LeaderRound | None = None
        self.fatal_error: str | None = None
        self.stats: dict[str, int] = {"joins": 0, "syncs": 0, "heartbeats": 0, "revoked": 0,
                                      "assigned": 0, "lost": 0, "resets": 0, "mismatches": 0,
                                      "timeouts": 0, "poll_timeouts": 0}

        self._retry_at = 0
        self._next_heartbeat = 0
        self._rejoin_reason: str | None = None
        self._scheduled_rejoin: int | None = None
        self._prepared = False  # the join preparation (eager revocation) of this rebalance ran
        self._joined_config: ConfigSnapshot | None = None  # the snapshot sent in the JoinGroup
        self._joined_protocol = ""
        self._sync: SyncGroupRequest | None = None
        self._revoking: ConnectorsAndTasks | None = None  # a deferred revocation
        self._after_revocation: ConnectAssignment | None = None  # to finish applying after it
        self._last_answer = 0
        self._join_reason: str | None = None
        #: When the herder last polled before the step it is blocked in (the poll timer's
        #: start: the module doc, "Poll timeout during a revocation").
        self._polled_at: int | None = None
        self._left_on_poll_timeout = False  # its LeaveGroup is the poll timeout's
        #: The worker left on a poll timeout and runs what it kept through the leave with no
        #: generation's assignment confirming it yet (until it applies the next assignment:
        #: the new leader may have given that work to others meanwhile, and revokes the
        #: duplicates from every holder, KIP-415).
        self.kept_after_poll_timeout = False

    # ------------------------------------------------------------------ application API

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    def start(self, now_ms: int) -> None:
        """Join the group."""
        self._now = self._last_answer = now_ms
        if self.state in (WorkerState.UNJOINED,):
            self.state = WorkerState.JOINING
            self._prepared = False
            self._retry_at = now_ms

    def request_rejoin(self, reason: str) -> None:
        """Rejoin at the next poll (upstream ``requestRejoin``)."""
        self._rejoin_reason = reason

    def delay_heartbeat(self, delay_ms: int) -> None:
        """Push the next heartbeat ``delay_ms`` later: the worker's heartbeat phase against the
        other workers' (a driver that models the field's spread of phases: the SyncGroup
        answers of one round reach the workers over a network round, the heartbeat thread
        wakes only every ``retry.backoff.ms``, a GC pause; the timer then keeps the new phase,
        as every answer restarts it one interval later)."""
        self._next_heartbeat += delay_ms

    def leave(self, now_ms: int) -> None:
        """Stop everything (``on_revoked``), then send LeaveGroup."""
        self._now = now_ms
        if self.state in (WorkerState.UNJOINED, WorkerState.FATAL, WorkerState.LEAVING):
            return
        self.state = WorkerState.LEAVING
        self._after_revocation = None
        if self._revoking is None and not self.running.is_empty():
            self._revoke(self.running)

    def complete_revocation(self, now_ms: int) -> None:
        """The application finished stopping what ``on_revoked`` deferred."""
        self._now = now_ms
        revoking = self._revoking
        if revoking is None:
            return
        self._revoking = None
        self.running = _minus(self.running, revoking)
        pending, self._after_revocation = self._after_revocation, None
        if pending is not None and self.state is WorkerState.STABLE:
            self._finish_assignment(pending)
        elif self.state is WorkerState.LEAVING and not self.running.is_empty():
            self._revoke(self.running)

    # ------------------------------------------------------------------ driver API

    def next_deadline(self) -> int | None:
        """When :meth:`poll_request` next has something to do (None: only a response or the
        application can move the worker)."""
        s = self.state
        if s in (WorkerState.UNJOINED, WorkerState.FATAL):
            return None
        if self.inflight is not None:
            return self.inflight.sent_ms + self._timeout_of(self.inflight.request)
        if s is WorkerState.LEAVING:
            return None if self._revoking is not None else self._now
        if s is WorkerState.JOINING:
            if self._revoking is not None:
                if not self._in_generation():
                    return None
                expiry = self.poll_timeout_at()
                return self._next_heartbeat if expiry is None \
                    else min(self._next_heartbeat, expiry)
            return max(self._retry_at, self._now)
        if s is WorkerState.SYNCING:
            return self._now
        deadline = self._next_heartbeat
        if self._revoking is None:
            if self._rejoin_reason is not None or self._config_changed():
                return self._now
            if self._scheduled_rejoin is not None:
                deadline = min(deadline, self._scheduled_rejoin)
        else:
            expiry = self.poll_timeout_at()
            if expiry is not None:
                deadline = min(deadline, expiry)
        return deadline

    def poll_timeout_at(self) -> int | None:
        """When the poll timer runs out while the herder is blocked in a revocation (None: no
        revocation blocks it, or the worker is not in a generation or is stopping)."""
        if self._revoking is None or self._polled_at is None or not self._in_generation() \
                or self.state not in (WorkerState.JOINING, WorkerState.STABLE):
            return None
        return self._polled_at + self.rebalance_timeout_ms

    def poll_request(self, now_ms: int) -> Request | None:
        """The request to send now, if any (it becomes the request in flight)."""
        self._now = now_ms
        expiry = self.poll_timeout_at()
        if expiry is not None and now_ms >= expiry:
            return self._leave_on_poll_timeout(now_ms)
        if self.inflight is not None:
            timed_out = self._timed_out(now_ms)
            if timed_out is None:
                return None
            log.info("[%s] %s timed out", self.member_id, type(timed_out.request).__name__)
            self.stats["timeouts"] += 1
            self._request_failed(timed_out.request)
        s = self.state
        if s is WorkerState.LEAVING:
            if self._revoking is not None:
                return None
            if not self.member_id:
                self._left()
                return None
            return self._send(self._leave_group("the worker is stopping"), now_ms)
        if s is WorkerState.STABLE and self._revoking is None:
            if self._scheduled_rejoin is not None and now_ms >= self._scheduled_rejoin:
                self._scheduled_rejoin = None
                self._rejoin("the scheduled rebalance delay expired")
            elif self._rejoin_reason is not None:
                reason, self._rejoin_reason = self._rejoin_reason, None
                self._rejoin(reason)
            elif self._config_changed():
                self._rejoin("the connector configuration changed")
        s = self.state
        if s is WorkerState.JOINING:
            if now_ms < self._retry_at:
                return None
            if not self._prepared:
                self._prepare_join()
            if self._revoking is not None:  # onJoinPrepare: the heartbeat thread goes on
                if self._in_generation() and now_ms >= self._next_heartbeat:
                    self.stats["heartbeats"] += 1
                    return self._send(self._heartbeat(), now_ms)
                return None
            return self._send(self._join_request(), now_ms)
        if s is WorkerState.SYNCING:
            assert self._sync is not None
            return self._send(self._sync, now_ms)
        if s is WorkerState.STABLE and now_ms >= self._next_heartbeat:
            self.stats["heartbeats"] += 1
            return self._send(self._heartbeat(), now_ms)
        return None

    @property
    def last_answer_ms(self) -> int:
        """When the coordinator last answered (or the worker started)."""
        return self._last_answer

    def on_response(self, response: Response, now_ms: int,
                    correlation_id: int | None = None) -> bool:
        """Handle the answer to the request in flight (False: there is none, or it is not the
        one ``correlation_id`` names: a duplicate, an answer given up on; ignored)."""
        self._now = now_ms
        inflight = self._take_inflight(correlation_id)
        if inflight is None:
            return False
        self._last_answer = now_ms
        req = inflight.request
        if isinstance(req, LeaveGroupRequest):
            if not self._left_on_poll_timeout:
                self._left()
            self._left_on_poll_timeout = False
        elif self.state in (WorkerState.FATAL, WorkerState.UNJOINED, WorkerState.LEAVING):
            pass  # an answer after we stopped or started leaving
        elif isinstance(req, JoinGroupRequest):
            assert isinstance(response, JoinGroupResponse)
            self._on_join(response)
        elif isinstance(req, SyncGroupRequest):
            assert isinstance(response, SyncGroupResponse)
            self._on_sync(response)
        else:
            assert isinstance(response, HeartbeatResponse)
            self._on_heartbeat(response)
        return True

    def on_request_failed(self, now_ms: int, correlation_id: int | None = None) -> bool:
        """The request in flight got no answer (connection lost): retry it later. When the
        coordinator has not answered for ``coordinator_unreachable_ms`` the work is given up."""
        self._now = now_ms
        inflight = self._take_inflight(correlation_id)
        if inflight is None:
            return False
        self._request_failed(inflight.request)
        return True

    # ------------------------------------------------------------------ requests

    def _timeout_of(self, request: Request) -> int:
        if isinstance(request, JoinGroupRequest):  # parked up to the rebalance timeout
            return max(self.request_timeout_ms, self.rebalance_timeout_ms + 5_000)
        return self.request_timeout_ms

    def _join_request(self) -> JoinGroupRequest:
        config = self.config_store.snapshot()
        self._joined_config = config
        allocation = None
        a = self.assignment
        if a is not None and self.mode is not EAGER:
            allocation = ConnectAssignment(a.version, a.error, a.leader, a.leader_url,
                                           a.config_offset, self.running.connectors,
                                           self.running.tasks, (), (), a.delay)
        offered = {m.protocol for m in self._offered()}
        protocols = tuple(JoinGroupProtocol(name, meta) for name, meta in
                          join_protocols(self.url, config.offset, allocation, self.mode)
                          if name in offered)
        self.stats["joins"] += 1
        return self._join_group(protocols, self._join_reason)

    def _in_generation(self) -> bool:
        return bool(self.member_id) and self.generation >= 0

    def _prepare_join(self) -> None:
        """Upstream ``onJoinPrepare``: under the eager protocol everything is revoked first."""
        self._prepared = True
        self._scheduled_rejoin = None
        if self.current_protocol is EAGER and not self.running.is_empty() and \
                not (self.assignment is not None and self.assignment.failed):
            self._polled_at = self._now  # the poll that found the rebalance
            self._revoke(self.running)

    # ------------------------------------------------------------------ responses

    def _on_join(self, r: JoinGroupResponse) -> None:
        code = r.error_code
        if code == _E.member_id_required:
            self.member_id = r.member_id
            self._retry_at = self._now
            return
        if code != _E.none:
            self._join_failed(code, "JoinGroup")
            return
        if r.skip_assignment:
            self._fatal("JoinGroup answered SkipAssignment: Connect does not support static "
                        "membership (KIP-814)")
            return
        self.member_id = r.member_id
        self.generation = r.generation_id
        self.leader_id = r.leader
        self._joined_protocol = r.protocol_name or ""
        self._polled_at = self._now  # the heartbeat thread's enable resets the poll timer
        assignments: tuple[SyncGroupAssignment, ...] = ()
        if r.leader == r.member_id:
            try:
                encoded = self._lead(r)
            except ValueError as e:  # undecodable metadata, unknown protocol
                self._fatal(f"cannot compute the assignment: {e}")
                return
            assignments = tuple(SyncGroupAssignment(m, raw) for m, raw in encoded.items())
        self._sync = self._sync_group(self._joined_protocol, assignments)
        self.state = WorkerState.SYNCING

    def _lead(self, r: JoinGroupResponse) -> dict[str, bytes]:
        """Upstream ``onLeaderElected``: run the assignor of the selected protocol."""
        protocol = ConnectProtocolCompatibility.from_protocol(r.protocol_name or "")
        members = decode_members({m.member_id: m.metadata for m in r.members})
        config = self._leader_config(members)
        if protocol is EAGER and self.current_protocol is not EAGER \
                and self.last_completed_generation >= 0:
            # KIP-415 migration: the group downgrades; first everyone stops its work.
            log.info("[%s] the group downgrades to the eager protocol: empty assignments",
                     self.member_id)
            max_offset = max(m.config_offset for m in members.values())
            empty = {mid: ConnectAssignment(CONNECT_PROTOCOL_V0, NO_ERROR, self.member_id,
                                            self.url, max_offset) for mid in sorted(members)}
            result = ConnectGroupAssignment(self.member_id, self.url, max_offset, NO_ERROR, 0,
                                            empty, {mid: ConnectorsAndTasks() for mid in empty})
        else:
            result = self._assign(protocol, members, config, r.generation_id)
        self.last_leader_round = LeaderRound(r.generation_id, protocol.protocol, self._now, result)
        return {mid: encode_assignment(a) for mid, a in result.assignments.items()}

    def assignor(self, name: str) -> ConnectAssignor | None:
        """This worker's assignor named ``name``, if it has one."""
        return next((a for a in self.assignors if a.name == name), None)

    def assignor_for(self, version: int) -> ConnectAssignor | None:
        """The assignor of a round of Connect protocol ``version``: this worker's first whose
        version range holds it (module doc, "Pluggable assignors")."""
        return next((a for a in self.assignors
                     if a.minimum_version <= version <= a.maximum_version), None)

    def _offered(self) -> list[ConnectProtocolCompatibility]:
        """The Connect protocols ``connect.protocol`` offers (upstream ``metadataRequest``: each
        one up to its version) that one of this worker's assignors holds."""
        return [m for m in ConnectProtocolCompatibility
                if m.version <= self.mode.version and self.assignor_for(m.version) is not None]

    def _assign(self, protocol: ConnectProtocolCompatibility, members: Mapping[str, Any],
                config: ConfigSnapshot, generation: int) -> ConnectGroupAssignment:
        assignor = self.assignor_for(protocol.version)
        if assignor is None:  # the group chose a protocol this worker did not offer
            raise ValueError(f"no assignor for Connect protocol {protocol.protocol!r}")
        return assignor.assign(self.member_id, members, config, now_ms=self._now,
                               generation=generation,
                               last_completed_generation=self.last_completed_generation,
                               protocol_version=protocol.version)

    def _leader_config(self, members: Mapping[str, Any]) -> ConfigSnapshot:
        """Upstream ``ensureLeaderConfig``: the snapshot of the join, or a fresher one if it is
        behind a member (still behind: the assignor answers CONFIG_MISMATCH). The assignors label
        the assignment with the offset of the snapshot returned here."""
        config = self._joined_config or self.config_store.snapshot()
        max_offset = max(m.config_offset for m in members.values())
        if config.offset < max_offset:
            fresh = self.config_store.snapshot()
            if fresh.offset >= max_offset:
                config = fresh
        return config

    def _on_sync(self, r: SyncGroupResponse) -> None:
        code = r.error_code
        if code != _E.none:
            self._join_failed(code, "SyncGroup")
            return
        self._sync = None
        self.stats["syncs"] += 1
        try:
            a = decode_assignment(r.assignment)
            protocol = ConnectProtocolCompatibility.from_protocol(
                r.protocol_name or self._joined_protocol)
        except ValueError as e:
            self._fatal(f"undecodable assignment: {e}")
            return
        previous_protocol = self.current_protocol
        self.current_protocol = protocol
        self.last_completed_generation = self.generation
        self.state = WorkerState.STABLE
        self._prepared = False
        self._next_heartbeat = self._now + self.heartbeat_interval_ms
        self.assignment = a
        if a.failed:
            self.stats["mismatches"] += 1
            config = self.config_store.snapshot()
            if self.is_leader or config.offset < a.config_offset:
                log.warning("[%s] assignment failed (error %d): reading the config to the end",
                            self.member_id, a.error)
                self.config_store.read_to_end()
            self._rejoin_reason = f"assignment failed with error {a.error}"
            return
        if a.config_offset > self.config_store.snapshot().offset:
            self.config_store.read_to_end()  # catching up to the assignment's config offset
        assignor = self.assignor_for(a.version)
        if assignor is not None:  # the draft's onAssignment, before the listener
            assignor.on_assignment(a, self.generation)
        if a.version == CONNECT_PROTOCOL_V0:
            if previous_protocol is not EAGER and not self.running.is_empty():
                # Downgrade: the work of the cooperative generation was kept through the join.
                self._rejoin_reason = "the group downgraded to the eager protocol"
                stop = self.running
            else:
                stop = _minus(self.running, a.assigned)
        else:
            stop = _intersect(self.running, a.revoked)
        if not stop.is_empty():
            self._revoke(stop, then=a)
            if self._revoking is not None:
                return
        self._finish_assignment(a)

    def _finish_assignment(self, a: ConnectAssignment) -> None:
        """Start the new work, then decide when to rejoin (upstream ``handleRebalanceCompleted``)."""
        self.kept_after_poll_timeout = False
        start = _minus(a.assigned, self.running)
        if not start.is_empty():
            self.running = ConnectorsAndTasks.of([*self.running.connectors, *start.connectors],
                                                 [*self.running.tasks, *start.tasks])
            self.stats["assigned"] += start.size()
            self.listener.on_assigned(start.connectors, start.tasks)
        if a.version != CONNECT_PROTOCOL_V0 and not a.revoked.is_empty():
            self._rejoin_reason = self._rejoin_reason or "items were revoked"
        elif a.delay > 0:
            self._scheduled_rejoin = self._now + a.delay
        if self._joined_config is not None and self.config_store.snapshot().offset != a.config_offset:
            self._rejoin_reason = self._rejoin_reason or "the config offset differs from the assignment's"

    def _on_heartbeat(self, r: HeartbeatResponse) -> None:
        code = r.error_code
        if code == _E.none or code in RETRIABLE_ERRORS:
            self._next_heartbeat = self._now + self.heartbeat_interval_ms
        elif code == _E.rebalance_in_progress:
            # Upstream's heartbeat thread keeps its timer (the next heartbeat an interval after
            # this one) and keeps heartbeating while the worker is still in its generation:
            # through an eager worker's onJoinPrepare, which stops its connectors and tasks
            # (the herder's onRevoked; AbstractCoordinator's state stays STABLE until the
            # JoinGroup goes out), so a stop that outlasts session.timeout.ms costs no session.
            self._next_heartbeat = self._now + self.heartbeat_interval_ms
            if self.state is not WorkerState.JOINING:
                self._rejoin("the coordinator answered REBALANCE_IN_PROGRESS")
        elif code in RESET_ERRORS:
            self._reset(code, "Heartbeat")
        else:
            self._fatal(f"Heartbeat failed with error {code}")

    def _join_failed(self, code: int, api: str) -> None:
        self._sync = None
        if code in RESET_ERRORS:
            self._reset(code, api)
        elif code == _E.rebalance_in_progress:
            self.state = WorkerState.JOINING
            self._retry_at = self._now
        elif code in RETRIABLE_ERRORS:
            self.state = WorkerState.JOINING
            self._retry_at = self._now + self.retry_backoff_ms
        else:
            self._fatal(f"{api} failed with error {code}")

    def _request_failed(self, request: Request) -> None:
        if isinstance(request, LeaveGroupRequest):
            if not self._left_on_poll_timeout:
                self._left()
            self._left_on_poll_timeout = False  # a poll timeout's leave is sent once
            return
        if self.state in (WorkerState.FATAL, WorkerState.UNJOINED):
            return
        if self._now - self._last_answer >= self.coordinator_unreachable_ms \
                and not self.running.is_empty():
            log.info("[%s] coordinator unreachable for %d ms: giving up %s", self.member_id,
                     self._now - self._last_answer, self.running)
            self._lose_all()
            # Rejoin once the coordinator answers again, so that the group gives the work out
            # again (a worker still in its generation would otherwise run nothing until the next
            # rebalance: found by the classic-connect simulation, sim/classic_connect.py).
            self._rejoin_reason = self._rejoin_reason or "gave up its work: coordinator unreachable"
        self._retry_at = self._now + self.retry_backoff_ms
        if isinstance(request, (JoinGroupRequest, SyncGroupRequest)):
            self._sync = None
            if self.state is not WorkerState.LEAVING:  # a leave started meanwhile goes on
                self.state = WorkerState.JOINING
        else:
            self._next_heartbeat = self._now + self.retry_backoff_ms

    # ------------------------------------------------------------------ transitions

    def _rejoin(self, reason: str) -> None:
        log.info("[%s] rejoining: %s", self.member_id, reason)
        self._join_reason = reason
        self.state = WorkerState.JOINING
        self._retry_at = self._now

    def _leave_on_poll_timeout(self, now_ms: int) -> Request:
        """Upstream's heartbeat thread, once the poll timer ran out during a revocation
        (``handlePollTimeoutExpiry``, ``maybeLeaveGroup``): a LeaveGroup, sent once, and the
        member id and generation reset; the revocation goes on, then the worker joins as a new
        member. A request in flight is given up (its answer is about the generation left)."""
        log.warning("[%s] worker poll timeout has expired: %d ms in a revocation, past "
                    "rebalance.timeout.ms; leaving the group", self.member_id,
                    now_ms - (self._polled_at or now_ms))
        self.stats["poll_timeouts"] += 1
        self.inflight = None
        self._sync = None
        leave = self._leave_group("worker poll timeout has expired.")
        self.member_id = ""
        self.generation = -1
        self.leader_id = ""
        self._polled_at = None
        self._after_revocation = None  # the generation left (module doc)
        self._scheduled_rejoin = None
        self._left_on_poll_timeout = True
        self.kept_after_poll_timeout = True
        self._join_reason = "worker poll timeout has expired."
        self.state = WorkerState.JOINING
        self._prepared = True  # the revocation under way is this rejoin's preparation
        self._retry_at = now_ms
        return self._send(leave, now_ms)

    def _reset(self, code: int, api: str) -> None:
        log.info("[%s] %s failed with error %d: joining again as a new member", self.member_id,
                 api, code)
        self.stats["resets"] += 1
        self.member_id = ""
        self.generation = -1
        self.leader_id = ""
        self._rejoin(f"{api} answered error {code}")

    def _revoke(self, items: ConnectorsAndTasks, then: ConnectAssignment | None = None) -> None:
        self.stats["revoked"] += items.size()
        self._revoking = items
        self._after_revocation = then
        if self.listener.on_revoked(items.connectors, items.tasks) is DEFER:
            return
        self._revoking = None
        self._after_revocation = None
        self.running = _minus(self.running, items)

    def _lose_all(self) -> None:
        self.kept_after_poll_timeout = False
        lost = self.running
        self.running = ConnectorsAndTasks()
        self._revoking = None
        self._after_revocation = None
        if not lost.is_empty():
            self.stats["lost"] += lost.size()
            self.listener.on_lost(lost.connectors, lost.tasks)

    def _left(self) -> None:
        self.kept_after_poll_timeout = False
        self.state = WorkerState.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.leader_id = ""
        self._sync = None
        self._scheduled_rejoin = None
        self._rejoin_reason = None

    def _fatal(self, message: str) -> None:
        log.error("[%s] fatal: %s", self.member_id, message)
        self.fatal_error = message
        self.state = WorkerState.FATAL
        self._sync = None
        self._lose_all()

    def rejoin_due(self, now_ms: int) -> bool:
        """Whether a Stable worker's next poll at ``now_ms`` does more than heartbeat: a
        scheduled rebalance delay expired (KIP-415), a rejoin was asked for, the connector
        configuration changed, or a revocation outlasted its poll timeout. A heartbeat that is
        due is none of these: it keeps the member in its generation (``AbstractCoordinator``'s
        heartbeat thread) and moves nothing."""
        if self.state is not WorkerState.STABLE:
            return False
        if self._revoking is not None:
            expiry = self.poll_timeout_at()
            return expiry is not None and expiry <= now_ms
        return (self._scheduled_rejoin is not None and now_ms >= self._scheduled_rejoin) \
            or self._rejoin_reason is not None or self._config_changed()

    def _config_changed(self) -> bool:
        joined = self._joined_config
        if joined is None or self.state is not WorkerState.STABLE:
            return False
        now = self.config_store.snapshot()
        return now.offset != joined.offset and dict(now.connectors) != dict(joined.connectors)

    def __repr__(self) -> str:
        return (f"ClassicConnectWorker({self.member_id or self.url!r}, {self.state.value}, "
                f"gen={self.generation}, runs={self.running})")
