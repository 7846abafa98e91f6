"""The transaction coordinator's driver (``server/transaction_runtime.py``) on a memory log and
a clock the test moves: write before respond, a failed append rebuilds the coordinator from its
log, failed markers are tried again, a new runtime on the same log completes what was prepared
and bumps the coordinator epoch."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.runtime import Clock
from groupcoord.server.transaction_markers import TransactionMarkers
from groupcoord.server.transaction_runtime import MARKER_RETRY_MS, TransactionRuntime
from groupcoord.storage.log import Entry, LogError
from groupcoord.storage.memory import MemoryLog
from groupcoord.transactions.config import TransactionConfig
from groupcoord.transactions.state import TransactionState as S

from .test_transactions_wire import Fakes

CONFIG = TransactionConfig(partitions=3)


class ManualClock(Clock):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_000

    def now_ms(self) -> int:
        return self.now


class FlakyLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__()
        self.fail_next = 0

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise LogError("disk gone")
        super().append(shard, batch, now_ms)


def runtime(log: MemoryLog, fakes: Fakes, clock: ManualClock) -> TransactionRuntime:
    ids = itertools.count(1)
    rt = TransactionRuntime(log, CONFIG, lambda: next(ids),
                            TransactionMarkers(fakes.partition, fakes.groups), clock)
    rt.start()
    return rt


def test_a_failed_append_answers_not_available_and_keeps_the_log_and_memory_equal() -> None:
    log, fakes, clock = FlakyLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 1}
    rt = runtime(log, fakes, clock)
    r = rt.run(lambda c: c.init_producer_id("t", 5000, clock.now))
    assert r.error == 0
    log.fail_next = 1
    failed = rt.run(lambda c: c.add_partitions("t", r.producer_id, 0, [("a", 0)], clock.now))
    assert failed.error == E.coordinator_not_available
    assert rt.coordinator.txns["t"].state is S.EMPTY  # rebuilt from the log
    ok = rt.run(lambda c: c.add_partitions("t", r.producer_id, 0, [("a", 0)], clock.now))
    assert ok.error == 0 and rt.coordinator.txns["t"].state is S.ONGOING


def test_failed_markers_are_tried_again_and_a_restart_completes_a_prepared_transaction() -> None:
    log, fakes, clock = FlakyLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 2}
    rt = runtime(log, fakes, clock)
    r = rt.run(lambda c: c.init_producer_id("t", 5000, clock.now))
    pid = r.producer_id
    assert rt.run(lambda c: c.add_partitions("t", pid, 0, [("a", 0), ("a", 1)], clock.now)).error == 0
    fakes.fail[0] = True
    assert rt.run(lambda c: c.end_txn("t", pid, 0, True, clock.now)).error == 0
    assert rt.coordinator.txns["t"].state is S.PREPARE_COMMIT
    assert rt.next_deadline() == clock.now + MARKER_RETRY_MS
    clock.now += MARKER_RETRY_MS
    rt.expire()  # still failing: tried again later
    assert rt.coordinator.txns["t"].state is S.PREPARE_COMMIT and rt.marker_failures == 2
    # a new runtime on the same log (a restart): it takes the partitions over and completes it
    fakes.fail[0] = False
    again = runtime(log, fakes, clock)
    assert again.coordinator.txns["t"].state is S.COMPLETE_COMMIT
    assert fakes.partitions[("a", 0)].markers == [(pid, 0, True, 2)]
    assert again.completed[True] == 1
    # and the old one, whose retry is stale now, writes nothing more when its timer fires
    rt.coordinator = again.coordinator
    clock.now += MARKER_RETRY_MS
    rt.expire()
    assert fakes.partitions[("a", 0)].markers == [(pid, 0, True, 2)]


def test_a_failed_append_leaves_prepared_transactions_to_the_retry_timer() -> None:
    log, fakes, clock = FlakyLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 1}
    rt = runtime(log, fakes, clock)
    pid = rt.run(lambda c: c.init_producer_id("t", 5000, clock.now)).producer_id
    rt.run(lambda c: c.add_partitions("t", pid, 0, [("a", 0)], clock.now))
    fakes.fail[0] = True  # EndTxn's PrepareCommit is written, its markers fail
    rt.run(lambda c: c.end_txn("t", pid, 0, True, clock.now))
    fakes.fail[0] = False
    log.fail_next = 1  # the retried markers are written, the completion's append fails
    clock.now += MARKER_RETRY_MS
    rt.expire()
    assert rt.coordinator.txns["t"].state is S.PREPARE_COMMIT  # the log's state
    clock.now += MARKER_RETRY_MS
    rt.expire()
    assert rt.coordinator.txns["t"].state is S.COMPLETE_COMMIT
    assert fakes.partitions[("a", 0)].markers == [(pid, 0, True, 1)] * 2  # written again: idempotent


def test_the_compacted_transaction_log_replays_to_the_same_state() -> None:
    log, fakes, clock = FlakyLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 3}
    rt = runtime(log, fakes, clock)
    for i in range(6):
        tid = f"t{i}"
        pid = rt.run(lambda c, tid=tid: c.init_producer_id(tid, 5000, clock.now)).producer_id
        for round_ in range(3):
            clock.now += 10
            rt.run(lambda c, tid=tid, pid=pid, r=round_: c.add_partitions(
                tid, pid, 0, [("a", r)], clock.now))
            rt.run(lambda c, tid=tid, pid=pid, r=round_: c.end_txn(
                tid, pid, 0, r % 2 == 0, clock.now))
    before = sum(1 for p in log.shards() for _ in log.read(p))
    removed = sum(log.compact(p, clock.now, 0).removed for p in log.shards())
    assert removed > 0 and sum(1 for p in log.shards() for _ in log.read(p)) == before - removed
    again = TransactionRuntime(log, CONFIG, lambda: -1,
                               TransactionMarkers(fakes.partition, fakes.groups), clock)
    again._rebuild()
    assert again.coordinator.txns == rt.coordinator.txns
    assert again.coordinator.coordinator_epochs == rt.coordinator.coordinator_epochs


class CountingLog(MemoryLog):
    """Counts the commits: ``append_many`` is one (as the SQLite log's), ``append`` one each."""

    def __init__(self) -> None:
        super().__init__()
        self.commits: list[list[int]] = []

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        self.commits.append([shard])
        super().append(shard, batch, now_ms)

    def append_many(self, batches: Sequence[tuple[int, Sequence[Entry]]],
                    now_ms: int | None = None) -> None:
        self.commits.append([shard for shard, _ in batches])
        for shard, batch in batches:
            super().append(shard, batch, now_ms)


def test_end_txn_answers_at_prepare_and_group_commits_the_completions_after_the_answers() -> None:
    """Kafka's handleEndTransaction answers once PrepareCommit is durable: the markers and the
    CompleteCommit records of every EndTxn of one loop iteration follow in one callback, the
    completions in one commit of the transaction log."""

    log, fakes, clock = CountingLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 4}
    loop = asyncio.new_event_loop()
    try:
        ids = itertools.count(1)
        rt = TransactionRuntime(log, CONFIG, lambda: next(ids),
                                TransactionMarkers(fakes.partition, fakes.groups), clock)
        rt.start(loop)
        tids = ["t0", "t1", "t2", "t3"]
        # ids on different shards of the log, so that one commit spans several shards
        assert len({rt.coordinator.partition_of(t) for t in tids}) > 1
        pids = {}
        for i, tid in enumerate(tids):
            pids[tid] = rt.run(lambda c, tid=tid: c.init_producer_id(tid, 5000, clock.now)).producer_id
            assert rt.run(lambda c, tid=tid, i=i: c.add_partitions(
                tid, pids[tid], 0, [("a", i)], clock.now)).error == 0
        log.commits.clear()
        for tid in tids:
            r = rt.run(lambda c, tid=tid: c.end_txn(tid, pids[tid], 0, True, clock.now),
                       defer_markers=True)
            assert r.error == 0
            # answered at PrepareCommit: no marker yet, a request about it is told to retry
            assert rt.coordinator.txns[tid].state is S.PREPARE_COMMIT
        assert all(fakes.partitions.get(("a", i)) is None
                   or not fakes.partitions[("a", i)].markers for i in range(4))
        again = rt.run(lambda c: c.add_partitions("t0", pids["t0"], 0, [("a", 0)], clock.now))
        assert again.error == E.concurrent_transactions
        assert len(log.commits) == 4  # the four PrepareCommit records, one commit each
        loop.call_soon(loop.stop)
        loop.run_forever()  # the callback runs before anything the loop reads next
        for i, tid in enumerate(tids):
            assert rt.coordinator.txns[tid].state is S.COMPLETE_COMMIT
            assert fakes.partitions[("a", i)].markers == [(pids[tid], 0, True, 1)]
        assert rt.completed[True] == 4
        # the four completions: one commit across their shards
        assert len(log.commits) == 5
        assert sorted(log.commits[-1]) == sorted({rt.coordinator.partition_of(t) for t in tids})
        # what the log holds replays to the same state (a restart finds them complete)
        rt.stop()
        restarted = TransactionRuntime(log, CONFIG, lambda: next(ids),
                                       TransactionMarkers(fakes.partition, fakes.groups), clock)
        restarted.start()
        assert all(restarted.coordinator.txns[t].state is S.COMPLETE_COMMIT for t in tids)
    finally:
        loop.close()


def test_a_stop_before_the_deferred_markers_leaves_them_to_loading() -> None:

    log, fakes, clock = CountingLog(), Fakes(), ManualClock()
    fakes.topics = {"a": 1}
    loop = asyncio.new_event_loop()
    try:
        ids = itertools.count(1)
        rt = TransactionRuntime(log, CONFIG, lambda: next(ids),
                                TransactionMarkers(fakes.partition, fakes.groups), clock)
        rt.start(loop)
        pid = rt.run(lambda c: c.init_producer_id("t", 5000, clock.now)).producer_id
        assert rt.run(lambda c: c.add_partitions("t", pid, 0, [("a", 0)], clock.now)).error == 0
        assert rt.run(lambda c: c.end_txn("t", pid, 0, True, clock.now),
                      defer_markers=True).error == 0
        rt.stop()  # before the callback: PrepareCommit is durable, the markers are not written
        loop.call_soon(loop.stop)
        loop.run_forever()
        assert ("a", 0) not in fakes.partitions  # no marker was ever written there
        restarted = runtime(log, fakes, clock)
        assert restarted.coordinator.txns["t"].state is S.COMPLETE_COMMIT
        assert fakes.partitions[("a", 0)].markers == [(pid, 0, True, 2)]
    finally:
        loop.close()
