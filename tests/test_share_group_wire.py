"""Share groups over the wire (KIP-932) with librdkafka's share consumer (confluent-kafka
2.16.1's ``ShareConsumer``): consumers join a share group through ShareGroupHeartbeat v1,
heartbeat, and receive and acknowledge their assignment; more consumers than partitions all get
a partition (a partition shared by several members). ShareGroupDescribe, ListGroups' SHARE type
and the other group types' answers for a share group id are checked over the wire too.

Records delivered end to end need ShareFetch (the share partitions); these tests stop at the
group: what each client acknowledged it was assigned (librdkafka's own debug log, read through
the client's ``logger``) and what the coordinator describes."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess

FENCED_MEMBER_EPOCH = int(ErrorCode.fenced_member_epoch)

ck = pytest.importorskip("confluent_kafka")
ShareConsumer = pytest.importorskip("confluent_kafka").ShareConsumer

#: A liveness bound for the group to settle (heartbeats every 500 ms with the test server's
#: group configs), not a timing figure.
SETTLE_S = 30.0

_ACKED = re.compile(r'Target assignment acked, new current assignment\s+"([^"]*)"')


class _Acks(logging.Handler):
    """The last assignment the client acknowledged, from librdkafka's ``cgrp`` debug log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        m = _ACKED.search(record.getMessage())
        if m:
            self.last = m.group(1)


def _share_consumer(server: ServerProcess, group: str, name: str) -> tuple[Any, _Acks]:
    acks = _Acks()
    logger = logging.getLogger(f"share-wire.{name}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.handlers = [acks]
    sc = ShareConsumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                        "client.id": name, "debug": "cgrp", "logger": logger})
    return sc, acks


def _topic(server: ServerProcess, partitions: int) -> str:
    topic = f"share-{uuid.uuid4().hex[:8]}"
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r
    return topic


def _describe(server: ServerProcess, group: str) -> Any:
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                   include_authorized_operations=False)
    return r.groups[0]


def _by_client(d: Any) -> dict[str, list[int]]:
    """The described members' partitions by client id."""
    return {m.client_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
            for m in d.members}


def _partitions(acked: str | None) -> list[int]:
    """Partitions of librdkafka's printed list ``topic(id)[p],topic(id)[q]``."""
    return [int(p) for p in re.findall(r"\[(\d+)\]", acked or "")]


def test_four_share_consumers_on_two_partitions_all_get_a_partition(
        gc_server: ServerProcess) -> None:
    topic = _topic(gc_server, 2)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    consumers = [_share_consumer(gc_server, group, f"share-{i}") for i in range(4)]
    try:
        for sc, _ in consumers:
            sc.subscribe([topic])
        deadline = time.monotonic() + SETTLE_S
        d = None
        while time.monotonic() < deadline:
            for sc, _ in consumers:
                sc.poll(0.1)  # serves the client's logs (and its heartbeats run in librdkafka)
            d = _describe(gc_server, group)
            settled = (int(d.error_code) == 0 and len(d.members) == 4
                       and all(m.member_epoch == d.assignment_epoch == d.group_epoch
                               for m in d.members)
                       and _by_client(d) == {f"share-{i}": sorted(_partitions(a.last))
                                             for i, (_, a) in enumerate(consumers)})
            if settled:
                break
        assert d is not None and int(d.error_code) == 0, d
        # the coordinator: four members, each with one partition, both partitions shared by two
        assert d.group_state == "Stable" and d.assignor_name == "simple"
        assert len(d.members) == 4, d
        held = sorted(p for m in d.members for tp in m.assignment.topic_partitions
                      for p in tp.partitions)
        assert held == [0, 0, 1, 1], d
        assert all(tp.topic_name == topic for m in d.members
                   for tp in m.assignment.topic_partitions)
        assert sorted(m.client_id for m in d.members) == [f"share-{i}" for i in range(4)]
        # each client acknowledged one partition of the topic: the one the coordinator holds
        acked = [_partitions(a.last) for _, a in consumers]
        assert _by_client(d) == {f"share-{i}": ps for i, ps in enumerate(acked)}
        assert all(len(ps) == 1 for ps in acked), acked
        assert sorted(p for ps in acked for p in ps) == [0, 0, 1, 1], acked
        assert all(topic in (a.last or "") for _, a in consumers)
        # the group id space is shared: ListGroups lists it as a share group ...
        with KafkaClient(gc_server.bootstrap) as c:
            listed = c.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["share"])
            mine = [g for g in listed.groups if g.group_id == group]
            assert [(g.group_type, g.protocol_type, g.group_state) for g in mine] == [
                ("share", "share", "Stable")]
            consumer_only = c.call(ApiKey.LIST_GROUPS, 5, states_filter=[],
                                   types_filter=["consumer"])
            assert group not in [g.group_id for g in consumer_only.groups]
            # ... and the other group types answer for it as Kafka does
            classic = c.call(ApiKey.DESCRIBE_GROUPS, 6, groups=[group],
                             include_authorized_operations=False)
            assert int(classic.groups[0].error_code) == int(ck.KafkaError.GROUP_ID_NOT_FOUND)
    finally:
        for sc, _ in consumers:
            sc.close()
    # close() leaves the group (epoch -1): the group is empty, its epoch moved on
    d = _describe(gc_server, group)
    assert int(d.error_code) == 0 and d.group_state == "Empty" and not d.members, d


def test_a_consumer_group_id_is_not_a_share_group(gc_server: ServerProcess) -> None:
    """A share consumer whose group id is a consumer group gets GROUP_ID_NOT_FOUND (Kafka's
    "Group X is not a share group."), and the consumer group is untouched."""
    topic = _topic(gc_server, 1)
    group = f"cg-{uuid.uuid4().hex[:8]}"
    c = ck.Consumer({"bootstrap.servers": gc_server.bootstrap, "group.id": group,
                     "group.protocol": "consumer"})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and not c.assignment():
            c.poll(0.1)
        assert c.assignment()
        with KafkaClient(gc_server.bootstrap) as kc:
            r = kc.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group,
                        member_id=uuid.uuid4().hex, member_epoch=0,
                        subscribed_topic_names=[topic])
            assert int(r.error_code) == int(ck.KafkaError.GROUP_ID_NOT_FOUND)
            assert r.error_message == f"Group {group} is not a share group."
            d = kc.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                        include_authorized_operations=False)
            assert int(d.groups[0].error_code) == int(ck.KafkaError.GROUP_ID_NOT_FOUND)
        assert c.assignment()
    finally:
        c.close()


def test_a_heartbeat_at_a_wrong_epoch_is_fenced_and_the_member_stays(
        gc_server: ServerProcess) -> None:
    """FENCED_MEMBER_EPOCH for an epoch ahead of the member's (or behind it, not its previous
    one) changes nothing, as in Kafka 4.x's ``throwIfShareGroupMemberEpochIsInvalid``: the member
    is still described and its next heartbeat at the right epoch is answered."""
    topic = _topic(gc_server, 2)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with KafkaClient(gc_server.bootstrap) as c:
        r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                   member_epoch=0, subscribed_topic_names=[topic])
        assert int(r.error_code) == 0, r
        epoch = int(r.member_epoch)
        for bad in (epoch + 1, epoch + 76):
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                       member_epoch=bad)
            assert int(r.error_code) == FENCED_MEMBER_EPOCH, r
        d = _describe(gc_server, group)
        assert [(m.member_id, m.member_epoch) for m in d.members] == [("m-a", epoch)]
        r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                   member_epoch=epoch)
        assert (int(r.error_code), int(r.member_epoch)) == (0, epoch), r
        c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
               member_epoch=-1)


def test_groups_list_and_describe_show_a_share_group(gc_server: ServerProcess) -> None:
    """``groupcoord groups list --type share`` and ``groups describe`` for a share group whose
    three members (share heartbeats over the wire) share a two-partition topic."""
    import json
    import subprocess

    from .conftest import GROUPCOORD

    topic = _topic(gc_server, 2)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with KafkaClient(gc_server.bootstrap) as c:
        for mid in ("m-a", "m-b", "m-c"):
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=mid,
                       member_epoch=0, subscribed_topic_names=[topic])
            assert int(r.error_code) == 0, r
        epochs = {}
        for mid in ("m-a", "m-b", "m-c"):  # everyone catches up with the last target
            d = _describe(gc_server, group)
            epoch = {m.member_id: m.member_epoch for m in d.members}[mid]
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=mid,
                       member_epoch=epoch)
            assert int(r.error_code) == 0, r
            epochs[mid] = int(r.member_epoch)

    def run(*args: str) -> Any:
        cmd = [*GROUPCOORD, *args[:2], "--bootstrap-server", gc_server.bootstrap, *args[2:],
               "--json"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    listed = run("groups", "list", "--type", "share")
    assert {"group_id": group, "type": "share", "state": "Stable",
            "protocol_type": "share"} in listed
    assert all(g["type"] == "share" for g in listed)
    [g] = run("groups", "describe", group)
    assert (g["type"], g["state"], g["assignor"], g["group_epoch"]) == ("share", "Stable",
                                                                       "simple", 3)
    assert sorted(m["member_id"] for m in g["members"]) == ["m-a", "m-b", "m-c"]
    assert all(m["member_epoch"] == 3 for m in g["members"]), g
    shared = {p["partition"]: p["members"] for p in g["partitions"] if p["topic"] == topic}
    # Kafka's sharing: each partition two members (ceil(3 / 2)), so one member has both
    assert sorted(shared) == [0, 1] and sorted(len(ms) for ms in shared.values()) == [2, 2]
    assert set(shared[0]) | set(shared[1]) == {"m-a", "m-b", "m-c"}
    with KafkaClient(gc_server.bootstrap) as c:
        for mid in epochs:
            c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=mid,
                   member_epoch=-1)


def test_a_share_group_survives_a_server_restart(tmp_path: Any) -> None:
    """Share group records are replayed on load: after a restart the group, its epochs, members
    and assignments are back, a member goes on heartbeating at its epoch, and its session
    timeout is armed again (a member that never returns expires)."""
    from .conftest import start_server

    data = tmp_path / "data"
    server = start_server(data)
    try:
        topic = _topic(server, 3)
        group = f"sg-{uuid.uuid4().hex[:8]}"
        with KafkaClient(server.bootstrap) as c:
            for mid in ("m-a", "m-b"):
                r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id=mid,
                           member_epoch=0, subscribed_topic_names=[topic])
                assert int(r.error_code) == 0, r
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                       member_epoch=1)
            assert int(r.member_epoch) == 2, r
        before = _describe(server, group)
    finally:
        server.stop()
    server = start_server(data)
    try:
        after = _describe(server, group)
        assert int(after.error_code) == 0, after
        assert (after.group_state, after.group_epoch, after.assignment_epoch) == (
            before.group_state, before.group_epoch, before.assignment_epoch)
        assert after.members == before.members
        with KafkaClient(server.bootstrap) as c:
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                       member_epoch=2)
            assert (int(r.error_code), int(r.member_epoch), r.assignment) == (0, 2, None), r
            sent = []
            deadline = time.monotonic() + SETTLE_S  # m-b's session (10 s) runs out
            while time.monotonic() < deadline and sent[-1:] != [[(0, 1, 2)]]:
                r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m-a",
                           member_epoch=int(r.member_epoch))
                assert int(r.error_code) == 0, r
                if r.assignment is not None:
                    sent.append([tuple(tp.partitions) for tp in r.assignment.topic_partitions])
                time.sleep(0.5)
            # m-b expired: m-a was sent the whole topic, once
            assert sent == [[(0, 1, 2)]], sent
            assert [m.member_id for m in _describe(server, group).members] == ["m-a"]
    finally:
        server.stop()


def test_share_heartbeats_go_to_the_groups_coordinator_of_several_brokers() -> None:
    """With several brokers, a ShareGroupHeartbeat at a broker that is not the group's
    coordinator is NOT_COORDINATOR (librdkafka then looks the coordinator up again), and at the
    coordinator it joins; a share consumer finds its way there by itself."""
    from groupcoord.testing import embedded_cluster

    with embedded_cluster(topics={"shared": 2}, brokers=3) as cl:
        addrs = cl.bootstrap_servers.split(",")
        group = f"sg-{uuid.uuid4().hex[:8]}"
        home = cl.control.coordinator_of(group)
        with KafkaClient(addrs[(home + 1) % 3]) as c:
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=group, member_id="m",
                       member_epoch=0, subscribed_topic_names=["shared"])
            assert int(r.error_code) == int(ck.KafkaError.NOT_COORDINATOR)
        sc = ShareConsumer({"bootstrap.servers": addrs[(home + 2) % 3], "group.id": group})
        try:
            sc.subscribe(["shared"])
            deadline = time.monotonic() + SETTLE_S
            members: list[Any] = []
            while time.monotonic() < deadline and not members:
                sc.poll(0.2)
                with KafkaClient(addrs[home]) as c:
                    d = c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                               include_authorized_operations=False).groups[0]
                if not d.error_code and d.members and d.members[0].member_epoch > 0:
                    members = list(d.members)
            assert len(members) == 1
            assert sorted(p for tp in members[0].assignment.topic_partitions
                          for p in tp.partitions) == [0, 1]
        finally:
            sc.close()


def test_share_group_metrics(tmp_path: Any) -> None:
    """``--metrics-port``: share groups by type and state, and their rebalances (epoch bumps)."""
    from .conftest import start_server
    from .test_server_storage import _scrape

    server = start_server(tmp_path / "data", "--metrics-port", "0")
    assert server.proc.stdout is not None
    url = server.proc.stdout.readline().split()[-1]
    k = "kafka_server_group_coordinator_metrics_"
    try:
        m = _scrape(url)
        assert m[k + 'group_count{protocol="share"}'] == 0
        assert m[k + "share_group_rebalance_count"] == 0
        topic = _topic(server, 2)
        with KafkaClient(server.bootstrap) as c:
            for gid, mid in (("sg-1", "a"), ("sg-1", "b"), ("sg-2", "c")):
                r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id=gid, member_id=mid,
                           member_epoch=0, subscribed_topic_names=[topic])
                assert int(r.error_code) == 0, r
            r = c.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="sg-2", member_id="c",
                       member_epoch=-1)
            assert int(r.error_code) == 0, r
        m = _scrape(url)
        assert m[k + 'group_count{protocol="share"}'] == 2
        assert m[k + 'share_group_count{state="stable"}'] == 1
        assert m[k + 'share_group_count{state="empty"}'] == 1
        assert m[k + "share_group_rebalance_count"] == 4  # three joins and a leave
        assert 0 < m[k + "share_group_rebalance_rate"] <= 4
    finally:
        server.stop()


def _settle(server: ServerProcess, group: str, consumers: list[tuple[Any, _Acks]],
            names: list[str]) -> Any:
    """Poll until the coordinator's view and every client's acknowledged assignment agree."""
    deadline = time.monotonic() + SETTLE_S
    d = None
    while time.monotonic() < deadline:
        for sc, _ in consumers:
            sc.poll(0.1)
        d = _describe(server, group)
        if (int(d.error_code) == 0 and len(d.members) == len(consumers)
                and all(m.member_epoch == d.assignment_epoch == d.group_epoch for m in d.members)
                and _by_client(d) == {n: sorted(_partitions(a.last))
                                      for n, (_, a) in zip(names, consumers, strict=True)}):
            return d
    raise AssertionError(f"not settled: {d}")


def test_a_share_consumer_that_closes_hands_its_partition_over(gc_server: ServerProcess) -> None:
    """Three ShareConsumers on two partitions (each partition shared by two): one closes (a
    leave heartbeat), the two left each acknowledge one partition; the group's epoch moved on
    by the leave."""
    topic = _topic(gc_server, 2)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    names = [f"churn-{i}" for i in range(3)]
    consumers = [_share_consumer(gc_server, group, n) for n in names]
    try:
        for sc, _ in consumers:
            sc.subscribe([topic])
        d = _settle(gc_server, group, consumers, names)
        # each partition shared by two (ceil(3 / 2)): one consumer has both
        assert sorted(p for ps in _by_client(d).values() for p in ps) == [0, 0, 1, 1]
        before = d.group_epoch
        gone, _ = consumers.pop(0)
        gone.close()
        d = _settle(gc_server, group, consumers, names[1:])
        assert d.group_epoch > before
        assert sorted(_by_client(d).values()) == [[0], [1]]
    finally:
        for sc, _ in consumers:
            sc.close()


def test_a_member_whose_session_expires_releases_its_records_at_once() -> None:
    """The coordinator removes a share member whose heartbeats stopped (its session timed out):
    the share partitions are told (``CoordinatorRuntime.share_member_removed``) and what it had
    acquired goes to another member at once, long before its one-minute acquisition lock,
    though the silent member's fetch connection is still open."""
    from groupcoord.testing import embedded_cluster

    from .test_share_data_wire import Member, acquired, produce, topic_id

    with embedded_cluster(topics={"t": 1}, config={
            "group.share.record.lock.duration.ms": "60000",
            "group.share.min.session.timeout.ms": "2000",
            "group.share.session.timeout.ms": "2000",
            "group.share.min.heartbeat.interval.ms": "100",
            "group.share.heartbeat.interval.ms": "500"}) as cluster:
        boot = cluster.bootstrap_servers
        admin = KafkaClient(boot)
        tid = topic_id(admin)
        a = Member(boot, "member-a", tid)
        b = Member(boot, "member-b", tid)
        try:
            epochs = {}
            for mid in ("member-a", "member-b"):
                r = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="sg", member_id=mid,
                               member_epoch=0, subscribed_topic_names=["t"])
                assert int(r.error_code) == 0, r
                epochs[mid] = int(r.member_epoch)
            a.fetch()
            produce(boot, 3)
            assert acquired(a.fetch()) == [(0, 2, 1)]
            assert acquired(b.fetch()) == []
            deadline = time.monotonic() + 20
            got: list[tuple[int, int, int]] = []
            while time.monotonic() < deadline and not got:  # b heartbeats on, a is silent
                r = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="sg",
                               member_id="member-b", member_epoch=epochs["member-b"])
                assert int(r.error_code) == 0, r
                epochs["member-b"] = int(r.member_epoch)
                got = acquired(b.fetch(wait_ms=300))
            assert got == [(0, 2, 2)]  # delivered again, a's delivery counted
            d = _describe_in(admin, "sg")
            assert [m.member_id for m in d.members] == ["member-b"]
        finally:
            a.close()
            b.close()
            admin.close()


def _describe_in(c: KafkaClient, group: str) -> Any:
    return c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[group],
                  include_authorized_operations=False).groups[0]


def test_groups_describe_shows_start_offsets_and_lag(tmp_path: Any) -> None:
    """With share partitions served, ``groups describe`` of a share group carries each
    partition's start offset and lag (DescribeShareGroupOffsets), as kafka-share-groups.sh
    --describe does."""
    import json
    import subprocess

    from groupcoord.testing import embedded_cluster

    from .conftest import GROUPCOORD
    from .test_share_data_wire import Member, acquired, produce, topic_id

    with embedded_cluster(topics={"t": 1}) as cluster:
        boot = cluster.bootstrap_servers.split(",")[0]
        admin = KafkaClient(boot)
        m = Member(boot, "member-a", topic_id(admin))
        try:
            r = admin.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, group_id="sg", member_id="member-a",
                           member_epoch=0, subscribed_topic_names=["t"])
            assert int(r.error_code) == 0, r
            m.fetch()  # the share partition starts at the log end (share.auto.offset.reset)
            produce(boot, 5)
            got = acquired(m.fetch(wait_ms=5000))
            assert got == [(0, 4, 1)]
            m.acknowledge(0, [(0, 1, 1)])  # ACCEPT 0-1: the start offset moves to 2
            p = subprocess.run([*GROUPCOORD, "groups", "describe", "--bootstrap-server", boot,
                                "sg", "--json"], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            [g] = json.loads(p.stdout)
            assert g["type"] == "share"
            assert g["partitions"] == [{"topic": "t", "partition": 0, "members": ["member-a"],
                                        "start_offset": 2, "lag": 3}]
            text = subprocess.run([*GROUPCOORD, "groups", "describe", "--bootstrap-server",
                                   boot, "sg"], capture_output=True, text=True, timeout=60)
            assert "START-OFFSET" in text.stdout and "member-a" in text.stdout
        finally:
            m.close()
            admin.close()
