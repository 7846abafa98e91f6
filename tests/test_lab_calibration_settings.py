"""The lab's calibration at the settings its tables use (docs/lab.md "Calibration against real
clients"): each protocol's group at the field's settings on both sides, the disturbances the
tables have (a crash, partitions added, KIP-415's delayed departure), the results saved per row
with their settings, and the report's section generated from them.

No real client runs here: the calibration is a lab command (``groupcoord lab calibrate``), not a
test. These tests check the pieces it is made of on cases whose answer is known, the table's
shape as the package ships it, and the generator on a synthetic result.
"""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.lab import limits
from groupcoord.lab.calibrate import (
    CHECKED,
    FLOORS,
    ProtocolResult,
    calibration_scenario,
    compare,
    own_settings,
    protocol_scenario,
    simulated_scenario,
    within_2x,
)
from groupcoord.lab.limits import (
    calibration_for,
    calibration_items,
    calibration_ratio,
    calibration_rows,
    load_calibration,
    merged_calibration,
)
from groupcoord.lab.wire import WireRun, WireWindow, WireWorkload, _actions, server_configs
from groupcoord.lab.wire_member import consumer_config, parse_args
from groupcoord.lab.wire_metrics import Series, convergence, window_metrics
from groupcoord.sim.scenario import load_scenario
from groupcoord.sim.settings import FIELD_SETTINGS

T0 = 1_000.0


# ----------------------------------------------------------------------------- the settings


@pytest.mark.parametrize("protocol", ["classic:eager", "consumer:range",
                                      "classic-connect:sessioned"])
def test_each_protocol_runs_at_the_fields_settings_on_both_sides(protocol: str) -> None:
    base = calibration_scenario(load_scenario("scale-out", 1))
    sc = protocol_scenario(base, protocol, "field")
    family = "classic" if protocol.startswith("classic:") else (
        "consumer" if protocol.startswith("consumer") else "connect")
    for name, value in FIELD_SETTINGS[family].items():
        if name != "metadata_max_age_ms":
            assert getattr(sc, name) == value, name
    # the phases are drawn across the protocol's own heartbeat interval
    assert sc.start_spread_ms == FIELD_SETTINGS[family]["heartbeat_interval_ms"]
    # the server gets what the simulator's coordinator gets
    conf = server_configs(sc, {})
    assert conf["group.consumer.assignment.interval.ms"] == str(sc.assignment_interval_ms)
    assert conf["group.consumer.heartbeat.interval.ms"] == str(sc.heartbeat_interval_ms)
    # the scenario's own timings: unchanged with settings="scenario"
    assert protocol_scenario(base, protocol, "scenario") == base


def test_a_scenario_files_own_delay_stays_and_the_command_can_keep_a_timing() -> None:
    """As in the lab's tables: a built-in runs at the field's settings (KIP-415's delay
    5 min), a scenario file keeps what it sets itself (the KIP-415 grid's d30s cell)."""
    loaded = load_scenario("kip415-worker-leaves", 1)
    sc = protocol_scenario(calibration_scenario(loaded), "classic-connect:sessioned", "field",
                           own_settings(None))
    assert (sc.max_delay_ms, sc.heartbeat_interval_ms, sc.session_timeout_ms,
            sc.rebalance_timeout_ms) == (300_000, 3_000, 10_000, 60_000)
    own = own_settings({"member": {"scheduled_rebalance_max_delay_ms": 30_000}})
    assert own == {"max_delay_ms"}
    sc = protocol_scenario(calibration_scenario(loaded), "classic-connect:sessioned", "field",
                           own)
    assert (sc.max_delay_ms, sc.heartbeat_interval_ms) == (30_000, 3_000)
    kept = own_settings(None, heartbeat_interval_ms=1_000)
    sc = protocol_scenario(calibration_scenario(load_scenario("crash", 1), None, 1_000),
                           "classic:eager", "field", kept)
    assert (sc.heartbeat_interval_ms, sc.session_timeout_ms) == (1_000, 45_000)


def test_the_metadata_refresh_is_the_same_on_both_sides() -> None:
    wl = WireWorkload(metadata_max_age_ms=10_000)
    sc = protocol_scenario(calibration_scenario(load_scenario("partition-added", 1)),
                           "classic:eager", "field")
    assert simulated_scenario(sc, "classic:eager", wl).workload.metadata_max_age_ms == 10_000
    conf = consumer_config(parse_args(["--bootstrap", "b", "--group", "g", "--name", "c1",
                                       "--protocol", "eager", "--topics", "foo", "--log", "x",
                                       "--metadata-max-age-ms", "10000"]))
    assert conf["topic.metadata.refresh.interval.ms"] == 10_000
    ranged = consumer_config(parse_args(["--bootstrap", "b", "--group", "g", "--name", "c1",
                                         "--protocol", "consumer-range", "--topics", "foo",
                                         "--log", "x"]))
    assert (ranged["group.protocol"], ranged["group.remote.assignor"]) == ("consumer", "range")
    assert "session.timeout.ms" not in ranged  # KIP-848: the broker's


def test_partitions_added_and_a_crash_are_played_on_the_wire() -> None:
    acts, windows = _actions(load_scenario("partition-added", 1), 1)
    assert (30.0, "grow", "foo=8", False) in acts
    assert [w.label for w in windows] == ["initial-join", "add-partitions"]
    acts, _ = _actions(load_scenario("crash", 1), 1)
    assert (30.0, "stop", "c2", True) in acts  # SIGKILL: the session expires


def test_a_connector_removed_is_played_for_connect_groups_only() -> None:
    from pathlib import Path

    from groupcoord.lab.wire import WireError

    path = (Path(__file__).parents[1] / "src/groupcoord/lab/data/calibration"
            / "kip415-connector-removed.toml")
    sc = load_scenario(str(path), 1)
    acts, windows = _actions(sc, 1)
    assert (30.0, "delete", "B", False) in acts
    assert [w.label for w in windows] == ["initial-join", "remove-connector"]
    with pytest.raises(WireError, match="Connect groups"):
        _actions(load_scenario("crash", 1).__class__(
            name="x", events=sc.events, topics=(("foo", 4),)), 1)


# ----------------------------------------------------------------------------- the metrics


def test_a_deleted_connectors_tasks_need_no_owner_and_have_no_lag() -> None:
    """B-0 is deleted at 10 s: from then on the group converges without it, once the worker
    holding the deleted connector released it, and its lag (its source goes on counting on
    the wire) is not counted."""
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": ["A", "A-0"]}],
            "c2": [{"t": T0 + 1.0, "e": "assign", "parts": ["B", "A-1"]},
                   {"t": T0 + 12.0, "e": "revoke", "parts": ["B"]}]}
    resources = ["A-0", "A-1", "B-0"]
    run = WireRun("classic-connect:eager", "connect", T0, T0 + 20, [
        WireWindow("initial-join", 0.0, 0.0), WireWindow("remove-connector", 10.0, 10.0)],
        {}, logs, {"c1": [(T0, None)], "c2": [(T0, None)]}, resources,
        [["A", "B"], resources], 10.0, T0, 0.0, until={"B": T0 + 10.0, "B-0": T0 + 10.0})
    conv = convergence(run)
    # B-0 had no owner until it was deleted; then c2 still held B until it revoked it at 12 s
    assert conv[0] == pytest.approx(T0 + 12.0)
    assert conv[1] == pytest.approx(T0 + 12.0)
    assert window_metrics(run)[1]["time_to_converge_ms"] == 2_000
    # nothing was processed: every task lags; B-0 only until it was deleted
    from dataclasses import replace

    lag = Series(run).lag
    kept = Series(replace(run, until={})).lag
    at = int(15.0 / 0.01)
    assert lag[2, at] == 0 and kept[2, at] == pytest.approx(150, abs=1)
    assert lag[0, at] == kept[0, at] == pytest.approx(150, abs=1)


def test_a_partition_added_counts_for_convergence_from_when_it_exists() -> None:
    """Before foo-2 exists the group of two partitions is converged; from its creation at
    10 s it needs an owner, which it gets at 13 s."""
    logs = {"c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0]]},
                   {"t": T0 + 13.0, "e": "assign", "parts": [["foo", 2]]}],
            "c2": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 1]]}]}
    resources = ["foo-0", "foo-1", "foo-2"]
    produced = {r: [(T0 + k / 10, k) for k in range(201)] for r in resources[:2]}
    produced["foo-2"] = [(T0 + 10 + k / 10, k) for k in range(101)]
    run = WireRun("classic:eager", "consumer", T0, T0 + 20, [
        WireWindow("initial-join", 0.0, 0.0), WireWindow("add-partitions", 10.0, 10.0)],
        produced, logs, {"c1": [(T0, None)], "c2": [(T0, None)]}, resources, [resources],
        10.0, T0, 0.0, since={"foo-2": T0 + 10.0})
    conv = convergence(run)
    assert conv[0] == pytest.approx(T0 + 1.0)  # foo-2 did not exist yet
    assert conv[1] == pytest.approx(T0 + 13.0)
    assert window_metrics(run)[1]["time_to_converge_ms"] == 3_000


# ----------------------------------------------------------------------------- the results


def _window(ttc: int, lag: int) -> dict[str, Any]:
    return {"disturbance": "crash", "at_ms": 30_000, "settled_ms": 30_000,
            "time_to_converge_ms": ttc, "lag_peak": lag, "lag_record_s": 2.0 * lag,
            "records_processed": 100, "stall_ms": 0, "paused_partition_s": 0.0,
            "records_reprocessed": 0, "task_restarts": 0, "resources_moved": 2}


def _result(protocol: str, sim: tuple[int, int], wire: tuple[int, int]) -> ProtocolResult:
    sc = protocol_scenario(calibration_scenario(load_scenario("crash", 1)), protocol, "field")
    return ProtocolResult(protocol, compare(protocol, [_window(*sim)], [_window(*wire)], 3.0),
                          None, [], [], 3.0, scenario=simulated_scenario(sc, protocol,
                                                                         WireWorkload()))


def test_the_generator_reports_every_row_as_measured_with_its_settings_and_ratios() -> None:
    """A synthetic result: one protocol within 2x, one outside; the rows carry the settings
    they ran with, and the section prints each checked metric as simulated / measured with
    the ratio, the verdict first, a miss's explanation beside it."""
    results = [_result("classic:eager", (48_000, 300), (46_000, 280)),
               _result("consumer:uniform", (47_000, 100), (47_500, 900))]
    run = {"members": 4, "wire_runs": 2, "seeds": 21, "seed": 1, "settings_source": "field",
           "workload": {"records_per_s": 10.0, "processing_ms": 10.0}, "wall_s": 400,
           "command": "groupcoord lab calibrate --scenario crash", "load": [3.0, 6.5]}
    rows = calibration_rows(results, "crash", run=run)
    rows[1]["why"] = "a mechanism"
    cal = merged_calibration(None, rows, {"compared_with": "the paired simulated seeds"},
                             CHECKED, "2031-03-04")
    items = calibration_items(cal)
    assert "1 of 2 rows within 2x" in items[0] and "on 2031-03-04" in items[0]
    assert "at 4 members" in items[0] and "10 records/s per partition" in items[0]
    eager, uniform = items[1], items[2]
    assert eager.startswith("Within 2x: crash at 4 members, classic:eager (heartbeat 3 s, "
                            "session 45 s, max.poll.interval 5 min, metadata.max.age 5 min)")
    assert "[2 wire runs; 1-minute load 3 to 6.5; 2031-03-04]" in eager
    assert "time to converge 48,000 / 46,000 ms (1.04); lag peak 300 / 280 records (1.07)" \
        in eager  # (the time after the disturbance is the same for a crash: said once)
    assert "after the disturbance" not in eager
    assert uniform.startswith("Outside 2x: crash at 4 members, consumer:uniform (heartbeat 5 s, "
                              "session 45 s, max.poll.interval 5 min, assignment interval 1 s)")
    assert uniform.endswith("lag peak 100 / 900 records (0.11); lag 200 / 1,800 record·s "
                            "(0.11); stall 0 / 0 ms (both 0); records processed twice 0 / 0 "
                            "(both 0) - outside 2x on lag peak, lag (a mechanism); reported, "
                            "not checked: records processed 100 / 100, moved 2 / 2.")


def test_a_row_keeps_its_runs_and_says_when_they_are_spread() -> None:
    """A bimodal delay (KIP-415: a departed follower's tasks wait 5 min, a departed leader's
    go at once): two wire runs' median is their mean; the row keeps each run and each paired
    seed and the page prints them when they spread over more than 2x."""
    def windows(ttc: int) -> list[dict[str, Any]]:
        return [{"disturbance": "initial-join", "at_ms": 0, "settled_ms": 0,
                 "time_to_converge_ms": 900, "lag_peak": 0, "lag_record_s": 0.0},
                {**_window(ttc, 40), "disturbance": "leave"}]

    r = _result("classic:eager", (150_000, 40), (151_000, 40))
    r.wire_runs = [windows(300_500), windows(1_500)]
    r.sim_runs = [windows(299_000), windows(1_000), windows(300_000)]
    [row] = calibration_rows([r], "kip415-worker-leaves")
    assert row["per_run"]["time_to_converge_ms"] == {"measured": [300_500.0, 1_500.0],
                                                     "simulated": [299_000.0, 1_000.0]}
    cal = merged_calibration(None, [row], {}, CHECKED, "2031-03-04")
    text = calibration_items(cal)[1]
    assert text.endswith("the runs are spread: time to converge run by run 300,500, 1,500 ms "
                         "measured, 299,000, 1,000 in the paired seeds.")


def test_different_disturbances_are_rows_of_their_own() -> None:
    """crash-then-join: the crash's window and the join's are checked each as itself (a
    miss in the join's window is not averaged away with the crash's)."""
    crash = _window(42_000, 900)
    join = {**_window(1_500, 16), "disturbance": "scale-out", "at_ms": 80_000,
            "settled_ms": 80_000}
    measured_join = {**join, "time_to_converge_ms": 1_200, "lag_peak": 100}
    sc = protocol_scenario(calibration_scenario(load_scenario("crash", 1)), "classic:eager",
                           "field")
    r = ProtocolResult("classic:eager", compare("classic:eager", [crash, join],
                                                [crash, measured_join], 3.0),
                       None, [], [], 3.0, scenario=sc)
    assert r.summary is not None and r.summary.checked_ok  # the mean hides the join's miss
    rows = calibration_rows([r], "crash-then-join")
    assert [(x["window"], x["within_2x"]) for x in rows] == [("crash", True),
                                                            ("scale-out", False)]
    text = calibration_items(merged_calibration(None, rows, {}, CHECKED, "2031-03-04"))[2]
    assert text.startswith("Outside 2x: crash-then-join, classic:eager, its scale-out window")
    assert "lag peak 16 / 100 records (0.16);" in text
    assert "- outside 2x on lag peak;" in text and "measured again" not in text


def test_a_tables_cell_finds_its_calibration_row() -> None:
    """The lookup the report's sentences use: a cell's scenario and protocol (and size)."""
    rows = calibration_rows([_result("classic:eager", (48_000, 300), (46_000, 280))], "crash",
                            run={"members": 4})
    cal = merged_calibration(None, rows, {}, CHECKED, "2031-03-04")
    text = calibration_for("crash", "classic:eager", cal=cal)
    assert text is not None and text.startswith("Within 2x: crash at 4 members, classic:eager")
    assert calibration_for("crash", "classic:eager", members=4, cal=cal) == text
    assert calibration_for("crash", "classic:eager", members=10, cal=cal) is None
    assert calibration_for("crash", "consumer:range", cal=cal) is None


def test_a_ratio_is_simulated_over_measured_and_values_below_the_floor_say_so() -> None:
    from groupcoord.lab import limits

    assert calibration_ratio(300, 150) == 2.0
    assert calibration_ratio(1, 0) is None and calibration_ratio(None, 3) is None
    assert limits._FLOORS == FLOORS  # the page's floors are the check's
    row = {"scenario": "scale-out", "protocol": "classic:eager", "within_2x": True,
           "metrics": {"lag_peak": {"simulated": 10, "measured": 30}}}
    assert limits.calibration_row_text(row, ["lag_peak"]) == (
        "Within 2x: scale-out, classic:eager: lag peak 10 / 30 records (0.33, both below the "
        "floor of 50)")


def test_the_shipped_calibration_is_at_the_tables_settings_and_reported_as_measured() -> None:
    """The package's results (``lab/data/calibration.json``, written by ``lab calibrate
    --save``): every row names its cell, its settings and how it was measured; its verdict is
    the 2x check of its own numbers; together they cover what the tables use."""
    cal = load_calibration()
    assert cal is not None
    rows = cal["rows"]
    assert rows
    for r in rows:
        for key in ("scenario", "protocol", "members", "settings", "wire_runs", "command",
                    "wall_s", "measured", "metrics", "within_2x"):
            assert key in r, (r.get("scenario"), r.get("protocol"), key)
        ok = True
        for metric in r.get("checked", cal["checked"]):  # as the row was checked
            v = r["metrics"][metric]
            if v["simulated"] is None or v["measured"] is None:
                continue
            ok &= bool(within_2x(metric, v["simulated"], v["measured"]))
        assert ok == r["within_2x"], (r["scenario"], r["protocol"])
    assert set(cal["checked"]) <= set(FLOORS)

    def has(protocol: str, scenario: str | None = None, **settings: int) -> bool:
        return any(r["protocol"] == protocol and scenario in (None, r["scenario"])
                   and all(r["settings"].get(k) == v for k, v in settings.items())
                   for r in rows)

    classic = {"heartbeat.interval.ms": 3_000, "session.timeout.ms": 45_000}
    assert has("classic:eager", **classic) and has("classic:cooperative", **classic)
    assert has("consumer:uniform", **{"group.consumer.assignment.interval.ms": 1_000})
    assert has("consumer:range")
    assert has("classic:eager", "crash", **classic)
    assert has("classic:eager", "partition-added")
    assert has("classic-connect:sessioned", "kip415-worker-leaves",
               **{"heartbeat.interval.ms": 3_000, "session.timeout.ms": 10_000})
    assert has("classic-connect:eager", "kip415-worker-leaves")
    # every row is in the report's section, as measured
    items = calibration_items(cal)
    assert sum(1 for i in items if i.startswith(("Within 2x", "Outside 2x"))) == len(rows)


def _stall_row(scenario: str, protocol: str, stall: tuple[float, float],
               twice: tuple[float, float], checked: list[str] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": scenario, "protocol": protocol, "within_2x": True,
        "metrics": {"time_to_converge_ms": {"simulated": 1000, "measured": 1100},
                    "stall_ms": {"simulated": stall[0], "measured": stall[1]},
                    "records_reprocessed": {"simulated": twice[0], "measured": twice[1]}}}
    if checked is not None:
        row["checked"] = checked
    return row


def test_stall_and_records_processed_twice_say_from_the_rows_whether_they_are_within_2x(
) -> None:
    """Each of the two metrics checked since round 7 gets a line from the stored rows: how
    many rows check it, how many agree only below the floor, each miss and by how much, and
    what the lab's marks on it then mean; a row saved before they were checked is judged on
    the four it was checked on, not on these."""
    rows = [_stall_row("rolling-bounce", "classic:eager", (46, 30), (0, 0), list(CHECKED)),
            _stall_row("crash", "classic:eager", (25, 0), (75, 30), list(CHECKED)),
            _stall_row("crash-then-join", "consumer:uniform", (0, 900), (66, 51),
                       list(CHECKED)),
            _stall_row("kip415-worker-leaves", "classic-connect:eager", (23, 5_000), (0, 0))]
    stall = limits.metric_check_text(rows, "stall_ms")
    assert stall.startswith("Stall (floor 250 ms): checked by 3 calibration rows (scenarios "
                            "rolling-bounce, crash, crash-then-join; not checked for "
                            "classic-connect:eager: rows measured before, which report it); "
                            "2 within 2x, "
                            "2 of them only because both sides are below the floor (below it "
                            "but more than 2x apart: crash classic:eager 25 / 0 ms, simulated "
                            "/ measured: a figure summed over many disturbances, as a rolling "
                            "bounce's over its members, adds up values the check cannot "
                            "resolve); 1 outside "
                            "2x, with one side 0: crash-then-join consumer:uniform: the model "
                            "0, the wire 900 ms. So in crash-then-join the lab's marks on stall")
    assert "kip415" not in stall  # saved before stall was checked: not judged on it
    twice = limits.metric_check_text(rows, "records_reprocessed")
    assert "2 within 2x, 1 of them only because both sides are below the floor" in twice
    assert "crash classic:eager: the model 2.5x the wire (75 / 30)" in twice
    assert "(above it and within 2x: crash-then-join consumer:uniform 66 / 51)" in twice
    # the old row prints its stall as reported, not checked, and its verdict stays
    text = limits.calibration_row_text(rows[3], list(CHECKED))
    assert text.startswith("Within 2x") and "reported, not checked: stall 23 / 5,000 ms" in text
    # every row below the floor: the check says only that both sides are small
    low = limits.metric_check_text(rows[:1], "stall_ms")
    assert "none above the floor" in low and "the model's alone" in low
    # the section carries both lines after the rows
    items = calibration_items({"rows": rows, "checked": list(CHECKED)})
    assert items[-2].startswith("Stall (floor 250 ms)")
    assert items[-1].startswith("Records processed twice (floor 50 records)")
    assert not limits._row_misses(rows[0], list(CHECKED))  # 46 / 30 ms: below the floor
    # a sentence on stall gets the same verdict in one clause
    assert limits.metric_check_brief({"rows": rows}, "stall_ms") == (
        "stall against real clients: 2 of 3 rows within 2x, 2 of them only below the 250 ms "
        "floor, 1 outside (the section 'What the model leaves out' says which)")
    assert limits.metric_check_brief({"rows": rows[:1]}, "stall_ms").endswith(
        "; above 250 ms this metric is the model's, not checked")
    assert limits.metric_check_brief({"rows": rows}, "lag_peak") == ""
    # several rows of one protocol apart below the floor: said once, as ranges
    two = [_stall_row("scale-out", "classic:eager", (26, 0), (0, 0), list(CHECKED)),
           _stall_row("rolling-bounce", "classic:eager", (47.5, 7.5), (0, 0), list(CHECKED))]
    assert ("(below it but more than 2x apart: classic:eager in 2 rows (scale-out, "
            "rolling-bounce): 26-47.5 / 0-7.5 ms, simulated / measured") \
        in limits.metric_check_text(two, "stall_ms")
