"""A user's test suite with the pytest plugin of ``groupcoord.testing``: the ``kafka_cluster``
fixture and the ``groupcoord`` marker, with applications written for confluent-kafka (consumer
and classic protocols), kafka-python and aiokafka, unchanged (each only takes its bootstrap
servers).

Each application consumes a topic in a group and commits what it processed; the tests inject
retriable coordinator errors on the group's heartbeats (NOT_COORDINATOR: the clients look the
coordinator up again) and commits (:data:`COMMIT_ERRORS`) and check that nothing is lost:
every record produced is processed, and the group's committed offsets reach the end of every
partition.

The plugin is loaded by ``tests/conftest.py`` (``pytest_plugins``) and by its ``pytest11`` entry
point once groupcoord is installed; these tests are what a user would write.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from groupcoord.testing import Cluster

TOPIC = "orders"
PARTITIONS = 3
N = 30
TIMEOUT_S = 60.0
MAX_POLL_MS = 45_000  # a stalled application leaves its group well before the test gives up


# ----------------------------------------------------------------------------- the applications
# What an application team has: functions taking their bootstrap servers, nothing test-specific.


def produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=f"order-{i}".encode())
    assert p.flush(30) == 0


def confluent_app(bootstrap: str, group: str, topic: str, want: int, protocol: str,
                  distinct: bool = False) -> list[str]:
    """Consume until ``want`` records were processed, committing after each one (``distinct``:
    records are named by partition and offset, not by value)."""
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "group.protocol": protocol, "max.poll.interval.ms": MAX_POLL_MS}
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
        conf["heartbeat.interval.ms"] = 500
    c = Consumer(conf)
    c.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(set(seen)) < want and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            seen.append(f"{m.partition()}@{m.offset()}" if distinct else m.value().decode())
            while True:  # librdkafka returns coordinator errors (and, across a broker
                try:     # restart, transport errors) to a sync commit: the application retries
                    c.commit(message=m, asynchronous=False)
                    break
                except KafkaException as e:
                    if e.args[0].fatal() or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
    finally:
        c.close()
    return seen


def commit_retrying(commit: Callable[[], object], deadline: float) -> None:
    """kafka-python's sync commit, retried after a retriable error until ``deadline``: across a
    broker restart, kafka-python 3.0.12's coordinator lookup lets a refused connection escape
    the commit (KafkaConnectionError, retriable) instead of retrying it; an application that
    carries on retries it."""
    from kafka.errors import KafkaError

    while True:
        try:
            commit()
            return
        except KafkaError as e:
            if not e.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def kafka_python_app(bootstrap: str, group: str, topic: str, want: int,
                     distinct: bool = False) -> list[str]:
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=6000, heartbeat_interval_ms=500)
    seen: list[str] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(set(seen)) < want and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                seen.extend(f"{r.partition}@{r.offset}" if distinct else r.value.decode()
                            for r in records)
                commit_retrying(c.commit, deadline)
    finally:
        c.close()
    return seen


async def aiokafka_app(bootstrap: str, group: str, topic: str, want: int,
                       distinct: bool = False) -> list[str]:
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=500)
    await c.start()
    seen: list[str] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(set(seen)) < want and time.monotonic() < deadline:
            batches = await c.getmany(timeout_ms=200)
            for records in batches.values():
                seen.extend(f"{r.partition}@{r.offset}" if distinct else r.value.decode()
                            for r in records)
            if batches:
                await c.commit()
    finally:
        await c.stop()
    return seen


# ----------------------------------------------------------------------------- the tests


def _committed(cluster: Cluster, group: str) -> dict[int, int]:
    from groupcoord.protocol.client import KafkaClient
    from groupcoord.protocol.versions import ApiKey

    with KafkaClient(cluster.bootstrap_servers) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": TOPIC, "partition_indexes": list(range(PARTITIONS))}]}])
    return {int(p.partition_index): int(p.committed_offset)
            for t in r.groups[0].topics for p in t.partitions}


def _run(cluster: Cluster, client: str, group: str) -> list[str]:
    b = cluster.bootstrap_servers
    if client == "confluent-consumer":
        return confluent_app(b, group, TOPIC, N, "consumer")
    if client == "confluent-classic":
        return confluent_app(b, group, TOPIC, N, "classic")
    if client == "kafka-python":
        return kafka_python_app(b, group, TOPIC, N)
    return asyncio.run(aiokafka_app(b, group, TOPIC, N))


CLIENTS = ["confluent-consumer", "confluent-classic", "kafka-python", "aiokafka"]
#: The heartbeat API of each client's group protocol.
HEARTBEAT = {"confluent-consumer": "ConsumerGroupHeartbeat", "confluent-classic": "Heartbeat",
             "kafka-python": "Heartbeat", "aiokafka": "Heartbeat"}


#: The retriable commit errors injected per client. librdkafka 2.16 (both protocols) is given
#: the ones it retries on the same coordinator: after NOT_COORDINATOR or
#: COORDINATOR_NOT_AVAILABLE on an OffsetCommit, when FindCoordinator names the same broker
#: again, its synchronous commit did not return until max.poll.interval.ms expired (its
#: coordinator connection kept closing "due to nodename change"), seen against this server;
#: docs/testing.md has the details.
COMMIT_ERRORS = {
    "confluent-consumer": [("COORDINATOR_LOAD_IN_PROGRESS", 3)],
    "confluent-classic": [("COORDINATOR_LOAD_IN_PROGRESS", 3)],
    "kafka-python": [("COORDINATOR_NOT_AVAILABLE", 2), ("NOT_COORDINATOR", 2)],
    "aiokafka": [("COORDINATOR_NOT_AVAILABLE", 2), ("NOT_COORDINATOR", 2)],
}


@pytest.mark.groupcoord(topics={TOPIC: PARTITIONS})
def test_the_fixture_gives_a_running_server_with_the_declared_topics(
        kafka_cluster: Cluster, kafka_bootstrap: str) -> None:
    assert kafka_bootstrap == kafka_cluster.bootstrap_servers
    assert kafka_cluster.topics() == {TOPIC: PARTITIONS}
    produce(kafka_bootstrap, TOPIC, 3)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert sorted(confluent_app(kafka_bootstrap, group, TOPIC, 3, "consumer")) == \
        ["order-0", "order-1", "order-2"]


@pytest.mark.groupcoord(topics={TOPIC: PARTITIONS})
@pytest.mark.parametrize("client", CLIENTS)
def test_an_application_loses_nothing_under_coordinator_errors(kafka_cluster: Cluster,
                                                               client: str) -> None:
    group = f"g-{client}-{uuid.uuid4().hex[:6]}"
    produce(kafka_cluster.bootstrap_servers, TOPIC, N)
    ctl = kafka_cluster.control
    ctl.inject_error(HEARTBEAT[client], "NOT_COORDINATOR", 3, group=group)
    for error, count in COMMIT_ERRORS[client]:
        ctl.inject_error("OffsetCommit", error, count, group=group)
    seen = _run(kafka_cluster, client, group)
    assert set(seen) == {f"order-{i}" for i in range(N)}  # nothing lost
    # Every injected commit error was answered to the client, which retried past it (the
    # heartbeat errors too when the application ran long enough to heartbeat) ...
    faults = ctl.faults()
    assert [r for r in faults["errors"] if r["api"] == "OFFSET_COMMIT"] == [], faults
    assert faults["injected"] >= sum(n for _, n in COMMIT_ERRORS[client])
    # ... and what it processed is committed: the group resumes at the end of each partition.
    committed = _committed(kafka_cluster, group)
    assert sum(committed.values()) == N, committed


@pytest.mark.groupcoord(topics={TOPIC: PARTITIONS})
@pytest.mark.parametrize("client", CLIENTS)
def test_an_application_carries_on_across_a_broker_restart(kafka_cluster: Cluster,
                                                           client: str) -> None:
    """The broker goes away for a second (connections closed, port refused) once the application
    has processed and committed the first records, and comes back with its log; the records
    produced afterwards reach the application too."""
    group = f"g-{client}-{uuid.uuid4().hex[:6]}"
    b = kafka_cluster.bootstrap_servers
    produce(b, TOPIC, N)
    failed: list[BaseException] = []

    def chaos() -> None:
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while sum(_committed(kafka_cluster, group).values()) < N:
                if time.monotonic() > deadline:
                    raise TimeoutError("the application never committed the first records")
                time.sleep(0.1)
            kafka_cluster.restart(down_s=1.0)
            produce(b, TOPIC, N)  # offsets N.. of the same keys' partitions
        except BaseException as e:
            failed.append(e)

    t = threading.Thread(target=chaos, daemon=True)
    t.start()
    want = 2 * N
    if client == "confluent-consumer":
        seen = confluent_app(b, group, TOPIC, want, "consumer", distinct=True)
    elif client == "confluent-classic":
        seen = confluent_app(b, group, TOPIC, want, "classic", distinct=True)
    elif client == "kafka-python":
        seen = kafka_python_app(b, group, TOPIC, want, distinct=True)
    else:
        seen = asyncio.run(aiokafka_app(b, group, TOPIC, want, distinct=True))
    t.join(TIMEOUT_S)
    assert not failed, failed
    assert len(set(seen)) == want  # every record of both rounds
    assert sum(_committed(kafka_cluster, group).values()) == want
