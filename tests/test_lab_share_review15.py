"""The share page's answers to the fifteenth outside share review (docs/lab.md): one count of
a cell's seeds in the share wins' line and the lock-limit note."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_wins import fetchers_line
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge

SHARE, KIP848 = "share:simple", "consumer:uniform"
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=10.0)
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0, floor=1000.0)


def test_the_share_wins_line_counts_a_stopped_cell_over_the_share_groups_own_runs() -> None:
    """owner-crash at 12 on 1x4-busy80: a consumer run that never caught up drops its seed
    from every protocol's table cell (39 seeds), but the share group ran and stopped on all
    40; the lock-limit note counts the share group's runs (40 of 40), so the share wins'
    line says the same 40 of 40, not 39 of 39."""
    share_down = [5_005.0 + 2 * i for i in range(40)]
    consumer_down = [44_000.0 + 100 * i for i in range(40)]
    peak_s = [1_700.0 + i for i in range(40)]
    peak_c = [2_600.0 + 5 * i for i in range(40)]
    kept = [s for s in range(40) if s != 20]  # seed 20: the consumer's run never caught up

    def mv(m: Metric, vals: dict[str, list[float]]) -> Any:
        first = judge({p: Cell({s: v[s] for s in kept[:20]}) for p, v in vals.items()}, m)
        first.again = judge({p: Cell({s: v[s] for s in kept[20:]}) for p, v in vals.items()},
                            m)
        return first

    row = VerdictRow("owner-crash", 12, "1x4-busy80", 0.0, 20, [
        mv(PEAK, {SHARE: peak_s, KIP848: peak_c}),
        mv(DOWN, {SHARE: share_down, KIP848: consumer_down})])
    g = GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [PEAK, DOWN], [row], 80, 0, 0,
                    20, confirm_seeds=20)
    work = json.dumps({"records_per_s": 80})
    runs: list[dict[str, Any]] = [
        {"protocol": p, "scenario": "owner-crash", "size": 12, "workload": "1x4-busy80",
         "seed": s, "ok": p == SHARE or s != 20, "fault_rate": 0.0, "total_partitions": 4,
         "total_topics": 1, "work": work,
         "work_model": "80 rec/s, exponential:2.5 ms/rec, max.poll.records 100",
         "resource_downtime_ms": (share_down if p == SHARE else consumer_down)[s]}
        for p in (SHARE, KIP848) for s in range(40)]
    line = fetchers_line([g], runs)
    assert "owner-crash 1x4-busy80: 5.04 s on 40 of 40 seeds" in line, line
    assert "39 of 39" not in line, line


def test_the_static_clause_says_the_restarts_its_win_was_measured_at() -> None:
    """The fifteenth outside share review: with 1-3 s restarts instead of the drawn 2-10 s
    the share group and static consumer members tie, so "the win survives" says the restart
    downtime its cell ran (the runs' scenario definition) and that shorter ones were not
    run."""
    from groupcoord.lab.share_marks import family_key, share_claims
    from groupcoord.lab.verdict import claims

    static = "consumer:uniform@static"
    down = Metric("resource_downtime_ms", "resource downtime", "resource·s", scale=1000.0,
                  floor=500.0)

    def row(values: dict[str, list[float]]) -> VerdictRow:
        return VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [judge(
            {p: Cell(dict(enumerate(v))) for p, v in values.items()}, down)])

    share_down = [26_685.0, 24_810, 25_554, 32_384, 35_027]
    verdicts = [
        GridVerdict("equal-capacity-rolling", "", [SHARE, KIP848], [down], [
            row({SHARE: share_down, KIP848: [62_600, 51_862, 60_000, 65_000, 69_609]})],
            10, 0, 0, 5),
        GridVerdict("equal-capacity-rolling-static", "", [SHARE, static], [down], [
            row({SHARE: share_down, static: [70_000, 71_000, 72_000, 73_000, 74_000]})],
            10, 0, 0, 5)]
    work = {"max_poll_records": 100, "processing_ms": {"dist": "exponential", "mean": 10},
            "records_per_s": 20}
    sdef = {"draw": {"down_ms": [2000, 10000], "interval_ms": [12000, 18000]},
            "events": [{"at_ms": 30000, "kind": "rolling-bounce", "down_ms": 3000,
                        "interval_ms": 15000}]}
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": "1x12-busy",
             "seed": s, "ok": True, "total_partitions": 12, "fault_rate": 0.0,
             "settings_json": "{}", "work": json.dumps(work), "scenario_def": json.dumps(sdef)}
            for p in (SHARE, KIP848, static) for s in range(5)]
    (c,) = share_claims(claims(verdicts, family_of=family_key(runs)),
                        claims(verdicts, limit=100), verdicts, runs)
    assert ("Against static consumer members (KIP-345; equal-capacity-rolling-static, the same "
            "seeds, restarts 2-10 s down, drawn per seed): \u2605 share:simple, 26.7 against 72 "
            "resource\u00b7s: the win survives at these restarts (a static member's partitions "
            "wait out its restart; shorter restarts not run).") in c.text, c.text
