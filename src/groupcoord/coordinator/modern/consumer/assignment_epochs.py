"""KIP-1251 assignment epochs (Kafka 4.3): the epoch at which a member was given each partition it
holds, and the OffsetCommit check that uses them.

Before KIP-1251 a commit from a member of a consumer group had to carry exactly the member's
epoch. A heartbeat running beside the application (the KIP-848 clients heartbeat from a
background thread) may bump the epoch while the member still owns every partition it commits
for, and the commit failed with STALE_MEMBER_EPOCH for nothing. Kafka 4.3 keeps, per partition,
the epoch at which the member was assigned it, and accepts a commit whose epoch is older than
the member's for each partition the member still holds (assigned, or pending revocation) since
that epoch or earlier: ``assignment epoch <= commit epoch <= member epoch``. A partition that
moved to the member later, or that it no longer holds, is STALE_MEMBER_EPOCH (a zombie's commit
stays fenced).

How it is kept: a member's ``assignment_epochs`` holds the partitions whose assignment epoch
differs from its member epoch (a partition not listed was assigned at the member epoch: what
upstream assumes for a record written before KIP-1251, the old, stricter rule). The
current-assignment record carries the same map (``ConsumerGroupCurrentMemberAssignmentValue.
assignment_epochs``, written only when non-empty, as upstream's tagged ``AssignmentEpochs``),
so a compacted log restores it. Members using the classic protocol inside a consumer group keep
their exact generation check on commits, but their assignment epochs are kept too: the uniform
assignor takes the most recently added partitions from a member first (``held_since``; the
KIP-848 "Online Migration" case study).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

__all__ = ["PartitionEpochs", "carried_epochs", "commit_check", "held_epochs", "held_since"]

#: topic id -> partition -> the epoch at which the member was assigned the partition.
PartitionEpochs = Mapping[UUID, Mapping[int, int]]


def held_since(member: Any, topic_id: UUID, partition: int) -> int | None:
    """The assignment epoch of a partition ``member`` holds (None: it does not hold it)."""
    held = (partition in member.assigned_partitions.get(topic_id, ())
            or partition in member.partitions_pending_revocation.get(topic_id, ()))
    if not held:
        return None
    epochs = member.assignment_epochs.get(topic_id)
    if epochs is not None:
        epoch = epochs.get(partition)
        if epoch is not None:
            return int(epoch)
    return int(member.member_epoch)


def held_epochs(member: Any, topic_id: UUID) -> dict[int, int]:
    """:func:`held_since` of every partition of one topic that ``member`` holds, as a map
    (a partition it does not hold is absent): what an assignor ordering a member's partitions
    by recency asks for a whole topic at once, instead of once per partition."""
    epoch = int(member.member_epoch)
    out = dict.fromkeys(member.assigned_partitions.get(topic_id, ()), epoch)
    pending = member.partitions_pending_revocation.get(topic_id)
    if pending:
        out.update(dict.fromkeys(pending, epoch))
    listed = member.assignment_epochs.get(topic_id)
    if listed:
        for p, e in listed.items():
            if p in out:
                out[p] = int(e)
    return out


def carried_epochs(old: Any | None, new: Any) -> dict[UUID, dict[int, int]]:
    """The assignment epochs of ``new`` (a member's next current assignment): a partition it
    already held as ``old`` keeps its epoch, any other was assigned at ``new``'s epoch. Only
    the partitions whose epoch differs from ``new.member_epoch`` are listed.

    :func:`held_since` per partition, computed a topic at a time with set operations: a record
    is written for every change of a member's assignment, and a member of a join storm's first
    target holds every partition (100,000 calls per record otherwise). When the member stays at
    its epoch (a revocation), only the partitions ``old`` listed can differ."""
    out: dict[UUID, dict[int, int]] = {}
    if old is None:
        return out
    epoch = int(new.member_epoch)
    old_epoch = int(old.member_epoch)
    old_assigned = old.assigned_partitions
    old_revoking = old.partitions_pending_revocation
    old_epochs = old.assignment_epochs
    for source in (new.assigned_partitions, new.partitions_pending_revocation):
        for topic_id, partitions in source.items():
            if not partitions:
                continue
            a = old_assigned.get(topic_id)
            r = old_revoking.get(topic_id)
            if not a and not r:
                continue  # none held before: all at the new epoch
            listed = old_epochs.get(topic_id)
            if old_epoch == epoch:
                if not listed:
                    continue
                for p, e in listed.items():
                    e = int(e)
                    if e != epoch and p in partitions and ((a and p in a) or (r and p in r)):
                        out.setdefault(topic_id, {})[p] = e
                continue
            held = (partitions & a if a else set()) | (partitions & r if r else set())
            if not held:
                continue
            found = out.setdefault(topic_id, {})
            found.update(dict.fromkeys(held, old_epoch))
            if listed:
                for p, e in listed.items():
                    if p in held:
                        e = int(e)
                        if e == epoch:
                            del found[p]
                        else:
                            found[p] = e
            if not found:
                del out[topic_id]
    return out


def commit_check(member: Any, commit_epoch: int) -> Callable[[UUID | None, int], bool]:
    """KIP-1251's per-partition check of a commit at ``commit_epoch``, older than the member's
    epoch: whether the member has held the partition since ``commit_epoch`` or earlier
    (:func:`held_since`; the member's maps of the last topic asked are kept, as a commit's
    partitions come topic by topic)."""
    last: list[Any] = [None, (), (), None]  # topic id, assigned, pending, epochs

    def check(topic_id: UUID | None, partition: int) -> bool:
        if topic_id is None:
            return False
        if last[0] is not topic_id:
            last[:] = [topic_id, member.assigned_partitions.get(topic_id, ()),
                       member.partitions_pending_revocation.get(topic_id, ()),
                       member.assignment_epochs.get(topic_id)]
        _, assigned, pending, epochs = last
        if partition not in assigned and partition not in pending:
            return False
        e = epochs.get(partition) if epochs is not None else None
        return (int(member.member_epoch) if e is None else int(e)) <= commit_epoch
    return check
