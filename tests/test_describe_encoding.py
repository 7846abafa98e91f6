"""The hand-written ConsumerGroupDescribe response encoder (``protocol/fast.py``) writes the bytes
kio writes for the same response, in both versions: errors, null and non-null optional
strings, regex subscriptions, classic members (MemberType 0), topics the server does not know
(an empty name), empty assignments, large partition lists, members sharing a subscription
list or holding their target, and authorized operations."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupcoord.coordinator.modern.consumer.messages import (
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    TopicPartitions,
)
from groupcoord.protocol.codec import build, encode_entity, response_class
from groupcoord.protocol.fast import DescribedTopics, consumer_group_describe_response

FOO = uuid.UUID(int=(1 << 120) + 5)
BAR = uuid.UUID(int=7)
GONE = uuid.UUID(int=(9 << 100) + 1)
NAMES = {FOO: "foo", BAR: "bär"}  # a multi-byte name: lengths are in bytes


def _name(topic_id: uuid.UUID) -> str:
    return NAMES.get(topic_id, "")


def _groups() -> list[DescribedGroup]:
    a = DescribedAssignment((TopicPartitions(BAR, (0, 3)), TopicPartitions(FOO, tuple(range(300)))))
    t = DescribedAssignment((TopicPartitions(FOO, (1,)), TopicPartitions(GONE, ())))
    members = (
        DescribedMember("m-1", None, None, 5, "client-a", "/127.0.0.1", ("foo", "bär"), None, a, t),
        DescribedMember("m-2" * 60, "instance", "rack-1", -2, "", "", (), "f.*",
                        DescribedAssignment(()), DescribedAssignment(()), member_type=0),
        # a converged member: the same subscription list as m-1 and its target the very
        # object of its assignment (the encoder writes shared parts once and copies them)
        DescribedMember("m-3", None, None, 5, "client-a", "/127.0.0.1", ("foo", "bär"), None, a, a),
    )
    return [
        DescribedGroup("g", group_state="Reconciling", group_epoch=7, assignment_epoch=6,
                       assignor_name="uniform", members=members),
        DescribedGroup("missing", 69, "Group missing not found."),
        DescribedGroup("", 24, "The group id can't be empty."),
        DescribedGroup("empty", group_state="Empty", group_epoch=3, assignment_epoch=3,
                       assignor_name="range", authorized_operations=12),
    ]


def _kio(version: int, groups: list[DescribedGroup], ops: list[int]) -> bytes:
    def tps(a: DescribedAssignment) -> dict[str, Any]:
        return {"topic_partitions": [{"topic_id": tp.topic_id, "topic_name": _name(tp.topic_id),
                                      "partitions": tp.partitions} for tp in a.topic_partitions]}

    cls = response_class(69, version)
    assert cls is not None
    return encode_entity(build(cls, throttle_time=0, groups=[{
        "error_code": g.error_code, "error_message": g.error_message, "group_id": g.group_id,
        "group_state": g.group_state, "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch, "assignor_name": g.assignor_name,
        "authorized_operations": op,
        "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                     "member_epoch": m.member_epoch, "client_id": m.client_id,
                     "client_host": m.client_host,
                     "subscribed_topic_names": m.subscribed_topic_names,
                     "subscribed_topic_regex": m.subscribed_topic_regex,
                     "assignment": tps(m.assignment), "target_assignment": tps(m.target_assignment),
                     "member_type": m.member_type} for m in g.members]}
        for g, op in zip(groups, ops, strict=True)]))


@pytest.mark.parametrize("version", [0, 1])
def test_describe_response_bytes_equal_kio(version: int) -> None:
    groups = _groups()
    ops = [-2147483648, -2147483648, -2147483648, 12]
    assert consumer_group_describe_response(version, groups, ops, DescribedTopics(_name)) == \
        _kio(version, groups, ops)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_response_of_no_group_equals_kio(version: int) -> None:
    assert consumer_group_describe_response(version, [], [], DescribedTopics(_name)) == \
        _kio(version, [], [])


def test_described_topics_names_each_topic_once() -> None:
    asked: list[uuid.UUID] = []

    def name(topic_id: uuid.UUID) -> str:
        asked.append(topic_id)
        return _name(topic_id)

    consumer_group_describe_response(1, _groups(), [0, 0, 0, 0], DescribedTopics(name))
    assert sorted(asked) == sorted({FOO, BAR, GONE})
