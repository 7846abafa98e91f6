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
    # the eleventh outside review: the grid's null result said as one, in the paper page's
    # words ("no difference" only where no metric separates), with its count of rows
    assert line.startswith("share (crowd-crash and bounce at 12 members): no difference: no "
                           "metric separates the two groups in its 2 rows. When")
    assert "consumer:uniform's excess lag is 0 on 8 of 10 seeds (an idle member) and " \
           "192,486 record·s on 2" in line
    assert "a small cost on every one of its 10 seeds" in line
    assert len(line.split()) <= 60
    # another grid's name, or a marked row: no such sentence
    assert share_grid_line([g], _runs(), grid="share-rolling") == ""


def test_a_share_sentence_says_its_consumer_side_at_a_share_members_load() -> None:
    """The load control (1x4-light): the consumer group at 20 % busy per working member,
    paired on seed with the sentence's cell (1x4-busy, 60 %)."""
    from groupcoord.lab.share_marks import load_control_clause
    from groupcoord.lab.verdict import Claim

    def row(workload: str, values: dict[str, list[float]]) -> VerdictRow:
        mv = judge({p: Cell(dict(enumerate(v))) for p, v in values.items()}, LAG)
        return VerdictRow("rolling-bounce", 12, workload, 0.0, 5, [mv])

    busy = row("1x4-busy", {SHARE: [34.4, 21.0, 46.5, 30.0, 40.0],
                            KIP848: [4_989.0, 9_460.0, 14_787.0, 8_000.0, 12_000.0]})
    light = row("1x4-light", {KIP848: [1_836.0, 2_261.0, 5_150.0, 2_000.0, 2_500.0]})
    grids = [GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], [busy], 10, 0, 0, 5),
             GridVerdict("share-light-rolling", "", [KIP848], [LAG], [light], 5, 0, 0, 5)]
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": w,
             "ok": True, "total_partitions": 4} for p in (SHARE, KIP848)
            for w in ("1x4-busy", "1x4-light")]
    c = Claim("share-rolling", "", "", "lag_record_s", "rolling-bounce", 12, SHARE, KIP848,
              workload="1x4-busy")
    assert load_control_clause(c, grids, runs) == (
        "At a share member's load per member (1x4-light, share-light-rolling): "
        "consumer:uniform 2,261 against 9,460 record·s, lower on 5 of 5 paired seeds "
        "(medians of 5 and 5 seeds, the tables' first seed set).")
    # no control grid on the page: nothing
    assert load_control_clause(c, grids[:1], runs) == ""


def test_the_load_control_stands_only_beside_a_cell_of_its_production_rate() -> None:
    """The tenth outside review: the light control (60 records/s a partition) was set beside
    owner-kill on 1x4-hot (300 records/s), so its gap was the production rate's. The control
    changes only a record's time: beside a cell of another rate it says nothing."""
    import json

    from groupcoord.lab.share_marks import load_control_clause
    from groupcoord.lab.verdict import Claim

    peak = Metric("lag_peak", "excess lag peak", "records", floor=12.0)

    def row(workload: str, values: dict[str, list[float]]) -> VerdictRow:
        mv = judge({p: Cell(dict(enumerate(v))) for p, v in values.items()}, peak)
        return VerdictRow("owner-kill", 12, workload, 0.0, 5, [mv])

    rates = {"1x4-busy": 60, "1x4-hot": 300, "1x4-light": 60}
    runs = [{"protocol": p, "scenario": "owner-kill", "size": 12, "workload": w, "ok": True,
             "total_partitions": 4, "work": json.dumps({"records_per_s": r})}
            for p in (SHARE, KIP848) for w, r in rates.items()]
    light = row("1x4-light", {KIP848: [2_620.0, 2_662.0, 2_791.0, 2_650.0, 2_700.0]})
    for workload, own, said in (
            ("1x4-hot", [12_997.0, 13_121.0, 14_308.0, 13_000.0, 13_500.0], False),
            ("1x4-busy", [2_504.0, 2_613.0, 2_746.0, 2_550.0, 2_600.0], True)):
        cell = row(workload, {SHARE: [3.0, 2.0, 7.0, 4.0, 5.0], KIP848: own})
        grids = [GridVerdict("owner", "", [SHARE, KIP848], [peak], [cell], 10, 0, 0, 5),
                 GridVerdict("share-light", "", [KIP848], [peak], [light], 5, 0, 0, 5)]
        c = Claim("owner", "", "", "lag_peak", "owner-kill", 12, SHARE, KIP848,
                  workload=workload)
        text = load_control_clause(c, grids, runs)
        assert bool(text) is said, (workload, text)
        if said:
            assert "consumer:uniform 2,662 against 2,600 records" in text
            assert "higher on 5 of 5 paired seeds" in text, text


def test_beside_a_cell_of_another_rate_the_load_control_names_its_own_rates_baseline() -> None:
    """The tenth outside review's baseline: beside owner-kill on 1x4-hot the light consumer
    (60 records/s a partition) is set against the consumer on 1x4-busy (the same 60
    records/s), 2,672 against 2,613 on the page, never against 1x4-hot's 13,121."""
    import json

    from groupcoord.lab.share_marks import load_control_clause
    from groupcoord.lab.verdict import Claim

    peak = Metric("lag_peak", "excess lag peak", "records", floor=12.0)

    def row(workload: str, values: dict[str, list[float]]) -> VerdictRow:
        mv = judge({p: Cell(dict(enumerate(v))) for p, v in values.items()}, peak)
        return VerdictRow("owner-kill", 12, workload, 0.0, 5, [mv])

    # 1x4-poison: the same production with poison records, first by name: not a baseline
    rates = {"1x4-busy": 60, "1x4-hot": 300, "1x4-light": 60, "1x4-a-poison": 60}
    runs = [{"protocol": p, "scenario": "owner-kill", "size": 12, "workload": w, "ok": True,
             "total_partitions": 4, "work": json.dumps(
                 {"records_per_s": r, **({"poison_rate": 0.0002} if "poison" in w else {})})}
            for p in (SHARE, KIP848) for w, r in sorted(rates.items())]
    poison = row("1x4-a-poison", {SHARE: [3.0, 2.0, 7.0, 4.0, 5.0],
                                  KIP848: [1_500.0, 1_514.0, 1_600.0, 1_400.0, 1_450.0]})
    light = row("1x4-light", {KIP848: [2_620.0, 2_672.0, 2_791.0, 2_650.0, 2_700.0]})
    busy = row("1x4-busy", {SHARE: [3.0, 2.0, 7.0, 4.0, 5.0],
                            KIP848: [2_504.0, 2_613.0, 2_746.0, 2_550.0, 2_600.0]})
    hot = row("1x4-hot", {SHARE: [3.0, 2.0, 7.0, 4.0, 5.0],
                          KIP848: [12_997.0, 13_121.0, 14_308.0, 13_000.0, 13_500.0]})
    grids = [GridVerdict("lock-rate-owner-kill", "", [SHARE, KIP848], [peak], [hot],
                         10, 0, 0, 5),
             GridVerdict("owner", "", [SHARE, KIP848], [peak], [poison, busy], 10, 0, 0, 5),
             GridVerdict("share-light", "", [KIP848], [peak], [light], 5, 0, 0, 5)]
    c = Claim("lock-rate-owner-kill", "", "", "lag_peak", "owner-kill", 12, SHARE, KIP848,
              workload="1x4-hot")
    text = load_control_clause(c, grids, runs)
    assert text.startswith("At a share member's load per member (1x4-light, share-light): "
                           "consumer:uniform 2,672 against 2,600 records on 1x4-busy "), text
    assert "higher on 5 of 5 paired seeds" in text, text
    assert "13,121" not in text and "13,500" not in text
