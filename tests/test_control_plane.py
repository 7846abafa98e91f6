"""The control plane for tests (``server/control.py``, ``server/faults.py``) on an embedded server
(``groupcoord.testing``), with our own KIP-848 member as the client; and ``groupcoord control``.

Each command changes what a client sees: an injected error reaches it instead of the
coordinator's answer (and our member looks the coordinator up again after NOT_COORDINATOR),
latency delays answers, dropped connections are re-established, an expired session fences the
member, a failed append answers COORDINATOR_NOT_AVAILABLE and reloads the shard, a held
rebalance keeps the target until it is released. Bad input gets
a one-line error.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from groupcoord.client.consumer import ClientMemberState
from groupcoord.client.driver import AsyncConsumer, NamedRebalanceListener, TopicPartition
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing import Cluster, Control, ControlError, async_embedded_cluster

from .conftest import GROUPCOORD

TIMEOUT_S = 30.0
TOPIC = "events"


class Events(NamedRebalanceListener):
    def __init__(self) -> None:
        self.seen: list[tuple[str, frozenset[TopicPartition]]] = []

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.seen.append(("assigned", frozenset(partitions)))

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.seen.append(("revoked", frozenset(partitions)))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.seen.append(("lost", frozenset(partitions)))


ALL = {(TOPIC, p) for p in range(3)}


async def _until(pred: Callable[[], bool]) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while not pred():
            await asyncio.sleep(0.02)


def _with_member(body: Callable[[Cluster, AsyncConsumer, Events], Awaitable[None]]) -> None:
    async def scenario() -> None:
        async with async_embedded_cluster(topics={TOPIC: 3}) as cluster:
            events = Events()
            c = AsyncConsumer(cluster.bootstrap_servers, f"g-{uuid.uuid4().hex[:8]}",
                              listener=events, client_id="app-1", close_timeout_ms=2_000)
            await c.start()
            c.subscribe([TOPIC])
            assert await c.wait_for_assignment(TIMEOUT_S) == ALL
            try:
                await body(cluster, c, events)
            finally:
                await c.close()
    asyncio.run(scenario())


def test_not_coordinator_makes_our_member_find_the_coordinator_again() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        group = c.member.group_id
        conn = c._conn
        retries = c.member.stats["retries"]
        cluster.control.inject_error("ConsumerGroupHeartbeat", "NOT_COORDINATOR", 2, group=group)
        await _until(lambda: cluster.control.faults()["injected"] == 2)
        # Both answers reached the member (retried, with its backoff) ...
        await _until(lambda: c.member.stats["retries"] >= retries + 2)
        # ... and the driver dropped the connection each time to look the coordinator up again.
        await _until(lambda: c._conn is not None and c._conn is not conn and c.reconciled())
        assert c.assignment() == ALL
        assert not [e for e in events.seen if e[0] in ("lost", "revoked")]  # work kept

    _with_member(body)


def test_an_error_rule_only_hits_its_group_and_client_and_counts_down() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        ctl = cluster.control
        ctl.inject_error("OffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS", 1, group="other-group")
        ctl.inject_error("OffsetCommit", "REBALANCE_IN_PROGRESS", 1, client_id="someone-else")
        assert await c.commit({(TOPIC, 0): 5}) == {}  # neither rule matches
        ctl.inject_error("OffsetCommit", int(ErrorCode.rebalance_in_progress), 2,
                         group=c.member.group_id, client_id="app-1")
        want = {(TOPIC, 0): int(ErrorCode.rebalance_in_progress)}
        assert await c.commit({(TOPIC, 0): 6}) == want
        assert await c.commit({(TOPIC, 0): 7}) == want
        assert await c.commit({(TOPIC, 0): 8}) == {}  # used up
        assert await c.committed([(TOPIC, 0)]) == {(TOPIC, 0): 8}
        assert [r["group"] for r in ctl.faults()["errors"]] == ["other-group", None]
        assert ctl.clear_faults() == 2
        assert ctl.faults()["errors"] == []

    _with_member(body)


def test_latency_delays_the_answers_of_an_api() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        loop = asyncio.get_running_loop()
        cluster.control.add_latency(400, api="OffsetFetch")
        t0 = loop.time()
        assert await c.committed([(TOPIC, 1)]) == {(TOPIC, 1): -1}
        assert loop.time() - t0 >= 0.39  # a lower bound only: never answered early
        cluster.control.clear_faults()

    _with_member(body)


def test_dropped_connections_are_reestablished_and_the_work_kept() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        conn = c._conn
        assert conn is not None
        dropped = cluster.control.drop_connections("app-1")
        assert len(dropped) >= 1
        await _until(lambda: conn.closed)
        # The next heartbeat fails, the driver reconnects (new connection), the member goes on.
        await _until(lambda: c._conn is not None and c._conn is not conn and not c._conn.closed
                     and c.reconciled())
        assert c.assignment() == ALL
        assert cluster.control.drop_connections("nobody") == []

    _with_member(body)


def test_an_expired_session_fences_the_member_which_rejoins() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        old_id = c.member.member_id
        assert cluster.control.expire_session(c.member.group_id, old_id) == "session"
        # The coordinator removed it: its next heartbeat is fenced, it loses its partitions
        # and joins again (KIP-848 member ids are the client's: the same id, epoch from 0).
        await _until(lambda: any(kind == "lost" for kind, _ in events.seen))
        await _until(lambda: c.reconciled() and c.assignment() == ALL)
        assert c.member.stats["fenced"] >= 1
        with pytest.raises(ControlError, match="no member"):
            cluster.control.expire_session(c.member.group_id, "no-such-member")

    _with_member(body)


def test_a_failed_append_answers_coordinator_not_available_and_reloads_the_shard() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        runtime = cluster.server.runtime
        loads = runtime.loads
        assert cluster.control.fail_next_append() == 1
        code = int(ErrorCode.coordinator_not_available)
        assert await c.commit({(TOPIC, 2): 11}) == {(TOPIC, 2): code}
        assert runtime.append_failures == 1
        await _until(lambda: runtime.loads > loads)  # reloaded from its log
        # The commit was not kept; the member (its state was in the log) carries on.
        await _until(lambda: c.reconciled() and c.member.state is ClientMemberState.STABLE)
        assert await c.committed([(TOPIC, 2)]) == {(TOPIC, 2): -1}
        assert await c.commit({(TOPIC, 2): 12}) == {}
        assert await c.committed([(TOPIC, 2)]) == {(TOPIC, 2): 12}

    _with_member(body)


@pytest.mark.parametrize(("call", "message"), [
    (lambda ctl: ctl.inject_error("NoSuchApi", "NOT_COORDINATOR"), "unknown API"),
    (lambda ctl: ctl.inject_error("Heartbeat", "NO_SUCH_ERROR"), "unknown error"),
    (lambda ctl: ctl.inject_error("Heartbeat", 9999), "unknown error code"),
    (lambda ctl: ctl.inject_error("Heartbeat", "NONE"), "not an error"),
    (lambda ctl: ctl.inject_error("Heartbeat", "NOT_COORDINATOR", 0), "at least 1"),
    (lambda ctl: ctl.inject_error("Produce", "NOT_COORDINATOR"), "no error code"),
    (lambda ctl: ctl.add_latency(-1), "at least 0"),
    (lambda ctl: ctl.drop_connections(), "needs client_id"),
    (lambda ctl: ctl.run("no-such-command"), "unknown control command"),
    (lambda ctl: ctl.expire_session("g", "m"), "no member"),
])
def test_bad_control_input_gets_a_one_line_error(call: Callable[[Control], object],
                                                 message: str) -> None:
    async def scenario() -> None:
        async with async_embedded_cluster() as cluster:
            for ctl in (cluster.control, Control.connect(cluster.bootstrap_servers)):
                with pytest.raises(ControlError, match=message) as e:
                    await asyncio.to_thread(call, ctl)
                assert "\n" not in str(e.value)
    asyncio.run(scenario())


def test_the_control_cli_against_a_running_server(tmp_path: object) -> None:
    from .conftest import start_server

    server = start_server(tmp_path / "data")  # type: ignore[operator]
    try:
        def control(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*GROUPCOORD, "control", *args, "--bootstrap-server",
                                   server.bootstrap], capture_output=True, text=True, timeout=60)

        r = control("inject-error", "Heartbeat", "NOT_COORDINATOR", "--count", "3",
                    "--group", "g1")
        assert r.returncode == 0, r.stderr
        r = control("faults", "--json")
        assert r.returncode == 0, r.stderr
        [rule] = json.loads(r.stdout)["errors"]
        assert (rule["api"], rule["error"], rule["remaining"], rule["group"]) == \
            ("HEARTBEAT", "NOT_COORDINATOR", 3, "g1")
        r = control("inject-error", "Heartbeat", "NOPE")
        assert r.returncode == 1 and r.stderr.startswith("error: unknown error 'NOPE'"), r.stderr
        assert "Traceback" not in r.stderr
        r = control("inject-error", "Heartbeat", "NOT_COORDINATOR", "--count", "0")
        assert r.returncode == 2 and "must be at least 1" in r.stderr
        r = control("clear-faults")
        assert r.returncode == 0 and '"removed": 1' in r.stdout
        server.stop()
        # Recorded in the server log (WARNING: shown without -v).
        assert "control: inject-error" in server.stderr()
        assert "control: clear-faults" in server.stderr()
    finally:
        server.stop()


def test_a_held_rebalance_answers_heartbeats_but_keeps_the_target_until_released() -> None:
    async def body(cluster: Cluster, c: AsyncConsumer, events: Events) -> None:
        group = c.member.group_id

        def describe() -> Any:
            with KafkaClient(cluster.bootstrap_servers) as k:
                [g] = k.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=[group]).groups
            return g

        cluster.control.hold_rebalance(group)
        second = AsyncConsumer(cluster.bootstrap_servers, group, client_id="app-2")
        await second.start()
        second.subscribe([TOPIC])
        try:
            # The newcomer is a member (its heartbeats answered, the group epoch moved on) ...
            async with asyncio.timeout(TIMEOUT_S):
                while True:
                    g = await asyncio.to_thread(describe)
                    if len(g.members) == 2:
                        break
                    await asyncio.sleep(0.05)
            # ... but the target did not advance: the first member keeps every partition.
            assert int(g.assignment_epoch) < int(g.group_epoch)
            assert c.assignment() == ALL and second.assignment() == set()
            cluster.control.release_rebalance(group)
            async with asyncio.timeout(TIMEOUT_S):
                while not (c.reconciled() and second.reconciled() and second.assignment()
                           and c.assignment() | second.assignment() == ALL
                           and not c.assignment() & second.assignment()):
                    await asyncio.sleep(0.02)
            g = await asyncio.to_thread(describe)
            assert int(g.assignment_epoch) == int(g.group_epoch)
            with pytest.raises(ControlError, match="not held"):
                cluster.control.release_rebalance(group)
        finally:
            await second.close()

    _with_member(body)


def test_restart_on_the_servers_own_loop_says_to_await_restart_async() -> None:
    async def scenario() -> None:
        async with async_embedded_cluster() as cluster:
            with pytest.raises(RuntimeError, match="restart_async"):
                cluster.restart()
            port = cluster.port
            await cluster.restart_async(down_s=0.1)
            assert cluster.port == port  # back on the same port
    asyncio.run(scenario())
