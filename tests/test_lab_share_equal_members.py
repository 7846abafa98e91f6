"""A share sentence at more members than partitions leads with the same members on as many
partitions, on the workload of the same production and per-member load (``lab.share_marks``'
``same_members_clause``: 1x4-hot's 12 members against a consumer group's on 1x12-hot, not on
another 12-partition workload), says the share group's own result there
(``equal_members_clause``), and a kill's sentence quotes its lost host (the crash of the same
cell) beside it, at 4 partitions and against the same members on 12 (the eighth share
review's control C1: a lost host's win at 12 on 4 reverses at 12 on 12). A companion grid
(every label ``@hb1s``) gives no sentence of its own: its reading joins its parent's
(``heartbeat_clause``)."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_marks import family_key, share_claims
from groupcoord.lab.share_wins import fetchers_line
from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, claim_candidates, claims, judge

SHARE, KIP848 = "share:simple", "consumer:uniform"
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=10.0)
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", scale=1000.0,
              floor=500.0)
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=50.0)
SETTINGS = json.dumps({"group.share.record.lock.duration.ms": 30_000})
#: workload -> (partitions, records/s a partition, ms a record)
LOADS = {"1x4-hot": (4, 300, 2), "1x12-hot": (12, 100, 2), "1x12-busy80": (12, 80 / 3, 7.5),
         "1x4-busy": (4, 60, 10), "1x12-busy": (12, 20, 10)}


def _cells(values: dict[str, list[float]]) -> dict[str, Cell]:
    return {p: Cell(dict(enumerate(v))) for p, v in values.items()}


def _run(protocol: str, scenario: str, workload: str, seed: int, **cols: Any) -> dict[str, Any]:
    parts, rate, ms = LOADS[workload]
    work = {"max_poll_records": 100, "processing_ms": {"dist": "exponential", "mean": ms},
            "records_per_s": rate}
    return {"protocol": protocol, "scenario": scenario, "size": 12, "workload": workload,
            "seed": seed, "ok": True, "total_partitions": parts, "fault_rate": 0.0,
            "settings_json": SETTINGS, "work": json.dumps(work), **cols}


#: lag peaks per (scenario, workload, protocol), 5 seeds each
PEAKS = {("owner-kill", "1x4-hot", SHARE): [3, 2, 7, 3, 4],
         ("owner-kill", "1x4-hot", KIP848): [13_121, 12_997, 14_308, 13_050, 13_200],
         ("owner-kill", "1x12-hot", SHARE): [4_618, 4_325, 4_916, 4_600, 4_700],
         ("owner-kill", "1x12-hot", KIP848): [4_588, 4_318, 4_904, 4_500, 4_650],
         # another 12-partition workload, first by name: not 1x4-hot's load
         ("owner-kill", "1x12-busy80", KIP848): [900, 880, 910, 905, 890],
         ("owner-kill", "1x12-busy80", SHARE): [901, 881, 911, 904, 889],
         ("owner-crash", "1x4-hot", SHARE): [7_046, 7_035, 7_058, 7_050, 7_040],
         ("owner-crash", "1x4-hot", KIP848): [13_526, 13_400, 13_700, 13_600, 13_500],
         ("owner-crash", "1x12-hot", SHARE): [4_577, 4_400, 4_750, 4_500, 4_600],
         ("owner-crash", "1x12-hot", KIP848): [4_557, 4_403, 4_746, 4_500, 4_600]}


def _runs() -> list[dict[str, Any]]:
    return [_run(p, scen, wl, s, lag_peak=v) for (scen, wl, p), vs in PEAKS.items()
            for s, v in enumerate(vs)]


def _row(scenario: str, workload: str) -> VerdictRow:
    mv = judge(_cells({p: PEAKS[(scenario, workload, p)] for p in (SHARE, KIP848)}), PEAK)
    return VerdictRow(scenario, 12, workload, 0.0, 5, [mv])


def _grids() -> list[GridVerdict]:
    return [GridVerdict("lock-rate-owner-kill", "", [SHARE, KIP848], [PEAK],
                        [_row("owner-kill", "1x4-hot")], 10, 0, 0, 5),
            GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [PEAK],
                        [_row("owner-crash", "1x4-hot")], 10, 0, 0, 5),
            GridVerdict("owner-equal", "", [SHARE, KIP848], [PEAK],
                        [_row(s, w) for s, w in dict.fromkeys(
                            (s, w) for s, w, _ in PEAKS if w.startswith("1x12"))],
                        10, 0, 0, 5)]


def _sentences(verdicts: list[GridVerdict], runs: list[dict[str, Any]]) -> list[Any]:
    found = claims(verdicts, family_of=family_key(runs))
    return share_claims(found, claims(verdicts, limit=100), verdicts, runs)


def test_a_kills_sentence_carries_its_lost_host_and_gives_the_rest_to_the_note() -> None:
    """The tenth outside share review: a platform team cannot choose how a member dies, so
    the kill's sentence (its family's most favourable cell) carries the crash of the same
    cell in itself: the share group's lost host against the consumer group with the same
    members on 12 partitions, and the lock limit's stop; the same-members lead, the 12-on-12
    result and the lost host's evidence go whole to the note."""
    runs = _runs()
    for r in runs:  # the share group's lost hosts stop a partition 23.4 s on every seed
        if (r["scenario"], r["workload"], r["protocol"]) == ("owner-crash", "1x4-hot", SHARE):
            r["resource_downtime_ms"] = 23_400.0 + r["seed"]
    verdicts = _grids()
    kill = next(c for c in _sentences(verdicts, runs) if c.scenario == "owner-kill")
    assert kill.workload == "1x4-hot"
    # the lost host stopped a partition: it has the lock limit's sentence of its own (the
    # eleventh outside share review, tests/test_lab_share_lock_sentence.py); the kill's keeps
    # the kill, the shipped wire row's figure beside the model's
    assert kill.text.startswith(
        "owner-kill, 12 members on 4 partitions (1x4-hot): share:simple 3 (wire: "), kill.text
    assert kill.text.endswith(
        " against consumer:uniform 13,121 (consumer's kill not run on the wire) records of "
        "excess lag peak, medians of 5 seeds. 5 seeds, no confirmation set."), kill.text
    assert len(kill.text.split()) + (len(kill.conditions) + 1 if kill.conditions else 0) <= 60
    note = " ".join(kill.caveats)
    # the consumer group on 1x12-hot (1,200 records/s, 2 ms a record), never on 1x12-busy80
    assert ("owner-kill, the same 12 members: share:simple on 4 partitions 3 against "
            "consumer:uniform on 12 (owner-equal, 1x12-hot) 4,588 records of excess lag peak"
            ) in note, note
    assert "1x12-busy80" not in kill.text + note
    # the share group's own result on the same 12 partitions
    assert ("At 12 on 12 (1x12-hot): a tie (no mark), 4,618 against 4,588 records (medians of 5 "
            "seeds, the table's).") in note
    assert ("A lost host (owner-crash) in the same cell: 7,046 against 13,526 records "
            "(medians of 5 seeds, the table's); "
            "against consumer:uniform on 12 (1x12-hot) 4,557 records, lower on every seed "
            "(4,403\u20134,746 against 7,035\u20137,058; medians of 5 and 5 seeds, each table's, "
            "unpaired)."
            ) in note


def test_no_same_members_comparison_on_a_workload_of_another_load() -> None:
    """Where the only 12-partition cells are of another production rate, the sentence does
    not lead with them."""
    runs = [r for r in _runs() if r["workload"] != "1x12-hot"]
    verdicts = _grids()
    verdicts[2].rows = [r for r in verdicts[2].rows if r.workload != "1x12-hot"]
    kill = next(c for c in _sentences(verdicts, runs) if c.scenario == "owner-kill")
    assert kill.text.startswith("owner-kill, 12 members on 4 partitions"), kill.text
    assert "1x12-busy80" not in kill.text, kill.text
    # the lost host of the same cell still stands beside the kill, without a 12-on-12 side
    # (no consumer group on the same load to set it against: the sentence as before)
    assert ("A lost host (owner-crash) in the same cell: 7,046 against 13,526 records "
            "(medians of 5 seeds, the table's).") \
        in kill.text


def _rolling(labels: tuple[str, str], down: tuple[list[float], list[float]],
             lag: tuple[list[float], list[float]]) -> VerdictRow:
    return VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [
        judge(_cells(dict(zip(labels, down, strict=True))), DOWN),
        judge(_cells(dict(zip(labels, lag, strict=True))), LAG)])


def _rolling_grids() -> list[GridVerdict]:
    default = _rolling((SHARE, KIP848),
                       ([26_685, 24_810, 25_554, 32_384, 35_027],
                        [62_600, 51_862, 60_000, 65_000, 69_609]),
                       ([1_379, 900, 1_500, 2_000, 1_200], [2_639, 1_000, 3_000, 2_500, 900]))
    fast = (f"{SHARE}@hb1s", f"{KIP848}@hb1s")
    hb1 = _rolling(fast, ([5_850, 4_800, 9_590, 5_500, 6_000],
                          [11_800, 11_500, 17_600, 12_000, 11_900]),
                   ([110, 96, 182, 100, 120], [120, 84, 216, 110, 130]))
    return [GridVerdict("equal-capacity-rolling", "", [SHARE, KIP848], [DOWN, LAG], [default],
                        10, 0, 0, 5),
            GridVerdict("equal-capacity-rolling-hb1s", "", list(fast), [DOWN, LAG], [hb1],
                        10, 0, 0, 5)]


def test_the_heartbeat_companion_gives_no_sentence_and_its_reading_joins_the_parents() -> None:
    runs = [_run(p, "rolling-bounce", "1x12-busy", s) for p in (SHARE, KIP848) for s in range(5)]
    verdicts = _rolling_grids()
    out = _sentences(verdicts, runs)
    # one sentence, the parent's: the companion's marks are no candidates of their own
    assert [c.grid for c in out] == ["equal-capacity-rolling"]
    assert claim_candidates(verdicts) == claim_candidates(verdicts[:1])
    (c,) = out
    assert c.metric == "resource_downtime_ms"
    # the gap at the 5 s default, 62.6 - 26.7 = 35.9, against 11.9 - 5.85 = 6.05 at 1 s
    assert ("at a 1 s heartbeat on both sides (equal-capacity-rolling-hb1s, the same seeds): "
            "★ share:simple@hb1s, 5.85 against 11.9 resource·s, 6.05 of the gap of 35.9 left "
            "(17%)") in c.caveats, c.caveats
    # the client default's share of the gap in the sentence itself (the tenth outside share
    # review), and the consumer group at 1 s already beating the share group at its default
    assert ("A 1 s group heartbeat (a broker-side config, under its 5 s default minimum) on "
            "both sides removes 83% of the gap; with that broker-side change alone "
            "consumer:uniform@hb1s "
            "(11.9 resource·s) already beats share:simple at its default (26.7).") in c.text, \
        c.text


def test_a_companions_marks_are_not_counted_among_the_share_wins() -> None:
    """The share wins' line counts each cell's marks once, at the default interval."""
    fast = (f"{SHARE}@hb1s", f"{KIP848}@hb1s")
    row = _row("owner-kill", "1x4-hot")
    twin = VerdictRow("owner-kill", 12, "1x4-hot", 0.0, 5, [judge(_cells(
        dict(zip(fast, (PEAKS[("owner-kill", "1x4-hot", p)] for p in (SHARE, KIP848)),
                 strict=True))), PEAK)])
    parent = GridVerdict("lock-rate-owner-kill", "", [SHARE, KIP848], [PEAK], [row],
                         10, 0, 0, 5)
    parent.confirm_seeds = 5
    companion = GridVerdict("lock-rate-owner-kill-hb1s", "", list(fast), [PEAK], [twin],
                            10, 0, 0, 5)
    companion.confirm_seeds = 5
    runs = _runs()
    line = fetchers_line([parent], runs)
    assert "1 confirmed share win (metric readings in 1 cell)," in line
    both = fetchers_line([parent, companion], runs)
    # the companion's win is not counted with the parent's: it is named apart, at its setting
    assert both.startswith(line) and "1 confirmed share win (metric readings in 1 cell)," in both, both
    assert both[len(line):].startswith(" Not counted above, at a non-default setting "
                                       f"({SHARE}@hb1s): 1 ("), both


def test_the_heartbeat_clause_says_a_companions_own_verdict_where_it_has_no_mark() -> None:
    verdicts = _rolling_grids()
    row = verdicts[1].rows[0]
    row.metrics[0].verdict = "unconfirmed"
    runs = [_run(p, "rolling-bounce", "1x12-busy", s) for p in (SHARE, KIP848) for s in range(5)]
    (c,) = _sentences(verdicts, runs)
    assert "(equal-capacity-rolling-hb1s, the same seeds): no mark (unconfirmed), 5.85 " \
        "against 11.9 resource·s" in " ".join(c.caveats), c.caveats


def test_a_fresh_set_that_lost_a_seed_says_so_not_only_unconfirmed() -> None:
    """The tenth outside share review: a companion row reads "no mark (unconfirmed)" only
    because a fresh-set run never caught up; the clause says the fresh set had 4 of 5 seeds,
    and the table's verdict says the same."""
    from groupcoord.lab.report import _verdict_word
    from groupcoord.lab.verdict import MetricVerdict

    verdicts = _rolling_grids()
    verdicts[1].confirm_seeds = 5
    mv = verdicts[1].rows[0].metrics[0]
    mv.verdict = "unconfirmed"
    mv.again = MetricVerdict(DOWN, {p: Cell(dict(enumerate([5_000.0, 5_100.0, 5_200.0, 5_300.0])))
                                    for p in mv.cells}, "few seeds", ())
    runs = [_run(p, "rolling-bounce", "1x12-busy", s) for p in (SHARE, KIP848) for s in range(5)]
    (c,) = _sentences(verdicts, runs)
    assert ("(equal-capacity-rolling-hb1s, the same seeds): no mark (unconfirmed: the fresh "
            "set had 4 of 5 seeds, a run left out), 5.85 against 11.9 resource·s"
            ) in " ".join(c.caveats), c.caveats
    assert _verdict_word(mv).endswith("fresh seeds only 4 seeds (< 5: a run left out)"), \
        _verdict_word(mv)
