"""Classic Connect workers in the simulator (protocol ``classic-connect``: ``eager``,
``compatible``, ``sessioned``).

Real ``ClassicConnectWorker`` processes (JoinGroup/SyncGroup, the leader runs the Connect
assignor) against the coordinator's classic groups, under the scenario's faults, invariants
checked after every step. KIP-415's scenarios ("Deferred
Resolution of Imbalance under Different Rebalancing Scenarios") are the ``kip415-*`` built-ins
(W1..W3 are c1..c3; AT1, AT2, BT1 are tasks A/0, A/1, B/0 here).

The broken workers below are test doubles (a leader that gives a task away in the round that
revokes it; an eager worker that joins without stopping its work); their violations reproduce
from the seed.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.cli import main
from groupcoord.client.connect.classic_worker import ClassicConnectWorker
from groupcoord.coordinator.classic.messages import JoinGroupResponse
from groupcoord.protocol.connect_protocol import (
    ConnectAssignment,
    ConnectorTaskId,
    decode_assignment,
    encode_assignment,
)
from groupcoord.sim.classic_connect import (
    ClassicConnectSimulation,
    ConfigReader,
    SimConfigTopic,
    holding,
)
from groupcoord.sim.protocols import PROTOCOLS, resolve_protocol
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import BUILTINS, KIP415_SCENARIOS, load_scenario

from .sim_support import assert_same_seed_same_trace, assert_seeds_keep_every_invariant, ok
from .test_sim_connect import events, window

VARIANTS = ["classic-connect:eager", "classic-connect:compatible", "classic-connect:sessioned"]
COOPERATIVE = VARIANTS[1:]
GENERIC = sorted(n for n in BUILTINS if not n.startswith("kip415-"))
SEEDS_PER_VARIANT = 500
CHUNK = 50


def trace_of(scenario: str, protocol: str, seed: int = 1) -> list[str]:
    return ok(simulate(scenario, seed, protocol, record_trace=True)).trace


def items_in(entries: list[tuple[int, str, str]]) -> set[str]:
    return {it for _, _, r in entries for it in r.split(",")}


# ----------------------------------------------------------------------------- registry, CLI


def test_classic_connect_is_registered_with_its_three_variants_and_tasks() -> None:
    spec, variant = resolve_protocol("classic-connect")
    assert spec.simulation is ClassicConnectSimulation
    assert spec.variants == ("eager", "compatible", "sessioned") and variant == "sessioned"
    assert spec.resource == "tasks" and PROTOCOLS["classic"].resource == "partitions"
    with pytest.raises(ValueError, match="cooperative"):
        resolve_protocol("classic-connect:cooperative")


def test_the_cli_runs_the_kip415_bounce_on_sessioned_workers() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["simulate", "--protocol", "classic-connect:sessioned", "--scenario",
                   "kip415-worker-bounce", "--seed", "1"])
    assert rc == 0, out.getvalue()
    assert "protocol classic-connect:sessioned  seed 1: OK" in out.getvalue()
    listing = io.StringIO()
    with redirect_stdout(listing):
        main(["simulate", "--list"])
    assert "classic-connect" in listing.getvalue()


# ----------------------------------------------------------------------------- config topic


def test_the_config_topic_keeps_every_snapshot_and_readers_see_them_after_their_lag() -> None:
    topic = SimConfigTopic()
    now = [0]
    fresh = ConfigReader(topic, lambda: now[0], 0)
    late = ConfigReader(topic, lambda: now[0], 1_000)
    a = topic.publish({"A": 2}, 0)
    b = topic.publish({"A": 2, "B": 1}, 500)
    assert (a.offset, b.offset) == (0, 1) and topic.snapshots[0] == a and topic.latest == b
    now[0] = 600
    assert fresh.snapshot() == b
    assert late.snapshot().offset == -1  # nothing published 1 s ago yet
    now[0] = 1_000
    assert late.snapshot() == a
    assert late.read_to_end() == b and late.snapshot() == b  # never goes back


def test_holding_follows_the_embedded_protocol() -> None:
    """KIP-415 "Connect protocol's format": eager assignments are complete sets; cooperative
    ones list the new and the revoked items; a failed one changes nothing."""
    a0, a1, b0 = ConnectorTaskId("A", 0), ConnectorTaskId("A", 1), ConnectorTaskId("B", 0)
    runs = frozenset({("A", -1), a0, a1})
    raw = decode_assignment(encode_assignment(ConnectAssignment(
        1, 0, "w1", "http://w1:8083/", 3, tasks=(b0,), revoked_tasks=(a1,))))
    assert holding(runs, raw) == {("A", -1), a0, b0}
    assert holding(runs, replace(raw, version=0)) == {b0}
    assert holding(runs, replace(raw, error=1)) == runs
    assert holding(runs, None) == runs


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("protocol", VARIANTS)
def test_same_seed_same_trace_different_seed_different_trace(protocol: str) -> None:
    assert_same_seed_same_trace(protocol)


# ----------------------------------------------------------------------------- built-ins


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("scenario", KIP415_SCENARIOS)
def test_kip415_scenarios_keep_every_invariant(scenario: str, protocol: str) -> None:
    r = ok(simulate(scenario, 1, protocol, full_checks=True))
    assert r.summary["converged_at_ms"] is not None
    assert r.summary["resources"] > 0 and r.summary["i1_strict_checks"] > 0


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("scenario", GENERIC)
def test_generic_builtins_keep_every_invariant(scenario: str, protocol: str) -> None:
    ok(simulate(scenario, 1, protocol))


# ----------------------------------------------------------------------------- KIP-415 outcomes


def test_worker_bounce_within_the_delay_eager_stops_and_moves_everything_sessioned_nothing() -> None:
    """The lab's comparison on KIP-415 "Worker bounces" (W2 returns within d): eager workers
    stop everything at each of the two rebalances and work moves; sessioned workers move
    nothing (W2's work waits for the delay and goes back to W2), at the price of downtime."""
    eager = simulate("kip415-worker-bounce", 1, "classic-connect:eager", record_trace=True)
    coop = simulate("kip415-worker-bounce", 1, "classic-connect:sessioned", record_trace=True)
    ok(eager), ok(coop)
    (bounce,) = load_scenario("kip415-worker-bounce").events
    ew, cw = window(eager, "bounce"), window(coop, "bounce")
    resources = eager.summary["resources"]
    assert resources == coop.summary["resources"] == 5  # A, A/0, A/1, B, B/0
    # eager: every item is stopped after the bounce, and work moves
    stopped = [e for e in events(eager.trace, "revoke") if e[0] >= bounce.at_ms]
    assert len(items_in(stopped)) == resources
    assert ew["resources_moved"] >= resources
    # sessioned: only W2 stops (its own work, on leaving); nothing moves
    stopped = [e for e in events(coop.trace, "revoke") if e[0] >= bounce.at_ms]
    assert {m for _, m, _ in stopped} == {"c2"}
    assert cw["resources_moved"] == 0
    assert coop.summary["items_revoked"] < eager.summary["items_revoked"]
    assert cw["resource_downtime_ms"] > ew["resource_downtime_ms"]
    assert ew["converged"] and cw["converged"]


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_bounce_w2_gets_exactly_its_own_work_back_after_the_delay(protocol: str) -> None:
    t = trace_of("kip415-worker-bounce", protocol)
    sc = load_scenario("kip415-worker-bounce")
    (bounce,) = sc.events
    (gone,) = events(t, "revoke", "c2")
    later = [e for e in events(t, "assigned") if e[0] > bounce.at_ms]
    assert later == [(later[0][0], "c2", gone[2])]  # only W2, only its own work
    assert later[0][0] >= bounce.at_ms + sc.max_delay_ms  # not before the delay expired


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_leaves_its_work_waits_for_the_delay_then_goes_to_the_others(protocol: str) -> None:
    t = trace_of("kip415-worker-leaves", protocol)
    sc = load_scenario("kip415-worker-leaves")
    (leave,) = sc.events
    (gone,) = events(t, "revoke", "c2")
    after = [e for e in events(t, "assigned") if e[0] > leave.at_ms]
    assert after and {m for _, m, _ in after} <= {"c1", "c3"}
    assert min(at for at, _, _ in after) >= leave.at_ms + sc.max_delay_ms
    assert items_in(after) == set(gone[2].split(","))


@pytest.mark.parametrize("protocol", COOPERATIVE)
def test_worker_joins_the_leader_revokes_then_assigns_in_the_follow_up_round(protocol: str) -> None:
    """KIP-415 "Worker joins": W1 runs everything; W2 and W3 join; W1's surplus is revoked in
    one round and given to the newcomers in the next (never in the same round)."""
    t = trace_of("kip415-worker-joins", protocol)
    (join,) = load_scenario("kip415-worker-joins").events
    revoked = events(t, "revoke", "c1")
    assert revoked and all(at >= join.at_ms for at, _, _ in revoked)
    given = [e for e in events(t, "assigned") if e[0] > join.at_ms]
    assert {m for _, m, _ in given} == {"c2", "c3"}
    assert items_in(given) == items_in(revoked)
    assert min(at for at, _, _ in given) >= max(at for at, _, _ in revoked)


# ----------------------------------------------------------------------------- CONFIG_MISMATCH


class LaggingConfigSimulation(ClassicConnectSimulation):
    """c2 reads the config topic at once, the other workers 8 s late: a leader behind a member
    answers CONFIG_MISMATCH (KIP-415 / upstream ``ensureLeaderConfig``)."""

    def config_lag_ms(self, name: str) -> int:
        return 0 if name == "c2" else 8_000


@pytest.mark.parametrize("variant", ["eager", "sessioned"])
def test_a_leader_behind_the_config_topic_answers_config_mismatch_and_the_group_recovers(
        variant: str) -> None:
    r = ok(LaggingConfigSimulation(load_scenario("kip415-connector-added"), 1, variant,
                                   record_trace=True, full_checks=True).run())
    assert r.summary["mismatches"] > 0
    assert any("error" in line and "sync<" in line for line in r.trace)
    assert r.summary["converged_at_ms"] is not None and r.summary["resources"] == 9  # A: 1+2, B: 1+1, C: 1+3


# ----------------------------------------------------------------------------- broken doubles


class GreedyLeaderWorker(ClassicConnectWorker):
    """Broken on purpose (I1): as leader, gives every item it revokes from a member to the
    next member in the same round, before its owner stopped it."""

    def _lead(self, r: JoinGroupResponse) -> dict[str, bytes]:
        encoded = super()._lead(r)
        mids = sorted(encoded)
        out = {m: decode_assignment(encoded[m]) for m in mids}
        for i, m in enumerate(mids):
            a = out[m]
            nxt = mids[(i + 1) % len(mids)]
            if a.version == 0 or nxt == m or a.revoked.is_empty():
                continue
            b = out[nxt]
            out[nxt] = replace(b, connectors=(*b.connectors, *a.revoked_connectors),
                               tasks=(*b.tasks, *a.revoked_tasks))
        return {m: encode_assignment(a) for m, a in out.items()}


class GreedyLeaderSimulation(ClassicConnectSimulation):
    classic_worker_class = GreedyLeaderWorker


class SkippingWorker(ClassicConnectWorker):
    """Broken on purpose: an eager worker that joins without stopping its work first."""

    def _prepare_join(self) -> None:
        self._prepared = True


class SkippingSimulation(ClassicConnectSimulation):
    classic_worker_class = SkippingWorker


@pytest.mark.parametrize("variant", ["compatible", "sessioned"])
def test_a_leader_that_gives_a_task_away_before_its_owner_stopped_it_is_caught_by_i1(
        variant: str) -> None:
    sc = load_scenario("kip415-worker-joins")
    r = GreedyLeaderSimulation(sc, 1, variant).run()
    assert r.violation is not None and r.violation.invariant == "I1", r.summary
    assert "still runs it" in r.violation.message
    again = GreedyLeaderSimulation(sc, 1, variant).run()
    assert again.violation is not None and again.violation.as_json() == r.violation.as_json()
    ok(ClassicConnectSimulation(sc, 1, variant).run())  # the real workers pass the same run


def test_a_worker_that_skips_its_eager_revocation_is_caught_by_i1_with_its_seed() -> None:
    caught = [(seed, r) for seed in range(30)
              if (r := SkippingSimulation(load_scenario("random", seed), seed, "eager").run())
              .violation is not None]
    assert caught, "no seed caught the worker that skips its revocations"
    seed, r = caught[0]
    assert r.violation is not None and r.violation.invariant == "I1", r.violation.format()
    assert "is run by" in r.violation.message
    again = SkippingSimulation(load_scenario("random", seed), seed, "eager").run()
    assert again.violation is not None and again.violation.as_json() == r.violation.as_json()
    ok(ClassicConnectSimulation(load_scenario("random", seed), seed, "eager").run())


class StubbornWorker(ClassicConnectWorker):
    """Broken on purpose: keeps running its work however long the coordinator is unreachable
    (upstream gives it up: ``WorkerCoordinator.poll``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.coordinator_unreachable_ms = 10**9


class StubbornSimulation(ClassicConnectSimulation):
    classic_worker_class = StubbornWorker


@pytest.mark.parametrize("variant", ["eager", "sessioned"])
def test_a_worker_cut_off_longer_than_the_session_timeout_must_have_stopped_its_work(
        variant: str) -> None:
    """c2 and c3 are cut off for 60 s: the coordinator removes them after the session timeout
    and their work goes elsewhere; real workers gave it up long before, a stubborn one is
    caught by I1."""
    sc = load_scenario("network-partition")
    r = StubbornSimulation(sc, 1, variant).run()
    assert r.violation is not None and r.violation.invariant == "I1", r.summary
    assert "after the coordinator last answered it" in r.violation.message
    real = ok(ClassicConnectSimulation(sc, 1, variant, record_trace=True).run())
    assert {m for _, m, _ in events(real.trace, "lost")} == {"c2", "c3"}


def test_a_zombie_that_could_not_know_yet_is_tolerated_and_counted() -> None:
    """Seed 21: a worker's JoinGroup is lost; the coordinator removes it at the end of the
    join phase and the round gives its task away while the worker still waits (upstream's
    JoinGroup timeout is the rebalance timeout plus 5 s): an overlap within the session
    timeout, which upstream has too; counted, and the run is otherwise clean."""
    r = ok(simulate("random", 21, "classic-connect:sessioned", record_trace=True))
    assert r.summary["zombie_overlaps"] > 0
    assert any("zombie-overlap" in line for line in r.trace)


# ----------------------------------------------------------------------------- regressions


@pytest.mark.parametrize(("protocol", "seed"), [
    *((v, seed) for v in VARIANTS for seed in (1672, 2879)),
    ("classic-connect:eager", 1848),
])
def test_a_leader_that_caught_up_labels_its_assignment_with_its_snapshot(
        protocol: str, seed: int) -> None:
    """Found by this simulation (I2): a leader that joined behind a member took a fresher
    snapshot than any member reported, assigned from it, but sent the highest reported offset
    (``client/connect/assignors.py``); the generation held items the named configuration does
    not have (a created connector's tasks), or lacked items it has (eager)."""
    ok(simulate("random", seed, protocol))


@pytest.mark.parametrize("protocol", VARIANTS)
def test_a_session_renewed_at_its_old_deadline_does_not_expire_the_worker(protocol: str) -> None:
    """Found by this simulation (I1, sessioned): a join phase completed by one worker's session
    expiry renewed the others' sessions, yet a renewed one due at that same instant still fired
    (``coordinator/shard.py`` fired a batch of due timers popped beforehand): a worker of the new
    generation was removed before its SyncGroup, rejoined as a new member still running its
    connector, which the leader had meanwhile given to itself."""
    ok(simulate("random", 17516, protocol))


# ----------------------------------------------------------------------------- random seeds


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("first", range(0, SEEDS_PER_VARIANT, CHUNK))
def test_random_seeds_keep_every_invariant(protocol: str, first: int) -> None:
    assert_seeds_keep_every_invariant(protocol, range(first, first + CHUNK))


def test_a_worker_leaving_while_its_lost_joingroup_waits_keeps_the_rebalance_bound() -> None:
    """The lab's rolling bounce at 2 % faults (12 workers, 4 x 5 tasks): c11's JoinGroup is
    lost at 56.4 s; the coordinator ends the join phase without it and gives its tasks away
    (a counted zombie overlap, as upstream, whose JoinGroup waits the rebalance timeout plus
    5 s); at 71 s c11 is bounced and starts stopping its tasks while that JoinGroup is still in
    flight. The I1 bound for a worker waiting on a rebalance (session + request + rebalance
    timeout) holds until the revocation is done, not the bare session timeout."""
    from groupcoord.lab.runs import build_scenario, simulate_run
    from groupcoord.lab.spec import RunParams

    params = RunParams(
        run_id="regression", sweep="quick", protocol="classic-connect:sessioned",
        scenario="rolling-bounce", scenario_def=None, size=12, workload="4x5c", topics=None,
        partitions=None, connectors=4, tasks=5, fault_rate=0.02, replicate=0,
        seed=191262891461776690)
    r = simulate_run(params, build_scenario(params))
    assert r.violation is None, r.violation.format()
    assert r.summary["zombie_overlaps"] > 0  # the lost JoinGroup's overlap happened
