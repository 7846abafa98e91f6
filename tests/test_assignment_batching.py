"""Assignment batching (Kafka 4.3's ``group.consumer.assignment.interval.ms``): a heartbeat that
finds the group epoch ahead of the target computes a new target at most once per interval; the
time of the last computation is persisted in the target assignment metadata record."""

from __future__ import annotations

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.records import (
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
    RecordType,
    target_assignment_metadata_record,
)
from groupcoord.coordinator.shard import Shard
from tests.support import Client, image


def _targets(c: Client) -> list[int]:
    return [r.value.assignment_epoch for r in c.records  # type: ignore[union-attr]
            if r.key.type is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA and r.value]


def test_joins_within_the_interval_share_one_target_computation() -> None:
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=1000),
                  metadata=image(foo=6))
    c = Client(shard, now=10_000)
    c.heartbeat("a", 0)  # the group's first target: at once
    assert _targets(c) == [1]
    c.now += 100
    c.heartbeat("b", 0)
    c.now += 100
    c.heartbeat("c", 0)
    group = shard.groups["g"]
    assert group.group_epoch == 3 and group.assignment_epoch == 1  # waiting for the interval
    assert _targets(c) == [1]
    c.now = 11_000  # one interval after the first computation: the next heartbeat computes
    r = c.heartbeat("b", 1)
    assert _targets(c) == [1, 3]
    assert group.assignment_epoch == 3 and group.assignment_timestamp_ms == 11_000
    assert r.member_epoch == 3  # b is at the new target (its partitions come once a revokes)


def test_interval_zero_computes_at_every_bump() -> None:
    shard = Shard(metadata=image(foo=6))  # the default: 0
    c = Client(shard, now=10_000)
    for i, m in enumerate("abc"):
        c.now += 100 * i
        c.heartbeat(m, 0)
    assert _targets(c) == [1, 2, 3]
    assert shard.groups["g"].assignment_timestamp_ms == 0  # not recorded without batching


def test_config_name_and_bad_value() -> None:
    cfg = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "250"})
    assert cfg.consumer_assignment_interval_ms == 250


def test_timestamp_survives_encoding_and_old_records_read_as_unrecorded() -> None:
    rec = target_assignment_metadata_record("g", 4, 12_345)
    assert Record.decode(*rec.encode()).value == ConsumerGroupTargetAssignmentMetadataValue(4, 12_345)
    old = target_assignment_metadata_record("g", 4)
    k, v = old.encode()
    assert Record.decode(k, v).value == ConsumerGroupTargetAssignmentMetadataValue(4, 0)
    # without a timestamp the bytes are what they were before batching
    assert v == target_assignment_metadata_record("g", 4, 0).encode()[1]
    assert len(v or b"") < len(rec.encode()[1] or b"")
