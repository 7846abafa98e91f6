"""TLS for the SSL and SASL_SSL listeners, with Python's ``ssl`` module and Kafka's config names.

The server's certificate and key (PEM only; Kafka's JKS and PKCS12 keystores are refused with a
one-line error):

- ``ssl.keystore.location`` a PEM file holding the private key and the certificate chain, with
  ``ssl.keystore.type=PEM`` (Kafka's default type is JKS; here PEM is the default and the only
  type), ``ssl.key.password`` when the key is encrypted;
- or Kafka's PEM options ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key``: in Kafka
  their values are the PEM text itself; here a value that does not start with ``-----BEGIN`` is
  taken as the path of a PEM file (more convenient on a command line). The PEM text is written
  to a private temporary file for ``SSLContext.load_cert_chain`` (which reads files only) and
  removed at once.

Client certificates: ``ssl.client.auth=required|requested|none`` (default none), verified
against ``ssl.truststore.location`` (a PEM file of CA certificates, ``ssl.truststore.type=PEM``)
or ``ssl.truststore.certificates`` (PEM text or a path). ``ssl.enabled.protocols`` (e.g.
``TLSv1.2,TLSv1.3``) bounds the TLS versions. Every key may be prefixed
``listener.name.<name>.`` for one listener.

The principal of an SSL connection with a verified client certificate is ``User:`` followed by
the certificate's subject distinguished name in RFC 2253 form (``CN=alice,OU=eng,O=Example``,
most specific first), as Kafka's default principal builder gives it (``ssl.principal.mapping.rules``
is not supported: DEFAULT only); without a client certificate it is ``User:ANONYMOUS``. An
attribute without an RFC 2253 keyword (``emailAddress``...) is written with Python's attribute
name, where Java writes its OID and the DER value in hex.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from typing import Any

from groupcoord.server.security.listeners import ListenerError, setting

__all__ = ["peer_principal", "server_context", "subject_dn"]

_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_TLS_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}


@contextlib.contextmanager
def _pem_file(value: str, what: str) -> Iterator[str]:
    """A path for ``value``: the path itself, or a private temporary file with the PEM text."""
    if not value.lstrip().startswith("-----BEGIN"):
        if not os.path.isfile(value):
            raise ListenerError(f"{what}: no such file: {value}")
        yield value
        return
    fd, path = tempfile.mkstemp(prefix="groupcoord-pem-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(value)
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def server_context(props: dict[str, str], listener: str) -> ssl.SSLContext:
    """The listener's SSLContext from Kafka's ``ssl.*`` settings (module doc)."""
    def get(key: str, default: str | None = None) -> str | None:
        return setting(props, listener, key, default)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    protocols = get("ssl.enabled.protocols")
    if protocols:
        versions = []
        for p in protocols.split(","):
            v = _TLS_VERSIONS.get(p.strip().upper())
            if v is None:
                raise ListenerError(f"ssl.enabled.protocols: unsupported {p.strip()!r} (use "
                                    f"TLSv1.2, TLSv1.3)")
            versions.append(v)
        ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    ktype = (get("ssl.keystore.type") or "PEM").upper()
    if ktype != "PEM":
        raise ListenerError(f"listener {listener}: ssl.keystore.type={ktype} is not supported "
                            f"(use PEM files: ssl.keystore.location with ssl.keystore.type=PEM, or "
                            f"ssl.keystore.certificate.chain and ssl.keystore.key)")
    password = get("ssl.key.password")
    location = get("ssl.keystore.location")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    try:
        if location:
            with _pem_file(location, "ssl.keystore.location") as path:
                ctx.load_cert_chain(path, password=password)
        elif chain and key:
            with _pem_file(chain, "ssl.keystore.certificate.chain") as cpath, \
                    _pem_file(key, "ssl.keystore.key") as kpath:
                ctx.load_cert_chain(cpath, kpath, password=password)
        else:
            raise ListenerError(f"listener {listener} uses TLS: give ssl.keystore.location (a PEM "
                                f"file with the key and certificate chain) or "
                                f"ssl.keystore.certificate.chain and ssl.keystore.key")
    except ssl.SSLError as e:
        raise ListenerError(f"listener {listener}: cannot load the certificate and key: "
                            f"{e.reason or e}") from None
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ListenerError(f"ssl.client.auth must be required, requested or none, got {auth!r}")
    ttype = (get("ssl.truststore.type") or "PEM").upper()
    if ttype != "PEM":
        raise ListenerError(f"listener {listener}: ssl.truststore.type={ttype} is not supported "
                            f"(use a PEM file)")
    trust = get("ssl.truststore.location") or get("ssl.truststore.certificates")
    if trust:
        try:
            with _pem_file(trust, "ssl.truststore.location") as path:
                ctx.load_verify_locations(cafile=path)
        except ssl.SSLError as e:
            raise ListenerError(f"listener {listener}: cannot load the truststore: "
                                f"{e.reason or e}") from None
    elif auth != "none":
        raise ListenerError(f"listener {listener}: ssl.client.auth={auth} needs "
                            f"ssl.truststore.location (the CA certificates clients are checked "
                            f"against)")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


#: X.500 attribute names of ``SSLSocket.getpeercert()`` -> RFC 2253 keywords (as Java's
#: ``X500Principal.getName()`` writes them); other attributes keep their long name.
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
             "stateOrProvinceName": "ST", "organizationName": "O",
             "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def subject_dn(cert: dict[str, Any]) -> str | None:
    """The subject of a ``getpeercert()`` dict as an RFC 2253 string (last RDN first)."""
    subject = cert.get("subject")
    if not subject:
        return None
    rdns = ["+".join(f"{_KEYWORDS.get(k, k)}={_escape(str(v))}" for k, v in rdn)
            for rdn in subject]
    return ",".join(reversed(rdns))


def peer_principal(transport: Any) -> str | None:
    """``User:<subject DN>`` of a verified client certificate on this TLS transport, or None."""
    cert = transport.get_extra_info("peercert")
    if not cert:
        return None
    dn = subject_dn(cert)
    return None if dn is None else f"User:{dn}"
