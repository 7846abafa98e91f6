"""Client-side assignors over the wire (KIP-848 "Client-Side Assignor"): two AsyncConsumers with a local
assignor against a real ``groupcoord serve`` (ClientAssignors / ShouldComputeAssignment as tagged fields
on ConsumerGroupHeartbeat, ConsumerGroupPrepareAssignment 1000, ConsumerGroupInstallAssignment
1001), then a real confluent-kafka consumer joining the same group: it never sends the tagged
fields, the group falls back to its server-side assignor, and everyone still gets a disjoint
share of every partition.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from groupcoord.client.assignors import ClientSideRangeAssignor
from groupcoord.client.consumer import ClientMemberState
from groupcoord.client.driver import AsyncConsumer, TopicPartition

from .conftest import ServerProcess
from .test_client_driver import _create_topic

TIMEOUT_S = 30.0


async def _shares(consumers: list[AsyncConsumer], expected: set[TopicPartition]) -> None:
    async def check() -> None:
        while True:
            owned = [c.assignment() for c in consumers]
            if all(owned) and set().union(*owned) == expected \
                    and sum(map(len, owned)) == len(expected) \
                    and all(c.member.state is ClientMemberState.STABLE and c.member.owned == c.member.target
                            for c in consumers):
                return
            await asyncio.sleep(0.02)
    await asyncio.wait_for(check(), TIMEOUT_S)


def test_two_async_consumers_compute_their_assignment(gc_server: ServerProcess) -> None:
    a_topic, b_topic = f"lca-{uuid.uuid4().hex[:8]}", f"lcb-{uuid.uuid4().hex[:8]}"
    group = f"g-{a_topic}"
    _create_topic(gc_server, a_topic, 4)
    _create_topic(gc_server, b_topic, 4)
    every = {(t, p) for t in (a_topic, b_topic) for p in range(4)}

    async def scenario() -> None:
        cs = [AsyncConsumer(gc_server.bootstrap, group, local_assignors=[ClientSideRangeAssignor()],
                            rebalance_timeout_ms=10_000) for _ in range(2)]
        for c in cs:
            await c.start()
            c.subscribe([a_topic, b_topic])
        await _shares(cs, every)
        # range co-partitions: each member has the same partition numbers on both topics.
        for c in cs:
            mine = c.assignment()
            assert {p for t, p in mine if t == a_topic} == {p for t, p in mine if t == b_topic}
            assert len(mine) == 4
        computed = [c.member.stats["installed"] for c in cs]
        assert sum(computed) >= 1 and all(c.member.stats["assign_failures"] == 0 for c in cs)
        (d,) = await _describe(cs[0], group)
        assert d.assignor_name == "range"
        # The assigner leaves: the other one computes alone.
        await cs[0].close()
        await _shares(cs[1:], every)
        await cs[1].close()

    asyncio.run(scenario())


async def _describe(c: AsyncConsumer, group: str) -> Any:
    conn = await c._connection()
    return (await conn.call(69, 0, group_ids=[group], include_authorized_operations=False)).groups


def test_a_confluent_consumer_in_the_same_group_still_works(gc_server: ServerProcess) -> None:
    ck = pytest.importorskip("confluent_kafka")
    topic = f"lcc-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    _create_topic(gc_server, topic, 6)
    every = {(topic, p) for p in range(6)}
    real = ck.Consumer({
        "bootstrap.servers": gc_server.bootstrap, "group.id": group, "group.protocol": "consumer",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.ms": 50,
        "retry.backoff.ms": 50, "socket.connection.setup.timeout.ms": 5000})

    def real_assignment() -> set[TopicPartition]:
        return {(tp.topic, tp.partition) for tp in real.assignment()}

    async def scenario() -> None:
        cs = [AsyncConsumer(gc_server.bootstrap, group, local_assignors=[ClientSideRangeAssignor()],
                            rebalance_timeout_ms=10_000) for _ in range(2)]
        for c in cs:
            await c.start()
            c.subscribe([topic])
        await _shares(cs, every)
        real.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            real.poll(0.05)  # librdkafka's heartbeats run on its own thread; poll serves callbacks
            mine = real_assignment()
            ours = [c.assignment() for c in cs]
            if mine and all(ours) and set().union(mine, *ours) == every \
                    and len(mine) + sum(map(len, ours)) == len(every):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError(f"no disjoint cover: {real_assignment()} "
                                 f"{[c.assignment() for c in cs]}")
        (d,) = await _describe(cs[0], group)
        assert d.assignor_name == "uniform"  # a member without client assignors: server-side
        for c in cs:
            await c.close()

    try:
        asyncio.run(scenario())
    finally:
        real.close()
