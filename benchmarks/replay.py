"""Record log benchmarks (docs/design.md "Benchmarks"): reload and append rates.

Two scripted workloads drive a real :class:`Shard` (untimed): 40 consumer groups on shared
topics (20 topics x 16 partitions, two per group, up to 12 members); members join and leave,
heartbeat every 5 s (every second while reconciling, acknowledging revocations at once) and
commit the offsets of the partitions they own. ``steady`` (200k records; ~94% offset commits,
the rest joins, leaves and their assignment records) is what a coordinator's log mostly holds;
``churn`` (100k records; members join and leave all the time, offsets ~25%) stresses the group
records. Each request's records form one batch, as the server appends them. The record mix and
the batch sizes are in the params.

- ``replay.sqlite.reload`` (per_s): records per second from an open SQLite log into a fresh
  shard: read + ``Record.decode`` + ``Shard.replay`` through ``storage.replay_entries`` (the
  loader's path). Target: >= 200,000/s. ``...workload=churn`` for the churn log.
- its breakdown: ``replay.sqlite.read`` (rows only), ``replay.decode`` (decode only),
  ``replay.apply`` (``Shard.replay`` of records decoded beforehand); ``replay.memory.reload``;
- ``replay.sqlite.open`` (ms): opening the log, including the quick check of every page;
- ``replay.sqlite.compact`` (ms) of the whole steady log, then
  ``replay.sqlite.reload.compacted`` (ms), and ``replay.sqlite.append.during_compaction.p99``
  (ms): append latency while a compaction runs on another thread (max and median in params);
- ``replay.sqlite.append.durability=D`` (per_s): records per second appended one batch per
  transaction, for each durability setting. Target: >= 20,000/s with the default
  (``normal``). ``full`` fsyncs every batch, so it runs on fewer batches.

Times are medians of repeated runs with the garbage collector off (``_harness.median_ms``).
"""

from __future__ import annotations

import collections
import os
import random
import shutil
import tempfile
import threading
import time
from base64 import urlsafe_b64encode
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from benchmarks._harness import Result, median_ms
from groupcoord.coordinator.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.storage import MemoryLog, replay_entries
from groupcoord.storage.log import CompactionResult, Entry
from groupcoord.storage.sqlite import SqliteLog

# ------------------------------------------------------------------------------------ workload


@dataclass(slots=True)
class _Member:
    group_id: str
    member_id: str
    topics: tuple[str, ...]
    epoch: int = 0
    owned: tuple[TopicPartitions, ...] = ()
    offset: int = 0
    phase: int = 0


@dataclass(slots=True, frozen=True)
class Mix:
    """How a workload behaves per group and per simulated second."""

    name: str
    join_p: float  # a member joins (below max_members)
    leave_p: float  # a member leaves
    commit_every_s: int  # each member commits its partitions this often


STEADY = Mix("steady", join_p=0.04, leave_p=0.02, commit_every_s=2)
CHURN = Mix("churn", join_p=0.5, leave_p=0.4, commit_every_s=10)


@dataclass(slots=True)
class Workload:
    shard: Shard
    mix_name: str
    #: ``(now_ms, batch)`` in append order.
    batches: list[tuple[int, list[Entry]]] = field(default_factory=list)
    records: int = 0
    mix: dict[str, int] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        sizes = [len(b) for _, b in self.batches]
        total = max(self.records, 1)
        return {
            "workload": self.mix_name,
            "records": self.records,
            "batches": len(self.batches),
            "batch_mean": round(self.records / max(len(sizes), 1), 2),
            "batch_max": max(sizes, default=0),
            "mix": {k: round(v / total, 3) for k, v in sorted(self.mix.items())},
        }


def make_workload(target_records: int, mix: Mix = STEADY, groups: int = 40, topics: int = 20,
                  partitions: int = 16, max_members: int = 12, seed: int = 5) -> Workload:
    """Drive a shard until it has produced ``target_records`` records (untimed)."""
    rng = random.Random(seed)
    image = MetadataImage.of(
        TopicMetadata(_topic_id(t), f"topic-{t:03d}", partitions) for t in range(topics))
    shard = Shard(0, metadata=image)
    wl = Workload(shard, mix.name)
    counts: collections.Counter[str] = collections.Counter()
    by_id = image.by_id
    members: dict[str, list[_Member]] = {f"group-{g:03d}": [] for g in range(groups)}
    subs = {gid: (f"topic-{(g * 2) % topics:03d}", f"topic-{(g * 2 + 1) % topics:03d}")
            for g, gid in enumerate(members)}
    now = 1_000

    def record(records: list[Record]) -> None:
        if records:
            batch = [r.encode() for r in records]
            wl.batches.append((now, batch))
            wl.records += len(batch)
            for r in records:
                counts[r.key.type.name + (".tombstone" if r.value is None else "")] += 1

    def do(request: Any) -> Any:
        res = shard.handle(request, now)
        record(res.records)
        return res.response

    def heartbeat(m: _Member, join: bool = False) -> None:
        if join:
            req = ConsumerGroupHeartbeatRequest(
                m.group_id, m.member_id, 0, rebalance_timeout_ms=30_000,
                subscribed_topic_names=m.topics, topic_partitions=(), client_id="bench",
                client_host="/10.0.0.1")
        else:
            req = ConsumerGroupHeartbeatRequest(m.group_id, m.member_id, m.epoch,
                                                topic_partitions=m.owned, client_id="bench",
                                                client_host="/10.0.0.1")
        r: ConsumerGroupHeartbeatResponse = do(req)
        if r.error_code:
            m.epoch, m.owned = -1, ()
            return
        m.epoch = r.member_epoch
        if r.assignment is not None:
            m.owned = r.assignment.topic_partitions

    def commit(m: _Member) -> None:
        m.offset += rng.randrange(50, 500)
        topics_ = tuple(OffsetCommitTopic(by_id[tp.topic_id].name, tuple(
            OffsetCommitPartition(p, m.offset + p) for p in tp.partitions)) for tp in m.owned)
        if topics_:
            do(OffsetCommitRequest(m.group_id, topics_, m.epoch, m.member_id))

    tick = 0
    while wl.records < target_records:
        for gid, ms in members.items():
            if len(ms) < max_members and (len(ms) < 3 or rng.random() < mix.join_p):
                member_id = urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
                m = _Member(gid, member_id, subs[gid], phase=rng.randrange(10))
                heartbeat(m, join=True)
                if m.epoch > 0:
                    ms.append(m)
            elif len(ms) > 1 and rng.random() < mix.leave_p:
                m = ms.pop(rng.randrange(len(ms)))
                do(ConsumerGroupHeartbeatRequest(gid, m.member_id, -1))
            group = shard.groups.get(gid)
            target_epoch = group.assignment_epoch if group is not None else 0
            for m in list(ms):
                # every 5 s, every second while reconciling
                if m.epoch != target_epoch or (tick + m.phase) % 5 == 0:
                    heartbeat(m)
                    if m.epoch < 0:
                        ms.remove(m)
                        continue
                if (tick + m.phase) % mix.commit_every_s == 0:
                    commit(m)
        now += 1_000
        tick += 1
        for res in shard.expire_timers(now):
            record(res.records)
    wl.mix = dict(counts)
    return wl


def _topic_id(t: int) -> UUID:
    return UUID(int=(t + 1) * 0x9E3779B97F4A7C15)


# ------------------------------------------------------------------------------------ helpers


def _fill(log: SqliteLog | MemoryLog, wl: Workload) -> None:
    for now, batch in wl.batches:
        log.append(0, batch, now_ms=now)


def _reload(log: SqliteLog | MemoryLog, metadata: MetadataImage) -> Callable[[], object]:
    """The loader's path: read, decode, replay, into a fresh shard."""

    def run() -> object:
        shard = Shard(0, metadata=metadata)
        decode = Record.decode
        replay = shard.replay
        return replay_entries(log, 0, lambda k, v: replay(decode(k, v)))

    return run


def _per_s(n: int, ms: float) -> float:
    return round(n / (ms / 1000.0), 1)


def _machine() -> dict[str, Any]:
    import platform
    import sqlite3

    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def _reload_results(wl: Workload, tmp: str, repeat: int, detail: bool) -> list[Result]:
    """Reload figures for one workload and their breakdown (``detail``: also open, a memory
    log, compaction and appends during a compaction)."""
    results: list[Result] = []
    name = "" if wl.mix_name == STEADY.name else f".workload={wl.mix_name}"
    image = wl.shard.metadata
    n = wl.records
    data = os.path.join(tmp, f"reload-{wl.mix_name}")
    log = SqliteLog(data, durability="off")
    _fill(log, wl)
    log.close()
    db = os.path.join(data, "groupcoord.db")
    size = os.path.getsize(db)
    base = {**wl.params(), **_machine(), "size_bytes": size}

    if detail:
        opened: list[SqliteLog] = []

        def close_opened() -> None:
            while opened:
                opened.pop().close()

        ms = median_ms(lambda: opened.append(SqliteLog(data)), repeat=repeat, setup=close_opened)
        close_opened()
        results.append(Result("replay.sqlite.open", round(ms, 2), "ms", {**base, "check": "quick"}))

    log = SqliteLog(data)
    try:
        check = Shard(0, metadata=image)
        replay_entries(log, 0, lambda k, v: check.replay(Record.decode(k, v)))
        assert check.state_digest() == wl.shard.state_digest(), "reload is not the live state"
        ms = median_ms(_reload(log, image), repeat=repeat)
        results.append(Result(f"replay.sqlite.reload{name}", _per_s(n, ms), "per_s",
                              {**base, "ms": round(ms, 1)}))
        ms = median_ms(lambda: sum(1 for _ in log.read(0)), repeat=repeat)
        results.append(Result(f"replay.sqlite.read{name}", _per_s(n, ms), "per_s",
                              {**base, "ms": round(ms, 1)}))
        entries = list(log.read(0))
    finally:
        log.close()

    # the breakdown: decode alone (records dropped as made, as in a reload), replay alone
    # (of records decoded beforehand), everything from a memory log
    def decode_all() -> None:
        decode = Record.decode
        for k, v in entries:
            decode(k, v)

    ms = median_ms(decode_all, repeat=repeat)
    results.append(Result(f"replay.decode{name}", _per_s(n, ms), "per_s",
                          {**base, "ms": round(ms, 1)}))

    decoded = [Record.decode(k, v) for k, v in entries]

    def apply_all() -> None:
        shard = Shard(0, metadata=image)
        replay = shard.replay
        for rec in decoded:
            replay(rec)

    ms = median_ms(apply_all, repeat=repeat)
    results.append(Result(f"replay.apply{name}", _per_s(n, ms), "per_s",
                          {**base, "ms": round(ms, 1)}))
    decoded.clear()
    entries.clear()
    if not detail:
        return results
    mem = MemoryLog()
    _fill(mem, wl)
    ms = median_ms(_reload(mem, image), repeat=repeat)
    results.append(Result("replay.memory.reload", _per_s(n, ms), "per_s", {**base, "ms": round(ms, 1)}))
    del mem

    # compaction of the whole log, on a copy so that every run starts from the same file
    copies: list[SqliteLog] = []
    dst = os.path.join(tmp, "compact")

    def fresh_copy() -> None:
        while copies:
            copies.pop().close()
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        shutil.copy(db, dst)
        copies.append(SqliteLog(dst, check="none"))

    compacted: list[CompactionResult] = []
    end_ms = wl.batches[-1][0]
    ms = median_ms(lambda: compacted.append(copies[0].compact(0, end_ms, 60_000)),
                   repeat=repeat, setup=fresh_copy)
    c = compacted[-1]
    kept = n - c.removed
    results.append(Result("replay.sqlite.compact", round(ms, 1), "ms", {
        **base, "removed": c.removed, "kept": kept, "chunks": c.chunks,
        "chunk_rows": copies[0].compaction_chunk, "max_chunk_ms": round(c.max_chunk_ms, 2)}))
    ms = median_ms(_reload(copies[0], image), repeat=repeat)
    results.append(Result("replay.sqlite.reload.compacted", round(ms, 2), "ms",
                          {**base, "records": kept}))

    # appends while a compaction runs on another thread: how long does an append wait?
    fresh_copy()
    lg = copies[0]
    done = threading.Event()
    worker = threading.Thread(target=lambda: (lg.compact(0, end_ms, 60_000), done.set()))
    latencies: list[float] = []
    worker.start()
    # The workload's batches again and again, later each time: a compaction slowed down by a
    # loaded machine can outlast one pass over them.
    i = 0
    while not done.is_set():
        lap, k = divmod(i, len(wl.batches))
        now, batch = wl.batches[k]
        i += 1
        t0 = time.perf_counter()
        lg.append(0, batch, now_ms=end_ms * (lap + 1) + now)
        latencies.append((time.perf_counter() - t0) * 1000.0)
    worker.join()
    latencies.sort()
    results.append(Result("replay.sqlite.append.during_compaction.p99", round(
        latencies[int(len(latencies) * 0.99)], 3), "ms", {
        **_machine(), "appends": len(latencies), "max_ms": round(latencies[-1], 2),
        "median_ms": round(latencies[len(latencies) // 2], 3), "durability": "normal",
        "chunk_rows": lg.compaction_chunk}))
    while copies:
        copies.pop().close()
    return results


def _append_results(wl: Workload, tmp: str, repeat: int, quick: bool) -> list[Result]:
    """Records per second appended one batch per transaction, for each durability setting."""
    results: list[Result] = []
    for durability in ("normal", "full", "off"):
        if durability == "full":  # one fsync per batch: a smaller sample
            budget = 300 if quick else 3_000
        else:
            budget = 5_000 if quick else 60_000
        batches: list[tuple[int, list[Entry]]] = []
        count = 0
        for item in wl.batches:
            if count >= budget:
                break
            batches.append(item)
            count += len(item[1])
        logs: list[SqliteLog] = []
        d = os.path.join(tmp, f"append-{durability}")

        def setup(durability: str = durability, logs: list[SqliteLog] = logs, d: str = d) -> None:
            while logs:
                logs.pop().close()
            shutil.rmtree(d, ignore_errors=True)
            logs.append(SqliteLog(d, durability=durability))

        def append(batches: list[tuple[int, list[Entry]]] = batches,
                   logs: list[SqliteLog] = logs) -> None:
            lg = logs[0]
            for now, b in batches:
                lg.append(0, b, now_ms=now)

        ms = median_ms(append, repeat=repeat, setup=setup)
        while logs:
            logs.pop().close()
        results.append(Result(f"replay.sqlite.append.durability={durability}", _per_s(count, ms),
                              "per_s", {
                                  **_machine(), "workload": wl.mix_name, "durability": durability,
                                  "records": count, "batches": len(batches),
                                  "batch_mean": round(count / len(batches), 2),
                                  "batch_max": max(len(b) for _, b in batches),
                                  "batches_per_s": _per_s(len(batches), ms)}))
    return results


def run(quick: bool = False) -> list[Result]:
    """All record-log benchmarks; ``quick`` uses small workloads (seconds in all)."""
    repeat = 3 if quick else 5
    steady = make_workload(4_000 if quick else 200_000, STEADY)
    results: list[Result] = []
    tmp = tempfile.mkdtemp(prefix="groupcoord-bench-replay-")
    try:
        results += _reload_results(steady, tmp, repeat, detail=True)
        results += _append_results(steady, tmp, repeat, quick)
        churn = make_workload(2_000 if quick else 100_000, CHURN)
        results += _reload_results(churn, tmp, repeat, detail=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


if __name__ == "__main__":  # pragma: no cover - manual runs
    import json
    import sys

    t0 = time.perf_counter()
    rows = [r.as_json() for r in run(quick="--quick" in sys.argv)]
    json.dump(rows, sys.stdout, indent=1)
    sys.stdout.write(f"\n{time.perf_counter() - t0:.1f} s\n")
