"""The paper spec's seeds: KIP-415's delay variants share theirs, a second seed set confirms
the marks, and a protocol label's timing variant (``consumer:uniform@hb3s``) runs the
protocol at that timing (docs/lab.md, "Independent review", round 6)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace

import pytest

from groupcoord.lab.runs import build_scenario, run_one
from groupcoord.lab.spec import SpecError, derive_seed, expand, load_spec, parse_spec, restrict, seed_family
from groupcoord.sim.settings import split_timing

DELAYS = ("worker-leaves-d0", "worker-leaves-d30s", "worker-leaves-d300s")
#: What a run measures (not its name, id, settings or wall time).
METRIC_COLUMNS = ("stall_ms", "task_restarts", "task_downtime_task_s", "time_to_balance_ms",
                  "resources_moved", "resource_downtime_ms", "convergence_ms", "messages")


def test_seed_family_drops_only_the_delay_suffix() -> None:
    assert seed_family("worker-leaves-d30s") == "worker-leaves"
    assert seed_family("worker-bounce-d0") == "worker-bounce"
    assert seed_family("worker-bounce-d300s") == "worker-bounce"
    # not a delay: another disturbance
    for name in ("bounce-down30s", "rolling-bounce-down20s", "crash-slow500ms", "crash"):
        assert seed_family(name) == name


def test_delay_variants_share_their_seeds_in_the_paper_spec() -> None:
    runs = expand(restrict(load_spec("paper"), scenarios=list(DELAYS), sizes=[3]))
    seeds = {sc: sorted({r.seed for r in runs if r.scenario == sc}) for sc in DELAYS}
    assert seeds[DELAYS[0]] == seeds[DELAYS[1]] == seeds[DELAYS[2]]
    assert len(seeds[DELAYS[0]]) >= 5
    # the run ids still differ (they are three cells)
    assert len({r.run_id for r in runs}) == len(runs)


@pytest.mark.parametrize("protocol", ["connect:eager", "classic-connect:eager"])
def test_eager_rows_do_not_change_with_the_delay(protocol: str) -> None:
    """Eager Connect has no scheduled.rebalance.max.delay.ms: its rows are the same in every
    delay variant (the same seeds, the same runs)."""
    spec = restrict(load_spec("paper"), scenarios=list(DELAYS), sizes=[3], protocols=[protocol])
    rows = {}
    for r in expand(spec):
        if r.replicate == 0:
            row = run_one(r)
            assert row["ok"], row
            rows[r.scenario] = {k: row[k] for k in METRIC_COLUMNS}
    assert rows[DELAYS[0]] == rows[DELAYS[1]] == rows[DELAYS[2]]
    # ... while the cooperative protocol's delay is what it waits
    coop = restrict(load_spec("paper"), scenarios=[DELAYS[0], DELAYS[2]], sizes=[3],
                    protocols=["classic-connect:sessioned"])
    waits = {r.scenario: run_one(r)["time_to_balance_ms"] for r in expand(coop)
             if r.replicate == 0}
    assert waits[DELAYS[2]] >= 300_000 > waits[DELAYS[0]]


def test_confirmation_seeds_are_a_second_fresh_set() -> None:
    text = """
name = "t"
protocols = ["classic:eager", "consumer:uniform"]
scenarios = ["crash"]
sizes = [4]
seeds = 3
confirm_seeds = 3
[[grid]]
name = "a"
[[grid]]
name = "b"
scenarios = ["bounce"]
confirm_seeds = 0
"""
    spec = parse_spec(tomllib.loads(text))
    runs = expand(spec)
    a = [r for r in runs if r.scenario == "crash" and r.protocol == "classic:eager"]
    b = [r for r in runs if r.scenario == "bounce" and r.protocol == "classic:eager"]
    assert sorted(r.replicate for r in a) == [0, 1, 2, 3, 4, 5]
    assert sorted(r.replicate for r in b) == [0, 1, 2]
    # the first set is the seeds the grid had without a confirmation set
    plain = expand(replace(spec, grids=tuple(replace(g, confirm_seeds=0) for g in spec.grids)))
    first = {r.seed for r in plain if r.scenario == "crash"}
    assert first == {r.seed for r in a if r.replicate < 3}
    fresh = {r.seed for r in a if r.replicate >= 3}
    assert len(fresh) == 3 and not fresh & first
    # every protocol of the cell runs the same seeds in both sets
    u = [r for r in runs if r.scenario == "crash" and r.protocol == "consumer:uniform"]
    assert sorted(r.seed for r in u) == sorted(r.seed for r in a)
    assert derive_seed("", "crash", 4, spec.workloads[0], None, 3) in fresh
    with pytest.raises(SpecError, match="confirm_seeds"):
        parse_spec(tomllib.loads(text.replace("confirm_seeds = 3", "confirm_seeds = -1")))


def test_every_marked_grid_of_the_paper_spec_has_a_second_seed_set() -> None:
    for g in load_spec("paper").grids:
        if g.seeds >= 5:
            assert g.confirm_seeds == g.seeds, g.name


def test_a_timing_variant_runs_the_protocol_at_that_timing() -> None:
    assert split_timing("consumer:uniform@hb3s") == ("consumer:uniform",
                                                     {"heartbeat_interval_ms": 3000})
    assert split_timing("consumer:uniform") == ("consumer:uniform", {})
    with pytest.raises(ValueError, match="unknown timing"):
        split_timing("consumer:uniform@beat3s")
    with pytest.raises(SpecError, match="unknown timing"):
        parse_spec({"protocols": ["consumer:uniform@hb3"], "scenarios": ["crash"]}).resolved_protocols()
    spec = parse_spec({"protocols": ["consumer:uniform", "consumer:uniform@hb3s"],
                       "scenarios": ["rolling-bounce"], "sizes": [4], "seeds": 1})
    assert spec.resolved_protocols() == ["consumer:uniform", "consumer:uniform@hb3s"]
    plain, fast = expand(spec)
    assert plain.seed == fast.seed  # paired: the same seeds as the protocol at its default
    assert build_scenario(plain).heartbeat_interval_ms == 5000
    assert build_scenario(fast).heartbeat_interval_ms == 3000
    row = run_one(fast)
    assert row["ok"], row
    settings = json.loads(row["settings_json"])
    assert settings["group.consumer.heartbeat.interval.ms"] == 3000
    assert row["protocol"] == "consumer:uniform@hb3s"


def test_the_paper_spec_separates_protocol_assignor_and_timing() -> None:
    grids = {g.name: g for g in load_spec("paper").grids}
    for name in ("crossover-10ms", "crossover-20ms", "busy-crossover", "field-costs"):
        assert "classic:eager-roundrobin" in grids[name].protocols, name
        assert "crash" in grids[name].scenarios or "crash-then-join" in grids[name].scenarios
    for name in ("rolling", "field-costs"):
        g = grids[name]
        assert {"consumer:uniform", "consumer:uniform@hb3s"} <= set(g.protocols), name
        assert "rolling-bounce" in g.scenarios
