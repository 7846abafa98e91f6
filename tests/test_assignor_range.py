"""The ``range`` server-side assignor: contiguous ranges, co-partitioning, I2, stickiness."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors import (
    ASSIGNORS,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    RangeAssignor,
    get_assignor,
)
from groupcoord.coordinator.topics import TopicMetadata

T1, T2, T3, T4 = (UUID(int=(k << 64) | k) for k in (0xA1, 0x52, 0xC3, 0x14))
GONE = UUID(int=0xDEAD)
NAMES = {T1: "orders", T2: "payments", T3: "clicks", T4: "users"}
MEMBER_POOL = ["A", "B", "C", "D", "E", "F", "G", "m-0", "m-10", "m-9"]

Raw = dict[str, dict[UUID, list[int]]]


def spec_of(sizes: dict[UUID, int], subs: dict[str, frozenset[UUID]], current: Raw) -> GroupSpec:
    topics = {tid: TopicMetadata(tid, NAMES.get(tid, "x"), n) for tid, n in sizes.items()}
    members = {
        mid: MemberSubscription(
            mid, s, {tid: frozenset(ps) for tid, ps in current.get(mid, {}).items()}
        )
        for mid, s in subs.items()
    }
    return GroupSpec(members, topics)


def lists(result: GroupAssignment, tid: UUID) -> dict[str, list[int]]:
    return {mid: sorted(a.get(tid, ())) for mid, a in result.items()}


def normal(result: Mapping[str, Mapping[UUID, frozenset[int]]]) -> dict[str, dict[Any, Any]]:
    return {mid: dict(a) for mid, a in result.items()}


def check_legal(spec: GroupSpec, result: GroupAssignment) -> None:
    """Invariant I2: every partition of every subscribed topic exactly once, only to subscribers."""
    assert set(result) == set(spec.members)
    seen: set[tuple[UUID, int]] = set()
    for mid, a in result.items():
        for tid, ps in a.items():
            assert ps and isinstance(ps, frozenset)
            assert tid in spec.members[mid].subscribed_topic_ids and tid in spec.topics
            for p in ps:
                assert 0 <= p < spec.topics[tid].num_partitions
                assert (tid, p) not in seen
                seen.add((tid, p))
    subscribed = set().union(*(m.subscribed_topic_ids for m in spec.members.values()))
    assert seen == {(tid, p) for tid in subscribed if tid in spec.topics
                    for p in range(spec.topics[tid].num_partitions)}


def subscribers(spec: GroupSpec, tid: UUID) -> list[str]:
    return sorted(mid for mid, m in spec.members.items() if tid in m.subscribed_topic_ids)


def test_registry() -> None:
    assert isinstance(get_assignor("range"), RangeAssignor)
    assert ASSIGNORS["range"].name == "range"


def test_contiguous_ranges_first_members_get_the_extra() -> None:
    subs = frozenset({T1, T2})
    spec = spec_of({T1: 7, T2: 7}, {"C": subs, "A": subs, "B": subs}, {})
    result = RangeAssignor().assign(spec)
    for tid in (T1, T2):
        assert lists(result, tid) == {"A": [0, 1, 2], "B": [3, 4], "C": [5, 6]}


def test_more_members_than_partitions() -> None:
    subs = frozenset({T1})
    spec = spec_of({T1: 2}, {"A": subs, "B": subs, "C": subs}, {})
    result = RangeAssignor().assign(spec)
    assert result == {"A": {T1: frozenset({0})}, "B": {T1: frozenset({1})}, "C": {}}


def test_per_topic_subscribers() -> None:
    spec = spec_of({T1: 4, T2: 3}, {"A": frozenset({T1, T2}), "B": frozenset({T1})}, {})
    result = RangeAssignor().assign(spec)
    assert lists(result, T1) == {"A": [0, 1], "B": [2, 3]}
    assert lists(result, T2) == {"A": [0, 1, 2], "B": []}


def test_missing_and_empty_topics() -> None:
    subs = frozenset({T1, T2, GONE})
    spec = spec_of({T1: 0, T2: 2}, {"A": subs}, {"A": {GONE: [0], T1: [0]}})
    assert RangeAssignor().assign(spec) == {"A": {T2: frozenset({0, 1})}}


def test_member_joins_keeps_lower_ranges() -> None:
    """Sticky: each member keeps its lowest partitions up to the new quota."""
    subs = frozenset({T1, T2})
    current: Raw = {"A": {T1: [0, 1, 2], T2: [0, 1, 2]}, "B": {T1: [3, 4, 5], T2: [3, 4, 5]}}
    spec = spec_of({T1: 6, T2: 6}, {"A": subs, "B": subs, "C": subs}, current)
    result = RangeAssignor().assign(spec)
    for tid in (T1, T2):
        assert lists(result, tid) == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}


def test_stable_output_is_returned_as_is() -> None:
    subs = frozenset({T1, T2})
    spec = spec_of({T1: 5, T2: 5}, {"A": subs, "B": subs}, {})
    once = RangeAssignor().assign(spec)
    again = RangeAssignor().assign(GroupSpec(
        {mid: MemberSubscription(mid, subs, once[mid]) for mid in once}, spec.topics))
    for mid in once:
        assert again[mid] is once[mid]


def test_copartitioning_survives_a_disagreeing_history() -> None:
    """Previous numbers that differ across co-partitioned topics are reconciled."""
    subs = frozenset({T1, T2})
    current: Raw = {"A": {T1: [0, 1], T2: [2, 3]}, "B": {T1: [2, 3], T2: [0, 1]}}
    spec = spec_of({T1: 4, T2: 4}, {"A": subs, "B": subs}, current)
    result = RangeAssignor().assign(spec)
    check_legal(spec, result)
    assert lists(result, T1) == lists(result, T2)


# ---------------------------------------------------------------------------------------------
# kafka-python's client-side range assignor agrees on fresh assignments
# ---------------------------------------------------------------------------------------------


class _Cluster:
    def __init__(self, sizes: dict[str, int]) -> None:
        self._sizes = sizes

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self._sizes.get(topic)
        return None if n is None else set(range(n))


@dataclass
class _Member:
    member_id: str
    metadata: Any
    group_instance_id: str | None = None


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------


@st.composite
def specs(draw: st.DrawFn, legal: bool = False) -> GroupSpec:
    pool = [T1, T2, T3, T4]
    sizes = {tid: draw(st.integers(0, 8)) for tid in pool[: draw(st.integers(1, 4))]}
    # Few distinct sizes so co-partitioned classes with several topics are common.
    if draw(st.booleans()):
        n = draw(st.integers(1, 8))
        sizes = dict.fromkeys(sizes, n)
    mids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=7, unique=True))
    choices = list(sizes) + ([] if legal else [GONE])
    subs = {mid: frozenset(draw(st.sets(st.sampled_from(choices), min_size=1))) for mid in mids}
    if draw(st.booleans()):
        same = subs[mids[0]]
        subs = dict.fromkeys(mids, same)
    current: Raw = {mid: {} for mid in mids}
    for tid, n in sizes.items():
        holders = [m for m in mids if tid in subs[m] or not legal] + [None]
        for p in range(n):
            owner = draw(st.sampled_from(holders))
            if owner is not None:
                current[owner].setdefault(tid, []).append(p)
    if not legal:
        for mid in mids:
            for tid, p in draw(st.lists(st.tuples(st.sampled_from([T1, T2, GONE]),
                                                  st.integers(-1, 10)), max_size=3)):
                current[mid].setdefault(tid, []).append(p)
    return spec_of(sizes, subs, current)


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def copartitioned_classes(spec: GroupSpec) -> list[list[UUID]]:
    classes: dict[tuple[tuple[str, ...], int], list[UUID]] = {}
    for tid, meta in spec.topics.items():
        subs = tuple(subscribers(spec, tid))
        if subs and meta.num_partitions > 0:
            classes.setdefault((subs, meta.num_partitions), []).append(tid)
    return list(classes.values())


@SETTINGS
@given(specs())
def test_legal_balanced_per_topic_and_copartitioned(spec: GroupSpec) -> None:
    result = RangeAssignor().assign(spec)
    check_legal(spec, result)
    for tid, meta in spec.topics.items():
        subs = subscribers(spec, tid)
        if not subs:
            continue
        quota, extra = divmod(meta.num_partitions, len(subs))
        sizes = sorted(len(result[m].get(tid, ())) for m in subs)
        assert sizes == [quota] * (len(subs) - extra) + [quota + 1] * extra
    for cls in copartitioned_classes(spec):
        for mid in spec.members:
            assert len({result[mid].get(tid, frozenset()) for tid in cls}) == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python's schema loading
@SETTINGS
@given(specs(legal=True))
def test_fresh_assignment_matches_kafka_python_range(spec: GroupSpec) -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    empty = GroupSpec({mid: MemberSubscription(mid, m.subscribed_topic_ids)
                       for mid, m in spec.members.items()}, spec.topics)
    ours = RangeAssignor().assign(empty)
    cluster = _Cluster({NAMES[t]: meta.num_partitions for t, meta in spec.topics.items()})
    joined = [
        _Member(mid, RangePartitionAssignor.metadata(
            sorted(NAMES[t] for t in m.subscribed_topic_ids if t in spec.topics)))
        for mid, m in spec.members.items()
    ]
    theirs = RangePartitionAssignor.assign(cluster, joined)
    by_name = {NAMES[t]: t for t in spec.topics}
    for mid, assignment in theirs.items():
        expected = {by_name[topic]: frozenset(ps) for topic, ps in assignment.assigned_partitions
                    if ps}
        assert dict(ours[mid]) == expected


@SETTINGS
@given(specs(legal=True), st.sampled_from([*MEMBER_POOL, "new-1", "new-2"]))
def test_sticky_when_membership_changes(spec: GroupSpec, toggled: str) -> None:
    """From a stable range assignment, a member joining or leaving: every member keeps
    min(previous, new quota) of its partitions on every topic."""
    r = RangeAssignor()
    stable = r.assign(spec)
    members = {mid: MemberSubscription(mid, m.subscribed_topic_ids, stable[mid])
               for mid, m in spec.members.items()}
    if toggled in members and len(members) > 1:
        del members[toggled]
    elif toggled not in members:
        members[toggled] = MemberSubscription(toggled, next(iter(members.values())).subscribed_topic_ids)
    changed = GroupSpec(members, spec.topics)
    result = r.assign(changed)
    check_legal(changed, result)
    for cls in copartitioned_classes(changed):
        # Co-partitioning beats stickiness: when the change merges topics whose previous
        # numbers disagree into one class, only the co-partitioning holds.
        if any(len({m.assigned_partitions.get(tid, frozenset()) for tid in cls}) > 1
               for m in changed.members.values()):
            continue
        for tid in cls:
            subs = subscribers(changed, tid)
            quota = changed.topics[tid].num_partitions // len(subs)
            for mid in subs:
                prev = changed.members[mid].assigned_partitions.get(tid, frozenset())
                assert len(prev & result[mid].get(tid, frozenset())) >= min(len(prev), quota)


@SETTINGS
@given(specs(), st.randoms(use_true_random=False))
def test_deterministic_order_independent_and_pure(spec: GroupSpec, rnd: random.Random) -> None:
    before = [(mid, sorted(m.subscribed_topic_ids),
               sorted((t, sorted(ps)) for t, ps in m.assigned_partitions.items()))
              for mid, m in spec.members.items()]
    first = RangeAssignor().assign(spec)
    assert [(mid, sorted(m.subscribed_topic_ids),
             sorted((t, sorted(ps)) for t, ps in m.assigned_partitions.items()))
            for mid, m in spec.members.items()] == before
    assert normal(RangeAssignor().assign(spec)) == normal(first)
    items = list(spec.members.items())
    rnd.shuffle(items)
    shuffled = GroupSpec(
        {mid: MemberSubscription(mid, frozenset(reversed(list(m.subscribed_topic_ids))),
                                 dict(reversed(list(m.assigned_partitions.items()))))
         for mid, m in items},
        dict(reversed(list(spec.topics.items()))),
    )
    assert normal(RangeAssignor().assign(shuffled)) == normal(first)
