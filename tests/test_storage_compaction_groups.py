"""Replay equivalence (I4) after compaction for classic and connect groups (the consumer
group cases are in ``test_storage_sqlite.py``).

Each group type is driven through its own requests on a Shard; every result's records are
appended to a record log as one batch (stamped with the request time), as the server does. At
checkpoints the log is compacted (superseded entries dropped, tombstones dropped after a
retention of 0, 30 s or never) and a shard rebuilt from the compacted log through
``replay_entries`` must digest equal to the live one; the run then goes on, and at the end a
shard rebuilt from the compacted log takes over (a failover) and keeps working.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.storage import MemoryLog, RecordLog, replay_entries
from groupcoord.storage.sqlite import SqliteLog

from .support import image
from .test_classic_support import SESSION_MS, Harness
from .test_connect_group import GROUP, Connect, tables

RETENTIONS = [0, 30_000, -1]


@pytest.fixture(params=["sqlite", "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordLog]:
    lg: RecordLog = SqliteLog(tmp_path) if request.param == "sqlite" else MemoryLog()
    try:
        yield lg
    finally:
        lg.close()


def rebuilt(lg: RecordLog, template: Shard, now: int | None = None) -> Shard:
    """A shard replayed from ``lg`` (through the codec); load duties run when ``now`` is given."""
    fresh = Shard(template.shard_id, template.config, template.metadata)
    replay_entries(lg, template.shard_id, lambda k, v: fresh.replay(Record.decode(k, v)))
    if now is not None:
        fresh.on_loaded(now)
    return fresh


def compact_and_check(lg: RecordLog, shard: Shard, now: int, retention_ms: int) -> int:
    """I4 before and after compacting; the entries removed."""
    assert rebuilt(lg, shard).state_digest() == shard.state_digest()
    removed = lg.compact(shard.shard_id, now, retention_ms).removed
    assert rebuilt(lg, shard).state_digest() == shard.state_digest()
    return removed


# ============================================================================ classic


class LoggedHarness(Harness):
    """The classic test harness, every result's records appended to ``log`` as a batch."""

    def __init__(self, lg: RecordLog, **kw: Any) -> None:
        super().__init__(**kw)
        self.log = lg

    def _absorb(self, records: list[Record], completions: list[tuple[Any, Any]]) -> None:
        if records:
            self.log.append(self.shard.shard_id, [r.encode() for r in records], now_ms=self.now)
        super()._absorb(records, completions)

    def check(self, retention_ms: int) -> int:
        return compact_and_check(self.log, self.shard, self.now, retention_ms)

    def fail_over_to_log(self) -> None:
        """Continue on a shard rebuilt from the (compacted) log."""
        res = None
        shard = rebuilt(self.log, self.shard)
        res = shard.on_loaded(self.now)
        self.shard = shard
        self._absorb(res.records, res.completions)
        for call in self.calls.values():
            if not call.done:
                call.response = None


def _classic_commit(h: Harness, group: str, offset: int) -> None:
    g = h.group(group)
    mid = next(iter(g.members))
    r = h.send(OffsetCommitRequest(group, (OffsetCommitTopic("foo", (
        OffsetCommitPartition(offset % 4, offset),)),), g.generation_id, mid,
        g.members[mid].instance_id)).r
    assert r.topics[0].partitions[0].error_code == 0, r


@pytest.mark.parametrize("retention_ms", RETENTIONS)
def test_classic_groups_replay_equal_after_compaction(log: RecordLog, retention_ms: int) -> None:
    h = LoggedHarness(log, metadata=image(foo=4))
    removed = 0
    rnd = h.form(3, static=True)
    for i in range(6):
        _classic_commit(h, "g", 10 + i)
        h.advance(1_000)
        for m in rnd.members:
            assert h.heartbeat(m, rnd.generation, instance=rnd.instances[m]).error_code == 0
    removed += h.check(retention_ms)

    # a static member bounces (KIP-814: the leader's rejoin skips the assignment)
    leader = h.group().leader_id
    assert leader is not None
    bounced = h.join(instance=h.group().members[leader].instance_id, client_id="bounced").r
    assert bounced.error_code == 0 and bounced.skip_assignment
    removed += h.check(retention_ms)

    # a dynamic member joins: a full rebalance to a new generation
    dyn = h.join_new(client_id="dyn")
    joins = [h.join(mid, instance=m.instance_id) for mid, m in list(h.group().members.items())
             if m.awaiting_join is None]
    h.advance_until(lambda: dyn.done and all(j.done for j in joins))
    rnd = h.complete_round([*joins, dyn])
    assert len(h.group().members) == 4
    _classic_commit(h, "g", 20)
    removed += h.check(retention_ms)

    # a second group, formed, then emptied by session expiry and deleted
    j = h.join_new(group="g2", client_id="other")
    h.advance_until(lambda: j.done)
    r = j.r
    assert h.sync(r.member_id, r.generation_id, {r.member_id: b"x"}, group="g2").r.error_code == 0
    h.advance(SESSION_MS * 3)  # nobody heartbeats: every member of both groups expires
    assert h.group().state_name() == "Empty" and h.group("g2").state_name() == "Empty"
    assert h.send(DeleteGroupsRequest(("g2",))).r.results[0].error_code == 0
    assert "g2" not in h.shard.groups
    h.advance(60_000)
    removed += h.check(retention_ms)
    assert removed > 0

    # failover onto the compacted log, then the group forms again and is checked again
    h.fail_over_to_log()
    assert h.group().generation_id >= rnd.generation and "g2" not in h.shard.groups
    h.form(2)
    _classic_commit(h, "g", 30)
    h.check(retention_ms)
    assert isinstance(h.shard.groups["g"], ClassicGroup)


@pytest.mark.parametrize("seed", range(4))
def test_classic_groups_random_runs_replay_equal_after_compaction(log: RecordLog, seed: int) -> None:
    rng = random.Random(seed)
    h = LoggedHarness(log, metadata=image(foo=4))
    groups = ["a", "b", "c"]
    members: dict[str, list[tuple[str, int]]] = {g: [] for g in groups}  # (member, generation)
    for _step in range(60):
        g = rng.choice(groups)
        action = rng.random()
        group = h.shard.groups.get(g)
        if action < 0.3 or not isinstance(group, ClassicGroup) or group.state_name() != "Stable":
            call = h.join_new(group=g, client_id=f"c{_step}")
            h.advance_until(lambda c=call: c.done, limit=200_000)
            r = call.r
            if r.error_code == 0:
                group = h.group(g)
                others = [h.join(mid, group=g) for mid, m in list(group.members.items())
                          if m.awaiting_join is None]
                h.advance_until(lambda os=others: all(o.done for o in os), limit=200_000)
                answered = [c for c in [*others, call] if c.r.error_code == 0]
                if answered and all(c.r.generation_id == answered[0].r.generation_id
                                    for c in answered):
                    leader = next((c for c in answered if c.r.leader == c.r.member_id), None)
                    if leader is not None:
                        gen = leader.r.generation_id
                        h.sync(leader.r.member_id, gen, {c.r.member_id: b"a" for c in answered},
                               group=g)
                        for c in answered:
                            if c is not leader:
                                h.sync(c.r.member_id, gen, group=g)
                members[g] = [(c.r.member_id, c.r.generation_id) for c in answered]
        elif action < 0.55:
            _classic_commit(h, g, rng.randrange(100))
        elif action < 0.7 and group.members:
            h.leave(next(iter(group.members)), group=g)
        elif action < 0.8:
            for mid, gen in members[g]:
                h.heartbeat(mid, gen, group=g)
            h.advance(rng.choice([500, 3_000]))
        elif action < 0.9:
            h.advance(rng.choice([5_000, SESSION_MS * 2]))
        else:
            h.check(rng.choice(RETENTIONS))
    h.check(0)
    h.fail_over_to_log()
    h.check(0)


# ============================================================================ connect


class LoggedConnect(Connect):
    """The connect test driver, every result's records appended to ``log`` as a batch."""

    def __init__(self, lg: RecordLog, shard: Shard) -> None:
        super().__init__(shard)
        self.log = lg

    def _append(self, records: list[Record]) -> None:
        if records:
            self.log.append(self.shard.shard_id, [r.encode() for r in records], now_ms=self.now)

    def handle(self, request: Any) -> Any:
        res = self.shard.handle(request, self.now)
        self.records.extend(res.records)
        self._append(res.records)
        return res.response

    def advance(self, ms: int) -> list[Record]:
        self.now += ms
        out: list[Record] = []
        for res in self.shard.expire_timers(self.now):
            self._append(res.records)
            out.extend(res.records)
        self.records.extend(out)
        return out

    def check(self, retention_ms: int) -> int:
        return compact_and_check(self.log, self.shard, self.now, retention_ms)


def _stable_two(c: Connect) -> None:
    """W1 and W2 share AC0, AT1, AT2, BC0, BT1 (as in ``test_connect_group.py``)."""
    c.configure(("create", "A", 2), ("create", "B", 1))
    c.heartbeat("W1", 0)
    c.prepare("W1", 0)
    c.install("W1", 0, 1, {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"]})
    c.heartbeat("W1", 0)
    c.heartbeat("W2", 0)
    assert c.heartbeat("W1", 1).should_compute_assignment
    c.prepare("W1", 1)
    c.install("W1", 1, 2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]})
    c.heartbeat("W1", 1, owned=["AC0", "AT1", "AT2"])
    c.heartbeat("W2", 1, owned=[])


@pytest.mark.parametrize("retention_ms", RETENTIONS)
def test_connect_groups_replay_equal_after_compaction(log: RecordLog, retention_ms: int) -> None:
    c = LoggedConnect(log, Shard(metadata=image(src=2)))
    removed = 0
    _stable_two(c)
    assert tables(c.shard)["members"] == {"W1": (2, ["AC0", "AT1", "AT2"]),
                                          "W2": (2, ["BC0", "BT1"])}
    for _ in range(5):  # heartbeats rewrite nothing; config changes rewrite the config record
        c.advance(1_000)
        c.heartbeat("W1", 2, owned=["AC0", "AT1", "AT2"])
        c.heartbeat("W2", 2, owned=["BC0", "BT1"])
    removed += c.check(retention_ms)

    # a connector grows, the epoch is bumped, W1 computes and installs a new assignment
    c.configure(("update", "A", 3))
    assert c.heartbeat("W1", 2, owned=["AC0", "AT1", "AT2"]).should_compute_assignment
    c.prepare("W1", 2)
    c.install("W1", 2, 3, {"W1": ["AC0", "AT1", "AT2", "AT3"], "W2": ["BC0", "BT1"]})
    c.heartbeat("W1", 2, owned=["AC0", "AT1", "AT2"])
    c.heartbeat("W2", 2, owned=["BC0", "BT1"])
    removed += c.check(retention_ms)

    # W2 leaves, W3 joins statically, a connector is deleted
    c.heartbeat("W2", -1)
    c.heartbeat("W3", 0, instance_id="i3")
    c.configure(("delete", "B"))
    removed += c.check(retention_ms)

    # offsets of a group of workers, then every worker's session expires
    g = c.shard.groups[GROUP]
    w1 = g.members["W1"]
    r = c.handle(OffsetCommitRequest(GROUP, (OffsetCommitTopic("src", (
        OffsetCommitPartition(0, 5),)),), w1.member_epoch, "W1"))
    assert r.topics[0].partitions[0].error_code == 0
    c.advance(60_000)
    assert not c.shard.groups[GROUP].members
    removed += c.check(retention_ms)

    # a second connect group created and deleted: its tombstones age out with the retention
    c2 = LoggedConnect(log, c.shard)
    c2.group_id = "other"
    c2.now = c.now
    c2.configure(("create", "X", 1))
    c2.heartbeat("V1", 0)
    c2.heartbeat("V1", -1)
    assert c2.handle(DeleteGroupsRequest(("other",))).results[0].error_code == 0
    c.now = c2.now + 60_000
    removed += c.check(retention_ms)
    assert removed > 0

    # failover onto the compacted log; the group starts again from its configuration
    c.shard = rebuilt(log, c.shard, c.now)
    assert "other" not in c.shard.groups
    assert c.heartbeat("W1", 0).error_code == 0
    c.prepare("W1", c.shard.groups[GROUP].members["W1"].member_epoch)
    c.check(retention_ms)
