"""Test support for the security tests: a throwaway CA with a server and a client certificate
(``cryptography``, a dev dependency), and a ``groupcoord serve`` with several listeners."""

from __future__ import annotations

import datetime
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import FAST_GROUP_CONFIGS, GROUPCOORD, ServerProcess


@dataclass
class Certs:
    ca: Path
    server: Path  # key + chain, one PEM file (ssl.keystore.location)
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_dn: str = "CN=alice,OU=eng,O=Example Corp\\, Inc.,C=US"


def make_certs(d: Path) -> Certs:
    """A CA, a server certificate for localhost / 127.0.0.1 and a client certificate whose
    subject is ``Certs.client_dn`` (RFC 2253, most specific first)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    d.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "groupcoord test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(name: x509.Name, san: list[x509.GeneralName] | None) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(days=1))
             .not_valid_after(now + datetime.timedelta(days=2)))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    s_cert, s_key = leaf(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]),
                         [x509.DNSName("localhost"),
                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    c_cert, c_key = leaf(x509.Name([
        x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example Corp, Inc."),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"),
        x509.NameAttribute(NameOID.COMMON_NAME, "alice")]), None)
    paths = {}
    for name, data in (("ca.pem", ca.public_bytes(serialization.Encoding.PEM)),
                       ("server.pem", s_key + s_cert), ("server-cert.pem", s_cert),
                       ("server-key.pem", s_key), ("client-cert.pem", c_cert),
                       ("client-key.pem", c_key)):
        (d / name).write_bytes(data)
        paths[name] = d / name
    return Certs(paths["ca.pem"], paths["server.pem"], paths["server-cert.pem"],
                 paths["server-key.pem"], paths["client-cert.pem"], paths["client-key.pem"])


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
                        timeout: float = 30.0) -> SecureServer:
    """``groupcoord serve`` with ``--listener`` each; returns once every listener is up."""
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
