"""The share comparison's own report parts (docs/lab.md, "Share groups against consumer
groups"): what the verdict tables of share groups (KIP-932) against consumer groups (KIP-848)
do not show by themselves.

- **The platform team's comparison** (:func:`platform_rows`): the same members on the share
  group's topic and on the consumer group's. A team with 12 consumers and a 4-partition topic
  either runs a share group on it (three members fetch each partition) or repartitions to 12
  so that a consumer group uses every member. The share grid has the first (``1x4-busy`` at 12
  members), the equal-capacity grid the second (``1x12-busy`` at 12): the same total
  production and processing, different cells, so different seeds: the comparison is drawn
  across the two grids, medians and ranges side by side, not paired seed by seed and not
  marked.
- **Messages** (:func:`message_rows`): what each protocol sent in the disturbance windows
  (the runs' ``messages``). A share group's count is its heartbeats and its ShareFetch
  requests and answers, which carry its acknowledgements (KIP-932: acknowledgements ride on
  the next ShareFetch); a consumer group's is its heartbeats and offset commits only: its
  fetches are a latency outside the simulated network, not messages. The two counts say
  what each protocol adds to the coordinator and the share-partition leader, not the
  network's load.
- **Calibration beside a share sentence** (:func:`share_calibration_note`): the share
  calibration's row of the sentence's scenario and group size (``lab calibrate --share``;
  ``lab/data/share_calibration.json`` as its ``--json`` prints it, or a ``share:simple`` row of
  ``lab/data/calibration.json``) where one covers it, else "uncalibrated (share:simple)"; a
  consumer protocol's calibration only at the sentence's own scenario and size, never another
  scenario's row: the share calibration's consumer row of the cell (``lab calibrate --share
  --protocol consumer:uniform``) first; and which sides of the sentence have a wire row.

- **Head-of-line blocking** (:func:`head_of_line_rows`): what poison records cost by
  themselves, from the controls: the control's mean lag over the disturbance windows on the
  clean workload and on the same with poison records, per cell and protocol.

- **A lost host against a process kill** (:func:`kill_rows`, :data:`KILL_TEXT`): owner-crash
  (nothing closes: a share member's records wait for their lock) beside owner-kill (the
  connection closes: the partition leader releases them at once), per cell and protocol; and
  which member each crash or kill cell lost (:func:`crash_owner_rows`).
- **The consumer group's poison back-off at 0** (:func:`backoff_rows`): 1x4-poison-b0 beside
  1x4-poison's 1 s back-off and the share group, on the same seeds.
- **The broker's share lag in each share lag-peak cell** (:func:`broker_lag_note`, the
  verdict tables' ``cell_note``), besides its own table (:func:`share_lag_rows`).

``python -m groupcoord.lab.share_report DIR`` prints these tables for a rendered share spec.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groupcoord.lab.findings import family, number
from groupcoord.lab.share_marks import all_seeds_note, load_share_calibration
from groupcoord.sim.share import UNPROCESSED

#: The platform comparison's cells: (size, the share group's workload, the consumer group's).
PLATFORM = (12, "1x4-busy", "1x12-busy")
SHARE, CONSUMER = "share:simple", "consumer:uniform"
SCENARIOS = ("crowd-crash", "bounce", "rolling-bounce")
#: The messages row's label: the two counts are not of the same messages (the share group's
#: include its ShareFetch requests and answers, the consumer group's no fetches at all), so
#: the row says so rather than reading as a like-for-like comparison.
MESSAGES_LABEL = ("messages in the windows (not comparable: share counts heartbeats and "
                  "ShareFetch; consumer counts heartbeats and commits, no fetches)")
#: (column, label, divisor): the metrics of the platform table.
PLATFORM_METRICS: tuple[tuple[str, str, float], ...] = (
    ("lag_record_s", "excess lag (record·s)", 1.0),
    ("lag_peak", "excess lag peak (records)", 1.0),
    ("resource_downtime_ms", "resource downtime (partition·s)", 1000.0),
    ("resources_moved", "partitions moved", 1.0),
    ("records_reprocessed", "records processed twice", 1.0),
    ("messages", MESSAGES_LABEL, 1.0),
)


def _span(values: Sequence[float], div: float) -> str:
    if not values:
        return "-"
    vs = sorted(v / div for v in values)
    med = number(statistics.median(vs))
    return med if vs[0] == vs[-1] else f"{med} ({number(vs[0])}\u2013{number(vs[-1])})"


def _values(runs: Sequence[Mapping[str, Any]], protocol: str, scenario: str, size: int,
            workload: str, column: str) -> list[float]:
    return [float(r[column]) for r in runs
            if r.get("protocol") == protocol and r.get("scenario") == scenario
            and int(r.get("size") or 0) == size and r.get("workload") == workload
            and r.get("ok") and r.get(column) is not None]


def platform_rows(runs: Sequence[Mapping[str, Any]],
                  platform: tuple[int, str, str] = PLATFORM) -> list[list[str]]:
    """Per scenario and metric: the share group on the share workload against the consumer
    group on the consumer workload, the same members (median and range over each cell's
    seeds; each cell's own seeds: the two are not paired)."""
    size, share_wl, consumer_wl = platform
    out = []
    for scenario in SCENARIOS:
        for column, label, div in PLATFORM_METRICS:
            s = _values(runs, SHARE, scenario, size, share_wl, column)
            c = _values(runs, CONSUMER, scenario, size, consumer_wl, column)
            if s and c:
                out.append([scenario, label, _span(s, div), _span(c, div),
                            f"{len(s)} / {len(c)}"])
    return out


def _md_table(intro: str, head: str, align: str, rows: Sequence[Sequence[str]]) -> str:
    """A paragraph, then a Markdown table: the ``head`` row, the ``align`` separator, ``rows``."""
    return "\n".join([intro, "", head, align, *("| " + " | ".join(r) + " |" for r in rows)])


def platform_md(runs: Sequence[Mapping[str, Any]],
                platform: tuple[int, str, str] = PLATFORM) -> str:
    """:func:`platform_rows` as a Markdown table with its heading; "" without those cells."""
    rows = platform_rows(runs, platform)
    if not rows:
        return ""
    size, share_wl, consumer_wl = platform
    head = (f"The same {size} members: {SHARE} on {share_wl} against {CONSUMER} on "
            f"{consumer_wl} (the same production and processing; different cells, so "
            "different seeds: medians and ranges side by side, not paired, not marked).")
    return _md_table(head, f"| scenario | metric | {SHARE} ({share_wl}) | {CONSUMER} "
                     f"({consumer_wl}) | seeds |", "|---|---|---:|---:|---|", rows)


def message_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per cell (scenario, size, workload): each protocol's messages in the disturbance
    windows, median and range over its runs."""
    cells: dict[tuple[str, int, str], dict[str, list[float]]] = {}
    for r in runs:
        if not r.get("ok") or r.get("messages") is None:
            continue
        key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("workload")))
        cells.setdefault(key, {}).setdefault(str(r.get("protocol")), []).append(
            float(r["messages"]))
    protocols = sorted({p for v in cells.values() for p in v},
                       key=lambda p: (family(p) != "share", p))
    out = []
    for (scenario, size, workload) in sorted(cells, key=lambda k: (SCENARIOS.index(k[0])
                                                                  if k[0] in SCENARIOS else 99,
                                                                  k[1], k[2])):
        got = cells[(scenario, size, workload)]
        out.append([scenario, str(size), workload]
                   + [_span(got.get(p, []), 1.0) for p in protocols])
    return [["scenario", "size", "workload", *protocols], *out] if out else []


def messages_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = message_rows(runs)
    if not rows:
        return ""
    head, *body = rows
    return _md_table("Messages sent in the disturbance windows (median and range over the "
                     "runs): a share group's heartbeats and ShareFetch requests and answers (its "
                     "acknowledgements ride on its next ShareFetch); a consumer group's "
                     "heartbeats and offset commits (its fetches are a latency outside the "
                     "simulated network, not counted).", "| " + " | ".join(head) + " |",
                     "|---|---|---|" + "---:|" * (len(head) - 3), body)


def attach_window_seconds(runs: Sequence[dict[str, Any]], path: Path) -> None:
    """Each run's disturbance windows' length in seconds (``window_s``: the initial join left
    out, each window to its end or to where the next began), from the ``disturbances`` table at
    ``path``; runs without windows there get none."""
    rows = _read(path, ("run_id", "disturbance", "at_ms", "closed_ms", "cut_ms"))
    total: dict[str, float] = {}
    for w in rows:
        if w.get("disturbance") == "initial-join" or w.get("at_ms") is None:
            continue
        end = w.get("cut_ms") if w.get("cut_ms") is not None else w.get("closed_ms")
        if end is None:
            continue
        key = str(w.get("run_id"))
        total[key] = total.get(key, 0.0) + max(0.0, float(end) - float(w["at_ms"])) / 1000.0
    for r in runs:
        got = total.get(str(r.get("run_id")))
        if got:
            r["window_s"] = got
    attach_share_lag(runs, path.parent / "runs")


def attach_share_lag(runs: Sequence[dict[str, Any]], path: Path) -> None:
    """Each share run's broker share lag peak (``share_lag_peak``: the highest of its
    disturbance windows' end offset - share-partition start offset, ``sim.share``'s
    ``share_lag_peaks``), read from the ``summary_json`` of the runs table at ``path``."""
    wanted = {str(r.get("run_id")) for r in runs if family(str(r.get("protocol"))) == "share"}
    if not wanted:
        return
    peaks: dict[str, int] = {}
    unprocessed: dict[str, int] = {}
    for row in _read(path, ("run_id", "summary_json")):
        key = str(row.get("run_id"))
        if key not in wanted:
            continue
        try:
            summary = json.loads(str(row.get("summary_json") or "{}"))
        except ValueError:
            continue
        vals = [int(w["peak"]) for w in summary.get("share_lag_peaks") or []
                if isinstance(w, dict) and w.get("disturbance") != "initial-join"]
        if vals:
            peaks[key] = max(vals)
        work = summary.get("work") or {}
        if isinstance(work, dict) and work.get(UNPROCESSED) is not None:
            unprocessed[key] = int(work[UNPROCESSED])
    for r in runs:
        if (got := peaks.get(str(r.get("run_id")))) is not None:
            r["share_lag_peak"] = got
        if (n := unprocessed.get(str(r.get("run_id")))) is not None:
            r[UNPROCESSED] = n


def _is_member_loss(scenario: str) -> bool:
    """A crash or a kill scenario (``crowd-crash``, ``owner-crash``, ``owner-kill``)."""
    return "crash" in scenario or "kill" in scenario


def crash_owner_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per crash or kill cell (scenario, size, workload) and protocol: on how many seeds the
    lost member owned a partition, read from the runs as a window that moved a partition
    (``resources_moved`` > 0: its partitions went to another member). ``crowd-crash`` crashes
    c1, any member: a consumer group with more members than partitions loses an idle member
    on most seeds, so its row's lag and downtime are an idle member's loss there;
    ``owner-crash`` and ``owner-kill`` target a member holding a partition (``@owner``)."""
    cells: dict[tuple[str, int, str, str], list[int]] = {}
    for r in runs:
        if not _is_member_loss(str(r.get("scenario"))) or not r.get("ok") \
                or r.get("resources_moved") is None:
            continue
        key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("workload")),
               str(r.get("protocol")))
        got = cells.setdefault(key, [0, 0])
        got[0] += float(r["resources_moved"]) > 0
        got[1] += 1
    return [[sc, str(size), wl, p, f"{k} of {n}"]
            for (sc, size, wl, p), (k, n) in sorted(cells.items())]


def crash_owner_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = crash_owner_rows(runs)
    if not rows:
        return ""
    return _md_table("The crash and kill cells' target: crowd-crash crashes c1 on every seed (any "
                     "member), owner-crash and owner-kill a member that holds a partition at the "
                     "event, drawn per seed among the owners (the same draw for both group types). "
                     "On how many seeds the lost member owned a partition, read as a loss that moved "
                     "one. Where a consumer group has idle members crowd-crash often hits one, and its "
                     "row compares an idle member's crash with a share member's; the crash sentences "
                     "carry the count.",
                     "| scenario | size | workload | protocol | seeds the lost member owned a "
                     "partition |",
                     "|---|---:|---|---|---:|", rows)


#: What a kill and a lost host are, for the page (docs/lab.md, "Share groups against consumer
#: groups"; ``sim.scenario``'s ``crash`` and ``kill``, ``sim.share.ShareSimulation.kill``).
KILL_TEXT = (
    "A member can be lost two ways. A *lost host* (owner-crash, crowd-crash: a machine or VM "
    "that dies or drops off the network, a process hung in a long GC pause or a deadlock) "
    "closes nothing: the broker learns nothing until the member's session times out (45 s), "
    "and a share member's acquired records keep their locks (30 s) and hold the "
    "share-partition start offset back meanwhile. A *process kill* (owner-kill: an OOM kill, "
    "SIGKILL, a container or pod stopped without a graceful close, a crash of the process "
    "itself) leaves its host up, and the host's kernel closes the process's connections: the "
    "partition leader ends the member's share session with its connection and releases its "
    "acquired records at once (Kafka 4.1+: ShareSessionCache's connection-disconnect "
    "listener, SharePartitionManager.releaseSession; groupcoord's server does the same). "
    "Neither tells the group coordinator: in both group types the member stays assigned "
    "until its session timeout, and a consumer group's kill is its crash (its membership and "
    "positions are not tied to a connection). An OOM kill, a SIGKILL, a container killed "
    "after its termination grace period (a hung process that an orchestrator restarts is a "
    "lost host until it is killed) or a crash of the process itself is a process kill; a "
    "node or VM failure, a network partition or a process that hangs is a lost host.")


def kill_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per (size, workload) with both owner-crash and owner-kill runs, and per protocol: the
    lost host's and the killed process's excess lag, excess lag peak and partitions stopped,
    and for a share group the broker's share lag peak (raw), medians and ranges over each
    cell's runs (different seeds: the two scenarios are two cells)."""
    cells: dict[tuple[int, str, str, str], list[Mapping[str, Any]]] = {}
    for r in runs:
        sc = str(r.get("scenario"))
        if sc not in ("owner-crash", "owner-kill") or not r.get("ok"):
            continue
        cells.setdefault((int(r.get("size") or 0), str(r.get("workload")),
                          str(r.get("protocol")), sc), []).append(r)

    def span(rs: Sequence[Mapping[str, Any]], column: str, div: float = 1.0) -> str:
        vals = [float(r[column]) for r in rs if r.get(column) is not None]
        return _span(vals, div) if vals else "-"

    out = []
    for size, wl, p in sorted({k[:3] for k in cells}):
        crash, kill = cells.get((size, wl, p, "owner-crash")), cells.get((size, wl, p, "owner-kill"))
        if not crash or not kill:
            continue
        row = [str(size), wl, p]
        for column, div in (("lag_record_s", 1.0), ("lag_peak", 1.0),
                            ("resource_downtime_ms", 1000.0), ("share_lag_peak", 1.0)):
            row.append(f"{span(crash, column, div)} / {span(kill, column, div)}")
        out.append(row)
    return out


def kill_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = kill_rows(runs)
    if not rows:
        return ""
    return "\n".join([KILL_TEXT, "", _md_table(
        "A partition owner lost, as a lost host / as a process kill (owner-crash / owner-kill, "
        "median (range) over each cell's runs; the two are different cells, so different seeds: "
        "side by side, not paired). Excess over the control but the broker's share lag peak (raw; "
        "share groups only).",
        "| size | workload | protocol | excess lag (record·s) | excess lag peak (records) | "
        "resource downtime (partition·s) | broker's share lag peak (records) |",
        "|---:|---|---|---:|---:|---:|---:|", rows)])


#: The consumer group's poison workload with its back-off at 0 and its 1 s twin, for
#: :func:`backoff_rows` (``share.toml``'s poison-backoff0 grids).
BACKOFF_WORKLOADS = ("1x4-poison", "1x4-poison-b0")


def backoff_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per (scenario, size, metric) where the consumer group ran ``1x4-poison-b0``: the share
    group on ``1x4-poison``, the consumer group on it (1 s back-off) and on ``1x4-poison-b0``
    (0), medians and ranges over the seeds the back-off-0 cell ran (the same seeds in all
    three columns: paired), excess over the control; and the controls' mean lag over the
    windows (the head-of-line cost by itself, :func:`head_of_line_rows`'s measure)."""
    one, zero = BACKOFF_WORKLOADS
    by: dict[tuple[str, int, str, str], dict[int, Mapping[str, Any]]] = {}
    for r in runs:
        if r.get("workload") in BACKOFF_WORKLOADS and r.get("ok"):
            key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("protocol")),
                   str(r.get("workload")))
            by.setdefault(key, {})[int(r.get("seed") or 0)] = r

    def mean_lag(r: Mapping[str, Any]) -> float | None:
        lag, secs = r.get("control_lag_record_s"), r.get("window_s")
        return float(lag) / float(secs) if lag is not None and secs else None

    metrics: tuple[tuple[str, str, float], ...] = (
        ("lag_record_s", "excess lag (record·s)", 1.0),
        ("lag_peak", "excess lag peak (records)", 1.0),
        ("resource_downtime_ms", "resource downtime (partition·s)", 1000.0),
        ("control mean lag", "control's mean lag over the windows (records)", 1.0))
    out = []
    for scenario, size, _, _ in sorted(
            {k for k in by if k[2] == CONSUMER and k[3] == zero},
            key=lambda k: (SCENARIOS.index(k[0]) if k[0] in SCENARIOS else 99, k[1])):
        seeds = set(by[(scenario, size, CONSUMER, zero)])
        cols = [by.get((scenario, size, SHARE, one), {}), by.get((scenario, size, CONSUMER, one), {}),
                by[(scenario, size, CONSUMER, zero)]]
        for column, label, div in metrics:
            row = [scenario, str(size), label]
            for c in cols:
                rs = [c[s] for s in sorted(seeds) if s in c]
                vals = [v for v in ((mean_lag(r) if column == "control mean lag"
                                     else (float(r[column]) if r.get(column) is not None
                                           else None)) for r in rs) if v is not None]
                row.append(_span(vals, div) if vals else "-")
            out.append(row)
    return out


def backoff_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = backoff_rows(runs)
    if not rows:
        return ""
    return _md_table("How much of the head-of-line gap is the consumer group's back-off: the consumer "
                     "group on the poison workload with its back-off at 0 (1x4-poison-b0, the back-off "
                     "of Spring Kafka's DefaultErrorHandler default, FixedBackOff(0, 9); the same 5 "
                     "attempts of 2 s, a poison record holds its partition 10 s instead of 14 s) beside "
                     "the 1 s one and the share group (no back-off: a RELEASE makes the record "
                     "available at once), on the same seeds, median (range). What neither back-off "
                     "changes: a consumer group keeps each partition's order and waits behind the "
                     "poison record; a share group gives that order up.",
                     f"| scenario | size | metric | {SHARE}, 1x4-poison | {CONSUMER}, 1x4-poison "
                     f"(back-off 1 s) | {CONSUMER}, 1x4-poison-b0 (back-off 0) |",
                     "|---|---:|---|---:|---:|---:|", rows)


def runnable_spec(spec: str) -> str:
    """A spec as a reader can run it: a path ending in one of the package's own spec files
    (``lab/data/*.toml``, from whichever checkout rendered it, as ``sweep.json`` records it)
    becomes that file's path in the repository (``src/groupcoord/lab/data/share.toml``); a
    built-in name or any other path stays as it is."""
    data = Path(__file__).parent / "data"
    name = Path(spec).name
    tail = Path(spec).parts[-4:-1]
    if tail == ("groupcoord", "lab", "data") and (data / name).is_file():
        return f"src/groupcoord/lab/data/{name}"
    return spec


def broker_lag_note(runs: Sequence[Mapping[str, Any]]) -> Any:
    """A note for the verdict tables' share lag-peak cells (``lab.report``'s ``cell_note``):
    the broker's share lag peak (the log end offset minus the share-partition start offset,
    raw: not over the control; ``share_lag_peak``, :func:`attach_share_lag`) over the same
    seeds as the cell, median (range), beside the processed-based excess peak the table
    marks. "" for any other cell (a consumer group has no share lag; the broker's lag is kept
    as a peak only)."""
    peaks: dict[tuple[str, str, int, str, int], float] = {}
    for r in runs:
        if r.get("share_lag_peak") is not None and family(str(r.get("protocol"))) == "share":
            peaks[(str(r.get("protocol")), str(r.get("scenario")), int(r.get("size") or 0),
                   str(r.get("workload")), int(r.get("seed") or 0))] = float(r["share_lag_peak"])

    def note(column: str, protocol: str, row: Any, seeds: Sequence[int]) -> str:
        every = all_seeds_note(column, protocol, row, seeds)
        if column != "lag_peak" or family(protocol) != "share":
            return every
        vals = [v for s in seeds if (v := peaks.get((protocol, str(row.scenario), int(row.size or 0),
                                                     str(row.workload), int(s)))) is not None]
        broker = f"broker's share lag peak (raw) {_span(vals, 1.0)}" if vals else ""
        return "; ".join(x for x in (every, broker) if x)

    return note


#: The verdict tables' column of the broker's share lag (``lab.report``'s ``extra_column``).
BROKER_LAG_HEAD = "broker's share lag peak (raw, records)"
#: What that column is, for "How to read the tables" (``lab.report.method_text``).
BROKER_LAG_DEFINITION = (
    "On a share grid the column " + f"'{BROKER_LAG_HEAD}'" + " is what an operator's "
    "dashboard shows for the same cell: the broker's share-group lag, the log end offset minus "
    "the share-partition start offset (SPSO), its highest value in the disturbance windows, "
    "raw (not over the control; records in flight and those acknowledged above the start "
    "offset count in it), median (range) over the share protocol's seeds of the lag-peak row; "
    "the excess lag peak beside it counts records produced and not yet processed, over the "
    "control. A consumer group has none.")


def broker_lag_column(runs: Sequence[Mapping[str, Any]]) -> Any:
    """The verdict tables' column of the broker's share lag (the eleventh outside share review:
    an operator's dashboard shows 1,812 where the excess lag peak is 2, and the page had it
    only in brackets): ``column(g)`` is None for a grid without a share protocol, else the
    column's head and ``cell(row, mv)``: on the lag-peak row each share protocol's broker share
    lag peak (``share_lag_peak``, :func:`attach_share_lag`) over that cell's seeds, median
    (range); "" on the other rows and where the runs do not carry it."""
    peaks: dict[tuple[str, str, int, str, int], float] = {}
    for r in runs:
        if r.get("share_lag_peak") is not None and family(str(r.get("protocol"))) == "share":
            peaks[(str(r.get("protocol")), str(r.get("scenario")), int(r.get("size") or 0),
                   str(r.get("workload")), int(r.get("seed") or 0))] = float(r["share_lag_peak"])

    def column(g: Any) -> tuple[str, Any] | None:
        share = [p for p in g.protocols if family(p) == "share"]
        if not share:
            return None

        def cell(row: Any, mv: Any) -> str:
            if mv.metric.column != "lag_peak":
                return ""
            out = []
            for p in share:
                c = mv.cells.get(p)
                vals = [v for s in (c.values if c is not None else ()) if (v := peaks.get(
                    (p, str(row.scenario), int(row.size or 0), str(row.workload), int(s))))
                    is not None]
                if vals:
                    out.append((f"{p}: " if len(share) > 1 else "") + _span(vals, 1.0))
            return "; ".join(out)

        return BROKER_LAG_HEAD, cell

    return column


def redelivery_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per share cell (scenario, size, workload): records processed twice (processed again
    after one application processed them: the runs' ``records_reprocessed``, excess over the
    control, the count the tables mark) beside records handed out again that no application
    had processed (``sim.share``'s :data:`UNPROCESSED`, the whole run's, control not taken
    off: a share group's own, not comparable with a consumer group's count, not marked),
    medians and ranges over the cell's runs that carry both."""
    cells: dict[tuple[str, int, str], tuple[list[float], list[float]]] = {}
    for r in runs:
        if r.get(UNPROCESSED) is None or not r.get("ok") or r.get("records_reprocessed") is None:
            continue
        key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("workload")))
        again, never = cells.setdefault(key, ([], []))
        again.append(float(r["records_reprocessed"]))
        never.append(float(r[UNPROCESSED]))
    return [[sc, str(size), wl, _span(a, 1.0), _span(n, 1.0), str(len(a))]
            for (sc, size, wl), (a, n) in sorted(cells.items())]


def redelivery_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = redelivery_rows(runs)
    if not rows:
        return ("The runs on this page predate the split of a share group's redeliveries "
                "(records processed again against records handed out never processed): "
                "their records processed twice count both.") if any(
            family(str(r.get("protocol"))) == "share" for r in runs) else ""
    return _md_table("A share group's records handed out again, two ways (median (range) over each "
                     "cell's runs): processed again after an application had processed them (the "
                     "tables' records processed twice, over the control, comparable with a consumer "
                     "group's and marked), and handed out again though no application had processed "
                     "them (a batch released behind a poison record, a leaving member's unprocessed "
                     "rest; the whole run's, not comparable, not marked).",
                     "| scenario | size | workload | processed again (over the control) | handed out "
                     "again, never processed (whole run) | runs |",
                     "|---|---|---|---:|---:|---:|", rows)


def share_lag_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Per share cell (scenario, size, workload): the lag peak in the disturbance windows as
    the share grids count it (records produced and not yet processed: the run's excess plus its
    control's peak) beside the broker's share lag peak (end offset - share-partition start
    offset), medians and ranges over the cell's runs, not over the control."""
    cells: dict[tuple[str, int, str], tuple[list[float], list[float]]] = {}
    for r in runs:
        if r.get("share_lag_peak") is None or not r.get("ok") or r.get("lag_peak") is None \
                or r.get("control_lag_peak") is None:
            continue
        key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("workload")))
        processed, broker = cells.setdefault(key, ([], []))
        processed.append(float(r["lag_peak"]) + float(r["control_lag_peak"]))
        broker.append(float(r["share_lag_peak"]))
    return [[sc, str(size), wl, _span(p, 1.0), _span(b, 1.0), str(len(p))]
            for (sc, size, wl), (p, b) in sorted(cells.items())]


def share_lag_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = share_lag_rows(runs)
    if not rows:
        return ""
    return _md_table("The share group's lag two ways, in the disturbance windows (raw peaks, not over "
                     "the control; median (range) over each cell's runs): as the grids count it, "
                     "records produced and not yet processed (acknowledged or archived), and as the "
                     "broker reports a share group's lag, the log end offset minus the share-partition "
                     "start offset (records in flight and those acknowledged above the start offset "
                     "count in it).",
                     "| scenario | size | workload | lag peak, processed-based | share lag peak, "
                     "end offset \u2212 SPSO | runs |",
                     "|---|---|---|---:|---:|---:|", rows)


def _work(r: Mapping[str, Any]) -> dict[str, Any]:
    try:
        w = json.loads(str(r.get("work") or "{}"))
    except ValueError:
        return {}
    return w if isinstance(w, dict) else {}


def head_of_line_rows(runs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """What poison records cost by themselves, read from the controls (the same seed without
    the disturbance): the control's lag averaged over the disturbance windows (its record·s
    over the windows' seconds, so windows of different lengths compare), per cell and
    protocol, on the clean workload and on each poison workload made of it (the same
    parameters but its ``poison_*`` and ``share_*`` keys), median and range over the seeds."""
    clean_of: dict[str, str] = {}
    works = {str(r.get("workload")): _work(r) for r in runs}
    for name, w in works.items():
        if not w.get("poison_rate"):
            continue
        base = {k: v for k, v in w.items() if not k.startswith(("poison", "share_"))}
        twin = next((n for n, x in works.items() if x == base), None)
        if twin is not None:
            clean_of[name] = twin

    def mean_lag(r: Mapping[str, Any]) -> float | None:
        lag, secs = r.get("control_lag_record_s"), r.get("window_s")
        return float(lag) / float(secs) if lag is not None and secs else None

    cells: dict[tuple[str, int, str, str], list[float]] = {}
    for r in runs:
        v = mean_lag(r)
        if v is not None and r.get("ok"):
            key = (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("protocol")),
                   str(r.get("workload")))
            cells.setdefault(key, []).append(v)
    out = []
    for poison, clean in sorted(clean_of.items()):
        for (scenario, size, protocol, wl) in sorted(
                {k for k in cells if k[3] == poison},
                key=lambda k: (SCENARIOS.index(k[0]) if k[0] in SCENARIOS else 99, k[0], k[1],
                               k[2])):
            before = cells.get((scenario, size, protocol, clean), [])
            out.append([scenario, str(size), protocol, f"{clean} \u2192 {wl}",
                        _span(before, 1.0), _span(cells[(scenario, size, protocol, wl)], 1.0)])
    return out


def _mean_ms(v: Any) -> float | None:
    """A workload setting in ms: a number, or a distribution's mean (or fixed value)."""
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, Mapping):
        for key in ("mean", "value"):
            if isinstance(v.get(key), int | float):
                return float(v[key])
    return None


def poison_cost_rows(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """Per poison workload with a field cost (``poison_attempt_ms``; ``sim.workload``, "As in
    the field"): what one poison record costs each group type, from the workload's settings.
    A consumer group's application retries it in place (``poison_attempts`` attempts and a
    ``poison_backoff_ms`` back-off between two), its partitions waiting behind it; a share
    group's member RELEASEs it after each attempt (KIP-932), no back-off, and it is archived
    at ``share.delivery.count.limit``. (workload, consumer group's text, share group's)."""
    from dataclasses import fields

    from groupcoord.sim.share_convergence import ShareSettings
    from groupcoord.sim.workload import Workload

    attempts_default = next(int(f.default) for f in fields(Workload)  # type: ignore[arg-type]
                            if f.name == "poison_attempts")
    out = []
    seen: set[str] = set()
    for r in runs:
        name = str(r.get("workload"))
        w = _work(r)
        attempt = _mean_ms(w.get("poison_attempt_ms"))
        if name in seen or not w.get("poison_rate") or attempt is None:
            continue
        seen.add(name)
        n = int(w.get("poison_attempts") or attempts_default)
        backoff = float(w.get("poison_backoff_ms") or 0)
        limit = int(w.get("share_delivery_count_limit")
                    or ShareSettings().delivery_count_limit)
        consumer = (f"{n} \u00d7 {number(attempt / 1000)} s"
                    + (f" + {n - 1} \u00d7 {number(backoff / 1000)} s back-off"
                       if backoff and n > 1 else "")
                    + f" = {number((n * attempt + (n - 1) * backoff) / 1000)} s")
        share = (f"{limit} \u00d7 {number(attempt / 1000)} s = "
                 f"{number(limit * attempt / 1000)} s")
        if not any(family(str(x.get("protocol"))) == "consumer"
                   and str(x.get("workload")) == name for x in runs):
            consumer = ""
        lock = w.get("share_lock_duration_ms")
        if isinstance(lock, int | float) and lock < attempt:
            share += (f" (its {number(lock / 1000)} s lock expires during each attempt: the "
                      "record goes to another member while the first still tries)")
        out.append((name, consumer, share))
    return sorted(out)


def poison_cost_md(runs: Sequence[Mapping[str, Any]]) -> str:
    """:func:`poison_cost_rows` as sentences; "" without a field-cost poison workload."""
    rows = poison_cost_rows(runs)
    if not rows:
        return ""
    lines = ["What one poison record costs each group type, from the workloads' settings (the "
             "records and each attempt's cost are the same for both; the back-off is not):"]
    share_text = ("the share group {} of one member's (it RELEASEs the record after each "
                  "attempt, delivered again at once, archived at the delivery count limit)")
    lines += [f"- {name}: " + (f"the consumer group {c} of its partitions' time (the "
                               "application retries in place, its back-off between attempts); "
                               if c else "share groups only: ") + share_text.format(s)
              for name, c, s in rows]
    lines += ["", "The back-off is a chosen setting, not the field's default: Spring Kafka's "
              "`DefaultErrorHandler` defaults to `FixedBackOff(0, 9)` (10 attempts, no delay)."]
    return "\n".join(lines)


def head_of_line_md(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = head_of_line_rows(runs)
    if not rows:
        return ""
    return _md_table("What poison records cost by themselves, read from the controls (the same seed "
                     "without the disturbance): the control's lag averaged over the disturbance windows "
                     "(records: its record·s over the windows' seconds), median and range over the "
                     "seeds, on the clean workload and on the same with poison records. Every control "
                     "counts, caught up or not.",
                     "| scenario | size | protocol | workloads | clean | poison |",
                     "|---|---|---|---|---:|---:|", rows)


#: What each metric of the share grids means for each group type (docs/lab.md, "Share groups
#: against consumer groups"): (metric, share group, consumer group). Printed on the rendered
#: page from here, so the page and the code that computes the columns say the same thing.
DEFINITIONS: tuple[tuple[str, str, str], ...] = (
    ("excess lag, lag peak",
     "records produced and not yet processed by a member (not the broker's share lag, "
     "the end offset minus the share-partition start offset), over the control",
     "records produced and not yet processed (not end offset minus committed offset), "
     "over the control"),
    ("stall",
     "time the whole group processed nothing",
     "time the whole group processed nothing"),
    ("resource downtime (partitions stopped)",
     "partition·s with records there and none that can be delivered: no live member "
     "fetching the partition, or the partition held at the record-lock limit "
     "(group.share.partition.max.record.locks offsets in flight from the share-partition "
     "start offset, none available: behind a crashed member's locks, until they expire); "
     "a member processing (a poison record's failed attempt included) is delivering, its "
     "partition's wait shows in lag",
     "partition·s with records there and no live member owning and fetching the partition "
     "(a revoked partition until its new owner starts it); a member standing at a poison "
     "record still owns its partition, so that wait shows in lag, not here"),
    ("records processed twice",
     "records handed to an application again after one had processed them (processed, not "
     "yet acknowledged when a lock expired): only this is marked; records handed out again "
     "that no application had processed (a batch released behind a poison record, a leaving "
     "member's unprocessed rest) are their own column, not comparable, no marks; a poison "
     "record's retries count in neither",
     "records processed since the last commit, processed again by the partition's next "
     "owner"),
    ("partitions moved (assignment changes)",
     "a partition started by a member not among its last holders; no revocation and no "
     "gap (the other members of the partition go on fetching)",
     "a partition handed to a new owner: revoked, committed, then started, a gap between"),
)
#: Metrics that are a whole-group measure: where every run of the page reads 0 the page says
#: so once rather than a row of zeros per cell.
ZERO_CHECKED = (("stall_ms", "stall"),)


def definitions_md(runs: Sequence[Mapping[str, Any]]) -> str:
    """The share grids' definitions (:data:`DEFINITIONS`) as a Markdown table, and a line for
    each metric of :data:`ZERO_CHECKED` that is 0 in every run given."""
    lines = ["What the share grids' metrics mean for each group type (the tables read as "
             "excess over each run's control):", "",
             f"| metric | {SHARE} (share group) | {CONSUMER} (consumer group) |",
             "|---|---|---|"]
    lines += [f"| {m} | {sh} | {co} |" for m, sh, co in DEFINITIONS]
    for column, label in ZERO_CHECKED:
        vals = [float(r[column]) for r in runs if r.get("ok") and r.get(column) is not None]
        if vals and all(v == 0 for v in vals):
            lines += ["", f"{label.capitalize()} is 0 in every cell of every share grid on "
                      f"this page ({len(vals)} runs): the group never stopped processing as "
                      "a whole; its rows say nothing."]
    return "\n".join(lines)


def share_sections_md(runs: Sequence[Mapping[str, Any]]) -> str:
    """The share comparison's sections of the report (Markdown); "" without share runs."""
    if not any(family(str(r.get("protocol"))) == "share" for r in runs):
        return ""
    share_runs = [r for r in runs if family(str(r.get("protocol"))) in ("share", "consumer")]
    parts = ["## Share grids: definitions", "", definitions_md(share_runs), "",
             "## Share groups: the same members on either topic", "",
             platform_md(runs) or "No cells of both workloads at the same size.", "",
             "## Messages", "", messages_md(runs)]
    if lag := share_lag_md(runs):
        parts += ["", "## Share groups: the broker's share lag", "", lag]
    if owners := crash_owner_md(runs):
        parts += ["", "## Crash and kill cells: did the lost member own a partition", "", owners]
    if kills := kill_md(runs):
        parts += ["", "## A partition owner lost: lost host against process kill", "", kills]
    if again := redelivery_md(runs):
        parts += ["", "## Share groups: records handed out again", "", again]
    if hol := head_of_line_md(runs):
        parts += ["", "## Poison records: head-of-line blocking", "", hol]
    if cost := poison_cost_md(runs):
        parts += ["", cost]
    if backoff := backoff_md(runs):
        parts += ["", "## Poison records: the consumer group's back-off at 0", "", backoff]
    return "\n".join(parts)


def _table_html(md: str) -> str:
    """A Markdown table of this module (no escapes in it) as HTML, its text lines as
    paragraphs."""
    import html

    out, rows = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            if set(line) <= set("|-: "):
                continue
            rows.append([c.strip() for c in line.strip("|").split("|")])
            continue
        if rows:
            out.append(_rows_html(rows))
            rows = []
        if line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    if rows:
        out.append(_rows_html(rows))
    return "\n".join(out)


def _rows_html(rows: Sequence[Sequence[str]]) -> str:
    import html

    head, *body = rows
    return ("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head)
            + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                      for r in body) + "</tbody></table>")


def share_sections_html(runs: Sequence[Mapping[str, Any]]) -> str:
    md = share_sections_md(runs)
    return _table_html(md) if md else ""


# --------------------------------------------------------------------------- calibration


#: A sentence's metric (the lab's tables') -> the share calibration's figure of it: the
#: tables' lag and lag peak read as excess over the paired control, as the calibration's do.
SENTENCE_METRIC = {"lag_record_s": "excess_lag_record_s", "lag_peak": "excess_lag_peak",
                   "convergence_ms": "time_to_converge_ms",
                   "resource_downtime_ms": "resource_downtime_ms",
                   "records_reprocessed": "records_reprocessed"}


#: Metrics that measure a scenario's own schedule, not the protocol: a rolling bounce's time
#: to converge is the length of the bounce schedule (its last bounce comes members x the
#: spacing after the first), the same on the wire and in the model; reported, not checked.
SCHEDULE_METRICS = {"rolling-bounce": frozenset({"time_to_converge_ms"})}
#: The share client the calibration drives on the wire (``lab.wire_share_member``), where a
#: cell does not name it.
SHARE_CLIENT = "confluent-kafka ShareConsumer (librdkafka, preview)"


def _client(cell: Mapping[str, Any]) -> str:
    """The client and version a cell was measured with (its ``measured.client``), marked a
    preview: librdkafka's share consumer (KIP-932) is a preview API."""
    measured = cell.get("measured")
    if isinstance(measured, list):
        measured = measured[0] if measured else {}
    client = str((measured or {}).get("client") or "") if isinstance(measured, dict) else ""
    if not client:
        return SHARE_CLIENT
    if "ShareConsumer" not in client and "confluent-kafka" in client:
        return client  # the consumer side (``lab.wire_share_consumer``): no preview
    # a record of the calibration's first rounds kept confluent-kafka's major version only
    # ("confluent-kafka 2 ShareConsumer"): the pinned client's full version where it is that
    trunc = re.match(r"confluent-kafka (\d+) ", client)
    if trunc:
        from importlib.metadata import PackageNotFoundError, version

        try:
            full = version("confluent-kafka")
        except PackageNotFoundError:
            full = ""
        if full.split(".")[0] == trunc.group(1):
            client = client.replace(trunc.group(0), f"confluent-kafka {full} ", 1)
    return client if "preview" in client else f"{client}, preview"


def _pair(cell: Mapping[str, Any], metric: str, sim: float, wire: float) -> tuple[str, str]:
    """One metric's simulated / measured pair and how it reads: "within 2x", "not within
    2x", "both under the floor" with the raw ratio (a pair that passes only because both
    sides are under the floor is never "within 2x"), or "reported, not checked" (a metric of
    :data:`SCHEDULE_METRICS`)."""
    from groupcoord.lab.share_calibration import SHARE_FLOORS

    text = f"{metric.replace('_', ' ')} {number(sim)} / {number(wire)}"
    if metric in SCHEDULE_METRICS.get(str(cell.get("scenario")), frozenset()):
        return text + " (the scenario's schedule)", "reported, not checked"
    ok = (cell.get("checks") or {}).get(metric)
    s, w = max(sim, 0.0), max(wire, 0.0)
    floor = SHARE_FLOORS.get(metric)
    if ok and floor is not None and max(s, w) <= floor and not (
            min(s, w) > 0 and max(s, w) <= 2 * min(s, w)):
        ratio = (cell.get("ratios") or {}).get(metric)
        if ratio is None and w > 0:
            ratio = s / w
        raw = f"{number(float(ratio))}x; " if ratio is not None else ""
        return text + f" ({raw}floor {number(floor)})", "both under the floor"
    if ok is None:
        return text, "not checked"
    return text, "within 2x" if ok else "not within 2x"


#: The share calibration's figure -> the page's run column of it (:data:`SENTENCE_METRIC`
#: reversed: the runs' lag and lag peak are their excess over the paired control).
RUN_COLUMN = {v: k for k, v in SENTENCE_METRIC.items()}


def page_side(cell: Mapping[str, Any], protocol: str,
              runs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """``cell`` with its simulated side taken from the page's own runs of the same cell
    (scenario, members, workload, protocol; every seed set) where the page has them: each
    metric the runs carry (:data:`RUN_COLUMN`) their median against the wire's, checked
    again (``lab.share_calibration.share_within_2x``); a metric the runs do not carry (the
    raw lag peak) is dropped. The calibration file's simulated side is the model of the day
    it was measured: the page's runs are this model's. ``page_runs`` says how many; the cell
    unchanged where the page has no run of it."""
    from groupcoord.lab.share_calibration import PROTOCOL, WORKLOAD, share_within_2x

    key = (cell.get("scenario"), cell.get("members"), cell.get("workload", WORKLOAD))
    mine = [r for r in runs if r.get("ok") and str(r.get("protocol")) == protocol
            and (r.get("scenario"), int(r.get("size") or r.get("members") or 0),
                 r.get("workload")) == key]
    if not mine or (str(cell.get("protocol") or PROTOCOL) != protocol
                    and family(protocol) != "share"):
        return cell
    medians: dict[str, dict[str, float | None]] = {}
    checks: dict[str, bool | None] = {}
    for m, v in (cell.get("medians") or {}).items():
        col = RUN_COLUMN.get(m)
        vals = [float(r[col]) for r in mine if col and r.get(col) is not None]
        if not isinstance(v, dict) or not vals:
            continue
        sim = float(statistics.median(vals))
        wire = v.get("wire")
        medians[m] = {"sim": sim, "wire": wire}
        checks[m] = share_within_2x(m, sim, None if wire is None else float(wire))
    return {**cell, "medians": medians, "checks": checks, "ratios": {}, "page_runs": len(mine)}


def _downtime_how(cell: Mapping[str, Any], protocol: str, wire: float) -> str:
    """How the wire's partitions stopped (``resource_downtime_ms``) was timed, and the runs its
    median is of: a wire median that equals the simulation's to the millisecond reads as
    derived unless the line says what was measured (the eleventh outside share review). Empty
    where the wire's median is under the floor."""
    from groupcoord.lab.share_calibration import SHARE_FLOORS
    from groupcoord.lab.wire_metrics import SAMPLE_S
    from groupcoord.lab.wire_share import LOCK_GAP_S

    if wire <= SHARE_FLOORS["resource_downtime_ms"]:
        return ""
    if family(protocol) == "share":
        what = ("partition·s with nothing deliverable, from the real members' logs: no live "
                "member with the partition in its assignment (ShareGroupDescribe), or no record "
                "of the partition handed to any member's application for over "
                f"{number(LOCK_GAP_S)} s while a live member had it (a lost host's locks)")
    else:
        what = ("partition·s with no live owner in the members' rebalance callbacks, "
                f"sampled every {number(SAMPLE_S * 1000)} ms")
    vals = sorted(float(r["resource_downtime_ms"]) for r in cell.get("wire") or []
                  if isinstance(r, Mapping) and r.get("resource_downtime_ms") is not None)
    each = (f"; the {len(vals)} wire runs: " + ", ".join(number(v) for v in vals)) if vals \
        else ""
    return f" (measured on the wire, not derived: {what}{each})"


def _cell_text(cell: Mapping[str, Any], protocol: str, metric: str | None = None) -> str:
    med = cell.get("medians") or {}
    runs = len(cell.get("wire") or [])
    own = SENTENCE_METRIC.get(metric or "")
    pairs: dict[str, tuple[str, str]] = {}
    for m, v in med.items():
        if isinstance(v, dict) and v.get("sim") is not None and v.get("wire") is not None:
            pairs[m] = _pair(cell, m, float(v["sim"]), float(v["wire"]))
            if m == "resource_downtime_ms":
                text, how = pairs[m]
                pairs[m] = (text + _downtime_how(cell, protocol, float(v["wire"])), how)
    mine = (f"on this sentence's metric, {pairs[own][0]}: {pairs[own][1]}; "
            if own in pairs else "")
    by: dict[str, list[str]] = {}
    for m, (_, how) in pairs.items():
        by.setdefault(how, []).append(m.replace("_", " "))
    order = ("not within 2x", "within 2x", "both under the floor", "reported, not checked",
             "not checked")
    verdict = "; ".join(f"{how}: {', '.join(by[how])}" for how in order if how in by)
    wl = f" on {cell['workload']}" if cell.get("workload") else ""
    drawn = sorted({k for t in cell.get("timings") or [] if isinstance(t, dict) for k in t
                    if k not in ("seed", "at_ms")})
    timed = f", each run at its seed's drawn {' and '.join(drawn)}" if drawn else ""
    measured = cell.get("measured")
    crash = ""
    if str(cell.get("scenario")).endswith("crash"):  # how the wire played the lost host
        played = measured.get("crash") if isinstance(measured, dict) else None
        crash = (f", the crash played as {str(played).split(' (')[0]}, a lost host" if played
                 else ", the crash played as SIGKILL (a kill: its connections closed), "
                      "not the model's lost host")
    side = "share consumers" if family(protocol) == "share" else "consumers"
    page = cell.get("page_runs")
    sim = (f"simulated (this page's {page} runs of the cell) / measured" if page
           else "simulated (the calibration's own seeds) / measured")
    return (f"{protocol} against real {side} ({_client(cell)}), "
            f"{cell.get('scenario')} at {cell.get('members')} members{wl} ({runs} wire "
            f"runs{timed}{crash}), {sim}: " + mine
            + "; ".join(t for t, _ in pairs.values())
            + (f"; all metrics: {verdict}" if verdict else ""))


def share_calibration_note(scenario: str, size: int | None, protocols: Sequence[str],
                           cells: Sequence[Mapping[str, Any]] | None = None,
                           cal: Mapping[str, Any] | None = None,
                           workload: str | None = None, metric: str | None = None,
                           runs: Sequence[Mapping[str, Any]] = (),
                           also: Sequence[str] = (),
                           workloads: Sequence[str] = ()) -> str:
    """The calibration line of a sentence that names a share group: per protocol, the row of
    the sentence's scenario and size where one covers it; a share protocol without one reads
    "uncalibrated (share:simple)"; a consumer protocol without one is not named (another
    scenario's or size's row is no evidence for this cell). ``workload``: the sentence's (a
    calibration cell without one is the share calibration's own workload,
    ``lab.share_calibration.WORKLOAD``). ``metric``: the sentence's (the tables' name): its
    figure and check come first (:data:`SENTENCE_METRIC`), then every metric of the row and
    the row's verdict over all of them. ``cells``: the share
    calibration's (:func:`load_share_calibration` by default); ``cal``: the package's
    ``calibration.json`` (``lab.limits``) by default. ``runs``: the page's, whose runs of a
    wire row's cell give its simulated side (:func:`page_side`). ``also``: other scenarios
    the sentence states of the same cell (a kill sentence's lost host); ``workloads``: a
    sentence without one workload (a grid's no-difference sentence) is its grid's cells
    only, never another grid's workload."""
    from groupcoord.lab import limits

    if cells is None:
        cells = load_share_calibration()
    if cal is None:
        cal = limits.load_calibration() or {}
    found = []
    sides: dict[str, bool] = {}
    for p in protocols:
        # the share calibration's rows of this cell for this side (a row without a protocol
        # is the share side's: the first rounds measured only it)
        mine = [c for sc in dict.fromkeys((scenario, *also))
                for c in _sentence_cells(sc, size, p, workload, cells, workloads)]
        if mine:
            found += [_cell_text(page_side(c, p, runs), p, metric) for c in mine]
            sides[p] = True
            continue
        row = limits.calibration_for(scenario, p, members=size, cal=cal)
        sides[p] = bool(row)
        if family(p) == "share":
            found.append(str(row) if row else f"uncalibrated ({p})")
        elif row:
            found.append(str(row))
    # a sentence that states two scenarios of its cell (a kill and its lost host): which of
    # them the wire rows calibrate (the tenth outside share review)
    measured = [sc for sc in dict.fromkeys((scenario, *also))
                if any(_sentence_cells(sc, size, p, workload, cells, workloads)
                       for p in protocols)]
    if also and measured and scenario not in measured:
        found.insert(0, f"the wire rows are of {', '.join(measured)}, not {scenario} "
                        f"({scenario}: not measured on the wire)")
    if len(sides) > 1:  # which sides of the comparison a wire row stands behind
        on = [p for p, ok in sides.items() if ok]
        off = [p for p, ok in sides.items() if not ok]
        found.append("sides on the wire: " + (
            "every one (" + ", ".join(on) + ")" if not off else
            ", ".join(on) + " only (" + ", ".join(off) + ": no wire row of this cell)" if on
            else "none"))
    return "Calibration against real clients: " + "; ".join(found) if found else ""


def _sentence_cells(scenario: str, size: int | None, protocol: str, workload: str | None,
                    cells: Sequence[Mapping[str, Any]],
                    workloads: Sequence[str] = ()) -> list[Mapping[str, Any]]:
    """The share calibration's rows of a sentence's cell on one side (as
    :func:`share_calibration_note` picks them): its workload, else one of ``workloads`` (its
    grid's) where given."""
    from groupcoord.lab.share_calibration import PROTOCOL, WORKLOAD

    return [c for c in cells if c.get("scenario") == scenario
            and (size is None or c.get("members") == size) and not c.get("error")
            and (c.get("workload", WORKLOAD) == workload if workload is not None
                 else not workloads or c.get("workload", WORKLOAD) in workloads)
            and (str(c.get("protocol") or PROTOCOL) == protocol
                 or (family(protocol) == "share" and not c.get("protocol")))]


#: The calibration summary lines' metrics (``lab.limits.metric_check_text``: each line opens
#: with the metric's name) and the share calibration's name of each.
_SUMMARY_METRICS = {"Records processed twice": "records_reprocessed", "Stall": "stall_ms"}


def sentence_calibration_limits(items: Sequence[str],
                                sentences: Sequence[tuple[Any, ...]],
                                cells: Sequence[Mapping[str, Any]] | None = None,
                                cal: Mapping[str, Any] | None = None,
                                runs: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The model-limits items (``lab.limits.model_limits``) checked against the first page's
    sentences that name a share group (each its scenario, size, workload and protocols, in
    page order): a summary line that says the lab's marks on a metric rest on a metric the wire
    reproduces within 2x does not stand where a sentence's own cell is outside 2x on it (it
    says which); an item names each sentence's cell side outside 2x on any metric; the "not
    covered" line lists every sentence's cell side that no wire row measured (a paper
    calibration row of another size or workload is no evidence for the cell, as in
    :func:`share_calibration_note`). A sentence may carry two more items, the other scenarios
    it states of its cell and its grid's workloads (``share_calibration_note``'s ``also`` and
    ``workloads``); ``runs``: the page's, the simulated side of a row whose cell they ran
    (:func:`page_side`)."""
    from groupcoord.lab import limits

    if not any(family(p) == "share" for s in sentences for p in s[3]):
        return list(items)
    if cells is None:
        cells = load_share_calibration()
    if cal is None:
        cal = limits.load_calibration() or {}
    uncovered: list[str] = []
    outside: list[tuple[str, str, str]] = []  # (metric, where, "sim / wire")
    for i, (scenario, size, workload, protocols, *rest) in enumerate(sentences, 1):
        if not any(family(p) == "share" for p in protocols):
            continue
        also, workloads = (tuple(rest[0]) if rest else ()), (
            tuple(rest[1]) if len(rest) > 1 else ())
        cell = (f"{scenario} at {size} members" if size else scenario) + (
            f" on {workload}" if workload else "")
        off = []
        for p in protocols:
            mine = [page_side(c, p, runs) for sc in dict.fromkeys((scenario, *also))
                    for c in _sentence_cells(sc, size, p, workload, cells, workloads)]
            if not mine:
                if family(p) == "share" or not limits.calibration_for(scenario, p,
                                                                      members=size, cal=cal):
                    off.append(p)
                continue
            for c in mine:
                for m, v in (c.get("medians") or {}).items():
                    if not (isinstance(v, dict) and v.get("sim") is not None
                            and v.get("wire") is not None):
                        continue
                    pair, how = _pair(c, m, float(v["sim"]), float(v["wire"]))
                    if how == "not within 2x":
                        where = cell if c.get("scenario") == scenario else cell.replace(
                            scenario, str(c.get("scenario")), 1)
                        outside.append((m, f"sentence {i}'s {p} ({where})", pair))
        if off:
            uncovered.append(f"sentence {i}'s {' and '.join(off)} ({cell})")
    out = []
    for t in items:
        metric = next((m for k, m in _SUMMARY_METRICS.items() if t.startswith(k + " (")), None)
        missed = [(w, pair) for m, w, pair in outside if m == metric]
        if metric and missed and "rest on a metric the wire reproduces within 2x" in t:
            t += (" Not in the sentences' own cells: " + "; ".join(
                f"{w}: {pair}, simulated / measured, outside 2x" for w, pair in missed)
                + ": there the mark is the model's, not the wire's.")
        if uncovered and t.startswith("Not covered by the calibration"):
            t = t.rstrip(".") + "; the sentences' cells: " + "; ".join(uncovered) + "."
            uncovered = []
        out.append(t)
    if uncovered:
        out.append("Not covered by the calibration (no wire row measured them against real "
                   "clients), the sentences' cells: " + "; ".join(uncovered) + ".")
    if outside:
        out.append("The sentences' own cells outside 2x on a metric (the share calibration, "
                   "simulated / measured): " + "; ".join(
                       f"{w}: {pair}" for _, w, pair in outside)
                   + "; the calibration's lines of within 2x do not speak for them.")
    return out


def _read(path: Path, columns: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A Parquet table's rows (``columns`` of them, those it has; all but the bulky
    ``summary_json`` by default); [] where there is none."""
    import pyarrow.dataset as ds

    if not path.exists() or not any(path.rglob("*.parquet")):
        return []
    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    cols = ([c for c in columns if c in dataset.schema.names] if columns
            else [c for c in dataset.schema.names if c != "summary_json"])
    return list(dataset.to_table(columns=cols).to_pylist())


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m groupcoord.lab.share_report DIR (a rendered share spec)",
              file=sys.stderr)
        return 2
    runs = _read(Path(args[0]) / "runs")
    attach_window_seconds(runs, Path(args[0]) / "disturbances")
    if not runs:
        print(f"error: no runs in {args[0]}/runs", file=sys.stderr)
        return 1
    print(share_sections_md(runs) or "No share runs in this directory.")
    return 0


__all__ = ["BACKOFF_WORKLOADS", "KILL_TEXT", "PLATFORM", "attach_share_lag",
           "attach_window_seconds", "backoff_md", "backoff_rows", "broker_lag_note",
           "head_of_line_md", "head_of_line_rows", "kill_md", "kill_rows",
           "load_share_calibration", "message_rows", "messages_md", "platform_md",
           "platform_rows", "sentence_calibration_limits", "share_calibration_note",
           "share_lag_md", "share_lag_rows",
           "share_sections_html", "share_sections_md"]

if __name__ == "__main__":
    raise SystemExit(main())
