"""The close after a failed SASL authentication (``server/security/sasl.py``, module doc): the
failure response comes after ``connection.failed.authentication.delay.ms``, and the server's
close comes :data:`FAILURE_CLOSE_LINGER_S` after it, so that a client reading the answer closes
first (kafka-python 3.0.12 drops an answer it reads in the same pass as the end of the stream:
``tests/test_security_clients.py``). A connection already closing when the delay ends is closed
without an answer.

A :class:`SaslSession` on a recording connection in an event loop: the times are the loop's."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.security.sasl import FAILURE_CLOSE_LINGER_S, SaslSession

STORE = CredentialStore(None, persist=False)
STORE.add("alice", "SCRAM-SHA-256", "alice-secret")
DELAY_S = 0.05


class _Transport:
    def __init__(self) -> None:
        self.closing = False

    def is_closing(self) -> bool:
        return self.closing


class _Conn:
    """Records what the session does to the connection, with the loop's time."""

    peer = "test:1"
    principal = "User:ANONYMOUS"
    client_id = ""
    listener = "SASL_PLAINTEXT"
    broker = 0

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport = _Transport()
        self.handler: Any = None
        self.events: list[tuple[str, float, bytes | str]] = []
        self.closed: asyncio.Future[None] = self.loop.create_future()

    def limit_frames(self, max_frame_size: int | None) -> None:
        pass

    def answer(self, data: bytes) -> None:
        self.events.append(("answer", self.loop.time(), data))

    def close(self, reason: str) -> None:
        self.events.append(("close", self.loop.time(), reason))
        self.transport.closing = True
        if not self.closed.done():
            self.closed.set_result(None)

    def abort(self) -> None:
        self.close("aborted")


def _request(key: int, version: int, **kw: Any) -> bytes:
    cls = request_class(key, version)
    assert cls is not None
    return encode_request(build(cls, **kw), 7, "test")[4:]  # the frame without its size


def _after(buf: bytes, conn: Any) -> bytes:
    raise AssertionError("a failed login is never served")


async def _failed_login(closing_meanwhile: bool) -> tuple[float, list[tuple[str, float, Any]]]:
    """A wrong PLAIN password; (the loop time of the failing request, the connection's
    events until it is closed)."""
    conn = _Conn()
    session = SaslSession(conn, ["PLAIN"], STORE, _after, fail_delay_s=DELAY_S)  # type: ignore[arg-type]
    handshake = session.dispatch(_request(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"), conn)
    assert isinstance(handshake, bytes)
    failed_at = conn.loop.time()
    assert session.dispatch(_request(ApiKey.SASL_AUTHENTICATE, 2,
                                     auth_bytes=b"\x00alice\x00wrong"), conn) is None
    if closing_meanwhile:  # the client went away during the delay
        conn.transport.closing = True
    await asyncio.wait_for(conn.closed, 30)
    await asyncio.sleep(FAILURE_CLOSE_LINGER_S)  # nothing more comes after the close
    return failed_at, conn.events


def test_the_close_follows_the_failure_answer_after_the_linger() -> None:
    failed_at, events = asyncio.run(_failed_login(closing_meanwhile=False))
    assert [e[0] for e in events] == ["answer", "close"]
    (_, answered_at, answer), (_, closed_at, reason) = events
    resolution = time.get_clock_info("monotonic").resolution  # the loop's clock tolerance
    assert answered_at - failed_at >= DELAY_S - resolution
    assert closed_at - answered_at >= FAILURE_CLOSE_LINGER_S - resolution
    assert isinstance(answer, bytes)
    _, body = decode_response(ApiKey.SASL_AUTHENTICATE, 2, answer[4:])
    assert body.error_code == ErrorCode.sasl_authentication_failed
    assert "Invalid username or password" in str(body.error_message)
    assert "SASL authentication failed" in str(reason)


def test_a_connection_closing_during_the_delay_is_closed_without_an_answer() -> None:
    _, events = asyncio.run(_failed_login(closing_meanwhile=True))
    assert [e[0] for e in events] == ["close"]
