"""Share partitions judged by a real client (KIP-932): confluent-kafka 2.16's ShareConsumer
(librdkafka 2.16, ShareFetch / ShareAcknowledge v1) against the embedded server.

More consumers than partitions all receive records; a consumer killed -9 has what it acquired
delivered again; RELEASE and REJECT as KIP-932 says; a poison record archived at the delivery
limit; a server restart loses no acknowledgement.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing import Cluster, embedded_cluster

ck = pytest.importorskip("confluent_kafka")

#: Kafka's lowest lock duration (share groups' bounds) and delivery limit.
LOCK_MS = 15_000
CONFIG = {"group.share.record.lock.duration.ms": str(LOCK_MS),
          "group.share.delivery.count.limit": "3",
          "group.share.min.heartbeat.interval.ms": "500",
          "group.share.heartbeat.interval.ms": "500"}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={"two": 2, "one": 1}, config=CONFIG) as c:
        yield c


def consumer(bootstrap: str, group: str, topic: str, explicit: bool = False) -> Any:
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit" if explicit else "implicit",
                          "log_level": 3})
    c.subscribe([topic])
    return c


def produce(bootstrap: str, topic: str, n: int, partitions: int, start: int = 0) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(start, start + n):
        p.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert p.flush(10) == 0


def poll(c: Any, timeout: float = 0.2) -> list[Any]:
    out = []
    for m in c.poll(timeout):
        assert m.error() is None, m.error()
        out.append(m)
    return out


def warm_up(consumers: list[Any], seconds: float = 3.0) -> None:
    """Poll until the consumers joined and fetched once (share partitions start at the end of
    the log, share.auto.offset.reset=latest): records produced after this are theirs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for c in consumers:
            assert poll(c, 0.1) == []


def start_offset(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    with KafkaClient(bootstrap) as admin:
        r = admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[{
            "group_id": group, "topics": [{"topic_name": topic, "partitions": [partition]}]}])
    return int(r.groups[0].topics[0].partitions[0].start_offset)


def test_more_consumers_than_partitions_all_receive_records(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    group = f"sg-{uuid.uuid4().hex[:8]}"
    consumers = [consumer(boot, group, "two") for _ in range(4)]
    try:
        warm_up(consumers)
        got: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(consumers))}
        produced = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not all(got.values())
                                               or sum(map(len, got.values())) < produced):
            if produced < 400:
                produce(boot, "two", 4, 2, start=produced)
                produced += 4
            for i, c in enumerate(consumers):
                got[i] += [(m.partition(), m.offset()) for m in poll(c, 0.05)]
        assert all(got.values()), {i: len(v) for i, v in got.items()}
        delivered = [tp for v in got.values() for tp in v]
        # every record once: acknowledged implicitly, never redelivered, none lost
        assert len(delivered) == len(set(delivered)) == produced
    finally:
        for c in consumers:
            c.close()


_VICTIM = """
import json, sys, time
import confluent_kafka as ck
c = ck.ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                      "share.acknowledgement.mode": "explicit", "log_level": 3})
c.subscribe(["one"])
deadline = time.monotonic() + 3
while time.monotonic() < deadline:
    assert not list(c.poll(0.1))
print("ready", flush=True)
taken = []
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not taken:
    taken = [m.offset() for m in c.poll(0.2) if m.error() is None]
print(json.dumps(taken), flush=True)
time.sleep(600)
"""


def test_records_of_a_consumer_killed_9_are_delivered_again(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    group = f"sg-{uuid.uuid4().hex[:8]}"
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM, boot, group],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    other = None
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline() == "ready\n"  # joined, the share partition started
        produce(boot, "one", 10, 1)
        taken = json.loads(victim.stdout.readline())  # it acquired these, acknowledges none
        assert taken
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        # a consumer that joins after (librdkafka fetches ahead in the background: one that
        # was there before could have taken the records first)
        other = consumer(boot, group, "one")
        again: dict[int, int] = {}
        deadline = time.monotonic() + LOCK_MS / 1000 + 20
        while time.monotonic() < deadline and not set(taken) <= set(again):
            for m in poll(other, 0.5):
                again[m.offset()] = m.delivery_count()
        assert set(taken) <= set(again)
        assert all(again[o] == 2 for o in taken)  # their second delivery
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(10)
        if other is not None:
            other.close()


def test_release_and_reject(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    group = f"sg-{uuid.uuid4().hex[:8]}"
    c = consumer(boot, group, "one", explicit=True)
    try:
        warm_up([c])
        produce(boot, "one", 10, 1)
        deliveries: dict[int, list[int]] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and start_offset(boot, group, "one") < 10:
            batch = poll(c, 0.3)
            for m in batch:
                deliveries.setdefault(m.offset(), []).append(m.delivery_count())
                # the first delivery: accept 0-2, release 3-5, reject 6-9; later ones: accept
                kind = (ck.AcknowledgeType.ACCEPT if m.offset() < 3 or m.delivery_count() > 1
                        else ck.AcknowledgeType.RELEASE if m.offset() < 6
                        else ck.AcknowledgeType.REJECT)
                c.acknowledge(m, kind)
            if batch:
                assert all(e is None for e in c.commit_sync(10).values())
        # RELEASE: delivered again, a second delivery; REJECT: never again
        assert deliveries == {o: [1, 2] if 3 <= o < 6 else [1] for o in range(10)}
        assert all(poll(c, 0.3) == [] for _ in range(3))
    finally:
        c.close()


def test_a_poison_record_is_archived_at_the_delivery_limit(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    group = f"sg-{uuid.uuid4().hex[:8]}"
    c = consumer(boot, group, "one", explicit=True)
    try:
        warm_up([c])
        produce(boot, "one", 3, 1)
        deliveries: dict[int, list[int]] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and start_offset(boot, group, "one") < 3:
            batch = poll(c, 0.3)
            for m in batch:
                deliveries.setdefault(m.offset(), []).append(m.delivery_count())
                # offset 1 is the poison record: the application always gives it back
                c.acknowledge(m, ck.AcknowledgeType.RELEASE if m.offset() == 1
                              else ck.AcknowledgeType.ACCEPT)
            if batch:
                assert all(e is None for e in c.commit_sync(10).values())
        # group.share.delivery.count.limit=3: released the third time, it is archived
        assert deliveries == {0: [1], 1: [1, 2, 3], 2: [1]}
        assert all(poll(c, 0.3) == [] for _ in range(3))
    finally:
        c.close()


def test_a_server_restart_loses_no_acknowledgement(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    group = f"sg-{uuid.uuid4().hex[:8]}"
    c = consumer(boot, group, "two", explicit=True)
    try:
        warm_up([c])
        produce(boot, "two", 20, 2)
        accepted: list[tuple[int, int]] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(accepted) < 20:
            batch = poll(c, 0.3)
            for m in batch:
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
                accepted.append((m.partition(), m.offset()))
            if batch:
                assert all(e is None for e in c.commit_sync(10).values())
        assert sorted(accepted) == [(p, o) for p in (0, 1) for o in range(10)]
        produce(boot, "two", 20, 2, start=20)  # not fetched before the restart
    finally:
        c.close()
    cluster.restart()
    c = consumer(boot, group, "two", explicit=True)
    try:
        after: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(after) < 20:
            batch = poll(c, 0.3)
            for m in batch:
                after.append((m.partition(), m.offset()))
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            if batch:
                c.commit_sync(10)
        # none of the acknowledged records again; every other one, once
        assert sorted(after) == [(p, o) for p in (0, 1) for o in range(10, 20)]
    finally:
        c.close()


def test_share_consumers_fetch_from_every_broker_with_a_session_each() -> None:
    """Three brokers lead the partitions; a ShareConsumer keeps a share session with each (one
    epoch per broker) and every record is delivered once."""
    with embedded_cluster(topics={"six": 6}, config=CONFIG, brokers=3) as cluster:
        boot = cluster.bootstrap_servers
        group = f"sg-{uuid.uuid4().hex[:8]}"
        consumers = [consumer(boot, group, "six") for _ in range(2)]
        try:
            warm_up(consumers)
            produce(boot, "six", 60, 6)
            got: list[tuple[int, int]] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(got) < 60:
                for c in consumers:
                    got += [(m.partition(), m.offset()) for m in poll(c, 0.1)]
            assert sorted(got) == [(p, o) for p in range(6) for o in range(10)]
        finally:
            for c in consumers:
                c.close()
