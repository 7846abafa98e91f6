"""The KIP-415 grid's Connect rows against real Connect workers: ``groupcoord lab calibrate
--connect``.

For each cell (scenario x size x protocol of the paper spec's ``kip415`` grid, workload
``16x8c``) the wire plays the cell's scenario with Apache Kafka's own Connect group membership
(:mod:`groupcoord.lab.wire_connect`) ``repeat`` times, run ``r`` with the seed of the grid's
replicate ``r`` (the same scenario: members, connectors, timings, event time, the initial
workers' start phases), and the simulator runs the same replicates (``lab.runs.run_one``: the
rows the page reports). Compared per metric, median over the wire runs against the median over
their paired seeds (the median over all the grid's replicates beside it): ``task_restarts``,
``task_downtime_task_s``, ``time_to_balance_ms``, each *within 2x* when the larger is at most
twice the smaller or both are below its floor (:data:`FLOORS`).

Rows go to ``lab/data/calibration-connect.json`` (``--save``), one per cell, in a stable order
(scenario, size, protocol), a re-measured cell replacing its row.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from groupcoord.lab.wire_connect import PROTOCOLS, ConnectWireError, run_connect_wire

DATA = Path(__file__).resolve().parent / "data" / "calibration-connect.json"
METRICS = ("task_restarts", "task_downtime_task_s", "time_to_balance_ms")
#: Below these both sides count as equal:
#:
#: - restarts: 2 tasks, a task more or less moved by where a heartbeat falls;
#: - downtime: 5 task·s, a task's stop and start (2 s at the model's 1 s each) for two tasks
#:   plus the logs' and polls' granularity;
#: - time until balanced: 500 ms, a heartbeat and poll phase (as ``lab.calibrate``'s times).
FLOORS: dict[str, float] = {"task_restarts": 2, "task_downtime_task_s": 5.0,
                            "time_to_balance_ms": 500}
GRID = "kip415"
WORKLOAD = "16x8c"


def within_2x(metric: str, sim: float | None, wire: float | None) -> bool | None:
    """Whether the two agree within 2x (None when either side is missing)."""
    if sim is None or wire is None:
        return None
    floor = FLOORS[metric]
    if sim < floor and wire < floor:
        return True
    lo, hi = sorted((float(sim), float(wire)))
    return lo > 0 and hi <= 2 * lo


def _median(values: Sequence[float | None]) -> float | None:
    vs = [float(v) for v in values if v is not None]
    if len(vs) * 2 < len(values) or not vs:
        return None
    return round(statistics.median(vs), 3)


def cell_params(scenario: str, size: int, protocol: str) -> list[Any]:
    """The paper grid's runs of the cell, by replicate."""
    from groupcoord.lab.spec import expand, load_spec

    runs = [r for r in expand(load_spec("paper"))
            if r.scenario == scenario and r.size == size and r.protocol == protocol
            and r.workload == WORKLOAD]
    if not runs:
        raise ConnectWireError(f"no cell {scenario} x {size} x {protocol} x {WORKLOAD} in the "
                               f"paper spec's {GRID} grid")
    return sorted(runs, key=lambda r: r.replicate)


def calibrate_cell(scenario: str, size: int, protocol: str, repeat: int, *,
                   progress: Callable[[str], None] | None = None,
                   keep: Path | None = None) -> dict[str, Any]:
    """One row: the cell measured ``repeat`` times on the wire and simulated (see the doc)."""
    from groupcoord.lab.runs import build_scenario, run_one

    if protocol not in PROTOCOLS:
        raise ConnectWireError(f"protocol {protocol!r} has no Connect worker on the wire "
                               f"(known: {', '.join(PROTOCOLS)})")
    if repeat < 1:
        raise ConnectWireError(f"repeat must be at least 1, got {repeat}")
    runs = cell_params(scenario, size, protocol)
    if repeat > len(runs):
        raise ConnectWireError(f"repeat {repeat} is more than the grid's {len(runs)} replicates")
    sims = [run_one(r) for r in runs]
    wire: list[dict[str, Any]] = []
    started = time.monotonic()
    for r in runs[:repeat]:
        sc = build_scenario(r)
        kd = None if keep is None else keep / f"{scenario}-{size}-{protocol.split(':')[1]}-{r.replicate}"
        m = run_connect_wire(sc, protocol, r.seed, keep_dir=kd, progress=progress)
        m["replicate"] = r.replicate
        wire.append(m)
    row: dict[str, Any] = {
        "scenario": scenario, "size": size, "protocol": protocol, "workload": WORKLOAD,
        "client": wire[0]["runtime"], "wire_runs": repeat,
        "load": [x for m in wire for x in m["load"]],
        "seeds": [r.seed for r in runs[:repeat]],
        "wall_s": round(time.monotonic() - started),
        "command": f"groupcoord lab calibrate --connect --scenario {scenario} --size {size} "
                   f"--protocol {protocol} --repeat {repeat} --save",
    }
    for metric in METRICS:
        paired = [s.get(metric) for s in sims[:repeat]]
        measured = [m.get(metric) for m in wire]
        sim_m, wire_m = _median(paired), _median(measured)
        row[metric] = {"sim": sim_m, "wire": wire_m,
                       "sim_all_seeds": _median([s.get(metric) for s in sims]),
                       "sim_runs": paired, "wire_runs": measured,
                       "within_2x": within_2x(metric, sim_m, wire_m)}
    return row


def save_rows(rows: Sequence[dict[str, Any]], path: Path = DATA) -> list[dict[str, Any]]:
    """Merge ``rows`` into the data file (a cell's new row replaces its old one), stable order."""
    old: list[dict[str, Any]] = []
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8")).get("rows", [])
    key = lambda r: (str(r["scenario"]), int(r["size"]), str(r["protocol"]))  # noqa: E731
    merged = {key(r): r for r in old}
    merged.update({key(r): r for r in rows})
    out = [merged[k] for k in sorted(merged)]
    path.write_text(json.dumps({"grid": GRID, "workload": WORKLOAD, "rows": out}, indent=1)
                    + "\n", encoding="utf-8")
    return out


def load_rows(path: Path | None = None) -> list[dict[str, Any]]:
    path = path or DATA
    if not path.exists():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("rows", []))


def calibration_line(scenario: str, protocol: str, rows: Sequence[dict[str, Any]] | None = None,
                     members: int | None = None) -> str | None:
    """A sentence for the page: the cell's real Connect calibration (None without a row); with
    ``members``, that size's row, or every size's with a note that this one was not measured."""
    rows = load_rows() if rows is None else rows
    mine = [r for r in rows if r["scenario"] == scenario and r["protocol"] == protocol]
    if not mine:
        return None
    at_size = [r for r in mine if members is None or r["size"] == members]
    parts = []
    for r in at_size or mine:
        figs = ", ".join(
            f"{name} {_fmt(r[m]['sim'])} / {_fmt(r[m]['wire'])}"
            + ("" if r[m]["within_2x"] else " (not within 2x)")
            for m, name in zip(METRICS, ("restarts", "task·s", "ms until balanced"), strict=True))
        parts.append(f"{r['size']} workers: {figs}")
    missing = "" if at_size else f" (not measured at {members} workers)"
    return (f"{protocol} against real Connect workers, {mine[0]['client']}, simulated / measured "
            f"(median of {mine[0]['wire_runs']} wire runs against their paired seeds){missing}: "
            + "; ".join(parts))


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:,.1f}"


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    head = ("| scenario | workers | protocol | wire runs, load | task restarts | task downtime, "
            "task·s | time until balanced, ms | within 2x |\n|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        load = r["load"]
        cells = [f"{_fmt(r[m]['sim'])} / {_fmt(r[m]['wire'])}" for m in METRICS]
        ok = all(r[m]["within_2x"] for m in METRICS)
        lines.append(f"| {r['scenario']} | {r['size']} | {r['protocol']} | {r['wire_runs']}, "
                     f"{min(load):.1f}-{max(load):.1f} | " + " | ".join(cells)
                     + f" | {'yes' if ok else '**no**'} |")
    return "\n".join(lines)


#: The cells ``--connect`` runs by default (the brief of the calibration: docs/lab.md).
SCENARIOS = ("kip415-worker-joins", "worker-leaves-d0", "kip415-connector-added")
SIZES = (3, 6)


def run_cli(ns: Any) -> int:
    """``groupcoord lab calibrate --connect`` (``lab.cli``): exit 0 when the runs completed, 1
    when one failed, 2 on a bad parameter."""
    import sys

    from groupcoord.lab.wire_java import JavaClientMissing

    scenarios = [ns.scenario] if ns.scenario else list(SCENARIOS)
    sizes = [ns.size] if ns.size is not None else list(SIZES)
    protocols = list(ns.protocol or PROTOCOLS_DEFAULT)
    try:
        for p in protocols:
            if p not in PROTOCOLS:
                raise ConnectWireError(f"protocol {p!r} has no Connect worker on the wire "
                                       f"(known: {', '.join(PROTOCOLS)})")
        for sc in scenarios:
            for size in sizes:
                for p in protocols:
                    cell_params(sc, size, p)
    except (ConnectWireError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def progress(msg: str) -> None:
        if not ns.quiet:
            print(f"calibrate: {msg}", file=sys.stderr, flush=True)

    rows: list[dict[str, Any]] = []
    try:
        for sc in scenarios:
            for size in sizes:
                for p in protocols:
                    rows.append(calibrate_cell(sc, size, p, ns.repeat, progress=progress,
                                               keep=Path(ns.keep) if ns.keep else None))
                    if ns.save is not None:  # each finished cell kept at once
                        save_rows(rows[-1:], Path(ns.save) if ns.save else DATA)
    except (JavaClientMissing, RuntimeError, ConnectWireError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_rows(rows))
    return 0


PROTOCOLS_DEFAULT = ("classic-connect:eager", "classic-connect:sessioned")
