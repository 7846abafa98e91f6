"""The report from tables written without Spark: violations with their commands, audit-only
directories, and the audit's per-group figures on hand-made records."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.lab.aggregate import aggregate_columns
from groupcoord.lab.audit import epoch_rows, group_metrics
from groupcoord.lab.report import REPORT_LOCK, ReportBusy, build_report, report_lock


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path / "part-0.parquet")


def _agg(protocol: str, size: int, downtime: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(aggregate_columns(), 1.0)
    row.update(protocol=protocol, scenario="crash", size=size, workload="scenario",
               fault_rate=0.0, runs=3, ok_runs=3, violations=0, converged_runs=3)
    row.update(resource_downtime_ms_p50=downtime, resource_downtime_ms_p95=downtime * 1.5)
    return row


def test_report_lists_violations_with_their_commands(tmp_path: Path) -> None:
    (tmp_path / "sweep.json").write_text(json.dumps({
        "name": "t", "spec": "t.toml", "runs": 6, "cells": 4, "sim_s": 1.0,
        "protocols": ["consumer:range", "consumer:uniform"], "master": "local[2]"}))
    _write(tmp_path / "aggregates", [_agg(p, s, 1000.0 * s) for p in ("consumer:range",
                                                                        "consumer:uniform")
                                     for s in (3, 6)])
    cmd = "groupcoord lab rerun --scenario crash --protocol consumer:range --seed 5 --size 6"
    _write(tmp_path / "violations" / "protocol=consumer%3Arange" / "scenario=crash", [{
        "run_id": "abc", "size": 6, "seed": 5, "invariant": "I1", "message": "p0 <held> twice",
        "command": cmd, "trace": ["1 2 x"]}])
    index = build_report(tmp_path).read_text()
    assert "Invariant violations: <span class='bad'>1</span>" in index
    assert cmd in index and "p0 &lt;held&gt; twice" in index  # escaped
    assert "consumer:range" in index  # the partition value, URI-decoded
    # no runs table: no verdict rows, no charts
    assert list((tmp_path / "report").glob("*.png")) == []
    md = (tmp_path / "report" / "summary.md").read_text()
    assert f"reproduce with: `{cmd}`" in md and "**I1**" in md


def test_an_empty_directory_still_renders(tmp_path: Path) -> None:
    assert "No lab tables" in build_report(tmp_path).read_text()


def test_a_second_report_of_one_folder_waits_for_the_first(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]
                                                             ) -> None:
    """Two ``lab report DIR`` at once removed each other's charts (FileNotFoundError): the
    second waits for the first's lock, says so in one line, then renders."""
    rdir = tmp_path / "report"
    done: list[Path] = []
    with report_lock(rdir):
        assert (rdir / REPORT_LOCK).read_text() == str(os.getpid())
        with (pytest.raises(ReportBusy, match=r"being written by another report \(pid \d+\)"),
              report_lock(rdir, wait=False)):
            pass
        t = threading.Thread(target=lambda: done.append(build_report(tmp_path)))
        t.start()
        t.join(1.0)
        assert t.is_alive() and not done  # waiting, not rendering
    t.join(30)
    assert not t.is_alive() and done and "No lab tables" in done[0].read_text()
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "being written by another report" in err
    # released: the lock file is free again and says no holder
    with open(rdir / REPORT_LOCK) as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert f.read() == ""


def _rec(offset: int, record: str, ts: int, member: str | None = None, epoch: int | None = None,
         resources: list[str] | None = None, tombstone: bool = False) -> dict[str, Any]:
    return {"shard": 0, "offset": offset, "sub": 0, "ts_ms": ts, "group_id": "g",
            "family": "consumer", "record": record, "member_id": member, "tombstone": tombstone,
            "epoch": epoch, "resources": resources, "members": None}


def test_group_metrics_follow_the_records() -> None:
    meta, member, target = ("CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_MEMBER_METADATA",
                            "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER")
    rows = [
        _rec(1, member, 0, "a"), _rec(2, meta, 0, epoch=1), _rec(3, target, 0, "a", None,
                                                                   ["t:0", "t:1"]),
        _rec(4, member, 1000, "b"), _rec(5, meta, 1000, epoch=2),
        _rec(6, target, 1000, "a", None, ["t:0"]), _rec(7, target, 1000, "b", None, ["t:1"]),
        _rec(8, member, 3600_000, "a", tombstone=True), _rec(9, target, 3600_000, "a",
                                                             tombstone=True),
        _rec(10, meta, 3600_000, epoch=3), _rec(11, target, 3600_000, "b", None, ["t:0", "t:1"]),
        _rec(12, "OFFSET_COMMIT", 3600_000, resources=["t:0"]),
    ]
    m = group_metrics(reversed(rows))  # order comes from the offsets
    assert (m["rebalances"], m["group_epoch"]) == (3, 3)
    assert (m["members_joined"], m["members_left"], m["members_now"], m["max_members"]) == (
        2, 1, 1, 2)
    assert (m["resources_assigned"], m["resources_moved"]) == (4, 2)
    assert m["rebalances_per_hour"] == pytest.approx(3.0)
    assert m["offset_commits"] == 1 and not m["deleted"]
    assert [e["epoch"] for e in epoch_rows(rows)] == [1, 2, 3]
    # a deleted and re-created group starts its epochs again
    again = [*rows, _rec(13, meta, 3700_000, tombstone=True), _rec(14, meta, 3800_000, epoch=1)]
    m2 = group_metrics(again)
    assert (m2["rebalances"], m2["group_epoch"], m2["deleted"]) == (4, 1, False)
    assert [e["epoch"] for e in epoch_rows(again)] == [1, 2, 3, 1]


def _runs(tmp_path: Path) -> None:
    """A two-grid sweep's runs: KIP-415 (Connect) where cooperative restarts fewer tasks,
    consumers where every metric but stall is zero; settings as the runs record them."""
    rows = []
    for seed in range(5):
        for p, restarts in (("connect:eager", 40 + seed), ("connect:cooperative", 4)):
            for size in (3, 6):
                rows.append({
                    "run_id": f"{p}{size}{seed}", "protocol": p, "scenario": "kip415-worker-joins",
                    "size": size, "workload": "16x8c", "fault_rate": 0.0, "seed": seed,
                    "ok": True, "caught_up": True, "task_restarts": restarts * size,
                    "stall_ms": 0, "task_downtime_task_s": 2.0 * restarts,
                    "time_to_balance_ms": 5000, "control_lag_peak": 3,
                    "settings_json": json.dumps({"heartbeat.interval.ms": 3000,
                                                 "scheduled.rebalance.max.delay.ms": 300000})})
        for p, stall in (("classic:eager", 9000 + seed), ("consumer:uniform", 0)):
            for ms in (20, 0.5, 5):
                rows.append({
                    "run_id": f"{p}{ms}{seed}", "protocol": p, "scenario": "rolling-bounce",
                    "size": 8, "workload": f"4x8-p{ms:g}ms", "fault_rate": 0.0, "seed": seed,
                    "ok": True, "caught_up": seed != 4, "stall_ms": stall, "lag_peak": 0,
                    "lag_record_s": 0.0, "convergence_ms": 0, "resources_moved": 0,
                    "records_reprocessed": 0, "control_lag_peak": 3,
                    "work": json.dumps({"processing_ms": ms}),
                    "settings_json": json.dumps({"heartbeat.interval.ms": 3000 if p.startswith(
                        "classic") else 5000, "max.poll.records": 500})})
    keys = list(dict.fromkeys(k for r in rows for k in r))
    _write(tmp_path / "runs", [{k: r.get(k) for k in keys} for r in rows])
    grid = {"fault_rates": [0.0], "seeds": 5}
    (tmp_path / "sweep.json").write_text(json.dumps({
        "name": "t", "spec": "paper", "runs": len(rows), "cells": 10, "sim_s": 1.0,
        "grids": [
            {**grid, "name": "kip415", "description": "16 connectors x 8 tasks",
             "question": "How many tasks restart when a worker joins?",
             "protocols": ["connect:eager", "connect:cooperative"],
             "scenarios": ["kip415-worker-joins"], "sizes": [3, 6], "workloads": ["16x8c"]},
            {**grid, "name": "crossover", "description": "processing time",
             "protocols": ["classic:eager", "consumer:uniform"], "scenarios": ["rolling-bounce"],
             "sizes": [8], "workloads": ["4x8-p0.5ms", "4x8-p5ms", "4x8-p20ms"]}]}))


def test_the_first_page_is_a_verdict_table_per_grid_then_claims(tmp_path: Path) -> None:
    _runs(tmp_path)
    index = build_report(tmp_path).read_text()
    md = (tmp_path / "report" / "summary.md").read_text()
    order = ["<h2>How to read the tables</h2>", "<h2>kip415</h2>", "<h2>crossover</h2>",
             "<h2>What the tables show</h2>", "<h2>Settings</h2>",
             "<h2>What the model leaves out</h2>", "<h2>Invariant violations", "<h2>Charts</h2>"]
    assert [index.index(h) for h in order] == sorted(index.index(h) for h in order)
    assert "minus its paired control" in index  # the runs carry controls
    # each grid says its question, then its setup
    assert index.index("<p class='q'>How many tasks restart when a worker joins?</p>") \
        < index.index("<p>16 connectors x 8 tasks</p>") < index.index("<h2>crossover</h2>")
    # which test, said on the page, with its chance for 5 seeds
    assert "ranges are separated" in index and "5 seeds: 1 in 252" in index
    assert "sign test" not in index  # no grid with 10 seeds or more
    assert "1 that never caught up" not in index and "3 that never caught up" not in index
    assert "6 that never caught up" in index  # seed 4 of every crossover cell
    # KIP-415's metrics, cooperative marked best on restarts, stall a tie
    kip = md[md.index("### kip415"):md.index("### crossover")]
    assert "task restarts" in kip and "task downtime (task·s)" in kip
    assert "time until balanced (s)" in kip
    line = next(x for x in kip.splitlines() if x.startswith("| kip415-worker-joins | 6 workers"))
    assert "★ 24 | ★ best |" in line and "252 (240\u2013264)" in line
    # workloads in numeric order of the swept processing time
    cross = md[md.index("### crossover"):md.index("## What the tables show")]
    loads = [x.split("|")[3].strip() for x in cross.splitlines()
             if x.startswith("| rolling-bounce")]
    assert [x.split(";")[0] for x in loads] == ["4x8-p0.5ms", "4x8-p5ms", "4x8-p20ms"]
    # seed 4 never caught up: dropped from every protocol of the row, and said on it (which
    # protocol's runs were left out, and why)
    assert all(x.endswith("1 seed dropped from every protocol (classic:eager: 1 run never "
                          "caught up before the event; consumer:uniform: 1 run never caught up "
                          "before the event)") for x in loads)
    # claims with their commands
    claims_md = md[md.index("## What the tables show"):md.index("## Settings")]
    assert ("groupcoord lab run --spec paper --scenario kip415-worker-joins --size 6 "
            "--workload 16x8c --protocol connect:cooperative --protocol connect:eager "
            "--out DIR") in claims_md
    assert claims_md.count("`groupcoord lab run") <= 12
    # settings read from the runs: classic consumers 3 s, KIP-848 5 s
    assert "| `heartbeat.interval.ms` |" in md and "| `scheduled.rebalance.max.delay.ms` |" in md
    settings = md[md.index("## Settings"):md.index("## What the model")]
    assert "classic:eager" in settings and "3,000" in settings and "5,000" in settings
    assert "300,000" in settings


def test_charts_label_the_swept_values_and_leave_out_zero_metrics(
        tmp_path: Path, saved_figures: list[Any]) -> None:
    from groupcoord.lab.report import grid_charts, protocol_styles
    from groupcoord.lab.verdict import grid_verdicts

    _runs(tmp_path)
    build_report(tmp_path)
    rdir = tmp_path / "report"
    index = (rdir / "index.html").read_text()
    pngs = sorted(p.name for p in rdir.glob("*.png"))
    assert pngs == ["crossover__rolling-bounce__x__0.0.png",
                    "kip415__kip415-worker-joins__16x8c__0.0.png"]
    for name in pngs:
        assert f"src='{name}'" in index
    import pyarrow.dataset as ds

    runs = ds.dataset(str(tmp_path / "runs"), format="parquet").to_table().to_pylist()
    meta = json.loads((tmp_path / "sweep.json").read_text())
    kip, cross = grid_verdicts(meta, runs)
    styles = protocol_styles(kip.protocols + cross.protocols)
    saved_figures.clear()  # build_report's pictures: this test reads grid_charts' own
    grid_charts(cross, tmp_path, styles)
    (fig,) = saved_figures
    axes = [ax for ax in fig.axes if ax.get_visible()]
    # only stall differs from zero: one panel, its x ticks the swept values in order
    assert [ax.get_title() for ax in axes] == ["stall"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["0.5", "5", "20"]
    assert axes[0].get_xlabel() == "the processing time per record (ms)"
    assert axes[0].get_ylabel() == "s"


def test_a_panel_spanning_orders_of_magnitude_gets_a_log_axis_in_its_unit() -> None:
    """Lag from 2,000 to 9 million record·s: logarithmic above the floor (zeros stay on the
    linear part); time to converge from 5 s to 300 s: linear; all within the floor: linear."""
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.report import log_threshold

    lag, conv = BY_COLUMN["lag_record_s"], BY_COLUMN["convergence_ms"]
    assert log_threshold(lag, [0.0, 1_800.0, 2_000.0, 580_000.0, 9_400_000.0]) == 900.0
    assert log_threshold(conv, [4_900.0, 5_000.0, 300_000.0]) is None
    assert log_threshold(lag, [0.0, 50.0, 99.0]) is None
    # the floor bounds the linear part from below (seconds: the metric's scale)
    assert log_threshold(conv, [300.0, 120_000.0]) == 0.25


def test_a_classic_groups_partition_added_times_are_charted_as_the_refresh_phases_draw(
        tmp_path: Path, saved_figures: list[Any]) -> None:
    """Round 7: a classic group discovers new partitions at its metadata refresh, so its time
    to converge is a draw of the refresh phase whatever the size (102, 55, 198 s across
    sizes): each seed a dot at its size and one median over every size's seeds, no line
    through the sizes; KIP-848's, which learns at a heartbeat, stays a line over members."""
    from matplotlib.collections import PathCollection

    from groupcoord.lab.report import grid_charts, protocol_styles
    from groupcoord.lab.verdict import grid_verdicts

    phases = {10: [12.0, 250.0, 98.0, 170.0, 40.0], 100: [290.0, 7.0, 55.0, 130.0, 210.0],
              1000: [198.0, 66.0, 3.0, 240.0, 150.0]}
    rows = []
    for size, conv in phases.items():
        for seed in range(5):
            for p, ms in (("classic:eager", conv[seed] * 1000), ("consumer:uniform", 4_600.0)):
                rows.append({
                    "run_id": f"{p}{size}{seed}", "protocol": p, "scenario": "partition-added",
                    "size": size, "workload": "light", "fault_rate": 0.0, "seed": seed,
                    "ok": True, "caught_up": True, "convergence_ms": ms, "stall_ms": 0,
                    "lag_peak": 0, "lag_record_s": 0.0, "resources_moved": 0,
                    "records_reprocessed": 0, "control_lag_peak": 3,
                    "settings_json": json.dumps({"metadata.max.age.ms": 300000})})
    _write(tmp_path / "runs", rows)
    meta = {"name": "t", "spec": "paper", "runs": len(rows), "cells": 6, "sim_s": 1.0,
            "grids": [{"fault_rates": [0.0], "seeds": 5, "name": "consumers",
                       "protocols": ["classic:eager", "consumer:uniform"],
                       "scenarios": ["partition-added"], "sizes": [10, 100, 1000],
                       "workloads": ["light"]}]}
    (g,) = grid_verdicts(meta, rows)
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    ax = next(a for a in fig.axes if a.get_visible() and a.get_title().startswith(
        "time to converge"))
    dots = [c for c in ax.collections if isinstance(c, PathCollection)
            and c.get_label() == "classic:eager"]
    assert len(dots) == 1 and len(dots[0].get_offsets()) == 15  # every seed of every size
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert "classic:eager" not in lines  # no line through the sizes
    flat = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [130.0, 130.0]]
    assert len(flat) == 1  # the median over all 15 seeds, across the panel
    assert list(lines["consumer:uniform"].get_xdata()) == [10, 100, 1000]  # still a line
    assert "metadata refresh's phase" in ax.get_xlabel()


def test_a_swept_time_of_whole_seconds_reads_in_seconds() -> None:
    """Issue item 7, humane units: metadata.max.age.ms swept at 30,000 and 300,000 ms reads
    30 and 300 s; a spread of 0, 1 and 3 s too; sub-second values stay in ms."""
    from groupcoord.lab.report import x_ticks

    assert x_ticks("metadata.max.age.ms (ms)", [30_000.0, 300_000.0]) == (
        ["30", "300"], "metadata.max.age (s)")
    assert x_ticks("the members' heartbeat spread after a join (ms)", [0.0, 1000.0, 3000.0]) \
        == (["0", "1", "3"], "the members' heartbeat spread after a join (s)")
    assert x_ticks("the task start time (ms)", [10.0, 100.0, 1000.0, 5000.0]) == (
        ["10", "100", "1000", "5000"], "the task start time (ms)")
    assert x_ticks("the members' load (% busy)", [20.0, 30.0]) == (
        ["20", "30"], "the members' load (% busy)")


def test_runs_with_identical_results_under_two_names_are_one_distinct_run() -> None:
    """Round 8: ``light`` and ``light-md300s``, ``16x8c`` and ``16x8c-task1s``, a label and
    its ``@hbspread0s`` run the same simulation: the intro counts them once."""
    from groupcoord.lab.report import run_fingerprint

    a = {"run_id": "a", "sweep": "s", "protocol": "classic:eager", "workload": "light",
         "replicate": 3, "seed": 7, "messages": 120, "convergence_ms": 4600.0, "wall_ms": 9,
         "work": "{}", "settings_json": "{}"}
    b = {**a, "run_id": "b", "protocol": "classic:eager@hbspread0s",
         "workload": "light-md300s", "wall_ms": 12, "work": '{"metadata_max_age_ms": 300000}'}
    assert run_fingerprint(a) == run_fingerprint(b)
    assert run_fingerprint(a) != run_fingerprint({**b, "messages": 121})
    assert run_fingerprint(a) != run_fingerprint({**b, "seed": 8})
    assert run_fingerprint(a) != run_fingerprint({**b, "protocol": "consumer:uniform"})
