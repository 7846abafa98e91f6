"""The report's reasons beside its verdicts (lab.mechanism) and the page-side fixes of the
review's round 1 (labels, split cells drawn as seeds, why a chart is missing, the calibration's
caveat)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.lab.findings import BY_COLUMN
from groupcoord.lab.limits import calibration_items
from groupcoord.lab.mechanism import (
    DEFAULT_FETCH_MS,
    busiest_partitions,
    condition_clauses,
    mechanisms,
    member_load,
    row_loads,
    task_time_phase,
)
from groupcoord.lab.verdict import claims, grid_verdicts

SETTINGS = {"classic:eager": {"heartbeat.interval.ms": 3000, "session.timeout.ms": 45000},
            "classic:cooperative": {"heartbeat.interval.ms": 3000,
                                    "session.timeout.ms": 45000},
            "consumer:uniform": {"group.consumer.heartbeat.interval.ms": 5000,
                                 "group.consumer.session.timeout.ms": 45000}}


def _run(protocol: str, seed: int, size: int = 10, **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "scale-out", "size": size, "members": size,
            "workload": "4x250", "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "total_partitions": 1000, "total_topics": 4,
            "work_model": "1.6 rec/s, 0.5 ms/rec, max.poll.records 500", **cols}


@given(st.integers(min_value=1, max_value=1000), st.floats(min_value=0.1, max_value=100),
       st.floats(min_value=0.1, max_value=50))
def test_the_load_per_member_is_the_partitions_rate_over_the_members(
        members: int, rate: float, proc: float) -> None:
    ld = member_load({"protocol": "classic:eager", "members": members,
                      "total_partitions": 1000,
                      "work_model": f"{rate} rec/s, {proc} ms/rec, max.poll.records 500"})
    assert ld is not None
    per = float(f"{rate}") * 1000 / members
    assert abs(ld.records_per_s - per) < 1e-6 * per
    assert abs(ld.busy - per * float(f"{proc}") / 1000) < 1e-6 * max(1.0, ld.busy)
    assert abs(ld.per_poll - per * DEFAULT_FETCH_MS / 1000) < 1e-6 * max(1.0, ld.per_poll)
    assert member_load({"protocol": "classic-connect:eager", "members": 3}) is None


def test_load_changes_with_the_size_where_partitions_stay_fixed() -> None:
    loads = row_loads([_run("classic:eager", 0, size=10), _run("classic:eager", 0, size=100)])
    ten, hundred = loads[("scale-out", 10, "4x250", 0.0)], loads[("scale-out", 100, "4x250", 0.0)]
    # one member fewer: 9 members, range 4 x 28 partitions, balanced 112; 99: 4 x 3, 11
    assert ten.text() == ("160 rec/s, 8.0% busy per member; busiest member, one member fewer: "
                          "9.0% under range, 9.0% balanced")
    assert hundred.text() == ("16 rec/s, 0.8% busy per member; busiest member, one member "
                              "fewer: 1.0% under range, 0.9% balanced")
    assert not ten.overloaded and not hundred.overloaded


def test_the_busiest_member_under_range_and_a_balanced_assignor() -> None:
    """The review's cases: 7 members on 4 x 8 partitions, range gives the first one 2 of each
    topic (8: 160 % busy at 10 records/s and 20 ms), a balanced assignor at most 5 (100 %);
    on 1 x 32 range balances as well as any."""
    assert busiest_partitions(4, 8, 7, "range") == 8
    assert busiest_partitions(4, 8, 7, "uniform") == 5
    assert busiest_partitions(1, 32, 7, "range") == busiest_partitions(1, 32, 7, "sticky") == 5
    ld = member_load({"protocol": "classic:eager", "members": 8, "total_partitions": 32,
                      "total_topics": 4, "work_model": "10 rec/s, 20 ms/rec"})
    assert ld is not None and ld.overloaded
    assert (round(ld.busiest_range, 3), round(ld.busiest_balanced, 3)) == (1.6, 1.0)
    assert "NEAR SATURATION" in ld.text()


def test_a_row_whose_lag_never_caught_up_is_flagged() -> None:
    runs = [_run("classic:eager", s, recovered=s != 2) for s in range(5)]
    (ld,) = row_loads(runs).values()
    assert (ld.runs, ld.not_recovered) == (5, 1) and ld.overloaded
    assert "NOT CAUGHT UP in 1 of 5 runs: lag still there 60 s after the group converged" \
        in ld.text()


@given(st.integers(1, 8), st.integers(1, 300), st.integers(1, 400))
def test_range_is_never_better_balanced_than_a_balanced_assignor(
        topics: int, partitions: int, members: int) -> None:
    r = busiest_partitions(topics, partitions, members, "range")
    b = busiest_partitions(topics, partitions, members, "uniform")
    assert b <= r and b * members >= topics * partitions


def test_the_reason_is_computed_from_the_runs_downtime_and_moves() -> None:
    """Eager moves 1,000 partitions for 41 s of downtime (41 ms each); cooperative 230 for
    698 s (3.03 s each: one 3 s heartbeat); KIP-848 200 for 1,000 s (5 s: one heartbeat)."""
    runs = [_run("classic:eager", s, resources_moved=1000, resource_downtime_ms=40_900)
            for s in range(3)]
    runs += [_run("classic:cooperative", s, resources_moved=230, resource_downtime_ms=698_000)
             for s in range(3)]
    runs += [_run("consumer:uniform", s, resources_moved=200, resource_downtime_ms=1_000_000)
             for s in range(3)]
    lines = mechanisms(["classic:eager", "classic:cooperative", "consumer:uniform"], SETTINGS,
                       runs)
    cond, scale, polls = lines
    assert cond.startswith("Conditions: classic heartbeat 3 s, session 45 s; KIP-848 "
                           "heartbeat 5 s, session 45 s.")
    assert "learn of a rebalance together" in cond
    assert scale.startswith("scale-out: downtime per moved partition")
    assert "classic:eager 40.9 ms" in scale
    assert "classic:cooperative 3.03 s (about one 3 s heartbeat)" in scale
    assert "consumer:uniform 5 s (about one 5 s heartbeat)" in scale
    assert "next heartbeat" in scale
    # 160 records/s per member x 50 ms in flight = 8 records, 4 ms to process: no long poll
    assert polls.startswith("Polls: a member gets 8 records per poll when caught up")
    assert "a full poll after a backlog (max.poll.records) takes 250 ms" in polls
    assert "does not arise here" in polls
    # a crash's partitions wait for the session timeout: no heartbeat story
    crash = [{**r, "scenario": "crash", "resource_downtime_ms": r["resources_moved"] * 44_000}
             for r in runs if r["protocol"] != "classic:eager"]
    (_, line, _) = mechanisms(["classic:cooperative", "consumer:uniform"], SETTINGS, crash)
    assert "about the 45 s session timeout" in line and "next heartbeat" not in line
    assert mechanisms(["classic-connect:eager"], {}, runs) == []


def test_long_polls_are_not_called_quick() -> None:
    runs = [_run("classic:eager", 0, resources_moved=10, resource_downtime_ms=100,
                 work_model="40 rec/s, 2000 ms/rec, max.poll.records 500")]
    (_, _, polls) = mechanisms(["classic:eager"], SETTINGS, runs)
    assert "does not arise" not in polls
    # 20 ms a record, 500 a poll: 10 s after a backlog, beyond the 3 s heartbeat
    runs = [_run("classic:eager", 0, resources_moved=10, resource_downtime_ms=100,
                 work_model="3.5 rec/s, 20 ms/rec, max.poll.records 500")]
    (_, _, polls) = mechanisms(["classic:eager"], SETTINGS, runs)
    assert "takes 10 s, longer than a 3 s heartbeat" in polls and "does not arise" not in polls


def test_the_calibration_caveat_counts_the_marks_narrower_than_its_tolerance() -> None:
    cal = {"measured": "2026-11-26", "setup": {"members": 6, "heartbeat_interval_ms": 5000},
           "checked": ["stall_ms"], "rows": [{"protocol": "classic:eager", "within_2x": True,
                                               "scenario": "rolling-bounce"}]}
    head, _row = calibration_items(cal, gaps=[1.2, 1.5, 3.0, 40.0])
    assert "at 6 members" in head and "not at the settings of the tables above" in head
    assert "wider than 2 of the 4 marked differences" in head


def test_page_one_names_the_families_and_split_seeds_are_dots(tmp_path: Any,
                                                              saved_figures: list[Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from groupcoord.lab.report import build_report, grid_charts, nothing_drawn, protocol_styles

    tb = BY_COLUMN["time_to_balance_ms"]
    rows = []
    sessioned = [302_000, 2_600, 1_900, 303_000, 302_000]
    for size in (3, 6):
        for s in range(5):
            for p, v in (("classic-connect:eager", 2_900 + s), ("classic-connect:sessioned",
                                                                  sessioned[s]),
                         ("connect:cooperative", 5_000)):
                rows.append({"run_id": f"{p}{size}{s}", "protocol": p,
                             "scenario": "kip415-leader-leaves", "size": size,
                             "workload": "16x8c", "fault_rate": 0.0, "seed": s, "ok": True,
                             "caught_up": True, "time_to_balance_ms": v, "task_restarts": 0,
                             "settings_json": json.dumps({"heartbeat.interval.ms": 3000})})
    (tmp_path / "runs").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "runs" / "part-0.parquet")
    meta = {"name": "t", "spec": "paper", "runs": len(rows), "cells": 6, "grids": [
        {"name": "kip415", "seeds": 5, "metrics": ["time_to_balance_ms", "task_restarts"],
         "protocols": ["classic-connect:eager", "classic-connect:sessioned",
                       "connect:cooperative"]}]}
    (tmp_path / "sweep.json").write_text(json.dumps(meta))
    index = build_report(tmp_path).read_text()
    assert "classic-connect:* is Connect as shipped (classic group protocol)" in index
    assert ("connect:* is Connect on the connect group type (this project&#x27;s, not in "
            "Apache Kafka)") in index
    assert "not in Apache Kafka; not ranked" in index
    # each outcome, its seeds, the one most seeds had first
    assert "302 | 2.25" in index and "3 of 5 | 2 of 5" in index
    assert "split seeds" in index

    (g,) = grid_verdicts(meta, rows)
    saved_figures.clear()  # build_report's pictures: this test reads grid_charts' own
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    (ax,) = [a for a in fig.axes if a.get_visible()]  # restarts are all 0: no panel
    # sessioned: 10 seeds drawn as dots (2 sizes x 5), no band through values no seed had
    dots = [c for c in ax.collections if c.get_offsets().shape[0] == 10]
    assert len(dots) == 1
    ys = sorted(float(y) for _, y in dots[0].get_offsets())
    assert ys[:4] == [1.9, 1.9, 2.6, 2.6] and ys[-1] == 303.0
    # round 11: a split protocol is not loose dots: a dotted line joins its medians
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert len(dotted) == 1 and list(dotted[0].get_xdata()) == [3.0, 6.0]
    # the protocol the tables do not rank is dashed and labelled so
    (unranked,) = [ln for ln in ax.get_lines() if ln.get_label() == "connect:cooperative "
                   "(not ranked)"]
    assert unranked.get_linestyle() == "--" and unranked.get_linewidth() <= 1.0
    assert "KIP-848" not in fig.legends[0].get_title().get_text()
    assert "Connect as shipped" in fig.legends[0].get_title().get_text()
    # nothing to draw says why, with each metric's largest value
    why = nothing_drawn(g, g.rows)
    assert "task restarts at most 0" in why and f"floor {tb.fmt(tb.floor)}" in why


def test_a_connect_grid_says_restarts_per_rebalance_and_what_each_outcome_took() -> None:
    delay = {"scheduled.rebalance.max.delay.ms": 300_000}
    runs = []
    for s, (t, bumps) in enumerate([(302_000, 2), (2_200, 1), (1_900, 1), (303_000, 2),
                                    (302_500, 2)]):
        base = {"scenario": "kip415-worker-leaves", "size": 3, "seed": s, "ok": True,
                "connectors": 16, "tasks": 8}
        runs.append({**base, "protocol": "classic-connect:eager", "task_restarts": 128,
                     "epoch_bumps": 1, "time_to_balance_ms": 2_900 + s})
        leader = "c2" if t < 10_000 else "c1"
        runs.append({**base, "protocol": "classic-connect:sessioned",
                     "task_restarts": 11 * bumps, "epoch_bumps": bumps,
                     "time_to_balance_ms": t, "event_targets": json.dumps(
                         [{"at_ms": 26000, "kind": "leave", "leader": leader, "member": "c2"}])})
    ps = ["classic-connect:eager", "classic-connect:sessioned"]
    (line,) = mechanisms(ps, {p: delay for p in ps}, runs)
    assert "of the group's 128 tasks: classic-connect:eager 128 (100% of them), " \
        "classic-connect:sessioned 11 (9% of them)" in line
    assert ("At 3 workers classic-connect:sessioned's seeds split: 2 of 5 balanced in 2.05 s "
            "after 1 rebalance(s), 3 in 302 s after 2, waiting "
            "scheduled.rebalance.max.delay.ms (300,000 ms); the event hit the group's leader "
            "in 2 of the 2 fast seeds and 0 of the 3 slow ones.") in line


def _connect_run(seed: int, start_ms: int, warmup_ms: int, tub: int,
                 workload: str = "") -> dict[str, Any]:
    return {"protocol": "classic-connect:sessioned", "scenario": "kip415-worker-joins",
            "size": 12, "seed": seed, "ok": True, "connectors": 16, "tasks": 8,
            "workload": workload or f"16x8c-task{start_ms}ms", "warmup_ms": warmup_ms,
            "time_to_balance_ms": tub, "task_restarts": 18, "epoch_bumps": 2,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000}),
            "work": json.dumps({"task_start_ms": start_ms, "task_stop_ms": start_ms})}


def test_time_until_balanced_out_of_step_with_task_time_is_explained_by_the_warm_up() -> None:
    """Round 8: sessioned balanced sooner with 1 s tasks than with 10 ms ones. The warm-up
    grows with the task time and the workers' heartbeats do not move with it: the page says
    so, with the warm-ups and the balanced moment counted from the run's start."""
    runs = []
    for s in range(5):
        runs.append(_connect_run(s, 10, 26_300, 4_500 + 10 * s))
        runs.append(_connect_run(s, 1000, 27_300, 3_600 + 10 * s))
        # the same runs under the other grid's workload name count once
        runs.append(_connect_run(s, 1000, 27_300, 3_600 + 10 * s, workload="16x8c"))
    (line,) = task_time_phase("kip415-worker-joins", ["classic-connect:sessioned"], runs)
    assert line == (
        "kip415-worker-joins, 12 workers: classic-connect:sessioned's time until balanced does "
        "not follow the task time (median 4.52 s at 10 ms, 3.62 s at 1 s: from 10 ms to 1 s it "
        "drops by 900 ms where a task's stop and start add 1.98 s). It is "
        "counted from the disturbance, which comes after a warm-up that grows with the task "
        "time (26.3 s, 27.3 s), while the workers' heartbeat timers run from their join: the "
        "workers learn of the rebalance at their next heartbeat, at another point of the 3 s "
        "heartbeat.interval.ms at each task time. Counted from the run's start (warm-up plus "
        "time until balanced), the group is balanced at 30.8 s, 30.9 s; of the 5 seeds run at "
        "two neighbouring task times, 5 balance no earlier at the longer one.")
    (why,) = mechanisms(["classic-connect:sessioned"], {}, runs)
    assert line in why
    # in order but by far less than the stop and start add (main's sessioned, 100 ms to 1 s)
    (slow,) = task_time_phase("kip415-worker-joins", ["classic-connect:sessioned"], [
        _connect_run(s, t, w, v) for s in range(5)
        for t, w, v in ((10, 26_300, 4_500), (1000, 27_300, 4_600))])
    assert "from 10 ms to 1 s it grows by 100 ms where a task's stop and start add 1.98 s" in slow
    # growing with the stop and start (or short of it by less than the floor): nothing to say
    ordered = [_connect_run(s, t, w, v) for s in range(5)
               for t, w, v in ((10, 26_300, 4_500), (1000, 27_300, 5_300))]
    assert task_time_phase("kip415-worker-joins", ["classic-connect:sessioned"], ordered) == []


def test_grids_below_five_seeds_are_named_as_carrying_no_sentence() -> None:
    from groupcoord.lab.report import too_few_for_claims

    rows = [{"protocol": p, "scenario": "rolling-bounce", "size": 10, "workload": "4x250",
             "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
             "stall_ms": v + s}
            for s in range(3) for p, v in (("classic:eager", 9000), ("consumer:uniform", 0))]
    (g,) = grid_verdicts({"spec": "x", "grids": [{"name": "rolling", "seeds": 3,
                                                   "metrics": ["stall_ms"]}]}, rows)
    assert too_few_for_claims([g]).startswith("No sentence from rolling (3 seeds)")


def test_a_topics_growth_is_explained_by_the_metadata_refresh_and_the_heartbeat() -> None:
    """partition-added: classic waits for its members' metadata refresh (the runs'
    metadata.max.age.ms), KIP-848 for a heartbeat: the line says so with each family's
    median time to converge, and each figure comes from the runs and their settings."""
    settings = {**SETTINGS, "classic:eager": {**SETTINGS["classic:eager"],
                                              "metadata.max.age.ms": 300_000}}
    runs = [_run("classic:eager", s, scenario="partition-added", convergence_ms=100_000 + s,
                 resources_moved=0) for s in range(3)]
    runs += [_run("consumer:uniform", s, scenario="partition-added", convergence_ms=5_000,
                  resources_moved=0) for s in range(3)]
    lines = mechanisms(["classic:eager", "consumer:uniform"], settings, runs)
    (grown,) = [t for t in lines if t.startswith("partition-added")]
    # classic's refresh phase is a draw per run: its distribution, not a median, is the result
    # (the leader's refresh: only the leader compares the metadata with its assignment)
    assert "classic:eager median 100 s over 3 runs, range 100 s to 100 s, mean 100 s: the " \
           "group rebalances when its leader's next metadata refresh sees the new partitions " \
           "(only the leader compares the metadata with what it assigned, as the Java " \
           "client's ConsumerCoordinator does) (metadata.max.age.ms 300 s, " \
           "at a phase drawn per run, uniform within it: a wait from 0 to 300 s, 150 s " \
           "expected)" in grown
    assert "consumer:uniform median 5 s over 3 runs, range 5 s to 5 s: the coordinator sees " \
           "the new partitions and sends each member its target with its next heartbeat " \
           "(5 s)" in grown
    # a scenario whose events do not touch the metadata has no such line
    crash = [{**r, "scenario": "crash"} for r in runs]
    assert not any("the topic grows" in t for t in mechanisms(
        ["classic:eager", "consumer:uniform"], settings, crash))


def test_a_sentence_names_the_conditions_its_mark_rests_on() -> None:
    """The review's S10 and S12: cooperative's edge on a crash is a few percent of a lag set
    by the 45 s session timeout, and its closest seeds are barely apart; the sentence says so,
    with the row's load and poll length and that members learn of a rebalance together."""
    settings = json.dumps({"heartbeat.interval.ms": 3000, "session.timeout.ms": 45000})
    runs = [_run(p, s, scenario="crash", lag_record_s=v + 10 * s, settings_json=settings)
            for s in range(5) for p, v in (("classic:cooperative", 100_000),
                                           ("classic:eager", 106_000))]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "consumers", "metrics": ["lag_record_s"], "seeds": 5,
         "protocols": ["classic:eager", "classic:cooperative"]}]}, runs)
    (c,) = claims([g])
    text = "; ".join(condition_clauses(c, [g], runs))
    assert "narrow: the closest seeds are" in text
    assert "a 6% difference of the medians" in text
    assert "8% busy, polls of about" in text and "at the same moment" in text
    assert "session timeout (45 s)" in text
    # a wide, large difference on a scale-out: only the row's conditions
    far = [{**r, "scenario": "scale-out", "lag_record_s": r["lag_record_s"] * (
        10 if r["protocol"] == "classic:eager" else 1)} for r in runs]
    (g2,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "consumers", "metrics": ["lag_record_s"], "seeds": 5,
         "protocols": ["classic:eager", "classic:cooperative"]}]}, far)
    (c2,) = claims([g2])
    text2 = "; ".join(condition_clauses(c2, [g2], far))
    assert "narrow" not in text2 and "difference of the medians" not in text2
    assert "session" not in text2 and "busy, polls of about" in text2


def test_a_spread_grid_says_kip848_members_phases_move_with_the_spread_too() -> None:
    """Round 8: under ``@hbspread`` the simulator shifts a KIP-848 member's heartbeat at each
    of its joins as well (``sim.consumer.spread_heartbeat``), so its lag moves with the
    spread; the page said KIP-848 members simply keep their own phase."""
    from groupcoord.lab.mechanism import conditions, phase_clause

    settings = {"classic:eager": {"heartbeat.interval.ms": 3000},
                "consumer:uniform": {"group.consumer.heartbeat.interval.ms": 5000}}
    text = conditions(["classic:eager", "consumer:uniform"], settings, [0.0, 1000.0, 3000.0])
    assert "a KIP-848 member's heartbeat is shifted by up to 0, 1 s and 3 s at each of its " \
        "joins as well" in text
    assert "shifted" not in conditions(["classic:eager", "consumer:uniform"], settings)
    clause = phase_clause(["consumer:uniform"], [1000.0])
    assert "shifted by up to 1 s at each of its joins" in clause
    assert "shifted" not in phase_clause(["consumer:uniform"])
