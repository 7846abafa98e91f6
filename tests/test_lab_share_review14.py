"""The share page's answers to the fourteenth outside share review (docs/lab.md): a lock
lever quoted with the broker's minimum that bounds it (Kafka's
``group.share.min.record.lock.duration.ms``, 15 s by default) and its cell at that minimum;
the settings list naming every lock duration the spec uses."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.verdict import GridVerdict, VerdictRow

SHARE = "share:simple"
DOWN = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0, floor=1000.0)


def _lost(workload: str, lock_ms: int, downs: list[float]) -> list[dict[str, Any]]:
    settings = json.dumps({"group.share.record.lock.duration.ms": lock_ms})
    return [{"protocol": SHARE, "scenario": "owner-crash", "size": 12, "workload": workload,
             "seed": s, "ok": True, "total_partitions": 4, "settings_json": settings,
             "work": json.dumps({"records_per_s": 300, "processing_ms": 2}),
             "resource_downtime_ms": d} for s, d in enumerate(downs)]


def test_the_lock_lever_says_the_broker_minimum_and_quotes_its_cell_at_15_s() -> None:
    from groupcoord.lab.share_marks import lock_lever_clause

    runs = (_lost("1x4-hot", 30_000, [23_330 + 3 * i for i in range(10)])
            + _lost("1x4-hot-lock10", 10_000, [3_330 + 5 * i for i in range(10)])
            + _lost("1x4-hot-lock15", 15_000, [8_330 + 5 * i for i in range(10)]))
    grids = [GridVerdict(name, "", [SHARE], [DOWN], [
        VerdictRow("owner-crash", 12, wl, 0.0, 10, [])], 10, 0, 0, 10)
        for name, wl in (("lock-rate-owner-lock10", "1x4-hot-lock10"),
                         ("lock-rate-owner-lock15", "1x4-hot-lock15"))]
    text = lock_lever_clause("owner-crash", 12, "1x4-hot", grids, runs)
    assert ("group.share.record.lock.duration.ms on the broker, within the broker's "
            "group.share.min.record.lock.duration.ms, 15 s by default: Kafka refuses a group's "
            "lock below it, so 10 s needs it lowered): at 10 s it stopped 3.35 s") in text, text
    assert ("at 15 s (the default minimum) it stopped 8.35 s on 10 of 10 seeds "
            "(lock-rate-owner-lock15, 1x4-hot-lock15; 15 s - 2,000 / 300 = 8.33 s predicted)"
            ) in text, text


def test_the_settings_list_names_every_lock_duration_and_its_broker_minimum() -> None:
    from groupcoord.lab.limits import settings_notes

    runs = [{"protocol": SHARE, "settings_json": json.dumps(
        {"group.share.record.lock.duration.ms": lock})} for lock in (1_500, 10_000, 15_000,
                                                                     30_000)]
    (line,) = [n for n in settings_notes(runs) if n.startswith("Not Kafka's defaults")]
    assert ("group.share.record.lock.duration.ms 1,500, 10,000, 15,000 (Kafka's default: "
            "30,000 for a share consumer; Kafka refuses a group's value below the broker's "
            "group.share.min.record.lock.duration.ms, 15,000 by default, so 1,500, 10,000 "
            "needs it lowered)") in line, line


def test_the_lock15_grid_runs_lock_rate_owners_seeds_at_the_broker_minimum() -> None:
    from pathlib import Path

    from groupcoord.coordinator.config import CoordinatorConfig
    from groupcoord.lab.spec import expand, load_spec

    spec = load_spec(str(Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data"
                         / "share.toml"))
    runs = expand(spec)
    hot = {(r.replicate, r.seed) for r in runs if r.workload == "1x4-hot"
           and r.scenario == "owner-crash" and r.protocol == SHARE}
    low = {(r.replicate, r.seed) for r in runs if r.workload == "1x4-hot-lock15"}
    assert low and low <= hot
    wl = next(w for w in spec.workloads if w.name == "1x4-hot-lock15")
    assert json.loads(wl.work or "{}")["share_lock_duration_ms"] \
        == CoordinatorConfig().share_min_record_lock_duration_ms


def test_the_navigation_line_points_the_share_grid_at_its_own_paragraph() -> None:
    """The share grid is answered by its own unnumbered paragraph after the last numbered
    sentence (``share_grid_line``), not by the notes that quote it in passing."""
    from groupcoord.lab.report import answers_text
    from groupcoord.lab.verdict import Claim

    lag = Metric("lag_record_s", "excess lag", "record·s", floor=24.0)
    grids = [GridVerdict("share", "", [SHARE, "consumer:uniform"], [lag], [], 40, 0, 0, 5),
             GridVerdict("owner", "", [SHARE, "consumer:uniform"], [lag], [], 40, 0, 0, 5)]
    found = [Claim("owner", "owner-kill, 12 members: share:simple has the lowest excess lag.",
                   "", "lag_record_s", "owner-kill", 12, SHARE, "consumer:uniform")]
    notes = ["Calibration (share, crowd-crash at 12): 4 of 5 runs."]
    closing = ("share (crowd-crash and bounce at 4 and 12 members): no difference: no metric "
               "separates the two groups in its 4 rows.")
    # without its paragraph the grid is where the note quotes it; with it, the paragraph
    assert "share: the note under 1;" in answers_text(found, grids, notes)
    line = answers_text(found, grids, notes, closing=closing)
    assert "share: the unnumbered paragraph after 1; owner: 1." in line, line


def test_the_win_count_says_its_cells_and_counts_a_poison_repeat_once() -> None:
    """Three readings in two cells; the poison row's mark repeats the busy row's on the same
    seeds, so the page's own Marks and findings rule counts 2 distinct, said beside the 3."""
    from groupcoord.lab.share_wins import fetchers_line
    from groupcoord.lab.verdict import Cell, judge

    lag = Metric("lag_record_s", "excess lag", "record·s", floor=100.0)
    consumer = "consumer:uniform"
    down = {SHARE: [0.0] * 10, consumer: [44_000 + 100 * i for i in range(10)]}
    lags = {SHARE: [10.0 + i for i in range(10)],
            consumer: [140_000 + 1_000 * i for i in range(10)]}

    def row(workload: str, values: dict[Metric, dict[str, list[float]]]) -> VerdictRow:
        return VerdictRow("owner-kill", 12, workload, 0.0, 10, [
            judge({p: Cell(dict(enumerate(v))) for p, v in vs.items()}, m)
            for m, vs in values.items()])

    owner = GridVerdict("owner", "", [SHARE, consumer], [lag, DOWN], [
        row("1x4-busy", {lag: lags, DOWN: down}), row("1x4-poison", {DOWN: down})],
        20, 0, 0, 10, confirm_seeds=10)
    work = {"records_per_s": 60, "processing_ms": {"dist": "exponential", "mean": 10}}
    runs = [{"protocol": p, "scenario": "owner-kill", "size": 12, "workload": wl, "seed": 1,
             "ok": True, "fault_rate": 0.0, "total_partitions": 4, "total_topics": 1,
             "work": json.dumps({**work, **extra})}
            for p in (SHARE, consumer)
            for wl, extra in (("1x4-busy", {}), ("1x4-poison", {"poison_rate": 0.01}))]
    line = fetchers_line([owner], runs)
    assert ("at 12 members on 4 partitions, 3 confirmed share wins (metric readings in 2 "
            "cells; 2 once the poison rows repeating their clean row's mark on the same seeds "
            "are not counted again, as in Marks and findings), every one with 3 share members"
            ) in line, line


def test_the_chance_paragraph_covers_the_sign_tests_marks() -> None:
    """A ☆ rests on the paired sign test: at 10 seeds a pair that does not differ is marked
    2 / 1,024 of the time (10 of 10 seeds in favour, p = 1 / 1,024 one-sided), far above
    separated ranges' 2 / 184,756; the paragraph says so with the page's pairs."""
    from groupcoord.lab.report import method_text
    from groupcoord.lab.verdict import Cell, comparisons, judge, sign_chance

    assert sign_chance(10) == (1, 1_024)
    assert sign_chance(20) == (6_196, 1_048_576)
    lag = Metric("lag_record_s", "excess lag", "record·s", floor=100.0)
    mv = judge({SHARE: Cell({s: 1_000.0 + s for s in range(10)}),
                "consumer:uniform": Cell({s: 5_000.0 + s for s in range(10)})}, lag)
    g = GridVerdict("share", "", [SHARE, "consumer:uniform"], [lag], [
        VerdictRow("owner-kill", 12, "1x4-busy", 0.0, 10, [mv])], 20, 0, 0, 10,
        confirm_seeds=10)
    cmp = comparisons([g])
    assert (cmp.sign_pairs, cmp.sign_seeds) == (1, ((10, 1),))
    assert abs(cmp.sign_expected - 2 / 1_024) < 1e-12
    text = " ".join(method_text([], [g]))
    assert ("A ☆ rests on the paired sign test, whose chance per pair is larger, and a pair "
            "with 10 seeds or more is marked (★ or ☆) by chance as often as that test: 10 "
            "seeds: 2 / 1,024 (1 pair); over 1 such pair, about 0.0 chance marks on the "
            "first seed set") in text, text


def test_the_lock_limit_sentence_shows_the_wires_tail_from_the_shipped_calibration() -> None:
    """The shipped calibration's hung share consumers (SIGSTOP, owner-crash at 12 on 1x4-hot):
    3 of its 10 wire runs stopped their partition far longer than any of the model's seeds."""
    from groupcoord.lab.share_marks import wire_lost_host_stops, wire_tail_words

    stops = wire_lost_host_stops()[("owner-crash", 12, "1x4-hot")]
    model = [23_360.0 + i for i in range(40)]
    assert wire_tail_words(stops, model, 500.0) == (
        "on 3 of 10 runs for 36.5, 38.1 and 53.2 s, against the model's 23.4 s on 40 of 40 "
        "seeds (its longest 23.4 s)")
    # the model's own spread covers the wire's: no tail said
    assert wire_tail_words(stops, [*model, 60_000.0], 500.0) == ""


def test_the_headline_and_the_tables_name_resource_downtime_alike() -> None:
    """The share wins' line and the sentences (``share_marks.LABELS``) use the tables' own name
    of each metric, so a reader never meets one quantity under two names."""
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.share_marks import LABELS

    assert LABELS["resource_downtime_ms"] == "resource downtime"
    assert BY_COLUMN["resource_downtime_ms"].label.startswith(LABELS["resource_downtime_ms"])
