"""Mixed groups with real Kafka clients over the wire, through online migration (KIP-848 "Supporting
Online Consumer Group Upgrade").

KIP-848 "Supporting Online Consumer Group Upgrade" end to end against a real ``groupcoord serve``:
classic consumers from PyPI (kafka-python 3.0.12 with the range and cooperative-sticky assignors,
aiokafka 0.14.0, confluent-kafka with ``group.protocol=classic``) form a classic group; confluent-kafka
consumers with ``group.protocol=consumer`` join it, the group converts to a consumer group and the
classic members keep consuming inside it (their JoinGroup / SyncGroup / Heartbeat translated);
when the classic members leave the consumer group stays, when the new-protocol members leave it
converts back to a classic group (the downgrade). The rolling upgrade (classic members replaced
one by one by consumer-protocol members while messages are produced) and the rolling downgrade
lose nothing: every message is consumed (at least once: the duplicates are counted, bounded, and
only occur across an ownership change), committed offsets reach the end of every partition and
the group ends with the expected type (``groupcoord groups describe --json``).

The same rolling upgrade and downgrade with static members (group.instance.id carried over from
the replaced member) found that a classic static member replacing the last new-protocol member
left the group a consumer group of classic members only; it now converts at once, without a
rebalance (``modern/consumer/classic_members.py``, regression in ``tests/test_migration.py``).

aiokafka works in a mixed group, with one upstream-equivalent stall on the downgrade: when the
last consumer-protocol member leaves before a lagging classic member heard of the previous epoch
bump, that member's next Heartbeat carries its old member epoch as generation and gets
ILLEGAL_GENERATION from the new classic group (as upstream's classic heartbeat answers);
aiokafka (like the Java client) then forgets its member id and rejoins as a new member, so the
classic rebalance waits for the old member id's session to expire (6 s here). kafka-python keeps
its member id on ILLEGAL_GENERATION and does not stall.

Every client runs in its own thread (a confluent-kafka consumer is only touched by the thread
that polls it, NOTES.md) and every wait is bounded. Not covered here: regex subscriptions of
classic members (classic clients subscribe to names) and custom classic assignors' user data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import GROUPCOORD, ServerProcess, start_server
from .test_server_classic import _end_offsets as end_offsets
from .test_server_classic import _name, committed, create_topic

ck = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

TIMEOUT_S = 60.0  # every wait polls: generous for a loaded machine
BATCH = 100  # records per poll, for every client: bounds what a handover may redeliver
PACE = 0.05  # seconds a pacing member sleeps after a non-empty batch (<= 2,000 records/s)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = start_server(tmp_path_factory.mktemp("gc-migration") / "data",
                       "--config", "group.initial.rebalance.delay.ms=200",
                       "--config", "group.min.session.timeout.ms=1000")
    try:
        yield srv
    finally:
        srv.stop()


# ------------------------------------------------------------------------------ admin helpers


def group_type(server: ServerProcess, group: str) -> str | None:
    """The group's type as ListGroups v5 reports it (None: no such group)."""
    with KafkaClient(server.bootstrap) as c:
        listed = c.call(ApiKey.LIST_GROUPS, 5, types_filter=[]).groups
    return next((str(g.group_type) for g in listed if g.group_id == group), None)


def describe_json(server: ServerProcess, group: str) -> dict[str, Any]:
    out = subprocess.run([*GROUPCOORD, "groups", "describe", group, "--json",
                          "--bootstrap-server", server.bootstrap],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    [described] = json.loads(out.stdout)
    assert isinstance(described, dict)
    return described


def _described(server: ServerProcess, group: str, topic: str) -> tuple[str, dict[str, frozenset[int]]]:
    """ConsumerGroupDescribe: the group's state and each member's (client id's) current
    partitions of ``topic``."""
    with KafkaClient(server.bootstrap) as c:
        d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                   include_authorized_operations=False).groups[0]
    if d.error_code:
        return "", {}
    return str(d.group_state), {
        mb.client_id: frozenset(int(p) for tp in mb.assignment.topic_partitions
                                if tp.topic_name == topic for p in tp.partitions)
        for mb in d.members}


def _settled(server: ServerProcess, group: str, topic: str, ms: list[Member]) -> bool:
    """The consumer group is Stable, every member is at the group epoch (a classic member has
    rejoined at the latest bump) and the described shares are the clients' own."""
    with KafkaClient(server.bootstrap) as c:
        d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[group],
                   include_authorized_operations=False).groups[0]
    if d.error_code or str(d.group_state) != "Stable":
        return False
    if any(int(mb.member_epoch) != int(d.group_epoch) for mb in d.members):
        return False
    return {mb.client_id: frozenset(int(p) for tp in mb.assignment.topic_partitions
                                    if tp.topic_name == topic for p in tp.partitions)
            for mb in d.members} == {m.name: m.assigned for m in ms}


def wait_until(cond: Callable[[], bool], what: str | Callable[[], str],
               timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


def produce(server: ServerProcess, topic: str, partitions: int, start: int, n: int) -> None:
    p = ck.Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=b"v%d" % i, partition=i % partitions)
    assert p.flush(15) == 0


# ------------------------------------------------------------------------------ members


@dataclass
class Delivery:
    partition: int
    offset: int
    member: str
    span: int  # which of the member's assignments it was delivered under


@dataclass
class Log:
    """Every delivery of a test, from all its members (appended under a lock)."""

    deliveries: list[Delivery] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ds: list[Delivery]) -> None:
        with self.lock:
            self.deliveries.extend(ds)

    def offsets(self) -> set[tuple[int, int]]:
        with self.lock:
            return {(d.partition, d.offset) for d in self.deliveries}


class Member(threading.Thread):
    """One consumer of ``kind`` on its own thread: it polls, records its deliveries and its
    assignment, and commits what it consumed after every batch (retrying after a failure).

    kinds: ``kp-range`` / ``kp-coop`` (kafka-python, classic), ``ck-consumer`` (librdkafka,
    ``group.protocol=consumer``), ``ck-classic`` (librdkafka classic, cooperative-sticky),
    ``aio`` (aiokafka, classic, range)."""

    def __init__(self, server: ServerProcess, group: str, topic: str, name: str, kind: str,
                 log: Log | None = None, pace: float = 0.0,
                 instance_id: str | None = None) -> None:
        super().__init__(daemon=True, name=name)
        self.server, self.group, self.topic, self.kind = server, group, topic, kind
        self.log = log or Log()
        self.pace = pace
        self.instance_id = instance_id
        self.assigned: frozenset[int] = frozenset()
        self.span = 0
        self.consumed = 0
        self.commits = 0
        self.commit_failures = 0
        self.error: BaseException | None = None
        self._dirty = False
        self._halt = threading.Event()
        self.start()

    @property
    def classic(self) -> bool:
        return self.kind != "ck-consumer"

    # ---- bookkeeping shared by the clients

    def _saw(self, assigned: frozenset[int]) -> None:
        if assigned != self.assigned:
            self.assigned = assigned
            self.span += 1

    def _record(self, records: list[tuple[int, int]]) -> None:
        if records:
            self.log.add([Delivery(p, o, self.name, self.span) for p, o in records])
            self.consumed += len(records)
            self._dirty = True
            if self.pace:
                time.sleep(self.pace)

    def _committed(self, ok: bool) -> None:
        if ok:
            self.commits += 1
            self._dirty = False
        else:
            self.commit_failures += 1

    # ---- the clients

    def run(self) -> None:
        try:
            if self.kind.startswith("kp-"):
                self._run_kafka_python()
            elif self.kind.startswith("ck-"):
                self._run_confluent()
            elif self.kind == "aio":
                asyncio.run(self._run_aiokafka())
            else:
                raise ValueError(self.kind)
        except BaseException as e:  # reported by stop()
            self.error = e

    def _run_kafka_python(self) -> None:
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        assignor = RangePartitionAssignor if self.kind == "kp-range" else CooperativeStickyAssignor
        c = kafka.KafkaConsumer(
            bootstrap_servers=self.server.bootstrap, group_id=self.group, client_id=self.name,
            partition_assignment_strategy=[assignor], auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300,
            request_timeout_ms=20_000, retry_backoff_ms=50, reconnect_backoff_ms=50,
            max_poll_records=BATCH, fetch_max_wait_ms=100, group_instance_id=self.instance_id)
        c.subscribe([self.topic])
        try:
            while not self._halt.is_set():
                batch = c.poll(timeout_ms=100)
                self._record([(r.partition, r.offset) for rs in batch.values() for r in rs])
                self._saw(frozenset(tp.partition for tp in c.assignment()))
                if self._dirty:
                    try:
                        c.commit()
                        self._committed(True)
                    except kafka.errors.KafkaError:
                        self._committed(False)
        finally:
            c.close()  # LeaveGroup

    def _run_confluent(self) -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.server.bootstrap, "group.id": self.group,
            "client.id": self.name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 100,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "retry.backoff.ms": 50, "log_level": 3}
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        if self.kind == "ck-consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"group.protocol": "classic", "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 300,
                         "partition.assignment.strategy": "cooperative-sticky"})
        c = ck.Consumer(conf)
        c.subscribe([self.topic])
        try:
            while not self._halt.is_set():
                msgs = c.consume(BATCH, 0.1)
                self._record([(m.partition(), m.offset()) for m in msgs if not m.error()])
                self._saw(frozenset(tp.partition for tp in c.assignment()))
                if self._dirty:
                    try:
                        c.commit(asynchronous=False)
                        self._committed(True)
                    except ck.KafkaException:
                        self._committed(False)
        finally:
            c.close()  # leaves the group

    async def _run_aiokafka(self) -> None:
        import aiokafka

        c = aiokafka.AIOKafkaConsumer(
            self.topic, bootstrap_servers=self.server.bootstrap, group_id=self.group,
            client_id=self.name, auto_offset_reset="earliest", enable_auto_commit=False,
            session_timeout_ms=6000, heartbeat_interval_ms=300, retry_backoff_ms=50,
            fetch_max_wait_ms=100, max_poll_records=BATCH, group_instance_id=self.instance_id)
        await c.start()
        try:
            while not self._halt.is_set():
                batch = await c.getmany(timeout_ms=100, max_records=BATCH)
                self._record([(r.partition, r.offset) for rs in batch.values() for r in rs])
                self._saw(frozenset(tp.partition for tp in c.assignment()))
                if self._dirty:
                    try:
                        await c.commit()
                        self._committed(True)
                    except aiokafka.errors.KafkaError:
                        self._committed(False)
        finally:
            await c.stop()

    def stop(self) -> None:
        self._halt.set()
        self.join(TIMEOUT_S)
        assert not self.is_alive(), f"{self.name} did not stop"
        assert self.error is None, f"{self.name}: {self.error!r}"


@contextlib.contextmanager
def members() -> Iterator[list[Member]]:
    """The test's members; whichever are still running at the end are stopped."""
    started: list[Member] = []
    try:
        yield started
    finally:
        for m in started:
            if m.is_alive():
                with contextlib.suppress(AssertionError):
                    m.stop()


def shares(ms: list[Member]) -> str:
    return ", ".join(f"{m.name}={sorted(m.assigned)}" for m in ms)


def disjoint_cover(ms: list[Member], partitions: int) -> bool:
    """Every member holds a share; the shares are disjoint and cover ``range(partitions)``."""
    held = [m.assigned for m in ms]
    flat = [p for a in held for p in a]
    return all(held) and len(flat) == len(set(flat)) == partitions


def await_cover(ms: list[Member], partitions: int, what: str) -> None:
    """Wait until ``ms`` hold disjoint shares covering ``range(partitions)``."""
    wait_until(lambda: disjoint_cover(ms, partitions), lambda: f"{what}: {shares(ms)}")


def all_consuming(ms: list[Member], before: dict[str, int]) -> bool:
    return all(m.consumed > before[m.name] for m in ms)


# ------------------------------------------------------------------------------ a mixed group

P12 = 12


def _mixed_group(server: ServerProcess, classic_kind: str, ms: list[Member], topic: str,
                 group: str) -> tuple[list[Member], list[Member]]:
    """Two classic members of ``classic_kind`` form a classic group on a 12-partition topic;
    two consumer-protocol members join it: the group converts, the four share the partitions
    and the classic members keep consuming. Returns (classic members, new members)."""
    create_topic(server, topic, P12)
    produce(server, topic, P12, 0, 120)
    old = [Member(server, group, topic, f"old{i}", classic_kind) for i in range(2)]
    ms.extend(old)
    await_cover(old, P12, "a classic group")
    assert group_type(server, group) == "classic"

    new = [Member(server, group, topic, f"new{i}", "ck-consumer") for i in range(2)]
    ms.extend(new)
    everyone = old + new
    await_cover(everyone, P12, "4 disjoint shares of the 12 partitions")
    assert group_type(server, group) == "consumer"
    # the coordinator's view: one consumer group, each member with the protocol it speaks and
    # a share of the partitions (the same shares the clients report, once settled)
    wait_until(lambda: _described(server, group, topic)
               == ("Stable", {m.name: m.assigned for m in everyone}),
               lambda: f"a Stable group whose described shares are the clients': "
                       f"{shares(everyone)}")
    d = describe_json(server, group)
    assert d["type"] == "consumer" and d["state"] == "Stable"
    assert {mb["client_id"]: mb["protocol"] for mb in d["members"]} == {
        m.name: "classic" if m.classic else "consumer" for m in everyone}

    before = {m.name: m.consumed for m in everyone}
    produce(server, topic, P12, 120, 240)
    wait_until(lambda: all_consuming(everyone, before),
               lambda: "every member, classic ones included, consuming: "
                       + ", ".join(f"{m.name}: {m.consumed}" for m in everyone))
    return old, new


@pytest.mark.parametrize("classic_kind", ["kp-range", "kp-coop", "aio", "ck-classic"])
def test_mixed_group_classic_members_leave_new_ones_take_over(server: ServerProcess,
                                                              classic_kind: str) -> None:
    topic, group = _name("mix-up"), _name("mix-up")
    with members() as ms:
        old, new = _mixed_group(server, classic_kind, ms, topic, group)
        for m in old:
            m.stop()  # LeaveGroup from inside the consumer group
        await_cover(new, P12, "the new members hold all 12")
        assert group_type(server, group) == "consumer"
        assert sorted(len(m.assigned) for m in new) == [6, 6]


@pytest.mark.parametrize("classic_kind", ["kp-range", "kp-coop", "aio", "ck-classic"])
def test_mixed_group_new_members_leave_and_it_downgrades(server: ServerProcess,
                                                         classic_kind: str) -> None:
    topic, group = _name("mix-down"), _name("mix-down")
    with members() as ms:
        old, new = _mixed_group(server, classic_kind, ms, topic, group)
        for m in new:
            m.stop()  # the last consumer-protocol member leaving converts the group back
        await_cover(old, P12, "the classic members hold all 12")
        wait_until(lambda: group_type(server, group) == "classic", "a classic group again")
        before = {m.name: m.consumed for m in old}
        produce(server, topic, P12, 360, 120)
        wait_until(lambda: all_consuming(old, before), "the classic members consume")


# ------------------------------------------------------------------------------ rolling upgrade

N = 10_000
P6 = 6


def _duplicates(log: Log) -> tuple[int, list[tuple[int, int]]]:
    """(redeliveries, redelivered offsets that came twice within one ownership span of one
    member: those would be a client or server bug, not a handover)."""
    seen: dict[tuple[int, int], set[tuple[str, int]]] = {}
    total = 0
    bad = []
    with log.lock:
        for d in log.deliveries:
            spans = seen.setdefault((d.partition, d.offset), set())
            if spans:
                total += 1
                if (d.member, d.span) in spans:
                    bad.append((d.partition, d.offset))
            spans.add((d.member, d.span))
    return total, bad


@dataclass
class Rolled:
    group: str
    log: Log
    changes: int  # membership changes (joins and leaves)
    backlogs: list[int]  # uncommitted messages when each old member was stopped
    types: list[str | None]  # the group's type after each step
    described: dict[str, Any]  # ``groups describe --json`` at the end


def _rolling(server: ServerProcess, from_kinds: list[str], to_kind: str,
             static: bool = False) -> Rolled:
    """Members of ``from_kinds`` consume a 6-partition topic as a group; one by one each is
    stopped and replaced by a ``to_kind`` member while N messages are produced in four chunks
    (one before each step, one at the end); members consume at a bounded pace so that every
    handover happens with messages outstanding. Returns once every message was consumed and
    the committed offsets reach the end. ``static``: every member has a group.instance.id and
    each replacement takes over the instance id of the member it replaces."""
    topic, group = _name("roll"), _name("roll")
    create_topic(server, topic, P6)
    log = Log()
    chunk = N // (len(from_kinds) + 1)
    produced = 0
    changes = 0
    backlogs: list[int] = []
    types: list[str | None] = []
    with members() as ms:
        live = [Member(server, group, topic, f"{k}-{i}", k, log, pace=PACE,
                       instance_id=f"inst-{i}" if static else None)
                for i, k in enumerate(from_kinds)]
        ms.extend(live)
        changes += len(live)
        await_cover(live, P6, "the first group")
        for step in range(len(from_kinds)):
            produce(server, topic, P6, produced, chunk)
            produced += chunk
            backlogs.append(produced - sum(committed(server, group).values()))
            live.pop(0).stop()  # a rolling restart: the old member leaves ...
            new = Member(server, group, topic, f"{to_kind}-{step}", to_kind, log, pace=PACE,
                         instance_id=f"inst-{step}" if static else None)
            ms.append(new)  # ... and its replacement joins
            live.append(new)
            changes += 2
            await_cover(live, P6, f"step {step}: every member holds a share")
            types.append(types_now := group_type(server, group))
            if types_now == "consumer":
                # A rolling restart bounces the next member once the group has settled: with
                # a classic member still at an older epoch, the last consumer-protocol member
                # leaving converts the group under it, its heartbeat gets ILLEGAL_GENERATION
                # (as upstream's) and kafka-python's cooperative-sticky leader may defer a
                # partition that member claimed but then dropped, which nobody then revokes
                # (the deferred partition waits for the next rebalance).
                wait_until(lambda: _settled(server, group, topic, live),
                           lambda s=step: f"step {s}: a Stable group at one epoch: {shares(live)}")
        produce(server, topic, P6, produced, N - produced)

        ends = end_offsets(server, topic, P6)
        assert sum(ends.values()) == N
        want = {(p, o) for p, end in ends.items() for o in range(end)}
        wait_until(lambda: log.offsets() == want,
                   lambda: f"all {N} messages consumed (have {len(log.offsets() & want)})")
        wait_until(lambda: committed(server, group) == ends,
                   lambda: f"committed offsets {committed(server, group)} to reach {ends}")
        assert log.offsets() == want
        described = describe_json(server, group)
        for m in live:
            m.stop()
    return Rolled(group, log, changes, backlogs, types, described)


def _check_at_least_once(log: Log, changes: int) -> int:
    dups, bad = _duplicates(log)
    assert not bad, f"offsets delivered twice to one member within one assignment: {bad[:10]}"
    # each membership change may redeliver, per member, what it had consumed but not yet
    # committed: one batch, plus one more if its commit was refused mid-rebalance
    assert dups <= changes * 2 * BATCH, f"{dups} redeliveries for {changes} membership changes"
    return dups


def _report(what: str, r: Rolled, dups: int) -> None:
    print(f"{what}: {len(r.log.deliveries)} deliveries of {N}, {dups} redelivered, "
          f"{r.changes} membership changes, backlog at each step {r.backlogs}, "
          f"types {r.types}")


def test_rolling_upgrade_loses_nothing(server: ServerProcess) -> None:
    """Three kafka-python (range) members replaced one by one by confluent-kafka consumer-protocol
    members: the first replacement converts the group, it stays a consumer group."""
    r = _rolling(server, ["kp-range"] * 3, "ck-consumer")
    dups = _check_at_least_once(r.log, r.changes)
    _report("rolling upgrade", r, dups)
    assert all(b > 0 for b in r.backlogs), "every handover happened with messages outstanding"
    assert r.types == ["consumer"] * 3
    d = r.described
    assert d["type"] == "consumer" and len(d["members"]) == 3
    assert {mb["protocol"] for mb in d["members"]} == {"consumer"}
    assert all(p["lag"] == 0 for p in d["partitions"]) and len(d["partitions"]) == P6


def test_rolling_downgrade_loses_nothing(server: ServerProcess) -> None:
    """Three consumer-protocol members replaced one by one by kafka-python (cooperative-sticky)
    members: mixed until the last consumer-protocol member leaves, then a classic group."""
    r = _rolling(server, ["ck-consumer"] * 3, "kp-coop")
    dups = _check_at_least_once(r.log, r.changes)
    _report("rolling downgrade", r, dups)
    assert all(b > 0 for b in r.backlogs), "every handover happened with messages outstanding"
    assert r.types == ["consumer", "consumer", "classic"]
    d = r.described
    assert d["type"] == "classic" and len(d["members"]) == 3
    assert d["protocol_type"] == "consumer" and d["assignor"] == "cooperative-sticky"
    assert all(p["lag"] == 0 for p in d["partitions"]) and len(d["partitions"]) == P6


def test_rolling_upgrade_of_static_members_loses_nothing(server: ServerProcess) -> None:
    """The same with static membership: each consumer-protocol member takes the instance id of
    the classic member it replaces (which closes without leaving the group)."""
    r = _rolling(server, ["kp-range"] * 3, "ck-consumer", static=True)
    dups = _check_at_least_once(r.log, r.changes)
    _report("static rolling upgrade", r, dups)
    assert r.types == ["consumer"] * 3
    d = r.described
    assert d["type"] == "consumer" and len(d["members"]) == 3
    assert {(mb["instance_id"], mb["protocol"]) for mb in d["members"]} == {
        (f"inst-{i}", "consumer") for i in range(3)}
    assert all(p["lag"] == 0 for p in d["partitions"]) and len(d["partitions"]) == P6


def test_rolling_downgrade_of_static_members_loses_nothing(server: ServerProcess) -> None:
    """Static members, the other way: each kafka-python member takes the instance id of the
    consumer-protocol member it replaces; when the last one is replaced, the group converts."""
    r = _rolling(server, ["ck-consumer"] * 3, "kp-coop", static=True)
    dups = _check_at_least_once(r.log, r.changes)
    _report("static rolling downgrade", r, dups)
    assert r.types == ["consumer", "consumer", "classic"]
    d = r.described
    assert d["type"] == "classic" and len(d["members"]) == 3
    assert sorted(mb["instance_id"] for mb in d["members"]) == [f"inst-{i}" for i in range(3)]
    assert all(p["lag"] == 0 for p in d["partitions"]) and len(d["partitions"]) == P6


def test_server_log_is_clean(server: ServerProcess) -> None:
    """No handler failed during this module (the server answers; it never crashes a request)."""
    assert server.proc.poll() is None
    text = Path(server.stderr_path).read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
