"""Authorization Kafka does beyond the per-API checks of ``test_server_acls.py``, over the wire:

- a regex subscription (ConsumerGroupHeartbeat ``SubscribedTopicRegex``) resolves only to the
  matching topics the member's principal may DESCRIBE (Kafka 4's ``GroupMetadataManager``);
  nothing describable is an empty assignment, not an error;
- CreateTopics answers a new topic's configs, partition count and replication factor (v5+) only
  to a principal with DESCRIBE_CONFIGS on it; another sees the topic created, its id, and
  ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED (Kafka's ``ControllerApis`` /
  ``ReplicationControlManager.createTopic``);
- DeleteTopics by id names the topic only to a principal that may describe it.
"""

from __future__ import annotations

import time
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


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("acl-gaps") / "data") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _regex_heartbeat(c: KafkaClient, group: str, member: str, epoch: int,
                     regex: str | None) -> Any:
    return c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                  member_epoch=epoch, rebalance_timeout=30_000, subscribed_topic_names=None,
                  subscribed_topic_regex=regex, server_assignor=None,
                  topic_partitions=() if epoch == 0 else None)


def _assigned(r: Any) -> dict[uuid.UUID, list[int]]:
    assert r.error_code == E.none, r
    if r.assignment is None:
        return {}
    return {tp.topic_id: sorted(tp.partitions) for tp in r.assignment.topic_partitions}


def _settle(c: KafkaClient, group: str, member: str, regex: str) -> dict[uuid.UUID, list[int]]:
    """Heartbeat until the assignment stops changing. The regex is resolved off the heartbeat
    path (as Kafka does): the join's answer covers none of its topics, a later heartbeat's
    does; the heartbeats are spaced so that the resolution has run in between."""
    r = _regex_heartbeat(c, group, member, 0, regex)
    got = _assigned(r)
    epoch = r.member_epoch
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.2)
        r = _regex_heartbeat(c, group, member, epoch, None)
        now = _assigned(r) if r.assignment is not None else got
        if now == got and r.member_epoch == epoch:
            return got
        got, epoch = now, r.member_epoch
    raise AssertionError(f"no stable assignment: {got}")


def test_a_regex_subscription_gets_only_topics_its_principal_may_describe(
        srv: ThreadServer) -> None:
    prefix = _name("rx")
    seen, hidden = f"{prefix}-seen", f"{prefix}-hidden"
    group, nothing = _name("g"), _name("g")
    with srv.client("admin") as admin, srv.client("alice") as alice, \
            srv.client("bob") as bob:
        seen_id = create_topic(admin, seen, 2)
        create_topic(admin, hidden, 3)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, seen, "User:alice", Op.DESCRIBE)
        got = _settle(alice, group, str(uuid.uuid4()), f"{prefix}-.*")
        assert got == {seen_id: [0, 1]}  # not one partition of the topic it may not describe
        d = admin.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                       include_authorized_operations=False)
        member = d.groups[0].members[0]
        assert [tp.topic_name for tp in member.target_assignment.topic_partitions] == [seen]

        # bob may join the group but describe neither topic: no error, nothing assigned
        grant(admin, RT.GROUP, nothing, "User:bob", Op.READ)
        r = _regex_heartbeat(bob, nothing, str(uuid.uuid4()), 0, f"{prefix}-.*")
        assert r.error_code == E.none and r.member_epoch == 1 and _assigned(r) == {}


def test_create_topics_answers_configs_only_with_describe_configs(srv: ThreadServer) -> None:
    prefix = _name("ct")
    with srv.client("admin") as admin, srv.client("carol") as carol, \
            srv.client("alice") as alice:
        grant(admin, RT.TOPIC, prefix, "User:carol", Op.CREATE, pattern=PatternType.PREFIXED)
        grant(admin, RT.TOPIC, f"{prefix}-described", "User:alice", Op.CREATE)
        grant(admin, RT.TOPIC, f"{prefix}-described", "User:alice", Op.DESCRIBE_CONFIGS)
        topic = {"num_partitions": 3, "replication_factor": -1,
                 "configs": [{"name": "retention.ms", "value": "1234"}]}

        r = carol.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": f"{prefix}-blind", **topic}])
        t = r.topics[0]
        assert (t.error_code, t.topic_config_error_code) == (E.none,
                                                             E.topic_authorization_failed)
        assert t.topic_id is not None and t.topic_id.int != 0
        assert (t.num_partitions, t.replication_factor, tuple(t.configs or ())) == (-1, -1, ())
        md = admin.call(ApiKey.METADATA, 12, topics=[{"name": f"{prefix}-blind",
                                                       "topic_id": None}],
                        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        assert md.topics[0].error_code == E.none and len(md.topics[0].partitions) == 3

        r = alice.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": f"{prefix}-described", **topic}])
        t = r.topics[0]
        assert (t.error_code, t.topic_config_error_code) == (E.none, E.none)
        assert (t.num_partitions, t.replication_factor) == (3, 1)
        configs = {c.name: (c.value, int(c.config_source)) for c in t.configs}
        assert [c.name for c in t.configs] == sorted(configs)
        assert configs["retention.ms"] == ("1234", 1)  # DYNAMIC_TOPIC_CONFIG
        assert configs["cleanup.policy"] == ("delete", 5)  # DEFAULT_CONFIG
        # what DescribeConfigs says of the topic is what CreateTopics answered
        d = admin.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[{
            "resource_type": 2, "resource_name": f"{prefix}-described",
            "configuration_keys": None}], include_synonyms=False, include_documentation=False)
        assert {c.name: c.value for c in d.results[0].configs} == \
            {k: v for k, (v, _s) in configs.items()}

        # validate_only answers the same way, and creates nothing
        r = carol.call(ApiKey.CREATE_TOPICS, 7, validate_only=True,
                       topics=[{"name": f"{prefix}-dry", **topic}])
        assert (r.topics[0].error_code, r.topics[0].topic_config_error_code) == (
            E.none, E.topic_authorization_failed)


def test_delete_topics_by_id_names_the_topic_only_to_who_may_describe_it(
        srv: ThreadServer) -> None:
    topic = _name("del")
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        tid = create_topic(admin, topic)
        grant(admin, RT.TOPIC, topic, "User:alice", Op.DESCRIBE)
        r = bob.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": None, "topic_id": tid}],
                     timeout=5_000)
        res = r.responses[0]
        assert res.error_code == E.topic_authorization_failed and res.name is None
        r = alice.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": None, "topic_id": tid}],
                       timeout=5_000)
        res = r.responses[0]
        assert res.error_code == E.topic_authorization_failed and res.name == topic
        r = admin.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": None, "topic_id": tid}],
                       timeout=5_000)
        assert (r.responses[0].error_code, r.responses[0].name) == (E.none, topic)


def test_a_followers_fetch_needs_cluster_action(srv: ThreadServer) -> None:
    topic = _name("fol")
    with srv.client("admin") as admin, srv.client("bob") as bob:
        create_topic(admin, topic, 1)
        grant(admin, RT.TOPIC, topic, "User:bob", Op.READ)

        def fetch(c: KafkaClient, replica_id: int) -> list[int]:
            r = c.call(ApiKey.FETCH, 12, replica_id=replica_id, max_wait=0, min_bytes=1,
                       topics=[{"topic": topic, "partitions": [
                           {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}])
            return [int(p.error_code) for t in r.responses for p in t.partitions]

        assert fetch(bob, -1) == [E.none]  # a consumer with READ
        assert fetch(bob, 1) == [E.topic_authorization_failed]  # a follower without CLUSTER_ACTION
        grant(admin, RT.CLUSTER, "kafka-cluster", "User:bob", Op.CLUSTER_ACTION)
        assert fetch(bob, 1) == [E.none]
