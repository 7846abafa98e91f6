"""The sans-IO Connect worker on the new protocol (``client/connect/worker.py``), driven against
a real in-process shard (``connect_support.Cluster``).

The KIP-415 scenarios ("Deferred Resolution of Imbalance under
Different Rebalancing Scenarios": worker joins, leaves, bounces; leader leaves, bounces) plus
connectors added and removed, with the Incremental Cooperative (``sessioned``) and Eager
assignors. The configuration is the KIP's: AC0, AT1, AT2, BC0, BT1. After every request the
driver asserts that no connector or task is run by two workers (I1 on the workers' side; a start
of something another worker runs fails at once); each test asserts what every worker runs.

Where the new protocol's outcome differs from the KIP's tables, the test says why. In short:
the coordinator chooses the assigner (the previous one while it stays, else the next worker in
member-id order), it keeps a departed worker's target entry (so a new assigner knows the work is
lost, not new), and the assignor balances connectors and tasks separately (``assignors.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.client.connect.worker import (
    EAGER,
    INCREMENTAL_COOPERATIVE,
    ConnectWorker,
)
from groupcoord.client.consumer import ClientMemberState
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentRequest,
    ConnectHeartbeatAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
)
from groupcoord.protocol.connect_protocol import decode_assignment
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, ErrorCode

from .connect_support import DELAY, Cluster

_E = ErrorCode

#: The KIP's starting point under each assignor (W1 joined alone, then W2 and W3 together).
START = {
    # KIP-415 "Non-first new member joins", final table.
    "sessioned": {"W1": ["AC0", "AT1"], "W2": ["AT2", "BC0"], "W3": ["BT1"]},
    # Eager: members sorted, connectors A, B dealt W1, W2, then AT1, AT2, BT1 dealt W3, W1, W2.
    "eager": {"W1": ["AC0", "AT2"], "W2": ["BC0", "BT1"], "W3": ["AT1"]},
}


def kip_config(c: Cluster) -> None:
    c.configure(("create", "A", 2), ("create", "B", 1))


def three(protocol: str) -> Cluster:
    """W1 joins alone and runs everything; W2 and W3 join together (the KIP's "Worker joins")."""
    c = Cluster(protocol=protocol)
    kip_config(c)
    c.start("W1")
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"]}
    c.start("W2")
    c.start("W3")
    c.advance(20_000)
    assert c.running() == START[protocol]
    assert c.stable()
    return c


def no_one_runs(c: Cluster, *names: str) -> bool:
    running = {n for items in c.running().values() for n in items}
    return not running & set(names)


# ============================================================================ worker joins


def test_first_worker_joins_and_runs_everything() -> None:
    """KIP: "W1 joins with assignment: [] ... W1(delay: 0, assigned: [AC0, AT1, AT2, BC0, BT1])"."""
    c = Cluster()
    kip_config(c)
    w1 = c.start("W1")
    c.advance(1)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"]}
    assert c.runners["W1"].events == [("assigned", ["AC0", "AT1", "AT2", "BC0", "BT1"])]
    # W1 was chosen, prepared and installed; its epoch is the group's; interval from the response.
    assert (w1.stats["prepares"], w1.stats["installed"]) == (1, 1)
    assert w1.member_epoch == c.describe().group_epoch == 1
    assert w1.heartbeat_interval_ms == 5_000
    header = w1.assignment_header
    assert header is not None and (header.leader, header.delay, header.config_offset) == ("W1", 0, 1)
    # Heartbeats after the join are partial: nothing unchanged is resent.
    c.advance(5_000)
    last = [r for _, wid, r in c.requests if wid == "W1"][-1]
    assert isinstance(last, ConnectGroupHeartbeatRequest) and last.member_epoch == 1
    assert (last.client_assignors, last.url, last.connectors_and_tasks) == (None, None, None)


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_worker_joins(protocol: str) -> None:
    """KIP "Non-first new member joins": W1 revokes [AT2, BC0, BT1] first, and only once they are
    stopped do W2 and W3 start them (revoke, acknowledge, then assign)."""
    c = three(protocol)
    events = {wid: r.events for wid, r in c.runners.items()}
    if protocol == "sessioned":
        assert events == {
            "W1": [("assigned", ["AC0", "AT1", "AT2", "BC0", "BT1"]),
                   ("revoked", ["AT2", "BC0", "BT1"])],
            "W2": [("assigned", ["AT2", "BC0"])],
            "W3": [("assigned", ["BT1"])],
        }
    else:
        assert events == {
            "W1": [("assigned", ["AC0", "AT1", "AT2", "BC0", "BT1"]),
                   ("revoked", ["AT1", "BC0", "BT1"])],
            "W2": [("assigned", ["BC0", "BT1"])],
            "W3": [("assigned", ["AT1"])],
        }
    assert c.describe().assignor_name == (INCREMENTAL_COOPERATIVE if protocol == "sessioned"
                                           else EAGER)
    assert c.checks > 0


# ============================================================================ worker leaves


def test_worker_leaves_incremental_cooperative() -> None:
    """KIP "Worker leaves": W2's work waits for the delay d, then goes to the remaining workers.

    The KIP gives BC0 to W1 and AT2 to W3; connectors and tasks are balanced separately, so BC0
    goes to the worker with fewer connectors (W3) and AT2 to the one with fewer tasks (a tie
    broken by id: W1). Both end with the KIP's counts (three and two)."""
    c = three("sessioned")
    t0 = c.now
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1"], "W2": [], "W3": ["BT1"]}
    assert c.describe().scheduled_rebalance_delay_ms == DELAY
    c.run_until(t0 + DELAY - 1)  # not before d
    assert no_one_runs(c, "AT2", "BC0")
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W2": [], "W3": ["BC0", "BT1"]}
    # The follow-up round was asked for by the assigner through its assignor's reason.
    assert c.workers["W1"].reason == 1 and c.workers["W1"].stats["reason_bumps"] == 1
    assert c.describe().scheduled_rebalance_delay_ms == 0 and c.stable()


def test_assigner_whose_install_answer_is_lost_still_triggers_the_follow_up() -> None:
    """"Worker leaves" where W1's Install (with the delay d) is applied by the coordinator but its
    answer is lost: W1 times the request out and drops the round, then learns the installed
    target from a heartbeat. Its header names W1 as leader with delay d, so W1 still owns the
    follow-up: it bumps its reason when d expires and W2's lost work is reassigned."""
    c = three("sessioned")
    w1 = c.workers["W1"]
    w1.request_timeout_ms = 5_000  # the lost answer is timed out well before d expires
    installed = w1.stats["installed"]
    c.lose_install_answer.add("W1")
    t0 = c.now
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    c.lose_install_answer.clear()
    assert w1.stats["installed"] == installed and w1.stats["assign_failures"] == 1
    assert c.describe().scheduled_rebalance_delay_ms == DELAY
    header = w1.assignment_header
    assert header is not None and (header.leader, header.delay) == ("W1", DELAY)
    assert c.running() == {"W1": ["AC0", "AT1"], "W2": [], "W3": ["BT1"]}
    c.run_until(t0 + DELAY - 1)
    assert no_one_runs(c, "AT2", "BC0") and w1.stats["reason_bumps"] == 0
    c.advance(20_000)
    assert w1.stats["reason_bumps"] == 1
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W2": [], "W3": ["BC0", "BT1"]}
    assert c.describe().scheduled_rebalance_delay_ms == 0 and c.stable()


def test_worker_leaves_eager() -> None:
    """Eager has no delay: the next round deals everything round-robin over W1 and W3."""
    c = three("eager")
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "BT1"], "W2": [], "W3": ["AT2", "BC0"]}
    assert c.stable()


# ============================================================================ worker bounces


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_worker_bounces_within_the_delay(protocol: str) -> None:
    """KIP "Worker bounces": W2 leaves and comes back (a new process, nothing running) before d.
    Incremental Cooperative: W2 stays empty for the remaining delay d', then gets its work back -
    the KIP's final table. Eager: everything is dealt again at once, back to the eager table."""
    c = three(protocol)
    t0 = c.now
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    c.start("W2")
    c.advance(5_000)
    if protocol == "eager":
        c.settle_until(c.stable)
    else:
        assert c.running() == {"W1": ["AC0", "AT1"], "W2": [], "W3": ["BT1"]}
        g = c.describe()
        assert 0 < g.scheduled_rebalance_delay_ms < DELAY  # d', the remaining delay
        c.run_until(t0 + DELAY - 1)
        assert no_one_runs(c, "AT2", "BC0")
        c.advance(15_000)
    assert c.running() == START[protocol]
    assert c.stable()


def test_worker_bounces_beyond_the_delay_after_a_crash() -> None:
    """W2 crashes (no leave): the coordinator removes it at its session timeout, the delay runs,
    the lost work goes to W1 and W3. W2 comes back after that: a load-balancing revocation gives
    it W1's highest task (AT2); nothing runs twice on the way."""
    c = three("sessioned")
    t0 = c.now
    c.crash("W2")
    c.run_until(t0 + 45_000 + DELAY + 10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W3": ["BC0", "BT1"]}
    c.start("W2")
    c.advance(20_000)
    assert c.running() == {"W1": ["AC0", "AT1"], "W2": ["AT2"], "W3": ["BC0", "BT1"]}
    assert c.runners["W1"].events[-1] == ("revoked", ["AT2"])
    assert c.stable()


# ============================================================================ leader leaves / bounces


def test_leader_leaves_incremental_cooperative() -> None:
    """KIP "Leader leaves". Two differences on the new protocol, both deliberate: the coordinator
    chooses the next assigner (W2, the next worker after W1; the KIP names W3), and the new
    assigner knows W1's work is lost - the coordinator keeps W1's target entry and Prepare lists
    it as departed - so it honours the delay as for any worker leaving (the KIP's new leader
    "has no way of deciding whether unaccounted tasks are new or lost" and assigns at once).
    After d: AC0 to the worker with fewer connectors (W3), AT1 to W2 (tasks tie, by id)."""
    c = three("sessioned")
    t0 = c.now
    c.workers["W1"].leave(c.now)
    c.advance(10_000)
    assert c.running() == {"W1": [], "W2": ["AT2", "BC0"], "W3": ["BT1"]}
    assert c.workers["W2"].stats["installed"] == 1  # W2 took over the assigner's duties
    c.run_until(t0 + DELAY - 1)
    assert no_one_runs(c, "AC0", "AT1")
    c.advance(15_000)
    assert c.running() == {"W1": [], "W2": ["AT1", "AT2", "BC0"], "W3": ["AC0", "BT1"]}
    assert c.stable()


def test_leader_leaves_eager() -> None:
    c = three("eager")
    c.workers["W1"].leave(c.now)
    c.advance(10_000)
    assert c.running() == {"W1": [], "W2": ["AC0", "AT1", "BT1"], "W3": ["AT2", "BC0"]}
    assert c.stable()


def test_leader_bounces_incremental_cooperative() -> None:
    """KIP "Leader bounces", with its final table exactly: W2 leaves (delay d); W2 comes back
    (d'); W1, the leader, leaves; the new assigner (W2 here, W3 in the KIP) honours the delay in
    progress (it learnt it from its last assignment's metadata) and holds all unaccounted work;
    W1 comes back; at the end of the delay the lost work is dealt to the workers that were empty
    during it, W2 then W1: W1 [AT2, BC0], W2 [AC0, AT1], W3 [BT1]."""
    c = three("sessioned")
    t0 = c.now
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    c.start("W2")
    c.advance(5_000)
    c.workers["W1"].leave(c.now)
    c.advance(5_000)
    assert c.running() == {"W1": [], "W2": [], "W3": ["BT1"]}
    assert 0 < c.describe().scheduled_rebalance_delay_ms < DELAY  # d''
    c.start("W1")
    c.advance(5_000)
    assert c.running() == {"W1": [], "W2": [], "W3": ["BT1"]}
    c.run_until(t0 + DELAY - 1)
    assert no_one_runs(c, "AC0", "AT1", "AT2", "BC0")
    c.advance(15_000)
    assert c.running() == {"W1": ["AT2", "BC0"], "W2": ["AC0", "AT1"], "W3": ["BT1"]}
    assert c.workers["W2"].stats["reason_bumps"] == 1
    assert c.stable()


def test_leader_bounces_eager() -> None:
    c = three("eager")
    c.workers["W2"].leave(c.now)
    c.advance(10_000)
    c.start("W2")
    c.advance(5_000)
    c.workers["W1"].leave(c.now)
    c.settle_until(c.stable)
    assert c.running() == {"W1": [], "W2": ["AC0", "AT1", "BT1"], "W3": ["AT2", "BC0"]}
    c.start("W1")
    c.settle_until(c.stable)
    assert c.running() == START["eager"]
    assert c.stable()


# ============================================================================ connectors


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_connector_added_then_removed(protocol: str) -> None:
    """The configuration changes at the coordinator (ConnectGroupConfig): the group epoch bumps and
    the assigner places the new work / drops the deleted work, learning the configuration from
    Prepare. Adding C (3 tasks): CC0 to the worker without a connector, one task each (both
    assignors agree here). Deleting A: its items stop; Incremental Cooperative moves nothing else
    (still balanced), Eager deals B, C and their tasks again."""
    c = three(protocol)
    c.configure(("create", "C", 3))
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "CT1"], "W2": ["AT2", "BC0", "CT2"],
                           "W3": ["BT1", "CC0", "CT3"]}
    offset = c.describe().config_offset
    assert all(w.assignment_header is not None and w.assignment_header.config_offset == offset
               for w in c.workers.values())
    c.configure(("delete", "A"))
    c.advance(10_000)
    if protocol == "sessioned":
        assert c.running() == {"W1": ["CT1"], "W2": ["BC0", "CT2"], "W3": ["BT1", "CC0", "CT3"]}
    else:
        assert c.running() == {"W1": ["BC0", "CT1"], "W2": ["CC0", "CT2"], "W3": ["BT1", "CT3"]}
    assert c.stable()


# ============================================================================ fencing, errors, leave


@pytest.mark.parametrize("code", [_E.unknown_member_id, _E.fenced_member_epoch])
def test_fencing_loses_everything_and_rejoins_at_epoch_0(code: int) -> None:
    c = three("sessioned")
    w3 = c.workers["W3"]
    assert w3.poll_request(c.now + 5_000) is not None  # a heartbeat in flight
    assert w3.on_response(ConnectGroupHeartbeatResponse(error_code=code), c.now + 5_000)
    assert c.runners["W3"].events[-1] == ("lost", ["BT1"])
    assert w3.state is ClientMemberState.JOINING and w3.member_epoch == 0 and w3.running.is_empty()
    req = w3.poll_request(c.now + 6_000)
    assert isinstance(req, ConnectGroupHeartbeatRequest)
    assert req.member_id == "W3" and req.member_epoch == 0
    assert req.client_assignors and req.url == "http://w3:8083"


def test_partitioned_worker_is_removed_then_fenced_and_gets_its_work_back() -> None:
    """W2 is cut off (still running its work) past its session timeout: the coordinator removes
    it. Back, its heartbeat gets UNKNOWN_MEMBER_ID: it abandons everything (on_lost) and rejoins at
    epoch 0 as an empty worker, which the delay in progress hands the lost work back to."""
    c = three("sessioned")
    t0 = c.now
    c.down.add("W2")  # partitioned, not crashed: its runner keeps running AT2, BC0
    c.run_until(t0 + 50_000)
    assert "W2" not in [m.member_id for m in c.describe().members]
    c.down.discard("W2")
    c.advance(1)
    assert c.runners["W2"].events[-1] == ("lost", ["AT2", "BC0"])
    rejoin = [r for _, wid, r in c.requests if wid == "W2"][-3:]
    assert any(isinstance(r, ConnectGroupHeartbeatRequest) and r.member_epoch == 0 for r in rejoin)
    c.run_until(t0 + 45_000 + DELAY + 10_000)
    assert c.running() == START["sessioned"]
    assert c.stable()


def test_fatal_error_stops_the_worker() -> None:
    w = ConnectWorker("g", member_id="W1", url="http://w1:8083")
    w.join(0)
    assert w.poll_request(0) is not None
    w.on_response(ConnectGroupHeartbeatResponse(
        member_id="W1", member_epoch=1, heartbeat_interval_ms=5_000,
        assignment=ConnectHeartbeatAssignment(0, ConnectorsAndTasks(("A",), (ConnectorTaskId("A", 0),)))), 0)
    assert w.running.connectors == ("A",)
    assert w.poll_request(0) is not None  # acknowledges the assignment at once
    w.on_response(ConnectGroupHeartbeatResponse(error_code=_E.unsupported_assignor,
                                                error_message="no common range"), 1)
    assert w.state is ClientMemberState.FATAL and w.fatal_error == (_E.unsupported_assignor,
                                                              "no common range")
    assert w.running.is_empty() and w.poll_request(10_000) is None and w.next_deadline() is None


def test_leave_revokes_then_sends_epoch_minus_1() -> None:
    c = three("sessioned")
    c.workers["W3"].leave(c.now)
    c.advance(1)
    assert c.runners["W3"].events[-1] == ("revoked", ["BT1"])
    last = [r for _, wid, r in c.requests if wid == "W3"][-1]
    assert isinstance(last, ConnectGroupHeartbeatRequest) and last.member_epoch == -1
    assert c.workers["W3"].state is ClientMemberState.UNJOINED


def test_static_worker_restart_takes_its_work_over_without_a_delay() -> None:
    """A static worker (instance id) leaves with epoch -2; its restart under a new member id and
    the same instance id takes over its target at once."""
    c = Cluster()
    kip_config(c)
    c.start("W1")
    c.advance(10_000)
    c.start("W2", instance_id="worker-2")
    c.advance(20_000)
    before = c.running()["W2"]
    assert before
    c.workers["W2"].leave(c.now)
    c.advance(1)
    last = [r for _, wid, r in c.requests if wid == "W2"][-1]
    assert isinstance(last, ConnectGroupHeartbeatRequest)
    assert (last.member_epoch, last.instance_id) == (-2, "worker-2")
    c.crash("W2")
    c.start("W2b", instance_id="worker-2")
    c.advance(10_000)
    assert c.running()["W2b"] == before
    assert c.describe().scheduled_rebalance_delay_ms == 0


def test_deferred_revocation_keeps_the_work_until_it_completes() -> None:
    """``on_revoked`` may return DEFER: the worker keeps running and reporting the items until
    ``complete_revocation``; the new owner starts them only after that."""
    c = Cluster()
    kip_config(c)
    w1 = c.start("W1")
    c.advance(10_000)
    c.runners["W1"].defer = True
    c.start("W2")
    c.advance(10_000)
    assert c.runners["W1"].stopping and w1.state is ClientMemberState.RECONCILING
    assert c.running() == {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"], "W2": []}
    c.runners["W1"].complete()
    c.advance(10_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}
    assert c.stable()


# ============================================================================ assigner duties


def test_assigner_that_never_installs_is_replaced_after_its_rebalance_timeout() -> None:
    """W1 is the assigner; its Prepare/Install requests are lost from now on. W3 joins: W1 is
    asked, never installs; after W1's rebalance timeout the coordinator chooses W2, which computes
    from the Prepare (no leader state of its own: seeded from the workers' targets)."""
    c = Cluster()
    kip_config(c)
    c.start("W1")
    c.advance(10_000)
    c.start("W2")
    c.advance(20_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}
    c.mute_assigner.add("W1")
    t0 = c.now
    c.start("W3")
    c.advance(10_000)
    assert c.describe().assigner == "W1"
    assert any(isinstance(r, ConnectGroupPrepareAssignmentRequest)
               for t, wid, r in c.requests if wid == "W1" and t >= t0)
    assert c.running()["W3"] == []
    c.advance(40_000)
    assert c.workers["W2"].stats["installed"] == 1
    assert not any(isinstance(r, ConnectGroupPrepareAssignmentRequest)
                   for _, wid, r in c.requests if wid == "W3")
    running = c.running()
    assert sorted(n for items in running.values() for n in items) == ["AC0", "AT1", "AT2", "BC0",
                                                                         "BT1"]
    assert running["W3"] and c.stable()


def test_assignment_errors_drop_the_round_until_the_coordinator_asks_again() -> None:
    """Prepare answered UNKNOWN_MEMBER_ID (no computation wanted from this worker) and Install
    answered INVALID_ASSIGNMENT (it names a group epoch the coordinator did not hand out): the
    worker drops the round and computes again only when a heartbeat response asks it to."""
    c = Cluster()
    kip_config(c)
    w1 = c.start("W1")
    c.advance(10_000)
    w1._compute_wanted = True  # as if told in a heartbeat response
    prep = w1.poll_request(c.now)
    assert isinstance(prep, ConnectGroupPrepareAssignmentRequest)
    resp = c.shard.handle(prep, c.now).response
    assert resp.error_code == _E.unknown_member_id
    w1.on_response(resp, c.now)
    assert w1.stats["assign_failures"] == 1 and w1.poll_request(c.now) is None

    c.start("W2")
    c.pump()  # W2 joined; W1 hears about the new epoch at its next heartbeat
    c.now += 5_000
    hb = w1.poll_request(c.now)
    assert isinstance(hb, ConnectGroupHeartbeatRequest)
    hb_resp = c.shard.handle(hb, c.now).response
    assert hb_resp.should_compute_assignment
    w1.on_response(hb_resp, c.now)
    prep = w1.poll_request(c.now)
    assert isinstance(prep, ConnectGroupPrepareAssignmentRequest)
    w1.on_response(c.shard.handle(prep, c.now).response, c.now)
    install = w1.poll_request(c.now)
    assert isinstance(install, ConnectGroupInstallAssignmentRequest)
    stale = dataclasses.replace(install, group_epoch=install.group_epoch - 1)
    resp = c.shard.handle(stale, c.now).response
    assert resp.error_code == INVALID_ASSIGNMENT
    w1.on_response(resp, c.now)
    assert w1.stats["assign_failures"] == 2 and w1.poll_request(c.now) is None
    assert c.describe().assigner == "W1"  # still wanted: asked again at the next heartbeat
    c.advance(20_000)
    assert c.running() == {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}
    assert w1.stats["installed"] == 2 and c.stable()


def test_mixed_protocols_choose_the_common_assignor_and_the_covering_worker() -> None:
    """``compatible`` ([1-1]) and ``sessioned`` ([1-2]) workers: incremental-cooperative, computed
    by the sessioned worker (its range covers the other's) at version 1. An ``eager``-only worker
    joining makes the group eager (the only assignor every worker supports)."""
    c = Cluster()
    kip_config(c)
    c.start("W1", protocol="compatible")
    c.advance(10_000)
    c.start("W2", protocol="sessioned")
    c.advance(20_000)
    g = c.describe()
    assert g.assignor_name == INCREMENTAL_COOPERATIVE
    last = [r for _, wid, r in c.requests if isinstance(r, ConnectGroupInstallAssignmentRequest)][-1]
    assert last.member_id == "W2"
    assert {m.metadata_version for m in last.members} == {1}
    assert decode_assignment(last.members[0].metadata_bytes).leader == "W2"
    c.start("W3", protocol="eager")
    c.advance(20_000)
    assert c.describe().assignor_name == EAGER
    assert c.running() == {"W1": ["AC0", "AT2"], "W2": ["BC0", "BT1"], "W3": ["AT1"]}
    assert c.stable()
