"""One asyncio connection to a Kafka broker, for the drivers of our sans-IO members.

The asyncio counterpart of :class:`groupcoord.protocol.client.KafkaClient` (which blocks): it
frames requests with our codec, pipelines them (any number in flight, answered in order, matched
by correlation id as Kafka guarantees per connection), and negotiates each API's version from
ApiVersions as ``min(wanted, broker max)`` (KIP-35). A broken connection fails every pending
request with :class:`ConnectionLost`; there is no reconnection here (the driver reconnects).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
from typing import Any

from groupcoord.protocol.codec import build, decode_response, encode_request, request_class

__all__ = ["BrokerConnection", "ConnectionLost", "UnsupportedApi"]


class ConnectionLost(Exception):
    """The connection closed or broke; pending requests failed with it."""


class UnsupportedApi(Exception):
    """The broker does not offer the API in a version range the caller can use."""


class BrokerConnection:
    """A pipelined connection; use :meth:`open`, then :meth:`call` or :meth:`send`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self.client_id = client_id
        #: ``host:port`` of the broker (for log lines).
        self.peer = "?"
        self._corr = 0
        self._pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._versions: dict[int, tuple[int, int]] = {}
        self._closed: BaseException | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str = "groupcoord-client",
                   timeout_s: float = 10.0) -> BrokerConnection:
        # asyncio.timeout, not asyncio.wait_for: on Python 3.11 wait_for returns (or raises) the
        # inner result when it finished in the same loop iteration as the caller was cancelled,
        # which loses the cancellation (CPython gh-86296, fixed by 3.12's rewrite): a refused
        # connect then turned a driver's close() into an endless reconnection loop.
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(host, port)
        except (TimeoutError, OSError) as e:
            raise ConnectionLost(f"cannot connect to {host}:{port}: {e!r}") from None
        conn = cls(reader, writer, client_id)
        conn.peer = f"{host}:{port}"
        try:
            async with asyncio.timeout(timeout_s):
                await conn._negotiate()
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _negotiate(self) -> None:
        cls = request_class(18, 3)
        assert cls is not None
        resp = await self.send(build(cls, client_software_name="groupcoord",
                                     client_software_version="0.1.0"))
        self._versions = {int(k.api_key): (int(k.min_version), int(k.max_version))
                          for k in resp.api_keys}

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def version_for(self, api_key: int, wanted_max: int, wanted_min: int = 0) -> int:
        rng = self._versions.get(api_key)
        if rng is None or rng[1] < wanted_min or rng[0] > wanted_max:
            raise UnsupportedApi(f"the broker does not support API {api_key} "
                                 f"v{wanted_min}..v{wanted_max} (it offers {rng})")
        return min(wanted_max, rng[1])

    def supports(self, api_key: int, version: int) -> bool:
        rng = self._versions.get(api_key)
        return rng is not None and rng[0] <= version <= rng[1]

    def send(self, body: Any) -> asyncio.Future[Any]:
        """Write one kio request entity now; a future of its decoded response."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._closed is not None:
            fut.set_exception(ConnectionLost(str(self._closed)))
            return fut
        self._corr += 1
        corr = self._corr
        self._pending[corr] = (int(body.__api_key__), int(body.__version__), fut)
        self._writer.write(encode_request(body, corr, self.client_id))
        return fut

    async def call(self, api_key: int, wanted_max: int, values: Mapping[str, Any] | None = None,
                   *, wanted_min: int = 0, **kw: Any) -> Any:
        """Send API ``api_key`` at the best common version, built from plain values."""
        version = self.version_for(api_key, wanted_max, wanted_min)
        cls = request_class(api_key, version)
        if cls is None:
            raise UnsupportedApi(f"no schema for API {api_key} v{version}")
        return await self.send(build(cls, values, **kw))

    async def _read_loop(self) -> None:
        try:
            while True:
                head = await self._reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                frame = await self._reader.readexactly(size)
                (corr,) = struct.unpack_from(">i", frame, 0)
                entry = self._pending.pop(corr, None)
                if entry is None:
                    raise ConnectionLost(f"response with unknown correlation id {corr}")
                key, version, fut = entry
                try:
                    _, response = decode_response(key, version, frame)
                except Exception as e:  # a response we cannot read: that request fails
                    if not fut.done():
                        fut.set_exception(e)
                    continue
                if not fut.done():
                    fut.set_result(response)
        except (asyncio.IncompleteReadError, OSError, ConnectionLost) as e:
            self._fail(e)
        except asyncio.CancelledError:
            self._fail(ConnectionLost("connection closed"))
            raise

    def _fail(self, why: BaseException) -> None:
        if self._closed is None:
            self._closed = why
        pending, self._pending = self._pending, {}
        for _, _, fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionLost(f"connection lost: {why!r}"))

    async def close(self, grace_s: float = 1.0) -> None:
        """Fail what is pending and close the socket: what was written is flushed for at most
        ``grace_s`` (a peer that stopped reading, e.g. a paused broker, would hold it forever),
        then the socket is aborted. A cancellation of the caller is not swallowed."""
        self._fail(ConnectionLost("connection closed"))
        self._read_task.cancel()
        await asyncio.wait({self._read_task})
        self._writer.close()
        try:
            async with asyncio.timeout(grace_s):
                await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()
        except OSError:
            pass
