"""Our own members as good clients when the coordinator fails: ``AsyncConsumer``, the
new-protocol Connect worker (``AsyncConnectWorker``) and the classic one
(``AsyncClassicConnectWorker``), in process against an in-process ``KafkaServer``.

- **Killed**: told to stop while the coordinator is gone, each member stops its work and returns
  from ``close()`` within its close timeout (the leave that cannot be delivered is abandoned).
  Before, a close racing a refused reconnection lost its cancellation (``asyncio.wait_for`` on
  Python 3.11) and the driver retried to connect forever.
- **Restarted** (same port, same record log, as a broker restarted on its disk): each member
  reconnects with its backoff and runs its work again.

The same as CLI processes (``groupcoord connect worker``, coordinator killed, paused with SIGSTOP,
restarted) is in ``test_member_faults_cli.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupcoord.client.connect.async_classic_worker import AsyncClassicConnectWorker
from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.listener import Connectors, ConnectRebalanceListener, Tasks
from groupcoord.client.driver import AsyncConsumer, NamedRebalanceListener, TopicPartition
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.app import KafkaServer
from groupcoord.storage.log import RecordLog
from groupcoord.storage.memory import MemoryLog

from .conftest import FAST_GROUP_CONFIGS

TIMEOUT_S = 30.0
CLOSE_TIMEOUT_MS = 1_000
FAST = dict(c.split("=", 1) for c in FAST_GROUP_CONFIGS)


@contextlib.asynccontextmanager
async def serving(data_dir: Path, port: int = 0,
                  log: RecordLog | None = None) -> AsyncIterator[KafkaServer]:
    server = KafkaServer(port=port, data_dir=data_dir, storage="memory", properties=FAST,
                         record_log=log)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def _admin(bootstrap: str, fn: Callable[[KafkaClient], Any]) -> Any:
    with KafkaClient(bootstrap) as c:
        return fn(c)


async def _setup(bootstrap: str, kind: str, name: str) -> None:
    """The topic (consumer) or the connectors (connect workers) the member will run."""
    if kind == "consumer":
        r = await asyncio.to_thread(_admin, bootstrap, lambda c: c.call(
            ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": 4,
                                              "replication_factor": -1}], timeout=10_000))
        assert int(r.topics[0].error_code) == 0, r
    else:
        group = name if kind == "connect" else f"{name}-configs"
        r = await asyncio.to_thread(_admin, bootstrap, lambda c: c.connect_group_config(
            group, [{"op": 0, "connector": "c", "task_count": 2}]))
        assert int(r.error_code) == 0, r


class _Work(NamedRebalanceListener, ConnectRebalanceListener):
    """What the member runs, from its listener's callbacks (both listener interfaces)."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.stopped = 0

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.running |= {f"{t}-{p}" for t, p in partitions}

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.running -= {f"{t}-{p}" for t, p in partitions}
        self.stopped += len(partitions)

    on_partitions_lost = on_partitions_revoked

    def on_assigned(self, connectors: Connectors, tasks: Tasks) -> None:
        self.running |= set(connectors) | {f"{t.connector}-{t.task}" for t in tasks}

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> None:
        items = set(connectors) | {f"{t.connector}-{t.task}" for t in tasks}
        self.running -= items
        self.stopped += len(items)

    on_lost = on_revoked  # type: ignore[assignment]


@dataclass
class Member:
    driver: AsyncConsumer | AsyncConnectWorker | AsyncClassicConnectWorker
    work: _Work
    expected: set[str]


async def _member(bootstrap: str, kind: str, name: str) -> Member:
    work = _Work()
    driver: Any
    if kind == "consumer":
        driver = AsyncConsumer(bootstrap, name, listener=work, close_timeout_ms=CLOSE_TIMEOUT_MS,
                               reconnect_backoff_max_ms=500)
        expected = {f"{name}-{p}" for p in range(4)}
    elif kind == "connect":
        driver = AsyncConnectWorker(bootstrap, name, listener=work, max_delay_ms=0,
                                    close_timeout_ms=CLOSE_TIMEOUT_MS,
                                    reconnect_backoff_max_ms=500)
        expected = {"c", "c-0", "c-1"}
    else:
        driver = AsyncClassicConnectWorker(bootstrap, name, listener=work, max_delay_ms=0,
                                           session_timeout_ms=6_000, heartbeat_interval_ms=500,
                                           close_timeout_ms=CLOSE_TIMEOUT_MS,
                                           reconnect_backoff_max_ms=500)
        expected = {"c", "c-0", "c-1"}
    await driver.start()
    if isinstance(driver, AsyncConsumer):
        driver.subscribe([name])
    return Member(driver, work, expected)


async def _runs_everything(m: Member) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while m.work.running != m.expected:
            await asyncio.sleep(0.02)


KINDS = ["consumer", "connect", "classic"]


@pytest.mark.parametrize("kind", KINDS)
def test_close_is_bounded_when_the_coordinator_is_gone(tmp_path: Path, kind: str) -> None:
    name = f"{kind}-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with serving(tmp_path) as server:
            bootstrap = f"127.0.0.1:{server.port}"
            await _setup(bootstrap, kind, name)
            m = await _member(bootstrap, kind, name)
            await _runs_everything(m)
        # The coordinator is gone (its connections closed, its port refuses): stop now.
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with asyncio.timeout(TIMEOUT_S):  # hung forever before
            await m.driver.close()
        took = loop.time() - started
        assert m.work.running == set()  # the work was stopped before the leave was given up
        assert not m.driver.leave_delivered
        assert m.work.stopped == len(m.expected)
        assert m.driver._task is None and not m.driver._tasks
        # Within the close timeout, plus the grace for cancelled tasks (a generous bound: a
        # broken close never returns at all).
        assert took < CLOSE_TIMEOUT_MS / 1000 + 10, took

    asyncio.run(scenario())


@pytest.mark.parametrize("kind", KINDS)
def test_members_regain_their_work_when_the_coordinator_returns(tmp_path: Path,
                                                                kind: str) -> None:
    name = f"{kind}-{uuid.uuid4().hex[:8]}"
    log = MemoryLog()

    async def scenario() -> None:
        async with serving(tmp_path, log=log) as server:
            port = server.port
            bootstrap = f"127.0.0.1:{port}"
            await _setup(bootstrap, kind, name)
            m = await _member(bootstrap, kind, name)
            await _runs_everything(m)
        # Down long enough for failed reconnections (backoff) and, for the classic worker,
        # failed heartbeats; back on the same port with the same log.
        await asyncio.sleep(1.0)
        async with serving(tmp_path, port=port, log=log):
            await _runs_everything(m)
            assert m.driver.error is None
            async with asyncio.timeout(TIMEOUT_S):
                await m.driver.close()
            assert m.work.running == set()
            assert m.driver.leave_delivered  # to the coordinator that returned

    asyncio.run(scenario())
