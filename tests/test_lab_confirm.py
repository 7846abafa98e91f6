"""Marks confirmed on a second, fresh seed set (``lab.verdict.confirm``): a ★ or = stands only
where the grid's second seed set marks the same best; otherwise the row is unmarked, says what
each set found, and yields no sentence. Also: winners named as protocol, assignor and
heartbeat, and no crossover sentence on a win over a configured delay. Synthetic rows."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import full_name
from groupcoord.lab.report import _verdict_word, seeds_line
from groupcoord.lab.verdict import claims, grid_verdict, grid_verdicts

GRID = {"name": "g", "question": "q?", "metrics": ["stall_ms"], "seeds": 5,
        "confirm_seeds": 5, "protocols": ["classic:eager", "classic:cooperative"]}


def _runs(first: dict[str, list[float]], fresh: dict[str, list[float]],
          scenario: str = "crash") -> list[dict[str, Any]]:
    out = []
    for rep_base, sets in ((0, first), (5, fresh)):
        for p, vals in sets.items():
            for i, v in enumerate(vals):
                rep = rep_base + i
                out.append({"protocol": p, "scenario": scenario, "size": 10,
                            "workload": "4x250", "fault_rate": 0.0, "seed": 1000 + rep,
                            "replicate": rep, "ok": True, "caught_up": True, "stall_ms": v})
    return out


LOW = [100.0, 120.0, 130.0, 110.0, 90.0]
HIGH = [5000.0, 5200.0, 5100.0, 5300.0, 4900.0]


def test_a_mark_the_fresh_seeds_repeat_stands() -> None:
    g = grid_verdict(GRID, _runs({"classic:eager": LOW, "classic:cooperative": HIGH},
                                 {"classic:eager": LOW, "classic:cooperative": HIGH}))
    (row,) = g.rows
    (mv,) = row.metrics
    assert mv.verdict == "best" and mv.best == ("classic:eager",)
    assert mv.again is not None and mv.again.best == ("classic:eager",)
    assert mv.cells["classic:eager"].mark == "best"
    # the numbers are the first set's five seeds, not ten
    assert row.seeds == 5 and len(mv.cells["classic:eager"].values) == 5
    assert (g.confirmed, g.unconfirmed) == (1, 0)
    assert claims([g])


def test_a_mark_the_fresh_seeds_do_not_repeat_is_no_mark_and_no_sentence() -> None:
    # on the fresh seeds the two overlap: a tie
    g = grid_verdict(GRID, _runs({"classic:eager": LOW, "classic:cooperative": HIGH},
                                 {"classic:eager": LOW,
                                  "classic:cooperative": [100.0, 200.0, 300.0, 400.0, 500.0]}))
    (mv,) = g.rows[0].metrics
    assert mv.verdict == "unconfirmed"
    assert not any(c.mark for c in mv.cells.values())
    assert mv.best == ("classic:eager",)  # what the first set found, still said
    word = _verdict_word(mv)
    assert word.startswith("not confirmed") and "\u2605 classic:eager" in word and "a tie" in word
    assert (g.confirmed, g.unconfirmed) == (0, 1)
    # no sentence on the mark; the grid's answer says nothing separated, and that the first
    # seeds' mark was not repeated
    (answer,) = claims([g])
    assert answer.best == "" and "1 marked on the first seeds only, not on the fresh" in \
        answer.text, answer.text
    assert "1 not confirmed" in seeds_line(g)


def test_the_fresh_seeds_marking_another_best_is_not_a_confirmation() -> None:
    g = grid_verdict(GRID, _runs({"classic:eager": LOW, "classic:cooperative": HIGH},
                                 {"classic:eager": HIGH, "classic:cooperative": LOW}))
    (mv,) = g.rows[0].metrics
    assert mv.verdict == "unconfirmed" and mv.again is not None
    assert mv.again.best == ("classic:cooperative",)
    assert "fresh seeds \u2605 classic:cooperative" in _verdict_word(mv)


def test_a_grid_without_a_second_set_says_its_marks_are_unconfirmed() -> None:
    grid = {**GRID, "confirm_seeds": 0}
    g = grid_verdict(grid, _runs({"classic:eager": LOW, "classic:cooperative": HIGH}, {}))
    (mv,) = g.rows[0].metrics
    assert mv.verdict == "best" and mv.again is None
    assert "marks not confirmed" in seeds_line(g)


def test_a_crossover_never_names_a_win_over_a_configured_delay() -> None:
    """kip415-task-times: task downtime swept over the task stop/start times; at 1 s eager's
    mark is won against sessioned's configured 30 s delay (by design: no finding), at 5 s
    sessioned wins. The sentence says the first is no finding and names no eager win."""
    settings = json.dumps({"scheduled.rebalance.max.delay.ms": 30_000})
    downtime = {1000: (100.0, 400.0), 5000: (900.0, 450.0)}
    rows = [{**_run1(p, s, workload=f"16x8c-task{ms // 1000}s",
                     task_downtime_task_s=v[k] + s),
             "settings_json": settings,
             "work": json.dumps({"task_stop_ms": ms, "task_start_ms": ms})}
            for ms, v in downtime.items()
            for k, p in enumerate(("classic-connect:eager", "classic-connect:sessioned"))
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415-task-times",
         "protocols": ["classic-connect:eager", "classic-connect:sessioned"],
         "metrics": ["task_downtime_task_s"], "seeds": 5}]}, rows)
    assert g.parameter == "task_start_ms"
    (c,) = claims([g])
    assert "classic-connect:eager at" not in c.text
    assert "classic-connect:sessioned at 5,000 ms" in c.text
    assert ("at 1,000 ms the only mark is won against the configured "
            "scheduled.rebalance.max.delay.ms, by design (no finding)") in c.text


def _run1(protocol: str, seed: int, workload: str, **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "worker-leaves-d30s", "size": 12,
            "workload": workload, "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, **metrics}


def test_sentences_name_protocol_assignor_and_heartbeat() -> None:
    st = {"classic:eager": json.dumps({"heartbeat.interval.ms": 3000}),
          "classic:cooperative": json.dumps({"heartbeat.interval.ms": 3000}),
          "consumer:uniform@hb3s": json.dumps({"group.consumer.heartbeat.interval.ms": 3000})}
    assert full_name("classic:eager", json.loads(st["classic:eager"])) == (
        "classic:eager (range, 3 s heartbeat)")
    assert full_name("consumer:uniform@hb3s", json.loads(st["consumer:uniform@hb3s"])) == (
        "consumer:uniform@hb3s (uniform, 3 s heartbeat)")
    assert full_name("connect:eager", {"heartbeat.interval.ms": 3000}) == "connect:eager"
    rows = [{**r, "settings_json": st[r["protocol"]]} for r in _runs(
        {"classic:eager": LOW, "classic:cooperative": HIGH},
        {"classic:eager": LOW, "classic:cooperative": HIGH})]
    (g,) = grid_verdicts({"spec": "paper", "grids": [GRID]}, rows)
    (c,) = claims([g])
    assert "classic:eager (range, 3 s heartbeat) has " in c.text
    assert "for classic:cooperative (cooperative-sticky, 3 s heartbeat) (the runner-up)" in c.text


def test_a_tie_whose_medians_lie_far_apart_says_so() -> None:
    """The metadata-age row of round 6: 4.68 s against 19.2 s medians, tied by one seed."""
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.report import tie_medians
    from groupcoord.lab.verdict import Cell, judge

    conv = BY_COLUMN["convergence_ms"]
    cells = {"consumer:uniform": Cell(dict(enumerate([4600.0, 4680, 4700, 4650, 4690]))),
             "classic:eager": Cell(dict(enumerate([4250.0, 19200, 19000, 25000, 12000])))}
    mv = judge(cells, conv)
    assert mv.verdict == "tie"
    text = _verdict_word(mv)
    assert text.startswith("tie of the ranges only: medians consumer:uniform 4.68 against "
                           "classic:eager 19")
    assert "1 of 5 classic:eager seeds reach consumer:uniform's range" in text
    # medians close together: a plain tie
    close = {"consumer:uniform": Cell(dict(enumerate([4600.0, 4680, 4700, 4650, 4690]))),
             "classic:eager": Cell(dict(enumerate([4650.0, 4700, 4720, 4600, 4710])))}
    assert tie_medians(judge(close, conv)) == ""


def test_a_moved_or_paused_mark_under_a_heartbeat_longer_than_the_bounce_says_so() -> None:
    """field-costs rolling bounce: KIP-848's ★ on partitions moved rests on the 3 s downtime
    under its 5 s heartbeat; at a 3 s heartbeat it would not, and classic's 3 s is not longer."""
    st = {"consumer:uniform": json.dumps({"group.consumer.heartbeat.interval.ms": 5000}),
          "classic:cooperative": json.dumps({"heartbeat.interval.ms": 3000})}
    rows = [{**_run(p, s, scenario="rolling-bounce", size=10, workload="field-costs",
                    resources_moved=v + s),
             "settings_json": st[p]}
            for p, v in (("consumer:uniform", 10.0), ("classic:cooperative", 200.0))
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "field-costs", "protocols": ["classic:cooperative", "consumer:uniform"],
         "metrics": ["resources_moved"], "seeds": 5}]}, rows)
    (mv,) = g.rows[0].metrics
    assert g.rows[0].down_ms == 3000
    assert mv.verdict == "best" and mv.best == ("consumer:uniform",)
    assert mv.limit == "rests on the 3 s bounce, shorter than consumer:uniform's 5 s heartbeat"
    assert "rests on the 3 s bounce" in _verdict_word(mv)
    (c,) = claims([g])
    assert "The mark rests on the 3 s bounce, shorter than consumer:uniform's 5 s heartbeat" \
        in c.text
    assert "Eager's mark" not in c.text


def _run(protocol: str, seed: int, scenario: str, size: int, workload: str,
         **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, **metrics}


def test_the_page_says_the_workers_run_in_parallel() -> None:
    from groupcoord.lab.report import elapsed_text

    text = elapsed_text({"sim_s": 100.0, "master": "local[*]"},
                        [{"wall_ms": 90_000.0}, {"wall_ms": 110_000.0}])
    assert text.startswith("the simulations took 100.0 s elapsed; the runs' own wall times")
    assert "sum to 200.0 s, 2.0 times that, because Spark's workers (local[*]) run them in " \
           "parallel" in text


def test_time_until_balanced_per_window_names_the_gap_between_events() -> None:
    from groupcoord.lab.mechanism import WINDOW_STARTS, balance_per_window

    rs = [{"protocol": "connect:eager", "time_to_balance_ms": 21_000 + s,
           WINDOW_STARTS: [1000, 21_000]} for s in range(3)]
    rs += [{"protocol": "connect:cooperative", "time_to_balance_ms": 20_034,
            WINDOW_STARTS: [1000, 21_000]} for s in range(3)]
    line = balance_per_window("kip415-connector-removed",
                              ["connect:eager", "connect:cooperative"], rs)
    assert "its disturbances come 20 s apart" in line
    assert "connect:eager 1 s, connect:cooperative 34 ms" in line
    # one disturbance: nothing to say
    assert balance_per_window("x", ["connect:eager"],
                              [{**rs[0], WINDOW_STARTS: [1000]}]) == ""


def test_the_page_says_how_marks_were_confirmed() -> None:
    from groupcoord.lab.report import method_text

    runs = _runs({"classic:eager": LOW, "classic:cooperative": HIGH},
                 {"classic:eager": HIGH, "classic:cooperative": LOW})
    g = grid_verdict(GRID, runs)
    text = " ".join(method_text(runs, [g]))
    assert "Confirmation on fresh seeds" in text
    assert "0 marks were confirmed and 1 were not" in text


def test_classic_growth_is_a_distribution_with_each_seed_sets_median() -> None:
    from groupcoord.lab.mechanism import FRESH_SET, metadata_mechanism

    st = {"classic:eager": {"metadata.max.age.ms": 300_000},
          "consumer:uniform": {"group.consumer.heartbeat.interval.ms": 5000}}
    runs = [{"protocol": "classic:eager", "scenario": "grow-by-900", "workload": "light",
             "convergence_ms": v, FRESH_SET: i >= 4}
            for i, v in enumerate([10_000, 100_000, 150_000, 200_000,
                                   250_000, 260_000, 270_000, 280_000])]
    runs += [{"protocol": "consumer:uniform", "scenario": "grow-by-900", "workload": "light",
              "convergence_ms": 4600 + i, FRESH_SET: i >= 4} for i in range(8)]
    line = metadata_mechanism("grow-by-900", ["classic:eager", "consumer:uniform"], st, runs)
    assert "classic:eager median 225 s over 8 runs, quartiles" in line
    assert "(first seeds' median 125 s, fresh seeds' 265 s)" in line
    assert "150 s expected" in line and "the distribution, not a median, is the result" in line
    assert "consumer:uniform median 4.6 s over 8 runs" in line
