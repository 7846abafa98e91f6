"""The server side of TLS for the SSL and SASL_SSL listeners: ``ssl.SSLObject`` over memory BIOs
(Python's documented "Memory BIO support", the same OpenSSL engine as ``asyncio``'s TLS), driven
from a plain TCP connection, with a bounded memory cost per connection.

Why not ``loop.create_server(ssl=...)``: CPython 3.11's ``asyncio.sslproto.SSLProtocol``
allocates a 256 KiB receive buffer (``max_size``) per connection and keeps it for the
connection's life, and each application read asks OpenSSL for up to 256 KiB. With many idle
TLS connections that buffer is most of the server's memory (measured: 278 KiB of RSS per idle
connection, and a second wave of connections after the first closed added 57 % more, the freed
256 KiB blocks fragmenting the heap: ``groupcoord bench connections``). No public setting makes
it smaller. Here the socket is read into one receive buffer shared by every connection of the
event loop's thread (asyncio reads into it and calls :meth:`TlsProtocol.buffer_updated` at once,
which copies the bytes into the connection's incoming BIO before any other connection reads), and
decrypted data is read one TLS record (16 KiB) at a time: an idle connection holds only
OpenSSL's session state and its two memory BIOs (docs/security.md "Memory per connection").

Closing (Kafka's ``SslTransportLayer.close``: send close_notify, do not wait for the peer's):
:meth:`TlsTransport.close` writes what is pending and our close_notify and closes the socket; it
never waits for the peer to answer, so a connection whose peer is gone or does not read is still
closed (the application's close also aborts the socket after a grace period, ``Connection``).
The handshake has ``HANDSHAKE_TIMEOUT_S`` to complete (asyncio's default); a failed handshake (a
bad or missing client certificate with ``ssl.client.auth=required``, a plaintext client) sends
OpenSSL's alert and closes the socket. The application knows the connection from the TCP accept
on (it counts it in its connection quotas, as Kafka does) but gets no data before the handshake
is complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CLOSE_GRACE_S", "HANDSHAKE_TIMEOUT_S", "TlsProtocol", "TlsTransport"]

log = logging.getLogger(__name__)

#: Seconds a client has to complete the TLS handshake (asyncio's ``ssl_handshake_timeout``).
HANDSHAKE_TIMEOUT_S = 60.0
#: Seconds a closed connection may take to send what it still has queued (its last response,
#: close_notify) before the socket is aborted: a peer that stopped reading cannot keep it open.
CLOSE_GRACE_S = 5.0
#: Plaintext read from OpenSSL per call: one TLS record's worth.
_RECORD = 16 * 1024
#: Plaintext encrypted per step of a write (four TLS records).
_WRITE_SLICE = 64 * 1024
#: The receive buffer the TLS connections of an event loop read their sockets into: one per
#: thread (an event loop runs in one thread; several loops, e.g. embedded test servers, may run
#: at once in one process, and a socket read releases the GIL).
_RECV_SIZE = 64 * 1024
_local = threading.local()


def _recv_buffer() -> memoryview:
    buf: memoryview | None = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = memoryview(bytearray(_RECV_SIZE))
    return buf


class TlsTransport(asyncio.Transport):
    """What the application protocol sees: a transport whose bytes are the decrypted stream."""

    def __init__(self, proto: TlsProtocol) -> None:
        super().__init__()
        #: None once the connection is lost: the application keeps its transport, and that
        #: reference must not keep the protocol (and OpenSSL's state) alive in a cycle that
        #: only the cyclic collector would free (the server runs it rarely, gc_tuning.py).
        self._proto: TlsProtocol | None = proto

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default if self._proto is None else self._proto.extra_info(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._proto is not None:
            self._proto.write(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        if self._proto is not None:
            self._proto.write(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return False

    def close(self) -> None:
        if self._proto is not None:
            self._proto.close()

    def abort(self) -> None:
        if self._proto is not None:
            self._proto.abort()

    def is_closing(self) -> bool:
        return self._proto is None or self._proto.closing

    def pause_reading(self) -> None:
        if self._proto is not None:
            self._proto.pause_reading()

    def resume_reading(self) -> None:
        if self._proto is not None:
            self._proto.resume_reading()

    def is_reading(self) -> bool:
        return self._proto is not None and not self._proto.reading_paused

    def get_write_buffer_size(self) -> int:
        raw = None if self._proto is None else self._proto.raw
        return 0 if raw is None else raw.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        raw = None if self._proto is None else self._proto.raw
        if raw is not None:
            raw.set_write_buffer_limits(high, low)


class TlsProtocol(asyncio.BufferedProtocol):
    """One TLS connection: the socket's protocol, wrapping the application's ``app`` (module
    doc). ``app.connection_made`` is called at once with a :class:`TlsTransport` (so that the
    application counts the connection from the TCP accept on, as Kafka's connection quotas do),
    ``on_secure`` once the handshake is complete, and ``app.connection_lost`` when the socket
    is gone; the application receives no data before the handshake is complete."""

    def __init__(self, context: ssl.SSLContext, app: asyncio.Protocol,
                 on_secure: Callable[[], object] | None = None,
                 handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S) -> None:
        self.app = app
        self._on_secure = on_secure
        self._app_made = False
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self.raw: asyncio.Transport | None = None
        self.transport = TlsTransport(self)
        self._handshake_timeout_s = handshake_timeout_s
        self._timer: asyncio.TimerHandle | None = None
        self.handshaken = False
        self.closing = False
        self.reading_paused = False
        self._lost = False

    # -------------------------------------------------------------- the socket's side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.raw = transport
        self._timer = asyncio.get_running_loop().call_later(self._handshake_timeout_s,
                                                            self._handshake_timed_out)
        self._app_made = True
        self.app.connection_made(self.transport)  # may close it at once (quotas)

    def get_buffer(self, sizehint: int) -> memoryview:
        return _recv_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._incoming.write(_recv_buffer()[:nbytes])
        if self.closing:
            return
        if not self.handshaken:
            self._handshake()
        if self.handshaken and not self.reading_paused:
            self._deliver()

    def eof_received(self) -> bool | None:
        if self.handshaken and not self.closing:
            self._incoming.write_eof()
            if not self.reading_paused:
                self._deliver()
        return False  # the socket closes (a TLS stream has no half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._lost = True
        self.closing = True
        self.handshaken = False
        if self._app_made:
            self._app_made = False
            self.app.connection_lost(exc)
        self.raw = None
        self.transport._proto = None  # no cycle left (TlsTransport)

    def pause_writing(self) -> None:
        if self._app_made:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self._app_made:
            self.app.resume_writing()

    # -------------------------------------------------------------- TLS

    def _handshake(self) -> None:
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return
        except (ssl.SSLError, OSError) as e:
            log.debug("%s: TLS handshake failed: %s", self._peer(), e)
            self._flush()  # OpenSSL's alert, so that the client knows why
            self._close_socket()
            return
        self._flush()
        self._cancel_timer()
        if self.closing:  # closed by the application meanwhile (quotas, a broker down)
            return
        self.handshaken = True
        if self._on_secure is not None:
            self._on_secure()

    def _handshake_timed_out(self) -> None:
        self._timer = None
        if not self.handshaken and self.raw is not None:
            log.debug("%s: TLS handshake not complete after %.0f s: closed", self._peer(),
                      self._handshake_timeout_s)
            self.raw.abort()

    def _deliver(self) -> None:
        """Hand the application what OpenSSL can decrypt now (whole records)."""
        chunks: list[bytes] = []
        eof = False
        try:
            while True:
                chunk = self._ssl.read(_RECORD)
                if not chunk:
                    eof = True
                    break
                chunks.append(chunk)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:  # the peer's close_notify
            eof = True
        except ssl.SSLError as e:
            log.debug("%s: TLS error: %s", self._peer(), e)
            self._flush()
            self._close_socket()
            return
        self._flush()  # a TLS 1.3 key update, a session ticket: whatever OpenSSL answers
        if chunks:
            self.app.data_received(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if eof and not self.closing:
            keep = self.app.eof_received()
            if not keep:
                self.close()

    def _flush(self) -> None:
        if self._outgoing.pending and self.raw is not None and not self._lost:
            self.raw.write(self._outgoing.read())

    # -------------------------------------------------------------- the application's side

    def write(self, data: bytes) -> None:
        """Encrypt ``data`` a slice at a time, each moved to the socket's transport at once: the
        outgoing BIO never holds more than a slice (a memory BIO keeps the largest size it ever
        held, so a 50 MB Fetch response written whole would stay allocated)."""
        if self.closing or not data:
            return
        view = memoryview(data)
        try:
            for i in range(0, len(view), _WRITE_SLICE):
                self._ssl.write(view[i:i + _WRITE_SLICE])
                self._flush()
        except ssl.SSLError as e:
            log.debug("%s: TLS write failed: %s", self._peer(), e)
            self.abort()

    def close(self) -> None:
        """close_notify after what is pending, then the socket is closed (module doc)."""
        if self.closing:
            return
        self.closing = True
        if self.handshaken:
            # SSLWantReadError: the peer's close_notify is not awaited
            with contextlib.suppress(ssl.SSLError):
                self._ssl.unwrap()
            self._flush()
        self._close_socket()

    def abort(self) -> None:
        self.closing = True
        if self.raw is not None:
            self.raw.abort()

    def pause_reading(self) -> None:
        if not self.reading_paused:
            self.reading_paused = True
            if self.raw is not None and not self._lost:
                self.raw.pause_reading()

    def resume_reading(self) -> None:
        if self.reading_paused:
            self.reading_paused = False
            if self.raw is not None and not self._lost:
                self.raw.resume_reading()
                # records decrypted-ready while paused are handed over now
                asyncio.get_running_loop().call_soon(self._resume_deliver)

    def _resume_deliver(self) -> None:
        if self.handshaken and not self.closing and not self.reading_paused:
            self._deliver()

    def extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peercert":
            return self._ssl.getpeercert() if self.handshaken else default
        if name == "ssl_object":
            return self._ssl
        if name == "sslcontext":
            return self._ssl.context
        if name == "cipher":
            return self._ssl.cipher() if self.handshaken else default
        if name == "compression":
            return self._ssl.compression()
        if self.raw is None:
            return default
        return self.raw.get_extra_info(name, default)

    # -------------------------------------------------------------- helpers

    def _close_socket(self) -> None:
        self.closing = True
        self._cancel_timer()
        if self.raw is not None and not self._lost:
            self.raw.close()
            if not self._lost and self.raw.get_write_buffer_size():
                # bytes still queued: a peer that does not read them is cut off
                self._timer = asyncio.get_running_loop().call_later(CLOSE_GRACE_S, self.abort)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _peer(self) -> str:
        peer = None if self.raw is None else self.raw.get_extra_info("peername")
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "?"
