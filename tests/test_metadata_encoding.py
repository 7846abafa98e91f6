"""The hand-written Metadata topics encoder (``protocol/fast.py``, what lets a 100,000-partition
topic be described in well under a second) gives exactly kio's bytes, for every version the
broker serves."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from groupcoord.protocol.codec import build, encode_entity, response_class
from groupcoord.protocol.fast import UniformPartitions, metadata_response

NO_OPS = -(2**31)


def _topics(rng: random.Random, version: int) -> list[dict[str, Any]]:
    topics: list[dict[str, Any]] = []
    for i in range(rng.randint(0, 4)):
        n = rng.choice([0, 1, 3, 200])
        leaders = rng.choice([[0], [0, 1, 2]])
        topics.append({
            "error_code": rng.choice([0, 0, 3, 17]),
            "name": rng.choice([f"t{i}", "é" * 3 + str(i), "x" * 200]),
            "topic_id": rng.choice([None, uuid.uuid4()]),
            "is_internal": rng.random() < 0.2,
            "partitions": [{"error_code": rng.choice([0, 0, 5]), "partition_index": p,
                            "leader_id": (lead := rng.choice(leaders)),
                            "leader_epoch": rng.choice([0, 3]), "replica_nodes": (lead,),
                            "isr_nodes": rng.choice([(lead,), ()]),
                            "offline_replicas": rng.choice([(), (1,)])} for p in range(n)],
            "topic_authorized_operations": rng.choice([NO_OPS, 0x1F8])})
    if rng.random() < 0.5:  # the single-broker shape, encoded without a dict per partition
        topics.append({"error_code": 0, "name": "uniform", "topic_id": uuid.uuid4(),
                       "is_internal": False, "topic_authorized_operations": NO_OPS,
                       "partitions": UniformPartitions(rng.choice([0, 1, 1000]), 0, 5)})
    if version >= 12 and rng.random() < 0.5:  # an unknown topic id: no name
        topics.append({"error_code": 100, "name": None, "topic_id": uuid.uuid4(),
                       "partitions": ()})
    return topics


@pytest.mark.parametrize("version", range(14))
def test_metadata_topics_encoded_by_hand_equal_kio(version: int) -> None:
    cls = response_class(3, version)
    assert cls is not None
    rng = random.Random(version)
    for _ in range(30):
        rest = {"throttle_time": rng.choice([0, 7]),
                "brokers": [{"node_id": b, "host": f"h{b}", "port": 9092 + b,
                             "rack": rng.choice([None, "r"])} for b in range(rng.randint(1, 3))],
                "cluster_id": "cluster", "controller_id": 0,
                "cluster_authorized_operations": NO_OPS, "error_code": 0}
        topics = _topics(rng, version)
        expected = encode_entity(build(cls, topics=topics, **rest))
        got = metadata_response(version, encode_entity(build(cls, topics=(), **rest)), topics)
        assert got == expected


def test_a_topic_without_a_name_before_v12_is_left_to_kio() -> None:
    cls = response_class(3, 11)
    assert cls is not None
    empty = encode_entity(build(cls, topics=(), throttle_time=0, brokers=(), cluster_id=None,
                                controller_id=0))
    assert metadata_response(11, empty, [{"error_code": 100, "name": None, "topic_id": None,
                                          "partitions": ()}]) is None


def test_uniform_partitions_are_the_dicts_they_stand_for() -> None:
    parts = UniformPartitions(3, 2, 7)
    assert len(parts) == 3 and parts[-1]["partition_index"] == 2
    assert list(parts) == [{"error_code": 0, "partition_index": p, "leader_id": 2,
                            "leader_epoch": 7, "replica_nodes": (2,), "isr_nodes": (2,),
                            "offline_replicas": ()} for p in range(3)]
    assert [p["partition_index"] for p in parts[1:]] == [1, 2]
    with pytest.raises(IndexError):
        parts[3]
