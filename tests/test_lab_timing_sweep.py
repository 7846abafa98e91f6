"""A grid that sweeps one timing across every protocol (``classic:eager@hbspread1s``, ...) is
judged per value of that timing: rows per (scenario, size, workload, value), columns the base
protocols; its Conditions line and sentences read the spread of heartbeat phases from the
runs' ``settings_json`` (docs/lab.md, "After round 7: the heartbeat-alignment assumption,
tested"). A timing variant beside its protocol in another grid (``consumer:uniform@hb3s``) is
still compared with the others."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.caveats import with_caveats
from groupcoord.lab.mechanism import conditions, phase_clause, spreads_of
from groupcoord.lab.report import grid_runs, verdict_md
from groupcoord.lab.verdict import _claim, claims, grid_verdict, grid_verdicts, swept_timing

SPREADS = {"0s": 0, "1s": 1000}
#: Per (protocol, spread): the stall of each seed, ms (floor 250 ms): eager best without a
#: spread, KIP-848 best with one.
STALLS = {("classic:eager", "0s"): 100, ("consumer:uniform", "0s"): 3000,
          ("classic:eager", "1s"): 6000, ("consumer:uniform", "1s"): 2000}


def _run(label: str, seed: int, stall: float) -> dict[str, Any]:
    spread = int(label.rpartition("@hbspread")[2].removesuffix("s") or 0) * 1000 \
        if "@hbspread" in label else 0
    settings: dict[str, Any] = {"heartbeat.interval.ms": 3000}
    if spread:
        settings["heartbeat.spread.ms"] = spread
    return {"protocol": label, "scenario": "scale-out", "size": 8, "workload": "4x250",
            "fault_rate": 0.0, "seed": seed, "replicate": seed, "ok": True, "caught_up": True,
            "stall_ms": stall + seed, "settings_json": json.dumps(settings),
            "moved": 4, "converge_ms": 1000.0}


def _grid() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    labels = [f"{p}@hbspread{s}" for p in ("classic:eager", "consumer:uniform") for s in SPREADS]
    runs = [_run(f"{p}@hbspread{s}", seed, stall) for (p, s), stall in STALLS.items()
            for seed in range(5)]
    return ({"name": "hb-spread", "protocols": labels, "metrics": ["stall_ms"],
             "scenarios": ["scale-out"], "seeds": 5, "spec": "paper"}, runs)


def test_a_timing_swept_across_every_protocol_is_found_and_a_lone_variant_is_not() -> None:
    assert swept_timing(_grid()[0]["protocols"]) == "heartbeat_spread_ms"
    # a variant beside its protocol: compared with the others, as before
    assert swept_timing(["consumer:uniform", "consumer:uniform@hb3s", "classic:eager"]) is None
    # one base protocol missing a value: no sweep
    assert swept_timing(["classic:eager@hbspread0s", "classic:eager@hbspread1s",
                         "consumer:uniform@hbspread0s"]) is None
    # the other timings of a label stay in it; only the swept one moves to the row
    assert swept_timing(["consumer:uniform@hb3s+hbspread0s",
                         "consumer:uniform@hb3s+hbspread1s"]) == "heartbeat_spread_ms"


def test_protocols_are_compared_within_each_spread() -> None:
    grid, runs = _grid()
    g = grid_verdict(grid, runs, "paper")
    assert g.protocols == ["classic:eager", "consumer:uniform"]
    assert g.labels == grid["protocols"]
    assert [(r.x, r.timing) for r in g.rows] == [
        (0.0, "heartbeats not spread after a join"),
        (1000.0, "heartbeats spread over up to 1 s after a join")]
    marks = [(r.metrics[0].verdict, r.metrics[0].best) for r in g.rows]
    assert marks == [("best", ("classic:eager",)), ("best", ("consumer:uniform",))]
    # the ★ flips across the spread: each row says so
    assert all("heartbeat spread" in r.metrics[0].depends for r in g.rows)
    md = verdict_md(g)
    assert "| classic:eager | consumer:uniform |" in md
    assert "heartbeats spread over up to 1 s after a join" in md
    assert "@hbspread" not in md.split("| verdict |")[1].split("\n")[0]


def test_a_timing_variant_beside_its_protocol_is_still_a_column() -> None:
    runs = [_run(p, seed, stall) for p, stall in (("consumer:uniform", 3000),
                                                 ("consumer:uniform@hb3s", 2000),
                                                 ("classic:eager", 100)) for seed in range(5)]
    grid = {"name": "hb", "protocols": ["classic:eager", "consumer:uniform",
                                        "consumer:uniform@hb3s"],
            "metrics": ["stall_ms"], "scenarios": ["scale-out"], "seeds": 5}
    g = grid_verdict(grid, runs)
    assert g.protocols == grid["protocols"] and not g.labels
    assert len(g.rows) == 1 and not g.rows[0].timing
    assert set(g.rows[0].metrics[0].cells) == set(grid["protocols"])


def test_the_sentences_name_the_spread_and_reproduce_its_labels() -> None:
    grid, runs = _grid()
    g = grid_verdict(grid, runs, "paper")
    found = claims([g])
    assert found
    texts = " ".join(c.text for c in found)
    assert "classic:eager (range, 3 s heartbeat) at 0 ms" in texts
    assert "consumer:uniform (uniform, 3 s heartbeat) at 1,000 ms" in texts
    # one row's sentence names its spread and reruns the protocols at it
    row = g.rows[1]
    one = _claim(g, row, row.metrics[0])
    assert "scale-out, 8 members, 4x250, heartbeats spread over up to 1 s after a join:" in one.text
    assert one.timing_ms == 1000.0
    assert "--protocol consumer:uniform@hbspread1s --protocol classic:eager@hbspread1s" in (
        one.command)
    for c in found:
        assert "--protocol classic:eager@hbspread" in c.command
        assert "--protocol classic:eager " not in c.command + " "
    # the grid's runs, as its "Why" lines read them: base protocols with the spread apart
    mine = grid_runs(g, runs)
    assert {r["protocol"] for r in mine} == {"classic:eager", "consumer:uniform"}
    assert len(mine) == len(runs)


def test_the_conditions_read_the_spread_from_the_runs_settings() -> None:
    _, runs = _grid()
    settings = {"classic:eager": {"heartbeat.interval.ms": 3000}}
    assert spreads_of(runs) == [0.0, 1000.0]
    spread = conditions(["classic:eager"], settings, spreads_of(runs))
    assert "heartbeats spread over up to 0 and 1 s after a join" in spread
    assert "learn of a rebalance together" not in spread
    aligned = conditions(["classic:eager"], settings, spreads_of(runs[:5]))
    assert "classic members learn of a rebalance together" in aligned
    assert phase_clause(["classic:eager"], [1000.0]).startswith(
        "the members' heartbeats spread over up to 1 s after a join")
    assert phase_clause(["classic:eager"]).startswith(
        "every classic member learns of a rebalance at the same moment")


def test_the_downtime_lines_are_per_spread_and_say_the_group_rejoins_within_it() -> None:
    """Eager's downtime per moved partition grows with the spread (41 ms, then 900 ms);
    cooperative's is one 3 s heartbeat: one line per spread, and the spread row's reason is
    the spread, not a group that rejoins at once."""
    settings = {"classic:eager": {"heartbeat.interval.ms": 3000},
                "classic:cooperative": {"heartbeat.interval.ms": 3000}}
    runs = []
    for spread, eager_ms in ((0, 41), (1000, 900)):
        st = json.dumps({"heartbeat.spread.ms": spread} if spread else {})
        for seed in range(3):
            base = {"scenario": "scale-out", "size": 8, "members": 8, "workload": "4x250",
                    "fault_rate": 0.0, "seed": seed, "ok": True, "caught_up": True,
                    "settings_json": st, "resources_moved": 100}
            runs += [{**base, "protocol": "classic:eager", "resource_downtime_ms": eager_ms * 100},
                     {**base, "protocol": "classic:cooperative",
                      "resource_downtime_ms": 3000 * 100}]
    from groupcoord.lab.mechanism import mechanisms

    lines = mechanisms(["classic:eager", "classic:cooperative"], settings, runs)
    flat = [ln for ln in lines if "downtime per moved partition" in ln]
    assert [ln.split(":")[0] for ln in flat] == [
        "scale-out, heartbeats not spread", "scale-out, heartbeats spread over up to 1 s"]
    assert "classic:eager 41 ms" in flat[0] and "rejoins at once" in flat[0]
    assert "classic:eager 900 ms" in flat[1]
    assert "rejoins within the heartbeats' 1 s spread" in flat[1]
    assert "heartbeats spread over up to 0 and 1 s after a join" in lines[0]


def test_a_sweep_on_one_workload_names_it_and_what_other_workloads_show() -> None:
    """Round 8: S11 (KIP-848 best at a 3 s spread in the rolling bounce) held on its own
    workload only. The sentence names the workload, says the spread ran on no other, and
    what the same scenario's rows on other workloads show with heartbeats not spread."""
    grid, runs = _grid()
    other = {"name": "consumers", "protocols": ["classic:eager", "consumer:uniform"],
             "metrics": ["stall_ms"], "scenarios": ["scale-out"], "seeds": 5}
    # another workload: KIP-848 best there without a spread; the sweep's own cell: skipped
    runs += [{**_run(p, seed, stall), "workload": w}
             for w, vals in (("8x100", {"classic:eager": 4000, "consumer:uniform": 50}),
                             ("4x250", {"classic:eager": 100, "consumer:uniform": 3000}))
             for p, stall in vals.items() for seed in range(5)]
    gs = grid_verdicts({"spec": "paper", "grids": [grid, other]}, runs)
    found = with_caveats(claims(gs), gs, runs)
    (c,) = [c for c in found if c.grid == "hb-spread"]
    assert c.text.startswith("scale-out, 8 members on 4x250 (hb-spread), stall against")
    assert ("Caveats: found on 4x250 only (the heartbeat spread was run on no other "
            "workload); the same scenario on other workloads, heartbeats not spread: "
            "consumers (8 members, 8x100): \u2605 consumer:uniform, lowest median "
            "consumer:uniform 0.052 s.") in c.full, c.full
    # a grid that sweeps across workloads names none
    assert all(" on " not in x.text.split("(")[0] for x in found if x.grid != "hb-spread")
