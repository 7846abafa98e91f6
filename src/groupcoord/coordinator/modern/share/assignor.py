"""The share groups' server-side assignor (KIP-932 "Share group assignment"; Kafka's
``SimpleAssignor``, name ``simple``): every subscribed partition to at least one member that
subscribes to it, every member that subscribes to a topic with partitions to at least one
partition, balanced, and sticky where balance allows.

Unlike a consumer group's assignor it may give one partition to several members: share
partitions hand each record to one member at a time, so when members outnumber partitions the
extra members share partitions instead of idling.

The rule, for a group whose members all subscribe to the same topics (Kafka's homogeneous case),
with P subscribed partitions and M members:

- P >= M: each partition goes to exactly one member and each member gets ``P // M`` or
  ``P // M + 1`` partitions; a member first keeps the partitions it already has (up to its share),
  the rest go one by one to the member holding the fewest (ties: member id);
- M > P: each member gets exactly one partition and each partition goes to ``M // P`` or
  ``M // P + 1`` members; a member first keeps one partition it already has while that partition
  has room, the others join the partition with the fewest members (ties: partition order).

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
    result: dict[str, list[Partition]] = {m: [] for m in members}
    if not targets:
        return result
    n_members, n_parts = len(members), len(targets)
    valid = set(targets)
    if n_parts >= n_members:
        base, extra = divmod(n_parts, n_members)
        taken: set[Partition] = set()
        # 1. stickiness: each member keeps up to its share of what it has ...
        for m in members:
            for tp in owned[m]:
                if len(result[m]) >= base:
                    break
                if tp in valid and tp not in taken:
                    result[m].append(tp)
                    taken.add(tp)
        # ... and one more while members with one more than the share are fewer than allowed
        over = 0
        for m in members:
            if over >= extra:
                break
            for tp in owned[m]:
                if tp in valid and tp not in taken and len(result[m]) == base:
                    result[m].append(tp)
                    taken.add(tp)
                    over += 1
                    break
        # 2. the rest, one by one, to the member holding the fewest (a heap of (count, id))
        heap = [(len(result[m]), m) for m in members]
        heapq.heapify(heap)
        for tp in targets:
            if tp not in taken:
                count, m = heapq.heappop(heap)
                result[m].append(tp)
                heapq.heappush(heap, (count + 1, m))
        return result
    # more members than partitions: one partition per member, members spread over partitions
    base, extra = divmod(n_members, n_parts)
    holders: dict[Partition, int] = {tp: 0 for tp in targets}
    over = 0
    waiting: list[str] = []
    for m in members:
        for tp in owned[m]:
            if tp not in holders:
                continue
            if holders[tp] < base or (holders[tp] == base and over < extra):
                if holders[tp] == base:
                    over += 1
                holders[tp] += 1
                result[m].append(tp)
                break
        else:
            waiting.append(m)
    # the others join the partition with the fewest members (a heap of (members, order))
    fewest = [(holders[tp], i) for i, tp in enumerate(targets)]
    heapq.heapify(fewest)
    for m in waiting:
        count, i = heapq.heappop(fewest)
        result[m].append(targets[i])
        heapq.heappush(fewest, (count + 1, i))
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
