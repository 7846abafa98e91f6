"""A sans-IO Kafka Connect worker on the new protocol: the client side of a ``connect`` group.

Implements the worker of the Connect draft (and its later revision):
ConnectGroupHeartbeat membership, the "Rebalance Process" (revoke, acknowledge, then assign),
fencing, leaving, and the client-side assignment it runs when the coordinator chooses it
(ConnectGroupPrepareAssignment, the Eager or KIP-415 Incremental Cooperative assignor of
:mod:`.assignors`, ConnectGroupInstallAssignment), with KIP-415's deferred resolution carried by
the client assignor's reason field (the draft's "Triggering Rebalances").

**Reuse, not a copy.** :class:`ConnectWorker` is a :class:`~groupcoord.client.consumer.ConsumerMember`
whose items are connectors and tasks instead of partitions: the consumer's scheduling (interval,
expedited acknowledgements, backoff), full/partial requests, reconciliation (one step at a time,
:data:`~.listener.DEFER`), fencing, fatal errors and leaving apply unchanged. An item is the
tuple ``(connector, task)`` with task ``-1`` for the connector itself (the consumer's
reconciliation only compares and subtracts sets). This module overrides what differs: the request
built (url, client assignors, owned connectors and tasks), how a response's assignment is read,
and the assigner duties. A driver runs it like the consumer member: ``poll_request(now_ms)``
(call until it returns None: besides the heartbeat a Prepare or Install may be due), send,
``on_response`` / ``on_request_failed``, wake at ``next_deadline()``.

**Pluggable assignors** (the Connect draft's ``ConnectAssignor``: name, assign, onAssignment;
:class:`~.assignors.ConnectAssignor`). ``assignors`` takes names from the registry of
:mod:`.assignors` (:func:`~.assignors.register_assignor`) or instances, in preference order;
each is advertised with its own version range. The chosen worker runs the assignor the Prepare
names; the built-in Incremental Cooperative one gets its leader-state handling below, any other
one round on the members with their current target as allocation. Every worker calls its
assignor's ``on_assignment`` with newly assigned work before the listener's ``on_assigned``.

**Client assignors advertised by default** (``protocol``, after Connect's ``connect.protocol``): ``eager``
advertises ``eager`` [0-0]; ``compatible`` advertises ``incremental-cooperative`` [1-1] then
``eager`` [0-0]; ``sessioned`` ``incremental-cooperative`` [1-2] then ``eager``. The coordinator
uses an assignor every worker supports (so one eager-only worker makes the group eager, as a
Connect group falls back to the lowest common protocol) and chooses the worker whose version
range covers every other's. Each assignor's metadata is the worker's Connect metadata of
:mod:`.protocol` (version, url, config offset -1: the configuration comes from the coordinator,
and no allocation: the coordinator knows every worker's target; a changing allocation in the
metadata would bump the group epoch at every round).

**Assigner duties.** The mechanics (when to send Prepare and Install, dropping a round on any
error, the request in flight) are :class:`~groupcoord.client.consumer.ConsumerMember`'s, shared
with consumer members using client-side assignors; this class supplies the Connect requests and
the computation. ShouldComputeAssignment in a heartbeat response makes the worker send a
Prepare; the response is adapted to the assignors' inputs (members with their current target as
their allocation, the configuration snapshot from the response's connectors and config offset,
generation = group epoch) and the result installed as a declarative target (each worker's
complete set; per-worker metadata = the Connect assignment header of :mod:`.protocol`: leader,
leader url, config offset, delay; the items themselves are in the target). Any error of Prepare
or Install (INVALID_ASSIGNMENT, FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: no longer the chosen one,
a lost request) drops the round: the coordinator asks again in the next heartbeat response while
a target is needed.

Incremental Cooperative on the new protocol:

- the leader state (:class:`~.assignors.CooperativeLeaderState`) persists in the worker's assignor
  across rounds; it is trusted when this worker computed the installed target (its previous
  generation equals the Prepare's assignment epoch). Otherwise (a new assigner, a failed
  install) it is seeded from the Prepare: the previous assignment is every worker's target plus
  the departed workers' entries (the work they left behind is lost, not new), and while this
  worker knows a scheduled delay is running (from the last assignment metadata it received) every
  configured item counts as previously assigned and the delay keeps its deadline - the KIP's
  "Leader bounces" table, which upstream's new leader does not reproduce;
- load-balancing revocations: upstream revokes in one round and assigns in the follow-up
  rebalance the revoked workers trigger. A declarative target must place every item, so the
  worker runs the follow-up round at once on the allocations of the first (at most
  :data:`MAX_FOLLOW_UP_ROUNDS`) and installs its result; the coordinator's reconciliation does the
  revoke-before-assign;
- a delay > 0 is installed as ``scheduled_rebalance_delay_ms`` (the lost items stay unassigned);
  when it expires the worker that installed it bumps its client assignor's reason (int8, wrapping)
  and heartbeats at once: the group epoch bumps and the next round reassigns the lost work. The
  timer is armed by the Install's answer or, when that answer is lost although the coordinator
  applied the Install, by the installed assignment's header naming this worker as leader with a
  delay (the coordinator schedules nothing; without this nobody would ever ask for the follow-up).

Not here: the asyncio driver and wire encoding (another module), starting and stopping real
connector/task objects (the listener's business), offset commits for source connectors,
config-topic reads (the configuration is the coordinator's ConnectorsTasks state),
CONFIG_MISMATCH (the assigner's snapshot is the coordinator's; it cannot lag a worker).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from groupcoord.client.connect.assignors import (
    DEFAULT_MAX_DELAY_MS,
    EAGER,
    INCREMENTAL_COOPERATIVE,
    ConnectAssignor,
    ConnectGroupAssignment,
    CooperativeLeaderState,
    IncrementalCooperativeAssignor,
    create_assignor,
    resolve_assignors,
)
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import ConnectRebalanceListener
from groupcoord.client.consumer import (
    ClientMemberState,
    ConsumerMember,
    Partitions,
    RebalanceListener,
)
from groupcoord.coordinator.modern.connect import messages as wire
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.protocol.connect_protocol import (
    CONNECT_PROTOCOL_V0,
    CONNECT_PROTOCOL_V1,
    CONNECT_PROTOCOL_V2,
    CONNECTOR_TASK,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
    ConnectProtocolError,
    WorkerMetadata,
    decode_assignment,
    encode_assignment,
    encode_worker_metadata,
)

__all__ = [
    "EAGER",
    "INCREMENTAL_COOPERATIVE",
    "MAX_FOLLOW_UP_ROUNDS",
    "PROTOCOLS",
    "ConnectWorker",
    "Item",
    "items_of",
    "to_model",
    "to_wire",
]

log = logging.getLogger(__name__)

#: ``protocol`` -> the client assignors advertised, in preference order: (name, min, max).
PROTOCOLS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "eager": ((EAGER, CONNECT_PROTOCOL_V0, CONNECT_PROTOCOL_V0),),
    "compatible": ((INCREMENTAL_COOPERATIVE, CONNECT_PROTOCOL_V1, CONNECT_PROTOCOL_V1),
                   (EAGER, CONNECT_PROTOCOL_V0, CONNECT_PROTOCOL_V0)),
    "sessioned": ((INCREMENTAL_COOPERATIVE, CONNECT_PROTOCOL_V1, CONNECT_PROTOCOL_V2),
                  (EAGER, CONNECT_PROTOCOL_V0, CONNECT_PROTOCOL_V0)),
}

#: Follow-up rounds run at once after a round that revoked work (see the module doc).
MAX_FOLLOW_UP_ROUNDS = 3

#: An item of the reconciliation: (connector, task), task -1 for the connector itself.
Item = tuple[str, int]

_ASSIGNOR_ERROR = 1  # the Install's Error when the assignor cannot compute


# ----------------------------------------------------------------------------- conversions


def items_of(connectors: Iterable[str], tasks: Iterable[tuple[str, int]]) -> frozenset[Item]:
    return frozenset([(c, CONNECTOR_TASK) for c in connectors] + [(t[0], t[1]) for t in tasks])


def to_model(items: Iterable[Item]) -> ConnectorsAndTasks:
    """Items -> the assignors' sorted :class:`~.model.ConnectorsAndTasks`."""
    items = list(items)
    return ConnectorsAndTasks.of([c for c, t in items if t == CONNECTOR_TASK],
                                 [ConnectorTaskId(c, t) for c, t in items if t != CONNECTOR_TASK])


def to_wire(items: Iterable[Item] | ConnectorsAndTasks) -> wire.ConnectorsAndTasks:
    m = items if isinstance(items, ConnectorsAndTasks) else to_model(items)
    return wire.ConnectorsAndTasks(m.connectors, tuple(wire.ConnectorTaskId(t.connector, t.task)
                                                       for t in m.tasks))


def _from_wire(ct: wire.ConnectorsAndTasks) -> frozenset[Item]:
    return items_of(ct.connectors, ct.tasks)


def _parts(items: frozenset[Item]) -> Partitions:
    """Items in the consumer machinery's set type (its reconciliation is type-agnostic)."""
    return cast(Partitions, items)


def _items(parts: Partitions) -> frozenset[Item]:
    return cast(frozenset[Item], parts)


class _ListenerAdapter(RebalanceListener):
    """The consumer's partition callbacks, as the worker's connector/task callbacks;
    ``before_assigned`` runs first on newly assigned work (the assignor's ``on_assignment``)."""

    def __init__(self, listener: ConnectRebalanceListener,
                 before_assigned: Callable[[ConnectorsAndTasks], None] | None = None) -> None:
        self.listener = listener
        self.before_assigned = before_assigned

    def on_partitions_revoked(self, partitions: Partitions) -> object:
        m = to_model(_items(partitions))
        return self.listener.on_revoked(m.connectors, m.tasks)

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        m = to_model(_items(partitions))
        if self.before_assigned is not None:
            self.before_assigned(m)
        self.listener.on_assigned(m.connectors, m.tasks)

    def on_partitions_lost(self, partitions: Partitions) -> None:
        m = to_model(_items(partitions))
        self.listener.on_lost(m.connectors, m.tasks)


WorkerRequest = (wire.ConnectGroupHeartbeatRequest | wire.ConnectGroupPrepareAssignmentRequest
                 | wire.ConnectGroupInstallAssignmentRequest)


class ConnectWorker(ConsumerMember):
    """One Connect worker of a ``connect`` group (see the module doc)."""

    def __init__(
        self,
        group_id: str,
        *,
        url: str,
        protocol: str = "sessioned",
        max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        listener: ConnectRebalanceListener | None = None,
        assignors: Sequence[str | ConnectAssignor] | None = None,
        **kw: Any,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        kw.setdefault("client_id", "groupcoord-connect-worker")
        self.connect_listener = listener or ConnectRebalanceListener()
        super().__init__(group_id, listener=_ListenerAdapter(self.connect_listener,
                                                             self._on_assignment), **kw)
        self.url = url
        self.protocol = protocol
        #: The client assignors (the Connect draft's ``ConnectAssignor``), in preference order.
        self.assignors = self._build_assignors(protocol, max_delay_ms, assignors)
        #: The reason of the advertised assignors (bumped when a scheduled delay expires).
        self.reason = 0
        #: From the last assignment received: the Connect assignment header (leader, delay...).
        self.assignment_header: ConnectAssignment | None = None
        self.assignment_error = 0
        #: When the delay of the last assignment received ends (0: none running).
        self.group_delay_deadline_ms = 0
        #: When this worker bumps its reason (it installed a target with a delay; 0: never).
        self.reason_bump_at_ms = 0
        self.stats["reason_bumps"] = 0
        self._install_delay = 0
        self._sent_url: str | None = None

    # ------------------------------------------------------------------ application API

    @property
    def running(self) -> ConnectorsAndTasks:
        """The connectors and tasks this worker runs now."""
        return to_model(_items(self.owned))

    @staticmethod
    def _build_assignors(protocol: str, max_delay_ms: int,
                         given: Sequence[str | ConnectAssignor] | None) -> tuple[ConnectAssignor, ...]:
        """The worker's assignors: ``given`` (names from the registry of :mod:`.assignors`, or
        instances), else the built-in ones ``protocol`` advertises."""
        if given is None:
            built: list[ConnectAssignor] = []
            for name, _lo, hi in PROTOCOLS[protocol]:
                if name == INCREMENTAL_COOPERATIVE:
                    built.append(IncrementalCooperativeAssignor(max_delay_ms, maximum_version=hi))
                else:
                    built.append(create_assignor(name, max_delay_ms))
            return tuple(built)
        return resolve_assignors(given, max_delay_ms)

    def assignor(self, name: str) -> ConnectAssignor | None:
        """This worker's assignor named ``name``, if it has one."""
        return next((a for a in self.assignors if a.name == name), None)

    @property
    def cooperative(self) -> IncrementalCooperativeAssignor | None:
        """The built-in Incremental Cooperative assignor, if this worker has it."""
        a = self.assignor(INCREMENTAL_COOPERATIVE)
        return a if isinstance(a, IncrementalCooperativeAssignor) else None

    def client_assignors(self) -> tuple[ClientAssignor, ...]:
        """The assignors advertised: each with its version range, and as metadata the worker's
        Connect metadata at its highest version (protocol versions above 2 are written as 2)."""
        def meta(version: int) -> bytes:
            v = min(max(version, CONNECT_PROTOCOL_V0), CONNECT_PROTOCOL_V2)
            return encode_worker_metadata(WorkerMetadata(v, self.url, -1, None))
        return tuple(ClientAssignor(a.name, a.minimum_version, a.maximum_version, self.reason,
                                    a.maximum_version, meta(a.maximum_version))
                     for a in self.assignors)

    def _on_assignment(self, work: ConnectorsAndTasks) -> None:
        """The draft's Rebalance Process step 2b: ``ConnectAssignor.onAssignment`` with the newly
        assigned work (and the last assignment header: leader, config offset, delay), before the
        listener. The assignor called is the first of this worker's whose version range holds
        the assignment's version (the heartbeat does not name the group's assignor)."""
        h = self.assignment_header
        version = h.version if h is not None else CONNECT_PROTOCOL_V0
        a = next((x for x in self.assignors
                  if x.minimum_version <= version <= x.maximum_version), None)
        if a is None:
            return
        assignment = ConnectAssignment(
            version, self.assignment_error, h.leader if h else "", h.leader_url if h else "",
            h.config_offset if h else -1, work.connectors, work.tasks,
            delay=h.delay if h else 0)
        a.on_assignment(assignment, self.member_epoch)

    def join(self, now_ms: int | None = None) -> None:
        """Join the group (at epoch 0); nothing if already a member or joining."""
        if now_ms is not None:
            self._now = now_ms
        if self.state in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED):
            self._transition_to_joining()
            self._retry_at_ms = 0

    def subscribe(self, topics: Iterable[str] | None = None, *, regex: str | None = None,
                  now_ms: int | None = None) -> None:
        raise TypeError("a Connect worker does not subscribe to topics: use join()")

    # ------------------------------------------------------------------ driver API

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (super().next_deadline(), self._bump_deadline())
                     if d is not None]
        return min(deadlines) if deadlines else None

    def poll_request(self, now_ms: int) -> WorkerRequest | None:
        """The next request to send now, if any (call again until None)."""
        return cast(WorkerRequest | None, super().poll_request(now_ms))

    def _before_heartbeat(self, now_ms: int) -> None:
        bump = self._bump_deadline()
        if bump is not None and now_ms >= bump:
            self.reason = (self.reason + 1) % 128
            self.reason_bump_at_ms = 0
            self.stats["reason_bumps"] += 1
            self._next_heartbeat_ms = now_ms  # expedite: the change is the point
            log.info("[%s] worker %s: scheduled delay expired, assignor reason now %d",
                     self.group_id, self.member_id, self.reason)

    # ------------------------------------------------------------------ heartbeat (overrides)

    def _build(self) -> wire.ConnectGroupHeartbeatRequest:  # type: ignore[override]
        epoch = 0 if self.state is ClientMemberState.JOINING else self.member_epoch
        # Every request at epoch 0 is a full one: the coordinator validates it as a join.
        full = self._send_full or epoch == 0
        owned = self.owned
        if epoch == 0:
            ct: wire.ConnectorsAndTasks | None = wire.EMPTY_CONNECTORS_AND_TASKS
        elif full or owned != self._sent_owned:
            ct = to_wire(_items(owned))
        else:
            ct = None
        assignors = self.client_assignors()
        rebalance = self.rebalance_timeout_ms
        req = wire.ConnectGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=rebalance if full or rebalance != self._sent_rebalance_timeout
            else -1,
            client_assignors=assignors if full or assignors != self._sent_assignors else None,
            connectors_and_tasks=ct,
            url=self.url if full or self.url != self._sent_url else None,
            client_id=self.client_id, client_host=self.client_host)
        self._sent_assignors = assignors
        self._sent_url = self.url
        self._sent_rebalance_timeout = rebalance
        if ct is not None:
            self._sent_owned = owned
        self._send_full = False
        if full:
            self.stats["full"] += 1
        return req

    def _leave_request(self, epoch: int) -> wire.ConnectGroupHeartbeatRequest:  # type: ignore[override]
        return wire.ConnectGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch,
            instance_id=self.instance_id, client_id=self.client_id, client_host=self.client_host)

    def _reset_sent(self) -> None:
        super()._reset_sent()
        self._sent_url = None

    def _on_success(self, resp: Any, req: Any, now_ms: int) -> None:
        assert isinstance(resp, wire.ConnectGroupHeartbeatResponse)
        a = resp.assignment
        if a is not None:
            self.assignment_error = a.error
            self._read_header(a.metadata_bytes, now_ms)
        super()._on_success(cast(Any, resp), req, now_ms)

    def _target_of(self, resp: Any) -> Partitions | None:
        a = resp.assignment
        return None if a is None else _parts(_from_wire(a.connectors_and_tasks))

    def _read_header(self, raw: bytes, now_ms: int) -> None:
        if not raw:
            return
        try:
            header = decode_assignment(raw)
        except ConnectProtocolError as e:
            log.warning("[%s] worker %s: undecodable assignment metadata: %s", self.group_id,
                        self.member_id, e)
            return
        if header != self.assignment_header:
            self.assignment_header = header
            self.group_delay_deadline_ms = now_ms + header.delay if header.delay > 0 else 0
            if header.leader != self.member_id:
                self.reason_bump_at_ms = 0  # another worker installed since: its delay now
            elif header.delay > 0 and not self.reason_bump_at_ms:
                # This worker's own Install was applied but its answer never came (timed out,
                # connection lost): the installed target says the follow-up is still ours.
                self.reason_bump_at_ms = self.group_delay_deadline_ms

    # ------------------------------------------------------------------ assigner duties

    def _bump_deadline(self) -> int | None:
        if self.reason_bump_at_ms and self._assigning():
            return self.reason_bump_at_ms
        return None

    def _prepare_request(self) -> wire.ConnectGroupPrepareAssignmentRequest:
        return wire.ConnectGroupPrepareAssignmentRequest(self.group_id, self.member_id,
                                                         self.member_epoch)

    def _is_assign_response(self, resp: object) -> bool:
        return isinstance(resp, (wire.ConnectGroupPrepareAssignmentResponse,
                                 wire.ConnectGroupInstallAssignmentResponse))

    def _is_prepare(self, msg: object) -> bool:
        return isinstance(msg, (wire.ConnectGroupPrepareAssignmentRequest,
                                wire.ConnectGroupPrepareAssignmentResponse))

    def _compute_install(self, resp: Any, now_ms: int) -> wire.ConnectGroupInstallAssignmentRequest:
        install, self._install_delay = self._compute(resp, now_ms)
        return install

    def _on_installed(self, now_ms: int) -> None:
        self.reason_bump_at_ms = now_ms + self._install_delay if self._install_delay else 0
        super()._on_installed(now_ms)  # learn the new target at once

    def _drop_assigner_duties(self) -> None:
        super()._drop_assigner_duties()
        self.reason_bump_at_ms = 0

    def _compute(self, p: wire.ConnectGroupPrepareAssignmentResponse,
                 now_ms: int) -> tuple[wire.ConnectGroupInstallAssignmentRequest, int]:
        """Run the group's assignor on the Prepare response; the Install to send and its delay."""
        config = ConfigSnapshot(p.config_offset, {c.name: c.task_count for c in p.connectors})
        targets = {m.member_id: to_model(_from_wire(m.connectors_and_tasks)) for m in p.members}
        urls = {m.member_id: m.url for m in p.members}
        install = wire.ConnectGroupInstallAssignmentRequest(
            self.group_id, self.member_id, self.member_epoch, p.group_epoch)
        if self.member_id not in targets:
            return replace_error(install), 0
        assignor = self.assignor(p.assignor_name)
        if assignor is None:
            log.warning("[%s] worker %s: unknown assignor %r", self.group_id, self.member_id,
                        p.assignor_name)
            return replace_error(install), 0
        if isinstance(assignor, IncrementalCooperativeAssignor):
            result = self._cooperative(p, config, targets, urls, now_ms, assignor)
        else:
            result = self._plugged(p, config, targets, urls, now_ms, assignor)
        if result.error != NO_ERROR:
            return replace_error(install), 0
        members_out = tuple(
            wire.ConnectInstalledMember(
                mid, to_wire(result.allocations[mid]), 0, a.version,
                encode_assignment(ConnectAssignment(a.version, a.error, a.leader, a.leader_url,
                                                    a.config_offset, delay=a.delay)))
            for mid, a in sorted(result.assignments.items()))
        return wire.ConnectGroupInstallAssignmentRequest(
            self.group_id, self.member_id, self.member_epoch, p.group_epoch, 0, members_out,
            scheduled_rebalance_delay_ms=result.delay), result.delay

    def _plugged(self, p: wire.ConnectGroupPrepareAssignmentResponse, config: ConfigSnapshot,
                 targets: dict[str, ConnectorsAndTasks], urls: dict[str, str], now_ms: int,
                 assignor: ConnectAssignor) -> ConnectGroupAssignment:
        """Any other assignor (eager, or one plugged in): one round on the members with their
        current target as their allocation, at the lowest version the members use within the
        assignor's range."""
        version = min(max(assignor.minimum_version, min(m.assignor.version for m in p.members)),
                      assignor.maximum_version)
        members = {mid: WorkerMetadata(version, urls[mid], p.config_offset, ConnectAssignment(
            version, NO_ERROR, self.member_id, urls[self.member_id], p.config_offset,
            a.connectors, a.tasks)) for mid, a in targets.items()}
        return assignor.assign(self.member_id, members, config, now_ms=now_ms,
                               generation=p.group_epoch,
                               last_completed_generation=p.assignment_epoch,
                               protocol_version=version)

    def _cooperative(self, p: wire.ConnectGroupPrepareAssignmentResponse, config: ConfigSnapshot,
                     targets: dict[str, ConnectorsAndTasks], urls: dict[str, str],
                     now_ms: int, assignor: IncrementalCooperativeAssignor) -> ConnectGroupAssignment:
        version = max(CONNECT_PROTOCOL_V1, min(m.assignor.version for m in p.members))
        if assignor.state.previous_generation != p.assignment_epoch:
            assignor.state = self._seed(p, config, targets, now_ms, assignor)

        def members_of(allocs: dict[str, ConnectorsAndTasks]) -> dict[str, WorkerMetadata]:
            return {mid: WorkerMetadata(version, urls[mid], p.config_offset, ConnectAssignment(
                version, NO_ERROR, self.member_id, urls[self.member_id], p.config_offset,
                a.connectors, a.tasks)) for mid, a in allocs.items()}

        result = assignor.assign(self.member_id, members_of(targets), config, now_ms=now_ms,
                                 generation=p.group_epoch,
                                 last_completed_generation=p.assignment_epoch,
                                 protocol_version=version)
        for _ in range(MAX_FOLLOW_UP_ROUNDS):
            if result.delay or not any(a.revoked_connectors or a.revoked_tasks
                                       for a in result.assignments.values()):
                break
            result = assignor.assign(self.member_id, members_of(dict(result.allocations)), config,
                                     now_ms=now_ms, generation=p.group_epoch,
                                     last_completed_generation=p.group_epoch,
                                     protocol_version=version)
        return result

    def _seed(self, p: wire.ConnectGroupPrepareAssignmentResponse, config: ConfigSnapshot,
              targets: dict[str, ConnectorsAndTasks], now_ms: int,
              assignor: IncrementalCooperativeAssignor) -> CooperativeLeaderState:
        """The leader state of an assigner that did not compute the installed target."""
        connectors: set[str] = set()
        tasks: set[ConnectorTaskId] = set()
        for t in [*targets.values(), *(to_model(_from_wire(d.connectors_and_tasks))
                                       for d in p.departed_members)]:
            connectors.update(t.connectors)
            tasks.update(t.tasks)
        deadline = max(self.group_delay_deadline_ms, assignor.state.scheduled_rebalance_ms)
        scheduled = deadline if deadline > now_ms else 0
        if scheduled:  # a delay runs: unassigned configured work is lost work, not new
            connectors |= set(config.connectors)
            tasks |= config.task_ids()
        return CooperativeLeaderState(
            previous_connectors=connectors, previous_tasks=tasks,
            scheduled_rebalance_ms=scheduled, previous_generation=p.assignment_epoch,
            previous_members=frozenset(targets) | {d.member_id for d in p.departed_members})


def replace_error(r: wire.ConnectGroupInstallAssignmentRequest) -> wire.ConnectGroupInstallAssignmentRequest:
    """The Install reporting that the assignor could not compute (the target is kept)."""
    return wire.ConnectGroupInstallAssignmentRequest(r.group_id, r.member_id, r.member_epoch,
                                                     r.group_epoch, error=_ASSIGNOR_ERROR)
