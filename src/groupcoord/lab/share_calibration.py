"""``groupcoord lab calibrate --share``: share groups (KIP-932, ``share:simple``) in the
simulator against real share consumers on the wire, at the share spec's settings.

The cells are the share comparison's (``lab/data/share.toml``, docs/lab.md "Share groups
against consumer groups"): one topic of 4 partitions at 60 records/s each, an exponential
10 ms per record, ``max.poll.records`` 100; the group at the spec's settings for
``share:simple`` (``sim.settings``: heartbeat 5 s, session 45 s, assignment interval 1 s,
record lock 30 s, delivery count limit 5); the scenarios ``bounce`` and ``crowd-crash`` at 4 and
12 members by default, any share cell of the spec by name (``rolling-bounce``, another workload
such as the equal-capacity ``1x12-busy``). Run ``r`` of a cell is the spec's replicate ``r`` (its
seed: the same start phases, event phase and drawn timings on both sides: the spec's ``[draw]``
gives each seed its bounce downtime, a rolling bounce its spacing and downtime,
``sim.scenario.with_draws``, and the wire plays that scenario's events as drawn); its events
come ``warmup_ms`` plus the seed's phase after the
start (``lab.runs.build_scenario``; default 30 s rather than the lab's computed warm-up, 50-90 s
here: a real group has joined and caught up well within it, and every wire second costs a
second of the shared machine), the same on both sides.

Both sides measure the disturbance window (``sim.share``'s window; on the wire
``lab.wire_share.share_window_metrics``) and its paired control, the same seed without the
disturbance: ``time_to_converge_ms``, ``lag_peak`` (the window's, in-flight records
included), ``excess_lag_peak`` (minus the control's peak over the same span: the share
comparison's own lag-peak metric, which takes out the records a client holds in flight),
``excess_lag_record_s`` (the window's lag integral minus the control's over the same span),
``resource_downtime_ms`` (partitions stopped: no live member has the partition in its current
assignment; on the wire from ShareGroupDescribe, ``lab.wire_share.partitions_stopped_s``) and
``records_reprocessed`` (records processed twice). The simulator's control is
``lab.runs.simulate_with_control``'s, one per seed; the wire's is one control run per cell
(the initial members only, run 1's seed, as long as the longest window: the control's lag is
the records in flight, measured over each run's span; each run also keeps its excesses over
its own 20 s before the disturbance, :data:`OWN`, not checked). Every metric is the median over the
wire runs against the median over their paired seeds, within 2x when the larger is at most
twice the smaller or both are below the floor
(``lab.calibrate.FLOORS``; records processed twice and the excess lag peak: 50 records, as
the lag peak; partitions stopped: 500 ms).

``--save`` (:func:`save_share_calibration`) writes the cells into
``lab/data/share_calibration.json``: per cell its scenario, members, workload, the group's
settings, each run's timings (seed, event time, drawn values), every run of both sides, the
medians, their ratios, the checks, the verdict, and how it was measured (date, client, wall
time, 1-minute load at start and end, the command); a cell already there (same scenario,
members and workload) is replaced in place, the others kept, in a stable order. The report's
calibration line of a share sentence reads it (``lab.share_report.share_calibration_note``).
"""

from __future__ import annotations

import datetime
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groupcoord.lab.calibrate import FLOORS, CalibrationError, within_2x
from groupcoord.lab.wire import WireWorkload

SPEC = Path(__file__).parent / "data" / "share.toml"
PROTOCOL = "share:simple"
#: The sides of a share sentence the calibration measures: the share group, and the consumer
#: group it is compared with (``lab.wire_share_consumer``: real KIP-848 consumers).
PROTOCOLS = (PROTOCOL, "consumer:uniform")
WORKLOAD = "1x4-busy"
SCENARIOS = ("bounce", "crowd-crash")
#: The order of the saved cells' scenarios (the spec's).
ORDER = ("crowd-crash", "bounce", "rolling-bounce")
SIZES = (4, 12)
#: Where ``--save`` writes the cells (``lab.share_report.share_calibration_note`` reads it).
SAVED = Path(__file__).parent / "data" / "share_calibration.json"
WARMUP_MS = 30_000
#: How the wire plays a ``crash`` (``lab.wire_share``'s ``lost_host``), kept with a crash
#: cell's measurement: the cells saved before 2026-11-29 04:00 have none, and were SIGKILL.
CRASH_PLAYED = "SIGSTOP (a lost host: nothing closes; killed after the run)"
#: The metrics of a row, in table order; all checked.
METRICS = ("time_to_converge_ms", "lag_peak", "excess_lag_peak", "excess_lag_record_s",
           "resource_downtime_ms", "records_reprocessed")
#: Beside each wire run (not checked): its excesses over its own level in the ``STEADY_S``
#: before the disturbance (its mean lag times the window's length; its peak there), and the
#: control run's own excess over each run's span against its 20 s before: where the control's
#: level and a run's differ, these tell which of the two moved.
OWN = ("excess_lag_peak_own", "excess_lag_own_record_s")
#: Partitions stopped: half a partition·s (the wire reads assignments every 0.2 s).
SHARE_FLOORS = {**FLOORS, "excess_lag_record_s": FLOORS["lag_record_s"],
                "excess_lag_peak": FLOORS["lag_peak"], "resource_downtime_ms": 500.0,
                "records_reprocessed": FLOORS["lag_peak"]}


@dataclass(slots=True)
class ShareCell:
    scenario: str
    size: int
    workload: str = WORKLOAD
    sim: list[dict[str, Any]] = field(default_factory=list)
    wire: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: The group's share settings both sides ran with (Kafka's names).
    settings: dict[str, int] = field(default_factory=dict)
    #: How the wire side was measured: when, the client, wall time, 1-minute load at the
    #: cell's start and end.
    measured: dict[str, Any] = field(default_factory=dict)
    #: The side of the share comparison measured (:data:`PROTOCOLS`).
    protocol: str = PROTOCOL

    def median(self, side: str, metric: str) -> float | None:
        rows = (self.sim[:len(self.wire)] if self.wire else self.sim) if side == "sim" \
            else self.wire
        vs = [r.get(metric) for r in rows]
        nums = [float(v) for v in vs if v is not None]
        if not vs or len(nums) < len(vs):
            return None
        return float(statistics.median(nums))

    def checks(self) -> dict[str, bool | None]:
        return {m: share_within_2x(m, self.median("sim", m), self.median("wire", m))
                for m in METRICS}


def share_within_2x(metric: str, sim: float | None, wire: float | None) -> bool | None:
    """``lab.calibrate.within_2x`` with the share rows' floors (an excess below 0 is the
    control's noise: compared as 0)."""
    if sim is None or wire is None:
        return None
    sim, wire = max(sim, 0.0), max(wire, 0.0)
    if max(sim, wire) <= SHARE_FLOORS.get(metric, 0.0):
        return True
    return within_2x(metric, sim, wire) if metric in FLOORS else (
        min(sim, wire) > 0 and max(sim, wire) <= 2 * min(sim, wire))


def cell_params(scenario: str, size: int, repeat: int, spec_path: Path = SPEC,
                workload: str = WORKLOAD, protocol: str = PROTOCOL) -> list[Any]:
    """The spec's runs of the cell (``protocol``, ``share:simple`` by default, on
    ``workload``, by default ``1x4-busy``), replicates ``0 .. repeat - 1``."""
    from groupcoord.lab.spec import expand, load_spec

    if protocol not in PROTOCOLS:
        raise CalibrationError(f"protocol {protocol!r}: the share calibration measures "
                               f"{' or '.join(PROTOCOLS)}")
    spec = load_spec(str(spec_path))
    if scenario not in spec.scenarios:
        raise CalibrationError(f"scenario {scenario!r} is not in {spec_path.name} (it has "
                               f"{', '.join(spec.scenarios)})")
    if size not in spec.sizes:
        raise CalibrationError(f"size {size} is not in {spec_path.name} (it has "
                               f"{', '.join(map(str, spec.sizes))})")
    names = [w.name for w in spec.workloads]
    if workload not in names:
        raise CalibrationError(f"workload {workload!r} is not in {spec_path.name} (it has "
                               f"{', '.join(names)})")
    runs = sorted((r for r in expand(spec) if r.protocol == protocol and r.workload == workload
                   and r.scenario == scenario and r.size == size), key=lambda r: r.replicate)
    if not runs:
        raise CalibrationError(f"{spec_path.name} has no {protocol} cell {scenario} at {size} "
                               f"members on {workload}")
    if repeat > len(runs):
        raise CalibrationError(f"repeat {repeat}: the spec has {len(runs)} seeds")
    return runs[:repeat]


def cell_scenario(params: Any, warmup_ms: int = WARMUP_MS) -> Any:
    """The run's scenario, both sides: the lab's, its first event at ``warmup_ms`` plus the
    seed's phase (``lab.runs.event_phase_ms``)."""
    from groupcoord.lab.runs import _cell_scenario, build_scenario, event_phase_ms

    return build_scenario(params, warmup_ms + event_phase_ms(_cell_scenario(params),
                                                             params.seed))


def wire_workload(sc: Any) -> tuple[WireWorkload, float]:
    """The wire's workload of a share scenario, and its mean processing time (ms)."""
    wl = sc.workload
    return (WireWorkload(records_per_s=wl.records_per_s, max_poll_records=wl.max_poll_records,
                         processing_ms=wl.processing_ms.average),
            float(wl.processing_ms.average))


def first_window(windows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((w for w in windows if w["disturbance"] != "initial-join"), None)


def simulate_cell_run(params: Any, sc: Any) -> dict[str, Any]:
    """The simulator's figures of one run of the cell (its first disturbance window)."""
    from groupcoord.lab.runs import simulate_with_control

    res, control = simulate_with_control(params, sc)
    if res.violation is not None:
        raise RuntimeError(f"simulator: {res.violation.invariant}: {res.violation.message}")
    w = first_window(res.disturbances)
    c = control[0] if control else None
    if w is None or c is None:
        raise RuntimeError(f"simulator: {params.scenario} at {params.size} has no "
                           "disturbance window with a control")
    return {"seed": params.seed, "at_ms": w["at_ms"], "drawn": dict(sc.drawn),
            "window_s": None if w.get("closed_ms") is None else
            round((w["closed_ms"] - w["at_ms"]) / 1000, 1),
            "time_to_converge_ms": w["time_to_converge_ms"] if w["converged"] else None,
            "lag_peak": w["lag_peak"],
            "lag_record_s": round(float(w["lag_record_s"]), 1),
            "control_lag_record_s": round(float(c["lag_record_s"]), 1),
            "control_lag_peak": c["lag_peak"],
            "excess_lag_peak": w["lag_peak"] - c["lag_peak"],
            "excess_lag_record_s": round(float(w["lag_record_s"]) - float(c["lag_record_s"]), 1),
            "resource_downtime_ms": w["resource_downtime_ms"],
            "records_reprocessed": w["records_reprocessed"]}


def calibrate_share(scenarios: Sequence[str] = SCENARIOS, sizes: Sequence[int] = SIZES, *,
                    repeat: int = 2, warmup_ms: int = WARMUP_MS, wire: bool = True,
                    workload: str = WORKLOAD,
                    progress: Callable[[str], None] | None = None,
                    keep: Path | None = None, protocol: str = PROTOCOL) -> list[ShareCell]:
    """Every cell on ``workload``: ``repeat`` simulated seeds and (``wire``) as many wire runs
    plus one wire control. Run ``r`` plays the seed's drawn timings (``sim.scenario``'s
    ``[draw]``: the bounce's downtime, the rolling bounce's spacing and downtime) on both
    sides: each row keeps them (``drawn``). ``protocol``: the share group (real
    ShareConsumers) or the consumer group of the same cells (``consumer:uniform``, real
    KIP-848 consumers: ``lab.wire_share_consumer``), measured with the same window and
    metrics."""
    from groupcoord.lab import wire_share_consumer as consumer
    from groupcoord.lab.wire_share import (
        STEADY_S,
        batch_in_hand_fraction,
        lost_host_holds,
        run_share_wire,
        share_window_metrics,
        span_lag_mean,
        span_lag_peak,
        span_lag_record_s,
    )
    from groupcoord.sim.settings import effective_settings

    share = protocol == PROTOCOL
    cells: list[ShareCell] = []
    for scenario in scenarios:
        for size in sizes:
            cell = ShareCell(scenario, size, workload, protocol=protocol)
            cells.append(cell)
            runs = cell_params(scenario, size, repeat, workload=workload, protocol=protocol)
            scs = [cell_scenario(p, warmup_ms) for p in runs]
            cell.settings = {k: int(v) for k, v in effective_settings(scs[0], protocol).items()
                             if k.startswith("group.share.") or not share}
            for p, sc in zip(runs, scs, strict=True):
                cell.sim.append(simulate_cell_run(p, sc))
            if not wire:
                continue
            began, load = time.time(), os.getloadavg()[0]
            cell.measured = {"date": datetime.datetime.now(datetime.UTC).isoformat(
                timespec="minutes"), "client": _client(share), "warmup_ms": warmup_ms}
            if any(e.kind == "crash" for e in scs[0].events):  # how the wire played it
                cell.measured["crash"] = CRASH_PLAYED
            spans: list[tuple[float, float]] = []
            try:
                for i, (p, sc) in enumerate(zip(runs, scs, strict=True)):
                    if progress is not None:
                        progress(f"{scenario} at {size} on {workload}: wire run {i + 1} of "
                                 f"{repeat} ({', '.join(f'{k} {v}' for k, v in sc.drawn) or 'no draws'})")
                    kept = None if keep is None else keep / f"{scenario}-{size}" / str(i + 1)
                    if share:
                        wl, mean = wire_workload(sc)
                        run: Any = run_share_wire(sc, effective_settings(sc, PROTOCOL), wl,
                                                  mean, seed=p.seed, progress=progress,
                                                  keep_dir=kept)
                        w = first_window(share_window_metrics(run))
                        if w is not None and w["disturbance"] == "crash":
                            # what the lost host held when it stopped, and how much of the
                            # time before it the live members' applications held a batch
                            held = lost_host_holds(run)
                            a = run.t0 + w["at_ms"] / 1000
                            w = {**w, **({"lost_host": held[0]} if held else {}),
                                 "batch_in_hand_before": batch_in_hand_fraction(
                                     run, a - STEADY_S, a)}
                    else:
                        run = consumer.run_consumer_wire(sc, p.seed, keep_dir=kept,
                                                         progress=progress)
                        w = first_window(consumer.consumer_window_metrics(run))
                    if w is None:
                        raise RuntimeError("the wire run has no disturbance window")
                    spans.append(w["span"])
                    length = w["span"][1] - w["span"][0]
                    own = {} if w.get("lag_mean_before") is None else {
                        "excess_lag_own_record_s": round(
                            w["lag_record_s"] - w["lag_mean_before"] * length, 1),
                        "excess_lag_peak_own": w["lag_peak"] - w["lag_peak_before"]}
                    cell.wire.append({"seed": p.seed, "drawn": dict(sc.drawn),
                                      "window_s": round(length, 1), **w, **own})
                if progress is not None:
                    progress(f"{scenario} at {size} on {workload}: wire control")
                kept = None if keep is None else keep / f"{scenario}-{size}" / "control"
                until = max(b for _, b in spans) + 1.0
                ctl: Any
                if share:
                    wl, mean = wire_workload(scs[0])
                    ctl = run_share_wire(replace(scs[0], events=()), effective_settings(
                        scs[0], PROTOCOL), wl, mean, seed=runs[0].seed, control=True,
                        until_s=until, progress=progress, keep_dir=kept)
                else:
                    ctl = consumer.run_consumer_wire(scs[0], runs[0].seed, control=True,
                                                     until_s=until, keep_dir=kept,
                                                     progress=progress)
                for w in cell.wire:
                    a, b = w["span"]
                    if share:
                        c = span_lag_record_s(ctl, w["span"])
                        peak = span_lag_peak(ctl, w["span"])
                        before = span_lag_mean(ctl, (a - STEADY_S, a))
                    else:
                        c, peak, before = consumer.span_lag(ctl, w["span"])
                    w["control_lag_peak"] = peak
                    w["excess_lag_peak"] = w["lag_peak"] - w["control_lag_peak"]
                    w["control_lag_record_s"] = c
                    w["excess_lag_record_s"] = round(w["lag_record_s"] - c, 1)
                    w["control_excess_own_record_s"] = None if before is None else round(
                        c - before * (b - a), 1)
            except (RuntimeError, OSError) as e:
                cell.error = str(e)
            cell.measured.update(wall_s=round(time.time() - began),
                                 load=[round(load, 1), round(os.getloadavg()[0], 1)])
    return cells


def _client(share: bool = True) -> str:
    """The share consumer (``share``) or the consumer on the wire, with its versions."""
    try:
        import confluent_kafka
    except ImportError:
        return "confluent-kafka (not installed)"
    # confluent-kafka's version() is a string in 2.x ("2.16.1"), libversion() a tuple
    raw: object = confluent_kafka.version()
    ver = str(raw[0]) if isinstance(raw, tuple) else str(raw)
    lib = confluent_kafka.libversion()[0]
    if not share:
        from groupcoord.lab.wire_share_consumer import CLIENT

        return CLIENT.format(ver=ver, lib=lib)
    return f"confluent-kafka {ver} ShareConsumer (librdkafka {lib})"


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}".rstrip("0").rstrip(".")


def _pair(cell: ShareCell, metric: str) -> str:
    s, w = cell.median("sim", metric), cell.median("wire", metric)
    ratio = "" if s is None or w is None or s <= 0 else f" ({s / w:.2f})" if w > 0 else ""
    return f"{_fmt(s)} / {_fmt(w)}{ratio}"


#: The table's column of each metric (docs/lab.md's).
COLUMNS = {"time_to_converge_ms": "converge, ms: sim / wire (ratio)",
           "lag_peak": "lag peak, records", "excess_lag_peak": "excess lag peak, records",
           "excess_lag_record_s": "excess lag, record·s",
           "resource_downtime_ms": "resource downtime, ms",
           "records_reprocessed": "records processed twice"}


def verdict(cell: ShareCell) -> str:
    """"within 2x", "not within 2x: METRIC, ..." or "-" (nothing compared)."""
    checks = cell.checks()
    misses = [m for m, v in checks.items() if v is False]
    if misses:
        return "not within 2x: " + ", ".join(misses)
    return "within 2x" if any(v is not None for v in checks.values()) else "-"


def ratios(cell: ShareCell) -> dict[str, float | None]:
    """Simulated / measured median per metric (None where either is missing or not above
    0)."""
    out: dict[str, float | None] = {}
    for m in METRICS:
        s, w = cell.median("sim", m), cell.median("wire", m)
        out[m] = None if s is None or w is None or s <= 0 or w <= 0 else round(s / w, 2)
    return out


def format_share_table(cells: Sequence[ShareCell]) -> str:
    """The rows as docs/lab.md prints them (markdown): per cell each metric simulated / measured
    (the ratio simulated / measured), within 2x or not."""
    head = ("| scenario | members | workload | runs | " + " | ".join(COLUMNS[m] for m in METRICS)
            + " | within 2x |")
    lines = [head, "|" + "---|" * (len(METRICS) + 5)]
    for c in cells:
        if c.error is not None:
            lines.append(f"| {c.scenario} | {c.size} | {c.workload} | {len(c.wire)} | wire run "
                         f"failed: {c.error.splitlines()[0][:120]} |" + " |" * len(METRICS))
            continue
        v = verdict(c)
        shown = "yes" if v == "within 2x" else v if v == "-" else \
            "**no** (" + v.removeprefix("not within 2x: ") + ")"
        scenario = c.scenario if c.protocol == PROTOCOL else f"{c.scenario} ({c.protocol})"
        lines.append(f"| {scenario} | {c.size} | {c.workload} | {len(c.wire) or len(c.sim)} | "
                     + " | ".join(_pair(c, m) for m in METRICS) + f" | {shown} |")
    return "\n".join(lines)


#: What ``--windows`` prints of each run (those it has).
SHOWN = (*METRICS, *OWN, "lag_record_s", "control_lag_record_s", "control_lag_peak",
         "control_excess_own_record_s", "window_s", "lag_mean_before", "batch_in_hand_before")


def format_share_runs(cells: Sequence[ShareCell]) -> str:
    """Every run of every cell, both sides (``--windows``): what the medians are made of."""
    lines = []
    for c in cells:
        if (n := lost_host_counts(c)) is not None:
            lines.append(f"  {c.scenario} at {c.size} ({c.protocol}), the lost host: partition "
                         f"stopped on {n['sim_stopped']} of {n['runs']} seeds simulated, "
                         f"{n['wire_stopped']} of {n['runs']} wire runs; on the wire it held "
                         f"records on {n['wire_pinned']} (a batch in hand on "
                         f"{n['wire_in_hand']}, records its application never saw on "
                         f"{n['wire_acquired_unseen']})")
        for side, rows in (("sim", c.sim), ("wire", c.wire)):
            for i, r in enumerate(rows):
                drawn = "".join(f", {k} {v}" for k, v in (r.get("drawn") or {}).items())
                lines.append(f"  {c.scenario} at {c.size} ({c.protocol}), {side} {i + 1} "
                             f"(seed {r['seed']}, "
                             f"event at {r.get('at_ms')} ms{drawn}): "
                             + ", ".join(f"{m} {_fmt(r.get(m))}" for m in SHOWN
                                         if r.get(m) is not None)
                             + ("" if not isinstance(h := r.get("lost_host"), dict) else
                                f"; lost host {h['member']}: {h['in_hand']} in hand, "
                                f"{h['acquired_unseen']} acquired unseen, "
                                f"{h['redelivered']} back after the lock"))
    return "\n".join(lines)


def lost_host_counts(cell: ShareCell) -> dict[str, int] | None:
    """A lost-host cell's counts over its wire runs and their paired seeds: ``runs``; the runs
    whose partition stopped (partitions stopped above the floor: at 12 members on 4 partitions
    only the record-lock limit stops one) on each side, ``sim_stopped`` and ``wire_stopped``;
    and what the wire's lost host held when it stopped (``lab.wire_share.lost_host_holds``):
    ``wire_pinned`` (anything), ``wire_in_hand`` (a batch in its application's hands),
    ``wire_acquired_unseen`` (records acquired for it that its application never saw). None
    for a cell without a lost host on the wire."""
    held = [r["lost_host"] for r in cell.wire if isinstance(r.get("lost_host"), dict)]
    if not held:
        return None
    floor = SHARE_FLOORS["resource_downtime_ms"]

    def stopped(rows: Sequence[Mapping[str, Any]]) -> int:
        return sum(1 for r in rows if (r.get("resource_downtime_ms") or 0) > floor)

    return {"runs": len(cell.wire), "sim_stopped": stopped(cell.sim[:len(cell.wire)]),
            "wire_stopped": stopped(cell.wire),
            "wire_pinned": sum(1 for h in held if h.get("pinned")),
            "wire_in_hand": sum(1 for h in held if (h.get("in_hand") or 0) > 0),
            "wire_acquired_unseen": sum(1 for h in held if (h.get("acquired_unseen") or 0) > 0)}


def as_json(cells: Sequence[ShareCell]) -> list[dict[str, Any]]:
    """The cells as ``--json`` prints them and ``--save`` stores them: each cell's scenario,
    members, workload, the group's settings and the timings each run played (``drawn``, the
    same on both sides), every run, the medians, their ratios, the checks and the verdict."""
    return [{"scenario": c.scenario, "members": c.size, "workload": c.workload,
             "protocol": c.protocol, "error": c.error, "settings": c.settings,
             "timings": [{"seed": r["seed"], "at_ms": r.get("at_ms"), **(r.get("drawn") or {})}
                         for r in (c.wire or c.sim)],
             "sim": c.sim, "wire": c.wire, "checks": c.checks(), "ratios": ratios(c),
             "verdict": verdict(c), "measured": c.measured,
             **({"lost_host": n} if (n := lost_host_counts(c)) is not None else {}),
             "medians": {m: {"sim": c.median("sim", m), "wire": c.median("wire", m)}
                         for m in METRICS}} for c in cells]


def _order(cell: Mapping[str, Any]) -> tuple[str, int, int, int]:
    sc = str(cell.get("scenario"))
    proto = str(cell.get("protocol") or PROTOCOL)
    return (str(cell.get("workload", WORKLOAD)),
            ORDER.index(sc) if sc in ORDER else len(ORDER), int(cell.get("members") or 0),
            PROTOCOLS.index(proto) if proto in PROTOCOLS else len(PROTOCOLS))


def merged_share_calibration(old: Mapping[str, Any] | None,
                             cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``old`` (the file's document, or None) with ``cells`` in: a cell of the same scenario,
    members, workload and protocol replaced in place, the others kept; the cells in a stable
    order (workload, the spec's scenario order, members, the share side first)."""
    key = lambda c: (c.get("scenario"), c.get("members"), c.get("workload", WORKLOAD),  # noqa: E731
                     c.get("protocol") or PROTOCOL)
    new = {key(c): dict(c) for c in cells}
    kept = [dict(c) for c in (old or {}).get("cells") or [] if isinstance(c, dict)
            and key(c) not in new]
    doc = {k: v for k, v in (old or {}).items() if k != "cells"}
    doc.update({
        "protocol": PROTOCOL, "protocols": list(PROTOCOLS), "spec": "lab/data/share.toml",
        "compared": "the median of the wire runs against the median of their paired "
                    "simulated seeds (run r is the spec's replicate r on both sides)",
        "tolerance": "within 2x, or both below a floor (" + ", ".join(
            f"{m} {SHARE_FLOORS[m]:g}" for m in METRICS if m in SHARE_FLOORS) + ")",
        "cells": sorted([*kept, *new.values()], key=_order)})
    return doc


def save_share_calibration(cells: Sequence[ShareCell], path: Path = SAVED) -> Path:
    """Write ``cells`` into ``path`` (``merged_share_calibration``: the same cell replaced in
    place); a cell whose wire runs failed is not saved. Returns the path."""
    import json

    old = None
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            raise CalibrationError(f"{path} is not JSON: not overwritten") from None
    good = [c for c in as_json(cells) if not c["error"] and c["wire"]]
    path.write_text(json.dumps(merged_share_calibration(
        old if isinstance(old, dict) else None, good), indent=1, default=str) + "\n")
    return path


__all__ = ["METRICS", "PROTOCOLS", "SAVED", "SCENARIOS", "SIZES", "ShareCell", "as_json", "calibrate_share",
           "cell_params", "cell_scenario", "format_share_runs", "format_share_table",
           "lost_host_counts", "merged_share_calibration", "ratios", "save_share_calibration",
           "share_within_2x", "simulate_cell_run", "verdict"]
