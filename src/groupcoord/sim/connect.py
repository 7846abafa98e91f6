"""Connect workers in the simulator (issue #7): protocol ``connect`` (KIP-848-style connect groups).

Protocol ``connect``, variants ``eager`` and ``cooperative``: each simulated process runs a real
:class:`groupcoord.client.connect.worker.ConnectWorker` (ConnectGroupHeartbeat; when the
coordinator chooses it, ConnectGroupPrepareAssignment, the Eager or KIP-415 Incremental
Cooperative assignor, ConnectGroupInstallAssignment) against the connect groups of the real
:class:`Shard`, through the faulty network of ``sim.network``. ``eager`` workers advertise only
the eager assignor; ``cooperative`` workers run Connect's ``sessioned`` protocol (incremental
cooperative, KIP-415 deferred resolution with the scenario's
``scheduled_rebalance_max_delay_ms``).

**Reuse.** A ConnectWorker is a KIP-848 consumer member whose items are ``(connector, task)``
(task -1: the connector itself), so :class:`ConnectSimulation` extends
:class:`groupcoord.sim.consumer.ConsumerSimulation`: process names and incarnations, the
scenario's member events (join, leave, crash, bounce, rolling-bounce, scale, slow,
network-partition, coordinator-failover), the network plumbing to the coordinator, restarts,
slow revocations, the members' I1 bookkeeping (who runs what, fencing), downtime and moves, the
shadow of the coordinator's holdings (record by record) are all the consumer simulation's. This
module overrides what differs: the member (a worker joins instead of subscribing), the requests
and responses (Prepare and Install besides the heartbeat), the records shadowed (the connect
group's current assignment records), I2, convergence and the I5 bound.

**Resources** are connectors and tasks: the *universe* is the simulation's configuration
(connector -> task count) from the scenario's ``connectors`` (a scenario without connectors -
the generic built-ins - gets one connector per topic, with as many tasks as the topic has
partitions). Downtime is the time a configured connector or task had no worker running it.
Connector events (``add-connector``, ``remove-connector``, ``update-tasks``) go to the
coordinator as the connect config admin request (``ConnectGroupConfigRequest``; workers learn
the configuration from the coordinator); while the coordinator is loading the admin retries.

**Invariants** after every step (DESIGN.md; see ``sim.consumer`` for the machinery):

- **I1** coordinator view: a current assignment record never gives an item another worker still
  holds (assigned or pending revocation); workers' view: a worker starts running an item only
  when the coordinator holds it for it and no other unfenced worker runs it.
- **I2** on every installed target (assignment epoch = group epoch): items of the configuration
  only, each at most once, only to members; every configured item assigned unless the install
  carried a scheduled delay (KIP-415 deferred resolution: lost work waits for the delay).
- **I3** epochs as in ``sim.consumer`` (group and assignment epochs never decrease, a worker's
  epoch never decreases within an incarnation, client side never ahead of the coordinator).
- **I4** checkpoints and failovers (``sim.engine``).
- **I5** after the faults stop, within :meth:`ConnectSimulation.i5_bound`: the group is at its
  target, every live worker a member at the group epoch running exactly its assignment, and
  every configured connector and task runs.
- **I6** is not exercised: the simulated workers commit no offsets.

Not here: classic Connect workers (``classic-connect``: ``sim.classic_connect``, which reuses
this class), topic events for workers (``add-partitions`` and the like only change the metadata image,
which connect groups ignore), ``subscribe`` events (skipped: workers do not subscribe).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from groupcoord.client.connect.listener import DEFER
from groupcoord.client.connect.worker import ConnectWorker, Item
from groupcoord.client.consumer import MemberState, Partitions
from groupcoord.coordinator.connect_group import ConnectGroup, items_of
from groupcoord.coordinator.connect_messages import (
    ConnectGroupConfigRequest,
    ConnectGroupConfigResponse,
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    ConnectorConfigOp,
)
from groupcoord.coordinator.records import Record, RecordType
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.consumer import ConsumerSimulation, Proc, _Msg
from groupcoord.sim.engine import Violation
from groupcoord.sim.network import REORDER_SPIKE
from groupcoord.sim.scenario import CONNECT_EVENT_KINDS, Event, Scenario, random_scenario

_E = ErrorCode
_CURRENT = RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT
_TARGET_META = RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA
_TARGET_MEMBER = RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER
_OFFSET = RecordType.OFFSET_COMMIT
_LEFT = (MemberState.UNJOINED, MemberState.UNSUBSCRIBED, MemberState.FATAL)
_RETRY_BACKOFF_MAX_MS = 1_000
#: How long the admin waits before retrying a config request the coordinator could not take.
ADMIN_RETRY_MS = 200
#: Worker protocol (``connect.protocol``) per variant.
WORKER_PROTOCOL = {"eager": "eager", "cooperative": "sessioned"}


class SimWorker(ConnectWorker):
    """The simulator starts every process with ``subscribe()``; a worker joins instead."""

    def subscribe(self, topics: Iterable[str] | None = None, *, regex: str | None = None,
                  now_ms: int | None = None) -> None:
        self.join(now_ms)


class _Current:
    """A connect current-assignment value seen as the consumer one ``sim.consumer`` shadows."""

    __slots__ = ("assigned_partitions", "member_epoch", "partitions_pending_revocation")

    def __init__(self, v: Any) -> None:
        self.member_epoch = v.member_epoch
        self.assigned_partitions = v.assigned
        self.partitions_pending_revocation = v.pending_revocation


def show(item: Item) -> str:
    """``A`` for connector A, ``A/0`` for its task 0."""
    c, t = item
    return c if t < 0 else f"{c}/{t}"


def config_items(config: dict[str, int]) -> frozenset[Item]:
    return frozenset((c, t) for c, n in config.items() for t in range(-1, n))


class ConnectSimulation(ConsumerSimulation):
    """Connect workers on the new protocol under faults (protocol ``connect``)."""

    protocol = "connect"
    #: Worker class (tests substitute a broken one).
    worker_class: type[ConnectWorker] = SimWorker

    def __init__(self, scenario: Scenario, seed: int, variant: str = "", **kw: Any) -> None:
        if scenario.source == "random" and not scenario.connectors:
            scenario = random_scenario(seed, resource="tasks")
        elif not scenario.connectors:  # a generic built-in: one connector per topic
            scenario = replace(scenario, connectors=scenario.topics)
        super().__init__(scenario, seed, variant, **kw)

    # ================================================================== setup, workers

    def setup(self) -> None:
        #: The configuration the admin asked for (the universe of resources).
        self.connectors: dict[str, int] = dict(self.scenario.connectors)
        super().setup()
        self.stats.update({"prepares": 0, "installs": 0, "assign_errors": 0, "items_revoked": 0,
                           "config_requests": 0, "config_retries": 0, "config_rejected": 0})
        ops = tuple(ConnectorConfigOp("create", c, n) for c, n in sorted(self.connectors.items()))
        if ops:
            self._configure(ops)

    def new_member(self, name: str, instance_id: str | None) -> ConnectWorker:
        sc = self.scenario
        return self.worker_class(
            sc.group_id, url=f"http://{name}:8083",
            protocol=WORKER_PROTOCOL.get(self.variant or "cooperative", "sessioned"),
            max_delay_ms=sc.max_delay_ms, member_id=self.new_member_id(),
            instance_id=instance_id, rebalance_timeout_ms=sc.rebalance_timeout_ms,
            client_id=name, request_timeout_ms=sc.request_timeout_ms,
            retry_backoff_max_ms=_RETRY_BACKOFF_MAX_MS)

    # ================================================================== configuration

    def apply_member_event(self, ev: Event) -> None:
        k = ev.kind
        if k in CONNECT_EVENT_KINDS:
            c = ev["connector"]
            have = c in self.connectors
            if k == "add-connector" and not have:
                self.connectors[c] = ev["tasks"]
                self._configure((ConnectorConfigOp("create", c, ev["tasks"]),))
            elif k == "remove-connector" and have:
                del self.connectors[c]
                self._configure((ConnectorConfigOp("delete", c),))
            elif k == "update-tasks" and have and self.connectors[c] != ev["tasks"]:
                self.connectors[c] = ev["tasks"]
                self._configure((ConnectorConfigOp("update", c, ev["tasks"]),))
            else:
                self.trace("skip", "", "", f"{k} {c}: nothing to change")
            self._universe_dirty = True
        elif k == "subscribe":
            self.trace("skip", "", "", "subscribe: workers do not subscribe")
        else:
            super().apply_member_event(ev)

    def _configure(self, ops: tuple[ConnectorConfigOp, ...]) -> None:
        """The admin's ConnectGroupConfig request (retried while the coordinator loads)."""
        what = ", ".join(f"{o.op} {o.connector}" + (f"={o.task_count}" if o.op != "delete"
                                                     else "") for o in ops)
        if not self.coord.up:
            self.stats["config_retries"] += 1
            self.at(self.now + ADMIN_RETRY_MS, lambda _: self._configure(ops))
            return
        self.stats["config_requests"] += 1
        self.counters["messages"] += 2
        res = self.coord.shard.handle(ConnectGroupConfigRequest(self.gid, ops), self.now)
        self.coordinator_result(res)
        resp = res.response
        assert isinstance(resp, ConnectGroupConfigResponse)
        if resp.error_code:
            self.stats["config_rejected"] += 1
            self.trace("config<", "admin", "", f"{what}: {error_name(resp.error_code)}")
        else:
            self.trace("config", "admin", f"offset={resp.config_offset}", what)

    def _recompute_universe(self) -> None:
        self._universe_dirty = False
        u = config_items(self.connectors)
        if u == self.universe and self._universe_key is not None:
            return
        self._universe_key = True
        self.universe = u  # type: ignore[assignment]  # items, not partitions (see the doc)
        self.set_unowned(sum(1 for it in u if it not in self.legit))

    # ================================================================== driving workers

    def _drive(self, p: Proc) -> None:
        """Send everything due (heartbeat, Prepare, Install), then schedule the next wake-up."""
        m: Any = p.member
        now = self.now
        timeouts = m.stats["timeouts"]
        state_before = m.state
        for _ in range(4):  # at most a heartbeat and one assignment request are due at once
            req = m.poll_request(now)
            if req is None:
                break
            self._send(p, req, m.last_correlation_id)
        if m.state is not state_before:
            self.dirty = True
        if m.stats["timeouts"] != timeouts:
            self.stats["timeouts"] += 1
            self.trace("timeout", p.name, m.member_epoch)
        if m.owned is not p.consuming:
            self._sync(p)
        if p.leaving and m.state is MemberState.UNJOINED:
            self.stats["left"] += 1
            self._stop(p, "exit")
            return
        self._schedule(p)

    def _send(self, p: Proc, req: Any, cid: int) -> None:
        self.counters["messages"] += 1
        if isinstance(req, ConnectGroupHeartbeatRequest):
            self.stats["heartbeats"] += 1
            ct = req.connectors_and_tasks
            self.trace("hb>", p.name, req.member_epoch, "" if ct is None else
                       ("full" if req.rebalance_timeout_ms > 0 else "owned"))
        elif isinstance(req, ConnectGroupPrepareAssignmentRequest):
            self.stats["prepares"] += 1
            self.trace("prepare>", p.name, req.member_epoch)
        elif isinstance(req, ConnectGroupInstallAssignmentRequest):
            self.stats["installs"] += 1
            self.trace("install>", p.name, req.member_epoch,
                       f"group epoch {req.group_epoch}" + (
                           f", delay {req.scheduled_rebalance_delay_ms} ms"
                           if req.scheduled_rebalance_delay_ms else "")
                       + (f", error {req.error}" if req.error else ""))
        msg = _Msg(p, p.gen, cid, req, self.coord.generation)
        for t in self.network.route(self.now, p.out_ch, p.name, False):
            self.at(t, self._to_coordinator, msg)

    def _error_response(self, req: Any, code: int) -> Any:
        if isinstance(req, ConnectGroupPrepareAssignmentRequest):
            return ConnectGroupPrepareAssignmentResponse(error_code=code, error_message="loading")
        if isinstance(req, ConnectGroupInstallAssignmentRequest):
            return ConnectGroupInstallAssignmentResponse(error_code=code, error_message="loading")
        return ConnectGroupHeartbeatResponse(error_code=code, error_message="loading")

    def _to_member(self, msg: _Msg) -> None:
        p = msg.proc
        if msg.gen != p.gen or not p.alive:
            return
        if p.name in self.network.cut:
            self.network.stats["cut"] += 1
            return
        if msg.coord_gen != self.coord.generation:
            return  # connection reset by the failover (the member was told)
        body = msg.body
        m: Any = p.member
        if isinstance(body, ConnectGroupPrepareAssignmentResponse | ConnectGroupInstallAssignmentResponse):
            kind = "prepare<" if isinstance(body, ConnectGroupPrepareAssignmentResponse) \
                else "install<"
            if not m.on_response(body, self.now, msg.cid):
                self.trace(f"{kind} stale", p.name, m.member_epoch)
            elif body.error_code:
                self.stats["assign_errors"] += 1
                self.trace(kind, p.name, m.member_epoch, error_name(body.error_code))
            else:
                self.trace(kind, p.name, m.member_epoch)
            self._drive(p)
            return
        inflight = m.inflight
        req = inflight.request if inflight is not None and inflight.correlation_id == msg.cid \
            else None
        before = m.member_epoch
        state_before = m.state
        if req is not None and body.error_code == 0 and req.member_epoch >= 0 \
                and m.state not in _LEFT and m.state is not MemberState.LEAVING:
            self._accept_success(p, req, body, msg.inc, before)
        if not m.on_response(body, self.now, msg.cid):
            self.trace("hb< stale", p.name, body.member_epoch)
        else:
            a = body.assignment
            if body.error_code:
                self.trace("hb<", p.name, before, error_name(body.error_code))
                if body.error_code in (_E.fenced_member_epoch, _E.unknown_member_id):
                    self.stats["fenced"] += 1
            elif a is not None or body.member_epoch != before or body.should_compute_assignment:
                ct, pend = (a.connectors_and_tasks, a.pending_connectors_and_tasks) \
                    if a is not None else (None, None)
                self.trace("hb<", p.name, body.member_epoch, ("" if ct is None or pend is None else
                           f"{len(ct.connectors) + len(ct.tasks)} assigned, "
                           f"{len(pend.connectors) + len(pend.tasks)} pending")
                           + (" compute" if body.should_compute_assignment else ""))
        if m.state is not state_before or m.member_epoch != before:
            self.dirty = True
        self._sync(p)
        if m.state is MemberState.FATAL:
            code = m.fatal_error[0] if m.fatal_error else 0
            self.trace("fatal", p.name, "", error_name(code))
            self._stop(p, "exit")
            self.stats["fatal_restarts"] += 1
            self._restart_later(p, self.scenario.restart_delay_ms)
            return
        self._drive(p)

    def on_revoked(self, p: Proc, parts: Partitions) -> object:
        """A worker stops connectors/tasks (slow workers take ``delay_ms``); no offsets."""
        self.trace("revoke", p.name, p.member.member_epoch, parts)
        self.stats["items_revoked"] += len(parts)
        if self.now < p.slow_until and p.slow_delay > 0:
            self.stats["slow_revocations"] += 1
            self.at(self.now + p.slow_delay, self._revocation_done, (p, p.gen))
            return DEFER
        return None

    def on_coordinator_down(self) -> None:
        """Connections reset: every request in flight (heartbeat, Prepare, Install) fails one
        latency later."""
        for p in list(self.live()):
            m: Any = p.member
            cids = [x.correlation_id for x in (m.inflight, m.assign_inflight) if x is not None]
            for cid in cids:
                self.at(self.now + self.network.draw(), self._connection_reset, (p, p.gen, cid))

    # ================================================================== coordinator records

    def on_records(self, records: list[Record]) -> bool:
        group = False
        for rec in records:
            t = rec.key.type
            if t is _OFFSET:
                continue
            group = True
            self._group_records = True
            if t is _CURRENT:
                key: Any = rec.key
                if key.group_id == self.gid:
                    v = rec.value
                    self._current_record(key.member_id, None if v is None
                                         else _Current(v))  # type: ignore[arg-type]
            elif t is _TARGET_META or t is _TARGET_MEMBER:
                self._target_dirty = True
        return group

    def _group(self) -> Any:
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        return g if isinstance(g, ConnectGroup) else None

    def check_target(self, g: Any) -> None:
        """I2 on an installed target (see the module docstring)."""
        self.stats["i2_checks"] += 1
        configured = g.config.items()
        given: dict[Item, str] = {}
        for mid in sorted(g.target_assignment):
            items = list(items_of(g.target_assignment[mid].items))
            if items and mid not in g.members:
                raise Violation("I2", f"the target at epoch {g.assignment_epoch} gives work to "
                                      f"{self._who(mid)}, not a member")
            for it in sorted(items):
                if it not in configured:
                    raise Violation("I2", f"the target assigns {show(it)}, not configured")
                if it in given:
                    raise Violation("I2", f"the target assigns {show(it)} twice "
                                          f"({self._who(given[it])}, {self._who(mid)})")
                given[it] = mid
        if g.scheduled_rebalance_delay_ms <= 0 and g.members:
            missing = sorted(configured - set(given))
            if missing:
                raise Violation("I2", f"the target at epoch {g.assignment_epoch} (no delay) "
                                      f"leaves {show(missing[0])} unassigned")

    # ================================================================== convergence

    def converged(self) -> bool:
        """The target of the group epoch is reached, every live worker a member at it running
        exactly its assignment, and every configured connector and task runs."""
        if not self.coord.up or self.network.cut or self.pending_restarts:
            return False
        g = self._group()
        live = [p for p in self.live() if p.member.state not in _LEFT]
        if g is None or not g.members:
            return not live
        epoch = g.group_epoch
        if epoch != g.assignment_epoch or len(g.members) != len(live) \
                or config_items(dict(g.config.connectors)) != self.universe:
            return False
        for p in live:
            m: Any = p.member
            cm = g.members.get(m.member_id)
            if cm is None or m.state is not MemberState.STABLE or m.member_epoch != epoch \
                    or not cm.is_reconciled_to(epoch) or cm.pending_revocation \
                    or m.assign_inflight is not None or self.is_fenced(p):
                return False
            if frozenset(items_of(cm.assigned)) != m.owned:
                return False
        legit = self.legit
        return all(it in legit for it in self.universe)

    def _convergence_gap(self) -> str:
        g = self._group()
        if not self.coord.up:
            return "coordinator down"
        if g is None:
            return "no group"
        parts = [f"group epoch {g.group_epoch}, assignment epoch {g.assignment_epoch}, "
                 f"state {g.state().value}, delay {g.scheduled_rebalance_delay_ms} ms, "
                 f"not running {self.format_resource(self.universe - set(self.legit))}"]
        live = {p.member.member_id: p for p in self.live() if p.member.state not in _LEFT}
        for mid in sorted(set(g.members) | set(live)):
            cm = g.members.get(mid)
            p = live.get(mid)
            mine = "-" if p is None else f"e={p.member.member_epoch} {p.member.state.value}"
            parts.append(f"{p.name if p else '(no process)'}/{mid}: coordinator "
                         f"{'-' if cm is None else f'e={cm.member_epoch} {cm.state.name}'}, "
                         f"worker {mine}")
        return "; ".join(parts)

    def i5_bound(self) -> int:
        """The consumer bound (``sim.consumer``) plus what a Connect round adds after the last
        member change: the scheduled delay d (KIP-415: lost work waits for it; a new delay may
        start at the last change), the Prepare/Install round trips of an assigner and its
        reason bump (a heartbeat interval H each, two more round trips per round), a lost
        assignment request (Q + B)::

            bound = S + R + 2 * (Q + B) + d + 5 * H + 40 * L
        """
        sc = self.scenario
        lat = sc.latency.max_ms * (1 + REORDER_SPIKE)
        return int(sc.session_timeout_ms + sc.restart_delay_ms
                   + 2 * (sc.request_timeout_ms + _RETRY_BACKOFF_MAX_MS) + sc.max_delay_ms
                   + 5 * sc.heartbeat_interval_ms + 40 * lat)

    # ================================================================== full check

    def full_check(self) -> None:
        g = self._group()
        if g is not None:
            holders: dict[Item, str] = {}
            for mid in sorted(g.members):
                m = g.members[mid]
                if m.member_epoch > g.assignment_epoch:
                    raise Violation("I3", f"worker {self._who(mid)} epoch {m.member_epoch} > "
                                          f"assignment epoch {g.assignment_epoch}")
                for it in sorted(m.held()):
                    if it in holders:
                        raise Violation("I1", f"{show(it)} is held by {self._who(holders[it])} "
                                              f"and {self._who(mid)} (coordinator)")
                    holders[it] = mid
            if holders != self.coord_holder:
                raise Violation("I1", "the coordinator's holdings differ from the ones its records "
                                      "describe")
            if g.group_epoch == g.assignment_epoch and g.members:
                self.check_target(g)
        seen: dict[Any, Proc] = {}
        for p in self.live():
            if self.is_fenced(p):
                continue
            running: frozenset[Any] = p.consuming
            for it in sorted(running):
                if it in seen:
                    raise Violation("I1", f"{show(it)} is run by {seen[it].name} and {p.name}, "
                                          f"neither fenced")
                seen[it] = p
                if self.coord_holder.get(it) != p.member.member_id:
                    raise Violation("I1", f"{p.name} runs {show(it)} which the coordinator does "
                                          f"not hold for it")

    # ================================================================== formatting, summary

    def _tp(self, tp: Any) -> str:
        return show(tp)

    def format_resource(self, r: Any) -> str:
        if isinstance(r, frozenset | set):
            return ",".join(show(it) for it in sorted(r)) if r else "-"
        return super().format_resource(r)

    def protocol_summary(self) -> dict[str, Any]:
        out = super().protocol_summary()
        g = self._group()
        out["connectors"] = len(self.connectors)
        out["resources"] = len(self.universe)
        out["scheduled_delay_ms"] = g.scheduled_rebalance_delay_ms if g is not None else None
        return out
