"""Listeners, TLS and SASL on the wire (``server/security/``): one ``groupcoord serve`` with a
PLAINTEXT, an SSL (client certificates requested), a SASL_PLAINTEXT and a SASL_SSL listener,
driven with our own protocol client and raw frames."""

from __future__ import annotations

import json
import socket
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.versions import ApiKey
from tests.security_support import Certs, SecureServer, add_user, make_certs, start_secure_server

LISTENERS = ["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0",
             "SASL_SSL://127.0.0.1:0"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[SecureServer]:
    data = tmp_path_factory.mktemp("secure") / "data"
    data.mkdir()
    add_user(data, "alice", "alice-secret")
    add_user(data, "bob", "bob-secret", "SCRAM-SHA-256")
    srv = start_secure_server(
        data, LISTENERS, "--config", f"ssl.keystore.location={certs.server}",
        "--config", f"ssl.truststore.location={certs.ca}",
        "--config", "ssl.client.auth=requested",
        "--config", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
    try:
        yield srv
    finally:
        srv.server.stop()
        assert "Traceback" not in srv.server.stderr(), srv.server.stderr()[-3000:]


def _tls(certs: Certs, client_cert: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if client_cert:
        ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return ctx


def _metadata(c: KafkaClient) -> Any:
    return c.call(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                  include_topic_authorized_operations=False)


def _connections(secure: SecureServer) -> list[dict[str, Any]]:
    with KafkaClient(secure.bootstrap("PLAINTEXT"), client_id="control") as c:
        r = c.call(ApiKey.GROUPCOORD_CONTROL, 0, command="connections", arguments="{}")
    assert r.error_code == 0, r.error_message
    conns: list[dict[str, Any]] = json.loads(r.result)["connections"]
    return conns


def _principal_of(secure: SecureServer, client: KafkaClient) -> tuple[str, str]:
    client.api_versions()  # a request: the connection now has the client id
    client_id = client.client_id
    [conn] = [c for c in _connections(secure) if c["client_id"] == client_id]
    return conn["listener"], conn["principal"]


def test_each_listener_listens_and_advertises_itself(secure: SecureServer, certs: Certs) -> None:
    """Metadata and FindCoordinator give each client the address of the listener it came in on."""
    assert len({port for _, port in secure.addresses.values()}) == 4
    for name, (host, port) in secure.addresses.items():
        kw: dict[str, Any] = {}
        if name in ("SSL", "SASL_SSL"):
            kw["ssl_context"] = _tls(certs)
        if name.startswith("SASL"):
            kw["sasl"] = ("SCRAM-SHA-512", "alice", "alice-secret")
        with KafkaClient(f"{host}:{port}", **kw) as c:
            [b] = _metadata(c).brokers
            assert (b.host, int(b.port)) == (host, port), name
            fc = c.call(ApiKey.FIND_COORDINATOR, 3, key="g", key_type=0)
            assert (fc.host, int(fc.port)) == (host, port), name


@pytest.mark.parametrize("mechanism,listener", [
    ("SCRAM-SHA-256", "SASL_SSL"), ("SCRAM-SHA-512", "SASL_SSL"), ("PLAIN", "SASL_SSL"),
    ("SCRAM-SHA-256", "SASL_PLAINTEXT"), ("PLAIN", "SASL_PLAINTEXT")])
def test_sasl_right_credentials_make_the_principal(secure: SecureServer, certs: Certs,
                                                   mechanism: str, listener: str) -> None:
    ctx = _tls(certs) if listener == "SASL_SSL" else None
    cid = f"ok-{mechanism}-{listener}"
    with KafkaClient(secure.bootstrap(listener), client_id=cid, ssl_context=ctx,
                     sasl=(mechanism, "alice", "alice-secret")) as c:
        assert _metadata(c).cluster_id
        assert _principal_of(secure, c) == (listener, "User:alice")


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-256", "alice", "wrong"), ("SCRAM-SHA-512", "alice", "wrong"),
    ("PLAIN", "alice", "wrong"), ("SCRAM-SHA-256", "nobody", "x"), ("PLAIN", "nobody", "x"),
    ("SCRAM-SHA-512", "bob", "bob-secret")])  # bob has SCRAM-SHA-256 only
def test_sasl_wrong_credentials_fail_and_close(secure: SecureServer, certs: Certs, mechanism: str,
                                               user: str, password: str) -> None:
    with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED: Authentication failed"):
        KafkaClient(secure.bootstrap("SASL_SSL"), ssl_context=_tls(certs),
                    sasl=(mechanism, user, password))
    # and the connection was closed after the response
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT")) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism).error_code == 0
        # (an unknown SCRAM user is answered a challenge, RFC 5802 5.1: a malformed message
        # fails at once)
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\x00nobody\x00x"
                   if mechanism == "PLAIN" else b"not a SCRAM message")
        assert r.error_code == ErrorCode.sasl_authentication_failed and r.error_message
        with pytest.raises((KafkaClientError, OSError)):
            c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"")
            c.recv_frame()


def test_scram_user_of_one_mechanism(secure: SecureServer) -> None:
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=("SCRAM-SHA-256", "bob", "bob-secret"),
                     client_id="bob") as c:
        assert _metadata(c).brokers
    # PLAIN checks the password against the SCRAM-SHA-256 material too
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=("PLAIN", "bob", "bob-secret")) as c:
        assert _metadata(c).brokers


def _raw_frame(key: int, version: int, corr: int, body: bytes = b"", flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", key, version, corr, 1) + b"t"
    if flexible:
        header += b"\x00"
    return struct.pack(">i", len(header + body)) + header + body


def _recv(s: socket.socket) -> bytes | None:
    """The next frame, or None when the server closed the connection."""
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return buf[4:]


def _send(s: socket.socket, body: Any, corr: int) -> None:
    s.sendall(encode_request(body, corr, "raw"))


def test_requests_before_authentication_close_the_connection(secure: SecureServer) -> None:
    """Only ApiVersions and SaslHandshake before the handshake (Kafka closes otherwise)."""
    with socket.create_connection(secure.addresses["SASL_PLAINTEXT"], timeout=30) as s:
        cls = request_class(ApiKey.API_VERSIONS, 3)
        assert cls is not None
        _send(s, build(cls, client_software_name="t", client_software_version="1"), 1)
        frame = _recv(s)
        assert frame is not None
        _, r = decode_response(ApiKey.API_VERSIONS, 3, frame)
        assert r.error_code == 0 and {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= {
            int(k.api_key) for k in r.api_keys}
        md = request_class(ApiKey.METADATA, 12)
        assert md is not None
        _send(s, build(md, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False), 2)
        assert _recv(s) is None


def test_unsupported_mechanism_is_answered_then_closed(secure: SecureServer) -> None:
    with socket.create_connection(secure.addresses["SASL_PLAINTEXT"], timeout=30) as s:
        cls = request_class(ApiKey.SASL_HANDSHAKE, 1)
        assert cls is not None
        _send(s, build(cls, mechanism="GSSAPI"), 7)
        frame = _recv(s)
        assert frame is not None
        corr, r = decode_response(ApiKey.SASL_HANDSHAKE, 1, frame)
        assert (corr, r.error_code) == (7, ErrorCode.unsupported_sasl_mechanism)
        assert list(r.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert _recv(s) is None


def test_sasl_handshake_v0_then_bare_tokens(secure: SecureServer) -> None:
    """SaslHandshake v0: the tokens follow as size-prefixed frames without a request header."""
    import scramp

    with socket.create_connection(secure.addresses["SASL_PLAINTEXT"], timeout=30) as s:
        cls = request_class(ApiKey.SASL_HANDSHAKE, 0)
        assert cls is not None
        _send(s, build(cls, mechanism="SCRAM-SHA-256"), 1)
        frame = _recv(s)
        assert frame is not None and decode_response(ApiKey.SASL_HANDSHAKE, 0, frame)[1].error_code == 0
        client = scramp.ScramClient(["SCRAM-SHA-256"], "alice", "alice-secret")
        first = client.get_client_first().encode()
        s.sendall(struct.pack(">i", len(first)) + first)
        server_first = _recv(s)
        assert server_first is not None
        client.set_server_first(server_first.decode())
        final = client.get_client_final().encode()
        s.sendall(struct.pack(">i", len(final)) + final)
        server_final = _recv(s)
        assert server_final is not None
        client.set_server_final(server_final.decode())  # checks the server's signature
        md = request_class(ApiKey.METADATA, 12)
        assert md is not None
        _send(s, build(md, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False), 2)
        frame = _recv(s)
        assert frame is not None and decode_response(ApiKey.METADATA, 12, frame)[0] == 2


def _scram_with_authzid(c: KafkaClient, mechanism: str, authzid: str, user: str,
                        password: str) -> tuple[int, str | None]:
    """SCRAM (RFC 5802) by hand, with an authorization id in the GS2 header (scramp's client
    never sends one): the (error code, message) of the server's answer to the client-final, or
    to the client-first if that is refused."""
    import base64
    import hashlib
    import hmac

    h = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism).error_code == 0
    gs2 = f"n,a={authzid},"
    bare = f"n={user},r=clientnonce0123456789"
    r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=(gs2 + bare).encode())
    if r.error_code:
        return int(r.error_code), r.error_message
    server_first = bytes(r.auth_bytes).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h, password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    stored_key = hashlib.new(h, client_key).digest()
    without_proof = f"c={base64.b64encode(gs2.encode()).decode()},r={attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, h).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
    r = c.call(ApiKey.SASL_AUTHENTICATE, 2,
               auth_bytes=f"{without_proof},p={proof.decode()}".encode())
    if r.error_code == 0:  # the server's signature, as a client checks it
        server_key = hmac.new(salted, b"Server Key", h).digest()
        expected = base64.b64encode(hmac.new(server_key, auth_message, h).digest()).decode()
        assert bytes(r.auth_bytes).decode() == f"v={expected}"
    return int(r.error_code), r.error_message


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authzid_equal_to_the_user_is_accepted_another_refused(
        secure: SecureServer, mechanism: str) -> None:
    """As Kafka's ScramSaslServer: ``n,a=alice,`` with user alice logs in as User:alice; an
    authorization id naming someone else is refused."""
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), client_id=f"authzid-{mechanism}") as c:
        assert _scram_with_authzid(c, mechanism, "alice", "alice", "alice-secret") == (0, None)
        assert _metadata(c).cluster_id
        assert _principal_of(secure, c) == ("SASL_PLAINTEXT", "User:alice")
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT")) as c:
        code, message = _scram_with_authzid(c, mechanism, "bob", "alice", "alice-secret")
        assert code == ErrorCode.sasl_authentication_failed
        assert message is not None and "authorization id that is different" in message
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT")) as c:  # the right authzid, wrong password
        code, _ = _scram_with_authzid(c, mechanism, "alice", "alice", "wrong")
        assert code == ErrorCode.sasl_authentication_failed


def test_sasl_apis_after_authentication_or_without_sasl_are_illegal(secure: SecureServer) -> None:
    for bootstrap, sasl in ((secure.bootstrap("PLAINTEXT"), None),
                            (secure.bootstrap("SASL_PLAINTEXT"), ("PLAIN", "alice", "alice-secret"))):
        with KafkaClient(bootstrap, sasl=sasl) as c:
            assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == \
                ErrorCode.illegal_sasl_state
            r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"x")
            assert r.error_code == ErrorCode.illegal_sasl_state and r.error_message
            assert _metadata(c).brokers  # still served


def test_large_records_round_trip_over_tls(secure: SecureServer, certs: Certs) -> None:
    """Responses far larger than a TLS record and than a write slice of the TLS transport
    (server/security/tls_transport.py) arrive whole: 8 MB produced and fetched back on SSL."""
    import hashlib
    import time

    ck = pytest.importorskip("confluent_kafka")
    tls = {"bootstrap.servers": secure.bootstrap("SSL"), "security.protocol": "SSL",
           "ssl.ca.location": str(certs.ca)}
    topic = "tls-large"
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 1,
                                                    "replication_factor": -1}], timeout=10_000)
        assert int(r.topics[0].error_code) in (0, int(ErrorCode.topic_already_exists))
    values = [hashlib.sha256(str(i).encode()).digest() * (512 * 1024 // 32) for i in range(16)]
    p = ck.Producer({**tls, "linger.ms": 50})
    for v in values:
        p.produce(topic, value=v)
    assert p.flush(60) == 0
    c = ck.Consumer({**tls, "group.id": "tls-large", "auto.offset.reset": "earliest",
                     "fetch.max.bytes": 16 << 20, "max.partition.fetch.bytes": 16 << 20})
    try:
        c.assign([ck.TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(values) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        assert got == values
    finally:
        c.close()


def test_ssl_client_certificate_principal(secure: SecureServer, certs: Certs) -> None:
    """SSL: User:<subject DN, RFC 2253> with a verified client certificate, else ANONYMOUS;
    SASL_SSL: the SASL user even with a certificate."""
    with KafkaClient(secure.bootstrap("SSL"), ssl_context=_tls(certs, True), client_id="cert") as c:
        assert _principal_of(secure, c) == ("SSL", f"User:{certs.client_dn}")
    with KafkaClient(secure.bootstrap("SSL"), ssl_context=_tls(certs), client_id="nocert") as c:
        assert _principal_of(secure, c) == ("SSL", "User:ANONYMOUS")
    with KafkaClient(secure.bootstrap("SASL_SSL"), ssl_context=_tls(certs, True), client_id="both",
                     sasl=("SCRAM-SHA-256", "alice", "alice-secret")) as c:
        assert _principal_of(secure, c) == ("SASL_SSL", "User:alice")
    with KafkaClient(secure.bootstrap("PLAINTEXT"), client_id="plain") as c:
        assert _principal_of(secure, c) == ("PLAINTEXT", "User:ANONYMOUS")


def test_plaintext_client_on_a_tls_listener_fails_and_the_server_stays_up(
        secure: SecureServer, certs: Certs) -> None:
    with pytest.raises(KafkaClientError):
        KafkaClient(secure.bootstrap("SSL"), timeout=10).api_versions()
    with KafkaClient(secure.bootstrap("SSL"), ssl_context=_tls(certs)) as c:
        assert _metadata(c).brokers


def _scram_admin(c: KafkaClient, *, deletions: list[dict[str, Any]] = (),  # type: ignore[assignment]
                 upsertions: list[dict[str, Any]] = ()) -> dict[str, tuple[int, str | None]]:  # type: ignore[assignment]
    r = c.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=list(deletions),
               upsertions=list(upsertions))
    return {x.user: (int(x.error_code), x.error_message) for x in r.results}


def _upsertion(name: str, password: str, mechanism: int = 1, iterations: int = 4096,
               salt: bytes = b"0123456789abcdef") -> dict[str, Any]:
    import hashlib

    h = "sha256" if mechanism == 1 else "sha512"
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)}


def test_alter_and_describe_user_scram_credentials(secure: SecureServer) -> None:
    with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"),
                     sasl=("SCRAM-SHA-512", "alice", "alice-secret")) as c:
        assert _scram_admin(c, upsertions=[_upsertion("carol", "carol-pw", 1),
                                           _upsertion("carol", "carol-pw", 2, 8192)]) == \
            {"carol": (0, None)}
        d = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[{"name": "carol"}])
        [res] = d.results
        assert res.error_code == 0
        assert sorted((int(i.mechanism), int(i.iterations)) for i in res.credential_infos) == \
            [(1, 4096), (2, 8192)]
        everyone = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
        assert {r.user for r in everyone.results} >= {"alice", "bob", "carol"}
        # errors: each user its own result; a user with an error has nothing applied
        got = _scram_admin(c, upsertions=[_upsertion("dave", "pw", 1, 100),
                                          _upsertion("erin", "pw", 3),
                                          _upsertion("", "pw"),
                                          _upsertion("frank", "pw"), _upsertion("frank", "pw"),
                                          _upsertion("gina", "pw", salt=b"short")],
                           deletions=[{"name": "nobody", "mechanism": 1}])
        assert {u: code for u, (code, _) in got.items()} == {
            "nobody": ErrorCode.resource_not_found, "dave": ErrorCode.unacceptable_credential,
            "erin": ErrorCode.unsupported_sasl_mechanism, "": ErrorCode.unacceptable_credential,
            "frank": ErrorCode.duplicate_resource, "gina": ErrorCode.unacceptable_credential}
        assert all(msg for _, msg in got.values())
        d = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                   users=[{"name": "frank"}, {"name": "x"}, {"name": "x"}])
        assert [(r.user, int(r.error_code)) for r in d.results] == [
            ("frank", ErrorCode.resource_not_found), ("x", ErrorCode.duplicate_resource)]
    # carol authenticates with the new credentials at once, with both mechanisms
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"):
        with KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=(mech, "carol", "carol-pw")) as c:
            assert _metadata(c).brokers
    with KafkaClient(secure.bootstrap("PLAINTEXT")) as c:
        assert _scram_admin(c, deletions=[{"name": "carol", "mechanism": 1},
                                          {"name": "carol", "mechanism": 2}]) == {"carol": (0, None)}
    with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED"):
        KafkaClient(secure.bootstrap("SASL_PLAINTEXT"), sasl=("SCRAM-SHA-256", "carol", "carol-pw"))


def test_credentials_file_holds_no_password(secure: SecureServer) -> None:
    path = secure.server.data_dir / "scram-credentials.json"
    text = path.read_text()
    assert "alice-secret" not in text and "bob-secret" not in text
    data = json.loads(text)
    assert set(data["users"]["alice"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert set(data["users"]["alice"]["SCRAM-SHA-256"]) == {"salt", "iterations", "stored_key",
                                                           "server_key"}
    assert path.stat().st_mode & 0o077 == 0


def test_fuzzed_sasl_and_tls_garbage_never_stop_the_server(secure: SecureServer,
                                                           certs: Certs) -> None:
    """Random SASL handshakes and tokens, and random bytes on the TLS listeners: connections are
    closed or answered, the server keeps serving, and its log has no traceback."""
    import random

    rng = random.Random(20261126)
    hs = request_class(ApiKey.SASL_HANDSHAKE, 1)
    auth = request_class(ApiKey.SASL_AUTHENTICATE, 2)
    assert hs is not None and auth is not None
    for _ in range(60):
        target = rng.choice(["SASL_PLAINTEXT", "SASL_SSL", "SSL"])
        with socket.create_connection(secure.addresses[target], timeout=30) as s:
            s.settimeout(5)
            kind = rng.randrange(4)
            try:
                if kind == 0 or target != "SASL_PLAINTEXT":  # raw random bytes
                    s.sendall(rng.randbytes(rng.randrange(1, 600)))
                elif kind == 1:  # a handshake naming a random mechanism, then random tokens
                    _send(s, build(hs, mechanism=rng.choice(
                        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "x" * rng.randrange(40)])), 1)
                    for k in range(rng.randrange(1, 4)):
                        _send(s, build(auth, auth_bytes=rng.randbytes(rng.randrange(200))), 2 + k)
                elif kind == 2:  # SCRAM with mangled client messages
                    _send(s, build(hs, mechanism="SCRAM-SHA-256"), 1)
                    first = rng.choice(["n,,n=alice,r=" + "x" * rng.randrange(30), "p=tls,,n=a,r=b",
                                        "n,a=bob,n=alice,r=abc", "y,,", ",,,", "n,,n=,r=",
                                        "n,,n=al=ZZice,r=q"])
                    _send(s, build(auth, auth_bytes=first.encode()), 2)
                    _send(s, build(auth, auth_bytes=b"c=biws,r=abc,p=" + rng.randbytes(20)), 3)
                else:  # a frame with a good header and a truncated body
                    s.sendall(_raw_frame(ApiKey.SASL_AUTHENTICATE, 2, 1, rng.randbytes(5), True))
                while s.recv(65536):
                    pass
            except (OSError, TimeoutError):
                pass
    assert secure.server.proc.poll() is None
    with KafkaClient(secure.bootstrap("SASL_SSL"), ssl_context=_tls(certs),
                     sasl=("SCRAM-SHA-512", "alice", "alice-secret")) as c:
        assert _metadata(c).brokers
    assert "Traceback" not in secure.server.stderr()


def test_users_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    from types import SimpleNamespace

    from groupcoord.cli import main

    def run(*args: str, input: str | None = None, data_dir: Path = tmp_path) -> Any:
        if input is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(input))
        code = main(["users", *args, "--data-dir", str(data_dir)])
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)

    assert run("add", "u1", "--mechanism", "SCRAM-SHA-256", input="pw1\n").returncode == 0
    r = run("add", "u2", "--password", "pw2")
    assert r.returncode == 0, r.stderr
    r = run("list", "--json")
    assert json.loads(r.stdout) == [
        {"user": "u1", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}]},
        {"user": "u2", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                                       {"mechanism": "SCRAM-SHA-512", "iterations": 4096}]}]
    from groupcoord.server.security.credentials import CredentialStore

    assert CredentialStore(tmp_path).check_plain("u1", b"pw1")  # the password read from stdin
    r = run("remove", "u2", "--mechanism", "SCRAM-SHA-512")
    assert r.returncode == 0 and "SCRAM-SHA-512" in r.stdout
    assert "u2  SCRAM-SHA-256 (4096 iterations)" in run("list").stdout
    for args, msg in ((("remove", "nobody"), "error: no user 'nobody'"),
                      (("remove", "u1", "--mechanism", "SCRAM-SHA-512"),
                       "error: user 'u1' has no SCRAM-SHA-512"),
                      (("add", "u3", "--password", "p", "--iterations", "99999"),
                       "error: too many iterations"),
                      (("add", "u3", "--password", ""), "error: the password must not be empty")):
        r = run(*args)
        assert r.returncode == 1 and r.stderr.startswith(msg) and r.stderr.count("\n") == 1, \
            (args, r.stderr)
    r = run("list", data_dir=tmp_path / "none")
    assert r.returncode == 1 and r.stderr.startswith("error: no data directory")
