"""The lab's report: ``DIR/report/index.html``, ``DIR/report/summary.md`` and PNG plots.

Rendered on the driver from the Parquet tables in ``DIR`` (read with pyarrow, no Spark), so
``groupcoord lab report DIR`` can render it again at any time. Sections, each present when its
tables are:

- the sweep (``sweep.json``, ``aggregates/``, ``violations/``): for every scenario (and
  workload and fault rate, when the spec varies them) one figure comparing the protocols, with
  resource downtime and time to converge against the cluster size (p50 as a line, the band up
  to p95); an overview figure of the p50 downtime per scenario at the largest size; the
  summary table; every violation with the command that reproduces it;
- the audit of a real coordinator (``audit/``): the table per group and a figure of the group
  epoch over time.

Plots use matplotlib's object API with the Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

import html
import json
import logging
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groupcoord.lab.aggregate import METRICS
from groupcoord.lab.findings import (
    CATALOG,
    Finding,
    Metric,
    chosen_metrics,
    family,
    findings,
    sweep_parameter,
    with_work_parameters,
)

log = logging.getLogger(__name__)

#: Summary table columns: (title, aggregate column, format).
SUMMARY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("runs", "runs", "d"), ("violations", "violations", "d"),
    ("converge p50 ms", "convergence_ms_p50", ".0f"),
    ("converge p95 ms", "convergence_ms_p95", ".0f"),
    ("converge p99 ms", "convergence_ms_p99", ".0f"),
    ("downtime p50 res·ms", "resource_downtime_ms_p50", ".0f"),
    ("downtime p95 res·ms", "resource_downtime_ms_p95", ".0f"),
    ("downtime p99 res·ms", "resource_downtime_ms_p99", ".0f"),
    ("moved p50", "resources_moved_p50", ".1f"), ("moved p95", "resources_moved_p95", ".1f"),
    ("epoch bumps p50", "epoch_bumps_p50", ".1f"), ("messages p50", "messages_p50", ".0f"),
)
AUDIT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("group", "group_id", "s"), ("type", "group_type", "s"), ("records", "records", "d"),
    ("span s", "span_s", ".1f"), ("epoch", "group_epoch", "d"),
    ("rebalances", "rebalances", "d"), ("per hour", "rebalances_per_hour", ".1f"),
    ("assignment epoch", "assignment_epoch", "d"), ("max member epoch", "max_member_epoch", "d"),
    ("joined", "members_joined", "d"), ("left", "members_left", "d"),
    ("members now", "members_now", "d"), ("max members", "max_members", "d"),
    ("assigned", "resources_assigned", "d"), ("moved", "resources_moved", "d"),
    ("commits", "offset_commits", "d"), ("deleted", "deleted", "s"),
)


def read_rows(path: Path) -> list[dict[str, Any]] | None:
    """The rows of a Parquet table (a directory, partitioned the hive way or not); None if it
    does not exist, [] if it has no files (Spark writes no file for an empty partitioned
    table)."""
    if not path.exists():
        return None
    import pyarrow.dataset as ds

    files = [p for p in path.rglob("*.parquet") if not p.name.startswith((".", "_"))]
    if not files:
        return []
    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
    return list(table.to_pylist())


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The ``runs`` table without its bulky text columns (the simulator's summary and the
    scenario definitions), for findings and crossover charts."""
    if not path.exists() or not any(path.rglob("*.parquet")):
        return []
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    cols = [c for c in dataset.schema.names if c not in ("summary_json", "scenario_def")]
    return list(dataset.to_table(columns=cols).to_pylist())


def model_limits(runs: Sequence[dict[str, Any]]) -> list[str]:
    """What the simulation leaves out, as the reader must know it to weigh the findings (the
    first item depends on whether the runs carry the work model's metrics)."""
    has_work = any(r.get("records_processed") is not None for r in runs)
    items = []
    if has_work:
        items.append(
            "Members do work as the work model describes it (production rate, poll loop, "
            "processing time per record, commits, warm-up), as rates between state changes: "
            "no per-record variation beyond the drawn processing time, no back-pressure from "
            "brokers, no fetch sizes; a record can be polled a fixed fetch latency (100 ms) "
            "after it was produced. Members start at offsets drawn across one heartbeat "
            "interval, so each seed puts their heartbeats elsewhere relative to a disturbance; "
            "a classic member refreshes metadata at a phase drawn within metadata.max.age.ms, "
            "and the classic leader assigns from its own metadata (as the Java consumer's "
            "does). A process starts at once unless the workload sets startup_ms (the built-in "
            "specs do not). Not modelled: CPU contention between members, clients' "
            "per-request processing time (on the wire these move phases by tens of "
            "milliseconds and decide races the model settles by its latencies).")
        items.append(
            "A partition new to the group is consumed from its first record (as with "
            "auto.offset.reset=earliest). With the clients' default, latest, what was produced "
            "to it before its first fetch is skipped instead: the lag a classic group builds "
            "on partitions it has not seen yet would then be records never processed.")
        items.append(
            "Checked against real clients (groupcoord lab calibrate, docs/lab.md 'Calibration "
            "against real clients'): at 6 members, rolling bounce and scale-out, medians "
            "against medians, the cooperative and KIP-848 consumers' convergence and lag are "
            "within 2x of librdkafka's, classic eager's too but for two near misses; Connect "
            "workers only partly: with their start-up modelled (2.5 s, which the lab's runs "
            "leave at 0) a Connect scale-out converges in about 12 s simulated against 17-24 s "
            "measured, and Connect rolling bounces differ by 2-3x.")
    else:
        items.append(
            "Members are idle: no poll loop and no processing time, so an eager member rejoins "
            "the moment it hears of a rebalance and eager's stop-the-world barrier costs "
            "little; the incremental protocols pay a heartbeat interval or KIP-415's delay per "
            "move. Read downtime and convergence with that in mind: they are the "
            "coordination's cost, not the application's.")
    items += [
        "The coordinator and the assignors compute in zero simulated time: only network "
        "latency, timers and the members' own delays take time (upstream's assignors take "
        "milliseconds at 10,000 members).",
        "One coordinator shard and no brokers: no partition leadership changes, no log "
        "appends' latency beyond the simulated network, no client-side metadata fetches "
        "except as the scenario's events model them.",
        "The network is the scenario's latency distribution and fault rates; real networks "
        "have correlated and bursty faults, garbage-collection pauses and CPU contention.",
        "Numbers are medians over a few seeds per cell (paired across protocols): small "
        "differences between protocols may be within the seeds' spread (p95 in the tables).",
    ]
    return items


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if spec == "s":
        return str(v)
    if spec == "d":
        return f"{int(v):d}"
    return format(float(v), spec)


def _slug(*parts: Any) -> str:
    text = "__".join("x" if p is None else str(p) for p in parts)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def _cell_label(row: dict[str, Any]) -> str:
    size = row.get("size")
    return "scenario" if size is None else str(size)


def _panel_key(row: dict[str, Any]) -> tuple[str, str, float | None]:
    return (str(row["scenario"]), str(row["workload"]), row.get("fault_rate"))


def _panel_title(key: tuple[str, str, float | None], multi_wl: bool, multi_fr: bool) -> str:
    scenario, workload, rate = key
    bits = [scenario]
    if multi_wl:
        bits.append(f"workload {workload}")
    if multi_fr:
        bits.append("faults as scenario" if rate is None else f"faults {rate:g}")
    return ", ".join(bits)


# --------------------------------------------------------------------------- plots

#: Violations listed in the report (all of them are in the violations table).
MAX_VIOLATIONS_SHOWN = 200

#: One colour map per protocol family; a family's variants are shades of it (and line styles).
FAMILY_COLORMAPS: dict[str, str] = {"classic": "Blues", "consumer": "Oranges",
                                    "connect": "Greens", "classic-connect": "Purples"}
_OTHER_COLORMAP = "Greys"
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P")
#: Sizes spanning more than this factor get a logarithmic x-axis (10 to 1,000 members);
#: otherwise every scale is linear.
LOG_X_SPAN = 20.0


def protocol_styles(protocols: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A colour per protocol, consistent across every chart of a report: the family's colour
    map (classic blue, consumer orange, connect green, classic-connect purple), one shade per
    variant from dark to light, and a line style and marker per variant."""
    from matplotlib import colormaps

    by_family: dict[str, list[str]] = defaultdict(list)
    for p in sorted(set(protocols)):
        by_family[family(p)].append(p)
    out: dict[str, dict[str, Any]] = {}
    for fam, members in by_family.items():
        cmap = colormaps[FAMILY_COLORMAPS.get(fam, _OTHER_COLORMAP)]
        n = len(members)
        for i, p in enumerate(members):
            shade = 0.85 - (0.45 * i / (n - 1) if n > 1 else 0.0)
            out[p] = {"color": cmap(shade), "linestyle": _STYLES[i % len(_STYLES)],
                      "marker": _MARKERS[i % len(_MARKERS)]}
    return out


def _x(row: dict[str, Any]) -> float:
    size = row.get("size")
    return float(size if size is not None else row.get("members") or 0)


def _panel_metrics(rows: Sequence[dict[str, Any]]) -> list[Metric]:
    return [m for m in CATALOG if any(r.get(f"{m.column}_p50") is not None for r in rows)]


def _set_x(ax: Any, xs: Sequence[float], label: str) -> None:
    xs = sorted(set(xs))
    if xs and xs[0] > 0 and xs[-1] / xs[0] > LOG_X_SPAN:
        ax.set_xscale("log")
    ax.set_xticks(xs, [f"{v:g}" for v in xs])
    ax.minorticks_off()
    ax.set_xlabel(label)


def plot_panel(rows: Sequence[dict[str, Any]], title: str, path: Path,
               styles: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """One panel per metric the aggregates have, against cluster size, one line per protocol
    (p50, band to p95); linear y from zero. Returns the metrics plotted."""
    from matplotlib.figure import Figure

    metrics = _panel_metrics(rows)
    styles = styles or protocol_styles([str(r["protocol"]) for r in rows])
    ncols = min(3, max(1, len(metrics)))
    nrows = max(1, math.ceil(len(metrics) / ncols))
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows + 0.6), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    by_protocol: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_protocol[str(r["protocol"])].append(r)
    for ax, m in zip(axes, metrics, strict=False):
        for protocol in sorted(by_protocol):
            pts = [p for p in sorted(by_protocol[protocol], key=_x)
                   if p.get(f"{m.column}_p50") is not None]
            if not pts:
                continue
            xs = [_x(p) for p in pts]
            p50 = [p[f"{m.column}_p50"] / m.scale for p in pts]
            p95 = [(p.get(f"{m.column}_p95") or p[f"{m.column}_p50"]) / m.scale for p in pts]
            st = styles.get(protocol, {})
            ax.plot(xs, p50, label=protocol, color=st.get("color"),
                    linestyle=st.get("linestyle", "-"), marker=st.get("marker", "o"))
            ax.fill_between(xs, p50, p95, alpha=0.12, color=st.get("color"))
        ax.set_title(m.label, fontsize=10)
        ax.set_ylabel(m.unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        _set_x(ax, [_x(r) for r in rows], "members")
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(5, len(labels)),
                   fontsize=8, title="median over seeds (line), to p95 (band)",
                   title_fontsize=8)
    fig.suptitle(title)
    fig.savefig(path)
    return [m.column for m in metrics]


def plot_overview(rows: Sequence[dict[str, Any]], path: Path,
                  styles: dict[str, dict[str, Any]] | None = None,
                  metric: Metric | None = None) -> bool:
    """The headline metric's p50 per scenario and protocol at each scenario's largest size
    (linear scale; bars coloured by protocol family)."""
    from matplotlib.figure import Figure

    metrics = _panel_metrics(rows)
    m = metric or (metrics[0] if metrics else None)
    if m is None:
        return False
    col = f"{m.column}_p50"
    largest: dict[str, float] = {}
    for r in rows:
        largest[r["scenario"]] = max(largest.get(r["scenario"], 0.0), _x(r))
    picked: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if _x(r) == largest[r["scenario"]] and r.get(col) is not None:
            picked[(r["scenario"], r["protocol"])].append(r[col] / m.scale)
    if not picked:
        return False
    scenarios = sorted({s for s, _ in picked}, reverse=True)  # top to bottom: a to z
    protocols = sorted({p for _, p in picked})
    styles = styles or protocol_styles(protocols)
    fig = Figure(figsize=(9, max(3.5, 0.22 * len(scenarios) * len(protocols) + 1.5)), dpi=100,
                 layout="constrained")
    ax = fig.subplots()
    height = 0.8 / max(1, len(protocols))
    for i, protocol in enumerate(protocols):
        ys = [j + ((len(protocols) - 1) / 2 - i) * height for j in range(len(scenarios))]
        xs = [statistics.fmean(picked[(s, protocol)]) if picked.get((s, protocol)) else 0.0
              for s in scenarios]
        ax.barh(ys, xs, height, label=protocol, color=styles.get(protocol, {}).get("color"))
    ax.set_yticks(range(len(scenarios)), scenarios)
    ax.set_xlabel(f"median {m.label} ({m.unit})")
    ax.set_title(f"{m.label[:1].upper()}{m.label[1:]} per scenario at its largest size")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return True


def plot_crossover(runs: Sequence[dict[str, Any]], x_col: str, m: Metric, title: str,
                   path: Path, styles: dict[str, dict[str, Any]]) -> bool:
    """A metric against a swept parameter (processing time, say) at the largest size, one line
    per protocol (median over seeds): where the lines cross, the winner changes."""
    from matplotlib.figure import Figure

    size = max((_x(r) for r in runs), default=0.0)
    pts: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if _x(r) == size and r.get(x_col) is not None and r.get(m.column) is not None:
            pts[str(r["protocol"])][float(r[x_col])].append(float(r[m.column]) / m.scale)
    if not pts:
        return False
    fig = Figure(figsize=(6.5, 4), dpi=100, layout="constrained")
    ax = fig.subplots()
    for protocol in sorted(pts):
        xs = sorted(pts[protocol])
        st = styles.get(protocol, {})
        ax.plot(xs, [statistics.median(pts[protocol][x]) for x in xs], label=protocol,
                color=st.get("color"), linestyle=st.get("linestyle", "-"),
                marker=st.get("marker", "o"))
    xs_all = sorted({x for d in pts.values() for x in d})
    if xs_all and xs_all[0] > 0 and xs_all[-1] / xs_all[0] > LOG_X_SPAN:
        ax.set_xscale("log")
    ax.set_xlabel(x_col)
    ax.set_ylabel(m.unit)
    ax.set_ylim(bottom=0)
    ax.set_title(f"{title}: {m.label}, {size:g} members", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return True


def plot_audit(epochs: Sequence[dict[str, Any]], path: Path, top: int = 10) -> bool:
    """Group epoch over time for the groups with the most rebalances."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in epochs:
        by_group[str(e["group_id"])].append(e)
    if not by_group:
        return False
    t0 = min(int(e["ts_ms"]) for e in epochs)
    groups = sorted(by_group, key=lambda g: (-len(by_group[g]), g))[:top]
    fig = Figure(figsize=(9, 4.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    for g in groups:
        pts = sorted(by_group[g], key=lambda e: (int(e["ts_ms"]), int(e["epoch"])))
        ax.step([(int(e["ts_ms"]) - t0) / 1000.0 for e in pts], [int(e["epoch"]) for e in pts],
                where="post", marker="o", label=g)
    ax.set_xlabel("time since the first rebalance (s)")
    ax.set_ylabel("group epoch / generation")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Rebalances per group (audited record log)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return True


# --------------------------------------------------------------------------- tables


def _html_table(rows: Sequence[dict[str, Any]], lead: Sequence[tuple[str, str, str]],
                cols: Sequence[tuple[str, str, str]]) -> str:
    head = "".join(f"<th>{html.escape(t)}</th>" for t, _, _ in (*lead, *cols))
    body = []
    for r in rows:
        cells = "".join(f"<td>{html.escape(_fmt(r.get(c), f))}</td>" for _, c, f in (*lead, *cols))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _md_table(rows: Sequence[dict[str, Any]], lead: Sequence[tuple[str, str, str]],
              cols: Sequence[tuple[str, str, str]]) -> str:
    allc = (*lead, *cols)
    lines = ["| " + " | ".join(t for t, _, _ in allc) + " |",
             "|" + "|".join("---" if f == "s" else "---:" for _, _, f in allc) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c), f).replace("|", "\\|")
                                       for _, c, f in allc) + " |")
    return "\n".join(lines)


_LEAD = (("protocol", "protocol", "s"), ("scenario", "scenario", "s"), ("size", "size", "s"),
         ("workload", "workload", "s"), ("fault rate", "fault_rate", "s"))

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f0f0f0; } td:nth-child(-n+5) { text-align: left; }
code { background: #f6f6f6; padding: 0.1em 0.3em; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.bad { color: #a00; }
"""


def build_report(out_dir: str | Path) -> Path:
    """Render ``DIR/report/`` from the tables in ``DIR``; returns the index.html path."""
    out = Path(out_dir)
    rdir = out / "report"
    rdir.mkdir(parents=True, exist_ok=True)
    for old in rdir.glob("*.png"):
        old.unlink()
    html_parts: list[str] = []
    md_parts: list[str] = []
    title = "groupcoord lab"

    meta_path = out / "sweep.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    aggregates = read_rows(out / "aggregates")
    if meta is not None and aggregates is not None:
        title = f"groupcoord lab: {meta.get('name')}"
        aggregates.sort(key=lambda r: (r["scenario"], r["workload"],
                                       -1.0 if r.get("fault_rate") is None else r["fault_rate"],
                                       r["protocol"], -1 if r.get("size") is None else r["size"]))
        violations = read_rows(out / "violations") or []
        runs = read_runs(out / "runs")
        found = grid_findings(meta, runs)
        html_parts.append(_sweep_html(meta, aggregates, violations, rdir, runs, found))
        md_parts.append(_sweep_md(meta, aggregates, violations, runs, found))

    audit_groups = read_rows(out / "audit" / "groups")
    if audit_groups is not None:
        epochs = read_rows(out / "audit" / "epochs") or []
        ameta_path = out / "audit" / "audit.json"
        ameta = json.loads(ameta_path.read_text()) if ameta_path.exists() else {}
        audit_groups.sort(key=lambda r: str(r["group_id"]))
        has_plot = plot_audit(epochs, rdir / "audit_epochs.png")
        html_parts.append(_audit_html(ameta, audit_groups, has_plot))
        md_parts.append(_audit_md(ameta, audit_groups))
        if meta is None:
            title = "groupcoord lab: audit"

    if not html_parts:
        html_parts.append("<p>No lab tables in this directory (run <code>groupcoord lab run"
                          "</code> or <code>groupcoord lab audit</code>).</p>")
        md_parts.append("No lab tables in this directory.")
    page = (f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
            + "\n".join(html_parts) + "\n</body></html>\n")
    index = rdir / "index.html"
    index.write_text(page)
    (rdir / "summary.md").write_text(f"# {title}\n\n" + "\n\n".join(md_parts) + "\n")
    log.info("report: %s", index)
    return index


def _panels(aggregates: Sequence[dict[str, Any]]) -> dict[tuple[str, str, float | None],
                                                          list[dict[str, Any]]]:
    panels: dict[tuple[str, str, float | None], list[dict[str, Any]]] = defaultdict(list)
    for r in aggregates:
        panels[_panel_key(r)].append(r)
    return panels


def _in_grid(r: dict[str, Any], g: dict[str, Any]) -> bool:
    return (r["protocol"] in g["protocols"] and r["scenario"] in g["scenarios"]
            and r.get("size") in g["sizes"] and r.get("workload") in g["workloads"]
            and r.get("fault_rate") in g["fault_rates"])


def grid_findings(meta: dict[str, Any],
                  runs: Sequence[dict[str, Any]]) -> list[tuple[str, list[Finding]]]:
    """Findings per question: one group per grid of the spec (its runs only), or one group
    of every run for a spec without grids."""
    spec = str(meta.get("spec") or meta.get("name") or "SPEC")
    grids = meta.get("grids") or []
    if not grids:
        return [("", findings(runs, spec))]
    out = []
    for g in grids:
        title = f"{g['name']}: {g['description']}" if g.get("description") else g["name"]
        out.append((title, findings([r for r in runs if _in_grid(r, g)], spec,
                                    metrics=g.get("metrics") or ())))
    return out


def _findings_html(groups: Sequence[tuple[str, Sequence[Finding]]],
                   runs: Sequence[dict[str, Any]]) -> str:
    parts = ["<h2>Findings</h2>", "<p>Generated from the runs (medians over the seeds that kept "
             "every invariant; protocols compared on the same seeds). Each names the command "
             "that reruns its cells.</p>"]
    for title, found in groups:
        if title:
            parts.append(f"<h3>{html.escape(title)}</h3>")
        if not found:
            parts.append("<p>No metric differs between protocols in these runs.</p>")
            continue
        parts.append("<ol>")
        for f in found:
            parts.append(f"<li>{html.escape(f.text)}<br><code>{html.escape(f.command)}"
                         f"</code></li>")
        parts.append("</ol>")
    parts.append("<h2>What the model leaves out</h2><ul>")
    parts += [f"<li>{html.escape(t)}</li>" for t in model_limits(runs)]
    parts.append("</ul>")
    return "\n".join(parts)


def _sweep_html(meta: dict[str, Any], aggregates: list[dict[str, Any]],
                violations: list[dict[str, Any]], rdir: Path,
                runs: Sequence[dict[str, Any]] = (),
                found: Sequence[tuple[str, Sequence[Finding]]] = ()) -> str:
    parts = [f"<p>{html.escape(str(meta.get('description') or ''))}</p>",
             "<p>spec <code>{}</code>: {} runs in {} cells; protocols {}; Spark {} on "
             "<code>{}</code>; simulations took {:.1f} s.</p>".format(
                 html.escape(str(meta.get("spec"))), meta.get("runs"), meta.get("cells"),
                 html.escape(", ".join(meta.get("protocols", []))),
                 html.escape(str(meta.get("spark"))), html.escape(str(meta.get("master"))),
                 float(meta.get("sim_s") or 0.0))]
    parts.append(_findings_html(found, runs))
    n_bad = len(violations)
    parts.append(f"<h2>Invariant violations: <span class='{'bad' if n_bad else ''}'>{n_bad}"
                 f"</span></h2>")
    if violations:
        parts.append("<table><thead><tr><th>protocol</th><th>scenario</th><th>size</th>"
                     "<th>seed</th><th>invariant</th><th>message</th><th>reproduce with</th>"
                     "</tr></thead><tbody>")
        shown = sorted(violations, key=lambda v: (v["protocol"], v["scenario"], v["run_id"]))
        for v in shown[:MAX_VIOLATIONS_SHOWN]:
            parts.append("<tr>" + "".join(f"<td>{html.escape(_fmt(v.get(c), 's'))}</td>" for c in
                                          ("protocol", "scenario", "size", "seed", "invariant",
                                           "message"))
                         + f"<td><code>{html.escape(str(v['command']))}</code></td></tr>")
        parts.append("</tbody></table>")
        if n_bad > MAX_VIOLATIONS_SHOWN:
            parts.append(f"<p>... and {n_bad - MAX_VIOLATIONS_SHOWN} more in "
                         f"<code>violations/</code>.</p>")
    panels = _panels(aggregates)
    multi_wl = len({k[1] for k in panels}) > 1
    multi_fr = len({k[2] for k in panels}) > 1
    styles = protocol_styles([str(r["protocol"]) for r in aggregates])
    parts.append("<h2>Protocols compared</h2><p>One chart per metric, against the cluster "
                 "size: the line is the median over seeds, the band reaches the 95th "
                 "percentile. Colours are protocol families (classic blue, KIP-848 consumer "
                 "orange, connect green, classic Connect purple); a family's variants are "
                 "shades and line styles.</p>")
    if plot_overview(aggregates, rdir / "overview.png", styles):
        parts.append("<img src='overview.png' alt='headline metric per scenario'>")
    for key in sorted(panels, key=lambda k: (k[0], k[1], -1.0 if k[2] is None else k[2])):
        title = _panel_title(key, multi_wl, multi_fr)
        name = f"{_slug(*key)}.png"
        plot_panel(panels[key], title, rdir / name, styles)
        parts.append(f"<h3>{html.escape(title)}</h3><img src='{html.escape(name)}' "
                     f"alt='{html.escape(title)}'>")
    crossed = _crossover_charts(runs, rdir, styles)
    if crossed:
        parts.append("<h2>Crossover curves</h2><p>The headline metric against the swept "
                     "parameter at the largest size (median over seeds): where lines cross, "
                     "the protocol that costs least changes.</p>")
        parts += [f"<h3>{html.escape(t)}</h3><img src='{html.escape(n)}' alt='{html.escape(t)}'>"
                  for t, n in crossed]
    parts.append("<h2>Summary</h2><p>Percentiles over the runs that kept every invariant; "
                 "downtime in resource-milliseconds.</p>")
    parts.append(_html_table(aggregates, _LEAD, SUMMARY_COLUMNS))
    units = ", ".join(f"{m} ({u})" for m, u in METRICS)
    parts.append(f"<p>Every metric ({html.escape(units)}, and the work model's when present) "
                 f"with p50/p95/p99 and mean is in <code>aggregates/</code>; the runs in "
                 f"<code>runs/</code>.</p>")
    return "\n".join(parts)


def _crossover_charts(runs: Sequence[dict[str, Any]], rdir: Path,
                      styles: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """A crossover chart per (scenario, fault rate) whose runs sweep a parameter."""
    groups: dict[tuple[str, float | None], list[dict[str, Any]]] = defaultdict(list)
    for r in with_work_parameters(runs):
        if r.get("ok"):
            groups[(str(r["scenario"]), r.get("fault_rate"))].append(r)
    out = []
    for (scenario, rate), rows in sorted(groups.items(), key=lambda kv: (kv[0][0],
                                                                         kv[0][1] or 0.0)):
        x_col = sweep_parameter(rows)
        if x_col is None:
            continue
        with_x = [r for r in rows if r.get(x_col) is not None]
        title = scenario if not rate else f"{scenario}, faults {rate:g}"
        for m in chosen_metrics(with_x):
            name = f"crossover__{_slug(scenario, rate, m.column)}.png"
            if plot_crossover(with_x, x_col, m, title, rdir / name, styles):
                out.append((f"{title}: {m.label}", name))
    return out


def _sweep_md(meta: dict[str, Any], aggregates: list[dict[str, Any]],
              violations: list[dict[str, Any]], runs: Sequence[dict[str, Any]] = (),
              found: Sequence[tuple[str, Sequence[Finding]]] = ()) -> str:
    lines = [f"Spec `{meta.get('spec')}`: {meta.get('runs')} runs in {meta.get('cells')} "
             f"cells; protocols {', '.join(meta.get('protocols', []))}.", "", "## Findings", ""]
    for title, group in found:
        if title:
            lines += [f"### {title}", ""]
        if not group:
            lines.append("No metric differs between protocols in these runs.")
        for i, f in enumerate(group, 1):
            lines.append(f"{i}. {f.text}  \n   `{f.command}`")
        lines.append("")
    lines += ["", "## What the model leaves out", ""]
    lines += [f"- {t}" for t in model_limits(runs)]
    lines += ["", f"## Invariant violations: {len(violations)}", ""]
    if not violations:
        lines.append("None: every run kept every invariant.")
    shown = sorted(violations, key=lambda v: (v["protocol"], v["scenario"], v["run_id"]))
    for v in shown[:MAX_VIOLATIONS_SHOWN]:
        lines.append(f"- {v['protocol']} {v['scenario']} size {_fmt(v.get('size'), 's')} seed "
                     f"{v['seed']}: **{v['invariant']}** {v['message']}  \n"
                     f"  reproduce with: `{v['command']}`")
    if len(violations) > MAX_VIOLATIONS_SHOWN:
        lines.append(f"- ... and {len(violations) - MAX_VIOLATIONS_SHOWN} more in `violations/`")
    lines += ["", "## Summary", "",
              "Percentiles over the runs that kept every invariant; downtime in "
              "resource-milliseconds.", "", _md_table(aggregates, _LEAD, SUMMARY_COLUMNS)]
    return "\n".join(lines)


def _audit_html(meta: dict[str, Any], groups: list[dict[str, Any]], has_plot: bool) -> str:
    parts = ["<h2>Audit of a coordinator's record log</h2>",
             f"<p>log <code>{html.escape(str(meta.get('log', '?')))}</code>: "
             f"{meta.get('entries', '?')} entries, {len(groups)} groups.</p>"]
    if meta.get("compacted_shards"):
        parts.append(f"<p class='bad'>Shards {meta['compacted_shards']} were compacted: "
                     f"their history is partial.</p>")
    if has_plot:
        parts.append("<img src='audit_epochs.png' alt='group epochs over time'>")
    parts.append(_html_table(groups, (), AUDIT_COLUMNS))
    return "\n".join(parts)


def _audit_md(meta: dict[str, Any], groups: list[dict[str, Any]]) -> str:
    lines = ["## Audit of a coordinator's record log", "",
             f"Log `{meta.get('log', '?')}`: {meta.get('entries', '?')} entries, "
             f"{len(groups)} groups."]
    if meta.get("compacted_shards"):
        lines.append(f"Shards {meta['compacted_shards']} were compacted: history is partial.")
    lines += ["", _md_table(groups, (), AUDIT_COLUMNS)]
    return "\n".join(lines)
