"""Verdict tables and claims (``lab.verdict``): which differences count, marks, ties, row
order, the question's metrics, and the claims' numbers and commands."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.lab.findings import BY_COLUMN
from groupcoord.lab.mechanism import member_load
from groupcoord.lab.report import seeds_line, verdict_md
from groupcoord.lab.verdict import (
    CONSUMER_METRICS,
    KIP415_METRICS,
    MAX_CLAIMS,
    UNCANCELLED,
    Cell,
    GridVerdict,
    VerdictRow,
    _claim,
    beats,
    claim_candidates,
    claims,
    comparisons,
    grid_verdict,
    grid_verdicts,
    judge,
    mark_dependence,
    mark_spread_limits,
    modes,
    natural_key,
    question_metrics,
    ranked,
    separation_chance,
    sign_needed,
    sign_test,
    threshold,
    throughput,
)

STALL = BY_COLUMN["stall_ms"]  # floor 250 ms
LAG = BY_COLUMN["lag_peak"]  # floor 10 records


def _run(protocol: str, seed: int, scenario: str = "crash", size: int = 10,
         workload: str = "4x250", **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, **metrics}


def test_separated_ranges_beyond_the_floor_count_and_nothing_else() -> None:
    assert beats([0, 50, 100, 150, 200], [1000, 1100, 1200, 3000, 5000], STALL)
    # separated, but by less than the floor (a heartbeat's jitter)
    assert not beats([0, 50, 100, 150, 200], [300, 400, 1200, 3000, 5000], STALL)
    # overlapping ranges, even with a much lower median
    assert not beats([0, 0, 0, 0, 3000], [2000, 2500, 2600, 2700, 9000], STALL)
    # three seeds each never count (by chance one time in ten, either way round)
    assert not beats([0, 0, 0], [9000, 9000, 9000], STALL)
    # higher is better: the other way round
    processed = BY_COLUMN["records_processed"]
    assert beats([5000, 5100, 5200, 5250, 5300], [1000, 1050, 1100, 1150, 1200], processed)
    assert not beats([1000, 1050, 1100, 1150, 1200], [5000, 5100, 5200, 5250, 5300], processed)


def test_the_chance_of_a_separation_without_a_difference() -> None:
    assert separation_chance(3) == 1 / 20
    assert separation_chance(5) == 1 / 252
    assert math.isclose(separation_chance(21), 1 / math.comb(42, 21))


values = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=5,
                  max_size=8)


@given(values, values)
def test_beats_is_never_both_ways_and_never_against_itself(a: list[float], b: list[float]
                                                           ) -> None:
    assert not (beats(a, b, LAG) and beats(b, a, LAG))
    assert not beats(a, list(a), LAG)


@given(values, st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_a_shift_beyond_the_spread_and_floor_always_counts(a: list[float], gap: float) -> None:
    spread = max(a) - min(a)
    # beyond the absolute floor and the relative one (5 % of the larger value)
    d = spread + LAG.floor + 1 + gap + 0.1 * (max(a) + spread + LAG.floor + 1 + gap)
    shifted = [v + d for v in a]
    assert beats(a, shifted, LAG)


def test_marks_best_tied_and_tie() -> None:
    def cells(**by_p: list[float]) -> dict[str, Cell]:
        return {p.replace("_", ":"): Cell(dict(enumerate(v))) for p, v in by_p.items()}

    one = judge(cells(a_x=[0, 0, 0, 0, 0], b_x=[5000, 5500, 6000, 6500, 7000],
                      c_x=[9000, 9000, 9100, 9200, 9500]), STALL)
    assert (one.verdict, one.best, one.beaten) == ("best", ("a:x",), ("b:x", "c:x"))
    assert one.cells["a:x"].mark == "best" and one.cells["b:x"].mark == ""
    # b's range reaches into a's: they share the place
    two = judge(cells(a_x=[0, 500, 1500, 2000, 3000], b_x=[2000, 2500, 2550, 2580, 2600],
                      c_x=[9000, 9000, 9100, 9200, 9500]), STALL)
    assert two.verdict == "tied" and set(two.best) == {"a:x", "b:x"}
    assert two.cells["b:x"].mark == "tied" and two.cells["c:x"].mark == ""
    none = judge(cells(a_x=[0, 0, 100, 0, 0], b_x=[0, 200, 0, 0, 0]), STALL)
    assert none.verdict == "tie" and not any(c.mark for c in none.cells.values())
    few = judge(cells(a_x=[0, 0, 0], b_x=[9000, 9000, 9000]), STALL)
    assert few.verdict == "few seeds" and not any(c.mark for c in few.cells.values())


def test_tied_best_must_be_separated_from_the_rest() -> None:
    """The crash row of the review: cooperative beats eager in every seed, uniform sits
    between them separated from neither. Uniform is not tied best (it is not separated from
    the worse protocol), and no protocol is separated from all the others: no mark at all."""
    cells = {"classic:cooperative": Cell(dict(enumerate([20000, 20100, 20200, 20300, 20400]))),
             "consumer:uniform": Cell(dict(enumerate([20300, 21000, 22000, 22500, 22700]))),
             "classic:eager": Cell(dict(enumerate([22600, 22700, 22800, 22900, 23000])))}
    mv = judge(cells, STALL)
    assert mv.verdict == "overlap"
    assert mv.best == ("classic:cooperative",) and mv.beaten == ("classic:eager",)
    assert not any(c.mark for c in mv.cells.values())
    # the same row with uniform clear of eager: cooperative and uniform share the place
    cells["consumer:uniform"] = Cell(dict(enumerate([20300, 20500, 20600, 20700, 20800])))
    cells["classic:eager"] = Cell(dict(enumerate([24600, 24700, 24800, 24900, 25000])))
    mv = judge(cells, STALL)
    assert mv.verdict == "tied" and mv.cells["consumer:uniform"].mark == "tied"


def test_a_sentence_compares_the_winner_with_its_runner_up() -> None:
    """Scale-out of the review: eager 4 against 1,531 for uniform and 1,802 for cooperative:
    the sentence and its effect size name uniform (the runner-up), not the worst."""
    def cell(base: float) -> Cell:
        return Cell({s: base + s for s in range(10)})

    mv = judge({"classic:eager": cell(4), "consumer:uniform": cell(1531),
                "classic:cooperative": cell(1802)}, LAG)
    assert mv.verdict == "best" and mv.beaten == ("consumer:uniform", "classic:cooperative")
    g = GridVerdict("g", "q", list(mv.cells), [LAG],
                    [VerdictRow("scale-out", 100, "w", None, 10, [mv])], 30, 0, 0, 10)
    (claim,) = claims([g])
    assert claim.worse == "consumer:uniform" and "for consumer:uniform" in claim.text


def test_rows_follow_the_numbers_in_workload_names() -> None:
    names = ["4x8-p10ms", "4x8-p0.5ms", "4x8-p20ms", "4x8-p2ms", "4x8-p5ms"]
    assert sorted(names, key=natural_key) == ["4x8-p0.5ms", "4x8-p2ms", "4x8-p5ms",
                                              "4x8-p10ms", "4x8-p20ms"]
    rows = [{**_run(p, s, workload=f"4x8-p{ms:g}ms", lag_peak=10 * s),
             "work": json.dumps({"processing_ms": ms})}
            for ms in (10, 0.5, 20, 2, 5) for p in ("classic:eager", "consumer:uniform")
            for s in range(5)]
    g = grid_verdict({"name": "crossover", "metrics": ["lag_peak"]}, rows)
    assert g.parameter == "processing_ms"
    assert [r.x for r in g.rows] == [0.5, 2, 5, 10, 20]


def test_each_question_has_its_metrics_and_runs_that_never_caught_up_are_left_out() -> None:
    connect = {"name": "kip415", "protocols": ["connect:eager", "connect:cooperative"]}
    assert [m.column for m in question_metrics(connect)] == list(KIP415_METRICS)
    consumers = {"name": "c", "protocols": ["classic:eager", "consumer:uniform"]}
    assert [m.column for m in question_metrics(consumers)] == list(CONSUMER_METRICS)
    assert [m.column for m in question_metrics({**consumers, "metrics": ["lag_peak"]})] == [
        "lag_peak"]
    rows = [_run(p, s, task_restarts=r, stall_ms=0)
            for p, r in (("connect:eager", 40), ("connect:cooperative", 4)) for s in range(5)]
    rows.append({**_run("connect:eager", 9, task_restarts=1, stall_ms=0), "caught_up": False})
    rows.append({**_run("connect:eager", 8, task_restarts=1, stall_ms=0), "ok": False})
    g = grid_verdict(connect, rows)
    # the runs carry two of KIP-415's four metrics: only those are shown
    assert [m.column for m in g.metrics] == ["task_restarts", "stall_ms"]
    assert (g.runs, g.violated, g.not_caught_up) == (12, 1, 1)
    restarts, stall = g.rows[0].metrics
    assert restarts.verdict == "best" and restarts.best == ("connect:cooperative",)
    assert len(restarts.cells["connect:eager"].values) == 5  # the two left-out runs are out
    assert stall.verdict == "tie"


def test_no_disturbance_no_claim() -> None:
    """A scenario whose events move nothing: zero excess everywhere, every row a tie, no
    sentence."""
    rows = [_run(p, s, scenario="no-op", size=n, stall_ms=0, lag_peak=0, lag_record_s=0.0,
                 convergence_ms=0, resources_moved=0, records_reprocessed=0)
            for p in ("classic:eager", "classic:cooperative", "consumer:uniform")
            for s in range(5) for n in (10, 30)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [{"name": "c", "seeds": 5}]}, rows)
    assert {mv.verdict for r in g.rows for mv in r.metrics} == {"tie"}
    assert claims([g]) == []


def test_claims_carry_their_numbers_and_the_command_of_their_cell() -> None:
    rows = []
    for size, eager in ((10, 8000), (30, 12000)):
        for s in range(5):
            rows.append(_run("classic:eager", s, size=size, stall_ms=eager + 100 * s,
                             lag_peak=500))
            rows.append(_run("consumer:uniform", s, size=size, stall_ms=10 * s, lag_peak=505))
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "consumers", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["stall_ms", "resources_moved"], "seeds": 5}]}, rows)
    (c,) = claims([g])  # (a grid that asks lag answers with it, not with stall)
    assert c.metric == "stall_ms" and c.size == 30  # the largest size
    assert c.best == "consumer:uniform" and c.worse == "classic:eager"
    # (0.02 s is under the stall's 0.25 s floor: no measurable stall, not a race of numbers)
    assert c.text == ("crash, 30 members: consumer:uniform has no measurable stall (under its "
            "0.25 s floor: 0.02 s (range 0\u20130.04 s)) against 12.2 s (12\u201312.4 s) for "
            "classic:eager (the runner-up), medians of 5 seeds.")
    assert c.command == ("groupcoord lab run --spec paper --scenario crash --size 30 "
                         "--workload 4x250 --protocol consumer:uniform --protocol "
                         "classic:eager --out DIR")


def test_at_most_a_dozen_claims_shared_between_grids() -> None:
    rows = []
    grids = []
    for k in range(6):
        scen = f"s{k}"
        grids.append({"name": f"g{k}", "scenarios": [scen], "seeds": 5,
                      "protocols": ["classic:eager", "consumer:uniform"]})
        for s in range(5):
            for p, v in (("classic:eager", 50_000), ("consumer:uniform", 0)):
                rows.append(_run(p, s, scenario=scen, stall_ms=v, lag_peak=v,
                                 lag_record_s=float(v), convergence_ms=v, resources_moved=v,
                                 records_reprocessed=v))
    verdicts = grid_verdicts({"spec": "x", "grids": grids}, rows)
    found = claims(verdicts)
    assert len(found) == MAX_CLAIMS
    assert {c.grid for c in found} == {f"g{k}" for k in range(6)}  # every grid has its turn
    assert [c.grid for c in found] == sorted(c.grid for c in found)  # in the grids' order


def test_kip415s_delay_is_named_where_it_explains_the_wait() -> None:
    """Incremental cooperative Connect balances a departed worker's tasks only after
    scheduled.rebalance.max.delay.ms, by design: a win over that configured wait is no
    sentence (not a headline of a protocol's merit); the sentence writer still says so."""
    settings = json.dumps({"scheduled.rebalance.max.delay.ms": 300_000})
    rows = [{**_run(p, s, scenario="kip415-worker-leaves", time_to_balance_ms=v + s),
             "settings_json": settings}
            for p, v in (("connect:eager", 12_000), ("connect:cooperative", 305_000))
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415", "protocols": ["connect:eager", "connect:cooperative"],
         "metrics": ["time_to_balance_ms"], "seeds": 5}]}, rows)
    assert claims([g]) == []
    (row,) = g.rows
    c = _claim(g, row, row.metrics[0])
    assert c.best == "connect:eager" and c.worse == "connect:cooperative"
    assert c.text.endswith("By design: KIP-415 holds a departed worker's tasks for "
                           "scheduled.rebalance.max.delay.ms (300,000 ms here) in case it "
                           "comes back.")
    # a wait shorter than the delay is not explained by it
    short = [{**r, "time_to_balance_ms": r["time_to_balance_ms"] - 250_000}
             if r["protocol"] == "connect:cooperative" else r for r in rows]
    (g2,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415", "protocols": ["connect:eager", "connect:cooperative"],
         "metrics": ["time_to_balance_ms"], "seeds": 5}]}, short)
    (row2,) = g2.rows
    assert "By design" not in _claim(g2, row2, row2.metrics[0]).text
    # nor is it a sentence: a Connect grid's time until balanced contains the task-time input
    assert claims([g2]) == []


cells_values = st.lists(st.integers(min_value=0, max_value=20_000), min_size=5, max_size=5)


@given(st.lists(st.tuples(cells_values, cells_values, cells_values), min_size=1, max_size=4))
def test_no_mark_or_claim_rests_on_a_difference_within_the_seeds_spread(
        rows_values: list[tuple[list[int], list[int], list[int]]]) -> None:
    """Whatever the values (5 seeds: no sign test), every mark and every claim compares
    ranges separated by more than the metric's floor, and no claim names a protocol that is
    not marked."""
    protocols = ("classic:eager", "classic:cooperative", "consumer:uniform")
    rows = [_run(p, s, size=10 + i, stall_ms=vals[k][s])
            for i, vals in enumerate(rows_values) for k, p in enumerate(protocols)
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "x", "grids": [
        {"name": "g", "protocols": list(protocols), "metrics": ["stall_ms"], "seeds": 5}]}, rows)
    for row in g.rows:
        (mv,) = row.metrics
        if mv.verdict == "best":
            (b,) = mv.best
            for p in protocols:
                if p != b:
                    assert mv.cells[p].low - mv.cells[b].high > STALL.floor
        for p in mv.beaten:
            assert all(mv.cells[p].low - mv.cells[b].high > STALL.floor for b in mv.best[:1])
    for c in claims([g]):
        if not c.best:  # the grid's answer where nothing separates (verdict.no_difference)
            assert "no difference" in c.text
            assert all(r.metrics[0].verdict not in ("best", "tied") for r in g.rows)
            continue
        row = next(r for r in g.rows if r.size == c.size)
        (mv,) = row.metrics
        assert c.best in mv.best and c.worse in mv.beaten
        assert mv.cells[c.worse].low - mv.cells[c.best].high > STALL.floor


def test_a_swept_parameter_gives_one_sentence_where_the_winner_changes() -> None:
    """Processing time swept across workloads: consumer:uniform's stall is lowest at 0.5 and
    2 ms, classic:eager's at 20 ms, none separates at 5 ms: one sentence, values in order."""
    stalls = {0.5: (9000, 0), 2: (9000, 100), 5: (3000, 3100), 20: (0, 9000)}
    rows = [{**_run(p, s, scenario="rolling-bounce", size=8, workload=f"4x8-p{ms:g}ms",
                    stall_ms=v[k] + 10 * s),
             "work": json.dumps({"processing_ms": ms})}
            for ms, v in stalls.items()
            for k, p in enumerate(("classic:eager", "consumer:uniform")) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["stall_ms"], "seeds": 5}]}, rows)
    (c,) = claims([g])
    assert c.text == ("rolling-bounce, 8 members (crossover), stall against the processing time per "
                      "record, the lowest, separated from the rest: consumer:uniform at 0.5, "
                      "2 ms; no protocol separated from all the rest at 5 ms (the lowest "
                      "median: classic:eager at 5 ms); "
                      "classic:eager at 20 ms (the mark not tested "
                      "with a member late at the rebalance).")
    assert c.command == ("groupcoord lab run --spec paper --scenario rolling-bounce --size 8 "
                         "--protocol classic:eager --protocol consumer:uniform --out DIR")


def test_with_many_seeds_a_paired_sign_test_marks_what_one_touching_seed_would_hide() -> None:
    """The anchor: 21 seeds, the consumer protocol converges in about 5 s, classic waits for
    a metadata refresh drawn anywhere in 300 s; in one seed the refresh fell right after the
    growth (3 s). The ranges touch, the sign test (20 of 21 by more than the floor) marks."""
    conv = BY_COLUMN["convergence_ms"]
    fast = {s: 4000.0 + 50 * s for s in range(21)}
    slow = {s: 20_000.0 + 13_000 * s for s in range(21)}
    slow[0] = 3000.0
    assert not beats(list(fast.values()), list(slow.values()), conv)
    assert sign_test(fast, slow, conv) == 22 / 2 ** 21  # 20 or 21 of 21
    verdict = judge({"consumer:uniform": Cell(fast), "classic:eager": Cell(slow)}, conv)
    assert verdict.verdict == "best" and verdict.best == ("consumer:uniform",)
    # the same with 5 seeds: too few for the test; the ranges touch, no mark
    few = judge({"consumer:uniform": Cell({s: fast[s] for s in range(5)}),
                 "classic:eager": Cell({s: slow[s] for s in range(5)})}, conv)
    assert few.verdict == "tie"
    assert sign_test({s: fast[s] for s in range(5)}, {s: slow[s] for s in range(5)}, conv) == 1.0
    assert (sign_needed(21), sign_needed(10), sign_needed(5)) == (17, 10, None)
    # seeds in favour by less than the floor do not count
    near = {s: v + 100 for s, v in fast.items()}
    assert sign_test(fast, near, conv) == 1.0


# ----------------------------------------------------------------- the review's round 1


def test_distinct_outcomes_are_shown_as_such_and_never_tied() -> None:
    """Sessioned Connect balances in 2 s when the leaving worker led and in 302 s otherwise;
    eager in about 3 s. Its seeds are two outcomes: the row is split, neither best nor tied,
    and no sentence is written about it."""
    tb = BY_COLUMN["time_to_balance_ms"]
    sessioned = {0: 302_000.0, 1: 2_600.0, 2: 1_900.0, 3: 303_000.0, 4: 302_000.0}
    eager = {s: 2_900.0 + 100 * s for s in range(5)}
    assert modes(list(sessioned.values()), tb) == [[1_900.0, 2_600.0],
                                                   [302_000.0, 302_000.0, 303_000.0]]
    assert len(modes(list(eager.values()), tb)) == 1
    mv = judge({"classic-connect:eager": Cell(eager),
                "classic-connect:sessioned": Cell(sessioned)}, tb)
    assert mv.verdict == "split" and not any(c.mark for c in mv.cells.values())
    assert mv.cells["classic-connect:sessioned"].split
    rows = [_run(p, s, scenario="kip415-leader-leaves", size=3, workload="16x8c",
                 time_to_balance_ms=v[s])
            for p, v in (("classic-connect:eager", eager),
                         ("classic-connect:sessioned", sessioned)) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [{"name": "kip415", "seeds": 5}]}, rows)
    assert claims([g]) == []
    # a split protocol that every seed of the best still beats: the best stands
    far = judge({"a:x": Cell({s: 100.0 for s in range(5)}),
                 "b:x": Cell({0: 2e6, 1: 2e6, 2: 9e6, 3: 9e6, 4: 9e6})}, tb)
    assert far.verdict == "best" and far.best == ("a:x",)


@given(st.lists(st.floats(min_value=0, max_value=1_000), min_size=1, max_size=6),
       st.lists(st.floats(min_value=0, max_value=1_000), min_size=1, max_size=6),
       st.floats(min_value=20_000, max_value=1e6))
def test_two_clusters_far_apart_are_two_outcomes_one_cluster_is_one(
        low: list[float], high: list[float], offset: float) -> None:
    lag = BY_COLUMN["lag_record_s"]
    two = modes([*low, *(offset + v for v in high)], lag)
    if len(low) + len(high) >= 3:
        assert [len(o) for o in two] == [len(low), len(high)]
    # values within a factor of 2 of each other are never split
    assert len(modes([offset + v for v in [*low, *high]], lag)) == 1


def test_a_continuous_draw_is_one_distribution_not_two_outcomes() -> None:
    """Classic eager's time to converge after partitions were added, 100 members, five seeds:
    where the 0-300 s metadata refresh fell. Its widest gap is three times the spread beside
    it: one distribution (median and range), not 'a (2 of 5) | b (3 of 5)'."""
    conv = BY_COLUMN["convergence_ms"]
    draws = [28_900.0, 70_600.0, 198_000.0, 216_000.0, 220_000.0]
    assert modes(draws, conv) == [draws]
    assert not Cell(dict(enumerate(draws))).split


def test_a_difference_small_against_the_values_is_no_difference() -> None:
    """138 against 141 s to converge, 88 against 90 partitions moved: within 5 % of the
    value, no best however tight the seeds."""
    conv, moved = BY_COLUMN["convergence_ms"], BY_COLUMN["resources_moved"]
    assert not beats([138_000.0] * 5, [141_000.0] * 5, conv)
    assert beats([138_000.0] * 5, [150_000.0] * 5, conv)
    assert not beats([88.0] * 5, [90.0] * 5, moved)
    assert threshold(moved, 88, 90) == 4.5 and threshold(moved, 2, 5) == moved.floor
    mv = judge({"a:x": Cell({s: 138_000.0 for s in range(5)}),
                "b:x": Cell({s: 141_000.0 for s in range(5)})}, conv)
    assert mv.verdict == "tie"


@given(st.integers(min_value=0, max_value=5_000), st.integers(min_value=0, max_value=5_000),
       st.integers(min_value=60_000, max_value=90_000))
def test_a_sentence_naming_two_protocols_quotes_each_ones_numbers(
        uni: int, rng: int, eager: int) -> None:
    """Two protocols share the best place with different numbers: the sentence gives each
    one's median (and range) beside its name, the worse one's after 'for'."""
    rows = []
    for s in range(5):
        rows.append(_run("consumer:uniform", s, size=100, lag_peak=uni + s))
        rows.append(_run("consumer:range", s, size=100, lag_peak=rng + 2 * s))
        rows.append(_run("classic:eager", s, size=100, lag_peak=eager + 3 * s))
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "c", "metrics": ["lag_peak"], "seeds": 5,
         "protocols": ["classic:eager", "consumer:uniform", "consumer:range"]}]}, rows)
    (c,) = claims([g])
    (mv,) = g.rows[0].metrics
    lag = BY_COLUMN["lag_peak"]
    w = mv.cells[c.worse]
    assert f"against {lag.fmt(w.median)}" in c.text and f"for {c.worse} (the runner-up)," in c.text
    # a winner under the metric's floor has "no measurable" lag peak, its median beside it
    unmeasured = all(mv.cells[p].median < mv.metric.floor for p in mv.best)
    if len(mv.best) == 1 and unmeasured:
        assert f"{c.best} has no measurable lag peak (under its {lag.fmt(mv.metric.floor)} " \
            f"floor: {lag.fmt(mv.cells[c.best].median)}" in c.text, c.text
    elif len(mv.best) == 1:
        assert f"{c.best} has the lowest lag peak, {lag.fmt(mv.cells[c.best].median)}" in c.text
    else:
        assert ("have no measurable lag peak" if unmeasured else "share the lowest lag peak") \
            in c.text, c.text
        for p in mv.best:
            assert f"{p} {lag.fmt(mv.cells[p].median)}" in c.text, c.text


def test_the_connect_group_type_is_shown_apart_and_never_ranked() -> None:
    """connect:* (this project's group type) has the lowest restarts, yet the marks and the
    sentence compare the protocols Apache Kafka ships."""
    rows = []
    for s in range(5):
        for p, v in (("connect:cooperative", 0), ("classic-connect:sessioned", 10),
                     ("classic-connect:eager", 128)):
            rows.append(_run(p, s, scenario="kip415-worker-joins", size=12, workload="16x8c",
                             task_restarts=v))
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415", "metrics": ["task_restarts"], "seeds": 5}]}, rows)
    (mv,) = g.rows[0].metrics
    assert mv.best == ("classic-connect:sessioned",) and mv.beaten == ("classic-connect:eager",)
    assert mv.cells["connect:cooperative"].mark == ""
    (c,) = claims([g])
    assert "connect:cooperative" not in c.text and c.worse == "classic-connect:eager"
    assert ranked(["connect:eager", "connect:cooperative"]) == ["connect:eager",
                                                              "connect:cooperative"]


def test_claims_rest_only_on_cells_of_five_seeds_or_more() -> None:
    def grid(seeds: int) -> Any:
        rows = [_run(p, s, stall_ms=v + 10 * s) for s in range(seeds)
                for p, v in (("classic:eager", 9000), ("consumer:uniform", 0))]
        (g,) = grid_verdicts({"spec": "x", "grids": [
            {"name": "g", "metrics": ["stall_ms"], "seeds": seeds,
             "protocols": ["classic:eager", "consumer:uniform"]}]}, rows)
        return g

    three, five = grid(3), grid(5)
    assert three.rows[0].metrics[0].verdict == "few seeds"  # not marked in the table ...
    assert claims([three]) == []  # ... nor in a sentence at 3 seeds
    (c,) = claims([five])
    assert c.best == "consumer:uniform"
    cmp = comparisons([three, five])
    # the 3-seed row tests no pair: it is no row-metric of the count (round 8)
    assert (cmp.rows, cmp.pairs, cmp.claim_pairs) == (1, 1, 1)
    assert math.isclose(cmp.expected, 2 / 252)
    assert math.isclose(cmp.claim_expected, 2 / 252)


def test_a_swept_grid_answers_with_its_own_metric_at_every_value() -> None:
    """The crossover asks about lag record·s: the sentence is about it even when the same
    protocol wins wherever one separates, and no sentence quotes another metric."""
    # per processing time: (eager, uniform) lag record·s, then (eager, uniform) lag peak
    values = {0.5: ((100, 9000), (10, 900)), 20: ((5000, 5100), (900, 10))}
    rows = [{**_run(p, s, scenario="rolling-bounce", size=8, workload=f"4x8-p{ms:g}ms",
                    lag_record_s=float(lr[k] + 10 * s), lag_peak=float(pk[k] + s)),
             "work": json.dumps({"processing_ms": ms})}
            for ms, (lr, pk) in values.items()
            for k, p in enumerate(("classic:eager", "consumer:uniform")) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["lag_record_s", "lag_peak"], "seeds": 5}]}, rows)
    found = claims([g])
    assert [c.metric for c in found] == ["lag_record_s", "lag_peak"]
    assert found[0].text.endswith(
        "classic:eager at 0.5 ms (the mark not tested with a member late at the rebalance); "
        "no protocol separated from all the rest at 20 ms (the lowest median: classic:eager "
        "at 20 ms).")  # an unmarked value still says who leads there (round 8)


def test_a_run_whose_event_changed_nothing_is_left_out_and_counted() -> None:
    rows = [_run(p, s, scenario="kip415-connector-removed", size=3, workload="16x8c",
                 task_restarts=0, noop_events=1)
            for p in ("classic-connect:eager", "classic-connect:sessioned") for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [{"name": "kip415", "seeds": 5}]}, rows)
    assert g.rows == [] and g.noop == 10 and claims([g]) == []


def test_every_grid_winner_gets_its_strongest_win_before_the_rest_by_effect_size() -> None:
    """The stated rule: eager's modest win (a 5-seed ★ on lag, 2x) is on the page although
    KIP-848's larger wins (many scenarios, 100x and more) would fill a page ranked by effect
    size alone; of one scenario and metric only the size with the largest effect counts."""
    rows = []
    scenarios = [f"s{k}" for k in range(14)]
    for k, scen in enumerate(scenarios):
        for size in (10, 30):
            for s in range(5):
                rows.append(_run("classic:eager", s, scenario=scen, size=size,
                                 stall_ms=60_000 + 1000 * k + size))
                rows.append(_run("consumer:uniform", s, scenario=scen, size=size,
                                 stall_ms=100 + size))
    for s in range(5):  # eager's one win: half the stall
        rows.append(_run("classic:eager", s, scenario="eager-wins", stall_ms=2_000))
        rows.append(_run("consumer:uniform", s, scenario="eager-wins", stall_ms=4_000))
    (g,) = grid_verdicts({"spec": "x", "grids": [
        {"name": "g", "metrics": ["stall_ms"], "seeds": 5,
         "protocols": ["classic:eager", "consumer:uniform"]}]}, rows)
    assert claim_candidates([g]) == 15  # one per scenario, not per size
    found = claims([g])
    assert len(found) == MAX_CLAIMS
    assert any(c.best == "classic:eager" and c.scenario == "eager-wins" for c in found)
    kip848 = [c for c in found if c.best == "consumer:uniform"]
    # the rest by effect size: the largest stalls against KIP-848's (s13 first, ...)
    assert [c.scenario for c in kip848] == [f"s{k}" for k in range(13, 2, -1)]
    assert all(c.size == 10 for c in kip848)  # 60,010+ against 110: the larger ratio


def test_a_scenario_not_yet_named_comes_before_a_scenarios_second_sentence() -> None:
    """Scenario a: KIP-848 wins three metrics by 100x; scenario b: one metric by 3x. With room
    for two sentences the page names a's strongest, then b's, not a second one of a."""
    rows = []
    for s in range(5):
        rows.append(_run("classic:eager", s, scenario="a", stall_ms=90_000, lag_peak=90_000,
                         lag_record_s=900_000.0))
        rows.append(_run("consumer:uniform", s, scenario="a", stall_ms=900, lag_peak=900,
                         lag_record_s=9_000.0))
        rows.append(_run("classic:eager", s, scenario="b", stall_ms=0, lag_peak=0,
                         lag_record_s=9_000.0))
        rows.append(_run("consumer:uniform", s, scenario="b", stall_ms=0, lag_peak=0,
                         lag_record_s=3_000.0))
    (g,) = grid_verdicts({"spec": "x", "grids": [
        {"name": "g", "metrics": ["stall_ms", "lag_peak", "lag_record_s"], "seeds": 5,
         "protocols": ["classic:eager", "consumer:uniform"]}]}, rows)
    assert claim_candidates([g]) == 3  # a consumer grid's stall is no sentence (round 8)
    assert [c.scenario for c in claims([g], limit=2)] == ["a", "b"]
    assert [c.scenario for c in claims([g], limit=4)].count("a") == 2


def test_a_crossover_names_protocols_tied_for_the_lowest_together() -> None:
    """At 20 ms cooperative and KIP-848 tie for the lowest and both beat eager: the sentence
    names them together there, not "no protocol"."""
    rows = []
    for x, vals in ((0.5, {"classic:eager": 600, "classic:cooperative": 2_000,
                           "consumer:uniform": 3_000}),
                    (20, {"classic:eager": 17_000, "classic:cooperative": 10_500,
                          "consumer:uniform": 10_700})):
        for p, v in vals.items():
            for s in range(5):
                rows.append(_run(p, s, scenario="rolling-bounce", size=8,
                                 workload=f"p{x}", processing_ms=x,
                                 lag_record_s=float(v + 10 * s)))
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover", "metrics": ["lag_record_s"], "seeds": 5,
         "protocols": ["classic:eager", "classic:cooperative", "consumer:uniform"]}]}, rows)
    (c,) = claims([g])
    # an eager mark on lag with no busy-member grid behind it says so
    assert c.text.endswith("classic:eager at 0.5 ms (the mark not tested with a member late at "
                           "the rebalance); classic:cooperative and consumer:uniform "
                           "at 20 ms."), c.text


def test_a_crossover_prints_each_limit_clause_once_and_says_where_it_holds() -> None:
    """Round 8: eager's mark at 20, 30 and 40 % busy all carried the busy grid's lateness
    clause and 40 % also the spread grid's: the sentence printed the lateness clause twice.
    Now each clause once, the one only 40 % carries with its value."""
    rows = [{**_run(p, s, scenario="scale-out", size=8, workload=f"w{r}",
                    lag_record_s=float((1 if p == "classic:eager" else 900) + 10 * s),
                    total_partitions=32, members=8),
             "work": json.dumps({"processing_ms": 20, "records_per_s": r * 1.25})}
            for r in (2, 3, 4) for p in ("classic:eager", "consumer:uniform") for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover-20ms", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["lag_record_s"], "seeds": 5, "workloads": ["w2", "w3", "w4"]}]}, rows)
    late = "holds only while no member is 2 s late at the rebalance (busy-crossover: 8 members)"
    spread = "holds only with aligned heartbeats (hb-spread: at 1 s: a; at 3 s: b)"
    wire = "real classic members, measured on the wire (median 0.022 s; 24 rebalances)"
    for row in g.rows:
        row.metrics[0].limit = late if (row.x or 0) < 40 else f"{late}; {spread}; {wire}"
    (c,) = claims([g])
    assert c.full.count(late) == 1, c.full
    # the sentence says each limit's gist; the note under it holds every clause once
    assert c.text.endswith(
        "classic:eager, the same winner from 20 to 40 % busy: no crossover in the sweep (the "
        "mark holds only while no member is 2 s late "
        "at the rebalance; at 40 % busy: the mark holds only with aligned heartbeats; note "
        "below).")
    assert c.caveats == (f"classic:eager at 20, 30, 40 % busy: the mark {late}; at 40 % busy: "
                         f"the mark {spread}; at 40 % busy: {wire}",)


def test_grids_asking_the_same_crossover_at_another_setting_share_one_sentence() -> None:
    """crossover-10ms and crossover-20ms sweep the load at two poll lengths: one sentence per
    scenario names each grid's finding, so that two grids do not take two of the dozen."""
    stalls = {1: (9000, 0), 2: (0, 9000)}
    grids, rows = [], []
    for ms in (10, 20):
        name = f"crossover-{ms}ms"
        grids.append({"name": name, "protocols": ["classic:eager", "consumer:uniform"],
                      "metrics": ["stall_ms"], "seeds": 5, "workloads": [
                          f"w{ms}-{r}" for r in stalls]})
        rows += [{**_run(p, s, scenario="crash", size=8, workload=f"w{ms}-{r}",
                         stall_ms=v[k] + 10 * s, total_partitions=32, members=8),
                  "work": json.dumps({"processing_ms": ms, "records_per_s": r * 5})}
                 for r, v in stalls.items()
                 for k, p in enumerate(("classic:eager", "consumer:uniform"))
                 for s in range(5)]
    gs = grid_verdicts({"spec": "paper", "grids": grids}, rows)
    assert [g.parameter for g in gs] == ["busy_pct", "busy_pct"]
    (c,) = claims(gs)
    assert c.text == (
        "crash, 8 members, stall against the members' load, the lowest, separated from the "
        "rest: [crossover-10ms] consumer:uniform at "
        "20 % busy; classic:eager at 40 % busy (the mark not tested with a member late at the "
        "rebalance); [crossover-20ms] consumer:uniform at 40 % busy; classic:eager at 80 % busy "
        "(the mark not tested with a member late at the rebalance).")


def _row(scenario: str, workload: str, best_low: str, x: float | None = None) -> VerdictRow:
    """A row where ``best_low`` (or nobody, when empty) is the clear best of two protocols."""
    lo, hi = [100, 110, 120, 130, 140], [9000, 9100, 9200, 9300, 9400]
    vals = {"a:x": lo if best_low == "a:x" else hi, "b:x": lo if best_low == "b:x" else hi}
    if not best_low:
        vals = {"a:x": lo, "b:x": [v + 5 for v in lo]}
    mv = judge({p: Cell(dict(enumerate(v))) for p, v in vals.items()}, STALL)
    return VerdictRow(scenario, 10, workload, 0.0, 5, [mv], x=x)


def test_a_star_that_flips_across_a_deciding_input_depends_on_it() -> None:
    # a bounce-downtime sweep by scenario variant: the plain scenario is the 3 s default
    rows = [_row("rolling-bounce", "w", "a:x"), _row("rolling-bounce-down20s", "w", "b:x"),
            _row("scale-out", "w", "a:x")]
    mark_dependence(rows)
    assert rows[0].metrics[0].depends == "the bounce downtime"
    assert rows[1].metrics[0].depends == "the bounce downtime"
    assert rows[2].metrics[0].depends == ""  # swept nothing
    # a ★ at one value and none at another flips too
    rows = [_row("worker-leaves-d0", "w", "a:x"), _row("worker-leaves-d30s", "w", "")]
    mark_dependence(rows)
    assert rows[0].metrics[0].depends == "scheduled.rebalance.max.delay.ms"
    # a workload parameter swept within a grid
    rows = [_row("grow", "md300", "b:x", x=300000.0), _row("grow", "md30", "b:x", x=30000.0)]
    mark_dependence(rows, "metadata.max.age.ms")
    assert not any(r.metrics[0].depends for r in rows)  # the same ★ at both: it holds
    rows = [_row("grow", "md300", "b:x", x=300000.0), _row("grow", "md30", "a:x", x=30000.0)]
    mark_dependence(rows, "metadata.max.age.ms")
    assert all(r.metrics[0].depends == "metadata.max.age.ms" for r in rows)


def test_lag_is_also_quoted_in_the_groups_throughput() -> None:
    """1,802 record·s at a group's 1,600 records/s is its rate times about 1.1 s; a lag peak
    of 3,200 records is 2 s of its production; other metrics and unknown rates: nothing."""
    lag_s = BY_COLUMN["lag_record_s"]
    assert throughput(lag_s, 1600.0, 1802.0) == (
        " (record·s = the group's 1,600 records/s x 1.13 s)")
    assert throughput(LAG, 1600.0, 3200.0, 160.0) == (
        " (at the group's 1,600 records/s: 2 s against 0.1 s of its production)")
    assert throughput(STALL, 1600.0, 5.0) == "" and throughput(LAG, None, 5.0) == ""


def test_a_seed_left_out_for_one_protocol_is_dropped_from_every_protocol_of_its_row() -> None:
    """A row compares its protocols on the same seeds: a run that never caught up (or broke
    an invariant) takes its seed out of every protocol of the row, and the row counts it."""
    grid = {"name": "late", "protocols": ["classic:eager", "classic:cooperative"],
            "metrics": ["stall_ms"]}
    # eager's seed 1 is its easiest draw; cooperative never caught up on it
    eager = {0: 4000.0, 1: 100.0, 2: 4200.0, 3: 4400.0, 4: 4600.0, 5: 4800.0, 6: 5000.0}
    rows = [_run("classic:eager", s, stall_ms=v) for s, v in eager.items()]
    rows += [_run("classic:cooperative", s, stall_ms=0.0) for s in eager if s != 1]
    rows.append({**_run("classic:cooperative", 1, stall_ms=0.0), "caught_up": False})
    # another row with nothing left out keeps every seed
    rows += [_run(p, s, scenario="bounce", stall_ms=0.0)
             for p in ("classic:eager", "classic:cooperative") for s in range(6)]
    g = grid_verdict(grid, rows)
    by_scenario = {r.scenario: r for r in g.rows}
    crash, bounce = by_scenario["crash"], by_scenario["bounce"]
    cells = crash.metrics[0].cells
    assert set(cells["classic:eager"].values) == set(cells["classic:cooperative"].values) == {
        0, 2, 3, 4, 5, 6}
    assert cells["classic:eager"].median == 4500.0  # not 4400 with the dropped seed's 100
    assert crash.dropped == 1 and bounce.dropped == 0
    assert len(bounce.metrics[0].cells["classic:eager"].values) == 6
    assert g.not_caught_up == 1

    text = verdict_md(g)
    assert "1 seed dropped from every protocol" in text
    assert text.count("dropped from every protocol") == 1


def test_a_seed_only_an_unranked_protocol_lost_keeps_the_ranked_verdict() -> None:
    """The connect group type (not ranked) never catching up on every seed of a row does not
    drop the row: the ranked protocols keep their seeds and their mark, the unranked columns
    lose the seeds they lost, and the row says which protocol's runs were left out and why.
    A seed a ranked protocol lost is still dropped from every protocol of the row."""
    ranked_ps = ["classic-connect:eager", "classic-connect:sessioned"]
    unranked_ps = ["connect:eager", "connect:cooperative"]
    grid = {"name": "task-times", "protocols": [*unranked_ps, *ranked_ps],
            "metrics": ["stall_ms"]}
    seeds = range(6)
    rows = [_run("classic-connect:eager", s, scenario="kip415-worker-joins",
                 stall_ms=3000.0 + 10 * s) for s in seeds]
    rows += [_run("classic-connect:sessioned", s, scenario="kip415-worker-joins",
                  stall_ms=0.0) for s in seeds]
    rows += [{**_run("connect:cooperative", s, scenario="kip415-worker-joins", stall_ms=0.0),
              "caught_up": False} for s in seeds]
    # connect:eager lost seed 2 only: its other seeds stay, cooperative's lost seeds do not
    # take them away from it
    rows += [_run("connect:eager", s, scenario="kip415-worker-joins", stall_ms=4000.0)
             for s in seeds if s != 2]
    rows.append({**_run("connect:eager", 2, scenario="kip415-worker-joins", stall_ms=4000.0),
                 "caught_up": False})
    # a second row where a ranked protocol lost seed 0: dropped from every protocol
    rows += [_run(p, s, scenario="worker-leaves", stall_ms=0.0 if "sessioned" in p else 3000.0)
             for p in ranked_ps for s in seeds if (p, s) != ("classic-connect:eager", 0)]
    rows.append({**_run("classic-connect:eager", 0, scenario="worker-leaves", stall_ms=1.0),
                 "caught_up": False})
    rows += [_run(p, s, scenario="worker-leaves", stall_ms=5.0) for p in unranked_ps
             for s in seeds]
    g = grid_verdict(grid, rows)
    by_scenario = {r.scenario: r for r in g.rows}
    joins, leaves = by_scenario["kip415-worker-joins"], by_scenario["worker-leaves"]
    mv = joins.metrics[0]
    assert mv.verdict == "best" and tuple(mv.best) == ("classic-connect:sessioned",)
    assert set(mv.cells["classic-connect:eager"].values) == set(seeds)
    assert set(mv.cells["connect:eager"].values) == set(seeds) - {2}
    assert "connect:cooperative" not in mv.cells
    assert joins.dropped == 0
    assert joins.left_out == {"connect:cooperative": {"never caught up before the event": 6},
                              "connect:eager": {"never caught up before the event": 1}}
    # the paired rule for ranked protocols holds
    assert leaves.dropped == 1
    for p in (*ranked_ps, *unranked_ps):
        assert 0 not in leaves.metrics[0].cells[p].values
    text = verdict_md(g)
    assert ("left out of their own columns only (not ranked): connect:eager: 1 run never "
            "caught up before the event; connect:cooperative: 6 runs never caught up before "
            "the event") in text
    assert ("1 seed dropped from every protocol (classic-connect:eager: 1 run never caught "
            "up before the event)") in text


def _verdicts_of(grids: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[GridVerdict]:
    return grid_verdicts({"name": "paper", "grids": grids}, rows)


def test_a_cell_two_grids_share_gets_one_verdict_on_all_its_runs() -> None:
    """The same runs in a 10 + 10 seed grid and a 5 + 5 seed grid: the small grid's first five
    seeds separate by chance, all twenty do not; both grids read the same on all of them."""
    big = {"name": "rolling", "protocols": ["classic:eager", "classic:cooperative"],
           "scenarios": ["rolling-bounce"], "metrics": ["stall_ms"], "seeds": 10,
           "confirm_seeds": 10}
    small = {**big, "name": "busy-rolling", "seeds": 5, "confirm_seeds": 5}
    rows = []
    for rep in range(20):
        eager = 1000.0 if rep < 5 else 5000.0 + 100 * rep  # its first five seeds are easy
        rows.append({**_run("classic:eager", 100 + rep, scenario="rolling-bounce",
                            stall_ms=eager), "replicate": rep, "settings_json": "{}"})
        rows.append({**_run("classic:cooperative", 100 + rep, scenario="rolling-bounce",
                            stall_ms=3000.0 + 10 * rep), "replicate": rep,
                     "settings_json": "{}"})
    # alone, the small grid marks eager on its first five seeds (and its fresh 15 overlap)
    alone = grid_verdict(small, rows).rows[0].metrics[0]
    assert alone.best == ("classic:eager",)
    g_big, g_small = _verdicts_of([big, small], rows)
    a, b = g_big.rows[0], g_small.rows[0]
    assert [c.values for c in a.metrics[0].cells.values()] == [
        c.values for c in b.metrics[0].cells.values()]
    assert a.metrics[0].verdict == b.metrics[0].verdict
    assert not any(c.mark for c in b.metrics[0].cells.values())
    assert b.seeds == 10 and "the same cell as rolling" in b.pooled
    assert "the same cell as busy-rolling" in a.pooled
    # the small grid's header says its shared row rests on ten distinct seeds, not five;
    # the big grid's own count is the row's, so its header adds nothing
    assert b.fresh_seeds == 10
    assert "5 seeds per cell" in seeds_line(g_small)
    assert "1 row on 10 distinct seeds + 10 fresh" in seeds_line(g_small)
    assert "distinct seeds +" not in seeds_line(g_big)


def test_two_workload_names_of_the_same_conditions_are_one_cell_and_others_are_not() -> None:
    """``light`` and ``light-md300s`` set the same work and settings: one cell, judged on both
    grids' runs; ``light-md30s`` sets another metadata age: its own."""
    anchor = {"name": "anchor", "protocols": ["classic:eager", "consumer:uniform"],
              "scenarios": ["grow-by-900"], "workloads": ["light"],
              "metrics": ["convergence_ms"], "seeds": 5}
    age = {**anchor, "name": "metadata-age", "workloads": ["light-md300s", "light-md30s"]}

    def run(p: str, seed: int, workload: str, ms: float) -> dict[str, Any]:
        md = 30000 if workload.endswith("30s") else 300000
        return {**_run(p, seed, scenario="grow-by-900", workload=workload, convergence_ms=ms),
                "replicate": seed % 100, "work_model": "2 rec/s",
                "settings_json": json.dumps({"metadata.max.age.ms": md})}

    rows = [run("classic:eager", s, "light", 140000.0 + s) for s in range(5)]
    rows += [run("consumer:uniform", s, "light", 4700.0) for s in range(5)]
    rows += [run("classic:eager", 100 + s, "light-md300s", 150000.0 + s) for s in range(5)]
    rows += [run("consumer:uniform", 100 + s, "light-md300s", 4600.0) for s in range(5)]
    rows += [run(p, 200 + s, "light-md30s", 20000.0) for p in ("classic:eager",
             "consumer:uniform") for s in range(5)]
    g_anchor, g_age = _verdicts_of([anchor, age], rows)
    light = g_anchor.rows[0]
    md300 = next(r for r in g_age.rows if r.workload == "light-md300s")
    md30 = next(r for r in g_age.rows if r.workload == "light-md30s")
    assert light.seeds == md300.seeds == 10
    assert light.metrics[0].cells["classic:eager"].values == \
        md300.metrics[0].cells["classic:eager"].values
    assert len(light.metrics[0].cells["classic:eager"].values) == 10
    assert md30.seeds == 5 and not md30.pooled


def test_a_lag_row_whose_control_does_not_cancel_gets_no_mark_and_shows_raw_lag() -> None:
    """Natural lateness: a seed whose excess lag is below minus the floor shows the control
    did not cancel the members' pauses; the row has no mark, its cells the raw lag; stall is
    judged as before."""
    grid = {"name": "lateness", "protocols": ["classic:eager", "classic:cooperative"],
            "metrics": ["stall_ms", "lag_record_s"]}

    def run(p: str, seed: int, excess: float, stall: float) -> dict[str, Any]:
        return _run(p, seed, lag_record_s=excess, control_lag_record_s=50_000.0,
                    stall_ms=stall)

    rows = [run("classic:eager", s, 100.0 + s, 16_000.0) for s in range(6)]
    rows += [run("classic:cooperative", s, 90_000.0 + s, 0.0) for s in range(5)]
    rows.append(run("classic:cooperative", 5, -40_000.0, 0.0))  # the pauses fell apart
    stall, lag = grid_verdict(grid, rows).rows[0].metrics
    assert stall.verdict == "best" and stall.best == ("classic:cooperative",)
    assert lag.verdict == UNCANCELLED and not lag.best
    assert not any(c.mark for c in lag.cells.values())
    assert lag.cells["classic:cooperative"].raw[5] == 10_000.0
    assert lag.cells["classic:eager"].raw[0] == 50_100.0
    assert stall.cells["classic:eager"].raw == {}
    assert all(c.metric != "lag_record_s" for c in claims([grid_verdict(grid, rows)]))
    # without the negative seed the same row marks eager, and prints no raw lag
    fine = [r for r in rows if r["lag_record_s"] >= 0]
    fine.append(run("classic:cooperative", 5, 90_005.0, 0.0))
    lag = grid_verdict(grid, fine).rows[0].metrics[1]
    assert lag.verdict == "best" and lag.best == ("classic:eager",)
    assert all(not c.raw for c in lag.cells.values())
    text = verdict_md(grid_verdict(grid, rows))
    assert "control does not cancel" in text and "raw 50,1" in text


def test_a_lateness_workload_prints_its_busy_share_with_the_pauses() -> None:
    run = {"protocol": "classic:eager", "size": 10, "members": 10, "total_partitions": 1000,
           "total_topics": 4,
           "work_model": "1.6 rec/s, lognormal:1:1 ms/rec, max.poll.records 500, pauses "
                         "lognormal:1000:1.5 ms every 10000 ms"}
    load = member_load(run)
    assert load is not None
    assert math.isclose(load.paused, 0.1) and math.isclose(load.busy, 0.16 + 0.1)
    assert "26.0% busy per member (processing 16.0% + paused 10.0%)" in load.text()
    plain = member_load({**run, "work_model": "1.6 rec/s, uniform:1-3 ms/rec"})
    assert plain is not None and plain.paused == 0.0 and math.isclose(plain.busy, 0.32)


def test_workloads_that_differ_in_a_parameter_are_never_one_cell() -> None:
    """``16x8c-task1s`` and ``16x8c-task5s`` differ in the task times only (same settings,
    same shape): two cells, each judged on its own runs; ``16x8c`` (the model's default 1 s
    task times) and ``16x8c-task1s`` are one."""
    protocols = ["connect:eager", "classic-connect:sessioned"]
    base = {"name": "kip415", "protocols": protocols, "scenarios": ["worker-joins"],
            "metrics": ["task_restarts"], "seeds": 5, "workloads": ["16x8c"]}
    times = {**base, "name": "task-times", "workloads": ["16x8c-task1s", "16x8c-task5s"]}
    work = {"16x8c": {}, "16x8c-task1s": {"task_stop_ms": 1000, "task_start_ms": 1000},
            "16x8c-task5s": {"task_stop_ms": 5000, "task_start_ms": 5000}}
    rows = [{**_run(p, s, scenario="worker-joins", workload=w, task_restarts=float(s)),
             "work": json.dumps(wk), "settings_json": "{}"}
            for w, wk in work.items() for p in protocols for s in range(5)]
    g_base, g_times = grid_verdicts({"name": "paper", "grids": [base, times]}, rows)
    by = {r.workload: r for r in g_times.rows}
    assert by["16x8c-task1s"].pooled and g_base.rows[0].pooled
    assert not by["16x8c-task5s"].pooled and by["16x8c-task5s"].seeds == 5


def test_the_same_seed_under_two_workload_names_is_one_run_not_two() -> None:
    """Round 8: grow-by-900's ``light`` and ``light-md300s`` (and kip415's ``16x8c`` and
    ``16x8c-task1s``) run the same simulation on the same seeds: pooled, each protocol's seed
    counts once (5 seeds, not 10), so no sign test or seed count rests on duplicates."""
    anchor = {"name": "anchor", "protocols": ["classic:eager", "consumer:uniform"],
              "scenarios": ["grow-by-900"], "workloads": ["light"],
              "metrics": ["convergence_ms"], "seeds": 5}
    age = {**anchor, "name": "metadata-age", "workloads": ["light-md300s"]}

    def run(p: str, seed: int, workload: str, ms: float) -> dict[str, Any]:
        return {**_run(p, seed, scenario="grow-by-900", workload=workload, convergence_ms=ms),
                "replicate": seed, "work_model": "2 rec/s",
                "settings_json": json.dumps({"metadata.max.age.ms": 300000})}

    rows = [run(p, s, w, (140000.0 if p == "classic:eager" else 4700.0) + s)
            for w in ("light", "light-md300s") for p in anchor["protocols"] for s in range(5)]
    g_anchor, g_age = _verdicts_of([anchor, age], rows)
    for row in (g_anchor.rows[0], g_age.rows[0]):
        assert row.pooled and row.seeds == 5
        assert len(row.metrics[0].cells["classic:eager"].values) == 5
        assert "(5 distinct seeds)" in row.pooled


def test_a_consumer_groups_stall_is_no_sentence_its_lag_is() -> None:
    """Round 8, S10: cooperative and KIP-848 stall 0 by construction (no global barrier), so
    a consumer grid's sentence on a scenario answers with lag, never with stall alone; a
    Connect grid keeps its stall candidates (its stall is the task stop and start)."""
    grid = {"name": "lateness", "protocols": ["classic:eager", "classic:cooperative"],
            "scenarios": ["rolling-bounce"], "metrics": ["stall_ms", "lag_record_s"]}
    rows = [_run(p, s, scenario="rolling-bounce", stall_ms=1500.0 if p == "classic:eager"
                 else 0.0, lag_record_s=(20_000.0 if p == "classic:eager" else 9_000.0) + s)
            for p in grid["protocols"] for s in range(6)]
    g = grid_verdict(grid, rows)
    stall, lag = g.rows[0].metrics
    assert stall.verdict == "best" and lag.verdict == "best"  # both marked in the table
    found = claims([g])
    assert [c.metric for c in found] == ["lag_record_s"]
    connect = {**grid, "name": "kip415", "protocols": ["classic-connect:eager",
                                                      "classic-connect:sessioned"]}
    crow = [{**r, "protocol": r["protocol"].replace("classic:", "classic-connect:").replace(
        "cooperative", "sessioned")} for r in rows]
    assert "stall_ms" in {c.metric for c in claims([grid_verdict(connect, crow)])}


def test_an_eager_mark_cites_the_heartbeat_spread_grids_result_on_the_same_cell() -> None:
    """Round 8: S4 and S6 (eager's scale-out wins) rest on aligned heartbeats; the hb-spread
    grid runs the same cell at 1 s, where eager is not separated: the mark says so."""
    plain = {"name": "crossover", "protocols": ["classic:eager", "classic:cooperative"],
             "scenarios": ["scale-out"], "metrics": ["lag_record_s"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("0s", "1s") for p in plain["protocols"]]
    spread = {**plain, "name": "hb-spread", "protocols": labels}
    rows = [_run(p, s, scenario="scale-out", size=8,
                 lag_record_s=(1.0 if p == "classic:eager" else 255.0) + s)
            for p in plain["protocols"] for s in range(5)]
    for label in labels:
        base, _, tail = label.partition("@")
        aligned = tail == "hbspread0s"
        rows += [_run(label, s, scenario="scale-out", size=8, lag_record_s=(
            (1.0 if base == "classic:eager" else 255.0) if aligned
            else (30.0 * s if base == "classic:eager" else 100.0 + 20 * s)))
            for s in range(5)]
    g_plain, _ = grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)
    mv = g_plain.rows[0].metrics[0]
    assert mv.best == ("classic:eager",)
    assert ("; holds only with aligned heartbeats (hb-spread, heartbeats spread after a join, "
            "the same cell: at 1 s: no protocol separated; that grid is where eager's mark "
            "goes)") in mv.limit
    # and cites how far apart real members learned of a rebalance, from the stored rows
    wire = [{"client": "Java", "rebalances": 24, "median_s": 0.022, "largest_s": 0.094}]
    mv.limit = ""
    mark_spread_limits([g_plain, _], wire, stable=[])
    assert mv.limit.endswith("goes); real classic members, measured on the wire (eager "
                             "rolling bounce): within 0.094 s of one another (median 0.022 s, "
                             "Java, 24 rebalances), measured where each rebalance restarts "
                             "every member's heartbeat timer; a scale-out usually comes to a "
                             "group stable for hours, whose heartbeat phases were not measured")
    # where a stable group's join was measured on the wire, the scale-out cites that figure
    stable = [{"client": "librdkafka", "stable_min": 5, "rebalances": 2, "median_s": 1.5,
               "largest_s": 2.0}, {"client": "librdkafka", "stable_min": 10,
                                   "rebalances": 1, "median_s": 2.5, "largest_s": 2.5}]
    mv.limit = ""
    mark_spread_limits([g_plain, _], wire, stable)
    assert mv.limit.endswith("Java, 24 rebalances); after 5 to 10 min stable, real classic "
                             "members learned of a member's join within 2.500 s of one another "
                             "(librdkafka: median 1.500 s, 2 joins after 5 min, median 2.500 s, "
                             "1 join after 10 min) (a rolling bounce restarts every member's "
                             "heartbeat timer; a scale-out into a group stable for hours was "
                             "not measured)")
    mv.limit = ""
    mark_spread_limits([g_plain, _], [], stable)
    assert mv.limit.endswith("at 1 s: no protocol separated; that grid is where eager's mark "
                             "goes)")
    # a rolling bounce is where the wire spread was measured: the measurement, no such clause
    rolled = [{**r, "scenario": "rolling-bounce"} for r in rows]
    r_plain, r_spread = grid_verdicts({"spec": "paper", "grids": [
        {**plain, "scenarios": ["rolling-bounce"]},
        {**spread, "scenarios": ["rolling-bounce"]}]}, rolled)
    rmv = r_plain.rows[0].metrics[0]
    rmv.limit = ""
    mark_spread_limits([r_plain, r_spread], wire, stable)
    assert rmv.limit.endswith("Java, 24 rebalances)")
    # without the spread grid the mark carries no such limit
    (alone,) = grid_verdicts({"spec": "paper", "grids": [plain]}, rows)
    assert "aligned heartbeats" not in alone.rows[0].metrics[0].limit


def test_a_sentence_names_a_closer_protocol_of_the_same_cell_in_another_grid() -> None:
    """Round 8, S6: busy-crossover's sentence named cooperative (255) the runner-up while the
    same cell in crossover-20ms has consumer:uniform@hb3s at 66.4: the sentence says so."""
    small = {"name": "busy", "protocols": ["classic:eager", "classic:cooperative"],
             "scenarios": ["scale-out"], "metrics": ["lag_record_s"], "seeds": 5}
    big = {**small, "name": "crossover",
           "protocols": ["classic:eager", "classic:cooperative", "consumer:uniform@hb3s"]}
    vals = {"classic:eager": 1.0, "classic:cooperative": 900.0, "consumer:uniform@hb3s": 300.0}
    rows = [{**_run(p, s, scenario="scale-out", size=8, lag_record_s=v + s),
             "settings_json": "{}"} for p, v in vals.items() for s in range(5)]
    g_big, g_small = grid_verdicts({"spec": "paper", "grids": [big, small]}, rows)
    found = claims([g_big, g_small])
    busy = next(c for c in found if c.grid == "busy")
    assert busy.worse == "classic:cooperative"
    # a caveat: in the note under the sentence
    assert busy.caveats[-1] == ("closer to the best in the same cell: consumer:uniform@hb3s at "
                                "302 record·s (a column of crossover, not of this grid)")
    crossover = next(c for c in found if c.grid == "crossover")
    assert "closer to the best" not in crossover.full  # its own runner-up is @hb3s


def test_grids_that_found_the_same_crossover_are_named_together_once() -> None:
    """Render 13: crossover-10ms and crossover-20ms found word for word the same on crash (no
    protocol at 20 and 30 % busy, four protocols tied at 40 %), and the sentence said it twice,
    157 words: grids alike are named together in one bracket."""
    stalls = {1: (9000, 0), 2: (0, 9000)}
    grids, rows = [], []
    for ms in (10, 20):
        name = f"crossover-{ms}ms"
        grids.append({"name": name, "protocols": ["classic:eager", "consumer:uniform"],
                      "metrics": ["stall_ms"], "seeds": 5, "workloads": [
                          f"w{ms}-{r}" for r in stalls]})
        # the same load at both poll lengths: 20 and 40 % busy in each grid
        rows += [{**_run(p, s, scenario="crash", size=8, workload=f"w{ms}-{r}",
                         stall_ms=v[k] + 10 * s, total_partitions=32, members=8),
                  "work": json.dumps({"processing_ms": ms, "records_per_s": r * 50 / ms})}
                 for r, v in stalls.items()
                 for k, p in enumerate(("classic:eager", "consumer:uniform"))
                 for s in range(5)]
    gs = grid_verdicts({"spec": "paper", "grids": grids}, rows)
    (c,) = claims(gs)
    assert c.text == (
        "crash, 8 members, stall against the members' load, the lowest, separated from the "
        "rest: [crossover-10ms, crossover-20ms] consumer:uniform at 20 % busy; classic:eager "
        "at 40 % busy (the mark not tested with a member late at the rebalance).")
