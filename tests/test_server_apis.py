"""Broker and group APIs over the wire with our own client, at the versions clients use.

Metadata by name and by topic id (v12), auto-creation off by default; FindCoordinator v0-v6
(batched keys from v4); Produce / Fetch (v12 by name, v13+ by topic id) / ListOffsets; the
ConsumerGroupHeartbeat v0 join (coordinator-made member id); OffsetCommit / OffsetFetch
(v1-v9, batched groups, member id and epoch) / OffsetDelete / DeleteGroups; and group configs
through DescribeConfigs / IncrementalAlterConfigs on resource type GROUP (16, and upstream's 32).
"""

from __future__ import annotations

import struct
import threading
import time
import uuid
from typing import Any

import crc32c
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess

E = ErrorCode


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(c: KafkaClient, name: str, partitions: int) -> uuid.UUID:
    r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                "replication_factor": -1}])
    assert r.topics[0].error_code == E.none, r
    tid: uuid.UUID = r.topics[0].topic_id
    return tid


def _batch(values: list[bytes]) -> bytes:
    """A v2 record batch (uncompressed) of ``values``."""
    records = b""
    for i, v in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(v)) + v + _varint(0)
        records += _varint(len(body)) + body
    n = len(values)
    after_crc = struct.pack(">hiqqqhii", 0, n - 1, 1000, 1000, -1, -1, -1, n) + records
    body = struct.pack(">ibI", -1, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def test_metadata_by_name_by_id_and_no_auto_create(gc_server: ServerProcess) -> None:
    name = _name("md")
    with KafkaClient(gc_server.bootstrap) as c:
        tid = _create(c, name, 3)
        assert tid.int != 0
        for version in (0, 1, 4, 9, 12, 13):
            md = c.call(ApiKey.METADATA, version, topics=[{"name": name, "topic_id": None}],
                        allow_auto_topic_creation=True, include_topic_authorized_operations=False)
            [t] = md.topics
            assert t.error_code == E.none and t.name == name
            assert [p.partition_index for p in t.partitions] == [0, 1, 2]
            assert all(p.leader_id == 0 and tuple(p.replica_nodes) == (0,) for p in t.partitions)
            assert md.brokers[0].node_id == 0 and md.brokers[0].port == gc_server.port
            if version >= 10:
                assert t.topic_id == tid
        by_id = c.call(ApiKey.METADATA, 12, topics=[{"name": None, "topic_id": tid}])
        assert by_id.topics[0].name == name and by_id.topics[0].error_code == E.none
        unknown_id = c.call(ApiKey.METADATA, 12, topics=[{"name": None, "topic_id": uuid.uuid4()}])
        assert unknown_id.topics[0].error_code == E.unknown_topic_id
        missing = _name("missing")
        r = c.call(ApiKey.METADATA, 12, topics=[{"name": missing, "topic_id": None}],
                   allow_auto_topic_creation=True)
        assert r.topics[0].error_code == E.unknown_topic_or_partition
        everything = c.call(ApiKey.METADATA, 12, topics=None)
        names = {t.name for t in everything.topics}
        assert name in names and missing not in names


def test_find_coordinator_all_versions(gc_server: ServerProcess) -> None:
    with KafkaClient(gc_server.bootstrap) as c:
        for v in range(4):
            r = c.call(ApiKey.FIND_COORDINATOR, v, key="g", key_type=0)
            assert r.error_code == E.none and (r.node_id, r.port) == (0, gc_server.port)
        for v in (4, 5, 6):
            r = c.call(ApiKey.FIND_COORDINATOR, v, key_type=0, coordinator_keys=["a", "b"])
            assert [(x.key, x.node_id, x.error_code) for x in r.coordinators] == [
                ("a", 0, E.none), ("b", 0, E.none)]
        r = c.call(ApiKey.FIND_COORDINATOR, 6, key_type=1, coordinator_keys=["txn", "t2"])
        assert [(x.key, x.node_id, x.port, x.error_code) for x in r.coordinators] == [
            ("txn", 0, gc_server.port, E.none), ("t2", 0, gc_server.port, E.none)]
        r = c.call(ApiKey.FIND_COORDINATOR, 3, key="txn", key_type=1)
        assert r.error_code == E.none and (r.node_id, r.port) == (0, gc_server.port)
        r = c.call(ApiKey.FIND_COORDINATOR, 6, key_type=7, coordinator_keys=["k"])
        assert r.coordinators[0].error_code == E.invalid_request


def test_produce_fetch_list_offsets(gc_server: ServerProcess) -> None:
    name = _name("data")
    with KafkaClient(gc_server.bootstrap) as c:
        tid = _create(c, name, 2)
        batch = _batch([b"a", b"b", b"c"])
        for expected_base in (0, 3):
            r = c.call(ApiKey.PRODUCE, 9, acks=-1, timeout=5000, topic_data=[
                {"name": name, "partition_data": [{"index": 1, "records": batch}]}])
            p = r.responses[0].partition_responses[0]
            assert (p.error_code, p.base_offset) == (E.none, expected_base)
        bad = bytearray(batch)
        bad[-1] ^= 0xFF
        r = c.call(ApiKey.PRODUCE, 9, acks=1, timeout=5000, topic_data=[
            {"name": name, "partition_data": [{"index": 0, "records": bytes(bad)},
                                              {"index": 7, "records": batch}]}])
        codes = [p.error_code for p in r.responses[0].partition_responses]
        assert codes == [E.corrupt_message, E.unknown_topic_or_partition]

        lo = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": name, "partitions": [{"partition_index": 1, "timestamp": -2},
                                          {"partition_index": 1, "timestamp": -1},
                                          {"partition_index": 0, "timestamp": -1}]}])
        assert [p.offset for p in lo.topics[0].partitions] == [0, 6, 0]

        f12 = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=1, topics=[
            {"topic": name, "partitions": [{"partition": 1, "fetch_offset": 4,
                                            "partition_max_bytes": 1 << 20}]}])
        part = f12.responses[0].partitions[0]
        assert part.error_code == E.none and part.high_watermark == 6
        assert struct.unpack_from(">q", part.records, 0)[0] == 3  # the batch holding offset 4
        assert bytes(part.records)[12 + 9:] == batch[12 + 9:]  # stored as sent (after the CRC)
        f16 = c.call(ApiKey.FETCH, 16, max_wait=0, min_bytes=1, topics=[
            {"topic_id": tid, "partitions": [{"partition": 1, "fetch_offset": 0,
                                              "partition_max_bytes": 1 << 20},
                                             {"partition": 0, "fetch_offset": 5,
                                              "partition_max_bytes": 1 << 20}]},
            {"topic_id": uuid.uuid4(), "partitions": [{"partition": 0, "fetch_offset": 0,
                                                       "partition_max_bytes": 100}]}])
        p1, p0 = f16.responses[0].partitions
        assert p1.error_code == E.none and len(p1.records) == 2 * len(batch)
        assert p0.error_code == E.offset_out_of_range
        assert f16.responses[1].partitions[0].error_code == E.unknown_topic_id


def _commit(c: KafkaClient, version: int, group: str, topic: str, offsets: dict[int, int],
            member: str = "", epoch: int = -1) -> list[Any]:
    r = c.call(ApiKey.OFFSET_COMMIT, version, group_id=group, generation_id_or_member_epoch=epoch,
               member_id=member, topics=[{"name": topic, "partitions": [
                   {"partition_index": p, "committed_offset": o, "committed_metadata": "m"}
                   for p, o in offsets.items()]}])
    return [p.error_code for p in r.topics[0].partitions]


def test_offsets_commit_fetch_delete_and_delete_groups(gc_server: ServerProcess) -> None:
    topic, group = _name("off"), _name("g-off")
    with KafkaClient(gc_server.bootstrap) as c:
        _create(c, topic, 3)
        assert _commit(c, 2, group, topic, {0: 5, 1: 6}) == [E.none, E.none]
        assert _commit(c, 9, group, topic, {2: 7, 9: 1}) == [E.none, E.unknown_topic_or_partition]
        for v in (1, 3, 7):
            r = c.call(ApiKey.OFFSET_FETCH, v, group_id=group, topics=[
                {"name": topic, "partition_indexes": [0, 1, 2]}])
            assert [p.committed_offset for p in r.topics[0].partitions] == [5, 6, 7]
        r = c.call(ApiKey.OFFSET_FETCH, 9, groups=[
            {"group_id": group, "topics": None, "member_id": None, "member_epoch": -1},
            {"group_id": group + "-none", "topics": [{"name": topic, "partition_indexes": [0]}]}])
        assert {(int(p.partition_index), int(p.committed_offset))
                for p in r.groups[0].topics[0].partitions} == {(0, 5), (1, 6), (2, 7)}
        assert r.groups[1].topics[0].partitions[0].committed_offset == -1

        # a consumer-protocol member: commits carry its member epoch (v0 join: id made for us)
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="",
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    topic_partitions=[])
        assert hb.error_code == E.none and hb.member_epoch >= 1
        assert _commit(c, 9, group, topic, {0: 8}) == [E.unknown_member_id]  # admin, group busy
        assert _commit(c, 9, group, topic, {0: 8}, hb.member_id, hb.member_epoch + 1) == [
            E.stale_member_epoch]  # ahead of the member: Kafka's ConsumerGroup.validateMemberEpoch
        assert _commit(c, 9, group, topic, {0: 8}, hb.member_id, hb.member_epoch) == [E.none]
        r = c.call(ApiKey.OFFSET_FETCH, 9, groups=[{"group_id": group, "member_id": hb.member_id,
                                                    "member_epoch": hb.member_epoch, "topics": None}])
        assert r.groups[0].error_code == E.none
        r = c.call(ApiKey.OFFSET_FETCH, 9, groups=[{"group_id": group, "member_id": "nobody",
                                                    "member_epoch": 1, "topics": None}])
        assert r.groups[0].error_code == E.unknown_member_id

        od = c.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
            {"name": topic, "partitions": [{"partition_index": 1}]}])
        assert od.topics[0].partitions[0].error_code == E.group_subscribed_to_topic
        dg = c.call(ApiKey.DELETE_GROUPS, 2, groups_names=[group, _name("nope")])
        assert [x.error_code for x in dg.results] == [E.non_empty_group, E.group_id_not_found]

        leave = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=hb.member_id,
                       member_epoch=-1, topic_partitions=None)
        assert leave.error_code == E.none and leave.member_epoch == -1
        od = c.call(ApiKey.OFFSET_DELETE, 0, group_id=group, topics=[
            {"name": topic, "partitions": [{"partition_index": 1}]}])
        assert od.error_code == E.none and od.topics[0].partitions[0].error_code == E.none
        dg = c.call(ApiKey.DELETE_GROUPS, 2, groups_names=[group])
        assert dg.results[0].error_code == E.none
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": None}])
        assert r.groups[0].topics == ()


def test_group_configs_describe_and_alter(gc_server: ServerProcess) -> None:
    group = _name("g-cfg")
    with KafkaClient(gc_server.bootstrap) as c:
        for resource_type in (16, 32):
            r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[{
                "resource_type": resource_type, "resource_name": group, "configs": [
                    {"name": "consumer.session.timeout.ms", "config_operation": 0,
                     "value": str(5000 + resource_type)}]}])
            assert r.responses[0].error_code == E.none, r
            d = c.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
                {"resource_type": resource_type, "resource_name": group, "configuration_keys": None}])
            res = d.results[0]
            assert res.error_code == E.none and res.resource_type == resource_type
            values = {x.name: x.value for x in res.configs}
            assert values["group.consumer.session.timeout.ms"] == str(5000 + resource_type)
            assert values["group.consumer.heartbeat.interval.ms"] == "500"  # broker default
            # KIP-1263's interval: the server's setting (0 in the tests' servers), then the
            # group's own through consumer.assignment.interval.ms
            assert values["group.consumer.assignment.interval.ms"] == (
                "0" if resource_type == 16 else "250")  # the first round's alter below
            r = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[{
                "resource_type": resource_type, "resource_name": group, "configs": [
                    {"name": "consumer.assignment.interval.ms", "config_operation": 0,
                     "value": "250"}]}])
            assert r.responses[0].error_code == E.none, r
            d = c.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
                {"resource_type": resource_type, "resource_name": group,
                 "configuration_keys": ["consumer.assignment.interval.ms"]}])
            assert {x.name: x.value for x in d.results[0].configs} == {
                "consumer.assignment.interval.ms": "250"}
        bad = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, validate_only=False, resources=[{
            "resource_type": 16, "resource_name": group, "configs": [
                {"name": "no.such.config", "config_operation": 0, "value": "1"}]}])
        assert bad.responses[0].error_code == E.invalid_config
        topic = _name("cfg-topic")
        _create(c, topic, 1)
        d = c.call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[
            {"resource_type": 2, "resource_name": topic, "configuration_keys": None},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": None},
            {"resource_type": 2, "resource_name": _name("missing"), "configuration_keys": None}])
        assert d.results[0].error_code == E.none
        assert "cleanup.policy" in {x.name for x in d.results[0].configs}
        assert d.results[1].error_code == E.none
        broker = {x.name: x.value for x in d.results[1].configs}
        assert broker["group.consumer.assignment.interval.ms"] == "0"  # --config of the tests
        assert d.results[2].error_code == E.unknown_topic_or_partition


def test_list_groups_filters(gc_server: ServerProcess) -> None:
    group = _name("g-list")
    with KafkaClient(gc_server.bootstrap) as c:
        topic = _name("lt")
        _create(c, topic, 1)
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=str(uuid.uuid4()),
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    topic_partitions=[])
        assert hb.error_code == E.none
        for v in range(6):
            r = c.call(ApiKey.LIST_GROUPS, v)
            assert group in {g.group_id for g in r.groups}
        r = c.call(ApiKey.LIST_GROUPS, 5, types_filter=["classic"])
        assert group not in {g.group_id for g in r.groups}
        r = c.call(ApiKey.LIST_GROUPS, 5, states_filter=["Empty"])
        assert group not in {g.group_id for g in r.groups}
        c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=hb.member_id,
               member_epoch=-1, topic_partitions=None)


def test_fetch_waits_for_data_and_wakes_on_produce(gc_server: ServerProcess) -> None:
    name = _name("wait")
    with KafkaClient(gc_server.bootstrap) as c, KafkaClient(gc_server.bootstrap) as producer:
        _create(c, name, 1)
        fetch = {"replica_id": -1, "max_wait": 3000, "min_bytes": 1, "topics": [
            {"topic": name, "partitions": [{"partition": 0, "fetch_offset": 0,
                                            "partition_max_bytes": 1 << 20}]}]}
        t0 = time.monotonic()
        empty = c.call(ApiKey.FETCH, 12, {**fetch, "max_wait": 300})
        assert time.monotonic() - t0 >= 0.25  # waited (nothing to read)
        assert empty.responses[0].partitions[0].records in (b"", None)

        result: list[Any] = []
        waiter = threading.Thread(target=lambda: result.append(c.call(ApiKey.FETCH, 12, fetch)))
        t0 = time.monotonic()
        waiter.start()
        time.sleep(0.2)
        producer.call(ApiKey.PRODUCE, 9, acks=1, timeout=5000, topic_data=[
            {"name": name, "partition_data": [{"index": 0, "records": _batch([b"x"])}]}])
        waiter.join(5)
        assert result and time.monotonic() - t0 < 2.5  # woken by the produce, not the timeout
        assert result[0].responses[0].partitions[0].high_watermark == 1
        assert len(result[0].responses[0].partitions[0].records) > 61


def test_kafka_4_3_group_api_versions(gc_server: ServerProcess) -> None:
    """Kafka 4.3's group surface: OffsetCommit / OffsetFetch v10 name topics by id (an unknown
    id is UNKNOWN_TOPIC_ID); DescribeGroups v6 answers GROUP_ID_NOT_FOUND (with a message) for
    a group that does not exist, v5 a Dead group without error; ConsumerGroupDescribe v1 carries
    the member type (KIP-1099: 1 = consumer protocol); ListGroups v5 answers the group type."""
    topic, group = _name("v10"), _name("g-v10")
    with KafkaClient(gc_server.bootstrap) as c:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version))
                    for k in c.call(ApiKey.API_VERSIONS, 3, client_software_name="t",
                                    client_software_version="1").api_keys}
        assert versions[ApiKey.OFFSET_COMMIT][1] == 10 and versions[ApiKey.OFFSET_FETCH][1] == 10
        assert versions[ApiKey.DESCRIBE_GROUPS][1] == 6
        assert versions[ApiKey.LIST_GROUPS][1] == 5
        assert versions[ApiKey.CONSUMER_GROUP_DESCRIBE][1] == 1
        tid = _create(c, topic, 2)
        unknown = uuid.uuid4()
        r = c.call(ApiKey.OFFSET_COMMIT, 10, group_id=group, generation_id_or_member_epoch=-1,
                   member_id="", group_instance_id=None, topics=[
                       {"topic_id": tid, "partitions": [
                           {"partition_index": 0, "committed_offset": 11,
                            "committed_leader_epoch": -1, "committed_metadata": None},
                           {"partition_index": 5, "committed_offset": 1,
                            "committed_leader_epoch": -1, "committed_metadata": None}]},
                       {"topic_id": unknown, "partitions": [
                           {"partition_index": 0, "committed_offset": 1,
                            "committed_leader_epoch": -1, "committed_metadata": None}]}])
        assert [(t.topic_id, [int(p.error_code) for p in t.partitions]) for t in r.topics] == [
            (tid, [E.none, E.unknown_topic_or_partition]), (unknown, [E.unknown_topic_id])]
        r = c.call(ApiKey.OFFSET_FETCH, 10, require_stable=False, groups=[
            {"group_id": group, "member_id": None, "member_epoch": -1,
             "topics": [{"topic_id": tid, "partition_indexes": [0, 1]},
                        {"topic_id": unknown, "partition_indexes": [0]}]}])
        g = r.groups[0]
        assert g.error_code == E.none
        assert [(t.topic_id, [(int(p.partition_index), int(p.committed_offset), int(p.error_code))
                              for p in t.partitions]) for t in g.topics] == [
            (tid, [(0, 11, 0), (1, -1, 0)]), (unknown, [(0, -1, E.unknown_topic_id)])]
        r = c.call(ApiKey.OFFSET_FETCH, 10, require_stable=False, groups=[
            {"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}])
        assert [(t.topic_id, [int(p.committed_offset) for p in t.partitions])
                for t in r.groups[0].topics] == [(tid, [11])]

        missing = _name("nobody")
        d6 = c.call(ApiKey.DESCRIBE_GROUPS, 6, groups=[missing, group],
                    include_authorized_operations=False)
        assert (d6.groups[0].error_code, d6.groups[0].group_state) == (E.group_id_not_found, "Dead")
        assert d6.groups[0].error_message
        assert (d6.groups[1].error_code, d6.groups[1].group_state) == (E.none, "Empty")
        d5 = c.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[missing],
                    include_authorized_operations=False)
        assert (d5.groups[0].error_code, d5.groups[0].group_state) == (E.none, "Dead")

        member = str(uuid.uuid4())
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group + "-c", member_id=member,
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    topic_partitions=[])
        assert hb.error_code == E.none
        cd = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group + "-c"],
                    include_authorized_operations=False)
        assert [(m.member_id, int(m.member_type)) for m in cd.groups[0].members] == [(member, 1)]
        lg = c.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["consumer"])
        assert {g.group_id: g.group_type for g in lg.groups}.get(group + "-c") == "consumer"
        assert group not in {g.group_id for g in lg.groups}  # offsets only: a classic group
        leave = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group + "-c",
                       member_id=member, member_epoch=-1, rebalance_timeout=0,
                       topic_partitions=None)
        assert leave.error_code == E.none  # a leave with RebalanceTimeoutMs 0, as Kafka accepts
