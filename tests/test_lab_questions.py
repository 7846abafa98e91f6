"""Every question the page's grids ask gets a sentence (docs/lab.md "What the tables show"):
a grid that asks a question of its own (not whether another grid's marks hold) has its
strongest win among the sentences, or a sentence saying no protocol differs; a sentence on a
grid whose findings an earlier sentence already quotes is not shown."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.verdict import MAX_CLAIMS, MAX_WORDS, claims, grid_verdicts, labelled_words

EAGER, COOP = "classic:eager", "classic:cooperative"


def _run(grid: str, protocol: str, scenario: str, seed: int, ms: float) -> dict[str, Any]:
    return {"run_id": f"{grid}-{protocol}-{scenario}-{seed}", "protocol": protocol,
            "scenario": scenario, "size": 10, "members": 10, "workload": f"w-{grid}",
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "convergence_ms": ms + 10 * seed,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000})}


def _grid(name: str, question: str, scenarios: list[str]) -> dict[str, Any]:
    return {"name": name, "question": question, "protocols": [EAGER, COOP],
            "scenarios": scenarios, "workloads": [f"w-{name}"], "metrics": ["convergence_ms"],
            "seeds": 5}


def _setup() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    grids, runs = [], []
    # eight follow-up grids, each with a large win per protocol (16 strong candidates)
    for i in range(8):
        name = f"follow{i}"
        grids.append(_grid(name, f"Do the marks hold under condition {i}?", ["a", "b"]))
        for s in range(5):
            runs += [_run(name, EAGER, "a", s, 1000.0), _run(name, COOP, "a", s, 60000.0),
                     _run(name, EAGER, "b", s, 60000.0), _run(name, COOP, "b", s, 1000.0)]
    # a question of the page's own with a modest win (2x)
    grids.append(_grid("consumers", "What does a member change cost?", ["scale-out"]))
    # and one where no protocol differs
    grids.append(_grid("rolling", "Does the group keep processing?", ["rolling-bounce"]))
    for s in range(5):
        runs += [_run("consumers", EAGER, "scale-out", s, 5000.0),
                 _run("consumers", COOP, "scale-out", s, 10000.0),
                 _run("rolling", EAGER, "rolling-bounce", s, 5000.0),
                 _run("rolling", COOP, "rolling-bounce", s, 5020.0)]
    return grids, runs


def test_every_question_of_its_own_gets_a_sentence() -> None:
    grids, runs = _setup()
    verdicts = grid_verdicts({"spec": "paper", "grids": grids}, runs)
    found = claims(verdicts)
    assert len(found) == MAX_CLAIMS
    by_grid = {c.grid: c for c in found}
    # the modest win is on the page, though 16 stronger ones compete for 12 places
    assert "consumers" in by_grid
    assert by_grid["consumers"].best == EAGER and by_grid["consumers"].worse == COOP
    # the grid without a difference says so, with its lowest median and its command
    none = by_grid["rolling"].text
    assert none.startswith("rolling, time to converge: no difference; no protocol separates "
                           "from all the rest in its one row"), none
    assert "rolling-bounce, 10 members: classic:eager 5.02 s" in none, none
    assert by_grid["rolling"].command.startswith(
        "groupcoord lab run --spec paper --scenario rolling-bounce --size 10"), \
        by_grid["rolling"].command
    assert all(labelled_words(c) <= MAX_WORDS for c in found)


def test_a_sentence_on_a_grid_another_sentence_quotes_is_not_shown() -> None:
    grids, runs = _setup()
    verdicts = grid_verdicts({"spec": "paper", "grids": grids}, runs)
    # the consumers sentence quotes follow0's finding as its mark's limit
    cons = next(g for g in verdicts if g.name == "consumers")
    cons.rows[0].metrics[0].limit = "holds only while no member is late (follow0: ...)"
    found = claims(verdicts)
    assert "follow0" in next(c.text for c in found if c.grid == "consumers")
    assert not any(c.grid == "follow0" for c in found)


def _rolling_run(grid: str, protocol: str, size: int, seed: int, stall: float,
                 lag: float) -> dict[str, Any]:
    return {"run_id": f"{grid}-{protocol}-{seed}", "protocol": protocol,
            "scenario": "rolling-bounce", "size": size, "members": size, "workload": "4x250",
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True, "caught_up": True,
            "noop_events": 0, "stall_ms": stall + seed, "lag_record_s": lag + 500 * seed,
            "settings_json": json.dumps({"heartbeat.interval.ms": 3000})}


def test_a_question_without_a_lag_mark_says_what_separates_once_for_both_sizes() -> None:
    """Round 12: the rolling grids (10 and 30 members) had no sentence: their lag overlaps
    and a consumer group's stall beside its lag is no sentence (round 8). Their answer is that
    no protocol separates on the lag, said once, both sizes in its command. Outside review
    round 13 (S4): "no difference" only where no metric of the grid separates; here the
    stall does, and the sentence says so with the medians."""
    grids, runs = [], []
    for name, size in (("rolling", 10), ("rolling-30", 30)):
        grids.append({"name": name, "question": "Does the group keep processing?",
                      "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce"],
                      "workloads": ["4x250"], "metrics": ["stall_ms", "lag_record_s"],
                      "seeds": 5, "sizes": [size]})
        for s in range(5):
            runs += [_rolling_run(name, EAGER, size, s, 500.0, 5000.0),
                     _rolling_run(name, COOP, size, s, 0.0, 6000.0)]
    verdicts = grid_verdicts({"spec": "paper", "grids": grids}, runs)
    found = claims(verdicts)
    assert len(found) == 1, [c.text for c in found]
    (c,) = found
    assert c.metric == "lag_record_s" and c.best == ""
    assert c.text.startswith("rolling, lag: no protocol separates from all the rest"), c.text
    assert "no difference" not in c.text
    assert "; stall separates: classic:cooperative 0.002 s against classic:eager 0.502 s" \
        in c.text, c.text
    assert c.text.endswith("Likewise at 30 members (rolling-30)."), c.text
    assert " --size 10 --size 30 " in c.command, c.command
