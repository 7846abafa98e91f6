"""Transactions over loopback (docs/design.md "Benchmarks"): the transaction coordinator, its
markers and the partitions' side, end to end, with raw protocol requests.

A real ``groupcoord serve`` subprocess (its default sqlite record log, ``--set storage=memory``
for the in-memory one) with one topic of ``producers`` partitions. ``producers`` producers, each a
thread with its own connection and transactional id, run consume-transform-produce transactions
as a Kafka Streams task commits them: AddPartitionsToTxn (its partition), Produce (a transactional
batch of ``records`` records, acks=all), AddOffsetsToTxn (the group), TxnOffsetCommit (one
offset), EndTxn (commit).

- ``transactions.paced``: each producer commits every ``interval_ms`` (100 ms by default, the
  issue's cadence): ``end_txn_p99`` and ``end_txn_p50`` (ms, EndTxn's round trip: PrepareCommit
  durable, the markers written, CompleteCommit durable) and ``committed_per_s``;
- ``transactions.saturated``: each producer commits as fast as its round trips allow:
  ``committed_per_s`` (the coordinator's throughput), its ``end_txn_p99``, and
  ``per_server_cpu_second``: transactions committed per second of the server process's CPU
  (Linux ``/proc``; omitted elsewhere), the figure least moved by a busy machine, where the
  client threads and other processes take the cores the server would use;
- ``transactions.overhead``: the same records produced and their offsets committed without
  transactions (an idempotent producer: Produce, then OffsetCommit), as fast as possible;
  ``records_ratio``, the ratio of the records per second with transactions to those without
  (1.0: free), and ``server_cpu_ratio``, the server CPU per record with transactions over that
  without (1.0: free).

The target on a quiet machine (the issue): at least 1,000 committed transactions per second and a
p99 EndTxn of at most 20 ms. Client and server share the machine's cores; the lead takes the
quiet-machine figures.
"""

from __future__ import annotations

import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import crc32c

from benchmarks._harness import Result, stop_process
from benchmarks.server import _cpu_seconds
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
TOPIC = "bench-txn-out"
GROUP = "bench-txn-group"
TRANSACTIONAL = 0x10  # record batch attribute bit 4 (KIP-98)


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record_batch(values: list[bytes], producer_id: int, epoch: int, sequence: int,
                 transactional: bool) -> bytes:
    """A v2 record batch (uncompressed) of ``values`` from the producer, at ``sequence``."""
    records = b""
    for i, v in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(v)) + v + _varint(0)
        records += _varint(len(body)) + body
    n = len(values)
    now = int(time.time() * 1000)
    attributes = TRANSACTIONAL if transactional else 0
    after_crc = struct.pack(">hiqqqhii", attributes, n - 1, now, now, producer_id, epoch,
                            sequence, n) + records
    body = struct.pack(">ibI", -1, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


class _Server:
    def __init__(self, tmp: Path, storage: str, partitions: int) -> None:
        cmd = [*_CMD, "serve", "--port", "0", "--storage", storage, "--data-dir",
               str(tmp / "data")]
        self.err = open(tmp / "server.err", "w")  # noqa: SIM115 - the child's for its life
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"server did not start: {line!r}: "
                               f"{(tmp / 'server.err').read_text()[-2000:]}")
        self.bootstrap = line.split()[-1]
        with KafkaClient(self.bootstrap) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{
                "name": TOPIC, "num_partitions": partitions, "replication_factor": -1}],
                timeout=30_000)
            if int(r.topics[0].error_code):
                raise RuntimeError(f"cannot create {TOPIC}: {r.topics[0]}")

    def stop(self) -> None:
        stop_process(self.proc)
        self.err.close()


def _check(r: Any, what: str) -> None:
    code = int(getattr(r, "error_code", 0))
    if code:
        raise RuntimeError(f"{what}: error {code}")


class _Producer:
    """One producer on its own connection: a partition of its own, a transactional id."""

    def __init__(self, bootstrap: str, index: int, records: int, transactional: bool) -> None:
        self.c = KafkaClient(bootstrap, client_id=f"bench-txn-{index}")
        self.partition = index
        self.values = [b"v" * 100] * records
        self.tid = f"bench-txn-{index}-{time.monotonic_ns()}" if transactional else None
        r = self.c.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id=self.tid,
                        transaction_timeout=60_000)
        _check(r, "InitProducerId")
        self.pid, self.epoch = int(r.producer_id), int(r.producer_epoch)
        self.sequence = 0
        self.offset = 0
        self.end_txn_ms: list[float] = []
        self.committed = 0

    def _produce(self, transactional: bool) -> None:
        batch = record_batch(self.values, self.pid, self.epoch, self.sequence, transactional)
        r = self.c.call(ApiKey.PRODUCE, 9, transactional_id=self.tid, acks=-1, timeout=30_000,
                        topic_data=[{"name": TOPIC, "partition_data": [
                            {"index": self.partition, "records": batch}]}])
        code = int(r.responses[0].partition_responses[0].error_code)
        if code:
            raise RuntimeError(f"Produce: error {code}")
        self.sequence += len(self.values)
        self.offset += len(self.values)

    def transaction(self) -> None:
        r = self.c.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id=self.tid,
                        v3_and_below_producer_id=self.pid, v3_and_below_producer_epoch=self.epoch,
                        v3_and_below_topics=[{"name": TOPIC, "partitions": [self.partition]}])
        code = int(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
        if code:
            raise RuntimeError(f"AddPartitionsToTxn: error {code}")
        self._produce(True)
        _check(self.c.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=self.tid,
                           producer_id=self.pid, producer_epoch=self.epoch, group_id=GROUP),
               "AddOffsetsToTxn")
        r = self.c.call(ApiKey.TXN_OFFSET_COMMIT, 3, transactional_id=self.tid, group_id=GROUP,
                        producer_id=self.pid, producer_epoch=self.epoch, generation_id=-1,
                        member_id="", group_instance_id=None, topics=[{
                            "name": TOPIC, "partitions": [{
                                "partition_index": self.partition,
                                "committed_offset": self.offset, "committed_leader_epoch": -1,
                                "committed_metadata": None}]}])
        code = int(r.topics[0].partitions[0].error_code)
        if code:
            raise RuntimeError(f"TxnOffsetCommit: error {code}")
        t0 = time.perf_counter()
        r = self.c.call(ApiKey.END_TXN, 3, transactional_id=self.tid, producer_id=self.pid,
                        producer_epoch=self.epoch, committed=True)
        self.end_txn_ms.append((time.perf_counter() - t0) * 1000.0)
        _check(r, "EndTxn")
        self.committed += 1

    def plain(self) -> None:
        """The same records and offset without a transaction."""
        self._produce(False)
        r = self.c.call(ApiKey.OFFSET_COMMIT, 9, group_id=GROUP, generation_id_or_member_epoch=-1,
                        member_id="", group_instance_id=None, topics=[{
                            "name": TOPIC, "partitions": [{
                                "partition_index": self.partition,
                                "committed_offset": self.offset, "committed_leader_epoch": -1,
                                "committed_metadata": None}]}])
        code = int(r.topics[0].partitions[0].error_code)
        if code:
            raise RuntimeError(f"OffsetCommit: error {code}")
        self.committed += 1

    def close(self) -> None:
        self.c.close()


def _drive(producers: list[_Producer], seconds: float, interval_ms: float | None,
           transactional: bool) -> tuple[float, float]:
    """Run every producer for ``seconds``; (units committed per second, elapsed)."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(producers) + 1)
    stop_at = [0.0]

    def work(p: _Producer) -> None:
        try:
            start.wait()
            nxt = time.perf_counter()
            while time.perf_counter() < stop_at[0]:
                if interval_ms is not None:
                    delay = nxt - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    nxt += interval_ms / 1000.0
                p.transaction() if transactional else p.plain()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,), daemon=True) for p in producers]
    for t in threads:
        t.start()
    before = sum(p.committed for p in producers)
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    start.wait()
    for t in threads:
        t.join(seconds + 60)
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"a producer failed: {errors[0]}") from errors[0]
    return (sum(p.committed for p in producers) - before) / elapsed, elapsed


class _Cpu:
    """The server process's CPU seconds over a run (None where ``/proc`` is not there)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = _cpu_seconds(pid)

    def per(self, units: float) -> float | None:
        """Units per CPU second since the start."""
        end = _cpu_seconds(self.pid)
        if self.start is None or end is None or end <= self.start:
            return None
        return units / (end - self.start)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(quick: bool = False, **sizes: Any) -> list[Result]:
    """``--set`` options: ``producers`` (10), ``records`` per transaction (10), ``interval_ms``
    of the paced run (100), ``seconds`` per run (10; quick 2), ``storage`` (sqlite, memory)."""
    opts = {"producers": "10", "records": "10", "interval_ms": "100",
            "seconds": "2" if quick else "10", "storage": "sqlite", **sizes}
    unknown = set(opts) - {"producers", "records", "interval_ms", "seconds", "storage"}
    if unknown:
        raise ValueError(f"unknown options: {', '.join(sorted(unknown))}")
    storage = str(opts["storage"])
    if storage not in ("sqlite", "memory"):
        raise ValueError(f"storage: sqlite or memory, got {storage!r}")
    n, per_txn = int(opts["producers"]), int(opts["records"])
    interval, duration = float(opts["interval_ms"]), float(opts["seconds"])
    if n < 1 or per_txn < 1 or interval <= 0 or duration <= 0:
        raise ValueError("producers, records, interval_ms and seconds must be positive")
    params = {"producers": n, "records": per_txn, "interval_ms": interval, "seconds": duration,
              "storage": storage}
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-txn-") as tmp:
        server = _Server(Path(tmp), storage, n)
        try:
            txn = [_Producer(server.bootstrap, i, per_txn, True) for i in range(n)]
            paced, _ = _drive(txn, duration, interval, True)
            latencies = [ms for p in txn for ms in p.end_txn_ms]
            results += [
                Result("transactions.paced.committed_per_s", paced, "per_s", params),
                Result("transactions.paced.end_txn_p99", _percentile(latencies, 0.99), "ms",
                       params),
                Result("transactions.paced.end_txn_p50", statistics.median(latencies), "ms",
                       params)]
            for p in txn:
                p.end_txn_ms.clear()
            cpu = _Cpu(server.proc.pid)
            saturated, elapsed = _drive(txn, duration, None, True)
            txn_per_cpu = cpu.per(saturated * elapsed)
            latencies = [ms for p in txn for ms in p.end_txn_ms]
            results += [
                Result("transactions.saturated.committed_per_s", saturated, "per_s", params),
                Result("transactions.saturated.end_txn_p99", _percentile(latencies, 0.99), "ms",
                       params)]
            if txn_per_cpu is not None:
                results.append(Result("transactions.saturated.per_server_cpu_second",
                                      txn_per_cpu, "per_s", params))
            for p in txn:
                p.close()
            plain = [_Producer(server.bootstrap, i, per_txn, False) for i in range(n)]
            cpu = _Cpu(server.proc.pid)
            without, elapsed = _drive(plain, duration, None, False)
            plain_per_cpu = cpu.per(without * elapsed)
            for p in plain:
                p.close()
            results.append(Result("transactions.overhead.records_ratio",
                                  saturated / without if without else float("nan"), "ratio",
                                  {**params, "with_per_s": saturated * per_txn,
                                   "without_per_s": without * per_txn}))
            if txn_per_cpu is not None and plain_per_cpu is not None:
                # CPU per record with transactions / without = units per CPU second without / with
                results.append(Result("transactions.overhead.server_cpu_ratio",
                                      plain_per_cpu / txn_per_cpu, "ratio",
                                      {**params, "with_per_server_cpu_s": txn_per_cpu * per_txn,
                                       "without_per_server_cpu_s": plain_per_cpu * per_txn}))
        finally:
            server.stop()
    return results
