"""The share comparison's page (review of the share comparison): the "Why" lines per group
size (a median across sizes mixes a crash at 4 members with one at 12), a row whose medians
are under the floor but whose seeds split does not read "all under floor", and a crash
row whose runs never caught up says its lag grows with the run's length (a member left with
more partitions than it can process), not that the session timeout sets it."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.mechanism import mechanisms, member_load, not_caught_up, share_capacity
from groupcoord.lab.report import _verdict_word
from groupcoord.lab.verdict import Cell, MetricVerdict

SHARE, KIP848 = "share:simple", "consumer:uniform"
SETTINGS = {p: {"group.consumer.heartbeat.interval.ms": 5000,
                "group.consumer.session.timeout.ms": 45000} for p in (SHARE, KIP848)}
WORK = "60 rec/s, exponential:10 ms/rec, max.poll.records 100"


def _run(protocol: str, seed: int, size: int, **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "crowd-crash", "size": size, "members": size,
            "workload": "1x4-busy", "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "total_partitions": 4, "total_topics": 1, "work_model": WORK,
            **cols}


def test_why_lines_are_per_group_size() -> None:
    runs = [_run(SHARE, s, 4, resources_moved=1, resource_downtime_ms=41_900) for s in range(3)]
    runs += [_run(SHARE, s, 12, resources_moved=1, resource_downtime_ms=0) for s in range(3)]
    runs += [_run(KIP848, s, n, resources_moved=1, resource_downtime_ms=44_000)
             for s in range(3) for n in (4, 12)]
    lines = [t for t in mechanisms([SHARE, KIP848], SETTINGS, runs) if "downtime per" in t]
    assert len(lines) == 2
    four, twelve = lines
    assert four.startswith("crowd-crash, 4 members:") and "share:simple 41.9 s" in four
    assert twelve.startswith("crowd-crash, 12 members:") and "share:simple 0 ms" in twelve
    # one size: the scenario's line as before, without a size
    (only,) = [t for t in mechanisms([SHARE, KIP848], SETTINGS,
                                     [r for r in runs if r["size"] == 4]) if "downtime" in t]
    assert only.startswith("crowd-crash: downtime per moved partition")


def test_a_processing_time_drawn_from_a_distribution_has_a_load() -> None:
    ld = member_load(_run(KIP848, 0, 4))
    assert ld is not None
    assert ld.records_per_s == 60 and abs(ld.busy - 0.6) < 1e-9
    # one member fewer: 3 members on 4 partitions, the busiest holds 2: 120 % busy
    assert abs(ld.busiest_balanced - 1.2) < 1e-9


def _mv(values: dict[str, list[float]]) -> MetricVerdict:
    m = Metric("lag_record_s", "lag", "record·s", floor=100.0)
    cells = {p: Cell(dict(enumerate(v))) for p, v in values.items()}
    return MetricVerdict(m, cells, "tie", tuple(values))


def test_medians_under_the_floor_with_seeds_over_it_are_not_all_under_floor() -> None:
    word = _verdict_word(_mv({SHARE: [16.1, 16.6, 13.4, 42.4, 17.0],
                              KIP848: [0, 0, 0, 222_806.9, 161_231.4]}))
    assert "all under floor" not in word
    assert word == "medians under floor; consumer:uniform 2 of 5 seeds over it: 161,231\u2013222,807"
    assert _verdict_word(_mv({SHARE: [16.1, 42.4, 13.4], KIP848: [0, 3, 0]})) == "all under floor"


def test_a_crash_row_that_never_caught_up_says_its_lag_grows_with_the_run() -> None:
    runs = [_run(KIP848, s, 4, recovered=False) for s in range(5)]
    runs += [_run(SHARE, s, 4, recovered=s > 0) for s in range(5)]
    (kip848, share) = not_caught_up(4, [KIP848, SHARE], runs)
    assert kip848 == ("consumer:uniform's lag is a member left with 2 partitions at 120% busy, "
                      "which never catches up (not caught up when the run ended in 5 of 5 "
                      "runs): it grows with the run's length, not with the session timeout")
    assert share == ("share:simple not caught up when the run ended in 1 of 5 runs, so its lag "
                     "too grows with the run's length")
    # every run caught up: nothing to say (the session timeout's clause stands)
    assert not_caught_up(4, [KIP848], [_run(KIP848, 0, 4, recovered=True)]) == []
    # at 12 members a member left with one partition (60 %) is no saturation
    (slow,) = not_caught_up(12, [KIP848], [_run(KIP848, 0, 12, recovered=False)])
    assert slow.startswith("consumer:uniform not caught up when the run ended in 1 of 1 runs")


def test_twelve_share_members_on_four_partitions_are_said_to_be_capacity() -> None:
    runs = [_run(SHARE, 0, 12), _run(KIP848, 0, 12)]
    text = share_capacity(12, [SHARE, KIP848], runs)
    assert text.startswith("12 members on 4 partitions: the share group has 3 members "
                           "fetching each partition, the consumer group one")
    assert "redundancy" in text and "less load per member" in text
    # one member per partition, or no share group in the sentence: nothing to say
    assert share_capacity(4, [SHARE, KIP848], [_run(SHARE, 0, 4)]) == ""
    assert share_capacity(12, [KIP848, "consumer:range"], runs) == ""


def test_the_conditions_name_the_share_group_and_no_classic_poll_loop() -> None:
    from groupcoord.lab.mechanism import conditions

    share = {"group.share.heartbeat.interval.ms": 5000, "group.share.session.timeout.ms": 45000}
    text = conditions([SHARE, KIP848], {SHARE: share, KIP848: SETTINGS[KIP848]})
    assert "KIP-932 share heartbeat 5 s, session 45 s" in text
    assert "KIP-848 heartbeat 5 s, session 45 s" in text
    assert "classic member" not in text


def test_a_lag_axis_says_record_seconds() -> None:
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.report import axis_label

    assert axis_label(BY_COLUMN["lag_record_s"]) == "record-seconds (record·s)"
    assert axis_label(BY_COLUMN["lag_peak"]) == "records"


def test_the_load_of_a_share_row_with_idle_consumer_members_says_both_groups() -> None:
    """12 members on 4 partitions at 60 rec/s each: a share member does 20 rec/s (20 % busy),
    a consumer group's 4 working members 60 rec/s (60 % busy) and 8 idle."""
    ld = member_load(_run(KIP848, 0, 12))
    assert ld is not None
    assert ld.text().startswith("20 rec/s, 20.0% busy per member")  # other grids: as before
    text = ld.text(share=True)
    assert text.startswith("share group: 20 rec/s, 20.0% busy per member (3 members fetch "
                           "each partition); consumer group: 4 of 12 members work, 60 rec/s, "
                           "60.0% busy each (8 idle)")
    # one member per partition: one load for both
    four = member_load(_run(KIP848, 0, 4))
    assert four is not None and four.text(share=True) == four.text()


def test_kip848_and_share_members_keep_their_own_heartbeat_phase() -> None:
    """Classic members learn of a rebalance together (their timers restart at the join);
    KIP-848 and share members each at their own next heartbeat: the line says so per
    family."""
    from groupcoord.lab.mechanism import conditions, phase_clause

    share = {"group.share.heartbeat.interval.ms": 5000, "group.share.session.timeout.ms": 45000}
    text = conditions([SHARE, KIP848], {SHARE: share, KIP848: SETTINGS[KIP848]})
    assert "keep their own heartbeat phase" in text
    assert "together" not in text
    assert "own next heartbeat" in phase_clause([SHARE, KIP848])
    assert "same moment" not in phase_clause([SHARE, KIP848])
    assert "same moment" in phase_clause(["classic:eager", KIP848])


def test_one_member_per_partition_says_the_revocation_gap_not_a_tie() -> None:
    """At one member per partition the share group's downtime is lower by the consumer
    group's revocation step: the sentence is drawn from the runs, and the 12-on-4 sentence
    carries it with the per-partition ordering a share group gives up."""
    from groupcoord.lab.mechanism import one_per_partition

    def even(protocol: str, seed: int, down: int, moved: int) -> dict[str, Any]:
        return _run(protocol, seed, 12, scenario="rolling-bounce", workload="1x12-busy",
                    total_partitions=12, resource_downtime_ms=down, resources_moved=moved)

    runs = [even(SHARE, s, 26_000 + 1000 * s, 20) for s in range(3)]
    runs += [even(KIP848, s, 60_000 + 1000 * s, 22) for s in range(3)]
    text = one_per_partition("rolling-bounce", [SHARE, KIP848], runs)
    assert text.startswith("at one member per partition (12 on 12, rolling-bounce) the share "
                           "group's downtime is lower by the rejoin's revocation gap: 27 s "
                           "against 61 s of resource downtime, 1.35 s against 2.77 s per moved")
    assert "no revocation step" in text and "tie" not in text
    wide = [_run(SHARE, 0, 12, scenario="rolling-bounce"),
            _run(KIP848, 0, 12, scenario="rolling-bounce")]
    capacity = share_capacity(12, [SHARE, KIP848], wide, wide + runs)
    assert "revocation gap" in capacity and "two tie" not in capacity
    assert "gives up per-partition ordering" in capacity
    # the share group not lower at one member per partition: the result as it is, no gap
    flipped = [dict(r, protocol=KIP848 if r["protocol"] == SHARE else SHARE) for r in runs]
    back = one_per_partition("rolling-bounce", [SHARE, KIP848], flipped)
    assert "consumer group's downtime is lower: 61 s against 27 s" in back
    assert "revocation" not in back
    assert one_per_partition("crowd-crash", [SHARE, KIP848], runs) == ""


def test_a_crash_at_one_member_per_partition_ties_without_a_revocation_gap() -> None:
    """A crash has no rejoin: at one member per partition both groups wait for the session
    timeout, and the clause says the two tie with the values, never "lower by the rejoin's
    revocation gap" (the fifth share review: "44.1 s against 44.1 s")."""
    from groupcoord.lab.mechanism import one_per_partition

    def even(protocol: str, seed: int, down: int) -> dict[str, Any]:
        return _run(protocol, seed, 4, scenario="owner-crash", resource_downtime_ms=down,
                    resources_moved=1)

    runs = [even(SHARE, s, 44_100 - 10 * s) for s in range(3)]
    runs += [even(KIP848, s, 44_100 + 10 * s) for s in range(3)]
    text = one_per_partition("owner-crash", [SHARE, KIP848], runs)
    assert text.startswith("at one member per partition (4 on 4, owner-crash) the two tie: "
                           "44.1 s against 44.1 s of resource downtime")
    assert "lower" not in text and "no rejoin" in text
    # a bounce whose share median is lower by less than a tenth: a tie too
    close = [dict(r, scenario="bounce") for r in runs]
    close += [dict(r, scenario="bounce", seed=9, resource_downtime_ms=40_000)
              for r in runs[:1]]
    assert "two tie" in one_per_partition("bounce", [SHARE, KIP848], close)


def test_a_crash_row_says_on_how_many_seeds_the_crashed_member_owned_a_partition() -> None:
    """At 12 members on 4 partitions the consumer group's crashed member is often idle: the
    page counts, per crash cell, the seeds on which the crash moved a partition."""
    from groupcoord.lab.mechanism import crash_owners
    from groupcoord.lab.share_report import crash_owner_rows, share_sections_md

    runs = [_run(KIP848, s, 12, resources_moved=int(s < 2)) for s in range(10)]
    runs += [_run(SHARE, s, 12, resources_moved=1) for s in range(10)]
    assert crash_owners([SHARE, KIP848], runs) == (
        "consumer:uniform's crashed member owned a partition on 2 of 10 seeds (an idle "
        "member on the others)")
    assert crash_owner_rows(runs) == [["crowd-crash", "12", "1x4-busy", KIP848, "2 of 10"],
                                      ["crowd-crash", "12", "1x4-busy", SHARE, "10 of 10"]]
    assert "did the lost member own a partition" in share_sections_md(runs)
    # a crash or a kill of an owner (@owner) moves a partition on every seed: its own rows
    owner = [dict(r, scenario=sc, resources_moved=1) for r in runs
             for sc in ("owner-crash", "owner-kill")]
    rows = crash_owner_rows(owner)
    assert {(r[0], r[3], r[4]) for r in rows} == {
        (sc, p, "10 of 10") for sc in ("owner-crash", "owner-kill") for p in (SHARE, KIP848)}
    # every seed an owner: nothing to add to the sentence
    assert crash_owners([SHARE], runs) == ""


def test_the_calibration_summary_names_the_sentences_cells_outside_2x_and_not_measured(
) -> None:
    """The sixth share review: the records-processed-twice summary said the lab's marks rest
    on a metric the wire reproduces within 2x while sentence 3's consumer side measured 183
    against 66; the "not covered" line did not list sentence 2's cell, which no wire row
    measured on either side."""
    from groupcoord.lab.share_report import sentence_calibration_limits

    cells = [
        {"scenario": "owner-crash", "members": 12, "workload": "1x4-hot",
         "protocol": "consumer:uniform", "checks": {"records_reprocessed": False,
                                                     "lag_peak": True},
         "medians": {"records_reprocessed": {"sim": 183.0, "wire": 66.0},
                     "lag_peak": {"sim": 14_432.0, "wire": 14_338.0}}},
        {"scenario": "owner-crash", "members": 12, "workload": "1x4-hot",
         "protocol": "share:simple", "checks": {"lag_peak": True},
         "medians": {"lag_peak": {"sim": 7_103.0, "wire": 7_199.0}}},
        {"scenario": "rolling-bounce", "members": 12, "workload": "1x4-busy",
         "protocol": "share:simple", "checks": {"lag_peak": False},
         "medians": {"lag_peak": {"sim": 19.0, "wire": 56.0}}}]
    items = ["Records processed twice (floor 50 records): checked by 42 calibration rows; "
             "none outside 2x. So the lab's marks on records processed twice rest on a metric "
             "the wire reproduces within 2x in these scenarios; a difference below 50 records "
             "is not resolved by the check.",
             "Stall (floor 250 ms): none outside 2x. So the lab's marks on stall rest on a "
             "metric the wire reproduces within 2x in these scenarios.",
             "Not covered by the calibration (the tables use them; no row measured them "
             "against real clients): protocols consumer:uniform@commit100ms."]
    sentences = [("rolling-bounce", 12, "1x4-busy", ["share:simple", "consumer:uniform"]),
                 ("rolling-bounce", 12, "1x12-busy", ["share:simple", "consumer:uniform"]),
                 ("owner-crash", 12, "1x4-hot", ["share:simple", "consumer:uniform"]),
                 ("crash", 4, None, ["classic:eager", "consumer:uniform"])]
    out = sentence_calibration_limits(items, sentences, cells=cells, cal={"rows": []})
    twice, stall, gaps, outside = out
    assert twice.startswith(items[0]) and twice.endswith(
        "Not in the sentences' own cells: sentence 3's consumer:uniform (owner-crash at 12 "
        "members on 1x4-hot): records reprocessed 183 / 66, simulated / measured, outside 2x: "
        "there the mark is the model's, not the wire's.")
    assert stall == items[1]  # no sentence's cell misses on stall
    # sentence 1's consumer side, sentence 2's both sides; the fourth names no share group
    assert gaps == (items[2].rstrip(".") + "; the sentences' cells: sentence 1's "
                    "consumer:uniform (rolling-bounce at 12 members on 1x4-busy); sentence 2's "
                    "share:simple and consumer:uniform (rolling-bounce at 12 members on 1x12-busy).")
    assert outside.startswith("The sentences' own cells outside 2x on a metric")
    assert "sentence 1's share:simple (rolling-bounce at 12 members on 1x4-busy): lag peak "\
           "19 / 56" in outside and "183 / 66" in outside and "7,103" not in outside
    # without a sentence that names a share group, the items are the model's as they were
    assert sentence_calibration_limits(items, sentences[3:], cells=cells, cal={}) == items
