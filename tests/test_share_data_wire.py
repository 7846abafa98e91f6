"""Share partitions over the wire (KIP-932), with the protocol's own client: ShareFetch and
ShareAcknowledge with share sessions, acquisition locks, delivery counts, the durable share
state across a restart, and the share-group offset admin APIs."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing import Cluster, embedded_cluster

from .conftest import GROUPCOORD, start_server

GROUP = "sg"
LOCK_MS = 1000


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={"t": 2}, config={
            "group.share.min.record.lock.duration.ms": str(LOCK_MS),
            "group.share.record.lock.duration.ms": str(LOCK_MS),
            "group.share.delivery.count.limit": "4"}) as c:
        yield c


def produce(bootstrap: str, n: int, partition: int = 0, prefix: str = "m") -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce("t", value=f"{prefix}{i}".encode(), partition=partition)
    assert p.flush(10) == 0


def topic_id(c: KafkaClient, name: str = "t") -> UUID:
    md = c.call(ApiKey.METADATA, 12, topics=[{"name": name, "topic_id": UUID(int=0)}],
                allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return md.topics[0].topic_id


class Member:
    """One share consumer's member id and share session epoch, on its own connection."""

    def __init__(self, bootstrap: str, member_id: str, tid: UUID) -> None:
        self.client = KafkaClient(bootstrap, client_id=member_id)
        self.member_id = member_id
        self.tid = tid
        self.epoch = 0

    def fetch(self, partitions: tuple[int, ...] = (0,), acks: dict[int, list[tuple]] | None = None,
              wait_ms: int = 0, max_records: int = 500, epoch: int | None = None,
              min_bytes: int = 1) -> Any:
        acks = acks or {}
        parts = sorted(set(partitions) | set(acks))
        resp = self.client.call(
            ApiKey.SHARE_FETCH, 1, group_id=GROUP, member_id=self.member_id,
            share_session_epoch=self.epoch if epoch is None else epoch, max_wait=wait_ms,
            min_bytes=min_bytes, max_bytes=1 << 20, max_records=max_records, batch_size=500,
            topics=[{"topic_id": self.tid, "partitions": [
                {"partition_index": p, "acknowledgement_batches": [
                    {"first_offset": a[0], "last_offset": a[1], "acknowledge_types": [a[2]]}
                    for a in acks.get(p, [])]} for p in parts]}],
            forgotten_topics_data=[])
        if resp.error_code == 0:
            self.epoch = self.epoch + 1 if epoch is None or epoch >= 0 else self.epoch
        return resp

    def acknowledge(self, partition: int, acks: list[tuple], epoch: int | None = None) -> Any:
        resp = self.client.call(
            ApiKey.SHARE_ACKNOWLEDGE, 1, group_id=GROUP, member_id=self.member_id,
            share_session_epoch=self.epoch if epoch is None else epoch,
            topics=[{"topic_id": self.tid, "partitions": [
                {"partition_index": partition, "acknowledgement_batches": [
                    {"first_offset": a[0], "last_offset": a[1], "acknowledge_types": [a[2]]}
                    for a in acks]}]}])
        if resp.error_code == 0 and (epoch is None or epoch > 0):
            self.epoch += 1
        return resp

    def close(self) -> None:
        self.client.close()


def acquired(resp: Any, partition: int = 0) -> list[tuple[int, int, int]]:
    assert resp.error_code == 0, resp
    return [(int(a.first_offset), int(a.last_offset), int(a.delivery_count))
            for t in resp.responses for p in t.partitions if p.partition_index == partition
            for a in p.acquired_records]


def part(resp: Any, partition: int = 0) -> Any:
    return next(p for t in resp.responses for p in t.partitions
                if p.partition_index == partition)


def describe(c: KafkaClient) -> dict[int, tuple[int, int]]:
    """Start offset and lag per partition; {} for a group the broker does not have."""
    resp = c.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1,
                  groups=[{"group_id": GROUP, "topics": [{"topic_name": "t",
                                                          "partitions": [0, 1]}]}])
    g = resp.groups[0]
    if g.error_code == ErrorCode.group_id_not_found:
        return {}
    assert g.error_code == 0
    return {int(p.partition_index): (int(p.start_offset), int(p.lag))
            for t in g.topics for p in t.partitions}


def test_share_fetch_acknowledge_locks_and_delivery_counts(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)
    b = Member(boot, "member-b", tid)
    try:
        # the first fetch initialises the share partition at the end of the log (latest)
        first = a.fetch()
        assert acquired(first) == [] and first.acquisition_lock_timeout.total_seconds() * 1000 \
            == LOCK_MS
        assert describe(admin)[0] == (0, 0)
        produce(boot, 10)
        resp = a.fetch()
        assert acquired(resp) == [(0, 9, 1)]
        assert part(resp).records  # the batches holding them
        # b sees nothing: every record is acquired by a
        assert acquired(b.fetch()) == []
        # a accepts 0-4 and releases 5-9 (piggy-backed on a fetch): b gets 5-9, delivered twice
        resp = a.fetch(acks={0: [(0, 4, 1), (5, 9, 2)]}, max_records=0)
        assert part(resp).acknowledge_error_code == 0
        assert describe(admin)[0] == (5, 5)
        resp = b.fetch(wait_ms=2000)
        assert acquired(resp) == [(5, 9, 2)]
        # a cannot acknowledge what b holds; the partition's acknowledgement is all or none
        resp = a.acknowledge(0, [(5, 9, 1)])
        assert part(resp).error_code == ErrorCode.invalid_record_state
        # b holds them without acknowledging: the lock expires and a gets them a third time
        t0 = time.monotonic()
        resp = a.fetch(wait_ms=5000)
        assert acquired(resp) == [(5, 9, 3)]
        assert time.monotonic() - t0 >= (LOCK_MS - 300) / 1000
        # b's acknowledgement is too late
        assert part(b.acknowledge(0, [(5, 9, 1)])).error_code == ErrorCode.invalid_record_state
        # a rejects 5, releases 6-9: at the limit of 4 deliveries the fourth time archives them
        assert part(a.acknowledge(0, [(5, 5, 3), (6, 9, 2)])).error_code == 0
        assert acquired(b.fetch()) == [(6, 9, 4)]
        assert part(b.acknowledge(0, [(6, 9, 2)])).error_code == 0
        assert describe(admin)[0] == (10, 0)
        assert acquired(a.fetch()) == []
    finally:
        a.close()
        b.close()
        admin.close()


def test_overlapping_acknowledgement_batches_are_an_invalid_request(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    a = Member(boot, "member-a", topic_id(admin))
    try:
        a.fetch()
        produce(boot, 5)
        assert acquired(a.fetch()) == [(0, 4, 1)]
        # 0-3 and 2-4 overlap (Kafka: INVALID_REQUEST); nothing of either is applied
        resp = a.acknowledge(0, [(0, 3, 1), (2, 4, 1)])
        assert part(resp).error_code == ErrorCode.invalid_request
        resp = a.fetch(acks={0: [(2, 4, 1), (0, 1, 1)]}, max_records=0)
        assert part(resp).acknowledge_error_code == ErrorCode.invalid_request
        assert describe(admin)[0] == (0, 5)
        # ascending, disjoint batches are applied
        assert part(a.acknowledge(0, [(0, 1, 1), (2, 4, 1)])).error_code == 0
        assert describe(admin)[0] == (5, 0)
    finally:
        a.close()
        admin.close()


def test_the_share_session_cap_holds_however_idle_the_open_sessions() -> None:
    """``group.share.max.share.sessions`` caps the sessions of live connections: beyond it a new
    session is SHARE_SESSION_LIMIT_REACHED even when the open ones have been idle for a long time
    (Kafka 4.1+ evicts none; their clients still hold them), and a closed one frees its place."""
    with embedded_cluster(topics={"t": 1}, config={"group.share.max.share.sessions": "2"}) as c:
        boot = c.bootstrap_servers
        with KafkaClient(boot) as admin:
            tid = topic_id(admin)
        ms = [Member(boot, f"member-{i}", tid) for i in range(3)]
        try:
            assert [m.fetch().error_code for m in ms[:2]] == [0, 0]

            def age() -> None:  # the two sessions unused for ten minutes
                for s in c.server.apis.share_data.sessions.sessions.values():
                    s.last_used_ms -= 600_000
            c._on_loop(age)
            assert ms[2].fetch().error_code == ErrorCode.share_session_limit_reached
            assert [m.fetch().error_code for m in ms[:2]] == [0, 0]  # both still there
            assert ms[0].fetch(epoch=-1, partitions=()).error_code == 0
            assert ms[2].fetch().error_code == 0
        finally:
            for m in ms:
                m.close()


def test_sessions_epochs_and_the_final_epoch_releases(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)
    b = Member(boot, "member-b", tid)
    try:
        a.fetch()
        produce(boot, 4)
        assert acquired(a.fetch()) == [(0, 3, 1)]
        # a wrong epoch: INVALID_SHARE_SESSION_EPOCH and nothing changes (Kafka 4.x): a keeps
        # its session, its epoch and its locks, so b gets nothing
        resp = a.fetch(epoch=7)
        assert resp.error_code == ErrorCode.invalid_share_session_epoch
        assert acquired(b.fetch()) == []
        assert acquired(a.fetch()) == []  # the right epoch carries on
        # a closes its session with the final epoch: its locks are released to b
        assert a.fetch(epoch=-1, partitions=()).error_code == 0
        assert a.fetch(epoch=3).error_code == ErrorCode.share_session_not_found
        assert acquired(b.fetch()) == [(0, 3, 2)]
        # b closes its session with the final epoch, acknowledging 0 and holding 1-3: released
        resp = b.acknowledge(0, [(0, 0, 1)], epoch=-1)
        assert resp.error_code == 0 and part(resp).error_code == 0
        assert b.fetch(epoch=2).error_code == ErrorCode.share_session_not_found
        a.epoch = 0
        assert acquired(a.fetch()) == [(1, 3, 3)]
        # ShareAcknowledge cannot open a session; bad ids are refused
        assert b.acknowledge(0, [(1, 1, 1)], epoch=0).error_code == \
            ErrorCode.invalid_share_session_epoch
        bad = admin.call(ApiKey.SHARE_FETCH, 1, group_id="", member_id="x",
                         share_session_epoch=0, max_wait=0, min_bytes=1, max_records=1,
                         batch_size=1, topics=[], forgotten_topics_data=[])
        assert bad.error_code == ErrorCode.invalid_request
        # an unknown topic id: the partition's error, not the request's
        c = Member(boot, "member-c", UUID(int=5))
        try:
            assert part(c.fetch()).error_code == ErrorCode.unknown_topic_id
            # it is not kept in the session: the next (incremental) request does not name it
            assert c.fetch(partitions=()).responses == ()
            sessions = cluster._on_loop(lambda: cluster.server.apis.share_data.sessions)
            assert dict(sessions.of_member(GROUP, "member-c").partitions) == {}
        finally:
            c.close()
        long_group = admin.call(ApiKey.SHARE_FETCH, 1, group_id="g" * 40_000, member_id="x",
                                share_session_epoch=0, max_wait=0, min_bytes=1, max_records=1,
                                batch_size=1, topics=[], forgotten_topics_data=[])
        assert long_group.error_code == ErrorCode.invalid_request
    finally:
        a.close()
        b.close()
        admin.close()


def test_a_restart_loses_no_acknowledgement_and_frees_every_lock(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)
    try:
        a.fetch(partitions=(0, 1))
        produce(boot, 6, partition=0)
        produce(boot, 3, partition=1)
        resp = a.fetch(partitions=(0, 1), min_bytes=1 << 20)  # both partitions in one answer
        assert acquired(resp, 0) == [(0, 5, 1)] and acquired(resp, 1) == [(0, 2, 1)]
        assert part(a.acknowledge(0, [(0, 1, 1), (3, 3, 1)])).error_code == 0
    finally:
        a.close()
        admin.close()
    cluster.restart()
    admin = KafkaClient(boot)
    b = Member(boot, "member-b", tid)
    a = Member(boot, "member-a", tid)
    try:
        assert describe(admin) == {0: (2, 3), 1: (0, 3)}
        # a's session did not survive; what a held is available, its delivery count kept
        assert a.fetch(epoch=3).error_code == ErrorCode.share_session_not_found
        resp = b.fetch(partitions=(0, 1), min_bytes=1 << 20)
        assert acquired(resp, 0) == [(2, 2, 2), (4, 5, 2)]
        assert acquired(resp, 1) == [(0, 2, 2)]
    finally:
        a.close()
        b.close()
        admin.close()


def test_offset_admin_apis(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)
    try:
        a.fetch()
        produce(boot, 5)
        assert acquired(a.fetch()) == [(0, 4, 1)]
        alter = {"group_id": GROUP, "topics": [{"topic_name": "t", "partitions": [
            {"partition_index": 0, "start_offset": 3}]}]}
        resp = admin.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        assert resp.error_code == ErrorCode.non_empty_group
        a.acknowledge(0, [(0, 4, 2)], epoch=-1)  # a leaves: the group is empty
        resp = admin.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        assert resp.error_code == 0 and resp.responses[0].partitions[0].error_code == 0
        assert describe(admin)[0] == (3, 2)
        b = Member(boot, "member-b", tid)
        try:
            assert acquired(b.fetch()) == [(3, 4, 1)]  # a new state epoch: counts start again
            b.acknowledge(0, [(3, 4, 2)], epoch=-1)
        finally:
            b.close()
        # a member of the share group (its heartbeat, no share session) makes it non-empty
        hb = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=GROUP,
                        member_id=str(UUID(int=99)), member_epoch=0, rack_id=None,
                        subscribed_topic_names=["t"])
        assert hb.error_code == 0, hb
        resp = admin.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=GROUP,
                          topics=[{"topic_name": "t"}])
        assert resp.error_code == ErrorCode.non_empty_group
        hb = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=GROUP,
                        member_id=str(UUID(int=99)), member_epoch=-1, rack_id=None,
                        subscribed_topic_names=None)
        assert hb.error_code == 0, hb
        resp = admin.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=GROUP,
                          topics=[{"topic_name": "t"}, {"topic_name": "nope"}])
        assert [int(t.error_code) for t in resp.responses] == [
            0, ErrorCode.unknown_topic_or_partition]
        assert describe(admin)[0] == (-1, -1)
    finally:
        a.close()
        admin.close()


def test_offset_admin_apis_on_a_group_that_never_existed(cluster: Cluster) -> None:
    """Describe/DeleteShareGroupOffsets for a group id that is no share group: GROUP_ID_NOT_FOUND
    (Kafka 4.x), and the probe creates no group."""
    admin = KafkaClient(cluster.bootstrap_servers)
    try:
        for gid in ("never-existed", GROUP):
            resp = admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
                {"group_id": gid, "topics": None}])
            assert [int(g.error_code) for g in resp.groups] == [ErrorCode.group_id_not_found]
            resp = admin.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, group_id=gid,
                              topics=[{"topic_name": "t"}])
            assert resp.error_code == ErrorCode.group_id_not_found and resp.responses == ()
        d = admin.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=["never-existed"],
                       include_authorized_operations=False)
        assert d.groups[0].error_code == ErrorCode.group_id_not_found
        # a share session makes the group known (a client may fetch without joining)
        a = Member(cluster.bootstrap_servers, "member-a", topic_id(admin))
        try:
            a.fetch()
            resp = admin.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, groups=[
                {"group_id": GROUP, "topics": None}])
            assert [int(g.error_code) for g in resp.groups] == [0]
        finally:
            a.close()
    finally:
        admin.close()


def test_the_share_state_survives_a_killed_server_on_sqlite(tmp_path: Path) -> None:
    """``groupcoord serve`` on sqlite, killed -9 and started again on its data directory: every
    acknowledgement is there, and what was acquired is available with its delivery count."""
    data = tmp_path / "data"
    server = start_server(data, "--config", "auto.create.topics.enable=false")
    try:
        admin = KafkaClient(server.bootstrap)
        admin.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": "t", "num_partitions": 2,
                                                     "replication_factor": -1}], timeout=5000)
        tid = topic_id(admin)
        a = Member(server.bootstrap, "member-a", tid)
        a.fetch()
        produce(server.bootstrap, 8)
        assert acquired(a.fetch()) == [(0, 7, 1)]
        assert part(a.acknowledge(0, [(0, 2, 1), (5, 5, 3)])).error_code == 0
        a.close()
        admin.close()
    finally:
        server.stop(sig=signal.SIGKILL)
    assert (data / "share-state" / "groupcoord.db").exists()
    server = start_server(data)
    try:
        admin = KafkaClient(server.bootstrap)
        assert describe(admin)[0] == (3, 4)
        b = Member(server.bootstrap, "member-b", tid)
        assert acquired(b.fetch()) == [(3, 4, 2), (6, 7, 2)]
        b.close()
        admin.close()
    finally:
        server.stop()


def test_a_closed_connection_closes_its_share_session_and_releases_its_records() -> None:
    """Kafka 4.1+: the share session of a client whose connection goes (killed, network) is
    closed and its records released at once, not after the (here one-minute) lock."""
    with embedded_cluster(topics={"t": 1}, config={
            "group.share.record.lock.duration.ms": "60000"}) as cluster:
        boot = cluster.bootstrap_servers
        admin = KafkaClient(boot)
        tid = topic_id(admin)
        a = Member(boot, "member-a", tid)
        b = Member(boot, "member-b", tid)
        try:
            a.fetch()
            produce(boot, 3)
            assert acquired(a.fetch()) == [(0, 2, 1)]
            assert acquired(b.fetch()) == []
            a.close()  # no final request: the connection just goes
            assert acquired(b.fetch(wait_ms=10_000)) == [(0, 2, 2)]
            a = Member(boot, "member-a", tid)
            assert a.fetch(epoch=2).error_code == ErrorCode.share_session_not_found
        finally:
            a.close()
            b.close()
            admin.close()


def test_v2_record_limit_mode_and_renew(cluster: Cluster) -> None:
    """ShareFetch v2: ShareAcquireMode 1 (record-limit) stops inside a batch, 0 ends on a batch
    boundary; ShareAcknowledge v2's RENEW keeps the records acquired."""
    from confluent_kafka import Producer

    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)

    def fetch(mode: int, max_records: int) -> Any:
        resp = a.client.call(ApiKey.SHARE_FETCH, 2, group_id=GROUP, member_id="member-a",
                             share_session_epoch=a.epoch, max_wait=0, min_bytes=1,
                             max_records=max_records, batch_size=500, share_acquire_mode=mode,
                             is_renew_ack=False,
                             topics=[{"topic_id": tid, "partitions": [
                                 {"partition_index": 0, "acknowledgement_batches": []}]}],
                             forgotten_topics_data=[])
        a.epoch += 1
        return resp

    try:
        fetch(0, 10)
        p = Producer({"bootstrap.servers": boot, "linger.ms": 200})
        for i in range(10):
            p.produce("t", value=b"%d" % i, partition=0)
        assert p.flush(10) == 0
        assert acquired(fetch(1, 3)) == [(0, 2, 1)]
        assert acquired(fetch(0, 3)) == [(3, 9, 1)]  # the rest of the batch
        resp = a.client.call(ApiKey.SHARE_ACKNOWLEDGE, 2, group_id=GROUP, member_id="member-a",
                             share_session_epoch=a.epoch, is_renew_ack=True, topics=[
                                 {"topic_id": tid, "partitions": [{"partition_index": 0,
                                  "acknowledgement_batches": [{"first_offset": 0,
                                                               "last_offset": 9,
                                                               "acknowledge_types": [4]}]}]}])
        a.epoch += 1
        assert resp.error_code == 0 and part(resp).error_code == 0
        assert resp.acquisition_lock_timeout.total_seconds() * 1000 == LOCK_MS
        assert part(a.acknowledge(0, [(0, 9, 1)])).error_code == 0
        assert describe(admin)[0] == (10, 0)
    finally:
        a.close()
        admin.close()


def test_a_damaged_share_state_log_stops_the_start_with_one_line(tmp_path: Path) -> None:
    from groupcoord.storage import open_log

    data = tmp_path / "data"
    (data / "share-state").mkdir(parents=True)
    log = open_log("sqlite", data / "share-state")
    log.append(0, [(b"\x00\x00\x00\x01g" + bytes(20), b"\x00\x07not a share state")])
    log.close()
    done = subprocess.run([*GROUPCOORD, "serve", "--port", "0", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    err = done.stderr.strip().splitlines()
    assert err[-1].startswith("error: cannot start: ") and "share-state" in err[-1]
    assert "offset 1" in err[-1] and "Traceback" not in done.stderr


def test_read_committed_share_groups_skip_open_and_aborted_transactions(cluster: Cluster) -> None:
    """``share.isolation.level=read_committed``: nothing at or past the last stable offset is
    acquired, an aborted transaction's records are archived, never delivered; control batches
    are never delivered at either level."""
    from .test_partition_transactions import batch as txn_batch

    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    r = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=[{
        "resource_type": 32, "resource_name": GROUP, "configs": [
            {"name": "share.isolation.level", "config_operation": 0,
             "value": "read_committed"}]}])
    assert r.responses[0].error_code == 0, r
    committed = Member(boot, "member-rc", tid)
    other_group = Member(boot, "member-ru", tid)

    def fetch_ru() -> Any:
        resp = other_group.client.call(
            ApiKey.SHARE_FETCH, 1, group_id="sg-ru", member_id="member-ru",
            share_session_epoch=other_group.epoch, max_wait=0, min_bytes=1, max_records=500,
            batch_size=500, topics=[{"topic_id": tid, "partitions": [
                {"partition_index": 0, "acknowledgement_batches": []}]}],
            forgotten_topics_data=[])
        other_group.epoch += 1
        return resp

    def append(data: bytes | None = None, abort_pid: int | None = None) -> None:
        def run() -> None:
            plog = cluster.server.registry.partition("t", 0)
            if abort_pid is None:
                assert data is not None
                plog.append(data)
            else:
                plog.append_control(abort_pid, 0, False, 0, 10)
            cluster.server.apis.share_data._wake()
        cluster._on_loop(run)

    try:
        assert acquired(committed.fetch()) == [] and acquired(fetch_ru()) == []
        append(txn_batch(2, pid=7, epoch=0, seq=0, txn=True))  # offsets 0-1, left open
        append(txn_batch(1))  # offset 2
        assert acquired(committed.fetch()) == []  # the last stable offset is 0
        append(abort_pid=7)  # offset 3: the abort marker
        assert acquired(committed.fetch()) == [(2, 2, 1)]
        assert part(committed.acknowledge(0, [(2, 2, 1)])).error_code == 0
        assert describe(admin)[0] == (4, 0)
        # read_uncommitted (another group): the aborted records too, never the marker
        assert acquired(fetch_ru()) == [(0, 2, 1)]
    finally:
        committed.close()
        other_group.close()
        admin.close()


def test_deleting_the_share_group_deletes_its_share_state(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    mid = str(UUID(int=98))
    a = Member(boot, mid, tid)
    try:
        hb = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=GROUP, member_id=mid,
                        member_epoch=0, rack_id=None, subscribed_topic_names=["t"])
        assert hb.error_code == 0, hb
        a.fetch()
        produce(boot, 3)
        assert acquired(a.fetch()) == [(0, 2, 1)]
        assert part(a.acknowledge(0, [(0, 0, 1)], epoch=-1)).error_code == 0
        assert describe(admin)[0] == (1, 2)
        hb = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=GROUP, member_id=mid,
                        member_epoch=-1, rack_id=None, subscribed_topic_names=None)
        assert hb.error_code == 0, hb
        r = admin.call(ApiKey.DELETE_GROUPS, 2, groups_names=[GROUP])
        assert r.results[0].error_code == 0, r
        assert describe(admin) == {}
    finally:
        a.close()
        admin.close()
    cluster.restart()  # the tombstone is in the share-state log
    with KafkaClient(boot) as admin:
        assert describe(admin) == {}


def test_deleting_a_topic_deletes_its_share_state(cluster: Cluster) -> None:
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    old_id = topic_id(admin)
    a = Member(boot, "member-a", old_id)
    try:
        a.fetch()
        produce(boot, 2)
        assert acquired(a.fetch()) == [(0, 1, 1)]
        shares = cluster._on_loop(lambda: cluster.server.share_partitions)
        assert any(k.topic_id == old_id for k in shares.partitions)
        r = admin.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": "t", "topic_id": UUID(int=0)}],
                       timeout=5000)
        assert r.responses[0].error_code == 0, r
        assert not any(k.topic_id == old_id for k in shares.partitions)
        # the topic made again has a new id: its share partitions start afresh
        r = admin.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": "t", "num_partitions": 1,
                                                         "replication_factor": -1}], timeout=5000)
        assert r.topics[0].error_code == 0, r
        assert describe(admin)[0] == (-1, -1)
    finally:
        a.close()
        admin.close()
    cluster.restart()
    assert not any(k.topic_id == old_id
                   for k in cluster._on_loop(lambda: cluster.server.share_partitions.partitions))


def test_an_answer_stops_at_min_bytes_and_max_bytes_zero_gives_nothing(cluster: Cluster) -> None:
    """As Kafka 4.2: with MinBytes 1 a share fetch answers with the first partition that has
    records (rotating between requests), and MaxBytes 0 acquires nothing."""
    boot = cluster.bootstrap_servers
    admin = KafkaClient(boot)
    tid = topic_id(admin)
    a = Member(boot, "member-a", tid)
    try:
        a.fetch(partitions=(0, 1))
        produce(boot, 4, partition=0)
        produce(boot, 4, partition=1)
        first = a.fetch()
        assert sum(1 for t in first.responses for p in t.partitions if p.acquired_records) == 1
        second = a.fetch()
        got = {p.partition_index for r in (first, second) for t in r.responses
               for p in t.partitions if p.acquired_records}
        assert got == {0, 1}
    finally:
        a.close()
        admin.close()
    c = Member(boot, "member-c", tid)
    try:  # a's records are available again (its connection closed)

        def fetch(max_bytes: int) -> Any:
            resp = c.client.call(ApiKey.SHARE_FETCH, 1, group_id=GROUP, member_id="member-c",
                                 share_session_epoch=c.epoch, max_wait=2000, min_bytes=1,
                                 max_bytes=max_bytes, max_records=10, batch_size=10,
                                 topics=[{"topic_id": tid, "partitions": [
                                     {"partition_index": 0, "acknowledgement_batches": []}]}],
                                 forgotten_topics_data=[])
            c.epoch += 1
            return resp

        assert acquired(fetch(0)) == []
        assert acquired(fetch(1 << 20)) == [(0, 3, 2)]
    finally:
        c.close()
