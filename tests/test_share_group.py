"""Share groups in the coordinator (KIP-932): ShareGroupHeartbeat (joins, epochs, leaves,
session timeouts, fencing, validation), the target assignment without a revocation phase,
topic changes, ShareGroupDescribe, and the group id space shared with the other group types.
Every scenario ends with the replay check: a shard rebuilt from the records equals the live one
(I4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.classic.messages import JoinGroupProtocol, JoinGroupRequest
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
)
from groupcoord.coordinator.modern.share.messages import (
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.modern.share.model import ShareGroup
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image, names, topic

E = ErrorCode
#: Targets at every epoch bump (the batching interval has its own test).
NO_BATCHING = CoordinatorConfig(share_assignment_interval_ms=0)


class ShareClient(Client):
    def share(self, member_id: str, epoch: int, topics: tuple[str, ...] | None = None,
              **kw: Any) -> ShareGroupHeartbeatResponse:
        if epoch == 0 and topics is None:
            topics = ("foo",)
        return self.handle(ShareGroupHeartbeatRequest(
            kw.pop("group_id", self.group_id), member_id, epoch, subscribed_topic_names=topics,
            **kw))


def shard_with(config: CoordinatorConfig = NO_BATCHING, **topics: int) -> tuple[Shard, ShareClient]:
    shard = Shard(config=config, metadata=image(**topics))
    return shard, ShareClient(shard)


def group(shard: Shard, gid: str = "g") -> ShareGroup:
    g = shard.groups[gid]
    assert isinstance(g, ShareGroup)
    return g


def held(shard: Shard, mid: str, gid: str = "g") -> list[str]:
    return names(group(shard, gid).members[mid].assigned_partitions, shard.metadata)


def check_replay(shard: Shard, c: Client) -> None:
    rebuilt = Shard(config=shard.config, metadata=shard.metadata)
    rebuilt.replay_all(Record.decode(*r.encode()) for r in c.records)
    assert rebuilt.state_digest() == shard.state_digest()


# ----------------------------------------------------------------------------- joins


def test_a_join_creates_the_group_and_gets_every_partition() -> None:
    shard, c = shard_with(foo=3)
    r = c.share("A", 0)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "A", 1, 5000)
    assert r.assignment is not None and names(r.assignment, shard.metadata) == [
        "foo-0", "foo-1", "foo-2"]
    g = group(shard)
    assert (g.group_epoch, g.assignment_epoch, g.state_name()) == (1, 1, "Stable")
    # a heartbeat with nothing new gets no assignment
    r = c.share("A", 1)
    assert r.error_code == 0 and r.member_epoch == 1 and r.assignment is None
    check_replay(shard, c)


def test_a_second_member_takes_partitions_without_revocation() -> None:
    shard, c = shard_with(foo=4)
    c.share("A", 0)
    r = c.share("B", 0)
    assert r.member_epoch == 2 and names(r.assignment, shard.metadata) == ["foo-2", "foo-3"]
    # A keeps what it had up to its share and moves straight to epoch 2: no revocation phase,
    # B already holds foo-2 and foo-3 (a share partition may have several members)
    assert held(shard, "A") == ["foo-0", "foo-1", "foo-2", "foo-3"]
    r = c.share("A", 1)
    assert r.member_epoch == 2 and names(r.assignment, shard.metadata) == ["foo-0", "foo-1"]
    assert held(shard, "A") == ["foo-0", "foo-1"]
    check_replay(shard, c)


def test_more_members_than_partitions_all_get_one() -> None:
    shard, c = shard_with(foo=2)
    for i, mid in enumerate("ABCD"):
        c.share(mid, 0)
        assert group(shard).group_epoch == i + 1
    for mid in "ABCD":
        c.share(mid, group(shard).members[mid].member_epoch)
    g = group(shard)
    assert all(m.member_epoch == g.assignment_epoch == 4 for m in g.members.values())
    holders = {p: g.holders_of(topic("foo", 2).topic_id, p) for p in (0, 1)}
    assert sorted(len(h) for h in holders.values()) == [2, 2]
    assert sorted(holders[0] + holders[1]) == ["A", "B", "C", "D"]
    check_replay(shard, c)


def test_the_assignment_interval_batches_targets() -> None:
    shard, c = shard_with(CoordinatorConfig(share_assignment_interval_ms=1000), foo=2)
    c.now = 5_000
    c.share("A", 0)  # the first target at once
    r = c.share("B", 0)  # within the interval: B waits at the current target, with nothing
    assert r.member_epoch == 1 and r.assignment == {}
    assert group(shard).group_epoch == 2 and group(shard).assignment_epoch == 1
    c.now += 1000
    r = c.share("B", 1)
    assert r.member_epoch == 2 and len(names(r.assignment, shard.metadata)) == 1
    check_replay(shard, c)


def test_subscription_change_and_topic_changes_bump_the_epoch() -> None:
    shard, c = shard_with(foo=1, bar=2)
    c.share("A", 0)
    r = c.share("A", 1, topics=("foo", "bar"))
    assert r.member_epoch == 2 and names(r.assignment, shard.metadata) == ["bar-0", "bar-1", "foo-0"]
    # partitions added to a subscribed topic: the epoch moves, the next heartbeat gets them
    c.records.extend(shard.update_metadata(
        MetadataImage.of([topic("foo", 3), topic("bar", 2)]), c.now).records)
    assert group(shard).group_epoch == 3
    r = c.share("A", 2)
    assert r.member_epoch == 3 and len(names(r.assignment, shard.metadata)) == 5
    # a topic nobody subscribes to changes nothing
    c.records.extend(shard.update_metadata(shard.metadata.with_topic(topic("baz", 1)),
                                           c.now).records)
    assert group(shard).group_epoch == 3
    # a subscribed topic deleted
    c.records.extend(shard.update_metadata(shard.metadata.without_topic("bar"), c.now).records)
    r = c.share("A", 3)
    assert r.member_epoch == 4 and names(r.assignment, shard.metadata) == ["foo-0", "foo-1", "foo-2"]
    check_replay(shard, c)


def test_subscribing_to_a_missing_topic_heartbeats_with_nothing() -> None:
    shard, c = shard_with(foo=1)
    r = c.share("A", 0, topics=("nope",))
    assert r.error_code == 0 and r.assignment == {}
    c.records.extend(shard.update_metadata(shard.metadata.with_topic(topic("nope", 2)),
                                           c.now).records)
    r = c.share("A", r.member_epoch)
    assert names(r.assignment, shard.metadata) == ["nope-0", "nope-1"]
    check_replay(shard, c)


# ----------------------------------------------------------------------------- leaving, fencing


def test_leave_removes_the_member_and_bumps_the_epoch() -> None:
    shard, c = shard_with(foo=2)
    c.share("A", 0)
    c.share("B", 0)
    r = c.share("B", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "B", -1)
    g = group(shard)
    assert sorted(g.members) == ["A"] and g.group_epoch == 3 and "B" not in g.target
    # A never heartbeated at epoch 2: it moves from 1 to 3 and keeps both partitions
    r = c.share("A", 1)
    assert r.member_epoch == 3 and r.assignment is None
    assert held(shard, "A") == ["foo-0", "foo-1"]
    assert c.share("A", -1).error_code == 0
    assert group(shard).state_name() == "Empty"
    assert c.share("A", -1).error_code == E.unknown_member_id
    assert c.share("A", -1, group_id="nope").error_code == E.group_id_not_found
    check_replay(shard, c)


def test_session_timeout_removes_the_member() -> None:
    shard, c = shard_with(foo=1)
    c.share("A", 0)
    c.now += 40_000
    c.share("B", 0)
    c.advance(5_001)  # A's 45 s session ran out; B's did not
    assert sorted(group(shard).members) == ["B"]
    assert c.share("A", 1).error_code == E.unknown_member_id
    r = c.share("B", group(shard).members["B"].member_epoch)
    assert r.error_code == 0 and held(shard, "B") == ["foo-0"]
    check_replay(shard, c)


def test_epochs_are_fenced_and_the_lost_response_accepted() -> None:
    shard, c = shard_with(foo=2)
    c.share("A", 0)
    c.share("B", 0)
    c.share("A", 1)  # A moves to epoch 2, previous 1
    assert group(shard).members["A"].member_epoch == 2
    # the response of that heartbeat was lost: A comes again at 1, accepted
    r = c.share("A", 1)
    assert r.error_code == 0 and r.member_epoch == 2
    # ... and is sent its assignment again (it missed the response that moved it)
    assert names(r.assignment, shard.metadata) == held(shard, "A") == ["foo-0"]
    assert c.share("A", 2).assignment is None
    n = len(c.records)
    r = c.share("A", 7)
    assert r.error_code == E.fenced_member_epoch and r.error_message
    # Kafka 4.x: nothing changes, the member stays and carries on at its epoch
    assert len(c.records) == n and group(shard).members["A"].member_epoch == 2
    assert group(shard).group_epoch == 2 and held(shard, "A") == ["foo-0"]
    assert c.share("A", 2).error_code == 0
    # a rejoin (epoch 0) behind its epoch: fenced and removed, the next join starts afresh
    r = c.share("A", 0)
    assert r.error_code == E.fenced_member_epoch
    assert "A" not in group(shard).members and group(shard).group_epoch == 3
    r = c.share("A", 0)
    assert r.error_code == 0 and r.member_epoch == 4
    check_replay(shard, c)


@pytest.mark.parametrize("kw,message", [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"group_id": ""}, "GroupId can't be empty."),
    ({"rack_id": ""}, "RackId can't be empty."),
    ({"topics": ()}, "SubscribedTopicNames must be set in first request."),
    ({"epoch": -2}, "MemberEpoch is invalid."),
])
def test_invalid_requests(kw: dict[str, Any], message: str) -> None:
    shard, c = shard_with(foo=1)
    mid = kw.pop("member_id", "A")
    epoch = kw.pop("epoch", 0)
    r = c.share(mid, epoch, **kw)
    assert (r.error_code, r.error_message) == (E.invalid_request, message)
    assert not shard.groups and not c.records


def test_an_unknown_member_or_group_at_a_later_epoch_rejoins() -> None:
    _shard, c = shard_with(foo=1)
    assert c.share("A", 3).error_code == E.unknown_member_id
    c.share("A", 0)
    assert c.share("B", 1).error_code == E.unknown_member_id


def test_group_max_size() -> None:
    shard, c = shard_with(CoordinatorConfig(share_max_size=2, share_assignment_interval_ms=0),
                          foo=1)
    c.share("A", 0)
    c.share("B", 0)
    r = c.share("C", 0)
    assert r.error_code == E.group_max_size_reached
    assert sorted(group(shard).members) == ["A", "B"]


# ----------------------------------------------------------------------------- the id space


def test_share_and_other_group_types_share_one_id_space() -> None:
    shard, c = shard_with(foo=1)
    c.heartbeat("C", 0, group_id="cg")  # a consumer group
    r = c.share("S", 0, group_id="cg")
    assert (r.error_code, r.error_message) == (E.group_id_not_found,
                                               "Group cg is not a share group.")
    c.share("S", 0, group_id="sg")
    r2 = c.heartbeat("C", 0, group_id="sg")
    assert r2.error_code == E.group_id_not_found
    j = c.handle(JoinGroupRequest("sg", 30_000, protocol_type="consumer",
                                  protocols=(JoinGroupProtocol("range", b""),)))
    assert j.error_code == E.inconsistent_group_protocol
    commit = c.handle(OffsetCommitRequest("sg", (OffsetCommitTopic(
        "foo", (OffsetCommitPartition(0, 5),)),)))
    assert commit.error_code == E.group_id_not_found or all(
        p.error_code == E.group_id_not_found for t in commit.topics for p in t.partitions)
    # a share group keeps no offsets: an admin fetch finds none, a member's is refused
    assert c.handle(OffsetFetchRequest("sg")).topics == ()
    fetched = c.handle(OffsetFetchRequest("sg", member_id="S", member_epoch=1))
    assert fetched.error_code == E.group_id_not_found
    listed = c.handle(ListGroupsRequest(types_filter=("SHARE",))).groups
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == [
        ("sg", "share", "share", "Stable")]
    d = c.handle(ShareGroupDescribeRequest(("sg", "cg", "none"))).groups
    assert [(x.group_id, x.error_code) for x in d] == [
        ("sg", 0), ("cg", E.group_id_not_found), ("none", E.group_id_not_found)]
    assert d[1].error_message == "Group cg is not a share group."
    check_replay(shard, c)


def test_describe_and_delete() -> None:
    shard, c = shard_with(foo=2)
    c.share("A", 0, rack_id="r1", client_id="cli-a", client_host="/10.0.0.1")
    d = c.handle(ShareGroupDescribeRequest(("g",))).groups[0]
    assert (d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        "Stable", 1, 1, "simple")
    [m] = d.members
    assert (m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            m.subscribed_topic_names) == ("A", "r1", 1, "cli-a", "/10.0.0.1", ("foo",))
    assert names(m.assignment, shard.metadata) == ["foo-0", "foo-1"]
    assert c.handle(DeleteGroupsRequest(("g",))).results[0].error_code == E.non_empty_group
    c.share("A", -1)
    assert c.handle(DeleteGroupsRequest(("g",))).results[0].error_code == 0
    assert "g" not in shard.groups
    check_replay(shard, c)
    assert c.share("A", 0).member_epoch == 1  # a new group under the same id


def test_loading_rearms_sessions() -> None:
    shard, c = shard_with(foo=1)
    c.share("A", 0)
    rebuilt = Shard(config=shard.config, metadata=shard.metadata)
    rebuilt.replay_all(c.records)
    rebuilt.on_loaded(100)
    assert [r.records for r in rebuilt.expire_timers(100 + 45_000)]
    assert not group(rebuilt).members


def test_offsets_retention_keeps_an_empty_share_group_and_offsets_refuse_it() -> None:
    """The periodic offsets cleanup never deletes a share group (it has no offsets; its
    share-partition state is durable), and OffsetDelete refuses it as Kafka does."""
    from groupcoord.coordinator.messages import OffsetDeleteRequest, OffsetFetchTopic

    config = CoordinatorConfig(share_assignment_interval_ms=0, offsets_retention_ms=60_000,
                               offsets_retention_check_interval_ms=10_000)
    shard = Shard(config=config, metadata=image(foo=1))
    c = ShareClient(shard)
    c.share("A", 0)
    c.share("A", -1)
    c.records.extend(shard.on_loaded(c.now).records)
    c.advance(10 * 60_000)
    assert group(shard).state_name() == "Empty"
    r = c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (0,)),)))
    assert r.error_code == E.group_id_not_found
    check_replay(shard, c)


def test_topics_changed_while_unloaded_bump_the_epoch_on_load() -> None:
    shard, c = shard_with(foo=1)
    c.share("A", 0)
    grown = MetadataImage.of([topic("foo", 3)])
    rebuilt = Shard(config=shard.config, metadata=grown)
    rebuilt.replay_all(c.records)
    loaded = rebuilt.on_loaded(c.now).records
    assert group(rebuilt).group_epoch == 2 and loaded
    r = rebuilt.handle(ShareGroupHeartbeatRequest("g", "A", 1), c.now).response
    assert r.member_epoch == 2 and names(r.assignment, grown) == ["foo-0", "foo-1", "foo-2"]
    # an unchanged image bumps nothing
    again = Shard(config=shard.config, metadata=shard.metadata)
    again.replay_all(c.records)
    assert not again.on_loaded(c.now).records and group(again).group_epoch == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["g", "", "cg"]), st.sampled_from(["A", "B", ""]),
    st.integers(-3, 6), st.none() | st.sampled_from(["", "r1"]),
    st.none() | st.lists(st.sampled_from(["foo", "bar", "", "nope"]), max_size=3).map(tuple)),
    max_size=25))
def test_any_heartbeat_gets_a_response_never_an_exception(beats) -> None:
    """Bad input gets the protocol's error code: random ShareGroupHeartbeats (empty ids, any
    epoch, empty racks, odd subscriptions, a consumer group's id) never raise, and what they
    leave replays to the same state."""
    shard, c = shard_with(foo=2, bar=1)
    c.heartbeat("C", 0, group_id="cg")
    for gid, mid, epoch, rack, topics in beats:
        r = c.handle(ShareGroupHeartbeatRequest(gid, mid, epoch, rack_id=rack,
                                                subscribed_topic_names=topics))
        assert isinstance(r, ShareGroupHeartbeatResponse)
        assert r.error_code == 0 or r.error_message
    check_replay(shard, c)
