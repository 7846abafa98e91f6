"""The ``uniform`` server-side assignor: KIP-848 "Case Studies", rules, invariant I2, properties."""

from __future__ import annotations

import copy
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors import (
    ASSIGNORS,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
    UniformAssignor,
    get_assignor,
)
from groupcoord.coordinator.topics import TopicMetadata

FOO = UUID("6a2c1f1e-0000-4000-8000-000000000001")
BAR = UUID("0b9d3e55-0000-4000-8000-000000000002")  # sorts before FOO by id, after it by name
BAZ = UUID("f00d0000-0000-4000-8000-000000000003")
GONE = UUID("dead0000-0000-4000-8000-00000000dead")  # never in spec.topics

Raw = dict[str, dict[UUID, list[int]]]


def foo_spec(num_partitions: int, current: dict[str, list[int]]) -> GroupSpec:
    """One topic ``foo``; members by id with their current target partitions of foo."""
    topics = {FOO: TopicMetadata(FOO, "foo", num_partitions)}
    members = {
        mid: MemberSubscription(mid, frozenset({FOO}), {FOO: frozenset(ps)} if ps else {})
        for mid, ps in current.items()
    }
    return GroupSpec(members, topics)


def foo_of(result: GroupAssignment) -> dict[str, list[int]]:
    return {mid: sorted(a.get(FOO, ())) for mid, a in result.items()}


def spec_of(
    topics: dict[UUID, tuple[str, int]],
    subs: dict[str, frozenset[UUID]],
    current: Raw,
) -> GroupSpec:
    metas = {tid: TopicMetadata(tid, name, n) for tid, (name, n) in topics.items()}
    members = {
        mid: MemberSubscription(
            mid, s, {tid: frozenset(ps) for tid, ps in current.get(mid, {}).items()}
        )
        for mid, s in subs.items()
    }
    return GroupSpec(members, metas)


def snapshot(spec: GroupSpec) -> object:
    return [
        (mid, m.member_id, sorted(m.subscribed_topic_ids),
         sorted((tid, sorted(ps)) for tid, ps in m.assigned_partitions.items()))
        for mid, m in spec.members.items()
    ], sorted((tid, t.name, t.num_partitions) for tid, t in spec.topics.items())


def fresh() -> UniformAssignor:
    return UniformAssignor(memo_members=0)


# ---------------------------------------------------------------------------------------------
# KIP-848 "Case Studies"
# ---------------------------------------------------------------------------------------------


class TestCaseStudies:
    def test_single_member_gets_everything(self) -> None:
        assert foo_of(fresh().assign(foo_spec(3, {"A": []}))) == {"A": [0, 1, 2]}

    def test_b_joins(self) -> None:
        result = fresh().assign(foo_spec(3, {"A": [0, 1, 2], "B": []}))
        assert foo_of(result) == {"A": [0, 1], "B": [2]}

    def test_c_joins(self) -> None:
        result = fresh().assign(foo_spec(3, {"A": [0, 1], "B": [2], "C": []}))
        assert foo_of(result) == {"A": [0], "B": [2], "C": [1]}

    def test_c_joins_six_partitions(self) -> None:
        result = fresh().assign(foo_spec(6, {"A": [0, 1, 2], "B": [3, 4, 5], "C": []}))
        assert foo_of(result) == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}

    def test_a_leaves(self) -> None:
        result = fresh().assign(foo_spec(6, {"B": [3, 4], "C": [2, 5]}))
        assert {m: set(ps) for m, ps in foo_of(result).items()} == {
            "B": {3, 4, 0},
            "C": {2, 5, 1},
        }

    def test_partitions_added(self) -> None:
        result = fresh().assign(foo_spec(2, {"A": [0], "B": []}))
        assert foo_of(result) == {"A": [0], "B": [1]}

    def test_whole_story_with_memo(self) -> None:
        """The same sequence, each step fed the previous output (the memo path)."""
        u = UniformAssignor()
        topics = {FOO: TopicMetadata(FOO, "foo", 3)}
        subs = frozenset({FOO})

        def step(current: Mapping[str, Mapping[UUID, frozenset[int]]]) -> GroupAssignment:
            members = {mid: MemberSubscription(mid, subs, a) for mid, a in current.items()}
            return u.assign(GroupSpec(members, topics))

        r1 = step({"A": {}})
        assert foo_of(r1) == {"A": [0, 1, 2]}
        r2 = step({"A": r1["A"], "B": {}})
        assert foo_of(r2) == {"A": [0, 1], "B": [2]}
        r3 = step({"A": r2["A"], "B": r2["B"], "C": {}})
        assert foo_of(r3) == {"A": [0], "B": [2], "C": [1]}
        assert r3["B"] is r2["B"]  # unchanged members get their mapping back


def test_registry() -> None:
    assert isinstance(get_assignor("uniform"), UniformAssignor)
    assert ASSIGNORS["uniform"].name == "uniform"
    assert get_assignor("nope") is None


# ---------------------------------------------------------------------------------------------
# Rules in detail
# ---------------------------------------------------------------------------------------------


def test_no_members() -> None:
    assert fresh().assign(GroupSpec({}, {FOO: TopicMetadata(FOO, "foo", 3)})) == {}


def test_no_topics_and_missing_topics() -> None:
    spec = spec_of({}, {"A": frozenset({FOO}), "B": frozenset({FOO})}, {"A": {FOO: [0, 1]}})
    assert fresh().assign(spec) == {"A": {}, "B": {}}


def test_zero_partition_topic() -> None:
    spec = spec_of({FOO: ("foo", 0), BAR: ("bar", 2)}, {"A": frozenset({FOO, BAR})}, {})
    assert fresh().assign(spec) == {"A": {BAR: frozenset({0, 1})}}


def test_invalid_previous_partitions_are_dropped() -> None:
    subs = frozenset({FOO})
    spec = spec_of(
        {FOO: ("foo", 4)},
        {"A": subs, "B": subs},
        {"A": {FOO: [0, 7, -1], GONE: [0]}, "B": {FOO: [], BAR: [1]}},
    )
    result = fresh().assign(spec)
    # A keeps 0 (7, -1 and the unknown topic dropped); 1, 2, 3 handed out to the fewest.
    assert foo_of(result) == {"A": [0, 2], "B": [1, 3]}
    assert set(result["A"]) == {FOO} and set(result["B"]) == {FOO}


def test_unsubscribed_topic_is_dropped() -> None:
    subs = frozenset({FOO})
    spec = spec_of({FOO: ("foo", 2), BAR: ("bar", 2)}, {"A": subs, "B": subs},
                   {"A": {FOO: [0], BAR: [0, 1]}, "B": {FOO: [1]}})
    result = fresh().assign(spec)
    assert result == {"A": {FOO: frozenset({0})}, "B": {FOO: frozenset({1})}}


def test_duplicates_go_to_smallest_member_id() -> None:
    subs = frozenset({FOO})
    spec = spec_of({FOO: ("foo", 4)}, {"B": subs, "A": subs},
                   {"B": {FOO: [0, 1]}, "A": {FOO: [1, 2]}})
    result = fresh().assign(spec)
    assert foo_of(result) == {"A": [1, 2], "B": [0, 3]}


def test_give_up_order_topics_by_id_highest_first() -> None:
    """An over-quota member gives up partitions: topic-id order, highest partition ids first."""
    subs = frozenset({FOO, BAR})
    spec = spec_of(
        {FOO: ("foo", 3), BAR: ("bar", 3)},
        {"A": subs, "B": subs},
        {"A": {FOO: [0, 1, 2], BAR: [0, 1, 2]}},
    )
    result = fresh().assign(spec)
    # BAR's id sorts first: A gives up bar-2, bar-1, bar-0 before touching foo.
    assert result["A"] == {FOO: frozenset({0, 1, 2})}
    assert result["B"] == {BAR: frozenset({0, 1, 2})}


def test_give_up_the_most_recently_added_first() -> None:
    """With ``held_since`` (KIP-1251 assignment epochs), a member above its quota gives up the
    partition it got last: C holds foo-2 and foo-5 since epoch 22, foo-4 since 23 (the KIP-848
    "Online Migration" case study); a partition of its target it does not hold yet goes first;
    ties fall back to the highest id."""
    since = {2: 22, 5: 22, 4: 23}
    spec = foo_spec(6, {"A": [0, 1, 3], "B": [], "C": [2, 4, 5]})
    members = dict(spec.members)
    members["C"] = replace(members["C"], held_since=lambda t, p: since.get(p))
    result = fresh().assign(GroupSpec(members, spec.topics))
    assert foo_of(result) == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}
    # foo-2 not held yet (in C's target only): it goes before foo-4.
    since = {4: 23, 5: 22}
    result = fresh().assign(GroupSpec(members, spec.topics))
    assert foo_of(result) == {"A": [0, 1], "B": [2, 3], "C": [4, 5]}
    # Every partition held since the same epoch: the highest id, as without epochs.
    since = {2: 22, 4: 22, 5: 22}
    result = fresh().assign(GroupSpec(members, spec.topics))
    assert foo_of(result) == foo_of(fresh().assign(spec)) == {"A": [0, 1], "B": [3, 5],
                                                                  "C": [2, 4]}


class _WholeTopic:
    """A ``held_since`` that also answers a topic at a time (``topic``), as the coordinator's
    does (``target_assignment._HeldSince``), from the same partition -> epoch map."""

    def __init__(self, since: dict[int, int]) -> None:
        self.since = since

    def __call__(self, topic_id: UUID, partition: int) -> int | None:
        return self.since.get(partition)

    def topic(self, topic_id: UUID) -> dict[int, int]:
        return dict(self.since)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 11), st.integers(1, 4), max_size=12),
       st.lists(st.integers(0, 2), min_size=12, max_size=12))
def test_give_up_order_asked_a_topic_at_a_time_is_the_same(since: dict[int, int],
                                                           owner: list[int]) -> None:
    """The recency order asked once per topic (``held_since.topic``) gives up exactly the
    partitions the per-partition order gives up, ties (equal epochs, not held) included."""
    targets: dict[str, list[int]] = {"A": [], "B": [], "C": []}
    for p, o in enumerate(owner):
        targets["ABC"[o]].append(p)
    spec = foo_spec(12, targets)
    per_partition = dict(spec.members)
    whole = dict(spec.members)
    for mid in per_partition:
        per_partition[mid] = replace(per_partition[mid], held_since=lambda t, p: since.get(p))
        whole[mid] = replace(whole[mid], held_since=_WholeTopic(since))
    assert fresh().assign(GroupSpec(whole, spec.topics)) == \
        fresh().assign(GroupSpec(per_partition, spec.topics))


def test_handout_order_by_topic_name() -> None:
    subs = frozenset({FOO, BAR})
    spec = spec_of({FOO: ("foo", 1), BAR: ("bar", 1)}, {"B": subs, "A": subs}, {})
    # bar-0 first (name order) to A (tie on counts, smallest id), then foo-0 to B.
    assert fresh().assign(spec) == {"A": {BAR: frozenset({0})}, "B": {FOO: frozenset({0})}}


def test_extras_go_to_over_quota_members_first() -> None:
    subs = frozenset({FOO})
    # 7 partitions, 3 members: q=2, r=1. B and C hold 3 each; B (smaller id) keeps 3.
    spec = spec_of({FOO: ("foo", 7)}, {"A": subs, "B": subs, "C": subs},
                   {"B": {FOO: [0, 1, 2]}, "C": {FOO: [3, 4, 5]}})
    assert foo_of(fresh().assign(spec)) == {"A": [5, 6], "B": [0, 1, 2], "C": [3, 4]}


def test_unchanged_members_get_their_mapping_back() -> None:
    spec = foo_spec(6, {"A": [0, 1], "B": [2, 3], "C": [4, 5]})
    result = fresh().assign(spec)
    for mid, m in spec.members.items():
        assert result[mid] is m.assigned_partitions


# ---------------------------------------------------------------------------------------------
# An independent oracle of the homogeneous rules (slow and obvious)
# ---------------------------------------------------------------------------------------------


def oracle(spec: GroupSpec) -> dict[str, dict[UUID, frozenset[int]]]:
    mids = sorted(spec.members)
    subs = spec.members[mids[0]].subscribed_topic_ids
    sizes = {t: spec.topics[t].num_partitions for t in subs
             if t in spec.topics and spec.topics[t].num_partitions > 0}
    claimed: set[tuple[UUID, int]] = set()
    held: dict[str, set[tuple[UUID, int]]] = {}
    for mid in mids:
        mine: set[tuple[UUID, int]] = set()
        for tid, ps in spec.members[mid].assigned_partitions.items():
            for p in ps:
                if tid in sizes and 0 <= p < sizes[tid] and (tid, p) not in claimed:
                    claimed.add((tid, p))
                    mine.add((tid, p))
        held[mid] = mine
    quota, extras = divmod(sum(sizes.values()), len(mids))
    for mid in mids:
        if len(held[mid]) > quota:
            limit = quota + 1 if extras > 0 else quota
            extras -= limit - quota
            give = sorted(held[mid], key=lambda tp: (tp[0], -tp[1]))[: len(held[mid]) - limit]
            held[mid] -= set(give)
    taken = set().union(*held.values())
    free = sorted(((spec.topics[t].name, t, p) for t, n in sizes.items() for p in range(n)
                   if (t, p) not in taken))
    for _, t, p in free:
        mid = min(mids, key=lambda m: (len(held[m]), m))
        held[mid].add((t, p))
    out: dict[str, dict[UUID, frozenset[int]]] = {}
    for mid in mids:
        d: dict[UUID, set[int]] = {}
        for t, p in held[mid]:
            d.setdefault(t, set()).add(p)
        out[mid] = {t: frozenset(ps) for t, ps in d.items()}
    return out


TOPIC_POOL = [
    (FOO, "foo"),
    (BAR, "bar"),
    (BAZ, "baz"),
    (UUID("00000000-0000-4000-8000-0000000000aa"), "zeta"),
]
MEMBER_POOL = ["A", "B", "C", "D", "E", "F", "G", "a1", "m-0", "m-10", "m-9"]


@st.composite
def homogeneous_specs(draw: st.DrawFn, legal: bool = True) -> GroupSpec:
    """A homogeneous group; the previous assignment is legal unless ``legal`` is False."""
    ntopics = draw(st.integers(1, len(TOPIC_POOL)))
    chosen = TOPIC_POOL[:ntopics]
    sizes = {tid: draw(st.integers(0, 9)) for tid, _ in chosen}
    existing = {tid for tid in sizes if draw(st.booleans()) or legal}
    mids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=7, unique=True))
    subs = frozenset(sizes)
    current: Raw = {mid: {} for mid in mids}
    holders = [*mids, None, None]  # None: unassigned (members left, new partitions)
    for tid, n in sizes.items():
        for p in range(n):
            owner = draw(st.sampled_from(holders))
            if owner is not None:
                current[owner].setdefault(tid, []).append(p)
    if not legal:
        for mid in mids:
            junk = draw(st.lists(st.tuples(st.sampled_from([t for t, _ in TOPIC_POOL] + [GONE]),
                                           st.integers(-2, 12)), max_size=4))
            for tid, p in junk:
                current[mid].setdefault(tid, []).append(p)
            if draw(st.booleans()):
                current[mid].setdefault(FOO, [])  # an empty entry
    names = dict(TOPIC_POOL)
    return spec_of({tid: (names[tid], sizes[tid]) for tid in existing},
                   {mid: subs for mid in mids}, current)


def check_legal(spec: GroupSpec, result: GroupAssignment) -> None:
    """Invariant I2: every partition of every subscribed topic exactly once, only to subscribers."""
    assert set(result) == set(spec.members)
    seen: set[tuple[UUID, int]] = set()
    for mid, a in result.items():
        for tid, ps in a.items():
            assert ps, f"{mid}: empty partition set for {tid}"
            assert isinstance(ps, frozenset)
            assert tid in spec.members[mid].subscribed_topic_ids
            assert tid in spec.topics
            for p in ps:
                assert 0 <= p < spec.topics[tid].num_partitions
                assert (tid, p) not in seen, f"{tid}-{p} assigned twice"
                seen.add((tid, p))
    subscribed = set().union(*(m.subscribed_topic_ids for m in spec.members.values()))
    expected = {(tid, p) for tid in subscribed if tid in spec.topics
                for p in range(spec.topics[tid].num_partitions)}
    assert seen == expected


def count(a: Mapping[UUID, frozenset[int]]) -> int:
    return sum(len(ps) for ps in a.values())


def normal(result: Mapping[str, Mapping[UUID, frozenset[int]]]) -> dict[str, dict[UUID, frozenset[int]]]:
    return {mid: dict(a) for mid, a in result.items()}


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(homogeneous_specs(legal=False))
def test_matches_oracle_on_any_input(spec: GroupSpec) -> None:
    before = snapshot(spec)
    result = fresh().assign(spec)
    assert snapshot(spec) == before, "input mutated"
    check_legal(spec, result)
    assert normal(result) == oracle(spec)


@SETTINGS
@given(homogeneous_specs())
def test_balance_and_stickiness(spec: GroupSpec) -> None:
    result = fresh().assign(spec)
    check_legal(spec, result)
    counts = [count(a) for a in result.values()]
    assert max(counts) - min(counts) <= 1
    total = sum(counts)
    quota = total // len(counts)
    for mid, m in spec.members.items():
        prev = {(t, p) for t, ps in m.assigned_partitions.items() if t in spec.topics
                for p in ps}
        new = {(t, p) for t, ps in result[mid].items() for p in ps}
        if len(prev) <= quota:
            assert prev <= new, f"{mid} lost a partition while not over quota"
        else:
            assert len(prev & new) >= quota


@SETTINGS
@given(homogeneous_specs(legal=False), st.randoms(use_true_random=False))
def test_deterministic_and_order_independent(spec: GroupSpec, rnd: random.Random) -> None:
    first = UniformAssignor().assign(spec)
    assert normal(UniformAssignor().assign(spec)) == normal(first)
    items = list(spec.members.items())
    rnd.shuffle(items)
    topics = list(spec.topics.items())
    rnd.shuffle(topics)
    shuffled_members = {}
    for mid, m in items:
        subs = list(m.subscribed_topic_ids)
        rnd.shuffle(subs)
        entries = list(m.assigned_partitions.items())
        rnd.shuffle(entries)
        shuffled_members[mid] = MemberSubscription(
            mid, frozenset(subs), {t: frozenset(list(ps)[::-1]) for t, ps in entries}
        )
    shuffled = GroupSpec(shuffled_members, dict(topics))
    assert normal(UniformAssignor().assign(shuffled)) == normal(first)


# ---------------------------------------------------------------------------------------------
# The incremental fast path (memo) never changes a result
# ---------------------------------------------------------------------------------------------


EVENTS = st.lists(
    st.tuples(st.sampled_from(["join", "leave", "grow", "shrink", "reset", "copy", "add_topic",
                               "drop_topic", "same"]),
              st.integers(0, 10_000)),
    min_size=1, max_size=12,
)


def apply_event(event: str, k: int, current: dict[str, Mapping[UUID, frozenset[int]]],
                sizes: dict[UUID, int], counter: int) -> int:
    """One event of ``EVENTS`` applied to the members' current targets and the topics' sizes
    (a member that leaves keeps its target wherever the caller keeps one); returns the next
    member number."""
    if event == "join":
        current[f"m{counter}"] = {}
        return counter + 1
    if event == "leave" and len(current) > 1:
        del current[sorted(current)[k % len(current)]]
    elif event in ("grow", "shrink"):
        tid = [FOO, BAR][k % 2]
        step = 1 + k % 3
        sizes[tid] = sizes[tid] + step if event == "grow" else max(0, sizes[tid] - step)
    elif event == "reset":
        current[sorted(current)[k % len(current)]] = {}
    elif event == "copy":
        mid = sorted(current)[k % len(current)]
        current[mid] = dict(current[mid])
    elif event == "add_topic":
        sizes.setdefault(BAZ, 1 + k % 5)
    elif event == "drop_topic" and len(sizes) > 1:
        sizes.pop(BAZ, None)
    return counter


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.integers(1, 5), st.integers(0, 12))
def test_memo_path_equals_full_read(events: list[tuple[str, int]], nmembers: int,
                                    nparts: int) -> None:
    memo = UniformAssignor(memo_members=20)
    names = dict(TOPIC_POOL)
    sizes = {FOO: nparts, BAR: 3}
    mids = [f"m{i}" for i in range(nmembers)]
    current: dict[str, Mapping[UUID, frozenset[int]]] = {mid: {} for mid in mids}
    counter = nmembers
    for event, k in events:
        counter = apply_event(event, k, current, sizes, counter)
        subs = frozenset(sizes)
        topics = {t: TopicMetadata(t, names[t], n) for t, n in sizes.items()}
        spec = GroupSpec(
            {mid: MemberSubscription(mid, subs, current[mid]) for mid in current}, topics
        )
        copied = GroupSpec(
            {mid: MemberSubscription(mid, subs, copy.deepcopy(dict(current[mid])))
             for mid in current}, topics,
        )
        result = memo.assign(spec)
        expected = fresh().assign(copied)
        check_legal(spec, result)
        assert normal(result) == normal(expected)
        assert normal(result) == oracle(spec)
        current = dict(result)


def test_memo_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fed its own output back (a member joins, another leaves, a topic grows), the assignor
    does not read the mappings again, and still agrees with the full read."""
    import groupcoord.coordinator.assignors.uniform as uniform_module

    u = UniformAssignor()
    first = u.assign(foo_spec(6, {"A": [], "B": [], "C": []}))
    later = foo_spec(8, {"B": [], "C": [], "D": []})
    later = GroupSpec(
        {mid: MemberSubscription(mid, m.subscribed_topic_ids, first.get(mid, {}))
         for mid, m in later.members.items()}, later.topics,
    )
    expected = fresh().assign(copy.deepcopy(later))

    def no_full_read(*args: object, **kwargs: object) -> object:
        raise AssertionError("full read taken")

    monkeypatch.setattr(uniform_module, "_read_all", no_full_read)
    assert normal(u.assign(later)) == normal(expected)


def test_memo_is_bounded() -> None:
    u = UniformAssignor(memo_members=5)
    for n in range(1, 6):
        u.assign(foo_spec(n, {"A": [], "B": []}))
    assert len(u._records) == 2  # 2 members each: two outputs fit in 5
    big = {f"m{i}": [] for i in range(9)}
    u.assign(foo_spec(3, big))
    assert len(u._records) == 1  # the newest is kept even when it alone exceeds the budget
    assert UniformAssignor(memo_members=0).assign(foo_spec(1, {"A": []})) == {"A": {FOO: frozenset({0})}}


# ---------------------------------------------------------------------------------------------
# Heterogeneous subscriptions
# ---------------------------------------------------------------------------------------------


@st.composite
def heterogeneous_specs(draw: st.DrawFn, legal: bool = True) -> GroupSpec:
    ntopics = draw(st.integers(1, len(TOPIC_POOL)))
    chosen = TOPIC_POOL[:ntopics]
    sizes = {tid: draw(st.integers(0, 9)) for tid, _ in chosen}
    mids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=7, unique=True))
    pool = list(sizes) + ([] if legal else [GONE])
    subs = {mid: frozenset(draw(st.sets(st.sampled_from(pool)))) for mid in mids}
    current: Raw = {mid: {} for mid in mids}
    for tid, n in sizes.items():
        holders = [m for m in mids if tid in subs[m] or not legal] + [None]
        for p in range(n):
            owner = draw(st.sampled_from(holders))
            if owner is not None:
                current[owner].setdefault(tid, []).append(p)
    if not legal:
        for mid in mids:
            for tid, p in draw(st.lists(st.tuples(st.sampled_from([FOO, BAR, GONE]),
                                                  st.integers(-2, 12)), max_size=3)):
                current[mid].setdefault(tid, []).append(p)
    names = dict(TOPIC_POOL)
    return spec_of({tid: (names[tid], n) for tid, n in sizes.items()}, subs, current)


def cost_reducing_path_exists(spec: GroupSpec, result: GroupAssignment) -> bool:
    """Is there a chain X -> ... -> Z, each hop giving a partition of a topic the next member
    subscribes to, with load(X) >= load(Z) + 2? (Brute force BFS from every member.)"""
    load = {mid: count(a) for mid, a in result.items()}
    for source in spec.members:
        seen = {source}
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for tid in result[u]:
                for v, m in spec.members.items():
                    if v not in seen and tid in m.subscribed_topic_ids:
                        if load[v] <= load[source] - 2:
                            return True
                        seen.add(v)
                        queue.append(v)
    return False


@SETTINGS
@given(heterogeneous_specs(legal=False))
def test_heterogeneous_legal_and_balanced(spec: GroupSpec) -> None:
    before = snapshot(spec)
    result = fresh().assign(spec)
    assert snapshot(spec) == before
    check_legal(spec, result)
    assert not cost_reducing_path_exists(spec, result)


@SETTINGS
@given(heterogeneous_specs())
def test_heterogeneous_sticky_when_already_balanced(spec: GroupSpec) -> None:
    once = fresh().assign(spec)
    again_spec = GroupSpec(
        {mid: MemberSubscription(mid, m.subscribed_topic_ids, once[mid])
         for mid, m in spec.members.items()}, spec.topics,
    )
    again = fresh().assign(again_spec)
    assert normal(again) == normal(once)
    for mid in once:
        assert again[mid] is once[mid]


@SETTINGS
@given(heterogeneous_specs(legal=False), st.randoms(use_true_random=False))
def test_heterogeneous_deterministic(spec: GroupSpec, rnd: random.Random) -> None:
    first = fresh().assign(spec)
    items = list(spec.members.items())
    rnd.shuffle(items)
    shuffled = GroupSpec(
        {mid: MemberSubscription(mid, frozenset(reversed(list(m.subscribed_topic_ids))),
                                 dict(reversed(list(m.assigned_partitions.items()))))
         for mid, m in items},
        dict(reversed(list(spec.topics.items()))),
    )
    assert normal(fresh().assign(shuffled)) == normal(first)


def test_heterogeneous_example_from_sticky_docs() -> None:
    """KIP-54's example 2: C0 {t0}, C1 {t0,t1}, C2 {t0,t1,t2}; t0..t2 with 1, 2, 3 partitions."""
    t0, t1, t2 = (UUID(int=i) for i in (1, 2, 3))
    topics = {t0: ("t0", 1), t1: ("t1", 2), t2: ("t2", 3)}
    subs = {"C0": frozenset({t0}), "C1": frozenset({t0, t1}), "C2": frozenset({t0, t1, t2})}
    result = fresh().assign(spec_of(topics, subs, {}))
    assert [count(result[m]) for m in ("C0", "C1", "C2")] == [1, 2, 3]
    assert result["C0"] == {t0: frozenset({0})}
    assert result["C2"] == {t2: frozenset({0, 1, 2})}
    # C0 leaves: 5 partitions kept, t0-0 goes to C1.
    current = {"C1": {t: list(ps) for t, ps in result["C1"].items()},
               "C2": {t: list(ps) for t, ps in result["C2"].items()}}
    after = fresh().assign(spec_of(topics, {m: subs[m] for m in ("C1", "C2")}, current))
    assert after["C1"] == {t0: frozenset({0}), t1: frozenset({0, 1})}
    assert after["C2"] == {t2: frozenset({0, 1, 2})}


@pytest.mark.parametrize("nmembers", [1, 2, 5])
def test_heterogeneous_member_without_topics(nmembers: int) -> None:
    subs = {f"m{i}": frozenset({FOO}) for i in range(nmembers)}
    subs["idle"] = frozenset()
    result = fresh().assign(spec_of({FOO: ("foo", 4)}, subs, {}))
    assert result["idle"] == {}
    check_legal(spec_of({FOO: ("foo", 4)}, subs, {}), result)


BIG_EVENTS = st.lists(
    st.tuples(st.sampled_from(["join", "join_many", "leave", "reset", "copy", "shuffle", "rotate",
                               "grow", "same"]),
              st.integers(0, 10_000)),
    min_size=1, max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(BIG_EVENTS, st.integers(60, 140), st.integers(0, 400), st.randoms(use_true_random=False))
def test_memo_path_equals_full_read_in_any_member_order(
        events: list[tuple[str, int]], nmembers: int, nparts: int, rnd: random.Random) -> None:
    """The memo certifies members by position while the input lists them as its output did,
    and by member id after that (one by one for a few members, in bulk for many): any order,
    any change, the same result as the full read."""
    memo = UniformAssignor()
    sizes = {FOO: nparts, BAR: 7}
    names = dict(TOPIC_POOL)
    current: dict[str, Mapping[UUID, frozenset[int]]] = {f"m{i}": {} for i in range(nmembers)}
    counter = nmembers
    for event, k in events:
        mids = list(current)
        if event == "join":
            current[f"n{counter}"] = {}
            counter += 1
        elif event == "join_many":
            for _ in range(1 + k % 80):
                current[f"n{counter}"] = {}
                counter += 1
        elif event == "leave" and len(current) > 1:
            del current[mids[k % len(mids)]]
        elif event == "reset":
            current[mids[k % len(mids)]] = {}
        elif event == "copy":
            current[mids[k % len(mids)]] = dict(current[mids[k % len(mids)]])
        elif event == "shuffle":
            rnd.shuffle(mids)
            current = {mid: current[mid] for mid in mids}
        elif event == "rotate":  # the first member moved last: everything shifts by one
            current = {mid: current[mid] for mid in mids[1:] + mids[:1]}
        elif event == "grow":
            sizes[FOO] += 1 + k % 5
        subs = frozenset(sizes)
        topics = {t: TopicMetadata(t, names[t], n) for t, n in sizes.items()}
        spec = GroupSpec({mid: MemberSubscription(mid, subs, a) for mid, a in current.items()},
                         topics)
        result = memo.assign(spec)
        check_legal(spec, result)
        assert normal(result) == normal(fresh().assign(copy.deepcopy(spec)))
        for mid, a in current.items():  # unchanged members get their input mapping back
            if normal({mid: result[mid]}) == normal({mid: a}):
                assert result[mid] is a or not a
        current = dict(result)
