"""Heartbeat benchmarks (docs/design.md "Benchmarks"; target: >= 50,000
steady heartbeats per second on one shard).

A stable consumer group of ``members`` members (``topics`` topics of equal size, ``partitions``
partitions in all, every member subscribed to every topic) is written into a shard as its log
would hold it (the uniform assignor's target, every member STABLE at the group epoch), then the
shard runs its load duties (``on_loaded``: session timers). Figures, medians of repeated runs:

- ``heartbeats.steady.members=N``: heartbeats per second handled by the shard when every member
  heartbeats at its current epoch with every optional field null, as real clients do between
  rebalances (``per_s``);
- ``heartbeats.full.members=N``: the same with TopicPartitions set to the member's partitions
  (a client's first heartbeat after it reconciled, or one that always reports them) (``per_s``);
- ``heartbeats.join.members=N``: one new member joining the stable group: a new group epoch, a
  new target assignment for ``N + 1`` members, the joiner reconciled (``ms``).

Each heartbeat is one ``Shard.handle`` call on a prepared request; the clock advances between
calls so the session timer moves as it does in a live shard. Run with
``groupcoord bench heartbeats [--json]`` or ``python -m benchmarks.heartbeats [--quick]``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from benchmarks._harness import Result, median_ms
from groupcoord.coordinator.assignors import ASSIGNORS, GroupSpec, MemberSubscription
from groupcoord.coordinator.modern.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartitions
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

GROUP = "bench"
EPOCH = 10
#: Milliseconds between two heartbeats handled by the shard (all members together).
TICK_MS = 1


@dataclass(slots=True, frozen=True)
class Scenario:
    members: int
    partitions: int
    topics: int

    @property
    def suffix(self) -> str:
        return f"members={self.members}"

    def params(self, **extra: Any) -> dict[str, Any]:
        return {"members": self.members, "partitions": self.partitions, "topics": self.topics,
                **extra}


@dataclass(slots=True)
class StableGroup:
    """A stable group's log and what its members send."""

    image: MetadataImage
    records: list[Record]
    member_ids: list[str]
    owned: dict[str, tuple[TopicPartitions, ...]]
    topic_names: tuple[str, ...]


def _member_ids(count: int, seed: int = 11) -> list[str]:
    """Client-style member ids (KIP-848 v1 clients generate a random UUID)."""
    rng = random.Random(seed)
    return [str(UUID(int=rng.getrandbits(128))) for _ in range(count)]


def stable_group(sc: Scenario) -> StableGroup:
    rng = random.Random(7)
    per, extra = divmod(sc.partitions, sc.topics)
    topics = [TopicMetadata(UUID(int=rng.getrandbits(128)), f"topic-{k:04d}", per + (k < extra))
              for k in range(sc.topics)]
    image = MetadataImage.of(topics)
    names = tuple(sorted(t.name for t in topics))
    ids = _member_ids(sc.members)
    subs = frozenset(t.topic_id for t in topics)
    target = ASSIGNORS["uniform"].assign(GroupSpec(
        {mid: MemberSubscription(mid, subs) for mid in ids}, {t.topic_id: t for t in topics}))
    records = [partition_metadata_record(GROUP, {t.name: t for t in topics})]
    for mid in ids:
        records.append(member_metadata_record(GROUP, mid, ConsumerGroupMemberMetadataValue(
            None, None, "bench-client", "/127.0.0.1", names, None, None, 30_000)))
        records.append(target_member_record(GROUP, mid, target[mid]))
        records.append(current_assignment_record(GROUP, mid, ConsumerGroupCurrentMemberAssignmentValue(
            EPOCH, EPOCH - 1, 0, target[mid], {})))
    records.append(target_assignment_metadata_record(GROUP, EPOCH))
    records.append(group_epoch_record(GROUP, EPOCH))
    owned = {mid: tuple(TopicPartitions(t, tuple(sorted(ps)))
                        for t, ps in sorted(target[mid].items(), key=lambda kv: kv[0].bytes) if ps)
             for mid in ids}
    return StableGroup(image, records, ids, owned, names)


def load(group: StableGroup) -> Shard:
    """A shard holding the stable group, after its load duties (session timers armed)."""
    shard = Shard(metadata=group.image)
    for rec in group.records:
        shard.replay(rec)
    res = shard.on_loaded(0)
    assert not res.records, "the seeded group is not stable: on_loaded wrote records"
    return shard


def heartbeat_requests(group: StableGroup, full: bool) -> list[ConsumerGroupHeartbeatRequest]:
    return [ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=mid, member_epoch=EPOCH,
        topic_partitions=group.owned[mid] if full else None,
        client_id="bench-client", client_host="/127.0.0.1") for mid in group.member_ids]


def _check_steady(shard: Shard, requests: list[ConsumerGroupHeartbeatRequest], now: int) -> None:
    """Guard: the timed path is the steady one (no error, no record, epoch unchanged)."""
    for req in requests[:3]:
        res = shard.handle(req, now)
        assert res.response.error_code == 0, res.response.error_message
        assert res.response.member_epoch == EPOCH and not res.records


def heartbeats_per_second(group: StableGroup, full: bool, rounds: int, repeat: int) -> float:
    shard = load(group)
    requests = heartbeat_requests(group, full)
    clock = [1]
    _check_steady(shard, requests, clock[0])
    handle = shard.handle

    def run() -> None:
        now = clock[0]
        for _ in range(rounds):
            for req in requests:
                now += TICK_MS
                handle(req, now)
        clock[0] = now

    ms = median_ms(run, repeat=repeat)
    return rounds * len(requests) / (ms / 1000.0)


def join_ms(group: StableGroup, repeat: int) -> float:
    shards: list[Shard] = []
    join = ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id="joiner-0000000000000", member_epoch=0,
        rebalance_timeout_ms=30_000, subscribed_topic_names=group.topic_names, topic_partitions=(),
        client_id="bench-client", client_host="/127.0.0.1")
    out: list[Any] = []

    def setup() -> None:
        shards[:] = [load(group)]

    def run() -> None:
        out.append(shards[0].handle(join, 1))

    ms = median_ms(run, repeat=repeat, setup=setup)
    res = out[-1]
    assert res.response.error_code == 0, res.response.error_message
    assert res.response.member_epoch == EPOCH + 1
    return ms


def run(quick: bool = False) -> list[Result]:
    """Heartbeat benchmarks; ``quick`` uses a small group (well under a second)."""
    if quick:
        sc = Scenario(members=50, partitions=500, topics=5)
        rounds, repeat = 2, 3
    else:
        sc = Scenario(members=1000, partitions=10_000, topics=10)
        rounds, repeat = 5, 7
    group = stable_group(sc)
    n = rounds * sc.members
    return [
        Result(f"heartbeats.steady.{sc.suffix}", heartbeats_per_second(group, False, rounds, repeat),
               "per_s", sc.params(scenario="steady", heartbeats=n)),
        Result(f"heartbeats.full.{sc.suffix}", heartbeats_per_second(group, True, rounds, repeat),
               "per_s", sc.params(scenario="full", heartbeats=n)),
        Result(f"heartbeats.join.{sc.suffix}", join_ms(group, repeat), "ms",
               sc.params(scenario="join")),
    ]


if __name__ == "__main__":  # pragma: no cover - manual runs
    import json
    import sys

    rows = [r.as_json() for r in run(quick="--quick" in sys.argv)]
    json.dump(rows, sys.stdout, indent=1)
    sys.stdout.write("\n")
