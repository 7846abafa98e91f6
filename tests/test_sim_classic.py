"""Classic consumer groups in the simulator: ``ClassicConsumerMember`` processes, eager
and cooperative, against the coordinator's classic groups, under every fault of the scenarios.

The broken doubles below are importable (``--shard-factory tests.test_sim_classic:HastyShard``)
so a reported command reproduces the violation from a checkout.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from functools import partial
from typing import Any
from uuid import UUID

import pytest

from groupcoord.cli import main
from groupcoord.client.classic_consumer import (
    ClassicConsumerMember,
    cooperative_sticky_assignment,
    eager_range_assignment,
    valid_claims,
)
from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import ErrorCode
from groupcoord.sim.classic import ClassicConsumerSimulation
from groupcoord.sim.engine import SimResult
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import builtins_for, load_scenario

from .sim_support import assert_seeds_keep_every_invariant, ok

VARIANTS = ["classic:eager", "classic:cooperative"]
HERE = "tests.test_sim_classic"
FOO = TopicMetadata(UUID(int=1), "foo", 3)
#: The built-ins of consumer groups (the others are Connect's: connectors, tasks).
CONSUMER_BUILTINS = builtins_for("partitions")


def sub(topics: tuple[str, ...] = ("foo",), owned: dict[str, list[int]] | None = None,
        generation: int = -1) -> Any:
    return decode_subscription(encode_subscription(topics, owned_partitions=owned or {},
                                                   generation_id=generation))


def window(r: SimResult, kind: str) -> dict[str, Any]:
    return next(d for d in r.disturbances if d["disturbance"] == kind)


# ----------------------------------------------------------------------------- leader assignors


def test_eager_leader_assigns_ranges_and_ignores_owned_partitions() -> None:
    # Eager members revoked everything before joining: what they claim does not matter.
    out = eager_range_assignment({"a": sub(owned={"foo": [2]}, generation=1), "b": sub()},
                                 {"foo": FOO})
    assert out == {"a": {"foo": [0, 1]}, "b": {"foo": [2]}}


def test_cooperative_leader_withholds_a_moving_partition_for_the_second_round() -> None:
    # KIP-848's case study on the uniform target: A=[0,1,2], B joins -> A=[0,1], B=[2]. The
    # cooperative leader (KIP-429) first takes partition 2 from A without giving it to B...
    first = cooperative_sticky_assignment(
        {"a": sub(owned={"foo": [0, 1, 2]}, generation=1), "b": sub()}, {"foo": FOO})
    assert first == {"a": {"foo": [0, 1]}, "b": {}}
    # ... A revokes it and rejoins; the second round hands it to B.
    second = cooperative_sticky_assignment(
        {"a": sub(owned={"foo": [0, 1]}, generation=2), "b": sub()}, {"foo": FOO})
    assert second == {"a": {"foo": [0, 1]}, "b": {"foo": [2]}}
    # The broken variant of the tests gives it away at once.
    assert cooperative_sticky_assignment(
        {"a": sub(owned={"foo": [0, 1, 2]}, generation=1), "b": sub()}, {"foo": FOO},
        withhold=False) == second


def test_owned_claims_are_validated_by_generation() -> None:
    # KIP-792: of two claims the newer generation wins; equal ones void each other; claims of
    # unsubscribed topics or missing partitions are dropped.
    subs = {"a": sub(owned={"foo": [0, 1]}, generation=3),
            "b": sub(owned={"foo": [1, 2]}, generation=4),
            "c": sub(owned={"foo": [2, 7]}, generation=4),
            "d": sub(topics=("bar",), owned={"foo": [0]}, generation=9)}
    assert valid_claims(subs, {"foo": FOO}) == {("foo", 0): "a", ("foo", 1): "b"}


# ----------------------------------------------------------------------------- the member


def test_member_subscription_and_offset_commit_carry_what_the_protocol_needs() -> None:
    m = ClassicConsumerMember("g", protocol="cooperative", instance_id="i1")
    m.update_metadata([FOO], 0)
    m.subscribe(["foo"], now_ms=0)
    join = m.poll_request(0)
    assert isinstance(join, JoinGroupRequest)
    assert join.member_id == "" and join.group_instance_id == "i1"
    assert [p.name for p in join.protocols] == ["cooperative-sticky"]
    assert decode_subscription(join.protocols[0].metadata).topics == ("foo",)
    assert m.poll_request(1) is None  # one request in flight
    assert m.commit_request({(FOO.topic_id, 0): 5}) is None  # no generation yet


def _joined(m: ClassicConsumerMember, generation: int, now: int, leader: str = "other",
            others: tuple[JoinGroupResponseMember, ...] = (),
            join: Any = None) -> SyncGroupRequest:
    """Answer the member's JoinGroup (``join`` if already sent; ``others`` besides its own
    metadata if it leads); return its SyncGroup."""
    join = join or m.poll_request(now)
    assert isinstance(join, JoinGroupRequest)
    me = (JoinGroupResponseMember("m", "i1", join.protocols[0].metadata),)
    assert m.on_response(JoinGroupResponse(0, generation, "consumer", "cooperative-sticky",
                                           leader, member_id="m",
                                           members=me + others if leader == "m" else ()),
                         now, m.last_correlation_id)
    sync = m.poll_request(now)
    assert isinstance(sync, SyncGroupRequest)
    return sync


def _synced(m: ClassicConsumerMember, assignment: dict[str, list[int]], now: int) -> None:
    assert m.on_response(SyncGroupResponse(0, "consumer", "cooperative-sticky",
                                           encode_assignment(assignment)),
                         now, m.last_correlation_id)


def _cooperative() -> ClassicConsumerMember:
    m = ClassicConsumerMember("g", protocol="cooperative", instance_id="i1")
    m.update_metadata([FOO], 0)
    m.subscribe(["foo"], now_ms=0)
    return m


def test_a_follow_up_round_that_withholds_again_waits_a_rebalance_timeout() -> None:
    # Generation 5: static member s claims all of foo; the target moves foo-2 to the leader, so
    # it is withheld. s should revoke it and rejoin; when no rebalance comes, the leader rejoins
    # itself a heartbeat interval later (s may have restarted and claim nothing now).
    m = _cooperative()
    owner = JoinGroupResponseMember("s", "i2", encode_subscription(
        ("foo",), owned_partitions={"foo": [0, 1, 2]}, generation_id=4))

    def round_(generation: int, now: int, join: Any = None) -> int:
        sync = _joined(m, generation, now, leader="m", others=(owner,), join=join)
        given = {a.member_id: decode_assignment(a.assignment).partitions
                 for a in sync.assignments}
        assert given == {"m": {}, "s": {"foo": [0, 1]}}  # foo-2 withheld from m
        _synced(m, given["m"], now + 1)
        return now + 1

    synced = round_(5, 1)
    assert m.next_deadline() == synced + m.heartbeat_interval_ms
    # The follow-up round finds s as it was (crashed, still a member until the coordinator
    # removes it): asking again at once would renew its session and cancel its SyncGroup
    # expiry, every round. The next follow-up waits a rebalance timeout more; heartbeats go on.
    synced = round_(6, synced + m.heartbeat_interval_ms)
    follow_up = synced + m.heartbeat_interval_ms + m.rebalance_timeout_ms
    now = synced
    while True:
        due = m.next_deadline()
        assert due is not None and due <= follow_up
        now = due
        req = m.poll_request(now)
        if not isinstance(req, HeartbeatRequest):
            break
        assert m.on_response(HeartbeatResponse(), now, m.last_correlation_id)
    assert isinstance(req, JoinGroupRequest) and now == follow_up
    # Another follow-up round, the same wait; then a rebalance someone else started (a member
    # rejoins) withholds again: its follow-up is a heartbeat interval later again.
    synced = round_(7, now, req)
    hb_at = synced + m.heartbeat_interval_ms
    assert m.next_deadline() == hb_at and isinstance(m.poll_request(hb_at), HeartbeatRequest)
    assert m._follow_up_at == hb_at + m.rebalance_timeout_ms
    assert m.on_response(HeartbeatResponse(ErrorCode.rebalance_in_progress), hb_at,
                         m.last_correlation_id)
    synced = round_(8, hb_at)
    assert m.next_deadline() == synced + m.heartbeat_interval_ms
    assert isinstance(m.poll_request(synced + m.heartbeat_interval_ms), JoinGroupRequest)


def _claim(join: Any) -> tuple[dict[str, list[int]], int]:
    s = decode_subscription(join.protocols[0].metadata)
    return s.owned_partitions, s.generation_id


def test_a_generation_without_an_assignment_is_dropped_when_the_coordinator_may_have_changed() -> None:
    # Generation 1 gives foo-0 and foo-1; generation 2 is joined, but its SyncGroup is answered
    # REBALANCE_IN_PROGRESS: the same coordinator goes on, the member claims at generation 2.
    def in_generation_2() -> tuple[ClassicConsumerMember, JoinGroupRequest]:
        m = _cooperative()
        _joined(m, 1, 0)
        _synced(m, {"foo": [0, 1]}, 1)
        m.request_rejoin()
        _joined(m, 2, 2)
        assert m.on_response(SyncGroupResponse(ErrorCode.rebalance_in_progress), 3,
                             m.last_correlation_id)
        join = m.poll_request(3)
        assert isinstance(join, JoinGroupRequest) and m.generation == 2
        assert _claim(join) == ({"foo": [0, 1]}, 2)
        return m, join

    # That JoinGroup goes unanswered (a coordinator failover resets the connection): the
    # coordinator that takes over loads generation 1 and may form another generation 2 without
    # this member. Its commits, claims and the missed-generation rule go by generation 1.
    m, _ = in_generation_2()
    assert m.on_request_failed(4, m.last_correlation_id)
    assert m.generation == 1 and m.owned == {(FOO.topic_id, 0), (FOO.topic_id, 1)}
    commit = m.commit_request({(FOO.topic_id, 0): 5})
    assert commit is not None and commit.generation_id_or_member_epoch == 1
    now = m.next_deadline()
    assert now is not None
    join = m.poll_request(now)
    assert isinstance(join, JoinGroupRequest) and _claim(join) == ({"foo": [0, 1]}, 1)
    assert m.on_response(JoinGroupResponse(0, 3, "consumer", "cooperative-sticky", "other",
                                           member_id="m"), now, m.last_correlation_id)
    assert m.generation == 3 and m.owned == frozenset()  # generation 2 went by: lost
    # A coordinator error instead (a new coordinator still loading): the same.
    m, _ = in_generation_2()
    assert m.on_response(JoinGroupResponse(ErrorCode.coordinator_load_in_progress,
                                           member_id="m"), 4, m.last_correlation_id)
    assert m.generation == 1
    # Answered by the same coordinator, generation 3 keeps the partitions (as before).
    m, join = in_generation_2()
    assert m.on_response(JoinGroupResponse(0, 3, "consumer", "cooperative-sticky", "other",
                                           member_id="m"), 4, m.last_correlation_id)
    assert m.generation == 3 and len(m.owned) == 2


def test_an_assignment_of_topics_no_longer_subscribed_is_not_installed() -> None:
    # A static member back with a new subscription may be handed its former incarnation's
    # assignment: it installs nothing of it and rejoins (the Java consumer's
    # checkAssignmentMatchedSubscription).
    bar = TopicMetadata(UUID(int=2), "bar", 2)
    m = ClassicConsumerMember("g", protocol="cooperative", instance_id="i1")
    m.update_metadata([FOO, bar], 0)
    m.subscribe(["bar"], now_ms=0)
    _joined(m, 4, 0)
    _synced(m, {"foo": [0, 1, 2]}, 1)
    assert m.owned == frozenset() and m.stats["assigned"] == 0
    join = m.poll_request(1)
    assert isinstance(join, JoinGroupRequest)
    assert decode_subscription(join.protocols[0].metadata).topics == ("bar",)
    _joined(m, 5, 2, join=join)
    _synced(m, {"bar": [0, 1]}, 3)
    assert m.owned == {(bar.topic_id, 0), (bar.topic_id, 1)} and m.poll_request(3) is None


# ----------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("protocol", VARIANTS)
def test_same_seed_same_trace(protocol: str) -> None:
    for scenario in ("random", "rolling-bounce", "coordinator-failover"):
        a = ok(simulate(scenario, 11, protocol, record_trace=True))
        b = ok(simulate(scenario, 11, protocol, record_trace=True))
        assert a.trace and a.trace_text() == b.trace_text()
        assert json.dumps(a.summary, sort_keys=True) == json.dumps(b.summary, sort_keys=True)
        assert a.disturbances == b.disturbances
    traces = {simulate("random", seed, protocol, record_trace=True).trace_text()
              for seed in range(5)}
    assert len(traces) == 5


def test_the_trace_is_identical_in_another_interpreter() -> None:
    # Nothing may depend on the process: hash seeds, object ids, the order of sets.
    code = ("from groupcoord.sim.runner import simulate; import sys; sys.stdout.write("
            "simulate('random', 38, 'classic:cooperative', record_trace=True).trace_text())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": str(h)}).stdout for h in (1, 2)]
    assert runs[0] and runs[0] == runs[1]


# ----------------------------------------------------------------------------- scenarios


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("scenario", CONSUMER_BUILTINS)
def test_every_builtin_scenario_keeps_the_invariants(scenario: str, protocol: str) -> None:
    r = ok(simulate(scenario, 2, protocol))
    assert r.summary["converged_at_ms"] is not None and r.summary["checkpoints"] >= 1
    for d in r.disturbances:
        assert d["converged"], d
    assert r.summary["i6_checks"] > 0 or scenario == "join" or r.summary["commits"] == 0


def test_faults_really_happen() -> None:
    r = ok(simulate("crash", 1, "classic:eager"))
    assert r.summary["crashed"] == 1 and r.summary["members_live"] == 3
    # The crashed member's partitions wait for its session (45 s) to expire.
    assert 40_000 <= window(r, "crash")["time_to_converge_ms"] <= 60_000
    r = ok(simulate("coordinator-failover", 1, "classic:cooperative"))
    assert r.summary["failovers"] >= 1
    r = ok(simulate("slow-member", 1, "classic:eager"))
    assert r.summary["slow_revocations"] >= 1
    r = ok(simulate("static-bounce", 1, "classic:cooperative"))
    assert r.summary["spawned"] > 3
    r = ok(simulate("lossy-network", 1, "classic:eager"))
    assert r.summary["network"]["lost"] > 0


def test_cooperative_rebalances_in_two_rounds_without_stopping_the_world() -> None:
    r = ok(simulate("case-study-member-joins", 0, "classic:cooperative", record_trace=True))
    revokes = [line for line in r.trace if " revoke " in line]
    assert revokes and all("commit" not in line for line in revokes)
    # Round one revokes the moving partitions only; the new member gets them in round two.
    e = ok(simulate("case-study-member-joins", 0, "classic:eager"))
    assert r.summary["partitions_revoked"] < e.summary["partitions_revoked"]


def test_eager_stops_the_world_on_every_rebalance_cooperative_does_not() -> None:
    sc = load_scenario("rolling-bounce")
    partitions = sum(n for _, n in sc.topics)
    eager = ok(simulate(sc, 2, "classic:eager"))
    coop = ok(simulate(sc, 2, "classic:cooperative"))
    we, wc = window(eager, "rolling-bounce"), window(coop, "rolling-bounce")
    # Eager: every partition is without an owner during each rebalance.
    assert we["peak_unowned"] == partitions
    # Cooperative: only the moving ones (the bounced member's).
    assert wc["peak_unowned"] < partitions
    assert coop.summary["partitions_revoked"] < eager.summary["partitions_revoked"]
    assert wc["resources_moved"] < we["resources_moved"]


# ----------------------------------------------------------------------------- regressions


def test_a_static_owner_cut_off_by_a_failover_is_fenced_before_its_partitions_move() -> None:
    """Found by a seed sweep (seed 20387): a static member held generation 2 from a coordinator
    that failed over before persisting it; the one that took over formed another generation 2
    without it (kept as a static member with a stale subscription claiming nothing), whose
    leader gave its partitions away while it, still consuming them, was not fenced: same
    member id, same generation number (client/classic_consumer.py: the generation it got no
    assignment for is dropped when the coordinator may have changed). Seed 20449 since
    auto-commits run on their own timer (the timing moved seed 20387 off the case)."""
    r = ok(simulate("random", 20449, "classic:cooperative"))
    assert r.summary["failovers"] >= 1 and r.summary["zombie_commits_rejected"] >= 1


def test_a_static_member_back_with_other_topics_gets_a_new_assignment() -> None:
    """Found by a seed sweep (seed 20407): a static member restarted subscribing to other topics
    and was handed its former incarnation's assignment (partitions of a topic it no longer
    subscribes to) without a rebalance; nobody rebalanced: the group never converged
    (coordinator/classic/handlers.py, client/classic_consumer.py)."""
    r = ok(simulate("random", 20407, "classic:cooperative"))
    assert r.summary["converged_at_ms"] is not None


@pytest.mark.parametrize("seed", [1581, 2050])
def test_a_crashed_static_owner_is_removed_despite_the_leaders_follow_ups(seed: int) -> None:
    """Found by a seed sweep: a static member crashed owning partitions the leader withheld.
    The leader's follow-up rounds, a heartbeat interval apart, kept it a member (each join
    phase renewed its session, each new rebalance dropped the expiry of its SyncGroup) and its
    partitions withheld: the group never converged (client/classic_consumer.py)."""
    r = ok(simulate("random", seed, "classic:cooperative"))
    assert r.summary["crashed"] >= 1 and r.summary["converged_at_ms"] is not None


# ----------------------------------------------------------------------------- random seeds

SEEDS_PER_VARIANT = 500
CHUNK = 100


@pytest.mark.parametrize("protocol", VARIANTS)
@pytest.mark.parametrize("first", range(0, SEEDS_PER_VARIANT, CHUNK))
def test_random_seeds_keep_every_invariant(protocol: str, first: int) -> None:
    assert_seeds_keep_every_invariant(protocol, range(first, first + CHUNK))


# ----------------------------------------------------------------------------- broken doubles


class HastyShard(Shard):
    """Broken on purpose (I1): when the leader's assignment arrives, the coordinator moves the
    first partition of each member to the next member, before its owner revoked it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        honest = self.classic._sync_group

        def hasty(r: SyncGroupRequest, now: int) -> Any:
            if len(r.assignments) > 1:
                parts = [decode_assignment(a.assignment).partitions if a.assignment else {}
                         for a in r.assignments]
                firsts = [next(((t, ps[0]) for t, ps in sorted(p.items()) if ps), None)
                          for p in parts]
                for i, first in enumerate(firsts):
                    if first is not None:
                        t, q = first
                        parts[i][t].remove(q)
                        parts[(i + 1) % len(parts)].setdefault(t, []).append(q)
                r = SyncGroupRequest(r.group_id, r.generation_id, r.member_id,
                                     r.group_instance_id, r.protocol_type, r.protocol_name,
                                     tuple(SyncGroupAssignment(a.member_id, encode_assignment(p))
                                           for a, p in zip(r.assignments, parts, strict=True)),
                                     r.client_id, r.client_host, r.version)
            return honest(r, now)

        self.register_handler(SyncGroupRequest, hasty)


def test_a_coordinator_that_moves_owned_partitions_is_caught_by_i1() -> None:
    r = simulate("scale-out", 7, "classic:cooperative", shard_factory=f"{HERE}:HastyShard")
    assert r.violation is not None and r.violation.invariant == "I1", r.violation
    assert "still owns it" in r.violation.message
    assert r.violation.command == ("groupcoord simulate --scenario scale-out --protocol "
                                   f"classic:cooperative --seed 7 --shard-factory {HERE}:HastyShard")
    again = simulate("scale-out", 7, "classic:cooperative", shard_factory=f"{HERE}:HastyShard")
    assert again.violation is not None and again.violation.as_json() == r.violation.as_json()
    # The command it prints reproduces it, exit status non-zero.
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(r.violation.command.split()[1:])
    assert rc != 0 and "INVARIANT VIOLATED: I1" in out.getvalue()


class _NoRevocationMember(ClassicConsumerMember):
    """Broken on purpose: an eager member that joins without revoking its partitions."""

    def _begin_rebalance(self) -> None:
        self._start_join()


class SkippingSimulation(ClassicConsumerSimulation):
    def new_member(self, name: str, instance_id: str | None) -> ClassicConsumerMember:
        sc = self.scenario
        m = _NoRevocationMember(sc.group_id, protocol="eager", instance_id=instance_id,
                                client_id=name, session_timeout_ms=sc.session_timeout_ms,
                                rebalance_timeout_ms=sc.rebalance_timeout_ms,
                                heartbeat_interval_ms=sc.heartbeat_interval_ms,
                                request_timeout_ms=sc.request_timeout_ms)
        m.update_metadata(self.image.by_name.values(), self.now)
        return m


def test_a_member_that_skips_revocation_is_caught_by_i1_on_the_members_side() -> None:
    caught = [(seed, r) for seed in range(30)
              if (r := SkippingSimulation(load_scenario("random", seed), seed, "eager").run())
              .violation is not None]
    assert caught, "no seed caught the member that skips its revocations"
    seed, r = caught[0]
    assert r.violation is not None
    assert r.violation.invariant == "I1", r.violation.format()
    assert "consumed by" in r.violation.message
    again = SkippingSimulation(load_scenario("random", seed), seed, "eager").run()
    assert again.violation is not None and again.violation.as_json() == r.violation.as_json()


def test_the_broken_cooperative_assignor_is_caught_by_i1() -> None:
    class Greedy(ClassicConsumerSimulation):
        def new_member(self, name: str, instance_id: str | None) -> ClassicConsumerMember:
            m = super().new_member(name, instance_id)
            m.leader_assignor = partial(cooperative_sticky_assignment, withhold=False)
            return m

    r = Greedy(load_scenario("scale-out"), 3, "cooperative").run()
    assert r.violation is not None and r.violation.invariant == "I1", r.violation
    assert "not revoked" in r.violation.message


def test_cli_runs_classic_protocols() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["simulate", "--scenario", "random", "--protocol", "classic:cooperative",
                   "--seeds", "0-9"])
    assert rc == 0, out.getvalue()
