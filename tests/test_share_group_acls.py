"""Authorization of the share group APIs (KIP-932, as Kafka 4.x's ``KafkaApis``):
ShareGroupHeartbeat needs READ on the group and DESCRIBE on each subscribed topic,
ShareGroupDescribe DESCRIBE on the group and on its members' topics; a refused heartbeat
creates nothing. Principals as in ``test_server_acls.py`` (client id -> principal)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import AclOperation, ResourceType

from .acl_support import ThreadServer, thread_server
from .test_server_acls import create_topic, grant, listed_groups

E = ErrorCode
Op = AclOperation
RT = ResourceType


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("share-acl-server") / "data") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def heartbeat(c: KafkaClient, group: str, topics: list[str] | None, epoch: int = 0,
              member: str = "m1") -> Any:
    return c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                  member_epoch=epoch, subscribed_topic_names=topics)


def describe(c: KafkaClient, group: str, ops: bool = False) -> Any:
    return c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                  include_authorized_operations=ops).groups[0]


def test_share_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(
        srv: ThreadServer) -> None:
    group, topic, secret = _name("sg"), _name("t"), _name("secret")
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        create_topic(admin, topic)
        create_topic(admin, secret)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, topic, "User:alice", Op.DESCRIBE)
        r = heartbeat(bob, group, [topic])
        assert r.error_code == E.group_authorization_failed and r.member_epoch == 0
        r = heartbeat(alice, group, [topic, secret])
        assert r.error_code == E.topic_authorization_failed and secret in (r.error_message or "")
        assert group not in listed_groups(admin)  # neither made the group
        assert describe(admin, group).error_code == E.group_id_not_found
        r = heartbeat(alice, group, [topic])
        assert r.error_code == E.none and r.member_epoch == 1
        assert [tp.partitions for tp in r.assignment.topic_partitions] == [(0, 1)]
        # a heartbeat naming no topics needs no topic ACL
        r = heartbeat(alice, group, None, epoch=1)
        assert r.error_code == E.none and r.assignment is None
        # describing: bob may not; alice may (DESCRIBE implied by READ), with her operations
        assert describe(bob, group).error_code == E.group_authorization_failed
        d = describe(alice, group, ops=True)
        assert d.error_code == E.none and len(d.members) == 1
        assert d.authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
        # a describer who may not see the group's topic gets TOPIC_AUTHORIZATION_FAILED
        grant(admin, RT.GROUP, group, "User:carol", Op.DESCRIBE)
        with srv.client("carol") as carol:
            d = describe(carol, group)
            assert d.error_code == E.topic_authorization_failed and not d.members
        assert group in listed_groups(alice) and group not in listed_groups(bob)
