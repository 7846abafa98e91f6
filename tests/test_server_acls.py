"""Authorization over the wire: every API checks its ACL, and a refused request changes nothing.

Principals come from ``acl_support`` (client id -> principal until SASL exists; the server runs
with ``super.users=User:admin`` and ``allow.everyone.if.no.acl.found=false``). ACLs are made
with CreateAcls as the admin, as a Kafka admin client would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import AclOperation, PatternType, PermissionType, ResourceType

from .acl_support import ThreadServer, thread_server
from .test_server_apis import _batch

E = ErrorCode
Op = AclOperation
RT = ResourceType
ALLOW = PermissionType.ALLOW
DENY = PermissionType.DENY


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("acl-server") / "data") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def grant(c: KafkaClient, rtype: RT, name: str, principal: str, op: Op,
          perm: PermissionType = ALLOW, pattern: PatternType = PatternType.LITERAL) -> None:
    r = c.call(ApiKey.CREATE_ACLS, 3, creations=[{
        "resource_type": int(rtype), "resource_name": name, "resource_pattern_type": int(pattern),
        "principal": principal, "host": "*", "operation": int(op), "permission_type": int(perm)}])
    assert [x.error_code for x in r.results] == [E.none], r


def create_topic(c: KafkaClient, name: str, partitions: int = 2) -> uuid.UUID:
    r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                "replication_factor": -1}])
    assert r.topics[0].error_code == E.none, r
    tid: uuid.UUID = r.topics[0].topic_id
    return tid


def committed(c: KafkaClient, group: str, topic: str, partitions: list[int]) -> list[int]:
    r = c.call(ApiKey.OFFSET_FETCH, 7, group_id=group,
               topics=[{"name": topic, "partition_indexes": partitions}])
    assert r.error_code == E.none, r
    return [p.committed_offset for t in r.topics for p in t.partitions]


def join(c: KafkaClient, group: str) -> Any:
    return c.call(ApiKey.JOIN_GROUP, 9, group_id=group, session_timeout=10_000,
                  rebalance_timeout=10_000, member_id="", protocol_type="consumer",
                  protocols=[{"name": "range", "metadata": b""}])


def cg_heartbeat(c: KafkaClient, group: str, topics: list[str]) -> Any:
    return c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="m1",
                  member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=topics,
                  server_assignor=None, topic_partitions=())


def listed_groups(c: KafkaClient) -> set[str]:
    return {g.group_id for g in c.call(ApiKey.LIST_GROUPS, 5).groups}


# ------------------------------------------------------------------ the group APIs


def test_classic_join_without_read_on_the_group_is_refused_and_changes_nothing(
        srv: ThreadServer) -> None:
    group, other = _name("g"), _name("g")
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        grant(admin, RT.GROUP, other, "User:alice", Op.READ)
        r = join(bob, group)
        assert r.error_code == E.group_authorization_failed and r.member_id == ""
        assert group not in listed_groups(admin)
        d = admin.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group])
        assert d.groups[0].group_state == "Dead"
        # READ on another group is no help; with READ on the group the join goes on.
        assert join(alice, group).error_code == E.group_authorization_failed
        assert join(alice, other).error_code == E.member_id_required
        for key, version, fields in [
                (ApiKey.SYNC_GROUP, 5, {"generation_id": 1, "member_id": "m", "assignments": ()}),
                (ApiKey.HEARTBEAT, 4, {"generation_id": 1, "member_id": "m"}),
                (ApiKey.LEAVE_GROUP, 5, {"members": [{"member_id": "m"}]}),
                (ApiKey.LEAVE_GROUP, 1, {"member_id": "m"})]:
            got = bob.call(key, version, wanted_min=version, group_id=group, **fields)
            assert got.error_code == E.group_authorization_failed, (key, got)


def test_consumer_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(
        srv: ThreadServer) -> None:
    group, topic, secret = _name("cg"), _name("t"), _name("secret")
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        create_topic(admin, topic)
        create_topic(admin, secret)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, topic, "User:alice", Op.DESCRIBE)
        r = cg_heartbeat(bob, group, [topic])
        assert r.error_code == E.group_authorization_failed and r.member_epoch == 0
        r = cg_heartbeat(alice, group, [topic, secret])
        assert r.error_code == E.topic_authorization_failed and secret in (r.error_message or "")
        assert group not in listed_groups(admin)  # neither made the group
        d = admin.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                       include_authorized_operations=False)
        assert d.groups[0].error_code == E.group_id_not_found
        r = cg_heartbeat(alice, group, [topic])
        assert r.error_code == E.none and r.member_epoch >= 1
        # Describing it: bob may not; alice may (DESCRIBE implied by READ), with her operations.
        d = bob.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                     include_authorized_operations=False)
        assert d.groups[0].error_code == E.group_authorization_failed and not d.groups[0].members
        d = alice.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                       include_authorized_operations=True)
        assert d.groups[0].error_code == E.none and len(d.groups[0].members) == 1
        assert d.groups[0].authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
        # A describer who may not see the group's topic gets TOPIC_AUTHORIZATION_FAILED.
        grant(admin, RT.GROUP, group, "User:carol", Op.DESCRIBE)
        with srv.client("carol") as carol:
            d = carol.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                           include_authorized_operations=False)
            assert d.groups[0].error_code == E.topic_authorization_failed
            assert not d.groups[0].members
        assert group in listed_groups(admin) and group in listed_groups(alice)
        assert group not in listed_groups(bob)


def test_offset_commit_needs_read_on_group_and_topic_and_refusal_writes_nothing(
        srv: ThreadServer) -> None:
    group, t1, t2 = _name("oc"), _name("t"), _name("t")
    with srv.client("admin") as admin, srv.client("bob") as bob, srv.client("alice") as alice:
        create_topic(admin, t1)
        create_topic(admin, t2)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, t1, "User:alice", Op.READ)

        def commit(c: KafkaClient) -> dict[str, list[int]]:
            r = c.call(ApiKey.OFFSET_COMMIT, 9, group_id=group, generation_id_or_member_epoch=-1,
                       member_id="", group_instance_id=None, topics=[
                           {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                       "committed_metadata": ""}]}
                           for t in (t1, t2)])
            return {t.name: [p.error_code for p in t.partitions] for t in r.topics}

        assert commit(bob) == {t1: [E.group_authorization_failed],
                               t2: [E.group_authorization_failed]}
        assert committed(admin, group, t1, [0]) == [-1]
        assert group not in listed_groups(admin)
        assert commit(alice) == {t1: [E.none], t2: [E.topic_authorization_failed]}
        assert committed(admin, group, t1, [0]) == [5]
        assert committed(admin, group, t2, [0]) == [-1]
        # OffsetFetch: DESCRIBE on the group and the topic; all topics: t2 left out for alice.
        r = bob.call(ApiKey.OFFSET_FETCH, 7, group_id=group, topics=None)
        assert r.error_code == E.group_authorization_failed and not r.topics
        r = alice.call(ApiKey.OFFSET_FETCH, 7, group_id=group,
                       topics=[{"name": t, "partition_indexes": [0]} for t in (t1, t2)])
        assert {t.name: [p.error_code for p in t.partitions] for t in r.topics} == {
            t1: [E.none], t2: [E.topic_authorization_failed]}
        r = alice.call(ApiKey.OFFSET_FETCH, 9, groups=[{"group_id": group, "topics": None}])
        assert [t.name for t in r.groups[0].topics] == [t1]
        # OffsetDelete: DELETE on the group; DeleteGroups likewise. Nothing is removed.
        r = alice.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
            {"name": t1, "partitions": [{"partition_index": 0}]}])
        assert r.error_code == E.group_authorization_failed
        r = alice.call(ApiKey.DELETE_GROUPS, 2, groups_names=[group])
        assert r.results[0].error_code == E.group_authorization_failed
        assert committed(admin, group, t1, [0]) == [5]
        grant(admin, RT.GROUP, group, "User:alice", Op.DELETE)
        r = alice.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
            {"name": t, "partitions": [{"partition_index": 0}]} for t in (t1, t2)])
        assert r.error_code == E.none
        assert {t.name: [p.error_code for p in t.partitions] for t in r.topics} == {
            t1: [E.none], t2: [E.topic_authorization_failed]}
        assert committed(admin, group, t1, [0]) == [-1]


def test_group_configs_find_coordinator_and_connect_groups(srv: ThreadServer) -> None:
    group = _name("cfg")
    with srv.client("admin") as admin, srv.client("bob") as bob:
        grant(admin, RT.GROUP, group, "User:bob", Op.DESCRIBE_CONFIGS)
        alter = {"resources": [{"resource_type": 32, "resource_name": group, "configs": [
            {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "20000"}]}],
            "validate_only": False}
        r = bob.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter)
        assert r.responses[0].error_code == E.group_authorization_failed
        r = bob.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
            {"resource_type": 32, "resource_name": group, "configuration_keys": None}],
            include_synonyms=False, include_documentation=False)
        assert r.results[0].error_code == E.none
        values = {c.name: c.value for c in r.results[0].configs}
        assert values["group.consumer.session.timeout.ms"] != "20000"  # the refused alter left it
        r = bob.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
            {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
            include_synonyms=False, include_documentation=False)
        assert r.results[0].error_code == E.cluster_authorization_failed
        assert admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter).responses[0].error_code == 0
        # FindCoordinator needs DESCRIBE on the group (DESCRIBE_CONFIGS does not imply it).
        r = bob.call(ApiKey.FIND_COORDINATOR, 6, key_type=0, coordinator_keys=[group])
        assert r.coordinators[0].error_code == E.group_authorization_failed
        assert admin.call(ApiKey.FIND_COORDINATOR, 6, key_type=0,
                          coordinator_keys=[group]).coordinators[0].error_code == E.none
        # The connect group APIs: READ to be a worker, ALTER to change its connectors.
        r = bob.connect_group_heartbeat(group, "w1", 0, rebalance_timeout_ms=30_000,
                                        url="http://w1")
        assert r.error_code == E.group_authorization_failed
        r = bob.connect_group_config(group, [{"op": 0, "connector": "c", "task_count": 1}])
        assert r.error_code == E.group_authorization_failed
        r = bob.connect_group_describe([group])
        assert r.groups[0].error_code == E.group_authorization_failed
        r = admin.connect_group_describe([group])
        assert r.groups[0].error_code != E.group_authorization_failed
        for key in (ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT):
            r = bob.call(key, 0, group_id=group, member_id="m", member_epoch=1)
            assert r.error_code == E.group_authorization_failed
        # InstallAssignment needs READ on the group too, on both group types (KIP-848 and the
        # Connect draft: "Required ACL: Read Group").
        for key, extra in ((ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, {}),
                           (ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
                            {"scheduled_rebalance_delay_ms": 0})):
            r = bob.call(key, 0, group_id=group, member_id="m", member_epoch=1, group_epoch=1,
                         error=0, members=[], **extra)
            assert r.error_code == E.group_authorization_failed, key
            r = admin.call(key, 0, group_id=group, member_id="m", member_epoch=1, group_epoch=1,
                           error=0, members=[], **extra)  # allowed: the group's own answer
            assert r.error_code not in (E.none, E.group_authorization_failed), key


# ------------------------------------------------------------------ topics and data


def test_metadata_hides_topics_the_principal_may_not_describe(srv: ThreadServer) -> None:
    seen, hidden = _name("seen"), _name("hidden")
    with srv.client("admin") as admin, srv.client("alice") as alice:
        seen_id = create_topic(admin, seen)
        hidden_id = create_topic(admin, hidden)
        grant(admin, RT.TOPIC, seen, "User:alice", Op.READ)  # READ implies DESCRIBE
        names = {t.name for t in alice.call(ApiKey.METADATA, 12, topics=None).topics}
        assert seen in names and hidden not in names
        assert {seen, hidden} <= {t.name for t in admin.call(ApiKey.METADATA, 12, topics=None).topics}
        r = alice.call(ApiKey.METADATA, 12, topics=[{"name": hidden, "topic_id": None},
                                                    {"name": seen, "topic_id": None}],
                       include_topic_authorized_operations=True)
        assert [(t.name, t.error_code) for t in r.topics] == [
            (hidden, E.topic_authorization_failed), (seen, E.none)]
        assert not r.topics[0].partitions and len(r.topics[1].partitions) == 2
        assert r.topics[1].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
        r = alice.call(ApiKey.METADATA, 12, topics=[{"name": None, "topic_id": hidden_id},
                                                    {"name": None, "topic_id": seen_id}])
        assert [(t.name, t.error_code) for t in r.topics] == [
            (None, E.topic_authorization_failed), (seen, E.none)]
        # The cached answer of one principal is not served to another.
        assert hidden in {t.name for t in admin.call(ApiKey.METADATA, 12, topics=None).topics}
        assert hidden not in {t.name for t in alice.call(ApiKey.METADATA, 12, topics=None).topics}


def test_topic_admin_and_data_apis_refuse_without_their_acl(srv: ThreadServer) -> None:
    topic, new = _name("t"), _name("new")
    with srv.client("admin") as admin, srv.client("bob") as bob:
        tid = create_topic(admin, topic)
        r = bob.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": new, "num_partitions": 1,
                                                      "replication_factor": -1}])
        assert r.topics[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": topic, "topic_id": None}])
        assert r.responses[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.CREATE_PARTITIONS, 3, topics=[{"name": topic, "count": 5,
                                                          "assignments": None}],
                     timeout=10_000, validate_only=False)
        assert r.results[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.PRODUCE, 9, acks=-1, timeout=10_000, transactional_id=None,
                     topic_data=[{"name": topic, "partition_data": [
                         {"index": 0, "records": _batch([b"x"])}]}])
        assert r.responses[0].partition_responses[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}])
        assert r.topics[0].partitions[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.FETCH, 16, max_wait=0, min_bytes=1, topics=[
            {"topic_id": tid, "partitions": [{"partition": 0, "fetch_offset": 0,
                                              "partition_max_bytes": 1 << 20}]}])
        assert r.responses[0].partitions[0].error_code == E.topic_authorization_failed
        r = bob.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
            {"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
            include_synonyms=False, include_documentation=False)
        assert r.results[0].error_code == E.topic_authorization_failed
        assert bob.init_producer_id().error_code == E.cluster_authorization_failed
        # Nothing changed: the topic is there with 2 partitions and no data; no new topic.
        md = admin.call(ApiKey.METADATA, 12, topics=[{"name": topic, "topic_id": None},
                                                     {"name": new, "topic_id": None}])
        assert len(md.topics[0].partitions) == 2
        assert md.topics[1].error_code == E.unknown_topic_or_partition
        r = admin.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}])
        assert r.topics[0].partitions[0].offset == 0
        # With the ACLs, the same requests go through (CREATE on a prefix, WRITE implies
        # IdempotentWrite through KIP-679's "WRITE on some topic").
        grant(admin, RT.TOPIC, "new-", "User:bob", Op.CREATE, pattern=PatternType.PREFIXED)
        grant(admin, RT.TOPIC, topic, "User:bob", Op.WRITE)
        r = bob.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": new, "num_partitions": 1,
                                                      "replication_factor": -1}])
        assert r.topics[0].error_code == E.none
        assert bob.init_producer_id().error_code == E.none
        r = bob.call(ApiKey.PRODUCE, 9, acks=-1, timeout=10_000, transactional_id=None,
                     topic_data=[{"name": topic, "partition_data": [
                         {"index": 0, "records": _batch([b"x"])}]}])
        assert r.responses[0].partition_responses[0].error_code == E.none
        r = bob.call(ApiKey.FETCH, 16, max_wait=0, min_bytes=1, topics=[
            {"topic_id": tid, "partitions": [{"partition": 0, "fetch_offset": 0,
                                              "partition_max_bytes": 1 << 20}]}])
        assert r.responses[0].partitions[0].error_code == E.topic_authorization_failed  # no READ


def test_deny_beats_allow_and_super_users_bypass(srv: ThreadServer) -> None:
    group = _name("team")
    with srv.client("admin") as admin, srv.client("alice") as alice:
        grant(admin, RT.GROUP, "team-", "User:alice", Op.ALL, pattern=PatternType.PREFIXED)
        assert join(alice, group).error_code == E.member_id_required
        grant(admin, RT.GROUP, group, "User:*", Op.READ, perm=DENY)
        assert join(alice, group).error_code == E.group_authorization_failed
        assert join(admin, group).error_code == E.member_id_required  # super user
        # DENY READ does not deny DESCRIBE (ALL on the prefix still allows it).
        d = alice.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group])
        assert d.groups[0].error_code == E.none


def test_control_plane_needs_cluster_action(srv: ThreadServer) -> None:
    with srv.client("admin") as admin, srv.client("bob") as bob:
        r = bob.call(ApiKey.GROUPCOORD_CONTROL, 0, command="faults", arguments="{}")
        assert r.error_code == E.cluster_authorization_failed
        r = admin.call(ApiKey.GROUPCOORD_CONTROL, 0, command="faults", arguments="{}")
        assert r.error_code != E.cluster_authorization_failed
        grant(admin, RT.CLUSTER, "kafka-cluster", "User:bob", Op.CLUSTER_ACTION)
        r = bob.call(ApiKey.GROUPCOORD_CONTROL, 0, command="faults", arguments="{}")
        assert r.error_code != E.cluster_authorization_failed


# ------------------------------------------------------------------ the ACL APIs


def test_acl_apis_need_alter_on_the_cluster_and_validate(srv: ThreadServer) -> None:
    group = _name("acl")
    creation = {"resource_type": int(RT.GROUP), "resource_name": group,
                "resource_pattern_type": int(PatternType.LITERAL), "principal": "User:carol",
                "host": "*", "operation": int(Op.READ), "permission_type": int(ALLOW)}
    with srv.client("admin") as admin, srv.client("bob") as bob:
        r = bob.call(ApiKey.CREATE_ACLS, 3, creations=[creation])
        assert r.results[0].error_code == E.cluster_authorization_failed
        r = bob.call(ApiKey.DESCRIBE_ACLS, 3, resource_type_filter=1, resource_name_filter=None,
                     pattern_type_filter=1, principal_filter=None, host_filter=None,
                     operation=1, permission_type=1)
        assert r.error_code == E.cluster_authorization_failed and not r.resources
        r = bob.call(ApiKey.DELETE_ACLS, 3, filters=[{
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}])
        assert r.filter_results[0].error_code == E.cluster_authorization_failed

        bad = [dict(creation, principal="carol"), dict(creation, resource_pattern_type=2),
               dict(creation, operation=99), dict(creation, resource_type=4)]
        r = admin.call(ApiKey.CREATE_ACLS, 1, creations=[creation, *bad])
        assert [x.error_code for x in r.results] == [E.none] + [E.invalid_request] * 4
        assert "Could not parse principal" in (r.results[1].error_message or "")
        r = admin.call(ApiKey.DESCRIBE_ACLS, 2, resource_type_filter=int(RT.GROUP),
                       resource_name_filter=group, pattern_type_filter=int(PatternType.MATCH),
                       principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert r.error_code == E.none
        assert [(x.resource_name, [(a.principal, a.operation) for a in x.acls])
                for x in r.resources] == [(group, [("User:carol", Op.READ)])]
        r = admin.call(ApiKey.DELETE_ACLS, 3, filters=[
            {"resource_type_filter": int(RT.GROUP), "resource_name_filter": group,
             "pattern_type_filter": int(PatternType.LITERAL), "principal_filter": "User:carol",
             "host_filter": None, "operation": 1, "permission_type": 1},
            {"resource_type_filter": 0, "resource_name_filter": None, "pattern_type_filter": 1,
             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}])
        assert [f.error_code for f in r.filter_results] == [E.none, E.invalid_request]
        assert [(m.resource_name, m.principal) for m in r.filter_results[0].matching_acls] == [
            (group, "User:carol")]


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    group = _name("keep")
    with thread_server(tmp_path / "data") as s, s.client("admin") as admin:
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.GROUP, group, "User:bob", Op.ALL, perm=DENY)
    assert (tmp_path / "data" / "acls.json").exists()
    with thread_server(tmp_path / "data") as s, s.client("alice") as alice, \
            s.client("bob") as bob:
        assert join(alice, group).error_code == E.member_id_required
        assert join(bob, group).error_code == E.group_authorization_failed
    # --storage memory keeps them in memory only: it reads the data directory's ACLs once
    # (as the SCRAM credentials) and writes nothing.
    with thread_server(tmp_path / "mem", storage="memory") as s, s.client("admin") as admin:
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
    assert not (tmp_path / "mem" / "acls.json").exists()
    before = (tmp_path / "data" / "acls.json").read_bytes()
    with thread_server(tmp_path / "data", storage="memory") as s, s.client("bob") as bob, \
            s.client("admin") as admin:
        assert join(bob, group).error_code == E.group_authorization_failed
        grant(admin, RT.GROUP, "other", "User:bob", Op.READ)
    assert (tmp_path / "data" / "acls.json").read_bytes() == before


def test_loopback_plaintext_default_allows_and_non_loopback_refuses(tmp_path: Path) -> None:
    """No ACLs and no allow.everyone property: ANONYMOUS on 127.0.0.1 may do anything; the
    same server reachable from elsewhere (a non-loopback listener) refuses."""
    with thread_server(tmp_path / "a", properties={}, storage="memory") as s, \
            KafkaClient(s.bootstrap) as c:
        assert join(c, _name("g")).error_code == E.member_id_required
    with thread_server(tmp_path / "b", properties={}, storage="memory") as s, \
            KafkaClient(s.bootstrap) as c:
        assert s.server.apis is not None
        s.server.apis.authorizer.allow_everyone_if_no_acl = False  # as a 0.0.0.0 server has it
        assert join(c, _name("g")).error_code == E.group_authorization_failed


def test_scram_credential_apis_need_the_cluster(srv: ThreadServer) -> None:
    """DescribeUserScramCredentials needs DESCRIBE, AlterUserScramCredentials ALTER on the
    CLUSTER (Kafka's KafkaApis); a refused alteration changes nothing."""
    upsert = {"name": "mallory", "mechanism": 1, "iterations": 4096, "salt": b"s" * 16,
              "salted_password": b"p" * 32}
    with srv.client("admin") as admin, srv.client("bob") as bob:
        r = bob.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
        assert r.error_code == E.cluster_authorization_failed and not r.results
        r = bob.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[], upsertions=[upsert])
        assert [(x.user, x.error_code) for x in r.results] == [
            ("mallory", E.cluster_authorization_failed)]
        r = admin.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)
        assert r.error_code == 0 and "mallory" not in [x.user for x in r.results]
        grant(admin, RT.CLUSTER, "kafka-cluster", "User:bob", Op.ALTER)
        r = bob.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[], upsertions=[upsert])
        assert [(x.user, x.error_code) for x in r.results] == [("mallory", 0)]
        r = bob.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=None)  # ALTER implies DESCRIBE
        assert r.error_code == 0 and "mallory" in [x.user for x in r.results]


def test_an_acl_change_decides_the_next_heartbeat_on_the_same_connection(
        srv: ThreadServer) -> None:
    """Authorization decisions are remembered (the same question on every heartbeat), for one
    generation of the ACLs: a READ removed refuses the member's next heartbeat, granted again
    it is accepted again."""
    group, topic = _name("cg"), _name("t")
    with srv.client("admin") as admin, srv.client("alice") as alice:
        create_topic(admin, topic)
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        grant(admin, RT.TOPIC, topic, "User:alice", Op.DESCRIBE)
        r = cg_heartbeat(alice, group, [topic])
        assert r.error_code == E.none, r

        def steady() -> Any:
            return alice.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group,
                              member_id=r.member_id, member_epoch=r.member_epoch)

        for _ in range(3):
            assert steady().error_code == E.none
        d = admin.call(ApiKey.DELETE_ACLS, 3, filters=[{
            "resource_type_filter": int(RT.GROUP), "resource_name_filter": group,
            "pattern_type_filter": int(PatternType.LITERAL), "principal_filter": "User:alice",
            "host_filter": None, "operation": int(Op.READ), "permission_type": int(ALLOW)}])
        assert len(d.filter_results[0].matching_acls) == 1
        assert steady().error_code == E.group_authorization_failed
        grant(admin, RT.GROUP, group, "User:alice", Op.READ)
        assert steady().error_code == E.none
        grant(admin, RT.GROUP, group, "User:alice", Op.READ, DENY)
        assert steady().error_code == E.group_authorization_failed
