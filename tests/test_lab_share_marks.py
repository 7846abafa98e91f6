"""The share comparison's marks (second outside review): a mark that a consumer group's commit
interval decides reads "depends on the consumer's commit interval", and a poison row that
repeats its clean row's seeds and mark is not counted as a second finding."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.report import _verdict_word, method_text
from groupcoord.lab.verdict import (
    DIFFERENT_MEANING,
    Cell,
    GridVerdict,
    MetricVerdict,
    VerdictRow,
    distinct_marks,
    judge,
    mark_timing_dependence,
    unmark_share_moves,
)
from groupcoord.sim.scenario import load_scenario
from groupcoord.sim.settings import effective_settings, split_timing, with_field_settings

SHARE, KIP848, FAST = "share:simple", "consumer:uniform", "consumer:uniform@commit100ms"
TWICE = Metric("records_reprocessed", "records processed twice", "records", floor=10.0)


def _cells(values: dict[str, list[float]], seeds: range = range(5)) -> dict[str, Cell]:
    return {p: Cell(dict(zip(seeds, v, strict=True))) for p, v in values.items()}


def test_a_commit_interval_variant_sets_the_consumers_auto_commit() -> None:
    assert split_timing(FAST) == (KIP848, {"commit_interval_ms": 100})
    sc = with_field_settings(load_scenario("crash"), FAST)
    assert sc.commit_interval_ms == 100
    assert effective_settings(sc, FAST)["auto.commit.interval.ms"] == 100
    plain = with_field_settings(load_scenario("crash"), KIP848)
    assert effective_settings(plain, KIP848)["auto.commit.interval.ms"] == 5_000


def test_a_mark_won_only_against_the_default_commit_interval_depends_on_it() -> None:
    # the share group and the consumer group committing every 100 ms both beat the consumer
    # group at its 5 s default: the mark is the commit interval's
    mv = judge(_cells({SHARE: [3, 0, 6, 2, 4], KIP848: [198, 141, 288, 170, 210],
                       FAST: [4, 0, 5, 3, 2]}), TWICE)
    assert mv.verdict in ("best", "tied") and KIP848 in mv.beaten
    row = VerdictRow("crowd-crash", 4, "1x12-busy", 0.0, 5, [mv])
    mark_timing_dependence([row])
    assert mv.depends == "the consumer's commit interval"
    assert _verdict_word(mv).endswith(", depends on the consumer's commit interval")
    tied = MetricVerdict(TWICE, mv.cells, "tied", (SHARE, FAST), (KIP848,),
                         depends=mv.depends)
    assert _verdict_word(tied) == "= 2 tied, depends on the consumer's commit interval"
    # a mark that treats both cadences alike does not depend on it
    same = judge(_cells({SHARE: [0, 0, 1, 0, 1], KIP848: [40, 41, 45, 50, 39],
                         FAST: [42, 40, 44, 48, 41]}), TWICE)
    assert same.verdict == "best"
    mark_timing_dependence([VerdictRow("bounce", 4, "1x12-busy", 0.0, 5, [same])])
    assert same.depends == ""
    # a heartbeat variant is not one of these timings: no dependence said for it
    hb = judge(_cells({SHARE: [0, 0, 1, 0, 1], KIP848: [40, 41, 45, 50, 39],
                       "consumer:uniform@hb3s": [0, 1, 0, 1, 0]}), TWICE)
    mark_timing_dependence([VerdictRow("bounce", 4, "1x12-busy", 0.0, 5, [hb])])
    assert hb.depends == ""


def _grid(rows: list[VerdictRow]) -> GridVerdict:
    return GridVerdict("share", "", [SHARE, KIP848], [TWICE], rows, 20, 0, 0, 5, excess=True)


def _runs(workload: str, work: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": workload,
             "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
             "work": json.dumps(work), "control_lag_peak": 12, "run_id": f"{workload}{p}{s}"}
            for p in (SHARE, KIP848) for s in range(5)]


def test_a_poison_row_that_repeats_its_clean_row_is_one_finding() -> None:
    clean = {"records_per_s": 60, "processing_ms": 10}
    runs = _runs("1x4-busy", clean) + _runs("1x4-poison", {**clean, "poison_rate": 0.01})
    marked = {SHARE: [0, 1, 2, 0, 1], KIP848: [187, 260, 392, 200, 300]}
    rows = [VerdictRow("rolling-bounce", 12, w, 0.0, 5, [judge(_cells(marked), TWICE)])
            for w in ("1x4-busy", "1x4-poison")]
    assert all(r.metrics[0].verdict == "best" for r in rows)
    assert distinct_marks([_grid(rows)], runs) == (2, 1)
    text = " ".join(method_text(runs, [_grid(rows)]))
    assert "2 marks (★ or =) and 1 distinct findings" in text
    # other seeds, or another mark, make it a finding of its own
    other = [VerdictRow("rolling-bounce", 12, "1x4-poison", 0.0, 5,
                        [judge(_cells(marked, range(10, 15)), TWICE)])]
    assert distinct_marks([_grid(rows[:1] + other)], runs) == (2, 2)
    # a workload that differs in more than its poison records is another finding too
    runs2 = _runs("1x4-busy", clean) + _runs("1x4-poison", {**clean, "records_per_s": 20})
    assert distinct_marks([_grid(rows)], runs2) == (2, 2)
    # no repeat: the line is not printed
    assert "distinct findings" not in " ".join(method_text(runs, [_grid(rows[:1])]))


def test_a_sentence_of_a_grid_with_two_workloads_names_the_workload_it_quotes() -> None:
    from groupcoord.lab.verdict import claims, grid_verdicts

    clean = {"records_per_s": 60, "processing_ms": 10}
    runs = _runs("1x4-busy", clean) + _runs("1x4-poison", {**clean, "poison_rate": 0.01})
    for r in runs:
        r["records_reprocessed"] = (r["seed"] if r["protocol"] == SHARE else 200 + r["seed"])
    (g,) = grid_verdicts({"spec": "share", "grids": [
        {"name": "share", "metrics": ["records_reprocessed"], "seeds": 5,
         "protocols": [SHARE, KIP848]}]}, runs)
    texts = [c.text for c in claims([g])]
    assert texts and all(t.startswith("rolling-bounce, 12 members, 1x4-") for t in texts)
    one = [r for r in runs if r["workload"] == "1x4-busy"]
    (g1,) = grid_verdicts({"spec": "share", "grids": [
        {"name": "share", "metrics": ["records_reprocessed"], "seeds": 5,
         "protocols": [SHARE, KIP848]}]}, one)
    assert all(c.text.startswith("rolling-bounce, 12 members: ") for c in claims([g1]))


def test_runs_left_out_of_a_grid_are_not_called_shared_between_grids() -> None:
    """A grid whose every run of a cell was left out (never caught up) has no row there; the
    runs line must not call the difference runs that two grids share."""
    from groupcoord.lab.verdict import grid_verdicts

    clean = {"records_per_s": 60}
    poison = {**clean, "poison_rate": 0.01}
    left = [{**r, "scenario": "bounce", "caught_up": False, "run_id": "b" + r["run_id"]}
            for r in _runs("1x4-poison", poison)]
    runs = _runs("1x4-busy", clean) + _runs("1x4-poison", poison) + left
    for r in runs:
        # a poison run's results differ from the clean run's on the same seed, as they do in
        # a real sweep (the runs line counts runs with identical results as one simulation)
        r["records_reprocessed"] = r["seed"] + (100 if "poison" in r["workload"] else 0)
    grids = [{"name": "clean", "workloads": ["1x4-busy"], "metrics": ["records_reprocessed"],
              "seeds": 5, "protocols": [SHARE, KIP848]},
             {"name": "poison", "workloads": ["1x4-poison"], "metrics": ["records_reprocessed"],
              "seeds": 5, "protocols": [SHARE, KIP848]}]
    verdicts = grid_verdicts({"spec": "share", "grids": grids}, runs)
    text = next(p for p in method_text(runs, verdicts) if "runs in these grids" in p)
    # the poison grid's bounce cell has no row (every run left out): no run is shared
    assert text.startswith("30 runs in these grids; left out: 0 that violated an invariant "
                           "(listed below), 10 that never caught up")
    # a cell two grids share: its runs count in each, and the line says how many are distinct
    both = grid_verdicts({"spec": "share", "grids": [grids[0], {**grids[0], "name": "again"}]},
                         runs)
    assert "(10 distinct runs in runs/, a run of a cell that two grids share" in \
        next(p for p in method_text(runs, both) if "runs in these grids" in p)


MOVED = Metric("resources_moved", "partitions moved", "", floor=1.0)


def _moves_grid(rows: list[VerdictRow], protocols: list[str]) -> GridVerdict:
    return GridVerdict("share-rolling", "", protocols, [MOVED], rows, 10, 0, 0, 5)


def test_partitions_moved_between_a_share_and_a_consumer_group_carries_no_mark() -> None:
    # the rolling bounce at 12: share 10-20 moves against consumer 5-8, a separation the
    # judge marks; a share move has no revocation, so the row keeps its counts and no mark
    mv = judge(_cells({SHARE: [16, 10, 20, 16, 18], KIP848: [7, 5, 8, 7, 6]}), MOVED)
    assert mv.verdict == "best" and mv.best == (KIP848,)
    unmark_share_moves([_moves_grid([VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5, [mv])],
                              [SHARE, KIP848])])
    assert mv.verdict == DIFFERENT_MEANING and mv.best == () and mv.beaten == ()
    assert all(c.mark == "" for c in mv.cells.values())
    assert mv.cells[SHARE].median == 16 and mv.cells[KIP848].median == 7
    assert "\u2605" not in _verdict_word(mv) and "no revocation" in _verdict_word(mv)
    # two consumer groups keep their mark: the metric means the same for both
    same = judge(_cells({KIP848: [16, 10, 20, 16, 18], FAST: [7, 5, 8, 7, 6]}), MOVED)
    unmark_share_moves([_moves_grid([VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5, [same])],
                              [KIP848, FAST])])
    assert same.verdict == "best" and same.best == (FAST,)


def test_a_share_mark_in_a_bounce_aligned_with_the_heartbeat_says_so() -> None:
    from groupcoord.lab.verdict import HEARTBEAT_MULTIPLE, claims, mark_heartbeat_multiples

    down = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0,
                  floor=1000.0)
    hb = {"group.consumer.heartbeat.interval.ms": 5000}

    def row(down_ms: int, spacing_ms: int | None) -> VerdictRow:
        mv = judge(_cells({SHARE: [7870, 3170, 13100, 6000, 9000],
                           KIP848: [14900, 14910, 14940, 14920, 14930]}), down)
        assert mv.verdict == "best" and mv.best == (SHARE,)
        return VerdictRow("bounce", 4, "1x12-busy", 0.0, 5, [mv], down_ms=down_ms,
                          spacing_ms=spacing_ms, settings={KIP848: hb, SHARE: {}})

    # a 10 s bounce is two 5 s heartbeats: the mark keeps its ★ and says what it rests on
    ten = row(10_000, None)
    g = GridVerdict("equal-capacity", "", [SHARE, KIP848], [down], [ten], 10, 0, 0, 5)
    mark_heartbeat_multiples([g])
    mv = ten.metrics[0]
    assert mv.verdict == "best"
    assert mv.limit.startswith(HEARTBEAT_MULTIPLE)
    assert "10 s bounce's downtime is 2 \u00d7 the 5 s heartbeat of consumer:uniform" in mv.limit
    assert mv.limit in _verdict_word(mv)
    # the sentence carries the limit too
    said = [c for c in claims([g]) if c.metric == "resource_downtime_ms"]
    assert said and f"the mark {mv.limit}." in said[0].full
    # a rolling bounce 15 s apart, 3 s down: the spacing is three heartbeats, the downtime not
    rolling = row(3_000, 15_000)
    mark_heartbeat_multiples([GridVerdict("share-rolling", "", [SHARE, KIP848], [down],
                                          [rolling], 10, 0, 0, 5)])
    lim = rolling.metrics[0].limit
    assert "15 s bounces' spacing is 3 \u00d7" in lim and "bounce's downtime" not in lim
    # a downtime off the heartbeat's multiple (7.7 s): no limit
    off = row(7_700, None)
    mark_heartbeat_multiples([GridVerdict("x", "", [SHARE, KIP848], [down], [off], 10, 0, 0,
                                          5)])
    assert off.metrics[0].limit == ""


def test_a_sentence_on_a_split_cell_gives_every_outcome_and_the_typical_one() -> None:
    """A lost host that held acquired records stops its partition (7,038 records), one that
    held none does not (2): the sentence must not headline the favourable outcome as the
    cell's number, but give both with their counts and say which is typical."""
    from groupcoord.lab.verdict import claims

    peak = Metric("lag_peak", "lag peak", "records", floor=50.0)
    rows = [VerdictRow("owner-crash", 12, "1x4-hot", 0.0, 5, [judge(_cells(
        {SHARE: [2, 1, 7038, 4, 7040], KIP848: [14381, 13253, 14766, 14000, 14500]}), peak)])]
    mv = rows[0].metrics[0]
    assert mv.verdict == "best" and mv.cells[SHARE].split
    (c,) = claims([GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [peak], rows, 10, 0, 0,
                               5, excess=True)])
    assert ("2 records on 3 of 5 seeds and 7,039 records on 2 of 5 seeds (its seeds split; "
            "typical: 2 records; median of all 5: 4 records, mean 2,817 records)") in c.text, \
        c.text
    assert "against 14,381 records" in c.text
    # as many seeds in each outcome: none is typical
    from groupcoord.lab.verdict import _quote, modes

    even = Cell(dict(enumerate([2.0, 1.0, 7038.0, 7040.0, 3.0, 7035.0])))
    even.outcomes = modes(list(even.values.values()), peak)
    assert even.split
    assert _quote(peak, even).endswith("(its seeds split; no outcome typical; median of all 6: "
                                       "3,519 records)"), _quote(peak, even)


def test_a_share_pages_how_to_read_gives_share_examples() -> None:
    """The eleventh outside share review: the share page's "How to read" carried the paper
    page's Connect and classic examples (task restarts 128 against 50, where a 0-300 s
    metadata refresh fell, a leader's departure); a share page gives its own."""
    clean = {"records_per_s": 60, "processing_ms": 10}
    runs = _runs("1x4-busy", clean)
    fixed = {SHARE: [0, 0, 0, 0, 0], KIP848: [200, 200, 200, 200, 200]}
    rows = [VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5,
                       [judge(_cells(fixed), TWICE)])]
    text = " ".join(method_text(runs, [_grid(rows)]))
    for paper in ("task restarts", "metadata refresh", "leader's departure"):
        assert paper not in text, paper
    assert "as an idle consumer member's crash against a partition owner's" in text
    assert "where a bounce's drawn downtime fell" in text
    if "Where the chance figure does not apply" in text:
        assert "as partitions moved on every seed" in text
