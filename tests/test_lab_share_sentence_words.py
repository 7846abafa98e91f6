"""A share sentence is at most ``lab.verdict.MAX_WORDS`` words as the page prints it: the
clauses ``lab.share_marks.share_claims`` adds (a heartbeat companion's reading, the share
group's own rows at one member per partition, a kill's lost host, the lost hosts above the lock
limit, the ranges, the same members' seed counts, the same cell's contrary metrics) go whole,
in that order, to the note under it (``lab.report.fitted``), nothing dropped. A grid whose cells
a sentence's same-members comparison quotes (the owner grid's same-members companion) gets no
sentence of its own: the quoting sentence names it."""

from __future__ import annotations

from groupcoord.lab.report import answers_text, condition_letters, fitted, protocol_names, sentence_text
from groupcoord.lab.verdict import MAX_WORDS, words
from tests.test_lab_share_equal_members import _grids, _runs, _sentences


def _page() -> tuple[list, list]:
    verdicts = _grids()
    return fitted(_sentences(verdicts, _runs()), verdicts), verdicts


def test_every_share_sentence_is_within_60_words_as_printed() -> None:
    found, verdicts = _page()
    letters, names = condition_letters(found), protocol_names(found, verdicts)
    for c in found:
        printed = sentence_text(c, letters, names)
        assert words(printed) <= MAX_WORDS, (words(printed), printed)


def test_the_moved_clauses_are_whole_in_the_note_under_the_sentence() -> None:
    found, _ = _page()
    kill = next(c for c in found if c.scenario == "owner-kill")
    # the kill and its lost host lead the sentence (the tenth outside share review); the
    # same-members comparison and the claim's own ranges go whole to the note
    assert kill.text.startswith("owner-kill, 12 members on 4 partitions (1x4-hot): "
                                "share:simple 3 (wire: "), kill.text
    assert "against consumer:uniform 13,121 (consumer's kill not run on the wire)" in kill.text
    assert ("A lost host or hung process (owner-crash) there: share:simple 7,046, worse than "
            "consumer:uniform on 12 partitions (4,557) on every seed") in " ".join(
        (kill.text, *kill.caveats))  # over the words with the wire's figure: in the note
    note = "; ".join(kill.caveats)
    assert ("owner-kill, the same 12 members: share:simple on 4 partitions 3 against "
            "consumer:uniform on 12") in note, note
    assert "share:simple has the lowest lag peak, 3 records" in note
    # the kill's lost host's evidence, whole, in the note
    lost = ("A lost host (owner-crash) in the same cell: 7,046 against 13,526 records "
            "(medians of 5 seeds, the table's); "
            "against consumer:uniform on 12 (1x12-hot) 4,557 records, lower on every seed "
            "(4,403\u20134,746 against 7,035\u20137,058; medians of 5 and 5 seeds, each table's, "
            "unpaired)")
    assert lost in note, note
    # the share group's own row at 12 on 12, whole, in the note
    assert "At 12 on 12 (1x12-hot): a tie (no mark), 4,618 against 4,588 records" in note


def test_the_same_members_companion_gets_no_sentence_when_another_quotes_its_cells() -> None:
    found, verdicts = _page()
    # owner-equal's rows are the kill sentence's same members on 12 partitions: no
    # no-difference sentence of its own, its name in the sentence that quotes them
    assert [c.grid for c in found] == ["lock-rate-owner-kill"], [c.grid for c in found]
    (kill,) = found
    assert "consumer:uniform on 12 (owner-equal, 1x12-hot)" in "; ".join(kill.caveats)
    assert "owner-equal: the note under 1" in answers_text(found, verdicts)
