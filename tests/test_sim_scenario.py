"""Scenarios as data: TOML parsing and its errors, the built-ins, the network model."""

from __future__ import annotations

import dataclasses
import itertools
import random
import tomllib
from importlib import resources

import pytest

from groupcoord.sim.network import Latency, Network, NetworkFaults
from groupcoord.sim.scenario import (
    BUILTINS,
    ScenarioError,
    load_scenario,
    parse_scenario,
    pick_owner,
)

REQUIRED = {"join", "leave", "crash", "bounce", "rolling-bounce", "scale-out",
            "partition-added", "network-partition", "coordinator-failover", "random"}


def test_the_issue_names_every_builtin() -> None:
    assert REQUIRED - {"random"} <= set(BUILTINS)
    for name in BUILTINS:
        sc = load_scenario(name)
        assert sc.name == name and sc.description and sc.source == name


def test_the_builtins_are_the_toml_files_the_package_ships() -> None:
    """Each built-in is ``sim/scenarios/NAME.toml``, package data read through
    importlib.resources (so an installed wheel has them), and loading the file by its path
    gives the same scenario as loading it by name."""
    folder = resources.files("groupcoord.sim") / "scenarios"
    files = {f.name.removesuffix(".toml"): f for f in folder.iterdir() if f.name.endswith(".toml")}
    assert set(files) == set(BUILTINS) and len(files) >= len(REQUIRED) - 1
    for name, f in files.items():
        assert f.read_text(encoding="utf-8") == BUILTINS[name]
        with resources.as_file(f) as path:
            by_path = load_scenario(str(path))
        assert dataclasses.replace(by_path, source=name) == load_scenario(name)


def test_full_scenario_file() -> None:
    sc = parse_scenario(tomllib.loads("""
name = "x"
end_ms = 100000
[group]
id = "grp"
members = 2
static = true
topics = { a = 3, b = 1 }
regex = "a|b"
[coordinator]
session_timeout_ms = 50000
heartbeat_interval_ms = 6000
[member]
rebalance_timeout_ms = 20000
commit_interval_ms = 0
[network]
latency = { dist = "exponential", min_ms = 1, max_ms = 200, mean_ms = 20 }
loss = 0.1
ordered = false
[[events]]
at_ms = 5000
kind = "network-faults"
duplicate = 0.5
[[events]]
at_ms = 1000
kind = "slow"
member = "all"
"""), source="x.toml")
    assert sc.group_id == "grp" and sc.static and sc.regex == "a|b"
    assert sc.topics == (("a", 3), ("b", 1)) and sc.end_ms == 100_000
    assert sc.latency == Latency("exponential", 1, 200, 20) and sc.faults.loss == 0.1
    assert not sc.ordered and sc.commit_interval_ms == 0
    assert [e.kind for e in sc.events] == ["slow", "network-faults"]  # sorted by time
    assert sc.events[1]["duration_ms"] == 30_000  # default filled in


@pytest.mark.parametrize(("text", "message"), [
    ('colour = "red"', "unknown key(s) colour"),
    ("[group]\nmembers = -1", "group.members"),
    ('[[events]]\nkind = "explode"', "kind must be one of"),
    ('[[events]]\nkind = "crash"', "missing member"),
    ('[[events]]\nkind = "kill"', "missing member"),
    ('[[events]]\nkind = "kill"\nmember = 3', "expected a string"),
    ('[[events]]\nkind = "crash"\nmember = "c1"\nextra = 1', "unknown key(s) extra"),
    ('[[events]]\nkind = "subscribe"\nmember = "c1"', "topics or regex"),
    ('[network]\nloss = 2.0', "probability"),
    ('[network]\nlatency = "gaussian:3"', "bad latency"),
    ('[group]\nsubscription = ["a"]\nregex = "a"', "not both"),
    ('[coordinator]\nheartbeat_interval_ms = 50000', "heartbeat_interval_ms must be <"),
])
def test_bad_scenarios_are_refused_with_the_field_named(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(tomllib.loads(text), source="bad.toml")
    assert message in str(e.value) and "bad.toml" in str(e.value)


def test_unknown_scenario_and_unreadable_file() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario"):
        load_scenario("no-such-thing")
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario("/nonexistent/x.toml")


def test_network_is_fifo_per_channel_and_duplicates_follow_the_original() -> None:
    net = Network(random.Random(1), Latency("uniform", 1, 50), NetworkFaults(duplicate=0.5))
    last = 0
    for now in range(200):
        times = net.route(now, "c1>", "c1", False)
        assert times and min(times) >= last
        if len(times) == 2:
            assert times[0] == times[1]
        last = max(times)
    assert net.stats["duplicated"] > 0


def test_a_message_lost_on_a_fifo_channel_takes_the_one_sent_right_behind_it() -> None:
    """TCP never delivers past a gap: what is sent on a FIFO channel at the instant a message
    was lost on it is lost too (the two answers to a duplicated request); a message sent later,
    or on another channel, or on an unordered network, is not."""
    net = Network(random.Random(4), Latency("fixed", 5), NetworkFaults(response_loss=1.0))
    assert net.route(10, "c1<", "c1", True) == ()  # lost
    assert net.route(10, "c1<", "c1", False) == ()  # right behind it: lost with it
    assert net.route(10, "c2<", "c2", False) == (15,)  # another channel
    assert net.route(11, "c1<", "c1", False) == (16,)  # sent later
    assert net.stats["lost"] == 2
    net = Network(random.Random(4), Latency("fixed", 5), NetworkFaults(response_loss=1.0),
                  ordered=False)
    assert net.route(10, "c1<", "c1", True) == ()
    assert net.route(10, "c1<", "c1", False) == (15,)


def test_network_loss_cut_and_unordered_reordering() -> None:
    net = Network(random.Random(2), Latency("fixed", 5), NetworkFaults(loss=1.0))
    assert net.route(0, "c", "c1", False) == ()
    net = Network(random.Random(2), Latency("fixed", 5))
    net.cut.add("c1")
    assert net.route(0, "c", "c1", True) == () and net.stats["cut"] == 1
    assert net.route(0, "c", "c2", True) == (5,)
    net = Network(random.Random(3), Latency("uniform", 1, 10), NetworkFaults(reorder=0.3),
                  ordered=False)
    times = [net.route(now, "c", "c1", False)[0] for now in range(300)]
    assert any(b < a for a, b in itertools.pairwise(times))  # overtaken


def test_latency_parse() -> None:
    assert Latency.parse("fixed:7") == Latency("fixed", 7, 7, 7)
    assert Latency.parse("uniform:2-9").max_ms == 9
    assert Latency.parse("exponential:5:1-100") == Latency("exponential", 1, 100, 5)
    with pytest.raises(ValueError):
        Latency.parse("uniform:9-2")


def test_a_kill_of_an_owner_parses_and_the_owner_is_drawn_from_the_seed() -> None:
    sc = parse_scenario(tomllib.loads('[[events]]\nat_ms = 5000\nkind = "kill"\n'
                                      'member = "@owner"'), source="k.toml")
    assert [(e.kind, e["member"], e.duration_ms(3)) for e in sc.events] == [("kill", "@owner", 0)]
    owners = ["c4", "c1", "c7"]
    # the same owners, seed and time give the same member, whatever their order; every owner
    # is drawn by some seed; nobody holds a partition: no target
    picks = {pick_owner(owners, seed, 5000) for seed in range(60)}
    assert picks == set(owners)
    assert all(pick_owner(owners, s, 5000) == pick_owner(reversed(owners), s, 5000)
               for s in range(20))
    assert pick_owner([], 1, 5000) is None
