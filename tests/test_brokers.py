"""Several brokers in one process (``server/brokers.py``, ``groupcoord serve --brokers N``).

- Metadata lists every broker (with racks); partition leaders are spread over them; a group's
  coordinator is the broker leading its ``__consumer_offsets`` partition (Kafka's partitionFor
  over 50 partitions, Java's String.hashCode); requests to another broker are answered
  NOT_COORDINATOR (group requests) or NOT_LEADER_OR_FOLLOWER (Produce, Fetch, ListOffsets).
- The control plane moves a coordinator (the old broker refuses, the new one loaded the group
  from the log and serves it with its members), takes a broker down and brings it back.
- Real clients against 3 brokers (librdkafka with group.protocol=consumer and classic,
  kafka-python, aiokafka) lose nothing when their group's coordinator moves, when the broker
  holding it goes down and comes back, and under injected heartbeat and commit errors; our own
  KIP-848 member follows its coordinator.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import subprocess
import threading
import time
import uuid
from typing import Any

import pytest

from groupcoord.client.driver import AsyncConsumer
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.runtime import partition_for
from groupcoord.testing import Cluster, ControlError, async_embedded_cluster, embedded_cluster

from .conftest import GROUPCOORD
from .test_testing_plugin import (
    COMMIT_ERRORS,
    HEARTBEAT,
    aiokafka_app,
    confluent_app,
    kafka_python_app,
    produce,
)

TOPIC = "orders"
PARTITIONS = 6
N = 30
TIMEOUT_S = 60.0


def _ports(cluster: Cluster) -> list[str]:
    return cluster.bootstrap_servers.split(",")


def _committed(cluster: Cluster, group: str) -> dict[int, int]:
    """The group's committed offsets, read from its coordinator."""
    with _coordinator_client(cluster, group) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": TOPIC, "partition_indexes": list(range(PARTITIONS))}]}])
    return {int(p.partition_index): int(p.committed_offset)
            for t in r.groups[0].topics for p in t.partitions}


def _coordinator_client(cluster: Cluster, group: str) -> KafkaClient:
    return KafkaClient(_ports(cluster)[cluster.control.coordinator_of(group)])


# ----------------------------------------------------------------------------- routing


def test_metadata_leaders_and_coordinators_are_spread_over_the_brokers() -> None:
    with embedded_cluster(topics={TOPIC: PARTITIONS}, brokers=3, racks=["a", "b", "c"]) as cl:
        addrs = _ports(cl)
        assert len(addrs) == 3
        with KafkaClient(addrs[1]) as c:
            md = c.call(ApiKey.METADATA, 12, topics=None)
            assert [(int(b.node_id), b.rack) for b in md.brokers] == [(0, "a"), (1, "b"), (2, "c")]
            assert {f"{b.host}:{b.port}" for b in md.brokers} == set(addrs)
            [topic] = md.topics
            leaders = {int(p.partition_index): int(p.leader_id) for p in topic.partitions}
            assert set(leaders.values()) == {0, 1, 2}  # 6 partitions over 3 brokers
            for group in ("g-a", "g-b", "billing", "payments-7"):
                fc = c.call(ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[group])
                want = partition_for(group, 50) % 3  # __consumer_offsets partition's leader
                assert int(fc.coordinators[0].node_id) == want == cl.control.coordinator_of(group)
                assert int(fc.coordinators[0].port) == int(addrs[want].rpartition(":")[2])
        # A group request to a broker that is not the coordinator; a Fetch to a non-leader.
        group = "billing"
        home = cl.control.coordinator_of(group)
        other = (home + 1) % 3
        with KafkaClient(addrs[other]) as c:
            r = c.call(ApiKey.HEARTBEAT, 4, group_id=group, generation_id=1, member_id="m")
            assert int(r.error_code) == ErrorCode.not_coordinator
            r = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="",
                       member_epoch=0, rebalance_timeout=60_000, subscribed_topic_names=[TOPIC],
                       topic_partitions=[])
            assert int(r.error_code) == ErrorCode.not_coordinator
            p = next(p for p, b in leaders.items() if b != other)
            r = c.call(ApiKey.LIST_OFFSETS, 5, replica_id=-1, isolation_level=0, topics=[
                {"name": TOPIC, "partitions": [{"partition_index": p, "timestamp": -1}]}])
            assert int(r.topics[0].partitions[0].error_code) == ErrorCode.not_leader_or_follower
        with KafkaClient(addrs[leaders[0]]) as c:
            r = c.call(ApiKey.LIST_OFFSETS, 5, replica_id=-1, isolation_level=0, topics=[
                {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}])
            assert int(r.topics[0].partitions[0].error_code) == 0
            # OffsetForLeaderEpoch: the epoch asked (at most the current one) ends at the high
            # watermark (one replica, never truncated); an unknown topic is named.
            r = c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=[
                {"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                 "leader_epoch": 0}]},
                {"topic": "nope", "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                  "leader_epoch": 0}]}])
            ok, bad = r.topics
            assert [(int(p.error_code), int(p.leader_epoch), int(p.end_offset))
                    for p in ok.partitions] == [(0, 0, 0)]
            assert int(bad.partitions[0].error_code) == ErrorCode.unknown_topic_or_partition
        with KafkaClient(addrs[(leaders[0] + 1) % 3]) as c:
            r = c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=[
                {"topic": TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                 "leader_epoch": 0}]}])
            assert int(r.topics[0].partitions[0].error_code) == ErrorCode.not_leader_or_follower


def test_a_moved_coordinator_refuses_and_the_new_one_serves_the_group_from_the_log() -> None:
    async def scenario() -> None:
        async with async_embedded_cluster(topics={TOPIC: PARTITIONS}, brokers=3) as cl:
            group = f"g-{uuid.uuid4().hex[:8]}"
            async with AsyncConsumer(cl.bootstrap_servers, group, client_id="ours") as c:
                c.subscribe([TOPIC])
                owned = await c.wait_for_assignment(TIMEOUT_S)
                assert len(owned) == PARTITIONS
                old = cl.control.coordinator_of(group)
                old_conn = c._conn
                new = cl.control.move_coordinator(group)
                assert new != old and cl.control.coordinator_of(group) == new
                # Our member is refused by the old broker, finds the new one, keeps its work.
                async with asyncio.timeout(TIMEOUT_S):
                    while c._conn is old_conn or c._conn is None or not c.reconciled():
                        await asyncio.sleep(0.02)
                assert c.assignment() == owned
                assert c._conn.peer == _ports(cl)[new]

                def describe(addr: str) -> Any:
                    with KafkaClient(addr) as k:
                        return k.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=[group])
                # The group (its member and assignment) was loaded by the new coordinator.
                d = await asyncio.to_thread(describe, _ports(cl)[new])
                [g] = d.groups
                assert [m.member_id for m in g.members] == [c.member_id]
                with pytest.raises(ControlError, match="no broker 7"):
                    cl.control.move_coordinator(group, to=7)

    asyncio.run(scenario())


def test_broker_control_bad_input() -> None:
    with embedded_cluster(brokers=2) as cl:
        ctl = cl.control
        ctl.broker_down(1)
        with pytest.raises(ControlError, match="already down"):
            ctl.broker_down(1)
        with pytest.raises(ControlError, match="last live broker"):
            ctl.broker_down(0)
        with pytest.raises(ControlError, match="is down"):
            ctl.move_coordinator("g", to=1)
        ctl.broker_up(1)
        with pytest.raises(ControlError, match="not down"):
            ctl.broker_up(1)
        # Broker 0 (the first listener) down and up: it serves again, and the cluster stops.
        ctl.broker_down(0)
        ctl.broker_up(0)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                with KafkaClient(_ports(cl)[0]) as c:
                    assert len(c.call(ApiKey.METADATA, 12, topics=None).brokers) == 2
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    with embedded_cluster() as cl, pytest.raises(ControlError, match="one broker"):
        cl.control.broker_down(0)


def test_a_broker_taken_down_keeps_its_port_and_closes_connections_as_they_come() -> None:
    """A down broker's port stays bound (nothing else can take it, so the broker comes back on
    it) and a connection to it is accepted and closed at once; once up, it serves again."""
    with embedded_cluster(brokers=2) as cl:
        host, _, port = _ports(cl)[1].rpartition(":")
        cl.control.broker_down(1)
        with socket.socket() as s, pytest.raises(OSError) as bound:
            s.bind((host, int(port)))
        assert bound.value.errno == errno.EADDRINUSE
        with socket.create_connection((host, int(port)), timeout=10) as c:
            c.settimeout(10)
            try:
                data = c.recv(1)
            except ConnectionResetError:  # closed by an abort
                data = b""
            assert data == b""  # closed by the broker, nothing sent
        cl.control.broker_up(1)
        with KafkaClient(_ports(cl)[1]) as kc:
            assert len(kc.call(ApiKey.METADATA, 12, topics=None).brokers) == 2


def test_serve_with_brokers_and_racks(tmp_path: Any) -> None:
    p = subprocess.run([*GROUPCOORD, "serve", "--port", "0", "--brokers", "3", "--racks", "a,b",
                        "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "one per broker" in p.stderr and "Traceback" not in p.stderr
    proc = subprocess.Popen([*GROUPCOORD, "serve", "--port", "0", "--brokers", "3",
                             "--storage", "memory", "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        second = proc.stdout.readline()
        assert first.startswith("listening on 127.0.0.1:")
        brokers = second.removeprefix("brokers: ").strip().split(",")
        assert len(brokers) == 3 and brokers[0] == first.split()[-1]
        r = subprocess.run([*GROUPCOORD, "control", "brokers", "--group", "g", "--json",
                            "--bootstrap-server", brokers[2]], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and '"coordinator": ' in r.stdout, r.stderr
    finally:
        proc.terminate()
        proc.wait(30)


# ----------------------------------------------------------------------------- real clients


CLIENTS = ["confluent-consumer", "confluent-classic", "kafka-python", "aiokafka"]


def _app(client: str, bootstrap: str, group: str, want: int) -> list[str]:
    if client == "confluent-consumer":
        return confluent_app(bootstrap, group, TOPIC, want, "consumer", distinct=True)
    if client == "confluent-classic":
        return confluent_app(bootstrap, group, TOPIC, want, "classic", distinct=True)
    if client == "kafka-python":
        return kafka_python_app(bootstrap, group, TOPIC, want, distinct=True)
    return asyncio.run(aiokafka_app(bootstrap, group, TOPIC, want, distinct=True))


@pytest.mark.parametrize("fault", ["move", "down-up"])
@pytest.mark.parametrize("client", CLIENTS)
def test_real_clients_lose_nothing_when_the_coordinator_moves_or_its_broker_fails(
        client: str, fault: str) -> None:
    with embedded_cluster(topics={TOPIC: PARTITIONS}, brokers=3) as cl:
        b = cl.bootstrap_servers
        group = f"g-{client}-{uuid.uuid4().hex[:6]}"
        produce(b, TOPIC, N)
        ctl = cl.control
        ctl.inject_error(HEARTBEAT[client], "NOT_COORDINATOR", 2, group=group)
        for error, count in COMMIT_ERRORS[client]:
            ctl.inject_error("OffsetCommit", error, count, group=group)
        failed: list[BaseException] = []

        def chaos() -> None:
            try:
                deadline = time.monotonic() + TIMEOUT_S
                while sum(_committed(cl, group).values()) < N:
                    if time.monotonic() > deadline:
                        raise TimeoutError("the application never committed the first records")
                    time.sleep(0.1)
                if fault == "move":
                    ctl.move_coordinator(group)
                else:
                    victim = ctl.coordinator_of(group)
                    ctl.broker_down(victim)
                    produce(b, TOPIC, N // 2)
                    time.sleep(1.0)
                    ctl.broker_up(victim)
                    produce(b, TOPIC, N - N // 2)
                    return
                produce(b, TOPIC, N)
            except BaseException as e:
                failed.append(e)

        t = threading.Thread(target=chaos, daemon=True)
        t.start()
        seen = _app(client, b, group, 2 * N)
        t.join(TIMEOUT_S)
        assert not failed, failed
        assert len(set(seen)) == 2 * N  # every record of both rounds: nothing lost
        assert sum(_committed(cl, group).values()) == 2 * N
        assert [r for r in ctl.faults()["errors"] if r["api"] == "OFFSET_COMMIT"] == []


# ----------------------------------------------------------------------------- our own members


@pytest.mark.parametrize("kind", ["consumer", "connect", "classic"])
def test_our_members_keep_their_work_when_the_coordinator_moves(kind: str) -> None:
    from .test_member_faults import _member, _runs_everything

    async def scenario() -> None:
        async with async_embedded_cluster(topics={TOPIC: PARTITIONS}, brokers=3) as cl:
            name = f"{kind}-{uuid.uuid4().hex[:8]}"
            if kind == "consumer":
                cl.create_topic(name, 4)
            else:  # the connectors, set on the (config) group's coordinator
                group = name if kind == "connect" else f"{name}-configs"

                def configure() -> Any:
                    with _coordinator_client(cl, group) as k:
                        return k.connect_group_config(
                            group, [{"op": 0, "connector": "c", "task_count": 2}])
                assert int((await asyncio.to_thread(configure)).error_code) == 0
            m = await _member(cl.bootstrap_servers, kind, name)
            await _runs_everything(m)
            stopped = m.work.stopped
            old = cl.control.coordinator_of(name)
            new = cl.control.move_coordinator(name)
            assert new != old
            async with asyncio.timeout(TIMEOUT_S):  # now talking to the new coordinator
                while m.driver._conn is None or m.driver._conn.peer != _ports(cl)[new]:
                    await asyncio.sleep(0.02)
            await _runs_everything(m)
            assert m.driver.error is None
            await m.driver.close()
            assert m.work.stopped >= stopped

    asyncio.run(scenario())
