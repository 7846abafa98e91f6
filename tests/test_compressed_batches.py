"""Compressed record batches over the wire: the broker stores a batch as the producer sent it
(compressed; the batch header it reads is never compressed) and serves it back as stored, so a
client reads what it wrote in every codec Kafka has, zstd included (librdkafka's 0171 produces
and consumes each of them), from a consumer and from a KIP-932 share consumer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .conftest import ServerProcess

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

CODECS = ("gzip", "snappy", "lz4", "zstd")
TIMEOUT_S = 30.0


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([admin_mod.NewTopic(topic, partitions, 1)]).values():
        f.result(timeout=TIMEOUT_S)


def _produce(bootstrap: str, topic: str, codec: str, values: list[bytes]) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                     "linger.ms": 50, "batch.num.messages": 1000})
    for v in values:
        p.produce(topic, value=v, key=v[:4], headers=[("codec", codec.encode())])
    assert p.flush(TIMEOUT_S) == 0


def _values(codec: str, n: int = 500) -> list[bytes]:
    # compressible: repeated text, so every codec actually compresses the batch
    return [f"{codec}-{i:05d}-".encode() + b"groupcoord " * 20 for i in range(n)]


@pytest.mark.parametrize("codec", CODECS)
def test_a_compressed_produce_reads_back_from_a_consumer(gc_server: ServerProcess,
                                                         codec: str) -> None:
    topic = f"compressed-{codec}-{time.monotonic_ns()}"
    bootstrap = gc_server.bootstrap
    _create(bootstrap, topic)
    values = _values(codec)
    _produce(bootstrap, topic, codec, values)
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, 0, 0)])
        got: list[Any] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(values) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m)
    finally:
        c.close()
    assert [m.value() for m in got] == values
    assert [m.offset() for m in got] == list(range(len(values)))
    assert all(m.headers() == [("codec", codec.encode())] for m in got)
    assert all(m.key() == v[:4] for m, v in zip(got, values, strict=True))


def test_zstd_batches_reach_a_share_consumer(gc_server: ServerProcess) -> None:
    topic = f"compressed-share-{time.monotonic_ns()}"
    bootstrap = gc_server.bootstrap
    _create(bootstrap, topic)
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": f"s-{topic}",
                          "log_level": 3})
    try:
        c.subscribe([topic])
        # share partitions start at the log's end (share.auto.offset.reset=latest): join and
        # fetch once before producing
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            assert list(c.poll(0.2)) == []
        values = _values("zstd", 200)
        _produce(bootstrap, topic, "zstd", values)
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < len(values) and time.monotonic() < deadline:
            for m in c.poll(0.5):
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        c.close()
    assert sorted(got) == sorted(values)
