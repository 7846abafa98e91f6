"""The report's generated sections (``lab.limits``): what the model leaves out, from the runs'
configuration and the calibration results the package ships; the settings, from the runs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.lab.limits import (
    CALIBRATION_FILE,
    calibration_items,
    calibration_rows,
    load_calibration,
    merged_calibration,
    model_limits,
    save_calibration,
    settings_notes,
    settings_table,
)
from groupcoord.lab.spec import expand, parse_spec
from groupcoord.sim.workload import Workload

SPEC = """
name = "limits"
scenarios = ["crash"]
protocols = ["classic:eager", "connect:eager"]
sizes = [3]
seeds = 1

[[workloads]]
name = "slow-fetch"
topics = 2
partitions = 4
fetch_latency_ms = 80
processing_ms = 2

[[workloads]]
name = "tasks"
connectors = 2
tasks = 3
task_start_ms = 2500
"""


def _rows(spec: str = SPEC) -> list[dict[str, Any]]:
    return [{**p.as_row(), "ok": True} for p in expand(parse_spec(tomllib.loads(spec), "t"))]


CAL = {"measured": "2031-01-02", "setup": {"members": 4, "scenarios": ["bounce"],
                                           "records_per_s": 7, "processing_ms": 3,
                                           "heartbeat_interval_ms": 3000, "wire_runs": 2},
       "checked": ["lag_peak"], "tolerance": "within 2x",
       "rows": [{"scenario": "bounce", "protocol": "classic:eager", "within_2x": True,
                 "metrics": {"lag_peak": {"simulated": 10, "measured": 12}}},
                {"scenario": "bounce", "protocol": "consumer:uniform", "within_2x": False,
                 "why": "a race", "metrics": {"lag_peak": {"simulated": 100, "measured": 10}}}]}


def test_the_model_limits_come_from_the_runs_configuration() -> None:
    items = model_limits(_rows(), CAL)
    text = "\n".join(items)
    # the workloads' own settings (the consumers'), and the work model's defaults for what a
    # workload leaves alone (the Connect workers')
    default = Workload()
    assert f"polled {default.fetch_latency_ms}, 80 ms after it was produced" in text
    assert f"processing takes {default.processing_ms.mean:g}, 2 ms per record" in text
    assert f"up to {Workload().max_poll_records} records" in text
    assert "2,500 ms to start" in text
    assert f"metadata.max.age.ms {Workload().metadata_max_age_ms:,} ms" in text
    assert "latency per message uniform 1-10 ms" in text
    # the calibration's date, counts and misses, from the data
    assert "Checked against real clients on 2031-01-02" in text
    assert "1 of 2 rows within 2x" in text
    assert ("Outside 2x: bounce at 4 members, consumer:uniform [2 wire runs]: lag peak "
            "100 / 10 records (10.00) - outside 2x on lag peak (a race).") in text
    assert ("Within 2x: bounce at 4 members, classic:eager [2 wire runs]: lag peak 10 / 12 "
            "records (0.83, both below the floor of 50).") in text
    assert "100 ms" not in text  # no fetch latency typed by hand


def test_the_default_fetch_latency_is_the_work_models() -> None:
    spec = SPEC.replace("fetch_latency_ms = 80\n", "")
    assert "fetch_latency_ms" not in spec
    text = "\n".join(model_limits(_rows(spec), CAL))
    assert f"polled {Workload().fetch_latency_ms} ms after" in text
    assert f"{Workload().fetch_latency_ms}, " not in text


def test_the_shipped_calibration_is_read_and_counted() -> None:
    """The package's calibration results: every row at the settings it names, each reported
    as measured (simulated / measured per checked metric, within 2x or not)."""
    cal = load_calibration()
    assert cal is not None and cal["rows"], CALIBRATION_FILE
    items = calibration_items(cal)
    head = items[0]
    ok = sum(1 for r in cal["rows"] if r["within_2x"])
    assert f"{ok} of {len(cal['rows'])} rows within 2x" in head
    assert f"on {cal['measured']}" in head
    verdicts = [i for i in items if i.startswith(("Within 2x", "Outside 2x"))]
    assert len(verdicts) == len(cal["rows"])
    misses = [i for i in verdicts if i.startswith("Outside 2x")]
    assert len(misses) == len(cal["rows"]) - ok


def test_calibration_results_round_trip(tmp_path: Path) -> None:
    path = save_calibration(CAL, tmp_path / "cal.json")
    assert load_calibration(path) == CAL
    (tmp_path / "bad.json").write_text("{not json")
    assert load_calibration(tmp_path / "bad.json") is None
    assert "No calibration" in calibration_items(None)[0]


def test_settings_are_listed_from_the_runs_grouping_equal_protocols() -> None:
    def run(p: str, **s: Any) -> dict[str, Any]:
        return {"protocol": p, "settings_json": json.dumps(s)}

    runs = [run("classic:eager", **{"heartbeat.interval.ms": 3000, "session.timeout.ms": 45000}),
            run("classic:cooperative", **{"heartbeat.interval.ms": 3000,
                                          "session.timeout.ms": 45000}),
            run("consumer:uniform", **{"group.consumer.heartbeat.interval.ms": 5000}),
            run("consumer:uniform", **{"group.consumer.heartbeat.interval.ms": 15000}),
            {"protocol": "consumer:range", "settings_json": None}]
    cols, rows = settings_table(runs)
    assert cols == [["classic:cooperative", "classic:eager"], ["consumer:uniform"]]
    # (the classic groups' initial rebalance delay: the model's coordinator's, listed for
    # every classic column though the runs do not record it)
    assert rows == [("group.consumer.heartbeat.interval.ms", ["", "5,000, 15,000"]),
                    ("group.initial.rebalance.delay.ms", ["3,000", ""]),
                    ("heartbeat.interval.ms", ["3,000", ""]),
                    ("session.timeout.ms", ["45,000", ""])]
    assert settings_table([{"protocol": "x"}]) == ([], [])


def test_saved_calibration_replaces_its_rows_and_keeps_the_others(tmp_path: Path) -> None:
    """``lab calibrate --save``: a command's summary per protocol becomes a row (its checked
    verdict, each metric simulated and measured); rows of the same scenario and protocol are
    replaced, the others kept, and the report's section reads the result."""
    from groupcoord.lab.calibrate import CHECKED, ProtocolResult, compare

    def window(ttc: int, lag: int) -> dict[str, Any]:
        return {"disturbance": "bounce", "at_ms": 30_000, "settled_ms": 33_000,
                "time_to_converge_ms": ttc, "lag_peak": lag, "lag_record_s": 2.0 * lag,
                "records_processed": 100, "stall_ms": 0, "paused_partition_s": 0.0,
                "records_reprocessed": 0, "task_restarts": 0, "resources_moved": 2}

    good = ProtocolResult("classic:eager", compare("classic:eager", [window(9000, 100)],
                                                   [window(8000, 120)], 5.0),
                          None, [], [], 5.0)
    bad = ProtocolResult("consumer:uniform", compare("consumer:uniform", [window(9000, 100)],
                                                     [window(9000, 900)], 5.0),
                         None, [], [], 5.0)
    rows = calibration_rows([good, bad], "bounce")
    assert [(r["protocol"], r["within_2x"]) for r in rows] == [("classic:eager", True),
                                                                ("consumer:uniform", False)]
    assert rows[1]["metrics"]["lag_peak"] == {"simulated": 100, "measured": 900}
    data = merged_calibration(CAL, rows, {"members": 4}, CHECKED, "2031-02-03")
    assert data["measured"] == "2031-02-03"
    assert [(r["scenario"], r["protocol"]) for r in data["rows"]] == [
        ("bounce", "classic:eager"), ("bounce", "consumer:uniform")]  # both replaced
    path = save_calibration(data, tmp_path / "cal.json")
    text = "\n".join(calibration_items(load_calibration(path)))
    assert "on 2031-02-03" in text and "1 of 2 rows within 2x" in text
    assert "lag peak 100 / 900 records (0.11)" in text


def test_the_calibrations_other_timings_are_said() -> None:
    cal = {**CAL, "setup": {**CAL["setup"], "heartbeat_interval_ms": 5000,
                            "scheduled_rebalance_max_delay_ms": 30000}}
    runs = [{**r, "settings_json": json.dumps({"heartbeat.interval.ms": 3000,
                                               "scheduled.rebalance.max.delay.ms": 300000})}
            for r in _rows()]
    text = "\n".join(model_limits(runs, cal))
    assert ("The calibration ran at other timings than these runs (heartbeat.interval.ms 5,000 "
            "ms there, 3,000 ms here; scheduled.rebalance.max.delay.ms 30,000 ms there, "
            "300,000 ms here)") in text
    same = [{**r, "settings_json": json.dumps({"heartbeat.interval.ms": 5000})} for r in _rows()]
    assert "other timings" not in "\n".join(model_limits(same, cal))


def test_the_calibration_says_what_it_did_not_cover_and_what_was_measured_again() -> None:
    cal = {"measured": "2026-11-26", "setup": {"members": 6}, "checked": ["lag_peak"],
           "rows": [
               {"protocol": "classic:eager", "scenario": "rolling-bounce", "within_2x": True},
               {"protocol": "consumer:uniform", "scenario": "scale-out", "within_2x": False,
                "metrics": {"lag_peak": {"simulated": 100, "measured": 900}}},
               {"protocol": "consumer:uniform", "scenario": "scale-out", "within_2x": True,
                "condition": "load below 1"}]}
    runs = [{"protocol": p, "scenario": s, "size": n}
            for p in ("classic:eager", "consumer:range") for s in ("crash", "scale-out")
            for n in (6, 10)]
    items = calibration_items(cal, runs=runs)
    assert ("1 of these rows are measurements taken again under a changed condition "
            "(load below 1)") in items[0]
    (miss,) = [i for i in items if i.startswith("Outside 2x")]
    assert "lag peak 100 / 900 records (0.11) - outside 2x on lag peak" in miss
    assert ("(load below 1) it came within 2x, which is another condition: this miss "
            "stands") in miss
    assert items[-1] == ("Not covered by the calibration (the tables use them; no row "
                         "measured them against real clients): protocols consumer:range; "
                         "scenarios crash; group sizes 10.")


_KEYS = st.sampled_from([("bounce", "classic:eager"), ("bounce", "consumer:uniform"),
                         ("crash", "classic:eager"), ("scale-out", "classic:cooperative"),
                         ("kip415-worker-joins", "connect:eager")])


@given(st.lists(_KEYS, max_size=8), st.lists(_KEYS, max_size=4))
def test_saving_keeps_the_files_order_and_replaces_rows_in_place(
        old_keys: list[tuple[str, str]], new_keys: list[tuple[str, str]]) -> None:
    """``lab calibrate --save`` changes only the rows it measured: the rows it does not replace
    keep their order, a replaced row's place is its first old row's, rows new to the file
    come last (round 8: the file's every row moved on each save)."""
    old = {"rows": [{"scenario": s, "protocol": p, "condition": "", "n": i}
                    for i, (s, p) in enumerate(old_keys)]}
    new = [{"scenario": s, "protocol": p, "condition": "", "n": -1 - i}
           for i, (s, p) in enumerate(new_keys)]
    out = merged_calibration(old, new, {}, ["stall_ms"], "2031-02-03")["rows"]
    replaced = set(new_keys)
    expected: list[tuple[str, str]] = []
    for i, k in enumerate(old_keys):  # the old order, a replaced key at its first place
        if k not in replaced:
            expected.append(k)
        elif old_keys.index(k) == i:
            expected += [k] * new_keys.count(k)
    for k in dict.fromkeys(new_keys):  # then the keys new to the file
        if k not in old_keys:
            expected += [k] * new_keys.count(k)
    assert [(r["scenario"], r["protocol"]) for r in out] == expected
    assert [r["n"] for r in out if (r["scenario"], r["protocol"]) not in replaced] == [
        i for i, k in enumerate(old_keys) if k not in replaced]
    assert all(r["measured"] == "2031-02-03" for r in out if r["n"] < 0)


def test_saving_one_row_of_the_shipped_file_moves_no_other_row(tmp_path: Path) -> None:
    cal = json.loads(CALIBRATION_FILE.read_text())
    keys = [(r["scenario"], r["protocol"], r.get("condition", "")) for r in cal["rows"]]
    i = next(j for j in range(len(keys) // 2, len(keys)) if keys.count(keys[j]) == 1)
    again = {**cal["rows"][i], "wall_s": 1}
    out = merged_calibration(cal, [again], {}, cal["checked"], "2031-02-03")
    assert out["rows"][:i] == cal["rows"][:i] and out["rows"][i + 1:] == cal["rows"][i + 1:]
    assert out["rows"][i]["wall_s"] == 1
    saved = json.loads(save_calibration(out, tmp_path / "c.json").read_text())
    assert [r["scenario"] for r in saved["rows"]] == [r["scenario"] for r in cal["rows"]]


def test_the_not_covered_line_counts_the_real_connect_workers_rows(tmp_path: Path) -> None:
    """A classic Connect cell measured against real Connect workers (the Connect calibration's
    rows, which the sentences print) is not named as never measured (render 13's page said
    'scenarios ... kip415-connector-added, kip415-worker-joins' under a sentence that printed
    their rows)."""
    from groupcoord.lab.limits import _connect_rows, _not_covered

    data = tmp_path / "calibration-connect.json"
    data.write_text(json.dumps({"rows": [
        {"scenario": "kip415-worker-joins", "size": 3, "protocol": "classic-connect:eager"},
        {"scenario": "kip415-worker-joins", "size": 3,
         "protocol": "classic-connect:sessioned"}]}))
    runs = [{"protocol": p, "scenario": s, "size": 3}
            for p in ("classic-connect:eager", "classic-connect:sessioned")
            for s in ("kip415-worker-joins", "worker-leaves-d30s")]
    rows = _connect_rows(runs, data)
    assert {(r["protocol"], r["scenario"], r["members"]) for r in rows} == {
        ("classic-connect:eager", "kip415-worker-joins", 3),
        ("classic-connect:sessioned", "kip415-worker-joins", 3)}
    text = _not_covered(rows, {}, runs)
    assert "kip415-worker-joins" not in text and "scenarios worker-leaves-d30s" in text
    assert "kip415-worker-joins" in _not_covered([], {}, runs)
    assert _connect_rows([{"protocol": "classic:eager", "scenario": "crash"}], data) == []


def test_settings_off_kafkas_defaults_and_model_knobs_are_flagged() -> None:
    """The settings list says which values are not Kafka's defaults (per client kind: a
    consumer's request.timeout.ms defaults to 30,000, a Connect worker's to 40,000) and which
    keys are the model's own knobs, from the runs' settings alone."""
    def run(p: str, **s: Any) -> dict[str, Any]:
        return {"protocol": p, "settings_json": json.dumps(s)}

    runs = [run("classic:eager", **{"request.timeout.ms": 5000, "heartbeat.interval.ms": 3000}),
            run("classic-connect:eager", **{"request.timeout.ms": 5000,
                                             "offset.flush.interval.ms": 5000,
                                             "heartbeat.interval.ms": 3000,
                                             "heartbeat.spread.ms": 1000})]
    text = " ".join(settings_notes(runs))
    assert ("request.timeout.ms 5,000 (Kafka's default: 30,000 for a consumer, 40,000 for a "
            "Connect worker)") in text
    assert "offset.flush.interval.ms 5,000 (Kafka's default: 60,000 for a Connect worker)" in text
    assert "heartbeat.interval.ms" not in text  # 3,000 is the default for both
    assert "Model knobs, not Kafka settings: heartbeat.spread.ms (" in text
    # at the defaults nothing is flagged
    # (only the broker settings' note, which says what the classic group's initial
    # rebalance delay is, not that it is off a default)
    at_defaults = settings_notes([run("classic:eager", **{"request.timeout.ms": 30000})])
    assert [n.split(":")[0] for n in at_defaults] == ["Broker settings"]


def test_the_model_limits_say_static_membership_aligned_heartbeats_and_producers() -> None:
    """"What the model leaves out" names static membership (KIP-345), the aligned classic
    heartbeats, the producer on a grown topic (the topic's rate spread over every partition)
    and producers' own metadata refresh (left out: they write to new partitions at once)."""
    text = "\n".join(model_limits(_rows(SPEC.replace('["crash"]', '["crash", "rolling-bounce"]')),
                                   CAL))
    assert ("Static membership (KIP-345, group.instance.id): not run; the restarts "
            "(rolling-bounce) restart dynamic members") in text
    assert "heartbeats aligned" in text
    assert "A producer learns of new partitions at its own metadata refresh" in text
    assert "which the model leaves out" in text
    # the default producer keeps the topic's rate (sim.workload, "A topic's growth")
    assert "A topic that grows keeps its production rate, spread over every partition" in text
    # the rebalance of a topic's growth comes at the classic leader's refresh
    assert "the rebalance comes at the leader's refresh" in text
    # which alignment the wire measured and when (the shipped wire_spread.json; round 14)
    assert ("real classic members' heartbeats stayed aligned through an eager rolling bounce, "
            "within 0.094 s of one another") in text
    assert "at the first rebalance after 5 to 35 min stable they learned of a join up to " \
           "1.098 s apart" in text


def test_the_model_limits_name_the_static_rolling_bounce_when_it_runs() -> None:
    """With a static rolling bounce among the cells, "What the model leaves out" no longer
    says static membership is not run: it names the static rolling bounce."""
    spec = SPEC.replace('["crash"]', '["crash", "rolling-bounce", "rolling-bounce-static"]') + """
[scenario.rolling-bounce-static]
description = "rolling-bounce with static members"
group = { members = 3, static = true, topics = { foo = 8 } }
events = [{ at_ms = 30000, kind = "rolling-bounce", interval_ms = 15000, down_ms = 3000 }]
"""
    text = "\n".join(model_limits(_rows(spec), CAL))
    assert "not run" not in text.split("Static membership")[1].split("\n")[0]
    assert ("the rolling bounce runs with static members too (rolling-bounce-static: each "
            "back within its session timeout keeps its partitions with no rebalance)") in text
    assert "the other restarts (rolling-bounce) restart dynamic members" in text
