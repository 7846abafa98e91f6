"""``groupcoord transactions list|describe`` against an embedded server (KIP-664), and the
hand-read DescribeTransactions response (``protocol/describe_transactions.py``): an id with no
transaction yet has start time -1, which kio's reader refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.testing import Cluster, embedded_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={"out": 2}) as c:
        with KafkaClient(c.bootstrap_servers) as k:
            a = k.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id="app-a",
                       transaction_timeout=60_000)
            k.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id="app-b",
                   transaction_timeout=30_000)
            r = k.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id="app-a",
                       v3_and_below_producer_id=a.producer_id, v3_and_below_producer_epoch=0,
                       v3_and_below_topics=[{"name": "out", "partitions": [1, 0]}])
            assert all(p.partition_error_code == 0 for t in r.results_by_topic_v3_and_below
                       for p in t.results_by_partition)
        yield c


def gc(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupcoord", "transactions", *args,
                           "--bootstrap-server", cluster.bootstrap_servers],
                          capture_output=True, text=True, timeout=60)


def test_list_with_filters(cluster: Cluster) -> None:
    p = gc(cluster, "list", "--json")
    assert p.returncode == 0, p.stderr
    assert [(t["transactional_id"], t["state"]) for t in json.loads(p.stdout)] == [
        ("app-a", "Ongoing"), ("app-b", "Empty")]
    p = gc(cluster, "list", "--state", "Ongoing", "--state", "Bogus")
    assert p.returncode == 0 and "app-a" in p.stdout and "app-b" not in p.stdout
    assert "'Bogus' is not a transaction state" in p.stderr
    p = gc(cluster, "list", "--pattern", ".*-b", "--json")
    assert [t["transactional_id"] for t in json.loads(p.stdout)] == ["app-b"]
    p = gc(cluster, "list", "--duration-ms", "3600000", "--json")
    assert json.loads(p.stdout) == []
    p = gc(cluster, "list", "--pattern", "(")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a regular expression" in p.stderr


def test_describe_shows_the_producer_state_and_partitions(cluster: Cluster) -> None:
    p = gc(cluster, "describe", "app-a", "app-b", "--json")
    assert p.returncode == 0, p.stderr
    a, b = json.loads(p.stdout)
    assert (a["state"], a["producer_epoch"], a["timeout_ms"], a["partitions"]) == (
        "Ongoing", 0, 60_000, ["out-0", "out-1"])
    assert a["start_time_ms"] > 0 and a["duration_ms"] >= 0
    assert (b["state"], b["timeout_ms"], b["start_time_ms"], b["partitions"]) == (
        "Empty", 30_000, None, [])
    p = gc(cluster, "describe", "nobody")
    assert p.returncode == 1 and "nobody: TRANSACTIONAL_ID_NOT_FOUND" in p.stderr


def test_the_client_reads_a_start_time_of_minus_one(cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        (b,) = c.describe_transactions(["app-b"])
    assert (b.error_code, b.state, b.start_time_ms, b.topics) == (0, "Empty", -1, ())
