"""Client-side assignors on our consumer member (KIP-848 "Client-Side Assignor":
``group.local.assignors``), driven
in-process against a real shard.

KIP-848 "Client-Side Assignor": members advertise their client assignors; the coordinator picks
a member (the one whose version range covers every other's: the Connect draft's A[1-5], B[3-4],
C[2-4] example picks A), tells it ShouldComputeAssignment; it sends PrepareAssignment, runs the
assignor, sends InstallAssignment; the coordinator validates (INVALID_ASSIGNMENT otherwise) and
the members reconcile. If the chosen member does not install within its rebalance timeout,
another is chosen; if it leaves, another is chosen; a changed reason bumps the group epoch.

After every response delivered, no partition is owned by two members (I1, on the members' side).
"""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.client.assignors import (
    AssignmentSpec,
    AssignorMetadata,
    ClientSideAssignment,
    ClientSideAssignor,
    ClientSideRangeAssignor,
    ClientSideUniformAssignor,
    MemberAssignment,
    advertised,
)
from groupcoord.client.consumer import ClientMemberState, ConsumerMember
from groupcoord.coordinator import assignors as server
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import INVALID_ASSIGNMENT

from .support import image, topic_id

STEP_MS = 100


class Ranged(ClientSideUniformAssignor):
    """The uniform assignor advertised with a given version range."""

    def __init__(self, lo: int, hi: int) -> None:
        super().__init__()
        self.minimum_version = lo
        self.maximum_version = hi


class Dropping(ClientSideUniformAssignor):
    """A bad local assignor: leaves the highest partition of every topic unassigned."""

    def assign(self, group: AssignmentSpec) -> ClientSideAssignment:
        good = super().assign(group)
        drop = {(t, max(ps)) for a in good.members.values() for t, ps in a.partitions.items()
                if ps}
        drop = {(t, p) for t, p in drop if p == group.topics[t].num_partitions - 1}
        return ClientSideAssignment({mid: MemberAssignment({t: frozenset(p for p in ps if (t, p) not in drop)
                                                  for t, ps in a.partitions.items()})
                           for mid, a in good.members.items()})


class Raising(ClientSideUniformAssignor):
    def assign(self, group: AssignmentSpec) -> ClientSideAssignment:
        raise RuntimeError("the application's assignor failed")


class Group:
    """Consumer members of group ``g`` on one shard; a clock in ms; I1 checked at every step."""

    def __init__(self, **topics: int) -> None:
        self.image = image(**topics)
        self.shard = Shard(metadata=self.image)
        self.now = 0
        self.members: dict[str, ConsumerMember] = {}
        self.topics = sorted(topics)
        #: Members whose Prepare/Install requests are lost (an assigner that never installs).
        self.mute: set[str] = set()
        self.sent: list[tuple[str, Any]] = []
        self.answers: list[tuple[str, Any]] = []

    def join(self, mid: str, *assignors: ClientSideAssignor, **kw: Any) -> ConsumerMember:
        kw.setdefault("rebalance_timeout_ms", 10_000)
        m = ConsumerMember("g", member_id=mid, local_assignors=assignors, **kw)
        self.members[mid] = m
        m.subscribe(self.topics, now_ms=self.now)
        return m

    def pump(self) -> None:
        for _ in range(1000):
            busy = False
            for mid, m in sorted(self.members.items()):
                req = m.poll_request(self.now)
                if req is None:
                    continue
                busy = True
                cid = m.last_correlation_id
                self.sent.append((mid, req))
                if mid in self.mute and not isinstance(req, ConsumerGroupHeartbeatRequest):
                    continue
                resp = self.shard.handle(req, self.now).response
                self.answers.append((mid, resp))
                m.on_response(resp, self.now, cid)
                self.check_i1()
            if not busy:
                return
        raise AssertionError("members never went quiet")

    def run(self, ms: int) -> None:
        end = self.now + ms
        self.pump()
        while self.now < end:
            self.now += STEP_MS
            self.shard.expire_timers(self.now)
            self.pump()

    def check_i1(self) -> None:
        seen: dict[tuple[Any, int], str] = {}
        for mid, m in self.members.items():
            for tp in m.owned:
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {mid}"
                seen[tp] = mid

    @property
    def group(self) -> ConsumerGroup:
        g = self.shard.groups["g"]
        assert isinstance(g, ConsumerGroup)
        return g

    def owned(self) -> dict[str, frozenset[tuple[Any, int]]]:
        return {mid: m.owned for mid, m in self.members.items()}

    def all_partitions(self) -> set[tuple[Any, int]]:
        return {(t.topic_id, p) for t in self.image.by_id.values() for p in range(t.num_partitions)}

    def converged(self) -> bool:
        g = self.group
        owned = self.owned()
        return (g.group_epoch == g.assignment_epoch
                and all(m.state is ClientMemberState.STABLE and m.owned == m.target
                        and m.member_epoch == g.group_epoch for m in self.members.values())
                and set().union(*owned.values()) == self.all_partitions())

    def computers(self) -> list[str]:
        """Members that sent an Install, in order."""
        return [mid for mid, r in self.sent if isinstance(r, ConsumerGroupInstallAssignmentRequest)]

    def server_target(self, assignor: server.PartitionAssignor) -> dict[str, Any]:
        """What the server-side assignor computes from the group's current state (the same
        input the coordinator's own target assignment would use)."""
        g = self.group
        spec = server.GroupSpec(
            {mid: server.MemberSubscription(mid, frozenset(topic_id(t) for t in self.topics))
             for mid in g.members},
            {t.topic_id: t for t in self.image.by_id.values()})
        return {mid: {t: ps for t, ps in a.items() if ps}
                for mid, a in assignor.assign(spec).items()}


def sizes(owned: dict[str, frozenset[Any]]) -> list[int]:
    return sorted(len(v) for v in owned.values())


# ============================================================================ the member's side


def test_local_assignors_are_advertised_on_full_heartbeats_and_when_they_change() -> None:
    a = ClientSideUniformAssignor()
    m = ConsumerMember("g", member_id="m1", local_assignors=[a, ClientSideRangeAssignor()])
    m.subscribe(["foo"], now_ms=0)
    join = m.poll_request(0)
    assert isinstance(join, ConsumerGroupHeartbeatRequest)
    assert join.server_assignor is None
    assert join.client_assignors == (advertised(a), advertised(ClientSideRangeAssignor()))
    assert [(c.name, c.minimum_version, c.maximum_version) for c in join.client_assignors] == [
        ("uniform", 0, 0), ("range", 0, 0)]
    from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatResponse
    m.on_response(ConsumerGroupHeartbeatResponse(member_id="m1", member_epoch=1,
                                                 heartbeat_interval_ms=1000), 0)
    partial = m.poll_request(1000)
    assert isinstance(partial, ConsumerGroupHeartbeatRequest) and partial.client_assignors is None
    m.on_response(ConsumerGroupHeartbeatResponse(member_id="m1", member_epoch=1,
                                                 heartbeat_interval_ms=1000), 1000)
    a.reason = 3  # the application asks for a reassignment (KIP-848: a non-zero reason)
    changed = m.poll_request(2000)
    assert isinstance(changed, ConsumerGroupHeartbeatRequest)
    assert changed.client_assignors is not None and changed.client_assignors[0].reason == 3


def test_server_and_client_assignors_cannot_be_used_together() -> None:
    with pytest.raises(ValueError, match="together"):
        ConsumerMember("g", server_assignor="range", local_assignors=[ClientSideUniformAssignor()])
    with pytest.raises(ValueError, match="unique"):
        ConsumerMember("g", local_assignors=[ClientSideUniformAssignor(), ClientSideUniformAssignor()])


# ============================================================================ end to end


@pytest.mark.parametrize("n", [1, 3])
def test_members_with_the_local_uniform_assignor_reach_the_servers_target(n: int) -> None:
    c = Group(foo=7, bar=5)
    for i in range(n):
        c.join(f"m{i}", ClientSideUniformAssignor())
    c.run(20_000)
    assert c.converged()
    owned = c.owned()
    assert sizes(owned)[-1] - sizes(owned)[0] <= 1
    # The same result as the coordinator's own uniform assignor on the same input.
    expected = c.server_target(server.UniformAssignor())
    got = {mid: {t: ps for t, ps in c.group.target_of(mid).items() if ps} for mid in owned}
    assert got == expected
    assert set(c.computers()) <= set(owned) and c.computers()
    (d,) = c.shard.handle(ConsumerGroupDescribeRequest(("g",)), c.now).response.groups
    assert d.assignor_name == "uniform"


def test_the_local_range_assignor_co_partitions() -> None:
    c = Group(foo=6, bar=6)
    for i in range(3):
        c.join(f"m{i}", ClientSideRangeAssignor())
    c.run(20_000)
    assert c.converged()
    for m in c.members.values():
        by_topic: dict[Any, set[int]] = {}
        for t, p in m.owned:
            by_topic.setdefault(t, set()).add(p)
        assert by_topic[topic_id("foo")] == by_topic[topic_id("bar")]
        assert len(by_topic[topic_id("foo")]) == 2


def test_a_member_joining_later_gets_its_share_computed_by_the_assigner() -> None:
    c = Group(foo=8)
    c.join("m1", ClientSideUniformAssignor())
    c.run(10_000)
    assert c.converged() and sizes(c.owned()) == [8]
    installs = len(c.computers())
    c.join("m2", ClientSideUniformAssignor())
    c.run(20_000)
    assert c.converged() and sizes(c.owned()) == [4, 4]
    assert c.computers()[installs:] and set(c.computers()[installs:]) == {"m1"}  # kept


# ============================================================================ selection


def test_the_member_whose_range_covers_every_other_computes_a15_b34_c24() -> None:
    c = Group(foo=6)
    c.join("C", Ranged(2, 4))
    c.join("B", Ranged(3, 4))
    c.run(10_000)
    assert c.converged()
    c.join("A", Ranged(1, 5))
    before = len(c.computers())
    c.run(20_000)
    assert c.converged() and sizes(c.owned()) == [2, 2, 2]
    assert set(c.computers()[before:]) == {"A"}
    # Every Prepare answered to A carries each member's metadata version for the assignor.
    preps = [r for mid, r in c.answers if mid == "A" and hasattr(r, "assignor_name")]
    assert preps and {(m.member_id, m.assignor.metadata_version) for m in preps[-1].members} == {
        ("A", 5), ("B", 4), ("C", 4)}


def test_the_assigner_leaving_passes_the_computation_on() -> None:
    c = Group(foo=6)
    for mid in ("m1", "m2", "m3"):
        c.join(mid, ClientSideUniformAssignor())
    c.run(20_000)
    assert c.converged()
    (first,) = set(c.computers())
    c.members[first].leave(c.now)
    c.run(1_000)
    del c.members[first]
    before = len(c.computers())
    c.run(20_000)
    assert c.converged() and sizes(c.owned()) == [3, 3]
    assert c.computers()[before:] and first not in c.computers()[before:]


def test_an_assigner_that_never_installs_is_replaced_after_its_rebalance_timeout() -> None:
    c = Group(foo=6)
    c.join("m1", ClientSideUniformAssignor())
    c.run(10_000)
    c.mute.add("m1")  # from now on m1's Prepare and Install are lost
    c.join("m2", ClientSideUniformAssignor())
    c.run(5_000)
    assert c.group.group_epoch > c.group.assignment_epoch  # m1 is stuck
    assert "m2" not in c.computers()
    c.run(20_000)  # m1's rebalance timeout (10 s) passes: m2 is chosen
    assert c.converged() and sizes(c.owned()) == [3, 3]
    assert "m2" in c.computers()
    m1 = c.members["m1"]
    assert m1.assign_inflight is not None  # its lost Prepare: given up after the request timeout
    c.run(30_000)
    assert m1.assign_inflight is None and m1.stats["assign_failures"] == 1
    assert c.converged() and sizes(c.owned()) == [3, 3]


# ============================================================================ errors


def test_invalid_assignment_from_a_bad_local_assignor_keeps_the_target() -> None:
    c = Group(foo=4)
    bad = c.join("A", Dropping())
    c.run(5_000)
    invalid = [r for mid, r in c.answers if mid == "A"
               and getattr(r, "error_code", 0) == INVALID_ASSIGNMENT]
    assert invalid and "foo-3" in (invalid[0].error_message or "")
    assert c.group.assignment_epoch == 0 and not bad.owned  # nothing installed
    assert bad.stats["assign_failures"] >= 1 and bad.state is ClientMemberState.STABLE
    # A good member joins; the bad one leaves: the good one computes, everything is assigned.
    c.join("B", ClientSideUniformAssignor())
    c.run(2_000)
    bad.leave(c.now)
    c.run(1_000)
    del c.members["A"]
    c.run(20_000)
    assert c.converged() and sizes(c.owned()) == [4]


def test_an_assignor_error_keeps_the_target_until_the_next_epoch_bump() -> None:
    c = Group(foo=4)
    good = ClientSideUniformAssignor()
    c.join("m1", good)
    c.run(10_000)
    assert c.converged()
    epoch = c.group.assignment_epoch
    # m1's assignor now fails; m2 joins (with an assignor of the same name that works).
    c.members["m1"].local_assignors = (Raising(),)
    c.join("m2", ClientSideUniformAssignor())
    c.run(10_000)
    errors = [r for mid, r in c.sent if isinstance(r, ConsumerGroupInstallAssignmentRequest)
              and r.error]
    assert errors and all(r.member_id == "m1" for r in errors)
    assert c.group.assignment_epoch == epoch  # the target was kept
    assert sizes(c.owned()) == [0, 4]
    # m1's assignor recovers and bumps its reason: the group epoch bumps, m1 computes again.
    fixed = ClientSideUniformAssignor(reason=1)
    c.members["m1"].local_assignors = (fixed,)
    bumped = c.group.group_epoch
    c.run(20_000)
    assert c.group.group_epoch == bumped + 1
    assert c.converged() and sizes(c.owned()) == [2, 2]


def test_a_reason_change_bumps_the_group_epoch_and_asks_for_a_new_assignment() -> None:
    c = Group(foo=4)
    a1, a2 = ClientSideUniformAssignor(), ClientSideUniformAssignor()
    c.join("m1", a1)
    c.join("m2", a2)
    c.run(20_000)
    assert c.converged()
    epoch, prepares = c.group.group_epoch, c.members["m1"].stats["prepares"] + \
        c.members["m2"].stats["prepares"]
    a2.reason = 1
    c.run(15_000)
    assert c.group.group_epoch == epoch + 1
    assert c.members["m1"].stats["prepares"] + c.members["m2"].stats["prepares"] > prepares
    assert c.converged()


def test_prepare_and_install_round_trip_through_the_member_api() -> None:
    """poll_request returns the Prepare beside the heartbeat, then the Install; a response
    for nothing in flight is ignored."""
    c = Group(foo=2)
    m = c.join("m1", ClientSideUniformAssignor())
    c.pump()
    kinds = [type(r).__name__ for mid, r in c.sent]
    assert kinds[:3] == ["ConsumerGroupHeartbeatRequest", "ConsumerGroupPrepareAssignmentRequest",
                         "ConsumerGroupInstallAssignmentRequest"]
    assert m.stats["prepares"] == 1 and m.stats["installs"] == 1 and m.stats["installed"] == 1
    stray = c.shard.handle(ConsumerGroupPrepareAssignmentRequest("g", "m1", m.member_epoch),
                           c.now).response
    assert m.on_response(stray, c.now) is False


def test_metadata_of_a_custom_assignor_reaches_the_assigner() -> None:
    class Tagged(ClientSideUniformAssignor):
        def __init__(self, tag: bytes) -> None:
            super().__init__()
            self.tag = tag

        def metadata(self) -> AssignorMetadata:
            return AssignorMetadata(0, 0, self.tag)

    c = Group(foo=2)
    c.join("m1", Tagged(b"one"))
    c.join("m2", Tagged(b"two"))
    c.run(10_000)
    assert c.converged()
    preps = [r for _, r in c.answers if hasattr(r, "assignor_name") and r.members]
    assert {(m.member_id, m.assignor.metadata_bytes) for m in preps[-1].members} == {
        ("m1", b"one"), ("m2", b"two")}


# ============================================================================ simulator


BUILTIN_SCENARIOS = ["join", "leave", "crash", "bounce", "rolling-bounce", "static-bounce",
                     "scale-out", "scale-in", "partition-added", "network-partition",
                     "lossy-network", "slow-member", "coordinator-failover",
                     "subscription-change", "case-study-member-joins",
                     "case-study-member-failure"]


@pytest.mark.parametrize("scenario", BUILTIN_SCENARIOS)
def test_simulated_client_variant_keeps_every_invariant(scenario: str) -> None:
    from groupcoord.sim.runner import simulate

    r = simulate(scenario, 0, "consumer:client")
    assert r.violation is None, r.violation.format()
    assert r.summary["installs"] > 0 and r.summary["prepares"] >= r.summary["installs"]


def test_simulated_client_variant_random_seeds() -> None:
    from groupcoord.sim.runner import simulate

    failures = [r.violation.format() for seed in range(0, 100)
                if (r := simulate("random", seed, "consumer:client")).violation is not None]
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("seed", [346, 360])
def test_simulated_client_variant_duplicated_join_seeds(seed: int) -> None:
    """Seeds where the network duplicates a member's epoch-0 join and delivers the copy after
    the member moved to a later epoch: the copy is refused (FENCED_MEMBER_EPOCH, no change) and
    the member, which ignores an answer to a request not in flight, keeps its partitions alone."""
    from groupcoord.sim.runner import simulate

    r = simulate("random", seed, "consumer:client")
    assert r.violation is None, r.violation.format()


# ============================================================================ wire encoding


def test_heartbeat_tagged_fields_round_trip_and_stay_upstream_compatible() -> None:
    import io
    import uuid as _uuid

    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer

    from groupcoord.protocol import fast
    from groupcoord.protocol.codec import build, request_class, response_class

    def enc(e: Any) -> bytes:
        buf = io.BytesIO()
        entity_writer(type(e))(buf, e)
        return buf.getvalue()

    tid = _uuid.UUID("0b7f4e0c-7b49-4e1f-9d2c-3a6f3e2b1a90")
    for v in (0, 1):
        req_cls, resp_cls = request_class(68, v), response_class(68, v)
        assert req_cls is not None and resp_cls is not None
        assert issubclass(req_cls, load_request_schema(68, v))
        base = {"group_id": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout": 30_000,
                "subscribed_topic_names": ["t"], "topic_partitions": []}
        assignors = [{"name": "range", "minimum_version": 0, "maximum_version": 2, "reason": 1,
                      "version": 2, "metadata": b"md"}]
        with_tag = build(req_cls, base, client_assignors=assignors)
        data = enc(with_tag)
        back, n = entity_reader(req_cls)(data, 0)
        assert n == len(data) and back == with_tag
        # Without the tagged field: byte for byte what an upstream client sends.
        plain = enc(build(req_cls, base))
        assert plain == enc(build(load_request_schema(68, v), base))
        assert len(data) > len(plain)
        # Responses: the hand-written encoder equals kio's for the extended class, flag or not.
        for flag in (False, True):
            fields = {"throttle_time": 0, "error_code": 0, "member_id": "m", "member_epoch": 3,
                      "heartbeat_interval": 5000,
                      "assignment": {"topic_partitions": [{"topic_id": tid, "partitions": [0, 2]}]},
                      "should_compute_assignment": flag}
            expected = enc(build(resp_cls, fields))
            got = fast.consumer_group_heartbeat_response(0, None, "m", 3, 5000, [(tid, (0, 2))],
                                                         should_compute_assignment=flag)
            assert got == expected
            decoded, _ = entity_reader(resp_cls)(got, 0)
            assert decoded.should_compute_assignment is flag
        unflagged = fast.consumer_group_heartbeat_response(0, None, "m", 3, 5000, None)
        upstream = {"throttle_time": 0, "error_code": 0, "member_id": "m", "member_epoch": 3,
                    "heartbeat_interval": 5000}
        assert unflagged == enc(build(load_response_schema(68, v), upstream))


def test_an_override_schema_must_match_kios_untagged_fields() -> None:
    from groupcoord.protocol.extensions import override_schemas

    schemas = override_schemas()
    assert set(schemas) == {(68, "request"), (68, "response")}
    tagged = {k: [f["name"] for f in s.fields if "taggedVersions" in f] for k, s in schemas.items()}
    assert tagged == {(68, "request"): ["ClientAssignors"],
                      (68, "response"): ["ShouldComputeAssignment"]}
