"""Real transactional producers against the transaction coordinator (confluent-kafka /
librdkafka 2.16, kafka-python 3, aiokafka 0.14).

- every client's transactional producer starts (FindCoordinator for its transactional id,
  InitProducerId with it): the step where all of them stopped before there was a transaction
  coordinator (librdkafka's ``init_transactions()`` timed out, aiokafka failed at once);
- a zombie is fenced: two producers with one transactional id, the second's start fences the
  first, whose next transaction fails with the client's fenced error (librdkafka: a fatal
  ``_FENCED``; kafka-python ``ProducerFencedError``; aiokafka ``ProducerFenced``) when it adds
  its first partition, before anything it produces reaches a partition.

The produce-and-commit half (transactional batches, markers, read_committed) needs the
partitions' side of transactions; ``test_transactions_wire.py`` checks the markers through the
seam with fakes.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from groupcoord.testing import Cluster, embedded_cluster

TIMEOUT_S = 20.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={"out": 2}) as c:
        yield c


def _tid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def described(cluster: Cluster, tid: str) -> tuple[str, int, int]:
    """(state, producer id, epoch) the coordinator has for ``tid`` (read in process: kio cannot
    decode the -1 start time DescribeTransactions gives an id with no transaction yet)."""
    meta = cluster._on_loop(lambda: cluster.server.transactions.coordinator.describe(tid))
    assert meta is not None
    return meta.state.label, meta.producer_id, meta.producer_epoch


def test_confluent_kafka_init_transactions_and_a_fenced_zombie(cluster: Cluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    tid = _tid("ck")
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid}
    zombie = ck.Producer(conf)
    zombie.init_transactions(TIMEOUT_S)
    state, pid, first = described(cluster, tid)
    assert state == "Empty"
    successor = ck.Producer(conf)
    successor.init_transactions(TIMEOUT_S)
    assert described(cluster, tid) == ("Empty", pid, first + 1)
    zombie.begin_transaction()
    zombie.produce("out", b"from the zombie", partition=0)
    with pytest.raises(ck.KafkaException) as info:
        zombie.commit_transaction(TIMEOUT_S)
    err = info.value.args[0]
    assert err.code() == ck.KafkaError._FENCED and err.fatal()
    assert described(cluster, tid) == ("Empty", pid, first + 1)  # nothing was added
    successor.flush(1)


def test_kafka_python_init_transactions_and_a_fenced_zombie(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka")
    from kafka.errors import ProducerFencedError

    tid = _tid("kp")
    zombie = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                 transactional_id=tid)
    successor = None
    try:
        zombie.init_transactions()
        _, pid, first = described(cluster, tid)
        successor = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                        transactional_id=tid)
        successor.init_transactions()
        assert described(cluster, tid) == ("Empty", pid, first + 1)
        zombie.begin_transaction()
        zombie.send("out", b"from the zombie", partition=0)
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
    finally:
        zombie.close(timeout=1)
        if successor is not None:
            successor.close(timeout=1)


#: The aiokafka half runs in a child process: after aiokafka's fenced producer stops, CPython
#: 3.11.7's ``ast`` raises "AST constructor recursion depth mismatch" in the process that ran it
#: (seen in tests/test_architecture.py run after this file), whatever the server answered.
AIOKAFKA_ZOMBIE = """
import asyncio, sys
import aiokafka
from aiokafka.errors import ProducerFenced

async def main(bootstrap, tid):
    zombie = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    successor = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    await zombie.start()
    print("zombie started", flush=True)
    await successor.start()
    print("successor started", flush=True)
    try:
        async with zombie.transaction():
            await zombie.send_and_wait("out", b"from the zombie", partition=0)
        print("zombie committed", flush=True)
    except ProducerFenced:
        print("zombie fenced", flush=True)
    finally:
        await zombie.stop()
        await successor.stop()

asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 30))
"""


def test_aiokafka_start_and_a_fenced_zombie(cluster: Cluster) -> None:
    pytest.importorskip("aiokafka")
    tid = _tid("aio")
    p = subprocess.run([sys.executable, "-c", AIOKAFKA_ZOMBIE, cluster.bootstrap_servers, tid],
                       capture_output=True, text=True, timeout=60)
    assert p.stdout.splitlines() == ["zombie started", "successor started", "zombie fenced"], (
        p.stdout, p.stderr[-3000:])
    state, _, epoch = described(cluster, tid)
    assert (state, epoch) == ("Empty", 1)  # the successor's epoch; the zombie added nothing
