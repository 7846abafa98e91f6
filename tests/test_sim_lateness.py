"""Natural lateness (``sim/workload.py``, "Natural lateness"): poll loops that pause, the
members' lateness at each rebalance, and its columns in the lab's tables."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.lab.runs import RUN_COLUMNS, flatten, run_lateness, run_one, window_lateness
from groupcoord.lab.spec import PARAM_COLUMNS, RunParams, load_spec
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import load_scenario, with_workload
from groupcoord.sim.workload import (
    DEFAULT_WORKLOAD,
    LATENESS_METRICS,
    Dist,
    Workload,
    WorkloadError,
    lateness_figures,
    parse_workload,
)
from tests.test_sim_workload import Loop, fixed

LATENESS_SPEC = "src/groupcoord/lab/data/paper-lateness.toml"


def _params(**kw: object) -> RunParams:
    base: dict[str, object] = {name: None for name in PARAM_COLUMNS}
    base.update(run_id="r", sweep="t", protocol="classic:eager", scenario="bounce",
                workload="scenario", replicate=0, seed=7, events=False, checkpoint_every=2000,
                spec_ref="t")
    base.update(kw)
    return RunParams(**base)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the option


def test_pauses_are_off_by_default_and_leave_the_table_as_before() -> None:
    assert DEFAULT_WORKLOAD.pause_every_ms == 0
    assert not any(k.startswith("pause_") for k in DEFAULT_WORKLOAD.as_table())
    assert "pause" not in DEFAULT_WORKLOAD.describe()
    wl = parse_workload("w", {"pause_every_ms": 10_000,
                              "pause_ms": {"dist": "lognormal", "mean": 200, "sigma": 1}})
    assert wl.pause_ms == Dist("lognormal", 200.0, sigma=1.0)
    assert parse_workload("w", wl.as_table()) == wl
    assert "pauses lognormal:200:1 ms every 10000 ms" in wl.describe()
    with pytest.raises(WorkloadError, match=r"w\.pause_every_ms"):
        parse_workload("w", {"pause_every_ms": -1})
    with pytest.raises(WorkloadError, match=r"w\.pause_ms\.dist"):
        parse_workload("w", {"pause_ms": {"dist": "pareto", "mean": 1}})


def _run(wl: Workload, protocol: str) -> dict[str, Any]:
    sc = with_workload(load_scenario("bounce"), wl)
    res = simulate(sc, 3, protocol)
    return {"summary": res.summary, "disturbances": res.disturbances, "trace": res.trace,
            "steps": res.steps}


@pytest.mark.parametrize("protocol", ["classic:eager", "consumer"])
def test_a_pause_duration_without_pauses_changes_nothing(protocol: str) -> None:
    """The option is off unless ``pause_every_ms`` is set: the same run event for event."""
    base = fixed(50, 1.0, fetch_latency_ms=50)
    off = dataclasses.replace(base, pause_ms=Dist("fixed", 5_000))
    a, b = _run(base, protocol), _run(off, protocol)
    assert a == b


# ----------------------------------------------------------------------------- the model


def _paused_member(loop: Loop, pause_ms: float) -> Any:
    """A member that keeps up (load 0.1) whose poll loop pauses every 10 s on average."""
    m = loop.model(fixed(100, 1.0, pause_every_ms=10_000,
                         pause_ms=Dist("fixed", pause_ms)))
    m.add_resource("p0", 100)
    p = m.processor("c1#1")
    p.assign(["p0"])
    return m, p


def _until_paused(loop: Loop, p: Any) -> int:
    while loop.heap:
        loop.run_until(loop.heap[0][0])
        if p.busy and p.batch == []:  # (a pause: a batch of no records)
            return loop.now
    raise AssertionError("no pause")


def test_a_pause_holds_the_next_poll_and_the_backlog_drains_after() -> None:
    loop = Loop()
    m, p = _paused_member(loop, 2_000)
    start = _until_paused(loop, p)
    m.settle()
    done = m.processed
    assert p.next_poll() == start + 2_000
    ran: list[int] = []
    p.at_poll(lambda: ran.append(loop.now))
    loop.run_until(start + 1_999)
    m.settle()
    assert ran == [] and m.processed == pytest.approx(done)  # nothing processed in a pause
    assert m.lag_now == pytest.approx(100 * 1.999, rel=1e-3)
    loop.run_until(start + 2_000)
    assert ran == [start + 2_000]  # the action waited for the pause's end
    loop.run_until(start + 2_500)  # 200 records behind at 1 ms each: caught up again
    m.settle()
    assert p.stream and m.lag_now == pytest.approx(0)


def test_a_pause_during_a_batch_delays_the_poll_after_it() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 2.0, max_poll_records=500, pause_every_ms=10**9,
                         pause_ms=Dist("fixed", 700)))
    m.add_resource("p0", 100)
    loop.run_until(20_000)  # 2,000 records wait
    p = m.processor("c1#1")
    p.assign(["p0"])  # a full batch of 500 records at 2 ms: busy until 21,000
    assert p.busy and p.next_poll() == 21_000
    ran: list[int] = []
    p.at_poll(lambda: ran.append(loop.now))
    loop.run_until(20_400)
    p._pause(None)  # (the pause's event, now: inside the batch)
    assert p.pause_due == 700
    loop.run_until(21_699)
    m.settle()
    assert ran == [] and m.processed == pytest.approx(500)  # the batch, then the pause
    loop.run_until(21_700)
    assert ran == [21_700]


def test_the_same_member_pauses_at_the_same_times_in_every_run() -> None:
    def pauses() -> list[int]:
        loop = Loop()
        _, p = _paused_member(loop, 300)
        out = []
        for _ in range(5):
            out.append(_until_paused(loop, p))
            loop.run_until(loop.now + 300)
        return out
    first = pauses()
    assert first == pauses() and len(set(first)) == 5


def test_a_classic_members_rejoin_waits_for_its_poll_under_heavy_tailed_work() -> None:
    """Deterministic: three members on 12 partitions, each record's time lognormal (mean 4 ms,
    sigma 2) and a 1 s pause every 5 s on average; three members join at 30 s. Alone, such
    members keep up and are in poll() at the rebalance; with pauses, c1 is in a pause and then
    in the batch of the backlog it built (heavy-tailed), and the eager group's rejoin waits
    for its poll (the Java consumer joins from ``poll()``: ``ConsumerCoordinator.poll`` runs
    ``onJoinPrepare`` and sends the JoinGroup); its lateness is that wait."""
    sc = with_workload(load_scenario("scale-out"), Workload(
        records_per_s=20, processing_ms=Dist("lognormal", 4.0, sigma=2.0),
        max_poll_records=500))
    calm = simulate(sc, 2, "classic:eager", record_trace=True)
    assert not [line for line in calm.trace if "rejoin at poll" in line]
    assert [w.get("lateness_max_ms") for w in calm.disturbances] == [None, 0.0]
    paused = with_workload(sc, dataclasses.replace(sc.workload, pause_every_ms=5_000,
                                                   pause_ms=Dist("fixed", 1_000)))
    res = simulate(paused, 2, "classic:eager", record_trace=True)
    assert res.ok
    waits = [int(line.rsplit("rejoin at poll, ", 1)[1].split()[0]) for line in res.trace
             if "rejoin at poll" in line]
    window = res.disturbances[1]
    assert window["disturbance"] == "scale-out" and waits
    # the wait foreseen when the member was asked (its batch), and a pause that came during
    # it: the lateness measured is when its poll() came
    assert window["lateness_max_ms"] >= max(waits) > 0 and window["lateness_max_ms"] > 1_000
    assert window["lateness_p50_ms"] == 0  # the others were in poll()
    assert simulate(paused, 2, "classic:eager").disturbances == res.disturbances


# ----------------------------------------------------------------------------- the metric


def test_lateness_figures_of_synthetic_windows() -> None:
    assert lateness_figures([]) == {}
    assert lateness_figures([0.0, 0.0, 300.0]) == {
        "lateness_n": 3.0, "lateness_p50_ms": 0.0, "lateness_max_ms": 300.0}
    assert lateness_figures([2000.0, 0.0, 10.0, 20.0])["lateness_p50_ms"] == 15.0
    w1 = {"lateness_n": 4.0, "lateness_p50_ms": 15.0, "lateness_max_ms": 2000.0}
    w2 = {"lateness_n": 3.0, "lateness_p50_ms": 40.0, "lateness_max_ms": 300.0}
    assert window_lateness({}) == dict.fromkeys(LATENESS_METRICS)
    assert run_lateness([w1, {}, w2]) == {"lateness_n": 7, "lateness_p50_ms": 40.0,
                                          "lateness_max_ms": 2000.0}
    assert run_lateness([{}]) == dict.fromkeys(LATENESS_METRICS)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1))
def test_the_median_lies_between_the_smallest_and_the_largest(xs: list[float]) -> None:
    f = lateness_figures(xs)
    assert f["lateness_n"] == len(xs)
    assert min(xs) <= f["lateness_p50_ms"] <= f["lateness_max_ms"] == max(xs)
    assert sum(x <= f["lateness_p50_ms"] for x in xs) * 2 >= len(xs)
    assert sum(x >= f["lateness_p50_ms"] for x in xs) * 2 >= len(xs)


def test_lateness_columns_in_the_rows() -> None:
    res = run_one(_params(work=json.dumps({"pause_every_ms": 2_000, "pause_ms": 1_500})))
    tables = flatten({**res, "wall_ms": 1.0})
    assert list(tables["runs"][0]) == list(RUN_COLUMNS)
    rows = [d for d in tables["disturbances"] if d["disturbance"] != "initial-join"]
    assert rows and all(set(LATENESS_METRICS) <= set(d) for d in rows)
    measured = [d for d in rows if d["lateness_n"]]
    assert measured
    run = tables["runs"][0]
    assert run["lateness_n"] == sum(d["lateness_n"] for d in measured)
    assert run["lateness_max_ms"] == max(d["lateness_max_ms"] for d in measured) > 0
    idle = flatten({**run_one(_params(work='{"idle":true}')), "wall_ms": 1.0})
    assert all(idle["runs"][0][k] is None for k in LATENESS_METRICS)


def test_the_lateness_grid_keeps_its_budget() -> None:
    from groupcoord.lab.spec import expand

    spec = load_spec(LATENESS_SPEC)
    runs = expand(spec)
    assert len(runs) <= 250
    assert {r.protocol for r in runs} == {"classic:eager", "classic:eager-roundrobin",
                                          "classic:cooperative", "consumer:uniform"}
    assert {r.size for r in runs} == {10}
    assert len({r.seed for r in runs if r.scenario == "bounce"}) == len(
        {r.replicate for r in runs})  # paired: every workload and protocol on the same seeds


def test_the_report_line_gives_the_measured_distribution_per_workload() -> None:
    from groupcoord.lab.lateness import lateness_lines

    def run(workload: str, n: int | None, p50: float, worst: float) -> dict[str, Any]:
        return {"workload": workload, "lateness_n": n, "lateness_p50_ms": p50,
                "lateness_max_ms": worst}
    runs = [run("none", 10, 0, 0), run("none", 12, 0, 0), run("heavy", 10, 0, 1_500),
            run("heavy", 10, 0, 0), run("heavy", 10, 40, 6_200), run("idle", None, 0, 0)]
    lines = lateness_lines(runs)
    assert len(lines) == 2 and lines[0].startswith("none:") and lines[1].startswith("heavy:")
    assert "22 rejoins and revocations in 2 runs" in lines[0]
    assert "latest member of a run 0 ms in every run, a member late in 0 of 2" in lines[0]
    assert "median 1.5 s (range 0 ms-6.2 s), a member late in 2 of 3 runs" in lines[1]
    assert "the median member median 0 ms (range 0 ms-40 ms)" in lines[1]
    assert lateness_lines([run("idle", None, 0, 0)]) == []
    calm = lateness_lines([run("a", 10, 0, 0), run("b", 8, 0, 0)])
    assert calm == ["The members' lateness at the rebalances: 0 ms in every run (18 rejoins "
                    "and revocations in 2 runs: every member was in poll() when the protocol "
                    "asked it)."]


def test_only_grids_that_model_natural_lateness_print_it() -> None:
    from groupcoord.lab.lateness import grid_lateness_lines, lateness_lines

    paused = {"workload": "heavy", "work": '{"pause_every_ms":10000,"pause_ms":1000}',
              "lateness_n": 9, "lateness_p50_ms": 0.0, "lateness_max_ms": 2_000.0}
    plain = {"workload": "4x250", "work": None, "lateness_n": 9, "lateness_p50_ms": 0.0,
             "lateness_max_ms": 0.0}
    assert grid_lateness_lines([plain]) == []  # (e.g. a slow event's grid: not measured here)
    assert grid_lateness_lines([plain, paused]) == lateness_lines([plain, paused])


def test_a_pausing_members_own_backlog_is_its_steady_state_not_a_recovery_to_wait_for() -> None:
    loop = Loop()
    m, p = _paused_member(loop, 2_000)
    loop.run_until(5_000)
    m.settle()
    assert p.stream and m.recovered()
    _until_paused(loop, p)
    assert p.pause_backlog and m.recovered()  # (in a pause it had caught up before)
    m.add_resource("p1", 100)
    p.assign(["p1"])  # what it owns changed: it must catch up on that first
    assert not p.pause_backlog and not m.recovered()


def test_a_grid_cell_with_pauses_catches_up_and_its_control_keeps_pausing() -> None:
    spec = load_spec(LATENESS_SPEC)
    from groupcoord.lab.spec import expand

    heavy = next(r for r in expand(spec) if r.scenario == "bounce" and r.replicate == 0
                 and r.protocol == "classic:cooperative" and "pause1s" in r.workload)
    row = flatten({**run_one(heavy), "wall_ms": 1.0})["runs"][0]
    assert row["caught_up"] and row["recovered"]
    # the control's members pause as the run's (no jump of its clock past their pauses): the
    # excess lag of a cooperative bounce stays below the control's own lag over the window
    assert row["lag_record_s"] < row["control_lag_record_s"]


def test_a_control_with_pausing_members_simulates_every_step() -> None:
    from groupcoord.sim.runner import build_simulation

    sc = load_scenario("bounce")
    plain = build_simulation(with_workload(sc, fixed(50, 1.0)), 1, "classic:eager")
    paused = build_simulation(with_workload(sc, fixed(50, 1.0, pause_every_ms=10_000,
                                                      pause_ms=Dist("fixed", 500))),
                              1, "classic:eager")
    plain.start()
    paused.start()
    assert plain.fast_forward and not paused.fast_forward
