"""The online admin commands on a secured server (``--command-config``, a Kafka client
properties file as ``kafka-acls.sh --command-config`` takes it; ``protocol/client_config.py``),
and ``control drop-connections --all`` answering its own client.

One ``groupcoord serve`` with a SASL_SSL listener (SCRAM users ``admin``, a super user, and
``alice``) and a PLAINTEXT one, ``allow.everyone.if.no.acl.found=false``: the commands act as
the principal the file logs in as, and a file that cannot be used is one line with status 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.cli import main
from groupcoord.protocol.client_config import ClientConfigError, client_options, read_properties
from tests.security_support import Certs, SecureServer, add_user, make_certs, start_secure_server

LISTENERS = ["PLAINTEXT://127.0.0.1:0", "SASL_SSL://127.0.0.1:0"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[SecureServer]:
    data = tmp_path_factory.mktemp("admin") / "data"
    data.mkdir()
    add_user(data, "admin", "admin-secret")
    add_user(data, "alice", "alice-secret")
    srv = start_secure_server(
        data, LISTENERS, "--config", f"ssl.keystore.location={certs.server}",
        "--config", "super.users=User:admin", open_acls=False)
    try:
        yield srv
    finally:
        srv.server.stop()
        assert "Traceback" not in srv.server.stderr(), srv.server.stderr()[-3000:]


def _props(path: Path, certs: Certs, user: str, password: str, *, jaas: bool = True) -> Path:
    lines = ["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
             f"ssl.truststore.location={certs.ca}", "ssl.truststore.type=PEM"]
    if jaas:
        lines.append("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                     f'required username="{user}" \\\n    password="{password}";')
    else:  # librdkafka's names
        lines += [f"sasl.username={user}", f"sasl.password={password}"]
    path.write_text("# a Kafka client properties file\n" + "\n".join(lines) + "\n")
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_acls_online_act_as_the_principal_of_the_command_config(
        secure: SecureServer, certs: Certs, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    admin = _props(tmp_path / "admin.properties", certs, "admin", "admin-secret")
    alice = _props(tmp_path / "alice.properties", certs, "alice", "alice-secret", jaas=False)
    where = ["--bootstrap-server", secure.bootstrap("SASL_SSL")]
    code, out, err = _run(capsys, "acls", "add", *where, "--command-config", str(admin),
                          "--allow-principal", "User:alice", "--operation", "Read",
                          "--group", "team-a")
    assert code == 0, err
    assert "principal=User:alice" in out
    code, out, err = _run(capsys, "acls", "list", *where, "--command-config", str(admin),
                          "--json")
    assert code == 0, err
    assert [b["principal"] for b in json.loads(out)] == ["User:alice"]
    # alice may not alter the cluster's ACLs: the server says so, she was authenticated
    code, _, err = _run(capsys, "acls", "add", *where, "--command-config", str(alice),
                        "--allow-principal", "User:alice", "--group", "g")
    assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in err, err
    # without the file a SASL_SSL listener cannot be talked to at all
    code, _, err = _run(capsys, "acls", "list", *where)
    assert code == 1 and err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_topics_groups_and_control_take_the_command_config(
        secure: SecureServer, certs: Certs, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    admin = str(_props(tmp_path / "admin.properties", certs, "admin", "admin-secret"))
    where = ["--bootstrap-server", secure.bootstrap("SASL_SSL"), "--command-config", admin]
    code, out, err = _run(capsys, "topics", "create", "secured", "--partitions", "2", *where)
    assert code == 0, err
    code, out, err = _run(capsys, "topics", "list", "--json", *where)
    assert code == 0, err
    assert "secured" in out
    code, out, err = _run(capsys, "groups", "list", *where)
    assert code == 0, err
    code, out, err = _run(capsys, "control", "connections", "--json", *where)
    assert code == 0, err
    mine = [c for c in json.loads(out)["connections"] if c["listener"] == "SASL_SSL"]
    assert mine and all(c["principal"] == "User:admin" for c in mine)


def test_drop_connections_all_answers_its_own_client(secure: SecureServer, certs: Certs,
                                                     tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Every client connection is dropped, the asking one after its answer: success."""
    admin = str(_props(tmp_path / "admin.properties", certs, "admin", "admin-secret"))
    code, out, err = _run(capsys, "control", "drop-connections", "--all", "--json",
                          "--bootstrap-server", secure.bootstrap("SASL_SSL"),
                          "--command-config", admin)
    assert code == 0, err
    assert len(json.loads(out)["dropped"]) >= 1  # its own at least


@pytest.mark.parametrize("content, needle", [
    ("security.protocol=KERBEROS\n", "security.protocol=KERBEROS is not one of"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "sasl.mechanism=GSSAPI"),
    ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "needs a user and a password"),
    ("security.protocol=SSL\nssl.truststore.location=/nonexistent.pem\n",
     "cannot load the TLS files"),
    ("security.protocol=SSL\nssl.truststore.type=JKS\n", "ssl.truststore.type=JKS"),
])
def test_a_bad_command_config_is_one_line_with_status_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str) -> None:
    path = tmp_path / "client.properties"
    path.write_text(content)
    for args in (["acls", "list"], ["topics", "list"], ["control", "connections"]):
        with pytest.raises(SystemExit) as exc:
            main([*args, "--command-config", str(path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and needle in err, err
    with pytest.raises(SystemExit):
        main(["acls", "list", "--command-config", str(tmp_path / "missing.properties")])
    assert "missing.properties: No such file" in capsys.readouterr().err


def test_properties_syntax_as_java_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "p.properties"
    path.write_text("! comment\n# comment\n\nsecurity.protocol = SASL_PLAINTEXT\n"
                    "sasl.mechanism: PLAIN\nsasl.jaas.config=x required \\\n"
                    '   username="bob" password="p w";\n')
    props = read_properties(path)
    assert props["security.protocol"] == "SASL_PLAINTEXT"
    assert props["sasl.mechanism"] == "PLAIN"
    assert client_options(props) == {"sasl": ("PLAIN", "bob", "p w")}
    assert client_options({}) == {}
    with pytest.raises(ClientConfigError):
        client_options({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"})
