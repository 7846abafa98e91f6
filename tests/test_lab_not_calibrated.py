"""A Connect sentence whose cells real Connect workers never ran says "not calibrated" and
names the nearest cells they did run, read from the shipped calibration file (docs/lab.md
"The report"), instead of pointing to another sentence's calibration."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.report import calibration_notes, connect_not_calibrated
from groupcoord.lab.verdict import claims, grid_verdicts
from groupcoord.lab.wire_connect_calibration import load_rows

EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"


def _run(protocol: str, scenario: str, size: int, workload: str, seed: int,
         downtime: float) -> dict[str, Any]:
    return {"run_id": f"{protocol}-{scenario}-{size}-{workload}-{seed}", "protocol": protocol,
            "scenario": scenario, "size": size, "members": size, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, "noop_events": 0,
            "task_downtime_task_s": downtime,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000})}


def _verdicts(scenario: str, size: int, workload: str) -> Any:
    runs = [_run(p, scenario, size, workload, s, base + s) for s in range(5)
            for p, base in ((EAGER, 500.0), (SESSIONED, 60.0))]
    grid = {"name": "g", "protocols": [EAGER, SESSIONED], "scenarios": [scenario],
            "metrics": ["task_downtime_task_s"], "seeds": 5}
    return grid_verdicts({"spec": "paper", "grids": [grid]}, runs)


def test_a_connect_sentence_on_cells_never_measured_says_not_calibrated() -> None:
    rows = load_rows()
    measured = {(r["scenario"], r["size"], r["workload"]) for r in rows}
    assert ("kip415-worker-joins", 6, "16x8c") in measured
    assert not any(size == 12 for _, size, _ in measured)
    # 12 workers on 10 ms tasks: the joins were measured at 3 and 6 workers on 16x8c only
    verdicts = _verdicts("kip415-worker-joins", 12, "16x8c-task10ms")
    found = claims(verdicts)
    assert len(found) == 1
    text = connect_not_calibrated(found[0], verdicts)
    assert text.startswith("not calibrated: real Connect workers never ran "
                           "kip415-worker-joins at 12 workers on 16x8c-task10ms"), text
    assert "nearest measured: kip415-worker-joins at 3 and 6 workers on 16x8c" in text, text
    note = calibration_notes(found, verdicts)[0]
    assert "not calibrated" in note and "as for sentence" not in note, note
    # a scenario they never ran at all: the nearest are every scenario measured
    verdicts = _verdicts("worker-leaves-d30s", 12, "16x8c-task1s")
    found = claims(verdicts)
    note = calibration_notes(found, verdicts)[0]
    assert note.startswith("Calibration against real clients: not calibrated: real Connect "
                           "workers never ran worker-leaves-d30s at 12 workers"), note
    assert "worker-leaves-d0 at 3 and 6 workers on 16x8c" in note, note
    # a cell they ran: no such words
    verdicts = _verdicts("kip415-worker-joins", 6, "16x8c")
    found = claims(verdicts)
    assert connect_not_calibrated(found[0], verdicts) == ""
    assert "not calibrated" not in calibration_notes(found, verdicts)[0]
