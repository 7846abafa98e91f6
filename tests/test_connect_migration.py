"""Online migration between classic Connect groups and connect groups.

The Connect draft's "Migration To the New Protocol": "Upgrading to
the new protocol or downgrading from it is possible by rolling the workers ... When the first
worker that supports the new protocol joins the group, the group is converted from generic to
connect. Similarly when the last worker supporting the new protocol leaves, the group switches
back to the old protocol. Note that the group epoch starts at the current group generation." and
"JoinGroup, SyncGroup and Heartbeat calls need to be translated into the new protocol".

Driven by real workers (``ClassicConnectWorker``, ``ConnectWorker``) on one shard: the driver
checks after every request that no connector or task runs on two workers (I1, workers' side);
replay of the record log (I4) is compared with the live state after every step.
"""

from __future__ import annotations

import pytest

from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.coordinator.classic.messages import JoinGroupProtocol
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupConfigRequest,
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectorConfigOp,
)
from groupcoord.coordinator.modern.connect.migration import (
    classic_to_connect,
    owned_items,
    running_items,
)
from groupcoord.coordinator.modern.connect.model import ConnectGroup
from groupcoord.coordinator.modern.consumer.migration import MigrationError
from groupcoord.coordinator.records import ClientAssignor, Record, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol import connect_protocol as cp
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

from .connect_migration_support import GROUP, MixedCluster, items
from .test_classic_support import Harness

CONFIG = ConfigSnapshot(3, {"A": 2, "B": 2, "C": 1})  # 3 connectors + 5 tasks = 8 items


def replayed(c: MixedCluster) -> object:
    shard = Shard(config=c.h.config, metadata=c.h.metadata)
    for rec in c.h.records:
        shard.replay(Record.decode(*rec.encode()))
    return shard.state_digest()


def at_rest_and_replayable(c: MixedCluster) -> None:
    c.settle()
    assert c.everything_runs_once()
    assert replayed(c) == c.h.shard.state_digest()  # I4


def classic_cluster(names: tuple[str, ...] = ("W1", "W2", "W3"), protocol: str = "sessioned",
                    policy: str = "bidirectional") -> MixedCluster:
    c = MixedCluster(CONFIG, coordinator=CoordinatorConfig(connect_migration_policy=policy))
    for n in names:
        c.start_classic(n, protocol)
    at_rest_and_replayable(c)
    assert isinstance(c.group, ClassicGroup) and c.group.protocol_type == "connect"
    return c


# ----------------------------------------------------------------------------- rolling upgrade


def test_rolling_upgrade_then_rolling_downgrade() -> None:
    c = classic_cluster()
    generation = c.group.generation_id
    classic_ids = {n: w.member_id for n, w in c.classic.items()}

    # -- upgrade: each classic worker is replaced by a new-protocol worker, one by one
    for i, n in enumerate(("1", "2", "3")):
        c.start_new(f"N{n}")
        g = c.group
        assert isinstance(g, ConnectGroup), "the first new-protocol worker converts the group"
        if i == 0:
            # The converted group's epoch starts at the classic generation; N1's join bumps it.
            epochs = [r.value.epoch for r in c.h.records
                      if r.key.type is RecordType.CONNECT_GROUP_METADATA and r.value is not None]
            assert epochs[:2] == [generation, generation + 1]
            assert {mid for mid, m in g.members.items() if m.classic is not None} == \
                set(classic_ids.values())
            assert dict(g.config.connectors) == dict(CONFIG.connectors)
            assert g.config.config_offset == CONFIG.offset
        at_rest_and_replayable(c)
        c.stop(f"W{n}")
        at_rest_and_replayable(c)
        assert isinstance(c.group, ConnectGroup)
        # Classic workers still in the group run their share, in the protocol they joined with.
        for w in c.classic.values():
            assert w.assignment is not None and w.assignment.version == cp.CONNECT_PROTOCOL_V2
            assert w.assignment.config_offset == CONFIG.offset
    g = c.group
    assert isinstance(g, ConnectGroup) and all(m.classic is None for m in g.members.values())
    assert set(c.runs()) == {"N1", "N2", "N3"} and all(c.runs().values())

    # -- downgrade: each new-protocol worker is replaced by a classic worker, one by one
    for n in ("1", "2", "3"):
        c.start_classic(f"W{n}")
        assert isinstance(c.group, ConnectGroup)
        at_rest_and_replayable(c)
        epoch = c.group.group_epoch
        c.stop(f"N{n}")
        if n != "3":
            assert isinstance(c.group, ConnectGroup)
        else:  # the last new-protocol worker left: back to a classic group
            g2 = c.group
            assert isinstance(g2, ClassicGroup) and g2.protocol_type == "connect"
            assert g2.generation_id == epoch  # the group epoch carries on as the generation
        at_rest_and_replayable(c)
        assert n != "3" or c.group.generation_id > epoch  # and the classic rebalance ran
    assert isinstance(c.group, ClassicGroup)
    assert set(c.runs()) == {"W1", "W2", "W3"} and all(c.runs().values())


def test_classic_workers_receive_assignments_in_their_protocol_version() -> None:
    for protocol, version in (("compatible", cp.CONNECT_PROTOCOL_V1),
                              ("eager", cp.CONNECT_PROTOCOL_V0)):
        c = classic_cluster(("W1", "W2"), protocol=protocol)
        leader = c.classic["W1"].leader_id
        c.start_new("N1")
        at_rest_and_replayable(c)
        assert isinstance(c.group, ConnectGroup)
        assert c.runs()["N1"], "the new worker took a share"
        for w in c.classic.values():
            a = w.assignment
            assert a is not None and a.version == version, protocol
            assert a.config_offset == CONFIG.offset
            # the leader the new-protocol assigner wrote in its header (no classic leader left)
            assert a.leader in ("N1", leader)
            assert items(w.running) == dict(c.group.members[w.member_id].assigned)
        c.stop("N1")
        assert isinstance(c.group, ClassicGroup)
        at_rest_and_replayable(c)


# ----------------------------------------------------------------------------- policies


def _join(shard: Shard, now: int, member: str = "N1") -> ConnectGroupHeartbeatResponse:
    r = shard.handle(ConnectGroupHeartbeatRequest(
        GROUP, member, 0, rebalance_timeout_ms=60_000,
        client_assignors=(ClientAssignor("incremental-cooperative", 1, 2, 0, 2, b""),)),
        now).response
    assert isinstance(r, ConnectGroupHeartbeatResponse)
    return r


def test_policy_disabled_refuses_the_upgrade() -> None:
    c = classic_cluster(policy="disabled")
    r = _join(c.h.shard, c.now)
    assert r.error_code == ErrorCode.group_id_not_found
    assert "group.connect.migration.policy=disabled" in (r.error_message or "")
    assert isinstance(c.group, ClassicGroup)
    at_rest_and_replayable(c)  # the classic group keeps working


def test_policy_downgrade_refuses_the_upgrade_but_downgrades() -> None:
    c = classic_cluster(("W1",), policy="downgrade")
    assert _join(c.h.shard, c.now).error_code == ErrorCode.group_id_not_found
    # A connect group that classic workers join (allowed whatever the policy) converts back.
    d = MixedCluster(CONFIG, coordinator=CoordinatorConfig(connect_migration_policy="downgrade"))
    d.start_new("N1")
    d.h.send(ConnectGroupConfigRequest(GROUP, tuple(
        ConnectorConfigOp("create", n, k) for n, k in CONFIG.connectors.items())))
    d.topic.latest = ConfigSnapshot(d.group.config.config_offset, CONFIG.connectors)
    d.start_classic("W1")
    at_rest_and_replayable(d)
    assert isinstance(d.group, ConnectGroup) and d.group.members[d.classic["W1"].member_id].classic
    d.stop("N1")
    assert isinstance(d.group, ClassicGroup)
    at_rest_and_replayable(d)


def test_policy_upgrade_keeps_the_connect_group_when_the_last_new_worker_leaves() -> None:
    c = classic_cluster(("W1", "W2"), policy="upgrade")
    c.start_new("N1")
    assert isinstance(c.group, ConnectGroup)
    at_rest_and_replayable(c)
    c.stop("N1")
    g = c.group
    assert isinstance(g, ConnectGroup) and all(m.classic is not None for m in g.members.values())
    # Nobody can compute a new target: N1's work stays unassigned, the rest keeps running.
    c.advance(30_000)
    assert isinstance(c.group, ConnectGroup)
    assert not c.everything_runs_once()
    held = {w.member_id: items(w.running) for w in c.classic.values()}
    assert held == {mid: dict(m.assigned) for mid, m in c.group.members.items()}
    assert replayed(c) == c.h.shard.state_digest()


def test_bidirectional_is_the_default_policy_and_the_name_is_configurable() -> None:
    assert CoordinatorConfig().connect_migration_policy == "bidirectional"
    cfg = CoordinatorConfig.from_properties({"group.connect.migration.policy": "Upgrade"})
    assert cfg.connect_migration_policy == "upgrade"
    with pytest.raises(CoordinatorError, match=r"group\.connect\.migration\.policy"):
        CoordinatorConfig(connect_migration_policy="sideways")


def test_a_classic_consumer_group_is_not_upgraded_by_a_connect_worker() -> None:
    h = Harness()
    call = h.join(group=GROUP, version=3)  # a classic consumer group
    h.advance(10_000)
    assert call.r.error_code == 0
    r = _join(h.shard, h.now)
    assert r.error_code == ErrorCode.group_id_not_found
    assert "not the Connect protocol" in (r.error_message or "")


# ----------------------------------------------------------------------------- pure conversion


def _worker_meta(version: int, url: str, offset: int, connectors: tuple[str, ...] = (),
                 tasks: tuple[tuple[str, int], ...] = ()) -> bytes:
    allocation = None
    if version > 0:
        allocation = cp.ConnectAssignment(version, 0, "L", "u", offset, connectors,
                                          tuple(cp.ConnectorTaskId(c, t) for c, t in tasks))
    return cp.encode_worker_metadata(cp.WorkerMetadata(version, url, offset, allocation))


def test_running_items_follow_the_worker_reaction_of_each_protocol() -> None:
    meta = cp.decode_worker_metadata(_worker_meta(1, "u", 5, ("A",), (("A", 0), ("A", 1))))
    a = cp.ConnectAssignment(1, 0, "L", "u", 5, ("B",), (cp.ConnectorTaskId("B", 0),), (),
                             (cp.ConnectorTaskId("A", 1),))
    # cooperative: allocation - revoked + newly assigned
    assert running_items(meta, a) == {("A", -1), ("A", 0), ("B", -1), ("B", 0)}
    # eager: the assignment is the complete set
    v0 = cp.ConnectAssignment(0, 0, "L", "u", 5, ("C",))
    assert running_items(None, v0) == {("C", -1)}
    # an eager worker reports nothing owned on a join; a cooperative one its allocation
    raw = _worker_meta(2, "u", 5, ("A",), (("A", 0),))
    assert owned_items("default", raw) == {}
    assert owned_items("sessioned", raw) == {"A": frozenset({-1, 0})}


def test_classic_to_connect_builds_config_from_what_runs_and_keeps_i1() -> None:
    g = ClassicGroup(GROUP, 0)
    for mid, conns, tasks in (("a", ("A",), (("A", 0), ("B", 2))), ("b", ("B",), (("B", 2),))):
        meta = _worker_meta(2, f"http://{mid}", 7)
        g.add(ClassicGroupMember(mid, None, mid, "h", 60_000, 10_000, "connect",
                                 (JoinGroupProtocol("sessioned", meta),)))
        g.members[mid].assignment = cp.encode_assignment(cp.ConnectAssignment(
            2, 0, "a", "http://a", 9, conns, tuple(cp.ConnectorTaskId(c, t) for c, t in tasks)))
    g.protocol_type, g.protocol_name, g.generation_id, g.leader_id = "connect", "sessioned", 4, "a"
    up = classic_to_connect(g)
    assert dict(up.connectors) == {"A": 1, "B": 3}  # task count = highest task number + 1
    assert up.config_offset == 9
    by_id = {m.member_id: m for m in up.members}
    assert by_id["a"].assigned == {"A": frozenset({-1, 0}), "B": frozenset({2})}
    assert by_id["b"].assigned == {"B": frozenset({-1})}  # B-2 stays with the first claimant
    assert all(m.member_epoch == 4 and m.url == f"http://{m.member_id}" for m in up.members)
    g.members["b"].assignment = b"\x00"
    with pytest.raises(MigrationError, match="member b"):
        classic_to_connect(g)
