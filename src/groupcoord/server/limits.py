"""Bounded resources of the wire server: connections and memory (docs/configuration.md).

Kafka's broker configs, with Kafka's semantics except where said:

- ``max.connections`` (default 2^31-1): connections open at once. Past it a new connection is
  **closed at once** (Kafka's acceptor instead stops accepting until one closes: the client
  then waits in the listen backlog; here it sees its connection closed and retries with its
  reconnect backoff, as it does for a broker that is down). Existing connections are untouched.
- ``max.connections.per.ip`` (default 2^31-1) and ``max.connections.per.ip.overrides``
  (``host:count,host:count``, a host name resolved once at start): connections from one client
  address; past it a new one is closed at once, as Kafka does (``TooManyConnectionsException``).
  ``0`` is allowed only with overrides, as Kafka requires.
- ``connections.max.idle.ms`` (default 600000; negative: never): a connection that has sent
  nothing for that long and is not waiting for an answer of ours is closed (Kafka closes a
  channel idle that long). Checked by a sweep every quarter of the period (at most 10 s), so a
  connection is closed between one and 1.25 periods after its last request.
- ``socket.request.max.bytes`` (default 104857600): a frame announcing more is refused by
  closing the connection, as Kafka's ``NetworkReceive`` does (``protocol/framing.py``).
- ``queued.max.request.bytes``: the bytes of requests received and not yet handled, over all
  connections: frames still arriving plus complete frames waiting on their connection. Kafka
  bounds the same bytes with a memory pool (it allocates a frame's announced size from the pool
  when the size arrives, and mutes a channel when the pool is empty); its default is ``-1``,
  unbounded. **Ours defaults to 104857600** (one largest request) because nothing else bounds
  the memory a client can make this server hold; ``-1`` or ``0`` turns it off. We never allocate
  by announced size (a frame's buffer grows with the bytes that arrived), so a client that
  announces a large frame and sends it slowly holds only what it sent; and when the total goes
  over the bound, the connection holding the most such bytes is closed (repeatedly, until the
  total is back under it), with a log line naming the config. Muting instead, as Kafka does, can
  leave every connection waiting for memory that only a slow sender could give back; closing
  the largest holder bounds the memory and lets every other connection go on (a heartbeat is a
  few hundred bytes, never the largest).

:class:`ConnectionQuotas` and :class:`QueuedBytes` hold the counts; ``server/app.py``'s
``Connection`` calls them.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.server.settings import ConfigError, get_int

log = logging.getLogger(__name__)

#: The longest pause between two idle sweeps.
MAX_SWEEP_S = 10.0


@dataclass(frozen=True, slots=True)
class Limits:
    max_connections: int
    max_connections_per_ip: int
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    idle_ms: int = 600_000
    max_request_bytes: int = 104_857_600
    queued_max_request_bytes: int = 104_857_600

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> Limits:
        """The limits of ``props`` (checked by ``settings.check_properties`` first); a bad
        overrides list is a :class:`ConfigError`."""
        overrides = parse_overrides(props.get("max.connections.per.ip.overrides", ""))
        per_ip = get_int(props, "max.connections.per.ip")
        if per_ip == 0 and not overrides:
            raise ConfigError("config max.connections.per.ip can be 0 only if "
                              "max.connections.per.ip.overrides is set")
        return cls(get_int(props, "max.connections"), per_ip, overrides,
                   get_int(props, "connections.max.idle.ms"),
                   get_int(props, "socket.request.max.bytes"),
                   get_int(props, "queued.max.request.bytes"))

    @property
    def sweep_s(self) -> float:
        return min(max(self.idle_ms / 4000, 0.05), MAX_SWEEP_S)


def parse_overrides(raw: str) -> dict[str, int]:
    """``host:count,host:count`` as ``{ip: count}`` (every address of a host name)."""
    out: dict[str, int] = {}
    for item in (s.strip() for s in raw.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        try:
            n = int(count)
        except ValueError:
            n = -1
        if not sep or not host or n < 0:
            raise ConfigError(f"config max.connections.per.ip.overrides: {item!r} is not "
                              f"host:count with a count of at least 0")
        for ip in _addresses(host):
            out[ip] = n
    return out


def _addresses(host: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as e:
        raise ConfigError(f"config max.connections.per.ip.overrides: cannot resolve {host!r}: "
                          f"{e.strerror or e}") from None
    return sorted({str(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in infos})


def normalise_ip(host: str) -> str:
    try:
        addr = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


class ConnectionQuotas:
    """Open connections in total and per client address."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.per_ip: Counter[str] = Counter()
        #: Connections refused since start (the metrics and the tests read it).
        self.refused = 0
        #: Per reason: when it was last logged, and how many refusals since then.
        self._logged: dict[str, tuple[float, int]] = {}

    def admit(self, ip: str) -> str | None:
        """Count a new connection from ``ip``; None if it may stay, else why it is refused."""
        lim = self.limits
        if self.total >= lim.max_connections:
            return self._refuse(f"max.connections={lim.max_connections} reached")
        cap = lim.per_ip_overrides.get(ip, lim.max_connections_per_ip)
        if self.per_ip[ip] >= cap:
            return self._refuse(f"max.connections.per.ip={cap} reached for {ip}")
        self.total += 1
        self.per_ip[ip] += 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        left = self.per_ip[ip] - 1
        if left > 0:
            self.per_ip[ip] = left
        else:
            del self.per_ip[ip]

    def _refuse(self, why: str) -> str:
        """Log the first refusal of each reason, then at most one line every 5 s per reason
        with the count (a flood of connections must not become a flood of log lines)."""
        self.refused += 1
        now = time.monotonic()
        last, unlogged = self._logged.get(why, (-1e9, 0))
        if now - last >= 5.0:
            more = f" ({unlogged} more refused since the last line)" if unlogged else ""
            log.warning("new connection closed at once: %s%s", why, more)
            if len(self._logged) >= 1000:  # many addresses: forget the old reasons
                self._logged.clear()
            self._logged[why] = (now, 0)
        else:
            self._logged[why] = (last, unlogged + 1)
        return why


class QueuedBytes:
    """Bytes of requests received and not yet handled, over all connections (module doc)."""

    __slots__ = ("held", "limit")

    def __init__(self, limit: int) -> None:
        #: <= 0: unbounded, as Kafka's -1.
        self.limit = limit
        self.held = 0

    @property
    def over(self) -> bool:
        return 0 < self.limit < self.held
