"""The transaction coordinator over the wire (``server/apis/transactions.py``): raw protocol
requests against an embedded server, the markers recorded by fakes of exactly the seam
``server/transaction_markers.py`` calls (``PartitionLog.append_control``,
``CoordinatorRuntime.complete_transaction``).

- a transaction commits: InitProducerId, AddPartitionsToTxn (an unknown partition refuses the
  whole request: UNKNOWN_TOPIC_OR_PARTITION and OPERATION_NOT_ATTEMPTED), AddOffsetsToTxn,
  EndTxn; every partition gets a COMMIT marker at the transaction's epoch and the group's offsets
  are completed; Describe/ListTransactions show it;
- a second producer of the id fences the first: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH for v1);
- a transaction past its ``transaction.timeout.ms`` is aborted by the coordinator, epoch bumped;
  an id idle for ``transactional.id.expiration.ms`` is removed (not while a transaction is open);
- the markers fail, EndTxn is answered, the transaction stays PrepareCommit; after a restart
  the markers are written again and it completes (CompleteCommit);
- the seam itself: every partition and group of a job, a partition gone is skipped, a failure
  names its target;
- control-plane faults: errors injected on AddPartitionsToTxn (every partition) and EndTxn, a
  transaction expired now, the transaction coordinator moved to another broker (the old one
  answers NOT_COORDINATOR, FindCoordinator names the new one, whose markers carry the next
  coordinator epoch).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.versions import ApiKey
from groupcoord.server import app
from groupcoord.server.transaction_markers import MarkerError, TransactionMarkers
from groupcoord.testing import Cluster, ControlError, embedded_cluster
from groupcoord.transactions.coordinator import MarkerJob


class FakePartition:
    """``PartitionLog.append_control`` as the seam calls it."""

    def __init__(self, fail: list[bool]) -> None:
        self.markers: list[tuple[int, int, bool, int]] = []
        self.fail = fail

    def append_control(self, producer_id: int, producer_epoch: int, commit: bool,
                       coordinator_epoch: int, timestamp_ms: int) -> int:
        if self.fail and self.fail[0]:
            raise OSError("disk full")
        self.markers.append((producer_id, producer_epoch, commit, coordinator_epoch))
        return len(self.markers) - 1


class FakeGroups:
    """``CoordinatorRuntime.complete_transaction`` as the seam calls it."""

    def __init__(self) -> None:
        self.completed: list[tuple[str, int, int, bool]] = []
        self.coordinator_epochs: list[int] = []

    def complete_transaction(self, group_id: str, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int = -1) -> int:
        self.completed.append((group_id, producer_id, producer_epoch, commit))
        self.coordinator_epochs.append(coordinator_epoch)
        return 0


class Fakes:
    def __init__(self) -> None:
        self.fail = [False]
        self.partitions: dict[tuple[str, int], FakePartition] = {}
        self.groups = FakeGroups()
        self.topics: dict[str, int] = {}

    def partition(self, topic: str, index: int) -> FakePartition | None:
        if not 0 <= index < self.topics.get(topic, 0):
            return None
        return self.partitions.setdefault((topic, index), FakePartition(self.fail))

    def install(self, cluster: Cluster) -> None:
        def put() -> None:
            cluster.server.transactions.markers = TransactionMarkers(self.partition, self.groups)
        cluster._on_loop(put)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with embedded_cluster(topics={"out": 3, "other": 1}) as c:
        yield c


@pytest.fixture
def fakes(cluster: Cluster) -> Fakes:
    f = Fakes()
    f.topics = {"out": 3, "other": 1}
    f.install(cluster)
    return f


def init(c: KafkaClient, tid: str, timeout_ms: int = 60_000, version: int = 5) -> Any:
    r = c.call(ApiKey.INIT_PRODUCER_ID, version, transactional_id=tid,
               transaction_timeout=timeout_ms)
    assert r.error_code == E.none, r
    return r


def add_partitions(c: KafkaClient, tid: str, pid: int, epoch: int,
                   topics: dict[str, list[int]], version: int = 3) -> dict[tuple[str, int], int]:
    r = c.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, v3_and_below_transactional_id=tid,
               v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
               v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
    return {(t.name, int(p.partition_index)): int(p.partition_error_code)
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(c: KafkaClient, tid: str, pid: int, epoch: int, commit: bool,
            version: int = 3) -> int:
    r = c.call(ApiKey.END_TXN, version, transactional_id=tid, producer_id=pid,
               producer_epoch=epoch, committed=commit)
    return int(r.error_code)


def describe(c: KafkaClient, *tids: str) -> list[Any]:
    return list(c.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=tids).transaction_states)


def test_a_transaction_commits_with_markers_on_every_partition_and_group(
        cluster: Cluster, fakes: Fakes) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        r = init(c, "tx-a")
        pid, epoch = int(r.producer_id), int(r.producer_epoch)
        refused = add_partitions(c, "tx-a", pid, epoch, {"out": [0, 1], "nope": [0]})
        assert refused == {("out", 0): E.operation_not_attempted,
                           ("out", 1): E.operation_not_attempted,
                           ("nope", 0): E.unknown_topic_or_partition}
        assert add_partitions(c, "tx-a", pid, epoch, {"out": [0, 2], "other": [0]}) == {
            ("out", 0): 0, ("out", 2): 0, ("other", 0): 0}
        r = c.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="tx-a", producer_id=pid,
                   producer_epoch=epoch, group_id="g1")
        assert r.error_code == E.none
        (d,) = describe(c, "tx-a")
        assert (d.error_code, d.transaction_state, d.producer_id) == (0, "Ongoing", pid)
        assert sorted((t.topic, sorted(t.partitions)) for t in d.topics) == [
            ("other", [0]), ("out", [0, 2])]
        listed = c.call(ApiKey.LIST_TRANSACTIONS, 1, state_filters=["Ongoing"],
                        producer_id_filters=(), duration_filter=-1)
        assert [t.transactional_id for t in listed.transaction_states] == ["tx-a"]
        assert end_txn(c, "tx-a", pid, epoch, True) == E.none
        (d,) = describe(c, "tx-a")
        assert (d.transaction_state, d.topics) == ("CompleteCommit", ())
    marked = {tp: p.markers for tp, p in fakes.partitions.items()}
    assert set(marked) == {("out", 0), ("out", 2), ("other", 0)}
    for markers in marked.values():
        ((m_pid, m_epoch, commit, coordinator_epoch),) = markers
        assert (m_pid, m_epoch, commit) == (pid, epoch, True) and coordinator_epoch >= 1
    assert fakes.groups.completed == [("g1", pid, epoch, True)]
    assert fakes.groups.coordinator_epochs == [1]


def test_a_second_producer_fences_the_first_and_aborts_its_transaction(
        cluster: Cluster, fakes: Fakes) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        a = init(c, "tx-z")
        pid, old = int(a.producer_id), int(a.producer_epoch)
        assert add_partitions(c, "tx-z", pid, old, {"out": [1]}) == {("out", 1): 0}
        b = init(c, "tx-z")
        assert (int(b.producer_id), int(b.producer_epoch)) == (pid, old + 2)
        assert fakes.partitions[("out", 1)].markers == [(pid, old + 1, False, 1)]
        assert add_partitions(c, "tx-z", pid, old, {"out": [1]}) == {
            ("out", 1): E.producer_fenced}
        assert add_partitions(c, "tx-z", pid, old, {"out": [1]}, version=1) == {
            ("out", 1): E.invalid_producer_epoch}
        assert end_txn(c, "tx-z", pid, old, True) == E.producer_fenced
        assert end_txn(c, "tx-z", pid, old, True, version=1) == E.invalid_producer_epoch
        zombie = c.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id="tx-z",
                        transaction_timeout=60_000, producer_id=pid, producer_epoch=old)
        assert zombie.error_code == E.producer_fenced
        assert end_txn(c, "tx-z", pid + 1, old + 2, True) == E.invalid_producer_id_mapping
        assert end_txn(c, "tx-z", pid, old + 2, True) == E.invalid_txn_state  # nothing open


def test_a_timed_out_transaction_is_aborted_by_the_coordinator(
        cluster: Cluster, fakes: Fakes) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        r = init(c, "tx-t", timeout_ms=300)
        pid, epoch = int(r.producer_id), int(r.producer_epoch)
        assert add_partitions(c, "tx-t", pid, epoch, {"out": [0]}) == {("out", 0): 0}
        deadline = time.monotonic() + 10
        while describe(c, "tx-t")[0].transaction_state != "CompleteAbort":
            assert time.monotonic() < deadline, describe(c, "tx-t")
            time.sleep(0.05)
        (d,) = describe(c, "tx-t")
        assert d.producer_epoch == epoch + 1
        assert fakes.partitions[("out", 0)].markers == [(pid, epoch + 1, False, 1)]
        assert end_txn(c, "tx-t", pid, epoch, True) == E.producer_fenced
        # KIP-588: the producer recovers with its old epoch and gets the bumped one
        again = c.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id="tx-t",
                       transaction_timeout=300, producer_id=pid, producer_epoch=epoch)
        assert (again.error_code, int(again.producer_epoch)) == (E.none, epoch + 1)


def test_a_transaction_prepared_before_a_restart_completes_after_it(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = Fakes()
    fakes.topics = {"out": 3}
    fakes.fail[0] = True
    fakes.install(cluster)
    with KafkaClient(cluster.bootstrap_servers) as c:
        r = init(c, "tx-r")
        pid, epoch = int(r.producer_id), int(r.producer_epoch)
        assert add_partitions(c, "tx-r", pid, epoch, {"out": [0, 1]}) == {
            ("out", 0): 0, ("out", 1): 0}
        assert end_txn(c, "tx-r", pid, epoch, True) == E.none  # PrepareCommit is durable
        assert describe(c, "tx-r")[0].transaction_state == "PrepareCommit"
        # meanwhile the next transaction waits for this one to complete
        assert add_partitions(c, "tx-r", pid, epoch, {"out": [2]}) == {
            ("out", 2): E.concurrent_transactions}
    assert fakes.partitions[("out", 0)].markers == []
    after = Fakes()
    after.topics = {"out": 3}
    # the restarted server's seam goes to fakes that work (from its load on)
    monkeypatch.setattr(app, "TransactionMarkers",
                        lambda partition, groups: TransactionMarkers(after.partition, after.groups))
    cluster.restart()
    with KafkaClient(cluster.bootstrap_servers) as c:
        (d,) = describe(c, "tx-r")
        assert (d.transaction_state, d.producer_epoch) == ("CompleteCommit", epoch)
    for tp in (("out", 0), ("out", 1)):
        assert after.partitions[tp].markers == [(pid, epoch, True, 2)]  # the next coordinator epoch


def test_the_seam_writes_every_partition_and_group_and_names_a_failure() -> None:
    fakes = Fakes()
    fakes.topics = {"a": 2}
    markers = TransactionMarkers(fakes.partition, fakes.groups)
    job = MarkerJob("t", 7, 3, False, 4, (("a", 0), ("a", 1), ("gone", 0)), ("g1", "g2"))
    markers.write(job, 1000)
    assert fakes.partitions[("a", 0)].markers == [(7, 3, False, 4)]
    assert fakes.partitions[("a", 1)].markers == [(7, 3, False, 4)]
    assert fakes.groups.completed == [("g1", 7, 3, False), ("g2", 7, 3, False)]
    fakes.fail[0] = True
    with pytest.raises(MarkerError, match="a-0"):
        markers.write(job, 1001)


def test_api_versions_advertises_the_transaction_apis_and_transaction_version_1(
        cluster: Cluster) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        r = c.call(ApiKey.API_VERSIONS, 3, client_software_name="t",
                   client_software_version="1")
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in r.api_keys}
    assert ranges[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 3)
    assert ranges[ApiKey.END_TXN] == (0, 3)  # v5 (the epoch bump of transaction version 2) not
    assert ranges[ApiKey.DESCRIBE_TRANSACTIONS] == (0, 0)
    assert ranges[ApiKey.LIST_TRANSACTIONS] == (0, 2)
    assert [(f.name, int(f.min_version), int(f.max_version)) for f in r.supported_features] == [
        ("transaction.version", 1, 1)]
    assert [(f.name, int(f.max_version_level)) for f in r.finalized_features] == [
        ("transaction.version", 1)]


def test_control_plane_faults_for_transactions(cluster: Cluster, fakes: Fakes) -> None:
    with KafkaClient(cluster.bootstrap_servers) as c:
        r = init(c, "tx-f")
        pid, epoch = int(r.producer_id), int(r.producer_epoch)
        cluster.control.inject_error("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS")
        assert add_partitions(c, "tx-f", pid, epoch, {"out": [0, 1]}) == {
            ("out", 0): E.concurrent_transactions, ("out", 1): E.concurrent_transactions}
        assert add_partitions(c, "tx-f", pid, epoch, {"out": [0]}) == {("out", 0): 0}
        cluster.control.inject_error("EndTxn", "COORDINATOR_NOT_AVAILABLE")
        assert end_txn(c, "tx-f", pid, epoch, True) == E.coordinator_not_available
        assert describe(c, "tx-f")[0].transaction_state == "Ongoing"  # never reached it
        after = cluster.control.expire_transaction("tx-f")
        assert after == {"transactional_id": "tx-f", "state": "CompleteAbort",
                         "producer_id": pid, "producer_epoch": epoch + 1}
        assert fakes.partitions[("out", 0)].markers == [(pid, epoch + 1, False, 1)]
        assert end_txn(c, "tx-f", pid, epoch, True) == E.producer_fenced
        with pytest.raises(ControlError, match="no open transaction"):
            cluster.control.expire_transaction("tx-f")


def test_moving_the_transaction_coordinator_between_brokers() -> None:
    with embedded_cluster(topics={"out": 1}, brokers=3) as cluster:
        fakes = Fakes()
        fakes.topics = {"out": 1}
        fakes.install(cluster)
        tid = "tx-moving"
        with KafkaClient(cluster.bootstrap_servers.split(",")[0]) as c:
            r = c.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
            node = int(r.coordinators[0].node_id)
            addresses = cluster.bootstrap_servers.split(",")
        with KafkaClient(addresses[node]) as coord:
            r = init(coord, tid)
            pid, epoch = int(r.producer_id), int(r.producer_epoch)
            assert add_partitions(coord, tid, pid, epoch, {"out": [0]}) == {("out", 0): 0}
            to = cluster.control.move_transaction_coordinator(tid)
            assert to != node
            assert end_txn(coord, tid, pid, epoch, True) == E.not_coordinator
        with KafkaClient(addresses[0]) as c:
            r = c.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
            assert int(r.coordinators[0].node_id) == to
        with KafkaClient(addresses[to]) as coord:
            assert end_txn(coord, tid, pid, epoch, True) == E.none
            # EndTxn answers once PrepareCommit is durable; the client's next request finds
            # the markers written and the transaction complete
            assert describe(coord, tid)[0].transaction_state == "CompleteCommit"
        # the markers carry the new coordinator's epoch: the partition's second load
        assert fakes.partitions[("out", 0)].markers == [(pid, epoch, True, 2)]


def test_the_seam_skips_a_target_past_the_transaction_and_retries_a_group_not_ready() -> None:
    class Stale(Exception):
        code = int(E.invalid_producer_epoch)

    class StalePartition(FakePartition):
        def append_control(self, producer_id: int, producer_epoch: int, commit: bool,
                           coordinator_epoch: int, timestamp_ms: int) -> int:
            raise Stale("newer epoch here")

    class Loading(FakeGroups):
        def complete_transaction(self, group_id: str, producer_id: int, producer_epoch: int,
                                 commit: bool, coordinator_epoch: int = -1) -> int:
            return int(E.coordinator_load_in_progress)

    fakes = Fakes()
    fakes.topics = {"a": 2}
    fakes.partitions[("a", 0)] = StalePartition(fakes.fail)
    job = MarkerJob("t", 7, 3, True, 4, (("a", 0), ("a", 1)), ())
    markers = TransactionMarkers(fakes.partition, fakes.groups)
    markers.write(job, 1)  # a-0 is past it: skipped; a-1 written
    assert fakes.partitions[("a", 1)].markers == [(7, 3, True, 4)] and markers.written == 1
    loading = TransactionMarkers(fakes.partition, Loading())
    with pytest.raises(MarkerError, match="COORDINATOR_LOAD_IN_PROGRESS"):
        loading.write(MarkerJob("t", 7, 3, True, 4, (), ("g",)), 2)


def test_the_real_seam_writes_a_marker_on_each_partition(cluster: Cluster) -> None:
    """No fakes: the server's own partitions (``PartitionLog.append_control``) and groups."""
    with KafkaClient(cluster.bootstrap_servers) as c:
        def end_offsets() -> list[int]:
            r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
                {"name": "out", "partitions": [{"partition_index": p, "timestamp": -1}
                                               for p in range(3)]}])
            return [int(p.offset) for p in r.topics[0].partitions]

        before = end_offsets()
        r = init(c, "tx-real")
        pid, epoch = int(r.producer_id), int(r.producer_epoch)
        assert add_partitions(c, "tx-real", pid, epoch, {"out": [0, 2]}) == {
            ("out", 0): 0, ("out", 2): 0}
        r = c.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="tx-real", producer_id=pid,
                   producer_epoch=epoch, group_id="g-real")
        assert r.error_code == E.none
        assert end_txn(c, "tx-real", pid, epoch, False) == E.none
        assert describe(c, "tx-real")[0].transaction_state == "CompleteAbort"
        after = end_offsets()
    # an abort marker (a control batch of one record) on partitions 0 and 2, none on 1
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 0, 1]


def test_a_broker_down_hands_its_transaction_coordinators_over() -> None:
    with embedded_cluster(topics={"out": 1}, brokers=3) as cluster:
        fakes = Fakes()
        fakes.topics = {"out": 1}
        fakes.install(cluster)
        tid = "tx-down"
        addresses = cluster.bootstrap_servers.split(",")
        with KafkaClient(addresses[0]) as c:
            r = c.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
            node = int(r.coordinators[0].node_id)
        with KafkaClient(addresses[node]) as coord:
            r = init(coord, tid)
            pid, epoch = int(r.producer_id), int(r.producer_epoch)
            assert add_partitions(coord, tid, pid, epoch, {"out": [0]}) == {("out", 0): 0}
        cluster.control.broker_down(node)
        other = next(b for b in range(3) if b != node)
        with KafkaClient(addresses[other]) as c:
            r = c.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
            new = int(r.coordinators[0].node_id)
        assert new != node
        with KafkaClient(addresses[new]) as coord:
            assert end_txn(coord, tid, pid, epoch, True) == E.none
            assert describe(coord, tid)[0].transaction_state == "CompleteCommit"
        assert fakes.partitions[("out", 0)].markers == [(pid, epoch, True, 2)]  # taken over


def test_an_idle_transactional_id_expires() -> None:
    config = {"transactional.id.expiration.ms": "300"}
    with embedded_cluster(topics={"out": 1}, config=config) as cluster, \
            KafkaClient(cluster.bootstrap_servers) as c:
        r = init(c, "tx-idle")
        pid = int(r.producer_id)
        assert add_partitions(c, "tx-idle", pid, 0, {"out": [0]}) == {("out", 0): 0}
        time.sleep(0.5)  # an open transaction does not expire (its timeout is 60 s)
        assert describe(c, "tx-idle")[0].transaction_state == "Ongoing"
        assert end_txn(c, "tx-idle", pid, 0, False) == E.none
        deadline = time.monotonic() + 10
        while describe(c, "tx-idle")[0].error_code != E.transactional_id_not_found:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the id starts again as a new producer: a new producer id at epoch 0
        again = init(c, "tx-idle")
        assert int(again.producer_id) != pid and int(again.producer_epoch) == 0
