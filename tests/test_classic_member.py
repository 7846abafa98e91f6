"""The plumbing shared by the classic-protocol members (``client/classic_member.py``) and the
OffsetCommit builder shared by the KIP-848 and classic consumers (``client/offset_commits.py``).

Both classic members (the consumer, protocol type ``consumer``; the Connect worker, ``connect``)
keep one group request in flight, answered by correlation id: a duplicated or stale answer is
ignored, as is a failure report about another request. Their requests carry the protocol type
of their group and no instance id for a Connect worker (KIP-814: Connect has no static
membership). Commits carry the member id and the member epoch (KIP-848 "OffsetCommit API") or
the generation (classic), positions of owned partitions only, in the canonical order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from groupcoord.client.classic_consumer import ClassicConsumerMember
from groupcoord.client.classic_member import ClassicMember
from groupcoord.client.connect.classic_worker import ClassicConnectWorker
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.consumer import ConsumerMember
from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.protocol.connect_protocol import ConnectAssignment
from groupcoord.protocol.connect_protocol import encode_assignment as encode_connect_assignment
from groupcoord.protocol.consumer_protocol import encode_assignment as encode_consumer_assignment
from groupcoord.protocol.errors import ErrorCode as E

FOO = TopicMetadata(UUID(int=1), "foo", 4)
BAR = TopicMetadata(UUID(int=2), "bar", 2)


class _Store:
    def __init__(self) -> None:
        self.snap = ConfigSnapshot(0, {"A": 1})

    def snapshot(self) -> ConfigSnapshot:
        return self.snap

    def read_to_end(self) -> ConfigSnapshot:
        return self.snap


def _consumer() -> ClassicConsumerMember:
    m = ClassicConsumerMember("g", instance_id="i1", client_id="c1")
    m.update_metadata([FOO, BAR], 0)
    m.subscribe(["foo"], now_ms=0)
    return m


def _worker() -> ClassicConnectWorker:
    w = ClassicConnectWorker("g", "http://w1:8083/", _Store(), client_id="w1")
    w.start(0)
    return w


#: The two classic members, driven through the same interface.
MEMBERS: dict[str, Callable[[], Any]] = {"consumer": _consumer, "worker": _worker}


@pytest.mark.parametrize("kind", sorted(MEMBERS))
def test_one_request_in_flight_answered_by_its_correlation_id(kind: str) -> None:
    m = MEMBERS[kind]()
    assert ClassicMember in type(m).__mro__ and m.assign_inflight is None
    join = m.poll_request(0)
    assert isinstance(join, JoinGroupRequest) and m.inflight is not None
    cid = m.last_correlation_id
    assert m.inflight.correlation_id == cid and m.inflight.request is join
    assert m.poll_request(1) is None  # nothing else while the JoinGroup is in flight
    required = JoinGroupResponse(E.member_id_required, member_id="m-1")
    assert not m.on_response(required, 2, cid + 1)  # another request's answer: ignored
    assert not m.on_request_failed(2, cid + 1)
    assert m.inflight is not None and m.member_id == ""
    assert m.on_response(required, 2, cid)
    assert m.inflight is None and m.member_id == "m-1"
    assert not m.on_response(required, 3, cid)  # the duplicate: ignored
    again = m.poll_request(3)  # the JoinGroup again, now with the member id
    assert isinstance(again, JoinGroupRequest) and again.member_id == "m-1"
    assert m.last_correlation_id == cid + 1
    assert m.on_request_failed(4, cid + 1) and m.inflight is None  # connection lost


@pytest.mark.parametrize("kind", sorted(MEMBERS))
def test_a_request_not_answered_in_time_fails_and_is_counted(kind: str) -> None:
    m = MEMBERS[kind]()
    m.poll_request(0)
    assert m.inflight is not None
    deadline = m.next_deadline()
    assert deadline is not None and deadline >= m.request_timeout_ms
    m.poll_request(deadline - 1)
    assert m.inflight is not None and m.stats["timeouts"] == 0
    m.poll_request(deadline)
    assert m.stats["timeouts"] == 1
    assert m.inflight is None or m.inflight.sent_ms == deadline  # given up (maybe retried)


def test_requests_carry_the_group_protocol_type_and_the_member_identity() -> None:
    c, w = _consumer(), _worker()
    cj, wj = c.poll_request(0), w.poll_request(0)
    assert isinstance(cj, JoinGroupRequest) and isinstance(wj, JoinGroupRequest)
    assert (cj.protocol_type, wj.protocol_type) == ("consumer", "connect")
    assert (cj.group_instance_id, wj.group_instance_id) == ("i1", None)  # KIP-814: no static
    assert (cj.client_id, wj.client_id) == ("c1", "w1")
    assert cj.session_timeout_ms == c.session_timeout_ms
    assert wj.rebalance_timeout_ms == w.rebalance_timeout_ms


def _sync_answer(kind: str) -> SyncGroupResponse:
    if kind == "consumer":
        return SyncGroupResponse(assignment=encode_consumer_assignment({"foo": [0, 1]}))
    return SyncGroupResponse(assignment=encode_connect_assignment(ConnectAssignment(
        1, 0, "other", "http://other:8083/", 0, ("A",))))


@pytest.mark.parametrize("kind", sorted(MEMBERS))
def test_after_sync_the_member_heartbeats_in_its_generation(kind: str) -> None:
    m = MEMBERS[kind]()
    m.poll_request(0)
    protocol = "range" if kind == "consumer" else "sessioned"
    m.on_response(JoinGroupResponse(E.none, 3, None, protocol, "other", member_id="m"), 1,
                  m.last_correlation_id)
    sync = m.poll_request(1)
    assert isinstance(sync, SyncGroupRequest)
    assert (sync.generation_id, sync.member_id, sync.protocol_type, sync.assignments) == (
        3, "m", "consumer" if kind == "consumer" else "connect", ())  # a follower assigns nothing
    assert m.on_response(_sync_answer(kind), 2, m.last_correlation_id)
    assert m.poll_request(2 + m.heartbeat_interval_ms - 1) is None
    hb = m.poll_request(2 + m.heartbeat_interval_ms)
    assert isinstance(hb, HeartbeatRequest)
    assert (hb.generation_id, hb.member_id, m.member_epoch) == (3, "m", 3)
    assert hb.group_instance_id == ("i1" if kind == "consumer" else None)
    assert m.on_response(HeartbeatResponse(), 2 + m.heartbeat_interval_ms, m.last_correlation_id)
    assert not m.on_response(HeartbeatResponse(), 2 + m.heartbeat_interval_ms)  # none in flight


# ----------------------------------------------------------------------------- offset commits


def _stable_classic(owned: frozenset[tuple[UUID, int]]) -> ClassicConsumerMember:
    m = _consumer()
    m.member_id, m.generation = "m-1", 5
    m.state = m.state.STABLE
    m.owned = owned
    return m


def _stable_kip848(owned: frozenset[tuple[UUID, int]]) -> ConsumerMember:
    m = ConsumerMember("g", member_id="m-1", instance_id="i1")
    m.subscribe(["foo"], now_ms=0)
    m.member_epoch = 5
    m.state = m.state.STABLE
    m.owned = owned
    return m


def test_both_consumers_build_the_same_commit_of_owned_partitions_in_canonical_order() -> None:
    owned = frozenset({(BAR.topic_id, 1), (FOO.topic_id, 3), (FOO.topic_id, 0)})
    names = {FOO.topic_id: "foo", BAR.topic_id: "bar"}
    offsets = {(FOO.topic_id, 3): 30, (FOO.topic_id, 0): 7, (BAR.topic_id, 1): 11,
               (FOO.topic_id, 2): 99}  # not owned: left out
    classic, kip848 = _stable_classic(owned), _stable_kip848(owned)
    a = classic.commit_request(offsets, names)
    b = kip848.commit_request(offsets, names)
    assert a is not None and a == b
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions])
            for t in a.topics] == [("foo", [(0, 7), (3, 30)]), ("bar", [(1, 11)])]
    assert (a.member_id, a.generation_id_or_member_epoch, a.group_instance_id) == ("m-1", 5, "i1")
    # the auto-commit of every owned partition and the commit before revoking some of them
    pos = classic.positions_commit_request(lambda t, p: p * 10, topic_names=names)
    assert pos == kip848.positions_commit_request(lambda t, p: p * 10, topic_names=names)
    assert pos is not None and sum(len(t.partitions) for t in pos.topics) == 3
    some = frozenset({(FOO.topic_id, 3), (FOO.topic_id, 1)})  # foo-1 is not owned
    part = classic.positions_commit_request(lambda t, p: 1, some, names)
    assert part is not None and [(t.name, [p.partition_index for p in t.partitions])
                                 for t in part.topics] == [("foo", [3])]


def test_no_commit_outside_a_group_and_a_classic_member_names_topics_itself() -> None:
    owned = frozenset({(FOO.topic_id, 0)})
    assert _consumer().commit_request({(FOO.topic_id, 0): 1}) is None  # no generation yet
    kip848 = _stable_kip848(owned)
    kip848.member_epoch = 0
    assert kip848.commit_request({(FOO.topic_id, 0): 1}) is None  # not in the group yet
    req = _stable_classic(owned).commit_request({(FOO.topic_id, 0): 1})  # no names given
    assert req is not None and req.topics[0].name == "foo"  # from the member's metadata


# ----------------------------------------------------------------------------- KIP-814


@pytest.mark.parametrize("skip", [False, True], ids=["leader-assigns", "skip-assignment"])
def test_a_static_leader_told_to_skip_the_assignment_computes_none_and_rejoins(skip: bool) -> None:
    """KIP-814 on the client side: a static leader whose JoinGroup answer says
    ``SkipAssignment`` sends a SyncGroup without assignments (the group keeps the one it has)
    and, as this client documents, asks for one more rebalance within a heartbeat interval
    (it cannot know what changed while it was away); a leader not told so assigns every
    member and then just heartbeats."""
    from groupcoord.coordinator.classic.messages import JoinGroupResponseMember
    from groupcoord.protocol.consumer_protocol import encode_subscription

    m = _consumer()
    m.poll_request(0)
    members = tuple(JoinGroupResponseMember(mid, iid, encode_subscription(["foo"]))
                    for mid, iid in (("m", "i1"), ("o", "i2")))
    m.on_response(JoinGroupResponse(E.none, 4, "consumer", "range", "m", skip_assignment=skip,
                                    member_id="m", members=members), 1, m.last_correlation_id)
    sync = m.poll_request(1)
    assert isinstance(sync, SyncGroupRequest) and sync.generation_id == 4
    assert (sync.assignments == ()) is skip
    if not skip:
        assert sorted(a.member_id for a in sync.assignments) == ["m", "o"]
    assert m.on_response(SyncGroupResponse(assignment=encode_consumer_assignment({"foo": [0, 1]})),
                         2, m.last_correlation_id)
    sent = [m.poll_request(t) for t in range(3, 3 + m.heartbeat_interval_ms + 1, 50)]
    kinds = [type(r).__name__ for r in sent if r is not None]
    assert ("JoinGroupRequest" in kinds) is skip, kinds
