"""Every fault kind of the simulator is exercised with invariants I1-I6 holding, on the real
coordinator, for both server-side assignors; each test also checks the fault really happened."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from groupcoord.sim.engine import SimResult
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import CASE_STUDIES, builtins_for, parse_scenario

PROTOCOLS = ["consumer:uniform", "consumer:range"]


def run(scenario: Any, seed: int = 1, protocol: str = "consumer:uniform") -> SimResult:
    r = simulate(scenario, seed, protocol)
    assert r.ok, r.violation.format() if r.violation else ""
    assert r.summary["converged_at_ms"] is not None
    assert r.summary["checkpoints"] >= 1  # I4 ran at least at the end
    return r


def window(r: SimResult, kind: str) -> dict[str, Any]:
    return next(d for d in r.disturbances if d["disturbance"] == kind)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", builtins_for("partitions"))
def test_every_builtin_scenario_keeps_the_invariants(scenario: str, protocol: str) -> None:
    r = run(scenario, 2, protocol)
    for d in r.disturbances:
        assert d["converged"], d


def test_case_studies_are_builtins() -> None:
    assert CASE_STUDIES == ("case-study-c-joins", "case-study-member-failure",
                            "case-study-member-joins", "case-study-partition-added",
                            "case-study-static-bounce")


def test_crash_is_noticed_after_the_session_timeout() -> None:
    r = run("crash")
    s = r.summary
    assert s["crashed"] == 1 and s["members_live"] == 3
    w = window(r, "crash")
    # The crashed member's partitions have no owner until its session (45 s) expires.
    assert 40_000 <= w["time_to_converge_ms"] <= 55_000
    assert w["group_epoch_bumps"] == 1 and w["resources_moved"] == 2
    assert w["resource_downtime_ms"] >= 2 * 40_000 and w["peak_unowned"] == 2


GHOST_JOIN = """
name = "ghost-join"
description = "c2 starts and crashes before its join reaches the coordinator: as the faults stop."
[group]
members = 1
connectors = { a = 2 }
[network]
latency = "fixed:5"
[[events]]
at_ms = 10000
kind = "join"
members = ["c2"]
[[events]]
at_ms = 10005
kind = "crash"
member = "c2"
"""


@pytest.mark.parametrize("protocol", ["consumer:uniform", "connect:eager", "connect:cooperative"])
def test_a_join_still_on_its_way_when_its_process_crashed_is_waited_for(protocol: str) -> None:
    """The join of c2 reaches the coordinator (t=10005) after c2 crashed and the faults
    stopped: the coordinator adds a member nobody runs, which its session timeout (45 s)
    removes. The group is not converged while a dead process's request is on its way
    (``ConsumerSimulation.settled``): the run goes on until the ghost expired and the group
    settled again, instead of ending at the quiet time and finding it unsettled (I5)."""
    r = simulate(parse_scenario(tomllib.loads(GHOST_JOIN)), 1, protocol, record_trace=True)
    assert r.ok, r.violation.format() if r.violation else ""
    (ghost,) = [line.split()[-1] for line in r.trace if line.split()[2:4] == ["start", "c2"]]
    expired = [int(line.split()[0]) for line in r.trace
               if line.split()[2] == "timer" and line.split()[-1].endswith("/" + ghost)]
    assert expired == [10_005 + 45_000]
    assert r.summary["converged_at_ms"] > expired[0]
    assert r.summary["members_live"] == 1


def test_leave_and_scale_in_rebalance_at_once() -> None:
    r = run("leave")
    assert r.summary["left"] == 1
    assert window(r, "leave")["time_to_converge_ms"] < 10_000
    r = run("scale-in")
    assert r.summary["left"] == 3 and r.summary["members_live"] == 3


def test_dynamic_bounce_rebalances_twice_a_static_one_not_at_all() -> None:
    dyn = window(run("bounce"), "bounce")
    assert dyn["group_epoch_bumps"] == 2  # leave, then the new member id joins
    static = run("static-bounce")
    w = window(static, "bounce")
    assert w["group_epoch_bumps"] == 0 and w["resources_moved"] == 0
    assert static.summary["spawned"] == 5


def test_rolling_bounce_restarts_every_member() -> None:
    r = run("rolling-bounce")
    assert r.summary["spawned"] == 12 and r.summary["members_live"] == 6
    assert window(r, "rolling-bounce")["converged"]


def test_scale_out() -> None:
    r = run("scale-out")
    assert r.summary["members_live"] == 6
    assert window(r, "scale-out")["group_epoch_bumps"] >= 1


def test_partitions_added_and_topic_created_are_assigned() -> None:
    r = run("partition-added")
    assert r.summary["metadata_updates"] == 1
    assert window(r, "add-partitions")["group_epoch_bumps"] == 1
    r = run("topic-created")
    assert r.summary["metadata_updates"] == 1
    assert window(r, "create-topic")["group_epoch_bumps"] == 1


def test_topic_deleted_then_recreated_under_a_new_id() -> None:
    r = run("topic-recreated")
    assert r.summary["metadata_updates"] == 2
    assert [d["disturbance"] for d in r.disturbances] == ["initial-join", "delete-topic",
                                                          "create-topic"]
    assert all(d["group_epoch_bumps"] == 1 for d in r.disturbances[1:])


def test_subscription_change() -> None:
    r = run("subscription-change")
    assert [d["disturbance"] for d in r.disturbances] == ["initial-join", "subscribe", "subscribe"]
    assert all(d["group_epoch_bumps"] >= 1 for d in r.disturbances[1:])


def test_slow_member_is_fenced_after_the_rebalance_timeout_and_rejoins() -> None:
    r = run("slow-member")
    s = r.summary
    assert s["slow_revocations"] >= 1 and s["fenced"] >= 1
    assert s["zombie_commits_rejected"] >= 0  # commits of the fenced member fail (I6)
    assert any("rebalance/" in line for line in simulate("slow-member", 1,
                                                          record_trace=True).trace)


def test_network_partition_longer_than_the_session_fences_the_cut_members() -> None:
    r = run("network-partition")
    s = r.summary
    assert s["network"]["cut"] > 0 and s["timeouts"] > 0
    assert s["fenced"] == 2 and s["members_live"] == 4
    assert s["zombie_commits_rejected"] >= 1


def test_short_network_partition_keeps_the_member() -> None:
    r = run("short-partition")
    assert r.summary["network"]["cut"] > 0 and r.summary["fenced"] == 0
    assert window(r, "network-partition")["group_epoch_bumps"] == 0


def test_lossy_network_loses_duplicates_reorders_and_loses_responses() -> None:
    r = run("lossy-network", 3)
    net = r.summary["network"]
    assert net["lost"] > 0 and net["duplicated"] > 0 and net["reordered"] > 0
    assert r.summary["timeouts"] > 0


DUPLICATED_HEARTBEATS = """
name = "duplicated-heartbeats"
description = "Half the messages duplicated, a third of the answers lost, while three members join."
[group]
members = 3
topics = { foo = 6 }
[[events]]
at_ms = 8000
kind = "network-faults"
duplicate = 0.5
response_loss = 0.3
duration_ms = 40000
[[events]]
at_ms = 10000
kind = "scale-out"
count = 3
"""


def test_duplicated_heartbeat_whose_first_answer_is_lost_still_converges() -> None:
    """A duplicated heartbeat is handled twice; only the first answer carries what it changed
    (KIP-848: the assignment only when it changes). Were that answer lost and the second one
    (same correlation id) delivered, a joiner would never learn of the partitions released to
    it (I5). On a FIFO channel both answers go together (``sim.network``), so the member times
    out and its full heartbeat gets the assignment. Seed 75 hit it before."""
    sc = parse_scenario(tomllib.loads(DUPLICATED_HEARTBEATS))
    for seed in range(60, 90):
        r = run(sc, seed)
        assert r.summary["network"]["duplicated"] > 0 and r.summary["network"]["lost"] > 0


def test_coordinator_failover_rebuilds_from_the_log() -> None:
    r = run("coordinator-failover")
    s = r.summary
    assert s["failovers"] == 2
    assert s["network"]["delivered"] > 0
    trace = simulate("coordinator-failover", 1, record_trace=True).trace
    assert sum(" loaded " in line for line in trace) == 2
    assert any("COORDINATOR_LOAD_IN_PROGRESS" in line or "conn-reset" in line for line in trace)


STATIC_CRASH = """
name = "static-crash"
description = "A static member crashes and restarts before its session expired."
[group]
members = 3
static = true
topics = { foo = 6 }
[[events]]
at_ms = 30000
kind = "bounce"
member = "c2"
down_ms = 2000
hard = true
"""


def test_static_member_restarted_before_its_session_expired_waits_unreleased() -> None:
    sc = parse_scenario(tomllib.loads(STATIC_CRASH), source="static-crash")
    r = run(sc)
    # UNRELEASED_INSTANCE_ID is fatal for the member: the process is restarted until the old
    # member's session expired and it can take the instance id over.
    assert r.summary["fatal_restarts"] >= 10
    assert r.summary["members_live"] == 3
    assert window(r, "bounce")["time_to_converge_ms"] >= 40_000


def test_commits_carry_epochs_and_stale_ones_are_rejected_as_the_spec_says() -> None:
    r = run("scale-out")
    s = r.summary
    assert s["commits"] > 0 and s["commits_accepted"] > 0
    assert s["i6_checks"] == s["commits_accepted"] + s["commits_rejected"]


def test_metrics_per_disturbance_have_the_issue_fields() -> None:
    r = run("crash")
    for d in r.disturbances:
        assert set(d) >= {"disturbance", "at_ms", "converged", "time_to_converge_ms",
                          "group_epoch_bumps", "resources_moved", "resource_downtime_ms",
                          "peak_unowned", "messages", "records_written"}
