"""Hardening of SASL authentication against a hostile client (``server/security/sasl.py``),
over the wire against a ``groupcoord serve`` subprocess with a SASL_PLAINTEXT listener:

- a failed login is answered only after ``connection.failed.authentication.delay.ms``, then the
  connection closes (Kafka's ``Selector`` sends the failure response at the delayed close), so
  one client trying passwords one after another is slowed to one per delay;
- an unknown SCRAM user cannot be told from a known one with a wrong password (RFC 5802
  section 5.1: a fake salt and iteration count, stable per user name; the same failure at the
  same step);
- SASL mechanism names match exactly (Kafka's ``enabledMechanisms.contains``).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import scramp

from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from tests.security_support import SecureServer, add_user, start_secure_server

DELAY_MS = 1500  # long enough that a login under heavy load still finishes well within it


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureServer]:
    data = tmp_path_factory.mktemp("sasl-hardening") / "data"
    data.mkdir()
    add_user(data, "alice", "alice-secret")
    srv = start_secure_server(
        data, ["SASL_PLAINTEXT://127.0.0.1:0"],
        "--config", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "--config", f"connection.failed.authentication.delay.ms={DELAY_MS}")
    try:
        yield srv
    finally:
        srv.server.stop()
        assert "Traceback" not in srv.server.stderr(), srv.server.stderr()[-3000:]


def _client(secure: SecureServer) -> KafkaClient:
    return KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), timeout=30)


def _closed(c: KafkaClient) -> bool:
    try:
        c.recv_frame()
    except (KafkaClientError, OSError):
        return True
    return False


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_failed_login_is_answered_after_the_delay_then_closed(secure: SecureServer,
                                                                mechanism: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED"):
        _client_with(secure, mechanism, "alice", "wrong")
    assert time.monotonic() - t0 >= DELAY_MS / 1000 * 0.9
    # one after another: at most one attempt per delay
    t0 = time.monotonic()
    for _ in range(3):
        with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED"):
            _client_with(secure, mechanism, "alice", "wrong")
    assert time.monotonic() - t0 >= 3 * DELAY_MS / 1000 * 0.9
    # the right password is not delayed
    t0 = time.monotonic()
    with _client_with(secure, mechanism, "alice", "alice-secret") as c:
        assert c.api_versions()
    assert time.monotonic() - t0 < DELAY_MS / 1000


def _client_with(secure: SecureServer, mechanism: str, user: str, password: str) -> KafkaClient:
    return KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), timeout=30,
                       sasl=(mechanism, user, password))


def _scram_attempt(secure: SecureServer, mechanism: str, user: str,
                   password: str) -> tuple[dict[str, str], int, str]:
    """One SCRAM exchange on a raw connection: (the server-first's attributes, the final
    answer's error code, its message); the connection is then closed by the server."""
    client = scramp.ScramClient([mechanism], user, password)
    with _client(secure) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism).error_code == 0
        first = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=client.get_client_first().encode())
        assert first.error_code == 0, first.error_message  # a challenge, whoever the user is
        server_first = bytes(first.auth_bytes).decode()
        attrs = dict(a.split("=", 1) for a in server_first.split(","))
        client.set_server_first(server_first)
        final = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=client.get_client_final().encode())
        assert _closed(c)
    return attrs, int(final.error_code), str(final.error_message)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_an_unknown_scram_user_looks_like_a_wrong_password(secure: SecureServer,
                                                           mechanism: str) -> None:
    known, known_code, known_message = _scram_attempt(secure, mechanism, "alice", "wrong")
    unknown, unknown_code, unknown_message = _scram_attempt(secure, mechanism, "mallory", "x")
    again, _, _ = _scram_attempt(secure, mechanism, "mallory", "y")
    other, _, _ = _scram_attempt(secure, mechanism, "trudy", "x")
    assert known_code == unknown_code == ErrorCode.sasl_authentication_failed
    assert known_message == unknown_message
    assert "invalid credentials" in unknown_message
    # a fake salt as long as a real one, the same at every attempt, one per user name; the
    # real users' iteration count
    assert len(base64.b64decode(unknown["s"])) == len(base64.b64decode(known["s"]))
    assert again["s"] == unknown["s"] != other["s"]
    assert unknown["i"] == known["i"] == "4096"
    assert "unknown user 'mallory'" in secure.server.stderr()


def test_mechanism_names_match_exactly(secure: SecureServer) -> None:
    with _client(secure) as c:
        r = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="scram-sha-256")
        assert r.error_code == ErrorCode.unsupported_sasl_mechanism
        assert "SCRAM-SHA-256" in list(r.mechanisms)
        assert _closed(c)
    with _client(secure) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-256").error_code == 0


def test_a_failed_login_leaves_the_server_serving_others(secure: SecureServer,
                                                         tmp_path: Path) -> None:
    """While a failed login waits out its delay, the other connections are served."""
    bad = _client(secure)
    assert bad.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
    handle = bad.send_request(_authenticate(b"\x00alice\x00wrong"))
    t0 = time.monotonic()
    with _client_with(secure, "PLAIN", "alice", "alice-secret") as good:
        assert good.api_versions()
    assert time.monotonic() - t0 < DELAY_MS / 1000
    r = bad.read_response(handle)
    assert r.error_code == ErrorCode.sasl_authentication_failed
    assert _closed(bad)
    bad.close()


def _authenticate(token: bytes) -> object:
    from groupcoord.protocol.codec import build, request_class

    cls = request_class(ApiKey.SASL_AUTHENTICATE, 2)
    assert cls is not None
    return build(cls, auth_bytes=token)
