"""Loading coordinator shards in the background, in-process (docs/durability-and-metrics.md).

``CoordinatorRuntime.start(loop, background=True)`` (what the server does) replays each shard's
log on a loader thread through ``storage.replay_entries``: requests for a shard still loading are
answered COORDINATOR_LOAD_IN_PROGRESS while the other shards serve; bad data is a LogError naming
the file, the shard and the offset; a failed append reloads the shard in the background too.
A slow log (one that sleeps while it is read) stands in for a large one.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator, Sequence

import pytest

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
)
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.coordinator.records import OffsetCommitValue, offset_commit_record
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.runtime import CoordinatorRuntime, partition_for
from groupcoord.storage.log import Entry, LogError, OffsetEntry
from groupcoord.storage.memory import MemoryLog

TOPIC = TopicMetadata(uuid.uuid4(), "t", 4)
IMAGE = MetadataImage.of([TOPIC])
SHARDS = 2


def _groups() -> tuple[str, str]:
    """A group id of shard 0 and one of shard 1."""
    by_shard: dict[int, str] = {}
    for i in range(100):
        by_shard.setdefault(partition_for(f"g{i}", SHARDS), f"g{i}")
    return by_shard[0], by_shard[1]


SLOW_GROUP, FAST_GROUP = _groups()


class SlowLog(MemoryLog):
    """Reading shard 0 blocks until ``release`` is set (a very large log, as seen by clients)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.reading = threading.Event()
        self.fail_next_append = 0

    def read_with_offsets(self, shard: int) -> Iterator[OffsetEntry]:
        for n, entry in enumerate(super().read_with_offsets(shard)):
            if shard == 0 and n == 0:
                self.reading.set()
                assert self.release.wait(20)
            yield entry

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail_next_append:
            self.fail_next_append -= 1
            raise LogError("disk on fire")
        super().append(shard, batch, now_ms)


def _commit(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group, (OffsetCommitTopic("t", (OffsetCommitPartition(0, offset),)),))


def _fetched(rt: CoordinatorRuntime, group: str) -> tuple[int, int | None]:
    r = rt.handle_group(group, OffsetFetchRequest(group, None))
    offsets = [p.committed_offset for t in r.topics for p in t.partitions]
    return int(r.error_code), offsets[0] if offsets else None


def _seed(log: MemoryLog, group: str, offset: int) -> None:
    rec = offset_commit_record(group, "t", 0, OffsetCommitValue(offset, -1, "", 1, -1,
                                                               TOPIC.topic_id))
    log.append(partition_for(group, SHARDS), [rec.encode()])


async def _until(cond: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition never reached"
        await asyncio.sleep(0.01)


def _runtime(log: MemoryLog) -> CoordinatorRuntime:
    return CoordinatorRuntime(log, SHARDS, CoordinatorConfig(), IMAGE, lambda: str(uuid.uuid4()))


def test_a_loading_shard_answers_load_in_progress_while_the_others_serve() -> None:
    async def main() -> None:
        log = SlowLog()
        _seed(log, SLOW_GROUP, 42)
        _seed(log, FAST_GROUP, 7)
        rt = _runtime(log)
        rt.start(asyncio.get_running_loop(), background=True)
        try:
            await asyncio.to_thread(log.reading.wait, 10)
            assert rt.is_loading(0)
            code, _ = _fetched(rt, SLOW_GROUP)
            assert code == ErrorCode.coordinator_load_in_progress
            hb = rt.handle_group(SLOW_GROUP, ConsumerGroupHeartbeatRequest(
                SLOW_GROUP, "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                topic_partitions=()))
            assert hb.error_code == ErrorCode.coordinator_load_in_progress and hb.error_message
            d = rt.handle_group(SLOW_GROUP, ConsumerGroupDescribeRequest((SLOW_GROUP,)))
            assert d.groups[0].error_code == ErrorCode.coordinator_load_in_progress
            # a request type only the shard's managers know (a connect heartbeat)
            w = rt.handle_group(SLOW_GROUP, ConnectGroupHeartbeatRequest(
                group_id=SLOW_GROUP, member_id="w", member_epoch=0))
            assert isinstance(w, ConnectGroupHeartbeatResponse)
            assert w.error_code == ErrorCode.coordinator_load_in_progress
            # shard 1 loaded meanwhile and serves
            await _until(lambda: not rt.is_loading(1))
            assert _fetched(rt, FAST_GROUP) == (0, 7)
            assert rt.handle_group(FAST_GROUP, _commit(FAST_GROUP, 8)).topics[0] \
                .partitions[0].error_code == 0
            log.release.set()
            await asyncio.wait_for(rt.wait_loaded(), 10)
            assert _fetched(rt, SLOW_GROUP) == (0, 42)
            assert rt.metrics.loads == 2 and rt.metrics.load_time_max_ms > 0
        finally:
            log.release.set()
            rt.stop()

    asyncio.run(main())


def test_the_synchronous_start_loads_everything_before_it_returns() -> None:
    async def main() -> None:
        log = MemoryLog()
        _seed(log, SLOW_GROUP, 3)
        rt = _runtime(log)
        rt.start(asyncio.get_running_loop())
        try:
            assert not rt.is_loading(0) and _fetched(rt, SLOW_GROUP) == (0, 3)
            await rt.wait_loaded()
        finally:
            rt.stop()

    asyncio.run(main())


@pytest.mark.parametrize("background", [True, False])
def test_bad_data_is_a_log_error_naming_file_shard_and_offset(background: bool) -> None:
    async def main() -> None:
        log = MemoryLog()
        _seed(log, SLOW_GROUP, 1)
        _seed(log, SLOW_GROUP, 2)
        log.append(0, [(b"\xff\xfe not a record key", b"junk")])
        rt = _runtime(log)
        rt.start(asyncio.get_running_loop(), background=background)
        try:
            with pytest.raises(LogError, match=r"memory: shard 0, entry at offset 3: cannot apply"):
                await asyncio.wait_for(rt.wait_loaded(), 10)
            assert 0 in rt.load_errors and rt.shards[0] is None
            code, _ = _fetched(rt, FAST_GROUP)
            assert code == 0  # the other shard serves
            assert _fetched(rt, SLOW_GROUP)[0] == ErrorCode.coordinator_not_available
            assert rt.loads == 1  # not tried again at once
            rt.load_retry_backoff_s = 0.0
            rt._retry_at.clear()
            code, _ = _fetched(rt, SLOW_GROUP)  # the next request tries the load again
            expected = ErrorCode.coordinator_load_in_progress if background else \
                ErrorCode.coordinator_not_available
            assert code == expected
            with pytest.raises(LogError, match="offset 3"):
                await asyncio.wait_for(rt.wait_loaded(), 10)
            assert _fetched(rt, SLOW_GROUP)[0] in (ErrorCode.coordinator_not_available,
                                                   ErrorCode.coordinator_load_in_progress)
        finally:
            rt.stop()

    asyncio.run(main())


def test_a_failed_append_reloads_the_shard_in_the_background() -> None:
    async def main() -> None:
        log = SlowLog()
        log.release.set()
        rt = _runtime(log)
        rt.start(asyncio.get_running_loop(), background=True)
        try:
            await rt.wait_loaded()
            assert rt.handle_group(SLOW_GROUP, _commit(SLOW_GROUP, 5)).topics[0] \
                .partitions[0].error_code == 0
            log.release.clear()
            log.reading.clear()
            log.fail_next_append = 1
            r = rt.handle_group(SLOW_GROUP, _commit(SLOW_GROUP, 6))
            assert r.topics[0].partitions[0].error_code == ErrorCode.coordinator_not_available
            await asyncio.to_thread(log.reading.wait, 10)
            assert _fetched(rt, SLOW_GROUP)[0] == ErrorCode.coordinator_load_in_progress
            log.release.set()
            await rt.wait_loaded()
            assert _fetched(rt, SLOW_GROUP) == (0, 5)  # the failed commit never happened
            assert rt.append_failures == 1 and rt.loads == 3
        finally:
            log.release.set()
            rt.stop()

    asyncio.run(main())


def test_topics_changed_while_loading_are_seen_by_the_load_duties() -> None:
    async def main() -> None:
        log = SlowLog()
        rt = _runtime(log)
        loop = asyncio.get_running_loop()
        rt.start(loop, background=True)
        await rt.wait_loaded()
        hb = rt.handle_group(SLOW_GROUP, ConsumerGroupHeartbeatRequest(
            SLOW_GROUP, "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t", "u"),
            topic_partitions=()))
        assert hb.error_code == 0 and hb.member_epoch == 1
        rt.stop()
        # a new runtime on the same log; topic "u" appears while shard 0 replays
        log.release.clear()
        log.reading.clear()
        rt = _runtime(log)
        rt.start(loop, background=True)
        try:
            await asyncio.to_thread(log.reading.wait, 10)
            rt.update_metadata(MetadataImage.of([TOPIC, TopicMetadata(uuid.uuid4(), "u", 2)]))
            log.release.set()
            await rt.wait_loaded()
            d = rt.handle_group(SLOW_GROUP, ConsumerGroupDescribeRequest((SLOW_GROUP,)))
            g = d.groups[0]
            assert g.error_code == 0 and g.group_epoch == 2  # bumped by the load duties
            assert sum(len(tp.partitions) for tp in g.members[0].target_assignment.topic_partitions) == 6
        finally:
            log.release.set()
            rt.stop()

    asyncio.run(main())
