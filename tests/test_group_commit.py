"""Group commit (``storage/sqlite.py`` ``SqliteLog.defer_commits``, ``server/group_commit.py``):
the appends of one loop iteration share one SQLite commit, answers wait for it, a failed
commit writes nothing, answers nothing and reloads what was built on it."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.app import KafkaServer
from groupcoord.storage.log import LogError
from groupcoord.storage.sqlite import DB_NAME, SqliteLog


def committed_rows(data_dir: Path, shard: int) -> list[tuple[bytes, bytes | None]]:
    """What another process would read: committed rows only."""
    conn = sqlite3.connect(f"file:{data_dir / DB_NAME}?mode=ro", uri=True)
    try:
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                              (f"log_{shard}",)).fetchone()
        if not exists:
            return []
        return [(bytes(k), None if v is None else bytes(v)) for k, v in conn.execute(
            f"SELECT key, value FROM log_{shard} ORDER BY log_offset")]
    finally:
        conn.close()


class FailingCommit:
    """A writer connection whose next ``fail`` COMMITs fail as a full disk would."""

    def __init__(self, conn: sqlite3.Connection, fail: int = 1) -> None:
        self.conn = conn
        self.fail = fail

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.fail:
            self.fail -= 1
            raise sqlite3.OperationalError("database or disk is full (injected)")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


@pytest.fixture
def deferred(tmp_path: Path) -> Any:
    log = SqliteLog(tmp_path, check="none")
    events: dict[str, list[Any]] = {"opened": [], "lost": []}
    log.defer_commits(lambda: events["opened"].append(1), events["lost"].append)
    yield log, events
    log.close()


def test_appends_wait_in_one_group_until_the_commit(tmp_path: Path, deferred: Any) -> None:
    log, events = deferred
    log.append(0, [(b"a", b"1")])
    log.append_many([(1, [(b"b", b"2")]), (2, [(b"c", None)])])
    assert events["opened"] == [1]  # one group for the three appends
    assert log.uncommitted
    assert committed_rows(tmp_path, 0) == []  # not durable yet: nobody else sees it
    # the owning thread reads its own appends (a shard reloaded mid-iteration sees them)
    assert list(log.read(0)) == [(b"a", b"1")]
    assert log.shards() == [0, 1, 2]
    log.commit()
    assert not log.uncommitted
    assert committed_rows(tmp_path, 0) == [(b"a", b"1")]
    assert committed_rows(tmp_path, 2) == [(b"c", None)]
    log.append(0, [(b"d", b"3")])
    assert events["opened"] == [1, 1]  # the next append opens the next group
    log.commit()
    assert committed_rows(tmp_path, 0) == [(b"a", b"1"), (b"d", b"3")]
    assert events["lost"] == []


def test_a_failing_batch_is_undone_alone(tmp_path: Path, deferred: Any) -> None:
    log, events = deferred
    log.append(0, [(b"a", b"1")])
    with pytest.raises(LogError, match="nothing of the batch was written"):
        log.append(0, [(b"b", b"2"), ("not bytes", b"3")])  # the CHECK on key refuses it
    with pytest.raises(LogError, match="nothing of the batch was written"):
        log.append(0, [("one row", b"5")])  # a batch of one row (no savepoint)
    with pytest.raises(LogError, match="nothing of the batch was written"):
        log.append_many([(0, [(b"e", b"6")]), (7, [(b"f", 7)])])  # the CHECK on value
    log.append(0, [(b"c", b"4")])
    log.commit()
    assert committed_rows(tmp_path, 0) == [(b"a", b"1"), (b"c", b"4")]
    assert committed_rows(tmp_path, 7) == []
    assert events["lost"] == []


def test_a_failed_commit_writes_nothing_and_reports_its_shards(tmp_path: Path,
                                                                deferred: Any) -> None:
    log, events = deferred
    log.append(0, [(b"kept", b"1")])
    log.commit()
    real = log._conn
    log._conn = FailingCommit(real)
    log.append(3, [(b"a", b"1")])
    log.append(5, [(b"b", b"2")])  # its table is created in the group
    log.commit()
    assert events["lost"] == [[3, 5]]
    assert committed_rows(tmp_path, 3) == [] and committed_rows(tmp_path, 5) == []
    assert log.shards() == [0]  # the lost group's new table went with it
    log.append(5, [(b"c", b"3")])  # the log goes on: the table is created again
    log.commit()
    assert committed_rows(tmp_path, 5) == [(b"c", b"3")]
    assert committed_rows(tmp_path, 0) == [(b"kept", b"1")]


def test_another_thread_waits_for_the_group(tmp_path: Path, deferred: Any) -> None:
    log, _ = deferred
    log.append(0, [(b"a", b"1")])
    seen: list[list[Any]] = []
    reader = threading.Thread(target=lambda: seen.append(list(log.read(0))))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive()  # a shard load on another thread waits for the commit ...
    log.commit()
    reader.join(10)
    assert seen == [[(b"a", b"1")]]  # ... and then sees the group


def test_closing_commits_the_open_group(tmp_path: Path) -> None:
    log = SqliteLog(tmp_path, check="none")
    log.defer_commits(lambda: None)
    log.append(0, [(b"a", b"1")])
    log.close()
    with SqliteLog(tmp_path, check="none") as again:
        assert list(again.read(0)) == [(b"a", b"1")]


# ---------------------------------------------------------------------------- over the wire

TOPIC = "gc-topic"


def offset_commit(corr: int, partition: int, offset: int) -> bytes:
    cls = request_class(ApiKey.OFFSET_COMMIT, 9)
    assert cls is not None
    return encode_request(build(cls, group_id="g", generation_id_or_member_epoch=-1,
                                member_id="", group_instance_id=None, topics=[{
                                    "name": TOPIC, "partitions": [{
                                        "partition_index": partition, "committed_offset": offset,
                                        "committed_leader_epoch": -1,
                                        "committed_metadata": None}]}]), corr)


def read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the server")
            out += chunk
        return out
    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def committed(bootstrap: str, partitions: int) -> list[int]:
    """The group's committed offsets, once its shard answers (it may be reloading)."""
    with KafkaClient(bootstrap) as c:
        for _ in range(200):
            r = c.call(ApiKey.OFFSET_FETCH, 7, group_id="g", require_stable=False, topics=[
                {"name": TOPIC, "partition_indexes": list(range(partitions))}])
            if int(r.error_code) == 0:
                return [int(p.committed_offset) for p in r.topics[0].partitions]
            time.sleep(0.05)
    raise AssertionError(f"OffsetFetch kept failing: {r}")


def test_pipelined_requests_share_one_commit_and_are_all_answered(tmp_path: Path) -> None:
    async def run() -> None:
        server = KafkaServer(port=0, data_dir=tmp_path / "data", storage="sqlite")
        await server.start()
        try:
            bootstrap = f"127.0.0.1:{server.port}"

            def client() -> list[int]:
                with KafkaClient(bootstrap) as c:
                    c.call(ApiKey.CREATE_TOPICS, 7, timeout_ms=10_000, topics=[
                        {"name": TOPIC, "num_partitions": 5, "replication_factor": -1}])
                with socket.create_connection(("127.0.0.1", server.port)) as s:
                    # five OffsetCommits in one write: handled in one loop iteration
                    s.sendall(b"".join(offset_commit(i, i, 10 + i) for i in range(5)))
                    corrs = []
                    for _ in range(5):
                        corr, r = decode_response(ApiKey.OFFSET_COMMIT, 9, read_frame(s))
                        assert int(r.topics[0].partitions[0].error_code) == 0
                        corrs.append(corr)
                return corrs

            before = server.group_commit.commits
            assert await asyncio.to_thread(client) == [0, 1, 2, 3, 4]  # in order
            # the five appends and the topic's creation: far fewer commits than appends
            assert server.group_commit.commits - before <= 2
            assert await asyncio.to_thread(committed, bootstrap, 5) == [10, 11, 12, 13, 14]
        finally:
            await server.stop()
        server = KafkaServer(port=0, data_dir=tmp_path / "data", storage="sqlite")
        await server.start()  # durable: the offsets are there after a restart
        try:
            assert await asyncio.to_thread(committed, f"127.0.0.1:{server.port}", 5) == [
                10, 11, 12, 13, 14]
        finally:
            await server.stop()

    asyncio.run(run())


def test_a_lost_group_commit_answers_nothing_and_reloads(tmp_path: Path) -> None:
    async def run() -> None:
        server = KafkaServer(port=0, data_dir=tmp_path / "data", storage="sqlite")
        await server.start()
        try:
            bootstrap = f"127.0.0.1:{server.port}"

            def commit(partition: int, offset: int) -> None:
                with socket.create_connection(("127.0.0.1", server.port)) as s:
                    s.sendall(offset_commit(1, partition, offset))
                    _, r = decode_response(ApiKey.OFFSET_COMMIT, 9, read_frame(s))
                    assert int(r.topics[0].partitions[0].error_code) == 0

            def setup() -> None:
                with KafkaClient(bootstrap) as c:
                    c.call(ApiKey.CREATE_TOPICS, 7, timeout_ms=10_000, topics=[
                        {"name": TOPIC, "num_partitions": 1, "replication_factor": -1}])
                commit(0, 5)

            await asyncio.to_thread(setup)
            log = server._log
            assert isinstance(log, SqliteLog)
            real = log._conn
            log._conn = FailingCommit(real)  # type: ignore[assignment]
            with pytest.raises(ConnectionError):  # no answer: the connection is dropped
                await asyncio.to_thread(commit, 0, 6)
            assert server.group_commit.lost == 1
            # the shard was reloaded from the log: the lost offset is not served
            assert await asyncio.to_thread(committed, bootstrap, 1) == [5]
            await asyncio.to_thread(commit, 0, 7)  # and the coordinator goes on
            assert await asyncio.to_thread(committed, bootstrap, 1) == [7]
        finally:
            await server.stop()

    asyncio.run(run())
