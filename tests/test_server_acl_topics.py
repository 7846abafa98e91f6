"""Topic authorization of DeleteTopics and OffsetForLeaderEpoch over the wire, as Kafka decides it.

- DeleteTopics (Kafka's ``ControllerApis.deleteTopics``): DELETE on the CLUSTER allows every
  topic. Otherwise a topic named by name that the principal may not DESCRIBE is
  TOPIC_AUTHORIZATION_FAILED whether it exists or not (a refusal reveals nothing); one it may
  describe that does not exist is UNKNOWN_TOPIC_OR_PARTITION; an existing one needs DELETE
  (which implies DESCRIBE).
- OffsetForLeaderEpoch (Kafka's ``KafkaApis.handleOffsetForLeaderEpochRequest``): CLUSTER_ACTION
  on the CLUSTER (a follower broker's ACL) allows every topic, else each topic needs DESCRIBE
  (KIP-320's consumers); the replica id is not looked at.

Each test has its own server: the principals' ACLs start empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import AclOperation, PatternType, ResourceType

from .acl_support import ThreadServer, thread_server
from .test_server_acls import create_topic, grant

E = ErrorCode
Op = AclOperation
RT = ResourceType
CLUSTER = "kafka-cluster"
TIMEOUT_S = 30.0


@pytest.fixture()
def srv(tmp_path: Any) -> Iterator[ThreadServer]:
    with thread_server(tmp_path / "data") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _delete(c: KafkaClient, *names: str) -> list[tuple[str, int]]:
    r = c.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": n, "topic_id": None} for n in names],
               timeout=5_000)
    return sorted((str(x.name), int(x.error_code)) for x in r.responses)


def _topics(c: KafkaClient) -> set[str]:
    return {str(t.name) for t in c.call(ApiKey.METADATA, 12, topics=None).topics}


def test_delete_topics_by_name_answers_unknown_only_to_who_may_describe(srv: ThreadServer) -> None:
    prefix = _name("del")
    kept, gone = f"{prefix}-kept", f"{prefix}-gone"
    with srv.client("admin") as admin, srv.client("bob") as bob, \
            srv.client("alice") as alice, srv.client("carol") as carol:
        create_topic(admin, kept)
        # bob has no ACL: refused alike whether the topic exists or not
        assert _delete(bob, kept, gone) == [(gone, E.topic_authorization_failed),
                                            (kept, E.topic_authorization_failed)]
        # alice may DESCRIBE the prefix: the missing topic is named unknown, the existing one
        # is still refused (no DELETE)
        grant(admin, RT.TOPIC, prefix, "User:alice", Op.DESCRIBE, pattern=PatternType.PREFIXED)
        assert _delete(alice, kept, gone) == [(gone, E.unknown_topic_or_partition),
                                              (kept, E.topic_authorization_failed)]
        # DELETE on a name implies DESCRIBE on it
        grant(admin, RT.TOPIC, gone, "User:bob", Op.DELETE)
        assert _delete(bob, gone) == [(gone, E.unknown_topic_or_partition)]
        assert kept in _topics(admin)
        # carol has DELETE on the CLUSTER: every topic, without any topic ACL
        grant(admin, RT.CLUSTER, CLUSTER, "User:carol", Op.DELETE)
        assert _delete(carol, kept, gone) == [(gone, E.unknown_topic_or_partition),
                                              (kept, E.none)]
        assert kept not in _topics(admin)


def test_delete_topics_by_id_with_delete_on_the_cluster_names_the_topic(
        srv: ThreadServer) -> None:
    topic = _name("del-id")
    with srv.client("admin") as admin, srv.client("carol") as carol:
        tid = create_topic(admin, topic)
        grant(admin, RT.CLUSTER, CLUSTER, "User:carol", Op.DELETE)
        r = carol.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": None, "topic_id": tid}],
                       timeout=5_000)
        assert [(x.name, int(x.error_code)) for x in r.responses] == [(topic, E.none)]


def test_delete_topics_with_neither_or_both_name_and_id_is_an_invalid_request(
        srv: ThreadServer) -> None:
    topic = _name("del-bad")
    with srv.client("admin") as admin:
        tid = create_topic(admin, topic)
        r = admin.call(ApiKey.DELETE_TOPICS, 6, timeout=5_000, topics=[
            {"name": None, "topic_id": uuid.UUID(int=0)}, {"name": topic, "topic_id": tid}])
        assert [(int(x.error_code), x.error_message) for x in r.responses] == [
            (E.invalid_request, "Neither topic name nor id were specified."),
            (E.invalid_request, "You may not specify both topic name and topic id.")]
        assert topic in _topics(admin)


def test_duplicate_topics_are_answered_once_and_left_alone(srv: ThreadServer) -> None:
    """Kafka's controller (``ControllerApis.deleteTopics`` / ``createPartitions``): a name or
    an id given twice is answered once, INVALID_REQUEST "Duplicate topic name." / "Duplicate
    topic id.", and that topic is neither deleted nor grown; the other topics are served."""
    prefix = _name("dup")
    twice, once, grown = f"{prefix}-twice", f"{prefix}-once", f"{prefix}-grown"
    with srv.client("admin") as admin:
        tid = create_topic(admin, twice)
        create_topic(admin, once)
        create_topic(admin, grown)
        r = admin.call(ApiKey.DELETE_TOPICS, 6, timeout=5_000, topics=[
            {"name": twice, "topic_id": None}, {"name": once, "topic_id": None},
            {"name": twice, "topic_id": None}])
        assert sorted((str(x.name), int(x.error_code), x.error_message) for x in r.responses) == [
            (once, E.none, None), (twice, E.invalid_request, "Duplicate topic name.")]
        r = admin.call(ApiKey.DELETE_TOPICS, 6, timeout=5_000, topics=[
            {"name": None, "topic_id": tid}, {"name": None, "topic_id": tid}])
        assert [(x.name, x.topic_id, int(x.error_code), x.error_message) for x in r.responses] == [
            (None, tid, E.invalid_request, "Duplicate topic id.")]
        r = admin.call(ApiKey.DELETE_TOPICS, 3, timeout=5_000, topic_names=[twice, twice])
        assert [(str(x.name), int(x.error_code)) for x in r.responses] == [
            (twice, E.invalid_request)]
        assert twice in _topics(admin) and once not in _topics(admin)
        r = admin.call(ApiKey.CREATE_PARTITIONS, 3, timeout_ms=5_000, validate_only=False,
                       topics=[{"name": grown, "count": 4, "assignments": None},
                               {"name": twice, "count": 3, "assignments": None},
                               {"name": grown, "count": 5, "assignments": None}])
        assert sorted((str(x.name), int(x.error_code), x.error_message) for x in r.results) == [
            (grown, E.invalid_request, "Duplicate topic name."), (twice, E.none, None)]
        counts = {str(t.name): len(t.partitions)
                  for t in admin.call(ApiKey.METADATA, 12, topics=None).topics}
        assert counts[grown] == 2 and counts[twice] == 3


def test_delete_topics_with_a_real_admin_client(srv: ThreadServer) -> None:
    """confluent-kafka's AdminClient sees the same errors (librdkafka's DeleteTopics)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    prefix = _name("del-ck")
    kept, gone = f"{prefix}-kept", f"{prefix}-gone"

    def error_of(who: str, name: str) -> int:
        client = AdminClient(srv.client_config(who))  # kept alive until the result is in
        futures = client.delete_topics([name], operation_timeout=TIMEOUT_S,
                                       request_timeout=TIMEOUT_S)
        try:
            futures[name].result(TIMEOUT_S)
        except KafkaException as e:
            code: int = e.args[0].code()
            return code
        return KafkaError.NO_ERROR

    with srv.client("admin") as admin:
        create_topic(admin, kept)
        grant(admin, RT.TOPIC, prefix, "User:alice", Op.DESCRIBE, pattern=PatternType.PREFIXED)
        assert error_of("bob", gone) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert error_of("alice", gone) == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert error_of("alice", kept) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        grant(admin, RT.TOPIC, kept, "User:alice", Op.DELETE)
        assert error_of("alice", kept) == KafkaError.NO_ERROR
        assert kept not in _topics(admin)


def _epochs(c: KafkaClient, replica_id: int, *topics: str) -> dict[str, tuple[int, int]]:
    """OffsetForLeaderEpoch v4 for partition 0 of each topic: topic -> (error, end offset)."""
    r = c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=replica_id, topics=[
        {"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                    "leader_epoch": 0}]} for t in topics])
    return {str(t.topic): (int(t.partitions[0].error_code), int(t.partitions[0].end_offset))
            for t in r.topics}


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(srv: ThreadServer) -> None:
    topic, missing = _name("ole"), _name("ole-missing")
    with srv.client("admin") as admin, srv.client("bob") as bob, \
            srv.client("alice") as alice:
        create_topic(admin, topic, 1)
        refused = {topic: (E.topic_authorization_failed, -1),
                   missing: (E.topic_authorization_failed, -1)}
        for replica_id in (-1, 1):  # a consumer, a follower
            assert _epochs(bob, replica_id, topic, missing) == refused
            assert _epochs(alice, replica_id, topic, missing) == refused
        # DESCRIBE on the topic (a consumer's ACL): answered, whatever the replica id
        grant(admin, RT.TOPIC, topic, "User:bob", Op.DESCRIBE)
        for replica_id in (-1, 1):
            assert _epochs(bob, replica_id, topic, missing) == {
                topic: (E.none, 0), missing: (E.topic_authorization_failed, -1)}
        # CLUSTER_ACTION on the CLUSTER (a follower broker's ACL): every topic, a missing one
        # named unknown
        grant(admin, RT.CLUSTER, CLUSTER, "User:alice", Op.CLUSTER_ACTION)
        for replica_id in (1, -1):
            assert _epochs(alice, replica_id, topic, missing) == {
                topic: (E.none, 0), missing: (E.unknown_topic_or_partition, -1)}


def test_the_regex_topic_filter_is_built_once_per_client_and_follows_the_authorizer() -> None:
    """The topic filter every ConsumerGroupHeartbeat carries (what a regex may resolve to) is
    one per principal and host, not one per request; a replaced authorizer gets new ones."""
    from types import SimpleNamespace

    from groupcoord.server.apis import RequestContext
    from groupcoord.server.apis.groups import GroupApis

    class Only:
        def __init__(self, allowed: set[tuple[str, str]]) -> None:
            self.allowed = allowed

        def authorize(self, principal: str, host: str, op: Op, rtype: RT, name: str) -> bool:
            assert (op, rtype) == (Op.DESCRIBE, RT.TOPIC)
            return (principal, name) in self.allowed

    apis: Any = SimpleNamespace(authorizer=Only({("User:alice", "a"), ("User:bob", "b")}),
                                _topic_filters={})

    def ctx(principal: str) -> RequestContext:
        return RequestContext(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, "c", "127.0.0.1", principal)

    alice = GroupApis._describable_topics(apis, ctx("User:alice"))
    assert GroupApis._describable_topics(apis, ctx("User:alice")) is alice
    assert list(alice(["a", "b", "c"])) == ["a"]
    bob = GroupApis._describable_topics(apis, ctx("User:bob"))
    assert list(bob(["a", "b", "c"])) == ["b"]
    apis.authorizer = Only({("User:alice", "c")})
    again = GroupApis._describable_topics(apis, ctx("User:alice"))
    assert again is not alice and list(again(["a", "b", "c"])) == ["c"]
