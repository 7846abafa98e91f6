"""The share groups' assignor (KIP-932 "Share group assignment", Kafka's ``simple``): every
subscribed partition to at least one subscriber, every subscriber to at least one partition,
balanced within one (partitions per member, or members per partition when members outnumber
partitions), sticky, deterministic; and the same guarantees kept by the coordinator through
random sequences of joins, heartbeats, leaves, expiries and topic changes (epochs only grow,
replay equals live state)."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.share import assignor
from groupcoord.coordinator.modern.share.messages import ShareGroupHeartbeatRequest
from groupcoord.coordinator.modern.share.model import ShareGroup
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.coordinator.topics import MetadataImage

from .support import Client, topic

T = [UUID(int=i + 1) for i in range(3)]


def _pairs(a: dict[str, dict[UUID, frozenset[int]]]) -> Counter[tuple[UUID, int]]:
    return Counter((t, p) for parts in a.values() for t, ps in parts.items() for p in ps)


def _count(parts: dict[UUID, frozenset[int]]) -> int:
    return sum(len(ps) for ps in parts.values())


def test_members_outnumbering_partitions_share_them() -> None:
    a = assignor.assign({m: frozenset({T[0]}) for m in "ABCD"}, {T[0]: 2}, {})
    assert a == {"A": {T[0]: frozenset({0})}, "B": {T[0]: frozenset({0})},
                 "C": {T[0]: frozenset({1})}, "D": {T[0]: frozenset({1})}}


def test_every_partition_gets_the_same_sharing() -> None:
    """Kafka's desired sharing: 3 members on 2 partitions, each partition has two members, so
    one member has both (4 assignments over 3 members)."""
    a = assignor.assign({m: frozenset({T[0]}) for m in "ABC"}, {T[0]: 2}, {})
    assert sorted(_pairs(a).values()) == [2, 2]
    assert sorted(_count(p) for p in a.values()) == [1, 1, 2]


def test_partitions_outnumbering_members_go_once_each() -> None:
    a = assignor.assign({m: frozenset({T[0], T[1]}) for m in "AB"}, {T[0]: 3, T[1]: 2}, {})
    assert sorted(_count(p) for p in a.values()) == [2, 3]
    assert set(_pairs(a).values()) == {1} and len(_pairs(a)) == 5


def test_no_members_and_no_partitions() -> None:
    assert assignor.assign({}, {T[0]: 3}, {}) == {}
    assert assignor.assign({"A": frozenset({T[0]})}, {T[0]: 0}, {}) == {"A": {}}
    assert assignor.assign({"A": frozenset()}, {T[0]: 2}, {}) == {"A": {}}


homogeneous = st.tuples(
    st.lists(st.sampled_from([f"m{i:02d}" for i in range(40)]), min_size=1, max_size=25,
             unique=True),
    st.lists(st.integers(0, 12), min_size=1, max_size=3),
    st.randoms(use_true_random=False))


@settings(max_examples=150, deadline=None)
@given(homogeneous)
def test_homogeneous_assignments_are_complete_balanced_and_sticky(case) -> None:
    members, counts, rnd = case
    partitions = {T[i]: n for i, n in enumerate(counts)}
    subs = {m: frozenset(partitions) for m in members}
    every = [(t, p) for t, n in partitions.items() for p in range(n)]
    # a random current assignment (what the members had before), valid or not
    current = {m: {t: frozenset(p for p in range(n + 2) if rnd.random() < 0.3)
                   for t, n in partitions.items()} for m in members}
    a = assignor.assign(subs, partitions, current)
    assert set(a) == set(members)
    held = _pairs(a)
    assert set(held) == set(every)  # complete, and nothing outside the subscription
    counts_per_member = [_count(p) for p in a.values()]
    if not every:
        assert counts_per_member == [0] * len(members)
    elif len(every) >= len(members):
        assert set(held.values()) == {1}
        assert max(counts_per_member) - min(counts_per_member) <= 1
    else:  # every partition shared by ceil(M / P) members, members within one of each other
        sharing = -(-len(members) // len(every))
        assert set(held.values()) == {sharing}
        assert min(counts_per_member) >= 1
        assert max(counts_per_member) - min(counts_per_member) <= 1
    # deterministic, and a fixed point: given its own result, nothing moves
    assert assignor.assign(subs, partitions, current) == a
    assert assignor.assign(subs, partitions, a) == a
    # a member leaving (partitions >= members): every other member keeps what it had
    if len(members) > 1 and len(every) >= len(members):
        gone = members[0]
        rest = {m: s for m, s in subs.items() if m != gone}
        b = assignor.assign(rest, partitions, {m: a[m] for m in rest})
        for m in rest:
            for t, ps in a[m].items():
                assert ps <= b[m].get(t, frozenset()), (m, a[m], b[m])


heterogeneous = st.tuples(
    st.dictionaries(st.sampled_from([f"m{i:02d}" for i in range(30)]),
                    st.frozensets(st.sampled_from(T), max_size=3), min_size=1, max_size=15),
    st.lists(st.integers(0, 8), min_size=3, max_size=3),
    st.randoms(use_true_random=False))


@settings(max_examples=150, deadline=None)
@given(heterogeneous)
def test_heterogeneous_assignments_are_complete(case) -> None:
    subs, counts, rnd = case
    partitions = {T[i]: n for i, n in enumerate(counts)}
    current = {m: {t: frozenset(p for p in range(n) if rnd.random() < 0.3)
                   for t, n in partitions.items()} for m in subs}
    a = assignor.assign(subs, partitions, current)
    wanted = {(t, p) for s in subs.values() for t in s for p in range(partitions[t])}
    assert set(_pairs(a)) == wanted
    for m, parts in a.items():
        assert all(t in subs[m] for t, ps in parts.items() if ps)  # only what it subscribes to
        if any(partitions[t] for t in subs[m]):
            assert _count(parts) >= 1
    assert assignor.assign(subs, partitions, current) == a


# ----------------------------------------------------------------------------- the coordinator

op = st.one_of(
    st.tuples(st.just("join"), st.sampled_from("ABCDEF"), st.sampled_from(["x", "y", "xy"])),
    st.tuples(st.just("beat"), st.sampled_from("ABCDEF"), st.just("")),
    st.tuples(st.just("leave"), st.sampled_from("ABCDEF"), st.just("")),
    st.tuples(st.just("wait"), st.sampled_from(["20000", "50000"]), st.just("")),
    st.tuples(st.just("topics"), st.sampled_from(["x", "y"]), st.sampled_from(["0", "1", "3"])),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(op, max_size=40))
def test_random_operations_keep_epochs_growing_targets_legal_and_replay_equal(ops) -> None:
    sizes = {"x": 2, "y": 1}
    shard = Shard(config=CoordinatorConfig(share_assignment_interval_ms=0),
                  metadata=MetadataImage.of(topic(n, p) for n, p in sizes.items()))
    c = Client(shard)
    group_epoch = 0
    member_epochs: dict[str, int] = {}
    for kind, a, b in ops:
        g = shard.groups.get("g")
        members = g.members if isinstance(g, ShareGroup) else {}
        if kind == "join" and a not in members:
            c.handle(ShareGroupHeartbeatRequest("g", a, 0, subscribed_topic_names=tuple(b)))
        elif kind == "beat" and a in members:
            r = c.handle(ShareGroupHeartbeatRequest("g", a, members[a].member_epoch))
            assert r.error_code == 0
        elif kind == "leave" and a in members:
            c.handle(ShareGroupHeartbeatRequest("g", a, -1))
        elif kind == "wait":
            c.advance(int(a))
        elif kind == "topics":
            sizes[a] = int(b)
            image = MetadataImage.of(topic(n, p) for n, p in sizes.items() if p)
            c.records.extend(shard.update_metadata(image, c.now).records)
        g = shard.groups.get("g")
        if not isinstance(g, ShareGroup):
            continue
        # I3: epochs only grow; member epoch <= assignment epoch <= group epoch
        assert g.group_epoch >= group_epoch
        group_epoch = g.group_epoch
        assert g.assignment_epoch <= g.group_epoch
        for mid, m in g.members.items():
            assert m.member_epoch <= g.assignment_epoch
            assert m.member_epoch >= member_epochs.get(mid, 0)
            member_epochs[mid] = m.member_epoch
        for mid in set(member_epochs) - set(g.members):
            del member_epochs[mid]  # gone: a rejoin starts again at 0
        # I2 for share groups: a computed target covers every subscribed partition, and only
        # members that exist and subscribe hold anything
        if g.members and g.assignment_epoch == g.group_epoch:
            by_name = shard.metadata.by_name
            wanted = {(by_name[t].topic_id, p) for m in g.members.values()
                      for t in m.subscribed_topic_names if t in by_name
                      for p in range(by_name[t].num_partitions)}
            targeted = {(t, p) for parts in g.target.values() for t, ps in parts.items()
                        for p in ps}
            assert targeted == wanted
            for mid, parts in g.target.items():
                names = {shard.metadata.by_id[t].name for t, ps in parts.items() if ps}
                assert names <= set(g.members[mid].subscribed_topic_names)
        assert set(g.target) <= set(g.members)
    # I4: replay equals live state
    rebuilt = Shard(config=shard.config, metadata=shard.metadata)
    rebuilt.replay_all(Record.decode(*r.encode()) for r in c.records)
    assert rebuilt.state_digest() == shard.state_digest()
