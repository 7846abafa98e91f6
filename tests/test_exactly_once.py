"""Exactly-once consume-transform-produce over the wire (KIP-98, KIP-447), the acceptance of
the transactions issue: both halves together, the transaction coordinator and the
transactional data (markers, last stable offset, aborted transactions, pending transactional
offsets).

A real ``groupcoord serve`` process on a data directory; ``tests/eos_worker.py`` workers
(a read_committed consumer of a group and a transactional producer, of each client) read
``eos-in`` and write ``out:<value>`` to ``eos-out`` in transactions that carry their offsets.

- Workers killed with SIGKILL mid-way and replaced by processes with the same transactional
  ids (confluent-kafka on both group protocols, kafka-python and aiokafka on the classic one):
  the output read at read_committed holds every input exactly once and the group's committed
  offsets are the ends of the input.
- A zombie (a worker stopped with SIGSTOP inside a transaction, its records written, while its
  replacement starts) is fenced: when it resumes, its transaction fails with librdkafka's fatal
  fenced error and nothing it wrote is visible.
- The server killed with SIGKILL in the middle of transactions and restarted on its data
  directory: the same exactly-once output; workers that fail fatally are replaced, as a
  deployment would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess, start_server
from .eos_worker import CALL_TIMEOUT_S

pytestmark = pytest.mark.skipif(not hasattr(ApiKey, "END_TXN"),
                                reason="needs the transaction coordinator (EndTxn)")

IN, OUT = "eos-in", "eos-out"
PARTITIONS = 4
N = 400
#: Records per transaction and the pause inside each: about 80 transactions of 50 ms and more,
#: so that the kills land in the middle of the work and inside transactions.
BATCH, PACE_MS = 5, 50
#: A worker that prints nothing for this long after the server's restart is taken for stuck.
STALL_S = 20.0
REPO = Path(__file__).resolve().parent.parent


class Worker:
    """One ``tests/eos_worker.py`` process and what it printed."""

    def __init__(self, bootstrap: str, group: str, tid: str, protocol: str,
                 client: str = "confluent") -> None:
        self.tid = tid
        self.client = client
        self.lines: list[str] = []
        #: Notified at each line and at the end of the output (:meth:`wait_line`).
        self._changed = threading.Condition()
        self.ended = False
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.eos_worker", bootstrap, group, tid, protocol,
             str(BATCH), str(PACE_MS), client],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.strip())
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait_line(self, prefix: str, timeout_s: float) -> str | None:
        """The first line starting with ``prefix``, as soon as the worker prints it; None if
        its output ends without one or ``timeout_s`` passes first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = next((x for x in self.lines if x.startswith(prefix)), None)
                left = deadline - time.monotonic()
                if found is not None or self.ended or left <= 0:
                    return found
                self._changed.wait(left)

    @property
    def committed(self) -> int:
        done = [int(x.split()[1]) for x in self.lines if x.startswith("committed ")]
        return done[-1] if done else 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def create_topics(bootstrap: str) -> None:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": name, "num_partitions": PARTITIONS, "replication_factor": -1}
            for name in (IN, OUT)])
        assert all(t.error_code == 0 for t in r.topics), r


def produce_input(bootstrap: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(N):
        p.produce(IN, value=str(i).encode(), key=str(i).encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0


def read_output(bootstrap: str, settle_s: float = 3.0, timeout_s: float = 120.0) -> Counter[bytes]:
    """Every value of ``eos-out`` at read_committed: read until N values arrived and then
    ``settle_s`` more without anything new (a duplicate would come in that time)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(OUT, p, 0) for p in range(PARTITIONS)])
        got: Counter[bytes] = Counter()
        deadline = time.monotonic() + timeout_s
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got[m.value()] += 1
                last_new = time.monotonic()
            elif sum(got.values()) >= N and time.monotonic() - last_new > settle_s:
                break
        return got
    finally:
        c.close()


def group_offsets(bootstrap: str, group: str) -> dict[int, int]:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 7, group_id=group, require_stable=True,
                   topics=[{"name": IN, "partition_indexes": list(range(PARTITIONS))}])
        return {int(p.partition_index): int(p.committed_offset) for p in r.topics[0].partitions}


def expected() -> Counter[bytes]:
    return Counter(b"out:" + str(i).encode() for i in range(N))


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def input_done(server: ServerProcess, group: str) -> bool:
    offsets = group_offsets(server.bootstrap, group)
    return sum(max(o, 0) for o in offsets.values()) >= N


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    s = start_server(tmp_path / "data")
    try:
        yield s
    finally:
        s.stop()


@pytest.mark.parametrize(("client", "protocol"), [
    ("confluent", "classic"), ("confluent", "consumer"), ("kafka-python", "classic"),
    ("aiokafka", "classic")])
def test_workers_killed_and_replaced_keep_exactly_once(server: ServerProcess, client: str,
                                                       protocol: str) -> None:
    create_topics(server.bootstrap)
    produce_input(server.bootstrap)
    group = f"eos-{client}-{protocol}"
    workers = [Worker(server.bootstrap, group, f"w{k}-{protocol}", protocol, client)
               for k in range(2)]
    try:
        wait_for(lambda: workers[0].committed > 0 and workers[1].committed > 0, 90,
                 "both workers to commit")
        assert not input_done(server, group)  # the kill lands mid-way
        victim = workers[0]
        victim.proc.kill()  # SIGKILL, mid-way (possibly inside a transaction)
        victim.proc.wait(10)
        workers[0] = Worker(server.bootstrap, group, victim.tid, protocol, client)
        wait_for(lambda: input_done(server, group), 150, "the group to consume all input")
        got = read_output(server.bootstrap)
        assert got == expected(), (
            f"missing {sorted(expected() - got)[:5]}, duplicated "
            f"{[v for v, n in got.items() if n > 1][:5]}")
        offsets = group_offsets(server.bootstrap, group)
        assert offsets == {p: N // PARTITIONS for p in range(PARTITIONS)}
    finally:
        for w in workers:
            w.stop()


def test_a_zombie_is_fenced_and_its_writes_never_visible(server: ServerProcess) -> None:
    """The zombie stops itself inside a transaction whose records are written (SIGUSR1,
    ``tests/eos_worker.py``): a zombie stopped between transactions whose input the successor
    then consumes writes nothing more, so nothing fences it. When it resumes, its next call
    (``send_offsets_to_transaction``) meets the successor's epoch; the test waits for its
    ``fenced`` line as it is printed, at most the two transactional calls that can come before
    it (that one, then an abort if its error were abortable) of ``CALL_TIMEOUT_S`` each."""
    create_topics(server.bootstrap)
    produce_input(server.bootstrap)
    group = "eos-zombie"
    zombie = Worker(server.bootstrap, group, "z0", "classic")
    successor: Worker | None = None
    try:
        wait_for(lambda: zombie.committed > 0, 90, "the first worker to commit")
        assert not input_done(server, group)
        # a long GC pause, a partitioned host, with a transaction open
        zombie.proc.send_signal(signal.SIGUSR1)
        paused = zombie.wait_line("paused ", 90)
        assert paused is not None, zombie.lines[-5:]
        records, unflushed = map(int, paused.split()[1:])
        assert records > 0 and unflushed == 0, paused
        wait_for(lambda: _stopped(zombie.proc.pid), 10, "the zombie to stop")
        successor = Worker(server.bootstrap, group, "z0", "classic")
        wait_for(lambda: input_done(server, group), 150, "the successor to consume all input")
        zombie.proc.send_signal(signal.SIGCONT)
        fenced = zombie.wait_line("fenced", 2 * CALL_TIMEOUT_S + 10)
        assert fenced is not None, zombie.lines[-5:]
        assert read_output(server.bootstrap) == expected()
    finally:
        zombie.stop()
        if successor is not None:
            successor.stop()


def _stopped(pid: int) -> bool:
    """The process is stopped by a signal (state T in ``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def test_server_killed_mid_transaction_keeps_exactly_once(server: ServerProcess) -> None:
    create_topics(server.bootstrap)
    produce_input(server.bootstrap)
    group = "eos-crash"
    tids = ["c0", "c1"]
    workers = [Worker(server.bootstrap, group, tid, "classic") for tid in tids]
    restarted = server
    try:
        wait_for(lambda: sum(w.committed for w in workers) >= N // 4, 90,
                 "a quarter of the input committed")
        assert not input_done(server, group)
        server.stop(sig=signal.SIGKILL)
        restarted = start_server(server.data_dir, "--port", str(server.port))
        server.proc = restarted.proc  # the fixture stops the running one

        progress = {w.tid: (len(w.lines), time.monotonic()) for w in workers}

        def done() -> bool:
            if input_done(restarted, group):
                return True
            for k, w in enumerate(workers):
                seen, since = progress[w.tid]
                if len(w.lines) != seen:
                    progress[w.tid] = (len(w.lines), time.monotonic())
                elif w.alive() and time.monotonic() - since > STALL_S:
                    w.proc.kill()  # stuck: a deployment's liveness check replaces it
                    w.proc.wait(10)
                    w.lines.append("killed as stuck")
                if not w.alive():  # failed fatally or killed: replaced, same transactional id
                    workers[k] = Worker(restarted.bootstrap, group, w.tid, "classic")
                    progress[w.tid] = (0, time.monotonic())
            return False

        wait_for(done, 240, "the group to consume all input after the restart")
        got = read_output(restarted.bootstrap)
        assert got == expected(), (
            f"missing {sorted(expected() - got)[:5]}, duplicated "
            f"{[v for v, n in got.items() if n > 1][:5]}")
        assert group_offsets(restarted.bootstrap, group) == {
            p: N // PARTITIONS for p in range(PARTITIONS)}
    finally:
        for w in workers:
            w.stop()
