"""The share page's answers to the thirteenth outside share review (docs/lab.md): the count of
share wins split by what each needs, each win at one member per partition with its mark, its
load and whether it holds at 20 % busy."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_wins import fetchers_line
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge

SHARE, KIP848 = "share:simple", "consumer:uniform"
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=10.0)
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=100.0)
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0, floor=1000.0)
#: workload -> (partitions, records/s a partition, ms a record)
WORK = {"1x4-busy": (4, 60, 10), "1x4-light": (4, 60, 3.333), "1x4-hot": (4, 300, 2)}


def _runs(cells: list[tuple[str, int, str]], protocols: tuple[str, ...] = (SHARE, KIP848)
          ) -> list[dict[str, Any]]:
    out = []
    for scenario, size, workload in cells:
        parts, rate, ms = WORK[workload]
        for p in protocols:
            out.append({"protocol": p, "scenario": scenario, "size": size,
                        "workload": workload, "seed": 1, "ok": True, "fault_rate": 0.0,
                        "total_partitions": parts, "total_topics": 1,
                        "work_model": f"{rate} rec/s, exponential:{ms} ms/rec, "
                                      "max.poll.records 100",
                        "work": json.dumps({"records_per_s": rate})})
    return out


def _row(scenario: str, size: int, workload: str, values: dict[Metric, dict[str, list[float]]],
         ) -> VerdictRow:
    return VerdictRow(scenario, size, workload, 0.0, 10, [
        judge({p: Cell(dict(enumerate(v))) for p, v in vs.items()}, m)
        for m, vs in values.items()])


#: owner-crash at 12 on 1x4-hot (lock-rate-owner): the share group stops its partition 23.4 s
#: on every seed (the lock limit), the consumer group 44-46 s (its session timeout)
HOT_DOWN = {SHARE: [23_350 + 10 * i for i in range(10)],
            KIP848: [44_000 + 200 * i for i in range(10)]}
HOT_PEAK = {SHARE: [7_030 + 3 * i for i in range(10)],
            KIP848: [13_400 + 20 * i for i in range(10)]}
#: owner-kill at 12 on 1x4-busy (owner): the share group stops nothing
KILL_DOWN = {SHARE: [0.0] * 10, KIP848: [44_000 + 100 * i for i in range(10)]}
#: rolling-bounce at 4 on 4: at 60 % busy (share-rolling, 1x4-busy) share lower on every seed,
#: the ranges overlapping (☆); at 20 % busy (1x4-light) lower on 8 of 10 (no mark) on excess
#: lag and on 10 of 10 on partitions stopped
BUSY_LAG = {SHARE: [2_013, 3_000, 4_500, 5_500, 6_300, 6_900, 7_400, 8_800, 10_000, 11_514],
            KIP848: [6_641, 9_000, 11_000, 14_000, 16_000, 17_300, 21_000, 30_000, 45_000,
                     59_829]}
BUSY_DOWN = {SHARE: [5_000 + 1_000 * i for i in range(10)],
             KIP848: [12_000 + 2_000 * i for i in range(10)]}
LIGHT_LAG = {SHARE: [499, 700, 1_000, 1_300, 1_400, 1_434, 1_800, 2_600, 3_000, 3_294],
             KIP848: [416, 600, 1_900, 2_300, 2_500, 2_724, 3_100, 3_600, 4_500, 5_370]}
LIGHT_DOWN = {SHARE: [6_400 + 1_100 * i for i in range(10)],
              KIP848: [7_700 + 2_300 * i for i in range(10)]}


def _verdicts() -> list[GridVerdict]:
    owner = GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [PEAK, DOWN], [
        _row("owner-crash", 12, "1x4-hot", {PEAK: HOT_PEAK, DOWN: HOT_DOWN})], 20, 0, 0, 10,
        confirm_seeds=10)
    kill = GridVerdict("owner", "", [SHARE, KIP848], [DOWN], [
        _row("owner-kill", 12, "1x4-busy", {DOWN: KILL_DOWN})], 20, 0, 0, 10, confirm_seeds=10)
    rolling = GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG, DOWN], [
        _row("rolling-bounce", 4, "1x4-busy", {LAG: BUSY_LAG, DOWN: BUSY_DOWN})], 20, 0, 0, 10,
        confirm_seeds=10)
    light = GridVerdict("share-rolling-light", "", [SHARE, KIP848], [LAG, DOWN], [
        _row("rolling-bounce", 4, "1x4-light", {LAG: LIGHT_LAG, DOWN: LIGHT_DOWN})], 20, 0, 0,
        10, confirm_seeds=10)
    fast = (f"{SHARE}@hb1s", f"{KIP848}@hb1s")
    hb = GridVerdict("owner-hb1s", "", list(fast), [DOWN], [
        _row("owner-kill", 12, "1x4-busy", {DOWN: dict(zip(fast, KILL_DOWN.values(),
                                                           strict=True))})],
        20, 0, 0, 10, confirm_seeds=10)
    return [owner, kill, rolling, light, hb]


RUNS = _runs([("owner-crash", 12, "1x4-hot"), ("owner-kill", 12, "1x4-busy"),
              ("rolling-bounce", 4, "1x4-busy"), ("rolling-bounce", 4, "1x4-light")]) + _runs(
    [("owner-kill", 12, "1x4-busy")], (f"{SHARE}@hb1s", f"{KIP848}@hb1s"))


def test_the_share_win_count_splits_redundancy_lock_limit_stops_and_settings() -> None:
    """At 12 on 4 a win in a cell where the share group itself stopped a partition on most
    seeds (the lock limit, 23.4 s on every seed) is counted apart from the redundancy wins
    where it stopped nothing, and a win at a non-default setting (@hb1s) apart from both."""
    line = fetchers_line(_verdicts(), RUNS)
    assert "at 12 members on 4 partitions, 3 confirmed share wins" in line, line
    assert ("1 redundancy win, the share group stopping no partition on any seed "
            "(owner-kill 1x4-busy: resource downtime)") in line, line
    assert ("2 in cells where the share group itself stopped a partition on most seeds "
            "(owner-crash 1x4-hot: 23.4 s on 10 of 10 seeds), wins only against a consumer "
            "group waiting out its session timeout") in line, line
    assert line.endswith("Not counted above, at a non-default setting (share:simple@hb1s): 1 "
                         "(\u2605 resource downtime (owner-kill at 12 on 4, 1x4-busy)), each "
                         "won at the default too."), line


def test_a_win_at_one_member_per_partition_has_its_mark_load_and_lighter_load() -> None:
    """share-rolling's 4-on-4 wins are ☆ and NEAR SATURATION (a member down puts its
    partition on one 60 % busy); at 20 % busy (share-rolling-light) the excess-lag win is
    lower on 8 of 10 seeds, no mark, the partitions-stopped win on 10 of 10. The lighter
    grid's own marks are not counted as wins."""
    line = fetchers_line(_verdicts(), RUNS)
    assert ("at one member per partition or fewer: 2 (\u2606 excess lag (rolling-bounce at 4 "
            "on 4, NEAR SATURATION; does not hold at 20% busy (1x4-light, share-rolling-light: "
            "no mark, share lower on 8 of 10 paired seeds)), \u2606 resource downtime "
            "(rolling-bounce at 4 on 4, NEAR SATURATION; holds at 20% busy (1x4-light, "
            "share-rolling-light: \u2606 share lower on 10 of 10 paired seeds)))") in line, line


def _lost(workload: str, lock_ms: int, rate: float, downs: list[float],
          broker: list[float] | None = None) -> list[dict[str, Any]]:
    settings = json.dumps({"group.share.record.lock.duration.ms": lock_ms})
    return [{"protocol": SHARE, "scenario": "owner-crash", "size": 12, "workload": workload,
             "seed": s, "ok": True, "total_partitions": 4, "settings_json": settings,
             "work": json.dumps({"records_per_s": rate, "processing_ms": 2 if rate == 300
                                 else 10}),
             "resource_downtime_ms": d, "share_lag_peak": (broker or [0.0] * len(downs))[s]}
            for s, d in enumerate(downs)]


def test_the_lock_limit_sentence_names_the_lock_duration_lever_and_the_broker_lag() -> None:
    """The lock limit's stall is the lock duration minus max.record.locks / the rate: the
    page's cell of the same lost host at a 10 s lock (the review's control: 3.35 s against
    23.35 s at 30 s) is quoted with its prediction and the settings named; and a lost host
    below the limit (owner-crash at 12 on 1x4-busy) shows the broker's share lag at ~1,800
    while its excess peak is under the floor (the table's broker-lag column)."""
    from groupcoord.lab.share_marks import broker_lag_lost_host, lock_lever_clause

    runs = (_lost("1x4-hot", 30_000, 300, [23_330 + 3 * i for i in range(10)])
            + _lost("1x4-hot-lock10", 10_000, 300, [3_330 + 5 * i for i in range(10)])
            + _lost("1x4-busy", 30_000, 60, [0.0] * 4, [1_812, 1_815, 1_813, 1_815]))
    lever = GridVerdict("lock-rate-owner-lock10", "", [SHARE], [DOWN], [
        VerdictRow("owner-crash", 12, "1x4-hot-lock10", 0.0, 10, [])], 10, 0, 0, 10)
    text = lock_lever_clause("owner-crash", 12, "1x4-hot", [lever], runs)
    assert text == (
        "The operator's lever is the record lock duration (share.record.lock.duration.ms for "
        "the group, group.share.record.lock.duration.ms on the broker, within the broker's "
        "group.share.min.record.lock.duration.ms, 15 s by default: Kafka refuses a group's lock "
        "below it, so 10 s needs it lowered): at 10 s it stopped "
        "3.35 s on 10 of 10 seeds (lock-rate-owner-lock10, 1x4-hot-lock10; 10 s - 2,000 / 300 "
        "= 3.33 s predicted), against 23.3 s on 10 of 10 at 30 s; "
        "group.share.partition.max.record.locks (2,000) sets the rate above which a lost host "
        "stops its partition (66.7 records/s a partition at 30 s)."), text
    owner = GridVerdict("owner", "", [SHARE, KIP848], [PEAK], [
        _row("owner-crash", 12, "1x4-busy", {PEAK: {SHARE: [-1, 2, 2, -1],
                                                     KIP848: [2_651, 2_590, 2_869, 2_651]}})],
        10, 0, 0, 4, confirm_seeds=5)
    dash = broker_lag_lost_host("owner-crash", 12, [owner], runs)
    assert dash == ("An operator's share-lag alert reads the locks, not lateness: on a lost "
                    "host below the limit (owner-crash at 12 on 1x4-busy, owner) the broker's "
                    "share lag peaks at 1,814 records while the excess lag peak is 0.5 (the "
                    "table's broker-lag column, medians of its 4 seeds)."), dash


def test_the_heartbeat_companions_already_beats_stays_in_a_sentence_over_its_words() -> None:
    """Sentence 1's most actionable fact for a platform team: the consumer group at a 1 s
    heartbeat (a broker-side change) already beats the share group at its default. Where the
    sentence runs over its words the already-beats clause stays, and so does the short
    contrary with its medians and paired seeds (the fifteenth outside share review: the lag
    peak's reversal belongs in the sentence), the whole clause in the note."""
    from groupcoord.lab.share_marks import family_key, share_claims
    from groupcoord.lab.verdict import MAX_WORDS, claims, fit, words

    labels, fast = (SHARE, KIP848), (f"{SHARE}@hb1s", f"{KIP848}@hb1s")
    # equal-capacity-rolling at 12 on 12 (1x12-busy): downtime 30.7 against 59.4, at 1 s
    # 5.96 against 12.1; the share group worse on its excess lag peak on every seed
    down = ([26_685, 24_810, 30_700, 32_384, 35_027], [52_600, 51_862, 59_400, 65_000, 69_609])
    hb_down = ([5_850, 4_800, 5_960, 5_500, 6_300], [11_800, 11_500, 12_100, 12_900, 13_000])
    peak = ([120, 124, 130, 126, 128], [90, 96, 97, 95, 99])

    def row(names: tuple[str, str], d: tuple[list[int], list[int]]) -> VerdictRow:
        return VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [
            judge({p: Cell(dict(enumerate(v))) for p, v in zip(names, d, strict=True)}, DOWN),
            judge({p: Cell(dict(enumerate(v))) for p, v in zip(names, peak, strict=True)},
                  PEAK)])

    verdicts = [GridVerdict("equal-capacity-rolling", "", list(labels), [DOWN, PEAK],
                            [row(labels, down)], 10, 0, 0, 5, confirm_seeds=5),
                GridVerdict("equal-capacity-rolling-hb1s", "", list(fast), [DOWN, PEAK],
                            [row(fast, hb_down)], 10, 0, 0, 5, confirm_seeds=5)]
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": "1x12-busy",
             "seed": s, "ok": True, "total_partitions": 12, "fault_rate": 0.0,
             "work": json.dumps({"records_per_s": 20})} for p in (*labels, *fast)
            for s in range(5)]
    found = share_claims(claims(verdicts, family_of=family_key(runs)),
                         claims(verdicts, limit=100), verdicts, runs)
    (c,) = [x for x in found if x.metric == "resource_downtime_ms"]
    assert "worse on 5 of 5" in c.text and "already beats" in c.text, c.text
    assert words(c.text) > MAX_WORDS - 10
    out = fit(c, budget=1)  # every movable clause to the note
    assert ("with that broker-side change alone consumer:uniform@hb1s (12.1 resource\u00b7s) "
            "already beats share:simple at its default (30.7)") in out.text, out.text
    assert out.text.endswith(" Worse on its excess lag peak (126 against 96 records, 5 of 5 "
                             "paired seeds) (note)."), out.text
    assert any("excess lag peak is worse on 5 of 5" in n for n in out.caveats), out.caveats


def test_sentence_2_quotes_the_per_member_load_and_both_gaps_on_the_same_seeds() -> None:
    """The consumer group's cost at the share members' per-member load (1x4-light, the
    review's 2,261) stands beside its headline 8,401 in the sentence, not only in the note;
    and the heartbeat companion's share of the gap divides two gaps on the same seeds: a seed
    the companion lost (a run that never caught up) leaves the default's gap too."""
    from groupcoord.lab.share_marks import family_key, share_claims
    from groupcoord.lab.verdict import claims

    fast = (f"{SHARE}@hb1s", f"{KIP848}@hb1s")

    def mv(cells: dict[str, list[float]], min_seeds: int = 5) -> Any:
        return judge({p: Cell(dict(enumerate(v))) for p, v in cells.items()}, LAG,
                     min_seeds=min_seeds)

    busy = VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5, [mv(
        {SHARE: [20, 25, 28.6, 30, 40], KIP848: [5_000, 8_401, 9_000, 7_000, 30_000]})])
    light = VerdictRow("rolling-bounce", 12, "1x4-light", 0.0, 5, [mv(
        {KIP848: [2_000, 2_261, 2_300, 2_100, 2_500]})])
    # the companion without seed 4
    hb = VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 4, [mv(
        {fast[0]: [20, 22, 24, 26], fast[1]: [2_000, 2_400, 2_500, 3_000]}, min_seeds=4)])
    verdicts = [
        GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], [busy], 10, 0, 0, 5,
                    confirm_seeds=5),
        GridVerdict("share-rolling-hb1s", "", list(fast), [LAG], [hb], 10, 0, 0, 5,
                    confirm_seeds=5),
        GridVerdict("share-light-rolling", "", [KIP848], [LAG], [light], 5, 0, 0, 5)]
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": w,
             "seed": s, "ok": True, "total_partitions": 4, "fault_rate": 0.0,
             "work": json.dumps({"records_per_s": 60})}
            for p, w in ((SHARE, "1x4-busy"), (KIP848, "1x4-busy"), (fast[0], "1x4-busy"),
                         (fast[1], "1x4-busy"), (KIP848, "1x4-light")) for s in range(5)]
    found = share_claims(claims(verdicts, family_of=family_key(runs)),
                         claims(verdicts, limit=100), verdicts, runs)
    (c,) = [x for x in found if x.grid == "share-rolling"]
    assert ("At a share member's load per member (1x4-light) consumer:uniform costs 2,261 "
            "record\u00b7s against 8,401.") in c.text, c.text
    # seeds 0-3: the default's gap 7,700.5 - 26.8, the companion's 2,450 - 23: 68 % removed
    # (over the default's 5 seeds, 8,401 - 28.6, it would read 71 %)
    assert "on both sides removes 68% of the gap" in c.text, c.text


def test_an_unmarked_row_says_share_higher_or_too_few_seeds() -> None:
    """A note's unmarked row where the share median is 20 % or more above the consumer's
    reads "share higher, not separated", not "a tie" (owner-kill at 4 on 4: 4,086 against
    3,267); a row a dropped seed left under 5 seeds says so, and a member-loss sentence at
    its size names it (owner-crash at 12 on 1x4-busy: 0.5 against 2,651 on 4 seeds)."""
    from groupcoord.lab.share_marks import few_seeds_clause, unmarked_words
    from groupcoord.lab.verdict import Claim

    def mv(cells: dict[str, list[float]]) -> Any:
        return judge({p: Cell(dict(enumerate(v))) for p, v in cells.items()}, PEAK)

    higher = mv({SHARE: [4_086, 3_000, 5_200, 2_500, 4_500],
                 KIP848: [3_267, 3_500, 2_900, 3_100, 4_000]})
    assert higher.verdict not in ("best", "tied"), higher.verdict
    assert unmarked_words(higher, SHARE, KIP848) == (
        "share:simple higher, not separated (no mark)")
    close = mv({SHARE: [4_618, 4_325, 4_916, 4_600, 4_700],
                KIP848: [4_588, 4_400, 4_800, 4_500, 4_650]})
    assert unmarked_words(close, SHARE, KIP848) == "a tie (no mark)"
    few = mv({SHARE: [-1, 2, 2, -1], KIP848: [2_651, 2_590, 2_869, 2_651]})
    assert few.verdict == "few seeds"
    assert unmarked_words(few, SHARE, KIP848) == "no mark (< 5 seeds)"
    owner = GridVerdict("owner", "", [SHARE, KIP848], [PEAK], [
        VerdictRow("owner-crash", 12, "1x4-busy", 0.0, 4, [few])], 10, 0, 0, 5,
        confirm_seeds=5)
    kill = Claim("lock-rate-owner-kill", "", "", "lag_peak", "owner-kill", 12, SHARE, KIP848,
                 workload="1x4-hot")
    assert few_seeds_clause(kill, [owner], []) == (
        "Unmarked, with under 5 seeds: owner-crash on 1x4-busy (owner, 4 of 5 seeds after a "
        "dropped one: 0.5 against 2,651 records).")
    other = Claim("share-rolling", "", "", "lag_peak", "rolling-bounce", 12, SHARE, KIP848)
    assert few_seeds_clause(other, [owner], []) == ""


def test_a_chart_draws_the_fresh_seed_sets_outlier(tmp_path: Any,
                                                    saved_figures: list[Any]) -> None:
    """lock-rate-owner-kill at 12 on 1x4-hot: one fresh-set kill of 20 stopped its partition
    (excess lag peak 7,051 against 3 on the others); the table shows the split, and now the
    chart draws every seed, the fresh set's hollow, so the outlier is on the panel."""
    from groupcoord.lab.report import plot_grid, protocol_styles

    saved = saved_figures
    first = {SHARE: [3, 2, 7, 3, 4, 5, 6, 3, 8, 5],
             KIP848: [13_121, 12_997, 14_308, 13_050, 13_200, 12_523, 13_300, 13_000, 12_900,
                      13_150]}
    fresh = {SHARE: [3, 2, 4, 3, 7_051, 5, 6, 3, 4, 5],
             KIP848: [13_000, 13_100, 12_800, 14_000, 14_500, 13_400, 12_950, 13_050, 13_700,
                      13_200]}
    mv = judge({p: Cell(dict(enumerate(v))) for p, v in first.items()}, PEAK)
    mv.again = judge({p: Cell({k + 10: x for k, x in enumerate(v)}) for p, v in fresh.items()},
                     PEAK)
    row = VerdictRow("owner-kill", 12, "1x4-hot", 0.0, 10, [mv])
    g = GridVerdict("lock-rate-owner-kill", "", [SHARE, KIP848], [PEAK], [row], 40, 0, 0, 10,
                    confirm_seeds=10)
    plot_grid(g, [row], "lock-rate-owner-kill: owner-kill, 1x4-hot", tmp_path / "k.png",
              protocol_styles([SHARE, KIP848]))
    (fig,) = saved
    drawn = [float(y) for ax in fig.axes for col in ax.collections
             for _, y in col.get_offsets()]
    assert 7_051.0 in drawn, drawn
    legend = " ".join(fig.legends[0].get_title().get_text().split())
    assert "hollow: the fresh (confirming) seed set's seeds" in legend, legend


def test_a_lighter_rerun_is_read_in_the_share_wins_line_not_a_sentence() -> None:
    """share-rolling-light reruns share-rolling's 4-on-4 row at 20 % busy: it is a lighter
    rerun (the page gives it no sentence of its own), and the introduction says its question
    is answered in the share wins' line."""
    from groupcoord.lab.mechanism import row_loads
    from groupcoord.lab.report import answers_text
    from groupcoord.lab.share_wins import is_lighter_rerun
    from groupcoord.lab.verdict import Claim

    verdicts = _verdicts()
    loads = row_loads(RUNS)
    by = {g.name: g for g in verdicts}
    assert is_lighter_rerun(by["share-rolling-light"], verdicts, RUNS, loads)
    assert not any(is_lighter_rerun(by[n], verdicts, RUNS, loads)
                   for n in ("share-rolling", "owner", "lock-rate-owner"))
    found = [Claim("owner", "owner-kill, 12 members: x.", "", "resource_downtime_ms",
                   "owner-kill", 12, SHARE, KIP848)]
    text = answers_text(found, verdicts, (), fetchers_line(verdicts, RUNS))
    assert "share-rolling-light: the share wins' line above" in text, text
    # a grid the line does not name keeps its own answer
    assert "share-rolling: its table only" in text, text
