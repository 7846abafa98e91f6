"""confluent-kafka (librdkafka 2.16) against ``groupcoord serve`` with ``group.protocol=consumer``.

What real clients must see: three consumers on a 12-partition topic get disjoint shares
covering all 12; when one leaves the other two take over; a regex subscription picks up a topic
created later; partitions added to a topic get assigned; messages produced with librdkafka's
Producer are consumed and their committed offsets read back through OffsetFetch.

Each consumer is polled only from the test's thread (``assignment()`` from another thread can
deadlock, NOTES.md); every wait is bounded.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess

ck = pytest.importorskip("confluent_kafka")

TIMEOUT_S = 30.0


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(server: ServerProcess, name: str, partitions: int) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r


def add_partitions(server: ServerProcess, name: str, count: int) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_PARTITIONS, 3, topics=[{"name": name, "count": count,
                                                        "assignments": None}],
                   timeout=10_000, validate_only=False)
    assert int(r.results[0].error_code) == 0, r


def consumer(server: ServerProcess, group: str, **extra: Any) -> Any:
    conf = {
        "bootstrap.servers": server.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 50,
        "fetch.wait.max.ms": 100,
        "socket.connection.setup.timeout.ms": 5000,
    }
    conf.update(extra)
    return ck.Consumer(conf)


@contextmanager
def consumers(server: ServerProcess, group: str, n: int) -> Iterator[list[Any]]:
    cs = [consumer(server, group, **{"client.id": f"c{i}"}) for i in range(n)]
    try:
        yield cs
    finally:
        for c in cs:
            with contextlib.suppress(RuntimeError):  # already closed by the test
                c.close()


def assignment(c: Any) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def poll_until(cs: list[Any], cond: Callable[[], bool], timeout: float = TIMEOUT_S,
               on_message: Callable[[Any], None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in cs:
            msg = c.poll(0.05)
            if msg is not None and not msg.error() and on_message is not None:
                on_message(msg)
        if cond():
            return
    raise AssertionError(f"condition not met in {timeout}s; assignments: "
                         f"{[sorted(assignment(c)) for c in cs]}")


def disjoint_cover(cs: list[Any], expected: set[tuple[str, int]]) -> bool:
    """Every member holds a share, the shares are disjoint, cover ``expected`` and are balanced
    (sizes differ by at most one: the uniform assignor's target, reached after reconciliation)."""
    shares = [assignment(c) for c in cs]
    union: set[tuple[str, int]] = set().union(*shares)
    sizes = [len(s) for s in shares]
    return (sum(sizes) == len(union) and union == expected and min(sizes) > 0
            and max(sizes) - min(sizes) <= 1)


def test_three_consumers_share_twelve_partitions_and_two_take_over(gc_server: ServerProcess) -> None:
    topic, group = _name("share"), _name("g-share")
    create_topic(gc_server, topic, 12)
    expected = {(topic, p) for p in range(12)}
    with consumers(gc_server, group, 3) as cs:
        for c in cs:
            c.subscribe([topic])
        poll_until(cs, lambda: disjoint_cover(cs, expected))
        assert sorted(len(assignment(c)) for c in cs) == [4, 4, 4]

        cs[2].close()
        rest = cs[:2]
        poll_until(rest, lambda: disjoint_cover(rest, expected))
        assert sorted(len(assignment(c)) for c in rest) == [6, 6]


def test_regex_subscription_picks_up_a_topic_created_later(gc_server: ServerProcess) -> None:
    prefix = _name("rx")
    first, later = f"{prefix}-a", f"{prefix}-b"
    create_topic(gc_server, first, 2)
    with consumers(gc_server, _name("g-regex"), 1) as cs:
        cs[0].subscribe([f"^{prefix}-.*"])
        poll_until(cs, lambda: assignment(cs[0]) == {(first, 0), (first, 1)})
        create_topic(gc_server, later, 3)
        want = {(first, 0), (first, 1), (later, 0), (later, 1), (later, 2)}
        poll_until(cs, lambda: assignment(cs[0]) == want)


def test_added_partitions_get_assigned(gc_server: ServerProcess) -> None:
    topic = _name("grow")
    create_topic(gc_server, topic, 2)
    with consumers(gc_server, _name("g-grow"), 2) as cs:
        for c in cs:
            c.subscribe([topic])
        poll_until(cs, lambda: disjoint_cover(cs, {(topic, 0), (topic, 1)}))
        add_partitions(gc_server, topic, 6)
        poll_until(cs, lambda: disjoint_cover(cs, {(topic, p) for p in range(6)}))


def test_produced_messages_are_consumed_and_committed(gc_server: ServerProcess) -> None:
    topic, group = _name("data"), _name("g-data")
    create_topic(gc_server, topic, 4)
    seen: dict[int, list[int]] = {p: [] for p in range(4)}

    def on_message(msg: Any) -> None:
        seen[msg.partition()].append(int(msg.key()))

    n = 400
    with consumers(gc_server, group, 2) as cs:
        for c in cs:
            c.subscribe([topic])
        # a stable group first, so that no partition moves (and is re-read) while consuming
        poll_until(cs, lambda: disjoint_cover(cs, {(topic, p) for p in range(4)}))
        producer = ck.Producer({"bootstrap.servers": gc_server.bootstrap, "linger.ms": 5})
        for i in range(n):
            producer.produce(topic, key=str(i).encode(), value=f"value-{i}".encode(),
                             partition=i % 4)
        assert producer.flush(15) == 0
        poll_until(cs, lambda: sum(len(v) for v in seen.values()) >= n, on_message=on_message)
        for p, keys in seen.items():
            assert keys == list(range(p, n, 4)), f"partition {p} out of order or incomplete"
        for c in cs:
            c.commit(asynchronous=False)
        committed = {}
        for c in cs:
            for tp in c.committed(list(c.assignment()), timeout=10):
                committed[tp.partition] = tp.offset
        assert committed == {p: n // 4 for p in range(4)}
        # a fresh reader (admin OffsetFetch, no member id) sees them too
        with KafkaClient(gc_server.bootstrap) as admin:
            r = admin.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": None}])
        got = {(t.name, int(p.partition_index)): int(p.committed_offset)
               for t in r.groups[0].topics for p in t.partitions}
        assert got == {(topic, p): n // 4 for p in range(4)}


@pytest.mark.parametrize("with_a_member_before", [False, True], ids=["new-group", "emptied-group"])
def test_simple_consumer_assign_then_commit(gc_server: ServerProcess,
                                            with_a_member_before: bool) -> None:
    """librdkafka's simple consumer (``group.protocol=consumer``, manual ``assign()``, no
    subscription) commits with its client-generated member id and epoch -1: Kafka 4.3's
    ``ConsumerGroup.validateOffsetCommit`` accepts that while the group has no member, and so
    must we, to a group never seen and to a consumer group whose members have all left."""
    topic, group = _name("simple"), _name("g-simple")
    create_topic(gc_server, topic, 2)
    if with_a_member_before:
        with consumers(gc_server, group, 1) as cs:
            cs[0].subscribe([topic])
            poll_until(cs, lambda: assignment(cs[0]) == {(topic, 0), (topic, 1)})
    c = consumer(gc_server, group)
    try:
        c.assign([ck.TopicPartition(topic, 0, 0), ck.TopicPartition(topic, 1, 0)])
        c.poll(0.1)
        done = c.commit(offsets=[ck.TopicPartition(topic, 0, 5), ck.TopicPartition(topic, 1, 9)],
                        asynchronous=False)
        assert [(tp.partition, tp.offset, tp.error) for tp in done] == [(0, 5, None),
                                                                        (1, 9, None)]
        got = c.committed([ck.TopicPartition(topic, 0), ck.TopicPartition(topic, 1)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in got] == [(0, 5), (1, 9)]
    finally:
        c.close()
