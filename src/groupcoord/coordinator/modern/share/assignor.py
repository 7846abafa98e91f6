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
    eligible: dict[str, list[Partition]] = {
        m: sorted(((t, p) for t in subscriptions[m] for p in range(partitions.get(t, 0))),
                  key=_key)
        for m in members}
    owned: dict[str, list[Partition]] = {
        m: sorted(((t, p) for t, ps in current.get(m, {}).items() for p in ps), key=_key)
        for m in members}
    first = subscriptions[members[0]]
    if all(subscriptions[m] == first for m in members):
        result = _homogeneous(members, eligible[members[0]], owned)
    else:
        result = _heterogeneous(members, eligible, owned)
    return {m: _as_assignment(result[m]) for m in members}


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
        # 2. the rest, one by one, to the member holding the fewest
        for tp in targets:
            if tp not in taken:
                m = min(members, key=lambda x: (len(result[x]), x))
                result[m].append(tp)
                taken.add(tp)
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
    order = {tp: i for i, tp in enumerate(targets)}
    for m in waiting:
        tp = min(targets, key=lambda x: (holders[x], order[x]))
        holders[tp] += 1
        result[m].append(tp)
    return result


def _heterogeneous(members: list[str], eligible: Mapping[str, list[Partition]],
                   owned: Mapping[str, list[Partition]]) -> dict[str, list[Partition]]:
    result: dict[str, list[Partition]] = {m: [] for m in members}
    takers: dict[Partition, list[str]] = {}
    for m in members:
        for tp in eligible[m]:
            takers.setdefault(tp, []).append(m)
    owners: dict[Partition, list[str]] = {}
    for m in members:
        for tp in owned[m]:
            if tp in takers and m in takers[tp]:
                owners.setdefault(tp, []).append(m)
    holders: dict[Partition, int] = {}
    for tp in sorted(takers, key=lambda x: (len(takers[x]), _key(x))):
        least = min(takers[tp], key=lambda x: (len(result[x]), x))
        keep = [m for m in owners.get(tp, ()) if len(result[m]) <= len(result[least])]
        m = min(keep, key=lambda x: (len(result[x]), x)) if keep else least
        result[m].append(tp)
        holders[tp] = 1
    for m in members:
        if result[m] or not eligible[m]:
            continue
        mine = [tp for tp in owned[m] if tp in takers and m in takers[tp]]
        tp = mine[0] if mine else min(eligible[m], key=lambda x: (holders[x], _key(x)))
        holders[tp] += 1
        result[m].append(tp)
    for m in members:
        result[m].sort(key=_key)
    return result
