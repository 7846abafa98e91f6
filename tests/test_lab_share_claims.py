"""What a share group's marks and sentences may claim against a consumer group
(``lab.share_marks``, the fifth share review): records processed twice after a member loss is
the consumer's commit interval where no commit-per-batch column runs; a share ★ on lag peak
does not stand where the broker's share lag reaches the consumer group's peak; one sentence
per scenario family and size, saying how many candidates it stands for; the lock limit on a
member loss's sentence, from the settings and the page's own cells; "no confirmation set"."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.report import _verdict_word
from groupcoord.lab.share_marks import (
    BROKER_LAG,
    COMMIT_DEPENDENT,
    family_key,
    lock_limit_clause,
    share_claims,
    unmark_broker_lag,
    unmark_commit_dependent,
)
from groupcoord.lab.verdict import Cell, Claim, GridVerdict, VerdictRow, claims, judge

SHARE, KIP848, FAST = "share:simple", "consumer:uniform", "consumer:uniform@commit100ms"
TWICE = Metric("records_reprocessed", "records processed twice", "records", floor=10.0)
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=10.0)
LAG = Metric("lag_record_s", "excess lag", "record·s", floor=100.0)
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0, floor=1000.0)
SETTINGS = json.dumps({"group.share.record.lock.duration.ms": 30_000})


def _cells(values: dict[str, list[float]]) -> dict[str, Cell]:
    return {p: Cell(dict(enumerate(v))) for p, v in values.items()}


def _owner_rows() -> list[VerdictRow]:
    twice = judge(_cells({SHARE: [0, 1, 0, 2, 1], KIP848: [53, 37, 132, 60, 90]}), TWICE)
    peak = judge(_cells({SHARE: [0, 1, -1, 2, 0], KIP848: [2_869, 2_651, 2_892, 2_700, 2_800]}),
                 PEAK)
    return [VerdictRow("owner-crash", 12, "1x4-busy", 0.0, 5, [twice, peak])]


def _equal_capacity() -> GridVerdict:
    twice = judge(_cells({SHARE: [1, 0, 5, 2, 1], KIP848: [216, 18, 288, 200, 150],
                          FAST: [4, 0, 6, 3, 5]}), TWICE)
    row = VerdictRow("crowd-crash", 4, "1x12-busy", 0.0, 5, [twice])
    return GridVerdict("equal-capacity", "", [SHARE, KIP848, FAST], [TWICE], [row], 15, 0, 0,
                       5)


def test_records_processed_twice_after_a_loss_is_no_mark_without_a_commit_per_batch_column(
) -> None:
    owner = GridVerdict("owner", "", [SHARE, KIP848], [TWICE, PEAK], _owner_rows(), 10, 0, 0,
                        5)
    equal = _equal_capacity()
    assert owner.rows[0].metrics[0].verdict == "best"  # the ★ the review found
    unmark_commit_dependent([owner, equal])
    twice, peak = owner.rows[0].metrics
    assert twice.verdict == COMMIT_DEPENDENT and not twice.best
    assert all(c.mark == "" for c in twice.cells.values())
    assert _verdict_word(twice) == ("no mark: depends on the consumer's commit interval "
                                    "(at 100 ms a tie in equal-capacity)")
    assert peak.verdict == "best"  # another metric keeps its mark
    # a grid with the commit-per-batch column keeps its own verdict
    assert equal.rows[0].metrics[0].verdict != COMMIT_DEPENDENT
    # no sentence rests on it
    assert all(c.metric != "records_reprocessed" for c in claims([owner]))
    # without the column's tie on the page, the reason is still said
    again = GridVerdict("owner", "", [SHARE, KIP848], [TWICE], _owner_rows(), 10, 0, 0, 5)
    unmark_commit_dependent([again])
    assert _verdict_word(again.rows[0].metrics[0]) == ("no mark: depends on the consumer's "
                                                       "commit interval")


def test_a_first_set_mark_on_records_processed_twice_that_the_fresh_set_lost_reads_as_its_siblings(
) -> None:
    """lock-rate-owner's owner-kill 1x4-busy80 row read "not confirmed: first seeds ★
    share:simple" where its sibling rows read "no mark: depends on the commit interval": a
    mark the fresh seeds did not repeat rests on the commit interval as much (sixth share
    review)."""
    from groupcoord.lab.verdict import confirm

    first = judge(_cells({SHARE: [0, 1, 0, 1, 0], KIP848: [164, 52, 261, 120, 90]}), TWICE)
    fresh = judge(_cells({SHARE: [0, 1, 0, 1, 0], KIP848: [164, 3, 261, 120, 90]}), TWICE)
    mv = confirm(first, fresh)
    assert mv.verdict == "unconfirmed" and mv.best == (SHARE,)
    g = GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [TWICE],
                    [VerdictRow("owner-kill", 12, "1x4-busy80", 0.0, 5, [mv])], 10, 0, 0, 5)
    unmark_commit_dependent([g, _equal_capacity()])
    assert _verdict_word(mv) == ("no mark: depends on the consumer's commit interval "
                                 "(at 100 ms a tie in equal-capacity)")
    # the same row on another metric keeps its "not confirmed"
    peak = confirm(judge(_cells({SHARE: [0, 1, 0, 1, 0], KIP848: [90, 80, 95, 70, 85]}), PEAK),
                   judge(_cells({SHARE: [0, 1, 0, 1, 0], KIP848: [90, 0, 95, 70, 85]}), PEAK))
    g2 = GridVerdict("lock-rate-owner", "", [SHARE, KIP848], [PEAK],
                     [VerdictRow("owner-kill", 12, "1x4-busy80", 0.0, 5, [peak])], 10, 0, 0, 5)
    unmark_commit_dependent([g2])
    assert peak.verdict == "unconfirmed"


def _share_run(seed: int, peak: int, scenario: str = "owner-crash",
               workload: str = "1x4-busy", **cols: Any) -> dict[str, Any]:
    return {"protocol": SHARE, "scenario": scenario, "size": 12, "workload": workload,
            "seed": seed, "ok": True, "share_lag_peak": peak, "total_partitions": 4,
            "settings_json": SETTINGS, **cols}


def test_a_share_star_on_lag_peak_does_not_stand_where_the_brokers_share_lag_reaches_it(
) -> None:
    owner = GridVerdict("owner", "", [SHARE, KIP848], [TWICE, PEAK], _owner_rows(), 10, 0, 0,
                        5)
    low = [_share_run(s, p) for s, p in enumerate([20, 22, 19, 21, 1_809])]
    unmark_broker_lag([owner], low)
    assert owner.rows[0].metrics[1].verdict == "best"  # 1,809 < 2,651: the ★ stands
    high = [_share_run(s, p) for s, p in enumerate([20, 22, 19, 21, 2_996])]
    unmark_broker_lag([owner], high)
    peak = owner.rows[0].metrics[1]
    assert peak.verdict == BROKER_LAG and not peak.best
    assert _verdict_word(peak) == ("no mark: the broker's share lag peak reaches 2,996 records "
                                   "on a seed, the consumer group's excess peak 2,651 at its "
                                   "lowest")


def _claim(scenario: str, metric: str, workload: str = "1x4-busy", size: int = 12,
           grid: str = "owner") -> Claim:
    return Claim(grid, f"{scenario}, {size} members: share:simple has the lowest {metric}.",
                 "cmd", metric, scenario, size, SHARE, KIP848, workload)


def _work(rate: float) -> str:
    return json.dumps({"records_per_s": rate})


def test_a_lost_hosts_sentence_carries_the_lock_limit_and_a_kills_the_release() -> None:
    runs = [_share_run(s, 20, work=_work(60), resource_downtime_ms=0) for s in range(5)]
    runs += [_share_run(s, 2_412, workload="1x4-busy80", work=_work(80),
                        resource_downtime_ms=5_030 if s < 3 else 0,
                        lag_record_s=1_715 if s < 3 else 18) for s in range(5)]
    runs += [_share_run(s, 25, scenario="owner-kill", workload="1x4-busy80", work=_work(80),
                        resource_downtime_ms=0) for s in range(5)]
    crash = lock_limit_clause(_claim("owner-crash", "lag_record_s"), runs)
    assert crash.startswith("Lock limit: a lost host holding acquired records pins the "
                            "share-partition start offset; above max.record.locks / "
                            "share.record.lock.duration.ms (2,000 / 30 s = 66.7 records/s a "
                            "partition)")
    assert ("owner-crash at 12 on 1x4-busy80, 80 records/s: a partition stopped on 3 of 5 "
            "seeds (1,715 record·s, 5.03 s stopped)") in crash
    assert "this cell runs 60 records/s a partition, under the limit" in crash
    kill = lock_limit_clause(_claim("owner-kill", "lag_record_s", "1x4-busy80"), runs)
    assert "this cell runs 80 records/s a partition, above it" in kill
    assert "a kill releases the records on disconnect" in kill
    assert "owner-kill at 12 on 1x4-busy80, 80 records/s: a partition stopped on 0 of 5" in kill
    # a bounce has no lost host: no clause
    assert lock_limit_clause(_claim("bounce", "lag_record_s"), runs) == ""


def test_one_sentence_per_family_and_size_says_how_many_candidates_it_stands_for() -> None:
    runs = [_share_run(0, 20, scenario=s, work=_work(60)) for s in ("owner-crash", "owner-kill")]
    runs += [_share_run(0, 20, scenario="bounce", work=_work(60))]
    key = family_key(runs)
    crash, kill = _claim("owner-crash", "lag_record_s"), _claim("owner-kill", "lag_peak")
    assert key(crash) == key(kill) is not None
    assert key(_claim("bounce", "lag_record_s")) != key(crash)
    assert key(Claim("g", "t", "c", "lag_peak", "owner-crash", 12, KIP848, "classic:eager",
                     "1x4-busy")) is None
    # through the selection: two rows of one family, one sentence
    rows = []
    for scen in ("owner-crash", "owner-kill"):
        lag = judge(_cells({SHARE: [14, 13, 45, 15, 16],
                            KIP848: [191_934, 107_668, 230_565, 150_000, 160_000]}), LAG)
        rows.append(VerdictRow(scen, 12, "1x4-busy", 0.0, 5, [lag]))
    g = GridVerdict("owner", "", [SHARE, KIP848], [LAG], rows, 20, 0, 0, 5)
    assert len(claims([g])) == 2
    (one,) = claims([g], family_of=key)
    (out,) = share_claims([one], claims([g]), [g], runs)
    # the claim says what it claims; how many candidates it stands for and the lock-limit
    # evidence are in the note under it (``Claim.caveats``)
    assert ("this sentence stands for 2 candidates of one family (owner-crash, owner-kill at 12 "
            "members): excess lag, on 1x4-busy") in out.caveats[0]
    assert out.text.endswith("5 seeds, no confirmation set.")
    assert "stands for" not in out.text and "Lock limit" not in out.text
    assert any(x.startswith("lock limit: a lost host") for x in out.caveats)
    from groupcoord.lab.report import claim_rule

    assert "at most one sentence per scenario family" in claim_rule([one], [g])
    # a grid with a second seed set: no such words
    g.confirm_seeds = 5
    (out,) = share_claims([one], claims([g]), [g], runs)
    assert "no confirmation set" not in out.text


def _rolling_cell() -> dict[str, Any]:
    med = {"time_to_converge_ms": (192_353, 192_355), "lag_peak": (19, 56),
           "excess_lag_peak": (1, 36), "excess_lag_record_s": (21.2, 5.9),
           "resource_downtime_ms": (0, 0)}
    return {"scenario": "rolling-bounce", "members": 12, "workload": "1x4-busy",
            "protocol": SHARE, "wire": [{}, {}, {}],
            "medians": {m: {"sim": a, "wire": b} for m, (a, b) in med.items()},
            "checks": {"time_to_converge_ms": True, "lag_peak": False,
                       "excess_lag_peak": True, "excess_lag_record_s": True,
                       "resource_downtime_ms": True},
            "ratios": {"excess_lag_record_s": 3.59, "excess_lag_peak": 0.03},
            "measured": {"client": "confluent-kafka 2.16.1 ShareConsumer (librdkafka 2.16.0)"}}


def test_the_calibration_line_names_its_client_and_never_calls_a_floor_pass_within_2x(
) -> None:
    from groupcoord.lab.share_report import share_calibration_note

    note = share_calibration_note("rolling-bounce", 12, [SHARE, KIP848], cells=[_rolling_cell()],
                                  cal={}, workload="1x4-busy", metric="lag_record_s")
    assert ("against real share consumers (confluent-kafka 2.16.1 ShareConsumer (librdkafka "
            "2.16.0), preview)") in note
    assert ("on this sentence's metric, excess lag record s 21.2 / 5.9 (3.59x; floor 50): "
            "both under the floor;") in note
    assert "within 2x: excess lag" not in note and "5.9: within 2x" not in note
    assert "time to converge ms 192,353 / 192,355 (the scenario's schedule)" in note
    assert "reported, not checked: time to converge ms" in note
    assert "not within 2x: lag peak" in note
    # the same pair over the floor reads as the check does
    over = _rolling_cell()
    over["medians"]["excess_lag_record_s"] = {"sim": 212.0, "wire": 150.0}
    text = share_calibration_note("rolling-bounce", 12, [SHARE], cells=[over], cal={},
                                  workload="1x4-busy", metric="lag_record_s")
    assert "excess lag record s 212 / 150: within 2x;" in text


def test_the_not_covered_line_counts_the_share_calibrations_rows(monkeypatch: Any) -> None:
    from groupcoord.lab import limits

    monkeypatch.setattr(limits, "share_cells", lambda: [_rolling_cell()])
    runs = [{"protocol": p, "scenario": sc, "size": n} for p in (SHARE, KIP848)
            for sc in ("rolling-bounce", "owner-crash") for n in (4, 12)]
    cal = {"rows": [{"protocol": KIP848, "scenario": "rolling-bounce", "members": 4,
                     "within_2x": True}], "setup": {}, "checked": []}
    (line,) = [t for t in limits.calibration_items(cal, None, runs)
               if t.startswith("Not covered")]
    assert "protocols share:simple" not in line and "group sizes" not in line
    assert "scenarios owner-crash" in line
    # which share cells no row measured, per scenario
    assert ("share:simple at owner-crash (4, 12 members), rolling-bounce (4 members)"
            in line)
    monkeypatch.setattr(limits, "share_cells", lambda: [])
    (line,) = [t for t in limits.calibration_items(cal, None, runs)
               if t.startswith("Not covered")]
    assert "protocols share:simple" in line and "group sizes 12" in line


def test_the_calibration_records_the_share_clients_full_version() -> None:
    from importlib.metadata import version

    from groupcoord.lab.share_calibration import _client

    assert _client().startswith(f"confluent-kafka {version('confluent-kafka')} ShareConsumer "
                                "(librdkafka ")


def test_the_equal_capacity_sentence_leads_and_one_line_says_what_the_share_wins_need(
) -> None:
    """The sixth share review: every confirmed share win at 12 members on 4 partitions is won
    with three share members fetching each partition; at 12 on 12 only downtime wins. The
    equal-capacity sentence comes first, and one generated line says so."""
    from groupcoord.lab.share_wins import fetchers_line

    def run(scenario: str, workload: str, parts: int) -> dict[str, Any]:
        return {"protocol": SHARE, "scenario": scenario, "size": 12, "workload": workload,
                "seed": 1, "ok": True, "total_partitions": parts, "settings_json": SETTINGS}

    runs = [run("rolling-bounce", "1x4-busy", 4), run("rolling-bounce", "1x12-busy", 12),
            run("owner-crash", "1x4-busy", 4)]
    lag = judge(_cells({SHARE: [25, 14, 41, 30, 20], KIP848: [9_460, 4_989, 14_787, 7e3, 8e3]}),
                LAG)
    down = judge(_cells({SHARE: [26.7e3, 24.8e3, 35e3, 27e3, 30e3],
                         KIP848: [62.6e3, 51.9e3, 69.6e3, 60e3, 58e3]}), DOWN)
    peak = judge(_cells({SHARE: [0, 1, 0, 2, 1], KIP848: [2_869, 2_651, 2_892, 2_700, 2_800]}),
                 PEAK)
    tie = judge(_cells({SHARE: [0, 1, 0, 2, 1], KIP848: [0, 2, 1, 0, 1]}), PEAK)
    assert (lag.verdict, down.verdict, peak.verdict) == ("best", "best", "best")
    rolling = GridVerdict("share-rolling", "", [SHARE, KIP848], [LAG], [
        VerdictRow("rolling-bounce", 12, "1x4-busy", 0.0, 5, [lag])], 10, 0, 0, 5,
        confirm_seeds=5)
    equal = GridVerdict("equal-capacity-rolling", "", [SHARE, KIP848], [DOWN, PEAK], [
        VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [down, tie])], 10, 0, 0, 5,
        confirm_seeds=5)
    owner = GridVerdict("owner", "", [SHARE, KIP848], [PEAK], [
        VerdictRow("owner-crash", 12, "1x4-busy", 0.0, 5, [peak])], 10, 0, 0, 5,
        confirm_seeds=5)
    # a grid without a fresh seed set confirms nothing: not counted
    single = GridVerdict("lock-limit", "", [SHARE, KIP848], [PEAK], [
        VerdictRow("owner-crash", 12, "1x4-busy", 0.0, 5, [peak])], 10, 0, 0, 5)
    line = fetchers_line([rolling, equal, owner, single], runs)
    assert line == ("What the share wins need: at 12 members on 4 partitions, 2 confirmed share "
                    "wins (metric readings in 2 cells), every one with 3 share members fetching "
                    "each partition against one consumer member (8 idle): 2 redundancy wins, the "
                    "share group stopping no partition on any seed (rolling-bounce 1x4-busy: "
                    "excess lag; owner-crash 1x4-busy: excess lag peak). And at one member per "
                    "partition or fewer: 1 (\u2605 resource downtime (rolling-bounce at 12 on 12)). "
                    "The redundancy wins are what a consumer group cannot have on as many "
                    "partitions; those at one member per partition or fewer, the protocol's "
                    "own.")
    assert fetchers_line([equal], runs) == ""  # no win from more members than partitions
    found = claims([rolling, equal], family_of=family_key(runs))
    assert [c.workload for c in found] == ["1x4-busy", "1x12-busy"]
    ordered = share_claims(found, found, [rolling, equal], runs)
    assert [c.workload for c in ordered] == ["1x12-busy", "1x4-busy"]
