"""The first page's sentences as a field reader checks them (docs/lab.md "The report"): one
sentence per claim across the sizes where it reads alike, each a claim of about 60 words with
its command, a condition shared by several sentences stated once above them, every caveat's
facts in the note under its sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.lab.caveats import with_caveats
from groupcoord.lab.mechanism import with_conditions
from groupcoord.lab.report import build_report, condition_letters, sentence_text
from groupcoord.lab.verdict import claims, grid_verdicts, sizes_text, words

EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"
LABELS = [f"{p}@hbspread{s}" for s in ("0s", "1s", "3s") for p in (EAGER, SESSIONED)]


def _run(protocol: str, seed: int, size: int, scenario: str = "kip415-worker-joins",
         **metrics: Any) -> dict[str, Any]:
    return {"run_id": f"{protocol}-{scenario}-{size}-{seed}", "protocol": protocol,
            "scenario": scenario, "size": size, "members": size, "workload": "16x8c",
            "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True, "noop_events": 0,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000}), **metrics}


def _spread_rows(at12: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """kip415-hb-spread's task downtime at 6 and 12 workers: sessioned lowest at every spread
    at 6; at 12 as ``at12`` says (eager, sessioned per spread)."""
    at6 = {"0s": (340.0, 80.0), "1s": (400.0, 90.0), "3s": (450.0, 100.0)}
    rows = []
    for size, at in ((6, at6), (12, at12)):
        for label in LABELS:
            base, _, tail = label.partition("@hbspread")
            v = at[tail][0 if base == EAGER else 1]
            rows += [_run(label, s, size, task_downtime_task_s=v + s) for s in range(5)]
    return rows


GRID = {"name": "kip415-hb-spread", "protocols": LABELS, "scenarios": ["kip415-worker-joins"],
        "metrics": ["task_downtime_task_s"], "seeds": 5}


def test_a_sweep_sentence_names_every_size_where_it_reads_alike() -> None:
    """Render 14: kip415-hb-spread's sessioned win at 0, 1 and 3 s of spread was two
    sentences, one at 6 and one at 12 workers, word for word the same: the size rule (one
    sentence per scenario and metric) now holds for sweeps too."""
    alike = {"0s": (330.0, 77.0), "1s": (390.0, 85.0), "3s": (440.0, 95.0)}
    found = claims(grid_verdicts({"spec": "paper", "grids": [GRID]}, _spread_rows(alike)))
    (c,) = found
    assert c.text.startswith("kip415-worker-joins, 6 and 12 workers on 16x8c (kip415-hb-spread)")
    assert c.text.endswith(": classic-connect:sessioned, the same winner from 0 to 3,000 ms: "
                           "no crossover in the sweep.")
    assert c.sizes == (6, 12) and c.size == 12
    assert "--size 6 --size 12 " in c.command
    # where the sizes differ (eager lowest at 0 s at 12 workers), each keeps its own
    differ = {"0s": (60.0, 77.0), "1s": (390.0, 85.0), "3s": (440.0, 95.0)}
    found = claims(grid_verdicts({"spec": "paper", "grids": [GRID]}, _spread_rows(differ)))
    assert sorted(c.sizes for c in found) == [(6,), (12,)]
    twelve = next(c for c in found if c.sizes == (12,))
    assert "classic-connect:eager at 0 ms" in twelve.text and "--size 12 " in twelve.command
    assert "--size 6" not in twelve.command
    assert sizes_text([12, 3, 6], "workers") == "3, 6 and 12 workers"


def _page_rows() -> list[dict[str, Any]]:
    """Three KIP-415 scenarios at 12 workers, sessioned restarting far fewer tasks (every
    Connect sentence rests on the same task-time inputs), and the spread grid."""
    rows = []
    for scenario, eager in (("kip415-connector-added", 128), ("worker-crash-d0", 128),
                            ("kip415-leader-bounces", 512)):
        for s in range(5):
            rows.append(_run(EAGER, s, 12, scenario, task_restarts=eager,
                             task_downtime_task_s=400.0 + s, stall_ms=2020 + s))
            rows.append(_run(SESSIONED, s, 12, scenario, task_restarts=10 + (s % 2),
                             task_downtime_task_s=60.0 + s, stall_ms=0))
    alike = {"0s": (330.0, 77.0), "1s": (390.0, 85.0), "3s": (440.0, 95.0)}
    return rows + _spread_rows(alike)


META = {"name": "t", "spec": "paper", "grids": [
    {"name": "kip415", "protocols": [EAGER, SESSIONED], "seeds": 5,
     "scenarios": ["kip415-connector-added", "worker-crash-d0", "kip415-leader-bounces"],
     "metrics": ["task_restarts", "task_downtime_task_s", "stall_ms"]}, GRID]}


def test_a_condition_shared_by_sentences_is_stated_once_and_sentences_stay_short() -> None:
    rows = _page_rows()
    verdicts = grid_verdicts(META, rows)
    found = with_caveats(with_conditions(claims(verdicts), verdicts, rows), verdicts, rows)
    connect = [c for c in found if c.conditions]
    assert len(connect) >= 3
    letters = condition_letters(found)
    # the task-time inputs: one clause, one letter, for every Connect sentence
    (inputs,) = [x for x in letters if x.startswith("a task stops in 1 s and starts in 1 s")]
    assert all(inputs in c.conditions for c in connect)
    for c in found:
        said = sentence_text(c, letters)
        assert words(said) <= 60, said
        if c in connect:
            assert said.endswith(f"Conditions: ({letters[inputs]}).")
            assert inputs not in said


def test_the_page_keeps_every_fact_of_every_sentence(tmp_path: Path) -> None:
    """Moving conditions above the list and caveats under each sentence loses nothing: every
    clause of every sentence's conditions and caveats is on the page, each condition once."""
    rows = _page_rows()
    (tmp_path / "runs").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "runs" / "part-0.parquet")
    (tmp_path / "sweep.json").write_text(json.dumps({**META, "runs": len(rows), "cells": 8}))
    build_report(tmp_path)
    page = (tmp_path / "report" / "summary.md").read_text()
    shown = page.split("## What the tables show", 1)[1].split("## Settings", 1)[0]
    verdicts = grid_verdicts(META, rows)
    found = with_caveats(with_conditions(claims(verdicts), verdicts, rows), verdicts, rows)
    assert found and any(c.caveats for c in found)
    for c in found:
        assert c.text in shown
        for clause in (*c.conditions, *c.caveats):
            assert clause in shown, clause
    for clause in {x for c in found for x in c.conditions}:
        assert shown.count(clause) == 1, clause
    # each numbered sentence line (the claim, before its command) is at most 60 words
    for line in re.findall(r"^\d+\. (.*?)  $", shown, flags=re.M):
        assert words(line) <= 60, line
    # the tables: each Connect row's load says its times; how they make a stall and a
    # revocation is said once per grid above its table (it was 60 words in every row)
    from groupcoord.lab.mechanism import TASK_POOL

    tables = page.split("## What the tables show", 1)[0]
    assert tables.count(TASK_POOL) == 2  # kip415 and kip415-hb-spread
    assert "| 16x8c: a task stops in 1 s and starts in 1 s (model inputs) |" in tables
    assert "Kafka's start/stop pool" not in tables.replace(TASK_POOL, "")
    html = (tmp_path / "report" / "index.html").read_text()
    assert "<ul class='conds'>" in html and "<small class='note'>Caveats: " in html


def test_a_split_cell_is_quoted_as_its_outcomes_in_caveats_and_calibration() -> None:
    """Render 14: kip415-worker-joins at 3 workers, sessioned's task downtime is 162 on some
    seeds and 330 on others (the table shows both); the spread sentences' caveat quoted it as
    "lowest median ... 330 task·s", and the calibration note's "162 / 349 (not within 2x)" did
    not say that the measured 349 lies by the cell's other outcome."""
    from groupcoord.lab.caveats import other_workloads
    from groupcoord.lab.report import split_calibration_text

    # sessioned: 162 or 330 task·s by seed, 2 of 5 low on the first set, 4 of 5 on the fresh
    sessioned = [162.1, 162.6, 330.0, 329.6, 331.0, 162.2, 162.6, 329.9, 162.8, 161.8]
    rows = [{**_run(EAGER, s, 3, task_downtime_task_s=540.0 + s), "replicate": s}
            for s in range(10)]
    rows += [{**_run(SESSIONED, s, 3, task_downtime_task_s=v), "replicate": s}
             for s, v in enumerate(sessioned)]
    kip415 = {"name": "kip415", "protocols": [EAGER, SESSIONED], "seeds": 5,
              "confirm_seeds": 5, "scenarios": ["kip415-worker-joins"],
              "metrics": ["task_downtime_task_s"]}
    # the spread swept on another workload (kip415-hb-spread-10ms on 16x8c-task10ms)
    spread = [{**r, "workload": "16x8c-task10ms"} for r in _spread_rows(
        {"0s": (330.0, 77.0), "1s": (390.0, 85.0), "3s": (440.0, 95.0)})]
    verdicts = grid_verdicts({"spec": "paper", "grids": [kip415, GRID]}, rows + spread)
    g = verdicts[0]
    (row,) = g.rows
    assert row.metrics[0].cells[SESSIONED].split
    c = next(x for x in claims(verdicts) if x.grid == "kip415-hb-spread")
    text = other_workloads(c, verdicts)
    assert ("kip415 (3 workers, 16x8c): \u2605 classic-connect:sessioned, lowest median "
            "classic-connect:sessioned 330 task·s | 162 task·s (3 of 5 | 2 of 5 seeds: split)"
            ) in text, text
    cal = [{"scenario": "kip415-worker-joins", "size": 3, "protocol": SESSIONED,
            "workload": "16x8c",
            "task_downtime_task_s": {"sim": 162.4, "wire": 348.8, "within_2x": False}}]
    said = split_calibration_text("kip415-worker-joins", [SESSIONED], verdicts, cal)
    # round 11: the branch the real workers measured first, not the low outcome
    assert ("classic-connect:sessioned at 3 workers, task downtime: the simulated cell splits "
            "(330 task·s on 4 of 10 seeds, the branch the real workers measured (349 task·s, "
            "1.06x); 162 task·s on 6 of 10 seeds; both seed sets)") in said, said
    # within 2x: nothing to say
    cal[0]["task_downtime_task_s"]["within_2x"] = True
    assert split_calibration_text("kip415-worker-joins", [SESSIONED], verdicts, cal) == ""


def test_a_protocols_assignor_and_heartbeat_are_said_once_above_the_sentences() -> None:
    """Render 13: four tied protocols, each with "(assignor, N s heartbeat)", made one
    sentence 157 words long; the page says each protocol's assignor and heartbeat once."""
    from groupcoord.lab.report import protocol_names, protocols_intro

    def run(p: str, s: int, hb: int, stall: float) -> dict[str, Any]:
        return {**_run(p, s, 8, "scale-out", stall_ms=stall),
                "settings_json": json.dumps({"heartbeat.interval.ms": hb,
                                             "group.consumer.heartbeat.interval.ms": hb})}

    rows = [run("classic:eager", s, 3000, 9000 + s) for s in range(5)]
    rows += [run("consumer:uniform", s, 5000, 10 + s) for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [
        {"name": "consumers", "protocols": ["classic:eager", "consumer:uniform"],
         "metrics": ["stall_ms"], "seeds": 5}]}, rows)
    (c,) = claims(verdicts)
    # (its 0.012 s stall is under the 0.25 s floor: "no measurable", not "the lowest")
    assert "consumer:uniform (uniform, 5 s heartbeat) has no measurable stall" in c.text
    names = protocol_names([c], verdicts)
    assert names == {"consumer:uniform (uniform, 5 s heartbeat)": "consumer:uniform",
                     "classic:eager (range, 3 s heartbeat)": "classic:eager"}
    said = sentence_text(c, {}, names)
    assert said.startswith("scale-out, 8 members: consumer:uniform has no measurable stall")
    assert "for classic:eager (the runner-up)" in said
    assert protocols_intro(names) == (
        "Protocols as the sentences name them, with their assignor and heartbeat: "
        "classic:eager: range, 3 s heartbeat; consumer:uniform: uniform, 5 s heartbeat.")
