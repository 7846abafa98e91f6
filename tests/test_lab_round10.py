"""The page's answers to the tenth outside review (docs/lab.md, "Round 10"): the heartbeat
spread on the task-times question, the chance count's deterministic pairs, excess lag
recomputable from the published columns. Calibration rows near the 2x edge are flagged on the
sentence's own metric (``report.calibration_flag``, tests/test_lab_round11.py)."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.caveats import with_caveats
from groupcoord.lab.spec import load_spec
from groupcoord.lab.verdict import claims, grid_verdicts, mark_spread_limits

EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"


def _run(protocol: str, seed: int, workload: str, ms: int, **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "kip415-worker-joins", "size": 12,
            "members": 12, "workload": workload, "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "settings_json": "{}",
            "work": json.dumps({"task_stop_ms": ms, "task_start_ms": ms}), **metrics}


def test_the_paper_spec_runs_the_heartbeat_spread_at_the_short_task_times() -> None:
    """Round 10, S4: the task-times grid's eager win at 10 and 100 ms tasks was never run with
    spread heartbeats; the paper spec runs those cells at 0, 1 and 3 s of spread, and the
    kip415-hb-spread grids ask about task downtime first (restarts do not change with it)."""
    grids = {g.name: g for g in load_spec("paper").grids}
    times = grids["kip415-task-times"]
    for ms in ("10ms", "100ms"):
        g = grids[f"kip415-hb-spread-{ms}"]
        assert [w.name for w in g.workloads] == [f"16x8c-task{ms}"]
        assert f"16x8c-task{ms}" in [w.name for w in times.workloads]
        assert list(g.scenarios) == ["kip415-worker-joins"] and list(g.sizes) == [12]
        assert sorted(g.protocols) == sorted(f"{p}@hbspread{s}" for p in (EAGER, SESSIONED)
                                             for s in ("0s", "1s", "3s"))
        assert g.metrics[0] == "task_downtime_task_s"
    assert grids["kip415-hb-spread"].metrics[0] == "task_downtime_task_s"


def _task_times_and_spread() -> list[Any]:
    """kip415-task-times at 10 ms and 1 s tasks (eager wins downtime at 10 ms, as render 13
    did) and kip415-hb-spread-10ms, where a 3 s spread reverses it (the reviewer's control:
    eager 197 against sessioned 105 task·s)."""
    plain = {"name": "kip415-task-times", "protocols": [EAGER, SESSIONED],
             "scenarios": ["kip415-worker-joins"], "metrics": ["task_downtime_task_s"],
             "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("0s", "1s", "3s") for p in (EAGER, SESSIONED)]
    spread = {**plain, "name": "kip415-hb-spread-10ms", "protocols": labels,
              "workloads": ["16x8c-task10ms"]}
    rows = [_run(p, s, "16x8c-task10ms", 10, task_downtime_task_s=(10.0 if p == EAGER
                                                                   else 60.0) + s)
            for p in (EAGER, SESSIONED) for s in range(5)]
    rows += [_run(p, s, "16x8c-task1s", 1000, task_downtime_task_s=(900.0 if p == EAGER
                                                                    else 200.0) + s)
             for p in (EAGER, SESSIONED) for s in range(5)]
    at = {"0s": (10.0, 60.0), "1s": (60.0, 62.0), "3s": (190.0, 100.0)}
    for label in labels:
        base, _, tail = label.partition("@hbspread")
        v = at[tail][0 if base == EAGER else 1]
        rows += [_run(label, s, "16x8c-task10ms", 10,
                      task_downtime_task_s=v + (s * 8 if tail == "1s" else s))
                 for s in range(5)]
    return grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)


def test_an_eager_connect_mark_says_it_holds_only_with_aligned_heartbeats() -> None:
    g_plain, g_spread = _task_times_and_spread()
    row10 = next(r for r in g_plain.rows if r.workload == "16x8c-task10ms")
    mv = row10.metrics[0]
    assert mv.best == (EAGER,)
    # the spread grid's own cell, by name, with what it found at each spread above 0
    assert ("holds only with aligned heartbeats (kip415-hb-spread-10ms, heartbeats spread "
            "after a join, the same cell: at 1 s: no protocol separated; at 3 s: "
            "classic-connect:sessioned; that grid is where eager's mark goes)") in mv.limit
    # the wire measurement is of consumers: a Connect mark says what it stands for
    mv.limit = ""
    wire = [{"client": "Java", "rebalances": 24, "median_s": 0.022, "largest_s": 0.094}]
    mark_spread_limits([g_plain, g_spread], wire, stable=[])
    assert "(consumers; a Connect worker's WorkerCoordinator runs the same classic " \
           "heartbeat thread, not measured on its own)" in mv.limit
    # the 1 s row is not in the spread grid: no such limit there
    row1 = next(r for r in g_plain.rows if r.workload == "16x8c-task1s")
    assert "aligned heartbeats" not in row1.metrics[0].limit


def test_the_task_times_sentence_names_the_spread_result_of_its_own_cell() -> None:
    verdicts = _task_times_and_spread()
    found = with_caveats(claims(verdicts), verdicts, [])
    tt = next(c for c in found if c.grid == "kip415-task-times")
    # whether the mark survives a 1 s spread, in the sentence itself (round 14), as its
    # opening condition (round 17: an eager win opens with its aligned heartbeats); the 3 s
    # spread's reversal in the note under it
    assert tt.text.startswith("Only with all heartbeats aligned (as right after a rebalance; ")
    assert "at a 1 s spread: not separated)" in tt.text
    assert "classic-connect:eager at 10 ms;" in tt.text
    assert "spread 3 s (kip415-hb-spread-10ms): classic-connect:sessioned lowest" in tt.full
    assert "classic-connect:eager at 10 ms: the mark holds only with aligned heartbeats " \
           "(kip415-hb-spread-10ms" in tt.full
    assert "at 3 s: classic-connect:sessioned" in tt.full
    # a spread row whose fresh seeds did not repeat its mark says so, not "no protocol"
    from groupcoord.lab.verdict import MetricVerdict
    _plain, g_spread = verdicts
    row3 = next(r for r in g_spread.rows if r.x == 3000)
    mv3: MetricVerdict = row3.metrics[0]
    mv3.verdict = "unconfirmed"
    row10 = next(r for r in _plain.rows if r.workload == "16x8c-task10ms")
    row10.metrics[0].limit = ""
    mark_spread_limits(verdicts, [], [])
    assert ("at 3 s: not confirmed (classic-connect:sessioned on the first seeds; "
            in row10.metrics[0].limit)
    # the spread grid's own sentence restates what the task-times sentence quotes (round 12:
    # S5 / S6 restated S2 / S3): not shown
    assert not any(c.grid == "kip415-hb-spread-10ms" for c in found)


def test_a_spread_sweep_answers_with_downtime_not_with_the_input_free_restarts() -> None:
    """Round 10, S2/S3: restarts are a function of the assignment (32 and 18 against 128 at
    every spread), so a sweep sentence on them repeated the unswept finding. With task
    downtime the spread grids' first metric, restarts get a sentence only where their winner
    changes with the spread, which it never does."""
    _plain, g_spread = _task_times_and_spread()
    for r in g_spread.rows:
        assert r.metrics[0].metric.column == "task_downtime_task_s"
    rows = []
    for s in range(5):
        for sp in ("0s", "3s"):
            rows.append(_run(f"{EAGER}@hbspread{sp}", s, "16x8c", 1000, task_restarts=128,
                             task_downtime_task_s=(600.0 if sp == "0s" else 680.0) + s))
            rows.append(_run(f"{SESSIONED}@hbspread{sp}", s, "16x8c", 1000, task_restarts=18,
                             task_downtime_task_s=(120.0 if sp == "0s" else 216.0) + s))
    grid = {"name": "kip415-hb-spread", "scenarios": ["kip415-worker-joins"], "seeds": 5,
            "protocols": [f"{p}@hbspread{s}" for p in (EAGER, SESSIONED) for s in ("0s", "3s")],
            "metrics": list(next(g for g in load_spec("paper").grids
                                 if g.name == "kip415-hb-spread").metrics)}
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    found = claims([g])
    assert [c.metric for c in found] == ["task_downtime_task_s"]
    # one winner at every spread: said as no crossover (round 17)
    assert "classic-connect:sessioned, the same winner from 0 to 3,000 ms: no crossover in " \
        "the sweep" in found[0].text


def test_a_pair_fixed_on_every_seed_is_not_a_chance_event() -> None:
    """Round 10, the chance count: 1 / C(2n, n) assumes continuous draws; task restarts (128
    against 50 on every seed) are a count the assignment fixes. Such a pair is counted apart,
    and the page's method text says where the figure does not apply."""
    from groupcoord.lab.report import method_text
    from groupcoord.lab.verdict import comparisons, separation_chance

    rows = [_run(p, s, "16x8c", 1000, task_restarts=128 if p == EAGER else 50,
                 task_downtime_task_s=(900.0 if p == EAGER else 300.0) + s)
            for p in (EAGER, SESSIONED) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415", "protocols": [EAGER, SESSIONED], "seeds": 5,
         "metrics": ["task_restarts", "task_downtime_task_s"]}]}, rows)
    restarts, downtime = g.rows[0].metrics
    assert restarts.verdict == downtime.verdict == "best"  # both marked in the table
    cmp = comparisons([g])
    # the downtime pair is a draw and counts; the restarts pair is fixed and counted apart
    assert (cmp.pairs, cmp.fixed, cmp.claim_fixed) == (1, 1, 1)
    assert abs(cmp.expected - 2 * separation_chance(5)) < 1e-12
    text = " ".join(method_text(rows, [g]))
    assert ("Where the chance figure does not apply: 1 more pairs (1 of them in cells a "
            "sentence may rest on) are not counted in it") in text
    assert "the tables test 1 pairs of protocols" in text


def test_excess_lag_recomputed_as_the_page_says_gives_the_tables_number() -> None:
    """Round 10: the reviewer could not recompute excess lag from the published columns (they
    subtracted the control from disturbances/' lag_record_s, which already is the excess). The
    page says how; done that way on real runs' flattened tables, it gives runs/' number and
    the verdict table's median."""
    from groupcoord.lab.report import EXCESS_LAG_RECOMPUTE
    from groupcoord.lab.runs import flatten, run_one
    from groupcoord.lab.spec import expand, restrict

    assert "do not subtract control_lag_record_s" in EXCESS_LAG_RECOMPUTE
    assert "sum of disturbances/'s lag_record_s over its windows 1 and up" in EXCESS_LAG_RECOMPUTE
    spec = restrict(load_spec("paper"), scenarios=["scale-out"], sizes=[8],
                    protocols=["classic:eager", "classic:cooperative"],
                    workloads=["1x32-p20ms-40pct"])
    cells = [r for r in expand(spec) if r.replicate < 5 and "@" not in r.protocol]
    runs, windows = [], []
    for params in cells:
        tables = flatten(run_one(params))
        runs += tables["runs"]
        windows += tables["disturbances"]
    assert runs and all(r["ok"] for r in runs)
    recomputed: dict[str, float] = {}
    peaks: dict[str, float] = {}
    for w in windows:
        if w["window"] >= 1:
            recomputed[w["run_id"]] = recomputed.get(w["run_id"], 0.0) + w["lag_record_s"]
            peaks[w["run_id"]] = max(peaks.get(w["run_id"], 0), w["lag_peak"])
    for r in runs:
        assert abs(recomputed[r["run_id"]] - r["lag_record_s"]) < 0.01
        assert peaks[r["run_id"]] == r["lag_peak"]
    # the reviewer's way (the control subtracted again) does not give it where the control
    # has any lag
    twice = {w["run_id"]: w["lag_record_s"] - w["control_lag_record_s"] for w in windows
             if w["window"] >= 1}
    assert any(abs(twice[r["run_id"]] - r["lag_record_s"]) > 0.5 for r in runs)
    # and the verdict table's cell is the median of the recomputed values
    import statistics
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover-20ms", "protocols": ["classic:eager", "classic:cooperative"],
         "scenarios": ["scale-out"], "metrics": ["lag_record_s"], "seeds": 5}]}, runs)
    cell = g.rows[0].metrics[0].cells["classic:eager"]
    mine = [recomputed[r["run_id"]] for r in runs if r["protocol"] == "classic:eager"]
    assert abs(cell.median - statistics.median(mine)) < 0.01


def test_an_eager_mark_on_a_load_the_spread_was_not_run_at_says_so() -> None:
    """Round 10, S6: the spread grid ran scale-out at 8 members at 40 % busy only; the
    crossover's eager wins at 20 and 30 % read as if the aligned-heartbeat condition covered
    them. Their marks say the spread was not run there, and the sentence says at which loads
    each clause holds (generated from the rows)."""
    plain = {"name": "crossover-20ms", "protocols": ["classic:eager", "classic:cooperative"],
             "scenarios": ["scale-out"], "metrics": ["lag_record_s"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("0s", "3s") for p in plain["protocols"]]
    spread = {**plain, "name": "hb-spread", "protocols": labels}

    def run(p: str, s: int, pct: int, v: float) -> dict[str, Any]:
        return {"protocol": p, "scenario": "scale-out", "size": 8, "members": 8,
                "workload": f"1x32-p20ms-{pct}pct", "fault_rate": 0.0, "seed": s, "ok": True,
                "caught_up": True, "noop_events": 0, "settings_json": "{}",
                "total_partitions": 32, "lag_record_s": v + s,
                "work": json.dumps({"records_per_s": pct / 8, "processing_ms": 20})}

    rows = [run(p, s, pct, 1.0 if p == "classic:eager" else 300.0)
            for pct in (20, 30, 40) for p in plain["protocols"] for s in range(5)]
    rows += [run(lb, s, 40, (1.0 if lb.startswith("classic:eager") else 300.0)
                 if lb.endswith("0s") else (400.0 + 9 * s if lb.startswith("classic:eager")
                                             else 390.0 + 7 * s))
             for lb in labels for s in range(5)]
    g_plain, g_spread = grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)
    by_x = {r.workload: r.metrics[0] for r in g_plain.rows}
    untested = ("was not tested with spread heartbeats (hb-spread ran scale-out at 8 members "
                "on 1x32-p20ms-40pct only)")
    for wl in ("1x32-p20ms-20pct", "1x32-p20ms-30pct"):
        assert by_x[wl].best == ("classic:eager",) and untested in by_x[wl].limit
    assert "holds only with aligned heartbeats" in by_x["1x32-p20ms-40pct"].limit
    assert untested not in by_x["1x32-p20ms-40pct"].limit
    (c,) = [c for c in claims([g_plain, g_spread]) if c.grid == "crossover-20ms"]
    assert "at 20, 30 % busy: the mark " + untested in c.full
    assert "at 40 % busy: the mark holds only with aligned heartbeats (hb-spread" in c.full
    assert "at 20, 30 % busy: the mark was not tested with spread heartbeats" in c.full
    # the sentence says where the spread takes the mark (round 14), the limit's words going
    # to the note under it
    assert "(limit in the note; at 40 % busy: spread 3 s: not separated)" in c.text


def test_the_other_workloads_caveat_names_the_lowest_ranked_median() -> None:
    """Round 10's re-report: the spread grids' caveat named connect:cooperative (not ranked:
    not in Apache Kafka) as the lowest median beside a ★ of classic-connect:sessioned."""
    from groupcoord.lab.caveats import other_workloads

    plain = {"name": "kip415", "scenarios": ["kip415-worker-joins"], "seeds": 5,
             "protocols": ["connect:cooperative", EAGER, SESSIONED],
             "metrics": ["task_downtime_task_s"]}
    labels = [f"{p}@hbspread{s}" for p in (EAGER, SESSIONED) for s in ("0s", "3s")]
    spread = {**plain, "name": "kip415-hb-spread-10ms", "protocols": labels}
    vals = {"connect:cooperative": 70.0, EAGER: 900.0, SESSIONED: 200.0}
    rows = [_run(p, s, "16x8c", 1000, task_downtime_task_s=v + s)
            for p, v in vals.items() for s in range(5)]
    rows += [_run(lb, s, "16x8c-task10ms", 10, task_downtime_task_s=(
        10.0 if lb.startswith(EAGER) else 60.0) + s) for lb in labels for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)
    c = next(c for c in claims(verdicts) if c.grid == "kip415-hb-spread-10ms")
    text = other_workloads(c, verdicts)
    assert "lowest median classic-connect:sessioned 202 task·s" in text
    assert "connect:cooperative" not in text
