"""Listeners as Kafka names them: ``NAME://HOST:PORT``, with a security protocol each.

Security protocols: PLAINTEXT, SSL (TLS; the principal is the client certificate's subject
when one is verified, else ``User:ANONYMOUS``), SASL_PLAINTEXT and SASL_SSL (SASL first, then
the principal is ``User:<name>``). A listener's name is its protocol unless
``listener.security.protocol.map`` maps other names (``EXTERNAL:SASL_SSL,INTERNAL:PLAINTEXT``),
as in Kafka. Given with ``serve --listener`` (repeatable) or ``--config listeners=A,B``; an
empty host (``PLAINTEXT://:9092``) binds every interface, as Kafka; port 0 picks a free port.

``advertised.listeners`` (same syntax, matched by listener name) gives the address clients are
told in Metadata and FindCoordinator for each listener; by default the listener's own address
(``--advertised-host`` replacing the host). A client is always told the addresses of the listener
it connected on, as Kafka matches by listener name.

Several brokers (``--brokers N``): every broker has every listener; broker ``b`` listens on the
listener's port + ``b`` (or a free port with port 0).

Per-listener settings: a key ``listener.name.<name lower case>.<key>`` overrides ``<key>`` for
that listener (Kafka's prefix), for the ``ssl.*`` keys and ``sasl.enabled.mechanisms``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

__all__ = ["PROTOCOLS", "ListenerError", "ListenerSpec", "parse_listeners", "setting"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_LISTENER = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:/\[\]]*):(\d+)$")


class ListenerError(ValueError):
    """A listener setting that cannot be used (one line, naming what is wrong)."""


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    protocol: str
    host: str
    port: int

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def authenticates(self) -> bool:
        """Whether clients must prove who they are (SASL; TLS only with required client
        certificates, decided by the caller)."""
        return self.sasl

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port if port is None else port}"


def parse_protocol_map(value: str | None) -> dict[str, str]:
    out = {p: p for p in PROTOCOLS}
    if not value:
        return out
    for item in value.split(","):
        name, sep, proto = item.strip().partition(":")
        if not sep or not name or proto.upper() not in PROTOCOLS:
            raise ListenerError(f"listener.security.protocol.map: expected NAME:PROTOCOL with a "
                                f"protocol among {', '.join(PROTOCOLS)}, got {item.strip()!r}")
        out[name.upper()] = proto.upper()
    return out


def parse_listener(text: str, protocols: dict[str, str]) -> ListenerSpec:
    m = _LISTENER.match(text.strip())
    if m is None:
        raise ListenerError(f"listener must be NAME://HOST:PORT (e.g. SASL_SSL://0.0.0.0:9093), "
                            f"got {text.strip()!r}")
    name, host, port_s = m.group(1).upper(), m.group(2).strip("[]"), m.group(3)
    proto = protocols.get(name)
    if proto is None:
        raise ListenerError(f"listener {name}: unknown security protocol (use one of "
                            f"{', '.join(PROTOCOLS)}, or map the name in "
                            f"listener.security.protocol.map)")
    port = int(port_s)
    if port > 65535:
        raise ListenerError(f"listener {text.strip()}: port {port} is out of range (0-65535)")
    return ListenerSpec(name, proto, host, port)


def parse_listeners(items: list[str], protocol_map: str | None = None) -> list[ListenerSpec]:
    """``items``: ``--listener`` values or ``listeners=`` split on commas. Names must differ."""
    protocols = parse_protocol_map(protocol_map)
    out: list[ListenerSpec] = []
    for item in items:
        for part in item.split(","):
            if part.strip():
                out.append(parse_listener(part, protocols))
    names = [spec.name for spec in out]
    for n in set(names):
        if names.count(n) > 1:
            raise ListenerError(f"listener {n} is given twice (listener names must differ)")
    return out


def parse_advertised(value: str | None, protocol_map: str | None) -> dict[str, tuple[str, int]]:
    if not value:
        return {}
    protocols = parse_protocol_map(protocol_map)
    return {s.name: (s.host, s.port) for s in (parse_listener(p, protocols)
                                                for p in value.split(",") if p.strip())}


def setting(props: dict[str, str], listener: str, key: str, default: str | None = None) -> str | None:
    """``listener.name.<listener>.<key>`` if set, else ``key``, else ``default``."""
    specific = props.get(f"listener.name.{listener.lower()}.{key}")
    if specific is not None:
        return specific
    return props.get(key, default)


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    if host == "":
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
