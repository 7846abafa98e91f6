"""The extension APIs, InitProducerId and the connectors CLI against a real ``groupcoord serve``
(docs/wire.md).

- ApiVersions lists the extension keys (1000-1006) and InitProducerId with the table's ranges;
  an unknown version of an extension API, or an unused key of the block, closes the connection.
- Every extension API round-trips for every advertised version.
- A connect group is formed over the wire by raw protocol requests, as the Connect draft's
  "Rebalance Process" goes: the configuration is created (ConnectGroupConfig), W1 joins
  (ConnectGroupHeartbeat) and is told to compute the assignment, prepares (the configuration and
  the members come back), installs, and its next heartbeat brings it the connectors and tasks; W2
  joins, W1 recomputes, revokes first (never revoke and assign in one response), acknowledges,
  and W2 gets its share only then; an install assigning a task twice is INVALID_ASSIGNMENT; a
  connector deleted is taken away from its worker.
- KIP-848's ConsumerGroupPrepareAssignment / InstallAssignment answer the spec's request checks
  over the wire.
- ``groupcoord connectors create|update|delete|list`` and ``groups list|describe`` for connect
  groups.
- InitProducerId: increasing ids at epoch 0, none re-issued after a restart (a transactional
  id's from the same allocator); kafka-python's default (idempotent) ``KafkaProducer()``
  produces and a consumer reads every message back, the stored batches carrying the producer id.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, request_class
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, ErrorCode
from groupcoord.protocol.extensions import extension_versions
from groupcoord.protocol.versions import API_VERSIONS, ApiKey

from .conftest import GROUPCOORD, ServerProcess, start_server
from .test_server_wire import _recv_frame

E = ErrorCode
ASSIGNORS = [{"name": "incremental-cooperative", "minimum_version": 0, "maximum_version": 1,
              "reason": 0, "version": 1, "metadata": b""}]
NOTHING = {"connectors": (), "tasks": ()}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def cat(connectors: list[str] | tuple[str, ...] = (), tasks: list[tuple[str, int]] | tuple[()] = ()
        ) -> dict[str, Any]:
    return {"connectors": tuple(connectors), "tasks": [{"connector": c, "task": t} for c, t in tasks]}


def items(c: Any) -> set[str]:
    """A wire ConnectorsAndTasks as ``{"A", "A-0", ...}``."""
    return set(c.connectors) | {f"{t.connector}-{t.task}" for t in c.tasks}


def _frame(key: int, version: int, corr: int, body: bytes = b"\x00") -> bytes:
    payload = struct.pack(">hhih", key, version, corr, 1) + b"t" + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


# ============================================================================ ApiVersions / versions


def test_api_versions_lists_the_extension_keys_and_init_producer_id(gc_server: ServerProcess) -> None:
    with KafkaClient(gc_server.bootstrap) as c:
        got = c.api_versions()
    for key in range(1000, 1007):
        assert got[key] == (0, 0) == extension_versions()[key]
    assert got[ApiKey.INIT_PRODUCER_ID] == (0, 5)
    assert got == {int(k): v for k, v in API_VERSIONS.items()}


@pytest.mark.parametrize("key, version", [(ApiKey.CONNECT_GROUP_HEARTBEAT, 1),
                                          (ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 7),
                                          (1050, 0)])
def test_unknown_versions_close_the_connection(gc_server: ServerProcess, key: int,
                                               version: int) -> None:
    """An extension API's version, or a key of the block, that ApiVersions does not advertise
    closes the connection, as Kafka closes it for an API or version it has not enabled."""
    with socket.create_connection((gc_server.host, gc_server.port), timeout=5) as s:
        s.sendall(_frame(key, version, 4242))
        s.settimeout(5)
        with contextlib.suppress(ConnectionResetError):
            assert s.recv(1) == b""
    with socket.create_connection((gc_server.host, gc_server.port), timeout=5) as s:
        # another connection is served
        s.sendall(_frame(ApiKey.CONNECT_GROUP_DESCRIBE, 0, 4243, b"\x02" + b"\x02g" + b"\x00"))
        data = _recv_frame(s)
        assert struct.unpack_from(">i", data)[0] == 4243


def test_every_extension_api_round_trips_for_every_version(gc_server: ServerProcess) -> None:
    """Each (API, version): a zero-valued request (rejected by the coordinator's validation with
    INVALID_REQUEST or the group being unknown) and a request for a group that does not exist,
    both decoded and answered in the version's response schema."""
    group = _name("rt")
    real: dict[int, dict[str, Any]] = {
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: {"group_id": group, "member_id": "m", "member_epoch": 1},
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: {"group_id": group, "member_id": "m",
                                                   "member_epoch": 1, "group_epoch": 1},
        ApiKey.CONNECT_GROUP_HEARTBEAT: {"group_id": group, "member_id": "w", "member_epoch": 3,
                                         "rebalance_timeout_ms": -1},
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: {"group_id": group, "member_id": "w", "member_epoch": 1},
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: {"group_id": group, "member_id": "w",
                                                  "member_epoch": 1, "group_epoch": 1},
        ApiKey.CONNECT_GROUP_CONFIG: {"group_id": group, "ops": [{"op": 2, "connector": "nope"}]},
        # the control plane: a command missing an argument (no fault made on the shared server)
        ApiKey.GROUPCOORD_CONTROL: {"command": "inject-error", "arguments": '{"api": "Heartbeat"}'},
    }
    expected: dict[int, int] = {
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: E.group_id_not_found,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: E.group_id_not_found,
        ApiKey.CONNECT_GROUP_HEARTBEAT: E.unknown_member_id,
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: E.group_id_not_found,
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: E.group_id_not_found,
        ApiKey.GROUPCOORD_CONTROL: E.invalid_request,
    }
    with KafkaClient(gc_server.bootstrap) as c:
        for key, (lo, hi) in sorted(extension_versions().items()):
            for v in range(lo, hi + 1):
                cls = request_class(key, v)
                assert cls is not None
                zero = c.send(build(cls))
                assert type(zero).__name__.endswith("Response")
                if key == ApiKey.CONNECT_GROUP_DESCRIBE:
                    assert zero.groups == ()
                    r = c.send(build(cls, group_ids=[group]))
                    assert [(g.group_id, g.error_code) for g in r.groups] == [
                        (group, E.group_id_not_found)]
                    continue
                assert zero.error_code == E.invalid_request, (key, zero)
                r = c.send(build(cls, real[key]))
                if key == ApiKey.CONNECT_GROUP_CONFIG:
                    # a config change creates the connect group; an unknown connector is refused
                    assert r.error_code == E.resource_not_found, r
                else:
                    assert r.error_code == expected[key], (key, r)
                assert r.error_message


# ============================================================================ a connect group over the wire


class Worker:
    """A worker driven by hand: raw ConnectGroup* requests over its own connection."""

    def __init__(self, server: ServerProcess, group: str, member_id: str) -> None:
        self.c = KafkaClient(server.bootstrap, client_id=f"worker-{member_id}")
        self.group = group
        self.member_id = member_id
        self.epoch = 0
        self.owned: set[str] = set()

    def join(self) -> Any:
        r = self.c.connect_group_heartbeat(
            self.group, self.member_id, 0, rebalance_timeout_ms=30_000, client_assignors=ASSIGNORS,
            connectors_and_tasks=cat(), url=f"http://{self.member_id}:8083")
        assert r.error_code == 0, r
        return self._took(r)

    def heartbeat(self) -> Any:
        if self.epoch == 0:  # not given an epoch yet: a join again, with every field
            return self.join()
        owned = sorted(self.owned)
        r = self.c.connect_group_heartbeat(
            self.group, self.member_id, self.epoch,
            connectors_and_tasks=cat([o for o in owned if "-" not in o],
                                     [(o.rsplit("-", 1)[0], int(o.rsplit("-", 1)[1]))
                                      for o in owned if "-" in o]))
        assert r.error_code == 0, r
        return self._took(r)

    def _took(self, r: Any) -> Any:
        self.epoch = int(r.member_epoch)
        if r.assignment is not None:
            self.owned = items(r.assignment.connectors_and_tasks)
        return r

    def close(self) -> None:
        self.c.close()


@pytest.fixture
def workers(gc_server: ServerProcess) -> Iterator[tuple[str, Worker, Worker]]:
    group = _name("connect")
    w1, w2 = Worker(gc_server, group, "w1"), Worker(gc_server, group, "w2")
    try:
        yield group, w1, w2
    finally:
        for w in (w1, w2):
            if w.epoch > 0:
                w.c.connect_group_heartbeat(group, w.member_id, -1)
            w.close()


def _install(w: Worker, group_epoch: int, plan: dict[str, Any], **kw: Any) -> Any:
    return w.c.connect_group_install_assignment(
        w.group, w.member_id, w.epoch, group_epoch,
        [{"member_id": mid, "connectors_and_tasks": a} for mid, a in plan.items()], **kw)


def test_a_connect_group_formed_over_the_wire(gc_server: ServerProcess,
                                             workers: tuple[str, Worker, Worker]) -> None:
    group, w1, w2 = workers
    admin = w1.c
    r = admin.connect_group_config(group, [{"op": 0, "connector": "A", "task_count": 3}])
    assert (r.error_code, r.config_offset) == (0, 1)

    # W1 joins and is chosen to compute the assignment
    hb = w1.join()
    assert hb.should_compute_assignment and hb.member_id == "w1"
    prep = w1.c.connect_group_prepare_assignment(group, "w1", w1.epoch)
    assert prep.error_code == 0, prep
    assert [(cc.name, cc.task_count) for cc in prep.connectors] == [("A", 3)]
    assert [(mb.member_id, mb.url) for mb in prep.members] == [("w1", "http://w1:8083")]
    assert prep.assignor_name == "incremental-cooperative" and prep.config_offset == 1

    # an install giving a task twice is refused; the valid one is installed
    twice = cat(["A"], [("A", 0), ("A", 1), ("A", 2), ("A", 2)])
    bad = _install(w1, prep.group_epoch, {"w1": twice})
    assert bad.error_code == INVALID_ASSIGNMENT and bad.error_message
    everything = cat(["A"], [("A", 0), ("A", 1), ("A", 2)])
    assert _install(w1, prep.group_epoch, {"w1": everything}).error_code == 0

    # the assignment reaches W1 with its next heartbeat
    hb = w1.heartbeat()
    assert items(hb.assignment.connectors_and_tasks) == {"A", "A-0", "A-1", "A-2"}
    assert w1.epoch == prep.group_epoch

    # W2 joins: the group epoch moves, W1 is asked to recompute
    w2.join()
    hb = w1.heartbeat()
    assert hb.should_compute_assignment
    prep = w1.c.connect_group_prepare_assignment(group, "w1", w1.epoch)
    assert {mb.member_id for mb in prep.members} == {"w1", "w2"}
    assert items(next(mb for mb in prep.members if mb.member_id == "w1").connectors_and_tasks) == {
        "A", "A-0", "A-1", "A-2"}
    r = _install(w1, prep.group_epoch, {"w1": cat(["A"], [("A", 0)]),
                                        "w2": cat([], [("A", 1), ("A", 2)])})
    assert r.error_code == 0, r

    # W2 may not run before W1 released them
    w2.heartbeat()
    assert not ({"A-1", "A-2"} & w2.owned)
    # W1 is told to revoke only (its assignment shrinks, nothing added), then acknowledges
    hb = w1.heartbeat()
    assert w1.owned == {"A", "A-0"}
    hb = w1.heartbeat()
    assert w1.epoch == prep.group_epoch
    # now W2 gets them
    w2.heartbeat()
    assert w2.owned == {"A-1", "A-2"} and w2.epoch == prep.group_epoch

    # describe and ListGroups show the connect group and who runs what
    d = admin.connect_group_describe([group]).groups[0]
    assert (d.error_code, d.group_state, d.group_epoch) == (0, "Stable", prep.group_epoch)
    runs = {mb.member_id: (mb.url, items(mb.assignment)) for mb in d.members}
    assert runs == {"w1": ("http://w1:8083", {"A", "A-0"}), "w2": ("http://w2:8083", {"A-1", "A-2"})}
    listed = admin.call(ApiKey.LIST_GROUPS, 5, types_filter=["connect"])
    assert (group, "connect") in {(g.group_id, g.group_type) for g in listed.groups}

    # deleting the connector: recomputed without it, taken away from its workers
    r = admin.connect_group_config(group, [{"op": 2, "connector": "A"}])
    assert (r.error_code, r.config_offset) == (0, 2)
    hb = w1.heartbeat()
    assert hb.should_compute_assignment
    prep = w1.c.connect_group_prepare_assignment(group, "w1", w1.epoch)
    assert prep.connectors == ()
    assert _install(w1, prep.group_epoch, {"w1": cat(), "w2": cat()}).error_code == 0
    w1.heartbeat()
    w2.heartbeat()
    w1.heartbeat()
    w2.heartbeat()
    assert w1.owned == set() and w2.owned == set()


def test_connect_request_checks_over_the_wire(gc_server: ServerProcess,
                                              workers: tuple[str, Worker, Worker]) -> None:
    group, w1, w2 = workers
    w1.c.connect_group_config(group, [{"op": 0, "connector": "B", "task_count": 1}])
    w1.join()
    w2.join()
    # only the chosen worker (describe names it) may prepare and install (the draft:
    # UNKNOWN_MEMBER_ID otherwise)
    assigner = w1.c.connect_group_describe([group]).groups[0].assigner
    chosen, other = (w1, w2) if assigner == "w1" else (w2, w1)
    assert chosen.member_id == assigner
    assert other.c.connect_group_prepare_assignment(group, other.member_id, 0).error_code == \
        E.unknown_member_id
    assert chosen.c.connect_group_prepare_assignment(group, chosen.member_id, 5).error_code == \
        E.fenced_member_epoch
    # a join without client assignors is refused (connect groups assign on a worker)
    r = w1.c.connect_group_heartbeat(group, "w3", 0, rebalance_timeout_ms=30_000,
                                     server_assignor="uniform")
    assert r.error_code == E.unsupported_assignor
    # the scheduled delay of KIP-415 travels with the install and shows in describe
    prep = chosen.c.connect_group_prepare_assignment(group, chosen.member_id, 0)
    r = _install(chosen, prep.group_epoch, {"w1": cat(["B"]), "w2": cat()},
                 scheduled_rebalance_delay_ms=60_000)
    assert r.error_code == 0, r
    d = w1.c.connect_group_describe([group]).groups[0]
    assert d.scheduled_rebalance_delay_ms == 60_000
    assert {mb.member_id: items(mb.target_assignment) for mb in d.members} == {"w1": {"B"}, "w2": set()}


def test_consumer_client_side_assignment_apis_check_requests(gc_server: ServerProcess) -> None:
    group, topic = _name("cg-client"), _name("cg-topic")
    with KafkaClient(gc_server.bootstrap) as c:
        c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 2,
                                                 "replication_factor": -1}], timeout=10_000)
        hb = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id="m1",
                    member_epoch=0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                    server_assignor="uniform", topic_partitions=[])
        assert hb.error_code == 0
        epoch = int(hb.member_epoch)
        # a server-side assignor group has no chosen member: UNKNOWN_MEMBER_ID (spec step 4)
        r = c.consumer_group_prepare_assignment(group, "m1", epoch)
        assert r.error_code == E.unknown_member_id and r.error_message
        r = c.consumer_group_prepare_assignment(group, "nobody", epoch)
        assert r.error_code == E.unknown_member_id
        r = c.consumer_group_install_assignment(group, "m1", epoch, epoch, [
            {"member_id": "m1", "topic_partitions": [], "metadata_version": 0,
             "metadata_bytes": b""}])
        assert r.error_code == E.unknown_member_id
        r = c.consumer_group_prepare_assignment(group, "", 0)
        assert r.error_code == E.invalid_request
        c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id="m1",
               member_epoch=-1, rebalance_timeout=-1)


# ============================================================================ CLI


def cli(server: ServerProcess, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [*GROUPCOORD, *args[:2], "--bootstrap-server", server.bootstrap, *args[2:]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if ok:
        assert p.returncode == 0, (p.stdout, p.stderr)
    return p


def test_connectors_cli(gc_server: ServerProcess, workers: tuple[str, Worker, Worker]) -> None:
    group, w1, _w2 = workers
    out = json.loads(cli(gc_server, "connectors", "create", "S", "--tasks", "2", "--group", group,
                         "--json").stdout)
    assert (out["connector"], out["tasks"], out["config_offset"], out["error"]) == ("S", 2, 1, None)
    assert "Created connector T with 1 tasks" in cli(
        gc_server, "connectors", "create", "T", "--tasks", "1", "--group", group).stdout
    p = cli(gc_server, "connectors", "create", "S", "--tasks", "2", "--group", group, ok=False)
    assert p.returncode == 1 and "INVALID_REQUEST" in p.stderr
    p = cli(gc_server, "connectors", "delete", "nope", "--group", group, ok=False)
    assert p.returncode == 1 and "RESOURCE_NOT_FOUND" in p.stderr
    cli(gc_server, "connectors", "update", "T", "--tasks", "2", "--group", group)

    # a worker runs everything; from here every CLI run heartbeats w1 first, so its session
    # outlives CLI processes that start slowly on a loaded machine
    def live_cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        w1.heartbeat()
        return cli(gc_server, *args, ok=ok)

    w1.join()
    prep = w1.c.connect_group_prepare_assignment(group, "w1", w1.epoch)
    assert [(cc.name, cc.task_count) for cc in prep.connectors] == [("S", 2), ("T", 2)]
    everything = cat(["S", "T"], [("S", 0), ("S", 1), ("T", 0), ("T", 1)])
    assert _install(w1, prep.group_epoch, {"w1": everything}).error_code == 0
    w1.heartbeat()
    assert w1.owned == {"S", "S-0", "S-1", "T", "T-0", "T-1"}

    listed = json.loads(live_cli("connectors", "list", "--group", group, "--json").stdout)
    assert listed == [{"name": "S", "tasks": 2, "worker": "w1", "task_workers": {"0": "w1", "1": "w1"}},
                      {"name": "T", "tasks": 2, "worker": "w1", "task_workers": {"0": "w1", "1": "w1"}}]
    text = live_cli("connectors", "list", "--group", group).stdout
    assert text.splitlines()[0].split() == ["CONNECTOR", "TASKS", "WORKER", "TASK-WORKERS"]
    assert "0:w1 1:w1" in text

    groups = json.loads(live_cli("groups", "list", "--type", "connect", "--json").stdout)
    assert {g["type"] for g in groups} == {"connect"}
    assert [(g["type"], g["state"]) for g in groups if g["group_id"] == group] == [
        ("connect", "Stable")]
    text = live_cli("groups", "list").stdout
    assert [line.split()[:3] for line in text.splitlines() if line.startswith(group)] == [
        [group, "connect", "Stable"]]
    described = json.loads(live_cli("groups", "describe", group, "--json").stdout)[0]
    assert described["type"] == "connect" and described["state"] == "Stable"
    assert described["connectors"] == [{"name": "S", "tasks": 2}, {"name": "T", "tasks": 2}]
    [member] = described["members"]
    assert (member["member_id"], member["url"], member["member_epoch"]) == (
        "w1", "http://w1:8083", w1.epoch)
    assert member["assignment"] == {"connectors": ["S", "T"], "tasks": ["S-0", "S-1", "T-0", "T-1"]}
    text = live_cli("groups", "describe", group).stdout
    assert f"Group {group}: connect, state Stable" in text
    assert "http://w1:8083" in text and "S-0,S-1,T-0,T-1" in text

    out = json.loads(live_cli("connectors", "delete", "T", "--group", group, "--json").stdout)
    assert (out["connector"], out["config_offset"]) == ("T", 4)
    names = [c["name"] for c in json.loads(
        live_cli("connectors", "list", "--group", group, "--json").stdout)]
    assert names == ["S"]
    p = live_cli("connectors", "list", "--group", _name("none"), ok=False)
    assert p.returncode == 1 and "GROUP_ID_NOT_FOUND" in p.stderr


# ============================================================================ InitProducerId


def test_init_producer_id_never_reissues_an_id_after_a_restart(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        with KafkaClient(server.bootstrap) as c:
            first = [c.init_producer_id() for _ in range(3)]
            assert all(r.error_code == 0 and r.producer_epoch == 0 for r in first)
            ids = [int(r.producer_id) for r in first]
            assert ids == sorted(set(ids)) and ids[0] >= 0
            tx = c.init_producer_id("my-transaction")  # the transaction coordinator's id
            assert (tx.error_code, tx.producer_epoch) == (0, 0)
            assert int(tx.producer_id) > ids[-1]
            ids.append(int(tx.producer_id))
            for v in range(0, 6):  # every advertised version answers
                cls = request_class(ApiKey.INIT_PRODUCER_ID, v)
                assert cls is not None
                r = c.send(build(cls, transactional_id=None, transaction_timeout=1000))
                assert r.error_code == 0 and int(r.producer_id) > ids[-1]
                ids.append(int(r.producer_id))
    finally:
        assert server.stop() in (0, -15)
    server = start_server(tmp_path / "data")
    try:
        with KafkaClient(server.bootstrap) as c:
            after = int(c.init_producer_id().producer_id)
        assert after > max(ids)
    finally:
        server.stop()


def test_kafka_python_default_idempotent_producer(gc_server: ServerProcess) -> None:
    kafka = pytest.importorskip("kafka")
    topic = _name("idem")
    with KafkaClient(gc_server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 3,
                                                     "replication_factor": -1}], timeout=10_000)
        assert r.topics[0].error_code == 0
    producer = kafka.KafkaProducer(bootstrap_servers=gc_server.bootstrap, linger_ms=5)
    try:
        assert producer.config["enable_idempotence"]
        futures = [producer.send(topic, value=b"v%d" % i, partition=i % 3) for i in range(300)]
        producer.flush(30)
        metas = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(10)
    assert sorted((md.partition, md.offset) for md in metas) == sorted(
        (p, o) for p in range(3) for o in range(100))
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=gc_server.bootstrap,
                                   auto_offset_reset="earliest", enable_auto_commit=False,
                                   consumer_timeout_ms=5000)
    try:
        got = sorted(int(msg.value[1:]) for msg in consumer)
    finally:
        consumer.close()
    assert got == list(range(300))
    # the stored batches are the producer's idempotent batches: producer id >= 0, epoch 0
    with KafkaClient(gc_server.bootstrap) as c:
        f = c.call(ApiKey.FETCH, 12, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, replica_id=-1, topics=[{
                       "topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                       "partition_max_bytes": 1 << 20,
                                                       "log_start_offset": -1,
                                                       "current_leader_epoch": -1}]}],
                   forgotten_topics_data=(), rack_id="")
        data = bytes(f.responses[0].partitions[0].records)
    producer_id, epoch, sequence = struct.unpack_from(">qhi", data, 43)
    assert producer_id >= 0 and epoch == 0 and sequence == 0
