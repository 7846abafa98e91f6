"""The share page's answers to the twelfth outside share review (docs/lab.md): a note quotes a
row's mark as its table prints it (☆ where the mark rests on the paired sign test alone), and
a range moved to the note names its cell."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_marks import _figure_movables, equal_members_clause
from groupcoord.lab.verdict import (
    PAIRED_MARK,
    Cell,
    Claim,
    GridVerdict,
    VerdictRow,
    judge,
    mark_words,
)

SHARE, KIP848 = "share:simple", "consumer:uniform"
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=50.0)
#: workload -> (partitions, records/s a partition)
LOADS = {"1x4-busy": (4, 60), "1x12-busy": (12, 20)}


def _run(protocol: str, size: int, workload: str, seed: int, lag: float) -> dict[str, Any]:
    parts, rate = LOADS[workload]
    work = {"max_poll_records": 100, "processing_ms": {"dist": "exponential", "mean": 10},
            "records_per_s": rate}
    return {"protocol": protocol, "scenario": "rolling-bounce", "size": size,
            "workload": workload, "seed": seed, "ok": True, "total_partitions": parts,
            "work": json.dumps(work), "lag_record_s": lag}


#: rolling-bounce at 4 on 4 (1x4-busy), 10 seeds: share:simple lower on every paired seed,
#: the two ranges overlapping (the share-rolling row at 4 members: ☆ in its table)
FOUR = {SHARE: [2_013, 3_000, 4_500, 5_500, 6_300, 6_900, 7_400, 8_800, 10_000, 11_514],
        KIP848: [6_641, 9_000, 11_000, 14_000, 16_000, 17_300, 21_000, 30_000, 45_000, 59_829]}
#: the sentence's own cell at 12 on 4, 10 seeds: ranges separated
TWELVE = {SHARE: [11.5, 15, 20, 25, 27, 30.3, 33, 38, 42, 46.5],
          KIP848: [2_529, 4_000, 5_500, 6_000, 7_016, 9_460, 10_000, 12_000, 13_000, 14_787]}


def _claim() -> Claim:
    return Claim("share-rolling", "rolling-bounce, 12 members: share:simple has the lowest "
                 "excess lag, 28.6 record·s (range 11.5\u201346.5 record·s) against 8,238 "
                 "record·s (2,529\u201314,787 record·s) for consumer:uniform (the runner-up).",
                 "", "lag_record_s", "rolling-bounce", 12, SHARE, KIP848, workload="1x4-busy")


def _runs() -> list[dict[str, Any]]:
    return [_run(p, size, "1x4-busy", s, v) for size, cells in ((4, FOUR), (12, TWELVE))
            for p, vs in cells.items() for s, v in enumerate(vs)]


def _verdicts() -> list[GridVerdict]:
    rows = [VerdictRow("rolling-bounce", size, "1x4-busy", 0.0, 10, [judge(
        {p: Cell(dict(enumerate(v))) for p, v in cells.items()}, LAG)])
        for size, cells in ((4, FOUR), (12, TWELVE))]
    return [GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], rows, 10, 0, 0, 10)]


def test_a_notes_mark_of_another_cell_is_that_cells_mark_in_its_table() -> None:
    """The 4-on-4 row's win rests on the paired sign test (its ranges overlap): the table
    prints ☆, and so does the note that quotes it, never ★."""
    verdicts = _verdicts()
    four = verdicts[0].rows[0].metrics[0]
    assert four.verdict == "best" and four.paired, four
    assert mark_words(four) == f"{PAIRED_MARK} {SHARE}"
    twelve = verdicts[0].rows[1].metrics[0]
    assert twelve.verdict == "best" and not twelve.paired
    assert mark_words(twelve) == f"\u2605 {SHARE}"
    text = equal_members_clause(_claim(), verdicts, _runs())
    assert text.startswith(f"At 4 on 4 (1x4-busy): {PAIRED_MARK} share:simple, "), text
    assert "\u2605" not in text, text


def test_a_range_in_the_note_names_its_cell() -> None:
    """The sentence's ranges, moved to the note after other cells' numbers, say they are the
    12-on-4 cell's."""
    notes = [note for _, _, note in _figure_movables(_claim().text, _claim(), _runs())]
    assert notes == ["share:simple's range at 12 on 4 (1x4-busy) 11.5\u201346.5 record·s",
                     "consumer:uniform's range at 12 on 4 (1x4-busy) 2,529\u201314,787 record·s"]


def test_a_quoted_cell_is_at_the_tables_seed_basis_and_says_it() -> None:
    """The load control's consumer cell quoted at its table's median (the first seed set, what
    the mark rests on), not at both sets' (the review: 2,672 quoted where the table shows
    2,662), with its seed counts."""
    from dataclasses import replace

    from groupcoord.lab.share_marks import load_control_clause

    def mv(values: list[float]) -> Any:
        return judge({KIP848: Cell(dict(enumerate(values)))}, LAG, min_seeds=1)

    busy = mv([2_600, 2_603, 2_610, 2_590, 2_620])
    light = mv([2_662, 2_640, 2_700, 2_650, 2_670])
    # the fresh set's seeds, higher: over both sets the median would be 2,672
    light = replace(light, again=mv([2_680, 2_690, 2_700, 2_675, 2_678]))
    light.again.cells = {KIP848: Cell({k + 5: v for k, v in enumerate(
        [2_680, 2_690, 2_700, 2_675, 2_678])})}
    rows = [VerdictRow("rolling-bounce", 12, w, 0.0, 5, [x])
            for w, x in (("1x4-busy", busy), ("1x4-light", light))]
    grids = [GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], rows[:1], 10, 0, 0, 5),
             GridVerdict("share-light-rolling", "", [KIP848], [LAG], rows[1:], 10, 0, 0, 5)]
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": w,
             "ok": True, "total_partitions": 4} for p in (SHARE, KIP848)
            for w in ("1x4-busy", "1x4-light")]
    text = load_control_clause(_claim(), grids, runs)
    assert text == ("At a share member's load per member (1x4-light, share-light-rolling): "
                    "consumer:uniform 2,662 against 2,603 record·s, higher on 5 of 5 paired "
                    "seeds (medians of 5 and 5 seeds, the tables' first seed set)."), text


def test_a_split_cells_median_says_its_seeds() -> None:
    """A split cell's outcomes count both seed sets (20 seeds), its median is the first set's
    (10): the words say so, not "median of all 20"."""
    from groupcoord.lab.verdict import _quote

    first = [3.0] * 9 + [7_051.0]
    c = Cell(dict(enumerate(first)))
    c.outcomes = [[3.0] * 19, [7_051.0]]
    text = _quote(Metric("lag_peak", "excess lag peak", "records", floor=10.0), c)
    assert "median of the first seed set's 10: 3 records" in text, text
    assert "median of all 20" not in text


def test_a_rows_dropped_seeds_say_which_seed_set_they_left() -> None:
    """Seeds dropped from every protocol of a row are counted per seed set: the numbers shown
    are the first set's, and a drop from the fresh (confirming) set says so."""
    from groupcoord.lab.report import _dropped_set
    from groupcoord.lab.verdict import grid_verdict

    def run(protocol: str, rep: int, caught_up: bool = True) -> dict[str, Any]:
        return {"protocol": protocol, "scenario": "rolling-bounce", "size": 12,
                "workload": "1x4-busy", "fault_rate": 0.0, "seed": 100 + rep,
                "replicate": rep, "ok": True, "caught_up": caught_up,
                "lag_record_s": (20.0 if protocol == SHARE else 8_000.0) + rep}

    grid = {"name": "share-rolling", "protocols": [SHARE, KIP848], "metrics": ["lag_record_s"],
            "seeds": 5, "confirm_seeds": 5}
    fresh_only = [run(p, k, caught_up=not (p == KIP848 and k in (6, 9)))
                  for p in (SHARE, KIP848) for k in range(10)]
    (row,) = grid_verdict(grid, fresh_only).rows
    assert (row.dropped, row.dropped_fresh) == (2, 2)
    assert _dropped_set(row) == (" of the fresh (confirming) seed set only; the numbers shown "
                                 "keep all their seeds")
    both = [run(p, k, caught_up=not (p == KIP848 and k in (2, 9)))
            for p in (SHARE, KIP848) for k in range(10)]
    (row,) = grid_verdict(grid, both).rows
    assert (row.dropped, row.dropped_fresh) == (2, 1)
    assert _dropped_set(row) == (", 1 of the first seed set (the numbers shown) and 1 of the "
                                 "fresh (confirming) set")
    (row,) = grid_verdict({**grid, "confirm_seeds": 0, "seeds": 10}, both).rows
    assert row.dropped == 2 and _dropped_set(row) == ""


def test_what_the_share_wins_need_opens_the_page(monkeypatch: Any, tmp_path: Any) -> None:
    """The share wins' condition is the page's first statement, before "How to read the
    tables" and every numbered sentence, in the summary and the HTML page alike, once."""
    from groupcoord.lab import report

    need = "What the share wins need: at 12 members on 4 partitions, 1 confirmed share win."
    monkeypatch.setattr(report, "fetchers_line", lambda verdicts, runs: need)
    meta = {"spec": "share", "runs": 0, "cells": 0}
    md = report._sweep_md(meta, [], [], [], [])
    assert md.count(need) == 1
    assert md.index(need) < md.index("## How to read the tables") < md.index(
        "## What the tables show")
    page = report._sweep_html(meta, [], [], [], tmp_path, [])
    assert page.count(need) == 1
    assert page.index(need) < page.index("<h2>How to read the tables</h2>") < page.index(
        "<h2>What the tables show</h2>")


def test_the_reading_rule_is_short_labelled_paragraphs_with_every_word_kept() -> None:
    from groupcoord.lab.report import _RULE_PARTS, labelled_paragraphs, method_text

    paras = [p for p in method_text([], []) if p]
    assert any(p.startswith("Cells and seeds: Cells show the median") for p in paras)
    assert any(p.startswith("★ and ☆: A protocol is marked ★ best") for p in paras)
    assert max(len(p.split()) for p in paras) < 200
    rule = ("Cells show the median over the seeds. A protocol is marked ★ best when so. "
            "= marks the protocols tied. Beside each floor, x. Where a protocol's seeds fall apart, y. "
            "Multiple comparisons: z. Where the chance figure does not apply: w. The tables "
            "carry 3 marks. Confirmation on fresh seeds: v.")
    out = labelled_paragraphs(rule)
    assert len(out) == len(_RULE_PARTS)
    labels = [label for _, label in _RULE_PARTS]
    assert " ".join(p.removeprefix(lb) for p, lb in zip(out, labels, strict=True)) == rule
