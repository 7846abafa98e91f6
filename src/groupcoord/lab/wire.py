"""A lab scenario on the wire: ``groupcoord serve`` and real clients in their own processes.

:func:`run_wire` plays a simulator scenario (``sim.scenario``) in wall-clock time against a
``groupcoord serve --port 0 --storage memory`` subprocess, with

- consumers (``classic:eager``, ``classic:cooperative``, ``consumer:*``): one
  :mod:`groupcoord.lab.wire_member` process per member (confluent-kafka, librdkafka; with
  ``client="java"`` a JVM per member running Apache Kafka's Java client, ``lab.wire_java``,
  which says ``ready`` once its classes are loaded and is started ``JAVA_PRESTART_S`` ahead), and a
  producer in this process (librdkafka's own threads) that produces ``records_per_s`` records
  per second to every partition from the scenario's start;
- Connect workers (``connect:*``, ``classic-connect:*``): one ``groupcoord connect worker``
  process per member running the demo ``counter`` connector's tasks in work mode (each task a
  source of ``task_records_per_s`` records per second, ``processing_ms`` each; see
  ``client.connect.demo``); the scenario's topics become connectors as
  ``sim.scenario.connectors_as_topics`` does the other way round (a topic of P partitions is a
  connector with P - 1 tasks) unless the scenario has connectors.

Scenario events run at their times: ``bounce`` / ``rolling-bounce`` (SIGTERM: the member
closes, leaving the group; ``hard``: SIGKILL) and a new process with the same name after
``down_ms``, ``scale-out`` (new members ``c<N+1>``...), ``scale-in`` / ``leave`` (SIGTERM, no
restart), ``crash`` (SIGKILL: the member's session expires; with ``lost_host``, SIGSTOP: the
process hangs with its connections open, as a lost host's, until the run is over and every
member closes, when it is killed: nothing of it closes inside the run's windows), ``kill``
(SIGKILL), ``add-partitions`` (consumers only:
CreatePartitions, and the producer produces to the new partitions from then on, at
``records_per_s`` each like the old ones, so the topic's input grows with its partition count:
the simulator's ``growth_rate = "partition"``, which the calibration's simulated side runs,
``lab.calibrate.WIRE_GROWTH_RATE``, not the paper grids' fixed topic rate; a classic member
sees them at its next metadata refresh, ``metadata_max_age_ms``), ``remove-connector`` (Connect only: the
connector is deleted through the config topic, its tasks stop counting from then on), ``slow``
(consumers only: the named member's process, or every one with ``all``, running at the event's
time sleeps ``delay_ms`` in its revocation callback, after its commit, for ``duration_ms``:
:func:`slow_windows`, ``wire_member --slow``; no action of the harness's own, its window is
over at once as in the simulator).
Every process is started ahead of its time (``PRESTART_S``, a Connect worker
``CONNECT_PRESTART_S``) and waits for a ``go`` line, so Python's start-up
(imports: half a second for a consumer, 1.6 s of CPU for a Connect worker, 8-9 s for three
started together on the loaded machine) does not delay a join; members that start at the same
time (a scale-out) are all started ahead. A Connect worker says ``ready`` once its imports are
done; one that is not ready at its time goes when it is (the progress says how late). Other
event kinds are refused (:class:`WireError`).

After the last disturbance the run goes on until the group has converged (``lab.wire_metrics``'
rule, asked every half second of the logs' membership lines only, each line read once:
:class:`MembershipTail`; the producer is a thread of this interpreter, and parsing every
record line again at each check delayed its ticks) and ``tail_s`` more, then every member
closes and the server stops. The result (:class:`WireRun`) holds the parsed logs;
``lab.wire_metrics`` turns them into the lab's metrics. With ``keep_dir`` the run also stores
``harness.json`` (:func:`harness_timing`: the producer's late ticks, the checks' durations).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.lab.wire_idle import IdleWatch, idle_events
from groupcoord.lab.wire_java import JavaClient, java_client
from groupcoord.lab.wire_metrics import converged_now
from groupcoord.lab.wire_run import WireRun, WireWindow, iter_records
from groupcoord.sim.engine import member_ids
from groupcoord.sim.network import NO_FAULTS
from groupcoord.sim.scenario import Scenario, pick_owner, start_offsets_ms

#: ``groupcoord`` as its console script runs it (``-m groupcoord.cli`` would import the CLI
#: module twice and miss the registered commands).
GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
MEMBER = [sys.executable, "-m", "groupcoord.lab.wire_member"]
#: ``groupcoord ARGS`` once a ``go`` line arrives on stdin (the CLI imported before; a
#: ``ready`` line on stdout says the imports are done).
GROUPCOORD_AFTER_GO = [sys.executable, "-c",
                       "import sys; from groupcoord.cli import build_parser, main; build_parser(); "
                       "print('ready', flush=True); "
                       "sys.exit(main(sys.argv[1:]) if sys.stdin.readline().strip() == 'go' "
                       "else 0)"]
#: How long before its time a consumer process is started (it then waits for ``go``).
PRESTART_S = 3.0
#: The same for a Connect worker process: importing the CLI takes 1.6 s of CPU, and three
#: workers started together on the loaded 2-core machine were ready only 8-9 s later (with
#: 3 s ahead they joined 6-8 s after their time: the harness's delay, not the protocol's).
CONNECT_PRESTART_S = 15.0
#: The same for a Java member (``lab.wire_java``): a JVM's start and the client's class
#: loading, several JVMs at once on the loaded 2-core machine (it says ``ready`` when done).
JAVA_PRESTART_S = 8.0
#: The consumer members' client libraries: librdkafka (confluent-kafka,
#: ``lab.wire_member``) or Apache Kafka's Java client (``lab.wire_java``).
CLIENTS = ("librdkafka", "java")
#: How long ``go`` waits for a Connect worker that is not ready yet (then it goes anyway).
READY_TIMEOUT_S = 60.0
#: Wire protocols: the simulator's label -> (kind, client setting).
WIRE_PROTOCOLS: dict[str, tuple[str, str]] = {
    "classic:eager": ("consumer", "eager"),
    "classic:cooperative": ("consumer", "cooperative"),
    "consumer:uniform": ("consumer", "consumer"),
    "consumer:range": ("consumer", "consumer-range"),
    "connect:cooperative": ("connect", "connect"),
    "connect:eager": ("connect", "connect-eager"),
    "classic-connect:sessioned": ("connect", "sessioned"),
    "classic-connect:compatible": ("connect", "compatible"),
    "classic-connect:eager": ("connect", "eager"),
}
SUPPORTED_EVENTS = ("bounce", "rolling-bounce", "scale-out", "scale-in", "leave", "crash",
                    "kill", "add-partitions", "remove-connector", "slow")


class WireError(ValueError):
    """A scenario or parameter the wire run cannot play; the message names it."""


@dataclass(frozen=True, slots=True)
class WireWorkload:
    """The work the members do (the names of the lab's ``[workload]`` table)."""

    records_per_s: float = 10.0
    processing_ms: float = 10.0
    max_poll_records: int = 500
    auto_commit_interval_ms: int = 5_000
    task_start_ms: float = 0.0
    task_stop_ms: float = 0.0
    offset_flush_interval_ms: int = 60_000
    #: A classic consumer's periodic metadata refresh (``metadata.max.age.ms``; librdkafka's
    #: ``topic.metadata.refresh.interval.ms``): when it sees a topic's new partitions. The
    #: field's default, 5 min; the partition-added calibration shortens it on both sides.
    metadata_max_age_ms: int = 300_000


# ----------------------------------------------------------------------------- the server


@dataclass
class _Server:
    proc: subprocess.Popen[str]
    bootstrap: str
    stderr_path: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def server_configs(sc: Scenario, extra: dict[str, str]) -> dict[str, str]:
    """The broker configs that make the server run the scenario's timings, as the simulator's
    coordinator does (``sim.engine``: the scenario's session timeout and heartbeat interval,
    their bounds widened to include them), then ``extra``."""
    conf = {
        "group.consumer.session.timeout.ms": str(sc.session_timeout_ms),
        "group.consumer.min.session.timeout.ms": str(min(sc.session_timeout_ms, 45_000)),
        "group.consumer.max.session.timeout.ms": str(max(sc.session_timeout_ms, 60_000)),
        "group.consumer.heartbeat.interval.ms": str(sc.heartbeat_interval_ms),
        "group.consumer.min.heartbeat.interval.ms": str(min(sc.heartbeat_interval_ms, 5_000)),
        "group.consumer.max.heartbeat.interval.ms": str(max(sc.heartbeat_interval_ms, 15_000)),
        "group.min.session.timeout.ms": str(min(sc.session_timeout_ms, 6_000)),
        "group.consumer.assignment.interval.ms": str(sc.assignment_interval_ms),
    }
    conf.update(extra)
    return conf


def start_server(workdir: Path, configs: dict[str, str], timeout: float = 30.0,
                 verbose: bool = False) -> _Server:
    stderr_path = workdir / "server.stderr.log"
    cmd = [*GROUPCOORD, *(["-v"] if verbose else []), "serve", "--host", "127.0.0.1",
           "--port", "0", "--storage", "memory", "--data-dir", str(workdir / "data")]
    for k, v in configs.items():
        cmd += ["--config", f"{k}={v}"]
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout
                                                         else ""), daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or not line[0].startswith("listening on "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"groupcoord serve did not start: {line!r}\n"
                           f"{stderr_path.read_text()[-2000:]}")
    return _Server(proc, line[0].split()[-1], stderr_path)


def create_topics(bootstrap: str, topics: tuple[tuple[str, int], ...]) -> None:
    from groupcoord.protocol.client import KafkaClient
    from groupcoord.protocol.versions import ApiKey

    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": n, "num_partitions": p, "replication_factor": -1} for n, p in topics],
            timeout=10_000)
    for t in r.topics:
        if int(t.error_code) != 0:
            raise RuntimeError(f"cannot create topic {t.name}: error {t.error_code}")


# ----------------------------------------------------------------------------- the producer


class _Producer:
    """Produces ``rate`` records per second to every partition, from ``t0`` on, in ticks;
    remembers the cumulative count per partition at each tick (the lag's "produced")."""

    TICK_S = 0.02

    def __init__(self, bootstrap: str, topics: tuple[tuple[str, int], ...], rate: float) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                  "acks": 1, "enable.idempotence": False,
                                  "log_level": 2})
        self.parts = [(n, p) for n, count in topics for p in range(count)]
        self.rate = rate
        self.produced: dict[str, list[tuple[float, int]]] = {
            f"{n}-{p}": [] for n, p in self.parts}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="lab-producer", daemon=True)
        self.t0 = 0.0
        #: partition key -> when it started producing (wall clock): ``t0``, or when added
        self.since: dict[str, float] = {}
        self._lock = threading.Lock()

    def add_partitions(self, topic: str, old: int, new: int) -> None:
        """Produce to ``topic``'s partitions ``old .. new - 1`` from now on (the producer's
        metadata is refreshed first so that librdkafka knows them)."""
        self.producer.list_topics(topic, timeout=10)
        now = time.time()
        with self._lock:
            for p in range(old, new):
                key = f"{topic}-{p}"
                self.since[key] = now
                self.produced.setdefault(key, [])
            self.parts = [*self.parts, *((topic, p) for p in range(old, new))]

    def start(self, t0: float) -> None:
        self.t0 = t0
        self.thread.start()

    def _run(self) -> None:
        counts = dict.fromkeys(self.produced, 0)
        payload = b"x" * 16
        while not self.stop.is_set():
            now = time.time()
            with self._lock:
                parts = list(self.parts)
            for n, p in parts:
                key = f"{n}-{p}"
                counts.setdefault(key, 0)
                due = int((now - self.since.get(key, self.t0)) * self.rate)
                while counts[key] < due:
                    try:
                        self.producer.produce(n, payload, partition=p)
                    except BufferError:
                        self.producer.poll(0.05)
                        continue
                    counts[key] += 1
                self.produced[key].append((now, counts[key]))
            self.producer.poll(0)
            self.stop.wait(self.TICK_S)
        self.producer.flush(10)


# ----------------------------------------------------------------------------- members


@dataclass
class _Proc:
    name: str
    proc: subprocess.Popen[str]
    started: float | None = None
    stopped: float | None = None
    hard: bool = False
    #: SIGSTOP'd (a lost host: ``_Members.hang``); killed when the run closes its members.
    hung: bool = False
    stdout_lines: list[dict[str, Any]] = field(default_factory=list)
    reader: threading.Thread | None = None
    #: Set once the process has imported what it runs (Connect workers say ``ready``;
    #: None: the process does not say, a consumer's imports are quick).
    ready: threading.Event | None = None
    #: How long its ``go`` waited for it to be ready (seconds).
    late_s: float = 0.0


class _Members:
    """The member processes of one run, by name (a restart replaces the process)."""

    def __init__(self, run: _RunContext) -> None:
        self.run = run
        self.live: dict[str, _Proc] = {}
        self.pending: dict[str, _Proc] = {}  # started ahead, waiting for go
        self.done: list[_Proc] = []

    def prepare(self, name: str) -> None:
        if name in self.pending:
            return
        self.pending[name] = self.run.spawn(name)

    def go(self, name: str) -> float:
        """Start ``name`` now; how late it went (waiting for it to be ready), seconds."""
        self.prepare(name)
        p = self.pending.pop(name)
        if p.ready is not None and not p.ready.is_set():  # still importing: its time is now
            began = time.time()
            while not p.ready.wait(0.2) and p.proc.poll() is None \
                    and time.time() - began < READY_TIMEOUT_S:
                pass  # (a process that died before it was ready goes at once: it fails)
            p.late_s = time.time() - began
        assert p.proc.stdin is not None
        p.proc.stdin.write("go\n")
        p.proc.stdin.flush()
        p.started = time.time()
        self.live[name] = p
        return p.late_s

    def stop(self, name: str, hard: bool = False) -> None:
        p = self.live.pop(name, None)
        if p is None:
            return
        p.stopped = time.time()
        p.hard = hard
        p.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        self.done.append(p)

    def hang(self, name: str) -> None:
        """A lost host: SIGSTOP ``name``'s process. Nothing closes (its sockets stay open, so
        the server sees no disconnect; its heartbeats stop, so its session expires; what it
        had acquired waits for its lock); the process cannot come back, as it is killed, never
        continued, when the run closes its members (:meth:`close_all`)."""
        p = self.live.pop(name, None)
        if p is None:
            return
        p.stopped = time.time()
        p.hard = p.hung = True
        p.proc.send_signal(signal.SIGSTOP)
        self.done.append(p)

    def names(self) -> list[str]:
        return sorted(self.live, key=_member_order)

    def close_all(self, timeout: float = 30.0) -> None:
        for p in self.done:  # a hung process is killed (it never resumes)
            if p.hung and p.proc.poll() is None:
                with contextlib.suppress(OSError):
                    p.proc.send_signal(signal.SIGKILL)
        for name in list(self.live):
            self.stop(name)
        for p in self.pending.values():
            with contextlib.suppress(OSError, ValueError):
                assert p.proc.stdin is not None
                p.proc.stdin.close()
            self.done.append(p)
        self.pending.clear()
        deadline = time.time() + timeout
        for p in self.done:
            try:
                p.proc.wait(max(deadline - time.time(), 0.1))
            except subprocess.TimeoutExpired:
                p.proc.kill()
                p.proc.wait(10)
            if p.reader is not None:
                p.reader.join(5)


def _member_order(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


class _RunContext:
    def __init__(self, protocol: str, bootstrap: str, sc: Scenario, wl: WireWorkload,
                 workdir: Path, source_start: float, seed: int = 0,
                 verbose: bool = False, java: JavaClient | None = None) -> None:
        self.protocol = protocol
        #: the Java client when the consumers are Java members (None: librdkafka)
        self.java = java
        #: Connect workers log at INFO (their stderr log: joins, rounds, requests)
        self.verbose = verbose
        self.kind, self.client = WIRE_PROTOCOLS[protocol]
        self.bootstrap = bootstrap
        self.sc = sc
        self.wl = wl
        self.workdir = workdir
        self.source_start = source_start
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        (workdir / "offsets").mkdir(exist_ok=True)
        #: Member ids of the new protocol's workers, in start order: the simulator's for the
        #: same seed (``sim.engine.member_ids``), so that the coordinator chooses the same
        #: worker to compute assignments, and the same one after it, as in the simulator (with
        #: ids in name order the chosen worker's successor was always the next to bounce in a
        #: rolling bounce); and which process each id is (the demo's lines name the id).
        self.member_ids = member_ids(seed)
        self.names_by_id: dict[str, str] = {}
        #: KIP-848 consumer groups: the coordinator's view of the members that own nothing
        #: (``lab.wire_idle``; librdkafka logs no callback for an empty first assignment)
        self.idle: IdleWatch | None = None
        #: Each topic's partition count now (``add-partitions`` grows it), and when each
        #: partition added during the run appeared (wall clock).
        self.partitions: dict[str, int] = dict(sc.topics)
        self.since: dict[str, float] = {}
        #: when each connector deleted during the run (and each of its tasks) ceased to be
        self.until: dict[str, float] = {}

    def spawn(self, name: str) -> _Proc:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        err = open(self.logs / f"{name}.stderr.log", "a")  # noqa: SIM115 - the child's
        if self.kind == "consumer":
            sc, wl = self.sc, self.wl
            member = MEMBER if self.java is None else self.java.command(self.client)
            cmd = [*member, "--bootstrap", self.bootstrap, "--group", sc.group_id,
                   "--name", name, "--protocol", self.client,
                   "--topics", ",".join(sc.topics_subscribed()),
                   "--log", str(self.logs / f"{name}.jsonl"),
                   "--max-poll-records", str(wl.max_poll_records),
                   "--processing-ms", str(wl.processing_ms),
                   "--auto-commit-interval-ms", str(wl.auto_commit_interval_ms),
                   "--max-poll-interval-ms", str(sc.rebalance_timeout_ms),
                   "--session-timeout-ms", str(sc.session_timeout_ms),
                   "--heartbeat-interval-ms", str(sc.heartbeat_interval_ms),
                   "--metadata-max-age-ms", str(wl.metadata_max_age_ms), "--wait-go"]
            slow = slow_windows(sc, name, self.source_start)
            if slow:
                cmd += ["--slow", slow]
            java = self.java is not None
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE if java else subprocess.DEVNULL,
                                    stderr=err, text=True, env=env)
            err.close()
            if not java:
                return _Proc(name, proc)
            p = _Proc(name, proc, ready=threading.Event())  # the JVM says "ready"
            p.reader = threading.Thread(target=_read_worker_stdout, args=(p,), daemon=True)
            p.reader.start()
            return p
        cmd = [*GROUPCOORD_AFTER_GO, *(["-v"] if self.verbose else []), "connect", "worker",
               "--bootstrap-server", self.bootstrap, "--group", self.sc.group_id, "--client-id", name,
               "--scheduled-rebalance-max-delay-ms", str(self.sc.max_delay_ms),
               "--rebalance-timeout-ms", str(self.sc.rebalance_timeout_ms),
               "--output", str(self.workdir / "connect.jsonl")]
        if self.client.startswith("connect"):
            member_id = next(self.member_ids)
            self.names_by_id[member_id] = name
            cmd += ["--protocol", "connect", "--member-id", member_id,
                    "--assignor", "eager" if self.client == "connect-eager" else "cooperative"]
        else:
            cmd += ["--protocol", self.client,
                    "--session-timeout-ms", str(self.sc.session_timeout_ms),
                    "--heartbeat-interval-ms", str(self.sc.heartbeat_interval_ms)]
        for k, v in connect_task_config(self.wl, self.source_start,
                                        self.workdir / "offsets").items():
            cmd += ["--config", f"{k}={v}"]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, text=True, env=env)
        err.close()
        p = _Proc(name, proc, ready=threading.Event())
        p.reader = threading.Thread(target=_read_worker_stdout, args=(p,), daemon=True)
        p.reader.start()
        return p


def train_java(java: JavaClient, protocols: list[str], progress: Any = None,
               run_s: float = 12.0) -> None:
    """Make the class-data archive of each of ``protocols``' Java members that has none: one
    member per protocol, each in its own group on a server of its own, joins, consumes for
    ``run_s`` and closes, and its JVM writes the classes it loaded to the archive as it exits
    (``lab.wire_java``). A restarted Java member then starts from the archive: on the loaded
    2-core machine a JVM's first poll (class loading) took 1.0-1.6 s from ``go`` to its
    JoinGroup, which is the harness's start-up, not the protocol's. Once per build."""
    todo = [p for p in protocols if not java.archive(p).exists()]
    if not todo:
        return
    if progress is not None:
        progress(f"java: training the class-data archive of {', '.join(todo)} members")
    workdir = Path(tempfile.mkdtemp(prefix="gc-java-train-"))
    server = start_server(workdir, {})
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    producer: _Producer | None = None
    try:
        create_topics(server.bootstrap, (("warm", 4),))
        producer = _Producer(server.bootstrap, (("warm", 4),), 20.0)
        producer.start(time.time())
        for p in todo:
            tmp = java.archive(p).with_suffix(f".{os.getpid()}.tmp")
            cmd = [*java.command(train=tmp), "--bootstrap", server.bootstrap, "--group",
                   f"train-{p}", "--name", f"train-{p}", "--protocol", p, "--topics", "warm",
                   "--log", str(workdir / f"{p}.jsonl"), "--processing-ms", "1",
                   "--auto-commit-interval-ms", "1000"]
            with open(workdir / f"{p}.stderr.log", "w") as err:
                procs.append((p, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)))
        time.sleep(run_s)
        for _, proc in procs:
            proc.send_signal(signal.SIGTERM)
        for p, proc in procs:
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            tmp = java.archive(p).with_suffix(f".{os.getpid()}.tmp")
            if tmp.exists():
                tmp.replace(java.archive(p))
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
        if producer is not None:
            producer.stop.set()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def connect_task_config(wl: WireWorkload, source_start: float, offsets: Path) -> dict[str, str]:
    return {"records.per.s": repr(wl.records_per_s), "processing.ms": repr(wl.processing_ms),
            "source.start": repr(source_start), "offsets.dir": str(offsets),
            "offset.flush.interval.ms": str(wl.offset_flush_interval_ms),
            "task.start.ms": repr(wl.task_start_ms), "task.stop.ms": repr(wl.task_stop_ms)}


def _read_worker_stdout(p: _Proc) -> None:
    """The worker prints ``assigned: a, b`` / ``revoked: ...`` / ``lost: ...`` per callback;
    stamp each with the time it is read (the worker flushes every line). ``ready`` (before
    ``go``) sets the process's ready event."""
    assert p.proc.stdout is not None
    for line in p.proc.stdout:
        t = time.time()
        if line.strip() == "ready" and p.ready is not None:
            p.ready.set()
            continue
        head, sep, rest = line.rstrip("\n").partition(": ")
        if sep and head in ("assigned", "revoked", "lost"):
            items = [s for s in (x.strip() for x in rest.split(",")) if s]
            event = {"assigned": "assign", "revoked": "revoke", "lost": "lost"}[head]
            p.stdout_lines.append({"t": t, "e": event, "parts": items})
        elif line.startswith("worker ") and " left " in line:
            p.stdout_lines.append({"t": t, "e": "closed"})
        elif line.startswith("worker ") and " joining " in line:
            p.stdout_lines.append({"t": t, "e": "joining"})


# ----------------------------------------------------------------------------- the timeline


def connectors_of(sc: Scenario) -> tuple[tuple[str, int], ...]:
    """The Connect form of a scenario: its connectors, or a connector with P - 1 tasks per
    topic of P partitions (the inverse of ``connectors_as_topics``)."""
    if sc.connectors:
        return sc.connectors
    return tuple((n, max(p - 1, 1)) for n, p in sc.topics)


def slow_windows(sc: Scenario, name: str, t0: float) -> str:
    """The ``slow`` events that concern member ``name``, as ``wire_member --slow`` takes them
    (wall-clock ``FROM:UNTIL:DELAY_MS``, the run starting at ``t0``); the member applies one
    only if its process was running when it began, as the simulator marks the live process."""
    return ",".join(f"{t0 + e.at_ms / 1000:.3f}:{t0 + (e.at_ms + int(e['duration_ms'])) / 1000:.3f}:"
                    f"{int(e['delay_ms'])}" for e in sc.events
                    if e.kind == "slow" and e["member"] in (name, "all"))


def check_playable(sc: Scenario) -> None:
    """WireError naming what of ``sc`` the wire cannot play."""
    _actions(sc)


def _actions(sc: Scenario, seed: int = 0, lost_host: bool = False,
             owner_at_event: bool = False
             ) -> tuple[list[tuple[float, str, str, bool]], list[WireWindow]]:
    """(time s, action, member, hard) in time order, with the disturbance windows. Actions:
    ``go`` (start a member), ``stop``, ``hang`` (``lost_host``: a ``crash`` is SIGSTOP, the
    simulator's lost host, while ``kill`` stays SIGKILL), ``grow`` (its "member" is
    ``TOPIC=PARTITIONS``, the new count). ``owner_at_event``: an ``@owner`` member is left as
    ``@owner@AT_MS`` for the run to draw at the event's time among the members that own a
    partition then (a consumer group with more members than partitions has idle members, which
    only the run's own assignments tell). The initial members start when the simulator starts
    them with the same seed (``sim.scenario.start_offsets_ms``: the same phases)."""
    if sc.static:
        raise WireError("static membership (group.static) is not played on the wire")
    if sc.regex is not None:
        raise WireError("regex subscriptions (group.regex) are not played on the wire")
    if sc.faults != NO_FAULTS:
        raise WireError("network faults ([network]) are not played on the wire")
    if sc.connectors and any(e.kind == "add-partitions" for e in sc.events):
        raise WireError("add-partitions is played for consumer groups only")
    if not sc.connectors and any(e.kind == "remove-connector" for e in sc.events):
        raise WireError("remove-connector is played for Connect groups (a scenario with "
                        "connectors) only")
    acts: list[tuple[float, str, str, bool]] = []
    windows: list[WireWindow] = []
    names = [f"c{i}" for i in range(1, sc.members + 1)]
    for n, at_ms in zip(names, start_offsets_ms(sc, seed), strict=True):
        acts.append((at_ms / 1000, "go", n, False))
    live = list(names)
    created = sc.members
    windows.append(WireWindow("initial-join", 0.0, (max(sc.members - 1, 0) * sc.join_stagger_ms
                                                 + (sc.start_spread_ms or 0)) / 1000))
    for e in sorted(sc.events, key=lambda e: e.at_ms):
        if e.kind not in SUPPORTED_EVENTS:
            raise WireError(f"event kind {e.kind!r} is not played on the wire (supported: "
                            f"{', '.join(SUPPORTED_EVENTS)})")
        at = e.at_ms / 1000
        windows.append(WireWindow(e.kind, at, at + e.settle_ms(len(live)) / 1000))
        if e.kind in ("bounce", "rolling-bounce"):
            order = [str(e["member"])] if e.kind == "bounce" else sorted(live, key=_member_order)
            step = 0.0 if e.kind == "bounce" else int(e["interval_ms"]) / 1000
            for i, n in enumerate(order):
                acts.append((at + i * step, "stop", n, bool(e["hard"])))
                acts.append((at + i * step + int(e["down_ms"]) / 1000, "go", n, False))
        elif e.kind == "scale-out":
            for _ in range(int(e["count"])):
                created += 1
                live.append(f"c{created}")
                acts.append((at, "go", f"c{created}", False))
        elif e.kind == "add-partitions":
            if str(e["topic"]) not in dict(sc.topics):
                raise WireError(f"add-partitions: no topic {e['topic']!r} in the scenario")
            acts.append((at, "grow", f"{e['topic']}={int(e['partitions'])}", False))
        elif e.kind == "remove-connector":
            if str(e["connector"]) not in dict(sc.connectors):
                raise WireError(f"remove-connector: no connector {e['connector']!r} in the "
                                "scenario")
            acts.append((at, "delete", str(e["connector"]), False))
        elif e.kind == "slow":
            continue  # played by the members themselves (:func:`slow_windows`)
        elif e.kind == "scale-in":
            for n in sorted(live, key=_member_order)[-int(e["count"]):]:
                live.remove(n)
                acts.append((at, "stop", n, False))
        else:  # leave, crash, kill (kill -9; with lost_host a crash is SIGSTOP instead: the
            # host closes a killed process's connections, nothing of a hung one's)
            n = str(e["member"])
            if n == "@owner" and owner_at_event:
                n = f"@owner@{e.at_ms}"
            elif n == "@owner":  # the simulator's draw (sim.scenario.pick_owner) among the live
                # members, each of which holds a partition when there are no more members than
                # partitions and with share groups' assignor at any size
                n = pick_owner(live, seed, e.at_ms) or n
            if n in live:
                live.remove(n)
            acts.append((at, "hang" if lost_host and e.kind == "crash" else "stop", n,
                         e.kind in ("crash", "kill")))
    acts.sort(key=lambda a: (a[0], a[1] not in ("stop", "hang")))
    return acts, windows


# ----------------------------------------------------------------------------- the run


def run_wire(sc: Scenario, protocol: str, wl: WireWorkload, *,
             extra_server_config: dict[str, str] | None = None, tail_s: float = 5.0,
             converge_timeout_s: float | None = None, keep_dir: Path | None = None,
             progress: Any = None, seed: int = 0, client: str = "librdkafka",
             lost_host: bool = False, owner_at_event: bool = False) -> WireRun:
    """Play ``sc`` on the wire with ``protocol``'s real clients (see the module doc);
    ``seed`` draws the initial members' start offsets as the simulator does. ``client``: the
    consumer members' library (``CLIENTS``; ``java`` needs the kafka-clients build of
    ``lab.wire_java``, the Connect protocols have only our worker).
    ``converge_timeout_s``: how long after the last disturbance the run waits for the group
    to converge (default 120 s plus the waits the protocol may add: a crashed member's session
    timeout, and for Connect KIP-415's ``scheduled.rebalance.max.delay.ms``). ``lost_host``: a
    ``crash`` is SIGSTOP (:meth:`_Members.hang`) rather than SIGKILL. ``owner_at_event``
    (consumer groups): an ``@owner`` event's member is drawn (``sim.scenario.pick_owner``, the
    simulator's draw) a second before its time among the live members that own a partition
    then, from their logs (:func:`owners_now`), rather than ahead among all members."""
    if protocol not in WIRE_PROTOCOLS:
        raise WireError(f"protocol {protocol!r} has no wire client (known: "
                        f"{', '.join(WIRE_PROTOCOLS)})")
    kind = WIRE_PROTOCOLS[protocol][0]
    if converge_timeout_s is None:
        converge_timeout_s = 120.0 + (sc.session_timeout_ms + (
            sc.max_delay_ms if kind == "connect" else 0)) / 1000
    if client not in CLIENTS:
        raise WireError(f"client {client!r} is not one of {', '.join(CLIENTS)}")
    if kind == "connect" and any(e.kind == "slow" for e in sc.events):
        raise WireError("slow is played for consumer groups only")
    java: JavaClient | None = None
    if client == "java":
        if kind != "consumer":
            raise WireError(f"protocol {protocol!r} has no Java client (the Java members are "
                            "consumers)")
        java = java_client()  # JavaClientMissing before starting anything
        train_java(java, [WIRE_PROTOCOLS[protocol][1]], progress)
    elif kind == "consumer":
        try:
            import confluent_kafka  # noqa: F401 - fail before starting anything
        except ImportError:
            raise RuntimeError("the consumer protocols need confluent-kafka on the wire "
                               "(pip install 'groupcoord[lab]')") from None
    acts, windows = _actions(sc, seed, lost_host, owner_at_event and kind == "consumer")
    configs = server_configs(sc, extra_server_config or {})
    workdir = Path(tempfile.mkdtemp(prefix="gc-calibrate-")) if keep_dir is None else keep_dir
    workdir.mkdir(parents=True, exist_ok=True)
    server = start_server(workdir, configs, verbose=keep_dir is not None)
    members: _Members | None = None
    producer: _Producer | None = None
    ctx: _RunContext | None = None
    try:
        if kind == "consumer":
            create_topics(server.bootstrap, sc.topics)
        else:
            _create_connectors(server.bootstrap, sc, protocol, workdir)
        prestart = (CONNECT_PRESTART_S if kind == "connect"
                    else JAVA_PRESTART_S if java is not None else PRESTART_S)
        t0 = time.time() + prestart
        ctx = _RunContext(protocol, server.bootstrap, sc, wl, workdir, t0, seed,
                          verbose=keep_dir is not None, java=java)
        members = _Members(ctx)
        if WIRE_PROTOCOLS[protocol][1] in ("consumer", "consumer-range"):
            ctx.idle = IdleWatch(server.bootstrap, sc.group_id)
            ctx.idle.start()
        if kind == "consumer":
            producer = _Producer(server.bootstrap, sc.topics, wl.records_per_s)
        prepared: set[int] = set()
        for j, a in enumerate(acts):  # the first members start ahead, like every later one
            if a[1] == "go" and a[0] < prestart:  # (their drawn start offsets included)
                prepared.add(j)
                members.prepare(a[2])
        time.sleep(max(t0 - time.time(), 0))
        if producer is not None:
            producer.start(t0)
        tail = MembershipTail(ctx.logs)
        for i, (at, action, name, hard) in enumerate(acts):
            if name.startswith("@owner@"):  # drawn among the owners a second before its time
                _sleep_until(t0 + at - 1.0)
                snap = _collect(ctx, members, None, t0, time.time(), windows, tail=tail)
                name = pick_owner(owners_now(snap, time.time()), seed,
                                  int(name.rsplit("@", 1)[1])) or "@owner"
                if progress is not None:
                    progress(f"{protocol}: @owner is {name} (drawn among the owners now)")
            while True:  # start every process due within `prestart`, then wait a little
                now = time.time()
                for j in range(i, len(acts)):
                    if acts[j][1] == "go" and j not in prepared and \
                            t0 + acts[j][0] - prestart <= now:
                        prepared.add(j)
                        members.prepare(acts[j][2])
                if now >= t0 + at:
                    break
                time.sleep(min(t0 + at - now, 0.05))
            if progress is not None:
                progress(f"{protocol}: t={time.time() - t0:6.1f} s {action} {name}")
            if action == "grow":
                _grow(ctx, producer, name)
            elif action == "delete":
                _delete_connector(ctx, protocol, name)
            elif action == "go":
                late = members.go(name)
                if late > 0.05:
                    extend_windows(windows, at, time.time() - t0)
                    if progress is not None:
                        progress(f"{protocol}: {name} was not ready at its time: went "
                                 f"{late:.1f} s late")
            elif action == "hang":
                members.hang(name)
            else:
                members.stop(name, hard)
        last = max((w.settle_s for w in windows), default=0.0)
        _sleep_until(t0 + last)
        deadline = time.time() + converge_timeout_s
        checks: list[tuple[float, float]] = []
        while time.time() < deadline:
            began = time.time()
            # the membership lines only, each read once (MembershipTail): the whole logs
            # parsed every half second held the producer thread (harness_timing)
            done = converged_now(_collect(ctx, members, None, t0, time.time(), windows,
                                          tail=tail))
            checks.append((began, time.time()))
            if done:
                break
            time.sleep(0.5)
        time.sleep(tail_s)
        end = time.time()
        members.close_all()
        if producer is not None:
            producer.stop.set()
            producer.thread.join(15)
        run = _collect(ctx, members, producer, t0, end, windows)
        if keep_dir is not None:
            (workdir / "harness.json").write_text(json.dumps(harness_timing(run, checks)))
        run.server_config = configs
        run.workdir = str(workdir)
        return run
    finally:
        if members is not None:
            members.close_all()
        if producer is not None:
            producer.stop.set()
        if ctx is not None and ctx.idle is not None:
            ctx.idle.close()
        server.stop()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


#: A producer tick later than this after the previous one (beyond ``_Producer.TICK_S``) is
#: counted late by :func:`late_ticks`.
LATE_TICK_S = 0.1


def producer_ticks(run: WireRun) -> list[float]:
    """The producer's tick times (wall clock; every partition is stamped at each tick)."""
    return sorted({t for steps in run.produced.values() for t, _ in steps})


def late_ticks(ticks: list[float], late_s: float = LATE_TICK_S) -> list[tuple[float, float]]:
    """(tick time, how late) of every producer tick that came more than ``late_s`` after its
    due time (the previous tick plus ``_Producer.TICK_S``): the harness's interpreter held the
    producer thread, and the tick then produced its share of records at once."""
    return [(b, b - a - _Producer.TICK_S) for a, b in itertools.pairwise(ticks)
            if b - a - _Producer.TICK_S > late_s]


def harness_timing(run: WireRun, checks: list[tuple[float, float]]) -> dict[str, Any]:
    """What ``--keep`` stores as ``harness.json``: the producer's late ticks and the closing
    check's calls, in seconds since t0 (how much the harness's own process delayed itself)."""
    ticks = producer_ticks(run)
    return {"t0": run.t0, "end": run.end, "ticks": len(ticks),
            "late_ticks": [(round(t - run.t0, 3), round(d, 3)) for t, d in late_ticks(ticks)],
            "checks": [(round(a - run.t0, 3), round(b - a, 3)) for a, b in checks],
            "windows": [(w.label, w.at_s, w.settle_s) for w in run.windows]}


def _grow(ctx: _RunContext, producer: _Producer | None, spec: str) -> None:
    """``TOPIC=N``: the topic grows to N partitions (CreatePartitions), the producer produces
    to the new ones from now on."""
    from groupcoord.protocol.client import KafkaClient
    from groupcoord.protocol.versions import ApiKey

    topic, _, count = spec.partition("=")
    old, new = ctx.partitions[topic], int(count)
    if new <= old:
        return
    with KafkaClient(ctx.bootstrap) as c:
        r = c.call(ApiKey.CREATE_PARTITIONS, 3, topics=[
            {"name": topic, "count": new, "assignments": None}], timeout=10_000,
            validate_only=False)
    for t in r.results:
        if int(t.error_code) != 0:
            raise RuntimeError(f"cannot add partitions to {topic}: error {t.error_code}")
    ctx.partitions[topic] = new
    now = time.time()
    for p in range(old, new):
        ctx.since[f"{topic}-{p}"] = now
    if producer is not None:
        producer.add_partitions(topic, old, new)


def _delete_connector(ctx: _RunContext, protocol: str, name: str) -> None:
    """Delete connector ``name`` (the connect group's config request, as ``groupcoord
    connectors delete`` sends it, from this process: a CLI subprocess would start a second
    late); it and its tasks cease to be once the coordinator answered."""
    from groupcoord.protocol.client import KafkaClient

    group = ctx.sc.group_id if protocol.startswith("connect:") else f"{ctx.sc.group_id}-configs"
    with KafkaClient(ctx.bootstrap) as c:
        r = c.connect_group_config(group, [{"op": _CONFIG_DELETE, "connector": name,
                                            "task_count": 0}])
    if int(r.error_code) != 0:
        raise RuntimeError(f"cannot delete connector {name}: error {r.error_code} "
                           f"{r.error_message or ''}")
    now = time.time()
    tasks = dict(connectors_of(ctx.sc)).get(name, 0)
    for res in (name, *(f"{name}-{i}" for i in range(tasks))):
        ctx.until[res] = now


#: The connect group config request's delete operation (``groupcoord connectors delete``).
_CONFIG_DELETE = 2


def extend_windows(windows: list[WireWindow], at_s: float, started_s: float) -> None:
    """A member due at ``at_s`` started only at ``started_s`` (it was still importing): the
    disturbances it is part of last until then, so that no window closes on a group that the
    member has not joined yet (a scale-out's window would otherwise close at once, converged
    without the new members)."""
    for w in windows:
        if w.at_s <= at_s <= w.settle_s and started_s > w.settle_s:
            w.settle_s = started_s


def _sleep_until(t: float) -> None:
    while (d := t - time.time()) > 0:
        time.sleep(min(d, 0.5))


def _create_connectors(bootstrap: str, sc: Scenario, protocol: str, workdir: Path) -> list[str]:
    group = sc.group_id if protocol.startswith("connect:") else f"{sc.group_id}-configs"
    resources: list[str] = []
    for name, tasks in connectors_of(sc):
        out = subprocess.run([*GROUPCOORD, "connect", "connectors", "create", name, "--tasks",
                              str(tasks), "--group", group, "--bootstrap-server", bootstrap],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"cannot create connector {name}: {out.stderr.strip()}")
        resources += [name, *(f"{name}-{i}" for i in range(tasks))]
    return resources


def owners_now(run: WireRun, t: float) -> list[str]:
    """The live members that own a resource at ``t`` (their logs' assignments), in name
    order."""
    from groupcoord.lab.wire_metrics import _states

    states = _states(run, t)
    owned = states[-1][2] if states else {}
    return sorted((n for n, rs in owned.items() if rs and any(
        s <= t and (e is None or t < e) for s, e in run.lifetimes.get(n, ()))),
        key=_member_order)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out


#: A member log's record line (``wire_member``, ``WireMember.java``: ``"e": "rec"``).
_RECORD_LINE = re.compile(r'"e":\s*"rec"')


class MembershipTail:
    """The consumer members' logs without their record lines, read incrementally: each call
    of :meth:`read` decodes only the lines appended since the last one, and keeps the lines
    that are not records (callbacks, ``closed``, ``start``: all that ``lab.wire_metrics``'s
    convergence reads, :func:`converged_now`). The run's closing check and its ``@owner``
    draw read the logs this way: parsing every record line of every log again each half
    second (the whole run's records, one JSON line each) held the harness's interpreter, of
    which the producer is a thread (:func:`harness_timing`)."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self._pos: dict[str, int] = {}
        self._lines: dict[str, list[dict[str, Any]]] = {}

    def read(self, name: str) -> list[dict[str, Any]]:
        """``name``'s membership lines so far (complete lines only: a line being written is
        read next time)."""
        lines = self._lines.setdefault(name, [])
        with contextlib.suppress(FileNotFoundError), \
                open(self.logs / f"{name}.jsonl", "rb") as f:
            f.seek(self._pos.get(name, 0))
            chunk = f.read()
            done = chunk.rfind(b"\n") + 1
            self._pos[name] = self._pos.get(name, 0) + done
            for raw in chunk[:done].decode("utf-8", "replace").splitlines():
                if _RECORD_LINE.search(raw):
                    continue
                with contextlib.suppress(json.JSONDecodeError):
                    lines.append(json.loads(raw))
        return list(lines)


def _collect(ctx: _RunContext, members: _Members, producer: _Producer | None, t0: float,
             end: float, windows: list[WireWindow], tail: MembershipTail | None = None
             ) -> WireRun:
    """The run so far from its logs; with ``tail``, its membership only (the consumers' logs
    without their records, nothing produced; Connect without the demo's record lines): what
    convergence reads, the same answer as from the whole logs at a fraction of the reading."""
    procs = [*members.done, *members.live.values()]
    lifetimes: dict[str, list[tuple[float, float | None]]] = {}
    killed: dict[str, list[float]] = {}
    for p in procs:
        if p.started is not None:
            lifetimes.setdefault(p.name, []).append((p.started, p.stopped))
            if p.hard and p.stopped is not None:
                killed.setdefault(p.name, []).append(p.stopped)
    logs: dict[str, list[dict[str, Any]]] = {}
    if ctx.kind == "consumer":
        for name in lifetimes:
            logs[name] = (_read_jsonl(ctx.logs / f"{name}.jsonl") if tail is None
                          else tail.read(name))
        if ctx.idle is not None:  # members that own nothing: the coordinator says so
            for name, lines in idle_events(ctx.idle.seen(), lifetimes).items():
                logs.setdefault(name, []).extend(lines)
        produced = {k: list(v) for k, v in producer.produced.items()} if producer else {}
        resources = [f"{n}-{p}" for n, c in ctx.partitions.items() for p in range(c)]
        groups = [[f"{n}-{p}" for p in range(c)] for n, c in ctx.partitions.items()]
    else:
        for p in procs:
            logs.setdefault(p.name, []).extend(list(p.stdout_lines))
        # the demo's output: worker = member id; map it to the process name by client id
        records = _read_jsonl(ctx.workdir / "connect.jsonl") if tail is None else []
        by_worker = {**_worker_names(records, lifetimes), **ctx.names_by_id}
        for r in records:
            if r.get("event") == "record":
                name = by_worker.get(str(r.get("worker")), str(r.get("worker")))
                logs.setdefault(name, []).append({"t": r["t"], "e": "rec", "tp": r["item"],
                                                  "o": r["count"]})
            elif r.get("event") in ("start", "stop") and "-" in str(r.get("item")):
                name = by_worker.get(str(r.get("worker")), str(r.get("worker")))
                logs.setdefault(name, []).append({"t": r["t"], "e": f"task-{r['event']}",
                                                  "tp": r["item"]})
        resources = [f"{n}-{i}" for n, c in connectors_of(ctx.sc) for i in range(c)]
        groups = [[n for n, _ in connectors_of(ctx.sc)], resources]
        produced = {}
        for name, lines in logs.items():  # a worker's process starts owning nothing
            lines.extend({"t": s, "e": "start"} for s, _ in lifetimes.get(name, ()))
    for name, ts in killed.items():  # a killed process owns nothing from then on
        logs.setdefault(name, []).extend({"t": t, "e": "closed"} for t in ts)
    for v in logs.values():
        v.sort(key=lambda d: d["t"])
    return WireRun(ctx.protocol, ctx.kind, t0, end, windows, produced, logs, lifetimes,
                   resources, groups, ctx.wl.records_per_s, ctx.source_start, ctx.wl.processing_ms,
                   since=dict(ctx.since), until=dict(ctx.until),
                   described=ctx.idle.answers() if ctx.idle is not None else [])


def _worker_names(records: list[dict[str, Any]], lifetimes: dict[str, list[tuple[float, float | None]]]
                  ) -> dict[str, str]:
    """Demo lines name the worker by member id: the classic worker's ids are ``CLIENT_ID-N``;
    map ids that start with a member's name to it (the new protocol's ids are the harness's
    own choice, ``_RunContext.names_by_id``)."""
    out: dict[str, str] = {}
    names = sorted(lifetimes, key=lambda n: -len(n))
    for r in records:
        w = str(r.get("worker"))
        if w in out:
            continue
        for n in names:
            if w == n or w.startswith(f"{n}-"):
                out[w] = n
                break
    return out


__all__ = [
    "WIRE_PROTOCOLS",
    "WireError",
    "WireRun",
    "WireWindow",
    "WireWorkload",
    "iter_records",
    "run_wire",
]
