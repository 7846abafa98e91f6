"""A mark the paired sign test gives where the seeds' ranges overlap is printed apart from a
mark with separated ranges (docs/lab.md "Which differences count"): ☆ instead of ★ in the
verdict table, the verdict word, the sentence and the page's legend."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.report import _mark, _verdict_word, verdict_md
from groupcoord.lab.verdict import PAIRED_MARK, claims, grid_verdicts

EAGER, COOP = "classic:eager", "classic:cooperative"


def _run(protocol: str, scenario: str, seed: int, lag: float) -> dict[str, Any]:
    return {"run_id": f"{protocol}-{scenario}-{seed}", "protocol": protocol,
            "scenario": scenario, "size": 10, "members": 10, "workload": "field-costs",
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True, "caught_up": True,
            "noop_events": 0, "lag_record_s": lag,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000})}


def _runs() -> list[dict[str, Any]]:
    """bounce-down30s: eager below cooperative on every one of 10 seeds, the ranges
    overlapping (eager up to 717, cooperative from 699: the shape of the field's cell);
    bounce: eager's range wholly below cooperative's."""
    rows = []
    for s in range(10):
        rows.append(_run(EAGER, "bounce-down30s", s, 400.0 + 35 * s))       # 400-715
        rows.append(_run(COOP, "bounce-down30s", s, 700.0 + 25 * s))        # 700-925
        rows.append(_run(EAGER, "bounce", s, 100.0 + s))
        rows.append(_run(COOP, "bounce", s, 900.0 + s))
    return rows


GRID = {"name": "bounce-downtime", "protocols": [EAGER, COOP],
        "scenarios": ["bounce", "bounce-down30s"], "metrics": ["lag_record_s"], "seeds": 10}


def test_a_sign_test_mark_is_printed_apart_from_separated_ranges() -> None:
    verdicts = grid_verdicts({"spec": "paper", "grids": [GRID]}, _runs())
    rows = {r.scenario: r for r in verdicts[0].rows}
    paired, apart = rows["bounce-down30s"].metrics[0], rows["bounce"].metrics[0]
    assert paired.verdict == "best" and paired.best == (EAGER,)
    assert apart.verdict == "best" and apart.best == (EAGER,)
    assert paired.paired and not apart.paired
    # the table's cell and verdict column
    c = paired.cells[EAGER]
    assert _mark(c.mark, c.paired) == f"{PAIRED_MARK} "
    assert _mark(apart.cells[EAGER].mark, apart.cells[EAGER].paired) == "★ "
    assert _verdict_word(paired).startswith(f"{PAIRED_MARK} best (")
    assert _verdict_word(apart).startswith("★ best")
    md = verdict_md(verdicts[0])
    line = next(x for x in md.splitlines() if "bounce-down30s" in x)
    assert f"{PAIRED_MARK} 558" in line and "★" not in line, line
    # the sentence names its winner with the same mark
    found = {c.scenario: c for c in claims(verdicts)}
    assert found["bounce-down30s"].text.count(PAIRED_MARK) == 1
    assert PAIRED_MARK not in found["bounce"].text
