"""The twelfth outside review's report-level findings (docs/lab.md "The report"): a split cell
leads with the outcome most seeds had, and a real Connect workers' calibration row on a split
cell compares the measured value with the branch nearest to it."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import BY_COLUMN
from groupcoord.lab.report import _cell_text, calibration_notes, calibration_tables_md
from groupcoord.lab.verdict import Cell, claims, grid_verdicts, modes

EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"
DOWNTIME = BY_COLUMN["task_downtime_task_s"]


def _run(protocol: str, seed: int, size: int, **metrics: Any) -> dict[str, Any]:
    return {"run_id": f"{protocol}-{size}-{seed}", "protocol": protocol,
            "scenario": "kip415-worker-joins", "size": size, "members": size,
            "workload": "16x8c", "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000}), **metrics}


GRID = {"name": "kip415", "protocols": [EAGER, SESSIONED], "scenarios": ["kip415-worker-joins"],
        "metrics": ["task_downtime_task_s"], "seeds": 5}

#: The sessioned 3-worker join of render 16: 162 task·s on 2 seeds, 330 on 3; time until
#: balanced (not a column of the grid) about 5.8 s on the low branch, 8.3 s on the high one.
LOW, HIGH = {0: 162.1, 1: 162.6}, {2: 329.5, 3: 330.0, 4: 331.0}


def _runs() -> list[dict[str, Any]]:
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, 3, task_downtime_task_s=540.0 + s, task_restarts=128.0,
                         time_to_balance_ms=8800.0 + s))
        low = s in LOW
        rows.append(_run(SESSIONED, s, 3, task_downtime_task_s={**LOW, **HIGH}[s],
                         task_restarts=50.0, time_to_balance_ms=(5800.0 if low else 8300.0) + s))
        rows.append(_run(EAGER, s, 12, task_downtime_task_s=500.0 + s))
        rows.append(_run(SESSIONED, s, 12, task_downtime_task_s=60.0 + s))
    return rows


def test_a_split_cell_leads_with_the_outcome_most_seeds_had() -> None:
    """Round 12: "★ 162 | 330 (2 of 5 | 3 of 5)" led with the branch of fewer seeds (and not
    the one the real workers measured); on a tie of counts the order stays low to high."""
    c = Cell({**LOW, **HIGH})
    c.outcomes = modes(list(c.values.values()), DOWNTIME)
    assert c.split
    assert _cell_text(DOWNTIME, c) == ("330 | 162", "3 of 5 | 2 of 5")
    tie = Cell({0: 162.0, 1: 163.0, 2: 330.0, 3: 331.0})
    tie.outcomes = modes(list(tie.values.values()), DOWNTIME)
    assert tie.split
    assert _cell_text(DOWNTIME, tie) == ("162 | 330", "2 of 4 | 2 of 4")
    # the verdict table of a whole grid shows the same order
    verdicts = grid_verdicts({"spec": "paper", "grids": [GRID]}, _runs())
    row = next(r for r in verdicts[0].rows if r.size == 3)
    assert _cell_text(DOWNTIME, row.metrics[0].cells[SESSIONED])[0] == "330 | 162"


def test_a_connect_calibration_row_on_a_split_cell_uses_the_branch_nearest_the_wire() -> None:
    """Round 12: the sessioned 3-worker row compared the measured 349 task·s with the 162
    branch (its two paired seeds') and read "outside 2x (0.47)", where the 330 branch is
    1.06x of it; its time until balanced comes from the same branch's seeds in the runs."""
    runs = _runs()
    verdicts = grid_verdicts({"spec": "paper", "grids": [GRID]}, runs)
    found = [c for c in claims(verdicts) if c.size == 12]
    assert found
    md = "\n".join(calibration_tables_md(found, verdicts, runs))
    row = next(x for x in md.splitlines() if x.startswith(f"| {SESSIONED}, real Connect "
                                                          "workers, 3 workers"))
    assert "330 / 349 (0.95)" in row, row
    assert "8,303 / 12,354 (0.67)" in row, row
    assert "| within 2x |" in row, row
    assert ("nearest the measured value: 330 task·s on 3 of 5 seeds; the other 162 task·s "
            "on 2; both seed sets)" in row), row
    # the sentence's flag reads the same row: no "outside 2x" for it
    note = calibration_notes(found, verdicts, runs)[0]
    assert "3 workers 2.15x" not in note and "table \"kip415-worker-joins\"" in note, note
    before = calibration_notes(found, verdicts, [])[0]
    assert "3 workers 2.15x" not in before, before
    # without the runs, the metrics the verdict row carries still come from the branch
    bare = "\n".join(calibration_tables_md(found, verdicts))
    assert "330 / 349 (0.95)" in bare
    eager = next(x for x in md.splitlines() if x.startswith(f"| {EAGER}, real Connect "
                                                            "workers, 3 workers"))
    assert "nearest" not in eager and "541 / 668" in eager, eager


#: Per (protocol, spread): each seed's stall, ms: eager best without a spread, a tie at 1 s,
#: KIP-848 best only at 3 s (S11's shape: rolling-bounce's consumer:uniform mark).
SPREAD_STALLS = {("classic:eager", "0s"): 100, ("consumer:uniform", "0s"): 3000,
                 ("classic:eager", "1s"): 2000, ("consumer:uniform", "1s"): 2001,
                 ("classic:eager", "3s"): 6000, ("consumer:uniform", "3s"): 2000}
WIRE = [{"client": "Java", "rebalances": 24, "median_s": 0.022, "largest_s": 0.094}]
STABLE = [{"client": "Java", "rebalances": 1, "median_s": 0.981, "largest_s": 1.098,
           "stable_min": 35}]


def _spread_run(label: str, seed: int, stall: float) -> dict[str, Any]:
    spread = int(label.rpartition("@hbspread")[2].removesuffix("s")) * 1000
    settings: dict[str, Any] = {"heartbeat.interval.ms": 3000}
    if spread:
        settings["heartbeat.spread.ms"] = spread
    return {"protocol": label, "scenario": "rolling-bounce", "size": 8, "workload": "4x250",
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True, "caught_up": True,
            "stall_ms": stall + seed, "settings_json": json.dumps(settings),
            "moved": 4, "converge_ms": 1000.0}


def _spread_grid(stalls: dict[tuple[str, str], int]) -> Any:
    from groupcoord.lab.verdict import grid_verdict

    labels = sorted({f"{p}@hbspread{s}" for p, s in stalls})
    runs = [_spread_run(f"{p}@hbspread{s}", seed, stall) for (p, s), stall in stalls.items()
            for seed in range(5)]
    return grid_verdict({"name": "hb-spread", "protocols": labels, "metrics": ["stall_ms"],
                         "scenarios": ["rolling-bounce"], "seeds": 5, "spec": "paper"}, runs,
                        "paper")


def test_a_mark_only_at_a_spread_wider_than_the_wire_measured_says_so() -> None:
    """Round 12: S11's mark (consumer:uniform on rolling-bounce) exists only at a 3 s
    heartbeat spread, and its sentence did not quote what the wire measured (at most about
    1.1 s), as S3's and S7's do."""
    from groupcoord.lab.verdict import mark_wider_than_measured

    g = _spread_grid(SPREAD_STALLS)
    marks = {r.x: (r.metrics[0].verdict, r.metrics[0].best) for r in g.rows}
    assert marks[3000.0] == ("best", ("consumer:uniform",)), marks
    assert marks[0.0] == ("best", ("classic:eager",)), marks
    mark_wider_than_measured([g], WIRE, STABLE)
    by_x = {r.x: r.metrics[0] for r in g.rows}
    lim = by_x[3000.0].limit
    assert lim.startswith("exists only at a heartbeat spread of 3 s, wider than real classic "
                          "members showed on the wire (at most 1.1 s: "), lim
    assert ("within 0.094 s of one another in an eager rolling bounce; within 1.098 s of one "
            "another at a join into a group stable for minutes)") in lim, lim
    assert by_x[0.0].limit == ""  # a spread the wire saw
    said = " ".join(c.text + " ".join(c.caveats) for c in claims([g]))
    assert "the mark exists only at a heartbeat spread of 3 s, wider than" in said.lower(), said
    assert "Eager's mark exists" not in said
    # the same protocol marked within the measured spread too: no such note
    also = _spread_grid({**SPREAD_STALLS, ("classic:eager", "1s"): 6000})
    assert {r.x: r.metrics[0].best for r in also.rows}[1000.0] == ("consumer:uniform",)
    mark_wider_than_measured([also], WIRE, STABLE)
    assert all(r.metrics[0].limit == "" for r in also.rows)
    # no wire rows: nothing to compare with, nothing said
    bare = _spread_grid(SPREAD_STALLS)
    mark_wider_than_measured([bare], [], [])
    assert all(r.metrics[0].limit == "" for r in bare.rows)
