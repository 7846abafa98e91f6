"""The share comparison's own report parts (``lab.share_report``): the same members on the
share group's topic against the consumer group's (across two grids), the messages each
protocol sends, and the calibration line of a share sentence (the share calibration's row of
its cell, or "uncalibrated", never another scenario's consumer row)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groupcoord.lab.report import calibration_note
from groupcoord.lab.share_report import (
    MESSAGES_LABEL,
    main,
    message_rows,
    platform_md,
    platform_rows,
    share_calibration_note,
    share_sections_md,
)
from groupcoord.lab.verdict import Claim

SHARE, KIP848 = "share:simple", "consumer:uniform"


def _run(protocol: str, workload: str, seed: int, scenario: str = "rolling-bounce",
         size: int = 12, **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "workload": workload,
            "seed": seed, "ok": True, **cols}


def test_the_same_members_on_either_topic_are_compared_across_the_grids() -> None:
    runs = [_run(SHARE, "1x4-busy", s, lag_record_s=10.0 + s, resource_downtime_ms=0,
                 messages=95_000 + s) for s in range(5)]
    runs += [_run(KIP848, "1x12-busy", 100 + s, lag_record_s=1_300.0 + 10 * s,
                  resource_downtime_ms=36_000, messages=1_700) for s in range(5)]
    # the consumer group on the share group's topic (8 idle) is not the platform's choice
    runs += [_run(KIP848, "1x4-busy", s, lag_record_s=6_000.0) for s in range(5)]
    rows = {(r[0], r[1]): r for r in platform_rows(runs)}
    assert rows[("rolling-bounce", "excess lag (record·s)")][2:] == [
        "12 (10\u201314)", "1,320 (1,300\u20131,340)", "5 / 5"]
    assert rows[("rolling-bounce", "resource downtime (partition·s)")][2:4] == ["0", "36"]
    assert rows[("rolling-bounce", MESSAGES_LABEL)][3] == "1,700"
    # the row says its two counts are not of the same messages
    assert "not comparable" in MESSAGES_LABEL and "no fetches" in MESSAGES_LABEL
    md = platform_md(runs)
    assert "share:simple on 1x4-busy against consumer:uniform on 1x12-busy" in md
    assert "not paired" in md
    # no cells of both: nothing drawn
    assert platform_md([r for r in runs if r["workload"] != "1x12-busy"]) == ""


def test_messages_are_counted_per_cell_and_protocol() -> None:
    runs = [_run(SHARE, "1x4-busy", s, scenario="bounce", size=4, messages=2_000 + s)
            for s in range(3)]
    runs += [_run(KIP848, "1x4-busy", s, scenario="bounce", size=4, messages=76)
             for s in range(3)]
    head, row = message_rows(runs)
    assert head == ["scenario", "size", "workload", SHARE, KIP848]
    assert row == ["bounce", "4", "1x4-busy", "2,001 (2,000\u20132,002)", "76"]
    assert "ShareFetch" in share_sections_md(runs)
    assert share_sections_md([r for r in runs if r["protocol"] == KIP848]) == ""


CELL = {"scenario": "bounce", "members": 4, "error": None, "wire": [{}, {}, {}],
        "checks": {"time_to_converge_ms": True, "lag_peak": True},
        "medians": {"time_to_converge_ms": {"sim": 13208, "wire": 13158},
                    "lag_peak": {"sim": 422, "wire": 486}}}
#: A consumer calibration row of another scenario and size (the rolling bounce at 6 members).
CAL = {"setup": {"members": 6}, "checked": [],
       "rows": [{"scenario": "rolling-bounce", "protocol": KIP848, "members": 6,
                 "metrics": {}, "within_2x": True}]}


def test_a_share_sentence_carries_the_share_calibration_of_its_cell_or_none() -> None:
    note = share_calibration_note("bounce", 4, [SHARE, KIP848], cells=[CELL], cal=CAL)
    assert note.startswith("Calibration against real clients: share:simple against real "
                           "share consumers (confluent-kafka ShareConsumer (librdkafka, "
                           "preview)), bounce at 4 members (3 wire runs)")
    assert "time to converge ms 13,208 / 13,158" in note
    # which sides of the comparison have a wire row of this cell: the share side only
    assert note.endswith("within 2x: time to converge ms, lag peak; sides on the wire: "
                         f"{SHARE} only ({KIP848}: no wire row of this cell)")
    # not calibrated there: said, and the consumer's row of another scenario is not printed
    note = share_calibration_note("rolling-bounce", 12, [SHARE, KIP848], cells=[CELL], cal=CAL)
    assert note == ("Calibration against real clients: uncalibrated (share:simple); sides on "
                    "the wire: none")
    # the calibration's cells are its own workload's (1x4-busy): not another workload's row
    assert share_calibration_note("bounce", 4, [SHARE], cells=[CELL], cal=CAL,
                                  workload="1x12-busy").endswith("uncalibrated (share:simple)")
    assert "bounce at 4 members" in share_calibration_note("bounce", 4, [SHARE], cells=[CELL],
                                                           cal=CAL, workload="1x4-busy")
    missed = {**CELL, "checks": {"time_to_converge_ms": True, "lag_peak": False}}
    assert share_calibration_note("bounce", 4, [SHARE], cells=[missed], cal=CAL).endswith(
        "not within 2x: lag peak; within 2x: time to converge ms")
    # a consumer-only sentence: only its own cell's row
    assert share_calibration_note("rolling-bounce", 12, [KIP848], cells=[], cal=CAL) == ""
    assert "rolling-bounce" in share_calibration_note("rolling-bounce", 6, [KIP848], cells=[],
                                                      cal=CAL)


def test_a_share_sentences_line_leads_with_its_own_metric() -> None:
    cell = {"scenario": "rolling-bounce", "members": 12, "workload": "1x4-busy", "error": None,
            "wire": [{}, {}, {}],
            "checks": {"lag_peak": False, "excess_lag_record_s": True},
            "medians": {"lag_peak": {"sim": 19, "wire": 56},
                        "excess_lag_record_s": {"sim": 21.2, "wire": 5.9}}}
    note = share_calibration_note("rolling-bounce", 12, [SHARE], cells=[cell], cal=CAL,
                                  workload="1x4-busy", metric="lag_record_s")
    # the sentence is on excess lag (the tables' lag_record_s): that check first, then the
    # row's verdict over every metric, which a raw lag peak missed; a pair that passes only
    # because both sides are under the floor says so with its raw ratio, never "within 2x"
    assert ("simulated (the calibration's own seeds) / measured: on this sentence's metric, "
            "excess lag record s 21.2 / 5.9 "
            "(3.59x; floor 50): both under the floor; lag peak 19 / 56") in note
    assert note.endswith("; all metrics: not within 2x: lag peak; both under the floor: "
                         "excess lag record s")
    # a sentence on the missed metric's own figure says so
    cell["checks"]["excess_lag_peak"] = False
    cell["medians"]["excess_lag_peak"] = {"sim": 1, "wire": 300}
    assert "on this sentence's metric, excess lag peak 1 / 300: not within 2x" in \
        share_calibration_note("rolling-bounce", 12, [SHARE], cells=[cell], cal=CAL,
                               metric="lag_peak")
    # no metric (or one the calibration has no figure of): the row as before
    assert "this sentence" not in share_calibration_note("rolling-bounce", 12, [SHARE],
                                                         cells=[cell], cal=CAL,
                                                         metric="stall_ms")


def test_the_report_gives_a_share_sentence_the_share_calibration_line() -> None:
    c = Claim("share-rolling", "text", "cmd", "lag_record_s", "rolling-bounce", 12, SHARE,
              KIP848, "1x4-poison")
    note = calibration_note(c)
    assert "uncalibrated (share:simple)" in note
    # never the consumer groups' rolling-bounce calibration at another size
    assert "6 members" not in note
    # a cell the package's share calibration has (lab/data/share_calibration.json, written by
    # lab calibrate --share --save): its row, read from the file
    c = Claim("equal-capacity", "text", "cmd", "resource_downtime_ms", "bounce", 4, SHARE,
              KIP848, "1x12-busy")
    assert calibration_note(c).startswith(
        "Calibration against real clients: share:simple against real share consumers "
        "(confluent-kafka 2.16.1 ShareConsumer (librdkafka 2.16.0), preview), bounce at 4 "
        "members on 1x12-busy (3 wire runs, each run at its seed's drawn down_ms)")


def test_the_command_prints_the_sections_of_a_rendered_directory(tmp_path: Path,
                                                                  capsys: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = [_run(SHARE, "1x4-busy", s, lag_record_s=1.0, messages=10) for s in range(2)]
    runs += [_run(KIP848, "1x12-busy", s, lag_record_s=2.0, messages=5) for s in range(2)]
    (tmp_path / "runs").mkdir()
    pq.write_table(pa.Table.from_pylist(runs), tmp_path / "runs" / "part-0.parquet")
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "## Share groups: the same members on either topic" in out and "## Messages" in out
    assert main([str(tmp_path / "nowhere")]) == 1
    assert main([]) == 2


def test_head_of_line_blocking_is_read_from_the_controls_clean_against_poison(
        tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from groupcoord.lab.share_report import attach_window_seconds, head_of_line_rows

    clean = json.dumps({"records_per_s": 60, "max_poll_records": 100})
    poison = json.dumps({"records_per_s": 60, "max_poll_records": 100, "poison_rate": 0.0002,
                         "poison_attempt_ms": 2000})
    locked = json.dumps({"records_per_s": 60, "max_poll_records": 100, "poison_rate": 0.0002,
                         "share_lock_duration_ms": 1500})
    runs = [_run(p, wl, s, scenario="bounce", size=4, run_id=f"{p}{wl}{s}", work=work,
                 control_lag_record_s=lag * (s + 1))
            for p in (SHARE, KIP848) for s in range(3)
            for wl, work, lag in (("1x4-busy", clean, 600.0), ("1x4-poison", poison, 60_000.0),
                                  ("1x4-poison-lock", locked, 90_000.0))]
    # each run's one disturbance window lasts 50 s per (seed + 1): a mean lag of 12, 1,200, 1,800
    windows = [{"run_id": r["run_id"], "disturbance": "bounce", "at_ms": 10_000,
                "closed_ms": 10_000 + 50_000 * (r["seed"] + 1), "cut_ms": None} for r in runs]
    windows += [{"run_id": r["run_id"], "disturbance": "initial-join", "at_ms": 0,
                 "closed_ms": 9_000, "cut_ms": None} for r in runs]
    pq.write_table(pa.Table.from_pylist(windows), tmp_path / "part-0.parquet")
    attach_window_seconds(runs, tmp_path)
    assert {r["window_s"] for r in runs if r["seed"] == 1} == {100.0}
    rows = head_of_line_rows(runs)
    by = {(r[2], r[3]): r[4:] for r in rows}
    assert by[(KIP848, "1x4-busy \u2192 1x4-poison")] == ["12", "1,200"]
    assert by[(SHARE, "1x4-busy \u2192 1x4-poison-lock")] == ["12", "1,800"]
    assert len(rows) == 4  # the clean workload is no poison row of its own
    assert "head-of-line blocking" in share_sections_md(runs)


def test_head_of_line_rows_of_scenarios_outside_the_built_in_order_sort_by_name() -> None:
    """Scenarios the share order does not list (the owner grids') come after it by name, not
    in a set's order: the page's rows were shuffled from one report to the next."""
    from groupcoord.lab.share_report import head_of_line_rows

    clean = json.dumps({"records_per_s": 60})
    poison = json.dumps({"records_per_s": 60, "poison_rate": 0.0002})
    names = ["owner-kill", "a-crash", "owner-crash", "z-kill"]
    runs = [_run(SHARE, wl, s, scenario=sc, size=4, run_id=f"{sc}{wl}{s}", work=work,
                 control_lag_record_s=100.0, window_s=10.0)
            for sc in names for s in range(2)
            for wl, work in (("1x4-busy", clean), ("1x4-poison", poison))]
    assert [r[0] for r in head_of_line_rows(runs)] == sorted(names)


def test_share_page_defines_its_metrics_and_says_a_zero_metric_once() -> None:
    runs = [_run(SHARE, "1x4-busy", s, stall_ms=0, lag_record_s=1.0) for s in range(5)]
    runs += [_run(KIP848, "1x12-busy", s, stall_ms=0, lag_record_s=9.0) for s in range(5)]
    md = share_sections_md(runs)
    assert "## Share grids: definitions" in md
    # lag is processed-based, not the broker's share lag; a partition held at the lock limit
    # is stopped (records there, none deliverable), as a partition without a member is
    assert "not the broker's share lag" in md
    assert "held at the record-lock limit" in md and "none that can be delivered" in md
    assert "no revocation" in md
    assert "Stall is 0 in every cell of every share grid on this page (10 runs)" in md
    # one stalled run: the page no longer says stall is 0 everywhere
    runs[0]["stall_ms"] = 250
    assert "Stall is 0 in every cell" not in share_sections_md(runs)


def test_the_poison_cost_of_each_group_type_is_read_from_the_workload() -> None:
    from groupcoord.lab.share_report import poison_cost_md, poison_cost_rows

    poison = json.dumps({"poison_rate": 0.0002, "poison_attempt_ms": 2000,
                         "poison_backoff_ms": 1000})
    locked = json.dumps({"poison_rate": 0.0002, "poison_attempt_ms": 2000,
                         "poison_backoff_ms": 1000, "share_lock_duration_ms": 1500})
    runs = [_run(SHARE, "1x4-poison", 0, work=poison), _run(KIP848, "1x4-poison", 0, work=poison),
            _run(SHARE, "1x4-poison-lock", 0, work=locked),
            _run(SHARE, "1x4-busy", 0, work=json.dumps({"records_per_s": 60}))]
    rows = dict((n, (c, s)) for n, c, s in poison_cost_rows(runs))
    # 5 attempts of 2 s and 4 back-offs of 1 s against 5 deliveries of 2 s, no back-off
    assert rows["1x4-poison"] == ("5 \u00d7 2 s + 4 \u00d7 1 s back-off = 14 s",
                                  "5 \u00d7 2 s = 10 s")
    # share-only workload: no consumer cost; the lock shorter than the attempt is said
    assert rows["1x4-poison-lock"][0] == "" and "1.5 s lock" in rows["1x4-poison-lock"][1]
    assert "1x4-busy" not in rows
    md = poison_cost_md(runs)
    assert "FixedBackOff(0, 9)" in md and "share groups only" in md
    # without a back-off both pay only their attempts
    free = json.dumps({"poison_rate": 0.0002, "poison_attempt_ms": 2000})
    (_, c, _s), = poison_cost_rows([_run(KIP848, "1x4-poison", 0, work=free)])
    assert c == "5 \u00d7 2 s = 10 s"


def test_the_share_page_prints_the_brokers_share_lag_beside_the_processed_lag() -> None:
    from groupcoord.lab.share_report import share_lag_rows

    runs = [_run(SHARE, "1x4-busy", s, lag_peak=10 + s, control_lag_peak=5) for s in range(3)]
    for i, r in enumerate(runs):
        r["share_lag_peak"] = 100 + i
    runs.append(_run(KIP848, "1x4-busy", 0, lag_peak=50, control_lag_peak=12))
    rows = share_lag_rows(runs)
    assert len(rows) == 1  # share cells only: a consumer group has no share-partition start
    (row,) = rows
    assert row[3] == "16 (15\u201317)" and row[4] == "101 (100\u2013102)" and row[5] == "3"
    assert "end offset \u2212 SPSO" in share_sections_md(runs)


def test_a_share_groups_redeliveries_are_split_processed_again_and_never_processed(
        tmp_path: Path) -> None:
    """A share run's records handed out again that no application had processed (``sim.share``
    counts them apart) are read from its summary into their own column beside records
    processed again, which alone the tables mark; runs without the split say so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from groupcoord.lab.share_report import attach_share_lag, redelivery_md, redelivery_rows
    from groupcoord.sim.runner import build_simulation
    from groupcoord.sim.share import UNPROCESSED, ShareSettings, ShareSimulation
    from tests.sim_support import ok

    scenario = tmp_path / "leave.toml"
    scenario.write_text('name = "leave"\n[group]\nmembers = 3\ntopics = { foo = 3 }\n'
                        '[workload]\nrecords_per_s = 40\nprocessing_ms = 20.0\n'
                        '[[events]]\nat_ms = 20000\nkind = "crash"\nmember = "c2"\n')
    summaries = []
    for seed in (1, 2):
        sim = build_simulation(str(scenario), seed, SHARE)
        assert isinstance(sim, ShareSimulation)
        sim.settings = ShareSettings(lock_duration_ms=15_000, poison_rate=0.02)
        summaries.append(ok(sim.run()).summary)
    never = [int(s["work"][UNPROCESSED]) for s in summaries]
    assert sum(never) > 0  # a crashed member's unreached records, batches behind poison
    table = tmp_path / "runs"
    table.mkdir()
    pq.write_table(pa.table({"run_id": ["a", "b"],
                             "summary_json": [json.dumps(s) for s in summaries]}),
                   table / "part.parquet")
    runs = [_run(SHARE, "1x3", s, scenario="crowd-crash", size=3, run_id=k,
                 records_reprocessed=s) for s, k in ((4, "a"), (6, "b"))]
    runs.append(_run(KIP848, "1x3", 0, scenario="crowd-crash", size=3, run_id="c",
                     records_reprocessed=200))
    attach_share_lag(runs, table)
    assert [r.get(UNPROCESSED) for r in runs] == [*never, None]
    (row,) = redelivery_rows(runs)  # the share cell only
    lo, hi = sorted(never)
    assert row[3] == "5 (4\u20136)"
    assert row[4] == (str(lo) if lo == hi else f"{(lo + hi) / 2:g} ({lo}\u2013{hi})")
    assert "never processed (whole run)" in redelivery_md(runs)
    assert "records handed out again" in share_sections_md(runs)
    # runs from before the split: the page says their count holds both
    old = [dict(r) for r in runs]
    for r in old:
        r.pop(UNPROCESSED, None)
    assert "predate the split" in redelivery_md(old)


def test_an_owner_lost_is_shown_as_a_lost_host_beside_a_process_kill() -> None:
    """owner-crash (a lost host) and owner-kill (a process kill) side by side per cell and
    protocol, with the page's text on what each is and which deployments see which."""
    from groupcoord.lab.share_report import KILL_TEXT, kill_md, kill_rows

    runs = []
    for s in range(3):
        runs += [_run(SHARE, "1x4-busy80", 10 + s, scenario="owner-crash", lag_peak=400 + s,
                      lag_record_s=1_700.0, resource_downtime_ms=5_000, share_lag_peak=2_000),
                 _run(SHARE, "1x4-busy80", 20 + s, scenario="owner-kill", lag_peak=0,
                      lag_record_s=12.0, resource_downtime_ms=0, share_lag_peak=30 + s),
                 _run(KIP848, "1x4-busy80", 10 + s, scenario="owner-crash", lag_peak=3_800,
                      lag_record_s=235_000.0, resource_downtime_ms=47_800),
                 _run(KIP848, "1x4-busy80", 20 + s, scenario="owner-kill", lag_peak=3_800,
                      lag_record_s=235_000.0, resource_downtime_ms=47_800)]
    # a cell with only one of the two is no row
    runs.append(_run(SHARE, "1x4-busy", 1, scenario="owner-crash", lag_peak=1))
    rows = {(r[1], r[2]): r[3:] for r in kill_rows(runs)}
    assert set(rows) == {("1x4-busy80", SHARE), ("1x4-busy80", KIP848)}
    assert rows[("1x4-busy80", SHARE)] == ["1,700 / 12", "401 (400\u2013402) / 0", "5 / 0",
                                           "2,000 / 31 (30\u201332)"]
    assert rows[("1x4-busy80", KIP848)][3] == "- / -"  # a consumer group has no share lag
    md = kill_md(runs)
    assert md.startswith(KILL_TEXT)
    assert "lost host" in md and "process kill" in md and "session timeout" in md
    assert "releases its" in KILL_TEXT and "OOM kill" in KILL_TEXT
    assert "lost host against process kill" in share_sections_md(runs)


def test_the_consumer_groups_back_off_0_column_stands_beside_the_1_s_one() -> None:
    """The poison workload with the consumer group's back-off at 0 beside the 1 s one and the
    share group's, on the seeds the back-off-0 cell ran (paired), excess and the controls'
    mean lag (the head-of-line cost by itself)."""
    from groupcoord.lab.share_report import backoff_md, backoff_rows

    runs = []
    for s in range(6):  # the back-off-0 cell ran 5 seeds: the sixth is in no column
        common = {"scenario": "bounce", "size": 4, "window_s": 100.0}
        runs += [_run(SHARE, "1x4-poison", s, lag_peak=2, lag_record_s=4.0,
                      resource_downtime_ms=0, control_lag_record_s=1_400.0, **common),
                 _run(KIP848, "1x4-poison", s, lag_peak=90 + s, lag_record_s=200.0,
                      resource_downtime_ms=5_000, control_lag_record_s=4_844_500.0, **common)]
        if s < 5:
            runs.append(_run(KIP848, "1x4-poison-b0", s, lag_peak=80, lag_record_s=150.0,
                             resource_downtime_ms=5_000, control_lag_record_s=1_154_700.0,
                             **common))
    rows = {r[2]: r[3:] for r in backoff_rows(runs)}
    assert rows["excess lag peak (records)"] == ["2", "92 (90\u201394)", "80"]
    assert rows["control's mean lag over the windows (records)"] == ["14", "48,445", "11,547"]
    assert rows["resource downtime (partition·s)"] == ["0", "5", "5"]
    md = backoff_md(runs)
    assert "FixedBackOff(0, 9)" in md and "10 s instead of 14 s" in md
    assert "back-off at 0" in share_sections_md(runs)
    # no back-off-0 cell: no table
    assert backoff_rows([r for r in runs if r["workload"] != "1x4-poison-b0"]) == []


def test_every_share_lag_peak_cell_carries_the_brokers_share_lag() -> None:
    """The verdict tables' share lag-peak cells get the broker's share lag peak (raw) of the
    same seeds beside the processed-based excess peak; no other cell does."""
    from types import SimpleNamespace

    from groupcoord.lab.share_report import broker_lag_note

    runs = [_run(SHARE, "1x4-busy", s, scenario="crowd-crash", share_lag_peak=18 + s)
            for s in range(4)]
    runs += [_run(SHARE, "1x4-poison", s, scenario="crowd-crash", share_lag_peak=1_800)
             for s in range(4)]  # the same seeds on another workload: not this cell's
    runs += [_run(KIP848, "1x4-busy", s, scenario="crowd-crash") for s in range(4)]
    note = broker_lag_note(runs)
    row = SimpleNamespace(scenario="crowd-crash", size=12, workload="1x4-busy")
    assert note("lag_peak", SHARE, row, [0, 1, 2]) == "broker's share lag peak (raw) 19 (18\u201320)"
    assert note("lag_record_s", SHARE, row, [0, 1, 2]) == ""
    assert note("lag_peak", KIP848, row, [0, 1, 2]) == ""
    assert note("lag_peak", SHARE, row, [7]) == ""  # no run of that seed


def test_the_verdict_tables_print_the_brokers_share_lag_in_the_share_lag_peak_cell() -> None:
    """lab.report's verdict tables (Markdown and HTML) take the share report's note: the
    share column's lag-peak cell carries the broker's share lag, the consumer column's not."""
    from groupcoord.lab.report import verdict_html, verdict_md
    from groupcoord.lab.share_report import broker_lag_note
    from groupcoord.lab.verdict import grid_verdict

    grid = {"name": "owner", "protocols": [SHARE, KIP848], "metrics": ["lag_peak"]}
    runs = []
    for s in range(5):
        runs.append(_run(SHARE, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0,
                         caught_up=True, lag_peak=float(s), control_lag_peak=18.0,
                         share_lag_peak=1_800 + s))
        runs.append(_run(KIP848, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0,
                         caught_up=True, lag_peak=2_800.0 + s, control_lag_peak=12.0))
    g = grid_verdict(grid, runs)
    note = broker_lag_note(runs)
    md = verdict_md(g, cell_note=note)
    (line,) = [x for x in md.splitlines() if "owner-crash" in x]
    share_cell, consumer_cell = line.split(" | ")[4:6]
    assert "broker's share lag peak (raw) 1,802 (1,800\u20131,804)" in share_cell
    assert "broker" not in consumer_cell
    assert "broker&#x27;s share lag peak (raw) 1,802" in verdict_html(g, cell_note=note)
    assert "broker" not in verdict_md(g)  # without the note: the table as before


def test_a_cells_note_is_a_wrapping_line_of_its_own_in_html() -> None:
    """The first screen at 1,400 px: a share lag-peak cell's broker note, on the range's
    unbreakable line, pushed the verdict column off the right edge; it is a line of its own
    (``small.note``, which wraps), the range's line stays as it was."""
    from groupcoord.lab.report import verdict_html
    from groupcoord.lab.share_report import broker_lag_note
    from groupcoord.lab.verdict import grid_verdict

    grid = {"name": "owner", "protocols": [SHARE, KIP848], "metrics": ["lag_peak"]}
    runs = [_run(SHARE, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0, caught_up=True,
                 lag_peak=float(s), control_lag_peak=18.0, share_lag_peak=1_800 + s)
            for s in range(5)]
    runs += [_run(KIP848, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0,
                  caught_up=True, lag_peak=2_800.0 + s, control_lag_peak=12.0)
             for s in range(5)]
    page = verdict_html(grid_verdict(grid, runs), cell_note=broker_lag_note(runs))
    assert ("<br><small>0\u20134</small><br><small class='note'>broker&#x27;s share lag peak "
            "(raw) 1,802 (1,800\u20131,804)</small>") in page


def test_the_brokers_share_lag_is_a_column_of_its_own_and_how_to_read_defines_it() -> None:
    """The eleventh outside share review: an operator's dashboard shows the broker's share lag
    (1,812 where the excess lag peak is 2), the page had it only in brackets. The verdict
    tables of a share grid carry it as a column of its own, on the lag-peak row, over the
    same seeds; "How to read the tables" says what it is."""
    from groupcoord.lab.report import method_text, verdict_html, verdict_md
    from groupcoord.lab.share_report import BROKER_LAG_HEAD, broker_lag_column
    from groupcoord.lab.verdict import grid_verdict

    grid = {"name": "owner", "protocols": [SHARE, KIP848], "metrics": ["lag_peak",
                                                                        "lag_record_s"]}
    runs = []
    for s in range(5):
        runs.append(_run(SHARE, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0,
                         caught_up=True, lag_peak=float(s), control_lag_peak=18.0,
                         lag_record_s=1.0, share_lag_peak=1_800 + s))
        runs.append(_run(KIP848, "1x4-busy", s, scenario="owner-crash", fault_rate=0.0,
                         caught_up=True, lag_peak=2_800.0 + s, control_lag_peak=12.0,
                         lag_record_s=900.0))
    g = grid_verdict(grid, runs)
    md = verdict_md(g, extra_column=broker_lag_column(runs))
    head = next(x for x in md.splitlines() if x.startswith("| scenario"))
    cols = [x.strip() for x in head.strip("|").split("|")]
    assert cols[-2:] == [BROKER_LAG_HEAD, "verdict"]
    rows = [x for x in md.splitlines() if x.startswith("| ") and not x.startswith("| scenario")]
    cells = {r.split(" | ")[3]: [x.strip() for x in r.strip("|").split("|")][-2] for r in rows}
    assert cells["excess lag peak (records)"] == "1,802 (1,800\u20131,804)"
    assert cells["excess lag (record·s)"] == ""
    assert f"<th>{BROKER_LAG_HEAD.replace(chr(39), '&#x27;')}</th>" in verdict_html(
        g, extra_column=broker_lag_column(runs))
    # a grid of consumer groups only: no such column
    plain = grid_verdict({"name": "c", "protocols": [KIP848], "metrics": ["lag_peak"]},
                         [r for r in runs if r["protocol"] == KIP848])
    assert BROKER_LAG_HEAD not in verdict_md(plain, extra_column=broker_lag_column(runs))
    text = " ".join(method_text(runs, [g]))
    assert "log end offset minus the share-partition start offset" in text
    assert BROKER_LAG_HEAD in text
