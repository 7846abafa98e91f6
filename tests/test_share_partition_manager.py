"""The broker's share partitions and their share-state log (``server/share_partitions.py``):
initialisation, write before respond, a failed append, replay with tombstones and compaction,
lock expiry on the event loop's timer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.config import ShareGroupConfig
from groupcoord.coordinator.share_partitions.partition import Acknowledgement, RecordState
from groupcoord.coordinator.share_partitions.records import ShareStateKey
from groupcoord.server.partition_log import PartitionLog
from groupcoord.server.share_partitions import SHARD, SharePartitionManager, ShareStateError
from groupcoord.storage.log import Entry, LogError
from groupcoord.storage.memory import MemoryLog

from .test_partition_store import batch

KEY = ShareStateKey("g", UUID(int=1), 0)


class FlakyLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__()
        self.fail = 0

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail:
            self.fail -= 1
            raise LogError("disk full")
        super().append(shard, batch, now_ms)


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000

    def __call__(self) -> int:
        return self.ms


def plog_with(tmp_path: Path, n: int) -> PartitionLog:
    """A partition log holding ``n`` one-record batches (offsets 0..n-1)."""
    plog = PartitionLog(tmp_path / "p.log", in_memory=True)
    for _ in range(n):
        plog.append(batch())
    return plog


def test_initialisation_follows_auto_offset_reset(tmp_path: Path) -> None:
    plog = plog_with(tmp_path, 3)
    m = SharePartitionManager(MemoryLog(), Clock())
    assert m.get_or_init(KEY, plog).start_offset == 3  # latest
    m.group_config = lambda g: ShareGroupConfig(auto_offset_reset="earliest")
    other = ShareStateKey("g", UUID(int=1), 1)
    assert m.get_or_init(other, plog).start_offset == 0
    assert len(list(m.log.read(SHARD))) == 2  # each written before use
    # by_duration (KIP-1106): the first batch reaching now minus the duration (batches of
    # test_partition_store.batch() are stamped 1000 / 1001 ms; the clock says 1000 ms)
    m.group_config = lambda g: ShareGroupConfig(auto_offset_reset="by_duration:PT0S")
    assert m.get_or_init(ShareStateKey("g", UUID(int=1), 2), plog).start_offset == 0
    m.now_ms = lambda: 10_000
    assert m.get_or_init(ShareStateKey("g", UUID(int=1), 3), plog).start_offset == 3


def test_a_failed_append_goes_back_to_the_durable_state(tmp_path: Path) -> None:
    log = FlakyLog()
    m = SharePartitionManager(log, Clock())
    m.group_config = lambda g: ShareGroupConfig(record_lock_duration_ms=100)
    sp = m.get_or_init(KEY, plog_with(tmp_path, 0))
    sp.acquire("a", [(0, 4)], 500, now_ms=1_000)
    m.persist(KEY)
    sp.acknowledge("a", [Acknowledgement(0, 1, (1,))], now_ms=1_001)
    log.fail = 1
    with pytest.raises(ShareStateError):
        m.persist(KEY)
    back = m.partitions[KEY]
    assert back is not sp and back.start_offset == 0 and back.acquired() == 0
    assert [back.records[o].delivery_count for o in range(5)] == [1] * 5
    # an initialisation that cannot be written leaves no state behind
    log.fail = 1
    other = ShareStateKey("g", UUID(int=2), 0)
    with pytest.raises(ShareStateError):
        m.get_or_init(other, plog_with(tmp_path, 0))
    assert other not in m.partitions


def test_replay_with_tombstones_and_after_compaction(tmp_path: Path) -> None:
    log = MemoryLog()
    m = SharePartitionManager(log, Clock())
    plog = plog_with(tmp_path, 0)
    gone = ShareStateKey("h", UUID(int=3), 0)
    for key in (KEY, gone):
        m.get_or_init(key, plog).acquire("a", [(0, 2)], 500, now_ms=0)
        m.persist(key)
    m.partitions[KEY].acknowledge("a", [Acknowledgement(0, 0, (1,))], now_ms=1)
    m.persist(KEY)
    m.delete(gone)
    for compact in (False, True):
        if compact:
            log.compact(SHARD, now_ms=10**12, tombstone_retention_ms=0)
        again = SharePartitionManager(log, Clock())
        again.load()
        assert set(again.partitions) == {KEY}
        sp = again.partitions[KEY]
        assert (sp.start_offset, sp.next_offset) == (1, 3)
        assert all(r.state is RecordState.AVAILABLE and r.delivery_count == 1
                   for r in sp.records.values())


def test_bad_bytes_in_the_log_name_the_offset() -> None:
    log = MemoryLog()
    log.append(SHARD, [(KEY.encode(), b"\x00\x09garbage")])
    with pytest.raises(LogError, match="offset 1"):
        SharePartitionManager(log, Clock()).load()


def test_locks_expire_on_the_event_loop_timer(tmp_path: Path) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        m = SharePartitionManager(MemoryLog(), lambda: int(loop.time() * 1000))
        m.group_config = lambda g: ShareGroupConfig(record_lock_duration_ms=50)
        woken: list[int] = []
        m.on_available.append(lambda: woken.append(1))
        m.start(loop)
        sp = m.get_or_init(KEY, plog_with(tmp_path, 0))
        sp.acquire("a", [(0, 1)], 500, now_ms=m.now_ms())
        m.persist(KEY)  # arms the timer at the lock's deadline
        await asyncio.sleep(0.3)
        assert sp.acquired() == 0 and woken
        assert m.partitions[KEY].records[0].delivery_count == 1
        m.stop()

    asyncio.run(main())


def test_release_member_and_the_group_config(tmp_path: Path) -> None:
    m = SharePartitionManager(MemoryLog(), Clock(), {"group.share.delivery.count.limit": "7"})
    assert m.config("g").delivery_count_limit == 7
    m.group_config = lambda g: ShareGroupConfig(delivery_count_limit=3)
    assert m.config("g").delivery_count_limit == 3
    sp = m.get_or_init(KEY, plog_with(tmp_path, 0))
    sp.acquire("a", [(0, 1)], 500, now_ms=0)
    assert m.release_member("g", "b") == 0
    assert m.release_member("g", "a") == 1 and sp.acquired() == 0


# ---------------------------------------------------------------------- property: replay

KEYS = [ShareStateKey(g, UUID(int=t), p) for g in ("g", "h") for t in (1, 2) for p in (0, 1)]

manager_op = st.one_of(
    st.tuples(st.just("fetch"), st.integers(0, len(KEYS) - 1), st.sampled_from("ab"),
              st.integers(1, 6)),
    st.tuples(st.just("ack"), st.integers(0, len(KEYS) - 1), st.sampled_from("ab"),
              st.sampled_from([1, 2, 3])),
    st.tuples(st.just("tick"), st.integers(0, 300)),
    st.tuples(st.just("leave"), st.sampled_from("gh"), st.sampled_from("ab")),
    st.tuples(st.just("reset"), st.integers(0, len(KEYS) - 1), st.integers(0, 12)),
    st.tuples(st.just("delete"), st.sampled_from("gh")),
    st.tuples(st.just("compact")),
)


def durable(m: SharePartitionManager) -> dict[ShareStateKey, tuple[int, int, int, list[Any]]]:
    return {k: (sp.state_epoch, sp.start_offset, sp.next_offset,
                [(RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state,
                  r.delivery_count) for _, r in sorted(sp.records.items())])
            for k, sp in m.partitions.items()}


@settings(max_examples=60, deadline=None)
@given(st.lists(manager_op, max_size=40))
def test_the_share_state_log_replays_to_the_live_state(ops: list[tuple[Any, ...]]) -> None:
    """I4 for share partitions: whatever was done (acquisitions, acknowledgements, expiries,
    members leaving, resets, deleted groups) and however the log was compacted, a manager
    loaded from the log has every partition's durable state as the live one."""
    log = MemoryLog()
    clock = Clock()
    m = SharePartitionManager(log, clock)
    m.group_config = lambda g: ShareGroupConfig(record_lock_duration_ms=100,
                                                delivery_count_limit=3)
    plog = PartitionLog(Path("unused"), in_memory=True)
    for _ in range(12):
        plog.append(batch())
    for op in ops:
        if op[0] == "fetch":
            key = KEYS[op[1]]
            sp = m.get_or_init(key, plog)
            offset = sp.fetch_offset()
            if offset is not None and offset < 12 and sp.acquire(
                    op[2], [(o, o) for o in range(offset, 12)], op[3], clock.ms):
                m.persist(key)
        elif op[0] == "ack":
            key = KEYS[op[1]]
            sp = m.get(key)
            mine = [] if sp is None else sorted(o for o, r in sp.records.items()
                                                if r.member == op[2])
            if sp is not None and mine:
                assert sp.acknowledge(op[2], [Acknowledgement(o, o, (op[3],)) for o in mine],
                                      clock.ms) == 0
                m.persist(key)
        elif op[0] == "tick":
            clock.ms += op[1]
            m.expire(clock.ms)
        elif op[0] == "leave":
            m.release_member(op[1], op[2])
        elif op[0] == "reset":
            m.reset(KEYS[op[1]], op[2])
        elif op[0] == "delete":
            m.delete_groups([op[1]])
        else:
            log.compact(SHARD, now_ms=clock.ms, tombstone_retention_ms=0)
        again = SharePartitionManager(log, clock)
        again.load()
        assert durable(again) == durable(m)
