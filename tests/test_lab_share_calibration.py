"""``groupcoord lab calibrate --share``: share groups (KIP-932) in the simulator against real
ShareConsumers on the wire (``lab/share_calibration.py``, ``lab/wire_share.py``,
``lab/wire_share_member.py``). The metrics from the wire's logs are checked on synthetic runs;
one small run with real ShareConsumers checks the wire path end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groupcoord.lab.calibrate import CalibrationError
from groupcoord.lab.share_calibration import (
    METRICS,
    ShareCell,
    as_json,
    cell_params,
    cell_scenario,
    format_share_runs,
    format_share_table,
    lost_host_counts,
    ratios,
    save_share_calibration,
    share_within_2x,
    verdict,
)
from groupcoord.lab.share_report import load_share_calibration, share_calibration_note
from groupcoord.lab.wire import WireWorkload, _actions
from groupcoord.lab.wire_run import WireWindow
from groupcoord.lab.wire_share import (
    ShareWireRun,
    batch_in_hand_fraction,
    converged_at,
    lag_series,
    lock_held_s,
    lost_host_holds,
    partitions_stopped_s,
    run_share_wire,
    share_server_configs,
    share_window_metrics,
    span_lag_mean,
    span_lag_peak,
    span_lag_record_s,
    start_offsets,
    windows_converged,
)
from groupcoord.sim.scenario import parse_scenario

GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
T0 = 1_000.0


def _run(batches: dict[str, list[tuple[float, list[tuple[int, int]]]]],
         described: list[tuple[float, bool, tuple[str, ...]]],
         lifetimes: dict[str, list[tuple[float, float | None]]], end: float,
         produced_per_s: float = 10.0) -> ShareWireRun:
    """One partition producing ``produced_per_s`` from T0; each member's batches (end time
    since T0, [(partition, offset)])."""
    produced = {"foo-0": [(T0 + i * 0.1, int(i * 0.1 * produced_per_s))
                          for i in range(int((end - T0) * 10) + 1)]}
    logs = {name: [{"t": T0 + t, "e": "batch", "recs": [[p, o, 1] for p, o in recs]}
                   for t, recs in bs] for name, bs in batches.items()}
    return ShareWireRun(T0, end, [WireWindow("initial-join", 0.0, 1.0),
                                  WireWindow("bounce", 10.0, 12.0)],
                        produced, logs, lifetimes, described)


def _keeping_up(until: float, skip: range = range(0)) -> list[tuple[float, list[tuple[int, int]]]]:
    """A member that processes each record 0.05 s after it is produced (but the seconds in
    ``skip``)."""
    return [(o / 10 + 0.05, [(0, o)]) for o in range(int(until * 10))
            if int(o / 10) not in skip]


def test_a_window_converges_when_the_coordinator_has_every_live_process_at_the_epoch() -> None:
    lifetimes: dict[str, list[tuple[float, float | None]]] = {
        "c1": [(T0, None)], "c2": [(T0, T0 + 10.0), (T0 + 12.0, None)]}
    described = [(T0 + t / 10, True, ("c1", "c2")) for t in range(0, 100)]  # to 10 s: settled
    described += [(T0 + t / 10, True, ("c1", "c2")) for t in range(100, 110)]  # c2 still listed
    described += [(T0 + t / 10, t < 125 or t >= 140, ("c1",) if t < 125 else ("c1", "c2"))
                  for t in range(110, 200)]  # c2 gone, back at 12.5 s, settled from 14 s
    run = _run({"c1": _keeping_up(20.0)}, described, lifetimes, T0 + 20.0)
    conv = dict(converged_at(run))
    assert conv[T0 + 5.0] is True
    assert conv[T0 + 10.5] is False  # the coordinator still lists c2, whose process is gone
    assert conv[T0 + 11.5] is True  # one live process, one member: converged (before settle)
    [w] = share_window_metrics(run)
    assert w["disturbance"] == "bounce" and w["at_ms"] == 10_000
    # not before the disturbance ended (12 s); the group settled again at 14 s
    assert w["time_to_converge_ms"] == pytest.approx(4_000, abs=1)
    assert w["caught_up"] is True
    assert w["records_reprocessed"] == 0
    assert w["lag_peak"] <= 2  # a member that keeps up: a record in flight


def test_the_windows_converge_from_the_describe_answers_alone_as_the_metrics_say() -> None:
    """The closing check's gate (``windows_converged``) reads no log and no production, and
    says converged exactly when ``share_window_metrics`` finds the window converged."""
    lifetimes: dict[str, list[tuple[float, float | None]]] = {
        "c1": [(T0, None)], "c2": [(T0, T0 + 10.0), (T0 + 12.0, None)]}
    described: list[tuple[float, bool, tuple[str, ...]]] = [
        (T0 + t / 10, True, ("c1", "c2")) for t in range(0, 110)]
    described += [(T0 + t / 10, t < 125 or t >= 140, ("c1",) if t < 125 else ("c1", "c2"))
                  for t in range(110, 200)]  # settled again from 14 s
    for upto, converged in ((11.0, False), (13.9, False), (15.5, True)):
        seen = [d for d in described if d[0] <= T0 + upto]
        bare = ShareWireRun(T0, T0 + upto, [WireWindow("initial-join", 0.0, 1.0),
                                            WireWindow("bounce", 10.0, 12.0)],
                            {}, {}, lifetimes, seen)
        assert windows_converged(bare) is converged, upto
        full = _run({"c1": _keeping_up(upto)}, seen, lifetimes, T0 + upto)
        [w] = share_window_metrics(full)
        assert (w["time_to_converge_ms"] is not None) is converged, upto


def test_lag_is_produced_minus_distinct_records_done_and_twice_done_records_are_counted() -> None:
    lifetimes: dict[str, list[tuple[float, float | None]]] = {"c1": [(T0, None)]}
    described = [(T0 + t / 10, True, ("c1",)) for t in range(0, 300)]
    # c1 does nothing from 10 s but the records 100..104 at 15 s, then all of 100..159 at
    # 15.98 s: 100..104 are done a second time (their lock had expired before the ack)
    batches = _keeping_up(30.0, skip=range(10, 16))
    batches.append((15.0, [(0, o) for o in range(100, 105)]))
    batches.append((15.98, [(0, o) for o in range(100, 160)]))
    batches.sort()
    run = _run({"c1": batches}, described, lifetimes, T0 + 30.0)
    [w] = share_window_metrics(run)
    assert 50 <= w["lag_peak"] <= 56  # ~6 s of 10 records/s waited, 5 of them done early
    assert w["lag_mean_before"] <= 1  # kept up before the disturbance: a record in flight
    assert w["lag_peak_before"] <= 2
    assert w["records_reprocessed"] == 5
    # the window closes once caught up (16 s), so its lag integral is the backlog's
    assert w["span"][1] == pytest.approx(16.0, abs=0.06)
    assert 150 <= w["lag_record_s"] <= 200  # ~ 1/2 * 5 s * 50 + ~1 s * 50
    # a control that kept up over the same span: its lag integral is the records in flight
    control = _run({"c1": _keeping_up(30.0)}, described, lifetimes, T0 + 30.0)
    assert span_lag_record_s(control, w["span"]) < 5
    assert span_lag_peak(control, w["span"]) <= 1  # a record in flight at most
    assert span_lag_mean(control, w["span"]) <= 1
    assert 20 <= span_lag_mean(run, (10.0, 16.0)) <= 35  # the backlog: half of ~55 on average


def test_records_before_a_partitions_first_fetch_are_no_lag() -> None:
    # share.auto.offset.reset latest: the group's first fetch of foo-0 came at offset 40 (4 s
    # of production); those 40 records are never delivered and are no lag, at any time
    lifetimes: dict[str, list[tuple[float, float | None]]] = {"c1": [(T0, None)]}
    described = [(T0 + t / 10, True, ("c1",)) for t in range(0, 200)]
    batches = [(b, recs) for b, recs in _keeping_up(20.0) if recs[0][1] >= 40]
    run = _run({"c1": batches}, described, lifetimes, T0 + 20.0)
    assert start_offsets(run) == {0: 40}
    ts, lag = lag_series(run)
    after = ts >= T0 + 5.0
    assert lag[after].max() <= 2  # a record in flight, not 40 never delivered
    [w] = share_window_metrics(run)
    assert w["lag_peak"] <= 2 and w["lag_mean_before"] <= 1


def test_partitions_stopped_are_those_no_live_process_has_in_its_members_assignment() -> None:
    # two partitions; c2 holds foo-1 until its process stops at 10 s; the coordinator still
    # lists it (its session) until 12 s, when c1's member is given foo-1 (its heartbeat)
    lifetimes: dict[str, list[tuple[float, float | None]]] = {"c1": [(T0, None)],
                                                             "c2": [(T0, T0 + 10.0)]}
    described = [(T0 + t / 10, True, ("c1", "c2") if t < 120 else ("c1",))
                 for t in range(0, 200)]
    assigned = [(T0 + t / 10, {"c1": ("foo-0",), "c2": ("foo-1",)} if t < 120 else
                 {"c1": ("foo-0", "foo-1")}) for t in range(0, 200)]
    run = _run({"c1": _keeping_up(20.0)}, described, lifetimes, T0 + 20.0)
    run.produced["foo-1"] = list(run.produced["foo-0"])
    assert partitions_stopped_s(run, T0, T0 + 20.0) is None  # no assignments read
    run.assigned = assigned
    # foo-1 from 10 s (c2's process gone) to 12 s (c1 has it): 2 partition·s
    assert partitions_stopped_s(run, T0, T0 + 20.0) == pytest.approx(2.0, abs=1e-6)
    assert partitions_stopped_s(run, T0 + 11.0, T0 + 20.0) == pytest.approx(1.0, abs=1e-6)
    [w] = share_window_metrics(run)
    assert w["resource_downtime_ms"] == 2_000


def test_a_window_that_never_converges_runs_to_the_end_of_the_run() -> None:
    lifetimes: dict[str, list[tuple[float, float | None]]] = {"c1": [(T0, None)],
                                                             "c2": [(T0, T0 + 10.0)]}
    described = [(T0 + t / 10, True, ("c1", "c2")) for t in range(0, 200)]  # never expired
    run = _run({"c1": _keeping_up(20.0)}, described, lifetimes, T0 + 20.0)
    [w] = share_window_metrics(run)
    assert w["time_to_converge_ms"] is None and w["caught_up"] is False
    assert w["closed"] is False
    assert w["span"] == (10.0, pytest.approx(20.0))


def test_a_group_that_never_catches_up_closes_its_window_a_minute_after_converging() -> None:
    """The simulator's rule (``sim.share.may_end``): a member left with more than it can do
    never catches up, so the window ends ``RECOVERY_WAIT_MS`` after the convergence, not at
    whatever time the run ends (a lag integral over a longer window is a larger one)."""
    lifetimes: dict[str, list[tuple[float, float | None]]] = {"c1": [(T0, None)]}
    described = [(T0 + t / 10, True, ("c1",)) for t in range(0, 1200)]
    # c1 keeps up until 10 s, then does only every other record
    batches = _keeping_up(10.0) + [(o / 10 + 0.05, [(0, o)]) for o in range(100, 1200, 2)]
    run = _run({"c1": batches}, described, lifetimes, T0 + 120.0)
    [w] = share_window_metrics(run)
    assert w["time_to_converge_ms"] == pytest.approx(2_000, abs=1)  # at settle (12 s)
    assert w["caught_up"] is False and w["closed"] is True
    assert w["span"] == (10.0, pytest.approx(72.0))


def test_within_2x_with_the_share_floors() -> None:
    assert share_within_2x("time_to_converge_ms", 14_604, 14_562) is True
    assert share_within_2x("excess_lag_record_s", 2_359, 5_000) is False
    assert share_within_2x("excess_lag_record_s", -12.0, 30.0) is True  # both under 50
    assert share_within_2x("records_reprocessed", 0, 40) is True  # under the 50-record floor
    assert share_within_2x("records_reprocessed", 0, 80) is False
    assert share_within_2x("lag_peak", None, 3) is None


def test_the_server_gets_the_share_settings_with_bounds_around_them() -> None:
    conf = share_server_configs({"group.share.heartbeat.interval.ms": 5000,
                                 "group.share.session.timeout.ms": 45000,
                                 "group.share.assignment.interval.ms": 1000,
                                 "group.share.record.lock.duration.ms": 30000,
                                 "group.share.delivery.count.limit": 5})
    assert conf["group.share.record.lock.duration.ms"] == "30000"
    assert conf["group.share.delivery.count.limit"] == "5"
    assert int(conf["group.share.min.session.timeout.ms"]) <= 45000 <= int(
        conf["group.share.max.session.timeout.ms"])
    assert int(conf["group.share.min.record.lock.duration.ms"]) <= 30000


def test_the_cells_are_the_share_specs_runs() -> None:
    runs = cell_params("bounce", 4, 2)
    assert [r.replicate for r in runs] == [0, 1]
    assert {(r.protocol, r.workload, r.scenario, r.size) for r in runs} == {
        ("share:simple", "1x4-busy", "bounce", 4)}
    with pytest.raises(CalibrationError, match=r"not in share\.toml"):
        cell_params("scale-out", 4, 1)
    with pytest.raises(CalibrationError, match="size 5"):
        cell_params("bounce", 5, 1)


def test_a_cell_on_another_workload_and_the_drawn_timings_the_wire_plays() -> None:
    runs = cell_params("rolling-bounce", 12, 3, workload="1x12-busy")
    assert {(r.workload, r.scenario, r.size) for r in runs} == {("1x12-busy", "rolling-bounce", 12)}
    with pytest.raises(CalibrationError, match="workload 'nope'"):
        cell_params("bounce", 4, 1, workload="nope")
    with pytest.raises(CalibrationError, match="no share:simple cell"):
        cell_params("crowd-crash", 4, 1, workload="1x4-fast")  # lock-limit: 12 members only
    # each replicate's scenario (both sides play it) has the seed's own draws: the wire's
    # schedule spaces the bounces and restarts by the drawn values, the simulator's events
    # carry the same
    seen = set()
    for p in runs:
        sc = cell_scenario(p)
        drawn = dict(sc.drawn)
        assert set(drawn) == {"interval_ms", "down_ms"}
        assert 12_000 <= drawn["interval_ms"] <= 18_000 and 2_000 <= drawn["down_ms"] <= 10_000
        [e] = sc.events
        assert (e["interval_ms"], e["down_ms"]) == (drawn["interval_ms"], drawn["down_ms"])
        acts, _ = _actions(sc, p.seed)
        stops = [a[0] for a in acts if a[1] == "stop"]
        assert len(stops) == 12
        assert stops[1] - stops[0] == pytest.approx(drawn["interval_ms"] / 1000)
        c1_back = [a[0] for a in acts if a[1] == "go" and a[2] == "c1"][-1]
        assert c1_back - stops[0] == pytest.approx(drawn["down_ms"] / 1000)
        seen.add(tuple(drawn.values()))
    assert len(seen) == 3  # drawn per seed, not one fixed timing


def test_the_wire_kills_the_owner_the_simulator_draws() -> None:
    from groupcoord.sim.scenario import pick_owner

    picked = set()
    for p in cell_params("owner-kill", 12, 3):
        sc = cell_scenario(p)
        [e] = sc.events
        assert e.kind == "kill" and e["member"] == "@owner"
        acts, windows = _actions(sc, p.seed)
        [stop] = [a for a in acts if a[1] == "stop"]
        # at 12 members on 4 partitions every live member holds one: the simulator's draw
        # among them (its seed, the event's time), killed -9 (hard) at the event's time
        assert stop[2] == pick_owner([f"c{i}" for i in range(1, 13)], p.seed, e.at_ms)
        assert stop[3] is True and stop[0] == pytest.approx(e.at_ms / 1000)
        assert windows[1].label == "kill"
        picked.add(stop[2])
    assert len(picked) > 1  # drawn per seed


def _cell(scenario: str, size: int, workload: str, wire_peak: int) -> ShareCell:
    row = {"time_to_converge_ms": 14_000, "lag_peak": 100, "excess_lag_peak": 10,
           "excess_lag_record_s": 20.0, "resource_downtime_ms": 0, "records_reprocessed": 0}
    own = {"excess_lag_peak_own": 10, "excess_lag_own_record_s": 20.0}
    return ShareCell(scenario, size, workload,
                     sim=[{"seed": 7, "at_ms": 31_000, "drawn": {"down_ms": 7_291}, **row}],
                     wire=[{"seed": 7, "at_ms": 31_000, "drawn": {"down_ms": 7_291}, **row,
                            **own, "lag_peak": wire_peak}],
                     settings={"group.share.heartbeat.interval.ms": 5_000},
                     measured={"load": [3.1, 4.2], "wall_s": 300})


def test_saved_cells_replace_their_own_in_place_and_a_sentence_reads_them(
        tmp_path: Path) -> None:
    path = tmp_path / "share_calibration.json"
    save_share_calibration([_cell("bounce", 4, "1x12-busy", 120),
                            _cell("crowd-crash", 4, "1x12-busy", 110)], path)
    save_share_calibration([_cell("rolling-bounce", 12, "1x4-busy", 300)], path)
    # the bounce again, now a miss: replaced where it was, the others kept
    save_share_calibration([_cell("bounce", 4, "1x12-busy", 900)], path)
    doc = json.loads(path.read_text())
    order = [(c["workload"], c["scenario"], c["members"]) for c in doc["cells"]]
    assert order == [("1x12-busy", "crowd-crash", 4), ("1x12-busy", "bounce", 4),
                     ("1x4-busy", "rolling-bounce", 12)]
    bounce = doc["cells"][1]
    assert bounce["verdict"] == "not within 2x: lag_peak"
    assert bounce["ratios"]["lag_peak"] == pytest.approx(100 / 900, abs=0.01)
    assert bounce["timings"] == [{"seed": 7, "at_ms": 31_000, "down_ms": 7_291}]
    assert bounce["settings"] == {"group.share.heartbeat.interval.ms": 5_000}
    assert bounce["measured"]["load"] == [3.1, 4.2]
    assert "records_reprocessed 50" in doc["tolerance"]
    # the report's calibration line of a sentence on that cell reads the file
    cells = load_share_calibration(path)
    note = share_calibration_note("bounce", 4, ["share:simple"], cells=cells, cal={},
                                  workload="1x12-busy")
    assert "bounce at 4 members on 1x12-busy (1 wire runs, each run at its seed's drawn " \
           "down_ms)" in note
    assert "all metrics: not within 2x: lag peak" in note
    assert share_calibration_note("bounce", 4, ["share:simple"], cells=cells, cal={},
                                  workload="1x4-busy").endswith("uncalibrated (share:simple)")
    # the consumer side of the same cell, saved beside it: its own row, and the note says
    # which sides of a sentence that compares the two have a wire row
    both = ["share:simple", "consumer:uniform"]
    note = share_calibration_note("bounce", 4, both, cells=cells, cal={}, workload="1x12-busy")
    assert "consumer:uniform" not in note.split("; sides")[0]
    assert note.endswith("sides on the wire: share:simple only (consumer:uniform: no wire row "
                         "of this cell)")
    consumer = _cell("bounce", 4, "1x12-busy", 100)
    consumer.protocol = "consumer:uniform"
    consumer.measured["client"] = "confluent-kafka 2.16.1 Consumer (librdkafka 2.16.1), " \
        "group.protocol=consumer"
    save_share_calibration([consumer], path)
    doc = json.loads(path.read_text())
    assert [(c["scenario"], c["protocol"]) for c in doc["cells"]][:3] == [
        ("crowd-crash", "share:simple"), ("bounce", "share:simple"),
        ("bounce", "consumer:uniform")]  # beside the share row, which it did not replace
    note = share_calibration_note("bounce", 4, both, cells=load_share_calibration(path),
                                  cal={}, workload="1x12-busy")
    assert "consumer:uniform against real consumers (confluent-kafka 2.16.1 Consumer" in note
    assert "share:simple against real share consumers" in note
    assert note.endswith("sides on the wire: every one (share:simple, consumer:uniform)")
    # a crash row says how the wire played the crash
    crash = _cell("crowd-crash", 4, "1x12-busy", 100)
    assert "the crash played as SIGKILL (a kill" in share_calibration_note(
        "crowd-crash", 4, ["share:simple"], cells=as_json([crash]), cal={}, workload="1x12-busy")
    crash.measured["crash"] = "SIGSTOP (a lost host: nothing closes; killed after the run)"
    assert "the crash played as SIGSTOP, a lost host" in share_calibration_note(
        "crowd-crash", 4, ["share:simple"], cells=as_json([crash]), cal={}, workload="1x12-busy")
    # a file that is not JSON is not overwritten
    path.write_text("{oops")
    with pytest.raises(CalibrationError, match="not JSON"):
        save_share_calibration([_cell("bounce", 4, "1x12-busy", 120)], path)
    assert path.read_text() == "{oops"


def test_the_table_marks_each_miss_by_its_metric() -> None:
    cell = ShareCell("bounce", 4,
                     sim=[{"seed": 1, "time_to_converge_ms": 14_000, "lag_peak": 400,
                           "excess_lag_peak": 380, "excess_lag_record_s": 3_000,
                           "resource_downtime_ms": 300, "records_reprocessed": 0}],
                     wire=[{"seed": 1, "time_to_converge_ms": 15_000, "lag_peak": 1_000,
                            "excess_lag_peak": 600, "excess_lag_record_s": 3_500,
                            # over its own 20 s before: kept beside, not checked
                            "excess_lag_peak_own": 5_000, "excess_lag_own_record_s": 90_000,
                            "resource_downtime_ms": 2_000, "records_reprocessed": 0}])
    assert cell.checks() == {"time_to_converge_ms": True, "lag_peak": False,
                             "excess_lag_peak": True, "excess_lag_record_s": True,
                             "resource_downtime_ms": False, "records_reprocessed": True}
    table = format_share_table([cell])
    assert ("| bounce | 4 | 1x4-busy | 1 | 14,000 / 15,000 (0.93) | 400 / 1,000 (0.40) | "
            "380 / 600 (0.63) |") in table
    assert "**no** (lag_peak, resource_downtime_ms)" in table
    assert verdict(cell) == "not within 2x: lag_peak, resource_downtime_ms"
    assert ratios(cell)["lag_peak"] == 0.4 and ratios(cell)["records_reprocessed"] is None
    assert len(METRICS) == 6
    [doc] = as_json([cell])
    assert doc["medians"]["excess_lag_record_s"] == {"sim": 3_000, "wire": 3_500}
    assert doc["wire"][0]["excess_lag_own_record_s"] == 90_000


def test_the_command_simulates_a_cell_without_the_wire_and_refuses_a_bad_one() -> None:
    out = subprocess.run([*GROUPCOORD, "lab", "calibrate", "--share", "--sim-only",
                          "--scenario", "bounce", "--size", "12", "--repeat", "1", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    row = next(line for line in out.stdout.splitlines() if line.startswith("| bounce | 12 |"))
    sim_converge = row.split("|")[5].split("/")[0].strip()
    assert sim_converge not in ("", "-")  # the simulator converged the bounce
    for args in (["--scenario", "nope"], ["--workload", "nope"],
                 ["--workload", "records_per_s=5"], ["--sim-only", "--save"]):
        bad = subprocess.run([*GROUPCOORD, "lab", "calibrate", "--share", *args],
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2, args
        assert "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr


SMALL: dict[str, Any] = {
    "name": "share-small", "description": "two share consumers on foo; c1 is lost",
    "group": {"members": 2, "topics": {"foo": 2}},
    "events": [{"at_ms": 6000, "kind": "crash", "member": "c1"}],
}


def test_real_share_consumers_on_a_small_crash(tmp_path: Path) -> None:
    """Two ShareConsumers on two partitions, c1 lost at 6 s (SIGSTOP, a lost host): the
    coordinator removes it at its session timeout (4 s), c2 takes its partition and what c1 had
    acquired comes back after its lock (3 s); every record produced is done by the end. Fails
    if the share path (the member process, ShareFetch and acknowledgement, the describe poller)
    is broken."""
    pytest.importorskip("confluent_kafka")
    sc = parse_scenario(SMALL, source="share-small")
    settings = {"group.share.heartbeat.interval.ms": 500,
                "group.share.session.timeout.ms": 4000,
                "group.share.assignment.interval.ms": 0,
                "group.share.record.lock.duration.ms": 3000,
                "group.share.delivery.count.limit": 5}
    run = run_share_wire(sc, settings, WireWorkload(records_per_s=20, max_poll_records=50),
                         2.0, seed=1, tail_s=1.0, converge_timeout_s=40.0,
                         keep_dir=tmp_path / "run")
    assert run.server_config["group.share.record.lock.duration.ms"] == "3000"
    # both processes were members of the share group, then c2 alone
    assert any(sorted(c) == ["c1", "c2"] for _t, ok, c in run.described if ok)
    assert run.described[-1][2] == ("c2",)
    [w] = share_window_metrics(run)
    assert w["disturbance"] == "crash"
    # the session timeout (4 s) and a heartbeat or two; a liveness bound, not a timing figure
    assert w["time_to_converge_ms"] is not None and 3_000 <= w["time_to_converge_ms"] <= 30_000
    assert w["caught_up"] is True
    assert w["lag_peak"] > 0  # c1's partition waited
    # its partition had no live member from the kill until c2's member was given it (the
    # session timeout, 4 s, then c2's heartbeat): read from ShareGroupDescribe's assignments
    assert any(sorted(held) == ["c1", "c2"] and all(held.values()) for _t, held in run.assigned)
    assert w["resource_downtime_ms"] is not None and 2_000 <= w["resource_downtime_ms"] <= 30_000
    done = {(int(r[0]), int(r[1])) for lines in run.logs.values() for d in lines
            if d["e"] == "batch" for r in d["recs"]}
    assert {p for p, _ in done} == {0, 1}
    # every record produced before the group converged after the crash (what c1 had acquired
    # included) was done by c1 or by c2 by the end; a fixed margin before the end instead
    # depended on the machine's load (c2's last acknowledgements can trail by seconds)
    converged = run.t0 + w["at_ms"] / 1000 + w["time_to_converge_ms"] / 1000
    for key, series in run.produced.items():
        p = int(key.rsplit("-", 1)[1])
        upto = max(n for t, n in series if t <= converged)
        # share.auto.offset.reset is "latest" (KIP-932's default): records produced before the
        # group first fetched the partition are not delivered, so count from the first offset
        # delivered (under load the members start later and more records precede them)
        first = min(o for q, o in done if q == p)
        assert first < upto, key
        missing = [o for o in range(first, upto) if (p, o) not in done]
        assert not missing, (key, upto, missing[:20], len(missing))


LOST: dict[str, Any] = {
    "name": "share-lost-host", "description": "two share consumers on one partition; c1's host "
    "is lost", "group": {"members": 2, "topics": {"foo": 1}},
    "events": [{"at_ms": 6000, "kind": "crash", "member": "c1"}],
}


def test_a_crash_on_the_wire_is_a_lost_host_and_a_kill_closes() -> None:
    """``crash`` is SIGSTOP on the share wire (``hang``), ``kill`` SIGKILL; consumers keep the
    kill unless asked (``lost_host``)."""
    for kind, lost, action in (("crash", True, "hang"), ("kill", True, "stop"),
                               ("crash", False, "stop")):
        sc = parse_scenario({**LOST, "events": [{**LOST["events"][0], "kind": kind}]},
                            source="lost")
        acts, _ = _actions(sc, 1, lost)
        [stop] = [a for a in acts if a[1] in ("stop", "hang")]
        assert stop[1:] == (action, "c1", True)


def test_a_lost_share_member_holds_its_records_until_their_lock_and_its_membership_until_its_session(
        tmp_path: Path) -> None:
    """Two ShareConsumers fetch one partition (both have it: KIP-932's simple assignor), both
    busy (20 ms a record, 100 records/s), so c1 holds acquired records when its host is lost
    (SIGSTOP at 6 s). What it held is delivered again (to c2, delivery count 2) only after
    ``share.record.lock.duration.ms`` (4 s) from c1's poll that acquired it, and c1 stays a
    member until its session timeout (8 s) expires. Fails if the crash closes anything: a
    killed process's connections close and the server releases its records at once, well
    inside the lock."""
    pytest.importorskip("confluent_kafka")
    sc = parse_scenario(LOST, source="share-lost-host")
    lock_s, session_s = 4.0, 8.0
    settings = {"group.share.heartbeat.interval.ms": 500,
                "group.share.session.timeout.ms": int(session_s * 1000),
                "group.share.assignment.interval.ms": 0,
                "group.share.record.lock.duration.ms": int(lock_s * 1000),
                "group.share.delivery.count.limit": 5}
    run = run_share_wire(sc, settings, WireWorkload(records_per_s=100, max_poll_records=10),
                         20.0, seed=1, tail_s=1.0, converge_timeout_s=15.0,
                         keep_dir=tmp_path / "run")
    [(_start, stopped)] = run.lifetimes["c1"]
    assert stopped is not None
    polled = {(int(r[0]), int(r[1])): float(d["t"]) for d in run.logs["c1"]
              if d["e"] == "poll" for r in d["recs"]}
    processed = {(int(r[0]), int(r[1])) for d in run.logs["c1"] if d["e"] == "batch"
                 for r in d["recs"]}
    held = {k: t for k, t in polled.items() if k not in processed}
    assert held, "c1 held no acquired record when it was stopped"
    again = {(int(r[0]), int(r[1])): float(d["t"]) for d in run.logs["c2"]
             if d["e"] == "poll" for r in d["recs"] if int(r[2]) >= 2}
    back = {k: again[k] for k in held if k in again}
    assert back, "none of c1's held records came back to c2"
    for k, t in back.items():
        # after the lock from c1's acquisition (its poll's return; the lock began a little
        # before it), never at the stop
        assert t - held[k] >= lock_s - 0.5, (k, t - held[k], t - stopped)
    assert min(back.values()) - stopped >= 1.0  # nothing came back at the stop
    # c1 was still a member for about its session timeout, then removed
    still = [t for t, _ok, clients in run.described if "c1" in clients and t > stopped]
    gone = [t for t, _ok, clients in run.described if clients and "c1" not in clients
            and t > stopped]
    assert still and max(still) - stopped >= session_s - 1.5
    assert gone and min(gone) - stopped <= session_s + 6.0


CONSUMERS_LOST: dict[str, Any] = {
    "name": "consumers-lost-host", "description": "two KIP-848 consumers on foo; c1's host is "
    "lost", "group": {"members": 2, "topics": {"foo": 2}},
    "coordinator": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
                    "assignment_interval_ms": 0},
    "workload": {"records_per_s": 20, "processing_ms": 5, "max_poll_records": 50},
    "events": [{"at_ms": 8000, "kind": "crash", "member": "c1"}],
}


def test_the_consumer_side_of_a_lost_host_on_the_wire(tmp_path: Path) -> None:
    """The share comparison's consumer side with real KIP-848 consumers
    (``lab.wire_share_consumer``): c1's host is lost at 8 s (SIGSTOP), its partition has no
    live owner until its session (6 s) expires and c2 is given it, and the window is measured
    as the share side's (converged, then caught up). Fails if the consumer path (the run, the
    lost host, the window's metrics from the consumers' logs) is broken."""
    pytest.importorskip("confluent_kafka")
    from groupcoord.lab.wire_share_consumer import (
        consumer_window_metrics,
        run_consumer_wire,
        span_lag,
    )

    sc = parse_scenario(CONSUMERS_LOST, source="consumers-lost-host")
    run = run_consumer_wire(sc, 1, keep_dir=tmp_path / "run", tail_s=3.0)
    [w] = consumer_window_metrics(run)
    assert w["disturbance"] == "crash"
    # the session timeout (6 s) and the next heartbeat; a liveness bound, not a timing figure
    assert w["time_to_converge_ms"] is not None and 5_000 <= w["time_to_converge_ms"] <= 30_000
    # one partition without a live owner from the loss until c2 owns it
    assert 4_000 <= w["resource_downtime_ms"] <= w["time_to_converge_ms"] + 2_000
    assert w["lag_peak"] >= 4 * 20 * 0.5  # c1's partition waited seconds at 20 records/s
    assert w["caught_up"] is True and w["closed"] is True
    record_s, peak, before = span_lag(run, w["span"])
    assert record_s == pytest.approx(w["lag_record_s"], abs=1.0) and peak == w["lag_peak"]
    assert before is not None and before < w["lag_peak"]


def test_a_partition_held_at_the_record_lock_limit_is_stopped_though_assigned() -> None:
    """A partition whose records no member was handed for 5 s while c1 had it is held at the
    record-lock limit (the model's lost host's locks pinning the share-partition start
    offset): partitions stopped counts it with the unassigned time, never twice."""
    polls = [T0 + i * 0.1 for i in range(200) if not 50 <= i < 100]  # none from 5 s to 10 s
    run = ShareWireRun(T0, T0 + 20.0, [WireWindow("initial-join", 0.0, 1.0),
                                       WireWindow("crash", 4.0, 4.0)],
                       {"foo-0": [(T0, 0), (T0 + 20.0, 1_000)]},
                       {"c1": [{"t": t, "e": "poll", "recs": [[0, int((t - T0) * 50), 1]]}
                               for t in polls]},
                       {"c1": [(T0, None)]}, [(T0, True, ("c1",))],
                       assigned=[(T0, {"c1": ("foo-0",)})])
    held = lock_held_s(run, T0 + 4.0, T0 + 20.0)
    assert held["foo-0"] == pytest.approx(5.1, abs=0.01)
    assert partitions_stopped_s(run, T0 + 4.0, T0 + 20.0) == pytest.approx(5.1, abs=0.01)
    assert lock_held_s(run, T0 + 12.0, T0 + 20.0)["foo-0"] == 0.0  # outside the span
    # the same gap while nobody had the partition: unassigned, counted once
    run.assigned = [(T0, {"c1": ("foo-0",)}), (T0 + 4.9, {}), (T0 + 10.0, {"c1": ("foo-0",)})]
    assert lock_held_s(run, T0 + 4.0, T0 + 20.0)["foo-0"] == pytest.approx(0.0, abs=0.01)
    assert partitions_stopped_s(run, T0 + 4.0, T0 + 20.0) == pytest.approx(5.1, abs=0.01)


def _poll(t: float, recs: list[tuple[int, int, int]]) -> dict[str, Any]:
    return {"t": T0 + t, "e": "poll", "recs": [list(r) for r in recs]}


def _batch(t: float, recs: list[tuple[int, int, int]]) -> dict[str, Any]:
    return {"t": T0 + t, "e": "batch", "recs": [list(r) for r in recs]}


@pytest.mark.parametrize("busy", [True, False])
def test_what_a_lost_host_held_is_read_from_what_came_back_after_its_lock(busy: bool) -> None:
    """c1 shares partition 0 with c2 and is stopped (SIGSTOP) at 10 s. ``busy``: its
    application had a batch of offsets 8-9 in hand; else it had finished every batch and was in
    its next poll, and the broker answered its outstanding ShareFetch after the stop with
    offsets 10-11, which its application never saw. Either way the records come back to c2
    with delivery count 2 after the lock, and the lost host pinned its partition; the live
    members' applications held a batch 0.2 s of each second."""
    c1 = [_poll(t, [(0, int(t), 1)]) for t in range(1, 8)]
    c1 += [_batch(t + 0.2, [(0, int(t), 1)]) for t in range(1, 8)]
    if busy:
        c1.append(_poll(9.9, [(0, 8, 1), (0, 9, 1)]))
        back = [(0, 8, 2), (0, 9, 2)]
    else:
        c1 += [_poll(8.0, [(0, 8, 1), (0, 9, 1)]), _batch(8.2, [(0, 8, 1), (0, 9, 1)])]
        back = [(0, 10, 2), (0, 11, 2)]
    c2 = [_poll(t + 0.5, [(0, 100 + int(t), 1)]) for t in range(1, 10)]
    c2 += [_batch(t + 0.7, [(0, 100 + int(t), 1)]) for t in range(1, 10)]
    c2 += [_poll(40.5, back), _batch(40.6, back), _poll(41.0, [(0, 200, 1)]),
           {"t": T0 + 45.0, "e": "closing"},
           _poll(45.1, [(0, 300, 2)])]  # released by a closing member at the run's end
    run = ShareWireRun(T0, T0 + 50.0, [WireWindow("initial-join", 0.0, 1.0),
                                       WireWindow("crash", 10.0, 10.0)],
                       {"foo-0": [(T0, 0), (T0 + 50.0, 500)]},
                       {"c1": sorted(c1, key=lambda d: d["t"]),
                        "c2": sorted(c2, key=lambda d: d["t"])},
                       {"c1": [(T0, T0 + 10.02)], "c2": [(T0, None)]}, [(T0, True, ("c1", "c2"))])
    [held] = lost_host_holds(run)
    assert held["member"] == "c1" and held["pinned"] is True and held["redelivered"] == 2
    if busy:
        assert held["in_hand"] == 2 and held["acquired_unseen"] == 0
    else:
        assert held["in_hand"] == 0 and held["acquired_unseen"] == 2
        assert held["since_last_batch_s"] == pytest.approx(1.82, abs=0.001)
    # each application held its batch 0.2 s of every second
    assert batch_in_hand_fraction(run, T0 + 1.0, T0 + 8.0) == pytest.approx(0.2, abs=0.001)
    # a crash window without a hung process found (none stopped near it): nothing read
    run.lifetimes = {"c1": [(T0, T0 + 30.0)], "c2": [(T0, None)]}
    assert lost_host_holds(run) == []


def test_a_lost_host_cell_counts_the_seeds_that_stopped_on_each_side() -> None:
    """The lock-limit stop is a draw per seed (did the lost host hold records): a lost-host
    cell counts the runs whose partition stopped on each side, the paired seeds only, and what
    the wire's lost hosts held; the saved cell and ``--windows`` carry the counts."""
    held = {"member": "c2", "in_hand": 0, "since_last_batch_s": 0.1, "redelivered": 30,
            "acquired_unseen": 30, "pinned": True}
    cell = ShareCell("owner-crash", 12, "1x4-hot",
                     sim=[{"seed": i, "resource_downtime_ms": d}
                          for i, d in enumerate([23_358, 0, 0, 400, 23_371])],
                     wire=[{"seed": 0, "resource_downtime_ms": 23_303, "lost_host": held},
                           {"seed": 1, "resource_downtime_ms": 23_349,
                            "lost_host": {**held, "in_hand": 6, "acquired_unseen": 0}},
                           {"seed": 2, "resource_downtime_ms": 0,
                            "lost_host": {**held, "redelivered": 0, "acquired_unseen": 0,
                                          "pinned": False}},
                           {"seed": 3, "resource_downtime_ms": 23_360, "lost_host": held}])
    n = lost_host_counts(cell)
    assert n == {"runs": 4, "sim_stopped": 1, "wire_stopped": 3, "wire_pinned": 3,
                 "wire_in_hand": 1, "wire_acquired_unseen": 2}
    [saved] = as_json([cell])
    assert saved["lost_host"] == n
    assert "partition stopped on 1 of 4 seeds simulated, 3 of 4 wire runs" in \
        format_share_runs([cell])
    assert lost_host_counts(ShareCell("bounce", 12)) is None
    assert "lost_host" not in as_json([ShareCell("bounce", 12)])[0]


def test_a_consumer_groups_owner_is_drawn_among_the_members_that_own_a_partition_then() -> None:
    """At 12 consumers on 4 partitions 8 are idle: the consumer side's ``@owner`` is left for
    the run to draw at the event among the members that own a partition then (their logs'
    assignments), with the simulator's draw; the share wire draws ahead (every share member
    has a partition)."""
    from groupcoord.lab.wire import WireRun, owners_now
    from groupcoord.sim.scenario import pick_owner

    [p] = cell_params("owner-crash", 12, 1, protocol="consumer:uniform")
    sc = cell_scenario(p)
    acts, _ = _actions(sc, p.seed, True, owner_at_event=True)
    [hang] = [a for a in acts if a[1] == "hang"]
    assert hang[2] == f"@owner@{sc.events[0].at_ms}"
    assert not _actions(sc, p.seed, True)[0][-1][2].startswith("@")  # drawn ahead otherwise
    logs: dict[str, list[dict[str, Any]]] = {f"c{i}": [] for i in range(1, 13)}
    for i, n in enumerate(("c2", "c5", "c7", "c11")):
        logs[n].append({"t": T0 + 1.0, "e": "assign", "parts": [["foo", i]]})
    logs["c5"].append({"t": T0 + 5.0, "e": "revoke", "parts": [["foo", 1]]})
    logs["c9"].append({"t": T0 + 5.5, "e": "assign", "parts": [["foo", 1]]})
    run = WireRun("consumer:uniform", "consumer", T0, T0 + 20.0,
                  [WireWindow("initial-join", 0.0, 0.0)], {}, logs,
                  {n: [(T0, T0 + 8.0 if n == "c7" else None)] for n in logs},
                  [f"foo-{i}" for i in range(4)], [[f"foo-{i}" for i in range(4)]], 10.0, T0,
                  10.0)
    assert owners_now(run, T0 + 3.0) == ["c2", "c5", "c7", "c11"]
    assert owners_now(run, T0 + 9.0) == ["c2", "c9", "c11"]  # c5 revoked, c7's process gone
    assert pick_owner(owners_now(run, T0 + 9.0), p.seed, 30_000) in {"c2", "c9", "c11"}


CONSUMERS_IDLE: dict[str, Any] = {
    "name": "consumers-idle", "description": "twelve KIP-848 consumers on four partitions; an "
    "owner's host is lost", "group": {"members": 12, "topics": {"foo": 4}},
    "coordinator": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
                    "assignment_interval_ms": 0},
    "workload": {"records_per_s": 20, "processing_ms": 2, "max_poll_records": 50},
    "events": [{"at_ms": 15000, "kind": "crash", "member": "@owner"}],
}


def test_twelve_consumers_on_four_partitions_converge_with_eight_owning_nothing(
        tmp_path: Path) -> None:
    """KIP-848 ("Reconciliation"): a member whose target assignment is empty has converged
    once its epoch reaches the target, owning nothing. librdkafka calls no rebalance callback
    for an empty first assignment, so the wire reads those members from the coordinator
    (``lab.wire_idle``): 12 real consumers on 4 partitions converge at their initial join and
    again after an owner's host is lost (its partition goes to another member after the
    session timeout), and the run ends there rather than at its convergence timeout. Without
    the coordinator's view neither window ever converged (8 members never logged a line)."""
    pytest.importorskip("confluent_kafka")
    from groupcoord.lab.wire import run_wire
    from groupcoord.lab.wire_metrics import convergence
    from groupcoord.lab.wire_share_consumer import consumer_window_metrics, consumer_workload

    sc = parse_scenario(CONSUMERS_IDLE, source="consumers-idle")
    run = run_wire(sc, "consumer:uniform", consumer_workload(sc), tail_s=2.0, seed=1,
                   keep_dir=tmp_path / "run", lost_host=True, owner_at_event=True,
                   converge_timeout_s=40.0)
    idle = sorted(n for n, lines in run.logs.items() if any(d["e"] == "idle" for d in lines))
    owners = {n for n, lines in run.logs.items()
              if any(d["e"] == "assign" and d["parts"] for d in lines)}
    join, crash = convergence(run)
    assert join is not None and join - run.t0 < 15.0  # converged before the crash
    never_owned = set(run.logs) - owners  # 12 members, 4 owners at first, 1 more after
    assert len(never_owned) >= 6 and never_owned <= set(idle)
    # the coordinator's last answer of the run: the 11 live consumers, all at the group's epoch
    last = [d for d in run.described if d[0] <= run.end][-1]
    assert last[1] and len(last[2]) == 11
    [w] = consumer_window_metrics(run)
    # the session timeout (6 s) and the next heartbeats; a liveness bound, not a timing figure
    assert w["time_to_converge_ms"] is not None and 5_000 <= w["time_to_converge_ms"] <= 25_000
    assert crash is not None and run.end - crash == pytest.approx(2.0, abs=1.5)  # the tail
    assert 4_000 <= w["resource_downtime_ms"] <= w["time_to_converge_ms"] + 2_000


def test_a_lost_idle_consumer_leaves_the_group_converged_only_at_its_session_timeout() -> None:
    """KIP-848: an idle member's lost host moves no partition, but the group has converged only
    once the coordinator has removed it (its session timeout) and every member has reached the
    new group epoch, as the simulator counts it; the wire reads that from ConsumerGroupDescribe
    (``WireRun.described``). Without the coordinator's view the window closed at the stop."""
    from groupcoord.lab.wire import WireRun
    from groupcoord.lab.wire_metrics import convergence

    logs: dict[str, list[dict[str, Any]]] = {
        "c1": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 0]]}],
        "c2": [{"t": T0 + 1.0, "e": "assign", "parts": [["foo", 1]]}],
        "c3": [{"t": T0 + 1.5, "e": "idle"}]}
    names = ("c1", "c2", "c3")
    described = [(T0 + 1.2, True, names), (T0 + 16.0, False, ("c1", "c2")),
                 (T0 + 18.5, True, ("c1", "c2"))]
    run = WireRun("consumer:uniform", "consumer", T0, T0 + 30.0,
                  [WireWindow("initial-join", 0.0, 0.0), WireWindow("crash", 10.0, 10.0)], {},
                  logs, {"c1": [(T0, None)], "c2": [(T0, None)], "c3": [(T0, T0 + 10.0)]},
                  ["foo-0", "foo-1"], [["foo-0", "foo-1"]], 10.0, T0, 10.0,
                  described=described)
    join, crash = convergence(run)
    assert join == pytest.approx(T0 + 1.5)  # c3's idle line, the coordinator settled
    assert crash == pytest.approx(T0 + 18.5)  # removed at 16 s, the others at its epoch 18.5 s
    run.described = []
    assert convergence(run)[1] == pytest.approx(T0 + 10.0)  # ownership alone: at the stop


def test_the_closing_check_reads_the_logs_only_once_the_window_has_converged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's producer is a thread of the harness's interpreter: a closing check that
    parsed every member's log each second from the disturbance on delayed its ticks (on the
    wire's owner-kill at 12, 0.1-0.5 s every 1.5-1.8 s, and a lag peak of the harness's
    making). Here c1 is killed at 6 s and its member stays until its session timeout (4 s):
    no window metrics are computed before the group converged again."""
    pytest.importorskip("confluent_kafka")
    import groupcoord.lab.wire_share as wire_share

    calls: list[float] = []
    real = wire_share.share_window_metrics

    def counted(run: ShareWireRun) -> list[dict[str, Any]]:
        calls.append(run.end)
        return real(run)

    monkeypatch.setattr(wire_share, "share_window_metrics", counted)
    sc = parse_scenario({**SMALL, "events": [{"at_ms": 6000, "kind": "kill", "member": "c1"}]},
                        source="share-small-kill")
    settings = {"group.share.heartbeat.interval.ms": 500,
                "group.share.session.timeout.ms": 4000,
                "group.share.assignment.interval.ms": 0,
                "group.share.record.lock.duration.ms": 3000,
                "group.share.delivery.count.limit": 5}
    run = run_share_wire(sc, settings, WireWorkload(records_per_s=20, max_poll_records=50),
                         2.0, seed=1, tail_s=1.0, converge_timeout_s=40.0)
    [w] = real(run)
    assert w["disturbance"] == "kill" and w["time_to_converge_ms"] is not None
    converged = run.t0 + w["at_ms"] / 1000 + w["time_to_converge_ms"] / 1000
    assert calls, "the closing check never ran"
    assert min(calls) >= converged, (min(calls) - run.t0, converged - run.t0)
