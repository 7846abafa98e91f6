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

_MARKERS = ("o", "s", "^", "D", "v", "P")
_STYLES = ("-", "--", "-.", ":")


def _x(row: dict[str, Any]) -> float:
    size = row.get("size")
    return float(size if size is not None else row.get("members") or 0)


def plot_panel(rows: Sequence[dict[str, Any]], title: str, path: Path) -> None:
    """Downtime and convergence against cluster size, one line per protocol (p50 line,
    band to p95)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    axes = fig.subplots(1, 2)
    by_protocol: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_protocol[str(r["protocol"])].append(r)
    metrics = (("resource_downtime_ms", "Resource downtime", "resource·s without an owner"),
               ("convergence_ms", "Time to converge", "seconds after the disturbance"))
    for ax, (metric, heading, ylabel) in zip(axes, metrics, strict=True):
        for i, protocol in enumerate(sorted(by_protocol)):
            pts = sorted(by_protocol[protocol], key=_x)
            pts = [p for p in pts if p.get(f"{metric}_p50") is not None]
            if not pts:
                continue
            xs = [_x(p) for p in pts]
            p50 = [p[f"{metric}_p50"] / 1000.0 for p in pts]
            p95 = [p[f"{metric}_p95"] / 1000.0 for p in pts]
            (line,) = ax.plot(xs, p50, marker=_MARKERS[i % len(_MARKERS)],
                              linestyle=_STYLES[i % len(_STYLES)], label=protocol,
                              markerfacecolor="none" if i % 2 else None)
            ax.fill_between(xs, p50, p95, alpha=0.15, color=line.get_color())
        ax.set_xlabel("cluster size (members)")
        ax.set_ylabel(ylabel)
        ax.set_title(heading)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        sizes = sorted({_x(r) for r in rows})
        if sizes and all(s > 0 for s in sizes) and sizes[-1] / sizes[0] >= 4:
            ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, title="line p50, band to p95", title_fontsize=8)
    fig.suptitle(title)
    fig.savefig(path)


def plot_overview(rows: Sequence[dict[str, Any]], path: Path) -> bool:
    """p50 resource downtime per scenario and protocol at each scenario's largest size."""
    from matplotlib.figure import Figure

    largest: dict[str, float] = {}
    for r in rows:
        largest[r["scenario"]] = max(largest.get(r["scenario"], 0.0), _x(r))
    picked: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if _x(r) == largest[r["scenario"]] and r.get("resource_downtime_ms_p50") is not None:
            picked[(r["scenario"], r["protocol"])].append(r["resource_downtime_ms_p50"] / 1000.0)
    if not picked:
        return False
    scenarios = sorted({s for s, _ in picked}, reverse=True)  # top to bottom: a to z
    protocols = sorted({p for _, p in picked})
    fig = Figure(figsize=(9, max(3.5, 0.28 * len(scenarios) * len(protocols) + 1.5)), dpi=100,
                 layout="constrained")
    ax = fig.subplots()
    height = 0.8 / max(1, len(protocols))
    values: list[float] = []
    for i, protocol in enumerate(protocols):
        ys = [j + ((len(protocols) - 1) / 2 - i) * height for j in range(len(scenarios))]
        xs = [statistics.fmean(picked[(s, protocol)]) if picked.get((s, protocol)) else 0.0
              for s in scenarios]
        values += xs
        ax.barh(ys, xs, height, label=protocol)
    ax.set_yticks(range(len(scenarios)), scenarios)
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_xscale("symlog", linthresh=min(positive))
    ax.set_xlabel("p50 resource downtime (resource·s)")
    ax.set_title("Downtime per scenario at its largest cluster size (mean over its cells there)")
    ax.grid(True, axis="x", alpha=0.3)
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
        html_parts.append(_sweep_html(meta, aggregates, violations, rdir))
        md_parts.append(_sweep_md(meta, aggregates, violations))

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


def _sweep_html(meta: dict[str, Any], aggregates: list[dict[str, Any]],
                violations: list[dict[str, Any]], rdir: Path) -> str:
    parts = [f"<p>{html.escape(str(meta.get('description') or ''))}</p>",
             "<p>spec <code>{}</code>: {} runs in {} cells; protocols {}; Spark {} on "
             "<code>{}</code>; simulations took {:.1f} s.</p>".format(
                 html.escape(str(meta.get("spec"))), meta.get("runs"), meta.get("cells"),
                 html.escape(", ".join(meta.get("protocols", []))),
                 html.escape(str(meta.get("spark"))), html.escape(str(meta.get("master"))),
                 float(meta.get("sim_s") or 0.0))]
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
    parts.append("<h2>Protocols compared</h2><p>Per scenario: resource downtime (the time "
                 "partitions or tasks had no active owner, summed over resources) and the time "
                 "to converge after the disturbance, against the cluster size; the line is the "
                 "median over seeds, the band reaches the 95th percentile.</p>")
    if plot_overview(aggregates, rdir / "overview.png"):
        parts.append("<img src='overview.png' alt='downtime per scenario'>")
    for key in sorted(panels, key=lambda k: (k[0], k[1], -1.0 if k[2] is None else k[2])):
        title = _panel_title(key, multi_wl, multi_fr)
        name = f"{_slug(*key)}.png"
        plot_panel(panels[key], title, rdir / name)
        parts.append(f"<h3>{html.escape(title)}</h3><img src='{html.escape(name)}' "
                     f"alt='{html.escape(title)}'>")
    parts.append("<h2>Summary</h2><p>Percentiles over the runs that kept every invariant; "
                 "downtime in resource-milliseconds.</p>")
    parts.append(_html_table(aggregates, _LEAD, SUMMARY_COLUMNS))
    units = ", ".join(f"{m} ({u})" for m, u in METRICS)
    parts.append(f"<p>Every metric ({html.escape(units)}) with p50/p95/p99 and mean is in "
                 f"<code>aggregates/</code>; the runs in <code>runs/</code>.</p>")
    return "\n".join(parts)


def _sweep_md(meta: dict[str, Any], aggregates: list[dict[str, Any]],
              violations: list[dict[str, Any]]) -> str:
    lines = [f"Spec `{meta.get('spec')}`: {meta.get('runs')} runs in {meta.get('cells')} "
             f"cells; protocols {', '.join(meta.get('protocols', []))}.", "",
             f"## Invariant violations: {len(violations)}", ""]
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
