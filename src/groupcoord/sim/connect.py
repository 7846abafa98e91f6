"""Connect workers in the simulator: protocol ``connect`` (KIP-848-style connect groups).

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
module overrides what differs: the member (a worker joins instead of subscribing; it commits no
offsets), the records shadowed (the connect group's current assignment records), I2,
convergence and the I5 bound. The workers' requests and responses (heartbeats, and the
chosen worker's Prepare and Install) are driven by the consumer simulation's code, which a
KIP-848 consumer member with assigner duties needs as well; how each is traced and answered by a
loading coordinator is ``sim.members``'.

**Resources** are connectors and tasks: the *universe* is the simulation's configuration
(connector -> task count) from the scenario's ``connectors`` (a scenario without connectors -
the generic built-ins - gets one connector per topic, with as many tasks as the topic has
partitions). Downtime is the time a configured connector or task had no worker running it.
Connector events (``add-connector``, ``remove-connector``, ``update-tasks``) go to the
coordinator as the connect config admin request (``ConnectGroupConfigRequest``; workers learn
the configuration from the coordinator); while the coordinator is loading the admin retries.
``add-connector`` is two changes, as in Kafka's herder: the connector with no task, then, once a
worker has started it, its tasks (:meth:`ConnectSimulation._publish_task_configs`): two
rebalances.

**Invariants** after every step (docs/design.md; see ``sim.consumer`` for the machinery):

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

from groupcoord.client.connect.worker import ConnectWorker, Item
from groupcoord.client.consumer import ClientMemberState
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupConfigRequest,
    ConnectGroupConfigResponse,
    ConnectorConfigOp,
)
from groupcoord.coordinator.modern.connect.model import ConnectGroup, items_of
from groupcoord.coordinator.records import RecordType
from groupcoord.protocol.errors import error_name
from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.engine import Violation
from groupcoord.sim.network import REORDER_SPIKE
from groupcoord.sim.scenario import CONNECT_EVENT_KINDS, Event, Scenario, random_scenario

_CURRENT = RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT
_TARGET_META = RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA
_TARGET_MEMBER = RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER
_OFFSET = RecordType.OFFSET_COMMIT
_LEFT = (ClientMemberState.UNJOINED, ClientMemberState.UNSUBSCRIBED, ClientMemberState.FATAL)
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
    commits_offsets = False
    #: KIP-415's "time until balanced" (``balanced_since``).
    track_balance = True
    #: A worker's join ends with its first answer, at member epoch 0 when the group's target
    #: is not computed yet (the Connect draft): its heartbeat timer starts there, so its
    #: heartbeat phase is drawn there (``Scenario.heartbeat_spread_ms``).
    first_epoch = 0
    revoked_stat = "items_revoked"
    member_word = "worker"
    verbs = ("run", "runs")
    current_type = _CURRENT
    target_types = (_TARGET_META, _TARGET_MEMBER)
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
        #: The items of the coordinator's configuration, by the configuration object (frozen,
        #: replaced on every change): :meth:`converged` compares them at every look.
        self._config_items: tuple[Any, frozenset[Item]] | None = None
        #: Each member's assigned items, by its assignment object (a frozen member's map,
        #: replaced on every change), for the same comparison.
        self._assigned_items: dict[str, tuple[Any, frozenset[Item]]] = {}
        #: Connectors created whose task configs are not written yet: their task counts.
        self._pending_tasks: dict[str, int] = {}
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
                # the connector's own config first; its tasks when it has started
                # (:meth:`_publish_task_configs`)
                self.connectors[c] = 0
                self._pending_tasks[c] = ev["tasks"]
                self._configure((ConnectorConfigOp("create", c, 0),))
            elif k == "remove-connector" and have:
                del self.connectors[c]
                self._pending_tasks.pop(c, None)
                self._configure((ConnectorConfigOp("delete", c),))
            elif k == "update-tasks" and c in self._pending_tasks:
                self._pending_tasks[c] = ev["tasks"]  # the connector will generate these
                self.trace("task-configs", "", "", f"{c}: {ev['tasks']} when it has started")
            elif k == "update-tasks" and have and self.connectors[c] != ev["tasks"]:
                self.connectors[c] = ev["tasks"]
                self._configure((ConnectorConfigOp("update", c, ev["tasks"]),))
            else:
                self.noop("", f"{k} {c}: nothing to change")
            self._universe_dirty = True
        elif k == "subscribe":
            self.noop("", "subscribe: workers do not subscribe")
        else:
            super().apply_member_event(ev)

    def _start_consuming(self, p: Any, parts: Any) -> None:
        """A worker starts items (``sim.consumer_invariants``); a created connector whose task
        configs are not written yet starts generating them (:meth:`_publish_task_configs`)."""
        super()._start_consuming(p, parts)
        pending = self._pending_tasks
        if pending:
            for c, t in sorted(parts):
                if t < 0 and c in pending:
                    self.at(self.now + self.connector_start_ms(), self._publish_task_configs,
                            (p, p.gen, c))

    def connector_start_ms(self) -> int:
        """How long a connector takes to start (the workload's ``task_start_ms``: a connector
        starts as a task does; 0 with an idle workload)."""
        return self.app.workload.task_start_ms if self.app.on else 0

    def _publish_task_configs(self, arg: tuple[Any, int, str]) -> None:
        """A created connector has started on worker ``p``: it generates its task configs and
        they are written to the configuration, which makes the group rebalance again to
        assign them.

        What Kafka does (``connect/runtime``, ``DistributedHerder``, read at the 4.0.0-SNAPSHOT
        trunk commit ``1eb7644349cb``): creating a connector writes its connector config only.
        ``ConfigUpdateListener.onConnectorConfigUpdate`` sees a connector its snapshot does not
        contain and sets ``needsReconfigRebalance``: a rebalance whose assignment gives the new
        connector, without tasks (none are configured), to a worker. That worker's
        ``startConnector`` runs the connector; once it reports STARTED it queues
        ``reconfigureConnectorTasksWithRetry``, whose ``reconfigureConnector`` asks the
        connector for its task configs and ``publishConnectorTaskConfigs`` writes them (the
        leader with ``writeTaskConfigs``, a follower by forwarding them to the leader's REST
        endpoint). Every worker reads them and ``onTaskConfigUpdate`` sets
        ``needsReconfigRebalance`` again ("task reconfigs always need a rebalance"): a second
        rebalance assigns the tasks. Under eager (``updateConfigsWithEager``, then
        ``WorkerCoordinator.onJoinPrepare``) each of the two rounds stops every connector and
        task; under incremental cooperative neither revokes running work. The forwarding's
        round trip is not modelled: the task configs are written when the connector's start
        ends. A connector with no task writes nothing (``taskConfigsChanged`` finds no change):
        one rebalance. Since the Connect draft keeps the config topic and the REST API ("All
        the APIs should work the way they work currently"), both group types do this."""
        p, gen, c = arg
        n = self._pending_tasks.get(c)
        if n is None or p.gen != gen or not p.alive or (c, -1) not in p.consuming:
            self.step -= 1  # a superseded wake-up: not an event of the simulation
            return
        del self._pending_tasks[c]
        if n == self.connectors.get(c):
            # no task: nothing written (``publishConnectorTaskConfigs`` returns when
            # ``taskConfigsChanged`` finds no change), no second rebalance
            self.trace("task-configs", "", "", f"{c}: none to write")
            return
        self.connectors[c] = n
        self._configure((ConnectorConfigOp("update", c, n),))
        self._universe_dirty = True
        self.dirty = True

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

    # ================================================================== coordinator records


    def current_view(self, v: Any) -> Any:
        return _Current(v)

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
        if not self.settled() or self.task_configs_due():
            return False
        g = self._group()
        live = [p for p in self.live() if p.member.state not in _LEFT]
        if g is None or not g.members:
            return not live
        epoch = g.group_epoch
        if epoch != g.assignment_epoch or len(g.members) != len(live):
            return False
        config = g.config
        cached = self._config_items
        if cached is None or cached[0] is not config:
            cached = self._config_items = (config, config_items(dict(config.connectors)))
        if cached[1] != self.universe:
            return False
        assigned_items = self._assigned_items
        for p in live:
            m: Any = p.member
            mid = m.member_id
            cm = g.members.get(mid)
            if cm is None or m.state is not ClientMemberState.STABLE or m.member_epoch != epoch \
                    or not cm.is_reconciled_to(epoch) or cm.pending_revocation \
                    or m.assign_inflight is not None or self.is_fenced(p):
                return False
            assigned = cm.assigned
            have = assigned_items.get(mid)
            if have is None or have[0] is not assigned:
                have = assigned_items[mid] = (assigned, frozenset(items_of(assigned)))
            if have[1] != m.owned:
                return False
        legit = self.legit
        return all(map(legit.__contains__, self.universe))  # every item owned (no genexpr)

    def task_configs_due(self) -> bool:
        """Whether a created connector runs and its task configs are still to be written (the
        group is not converged: a rebalance for them is coming)."""
        legit = self.legit
        return any((c, -1) in legit for c in self._pending_tasks)

    def gap_group(self, g: Any) -> str:
        return (f"{super().gap_group(g)}, delay {g.scheduled_rebalance_delay_ms} ms, "
                f"not running {self.format_resource(self.universe - set(self.legit))}")

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
                   + 5 * sc.heartbeat_interval_ms + 40 * lat
                   + 3 * self.app.reaction_bound_ms())  # tasks' stops (sim.application)

    # ================================================================== full check

    def ordered(self, resources: Iterable[Any]) -> list[Any]:
        return sorted(resources)

    def coordinator_holdings(self, m: Any) -> Iterable[Any]:
        return m.held()

    # ================================================================== formatting, summary

    def _tp(self, tp: Any) -> str:
        return show(tp)

    def format_resource(self, r: Any) -> str:
        if isinstance(r, frozenset | set):
            return ",".join(show(it) for it in sorted(r)) if r else "-"
        return super().format_resource(r)

    def balanced_and_running_since(self) -> int | None:
        """KIP-415's "time until balanced" ends here (the summary's ``balanced_since_ms``, the
        lab's ``time_to_balance_ms`` counts from the first disturbance to it): since when the
        group has been converged with a balanced assignment (connectors and tasks each spread
        within one per worker, every item owned) *and* every task of that final assignment
        runs again, i.e. its worker's task started (``task_start_ms`` after it was assigned)
        since the assignment that gave it to that worker. It is the later of the two times;
        None when the assignment is not balanced or a task of it has not started (a task
        still stopping or starting is no balanced group's work). Without an application
        (an idle workload) tasks start at their assignment: the balanced assignment's time.
        So an eager rebalance, which stops every task, is balanced only once the last task
        it moved or restarted runs, never before its stall ends; the same rule holds for
        every Connect protocol (both group types, eager and incremental cooperative)."""
        since = self.balanced_since
        app = self.app
        if since is None or not app.on:
            return since
        started_at = app.model.started_at
        processors = app.model.processors
        for item, p in sorted(self.legit.items(), key=lambda kv: kv[0]):
            if item not in self.universe or item[1] < 0:
                continue  # a connector: no record work, no start time in the model
            proc = processors.get(app._pname(p, item))
            if proc is None or item not in proc.active:
                return None  # assigned, not (yet) running
            since = max(since, started_at.get(item, since))
        return since

    def _method_summary(self) -> dict[str, Any]:
        out = super()._method_summary()
        out["balanced_since_ms"] = self.balanced_and_running_since()
        return out

    def protocol_summary(self) -> dict[str, Any]:
        out = super().protocol_summary()
        g = self._group()
        out["connectors"] = len(self.connectors)
        out["resources"] = len(self.universe)
        out["scheduled_delay_ms"] = g.scheduled_rebalance_delay_ms if g is not None else None
        return out
