"""A row the verdict test cannot judge because its lowest cost is under the floor, with
medians far apart (records processed twice after a crash at 4 members: a share group's 0
against a consumer group's 203), says which side is higher on how many paired seeds instead of
reading as a tie (the tenth outside share review)."""

from __future__ import annotations

from groupcoord.lab.findings import Metric
from groupcoord.lab.report import _verdict_word
from groupcoord.lab.verdict import Cell, judge

TWICE = Metric("records_reprocessed", "records processed twice", "records", floor=10.0)


def _mv(share: list[float], consumer: list[float]):  # type: ignore[no-untyped-def]
    return judge({"share:simple": Cell(dict(enumerate(share))),
                  "consumer:uniform": Cell(dict(enumerate(consumer)))}, TWICE)


def test_a_lowest_under_floor_with_medians_apart_says_who_is_higher_on_how_many_seeds() -> None:
    mv = _mv([0, 0, 0, 0, 0], [1, 203, 239, 215, 180])
    word = _verdict_word(mv)
    assert word == ("not separated: consumer:uniform higher on 4 of 5 paired seeds than "
                    "share:simple (the lowest under floor)"), word


def test_medians_within_the_floor_keep_the_old_words() -> None:
    mv = _mv([0, 0, 0, 0, 0], [1, 5, 12, 3, 0])
    assert "higher on" not in _verdict_word(mv), _verdict_word(mv)
