"""No ratio over a median under the floor (the eleventh outside share review: "medians 215.5x
apart" over a share median of 1 record, under the 10-record floor, is no meaningful ratio):
a share grid's far-apart metric beside its no-difference sentence says "far apart" there."""

from __future__ import annotations

from groupcoord.lab.findings import Metric
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge, no_difference

SHARE, KIP848 = "share:simple", "consumer:uniform"
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=50.0)
TWICE = Metric("records_reprocessed", "records processed twice", "records", floor=10.0)


def _grid(share: list[float]) -> GridVerdict:
    def mv(m: Metric, values: dict[str, list[float]]):  # type: ignore[no-untyped-def]
        return judge({p: Cell(dict(enumerate(v))) for p, v in values.items()}, m)

    row = VerdictRow("crowd-crash", 4, "1x12-busy", 0.0, 5, [
        mv(PEAK, {SHARE: [2_600.0, 2_700.0, 2_500.0, 2_800.0, 2_650.0],
                  KIP848: [2_664.0, 2_470.0, 3_017.0, 2_600.0, 2_700.0]}),
        mv(TWICE, {SHARE: share, KIP848: [216.0, 3.0, 288.0, 200.0, 250.0]})])
    return GridVerdict("equal-capacity", "", [SHARE, KIP848], [PEAK, TWICE], [row], 10, 0, 0,
                       5)


def test_no_ratio_where_the_smaller_median_is_under_the_floor() -> None:
    c = no_difference(_grid([1.0, 0.0, 2.0, 1.0, 5.0]))
    assert c is not None
    assert "records processed twice medians far apart, not separated: share:simple 1 " \
           "records, consumer:uniform 216 records" in c.text, c.text
    assert "216.0x" not in c.text


def test_a_ratio_where_both_medians_are_over_the_floor() -> None:
    c = no_difference(_grid([12.0, 0.0, 20.0, 15.0, 30.0]))
    assert c is not None
    assert "records processed twice medians 14.4x apart" in c.text, c.text
