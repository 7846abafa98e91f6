"""Test support for the security tests: throwaway certificates (``groupcoord.testing.certs``),
users, and a ``groupcoord serve`` with several listeners."""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.testing.certs import Certs, make_certs
from tests.conftest import FAST_GROUP_CONFIGS, GROUPCOORD, ServerProcess

__all__ = ["Certs", "SecureServer", "add_user", "make_certs", "start_secure_server"]


@dataclass
class SecureServer:
    server: ServerProcess
    #: listener name -> (host, port)
    addresses: dict[str, tuple[str, int]] = field(default_factory=dict)

    def bootstrap(self, listener: str) -> str:
        host, port = self.addresses[listener]
        return f"{host}:{port}"


def add_user(data_dir: Path, name: str, password: str, *mechanisms: str) -> None:
    """As ``groupcoord users add`` does (in process: a CLI start costs seconds here)."""
    from groupcoord.server.security.credentials import MECHANISMS, CredentialStore

    store = CredentialStore(data_dir)
    for m in mechanisms or MECHANISMS:
        store.add(name, m, password)


def start_secure_server(data_dir: Path, listeners: list[str], *extra: str,
                        timeout: float = 30.0, open_acls: bool = True) -> SecureServer:
    """``groupcoord serve`` with ``--listener`` each; returns once every listener is up.

    ``open_acls``: these are tests of authentication, so every principal may do everything
    (``allow.everyone.if.no.acl.found=true``); a server with authenticating listeners denies
    by default what no ACL allows (docs/acls.md), which the ACL tests exercise."""
    if open_acls and not any("allow.everyone.if.no.acl.found" in x for x in extra):
        extra = (*extra, "--config", "allow.everyone.if.no.acl.found=true")
    data_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
    err = open(stderr_path, "a")  # noqa: SIM115 - owned by the child for its lifetime
    cmd = [*GROUPCOORD, "-v", "serve", "--data-dir", str(data_dir)]
    for c in FAST_GROUP_CONFIGS:
        cmd += ["--config", c]
    for li in listeners:
        cmd += ["--listener", li]
    cmd += list(extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    err.close()
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for _ in listeners:
            lines.append(proc.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if len(lines) < len(listeners) or not all(x.startswith("listening on ") for x in lines):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {lines!r}\n{stderr_path.read_text()}")
    out = SecureServer(ServerProcess(proc, "", 0, data_dir, stderr_path))
    for line in lines:
        url = line.split()[-1]
        name, _, hostport = url.partition("://")
        host, _, port = hostport.rpartition(":")
        out.addresses[name] = (host.strip("[]"), int(port))
    first = next(iter(out.addresses.values()))
    out.server.host, out.server.port = first
    return out
