"""Group administration: ConsumerGroupDescribe, ListGroups, DeleteGroups, Describe/Alter group
configs (KIP-848 "ConsumerGroupDescribe API", "Group Configurations", "DescribeConfigs API",
"AlterIncrementalConfigs API") and the broker configuration (KIP-848 "Broker Configurations").
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.config import (
    ASSIGNMENT_INTERVAL,
    HEARTBEAT_INTERVAL,
    SESSION_TIMEOUT,
    CoordinatorConfig,
)
from groupcoord.coordinator.messages import (
    AlterGroupConfigOp,
    AlterGroupConfigsRequest,
    DeleteGroupsRequest,
    DescribeGroupConfigsRequest,
    ListGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchTopic,
)
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupDescribeRequest, DescribedGroup
from groupcoord.coordinator.records import OffsetCommitKey, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

from .support import Client, image, names

E = ErrorCode


# ----------------------------------------------------------------------------- helpers


def describe(c: Client, *gids: str) -> tuple[DescribedGroup, ...]:
    return c.handle(ConsumerGroupDescribeRequest(gids)).groups


def described_parts(c: Client, tps: tuple) -> list[str]:
    return names({tp.topic_id: frozenset(tp.partitions) for tp in tps}, c.shard.metadata)


def commit(c: Client, group: str, member: str = "", epoch: int = -1, **topics: dict[int, int]) -> None:
    r = c.handle(OffsetCommitRequest(
        group_id=group, member_id=member, generation_id_or_member_epoch=epoch,
        topics=tuple(OffsetCommitTopic(n, tuple(OffsetCommitPartition(p, o) for p, o in ps.items()))
                     for n, ps in topics.items())))
    assert r.error_code == 0 and all(p.error_code == 0 for t in r.topics for p in t.partitions)


def alter(c: Client, group: str, *ops: tuple[str, str, str | None], validate_only: bool = False):
    return c.handle(AlterGroupConfigsRequest(
        group, tuple(AlterGroupConfigOp(n, op, v) for n, op, v in ops), validate_only))


def configs(c: Client, group: str, names_: tuple[str, ...] | None = None) -> dict[str, tuple[str, bool]]:
    r = c.handle(DescribeGroupConfigsRequest(group, names_))
    assert r.error_code == 0, r.error_message
    return {e.name: (e.value, e.is_default) for e in r.configs}


# ----------------------------------------------------------------------------- describe


def test_describe_current_and_target_assignment_per_member() -> None:
    shard = Shard(metadata=image(foo=3))
    c = Client(shard)
    c.heartbeat("A", 0, client_id="client-a", client_host="/10.0.0.1", rack_id="r1")
    c.heartbeat("B", 0, instance_id="b")
    (g,) = describe(c, "g")
    assert g.error_code == 0 and g.error_message is None
    assert (g.group_id, g.group_epoch, g.assignment_epoch) == ("g", 2, 2)
    assert g.assignor_name == "uniform"
    by_id = {m.member_id: m for m in g.members}
    assert sorted(by_id) == ["A", "B"]
    a, b = by_id["A"], by_id["B"]
    # A still holds everything (it has not heartbeated since B joined); its target is smaller.
    assert a.member_epoch == 1
    assert described_parts(c, a.assignment.topic_partitions) == ["foo-0", "foo-1", "foo-2"]
    assert described_parts(c, a.target_assignment.topic_partitions) == ["foo-0", "foo-1"]
    assert (a.client_id, a.client_host, a.rack_id, a.instance_id) == (
        "client-a", "/10.0.0.1", "r1", None)
    assert a.subscribed_topic_names == ("foo",) and a.subscribed_topic_regex is None
    # B is at epoch 2 waiting for foo-2.
    assert b.member_epoch == 2 and b.instance_id == "b"
    assert described_parts(c, b.assignment.topic_partitions) == []
    assert described_parts(c, b.target_assignment.topic_partitions) == ["foo-2"]


def test_describe_states_empty_assigning_reconciling_stable() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)

    def state() -> str:
        (g,) = describe(c, "g")
        assert g.error_code == 0
        return g.group_state

    c.heartbeat("A", 0)
    assert state() == "Stable"
    c.heartbeat("B", 0)
    assert state() == "Reconciling"  # A must revoke foo-1 before B gets it
    c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    c.heartbeat("A", 1, owned_tps=["foo-0"])
    assert state() == "Reconciling"  # B has foo-1 pending (UNRELEASED until it heartbeats)
    c.heartbeat("B", 2)
    assert state() == "Stable"
    # A topic grows: the epoch is bumped, the target not computed until the next heartbeat.
    shard.update_metadata(image(foo=4), c.now)
    (g,) = describe(c, "g")
    assert g.group_state == "Assigning"
    assert g.group_epoch == g.assignment_epoch + 1
    c.heartbeat("A", 2)
    assert state() == "Reconciling"
    c.heartbeat("B", 2)
    assert state() == "Stable"
    c.heartbeat("A", -1)
    c.heartbeat("B", -1)
    (g,) = describe(c, "g")
    assert g.group_state == "Empty" and g.members == ()


def test_describe_group_id_not_found() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    known, unknown = describe(c, "g", "nope")
    assert known.error_code == 0 and known.group_state == "Stable"
    assert unknown.group_id == "nope"
    assert unknown.error_code == E.group_id_not_found
    assert unknown.error_message
    assert unknown.members == ()


def test_describe_writes_nothing() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    before, n = shard.state_digest(), len(c.records)
    describe(c, "g", "nope")
    c.handle(ListGroupsRequest())
    c.handle(DescribeGroupConfigsRequest("g"))
    assert len(c.records) == n and shard.state_digest() == before


# ----------------------------------------------------------------------------- list


def listing_shard() -> tuple[Shard, Client]:
    """stable (Stable), reconciling (Reconciling), left (Empty consumer), simple (offsets only)."""
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0, group_id="stable")
    c.heartbeat("A", 0, group_id="reconciling")
    c.heartbeat("B", 0, group_id="reconciling")
    c.heartbeat("A", 0, group_id="left")
    c.heartbeat("A", -1, group_id="left")
    commit(c, "simple", foo={0: 1})
    return shard, c


def listed(c: Client, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> dict:
    r = c.handle(ListGroupsRequest(states, types))
    assert r.error_code == 0
    return {g.group_id: (g.group_state, g.group_type, g.protocol_type) for g in r.groups}


def test_list_groups_all() -> None:
    _, c = listing_shard()
    assert listed(c) == {
        "left": ("Empty", "consumer", "consumer"),
        "reconciling": ("Reconciling", "consumer", "consumer"),
        "simple": ("Empty", "classic", ""),
        "stable": ("Stable", "consumer", "consumer"),
    }


def test_list_groups_state_filter() -> None:
    _, c = listing_shard()
    assert sorted(listed(c, states=("Empty",))) == ["left", "simple"]
    assert sorted(listed(c, states=("stable", "RECONCILING"))) == ["reconciling", "stable"]
    assert listed(c, states=("Dead",)) == {}


def test_list_groups_type_filter() -> None:
    _, c = listing_shard()
    assert sorted(listed(c, types=("consumer",))) == ["left", "reconciling", "stable"]
    assert sorted(listed(c, types=("Classic",))) == ["simple"]
    assert listed(c, types=("connect",)) == {}


def test_list_groups_state_and_type_filters_combine() -> None:
    _, c = listing_shard()
    assert sorted(listed(c, states=("Empty",), types=("consumer",))) == ["left"]


# ----------------------------------------------------------------------------- delete


def test_delete_non_empty_group() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    before, n = shard.state_digest(), len(c.records)
    (res,) = c.handle(DeleteGroupsRequest(("g",))).results
    assert res.group_id == "g" and res.error_code == E.non_empty_group and res.error_message
    assert len(c.records) == n and shard.state_digest() == before


def test_delete_group_id_not_found() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    (res,) = c.handle(DeleteGroupsRequest(("nope",))).results
    assert res.error_code == E.group_id_not_found and res.error_message
    assert c.records == []


def test_delete_group_deletes_offsets_too() -> None:
    shard = Shard(metadata=image(foo=2))
    c = Client(shard)
    c.heartbeat("A", 0)
    commit(c, "g", "A", 1, foo={0: 5, 1: 6})
    c.heartbeat("A", -1)
    n = len(c.records)
    (res,) = c.handle(DeleteGroupsRequest(("g",))).results
    assert res.error_code == 0 and res.error_message is None
    new = c.records[n:]
    assert all(rec.value is None for rec in new)
    assert {rec.key for rec in new if rec.key.type is RecordType.OFFSET_COMMIT} == {
        OffsetCommitKey("g", "foo", 0), OffsetCommitKey("g", "foo", 1)}
    assert any(rec.key.type is RecordType.CONSUMER_GROUP_METADATA for rec in new)
    assert "g" not in shard.groups and "g" not in shard.offsets
    r = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0, 1)),)))
    assert [p.committed_offset for p in r.topics[0].partitions] == [-1, -1]
    (g,) = describe(c, "g")
    assert g.error_code == E.group_id_not_found
    assert listed(c) == {}
    # The log replayed gives the same (empty) state.
    rebuilt = Shard(metadata=shard.metadata)
    for rec in c.records:
        rebuilt.replay(rec)
    assert rebuilt.state_digest() == shard.state_digest()
    # A deleted group can be created again from scratch.
    r = c.heartbeat("B", 0)
    assert r.error_code == 0 and r.member_epoch == 1


def test_delete_offsets_only_group() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    commit(c, "simple", foo={0: 1})
    (res,) = c.handle(DeleteGroupsRequest(("simple",))).results
    assert res.error_code == 0
    assert "simple" not in shard.offsets


def test_delete_groups_answers_each_group() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0, group_id="busy")
    commit(c, "simple", foo={0: 1})
    results = c.handle(DeleteGroupsRequest(("busy", "nope", "simple"))).results
    assert [(r.group_id, r.error_code) for r in results] == [
        ("busy", E.non_empty_group), ("nope", E.group_id_not_found), ("simple", 0)]
    assert "busy" in shard.groups and "simple" not in shard.offsets


def test_delete_group_keeps_group_configs() -> None:
    """delete_group's docstring: configs are kept."""
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    assert alter(c, "g", (SESSION_TIMEOUT, "set", "50000")).error_code == 0
    c.heartbeat("A", -1)
    c.handle(DeleteGroupsRequest(("g",)))
    assert configs(c, "g")[SESSION_TIMEOUT] == ("50000", False)


# ----------------------------------------------------------------------------- group configs


def test_describe_group_configs_defaults() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    assert configs(c, "g") == {
        ASSIGNMENT_INTERVAL: ("1000", True), HEARTBEAT_INTERVAL: ("5000", True),
        SESSION_TIMEOUT: ("45000", True),
        # KIP-932's share group configs, with Kafka's defaults (tests/test_share_group_config.py)
        "share.assignment.interval.ms": ("1000", True),
        "share.auto.offset.reset": ("latest", True),
        "share.delivery.count.limit": ("5", True),
        "share.heartbeat.interval.ms": ("5000", True),
        "share.isolation.level": ("read_uncommitted", True),
        "share.record.lock.duration.ms": ("30000", True),
        "share.session.timeout.ms": ("45000", True)}


def test_alter_group_config_set_and_delete() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", (SESSION_TIMEOUT, "set", "50000"), (HEARTBEAT_INTERVAL, "set", "6000"))
    assert r.error_code == 0 and r.error_message is None
    recs = [rec for rec in c.records if rec.key.type is RecordType.GROUP_CONFIGURATION]
    assert len(recs) == 1
    assert configs(c, "g", (HEARTBEAT_INTERVAL, SESSION_TIMEOUT)) == {
        HEARTBEAT_INTERVAL: ("6000", False), SESSION_TIMEOUT: ("50000", False)}
    assert shard.group_config("g").session_timeout_ms == 50_000

    r = alter(c, "g", (SESSION_TIMEOUT, "delete", None))
    assert r.error_code == 0
    assert configs(c, "g", (HEARTBEAT_INTERVAL, SESSION_TIMEOUT)) == {
        HEARTBEAT_INTERVAL: ("6000", False), SESSION_TIMEOUT: ("45000", True)}
    r = alter(c, "g", (HEARTBEAT_INTERVAL, "delete", None))
    assert r.error_code == 0
    assert configs(c, "g", (HEARTBEAT_INTERVAL, SESSION_TIMEOUT)) == {
        HEARTBEAT_INTERVAL: ("5000", True), SESSION_TIMEOUT: ("45000", True)}
    # The last delete leaves no override: a tombstone.
    last = [rec for rec in c.records if rec.key.type is RecordType.GROUP_CONFIGURATION][-1]
    assert last.value is None
    assert "g" not in shard.group_configs
    # Replay gives the same state.
    rebuilt = Shard(metadata=shard.metadata)
    for rec in c.records:
        rebuilt.replay(rec)
    assert rebuilt.state_digest() == shard.state_digest()


def test_alter_group_config_unchanged_writes_nothing() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    alter(c, "g", (SESSION_TIMEOUT, "set", "50000"))
    n = len(c.records)
    assert alter(c, "g", (SESSION_TIMEOUT, "set", "50000")).error_code == 0
    assert alter(c, "g", (HEARTBEAT_INTERVAL, "delete", None)).error_code == 0
    assert len(c.records) == n


@pytest.mark.parametrize(("kafka_name", "spec_name"), [
    ("consumer.session.timeout.ms", SESSION_TIMEOUT),
    ("consumer.heartbeat.interval.ms", HEARTBEAT_INTERVAL),
    ("consumer.assignment.interval.ms", ASSIGNMENT_INTERVAL),
])
def test_both_config_spellings(kafka_name: str, spec_name: str) -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    value = {SESSION_TIMEOUT: "50000", HEARTBEAT_INTERVAL: "7000"}.get(spec_name, "250")
    assert alter(c, "g", (kafka_name, "set", value)).error_code == 0
    # Stored under the spec's name; described under the name asked for (a Kafka admin client
    # looks its key up in the answer).
    assert shard.group_configs["g"] == {spec_name: value}
    assert configs(c, "g", (kafka_name,)) == {kafka_name: (value, False)}
    assert configs(c, "g", (spec_name,)) == {spec_name: (value, False)}
    assert alter(c, "g", (kafka_name, "delete", None)).error_code == 0
    assert "g" not in shard.group_configs


@pytest.mark.parametrize(("name", "value"), [
    (SESSION_TIMEOUT, "44999"),      # below group.consumer.min.session.timeout.ms
    (SESSION_TIMEOUT, "60001"),      # above group.consumer.max.session.timeout.ms
    (HEARTBEAT_INTERVAL, "4999"),    # below group.consumer.min.heartbeat.interval.ms
    (HEARTBEAT_INTERVAL, "15001"),   # above group.consumer.max.heartbeat.interval.ms
    (HEARTBEAT_INTERVAL, "abc"),     # not an integer
    (SESSION_TIMEOUT, ""),           # empty
    ("consumer.session.timeout.ms", "1"),
    ("consumer.assignment.interval.ms", "-1"),  # KIP-1263: at least 0
], ids=["session-low", "session-high", "interval-low", "interval-high", "not-int", "empty",
        "kafka-spelling-low", "assignment-interval-negative"])
def test_alter_group_config_out_of_bounds_is_invalid_config(name: str, value: str) -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    before = shard.state_digest()
    r = alter(c, "g", (name, "set", value))
    assert r.error_code == E.invalid_config
    canonical = (SESSION_TIMEOUT if "session" in name else
                 ASSIGNMENT_INTERVAL if "assignment" in name else HEARTBEAT_INTERVAL)
    assert r.error_message and canonical in r.error_message
    assert c.records == [] and shard.state_digest() == before


def test_alter_group_config_interval_not_below_session_is_invalid_config() -> None:
    shard = Shard(metadata=image(foo=1), config=CoordinatorConfig(
        consumer_max_heartbeat_interval_ms=50_000))
    c = Client(shard)
    r = alter(c, "g", (HEARTBEAT_INTERVAL, "set", "45000"))
    assert r.error_code == E.invalid_config and r.error_message
    assert c.records == []


def test_alter_group_config_unknown_name_is_invalid_config() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", ("group.consumer.assignors", "set", "range"))
    assert r.error_code == E.invalid_config
    assert r.error_message and "group.consumer.assignors" in r.error_message
    assert c.records == []


def test_describe_group_config_unknown_name_is_left_out() -> None:
    # As Kafka's DescribeConfigs: a key the resource does not have is omitted, not an error.
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = c.handle(DescribeGroupConfigsRequest("g", ("nope.ms", SESSION_TIMEOUT)))
    assert r.error_code == 0
    assert [e.name for e in r.configs] == [SESSION_TIMEOUT]


def test_alter_group_config_one_bad_op_rejects_all() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", (SESSION_TIMEOUT, "set", "50000"), (HEARTBEAT_INTERVAL, "set", "1"))
    assert r.error_code == E.invalid_config
    assert c.records == [] and "g" not in shard.group_configs


def test_alter_group_config_set_without_value_is_invalid_config() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", (SESSION_TIMEOUT, "set", None))
    assert r.error_code == E.invalid_config and r.error_message
    assert c.records == []


def test_alter_group_config_unknown_operation_is_invalid_request() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", (SESSION_TIMEOUT, "append", "50000"))
    assert r.error_code == E.invalid_request and r.error_message
    assert c.records == []


def test_alter_group_config_empty_group_id_is_invalid_request() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "", (SESSION_TIMEOUT, "set", "50000"))
    assert r.error_code == E.invalid_request and r.error_message
    assert c.records == []


def test_alter_group_config_validate_only() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", (SESSION_TIMEOUT, "set", "50000"), validate_only=True)
    assert r.error_code == 0
    assert c.records == [] and "g" not in shard.group_configs
    assert configs(c, "g")[SESSION_TIMEOUT] == ("45000", True)
    # Validation still applies.
    r = alter(c, "g", (SESSION_TIMEOUT, "set", "1"), validate_only=True)
    assert r.error_code == E.invalid_config and r.error_message
    assert c.records == []


def test_group_config_applies_to_live_members() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    c.heartbeat("A", 0)
    alter(c, "g", ("consumer.heartbeat.interval.ms", "set", "9000"))
    assert c.heartbeat("A", 1).heartbeat_interval_ms == 9_000


# ----------------------------------------------------------------------------- broker config


def test_from_properties_with_kafka_broker_names() -> None:
    cfg = CoordinatorConfig.from_properties({
        "group.consumer.session.timeout.ms": "50000",
        "group.consumer.min.session.timeout.ms": "10000",
        "group.consumer.max.session.timeout.ms": "90000",
        "group.consumer.heartbeat.interval.ms": "3000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
        "group.consumer.max.heartbeat.interval.ms": "20000",
        "group.consumer.max.size": "10",
        "group.consumer.assignors":
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform",
        "group.consumer.migration.policy": "upgrade",
        "offsets.retention.minutes": "60",
        "offsets.retention.check.interval.ms": "1000",
        "broker.id": "1",
    })
    assert cfg.consumer_session_timeout_ms == 50_000
    assert (cfg.consumer_min_session_timeout_ms, cfg.consumer_max_session_timeout_ms) == (10_000, 90_000)
    assert cfg.consumer_heartbeat_interval_ms == 3_000
    assert (cfg.consumer_min_heartbeat_interval_ms, cfg.consumer_max_heartbeat_interval_ms) == (
        1_000, 20_000)
    assert cfg.consumer_max_size == 10
    assert cfg.consumer_assignors == ("range", "uniform")
    assert cfg.consumer_migration_policy == "upgrade"
    assert cfg.offsets_retention_ms == 3_600_000
    assert cfg.offsets_retention_check_interval_ms == 1_000
    assert dict(cfg.extra) == {"broker.id": "1"}
    # The broker config drives a shard: range is the default assignor now.
    shard = Shard(config=cfg, metadata=image(foo=2))
    c = Client(shard)
    assert c.heartbeat("A", 0).heartbeat_interval_ms == 3_000
    assert describe(c, "g")[0].assignor_name == "range"


def test_from_properties_empty_is_the_default() -> None:
    assert CoordinatorConfig.from_properties({}) == CoordinatorConfig()


@pytest.mark.parametrize("props", [
    {"group.consumer.session.timeout.ms": "abc"},
    {"group.consumer.session.timeout.ms": "0"},
    {"group.consumer.session.timeout.ms": "-5"},
    {"group.consumer.session.timeout.ms": "30000"},            # below the default minimum
    {"group.consumer.session.timeout.ms": "61000"},            # above the default maximum
    {"group.consumer.heartbeat.interval.ms": "4000"},          # below the default minimum
    {"group.consumer.heartbeat.interval.ms": "1.5"},
    {"group.consumer.min.heartbeat.interval.ms": "1000",
     "group.consumer.max.heartbeat.interval.ms": "60000",
     "group.consumer.heartbeat.interval.ms": "45000"},         # not below the session timeout
    {"group.consumer.max.size": "0"},
    {"group.consumer.assignors": ""},
    {"group.consumer.migration.policy": "sideways"},
    {"offsets.retention.minutes": "zero"},
], ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_from_properties_bad_values_are_invalid_config(props: dict[str, str]) -> None:
    with pytest.raises(CoordinatorError) as ei:
        CoordinatorConfig.from_properties(props)
    assert ei.value.code == E.invalid_config
    assert ei.value.message


def test_unknown_broker_assignor_is_invalid_config() -> None:
    cfg = CoordinatorConfig.from_properties({"group.consumer.assignors": "sticky"})
    with pytest.raises(CoordinatorError) as ei:
        Shard(config=cfg)
    assert ei.value.code == E.invalid_config and "sticky" in ei.value.message
