"""Kill -9 in the middle of a stream of joins, heartbeats and offset commits
(docs/durability-and-metrics.md): nothing acknowledged is lost.

A real ``groupcoord serve`` process (sqlite record log, default durability, 3 shards) serves a
client thread that drives members of three consumer groups over one connection, one request at
a time: joins (ConsumerGroupHeartbeat at epoch 0), heartbeats acknowledging the assignment they
were given, leaves, and offset commits by members on the partitions they own, each write
followed by a ConsumerGroupDescribe of its group. Every acknowledged response is recorded. The
server is killed with SIGKILL at a random moment and restarted on the same data directory; then:

- every acknowledged commit is there (OffsetFetch): for each partition the last acknowledged
  offset, or the offset of the single request that was in flight at the kill;
- every member is where its last response put it (ConsumerGroupDescribe): a member that was told
  epoch E and assignment A is at epoch E with assignment A, a member told it left is gone (the
  member of the in-flight request excepted, whose change may or may not have been persisted);
- each group other than the one of the in-flight request is exactly as last described before
  the kill (group epoch, assignment epoch, state, every member's epochs, assignment and target),
  except that a target assignment pending at the kill (group epoch > assignment epoch, as after
  a leave) has been computed by the load duties: then the members' epochs and assignments are
  as described and the assignment epoch has reached the group epoch.

The stream then resumes against the restarted server and a second kill is checked the same way.
Reproduce a failure with the printed seed (``GROUPCOORD_CRASH_SEED=N``; the kill's timing
against the stream still varies from run to run).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess, start_server

TOPIC = "crash-topic"
PARTITIONS = 6
GROUPS = ("crash-a", "crash-b", "crash-c")
MEMBERS_PER_GROUP = 4
ROUNDS = 2
#: A member that owes a revocation and is not picked by the random stream for this long is
#: fenced by the coordinator (KIP-848 "Rebalance timeout"): far longer than a round, so that on
#: a loaded machine no member is removed behind the driver's back.
REBALANCE_TIMEOUT_MS = 600_000

TP = tuple[Any, int]  # (topic id, partition)


def _assignment(a: Any) -> frozenset[TP]:
    if a is None:
        return frozenset()
    return frozenset((t.topic_id, int(p)) for t in a.topic_partitions for p in t.partitions)


@dataclass
class Member:
    group: str
    slot: int
    member_id: str = ""
    epoch: int = 0  # 0: not a member (never joined, left or fenced)
    assignment: frozenset[TP] = frozenset()

    @property
    def joined(self) -> bool:
        return self.epoch > 0


@dataclass
class Pending:
    """The request in flight when the server died (its effect is unknown)."""

    kind: str  # "join" | "heartbeat" | "leave" | "commit" | "describe"
    group: str
    member_id: str = ""
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)


def _group_view(g: Any) -> dict[str, Any]:
    """A comparable view of one described group."""
    return {
        "error": int(g.error_code), "state": g.group_state, "epoch": int(g.group_epoch),
        "assignment_epoch": int(g.assignment_epoch),
        "members": {m.member_id: (int(m.member_epoch), _assignment(m.assignment),
                                  _assignment(m.target_assignment)) for m in g.members},
    }


class Driver:
    """The client side: members of GROUPS driven over one connection, one request at a time."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.members = [Member(g, i) for g in GROUPS for i in range(MEMBERS_PER_GROUP)]
        #: Last acknowledged commit per (group, partition); offsets only grow.
        self.committed: dict[tuple[str, int], int] = {}
        self.next_offset = 1
        #: Last acknowledged describe of each group, and whether a write of that group was sent
        #: after it (then the describe is not the group's latest state).
        self.described: dict[str, dict[str, Any]] = {}
        self.dirty: set[str] = set()
        self.pending: Pending | None = None
        self.counts = {"join": 0, "heartbeat": 0, "leave": 0, "commit": 0, "describe": 0,
                       "errors": 0}
        self.stop = threading.Event()
        #: The connection broke (the kill): expected.
        self.died: BaseException | None = None
        #: Anything else that stopped the driver: a failure.
        self.failed: BaseException | None = None

    # ------------------------------------------------------------------ one step

    def run(self, bootstrap: str) -> None:
        """Drive until the connection breaks (the kill) or ``stop`` is set."""
        try:
            with KafkaClient(bootstrap, client_id="crash-driver") as c:
                while not self.stop.is_set():
                    self.step(c)
        except (KafkaClientError, OSError) as e:
            self.died = e
        except BaseException as e:
            self.failed = e

    def step(self, c: KafkaClient) -> None:
        m = self.rng.choice(self.members)
        r = self.rng.random()
        if not m.joined:
            self.join(c, m)
        elif r < 0.6:
            self.heartbeat(c, m)
        elif r < 0.9:
            self.commit(c, m)
        else:
            self.leave(c, m)
        self.describe(c, m.group)

    def _send(self, c: KafkaClient, pending: Pending, api: int, version: int,
              **kw: Any) -> Any:
        self.pending = pending
        if pending.kind != "describe":
            self.dirty.add(pending.group)
        resp = c.call(api, version, **kw)
        self.pending = None
        return resp

    def _told(self, m: Member, resp: Any) -> None:
        if resp.error_code:
            # fenced or unknown (its session expired): out of the group, rejoin from scratch
            assert resp.error_code in (E.fenced_member_epoch, E.unknown_member_id), resp
            self.counts["errors"] += 1
            m.epoch, m.assignment = 0, frozenset()
            return
        m.epoch = int(resp.member_epoch)
        if resp.assignment is not None:
            m.assignment = _assignment(resp.assignment)

    def join(self, c: KafkaClient, m: Member) -> None:
        m.member_id = str(uuid.uuid4())
        resp = self._send(c, Pending("join", m.group, m.member_id), ApiKey.CONSUMER_GROUP_HEARTBEAT,
                          1, group_id=m.group, member_id=m.member_id, member_epoch=0,
                          rebalance_timeout=REBALANCE_TIMEOUT_MS, subscribed_topic_names=[TOPIC],
                          topic_partitions=[])
        m.assignment = frozenset()
        self._told(m, resp)
        self.counts["join"] += 1

    def heartbeat(self, c: KafkaClient, m: Member) -> None:
        owned: dict[Any, list[int]] = {}
        for t, p in sorted(m.assignment, key=lambda x: (str(x[0]), x[1])):
            owned.setdefault(t, []).append(p)
        resp = self._send(c, Pending("heartbeat", m.group, m.member_id),
                          ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=m.group,
                          member_id=m.member_id, member_epoch=m.epoch,
                          topic_partitions=[{"topic_id": t, "partitions": ps}
                                            for t, ps in owned.items()])
        self._told(m, resp)
        self.counts["heartbeat"] += 1

    def leave(self, c: KafkaClient, m: Member) -> None:
        resp = self._send(c, Pending("leave", m.group, m.member_id), ApiKey.CONSUMER_GROUP_HEARTBEAT,
                          1, group_id=m.group, member_id=m.member_id, member_epoch=-1,
                          topic_partitions=None)
        assert resp.error_code in (E.none, E.unknown_member_id), resp  # gone either way
        m.epoch, m.assignment = 0, frozenset()
        self.counts["leave"] += 1

    def commit(self, c: KafkaClient, m: Member) -> None:
        parts = sorted(p for _, p in m.assignment)
        if not parts:
            return
        offsets = {}
        for p in parts:
            offsets[(m.group, p)] = self.next_offset
            self.next_offset += 1
        resp = self._send(c, Pending("commit", m.group, m.member_id, offsets), ApiKey.OFFSET_COMMIT,
                          9, group_id=m.group, generation_id_or_member_epoch=m.epoch,
                          member_id=m.member_id, topics=[{"name": TOPIC, "partitions": [
                              {"partition_index": p, "committed_offset": offsets[(m.group, p)],
                               "committed_metadata": ""} for p in parts]}])
        for p in resp.topics[0].partitions:
            if p.error_code == 0:
                self.committed[(m.group, int(p.partition_index))] = offsets[(m.group,
                                                                             int(p.partition_index))]
            else:
                self.counts["errors"] += 1
        self.counts["commit"] += 1

    def describe(self, c: KafkaClient, group: str) -> None:
        resp = self._send(c, Pending("describe", group), ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                          group_ids=[group], include_authorized_operations=False)
        self.described[group] = _group_view(resp.groups[0])
        self.dirty.discard(group)
        self.counts["describe"] += 1

    # ------------------------------------------------------------------ after a restart

    def verify(self, c: KafkaClient, seed: int) -> None:
        """Check the restarted server against everything acknowledged (module docstring)."""
        ctx = f"seed={seed}, in flight at the kill: {self.pending}"
        pending = self.pending
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": g, "topics": None} for g in GROUPS])
        fetched = {(g.group_id, int(p.partition_index)): int(p.committed_offset)
                   for g in r.groups for t in g.topics for p in t.partitions}
        for key, offset in self.committed.items():
            allowed = {offset}
            if pending is not None and pending.kind == "commit" and key in pending.offsets:
                allowed.add(pending.offsets[key])
            assert fetched.get(key) in allowed, (key, fetched.get(key), allowed, ctx)
        for key, offset in fetched.items():  # nothing committed that was never sent
            if key not in self.committed:
                assert pending is not None and pending.offsets.get(key) == offset, (key, ctx)

        d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=list(GROUPS),
                   include_authorized_operations=False)
        now = {g.group_id: _group_view(g) for g in d.groups}
        for g in GROUPS:
            view = now[g]
            assert view["error"] == 0, (g, view, ctx)
            if g in self.described and g not in self.dirty:
                last = self.described[g]
                if last["epoch"] > last["assignment_epoch"]:
                    # A target assignment was pending: the load duties compute it ("Fail
                    # Over"), so only the target side may have moved on, to the group epoch.
                    assert view["assignment_epoch"] == view["epoch"] == last["epoch"], (g, ctx)
                    current = {mid: e[:2] for mid, e in view["members"].items()}
                    assert current == {mid: e[:2] for mid, e in last["members"].items()}, (g, ctx)
                else:
                    assert view == last, (g, view, last, ctx)
        uncertain = pending.member_id if pending is not None else None
        for m in self.members:
            described = now[m.group]["members"]
            if m.member_id == uncertain:
                continue
            if m.joined:
                assert m.member_id in described, (m, ctx)
                epoch, assignment, _ = described[m.member_id]
                assert (epoch, assignment) == (m.epoch, m.assignment), (m, described[m.member_id],
                                                                        ctx)
            elif m.member_id:
                assert m.member_id not in described, (m, ctx)

    def resync(self, c: KafkaClient) -> None:
        """Adopt the restarted server's view of the member whose last request was in flight,
        and of every group (the describes), before the stream resumes."""
        d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=list(GROUPS),
                   include_authorized_operations=False)
        now = {g.group_id: _group_view(g) for g in d.groups}
        pending = self.pending
        if pending is not None:
            for m in self.members:
                if m.member_id == pending.member_id and m.group == pending.group:
                    entry = now[m.group]["members"].get(m.member_id)
                    if entry is None:
                        m.epoch, m.assignment = 0, frozenset()
                    else:
                        m.epoch, m.assignment = entry[0], entry[1]
            if pending.kind == "commit":
                r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": pending.group,
                                                            "topics": None}])
                for t in r.groups[0].topics:
                    for p in t.partitions:
                        self.committed[(pending.group, int(p.partition_index))] = \
                            int(p.committed_offset)
        self.described = now
        self.dirty.clear()
        self.pending = None
        self.died = None
        self.stop.clear()


#: How long the stream may take to reach :data:`MIN_DONE` before a kill (a loaded machine runs
#: it slowly; an idle one takes about a second).
STREAM_DEADLINE_S = 180.0
#: What each round does at least before its kill (the check has something to check).
MIN_DONE = {"join": 5, "heartbeat": 50, "commit": 20}


def _server(data_dir: Path) -> ServerProcess:
    # Sessions far longer than a round: a member the random stream leaves alone for a while on
    # a loaded machine must not expire between its last response and the check (an expiry
    # changes the group behind the driver's back). The maximum KIP-848 session timeout.
    return start_server(data_dir, "--storage", "sqlite", "--shards", "3",
                        "--config", "group.consumer.session.timeout.ms=60000")


def _await_stream(driver: Driver, before: dict[str, int], thread: threading.Thread,
                  seed: int) -> None:
    """Wait until the stream did :data:`MIN_DONE` since ``before`` (polled, not a fixed sleep:
    the rate depends on the machine's load)."""
    deadline = time.monotonic() + STREAM_DEADLINE_S
    while any(driver.counts[k] - before[k] < n for k, n in MIN_DONE.items()):
        assert thread.is_alive(), f"the driver stopped early: {driver.died!r} " \
                                  f"{driver.failed!r} (seed={seed})"
        assert time.monotonic() < deadline, f"the stream is too slow: {driver.counts} " \
                                            f"(seed={seed})"
        time.sleep(0.05)


def test_kill_9_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    seed = int(os.environ.get("GROUPCOORD_CRASH_SEED") or random.randrange(1 << 30))
    print(f"reproduce with seed={seed}")
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    server = _server(data_dir)
    driver = Driver(seed)
    try:
        with KafkaClient(server.bootstrap) as c:
            r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                {"name": TOPIC, "num_partitions": PARTITIONS, "replication_factor": 1}])
            assert r.topics[0].error_code == 0
        for round_ in range(ROUNDS):
            before = dict(driver.counts)
            thread = threading.Thread(target=driver.run, args=(server.bootstrap,), daemon=True)
            thread.start()
            _await_stream(driver, before, thread, seed)
            time.sleep(rng.uniform(0.0, 1.5))  # the kill lands anywhere in the stream
            assert thread.is_alive(), f"the driver stopped early: {driver.died!r} " \
                                      f"{driver.failed!r} (seed={seed})"
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            thread.join(10)
            assert not thread.is_alive() and driver.died is not None, driver.failed
            assert server.proc.returncode == -signal.SIGKILL
            done = {k: driver.counts[k] - before[k] for k in driver.counts}
            assert all(done[k] >= n for k, n in MIN_DONE.items()), done

            server = _server(data_dir)
            assert "Traceback" not in server.stderr(), server.stderr()[-3000:]
            with KafkaClient(server.bootstrap) as c:
                driver.verify(c, seed)
                if round_ + 1 < ROUNDS:
                    driver.resync(c)
        print(f"acknowledged: {driver.counts}")
        assert driver.counts["leave"] > 0 and len(driver.committed) > 0, driver.counts
        assert server.stop() == 0, server.stderr()[-3000:]  # the last server exits cleanly
    finally:
        # after a failure the server may be the killed one: stopped, its exit not checked
        # (that would hide the failure behind -9)
        driver.stop.set()
        server.stop()
