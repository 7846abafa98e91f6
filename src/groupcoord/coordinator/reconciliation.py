"""Member reconciliation: moving one member's current assignment towards its target.

KIP-848 "Member Epoch - Reconciliation" and the case studies, shaped like upstream's
CurrentAssignmentBuilder (states STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS):

- assigned = current ∩ target; pending revocation = current - target;
  pending assignment = target - assigned - partitions still held by another member.
- If something must be revoked and the member still owns (or did not report) a revoked
  partition, it stays at its epoch in UNREVOKED_PARTITIONS and is told to revoke (its response
  assignment no longer lists them). It never gets new partitions in the same step.
- Otherwise it moves to the target epoch, gets every free target partition, and is STABLE, or
  UNRELEASED_PARTITIONS while some target partitions are still held by others.
- A member in UNREVOKED_PARTITIONS that acknowledges the revocation (its owned partitions no
  longer include them) advances to min(epoch + 1, target epoch) and reconciles again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from uuid import UUID

from groupcoord.coordinator.consumer_group import ConsumerGroupMember, MemberState
from groupcoord.coordinator.messages import TopicPartitions
from groupcoord.coordinator.records import Assignment

OwnerOf = Callable[[UUID, int], str | None]


def owns_any(owned: Sequence[TopicPartitions] | None, partitions: Assignment) -> bool:
    """Whether the member's reported owned partitions include any of ``partitions``.

    ``owned is None`` (not reported) counts as still owning them.
    """
    if owned is None:
        return True
    for tp in owned:
        revoking = partitions.get(tp.topic_id)
        if revoking and any(p in revoking for p in tp.partitions):
            return True
    return False


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerOf,
    owned: Sequence[TopicPartitions] | None,
) -> ConsumerGroupMember:
    """The member's next current assignment (the same object when nothing changes)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, min(member.member_epoch + 1, target_epoch), target_epoch, target,
                     owner_of, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owner_of, owned)
    raise ValueError(f"member {member.member_id} is in state {state.name}")


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerOf,
    owned: Sequence[TopicPartitions] | None,
) -> ConsumerGroupMember:
    current = member.assigned_partitions
    revoking_now = member.partitions_pending_revocation
    new_assigned: dict[UUID, frozenset[int]] = {}
    new_revoking: dict[UUID, frozenset[int]] = {}
    pending_assign: dict[UUID, frozenset[int]] = {}
    unreleased = False
    mid = member.member_id
    for topic_id in sorted(set(target) | set(current), key=lambda u: u.bytes):
        tgt = target.get(topic_id, frozenset())
        cur = current.get(topic_id, frozenset())
        assigned = cur & tgt
        revoking = cur - assigned
        wanted = tgt - assigned
        if wanted:
            mine = revoking_now.get(topic_id, frozenset())
            free = []
            for p in sorted(wanted):
                holder = owner_of(topic_id, p)
                if holder is None or holder == mid or p in mine:
                    free.append(p)
                else:
                    unreleased = True
            wanted = frozenset(free)
        if assigned:
            new_assigned[topic_id] = assigned
        if revoking:
            new_revoking[topic_id] = revoking
        if wanted:
            pending_assign[topic_id] = wanted

    if new_revoking and owns_any(owned, new_revoking):
        return _with(member, MemberState.UNREVOKED_PARTITIONS, member_epoch, new_assigned,
                     new_revoking)
    for topic_id, ps in pending_assign.items():
        new_assigned[topic_id] = new_assigned.get(topic_id, frozenset()) | ps
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with(member, state, target_epoch, new_assigned, {})


def _with(member: ConsumerGroupMember, state: MemberState, epoch: int,
          assigned: Mapping[UUID, frozenset[int]],
          revoking: Mapping[UUID, frozenset[int]]) -> ConsumerGroupMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    if (state is member.state and epoch == member.member_epoch
            and assigned == member.assigned_partitions
            and revoking == member.partitions_pending_revocation):
        return member
    return replace(member, state=state, member_epoch=epoch, previous_member_epoch=previous,
                   assigned_partitions=dict(assigned), partitions_pending_revocation=dict(revoking))
