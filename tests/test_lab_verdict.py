"""Verdict tables and claims (``lab.verdict``): which differences count, marks, ties, row
order, the question's metrics, and the claims' numbers and commands."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.lab.findings import BY_COLUMN
from groupcoord.lab.verdict import (
    CONSUMER_METRICS,
    KIP415_METRICS,
    MAX_CLAIMS,
    Cell,
    beats,
    claims,
    grid_verdict,
    grid_verdicts,
    judge,
    natural_key,
    question_metrics,
    separation_chance,
    sign_needed,
    sign_test,
)

STALL = BY_COLUMN["stall_ms"]  # floor 250 ms
LAG = BY_COLUMN["lag_peak"]  # floor 10 records


def _run(protocol: str, seed: int, scenario: str = "crash", size: int = 10,
         workload: str = "4x250", **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, **metrics}


def test_separated_ranges_beyond_the_floor_count_and_nothing_else() -> None:
    assert beats([0, 100, 200], [1000, 1200, 5000], STALL)
    # separated, but by less than the floor (a heartbeat's jitter)
    assert not beats([0, 100, 200], [300, 1200, 5000], STALL)
    # overlapping ranges, even with a much lower median
    assert not beats([0, 0, 3000], [2000, 2500, 9000], STALL)
    # two seeds each never count (by chance one time in six)
    assert not beats([0, 0], [9000, 9000], STALL)
    # higher is better: the other way round
    processed = BY_COLUMN["records_processed"]
    assert beats([5000, 5200, 5300], [1000, 1100, 1200], processed)
    assert not beats([1000, 1100, 1200], [5000, 5200, 5300], processed)


def test_the_chance_of_a_separation_without_a_difference() -> None:
    assert separation_chance(3) == 1 / 20
    assert separation_chance(5) == 1 / 252
    assert math.isclose(separation_chance(21), 1 / math.comb(42, 21))


values = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=3,
                  max_size=8)


@given(values, values)
def test_beats_is_never_both_ways_and_never_against_itself(a: list[float], b: list[float]
                                                           ) -> None:
    assert not (beats(a, b, LAG) and beats(b, a, LAG))
    assert not beats(a, list(a), LAG)


@given(values, st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_a_shift_beyond_the_spread_and_floor_always_counts(a: list[float], gap: float) -> None:
    shifted = [v + (max(a) - min(a)) + LAG.floor + 1 + gap for v in a]
    assert beats(a, shifted, LAG)


def test_marks_best_tied_and_tie() -> None:
    def cells(**by_p: list[float]) -> dict[str, Cell]:
        return {p.replace("_", ":"): Cell(dict(enumerate(v))) for p, v in by_p.items()}

    one = judge(cells(a_x=[0, 0, 0], b_x=[5000, 6000, 7000], c_x=[9000, 9000, 9500]), STALL)
    assert (one.verdict, one.best, one.beaten) == ("best", ("a:x",), ("b:x", "c:x"))
    assert one.cells["a:x"].mark == "best" and one.cells["b:x"].mark == ""
    # b's range reaches into a's: they share the place
    two = judge(cells(a_x=[0, 0, 3000], b_x=[2000, 2500, 2600], c_x=[9000, 9000, 9500]), STALL)
    assert two.verdict == "tied" and set(two.best) == {"a:x", "b:x"}
    assert two.cells["b:x"].mark == "tied" and two.cells["c:x"].mark == ""
    none = judge(cells(a_x=[0, 0, 100], b_x=[0, 200, 0]), STALL)
    assert none.verdict == "tie" and not any(c.mark for c in none.cells.values())
    few = judge(cells(a_x=[0, 0], b_x=[9000, 9000]), STALL)
    assert few.verdict == "few seeds" and not any(c.mark for c in few.cells.values())


def test_rows_follow_the_numbers_in_workload_names() -> None:
    names = ["4x8-p10ms", "4x8-p0.5ms", "4x8-p20ms", "4x8-p2ms", "4x8-p5ms"]
    assert sorted(names, key=natural_key) == ["4x8-p0.5ms", "4x8-p2ms", "4x8-p5ms",
                                              "4x8-p10ms", "4x8-p20ms"]
    rows = [{**_run(p, s, workload=f"4x8-p{ms:g}ms", lag_peak=10 * s),
             "work": json.dumps({"processing_ms": ms})}
            for ms in (10, 0.5, 20, 2, 5) for p in ("classic:eager", "consumer:uniform")
            for s in range(3)]
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
         "seeds": 5}]}, rows)
    (c,) = claims([g])  # lag differs by less than its floor: no claim
    assert c.metric == "stall_ms" and c.size == 30  # the largest size
    assert c.best == "consumer:uniform" and c.worse == "classic:eager"
    assert c.text == ("crash, 30 members: consumer:uniform has the lowest stall, 0.02 s (range 0"
            "\u20130.04 s) against 12.2 s (12\u201312.4 s) for classic:eager, medians of "
            "5 seeds.")
    assert c.command == ("groupcoord lab run --spec paper --scenario crash --size 30 "
                         "--workload 4x250 --protocol consumer:uniform --protocol "
                         "classic:eager --out DIR")


def test_at_most_a_dozen_claims_shared_between_grids() -> None:
    rows = []
    grids = []
    for k in range(6):
        scen = f"s{k}"
        grids.append({"name": f"g{k}", "scenarios": [scen], "seeds": 3,
                      "protocols": ["classic:eager", "consumer:uniform"]})
        for s in range(3):
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
    scheduled.rebalance.max.delay.ms, by design: the claim says so, with the runs' value."""
    settings = json.dumps({"scheduled.rebalance.max.delay.ms": 300_000})
    rows = [{**_run(p, s, scenario="kip415-worker-leaves", time_to_balance_ms=v + s),
             "settings_json": settings}
            for p, v in (("connect:eager", 12_000), ("connect:cooperative", 305_000))
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "kip415", "protocols": ["connect:eager", "connect:cooperative"],
         "metrics": ["time_to_balance_ms"], "seeds": 5}]}, rows)
    (c,) = claims([g])
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
    assert "By design" not in claims([g2])[0].text


cells_values = st.lists(st.integers(min_value=0, max_value=20_000), min_size=3, max_size=3)


@given(st.lists(st.tuples(cells_values, cells_values, cells_values), min_size=1, max_size=4))
def test_no_mark_or_claim_rests_on_a_difference_within_the_seeds_spread(
        rows_values: list[tuple[list[int], list[int], list[int]]]) -> None:
    """Whatever the values (3 seeds: no sign test), every mark and every claim compares
    ranges separated by more than the metric's floor, and no claim names a protocol that is
    not marked."""
    protocols = ("classic:eager", "classic:cooperative", "consumer:uniform")
    rows = [_run(p, s, size=10 + i, stall_ms=vals[k][s])
            for i, vals in enumerate(rows_values) for k, p in enumerate(protocols)
            for s in range(3)]
    (g,) = grid_verdicts({"spec": "x", "grids": [
        {"name": "g", "protocols": list(protocols), "metrics": ["stall_ms"], "seeds": 3}]}, rows)
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
            for k, p in enumerate(("classic:eager", "consumer:uniform")) for s in range(3)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [
        {"name": "crossover", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["stall_ms"], "seeds": 3}]}, rows)
    (c,) = claims([g])
    assert c.text == ("rolling-bounce, 8 members, stall against the processing time per "
                      "record, the protocol with the lowest (separated from the others): "
                      "consumer:uniform at 0.5, 2 ms; none at 5 ms; classic:eager at 20 ms.")
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
