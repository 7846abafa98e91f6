"""The connect group type (the Connect draft): records, heartbeat validation and handling, fencing,
timeouts, static membership, the configuration request, describe / list / delete, offsets, replay
equivalence, and a hypothesis state machine checking I1-I4 for connect groups.

The helpers at the top (``Connect``, ``tables``, ``seed_connect_group``, draft item names) are
shared with ``test_connect_case_studies.py`` and ``test_client_assignment.py``. Items are written
in the Connect draft's notation: ``AC0`` is connector A, ``AT1`` its first task - task number 0,
as upstream numbers tasks from 0 (the draft numbers them from 1).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.connect.handlers import CONNECT_REBALANCE, CONNECT_SESSION
from groupcoord.coordinator.modern.connect.messages import (
    CONNECTOR_TASK,
    ConnectGroupConfigRequest,
    ConnectGroupConfigResponse,
    ConnectGroupDescribeRequest,
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    ConnectInstalledMember,
    ConnectorConfigOp,
    ConnectorsAndTasks,
    ConnectorTaskId,
)
from groupcoord.coordinator.modern.connect.model import ConnectGroup
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.records import (
    VALUE_TYPES,
    ClientAssignor,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataValue,
    Record,
    RecordType,
    connect_connectors_tasks_record,
    connect_current_assignment_record,
    connect_group_epoch_record,
    connect_member_metadata_record,
    connect_target_member_record,
    connect_target_metadata_record,
)
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, ErrorCode

from .support import image

_E = ErrorCode

GROUP = "g"
ASSIGNOR = "incremental-cooperative"

# ============================================================================ helpers (shared)

_ITEM = re.compile(r"^(.+)([CT])(\d+)$")

Item = tuple[str, int]


def item(name: str) -> Item:
    """Draft notation -> (connector, task): ``AC0`` -> ("A", -1), ``AT1`` -> ("A", 0)."""
    m = _ITEM.match(name)
    assert m is not None, name
    connector, kind, n = m.group(1), m.group(2), int(m.group(3))
    if kind == "C":
        assert n == 0, name
        return connector, CONNECTOR_TASK
    assert n >= 1, name
    return connector, n - 1


def draft(it: Item) -> str:
    c, t = it
    return f"{c}C0" if t == CONNECTOR_TASK else f"{c}T{t + 1}"


def ct(*names: str) -> ConnectorsAndTasks:
    items = sorted(item(n) for n in names)
    return ConnectorsAndTasks(tuple(c for c, t in items if t == CONNECTOR_TASK),
                              tuple(ConnectorTaskId(c, t) for c, t in items if t != CONNECTOR_TASK))


def names(a: Mapping[str, Iterable[int]] | ConnectorsAndTasks | None) -> list[str]:
    """Draft names, sorted by connector then connector-before-tasks then task."""
    if a is None:
        return []
    if isinstance(a, ConnectorsAndTasks):
        its = [(c, CONNECTOR_TASK) for c in a.connectors] + [(t.connector, t.task) for t in a.tasks]
    else:
        its = [(c, t) for c, ts in a.items() for t in ts]
    return [draft(i) for i in sorted(its)]


def assignors(lo: int = 0, hi: int = 2, *, version: int | None = None, reason: int = 0,
              metadata: bytes = b"", name: str = ASSIGNOR) -> tuple[ClientAssignor, ...]:
    return (ClientAssignor(name, lo, hi, reason, hi if version is None else version, metadata),)


class Connect:
    """Drives a shard's connect group like workers and an admin would; keeps a clock in ms."""

    def __init__(self, shard: Shard, group_id: str = GROUP, now: int = 0) -> None:
        self.shard = shard
        self.group_id = group_id
        self.now = now
        self.records: list[Record] = []

    def handle(self, request: Any) -> Any:
        res = self.shard.handle(request, self.now)
        self.records.extend(res.records)
        return res.response

    def heartbeat(self, member_id: str, epoch: int, *, owned: Iterable[str] | None = None,
                  **kw: Any) -> ConnectGroupHeartbeatResponse:
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30_000)
            kw.setdefault("client_assignors", assignors())
            kw.setdefault("url", f"http://{member_id.lower()}:8083")
        req = ConnectGroupHeartbeatRequest(
            group_id=kw.pop("group_id", self.group_id), member_id=member_id, member_epoch=epoch,
            connectors_and_tasks=None if owned is None else ct(*owned), **kw)
        resp = self.handle(req)
        assert isinstance(resp, ConnectGroupHeartbeatResponse)
        return resp

    def prepare(self, member_id: str, epoch: int) -> ConnectGroupPrepareAssignmentResponse:
        resp = self.handle(ConnectGroupPrepareAssignmentRequest(self.group_id, member_id, epoch))
        assert isinstance(resp, ConnectGroupPrepareAssignmentResponse)
        return resp

    def install(self, member_id: str, epoch: int, group_epoch: int,
                targets: Mapping[str, Iterable[str]], *, delay: int = 0,
                error: int = 0) -> ConnectGroupInstallAssignmentResponse:
        resp = self.handle(ConnectGroupInstallAssignmentRequest(
            self.group_id, member_id, epoch, group_epoch, error,
            tuple(ConnectInstalledMember(mid, ct(*its)) for mid, its in targets.items()),
            scheduled_rebalance_delay_ms=delay))
        assert isinstance(resp, ConnectGroupInstallAssignmentResponse)
        return resp

    def configure(self, *ops: tuple[str, str, int] | tuple[str, str]) -> ConnectGroupConfigResponse:
        resp = self.handle(ConnectGroupConfigRequest(self.group_id, tuple(
            ConnectorConfigOp(*op) for op in ops)))
        assert isinstance(resp, ConnectGroupConfigResponse)
        return resp

    def advance(self, ms: int) -> list[Record]:
        self.now += ms
        out = [rec for res in self.shard.expire_timers(self.now) for rec in res.records]
        self.records.extend(out)
        return out


def tables(shard: Shard, group_id: str = GROUP) -> dict[str, Any]:
    """The draft's three tables: Group (epoch, workers), Target Assignment (epoch, connectors and
    tasks per worker), Member Assignment (worker epoch, connectors and tasks held)."""
    g = shard.groups[group_id]
    assert isinstance(g, ConnectGroup)
    members = {}
    for mid, m in sorted(g.members.items()):
        held: dict[str, set[int]] = {}
        for c, t in m.held():
            held.setdefault(c, set()).add(t)
        members[mid] = (m.member_epoch, names(held))
    return {
        "group": (g.group_epoch, sorted(g.members)),
        "target": (g.assignment_epoch,
                   {mid: names(t.items) for mid, t in sorted(g.target_assignment.items())}),
        "members": members,
    }


def seed_connect_group(shard: Shard, group_id: str, epoch: int, connectors: Mapping[str, int],
                       members: Mapping[str, Iterable[str]],
                       member_assignors: Mapping[str, tuple[ClientAssignor, ...]] | None = None,
                       rebalance_timeout_ms: int = 30_000) -> None:
    """Write a stable connect group at ``epoch`` through records, as a log would hold it."""
    shard.replay(connect_connectors_tasks_record(group_id, 1, dict(connectors)))
    for mid, its in members.items():
        a: dict[str, frozenset[int]] = {}
        for c, t in (item(n) for n in its):
            a[c] = a.get(c, frozenset()) | {t}
        ca = (member_assignors or {}).get(mid, assignors())
        shard.replay(connect_member_metadata_record(group_id, mid, ConnectGroupMemberMetadataValue(
            None, "worker", "/127.0.0.1", f"http://{mid.lower()}:8083", rebalance_timeout_ms, ca)))
        shard.replay(connect_target_member_record(group_id, mid,
                                                  ConnectGroupTargetAssignmentMemberValue(a)))
        shard.replay(connect_current_assignment_record(
            group_id, mid, ConnectGroupCurrentMemberAssignmentValue(epoch, epoch - 1, 0, a, {})))
    shard.replay(connect_target_metadata_record(group_id,
                                                ConnectGroupTargetAssignmentMetadataValue(epoch)))
    shard.replay(connect_group_epoch_record(group_id, epoch))


def rebuild(records: Iterable[Record], seed: Iterable[Record] = ()) -> Shard:
    """A fresh shard fed the records through their bytes."""
    shard = Shard()
    for rec in [*seed, *records]:
        shard.replay(Record.decode(*rec.encode()))
    return shard


def assert_replay_equivalent(c: Connect) -> None:
    assert rebuild(c.records).state_digest() == c.shard.state_digest()


# ============================================================================ records


CONNECT_TYPES = [t for t in RecordType if t.name.startswith("CONNECT_")]


def _sample(rtype: RecordType) -> Record:
    a = {"A": frozenset({-1, 0, 1}), "B": frozenset({0})}
    return {
        RecordType.CONNECT_GROUP_METADATA: connect_group_epoch_record("g", 7),
        RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA:
            connect_connectors_tasks_record("g", 3, {"B": 1, "A": 2}),
        RecordType.CONNECT_GROUP_MEMBER_METADATA: connect_member_metadata_record(
            "g", "w", ConnectGroupMemberMetadataValue("i", "c", "/h", "http://w", 1000,
                                                      assignors(1, 3, reason=2, metadata=b"x"))),
        RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA: connect_target_metadata_record(
            "g", ConnectGroupTargetAssignmentMetadataValue(5, 1, 300_000)),
        RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER: connect_target_member_record(
            "g", "w", ConnectGroupTargetAssignmentMemberValue(a, 1, 2, b"m")),
        RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT: connect_current_assignment_record(
            "g", "w", ConnectGroupCurrentMemberAssignmentValue(5, 4, 1, a, {"C": frozenset({2})},
                                                               0, 1, b"")),
    }[rtype]


@pytest.mark.parametrize("rtype", CONNECT_TYPES, ids=lambda t: t.name)
def test_connect_records_round_trip(rtype: RecordType) -> None:
    rec = _sample(rtype)
    key, value = rec.encode()
    back = Record.decode(key, value)
    assert back == rec and type(back.value) is VALUE_TYPES[rtype]
    assert back.encode() == (key, value)
    tomb = Record(rec.key, None)
    assert Record.decode(*tomb.encode()) == tomb
    assert tomb.encode()[0] == key


def test_connect_assignment_encoding_is_canonical() -> None:
    a = connect_target_member_record("g", "w", ConnectGroupTargetAssignmentMemberValue(
        {"B": frozenset({1, 0}), "A": frozenset({0, -1}), "C": frozenset()}))
    b = connect_target_member_record("g", "w", ConnectGroupTargetAssignmentMemberValue(
        {"A": frozenset({-1, 0}), "B": frozenset({0, 1})}))
    assert a.encode() == b.encode()


# ============================================================================ configuration


def test_configuration_request_creates_updates_deletes_and_counts_offsets() -> None:
    c = Connect(Shard())
    r = c.configure(("create", "A", 2), ("create", "B", 1))
    assert (r.error_code, r.group_epoch, r.config_offset) == (0, 0, 1)
    g = c.shard.groups[GROUP]
    assert isinstance(g, ConnectGroup) and dict(g.config.connectors) == {"A": 2, "B": 1}
    assert sorted(draft(i) for i in g.config.items()) == ["AC0", "AT1", "AT2", "BC0", "BT1"]
    # No worker: nothing to assign, no epoch bump.
    assert c.configure(("update", "A", 3)).group_epoch == 0
    # Unchanged: no record, same offset.
    before = len(c.records)
    r = c.configure(("update", "A", 3))
    assert r.config_offset == 2 and len(c.records) == before
    # With a worker the epoch is bumped by each change.
    c.heartbeat("W1", 0)
    assert c.shard.groups[GROUP].group_epoch == 1
    r = c.configure(("delete", "B"))
    assert (r.group_epoch, r.config_offset) == (2, 3)
    assert_replay_equivalent(c)


@pytest.mark.parametrize(("ops", "code"), [
    ((("create", "A", 1),), _E.invalid_request),          # exists
    ((("update", "Z", 1),), _E.resource_not_found),
    ((("delete", "Z"),), _E.resource_not_found),
    ((("create", "", 1),), _E.invalid_request),
    ((("create", "N", -1),), _E.invalid_request),
    ((("create", "N", 70_000),), _E.invalid_request),
    ((("rename", "A", 1),), _E.invalid_request),
    ((("create", "N", 1), ("delete", "Z")), _E.resource_not_found),  # all or nothing
])
def test_configuration_errors_change_nothing(ops: tuple[Any, ...], code: int) -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    before = c.shard.state_digest()
    r = c.configure(*ops)
    assert r.error_code == code and r.error_message
    assert c.shard.state_digest() == before


def test_configuration_of_another_group_type_is_group_id_not_found() -> None:
    shard = Shard(metadata=image(foo=1))
    from .support import Client
    Client(shard).heartbeat("m", 0)
    r = Connect(shard).configure(("create", "A", 1))
    assert r.error_code == _E.group_id_not_found and "consumer" in (r.error_message or "")


# ============================================================================ heartbeat validation


@pytest.mark.parametrize(("kw", "code"), [
    ({"group_id": ""}, _E.invalid_request),
    ({"member_id": ""}, _E.invalid_request),
    ({"member_epoch": -3}, _E.invalid_request),
    ({"member_epoch": -2}, _E.invalid_request),  # -2 needs an instance id
    ({"instance_id": " "}, _E.invalid_request),
    ({"rebalance_timeout_ms": -1}, _E.invalid_request),  # first request
    ({"client_assignors": None}, _E.invalid_request),
    ({"client_assignors": ()}, _E.invalid_request),
    ({"connectors_and_tasks": ct("AC0")}, _E.invalid_request),  # must be empty on join
    ({"server_assignor": "uniform"}, _E.invalid_request),  # with client assignors
    ({"server_assignor": "uniform", "client_assignors": None}, _E.unsupported_assignor),
    ({"client_assignors": (ClientAssignor("", 0, 1, 0, 0, b""),)}, _E.invalid_request),
    ({"client_assignors": (ClientAssignor("x", -2, 1, 0, 0, b""),)}, _E.invalid_request),
    ({"client_assignors": (ClientAssignor("x", 2, 1, 0, 1, b""),)}, _E.invalid_request),
    ({"client_assignors": (ClientAssignor("x", 0, 1, 0, 2, b""),)}, _E.invalid_request),
    ({"connectors_and_tasks": ConnectorsAndTasks((), (ConnectorTaskId("A", -1),))},
     _E.invalid_request),
])
def test_heartbeat_validation(kw: dict[str, Any], code: int) -> None:
    shard = Shard()
    req: dict[str, Any] = {"group_id": GROUP, "member_id": "W1", "member_epoch": 0,
                           "rebalance_timeout_ms": 30_000, "client_assignors": assignors()}
    req.update(kw)
    res = shard.handle(ConnectGroupHeartbeatRequest(**req), 0)
    assert res.response.error_code == code and res.response.error_message
    assert res.records == []


def test_leave_and_heartbeat_carry_any_rebalance_timeout() -> None:
    """As ConsumerGroupHeartbeat in Kafka 4.3: RebalanceTimeoutMs is checked on a join only
    (where 0 is accepted and only -1 refused); a leave with 0 is accepted."""
    shard = Shard()
    base: dict[str, Any] = {"group_id": GROUP, "member_id": "W1", "member_epoch": 0,
                            "rebalance_timeout_ms": 0, "client_assignors": assignors()}
    joined = shard.handle(ConnectGroupHeartbeatRequest(**base), 0).response
    assert joined.error_code == 0, joined.error_message
    left = shard.handle(ConnectGroupHeartbeatRequest(
        group_id=GROUP, member_id="W1", member_epoch=-1, rebalance_timeout_ms=0), 20).response
    assert left.error_code == 0, left.error_message
    assert "W1" not in shard.groups[GROUP].members


def test_heartbeat_of_unknown_worker_or_group() -> None:
    c = Connect(Shard())
    assert c.heartbeat("W1", 3).error_code == _E.unknown_member_id  # no group
    c.heartbeat("W1", 0)
    assert c.heartbeat("W2", 1).error_code == _E.unknown_member_id


# ============================================================================ handling


def _stable_two(c: Connect) -> None:
    """W1 and W2 share AC0, AT1, AT2, BC0, BT1 as W1 computes it; both at epoch 2."""
    c.configure(("create", "A", 2), ("create", "B", 1))
    c.heartbeat("W1", 0)
    c.prepare("W1", 0)
    c.install("W1", 0, 1, {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"]})
    c.heartbeat("W1", 0)
    c.heartbeat("W2", 0)
    assert c.heartbeat("W1", 1).should_compute_assignment
    c.prepare("W1", 1)
    c.install("W1", 1, 2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]})
    c.heartbeat("W1", 1, owned=["AC0", "AT1", "AT2"])
    c.heartbeat("W2", 1, owned=[])
    assert tables(c.shard)["members"] == {"W1": (2, ["AC0", "AT1", "AT2"]),
                                          "W2": (2, ["BC0", "BT1"])}


def test_fenced_member_epoch_removes_the_worker_and_it_rejoins() -> None:
    c = Connect(Shard())
    _stable_two(c)
    r = c.heartbeat("W2", 5, owned=["BC0", "BT1"])
    assert r.error_code == _E.fenced_member_epoch and r.error_message
    g = c.shard.groups[GROUP]
    assert "W2" not in g.members and g.group_epoch == 3
    # Its target entry stays until the next install (the next assignor sees what was lost).
    assert names(g.target_of("W2").items) == ["BC0", "BT1"]
    r = c.heartbeat("W2", 0)
    assert r.error_code == 0 and g.group_epoch == 4
    assert_replay_equivalent(c)


def test_lost_response_is_accepted_when_owned_is_a_subset() -> None:
    c = Connect(Shard())
    _stable_two(c)
    # W2 moved 1 -> 2 but the response was lost: it retries at 1 with what it owns (nothing).
    r = c.heartbeat("W2", 1, owned=[])
    assert r.error_code == 0 and r.member_epoch == 2 and names(r.assignment.connectors_and_tasks) == [
        "BC0", "BT1"]
    r = c.heartbeat("W2", 1, owned=["AC0"])  # not a subset of its assignment
    assert r.error_code == _E.fenced_member_epoch


def test_rebalance_timeout_fences_a_worker_that_does_not_revoke() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    c.heartbeat("W1", 0)
    c.prepare("W1", 0)
    c.install("W1", 0, 1, {"W1": ["AC0", "AT1"]})
    c.heartbeat("W1", 0, owned=[])
    c.heartbeat("W2", 0, rebalance_timeout_ms=10_000)
    c.heartbeat("W1", 1)
    c.prepare("W1", 1)
    c.install("W1", 1, 2, {"W1": ["AC0"], "W2": ["AT1"]})
    r = c.heartbeat("W1", 1, owned=["AC0", "AT1"])
    assert r.member_epoch == 1 and names(r.assignment.connectors_and_tasks) == ["AC0"]
    m = c.shard.groups[GROUP].members["W1"]
    assert m.state is MemberState.UNREVOKED_PARTITIONS
    assert (CONNECT_REBALANCE, GROUP, "W1") in c.shard.timers
    c.advance(29_000)
    assert "W1" in c.shard.groups[GROUP].members
    c.heartbeat("W2", 1)  # keeps W2's session
    c.advance(1_000)
    assert "W1" not in c.shard.groups[GROUP].members
    assert_replay_equivalent(c)


def test_session_timeout_removes_the_worker() -> None:
    c = Connect(Shard())
    _stable_two(c)
    assert (CONNECT_SESSION, GROUP, "W2") in c.shard.timers
    c.advance(40_000)
    c.heartbeat("W1", 2)
    c.advance(6_000)
    g = c.shard.groups[GROUP]
    assert sorted(g.members) == ["W1"] and g.group_epoch == 3
    # I1: W2's items are free; nobody targets them until the next install.
    assert g.owner_of("B", -1) is None


def test_static_worker_leaves_temporarily_and_comes_back_under_a_new_id() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    c.heartbeat("W1", 0, instance_id="i1")
    c.prepare("W1", 0)
    c.install("W1", 0, 1, {"W1": ["AC0", "AT1"]})
    c.heartbeat("W1", 0, owned=[])
    r = c.heartbeat("W1", -2, instance_id="i1")
    assert r.error_code == 0 and r.member_epoch == -2
    g = c.shard.groups[GROUP]
    assert g.members["W1"].member_epoch == -2 and g.group_epoch == 1
    # Another worker cannot take the instance id while W1 holds it... unless it left (-2): OK.
    r = c.heartbeat("W1b", 0, instance_id="i1")
    assert r.error_code == 0 and r.member_epoch == 1
    assert names(r.assignment.connectors_and_tasks) == ["AC0", "AT1"]
    assert sorted(g.members) == ["W1b"] and g.group_epoch == 1  # no rebalance
    assert names(g.target_of("W1b").items) == ["AC0", "AT1"] and "W1" not in g.target_assignment
    # The old id is fenced; a third incarnation while W1b is active is refused.
    assert c.heartbeat("W1", 1, instance_id="i1").error_code == _E.fenced_instance_id
    assert c.heartbeat("W1c", 0, instance_id="i1").error_code == _E.unreleased_instance_id
    assert_replay_equivalent(c)


def test_leave_bumps_the_epoch() -> None:
    c = Connect(Shard())
    _stable_two(c)
    r = c.heartbeat("W2", -1)
    assert r.error_code == 0 and r.member_epoch == -1
    g = c.shard.groups[GROUP]
    assert sorted(g.members) == ["W1"] and g.group_epoch == 3
    assert c.heartbeat("W2", -1).error_code == _E.unknown_member_id


def test_describe_list_and_delete() -> None:
    c = Connect(Shard())
    _stable_two(c)
    (d,) = c.handle(ConnectGroupDescribeRequest((GROUP,))).groups
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch) == (0, "Stable", 2, 2)
    assert d.assignor_name == ASSIGNOR and d.assigner is None and d.config_offset == 1
    assert [(m.member_id, m.member_epoch, names(m.assignment), names(m.target_assignment))
            for m in d.members] == [("W1", 2, ["AC0", "AT1", "AT2"], ["AC0", "AT1", "AT2"]),
                                    ("W2", 2, ["BC0", "BT1"], ["BC0", "BT1"])]
    assert d.members[0].url == "http://w1:8083"
    (missing,) = c.handle(ConnectGroupDescribeRequest(("nope",))).groups
    assert missing.error_code == _E.group_id_not_found
    listed = c.handle(ListGroupsRequest(types_filter=("connect",))).groups
    assert [(x.group_id, x.group_type, x.protocol_type, x.group_state) for x in listed] == [
        (GROUP, "connect", "connect", "Stable")]
    assert c.handle(ListGroupsRequest(types_filter=("consumer",))).groups == ()
    (res,) = c.handle(DeleteGroupsRequest((GROUP,))).results
    assert res.error_code == _E.non_empty_group
    c.heartbeat("W1", -1)
    c.heartbeat("W2", -1)
    (res,) = c.handle(DeleteGroupsRequest((GROUP,))).results
    assert res.error_code == 0 and GROUP not in c.shard.groups
    assert_replay_equivalent(c)
    assert GROUP not in rebuild(c.records).groups


def test_worker_epoch_fences_offset_commits() -> None:
    shard = Shard(metadata=image(src=2))
    c = Connect(shard)
    _stable_two(c)

    def commit(member_id: str, epoch: int) -> int:
        r = c.handle(OffsetCommitRequest(GROUP, (OffsetCommitTopic(
            "src", (OffsetCommitPartition(0, 10),)),), epoch, member_id))
        return int(r.error_code)

    assert commit("W1", 2) == 0
    assert commit("W1", 3) == _E.fenced_member_epoch
    assert commit("W1", 1) == _E.stale_member_epoch
    assert commit("W9", 2) == _E.unknown_member_id
    assert commit("", -1) == _E.unknown_member_id  # admin commit while the group has workers


def test_connect_and_consumer_groups_share_the_id_space() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Connect(shard)
    c.heartbeat("W1", 0)
    from .support import Client
    r = Client(shard).heartbeat("m", 0)
    assert r.error_code == _E.group_id_not_found and "connect" in (r.error_message or "")
    assert c.heartbeat("W2", 0).error_code == 0


def test_on_loaded_rearms_timers_and_asks_for_the_pending_target() -> None:
    c = Connect(Shard())
    _stable_two(c)
    c.heartbeat("W3", 0)  # epoch 3: W1 is the chosen assigner
    replica = rebuild(c.records)
    assert replica.state_digest() == c.shard.state_digest()
    res = replica.on_loaded(c.now)
    assert res.records == []
    for mid in ("W1", "W2", "W3"):
        assert (CONNECT_SESSION, GROUP, mid) in replica.timers
    r2 = Connect(replica, now=c.now)
    assert r2.heartbeat("W1", 2).should_compute_assignment
    p = r2.prepare("W1", 2)
    assert p.group_epoch == 3 and [m.member_id for m in p.members] == ["W1", "W2", "W3"]


# ============================================================================ property: I1-I4

CONNECTORS = ("A", "B", "C")
SLOTS = 4
HB_ERRORS = {int(_E.unknown_member_id), int(_E.fenced_member_epoch),
             int(_E.unsupported_assignor)}


@dataclass(slots=True)
class Worker:
    """A simulated worker: runs what it was given, stops what it was told to revoke."""

    slot: int
    member_id: str = ""
    incarnation: int = 0
    joined: bool = False
    epoch: int = 0
    running: set[Item] = field(default_factory=set)
    assigned: set[Item] | None = None
    version_range: tuple[int, int] = (0, 2)
    reason: int = 0

    def drop_all(self) -> None:
        self.running = set()
        self.assigned = None
        self.joined = False
        self.epoch = 0


def _items(ct_: ConnectorsAndTasks) -> set[Item]:
    return {(c, CONNECTOR_TASK) for c in ct_.connectors} | {(t.connector, t.task) for t in ct_.tasks}


def _wire(its: Iterable[Item]) -> ConnectorsAndTasks:
    s = sorted(its)
    return ConnectorsAndTasks(tuple(c for c, t in s if t == CONNECTOR_TASK),
                              tuple(ConnectorTaskId(c, t) for c, t in s if t != CONNECTOR_TASK))


class ConnectMachine(RuleBasedStateMachine):
    """Random operation sequences on one connect group: joins, heartbeats that acknowledge,
    keep reporting old items, or report nothing; lost responses; leaves; crashes; configuration
    changes; time jumps (session / rebalance / assigner timeouts); assigners that install legal
    targets (with or without a delay leaving items unassigned), illegal ones (rejected with
    INVALID_ASSIGNMENT and no record) or an assignor error; reason bumps; fail-over.

    Checked after every step: I1 (no item held by two workers, coordinator side, and no item run
    by two workers the coordinator still has, worker side), I2 (at group epoch = assignment epoch
    with workers: every configured item assigned exactly once - at most once when the target was
    installed with a delay - and only to workers), I3 (epoch order and monotony), I4 (a shard
    rebuilt from the log equals the live one)."""

    def __init__(self) -> None:
        super().__init__()
        self.shard = Shard()
        self.now = 0
        self.log: list[Record] = []
        self.workers = [Worker(i) for i in range(SLOTS)]
        self.epochs: tuple[int, int] | None = None
        self.member_epochs: dict[str, int] = {}
        self.rejoined: set[str] = set()

    # ------------------------------------------------------------------ plumbing

    def _log(self, results: Result[Any] | Iterable[Result[Any]]) -> list[Record]:
        if isinstance(results, Result):
            results = [results]
        out = [rec for res in results for rec in res.records]
        self.log.extend(out)
        return out

    def _handle(self, request: Any) -> tuple[Any, list[Record]]:
        res = self.shard.handle(request, self.now)
        return res.response, self._log(res)

    def _group(self) -> ConnectGroup | None:
        g = self.shard.groups.get(GROUP)
        assert g is None or isinstance(g, ConnectGroup)
        return g

    def _member(self, w: Worker) -> Any:
        g = self._group()
        return None if g is None or not w.member_id else g.members.get(w.member_id)

    def _live(self, w: Worker) -> bool:
        m = self._member(w)
        return m is not None and m.member_epoch >= 0

    def _heartbeat(self, w: Worker, epoch: int, owned: set[Item] | None, lose: bool = False,
                   **kw: Any) -> ConnectGroupHeartbeatResponse:
        if epoch == 0:  # a join, or a worker still at epoch 0: all the fields
            self.rejoined.add(w.member_id)
            kw.setdefault("rebalance_timeout_ms", 20_000)
            kw.setdefault("client_assignors", self._assignors(w))
        req = ConnectGroupHeartbeatRequest(
            GROUP, w.member_id, epoch, connectors_and_tasks=None if owned is None else _wire(owned),
            **kw)
        resp, records = self._handle(req)
        assert isinstance(resp, ConnectGroupHeartbeatResponse)
        if resp.error_code:
            event(f"heartbeat error {resp.error_code}")
            assert resp.error_code in HB_ERRORS, (resp.error_code, resp.error_message)
            assert resp.error_message
            if resp.error_code == _E.unknown_member_id:
                assert records == []
        if lose:
            return resp
        if resp.error_code in (_E.unknown_member_id, _E.fenced_member_epoch):
            w.drop_all()
            return resp
        if resp.error_code or epoch < 0:
            return resp
        m = self._member(w)
        assert m is not None and resp.member_epoch == m.member_epoch
        w.joined = True
        w.epoch = resp.member_epoch
        if resp.assignment is not None:
            a = _items(resp.assignment.connectors_and_tasks)
            assert a == {(c, t) for c, ts in m.assigned.items() for t in ts}
            new = a - w.running
            for other in self.workers:  # I1, worker side: given only once released
                if other is not w and self._live(other):
                    clash = new & other.running
                    assert not clash, f"I1: {clash} given to {w.member_id}, run by {other.member_id}"
            w.running |= new
            w.assigned = a
        if resp.should_compute_assignment:
            self.asked = w
        return resp

    def _report(self, w: Worker, behaviour: str) -> set[Item] | None:
        if behaviour == "null":
            return None
        if behaviour == "ack" and w.assigned is not None:
            w.running &= w.assigned
        return set(w.running)

    def _assignors(self, w: Worker) -> tuple[ClientAssignor, ...]:
        lo, hi = w.version_range
        return (ClientAssignor(ASSIGNOR, lo, hi, w.reason, hi, b""),)

    asked: Worker | None = None

    # ------------------------------------------------------------------ rules

    @initialize(n=st.integers(1, 3), connectors=st.lists(st.integers(0, 2), min_size=3, max_size=3))
    def start(self, n: int, connectors: list[int]) -> None:
        ops = tuple(ConnectorConfigOp("create", name, k) for name, k in zip(CONNECTORS, connectors,
                                                                             strict=True))
        self._handle(ConnectGroupConfigRequest(GROUP, ops))
        for w in self.workers[:n]:
            self._join(w, (0, 2), False)
        self._check_all()
        # The chosen worker (the first one) is asked at its next heartbeat and installs a target.
        w = self.workers[0]
        self._heartbeat(w, w.epoch, set(w.running))
        assert self.asked is w
        self.assign("legal", 0)
        self._check_all()

    def _join(self, w: Worker, version_range: tuple[int, int], lose: bool) -> None:
        if not w.member_id:
            w.incarnation += 1
            w.member_id = f"w{w.slot}.{w.incarnation}"
        w.running = set()
        w.assigned = None
        resp = self._heartbeat(w, 0, set(), lose, rebalance_timeout_ms=20_000,
                               client_assignors=self._assignors_for(w, version_range))
        if resp.error_code == 0 and not lose:
            w.version_range = version_range

    def _assignors_for(self, w: Worker, r: tuple[int, int]) -> tuple[ClientAssignor, ...]:
        return (ClientAssignor(ASSIGNOR, r[0], r[1], w.reason, r[1], b""),)

    @precondition(lambda self: any(not w.joined for w in self.workers))
    @rule(i=st.integers(0, SLOTS - 1), rng=st.sampled_from(((0, 2), (0, 2), (1, 2), (0, 1))),
          new_id=st.booleans(), lose=st.sampled_from((False, False, True)))
    def join(self, i: int, rng: tuple[int, int], new_id: bool, lose: bool) -> None:
        cands = [w for w in self.workers if not w.joined]
        w = cands[i % len(cands)]
        if new_id:
            w.member_id = ""
        self._join(w, rng, lose)

    @precondition(lambda self: any(w.joined for w in self.workers))
    @rule(i=st.integers(0, SLOTS - 1), behaviour=st.sampled_from(("ack", "old", "null")),
          lose=st.sampled_from((False, False, False, True)),
          then=st.sampled_from((None, None, "legal", "delay")), seed=st.integers(0, 2**16))
    def heartbeat(self, i: int, behaviour: str, lose: bool, then: str | None, seed: int) -> None:
        """A regular heartbeat; a worker told to compute may do so at once (``then``)."""
        cands = [w for w in self.workers if w.joined]
        w = cands[i % len(cands)]
        self._heartbeat(w, w.epoch, self._report(w, behaviour), lose)
        if then is not None and self.asked is w:
            self._check_all()
            self.assign(then, seed)

    @precondition(lambda self: any(w.joined for w in self.workers))
    @rule(i=st.integers(0, SLOTS - 1))
    def bump_reason(self, i: int) -> None:
        """The assignor asks for a rebalance (KIP-415's delay expired) with a new reason."""
        cands = [w for w in self.workers if w.joined]
        w = cands[i % len(cands)]
        g = self._group()
        before = None if g is None else g.group_epoch
        w.reason = (w.reason + 1) % 3
        resp = self._heartbeat(w, w.epoch, self._report(w, "ack"),
                               client_assignors=self._assignors(w))
        g = self._group()
        if resp.error_code == 0 and g is not None and before is not None:
            assert g.group_epoch == before + 1, "a changed reason must bump the group epoch"

    @precondition(lambda self: any(w.joined for w in self.workers))
    @rule(i=st.integers(0, SLOTS - 1), crash=st.booleans())
    def leave(self, i: int, crash: bool) -> None:
        cands = [w for w in self.workers if w.joined]
        w = cands[i % len(cands)]
        if crash:  # the process dies: the coordinator finds out by the session timeout
            w.running = set()
            w.joined = False
            w.member_id = ""
            return
        w.running = set()
        self._heartbeat(w, -1, None)
        w.drop_all()
        w.member_id = ""

    @rule(i=st.integers(0, 2), op=st.sampled_from(("create", "update", "delete")),
          n=st.integers(0, 3))
    def configure(self, i: int, op: str, n: int) -> None:
        g = self._group()
        before = None if g is None else (g.group_epoch, bool(g.members))
        resp, records = self._handle(ConnectGroupConfigRequest(
            GROUP, (ConnectorConfigOp(op, CONNECTORS[i], n),)))
        if resp.error_code:
            assert resp.error_code in (_E.invalid_request, _E.resource_not_found)
            assert records == []
        elif records and before is not None and before[1]:
            g = self._group()
            assert g is not None and g.group_epoch == before[0] + 1

    @precondition(lambda self: self.asked is not None)
    @rule(kind=st.sampled_from(("legal", "legal", "delay", "twice", "unknown_member",
                                "unknown_item", "missing", "error")),
          seed=st.integers(0, 2**16))
    def assign(self, kind: str, seed: int) -> None:
        """The worker told to compute prepares and installs (or botches) a target."""
        w = self.asked
        assert w is not None
        self.asked = None
        if not w.joined:  # it left or was fenced since it was asked
            event("asked worker gone")
            return
        resp, records = self._handle(ConnectGroupPrepareAssignmentRequest(GROUP, w.member_id,
                                                                          w.epoch))
        if resp.error_code:
            event(f"prepare error {resp.error_code}")
            assert resp.error_code in (_E.unknown_member_id, _E.fenced_member_epoch,
                                       _E.group_id_not_found), resp
            return
        mids = [m.member_id for m in resp.members]
        universe = sorted({(c.name, t) for c in resp.connectors
                           for t in range(CONNECTOR_TASK, c.task_count)})
        targets: dict[str, list[Item]] = {mid: [] for mid in mids}
        for k, it in enumerate(universe):
            targets[mids[(k + seed) % len(mids)]].append(it)
        delay = 0
        expect: int = 0
        if kind == "delay":
            delay = 10_000
            if universe:
                targets[mids[seed % len(mids)]] = [
                    x for x in targets[mids[seed % len(mids)]] if x != universe[seed % len(universe)]]
        elif kind == "twice" and universe and len(mids) > 1:
            targets[mids[0]] = sorted(set(targets[mids[0]]) | {universe[0]})
            targets[mids[1]] = sorted(set(targets[mids[1]]) | {universe[0]})
            expect = INVALID_ASSIGNMENT
        elif kind == "unknown_member":
            targets["ghost"] = []
            expect = INVALID_ASSIGNMENT
        elif kind == "unknown_item":
            targets[mids[0]].append(("Z", 0))
            expect = INVALID_ASSIGNMENT
        elif kind == "missing" and universe:
            for mid in mids:
                targets[mid] = [x for x in targets[mid] if x != universe[-1]]
            expect = INVALID_ASSIGNMENT
        req = ConnectGroupInstallAssignmentRequest(
            GROUP, w.member_id, w.epoch, resp.group_epoch, 1 if kind == "error" else 0,
            tuple(ConnectInstalledMember(mid, _wire(its)) for mid, its in targets.items()),
            scheduled_rebalance_delay_ms=delay)
        before = self.shard.state_digest()
        out, records = self._handle(req)
        assert out.error_code == expect, (kind, out)
        event(f"install: {kind} -> {'INVALID_ASSIGNMENT' if expect else 'ok'}")
        if expect:
            assert out.error_message and records == []
            assert self.shard.state_digest() == before
        elif kind != "error":
            g = self._group()
            assert g is not None and g.assignment_epoch == resp.group_epoch

    @rule(ms=st.sampled_from((1_000, 10_000, 21_000, 46_000)))
    def advance(self, ms: int) -> None:
        self.now += ms
        self._log(self.shard.expire_timers(self.now))

    @rule()
    def failover(self) -> None:
        self.shard = rebuild(self.log)
        self._log(self.shard.on_loaded(self.now))
        self.asked = None

    # ------------------------------------------------------------------ invariants

    @invariant()
    def invariants_hold(self) -> None:
        self._check_all()

    def _check_all(self) -> None:
        g = self._group()
        self._check_i4()
        if g is None:
            return
        # I1, coordinator side.
        holder: dict[Item, str] = {}
        for mid, m in g.members.items():
            for it in m.held():
                assert it not in holder, f"I1: {it} held by {holder[it]} and {mid}"
                holder[it] = mid
        assert {(c, t): mid for c, ts in g.owners.items() for t, mid in ts.items()} == holder
        # I1, worker side.
        live = [w for w in self.workers if self._live(w)]
        for a, b in itertools.combinations(live, 2):
            assert not a.running & b.running, f"I1 (workers): {a.running & b.running}"
        for w in live:
            extra = w.running - set(self._member(w).held())
            assert not extra, f"I1: {extra} released from {w.member_id} without acknowledgement"
        # I2.
        if g.members and g.group_epoch == g.assignment_epoch:
            assert set(g.target_assignment) <= set(g.members)
            seen: dict[Item, str] = {}
            for mid, t in g.target_assignment.items():
                for c, ts in t.items.items():
                    for task in ts:
                        assert (c, task) not in seen, f"I2: {(c, task)} assigned twice"
                        seen[(c, task)] = mid
            configured = g.config.items()
            assert set(seen) <= configured, f"I2: unknown items {set(seen) - configured}"
            if g.scheduled_rebalance_delay_ms == 0:
                assert set(seen) == configured, f"I2: unassigned {configured - set(seen)}"
        # Timers the timeouts rest on.
        for mid, m in g.members.items():
            assert (CONNECT_SESSION, GROUP, mid) in self.shard.timers, f"{mid}: no session timer"
            if m.member_epoch >= 0 and m.state is MemberState.UNREVOKED_PARTITIONS:
                key = (CONNECT_REBALANCE, GROUP, mid)
                assert self.shard.timers.payload(key) == m.member_epoch, f"{mid}: no rebalance timer"
        # I3.
        assert g.assignment_epoch <= g.group_epoch
        if self.epochs is not None:
            assert g.group_epoch >= self.epochs[0] and g.assignment_epoch >= self.epochs[1]
        self.epochs = (g.group_epoch, g.assignment_epoch)
        epochs = {}
        for mid, m in g.members.items():
            if m.member_epoch < 0:
                continue
            assert m.member_epoch <= g.assignment_epoch
            old = self.member_epochs.get(mid)
            if old is not None and mid not in self.rejoined:
                assert m.member_epoch >= old, f"I3: {mid} epoch {old} -> {m.member_epoch}"
            epochs[mid] = m.member_epoch
        self.member_epochs = epochs
        self.rejoined = set()

    def _check_i4(self) -> None:
        assert rebuild(self.log).state_digest() == self.shard.state_digest(), "I4"


ConnectMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestConnectProperties = ConnectMachine.TestCase
