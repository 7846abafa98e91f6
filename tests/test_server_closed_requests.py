"""A request answered later (a long-poll Fetch, a JoinGroup, a ShareFetch) on a connection that
closes before its task has run a step: nothing of it is left behind. The connection runs the
handler's coroutine as its task itself (``server/connection.py``, ``Later``), so the cancel of
a task that has not started closes that coroutine; it used to be the argument of a wrapper
coroutine, which a cancel before its first step dropped without awaiting it ("coroutine
'ProduceFetchApis._fetch_wait' was never awaited", seen when the server stopped right after a
consumer's Fetch came in)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

from groupcoord.protocol.codec import build, encode_request, request_class
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.produce_fetch import ProduceFetchApis
from groupcoord.testing import async_embedded_cluster

TOPIC = "quiet"


def _long_poll_fetch() -> bytes:
    """A Fetch v12 of an empty partition that may wait 10 s for one byte."""
    cls = request_class(ApiKey.FETCH, 12)
    assert cls is not None
    body = build(cls, replica_id=-1, max_wait=10_000, min_bytes=1, topics=[
        {"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": 0,
                                         "partition_max_bytes": 1 << 20}]}])
    return encode_request(body, 1, "closer")


def _join_group() -> bytes:
    """A JoinGroup v3 (no MEMBER_ID_REQUIRED round trip) of a new group: the coordinator
    answers it when the join phase ends (after group.initial.rebalance.delay.ms)."""
    cls = request_class(ApiKey.JOIN_GROUP, 3)
    assert cls is not None
    body = build(cls, group_id="g", session_timeout=30_000, rebalance_timeout=30_000,
                 member_id="", protocol_type="consumer",
                 protocols=[{"name": "range", "metadata": b""}])
    return encode_request(body, 1, "closer")


async def _fetch_then_close(close_in_same_step: bool, request: bytes | None = None,
                            ) -> tuple[list[str], Any, Any, int]:
    """Send a long-poll Fetch (or ``request``); the server closes the connection either in the
    very step it arrived in (before its task starts) or once the Fetch waits. The
    never-awaited warnings seen, the Fetch family's waiters, the connection, and the requests
    the coordinator still holds."""
    config = {"group.initial.rebalance.delay.ms": "5000"}
    async with async_embedded_cluster(topics={TOPIC: 1}, config=config) as cluster:
        server = cluster.server
        apis = server.apis.families[ProduceFetchApis]
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        for _ in range(200):
            if server.connections:
                break
            await asyncio.sleep(0.01)
        (conn,) = server.connections
        received = conn.data_received

        def data_received(data: bytes) -> None:
            received(data)
            if close_in_same_step:  # as server.stop does when its step comes first
                conn.close("closed with the Fetch")

        conn.data_received = data_received
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            writer.write(request or _long_poll_fetch())
            await writer.drain()
            if not close_in_same_step:
                for _ in range(200):
                    if apis._waiting_fetches:
                        break
                    await asyncio.sleep(0.01)
                assert apis._waiting_fetches, "the Fetch never waited"
                # the waiting Fetch is one task, the connection's (its wait runs no other)
                tasks = asyncio.all_tasks() - {asyncio.current_task()}
                assert [t.get_coro().__qualname__ for t in tasks  # type: ignore[union-attr]
                        ] == ["ProduceFetchApis._fetch_wait"]
                conn.close("closed while the Fetch waits")
            assert await asyncio.wait_for(reader.read(), 10) == b""  # closed, no answer
            writer.close()
            for _ in range(5):
                await asyncio.sleep(0)
            gc.collect()
        never = [str(w.message) for w in seen if "never awaited" in str(w.message)]
        return never, apis, conn, server.runtime.pending_deferred


def test_a_fetch_closed_before_its_task_starts_leaves_no_coroutine_or_waiter() -> None:
    never, apis, conn, _ = asyncio.run(_fetch_then_close(close_in_same_step=True))
    assert never == []
    assert apis._waiting_fetches == {}
    assert apis._data_waiters == []
    assert conn._task is None and getattr(conn, "_finish", None) is None and not conn.busy


def test_a_waiting_fetch_closed_leaves_no_waiter() -> None:
    never, apis, conn, _ = asyncio.run(_fetch_then_close(close_in_same_step=False))
    assert never == []
    assert apis._waiting_fetches == {}
    assert apis._data_waiters == []
    assert conn._task is None and getattr(conn, "_finish", None) is None and not conn.busy


def test_a_join_group_closed_before_its_task_starts_is_forgotten_by_the_coordinator() -> None:
    """The deferred JoinGroup's future is cancelled with the connection's task, so the runtime
    drops the request at once rather than holding it until the join phase ends."""
    never, _, conn, pending = asyncio.run(_fetch_then_close(True, _join_group()))
    assert never == []
    assert pending == 0
    assert conn._task is None and not conn.busy
