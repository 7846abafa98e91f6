"""Test support: a shard driven like a client would, and the spec's table view of a group."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    Record,
    current_assignment_record,
    group_epoch_record,
    member_metadata_record,
    partition_metadata_record,
    target_assignment_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata


def topic_id(name: str) -> UUID:
    """A stable non-zero id per topic name (tests only)."""
    return UUID(int=(hash_name(name) or 1))


def hash_name(name: str) -> int:
    h = 0
    for ch in name.encode():
        h = (h * 131 + ch) % (1 << 120)
    return h + 1


def topic(name: str, partitions: int) -> TopicMetadata:
    return TopicMetadata(topic_id(name), name, partitions)


def image(**topics: int) -> MetadataImage:
    return MetadataImage.of(topic(n, p) for n, p in topics.items())


def parse_tp(s: str) -> tuple[str, int]:
    name, _, p = s.rpartition("-")
    return name, int(p)


def assignment(*tps: str) -> dict[UUID, frozenset[int]]:
    out: dict[UUID, set[int]] = {}
    for s in tps:
        name, p = parse_tp(s)
        out.setdefault(topic_id(name), set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


def owned(*tps: str) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in assignment(*tps).items())


class Client:
    """Drives a shard through heartbeats; keeps a clock in ms."""

    def __init__(self, shard: Shard, group_id: str = "g", now: int = 0) -> None:
        self.shard = shard
        self.group_id = group_id
        self.now = now
        self.records: list[Record] = []

    def heartbeat(self, member_id: str, epoch: int, *, owned_tps: Iterable[str] | None = None,
                  topics: Iterable[str] | None = None, **kw: Any) -> ConsumerGroupHeartbeatResponse:
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30_000)
            if owned_tps is None:
                owned_tps = ()
            if topics is None and "subscribed_topic_regex" not in kw:
                topics = ("foo",)
        req = ConsumerGroupHeartbeatRequest(
            group_id=kw.pop("group_id", self.group_id), member_id=member_id, member_epoch=epoch,
            subscribed_topic_names=None if topics is None else tuple(topics),
            topic_partitions=None if owned_tps is None else owned(*owned_tps), **kw)
        res = self.shard.handle(req, self.now)
        self.records.extend(res.records)
        return res.response

    def handle(self, request: Any) -> Any:
        res = self.shard.handle(request, self.now)
        self.records.extend(res.records)
        return res.response

    def advance(self, ms: int) -> list[Record]:
        self.now += ms
        out = []
        for res in self.shard.expire_timers(self.now):
            out.extend(res.records)
        self.records.extend(out)
        return out


def names(a: Mapping[UUID, frozenset[int]], img: MetadataImage) -> list[str]:
    out = []
    for t, ps in a.items():
        name = img.by_id[t].name if t in img.by_id else str(t)
        out.extend(f"{name}-{p}" for p in ps)
    return sorted(out, key=lambda s: (s.rpartition("-")[0], int(s.rpartition("-")[2])))


def tables(shard: Shard, group_id: str = "g") -> dict[str, Any]:
    """The spec's three tables: Group (epoch, members), Target Assignment (epoch, partitions),
    Member Assignment (epoch, partitions held, pending partitions)."""
    g: ConsumerGroup = shard.groups[group_id]
    img = shard.metadata
    members = {}
    for mid, m in sorted(g.members.items()):
        held = dict(m.assigned_partitions)
        for t, ps in m.partitions_pending_revocation.items():
            held[t] = held.get(t, frozenset()) | ps
        pending: dict[UUID, frozenset[int]] = {}
        if m.member_epoch == g.assignment_epoch:
            for t, ps in g.target_of(mid).items():
                rest = ps - m.assigned_partitions.get(t, frozenset())
                if rest:
                    pending[t] = rest
        members[mid] = (m.member_epoch, names(held, img), names(pending, img))
    return {
        "group": (g.group_epoch, sorted(g.members)),
        "target": (g.assignment_epoch,
                   {mid: names(a, img) for mid, a in sorted(g.target_assignment.items())}),
        "members": members,
    }


def seed_group(shard: Shard, group_id: str, epoch: int, members: Mapping[str, Iterable[str]],
               subscribed: Iterable[str] = ("foo",), rebalance_timeout_ms: int = 30_000) -> None:
    """Write a stable group at ``epoch`` through records, as a log would hold it."""
    img = shard.metadata
    subs = tuple(sorted(subscribed))
    shard.replay(partition_metadata_record(group_id, {n: img.by_name[n] for n in subs
                                                      if n in img.by_name}))
    for mid, tps in members.items():
        a = assignment(*tps)
        shard.replay(member_metadata_record(group_id, mid, ConsumerGroupMemberMetadataValue(
            None, None, "client", "/127.0.0.1", subs, None, None, rebalance_timeout_ms)))
        shard.replay(target_member_record(group_id, mid, a))
        shard.replay(current_assignment_record(group_id, mid, ConsumerGroupCurrentMemberAssignmentValue(
            epoch, epoch - 1, 0, a, {})))
    shard.replay(target_assignment_metadata_record(group_id, epoch))
    shard.replay(group_epoch_record(group_id, epoch))
