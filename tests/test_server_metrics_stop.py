"""The metrics endpoint's stop (``server/metrics.py``, ``MetricsServer``): a scrape still being
served (a client connected that has not sent its request line) is cancelled and its connection
closed, instead of a task left pending past the stop (closing the listening server does not end
the connections it accepted)."""

from __future__ import annotations

import asyncio

from groupcoord.server.metrics import MetricsServer
from groupcoord.testing import async_embedded_cluster


async def _silent_client_then_stop() -> tuple[set[str], bytes]:
    async with async_embedded_cluster() as cluster:
        metrics = MetricsServer(cluster.server, "127.0.0.1", 0)
        host, port = await metrics.start()
        before = asyncio.all_tasks()
        # a scrape that works, then a client that sends nothing
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /metrics HTTP/1.0\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        silent_reader, silent_writer = await asyncio.open_connection(host, port)
        for _ in range(100):
            if asyncio.all_tasks() - before:
                break
            await asyncio.sleep(0.01)
        assert asyncio.all_tasks() - before, "the silent client is not being served"
        await metrics.stop()
        left = {t.get_coro().__qualname__ for t in asyncio.all_tasks() - before  # type: ignore[union-attr]
                if not t.done()}
        # the silent client's connection is closed by the server
        assert await asyncio.wait_for(silent_reader.read(), 5) == b""
        silent_writer.close()
        return left, answer


def test_stop_ends_the_scrapes_still_being_served() -> None:
    left, answer = asyncio.run(_silent_client_then_stop())
    assert answer.startswith(b"HTTP/1.0 200 OK")
    assert left == set()
