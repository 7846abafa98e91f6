"""The spread of the members' heartbeat phases (``Scenario.heartbeat_spread_ms``, the ``@hbspread``
timing variant): off by default and then nothing changes; on, each join shifts a member's
heartbeat phase and a classic rebalance is learned over that spread instead of at one beat."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation, simulate
from groupcoord.sim.scenario import Scenario, load_scenario, parse_scenario
from groupcoord.sim.settings import effective_settings, split_timing, with_field_settings

_LINE = re.compile(r"^\s*(?P<t>\d+)\s+\d+\s+(?P<event>\S+(?: \S+)?)\s+(?P<member>c\d+)")


def _scenario(protocol: str, spread: int) -> Scenario:
    sc = with_field_settings(load_scenario("scale-out"), protocol)
    return replace(sc, heartbeat_spread_ms=spread)


def _learned_at(trace: list[str]) -> dict[str, int]:
    """When each member first heard REBALANCE_IN_PROGRESS on a heartbeat (the scale-out's
    rebalance: the first one after the initial join)."""
    out: dict[str, int] = {}
    for line in trace:
        if "REBALANCE_IN_PROGRESS" not in line:
            continue
        m = _LINE.match(line)
        assert m is not None, line
        out.setdefault(m["member"], int(m["t"]))
    return out


def test_off_by_default_and_parsed_from_the_member_table() -> None:
    assert Scenario("x").heartbeat_spread_ms == 0
    sc = parse_scenario({"name": "x", "member": {"heartbeat_spread_ms": 1500}})
    assert sc.heartbeat_spread_ms == 1500
    assert split_timing("classic:eager@hbspread3s") == ("classic:eager",
                                                         {"heartbeat_spread_ms": 3000})
    assert "heartbeat.spread.ms" not in effective_settings(load_scenario("scale-out"),
                                                           "classic:eager")
    assert effective_settings(_scenario("classic:eager", 1000),
                              "classic:eager")["heartbeat.spread.ms"] == 1000


def test_a_zero_spread_leaves_the_run_as_it_was() -> None:
    plain = simulate(_scenario("classic:eager", 0), 5, "classic:eager", record_trace=True)
    base = simulate(with_field_settings(load_scenario("scale-out"), "classic:eager"), 5,
                    "classic:eager", record_trace=True)
    assert plain.trace == base.trace
    assert not any("hb phase" in line for line in plain.trace)


def test_the_lab_label_at_zero_spread_gives_the_base_protocols_rows() -> None:
    spec = restrict(load_spec("paper"), scenarios=["scale-out"], sizes=[8],
                    workloads=["1x32-p20ms-40pct"],
                    protocols=["classic:eager", "classic:eager@hbspread0s"])
    runs = [r for r in expand(spec) if r.replicate == 0]
    rows = {r.protocol: run_one(r) for r in runs}
    a, b = rows["classic:eager"], rows["classic:eager@hbspread0s"]
    skip = {"protocol", "run_id", "wall_ms", "settings_json", "sweep"}
    differ = [k for k in a if k not in skip and "wall" not in k and a[k] != b[k]]
    assert differ == []
    assert a["seed"] == b["seed"]


def test_a_classic_rebalance_is_learned_at_one_beat_without_spread_and_over_it_with() -> None:
    aligned = _learned_at(simulate(_scenario("classic:eager", 0), 3, "classic:eager",
                                   record_trace=True).trace)
    spread = _learned_at(simulate(_scenario("classic:eager", 3000), 3, "classic:eager",
                                  record_trace=True).trace)
    assert len(aligned) >= 3 and len(spread) >= 3
    # aligned: the members' timers restarted at one SyncGroup round: within a network round
    assert max(aligned.values()) - min(aligned.values()) < 100
    # spread: the learning times spread over (up to) the drawn phases
    assert 500 < max(spread.values()) - min(spread.values()) < 3000 + 100


def test_each_join_shifts_the_next_beat_of_classic_and_kip848_members() -> None:
    for protocol in ("classic:eager", "consumer:uniform"):
        res = simulate(_scenario(protocol, 2000), 11, protocol, record_trace=True)
        assert res.ok, res.violation
        shifts = [int(m.group(1)) for line in res.trace if "hb phase" in line
                  for m in [re.search(r"\+(\d+) ms", line)] if m]
        assert shifts, protocol
        assert all(0 < s < 2000 for s in shifts)
        assert len(set(shifts)) > 1  # each member its own phase


@settings(max_examples=40, deadline=None)
@given(spread=st.integers(min_value=0, max_value=10_000), join=st.integers(0, 50),
       seed=st.integers(0, 2**32))
def test_the_phase_is_a_draw_per_member_and_join_within_the_spread(spread: int, join: int,
                                                                   seed: int) -> None:
    sim = build_simulation(_scenario("classic:eager", spread), seed, "classic:eager")
    sim.setup()
    procs = list(sim.procs.values())
    offsets = [sim.heartbeat_phase_ms(p, join) for p in procs]
    assert all(0 <= o < max(spread, 1) for o in offsets)
    # the same member and join draw the same phase, whatever was drawn before
    assert [sim.heartbeat_phase_ms(p, join) for p in reversed(procs)] == offsets[::-1]
    if spread == 0:
        assert offsets == [0] * len(procs)


# ---------------------------------------------------------------- Connect workers

def _workers_scenario(protocol: str, spread: int) -> Scenario:
    """Eight workers running 16 tasks; a ninth joins at 30 s (a rebalance every incumbent
    learns from its next heartbeat)."""
    raw = {"name": "w", "group": {"members": 8, "connectors": {"A": 8, "B": 8}},
           "events": [{"at_ms": 30_000, "kind": "join", "members": ["c9"]}]}
    return replace(with_field_settings(parse_scenario(raw), protocol), heartbeat_spread_ms=spread)


def _incumbents_learned_at(trace: list[str]) -> list[int]:
    """When each of the eight incumbent workers first heard REBALANCE_IN_PROGRESS on a
    heartbeat after the ninth worker's join."""
    return sorted(t for member, t in _learned_at(trace).items() if member != "c9")


def test_classic_connect_workers_learn_a_rebalance_over_the_spread() -> None:
    for protocol in ("classic-connect:eager", "classic-connect:sessioned"):
        for seed in (1, 2):
            aligned = simulate(_workers_scenario(protocol, 0), seed, protocol, record_trace=True)
            spread = simulate(_workers_scenario(protocol, 3000), seed, protocol,
                              record_trace=True)
            assert aligned.ok and spread.ok, (aligned.violation, spread.violation)
            assert not any("hb phase" in line for line in aligned.trace)
            a, s = _incumbents_learned_at(aligned.trace), _incumbents_learned_at(spread.trace)
            assert len(a) == len(s) == 8
            assert all(t >= 30_000 for t in a + s)
            # aligned: the timers restarted at one SyncGroup round, within a network round
            assert a[-1] - a[0] < 100, (protocol, seed, a)
            # spread: the first heartbeats after the join fall over the drawn phases
            assert 1000 < s[-1] - s[0] < 3000 + 3000, (protocol, seed, s)
            assert len({t // 100 for t in s}) >= 5  # not a few clusters: spread out
            assert spread.summary["resource_downtime_ms"] != aligned.summary[
                "resource_downtime_ms"]


def test_each_sync_and_join_shifts_a_connect_workers_next_beat() -> None:
    for protocol in ("classic-connect:eager", "classic-connect:sessioned", "connect:eager",
                     "connect:cooperative"):
        res = simulate(_workers_scenario(protocol, 2000), 7, protocol, record_trace=True)
        assert res.ok, res.violation
        shifts = [int(m.group(1)) for line in res.trace if "hb phase" in line
                  for m in [re.search(r"\+(\d+) ms", line)] if m]
        assert len(shifts) >= 9, protocol  # every worker at least once
        assert all(0 < s < 2000 for s in shifts)
        assert len(set(shifts)) > 5


def test_the_lab_label_spreads_connect_workers_and_names_the_spread() -> None:
    spec = restrict(load_spec("paper"), scenarios=["kip415-worker-joins"], sizes=[12],
                    workloads=["16x8c-task10ms"], protocols=["classic-connect:eager"])
    run = next(r for r in expand(spec) if r.replicate == 0)
    rows = {p: run_one(replace(run, protocol=p)) for p in ("classic-connect:eager@hbspread0s",
                                                          "classic-connect:eager@hbspread3s")}
    a, b = rows["classic-connect:eager@hbspread0s"], rows["classic-connect:eager@hbspread3s"]
    assert a["seed"] == b["seed"] and a["ok"] and b["ok"]
    assert a["task_downtime_task_s"] != b["task_downtime_task_s"]
    assert a["summary_json"] != b["summary_json"]
    assert "heartbeat.spread.ms" not in json.loads(a["settings_json"])
    assert json.loads(b["settings_json"])["heartbeat.spread.ms"] == 3000
