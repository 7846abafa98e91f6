"""A share page's split cells (``lab.share_marks.all_seed_outcomes``): a cell whose seeds
fall into distinct outcomes is split over all its seeds, the first and the fresh set together,
the outcome most of them had first, with the median of all seeds beside it; and an outcome of
one value repeated (a consumer group's idle member crashed: nothing lost) beside a gap of a
factor of 2 is an outcome of its own on either protocol's column (``share_modes``)."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.lab.findings import Metric
from groupcoord.lab.report import verdict_md
from groupcoord.lab.share_marks import all_seed_outcomes, all_seeds_note, share_modes
from groupcoord.lab.verdict import DASH, Cell, GridVerdict, VerdictRow, confirm, judge, modes

SHARE, KIP848 = "share:simple", "consumer:uniform"
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", floor=1_000.0,
              scale=1000.0)
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=24.0)


def _cells(values: dict[str, list[float]], first: int = 0) -> dict[str, Cell]:
    return {p: Cell({first + i: x for i, x in enumerate(v)}) for p, v in values.items()}


def _grid(first: dict[str, list[float]], fresh: dict[str, list[float]], m: Metric
          ) -> GridVerdict:
    n = len(first[SHARE])
    mv = confirm(judge(_cells(first), m), judge(_cells(fresh, first=n), m))
    return GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [m], [
        VerdictRow("owner-crash", 12, "1x4-hot", 0.0, n, [mv], rate=1200.0)], 4 * n, 0, 0, n,
        confirm_seeds=n)


def test_a_split_cell_leads_with_the_outcome_most_of_all_seeds_had() -> None:
    # the first 20 seeds: 11 at 0, 9 stopped 23.4 s; the fresh 20: 5 at 0, 15 stopped
    first = {SHARE: [0.0] * 11 + [23_400.0] * 9, KIP848: [45_100.0 + i for i in range(20)]}
    fresh = {SHARE: [0.0] * 5 + [23_300.0] * 15, KIP848: [44_100.0 + i for i in range(20)]}
    g = _grid(first, fresh, DOWN)
    (mv,) = g.rows[0].metrics
    assert mv.verdict == "best" and mv.again is not None and mv.again.verdict == "best"
    before = verdict_md(g)
    assert "★ 0 \\| 23.4 (11 of 20 \\| 9 of 20)" in before  # the first set's counts, 0 first
    all_seed_outcomes([g])
    after = verdict_md(g, cell_note=all_seeds_note)
    # the stop, 24 of the 40 seeds, leads; the median of all 40 beside it; the ★ stays
    every = first[SHARE] + fresh[SHARE]
    assert statistics.median(every) > 0
    assert "★ 23.3 \\| 0 (24 of 40 \\| 16 of 40; median of all 40 seeds 23.3)" in after
    assert mv.verdict == "best" and mv.cells[SHARE].mark == "best"
    # the consumer column does not split: median and range of its first set, as before
    assert not mv.cells[KIP848].split and "| 45.1 |" in after


def test_a_repeated_value_beside_a_wide_gap_is_an_outcome_on_a_consumer_column() -> None:
    # crowd-crash at 12 on 1x4-busy: the consumer group's crashed member was idle on 3 seeds
    lag = [0.0, 0.0, 0.0, 161_668.0, 223_304.0]
    assert len(modes(lag, LAG)) == 1  # the spread rule alone reads "0 (0-223,304)"
    assert share_modes(lag, LAG) == [[0.0, 0.0, 0.0], [161_668.0, 223_304.0]]
    first = {SHARE: [16.6, 13.4, 42.4, 15.0, 17.0], KIP848: lag}
    fresh = {SHARE: [15.0, 14.0, 16.0, 18.0, 12.0], KIP848: [0.0] * 5}
    g = _grid(first, fresh, LAG)
    all_seed_outcomes([g])
    text = verdict_md(g, cell_note=all_seeds_note)
    assert "0 \\| 192,486 (8 of 10 \\| 2 of 10; median of all 10 seeds 0)" in text
    assert f"0 (0{DASH}223,304)" not in text


def test_a_continuous_draw_is_still_one_outcome() -> None:
    # a classic member's metadata refresh, uniform over 0-300 s: no value repeats
    draw = [28_900.0, 70_600.0, 198_000.0, 210_000.0, 220_000.0]
    assert share_modes(draw, DOWN) == [sorted(draw)]
    # a repeated value whose gap is no factor of 2 is one outcome too
    assert len(share_modes([30_000.0, 30_000.0, 30_000.0, 36_000.0, 37_000.0], DOWN)) == 1


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=0,
                max_size=40))
def test_share_modes_partitions_the_values_and_never_splits_less_than_modes(
        values: list[float]) -> None:
    found = share_modes(values, LAG)
    assert sorted(x for o in found for x in o) == sorted(values)
    assert len(found) >= len(modes(values, LAG))
    assert 1 <= len(found) <= 2
    if len(found) == 2:
        assert max(found[0]) < min(found[1])
