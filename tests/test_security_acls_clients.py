"""Authentication and authorization together, with a real client: SCRAM principals on a
SASL_PLAINTEXT listener of ``groupcoord serve``, ACLs created over the wire by a super user, and
confluent-kafka (librdkafka) consumers. A principal without READ on the group is refused with
GROUP_AUTHORIZATION_FAILED on joining (KIP-848 and classic) and on committing, and nothing
changes; a principal with the ACLs consumes and commits (docs/acls.md, docs/security.md)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import AclOperation, PatternType, PermissionType, ResourceType
from tests.security_support import SecureServer, add_user, start_secure_server

ck = pytest.importorskip("confluent_kafka")

TIMEOUT_S = 40.0
MECHANISM = "SCRAM-SHA-256"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureServer]:
    data = tmp_path_factory.mktemp("sasl-acls") / "data"
    data.mkdir()
    for user, password in USERS.items():
        add_user(data, user, password, MECHANISM)
    srv = start_secure_server(data, ["SASL_PLAINTEXT://127.0.0.1:0"],
                              "--config", f"sasl.enabled.mechanisms={MECHANISM}",
                              "--config", "super.users=User:admin", open_acls=False)
    try:
        yield srv
    finally:
        srv.server.stop()
        assert "Traceback" not in srv.server.stderr(), srv.server.stderr()[-3000:]


def _admin(server: SecureServer) -> KafkaClient:
    return KafkaClient(server.bootstrap("SASL_PLAINTEXT"),
                       sasl=(MECHANISM, "admin", USERS["admin"]))


def _conf(server: SecureServer, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": server.bootstrap("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": MECHANISM,
            "sasl.username": user, "sasl.password": USERS[user]}


def _allow(admin: KafkaClient, rtype: ResourceType, name: str, user: str,
           *ops: AclOperation) -> None:
    r = admin.call(ApiKey.CREATE_ACLS, 3, creations=[
        {"resource_type": int(rtype), "resource_name": name,
         "resource_pattern_type": int(PatternType.LITERAL), "principal": f"User:{user}",
         "host": "*", "operation": int(op), "permission_type": int(PermissionType.ALLOW)}
        for op in ops])
    assert [int(x.error_code) for x in r.results] == [0] * len(ops)


def _setup(server: SecureServer) -> tuple[str, str, str]:
    """A topic with 4 records, the group alice may read and the one nobody may."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    ok, closed = f"ok-{uuid.uuid4().hex[:6]}", f"no-{uuid.uuid4().hex[:6]}"
    with _admin(server) as admin:
        r = admin.call(ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": topic, "num_partitions": 1, "replication_factor": -1}], timeout=10_000)
        assert int(r.topics[0].error_code) == 0
        for user in ("alice", "bob"):
            _allow(admin, ResourceType.TOPIC, topic, user, AclOperation.READ, AclOperation.WRITE)
        _allow(admin, ResourceType.GROUP, ok, "alice", AclOperation.READ)
    p = ck.Producer(_conf(server, "alice"))
    for i in range(4):
        p.produce(topic, b"r%d" % i, partition=0)
    assert p.flush(TIMEOUT_S) == 0
    return topic, ok, closed


def _committed(server: SecureServer, group: str, topic: str) -> int:
    with _admin(server) as admin:
        r = admin.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": [0]}]}])
    return int(r.groups[0].topics[0].partitions[0].committed_offset)


def _group_exists(server: SecureServer, group: str) -> bool:
    with _admin(server) as admin:
        r = admin.call(ApiKey.LIST_GROUPS, 4, states_filter=[])
    return group in {g.group_id for g in r.groups}


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_a_principal_without_read_on_the_group_cannot_join_and_nothing_changes(
        server: SecureServer, protocol: str) -> None:
    topic, _ok, closed = _setup(server)
    c = ck.Consumer({**_conf(server, "bob"), "group.id": closed, "group.protocol": protocol,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    errors: list[Any] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED for e in errors):
            assert time.monotonic() < deadline, errors
            m = c.poll(0.2)
            assert m is None or m.error() is not None, "bob consumed without READ on the group"
            if m is not None:
                errors.append(m.error())
    finally:
        c.close()
    assert not _group_exists(server, closed)
    assert _committed(server, closed, topic) == -1


def test_a_commit_without_read_on_the_group_is_refused_and_changes_nothing(
        server: SecureServer) -> None:
    topic, ok, _closed = _setup(server)
    # bob may read the topic and DESCRIBE alice's group (FindCoordinator needs it), not READ
    # it: a manual commit into it is refused
    with _admin(server) as admin:
        _allow(admin, ResourceType.GROUP, ok, "bob", AclOperation.DESCRIBE)
    c = ck.Consumer({**_conf(server, "bob"), "group.id": ok, "enable.auto.commit": False})
    try:
        with pytest.raises(ck.KafkaException) as refused:
            c.commit(offsets=[ck.TopicPartition(topic, 0, 3)], asynchronous=False)
        assert refused.value.args[0].code() == ck.KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        c.close()
    assert _committed(server, ok, topic) == -1


def test_a_principal_with_the_acls_consumes_and_commits(server: SecureServer) -> None:
    topic, ok, _closed = _setup(server)
    c = ck.Consumer({**_conf(server, "alice"), "group.id": ok, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "fetch.wait.max.ms": 100})
    seen = 0
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while seen < 4:
            assert time.monotonic() < deadline
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen += 1
                c.commit(m, asynchronous=False)
    finally:
        c.close()
    assert _committed(server, ok, topic) == 4
