"""The sans-IO KIP-848 consumer member (``client/consumer.py``): requests it sends, how it
handles responses (reconciliation, fencing, errors), leaving and commits; and a few members
driven against a real shard."""

from __future__ import annotations

from uuid import UUID

import pytest

from groupcoord.client.consumer import (
    DEFER,
    ClientMemberState,
    ConsumerMember,
    Partitions,
    RebalanceListener,
    to_topic_partitions,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import image, topic_id

FOO = topic_id("foo")
E = ErrorCode


def tps(*parts: int) -> frozenset[tuple[UUID, int]]:
    return frozenset((FOO, p) for p in parts)


def ok(epoch: int, *parts: int, interval: int = 5_000,
       assignment: bool = True) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        member_id="m1", member_epoch=epoch, heartbeat_interval_ms=interval,
        assignment=HeartbeatAssignment(to_topic_partitions(tps(*parts))) if assignment else None)


def err(code: int) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=int(code), error_message="x")


class Recorder(RebalanceListener):
    def __init__(self, defer: bool = False) -> None:
        self.calls: list[tuple[str, Partitions]] = []
        self.defer = defer

    def on_partitions_revoked(self, partitions: Partitions) -> object:
        self.calls.append(("revoked", partitions))
        return DEFER if self.defer else None

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        self.calls.append(("assigned", partitions))

    def on_partitions_lost(self, partitions: Partitions) -> None:
        self.calls.append(("lost", partitions))


def member(**kw: object) -> tuple[ConsumerMember, Recorder]:
    rec = Recorder(defer=bool(kw.pop("defer", False)))
    m = ConsumerMember("g", member_ids=lambda: "m1", listener=rec, rebalance_timeout_ms=30_000,
                       **kw)  # type: ignore[arg-type]
    m.subscribe(["foo"], now_ms=0)
    return m, rec


def send(m: ConsumerMember, now: int) -> ConsumerGroupHeartbeatRequest:
    req = m.poll_request(now)
    assert req is not None, f"no request due at {now} (state {m.state})"
    return req


def joined(owned: tuple[int, ...] = (0, 1, 2), **kw: object) -> tuple[ConsumerMember, Recorder]:
    """A member that joined at epoch 1 with ``owned`` and acknowledged it."""
    m, rec = member(**kw)
    send(m, 0)
    m.on_response(ok(1, *owned), 10)
    send(m, 10)  # the acknowledgement
    m.on_response(ok(1, assignment=False), 20)
    rec.calls.clear()
    return m, rec


# ------------------------------------------------------------------------------ requests


def test_join_is_a_full_request_at_epoch_0_with_a_client_generated_member_id() -> None:
    m, _ = member(instance_id="i1", rack_id="r1", server_assignor="range")
    assert m.state is ClientMemberState.JOINING
    assert m.next_deadline() == 0
    req = send(m, 0)
    assert req == ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m1", member_epoch=0, instance_id="i1", rack_id="r1",
        rebalance_timeout_ms=30_000, subscribed_topic_names=("foo",), server_assignor="range",
        topic_partitions=(), client_id="groupcoord-consumer", version=1)
    assert m.poll_request(1) is None  # one heartbeat in flight at a time


def test_member_id_default_is_a_random_uuid_in_kafka_form() -> None:
    a = ConsumerMember("g")
    b = ConsumerMember("g")
    assert len(a.member_id) == 22 and a.member_id != b.member_id


def test_assignment_is_reconciled_then_acknowledged_at_once_then_heartbeats_are_partial() -> None:
    m, rec = member()
    send(m, 0)
    assert m.on_response(ok(1, 0, 1, 2), 10)
    assert rec.calls == [("assigned", tps(0, 1, 2))]
    assert m.owned == tps(0, 1, 2) and m.member_epoch == 1
    assert m.state is ClientMemberState.ACKNOWLEDGING
    ack = send(m, 10)  # immediately
    assert ack.member_epoch == 1 and ack.topic_partitions == to_topic_partitions(tps(0, 1, 2))
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1
    assert ack.rack_id is None and ack.server_assignor is None
    m.on_response(ok(1, assignment=False), 20)
    assert m.state is ClientMemberState.STABLE
    assert m.next_deadline() == 5_020  # the interval of the last response
    assert m.poll_request(5_019) is None
    hb = send(m, 5_020)
    assert hb.topic_partitions is None and hb.subscribed_topic_names is None
    assert hb.member_epoch == 1


def test_revocation_runs_the_listener_stops_owning_and_acknowledges_at_once() -> None:
    m, rec = joined()
    send(m, 5_020)
    m.on_response(ok(1, 0, 1), 5_030)  # revoke foo-2, epoch unchanged
    assert rec.calls == [("revoked", tps(2))]
    assert m.owned == tps(0, 1)
    ack = send(m, 5_030)
    assert ack.topic_partitions == to_topic_partitions(tps(0, 1)) and ack.member_epoch == 1


def test_revocation_and_assignment_are_never_one_step() -> None:
    # A lost response can make the coordinator answer with both a revocation and a new
    # partition: the member revokes first (listener), then assigns in a separate step.
    m, rec = joined()
    send(m, 5_020)
    m.on_response(ok(3, 0, 1, 5), 5_030)
    assert rec.calls == [("revoked", tps(2)), ("assigned", tps(5))]
    assert m.owned == tps(0, 1, 5)


def test_a_deferred_revocation_keeps_the_partitions_owned_until_it_completes() -> None:
    m, rec = joined(defer=True)
    send(m, 5_020)
    m.on_response(ok(1, 0), 5_030)
    assert rec.calls == [("revoked", tps(1, 2))]
    assert m.owned == tps(0, 1, 2) and m.state is ClientMemberState.RECONCILING
    assert m.poll_request(5_031) is None  # nothing to acknowledge yet: wait for the interval
    hb = send(m, 10_030)
    assert hb.topic_partitions is None  # still owns them: unchanged
    m.on_response(ok(1, 0, assignment=False), 10_040)
    m.complete_revocation(12_000)
    assert m.owned == tps(0) and m.state is ClientMemberState.ACKNOWLEDGING
    ack = send(m, 12_000)
    assert ack.topic_partitions == to_topic_partitions(tps(0))


def test_new_assignment_while_revoking_is_reconciled_after_the_revocation() -> None:
    m, rec = joined(defer=True)
    send(m, 5_020)
    m.on_response(ok(1, 0, 1), 5_030)  # revoke 2 (deferred)
    send(m, 10_030)
    m.on_response(ok(2, 0, 1, 7), 10_040)  # a newer target arrives meanwhile
    assert rec.calls == [("revoked", tps(2))]
    m.complete_revocation(11_000)
    assert rec.calls == [("revoked", tps(2)), ("assigned", tps(7))]
    assert m.owned == tps(0, 1, 7)


@pytest.mark.parametrize("code", [E.fenced_member_epoch, E.unknown_member_id])
def test_fencing_loses_everything_and_rejoins_at_epoch_0_with_the_same_member_id(code: int) -> None:
    m, rec = joined()
    send(m, 5_020)
    m.on_response(err(code), 5_030)
    assert rec.calls == [("lost", tps(0, 1, 2))]
    assert m.owned == frozenset() and m.member_epoch == 0
    assert m.state is ClientMemberState.JOINING
    req = send(m, 5_030)
    assert req.member_epoch == 0 and req.member_id == "m1" and req.topic_partitions == ()
    assert req.subscribed_topic_names == ("foo",) and req.rebalance_timeout_ms == 30_000


def test_fenced_during_a_deferred_revocation_rejoins_once_it_completed() -> None:
    m, rec = joined(defer=True)
    send(m, 5_020)
    m.on_response(ok(1, 0), 5_030)  # revoke 1, 2 (deferred)
    send(m, 10_030)
    m.on_response(err(E.fenced_member_epoch), 10_040)
    assert m.state is ClientMemberState.FENCED
    assert m.poll_request(20_000) is None
    m.complete_revocation(40_000)
    assert rec.calls == [("revoked", tps(1, 2)), ("lost", tps(0))]
    req = send(m, 40_000)
    assert req.member_epoch == 0


def test_retriable_error_backs_off_then_sends_a_full_request() -> None:
    m, _ = joined()
    send(m, 5_020)
    m.on_response(err(E.coordinator_load_in_progress), 5_030)
    assert m.poll_request(5_031) is None
    assert m.next_deadline() == 5_130  # retry_backoff_ms = 100
    req = send(m, 5_130)
    assert req.member_epoch == 1 and req.rebalance_timeout_ms == 30_000
    assert req.subscribed_topic_names == ("foo",)
    assert req.topic_partitions == to_topic_partitions(tps(0, 1, 2))
    m.on_response(err(E.not_coordinator), 5_140)
    assert m.next_deadline() == 5_340  # doubled


def test_request_timeout_then_a_late_response_is_ignored() -> None:
    m, rec = joined(request_timeout_ms=3_000)
    send(m, 5_020)
    cid = m.inflight.correlation_id if m.inflight else -1
    assert m.next_deadline() == 8_020
    assert m.poll_request(8_020) is None  # timed out: backs off first
    assert m.stats["timeouts"] == 1
    req = send(m, 8_120)
    assert req.rebalance_timeout_ms == 30_000  # full after an error
    assert not m.on_response(ok(1, 0), 8_200, correlation_id=cid)  # the old answer
    assert rec.calls == [] and m.owned == tps(0, 1, 2)


def test_duplicate_responses_are_ignored() -> None:
    m, rec = member()
    send(m, 0)
    cid = m.inflight.correlation_id if m.inflight else -1
    assert m.on_response(ok(1, 0), 10, correlation_id=cid)
    assert not m.on_response(ok(1, 0), 11, correlation_id=cid)
    assert rec.calls == [("assigned", tps(0))]


@pytest.mark.parametrize("code", [E.unreleased_instance_id, E.fenced_instance_id,
                                  E.invalid_request, E.unsupported_assignor])
def test_fatal_errors_stop_the_member(code: int) -> None:
    m, rec = joined(instance_id="i1")
    send(m, 5_020)
    m.on_response(err(code), 5_030)
    assert m.state is ClientMemberState.FATAL and m.fatal_error is not None
    assert m.fatal_error[0] == code
    assert rec.calls == [("lost", tps(0, 1, 2))]
    assert m.poll_request(100_000) is None and m.next_deadline() is None


def test_dynamic_member_leaves_with_epoch_minus_1_after_revoking() -> None:
    m, rec = joined()
    m.leave(6_000)
    assert rec.calls == [("revoked", tps(0, 1, 2))]
    req = send(m, 6_000)
    assert req.member_epoch == -1 and req.member_id == "m1"
    assert m.state is ClientMemberState.UNJOINED and m.owned == frozenset()
    assert m.poll_request(60_000) is None


@pytest.mark.parametrize(("permanent", "epoch"), [(False, -2), (True, -1)])
def test_static_member_leaves_temporarily_or_for_good(permanent: bool, epoch: int) -> None:
    m, _ = joined(instance_id="i1")
    m.leave(6_000, permanent=permanent)
    req = send(m, 6_000)
    assert req.member_epoch == epoch and req.instance_id == "i1"


def test_leave_waits_for_a_deferred_revocation() -> None:
    m, _rec = joined(defer=True)
    m.leave(6_000)
    assert m.poll_request(6_000) is None and m.next_deadline() is None
    m.complete_revocation(9_000)
    assert send(m, 9_000).member_epoch == -1


def test_subscription_change_is_sent_at_once() -> None:
    m, _ = joined()
    m.subscribe(["foo", "bar"], now_ms=6_000)
    req = send(m, 6_000)
    assert req.subscribed_topic_names == ("bar", "foo") and req.subscribed_topic_regex is None
    m.on_response(ok(2, 0, 1, 2, assignment=False), 6_010)
    m.subscribe(regex="f.*", now_ms=7_000)
    req = send(m, 7_000)
    assert req.subscribed_topic_regex == "f.*" and req.subscribed_topic_names is None
    m.on_response(ok(3, 0, 1, 2, assignment=False), 7_010)
    m.subscribe(["foo"], now_ms=8_000)
    req = send(m, 8_000)
    assert req.subscribed_topic_names == ("foo",) and req.subscribed_topic_regex == ""


def test_subscribe_validates_its_arguments() -> None:
    m = ConsumerMember("g", member_id="x")
    with pytest.raises(ValueError):
        m.subscribe()
    with pytest.raises(ValueError):
        m.subscribe(["a"], regex="b")
    assert m.poll_request(0) is None  # not subscribed: nothing to send


def test_commit_carries_the_member_epoch_and_only_owned_partitions() -> None:
    m, _ = joined()
    req = m.commit_request({(FOO, 0): 10, (FOO, 1): 11, (FOO, 9): 12}, {FOO: "foo"})
    assert req is not None
    assert req.member_id == "m1" and req.generation_id_or_member_epoch == 1
    assert [(t.name, t.topic_id, [p.partition_index for p in t.partitions])
            for t in req.topics] == [("foo", FOO, [0, 1])]
    assert m.commit_request({(FOO, 9): 1}) is None
    fresh, _ = member()
    assert fresh.commit_request({(FOO, 0): 1}) is None  # not in the group yet


# ------------------------------------------------------------------------------ with a shard


def drive(shard: Shard, members: list[ConsumerMember], until: int, step: int = 100) -> None:
    """Run members against ``shard`` with instant delivery, polling every ``step`` ms."""
    for now in range(0, until, step):
        shard.expire_timers(now)
        for m in members:
            req = m.poll_request(now)
            while req is not None:
                m.on_response(shard.handle(req, now).response, now)
                req = m.poll_request(now)


def test_members_against_a_shard_reach_disjoint_complete_assignments() -> None:
    shard = Shard(metadata=image(foo=6))
    names = iter(["a", "b", "c"])
    members = [ConsumerMember("g", member_ids=lambda: next(names), rebalance_timeout_ms=30_000)
               for _ in range(3)]
    for m in members:
        m.subscribe(["foo"], now_ms=0)
    drive(shard, members, 30_000)
    owned = [m.owned for m in members]
    assert all(len(o) == 2 for o in owned)
    assert frozenset().union(*owned) == tps(0, 1, 2, 3, 4, 5)
    group = shard.groups["g"]
    assert {m.member_epoch for m in members} == {group.group_epoch}
    assert group.state().value == "Stable"

    # One leaves: the others take its partitions over.
    members[0].leave(30_000)
    drive(shard, members, 60_000)
    assert members[0].owned == frozenset()
    assert frozenset().union(members[1].owned, members[2].owned) == tps(0, 1, 2, 3, 4, 5)
    assert sorted(shard.groups["g"].members) == ["b", "c"]


def test_static_member_restart_takes_over_its_assignment() -> None:
    shard = Shard(metadata=image(foo=4))
    a = ConsumerMember("g", member_id="a1", instance_id="a", rebalance_timeout_ms=30_000)
    b = ConsumerMember("g", member_id="b1", instance_id="b", rebalance_timeout_ms=30_000)
    for m in (a, b):
        m.subscribe(["foo"], now_ms=0)
    drive(shard, [a, b], 20_000)
    before = a.owned
    epoch = shard.groups["g"].group_epoch
    a.leave(20_000)
    leave = a.poll_request(20_000)
    assert leave is not None and leave.member_epoch == -2
    assert shard.handle(leave, 20_000).response.error_code == 0
    a2 = ConsumerMember("g", member_id="a2", instance_id="a", rebalance_timeout_ms=30_000)
    a2.subscribe(["foo"], now_ms=20_000)
    drive(shard, [a2, b], 25_000)
    assert a2.owned == before and shard.groups["g"].group_epoch == epoch
