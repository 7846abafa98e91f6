"""The first page's sentences as the outside reviewer asks for them (docs/lab.md "What the
tables show"): each at most 60 words, what runs over in the note under it and nothing lost;
every question the page's grids ask answered somewhere on it, and the introduction's line
saying where."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.lab.report import build_report
from groupcoord.lab.verdict import (
    DASH,
    MAX_WORDS,
    claims,
    grid_verdicts,
    labelled_words,
    words,
)

EAGER, RR, COOP = "classic:eager", "classic:eager-roundrobin", "classic:cooperative"
UNI, RANGE, UNI3 = "consumer:uniform", "consumer:range", "consumer:uniform@hb3s"


def _run(protocol: str, scenario: str, workload: str, seed: int, **metrics: Any
         ) -> dict[str, Any]:
    hb = "group.consumer.heartbeat.interval.ms" if protocol.startswith("consumer") \
        else "heartbeat.interval.ms"
    return {"run_id": f"{protocol}-{scenario}-{workload}-{seed}", "protocol": protocol,
            "scenario": scenario, "size": 10, "members": 10, "workload": workload,
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True, "caught_up": True,
            "noop_events": 0, "settings_json": json.dumps({hb: 3000}), **metrics}


def _tie_page() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Five protocols tied for the lowest time to converge against a sixth: the tie's every
    median and range makes the sentence run over 60 words."""
    grid = {"name": "costs", "question": "What does a member change cost?",
            "protocols": [EAGER, RR, UNI, RANGE, UNI3, COOP], "scenarios": ["scale-out"],
            "workloads": ["w"], "metrics": ["convergence_ms"], "seeds": 5}
    base = {EAGER: 1000.0, RR: 1100.0, UNI: 1200.0, RANGE: 1300.0, UNI3: 1400.0,
            COOP: 60000.0}
    runs = [_run(p, "scale-out", "w", s, convergence_ms=v + 400 * s)
            for p, v in base.items() for s in range(5)]
    return {"name": "t", "spec": "paper", "grids": [grid]}, runs


def test_a_sentence_over_60_words_gives_its_clauses_to_its_note_and_keeps_them() -> None:
    meta, runs = _tie_page()
    (c,) = claims(grid_verdicts(meta, runs))
    assert labelled_words(c) <= MAX_WORDS, c.text
    assert f"share the lowest time to converge against 60.8 s (60{DASH}61.6 s)" in c.text, c.text
    note = "; ".join(c.caveats)
    # the tie's medians and ranges, moved whole: the sentence had run over without the move
    (tie,) = [x for x in c.caveats if x.startswith("the tied best's medians and ranges: ")]
    for p, v in ((EAGER, f"1.8 s (1{DASH}2.6 s)"), (RR, f"1.9 s (1.1{DASH}2.7 s)"),
                 (UNI, f"2 s (1.2{DASH}2.8 s)"), (RANGE, f"2.1 s (1.3{DASH}2.9 s)")):
        assert f"{p} {v}" in note, note
    assert labelled_words(c) + words(tie) > MAX_WORDS


def test_the_page_prints_every_sentence_within_60_words_and_says_where_each_question_is(
        tmp_path: Path) -> None:
    meta, runs = _tie_page()
    few = {"name": "few", "question": "Does the ranking hold at 300 members?",
           "protocols": [EAGER, COOP], "scenarios": ["bounce"], "workloads": ["w"],
           "metrics": ["convergence_ms"], "seeds": 3}
    runs += [_run(p, "bounce", "w", s, convergence_ms=v + s)
             for p, v in ((EAGER, 1000.0), (COOP, 9000.0)) for s in range(3)]
    meta = {**meta, "grids": [*meta["grids"], few], "runs": len(runs), "cells": 2}
    (tmp_path / "runs").mkdir()
    pq.write_table(pa.Table.from_pylist(runs), tmp_path / "runs" / "part-0.parquet")
    (tmp_path / "sweep.json").write_text(json.dumps(meta))
    build_report(tmp_path)
    page = (tmp_path / "report" / "summary.md").read_text()
    shown = page.split("## What the tables show", 1)[1].split("## Settings", 1)[0]
    lines = re.findall(r"^\d+\. (.*?)  $", shown, flags=re.M)
    assert lines and all(words(x) <= MAX_WORDS for x in lines), lines
    assert f"the tied best's medians and ranges: classic:eager 1.8 s (1{DASH}2.6 s)" in shown
    intro = page.split("## How to read the tables", 1)[0]
    assert ("Where the page answers each grid's question (the numbered sentences under What "
            "the tables show): costs: 1; few: its table only (fewer than 5 seeds).") in intro
    html = (tmp_path / "report" / "index.html").read_text()
    assert "costs: 1; few: its table only (fewer than 5 seeds)." in html


def test_a_follow_up_sweep_of_the_anchors_cell_is_said_in_the_anchors_sentence() -> None:
    """Render 17: the metadata-age sweep (S11) asked the anchor's question (S12) at another
    refresh interval, in a sentence of its own; it is one sentence now, both commands."""
    anchor = {"name": "anchor", "question": "How long until 10 consumers process the topic?",
              "protocols": [EAGER, UNI], "scenarios": ["grow-by-900"], "workloads": ["light"],
              "metrics": ["convergence_ms"], "seeds": 20}
    age = {"name": "metadata-age",
           "question": "Do the marks on a topic's growth hold when the refresh comes every 30 s?",
           "protocols": [EAGER, UNI], "scenarios": ["grow-by-900"],
           "workloads": ["md30", "md300"], "metrics": ["convergence_ms"], "seeds": 5}
    # (each workload's work says its refresh: the cells differ)
    runs = [_run(p, "grow-by-900", "light", s, convergence_ms=v + 100 * s,
                 work=json.dumps({"metadata_max_age_ms": 300000}))
            for p, v in ((EAGER, 140000.0), (UNI, 4700.0)) for s in range(20)]
    # at a 30 s refresh eager is as quick (within the floor), at 300 s far slower
    for wl, age_ms, eager in (("md30", 30000, 4600.0), ("md300", 300000, 140000.0)):
        runs += [_run(p, "grow-by-900", wl, s, metadata_max_age_ms=age_ms,
                      convergence_ms=v + 100 * s, work=json.dumps({"metadata_max_age_ms": age_ms}))
                 for p, v in ((EAGER, eager), (UNI, 4700.0)) for s in range(5)]
    found = claims(grid_verdicts({"spec": "paper", "grids": [anchor, age]}, runs))
    (c,) = found
    assert c.grid == "anchor" and c.text.startswith("grow-by-900, 10 members: consumer:uniform")
    assert " Against metadata.max.age.ms (metadata-age): " in c.text, c.text
    assert ("no protocol separated from all the rest at 30,000 ms; consumer:uniform (uniform, "
            "3 s heartbeat) at 300,000 ms.") in c.text, c.text
    # the lowest median where none separated: in the note once the sentence names the
    # growth's cause (metadata discovery) within its 60 words
    assert "the lowest median: classic:eager at 30,000 ms" in " ".join(c.caveats), c.caveats
    assert "Cause: metadata discovery" in c.text
    first, second = c.command.split("\n")
    assert "--workload light " in first and "--workload" not in second
    assert labelled_words(c) <= MAX_WORDS


LATENESS = "Do the eager marks hold when the members' own work makes them late at the rebalance?"


def test_a_question_the_intro_names_is_answered_on_its_rows_with_members_late() -> None:
    """Render 17: lateness (the introduction's last question) had no sentence. Named by the
    introduction, it is a question of the page's own, answered on its rows where members are
    late (a workload whose poll loops pause), not on its row without lateness, where eager's
    win is larger."""
    grid = {"name": "lateness", "question": LATENESS, "protocols": [EAGER, COOP],
            "scenarios": ["scale-out"], "workloads": ["p1ms", "pause"],
            "metrics": ["convergence_ms"], "seeds": 5}
    runs = []
    for wl, eager in (("p1ms", 100.0), ("pause", 2000.0)):
        work = json.dumps({"pause_every_ms": 10000} if wl == "pause" else {})
        runs += [{**_run(p, "scale-out", wl, s, convergence_ms=v + 10 * s), "work": work}
                 for p, v in ((EAGER, eager), (COOP, 9000.0)) for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    found = claims(verdicts, intro="members late at a rebalance because of their own work "
                                   "(lateness).")
    # its answer first; its other marks are candidates as any grid's
    c = next(x for x in found if x.grid == "lateness")
    assert c.text.startswith("scale-out, 10 members, pause: classic:eager"), c.text
    assert "--workload pause " in c.command


def test_a_follow_up_with_one_member_late_is_said_in_its_plain_cells_sentence() -> None:
    """Render 17: busy-rolling (a member 0.5 or 2 s late at each rebalance of a rolling
    bounce) had no sentence, and rolling's was "no difference": the late member's finding is
    added to rolling's sentence, its command beside rolling's."""
    rolling = {"name": "rolling", "question": "Does the group keep processing?",
               "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce"],
               "workloads": ["w"], "metrics": ["convergence_ms"], "seeds": 5}
    busy = {"name": "busy-rolling",
            "question": "Does eager's rolling-bounce mark hold when one member is late?",
            "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce-slow2000ms"],
            "workloads": ["w"], "metrics": ["convergence_ms"], "seeds": 5}
    runs = [_run(p, "rolling-bounce", "w", s, convergence_ms=5000.0 + 10 * s + (20 if p == COOP
                                                                                   else 0))
            for p in (EAGER, COOP) for s in range(5)]
    runs += [_run(p, "rolling-bounce-slow2000ms", "w", s, convergence_ms=v + 10 * s)
             for p, v in ((EAGER, 30000.0), (COOP, 6000.0)) for s in range(5)]
    # (a page with room for busy-rolling's own sentence shows it; here it has none)
    found = claims(grid_verdicts({"spec": "paper", "grids": [rolling, busy]}, runs), limit=1)
    (c,) = found
    assert c.text.startswith("rolling, time to converge: no difference"), c.text
    assert ("With one member 2 s late at each rebalance (rolling-bounce-slow2000ms, "
            "busy-rolling): classic:cooperative 6.02 s has the lowest, against classic:eager "
            "30 s.") in c.text, c.text
    assert c.command.split("\n")[1].startswith(
        "groupcoord lab run --spec paper --scenario rolling-bounce-slow2000ms --size 10")


def test_a_follow_ups_lag_is_quoted_in_both_directions_beside_its_finding() -> None:
    """Outside review round 13 (S4): the rolling sentence quoted busy-rolling's lag peak
    only; on lag eager was best with a member 0.5 s late and 4.6x worse at 2 s late. The
    added finding now quotes the grid's lag on each of its late rows, both directions."""
    rolling = {"name": "rolling", "question": "Does the group keep processing?",
               "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce"],
               "workloads": ["w"], "metrics": ["convergence_ms"], "seeds": 5}
    busy = {"name": "busy-rolling",
            "question": "Does eager's rolling-bounce mark hold when one member is late?",
            "protocols": [EAGER, COOP],
            "scenarios": ["rolling-bounce-slow500ms", "rolling-bounce-slow2000ms"],
            "workloads": ["w"], "metrics": ["convergence_ms", "lag_record_s"], "seeds": 5}
    runs = [_run(p, "rolling-bounce", "w", s, convergence_ms=5000.0 + 10 * s,
                 lag_record_s=1000.0 + s) for p in (EAGER, COOP) for s in range(5)]
    for scen, conv, lag in (("rolling-bounce-slow500ms", {EAGER: 5200.0, COOP: 5210.0},
                             {EAGER: 8000.0, COOP: 11000.0}),
                            ("rolling-bounce-slow2000ms", {EAGER: 30000.0, COOP: 6000.0},
                             {EAGER: 50000.0, COOP: 11000.0})):
        # at 2 s late one cooperative seed reaches past eager's: the lag does not separate
        runs += [_run(p, scen, "w", s, convergence_ms=conv[p] + 10 * s,
                      lag_record_s=(60000.0 if (p == COOP and s == 4 and "2000" in scen)
                                    else lag[p] + s)) for p in (EAGER, COOP) for s in range(5)]
    (c,) = claims(grid_verdicts({"spec": "paper", "grids": [rolling, busy]}, runs), limit=1)
    said = " ".join((c.text, *c.caveats))
    assert "With one member 2 s late at each rebalance (rolling-bounce-slow2000ms" in said
    assert ("Its lag: 0.5 s late ★ classic:eager 8,002 record·s against classic:cooperative "
            "11,002 record·s; 2 s late classic:cooperative 11,002 record·s against "
            "classic:eager 50,002 record·s (4.5x, split seeds)") in said, said


def test_a_sentence_whose_winner_loses_another_row_of_its_grid_says_so() -> None:
    """Outside review round 13 (S12): lateness answered from its mild row, where eager wins,
    while its heavier row had eager at 89,405 against cooperative's 19,710. A sentence whose
    winner loses another row of the same grid says so: the row and the two medians."""
    grid = {"name": "lateness", "question": "What does a member change cost?",
            "protocols": [EAGER, COOP], "scenarios": ["scale-out"], "workloads": ["a", "b"],
            "metrics": ["convergence_ms"], "seeds": 5}
    runs = [_run(p, "scale-out", wl, s, convergence_ms=v + 10 * s)
            for wl, vals in (("a", {EAGER: 1000.0, COOP: 9000.0}),
                             ("b", {EAGER: 8000.0, COOP: 2000.0}))
            for p, v in vals.items() for s in range(5)]
    found = claims(grid_verdicts({"spec": "paper", "grids": [grid]}, runs), limit=1)
    (c,) = found
    assert c.best == EAGER and c.workload == "a", c.text
    said = " ".join((c.text, *c.caveats))
    assert ("It loses in scale-out, 10 members, b (lateness): classic:eager 8.02 s against "
            "classic:cooperative 2.02 s, 4.0x") in said, said


def test_a_grid_a_split_cells_note_answers_has_no_sentence_of_its_own() -> None:
    """Render 18: kip415-stop-edge asks where the 3-worker join's split edge lies; the split
    cell's note answers it (naming the grid), and its own sentence (a win at one stop time)
    took the place of the crossover's crash sentence. Noted, it has none."""
    meta, runs = _tie_page()
    edge = {"name": "edge", "question": "At which stop time does the join wait once more?",
            "protocols": [EAGER, COOP], "scenarios": ["bounce"], "workloads": ["w"],
            "metrics": ["convergence_ms"], "seeds": 5}
    runs += [_run(p, "bounce", "w", s, convergence_ms=v + s)
             for p, v in ((EAGER, 1000.0), (COOP, 9000.0)) for s in range(5)]
    verdicts = grid_verdicts({**meta, "grids": [*meta["grids"], edge]}, runs)
    assert {c.grid for c in claims(verdicts)} == {"costs", "edge"}
    assert {c.grid for c in claims(verdicts, noted={"edge"})} == {"costs"}


def test_a_likewise_at_a_short_kip415_delay_quotes_the_default_delays_downtime() -> None:
    """Outside review round 13 (S1): "Likewise in worker-crash-d0: 11 against 128" restarts;
    at Kafka's default 300 s delay the same restarts cost 3,722 task·s of downtime against
    eager's 475. A Likewise on a short-delay variant quotes the default delay's downtime."""
    from groupcoord.lab.verdict import Claim, _add_likewise

    sess, eag = "classic-connect:sessioned", "classic-connect:eager"
    grid = {"name": "kip415-crash", "question": "Do the KIP-415 marks hold on a crash?",
            "protocols": [eag, sess], "scenarios": ["worker-crash-d0", "worker-crash-d300s"],
            "workloads": ["16x8c"], "metrics": ["task_restarts", "task_downtime_task_s"],
            "seeds": 5}
    runs = [_run(p, scen, "16x8c", s, task_restarts=restarts[p],
                 task_downtime_task_s=down[p] + s)
            for scen, restarts, down in (("worker-crash-d0", {sess: 11, eag: 128},
                                          {sess: 40.0, eag: 470.0}),
                                         ("worker-crash-d300s", {sess: 11, eag: 128},
                                          {sess: 3720.0, eag: 475.0}))
            for p in (eag, sess) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    row = next(r for r in g.rows if r.scenario == "worker-crash-d0")
    mv = next(x for x in row.metrics if x.metric.column == "task_restarts")
    assert mv.best == (sess,)
    host = Claim("kip415", "kip415-connector-added: sessioned has the lowest task restarts.",
                 "groupcoord lab run --spec paper --size 10 --protocol x", "task_restarts",
                 "kip415-connector-added", 10, sess, eag)
    _add_likewise(host, g, row, mv)
    assert ("Likewise in worker-crash-d0, 10 workers (kip415-crash): 11 against 128; at "
            "Kafka's default scheduled.rebalance.max.delay.ms of 300 s (worker-crash-d300s) "
            "their task downtime is 3,722 task·s against 477 task·s.") in host.text, host.text


def test_a_partition_growth_sentence_says_metadata_discovery_and_time_to_converge() -> None:
    """Outside review round 13 (S3, S11): partition-added's classic cost is mostly the
    client's 5-minute metadata.max.age.ms. The sentence says the cause, quotes time to
    converge beside the lag, and the classic protocol at each refresh a grid swept."""
    uni = "consumer:uniform"

    def run(p: str, wl: str, s: int, lag: float, conv: float, age: int) -> dict[str, Any]:
        key = "metadata.max.age.ms"
        return {**_run(p, "partition-added", wl, s, lag_record_s=lag + s,
                       convergence_ms=conv + s),
                "settings_json": json.dumps({key: age} if p.startswith("classic") else {}),
                "work": json.dumps({"metadata_max_age_ms": age, "records_per_s": 1 if wl == "4x250" else 2})}

    # the sentence is in time to converge over 20 seeds (a refresh phase's draw: the lag's
    # record·s are quoted beside it, never headlined, and 5 seeds carry no sentence)
    cons = {"name": "consumers", "question": "What does a member change cost?",
            "protocols": [COOP, uni], "scenarios": ["partition-added"], "workloads": ["4x250"],
            "metrics": ["lag_record_s", "convergence_ms"], "seeds": 20}
    age = {"name": "metadata-age", "question": "What does the metadata refresh change?",
           "protocols": [COOP, uni], "scenarios": ["partition-added"],
           "workloads": ["light-md300s", "light-md30s"],
           "metrics": ["convergence_ms", "lag_record_s"], "seeds": 5}
    runs = [run(COOP, "4x250", s, 2_000_000.0, 150_000.0, 300_000) for s in range(20)]
    runs += [run(uni, "4x250", s, 1_800.0, 4_000.0, 300_000) for s in range(20)]
    for wl, a, lag, conv in (("light-md300s", 300_000, 900_000.0, 150_000.0),
                             ("light-md30s", 30_000, 90_000.0, 15_000.0)):
        # another work and seeds of its own (the same cell in two grids is pooled)
        runs += [run(COOP, wl, s, lag, conv, a) for s in range(100, 105)]
        runs += [run(uni, wl, s, 1_000.0, 4_000.0, a) for s in range(100, 105)]
    found = claims(grid_verdicts({"spec": "paper", "grids": [cons, age]}, runs))
    c = next(x for x in found if x.grid == "consumers")
    assert c.metric == "convergence_ms", c.text
    said = " ".join((c.text, *c.caveats))
    # (the leader's refresh: only the classic leader compares the metadata with its assignment)
    assert ("Cause: metadata discovery (the classic leader's next refresh finds the new "
            "partitions, metadata.max.age.ms 300 s); lag 1,810 record·s against "
            "2,000,010 record·s") in c.text, c.text
    # over 60 words the refresh sweep's quote goes to the note under it
    assert ("classic:cooperative at a 30 s refresh (metadata-age, light-md30s): 15.1 s "
            "against 150 s at 300 s") in said, said
    assert labelled_words(c) <= MAX_WORDS
    # at 5 seeds the same row carries no sentence
    few = [r for r in runs if r["workload"] != "4x250" or r["seed"] < 5]
    found = claims(grid_verdicts({"spec": "paper", "grids": [{**cons, "seeds": 5}, age]}, few))
    assert not any(x.grid == "consumers" and x.scenario == "partition-added" for x in found)
