"""The server-side ``range`` assignor (KIP-848 "Assignor" / ``RangeAssignor``).

KIP-848's ``range`` is "an assignor which co-partitions topics", like the classic client-side
range assignor: for each topic, the members subscribed to it, sorted by member id, split the
topic's partitions into contiguous ranges, the first ``n % m`` members taking one extra. Topics
with the same subscribers and the same partition count ("co-partitioned" topics) therefore give
every member the same partition numbers, which is what joins of co-partitioned streams need.

Like upstream's server-side ``RangeAssignor``, it is also sticky where that does not break the
above: topics are grouped into co-partition classes (same subscribers, same partition count) and
each class is assigned once, as a set of partition *numbers* applied to all its topics:

1. A number belongs to the subscriber that held it on the most topics of the class in its
   previous target assignment (ties: smallest member id); ids outside the topic and topics the
   member no longer subscribes to are ignored.
2. In member-id order, each member keeps its lowest ``q = n // m`` numbers, or ``q + 1`` if it
   held more than ``q`` and some of the ``n % m`` extra slots are left.
3. In member-id order again, members below quota take the lowest free numbers up to ``q``, plus
   one more while extra slots are left.

With no previous assignment this is exactly the contiguous-range split (the client-side range
assignor's result). The result never depends on the iteration order of unordered inputs, the spec
is not mutated, and members whose assignment does not change get their input mapping back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from uuid import UUID

from groupcoord.coordinator.assignors.base import (
    EMPTY_ASSIGNMENT,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
)

log = logging.getLogger(__name__)

__all__ = ["RangeAssignor"]


@dataclass(slots=True, eq=False)
class _Class:
    """Co-partitioned topics: the same subscribers, the same partition count."""

    num_partitions: int
    topic_ids: list[UUID]
    #: Positions (in member-id order) of the subscribers, ascending.
    subscribers: list[int]
    #: ``dict.fromkeys(topic_ids)``: copying its keys reuses their hashes (UUIDs hash in Python).
    template: dict[UUID, None] = field(default_factory=dict)
    #: Member position -> the partition sets it held on topics of this class.
    held: dict[int, list[frozenset[int]]] = field(default_factory=dict)


class RangeAssignor:
    """Co-partitioning range assignor, sticky within the range quotas."""

    name = "range"

    def assign(self, spec: GroupSpec) -> GroupAssignment:
        members = spec.members
        if not members:
            return {}
        mids = sorted(members)
        classes = _classes(spec, mids)
        _read_previous(spec.members, mids, classes)

        parts: list[list[tuple[dict[UUID, None], frozenset[int]]]] = [[] for _ in mids]
        for cls in classes:
            numbers = _assign_class(cls, len(mids))
            for i, nums in zip(cls.subscribers, numbers, strict=True):
                if nums:
                    parts[i].append((cls.template, nums))

        result: GroupAssignment = {}
        for i, mid in enumerate(mids):
            prev = members[mid].assigned_partitions
            mine = parts[i]
            if not mine:
                result[mid] = prev if not prev else EMPTY_ASSIGNMENT
                continue
            new = dict.fromkeys(mine[0][0], mine[0][1])
            for template, nums in mine[1:]:
                new.update(dict.fromkeys(template, nums))
            result[mid] = prev if prev == new else new
        # Same key order as the input (the content never depends on it).
        return {mid: result[mid] for mid in members}


def _subscription_groups(
    members: Mapping[str, MemberSubscription], mids: list[str]
) -> list[tuple[frozenset[UUID], list[int]]]:
    """Distinct subscriptions and the positions of their members, ordered by first member.

    Members usually share subscription objects; grouping by identity first keeps the (Python
    level) UUID hashing to one pass per distinct object.
    """
    by_object: dict[int, tuple[frozenset[UUID], list[int]]] = {}
    for i, mid in enumerate(mids):
        subs = members[mid].subscribed_topic_ids
        entry = by_object.get(id(subs))
        if entry is None:
            by_object[id(subs)] = (subs, [i])
        else:
            entry[1].append(i)
    merged: dict[frozenset[UUID], list[int]] = {}
    for subs, positions in by_object.values():
        merged.setdefault(subs, []).extend(positions)
    groups = [(subs, sorted(positions)) for subs, positions in merged.items() if subs]
    groups.sort(key=lambda g: g[1][0])
    return groups


def _classes(spec: GroupSpec, mids: list[str]) -> list[_Class]:
    groups = _subscription_groups(spec.members, mids)
    topic_groups: dict[UUID, list[int]] = {}
    for g, (subs, _) in enumerate(groups):
        for tid in subs:
            topic_groups.setdefault(tid, []).append(g)
    by_key: dict[tuple[tuple[int, ...], int], list[UUID]] = {}
    for tid, gs in topic_groups.items():
        meta = spec.topics.get(tid)
        if meta is not None and meta.num_partitions > 0:
            by_key.setdefault((tuple(gs), meta.num_partitions), []).append(tid)
    classes: list[_Class] = []
    for (group_ids, num_partitions), tids in sorted(by_key.items(), key=lambda kv: kv[0]):
        tids.sort()
        subscribers = sorted(chain.from_iterable(groups[g][1] for g in group_ids))
        classes.append(_Class(num_partitions, tids, subscribers, dict.fromkeys(tids)))
    return classes


def _read_previous(
    members: Mapping[str, MemberSubscription], mids: list[str], classes: list[_Class]
) -> None:
    """Bucket every member's previous partition sets by class (non-subscribers are ignored
    later, when the class reads only its subscribers)."""
    by_uuid: dict[UUID, _Class] = {}
    for cls in classes:
        for tid in cls.topic_ids:
            by_uuid[tid] = cls
    # By object identity first: UUIDs hash in Python code. ``alive`` pins every object whose
    # id is cached, so no id is recycled during the call.
    by_oid: dict[int, _Class | None] = {id(tid): cls for tid, cls in by_uuid.items()}
    alive: list[object] = list(by_uuid)
    for i, mid in enumerate(mids):
        held = members[mid].assigned_partitions
        if not held:
            continue
        if type(held) is dict:
            # The common case, a stable range output: one class, the same set on all its topics.
            # Dict equality reuses the stored key hashes, so this check hashes no UUID.
            key = next(iter(held))
            found = by_oid.get(id(key))
            if found is not None and len(held) == len(found.topic_ids):
                ps = next(iter(held.values()))
                if ps and held == dict.fromkeys(found.template, ps):
                    found.held[i] = [ps] * len(held)
                    continue
        for key, ps in held.items():
            oid = id(key)
            try:
                found = by_oid[oid]
            except KeyError:
                found = by_oid[oid] = by_uuid.get(key)
                alive.append(key)
            if found is not None and ps:
                found.held.setdefault(i, []).append(ps)


def _assign_class(cls: _Class, num_members_in_group: int) -> list[frozenset[int]]:
    """Partition numbers of each subscriber (in ``cls.subscribers`` order)."""
    num_partitions = cls.num_partitions
    subscribers = cls.subscribers
    quota, extras = divmod(num_partitions, len(subscribers))
    only: set[int] | None = None
    if len(subscribers) != num_members_in_group:
        only = set(subscribers)

    # Step 1: who held which number, and on how many topics of the class. Subscribers are in
    # member-id order, so member positions break ties like member ids do.
    best: dict[int, tuple[int, int]] = {}  # number -> (-topics held on, member position)
    for i, sets in cls.held.items():
        if only is not None and i not in only:
            continue
        first = sets[0]
        if sets.count(first) == len(sets):
            scores: Mapping[int, int] = dict.fromkeys(first, len(sets))
        else:
            scores = Counter(chain.from_iterable(sets))
        for p, score in scores.items():
            if not 0 <= p < num_partitions:
                continue
            key = (-score, i)
            cur = best.get(p)
            if cur is None or key < cur:
                best[p] = key
    by_member: dict[int, list[int]] = {}
    for p, (_, i) in best.items():
        by_member.setdefault(i, []).append(p)
    previous = [sorted(by_member.get(i, ())) for i in subscribers]

    # Step 2: keep the lowest numbers up to quota (+1 while extra slots last).
    kept: list[list[int]] = []
    for nums in previous:
        if len(nums) > quota and extras > 0:
            extras -= 1
            kept.append(nums[: quota + 1])
        else:
            kept.append(nums[:quota])

    # Step 3: fill up from the free numbers, lowest first, in member order.
    if best:
        taken = set(chain.from_iterable(kept))
        free = [p for p in range(num_partitions) if p not in taken]
    else:
        free = list(range(num_partitions))
    cursor = 0
    result: list[frozenset[int]] = []
    for nums in kept:
        need = quota - len(nums)
        if len(nums) <= quota and extras > 0:
            need += 1
            extras -= 1
        if need > 0:
            nums = nums + free[cursor : cursor + need]
            cursor += need
        result.append(frozenset(nums))
    if cursor != len(free):  # pragma: no cover - arithmetic guarantees equality
        raise AssertionError(f"range assignor: {len(free) - cursor} partitions left over")
    return result
