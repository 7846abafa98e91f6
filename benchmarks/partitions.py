"""The partition store at scale, over the wire: ``groupcoord bench partitions [--json]``.

A ``groupcoord serve`` subprocess under ``ulimit -n 1024`` (the descriptor limit most systems
give a process; the broker keeps a bounded cache of partition-file descriptors,
``server/partition_files.py``), on a data directory in a temporary folder, driven by one
KafkaClient connection:

- ``partitions.create`` (ms): CreateTopics of one topic of N partitions (100,000; quick: 2,000);
- ``partitions.describe`` (ms): the first Metadata for it (not yet cached), client decode
  included;
- ``partitions.produce`` (ms): one Produce request carrying one batch for every partition (each
  partition's file is created by its first write);
- ``partitions.fetch`` (ms): one Fetch of every partition from offset 0;
- ``partitions.restart`` (ms): stop, then start on the same directory until ``listening on``:
  the log recovery reads and checks every partition file (CRC-32C);
- ``partitions.fds`` (ratio): open descriptors of the server after all that, over the limit
  (1024);
- ``topics.create`` (ms): CreateTopics of 100 topics of 1,000 partitions (quick: 10 of 200) and
  ``topics.describe`` (ms): Metadata of all of them.
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import crc32c

from benchmarks._harness import Result
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
NOFILE = 1024
TIMEOUT_S = 900.0


def _batch() -> bytes:
    records = b"\x00" * 10
    after = struct.pack(">hiqqqhii", 0, 1, 1000, 1002, -1, -1, -1, 2) + records
    body = struct.pack(">ibI", 0, 2, crc32c.crc32c(after)) + after
    return struct.pack(">qi", 0, len(body)) + body


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def _start(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([*_CMD, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir",
                             str(data_dir)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, preexec_fn=_limit)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, line.split()[-1]


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(TIMEOUT_S)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 1)


def _check(errors: list[int], what: str) -> None:
    if any(errors):
        raise RuntimeError(f"{what}: error codes {sorted(set(errors))}")


def run(quick: bool = False) -> list[Result]:
    n = 2_000 if quick else 100_000
    n_topics, per_topic = (10, 200) if quick else (100, 1_000)
    params: dict[str, Any] = {"partitions": n, "nofile": NOFILE, "cores": os.cpu_count()}
    results: list[Result] = []
    batch = _batch()
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        data = Path(tmp) / "data"
        proc, bootstrap = _start(data)
        try:
            with KafkaClient(bootstrap, timeout=TIMEOUT_S) as c:
                t0 = time.perf_counter()
                r = c.call(ApiKey.CREATE_TOPICS, 7, timeout_ms=int(TIMEOUT_S * 1000), topics=[
                    {"name": "big", "num_partitions": n, "replication_factor": -1}])
                results.append(Result("partitions.create", _ms(t0), "ms", params))
                _check([int(t.error_code) for t in r.topics], "CreateTopics")
                t0 = time.perf_counter()
                md = c.call(ApiKey.METADATA, 12, topics=[{"name": "big", "topic_id": None}],
                            allow_auto_topic_creation=False)
                results.append(Result("partitions.describe", _ms(t0), "ms", params))
                assert len(md.topics[0].partitions) == n
                t0 = time.perf_counter()
                r = c.call(ApiKey.PRODUCE, 9, transactional_id=None, acks=1,
                           timeout_ms=int(TIMEOUT_S * 1000), topic_data=[
                               {"name": "big", "partition_data": [
                                   {"index": p, "records": batch} for p in range(n)]}])
                results.append(Result("partitions.produce", _ms(t0), "ms", params))
                _check([int(p.error_code) for p in r.responses[0].partition_responses], "Produce")
                t0 = time.perf_counter()
                f = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1,
                           max_bytes=1 << 30, topics=[{"topic": "big", "partitions": [
                               {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 16}
                               for p in range(n)]}])
                results.append(Result("partitions.fetch", _ms(t0), "ms", params))
                parts = f.responses[0].partitions
                _check([int(p.error_code) for p in parts], "Fetch")
                assert all(int(p.high_watermark) == 2 for p in parts)
                names = [f"t{i:03d}" for i in range(n_topics)]
                shape = {"topics": n_topics, "partitions_per_topic": per_topic}
                t0 = time.perf_counter()
                r = c.call(ApiKey.CREATE_TOPICS, 7, timeout_ms=int(TIMEOUT_S * 1000), topics=[
                    {"name": t, "num_partitions": per_topic, "replication_factor": -1}
                    for t in names])
                results.append(Result("topics.create", _ms(t0), "ms", shape))
                _check([int(t.error_code) for t in r.topics], "CreateTopics")
                t0 = time.perf_counter()
                md = c.call(ApiKey.METADATA, 12, topics=[{"name": t, "topic_id": None}
                                                         for t in names],
                            allow_auto_topic_creation=False)
                results.append(Result("topics.describe", _ms(t0), "ms", shape))
                assert sum(len(t.partitions) for t in md.topics) == n_topics * per_topic
        finally:
            _stop(proc)
        t0 = time.perf_counter()
        proc, bootstrap = _start(data)
        try:
            results.append(Result("partitions.restart", _ms(t0), "ms", params))
            fds = len(os.listdir(f"/proc/{proc.pid}/fd")) if os.path.isdir("/proc") else 0
            with KafkaClient(bootstrap, timeout=TIMEOUT_S) as c:
                f = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1,
                           max_bytes=1 << 30, topics=[{"topic": "big", "partitions": [
                               {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 16}
                               for p in range(n)]}])
                _check([int(p.error_code) for p in f.responses[0].partitions], "Fetch")
            fds = max(fds, len(os.listdir(f"/proc/{proc.pid}/fd")) if os.path.isdir("/proc")
                      else 0)
            results.append(Result("partitions.fds", round(max(fds, 1) / NOFILE, 3), "ratio",
                                  {**params, "open": fds}))
        finally:
            _stop(proc)
    return results


if __name__ == "__main__":
    import json

    json.dump([r.as_json() for r in run(quick="--quick" in sys.argv)], sys.stdout, indent=1)
