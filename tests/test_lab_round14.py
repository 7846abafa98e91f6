"""The page's answers to the fourteenth outside review (docs/lab.md): an eager win says in its
sentence whether it survives spread heartbeats (the spread companion grids of the paper spec,
judged per spread), and names the metrics it loses in the same cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groupcoord.lab.verdict import MAX_WORDS, claims, grid_verdicts, labelled_words

EAGER, COOP = "classic:eager", "classic:cooperative"

#: the reviewer's control 1 (rolling-bounce, field-costs, 10 members), medians: excess lag at
#: aligned 3 s heartbeats, with them spread by up to 1 s and by up to 3 s after a join; the
#: peak lag and stall of the aligned cell
LAG = {"": {EAGER: 4904.0, COOP: 8212.0}, "1s": {EAGER: 3750.0, COOP: 3289.0},
       "3s": {EAGER: 19603.0, COOP: 12132.0}}
PEAK = {EAGER: 321.0, COOP: 127.0}
STALL = {EAGER: 490.0, COOP: 0.0}


def _run(protocol: str, seed: int, scenario: str, workload: str, **metrics: Any
         ) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": 10, "members": 10,
            "workload": workload, "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "settings_json": "{}", **metrics}


def _field_costs(lag: dict[str, dict[str, float]]) -> list[Any]:
    plain = {"name": "field-costs", "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce"],
             "metrics": ["lag_record_s", "lag_peak", "stall_ms"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("1s", "3s") for p in (EAGER, COOP)]
    spread = {**plain, "name": "field-costs-hbspread", "protocols": labels}
    rows = [_run(p, s, "rolling-bounce", "field-costs", lag_record_s=lag[""][p] + s,
                 lag_peak=PEAK[p] + s, stall_ms=STALL[p] + s)
            for p in (EAGER, COOP) for s in range(5)]
    for label in labels:
        base, _, tail = label.partition("@hbspread")
        # at 1 s the two overlap (every seed within 600 record·s); at 3 s they separate
        step = 150.0 if tail == "1s" else 10.0
        rows += [_run(label, s, "rolling-bounce", "field-costs",
                      lag_record_s=lag[tail][base] + step * (s - 2), lag_peak=PEAK[base],
                      stall_ms=STALL[base]) for s in range(5)]
    return grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)


def test_an_eager_win_says_in_its_sentence_that_spread_heartbeats_reverse_it() -> None:
    verdicts = _field_costs(LAG)
    c = next(c for c in claims(verdicts) if c.grid == "field-costs"
             and c.metric == "lag_record_s")
    assert c.best == EAGER
    # the condition first, with what the 1 s spread found in the same cell (round 17: the
    # limit came after the claim), every spread's finding in the note
    assert c.text.startswith("Only with all heartbeats aligned (as right after a rebalance; "
                             "real clients drift "), c.text
    assert "at a 1 s spread: not separated" in c.text, c.text
    assert ("With heartbeats spread after a join (field-costs-hbspread): by 1 s, not separated "
            "(classic:cooperative 3,289 against classic:eager's 3,750 record·s); by 3 s, "
            "classic:cooperative lowest, 12,132 against classic:eager's 19,603 record·s") in c.full
    # the same cell's metrics the winner loses, against the runner-up the sentence quotes
    assert "Worse on lag peak and stall" in c.text
    assert ("in the same cell, classic:eager against classic:cooperative on lag peak: 323 "
            "against 129 records; stall: 0.492 against 0.002 s") in c.full
    assert labelled_words(c) <= MAX_WORDS


def test_an_eager_win_that_survives_the_spread_says_so() -> None:
    held = {**LAG, "1s": {EAGER: 3000.0, COOP: 9000.0}, "3s": {EAGER: 5000.0, COOP: 12132.0}}
    c = next(c for c in claims(_field_costs(held)) if c.grid == "field-costs"
             and c.metric == "lag_record_s")
    assert "It holds with spread heartbeats" in c.text or (
        "It holds with heartbeats spread by up to 1 s and 3 s after a join "
        "(field-costs-hbspread).") in c.text
    assert "It holds with heartbeats spread by up to 1 s and 3 s after a join" in c.full
    assert "Aligned heartbeats only" not in c.full


def test_a_crossover_sentence_says_at_which_loads_eager_survives_each_spread() -> None:
    plain = {"name": "crossover-20ms", "protocols": [EAGER, COOP], "scenarios": ["scale-out"],
             "metrics": ["lag_record_s"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("1s", "3s") for p in (EAGER, COOP)]
    spread = {**plain, "name": "crossover-20ms-hbspread", "protocols": labels}

    def run(p: str, s: int, pct: int, v: float) -> dict[str, Any]:
        return {**_run(p, s, "scale-out", f"1x32-p20ms-{pct}pct", lag_record_s=v + s),
                "size": 8, "members": 8, "total_partitions": 32,
                "work": json.dumps({"records_per_s": pct / 8, "processing_ms": 20})}

    rows = [run(p, s, pct, 1.0 if p == EAGER else 300.0)
            for pct in (20, 30, 40) for p in (EAGER, COOP) for s in range(5)]
    # 1 s: eager keeps its mark at 20 and 30 %; 3 s: cooperative everywhere
    for pct in (20, 30, 40):
        for lb in labels:
            eager = lb.startswith(EAGER)
            keeps = lb.endswith("1s") and pct < 40
            v = (5.0 if eager else 300.0) if keeps else (900.0 if eager else 400.0)
            rows += [run(lb, s, pct, v) for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [plain, spread]}, rows)
    (c,) = [c for c in claims(verdicts) if c.grid == "crossover-20ms"]
    # the sentence opens with its condition and the 1 s spread's finding at each load
    # (round 17: the limit came after the claim); each spread's numbers are in the note
    assert c.text.startswith("Only with all heartbeats aligned (as right after a rebalance"), \
        c.text
    assert "at a 1 s spread: kept at 20, 30 % busy, not at 40 % busy): " in c.text, c.text
    assert ("at 20 % busy, spread 3 s (crossover-20ms-hbspread): classic:cooperative lowest, "
            "402 against classic:eager's 902 record·s") in c.full
    assert ("at 40 % busy, spread 1 s (crossover-20ms-hbspread): classic:cooperative lowest, "
            "402 against classic:eager's 902 record·s") in c.full


def test_a_chart_of_an_eager_mark_says_in_its_caption_what_it_rests_on(
        tmp_path: Path, saved_figures: list[Any]) -> None:
    from groupcoord.lab.report import chart_conditions, grid_charts, protocol_styles

    g, _spread = _field_costs(LAG)
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    assert fig.get_suptitle().startswith("field-costs: rolling-bounce")
    # the conditions under the panels, with the legend (round 16: over them, they hid them)
    (legend,) = fig.legends
    title = legend.get_title().get_text().replace("\n", " ")
    assert "Conditions: eager's marks rest on the model's aligned classic heartbeats" in title
    assert "by 3 s, classic:cooperative lowest, 12,132 against classic:eager's 19,603" in title
    # a column marked at a timing off the default says which
    assert chart_conditions(g, g.rows).startswith("eager's marks rest on")
    hb = {"name": "rolling", "protocols": [EAGER, "consumer:uniform@hb3s"],
          "scenarios": ["rolling-bounce"], "metrics": ["lag_record_s"], "seeds": 5}
    runs = [_run(p, s, "rolling-bounce", "4x250",
                 lag_record_s=(900.0 if p == EAGER else 100.0) + s)
            for p in hb["protocols"] for s in range(5)]
    (gh,) = grid_verdicts({"spec": "paper", "grids": [hb]}, runs)
    assert "consumer:uniform with its heartbeat 3 s instead of the field's default" in \
        chart_conditions(gh, gh.rows)


def test_a_crossover_panel_keeps_one_linear_scale(tmp_path: Path,
                                                  saved_figures: list[Any]) -> None:
    from groupcoord.lab.report import grid_charts, protocol_styles

    plain = {"name": "crossover-20ms", "protocols": [EAGER, COOP], "scenarios": ["scale-out"],
             "metrics": ["lag_record_s"], "seeds": 5}

    def run(p: str, s: int, pct: int, v: float) -> dict[str, Any]:
        return {**_run(p, s, "scale-out", f"1x32-p20ms-{pct}pct", lag_record_s=v + s),
                "size": 8, "members": 8, "total_partitions": 32,
                "work": json.dumps({"records_per_s": pct / 8, "processing_ms": 20})}

    # 200 against 90,000 record·s: a span that gives another grid's panel a log axis
    rows = [run(p, s, pct, 200.0 if p == EAGER else 90_000.0)
            for pct in (20, 30, 40) for p in (EAGER, COOP) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [plain]}, rows)
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert ax.get_yscale() == "linear"
    assert "logarithmic" not in ax.get_ylabel()
