"""A server's security settings, read once from its listeners and Kafka config
(``listeners.py`` for the listener syntax, ``tls.py`` for ``ssl.*``, ``sasl.py`` for SASL):
the listeners to open, an SSLContext per TLS listener, the SASL mechanisms per SASL listener,
the advertised addresses, and what each new connection starts as.

Errors are one-line ``ValueError``s naming the setting (``serve`` prints them and exits 2).
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

from groupcoord.server.connection import ServedConnection
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.security.listeners import (
    ListenerSpec,
    is_loopback,
    parse_advertised,
    parse_listeners,
    setting,
)
from groupcoord.server.security.sasl import DEFAULT_MECHANISMS, SaslSession, check_mechanisms
from groupcoord.server.security.tls import peer_principal, server_context

__all__ = ["CONFIG_KEYS", "CONFIG_PREFIXES", "ServerSecurity"]

ANONYMOUS = "User:ANONYMOUS"

#: The ``--config`` keys this layer reads (for a check of unknown keys), and the prefix of
#: per-listener overrides (``listener.name.<name>.<key>``).
CONFIG_KEYS = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.key.password", "ssl.truststore.location", "ssl.truststore.type",
    "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols",
    "sasl.enabled.mechanisms", "connection.failed.authentication.delay.ms"})
CONFIG_PREFIXES = ("listener.name.",)


class ServerSecurity:
    def __init__(self, props: dict[str, str], listeners: list[str] | None, host: str,
                 port: int, advertised_host: str | None = None) -> None:
        pmap = props.get("listener.security.protocol.map")
        items = list(listeners or [])
        if not items and props.get("listeners"):
            items = [props["listeners"]]
        if items:
            self.listeners = parse_listeners(items, pmap)
        else:  # --host / --port: the PLAINTEXT default
            self.listeners = [ListenerSpec("PLAINTEXT", "PLAINTEXT", host, port)]
        self.advertised_host = advertised_host
        self.advertised = parse_advertised(props.get("advertised.listeners"), pmap)
        for name in self.advertised:
            if name not in {s.name for s in self.listeners}:
                raise ValueError(f"advertised.listeners names {name}, which is not a listener")
        self.ssl: dict[str, ssl.SSLContext] = {}
        self.mechanisms: dict[str, list[str]] = {}
        self.client_auth: dict[str, str] = {}
        for spec in self.listeners:
            if spec.tls:
                self.ssl[spec.name] = server_context(props, spec.name)
                self.client_auth[spec.name] = (setting(props, spec.name, "ssl.client.auth")
                                               or "none").lower()
            if spec.sasl:
                self.mechanisms[spec.name] = check_mechanisms(
                    setting(props, spec.name, "sasl.enabled.mechanisms", DEFAULT_MECHANISMS)
                    or "", spec.name)
        delay = props.get("connection.failed.authentication.delay.ms", "100")
        try:
            self.fail_delay_s = int(delay) / 1000
        except ValueError:
            raise ValueError(f"connection.failed.authentication.delay.ms must be an integer, got "
                             f"{delay!r}") from None
        if self.fail_delay_s < 0:
            raise ValueError("connection.failed.authentication.delay.ms must be at least 0")
        #: The users' SCRAM credentials; set by the server when it starts (data directory).
        self.store: CredentialStore | None = None

    @property
    def first(self) -> ListenerSpec:
        return self.listeners[0]

    def authenticates(self, spec: ListenerSpec) -> bool:
        return spec.sasl or self.client_auth.get(spec.name) == "required"

    def warnings(self, allow_everyone: bool | None = None,
                 bound: dict[str, list[int]] | None = None) -> list[str]:
        """One line per listener open beyond loopback without authentication: the listener
        (with its ``bound`` port when given), who its clients are, what they may do with
        ``allow_everyone`` (``allow.everyone.if.no.acl.found``; None: not said) and what to do.
        The server logs them once it listens (``KafkaServer.start``)."""
        out = []
        for s in self.listeners:
            if is_loopback(s.host) or self.authenticates(s):
                continue
            port = bound[s.name][0] if bound and bound.get(s.name) else s.port
            who = ("its clients are User:ANONYMOUS" if not s.tls else
                   "its clients without a certificate are User:ANONYMOUS")
            if allow_everyone is None:
                may, fix = "", ""
            elif allow_everyone:
                may = (" and, with allow.everyone.if.no.acl.found=true, may do anything no ACL "
                       "names")
                fix = ", or set allow.everyone.if.no.acl.found=false and grant ACLs"
            else:
                may = " and may do only what ACLs allow User:ANONYMOUS"
                fix = ""
            out.append(f"listener {s.name} on {s.host or '0.0.0.0'}:{port} accepts clients from "
                       f"the network without authentication: {who}{may}; use SASL_SSL, or SSL "
                       f"with ssl.client.auth=required{fix}")
        return out

    def advertised_address(self, spec: ListenerSpec, broker: int, bound_port: int) -> tuple[str, int]:
        """Where clients of ``spec`` are told broker ``broker`` is."""
        if spec.name in self.advertised:
            host, port = self.advertised[spec.name]
            if port == 0:
                port = bound_port
            elif broker:
                port += broker
        else:
            host, port = self.advertised_host or spec.host, bound_port
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
        return host, port

    def on_connect(self, conn: ServedConnection, transport: Any, spec: ListenerSpec) -> None:
        """A new connection on ``spec``: its principal from a client certificate (SSL), or a
        SASL session that must complete first (SASL_*)."""
        if spec.sasl:
            assert self.store is not None
            session = SaslSession(conn, self.mechanisms[spec.name], self.store, conn.handler,
                                  self.fail_delay_s)
            conn.handler = session.dispatch
        elif spec.tls:
            conn.principal = peer_principal(transport) or ANONYMOUS
