"""DeleteRecords (API 21) and the log start offset it moves (Kafka's
``KafkaApis.handleDeleteRecordsRequest``, ``Partition.deleteRecordsOnLeader``,
``UnifiedLog.maybeIncrementLogStartOffset``, the ``log-start-offset-checkpoint`` file).

- :class:`PartitionLog`: the start moves up only, to at most the high watermark (-1 = the high
  watermark), OFFSET_OUT_OF_RANGE above it; the timestamp look-ups start at it;
- :class:`TopicRegistry`: the start survives a restart through the checkpoint file, written
  atomically after the partition file's fsync; a damaged checkpoint stops the start;
- over the wire: confluent-kafka's and kafka-python's admin clients; then Fetch below the start
  is OFFSET_OUT_OF_RANGE (a consumer resets by ``auto.offset.reset``), ListOffsets EARLIEST
  and Fetch's LogStartOffset are the start, after a SIGKILL restart too; the DELETE ACL; the
  share partitions' start offset (SPSO) moves past the deleted records (KIP-932).
"""

from __future__ import annotations

import signal
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.partition_log import OffsetOutOfRange, PartitionLog
from groupcoord.server.security.acls import AclOperation, ResourceType
from groupcoord.server.topic_registry import TopicRegistry, TopicsFileError

from .conftest import start_server

E = ErrorCode


def batch(n: int, ts: int = 1000) -> bytes:
    """A v2 batch of ``n`` empty records, timestamp ``ts``."""
    records = b""
    for i in range(n):
        body = b"\x00" + bytes([0, i * 2]) + b"\x01\x01\x00"  # attrs, ts/offset deltas, null k/v
        records += bytes([len(body) * 2]) + body
    after_crc = struct.pack(">hiqqqhii", 0, n - 1, ts, ts, -1, -1, -1, n) + records
    head = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc))
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


# ------------------------------------------------------------------ the partition log


def test_the_start_moves_up_to_the_high_watermark_only(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "0.log", in_memory=True)
    plog.append(batch(5, ts=100))
    plog.append(batch(5, ts=200))
    assert plog.delete_records(3) == 3
    assert plog.delete_records(2) == 3  # below the start: nothing changes
    with pytest.raises(OffsetOutOfRange):
        plog.delete_records(11)
    with pytest.raises(OffsetOutOfRange):
        plog.delete_records(-2)
    assert plog.log_start_offset == 3
    # the timestamp look-ups start at the log start offset
    assert plog.offset_for_timestamp(0) == (3, 100)
    assert plog.delete_records(-1) == 10  # -1: the high watermark
    assert plog.offset_for_timestamp(0) is None
    assert plog.max_timestamp_offset() is None


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6),
       targets=st.lists(st.integers(-3, 35), max_size=8))
def test_the_start_is_the_largest_valid_target_and_never_passes_the_end(
        sizes: list[int], targets: list[int]) -> None:
    plog = PartitionLog("mem", in_memory=True)
    for n in sizes:
        plog.append(batch(n))
    hw = sum(sizes)
    expected = 0
    for t in targets:
        valid = t == -1 or 0 <= t <= hw
        try:
            got = plog.delete_records(t)
        except OffsetOutOfRange:
            assert not valid
            continue
        assert valid
        expected = max(expected, hw if t == -1 else t)
        assert got == expected == plog.log_start_offset
    assert plog.log_start_offset <= plog.high_watermark == hw


# ------------------------------------------------------------------ the checkpoint


def test_the_start_survives_a_restart_and_deleted_topics_leave_the_checkpoint(
        tmp_path: Path) -> None:
    reg = TopicRegistry(tmp_path)
    a = reg.create("a", 2)
    reg.create("b", 1)
    reg.partition("a", 1).append(batch(10))
    reg.partition("b", 0).append(batch(4))
    assert reg.delete_records("a", 1, 7) == 7
    assert reg.delete_records("b", 0, -1) == 4
    lines = (tmp_path / "log-start-offset-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", "2"] and f"{a.topic_id.hex} 1 7" in lines
    reg.close()
    again = TopicRegistry(tmp_path)  # no clean-shutdown marker: full recovery
    assert again.partition("a", 1).log_start_offset == 7
    assert again.partition("a", 0).log_start_offset == 0
    assert again.partition("b", 0).log_start_offset == 4
    again.delete("b")
    assert again.delete_records("a", 1, 8) == 8
    lines = (tmp_path / "log-start-offset-checkpoint").read_text().splitlines()
    assert lines == ["0", "1", f"{a.topic_id.hex} 1 8"]
    again.close(clean=True)
    clean = TopicRegistry(tmp_path)  # a clean start reads no partition file up front
    assert clean.partition("a", 1).log_start_offset == 8
    assert clean.partition("a", 1).high_watermark == 10


def test_a_start_beyond_a_cut_file_is_lowered_and_a_damaged_checkpoint_stops(
        tmp_path: Path) -> None:
    reg = TopicRegistry(tmp_path)
    reg.create("a", 1)
    plog = reg.partition("a", 0)
    plog.append(batch(3))
    plog.append(batch(3))
    reg.delete_records("a", 0, 5)
    reg.close()
    with open(plog.path, "r+b") as f:  # an operator cut the second batch away
        f.truncate(len(batch(3)))
    again = TopicRegistry(tmp_path)
    assert again.partition("a", 0).log_start_offset == 3 == again.partition("a", 0).high_watermark
    again.close()
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n2\nzz 0 1\n")
    with pytest.raises(TopicsFileError, match="log-start-offset-checkpoint"):
        TopicRegistry(tmp_path)


def test_serve_stops_with_one_line_on_a_damaged_checkpoint(tmp_path: Path) -> None:
    import subprocess

    from .conftest import GROUPCOORD

    data = tmp_path / "data"
    TopicRegistry(data).close()
    (data / "log-start-offset-checkpoint").write_text("0\n5\n")
    r = subprocess.run([*GROUPCOORD, "serve", "--port", "0", "--data-dir", str(data)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "log-start-offset-checkpoint" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ over the wire


def _produce(bootstrap: str, topic: str, n: int, **config: str) -> None:
    from confluent_kafka import Producer

    errors: list[Any] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(), partition=0,
                  on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(10) == 0 and not errors, errors


def _earliest(c: KafkaClient, topic: str) -> int:
    r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                        "timestamp": -2}]}])
    return int(r.topics[0].partitions[0].offset)


def _fetch(c: KafkaClient, topic: str, offset: int) -> Any:
    r = c.call(ApiKey.FETCH, 12, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20,
               isolation_level=0, session_id=0, session_epoch=-1, topics=[
                   {"topic": topic, "partitions": [{
                       "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                       "last_fetched_epoch": -1, "log_start_offset": -1,
                       "partition_max_bytes": 1 << 20}]}],
               forgotten_topics_data=(), rack_id="")
    return r.responses[0].partitions[0]


def _consume_first_offset(bootstrap: str, topic: str) -> int:
    """The first offset a new confluent-kafka consumer (earliest) reads from offset 0: it is
    answered OFFSET_OUT_OF_RANGE and resets by ``auto.offset.reset``."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                return int(m.offset())
        raise AssertionError("nothing consumed")
    finally:
        c.close()


def test_confluent_admin_delete_records_then_consumers_reset_and_it_survives_sigkill(
        tmp_path: Path) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    srv = start_server(tmp_path / "data")
    try:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap})
        admin.create_topics([NewTopic("dr", 1)])["dr"].result(10)
        _produce(srv.bootstrap, "dr", 10)
        fut = admin.delete_records([TopicPartition("dr", 0, 6)])
        [(tp, f)] = list(fut.items())
        assert (tp.topic, tp.partition) == ("dr", 0)
        assert f.result(10).low_watermark == 6
        # above the high watermark: OFFSET_OUT_OF_RANGE
        bad = admin.delete_records([TopicPartition("dr", 0, 11)])
        with pytest.raises(Exception, match=r"OFFSET_OUT_OF_RANGE|out of range"):
            next(iter(bad.values())).result(10)
        with KafkaClient(srv.bootstrap) as c:
            assert _earliest(c, "dr") == 6
            below = _fetch(c, "dr", 5)
            assert (int(below.error_code), int(below.log_start_offset)) == (
                E.offset_out_of_range, 6)
            at = _fetch(c, "dr", 6)
            assert int(at.error_code) == 0 and int(at.log_start_offset) == 6
        assert _consume_first_offset(srv.bootstrap, "dr") == 6
    finally:
        srv.stop(sig=signal.SIGKILL)
    srv = start_server(tmp_path / "data")
    try:
        with KafkaClient(srv.bootstrap) as c:
            assert _earliest(c, "dr") == 6
    finally:
        srv.stop()


def test_kafka_python_admin_delete_records(tmp_path: Path) -> None:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import NewTopic

    srv = start_server(tmp_path / "data")
    try:
        admin = KafkaAdminClient(bootstrap_servers=srv.bootstrap)
        try:
            admin.create_topics([NewTopic("kp", 1, 1)])
            _produce(srv.bootstrap, "kp", 5)
            got = admin.delete_records({TopicPartition("kp", 0): -1})
            assert got[TopicPartition("kp", 0)]["low_watermark"] == 5
        finally:
            admin.close()
        with KafkaClient(srv.bootstrap) as c:
            assert _earliest(c, "kp") == 5
    finally:
        srv.stop()


def _delete_records(c: KafkaClient, topic: str, offsets: dict[int, int]) -> list[tuple[int, int, int]]:
    r = c.call(ApiKey.DELETE_RECORDS, 2, timeout=5_000, topics=[
        {"name": topic, "partitions": [{"partition_index": p, "offset": o}
                                       for p, o in offsets.items()]}])
    return [(int(p.partition_index), int(p.error_code), int(p.low_watermark))
            for p in r.topics[0].partitions]


def test_delete_records_needs_delete_on_the_topic_and_answers_unknown_partitions(
        tmp_path: Path) -> None:
    from .acl_support import thread_server
    from .test_server_acls import create_topic, grant

    with thread_server(tmp_path / "data") as srv, srv.client("admin") as admin, \
            srv.client("bob") as bob:
        create_topic(admin, "acl", partitions=1)
        _produce(srv.bootstrap, "acl", 3, **{"client.id": srv.client_config("admin")["client.id"]})
        assert _delete_records(bob, "acl", {0: 1}) == [(0, E.topic_authorization_failed, -1)]
        grant(admin, ResourceType.TOPIC, "acl", "User:bob", AclOperation.DELETE)
        assert _delete_records(bob, "acl", {0: 2, 1: 1}) == [
            (0, 0, 2), (1, E.unknown_topic_or_partition, -1)]
        assert _delete_records(bob, "nope", {0: 1}) == [(0, E.topic_authorization_failed, -1)]


def test_the_share_start_offset_moves_past_deleted_records() -> None:
    """A share group that acquired records 0..9 and one created after DeleteRecords both start
    at the new log start (Kafka's SharePartition: the SPSO moves to the log start offset, the
    in-flight records below it are archived)."""
    from groupcoord.testing import embedded_cluster

    from .test_share_data_wire import GROUP, Member, acquired, part, produce, topic_id

    def start_offset(c: KafkaClient) -> int:
        r = c.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
            {"group_id": GROUP, "topics": [{"topic_name": "t", "partitions": [0]}]}])
        return int(r.groups[0].topics[0].partitions[0].start_offset)

    with embedded_cluster(topics={"t": 1}) as cluster:
        boot = cluster.bootstrap_servers
        admin = KafkaClient(boot)
        tid = topic_id(admin)
        for g in (GROUP,):
            r = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[
                {"resource_type": 32, "resource_name": g, "configs": [
                    {"name": "share.auto.offset.reset", "config_operation": 0,
                     "value": "earliest"}]}])
            assert int(r.responses[0].error_code) == 0, r
        a = Member(boot, "member-a", tid)
        try:
            r = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=GROUP, member_id="member-a",
                           member_epoch=0, subscribed_topic_names=["t"])
            assert int(r.error_code) == 0, r
            a.fetch()
            produce(boot, 10)
            got = acquired(a.fetch())
            assert got == [(0, 9, 1)]
            assert start_offset(admin) == 0
            assert _delete_records(admin, "t", {0: 4}) == [(0, 0, 4)]
            assert start_offset(admin) == 4
            # the member's acknowledgement of records now below the start is accepted
            r = a.acknowledge(0, [(0, 9, 1)])
            assert int(part(r).error_code) == 0, r
            assert start_offset(admin) == 10
        finally:
            a.close()
            admin.close()


def test_a_broker_that_does_not_lead_the_partition_answers_not_leader() -> None:
    """Several brokers: DeleteRecords to a broker that does not lead a partition named is
    NOT_LEADER_OR_FOLLOWER for every partition (kafka-python and librdkafka then send it to
    the leader); the leader serves it."""
    from groupcoord.testing import embedded_cluster

    from .test_brokers import _ports

    with embedded_cluster(topics={"t": 3}, brokers=3) as cl:
        addrs = _ports(cl)
        with KafkaClient(addrs[0]) as c:
            md = c.call(ApiKey.METADATA, 12, topics=None)
            leaders = {int(p.partition_index): int(p.leader_id) for p in md.topics[0].partitions}
        other = (leaders[0] + 1) % 3
        with KafkaClient(addrs[other]) as c:
            assert _delete_records(c, "t", {0: 0}) == [(0, E.not_leader_or_follower, -1)]
        with KafkaClient(addrs[leaders[0]]) as c:
            assert _delete_records(c, "t", {0: -1}) == [(0, 0, 0)]
