"""Share metrics (KIP-932 "Metrics"; Kafka's ``ShareGroupMetrics``, ``SharePartitionMetrics``,
``ShareSessionCache``): the share partitions' counters (``ShareCounters``) as a property of the
state machine, the exposition, and the metrics endpoint read while real ShareConsumers accept,
release and reject records."""

from __future__ import annotations

import time
import uuid
from typing import Any
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.share_partitions.config import ShareConfig
from groupcoord.coordinator.share_partitions.partition import (
    Acknowledgement,
    AckType,
    RecordState,
    ShareCounters,
    SharePartition,
)
from groupcoord.coordinator.share_partitions.records import ShareStateKey
from groupcoord.server.metrics import render

CFG = ShareConfig(lock_duration_ms=100, delivery_count_limit=3, max_record_locks=40)
MEMBERS = ("a", "b")

_op = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS),
              st.sampled_from([AckType.ACCEPT, AckType.RELEASE, AckType.REJECT,
                               AckType.RENEW])),
    st.tuples(st.just("time"), st.integers(1, 150)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_op, max_size=60))
def test_every_acquisition_ends_once_in_one_counter_or_is_still_acquired(ops: list[Any]) -> None:
    counters = ShareCounters()
    sp = SharePartition(CFG, 0, counters=counters)
    now = 0
    end = 0  # the log's end offset
    archived_seen = 0
    for op in ops:
        if op[0] == "acquire":
            end += op[2]
            sp.acquire(op[1], [(0, end - 1)], 10, now)
        elif op[0] == "ack":
            held = [o for o, r in sp.records.items()
                    if r.state is RecordState.ACQUIRED and r.member == op[1]]
            if held:
                o = held[0]
                assert sp.acknowledge(op[1], [Acknowledgement(o, o, (int(op[2]),))], now) == 0
        elif op[0] == "time":
            now += op[1]
            sp.expire(now)
        else:
            sp.release_member(op[1])
        ended = (counters.accepted + counters.released + counters.rejected
                 + counters.lock_expired + counters.member_released)
        assert counters.acquired == ended + sp.acquired()
        assert counters.redelivered <= counters.acquired
        # archived: the rejected ones and those that reached the limit, never more than
        # the records ever delivered
        assert counters.rejected <= counters.archived <= counters.acquired
        assert counters.archived >= archived_seen
        archived_seen = counters.archived
        assert all(r.delivery_count <= CFG.delivery_count_limit for r in sp.records.values())


class _Topic:
    name = "orders"


class _Registry:
    def __init__(self, tid: UUID) -> None:
        self.by_id = {tid: _Topic()}


class _Manager:
    def __init__(self, partitions: dict[ShareStateKey, SharePartition],
                 counters: ShareCounters) -> None:
        self.partitions = partitions
        self.counters = counters


class _Session:
    def __init__(self, n: int) -> None:
        self.partitions = dict.fromkeys(range(n))


class _Sessions:
    def __init__(self, *sizes: int) -> None:
        self.sessions = {(f"g{i}", "m", 0): _Session(n) for i, n in enumerate(sizes)}


class _Server:
    runtime = None
    connections: list[Any] = []
    idle_monitor = None

    def __init__(self, manager: _Manager, sessions: _Sessions, registry: _Registry) -> None:
        self.share_partitions = manager
        self.share_sessions = sessions
        self.registry = registry


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def test_the_exposition_has_the_counters_in_flight_windows_and_sessions() -> None:
    counters = ShareCounters()
    tid = UUID(int=7)
    sp = SharePartition(CFG, 0, counters=counters)
    sp.acquire("a", [(0, 9)], 10, now_ms=0)
    sp.acknowledge("a", [Acknowledgement(0, 5, (int(AckType.ACCEPT),)),
                         Acknowledgement(6, 6, (int(AckType.RELEASE),)),
                         Acknowledgement(7, 7, (int(AckType.REJECT),))], now_ms=1)
    sp.expire(500)  # 8 and 9: their locks expire
    sp.acquire("b", [(0, 9)], 1, now_ms=501, record_limit=True)  # 6 again (delivery 2)
    key = ShareStateKey("g", tid, 3)
    text = render(_Server(_Manager({key: sp}, counters), _Sessions(2, 1), _Registry(tid)))
    m = _samples(text)
    ack = "kafka_server_sharegroupmetrics_recordacknowledgementspersec_count"
    assert m[ack + '{acktype="Accept"}'] == 6
    assert m[ack + '{acktype="Release"}'] == 1
    assert m[ack + '{acktype="Reject"}'] == 1
    assert m[ack + '{acktype="Renew"}'] == 0
    assert m["kafka_server_sharepartitionmetrics_acquisitionlocktimeoutpersec_count"] == 2
    # the window: 6..9 (0..5 accepted and passed; 7 archived but not passed yet)
    assert m['kafka_server_sharepartitionmetrics_inflightmessagecount'
             '{group="g",topic="orders",partition="3"}'] == 4
    assert m["kafka_server_sharesessioncache_sharesessionscount"] == 2
    assert m["kafka_server_sharesessioncache_sharepartitionscount"] == 3
    assert m["groupcoord_share_records_acquired_count"] == 11
    assert m["groupcoord_share_records_redelivered_count"] == 1
    assert m["groupcoord_share_records_archived_count"] == 1
    assert m["groupcoord_share_records_acquired"] == 1
    assert "# TYPE groupcoord_share_records_acquired_count counter" in text


def test_a_broker_without_share_partitions_reports_zeros() -> None:
    class Bare:
        runtime = None
        connections: list[Any] = []
        idle_monitor = None

    m = _samples(render(Bare()))
    assert m["groupcoord_share_records_acquired_count"] == 0
    assert m["kafka_server_sharesessioncache_sharesessionscount"] == 0
    assert not any(k.startswith("kafka_server_sharepartitionmetrics_inflightmessagecount")
                   for k in m)


def test_the_metrics_endpoint_counts_what_share_consumers_did(tmp_path: Any) -> None:
    """A ShareConsumer with explicit acknowledgement takes 10 records, rejects one, releases one
    and accepts the rest; the endpoint counts them by type, the archived record, the open share
    session and the partitions' in-flight windows, and after close no session."""
    import pytest

    ck = pytest.importorskip("confluent_kafka")
    from groupcoord.protocol.client import KafkaClient
    from groupcoord.protocol.versions import ApiKey

    from .conftest import start_server
    from .test_server_storage import _scrape

    server = start_server(tmp_path / "data", "--metrics-port", "0")
    assert server.proc.stdout is not None
    url = server.proc.stdout.readline().split()[-1]
    topic = f"sm-{uuid.uuid4().hex[:8]}"
    group = f"sg-{uuid.uuid4().hex[:8]}"
    consumer = None
    try:
        with KafkaClient(server.bootstrap) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                {"name": topic, "num_partitions": 1, "replication_factor": -1}],
                timeout=10_000)
            assert int(r.topics[0].error_code) == 0, r
        consumer = ck.ShareConsumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                                     "share.acknowledgement.mode": "explicit"})
        consumer.subscribe([topic])
        # the share partition starts at the end of the log (share.auto.offset.reset=latest)
        # on the first ShareFetch: produce once the consumer has fetched
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert not list(consumer.poll(0.2))
            if _scrape(url).get("kafka_server_sharesessioncache_sharesessionscount", 0) >= 1:
                break
        producer = ck.Producer({"bootstrap.servers": server.bootstrap})
        for i in range(10):
            producer.produce(topic, f"r{i}".encode(), partition=0)
        producer.flush(10)
        got: list[Any] = []
        while len(got) < 11 and time.monotonic() < deadline + 30:  # offset 1 twice
            batch = [m for m in consumer.poll(0.5) if m.error() is None]
            for m in batch:
                kind = (ck.AcknowledgeType.REJECT if m.offset() == 0 else
                        ck.AcknowledgeType.RELEASE if m.offset() == 1 and m.delivery_count() == 1
                        else ck.AcknowledgeType.ACCEPT)
                consumer.acknowledge(m, kind)
            got += batch
        consumer.commit_sync()
        m = _scrape(url)
        ack = "kafka_server_sharegroupmetrics_recordacknowledgementspersec_count"
        assert m[ack + '{acktype="Reject"}'] == 1
        assert m[ack + '{acktype="Release"}'] == 1
        # offset 1 came back (delivery 2) and was accepted with the other eight
        assert m[ack + '{acktype="Accept"}'] == 9
        assert m["groupcoord_share_records_archived_count"] == 1
        assert m["groupcoord_share_records_acquired_count"] == 11
        assert m["groupcoord_share_records_redelivered_count"] == 1
        assert m["kafka_server_sharesessioncache_sharesessionscount"] == 1
        assert m["kafka_server_sharesessioncache_sharepartitionscount"] == 1
        window = [v for k, v in m.items()
                  if k.startswith("kafka_server_sharepartitionmetrics_inflightmessagecount")
                  and f'group="{group}"' in k and f'topic="{topic}"' in k]
        assert window == [0]  # every record accepted or archived: the window moved past them
        consumer.close()
        consumer = None
        assert _scrape(url)["kafka_server_sharesessioncache_sharesessionscount"] == 0
    finally:
        if consumer is not None:
            consumer.close()
        server.stop()
