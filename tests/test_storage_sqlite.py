"""The record log (docs/durability-and-metrics.md): the contract on both backends, the SQLite backend's
durability, schema and corruption handling, compaction, and replay equivalence (I4) after compaction."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.messages import (
    AlterGroupConfigOp,
    AlterGroupConfigsRequest,
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.records import Record, group_epoch_record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.storage import MemoryLog, open_log
from groupcoord.storage.log import LogError, RecordLog, append_shards, replay_entries
from groupcoord.storage.sqlite import DB_NAME, SCHEMA_VERSION, SqliteLog

from .support import image

BACKENDS = ["memory", "sqlite"]


@pytest.fixture(params=BACKENDS)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordLog]:
    lg = open_log(request.param, None if request.param == "memory" else str(tmp_path))
    yield lg
    lg.close()


def entries(lg: RecordLog, shard: int = 0) -> list[tuple[bytes, bytes | None]]:
    return list(lg.read(shard))


# ============================================================================ the contract


def test_append_read_in_order_with_offsets(log: RecordLog) -> None:
    log.append(0, [(b"a", b"1"), (b"b", b"2")], now_ms=10)
    log.append(0, [(b"a", None)], now_ms=11)
    log.append(0, [])  # nothing
    log.append(1, [(b"x", b"9")], now_ms=12)
    assert entries(log) == [(b"a", b"1"), (b"b", b"2"), (b"a", None)]
    assert entries(log, 1) == [(b"x", b"9")]
    assert entries(log, 7) == []
    assert list(log.read_with_offsets(0)) == [(1, b"a", b"1"), (2, b"b", b"2"), (3, b"a", None)]
    assert list(log.read_with_offsets(1)) == [(1, b"x", b"9")]
    assert log.shards() == [0, 1]


def test_read_is_a_snapshot(log: RecordLog) -> None:
    log.append(0, [(b"a", b"1"), (b"b", b"2")], now_ms=1)
    it = log.read(0)
    assert next(it) == (b"a", b"1")
    log.append(0, [(b"c", b"3")], now_ms=2)
    assert list(it) == [(b"b", b"2")]
    assert len(entries(log)) == 3


@pytest.mark.parametrize("bad", [
    [(b"k1", b"v1"), (b"k2", 5)],            # value not bytes, second entry
    [(b"k1", b"v1"), ("k2", b"v2")],         # key not bytes
    [(b"k1", b"v1"), (None, b"v2")],         # null key
    [(b"k1", b"v1"), (b"k2", b"v2", b"x")],  # not a pair
    [(b"k1", b"v1"), (b"k2", {"no": 1})],    # not bindable at all
])
def test_a_failing_batch_leaves_nothing(log: RecordLog, bad: list[Any]) -> None:
    log.append(0, [(b"a", b"1")], now_ms=1)
    with pytest.raises(LogError, match="nothing of the batch was written"):
        log.append(0, bad, now_ms=2)
    with pytest.raises(LogError):
        log.append(5, bad, now_ms=2)  # also for a shard that has no log yet
    assert entries(log) == [(b"a", b"1")]
    assert entries(log, 5) == [] and log.shards() == [0]
    log.append(0, [(b"b", b"2")], now_ms=3)
    assert entries(log) == [(b"a", b"1"), (b"b", b"2")]


def test_append_shards_writes_every_shard_in_order(log: RecordLog) -> None:
    log.append(1, [(b"x", b"0")], now_ms=1)
    append_shards(log, [(1, [(b"a", b"1")]), (3, [(b"b", b"2"), (b"c", None)]), (4, [])],
                  now_ms=2)
    assert entries(log, 1) == [(b"x", b"0"), (b"a", b"1")]
    assert entries(log, 3) == [(b"b", b"2"), (b"c", None)]
    assert log.shards() == [1, 3]


@pytest.mark.parametrize("bad", [[(b"k2", 5)], [(b"k2", {"no": 1})], [(b"k", b"v", b"x")]])
def test_a_group_commit_is_all_or_nothing_across_shards(tmp_path: Path, bad: list[Any]) -> None:
    """SQLite's ``append_many``: several shards' batches in one transaction; a bad entry in the
    last batch leaves nothing in any shard, not even the table of a new shard."""
    lg = SqliteLog(tmp_path)
    try:
        lg.append(0, [(b"a", b"1")], now_ms=1)
        with pytest.raises(LogError, match="nothing"):
            lg.append_many([(0, [(b"b", b"2")]), (7, [(b"c", b"3")]), (2, bad)], now_ms=2)
        assert entries(lg) == [(b"a", b"1")] and lg.shards() == [0]
        lg.append_many([(0, [(b"b", b"2")]), (7, [(b"c", b"3")])], now_ms=3)
        assert entries(lg) == [(b"a", b"1"), (b"b", b"2")] and entries(lg, 7) == [(b"c", b"3")]
    finally:
        lg.close()
    reopened = SqliteLog(tmp_path)  # the new shard's table is registered
    try:
        assert reopened.shards() == [0, 7] and entries(reopened, 7) == [(b"c", b"3")]
    finally:
        reopened.close()


def test_invalid_shard(log: RecordLog) -> None:
    with pytest.raises(LogError, match="invalid shard"):
        log.append(-1, [(b"a", b"1")])


def test_compaction_keeps_the_newest_entry_per_key_in_order(log: RecordLog) -> None:
    log.append(0, [(b"a", b"1"), (b"b", b"1")], now_ms=0)
    log.append(0, [(b"c", b"1"), (b"a", b"2")], now_ms=1)
    log.append(0, [(b"b", b"2"), (b"a", b"3")], now_ms=2)
    log.append(1, [(b"a", b"1"), (b"a", b"2")], now_ms=2)
    r = log.compact(0, now_ms=3, tombstone_retention_ms=0)
    assert (r.scanned, r.superseded, r.tombstones) == (6, 3, 0)
    assert list(log.read_with_offsets(0)) == [(3, b"c", b"1"), (5, b"b", b"2"), (6, b"a", b"3")]
    assert entries(log, 1) == [(b"a", b"1"), (b"a", b"2")]  # other shards untouched
    r = log.compact(0, now_ms=3, tombstone_retention_ms=0)
    assert r.removed == 0
    # offsets are never reused, even when the newest rows go
    log.append(0, [(b"z", None)], now_ms=4)
    assert log.compact(0, now_ms=100, tombstone_retention_ms=0).tombstones == 1
    log.append(0, [(b"y", b"1")], now_ms=5)
    assert list(log.read_with_offsets(0))[-1] == (8, b"y", b"1")


def test_compaction_drops_only_tombstones_older_than_the_retention(log: RecordLog) -> None:
    log.append(0, [(b"old", b"1"), (b"new", b"1"), (b"back", b"1"), (b"live", b"1")], now_ms=0)
    log.append(0, [(b"old", None), (b"back", None)], now_ms=100)
    log.append(0, [(b"new", None)], now_ms=200)
    log.append(0, [(b"back", b"2")], now_ms=210)  # a value after a tombstone: tombstone goes
    # retention 50 at now=220: "old" (age 120) goes, "new" (age 20) stays
    r = log.compact(0, now_ms=220, tombstone_retention_ms=50)
    assert (r.superseded, r.tombstones) == (4, 1)
    assert entries(log) == [(b"live", b"1"), (b"new", None), (b"back", b"2")]
    # a negative retention keeps tombstones forever
    assert log.compact(0, now_ms=10**12, tombstone_retention_ms=-1).removed == 0
    # exactly at the retention: dropped
    assert log.compact(0, now_ms=250, tombstone_retention_ms=50).tombstones == 1
    assert entries(log) == [(b"live", b"1"), (b"back", b"2")]


def test_stats(log: RecordLog) -> None:
    log.append(0, [(b"a", b"1"), (b"b", None)], now_ms=1)
    log.append(2, [(b"a", b"1")], now_ms=1)
    s = log.stats()
    assert s.location == log.location
    assert (s.entries, s.tombstones) == (3, 1)
    assert s.shards[0].entries == 2 and s.shards[0].tombstones == 1
    assert (s.shards[0].first_offset, s.shards[0].last_offset) == (1, 2)
    assert s.shards[2].entries == 1


def test_replay_entries_names_the_file_shard_and_offset(log: RecordLog) -> None:
    shard = Shard()
    log.append(3, [group_epoch_record("g", 1).encode()], now_ms=1)
    log.append(3, [(b"\x93\x03\x00", b"\xc1garbage")], now_ms=2)  # not msgpack
    with pytest.raises(LogError) as e:
        replay_entries(log, 3, lambda k, v: shard.replay(Record.decode(k, v)))
    msg = str(e.value)
    assert log.location in msg and "shard 3" in msg and "offset 2" in msg
    assert shard.groups["g"].group_epoch == 1  # the good entry before it was applied


# ============================================================================ open_log


def test_open_log_factory(tmp_path: Path) -> None:
    assert isinstance(open_log("memory", None), MemoryLog)
    lg = open_log("sqlite", str(tmp_path / "data"))
    assert isinstance(lg, SqliteLog) and lg.location == str(tmp_path / "data" / DB_NAME)
    lg.close()
    with pytest.raises(LogError, match=r"unknown log kind 'rocks'.*memory"):
        open_log("rocks", str(tmp_path))
    with pytest.raises(LogError, match="needs a data directory"):
        open_log("sqlite", None)
    with pytest.raises(LogError, match="unknown durability"):
        open_log("sqlite", str(tmp_path), durability="paranoid")


# ============================================================================ SQLite backend


def test_sqlite_round_trip_across_reopen(tmp_path: Path) -> None:
    with SqliteLog(tmp_path) as lg:
        lg.append(0, [(b"a", b"1"), (b"b", None)], now_ms=1)
        lg.append(4, [(b"c", b"x" * 100_000)], now_ms=1)
    with SqliteLog(tmp_path) as lg:
        assert lg.shards() == [0, 4]
        assert entries(lg) == [(b"a", b"1"), (b"b", None)]
        assert entries(lg, 4) == [(b"c", b"x" * 100_000)]
        lg.append(0, [(b"d", b"2")], now_ms=2)
        assert list(lg.read_with_offsets(0))[-1] == (3, b"d", b"2")
    assert not (tmp_path / (DB_NAME + "-wal")).exists()


@pytest.mark.parametrize("durability,level", [("normal", 1), ("full", 2), ("off", 0)])
def test_sqlite_durability_settings(tmp_path: Path, durability: str, level: int) -> None:
    with SqliteLog(tmp_path, durability) as lg:
        assert lg.durability == durability
        assert lg._conn is not None
        assert lg._conn.execute("PRAGMA synchronous").fetchone()[0] == level
        assert lg._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for i in range(50):
            lg.append(i % 3, [(b"k%d" % i, b"v")] * (1 + i % 4), now_ms=i)
    with SqliteLog(tmp_path, durability) as lg:
        assert sum(len(entries(lg, s)) for s in lg.shards()) == sum(1 + i % 4 for i in range(50))


def test_sqlite_data_directory_is_owned_by_one_log(tmp_path: Path) -> None:
    lg = SqliteLog(tmp_path)
    with pytest.raises(LogError, match="in use"):
        SqliteLog(tmp_path)
    lg.close()
    lg.close()  # idempotent
    with pytest.raises(LogError, match="closed"):
        lg.append(0, [(b"a", b"1")])
    SqliteLog(tmp_path).close()


def test_sqlite_compaction_in_the_background_does_not_lose_appends(tmp_path: Path) -> None:
    with SqliteLog(tmp_path, compaction_chunk=50) as lg:
        keys = [b"k%d" % i for i in range(200)]
        for i in range(5000):
            lg.append(0, [(keys[i % 200], b"%d" % i)], now_ms=i)
        done = threading.Event()
        results = []

        def compact() -> None:
            results.append(lg.compact(0, now_ms=10**9, tombstone_retention_ms=0))
            done.set()

        t = threading.Thread(target=compact)
        t.start()
        n = 5000
        while not done.is_set() or n < 5100:
            lg.append(0, [(keys[n % 200], b"%d" % n), (b"new%d" % n, b"x")], now_ms=n)
            n += 1
        t.join()
        r = results[0]
        assert r.chunks >= 2 and r.superseded >= 4800
        got = entries(lg)
        # everything appended during the compaction is there; per key the newest value wins
        newest = {k: v for k, v in got}
        for i in range(5000, n):
            assert (b"new%d" % i, b"x") in got
        for j, k in enumerate(keys):
            last = max(i for i in range(n) if i % 200 == j)
            assert newest[k] == b"%d" % last
        lg.compact(0, now_ms=10**9, tombstone_retention_ms=0)
        assert len(entries(lg)) == 200 + (n - 5000)


# ---------------------------------------------------------------------------- bad data on disk


def _make_db(tmp_path: Path, n: int = 3000) -> Path:
    with SqliteLog(tmp_path) as lg:
        for i in range(n):
            lg.append(i % 2, [(b"key-%d" % i, os.urandom(64))], now_ms=i)
    return tmp_path / DB_NAME


def _refused(tmp_path: Path, match: str) -> str:
    with pytest.raises(LogError, match=match) as e:
        SqliteLog(tmp_path)
    msg = str(e.value)
    assert str(tmp_path / DB_NAME) in msg, msg
    # and the directory is not left locked
    try:
        SqliteLog(tmp_path, check="none").close()
    except LogError as e2:
        assert "in use" not in str(e2)
    return msg


def test_truncated_database(tmp_path: Path) -> None:
    db = _make_db(tmp_path)
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.truncate(size // 2)
    _refused(tmp_path, r"groupcoord\.db: .*(malformed|corrupt)")


def test_database_truncated_below_the_header(tmp_path: Path) -> None:
    db = _make_db(tmp_path, 10)
    with open(db, "r+b") as f:
        f.truncate(50)
    _refused(tmp_path, r"file is not a database \(truncated")


def test_garbage_header(tmp_path: Path) -> None:
    db = _make_db(tmp_path)
    with open(db, "r+b") as f:
        f.write(b"\xde\xad\xbe\xef" * 25)
    _refused(tmp_path, r"groupcoord\.db: file is not a database")


def test_not_a_sqlite_file(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_text("this is a text file, not a database\n" * 200)
    _refused(tmp_path, r"groupcoord\.db: file is not a database")


def test_damaged_pages_fail_the_quick_check(tmp_path: Path) -> None:
    db = _make_db(tmp_path)
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(1).randbytes(8192))
    _refused(tmp_path, r"groupcoord\.db: .*(corrupt|malformed)")


def test_damage_found_while_reading_is_a_log_error(tmp_path: Path) -> None:
    db = _make_db(tmp_path)
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(1).randbytes(8192))
    with pytest.raises(LogError, match=r"groupcoord\.db: .*(malformed|corrupt)"):
        lg = SqliteLog(tmp_path, check="none")  # no check on open: the read finds it
        try:
            for s in lg.shards():
                list(lg.read(s))
        finally:
            lg.close()


def test_a_row_of_the_wrong_type_fails_the_quick_check(tmp_path: Path) -> None:
    db = _make_db(tmp_path, 10)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA ignore_check_constraints=1")
    conn.execute("INSERT INTO log_0 (key, value, ts) VALUES (?, ?, ?)", ("text key", 42, 0))
    conn.commit()
    conn.close()
    _refused(tmp_path, r"corrupt \(quick_check failed: CHECK constraint failed in log_0")


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    db = _make_db(tmp_path, 10)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    msg = _refused(tmp_path, "schema version 2 is newer than this groupcoord supports")
    assert "(1)" in msg


def test_a_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)")
    conn.commit()
    conn.close()
    _refused(tmp_path, "not a groupcoord log")


def test_a_missing_shard_table_is_refused(tmp_path: Path) -> None:
    db = _make_db(tmp_path, 10)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE log_1")
    conn.commit()
    conn.close()
    _refused(tmp_path, "the table log_1 of shard 1 is missing")


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(LogError, match="data directory"):
        SqliteLog(tmp_path / "f")


# ---------------------------------------------------------------------------- kill -9


_WRITER = textwrap.dedent("""
    import sys
    from groupcoord.storage.sqlite import SqliteLog
    lg = SqliteLog(sys.argv[1], sys.argv[2])
    i = 0
    while True:
        lg.append(i % 3, [(b"b%d-%d" % (i, j), b"v" * 200) for j in range(1 + i % 7)], now_ms=i)
        sys.stdout.write("%d\\n" % i)
        sys.stdout.flush()
        i += 1
""")


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_kill_9_loses_no_acknowledged_batch_and_no_batch_is_partial(tmp_path: Path,
                                                                    durability: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), durability],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked = -1
    for line in proc.stdout:
        acked = int(line)
        if acked >= 400:
            break
    proc.kill()
    proc.wait()
    with SqliteLog(tmp_path) as lg:
        seen: dict[int, int] = {}
        for s in lg.shards():
            for k, _ in lg.read(s):
                batch = int(k[1:].split(b"-")[0])
                seen[batch] = seen.get(batch, 0) + 1
    for i in range(acked + 1):
        assert seen.get(i) == 1 + i % 7, f"batch {i} (acknowledged) is missing or partial"
    for i, n in seen.items():
        assert n == 1 + i % 7, f"batch {i} is partial"


# ============================================================================ I4 after compaction


class Driver:
    """A shard driven like a server drives it: every result's records appended as one batch
    (encoded, stamped with the request time) before anything else happens."""

    def __init__(self, lg: RecordLog, metadata: MetadataImage, shard_id: int = 0) -> None:
        self.log = lg
        self.shard_id = shard_id
        self.shard = Shard(shard_id, metadata=metadata)
        self.now = 1_000

    def _append(self, records: list[Record]) -> None:
        self.log.append(self.shard_id, [r.encode() for r in records], now_ms=self.now)

    def handle(self, request: Any) -> Any:
        res = self.shard.handle(request, self.now)
        self._append(res.records)
        return res.response

    def advance(self, ms: int) -> None:
        self.now += ms
        for res in self.shard.expire_timers(self.now):
            self._append(res.records)

    def rebuilt(self) -> Shard:
        fresh = Shard(self.shard_id, metadata=self.shard.metadata)
        replay_entries(self.log, self.shard_id, lambda k, v: fresh.replay(Record.decode(k, v)))
        return fresh

    def check_i4(self) -> None:
        assert self.rebuilt().state_digest() == self.shard.state_digest()

    def compact_and_check(self, retention_ms: int) -> None:
        self.check_i4()
        self.log.compact(self.shard_id, self.now, retention_ms)
        self.check_i4()


class Consumer:
    """A KIP-848 consumer that acknowledges revocations at once."""

    def __init__(self, drv: Driver, group_id: str, member_id: str, topics: tuple[str, ...],
                 instance_id: str | None = None) -> None:
        self.drv = drv
        self.group_id = group_id
        self.member_id = member_id
        self.topics = topics
        self.instance_id = instance_id
        self.epoch = 0
        self.owned: tuple[TopicPartitions, ...] = ()
        self.offset = 0

    def _hb(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        r: ConsumerGroupHeartbeatResponse = self.drv.handle(req)
        if r.error_code:
            self.epoch, self.owned = 0, ()
        else:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = r.assignment.topic_partitions
        return r

    def join(self) -> ConsumerGroupHeartbeatResponse:
        self.epoch, self.owned = 0, ()
        return self._hb(ConsumerGroupHeartbeatRequest(
            self.group_id, self.member_id, 0, instance_id=self.instance_id,
            rebalance_timeout_ms=30_000, subscribed_topic_names=self.topics, topic_partitions=()))

    def heartbeat(self) -> ConsumerGroupHeartbeatResponse:
        return self._hb(ConsumerGroupHeartbeatRequest(
            self.group_id, self.member_id, self.epoch, instance_id=self.instance_id,
            topic_partitions=self.owned))

    def leave(self, epoch: int = -1) -> None:
        self.drv.handle(ConsumerGroupHeartbeatRequest(self.group_id, self.member_id, epoch,
                                                      instance_id=self.instance_id))

    def commit(self) -> None:
        self.offset += 10
        by_id = self.drv.shard.metadata.by_id
        topics = tuple(OffsetCommitTopic(by_id[tp.topic_id].name, tuple(
            OffsetCommitPartition(p, self.offset + p) for p in tp.partitions))
            for tp in self.owned)
        if topics:
            self.drv.handle(OffsetCommitRequest(self.group_id, topics, self.epoch, self.member_id))


def settle(members: list[Consumer], rounds: int = 4) -> None:
    for _ in range(rounds):
        for m in members:
            m.heartbeat()


def admin_commit(drv: Driver, group_id: str, topic: str, partition: int, offset: int) -> None:
    drv.handle(OffsetCommitRequest(group_id, (OffsetCommitTopic(
        topic, (OffsetCommitPartition(partition, offset),)),)))


@pytest.mark.parametrize("retention_ms", [0, 30_000, 10**9])
def test_replay_equivalence_after_compaction_scripted(log: RecordLog, retention_ms: int) -> None:
    drv = Driver(log, image(foo=6, bar=3, baz=2))
    a = Consumer(drv, "g", "A", ("foo",))
    b = Consumer(drv, "g", "B", ("foo", "bar"))
    a.join()
    b.join()
    settle([a, b])
    for _ in range(5):
        a.commit()
        b.commit()
        drv.advance(1_000)
    drv.compact_and_check(retention_ms)

    c = Consumer(drv, "g", "C", ("bar", "baz"))
    c.join()
    settle([a, b, c])
    a.commit()
    c.commit()
    b.leave()
    settle([a, c])
    drv.advance(5_000)
    drv.compact_and_check(retention_ms)

    # a second group that commits, empties and is deleted (tombstones for all its keys)
    d = Consumer(drv, "h", "D", ("baz",))
    d.join()
    settle([d])
    d.commit()
    d.commit()
    d.leave()
    admin_commit(drv, "h", "baz", 1, 99)
    drv.handle(DeleteGroupsRequest(("h",)))
    drv.advance(1_000)
    drv.compact_and_check(retention_ms)

    # offsets-only group; group configs
    admin_commit(drv, "offsets-only", "foo", 0, 5)
    admin_commit(drv, "offsets-only", "foo", 0, 6)
    drv.handle(AlterGroupConfigsRequest("g", (AlterGroupConfigOp(
        "group.consumer.session.timeout.ms", "set", "50000"),)))
    drv.handle(AlterGroupConfigsRequest("g", (AlterGroupConfigOp(
        "group.consumer.session.timeout.ms", "delete"),)))

    # static member: temporary leave, rejoin under a new member id
    s = Consumer(drv, "g", "S1", ("foo",), instance_id="static-1")
    s.join()
    settle([a, c, s])
    s.commit()
    s.leave(-2)
    drv.advance(1_000)
    s2 = Consumer(drv, "g", "S2", ("foo",), instance_id="static-1")
    s2.join()
    settle([a, c, s2])
    drv.compact_and_check(retention_ms)

    # C goes silent: its session expires while the others heartbeat
    for _ in range(12):
        drv.advance(5_000)
        settle([a, s2], rounds=1)
    assert "C" not in drv.shard.groups["g"].members
    # the member id A comes back after leaving
    a.leave()
    a.join()
    settle([a, s2])
    a.commit()
    drv.advance(100_000)  # every tombstone is past a 30 s retention now
    drv.compact_and_check(retention_ms)
    drv.compact_and_check(retention_ms)

    # and the fully compacted log still rebuilds a shard that keeps working the same way
    rebuilt = drv.rebuilt()
    assert rebuilt.state_digest() == drv.shard.state_digest()
    n = sum(1 for _ in log.read(0))
    assert n < 60 if retention_ms == 0 else n > 0


@pytest.mark.parametrize("seed", range(6))
def test_replay_equivalence_after_compaction_random(log: RecordLog, seed: int) -> None:
    rng = random.Random(seed)
    drv = Driver(log, image(foo=8, bar=4, baz=3))
    topic_sets = [("foo",), ("bar",), ("foo", "bar"), ("baz",), ("foo", "baz")]
    groups = ["g1", "g2", "g3"]
    live: dict[str, list[Consumer]] = {g: [] for g in groups}
    silent: list[Consumer] = []
    next_id = 0
    for _ in range(400):
        op = rng.random()
        gid = rng.choice(groups)
        members = live[gid]
        if op < 0.12 or not members:
            next_id += 1
            static = f"i{next_id % 5}" if rng.random() < 0.2 else None
            if static and any(m.instance_id == static for ms in live.values() for m in ms):
                static = None
            m = Consumer(drv, gid, f"m{next_id}", rng.choice(topic_sets), static)
            if m.join().error_code == 0:
                members.append(m)
        elif op < 0.45:
            rng.choice(members).commit()
        elif op < 0.52:
            m = members.pop(rng.randrange(len(members)))
            m.leave(-2 if m.instance_id and rng.random() < 0.5 else -1)
        elif op < 0.55:
            silent.append(members.pop(rng.randrange(len(members))))  # will time out
        elif op < 0.58:
            if not members:
                drv.handle(DeleteGroupsRequest((gid,)))
            else:
                admin_commit(drv, f"admin-{gid}", "bar", rng.randrange(4), rng.randrange(100))
        elif op < 0.62:
            drv.compact_and_check(rng.choice([0, 5_000, 60_000, -1]))
        else:
            settle(members, rounds=1)
        drv.advance(rng.choice([100, 1_000, 3_000]))
        if rng.random() < 0.3:  # keep the live members' sessions alive
            for ms in live.values():
                settle(ms, rounds=1)
            for ms in live.values():
                for m in list(ms):
                    if m.epoch == 0 and m.join().error_code:  # fenced: rejoin, or give up
                        ms.remove(m)
    drv.advance(60_000)
    drv.compact_and_check(0)
    drv.check_i4()


def test_replay_equivalence_at_every_point_of_an_interrupted_compaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash mid-compaction leaves the log as it is between two chunks: check I4 there."""
    import groupcoord.storage.sqlite as sqlite_mod

    lg = SqliteLog(tmp_path, compaction_chunk=7, compaction_pause_s=0.001)
    drv = Driver(lg, image(foo=6, bar=3))
    members = [Consumer(drv, "g", f"M{i}", ("foo", "bar") if i % 2 else ("foo",)) for i in range(4)]
    for m in members:
        m.join()
        settle(members)
        for _ in range(3):
            for x in members:
                x.commit()
    members[1].leave()
    members[2].leave()
    settle([members[0], members[3]])
    drv.advance(10_000)
    checks = []

    def between_chunks(_: float) -> None:
        checks.append(len(entries(lg)))
        drv.check_i4()

    monkeypatch.setattr(sqlite_mod.time, "sleep", between_chunks)
    r = lg.compact(0, drv.now, 0)
    monkeypatch.undo()
    drv.check_i4()
    assert r.superseded > 50 and r.tombstones > 0 and len(checks) >= r.chunks - 2
    lg.close()


def test_read_only_snapshot_beside_a_writer(tmp_path: Path) -> None:
    """``SqliteLogSnapshot`` (the lab audit's reader) opens a directory a live log holds locked,
    sees every shard at one instant with offsets and append times, and never writes."""
    from groupcoord.storage.sqlite import SqliteLogSnapshot

    with SqliteLog(tmp_path) as log:
        log.append(0, [(b"a", b"1"), (b"b", b"2")], now_ms=10)
        log.append(3, [(b"x", None)], now_ms=11)
        with SqliteLogSnapshot(tmp_path) as snap:
            log.append(0, [(b"c", b"3")], now_ms=12)   # after the snapshot: not seen
            log.append(5, [(b"y", b"9")], now_ms=13)   # a shard created later: not seen
            assert snap.shards() == [0, 3]
            assert list(snap.read_with_times(0)) == [(1, 10, b"a", b"1"), (2, 10, b"b", b"2")]
            assert list(snap.read_with_times(3)) == [(1, 11, b"x", None)]
            assert list(snap.read_with_times(5)) == []
        with SqliteLogSnapshot(tmp_path) as later:
            assert later.shards() == [0, 3, 5]
            assert [e[0] for e in later.read_with_times(0)] == [1, 2, 3]


def test_read_only_snapshot_refuses_what_is_not_a_log(tmp_path: Path) -> None:
    from groupcoord.storage.sqlite import SqliteLogSnapshot

    with pytest.raises(LogError, match="no record log"):
        SqliteLogSnapshot(tmp_path)
    other = sqlite3.connect(tmp_path / DB_NAME)
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(LogError, match="not a groupcoord log"):
        SqliteLogSnapshot(tmp_path)
