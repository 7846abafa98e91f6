"""Assignment batching (Kafka 4.3's ``group.consumer.assignment.interval.ms``): a heartbeat that
finds the group epoch ahead of the target computes a new target at most once per interval; the
time of the last computation is persisted in the target assignment metadata record."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import AlterGroupConfigOp, AlterGroupConfigsRequest
from groupcoord.coordinator.records import (
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
    RecordType,
    target_assignment_metadata_record,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import CoordinatorError
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


def test_default_interval_is_kafka_43s_1000_ms() -> None:
    """KIP-1263 (Kafka 4.3): ``group.consumer.assignment.interval.ms`` defaults to 1000, so a
    shard with the default configuration batches the joins of one second."""
    shard = Shard(metadata=image(foo=6))
    assert shard.config.consumer_assignment_interval_ms == 1000
    c = Client(shard, now=10_000)
    epochs = {}
    for m in "abc":
        c.now += 100
        epochs[m] = c.heartbeat(m, 0).member_epoch
    assert _targets(c) == [1]  # b and c wait for the interval
    c.now = 11_100  # one interval after the first target (computed at 10,100)
    r = c.heartbeat("b", epochs["b"])
    assert r.error_code == 0, r.error_message
    assert _targets(c) == [1, 3]


def test_group_config_overrides_the_interval() -> None:
    """The group config ``consumer.assignment.interval.ms`` (KIP-1263) set to 0 on one group
    makes it compute at every bump while another group keeps the broker's 1000 ms."""
    shard = Shard(metadata=image(foo=6))
    c = Client(shard, now=10_000)
    r = c.handle(AlterGroupConfigsRequest(
        "fast", (AlterGroupConfigOp("consumer.assignment.interval.ms", "set", "0"),)))
    assert r.error_code == 0, r.error_message
    assert shard.group_config("fast").assignment_interval_ms == 0
    assert shard.group_config("g").assignment_interval_ms == 1000
    for m in "abc":
        c.now += 100
        c.heartbeat(m, 0, group_id="fast")
        c.heartbeat(m + "2", 0)
    assert (shard.groups["fast"].group_epoch, shard.groups["fast"].assignment_epoch) == (3, 3)
    assert (shard.groups["g"].group_epoch, shard.groups["g"].assignment_epoch) == (3, 1)


def test_interval_zero_computes_at_every_bump() -> None:
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=0),
                  metadata=image(foo=6))
    c = Client(shard, now=10_000)
    for i, m in enumerate("abc"):
        c.now += 100 * i
        c.heartbeat(m, 0)
    assert _targets(c) == [1, 2, 3]
    assert shard.groups["g"].assignment_timestamp_ms == 0  # not recorded without batching


def test_config_name_and_bad_value() -> None:
    cfg = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "250"})
    assert cfg.consumer_assignment_interval_ms == 250
    # 0 turns batching off (Kafka before 4.3); below 0 is INVALID_CONFIG
    cfg = CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "0"})
    assert cfg.consumer_assignment_interval_ms == 0
    with pytest.raises(CoordinatorError, match="at least 0"):
        CoordinatorConfig.from_properties({"group.consumer.assignment.interval.ms": "-1"})


def test_timestamp_survives_encoding_and_old_records_read_as_unrecorded() -> None:
    rec = target_assignment_metadata_record("g", 4, 12_345)
    assert Record.decode(*rec.encode()).value == ConsumerGroupTargetAssignmentMetadataValue(4, 12_345)
    old = target_assignment_metadata_record("g", 4)
    k, v = old.encode()
    assert Record.decode(k, v).value == ConsumerGroupTargetAssignmentMetadataValue(4, 0)
    # without a timestamp the bytes are what they were before batching
    assert v == target_assignment_metadata_record("g", 4, 0).encode()[1]
    assert len(v or b"") < len(rec.encode()[1] or b"")


def test_interval_counts_from_the_end_of_the_computation() -> None:
    """Kafka's TargetAssignmentBuilder stamps the time the assignor finished: the next target
    waits the interval from the end of the last computation, not from the heartbeat that
    started it (under load targets would otherwise be computed back to back)."""
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=1000),
                  metadata=image(foo=6))
    c = Client(shard, now=10_000)
    shard.finish_clock = lambda: c.now + 400  # every computation takes 400 ms of the driver's clock
    c.heartbeat("a", 0)
    group = shard.groups["g"]
    assert _targets(c) == [1] and group.assignment_timestamp_ms == 10_400  # the end, recorded
    c.now += 100
    r = c.heartbeat("b", 0)
    assert r.error_code == 0 and group.group_epoch == 2
    c.now = 11_000  # an interval after the start, not after the end: still waiting
    r = c.heartbeat("b", r.member_epoch)
    assert r.error_code == 0
    assert _targets(c) == [1] and group.assignment_epoch == 1
    c.now = 11_400  # an interval after the end
    r = c.heartbeat("b", r.member_epoch)
    assert r.error_code == 0
    assert _targets(c) == [1, 2] and group.assignment_timestamp_ms == 11_800


def test_finish_clock_never_stamps_before_the_event() -> None:
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=1000),
                  metadata=image(foo=6))
    c = Client(shard, now=10_000)
    shard.finish_clock = lambda: 9_000  # a clock behind the event's time
    c.heartbeat("a", 0)
    assert shard.groups["g"].assignment_timestamp_ms == 10_000


def test_the_runtime_stamps_with_its_clock() -> None:
    """The server's shards stamp a computation's end with a reading of the runtime's clock
    taken after the assignor ran, later than the heartbeat's time."""
    import asyncio
    import uuid

    from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest
    from groupcoord.server.runtime import Clock, CoordinatorRuntime
    from groupcoord.storage.memory import MemoryLog

    class Ticking(Clock):
        """Every reading 1 s after the previous one."""

        def __init__(self) -> None:
            super().__init__()
            self.t = 1_000_000

        def now_ms(self) -> int:
            self.t += 1000
            return self.t

    async def main() -> None:
        clock = Ticking()
        rt = CoordinatorRuntime(MemoryLog(), 1,
                                CoordinatorConfig(consumer_assignment_interval_ms=1000),
                                image(foo=6), lambda: str(uuid.uuid4()), clock)
        rt.start(asyncio.get_running_loop())
        try:
            before = clock.t
            r = rt.handle_group("g", ConsumerGroupHeartbeatRequest(
                "g", "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("foo",),
                topic_partitions=()))
            assert r.error_code == 0
            group = rt.shards[0].groups["g"]  # type: ignore[union-attr]
            # the heartbeat's time is the first reading (before + 1000); the stamp a later one
            assert group.assignment_timestamp_ms >= before + 2000  # type: ignore[union-attr]
        finally:
            rt.stop()

    asyncio.run(main())


def test_a_group_every_member_left_computes_its_next_target_at_once() -> None:
    """A target that holds no member (every member left) is no batch to wait for: the next
    join is assigned at once even within the interval (librdkafka's 0045
    ``resubscribe_with_regex``: unsubscribe, then subscribe again at once)."""
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=1000),
                  metadata=image(foo=2))
    c = Client(shard, now=10_000)
    r = c.heartbeat("a", 0)
    assert _targets(c) == [1]
    c.now += 10
    c.heartbeat("a", -1)  # the last member leaves
    assert shard.groups["g"].target_assignment == {}
    c.now += 10
    r = c.heartbeat("a", 0)  # within the interval of the last computation
    assert r.error_code == 0 and r.member_epoch == shard.groups["g"].group_epoch
    assert r.assignment is not None and len(r.assignment.topic_partitions[0].partitions) == 2
