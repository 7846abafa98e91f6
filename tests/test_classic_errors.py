"""Every error path of the classic group APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups), one test each, with the error code Kafka answers.
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.classic.messages import (
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupProtocol,
    LeaveGroupMember,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.records import RecordType

from .support import image
from .test_classic_support import E, Harness, Round, protocols


def stable(n: int = 2, static: bool = False) -> tuple[Harness, Round]:
    h = Harness()
    return h, h.form(n, static=static)


def consumer_group(h: Harness, *, instance: str | None = None) -> str:
    """A KIP-848 consumer group "g" with one member; returns its member id."""
    r = h.send(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m-848", member_epoch=0, instance_id=instance,
        rebalance_timeout_ms=30_000, subscribed_topic_names=("foo",), topic_partitions=())).r
    assert r.error_code == 0, r
    return r.member_id


# ----------------------------------------------------------------------------- JoinGroup


def test_join_invalid_group_id() -> None:
    """Upstream: GroupCoordinatorService.joinGroup (isGroupIdNotEmpty)."""
    r = Harness().join(group="").r
    assert r.error_code == E.invalid_group_id


@pytest.mark.parametrize("session_ms", [5_999, 1_800_001])
def test_join_invalid_session_timeout(session_ms: int) -> None:
    """Upstream: GroupCoordinatorService.joinGroup (classicGroupMin/MaxSessionTimeoutMs)."""
    h = Harness()
    r = h.join("m", session_ms=session_ms).r
    assert (r.error_code, r.member_id) == (E.invalid_session_timeout, "m")
    assert "g" not in h.shard.groups


def test_join_session_timeout_bounds_are_configurable() -> None:
    """Upstream: GroupCoordinatorService.joinGroup (the bounds are the broker's config)."""
    h = Harness(CoordinatorConfig(classic_min_session_timeout_ms=1_000))
    assert h.join(session_ms=1_000).r.error_code == E.member_id_required


def test_join_unknown_member_id_for_missing_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinToClassicGroup (getOrMaybeCreateClassicGroup
    with a member id)."""
    h = Harness()
    r = h.join("ghost").r
    assert (r.error_code, r.member_id) == (E.unknown_member_id, "ghost")
    assert "g" not in h.shard.groups and h.records == []


def test_join_unknown_member_id_in_existing_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinExistingMember (ClassicGroup.validateMember)."""
    h, _ = stable()
    assert h.join("ghost").r.error_code == E.unknown_member_id


def test_join_member_id_required_from_v4() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinNewDynamicMember (requireKnownMemberId)."""
    h = Harness()
    r = h.join(version=4, client_id="cli").r
    assert r.error_code == E.member_id_required and r.member_id.startswith("cli-")
    # the group exists now (an empty group record) and remembers the id it handed out
    assert h.group().pending_join_members == {r.member_id}
    assert h.records[-1].key.type is RecordType.CLASSIC_GROUP_METADATA


def test_join_inconsistent_protocol_type() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinNewMember / classicGroupJoinExistingMember
    (ClassicGroup.supportsProtocols)."""
    h, rnd = stable()
    r = h.join_new(protocol_type="connect").r
    assert (r.error_code, r.member_id) == (E.inconsistent_group_protocol, "")
    r = h.join(rnd.followers[0], protocol_type="connect").r
    assert (r.error_code, r.member_id) == (E.inconsistent_group_protocol, rnd.followers[0])


def test_join_inconsistent_no_common_protocol() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinNewMember (ClassicGroup.supportsProtocols)."""
    h, _ = stable()
    assert h.join_new(names=("sticky",)).r.error_code == E.inconsistent_group_protocol


@pytest.mark.parametrize("protocol_type, protos", [("", protocols("range")), ("consumer", ())])
def test_join_inconsistent_empty_type_or_protocols(protocol_type: str,
                                                   protos: tuple[JoinGroupProtocol, ...]) -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinNewMember (ClassicGroup.supportsProtocols of
    an empty group)."""
    h = Harness()
    r = h.join(protocol_type=protocol_type, protos=protos).r
    assert r.error_code == E.inconsistent_group_protocol


def test_join_group_max_size_reached() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinToClassicGroup (acceptJoiningMember)."""
    h = Harness(CoordinatorConfig(classic_max_size=2))
    rnd = h.form(2)
    r = h.join_new(client_id="third").r
    assert (r.error_code, r.member_id) == (E.group_max_size_reached, "")
    assert h.heartbeat(rnd.leader, rnd.generation).error_code == 0


def test_join_group_max_size_counts_rejoined_members_during_rebalance() -> None:
    """Upstream: GroupMetadataManager.acceptJoiningMember (PreparingRebalance counts the members
    awaiting a join response).
    While rebalancing, the members that already rejoined count: the last to rejoin of a
    group over capacity is turned away (and dropped), as upstream does."""
    h = Harness(CoordinatorConfig(classic_max_size=2))
    rnd = h.form(2)
    h.join(rnd.leader)  # rebalance; one member has rejoined
    newcomer = h.join_new(client_id="new")  # 1 rejoined < 2: accepted
    assert not newcomer.done
    late = h.join(rnd.followers[0]).r
    assert (late.error_code, late.member_id) == (E.group_max_size_reached, "")
    assert rnd.followers[0] not in h.group().members
    h.advance(30_000)  # the join phase ends at the rebalance timeout
    assert newcomer.r.generation_id == rnd.generation + 1


def test_join_fenced_instance_id() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinExistingMember (ClassicGroup.validateMember)."""
    h, rnd = stable(static=True)
    old = rnd.followers[0]
    h.join(instance=rnd.instances[old])
    r = h.join(old, instance=rnd.instances[old]).r
    assert (r.error_code, r.member_id) == (E.fenced_instance_id, old)


def test_join_unknown_instance_id_with_member_id() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinExistingMember (ClassicGroup.validateMember)."""
    h, rnd = stable()
    assert h.join(rnd.leader, instance="never-seen").r.error_code == E.unknown_member_id


def test_join_known_member_in_empty_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinExistingMember (an Empty group has no
    member)."""
    h, rnd = stable(1)
    h.leave(rnd.leader)
    assert h.join(rnd.leader).r.error_code == E.unknown_member_id


def test_join_non_empty_consumer_group_needs_the_consumer_protocol() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoin (classicGroupJoinToConsumerGroup).
    Online migration: a classic member joins a KIP-848 group (translated, see test_migration.py)
    only with protocol type "consumer"."""
    h = Harness()
    consumer_group(h)
    r = h.join_new(protocol_type="connect").r
    assert r.error_code == E.inconsistent_group_protocol
    r = h.join_new().r
    assert r.error_code == 0
    group = h.shard.groups["g"]
    assert isinstance(group, ConsumerGroup) and group.members[r.member_id].classic is not None


def test_join_empty_consumer_group_is_converted() -> None:
    """Upstream: GroupMetadataManager.classicGroupJoinToClassicGroup
    (maybeDeleteEmptyConsumerGroup)."""
    h = Harness()
    mid = consumer_group(h)
    h.send(ConsumerGroupHeartbeatRequest(group_id="g", member_id=mid, member_epoch=-1))
    assert h.join("someone").r.error_code == E.unknown_member_id  # no conversion for that
    assert isinstance(h.shard.groups["g"], ConsumerGroup)
    join = h.join_new()
    h.advance(3_000)
    assert join.r.error_code == 0 and h.group().state.value == "CompletingRebalance"
    assert h.rebuild().state_digest() == h.shard.state_digest()


def test_consumer_heartbeat_for_a_classic_group_is_refused() -> None:
    """Upstream: GroupMetadataManager.consumerGroupHeartbeat (getOrMaybeCreateConsumerGroup: not a
    consumer group)."""
    h, _ = stable(1)
    r = h.send(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m-848", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=("foo",), topic_partitions=())).r
    assert r.error_code == E.group_id_not_found


# ----------------------------------------------------------------------------- SyncGroup


def test_sync_invalid_group_id() -> None:
    """Upstream: GroupCoordinatorService.syncGroup (isGroupIdNotEmpty)."""
    assert Harness().sync("m", 1, group="").r.error_code == E.invalid_group_id


def test_sync_unknown_member_for_missing_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupSync (GroupIdNotFoundException)."""
    assert Harness().sync("m", 1).r.error_code == E.unknown_member_id


def test_sync_unknown_member() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup (ClassicGroup.validateMember)."""
    h, rnd = stable()
    assert h.sync("ghost", rnd.generation).r.error_code == E.unknown_member_id


def test_sync_unknown_member_in_empty_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupSync (group.isEmpty())."""
    h = Harness()
    h.join()  # MEMBER_ID_REQUIRED: an empty group
    assert h.sync("m", 0).r.error_code == E.unknown_member_id


def test_sync_illegal_generation() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup."""
    h, rnd = stable()
    assert h.sync(rnd.leader, rnd.generation + 1).r.error_code == E.illegal_generation


def test_sync_inconsistent_protocol_name() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup (isProtocolInconsistent)."""
    h, rnd = stable()
    r = h.sync(rnd.leader, rnd.generation, protocol_name="roundrobin").r
    assert r.error_code == E.inconsistent_group_protocol


def test_sync_inconsistent_protocol_type() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup (isProtocolInconsistent)."""
    h, rnd = stable()
    r = h.sync(rnd.leader, rnd.generation, protocol_type="connect").r
    assert r.error_code == E.inconsistent_group_protocol


def test_sync_v5_requires_protocol_type_and_name() -> None:
    """Upstream: KafkaApis.handleSyncGroupRequest (areMandatoryProtocolTypeAndNamePresent)."""
    h, rnd = stable()
    assert h.sync(rnd.leader, rnd.generation, protocol_name=None).r.error_code == \
        E.inconsistent_group_protocol
    # below v5 the fields do not exist: no check
    assert h.sync(rnd.leader, rnd.generation, version=4, protocol_type=None,
                  protocol_name=None).r.error_code == 0


def test_sync_rebalance_in_progress() -> None:
    """Upstream: GroupMetadataManager.classicGroupSyncToClassicGroup (PreparingRebalance, after
    validateSyncGroup)."""
    h, rnd = stable()
    h.join(rnd.leader)  # the leader rejoins: PreparingRebalance
    assert h.sync(rnd.followers[0], rnd.generation).r.error_code == E.rebalance_in_progress


def test_sync_fenced_instance_id() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup (ClassicGroup.validateMember)."""
    h, rnd = stable(static=True)
    f = rnd.followers[0]
    assert h.sync(f, rnd.generation, instance="i0").r.error_code == E.fenced_instance_id


def test_sync_unknown_instance_id() -> None:
    """Upstream: GroupMetadataManager.validateSyncGroup (ClassicGroup.validateMember)."""
    h, rnd = stable()
    assert h.sync(rnd.leader, rnd.generation, instance="nope").r.error_code == E.unknown_member_id


def test_sync_for_a_consumer_group_is_unknown_member() -> None:
    """Upstream: GroupMetadataManager.classicGroupSyncToConsumerGroup (validateClassicGroupSync)."""
    h = Harness()
    mid = consumer_group(h)
    assert h.sync(mid, 1).r.error_code == E.unknown_member_id


def test_sync_for_a_consumer_group_static_mismatch_is_fenced() -> None:
    """Upstream: GroupMetadataManager.classicGroupSyncToConsumerGroup (throwIfInstanceIdIsFenced)."""
    h = Harness()
    consumer_group(h, instance="i9")
    assert h.sync("other", 1, instance="i9").r.error_code == E.fenced_instance_id


# ----------------------------------------------------------------------------- Heartbeat


def test_heartbeat_invalid_group_id() -> None:
    """Upstream: GroupCoordinatorService.heartbeat (isGroupIdNotEmpty)."""
    assert Harness().heartbeat("m", 1, group="").error_code == E.invalid_group_id


def test_heartbeat_unknown_group() -> None:
    """Upstream: GroupMetadataManager.classicGroupHeartbeat (GroupIdNotFoundException)."""
    assert Harness().heartbeat("m", 1).error_code == E.unknown_member_id


def test_heartbeat_unknown_member() -> None:
    """Upstream: GroupMetadataManager.validateClassicGroupHeartbeat (ClassicGroup.validateMember)."""
    h, rnd = stable()
    assert h.heartbeat("ghost", rnd.generation).error_code == E.unknown_member_id


def test_heartbeat_illegal_generation() -> None:
    """Upstream: GroupMetadataManager.validateClassicGroupHeartbeat."""
    h, rnd = stable()
    assert h.heartbeat(rnd.leader, rnd.generation - 1).error_code == E.illegal_generation


def test_heartbeat_rebalance_in_progress() -> None:
    """Upstream: GroupMetadataManager.classicGroupHeartbeatToClassicGroup (PreparingRebalance)."""
    h, rnd = stable()
    h.join_new(client_id="newcomer")
    assert h.heartbeat(rnd.leader, rnd.generation).error_code == E.rebalance_in_progress


def test_heartbeat_fenced_instance_id() -> None:
    """Upstream: GroupMetadataManager.validateClassicGroupHeartbeat (ClassicGroup.validateMember)."""
    h, rnd = stable(static=True)
    assert h.heartbeat(rnd.leader, rnd.generation, instance="i1").error_code == E.fenced_instance_id


def test_heartbeat_in_empty_group_is_unknown_member() -> None:
    """Upstream: GroupMetadataManager.classicGroupHeartbeatToClassicGroup (Empty)."""
    h = Harness()
    h.join()
    g = h.group()
    assert h.send(HeartbeatRequest("g", g.generation_id, "m")).r.error_code == E.unknown_member_id


def test_heartbeat_for_a_consumer_group_is_unknown_member() -> None:
    """Upstream: GroupMetadataManager.classicGroupHeartbeatToConsumerGroup
    (validateClassicGroupHeartbeat)."""
    h = Harness()
    mid = consumer_group(h)
    assert h.heartbeat(mid, 1).error_code == E.unknown_member_id


# ----------------------------------------------------------------------------- LeaveGroup


def test_leave_invalid_group_id() -> None:
    """Upstream: GroupCoordinatorService.leaveGroup (isGroupIdNotEmpty)."""
    assert Harness().leave("m", group="").error_code == E.invalid_group_id


def test_leave_unknown_group() -> None:
    """Upstream: GroupCoordinatorService.leaveGroup (UNKNOWN_MEMBER_ID of a group not found, per
    member). Kafka answers each member UNKNOWN_MEMBER_ID and no top-level error from v3 on;
    before v3 the top level carries the member's error."""
    r = Harness().leave("m", ("", "i1"))
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        ("m", None, E.unknown_member_id), ("", "i1", E.unknown_member_id)]
    assert Harness().leave("m", version=2).error_code == E.unknown_member_id


def test_leave_unknown_member_in_a_batch() -> None:
    """Upstream: GroupMetadataManager.classicGroupLeaveToClassicGroup (per member)."""
    h, rnd = stable(3)
    r = h.leave(rnd.followers[0], "ghost")
    assert r.error_code == 0
    assert [(m.member_id, m.error_code) for m in r.members] == [
        (rnd.followers[0], 0), ("ghost", E.unknown_member_id)]
    assert rnd.followers[0] not in h.group().members


def test_leave_fenced_instance_id() -> None:
    """Upstream: GroupMetadataManager.classicGroupLeaveToConsumerGroup (throwIfInstanceIdIsFenced,
    throwIfMemberDoesNotUseClassicProtocol)."""
    h, rnd = stable(static=True)
    r = h.leave((rnd.leader, "i1"))
    assert r.members[0].error_code == E.fenced_instance_id
    assert rnd.leader in h.group().members


def test_leave_unknown_instance_id_without_member_id() -> None:
    """Upstream: GroupMetadataManager.classicGroupLeaveToClassicGroup (removal by instance id)."""
    h, _ = stable()
    assert h.leave(("", "i-none")).members[0].error_code == E.unknown_member_id


def test_leave_pending_member() -> None:
    """Upstream: GroupMetadataManager.classicGroupLeaveToClassicGroup (isPendingMember)."""
    h = Harness()
    pending = h.join().r.member_id
    assert h.leave(pending).members[0].error_code == 0
    assert h.group().pending_join_members == set()


def test_leave_for_a_consumer_group_is_per_member() -> None:
    """Upstream: GroupMetadataManager.classicGroupLeaveToConsumerGroup."""
    h = Harness()
    mid = consumer_group(h, instance="i9")
    r = h.send(LeaveGroupRequest("g", (LeaveGroupMember(mid), LeaveGroupMember("x", "i9")))).r
    assert [m.error_code for m in r.members] == [E.unknown_member_id, E.fenced_instance_id]
    assert mid in h.shard.groups["g"].members


def test_leave_v1_reports_the_member_error_at_top_level() -> None:
    """Upstream: LeaveGroupResponse(data, version) (before v3 the member's error is the top
    level's)."""
    h, _ = stable()
    assert h.leave("ghost", version=1).error_code == E.unknown_member_id


def test_leaving_member_with_a_parked_join_gets_unknown_member_id() -> None:
    """Upstream: GroupMetadataManager.removeMemberAndUpdateClassicGroup (the pending JoinGroup is
    answered UNKNOWN_MEMBER_ID)."""
    h, rnd = stable()
    parked = h.join(rnd.leader)
    h.leave(rnd.leader)
    assert (parked.r.error_code, parked.r.member_id) == (E.unknown_member_id, "")


# ----------------------------------------------------------------------------- DescribeGroups


def test_describe_unknown_group_v6_is_group_id_not_found() -> None:
    """Upstream: GroupCoordinatorService.describeGroups / GroupMetadataManager.describeGroups (v6,
    KIP-1043: GROUP_ID_NOT_FOUND)."""
    r = Harness().send(DescribeGroupsRequest(("nope",), version=6)).r.groups[0]
    assert (r.error_code, r.group_state, r.error_message) == (
        E.group_id_not_found, "Dead", "Group nope not found.")


def test_describe_unknown_group_before_v6_is_dead_without_error() -> None:
    """Upstream: GroupMetadataManager.describeGroups (GroupIdNotFoundException: Dead)."""
    r = Harness().send(DescribeGroupsRequest(("nope",), version=5)).r.groups[0]
    assert (r.error_code, r.group_state) == (0, "Dead")


def test_describe_consumer_group_is_not_a_classic_group() -> None:
    """Upstream: GroupMetadataManager.describeGroups (classicGroup(): not a classic group)."""
    h = Harness()
    consumer_group(h)
    r = h.send(DescribeGroupsRequest(("g",))).r.groups[0]
    assert (r.error_code, r.error_message) == (E.group_id_not_found,
                                               "Group g is not a classic group.")


# ----------------------------------------------------------------------------- request shape


def test_requests_carry_their_version_and_client() -> None:
    h = Harness()
    call = h.send(SyncGroupRequest("g", 0, "m", version=0, client_id="c", client_host="/h"))
    assert call.r.error_code == E.unknown_member_id


# ----------------------------------------------------------------------------- OffsetCommit


def test_commit_of_a_classic_member_of_a_consumer_group_at_another_generation() -> None:
    """Upstream: ConsumerGroup.validateOffsetCommit (validateMemberEpoch). A member that joined a
    consumer group with the classic protocol commits with its generation: any other than its
    member epoch is ILLEGAL_GENERATION (what a classic client rejoins on), not the consumer
    protocol's STALE_MEMBER_EPOCH; its own generation commits."""
    h = Harness(metadata=image(foo=1))
    consumer_group(h)
    j = h.join_new()
    mid, generation = j.r.member_id, j.r.generation_id
    assert j.r.error_code == 0 and h.shard.groups["g"].members[mid].classic is not None

    def commit(epoch: int) -> int:
        r = h.send(OffsetCommitRequest("g", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, 5),)),),
                                       epoch, mid, api_version=8)).r
        return int(r.topics[0].partitions[0].error_code)

    assert commit(generation + 1) == E.illegal_generation
    assert commit(generation - 1) == E.illegal_generation
    assert commit(generation) == 0
