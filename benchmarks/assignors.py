"""Server-side assignor benchmarks (docs/design.md "Benchmarks"; targets in docs/benchmarks.md).

Every figure is the median wall time of one ``assign()`` call on a prepared spec (building the
spec is untimed). Homogeneous subscriptions, ``T`` topics sharing the partitions evenly, client
style member ids (base64 of random UUIDs, so id order differs from creation order). Scenarios:

- ``full``: every member joins at once, nothing assigned yet;
- ``join``: a group of ``members - 1`` balanced by the same assignor, fed back its own output
  objects (what a coordinator that keeps the returned mappings passes), and one new member with
  nothing; each run is preceded (untimed) by the previous epoch's computation (the balanced
  members alone), as in a coordinator;
- ``join_copied``: the same input with every mapping copied into a new dict, so the uniform
  assignor cannot recognise its own output (what a coordinator that rebuilds mappings from
  replayed records passes: the first rebalance after a load), with the inverted target of the
  copies (``GroupSpec.target_index``, built untimed: replay keeps it in a coordinator, as
  Kafka's JMH builds it in setup);
- ``join_read_all``: ``join_copied`` without the inverted target: the assignor reads every
  mapping;
- ``hetero_full`` / ``hetero_join`` (uniform only): heterogeneous subscriptions, each member
  subscribing to a random 5 to 20 of 50 topics.

``target.*`` time the coordinator's whole target computation (KIP-848 "Target Assignment", the
server-side branch of the consumer handlers' ``_compute_target_assignment``): choosing the
assignor, building its input from the group's members and target, the uniform assignor, and the
delta records, on a ``ConsumerGroup`` model (no shard, no records replayed through one):

- ``target.join``: ``members - 1`` members whose target was computed by the previous
  computation (its records applied as replay applies them), then one member joins; each timed
  run is preceded (untimed) by that previous computation, so the coordinator's and the
  assignor's reusable state is what it is between two epochs;
- ``target.join_reconciling``: ``target.join`` where a tenth of the members were replaced by
  new member objects since the previous computation (their epoch bumped, as reconciliation does
  during a join storm), their subscriptions and targets unchanged;
- ``target.join_loaded``: the same group as just loaded: every member object and target mapping
  rebuilt (mappings decoded from their record encoding, applied as replay applies them, so the
  group's inverted target is rebuilt too), a new assignor: the first computation after a
  load.

kafka-python 3.0.12's client-side ``StickyPartitionAssignor`` (KIP-54) runs on the same inputs in
the same run (``peer.kafka-python.sticky...``): subscriptions are handed to it already decoded
(``StickyAssignorUserData`` objects with generation 1), so only its algorithm is timed. Join
figures carry ``moved`` in their params: partitions whose owner changed, a stickiness measure.
"""

from __future__ import annotations

import random
from base64 import urlsafe_b64encode
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

from benchmarks._harness import Result, median_ms
from groupcoord.coordinator.assignors import (
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
    RangeAssignor,
    UniformAssignor,
)
from groupcoord.coordinator.assignors.target_index import TargetIndex
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.consumer.target_assignment import (
    preferred_server_assignor,
    target_assignment_records,
)
from groupcoord.coordinator.records import Record, decode_assignment, encode_assignment
from groupcoord.coordinator.topics import TopicMetadata

PEER = "kafka-python 3.0.12"


@dataclass(slots=True, frozen=True)
class Scenario:
    members: int
    partitions: int
    topics: int

    @property
    def suffix(self) -> str:
        return f"members={self.members}.partitions={self.partitions}"

    def params(self, **extra: Any) -> dict[str, Any]:
        return {"members": self.members, "partitions": self.partitions, "topics": self.topics,
                **extra}


def make_topics(num_topics: int, partitions: int, seed: int = 7) -> dict[UUID, TopicMetadata]:
    """``num_topics`` topics sharing ``partitions`` partitions as evenly as possible."""
    rng = random.Random(seed)
    per, extra = divmod(partitions, num_topics)
    topics: dict[UUID, TopicMetadata] = {}
    for k in range(num_topics):
        tid = UUID(int=rng.getrandbits(128))
        topics[tid] = TopicMetadata(tid, f"topic-{k:04d}", per + (1 if k < extra else 0))
    return topics


def make_member_ids(count: int, seed: int = 11) -> list[str]:
    """Client-style member ids (base64 of a random UUID, as KIP-848 v1 clients generate them)."""
    rng = random.Random(seed)
    return [
        urlsafe_b64encode(UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")
        for _ in range(count)
    ]


def full_spec(sc: Scenario) -> GroupSpec:
    topics = make_topics(sc.topics, sc.partitions)
    subs = frozenset(topics)
    return GroupSpec({mid: MemberSubscription(mid, subs) for mid in make_member_ids(sc.members)},
                     topics)


def join_spec(sc: Scenario, assignor: PartitionAssignor) -> GroupSpec:
    """``members - 1`` members balanced by ``assignor`` (its output objects fed back as they
    are); one more member joins with nothing."""
    return join_specs(sc, assignor)[1]


def join_specs(sc: Scenario, assignor: PartitionAssignor) -> tuple[GroupSpec, GroupSpec]:
    """The previous epoch (``members - 1`` members balanced by ``assignor``, holding its output
    objects) and ``join_spec`` (the same and one more member with nothing), both carrying the
    inverted target of the balanced members (as a coordinator's replay keeps it)."""
    topics = make_topics(sc.topics, sc.partitions)
    subs = frozenset(topics)
    ids = make_member_ids(sc.members)
    base = GroupSpec({mid: MemberSubscription(mid, subs) for mid in ids[:-1]}, topics)
    balanced = assignor.assign(base)
    members = {mid: MemberSubscription(mid, subs, balanced[mid]) for mid in ids[:-1]}
    previous = indexed(GroupSpec(dict(members), topics))
    members[ids[-1]] = MemberSubscription(ids[-1], subs)
    return previous, GroupSpec(members, topics, previous.target_index)


def hetero_spec(sc: Scenario, seed: int = 3) -> GroupSpec:
    """Heterogeneous subscriptions: each member subscribes to a random 5 to 20 of the topics."""
    rng = random.Random(seed)
    topics = make_topics(sc.topics, sc.partitions)
    tids = list(topics)
    return GroupSpec(
        {mid: MemberSubscription(mid, frozenset(rng.sample(tids, min(len(tids),
                                                                      rng.randint(5, 20)))))
         for mid in make_member_ids(sc.members)},
        topics,
    )


def hetero_join_spec(sc: Scenario, assignor: PartitionAssignor) -> GroupSpec:
    """``hetero_spec`` with ``members - 1`` members, balanced; the last one joins."""
    spec = hetero_spec(sc)
    ids = list(spec.members)
    base = GroupSpec({mid: spec.members[mid] for mid in ids[:-1]}, spec.topics)
    balanced = assignor.assign(base)
    members = {mid: MemberSubscription(mid, spec.members[mid].subscribed_topic_ids, balanced[mid])
               for mid in ids[:-1]}
    members[ids[-1]] = spec.members[ids[-1]]
    return GroupSpec(members, spec.topics)


def copied(spec: GroupSpec) -> GroupSpec:
    """The same spec with every mapping (and partition set) copied."""
    return GroupSpec(
        {mid: MemberSubscription(mid, m.subscribed_topic_ids,
                                 {t: frozenset(ps) for t, ps in m.assigned_partitions.items()})
         for mid, m in spec.members.items()},
        spec.topics,
    )


def indexed(spec: GroupSpec) -> GroupSpec:
    """``spec`` with the inverted target of its members' mappings (built untimed, as replay
    keeps it in the coordinator and as Kafka's JMH builds it in setup)."""
    ix = TargetIndex()
    for mid, m in spec.members.items():
        ix.put(mid, m.assigned_partitions)
    return GroupSpec(spec.members, spec.topics, ix)


def moved(spec: GroupSpec, result: Mapping[str, Mapping[UUID, frozenset[int]]]) -> int:
    """Previously assigned partitions that the result gives to another member (or nobody)."""
    return sum(
        len(ps - result.get(mid, {}).get(tid, frozenset()))
        for mid, m in spec.members.items()
        for tid, ps in m.assigned_partitions.items()
    )


# ---------------------------------------------------------------------------------------------
# The coordinator's target computation
# ---------------------------------------------------------------------------------------------


def compute_target(group: ConsumerGroup, assignor: PartitionAssignor, epoch: int) -> list[Record]:
    """The server-side branch of the consumer handlers' target computation, as they call it."""
    members = dict(group.members)
    previous = dict(group.target_assignment)
    preferred_server_assignor(members.values(), assignor.name)
    _, records = target_assignment_records(group, members, previous, epoch, assignor)
    return records


def apply_targets(group: ConsumerGroup, records: list[Record]) -> None:
    """Apply target records to ``group`` as the consumer handlers' replay does."""
    for rec in records:
        value = rec.value
        mid = getattr(rec.key, "member_id", None)
        if mid is None:
            group.assignment_epoch = value.assignment_epoch  # type: ignore[union-attr]
        elif value is None:
            group.remove_target(mid)
        else:
            group.set_target(mid, value.partitions)  # type: ignore[union-attr]


def moved_by(group: ConsumerGroup, records: list[Record]) -> int:
    """Partitions of ``group``'s target that the target records give to another member."""
    n = 0
    for rec in records:
        mid = getattr(rec.key, "member_id", None)
        if mid is None:
            continue
        new = {} if rec.value is None else rec.value.partitions  # type: ignore[union-attr]
        for tid, ps in group.target_assignment.get(mid, {}).items():
            n += len(ps - new.get(tid, frozenset()))
    return n


def target_group(sc: Scenario, assignor: PartitionAssignor) -> tuple[ConsumerGroup, str]:
    """A group of ``members - 1`` members with their computed target; the id of one more."""
    topics = make_topics(sc.topics, sc.partitions)
    group = ConsumerGroup("bench")
    group.subscription_metadata = {t.name: t for t in topics.values()}
    names = tuple(sorted(group.subscription_metadata))
    ids = make_member_ids(sc.members)
    for mid in ids[:-1]:
        group.put_member(ConsumerGroupMember(mid, subscribed_topic_names=names,
                                             server_assignor=assignor.name))
    group.group_epoch = 1
    apply_targets(group, compute_target(group, assignor, 1))
    return group, ids[-1]


def _target_results(make: Callable[[], PartitionAssignor], sc: Scenario,
                    repeat: int) -> list[Result]:
    assignor = make()
    group, joining = target_group(sc, assignor)
    names = next(iter(group.members.values())).subscribed_topic_names
    newcomer = ConsumerGroupMember(joining, subscribed_topic_names=names,
                                   server_assignor=assignor.name)

    def before_join() -> None:  # the previous epoch's computation, then the member joins
        group.remove_member(joining)
        compute_target(group, assignor, 1)
        group.put_member(newcomer)

    out: list[list[Record]] = []
    ms = median_ms(lambda: out.append(compute_target(group, assignor, 2)), repeat=repeat,
                   setup=before_join)
    results = [Result(f"target.join.{sc.suffix}", ms, "ms",
                      sc.params(scenario="target.join", records=len(out[-1]),
                                moved=moved_by(group, out[-1])))]

    def before_join_reconciling() -> None:  # and a tenth of the members reconciled meanwhile
        before_join()
        for m in list(group.members.values())[::10]:
            group.put_member(replace(m, member_epoch=m.member_epoch + 1))

    ms = median_ms(lambda: compute_target(group, assignor, 2), repeat=repeat,
                   setup=before_join_reconciling)
    results.append(Result(f"target.join_reconciling.{sc.suffix}", ms, "ms",
                          sc.params(scenario="target.join_reconciling")))

    loaded_group: list[ConsumerGroup] = []
    fresh: list[PartitionAssignor] = []

    def load() -> None:  # every member object and mapping rebuilt, a new assignor
        g = ConsumerGroup("bench")
        g.subscription_metadata = dict(group.subscription_metadata)
        for m in group.members.values():
            g.put_member(replace(m))
        for mid, a in group.target_assignment.items():  # as replay applies the records
            g.set_target(mid, decode_assignment(encode_assignment(a)))
        g.group_epoch, g.assignment_epoch = 2, 1
        loaded_group[:] = [g]
        fresh[:] = [make()]

    ms = median_ms(lambda: compute_target(loaded_group[0], fresh[0], 2), repeat=repeat,
                   setup=load)
    results.append(Result(f"target.join_loaded.{sc.suffix}", ms, "ms",
                          sc.params(scenario="target.join_loaded")))
    return results


# ---------------------------------------------------------------------------------------------
# kafka-python peer
# ---------------------------------------------------------------------------------------------


class _Cluster:
    """The two ``ClusterMetadata`` methods kafka-python's sticky assignor calls."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self._partitions = {name: set(range(n)) for name, n in sizes.items()}

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)


@dataclass(slots=True)
class _JoinedMember:
    """What kafka-python's assignors read of a JoinGroup response member."""

    member_id: str
    metadata: Any
    group_instance_id: str | None = None


def _peer_sticky(spec: GroupSpec) -> tuple[Callable[[], Any], Callable[[Any], int]]:
    """A zero-argument call of kafka-python's sticky assignor on ``spec``, and a function
    counting the partitions its result moved."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.structs import TopicPartition

    names = {tid: t.name for tid, t in spec.topics.items()}
    cluster = _Cluster({t.name: t.num_partitions for t in spec.topics.values()})
    joined = []
    for mid, m in spec.members.items():
        owned = [TopicPartition(names[tid], p)
                 for tid, ps in m.assigned_partitions.items() for p in sorted(ps)]
        topics = sorted(names[tid] for tid in m.subscribed_topic_ids)
        # The metadata a member sends: subscription + StickyAssignorUserData(previous, gen=1).
        metadata = StickyPartitionAssignor._metadata(topics, owned or None, 1)
        joined.append(_JoinedMember(mid, metadata))

    def call() -> Any:
        return StickyPartitionAssignor().assign(cluster, joined)

    def count_moved(out: Any) -> int:
        by_name = {t.name: tid for tid, t in spec.topics.items()}
        result = {
            mid: {by_name[topic]: frozenset(ps) for topic, ps in a.assigned_partitions}
            for mid, a in out.items()
        }
        return moved(spec, result)

    return call, count_moved


# ---------------------------------------------------------------------------------------------


def _time(make: Callable[[], PartitionAssignor], spec: GroupSpec, repeat: int,
          assignor: PartitionAssignor | None = None) -> tuple[float, GroupAssignment]:
    """Median ms of ``assign(spec)`` (after one untimed warm-up call); the last result."""
    a = assignor if assignor is not None else make()
    a.assign(spec)
    out: list[GroupAssignment] = []
    ms = median_ms(lambda: out.append(a.assign(spec)), repeat=repeat, setup=out.clear)
    return ms, out[-1]


def _time_after(assignor: PartitionAssignor, previous: GroupSpec, spec: GroupSpec,
                repeat: int) -> tuple[float, GroupAssignment]:
    """Median ms of ``assign(spec)``, each run preceded (untimed) by ``assign(previous)``."""
    out: list[GroupAssignment] = []

    def setup() -> None:
        out.clear()
        assignor.assign(previous)

    ms = median_ms(lambda: out.append(assignor.assign(spec)), repeat=repeat, setup=setup)
    return ms, out[-1]


def _assignor_results(label: str, make: Callable[[], PartitionAssignor], main: Scenario,
                      big: Scenario, repeat: int) -> list[Result]:
    results: list[Result] = []
    ms, _ = _time(make, full_spec(main), repeat)
    results.append(Result(f"{label}.full.{main.suffix}", ms, "ms", main.params(scenario="full")))
    for sc in (main, big):
        assignor = make()
        previous, spec = join_specs(sc, assignor)
        # Each run preceded (untimed) by the previous epoch's computation, as in a coordinator.
        ms, out = _time_after(assignor, previous, spec, repeat)
        results.append(Result(f"{label}.join.{sc.suffix}", ms, "ms",
                              sc.params(scenario="join", moved=moved(spec, out))))
        rebuilt = copied(spec)
        ms, _ = _time(make, indexed(rebuilt), repeat)
        results.append(Result(f"{label}.join_copied.{sc.suffix}", ms, "ms",
                              sc.params(scenario="join_copied")))
        ms, _ = _time(make, rebuilt, repeat)
        results.append(Result(f"{label}.join_read_all.{sc.suffix}", ms, "ms",
                              sc.params(scenario="join_read_all")))
    ms, _ = _time(make, full_spec(big), max(3, repeat // 2))
    results.append(Result(f"{label}.full.{big.suffix}", ms, "ms", big.params(scenario="full")))
    return results


def run(quick: bool = False) -> list[Result]:
    """All assignor benchmarks; ``quick`` uses small sizes (a few seconds in all)."""
    if quick:
        main = Scenario(members=20, partitions=200, topics=4)
        big = Scenario(members=50, partitions=500, topics=10)
        repeat, peer_repeat = 3, 3
    else:
        main = Scenario(members=1000, partitions=10_000, topics=10)
        big = Scenario(members=10_000, partitions=100_000, topics=100)
        repeat, peer_repeat = 7, 1  # the peer takes seconds per call at full size

    results = _assignor_results("uniform", UniformAssignor, main, big, repeat)
    hetero = Scenario(main.members, main.partitions, max(main.topics, 50 if not quick else 8))
    ms, _ = _time(UniformAssignor, hetero_spec(hetero), repeat)
    results.append(Result(f"uniform.hetero_full.{hetero.suffix}", ms, "ms",
                          hetero.params(scenario="hetero_full")))
    spec = hetero_join_spec(hetero, UniformAssignor())
    ms, out = _time(UniformAssignor, spec, repeat)
    results.append(Result(f"uniform.hetero_join.{hetero.suffix}", ms, "ms",
                          hetero.params(scenario="hetero_join", moved=moved(spec, out))))
    results += _assignor_results("range", RangeAssignor, main, big, repeat)
    for sc in (main, big):
        results += _target_results(UniformAssignor, sc, repeat)

    # kafka-python's sticky assignor on the same inputs.
    for scenario, spec in (("full", full_spec(main)), ("join", join_spec(main, UniformAssignor()))):
        call, count_moved = _peer_sticky(spec)
        peer_out: list[Any] = []

        def peer_call(c: Callable[[], Any] = call, o: list[Any] = peer_out) -> None:
            o.append(c())

        ms = median_ms(peer_call, repeat=peer_repeat, setup=peer_out.clear)
        params = main.params(scenario=scenario, peer=PEER)
        if scenario == "join":
            params["moved"] = count_moved(peer_out[-1])
        results.append(Result(f"peer.kafka-python.sticky.{scenario}.{main.suffix}", ms, "ms",
                              params))
    return results


if __name__ == "__main__":  # pragma: no cover - manual runs: python -m benchmarks.assignors
    import json
    import sys

    json.dump([r.as_json() for r in run(quick="--quick" in sys.argv)], sys.stdout, indent=1)
    sys.stdout.write("\n")
