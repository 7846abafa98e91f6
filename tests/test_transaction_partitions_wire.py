"""DescribeProducers and WriteTxnMarkers (KIP-664: what ``kafka-transactions.sh find-hanging``
and ``abort`` send to a partition's leader), judged by kafka-python's admin client
(``describe_producers``, ``abort_transaction``) and a read_committed librdkafka consumer.

The Produce path no longer lets a hanging transaction in (test_hanging_transactions.py), so the
hanging transaction here is one stored by an earlier version without that check: a
transactional batch appended to the partition log in process, which no coordinator tracks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing.cluster import Cluster, embedded_cluster

from .test_transactional_data_wire import TOPIC, batch, fetch, list_latest, new_pid, produce

E = ErrorCode


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={TOPIC: 1}) as cl:
        yield cl


def hang(cluster: Cluster, pid: int, value: bytes) -> int:
    """A transactional batch of ``pid`` stored without any coordinator knowing: its offset."""
    return cluster._on_loop(lambda: cluster.server.registry.partition(TOPIC, 0).append(
        batch([value], pid, 0, 0, txn=True)))


def read_committed(cluster: Cluster, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "rc",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        return got
    finally:
        consumer.close()


def test_describe_producers_then_abort_a_hanging_transaction(cluster: Cluster) -> None:
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec, KafkaAdminClient

    with KafkaClient(cluster.bootstrap_servers) as c:
        committed = new_pid(c, "ok")  # a committed transaction: its marker's coordinator epoch
        assert produce(c, batch([b"c1"], committed, 0, 0, txn=True), "ok") == (0, 0)
        assert c.call(ApiKey.END_TXN, 3, transactional_id="ok", producer_id=committed,
                      producer_epoch=0, committed=True).error_code == 0
        ghost = int(c.init_producer_id().producer_id)
        assert hang(cluster, ghost, b"ghost") == 2
        assert produce(c, batch([b"p1"])) == (0, 3)
        assert fetch(c, 0, 1).last_stable_offset == 2  # pinned by the ghost
    tp = TopicPartition(TOPIC, 0)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        state = admin.describe_producers([tp])[tp]
        by_id = {p.producer_id: p for p in state.active_producers}
        assert set(by_id) == {committed, ghost}
        g = by_id[ghost]
        assert (g.producer_epoch, g.last_sequence, g.current_transaction_start_offset,
                g.coordinator_epoch) == (0, 0, 2, -1)
        assert g.last_timestamp > 0
        ok = by_id[committed]
        assert ok.current_transaction_start_offset == -1 and ok.coordinator_epoch >= 0
        admin.abort_transaction(AbortTransactionSpec(tp, ghost, g.producer_epoch,
                                                     g.coordinator_epoch))
        after = {p.producer_id: p for p in admin.describe_producers([tp])[tp].active_producers}
        assert after[ghost].current_transaction_start_offset == -1
    finally:
        admin.close()
    with KafkaClient(cluster.bootstrap_servers) as c:
        assert list_latest(c, 1) == list_latest(c, 0) == 5  # the abort marker at 4
        assert [(t.producer_id, t.first_offset) for t in fetch(c, 0, 1).aborted_transactions] == [
            (ghost, 2)]
    assert read_committed(cluster, 2) == [b"c1", b"p1"]


def test_write_txn_markers_errors(cluster: Cluster) -> None:
    def markers(c: KafkaClient, pid: int, epoch: int, coordinator_epoch: int,
                partition: int = 0, version: int = 1) -> int:
        r = c.call(ApiKey.WRITE_TXN_MARKERS, version, markers=[{
            "producer_id": pid, "producer_epoch": epoch, "transaction_result": False,
            "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": TOPIC, "partition_indexes": [partition]}]}])
        assert r.markers[0].producer_id == pid
        return int(r.markers[0].topics[0].partitions[0].error_code)

    with KafkaClient(cluster.bootstrap_servers) as c:
        ghost = int(c.init_producer_id().producer_id)
        hang(cluster, ghost, b"ghost")
        cluster._on_loop(lambda: cluster.server.registry.write_marker(
            TOPIC, 0, ghost, 1, False, 5, int(time.time() * 1000)))
        assert markers(c, ghost, 0, 5) == E.invalid_producer_epoch
        assert markers(c, ghost, 1, 4) == E.transaction_coordinator_fenced
        assert markers(c, ghost, 1, 5, partition=7) == E.unknown_topic_or_partition
        assert markers(c, ghost, 1, 5, version=2) == 0
        r = c.call(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
            {"name": TOPIC, "partition_indexes": [0, 3]}, {"name": "nope", "partition_indexes": [0]}])
        codes = [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]
        assert codes == [(TOPIC, 0, 0), (TOPIC, 3, E.unknown_topic_or_partition),
                         ("nope", 0, E.unknown_topic_or_partition)]


def test_acls(tmp_path: Any) -> None:
    """READ on the topic for DescribeProducers, CLUSTER_ACTION for WriteTxnMarkers."""
    from groupcoord.server.security.acls import AclOperation as Op
    from groupcoord.server.security.acls import ResourceType as RT

    from .acl_support import thread_server
    from .test_server_acls import create_topic, grant

    with thread_server(tmp_path / "data") as srv, srv.client("admin") as admin, \
            srv.client("alice") as alice:
        create_topic(admin, TOPIC, 1)

        def describe() -> int:
            r = alice.call(ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
                {"name": TOPIC, "partition_indexes": [0]}])
            return int(r.topics[0].partitions[0].error_code)

        def abort() -> int:
            r = alice.call(ApiKey.WRITE_TXN_MARKERS, 1, markers=[{
                "producer_id": 77, "producer_epoch": 0, "transaction_result": False,
                "coordinator_epoch": 0, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}])
            return int(r.markers[0].topics[0].partitions[0].error_code)

        assert describe() == E.topic_authorization_failed
        assert abort() == E.cluster_authorization_failed
        assert list_latest(admin, 0) == 0  # no marker written
        grant(admin, RT.TOPIC, TOPIC, "User:alice", Op.READ)
        grant(admin, RT.CLUSTER, "kafka-cluster", "User:alice", Op.CLUSTER_ACTION)
        assert describe() == 0
        assert abort() == 0
        assert list_latest(admin, 0) == 1


def test_cli_find_hanging_and_abort(cluster: Cluster) -> None:
    """``groupcoord transactions find-hanging`` shows the ghost (not the tracked transaction of
    a live producer), ``abort`` ends it; then nothing hangs and the LSO is the high watermark."""
    import json
    import subprocess
    import sys

    def gc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "groupcoord", "transactions", *args,
                               "--bootstrap-server", cluster.bootstrap_servers],
                              capture_output=True, text=True, timeout=60)

    with KafkaClient(cluster.bootstrap_servers) as c:
        ghost = int(c.init_producer_id().producer_id)
        assert hang(cluster, ghost, b"ghost") == 0
        live = new_pid(c, "live")  # open, tracked by the coordinator: not hanging
        assert produce(c, batch([b"live"], live, 0, 0, txn=True), "live") == (0, 1)
    out = gc("find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0", "--json")
    assert out.returncode == 0, out.stderr
    assert [(h["producer_id"], h["start_offset"]) for h in json.loads(out.stdout)] == [(ghost, 0)]
    missing = gc("abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "5")
    assert missing.returncode == 1 and "no open transaction starts at offset 5" in missing.stderr
    out = gc("abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert out.returncode == 0, out.stderr
    out = gc("find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0", "--json")
    assert json.loads(out.stdout) == []
    with KafkaClient(cluster.bootstrap_servers) as c:
        assert c.call(ApiKey.END_TXN, 3, transactional_id="live", producer_id=live,
                      producer_epoch=0, committed=True).error_code == 0
        assert list_latest(c, 1) == list_latest(c, 0) == 4
    assert read_committed(cluster, 1) == [b"live"]
    unknown = gc("find-hanging", "--topic", "nope")
    assert unknown.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in unknown.stderr
