"""Hanging transactions prevented (KIP-890 part 1): the broker appends a transactional batch
only when the transaction coordinator tracks it (the partition is in the producer's Ongoing
transaction at that producer id and epoch), and commits transactional offsets only for a group
added by AddOffsetsToTxn. Without that, a batch nothing will ever end pins the partition's last
stable offset forever and read_committed consumers stall silently.

The three cases an outside reviewer found, over the wire: a Produce to a partition never added
with AddPartitionsToTxn, a delayed Produce after EndTxn(abort) at the same epoch, a transactional
batch of a producer id the coordinator never gave out; each must leave the LSO at the high
watermark, which a real read_committed consumer (librdkafka) then reads up to."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing.cluster import Cluster, embedded_cluster

from .test_transactional_data_wire import TOPIC, batch, fetch, list_latest, new_pid, produce

E = ErrorCode

# A coroutine dropped unawaited (a long-poll Fetch of the read_committed consumer cut off by the
# server's stop) is reported as an unraisable exception: an error here.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={TOPIC: 2}) as cl:
        yield cl


def init(c: KafkaClient, transactional_id: str) -> int:
    r = c.init_producer_id(transactional_id)
    assert (r.error_code, r.producer_epoch) == (0, 0), r
    return int(r.producer_id)


def end_txn(c: KafkaClient, transactional_id: str, pid: int, commit: bool) -> int:
    r = c.call(ApiKey.END_TXN, 3, transactional_id=transactional_id, producer_id=pid,
               producer_epoch=0, committed=commit)
    return int(r.error_code)


def assert_stable(c: KafkaClient, cluster: Cluster, expected: list[bytes]) -> None:
    """Nothing pins partition 0: LSO == high watermark, and librdkafka at read_committed reads
    ``expected`` (the plain records written after the refused batch)."""
    from confluent_kafka import Consumer, TopicPartition

    part = fetch(c, 0, 1)
    assert part.last_stable_offset == part.high_watermark
    assert list_latest(c, 1) == list_latest(c, 0)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "rc",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(got) < len(expected) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == expected
    finally:
        consumer.close()


def test_produce_to_a_partition_never_added_is_refused(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        pid = init(c, "no-add")
        assert produce(c, batch([b"NOADD"], pid, 0, 0, txn=True), "no-add") == (
            E.invalid_txn_state, -1)
        # Added to partition 0 only: partition 1 is still refused, partition 0 accepted.
        pid = new_pid(c, "half")
        assert produce(c, batch([b"P1"], pid, 0, 0, txn=True), "half", partition=1)[0] == (
            E.invalid_txn_state)
        assert produce(c, batch([b"P0"], pid, 0, 0, txn=True), "half") == (0, 0)
        assert end_txn(c, "half", pid, commit=True) == 0
        assert produce(c, batch([b"plain"])) == (0, 2)  # after P0 and its marker
        assert_stable(c, cluster, [b"P0", b"plain"])


def test_a_late_produce_after_abort_is_refused(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        pid = new_pid(c, "late")
        assert produce(c, batch([b"T1"], pid, 0, 0, txn=True), "late") == (0, 0)
        assert end_txn(c, "late", pid, commit=False) == 0
        assert produce(c, batch([b"LATE"], pid, 0, 1, txn=True), "late")[0] == (
            E.invalid_txn_state)
        assert produce(c, batch([b"plain"])) == (0, 2)
        assert_stable(c, cluster, [b"plain"])


def test_a_made_up_producer_id_is_refused(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        assert produce(c, batch([b"FORGED"], 987654, 3, 0, txn=True), "forged") == (
            E.invalid_producer_id_mapping, -1)
        # A real transactional id, someone else's producer id.
        pid = new_pid(c, "real")
        assert produce(c, batch([b"OTHER"], pid + 1000, 0, 0, txn=True), "real")[0] == (
            E.invalid_producer_id_mapping)
        # A fenced epoch of the right producer id.
        assert produce(c, batch([b"OLD"], pid, 1, 0, txn=True), "real")[0] == (
            E.invalid_producer_epoch)
        # Transactional records without a transactional id (Kafka's KafkaApis).
        assert produce(c, batch([b"NOTID"], pid, 0, 0, txn=True), None)[0] == (
            E.transactional_id_authorization_failed)
        assert end_txn(c, "real", pid, commit=False) == 0  # its marker at offset 0
        assert produce(c, batch([b"plain"])) == (0, 1)
        assert_stable(c, cluster, [b"plain"])


def test_txn_offset_commit_needs_add_offsets_to_txn(cluster: Cluster) -> None:
    def commit(c: KafkaClient, tid: str, pid: int, group: str) -> int:
        r = c.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id=tid, group_id=group,
                   producer_id=pid, producer_epoch=0, generation_id=-1, member_id="",
                   group_instance_id=None, topics=[{"name": TOPIC, "partitions": [
                       {"partition_index": 0, "committed_offset": 7,
                        "committed_leader_epoch": -1, "committed_metadata": ""}]}])
        return int(r.topics[0].partitions[0].error_code)

    def stable(c: KafkaClient, group: str) -> tuple[int, int]:
        r = c.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=True,
                   topics=[{"name": TOPIC, "partition_indexes": [0]}])
        p = r.topics[0].partitions[0]
        return int(p.error_code), int(p.committed_offset)

    with KafkaClient(cluster.bootstrap_servers) as c:
        pid = new_pid(c, "offs", groups=("added",))
        assert commit(c, "offs", pid, "not-added") == E.invalid_txn_state
        assert stable(c, "not-added") == (0, -1)  # nothing pending: nothing to wait for
        assert commit(c, "forged", 987654, "added") == E.invalid_producer_id_mapping
        assert commit(c, "offs", pid, "added") == 0
        assert stable(c, "added")[0] == E.unstable_offset_commit
        assert end_txn(c, "offs", pid, commit=True) == 0
        assert stable(c, "added") == (0, 7)
        # The transaction is over: the group is no longer in it.
        assert commit(c, "offs", pid, "added") == E.invalid_txn_state
