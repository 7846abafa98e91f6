"""The eleventh outside review's report-level findings (docs/lab.md "The report"): the
heartbeat interval named as a shared condition of every cooperative-against-eager gap, and the
calibration rows in one table per scenario below the sentences, each sentence pointing to its
table with a flag on its own metric, the same rule for consumers as for Connect."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.mechanism import heartbeat_gap_clause, with_heartbeat_condition
from groupcoord.lab.report import (
    CalibrationRow,
    calibration_flag,
    calibration_notes,
    calibration_tables_md,
)
from groupcoord.lab.verdict import Claim, claims, grid_verdicts

EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"


def _run(protocol: str, seed: int, hb: int = 3000, **metrics: Any) -> dict[str, Any]:
    return {"run_id": f"{protocol}-{seed}", "protocol": protocol,
            "scenario": "kip415-worker-joins", "size": 12, "members": 12, "workload": "16x8c",
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, "noop_events": 0,
            "settings_json": json.dumps({"heartbeat.interval.ms": hb}), **metrics}


GRID = {"name": "kip415", "protocols": [EAGER, SESSIONED], "scenarios": ["kip415-worker-joins"],
        "metrics": ["task_downtime_task_s"], "seeds": 5}


def _verdicts(hb: int) -> Any:
    rows = [_run(EAGER, s, hb, task_downtime_task_s=500.0 + s) for s in range(5)]
    rows += [_run(SESSIONED, s, hb, task_downtime_task_s=60.0 + s) for s in range(5)]
    return grid_verdicts({"spec": "paper", "grids": [GRID]}, rows)


def test_the_heartbeat_interval_is_a_named_condition_read_from_the_runs() -> None:
    """Round 11: sessioned's task downtime carries one heartbeat per moved task (61 task·s at
    a 3 s heartbeat, 21 at 1 s; eager unchanged), yet the page named no heartbeat among the
    sentence's inputs. The clause names the value from the runs' settings, not a typed one,
    and says it was not swept."""
    for hb, said in ((3000, "3 s in these runs"), (2000, "2 s in these runs")):
        verdicts = _verdicts(hb)
        clause = heartbeat_gap_clause(verdicts)
        assert said in clause and "heartbeat.interval.ms" in clause
        assert "not swept" in clause
        (c,) = with_heartbeat_condition(claims(verdicts), verdicts)
        assert clause in c.conditions


def test_no_heartbeat_condition_without_an_eager_protocol_or_on_restarts() -> None:
    verdicts = _verdicts(3000)
    (c,) = claims(verdicts)
    other = Claim(c.grid, c.text, c.command, "task_restarts", c.scenario, c.size, c.best,
                  c.worse)
    assert with_heartbeat_condition([other], verdicts)[0].conditions == ()
    only = [{**GRID, "protocols": [SESSIONED]}]
    rows = [_run(SESSIONED, s, task_downtime_task_s=60.0 + s) for s in range(5)]
    assert heartbeat_gap_clause(grid_verdicts({"spec": "paper", "grids": only}, rows)) == ""


def _row(who: str, lag: tuple[float, float]) -> CalibrationRow:
    ok = max(lag) / min(lag) <= 2
    return CalibrationRow("rolling-bounce", who.split(",")[0], who,
                          {"lag_record_s": ("lag", lag[0], lag[1], ok)},
                          "within 2x" if ok else "outside 2x")


def test_a_consumer_row_over_one_and_a_half_is_flagged_on_the_sentences_metric() -> None:
    """Round 11: sentence 11 (rolling-bounce, excess lag) quoted lag rows at 1.54-1.68x
    unflagged while the Connect sentences flagged their 1.62x row. The flag now applies to
    every family, on the sentence's own metric only."""
    rows = [_row("classic:eager, librdkafka, 6 members", (112.2, 72.9)),
            _row("consumer:uniform, Java client, 6 members", (603.8, 392.9)),
            _row("classic:cooperative, Java client, 6 members", (464.9, 325.5)),
            _row("classic:eager, Java client, 6 members", (100.0, 20.0))]
    c = Claim("hb-spread", "x", "cmd", "lag_record_s", "rolling-bounce", 8, "a", "b")
    flag = calibration_flag(c, rows)
    assert "near the 2x edge" in flag and "librdkafka, 6 members 1.54x" in flag
    assert "Java client, 6 members 1.54x" in flag
    assert "1.43x" not in flag  # under the edge: not flagged
    assert "outside 2x on this metric: classic:eager, Java client, 6 members 5.00x" in flag
    on_converge = Claim("hb-spread", "x", "cmd", "convergence_ms", "rolling-bounce", 8, "a",
                        "b")
    assert calibration_flag(on_converge, rows) == ""


def test_calibration_rows_are_one_table_per_scenario_and_sentences_point_to_it() -> None:
    """Round 11: four sentences carried near-identical calibration blocks thousands of
    characters long. Each sentence now points to its scenario's table in a few words; the
    table is printed once, below the sentences."""
    verdicts = _verdicts(3000)
    (c,) = claims(verdicts)
    twice = [c, c]
    notes = calibration_notes(twice, verdicts)
    assert notes[1] == notes[0] or notes[1] == "Calibration against real clients: as for sentence 1."
    # the sentence's cell (12 workers) was never run on real workers: it says so, and its
    # table is the nearest measured
    assert notes[0].startswith("Calibration against real clients: not calibrated: real "
                               "Connect workers never ran kip415-worker-joins at 12 workers")
    assert 'table "kip415-worker-joins" below' in notes[0]
    assert len(notes[0]) < 600
    md = "\n".join(calibration_tables_md(twice, verdicts))
    assert md.count("Calibration, kip415-worker-joins") == 1
    assert "| classic-connect:sessioned, real Connect workers, 3 workers | outside 2x |" in md
    assert "162 / 349 (0.46)" in md or "162 / 349 (0.47)" in md


def test_a_bounce_win_from_the_rest_of_the_delay_is_labelled_by_design() -> None:
    """Round 11: worker-bounce-d30s's time until balanced after the worker's return (sessioned
    23-24 s) is what remains of the 30 s delay, yet only the 300 s rows said "by design"."""
    from groupcoord.lab.findings import BALANCE_AFTER_LAST, BY_COLUMN
    from groupcoord.lab.verdict import DELAY_SETTING, _by_design

    m = BY_COLUMN[BALANCE_AFTER_LAST]
    st = {SESSIONED: {DELAY_SETTING: 30_000}}
    assert _by_design(st, m, SESSIONED, 23_800.0, down_ms=5_000)
    assert not _by_design(st, m, SESSIONED, 23_800.0)  # no absence known: the whole delay
    assert not _by_design(st, m, SESSIONED, 8_000.0, down_ms=5_000)
    assert not _by_design(st, m, EAGER, 23_800.0, down_ms=5_000)


def test_a_split_cell_says_what_decides_its_branch_from_the_runs() -> None:
    """Round 11: kip415-worker-joins at 3 workers, sessioned's task downtime is 162 or 330
    task·s by seed: each old worker stops about 17 tasks, 8 at a time, so its revocation
    takes 3 stop times, 3 s, right against the 3 s heartbeat. The page says so from the runs
    (restarts, stop time, pool, heartbeat), not from typed numbers."""
    from groupcoord.lab.mechanism import split_branch_cause

    def run(seed: int, hb: int, stop: float) -> dict[str, Any]:
        return {**_run(SESSIONED, seed, hb, task_restarts=50.0), "size": 3,
                "task_stop_ms": stop, "task_start_ms": 1000.0,
                "settings_json": json.dumps({"heartbeat.interval.ms": hb,
                                             "start.stop.threads": 8})}

    said = split_branch_cause("kip415-worker-joins", 3, SESSIONED,
                              [run(s, 3000, 1000.0) for s in range(5)])
    assert said.startswith("each of the 3 old workers stops about 17 tasks, 8 at a time, so "
                           "its revocation takes about 3 stops of 1 s, 3 s, against the 3 s "
                           "heartbeat interval"), said
    other = split_branch_cause("kip415-worker-joins", 3, SESSIONED,
                               [run(s, 1000, 500.0) for s in range(5)])
    assert "3 stops of 500 ms, 1.5 s, against the 1 s heartbeat" in other, other
    assert split_branch_cause("kip415-worker-joins", 6, SESSIONED, [run(0, 3000, 1.0)]) == ""


def test_the_model_limits_say_how_many_rebalances_a_connector_creation_makes() -> None:
    """Round 11: a connector's creation was one rebalance in the model where Kafka's herder
    makes two; a sink task's restart also rebalances its connector's consumer group, which task
    downtime does not count. The page says both, the count from the runs."""
    from groupcoord.lab.mechanism import connect_leaves_out

    def run(restarts: float) -> dict[str, Any]:
        return {**_run(EAGER, 0, task_restarts=restarts), "scenario": "kip415-connector-added",
                "connectors": 16, "tasks": 8}

    one = connect_leaves_out([run(128.0)])
    assert any("sink task's restart" in x for x in one)
    assert any("these runs make it 1 rebalance that stops every task" in x for x in one), one
    two = connect_leaves_out([run(256.0)])
    assert any("these runs make it 2 rebalances that stop every task" in x for x in two), two
    assert connect_leaves_out([{**run(1.0), "protocol": "classic:eager"}]) == []
