"""Server benchmarks over loopback (docs/design.md "Benchmarks").

``heartbeats``: a real ``groupcoord serve`` subprocess (memory record log: steady-state
heartbeats write no records, so the log kind does not matter), ``members`` consumer-protocol
members in ``groups`` groups on one topic. Every member joins (ConsumerGroupHeartbeat v1, epoch
0, client-generated member id as librdkafka does) and heartbeats, acknowledging its assignment,
until every member is stable at the group epoch. Then steady-state heartbeats (only group id,
member id and epoch set, every other field null, as clients send them) are pipelined over
``connections`` connections, ``window`` requests in flight per connection, for ``seconds``.
Reported: heartbeats per second (median of ``repeat`` runs), p99 and p50 latency in ms (from a
window's send to each response), the time the members took to join and converge, and
heartbeats per second of server CPU time (``/proc``; a figure that a busy machine disturbs less
than wall-clock throughput).

``convergence`` (full run only, needs confluent-kafka): ``consumers`` librdkafka consumers with
``group.protocol=consumer`` join one group on a ``partitions``-partition topic; time from the
first subscribe until every partition is assigned exactly once and every consumer holds a
non-empty share (each consumer's ``assignment()`` is read from the polling thread). Side by side
with librdkafka's own mock cluster (``test.mock.num.brokers=1``) running the same clients
(``peer.librdkafka-mock...``).

``--security tls-scram`` (``groupcoord bench server --security tls-scram``, or ``both`` for the
two side by side): the same heartbeats on a SASL_SSL listener, every connection TLS (a throwaway
CA and server certificate, ``groupcoord.testing.certs``) authenticated with SCRAM-SHA-512
before it pipelines (``docs/security.md``); figures named ``heartbeats.tls-scram.*`` beside the
plaintext ``heartbeats.*``. The connections are made before the timing starts: the figure is
the cost of TLS on every frame, not of the handshakes.

The client side is a small hand-written pipeline over non-blocking sockets (requests encoded
once, correlation ids patched in place) so it is not the bottleneck; client and server share
the machine's cores.
"""

from __future__ import annotations

import os
import selectors
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._harness import Result, stop_process
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, encode_request, request_class
from groupcoord.protocol.versions import ApiKey

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]


# ------------------------------------------------------------------------------ server process


@dataclass
class _Server:
    proc: subprocess.Popen[str]
    host: str
    port: int
    #: KafkaClient options for the listener (TLS context, SASL credentials), or none.
    client_kw: dict[str, Any] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self, **kw: Any) -> KafkaClient:
        return KafkaClient(self.bootstrap, **kw, **self.client_kw)

    def stop(self) -> None:
        stop_process(self.proc)


#: The benchmark user of ``--security tls-scram``.
_USER, _PASSWORD, _MECHANISM = "bench", "bench-secret", "SCRAM-SHA-512"


def _secure_args(data_dir: Path) -> tuple[list[str], dict[str, Any]]:
    """serve arguments for a SASL_SSL listener (certificates and a SCRAM user made in
    ``data_dir``) and the KafkaClient options to reach it."""
    from groupcoord.server.security.acls import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclStore,
        PatternType,
        PermissionType,
        ResourcePattern,
        ResourceType,
    )
    from groupcoord.server.security.credentials import CredentialStore
    from groupcoord.testing.certs import make_certs

    certs = make_certs(data_dir / "certs")
    CredentialStore(data_dir).add(_USER, _MECHANISM, _PASSWORD)
    # A server with authentication denies what no ACL allows (docs/acls.md): the bench user is
    # granted everything on every group, topic and the cluster, so each heartbeat goes through
    # the authorizer as it would in a deployment with ACLs (a super user would skip it).
    allow = AccessControlEntry(f"User:{_USER}", "*", AclOperation.ALL, PermissionType.ALLOW)
    AclStore.in_dir(data_dir).add(
        AclBinding(ResourcePattern(rtype, name, PatternType.LITERAL), allow)
        for rtype, name in ((ResourceType.GROUP, "*"), (ResourceType.TOPIC, "*"),
                            (ResourceType.CLUSTER, "kafka-cluster")))
    args = ["--listener", "SASL_SSL://127.0.0.1:0",
            "--config", f"ssl.keystore.location={certs.server}",
            "--config", f"sasl.enabled.mechanisms={_MECHANISM}"]
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    return args, {"ssl_context": ctx, "sasl": (_MECHANISM, _USER, _PASSWORD)}


def _start_server(data_dir: Path, *extra: str, secure: bool = False) -> _Server:
    listen = ["--host", "127.0.0.1", "--port", "0"]
    client_kw: dict[str, Any] = {}
    if secure:
        listen, client_kw = _secure_args(data_dir)
    cmd = [*_CMD, "serve", *listen, "--data-dir", str(data_dir), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    host, _, port = line.split()[-1].rpartition("://")[2].rpartition(":")
    return _Server(proc, host, int(port), client_kw)


# ------------------------------------------------------------------------------ heartbeats


@dataclass
class _Member:
    group: str
    member_id: str
    epoch: int = 0
    owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] = ()


def _hb_request(m: _Member, full: bool, topic: str, rebalance_ms: int = 300_000) -> Any:
    cls = request_class(HB, 1)
    assert cls is not None
    if m.epoch == 0:
        return build(cls, group_id=m.group, member_id=m.member_id, member_epoch=0,
                     rebalance_timeout=rebalance_ms, subscribed_topic_names=[topic],
                     topic_partitions=[])
    tps = ([{"topic_id": t, "partitions": ps} for t, ps in m.owned] if full else None)
    return build(cls, group_id=m.group, member_id=m.member_id, member_epoch=m.epoch,
                 topic_partitions=tps)


def _join_and_converge(server: _Server, members: list[_Member], topic: str,
                       timeout: float = 300.0) -> int:
    """Join every member and heartbeat until all are stable; returns the rounds it took."""
    rounds = 0
    with server.client(client_id="bench-join", timeout=60) as c:
        deadline = time.monotonic() + timeout
        while True:
            rounds += 1
            responses = []
            for i in range(0, len(members), 200):
                chunk = members[i:i + 200]
                responses.extend(c.send_many([_hb_request(m, True, topic) for m in chunk]))
            changed = False
            for m, r in zip(members, responses, strict=True):
                if int(r.error_code) != 0:
                    raise RuntimeError(f"heartbeat of {m.member_id}: {r.error_code} {r.error_message}")
                if int(r.member_epoch) != m.epoch:
                    m.epoch = int(r.member_epoch)
                    changed = True
                if r.assignment is not None:
                    owned = tuple(sorted((tp.topic_id, tuple(sorted(int(p) for p in tp.partitions)))
                                         for tp in r.assignment.topic_partitions))
                    if owned != m.owned:
                        m.owned = owned
                        changed = True
            if not changed:
                return rounds
            if time.monotonic() > deadline:
                raise RuntimeError("members did not converge")


def _steady_frames(members: list[_Member], topic: str) -> list[bytearray]:
    return [bytearray(encode_request(_hb_request(m, False, topic), 0, "bench")) for m in members]


def _pipeline(connect: Callable[[], socket.socket], frames_per_conn: list[list[bytearray]],
              window: int, seconds: float) -> tuple[int, list[float]]:
    """Send heartbeats for ``seconds``: per connection, ``window`` in flight at a time.
    ``connect`` gives a connected socket, plain or TLS (authenticated already)."""
    sel = selectors.DefaultSelector()
    conns = []
    for frames in frames_per_conn:
        s = connect()
        s.setblocking(False)
        conns.append({"sock": s, "frames": frames, "next": 0, "corr": 0, "buf": bytearray(),
                      "outstanding": 0, "sent_at": 0.0, "out": b""})
        sel.register(s, selectors.EVENT_READ, conns[-1])
    latencies: list[float] = []
    done = 0
    pack_corr = struct.Struct(">i").pack_into
    end = time.perf_counter() + seconds

    def send_window(c: dict[str, Any]) -> None:
        frames = c["frames"]
        out = bytearray()
        for _ in range(window):
            f = frames[c["next"]]
            c["next"] = (c["next"] + 1) % len(frames)
            c["corr"] += 1
            pack_corr(f, 8, c["corr"])
            out += f
        c["outstanding"] = window
        c["sent_at"] = time.perf_counter()
        s: socket.socket = c["sock"]
        s.setblocking(True)
        s.sendall(out)
        s.setblocking(False)

    for c in conns:
        send_window(c)
    while conns:
        for key, _ in sel.select(timeout=5):
            c = key.data
            s = c["sock"]
            try:
                data = s.recv(1 << 20)
                # TLS: records already decrypted do not wake the selector again
                while isinstance(s, ssl.SSLSocket) and s.pending():
                    data += s.recv(s.pending())
            except (BlockingIOError, ssl.SSLWantReadError):
                continue
            if not data:
                raise RuntimeError("server closed a benchmark connection")
            buf = c["buf"]
            buf += data
            pos = 0
            now = time.perf_counter()
            while len(buf) - pos >= 4:
                (size,) = struct.unpack_from(">i", buf, pos)
                if len(buf) - pos - 4 < size:
                    break
                # response header v1: corr id, tagged fields (1 byte); body: throttle, error code
                (err,) = struct.unpack_from(">h", buf, pos + 4 + 4 + 1 + 4)
                if err != 0:
                    raise RuntimeError(f"heartbeat error {err}")
                latencies.append(now - c["sent_at"])
                done += 1
                c["outstanding"] -= 1
                pos += 4 + size
            del buf[:pos]
            if c["outstanding"] == 0:
                if now < end:
                    send_window(c)
                else:
                    sel.unregister(s)
                    s.close()
                    conns.remove(c)
    return done, latencies


def _connector(server: _Server) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        if server.client_kw:  # TLS + SCRAM: the authenticated socket of a KafkaClient
            c = server.client(client_id="bench")
            sock: socket.socket = c._sock
            return sock
        s = socket.create_connection((server.host, server.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    return connect


def bench_heartbeats(members: int, groups: int, partitions: int, connections: int, window: int,
                     seconds: float, repeat: int, security: str = "plaintext") -> list[Result]:
    """``security``: ``plaintext`` or ``tls-scram`` (module doc)."""
    with tempfile.TemporaryDirectory(prefix="gc-bench-") as tmp:
        # The join loop takes a round without change for convergence: every join must reach
        # the next target at once (no assignment interval; Kafka 4.3's default is 1000 ms).
        server = _start_server(Path(tmp), "--storage", "memory", "--shards", "4",
                               "--config", "group.consumer.session.timeout.ms=60000",
                               "--config", "group.consumer.max.session.timeout.ms=120000",
                               "--config", "group.consumer.assignment.interval.ms=0",
                               secure=security == "tls-scram")
        try:
            topic = "bench-topic"
            with server.client() as c:
                c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                    {"name": topic, "num_partitions": partitions, "replication_factor": 1}])
            ms = [_Member(f"bench-group-{i % groups}", str(uuid.uuid4())) for i in range(members)]
            t0 = time.perf_counter()
            rounds = _join_and_converge(server, ms, topic)
            join_ms = (time.perf_counter() - t0) * 1000
            frames = _steady_frames(ms, topic)
            per_conn = [frames[i::connections] for i in range(connections)]
            rates, p99s, p50s, per_cpu = [], [], [], []
            for _ in range(repeat):
                cpu0 = _cpu_seconds(server.proc.pid)
                t = time.perf_counter()
                done, lat = _pipeline(_connector(server), per_conn, window, seconds)
                elapsed = time.perf_counter() - t
                cpu1 = _cpu_seconds(server.proc.pid)
                rates.append(done / elapsed)
                if cpu0 is not None and cpu1 is not None and cpu1 > cpu0:
                    per_cpu.append(done / (cpu1 - cpu0))
                lat.sort()
                p99s.append(lat[int(len(lat) * 0.99)] * 1000)
                p50s.append(lat[len(lat) // 2] * 1000)
        finally:
            server.stop()
    params = {"members": members, "groups": groups, "partitions": partitions,
              "connections": connections, "window": window, "seconds": seconds,
              "repeat": repeat, "cpus": os.cpu_count(), "security": security}
    suffix = f"members={members}.groups={groups}"
    family = "heartbeats" if security == "plaintext" else f"heartbeats.{security}"
    results = [
        Result(f"{family}.steady.{suffix}", statistics.median(rates), "per_s", params),
        Result(f"{family}.steady.p99.{suffix}", statistics.median(p99s), "ms", params),
        Result(f"{family}.steady.p50.{suffix}", statistics.median(p50s), "ms", params),
        Result(f"{family}.join_and_converge.{suffix}", join_ms, "ms", {**params, "rounds": rounds}),
    ]
    if per_cpu:  # throughput per second of server CPU: less sensitive to a busy machine
        results.append(Result(f"{family}.steady.per_server_cpu_second.{suffix}",
                              statistics.median(per_cpu), "per_s", params))
    return results


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


# ------------------------------------------------------------------------------ convergence


def _converge_consumers(bootstrap: str, topics: list[str], group: str, consumers: int,
                        partitions: int, quiet_s: float, timeout: float) -> tuple[float, int]:
    """(ms from the first subscribe to the last assignment change, idle consumers at the end).

    The end is a state where every partition is assigned to exactly one consumer and no
    assignment changes for ``quiet_s`` seconds (the quiet period is not counted)."""
    import confluent_kafka as ck

    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "topic.metadata.refresh.interval.ms": 1000, "enable.auto.commit": False,
            "log_level": 0}
    cs = [ck.Consumer({**conf, "client.id": f"bench-{i}"}) for i in range(consumers)]
    try:
        t0 = time.perf_counter()
        for c in cs:
            c.subscribe(topics)
        last: list[frozenset[tuple[str, int]]] = [frozenset()] * consumers
        last_change = t0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = time.perf_counter()
            for i, c in enumerate(cs):
                c.poll(0)
                a = frozenset((tp.topic, tp.partition) for tp in c.assignment())
                if a != last[i]:
                    last[i] = a
                    last_change = now
            owned = [tp for a in last for tp in a]
            complete = len(owned) == partitions and len(set(owned)) == partitions
            if complete and now - last_change >= quiet_s:
                return (last_change - t0) * 1000, sum(1 for a in last if not a)
            time.sleep(0.005)
        owned = [tp for a in last for tp in a]
        raise RuntimeError(f"{consumers} consumers did not converge in {timeout}s on {bootstrap}: "
                           f"{len(set(owned))} of {partitions} partitions owned "
                           f"({len(owned) - len(set(owned))} twice), last change "
                           f"{time.perf_counter() - last_change:.1f}s ago")
    finally:
        # close in parallel: a serial close of 50 consumers is itself a string of rebalances
        threads = [threading.Thread(target=c.close) for c in cs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)


def bench_convergence(consumers: int, partitions: int, repeat: int, quiet_s: float = 3.0,
                      timeout: float = 180.0) -> list[Result]:
    """Ours on one topic of ``partitions`` partitions and, like the mock cluster (whose topics
    are auto-created with 4 partitions), on ``partitions / 4`` topics of 4; then the mock."""
    try:
        import confluent_kafka as ck
    except ImportError:
        return []
    results: list[Result] = []
    n_topics = partitions // 4
    params = {"consumers": consumers, "partitions": partitions, "repeat": repeat,
              "quiet_s": quiet_s}
    suffix = f"consumers={consumers}.partitions={partitions}"
    with tempfile.TemporaryDirectory(prefix="gc-bench-") as tmp:
        server = _start_server(Path(tmp), "--storage", "sqlite",
                               "--config", "group.consumer.min.heartbeat.interval.ms=100",
                               "--config", "group.consumer.heartbeat.interval.ms=500")
        try:
            for layout in ("topics=1", f"topics={n_topics}"):
                samples, idle = [], []
                for r in range(repeat):
                    if layout == "topics=1":
                        topics = [f"conv-{r}"]
                        specs = [{"name": topics[0], "num_partitions": partitions,
                                  "replication_factor": 1}]
                    else:
                        topics = [f"conv4-{r}-{k}" for k in range(n_topics)]
                        specs = [{"name": t, "num_partitions": 4, "replication_factor": 1}
                                 for t in topics]
                    with KafkaClient(server.bootstrap) as c:
                        c.call(ApiKey.CREATE_TOPICS, 7, topics=specs)
                    ms, n_idle = _converge_consumers(server.bootstrap, topics, f"conv-g-{layout}-{r}",
                                                     consumers, partitions, quiet_s, timeout)
                    samples.append(ms)
                    idle.append(n_idle)
                results.append(Result(
                    f"convergence.{layout}.{suffix}", statistics.median(samples), "ms",
                    {**params, "heartbeat_interval_ms": 500, "idle_consumers": max(idle),
                     "samples_ms": [round(x) for x in samples]}))
        finally:
            server.stop()
    # librdkafka's mock cluster: in-process, its own coordinator and heartbeat interval
    samples, idle = [], []
    for r in range(repeat):
        owner = ck.Producer({"test.mock.num.brokers": 1, "log_level": 0})  # owns the cluster
        md = owner.list_topics(timeout=10)
        b = next(iter(md.brokers.values()))
        bootstrap = f"{b.host}:{b.port}"
        topics = [f"conv4-{r}-{k}" for k in range(n_topics)]
        for t in topics:  # auto-created by a metadata request, 4 partitions each
            owner.list_topics(topic=t, timeout=10)
        ms, n_idle = _converge_consumers(bootstrap, topics, f"conv-g-{r}", consumers, partitions,
                                         quiet_s, timeout)
        samples.append(ms)
        idle.append(n_idle)
        del owner
    results.append(Result(f"peer.librdkafka-mock.convergence.topics={n_topics}.{suffix}",
                          statistics.median(samples), "ms",
                          {**params, "idle_consumers": max(idle),
                           "samples_ms": [round(x) for x in samples]}))
    return results


# ------------------------------------------------------------------------------ entry point


#: ``--security`` choices of this benchmark (``groupcoord bench server --security ...``).
SECURITY = ("plaintext", "tls-scram", "both")


def run(quick: bool = False, security: str = "plaintext") -> list[Result]:
    """``security``: heartbeats over ``plaintext`` (default), ``tls-scram`` (SASL_SSL with
    SCRAM-SHA-512; the convergence benchmark is not run), or ``both`` side by side."""
    if security not in SECURITY:
        raise ValueError(f"--security must be one of {', '.join(SECURITY)}, got {security!r}")
    kinds = ["plaintext", "tls-scram"] if security == "both" else [security]
    results: list[Result] = []
    for kind in kinds:
        if quick:
            results += bench_heartbeats(members=200, groups=2, partitions=200, connections=4,
                                        window=32, seconds=1.0, repeat=3, security=kind)
        else:
            results += bench_heartbeats(members=1000, groups=10, partitions=1000, connections=8,
                                        window=64, seconds=3.0, repeat=3, security=kind)
    if quick or security == "tls-scram":
        return results
    try:
        results += bench_convergence(consumers=50, partitions=500, repeat=3)
    except Exception as e:  # a peer problem must not lose the heartbeat figures
        print(f"convergence benchmark failed: {e}", file=sys.stderr)
    return results
