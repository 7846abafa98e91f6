"""Server memory per idle connection (docs/security.md "Memory per connection").

A real ``groupcoord serve`` subprocess (``--storage memory``) with a PLAINTEXT, an SSL and a
SASL_SSL listener (a throwaway CA, ``groupcoord.testing.certs``). For each listener in turn,
``connections`` clients connect (TLS handshake; on SASL_SSL a SCRAM-SHA-512 login), send one
ApiVersions request each and then stay idle; the server's RSS (``/proc/<pid>/status``
``VmRSS``) is read before and after that **first wave**, all of them are closed, and once the
server has seen every close a **second wave** of as many connections is made and the RSS read
again.

Reported per listener kind (``plaintext``, ``tls``, ``tls-scram``):

- ``connections.<kind>.rss_per_connection``: KiB of server RSS per idle connection of the first
  wave;
- ``connections.<kind>.second_wave_growth``: how much the second wave grew the RSS beyond the
  first wave's peak, as a fraction of what the first wave cost (0: the second wave reused the
  memory the first freed; the issue measured 0.57 with asyncio's TLS transport).

RSS is a process-wide figure: allocator caching and the interpreter's own growth show up in it;
read it as an order of magnitude per connection (the target is at most 64 KiB per idle TLS
connection and at most 10 % second-wave growth). Not timed. Needs Linux (``/proc``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._harness import Result, stop_process
from groupcoord.protocol.client import KafkaClient

_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
KINDS = {"plaintext": "PLAINTEXT", "tls": "SSL", "tls-scram": "SASL_SSL"}


class _Server:
    def __init__(self, tmp: Path) -> None:
        from groupcoord.server.security.credentials import CredentialStore
        from groupcoord.testing.certs import make_certs

        self.certs = make_certs(tmp / "certs")
        data = tmp / "data"
        data.mkdir()
        CredentialStore(data).add("bench", "SCRAM-SHA-512", "bench-secret")
        cmd = [*_CMD, "serve", "--storage", "memory", "--data-dir", str(data)]
        for name in KINDS.values():
            cmd += ["--listener", f"{name}://127.0.0.1:0"]
        cmd += ["--config", f"ssl.keystore.location={self.certs.server}",
                "--config", "allow.everyone.if.no.acl.found=true",
                "--config", "max.connections.per.ip=100000", "--config", "max.connections=100000"]
        self.err = open(tmp / "server.err", "w")  # noqa: SIM115 - the child's for its life
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.addresses: dict[str, tuple[str, int]] = {}
        assert self.proc.stdout is not None
        for _ in KINDS:
            line = self.proc.stdout.readline()
            if not line.startswith("listening on "):
                self.stop()
                raise RuntimeError(f"server did not start: {line!r}: "
                                   f"{(tmp / 'server.err').read_text()[-2000:]}")
            name, _, hostport = line.split()[-1].partition("://")
            host, _, port = hostport.rpartition(":")
            self.addresses[name] = (host, int(port))

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def open_sockets(self) -> int:
        count = 0
        for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
            with contextlib.suppress(FileNotFoundError):  # closed since the listing
                count += os.readlink(f"/proc/{self.proc.pid}/fd/{fd}").startswith("socket:")
        return count

    def stop(self) -> None:
        stop_process(self.proc)
        self.err.close()


def _connect(server: _Server, kind: str, n: int) -> list[KafkaClient]:
    listener = KINDS[kind]
    host, port = server.addresses[listener]
    ctx = None
    if kind != "plaintext":
        ctx = ssl.create_default_context(cafile=str(server.certs.ca))
    sasl = ("SCRAM-SHA-512", "bench", "bench-secret") if kind == "tls-scram" else None
    out: list[KafkaClient] = []
    lock = threading.Lock()

    def worker(count: int) -> None:
        mine = []
        for _ in range(count):
            c = KafkaClient(f"{host}:{port}", client_id="bench-idle", ssl_context=ctx, sasl=sasl)
            c.api_versions()  # served: the connection holds what a served connection holds
            mine.append(c)
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=worker, args=(n // 4 + (i < n % 4),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _settle(server: _Server, sockets: int, timeout_s: float = 30.0) -> None:
    """Wait until the server holds ``sockets`` sockets (its listeners and what is left)."""
    end = time.monotonic() + timeout_s
    while server.open_sockets() > sockets and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(0.5)  # the closes' callbacks run


def _measure(server: _Server, kind: str, n: int) -> tuple[float, float, dict[str, int]]:
    idle_sockets = server.open_sockets()
    rss0 = server.rss_kib()
    clients = _connect(server, kind, n)
    time.sleep(0.5)
    rss1 = server.rss_kib()
    for c in clients:
        c.close()
    _settle(server, idle_sockets)
    rss_closed = server.rss_kib()
    clients = _connect(server, kind, n)
    time.sleep(0.5)
    rss2 = server.rss_kib()
    for c in clients:
        c.close()
    _settle(server, idle_sockets)
    first = max(rss1 - rss0, 1)
    raw = {"rss0_kib": rss0, "rss_first_wave_kib": rss1, "rss_closed_kib": rss_closed,
           "rss_second_wave_kib": rss2}
    return (rss1 - rss0) / n, max(rss2 - rss1, 0) / first, raw


def run(quick: bool = False, **sizes: str) -> list[Result]:
    """``--set connections=N`` (default 500; 50 with ``--quick``); ``--set kinds=tls,...``."""
    n = int(sizes.get("connections", 50 if quick else 500))
    kinds = [k.strip() for k in sizes.get("kinds", ",".join(KINDS)).split(",")]
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"kinds: unknown {k!r} (use {', '.join(KINDS)})")
    socket.setdefaulttimeout(30)
    results = []
    for kind in kinds:  # a fresh server each: one kind's heap does not flatter the next
        with tempfile.TemporaryDirectory(prefix="groupcoord-bench-connections-") as tmp:
            server = _Server(Path(tmp))
            try:
                per_conn, growth, raw = _measure(server, kind, n)
            finally:
                server.stop()
        params = {"connections": n, "listener": KINDS[kind], **raw}
        results.append(Result(f"connections.{kind}.rss_per_connection", round(per_conn, 1),
                              "KiB", params))
        results.append(Result(f"connections.{kind}.second_wave_growth", round(growth, 3),
                              "ratio", params))
    return results
