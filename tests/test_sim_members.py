"""The simulator's shared member machinery (``sim/members.py`` and the driving code of
``sim/consumer.py`` that every protocol uses).

docs/design.md: a coordinator that is still loading answers every request with
COORDINATOR_LOAD_IN_PROGRESS, in the request's own response type (the member retries); a
failover resets the connections, so every request in flight (a heartbeat, a JoinGroup, an
assigner's Prepare or Install) fails. Every protocol variant drives its members through the
same code: a coordinator failover must leave each of them clean (the classic ones crashed on it
once: their members lacked the driver interface the KIP-848 member had gained).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from groupcoord.client.connect.classic_worker import ClassicConnectWorker
from groupcoord.client.consumer import ConsumerMember
from groupcoord.coordinator import messages as shared
from groupcoord.coordinator.classic import messages as classic
from groupcoord.coordinator.modern.connect import messages as connect
from groupcoord.coordinator.modern.consumer import messages as consumer
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.sim.members import (
    assign_response_kind,
    describe_request,
    fatal_reason,
    heartbeat_detail,
    in_flight,
    loading_response,
)
from groupcoord.sim.protocols import protocol_labels
from groupcoord.sim.runner import simulate

from .sim_support import ok
from .test_classic_member import _Store

T = UUID(int=7)
LOADING = int(E.coordinator_load_in_progress)

#: Every request a simulated member sends, with the response type a loading coordinator uses.
REQUESTS = [
    (consumer.ConsumerGroupHeartbeatRequest("g", "m", 0, rebalance_timeout_ms=1000,
                                            topic_partitions=()),
     consumer.ConsumerGroupHeartbeatResponse, ("heartbeats", "hb>", 0, "full")),
    (consumer.ConsumerGroupHeartbeatRequest("g", "m", 4), consumer.ConsumerGroupHeartbeatResponse,
     ("heartbeats", "hb>", 4, "")),
    (consumer.ConsumerGroupPrepareAssignmentRequest("g", "m", 4),
     consumer.ConsumerGroupPrepareAssignmentResponse, ("prepares", "prepare>", 4, "")),
    (connect.ConnectGroupHeartbeatRequest("g", "m", 2), connect.ConnectGroupHeartbeatResponse,
     ("heartbeats", "hb>", 2, "")),
    (connect.ConnectGroupPrepareAssignmentRequest("g", "m", 2),
     connect.ConnectGroupPrepareAssignmentResponse, ("prepares", "prepare>", 2, "")),
    (classic.JoinGroupRequest("g", 10_000, "m", "consumer", ()), classic.JoinGroupResponse,
     ("joins", "join>", "", "")),
    (classic.SyncGroupRequest("g", 3, "m", assignments=(classic.SyncGroupAssignment("m", b""),)),
     classic.SyncGroupResponse, ("syncs", "sync>", 3, "leader")),
    (classic.HeartbeatRequest("g", 3, "m"), classic.HeartbeatResponse, ("heartbeats", "hb>", 3, "")),
    (classic.LeaveGroupRequest("g", (classic.LeaveGroupMember("m"),)), classic.LeaveGroupResponse,
     ("leaves", "leave>", "", "")),
]


@pytest.mark.parametrize(("req", "response_type", "described"), REQUESTS,
                         ids=[type(r).__name__ + str(i) for i, (r, _, _) in enumerate(REQUESTS)])
def test_every_request_is_traced_and_answered_by_a_loading_coordinator_in_its_own_type(
        req: object, response_type: type, described: tuple[object, ...]) -> None:
    assert describe_request(req) == described
    resp: Any = loading_response(req, LOADING)
    assert resp.error_code == LOADING
    assert type(resp) is response_type
    assert assign_response_kind(resp) == (
        "prepare<" if "Prepare" in response_type.__name__ else None)


def test_an_install_is_traced_with_its_epoch_delay_and_error() -> None:
    ci = consumer.ConsumerGroupInstallAssignmentRequest("g", "m", 4, 9, error=1)
    assert describe_request(ci) == ("installs", "install>", 4, "group epoch 9, error 1")
    wi = connect.ConnectGroupInstallAssignmentRequest("g", "m", 4, 9,
                                                      scheduled_rebalance_delay_ms=300)
    assert describe_request(wi) == ("installs", "install>", 4, "group epoch 9, delay 300 ms")
    assert type(loading_response(wi, LOADING)) is connect.ConnectGroupInstallAssignmentResponse
    assert assign_response_kind(loading_response(ci, LOADING)) == "install<"


def test_a_commit_refused_while_loading_names_every_partition() -> None:
    req = shared.OffsetCommitRequest("g", (shared.OffsetCommitTopic(
        "t", (shared.OffsetCommitPartition(0, 5), shared.OffsetCommitPartition(3, 8)),
        topic_id=T),), generation_id_or_member_epoch=2, member_id="m")
    assert describe_request(req) is None  # traced by the commit itself
    resp = loading_response(req, LOADING)
    assert isinstance(resp, shared.OffsetCommitResponse)
    assert [(p.partition_index, p.error_code) for t in resp.topics for p in t.partitions] == [
        (0, LOADING), (3, LOADING)]


def test_heartbeat_answers_are_traced_only_when_they_change_something() -> None:
    same = consumer.ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4)
    assert heartbeat_detail(same, 4) is None
    assert heartbeat_detail(same, 3) == ""  # a new epoch, no assignment
    compute = connect.ConnectGroupHeartbeatResponse(member_id="m", member_epoch=4,
                                                    should_compute_assignment=True)
    assert heartbeat_detail(compute, 4) == " compute"  # the chosen assigner is told


def test_in_flight_requests_of_every_member_type_and_why_a_member_stopped() -> None:
    kip848 = ConsumerMember("g", member_id="m")
    kip848.subscribe(["foo"], now_ms=0)
    assert in_flight(kip848) == []
    kip848.poll_request(0)
    assert in_flight(kip848) == [kip848.last_correlation_id]
    worker = ClassicConnectWorker("g", "http://w:8083/", _Store())
    worker.start(0)
    worker.poll_request(0)
    assert in_flight(worker) == [worker.last_correlation_id]  # no assigner duties
    assert fatal_reason((int(E.fenced_instance_id), None)) == "FENCED_INSTANCE_ID"
    assert fatal_reason("Connect does not support static membership") == \
        "Connect does not support static membership"


@pytest.mark.parametrize("protocol", protocol_labels())
def test_every_protocol_survives_a_coordinator_failover(protocol: str) -> None:
    r = ok(simulate("coordinator-failover", 1, protocol, record_trace=True))
    assert any(" failover " in line for line in r.trace)
    assert r.summary["converged_at_ms"] is not None
