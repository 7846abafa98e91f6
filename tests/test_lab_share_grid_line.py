"""The share grid's own sentence (ninth outside review of the share page): crowd-crash and
bounce do not separate the two groups; a crashed consumer member costs 0 on most seeds (an
idle member) and much on a few, a share group a small cost on every seed."""

from __future__ import annotations

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_marks import share_grid_line
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, confirm, judge

SHARE, KIP848 = "share:simple", "consumer:uniform"
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=24.0)


def _row(scenario: str, first: dict[str, list[float]], fresh: dict[str, list[float]]
         ) -> VerdictRow:
    def cells(v: dict[str, list[float]], at: int) -> dict[str, Cell]:
        return {p: Cell({at + i: x for i, x in enumerate(xs)}) for p, xs in v.items()}

    mv = confirm(judge(cells(first, 0), LAG), judge(cells(fresh, 5), LAG))
    return VerdictRow(scenario, 12, "1x4-busy", 0.0, 5, [mv])


def _runs() -> list[dict[str, object]]:
    return [{"protocol": p, "scenario": s, "size": 12, "workload": "1x4-busy", "ok": True,
             "total_partitions": 4} for p in (SHARE, KIP848) for s in ("crowd-crash", "bounce")]


def test_the_share_grid_says_it_separates_nothing_and_how_a_crash_costs_each_side() -> None:
    crash = _row("crowd-crash",
                 {SHARE: [37.9, 6.5, 73.7, 20.0, 50.0], KIP848: [0.0, 0.0, 0.0, 161_668.0, 0.0]},
                 {SHARE: [19.0, 30.0, 40.0, 12.0, 60.0], KIP848: [0.0, 223_304.0, 0.0, 0.0, 0.0]})
    bounce = _row("bounce", {SHARE: [30.0, 40.0, 50.0, 60.0, 70.0],
                             KIP848: [35.0, 45.0, 55.0, 65.0, 75.0]},
                  {SHARE: [30.0, 40.0, 50.0, 60.0, 70.0], KIP848: [35.0, 45.0, 55.0, 65.0, 75.0]})
    g = GridVerdict("share", "", [SHARE, KIP848], [LAG], [crash, bounce], 40, 0, 0, 5,
                    confirm_seeds=5)
    line = share_grid_line([g], _runs())
    assert line.startswith("share (crowd-crash and bounce at 12 members): no row separates "
                           "share:simple from consumer:uniform.")
    assert "consumer:uniform's excess lag is 0 on 8 of 10 seeds (an idle member) and " \
           "192,486 record·s on 2" in line
    assert "a small cost on every one of its 10 seeds" in line
    assert len(line.split()) <= 60
    # another grid's name, or a marked row: no such sentence
    assert share_grid_line([g], _runs(), grid="share-rolling") == ""
