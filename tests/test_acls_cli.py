"""``groupcoord acls add|list|remove`` online and offline, and ACL settings of ``serve``.

Offline ACLs written to a stopped server's data directory are enforced once it starts; the
offline command refuses a directory a running server holds; online, the command acts as its
connection's principal (the client id hook of ``acl_support``). Each bad input is one line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.cli import main
from groupcoord.protocol.client import KafkaClient

from .acl_support import thread_server
from .conftest import GROUPCOORD, start_server
from .test_server_acls import join

E = ErrorCode


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["acls", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_offline_acls_are_enforced_when_the_server_starts(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    code, out, err = run(capsys, "add", "--data-dir", str(data), "--allow-principal",
                         "User:ANONYMOUS", "--operation", "Read", "--group", "team-",
                         "--resource-pattern-type", "prefixed")
    assert code == 0, err
    assert "(principal=User:ANONYMOUS, host=*, operation=READ, permissionType=ALLOW)" in out
    code, out, _ = run(capsys, "list", "--data-dir", str(data), "--json")
    assert json.loads(out) == [{"resource_type": "GROUP", "name": "team-",
                                "pattern_type": "PREFIXED", "principal": "User:ANONYMOUS",
                                "host": "*", "operation": "READ", "permission": "ALLOW"}]
    server = start_server(data, "--config", "allow.everyone.if.no.acl.found=false")
    try:
        with KafkaClient(server.bootstrap) as c:
            assert join(c, "team-a").error_code == E.member_id_required
            assert join(c, "other").error_code == E.group_authorization_failed
        # While it runs, the offline command refuses the directory.
        code, _, err = run(capsys, "add", "--data-dir", str(data), "--allow-principal",
                           "User:x", "--group", "g")
        assert code == 1 and err.strip() == (
            f"error: the data directory {data} is in use by a running server: change its "
            f"ACLs with --bootstrap-server")
    finally:
        server.stop()
    code, out, _ = run(capsys, "remove", "--data-dir", str(data), "--group", "team-",
                       "--resource-pattern-type", "prefixed")
    assert code == 0 and "Removed ACLs" in out
    assert run(capsys, "list", "--data-dir", str(data))[1].strip() == "No ACLs."


def test_online_acls_need_a_principal_allowed_to_alter_the_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with thread_server(tmp_path / "data", storage="memory") as s:
        admin = ["--bootstrap-server", s.bootstrap, "--client-id", "as-admin"]
        code, _, err = run(capsys, "add", *admin, "--allow-principal", "User:alice",
                           "--allow-principal", "User:bob", "--operation", "Read",
                           "--operation", "Describe", "--topic", "orders")
        assert code == 0, err
        code, out, _ = run(capsys, "list", *admin, "--topic", "orders", "--json")
        assert sorted((b["principal"], b["operation"]) for b in json.loads(out)) == [
            ("User:alice", "DESCRIBE"), ("User:alice", "READ"), ("User:bob", "DESCRIBE"),
            ("User:bob", "READ")]
        code, out, _ = run(capsys, "list", *admin, "--principal", "User:bob", "--json")
        assert {b["principal"] for b in json.loads(out)} == {"User:bob"}
        code, out, _ = run(capsys, "remove", *admin, "--topic", "orders", "--allow-principal",
                           "User:bob", "--operation", "Read", "--json")
        assert [(b["principal"], b["operation"]) for b in json.loads(out)] == [("User:bob", "READ")]
        code, out, _ = run(capsys, "list", *admin, "--json")
        assert len(json.loads(out)) == 3
        code, _, err = run(capsys, "add", "--bootstrap-server", s.bootstrap, "--client-id",
                           "as-bob", "--allow-principal", "User:bob", "--topic", "orders")
        assert code == 1 and err.startswith("error: CLUSTER_AUTHORIZATION_FAILED: Not authorized")
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["add", "--allow-principal", "User:a", "--operation", "Reed", "--group", "g"],
     "error: unknown AclOperation 'Reed'; expected one of ALL, READ"),
    (["add", "--allow-principal", "User:a"], "error: name a resource"),
    (["add", "--group", "g"], "error: name a principal"),
    (["add", "--allow-principal", "alice", "--group", "g"], "error: Could not parse principal"),
    (["add", "--allow-principal", "User:a", "--operation", "IdempotentWrite", "--group", "g"],
     "error: ResourceType GROUP only supports operations ALL, READ, DESCRIBE"),
    (["add", "--allow-principal", "User:a", "--group", "g", "--resource-pattern-type", "any"],
     "error: Invalid pattern type ANY for an ACL"),
    (["remove", "--allow-principal", "User:a"], "error: name a resource to remove ACLs of"),
])
def test_bad_arguments_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    args: list[str], message: str) -> None:
    code, _, err = run(capsys, *args, "--data-dir", str(tmp_path))
    assert code == 1 and err.startswith(message) and len(err.strip().splitlines()) == 1, err


def test_bad_acl_state_and_settings_are_one_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "list", "--data-dir", str(tmp_path / "nope"))
    assert code == 1 and err.strip() == f"error: --data-dir {tmp_path / 'nope'} is not a directory"
    (tmp_path / "acls.json").write_text("{oops")
    code, _, err = run(capsys, "list", "--data-dir", str(tmp_path))
    assert code == 1 and err.startswith(f"error: cannot read ACLs from {tmp_path / 'acls.json'}")
    base = [*GROUPCOORD, "serve", "--port", "0", "--data-dir", str(tmp_path)]
    r = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip().startswith(
        f"error: cannot start: cannot read ACLs from {tmp_path / 'acls.json'}"), r.stderr
    (tmp_path / "acls.json").unlink()
    r = subprocess.run([*base, "--config", "allow.everyone.if.no.acl.found=maybe"],
                       capture_output=True, text=True, timeout=60)
    # a bad value is bad usage (the --config registry, docs/configuration.md): status 2
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: config allow.everyone.if.no.acl.found must be true or false, got 'maybe'"), r.stderr


def test_a_server_bound_beyond_loopback_warns_and_refuses_what_no_acl_allows(
        tmp_path: Path) -> None:
    """Without the property, a server on 0.0.0.0 has allow.everyone.if.no.acl.found=false:
    it says so on start, and an ANONYMOUS client may not join a group until an ACL allows it."""
    server = start_server(tmp_path / "data", "--host", "0.0.0.0", "--storage", "memory")
    try:
        assert (f"listener PLAINTEXT on 0.0.0.0:{server.port} accepts clients from the network "
                f"without authentication: its clients are User:ANONYMOUS and may do only what "
                f"ACLs allow User:ANONYMOUS" in server.stderr())
        with KafkaClient(f"127.0.0.1:{server.port}") as c:
            assert join(c, "g").error_code == E.group_authorization_failed
    finally:
        server.stop()
