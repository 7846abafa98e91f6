"""The share groups' server-side assignor (KIP-932 "Share group assignment"; Kafka's
``SimpleAssignor``, name ``simple``): every subscribed partition to at least one member that
subscribes to it, every member that subscribes to a topic with partitions to at least one
partition, balanced, and sticky where balance allows.

Unlike a consumer group's assignor it may give one partition to several members: share
partitions hand each record to one member at a time, so when members outnumber partitions the
extra members share partitions instead of idling.

The rule, for a group whose members all subscribe to the same topics (Kafka's homogeneous case),
with P subscribed partitions and M members:

- each partition goes to ``S = ceil(M / P)`` members: one when there are at least as many
  partitions as members, more when members outnumber partitions (Kafka's "desired sharing");
- the ``S * P`` assignments are spread over the members within one of each other: each gets
  ``floor(S * P / M)`` or one more (so with 3 members on 2 partitions, each partition has two
  members and one member has both);
- stickiness first: a member keeps what it has while its count and each partition's sharing
  allow (the members holding the fewest partitions first: they have the fewest to choose
  from); then each partition short of members, in order, goes to the members holding the fewest
  (ties: member id) that may take one more and do not hold it yet.

Members subscribing to different topics (the heterogeneous case), greedily: partitions in order
of how few members may take them, each kept by one of its current members when that member is
not more loaded than the least-loaded member that may take it, else given to that least-loaded
member; then each member still without a partition joins, of the partitions it may take, one it
already had, else the one with the fewest members. Every subscribed partition is assigned and
every subscribing member gets one; balance is best effort there, as in Kafka's heterogeneous
case.

Choices where the KIP and Kafka leave it open: Kafka hashes member ids onto partitions (Java's
``String.hashCode``) before filling in round-robin; this assignor is deterministic by sorting
instead (member ids, then topic id and partition), which keeps the same guarantees (balance
within one, stickiness) and makes every result reproducible from the inputs alone.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from uuid import UUID

from groupcoord.coordinator.records import Assignment

NAME = "simple"

Partition = tuple[UUID, int]


def _key(tp: Partition) -> tuple[int, int]:
    return tp[0].int, tp[1]


def assign(subscriptions: Mapping[str, frozenset[UUID]], partitions: Mapping[UUID, int],
           current: Mapping[str, Assignment]) -> dict[str, dict[UUID, frozenset[int]]]:
    """The target assignment: member id -> topic id -> partitions.

    ``subscriptions``: every member's subscribed topic ids (topics that exist); ``partitions``:
    each topic's partition count; ``current``: the members' current target (stickiness)."""
    members = sorted(subscriptions)
    if not members:
        return {}
    # each distinct subscription's partitions once, in (topic id, partition) order
    by_subscription: dict[frozenset[UUID], list[Partition]] = {}
    for topics in subscriptions.values():
        if topics not in by_subscription:
            by_subscription[topics] = [(t, p) for t in sorted(topics, key=_int)
                                       for p in range(partitions.get(t, 0))]
    eligible = {m: by_subscription[subscriptions[m]] for m in members}
    owned: dict[str, list[Partition]] = {
        m: [(t, p) for t, ps in sorted(current.get(m, {}).items(), key=_first_int)
            for p in sorted(ps)]
        for m in members}
    if len(by_subscription) == 1:
        result = _homogeneous(members, eligible[members[0]], owned)
    else:
        result = _heterogeneous(members, subscriptions, partitions, owned)
    return {m: _as_assignment(result[m]) for m in members}


def _int(t: UUID) -> int:
    return t.int


def _first_int(item: tuple[UUID, object]) -> int:
    return item[0].int


def _as_assignment(tps: list[Partition]) -> dict[UUID, frozenset[int]]:
    out: dict[UUID, set[int]] = {}
    for t, p in tps:
        out.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


def _homogeneous(members: list[str], targets: list[Partition],
                 owned: Mapping[str, list[Partition]]) -> dict[str, list[Partition]]:
    """Every partition to ``ceil(M / P)`` members (one when partitions are at least as many as
    members), every member ``floor`` or ``ceil`` of the ``P * ceil(M / P)`` assignments over
    ``M``; current holdings kept first within those bounds."""
    result: dict[str, list[Partition]] = {m: [] for m in members}
    if not targets:
        return result
    sharing = -(-len(members) // len(targets))  # members per partition: ceil(M / P)
    base, extra = divmod(sharing * len(targets), len(members))
    holders: dict[Partition, int] = dict.fromkeys(targets, 0)
    held: dict[str, set[Partition]] = {m: set() for m in members}
    over = 0  # members holding base + 1 (at most ``extra``)

    def give(m: str, tp: Partition) -> None:
        nonlocal over
        if len(result[m]) == base:
            over += 1
        result[m].append(tp)
        held[m].add(tp)
        holders[tp] += 1

    # 1. stickiness: each member keeps up to ``base`` of what it has where sharing allows, the
    #    members with the fewest partitions first (they have the fewest to choose from) ...
    for m in sorted(members, key=lambda x: (len(owned[x]), x)):
        for tp in owned[m]:
            if len(result[m]) >= base:
                break
            if holders.get(tp, sharing) < sharing and tp not in held[m]:
                give(m, tp)
    # ... and one more while fewer than ``extra`` members hold ``base + 1``
    for m in members:
        if over >= extra:
            break
        if len(result[m]) == base:
            for tp in owned[m]:
                if holders.get(tp, sharing) < sharing and tp not in held[m]:
                    give(m, tp)
                    break
    # 2. each partition short of members, in order, to the members holding the fewest (a heap
    #    of (count, member id)) that may take one more and do not hold it yet
    heap = [(len(result[m]), m) for m in members]
    heapq.heapify(heap)
    for tp in targets:
        skipped: list[tuple[int, str]] = []
        while holders[tp] < sharing and heap:
            count, m = heapq.heappop(heap)
            if count > base or (count == base and over >= extra):
                skipped.append((count, m))  # full
                continue
            if tp in held[m]:
                skipped.append((count, m))
                continue
            give(m, tp)
            heapq.heappush(heap, (count + 1, m))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return result


def _heterogeneous(members: list[str], subscriptions: Mapping[str, frozenset[UUID]],
                   partitions: Mapping[UUID, int],
                   owned: Mapping[str, list[Partition]]) -> dict[str, list[Partition]]:
    result: dict[str, list[Partition]] = {m: [] for m in members}
    load = dict.fromkeys(members, 0)
    subscribers: dict[UUID, list[str]] = {}
    for m in members:  # sorted: each topic's subscribers in member id order
        for t in subscriptions[m]:
            if partitions.get(t, 0) > 0:
                subscribers.setdefault(t, []).append(m)
    owners: dict[Partition, list[str]] = {}
    for m in members:
        for t, p in owned[m]:
            if t in subscriptions[m] and p < partitions.get(t, 0):
                owners.setdefault((t, p), []).append(m)
    holders: dict[Partition, int] = {}
    # topics with the fewest possible takers first; each partition to one member
    for t in sorted(subscribers, key=lambda x: (len(subscribers[x]), x.int)):
        heap = [(load[m], m) for m in subscribers[t]]
        heapq.heapify(heap)
        for p in range(partitions[t]):
            while heap[0][0] != load[heap[0][1]]:  # stale: loads only grow
                heapq.heapreplace(heap, (load[heap[0][1]], heap[0][1]))
            least_load, least = heap[0]
            keep = [o for o in owners.get((t, p), ()) if load[o] <= least_load]
            m = min(keep, key=lambda x: (load[x], x)) if keep else least
            result[m].append((t, p))
            load[m] += 1
            if m == least:  # one entry per subscriber; another's is corrected when on top
                heapq.heapreplace(heap, (load[m], m))
            holders[(t, p)] = 1
    # then every member still without a partition joins one it may take: one it had, else
    # the one with the fewest members
    for m in members:
        if result[m]:
            continue
        mine = [tp for tp in owned[m] if m in owners.get(tp, ())]
        if mine:
            tp = mine[0]
        else:
            mine = [(t, p) for t in sorted(subscriptions[m], key=_int)
                    for p in range(partitions.get(t, 0))]
            if not mine:
                continue
            tp = min(mine, key=lambda x: (holders[x], _key(x)))
        holders[tp] += 1
        result[m].append(tp)
    for m in members:
        result[m].sort(key=_key)
    return result
