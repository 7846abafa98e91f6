"""Offsets of classic groups: OffsetCommit validation by generation (upstream
ClassicGroup.validateOffsetCommit), OffsetFetch, and OffsetDelete's subscription check
(ConsumerProtocolSubscription decoded from the members' metadata).
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.classic import messages as cm
from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchTopic,
)
from groupcoord.protocol.errors import CoordinatorError

from .support import image
from .test_classic_support import E, Harness, protocols, subscription


def commit(h: Harness, member: str, generation: int, offset: int = 10,
           instance: str | None = None) -> int:
    """Commit foo-0; the error code of the partition."""
    r = h.send(OffsetCommitRequest(
        "g", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, offset),)),),
        generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=instance)).r
    return r.topics[0].partitions[0].error_code


def fetch(h: Harness) -> int:
    r = h.send(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0,)),))).r
    return r.topics[0].partitions[0].committed_offset


def harness() -> Harness:
    return Harness(metadata=image(foo=4, bar=2))


def test_member_commits_at_the_current_generation() -> None:
    h = harness()
    rnd = h.form(2)
    assert commit(h, rnd.followers[0], rnd.generation, 42) == 0
    assert fetch(h) == 42


def test_commit_with_a_wrong_generation_is_illegal_generation() -> None:
    h = harness()
    rnd = h.form(2)
    assert commit(h, rnd.leader, rnd.generation - 1) == E.illegal_generation
    assert fetch(h) == -1


def test_commit_from_an_unknown_member_is_unknown_member_id() -> None:
    h = harness()
    rnd = h.form(1)
    assert commit(h, "ghost", rnd.generation) == E.unknown_member_id


def test_commit_while_completing_rebalance_is_rebalance_in_progress() -> None:
    h = harness()
    joins = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(j.done for j in joins))
    r = joins[0].r
    assert commit(h, r.member_id, r.generation_id) == E.rebalance_in_progress


def test_commit_while_preparing_rebalance_at_the_old_generation_is_accepted() -> None:
    """Eager consumers commit in onPartitionsRevoked, before they rejoin."""
    h = harness()
    rnd = h.form(2)
    h.join(rnd.leader)
    assert commit(h, rnd.followers[0], rnd.generation, 7) == 0


def test_admin_commit_to_a_non_empty_group_is_unknown_member_id() -> None:
    h = harness()
    h.form(1)
    assert commit(h, "", -1) == E.unknown_member_id


def test_admin_commit_to_an_empty_group_is_accepted() -> None:
    h = harness()
    rnd = h.form(1)
    h.leave(rnd.leader)
    assert commit(h, "", -1, 5) == 0
    assert fetch(h) == 5


def test_commit_from_a_fenced_static_member() -> None:
    h = harness()
    rnd = h.form(2, static=True)
    old = rnd.followers[0]
    iid = rnd.instances[old]
    h.join(instance=iid)  # replaced without a rebalance
    assert commit(h, old, rnd.generation) == E.unknown_member_id
    # with the instance id (OffsetCommit v7+), the group answers FENCED_INSTANCE_ID
    with pytest.raises(CoordinatorError) as e:
        h.group().validate_offset_request("g", old, rnd.generation, True, group_instance_id=iid)
    assert e.value.code == E.fenced_instance_id


def test_member_fetch_is_never_refused() -> None:
    h = harness()
    rnd = h.form(1)
    commit(h, rnd.leader, rnd.generation, 3)
    r = h.send(OffsetFetchRequest("g", None, member_id="whoever", member_epoch=99)).r
    assert r.error_code == 0 and r.topics[0].partitions[0].committed_offset == 3


def test_offset_delete_refuses_subscribed_topics() -> None:
    h = harness()
    rnd = h.form(1)
    commit(h, rnd.leader, rnd.generation)
    r = h.send(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0,)),
                                         OffsetFetchTopic("bar", (0,))))).r
    assert [(t.name, t.partitions[0].error_code) for t in r.topics] == [
        ("foo", E.group_subscribed_to_topic), ("bar", 0)]


def test_is_subscribed_to_reads_every_member_subscription() -> None:
    h = harness()
    a = h.join_new(client_id="a", protos=(JoinGroupProtocol("range", subscription("foo")),))
    b = h.join_new(client_id="b", protos=(JoinGroupProtocol("range", subscription("bar", version=3)),))
    g = h.group()
    assert g.is_subscribed_to("foo") and g.is_subscribed_to("bar")  # before any generation
    assert not g.is_subscribed_to("baz")
    h.advance_until(lambda: a.done and b.done)
    assert g.is_subscribed_to("bar")


def test_undecodable_subscription_counts_as_subscribed() -> None:
    """Kafka's ``ClassicGroup.isSubscribedToTopic``: topics that cannot be known (a
    subscription that does not decode) count as subscribed in a consumer-protocol group, so
    OffsetDelete keeps their offsets (GROUP_SUBSCRIBED_TO_TOPIC)."""
    h = harness()
    h.join_new(client_id="ok", protos=(JoinGroupProtocol("range", subscription("foo")),))
    assert h.group().is_subscribed_to("foo") and not h.group().is_subscribed_to("bar")
    h.join_new(client_id="bad", protos=(JoinGroupProtocol("range", b"\x00\x00\xff"),))
    assert h.group().is_subscribed_to("foo") and h.group().is_subscribed_to("bar")


def test_offset_delete_of_a_non_empty_non_consumer_group_is_non_empty_group() -> None:
    """Kafka's ``ClassicGroup.validateOffsetDelete``: a classic group with members whose
    protocol type is not "consumer" (here Connect's) refuses OffsetDelete as a whole; once
    empty, its offsets can be deleted."""
    h = harness()
    h.send(OffsetCommitRequest("g", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, 5),)),)))
    m = h.join_new(protocol_type="connect", protos=protocols("sessioned"))
    r = h.send(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0,)),))).r
    assert r.error_code == E.non_empty_group and r.error_message
    assert fetch(h) == 5
    h.advance_until(lambda: m.done)
    h.send(cm.LeaveGroupRequest("g", (cm.LeaveGroupMember(m.r.member_id),)))
    r = h.send(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0,)),))).r
    assert r.error_code == 0 and fetch(h) == -1


def test_non_consumer_protocol_type_is_not_subscribed() -> None:
    h = harness()
    h.join_new(protocol_type="connect", protos=protocols("sessioned"))
    assert not h.group().is_subscribed_to("foo")
