"""The asyncio Kafka server: connections, request pipelines, dispatch (docs/wire.md).

Per connection, requests are handled one at a time in arrival order and answered in that order
(Kafka mutes a channel while one of its requests is in flight; clients may still pipeline: the
frames wait in our buffer). Most handlers are synchronous, so a burst of small pipelined
requests is handled in one go and their responses leave in one write (up to
``WRITE_BATCH_BYTES``); a Fetch that waits for data holds the connection's later requests until
it is answered.

Memory per connection is bounded whatever the client does (docs/configuration.md "Connections
and memory"). Responses: once the transport holds more than its high-water mark (64 KiB)
of unsent bytes it pauses the connection (``pause_writing``, called within the write), and no
further request of that connection is handled until the peer has read below the low-water
mark: a connection holds at most one response past the high-water mark, as Kafka's muted
channel holds one (a Fetch response is at most ``fetch.max.bytes`` or one batch). Requests:
reading pauses past ``MAX_QUEUED_FRAMES`` frames or ``MAX_QUEUED_FRAME_BYTES`` bytes waiting;
every connection's together within ``queued.max.request.bytes``. A connection closed or reset
drops its waiting frames and cancels the request in progress: no response is built for it. A
connection whose requests wait only because its peer does not read is idle for
``connections.max.idle.ms``.

Bad input never stops the server:

- a frame whose size is negative or above ``socket.request.max.bytes`` (100 MiB), or whose
  header or body cannot be decoded, closes that connection, with the reason logged;
- an ApiVersions request of a version outside :data:`API_VERSIONS` is answered as v0 with
  UNSUPPORTED_VERSION and the supported list (as Kafka does, so the client can retry with a
  version we have); any other API key or version outside the table closes the connection, with
  the reason logged, as Kafka 4's ``SocketServer`` does ("Received request api key ... which is
  not enabled", an ``InvalidRequestException``): a client sends only what ApiVersions
  advertised, so such a request is a broken or hostile one;
- a handler failing with an unexpected exception is logged and answered UNKNOWN_SERVER_ERROR
  when the response schema has a top-level error code, else the connection is closed.

Bounded resources (``server/limits.py``): ``max.connections``, ``max.connections.per.ip``
(+ overrides) close a connection past them at once; ``connections.max.idle.ms`` closes idle
connections; ``queued.max.request.bytes`` bounds the bytes of requests received and not yet
handled over all connections (the connection holding the most is closed past it). The
``--config`` keys are checked by ``server/settings.py`` when the server is built.

Start-up (docs/durability-and-metrics.md): the coordinator shards load in the background
(``CoordinatorRuntime``); the socket serves at once (COORDINATOR_LOAD_IN_PROGRESS for the groups of a
shard still loading) and :meth:`KafkaServer.start` returns once every shard is loaded, so ``serve`` prints
``listening on`` when the broker is ready; a shard that cannot be loaded (bad data on disk)
makes ``start`` raise the LogError. Then the background log compaction starts
(``server/compaction.py``); ``metrics_port`` serves the Prometheus metrics
(``server/metrics.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import inspect
import logging
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.coordinator.assignors import ASSIGNORS
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import uuid_member_id
from groupcoord.protocol.codec import (
    DecodeError,
    build,
    decode_request_body,
    encode_raw_response,
    encode_response,
    parse_request_prefix,
    request_class,
    request_client_id,
    response_class,
    response_frame,
    response_header_version,
)
from groupcoord.protocol.framing import MAX_FRAME_SIZE, FrameDecoder, FrameError
from groupcoord.protocol.versions import ApiKey, api_name, is_supported
from groupcoord.server.apis import (
    KafkaApis,
    RequestContext,
    api_version_entries,
    error_response_entity,
)
from groupcoord.server.brokers import BrokerInfo, BrokerSet
from groupcoord.server.compaction import BackgroundCompaction, CompactionConfig
from groupcoord.server.connection import Close, Later, Outcome
from groupcoord.server.control import ControlPlane
from groupcoord.server.group_commit import GroupCommit
from groupcoord.server.limits import ConnectionQuotas, Limits, QueuedBytes, normalise_ip
from groupcoord.server.metrics import LoopIdleMonitor, MetricsServer
from groupcoord.server.partition_files import max_open_files_from
from groupcoord.server.producer_ids import ProducerIdAllocator
from groupcoord.server.routing import misrouted
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.security.acls import AclStore
from groupcoord.server.security.authorizer import Authorizer, parse_super_users
from groupcoord.server.security.config import ServerSecurity
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.security.listeners import ListenerSpec
from groupcoord.server.security.tls_transport import CLOSE_GRACE_S, TlsProtocol, TlsTransport
from groupcoord.server.settings import check_properties
from groupcoord.server.share_partitions import SHARE_STATE_DIR, SharePartitionManager
from groupcoord.server.topic_registry import TopicRegistry
from groupcoord.server.transaction_markers import TransactionMarkers
from groupcoord.server.transaction_runtime import TransactionRuntime
from groupcoord.storage.log import RecordLog
from groupcoord.storage.memory import MemoryLog
from groupcoord.transactions.config import TransactionConfig

log = logging.getLogger(__name__)

#: How long a restarting broker tries a port that is still held (see ``Server._listen``).
BIND_RETRY_S = 10.0

#: Coordinator shards (``__consumer_offsets`` partitions) of a server with several brokers when
#: none is given: Kafka's default ``offsets.topic.num.partitions``.
DEFAULT_SHARDS_WITH_BROKERS = 50

#: The transaction log's folder in the data directory (its own record log).
TRANSACTION_LOG_DIR = "transactions"

#: Frames queued on one connection before reading from it pauses.
MAX_QUEUED_FRAMES = 256
#: Bytes of whole frames queued on one connection before reading from it pauses (a frame
#: larger than this is still taken: reading pauses after it).
MAX_QUEUED_FRAME_BYTES = 1024 * 1024
#: Responses of one connection gathered before they are handed to the transport: small
#: responses to pipelined requests leave in one write; past this the transport gets them at
#: once and, above its high-water mark, pauses the connection's handling (module doc).
WRITE_BATCH_BYTES = 64 * 1024


#: Requests that may wait for data (``KafkaApis.fetch_now`` answers them early).
_LONG_POLLS = (ApiKey.FETCH, ApiKey.SHARE_FETCH)


def default_storage() -> str:
    try:
        from groupcoord.storage import open_log  # noqa: F401
    except ImportError:
        return "memory"
    return "sqlite"


def open_record_log(kind: str, data_dir: Path, durability: str | None = None) -> RecordLog:
    """The coordinator's record log: ``memory`` or anything ``storage.open_log`` knows, with
    its ``durability`` (``storage/sqlite.py``; None: the backend's default)."""
    if kind == "memory":
        return MemoryLog()
    try:
        from groupcoord.storage import open_log
    except ImportError:
        raise ValueError(f"storage {kind!r} is not available in this build (no storage.open_log); "
                         f"use --storage memory") from None
    opened: RecordLog = (open_log(kind, data_dir) if durability is None
                         else open_log(kind, data_dir, durability=durability))
    return opened


def random_member_id() -> str:
    """Kafka's v0 member ids: a random UUID in Kafka's base64 text form."""
    return uuid_member_id(uuid.uuid4().bytes)


def _route(key: int, version: int) -> tuple[Any, bool, bool]:
    """What dispatch needs of a supported (key, version): its request class, whether the
    request header is v2 (flexible), whether the response header is v1."""
    cls = request_class(key, version)
    assert cls is not None
    return cls, bool(cls.__flexible__), response_header_version(key, version) == 1


class KafkaServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 9092,
                 data_dir: Path | str = "groupcoord-data", storage: str | None = None,
                 shards: int | None = None, properties: dict[str, str] | None = None,
                 advertised_host: str | None = None,
                 max_frame_size: int = MAX_FRAME_SIZE,
                 metrics_port: int | None = None,
                 record_log: RecordLog | None = None,
                 brokers: int = 1, racks: list[str] | None = None,
                 broker_ports: list[int] | None = None,
                 durability: str | None = None,
                 listeners: list[str] | None = None,
                 transaction_log: RecordLog | None = None,
                 share_state_log: RecordLog | None = None) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"--port must be within 0..65535, got {port}")
        #: Listeners, TLS and SASL (``server/security/``): ``listeners`` (``NAME://HOST:PORT``)
        #: or ``listeners=`` in ``properties``, else PLAINTEXT on ``host``:``port``.
        self.security = ServerSecurity(dict(properties or {}), listeners, host, port,
                                       advertised_host)
        self.host = self.security.first.host or "0.0.0.0"
        self.port = self.security.first.port
        self.data_dir = Path(data_dir)
        self.storage = storage or default_storage()
        if durability is not None and self.storage == "memory":
            raise ValueError("--durability applies to the sqlite record log, not --storage memory")
        #: The record log's durability (``storage/sqlite.py``; None: its default, normal).
        self.durability = durability
        self.properties = dict(properties or {})
        for warning in check_properties(self.properties):  # ConfigError: one line
            log.warning("%s", warning)
        # values only read by start() are checked now: a bad one is a config error (status 2)
        parse_super_users(self.properties.get("super.users"))
        self.limits = Limits.from_properties(self.properties)
        self.quotas = ConnectionQuotas(self.limits)
        #: Bytes of requests received and not yet handled, every connection together.
        self.queued = QueuedBytes(self.limits.queued_max_request_bytes)
        self._idle_timer: asyncio.TimerHandle | None = None
        if brokers < 1:
            raise ValueError(f"--brokers must be at least 1, got {brokers}")
        if racks is not None and len(racks) != brokers:
            raise ValueError(f"--racks names {len(racks)} racks for {brokers} brokers: give one "
                             f"per broker")
        #: Brokers served (``server/brokers.py``): one port each, node ids 0..N-1.
        self.num_brokers = brokers
        self.racks = racks
        #: Ports of brokers 1..N-1 (a restart on the same ports); default: --port + node id,
        #: or free ports with --port 0.
        self.broker_ports = broker_ports
        if shards is None and "offsets.topic.num.partitions" in self.properties:
            shards = int(self.properties["offsets.topic.num.partitions"])
        if shards is None:  # __consumer_offsets partitions: Kafka's default 50 with brokers
            shards = 1 if brokers == 1 else DEFAULT_SHARDS_WITH_BROKERS
        if shards < 1:
            raise ValueError(f"--shards must be at least 1, got {shards}")
        self.num_shards = shards
        self.advertised_host = advertised_host
        self.max_frame_size = (self.limits.max_request_bytes
                               if "socket.request.max.bytes" in self.properties else max_frame_size)
        self.config = CoordinatorConfig.from_properties(self.properties)
        unknown = [n for n in self.config.consumer_assignors if n not in ASSIGNORS]
        if unknown:
            raise ValueError(f"config group.consumer.assignors: unknown assignor "
                             f"{unknown[0]!r} (known: {', '.join(ASSIGNORS)}, or their Kafka "
                             f"class names)")
        self.compaction_config = CompactionConfig.from_properties(self.properties)
        self.max_open_files = max_open_files_from(self.properties)
        self.metrics_port = metrics_port
        self.metrics_server: MetricsServer | None = None
        self.idle_monitor: LoopIdleMonitor | None = None
        self.compaction: BackgroundCompaction | None = None
        #: The transaction log's background compaction.
        self.txn_compaction: BackgroundCompaction | None = None
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None
        self.registry: TopicRegistry | None = None
        self.runtime: CoordinatorRuntime | None = None
        self.apis: KafkaApis | None = None
        #: Who may do what (``server/security/``), made by :meth:`start`.
        self.authorizer: Authorizer | None = None
        self._log: RecordLog | None = None
        #: Listening sockets by broker (broker 0's is also ``_server``).
        self.listeners: dict[int, asyncio.Server] = {}
        #: The listening sockets of the other listeners (``--listener``), every broker's.
        self._more_servers: list[asyncio.Server] = []
        #: Who leads what with several brokers (None: one broker).
        self.brokerset: BrokerSet | None = None
        #: The control plane for tests (``server/control.py``): fault rules and actions.
        self.control = ControlPlane(self)
        #: A record log given by the caller (kept open by :meth:`stop`: a restarted server on
        #: the same log finds its groups again, as a broker restarted on its disk).
        self._given_log = record_log
        #: The transaction log (Kafka's ``__transaction_state``) given by the caller, kept open
        #: by :meth:`stop` as ``record_log``; default: its own log in ``transactions/`` of the
        #: data directory (memory with ``--storage memory``).
        self._given_txn_log = transaction_log
        self._txn_log: RecordLog | None = None
        #: One commit of the record logs per loop iteration, answers held until it
        #: (``server/group_commit.py``).
        self.group_commit = GroupCommit()
        #: The transaction coordinator (``server/transaction_runtime.py``), made by :meth:`start`.
        self.transactions: TransactionRuntime | None = None
        #: The share-state log (KIP-932, ``server/share_partitions.py``): given by the caller
        #: (kept open by :meth:`stop`, as ``record_log``), or opened by :meth:`start`.
        self._given_share_log = share_state_log
        self._share_log: RecordLog | None = None
        self.share_partitions: SharePartitionManager | None = None
        self.share_compaction: BackgroundCompaction | None = None
        #: :func:`_route` of each supported (API key, version) seen, looked up once.
        self._routes: dict[tuple[int, int], tuple[Any, bool, bool]] = {}

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        # ``--storage memory`` keeps topics and their data in memory too; a record log given by
        # the caller stands for a disk the server restarts on, so topics stay in the data dir.
        in_memory = self.storage == "memory" and self._given_log is None
        if not in_memory:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        self.registry = TopicRegistry(self.data_dir, in_memory=in_memory,
                                      max_open_files=self.max_open_files)
        self._log = self._given_log or open_record_log(self.storage, self.data_dir,
                                                       self.durability)
        # ACLs (docs/acls.md): acls.json in the data directory; --storage memory reads it once
        # and writes nothing (as the SCRAM credentials).
        acls = AclStore.in_dir(self.data_dir, persist=self.storage != "memory")
        self.authorizer = Authorizer.from_properties(acls, self.properties,
                                                     self.security_listeners)
        log.info("authorization: %d ACLs, allow.everyone.if.no.acl.found=%s, super.users=%s",
                 len(acls), str(self.authorizer.allow_everyone_if_no_acl).lower(),
                 ";".join(sorted(self.authorizer.super_users)) or "(none)")
        self.idle_monitor = LoopIdleMonitor()
        self.idle_monitor.install(loop)
        self.runtime = CoordinatorRuntime(self._log, self.num_shards, self.config,
                                          self.registry.image(), random_member_id)
        self.runtime.start(loop, background=True)
        if self._given_log is None:
            self.group_commit.add(self._log, self._reload_shards, loop)
        self._share_log = self._given_share_log or open_record_log(
            self.storage, self.data_dir / SHARE_STATE_DIR, self.durability)
        self.share_partitions = SharePartitionManager(self._share_log, self.runtime.clock.now_ms,
                                                      self.properties)
        self.share_partitions.group_config = self.runtime.share_group_config
        self.share_partitions.load()  # LogError: the share state cannot be read
        self.share_partitions.keep_topics(set(self.registry.by_id))  # of topics deleted since
        self.share_partitions.start(loop)
        self.security.store = CredentialStore(self.data_dir, persist=self.storage != "memory")
        #: Bound port per listener name, one per broker.
        self.bound: dict[str, list[int]] = {}
        endpoints: dict[str, dict[int, tuple[str, int]]] = {}
        for spec in self.security.listeners:
            ports = self.bound[spec.name] = []
            for b in range(self.num_brokers):
                if b == 0:
                    want = spec.port
                elif self.broker_ports is not None and spec is self.security.first:
                    want = self.broker_ports[b - 1]
                else:  # port 0: a free port for every broker; else the ports after the first
                    want = 0 if spec.port == 0 else spec.port + b
                srv = await self._listen(b, want, start=False, spec=spec)
                ports.append(srv.sockets[0].getsockname()[1])
                if spec is self.security.first:
                    self.listeners[b] = srv
                else:
                    self._more_servers.append(srv)
                endpoints.setdefault(spec.name, {})[b] = self.security.advertised_address(
                    spec, b, ports[-1])
        self._server = self.listeners[0]
        for warning in self.security.warnings(self.authorizer.allow_everyone_if_no_acl,
                                              self.bound):
            log.warning("%s", warning)
        ports = self.bound[self.security.first.name]
        self.port = ports[0]
        advertised, _ = endpoints[self.security.first.name][0]
        producer_ids = ProducerIdAllocator(self.registry.data_dir,
                                           persist=not self.registry.in_memory)
        self.apis = KafkaApis(self.registry, self.runtime, advertised, self.port, self.properties,
                              producer_ids=producer_ids, credentials=self.security.store,
                              share_partitions=self.share_partitions)
        self.transactions = self._start_transactions(loop, producer_ids)
        self.apis.broker.transactions = self.transactions
        self.apis.endpoints = endpoints
        self.apis.control = self.control.run
        self.apis.authorizer = self.authorizer
        self.registry.num_brokers = self.num_brokers
        if self.num_brokers > 1:
            self.brokerset = BrokerSet(
                [BrokerInfo(b, advertised, ports[b], None if self.racks is None else self.racks[b])
                 for b in range(self.num_brokers)], self.num_shards)
            self.apis.brokers = self.brokerset
        for b, listener in self.listeners.items():
            if b != 0:
                await listener.start_serving()
        for srv in self._more_servers:
            await srv.start_serving()
        await self._server.start_serving()
        if self.limits.idle_ms >= 0:
            self._idle_timer = loop.call_later(self.limits.sweep_s, self._sweep_idle)
        if self.metrics_port is not None:
            self.metrics_server = MetricsServer(self, self.host, self.metrics_port)
            await self.metrics_server.start()
        await self.runtime.wait_loaded()  # LogError: a shard cannot be loaded
        self.compaction = BackgroundCompaction(self._log, self.num_shards, self.compaction_config,
                                               self.runtime.clock.now_ms,
                                               self.runtime.metrics.compacted)
        self.compaction.start(loop)
        assert self._txn_log is not None and self.transactions is not None
        # the transaction log is compacted as the group log is (its keys are upserts)
        self.txn_compaction = BackgroundCompaction(self._txn_log,
                                                   self.transactions.config.partitions,
                                                   self.compaction_config,
                                                   self.runtime.clock.now_ms)
        self.txn_compaction.start(loop)
        self.share_compaction = BackgroundCompaction(self._share_log, 1, self.compaction_config,
                                                     self.runtime.clock.now_ms)
        self.share_compaction.start(loop)
        log.info("serving %d shards, storage %s, data in %s", self.num_shards, self.storage,
                 self.data_dir)
        return self.host, self.port

    def _reload_shards(self, shards: list[int]) -> None:
        """The group log lost these shards' latest records (a failed group commit)."""
        if self.runtime is not None:
            for i in shards:
                self.runtime.reload_shard(i)

    def _start_transactions(self, loop: asyncio.AbstractEventLoop,
                            producer_ids: ProducerIdAllocator) -> TransactionRuntime:
        """The transaction coordinator on its own log, loaded (its pending markers written)."""
        assert self.registry is not None and self.runtime is not None
        if self._given_txn_log is not None:
            self._txn_log = self._given_txn_log
        elif self._given_log is not None:  # a log given without its transaction log: memory
            self._txn_log = MemoryLog()
        else:
            txn_dir = self.data_dir / TRANSACTION_LOG_DIR
            if self.storage != "memory":
                txn_dir.mkdir(parents=True, exist_ok=True)
            self._txn_log = open_record_log(self.storage, txn_dir, self.durability)
        registry, runtime = self.registry, self.runtime
        markers = TransactionMarkers(registry.partition, runtime)
        txns = TransactionRuntime(self._txn_log, TransactionConfig.from_properties(self.properties),
                                  producer_ids.allocate, markers, runtime.clock)
        txns.start(loop)
        if self._txn_log is not self._given_txn_log:
            # after the group log: a transaction's offsets are committed before its completion
            self.group_commit.add(self._txn_log, lambda shards: txns.reload(), loop)
        return txns

    async def _listen(self, broker: int, port: int, *, start: bool = True,
                      spec: ListenerSpec | None = None) -> asyncio.Server:
        """Listen for ``broker`` on ``port`` (0: a free one). A given port still held a moment
        after a restart is tried again for up to ``BIND_RETRY_S``: a client that kept retrying
        the port while nothing listened may hold it briefly (a loopback connection to a free
        port of the ephemeral range can connect to itself, until the client drops it)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BIND_RETRY_S
        listener = spec or self.security.first
        tls = self.security.ssl.get(listener.name)
        # TLS listeners: our own TLS over memory BIOs, a bounded memory cost per connection
        # (server/security/tls_transport.py says why not asyncio's ssl=)
        def tls_connection() -> TlsProtocol:
            assert tls is not None
            conn = Connection(self, broker, listener)
            return TlsProtocol(tls, conn, on_secure=conn.secured)

        factory: Callable[[], asyncio.BaseProtocol] = (
            (lambda: Connection(self, broker, listener)) if tls is None else tls_connection)
        while True:
            try:
                return await loop.create_server(factory, listener.host or None, port,
                                                reuse_address=True, backlog=2048,
                                                start_serving=start)
            except OSError as e:
                if port == 0 or e.errno != errno.EADDRINUSE or loop.time() >= deadline:
                    # the address tried, for the one-line start error (server/cli.py)
                    e.filename = listener.url(port)
                    raise
                await asyncio.sleep(0.05)

    def _sweep_idle(self) -> None:
        """Close the connections idle for longer than ``connections.max.idle.ms``: nothing
        received, nothing answered and no request of theirs in progress; a connection whose
        requests wait only because its peer does not read its responses is idle too (Kafka's
        selector counts reads and writes as activity, a stalled write is none)."""
        limit_s = self.limits.idle_ms / 1000
        now = time.monotonic()
        for conn in list(self.connections):
            if (not conn.busy and (not conn.pending or conn.writing_paused)
                    and now - conn.last_active > limit_s):
                log.info("closing connection from %s: idle for more than "
                         "connections.max.idle.ms=%d", conn.peer, self.limits.idle_ms)
                conn.close("idle")
        self._idle_timer = asyncio.get_running_loop().call_later(self.limits.sweep_s,
                                                                 self._sweep_idle)

    def relieve_memory(self) -> None:
        """While the requests received and not handled hold more than
        ``queued.max.request.bytes``, close the connection holding the most of them."""
        queued = self.queued
        while queued.over:
            holders = [c for c in self.connections if not c.closed and c.held > 0]
            if not holders:
                return
            worst = max(holders, key=lambda c: c.held)
            log.warning("closing connection from %s: its unhandled requests hold %d bytes, the "
                        "most of any connection, and all together hold %d, over "
                        "queued.max.request.bytes=%d", worst.peer, worst.held, queued.held,
                        queued.limit)
            worst.close("over queued.max.request.bytes")

    @property
    def security_listeners(self) -> list[tuple[str, str]]:
        """(security protocol, bind host) of each listener: what the default of
        ``allow.everyone.if.no.acl.found`` is decided from (``server/security/authorizer.py``).
        """
        return [(spec.protocol, spec.host) for spec in self.security.listeners]

    @property
    def share_sessions(self) -> Any:
        """The open share sessions (KIP-932; ``server/share_sessions.py``), None before start:
        what the metrics endpoint counts."""
        return None if self.apis is None else self.apis.share_data.sessions

    @property
    def bootstrap_servers(self) -> str:
        """``H:P`` of every broker, comma-separated (broker 0 first)."""
        if self.brokerset is None:
            return f"{self.host}:{self.port}"
        return ",".join(f"{self.host}:{b.port}" for b in self.brokerset.brokers)

    # ------------------------------------------------------------------ brokers (control)

    def _reassign(self, before: list[int], why: str) -> list[int]:
        """After a change of brokers or moves: reload every shard whose coordinator changed
        (the new coordinator loads its groups from the log) and bump the leader epoch."""
        bs = self.brokerset
        assert bs is not None and self.runtime is not None
        changed = bs.changed_shards(before)
        bs.generation += 1
        if self.apis is not None:
            self.apis.brokers_changed()
        for i in changed:
            log.info("shard %d: coordinator moves from broker %d to %d (%s); loading it from "
                     "the log", i, before[i], bs.coordinator_of_shard(i), why)
            self.runtime.reload_shard(i)
        return changed

    def move_coordinator(self, group_id: str, to: int | None = None) -> tuple[int, int]:
        """Move the coordinator of ``group_id`` (its whole shard) to broker ``to`` (default: the
        next live broker); (old, new) broker."""
        bs = self._multi()
        assert self.runtime is not None
        shard = self.runtime.shard_of(group_id)
        before = bs.owners()
        old = before[shard]
        if to is None:
            to = bs._first_live_from(old + 1)
        bs.check_broker(to)
        if to in bs.down:
            raise ValueError(f"broker {to} is down")
        bs.moved[shard] = to
        self._reassign(before, f"moved, group {group_id}")
        return old, to

    def move_transaction_coordinator(self, transactional_id: str,
                                     to: int | None = None) -> tuple[int, int]:
        """Move the coordinator of ``transactional_id`` (its whole transaction-log partition) to
        broker ``to`` (default: the next live broker), which takes the partition over: the next
        coordinator epoch, its pending markers written again; (old, new) broker."""
        bs = self._multi()
        assert self.transactions is not None
        partition = self.transactions.coordinator.partition_of(transactional_id)
        old = bs.transaction_coordinator(partition)
        if to is None:
            to = bs._first_live_from(old + 1)
        bs.check_broker(to)
        if to in bs.down:
            raise ValueError(f"broker {to} is down")
        bs.txn_moved[partition] = to
        bs.generation += 1
        if self.apis is not None:
            self.apis.brokers_changed()
        log.info("transaction-log partition %d: coordinator moves from broker %d to %d "
                 "(transactional id %r)", partition, old, to, transactional_id)
        self.transactions.take_over([partition])
        return old, to

    def _transaction_owners(self) -> list[int]:
        """The broker coordinating each transaction-log partition now."""
        bs = self._multi()
        assert self.transactions is not None
        return [bs.transaction_coordinator(p) for p in range(self.transactions.config.partitions)]

    def _transactions_moved(self, before: list[int]) -> None:
        """The transaction-log partitions whose coordinator changed are taken over by the new
        one (the next coordinator epoch, pending markers written again)."""
        assert self.transactions is not None
        changed = [p for p, (a, b) in enumerate(zip(before, self._transaction_owners(),
                                                    strict=True)) if a != b]
        if changed:
            self.transactions.take_over(changed)

    def broker_down(self, broker: int) -> list[str]:
        """Take ``broker`` down: its connections are closed, and so is every connection made to
        it until it comes back; its partitions and coordinators go to the next live broker. The
        peers dropped.

        The port stays bound while the broker is down (a client connecting is closed at once, as
        a Kafka client sees a broker that is shutting down): were it released, a client retrying
        it could take it (an outgoing connection to a free loopback port of the ephemeral range
        can connect to itself) and the broker could not come back on its port."""
        bs = self._multi()
        bs.check_broker(broker)
        if broker in bs.down:
            raise ValueError(f"broker {broker} is already down")
        if len(bs.down) + 1 >= len(bs.brokers):
            raise ValueError("the last live broker cannot be taken down")
        before = bs.owners()
        txn_before = self._transaction_owners()
        bs.down.add(broker)
        dropped = []
        for conn in list(self.connections):
            if conn.broker == broker:
                dropped.append(conn.peer)
                conn.abort()
        self._reassign(before, f"broker {broker} down")
        self._transactions_moved(txn_before)
        return sorted(dropped)

    def broker_is_down(self, broker: int) -> bool:
        return self.brokerset is not None and broker in self.brokerset.down

    def broker_up(self, broker: int) -> None:
        """Bring ``broker`` back: it leads its preferred partitions and coordinators again and
        serves the connections made to its port from now on."""
        bs = self._multi()
        bs.check_broker(broker)
        if broker not in bs.down:
            raise ValueError(f"broker {broker} is not down")
        before = bs.owners()
        txn_before = self._transaction_owners()
        bs.down.discard(broker)
        self._reassign(before, f"broker {broker} up")
        self._transactions_moved(txn_before)

    def _multi(self) -> BrokerSet:
        if self.brokerset is None:
            raise ValueError("this server has one broker (start it with --brokers N)")
        return self.brokerset

    async def stop(self, grace_s: float = 2.0) -> None:
        """Stop listening, close every connection (``grace_s`` to flush what is being written,
        then abort), and close the logs."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self.group_commit.commit()  # the answers held for it, before the connections close
        for listener in list(self.listeners.values()):
            if listener is not self._server:  # broker 0's first listener is closed below
                listener.close()
        self.listeners.clear()
        for srv in self._more_servers:
            srv.close()
        self._more_servers.clear()
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close("server shutting down")
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), grace_s)
            except TimeoutError:
                for conn in list(self.connections):
                    conn.abort()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._server.wait_closed(), grace_s)
            self._server = None
        if self.metrics_server is not None:
            await self.metrics_server.stop()
            self.metrics_server = None
        if self.compaction is not None:
            self.compaction.stop()
        if self.txn_compaction is not None:
            self.txn_compaction.stop()
            self.txn_compaction = None
        if self.share_compaction is not None:
            self.share_compaction.stop()
            self.share_compaction = None
        if self.share_partitions is not None:
            self.share_partitions.stop()
        if self._share_log is not None:
            if self._share_log is not self._given_share_log:
                self._share_log.close()
            self._share_log = None
        # before the runtime waits for its loader thread, which would wait for an open group
        self.group_commit.close()
        if self.runtime is not None:
            self.runtime.stop()
        if self.idle_monitor is not None:
            self.idle_monitor.uninstall()
        if self.transactions is not None:
            self.transactions.stop()
            self.transactions = None
        if self._txn_log is not None:
            if self._txn_log is not self._given_txn_log:
                self._txn_log.close()
            self._txn_log = None
        if self._log is not None:
            if self._log is not self._given_log:
                self._log.close()
            self._log = None
        if self.registry is not None:
            # last: the clean-shutdown marker (no partition file is read at the next start)
            self.registry.close(clean=True)
        log.info("stopped")

    # ------------------------------------------------------------------ dispatch

    def dispatch(self, buf: bytes, conn: Connection) -> Outcome:
        """Handle one request frame: its encoded response frame, None, Close, or Later (a
        response given later)."""
        try:
            key, version, corr = parse_request_prefix(buf)
        except DecodeError as e:
            return Close(str(e))
        route = self._routes.get((key, version))
        if route is None:
            if not is_supported(key, version):
                return self._unsupported(key, version, corr, conn)
            route = self._routes[key, version] = _route(key, version)
        cls, flexible, header_v1 = route
        try:
            client_id, offset = request_client_id(buf, flexible)
            body = decode_request_body(cls, buf, offset)
        except DecodeError as e:
            return Close(f"malformed {api_name(key)} v{version} request: {e}")
        ctx = conn.context(key, version, client_id or "")
        conn.client_id = ctx.client_id
        assert self.apis is not None
        faults = self.control.faults
        if faults.active:
            entity = faults.take_error(key, version, body, ctx.client_id, conn.broker)
            if entity is not None:
                log.info("%s: %s v%d answered %s (injected)", conn.peer, api_name(key), version,
                         entity)
                return encode_response(key, version, corr, entity)
        if self.brokerset is not None:
            entity = misrouted(self.brokerset, self.runtime, self.registry, key, version, body,
                               conn.broker, self.transactions)
            if entity is not None:
                return encode_response(key, version, corr, entity)
        if faults.active:
            delay = faults.delay_ms(key, ctx.client_id, conn.broker)
            if delay > 0:
                return self._later(self._delayed(delay, body, ctx), key, version, corr, conn)
        try:
            result = self.apis.handle(body, ctx)
            if result is None:
                return None
            if isinstance(result, bytes):  # a body encoded by the handler itself
                return response_frame(corr, result, header_v1)
            if inspect.iscoroutine(result) or isinstance(result, asyncio.Future):
                # a response given later (a long-poll Fetch, a JoinGroup)
                return self._later(result, key, version, corr, conn)
            return encode_response(key, version, corr, result)
        except Exception:
            log.exception("%s: %s v%d failed", conn.peer, api_name(key), version)
            return self._internal_error(key, version, corr)

    def _unsupported(self, key: int, version: int, corr: int, conn: Connection) -> bytes | Close:
        """The answer to an API key or version outside :data:`API_VERSIONS` (module doc):
        ApiVersions v0 with UNSUPPORTED_VERSION, else the connection is closed."""
        if key == ApiKey.API_VERSIONS:
            log.info("%s: unsupported ApiVersions v%d (correlation id %d): answered v0",
                     conn.peer, version, corr)
            cls = response_class(ApiKey.API_VERSIONS, 0)
            assert cls is not None
            return encode_response(ApiKey.API_VERSIONS, 0, corr, build(
                cls, error_code=ErrorCode.unsupported_version, api_keys=api_version_entries()))
        return Close(f"received request api key {key} ({api_name(key)}) with version {version} "
                     f"which is not enabled")

    async def _delayed(self, delay_ms: int, body: Any, ctx: RequestContext) -> Any:
        """Handle a request after an injected latency (``server/faults.py``)."""
        await asyncio.sleep(delay_ms / 1000)
        assert self.apis is not None
        result = self.apis.handle(body, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _internal_error(self, key: int, version: int, corr: int) -> bytes | Close:
        entity = error_response_entity(key, version, ErrorCode.unknown_server_error)
        if entity is None:
            return Close(f"internal error handling {api_name(key)} v{version}")
        return encode_response(key, version, corr, entity)

    def _later(self, wait: Coroutine[Any, Any, Any] | asyncio.Future[Any], key: int,
               version: int, corr: int, conn: Connection) -> Later:
        """A response that ``wait`` gives later: the connection runs ``wait`` as its task and
        this encodes what it returns (:class:`Later`: the coroutine is the task's own, so a
        close before the task starts leaves no coroutine un-awaited)."""

        def finish(task: asyncio.Future[Any]) -> bytes | Close | None:
            try:
                entity = task.result()
                if entity is None:
                    return None
                if isinstance(entity, bytes):
                    return encode_raw_response(key, version, corr, entity)
                return encode_response(key, version, corr, entity)
            except Exception:
                log.exception("%s: %s v%d failed", conn.peer, api_name(key), version)
                return self._internal_error(key, version, corr)

        return Later(wait, finish)


class Connection(asyncio.Protocol):
    """One client connection: frames in, responses out, in order."""

    def __init__(self, server: KafkaServer, broker: int = 0,
                 spec: ListenerSpec | None = None) -> None:
        self.server = server
        self.spec = spec
        #: The broker (node id) this connection reached.
        self.broker = broker
        self.decoder = FrameDecoder(server.max_frame_size)
        self.pending: deque[bytes] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = ""
        #: ``client_host`` as the connection quotas count it (an IPv4-mapped address as IPv4).
        self.client_ip = ""
        #: Who the client is (set by authentication) and the listener it came in on.
        self.principal = "User:ANONYMOUS"
        self.listener = "PLAINTEXT" if spec is None else spec.name
        #: Handles each request frame: the server's dispatch, or a SASL session's until the
        #: client has authenticated (``server/security/sasl.py``).
        self.handler: Callable[[bytes, Connection], Outcome] = server.dispatch
        #: The client id of the last request on this connection (control: drop-connections).
        self.client_id = ""
        self.busy = False
        self.closed = False
        #: Counted in the server's connection quotas (released when the connection is lost).
        self.admitted = False
        #: Bytes of the frames in ``pending`` and of this connection's share of the server's
        #: queued request bytes (``pending_bytes`` + the decoder's incomplete frame).
        self.pending_bytes = 0
        self.held = 0
        #: ``time.monotonic()`` of the last bytes received or answer sent (idle connections).
        self.last_active = time.monotonic()
        self.reading_paused = False
        self.writing_paused = False
        self._task: asyncio.Future[Any] | None = None
        #: Builds the response of ``_task`` once it is done (:class:`Later`).
        self._finish: Callable[[asyncio.Future[Any]], bytes | Close | None] | None = None
        #: The context of the last request (:meth:`context`).
        self._ctx: RequestContext | None = None

    def context(self, api_key: int, api_version: int, client_id: str) -> RequestContext:
        """The RequestContext of a request on this connection: the last one again when it is
        the same (a client sends the same API, version and client id over and over; the
        context is immutable, so requests can share it)."""
        ctx = self._ctx
        if (ctx is None or ctx.api_key != api_key or ctx.api_version != api_version
                or ctx.client_id != client_id or ctx.principal != self.principal):
            ctx = self._ctx = RequestContext(api_key, api_version, client_id, self.client_host,
                                             self.principal, self.listener, id(self),
                                             self.broker)
        return ctx

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.client_host = str(peer[0])
            self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.server.broker_is_down(self.broker):
            log.debug("connection from %s to broker %d, which is down: closed", self.peer,
                      self.broker)
            transport.abort()
            return
        self.client_ip = normalise_ip(self.client_host)
        refused = self.server.quotas.admit(self.client_ip)
        if refused is not None:
            self.closed = True
            transport.abort()
            return
        self.admitted = True
        self.server.connections.add(self)
        if self.spec is not None and not isinstance(transport, TlsTransport):
            self.server.security.on_connect(self, transport, self.spec)
        log.debug("connection from %s", self.peer)

    def limit_frames(self, max_frame_size: int | None) -> None:
        self.decoder.limit(self.server.max_frame_size if max_frame_size is None
                           else min(max_frame_size, self.server.max_frame_size))

    def secured(self) -> None:
        """The TLS handshake of this connection is complete (``TlsProtocol``): its principal
        (client certificate) or SASL session. A TLS connection is admitted, and counted in
        ``max.connections``, from the TCP accept on, as Kafka counts it, not from the end of
        its handshake: clients that never complete one cannot exceed the limit."""
        if self.spec is not None and self.transport is not None and not self.closed:
            self.server.security.on_connect(self, self.transport, self.spec)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self.admitted:
            self.admitted = False
            self.server.quotas.release(self.client_ip)
        self._cancel_task()
        self._drop_buffers()
        if self.server.apis is not None:  # state bound to the connection (share sessions)
            self.server.apis.connection_closed(id(self))
        # a SASL session refers back to this connection: no cycle for the rarely run cyclic
        # collector to find (gc_tuning.py), the memory goes back at once
        self.handler = self.server.dispatch
        log.debug("connection from %s closed", self.peer)

    def write_buffered(self) -> int:
        """Bytes of responses written and not yet taken by the client (the metrics)."""
        return 0 if self.transport is None else self.transport.get_write_buffer_size()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.last_active = time.monotonic()  # the peer reads: the connection is not idle
        self._run()

    def _drop_buffers(self) -> None:
        """Forget the requests received and not handled (and give their bytes back)."""
        self.pending.clear()
        self.pending_bytes = 0
        if self.decoder.buffered:
            self.decoder = FrameDecoder(self.server.max_frame_size)
        self.server.queued.held -= self.held
        self.held = 0

    def _account(self) -> None:
        held = self.decoder.buffered + self.pending_bytes
        self.server.queued.held += held - self.held
        self.held = held

    def close(self, reason: str) -> None:
        if self.closed:
            return
        # the answers held for a pending group commit (this connection's among them) go out
        # before the close, in the order they were written
        self.server.group_commit.commit()
        self.closed = True
        self._drop_buffers()
        self._cancel_task()
        transport = self.transport
        if transport is not None:
            transport.close()
            if transport.get_write_buffer_size():
                # a peer that does not read what is left cannot keep the connection open
                asyncio.get_running_loop().call_later(CLOSE_GRACE_S, transport.abort)
        log.debug("closing connection from %s: %s", self.peer, reason)

    def abort(self) -> None:
        self.closed = True
        self._drop_buffers()
        self._cancel_task()
        if self.transport is not None:
            self.transport.abort()

    def _cancel_task(self) -> None:
        """A closed connection's request in progress (a long-poll Fetch, a deferred JoinGroup)
        is dropped: its response is never built."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_active = time.monotonic()
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            log.warning("closing connection from %s: %s", self.peer, e)
            self.close(str(e))
            return
        if frames:
            self.pending.extend(frames)
            self.pending_bytes += sum(map(len, frames))
            if self.busy and self._ctx is not None and self._ctx.api_key in _LONG_POLLS \
                    and self.server.apis is not None:
                # a long-poll Fetch would hold these for up to its MaxWaitMs (apis.fetch_now)
                self.server.apis.fetch_now(self._ctx)
            self._run()
        else:
            self._account()
        if self.server.queued.over:
            self.server.relieve_memory()

    def _run(self) -> None:
        transport = self.transport
        if transport is None:
            return
        out: list[bytes] = []
        out_bytes = 0
        while self.pending and not self.busy and not self.closed and not self.writing_paused:
            request = self.pending.popleft()
            self.pending_bytes -= len(request)
            outcome = self.handler(request, self)
            if outcome is None:
                continue
            if isinstance(outcome, bytes):
                out.append(outcome)
                out_bytes += len(outcome)
                if out_bytes >= WRITE_BATCH_BYTES:
                    # to the transport now: above its high-water mark it calls pause_writing
                    # (here, synchronously), which ends this loop; the requests behind wait
                    # until the peer has read (resume_writing)
                    self._write(out[0] if len(out) == 1 else b"".join(out))
                    out = []
                    out_bytes = 0
                continue
            if isinstance(outcome, Close):
                if outcome.response:
                    out.append(outcome.response)
                if out:
                    self._write(b"".join(out))
                    out = []
                log.warning("closing connection from %s: %s", self.peer, outcome.reason)
                self.close(outcome.reason)
                return
            self.busy = True
            self._finish = outcome.finish
            self._task = asyncio.ensure_future(outcome.wait)
            self._task.add_done_callback(self._finished)
            break
        if out:
            self._write(out[0] if len(out) == 1 else b"".join(out))
        if self.closed:
            return
        self._account()
        if not self.reading_paused:
            if (len(self.pending) > MAX_QUEUED_FRAMES
                    or self.pending_bytes > MAX_QUEUED_FRAME_BYTES):
                self.reading_paused = True
                transport.pause_reading()
        elif (len(self.pending) < MAX_QUEUED_FRAMES // 2
              and self.pending_bytes < MAX_QUEUED_FRAME_BYTES // 2):
            self.reading_paused = False
            transport.resume_reading()

    def _write(self, data: bytes) -> None:
        """An answer to the client: now, or once the pending group commit is done."""
        self.server.group_commit.write(self, data)

    def answer(self, data: bytes) -> None:
        """An answer written outside the request loop (a delayed SASL failure): behind any
        answer still held for the pending group commit (:meth:`close` sends them all)."""
        self._write(data)

    def _finished(self, task: asyncio.Future[Any]) -> None:
        self.busy = False
        self._task = None
        finish, self._finish = self._finish, None
        if task.cancelled() or finish is None:
            return
        if self.closed:
            task.exception()  # retrieved: a closed connection's failure is not reported again
            return
        outcome = finish(task)
        if isinstance(outcome, Close):
            if outcome.response:
                self._write(outcome.response)
            log.warning("closing connection from %s: %s", self.peer, outcome.reason)
            self.close(outcome.reason)
            return
        if outcome is not None:
            self._write(outcome)
        self.last_active = time.monotonic()
        self._run()
