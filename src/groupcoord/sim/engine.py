"""The deterministic discrete-event simulator: one seeded event loop (docs/simulator.md).

Modelled on TigerBeetle's VOPR and FoundationDB's simulator: one seed reproduces a whole faulty
run. The loop has a virtual clock and a heap of events ``(time, seq, handler, argument)``; the
sequence number breaks ties in scheduling order, so no two runs can order events differently.
There are no threads and no wall clock in a run, ``random.Random`` seeded from the seed is the
only source of randomness (child streams are derived from it: one for the network, one for
member ids, one for choices the scenario leaves to chance), and everything that iterates over
unordered data sorts first. Same seed, same trace, byte for byte.

:class:`Simulation` is the protocol-independent part: the loop, the trace, the simulated
network (``sim.network``), the coordinator with its log and failover (``sim.coordinator``), the
scenario's timeline (topics, network partitions and faults, failovers), the I4 checkpoints and
the metrics per disturbance. A protocol (``sim.protocols``) subclasses it with its members and
its invariants; ``sim.consumer`` is the KIP-848 consumer group one.

**Steps and checks.** Each event is a step; a superseded wake-up (a member's tick or a
coordinator timer rescheduled since) takes its step back and is no event: nothing runs after
it, and it counts neither in the events nor towards a checkpoint. After every step the
protocol's incremental checks run (invariants I1, I2, I3, I6 on what the step changed; see
``sim.consumer``); every
``checkpoint_every`` steps (spaced further in a large group, see :meth:`Simulation.checkpoint`),
at every failover and at the end, I4 rebuilds the shard from its log and compares
``state_digest()``; once the faults stop, I5 requires convergence within a bound.
A violation stops the run: :class:`Violation` carries the invariant, and the run's
:class:`SimResult` the seed, step, last trace lines and the command that reproduces it. An
exception escaping a step (the coordinator, a member or the simulator crashing) is reported the
same way, as invariant ``crash``.

**Metrics per disturbance.** Every scenario event opens a window at its time; the window
closes when the group next converges after the disturbance ended and the members'
applications have caught up (what a rebalance costs them outlasts the convergence: task
starts, a backlog), or when the run ends; its time to converge is the group's. Its figures
are taken at the end of that millisecond (after every event of that instant, so that a
control run, below, can take its own at the same point). **Each moment counts in one window
only**: when the next event opens its window while one is still open, the open window's
figures are cut there (``cut_ms``; its time to converge still runs to its close), and what
follows is the next window's, so that the windows' figures add up to those of their union.
A window reports the time to converge, group epoch bumps, resources moved, resource
downtime (time a resource had no active owner, summed over resources), the peak of unowned
resources, messages and records written during the window.

**Paired control** (the lab's method, ``lab.runs``). A simulation with ``control`` set runs the
same scenario and seed with every event reduced to a marker: the marker takes the event's step
and opens its window as the event would, and does nothing else, so up to the first disturbance
the control is the disturbed run step for step (the same random draws, the same heap order)
and an event that moves nothing leaves both runs identical. :meth:`Simulation.run_control`
closes the control's windows at the times the disturbed run's closed: the disturbance's cost
is then the difference of the two runs over the same time spans. ``caught_up`` says whether
the group had converged and its applications caught up when the first event came; with poison
records (the workload's ``poison_rate``, ``sim.workload``'s "As in the field") whether it had
converged: a partition blocked at a poison record, or catching up after one, is the workload's
steady state, which the run's paired control meets as well (the same records), and the warm-up
drains the initial join's backlog (``lab.runs.warmup_for`` sizes it from the processing time,
the same with and without the poison; every clean twin run on the same seeds caught up);
``balanced_since`` (protocols that track it) when the assignment last became balanced.
"""

from __future__ import annotations

import gc
import heapq
import json
import random
import shlex
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from uuid import UUID

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import uuid_member_id
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.sim.coordinator import ShardFactory, SimCoordinator, default_shard_factory
from groupcoord.sim.network import NO_FAULTS, Network, NetworkFaults
from groupcoord.sim.scenario import BUILTINS, Event, Scenario, random_workload
from groupcoord.sim.workload import DEFAULT_WORKLOAD, lateness_figures, window_metrics

#: How many trace lines a violation report shows.
TRACE_TAIL = 40
#: Steps between two I4 checkpoints (a checkpoint also runs at every failover and at the end).
CHECKPOINT_EVERY = 2_000
#: A checkpoint replays the whole compacted log; past this many entries the next one comes
#: ``checkpoint_every`` steps later per this many entries (see :meth:`Simulation.checkpoint`).
CHECKPOINT_ENTRIES = 2_000
#: More events than this at one simulated instant is a livelock (reported as I5).
LIVELOCK_EVENTS = 100_000
#: The label of the window of the group's initial join (not a disturbance).
INITIAL_JOIN = "initial-join"
#: How often a window whose group converged looks again whether the applications caught up.
RECOVERY_RECHECK_MS = 1_000
#: How far a control runs between two looks whether it reached its fixed point.
CONTROL_STEP_MS = 1_000
#: The cyclic garbage collector's first threshold while the event loop runs (CPython's
#: default is 700 allocations): a large group's state is millions of tracked objects, which
#: every full collection walks, and the default brought one on every ~70,000 allocations (a
#: 1,000-member run: 11 full collections, 15-30 % of its CPU). Objects freed by reference
#: counting (nearly all of them) are unaffected; cycles wait for at most this many
#: allocations (a few MB). The results do not depend on it (nothing in the simulation, the
#: coordinator or the members observes collection); the previous thresholds come back when
#: the loop pauses or ends.
LOOP_GC_THRESHOLD = 50_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The event loop's collector threshold (:data:`LOOP_GC_THRESHOLD`), then the process's."""
    thresholds = gc.get_threshold()
    if thresholds[0] < LOOP_GC_THRESHOLD:
        gc.set_threshold(LOOP_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)

Handler = Callable[[Any], None]


def _draw_member_id(rng: random.Random) -> str:
    return uuid_member_id(rng.getrandbits(128).to_bytes(16, "big"))


def member_ids(seed: int) -> Iterator[str]:
    """The member ids a simulation with ``seed`` gives its members (where the protocol's
    members choose their own: KIP-848 consumers, Connect workers on the new protocol), in the
    order it starts them. ``lab calibrate``'s wire runs give their processes the same ids, so
    that what depends on the ids' order (the worker the coordinator chooses to compute a
    Connect assignment, and the one after it when it leaves) is paired with the simulator's."""
    master = random.Random(seed)
    master.getrandbits(64)  # the network's stream
    rng = random.Random(master.getrandbits(64))
    while True:
        yield _draw_member_id(rng)


class Violation(Exception):
    """An invariant does not hold; raised inside a step, reported with the seed."""

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(f"{invariant}: {message}")
        self.invariant = invariant
        self.message = message


@dataclass(slots=True)
class ViolationReport:
    invariant: str
    message: str
    seed: int
    step: int
    time_ms: int
    trace: list[str]
    command: str

    def format(self) -> str:
        lines = [f"INVARIANT VIOLATED: {self.invariant} at step {self.step}, t={self.time_ms} ms, "
                 f"seed {self.seed}", f"  {self.message}", f"last {len(self.trace)} events:"]
        lines += [f"  {t}" for t in self.trace]
        lines.append(f"reproduce with: {self.command}")
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "message": self.message, "seed": self.seed,
                "step": self.step, "time_ms": self.time_ms, "trace": self.trace,
                "command": self.command}


@dataclass(slots=True)
class Window:
    """Metrics of one disturbance (see the module docstring)."""

    label: str
    start_ms: int
    settle_ms: int
    messages0: int
    records0: int
    moved0: int
    downtime0: int
    epoch0: int
    peak_unowned: int = 0
    converged_ms: int | None = None
    #: When its figures were taken (None: still open).
    closed_ms: int | None = None
    end: dict[str, Any] = field(default_factory=dict)
    #: When the next window opened while this one was still open (None: it did not): the
    #: window's figures stop there, so that each moment counts in one window only.
    cut_ms: int | None = None
    cut_end: dict[str, Any] | None = None
    #: Closed because the group converged and the applications caught up (False: closed by
    #: the run's end, its lag never caught up).
    recovered: bool = False
    #: The application's cumulative metrics at the start (``sim.workload``; None: idle) and
    #: the peak of the lag during the window.
    work0: dict[str, float] | None = None
    lag_peak: float = 0.0
    #: How late the members met the group protocol in it (ms; ``sim.workload.late``).
    lateness: list[float] = field(default_factory=list)
    #: Connect workers' stalls in it (ms; ``sim.application``): from a revocation that
    #: stopped all of a worker's tasks until the tasks of its next assignment ran.
    worker_stalls: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"disturbance": self.label, "at_ms": self.start_ms,
                               "settled_ms": self.settle_ms,
                               "converged": self.converged_ms is not None,
                               "time_to_converge_ms": None if self.converged_ms is None
                               else self.converged_ms - self.start_ms,
                               "peak_unowned": self.peak_unowned,
                               "closed_ms": self.closed_ms, "cut_ms": self.cut_ms,
                               "recovered": self.recovered}
        out.update(self.end)
        out.update(lateness_figures(self.lateness))
        if self.worker_stalls:
            out["worker_stall_ms"] = max(self.worker_stalls)
        return out


@dataclass(slots=True)
class SimResult:
    scenario: str
    protocol: str
    seed: int
    violation: ViolationReport | None
    steps: int
    sim_time_ms: int
    wall_s: float
    trace: list[str]
    summary: dict[str, Any]
    disturbances: list[dict[str, Any]]

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def events_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    def trace_text(self) -> str:
        return "".join(line + "\n" for line in self.trace)

    def as_json(self) -> dict[str, Any]:
        """Deterministic content only (wall-clock figures are under ``perf``)."""
        return {"scenario": self.scenario, "protocol": self.protocol, "seed": self.seed,
                "ok": self.ok, "violation": None if self.violation is None
                else self.violation.as_json(),
                "steps": self.steps, "sim_time_ms": self.sim_time_ms, "summary": self.summary,
                "disturbances": self.disturbances,
                "perf": {"wall_s": round(self.wall_s, 6),
                         "events_per_s": round(self.events_per_s, 1)}}


def topic_uuid(name: str, incarnation: int = 0) -> UUID:
    """A stable, non-zero topic id per (name, incarnation): no randomness involved."""
    h = 1469598103934665603
    for b in f"{name}#{incarnation}".encode():
        h = ((h ^ b) * 1099511628211) % (1 << 128)
    return UUID(int=h or 1)


class Simulation(ABC):
    """The protocol-independent simulator (subclassed per protocol, see ``sim.protocols``)."""

    protocol = "?"

    def __init__(self, scenario: Scenario, seed: int, variant: str = "", *,
                 shard_factory: ShardFactory | None = None, shard_factory_spec: str | None = None,
                 record_trace: bool = False, checkpoint_every: int = CHECKPOINT_EVERY,
                 full_checks: bool = False, trace_tail: int = TRACE_TAIL) -> None:
        self.scenario = scenario
        self.seed = seed
        self.variant = variant
        self.shard_factory_spec = shard_factory_spec
        self.record_trace = record_trace
        self.checkpoint_every = checkpoint_every
        self.full_checks = full_checks
        master = random.Random(seed)
        self.net_rng = random.Random(master.getrandbits(64))
        self.id_rng = random.Random(master.getrandbits(64))  # see member_ids()
        self.choice_rng = random.Random(master.getrandbits(64))

        self.now = 0
        self.step = 0
        self._seq = 0
        self._heap: list[tuple[int, int, Handler, Any]] = []
        self._trace: list[tuple[Any, ...]] | deque[tuple[Any, ...]] = (
            [] if record_trace else deque(maxlen=trace_tail))
        self.trace_tail = trace_tail

        self.network = Network(self.net_rng, scenario.latency, scenario.faults, scenario.ordered)
        self._base_faults = scenario.faults
        self._fault_windows: list[tuple[int, NetworkFaults]] = []  # (until, faults)
        self.quiet_at = scenario.quiet_at_estimate()
        self.topic_names: dict[UUID, str] = {}
        self._topic_incarnations: dict[str, int] = {}
        self.image = MetadataImage.of(self._new_topic(n, p) for n, p in scenario.topics)
        self.config = CoordinatorConfig(
            consumer_session_timeout_ms=scenario.session_timeout_ms,
            consumer_min_session_timeout_ms=min(scenario.session_timeout_ms, 45_000),
            consumer_max_session_timeout_ms=max(scenario.session_timeout_ms, 60_000),
            consumer_heartbeat_interval_ms=scenario.heartbeat_interval_ms,
            consumer_min_heartbeat_interval_ms=min(scenario.heartbeat_interval_ms, 5_000),
            consumer_max_heartbeat_interval_ms=max(scenario.heartbeat_interval_ms, 15_000),
            consumer_assignment_interval_ms=scenario.assignment_interval_ms)
        self.coord = SimCoordinator(shard_factory or default_shard_factory, self.config,
                                    self.image, self.new_member_id)
        self._timer_at: int | None = None
        self.counters: dict[str, int] = {"messages": 0, "moved": 0, "checkpoints": 0,
                                         "failovers": 0, "metadata_updates": 0}
        self.windows: list[Window] = []
        self._open: list[Window] = []
        self.dirty = True
        self._unowned = 0
        self._downtime = 0  # resource-ms
        self._downtime_at = 0
        self.converged_at: int | None = None
        self.end_at: int | None = None
        self._next_checkpoint = checkpoint_every
        self._violation: ViolationReport | None = None
        self._over = False
        self._wall = 0.0
        #: A paired control (see the module docstring): events are markers.
        self.control = False
        #: A control at its fixed point skips to its window ends (:meth:`_control_steady`).
        self.fast_forward = True
        #: Windows converged at the current instant, closed once it is over.
        self._closing: list[Window] = []
        #: Whether the group had converged and the applications caught up at the first
        #: scenario event (None: no event yet).
        self.caught_up: bool | None = None
        #: Since when the assignment is balanced (None: not balanced, or not tracked).
        self.balanced_since: int | None = None
        self._recovery_check: int | None = None
        #: Scenario events that changed nothing (a member not running, a connector or topic
        #: that does not exist or already is as asked): the lab refuses a run with any.
        self.noop_events = 0
        #: Which member each event that names one hit, and who led the group at that moment
        #: (``@leader`` events: the two are the same).
        self.event_targets: list[dict[str, Any]] = []

    # ================================================================== loop

    def at(self, t: int, handler: Handler, arg: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, handler, arg))

    def trace(self, event: str, member: str = "", epochs: str | int = "",
              resource: Any = "") -> None:
        """One trace line: time, step, event, member, epochs (an int is a member epoch) and
        resource (text, or partitions formatted when the trace is written)."""
        self._trace.append((self.now, self.step, event, member, epochs, resource))

    def noop(self, member: str, detail: str) -> None:
        """A scenario event that changes nothing: traced as ``skip`` and counted."""
        self.noop_events += 1
        self.trace("skip", member, "", detail)

    def run(self, max_steps: int | None = None) -> SimResult:
        """Run the scenario to its end; never raises on a violation (see the result)."""
        self.start()
        self.advance(max_steps=max_steps)
        return self.result()

    def start(self) -> None:
        """Set the run up (members, timeline); :meth:`advance` then runs it."""
        self._guarded(self._start)

    def advance(self, until_ms: int | None = None, max_steps: int | None = None) -> bool:
        """Run events up to simulated time ``until_ms`` (the whole run when None, then the
        final checks); True once the run is over (its end, a violation, ``max_steps``)."""
        if self._over:
            return True
        paused = [False]

        def go() -> None:
            paused[0] = self._loop(max_steps, until_ms)
            if not paused[0]:
                self._finish()

        with fewer_collections():
            self._guarded(go)
        self._over = self._over or not paused[0]  # not paused: over
        return self._over

    def result(self) -> SimResult:
        self._close_windows(final=True)
        return SimResult(self.scenario.name, self.protocol_label(), self.seed, self._violation,
                         self.step, self.now, self._wall,
                         self.format_trace(self._trace) if self.record_trace else [],
                         self.summary(), [w.as_json() for w in self.windows])

    def _start(self) -> None:
        self.setup()
        self._schedule_timeline()

    def _guarded(self, fn: Callable[[], None]) -> None:
        """Run a phase; a violation or a crash ends the run with a report."""
        wall0 = time.perf_counter()
        try:
            fn()
        except Violation as v:
            self._violation = self._report(v.invariant, v.message)
            self._over = True
        except Exception as e:  # a crash (of the coordinator, a member, or the simulator)
            frames = traceback.extract_tb(e.__traceback__)[-3:]
            where = "; ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)
            self._violation = self._report("crash", f"{type(e).__name__}: {e} (at {where})")
            self._over = True
        self._wall += time.perf_counter() - wall0

    def _report(self, invariant: str, message: str) -> ViolationReport:
        report = ViolationReport(invariant, message, self.seed, self.step, self.now,
                                 self.format_trace(list(self._trace)[-self.trace_tail:]),
                                 self.reproduce_command())
        self.trace("VIOLATION", "", invariant, message)
        return report

    def _loop(self, max_steps: int | None, until_ms: int | None = None) -> bool:
        """The event loop; True when it paused at ``until_ms`` (the run goes on later)."""
        heap = self._heap
        pop = heapq.heappop
        after = self.after_step
        limit = max_steps if max_steps is not None else 1 << 62
        checkpoint_every = self.checkpoint_every
        same_time = 0
        while heap:
            if until_ms is not None and heap[0][0] > until_ms:
                return True
            t, _, handler, arg = pop(heap)
            if self.end_at is not None and t > self.end_at:
                if self._closing:
                    self._close_pending()
                self.now = self.end_at
                break
            if t == self.now:
                same_time += 1
                if same_time > LIVELOCK_EVENTS:
                    raise Violation("I5", f"livelock: more than {LIVELOCK_EVENTS} events at "
                                          f"t={t} ms without time advancing")
            else:
                same_time = 0
                if self._closing:  # the instant of their convergence is over
                    self._close_pending()
            self.now = t
            step = self.step = self.step + 1
            handler(arg)
            if self.step != step:
                continue  # a superseded wake-up (it took its step back): nothing happened
            after()
            if step >= self._next_checkpoint:
                self.checkpoint()
                entries = self.coord.log.size(0)
                self._next_checkpoint += checkpoint_every if entries <= CHECKPOINT_ENTRIES \
                    else checkpoint_every * entries // CHECKPOINT_ENTRIES
            if step >= limit:
                break
        return False

    # ================================================================== timeline

    def _schedule_timeline(self) -> None:
        sc = self.scenario
        self.open_window(INITIAL_JOIN, 0, max(sc.members - 1, 0) * sc.join_stagger_ms
                         + (sc.start_spread_ms or 0))
        for ev in sc.events:
            self.at(ev.at_ms, self._apply_event, ev)
        self.at(self.quiet_at, self._faults_stop)

    def _apply_event(self, ev: Event) -> None:
        live = self.live_count()
        if self.caught_up is None:
            self.caught_up = self.is_caught_up()
        self.quiet_at = max(self.quiet_at, ev.at_ms + ev.duration_ms(live))
        self.open_window(ev.kind, self.now, ev.at_ms + ev.settle_ms(live))
        if self.control:  # a marker: the window, nothing else
            self.dirty = True
            return
        k = ev.kind
        if k == "network-partition":
            names = self.resolve_members(ev["members"])
            self.trace("partition", ",".join(names), "", f"{ev['duration_ms']} ms")
            for n in names:
                self.network.cut.add(n)
            self.at(self.now + ev["duration_ms"], self._heal, tuple(names))
        elif k == "network-faults":
            f = NetworkFaults(ev["loss"], ev["response_loss"], ev["duplicate"], ev["reorder"])
            until = self.now + ev["duration_ms"]
            self._fault_windows.append((until, f))
            self._update_faults()
            self.trace("net-faults", "", "", f"loss={f.loss} rloss={f.response_loss} "
                       f"dup={f.duplicate} reorder={f.reorder} for {ev['duration_ms']} ms")
            self.at(until, lambda _: self._update_faults())
        elif k == "coordinator-failover":
            self.failover(ev["load_ms"])
        elif k == "add-partitions":
            t = self.image.topic(ev["topic"])
            if t is None:
                self.noop("", f"add-partitions {ev['topic']}: no such topic")
            elif ev["partitions"] > t.num_partitions:
                self.set_image(self.image.with_topic(TopicMetadata(t.topic_id, t.name,
                                                                   ev["partitions"])),
                               f"{t.name} {t.num_partitions}->{ev['partitions']} partitions")
            else:
                self.noop("", f"add-partitions {t.name}: has {t.num_partitions} already")
        elif k == "create-topic":
            if self.image.topic(ev["topic"]) is None:
                self.set_image(self.image.with_topic(self._new_topic(ev["topic"],
                                                                     ev["partitions"])),
                               f"created {ev['topic']} ({ev['partitions']} partitions)")
            else:
                self.noop("", f"create-topic {ev['topic']}: exists")
        elif k == "delete-topic":
            if self.image.topic(ev["topic"]) is not None:
                self.set_image(self.image.without_topic(ev["topic"]), f"deleted {ev['topic']}")
            else:
                self.noop("", f"delete-topic {ev['topic']}: no such topic")
        else:
            self.apply_member_event(ev)
        self.dirty = True

    def _heal(self, names: tuple[str, ...]) -> None:
        for n in names:
            self.network.cut.discard(n)
        self.trace("heal", ",".join(names))

    def _update_faults(self) -> None:
        now = self.now
        self._fault_windows = [(u, f) for u, f in self._fault_windows if u > now]
        if now >= self.quiet_at:
            self.network.faults = NO_FAULTS
            return
        f = self._base_faults
        for _, w in self._fault_windows:
            f = NetworkFaults(max(f.loss, w.loss), max(f.response_loss, w.response_loss),
                              max(f.duplicate, w.duplicate), max(f.reorder, w.reorder))
        self.network.faults = f

    def _faults_stop(self, _: Any = None) -> None:
        if self.now < self.quiet_at:  # a disturbance extended the quiet time
            self.at(self.quiet_at, self._faults_stop)
            return
        self.network.faults = NO_FAULTS
        self.network.cut.clear()
        self.trace("faults-stop", "", "", f"I5 bound {self.i5_bound()} ms")
        self.end_at = max(self.scenario.end_ms or 0, self.now + self.i5_bound())
        self.at(self.end_at, lambda _: None)  # wakes the loop at the deadline
        self.dirty = True

    # ================================================================== topics

    def _new_topic(self, name: str, partitions: int) -> TopicMetadata:
        inc = self._topic_incarnations.get(name, -1) + 1
        self._topic_incarnations[name] = inc
        tid = topic_uuid(name, inc)
        self.topic_names[tid] = name
        return TopicMetadata(tid, name, partitions)

    def set_image(self, image: MetadataImage, what: str) -> None:
        self.image = image
        self.counters["metadata_updates"] += 1
        self.trace("metadata", "", "", what)
        if self.coord.up:
            res = self.coord.shard.update_metadata(image, self.now)
            self.coordinator_result(res)
        self.on_image_changed()

    # ================================================================== coordinator

    def new_member_id(self) -> str:
        return _draw_member_id(self.id_rng)

    def coordinator_result(self, res: Result[Any]) -> None:
        """Persist a result, check what its records changed, re-arm the coordinator timer."""
        if res.records:
            self.coord.persist(res, self.now)
            if self.on_records(res.records):
                self.dirty = True
        self.arm_timer()

    def arm_timer(self) -> None:
        if not self.coord.up:
            return
        d = self.coord.shard.next_deadline()
        if d is not None and (self._timer_at is None or d < self._timer_at):
            self._timer_at = d
            self.at(d, self._coordinator_timer, (d, self.coord.generation))

    def _coordinator_timer(self, arg: tuple[int, int]) -> None:
        deadline, gen = arg
        if gen != self.coord.generation or deadline != self._timer_at:
            self.step -= 1  # superseded: not an event of the simulation
            return
        self._timer_at = None
        if not self.coord.up:
            return
        for res in self.coord.shard.expire_timers(self.now):
            if res.timers and res.records:
                key = res.timers[0].key
                self.trace("timer", "", "", "/".join(str(k) for k in key))
            self.coordinator_result(res)
        d = self.coord.shard.next_deadline()
        if d is not None and d <= self.now:
            raise Violation("I5", f"the coordinator keeps a timer due at {d} ms that "
                                  f"expire_timers({self.now}) does not fire")
        self.arm_timer()

    def failover(self, load_ms: int) -> None:
        """Drop the shard; a new one is rebuilt from the log and serves after ``load_ms``."""
        c = self.coord
        c.generation += 1
        c.up = False
        self._timer_at = None
        self.counters["failovers"] += 1
        self.trace("failover", "", f"gen={c.generation}", f"load {load_ms} ms")
        self.on_coordinator_down()
        self.at(self.now + load_ms, self._coordinator_loaded, c.generation)

    def _coordinator_loaded(self, gen: int) -> None:
        c = self.coord
        if gen != c.generation:
            return  # failed over again while loading
        old = c.shard
        new = c.rebuild(self.image)
        self.check_replay(old.state_digest(), new.state_digest(), "failover")
        c.shard = new
        c.up = True
        self.trace("loaded", "", f"gen={gen}", f"{c.log.size(0)} records")
        res = new.on_loaded(self.now)
        self.coordinator_result(res)
        self.on_coordinator_up()

    def checkpoint(self) -> None:
        """I4: compact the log, rebuild a shard from it, compare with the live shard.

        Its cost is the compacted log's: every entry decoded and replayed, both shards
        digested. Up to :data:`CHECKPOINT_ENTRIES` entries the next checkpoint comes
        ``checkpoint_every`` steps later; past that, later in proportion (a 1,000-member group
        on 4,000 partitions keeps ~7,000 entries: every 7,000 steps), so that I4 costs a large
        group per step what it costs a group of 2,000 entries, instead of half its run. The
        runs' figures do not change (a checkpoint is invisible to the members: it compacts the
        log and compares), only the ``checkpoints`` count of the summary; every failover and
        the end of the run still check."""
        if not self.coord.up:
            return
        self.counters["checkpoints"] += 1
        self.coord.compact(self.now)
        self.check_replay(self.coord.shard.state_digest(),
                          self.coord.rebuild(self.image).state_digest(), "checkpoint")

    def check_replay(self, live: Any, rebuilt: Any, where: str) -> None:
        if live != rebuilt:
            diff = _first_difference(live, rebuilt)
            raise Violation("I4", f"state rebuilt from the log differs from the live state at "
                                  f"{where}: {diff}")

    # ================================================================== metrics

    def open_window(self, label: str, start: int, settle: int) -> None:
        for prev in (*self._open, *self._closing):  # each moment in one window: cut here
            if prev.cut_ms is None:
                prev.cut_ms = self.now
                prev.cut_end = self.window_figures(prev)
        w = Window(label, start, settle, self.counters["messages"], self.coord.records_written,
                   self.counters["moved"], self.downtime(), self.group_epoch(),
                   peak_unowned=self._unowned)
        w.work0 = self.work_totals()
        if w.work0 is not None:
            w.lag_peak = self.work_lag()
        self.windows.append(w)
        self._open.append(w)
        self.converged_at = None
        self.dirty = True

    def set_unowned(self, n: int) -> None:
        """The number of resources without an active owner changed (downtime accounting)."""
        now = self.now
        self._downtime += self._unowned * (now - self._downtime_at)
        self._downtime_at = now
        self._unowned = n
        for w in self._open:
            if n > w.peak_unowned:
                w.peak_unowned = n

    def downtime(self) -> int:
        return self._downtime + self._unowned * (self.now - self._downtime_at)

    def note_converged(self) -> None:
        """Called after a step when the group is converged."""
        now = self.now
        if self.converged_at is None:
            self.converged_at = now
        if self.track_balance:
            if self.assignment_balanced():
                if self.balanced_since is None:
                    self.balanced_since = now
            else:
                self.balanced_since = None
        still = []
        control = self.control
        recovered: bool | None = None
        for w in self._open:
            if now >= w.settle_ms and not (control and w.label != INITIAL_JOIN):
                if w.converged_ms is None:
                    w.converged_ms = now
                if recovered is None:
                    recovered = self.work_recovered()
                if recovered:
                    self._closing.append(w)
                    continue
            still.append(w)
        self._open = still
        if recovered is False:
            self._await_recovery()

    def note_unconverged(self) -> None:
        """Called after a step that found the group not converged."""
        self.converged_at = None
        self.balanced_since = None
        for w in self._open:  # converged, then disturbed again before the work caught up
            w.converged_ms = None

    def _await_recovery(self) -> None:
        """Look again in :data:`RECOVERY_RECHECK_MS` whether the applications caught up (a
        lazily computed catch-up is no event of its own)."""
        at = self._recovery_check
        if at is None or at <= self.now:
            at = self._recovery_check = self.now + RECOVERY_RECHECK_MS
            self.at(at, self._recheck_recovery, at)

    def _recheck_recovery(self, at: int) -> None:
        if at != self._recovery_check:
            self.step -= 1  # superseded: not an event of the simulation
            return
        self._recovery_check = None
        self.dirty = True

    def _close_pending(self) -> None:
        for w in self._closing:
            w.recovered = True
            self._close(w)
        self._closing = []

    def is_caught_up(self) -> bool:
        """The group converged and the applications caught up (poison: converged; see above)."""
        return self.converged_at is not None and (self.scenario.workload.poison_rate > 0 or (
            not any(w.label == INITIAL_JOIN for w in (*self._open, *self._closing))
            and self.work_recovered()))

    def run_control(self, ends: list[int]) -> list[dict[str, Any]]:
        """Run a control (``control`` set before) and close its i-th disturbance window at
        ``ends[i]`` (the end of that millisecond, as the disturbed run closed its own); the
        disturbance windows' figures, in order (a window whose event never came is left out)."""
        self.control = True
        self.start()
        return self.finish_control(ends)

    def finish_control(self, ends: list[int]) -> list[dict[str, Any]]:
        """:meth:`run_control` from where the simulation stands (before the first event: a
        copy of a disturbed run taken there, ``control`` set, is its control)."""
        self.control = True
        if ends and (self.scenario.end_ms or 0) < max(ends):  # run at least until the last
            self.scenario = replace(self.scenario, end_ms=max(ends))
        for t in sorted(set(ends)):
            if self.fast_forward:  # a second at a time until the fixed point, then jump
                at = self.now
                while at < t and not self._over and not self._control_steady():
                    at = min(t, at + CONTROL_STEP_MS)
                    self.advance(until_ms=at)
            else:
                self.advance(until_ms=t)
            if self._over:
                break
            self._close_pending()
            self.now = max(self.now, t)  # nothing happens until the next event: as of t
            dist = [w for w in self.windows if w.label != INITIAL_JOIN]
            for i, w in enumerate(dist):
                if i < len(ends) and ends[i] == t and w in self._open:
                    self._open.remove(w)
                    self._close(w)
        self._close_windows(final=True)
        return [w.as_json() for w in self.windows if w.label != INITIAL_JOIN]

    def _control_steady(self) -> bool:
        """Whether the control has reached its fixed point: every marker passed, the group
        converged with every resource owned, the applications caught up, no fault, nothing
        cut off. From there on nothing the windows measure changes (the lag is the records in
        flight, nobody stalls or pauses, nothing moves): the events left (heartbeats, commits,
        metadata refreshes that find nothing new) need not be simulated, and the clock jumps
        to the next window end, where the work model's figures follow from its rates."""
        markers = sum(1 for w in self.windows if w.label != INITIAL_JOIN)
        return (markers == len(self.scenario.events) and not self._closing
                and self.converged_at is not None and self._unowned == 0
                and not any(w.label == INITIAL_JOIN for w in self._open)
                and self._base_faults == NO_FAULTS and self.network.faults == NO_FAULTS
                and not self.network.cut and self.coord.up and self.work_recovered())

    def window_figures(self, w: Window) -> dict[str, Any]:
        """A window's figures from its start until now (the cumulative counters' differences,
        the lag's peak)."""
        out: dict[str, Any] = {"group_epoch_bumps": self.group_epoch() - w.epoch0,
                               "resources_moved": self.counters["moved"] - w.moved0,
                               "resource_downtime_ms": self.downtime() - w.downtime0,
                               "messages": self.counters["messages"] - w.messages0,
                               "records_written": self.coord.records_written - w.records0}
        if w.work0 is not None:
            end = self.work_totals()
            if end is not None:
                out.update(window_metrics(w.work0, end, max(w.lag_peak, self.work_lag())))
        return out

    def _close(self, w: Window) -> None:
        """Take a window's figures: until now, or until the next window opened (its cut)."""
        w.closed_ms = self.now
        w.end = w.cut_end if w.cut_end is not None else self.window_figures(w)

    def _close_windows(self, final: bool) -> None:
        self._close_pending()
        for w in self._open:
            self._close(w)
        self._open = []

    # ================================================================== end of run

    def _finish(self) -> None:
        self.checkpoint()
        self.check_convergence(final=True)
        self.full_check()

    def summary(self) -> dict[str, Any]:
        net = self.network.stats
        return {"events": self.step, "sim_time_ms": self.now,
                "quiet_at_ms": self.quiet_at, "converged_at_ms": self.converged_at,
                "i5_bound_ms": self.i5_bound(),
                "messages": self.counters["messages"], "network": dict(net),
                "records_written": self.coord.records_written,
                "log_entries": self.coord.log.size(0),
                "checkpoints": self.counters["checkpoints"],
                "failovers": self.counters["failovers"],
                "metadata_updates": self.counters["metadata_updates"],
                "resources_moved": self.counters["moved"],
                "resource_downtime_ms": self.downtime(),
                "group_epoch": self.group_epoch(), **self._method_summary(),
                **self.protocol_summary()}

    def _method_summary(self) -> dict[str, Any]:
        """What the lab's method reads (``lab.runs``): whether the group had caught up at the
        first event, since when the assignment is balanced, how many events changed nothing,
        and which member each event that names one hit (with the leader at that moment)."""
        out: dict[str, Any] = {}
        if self.caught_up is not None:
            out["caught_up"] = self.caught_up
        if self.track_balance:
            out["balanced_since_ms"] = self.balanced_since
        out["noop_events"] = self.noop_events
        out["event_targets"] = list(self.event_targets)
        return out

    def reproduce_command(self) -> str:
        src = self.scenario.source or self.scenario.name
        cmd = (f"groupcoord simulate --scenario {src} --protocol {self.protocol_label()} "
               f"--seed {self.seed}")
        if self.shard_factory_spec:
            cmd += f" --shard-factory {self.shard_factory_spec}"
        wl = self.scenario.workload
        src = self.scenario.source
        default = random_workload(self.seed) if src == "random" else (
            DEFAULT_WORKLOAD if src in BUILTINS else wl)
        if wl != default:  # a workload given to simulate()
            cmd += " --workload " + shlex.quote(
                "idle" if wl.idle else json.dumps(wl.as_table(), sort_keys=True))
        if self.scenario.start_spread_ms:
            cmd += f" --start-spread-ms {self.scenario.start_spread_ms}"
        return cmd

    def protocol_label(self) -> str:
        return f"{self.protocol}:{self.variant}" if self.variant else self.protocol

    # ================================================================== trace formatting

    def format_resource(self, r: Any) -> str:
        if isinstance(r, str):
            return r
        if isinstance(r, frozenset | set):
            names = self.topic_names
            items = sorted((names.get(t, str(t)), p) for t, p in r)
            return ",".join(f"{n}-{p}" for n, p in items) if items else "-"
        return str(r)

    def format_trace(self, entries: Iterable[tuple[Any, ...]]) -> list[str]:
        fmt = self.format_resource
        return [f"{t:>9} {step:>7} {event:<12} {member:<6} "
                f"{f'e={epochs}' if isinstance(epochs, int) else epochs:<18} {fmt(res)}".rstrip()
                for t, step, event, member, epochs, res in entries]

    # ================================================================== protocol hooks

    @abstractmethod
    def setup(self) -> None:
        raise NotImplementedError

    @abstractmethod
    def apply_member_event(self, ev: Event) -> None:
        raise NotImplementedError

    def resolve_members(self, names: Iterable[str]) -> list[str]:
        return sorted(names)

    def live_count(self) -> int:
        return 0

    def on_records(self, records: list[Any]) -> bool:
        """Check what the records change; True when they change the group (not offsets)."""
        return True

    def on_image_changed(self) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def on_coordinator_down(self) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def on_coordinator_up(self) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def after_step(self) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def full_check(self) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def check_convergence(self, final: bool) -> None:  # noqa: B027 (optional: nothing by default)
        pass

    def group_epoch(self) -> int:
        return 0

    #: Whether :meth:`assignment_balanced` is tracked (``balanced_since``).
    track_balance = False

    def assignment_balanced(self) -> bool:
        """Whether the converged group's assignment is balanced."""
        return True

    def work_recovered(self) -> bool:
        """Whether the applications caught up (no backlog beyond the records in flight)."""
        return True

    def i5_bound(self) -> int:
        return 0

    def protocol_summary(self) -> dict[str, Any]:
        return {}

    def work_totals(self) -> dict[str, float] | None:
        """The members' applications' cumulative metrics now (``sim.workload``; None: no
        work model)."""
        return None

    def work_lag(self) -> float:
        """The applications' total lag now (records)."""
        return 0.0


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                return f"{path}/{k}: only in the rebuilt state"
            if k not in b:
                return f"{path}/{k}: only in the live state"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}/{k}")
    return f"{path}: live {a!r} != rebuilt {b!r}"
