"""Request validation of the group APIs where Kafka 4.3 and the KIP-848 text (or an older
reading of ours) differ: what Kafka's ``GroupCoordinatorService`` accepts we accept, and what it
refuses we refuse with its error code. One test per difference fixed; the heartbeat's are in
``test_heartbeat_validation.py``, the offsets' in ``test_offsets.py``.
"""

from __future__ import annotations

import logging

import pytest

from groupcoord.coordinator.classic import messages as cm
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupDescribeRequest
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import image

E = ErrorCode


def test_consumer_group_describe_of_the_empty_group_id_is_invalid_group_id() -> None:
    """Kafka answers INVALID_GROUP_ID for that group (the others are described as usual)."""
    shard = Shard(metadata=image(foo=1))
    r = shard.handle(ConsumerGroupDescribeRequest(("", "nope")), 0).response
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        ("", E.invalid_group_id), ("nope", E.group_id_not_found)]


def test_empty_group_id_where_kafka_supports_it_for_backwards_compatibility() -> None:
    """DescribeGroups and DeleteGroups take the empty group id as any other id (Kafka: "for
    backwards compatibility"); JoinGroup, SyncGroup, Heartbeat and LeaveGroup refuse it."""
    shard = Shard(metadata=image(foo=1))
    d = shard.handle(cm.DescribeGroupsRequest(("",), False, "", "", 6), 0).response
    assert (d.groups[0].error_code, d.groups[0].group_state) == (E.group_id_not_found, "Dead")
    d5 = shard.handle(cm.DescribeGroupsRequest(("",), False, "", "", 5), 0).response
    assert (d5.groups[0].error_code, d5.groups[0].group_state) == (E.none, "Dead")
    assert shard.handle(DeleteGroupsRequest(("",)), 0).response.results[0].error_code == \
        E.group_id_not_found
    # an offsets-only group "" (OffsetCommit accepts it) is listed, described and deleted
    commit = OffsetCommitRequest("", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, 3),)),))
    assert shard.handle(commit, 0).response.topics[0].partitions[0].error_code == E.none
    d = shard.handle(cm.DescribeGroupsRequest(("",), False, "", "", 6), 0).response
    assert (d.groups[0].error_code, d.groups[0].group_state) == (E.none, "Empty")
    assert shard.handle(DeleteGroupsRequest(("",)), 0).response.results[0].error_code == E.none
    for request in (cm.HeartbeatRequest("", 1, "m"), cm.SyncGroupRequest("", 1, "m"),
                    cm.LeaveGroupRequest("", (cm.LeaveGroupMember("m"),)),
                    cm.JoinGroupRequest("", 10_000, protocol_type="consumer",
                                        protocols=(cm.JoinGroupProtocol("range", b""),))):
        assert shard.handle(request, 0).response.error_code == E.invalid_group_id


def test_a_refused_offset_request_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    shard = Shard(metadata=image(foo=1))
    commit = OffsetCommitRequest("g", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, 3),)),),
                                 generation_id_or_member_epoch=4, member_id="ghost")
    with caplog.at_level(logging.DEBUG, logger="groupcoord.coordinator.shard"):
        shard.handle(commit, 0)
    [rec] = [r for r in caplog.records if "refused" in r.getMessage()]
    assert rec.levelno == logging.DEBUG
    for part in ("[g]", "OffsetCommitRequest", "'ghost'", "GROUP_ID_NOT_FOUND"):
        assert part in rec.getMessage(), rec.getMessage()
