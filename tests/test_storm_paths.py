"""The join storm's hot paths give the results of their per-partition definitions.

A join storm of many members on a large topic (``bench scale``) writes a current-assignment record
for every change of a member's assignment, and the first member of a storm holds every
partition. These paths are computed a topic at a time with set operations; the tests compare
them with the per-partition definitions they replace, on random members:

- KIP-1251 assignment epochs carried into a member's next current assignment
  (``carried_epochs``) against ``held_since`` per partition;
- reconciliation with the holders of a whole topic looked up once (``holders_of``) against
  ``owner_of`` per partition: the same state, epochs, assigned and pending partitions;
- a group's derived state (owners, subscription counts, classic members) after replacing a
  member that kept its assignment mappings or its subscription, against a group rebuilt
  from scratch.
"""

from __future__ import annotations

import random
from collections import Counter
from uuid import UUID

import pytest

from groupcoord.coordinator.modern.consumer.assignment_epochs import carried_epochs, held_since
from groupcoord.coordinator.modern.consumer.messages import TopicPartitions
from groupcoord.coordinator.modern.consumer.model import (
    ConsumerGroup,
    ConsumerGroupMember,
    with_current_assignment,
)
from groupcoord.coordinator.modern.consumer.reconciliation import reconcile
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.modern.reconciliation import reconcile_items
from groupcoord.coordinator.records import ClassicMemberMetadata

TOPICS = [UUID(int=(k + 1) << 64 | (7 - k)) for k in range(4)]


def _assignment(rng: random.Random, pool: dict[UUID, set[int]], p: float) -> dict[UUID, frozenset[int]]:
    """Random partitions taken out of ``pool`` (so two draws never share a partition)."""
    out = {}
    for t in TOPICS:
        taken = {x for x in pool[t] if rng.random() < p}
        pool[t] -= taken
        if taken or rng.random() < 0.1:  # an empty set under a topic now and then
            out[t] = frozenset(taken)
    return out


def _epochs(rng: random.Random, a: dict[UUID, frozenset[int]], r: dict[UUID, frozenset[int]],
            epoch: int) -> dict[UUID, dict[int, int]]:
    out: dict[UUID, dict[int, int]] = {}
    for src in (a, r):
        for t, ps in src.items():
            for x in ps:
                if rng.random() < 0.3:
                    out.setdefault(t, {})[x] = rng.choice([epoch, max(1, epoch - 1),
                                                           max(1, epoch - 3)])
    return out


def _reference_carried(old: ConsumerGroupMember | None,
                       new: ConsumerGroupMember) -> dict[UUID, dict[int, int]]:
    out: dict[UUID, dict[int, int]] = {}
    if old is None:
        return out
    for source in (new.assigned_partitions, new.partitions_pending_revocation):
        for topic_id, partitions in source.items():
            for p in partitions:
                e = held_since(old, topic_id, p)
                if e is not None and e != new.member_epoch:
                    out.setdefault(topic_id, {})[p] = e
    return out


def _pool() -> dict[UUID, set[int]]:
    return {t: set(range(40)) for t in TOPICS}


@pytest.mark.parametrize("seed", range(150))
def test_carried_epochs_match_held_since_per_partition(seed: int) -> None:
    rng = random.Random(seed)
    pool = _pool()
    old_epoch = rng.randint(1, 6)
    old_a, old_r = _assignment(rng, pool, 0.3), _assignment(rng, pool, 0.2)
    old = ConsumerGroupMember("m", member_epoch=old_epoch, assigned_partitions=old_a,
                              partitions_pending_revocation=old_r,
                              assignment_epochs=_epochs(rng, old_a, old_r, old_epoch))
    # the next assignment keeps some of the old partitions (assigned or revoking) and adds others
    pool2 = {t: set(range(40)) for t in TOPICS}
    new_a = {t: frozenset(x for x in ps if rng.random() < 0.5) | frozenset(
        x for x in pool2[t] if rng.random() < 0.1) for t, ps in
        {t: old_a.get(t, frozenset()) | old_r.get(t, frozenset()) for t in TOPICS}.items()}
    new_r = {t: frozenset(x for x in old_a.get(t, ()) if x not in new_a[t] and rng.random() < 0.5)
             for t in TOPICS}
    new_epoch = rng.choice([old_epoch, old_epoch, old_epoch + 1, old_epoch + 3])
    new = with_current_assignment(old, new_epoch, old_epoch, MemberState.STABLE, new_a, new_r)
    assert carried_epochs(old, new) == _reference_carried(old, new)
    assert carried_epochs(None, new) == {}


def test_carried_epochs_of_a_member_holding_a_whole_topic() -> None:
    """The storm's first member: 100,000 partitions, revoking most at its epoch, then moving
    on to a later epoch with the rest."""
    t = TOPICS[0]
    every = frozenset(range(100_000))
    old = ConsumerGroupMember("m", member_epoch=1, assigned_partitions={t: every})
    kept = frozenset(range(10))
    revoking = with_current_assignment(old, 1, 1, MemberState.UNREVOKED_PARTITIONS,
                                       {t: kept}, {t: every - kept})
    assert carried_epochs(old, revoking) == {} == _reference_carried(old, revoking)
    # it keeps its ten, and takes back one it was revoking (held since epoch 1 too)
    moved = with_current_assignment(revoking, 5, 1, MemberState.STABLE,
                                    {t: kept | {20_000}, TOPICS[1]: frozenset({3})}, {})
    assert carried_epochs(revoking, moved) == {t: dict.fromkeys(kept | {20_000}, 1)} \
        == _reference_carried(revoking, moved)


def _owned(a: dict[UUID, frozenset[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in a.items())


@pytest.mark.parametrize("seed", range(150))
def test_reconcile_with_holders_matches_owner_of_per_partition(seed: int) -> None:
    rng = random.Random(seed)
    group = ConsumerGroup("g")
    pool = _pool()
    # other members hold some partitions (assigned or revoking)
    for k in range(3):
        a, r = _assignment(rng, pool, 0.15), _assignment(rng, pool, 0.1)
        group.put_member(ConsumerGroupMember(f"o{k}", member_epoch=3, assigned_partitions=a,
                                             partitions_pending_revocation=r))
    state = rng.choice(list(MemberState)[:3])
    a, r = _assignment(rng, pool, 0.2), _assignment(rng, pool, 0.1)
    if state is not MemberState.UNREVOKED_PARTITIONS:
        r = {}
    member = ConsumerGroupMember("m", member_epoch=3, previous_member_epoch=2, state=state,
                                 assigned_partitions=a, partitions_pending_revocation=r)
    group.put_member(member)
    every = {t: frozenset(range(40)) for t in TOPICS}
    target = {t: frozenset(x for x in every[t] if rng.random() < 0.35) for t in TOPICS}
    target_epoch = rng.choice([3, 4, 6])
    owned = rng.choice([None, _owned(a), _owned({t: ps | r.get(t, frozenset())
                                                 for t, ps in a.items()})])
    slow = reconcile(member, target_epoch, target, group.owner_of, owned)
    fast = reconcile(member, target_epoch, target, group.owner_of, owned, group.owners.get)
    assert (fast is member) == (slow is member)
    assert (fast.state, fast.member_epoch, fast.previous_member_epoch) == \
        (slow.state, slow.member_epoch, slow.previous_member_epoch)
    assert fast.assigned_partitions == slow.assigned_partitions
    assert fast.partitions_pending_revocation == slow.partitions_pending_revocation


def test_reconcile_items_without_holders_still_asks_owner_of() -> None:
    """Connect groups give no ``holders_of``: ``owner_of`` answers per item, as before."""
    asked = []

    def owner_of(key: str, i: int) -> str | None:
        asked.append((key, i))
        return "other" if i == 1 else None

    step = reconcile_items("w", MemberState.STABLE, 1, 0, {}, {}, 2, {"c": frozenset({0, 1})},
                           owner_of, lambda _: False)
    assert step is not None and step.state is MemberState.UNRELEASED_PARTITIONS
    assert dict(step.assigned) == {"c": frozenset({0})} and sorted(asked) == [("c", 0), ("c", 1)]


def _derived(group: ConsumerGroup) -> tuple[object, ...]:
    return ({t: dict(ps) for t, ps in group.owners.items()}, Counter(group.subscribed_names),
            Counter(group.subscribed_regexes), group.classic_members, dict(group.static_members))


def _rebuilt(group: ConsumerGroup) -> ConsumerGroup:
    fresh = ConsumerGroup(group.group_id)
    for m in group.members.values():
        fresh.put_member(m)
    return fresh


@pytest.mark.parametrize("seed", range(60))
def test_replacing_members_keeps_derived_state_as_a_rebuild(seed: int) -> None:
    rng = random.Random(seed)
    group = ConsumerGroup("g")
    pool = _pool()
    classic = ClassicMemberMetadata(45_000, (("range", b""),))
    for k in range(4):
        group.put_member(ConsumerGroupMember(
            f"m{k}", instance_id=f"i{k}" if k % 2 else None,
            subscribed_topic_names=tuple(sorted(rng.sample(["a", "b", "c"], rng.randint(0, 3)))),
            subscribed_topic_regex=rng.choice([None, "a.*"]),
            classic=classic if rng.random() < 0.5 else None, member_epoch=1,
            assigned_partitions=_assignment(rng, pool, 0.2)))
    for _ in range(30):
        mid = f"m{rng.randrange(4)}"
        old = group.members[mid]
        kind = rng.randrange(4)
        if kind == 0:  # a metadata record: the same assignment mappings
            new = ConsumerGroupMember(
                mid, instance_id=old.instance_id, client_id="c",
                subscribed_topic_names=rng.choice([old.subscribed_topic_names, ("b",)]),
                subscribed_topic_regex=old.subscribed_topic_regex,
                classic=rng.choice([old.classic, None, classic]),
                member_epoch=old.member_epoch, state=old.state,
                assigned_partitions=old.assigned_partitions,
                partitions_pending_revocation=old.partitions_pending_revocation)
        elif kind == 1:  # a current-assignment record: the same subscription
            back = {t: set(ps) for t, ps in old.assigned_partitions.items()}
            for t in TOPICS:
                pool[t] |= back.get(t, set())
            new = with_current_assignment(old, old.member_epoch + 1, old.member_epoch,
                                          MemberState.STABLE, _assignment(rng, pool, 0.2), {})
        elif kind == 2:  # the same member again
            new = old
        else:
            group.remove_member(mid)
            for t, ps in old.assigned_partitions.items():
                pool[t] |= ps
            new = ConsumerGroupMember(mid, subscribed_topic_names=("c",), member_epoch=1,
                                      assigned_partitions=_assignment(rng, pool, 0.1))
        group.put_member(new)
        assert _derived(group) == _derived(_rebuilt(group))


def test_a_reconciled_member_shares_its_targets_sets() -> None:
    """Memory per assigned partition: a member that reaches its target holds the target's
    sets (one copy of the partitions between target and current assignment), and a member
    that keeps what it had keeps its own set."""
    t, u = TOPICS[0], TOPICS[1]
    target = {t: frozenset({0, 1, 2}), u: frozenset({5})}
    group = ConsumerGroup("g")
    member = ConsumerGroupMember("m", member_epoch=1, assigned_partitions={t: frozenset({0})})
    group.put_member(member)
    step = reconcile(member, 2, target, group.owner_of, None, group.owners.get)
    assert step.state is MemberState.STABLE and step.member_epoch == 2
    assert step.assigned_partitions == target
    assert all(step.assigned_partitions[k] is target[k] for k in target)
    same = {t: frozenset({0}), u: frozenset({9})}
    keeps = ConsumerGroupMember("k", member_epoch=1, assigned_partitions=same)
    kept = reconcile(keeps, 2, {t: frozenset({0}), u: frozenset({9, 10})}, group.owner_of,
                     None, group.owners.get)
    assert kept.state is MemberState.STABLE
    assert kept.assigned_partitions[t] is same[t] and kept.assigned_partitions[u] == {9, 10}
