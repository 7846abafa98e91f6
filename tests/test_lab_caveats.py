"""A first-page sentence's caveats, computed from the runs (lab.caveats)."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.caveats import (
    assignor_cause,
    delay_variants,
    other_metrics,
    restore_rows,
    sign_test_draw,
    with_caveats,
)
from groupcoord.lab.verdict import Claim, claims, grid_verdict, grid_verdicts

EAGER, COOP, UNIFORM = "classic:eager", "classic:cooperative", "consumer:uniform"


def _run(protocol: str, seed: int, scenario: str = "rolling-bounce", workload: str = "4x250",
         **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": 10, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, **metrics}


def test_a_sentence_says_where_its_loser_leads_on_the_same_row_without_a_mark() -> None:
    grid = {"name": "rolling", "protocols": [EAGER, COOP, UNIFORM],
            "metrics": ["convergence_ms", "lag_peak"]}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, convergence_ms=15000.0 + s, lag_peak=100.0 + 50 * s))
        rows.append(_run(COOP, s, convergence_ms=5000.0 + s, lag_peak=200.0 + 50 * s))
        rows.append(_run(UNIFORM, s, convergence_ms=5000.0 + s, lag_peak=400.0 + 150 * s))
    g = grid_verdict(grid, rows)
    assert g.rows[0].metrics[1].verdict == "overlap"  # eager lowest, separated from uniform only
    found = claims([g])
    conv = next(c for c in found if c.metric == "convergence_ms")
    assert conv.worse == EAGER
    text = other_metrics(conv, [g])
    assert text.startswith("on lag peak") and "classic:eager is among the lowest" in text
    assert "an overlap" in text
    assert "Caveats: on lag peak" in with_caveats([conv], [g], rows)[0].full


def test_a_consumer_grid_that_asks_lag_gets_no_sentence_on_stall_alone() -> None:
    """Stall is 0 by construction under cooperative and KIP-848 (no global barrier): a
    sentence on it would answer the grid's lag question with the one metric eager cannot
    win (round 8, S10). The stall mark stays in the table."""
    grid = {"name": "rolling", "protocols": [EAGER, COOP, UNIFORM],
            "metrics": ["stall_ms", "lag_peak"]}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, stall_ms=1500.0 + s, lag_peak=100.0 + 50 * s))
        rows.append(_run(COOP, s, stall_ms=0.0, lag_peak=200.0 + 50 * s))
        rows.append(_run(UNIFORM, s, stall_ms=0.0, lag_peak=400.0 + 150 * s))
    g = grid_verdict(grid, rows)
    assert g.rows[0].metrics[0].verdict in ("best", "tied")
    assert [c for c in claims([g]) if c.metric == "stall_ms"] == []


def test_an_injected_slow_event_is_no_sentence() -> None:
    """A busy-member variant's stall is rebalances x the injected slow event: its ★ stays in
    the table, but no sentence rests on it."""
    grid = {"name": "busy", "protocols": [EAGER, COOP], "metrics": ["stall_ms"]}
    rows = [_run(EAGER, s, scenario="bounce-slow2000ms", stall_ms=4000.0 + s) for s in range(5)]
    rows += [_run(COOP, s, scenario="bounce-slow2000ms", stall_ms=0.0) for s in range(5)]
    g = grid_verdict(grid, rows)
    assert g.rows[0].metrics[0].verdict == "best"
    assert claims([g]) == []
    plain = [{**r, "scenario": "bounce"} for r in rows]
    assert [c.metric for c in claims([grid_verdict(grid, plain)])] == ["stall_ms"]


def test_a_sign_test_mark_on_a_wide_draw_gives_the_draws_distribution() -> None:
    # (20 seeds: a refresh phase's draw carries a sentence from PHASE_MIN_SEEDS on)
    grid = {"name": "anchor", "protocols": [EAGER, UNIFORM], "metrics": ["convergence_ms"],
            "seeds": 20}
    settings = json.dumps({"metadata.max.age.ms": 300000, "heartbeat.interval.ms": 3000})
    eager = [3000.0, *[20000.0 * k for k in range(1, 20)]]  # one draw under uniform's
    rows = [{**_run(EAGER, s, scenario="grow-by-900", convergence_ms=v),
             "settings_json": settings} for s, v in enumerate(eager)]
    rows += [_run(UNIFORM, s, scenario="grow-by-900", convergence_ms=4700.0 + s)
             for s in range(20)]
    g = grid_verdict(grid, rows)
    mv = g.rows[0].metrics[0]
    assert mv.verdict == "best" and mv.best == (UNIFORM,)
    c = next(c for c in claims([g]))
    text = sign_test_draw(c, [g])
    assert "paired sign test" in text and "over its 20 seeds median 190 s" in text
    assert "quartiles" in text and "mean" in text
    assert "metadata.max.age.ms = 300 s" in text


def test_the_range_assignor_is_named_where_only_eager_with_range_loses() -> None:
    grid = {"name": "crossover", "protocols": [EAGER, "classic:eager-roundrobin", COOP],
            "metrics": ["lag_record_s"]}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, scenario="crash", lag_record_s=59000.0 + s))
        rows.append(_run("classic:eager-roundrobin", s, scenario="crash",
                         lag_record_s=46000.0 + s))
        rows.append(_run(COOP, s, scenario="crash", lag_record_s=46100.0 + s))
    g = grid_verdict(grid, rows)
    c = Claim("crossover", "", "", "lag_record_s", "crash", 10, COOP, "")
    text = assignor_cause(c, [g])
    assert "only classic:eager loses" in text and "the range assignor" in text
    rows = [r if r["protocol"] != "classic:eager-roundrobin" else {**r, "lag_record_s": 59000.0}
            for r in rows]
    assert assignor_cause(c, [grid_verdict(grid, rows)]) == ""


def test_a_delay_scenarios_sentence_says_what_its_other_delays_show() -> None:
    grid = {"name": "kip415", "protocols": ["classic-connect:eager", "classic-connect:sessioned"],
            "metrics": ["task_downtime_task_s"]}
    rows = []
    for s in range(5):
        for scen, eager, sess in (("worker-leaves-d30s", 300.0, 30.0),
                                  ("worker-leaves-d300s", 308.0, 3640.0)):
            rows.append(_run("classic-connect:eager", s, scenario=scen,
                             task_downtime_task_s=eager + s))
            rows.append(_run("classic-connect:sessioned", s, scenario=scen,
                             task_downtime_task_s=sess + s))
    g = grid_verdict(grid, rows)
    c = Claim("kip415", "", "", "task_downtime_task_s", "worker-leaves-d30s", 10,
              "classic-connect:sessioned", "classic-connect:eager")
    text = delay_variants(c, [g])
    assert "configured delay of this scenario only" in text
    assert "worker-leaves-d300s" in text and "\u2605 classic-connect:eager" in text


def test_an_eager_lag_win_names_the_rows_with_a_state_restore() -> None:
    plain = {"name": "crossover", "protocols": [EAGER, COOP], "metrics": ["lag_record_s"],
             "workloads": ["light"]}
    costs = {**plain, "name": "field-costs", "workloads": ["field-costs"]}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, scenario="scale-out", workload="light", lag_record_s=0.2))
        rows.append(_run(COOP, s, scenario="scale-out", workload="light",
                         lag_record_s=255.0 + s))
        for p, v in ((EAGER, 600.0 + 200 * s), (COOP, 900.0 + 100 * s)):
            rows.append({**_run(p, s, scenario="scale-out", workload="field-costs",
                                lag_record_s=v), "work": json.dumps({"warmup_ms": 2000})})
    verdicts = grid_verdicts({"name": "paper", "grids": [plain, costs]}, rows)
    c = next(c for c in claims(verdicts[:1]))
    assert c.best == EAGER
    text = restore_rows(c, verdicts, rows)
    assert text.startswith("no state restore (field-costs with a 2 s restore (10 members)")
    assert "a tie" in text or "overlap" in text


def test_a_crossover_says_not_confirmed_where_the_fresh_seeds_did_not_repeat_a_mark() -> None:
    grid = {"name": "metadata-age", "protocols": [EAGER, UNIFORM], "metrics": ["convergence_ms"],
            "seeds": 5, "confirm_seeds": 5, "workloads": ["light-md30s", "light-md300s"]}
    rows = []
    for w, x in (("light-md30s", 30000), ("light-md300s", 300000)):
        for rep in range(10):
            fresh_tie = w == "light-md30s" and rep >= 5
            rows.append({**_run(EAGER, rep, scenario="partition-added", workload=w,
                                convergence_ms=5000.0 + rep if fresh_tie else 60000.0 + rep),
                         "replicate": rep, "metadata_max_age_ms": x})
            rows.append({**_run(UNIFORM, rep, scenario="partition-added", workload=w,
                                convergence_ms=5000.0 + rep), "replicate": rep,
                         "metadata_max_age_ms": x})
    found = claims([grid_verdict(grid, rows)])
    text = next(c.text for c in found if c.scenario == "partition-added")
    assert "not confirmed (consumer:uniform on the first seeds; a tie on the fresh) at 30,000" \
        in text
