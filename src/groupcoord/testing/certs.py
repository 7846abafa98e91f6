"""Throwaway certificates for tests and benchmarks of TLS listeners (docs/security.md): a CA,
a server certificate for localhost / 127.0.0.1 and a client certificate, as PEM files.

Needs the ``cryptography`` package (a development dependency of groupcoord), imported only
when :func:`make_certs` is called.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certs", "make_certs"]


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
