"""The coordinator runtime in-process: write-before-respond, a failed append answered with
COORDINATOR_NOT_AVAILABLE and the shard reloaded from its log, sessions expiring on the wall
clock, sharding by Kafka's partitionFor."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Sequence

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import ListGroupsRequest
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.runtime import CoordinatorRuntime, partition_for
from groupcoord.storage.log import Entry, LogError
from groupcoord.storage.memory import MemoryLog

TOPIC = TopicMetadata(uuid.uuid4(), "t", 4)
IMAGE = MetadataImage.of([TOPIC])


class FlakyLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__()
        self.fail_next = 0
        self.appends = 0

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise LogError("disk on fire")
        self.appends += 1
        super().append(shard, batch, now_ms)

    def read(self, shard: int) -> Iterator[Entry]:
        return super().read(shard)


def _join(group: str, member: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group, member, 0, rebalance_timeout_ms=30_000,
                                         subscribed_topic_names=("t",), topic_partitions=())


def _config(session_ms: int = 45_000) -> CoordinatorConfig:
    return CoordinatorConfig.from_properties({
        "group.consumer.min.session.timeout.ms": "100",
        "group.consumer.session.timeout.ms": str(session_ms),
        "group.consumer.min.heartbeat.interval.ms": "10",
        "group.consumer.heartbeat.interval.ms": "50"})


def test_failed_append_answers_coordinator_not_available_and_reloads() -> None:
    async def main() -> None:
        log = FlakyLog()
        rt = CoordinatorRuntime(log, 3, _config(), IMAGE, lambda: str(uuid.uuid4()))
        rt.start(asyncio.get_running_loop())
        try:
            shard = rt.shard_of("g")
            ok = rt.handle_group("g", _join("g", "m1"))
            assert ok.error_code == 0 and ok.member_epoch == 1
            written = log.size(shard)
            assert written > 0  # persisted before the response was returned

            log.fail_next = 1
            failed = rt.handle_group("g", _join("g", "m2"))
            assert failed.error_code == ErrorCode.coordinator_not_available
            assert rt.append_failures == 1
            assert log.size(shard) == written
            # the shard was rebuilt from its log: m2's join never happened
            d = rt.handle_group("g", ConsumerGroupDescribeRequest(("g",)))
            assert [m.member_id for m in d.groups[0].members] == ["m1"]
            # and serves again
            again = rt.handle_group("g", _join("g", "m2"))
            assert again.error_code == 0
            d = rt.handle_group("g", ConsumerGroupDescribeRequest(("g",)))
            assert sorted(m.member_id for m in d.groups[0].members) == ["m1", "m2"]
        finally:
            rt.stop()

    asyncio.run(main())


def test_sessions_expire_on_the_wall_clock_and_groups_spread_over_shards() -> None:
    async def main() -> None:
        log = MemoryLog()
        rt = CoordinatorRuntime(log, 4, _config(session_ms=300), IMAGE, lambda: str(uuid.uuid4()))
        rt.start(asyncio.get_running_loop())
        try:
            groups = [f"group-{i}" for i in range(12)]
            for g in groups:
                assert rt.handle_group(g, _join(g, "m")).error_code == 0
            shards_used = {rt.shard_of(g) for g in groups}
            assert shards_used == {partition_for(g, 4) for g in groups} and len(shards_used) > 1
            for g in groups:
                assert log.size(partition_for(g, 4)) > 0
            listed = []
            for i in range(4):
                listed += [x.group_id for x in rt.handle(i, ListGroupsRequest()).groups]
            assert sorted(listed) == sorted(groups)
            await asyncio.sleep(0.6)  # no heartbeats: every session times out
            for g in groups:
                d = rt.handle_group(g, ConsumerGroupDescribeRequest((g,)))
                assert d.groups[0].members == (), g
        finally:
            rt.stop()

    asyncio.run(main())


async def _wait_until(cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.02)
    return False


def _members(rt: CoordinatorRuntime, group: str) -> tuple[str, ...]:
    d = rt.handle_group(group, ConsumerGroupDescribeRequest((group,)))
    return tuple(m.member_id for m in d.groups[0].members)


def test_a_timer_set_before_the_armed_wake_up_fires_on_time() -> None:
    """The runtime keeps one wake-up at the earliest deadline of all shards; a session shorter
    than every other (a group's own session timeout) must move it earlier."""
    from groupcoord.coordinator.messages import AlterGroupConfigOp, AlterGroupConfigsRequest

    async def main() -> None:
        rt = CoordinatorRuntime(MemoryLog(), 1, _config(session_ms=30_000), IMAGE,
                                lambda: str(uuid.uuid4()))
        rt.start(asyncio.get_running_loop())
        try:
            assert rt.handle_group("slow", _join("slow", "s")).error_code == 0
            armed = rt._timer_at
            assert armed is not None  # the slow member's session, 30 s away
            r = rt.handle_group("fast", AlterGroupConfigsRequest("fast", (AlterGroupConfigOp(
                "group.consumer.session.timeout.ms", "set", "200"),)))
            assert r.error_code == 0, r
            assert rt.handle_group("fast", _join("fast", "f")).error_code == 0
            assert rt._timer_at is not None and rt._timer_at < armed
            assert await _wait_until(lambda: _members(rt, "fast") == ())
            assert _members(rt, "slow") == ("s",)
        finally:
            rt.stop()

    asyncio.run(main())


def test_renewed_sessions_do_not_ask_the_shard_for_its_next_deadline() -> None:
    """A heartbeat renews its member's session, later than the armed wake-up: nothing to
    re-arm, and the shard's timer heap is not walked (it was, on every heartbeat: a tenth of
    the server's time per heartbeat)."""
    async def main() -> None:
        rt = CoordinatorRuntime(MemoryLog(), 1, _config(session_ms=30_000), IMAGE,
                                lambda: str(uuid.uuid4()))
        rt.start(asyncio.get_running_loop())
        try:
            assert rt.handle_group("g", _join("g", "m")).error_code == 0
            armed = rt._timer_at
            shard = rt.shards[0]
            assert shard is not None and armed is not None
            asked = []
            real = shard.next_deadline

            def counting() -> int | None:
                asked.append(1)
                return real()

            shard.next_deadline = counting  # type: ignore[method-assign]
            hb = ConsumerGroupHeartbeatRequest("g", "m", 1)
            for _ in range(200):  # no await: the armed wake-up cannot fire meanwhile
                r = rt.handle_group("g", hb)
                assert r.error_code == 0 and r.member_epoch == 1, r
            assert asked == [] and rt._timer_at == armed
        finally:
            rt.stop()

    asyncio.run(main())
