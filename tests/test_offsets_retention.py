"""Offsets retention (``offsets.retention.minutes``): Kafka's periodic cleanup of
expired offsets and empty groups, on a Shard in virtual time (``coordinator/offsets_retention.py``).

The check is a shard timer armed by the load duties (``on_loaded``) and re-armed by every check;
tombstones go through ``Shard.append``, so a shard rebuilt from the records equals the live one
(I4) after every cleanup.
"""

from __future__ import annotations

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    AlterGroupConfigOp,
    AlterGroupConfigsRequest,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
)
from groupcoord.coordinator.modern.connect.messages import ConnectGroupHeartbeatRequest
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.offsets_retention import CHECK_TIMER
from groupcoord.coordinator.records import RecordType

from .support import image
from .test_classic_support import Harness
from .test_connect_group import assignors

RETENTION = 60_000  # offsets.retention.minutes=1
INTERVAL = 10_000  # offsets.retention.check.interval.ms
CONFIG = CoordinatorConfig(offsets_retention_ms=RETENTION,
                           offsets_retention_check_interval_ms=INTERVAL)


def harness() -> Harness:
    h = Harness(config=CONFIG, metadata=image(foo=2, bar=2), now=1_000)
    h.shard.on_loaded(h.now)  # a driver loads every shard: this arms the first check
    return h


def commit(h: Harness, group: str, topic: str, partition: int, offset: int, *, epoch: int = -1,
           member: str = "", retention_time_ms: int = -1) -> int:
    r = h.send(OffsetCommitRequest(group, (OffsetCommitTopic(topic, (
        OffsetCommitPartition(partition, offset),)),), epoch, member,
        retention_time_ms=retention_time_ms)).r
    return int(r.topics[0].partitions[0].error_code)


def committed(h: Harness, group: str) -> dict[tuple[str, int], int]:
    return {k: v.offset for k, v in h.shard.offsets.get(group, {}).items()}


def listed(h: Harness) -> list[tuple[str, str, str]]:
    r = h.send(ListGroupsRequest()).r
    return [(g.group_id, g.group_type, g.group_state) for g in r.groups]


def check_i4(h: Harness) -> None:
    assert h.rebuild().state_digest() == h.shard.state_digest()


def consumer_join(h: Harness, group: str, member: str, topics: tuple[str, ...]) -> int:
    r = h.send(ConsumerGroupHeartbeatRequest(group, member, 0, rebalance_timeout_ms=30_000,
                                             subscribed_topic_names=topics,
                                             topic_partitions=())).r
    assert r.error_code == 0, r
    return int(r.member_epoch)


def consumer_leave(h: Harness, group: str, member: str) -> None:
    assert h.send(ConsumerGroupHeartbeatRequest(group, member, -1)).r.error_code == 0


# ---------------------------------------------------------------------------- the timer


def test_the_check_is_armed_on_load_and_rearmed_after_each_run() -> None:
    h = harness()
    assert h.shard.timers.deadline(CHECK_TIMER) == 1_000 + INTERVAL
    h.advance(INTERVAL)
    assert h.shard.timers.deadline(CHECK_TIMER) == 1_000 + 2 * INTERVAL
    h.advance(5 * INTERVAL)
    assert h.shard.timers.deadline(CHECK_TIMER) == 1_000 + 7 * INTERVAL
    # a failover re-arms it from the load time
    rebuilt = h.rebuild()
    assert rebuilt.timers.deadline(CHECK_TIMER) == h.now + INTERVAL


def test_offsets_retention_minutes_sets_the_retention() -> None:
    cfg = CoordinatorConfig.from_properties({"offsets.retention.minutes": "3",
                                             "offsets.retention.check.interval.ms": "500"})
    assert (cfg.offsets_retention_ms, cfg.offsets_retention_check_interval_ms) == (180_000, 500)


# ---------------------------------------------------------------------------- groupless offsets


def test_offsets_without_a_group_expire_retention_after_their_commit() -> None:
    h = harness()
    assert commit(h, "simple", "foo", 0, 10) == 0  # at 1 000
    h.advance(30_000)
    assert commit(h, "simple", "foo", 1, 20) == 0  # at 31 000
    h.advance_to(1_000 + RETENTION - 1)  # checks run at 1 000 + k * INTERVAL
    assert committed(h, "simple") == {("foo", 0): 10, ("foo", 1): 20}
    h.advance_to(1_000 + RETENTION)  # the check at 61 000: foo-0 is exactly due
    assert committed(h, "simple") == {("foo", 1): 20}
    tombstones = [r for r in h.records if r.key.type is RecordType.OFFSET_COMMIT and r.value is None]
    assert [(r.key.topic, r.key.partition) for r in tombstones] == [("foo", 0)]
    assert listed(h) == [("simple", "classic", "Empty")]
    check_i4(h)
    h.advance_to(31_000 + RETENTION + INTERVAL)  # check at 91 000
    assert committed(h, "simple") == {} and "simple" not in h.shard.offsets
    assert listed(h) == []
    fetched = h.send(OffsetFetchRequest("simple", None)).r
    assert fetched.topics == ()
    check_i4(h)


def test_a_recommit_restarts_the_retention() -> None:
    h = harness()
    commit(h, "simple", "foo", 0, 10)
    h.advance(RETENTION - 5_000)
    commit(h, "simple", "foo", 0, 11)
    h.advance(2 * INTERVAL)
    assert committed(h, "simple") == {("foo", 0): 11}


def test_an_explicit_expire_timestamp_wins_over_the_retention() -> None:
    h = harness()
    assert commit(h, "simple", "foo", 0, 10, retention_time_ms=15_000) == 0  # expires at 16 000
    assert commit(h, "simple", "foo", 1, 10, retention_time_ms=10 * RETENTION) == 0
    h.advance_to(11_000)
    assert ("foo", 0) in committed(h, "simple")
    h.advance_to(21_000)  # the check at 21 000 is past 16 000
    assert committed(h, "simple") == {("foo", 1): 10}
    h.advance_to(1_000 + 2 * RETENTION)  # the default retention would have expired it
    assert committed(h, "simple") == {("foo", 1): 10}
    h.advance_to(1_000 + 10 * RETENTION + INTERVAL)
    assert committed(h, "simple") == {}
    check_i4(h)


# ---------------------------------------------------------------------------- consumer groups


def test_a_consumer_group_emptied_by_session_expiry_loses_its_offsets_then_itself() -> None:
    h = harness()
    epoch = consumer_join(h, "g", "m1", ("foo",))
    assert commit(h, "g", "foo", 0, 5, epoch=epoch, member="m1") == 0
    assert commit(h, "g", "bar", 0, 7, epoch=epoch, member="m1") == 0  # not subscribed
    h.advance(50_000)  # m1's session (45 s) expired: the group is empty
    group = h.shard.groups["g"]
    assert isinstance(group, ConsumerGroup) and not group.members
    assert committed(h, "g") == {("foo", 0): 5, ("bar", 0): 7}
    h.advance_to(1_000 + RETENTION + INTERVAL)
    assert committed(h, "g") == {}
    assert "g" not in h.shard.groups  # all offsets expired and empty: the group is deleted
    check_i4(h)


def test_consumer_group_with_a_live_member_keeps_its_subscribed_offsets() -> None:
    cfg = CONFIG.with_(consumer_session_timeout_ms=600_000, consumer_max_session_timeout_ms=600_000)
    h = Harness(config=cfg, metadata=image(foo=2, bar=2), now=1_000)
    h.shard.on_loaded(h.now)
    epoch = consumer_join(h, "g", "m1", ("foo",))
    commit(h, "g", "foo", 0, 5, epoch=epoch, member="m1")
    commit(h, "g", "bar", 1, 7, epoch=epoch, member="m1")
    h.advance(RETENTION + INTERVAL)
    assert committed(h, "g") == {("foo", 0): 5}  # bar is not subscribed: expired
    assert isinstance(h.shard.groups["g"], ConsumerGroup)
    check_i4(h)
    consumer_leave(h, "g", "m1")
    h.advance(INTERVAL)  # empty now, but foo-0 was committed RETENTION+INTERVAL ago
    assert committed(h, "g") == {} and "g" not in h.shard.groups
    assert listed(h) == []
    check_i4(h)


def test_an_empty_consumer_group_is_kept_while_it_has_offsets() -> None:
    h = harness()
    epoch = consumer_join(h, "g", "m1", ("foo",))
    h.advance(20_000)
    commit(h, "g", "foo", 0, 5, epoch=epoch, member="m1")
    consumer_leave(h, "g", "m1")
    h.advance_to(21_000 + RETENTION - 1)
    assert committed(h, "g") == {("foo", 0): 5} and "g" in h.shard.groups
    assert listed(h) == [("g", "consumer", "Empty")]
    h.advance(INTERVAL)
    assert "g" not in h.shard.groups and listed(h) == []
    deleted = {r.key.type for r in h.records if r.value is None}
    assert RecordType.CONSUMER_GROUP_METADATA in deleted
    check_i4(h)


def test_an_empty_consumer_group_without_offsets_is_deleted_at_the_next_check() -> None:
    h = harness()
    consumer_join(h, "g", "m1", ("foo",))
    consumer_leave(h, "g", "m1")
    h.advance(INTERVAL)
    assert "g" not in h.shard.groups
    check_i4(h)


def test_group_configurations_survive_the_deletion() -> None:
    h = harness()
    consumer_join(h, "g", "m1", ("foo",))
    assert h.send(AlterGroupConfigsRequest("g", (AlterGroupConfigOp(
        "group.consumer.session.timeout.ms", "set", "50000"),))).r.error_code == 0
    consumer_leave(h, "g", "m1")
    h.advance(INTERVAL)
    assert "g" not in h.shard.groups
    assert h.shard.group_configs["g"] == {"group.consumer.session.timeout.ms": "50000"}
    check_i4(h)


# ---------------------------------------------------------------------------- classic groups


def test_empty_classic_group_expires_retention_after_it_became_empty() -> None:
    h = harness()
    rnd = h.form(2)
    assert commit(h, "g", "foo", 0, 3, epoch=rnd.generation, member=rnd.members[0]) == 0
    committed_at = h.now
    for _ in range(8):  # 40 s with the members heartbeating (10 s sessions)
        h.advance(5_000)
        assert all(h.heartbeat(m, rnd.generation).error_code == 0 for m in rnd.members)
    for m in rnd.members:
        h.leave(m)
    assert h.group().state_name() == "Empty"
    empty_since = h.group().current_state_timestamp
    assert empty_since > committed_at + 30_000
    # retention counted from the commit has passed, from the emptiness not yet
    h.advance_to(committed_at + RETENTION + INTERVAL)
    assert committed(h, "g") == {("foo", 0): 3}
    h.advance_to(empty_since + RETENTION + INTERVAL)
    assert committed(h, "g") == {}
    assert "g" not in h.shard.groups  # then deleted, as empty
    check_i4(h)


def test_stable_classic_consumer_group_expires_only_unsubscribed_topics() -> None:
    h = Harness(config=CONFIG, metadata=image(foo=2, bar=2), now=1_000)
    h.shard.on_loaded(h.now)
    rnd = h.form(1)
    member = rnd.members[0]
    commit(h, "g", "foo", 0, 3, epoch=rnd.generation, member=member)
    commit(h, "g", "bar", 0, 4, epoch=rnd.generation, member=member)
    for _ in range((RETENTION + INTERVAL) // 5_000 + 1):
        h.advance(5_000)
        assert h.heartbeat(member, rnd.generation).error_code == 0
    assert h.group().state_name() == "Stable"
    assert committed(h, "g") == {("foo", 0): 3}
    check_i4(h)


def test_a_classic_group_in_a_rebalance_keeps_every_offset() -> None:
    h = harness()
    rnd = h.form(1)
    member = rnd.members[0]
    commit(h, "g", "bar", 0, 4, epoch=rnd.generation, member=member)
    cleanup = h.shard.retention
    h.join_new(client_id="newcomer")  # the group goes to PreparingRebalance
    assert h.group().state_name() == "PreparingRebalance"
    h.shard.now = h.now + 10 * RETENTION  # a check far in the future, mid-rebalance
    result = cleanup.cleanup()
    assert result.expired == () and committed(h, "g") == {("bar", 0): 4}


# ---------------------------------------------------------------------------- connect groups


def test_connect_group_offsets_expire_but_the_group_stays() -> None:
    h = harness()
    r = h.send(ConnectGroupHeartbeatRequest(
        group_id="cg", member_id="W1", member_epoch=0, rebalance_timeout_ms=30_000,
        client_assignors=assignors(), url="http://w1:8083")).r
    assert r.error_code == 0
    commit(h, "cg", "foo", 0, 9)  # refused: the group has a worker
    assert committed(h, "cg") == {}
    assert h.send(ConnectGroupHeartbeatRequest(group_id="cg", member_id="W1",
                                               member_epoch=-1)).r.error_code == 0
    assert commit(h, "cg", "foo", 0, 9) == 0  # admin commit into the empty group
    h.advance(RETENTION + INTERVAL)
    assert committed(h, "cg") == {}
    assert h.shard.groups["cg"].group_type == "connect"  # never deleted by the cleanup
    check_i4(h)
