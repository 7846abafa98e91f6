"""``groupcoord lab calibrate``: the lab's metrics from real clients' logs, the comparison with
the simulator, bad parameters, and one small real-client calibration end to end.

The metric tests build a :class:`WireRun` by hand (logs of callbacks and records, a producer's
counts), so each definition is checked on a case whose answer is known. The end-to-end test
runs ``groupcoord serve`` and librdkafka consumers in their own processes: it asserts that the
comparison ran and that what was measured is sane, and that the 2x check is reported; it does
not assert the figures (they depend on the machine's load).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from groupcoord.lab.calibrate import (
    CHECKED,
    calibrate,
    calibration_scenario,
    compare,
    growth_drawn,
    median_windows,
    split_rolling_bounces,
    summarize,
    within_2x,
)
from groupcoord.lab.wire import WireRun, WireWindow, WireWorkload, _actions
from groupcoord.lab.wire_metrics import convergence, steady_lag, window_metrics
from groupcoord.sim.scenario import Scenario, load_scenario, start_offsets_ms

#: Whether the simulator's members do work (``sim.workload``): the lag metrics are simulated.
WORK_MODEL = "workload" in {f.name for f in fields(Scenario)}

GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]

T0 = 1_000.0


def _run(logs: dict[str, list[dict[str, Any]]], *, end: float = 20.0,
         windows: list[WireWindow] | None = None, rate: float = 10.0,
         lifetimes: dict[str, list[tuple[float, float | None]]] | None = None,
         resources: tuple[str, ...] = ("foo-0", "foo-1"),
         groups: list[list[str]] | None = None) -> WireRun:
    """Two partitions produced at ``rate`` records/s each from T0, in 0.1 s steps."""
    produced = {r: [(T0 + k / 10, int(k / 10 * rate)) for k in range(int(end * 10) + 1)]
                for r in resources}
    for v in logs.values():
        v.sort(key=lambda d: d["t"])
    return WireRun("classic:eager", "consumer", T0, T0 + end,
                   windows or [WireWindow("initial-join", 0.0, 0.0), WireWindow("bounce", 10.0, 12.0)],
                   produced, logs, lifetimes or {n: [(T0, None)] for n in logs},
                   list(resources), groups or [list(resources)], rate, T0, 10.0)


def _recs(member: str, tp: str, first: int, last: int, start: float, step: float
          ) -> list[dict[str, Any]]:
    topic, _, p = tp.rpartition("-")
    return [{"t": T0 + start + i * step, "e": "rec", "tp": topic, "p": int(p), "o": o}
            for i, o in enumerate(range(first, last + 1))]


def test_convergence_is_when_every_partition_has_one_live_owner_after_the_disturbance() -> None:
    logs = {
        "c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0]]},
               {"t": T0 + 10.5, "e": "revoke", "parts": [["foo", 0]]},
               {"t": T0 + 13.0, "e": "assign", "parts": [["foo", 0]]}],
        "c2": [{"t": T0 + 1.2, "e": "assign", "parts": [["foo", 1]]}],
    }
    run = _run(logs)
    conv = convergence(run)
    assert conv[0] == pytest.approx(T0 + 1.2)  # initial join: the second member's assignment
    assert conv[1] == pytest.approx(T0 + 13.0)  # foo-0 unowned from 10.5 to 13
    rows = window_metrics(run)
    assert rows[1]["time_to_converge_ms"] == 3000
    assert rows[1]["converged"] is True


def test_a_window_already_converged_closes_when_the_disturbance_ends() -> None:
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0], ["foo", 1]]}]}
    run = _run(logs, resources=("foo-0", "foo-1"))
    assert convergence(run)[1] == pytest.approx(T0 + 12.0)  # settle at 12 s


def test_a_member_alive_but_not_yet_assigned_keeps_the_group_unconverged() -> None:
    logs = {
        "c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0], ["foo", 1]]},
               {"t": T0 + 14.0, "e": "revoke", "parts": [["foo", 1]]}],
        "c2": [{"t": T0 + 12.0, "e": "start"},
               {"t": T0 + 15.0, "e": "assign", "parts": [["foo", 1]]}],
    }
    run = _run(logs, lifetimes={"c1": [(T0, None)], "c2": [(T0 + 12.0, None)]})
    assert convergence(run)[1] == pytest.approx(T0 + 15.0)


def test_a_sticky_assignment_balanced_in_total_but_not_per_topic_is_converged() -> None:
    # cooperative-sticky keeps each member's partitions: c1 has all of foo, c2 all of bar
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0], ["foo", 1]]}],
            "c2": [{"t": T0 + 1.5, "e": "assign", "parts": [["bar", 0], ["bar", 1]]}]}
    run = _run(logs, resources=("foo-0", "foo-1", "bar-0", "bar-1"),
               groups=[["foo-0", "foo-1"], ["bar-0", "bar-1"]])
    assert convergence(run)[0] == pytest.approx(T0 + 1.5)
    # but a member with less than its share of the total is not converged
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0], ["foo", 1],
                                                             ["bar", 0]]}],
            "c2": [{"t": T0 + 1.5, "e": "assign", "parts": [["bar", 1]]}]}
    run = _run(logs, resources=("foo-0", "foo-1", "bar-0", "bar-1"),
               groups=[["foo-0", "foo-1"], ["bar-0", "bar-1"]])
    assert convergence(run) == [None, None]


def test_lag_counts_produced_minus_distinct_processed_and_reprocessing_is_counted() -> None:
    # foo-0: 10 records/s, processed in time up to 10 s; c1 gives foo-0 back at 10.05 s (an
    # eager revocation, foo-1 too) and gets both again at 10.9 s from the committed position
    # 95, so at 11 s it processes records 95..99 a second time and the backlog (100..109) at
    # once; then nothing again until the window closes at 12 s.
    recs = (_recs("c1", "foo-0", 0, 99, 0.1, 0.1) + _recs("c1", "foo-0", 95, 109, 11.0, 0.001)
            + _recs("c1", "foo-1", 0, 99, 0.1, 0.1) + _recs("c1", "foo-1", 100, 199, 11.0, 0.09))
    both = [["foo", 0], ["foo", 1]]
    logs = {"c1": [{"t": T0 + 0.05, "e": "assign", "parts": both},
                   {"t": T0 + 10.05, "e": "revoke", "parts": both},
                   {"t": T0 + 10.9, "e": "assign", "parts": both}, *recs]}
    run = _run(logs, end=20.0)
    rows = window_metrics(run)
    bounce = rows[1]
    assert bounce["records_reprocessed"] == 5
    assert rows[0]["records_reprocessed"] == 0
    # foo-0's lag grows from ~0 at 10 s to ~10 at 11 s, drops to 0, grows to ~10 at 12 s:
    # peak ~10, about 2 x 5 record-s, plus foo-1's lag while nobody owned it
    assert 9 <= bounce["lag_peak"] <= 20
    assert 8 <= bounce["lag_record_s"] <= 22
    # nobody owned anything from 10.05 to 10.9 s while records waited: the stall
    assert 800 <= bounce["stall_ms"] <= 900


def test_records_processed_twice_count_in_the_window_of_the_assignment_that_led_to_them(
) -> None:
    # c2 is killed at 5 s holding foo-1 (processed to offset 49, committed to 40); at 10.5 s
    # c1 is given foo-1 and the group converges at that callback (the bounce window closes at
    # 12 s, when its disturbance is over); c1 reprocesses 40..49 only at 12.5-12.95 s, after
    # the window closed. The simulator counts them at the assignment: so does the wire.
    recs0 = _recs("c1", "foo-0", 0, 199, 0.1, 0.1)
    recs1 = _recs("c2", "foo-1", 0, 49, 0.1, 0.1)
    again = _recs("c1", "foo-1", 40, 199, 12.5, 0.05)
    logs = {"c1": [{"t": T0 + 0.05, "e": "assign", "parts": [["foo", 0]]},
                   {"t": T0 + 10.5, "e": "assign", "parts": [["foo", 1]]}, *recs0, *again],
            "c2": [{"t": T0 + 0.05, "e": "assign", "parts": [["foo", 1]]}, *recs1,
                   {"t": T0 + 5.0, "e": "closed"}]}
    run = _run(logs, end=25.0, lifetimes={"c1": [(T0, None)], "c2": [(T0, T0 + 5.0)]},
               windows=[WireWindow("initial-join", 0.0, 0.0), WireWindow("crash", 5.0, 12.0)])
    crash = window_metrics(run)[1]
    assert crash["records_reprocessed"] == 10
    # c1 owned foo-0 all along: foo-1's lag is the crash's cost, not a stall
    assert crash["stall_ms"] == 0
    assert crash["lag_peak"] >= 50


def test_a_connect_tasks_start_and_stop_are_stall_as_in_the_simulator() -> None:
    """A Connect worker owns its task from the assignment, but the task processes nothing
    until its start time passed (its ``task-start`` line) and nothing once revoked (it is
    stopping): an eager round with 1 s stops and starts stalls the group from the revocation
    to the task's start, as the simulator counts it (its stall is the task-time input). The
    window here lasts until the disturbance ends at 12.5 s; one that closes at the assignment
    callbacks (convergence) sees only the stop, as it sees no task restart after it."""
    recs = [{"t": T0 + 1.1 + k / 10, "e": "rec", "tp": "A-0", "o": k} for k in range(89)]
    recs += [{"t": T0 + 12.0 + k / 100, "e": "rec", "tp": "A-0", "o": 89 + k} for k in range(30)]
    logs = {"w1": [{"t": T0 + 0.05, "e": "assign", "parts": ["A", "A-0"]},
                   {"t": T0 + 1.05, "e": "task-start", "tp": "A-0"},
                   {"t": T0 + 10.0, "e": "revoke", "parts": ["A", "A-0"]},
                   {"t": T0 + 11.0, "e": "task-stop", "tp": "A-0"},
                   {"t": T0 + 11.2, "e": "assign", "parts": ["A", "A-0"]},
                   {"t": T0 + 12.2 - 0.2, "e": "task-start", "tp": "A-0"}, *recs]}
    for v in logs.values():
        v.sort(key=lambda d: d["t"])
    run = WireRun("classic-connect:eager", "connect", T0, T0 + 20.0,
                  [WireWindow("initial-join", 0.0, 0.0), WireWindow("bounce", 9.5, 12.5)], {},
                  logs, {"w1": [(T0, None)]}, ["A-0"], [["A"], ["A-0"]], 10.0, T0, 0.0)
    bounce = window_metrics(run)[1]
    # revoked at 10.0 s, started again at 12.0 s: 2 s without a running task, with lag
    # (owned again from 11.2 s: counting ownership alone would say 1.2 s)
    assert 1_950 <= bounce["stall_ms"] <= 2_050


def test_stall_is_time_with_lag_and_no_live_owner_not_a_member_waiting_for_records() -> None:
    # c1 owns foo-0 all along and keeps up at 10 records/s until 10 s, then processes nothing
    # until 14 s (its records are late): it is paused, owning a partition with lag, but the
    # group is not stalled: the simulator's stall is "no processor had anything to process".
    recs = _recs("c1", "foo-0", 0, 99, 0.1, 0.1) + _recs("c1", "foo-0", 100, 149, 14.0, 0.01)
    logs = {"c1": [{"t": T0 + 0.05, "e": "assign", "parts": [["foo", 0]]}, *recs]}
    run = _run(logs, end=20.0, resources=("foo-0",))
    bounce = window_metrics(run)[1]
    assert bounce["stall_ms"] == 0
    # last record at 10.0 s, active until 10.25 s; lag > 0 from ~10.1 s; the window closes
    # when the disturbance is over (12 s): foo-0 owned and paused ~1.75 s
    assert 1.65 <= bounce["paused_partition_s"] <= 1.85
    # the same member revoked at 10.3 s and assigned again at 10.6 s: 0.3 s of stall
    logs = {"c1": [{"t": T0 + 0.05, "e": "assign", "parts": [["foo", 0]]},
                   {"t": T0 + 10.3, "e": "revoke", "parts": [["foo", 0]]},
                   {"t": T0 + 10.6, "e": "assign", "parts": [["foo", 0]]}, *recs]}
    bounce = window_metrics(_run(logs, end=20.0, resources=("foo-0",)))[1]
    assert 280 <= bounce["stall_ms"] <= 320


def test_steady_lag_is_the_median_of_the_stable_period() -> None:
    recs = _recs("c1", "foo-0", 0, 299, 0.15, 0.1)  # every record 50 ms after its production
    logs = {"c1": [{"t": T0 + 0.05, "e": "assign", "parts": [["foo", 0]]}, *recs]}
    run = _run(logs, end=30.0, resources=("foo-0",),
               windows=[WireWindow("initial-join", 0.0, 0.0), WireWindow("bounce", 25.0, 25.0)])
    assert steady_lag(run) in (0.0, 1.0)


def test_within_2x_and_its_floor() -> None:
    assert "stall_ms" in CHECKED and "records_reprocessed" in CHECKED
    assert within_2x("stall_ms", 26, 0)  # an eager barrier's tens of ms: below the floor
    assert not within_2x("stall_ms", 26, 12_160)
    assert not within_2x("records_reprocessed", 75, 0)
    assert within_2x("records_reprocessed", 75, 40)
    assert within_2x("lag_peak", 100, 199)
    assert not within_2x("lag_peak", 100, 201)
    assert within_2x("lag_peak", 0, 40)  # both below the floor
    assert not within_2x("lag_peak", 0, 400)
    assert within_2x("time_to_converge_ms", 2000, 1000)
    assert within_2x("lag_peak", None, 5) is None


def test_compare_leaves_out_the_initial_join_and_reports_every_checked_metric() -> None:
    sim = [{"disturbance": "initial-join", "at_ms": 0, "settled_ms": 0,
            "time_to_converge_ms": 100},
           {"disturbance": "bounce", "at_ms": 10_000, "settled_ms": 12_000,
            "time_to_converge_ms": 3_000, "lag_peak": 100, "lag_record_s": 150.0,
            "records_processed": 10}]
    wire = [dict(sim[0]), {"disturbance": "bounce", "at_ms": 10_000, "settled_ms": 12_000,
                           "time_to_converge_ms": 5_000, "lag_peak": 300,
                           "lag_record_s": 400.0, "records_processed": 12}]
    [c] = compare("classic:eager", sim, wire, steady=10.0)
    rows = {r["metric"]: r for r in c.rows}
    assert set(CHECKED) <= set(rows)
    assert rows["converge_after_ms"]["simulated"] == 1_000
    assert rows["converge_after_ms"]["measured"] == 3_000
    assert rows["converge_after_ms"]["within_2x"] is False
    assert rows["time_to_converge_ms"]["within_2x"] is True
    assert rows["lag_peak"]["within_2x"] is False
    # compared as measured: the model holds records in flight too (fetch_latency_ms)
    assert rows["lag_record_s"]["compared"] == pytest.approx(400.0)
    assert rows["lag_record_s"]["within_2x"] is False
    assert rows["records_processed"]["within_2x"] is None
    assert not c.checked_ok


def test_windows_of_several_runs_are_their_medians() -> None:
    def run(ttc: int | None, peak: int) -> list[dict[str, Any]]:
        return [{"disturbance": "initial-join", "at_ms": 0, "settled_ms": 0,
                 "time_to_converge_ms": 100, "lag_peak": 0, "lag_record_s": 0.0},
                {"disturbance": "scale-out", "at_ms": 30_000, "settled_ms": 30_000,
                 "time_to_converge_ms": ttc, "lag_peak": peak, "lag_record_s": peak * 2.0}]
    med = median_windows([run(5_000, 100), run(10_000, 300), run(16_000, 200)])
    assert med[1]["time_to_converge_ms"] == 10_000
    assert med[1]["lag_peak"] == 200
    assert med[1]["lag_record_s"] == pytest.approx(400.0)
    assert med[1]["runs"] == 3
    # a run that never converged counts as the longest; most of them: no median
    assert median_windows([run(5_000, 1), run(None, 1), run(9_000, 1)])[1][
        "time_to_converge_ms"] == 9_000
    assert median_windows([run(5_000, 1), run(None, 1), run(None, 1)])[1][
        "time_to_converge_ms"] is None


def test_calibration_scenario_spreads_the_members_over_a_heartbeat_interval() -> None:
    sc = calibration_scenario(load_scenario("scale-out"), heartbeat_interval_ms=3_000)
    assert sc.start_spread_ms == 3_000
    offsets = start_offsets_ms(sc, 1)
    assert all(0 <= o < 3_000 for o in offsets) and len(set(offsets)) == len(offsets)
    assert offsets == start_offsets_ms(sc, 1) != start_offsets_ms(sc, 2)
    # the wire starts the initial members at the simulator's offsets for the same seed
    acts, _ = _actions(sc, 1)
    assert sorted(a[0] for a in acts if a[1] == "go")[:sc.members] == sorted(
        o / 1000 for o in offsets)


def test_a_topics_growth_is_drawn_per_seed_across_one_metadata_refresh_period() -> None:
    """The classic partition-added calibration grew the topic at 30 s, a whole number of
    10 s refresh periods after the members started, so every wire repeat measured the same
    refresh phase: the growth now moves by an offset drawn from the seed across one period,
    the same for the simulator's seed and the wire's paired repeat (the wire's actions too)."""
    sc = calibration_scenario(load_scenario("partition-added"), heartbeat_interval_ms=3_000)
    wl = WireWorkload(metadata_max_age_ms=10_000)
    (base,) = sc.events
    drawn = [growth_drawn(sc, wl, s).events[0] for s in range(1, 41)]
    assert all(e.kind == "add-partitions" and e.params == base.params for e in drawn)
    shifts = [e.at_ms - base.at_ms for e in drawn]
    assert all(0 <= d < 10_000 for d in shifts)
    assert len(set(shifts)) > 30 and min(shifts) < 2_500 and max(shifts) > 7_500  # spread
    assert growth_drawn(sc, wl, 7) == growth_drawn(sc, wl, 7)
    # the wire's action for the growth happens at the drawn time
    acts, _ = _actions(growth_drawn(sc, wl, 7), 7)
    grow = [a[0] for a in acts if a[1] not in ("go",)]
    assert (base.at_ms + shifts[6]) / 1000 in grow
    # a scenario without a topic's growth, or no refresh period, is left as it is
    other = calibration_scenario(load_scenario("scale-out"), heartbeat_interval_ms=3_000)
    assert growth_drawn(other, wl, 7) is other
    assert growth_drawn(sc, WireWorkload(metadata_max_age_ms=0), 7) is sc


def test_summary_is_the_mean_over_windows_and_the_worst_lag_peak() -> None:
    def window(at: int, ttc: int, peak: int) -> dict[str, Any]:
        return {"disturbance": "bounce", "at_ms": at, "settled_ms": at + 3_000,
                "time_to_converge_ms": ttc, "lag_peak": peak, "lag_record_s": 100.0}

    initial = {**window(0, 0, 0), "disturbance": "initial-join", "settled_ms": 0}
    sim = [initial, window(30_000, 8_000, 100), window(45_000, 3_256, 40)]
    wire = [initial, window(30_000, 8_000, 120), window(45_000, 13_000, 60)]
    comps = compare("consumer:uniform", sim, wire, steady=0.0)
    assert [c.rows[1]["within_2x"] for c in comps] == [True, False]  # converge_after_ms
    summary = summarize("consumer:uniform", comps)
    assert summary is not None and summary.disturbance == "bounce x2"
    rows = {r["metric"]: r for r in summary.rows}
    assert rows["converge_after_ms"]["simulated"] == pytest.approx((5_000 + 256) / 2)
    assert rows["converge_after_ms"]["measured"] == pytest.approx((5_000 + 10_000) / 2)
    assert rows["lag_peak"]["simulated"] == 100 and rows["lag_peak"]["measured"] == 120
    assert rows["records_processed"]["simulated"] is None  # missing in the windows


def test_stall_and_records_processed_twice_are_checked_per_window_and_in_the_summary() -> None:
    """Both are checked metrics: each window's row and the summary's say within 2x or not,
    with their floors (an eager barrier's tens of ms on either side is the same stall), and
    the command's table counts each of them over the protocols."""
    from groupcoord.lab.calibrate import ProtocolResult, format_table

    def window(at: int, stall: int, twice: int) -> dict[str, Any]:
        return {"disturbance": "crash", "at_ms": at, "settled_ms": at, "time_to_converge_ms":
                40_000, "lag_peak": 800, "lag_record_s": 20_000.0, "stall_ms": stall,
                "records_reprocessed": twice}

    initial = {**window(0, 0, 0), "disturbance": "initial-join"}
    sim = [initial, window(30_000, 25, 75), window(90_000, 30, 80)]
    wire = [initial, window(30_000, 0, 71), window(90_000, 1_500, 10)]
    comps = compare("classic:eager", sim, wire, steady=0.0)
    ok = [{r["metric"]: r["within_2x"] for r in c.rows} for c in comps]
    assert [(o["stall_ms"], o["records_reprocessed"]) for o in ok] == [(True, True),
                                                                       (False, False)]
    assert not comps[1].checked_ok and comps[0].checked_ok
    summary = summarize("classic:eager", comps)
    assert summary is not None
    rows = {r["metric"]: r for r in summary.rows}
    assert rows["stall_ms"]["measured"] == 750.0 and rows["stall_ms"]["within_2x"] is False
    assert rows["records_reprocessed"]["simulated"] == 77.5
    assert rows["records_reprocessed"]["within_2x"] is True  # 77.5 against 40.5
    table = format_table([ProtocolResult("classic:eager", comps, None, wire, sim, 0.0)])
    assert "  stall_ms within 2x for 0 of 1" in table
    assert "  records_reprocessed within 2x for 1 of 1" in table


def test_a_rolling_bounce_is_compared_as_its_bounces() -> None:
    from groupcoord.sim.scenario import load_scenario

    sc = load_scenario("rolling-bounce", 0)
    split = split_rolling_bounces(sc)
    [rb] = sc.events
    assert [(e.at_ms, e.kind, e["member"], e["down_ms"]) for e in split.events] == [
        (rb.at_ms + i * rb["interval_ms"], "bounce", f"c{i + 1}", rb["down_ms"])
        for i in range(sc.members)]


@pytest.mark.parametrize(("args", "field"), [
    (["--workload", "processing_ms=-1"], "processing_ms"),
    (["--workload", "bogus=1"], "bogus"),
    (["--workload", "records_per_s=x"], "records_per_s"),
    (["--workload", "max_poll_records=0"], "max_poll_records"),
    (["--protocol", "classic:nope"], "classic:nope"),
    (["--size", "0"], "size"),
    (["--heartbeat-interval-ms", "0"], "heartbeat-interval-ms"),
    (["--scenario", "coordinator-failover"], "coordinator-failover"),
    (["--scenario", "static-bounce"], "static"),
    (["--server-config", "nokey"], "--server-config"),
])
def test_bad_parameters_exit_2_naming_the_field(args: list[str], field: str) -> None:
    out = subprocess.run([*GROUPCOORD, "lab", "calibrate", *args], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert field in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1


SMALL = """
name = "calibrate-small"
description = "Three members on foo (6 partitions); c2 bounces."
[group]
members = 3
topics = { foo = 6 }
[[events]]
at_ms = 9000
kind = "bounce"
member = "c2"
down_ms = 1500
"""


def test_real_clients_calibration_on_a_small_case(tmp_path: Path) -> None:
    pytest.importorskip("confluent_kafka")
    scenario = tmp_path / "small.toml"
    scenario.write_text(SMALL)
    out = subprocess.run(
        [*GROUPCOORD, "lab", "calibrate", "--scenario", str(scenario), "--protocol",
         "classic:eager", "--protocol", "consumer:uniform", "--heartbeat-interval-ms", "1000",
         "--session-timeout-ms", "10000", "--workload", "records_per_s=10",
         "--workload", "processing_ms=5", "--tail-s", "1", "--json", "--quiet"],
        # about a minute on an idle machine, 83 s at a load of 15 on 2 cores: a generous
        # deadline for a loaded CI machine (the run's duration is not what is tested)
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout)
    assert [r["protocol"] for r in data["results"]] == ["classic:eager", "consumer:uniform"]
    for r in data["results"]:
        assert r["error"] is None
        assert isinstance(r["summary"]["checked_within_2x"], bool)
        [window] = r["windows"]
        assert window["disturbance"] == "bounce"
        rows = {row["metric"]: row for row in window["rows"]}
        for metric in CHECKED:
            assert rows[metric]["measured"] is not None, metric
            if metric in ("lag_peak", "lag_record_s") and not WORK_MODEL:
                assert rows[metric]["simulated"] is None  # idle simulated members
                continue
            assert rows[metric]["simulated"] is not None, metric
            assert isinstance(rows[metric]["within_2x"], bool), metric
        assert isinstance(window["checked_within_2x"], bool)
        bounce = r["wire_windows"][1]
        # sane measurements: the group converged after c2 came back, records were processed
        # during the window, lag stayed below what the whole window produced
        assert bounce["converged"] is True
        assert 1_500 <= bounce["time_to_converge_ms"] <= 60_000
        assert bounce["records_processed"] > 0
        produced = 6 * 10 * bounce["time_to_converge_ms"] / 1000
        assert 0 <= bounce["lag_peak"] <= produced
        assert bounce["resources_moved"] >= 1


def test_a_consumer_protocol_without_confluent_kafka_fails_naming_the_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from groupcoord.lab.wire import WireWorkload, run_wire
    from groupcoord.sim.scenario import parse_scenario

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # import raises ImportError
    sc = parse_scenario({"name": "x", "group": {"members": 1}})
    with pytest.raises(RuntimeError, match="confluent-kafka"):
        run_wire(sc, "classic:eager", WireWorkload())


# ----------------------------------------------------------------------------- the harness


class _FakeStdin:
    def __init__(self, proc: _FakeWorker) -> None:
        self.proc = proc
        self.written: list[tuple[str, bool]] = []

    def write(self, text: str) -> None:  # what was written, and whether the worker was ready
        assert self.proc.ready is not None
        self.written.append((text, self.proc.ready.is_set()))

    def flush(self) -> None:
        pass


class _FakeWorker:
    """What the harness sees of a Connect worker process: stdin, and stdout lines."""

    def __init__(self, lines: list[str]) -> None:
        self.stdout = iter(lines)
        self.stdin = _FakeStdin(self)
        self.ready: Any = None

    def poll(self) -> int | None:
        return None  # still running


def test_a_connect_worker_that_is_still_importing_goes_once_it_says_ready() -> None:
    """A worker process started ahead of its time may still be importing when its time comes
    (three workers started together took 8-9 s on the loaded machine): ``go`` waits for its
    ``ready`` line, so it does not join late by the rest of its imports, and says how late it
    went."""
    import threading
    import time

    from groupcoord.lab.wire import _Members, _Proc, _read_worker_stdout

    fake = _FakeWorker(["ready\n", "assigned: foo, foo-0\n"])
    proc = _Proc("c1", fake, ready=threading.Event())  # type: ignore[arg-type]
    fake.ready = proc.ready

    class _Run:
        def spawn(self, name: str) -> _Proc:
            return proc

    members = _Members(_Run())  # type: ignore[arg-type]
    members.prepare("c1")
    reader = threading.Timer(0.3, _read_worker_stdout, args=(proc,))
    reader.start()
    began = time.time()
    late = members.go("c1")
    reader.join()
    assert fake.stdin.written == [("go\n", True)]
    assert late > 0 and late <= time.time() - began + 0.01
    # the ready line is no ownership event; the callbacks after it are
    assert [d["e"] for d in proc.stdout_lines] == ["assign"]


def test_wire_connect_workers_get_the_simulators_member_ids(tmp_path: Path) -> None:
    """The new protocol's workers on the wire get the member ids the simulator gives its
    workers for the same seed, in the same start order: the coordinator chooses the worker
    that computes assignments (and its successor when it leaves) by member id order."""
    import itertools

    from groupcoord.lab.wire import WireWorkload, _RunContext
    from groupcoord.sim.engine import member_ids
    from groupcoord.sim.runner import simulate

    sc = calibration_scenario(load_scenario("scale-out"))
    res = simulate(sc, 7, "connect:cooperative", record_trace=True)
    started = [line.split("member ")[1].strip() for line in res.trace
               if line.split()[2:3] == ["start"]]
    assert len(started) == 6
    assert list(itertools.islice(member_ids(7), 6)) == started
    ctx = _RunContext("connect:cooperative", "127.0.0.1:1", sc, WireWorkload(), tmp_path, 0.0, 7)
    assert list(itertools.islice(ctx.member_ids, 6)) == started


def test_simulated_connect_workers_join_as_fast_as_ours_on_the_wire() -> None:
    """The calibration's simulated Connect workers send their first heartbeat 0.15-0.45 s after
    their process starts, as our worker does on the wire once the harness waits for its
    imports (it was 1.25-3.75 s while the harness made workers join late)."""
    from groupcoord.lab.calibrate import sim_workload_table
    from groupcoord.lab.wire import WireWorkload
    from groupcoord.sim.runner import simulate
    from groupcoord.sim.scenario import with_workload
    from groupcoord.sim.workload import parse_workload as parse_sim_workload

    sc = calibration_scenario(load_scenario("scale-out"))
    sc = with_workload(sc, parse_sim_workload("workload",
                                              sim_workload_table(WireWorkload(), True)))
    delays = []
    for seed in (1, 2, 3):
        res = simulate(sc, seed, "connect:cooperative", record_trace=True)
        started: dict[str, int] = {}
        for line in res.trace:
            t, _step, event, *rest = line.split()
            if event == "start" and int(t) >= 30_000:
                started[rest[0]] = int(t)
            elif event == "hb>" and rest and rest[0] in started:
                delays.append(int(t) - started.pop(rest[0]))
    assert len(delays) == 9
    assert all(150 <= d < 450 for d in delays), delays


def test_a_member_that_went_late_extends_its_disturbance_and_the_window_waits_for_it() -> None:
    """A scale-out whose new worker went 4 s late (still importing): its window lasts until the
    worker started, so it does not close at once on the old members (converged without it)."""
    from groupcoord.lab.wire import extend_windows

    windows = [WireWindow("initial-join", 0.0, 5.0), WireWindow("scale-out", 10.0, 10.0),
               WireWindow("bounce", 30.0, 33.0)]
    extend_windows(windows, 10.0, 14.0)
    assert [(w.at_s, w.settle_s) for w in windows] == [(0.0, 5.0), (10.0, 14.0), (30.0, 33.0)]
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": ["foo-0", "foo-1"]},
                   {"t": T0 + 14.5, "e": "revoke", "parts": ["foo-1"]}],
            "c2": [{"t": T0 + 15.0, "e": "assign", "parts": ["foo-1"]}]}
    run = _run(logs, end=30.0, windows=windows[:2],
               lifetimes={"c1": [(T0, None)], "c2": [(T0 + 14.0, None)]})
    assert convergence(run)[1] == T0 + 15.0


class _FakeConsumer:
    """confluent-kafka's Consumer as far as the poll loop uses it: ``consume(n, timeout)``
    waits until it has ``n`` records or the timeout passed (librdkafka), ``poll`` until one."""

    def __init__(self, queued: list[str]) -> None:
        self.queued = list(queued)
        self.calls: list[tuple[str, int, float]] = []

    def poll(self, timeout: float) -> str | None:
        self.calls.append(("poll", 1, timeout))
        return self.queued.pop(0) if self.queued else None

    def consume(self, num_messages: int, timeout: float) -> list[str]:
        self.calls.append(("consume", num_messages, timeout))
        out, self.queued = self.queued[:num_messages], self.queued[num_messages:]
        return out


def test_the_wire_consumer_polls_as_the_java_client_returning_what_is_there_at_once() -> None:
    """Java's ``poll(timeout)`` returns as soon as records are fetched (up to
    max.poll.records); it never waits for a full batch, as librdkafka's ``consume(n, timeout)``
    does: the member waits for the first record only, then takes what else is there without
    waiting."""
    from groupcoord.lab.wire_member import Member, parse_args

    ns = parse_args(["--bootstrap", "x:1", "--group", "g", "--name", "c1", "--protocol", "eager",
                     "--topics", "foo", "--log", "-", "--max-poll-records", "3"])
    member = Member(ns, out=None)  # type: ignore[arg-type]
    fake = _FakeConsumer(["r1", "r2", "r3", "r4"])
    member.consumer = fake
    assert member.poll(0.1) == ["r1", "r2", "r3"]  # at most max.poll.records
    assert fake.calls == [("poll", 1, 0.1), ("consume", 2, 0)]  # the rest: no waiting
    assert member.poll(0.1) == ["r4"]
    assert member.poll(0.1) == []  # nothing there: waited the timeout for a first record
    assert [c for c in fake.calls if c[0] == "consume" and c[2] > 0] == []


def test_keep_puts_every_wire_run_in_its_own_directory(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    """``lab calibrate --keep DIR``: run r of protocol P keeps its logs in DIR/P/r."""
    import groupcoord.lab.wire as wire
    from groupcoord.lab.wire import WireWorkload

    kept: list[Path | None] = []

    def fake_run_wire(*args: Any, keep_dir: Path | None = None, **kw: Any) -> Any:
        kept.append(keep_dir)
        raise RuntimeError("no wire here")

    monkeypatch.setattr(wire, "run_wire", fake_run_wire)
    sc = load_scenario("scale-out", 1)
    [result] = calibrate(sc, ["classic:eager"], WireWorkload(), seeds=1, repeat=2,
                         keep=tmp_path)
    assert result.error == "no wire here"
    assert kept == [tmp_path / "classic-eager" / "1"]  # the first failure stops the protocol
    kept.clear()
    calibrate(sc, ["classic:eager"], WireWorkload(), seeds=1, repeat=1)
    assert kept == [None]  # by default the run's directory is removed


def test_the_wire_runs_are_checked_against_their_paired_seeds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Wire run r starts its members at seed + r's offsets (the same heartbeat phases): its
    median is checked against the median of those seeds; the median over every simulated
    seed is reported beside it."""
    import groupcoord.lab.calibrate as cal
    import groupcoord.lab.wire as wire
    import groupcoord.lab.wire_metrics as wm
    from groupcoord.lab.wire import WireWorkload

    def windows(ttc: int) -> list[dict[str, Any]]:
        return [{"disturbance": "initial-join", "at_ms": 0, "settled_ms": 0,
                 "time_to_converge_ms": 100, "lag_peak": 0, "lag_record_s": 0.0},
                {"disturbance": "scale-out", "at_ms": 30_000, "settled_ms": 30_000,
                 "time_to_converge_ms": ttc, "lag_peak": 10, "lag_record_s": 10.0}]

    # seeds 1-3 (the wire runs' phases) converge in 0.3-1 s, the other 18 in 4.5 s
    sim_ttc = {1: 1_000, 2: 600, 3: 300, **{s: 4_500 for s in range(4, 22)}}
    monkeypatch.setattr(cal, "simulate_windows",
                        lambda sc, protocol, wl, seed: windows(sim_ttc[seed]))
    runs = iter([1_200, 900, 300])
    monkeypatch.setattr(wire, "run_wire", lambda *a, **kw: next(runs))
    monkeypatch.setattr(wm, "window_metrics", lambda ttc: windows(ttc))
    monkeypatch.setattr(wm, "Series", lambda run: None)
    monkeypatch.setattr(wm, "steady_lag", lambda run, series: 0.0)
    [r] = calibrate(load_scenario("scale-out", 1), ["classic:eager"], WireWorkload(),
                    seed=1, seeds=21, repeat=3)
    rows = {row["metric"]: row for row in r.summary.rows}  # type: ignore[union-attr]
    ttc = rows["time_to_converge_ms"]
    assert (ttc["simulated"], ttc["measured"], ttc["simulated_all_seeds"]) == (600, 900, 4_500)
    assert ttc["within_2x"] is True  # 900 against the same phases' 600, not 4,500
    assert len(r.sim_runs) == 21
    assert "simulated, all seeds" in cal.format_table([r])
