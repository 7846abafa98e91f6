"""Connect workers in the simulator (protocol ``connect``: ``eager``, ``cooperative``).

Real ConnectWorker processes against the real coordinator's connect groups, under the
scenario's faults, invariants checked after every step. KIP-415's scenarios
("Deferred Resolution of Imbalance under Different Rebalancing
Scenarios") are the ``kip415-*`` built-ins; the tests below check their outcome against the
KIP's tables (W1..W3 are c1..c3; AT1, AT2, BT1 are tasks A/0, A/1, B/0 here).

The broken coordinator double is importable
(``--shard-factory tests.test_sim_connect:HastyConnectShard``) so the printed command reproduces
its violation.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.cli import main
from groupcoord.coordinator.modern.connect.model import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.modern.reconciliation import owns_any_items, reconcile_items
from groupcoord.coordinator.shard import Shard
from groupcoord.sim.protocols import PROTOCOLS, resolve_protocol
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import (
    BUILTINS,
    KIP415_SCENARIOS,
    ScenarioError,
    load_scenario,
    parse_scenario,
    random_scenario,
)

from .sim_support import assert_same_seed_same_trace, assert_seeds_keep_every_invariant

VARIANTS = ["connect:eager", "connect:cooperative"]
GENERIC = sorted(n for n in BUILTINS if not n.startswith("kip415-"))
SEEDS_PER_VARIANT = 500
CHUNK = 50
HERE = "tests.test_sim_connect"


# ----------------------------------------------------------------------------- test double


class HastyConnectShard(Shard):
    """Broken on purpose (I1): reconciliation gives a worker its whole target at once, as if
    nobody held anything - a task may start before its previous owner stopped it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mgr = self.connect

        def hasty(group: ConnectGroup, member: ConnectGroupMember,
                  owned: Any) -> ConnectGroupMember:
            epoch = group.assignment_epoch
            if member.member_epoch < 0 or member.is_reconciled_to(epoch):
                return member
            target = group.target_of(member.member_id)
            step = reconcile_items(
                member.member_id, member.state, member.member_epoch,
                member.previous_member_epoch, member.assigned, member.pending_revocation, epoch,
                target.items, lambda c, t: None, lambda revoking: owns_any_items(owned, revoking))
            if step is None:
                return member
            updated = replace(member, state=step.state, member_epoch=step.member_epoch,
                              previous_member_epoch=step.previous_member_epoch,
                              assigned=dict(step.assigned),
                              pending_revocation=dict(step.pending_revocation))
            mgr._write_current_assignment(group, updated)
            return updated

        mgr._reconcile = hasty  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- helpers


def trace_of(scenario: str, protocol: str, seed: int = 1) -> list[str]:
    r = simulate(scenario, seed, protocol, record_trace=True)
    assert r.ok, r.violation.format() if r.violation else ""
    return r.trace


def events(trace: list[str], kind: str, member: str | None = None) -> list[tuple[int, str, str]]:
    """(time, member, resources) of the trace lines of one kind."""
    out = []
    for line in trace:
        f = line.split()
        if len(f) >= 4 and f[2] == kind and (member is None or f[3] == member):
            out.append((int(f[0]), f[3], f[-1]))
    return out


def window(r: Any, label: str) -> dict[str, Any]:
    (w,) = [d for d in r.disturbances if d["disturbance"] == label]
    return w


# ----------------------------------------------------------------------------- registry, CLI


def test_connect_is_registered_with_tasks_as_its_resource() -> None:
    spec, variant = resolve_protocol("connect")
    assert spec.resource == "tasks" and variant == "cooperative"
    assert spec.variants == ("eager", "cooperative")
    assert PROTOCOLS["consumer"].resource == "partitions"


def test_the_cli_runs_a_connect_scenario_and_lists_the_protocol() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["simulate", "--protocol", "connect:cooperative", "--scenario",
                   "kip415-worker-bounce", "--seed", "1"])
    assert rc == 0, out.getvalue()
    assert "protocol connect:cooperative  seed 1: OK" in out.getvalue()
    listing = io.StringIO()
    with redirect_stdout(listing):
        main(["simulate", "--list"])
    assert "connect" in listing.getvalue() and "kip415-worker-bounce" in listing.getvalue()


# ----------------------------------------------------------------------------- scenarios


def test_a_scenario_declares_connectors_and_connector_events() -> None:
    sc = parse_scenario({
        "group": {"members": 4, "connectors": {"c1": 4, "c2": 2}},
        "member": {"scheduled_rebalance_max_delay_ms": 10_000},
        "events": [{"at_ms": 5, "kind": "add-connector", "connector": "c3", "tasks": 3},
                   {"at_ms": 6, "kind": "update-tasks", "connector": "c1", "tasks": 1},
                   {"at_ms": 7, "kind": "remove-connector", "connector": "c2"}]})
    assert sc.connectors == (("c1", 4), ("c2", 2)) and sc.resource == "tasks"
    assert sc.max_delay_ms == 10_000
    assert [e.kind for e in sc.events] == ["add-connector", "update-tasks", "remove-connector"]
    assert load_scenario("join").resource == "partitions"


@pytest.mark.parametrize("bad", [
    {"events": [{"kind": "update-tasks", "connector": "a"}]},              # tasks missing
    {"events": [{"kind": "add-connector", "connector": "a", "tasks": -1}]},
    {"events": [{"kind": "remove-connector", "connector": 3}]},
    {"group": {"connectors": {"a": -2}}},
])
def test_bad_connector_scenarios_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ScenarioError):
        parse_scenario(bad)


def test_random_connect_scenarios_draw_connectors_and_their_events() -> None:
    scs = [random_scenario(s, resource="tasks") for s in range(200)]
    assert all(sc.connectors and not sc.static for sc in scs)
    kinds = {e.kind for sc in scs for e in sc.events}
    assert {"add-connector", "remove-connector", "update-tasks", "bounce",
            "coordinator-failover"} <= kinds
    assert not kinds & {"add-partitions", "create-topic", "delete-topic", "subscribe"}
    assert random_scenario(5, resource="tasks") == random_scenario(5, resource="tasks")
    assert random_scenario(5) != random_scenario(5, resource="tasks")


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("protocol", VARIANTS)
def test_same_seed_same_trace_different_seed_different_trace(protocol: str) -> None:
    assert_same_seed_same_trace(protocol)


# ----------------------------------------------------------------------------- built-ins


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("scenario", KIP415_SCENARIOS)
def test_kip415_scenarios_keep_every_invariant(scenario: str, protocol: str) -> None:
    r = simulate(scenario, 1, protocol, full_checks=True)
    assert r.ok, r.violation.format() if r.violation else ""
    assert r.summary["converged_at_ms"] is not None
    assert r.summary["resources"] > 0


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("scenario", GENERIC)
def test_generic_builtins_keep_every_invariant(scenario: str, protocol: str) -> None:
    r = simulate(scenario, 1, protocol)
    assert r.ok, r.violation.format() if r.violation else ""


# ----------------------------------------------------------------------------- KIP-415 outcomes


def test_worker_bounce_within_the_delay_cooperative_moves_nothing_eager_moves_work() -> None:
    """KIP-415 "Worker bounces": W2 returns within d and gets its own work back when the
    delay expires; nobody else stops anything. Eager reassigns and stops work at once."""
    coop = simulate("kip415-worker-bounce", 1, "connect:cooperative")
    eager = simulate("kip415-worker-bounce", 1, "connect:eager")
    assert coop.ok and eager.ok
    cw, ew = window(coop, "bounce"), window(eager, "bounce")
    assert cw["resources_moved"] == 0
    assert ew["resources_moved"] > 0
    # cooperative: only the bouncing worker stopped its work (on its leave); eager more
    assert eager.summary["items_revoked"] > coop.summary["items_revoked"]
    # the price of stickiness: W2's work waits for the delay (deferred resolution)
    assert cw["resource_downtime_ms"] > ew["resource_downtime_ms"]
    assert cw["converged"] and ew["converged"]


def test_worker_bounce_w2_gets_exactly_its_own_work_back_after_the_delay() -> None:
    t = trace_of("kip415-worker-bounce", "connect:cooperative")
    sc = load_scenario("kip415-worker-bounce")
    (bounce,) = sc.events
    revoked = events(t, "revoke", "c2")
    assert [r for _, _, r in revoked] and all(at == bounce.at_ms for at, _, _ in revoked)
    before = revoked[0][2]
    later = [(at, m, r) for at, m, r in events(t, "assigned") if at > bounce.at_ms]
    assert later == [(later[0][0], "c2", before)]  # only W2, only its own work
    assert later[0][0] >= bounce.at_ms + sc.max_delay_ms  # not before the delay expired


def test_worker_leaves_its_work_waits_for_the_delay_then_goes_to_the_others() -> None:
    t = trace_of("kip415-worker-leaves", "connect:cooperative")
    sc = load_scenario("kip415-worker-leaves")
    (leave,) = sc.events
    (gone,) = events(t, "revoke", "c2")
    after = [(at, m, r) for at, m, r in events(t, "assigned") if at > leave.at_ms]
    assert after and all(m in ("c1", "c3") for _, m, _ in after)
    assert min(at for at, _, _ in after) >= leave.at_ms + sc.max_delay_ms
    given = set(",".join(r for _, _, r in after).split(","))
    assert given == set(gone[2].split(","))


def test_leader_leaves_its_work_goes_to_the_others_once_the_delay_expired() -> None:
    """KIP-415 "Leader leaves" assigns at once because a classic leader cannot tell lost work
    from new. On the new protocol the coordinator lists the departed worker (Prepare's
    departed_members), so the worker's assigner knows the leader's work is lost and defers it
    like any worker's (``client/connect/worker.py``, documented there): W1's work reaches W2
    and W3 after the delay, nobody else stops anything."""
    t = trace_of("kip415-leader-leaves", "connect:cooperative")
    sc = load_scenario("kip415-leader-leaves")
    (leave,) = sc.events
    (gone,) = events(t, "revoke", "c1")
    assert events(t, "revoke") == [gone]
    after = [(at, m, r) for at, m, r in events(t, "assigned") if at > leave.at_ms]
    assert all(m in ("c2", "c3") for _, m, _ in after)
    assert set(",".join(r for _, _, r in after).split(",")) == set(gone[2].split(","))
    assert min(at for at, _, _ in after) >= leave.at_ms + sc.max_delay_ms


# ----------------------------------------------------------------------------- broken double


def test_a_coordinator_that_starts_a_task_before_its_owner_stopped_it_is_caught_by_i1() -> None:
    r = simulate("scale-out", 1, "connect:cooperative",
                 shard_factory=f"{HERE}:HastyConnectShard")
    assert r.violation is not None and r.violation.invariant == "I1", r.summary
    assert r.violation.command == (
        "groupcoord simulate --scenario scale-out --protocol connect:cooperative "
        f"--seed 1 --shard-factory {HERE}:HastyConnectShard")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(r.violation.command.split()[1:])
    assert rc != 0 and "INVARIANT VIOLATED: I1" in out.getvalue()
    # the real coordinator passes the same run
    assert simulate("scale-out", 1, "connect:cooperative").ok


def test_the_broken_coordinator_is_caught_on_random_seeds_too() -> None:
    caught = [s for s in range(40) if (r := simulate(
        "random", s, "connect:eager", shard_factory=f"{HERE}:HastyConnectShard")).violation
        and r.violation.invariant == "I1"]
    assert caught


# ----------------------------------------------------------------------------- regressions


def test_a_static_worker_waiting_for_its_first_target_keeps_its_membership() -> None:
    """Found by this simulation: a static worker still at epoch 0 (its first install lost) was
    answered UNRELEASED_INSTANCE_ID on its own next heartbeat (coordinator/modern/membership.py)."""
    sc = replace(random_scenario(7, resource="tasks"), static=True)
    r = simulate(sc, 7, "connect:eager")
    assert r.ok, r.violation.format() if r.violation else ""


def test_an_assigner_whose_install_answer_is_lost_still_ends_its_delay() -> None:
    """Found by this simulation (seed 2606): the assigner's Install with a scheduled delay was
    applied but its answer lost; the worker never armed its delay timer, so the lost work stayed
    unassigned in a Stable group (client/connect/worker.py arms it from the installed header)."""
    r = simulate("random", 2606, "connect:cooperative")
    assert r.ok, r.violation.format() if r.violation else ""


def test_a_crashed_workers_join_in_flight_as_the_faults_stop_is_waited_for() -> None:
    """Found by this simulation (seed 19957): a restarted worker crashed 3 ms after sending its
    join, at the quiet time; the run ended there as converged, then the join arrived at that
    same instant (a member nobody runs, group epoch 4) and the end-of-run check saw the group
    unsettled. The simulator's convergence now waits for a dead process's requests in flight
    (sim/consumer.py ``settled``); the coordinator expires the ghost after its session."""
    r = simulate("random", 19957, "connect:eager")
    assert r.ok, r.violation.format() if r.violation else ""


# ----------------------------------------------------------------------------- random seeds


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("first", range(0, SEEDS_PER_VARIANT, CHUNK))
def test_random_seeds_keep_every_invariant(protocol: str, first: int) -> None:
    assert_seeds_keep_every_invariant(protocol, range(first, first + CHUNK))
