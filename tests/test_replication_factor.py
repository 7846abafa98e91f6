"""Replication factor as Kafka answers it, for a test double of N brokers (``--brokers N``): a
topic may be created with a replication factor from 1 to the number of brokers (above:
INVALID_REPLICATION_FACTOR); it is recorded (``topics.json``, kept over restarts) and Metadata
shows that many replicas per partition, the leader first, all in sync unless a broker is down
(one copy of the data serves them all). librdkafka's 0103 creates its topics with replication
factor 3 against 3 brokers."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.topic_registry import TopicRegistry
from groupcoord.testing import embedded_cluster


def create(bootstrap: str, name: str, rf: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 2, rf)])[name].result(timeout=10)


def test_three_brokers_accept_replication_factor_up_to_three() -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    with embedded_cluster(brokers=3) as cluster:
        bs = cluster.bootstrap_servers
        create(bs, "rf3", 3)
        create(bs, "rf2", 2)
        with pytest.raises(KafkaException) as e:
            create(bs, "rf4", 4)
        assert e.value.args[0].code() == ErrorCode.invalid_replication_factor
        md = AdminClient({"bootstrap.servers": bs}).list_topics(timeout=10)
        assert "rf4" not in md.topics
        for name, rf in (("rf3", 3), ("rf2", 2)):
            for p in md.topics[name].partitions.values():
                assert len(p.replicas) == rf and p.replicas[0] == p.leader
                assert sorted(p.isrs) == sorted(p.replicas)
                assert len(set(p.replicas)) == rf
        down = 1 if md.topics["rf3"].partitions[0].leader != 1 else 2
        cluster.control.broker_down(down)
        with KafkaClient(bs) as c:
            r = c.call(ApiKey.METADATA, 12, topics=[{"name": "rf3", "topic_id": None}],
                       allow_auto_topic_creation=False, include_topic_authorized_operations=False)
            for p in r.topics[0].partitions:
                assert len(p.replica_nodes) == 3 and p.leader_id != down
                assert down not in p.isr_nodes and tuple(p.offline_replicas) == (down,)


def test_one_broker_refuses_replication_factor_two(tmp_path: Path) -> None:
    with embedded_cluster() as cluster, KafkaClient(cluster.bootstrap_servers) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": "rf2", "num_partitions": 1, "replication_factor": 2},
            {"name": "rf1", "num_partitions": 1, "replication_factor": 1}])
        assert [t.error_code for t in r.topics] == [ErrorCode.invalid_replication_factor, 0]
        assert r.topics[1].replication_factor == 1


def test_replication_factor_survives_a_restart(tmp_path: Path) -> None:
    registry = TopicRegistry(tmp_path)
    registry.num_brokers = 3
    registry.create("t", 1, 3)
    registry.close(clean=True)
    again = TopicRegistry(tmp_path)
    topic = again.get("t")
    assert topic is not None and topic.replication_factor == 3
