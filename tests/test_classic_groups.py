"""Classic groups: JoinGroup / SyncGroup / Heartbeat / LeaveGroup rounds, rebalances, timeouts
(``coordinator/classic/handlers.py``), with deferred responses collected from Result.completions.
"""

from __future__ import annotations

from groupcoord.coordinator.classic.handlers import HEARTBEAT
from groupcoord.coordinator.classic.messages import (
    DescribeGroupsRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponseMember,
)
from groupcoord.coordinator.classic.model import ClassicGroupState
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import DeleteGroupsRequest, ListGroupsRequest
from groupcoord.coordinator.records import RecordType
from groupcoord.coordinator.result import DEFERRED

from .test_classic_support import REBALANCE_MS, SESSION_MS, E, Harness, protocols, subscription

S = ClassicGroupState


def test_one_member_round() -> None:
    h = Harness()
    first = h.join(client_id="app")
    assert first.r.error_code == E.member_id_required
    mid = first.r.member_id
    assert mid.startswith("app-")
    assert h.group().state is S.EMPTY and mid in h.group().pending_join_members

    join = h.join(mid, client_id="app")
    assert not join.done  # parked for group.initial.rebalance.delay.ms
    assert h.group().state is S.PREPARING_REBALANCE
    h.advance(2_999)
    assert not join.done
    h.advance(1)
    r = join.r
    assert (r.error_code, r.generation_id, r.leader, r.member_id) == (0, 1, mid, mid)
    assert (r.protocol_type, r.protocol_name, r.skip_assignment) == ("consumer", "range", False)
    assert r.members == (JoinGroupResponseMember(mid, None, subscription("foo")),)
    assert h.group().state is S.COMPLETING_REBALANCE

    sync = h.sync(mid, 1, {mid: b"assignment"})
    assert sync.r.error_code == 0 and sync.r.assignment == b"assignment"
    assert (sync.r.protocol_type, sync.r.protocol_name) == ("consumer", "range")
    assert h.group().state is S.STABLE
    assert h.heartbeat(mid, 1).error_code == 0
    # the generation is persisted with the leader's assignment
    last = h.records[-1]
    assert last.key.type is RecordType.CLASSIC_GROUP_METADATA
    assert last.value.generation == 1 and last.value.members[0].assignment == b"assignment"


def test_three_member_round_with_deferred_responses() -> None:
    h = Harness()
    joins = [h.join_new(client_id=f"c{i}") for i in range(3)]
    assert not any(j.done for j in joins)
    # every new member extends the initial delay once: 3 s, then 3 s more
    h.advance_to(3_000)
    assert not any(j.done for j in joins)
    h.advance_to(6_000)
    assert all(j.done for j in joins)
    rs = [j.r for j in joins]
    leader = rs[0].member_id
    assert {r.leader for r in rs} == {leader} and {r.generation_id for r in rs} == {1}
    assert [m.member_id for m in rs[0].members] == [r.member_id for r in rs]
    assert rs[1].members == () and rs[2].members == ()

    follower_syncs = [h.sync(r.member_id, 1) for r in rs[1:]]
    assert not any(s.done for s in follower_syncs)
    assignments = {r.member_id: f"A{i}".encode() for i, r in enumerate(rs)}
    leader_sync = h.sync(leader, 1, assignments)
    assert leader_sync.r.assignment == b"A0"
    assert [s.r.assignment for s in follower_syncs] == [b"A1", b"A2"]
    assert h.group().state is S.STABLE
    for r in rs:
        assert h.heartbeat(r.member_id, 1).error_code == 0


def test_protocol_is_selected_by_vote_among_common_protocols() -> None:
    h = Harness()
    a = h.join_new(names=("roundrobin", "range", "sticky"), client_id="a")
    b = h.join_new(names=("range", "roundrobin"), client_id="b")
    c = h.join_new(names=("range", "sticky", "roundrobin"), client_id="c")
    h.advance_until(lambda: a.done and b.done and c.done)
    assert {j.r.protocol_name for j in (a, b, c)} == {"range"}  # 2 votes against 1


def test_protocol_vote_tie_goes_to_the_smallest_name() -> None:
    h = Harness()
    a = h.join_new(names=("roundrobin", "range"), client_id="a")
    b = h.join_new(names=("range", "roundrobin"), client_id="b")
    h.advance_until(lambda: a.done and b.done)
    assert a.r.protocol_name == "range"


def test_rebalance_when_a_member_joins() -> None:
    h = Harness()
    rnd = h.form(2)
    new = h.join_new(client_id="late")
    assert not new.done
    assert h.group().state is S.PREPARING_REBALANCE
    for m in rnd.members:
        assert h.heartbeat(m, rnd.generation).error_code == E.rebalance_in_progress
    rejoins = [h.join(m) for m in rnd.members]
    assert all(j.done for j in [new, *rejoins])  # the last rejoin completes the join phase
    assert {j.r.generation_id for j in [new, *rejoins]} == {rnd.generation + 1}
    assert rejoins[0].r.leader == rnd.leader  # the leader rejoined: it stays leader
    h.complete_round([*rejoins, new])
    assert h.group().state is S.STABLE and len(h.group().members) == 3


def test_rebalance_when_a_member_leaves() -> None:
    h = Harness()
    rnd = h.form(3)
    gone = rnd.followers[0]
    resp = h.leave(gone)
    assert resp.error_code == 0 and [(m.member_id, m.error_code) for m in resp.members] == [(gone, 0)]
    assert h.group().state is S.PREPARING_REBALANCE
    stay = [m for m in rnd.members if m != gone]
    assert h.heartbeat(stay[0], rnd.generation).error_code == E.rebalance_in_progress
    rejoins = [h.join(m) for m in stay]
    assert all(j.done for j in rejoins)
    assert {j.r.generation_id for j in rejoins} == {rnd.generation + 1}
    h.complete_round(rejoins)
    assert sorted(h.group().members) == sorted(stay)
    assert h.heartbeat(gone, rnd.generation + 1).error_code == E.unknown_member_id


def test_last_member_leaving_empties_the_group() -> None:
    h = Harness()
    rnd = h.form(1)
    h.leave(rnd.leader)
    g = h.group()
    assert g.state is S.EMPTY and g.generation_id == rnd.generation + 1 and g.leader_id is None
    last = h.records[-1].value
    assert last.generation == rnd.generation + 1 and last.members == () and last.protocol_name is None


def test_session_expiry_removes_the_member_and_rebalances() -> None:
    h = Harness()
    rnd = h.form(2)
    alive, dead = rnd.members
    h.advance(SESSION_MS // 2)
    assert h.heartbeat(alive, rnd.generation).error_code == 0
    assert dead in h.group().members
    h.advance(SESSION_MS // 2)  # ``dead`` sent no heartbeat for a whole session timeout
    assert dead not in h.group().members
    assert h.group().state is S.PREPARING_REBALANCE
    assert h.heartbeat(alive, rnd.generation).error_code == E.rebalance_in_progress
    rejoin = h.join(alive)
    assert rejoin.r.generation_id == rnd.generation + 1 and rejoin.r.leader == alive


def test_join_timeout_removes_a_member_that_did_not_rejoin() -> None:
    h = Harness()
    rnd = h.form(3)
    slow = rnd.followers[1]
    rejoins = [h.join(m) for m in rnd.members if m != slow]  # the leader rejoins: rebalance
    assert not any(j.done for j in rejoins)
    # the slow member keeps heartbeating (told to rejoin) but never rejoins
    for _ in range(REBALANCE_MS // 5_000 - 1):
        h.advance(5_000)
        assert h.heartbeat(slow, rnd.generation).error_code == E.rebalance_in_progress
    h.advance(4_999)
    assert not any(j.done for j in rejoins)
    h.advance(1)
    assert all(j.r.generation_id == rnd.generation + 1 for j in rejoins)
    assert slow not in h.group().members
    assert h.heartbeat(slow, rnd.generation).error_code == E.unknown_member_id


def test_leader_that_does_not_rejoin_is_replaced() -> None:
    h = Harness()
    rnd = h.form(2)
    follower = rnd.followers[0]
    rejoin = h.join(follower, names=("range", "sticky"))  # new metadata: rebalance
    h.advance(REBALANCE_MS)
    assert rejoin.r.leader == follower and rejoin.r.members[0].member_id == follower


def test_sync_timeout_removes_members_that_did_not_sync() -> None:
    h = Harness()
    joins = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(j.done for j in joins))
    leader, other = joins[0].r.member_id, joins[1].r.member_id
    gen = joins[0].r.generation_id
    assert h.sync(leader, gen, {leader: b"L", other: b"O"}).r.assignment == b"L"
    assert h.group().state is S.STABLE
    for _ in range(REBALANCE_MS // 5_000 - 1):
        h.advance(5_000)
        assert h.heartbeat(leader, gen).error_code == 0
        assert h.heartbeat(other, gen).error_code == 0  # heartbeats, but never syncs
    h.advance(5_000)  # the sync deadline
    assert other not in h.group().members
    assert h.heartbeat(leader, gen).error_code == E.rebalance_in_progress


def test_pending_member_id_expires_after_the_session_timeout() -> None:
    h = Harness()
    first = h.join(client_id="x")
    mid = first.r.member_id
    h.advance(SESSION_MS)
    assert mid not in h.group().pending_join_members
    # still accepted as a brand-new member after that
    assert h.join(mid).r.error_code == E.unknown_member_id


def test_pending_member_blocks_the_join_phase_until_it_joins() -> None:
    h = Harness()
    rnd = h.form(1)
    pending = h.join(client_id="new").r.member_id  # MEMBER_ID_REQUIRED: no rebalance yet
    assert h.group().state is S.STABLE
    rejoin = h.join(rnd.leader)  # leader rejoins: rebalance; the pending member must come too
    assert not rejoin.done
    join = h.join(pending)
    assert rejoin.done and join.done and join.r.generation_id == rnd.generation + 1


def test_version_3_join_needs_no_member_id_round_trip() -> None:
    h = Harness()
    call = h.join(version=3, client_id="old")
    assert not call.done
    h.advance(3_000)
    assert call.r.error_code == 0 and call.r.member_id.startswith("old-")


def test_version_0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    h = Harness()
    h.join(version=0, session_ms=7_000, rebalance_ms=99_999)
    assert next(iter(h.group().members.values())).rebalance_timeout_ms == 7_000


def test_follower_rejoin_with_same_metadata_gets_the_current_generation() -> None:
    h = Harness()
    rnd = h.form(2)
    f = rnd.followers[0]
    again = h.join(f)
    assert again.r.error_code == 0 and again.r.generation_id == rnd.generation
    assert again.r.leader == rnd.leader and again.r.members == ()
    assert h.group().state is S.STABLE


def test_leader_rejoin_in_stable_group_rebalances() -> None:
    h = Harness()
    rnd = h.form(2)
    again = h.join(rnd.leader)
    assert not again.done and h.group().state is S.PREPARING_REBALANCE


def test_rejoin_while_completing_rebalance_with_same_metadata() -> None:
    h = Harness()
    joins = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(j.done for j in joins))
    leader = joins[0].r.member_id
    again = h.join(leader)  # a lost JoinGroup response
    assert again.r.generation_id == joins[0].r.generation_id and len(again.r.members) == 2
    assert h.group().state is S.COMPLETING_REBALANCE


def test_rebalance_during_completing_rebalance_fails_pending_syncs() -> None:
    h = Harness()
    joins = [h.join_new(client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(j.done for j in joins))
    follower = joins[1].r.member_id
    pending = h.sync(follower, joins[1].r.generation_id)
    assert not pending.done
    h.join(follower, names=("sticky",), protos=protocols("range", "sticky"))  # new metadata
    assert pending.r.error_code == E.rebalance_in_progress and pending.r.assignment == b""
    assert h.group().state is S.PREPARING_REBALANCE


def test_superseded_join_is_answered() -> None:
    h = Harness()
    rnd = h.form(2)
    first = h.join(rnd.leader)
    second = h.join(rnd.leader)
    assert first.r.error_code == E.rebalance_in_progress
    assert not second.done


def test_leave_group_v0_answers_with_the_member_error_at_top_level() -> None:
    h = Harness()
    rnd = h.form(1)
    assert h.leave("nobody", version=0).error_code == E.unknown_member_id
    assert h.leave(rnd.leader, version=0).error_code == 0


def test_leave_group_batch_with_admin_removal_by_instance_id() -> None:
    h = Harness()
    rnd = h.form(3, static=True)
    resp = h.leave(("", "i1"), (rnd.members[2], "i2"), ("", "nope"))
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in resp.members] == [
        ("", "i1", 0), (rnd.members[2], "i2", 0), ("", "nope", E.unknown_member_id)]
    assert list(h.group().members) == [rnd.members[0]]


def test_describe_groups() -> None:
    h = Harness()
    rnd = h.form(2)
    d = h.send(DescribeGroupsRequest(("g",))).r.groups[0]
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
        0, "Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.member_metadata, m.member_assignment) for m in d.members] \
        == [(m, f"c{i}", subscription("foo"), f"A:{m}".encode()) for i, m in enumerate(rnd.members)]
    h.join(rnd.leader)  # rebalance: no metadata, no protocol while not Stable
    d = h.send(DescribeGroupsRequest(("g",))).r.groups[0]
    assert (d.group_state, d.protocol_data) == ("PreparingRebalance", "")
    assert [m.member_metadata for m in d.members] == [b"", b""]
    assert [m.member_assignment for m in d.members] == [f"A:{m}".encode() for m in rnd.members]


def test_list_and_delete_classic_groups() -> None:
    h = Harness()
    rnd = h.form(1)
    listed = h.send(ListGroupsRequest()).r.groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("g", "consumer", "Stable", "classic")]
    assert h.send(DeleteGroupsRequest(("g",))).r.results[0].error_code == E.non_empty_group
    h.leave(rnd.leader)
    assert h.send(DeleteGroupsRequest(("g",))).r.results[0].error_code == 0
    assert "g" not in h.shard.groups
    assert h.records[-1].key.type is RecordType.CLASSIC_GROUP_METADATA and h.records[-1].value is None
    assert h.rebuild().state_digest() == h.shard.state_digest()


def test_group_timers_are_cancelled_on_delete() -> None:
    h = Harness()
    pending = h.join(client_id="x").r.member_id
    h.send(DeleteGroupsRequest(("g",)))
    assert ("classic-heartbeat", "g", pending) not in h.shard.timers


def test_initial_rebalance_delay_is_configurable() -> None:
    h = Harness(CoordinatorConfig(classic_initial_rebalance_delay_ms=0))
    join = h.join_new()
    assert not join.done
    h.advance(0)
    assert join.r.generation_id == 1


def test_initial_delay_never_exceeds_the_rebalance_timeout() -> None:
    h = Harness()
    calls = [h.join_new(client_id="c0", rebalance_ms=5_000)]
    for i in range(1, 6):  # a new member every 2.5 s keeps extending the delay
        h.advance(2_500)
        if calls[0].done:
            break
        calls.append(h.join_new(client_id=f"c{i}", rebalance_ms=5_000))
    h.advance_until(lambda: calls[0].done)
    assert h.now <= 6_000


def test_new_member_that_never_completes_its_join_expires() -> None:
    h = Harness()
    rnd = h.form(1)
    new = h.join_new(client_id="new")  # rebalance starts; the leader never rejoins
    assert h.group().state is S.PREPARING_REBALANCE
    h.advance(REBALANCE_MS)  # join phase ends with the new member only
    assert new.r.generation_id == rnd.generation + 1 and new.r.leader == new.r.member_id
    assert rnd.leader not in h.group().members


def test_deferred_join_is_answered_in_a_later_result() -> None:
    shard = Harness().shard
    req = JoinGroupRequest("g", SESSION_MS, protocol_type="consumer",
                           protocols=(JoinGroupProtocol("range", b""),),
                           rebalance_timeout_ms=REBALANCE_MS, version=3)
    res = shard.handle(req, 0, "tok")
    assert res.response is DEFERRED and res.completions == []
    [later] = shard.expire_timers(3_000)
    assert [tok for tok, _ in later.completions] == ["tok"]
    assert later.completions[0][1].generation_id == 1


def test_a_session_renewed_by_a_join_phase_completed_at_its_old_deadline_does_not_expire() -> None:
    """The silent leader's session expires at the instant the followers' old deadlines fall
    due too; its removal completes the join phase, which renews every member's session: the
    followers' old deadlines must not fire after that (they were expiring the members of the
    new generation before their SyncGroup; sim seed 17516 of classic-connect:sessioned)."""
    h = Harness()
    rnd = h.form(3)
    silent = rnd.leader
    assert all(h.shard.timers.deadline((HEARTBEAT, "g", m)) == h.now + SESSION_MS for m in rnd.members)
    h.advance(SESSION_MS // 2)
    newcomer = h.join_new(client_id="c3")  # the group rebalances
    rejoins = [h.join(m) for m in rnd.followers]
    assert h.group().state is S.PREPARING_REBALANCE and not any(j.done for j in rejoins)
    h.advance(SESSION_MS // 2)  # the silent leader expires; everyone else has rejoined
    assert silent not in h.group().members
    assert all(j.done and j.r.error_code == 0 for j in [*rejoins, newcomer])
    assert h.group().state is S.COMPLETING_REBALANCE
    assert set(h.group().members) == {*rnd.followers, newcomer.r.member_id}
