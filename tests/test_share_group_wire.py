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
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess

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
