"""Classic Connect workers in the simulator: protocol ``classic-connect``.

Variants ``eager``, ``compatible`` and ``sessioned`` (the workers' ``connect.protocol``). Each
simulated process runs a real :class:`groupcoord.client.connect.classic_worker.ClassicConnectWorker`
(JoinGroup / SyncGroup / Heartbeat / LeaveGroup with protocol type ``connect``; the leader runs
the Eager or KIP-415 Incremental Cooperative assignor and sends every member's assignment)
against the classic groups of the real :class:`Shard`, through the faulty network of
``sim.network``.

**Reuse.** :class:`ClassicConnectSimulation` is a :class:`groupcoord.sim.classic.ClassicConsumerSimulation`
(the classic protocol: requests and parked responses, fencing by generation, I3 on the live and
committed generations, I6 plumbing) and a :class:`groupcoord.sim.connect.ConnectSimulation` (the
Connect work: the configuration as the universe of connectors and tasks, connector events,
revocations without offsets, a connector per topic for the generic built-ins, random scenarios
drawn with ``resource="tasks"``). The method resolution order puts the classic protocol first;
this module overrides what differs from both: the member (an adapter, :class:`SimClassicWorker`,
presents the worker to the consumer machinery), the configuration (a config topic instead of the
coordinator's connect config request), the coordinator view read from the committed
ClassicGroupMetadata records (Connect metadata and assignments instead of consumer ones), the
stricter I1 on the workers' side, convergence and the I5 bound.

**Slow workers.** A ``slow`` worker's herder takes ``delay_ms`` to stop revoked work, at most
:data:`TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS` (upstream's ``task.shutdown.graceful.timeout.ms``
default, after which the herder cancels the task and discards its output).

**The config topic.** The simulation owns it (:class:`SimConfigTopic`): the snapshots it
published, by config offset. Connector events (``add-connector``, ``remove-connector``,
``update-tasks``) publish a new snapshot (``add-connector`` two: the connector, then its tasks
once it has started, ``sim.connect``); every worker reads the topic through its own
:class:`ConfigReader`, instantly or, with :attr:`ClassicConnectSimulation.config_read_lag_ms`
> 0 (per worker: :meth:`ClassicConnectSimulation.config_lag_ms`), seeing a snapshot only that
long after it was published (a leader behind a member then
answers CONFIG_MISMATCH and the workers read to the end: the worker's business). A worker is
woken when a snapshot becomes visible to it (upstream's config consumer calls into the herder).

**Invariants after every step** (docs/design.md):

- **I1, workers' side**: when a worker starts a connector or task, no other worker in the
  group may be running it: an unfenced one never (an owner stops its work before it moves); a
  fenced one (the coordinator removed it, it does not know yet: a JoinGroup lost while its
  owner waits up to the rebalance timeout plus 5 s, as upstream's) only while it may not know,
  and never once it has not heard from the coordinator for longer than the session timeout: by
  then it must have stopped its work, as upstream's ``WorkerCoordinator.poll`` gives the work
  up when the coordinator stays unreachable (unlike consumers, whose zombies may lag because
  the generation keeps their commits out, nothing in the group fences a zombie's tasks;
  such tolerated overlaps are counted, ``zombie_overlaps``). An unfenced worker starts only
  what the committed generation has it hold. In full at checkpoints: no item run by two
  unfenced workers, each runs only what the committed generation gives it or is revoking, and
  no worker silent for longer than the session timeout runs anything.
- **I1, coordinator view**, on each committed generation: the holdings it describes (eager: the
  assignment; cooperative: what the member reported running in its JoinGroup metadata, minus
  what is revoked, plus what is newly assigned; a failed assignment: what it runs) are
  disjoint, and no item is newly assigned to one member while another member of the generation
  reports running it (an owner must stop a task, and rejoin, before it moves: KIP-415's two
  rounds).
- **I2** on each committed generation: only items of the configuration snapshot the assignment
  names (its config offset); under ``eager`` without error, every item of it, once. Cooperative
  completeness is I5's: lost work may wait for the scheduled delay (KIP-415).
- **I3**: the classic group's generation never decreases (live and committed, from
  ``sim.classic``); a worker's generation goes down only after a reset.
- **I4**: checkpoints and failovers rebuild the shard from its log and compare digests.
- **I5**: once the faults stop, within :meth:`ClassicConnectSimulation.i5_bound`: the group is
  Stable, every live worker a member at its generation, running exactly what the committed
  generation has it hold, with no scheduled rebalance or rejoin pending, the assignments made
  from the latest configuration, and every configured connector and task runs.
- **I6** is not exercised: the simulated workers commit no offsets.

Not here: static membership (Connect has none: KIP-814; a ``static`` scenario's workers join
as dynamic members), topic events (workers ignore the metadata image), ``subscribe`` events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.client.classic_member import Inflight
from groupcoord.client.connect.classic_worker import ClassicConnectWorker, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import Connectors, ConnectRebalanceListener, Tasks
from groupcoord.client.connect.worker import Item
from groupcoord.client.consumer import ClientMemberState, RebalanceListener
from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)
from groupcoord.coordinator.classic.model import ClassicGroupState
from groupcoord.coordinator.modern.connect.messages import ConnectorConfigOp
from groupcoord.coordinator.records import ClassicGroupMetadataValue
from groupcoord.protocol.connect_protocol import (
    CONNECT_PROTOCOL_V0,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectProtocolError,
    decode_assignment,
    decode_worker_metadata,
)
from groupcoord.sim.classic import ClassicConsumerSimulation
from groupcoord.sim.connect import ConnectSimulation, config_items, show
from groupcoord.sim.engine import Violation
from groupcoord.sim.process import Proc

_STATES = {WorkerState.UNJOINED: ClientMemberState.UNJOINED, WorkerState.JOINING: ClientMemberState.JOINING,
           WorkerState.SYNCING: ClientMemberState.JOINING, WorkerState.STABLE: ClientMemberState.STABLE,
           WorkerState.LEAVING: ClientMemberState.LEAVING, WorkerState.FATAL: ClientMemberState.FATAL}
_LEFT = (ClientMemberState.UNJOINED, ClientMemberState.UNSUBSCRIBED, ClientMemberState.FATAL)
_RETRY_BACKOFF_MS = 100
#: Upstream's ``task.shutdown.graceful.timeout.ms`` default: how long a herder waits for a
#: connector or task to stop before it cancels it.
TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS = 5_000


def items(ct: ConnectorsAndTasks) -> frozenset[Item]:
    """Connectors and tasks as the simulator's items (task -1: the connector itself)."""
    return frozenset([*((c, -1) for c in ct.connectors), *ct.tasks])


# ============================================================================ config topic


class SimConfigTopic:
    """The Connect config topic: every snapshot published, by config offset, and when."""

    def __init__(self) -> None:
        self.snapshots: dict[int, ConfigSnapshot] = {-1: ConfigSnapshot(-1, {})}
        self.published_at: dict[int, int] = {-1: 0}
        self.latest = self.snapshots[-1]

    def publish(self, connectors: dict[str, int], now_ms: int) -> ConfigSnapshot:
        snap = ConfigSnapshot(self.latest.offset + 1, dict(connectors))
        self.snapshots[snap.offset] = snap
        self.published_at[snap.offset] = now_ms
        self.latest = snap
        return snap

    def visible(self, now_ms: int, lag_ms: int) -> ConfigSnapshot:
        """The newest snapshot published at least ``lag_ms`` before ``now_ms``."""
        snap = self.latest
        while snap.offset >= 0 and self.published_at[snap.offset] > now_ms - lag_ms:
            snap = self.snapshots[snap.offset - 1]
        return snap


class ConfigReader:
    """One worker's view of the config topic (the worker's ``ConfigStore``): it sees a snapshot
    ``lag_ms`` after its publication, at once when it reads to the end; never goes back."""

    def __init__(self, topic: SimConfigTopic, clock: Callable[[], int], lag_ms: int) -> None:
        self.topic = topic
        self.clock = clock
        self.lag_ms = lag_ms
        self.view = topic.visible(clock(), lag_ms)

    def snapshot(self) -> ConfigSnapshot:
        seen = self.topic.visible(self.clock(), self.lag_ms)
        if seen.offset > self.view.offset:
            self.view = seen
        return self.view

    def read_to_end(self) -> ConfigSnapshot:
        self.view = self.topic.latest
        return self.view


# ============================================================================ the member adapter


class _WorkListener(ConnectRebalanceListener):
    """The worker's callbacks, passed on as items to the simulation's consumer listener."""

    __slots__ = ("inner",)

    def __init__(self, inner: RebalanceListener) -> None:
        self.inner = inner

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> object:
        return self.inner.on_partitions_revoked(items(ConnectorsAndTasks(connectors, tasks)))  # type: ignore[arg-type]

    def on_assigned(self, connectors: Connectors, tasks: Tasks) -> None:
        self.inner.on_partitions_assigned(items(ConnectorsAndTasks(connectors, tasks)))  # type: ignore[arg-type]

    def on_lost(self, connectors: Connectors, tasks: Tasks) -> None:
        self.inner.on_partitions_lost(items(ConnectorsAndTasks(connectors, tasks)))  # type: ignore[arg-type]


class SimClassicWorker:
    """A :class:`ClassicConnectWorker` seen as the member ``sim.consumer`` / ``sim.classic``
    drive: :class:`MemberState` states, ``owned`` items, ``subscribe`` = start. The driver
    interface (the request in flight with its correlation id, timeouts counted) is the
    worker's own (:class:`groupcoord.client.classic_member.ClassicMember`). Nothing of the
    worker's behaviour is re-modelled."""

    #: A classic worker has no assigner duties (the leader's assignments ride on its
    #: SyncGroup): nothing else is ever in flight.
    assign_inflight = None

    def __init__(self, worker: ClassicConnectWorker) -> None:
        self.worker = worker
        self.stats = worker.stats
        self._running: ConnectorsAndTasks | None = None
        self._owned: frozenset[Item] = frozenset()

    # -------------------------------------------------------------- views
    @property
    def member_id(self) -> str:
        return self.worker.member_id

    @property
    def generation(self) -> int:
        return self.worker.generation

    @property
    def member_epoch(self) -> int:
        return self.worker.generation

    @property
    def state(self) -> ClientMemberState:
        return _STATES[self.worker.state]

    @property
    def owned(self) -> frozenset[Item]:
        running = self.worker.running
        if running is not self._running:
            self._running = running
            self._owned = items(running)
        return self._owned

    @property
    def fatal_error(self) -> str | None:
        return self.worker.fatal_error

    @property
    def last_correlation_id(self) -> int:
        return self.worker.last_correlation_id

    @property
    def inflight(self) -> Inflight | None:
        return self.worker.inflight

    @property
    def last_answer_ms(self) -> int:
        """When the coordinator last answered this worker (I1: a worker silent for longer
        than the session timeout must have stopped its work)."""
        return self.worker.last_answer_ms

    @property
    def listener(self) -> ConnectRebalanceListener:
        return self.worker.listener

    @listener.setter
    def listener(self, inner: RebalanceListener) -> None:
        self.worker.listener = _WorkListener(inner)

    # -------------------------------------------------------------- driving
    def subscribe(self, topics: Any = None, *, regex: str | None = None,
                  now_ms: int | None = None) -> None:
        self.worker.start(now_ms or 0)

    def update_metadata(self, topics: Any, now_ms: int) -> None:
        """Workers ignore the topic metadata."""

    def leave(self, now_ms: int, *, permanent: bool = False) -> None:
        self.worker.leave(now_ms)

    def complete_revocation(self, now_ms: int) -> None:
        self.worker.complete_revocation(now_ms)

    def delay_heartbeat(self, delay_ms: int) -> None:
        """The heartbeat phase a join draws (``Scenario.heartbeat_spread_ms``)."""
        self.worker.delay_heartbeat(delay_ms)

    def next_deadline(self) -> int | None:
        return self.worker.next_deadline()

    def poll_request(self, now_ms: int) -> Any:
        return self.worker.poll_request(now_ms)

    def on_response(self, resp: Any, now_ms: int, correlation_id: int | None = None) -> bool:
        return self.worker.on_response(resp, now_ms, correlation_id)

    def on_request_failed(self, now_ms: int, correlation_id: int | None = None) -> bool:
        return self.worker.on_request_failed(now_ms, correlation_id)

    def __repr__(self) -> str:
        return repr(self.worker)


def _w(p: Proc) -> SimClassicWorker:
    m: Any = p.member
    return m


# ============================================================================ decoding


#: Decoded JoinGroup metadata and assignments by their bytes (the same bytes decode to the
#: same value; the checks only read it), as ``sim.classic`` keeps a consumer's: a new
#: generation's checks and the committed holdings decode every member's. Bounded.
_REPORTED: dict[bytes, frozenset[Item]] = {}
_ASSIGNMENTS: dict[bytes, ConnectAssignment | None] = {}
_DECODED_SIZE = 4096


def _metadata_items(raw: bytes | None) -> frozenset[Item]:
    """What a member reported running in its JoinGroup metadata (nothing under eager)."""
    data = raw or b""
    hit = _REPORTED.get(data) if type(data) is bytes else None
    if hit is None:
        try:
            hit = items(decode_worker_metadata(data).current)
        except (ConnectProtocolError, ValueError):
            hit = frozenset()
        if type(data) is bytes:
            if len(_REPORTED) >= _DECODED_SIZE:
                _REPORTED.clear()
            _REPORTED[data] = hit
    return hit


def _assignment(raw: bytes) -> ConnectAssignment | None:
    if type(raw) is bytes and raw in _ASSIGNMENTS:
        return _ASSIGNMENTS[raw]
    try:
        a = decode_assignment(raw) if raw else None
    except (ConnectProtocolError, ValueError):
        a = None
    if type(raw) is bytes:
        if len(_ASSIGNMENTS) >= _DECODED_SIZE:
            _ASSIGNMENTS.clear()
        _ASSIGNMENTS[raw] = a
    return a


def holding(reported: frozenset[Item], a: ConnectAssignment | None) -> frozenset[Item]:
    """What a member holds once it applied its assignment: eager, the assignment; cooperative,
    what it reported minus the revoked, plus the new; a failed (or no) assignment: its work."""
    if a is None or a.failed:
        return reported
    if a.version == CONNECT_PROTOCOL_V0:
        return items(a.assigned)
    return (reported - items(a.revoked)) | items(a.assigned)


# ============================================================================ the simulation


class ClassicConnectSimulation(ClassicConsumerSimulation, ConnectSimulation):
    """Connect workers in classic groups under faults (``classic-connect``: eager, compatible,
    sessioned)."""

    protocol = "classic-connect"
    revoked_stat = "items_revoked"  # (sim.classic counts partitions)
    #: The worker class (tests substitute a broken one).
    classic_worker_class: type[ClassicConnectWorker] = ClassicConnectWorker
    #: How long after its publication a worker sees a config snapshot (0: at once).
    config_read_lag_ms = 0

    def setup(self) -> None:
        self.config_topic = SimConfigTopic()
        #: member id -> what the committed generation has it hold.
        self.committed_holding: dict[str, frozenset[Item]] = {}
        #: member id -> what it reported running when it joined the committed generation (a
        #: revoked item runs until the worker applies its assignment).
        self.committed_reported: dict[str, frozenset[Item]] = {}
        super().setup()
        self.stats.update({"mismatches": 0, "i1_strict_checks": 0, "zombie_overlaps": 0})
        for k in ("prepares", "installs", "assign_errors", "config_requests", "config_retries",
                  "config_rejected", "commits", "commits_accepted", "commits_rejected",
                  "zombie_commits_rejected", "i6_checks", "partitions_revoked"):
            self.stats.pop(k, None)

    def new_member(self, name: str, instance_id: str | None) -> Any:
        """A worker seen as a member (:class:`SimClassicWorker`); Connect has no static
        membership, so ``instance_id`` is not used."""
        sc = self.scenario
        reader = ConfigReader(self.config_topic, lambda: self.now, self.config_lag_ms(name))
        return SimClassicWorker(self.classic_worker_class(
            sc.group_id, f"http://{name}:8083/", reader, protocol=self.variant or "sessioned",
            client_id=name, session_timeout_ms=sc.session_timeout_ms,
            rebalance_timeout_ms=sc.rebalance_timeout_ms,
            heartbeat_interval_ms=sc.heartbeat_interval_ms,
            request_timeout_ms=sc.request_timeout_ms, retry_backoff_ms=_RETRY_BACKOFF_MS,
            max_delay_ms=sc.max_delay_ms))

    # ================================================================== configuration

    def _configure(self, ops: tuple[ConnectorConfigOp, ...]) -> None:
        """Publish the configuration (already updated in ``self.connectors``) to the config
        topic; the workers see it at once or after the read lag, and are woken then."""
        snap = self.config_topic.publish(self.connectors, self.now)
        self.stats["config_published"] = self.stats.get("config_published", 0) + 1
        what = ", ".join(f"{o.op} {o.connector}" + (f"={o.task_count}" if o.op != "delete"
                                                     else "") for o in ops)
        self.trace("config", "admin", f"offset={snap.offset}", what)
        for p in self.live():
            self.at(self.now + self.config_lag_ms(p.name), self._config_visible, (p, p.gen))

    def config_lag_ms(self, name: str) -> int:
        """How long after its publication worker ``name`` sees a config snapshot."""
        return self.config_read_lag_ms

    def _config_visible(self, arg: tuple[Proc, int]) -> None:
        """A worker sees a new snapshot: its herder wakes it (a rejoin is due)."""
        p, gen = arg
        if p.alive and p.gen == gen:
            self._drive(p)

    # ================================================================== members

    def slow_revocation_ms(self, p: Proc) -> int:
        """The worker's herder stops connectors and tasks (no offsets). A slow worker takes
        ``delay_ms``, but at most :data:`TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS`: upstream's herder
        gives up waiting then and cancels the task (its output is discarded)."""
        return min(p.slow_delay, TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS)

    def describe_assignment(self, raw: bytes) -> str:
        a = _assignment(raw)
        if a is None:
            return "-"
        if a.failed:
            self.stats["mismatches"] += 1
            return f"error {a.error} offset={a.config_offset}"
        out = f"v{a.version} +{a.assigned.size()}"
        if a.version != CONNECT_PROTOCOL_V0:
            out += f" -{a.revoked.size()}" + (f" delay={a.delay}" if a.delay else "")
        return out

    # ================================================================== I1 on the workers' side

    def is_fenced(self, p: Proc) -> bool:
        """Not a member of the group's generation (``sim.classic``), or a worker that left on a
        poll timeout (its revocation outlasted ``rebalance.timeout.ms``: upstream's heartbeat
        thread leaves the group, :mod:`groupcoord.client.connect.classic_worker`) and still
        runs what it kept through the leave, unconfirmed by an assignment: meanwhile the group
        may have handed that work to others, as upstream's does, and the first assignment
        after the worker's rejoin revokes the duplicates from every holder (KIP-415). Such a
        worker's overlaps count as a fenced worker's (``zombie_overlaps``)."""
        return super().is_fenced(p) or _w(p).worker.kept_after_poll_timeout

    def _start_consuming(self, p: Proc, parts: Any) -> None:
        """I1 when a worker starts items: no other worker of the group runs them, and a fenced
        one (removed by the coordinator, not told yet) only while it may not know: it heard
        from the coordinator within the session timeout. Then the consumer's checks (an
        unfenced worker starts only what the coordinator has it hold) and bookkeeping."""
        self.stats["i1_strict_checks"] += 1
        for it in sorted(parts):
            for q in self.consumers.get(it, ()):
                if q is p or not q.alive:
                    continue
                who = (f"{q.name} (member {q.member.member_id}, generation "
                       f"{_w(q).generation}")
                if not self.is_fenced(q):
                    raise Violation("I1", f"{show(it)} is run by {who}) and now also by "
                                          f"{p.name} (member {p.member.member_id}, generation "
                                          f"{_w(p).generation})")
                self._check_silence(q)
                self.stats["zombie_overlaps"] += 1
                self.trace("zombie-overlap", q.name, _w(q).generation,
                           f"{show(it)} also started by {p.name}")
        super()._start_consuming(p, parts)

    def _drive(self, p: Proc) -> None:
        """Drive the worker (``sim.consumer``'s), then I1 on its silence: every wake-up of a
        worker cut off (its retries) checks that it stopped its work in time."""
        super()._drive(p)
        if p.alive:
            self._check_silence(p)

    def _check_silence(self, q: Proc) -> None:
        """I1: a worker that has not heard from the coordinator for longer than the session
        timeout must have stopped its work (the coordinator has given it away by then).

        In a rebalance (a JoinGroup or SyncGroup to send or in flight) the coordinator holds a
        joining member until the rebalance timeout, not the session timeout, and the worker
        learns that its request was lost only when the request times out (the request timeout
        plus the rebalance timeout, as the Java client's JoinGroup); upstream's
        ``WorkerCoordinator`` keeps its work meanwhile. With Connect's defaults (session 10 s,
        rebalance timeout 60 s) that is longer than the session timeout, so the bound adds
        it. A worker that starts leaving (a bounce, a scale-in) while its JoinGroup or
        SyncGroup is in flight still waits on that rebalance while it stops its tasks: the
        same bound holds until the revocation is done."""
        sc = self.scenario
        bound = sc.session_timeout_ms
        worker = _w(q).worker
        inflight = worker.inflight
        if worker.state in (WorkerState.JOINING, WorkerState.SYNCING) or (
                inflight is not None
                and isinstance(inflight.request, JoinGroupRequest | SyncGroupRequest)):
            bound += sc.request_timeout_ms + sc.rebalance_timeout_ms
        silent = self.now - _w(q).last_answer_ms
        if q.consuming and silent > bound:
            raise Violation("I1", f"{q.name} (member {q.member.member_id}) still runs "
                                  f"{self.format_resource(q.consuming)} {silent} ms after the "
                                  f"coordinator last answered it (session timeout "
                                  f"{sc.session_timeout_ms} ms, bound {bound} ms)")

    # ================================================================== coordinator view

    def _check_assignment(self, v: ClassicGroupMetadataValue) -> None:
        """I1 (coordinator view) and I2 on a new committed generation (module docstring)."""
        self.stats["i1_checks"] += 1
        self.stats["i2_checks"] += 1
        reported = {m.member_id: _metadata_items(m.subscription) for m in v.members}
        claimed: dict[Item, str] = {}
        for mid in sorted(reported):
            for it in sorted(reported[mid]):
                claimed.setdefault(it, mid)
        held: dict[Item, str] = {}
        offsets: set[int] = set()
        eager_complete = True
        for m in v.members:
            a = _assignment(m.assignment)
            mine = holding(reported[m.member_id], a)
            if a is not None and not a.failed:
                offsets.add(a.config_offset)
                for it in sorted(items(a.assigned)):
                    owner = claimed.get(it)
                    if owner is not None and owner != m.member_id and \
                            it in reported[owner]:
                        raise Violation("I1", f"generation {v.generation} gives {show(it)} to "
                                              f"{self._who(m.member_id)} while "
                                              f"{self._who(owner)} still runs it (not revoked "
                                              f"and rejoined first)")
            if a is None or a.failed or a.version != CONNECT_PROTOCOL_V0:
                eager_complete = False
            for it in sorted(mine):
                if it in held:
                    raise Violation("I1", f"generation {v.generation} has {show(it)} held by "
                                          f"{self._who(held[it])} and {self._who(m.member_id)}")
                held[it] = m.member_id
        if len(offsets) > 1:
            raise Violation("I2", f"generation {v.generation} mixes config offsets "
                                  f"{sorted(offsets)}")
        if offsets:
            (offset,) = offsets
            snap = self.config_topic.snapshots.get(offset)
            if snap is None:
                raise Violation("I2", f"generation {v.generation} assigns from config offset "
                                      f"{offset}, never published")
            configured = config_items(dict(snap.connectors))
            extra = sorted(set(held) - configured)
            if extra:
                raise Violation("I2", f"generation {v.generation} has {show(extra[0])} held, "
                                      f"not in the configuration at offset {offset}")
            missing = sorted(configured - set(held))
            if eager_complete and v.members and missing:
                raise Violation("I2", f"eager generation {v.generation} leaves "
                                      f"{show(missing[0])} unassigned")

    def _rebuild_holders(self) -> None:
        """Who holds each item by the committed generation (see :func:`holding`)."""
        v = self.committed
        holders: dict[Any, str] = {}
        by_member: dict[str, frozenset[Item]] = {}
        reported: dict[str, frozenset[Item]] = {}
        if v is not None:
            for m in v.members:
                reported[m.member_id] = _metadata_items(m.subscription)
                mine = holding(reported[m.member_id], _assignment(m.assignment))
                by_member[m.member_id] = mine
                for it in mine:
                    holders.setdefault(it, m.member_id)
        self.committed_holding = by_member
        self.committed_reported = reported
        self.coord_holder = holders

    # ================================================================== convergence

    def _worker_converged(self, p: Proc, generation: int) -> bool:
        sw = _w(p)
        w = sw.worker
        a = w.assignment
        if w.state is not WorkerState.STABLE or w.generation != generation or a is None \
                or a.failed or a.delay > 0 or not a.revoked.is_empty():
            return False
        if sw.inflight is not None and not isinstance(sw.inflight.request, HeartbeatRequest):
            return False
        if a.config_offset != self.config_topic.latest.offset:
            return False
        if sw.inflight is None and w.rejoin_due(self.now):
            return False  # a rejoin is due now (a config change, the scheduled delay); a
            # heartbeat due now is not: no later step marks the group for another look
        return self.committed_holding.get(w.member_id) == sw.owned

    def converged(self) -> bool:
        """The group is Stable; every live worker a member at its generation, running what the
        committed generation has it hold, nothing pending; every configured item runs."""
        if not self.settled() or self.task_configs_due():
            return False
        g = self._classic()
        live = [p for p in self.live() if p.member.state not in _LEFT]
        if g is None or not g.members:
            return not live
        c = self.committed
        if g.state is not ClassicGroupState.STABLE or len(g.members) != len(live) or \
                c is None or c.generation != g.generation_id:
            return False
        for p in live:
            if _w(p).member_id not in g.members or not self._worker_converged(p, g.generation_id):
                return False
        return all(map(self.legit.__contains__, self.universe))  # every item owned

    def gap_group(self, g: Any) -> str:
        return (f"{ClassicConsumerSimulation.gap_group(self, g)}, config offset "
                f"{self.config_topic.latest.offset}, not running "
                f"{self.format_resource(frozenset(self.universe - set(self.legit)))}")

    def gap_members(self, g: Any) -> list[str]:
        parts = []
        for p in self.live():
            w = _w(p).worker
            parts.append(f"{p.name}/{w.member_id or '-'}: gen {w.generation} {w.state.value}, "
                         f"runs {w.running.size()}, last assignment {w.assignment}, member "
                         f"{'yes' if w.member_id in g.members else 'no'}")
        return parts

    def i5_bound(self) -> int:
        """The classic bound (``sim.classic``: a session timeout, a restart, the initial delay,
        two rebalances of two rebalance timeouts and a heartbeat interval each, a lost request)
        plus what Connect adds after the last change: the scheduled delay d (KIP-415's lost work
        waits for it), then the round it triggers and its follow-up, and a CONFIG_MISMATCH round
        (two more rebalances)::

            bound = classic + d + 2 * (2 * T + H)
        """
        sc = self.scenario
        return ClassicConsumerSimulation.i5_bound(self) + sc.max_delay_ms + 2 * (
            2 * sc.rebalance_timeout_ms + sc.heartbeat_interval_ms) + (
            2 * self.app.reaction_bound_ms())  # two more rounds' task stops

    # ================================================================== full check
    # (``sim.classic``'s, with the strict checks of the workers below)

    def check_process(self, p: Proc) -> None:
        self._check_silence(p)

    def check_holding(self, p: Proc, tp: Any) -> None:
        mid = p.member.member_id
        if self.coord_holder.get(tp) != mid and tp not in self.committed_reported.get(mid, ()):
            raise Violation("I1", f"{p.name} runs {show(tp)} which the committed generation "
                                  f"neither gives it nor is revoking")

    def protocol_summary(self) -> dict[str, Any]:
        out = ClassicConsumerSimulation.protocol_summary(self)
        out.pop("scheduled_delay_ms", None)  # the connect group's (sim.connect), not ours
        out["connectors"] = len(self.connectors)
        out["resources"] = len(self.universe)
        out["config_offset"] = self.config_topic.latest.offset
        return out
