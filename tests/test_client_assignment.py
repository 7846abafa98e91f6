"""Client-side assignment (modern/client_assignment.py), for connect and consumer groups: assignor and
worker selection by version range, the fatal group error, the assigner's deadline and
re-selection, the Prepare/Install request checks in the spec's order, INVALID_ASSIGNMENT,
an assignor error, the "computed for epoch X" rule, reason/metadata bumps, static replacement and
fail-over mid-computation, and a consumer group assigned end to end by one of its members.
"""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.coordinator.modern.client_assignment import (
    check_assignors,
    choose_assignor,
    qualifying_members,
)
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupDescribeRequest,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentRequest,
    ConnectInstalledMember,
)
from groupcoord.coordinator.modern.connect.model import ConnectGroupMember
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    InstalledMember,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.records import ClientAssignor
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, CoordinatorError, ErrorCode

from .support import Client, image, names, owned, topic_id
from .test_connect_group import (
    Connect,
    assert_replay_equivalent,
    assignors,
    ct,
    rebuild,
    tables,
)
from .test_connect_group import names as cnames

_E = ErrorCode


def ca(name: str, lo: int, hi: int, reason: int = 0, metadata: bytes = b"") -> ClientAssignor:
    return ClientAssignor(name, lo, hi, reason, hi, metadata)


def members(**ranges: tuple[int, int]) -> dict[str, ConnectGroupMember]:
    return {mid: ConnectGroupMember(mid, client_assignors=(ca("x", lo, hi),), member_epoch=1)
            for mid, (lo, hi) in ranges.items()}


# ============================================================================ selection rules


def test_assignor_precedence() -> None:
    a, b, c = ca("a", 0, 1), ca("b", 0, 1), ca("c", 0, 1)
    assert choose_assignor([[a, b], [a, b]]) == "a"
    assert choose_assignor([[b, a], [b, a, c]]) == "b"
    # Members disagree: the smallest sum of positions wins (b: 1+0+0, a: 0+1+1).
    assert choose_assignor([[a, b], [b, a], [b, a]]) == "b"
    assert choose_assignor([[a, b], [b, a]]) == "a"  # a tie: by name
    assert choose_assignor([[a], [b]]) is None
    assert choose_assignor([[a], []]) is None
    assert choose_assignor([]) is None


def test_the_member_covering_every_range_is_chosen() -> None:
    assert qualifying_members(members(A=(1, 5), B=(3, 4), C=(2, 4)), "x") == ["A"]
    assert qualifying_members(members(A=(1, 3), B=(2, 5)), "x") == []
    assert qualifying_members(members(A=(0, 2), B=(0, 2), C=(1, 2)), "x") == ["A", "B"]


def test_admission_needs_a_common_assignor_and_overlapping_ranges() -> None:
    group = members(A=(1, 3), B=(2, 5))
    check_assignors(group, ("N",), (ca("x", 3, 3),))
    check_assignors(group, ("A",), (ca("x", 4, 9),))  # its own old range does not count
    with pytest.raises(CoordinatorError) as e:
        check_assignors(group, ("N",), (ca("x", 4, 9),))
    assert e.value.code == _E.unsupported_assignor and "[1-3]" in e.value.message
    with pytest.raises(CoordinatorError) as e:
        check_assignors(group, ("N",), (ca("y", 0, 9),))
    assert e.value.code == _E.unsupported_assignor and "supported by every member" in e.value.message


def test_worker_selection_a15_b34_c24_picks_a() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    # C joins first and is chosen; B joins ([3-4] inside C's [2-4]): C stays.
    assert c.heartbeat("C", 0, client_assignors=assignors(2, 4)).should_compute_assignment
    assert not c.heartbeat("B", 0, client_assignors=assignors(3, 4)).should_compute_assignment
    assert c.heartbeat("C", 0, client_assignors=assignors(2, 4)).should_compute_assignment
    # A [1-5] joins: only A covers A[1-5], B[3-4], C[2-4].
    assert c.heartbeat("A", 0, client_assignors=assignors(1, 5)).should_compute_assignment
    assert not c.heartbeat("C", 0, client_assignors=assignors(2, 4)).should_compute_assignment
    assert c.prepare("C", 0).error_code == _E.unknown_member_id
    p = c.prepare("A", 0)
    assert p.error_code == 0 and p.group_epoch == 3
    assert [(m.member_id, m.assignor.version) for m in p.members] == [("A", 5), ("B", 4), ("C", 4)]


def test_no_covering_member_is_a_fatal_group_error_until_ranges_change() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    assert c.heartbeat("W1", 0, client_assignors=assignors(1, 3)).should_compute_assignment
    r = c.heartbeat("W2", 0, client_assignors=assignors(2, 5))
    assert r.error_code == _E.unsupported_assignor
    assert "W1 [1-3]" in (r.error_message or "") and "W2 [2-5]" in (r.error_message or "")
    g = c.shard.groups["g"]
    assert sorted(g.members) == ["W1", "W2"]  # the join counted
    r = c.heartbeat("W1", 0, client_assignors=assignors(1, 3))
    assert r.error_code == _E.unsupported_assignor
    assert c.prepare("W1", 0).error_code == _E.unknown_member_id
    (d,) = c.handle(ConnectGroupDescribeRequest(("g",))).groups
    assert d.group_state == "Assigning" and d.assigner is None
    # W1 upgrades: [1-5] covers W2's [2-5]; the group works again.
    r = c.heartbeat("W1", 0, client_assignors=assignors(1, 5))
    assert r.error_code == 0 and r.should_compute_assignment
    assert_replay_equivalent(c)


def test_fatal_error_clears_when_the_odd_worker_leaves() -> None:
    c = Connect(Shard())
    c.heartbeat("W1", 0, client_assignors=assignors(1, 3))
    c.heartbeat("W2", 0, client_assignors=assignors(2, 5))
    assert c.heartbeat("W2", -1).error_code == 0
    r = c.heartbeat("W1", 0, client_assignors=assignors(1, 3))
    assert r.error_code == 0 and r.should_compute_assignment


def test_unsupported_assignor_on_join_writes_nothing() -> None:
    c = Connect(Shard())
    c.heartbeat("W1", 0, client_assignors=assignors(0, 1))
    before = c.shard.state_digest()
    n = len(c.records)
    r = c.heartbeat("W2", 0, client_assignors=assignors(2, 3))
    assert r.error_code == _E.unsupported_assignor and "does not overlap" in (r.error_message or "")
    r = c.heartbeat("W2", 0, client_assignors=assignors(0, 1, name="eager"))
    assert r.error_code == _E.unsupported_assignor
    assert len(c.records) == n and c.shard.state_digest() == before
    # A later heartbeat that changes the ranges is checked too.
    r = c.heartbeat("W1", 0, client_assignors=assignors(5, 6))
    assert r.error_code == 0  # alone: nothing to overlap with
    c.heartbeat("W2", 0, client_assignors=assignors(5, 5))
    r = c.heartbeat("W2", 0, client_assignors=assignors(0, 1))
    assert r.error_code == _E.unsupported_assignor


def test_the_previous_assigner_is_preferred() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    assert c.heartbeat("W2", 0).should_compute_assignment
    c.prepare("W2", 0)
    c.install("W2", 0, 1, {"W2": ["AC0", "AT1"]})
    c.heartbeat("W2", 0, owned=[])
    assert not c.heartbeat("W1", 0).should_compute_assignment  # W1 sorts first, W2 stays
    assert c.heartbeat("W2", 1).should_compute_assignment


# ============================================================================ deadline


def _three_stable() -> Connect:
    c = Connect(Shard())
    c.configure(("create", "A", 2))
    for mid in ("W1", "W2", "W3"):
        c.heartbeat(mid, 0)
    assert c.heartbeat("W1", 0).should_compute_assignment
    c.prepare("W1", 0)
    c.install("W1", 0, 3, {"W1": ["AC0"], "W2": ["AT1"], "W3": ["AT2"]})
    for mid in ("W1", "W2", "W3"):
        assert c.heartbeat(mid, 0, owned=[]).member_epoch == 3
    return c


def test_an_assigner_that_does_not_install_in_time_is_replaced_not_fenced() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))  # epoch 4: W1 is asked
    assert c.heartbeat("W1", 3).should_compute_assignment
    assert c.prepare("W1", 3).error_code == 0
    c.advance(20_000)
    assert c.heartbeat("W1", 3).should_compute_assignment  # still W1: its deadline is 30 s
    c.heartbeat("W2", 3)
    c.heartbeat("W3", 3)
    c.advance(10_000)  # 30 s since W1 was told
    g = c.shard.groups["g"]
    assert "W1" in g.members and g.members["W1"].member_epoch == 3  # not fenced
    assert not c.heartbeat("W1", 3).should_compute_assignment
    assert c.install("W1", 3, 4, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]}).error_code \
        == _E.unknown_member_id
    assert c.heartbeat("W2", 3).should_compute_assignment
    p = c.prepare("W2", 3)
    assert p.group_epoch == 4
    assert c.install("W2", 3, 4, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]}).error_code == 0
    assert c.heartbeat("W1", 3).member_epoch == 4
    # The deadline timer is gone once the target is installed.
    assert ("connect-assignment", "g") not in c.shard.timers


def test_a_single_candidate_that_times_out_is_asked_again() -> None:
    c = Connect(Shard())
    c.heartbeat("W1", 0, rebalance_timeout_ms=5_000)
    assert c.heartbeat("W1", 0).should_compute_assignment
    c.advance(5_000)
    d = c.shard.connect.client.assigner("g")
    assert d == "W1"
    assert c.heartbeat("W1", 0).should_compute_assignment
    assert ("connect-assignment", "g") in c.shard.timers


def test_assigner_leaving_passes_the_computation_on() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))
    assert c.heartbeat("W1", 3).should_compute_assignment
    c.prepare("W1", 3)
    c.heartbeat("W1", -1)
    assert c.heartbeat("W2", 3).should_compute_assignment
    p = c.prepare("W2", 3)
    assert p.group_epoch == 5 and [d.member_id for d in p.departed_members] == ["W1"]


# ============================================================================ request checks


def test_prepare_and_install_checks_in_the_spec_order_connect() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))
    c.heartbeat("W1", 3)

    def prepare(gid: str, mid: str, epoch: int) -> int:
        return int(c.handle(ConnectGroupPrepareAssignmentRequest(gid, mid, epoch)).error_code)

    def install(gid: str, mid: str, epoch: int) -> int:
        return int(c.handle(ConnectGroupInstallAssignmentRequest(gid, mid, epoch, 4)).error_code)

    for call in (prepare, install):
        assert call("", "W1", 3) == _E.invalid_request
        assert call("g", "", 3) == _E.invalid_request
        assert call("g", "W1", -1) == _E.invalid_request
        assert call("nope", "W1", 3) == _E.group_id_not_found
        assert call("g", "W9", 99) == _E.unknown_member_id  # unknown member before its epoch
        assert call("g", "W1", 2) == _E.fenced_member_epoch  # connect: the draft's code
        assert call("g", "W2", 2) == _E.fenced_member_epoch  # epoch before "the chosen one"
        assert call("g", "W2", 3) == _E.unknown_member_id  # not the chosen member
    assert "W1" in c.shard.groups["g"].members  # FENCED here removes nobody
    assert install("g", "W1", 3) == INVALID_ASSIGNMENT  # no Prepare yet
    assert prepare("g", "W1", 3) == 0
    r = c.handle(ConnectGroupInstallAssignmentRequest("g", "W1", 3, 4, 0, (), -1))
    assert r.error_code == _E.invalid_request


def test_prepare_and_install_checks_consumer_stale_member_epoch() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0, client_assignors=assignors())
    r = c.handle(ConsumerGroupPrepareAssignmentRequest("g", "A", 1))
    assert r.error_code == _E.stale_member_epoch
    r = c.handle(ConsumerGroupInstallAssignmentRequest("g", "A", 1, 1))
    assert r.error_code == _E.stale_member_epoch
    r = c.handle(ConsumerGroupPrepareAssignmentRequest("g", "B", 0))
    assert r.error_code == _E.unknown_member_id
    Connect(shard, group_id="w").heartbeat("W1", 0)
    r = c.handle(ConsumerGroupPrepareAssignmentRequest("w", "W1", 0))
    assert r.error_code == _E.group_id_not_found


# ============================================================================ INVALID_ASSIGNMENT


def _asked(c: Connect) -> None:
    c.configure(("create", "A", 1))
    c.heartbeat("W1", 0)
    c.heartbeat("W2", 0)
    assert c.heartbeat("W1", 0).should_compute_assignment
    assert c.prepare("W1", 0).group_epoch == 2


@pytest.mark.parametrize(("targets", "kw", "fragment"), [
    ({"W1": ["AC0", "AT1"], "W2": ["AT1"]}, {}, "more than once (to W1 and W2)"),
    ({"W1": ["AC0", "AT1", "AT1"], "W2": []}, {}, "more than once (to W1 and W1)"),
    ({"W1": ["AC0", "AT1"], "W3": []}, {}, "'W3' was not a member of the group at epoch 2"),
    ({"W1": ["AC0", "AT1", "BC0"], "W2": []}, {}, "connector B assigned to W1 did not exist"),
    ({"W1": ["AC0", "AT2"], "W2": []}, {}, "task A-1 assigned to W1 did not exist"),
    ({"W1": ["AC0"], "W2": []}, {}, "are not assigned: task A-0"),
    ({"W1": ["AC0"], "W2": ["AC0"]}, {"delay": 5_000}, "more than once"),  # delay: still once
])
def test_invalid_assignments_are_rejected_and_change_nothing(
        targets: dict[str, list[str]], kw: dict[str, Any], fragment: str) -> None:
    c = Connect(Shard())
    _asked(c)
    before = c.shard.state_digest()
    n = len(c.records)
    r = c.install("W1", 0, 2, targets, **kw)
    assert r.error_code == INVALID_ASSIGNMENT
    assert fragment in (r.error_message or ""), r.error_message
    assert len(c.records) == n and c.shard.state_digest() == before
    # The assigner is still the chosen one and can install a valid target.
    assert c.install("W1", 0, 2, {"W1": ["AC0"], "W2": ["AT1"]}).error_code == 0


def test_member_listed_twice_and_wrong_group_epoch() -> None:
    c = Connect(Shard())
    _asked(c)
    r = c.handle(ConnectGroupInstallAssignmentRequest("g", "W1", 0, 2, 0, (
        ConnectInstalledMember("W1", ct("AC0")), ConnectInstalledMember("W1", ct("AT1")))))
    assert r.error_code == INVALID_ASSIGNMENT and "appears twice" in (r.error_message or "")
    r = c.install("W1", 0, 1, {"W1": ["AC0"], "W2": ["AT1"]})
    assert r.error_code == INVALID_ASSIGNMENT and "handed out epoch 2" in (r.error_message or "")


def test_missing_items_are_allowed_with_a_delay() -> None:
    c = Connect(Shard())
    _asked(c)
    assert c.install("W1", 0, 2, {"W1": ["AC0"]}, delay=1_000).error_code == 0
    g = c.shard.groups["g"]
    assert g.assignment_epoch == 2 and g.scheduled_rebalance_delay_ms == 1_000
    assert cnames(g.target_of("W2").items) == []  # a snapshot member not listed: empty target


# ============================================================================ error, epoch X


def test_an_assignor_error_keeps_the_target_until_the_next_bump() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))
    assert c.heartbeat("W1", 3).should_compute_assignment
    c.prepare("W1", 3)
    before = tables(c.shard)
    assert c.install("W1", 3, 4, {}, error=1).error_code == 0
    g = c.shard.groups["g"]
    assert tables(c.shard) == before and g.assignment_epoch == 3 and g.assignment_error == 1
    assert not c.heartbeat("W1", 3).should_compute_assignment  # no loop on the same epoch
    # A member changes its reason (or metadata): a new epoch, a new computation.
    r = c.heartbeat("W2", 3, client_assignors=assignors(reason=1))
    assert g.group_epoch == 5 and not r.should_compute_assignment
    assert c.heartbeat("W1", 3).should_compute_assignment
    c.prepare("W1", 3)
    assert c.install("W1", 3, 5, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]}).error_code == 0
    assert g.assignment_error == 0 and g.assignment_epoch == 5
    assert_replay_equivalent(c)


def test_a_target_computed_for_epoch_x_installs_as_x_and_is_recomputed() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))  # epoch 4
    assert c.heartbeat("W1", 3).should_compute_assignment
    p = c.prepare("W1", 3)
    assert p.group_epoch == 4
    c.heartbeat("W3", -1)  # epoch 5 while W1 computes
    c.heartbeat("W4", 0)  # epoch 6
    r = c.install("W1", 3, 4, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]})
    assert r.error_code == 0
    g = c.shard.groups["g"]
    assert (g.group_epoch, g.assignment_epoch) == (6, 4)
    # W3 left after the snapshot: its entry is kept (the next assignor sees AT2 as lost).
    assert cnames(g.target_of("W3").items) == ["AT2"]
    assert "W4" not in g.target_assignment
    # A new computation is asked for at once, of the same assigner.
    assert c.heartbeat("W1", 3).should_compute_assignment
    p = c.prepare("W1", 4)
    assert p.group_epoch == 6 and [d.member_id for d in p.departed_members] == ["W3"]
    assert_replay_equivalent(c)


@pytest.mark.parametrize("change", ["reason", "metadata", "version_range", "same"])
def test_assignor_reason_or_metadata_changes_bump_the_epoch(change: str) -> None:
    c = _three_stable()
    g = c.shard.groups["g"]
    new = {"reason": assignors(reason=2), "metadata": assignors(metadata=b"lag=3"),
           "version_range": assignors(0, 3), "same": assignors()}[change]
    r = c.heartbeat("W2", 3, client_assignors=new)
    assert r.error_code == 0
    assert g.group_epoch == (3 if change == "same" else 4)


def test_static_member_replaced_during_the_computation_gets_its_entry() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    c.heartbeat("W1", 0)
    c.heartbeat("W2", 0, instance_id="i2")
    c.heartbeat("W1", 0)
    c.prepare("W1", 0)
    c.install("W1", 0, 2, {"W1": ["AC0"], "W2": ["AT1"]})
    c.heartbeat("W1", 0, owned=[])
    c.heartbeat("W2", 0, owned=[], instance_id="i2")
    c.heartbeat("W3", 0)  # epoch 3
    assert c.heartbeat("W1", 2).should_compute_assignment
    c.prepare("W1", 2)
    c.heartbeat("W2", -2, instance_id="i2")
    assert c.heartbeat("W2b", 0, instance_id="i2").error_code == 0  # replaces W2, no bump
    r = c.install("W1", 2, 3, {"W1": ["AC0"], "W2": [], "W3": ["AT1"]})
    assert r.error_code == 0
    g = c.shard.groups["g"]
    assert "W2" not in g.target_assignment and cnames(g.target_of("W2b").items) == []
    assert cnames(g.target_of("W3").items) == ["AT1"]
    assert_replay_equivalent(c)


def test_failover_mid_computation_asks_again() -> None:
    c = _three_stable()
    c.configure(("create", "B", 0))
    c.heartbeat("W1", 3)
    c.prepare("W1", 3)
    replica = rebuild(c.records)
    replica.on_loaded(c.now)
    c2 = Connect(replica, now=c.now)
    r = c2.install("W1", 3, 4, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]})
    assert r.error_code == INVALID_ASSIGNMENT and "prepare again" in (r.error_message or "")
    assert c2.heartbeat("W1", 3).should_compute_assignment
    c2.prepare("W1", 3)
    assert c2.install("W1", 3, 4, {"W1": ["AC0", "BC0"], "W2": ["AT1"], "W3": ["AT2"]}).error_code == 0


# ============================================================================ consumer groups


CA = (ca("custom", 0, 1),)


def _prepare(c: Client, mid: str, epoch: int) -> ConsumerGroupPrepareAssignmentResponse:
    r = c.handle(ConsumerGroupPrepareAssignmentRequest("g", mid, epoch))
    assert isinstance(r, ConsumerGroupPrepareAssignmentResponse)
    return r


def _install(c: Client, mid: str, epoch: int, group_epoch: int, targets: dict[str, list[str]],
             error: int = 0) -> ConsumerGroupInstallAssignmentResponse:
    r = c.handle(ConsumerGroupInstallAssignmentRequest("g", mid, epoch, group_epoch, error, tuple(
        InstalledMember(m, owned(*tps), 1, b"meta") for m, tps in targets.items())))
    assert isinstance(r, ConsumerGroupInstallAssignmentResponse)
    return r


def _parts(r: Any) -> list[str]:
    a = {tp.topic_id: frozenset(tp.partitions) for tp in r.assignment.topic_partitions}
    return names(a, c_image)


c_image = image(foo=4)


def test_consumer_group_assigned_by_a_member_end_to_end() -> None:
    shard = Shard(metadata=c_image)
    c = Client(shard)
    r = c.heartbeat("A", 0, client_assignors=CA)
    assert r.error_code == 0 and r.member_epoch == 0 and r.should_compute_assignment
    g = shard.groups["g"]
    assert isinstance(g, ConsumerGroup) and (g.group_epoch, g.assignment_epoch) == (1, 0)
    p = _prepare(c, "A", 0)
    assert p.error_code == 0 and p.assignor_name == "custom" and p.group_epoch == 1
    assert [(t.topic_name, t.num_partitions) for t in p.topics] == [("foo", 4)]
    (m,) = p.members
    assert m.subscribed_topic_ids == (topic_id("foo"),) and m.topic_partitions == ()
    assert _install(c, "A", 0, 1, {"A": ["foo-0", "foo-1", "foo-2", "foo-3"]}).error_code == 0
    r = c.heartbeat("A", 0)
    assert r.member_epoch == 1 and _parts(r) == ["foo-0", "foo-1", "foo-2", "foo-3"]

    # B joins: A computes the new target; A revokes, then B gets its partitions.
    r = c.heartbeat("B", 0, client_assignors=CA)
    assert r.member_epoch == 1 and not r.should_compute_assignment
    r = c.heartbeat("A", 1)
    assert r.should_compute_assignment
    p = _prepare(c, "A", 1)
    assert [(x.member_id, x.member_epoch) for x in p.members] == [("A", 1), ("B", 1)]
    assert [tp.partitions for tp in p.members[0].topic_partitions] == [(0, 1, 2, 3)]
    assert _install(c, "A", 1, 2, {"A": ["foo-0", "foo-1"], "B": ["foo-2", "foo-3"]}).error_code == 0
    r = c.heartbeat("B", 1)
    assert r.member_epoch == 2 and r.assignment is None  # foo-2, foo-3 not released yet
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2", "foo-3"])
    assert r.member_epoch == 1 and _parts(r) == ["foo-0", "foo-1"]
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 2 and not r.should_compute_assignment
    r = c.heartbeat("B", 2)
    assert _parts(r) == ["foo-2", "foo-3"]
    assert g.state().value == "Stable"
    (d,) = c.handle(ConsumerGroupDescribeRequest(("g",))).groups
    assert d.assignor_name == "custom"

    # A member without client assignors joins: the group falls back to its server assignor.
    r = c.heartbeat("C", 0)
    assert r.error_code == 0 and (g.group_epoch, g.assignment_epoch) == (3, 3)
    assert _prepare(c, "A", 2).error_code == _E.unknown_member_id
    (d,) = c.handle(ConsumerGroupDescribeRequest(("g",))).groups
    assert d.assignor_name == "uniform"
    replica = Shard(metadata=c_image)
    for rec in c.records:
        replica.replay(rec)
    assert replica.state_digest() == shard.state_digest()


def test_consumer_install_validation() -> None:
    shard = Shard(metadata=image(foo=2, bar=1))
    c = Client(shard)
    c.heartbeat("A", 0, client_assignors=CA, topics=["foo"])
    c.heartbeat("B", 0, client_assignors=CA, topics=["bar"])
    assert c.heartbeat("A", 0, client_assignors=CA, topics=["foo"]).should_compute_assignment
    p = _prepare(c, "A", 0)
    assert p.group_epoch == 2 and [t.topic_name for t in p.topics] == ["bar", "foo"]
    r = _install(c, "A", 0, 2, {"A": ["foo-0", "foo-1"], "B": []})
    assert r.error_code == INVALID_ASSIGNMENT and "bar-0" in (r.error_message or "")
    r = _install(c, "A", 0, 2, {"A": ["foo-0", "bar-0"], "B": ["foo-1"]})
    assert r.error_code == INVALID_ASSIGNMENT and "does not subscribe" in (r.error_message or "")
    r = _install(c, "A", 0, 2, {"A": ["foo-0", "foo-1", "foo-2"], "B": ["bar-0"]})
    assert r.error_code == INVALID_ASSIGNMENT and "foo-2" in (r.error_message or "")
    assert _install(c, "A", 0, 2, {"A": ["foo-0", "foo-1"], "B": ["bar-0"]}).error_code == 0
    g = shard.groups["g"]
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)


def test_consumer_unsupported_assignor_and_reason_bump() -> None:
    shard = Shard(metadata=c_image)
    c = Client(shard)
    c.heartbeat("A", 0, client_assignors=(ca("custom", 0, 1),))
    r = c.heartbeat("B", 0, client_assignors=(ca("custom", 2, 3),))
    assert r.error_code == _E.unsupported_assignor
    r = c.heartbeat("B", 0, client_assignors=(ca("other", 0, 1),))
    assert r.error_code == _E.unsupported_assignor
    g = shard.groups["g"]
    assert sorted(g.members) == ["A"] and g.group_epoch == 1
    c.heartbeat("A", 0, client_assignors=(ca("custom", 0, 1, reason=1),))
    assert g.group_epoch == 2


def test_consumer_assigner_deadline_and_fatal_error() -> None:
    shard = Shard(metadata=c_image)
    c = Client(shard)
    c.heartbeat("A", 0, client_assignors=(ca("custom", 1, 3),), rebalance_timeout_ms=10_000)
    r = c.heartbeat("B", 0, client_assignors=(ca("custom", 2, 5),))
    assert r.error_code == _E.unsupported_assignor  # neither covers the other: fatal
    r = c.heartbeat("B", 0, client_assignors=(ca("custom", 1, 5),))  # B now covers A
    assert r.error_code == 0 and r.should_compute_assignment
    c.advance(30_000)  # B's rebalance timeout: B is the only candidate, asked again
    assert c.heartbeat("A", 0, client_assignors=(ca("custom", 1, 3),)).should_compute_assignment \
        is False
    assert c.heartbeat("B", 0, client_assignors=(ca("custom", 1, 5),)).should_compute_assignment


def test_a_group_whose_members_all_left_temporarily_waits() -> None:
    c = Connect(Shard())
    c.configure(("create", "A", 1))
    c.heartbeat("W1", 0, instance_id="i1")
    c.prepare("W1", 0)
    c.install("W1", 0, 1, {"W1": ["AC0", "AT1"]})
    c.heartbeat("W1", 0, owned=[], instance_id="i1")
    c.heartbeat("W1", -2, instance_id="i1")
    c.configure(("update", "A", 2))  # the group has a member (away): epoch 2
    g = c.shard.groups["g"]
    assert g.group_epoch == 2 and c.shard.connect.client.fatal(g) is None
    r = c.heartbeat("W1b", 0, instance_id="i1")
    assert r.error_code == 0 and r.member_epoch == 1 and r.should_compute_assignment
