"""The lab's method checks itself on the rows ``run_one`` produces (no Spark): a disturbance's
cost is its excess over a paired control (the same cell and seed, events reduced to markers),
so a scenario whose events move nothing costs exactly nothing; the warm-up's length changes no
winner; the field's settings are the runs' settings; and the seeds' claims come out as known
answers on the paper spec's cells (KIP-415, KIP-848, the 900-partition anchor)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.lab.runs import (
    build_scenario,
    fenced_handback_ms,
    fenced_handback_text,
    flatten,
    run_control,
    run_one,
    simulate_run,
    simulate_with_control,
    warmup_for,
    window_ends,
)
from groupcoord.lab.spec import PARAM_COLUMNS, RunParams, expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation

#: The headline costs (excess over the control).
COSTS = ("stall_ms", "lag_peak", "lag_record_s", "paused_partition_s", "records_reprocessed",
         "task_restarts", "resources_moved", "resource_downtime_ms")

CONSUMERS = ("classic:eager", "classic:cooperative", "consumer:uniform", "consumer:range")
CONNECT = ("connect:eager", "connect:cooperative", "classic-connect:eager",
           "classic-connect:sessioned")


def _params(protocol: str, scenario: str, scenario_def: dict[str, Any] | None = None,
            **kw: Any) -> RunParams:
    base: dict[str, Any] = {name: None for name in PARAM_COLUMNS}
    base.update(run_id="r", sweep="t", protocol=protocol, scenario=scenario,
                workload="scenario", replicate=0, seed=11, events=False,
                checkpoint_every=2000, spec_ref="t")
    if scenario_def is not None:
        base["scenario_def"] = json.dumps({"name": scenario, **scenario_def})
    base.update(kw)
    return RunParams(**base)


def _paper(scenario: str, size: int, protocols: tuple[str, ...], seeds: int = 1) -> dict[
        str, list[dict[str, Any]]]:
    """The paper spec's runs of one cell per protocol (its first ``seeds`` replicates)."""
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[size], protocols=protocols)
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in protocols}
    for r in expand(spec):
        if r.replicate < seeds and r.protocol in out:
            row = run_one(r)
            assert row["ok"], row["violation_row"]
            out[r.protocol].append(row)
    return out


# --------------------------------------------------------------------------- zero excess

#: A topic that does not exist is deleted: the event moves nothing.
NO_OP = {"group": {"members": 4, "topics": {"foo": 8}},
         "events": [{"at_ms": 30000, "kind": "delete-topic", "topic": "nothing"}],
         "workload": {"records_per_s": 20}}


@pytest.mark.parametrize("protocol", CONSUMERS)
def test_an_event_that_moves_nothing_costs_exactly_nothing(protocol: str) -> None:
    row = run_one(_params(protocol, "no-op", NO_OP))
    assert row["ok"] and row["caught_up"] and row["disturbance_count"] == 1
    assert {k: row[k] for k in COSTS} == dict.fromkeys(COSTS, 0) | {
        "lag_record_s": 0.0, "paused_partition_s": 0.0}
    # ... while the records in flight are there, in the control as in the run
    assert row["control_lag_peak"] > 0 and row["control_lag_record_s"] >= 0
    (window,) = [d for d in flatten(row)["disturbances"] if d["disturbance"] != "initial-join"]
    assert all(window[k] == 0 for k in COSTS)


@pytest.mark.parametrize("protocol", CONNECT)
def test_kip415_connector_removed_changes_the_connectors_under_a_connector_workload(
        protocol: str) -> None:
    """The paper's kip415-connector-removed under a connector workload deletes connector B and
    resizes A, which the workload keeps (its own connectors first, then connector-<i>): no
    event is a no-op, and deleting B's tasks stops them under every protocol."""
    row = run_one(_params(protocol, "kip415-connector-removed", connectors=4, tasks=3,
                          workload="4x3c"))
    assert row["ok"] and row["caught_up"] and row["disturbance_count"] == 2
    assert row["noop_events"] == 0
    assert row["task_downtime_task_s"] > 0 and row["resource_downtime_ms"] > 0


@pytest.mark.parametrize("protocol", ("classic:eager", "consumer:uniform", "connect:eager"))
def test_a_scenario_without_disturbance_costs_nothing(protocol: str) -> None:
    row = run_one(_params(protocol, "join", size=3))
    assert row["ok"] and row["disturbance_count"] == 0 and row["warmup_ms"] is None
    assert all(row[k] in (0, 0.0, None) for k in COSTS)


def test_a_real_disturbance_costs_more_than_its_control() -> None:
    row = run_one(_params("classic:eager", "crash", size=4))
    assert row["ok"] and row["caught_up"]
    assert row["resources_moved"] > 0 and row["lag_record_s"] > 0 and row["lag_peak"] > 0
    # the control's own lag over the same span is the records in flight, not the cost
    assert 0 < row["control_lag_peak"] < row["lag_peak"]


# --------------------------------------------------------------------------- warm-up


def test_warmup_is_sized_from_the_workload() -> None:
    light = build_scenario(_params("consumer:uniform", "crash", size=4))
    busy = build_scenario(_params("consumer:uniform", "crash", size=4, work=json.dumps(
        {"processing_ms": 2.0, "records_per_s": 50})))
    assert busy.events[0].at_ms > light.events[0].at_ms
    overloaded = _params("consumer:uniform", "crash", size=2, work=json.dumps(
        {"processing_ms": 50.0, "records_per_s": 50}))
    assert warmup_for(build_scenario(overloaded), "consumer:uniform") == 600_000


@pytest.mark.parametrize("scenario", ["kip415-worker-joins", "worker-leaves-d30s"])
def test_the_connect_group_types_fenced_first_hand_back_is_inside_the_warmup(
        scenario: str) -> None:
    """At 5 s task stops and 12 workers the connect group type's first worker (given all 144
    connectors and tasks: no initial rebalance delay) hands 132 back 8 at a time, 85 s, past
    the 60 s rebalance timeout: it is fenced and loses everything, and the cooperative
    variant's lost work waits the scheduled delay. The warm-up covers that, so every such run
    has caught up before its event; with the warm-up it had before (32 s, so 60 s is
    generous) neither variant does. Classic Connect (an initial rebalance delay) and 1 s stops
    (17 s, inside the rebalance timeout) keep their warm-up."""
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[12],
                    workloads=["16x8c-task5s"], protocols=CONNECT)
    cells = {r.protocol: r for r in expand(spec) if r.replicate == 0}
    for label in ("connect:eager", "connect:cooperative"):
        sc = build_scenario(cells[label], warmup_ms=0)
        fenced = fenced_handback_ms(sc, label)
        assert fenced > sc.rebalance_timeout_ms
        if label == "connect:cooperative":
            assert fenced > sc.rebalance_timeout_ms + sc.max_delay_ms
        assert warmup_for(sc, label) > fenced
        row = run_one(cells[label])
        assert row["ok"] and row["caught_up"] is True, label
        short = run_one(cells[label], warmup_ms=60_000)
        assert short["caught_up"] is False, label
        # the page's why for such a run (lab.verdict's left-out line)
        why = fenced_handback_text(short)
        assert why.startswith("its first worker hands 132 connectors and tasks back 8 at a "
                              "time, 85 s of stops, past rebalance.timeout.ms (60 s): fenced")
        delay = f"held scheduled.rebalance.max.delay.ms ({sc.max_delay_ms // 1000} s)"
        assert (delay in why) == (label == "connect:cooperative")
        assert fenced_handback_text({k: v for k, v in short.items() if k != "seed"}) == ""
    for label in ("classic-connect:eager", "classic-connect:sessioned"):
        assert fenced_handback_ms(build_scenario(cells[label], warmup_ms=0), label) == 0
        assert fenced_handback_text(cells[label].as_row()) == ""
    one_s = restrict(load_spec("paper"), scenarios=[scenario], sizes=[12],
                     workloads=["16x8c-task1s"], protocols=("connect:cooperative",))
    p = next(iter(expand(one_s)))
    assert fenced_handback_ms(build_scenario(p, warmup_ms=0), p.protocol) == 0


@pytest.mark.parametrize(("scenario", "size", "protocols", "metric", "seeds"), [
    ("crash", 10, ("classic:eager", "classic:cooperative", "consumer:uniform"), "lag_record_s",
     1),
    ("kip415-worker-joins", 3, ("connect:eager", "connect:cooperative"), "task_restarts", 6),
])
def test_a_longer_warmup_changes_no_winner_and_moves_numbers_under_ten_percent(
        scenario: str, size: int, protocols: tuple[str, ...], metric: str, seeds: int) -> None:
    """The warm-up lengthened by 30 s and 60 s (multiples of the runs' periodic timers:
    heartbeats of 3 and 5 s, auto-commits and flushes of 5 s): the same protocol wins, the
    counts (restarts, moves) and, 30 s later, every cost's mean over the seeds move by less
    than 10 %.

    What does move with the warm-up is where the disturbance falls in the members' heartbeat
    cycle: a member heartbeats an interval after its last response, so its phase drifts by a
    round trip per heartbeat (about 110 ms per 30 s here), and a rebalance of a few seconds
    that waits for the next heartbeat costs lag in proportion. Over seeds whose phases are
    drawn this averages out; over six seeds and 60 s it still moves three Connect workers'
    lag by up to 11 %, hence 15 % there (a finding: few seeds of a small group do not pin a
    lag cost down to 10 %)."""
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[size], protocols=protocols)
    spec = replace(spec, grids=tuple(replace(g, seeds=seeds, confirm_seeds=0) for g in spec.grids))
    runs = expand(spec)
    counts = ("task_restarts", "resources_moved")
    lags = ("lag_record_s", "lag_peak")

    def means(extra: int) -> dict[str, dict[str, float]]:
        rows: dict[str, list[dict[str, Any]]] = {p: [] for p in protocols}
        for r in runs:
            warm = None if extra == 0 else build_scenario(r).events[0].at_ms + extra
            row = run_one(r, warmup_ms=warm)
            assert row["ok"] and row["caught_up"]
            rows[r.protocol].append(row)
        return {p: {k: sum(x[k] for x in rs) / len(rs) for k in (*counts, *lags, metric)}
                for p, rs in rows.items()}

    base = means(0)
    for extra, lag_tolerance in ((30_000, 0.1), (60_000, 0.15)):
        longer = means(extra)
        assert min(base, key=lambda p: base[p][metric]) == min(
            longer, key=lambda p: longer[p][metric])
        for p in protocols:
            for k in (*counts, *lags):
                a, b = base[p][k], longer[p][k]
                tolerance = lag_tolerance if k in lags else 0.1
                assert abs(a - b) <= tolerance * max(abs(a), abs(b)) + 1, (p, k, a, b)


# --------------------------------------------------------------------------- settings


def test_runs_use_the_fields_settings_and_say_so() -> None:
    classic = json.loads(run_one(_params("classic:eager", "crash", size=3))["settings_json"])
    assert classic["heartbeat.interval.ms"] == 3000
    assert classic["session.timeout.ms"] == 45000
    assert classic["max.poll.interval.ms"] == 300_000
    assert classic["metadata.max.age.ms"] == 300_000
    kip848 = json.loads(run_one(_params("consumer:uniform", "crash", size=3))["settings_json"])
    assert kip848["group.consumer.heartbeat.interval.ms"] == 5000
    assert kip848["group.consumer.session.timeout.ms"] == 45000
    assert kip848["group.consumer.assignment.interval.ms"] == 1000
    connect = json.loads(run_one(_params("connect:cooperative", "kip415-worker-joins"))[
        "settings_json"])
    assert connect == connect | {"heartbeat.interval.ms": 3000, "session.timeout.ms": 10000,
                                 "rebalance.timeout.ms": 60000,
                                 "scheduled.rebalance.max.delay.ms": 300_000}


def test_a_scenario_that_sets_a_timing_keeps_it() -> None:
    own = {**NO_OP, "coordinator": {"heartbeat_interval_ms": 1000}}
    row = run_one(_params("classic:eager", "own", own))
    assert json.loads(row["settings_json"])["heartbeat.interval.ms"] == 1000
    swept = run_one(_params("classic:eager", "crash", size=3,
                            work=json.dumps({"max_poll_interval_ms": 60000})))
    assert json.loads(swept["settings_json"])["max.poll.interval.ms"] == 60000


# --------------------------------------------------------------------------- known answers


@pytest.mark.parametrize(("scenario", "size", "factor"), [
    ("kip415-worker-joins", 6, 3), ("worker-bounce-d300s", 6, 3),
    ("worker-leaves-d300s", 3, 1.5)])
def test_kip415_incremental_cooperative_restarts_far_fewer_tasks(scenario: str, size: int,
                                                                  factor: float) -> None:
    """KIP-415: incremental cooperative rebalancing restarts only what moves. When a worker
    leaves, its own tasks (a third of them among three workers) must restart elsewhere, so
    the factor there is smaller than for a join or a bounce."""
    rows = _paper(scenario, size, CONNECT)
    restarts = {p: rs[0]["task_restarts"] for p, rs in rows.items()}
    for eager, coop in (("connect:eager", "connect:cooperative"),
                        ("classic-connect:eager", "classic-connect:sessioned")):
        assert restarts[coop] * factor <= restarts[eager], restarts


@pytest.mark.parametrize(("scenario", "configured"), [
    ("worker-leaves-d0", 0), ("worker-leaves-d30s", 30_000), ("worker-leaves-d300s", 300_000)])
def test_kip415_a_departed_workers_tasks_wait_the_scheduled_delay(scenario: str,
                                                                  configured: int) -> None:
    """The grid sweeps scheduled.rebalance.max.delay.ms: a follower's departure balances after
    the configured delay under incremental cooperative rebalancing (by design), at once under
    eager."""
    rows = _paper(scenario, 3, CONNECT)
    for p in ("connect:cooperative", "classic-connect:sessioned"):
        row = rows[p][0]
        delay = json.loads(row["settings_json"])["scheduled.rebalance.max.delay.ms"]
        assert delay == configured
        assert delay <= row["time_to_balance_ms"] <= delay + 30_000
        assert row["task_downtime_task_s"] > 0
    for p in ("connect:eager", "classic-connect:eager"):  # eager: no delay
        assert rows[p][0]["time_to_balance_ms"] < 30_000


def test_kip848_has_no_global_barrier_in_a_rolling_bounce() -> None:
    """During a rolling bounce the members not bounced keep processing under KIP-848 (no
    stall, only the bounced member's partitions paused), where classic eager stops the whole
    group at every bounce (a stall, every partition paused)."""
    rows = _paper("rolling-bounce", 10, ("classic:eager", "consumer:uniform"))
    eager, kip848 = rows["classic:eager"][0], rows["consumer:uniform"][0]
    assert eager["stall_ms"] > 0 and kip848["stall_ms"] == 0
    assert eager["paused_partition_s"] > 5 * kip848["paused_partition_s"]


def test_900_partitions_converge_in_about_a_heartbeat_under_kip848() -> None:
    """librdkafka's figure: 10 consumers, a topic grows by 900 partitions: about 5 s with the
    consumer protocol, up to ``metadata.max.age.ms`` (5 min) classic, where a member sees the
    growth at its next metadata refresh."""
    rows = _paper("grow-by-900", 10, ("classic:eager", "consumer:uniform"), seeds=2)
    for row in rows["consumer:uniform"]:
        assert row["convergence_ms"] <= 2 * 5_000 + 1_000  # a heartbeat or two
    for row in rows["classic:eager"]:
        assert 10_000 < row["convergence_ms"] <= 300_000 + 30_000


# --------------------------------------------------------------------------- the control


@pytest.mark.parametrize(("protocol", "scenario", "size"), [
    ("classic:eager", "crash", 4), ("consumer:uniform", "rolling-bounce", 3),
    ("connect:cooperative", "kip415-worker-bounce", None)])
def test_the_forked_control_is_the_control_simulated_from_the_start(
        protocol: str, scenario: str, size: int | None) -> None:
    """``run_one`` forks the control from the run just before the first event; simulating
    the control from the start gives the same figures (the control is the run up to there)."""
    p = _params(protocol, scenario, size=size)
    sc = build_scenario(p)
    res, forked = simulate_with_control(p, sc)
    again = simulate_run(p, sc)
    assert again.disturbances == res.disturbances
    control = run_control(p, sc, again)
    assert forked is not None and control is not None
    # (not ``messages``: a control skips the heartbeats after its fixed point, from wherever
    # it first looked)
    figures = ("lag_peak", "lag_record_s", "stall_ms", "paused_partition_s", "resources_moved",
               "records_reprocessed", "task_restarts", "resource_downtime_ms", "closed_ms")
    assert [{k: w[k] for k in figures} for w in forked] == [{k: w[k] for k in figures}
                                                            for w in control]


@pytest.mark.parametrize(("protocol", "scenario", "size"), [
    ("classic:eager", "crash", 4), ("consumer:uniform", "rolling-bounce", 3),
    ("connect:cooperative", "kip415-worker-leaves", None)])
def test_a_control_at_its_fixed_point_skips_ahead_without_changing_a_figure(
        protocol: str, scenario: str, size: int | None) -> None:
    """A control that reached its fixed point jumps to its window ends; simulating every
    heartbeat and commit up to there instead gives the same window figures."""
    p = _params(protocol, scenario, size=size)
    sc = build_scenario(p)
    ends = window_ends(simulate_run(p, sc))
    figures = []
    for fast in (True, False):
        sim = build_simulation(sc, p.seed, p.protocol, checkpoint_every=1 << 62)
        sim.fast_forward = fast
        sim.control = True
        sim.start()
        figures.append(sim.finish_control(ends))
    costs = ("lag_peak", "lag_record_s", "stall_ms", "paused_partition_s", "records_reprocessed",
             "task_restarts", "resources_moved", "resource_downtime_ms", "records_processed")
    assert [{k: w[k] for k in costs} for w in figures[0]] == [
        {k: w[k] for k in costs} for w in figures[1]]


# --------------------------------------------------------------------------- overlapping windows

#: A crash, then a join 10 s later: the crash's window (45 s session) is still open at the join.
OVERLAP = {"group": {"members": 6, "topics": {"foo": 24}},
           "events": [{"at_ms": 30000, "kind": "crash", "member": "c3"},
                      {"at_ms": 40000, "kind": "scale-out", "count": 1}],
           "workload": {"records_per_s": 20}}

#: Figures that add up over time (the lag's peak does not: the windows' highest is the union's).
ADDITIVE = ("group_epoch_bumps", "resources_moved", "resource_downtime_ms", "messages",
            "records_written", "records_processed", "lag_record_s", "stall_ms",
            "paused_partition_s", "records_reprocessed", "task_restarts")


def _windows_and_union(sim: Any, first: str, last: str, ends: list[int] | None = None) -> tuple[
        list[dict[str, Any]], dict[str, Any]]:
    """Run ``sim`` (a control when ``ends`` is given) with a window of its own over the union
    of the disturbances' windows: opened with the first, its figures taken as the last closes."""
    from copy import copy
    union: dict[str, Any] = {}
    held: list[Any] = []
    open_window, close = sim.open_window, sim._close

    def opening(label: str, start: int, settle: int) -> None:
        open_window(label, start, settle)
        if label == first and not held:
            held.append(copy(sim.windows[-1]))  # never cut: not among the open windows

    def closing(w: Any) -> None:
        close(w)
        if w.label == last and held:
            union.update(sim.window_figures(held[0]))

    sim.open_window, sim._close = opening, closing
    if ends is None:
        res = sim.run()
        windows = [w for w in res.disturbances if w["disturbance"] != "initial-join"]
    else:
        sim.control = True
        sim.start()
        windows = sim.finish_control(ends)
    return windows, union


@pytest.mark.parametrize("protocol", ("classic:eager", "classic:cooperative", "consumer:uniform"))
def test_overlapping_disturbances_count_each_moment_once(protocol: str) -> None:
    """Two disturbances whose windows overlap: each moment counts in one window (the first is
    cut where the second opens), so the windows' figures, in the run and in its control, and
    hence their excess, add up to the figures of their union, and the run's headline costs are
    the union's excess."""
    p = _params(protocol, "crash-join", OVERLAP)
    sc = build_scenario(p)
    run, run_union = _windows_and_union(build_simulation(sc, p.seed, p.protocol), "crash",
                                        "scale-out")
    assert len(run) == 2 and run[0]["cut_ms"] == run[1]["at_ms"] and run[1]["cut_ms"] is None
    assert run[0]["closed_ms"] > run[1]["at_ms"]  # they overlapped
    ends = [int(w["closed_ms"]) for w in run]
    control, control_union = _windows_and_union(
        build_simulation(sc, p.seed, p.protocol, checkpoint_every=1 << 62), "crash",
        "scale-out", ends)
    assert control[0]["cut_ms"] == run[1]["at_ms"]
    for windows, union in ((run, run_union), (control, control_union)):
        for k in ADDITIVE:
            assert sum(w[k] for w in windows) == pytest.approx(union[k], abs=1.01), k
    row = run_one(p)
    assert row["ok"] and row["disturbance_count"] == 2
    for k in ("resources_moved", "resource_downtime_ms", "lag_record_s", "stall_ms"):
        assert row[k] == pytest.approx(run_union[k] - control_union[k], abs=2.01), k
    assert row["resources_moved"] > 0 and row["lag_record_s"] > 0


#: Three members at 80 % busy; after the crash two carry its partitions: 120 %.
OVERLOAD = {"group": {"members": 3, "topics": {"foo": 6}},
            "events": [{"at_ms": 30000, "kind": "crash", "member": "c3"}],
            "workload": {"records_per_s": 20, "processing_ms": 20}}


@pytest.mark.parametrize("protocol", ("classic:cooperative", "consumer:uniform"))
def test_a_run_whose_lag_never_catches_up_says_so(protocol: str) -> None:
    """Overloaded after a crash, the group's lag is still there when the run ends: the run
    says ``recovered`` false (the report flags its row); the same crash at 40 % busy
    (60 % after it) recovers."""
    over = run_one(_params(protocol, "overload", OVERLOAD))
    assert over["ok"] and over["caught_up"] and over["recovered"] is False
    under = run_one(_params(protocol, "under", {**OVERLOAD, "workload": {
        "records_per_s": 20, "processing_ms": 10}}))
    assert under["ok"] and under["recovered"] is True
    assert under["lag_record_s"] < over["lag_record_s"]


def test_each_seed_puts_the_disturbance_elsewhere_in_the_heartbeat_cycle() -> None:
    """The first event comes after the warm-up at a phase drawn from the seed within one
    heartbeat interval: twenty seeds spread over most of the interval, the same seed always
    at the same phase, and the control (built from the same scenario) at the same time."""
    from groupcoord.lab.runs import event_phase_ms

    base = _params("classic:cooperative", "crash", size=4)
    firsts = {}
    for seed in range(20):
        p = replace(base, seed=seed)
        sc = build_scenario(p)
        hb = sc.heartbeat_interval_ms
        phase = event_phase_ms(sc, seed)
        assert 0 <= phase < hb and build_scenario(p).events[0].at_ms == sc.events[0].at_ms
        firsts[seed] = sc.events[0].at_ms
    assert max(firsts.values()) - min(firsts.values()) > hb / 2
    res, control = simulate_with_control(base, build_scenario(base))
    assert control is not None and [w["at_ms"] for w in control] == [
        w["at_ms"] for w in res.disturbances if w["disturbance"] != "initial-join"]
