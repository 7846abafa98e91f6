"""The asyncio driver of our KIP-848 consumer member against a real ``groupcoord serve``
(so Python users can also run it against the server: subscribe, reconcile, rebalance
listener, commit)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from groupcoord.client.consumer import ClientMemberState
from groupcoord.client.driver import AsyncConsumer, NamedRebalanceListener, TopicPartition
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess, start_server

TIMEOUT_S = 30.0


def _create_topic(server: ServerProcess, name: str, partitions: int) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r


class Recorder(NamedRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("assigned", frozenset(partitions)))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.events.append(("lost", frozenset(partitions)))


async def _settled(consumers: list[AsyncConsumer], expected: set[TopicPartition]) -> None:
    """Wait until the consumers are reconciled at one epoch, their assignments disjoint and
    covering ``expected`` exactly."""
    async def check() -> None:
        while True:
            owned = [c.assignment() for c in consumers]
            union = set().union(*owned)
            if union == expected and sum(map(len, owned)) == len(expected) and all(
                    c.member.state is ClientMemberState.STABLE and c.member.owned == c.member.target
                    for c in consumers) and len({c.member_epoch for c in consumers}) == 1:
                return
            await asyncio.sleep(0.02)
    await asyncio.wait_for(check(), TIMEOUT_S)


def test_three_members_share_then_take_over(gc_server: ServerProcess) -> None:
    topic = f"drv-{uuid.uuid4().hex[:8]}"
    group = f"g-{topic}"
    _create_topic(gc_server, topic, 12)
    every = {(topic, p) for p in range(12)}

    async def scenario() -> None:
        recorders = [Recorder() for _ in range(3)]
        consumers = [AsyncConsumer(gc_server.bootstrap, group, listener=r) for r in recorders]
        for c in consumers:
            await c.start()
            c.subscribe([topic])
        await _settled(consumers, every)
        shares = [c.assignment() for c in consumers]
        assert all(len(s) == 4 for s in shares), shares  # uniform: 12 / 3
        # What each listener saw assigned, minus what it saw revoked, is what it owns.
        for r, c in zip(recorders, consumers, strict=True):
            held: set[TopicPartition] = set()
            for kind, parts in r.events:
                held = held | parts if kind == "assigned" else held - parts
            assert held == c.assignment()

        # The first member leaves: revocation of all it owned runs, then the others take over.
        gone = consumers[0]
        owned_before = gone.assignment()
        await gone.close()
        assert recorders[0].events[-1] == ("revoked", frozenset(owned_before))
        await _settled(consumers[1:], every)
        assert all(len(c.assignment()) == 6 for c in consumers[1:])

        # Commits carry the member epoch and are read back.
        c1 = consumers[1]
        offsets = {tp: 100 + tp[1] for tp in c1.assignment()}
        assert await c1.commit(offsets) == {}
        assert await c1.committed(offsets) == offsets
        for c in consumers[1:]:
            await c.close()

    asyncio.run(scenario())


def test_regex_subscription_and_async_revocation_listener(gc_server: ServerProcess) -> None:
    stem = f"rx{uuid.uuid4().hex[:6]}"
    _create_topic(gc_server, f"{stem}-a", 2)
    _create_topic(gc_server, f"{stem}-b", 2)
    group = f"g-{stem}"
    revoked_done: list[set[TopicPartition]] = []

    class Slow(NamedRebalanceListener):
        async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            await asyncio.sleep(0.2)  # an application flushing its work before giving up
            revoked_done.append(set(partitions))

    async def scenario() -> None:
        a = AsyncConsumer(gc_server.bootstrap, group, listener=Slow())
        await a.start()
        a.subscribe(regex=f"{stem}-.*")
        got = await a.wait_for_assignment(TIMEOUT_S)
        assert got == {(f"{stem}-a", 0), (f"{stem}-a", 1), (f"{stem}-b", 0), (f"{stem}-b", 1)}
        b = AsyncConsumer(gc_server.bootstrap, group)
        await b.start()
        b.subscribe(regex=f"{stem}-.*")
        await _settled([a, b], got)
        # a gave two partitions up only after its async callback finished.
        assert len(revoked_done) == 1 and len(revoked_done[0]) == 2
        assert revoked_done[0] == b.assignment()
        await a.close()
        await b.close()

    asyncio.run(scenario())


def test_reconnects_after_a_server_restart(tmp_path: pytest.TempPathFactory) -> None:
    """The driver survives the coordinator going away: the member retries with a full
    heartbeat after reconnecting and keeps its assignment (same member id and epoch)."""
    data = tmp_path / "data"  # type: ignore[operator]
    server = start_server(data)
    topic = "restart-topic"
    _create_topic(server, topic, 3)

    async def scenario() -> None:
        nonlocal server
        c = AsyncConsumer(server.bootstrap, "g-restart", reconnect_backoff_max_ms=200)
        await c.start()
        c.subscribe([topic])
        got = await c.wait_for_assignment(TIMEOUT_S)
        assert got == {(topic, p) for p in range(3)}
        epoch, mid = c.member_epoch, c.member_id
        old_conn, beats = c._conn, c.member.stats["heartbeats"]
        port = server.port
        await asyncio.get_running_loop().run_in_executor(None, server.stop)
        server = start_server(data, "--port", str(port))
        # Force a heartbeat now rather than after the interval.
        c.member._next_heartbeat_ms = 0
        c._wake.set()
        await c.wait_until(lambda m: c._conn is not old_conn and m.inflight is None
                           and m.stats["heartbeats"] >= beats + 2
                           and m.state is ClientMemberState.STABLE, TIMEOUT_S)
        assert (c.member_id, c.member_epoch) == (mid, epoch)
        assert c.assignment() == got
        await c.close()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
