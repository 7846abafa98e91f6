"""SaslSession (``server/security/sasl.py``) fed arbitrary frames: every outcome is a response,
nothing, or a close; no exception reaches the session's last-resort handler (bad input is a
protocol answer, not a caught bug); the principal is set only by a completed authentication."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.codec import build, encode_request, request_class
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.app import Close
from groupcoord.server.security.credentials import CredentialStore
from groupcoord.server.security.sasl import SASL_MAX_RECEIVE_SIZE, SCRAM_MAX_USERNAME, SaslSession

STORE = CredentialStore(None, persist=False)
STORE.add("alice", "SCRAM-SHA-256", "alice-secret")


class FakeConn:
    peer = "fuzz:1"
    principal = "User:ANONYMOUS"
    transport = None

    def __init__(self) -> None:
        self.handler: Any = None
        self.frame_limit: int | None = None

    def limit_frames(self, max_frame_size: int | None) -> None:
        self.frame_limit = max_frame_size


def _after(buf: bytes, conn: Any) -> bytes:
    return b"served"


def _frame_body(frame: bytes) -> bytes:
    return frame[4:]  # encode_request gives a size-prefixed frame; dispatch gets the payload


def _request(key: int, version: int, **kw: Any) -> bytes:
    cls = request_class(key, version)
    assert cls is not None
    return _frame_body(encode_request(build(cls, **kw), 1, "fuzz"))


_parts = st.lists(st.one_of(st.binary(max_size=20), st.sampled_from(
    [b"alice", b"alice-secret", b"", b"\xff\xfe"])), min_size=1, max_size=4)
_attrs = st.lists(st.one_of(
    st.sampled_from(["n", "y", "p=tls-unique", "", "a=alice", "n=alice", "n=al=ZZ", "r=abc",
                     "c=biws", "p=AAAA", "s=QSXCR+Q6sek8bf92", "i=4096", "m=x", "e=x", "=", "x"]),
    st.text(max_size=12)), min_size=1, max_size=7)
tokens = st.one_of(
    st.binary(max_size=200),
    _parts.map(b"\x00".join),  # PLAIN-shaped: authzid NUL user NUL password, more or less
    _attrs.map(lambda a: ",".join(a).encode(errors="surrogatepass")),  # SCRAM-shaped
)
frames = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda m: _request(ApiKey.SASL_HANDSHAKE, 1, mechanism=m),
              st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", ""])),
    st.builds(lambda t: _request(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=t), tokens),
    st.builds(lambda t: _request(ApiKey.SASL_HANDSHAKE, 0, mechanism="SCRAM-SHA-256"),
              st.none()),
    tokens,  # bare tokens (after a v0 handshake)
)


class _Unexpected(logging.Handler):
    """Counts the session's "failed unexpectedly" warnings (a bug caught by its last resort)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "unexpectedly" in record.getMessage():
            self.seen.append(record.getMessage())


UNEXPECTED = _Unexpected()
logging.getLogger("groupcoord.server.security.sasl").addHandler(UNEXPECTED)


_mechanisms = st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
sessions = st.one_of(
    st.lists(frames, min_size=1, max_size=6),  # anything
    st.tuples(_mechanisms, st.lists(tokens, min_size=1, max_size=3)).map(  # v1 handshake, tokens
        lambda mt: [_request(ApiKey.SASL_HANDSHAKE, 1, mechanism=mt[0])]
        + [_request(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=t) for t in mt[1]]),
    st.tuples(_mechanisms, st.lists(tokens, min_size=1, max_size=3)).map(  # v0, bare tokens
        lambda mt: [_request(ApiKey.SASL_HANDSHAKE, 0, mechanism=mt[0]), *mt[1]]),
)


@settings(max_examples=300, deadline=None)
@given(sessions)
def test_arbitrary_frames_never_raise(seq: list[bytes]) -> None:
    UNEXPECTED.seen.clear()
    conn = FakeConn()
    session = SaslSession(conn, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],  # type: ignore[arg-type]
                          STORE, _after, fail_delay_s=0)
    conn.handler = session.dispatch
    for f in seq:
        out = conn.handler(f, conn)
        assert out is None or isinstance(out, bytes | Close)
        if isinstance(out, Close):
            break
    assert not UNEXPECTED.seen, UNEXPECTED.seen
    if conn.principal != "User:ANONYMOUS":  # only a real authentication sets it
        assert conn.principal == "User:alice" and session.state == "done"


def test_frames_are_limited_until_the_client_has_authenticated() -> None:
    """Kafka's ``sasl.server.max.receive.size``: until authentication completes a request frame
    may hold at most 512 KiB; after it the listener's own limit applies again."""
    conn = FakeConn()
    session = SaslSession(conn, ["PLAIN"], STORE, _after, fail_delay_s=0)  # type: ignore[arg-type]
    assert conn.frame_limit == SASL_MAX_RECEIVE_SIZE == 524_288
    session.dispatch(_request(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"), conn)
    assert conn.frame_limit == SASL_MAX_RECEIVE_SIZE
    out = session.dispatch(_request(ApiKey.SASL_AUTHENTICATE, 2,
                                    auth_bytes=b"\x00alice\x00alice-secret"), conn)
    assert isinstance(out, bytes) and session.state == "done"
    assert conn.principal == "User:alice" and conn.frame_limit is None


@pytest.mark.parametrize("length", [SCRAM_MAX_USERNAME + 1, 200_000])
def test_a_scram_user_name_longer_than_the_bound_is_refused(length: int) -> None:
    """A SCRAM client-first message whose user name is longer than 1,024 characters is refused
    with SASL_AUTHENTICATION_FAILED naming the length, before SASLprep runs on it."""
    conn = FakeConn()
    session = SaslSession(conn, ["SCRAM-SHA-512"], STORE, _after,  # type: ignore[arg-type]
                          fail_delay_s=0)
    session.dispatch(_request(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-512"), conn)
    first = f"n,,n={'a' * length},r=abcdefghijklmnop".encode()
    out = session.dispatch(_request(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=first), conn)
    assert isinstance(out, Close)
    assert f"a user name of {length} characters" in out.reason
    assert conn.principal == "User:ANONYMOUS"
