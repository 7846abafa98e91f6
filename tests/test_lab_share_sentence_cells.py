"""What a share sentence says about its own cell (``lab.share_marks``): how many partitions
its members are on, and every metric of the cell where the other protocol is better on most
paired seeds (both seed sets), whatever the marks say."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.share_marks import (
    contrary_clause,
    lock_limit_clause,
    share_claims,
)
from groupcoord.lab.share_report import runnable_spec
from groupcoord.lab.verdict import (
    Cell,
    Claim,
    GridVerdict,
    VerdictRow,
    claims,
    confirm,
    fit,
    judge,
    words,
)

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


LAG = Metric("lag_record_s", "excess lag", "record·s", floor=24.0)


def _redundancy() -> tuple[GridVerdict, list[dict[str, Any]]]:
    """rolling-bounce at 12 members on 4 partitions (the share group's win over 8 idle
    consumer members), at 4 on 4 (overlapping: no mark), and the consumer group's 12 members
    on 12 partitions (1x12-busy) in the runs only."""
    win = judge(_cells({SHARE: [25.5, 14.4, 41.4, 20.0, 30.0],
                        KIP848: [9_460, 4_989, 14_787, 8_000, 10_000]}), LAG)
    even = judge(_cells({SHARE: [4_706, 1_991, 8_994, 3_000, 5_000],
                         KIP848: [11_525, 6_641, 26_765, 4_000, 12_000]}), LAG)
    assert win.verdict == "best" and even.verdict not in ("best", "tied")
    g = GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], [
        VerdictRow("rolling-bounce", 4, "1x4-busy", 0.0, 5, [even], rate=240.0),
        VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5, [win], rate=240.0)], 20, 0, 0, 5)

    def run(p: str, size: int, wl: str, parts: int, seed: int, lag: float) -> dict[str, Any]:
        return {"protocol": p, "scenario": "rolling-bounce", "size": size, "workload": wl,
                "seed": seed, "ok": True, "total_partitions": parts, "lag_record_s": lag,
                "settings_json": SETTINGS,
                # 1x12-busy: 1x4-busy's 240 records/s on 12 partitions
                "work": json.dumps({"records_per_s": 60 * 4 / parts})}

    runs = [run(SHARE, 12, "1x4-busy", 4, s, v) for s, v in enumerate([25.5, 14.4, 41.4, 20, 30])]
    runs += [run(KIP848, 12, "1x4-busy", 4, s, 9_000) for s in range(5)]
    runs += [run(KIP848, 12, "1x12-busy", 12, s, v)
             for s, v in enumerate([2_627, 1_964, 3_965, 2_500, 2_700])]
    runs += [run(p, 4, "1x4-busy", 4, s, 5_000) for p in (SHARE, KIP848) for s in range(5)]
    return g, runs


def test_a_redundancy_win_leads_with_the_same_members_and_gives_one_member_per_partition(
        ) -> None:
    g, runs = _redundancy()
    (c,) = claims([g])
    assert (c.size, c.workload) == (12, "1x4-busy")
    (out,) = share_claims([c], [c], [g], runs)
    # the same 12 members first: the consumer group on 12 partitions, not 8 of it idle
    assert out.text.startswith(
        "rolling-bounce, the same 12 members: share:simple on 4 partitions 25.5 against "
        "consumer:uniform on 12 (1x12-busy) 2,627 record·s of excess lag (medians of 5 and 5 "
        "seeds, each table's, unpaired). On 4 partitions (1x4-busy; 8 consumer members idle): share:simple "
        "has the lowest lag"), out.text
    # and beside the 12-on-4 win, the same metric at one member per partition
    assert ("At 4 on 4 (1x4-busy): a tie (no mark), 4,706 against 11,525 record·s (medians of "
            "5 seeds, the table's).") in out.text
    # a consumer group that never ran with a partition per member: no same-members lead
    alone = [r for r in runs if r["workload"] != "1x12-busy"]
    (bare,) = share_claims([c], [c], [g], alone)
    assert bare.text.startswith("rolling-bounce, 12 members on 4 partitions: share:simple")


def test_the_lock_limit_note_gives_each_cells_busy_share() -> None:
    """Each cell above the lock limit gives its share members' busy share (the records/s a
    partition times the partitions over the members, times the processing time a record)."""
    settings = json.dumps({"group.share.record.lock.duration.ms": 30_000})

    def run(scen: str, seed: int, ms: float, down: float) -> dict[str, Any]:
        return {"protocol": SHARE, "scenario": scen, "size": 12, "workload": f"1x4-{ms}",
                "seed": seed, "ok": True, "total_partitions": 4, "settings_json": settings,
                "resource_downtime_ms": down,
                "work": json.dumps({"records_per_s": 80, "processing_ms": {
                    "dist": "exponential", "mean": ms}})}

    runs = [run("owner-crash", s, 7.5, 5_030 if s < 2 else 0) for s in range(5)]
    runs += [run("owner-crash", s, 20, 5_030 if s < 4 else 0) for s in range(5)]
    runs += [run("owner-kill", s, 7.5, 0) for s in range(5)]
    c = Claim("owner", "owner-kill, 12 members, 1x4-7.5: ...", "cmd", "lag_peak", "owner-kill",
              12, SHARE, KIP848, "1x4-7.5")
    note = lock_limit_clause(c, runs)
    # 80 records/s on 4 partitions over 12 members at 7.5 ms a record: 20% busy; at 20 ms 53%
    assert ("owner-crash at 12 on 1x4-7.5, 80 records/s, members 20% busy: a partition "
            "stopped on 2 of 5 seeds") in note
    assert ("owner-crash at 12 on 1x4-20, 80 records/s, members 53% busy: a partition "
            "stopped on 4 of 5 seeds") in note
    assert ("owner-kill at 12 on 1x4-7.5, 80 records/s, members 20% busy: a partition "
            "stopped on 0 of 5 seeds") in note
    grid = GridVerdict("owner", "", [SHARE, KIP848], [PEAK], [], 15, 0, 0, 5, confirm_seeds=5)
    (out,) = share_claims([c], [c], [grid], runs)
    assert any("members 53% busy" in x for x in out.caveats)
    # a sentence on no member loss has no lock-limit note
    assert lock_limit_clause(replace(c, scenario="rolling-bounce"), runs) == ""


def test_the_commands_name_a_spec_a_reader_can_run() -> None:
    # sweep.json records the spec as the rendering checkout's path
    seen = "/work/wt/review-share/src/groupcoord/lab/data/share.toml"
    assert runnable_spec(seen) == "src/groupcoord/lab/data/share.toml"
    # a built-in name, a spec outside the package, or one the package lacks, stay as they are
    assert runnable_spec("paper") == "paper"
    assert runnable_spec("/tmp/srv7/c1.toml") == "/tmp/srv7/c1.toml"
    assert runnable_spec("/x/groupcoord/lab/data/none.toml") == "/x/groupcoord/lab/data/none.toml"


def test_a_sentence_too_long_for_its_contrary_clause_still_names_the_metric_it_loses() -> None:
    # the eleventh outside share review: sentence 1's worse excess lag peak (9 of 10 paired
    # seeds) only in the note; a paper sentence keeps "Worse on ... (note)."
    g = _grid(peak_worse=9)
    (c,) = [x for x in claims([g]) if x.metric == "resource_downtime_ms"]
    (out,) = share_claims([c], [c], [g], _runs())
    clause = ("In the same cell its excess lag peak is worse on 9 of 10 paired seeds (medians "
              "118 against 99.5 records).")
    assert clause in out.text
    stand_in = (" Worse on its excess lag peak (118 against 99.5 records, 9 of 10 paired "
                "seeds) (note).")
    # the ranges go to the note first; a budget they alone meet leaves the clause whole
    budget = words(out.text.replace(" " + clause, stand_in)) - 8
    short = fit(out, budget=budget)
    assert clause not in short.text
    assert short.text.endswith(stand_in)
    assert clause.rstrip(".") in short.caveats


def test_the_named_metric_keeps_its_name_when_even_its_seed_counts_do_not_fit() -> None:
    g = _grid(peak_worse=9)
    (c,) = [x for x in claims([g]) if x.metric == "resource_downtime_ms"]
    (out,) = share_claims([c], [c], [g], _runs())
    # the fifteenth outside share review: the reversal's figures stay in the sentence too
    short = fit(out, budget=10)
    assert short.text.endswith(" Worse on its excess lag peak (118 against 99.5 records, 9 of "
                               "10 paired seeds) (note).")


def test_owner_crash_likewise_lines_go_under_the_member_loss_sentence() -> None:
    """The eleventh outside share review: the rolling-bounce sentence's note carried
    owner-crash "Likewise" lines (``verdict._likewise_host`` picks any sentence with the same
    metric and winners); on the share page they go under the member-loss sentence, with their
    command; a page without a member-loss sentence keeps them where they were."""
    from groupcoord.lab.share_marks import likewise_under_member_loss

    said = ("Likewise in owner-crash, 12 members (lock-rate-owner): 1,725 record·s against "
            "212,404 record·s")
    cmd = "groupcoord lab run --spec x.toml --scenario owner-crash --size 12 --out DIR"
    rolling = Claim("share-rolling", "rolling-bounce: share:simple has the lowest excess lag.",
                    "groupcoord lab run --spec s.toml --scenario rolling-bounce --out DIR\n"
                    + cmd, "lag_record_s", "rolling-bounce", 12, SHARE, KIP848,
                    caveats=("closer to the best", said),
                    movable=((f" {said}.", "", said),))
    kill = Claim("lock-rate-owner-kill", "owner-kill: share:simple 3 against 13,121.",
                 "groupcoord lab run --spec k.toml --scenario owner-kill --out DIR",
                 "lag_peak", "owner-kill", 12, SHARE, KIP848)
    crash = replace(kill, scenario="owner-crash", metric="lag_record_s",
                    text="Lock limit: ...")
    out = likewise_under_member_loss([rolling, kill, crash])
    assert out[0].caveats == ("closer to the best",)
    assert cmd not in out[0].command
    assert out[1] == kill
    assert out[2].caveats[-1] == said and cmd in out[2].command
    # in the sentence itself, not yet in its note: moved all the same
    inline = replace(rolling, text=rolling.text + f" {said}.", caveats=("closer to the best",))
    moved = likewise_under_member_loss([inline, kill])
    assert "Likewise" not in moved[0].text and moved[1].caveats == (said,)
    assert likewise_under_member_loss([rolling]) == [rolling]
