"""Findings: sentences generated from a sweep's runs, each with its numbers and the command
that reproduces it (the report opens with them, ``lab.report``).

Generic over metric columns: :data:`CATALOG` names every metric the lab knows (the
application metrics of the work model — stall time, lag, paused partition time, records
processed twice, task restarts — and today's coordination metrics — resource downtime, time
to converge, resources moved); a sweep's findings use those its ``runs`` table has and that
vary. Protocols are compared **paired by seed**: every protocol of a cell runs on the same
seeds (``lab.spec``), so each seed gives one difference between two protocols, and a finding
says in how many seeds one was lower.

Per panel (scenario, workload, fault rate) and per metric, at the panel's largest size:

- *ranking*: the protocol with the lowest median and the one with the highest, their medians,
  the ratio, and the paired count;
- *scaling*, when the panel has several sizes: how those two protocols' medians grow from the
  smallest size to the largest;
- *crossover*, when a numeric sweep parameter (:data:`SWEEP_PARAMETERS`, e.g. the processing
  time per record, from a column or the workload's ``work`` overrides) varies across the runs
  of a scenario: per value the protocol with the best median, and the values between which
  the winner changes (instead of a ranking per workload).

Differences below a metric's ``floor`` are ties (no sentence); a grid may name the metrics its
question is about (``metrics = ["convergence_ms", "lag_peak"]``).

Only runs that kept every invariant count. Plain Python over row dicts (no Spark, no pandas).
"""

from __future__ import annotations

import json
import math
import shlex
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, frozen=True)
class Metric:
    """A metric column: how to name it, its unit after dividing by ``scale``, which way is
    better."""

    column: str
    label: str
    unit: str
    scale: float = 1.0
    lower_is_better: bool = True
    #: The smallest difference (in the column's own unit) worth a sentence: below it two
    #: protocols tie (a 20 ms stall is a heartbeat's jitter, not a finding).
    floor: float = 0.0

    def fmt(self, raw: float | None) -> str:
        if raw is None:
            return "-"
        return f"{_num(raw / self.scale)}{(' ' + self.unit) if self.unit else ''}"


#: Every metric the lab reports, in the order findings and charts take them (the application's
#: view first: what a user of the group sees; then the coordinator's).
CATALOG: tuple[Metric, ...] = (
    Metric("stall_ms", "stall time (whole group processing nothing)", "s", 1000.0,
           floor=250.0),
    Metric("lag_peak", "peak consumer lag", "records", floor=10.0),
    Metric("lag_record_s", "lag integral", "record·s", floor=100.0),
    Metric("paused_partition_s", "paused partition time (owned, not processing)",
           "partition·s", floor=1.0),
    Metric("records_reprocessed", "records processed twice", "records", floor=10.0),
    Metric("task_restarts", "task restarts", "", floor=1.0),
    Metric("task_downtime_task_s", "task downtime (tasks not running)", "task·s", floor=1.0),
    Metric("time_to_balance_ms", "time until balanced", "s", 1000.0, floor=250.0),
    Metric("resource_downtime_ms", "resource downtime (no active owner)", "resource·s",
           1000.0, floor=1000.0),
    Metric("convergence_ms", "time to converge", "s", 1000.0, floor=250.0),
    Metric("resources_moved", "partitions or tasks moved", "", floor=1.0),
    Metric("records_processed", "records processed", "records", lower_is_better=False,
           floor=100.0),
)
BY_COLUMN: dict[str, Metric] = {m.column: m for m in CATALOG}

#: Numeric run parameters a sweep may vary within a scenario (crossover curves), in the order
#: they are looked for; the first that varies in a panel is its x-axis.
SWEEP_PARAMETERS: tuple[str, ...] = ("processing_ms", "records_per_s", "max_poll_records",
                                     "commit_latency_ms", "warmup_ms", "task_start_ms",
                                     "metadata_max_age_ms")

#: Findings per panel and metric kind are capped; the report lists at most this many.
MAX_FINDINGS = 60
#: How many metrics per panel get findings (the first that vary, in CATALOG order).
METRICS_PER_PANEL = 2


@dataclass(slots=True)
class Finding:
    kind: str  # ranking | scaling | crossover
    scenario: str
    text: str
    command: str
    numbers: dict[str, Any] = field(default_factory=dict)


def _num(v: float) -> str:
    """Three significant digits, no exponent for the magnitudes a run produces."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    if a >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def number(v: float) -> str:
    """A metric's value as the report prints it: three significant digits, thousands
    separated, no exponent."""
    return _num(v)


def family(protocol: str) -> str:
    """``classic``, ``consumer``, ``connect`` or ``classic-connect`` (the label's name)."""
    return protocol.partition(":")[0]


def present_metrics(rows: Sequence[Mapping[str, Any]]) -> list[Metric]:
    """The catalog's metrics that the rows have (a non-null value somewhere)."""
    out = []
    for m in CATALOG:
        if any(r.get(m.column) is not None for r in rows):
            out.append(m)
    return out


def work_value(row: Mapping[str, Any], key: str) -> float | None:
    """A workload parameter of a run: its own column, else the workload's overrides (the
    ``work`` column, JSON). A distribution counts as its mean (``uniform``: the middle)."""
    v = row.get(key)
    if v is None and row.get("work"):
        try:
            v = json.loads(str(row["work"])).get(key)
        except (ValueError, AttributeError):
            v = None
    if isinstance(v, Mapping):
        if "mean" in v:
            v = v["mean"]
        elif "min" in v and "max" in v:
            v = (float(v["min"]) + float(v["max"])) / 2
        else:
            v = None
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def with_work_parameters(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each of :data:`SWEEP_PARAMETERS` as a column (from ``work``)."""
    out = []
    for r in rows:
        d = dict(r)
        for key in SWEEP_PARAMETERS:
            if d.get(key) is None:
                v = work_value(r, key)
                if v is not None:
                    d[key] = v
        out.append(d)
    return out


def sweep_parameter(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The first of :data:`SWEEP_PARAMETERS` that takes several values in ``rows``."""
    for col in SWEEP_PARAMETERS:
        values = {r.get(col) for r in rows if r.get(col) is not None}
        if len(values) > 1 and all(isinstance(v, int | float) for v in values):
            return col
    return None


def _size(r: Mapping[str, Any]) -> int:
    s = r.get("size")
    return int(s if s is not None else r.get("members") or 0)


def _median(values: Iterable[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _paired(rows: Sequence[Mapping[str, Any]], metric: str, a: str, b: str,
            x_col: str | None = None) -> list[float]:
    """Per seed (and size, and sweep parameter), ``a``'s value minus ``b``'s."""
    by: dict[tuple[Any, ...], dict[str, float]] = defaultdict(dict)
    for r in rows:
        v = r.get(metric)
        if v is None:
            continue
        key = (_size(r), r.get("seed"), r.get(x_col) if x_col else None)
        by[key][str(r["protocol"])] = float(v)
    return [d[a] - d[b] for d in by.values() if a in d and b in d]


def reproduce(spec: str, scenario: str, size: int | None = None, workload: str | None = None,
              protocols: Sequence[str] = ()) -> str:
    """The ``lab run`` that reruns just these cells of the spec (same seeds, same rows)."""
    parts = ["groupcoord", "lab", "run", "--spec", spec, "--scenario", scenario]
    if size is not None:
        parts += ["--size", str(size)]
    if workload is not None:
        parts += ["--workload", workload]
    for p in protocols:
        parts += ["--protocol", p]
    parts += ["--out", "DIR"]
    return " ".join(shlex.quote(p) for p in parts)


def _panel_label(scenario: str, workload: str, rate: float | None, multi_wl: bool,
                 multi_fr: bool) -> str:
    bits = [scenario]
    if multi_wl:
        bits.append(f"workload {workload}")
    if multi_fr and rate:
        bits.append(f"{rate:.0%} network faults")
    return ", ".join(bits)


def _varies(rows: Sequence[Mapping[str, Any]], metric: str) -> bool:
    vals = {r.get(metric) for r in rows if r.get(metric) is not None}
    return len(vals) > 1


def _ranking(rows: list[dict[str, Any]], m: Metric, size: int, label: str, spec: str,
             scenario: str, workload: str | None) -> list[Finding]:
    at = [r for r in rows if _size(r) == size]
    med: dict[str, float] = {}
    for p in sorted({str(r["protocol"]) for r in at}):
        v = _median(r.get(m.column) for r in at if r["protocol"] == p)
        if v is not None:
            med[p] = v
    if len(med) < 2:
        return []
    sign = 1 if m.lower_is_better else -1
    order = sorted(med, key=lambda p: (sign * med[p], p))
    best, worst = order[0], order[-1]
    if abs(med[worst] - med[best]) < max(m.floor, 1e-12):
        return []
    tied = [p for p in order if abs(med[p] - med[best]) < max(m.floor, 1e-12)]
    diffs = _paired(at, m.column, best, worst)
    wins = sum(1 for d in diffs if sign * d < 0)
    ratio = (med[worst] / med[best]) if med[best] else math.inf
    if not m.lower_is_better:
        ratio = 1 / ratio if ratio else math.inf
    ratio_text = (f" ({ratio:.1f}x)" if math.isfinite(ratio) and ratio >= 1.05 else "")
    word = "least" if m.lower_is_better else "most"
    who = (f"{best} has" if len(tied) == 1 else
           f"{', '.join(tied[:-1])} and {tied[-1]} have")
    others = ", ".join(f"{p} {m.fmt(med[p])}" for p in order[len(tied):-1])
    text = (f"{label}, {size} members: {who} the {word} {m.label}, median "
            f"{m.fmt(med[best])}{_spread(at, m, best)} against {m.fmt(med[worst])}"
            f"{_spread(at, m, worst)} for {worst}{ratio_text}; paired "
            f"by seed, {best} is {'lower' if m.lower_is_better else 'higher'} in {wins} of "
            f"{len(diffs)} seeds." + (f" In between: {others}." if others else ""))
    return [Finding("ranking", scenario, text,
                    reproduce(spec, scenario, size, workload),
                    {"metric": m.column, "size": size, "best": best, "worst": worst,
                     "medians": med, "paired_wins": wins, "pairs": len(diffs)})]


def _scaling(rows: list[dict[str, Any]], m: Metric, sizes: list[int], protocols: list[str],
             label: str, spec: str, scenario: str, workload: str | None) -> list[Finding]:
    lo, hi = sizes[0], sizes[-1]
    bits = []
    numbers: dict[str, Any] = {"metric": m.column, "from": lo, "to": hi}
    changed = False
    for p in protocols:
        a = _median(r.get(m.column) for r in rows if r["protocol"] == p and _size(r) == lo)
        b = _median(r.get(m.column) for r in rows if r["protocol"] == p and _size(r) == hi)
        if a is None or b is None:
            continue
        changed = changed or abs(b - a) > 0.1 * max(abs(a), abs(b))
        growth = "" if not a else f" ({b / a:.1f}x)" if b / a >= 0.1 or b == 0 \
            else f" ({b / a:.2g}x)"  # (a fall to 5 %: 0.05x, not 0.0x)
        bits.append(f"{p} from {m.fmt(a)} to {m.fmt(b)}{growth}")
        numbers[p] = (a, b)
    if not bits or not changed:
        return []
    text = f"{label}, {lo} → {hi} members: {m.label} goes " + "; ".join(bits) + "."
    text += _load_note(rows, lo, hi)
    return [Finding("scaling", scenario, text, reproduce(spec, scenario, None, workload,
                                                          protocols), numbers)]


def _crossover(rows: list[dict[str, Any]], m: Metric, x_col: str, size: int, label: str,
               spec: str, scenario: str) -> list[Finding]:
    """The winner curve over a swept parameter: per value, the protocol with the best median
    (every protocol of a value runs on the same seeds), and where the winner changes."""
    at = [r for r in rows if _size(r) == size and r.get(x_col) is not None]
    xs = sorted({float(r[x_col]) for r in at})
    sign = 1 if m.lower_is_better else -1
    curve: list[tuple[float, str, float, dict[str, float]]] = []
    for x in xs:
        med: dict[str, float] = {}
        for p in sorted({str(r["protocol"]) for r in at}):
            v = _median(r.get(m.column) for r in at if r["protocol"] == p
                        and float(r[x_col]) == x)
            if v is not None:
                med[p] = v
        if len(med) < 2:
            continue
        top = min(med, key=lambda p: (sign * med[p], p))
        # protocols within the floor of the best share the place (a 0 s stall and another)
        tied = sorted(p for p in med if abs(med[p] - med[top]) < max(m.floor, 1e-12))
        best = "tie" if len(tied) == len(med) else " and ".join(tied)
        curve.append((x, best, med[top], med))
    if len(curve) < 2 or all(w == "tie" for _, w, _, _ in curve):
        return []
    flips = [(curve[i - 1][0], curve[i][0], curve[i - 1][1], curve[i][1])
             for i in range(1, len(curve)) if curve[i][1] != curve[i - 1][1]]
    x_name, x_unit = X_NAMES.get(x_col, (x_col, ""))
    busy = _busy(at, x_col)
    points = "; ".join(
        f"{_num(x)}{x_unit}{busy.get(x, '')}: " + ("tie, " if w == "tie" else "")
        + ", ".join(f"{p} {m.fmt(v)}" for p, v in sorted(med.items(),
                                                         key=lambda kv: (sign * kv[1], kv[0])))
        for x, w, _, med in curve)
    word = "lowest" if m.lower_is_better else "highest"

    def who(w: str) -> str:
        if w == "tie":
            return "no protocol differs by more than the metric's floor"
        return f"{w} {'have' if ' and ' in w else 'has'} the {word}"

    if flips:
        x0, w0 = curve[0][0], curve[0][1]
        changes = "; ".join(
            f"{who(b)} from {_num(hi)}{x_unit}{busy.get(hi, '')} on (the change comes "
            f"between {_num(lo)} and {_num(hi)}{x_unit})" for lo, hi, _, b in flips)
        text = (f"{label}, {size} members, {m.label} against {x_name}: at "
                f"{_num(x0)}{x_unit}{busy.get(x0, '')} {who(w0)}; {changes} (medians: "
                f"{points}).")
    else:
        verb = "have" if " and " in curve[0][1] else "has"
        text = (f"{label}, {size} members, {m.label} against {x_name}: {curve[0][1]} {verb} the "
                f"{word} at every value swept, no crossover (medians: {points}).")
    protocols = sorted({p for _, _, _, med in curve for p in med})
    return [Finding("crossover", scenario, text,
                    reproduce(spec, scenario, size, None, protocols),
                    {"metric": m.column, "parameter": x_col,
                     "curve": [(x, w, med) for x, w, _, med in curve],
                     "flips": [(lo, hi, b) for lo, hi, _, b in flips]})]


#: How a swept parameter reads in a sentence: its name, and its unit after a value.
X_NAMES: dict[str, tuple[str, str]] = {
    "processing_ms": ("the processing time per record", " ms"),
    "records_per_s": ("the production rate per partition", " records/s"),
    "max_poll_records": ("max.poll.records", ""),
    "commit_latency_ms": ("the commit latency", " ms"),
    "warmup_ms": ("the warm-up per partition", " ms"),
    "task_start_ms": ("the task start time", " ms"),
    "metadata_max_age_ms": ("metadata.max.age.ms", " ms"),
}

#: The work model's default production (records/s per partition and per Connect task) when
#: a run's workload does not override it (``sim.workload.Workload``).
_DEFAULT_RATE = 50.0
_DEFAULT_PROCESSING_MS = 0.5


def production(row: Mapping[str, Any]) -> float | None:
    """The group's production (records/s) in a run: topics x partitions (or connectors x
    tasks) x the rate per partition (or task); None when the run does not say its resources."""
    if row.get("topics") is not None and row.get("partitions") is not None:
        rate = work_value(row, "records_per_s")
        return float(row["topics"]) * float(row["partitions"]) * (
            _DEFAULT_RATE if rate is None else rate)
    if row.get("connectors") is not None and row.get("tasks") is not None:
        rate = work_value(row, "task_records_per_s")
        return float(row["connectors"]) * float(row["tasks"]) * (
            _DEFAULT_RATE if rate is None else rate)
    return None


def _spread(rows: Sequence[Mapping[str, Any]], m: Metric, protocol: str) -> str:
    """`` (lo to hi over N seeds)`` of a protocol's runs when they differ by more than the
    metric's floor (a median of a wide distribution is one number of many: the anchor's
    classic runs wait anywhere within a metadata refresh period)."""
    vals = sorted(float(r[m.column]) for r in rows
                  if r["protocol"] == protocol and r.get(m.column) is not None)
    if len(vals) < 3 or vals[-1] - vals[0] <= max(m.floor, 0.1 * abs(vals[-1])):
        return ""
    return f" ({_num(vals[0] / m.scale)} to {_num(vals[-1] / m.scale)} over {len(vals)} seeds)"


def _load_note(rows: Sequence[Mapping[str, Any]], lo: int, hi: int) -> str:
    """What a size sweep does to each member's load: when the group's production is the
    same at both sizes, each member's share falls with the size (a metric that falls with
    members then says less about the protocol than about the load)."""
    prod = {}
    for size in (lo, hi):
        ps = {production(r) for r in rows if _size(r) == size}
        if len(ps) != 1 or None in ps:
            return ""
        prod[size] = ps.pop()
    a, b = prod[lo], prod[hi]
    if a is None or b is None or not lo or not hi:
        return ""
    if a == b:
        return (f" The group's production is {_num(a)} records/s at both sizes, so each "
                f"member's share falls from {_num(a / lo)} to {_num(b / hi)} records/s.")
    return (f" Production grows from {_num(a)} to {_num(b)} records/s: per member "
            f"{_num(a / lo)} → {_num(b / hi)} records/s.")


def _busy(rows: Sequence[Mapping[str, Any]], x_col: str) -> dict[float, str]:
    """For a swept processing time: `` (N % busy)`` per value, each member's share of the
    production times the time per record (what makes a poll loop hold a rebalance)."""
    if x_col not in ("processing_ms", "records_per_s"):
        return {}
    out: dict[float, str] = {}
    for x in {float(r[x_col]) for r in rows if r.get(x_col) is not None}:
        at = [r for r in rows if r.get(x_col) is not None and float(r[x_col]) == x]
        loads = set()
        for r in at:
            prod, size = production(r), _size(r)
            ms = work_value(r, "processing_ms")
            if prod is None or not size:
                continue
            loads.add(prod / size * (_DEFAULT_PROCESSING_MS if ms is None else ms) / 1000)
        if len(loads) == 1:
            out[x] = f" ({loads.pop():.0%} busy)"
    return out


def findings(runs: Sequence[Mapping[str, Any]], spec: str = "SPEC",
             limit: int = MAX_FINDINGS, metrics: Sequence[str] = ()) -> list[Finding]:
    """The findings of a sweep's ``runs`` rows (see the module docstring); ``metrics``: the
    columns to report (default: the first :data:`METRICS_PER_PANEL` that differ)."""
    rows = with_work_parameters(r for r in runs if r.get("ok"))
    out: list[Finding] = []
    # A parameter swept across the workloads of a scenario (one workload per processing
    # time): one crossover curve per metric instead of a ranking per workload.
    groups: dict[tuple[str, float | None], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(str(r["scenario"]), r.get("fault_rate"))].append(r)
    multi_fr = len({k[1] for k in groups}) > 1
    swept: dict[tuple[str, float | None], str] = {}
    for (scenario, rate), grow in sorted(groups.items(),
                                         key=lambda kv: (kv[0][0], kv[0][1] or 0.0)):
        x_col = sweep_parameter(grow)
        if x_col is None:
            continue
        swept[(scenario, rate)] = x_col
        label = _panel_label(scenario, "", rate, False, multi_fr)
        with_x = [r for r in grow if r.get(x_col) is not None]
        for m in chosen_metrics(with_x, metrics):
            out += _crossover(with_x, m, x_col, max(_size(r) for r in with_x), label, spec,
                              scenario)
    panels: dict[tuple[str, str, float | None], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        x_col = swept.get((str(r["scenario"]), r.get("fault_rate")))
        if x_col is None or r.get(x_col) is None:  # runs of a swept parameter: crossovers
            panels[(str(r["scenario"]), str(r.get("workload")), r.get("fault_rate"))].append(r)
    multi_wl = len({k[1] for k in panels}) > 1
    for key in sorted(panels, key=lambda k: (k[0], k[1], -1.0 if k[2] is None else k[2])):
        prow = panels[key]
        scenario, workload, rate = key
        label = _panel_label(scenario, workload, rate, multi_wl, multi_fr)
        wl = workload if multi_wl else None
        sizes = sorted({_size(r) for r in prow})
        for m in chosen_metrics(prow, metrics):
            rank = _ranking(prow, m, sizes[-1], label, spec, scenario, wl)
            out += rank
            if rank and len(sizes) > 1:
                pair = [rank[0].numbers["best"], rank[0].numbers["worst"]]
                out += _scaling(prow, m, sizes, pair, label, spec, scenario, wl)
    order = {"crossover": 1}
    out.sort(key=lambda f: order.get(f.kind, 0))  # stable: per scenario, crossovers last
    return out[:limit]


def chosen_metrics(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str] = ()) -> list[Metric]:
    """The metrics to report on these rows: those asked for, else the first that differ
    between protocols by more than their floor."""
    if metrics:
        return [BY_COLUMN[c] for c in metrics if c in BY_COLUMN
                and any(r.get(c) is not None for r in rows)]
    return [m for m in present_metrics(rows) if _differs(rows, m)][:METRICS_PER_PANEL]


def _differs(rows: Sequence[Mapping[str, Any]], m: Metric) -> bool:
    """Whether some cell's protocols differ in median by at least the metric's floor."""
    cells: dict[tuple[Any, ...], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        v = r.get(m.column)
        if v is not None:
            key = (_size(r), r.get("workload"), r.get("fault_rate"))
            cells[key][str(r["protocol"])].append(float(v))
    for by_p in cells.values():
        meds = [statistics.median(v) for v in by_p.values()]
        if len(meds) > 1 and max(meds) - min(meds) >= m.floor:
            return True
    return False


__all__ = [
    "BY_COLUMN",
    "CATALOG",
    "SWEEP_PARAMETERS",
    "X_NAMES",
    "Finding",
    "Metric",
    "chosen_metrics",
    "family",
    "findings",
    "number",
    "present_metrics",
    "reproduce",
    "sweep_parameter",
]
