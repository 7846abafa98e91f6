"""Share-partition benchmarks (KIP-932; docs/design.md "Benchmarks").

``share``: a real ``groupcoord serve`` subprocess (sqlite record logs: every acquisition and
acknowledgement is written to the share-state log before it is answered), one topic of
``partitions`` partitions holding ``records`` records of 100 bytes, produced before the
consumers start; the share group's ``share.auto.offset.reset`` is set to ``earliest``
(IncrementalAlterConfigs on the GROUP) so that every record is the group's. ``consumers``
confluent-kafka ShareConsumers (librdkafka), one per thread, in explicit acknowledgement mode:
each polls a batch, accepts every record and commits (``commit_sync``: a ShareAcknowledge round
trip). Reported:

- ``share.records_per_s``: records delivered and acknowledged per second, from the first
  record any consumer received (joining the group is not counted) until every record is
  acknowledged (librdkafka fetches ahead in the background, so the first records may have
  been fetched during the join: 200,000 records in the full run keep that small);
- ``share.ack_p99_ms`` / ``share.ack_p50_ms``: latency of the acknowledgements
  (``commit_sync`` from call to return), over every commit of the run.

``--set beside=1`` (and the full run) repeats the workload with a consumer group beside it: as
many librdkafka consumers (``group.protocol=consumer``, KIP-848) reading the same topic at the
same time in a consumer group, committing each batch synchronously. Named
``share.beside-consumer-group.*`` for the share group's figures in that run and
``consumer-group.records_per_s`` / ``consumer-group.commit_p99_ms`` for the consumer group's.

The value is the median of ``repeat`` runs. Clients and server share the machine's cores: the
lead takes the figures on a quiet machine (docs/benchmarks.md).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._harness import Result, stop_process
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
#: Faster joins than the defaults (5 s heartbeats): the join is not what is measured.
_SERVE_CONFIGS = ["group.share.min.heartbeat.interval.ms=500",
                  "group.share.heartbeat.interval.ms=500",
                  "group.consumer.min.heartbeat.interval.ms=500",
                  "group.consumer.heartbeat.interval.ms=500"]
GROUP_RESOURCE = 32
TIMEOUT_S = 300


@dataclass
class _Tally:
    """What the consumer threads of one group measured."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    first: float | None = None
    last: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def add(self, n: int, first_at: float, latency_ms: float) -> None:
        with self.lock:
            self.done += n
            self.first = first_at if self.first is None else min(self.first, first_at)
            self.last = time.perf_counter()
            self.latencies_ms.append(latency_ms)

    def rate(self) -> float:
        return self.done / max(self.last - (self.first or self.last), 1e-9)

    def pct(self, q: float) -> float:
        xs = sorted(self.latencies_ms)
        return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [*_CMD, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", str(data_dir)]
    for c in _SERVE_CONFIGS:
        cmd += ["--config", c]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, line.split()[-1].rpartition("://")[2]


def _prepare(bootstrap: str, topic: str, partitions: int, records: int, group: str) -> None:
    from confluent_kafka import Producer

    with KafkaClient(bootstrap, timeout=60) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": partitions,
                                                     "replication_factor": -1}], timeout=10_000)
        assert r.topics[0].error_code == 0, r
        r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[{
            "resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}])
        assert r.responses[0].error_code == 0, r
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * 100
    for i in range(records):
        p.produce(topic, value=value, partition=i % partitions)
        if i % 10_000 == 0:
            p.poll(0)
    if p.flush(60) != 0:
        raise RuntimeError("records not produced")


def _share_consumer(bootstrap: str, group: str, topic: str, target: int, tally: _Tally,
                    stop: threading.Event) -> None:
    import confluent_kafka as ck

    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit", "log_level": 3})
    try:
        c.subscribe([topic])
        while not stop.is_set() and tally.done < target:
            batch = [m for m in c.poll(0.1) if m.error() is None]
            if not batch:
                continue
            got = time.perf_counter()
            for m in batch:
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
            t0 = time.perf_counter()
            failed = [e for e in c.commit_sync(30).values() if e is not None]
            latency = (time.perf_counter() - t0) * 1000
            if failed:
                with tally.lock:
                    tally.errors.append(str(failed[0]))
                continue
            tally.add(len(batch), got, latency)
    finally:
        c.close()


def _group_consumer(bootstrap: str, group: str, topic: str, target: int, tally: _Tally,
                    stop: threading.Event) -> None:
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "log_level": 3})
    try:
        c.subscribe([topic])
        while not stop.is_set() and tally.done < target:
            batch = [m for m in c.consume(500, 0.1) if m.error() is None]
            if not batch:
                continue
            got = time.perf_counter()
            t0 = time.perf_counter()
            c.commit(asynchronous=False)
            tally.add(len(batch), got, (time.perf_counter() - t0) * 1000)
    finally:
        c.close()


def _one_run(consumers: int, partitions: int, records: int,
             beside: bool) -> tuple[_Tally, _Tally | None]:
    with tempfile.TemporaryDirectory(prefix="groupcoord-bench-share-") as tmp:
        proc, bootstrap = _start_server(Path(tmp) / "data")
        try:
            topic, group = "share-bench", f"share-{uuid.uuid4().hex[:8]}"
            _prepare(bootstrap, topic, partitions, records, group)
            share, plain = _Tally(), (_Tally() if beside else None)
            stop = threading.Event()
            threads = [threading.Thread(target=_share_consumer,
                                        args=(bootstrap, group, topic, records, share, stop),
                                        daemon=True) for _ in range(consumers)]
            if plain is not None:
                threads += [threading.Thread(target=_group_consumer,
                                             args=(bootstrap, f"cg-{group}", topic, records,
                                                   plain, stop), daemon=True)
                            for _ in range(consumers)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + TIMEOUT_S
            while time.monotonic() < deadline and (
                    share.done < records or (plain is not None and plain.done < records)):
                time.sleep(0.05)
            stop.set()
            for t in threads:
                t.join(60)
            if share.done < records:
                raise RuntimeError(f"only {share.done} of {records} records acknowledged "
                                   f"({share.errors[:1]})")
            return share, plain
        finally:
            stop_process(proc)


def bench_share(consumers: int, partitions: int, records: int, repeat: int,
                beside: bool) -> list[Result]:
    params = {"consumers": consumers, "partitions": partitions, "records": records,
              "repeat": repeat, "record_bytes": 100}
    rates, p99s, p50s, cg_rates, cg_p99s = [], [], [], [], []
    for _ in range(repeat):
        share, plain = _one_run(consumers, partitions, records, beside)
        rates.append(share.rate())
        p99s.append(share.pct(0.99))
        p50s.append(share.pct(0.50))
        if plain is not None:
            cg_rates.append(plain.rate())
            cg_p99s.append(plain.pct(0.99))
    tag = "share.beside-consumer-group" if beside else "share"
    size = f"consumers={consumers}.partitions={partitions}"
    out = [Result(f"{tag}.records_per_s.{size}", statistics.median(rates), "per_s", params),
           Result(f"{tag}.ack_p99_ms.{size}", statistics.median(p99s), "ms", params),
           Result(f"{tag}.ack_p50_ms.{size}", statistics.median(p50s), "ms", params)]
    if beside:
        out += [Result(f"consumer-group.records_per_s.{size}", statistics.median(cg_rates),
                       "per_s", params),
                Result(f"consumer-group.commit_p99_ms.{size}", statistics.median(cg_p99s),
                       "ms", params)]
    return out


def run(quick: bool = False, **sizes: Any) -> list[Result]:
    """``--set consumers=N partitions=N records=N repeat=N beside=0|1``."""
    consumers = int(sizes.get("consumers", 10))
    partitions = int(sizes.get("partitions", 4))
    records = int(sizes.get("records", 5_000 if quick else 200_000))
    repeat = int(sizes.get("repeat", 1 if quick else 3))
    beside = sizes.get("beside")
    results = []
    if beside is None or beside == "0":
        results += bench_share(consumers, partitions, records, repeat, beside=False)
    if beside == "1" or (beside is None and not quick):
        results += bench_share(consumers, partitions, records, repeat, beside=True)
    return results
