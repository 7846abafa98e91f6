"""Classic groups over the wire against a real ``groupcoord serve``.

Real clients from PyPI: kafka-python 3.0.12 (range, cooperative-sticky, static membership, offset
commits), aiokafka 0.14.0 (a group of two consumes and commits), confluent-kafka with
``group.protocol=classic`` (range and cooperative-sticky). With our own protocol client: KIP-814
(a static leader bounce with JoinGroup v9 gets SkipAssignment and the members' metadata; v8 does
not), DescribeGroups / ListGroups / ``groupcoord groups describe`` for classic groups, the clean
refusal of a classic member into a consumer-protocol group (online migration is a later task),
and deferred JoinGroup / SyncGroup responses that never hang (rebalance timeout, a client
disconnecting mid-join).

One server for the module, with a short initial rebalance delay and a low minimum session
timeout so that groups form in well under a second. Consumers of kafka-python run one per
thread (each only touched by its own thread); every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, encode_request, request_class
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.cli import _classic_assignment

from .conftest import GROUPCOORD, ServerProcess, start_server

TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = start_server(tmp_path_factory.mktemp("gc-classic") / "data",
                       "--config", "group.initial.rebalance.delay.ms=300",
                       "--config", "group.min.session.timeout.ms=1000")
    try:
        yield srv
    finally:
        srv.stop()


# ------------------------------------------------------------------------------ helpers


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(server: ServerProcess, name: str, partitions: int) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r


def committed(server: ServerProcess, group: str) -> dict[int, int]:
    """The group's committed offsets per partition (an admin OffsetFetch)."""
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, wanted_min=8, groups=[
            {"group_id": group, "topics": None}], require_stable=False)
    return {int(p.partition_index): int(p.committed_offset)
            for t in r.groups[0].topics for p in t.partitions if int(p.committed_offset) >= 0}


def _end_offsets(server: ServerProcess, topic: str, partitions: int) -> dict[int, int]:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.LIST_OFFSETS, 7, wanted_min=1, replica_id=-1, isolation_level=0,
                   topics=[{"name": topic, "partitions": [
                       {"partition_index": p, "timestamp": -1} for p in range(partitions)]}])
    return {int(p.partition_index): int(p.offset) for t in r.topics for p in t.partitions}


def wait_until(cond: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def req(key: int, version: int, **kw: Any) -> Any:
    cls = request_class(key, version)
    assert cls is not None
    return build(cls, **kw)


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def join_request(group: str, version: int, member_id: str = "", instance: str | None = None,
                 rebalance_ms: int = 5_000, session_ms: int = 10_000, topic: str = "t") -> Any:
    return req(ApiKey.JOIN_GROUP, version, group_id=group, session_timeout=session_ms,
               rebalance_timeout=rebalance_ms, member_id=member_id, group_instance_id=instance,
               protocol_type="consumer",
               protocols=[{"name": "range", "metadata": subscription(topic)}])


def sync_request(group: str, generation: int, member_id: str, instance: str | None = None,
                 assignments: dict[str, bytes] | None = None, version: int = 5) -> Any:
    return req(ApiKey.SYNC_GROUP, version, group_id=group, generation_id=generation,
               member_id=member_id, group_instance_id=instance, protocol_type="consumer",
               protocol_name="range", assignments=[
                   {"member_id": m, "assignment": a} for m, a in (assignments or {}).items()])


def check_share(assigned: list[frozenset[int]], partitions: int) -> bool:
    """Disjoint, non-empty shares covering ``range(partitions)``."""
    flat = [p for a in assigned for p in a]
    return all(assigned) and len(flat) == len(set(flat)) == partitions \
        and set(flat) == set(range(partitions))


# ------------------------------------------------------------------------------ kafka-python

kafka = pytest.importorskip("kafka")


class KPConsumer(threading.Thread):
    """A kafka-python consumer polled by its own thread; the test reads its snapshots."""

    def __init__(self, server: ServerProcess, group: str, topic: str, name: str,
                 assignor: Any, instance_id: str | None = None, commit: bool = False) -> None:
        super().__init__(daemon=True, name=name)
        self.kw = {"bootstrap_servers": server.bootstrap, "group_id": group, "client_id": name,
                   "partition_assignment_strategy": [assignor],
                   "group_instance_id": instance_id, "auto_offset_reset": "earliest",
                   "enable_auto_commit": False, "session_timeout_ms": 6000,
                   "heartbeat_interval_ms": 300, "request_timeout_ms": 20_000,
                   "retry_backoff_ms": 50, "reconnect_backoff_ms": 50}
        self.topic = topic
        self.commit = commit
        self.assigned: frozenset[int] = frozenset()
        self.generation = -1
        self.member_id = ""
        self.assign_events = 0
        self.consumed = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        from kafka import ConsumerRebalanceListener

        outer = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                outer.assign_events += 1

        try:
            c = kafka.KafkaConsumer(**self.kw)
            c.subscribe([self.topic], listener=Listener())
            try:
                while not self._halt.is_set():
                    records = c.poll(timeout_ms=100)
                    n = sum(len(v) for v in records.values())
                    if n and self.commit:
                        with contextlib.suppress(kafka.errors.KafkaError):
                            c.commit()
                    self.consumed += n
                    self.assigned = frozenset(tp.partition for tp in c.assignment())
                    gen = c._coordinator.generation_if_stable()
                    if gen is not None:
                        self.generation, self.member_id = gen.generation_id, gen.member_id
            finally:
                c.close()
        except BaseException as e:  # reported by stop()
            self.error = e

    def stop(self) -> None:
        self._halt.set()
        self.join(TIMEOUT_S)
        assert not self.is_alive(), f"{self.name} did not stop"
        assert self.error is None, self.error


@contextlib.contextmanager
def kp_group(server: ServerProcess, group: str, topic: str, assignor: Any, n: int,
             static: bool = False, commit: bool = False) -> Iterator[list[KPConsumer]]:
    cs = [KPConsumer(server, group, topic, f"kp{i}", assignor,
                     instance_id=f"inst-{i}" if static else None, commit=commit)
          for i in range(n)]
    try:
        yield cs
    finally:
        for c in cs:
            if c.is_alive():
                c.stop()


def _share_then_takeover(server: ServerProcess, assignor: Any) -> None:
    topic, group = _name("kp-topic"), _name("kp-group")
    create_topic(server, topic, 12)
    with kp_group(server, group, topic, assignor, 3) as cs:
        wait_until(lambda: check_share([c.assigned for c in cs], 12), "3 disjoint shares")
        cs[1].stop()  # a dynamic member leaves (LeaveGroup): the others take over
        wait_until(lambda: check_share([cs[0].assigned, cs[2].assigned], 12),
                   "2 shares covering all 12 after one left")


def test_kafka_python_range_share_takeover(server: ServerProcess) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    _share_then_takeover(server, RangePartitionAssignor)


def test_kafka_python_cooperative_sticky_share_takeover(server: ServerProcess) -> None:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    _share_then_takeover(server, CooperativeStickyAssignor)


def test_kafka_python_commits_and_classic_group_is_described(server: ServerProcess) -> None:
    """Messages consumed and committed by a classic group (OffsetCommit with generation and
    member id); DescribeGroups, ListGroups and ``groupcoord groups describe`` show it."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    topic, group = _name("kp-commit"), _name("kp-desc")
    create_topic(server, topic, 6)
    # kafka-python 3 makes producers idempotent by default (InitProducerId, not served here)
    producer = kafka.KafkaProducer(bootstrap_servers=server.bootstrap, linger_ms=5,
                                   enable_idempotence=False)
    for i in range(60):
        producer.send(topic, value=b"m%d" % i, partition=i % 6)
    producer.flush(10)
    producer.close()
    assert sum(_end_offsets(server, topic, 6).values()) == 60
    with kp_group(server, group, topic, RangePartitionAssignor, 2, commit=True) as cs:
        wait_until(lambda: check_share([c.assigned for c in cs], 6), "2 disjoint shares")
        wait_until(lambda: sum(committed(server, group).values()) == 60, "all 60 committed")
        assert sum(c.consumed for c in cs) >= 60

        with KafkaClient(server.bootstrap) as c:
            d = c.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group],
                       include_authorized_operations=False).groups[0]
            listed = c.call(ApiKey.LIST_GROUPS, 5, types_filter=["classic"]).groups
        assert d.error_code == 0 and d.group_state == "Stable"
        assert d.protocol_type == "consumer" and d.protocol_data == "range"
        assert sorted(m.member_id for m in d.members) == sorted(c.member_id for c in cs)
        owned = [frozenset(_classic_assignment(bytes(m.member_assignment)).get(topic, []))
                 for m in d.members]
        assert check_share(owned, 6)
        [row] = [g for g in listed if g.group_id == group]
        assert (row.group_type, row.protocol_type, row.group_state) == ("classic", "consumer",
                                                                       "Stable")

        out = subprocess.run([*GROUPCOORD, "groups", "describe", group, "--json",
                              "--bootstrap-server", server.bootstrap],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        [described] = json.loads(out.stdout)
        assert described["type"] == "classic" and described["state"] == "Stable"
        assert described["protocol_type"] == "consumer" and described["assignor"] == "range"
        assert len(described["members"]) == 2
        assert sorted((p["partition"], p["current_offset"], p["lag"])
                      for p in described["partitions"]) == [(p, 10, 0) for p in range(6)]
        assert all(p["member_id"] for p in described["partitions"])
        text = subprocess.run([*GROUPCOORD, "groups", "describe", group,
                               "--bootstrap-server", server.bootstrap],
                              capture_output=True, text=True, timeout=30).stdout
        assert f"Group {group}: classic, state Stable" in text


def test_kafka_python_static_member_restart_keeps_generation(server: ServerProcess) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    topic, group = _name("kp-static"), _name("kp-static")
    create_topic(server, topic, 12)
    with kp_group(server, group, topic, RangePartitionAssignor, 3, static=True) as cs:
        wait_until(lambda: check_share([c.assigned for c in cs], 12)
                   and len({c.generation for c in cs}) == 1, "3 static members, one generation")
        time.sleep(1.0)  # settle: no rebalance is still on its way
        gen = cs[0].generation
        before = [c.assigned for c in cs]
        events = [c.assign_events for c in cs]
        old_member = cs[1].member_id
        cs[1].stop()  # a static member closes without LeaveGroup ...
        cs[1] = KPConsumer(server, group, topic, "kp1-restarted", RangePartitionAssignor,
                           instance_id="inst-1")  # ... and comes back before its session ends
        wait_until(lambda: cs[1].assigned == before[1] and cs[1].generation == gen,
                   "the restarted static member gets its partitions back")
        assert cs[1].member_id != old_member
        time.sleep(1.0)  # the others would notice a rebalance within a few heartbeats
        for i in (0, 2):
            assert cs[i].generation == gen and cs[i].assigned == before[i]
            assert cs[i].assign_events == events[i], "the others were not rebalanced"


# ------------------------------------------------------------------------------ aiokafka


def test_aiokafka_group_of_two_consumes_and_commits(server: ServerProcess) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    topic, group = _name("aio-topic"), _name("aio-group")
    create_topic(server, topic, 4)
    total = 40

    async def main() -> None:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=server.bootstrap)
        await producer.start()
        try:
            for i in range(total):
                await producer.send(topic, b"v%d" % i, partition=i % 4)
            await producer.flush()
        finally:
            await producer.stop()
        consumers = [aiokafka.AIOKafkaConsumer(
            topic, bootstrap_servers=server.bootstrap, group_id=group, client_id=f"aio{i}",
            auto_offset_reset="earliest", enable_auto_commit=False, heartbeat_interval_ms=300,
            session_timeout_ms=6000, retry_backoff_ms=50) for i in range(2)]
        for c in consumers:
            await c.start()
        seen: set[bytes] = set()
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                shares = [frozenset(tp.partition for tp in c.assignment()) for c in consumers]
                if len(seen) == total and check_share(shares, 4):
                    break
                assert time.monotonic() < deadline, (len(seen), shares)
                for c in consumers:
                    batches = await c.getmany(timeout_ms=100)
                    for msgs in batches.values():
                        seen.update(m.value for m in msgs)
                    if batches:
                        with contextlib.suppress(aiokafka.errors.KafkaError):
                            await c.commit()
            for c in consumers:
                await c.commit()
        finally:
            for c in consumers:
                await c.stop()

    asyncio.run(asyncio.wait_for(main(), TIMEOUT_S + 10))
    assert committed(server, group) == {p: total // 4 for p in range(4)}


# ------------------------------------------------------------------------------ confluent-kafka


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_classic_two_consumers_share(server: ServerProcess, strategy: str) -> None:
    ck = pytest.importorskip("confluent_kafka")
    topic, group = _name("ck-topic"), _name(f"ck-{strategy}")
    create_topic(server, topic, 6)
    conf = {"bootstrap.servers": server.bootstrap, "group.id": group,
            "group.protocol": "classic", "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50, "fetch.wait.max.ms": 100}
    cs = [ck.Consumer({**conf, "client.id": f"ck{i}"}) for i in range(2)]
    try:
        for c in cs:
            c.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            for c in cs:
                c.poll(0.05)
            shares = [frozenset(tp.partition for tp in c.assignment()) for c in cs]
            if check_share(shares, 6):
                break
            assert time.monotonic() < deadline, shares
        cs[1].close()  # LeaveGroup: the other takes all
        deadline = time.monotonic() + TIMEOUT_S
        while frozenset(tp.partition for tp in cs[0].assignment()) != frozenset(range(6)):
            cs[0].poll(0.05)
            assert time.monotonic() < deadline
    finally:
        for c in cs:
            with contextlib.suppress(RuntimeError):
                c.close()


# ------------------------------------------------------------------------------ KIP-814


def _static_pair(server: ServerProcess, group: str) -> tuple[Any, str, str]:
    """Two static members (instances ``ia`` and ``ib``) form a Stable generation; the leader's
    assignment is ``L``, the follower's ``F``. Returns (leader's JoinGroup response, leader's
    instance id, follower's member id)."""
    with KafkaClient(server.bootstrap, client_id="a") as a, \
            KafkaClient(server.bootstrap, client_id="b") as b:
        ha = a.send_request(join_request(group, 9, instance="ia"))
        hb = b.send_request(join_request(group, 9, instance="ib"))
        ra, rb = a.read_response(ha), b.read_response(hb)
        assert ra.error_code == rb.error_code == 0 and ra.generation_id == rb.generation_id
        (leader, lc, li), (follower, fc, fi) = sorted(
            [(ra, a, "ia"), (rb, b, "ib")], key=lambda x: x[0].leader != x[0].member_id)
        assert len(leader.members) == 2 and follower.members == ()
        waiting = fc.send_request(sync_request(group, follower.generation_id,
                                               follower.member_id, fi))
        s = lc.send(sync_request(group, leader.generation_id, leader.member_id, li,
                                 {leader.member_id: b"L", follower.member_id: b"F"}))
        assert s.error_code == 0 and s.assignment == b"L"
        assert fc.read_response(waiting).assignment == b"F"
    return leader, li, follower.member_id


def test_kip814_static_leader_bounce_v9_skips_assignment(server: ServerProcess) -> None:
    group = _name("kip814")
    leader, instance, follower = _static_pair(server, group)
    with KafkaClient(server.bootstrap, client_id="a2") as c:
        r = c.read_response(c.send_request(join_request(group, 9, instance=instance)))
        assert r.error_code == 0
        assert r.skip_assignment is True
        assert r.member_id != leader.member_id and r.leader == r.member_id
        assert r.generation_id == leader.generation_id  # no rebalance
        assert {m.member_id: (m.group_instance_id, bytes(m.metadata)) for m in r.members} == {
            r.member_id: (instance, subscription("t")),
            follower: ("ib" if instance == "ia" else "ia", subscription("t"))}
        # the leader's empty SyncGroup returns its stored assignment
        s = c.send(sync_request(group, r.generation_id, r.member_id, instance))
        assert s.error_code == 0 and s.assignment == b"L"
        # the old member id is fenced
        hb = c.send(req(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=r.generation_id,
                        member_id=leader.member_id, group_instance_id=instance))
        assert hb.error_code == ErrorCode.fenced_instance_id


def test_kip814_static_leader_bounce_v8_keeps_old_behaviour(server: ServerProcess) -> None:
    group = _name("kip814-v8")
    leader, instance, _ = _static_pair(server, group)
    with KafkaClient(server.bootstrap, client_id="a2") as c:
        r = c.read_response(c.send_request(join_request(group, 8, instance=instance)))
        assert r.error_code == 0
        assert not hasattr(r, "skip_assignment")  # not in v8's schema
        assert r.member_id != leader.member_id
        assert r.leader == leader.member_id  # the old leader id: it acts as a follower
        assert r.members == ()
        assert r.generation_id == leader.generation_id
        s = c.send(sync_request(group, r.generation_id, r.member_id, instance))
        assert s.error_code == 0 and s.assignment == b"L"


# ------------------------------------------------------------------------------ every version


@pytest.mark.parametrize("k", range(10))
def test_every_advertised_version_round_trips(server: ServerProcess, k: int) -> None:
    """JoinGroup vk, SyncGroup / Heartbeat / LeaveGroup / DescribeGroups at min(k, their max):
    a one-member group forms, heartbeats, is described, and leaves."""
    jv, sv, hv, lv, dv = k, min(k, 5), min(k, 4), min(k, 5), min(k, 5)
    group = _name(f"v{k}")
    instance = "static" if jv >= 5 else None
    with KafkaClient(server.bootstrap, client_id=f"v{k}") as c:
        r = c.read_response(c.send_request(join_request(group, jv, instance=instance)))
        if r.error_code == ErrorCode.member_id_required:  # v4+, dynamic members
            assert jv >= 4 and r.member_id
            r = c.read_response(c.send_request(join_request(group, jv, r.member_id)))
        assert r.error_code == 0 and r.generation_id == 1 and r.leader == r.member_id
        assert r.protocol_name == "range"
        mid = r.member_id
        s = c.send(sync_request(group, 1, mid, instance, {mid: b"A"}, version=sv))
        assert s.error_code == 0 and s.assignment == b"A"
        hb = c.send(req(ApiKey.HEARTBEAT, hv, group_id=group, generation_id=1, member_id=mid,
                        group_instance_id=instance))
        assert hb.error_code == 0
        d = c.send(req(ApiKey.DESCRIBE_GROUPS, dv, groups=[group],
                       include_authorized_operations=False)).groups[0]
        assert (d.group_state, d.protocol_type, d.protocol_data) == ("Stable", "consumer",
                                                                     "range")
        assert [(m.member_id, bytes(m.member_assignment)) for m in d.members] == [(mid, b"A")]
        if lv >= 3:
            leave = c.send(req(ApiKey.LEAVE_GROUP, lv, group_id=group, members=[
                {"member_id": mid, "group_instance_id": instance, "reason": "done"}]))
            assert leave.error_code == 0
            assert [(m.member_id, m.error_code) for m in leave.members] == [(mid, 0)]
        else:
            leave = c.send(req(ApiKey.LEAVE_GROUP, lv, group_id=group, member_id=mid))
            assert leave.error_code == 0
        d = c.send(req(ApiKey.DESCRIBE_GROUPS, dv, groups=[group],
                       include_authorized_operations=False)).groups[0]
        assert d.group_state == "Empty" and d.members == ()


# ------------------------------------------------------------------------------ mixed groups


def test_classic_member_joins_a_consumer_protocol_group(server: ServerProcess) -> None:
    """Online migration: a classic JoinGroup into a non-empty consumer group is
    translated (MEMBER_ID_REQUIRED, then an immediate answer at the member's epoch); its
    SyncGroup returns a ConsumerProtocolAssignment; both members keep working."""
    topic, group = _name("mixed"), _name("mixed")
    create_topic(server, topic, 2)
    with KafkaClient(server.bootstrap, client_id="new") as c:
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="",
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    topic_partitions=[])
        assert hb.error_code == 0
        j = c.read_response(c.send_request(join_request(group, 5, topic=topic)))
        assert j.error_code == ErrorCode.member_id_required and j.member_id
        j = c.read_response(c.send_request(join_request(group, 5, j.member_id, topic=topic)))
        assert j.error_code == 0 and j.generation_id == hb.member_epoch + 1
        s = c.send(sync_request(group, j.generation_id, j.member_id))
        assert s.error_code == 0 and bytes(s.assignment)[:2] == b"\x00\x00"  # v0, as subscribed
        again = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group,
                       member_id=hb.member_id, member_epoch=hb.member_epoch)
        assert again.error_code == 0
        c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id=hb.member_id,
               member_epoch=-1)


def test_consumer_protocol_member_refused_by_a_classic_group(server: ServerProcess) -> None:
    """The other direction: a KIP-848 heartbeat into a non-empty classic group is refused
    with GROUP_ID_NOT_FOUND (what Kafka answers when the upgrade is not allowed), the classic
    member is untouched."""
    topic, group = _name("mixed2"), _name("mixed2")
    create_topic(server, topic, 2)
    with KafkaClient(server.bootstrap, client_id="old") as c:
        r = c.read_response(c.send_request(join_request(group, 3, topic=topic)))
        assert c.send(sync_request(group, 1, r.member_id, None,
                                   {r.member_id: b"x"})).error_code == 0
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group,
                    member_id=uuid.uuid4().hex, member_epoch=0, rebalance_timeout=30_000,
                    subscribed_topic_names=[topic], topic_partitions=[])
        assert hb.error_code == ErrorCode.group_id_not_found
        classic_hb = c.send(req(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1,
                                member_id=r.member_id))
        assert classic_hb.error_code == 0


def test_classic_offset_commit_checks_generation_and_member(server: ServerProcess) -> None:
    """OffsetCommit from a classic member carries generation id, member id and instance id."""
    topic, group = _name("commit"), _name("commit")
    create_topic(server, topic, 1)

    def commit(c: KafkaClient, version: int, generation: int, member: str,
               instance: str | None = None) -> int:
        r = c.call(ApiKey.OFFSET_COMMIT, version, wanted_min=version, group_id=group,
                   generation_id_or_member_epoch=generation, member_id=member,
                   group_instance_id=instance, retention_time=-1, topics=[
                       {"name": topic, "partitions": [
                           {"partition_index": 0, "committed_offset": 7,
                            "committed_leader_epoch": -1, "committed_metadata": ""}]}])
        return int(r.topics[0].partitions[0].error_code)

    with KafkaClient(server.bootstrap, client_id="committer") as c:
        r = c.read_response(c.send_request(join_request(group, 5, instance="i", topic=topic)))
        mid = r.member_id
        assert c.send(sync_request(group, 1, mid, "i", {mid: b"x"})).error_code == 0
        assert commit(c, 9, 1, mid, "i") == 0
        assert commit(c, 2, 1, mid) == 0  # v2: no instance id
        assert commit(c, 9, 2, mid, "i") == ErrorCode.illegal_generation
        assert commit(c, 9, 1, "someone-else") == ErrorCode.unknown_member_id
        assert commit(c, 9, 1, "someone-else", "i") == ErrorCode.fenced_instance_id
        assert commit(c, 9, -1, "") == ErrorCode.unknown_member_id  # admin, group not empty
    assert committed(server, group) == {0: 7}


# ------------------------------------------------------------------------------ never hang


def test_join_answered_when_the_rebalance_times_out(server: ServerProcess) -> None:
    group = _name("timeout")
    with KafkaClient(server.bootstrap, client_id="a") as a, \
            KafkaClient(server.bootstrap, client_id="b") as b:
        ha = a.send_request(join_request(group, 3, rebalance_ms=1000))
        hb = b.send_request(join_request(group, 3, rebalance_ms=1000))
        ra, rb = a.read_response(ha), b.read_response(hb)
        assert ra.generation_id == rb.generation_id == 1
        (leader, lc), (follower, fc) = sorted(
            [(ra, a), (rb, b)], key=lambda x: x[0].leader != x[0].member_id)
        waiting = fc.send_request(sync_request(group, 1, follower.member_id))
        lc.send(sync_request(group, 1, leader.member_id, None,
                             {leader.member_id: b"L", follower.member_id: b"F"}))
        fc.read_response(waiting)
        # the leader rejoins, the follower never does: answered at the rebalance timeout
        t0 = time.monotonic()
        r = lc.read_response(lc.send_request(join_request(group, 3, leader.member_id,
                                                          rebalance_ms=1000)))
        assert 0.8 < time.monotonic() - t0 < 10
        assert r.error_code == 0 and r.generation_id == 2
        assert [m.member_id for m in r.members] == [leader.member_id]
        # the follower learns it was removed
        hb_ = fc.send(req(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1,
                          member_id=follower.member_id))
        assert hb_.error_code in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation)


def test_client_disconnecting_mid_join_does_not_break_the_group(server: ServerProcess) -> None:
    group = _name("vanish")
    # a member sends its JoinGroup and vanishes before the answer
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(encode_request(join_request(group, 3, rebalance_ms=1000), 1, "gone"))
        time.sleep(0.05)
    with KafkaClient(server.bootstrap, client_id="stays") as c:
        r = c.read_response(c.send_request(join_request(group, 3, rebalance_ms=1000)))
        assert r.error_code == 0
        member = r.member_id
        # the vanished member was part of that generation; it never syncs, so the group
        # rebalances and the survivor ends up alone in a later generation
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert time.monotonic() < deadline
            if r.error_code == 0 and [m.member_id for m in r.members] == [member]:
                break
            if r.error_code == 0:
                s_ = c.send(sync_request(group, r.generation_id, member, None,
                                         {m.member_id: b"x" for m in r.members}
                                         if r.leader == member else None))
                assert s_.error_code in (0, ErrorCode.rebalance_in_progress)
                hb = c.send(req(ApiKey.HEARTBEAT, 4, group_id=group,
                                generation_id=r.generation_id, member_id=member))
                if hb.error_code == 0:
                    time.sleep(0.2)
                    continue
            r = c.read_response(c.send_request(join_request(group, 3, member,
                                                            rebalance_ms=1000)))
        s_ = c.send(sync_request(group, r.generation_id, member, None, {member: b"mine"}))
        assert s_.error_code == 0 and s_.assignment == b"mine"
        d = c.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group],
                   include_authorized_operations=False).groups[0]
        assert d.group_state == "Stable" and [m.member_id for m in d.members] == [member]


def test_responses_stay_in_request_order_behind_a_deferred_join(server: ServerProcess) -> None:
    """A pipelined request behind a JoinGroup that waits (here for the initial rebalance
    delay) is answered after it, on the same connection (Kafka mutes a connection while one of
    its requests is in flight)."""
    group = _name("order")
    api_versions = req(ApiKey.API_VERSIONS, 3, client_software_name="t",
                       client_software_version="1")
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(encode_request(join_request(group, 3), 1, "order")
                  + encode_request(api_versions, 2, "order"))
        first = _frame(s)
        second = _frame(s)
    assert struct.unpack(">i", first[:4])[0] == 1  # the JoinGroup, answered first
    assert struct.unpack(">i", second[:4])[0] == 2


def _frame(s: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = s.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out
    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def test_server_log_is_clean(server: ServerProcess) -> None:
    """No handler failed during this module (the server answers; it never crashes a request)."""
    assert server.proc.poll() is None
    text = Path(server.stderr_path).read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
