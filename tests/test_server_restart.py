"""A restarted server keeps topics, partition data and the coordinator's state.

The server is stopped with SIGTERM (a clean stop, exit code 0) and started again on the same
data directory: topic ids, partition data (Fetch), log end offsets (ListOffsets) and committed
offsets (OffsetFetch, sqlite record log) are all still there, and a consumer of the same group
resumes after the committed offsets.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import start_server

ck = pytest.importorskip("confluent_kafka")


def _produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=b"x" * 10, partition=i % 2)
    assert p.flush(15) == 0


def _consume(bootstrap: str, group: str, topic: str, want: int, timeout: float = 30) -> list[int]:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 100})
    keys: list[int] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(keys) < want and time.monotonic() < deadline:
            msg = c.poll(0.1)
            if msg is not None and not msg.error():
                keys.append(int(msg.key()))
        # no more than wanted arrives shortly after
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            msg = c.poll(0.1)
            if msg is not None and not msg.error():
                keys.append(int(msg.key()))
        c.commit(asynchronous=False)
    finally:
        c.close()
    return sorted(keys)


def _end_offsets(client: KafkaClient, topic: str) -> list[int]:
    r = client.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in (0, 1)]}])
    return [int(p.offset) for p in r.topics[0].partitions]


def _committed(client: KafkaClient, group: str) -> dict[Any, int]:
    r = client.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": None}])
    return {(t.name, int(p.partition_index)): int(p.committed_offset)
            for t in r.groups[0].topics for p in t.partitions}


def test_restart_keeps_topics_data_and_committed_offsets(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    topic, group = "restart-topic", "restart-group"
    server = start_server(data_dir, "--storage", "sqlite", "--shards", "3")
    try:
        with KafkaClient(server.bootstrap) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                {"name": topic, "num_partitions": 2, "replication_factor": 1}])
            topic_id = r.topics[0].topic_id
        _produce(server.bootstrap, topic, 0, 40)
        assert _consume(server.bootstrap, group, topic, 40) == list(range(40))
        with KafkaClient(server.bootstrap) as c:
            assert _end_offsets(c, topic) == [20, 20]
            assert _committed(c, group) == {(topic, 0): 20, (topic, 1): 20}
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]
    assert "stopped" in server.stderr()

    server = start_server(data_dir, "--storage", "sqlite", "--shards", "3")
    try:
        with KafkaClient(server.bootstrap) as c:
            md = c.call(ApiKey.METADATA, 12, topics=[{"name": topic, "topic_id": None}],
                        allow_auto_topic_creation=False)
            assert md.topics[0].topic_id == topic_id
            assert len(md.topics[0].partitions) == 2
            assert _end_offsets(c, topic) == [20, 20]
            assert _committed(c, group) == {(topic, 0): 20, (topic, 1): 20}
            # the stored batches are served again, byte for byte through Fetch
            f = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, topics=[
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                 "partition_max_bytes": 1 << 20}]}])
            part = f.responses[0].partitions[0]
            assert int(part.error_code) == 0 and int(part.high_watermark) == 20
            assert part.records and len(part.records) > 61
        _produce(server.bootstrap, topic, 40, 10)
        # the group resumes after its committed offsets: only the new messages
        assert _consume(server.bootstrap, group, topic, 10) == list(range(40, 50))
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]


def test_memory_storage_serves_and_sigint_stops_cleanly(tmp_path: Path) -> None:
    server = start_server(tmp_path / "mem", "--storage", "memory")
    try:
        with KafkaClient(server.bootstrap) as c:
            assert ApiKey.CONSUMER_GROUP_HEARTBEAT in c.api_versions()
        assert "storage memory" in server.stderr()
    finally:
        assert server.stop(sig=signal.SIGINT) == 0
    assert "stopped" in server.stderr() and "Traceback" not in server.stderr()
