"""Transactional data over the wire (docs/wire.md "Transactional data"): Produce of
transactional batches, Fetch and ListOffsets by isolation level, TxnOffsetCommit and OffsetFetch
RequireStable, with real read_committed consumers (confluent-kafka / librdkafka, kafka-python,
aiokafka) as the judges of what a marker makes visible.

The transaction coordinator is the other half (its own tests); here the markers and the ends of
transactions in groups are written in process through the two calls it uses,
``TopicRegistry.write_marker`` and ``CoordinatorRuntime.complete_transaction``, and the
transactional batches by our own client."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import crc32c
import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing.cluster import Cluster, embedded_cluster

E = ErrorCode
TOPIC = "txn-data"


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def batch(values: list[bytes], pid: int = -1, epoch: int = -1, seq: int = -1,
          txn: bool = False) -> bytes:
    """A v2 batch of ``values`` (null keys), transactional if ``txn``."""
    records = b""
    for i, v in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(v)) + v + _varint(0)
        records += _varint(len(body)) + body
    n = len(values)
    ts = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0x10 if txn else 0, n - 1, ts, ts, pid, epoch, seq,
                            n) + records
    body = struct.pack(">ibI", -1, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def produce(c: KafkaClient, data: bytes, transactional_id: str | None = None,
            partition: int = 0) -> tuple[int, int]:
    r = c.call(ApiKey.PRODUCE, 9, acks=-1, timeout=5000, transactional_id=transactional_id,
               topic_data=[{"name": TOPIC, "partition_data": [{"index": partition,
                                                              "records": data}]}])
    p = r.responses[0].partition_responses[0]
    return int(p.error_code), int(p.base_offset)


def fetch(c: KafkaClient, offset: int, isolation: int) -> Any:
    r = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1,
               isolation_level=isolation, topics=[
                   {"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                    "partition_max_bytes": 1 << 20}]}])
    return r.responses[0].partitions[0]


def list_latest(c: KafkaClient, isolation: int) -> int:
    r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=isolation, topics=[
        {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}])
    return int(r.topics[0].partitions[0].offset)


def marker(cluster: Cluster, pid: int, commit: bool, epoch: int = 0) -> int:
    return cluster._on_loop(lambda: cluster.server.registry.write_marker(
        TOPIC, 0, pid, epoch, commit, 0, int(time.time() * 1000)))


def complete(cluster: Cluster, group: str, pid: int, commit: bool, epoch: int = 0) -> int:
    return cluster._on_loop(lambda: cluster.server.runtime.complete_transaction(
        group, pid, epoch, commit))


def new_pid(c: KafkaClient, transactional_id: str = "tx", groups: tuple[str, ...] = ()) -> int:
    """A transactional producer's id (epoch 0) whose open transaction holds partition 0 and
    ``groups``: the transaction coordinator verifies every transactional Produce and
    TxnOffsetCommit against it (KIP-890 part 1)."""
    r = c.init_producer_id(transactional_id)
    assert (r.error_code, r.producer_epoch) == (0, 0), r
    pid = int(r.producer_id)
    add = c.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id=transactional_id,
                 v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
                 v3_and_below_topics=[{"name": TOPIC, "partitions": [0]}])
    assert [p.partition_error_code for t in add.results_by_topic_v3_and_below
            for p in t.results_by_partition] == [0], add
    for group in groups:
        r = c.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=transactional_id,
                   producer_id=pid, producer_epoch=0, group_id=group)
        assert r.error_code == 0, r
    return pid


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={TOPIC: 1}) as cl:
        yield cl


def write_mixed(cluster: Cluster) -> tuple[list[bytes], list[bytes]]:
    """Committed, aborted and open transactions and plain records on partition 0: (what a
    read_committed consumer must read, in order; every value)."""
    with KafkaClient(cluster.bootstrap_servers) as c:
        a, b, d = new_pid(c, "tx-a"), new_pid(c, "tx-b"), new_pid(c, "tx-d")
        assert produce(c, batch([b"a1", b"a2"], a, 0, 0, txn=True), "tx-a") == (0, 0)
        assert produce(c, batch([b"p1"])) == (0, 2)
        assert produce(c, batch([b"b1"], b, 0, 0, txn=True), "tx-b") == (0, 3)
        assert produce(c, batch([b"a3"], a, 0, 2, txn=True), "tx-a") == (0, 4)
        # Read before any marker: nothing is stable past the first open transaction.
        assert fetch(c, 0, 1).last_stable_offset == 0
        assert fetch(c, 0, 1).records in (b"", None)
        assert list_latest(c, 1) == 0 and list_latest(c, 0) == 5
        assert marker(cluster, a, commit=False) == 5
        assert marker(cluster, b, commit=True) == 6
        assert produce(c, batch([b"d1"], d, 0, 0, txn=True), "tx-d") == (0, 7)
        assert produce(c, batch([b"p2"])) == (0, 8)
        # d is still open: the last stable offset stops there.
        assert list_latest(c, 1) == 7 and list_latest(c, 0) == 9
        assert marker(cluster, d, commit=True) == 9
        assert list_latest(c, 1) == 10
    return [b"p1", b"b1", b"d1", b"p2"], [b"a1", b"a2", b"p1", b"b1", b"a3", b"d1", b"p2"]


# ----------------------------------------------------------------------------- our client


def test_fetch_and_list_offsets_by_isolation_level(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        a = new_pid(c)
        assert produce(c, batch([b"x"], a, 0, 0, txn=True), "tx") == (0, 0)
        assert produce(c, batch([b"y"])) == (0, 1)
        committed = fetch(c, 0, 1)
        assert (committed.high_watermark, committed.last_stable_offset) == (2, 0)
        assert committed.records in (b"", None) and committed.error_code == 0
        everything = fetch(c, 0, 0)
        assert everything.last_stable_offset == 0 and len(everything.records) > 0
        assert marker(cluster, a, commit=False) == 2
        committed = fetch(c, 0, 1)
        assert (committed.high_watermark, committed.last_stable_offset) == (3, 3)
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [
            (a, 0)]
        # A non-transactional batch of a producer inside its transaction is refused.
        assert produce(c, batch([b"z"], a, 0, 1, txn=True), "tx") == (0, 3)
        assert produce(c, batch([b"w"], a, 0, 2, txn=False))[0] == E.invalid_txn_state
        assert produce(c, batch([b"v"], a, 0, 1, txn=True), "tx") == (0, 3)  # a retry
        # A fenced epoch (the coordinator aborted at epoch 1).
        assert marker(cluster, a, commit=False, epoch=1) == 4
        assert produce(c, batch([b"u"], a, 0, 3, txn=True), "tx")[0] == E.invalid_producer_epoch


def test_txn_offset_commit_and_require_stable(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        pid = new_pid(c, groups=("g0", "g3", "none"))
        for version, group in ((0, "g0"), (3, "g3")):
            r = c.call(ApiKey.TXN_OFFSET_COMMIT, version, transactional_id="tx", group_id=group,
                       producer_id=pid, producer_epoch=0, generation_id=-1, member_id="",
                       group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                           {"partition_index": 0, "committed_offset": 42,
                            "committed_leader_epoch": -1, "committed_metadata": "m"}]}])
            assert [p.error_code for p in r.topics[0].partitions] == [0], r
            stable = c.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=True,
                            topics=[{"name": TOPIC, "partition_indexes": [0]}])
            assert stable.topics[0].partitions[0].error_code == E.unstable_offset_commit
            loose = c.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=False,
                           topics=[{"name": TOPIC, "partition_indexes": [0]}])
            assert loose.topics[0].partitions[0].committed_offset == -1
        # KIP-447: an unknown member of an existing (empty-offsets) consumer group context.
        fenced = c.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id="tx", group_id="none",
                        producer_id=pid, producer_epoch=0, generation_id=5, member_id="m",
                        group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                            {"partition_index": 0, "committed_offset": 1,
                             "committed_leader_epoch": -1, "committed_metadata": ""}]}])
        assert fenced.topics[0].partitions[0].error_code == E.illegal_generation
        assert complete(cluster, "g0", pid, commit=True) == 0
        assert complete(cluster, "g3", pid, commit=False) == 0
        for group, offset in (("g0", 42), ("g3", -1)):
            r = c.call(ApiKey.OFFSET_FETCH, 8, require_stable=True, groups=[
                {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}])
            p = r.groups[0].topics[0].partitions[0]
            assert (p.error_code, p.committed_offset) == (0, offset)


# ----------------------------------------------------------------------------- real clients


def test_confluent_read_committed_sees_committed_data_only(cluster: Cluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    committed, everything = write_mixed(cluster)
    for isolation, expected in (("read_committed", committed), ("read_uncommitted", everything)):
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                             "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                             "isolation.level": isolation, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        try:
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(got) < len(expected) and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            end = time.monotonic() + 1.0  # nothing more arrives
            while time.monotonic() < end:
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            assert got == expected, isolation
            _lo, hi = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
            assert hi == 10
        finally:
            consumer.close()


def test_kafka_python_read_committed(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, TopicPartition

    committed, _ = write_mixed(cluster)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert [m.value for m in consumer] == committed
        assert consumer.end_offsets([tp])[tp] == 10
    finally:
        consumer.close()


def test_aiokafka_read_committed(cluster: Cluster) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    committed, _ = write_mixed(cluster)

    async def main() -> list[bytes]:
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                    isolation_level="read_committed", enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            tp = TopicPartition(TOPIC, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            got: list[bytes] = []
            deadline = time.monotonic() + 15
            while len(got) < len(committed) + 1 and time.monotonic() < deadline:
                batches = await consumer.getmany(tp, timeout_ms=500)
                got.extend(m.value for m in batches.get(tp, []))
                if len(got) >= len(committed) and not batches:
                    break
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(main()) == committed


def test_a_marker_wakes_a_waiting_read_committed_fetch(cluster: Cluster) -> None:
    """The transaction coordinator's marker (``PartitionLog.append_control`` directly) answers
    a read_committed Fetch waiting for data beyond the last stable offset: long before its
    MaxWaitMs (20 s), which it would otherwise wait out."""
    import threading

    with KafkaClient(cluster.bootstrap_servers) as c, \
            KafkaClient(cluster.bootstrap_servers) as waiting:
        pid = new_pid(c)
        assert produce(c, batch([b"t1"], pid, 0, 0, txn=True), "tx") == (0, 0)
        result: dict[str, Any] = {}

        def long_poll() -> None:
            t0 = time.monotonic()
            r = waiting.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=20_000, min_bytes=1,
                             isolation_level=1, topics=[
                                 {"topic": TOPIC, "partitions": [
                                     {"partition": 0, "fetch_offset": 0,
                                      "partition_max_bytes": 1 << 20}]}])
            result["part"] = r.responses[0].partitions[0]
            result["s"] = time.monotonic() - t0

        t = threading.Thread(target=long_poll)
        t.start()
        time.sleep(0.5)
        assert "part" not in result  # nothing stable yet: it waits
        cluster._on_loop(lambda: cluster.server.registry.partition(TOPIC, 0).append_control(
            pid, 0, True, 0, int(time.time() * 1000)))
        t.join(30)
        part = result["part"]
        assert part.last_stable_offset == 2 and len(part.records) > 0
        assert result["s"] < 10


def test_transactional_id_acls_for_produce_and_txn_offset_commit(tmp_path: Any) -> None:
    """WRITE on the TRANSACTIONAL_ID (Kafka's ``KafkaApis``): a Produce with a transactional id
    and a TxnOffsetCommit without it are refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every
    partition and write nothing; with it they go through (then GROUP and TOPIC are checked)."""
    from groupcoord.server.security.acls import AclOperation as Op
    from groupcoord.server.security.acls import ResourceType as RT

    from .acl_support import thread_server
    from .test_server_acls import create_topic, grant

    with thread_server(tmp_path / "data") as srv, srv.client("admin") as admin, \
            srv.client("alice") as alice:
        create_topic(admin, TOPIC, 1)
        grant(admin, RT.TOPIC, TOPIC, "User:alice", Op.WRITE)
        grant(admin, RT.TOPIC, TOPIC, "User:alice", Op.READ)
        grant(admin, RT.GROUP, "g", "User:alice", Op.READ)
        grant(admin, RT.CLUSTER, "kafka-cluster", "User:alice", Op.IDEMPOTENT_WRITE)
        pid = -1

        def txn_commit() -> int:
            r = alice.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id="tx-a", group_id="g",
                           producer_id=pid, producer_epoch=0, generation_id=-1, member_id="",
                           group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                               {"partition_index": 0, "committed_offset": 1,
                                "committed_leader_epoch": -1, "committed_metadata": ""}]}])
            return int(r.topics[0].partitions[0].error_code)

        refused = E.transactional_id_authorization_failed
        assert produce(alice, batch([b"x"], pid, 0, 0, txn=True), "tx-a") == (refused, -1)
        assert txn_commit() == refused
        assert list_latest(admin, 0) == 0
        grant(admin, RT.TRANSACTIONAL_ID, "tx-a", "User:alice", Op.WRITE)
        pid = new_pid(alice, "tx-a", groups=("g",))
        assert produce(alice, batch([b"x"], pid, 0, 0, txn=True), "tx-a") == (0, 0)
        assert txn_commit() == 0
