"""Client security settings for the online admin commands (``groupcoord acls``, ``topics``,
``groups``, ``connectors``, ``control``): a client properties file as Kafka's tools take it with
``--command-config`` (``kafka-acls.sh --command-config client.properties``), turned into
:class:`~groupcoord.protocol.client.KafkaClient`'s ``ssl_context`` and ``sasl``.

Keys (Java client names, and librdkafka's where they differ):

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL;
- ``sasl.mechanism``: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (default GSSAPI in Kafka, not served
  here: give one); the user and password from ``sasl.jaas.config`` (``...LoginModule required
  username="alice" password="secret";``) or librdkafka's ``sasl.username`` / ``sasl.password``;
- ``ssl.truststore.location`` (PEM; ``ssl.truststore.type`` must be PEM) or ``ssl.ca.location``:
  the CA certificates; without either, the system's;
- a client certificate: ``ssl.keystore.location`` (a PEM file with key and chain,
  ``ssl.keystore.type=PEM``) or ``ssl.certificate.location`` with ``ssl.key.location``, and
  ``ssl.key.password``;
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks the broker's host name,
  empty does not.

Any other key is ignored (a Kafka client file carries many that do not apply here). A file that
cannot be read, an unknown protocol or mechanism, a missing user or password, a JKS or PKCS12
store: one-line :class:`ClientConfigError` (the commands exit with status 2).
"""

from __future__ import annotations

import argparse
import re
import ssl
import sys
from pathlib import Path
from typing import Any

__all__ = ["ClientConfigError", "client_options", "read_properties"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class ClientConfigError(ValueError):
    """A client properties file that cannot be used; the message is one line."""


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java properties file's ``key=value`` (or ``key: value``) lines; ``#`` and ``!``
    comments, blank lines and backslash line continuations as Java reads them."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ClientConfigError(f"{path}: {e.strerror or e}") from None
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", line)
        if m is None:
            props[line] = ""
            continue
        props[m.group(1)] = m.group(2)
    return props


def _jaas_credentials(jaas: str) -> tuple[str | None, str | None]:
    found = dict(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', jaas))
    return found.get("username"), found.get("password")


def client_options(props: dict[str, str], source: str = "client properties") -> dict[str, Any]:
    """``KafkaClient`` keyword arguments (``ssl_context``, ``sasl``) for ``props``."""
    proto = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if proto not in PROTOCOLS:
        raise ClientConfigError(f"{source}: security.protocol={proto} is not one of "
                                f"{', '.join(PROTOCOLS)}")
    out: dict[str, Any] = {}
    if proto in ("SSL", "SASL_SSL"):
        out["ssl_context"] = _ssl_context(props, source)
    if proto.startswith("SASL"):
        mech = props.get("sasl.mechanism", "").strip().upper()
        if mech not in MECHANISMS:
            raise ClientConfigError(f"{source}: sasl.mechanism={mech or '(not set)'}: give one "
                                    f"of {', '.join(MECHANISMS)}")
        user, password = _jaas_credentials(props.get("sasl.jaas.config", ""))
        user = props.get("sasl.username", user)
        password = props.get("sasl.password", password)
        if not user or password is None:
            raise ClientConfigError(f"{source}: {proto} needs a user and a password: "
                                    f"sasl.jaas.config with username=\"...\" password=\"...\", "
                                    f"or sasl.username and sasl.password")
        out["sasl"] = (mech, user, password)
    return out


def _ssl_context(props: dict[str, str], source: str) -> ssl.SSLContext:
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        kind = props.get(key, "PEM").strip().upper()
        if kind != "PEM":
            raise ClientConfigError(f"{source}: {key}={kind} is not supported (use PEM files)")
    cafile = props.get("ssl.truststore.location") or props.get("ssl.ca.location")
    try:
        ctx = ssl.create_default_context(cafile=cafile or None)
        keystore = props.get("ssl.keystore.location")
        cert = props.get("ssl.certificate.location")
        password = props.get("ssl.key.password")
        if keystore:
            ctx.load_cert_chain(keystore, password=password)
        elif cert:
            ctx.load_cert_chain(cert, props.get("ssl.key.location"), password=password)
    except (OSError, ssl.SSLError) as e:
        raise ClientConfigError(f"{source}: cannot load the TLS files: "
                                f"{getattr(e, 'strerror', None) or e}") from None
    if props.get("ssl.endpoint.identification.algorithm", "https").strip() == "":
        ctx.check_hostname = False
    return ctx


def command_config(text: str) -> dict[str, Any]:
    """An argparse ``type`` for ``--command-config FILE``: a Kafka client properties file (as
    ``kafka-acls.sh --command-config``) read into the protocol client's security options
    (:func:`client_options`); a file that cannot be used is bad usage (status 2)."""
    try:
        return client_options(read_properties(text), source=text)
    except ClientConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_command_config(p: argparse.ArgumentParser) -> None:
    """``--command-config FILE`` for a command that talks to a server (SSL, SASL_PLAINTEXT,
    SASL_SSL listeners, docs/security.md)."""
    p.add_argument("--command-config", type=command_config, default={}, metavar="FILE",
                   help="client properties for a secured listener, as Kafka's tools take them: "
                        "security.protocol, sasl.mechanism, sasl.jaas.config (or "
                        "sasl.username/sasl.password), ssl.truststore.location (PEM)...")


def guard_client_errors(fn: Any) -> Any:
    """An admin sub-command whose :class:`~groupcoord.protocol.client.KafkaClientError` (the
    broker unreachable, an error answer) is one line on stderr and exit status 1."""
    from groupcoord.protocol.client import KafkaClientError

    def run(ns: argparse.Namespace) -> int:
        try:
            return int(fn(ns))
        except KafkaClientError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return run


def add_admin_options(p: argparse.ArgumentParser) -> None:
    """The options every online admin command takes: ``--bootstrap-server``,
    ``--command-config`` and ``--json``."""
    from groupcoord.commands import bootstrap_servers

    p.add_argument("--bootstrap-server", type=bootstrap_servers, default="127.0.0.1:9092")
    add_command_config(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
