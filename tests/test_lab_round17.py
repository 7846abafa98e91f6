"""The page's answers to the seventeenth outside review (docs/lab.md): a chart prints its
table's value (a split cell's outcomes, not the median of all its seeds); a metric the
calibration does not check is shown, not marked; a sentence quoting a growth row's lag says
that lag is an upper bound."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.verdict import grid_verdicts

PROTOCOLS = ["classic:eager", "classic:cooperative", "consumer:uniform"]


def test_a_bar_charts_printed_value_is_its_tables_split_cell(
        tmp_path: Any, saved_figures: list[Any]) -> None:
    from groupcoord.lab.report import _cell_text, plot_grid, protocol_styles

    # one size, one scenario: one bar per protocol. Eager's lag peak splits: 9 seeds near
    # 442 and one at 4,351 (a member revoked inside the heartbeat burst), whose median over
    # all ten seeds (447) is a value no seed had
    peaks = {"classic:eager": [440, 441, 442, 442, 442, 443, 443, 444, 445, 4351],
             "classic:cooperative": [486 + s % 3 for s in range(10)],
             "consumer:uniform": [600 + 10 * s for s in range(10)]}
    grid = {"name": "rolling", "protocols": PROTOCOLS, "scenarios": ["rolling-bounce"],
            "metrics": ["lag_peak"], "seeds": 10}
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 10, "members": 10,
             "workload": "4x250", "fault_rate": 0.0, "seed": s, "ok": True,
             "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "lag_peak": float(peaks[p][s])} for p in PROTOCOLS for s in range(10)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    (row,) = g.rows
    (mv,) = [x for x in row.metrics if x.metric.column == "lag_peak"]
    eager = mv.cells["classic:eager"]
    assert eager.split
    table, counts = _cell_text(mv.metric, eager)
    assert table == "442 | 4,351" and counts == "9 of 10 | 1 of 10"
    saved = saved_figures
    plot_grid(g, g.rows, "rolling: rolling-bounce", tmp_path / "r.png",
              protocol_styles(PROTOCOLS))
    (fig,) = saved
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    said = [t for t in texts if "4,351" in t]
    assert said, texts
    assert "442 | 4,351" in said[0] and "9 | 1 of 10" in said[0]
    # the all-seed median is printed nowhere
    assert not any("447" in t for t in texts), texts
    # an unsplit cell prints its table value as before
    coop, _ = _cell_text(mv.metric, mv.cells["classic:cooperative"])
    assert any(t.endswith(f"median\n{coop}") for t in texts), texts


def test_a_metric_the_calibration_does_not_check_is_shown_not_marked() -> None:
    from groupcoord.lab.report import verdict_html
    from groupcoord.lab.verdict import claims

    # eager far lower on every seed of both sets, on paused time and on lag alike
    grid = {"name": "field-costs", "protocols": PROTOCOLS, "scenarios": ["scale-out"],
            "metrics": ["paused_partition_s", "lag_record_s"], "seeds": 10,
            "confirm_seeds": 10}
    base = {"classic:eager": 1.0, "classic:cooperative": 400.0, "consumer:uniform": 900.0}
    runs = [{"protocol": p, "scenario": "scale-out", "size": 10, "members": 10,
             "workload": "field-costs", "fault_rate": 0.0, "seed": s, "replicate": s,
             "ok": True, "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "paused_partition_s": base[p] + s % 3, "lag_record_s": 10 * base[p] + s % 3}
            for p in PROTOCOLS for s in range(20)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    (row,) = g.rows
    by = {mv.metric.column: mv for mv in row.metrics}
    paused, lag = by["paused_partition_s"], by["lag_record_s"]
    # the lag, which the calibration checks, is marked: the same data would mark paused time
    assert lag.verdict == "best" and lag.best == ("classic:eager",)
    assert paused.verdict == "not checked" and not paused.best
    assert all(c.mark == "" for c in paused.cells.values())
    assert paused.again is None or not paused.again.best
    # the table shows the values and says why there is no mark
    page = verdict_html(g)
    tr = next(x for x in page.split("<tr") if "<td" in x and "paused" in x)
    assert "★" not in tr and "☆" not in tr
    assert "not checked against real clients" in tr
    # no sentence rests on it
    assert all(c.metric != "paused_partition_s" for c in claims([g]))
    # the list is the calibration's: reported beside the checked metrics, never checked
    from groupcoord.lab.calibrate import CHECKED, REPORTED, UNCHECKED

    assert "paused_partition_s" in UNCHECKED <= set(REPORTED)
    assert not UNCHECKED & set(CHECKED)


def _growth_claims(scenario: str) -> list[Any]:
    from groupcoord.lab.verdict import claims

    grid = {"name": "consumers", "protocols": PROTOCOLS, "scenarios": [scenario],
            "metrics": ["resources_moved", "lag_record_s"], "seeds": 10, "confirm_seeds": 10}
    moved = {"classic:eager": 246.0, "classic:cooperative": 0.0, "consumer:uniform": 0.0}
    lag = {"classic:eager": 1_100_000.0, "classic:cooperative": 1_000_000.0,
           "consumer:uniform": 824.0}
    runs = [{"protocol": p, "scenario": scenario, "size": 100, "members": 100,
             "workload": "4x250", "fault_rate": 0.0, "seed": s, "replicate": s, "ok": True,
             "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "resources_moved": moved[p], "lag_record_s": lag[p] * (1 + s / 10)}
            for p in PROTOCOLS for s in range(20)]
    return claims(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))


def test_a_sentence_quoting_a_growth_rows_lag_says_it_is_an_upper_bound() -> None:
    grown = [c for c in _growth_claims("partition-added") if " lag" in c.text]
    assert grown, "the growth row's sentence quotes its lag"
    for c in grown:
        assert c.text.endswith(
            "Lag an upper bound: the model's producer sees new partitions at once."), c.text
    # not on a scenario without a topic's growth
    plain = _growth_claims("scale-out")
    assert plain and all("upper bound" not in c.text for c in plain)


def test_a_sentence_weighs_no_metric_the_calibration_does_not_check() -> None:
    from groupcoord.lab.verdict import claims

    # eager lowest on lag, far higher on paused partition time in the same cell
    grid = {"name": "field-costs", "protocols": PROTOCOLS, "scenarios": ["scale-out"],
            "metrics": ["lag_record_s", "paused_partition_s"], "seeds": 10,
            "confirm_seeds": 10}
    lag = {"classic:eager": 10.0, "classic:cooperative": 4_000.0, "consumer:uniform": 9_000.0}
    paused = {"classic:eager": 900.0, "classic:cooperative": 40.0, "consumer:uniform": 40.0}
    runs = [{"protocol": p, "scenario": "scale-out", "size": 10, "members": 10,
             "workload": "field-costs", "fault_rate": 0.0, "seed": s, "replicate": s,
             "ok": True, "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "lag_record_s": lag[p] + s % 3, "paused_partition_s": paused[p] + s % 3}
            for p in PROTOCOLS for s in range(20)]
    said = claims(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))
    assert said and said[0].metric == "lag_record_s"
    for c in said:
        assert "paused" not in c.full, c.full


def test_a_size_dependence_note_prints_each_sizes_own_star() -> None:
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.verdict import PAIRED_MARK, Cell, MetricVerdict, VerdictRow, mark_size_dependence

    m = BY_COLUMN["task_downtime_task_s"]

    def row(size: int, best: str, paired: bool) -> VerdictRow:
        mv = MetricVerdict(m, {best: Cell({0: 1.0})}, "best", (best,), paired=paired)
        return VerdictRow("worker-bounce", size, "w", 0.0, 5, [mv])

    # eager's win at 3 workers rests on the sign test alone (☆), the sessioned win at 12 is
    # separated (★): the note prints each size's own star
    rows = [row(3, "classic-connect:eager", True), row(12, "connect:sessioned", False)]
    mark_size_dependence(rows, ["classic-connect:eager", "connect:sessioned"])
    text = rows[0].metrics[0].by_size
    assert f"{PAIRED_MARK} classic-connect:eager at 3 workers" in text, text
    assert "\u2605 connect:sessioned at 12 workers" in text, text
    # the same winner at every size (☆ at one, ★ at the other) is no size dependence
    same = [row(3, "connect:sessioned", True), row(12, "connect:sessioned", False)]
    mark_size_dependence(same, ["classic-connect:eager", "connect:sessioned"])
    assert same[0].metrics[0].by_size == ""


def _count_and_cost_runs(scenarios: dict[str, tuple[list[float], list[float]]],
                         moved: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """Two protocols over 5 seeds: per scenario, each one's excess lag per seed and its
    partitions moved (the same on every seed, as an assignor's count is)."""
    a, b = "classic:cooperative", "classic:eager"
    runs = []
    for sc, (lag_a, lag_b) in scenarios.items():
        for p, lags, mv in ((a, lag_a, moved[sc][0]), (b, lag_b, moved[sc][1])):
            runs += [{"protocol": p, "scenario": sc, "size": 100, "members": 100,
                      "workload": "4x250", "fault_rate": 0.0, "seed": s, "ok": True,
                      "caught_up": True, "noop_events": 0, "settings_json": "{}",
                      "lag_record_s": lags[s], "resources_moved": mv} for s in range(5)]
    return runs


def test_a_grids_sentence_leads_with_its_cost_not_a_count_the_same_on_every_seed() -> None:
    from groupcoord.lab.verdict import claims

    # crash: cooperative's lag a third of eager's (separated) and 0 against 246 moved on
    # every seed; the count's ratio (247) far above the lag's (3): the sentence still leads
    # with the lag, the count a clause after it
    grid = {"name": "consumers", "protocols": ["classic:eager", "classic:cooperative"],
            "scenarios": ["crash"], "metrics": ["resources_moved", "lag_record_s"],
            "seeds": 5, "question": "What does a member change cost?"}
    runs = _count_and_cost_runs(
        {"crash": ([1000, 1010, 1020, 1030, 1040], [3000, 3050, 3100, 3150, 3200])},
        {"crash": (0, 246)})
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    c, *rest = claims(verdicts)
    assert c.metric == "lag_record_s", c.text
    assert "has the lowest lag" in c.text, c.text
    assert "Partitions moved 0 against 246 on every seed." in c.text, c.text
    # the count's own sentence, if any, after the cost's
    assert all(x.metric == "resources_moved" for x in rest)


def test_a_count_sentence_without_a_cost_says_on_every_seed_not_a_median() -> None:
    from groupcoord.lab.verdict import claims

    # the lag ties (the same on both): the count is the grid's only mark, said on every seed
    grid = {"name": "consumers", "protocols": ["classic:eager", "classic:cooperative"],
            "scenarios": ["crash"], "metrics": ["resources_moved", "lag_record_s"],
            "seeds": 5}
    same = [1000, 1010, 1020, 1030, 1040]
    runs = _count_and_cost_runs({"crash": (same, same)}, {"crash": (0, 246)})
    (c,) = claims(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))
    assert c.metric == "resources_moved"
    assert "on every one of 5 seeds" in c.text and "medians of" not in c.text, c.text


def test_a_grid_named_after_a_workload_is_not_quoted_by_a_limit_naming_the_workload() -> None:
    from groupcoord.lab.verdict import Claim, quotes

    c = Claim("consumers", "x.", "", "lag_peak", "scale-out", 10, "a", "b",
              caveats=("was not tested with spread heartbeats (field-costs-hbspread ran "
                       "scale-out at 10 members on field-costs only)",))
    assert not quotes(c, "field-costs")
    assert quotes(c, "field-costs-hbspread")


def test_separated_needs_both_seed_sets_and_a_rare_bad_seed_is_quoted_with_the_mean() -> None:
    from groupcoord.lab.verdict import PAIRED_MARK, claims

    # eager's first set: four seeds near 2 record·s and one barrier wait (250: the event
    # landed inside the heartbeat burst); cooperative's ranges sit apart from eager's within
    # each set (400-410 on the first, 208-216 on the fresh), but the union's do not (250 is
    # above 208): the win rests on the sign test, ☆, not ★
    eager = [1.0, 2.0, 3.0, 4.0, 250.0, *(1.0, 2.0, 3.0, 4.0, 5.0)]  # first, fresh
    coop = [400.0, 402.0, 405.0, 408.0, 410.0, *(208.0, 210.0, 212.0, 214.0, 216.0)]
    grid = {"name": "crossover", "protocols": ["classic:eager", "classic:cooperative"],
            "scenarios": ["scale-out"], "metrics": ["lag_record_s"], "seeds": 5,
            "confirm_seeds": 5}
    runs = [{"protocol": p, "scenario": "scale-out", "size": 8, "members": 8,
             "workload": "1x32", "fault_rate": 0.0, "seed": 100 + s, "replicate": s,
             "ok": True, "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "lag_record_s": vals[s]}
            for p, vals in (("classic:eager", eager), ("classic:cooperative", coop))
            for s in range(10)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    (mv,) = g.rows[0].metrics
    assert mv.verdict == "best" and mv.best == ("classic:eager",)
    assert mv.again is not None and mv.again.verdict == "best" and not mv.again.paired
    assert mv.paired, "the union of the two sets overlaps: not separated"
    (c,) = claims([g])
    assert c.text.split(": ", 1)[1].startswith(PAIRED_MARK), c.text
    # the mean (52 record·s) is over 2x the median (3): the sentence quotes it beside the
    # median, and the worst seed (its seeds split: the outcome of 1 seed in 5)
    assert "250 record·s on 1 of 5 seeds" in c.text, c.text
    assert "median of all 5: 3 record·s, mean 52 record·s)" in c.text, c.text


def test_a_control_difference_is_paired_by_seed_and_a_negative_one_is_said() -> None:
    from groupcoord.lab.verdict import claims

    eager, coop, uniform = "classic:eager", "classic:cooperative", "consumer:uniform"
    # resource downtime (s) by replicate, each protocol's row and its control row: eager pays
    # the long poll on every seed; cooperative's per-seed differences (-330, -320, +100, +190,
    # +180: median +100) are not its medians' difference (300 - 320 = -20); KIP-848's control
    # costs more than its row on every seed (by 30 s)
    down = {("join-in-long-poll", eager): [900, 950, 1000, 1050, 1100],
            ("join-after-catch-up", eager): [300, 310, 320, 330, 340],
            ("join-in-long-poll", coop): [100, 200, 300, 400, 500],
            ("join-after-catch-up", coop): [430, 520, 200, 210, 320],
            ("join-in-long-poll", uniform): [100, 200, 300, 400, 500],
            ("join-after-catch-up", uniform): [130, 230, 330, 430, 530]}
    runs = [{"protocol": p, "scenario": sc, "size": 10, "members": 10, "workload": "long-poll",
             "fault_rate": 0.0, "seed": hash((sc, s)) % 10_000, "replicate": s, "ok": True,
             "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "resource_downtime_ms": 1000.0 * v}
            for (sc, p), vals in down.items() for s, v in enumerate(vals)]
    grid = {"name": "long-poll", "protocols": [eager, coop, uniform],
            "scenarios": ["join-in-long-poll", "join-after-catch-up"],
            "workloads": ["long-poll"], "seeds": 5, "metrics": ["resource_downtime_ms"]}
    c = next(c for c in claims(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))
             if c.scenario == "join-in-long-poll")
    assert "row minus its join-after-catch-up row per seed" in c.text, c.text
    assert f"{coop} +100" in c.text and f"{uniform} -30" in c.text, c.text
    assert f"{uniform}'s control costs more, by 30 resource·s: it differs by more than the " \
        "long poll." in c.text, c.text


def test_a_sweep_with_one_winner_at_every_value_says_there_is_no_crossover() -> None:
    from groupcoord.lab.report import sweep_line
    from groupcoord.lab.verdict import claims

    loads = ["1x32-p10ms-20pct", "1x32-p10ms-30pct", "1x32-p10ms-40pct"]
    eager, coop = "classic:eager", "classic:cooperative"
    grid = {"name": "crossover-10ms", "protocols": [eager, coop], "scenarios": ["scale-out"],
            "workloads": loads, "metrics": ["lag_record_s"], "seeds": 5,
            "question": "From which load on does each protocol cost the least lag?"}
    # eager lowest at every load: the sweep has no crossover
    runs = [{"protocol": p, "scenario": "scale-out", "size": 8, "members": 8, "workload": w,
             "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True, "noop_events": 0,
             "settings_json": "{}", "lag_record_s": (1.0 if p == eager else 500.0) + s,
             "busy_pct": float(w.rsplit("-", 1)[1].removesuffix("pct"))}
            for p in (eager, coop) for w in loads for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    assert g.parameter is not None
    (c,) = claims([g])
    assert "the same winner from 20 to 40 % busy: no crossover in the sweep" in c.text, c.text
    line = sweep_line(g)
    assert "scale-out, 8 members: classic:eager, the same winner from 20 to 40 % busy: no " \
        "crossover in the sweep" in line, line


def test_an_eager_win_opens_with_its_aligned_heartbeats_and_the_1s_spread() -> None:
    from groupcoord.lab.verdict import MAX_WORDS, claims, fit, labelled_words, stable_drift

    eager, coop = "classic:eager", "classic:cooperative"
    plain = {"name": "field-costs", "protocols": [eager, coop], "scenarios": ["rolling-bounce"],
             "metrics": ["lag_record_s"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("1s", "3s") for p in (eager, coop)]
    spread = {**plain, "name": "field-costs-hbspread", "protocols": labels}

    def run(p: str, s: int, lag: float) -> dict[str, Any]:
        return {"protocol": p, "scenario": "rolling-bounce", "size": 10, "members": 10,
                "workload": "field-costs", "fault_rate": 0.0, "seed": s, "ok": True,
                "caught_up": True, "noop_events": 0, "settings_json": "{}",
                "lag_record_s": lag}

    # aligned: eager 4,904 against cooperative 8,212; spread by 1 s: the two overlap (eager's
    # mark goes); by 3 s cooperative separates
    rows = [run(p, s, (4904.0 if p == eager else 8212.0) + s) for p in (eager, coop)
            for s in range(5)]
    for lb in labels:
        one = lb.endswith("1s")
        base = (3750.0 if lb.startswith(eager) else 3289.0) if one else \
            (19603.0 if lb.startswith(eager) else 12132.0)
        rows += [run(lb, s, base + (150.0 if one else 10.0) * (s - 2)) for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)
    c = next(c for c in claims(verdicts) if c.grid == "field-costs")
    lo, hi = stable_drift() or (0.0, 0.0)
    assert hi > lo > 0  # the wire's stored stable-group rows
    # the condition first, the wire's drift and the 1 s spread's finding in the same sentence
    assert c.text.startswith(
        f"Only with all heartbeats aligned (as right after a rebalance; real clients drift "
        f"{lo:.1f}\u2013{hi:.1f} s apart once stable; at a 1 s spread: not separated"), c.text
    assert c.text.index("at a 1 s spread") < c.text.index("has the lowest lag")
    # the spread clause after the claim is in the note, not said twice
    assert "With heartbeats spread" not in c.text and "With heartbeats spread" in c.full
    assert labelled_words(fit(c, labelled_words)) <= MAX_WORDS


def test_a_timing_sweep_over_two_workloads_names_each_value_once() -> None:
    """A grid that sweeps a timing (the heartbeat spread) over two workloads has two rows at
    each value swept: each workload is its own sweep (as ``sweep_findings`` reads them), never
    one sweep whose values repeat ("at 3,000, 3,000 ms")."""
    from groupcoord.lab.verdict import claims

    eager, coop = "classic:eager", "classic:cooperative"
    labels = [f"{p}@hbspread{s}" for s in ("0s", "3s") for p in (eager, coop)]
    grid = {"name": "lateness-hbspread", "protocols": labels, "scenarios": ["rolling-bounce"],
            "workloads": ["ln1.5", "pause"], "metrics": ["lag_record_s"], "seeds": 5}

    def run(p: str, w: str, s: int) -> dict[str, Any]:
        # cooperative lowest at every spread, on both workloads
        lag = (100.0 if p.startswith(coop) else 9000.0) + s + (50.0 if w == "pause" else 0.0)
        return {"protocol": p, "scenario": "rolling-bounce", "size": 10, "members": 10,
                "workload": w, "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
                "noop_events": 0, "settings_json": "{}", "lag_record_s": lag}

    rows = [run(p, w, s) for p in labels for w in ("ln1.5", "pause") for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    found = claims([g], limit=10)
    assert found
    for c in found:
        assert "0, 0" not in c.full and "3,000, 3,000" not in c.full, c.full
    # each workload's sweep named by its workload
    assert {w for w in ("ln1.5", "pause") if any(w in c.full for c in found)} == \
        {"ln1.5", "pause"}, [c.full for c in found]
