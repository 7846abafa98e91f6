"""Share group assignment benchmarks (KIP-932; ``coordinator/modern/share/assignor.py``, the
``simple`` share assignor): the median wall time of one ``assign()`` call on prepared inputs,
and of the coordinator's whole join heartbeat (``share.join``: a ShareGroupHeartbeat at epoch 0
into a group of ``members - 1`` settled members, the target computed and written as records,
on a ``Shard``; each run on a fresh copy of the shard rebuilt from the same records, untimed;
the settled group is built with its rebalance held during the joins, then one target).

Scenarios (``members`` share ``partitions`` spread evenly over ``topics`` topics):

- ``simple.full``: every member at once, nothing assigned yet;
- ``simple.join``: ``members - 1`` members settled by the assignor, one new member;
- ``simple.leave``: ``members + 1`` settled, one gone;
- ``simple.hetero``: member ``i`` subscribes to the first ``i % topics + 1`` topics, each
  starting from the homogeneous result.

Join and leave results carry ``moved`` in their params: (member, partition) pairs given that
the member did not have, a stickiness measure. Sizes: members 200 (group.share.max.size's
default) and 1,000 (its bound) over 10,000 partitions, and 1,000 members over 100 partitions
(members outnumbering partitions: each partition shared by ten).
"""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from benchmarks._harness import Result, median_ms
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.share import assignor
from groupcoord.coordinator.modern.share.messages import ShareGroupHeartbeatRequest
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata

Target = dict[str, dict[UUID, frozenset[int]]]


def _topics(n: int, partitions: int) -> dict[UUID, int]:
    return {UUID(int=0x5EED0000 + i): partitions // n for i in range(n)}


def _members(n: int) -> list[str]:
    return [f"member-{i:05d}" for i in range(n)]


def _moved(before: Mapping[str, Mapping[UUID, frozenset[int]]], after: Target) -> int:
    return sum(len(ps - before.get(m, {}).get(t, frozenset()))
               for m, parts in after.items() for t, ps in parts.items())


def _assignor_results(members: int, partitions: int, topics: int, repeat: int) -> list[Result]:
    parts = _topics(topics, partitions)
    everything = frozenset(parts)
    ids = _members(members)
    suffix = f"members={members}.partitions={partitions}"
    params = {"members": members, "partitions": partitions, "topics": topics}
    out: list[Result] = []
    subs = dict.fromkeys(ids, everything)
    ms = median_ms(lambda: assignor.assign(subs, parts, {}), repeat)
    out.append(Result(f"simple.full.{suffix}", ms, "ms", {**params, "scenario": "full"}))
    settled = assignor.assign(dict.fromkeys(ids[:-1], everything), parts, {})
    ms = median_ms(lambda: assignor.assign(subs, parts, settled), repeat)
    joined = assignor.assign(subs, parts, settled)
    out.append(Result(f"simple.join.{suffix}", ms, "ms",
                      {**params, "scenario": "join", "moved": _moved(settled, joined)}))
    before = assignor.assign({**subs, "member-zzzzz": everything}, parts, {})
    ms = median_ms(lambda: assignor.assign(subs, parts, before), repeat)
    left = assignor.assign(subs, parts, before)
    out.append(Result(f"simple.leave.{suffix}", ms, "ms",
                      {**params, "scenario": "leave", "moved": _moved(before, left)}))
    order = sorted(parts, key=lambda t: t.int)
    hetero = {m: frozenset(order[: i % topics + 1]) for i, m in enumerate(ids)}
    start = assignor.assign(subs, parts, {})
    ms = median_ms(lambda: assignor.assign(hetero, parts, start), repeat)
    out.append(Result(f"simple.hetero.{suffix}", ms, "ms", {**params, "scenario": "hetero"}))
    return out


def _join_result(members: int, partitions: int, topics: int, repeat: int) -> Result:
    """The coordinator's join: validation, records, the target, the member's reconciliation."""
    parts = _topics(topics, partitions)
    image = MetadataImage.of(TopicMetadata(t, f"topic-{i}", n) for i, (t, n) in enumerate(parts.items()))
    names = tuple(sorted(image.by_name))
    config = CoordinatorConfig(share_assignment_interval_ms=0, share_max_size=members + 1)
    base = Shard(config=config, metadata=image)
    records: list[Record] = []
    ids = _members(members - 1)
    base.held_groups = frozenset({"g"})  # the joins without a target each; then one target
    for m in ids:
        records += base.handle(ShareGroupHeartbeatRequest("g", m, 0, subscribed_topic_names=names),
                               0).records
    base.held_groups = frozenset()
    settle = ShareGroupHeartbeatRequest("g", ids[0], 0, subscribed_topic_names=names)
    records += base.handle(settle, 0).records
    assert base.groups["g"].assignment_epoch == members - 1  # type: ignore[attr-defined]
    shards: list[Shard] = []

    def fresh() -> None:
        s = Shard(config=config, metadata=image)
        s.replay_all(records)
        shards[:] = [s]

    join = ShareGroupHeartbeatRequest("g", "member-new", 0, subscribed_topic_names=names)

    def call() -> None:
        r = shards[0].handle(join, 1)
        assert r.response.error_code == 0

    ms = median_ms(call, repeat, setup=fresh)
    return Result(f"share.join.members={members}.partitions={partitions}", ms, "ms",
                  {"members": members, "partitions": partitions, "topics": topics,
                   "scenario": "join"})


def run(quick: bool = False) -> list[Result]:
    if quick:
        sizes, repeat = [(20, 200, 4), (40, 10, 2)], 3
    else:
        sizes, repeat = [(200, 10_000, 10), (1000, 10_000, 10), (1000, 100, 10)], 7
    results: list[Result] = []
    for members, partitions, topics in sizes:
        results += _assignor_results(members, partitions, topics, repeat)
        results.append(_join_result(members, partitions, topics, repeat))
    return results
