"""The partition store seen from ``groupcoord serve`` and its clients:

- a 10,000-partition topic works under ``ulimit -n 1024`` (created, produced to on every
  partition, fetched back, and again after a restart): descriptors are not one per partition;
- a 100,000-partition topic and 100 topics of 1,000 partitions are created, described
  (Metadata), produced to and consumed from over the wire (a real client included);
- ``serve`` on a partition file damaged in the middle stops with one line naming the file, the
  byte and the offset; one torn at the tail starts (the tail cut, a warning naming the file);
  after ``recover-partitions`` it starts with the data before the damage;
- CreateTopics that cannot write ``topics.json`` (disk full, out of descriptors) answers
  KAFKA_STORAGE_ERROR and leaves no topic behind;
- ``--storage memory`` writes nothing into the data directory.
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server import topic_registry
from groupcoord.server.app import KafkaServer
from groupcoord.storage.memory import MemoryLog

from .conftest import GROUPCOORD, start_server
from .test_partition_store import batch

TIMEOUT_S = 300.0


class Broker:
    """``groupcoord serve`` in a subprocess, optionally under a descriptor limit."""

    def __init__(self, data_dir: Path, *extra: str, nofile: int | None = None) -> None:
        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
        err = open(self.stderr_path, "a")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [*GROUPCOORD, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir",
             str(data_dir), *extra], stdout=subprocess.PIPE, stderr=err, text=True,
            preexec_fn=limit, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        err.close()
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(
            self.proc.stdout.readline() if self.proc.stdout else ""), daemon=True)
        reader.start()
        reader.join(TIMEOUT_S)
        if not line or not line[0].startswith("listening on "):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"server did not start: {line!r}\n{self.stderr()}")
        self.bootstrap = line[0].split()[-1]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(60) == 0, self.stderr()[-3000:]


def create(c: KafkaClient, topics: dict[str, int]) -> None:
    r = c.call(ApiKey.CREATE_TOPICS, 7, timeout_ms=int(TIMEOUT_S * 1000), topics=[
        {"name": n, "num_partitions": k, "replication_factor": -1} for n, k in topics.items()])
    assert [int(t.error_code) for t in r.topics] == [0] * len(topics), r


def produce(c: KafkaClient, parts: dict[str, list[int]]) -> None:
    """One batch per partition, its records filled with ``partition % 251``."""
    r = c.call(ApiKey.PRODUCE, 9, transactional_id=None, acks=-1,
               timeout_ms=int(TIMEOUT_S * 1000), topic_data=[
                   {"name": t, "partition_data": [{"index": p, "records": batch(2, fill=p % 251)}
                                                  for p in ps]} for t, ps in parts.items()])
    for t in r.responses:
        assert [(int(p.error_code), int(p.base_offset)) for p in t.partition_responses] == \
            [(0, 0)] * len(t.partition_responses)


def fetch_back(c: KafkaClient, parts: dict[str, list[int]]) -> None:
    """Every partition holds its one batch (2 records) and nothing else."""
    f = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 30,
               topics=[{"topic": t, "partitions": [
                   {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                   for p in ps]} for t, ps in parts.items()])
    for t in f.responses:
        for p in t.partitions:
            i = int(p.partition_index)
            assert (int(p.error_code), int(p.high_watermark)) == (0, 2), (t.topic, i)
            assert bytes(p.records)[12:] == batch(2, fill=i % 251)[12:]  # baseOffset 0 kept


def describe(c: KafkaClient, names: list[str]) -> dict[str, int]:
    md = c.call(ApiKey.METADATA, 12, topics=[{"name": n, "topic_id": None} for n in names],
                allow_auto_topic_creation=False)
    return {t.name: len(t.partitions) for t in md.topics if not t.error_code}


def test_ten_thousand_partitions_under_ulimit_1024(tmp_path: Path) -> None:
    data = tmp_path / "data"
    everything = {"wide": list(range(10_000))}
    broker = Broker(data, nofile=1024)
    try:
        with KafkaClient(broker.bootstrap, timeout=TIMEOUT_S) as c:
            create(c, {"wide": 10_000})
            produce(c, everything)
            fetch_back(c, everything)
        assert broker.open_fds() < 512
    finally:
        broker.stop()
    assert len(list((data / "topics").rglob("*.log"))) == 10_000
    broker = Broker(data, nofile=1024)
    try:
        with KafkaClient(broker.bootstrap, timeout=TIMEOUT_S) as c:
            fetch_back(c, everything)
            produce_more = c.call(ApiKey.PRODUCE, 9, transactional_id=None, acks=1,
                                  timeout_ms=60_000, topic_data=[{"name": "wide", "partition_data": [
                                      {"index": 9_999, "records": batch(1)}]}])
            assert int(produce_more.responses[0].partition_responses[0].base_offset) == 2
        assert broker.open_fds() < 512
        assert "Too many open files" not in broker.stderr()
    finally:
        broker.stop()


def test_a_hundred_thousand_partitions_and_a_hundred_topics_over_the_wire(tmp_path: Path) -> None:
    ck = pytest.importorskip("confluent_kafka")
    broker = Broker(tmp_path / "data", nofile=1024)
    small = {f"t{i:03d}": 1_000 for i in range(100)}
    sample = {"huge": [*range(0, 100_000, 97), 99_999],
              **{n: [0, 500, 999] for n in small}}
    try:
        with KafkaClient(broker.bootstrap, timeout=TIMEOUT_S) as c:
            create(c, {"huge": 100_000})
            create(c, small)
            assert describe(c, ["huge"]) == {"huge": 100_000}
            assert describe(c, list(small)) == small
            produce(c, sample)
            fetch_back(c, sample)
        # a real client: produce to the last partition and read it back
        p = ck.Producer({"bootstrap.servers": broker.bootstrap})
        p.produce("huge", key=b"k", value=b"last", partition=99_999)
        assert p.flush(60) == 0
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "big",
                                "enable.auto.commit": False})
        try:
            consumer.assign([ck.TopicPartition("huge", 99_999, 2)])
            got = None
            for _ in range(600):
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    got = msg
                    break
            assert got is not None and got.value() == b"last" and got.offset() == 2
        finally:
            consumer.close()
        assert broker.open_fds() < 512
    finally:
        broker.stop()


# ---------------------------------------------------------------------------- recovery


def _serve_once(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GROUPCOORD, "serve", "--port", "0", "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=TIMEOUT_S)


def test_serve_refuses_damage_starts_after_a_torn_tail_and_after_recovery(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with KafkaClient(server.bootstrap) as c:
            create(c, {"t": 2})
            for _ in range(3):
                c.call(
                    ApiKey.PRODUCE, 9, transactional_id=None, acks=1, timeout_ms=10_000,
                    topic_data=[{"name": "t", "partition_data": [
                        {"index": 0, "records": batch(2)}, {"index": 1, "records": batch(2)}]}])
    finally:
        # killed: no clean-shutdown marker, so the next start checks every file (after an
        # orderly stop it would read none: test_partition_clean_shutdown.py)
        assert server.stop(sig=signal.SIGKILL) == -signal.SIGKILL
    files = sorted((data / "topics").rglob("*.log"))
    assert len(files) == 2
    size = len(batch(2))
    # partition 1: torn at the tail
    with open(files[1], "ab") as f:
        f.write(batch(1)[:40])
    # partition 0: the second batch's magic byte damaged, a valid batch after it
    raw = bytearray(files[0].read_bytes())
    raw[size + 16] = 7
    files[0].write_bytes(bytes(raw))

    done = _serve_once(data)
    assert done.returncode == 1
    lines = [x for x in done.stderr.splitlines() if "WARNING" not in x]  # the torn tail's
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: cannot start: ") and str(files[0]) in lines[0]
    assert f"{files[1]}: log recovery: truncating a torn tail of 40 bytes" in done.stderr
    assert f"at byte {size} (offset 2)" in lines[0] and "magic byte 7" in lines[0]
    assert "recover-partitions" in lines[0] and "Traceback" not in done.stderr
    assert files[0].read_bytes() == bytes(raw)  # nothing cut

    rec = subprocess.run([*GROUPCOORD, "recover-partitions", "--data-dir", str(data)],
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert rec.returncode == 0, rec.stderr
    assert f"{files[0]}: cut at byte {size}" in rec.stdout
    assert Path(f"{files[0]}.damaged-{size}").stat().st_size == 2 * size

    server = start_server(data)
    try:
        with KafkaClient(server.bootstrap) as c:
            r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
                {"name": "t", "partitions": [{"partition_index": p, "timestamp": -1}
                                             for p in (0, 1)]}])
            assert [int(p.offset) for p in r.topics[0].partitions] == [2, 6]
    finally:
        assert server.stop() == 0


# ---------------------------------------------------------------------------- all or nothing


def _in_thread(bootstrap: str, fn: Callable[[KafkaClient], Any]) -> Any:
    with KafkaClient(bootstrap) as c:
        return fn(c)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EMFILE])
def test_create_topics_that_cannot_be_stored_leaves_nothing(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            err: int) -> None:
    def failing_open(*args: Any, **kwargs: Any) -> Any:
        raise OSError(err, os.strerror(err))

    async def run() -> None:
        # topics on disk (a given record log), the coordinator's log in memory
        server = KafkaServer(port=0, data_dir=tmp_path / "data", storage="memory",
                             record_log=MemoryLog())
        await server.start()
        try:
            bootstrap = f"127.0.0.1:{server.port}"
            monkeypatch.setattr(topic_registry, "open", failing_open, raising=False)
            r = await asyncio.to_thread(_in_thread, bootstrap, lambda c: c.call(
                ApiKey.CREATE_TOPICS, 7, timeout_ms=10_000, topics=[
                    {"name": "big", "num_partitions": 5_000, "replication_factor": -1}]))
            t = r.topics[0]
            assert int(t.error_code) == 56, r  # KAFKA_STORAGE_ERROR
            assert "topics.json" in (t.error_message or "")
            monkeypatch.undo()
            names = await asyncio.to_thread(_in_thread, bootstrap, lambda c: describe(c, ["big"]))
            assert names == {}
            assert server.registry is not None and server.registry.get("big") is None
            r = await asyncio.to_thread(_in_thread, bootstrap, lambda c: c.call(
                ApiKey.CREATE_TOPICS, 7, timeout_ms=10_000, topics=[
                    {"name": "big", "num_partitions": 5_000, "replication_factor": -1}]))
            assert int(r.topics[0].error_code) == 0
        finally:
            await server.stop()

    asyncio.run(run())


def test_memory_storage_writes_nothing_to_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "mem"
    server = start_server(data, "--storage", "memory")
    try:
        with KafkaClient(server.bootstrap) as c:
            create(c, {"m": 4})
            produce(c, {"m": [0, 3]})
            fetch_back(c, {"m": [0, 3]})
            r = c.call(ApiKey.INIT_PRODUCER_ID, 4, transactional_id=None,
                       transaction_timeout=60_000, producer_id=-1, producer_epoch=-1)
            assert int(r.error_code) == 0
    finally:
        assert server.stop() == 0
    assert sorted(os.listdir(data)) == []


def test_an_unreadable_partition_file_is_a_storage_error_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A descriptor that cannot be (re)opened — EIO, out of descriptors — answers Produce and
    Fetch of that partition with KAFKA_STORAGE_ERROR; the other partitions are served."""
    async def run() -> None:
        server = KafkaServer(port=0, data_dir=tmp_path / "data", storage="memory",
                             record_log=MemoryLog())
        await server.start()
        try:
            bootstrap = f"127.0.0.1:{server.port}"
            await asyncio.to_thread(_in_thread, bootstrap, lambda c: create(c, {"t": 2}))
            await asyncio.to_thread(_in_thread, bootstrap, lambda c: produce(c, {"t": [0, 1]}))
            assert server.registry is not None
            files = server.registry.files
            files.close_all()
            real_fd = files.fd

            def failing_fd(path: str, create: bool = False, exclusive: bool = False) -> int:
                if path.endswith("/0.log"):
                    raise OSError(errno.EIO, "Input/output error")
                return real_fd(path, create, exclusive)

            monkeypatch.setattr(files, "fd", failing_fd)

            def fetch(c: KafkaClient) -> list[int]:
                f = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, topics=[
                    {"topic": "t", "partitions": [
                        {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        for p in (0, 1)]}])
                return [int(p.error_code) for p in f.responses[0].partitions]

            def produce_codes(c: KafkaClient) -> list[int]:
                r = c.call(ApiKey.PRODUCE, 9, transactional_id=None, acks=1, timeout_ms=10_000,
                           topic_data=[{"name": "t", "partition_data": [
                               {"index": p, "records": batch(1)} for p in (0, 1)]}])
                return [int(p.error_code) for p in r.responses[0].partition_responses]

            assert await asyncio.to_thread(_in_thread, bootstrap, fetch) == [56, 0]
            assert await asyncio.to_thread(_in_thread, bootstrap, produce_codes) == [56, 0]
            monkeypatch.undo()
            assert await asyncio.to_thread(_in_thread, bootstrap, fetch) == [0, 0]
        finally:
            await server.stop()

    asyncio.run(run())
