"""The asyncio Kafka server: connections, request pipelines, dispatch (docs/wire.md).

Per connection, requests are handled one at a time in arrival order and answered in that order
(Kafka mutes a channel while one of its requests is in flight; clients may still pipeline: the
frames wait in our buffer). Most handlers are synchronous, so a burst of pipelined requests is
handled in one go and the responses leave in one write; a Fetch that waits for data holds the
connection's later requests until it is answered. Reading pauses when too many frames are
queued or the peer does not read its responses (transport flow control).

Bad input never stops the server:

- a frame whose size is negative or above ``max_frame_size`` (100 MiB), or whose header or body
  cannot be decoded, closes that connection, with the reason logged;
- an API key or version outside :data:`API_VERSIONS` gets UNSUPPORTED_VERSION: ApiVersions is
  answered as v0 with the supported list (as Kafka does, so the client can retry with a version
  we have); another API known to kio is answered in its own response schema when that schema
  has a top-level error code; anything else gets ``correlation_id, int16 35`` (the most a client
  can parse without a schema);
- a handler failing with an unexpected exception is logged and answered UNKNOWN_SERVER_ERROR
  when the response schema has a top-level error code, else the connection is closed.

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
import inspect
import logging
import socket
import struct
import uuid
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.ids import uuid_member_id
from groupcoord.protocol.codec import (
    DecodeError,
    build,
    decode_request_body,
    encode_raw_response,
    encode_response,
    parse_request_header,
    parse_request_prefix,
    request_class,
    response_class,
)
from groupcoord.protocol.framing import MAX_FRAME_SIZE, FrameDecoder, FrameError, frame
from groupcoord.protocol.versions import ApiKey, api_name, is_supported
from groupcoord.server.apis import (
    KafkaApis,
    RequestContext,
    api_version_entries,
    error_response_entity,
)
from groupcoord.server.compaction import BackgroundCompaction, CompactionConfig
from groupcoord.server.metrics import LoopIdleMonitor, MetricsServer
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.topic_registry import TopicRegistry
from groupcoord.storage.log import RecordLog
from groupcoord.storage.memory import MemoryLog

log = logging.getLogger(__name__)

#: Frames queued on one connection before reading from it pauses.
MAX_QUEUED_FRAMES = 256


@dataclass(slots=True, frozen=True)
class Close:
    """Dispatch outcome: close the connection (after the responses already produced)."""

    reason: str


Outcome = bytes | Close | Awaitable["bytes | Close | None"] | None


def default_storage() -> str:
    try:
        from groupcoord.storage import open_log  # noqa: F401
    except ImportError:
        return "memory"
    return "sqlite"


def open_record_log(kind: str, data_dir: Path) -> RecordLog:
    """The coordinator's record log: ``memory`` or anything ``storage.open_log`` knows."""
    if kind == "memory":
        return MemoryLog()
    try:
        from groupcoord.storage import open_log
    except ImportError:
        raise ValueError(f"storage {kind!r} is not available in this build (no storage.open_log); "
                         f"use --storage memory") from None
    opened: RecordLog = open_log(kind, data_dir)
    return opened


def random_member_id() -> str:
    """Kafka's v0 member ids: a random UUID in Kafka's base64 text form."""
    return uuid_member_id(uuid.uuid4().bytes)


class KafkaServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 9092,
                 data_dir: Path | str = "groupcoord-data", storage: str | None = None,
                 shards: int = 1, properties: dict[str, str] | None = None,
                 advertised_host: str | None = None,
                 max_frame_size: int = MAX_FRAME_SIZE,
                 metrics_port: int | None = None) -> None:
        self.host = host
        self.port = port
        self.data_dir = Path(data_dir)
        self.storage = storage or default_storage()
        if shards < 1:
            raise ValueError(f"--shards must be at least 1, got {shards}")
        self.num_shards = shards
        self.properties = dict(properties or {})
        self.advertised_host = advertised_host
        self.max_frame_size = max_frame_size
        self.config = CoordinatorConfig.from_properties(self.properties)
        self.compaction_config = CompactionConfig.from_properties(self.properties)
        self.metrics_port = metrics_port
        self.metrics_server: MetricsServer | None = None
        self.idle_monitor: LoopIdleMonitor | None = None
        self.compaction: BackgroundCompaction | None = None
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None
        self.registry: TopicRegistry | None = None
        self.runtime: CoordinatorRuntime | None = None
        self.apis: KafkaApis | None = None
        self._log: RecordLog | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.registry = TopicRegistry(self.data_dir)
        self._log = open_record_log(self.storage, self.data_dir)
        self.idle_monitor = LoopIdleMonitor()
        self.idle_monitor.install(loop)
        self.runtime = CoordinatorRuntime(self._log, self.num_shards, self.config,
                                          self.registry.image(), random_member_id)
        self.runtime.start(loop, background=True)
        self._server = await loop.create_server(lambda: Connection(self), self.host, self.port,
                                                reuse_address=True, backlog=2048,
                                                start_serving=False)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        advertised = self.advertised_host or self.host
        if advertised in ("", "0.0.0.0", "::"):
            advertised = socket.gethostname()
        self.apis = KafkaApis(self.registry, self.runtime, advertised, self.port, self.properties)
        await self._server.start_serving()
        if self.metrics_port is not None:
            self.metrics_server = MetricsServer(self, self.host, self.metrics_port)
            await self.metrics_server.start()
        await self.runtime.wait_loaded()  # LogError: a shard cannot be loaded
        self.compaction = BackgroundCompaction(self._log, self.num_shards, self.compaction_config,
                                               self.runtime.clock.now_ms,
                                               self.runtime.metrics.compacted)
        self.compaction.start(loop)
        log.info("serving %d shards, storage %s, data in %s", self.num_shards, self.storage,
                 self.data_dir)
        return self.host, self.port

    async def stop(self, grace_s: float = 2.0) -> None:
        """Stop listening, close every connection (``grace_s`` to flush what is being written,
        then abort), and close the logs."""
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
        if self.runtime is not None:
            self.runtime.stop()
        if self.idle_monitor is not None:
            self.idle_monitor.uninstall()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.registry is not None:
            self.registry.close()
        log.info("stopped")

    # ------------------------------------------------------------------ dispatch

    def dispatch(self, buf: bytes, conn: Connection) -> Outcome:
        """Handle one request frame: its encoded response frame, None, Close, or an awaitable."""
        try:
            key, version, corr = parse_request_prefix(buf)
        except DecodeError as e:
            return Close(str(e))
        if not is_supported(key, version):
            log.info("%s: unsupported %s v%d (correlation id %d)", conn.peer, api_name(key),
                     version, corr)
            if key == ApiKey.API_VERSIONS:
                cls = response_class(ApiKey.API_VERSIONS, 0)
                assert cls is not None
                return encode_response(ApiKey.API_VERSIONS, 0, corr, build(
                    cls, error_code=ErrorCode.unsupported_version, api_keys=api_version_entries()))
            entity = error_response_entity(key, version, ErrorCode.unsupported_version)
            if entity is None:
                return frame(struct.pack(">ih", corr, ErrorCode.unsupported_version.value))
            return encode_response(key, version, corr, entity)
        cls = request_class(key, version)
        assert cls is not None
        try:
            header = parse_request_header(buf, cls.__flexible__)
            body = decode_request_body(cls, buf, header.size)
        except DecodeError as e:
            return Close(f"malformed {api_name(key)} v{version} request: {e}")
        ctx = RequestContext(key, version, header.client_id or "", conn.client_host)
        assert self.apis is not None
        try:
            result = self.apis.handle(body, ctx)
            if result is None:
                return None
            if isinstance(result, bytes):  # a body encoded by the handler itself
                return encode_raw_response(key, version, corr, result)
            if inspect.isawaitable(result):
                return self._finish_later(result, key, version, corr, conn)
            return encode_response(key, version, corr, result)
        except Exception:
            log.exception("%s: %s v%d failed", conn.peer, api_name(key), version)
            return self._internal_error(key, version, corr)

    def _internal_error(self, key: int, version: int, corr: int) -> bytes | Close:
        entity = error_response_entity(key, version, ErrorCode.unknown_server_error)
        if entity is None:
            return Close(f"internal error handling {api_name(key)} v{version}")
        return encode_response(key, version, corr, entity)

    async def _finish_later(self, result: Awaitable[Any], key: int, version: int, corr: int,
                            conn: Connection) -> bytes | Close | None:
        try:
            entity = await result
            if entity is None:
                return None
            if isinstance(entity, bytes):
                return encode_raw_response(key, version, corr, entity)
            return encode_response(key, version, corr, entity)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: %s v%d failed", conn.peer, api_name(key), version)
            return self._internal_error(key, version, corr)


class Connection(asyncio.Protocol):
    """One client connection: frames in, responses out, in order."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.decoder = FrameDecoder(server.max_frame_size)
        self.pending: deque[bytes] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = ""
        self.busy = False
        self.closed = False
        self.reading_paused = False
        self.writing_paused = False
        self._task: asyncio.Future[Any] | None = None

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
        self.server.connections.add(self)
        log.debug("connection from %s", self.peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self.pending.clear()
        log.debug("connection from %s closed", self.peer)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._run()

    def close(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.pending.clear()
        if self.transport is not None:
            self.transport.close()
        log.debug("closing connection from %s: %s", self.peer, reason)

    def abort(self) -> None:
        self.closed = True
        self.pending.clear()
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            log.warning("closing connection from %s: %s", self.peer, e)
            self.close(str(e))
            return
        if frames:
            self.pending.extend(frames)
            self._run()

    def _run(self) -> None:
        transport = self.transport
        if transport is None:
            return
        out: list[bytes] = []
        dispatch = self.server.dispatch
        while self.pending and not self.busy and not self.closed and not self.writing_paused:
            outcome = dispatch(self.pending.popleft(), self)
            if outcome is None:
                continue
            if isinstance(outcome, bytes):
                out.append(outcome)
                continue
            if isinstance(outcome, Close):
                if out:
                    transport.write(b"".join(out))
                    out = []
                log.warning("closing connection from %s: %s", self.peer, outcome.reason)
                self.close(outcome.reason)
                return
            self.busy = True
            self._task = asyncio.ensure_future(outcome)
            self._task.add_done_callback(self._finished)
            break
        if out:
            transport.write(out[0] if len(out) == 1 else b"".join(out))
        if len(self.pending) > MAX_QUEUED_FRAMES and not self.reading_paused:
            self.reading_paused = True
            transport.pause_reading()
        elif self.reading_paused and len(self.pending) < MAX_QUEUED_FRAMES // 2 and not self.closed:
            self.reading_paused = False
            transport.resume_reading()

    def _finished(self, task: asyncio.Future[Any]) -> None:
        self.busy = False
        self._task = None
        if self.closed or task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s: request failed: %s", self.peer, exc)
            self.close("internal error")
            return
        outcome = task.result()
        if isinstance(outcome, Close):
            log.warning("closing connection from %s: %s", self.peer, outcome.reason)
            self.close(outcome.reason)
            return
        if outcome is not None and self.transport is not None:
            self.transport.write(outcome)
        self._run()
