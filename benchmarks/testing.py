"""Start-up time of the embedded server for tests (``groupcoord.testing``; docs/testing.md).

- ``testing.start.warm``: :func:`~groupcoord.testing.embedded_cluster` (server on its own loop
  in a thread, memory storage, one topic of 12 partitions declared) from the call until the
  ``with`` body runs: what each test using the ``kafka_cluster`` fixture pays once the package is
  imported; median of ``repeat`` starts;
- ``testing.start.async``: the same with :func:`~groupcoord.testing.async_embedded_cluster` on
  the caller's loop;
- ``testing.stop``: leaving the ``with`` (connections closed, loop and thread ended);
- ``testing.start.cold``: a fresh Python process that imports ``groupcoord.testing`` and starts
  a cluster, until it prints the bootstrap servers (interpreter start and imports included:
  what the first test of a session pays); median of ``cold_repeat`` processes;
- ``testing.first_join``: a warm cluster plus our own KIP-848 member
  (:class:`~groupcoord.client.driver.AsyncConsumer`) until it owns all 12 partitions.

Peer figures (librdkafka's mock cluster, kfake, a Kafka container) are in docs/testing.md, not
measured here.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

from benchmarks._harness import Result
from groupcoord.testing import async_embedded_cluster, embedded_cluster

TOPICS = {"events": 12}

_COLD = (
    "import time; t0 = time.perf_counter()\n"
    "from groupcoord.testing import embedded_cluster\n"
    "with embedded_cluster(topics={'events': 12}) as c:\n"
    "    print(c.bootstrap_servers, time.perf_counter() - t0, flush=True)\n"
)


def _warm_ms() -> float:
    t0 = time.perf_counter()
    with embedded_cluster(topics=TOPICS):
        t1 = time.perf_counter()
    return (t1 - t0) * 1000


def _stop_ms() -> float:
    with embedded_cluster(topics=TOPICS):
        t0 = time.perf_counter()
    return (time.perf_counter() - t0) * 1000


async def _async_ms() -> float:
    t0 = time.perf_counter()
    async with async_embedded_cluster(topics=TOPICS):
        t1 = time.perf_counter()
    return (t1 - t0) * 1000


async def _first_join_ms() -> float:
    from groupcoord.client.driver import AsyncConsumer

    t0 = time.perf_counter()
    async with async_embedded_cluster(topics=TOPICS) as cluster:
        c = AsyncConsumer(cluster.bootstrap_servers, "bench")
        async with c:
            c.subscribe(["events"])
            owned = await c.wait_for_assignment(30)
            t1 = time.perf_counter()
    assert len(owned) == 12, owned
    return (t1 - t0) * 1000


def _cold_ms() -> float:
    """Wall time of a fresh interpreter until the cluster is up (the child's own measure of
    import + start, from its first line, plus nothing else: process spawn is excluded)."""
    out = subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return float(out[1]) * 1000


def run(quick: bool = False) -> list[Result]:
    repeat = 3 if quick else 30
    cold_repeat = 1 if quick else 7
    _warm_ms()  # imports and first-use caches out of the way
    warm = [_warm_ms() for _ in range(repeat)]
    stop = [_stop_ms() for _ in range(repeat)]
    started = [asyncio.run(_async_ms()) for _ in range(repeat)]
    join = [asyncio.run(_first_join_ms()) for _ in range(max(2, repeat // 5))]
    cold = [_cold_ms() for _ in range(cold_repeat)]
    params = {"topics": TOPICS, "storage": "memory", "repeat": repeat}
    return [
        Result("testing.start.warm", statistics.median(warm), "ms",
               {**params, "p90": sorted(warm)[int(0.9 * (len(warm) - 1))]}),
        Result("testing.start.async", statistics.median(started), "ms", params),
        Result("testing.stop", statistics.median(stop), "ms", params),
        Result("testing.first_join", statistics.median(join), "ms",
               {**params, "repeat": len(join), "member": "AsyncConsumer"}),
        Result("testing.start.cold", statistics.median(cold), "ms",
               {**params, "repeat": cold_repeat, "includes": "imports, not process spawn"}),
    ]
