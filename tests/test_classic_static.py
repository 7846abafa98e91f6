"""Static membership on classic groups (group.instance.id, JoinGroup v5+) and KIP-814: a static
member rejoining with an unknown member id replaces its old id without a rebalance; JoinGroup
v9+ tells a rejoining static leader it leads (SkipAssignment) with every member's metadata.
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.classic.messages import JoinGroupProtocol, JoinGroupResponseMember
from groupcoord.coordinator.classic.model import ClassicGroupState
from groupcoord.protocol.consumer_protocol import encode_subscription

from .test_classic_support import REBALANCE_MS, E, Harness, Round, protocols, subscription

S = ClassicGroupState


def subscription_v3(*topics: str, owned: dict[str, list[int]], generation: int) -> bytes:
    return encode_subscription(topics, owned_partitions=owned, generation_id=generation)


def stable_static_group(n: int = 3, version: int = 9) -> tuple[Harness, Round]:
    h = Harness()
    rnd = h.form(n, static=True, version=version)
    assert h.group().state is S.STABLE
    return h, rnd


def assert_no_rebalance(h: Harness, rnd: Round, members: list[str]) -> None:
    g = h.group()
    assert g.state is S.STABLE and g.generation_id == rnd.generation
    for m in members:
        assert h.heartbeat(m, rnd.generation, instance=rnd.instances.get(m)).error_code == 0


def test_static_members_join_without_member_id_required() -> None:
    h = Harness()
    call = h.join(instance="i0", client_id="c0")
    assert not call.done  # no MEMBER_ID_REQUIRED round trip for static members
    h.advance(3_000)
    assert call.r.member_id.startswith("i0-")  # upstream prefixes with the instance id


def test_static_follower_replaced_without_rebalance_and_old_id_fenced() -> None:
    h, rnd = stable_static_group()
    old = rnd.followers[0]
    iid = rnd.instances[old]
    again = h.join(instance=iid, client_id="restarted")
    r = again.r
    new = r.member_id
    assert new != old and r.error_code == 0
    assert (r.generation_id, r.leader, r.members, r.skip_assignment) == (
        rnd.generation, rnd.leader, (), False)
    assert list(h.group().members) == [new if m == old else m for m in rnd.members]
    # the new id collects the old id's assignment; nobody else notices
    sync = h.sync(new, rnd.generation, instance=iid)
    assert sync.r.assignment == f"A:{old}".encode()
    others = [m for m in rnd.members if m != old]
    assert_no_rebalance(h, rnd, others)
    # the old member id is fenced everywhere
    assert h.heartbeat(old, rnd.generation, instance=iid).error_code == E.fenced_instance_id
    assert h.sync(old, rnd.generation, instance=iid).r.error_code == E.fenced_instance_id
    assert h.join(old, instance=iid).r.error_code == E.fenced_instance_id
    assert h.leave((old, iid)).members[0].error_code == E.fenced_instance_id
    assert h.group().static_members[iid] == new


def test_kip814_static_leader_bounce_v9_skips_assignment() -> None:
    version = 9
    h, rnd = stable_static_group(version=version)
    old_leader = rnd.leader
    iid = rnd.instances[old_leader]
    again = h.join(instance=iid, client_id="restarted", version=version)
    r = again.r  # answered at once: no rebalance
    new_leader = r.member_id
    assert r.error_code == 0 and new_leader != old_leader
    assert r.skip_assignment is True
    assert r.leader == new_leader
    assert r.generation_id == rnd.generation and r.protocol_name == "range"
    expected = [new_leader if m == old_leader else m for m in rnd.members]
    assert r.members == tuple(JoinGroupResponseMember(m, f"i{i}", subscription("foo"))
                              for i, m in enumerate(expected))
    assert h.group().leader_id == new_leader
    # no rebalance: generation unchanged, the other members unaffected
    assert_no_rebalance(h, rnd, rnd.followers)
    # the leader's SyncGroup without assignments returns its stored assignment
    sync = h.sync(new_leader, rnd.generation, {}, instance=iid)
    assert sync.r.error_code == 0 and sync.r.assignment == f"A:{old_leader}".encode()
    assert h.group().state is S.STABLE
    for f in rnd.followers:
        assert h.sync(f, rnd.generation, instance=rnd.instances[f]).r.assignment == f"A:{f}".encode()
    assert h.heartbeat(old_leader, rnd.generation, instance=iid).error_code == E.fenced_instance_id
    # the replacement is persisted: a failover keeps the new leader and its assignment
    last = h.records[-1].value
    assert last.leader == new_leader and last.generation == rnd.generation
    h.fail_over()
    assert h.group().leader_id == new_leader
    assert h.sync(new_leader, rnd.generation, instance=iid).r.assignment == f"A:{old_leader}".encode()


@pytest.mark.parametrize("version", [5, 8])
def test_kip814_static_leader_bounce_before_v9_keeps_old_behaviour(version: int) -> None:
    h, rnd = stable_static_group(version=version)
    old_leader = rnd.leader
    iid = rnd.instances[old_leader]
    r = h.join(instance=iid, version=version).r
    new_leader = r.member_id
    assert r.error_code == 0 and r.skip_assignment is False
    assert r.leader == old_leader  # the old leader id: the client acts as a follower
    assert r.members == ()
    assert r.generation_id == rnd.generation
    assert h.group().leader_id == new_leader  # the coordinator knows better
    assert_no_rebalance(h, rnd, rnd.followers)
    sync = h.sync(new_leader, rnd.generation, instance=iid)
    assert sync.r.assignment == f"A:{old_leader}".encode()


def test_static_rejoin_changing_the_selected_protocol_rebalances() -> None:
    h, rnd = stable_static_group(2)
    f = rnd.followers[0]
    iid = rnd.instances[f]
    # "sticky" first now, but the other member supports only "range": "range" stays selected
    same = h.join(instance=iid, protos=protocols("sticky", "range"))
    assert same.r.generation_id == rnd.generation and h.group().state is S.STABLE
    # alone in its group, a member now preferring "sticky" changes the selected protocol:
    # a rebalance (which completes at once, every member having joined)
    h2, rnd2 = stable_static_group(1)
    call = h2.join(instance=rnd2.instances[rnd2.leader], protos=protocols("sticky", "range"))
    assert call.r.generation_id == rnd2.generation + 1 and call.r.protocol_name == "sticky"
    assert call.r.skip_assignment is False and len(call.r.members) == 1
    assert h2.group().state is S.COMPLETING_REBALANCE


def test_static_rejoin_with_other_topics_rebalances() -> None:
    # The former incarnation's assignment has partitions of "foo", no longer subscribed to:
    # handed over, the member would rejoin with the same metadata forever (the leader never
    # saw the new subscription). Same topics, other owned partitions: no rebalance (KIP-345).
    h, rnd = stable_static_group(2)
    f = rnd.followers[0]
    iid = rnd.instances[f]
    same = h.join(instance=iid, protos=(JoinGroupProtocol("range", subscription_v3(
        "foo", owned={"foo": [0]}, generation=rnd.generation)),))
    assert same.r.generation_id == rnd.generation and h.group().state is S.STABLE
    other = h.join(instance=iid, protos=protocols("range", topics=("bar",)))
    assert not other.done and h.group().state is S.PREPARING_REBALANCE
    assert list(h.group().static_members) == list(rnd.instances.values())


def test_static_rejoin_while_completing_rebalance_rebalances() -> None:
    h = Harness()
    joins = [h.join(instance=f"i{i}", client_id=f"c{i}") for i in range(2)]
    h.advance_until(lambda: all(j.done for j in joins))
    pending_sync = h.sync(joins[1].r.member_id, joins[1].r.generation_id, instance="i1")
    again = h.join(instance="i1")
    assert pending_sync.r.error_code == E.fenced_instance_id  # the old id's SyncGroup
    assert not again.done and h.group().state is S.PREPARING_REBALANCE


def test_static_rejoin_while_preparing_rebalance_fences_the_parked_join() -> None:
    h, rnd = stable_static_group(2)
    h.join(rnd.leader, instance=rnd.instances[rnd.leader])  # the leader starts a rebalance
    f = rnd.followers[0]
    parked = h.join(f, instance=rnd.instances[f])
    assert parked.done  # everyone rejoined
    h2, rnd2 = stable_static_group(2)
    first = h2.join(rnd2.leader, instance=rnd2.instances[rnd2.leader])
    assert not first.done
    replacement = h2.join(instance=rnd2.instances[rnd2.leader])
    assert first.r.error_code == E.fenced_instance_id and first.r.member_id == rnd2.leader
    assert not replacement.done  # waits for the follower, as the old id did
    follower = h2.join(rnd2.followers[0], instance=rnd2.instances[rnd2.followers[0]])
    assert replacement.r.generation_id == follower.r.generation_id == rnd2.generation + 1
    assert replacement.r.leader == replacement.r.member_id


def test_static_member_that_does_not_rejoin_is_kept() -> None:
    h, rnd = stable_static_group(2)
    quiet = rnd.followers[0]
    iid = rnd.instances[quiet]
    rejoin = h.join(rnd.leader, instance=rnd.instances[rnd.leader])  # rebalance
    for _ in range(REBALANCE_MS // 5_000):
        h.advance(5_000)
        h.heartbeat(quiet, rnd.generation, instance=iid)
    # the join phase ended without the static member, which stays in the group
    assert rejoin.r.generation_id == rnd.generation + 1
    assert quiet in h.group().members
    assert h.heartbeat(quiet, rnd.generation, instance=iid).error_code == E.illegal_generation


def test_static_leave_by_instance_id_rebalances() -> None:
    h, rnd = stable_static_group(2)
    f = rnd.followers[0]
    assert h.leave(("", rnd.instances[f])).members[0].error_code == 0
    assert h.group().state is S.PREPARING_REBALANCE
    assert rnd.instances[f] not in h.group().static_members


def test_static_rejoin_with_an_unreadable_subscription_keeps_the_generation() -> None:
    # Metadata that is not a ConsumerProtocolSubscription cannot tell its topics: as upstream,
    # only the selected protocol decides, and it does not change.
    h, rnd = stable_static_group(2)
    iid = rnd.instances[rnd.followers[0]]
    back = h.join(instance=iid, protos=(JoinGroupProtocol("range", b"\xff\xff not a subscription"),))
    assert back.r.error_code == E.none and back.r.generation_id == rnd.generation
    assert h.group().state is S.STABLE
