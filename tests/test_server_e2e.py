"""End to end, nothing lost: 10,000 messages produced, consumed by a consumer-protocol
group that loses a member and gains another mid-way while committing; every message is
consumed, the committed offsets reach the end of every partition, and a restart of the server
keeps them."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import start_server

ck = pytest.importorskip("confluent_kafka")

N = 10_000
PARTITIONS = 6
TOPIC = "e2e"
GROUP = "e2e-group"


def _consumer(bootstrap: str, name: str) -> Any:
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                     "client.id": name, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000,
                     "fetch.wait.max.ms": 100, "log_level": 3})
    c.subscribe([TOPIC])
    return c


def _committed(bootstrap: str) -> dict[int, int]:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": GROUP, "topics": None}])
    return {int(p.partition_index): int(p.committed_offset)
            for t in r.groups[0].topics for p in t.partitions}


def _ends(bootstrap: str) -> dict[int, int]:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": TOPIC, "partitions": [{"partition_index": p, "timestamp": -1}
                                           for p in range(PARTITIONS)]}])
    return {int(p.partition_index): int(p.offset) for p in r.topics[0].partitions}


def _commit(c: Any) -> None:
    with contextlib.suppress(ck.KafkaException):  # e.g. a stale epoch mid-rebalance: retried
        c.commit(asynchronous=False)


def test_nothing_lost_through_membership_changes_and_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = start_server(data_dir, "--storage", "sqlite", "--shards", "4")
    try:
        with KafkaClient(server.bootstrap) as admin:
            admin.call(ApiKey.CREATE_TOPICS, 7, topics=[
                {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1}])
        producer = ck.Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 10})
        for i in range(N):
            producer.produce(TOPIC, key=str(i).encode(), value=b"v" * 20)
            if i % 1000 == 0:
                producer.poll(0)
        assert producer.flush(30) == 0
        ends = _ends(server.bootstrap)
        assert sum(ends.values()) == N

        seen: set[int] = set()
        deliveries = 0
        consumers = {name: _consumer(server.bootstrap, name) for name in ("a", "b", "c")}
        since_commit = dict.fromkeys(consumers, 0)
        left = joined = False
        deadline = time.monotonic() + 90
        while len(seen) < N and time.monotonic() < deadline:
            for name, c in list(consumers.items()):
                for msg in c.consume(200, 0.05):
                    if msg.error():
                        continue
                    seen.add(int(msg.key()))
                    deliveries += 1
                    since_commit[name] += 1
                if since_commit[name] >= 500:
                    _commit(c)
                    since_commit[name] = 0
            if not left and len(seen) >= N // 3:
                consumers.pop("c").close()  # a member leaves mid-way
                left = True
            if left and not joined and len(seen) >= 2 * N // 3:
                consumers["d"] = _consumer(server.bootstrap, "d")  # and another one joins
                since_commit["d"] = 0
                joined = True
        assert len(seen) == N, f"only {len(seen)} of {N} messages consumed"
        assert left and joined

        # keep polling and committing until the committed offsets reach every partition's end
        deadline = time.monotonic() + 45
        while _committed(server.bootstrap) != ends and time.monotonic() < deadline:
            for c in consumers.values():
                c.consume(500, 0.05)
                _commit(c)
        assert _committed(server.bootstrap) == ends
        for c in consumers.values():
            c.close()
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]

    server = start_server(data_dir, "--storage", "sqlite", "--shards", "4")
    try:
        assert _ends(server.bootstrap) == ends
        assert _committed(server.bootstrap) == ends
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]
