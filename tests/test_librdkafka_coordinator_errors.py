"""librdkafka (confluent-kafka) with one broker: a synchronous commit answered NOT_COORDINATOR
(or COORDINATOR_NOT_AVAILABLE) recovers.

librdkafka marks the coordinator dead, retries the OffsetCommit on its coordinator connection
and looks the coordinator up with FindCoordinator on the connection it fetches on. Requests on
a connection are answered in order, so the look-up used to wait behind the consumer's long-poll
Fetch (``fetch.wait.max.ms``, 500 ms by default); by then the retried commit sat queued on the
coordinator connection, which librdkafka closes when the coordinator's address is set again
("Closing connection due to nodename change"), failing the commit, marking the coordinator dead
again: the commit looped until ``max.poll.interval.ms``. The server now answers a waiting Fetch
at once when another request arrives behind it (``KafkaApis.fetch_now``), so the look-up is
answered in time. Client settings are librdkafka's defaults (the fetch wait matters here)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing.cluster import Control

from .conftest import ServerProcess

ck = pytest.importorskip("confluent_kafka")

#: A synchronous commit must return well before this; it used to loop for tens of seconds or
#: until max.poll.interval.ms (a liveness bound, not a timing figure).
COMMIT_DEADLINE_S = 20.0


def _topic_with_records(server: ServerProcess, n: int) -> str:
    topic = f"nc-{uuid.uuid4().hex[:8]}"
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 2,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r
    p = ck.Producer({"bootstrap.servers": server.bootstrap})
    for i in range(n):
        p.produce(topic, value=b"r%d" % i)
    assert p.flush(30) == 0
    return topic


def _commit(c: Any) -> tuple[str, Any]:
    """A synchronous commit on another thread: ("ok", offsets), ("error", exc) or ("hung",
    None) after the deadline (the consumer is then abandoned, not closed)."""
    out: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            out.append(("ok", c.commit(asynchronous=False)))
        except ck.KafkaException as e:
            out.append(("error", e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(COMMIT_DEADLINE_S)
    return out[0] if out else ("hung", None)


@pytest.mark.parametrize("error", ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"])
@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_a_synchronous_commit_recovers_from_a_coordinator_error_on_one_broker(
        gc_server: ServerProcess, protocol: str, error: str) -> None:
    topic = _topic_with_records(gc_server, 10)
    group = f"g-nc-{uuid.uuid4().hex[:8]}"
    c = ck.Consumer({"bootstrap.servers": gc_server.bootstrap, "group.id": group,
                     "group.protocol": protocol, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    hung = False
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 60
        while got < 10 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got += 1
        assert got == 10
        ctl = Control.connect(gc_server.bootstrap)
        ctl.inject_error("OffsetCommit", error, 1, group=group)
        outcome, value = _commit(c)
        hung = outcome == "hung"
        assert outcome == "ok", (outcome, value)
        assert sorted((tp.partition, tp.offset) for tp in value if tp.offset >= 0) \
            == sorted((p, off) for p, off in _committed(gc_server, group, topic).items())
        assert sum(_committed(gc_server, group, topic).values()) == 10
        assert ctl.faults()["errors"] == []  # the injected answer was given
    finally:
        if not hung:
            c.close()


def _committed(server: ServerProcess, group: str, topic: str) -> dict[int, int]:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": [0, 1]}]}], require_stable=False)
    [g] = r.groups
    return {int(p.partition_index): int(p.committed_offset) for t in g.topics
            for p in t.partitions if int(p.committed_offset) >= 0}
