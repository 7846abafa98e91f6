"""A split is a split (ninth outside review of the share page): a row where one side is 0 on
most seeds and about 200k record·s on a few reads "split seeds", not "tie? lowest under
floor"; a split cell counts both seed sets in its table and in a sentence that quotes it
alike."""

from __future__ import annotations

from groupcoord.lab.findings import Metric
from groupcoord.lab.report import _verdict_word
from groupcoord.lab.verdict import Cell, MetricVerdict, _quote

SHARE, KIP848 = "share:simple", "consumer:uniform"
LAG = Metric("lag_record_s", "lag", "record·s", floor=24.0)


def _split_row() -> MetricVerdict:
    share = Cell(dict(enumerate([37.9, 6.5, 73.7, 20.0, 50.0])))
    consumer = Cell(dict(enumerate([0.0, 0.0, 0.0, 0.0, 161_668.0])))
    # over both seed sets (the page's split cells): 0 on 8 of 10, ~200k on 2
    consumer.outcomes = [[0.0] * 8, [161_668.0, 223_304.0]]
    return MetricVerdict(LAG, {SHARE: share, KIP848: consumer}, "tie", (SHARE, KIP848))


def test_a_tie_with_a_split_side_reads_split_seeds() -> None:
    mv = _split_row()
    assert _verdict_word(mv) == "split seeds"
    # the same row without the split: the test cannot tell the lowest from the others, and
    # the medians (37.9 against 0) differ by more than the floor: who is higher, on how many
    mv.cells[KIP848].outcomes = []
    assert _verdict_word(mv) == ("not separated: share:simple higher on 2 of 5 paired seeds "
                                 "than consumer:uniform (the lowest under floor)")


def test_a_sentence_quotes_a_split_cell_over_the_seeds_its_outcomes_count() -> None:
    text = _quote(LAG, _split_row().cells[KIP848])
    assert "0 record·s on 8 of 10 seeds" in text and "on 2 of 10 seeds" in text
