"""SASL authentication on the SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
``SaslServerAuthenticator`` runs it.

A connection starts in the handshake state: only ApiVersions and SaslHandshake (v0, v1) are
accepted; any other request closes the connection (Kafka: "Unexpected Kafka request ... during
SASL handshake"). SaslHandshake names a mechanism of ``sasl.enabled.mechanisms`` (default
``SCRAM-SHA-256,SCRAM-SHA-512``; PLAIN must be enabled explicitly; GSSAPI and OAUTHBEARER are
not served); another gets UNSUPPORTED_SASL_MECHANISM with the enabled list and the connection is
closed after the response (both after the failed-authentication delay below). Then:

- after SaslHandshake v1 the client sends SaslAuthenticate requests (v0-v2) carrying the
  mechanism's tokens; anything else closes the connection;
- after SaslHandshake v0 the tokens come as bare size-prefixed frames and are answered the same
  way (Kafka's pre-KIP-152 form); a failure there just closes the connection.

A failed authentication (unknown user, wrong password or proof, a malformed token) answers
SASL_AUTHENTICATION_FAILED with a message and closes the connection after the response. Success
makes the principal ``User:<name>`` and the connection is served as any other from then on
(where SaslHandshake / SaslAuthenticate get ILLEGAL_SASL_STATE, ``server/apis/authentication.py``).
SaslAuthenticate v1+ answers a session lifetime of 0: KIP-368 re-authentication is not offered
(clients never re-authenticate; sessions last as long as the connection).

Failed logins are slowed as Kafka slows them (``connection.failed.authentication.delay.ms``,
default 100): the failure response itself is held back that long, then sent, then the connection
is closed (Kafka's ``Selector`` sends the response built on failure only when the delayed close
comes, ``SaslServerAuthenticator.handleAuthenticationFailure``); further frames are read and
dropped meanwhile (a socket closed with unread input sends a TCP reset). So one connection tries
at most one password per delay, and a client trying passwords one after another gets at most
1000 / delay per second (10 at the default), where answering at once let one client try 62 per
second. No per-user or per-address lockout, as Kafka has none: a lockout would let anyone lock
a real user out by failing on purpose. Parallel connections multiply the rate;
``max.connections.per.ip`` bounds them, so one address tries at most
``max.connections.per.ip`` x 1000 / delay passwords per second (docs/security.md).

The close after the failure response waits :data:`FAILURE_CLOSE_LINGER_S` (20 ms) for the
client to close first, where Kafka closes at once. kafka-python 3.0.12 reads a socket until it
would block and, when that read pass ends at the end of the stream, drops the bytes read before
it ("socket disconnected"): with the close right behind the answer it lost the answer in 153 of
318 attempts (SASL_SSL and SASL_PLAINTEXT, load average 6-7), with the wait in none of 315. A
client that reads the answer closes at once, which ends the wait; one that never does holds its
connection (and its ``max.connections`` slot) that much longer than the delay.

User names cannot be probed. Kafka's ``ScramSaslServer`` refuses an unknown user at the
client-first message and a wrong password at the client-final one, so the step that fails
tells whether the user exists (the message does not: Kafka sends "... due to invalid credentials
with SASL mechanism M" for both). That is the hole RFC 5802 section 5.1 closes ("the server
SHOULD ... generate a fake salt and iteration count"), and we close it: an unknown user gets a
server-first message with a salt derived from the user name and a secret of this process (the
same salt each time, as a real user's is) and the default iteration count, and fails at the
client-final with the message a wrong password gets. (The fake salt of a user name changes
when the server restarts, a real one does not: probing across restarts can still tell.) PLAIN
answers an unknown user and a wrong password alike, after the same PBKDF2 work.

Mechanism names match exactly, as Kafka's ``enabledMechanisms.contains``: ``scram-sha-256``
in a SaslHandshake is UNSUPPORTED_SASL_MECHANISM. (``sasl.enabled.mechanisms`` itself is read
case-insensitively.)

Mechanisms:

- PLAIN (RFC 4616): ``[authzid] NUL authcid NUL password``, checked against the user's SCRAM
  credentials (``server/security/credentials.py``); an authzid other than the user is refused,
  as Kafka's ``PlainSaslServer`` does.
- SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) with ``scramp``'s ``ScramServer`` (a
  maintained implementation of both sides; no channel binding, as Kafka). An authzid (``a=``) in
  the GS2 header equal to the user name is accepted and any other refused, as Kafka's
  ``ScramSaslServer`` does (``_Scram._first_with_authzid``: scramp itself refuses every
  authzid).

Before authentication completes, a request frame may hold at most
:data:`SASL_MAX_RECEIVE_SIZE` bytes (Kafka's ``sasl.server.max.receive.size``, 512 KiB): a
larger one closes the connection, as Kafka's ``SaslServerAuthenticator`` refuses it; after
authentication the listener's ``socket.request.max.bytes`` applies again. A SCRAM user name
longer than :data:`SCRAM_MAX_USERNAME` characters is refused before SASLprep: scramp's SASLprep
costs a few microseconds per character on the event loop (a megabyte-long name stalled every
connection for seconds). Kafka's ``ScramSaslServer`` has no such bound; user names that long do
not exist in practice.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import (
    DecodeError,
    build,
    decode_request_body,
    encode_response,
    parse_request_header,
    parse_request_prefix,
    request_class,
    response_class,
)
from groupcoord.protocol.framing import frame
from groupcoord.protocol.versions import ApiKey, api_name, is_supported
from groupcoord.server.connection import Close, FrameHandler, Outcome, ServedConnection
from groupcoord.server.security.credentials import DEFAULT_ITERATIONS, MECHANISMS, CredentialStore

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MECHANISMS", "SUPPORTED_MECHANISMS", "AuthenticationFailed", "SaslSession",
           "check_mechanisms"]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_MECHANISMS = "SCRAM-SHA-256,SCRAM-SHA-512"
#: The largest request frame before authentication (Kafka's sasl.server.max.receive.size).
SASL_MAX_RECEIVE_SIZE = 524_288
#: The longest SCRAM user name, in characters (module doc).
SCRAM_MAX_USERNAME = 1_024
#: Seconds the close after a failed authentication's response waits for the client to close
#: first (module doc).
FAILURE_CLOSE_LINGER_S = 0.02
#: The secret the fake salts of unknown SCRAM users are derived from (module doc): one per
#: process, so a user name's fake salt is the same at every attempt.
_FAKE_SALT_SECRET = secrets.token_bytes(32)


class AuthenticationFailed(Exception):
    """The client did not authenticate; the message goes to the client."""


def check_mechanisms(value: str, listener: str) -> list[str]:
    """``sasl.enabled.mechanisms`` as a list; a one-line ValueError for one we do not serve."""
    mechs = [m.strip().upper() for m in value.split(",") if m.strip()]
    if not mechs:
        raise ValueError(f"listener {listener}: sasl.enabled.mechanisms is empty")
    for m in mechs:
        if m not in SUPPORTED_MECHANISMS:
            raise ValueError(f"listener {listener}: SASL mechanism {m} is not supported (use "
                             f"{', '.join(SUPPORTED_MECHANISMS)})")
    return mechs


class _Plain:
    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got "
                                       f"{len(parts)}")
        try:
            authzid, user = parts[0].decode(), parts[1].decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not parts[2]:
            raise AuthenticationFailed("Authentication failed: password not specified")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization "
                                       "id that is different from username")
        if not self.store.check_plain(user, parts[2]):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.user = user
        return b"", True


def _check_username_length(client_first: str, mechanism: str) -> None:
    """Refuse a client-first message whose user name (``n=``) is longer than
    :data:`SCRAM_MAX_USERNAME` characters, before scramp runs SASLprep on it (module doc)."""
    at = client_first.find("n=")
    if at < 0:
        return  # malformed: scramp says what is wrong
    end = client_first.find(",", at)
    length = (len(client_first) if end < 0 else end) - at - 2
    if length > SCRAM_MAX_USERNAME:
        raise AuthenticationFailed(f"Authentication failed: invalid {mechanism} message: a user "
                                   f"name of {length} characters (at most {SCRAM_MAX_USERNAME})")


def _unescape_saslname(s: str) -> str:
    return s.replace("=2C", ",").replace("=3D", "=")


class _Scram:
    def __init__(self, store: CredentialStore, mechanism: str) -> None:
        import scramp

        self.mechanism = mechanism
        self.store = store
        self.user: str | None = None
        self._exc = scramp.ScramException
        self._server = scramp.ScramMechanism(mechanism).make_server(self._lookup)
        self._first = True
        #: The client-first named a user without credentials (logged, never told the client).
        self.unknown_user = False

    def _lookup(self, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        cred = self.store.get(user, self.mechanism)
        if cred is None:
            # RFC 5802 section 5.1: a fake salt and iteration count (module doc); keys no proof
            # matches, so the client-final fails as a wrong password does
            self.unknown_user = True
            salt = hmac.new(_FAKE_SALT_SECRET, f"{self.mechanism}\0{user}".encode(),
                            hashlib.sha256).digest()
            keys = secrets.token_bytes(64)
            return salt, keys[:32], keys[32:], DEFAULT_ITERATIONS
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def step(self, token: bytes) -> tuple[bytes, bool]:
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed(f"Authentication failed: invalid {self.mechanism} message "
                                       f"(not UTF-8)") from None
        try:
            if self._first:
                self._first = False
                _check_username_length(text, self.mechanism)
                gs2 = text.split(",", 2)
                if len(gs2) == 3 and gs2[1]:
                    return self._first_with_authzid(gs2), False
                self._server.set_client_first(text)
                return self._server.get_server_first().encode(), False
            self._server.set_client_final(text)
            final = self._server.get_server_final()
            self.user = self._user_of_first()
            return final.encode(), True
        except self._exc as e:
            if "keys don't match" in str(e):
                if self.unknown_user:
                    log.info("SCRAM authentication of unknown user %r failed",
                             self._user_of_first()[:80])
                raise AuthenticationFailed(f"Authentication failed during authentication due to "
                                           f"invalid credentials with SASL mechanism "
                                           f"{self.mechanism}") from None
            raise AuthenticationFailed(f"Authentication failed: invalid {self.mechanism} "
                                       f"message: {e}") from None

    def _first_with_authzid(self, gs2: list[str]) -> bytes:
        """A client-first message whose GS2 header carries an authorization id (``n,a=alice,``).
        Kafka's ``ScramSaslServer`` accepts it when it equals the user name and refuses any
        other; scramp refuses every authzid, so it is checked here, scramp is given the message
        without it, and the channel-binding input it checks in the client-final (``c=``, the
        base64 of the GS2 header as the client sent it) is the header with the authzid."""
        if not gs2[1].startswith("a="):
            raise AuthenticationFailed(f"Authentication failed: invalid {self.mechanism} "
                                       f"message: a GS2 header of the form n,a=authzid,")
        self._server.set_client_first(f"{gs2[0]},,{gs2[2]}")
        if _unescape_saslname(gs2[1][2:]) != self._user_of_first():
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        self._server.gs2_header = _Gs2Header(f"{gs2[0]},{gs2[1]},".encode())
        return self._server.get_server_first().encode()

    def _user_of_first(self) -> str:
        bare = self._server.client_first_bare
        for attr in bare.split(","):
            if attr.startswith("n="):
                return _unescape_saslname(attr[2:])
        return ""


class _Gs2Header:
    """The GS2 header as the client sent it, for scramp's channel-binding check (``c=`` of
    the client-final is its base64; no channel binding is offered, so nothing is appended)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def make_cbind_input(self, cb: object) -> bytes:
        return self.raw


def _mechanism(name: str, store: CredentialStore) -> _Plain | _Scram:
    if name == "PLAIN":
        return _Plain(store)
    assert name in MECHANISMS
    return _Scram(store, name)


class SaslSession:
    """One connection's authentication: its ``dispatch`` handles the frames until it is done,
    then hands the connection to the server's dispatch (module doc)."""

    def __init__(self, conn: ServedConnection, mechanisms: list[str], store: CredentialStore,
                 then: FrameHandler, fail_delay_s: float = 0.1) -> None:
        self.conn = conn
        self.fail_delay_s = fail_delay_s
        self.mechanisms = mechanisms
        self.store = store
        self.then = then
        self.state = "handshake"  # -> authenticate | legacy -> done
        self.mech: _Plain | _Scram | None = None
        conn.limit_frames(SASL_MAX_RECEIVE_SIZE)

    def _close(self, reason: str, response: bytes = b"") -> Close:
        return Close(reason, response)

    def dispatch(self, buf: bytes, conn: ServedConnection) -> Outcome:
        try:
            if self.state == "legacy":
                return self._legacy_token(buf)
            try:
                key, version, corr = parse_request_prefix(buf)
            except DecodeError as e:
                return self._close(f"SASL: {e}")
            if self.state == "handshake" and key == ApiKey.API_VERSIONS:
                return self.then(buf, conn)
            expected = (ApiKey.SASL_HANDSHAKE,) if self.state == "handshake" else \
                (ApiKey.SASL_AUTHENTICATE,)
            if key not in expected or not is_supported(key, version):
                return self._close(f"unexpected {api_name(key)} v{version} request during SASL "
                                   f"{'handshake' if self.state == 'handshake' else 'authentication'}")
            cls = request_class(key, version)
            assert cls is not None
            try:
                header = parse_request_header(buf, cls.__flexible__)
                body = decode_request_body(cls, buf, header.size)
            except DecodeError as e:
                return self._close(f"malformed {api_name(key)} v{version} request: {e}")
            if key == ApiKey.SASL_HANDSHAKE:
                return self._handshake(body, version, corr)
            return self._authenticate(body, version, corr)
        except Exception as e:  # a bug must not stop the server: close this connection only
            log.warning("%s: SASL failed unexpectedly: %s: %s", conn.peer, type(e).__name__, e)
            return self._close("SASL failed unexpectedly")

    def _fail(self, reason: str, response: bytes = b"") -> Outcome:
        """After the failed-authentication delay, answer ``response`` and close (module doc)."""
        conn = self.conn
        if self.fail_delay_s <= 0 or conn.transport is None:
            return self._close(reason, response)
        # reading goes on, into the discard handler, until the close: a socket closed with
        # unread input sends a TCP reset, which can make the client drop the failure answer
        # before reading it (kafka-python over SASL_SSL lost it about one time in six)
        conn.handler = _discard
        self.state = "failed"
        asyncio.get_running_loop().call_later(self.fail_delay_s, self._finish_failure, reason,
                                              response)
        log.warning("closing connection from %s: %s", conn.peer, reason)
        return None

    def _finish_failure(self, reason: str, response: bytes) -> None:
        conn = self.conn
        transport = conn.transport
        if transport is not None and not transport.is_closing() and response:
            conn.answer(response)
            # the client's own close, once it has read the answer, comes first (module doc)
            asyncio.get_running_loop().call_later(FAILURE_CLOSE_LINGER_S, conn.close, reason)
            return
        conn.close(reason)

    def _response(self, key: int, version: int, corr: int, **fields: Any) -> bytes:
        cls = response_class(key, version)
        assert cls is not None
        return encode_response(key, version, corr, build(cls, **fields))

    def _handshake(self, body: Any, version: int, corr: int) -> Outcome:
        name = str(body.mechanism)
        if name not in self.mechanisms:  # exact, as Kafka (module doc)
            resp = self._response(ApiKey.SASL_HANDSHAKE, version, corr,
                                  error_code=ErrorCode.unsupported_sasl_mechanism,
                                  mechanisms=self.mechanisms)
            # an AuthenticationException in Kafka too: answered at the delayed close
            return self._fail(f"unsupported SASL mechanism {body.mechanism!r}", resp)
        self.mech = _mechanism(name, self.store)
        self.state = "authenticate" if version >= 1 else "legacy"
        return self._response(ApiKey.SASL_HANDSHAKE, version, corr, error_code=0,
                              mechanisms=self.mechanisms)

    def _step(self, token: bytes) -> tuple[bytes, bool]:
        assert self.mech is not None
        challenge, done = self.mech.step(token)
        if done:
            assert self.mech.user is not None
            self.conn.principal = f"User:{self.mech.user}"
            self.state = "done"
            self.conn.handler = self.then
            self.conn.limit_frames(None)
            log.debug("%s: authenticated as %s (%s)", self.conn.peer, self.conn.principal,
                      type(self.mech).__name__)
        return challenge, done

    def _authenticate(self, body: Any, version: int, corr: int) -> Outcome:
        try:
            challenge, _ = self._step(bytes(body.auth_bytes))
        except AuthenticationFailed as e:
            resp = self._response(ApiKey.SASL_AUTHENTICATE, version, corr,
                                  error_code=ErrorCode.sasl_authentication_failed,
                                  error_message=str(e), auth_bytes=b"")
            return self._fail(f"SASL authentication failed: {e}", resp)
        return self._response(ApiKey.SASL_AUTHENTICATE, version, corr, error_code=0,
                              error_message=None, auth_bytes=challenge)

    def _legacy_token(self, buf: bytes) -> Outcome:
        try:
            challenge, _ = self._step(buf)
        except AuthenticationFailed as e:
            return self._fail(f"SASL authentication failed: {e}")
        return frame(challenge)


def _discard(buf: bytes, conn: ServedConnection) -> None:
    """Frames after a failed authentication, until the delayed close: dropped."""
    return None
