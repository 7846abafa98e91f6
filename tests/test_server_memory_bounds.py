"""The memory a client's connection makes ``groupcoord serve`` hold is bounded whatever the client
does (``server/app.py``'s ``Connection``, docs/configuration.md "Connections and memory"):
pipelined requests whose responses it never reads, a stall of the server that lets them all
arrive at once, a reset in the middle of a response, a connection left idle with responses
waiting. Over the wire, against a subprocess server, on a plaintext and a TLS listener, reading
the server's RSS from /proc and the connection gauges of its metrics."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import struct
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, encode_request, request_class
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess
from .security_support import Certs, make_certs, start_secure_server

MIB = 1024 * 1024
#: The topic's size and how many Fetches of all of it the hostile client pipelines: without a
#: bound on the responses built for a connection, 48 x 8 MiB = 384 MiB.
TOPIC_MIB = 8
PIPELINED = 48
VALUE = 256 * 1024


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


Served = tuple[ServerProcess, dict[str, tuple[str, int]], str]


@contextlib.contextmanager
def _server(tmp_path: Path, certs: Certs, *configs: str) -> Iterator[Served]:
    """A server with a PLAINTEXT and an SSL listener and metrics: (process, addresses, url)."""
    extra = ["--metrics-port", "0", "--config", f"ssl.keystore.location={certs.server}",
             "--config", f"ssl.truststore.location={certs.ca}"]
    for c in configs:
        extra += ["--config", c]
    secure = start_secure_server(tmp_path / "data", ["PLAINTEXT://127.0.0.1:0",
                                                     "SSL://127.0.0.1:0"], *extra)
    srv = secure.server
    assert srv.proc.stdout is not None
    line = srv.proc.stdout.readline()
    assert line.startswith("metrics on "), line
    try:
        yield srv, secure.addresses, line.split()[-1]
    finally:
        if srv.proc.poll() is None:
            srv.proc.send_signal(signal.SIGCONT)
        srv.stop()
    assert "Traceback" not in srv.stderr(), srv.stderr()[-3000:]


def _bootstrap(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


def _metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _topic_of(bootstrap: str, mib: int) -> str:
    """A one-partition topic holding ``mib`` MiB of 256 KiB records, one per batch."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"big-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1})
    value = os.urandom(VALUE)
    for _ in range(mib * MIB // VALUE):
        producer.produce(topic, value)
        producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def _fetch(topic: str, max_bytes: int = 64 * MIB) -> object:
    cls = request_class(ApiKey.FETCH, 12)
    assert cls is not None
    return build(cls, replica_id=-1, max_wait=500, min_bytes=1, max_bytes=max_bytes,
                 isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                 forgotten_topics_data=[],
                 topics=[{"topic": topic, "partitions": [{
                     "partition": 0, "fetch_offset": 0, "partition_max_bytes": max_bytes,
                     "log_start_offset": -1, "current_leader_epoch": -1,
                     "last_fetched_epoch": -1}]}])


def _hostile(address: tuple[str, int], tls: ssl.SSLContext | None) -> socket.socket:
    """A client socket with the smallest receive buffer: it never reads."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(address)
    return s if tls is None else tls.wrap_socket(s, server_hostname="localhost")


def _reset(s: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0), as a client killed mid-response."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _wait_for(what: str, check: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_pipelined_fetches_never_read_after_a_stall_hold_one_response(
        tmp_path: Path, certs: Certs, listener: str) -> None:
    """The server is stopped (SIGSTOP) while a client sends 48 Fetches of an 8 MiB topic, so
    that they all arrive at once when it continues; the client never reads. The server builds
    one response and waits for the client to read it (as Kafka, which mutes a channel until its
    response is sent): its RSS grows by about one response, not 48; the gauge of buffered
    response bytes stays within one response. After the client's reset, everything the
    connection held is given back, and SIGTERM stops the server within its shutdown timeout."""
    with _server(tmp_path, certs) as (srv, addresses, url):
        topic = _topic_of(_bootstrap(addresses["PLAINTEXT"]), TOPIC_MIB)
        tls = None
        if listener == "SSL":
            tls = ssl.create_default_context(cafile=str(certs.ca))
        hostile = _hostile(addresses[listener], tls)
        frames = b"".join(encode_request(_fetch(topic), i + 1, "hostile")
                          for i in range(PIPELINED))
        before = _rss_kib(srv.proc.pid)
        peak_before = _rss_kib(srv.proc.pid, "VmHWM")
        os.kill(srv.proc.pid, signal.SIGSTOP)
        try:
            hostile.sendall(frames)
            time.sleep(0.5)
        finally:
            os.kill(srv.proc.pid, signal.SIGCONT)
        response_bytes = []
        for _ in range(20):  # 4 s: long enough to build every response without the bound
            time.sleep(0.2)
            m = _metrics(url)
            response_bytes.append(m["groupcoord_connection_response_bytes"])
        grown_mib = (max(_rss_kib(srv.proc.pid, "VmHWM"), peak_before) - before) / 1024
        assert grown_mib < 40, f"the server's memory grew by {grown_mib:.0f} MiB"
        assert 0 < max(response_bytes) <= (TOPIC_MIB + 1) * MIB, response_bytes
        # the server answers others meanwhile
        with KafkaClient(_bootstrap(addresses["PLAINTEXT"]), client_id="other") as other:
            assert ApiKey.FETCH in other.api_versions()
        _reset(hostile)
        _wait_for("the reset connection's bytes were not given back", lambda: (
            (m := _metrics(url))["groupcoord_connection_response_bytes"] == 0
            and m["groupcoord_connection_request_bytes"] == 0))
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(10) == 0
        assert time.monotonic() - t0 < 10


def test_sigterm_stops_the_server_while_a_client_does_not_read(tmp_path: Path,
                                                               certs: Certs) -> None:
    """SIGTERM while a connection holds a response its client does not read: the server stops
    within its shutdown timeout (closing, then aborting, that connection)."""
    with _server(tmp_path, certs) as (srv, addresses, url):
        topic = _topic_of(_bootstrap(addresses["PLAINTEXT"]), TOPIC_MIB)
        hostile = _hostile(addresses["PLAINTEXT"], None)
        hostile.sendall(b"".join(encode_request(_fetch(topic), i + 1, "hostile")
                                 for i in range(PIPELINED)))
        _wait_for("no response waits for the client", lambda: _metrics(url)[
            "groupcoord_connection_response_bytes"] > 0)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(10) == 0
        assert time.monotonic() - t0 < 10
        hostile.close()


def test_a_connection_whose_client_never_reads_is_closed_as_idle(tmp_path: Path,
                                                                 certs: Certs) -> None:
    """Requests waiting only because the client does not read its responses do not keep a
    connection alive past ``connections.max.idle.ms`` (Kafka's selector counts reads and
    writes as activity; a stalled write is none): its memory is given back."""
    with _server(tmp_path, certs, "connections.max.idle.ms=1000") as (srv, addresses, url):
        topic = _topic_of(_bootstrap(addresses["PLAINTEXT"]), TOPIC_MIB)
        hostile = _hostile(addresses["PLAINTEXT"], None)
        hostile.sendall(b"".join(encode_request(_fetch(topic), i + 1, "hostile")
                                 for i in range(PIPELINED)))
        _wait_for("no response waits for the client", lambda: _metrics(url)[
            "groupcoord_connection_response_bytes"] > 0)
        _wait_for("the connection that never reads was not closed", lambda: (
            (m := _metrics(url))["groupcoord_connection_response_bytes"] == 0
            and m["groupcoord_connection_request_bytes"] == 0), timeout_s=30)
        hostile.close()
        assert "idle for more than connections.max.idle.ms=1000" in srv.stderr()


def test_a_fetch_response_holds_at_most_fetch_max_bytes(tmp_path: Path, certs: Certs) -> None:
    """``fetch.max.bytes`` caps a Fetch whatever MaxBytes it asks (Kafka's
    ``KafkaApis.handleFetchRequest``); the first batch comes whole even when it is larger
    (KIP-74)."""
    with _server(tmp_path, certs, f"fetch.max.bytes={MIB}") as (_srv, addresses, _url):
        bootstrap = _bootstrap(addresses["PLAINTEXT"])
        topic = _topic_of(bootstrap, 4)
        with KafkaClient(bootstrap) as c:
            r = c.send(_fetch(topic, max_bytes=64 * MIB))
            records = r.responses[0].partitions[0].records  # type: ignore[attr-defined]
            assert 3 * VALUE < len(records) <= MIB
            r = c.send(_fetch(topic, max_bytes=1024))
            one = r.responses[0].partitions[0].records  # type: ignore[attr-defined]
            assert VALUE < len(one) < 2 * VALUE  # one batch of one record
