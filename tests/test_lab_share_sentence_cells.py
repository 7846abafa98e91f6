"""What a share sentence says about its own cell (``lab.share_marks``): how many partitions
its members are on, and every metric of the cell where the other protocol is better on most
paired seeds (both seed sets), whatever the marks say."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_marks import contrary_clause, share_claims
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, claims, confirm, judge

SHARE, KIP848 = "share:simple", "consumer:uniform"
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", floor=1_000.0,
              scale=1000.0)
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=12.0)
SETTINGS = json.dumps({"group.share.record.lock.duration.ms": 30_000})


def _cells(values: dict[str, list[float]], first: int = 0) -> dict[str, Cell]:
    return {p: Cell({first + i: x for i, x in enumerate(v)}) for p, v in values.items()}


def _mv(m: Metric, first: dict[str, list[float]], fresh: dict[str, list[float]]) -> Any:
    return confirm(judge(_cells(first), m), judge(_cells(fresh, first=5), m))


def _grid(peak_worse: int) -> GridVerdict:
    """rolling-bounce at 12 on 12: the share group's downtime lower on every seed, its lag
    peak higher than the consumer group's by 20 records on ``peak_worse`` of 10 paired seeds
    (by 4, under the floor, on the others)."""
    down = _mv(DOWN, {SHARE: [24_800, 25_600, 26_700, 32_500, 35_000],
                      KIP848: [51_900, 53_300, 62_600, 63_800, 69_600]},
               {SHARE: [26_900, 28_000, 30_000, 33_000, 34_700],
                KIP848: [50_500, 55_000, 58_000, 60_000, 65_800]})
    consumer = [95.0 + i for i in range(10)]
    share = [x + (20 if i < peak_worse else 4) for i, x in enumerate(consumer)]
    peak = _mv(PEAK, {SHARE: share[:5], KIP848: consumer[:5]},
               {SHARE: share[5:], KIP848: consumer[5:]})
    assert (down.verdict == "best" and peak.verdict != "best") or peak_worse == 10
    return GridVerdict("equal-capacity-rolling", "", [SHARE, KIP848], [DOWN, PEAK], [
        VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [down, peak], rate=240.0)],
        20, 0, 0, 5, confirm_seeds=5)


def _runs() -> list[dict[str, Any]]:
    return [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": "1x12-busy",
             "seed": s, "ok": True, "total_partitions": 12, "settings_json": SETTINGS,
             "work": json.dumps({"records_per_s": 20})} for p in (SHARE, KIP848)
            for s in range(10)]


def test_the_sentence_names_its_partitions_and_a_metric_that_goes_the_other_way() -> None:
    g = _grid(peak_worse=9)
    (c,) = [x for x in claims([g]) if x.metric == "resource_downtime_ms"]
    assert "on 12 partitions" not in c.text
    (out,) = share_claims([c], [c], [g], _runs())
    assert out.text.startswith("rolling-bounce, 12 members on 12 partitions")
    # 9 of 10 paired seeds over both sets, one short of the sign test's 10 of 10
    assert ("In the same cell its excess lag peak is worse on 9 of 10 paired seeds (medians "
            "118 against 99.5 records).") in out.text


def test_no_clause_where_the_other_protocol_is_better_on_half_the_seeds_or_fewer() -> None:
    g = _grid(peak_worse=5)
    (c,) = [x for x in claims([g]) if x.metric == "resource_downtime_ms"]
    assert contrary_clause(c, [g]) == ""
    assert "worse on" not in share_claims([c], [c], [g], _runs())[0].text
    assert "worse on 6 of 10" in contrary_clause(c, [_grid(peak_worse=6)])
