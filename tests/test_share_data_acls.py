"""Authorization of the share-partition APIs (KIP-932; docs/acls.md): ShareFetch and
ShareAcknowledge need READ on the group and on each topic; DescribeShareGroupOffsets DESCRIBE;
AlterShareGroupOffsets READ; DeleteShareGroupOffsets DELETE on the group. A refusal changes no
share state."""

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
from .test_server_acls import create_topic, grant

E = ErrorCode
Op = AclOperation
RT = ResourceType


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("share-acl-server") / "data") as s:
        yield s


def share_fetch(c: KafkaClient, group: str, tids: list[uuid.UUID], epoch: int = 0) -> Any:
    return c.call(ApiKey.SHARE_FETCH, 1, group_id=group, member_id="m", share_session_epoch=epoch,
                  max_wait=0, min_bytes=1, max_records=10, batch_size=10,
                  topics=[{"topic_id": t, "partitions": [{"partition_index": 0,
                                                          "acknowledgement_batches": []}]}
                          for t in tids], forgotten_topics_data=[])


def describe(c: KafkaClient, group: str, topics: list[str]) -> Any:
    return c.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[{"group_id": group, "topics": [
        {"topic_name": t, "partitions": [0]} for t in topics]}]).groups[0]


def test_share_apis_check_group_and_topic_acls(srv: ThreadServer) -> None:
    group = f"sg-{uuid.uuid4().hex[:8]}"
    t1, t2 = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        id1, id2 = create_topic(admin, t1), create_topic(admin, t2)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, t1, "User:alice", Op.READ)
        # bob may not read the group: the whole request is refused, no state is made
        r = share_fetch(bob, group, [id1])
        assert r.error_code == E.group_authorization_failed and not r.responses
        r = bob.call(ApiKey.SHARE_ACKNOWLEDGE, 1, group_id=group, member_id="m",
                     share_session_epoch=1, topics=[])
        assert r.error_code == E.group_authorization_failed
        assert describe(admin, group, [t1]).error_code == E.group_id_not_found
        # alice reads the group and t1, not t2
        r = share_fetch(alice, group, [id1, id2])
        assert r.error_code == E.none
        assert {t.topic_id: [p.error_code for p in t.partitions] for t in r.responses} == {
            id1: [E.none], id2: [E.topic_authorization_failed]}
        # DescribeShareGroupOffsets: bob not at all; for alice t2 is left out (READ implies
        # DESCRIBE on t1 and on the group)
        assert describe(bob, group, [t1]).error_code == E.group_authorization_failed
        g = describe(alice, group, [t1, t2])
        assert g.error_code == E.none and [t.topic_name for t in g.topics] == [t1]
        assert [p.start_offset for p in g.topics[0].partitions] == [0]
        # alice's session closes: the group is empty for the offset admin APIs
        assert share_fetch(alice, group, [], epoch=-1).error_code == E.none
        r = alice.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=[
            {"topic_name": t, "partitions": [{"partition_index": 0, "start_offset": 0}]}
            for t in (t1, t2)])
        assert r.error_code == E.none
        assert {t.topic_name: [p.error_code for p in t.partitions] for t in r.responses} == {
            t1: [E.none], t2: [E.topic_authorization_failed]}
        r = bob.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, group_id=group, topics=[])
        assert r.error_code == E.group_authorization_failed
        r = alice.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=group,
                       topics=[{"topic_name": t1}])
        assert r.error_code == E.group_authorization_failed
        assert [p.start_offset for t in describe(admin, group, [t1]).topics
                for p in t.partitions] == [0]
        grant(admin, RT.GROUP, group, "User:alice", Op.DELETE)
        r = alice.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=group,
                       topics=[{"topic_name": t1}, {"topic_name": t2}])
        assert [(t.topic_name, t.error_code) for t in r.responses] == [
            (t1, E.none), (t2, E.topic_authorization_failed)]
        assert describe(admin, group, [t1]).error_code == E.group_id_not_found
