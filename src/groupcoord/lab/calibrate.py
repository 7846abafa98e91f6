"""``groupcoord lab calibrate``: the same scenario in the simulator and on the wire, side by side.

The simulator's work model (``sim.workload``) says what a rebalance costs an application; this
checks it against reality. One scenario (a built-in such as ``rolling-bounce`` or
``scale-out``, or a file) runs twice per protocol:

- in the simulator (``sim.runner.simulate``) with the workload as its ``[workload]`` table;
- on the wire (``lab.wire``): ``groupcoord serve --storage memory`` with the scenario's
  heartbeat interval and session timeout as its group configs (as the simulator's coordinator
  gets them), real clients in their own processes (confluent-kafka for ``classic:eager`` =
  ``range``, ``classic:cooperative`` = ``cooperative-sticky``, ``consumer:uniform`` =
  ``group.protocol=consumer``; our Connect worker for ``connect:*`` and
  ``classic-connect:*``) that sleep ``processing_ms`` per record, a producer at
  ``records_per_s`` per partition; the metrics are computed from the clients' logs
  (``lab.wire_metrics``).

For every disturbance window (the initial join left out) it compares each metric simulated vs
measured, and prints per protocol the summary of the windows (each metric's mean over them,
the lag peak's maximum; ``--windows`` prints every window too). A rolling bounce is compared
as the bounces it is made of (:func:`split_rolling_bounces`: the same members at the same
times, a window each). The *checked* metrics are the ones the lab's findings rest on:
``time_to_converge_ms``, ``converge_after_ms`` (time to converge after the disturbance ended,
i.e. after the bounced member is back), ``lag_peak``, ``lag_record_s``, ``stall_ms`` and
``records_reprocessed`` (records processed twice; the last two checked since 2026-11-28,
reported before: ``lab.wire_metrics`` says how the wire measures them). A checked metric
is *within 2x* when the larger value is at most twice the smaller, or both are below its
floor (``FLOORS``: differences that small are the clients' fetch and poll granularity, not
the protocol). Both sides' lag includes what a member that keeps up holds in flight (the
model's ``fetch_latency_ms``; the steady lag measured on the wire while the group was stable
before the first disturbance is printed beside it, not subtracted).

**Distributions, not single runs.** Where a member's heartbeat falls relative to a
disturbance decides races of milliseconds (whether a moved partition waits one more heartbeat
interval), so one run on either side is one draw. Both sides start the initial members at
offsets drawn from a seed across one heartbeat interval (``sim.scenario.start_offsets_ms``;
the wire's repeat ``r`` uses the simulator's seed ``seed + r``, so the phases are paired):
the simulator runs ``seeds`` seeds, the wire ``repeat`` runs, and every metric of every window
is checked as the median over the repeats against the median over their paired seeds (``seed
.. seed + repeat - 1``: the same phases); the median over all the simulated seeds, the
model's distribution, is printed beside it. Three wire runs are three draws of a spread
distribution (a classic scale-out converges 0.3-5 s after the disturbance depending on the
phase): their median against the median of every seed failed 2x by the draw alone, while run
by run the paired seed agreed (scale-out, classic eager: 2.8 / 2.3 s, 1.0 / 0.6 s,
0.27 / 0.27 s measured / simulated).

Exit status: 0 when the runs completed (whether or not every metric is within 2x: the table
says which are not), 1 when a run failed (the server or a client did not start, the simulator
reported an invariant violation), 2 on a bad parameter (one line naming the field).

**The settings the lab's tables use.** With ``settings="field"`` (the command's default) each
protocol's group runs at the field's settings, as the lab's runs do (``sim.settings``:
classic consumers heartbeat 3 s, session 45 s, ``max.poll.interval.ms`` 5 min; KIP-848 the
broker's heartbeat 5 s, session 45 s, assignment interval 1 s; Connect heartbeat 3 s, session
10 s, rebalance timeout 60 s, ``scheduled.rebalance.max.delay.ms`` 5 min), both sides; what
the scenario file sets itself, or the command sets (``--heartbeat-interval-ms``), stays.
``settings="scenario"`` runs the scenario's own timings (the simulator's defaults: heartbeat
5 s, rebalance timeout 30 s), as calibrations before the field's settings did. The settings
each protocol ran with are saved with its row (``effective_settings``, Kafka's names).

The simulator runs the same scenario with the same timings: the session timeout is set to
``min(session timeout, rebalance timeout)`` for both, because librdkafka refuses a
``max.poll.interval.ms`` (the classic rebalance timeout) below ``session.timeout.ms`` (at the
field's settings no protocol needs it).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from groupcoord.lab.wire import WIRE_PROTOCOLS, WireError, WireRun, WireWorkload, connectors_of
from groupcoord.sim.scenario import Event, Scenario
from groupcoord.sim.settings import effective_settings, with_field_settings

#: The metrics compared, in table order; the checked ones come first.
CHECKED = ("time_to_converge_ms", "converge_after_ms", "lag_peak", "lag_record_s", "stall_ms",
           "records_reprocessed")
REPORTED = ("records_processed", "paused_partition_s", "task_restarts", "resources_moved")
#: Of the reported metrics, the counts a protocol's assignor decides (partitions or tasks
#: moved, task restarts): the model runs the assignors' own arithmetic, so a count is a fact of
#: the protocol, not of the model's timing; they stay marked.
ASSIGNOR_COUNTS = frozenset({"resources_moved", "task_restarts"})
#: The metrics the calibration reports but does not check ("reported, not checked" on its
#: rows), the assignor's counts left out: a verdict table shows their values without a mark
#: and says why (paused partition time: the wire measured 4-300 times the model's where a row
#: reports it; ``lab.verdict.unmark_unchecked``).
UNCHECKED = frozenset(c for c in REPORTED if c not in CHECKED and c not in ASSIGNOR_COUNTS)
#: Below these both sides count as equal (ms, records, record·s, ms, records).
#:
#: - times: 500 ms, a member's heartbeat and poll phases (a poll of 100 ms on the wire, plus
#:   the batch in hand) decide whether a step lands now or a round later;
#: - lag: 50 records, what members hold in flight between a fetch and its processing;
#: - stall: 250 ms. A stall is bounded by two callbacks (the last revocation, the first
#:   assignment), each run in a member's ``poll()`` after the batch in hand (the wire member
#:   polls with a 100 ms timeout; a batch of the calibration workloads lasts up to about
#:   100 ms), and the logs are sampled every 10 ms: each edge moves by up to about 100 ms, so
#:   a stall below 250 ms on both sides is the same stall. It is also the smallest stall
#:   difference the lab's findings count (``lab.findings``: 0.25 s), so a finding never rests
#:   on a stall this check cannot see;
#: - records processed twice: 50 records, as lag. What a new owner processes again is what
#:   its predecessor processed after the last commit covering it: up to one auto-commit
#:   interval of production after a crash, the batch in hand when a revocation's commit
#:   races it; below 50 on both sides it is that granularity, not the protocol.
FLOORS: dict[str, float] = {"time_to_converge_ms": 500, "converge_after_ms": 500,
                            "lag_peak": 50, "lag_record_s": 50, "stall_ms": 250,
                            "records_reprocessed": 50}
#: The default protocols: every client family the issue names.
DEFAULT_PROTOCOLS = ("classic:eager", "classic:cooperative", "consumer:uniform",
                     "connect:cooperative", "classic-connect:sessioned")

#: How each protocol's group is set: the field's settings (the lab's tables) or the scenario's.
SETTINGS = ("field", "scenario")

#: Workload parameters the calibration takes (``--workload KEY=VALUE``), with their types.
WORKLOAD_FIELDS: dict[str, type] = {f.name: type(f.default) for f in fields(WireWorkload)}


class CalibrationError(ValueError):
    """A bad parameter; the message names the field."""


def parse_workload(pairs: Sequence[str]) -> WireWorkload:
    """``KEY=VALUE`` pairs -> the workload; CalibrationError names a bad field."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep:
            raise CalibrationError(f"--workload takes KEY=VALUE, got {pair!r}")
        kind = WORKLOAD_FIELDS.get(key)
        if kind is None:
            raise CalibrationError(f"workload field {key!r} is unknown (known: "
                                   f"{', '.join(WORKLOAD_FIELDS)})")
        try:
            v = kind(raw) if kind is not int else int(raw)
        except ValueError:
            raise CalibrationError(f"workload field {key} must be a number, got {raw!r}") from None
        if not math.isfinite(float(v)) or v < 0:
            raise CalibrationError(f"workload field {key} must be a finite number >= 0, got {raw!r}")
        values[key] = v
    wl = WireWorkload(**values)
    if wl.max_poll_records < 1:
        raise CalibrationError("workload field max_poll_records must be at least 1")
    if wl.records_per_s <= 0:
        raise CalibrationError("workload field records_per_s must be > 0")
    return wl


def check_protocols(protocols: Sequence[str]) -> list[str]:
    for p in protocols:
        if p not in WIRE_PROTOCOLS:
            raise CalibrationError(f"protocol {p!r} has no wire client (known: "
                                   f"{', '.join(WIRE_PROTOCOLS)})")
    return list(dict.fromkeys(protocols))


def calibration_scenario(sc: Scenario, size: int | None = None,
                         heartbeat_interval_ms: int | None = None,
                         session_timeout_ms: int | None = None) -> Scenario:
    """The scenario both sides run (see the module doc for the session timeout)."""
    from groupcoord.lab.runs import _resize_event

    if size is not None:
        if size < 1:
            raise CalibrationError(f"size must be at least 1, got {size}")
        if size != sc.members:  # as a sweep's cell resizes it (lab.runs.build_scenario)
            sc = replace(sc, members=size, events=tuple(_resize_event(e, sc.members, size)
                                                        for e in sc.events))
    changes: dict[str, Any] = {}
    if heartbeat_interval_ms is not None:
        changes["heartbeat_interval_ms"] = heartbeat_interval_ms
    if session_timeout_ms is not None:
        changes["session_timeout_ms"] = session_timeout_ms
    sc = replace(sc, **changes) if changes else sc
    if sc.heartbeat_interval_ms < 1 or sc.heartbeat_interval_ms >= sc.session_timeout_ms:
        raise CalibrationError("heartbeat_interval_ms must be at least 1 and below "
                               "session_timeout_ms")
    return split_rolling_bounces(_timed(sc, spread_given=sc.start_spread_ms is not None))


def _timed(sc: Scenario, spread_given: bool = False) -> Scenario:
    if sc.session_timeout_ms > sc.rebalance_timeout_ms:
        sc = replace(sc, session_timeout_ms=sc.rebalance_timeout_ms)
    if sc.start_spread_ms is None or not spread_given:
        # phases across a heartbeat interval (the module doc)
        sc = replace(sc, start_spread_ms=sc.heartbeat_interval_ms)
    return sc


def own_settings(table: Mapping[str, Any] | None = None,
                 heartbeat_interval_ms: int | None = None,
                 session_timeout_ms: int | None = None) -> frozenset[str]:
    """The timings kept at the field's settings, as the lab keeps them (``lab.runs``): those a
    scenario file's table sets itself (a built-in's: none, as in the lab's tables), its own
    ``start_spread_ms``, and those the command sets (``--heartbeat-interval-ms``,
    ``--session-timeout-ms``)."""
    from groupcoord.lab.runs import _OWN_SETTINGS

    own: set[str] = set()
    for (section, key), name in _OWN_SETTINGS.items():
        sub = (table or {}).get(section)
        if isinstance(sub, dict) and key in sub:
            own.add(name)
    group = (table or {}).get("group")
    if isinstance(group, dict) and "start_spread_ms" in group:
        own.add("start_spread_ms")
    if heartbeat_interval_ms is not None:
        own.add("heartbeat_interval_ms")
    if session_timeout_ms is not None:
        own.add("session_timeout_ms")
    return frozenset(own)


def protocol_scenario(sc: Scenario, protocol: str, settings: str = "field",
                      keep: frozenset[str] | set[str] = frozenset()) -> Scenario:
    """What ``protocol`` runs on both sides: ``sc`` (a :func:`calibration_scenario`) at the
    field's settings for the protocol's family (``settings="field"``; the fields in ``keep``
    stay, as a scenario's own settings do in the lab) or at its own (``"scenario"``); the
    initial members' phases drawn across the protocol's heartbeat interval."""
    if settings not in SETTINGS:
        raise CalibrationError(f"settings must be one of {', '.join(SETTINGS)}, got "
                               f"{settings!r}")
    if settings == "scenario":
        return sc
    return _timed(with_field_settings(sc, protocol, keep), "start_spread_ms" in keep)


def split_rolling_bounces(sc: Scenario) -> Scenario:
    """A rolling bounce as the ``bounce`` events it is made of (same members, same times), so
    each bounce is a window of its own on both sides: six samples of a rejoin instead of one
    (a single rejoin's convergence depends on where the members' heartbeats fall)."""
    if not any(e.kind == "rolling-bounce" for e in sc.events):
        return sc
    live = [f"c{i}" for i in range(1, sc.members + 1)]
    created = sc.members
    events: list[Event] = []
    for e in sorted(sc.events, key=lambda e: e.at_ms):
        if e.kind == "rolling-bounce":
            order = sorted(live, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)
            events += [Event(e.at_ms + i * int(e["interval_ms"]), "bounce",
                             {"member": n, "down_ms": int(e["down_ms"]), "hard": e["hard"]})
                       for i, n in enumerate(order)]
            continue
        events.append(e)
        if e.kind == "scale-out":
            for _ in range(int(e["count"])):
                created += 1
                live.append(f"c{created}")
        elif e.kind == "scale-in":
            del live[-int(e["count"]):]
        elif e.kind in ("leave", "crash") and e["member"] in live:
            live.remove(e["member"])
    return replace(sc, events=tuple(events))


# ----------------------------------------------------------------------------- the simulator


#: The simulator's start-up of a Connect worker (``startup_ms``, drawn per process within
#: half to one and a half times this): our worker sends its first heartbeat 0.2-0.45 s after
#: its ``go`` on the wire (asyncio's start, the connection, FindCoordinator; rolling-bounce and
#: scale-out runs on the loaded machine, 2026-11-26), the consumers within milliseconds.
#: (2.5 s until the harness waited for a worker's imports: workers still importing at their
#: time joined seconds late, which the model was then made to copy.)
CONNECT_WORKER_STARTUP_MS = 300


#: What the wire's producer does when a topic grows (``lab.wire._Producer.add_partitions``:
#: every partition, new ones too, at ``records_per_s``, so the topic's input grows with its
#: partition count), as ``sim.workload``'s ``growth_rate``: the calibration's simulated side
#: runs the same producer, not the paper grids' fixed topic rate.
WIRE_GROWTH_RATE = "partition"
#: Where the wire's classic members' metadata refreshes fall (``sim.workload``'s
#: ``metadata_phase``): from each member's start, where its first poll fetched the topic's
#: metadata. The paper's grids draw the phase (a long-running client); a calibration that drew
#: it too paired a wire repeat with a seed whose refresh fell elsewhere in the period (the
#: classic grow-by-900 rows: 30.6 and 29.8 s measured against 3.2 and 28.7 s simulated).
WIRE_METADATA_PHASE = "start"


def sim_workload_table(wl: WireWorkload, connect: bool) -> dict[str, Any]:
    """The workload as the simulator's ``[workload]`` table (METRICS.md names)."""
    table: dict[str, Any] = {
        "processing_ms": wl.processing_ms, "max_poll_records": wl.max_poll_records,
        "auto_commit_interval_ms": wl.auto_commit_interval_ms}
    if connect:
        table["task_records_per_s"] = wl.records_per_s
        table["task_start_ms"] = round(wl.task_start_ms)
        table["task_stop_ms"] = round(wl.task_stop_ms)
        table["auto_commit_interval_ms"] = wl.offset_flush_interval_ms
        table["startup_ms"] = CONNECT_WORKER_STARTUP_MS
    else:
        table["records_per_s"] = wl.records_per_s
        table["metadata_max_age_ms"] = wl.metadata_max_age_ms
        # the wire's producer (``lab.wire._Producer``) writes records_per_s to every
        # partition, new ones too: the simulated side models the same producer
        table["growth_rate"] = WIRE_GROWTH_RATE
        # the wire's members fetch the topic's metadata at their first poll, at their start,
        # and refresh it every metadata.max.age.ms from there: the simulated side refreshes
        # from the start too, so that a paired seed and wire repeat meet the drawn growth
        # (:func:`growth_drawn`) at the same point of the period
        table["metadata_phase"] = WIRE_METADATA_PHASE
    return table


def simulated_scenario(sc: Scenario, protocol: str, wl: WireWorkload) -> Scenario:
    """``sc`` as the simulator runs it for ``protocol``: Connect's form of its topics, the
    workload as its ``[workload]`` table."""
    from groupcoord.sim.scenario import with_workload
    from groupcoord.sim.workload import parse_workload as parse_sim_workload

    connect = WIRE_PROTOCOLS[protocol][0] == "connect"
    if connect and not sc.connectors:
        sc = replace(sc, connectors=connectors_of(sc))
    return with_workload(sc, parse_sim_workload("workload", sim_workload_table(wl, connect)))


def simulate_windows(sc: Scenario, protocol: str, wl: WireWorkload, seed: int
                     ) -> list[dict[str, Any]]:
    """The simulator's disturbance windows for ``sc`` with the workload as its ``[workload]``
    (raises RuntimeError when the run violated an invariant)."""
    from groupcoord.sim.runner import simulate

    res = simulate(simulated_scenario(sc, protocol, wl), seed, protocol)
    if res.violation is not None:
        raise RuntimeError(f"simulator: {res.violation.invariant}: {res.violation.message}")
    return disturbing([dict(d) for d in res.disturbances])


def disturbing(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The windows compared: a ``slow`` event's is left out on both sides (it only slows the
    revocations of the rebalances in it, whose own windows show it; by itself it is over at
    once and measures nothing)."""
    return [w for w in windows if w.get("disturbance") != "slow"]


#: The window fields :func:`median_windows` takes the median of.
_MEDIAN_FIELDS = (*("time_to_converge_ms", "lag_peak", "lag_record_s"),
                  *("records_processed", "stall_ms", "paused_partition_s",
                    "records_reprocessed", "task_restarts", "resources_moved"))


def median_windows(runs: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Several runs' windows as one list: window ``i`` of the first run with each metric the
    median over the runs' window ``i`` (a window that did not converge counts as the longest
    time; the median is None when most did not). Runs with fewer windows than the first are
    left out of the windows they lack."""
    if not runs:
        return []
    out: list[dict[str, Any]] = []
    for i, first in enumerate(runs[0]):
        same = [r[i] for r in runs if i < len(r)]
        w = dict(first)
        for key in _MEDIAN_FIELDS:
            vs = [d.get(key) for d in same]
            if all(v is None for v in vs):
                continue
            nums = [math.inf if v is None else float(v) for v in vs]
            m = statistics.median(nums)
            w[key] = None if math.isinf(m) else (round(m) if key in (
                "time_to_converge_ms", "lag_peak") else round(m, 3))
        w["runs"] = len(same)
        out.append(w)
    return out


# ----------------------------------------------------------------------------- comparison


@dataclass(slots=True)
class Comparison:
    protocol: str
    disturbance: str
    at_ms: int
    settle_ms: int
    simulated: dict[str, Any]
    measured: dict[str, Any]
    steady_lag: float
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def checked_ok(self) -> bool:
        return all(r["within_2x"] for r in self.rows if r["checked"])


def within_2x(metric: str, sim: float | None, wire: float | None) -> bool | None:
    """Whether two values are within a factor 2 of each other (or both below the floor)."""
    if sim is None or wire is None:
        return None
    floor = FLOORS.get(metric, 0.0)
    if max(sim, wire) <= floor:
        return True
    lo, hi = min(sim, wire), max(sim, wire)
    return lo > 0 and hi <= 2 * lo


def _after(d: Mapping[str, Any]) -> int | None:
    ttc = d.get("time_to_converge_ms")
    if ttc is None:
        return None
    return max(int(ttc) - (int(d["settled_ms"]) - int(d["at_ms"])), 0)


def compare(protocol: str, sim_windows: list[dict[str, Any]], wire_windows: list[dict[str, Any]],
            steady: float, sim_all: list[dict[str, Any]] | None = None) -> list[Comparison]:
    """Window by window, the measured medians against ``sim_windows`` (the simulated medians
    over the seeds paired with the wire runs); ``sim_all`` (the medians over every simulated
    seed) is reported beside them, not checked."""
    out: list[Comparison] = []
    for i, w in enumerate(wire_windows):
        if w["disturbance"] == "initial-join" or i >= len(sim_windows):
            continue
        s = dict(sim_windows[i])
        a = dict(sim_all[i]) if sim_all is not None and i < len(sim_all) else s
        m = dict(w)
        for d in (s, a, m):
            d["converge_after_ms"] = _after(d)
        c = Comparison(protocol, m["disturbance"], int(m["at_ms"]), int(m["settled_ms"]), s, m,
                       steady)
        for metric in (*CHECKED, *REPORTED):
            sv, mv = s.get(metric), m.get(metric)
            c.rows.append(_row(metric, sv, mv, mv, a.get(metric)))
        out.append(c)
    return out


def _row(metric: str, sv: Any, mv: Any, compared: Any, all_seeds: Any = None
         ) -> dict[str, Any]:
    ok = within_2x(metric, _num(sv), _num(compared)) if metric in CHECKED else None
    ratio = (None if sv is None or compared is None or not _num(sv)
             else round(float(compared) / float(sv), 2))
    return {"metric": metric, "simulated": sv, "measured": mv, "compared": compared,
            "ratio": ratio, "checked": metric in CHECKED, "within_2x": ok,
            "simulated_all_seeds": sv if all_seeds is None else all_seeds}


def summarize(protocol: str, comparisons: Sequence[Comparison]) -> Comparison | None:
    """The windows of a run as one: every metric's mean over the windows, but ``lag_peak``'s
    maximum (a rolling bounce's six bounces, say: the mean rejoin, the worst lag). A metric a
    window lacks (never converged, not simulated) makes the summary's None."""
    if not comparisons:
        return None
    kinds = sorted({c.disturbance for c in comparisons})
    label = f"{kinds[0]} x{len(comparisons)}" if len(kinds) == 1 else \
        f"{len(comparisons)} disturbances"
    out = Comparison(protocol, label, comparisons[0].at_ms, comparisons[-1].settle_ms, {}, {},
                     comparisons[0].steady_lag)
    for metric in (*CHECKED, *REPORTED):
        cells = [{r["metric"]: r for r in c.rows}[metric] for c in comparisons]
        agg = max if metric == "lag_peak" else _mean
        values = []
        for key in ("simulated", "measured", "compared", "simulated_all_seeds"):
            vs = [x[key] for x in cells]
            values.append(None if any(v is None for v in vs) else agg(vs))
        out.rows.append(_row(metric, *values))
    return out


def _mean(values: Sequence[Any]) -> float:
    return round(sum(float(v) for v in values) / len(values), 1)


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


# ----------------------------------------------------------------------------- running


@dataclass(slots=True)
class ProtocolResult:
    protocol: str
    comparisons: list[Comparison]
    wire: WireRun | None
    wire_windows: list[dict[str, Any]]
    sim_windows: list[dict[str, Any]]
    steady_lag: float
    error: str | None = None
    #: Every run's windows (``wire_windows`` / ``sim_windows`` are their medians: the wire
    #: runs', and the simulated seeds' paired with them, the first ``len(wire_runs)``).
    wire_runs: list[list[dict[str, Any]]] = field(default_factory=list)
    sim_runs: list[list[dict[str, Any]]] = field(default_factory=list)
    #: The medians over every simulated seed (reported, not checked).
    sim_windows_all: list[dict[str, Any]] = field(default_factory=list)
    #: The scenario both sides ran for this protocol (its settings: :func:`protocol_scenario`;
    #: its workload: :func:`simulated_scenario`).
    scenario: Scenario | None = None

    @property
    def settings(self) -> dict[str, int]:
        """The settings the protocol ran with, under Kafka's names (empty: not known)."""
        return {} if self.scenario is None else effective_settings(self.scenario,
                                                                   self.protocol)

    @property
    def summary(self) -> Comparison | None:
        return summarize(self.protocol, self.comparisons)


#: The event kinds that grow a topic: a classic member learns of them at its next metadata
#: refresh (``metadata.max.age.ms``).
GROWTH_KINDS = frozenset({"add-partitions"})


def growth_drawn(sc: Scenario, wl: WireWorkload, seed: int) -> Scenario:
    """``sc`` with its topic growth moved later by an offset drawn from ``seed`` across one
    metadata refresh period (``[0, metadata.max.age.ms)``; its own stream of the seed, as
    the start offsets are): the simulator's seed and the wire's paired repeat draw the same.

    Without it the wire grew the topic a whole number of refresh periods after the members
    started (30 s at a 10 s or 30 s ``metadata.max.age.ms``), and a real member's refresh
    timer starts with it, so a refresh fell just after the growth in every repeat, while the
    model draws the refresh phase uniformly: the calibration measured one phase, not the
    distribution (the classic partition-added and grow-by-900 rows)."""
    period = int(wl.metadata_max_age_ms)
    if period <= 0 or not any(e.kind in GROWTH_KINDS for e in sc.events):
        return sc
    shift = random.Random(f"growth:{seed}").randrange(period)
    return replace(sc, events=tuple(replace(e, at_ms=e.at_ms + shift)
                                    if e.kind in GROWTH_KINDS else e for e in sc.events))


def calibrate(sc: Scenario, protocols: Sequence[str], wl: WireWorkload, *, seed: int = 1,
              seeds: int = 21, repeat: int = 1,
              extra_server_config: Mapping[str, str] | None = None, tail_s: float = 5.0,
              progress: Callable[[str], None] | None = None,
              keep: Path | None = None, settings: str = "scenario",
              own: frozenset[str] | set[str] = frozenset(),
              client: str = "librdkafka") -> list[ProtocolResult]:
    """Per protocol: the simulator over seeds ``seed .. seed + seeds - 1`` and ``repeat``
    wire runs (run ``r`` with the start offsets of seed ``seed + r``), medians compared.
    ``keep``: every wire run's directory (server and member logs) is kept under
    ``keep/<protocol>/<r>`` instead of removed. ``settings``: each protocol's group at the
    field's settings or the scenario's (:func:`protocol_scenario`; ``own``: the settings the
    scenario or the command set, kept). ``client``: the consumer members' library on the
    wire (``lab.wire.CLIENTS``: librdkafka, or Apache Kafka's Java client)."""
    from groupcoord.lab.wire import run_wire
    from groupcoord.lab.wire_metrics import Series, steady_lag, window_metrics

    if seeds < 1 or repeat < 1:
        raise CalibrationError("seeds and repeat must be at least 1")
    results: list[ProtocolResult] = []
    base = sc
    for protocol in protocols:
        sc = protocol_scenario(base, protocol, settings, own)
        ran = simulated_scenario(sc, protocol, wl)
        sim_runs = [simulate_windows(growth_drawn(sc, wl, seed + i), protocol, wl, seed + i)
                    for i in range(max(seeds, repeat))]
        sim_all = median_windows(sim_runs)
        wire_runs: list[list[dict[str, Any]]] = []
        steadies: list[float] = []
        run: WireRun | None = None
        error = None
        for r in range(repeat):
            if progress is not None and repeat > 1:
                progress(f"{protocol}: wire run {r + 1} of {repeat}")
            try:
                run = run_wire(growth_drawn(sc, wl, seed + r), protocol, wl,
                               extra_server_config=dict(extra_server_config or {}),
                               tail_s=tail_s, progress=progress, seed=seed + r, client=client,
                               keep_dir=None if keep is None else
                               keep / protocol.replace(":", "-") / str(r + 1))
            except (RuntimeError, OSError) as e:
                error = str(e)
                break
            wire_runs.append(disturbing(window_metrics(run)))
            steadies.append(steady_lag(run, Series(run)))
        if error is not None:
            results.append(ProtocolResult(protocol, [], None, [], sim_all, 0.0, error,
                                          wire_runs, sim_runs, sim_all, ran))
            continue
        wire_windows = median_windows(wire_runs)
        # Wire run r started its members at seed + r's offsets: the same heartbeat phases as
        # that simulated seed. The check compares the wire's median with the median of the
        # same seeds, not of every seed (three draws of a spread distribution against its
        # median fail 2x by chance alone).
        sim_windows = median_windows(sim_runs[:len(wire_runs)])
        steady = statistics.median(steadies)
        results.append(ProtocolResult(protocol, compare(protocol, sim_windows, wire_windows,
                                                        steady, sim_all),
                                      run, wire_windows, sim_windows, steady, None, wire_runs,
                                      sim_runs, sim_all, ran))
    return results


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _table(c: Comparison) -> list[str]:
    rows = [["metric", "simulated", "measured", "ratio", "within 2x", "simulated, all seeds"]]
    for row in c.rows:
        measured = _fmt(row["measured"])
        rows.append([row["metric"], _fmt(row["simulated"]), measured, _fmt(row["ratio"]),
                     "" if row["within_2x"] is None else _fmt(row["within_2x"]),
                     _fmt(row.get("simulated_all_seeds"))])
    widths = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def format_table(results: Sequence[ProtocolResult], windows: bool = False) -> str:
    """Per protocol the summary of its windows (``summarize``), and with ``windows`` every
    window too; the last line counts the protocols whose checked metrics are within 2x."""
    lines: list[str] = []
    summaries = []
    for r in results:
        if r.error is not None:
            lines += [f"{r.protocol}: wire run failed: {r.error}", ""]
            continue
        summary = r.summary
        if summary is None:
            lines += [f"{r.protocol}: no disturbance to compare", ""]
            continue
        summaries.append(summary)
        lines.append(f"{r.protocol}  {summary.disturbance}: medians over the "
                     f"{len(r.wire_runs)} wire run(s) and their {len(r.wire_runs)} paired "
                     f"simulated seed(s) ({len(r.sim_runs)} simulated in all) (steady in-flight "
                     f"lag on the wire: {r.steady_lag:.1f} records)")
        lines += [*_table(summary), ""]
        if windows and len(r.comparisons) > 1:
            for c in r.comparisons:
                lines.append(f"  {r.protocol}  {c.disturbance} at {c.at_ms / 1000:g} s")
                lines += ["  " + x for x in _table(c)]
                lines.append("")
    ok = sum(1 for c in summaries if c.checked_ok)
    lines.append(f"checked metrics ({', '.join(CHECKED)}) within 2x for {ok} of "
                 f"{len(summaries)} protocols")
    for metric in ("stall_ms", "records_reprocessed"):  # checked since 2026-11-28
        cells = [r for c in summaries for r in c.rows if r["metric"] == metric
                 and r["within_2x"] is not None]
        if cells:
            lines.append(f"  {metric} within 2x for {sum(1 for r in cells if r['within_2x'])}"
                         f" of {len(cells)}")
    return "\n".join(lines)


def as_json(results: Sequence[ProtocolResult]) -> list[dict[str, Any]]:
    return [{"protocol": r.protocol, "error": r.error, "steady_lag": round(r.steady_lag, 2),
             "settings": r.settings,
             "summary": None if r.summary is None else {
                 "disturbance": r.summary.disturbance,
                 "checked_within_2x": r.summary.checked_ok, "rows": r.summary.rows},
             "windows": [{"disturbance": c.disturbance, "at_ms": c.at_ms,
                          "checked_within_2x": c.checked_ok, "rows": c.rows}
                         for c in r.comparisons],
             "wire_windows": r.wire_windows, "sim_windows": r.sim_windows,
             "sim_windows_all_seeds": r.sim_windows_all,
             "wire_runs": r.wire_runs, "sim_runs": r.sim_runs}
            for r in results]


__all__ = [
    "CHECKED",
    "DEFAULT_PROTOCOLS",
    "FLOORS",
    "REPORTED",
    "SETTINGS",
    "CalibrationError",
    "Comparison",
    "ProtocolResult",
    "WireError",
    "as_json",
    "calibrate",
    "calibration_scenario",
    "check_protocols",
    "compare",
    "format_table",
    "median_windows",
    "own_settings",
    "parse_workload",
    "protocol_scenario",
    "simulate_windows",
    "simulated_scenario",
    "summarize",
    "within_2x",
]
