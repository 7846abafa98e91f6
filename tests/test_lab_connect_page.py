"""The Connect grids' page text: the Kafka version the classic-connect rows model, time until
balanced from the scenario's last event, what the stall measures, the task-times axis."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import (
    BALANCE_AFTER_LAST,
    CONNECT_KAFKA_CHANGES,
    X_NAMES,
    connect_kafka_text,
)
from groupcoord.lab.mechanism import attach_balance_after_last, balance_after_last
from groupcoord.lab.report import CONNECT_STALL, verdict_md
from groupcoord.lab.spec import load_spec
from groupcoord.lab.verdict import grid_verdict

CONNECT = ["classic-connect:eager", "classic-connect:sessioned"]


def _run(protocol: str, seed: int, scenario: str, **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": 6, "workload": "16x8c",
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True,
            "run_id": f"{protocol}-{scenario}-{seed}", **metrics}


def test_time_until_balanced_after_the_last_event_leaves_out_the_gap_and_the_absence() -> None:
    # connector-removed: two changes 20 s apart, balanced 2.03 s after the second
    run = {"time_to_balance_ms": 22_030.0, "warmup_ms": 28_000}
    assert balance_after_last(run, {"quiet_at_ms": 48_000, "balanced_since_ms": 50_030}) \
        == 2_030.0
    # without balanced_since_ms: the first disturbance plus time until balanced
    assert balance_after_last(run, {"quiet_at_ms": 48_000}) == 2_030.0
    # a bounce after the delay: 300 s + 15 s away, balanced 3.2 s after its return
    bounce = {"time_to_balance_ms": 318_176.0, "warmup_ms": 28_431}
    assert balance_after_last(bounce, {"quiet_at_ms": 343_431,
                                       "balanced_since_ms": 346_607}) == 3_176.0
    # balanced before the last event and stayed so: 0, not a negative time
    assert balance_after_last(run, {"quiet_at_ms": 60_000, "balanced_since_ms": 50_030}) == 0.0
    # never balanced, or no moment in the summary: nothing
    assert balance_after_last({"time_to_balance_ms": None, "warmup_ms": 1}, {
        "quiet_at_ms": 5}) is None
    assert balance_after_last(run, {}) is None


def _connector_removed_rows() -> list[dict[str, Any]]:
    """Eager balances 2 s after the second change, sessioned 1 s, each seed's changes a
    different gap apart (18 to 22 s): from the first event the ranges overlap."""
    rows = []
    for s in range(5):
        gap = 18_000.0 + 1_000.0 * s
        for p, after, extra in (("classic-connect:eager", 2_030.0, 0.0),
                                ("classic-connect:sessioned", 1_030.0, 1_500.0)):
            first = gap + after + (extra if s % 2 else 0.0)
            rows.append(_run(p, s, "kip415-connector-removed", task_restarts=10,
                             time_to_balance_ms=first, warmup_ms=28_000,
                             _summary={"quiet_at_ms": 28_000 + gap + (extra if s % 2 else 0.0),
                                       "balanced_since_ms": 28_000 + first}))
    return rows


def test_a_connect_table_shows_time_until_balanced_from_the_last_event() -> None:
    grid = {"name": "kip415", "protocols": CONNECT,
            "metrics": ["task_restarts", "time_to_balance_ms"]}
    rows = _connector_removed_rows()
    # from the first event (the runs table's column): the 20 s gap makes the ranges overlap
    before = grid_verdict(grid, rows).rows[0].metrics[1]
    assert before.metric.column == "time_to_balance_ms" and before.verdict != "best"
    attach_balance_after_last(rows, {r["run_id"]: r["_summary"] for r in rows})
    assert {r[BALANCE_AFTER_LAST] for r in rows} == {2_030.0, 1_030.0}
    after = grid_verdict(grid, rows).rows[0].metrics[1]
    assert after.metric.column == BALANCE_AFTER_LAST
    assert after.verdict == "best" and after.best == ("classic-connect:sessioned",)
    assert after.cells["classic-connect:eager"].median == 2_030.0
    text = verdict_md(grid_verdict(grid, rows))
    assert "time until balanced after the last event (s)" in text
    assert "neither the gap between two events nor the worker's absence is in it" in text


def test_a_connect_grid_names_the_kafka_version_it_models_from_one_place() -> None:
    text = connect_kafka_text()
    for change in CONNECT_KAFKA_CHANGES:
        assert f"{change.ticket} (apache/kafka PR {change.pull}, Kafka {change.releases})" \
            in text
    # the version the rows follow is the newest change's first release
    assert "as of Kafka 3.7.0 and later" in text
    assert "-d0 rows do not hold" in text
    rows = [_run(p, s, "worker-leaves-d0", task_restarts=5) for p in CONNECT for s in range(5)]
    page = verdict_md(grid_verdict({"name": "kip415", "protocols": CONNECT,
                                    "metrics": ["task_restarts", "stall_ms"]},
                                   [{**r, "stall_ms": 2_020} for r in rows]))
    assert text in page
    assert CONNECT_STALL in page and "barrier's wait" in CONNECT_STALL
    # a consumer grid has neither
    consumer = [_run(p, s, "crash", stall_ms=10) for p in ("classic:eager", "consumer:uniform")
                for s in range(5)]
    page = verdict_md(grid_verdict({"name": "c", "protocols": ["classic:eager",
                                                               "consumer:uniform"],
                                    "metrics": ["stall_ms"]}, consumer))
    assert "Kafka version modelled" not in page and CONNECT_STALL not in page


def test_the_task_times_axis_says_stop_and_start_are_swept_together() -> None:
    assert X_NAMES["task_start_ms"][0].startswith("the task stop and start time")
    # which holds only while the paper spec sweeps them equal
    spec = load_spec("paper")
    (grid,) = [g for g in spec.grids if g.name == "kip415-task-times"]
    times = [json.loads(w.work or "{}") for w in grid.workloads]
    assert len({t.get("task_start_ms") for t in times}) > 1
    assert all(t.get("task_stop_ms") == t.get("task_start_ms") for t in times)


def test_the_intro_says_what_its_run_and_pair_counts_count() -> None:
    """The runs line: runs per grid, distinct runs, and distinct results naming the second
    names found (a timing label at its default, a workload at its defaults); the pair count
    per grid, so that a reader can rebuild both from the tables."""
    from groupcoord.lab.report import method_text
    from groupcoord.lab.verdict import grid_verdicts

    def run(p: str, s: int, workload: str, rid: str, restarts: int) -> dict[str, Any]:
        return {**_run(p, s, "kip415-worker-joins", task_restarts=restarts), "run_id": rid,
                "workload": workload}

    runs = [run(p, s, "16x8c", f"{p}{s}", 10 + s + (100 if p.endswith("eager") else 0))
            for p in CONNECT for s in range(5)]
    # the same simulations under a workload name whose settings are the defaults
    runs += [{**r, "run_id": r["run_id"] + "-t", "workload": "16x8c-task1s"} for r in runs]
    # and one that differs in a result: a distinct result
    runs[-1] = {**runs[-1], "task_restarts": 999}
    grids = [{"name": "kip415", "protocols": CONNECT, "workloads": ["16x8c"],
              "metrics": ["task_restarts"]},
             {"name": "task-times", "protocols": CONNECT, "workloads": ["16x8c-task1s"],
              "metrics": ["task_restarts"]},
             {"name": "again", "protocols": CONNECT, "workloads": ["16x8c"],
              "metrics": ["task_restarts"]}]
    verdicts = grid_verdicts({"name": "paper", "grids": grids}, runs)
    paras = method_text(runs, verdicts)
    left = next(p for p in paras if "runs in these grids" in p)
    test = " ".join(paras[1:paras.index(left)])  # the reading rule's paragraphs
    assert left.startswith("30 runs in these grids (20 distinct runs in runs/, a run of a "
                           "cell that two grids share")
    assert "11 distinct results: 9 runs have the same protocol, scenario, size, seed and " \
           "every result column as another run" in left
    assert "(workload 16x8c-task1s = 16x8c)" in left
    assert "per grid: kip415 1, task-times 1, again 1)" in test


def test_a_mark_whose_winner_changes_with_size_says_each_sizes_mark() -> None:
    """worker-bounce-d30s's task downtime: ★ sessioned at 12 workers, ★ eager at 3 and 6; each
    row says so. A scenario whose winner is the same at every size says nothing."""
    grid = {"name": "kip415", "protocols": CONNECT,
            "metrics": ["task_restarts", "task_downtime_task_s"]}
    rows = []
    for size in (3, 6, 12):
        for s in range(5):
            eager_wins = size < 12
            rows += [{**_run(p, s, "worker-bounce-d30s", task_restarts=(100 if "eager" in p
                                                                         else 20) + s,
                             task_downtime_task_s=(
                                 (500.0 if "eager" in p else 800.0) if eager_wins
                                 else (550.0 if "eager" in p else 380.0)) + s),
                      "size": size} for p in CONNECT]
    g = grid_verdict(grid, rows)
    downtime = [r.metrics[1] for r in g.rows]
    assert [mv.best for mv in downtime] == [("classic-connect:eager",)] * 2 + [
        ("classic-connect:sessioned",)]
    expected = ("★ classic-connect:eager at 3, 6 workers; ★ classic-connect:sessioned at 12 "
                "workers")
    assert all(mv.by_size == expected for mv in downtime)
    restarts = [r.metrics[0] for r in g.rows]
    assert all(mv.best == ("classic-connect:sessioned",) and not mv.by_size for mv in restarts)
    assert f"the winner changes with size: {expected}" in verdict_md(g)
