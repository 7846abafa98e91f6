"""Kafka's own admin clients manage ACLs here, and a real consumer is refused by them.

confluent-kafka's ``AdminClient.create_acls`` / ``describe_acls`` / ``delete_acls`` and
kafka-python's ``KafkaAdminClient`` against the server of ``acl_support`` (principals by client
id until SASL exists: the clients' settings come from ``client_config``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .acl_support import ThreadServer, thread_server

TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("acl-clients") / "data", storage="memory") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_confluent_admin_client_manages_acls(srv: ThreadServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    group = _name("cf")
    admin = AdminClient(srv.client_config("admin"))
    read = AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.ALLOW)
    deny = AclBinding(ResourceType.TOPIC, "pay-", ResourcePatternType.PREFIXED, "User:bob", "*",
                      AclOperation.ALL, AclPermissionType.DENY)
    for f in admin.create_acls([read, deny], request_timeout=TIMEOUT_S).values():
        assert f.result(TIMEOUT_S) is None
    match = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    got = admin.describe_acls(match, request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert {read, deny} <= set(got)
    only_group = AclBindingFilter(ResourceType.GROUP, group, ResourcePatternType.MATCH, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(only_group, request_timeout=TIMEOUT_S).result(TIMEOUT_S) == [read]
    deleted = admin.delete_acls([only_group], request_timeout=TIMEOUT_S)
    assert [f.result(TIMEOUT_S) for f in deleted.values()] == [[read]]
    assert admin.describe_acls(only_group, request_timeout=TIMEOUT_S).result(TIMEOUT_S) == []
    # A principal without ALTER on the cluster is refused.
    bob = AdminClient(srv.client_config("bob"))
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        for f in bob.create_acls([read], request_timeout=TIMEOUT_S).values():
            f.result(TIMEOUT_S)
    # DescribeAcls answers CLUSTER_AUTHORIZATION_FAILED (test_server_acls.py reads it), which
    # librdkafka drops (rd_kafka_DescribeAclsResponse_parse): bob sees an empty list.
    assert admin.describe_acls(match, request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert bob.describe_acls(match, request_timeout=TIMEOUT_S).result(TIMEOUT_S) == []


def test_kafka_python_admin_client_manages_acls(srv: ThreadServer) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    topic = _name("kp")
    cfg = srv.client_config("admin")
    admin = KafkaAdminClient(bootstrap_servers=cfg["bootstrap.servers"],
                             client_id=cfg["client.id"], request_timeout_ms=30_000)
    try:
        write = ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))
        result = admin.create_acls([write])
        assert result["succeeded"] == [write] and not result["failed"]
        flt = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(ResourceType.TOPIC, topic,
                                              ACLResourcePatternType.LITERAL))
        acls, error = admin.describe_acls(flt)
        assert acls == [write] and error.__name__ == "NoError"
        [(_, deleted, error)] = admin.delete_acls([flt])
        assert deleted == [write] and error.__name__ == "NoError"
        assert admin.describe_acls(flt)[0] == []
    finally:
        admin.close()


def test_confluent_consumer_without_read_on_its_group_is_refused(srv: ThreadServer) -> None:
    """A real KIP-848 consumer (librdkafka, ``group.protocol=consumer``) as a principal with no
    READ on its group gets GROUP_AUTHORIZATION_FAILED and the group is never made."""
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    group, topic = _name("rk"), _name("t")
    admin = AdminClient(srv.client_config("admin"))
    for f in admin.create_topics([NewTopic(topic, 1)], request_timeout=TIMEOUT_S).values():
        f.result(TIMEOUT_S)
    errors: list[Any] = []
    consumer = Consumer({**srv.client_config("bob"), "group.id": group,
                         "group.protocol": "consumer", "error_cb": errors.append})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        seen = None
        while time.monotonic() < deadline and seen is None:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                seen = msg.error()
            elif errors:
                seen = errors[0]
        assert seen is not None and seen.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, seen
    finally:
        consumer.close()
    groups = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert group not in {g.group_id for g in groups.valid}
