"""``groupcoord lab calibrate --share``: share groups (KIP-932, ``share:simple``) in the
simulator against real share consumers on the wire, at the share spec's settings.

The cells are the share comparison's (``lab/data/share.toml``, docs/lab.md "Share groups
against consumer groups"): one topic of 4 partitions at 60 records/s each, an exponential
10 ms per record, ``max.poll.records`` 100; the group at the spec's settings for
``share:simple`` (``sim.settings``: heartbeat 5 s, session 45 s, assignment interval 1 s,
record lock 30 s, delivery count limit 5); the scenarios ``bounce`` and ``crowd-crash`` at 4 and
12 members. Run ``r`` of a cell is the spec's replicate ``r`` (its seed: the same start phases
and event phase on both sides); its events come ``warmup_ms`` plus the seed's phase after the
start (``lab.runs.build_scenario``; default 30 s rather than the lab's computed warm-up, 50-90 s
here: a real group has joined and caught up well within it, and every wire second costs a
second of the shared machine), the same on both sides.

Both sides measure the disturbance window (``sim.share``'s window; on the wire
``lab.wire_share.share_window_metrics``) and its paired control, the same seed without the
disturbance: ``time_to_converge_ms``, ``lag_peak`` (the window's, in-flight records
included; the control's over the same span is reported beside it, ``--windows``),
``excess_lag_record_s`` (the window's lag integral minus the control's over the same span)
and ``records_reprocessed`` (records processed twice). The simulator's control is
``lab.runs.simulate_with_control``'s, one per seed; the wire's is one control run per cell
(the initial members only, run 1's seed, as long as the longest window: the control's lag is
the records in flight, measured over each run's span). Every metric is the median over the
wire runs against the median over their paired seeds, within 2x when the larger is at most
twice the smaller or both are below the floor
(``lab.calibrate.FLOORS``; records processed twice: 50 records, as the lag peak).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groupcoord.lab.calibrate import FLOORS, CalibrationError, within_2x
from groupcoord.lab.wire import WireWorkload

SPEC = Path(__file__).parent / "data" / "share.toml"
PROTOCOL = "share:simple"
WORKLOAD = "1x4-busy"
SCENARIOS = ("bounce", "crowd-crash")
SIZES = (4, 12)
WARMUP_MS = 30_000
#: The metrics of a row, in table order; all checked.
METRICS = ("time_to_converge_ms", "lag_peak", "excess_lag_record_s", "records_reprocessed")
SHARE_FLOORS = {**FLOORS, "excess_lag_record_s": FLOORS["lag_record_s"],
                "records_reprocessed": FLOORS["lag_peak"]}


@dataclass(slots=True)
class ShareCell:
    scenario: str
    size: int
    sim: list[dict[str, Any]] = field(default_factory=list)
    wire: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

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


def cell_params(scenario: str, size: int, repeat: int, spec_path: Path = SPEC) -> list[Any]:
    """The spec's runs of the cell (``share:simple``, workload ``1x4-busy``), replicates
    ``0 .. repeat - 1``."""
    from groupcoord.lab.spec import expand, load_spec

    spec = load_spec(str(spec_path))
    if scenario not in spec.scenarios:
        raise CalibrationError(f"scenario {scenario!r} is not in {spec_path.name} (it has "
                               f"{', '.join(spec.scenarios)})")
    if size not in spec.sizes:
        raise CalibrationError(f"size {size} is not in {spec_path.name} (it has "
                               f"{', '.join(map(str, spec.sizes))})")
    runs = sorted((r for r in expand(spec) if r.protocol == PROTOCOL and r.workload == WORKLOAD
                   and r.scenario == scenario and r.size == size), key=lambda r: r.replicate)
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
    return {"seed": params.seed, "at_ms": w["at_ms"],
            "time_to_converge_ms": w["time_to_converge_ms"] if w["converged"] else None,
            "lag_peak": w["lag_peak"],
            "lag_record_s": round(float(w["lag_record_s"]), 1),
            "control_lag_record_s": round(float(c["lag_record_s"]), 1),
            "control_lag_peak": c["lag_peak"],
            "excess_lag_record_s": round(float(w["lag_record_s"]) - float(c["lag_record_s"]), 1),
            "records_reprocessed": w["records_reprocessed"]}


def calibrate_share(scenarios: Sequence[str] = SCENARIOS, sizes: Sequence[int] = SIZES, *,
                    repeat: int = 2, warmup_ms: int = WARMUP_MS, wire: bool = True,
                    progress: Callable[[str], None] | None = None,
                    keep: Path | None = None) -> list[ShareCell]:
    """Every cell: ``repeat`` simulated seeds and (``wire``) as many wire runs plus one wire
    control."""
    from groupcoord.lab.wire_share import (
        run_share_wire,
        share_window_metrics,
        span_lag_peak,
        span_lag_record_s,
    )
    from groupcoord.sim.settings import effective_settings

    cells: list[ShareCell] = []
    for scenario in scenarios:
        for size in sizes:
            cell = ShareCell(scenario, size)
            cells.append(cell)
            runs = cell_params(scenario, size, repeat)
            scs = [cell_scenario(p, warmup_ms) for p in runs]
            for p, sc in zip(runs, scs, strict=True):
                cell.sim.append(simulate_cell_run(p, sc))
            if not wire:
                continue
            spans: list[tuple[float, float]] = []
            try:
                for i, (p, sc) in enumerate(zip(runs, scs, strict=True)):
                    if progress is not None:
                        progress(f"{scenario} at {size}: wire run {i + 1} of {repeat}")
                    wl, mean = wire_workload(sc)
                    run = run_share_wire(sc, effective_settings(sc, PROTOCOL), wl, mean,
                                         seed=p.seed, progress=progress,
                                         keep_dir=None if keep is None else
                                         keep / f"{scenario}-{size}" / str(i + 1))
                    w = first_window(share_window_metrics(run))
                    if w is None:
                        raise RuntimeError("the wire run has no disturbance window")
                    spans.append(w["span"])
                    cell.wire.append({"seed": p.seed, **w})
                if progress is not None:
                    progress(f"{scenario} at {size}: wire control")
                wl, mean = wire_workload(scs[0])
                ctl = run_share_wire(replace(scs[0], events=()), effective_settings(
                    scs[0], PROTOCOL), wl, mean, seed=runs[0].seed, control=True,
                    until_s=max(b for _, b in spans) + 1.0, progress=progress,
                    keep_dir=None if keep is None else keep / f"{scenario}-{size}" / "control")
                for w in cell.wire:
                    c = span_lag_record_s(ctl, w["span"])
                    w["control_lag_peak"] = span_lag_peak(ctl, w["span"])
                    w["control_lag_record_s"] = c
                    w["excess_lag_record_s"] = round(w["lag_record_s"] - c, 1)
            except (RuntimeError, OSError) as e:
                cell.error = str(e)
    return cells


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}".rstrip("0").rstrip(".")


def _pair(cell: ShareCell, metric: str) -> str:
    s, w = cell.median("sim", metric), cell.median("wire", metric)
    ratio = "" if s is None or w is None or s <= 0 else f" ({s / w:.2f})" if w > 0 else ""
    return f"{_fmt(s)} / {_fmt(w)}{ratio}"


def format_share_table(cells: Sequence[ShareCell]) -> str:
    """The rows as docs/lab.md prints them (markdown): per cell each metric simulated / measured
    (the ratio simulated / measured), within 2x or not."""
    head = ("| scenario | members | runs | converge, ms: sim / wire (ratio) | lag peak, records "
            "| excess lag, record·s | records processed twice | within 2x |")
    lines = [head, "|" + "---|" * 8]
    for c in cells:
        if c.error is not None:
            lines.append(f"| {c.scenario} | {c.size} | {len(c.wire)} | wire run failed: "
                         f"{c.error.splitlines()[0][:120]} | | | | |")
            continue
        checks = c.checks()
        ok = all(v for v in checks.values() if v is not None) and any(
            v is not None for v in checks.values())
        misses = [m for m, v in checks.items() if v is False]
        verdict = "yes" if ok else "**no** (" + ", ".join(misses) + ")" if misses else "-"
        lines.append(f"| {c.scenario} | {c.size} | {len(c.wire) or len(c.sim)} | "
                     + " | ".join(_pair(c, m) for m in METRICS) + f" | {verdict} |")
    return "\n".join(lines)


def format_share_runs(cells: Sequence[ShareCell]) -> str:
    """Every run of every cell, both sides (``--windows``): what the medians are made of."""
    lines = []
    for c in cells:
        for side, rows in (("sim", c.sim), ("wire", c.wire)):
            for i, r in enumerate(rows):
                lines.append(f"  {c.scenario} at {c.size}, {side} {i + 1} (seed {r['seed']}): "
                             + ", ".join(f"{m} {_fmt(r.get(m))}" for m in (
                                 *METRICS, "lag_record_s", "control_lag_record_s", "control_lag_peak")))
    return "\n".join(lines)


def as_json(cells: Sequence[ShareCell]) -> list[dict[str, Any]]:
    return [{"scenario": c.scenario, "members": c.size, "error": c.error, "sim": c.sim,
             "wire": c.wire, "checks": c.checks(),
             "medians": {m: {"sim": c.median("sim", m), "wire": c.median("wire", m)}
                         for m in METRICS}} for c in cells]


__all__ = ["METRICS", "SCENARIOS", "SIZES", "ShareCell", "as_json", "calibrate_share",
           "cell_params", "cell_scenario", "format_share_runs", "format_share_table", "share_within_2x",
           "simulate_cell_run"]
