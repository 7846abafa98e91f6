"""``groupcoord demo``: a coordinator shard run in-process, printed as the spec's tables.

Members join one at a time, heartbeat like KIP-848 clients (acknowledging revocations in the
next heartbeat) until the group is Stable, then one member leaves and the rest converge again.
Time is simulated (one heartbeat round per 100 ms); everything goes through the real core.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartitions
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata

TOPIC = "events"
GROUP = "demo-group"


@dataclass
class _DemoMember:
    member_id: str
    epoch: int = 0
    owned: dict[uuid.UUID, tuple[int, ...]] = field(default_factory=dict)


def _fmt(shard: Shard, parts: dict[uuid.UUID, frozenset[int]] | dict[uuid.UUID, tuple[int, ...]]) -> str:
    names: list[str] = []
    for t, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes):
        name = shard.metadata.by_id[t].name if t in shard.metadata.by_id else str(t)
        names.extend(f"{name}-{p}" for p in sorted(ps))
    return "[" + ", ".join(names) + "]"


def _group(shard: Shard, group_id: str = GROUP) -> ConsumerGroup:
    g = shard.groups[group_id]
    assert isinstance(g, ConsumerGroup)
    return g


def print_tables(shard: Shard, group_id: str = GROUP) -> None:
    g = _group(shard, group_id)
    print(f"  Group (epoch={g.group_epoch}, state={g.state().value})")
    for mid in sorted(g.members):
        print(f"    {mid}")
    print(f"  Target Assignment (epoch={g.assignment_epoch})")
    for mid in sorted(g.target_assignment):
        print(f"    {mid} - partitions={_fmt(shard, dict(g.target_assignment[mid]))}")
    print("  Member Assignment")
    for mid, m in sorted(g.members.items()):
        revoking = f", revoking={_fmt(shard, dict(m.partitions_pending_revocation))}" \
            if m.partitions_pending_revocation else ""
        print(f"    {mid} - epoch={m.member_epoch}, state={m.state.name}, "
              f"partitions={_fmt(shard, dict(m.assigned_partitions))}{revoking}")


def _heartbeat(shard: Shard, m: _DemoMember, now: int, assignor: str, join: bool = False) -> None:
    req = ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=m.member_id, member_epoch=m.epoch,
        rebalance_timeout_ms=30_000 if join else -1,
        subscribed_topic_names=(TOPIC,) if join else None,
        server_assignor=assignor if join else None,
        topic_partitions=tuple(TopicPartitions(t, ps) for t, ps in sorted(
            m.owned.items(), key=lambda kv: kv[0].bytes)),
        client_id="demo")
    resp = shard.handle(req, now).response
    if resp.error_code:
        raise RuntimeError(f"{m.member_id}: error {resp.error_code}: {resp.error_message}")
    m.epoch = resp.member_epoch
    if resp.assignment is not None:
        # A real consumer stops fetching revoked partitions, commits, calls the listener;
        # here it simply adopts the new assignment and reports it next time.
        m.owned = {tp.topic_id: tp.partitions for tp in resp.assignment.topic_partitions}


def _converge(shard: Shard, members: list[_DemoMember], now: int, assignor: str) -> int:
    for _ in range(20):
        if _group(shard).state().value == "Stable":
            return now
        now += 100
        for m in members:
            _heartbeat(shard, m, now, assignor)
    return now


def run_demo(members: int = 3, partitions: int = 6, assignor: str = "uniform") -> None:
    image = MetadataImage.of([TopicMetadata(uuid.UUID(int=0xE7E27), TOPIC, partitions)])
    shard = Shard(metadata=image)
    live: list[_DemoMember] = []
    now = 0
    for i in range(members):
        m = _DemoMember(chr(ord("A") + i) if members <= 26 else f"member-{i}")
        live.append(m)
        print(f"\n{m.member_id} joins the group")
        _heartbeat(shard, m, now, assignor, join=True)
        print_tables(shard)
        now = _converge(shard, live, now, assignor)
        print(f"-- converged at t={now} ms")
        print_tables(shard)
    leaving = live.pop(0)
    print(f"\n{leaving.member_id} leaves the group")
    shard.handle(ConsumerGroupHeartbeatRequest(GROUP, leaving.member_id, -1), now)
    now = _converge(shard, live, now, assignor)
    print(f"-- converged at t={now} ms")
    print_tables(shard)
