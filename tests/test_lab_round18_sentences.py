"""The page's answers to the eighteenth outside review (docs/lab.md), its sentences and their
calibration: every classic eager win opens with its aligned-heartbeat condition, also where
its cell was never run with spread heartbeats (naming the same scenario's spread cell
elsewhere); a winner under the metric's floor reads "no measurable" cost; a Connect grid
answers its question's events with the default-delay trade-off; a sentence's calibration
table lists every row of its scenario."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.verdict import MAX_WORDS, claims, fit, grid_verdicts, labelled_words

EAGER, RR, RANGE, UNIFORM = ("classic:eager", "classic:eager-roundrobin", "consumer:range",
                             "consumer:uniform")


def _run(p: str, s: int, workload: str, peak: float) -> dict[str, Any]:
    # 4 partitions of 400 records/s: the group's 1,600 records/s, a lag-peak floor of 80
    return {"protocol": p, "scenario": "scale-out", "size": 10, "members": 10,
            "workload": workload, "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
            "noop_events": 0, "settings_json": "{}", "lag_peak": peak,
            "records_per_s": 400.0, "total_partitions": 4}


def _scale_out(spread: bool, spread_scenario: str = "scale-out") -> list[Any]:
    """The paper's scale-out cell at 10 members on 4x250 (eager's lag peak 72 against
    consumer:range's 674, its medians), and, with ``spread``, a heartbeat-spread grid of the
    same scenario on another workload (4x250-p1ms: eager 677 against uniform 787 at 1 s;
    uniform 983 against eager 2,103 at 3 s)."""
    plain = {"name": "consumers", "protocols": [EAGER, RR, RANGE], "scenarios": ["scale-out"],
             "workloads": ["4x250"], "metrics": ["lag_peak"], "seeds": 5}
    rows = [_run(p, s, "4x250", (72.0 if p in (EAGER, RR) else 674.0) + 4 * (s - 2))
            for p in (EAGER, RR, RANGE) for s in range(5)]
    grids = [plain]
    if spread:
        labels = [f"{p}@hbspread{t}" for t in ("1s", "3s") for p in (EAGER, UNIFORM)]
        grids.append({"name": "lateness-scale-out-hbspread", "protocols": labels,
                      "scenarios": [spread_scenario], "workloads": ["4x250-p1ms"],
                      "metrics": ["lag_peak"], "seeds": 5})
        base = {f"{EAGER}@hbspread1s": 677.0, f"{UNIFORM}@hbspread1s": 787.0,
                f"{EAGER}@hbspread3s": 2103.0, f"{UNIFORM}@hbspread3s": 983.0}
        rows += [{**_run(lb, s, "4x250-p1ms", base[lb] + (200.0 if "1s" in lb else 10.0)
                         * (s - 2)), "scenario": spread_scenario}
                 for lb in labels for s in range(5)]
    return grid_verdicts({"spec": "paper", "grids": grids}, rows)


def test_an_eager_win_never_run_spread_opens_with_its_condition_and_names_the_spread_cell(
) -> None:
    verdicts = _scale_out(spread=True)
    c = next(c for c in claims(verdicts) if c.grid == "consumers")
    assert c.text.startswith("Only with all heartbeats aligned (as right after a rebalance; "
                             "real clients drift "), c.text
    # the same scenario's spread cell elsewhere, its finding at each spread, in the note
    assert ("lateness-scale-out-hbspread, 10 members, 4x250-p1ms: at 1 s not separated "
            "(classic:eager 677 against consumer:uniform's 787 records); at 3 s "
            "consumer:uniform lowest, 983 against classic:eager's 2,103 records") in c.full, \
        c.full
    # and the sentence itself names that cell's finding in its opening
    assert "not run spread; on 4x250-p1ms: reversed at 3 s): scale-out, 10 members" \
        in c.text, c.text
    assert labelled_words(fit(c, labelled_words)) <= MAX_WORDS


def test_an_eager_win_whose_scenario_no_spread_grid_ran_still_opens_with_its_condition(
) -> None:
    # the page spreads heartbeats in another scenario only
    verdicts = _scale_out(spread=True, spread_scenario="rolling-bounce")
    c = next(c for c in claims(verdicts) if c.grid == "consumers")
    assert c.text.startswith("Only with all heartbeats aligned (as right after a rebalance"), \
        c.text
    assert "not run with spread heartbeats):" in c.text, c.text


def test_a_winner_under_the_metrics_floor_reads_no_measurable_cost() -> None:
    c = next(c for c in claims(_scale_out(spread=False)) if c.grid == "consumers")
    assert "classic:eager and classic:eager-roundrobin have no measurable lag peak" in c.text, \
        c.text
    assert "have no measurable lag peak (under its 80 records floor" in c.text, c.text
    assert "share the lowest" not in c.text


SESSIONED, CEAGER = "classic-connect:sessioned", "classic-connect:eager"


def _connect_runs(scenario: str, downtime: dict[str, float]) -> list[dict[str, Any]]:
    delay = 300000 if scenario.endswith("-d300s") else 0
    return [{"protocol": p, "scenario": scenario, "size": 12, "members": 12,
             "workload": "16x8c", "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
             "noop_events": 0, "task_downtime_task_s": downtime[p] + s,
             "settings_json": json.dumps({"scheduled.rebalance.max.delay.ms": delay}
                                         if p == SESSIONED else {})}
            for p in (CEAGER, SESSIONED) for s in range(5)]


def test_a_connect_grid_answers_its_questions_events_with_the_default_delay_trade_off() -> None:
    """The kip415 grid asks what a worker that joins, leaves or bounces costs: its sentence is
    on one of those (a join), not on a connector's creation, however large that effect, and
    says that at the default 300 s delay eager has the lower task downtime when a worker
    leaves, bounces or crashes (the paper's medians at 12 workers)."""
    kip415 = {"name": "kip415", "protocols": [CEAGER, SESSIONED], "workloads": ["16x8c"],
              "scenarios": ["kip415-worker-joins", "kip415-connector-added",
                            "worker-leaves-d300s", "worker-bounce-d300s"],
              "metrics": ["task_downtime_task_s"], "seeds": 5,
              "question": "How many tasks does each Connect protocol stop and restart, for how "
                          "long, and how soon is the work balanced again, when a worker "
                          "joins, leaves or bounces?"}
    crash = {**kip415, "name": "kip415-crash", "scenarios": ["worker-crash-d300s"],
             "question": "Do the KIP-415 marks on a worker that leaves hold when it crashes "
                         "instead?"}
    rows = (_connect_runs("kip415-worker-joins", {SESSIONED: 76.8, CEAGER: 344.0})
            + _connect_runs("kip415-connector-added", {SESSIONED: 12.3, CEAGER: 1302.0})
            + _connect_runs("worker-leaves-d300s", {SESSIONED: 3640.0, CEAGER: 394.0})
            + _connect_runs("worker-bounce-d300s", {SESSIONED: 3350.0, CEAGER: 707.0})
            + _connect_runs("worker-crash-d300s", {SESSIONED: 3722.0, CEAGER: 475.0}))
    verdicts = grid_verdicts({"spec": "paper", "grids": [kip415, crash]}, rows)
    c = next(c for c in claims(verdicts) if c.grid == "kip415")
    assert c.scenario == "kip415-worker-joins", c.text
    assert c.text.startswith("kip415-worker-joins, 12 workers: classic-connect:sessioned has "
                             "the lowest task downtime"), c.text
    assert ("At Kafka's default scheduled.rebalance.max.delay.ms of 300 s, "
            "classic-connect:eager has the lower task downtime when a worker leaves, bounces "
            "or crashes") in c.text, c.text
    assert ("when a worker leaves, 396 against 3,642 task·s; when a worker bounces, 709 "
            "against 3,352 task·s; when a worker crashes, 477 against 3,724 task·s") in c.full \
        or "(396 against 3,642; 709 against 3,352; 477 against 3,724 task·s)" in c.text, c.full
    assert labelled_words(fit(c, labelled_words)) <= MAX_WORDS


def _claim(scenario: str, best: str, worse: str, metric: str) -> Any:
    from groupcoord.lab.verdict import Claim

    return Claim("g", f"{scenario}, 10 members: {best} wins.", "", metric, scenario, 10, best,
                 worse, "w")


def test_a_sentences_calibration_table_lists_every_row_of_its_scenario_outside_2x_too() -> None:
    """grow-by-900's sentence names consumer:uniform and classic:cooperative; its table lists
    the shipped calibration's every grow-by-900 row, the classic:eager rows outside 2x too
    (31.5 s simulated against 15.6 s on librdkafka), and its pointer says how many miss."""
    from groupcoord.lab.limits import load_calibration
    from groupcoord.lab.report import calibration_notes, calibration_tables

    cal = load_calibration() or {}
    shipped = [r for r in cal.get("rows") or [] if r.get("scenario") == "grow-by-900"]
    assert any(r.get("protocol") == "classic:eager" for r in shipped)
    c = _claim("grow-by-900", "consumer:uniform", "classic:cooperative", "convergence_ms")
    ((scenario, _head, body),) = calibration_tables([c], [])
    assert scenario == "grow-by-900" and len(body) == len(shipped), body
    outside = [r for r in body if r[1] == "outside 2x"]
    assert any(r[0].startswith("classic:eager, librdkafka") for r in outside), body
    (note,) = calibration_notes([c], [], [])
    assert f'table "grow-by-900" below ({len(shipped)} rows, {len(outside)} outside 2x)' in note, \
        note


def test_a_sentences_calibration_block_shows_its_pairs_ratio_off_by_more_than_2x() -> None:
    """The rolling-bounce sentence (eager against cooperative, lag): the Java client's
    cooperative/eager lag ratio, off by more than 2x, is printed with the scenario's table."""
    from groupcoord.lab.limits import load_calibration, protocol_ratios
    from groupcoord.lab.report import calibration_tables_md

    java = [x for x in protocol_ratios(load_calibration()) if x.scenario == "rolling-bounce"
            and x.metric == "lag_record_s" and {x.num, x.den} == {"classic:eager",
                                                                "classic:cooperative"}
            and "Java" in x.client]
    assert java and java[0].off > 2  # the shipped rows: 4.1x simulated, 1.9x measured
    c = _claim("rolling-bounce", "classic:eager", "classic:cooperative", "lag_record_s")
    md = "\n".join(calibration_tables_md([c], []))
    line = next((x for x in md.splitlines() if x.startswith("Between the sentence's two "
                                                            "protocols") and "Java" in x), "")
    assert "lag classic:cooperative/classic:eager" in line and "(more than 2x)" in line, md


def test_an_eager_mark_won_against_a_configured_delay_gets_no_aligned_heartbeat_opening(
) -> None:
    """worker-leaves-d300s: eager's mark is won against sessioned's configured 300 s delay (no
    finding), so a sentence on that cell does not open with eager's heartbeat condition."""
    from groupcoord.lab.verdict import Claim, untested_condition

    kip415 = {"name": "kip415", "protocols": [CEAGER, SESSIONED], "workloads": ["16x8c"],
              "scenarios": ["worker-leaves-d300s"], "metrics": ["task_downtime_task_s"],
              "seeds": 5}
    (g,) = grid_verdicts({"spec": "paper", "grids": [kip415]}, _connect_runs(
        "worker-leaves-d300s", {SESSIONED: 3640.0, CEAGER: 394.0}))
    (mv,) = g.rows[0].metrics
    assert mv.best == (CEAGER,) and mv.limit.startswith("is won"), mv.limit
    verdicts = [g, *_scale_out(spread=True)]  # the page spreads heartbeats elsewhere
    c = Claim("kip415", "worker-leaves-d300s, 12 workers: ...", "", "task_downtime_task_s",
              "worker-leaves-d300s", 12, CEAGER, SESSIONED, "16x8c")
    assert untested_condition(c, verdicts) is c


def test_a_row_at_the_default_delay_quotes_no_default_delay_clause_of_itself() -> None:
    """``_at_default_delay`` adds what a short delay's winners cost at Kafka's default delay;
    a row already at the default (``-d300s``) gets no such clause quoting itself (the delay
    pattern's group once read "300s", never equal to ``DEFAULT_DELAY_VARIANT``)."""
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, _at_default_delay, judge

    eager, sessioned = "classic-connect:eager", "classic-connect:sessioned"
    down = BY_COLUMN["task_downtime_task_s"]

    def row(scenario: str) -> VerdictRow:
        vals = {eager: [475.0 + s for s in range(5)], sessioned: [3722.0 + s for s in range(5)]}
        mv = judge({p: Cell(dict(enumerate(v))) for p, v in vals.items()}, down)
        return VerdictRow(scenario, 12, "16x8c", 0.0, 5, [mv])

    rows = [row("worker-crash-d0"), row("worker-crash-d300s")]
    g = GridVerdict("kip415-crash", "", [eager, sessioned], [down], rows, 10, 0, 0, 5)
    short, default = rows
    assert "(worker-crash-d300s) their task downtime is" in _at_default_delay(
        g, short, short.metrics[0], sessioned)
    assert _at_default_delay(g, default, default.metrics[0], sessioned) == ""
