"""``groupcoord serve`` with listeners: bad settings are one line, credentials survive a
restart (and stay in memory with ``--storage memory``), several brokers advertise each
listener's ports, a listener open beyond loopback without authentication is warned about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupcoord.cli import main
from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.config import ServerSecurity
from groupcoord.server.security.credentials import CredentialError, CredentialStore
from groupcoord.server.security.listeners import ListenerError, parse_listeners
from groupcoord.server.security.tls import subject_dn
from tests.security_support import Certs, add_user, make_certs, start_secure_server


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _serve_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> str:
    code = main(["serve", "--data-dir", str(tmp_path / "d"), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("args,expected", [
    (["--listener", "FOO://127.0.0.1:0"], "listener FOO: unknown security protocol"),
    (["--listener", "PLAINTEXT:/127.0.0.1:0"], "listener must be NAME://HOST:PORT"),
    (["--listener", "PLAINTEXT://127.0.0.1:70000"], "port 70000 is out of range"),
    (["--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "PLAINTEXT://127.0.0.1:0"],
     "listener PLAINTEXT is given twice"),
    (["--listener", "PLAINTEXT://127.0.0.1:0", "--port", "0"], "give either --listener or --port"),
    (["--listener", "SSL://127.0.0.1:0"], "listener SSL uses TLS: give ssl.keystore.location"),
    (["--listener", "SSL://127.0.0.1:0", "--config", "ssl.keystore.type=JKS"],
     "ssl.keystore.type=JKS is not supported"),
    (["--listener", "SSL://127.0.0.1:0", "--config", "ssl.keystore.location=/nonexistent.pem"],
     "ssl.keystore.location: no such file: /nonexistent.pem"),
    (["--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--config", "sasl.enabled.mechanisms=GSSAPI"],
     "SASL mechanism GSSAPI is not supported"),
    (["--config", "listeners=EXTERNAL://127.0.0.1:0",
      "--config", "listener.security.protocol.map=EXTERNAL:KERBEROS"],
     "listener.security.protocol.map: expected NAME:PROTOCOL"),
])
def test_bad_listener_settings_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            args: list[str], expected: str) -> None:
    assert expected in _serve_error(capsys, tmp_path, *args)


def test_tls_settings_errors(certs: Certs, capsys: pytest.CaptureFixture[str],
                             tmp_path: Path) -> None:
    ssl_l = ["--listener", "SSL://127.0.0.1:0", "--config", f"ssl.keystore.location={certs.server}"]
    assert "ssl.client.auth=required needs ssl.truststore.location" in _serve_error(
        capsys, tmp_path, *ssl_l, "--config", "ssl.client.auth=required")
    assert "ssl.client.auth must be required, requested or none" in _serve_error(
        capsys, tmp_path, *ssl_l, "--config", "ssl.client.auth=maybe")
    assert "cannot load the certificate and key" in _serve_error(
        capsys, tmp_path, "--listener", "SSL://127.0.0.1:0",
        "--config", f"ssl.keystore.location={certs.ca}")  # a certificate without its key
    assert "ssl.enabled.protocols: unsupported 'SSLv3'" in _serve_error(
        capsys, tmp_path, *ssl_l, "--config", "ssl.enabled.protocols=SSLv3")


def test_listener_names_and_protocol_map() -> None:
    specs = parse_listeners(["external://[::1]:9093,INTERNAL://:9094"],
                            "EXTERNAL:SASL_SSL,INTERNAL:PLAINTEXT")
    assert [(s.name, s.protocol, s.host, s.port) for s in specs] == [
        ("EXTERNAL", "SASL_SSL", "::1", 9093), ("INTERNAL", "PLAINTEXT", "", 9094)]
    assert specs[0].url(1234) == "EXTERNAL://[::1]:1234"
    with pytest.raises(ListenerError, match="unknown security protocol"):
        parse_listeners(["EXTERNAL://:1"])


def test_warning_for_a_listener_beyond_loopback_without_authentication(certs: Certs) -> None:
    sec = ServerSecurity({"ssl.keystore.location": str(certs.server),
                          "listener.name.mtls.ssl.client.auth": "required",
                          "ssl.truststore.location": str(certs.ca),
                          "listener.security.protocol.map": "MTLS:SSL"},
                         ["PLAINTEXT://0.0.0.0:1", "SSL://10.1.2.3:2", "SASL_SSL://0.0.0.0:3",
                          "MTLS://0.0.0.0:4"], "127.0.0.1", 0)
    warnings = sec.warnings()
    assert len(warnings) == 2
    assert warnings[0].startswith("listener PLAINTEXT on 0.0.0.0:1 accepts clients from the "
                                  "network without authentication: its clients are "
                                  "User:ANONYMOUS; use SASL_SSL, or SSL with "
                                  "ssl.client.auth=required")
    assert warnings[1].startswith("listener SSL on 10.1.2.3:2")
    assert "without a certificate are User:ANONYMOUS" in warnings[1]
    assert ServerSecurity({}, None, "127.0.0.1", 9092).warnings() == []
    assert len(ServerSecurity({}, None, "0.0.0.0", 9092).warnings()) == 1
    # with the bound port and what anonymous clients may do, and what to do about it
    open_, closed = (sec.warnings(allow, {"PLAINTEXT": [9092]}) for allow in (True, False))
    assert open_[0].startswith("listener PLAINTEXT on 0.0.0.0:9092 ")
    assert "allow.everyone.if.no.acl.found=true, may do anything no ACL names" in open_[0]
    assert open_[0].endswith("or set allow.everyone.if.no.acl.found=false and grant ACLs")
    assert "may do only what ACLs allow User:ANONYMOUS" in closed[0]
    assert "allow.everyone" not in closed[0].split(";")[1]


def test_subject_dn_is_rfc2253() -> None:
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "A, B"),),
                        (("commonName", "#x"), ("userId", "7")))}
    assert subject_dn(cert) == "CN=\\#x+UID=7,O=A\\, B,C=US"


def test_credential_store(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    store.add("u", "SCRAM-SHA-512", "pw", 8192)
    assert store.users() == {"u": {"SCRAM-SHA-512": 8192}}
    assert store.check_plain("u", b"pw") and not store.check_plain("u", b"px")
    other = CredentialStore(tmp_path)  # another process on the same directory
    other.add("v", "SCRAM-SHA-256", "pw2")
    assert set(store.users()) == {"u", "v"}  # re-read: the file changed
    store.remove("u")
    assert set(other.users()) == {"v"}
    with pytest.raises(CredentialError, match="no user 'u'"):
        store.remove("u")
    (tmp_path / "scram-credentials.json").write_text("{not json")
    with pytest.raises(CredentialError, match=r"scram-credentials\.json: cannot read"):
        CredentialStore(tmp_path)
    mem = CredentialStore(tmp_path / "m", persist=False)
    mem.add("w", "SCRAM-SHA-256", "pw")
    assert mem.check_plain("w", b"pw") and not (tmp_path / "m").exists()


def _alter(bootstrap: str, user: str, password: str) -> None:
    import hashlib

    salt = b"salt-salt-salt-salt"
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[], upsertions=[
            {"name": user, "mechanism": 2, "iterations": 4096, "salt": salt,
             "salted_password": hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 4096)}])
    assert [(x.user, int(x.error_code)) for x in r.results] == [(user, 0)]


@pytest.mark.parametrize("storage", ["sqlite", "memory"])
def test_credentials_across_a_restart(tmp_path: Path, storage: str) -> None:
    """Durable in the data directory; with --storage memory, a user added over the wire is
    gone after a restart and nothing is written (users added offline before are read)."""
    data = tmp_path / "data"
    data.mkdir()
    add_user(data, "offline", "pw0")
    listeners = ["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"]
    srv = start_secure_server(data, listeners, "--storage", storage)
    try:
        _alter(srv.bootstrap("PLAINTEXT"), "dave", "dave-pw")
        with KafkaClient(srv.bootstrap("SASL_PLAINTEXT"), sasl=("SCRAM-SHA-512", "dave", "dave-pw")):
            pass
    finally:
        srv.server.stop()
    on_disk = json.loads((data / "scram-credentials.json").read_text())["users"]
    assert ("dave" in on_disk) == (storage == "sqlite")
    srv = start_secure_server(data, listeners, "--storage", storage)
    try:
        bootstrap = srv.bootstrap("SASL_PLAINTEXT")
        with KafkaClient(bootstrap, sasl=("SCRAM-SHA-256", "offline", "pw0")):
            pass
        if storage == "sqlite":
            with KafkaClient(bootstrap, sasl=("SCRAM-SHA-512", "dave", "dave-pw")):
                pass
        else:
            with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED"):
                KafkaClient(bootstrap, sasl=("SCRAM-SHA-512", "dave", "dave-pw"))
        # a user added offline while the server runs is known at once
        add_user(data, "late", "pw-late")
        if storage == "sqlite":
            with KafkaClient(bootstrap, sasl=("SCRAM-SHA-256", "late", "pw-late")):
                pass
    finally:
        srv.server.stop()
    assert "Traceback" not in srv.server.stderr()


def test_several_brokers_advertise_each_listener(tmp_path: Path) -> None:
    """--brokers 2 with two listeners: each client is told every broker's port on its own
    listener; a PLAINTEXT listener on 0.0.0.0 prints the warning line."""
    data = tmp_path / "data"
    data.mkdir()
    add_user(data, "alice", "pw")
    srv = start_secure_server(data, ["SASL_PLAINTEXT://127.0.0.1:0", "PLAINTEXT://0.0.0.0:0"],
                              "--brokers", "2", "--config",
                              "advertised.listeners=PLAINTEXT://127.0.0.1:0")
    try:
        seen = {}
        for name, sasl in (("SASL_PLAINTEXT", ("SCRAM-SHA-256", "alice", "pw")),
                           ("PLAINTEXT", None)):
            _, port = srv.addresses[name]
            with KafkaClient(f"127.0.0.1:{port}", sasl=sasl) as c:
                md = c.call(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False)
                seen[name] = sorted((int(b.node_id), b.host, int(b.port)) for b in md.brokers)
        assert seen["SASL_PLAINTEXT"][0][2] == srv.addresses["SASL_PLAINTEXT"][1]  # broker 0
        assert seen["PLAINTEXT"][0][2] == srv.addresses["PLAINTEXT"][1]
        assert len({p for v in seen.values() for _, _, p in v}) == 4
        assert {h for _, h, _ in seen["PLAINTEXT"]} == {"127.0.0.1"}
        # broker 1 on the SASL listener asks for authentication too
        _, _, port1 = seen["SASL_PLAINTEXT"][1]
        with KafkaClient(f"127.0.0.1:{port1}", sasl=("SCRAM-SHA-256", "alice", "pw")) as c:
            assert c.api_versions()
    finally:
        srv.server.stop()
    err = srv.server.stderr()
    exposed = [ln for ln in err.splitlines() if "without authentication" in ln
               or "ANONYMOUS" in ln]
    assert len(exposed) == 1, err  # one line, not one from authentication and one from ACLs
    port = srv.addresses["PLAINTEXT"][1]
    assert f"WARNING groupcoord.server.app: listener PLAINTEXT on 0.0.0.0:{port} " in exposed[0]
    # start_secure_server sets allow.everyone.if.no.acl.found=true: said, with what to do
    assert "with allow.everyone.if.no.acl.found=true, may do anything no ACL names" in exposed[0]
    assert "use SASL_SSL, or SSL with ssl.client.auth=required" in exposed[0]


def test_control_lists_connections_with_listener_and_principal() -> None:
    from groupcoord.testing import embedded_cluster

    with embedded_cluster() as cluster, KafkaClient(cluster.bootstrap_servers,
                                                    client_id="who") as c:
        c.api_versions()
        [conn] = [x for x in cluster.control.connections() if x["client_id"] == "who"]
        assert (conn["listener"], conn["principal"], conn["broker"]) == (
            "PLAINTEXT", "User:ANONYMOUS", 0)


def test_config_keys_cover_what_the_layer_reads() -> None:
    """Every ``props`` key the security modules read is in CONFIG_KEYS (for the unknown-key
    check of ``serve --config``)."""
    import re

    from groupcoord.server.security import config, listeners, sasl, tls

    read = set()
    for mod in (config, listeners, sasl, tls):
        text = Path(mod.__file__ or "").read_text()
        read |= set(re.findall(r'(?:get\(|setting\(props, [a-z.]+, )"((?:ssl|sasl|listener|'
                               r'listeners|advertised|connection)[a-z.]*)"', text))
        read |= set(re.findall(r'props\.get\("([a-z.]+)"', text))
    assert read == config.CONFIG_KEYS, read ^ config.CONFIG_KEYS


def test_required_client_certificate_and_pem_text_settings(tmp_path: Path, certs: Certs) -> None:
    """ssl.client.auth=required: a client without a certificate is refused, one with a
    certificate is User:<its DN>; the key and chain given as PEM text (Kafka's form of
    ssl.keystore.certificate.chain / ssl.keystore.key / ssl.truststore.certificates)."""
    import ssl

    srv = start_secure_server(
        tmp_path / "data", ["SSL://127.0.0.1:0"],
        "--config", f"ssl.keystore.certificate.chain={certs.server_cert.read_text()}",
        "--config", f"ssl.keystore.key={certs.server_key.read_text()}",
        "--config", f"ssl.truststore.certificates={certs.ca.read_text()}",
        "--config", "ssl.client.auth=required")
    try:
        ctx = ssl.create_default_context(cafile=str(certs.ca))
        with pytest.raises((KafkaClientError, OSError)), \
                KafkaClient(srv.bootstrap("SSL"), ssl_context=ctx) as c:
            c.api_versions()
        ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
        with KafkaClient(srv.bootstrap("SSL"), ssl_context=ctx, client_id="mtls") as c:
            c.api_versions()
            r = c.call(ApiKey.GROUPCOORD_CONTROL, 0, command="connections", arguments="{}")
            [conn] = [x for x in json.loads(r.result)["connections"] if x["client_id"] == "mtls"]
            assert conn["principal"] == f"User:{certs.client_dn}"
    finally:
        srv.server.stop()
    assert "Traceback" not in srv.server.stderr()


def test_serve_beyond_loopback_without_authentication_warns_once(tmp_path: Path) -> None:
    """``serve --host 0.0.0.0``: one line naming the listener with its port, who its clients
    are, what they may do (allow.everyone.if.no.acl.found defaults to false beyond loopback)
    and what to do; there were two (one from authentication, one from authorization)."""
    import subprocess

    from tests.conftest import GROUPCOORD

    p = subprocess.Popen([*GROUPCOORD, "serve", "--host", "0.0.0.0", "--port", "0",
                          "--data-dir", str(tmp_path / "d"), "--storage", "memory"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("listening on 0.0.0.0:"), line
        port = line.strip().rpartition(":")[2]
    finally:
        p.terminate()
        _, err = p.communicate(timeout=60)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].endswith(
        f"WARNING groupcoord.server.app: listener PLAINTEXT on 0.0.0.0:{port} accepts clients "
        f"from the network without authentication: its clients are User:ANONYMOUS and may do "
        f"only what ACLs allow User:ANONYMOUS; use SASL_SSL, or SSL with "
        f"ssl.client.auth=required"), lines[0]
