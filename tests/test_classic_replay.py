"""Classic group records and replay (invariant I4): the classic group metadata record round-trips
through the codec, a shard rebuilt from its log digests equal to the live one after every step
of a sequence of classic operations, and a failover resumes from the last persisted generation.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from groupcoord.coordinator.classic.model import ClassicGroupState
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.records import (
    ClassicGroupMemberMetadata,
    ClassicGroupMetadataValue,
    Record,
    RecordType,
    classic_group_metadata_record,
    classic_group_metadata_tombstone,
)
from groupcoord.coordinator.shard import Shard

from .support import image
from .test_classic_support import SESSION_MS, E, Harness, protocols

S = ClassicGroupState


def test_classic_record_round_trip() -> None:
    value = ClassicGroupMetadataValue("consumer", 7, "range", "m1", 123, (
        ClassicGroupMemberMetadata("m1", "i1", "c1", "/h", 30_000, 10_000, b"\x00\x01sub", b"a1"),
        ClassicGroupMemberMetadata("m2", None, "c2", "/h", -1, 10_000, None, b""),
    ))
    rec = classic_group_metadata_record("g", value)
    key, raw = rec.encode()
    back = Record.decode(key, raw)
    assert back == rec and back.key.type is RecordType.CLASSIC_GROUP_METADATA
    assert back.encode() == (key, raw)
    tomb = classic_group_metadata_tombstone("g")
    assert tomb.encode()[0] == key and Record.decode(key, None) == tomb


def test_replayed_record_builds_a_stable_group() -> None:
    shard = Shard()
    shard.replay(classic_group_metadata_record("g", ClassicGroupMetadataValue(
        "consumer", 3, "range", "m2", 5, (
            ClassicGroupMemberMetadata("m1", None, "c", "/h", -1, 9_000, b"s1", b"a1"),
            ClassicGroupMemberMetadata("m2", "i2", "c", "/h", 20_000, 9_000, b"s2", b"a2")))))
    g = shard.groups["g"]
    assert g.state_name() == "Stable" and g.group_type == "classic"
    assert g.generation_id == 3 and g.leader_id == "m2" and g.static_members == {"i2": "m2"}
    assert g.members["m1"].rebalance_timeout_ms == 9_000  # -1: the session timeout
    assert [m.assignment for m in g.members.values()] == [b"a1", b"a2"]


def test_classic_record_for_a_consumer_group_is_rejected() -> None:
    shard = Shard()
    shard.handle(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=("foo",), topic_partitions=()), 0)
    with pytest.raises(ValueError, match="classic group record for consumer group"):
        shard.replay(classic_group_metadata_record("g", ClassicGroupMetadataValue(
            "consumer", 1, None, None, 0)))


def test_replay_equivalence_after_every_step() -> None:
    h = Harness(metadata=image(foo=4))
    state: dict[str, object] = {}

    def form() -> None:
        h.form(3, static=True)

    def dynamic_joins() -> None:
        state["dyn"] = h.join_new(client_id="dyn", names=("range",))

    def rejoin_all() -> None:
        g = h.group()
        joins = [h.join(mid, instance=m.instance_id) for mid, m in list(g.members.items())
                 if m.awaiting_join is None]
        dyn = state["dyn"]
        h.advance_until(lambda: dyn.done and all(j.done for j in joins))  # type: ignore[attr-defined]
        h.complete_round([*joins, dyn])  # type: ignore[list-item]
        assert len(h.group().members) == 4

    def kip814_bounce() -> None:
        g = h.group()
        r = h.join(instance=g.members[g.leader_id].instance_id, client_id="bounced").r
        assert r.skip_assignment

    def follower_bounce() -> None:
        g = h.group()
        follower = next(m for mid, m in g.members.items() if mid != g.leader_id)
        assert h.join(instance=follower.instance_id).r.error_code == 0

    def commit() -> None:
        g = h.group()
        h.send(OffsetCommitRequest("g", (OffsetCommitTopic("foo", (OffsetCommitPartition(0, 9),)),),
                                   g.generation_id, next(iter(g.members)),
                                   g.members[next(iter(g.members))].instance_id))

    def expire_everyone() -> None:
        h.advance(SESSION_MS * 10)

    def delete() -> None:
        assert h.send(DeleteGroupsRequest(("g",))).r.results[0].error_code == 0

    steps: list[Callable[[], None]] = [form, kip814_bounce, follower_bounce, dynamic_joins,
                                       rejoin_all, commit, expire_everyone, delete]
    for step in steps:
        step()
        assert h.rebuild().state_digest() == h.shard.state_digest(), step.__name__
    assert "g" not in h.shard.groups


def test_every_step_of_a_rebalance_replays_equal() -> None:
    h = Harness()
    check = lambda: h.rebuild().state_digest() == h.shard.state_digest()  # noqa: E731
    joins = [h.join_new(client_id=f"c{i}") for i in range(2)]
    assert check()
    h.advance(3_000)
    assert check()
    h.advance(3_000)
    assert check() and all(j.done for j in joins)
    h.complete_round(joins)
    assert check()
    h.leave(joins[1].r.member_id)
    assert check()


def test_failover_in_a_stable_group_needs_no_rebalance() -> None:
    h = Harness()
    rnd = h.form(3)
    before = h.group()
    h.fail_over()
    g = h.group()
    assert g.state is S.STABLE and g.generation_id == rnd.generation
    assert g.leader_id == before.leader_id and list(g.members) == list(before.members)
    for m in rnd.members:
        assert h.heartbeat(m, rnd.generation).error_code == 0
        assert h.sync(m, rnd.generation).r.assignment == f"A:{m}".encode()
    assert g.state is S.STABLE


def test_failover_restarts_session_timers() -> None:
    h = Harness()
    rnd = h.form(2)
    h.fail_over()
    h.advance(SESSION_MS // 2)
    assert h.heartbeat(rnd.leader, rnd.generation).error_code == 0
    h.advance(SESSION_MS // 2)  # the follower never heartbeat the new shard
    assert rnd.followers[0] not in h.group().members
    assert h.group().state is S.PREPARING_REBALANCE


def test_failover_mid_rebalance_resumes_from_the_last_generation() -> None:
    h = Harness()
    rnd = h.form(2)
    newcomer = h.join_new(client_id="new")
    rejoins = [h.join(m) for m in rnd.members]
    assert all(j.done for j in [newcomer, *rejoins])  # generation 2 started, not synced
    h.fail_over()
    g = h.group()
    assert g.generation_id == rnd.generation and sorted(g.members) == sorted(rnd.members)
    # clients of the lost generation are told to rejoin
    assert h.heartbeat(rnd.leader, rnd.generation + 1).error_code == E.illegal_generation
    assert h.heartbeat(newcomer.r.member_id, rnd.generation + 1).error_code == E.unknown_member_id


def test_failover_after_a_replaced_static_member() -> None:
    h = Harness()
    rnd = h.form(2, static=True)
    f = rnd.followers[0]
    new = h.join(instance=rnd.instances[f]).r.member_id
    h.fail_over()
    assert h.heartbeat(new, rnd.generation, instance=rnd.instances[f]).error_code == 0
    assert h.heartbeat(f, rnd.generation, instance=rnd.instances[f]).error_code == \
        E.fenced_instance_id


def test_reloaded_members_know_only_the_selected_protocol() -> None:
    """As upstream: the log keeps the selected protocol's metadata only, so a member rejoining
    with its full protocol list after a failover changes its metadata (a rebalance)."""
    h = Harness()
    rnd = h.form(2, names=("range", "sticky"))
    h.fail_over()
    assert [p.name for p in h.group().members[rnd.followers[0]].protocols] == ["range"]
    call = h.join(rnd.followers[0], protos=protocols("range", "sticky"))
    assert not call.done and h.group().state is S.PREPARING_REBALANCE
