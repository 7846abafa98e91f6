"""Member reconciliation for consumer groups: the consumer member's view of the reconciliation
every new-protocol group type shares (KIP-848 "Member Epoch - Reconciliation";
``modern/reconciliation.py``, ``reconcile_items``): topic ids and partitions as the unit of
assignment, the owned partitions a ConsumerGroupHeartbeat reports, and the member's assignment
mappings shared with its target where they are equal (memory per member).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import TypeVar
from uuid import UUID

from groupcoord.coordinator.modern.consumer.messages import TopicPartitions
from groupcoord.coordinator.modern.consumer.model import EMPTY, ConsumerGroupMember, with_current_assignment
from groupcoord.coordinator.modern.reconciliation import HoldersOf, OwnerOf, reconcile_items
from groupcoord.coordinator.records import Assignment

K = TypeVar("K")


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


#: Topic ids in the order of their bytes (big-endian: the order of ``UUID.int``, an attribute,
#: where ``UUID.bytes`` builds the bytes on every call), read without a Python call.
_uuid_order: Callable[[UUID], int] = attrgetter("int")


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerOf,
    owned: Sequence[TopicPartitions] | None,
    holders_of: HoldersOf | None = None,
) -> ConsumerGroupMember:
    """The consumer member's next current assignment (the same object when nothing changes)."""
    step = reconcile_items(
        member.member_id, member.state, member.member_epoch, member.previous_member_epoch,
        member.assigned_partitions, member.partitions_pending_revocation, target_epoch, target,
        owner_of, lambda revoking: owns_any(owned, revoking), _uuid_order, holders_of)
    if step is None:
        return member
    return with_current_assignment(member, step.member_epoch, step.previous_member_epoch,
                                   step.state, shared_mapping(step.assigned, target),
                                   shared_mapping(step.pending_revocation, EMPTY))


def shared_mapping(a: Mapping[K, frozenset[int]], like: Mapping[K, frozenset[int]]
                   ) -> Mapping[K, frozenset[int]]:
    """``a`` as the member keeps it: ``like`` itself when ``a`` holds the very sets of ``like``
    (a converged member's assignment is its target mapping, not a copy: memory per member;
    an empty one is the shared empty mapping), else a fresh dict. Mappings are never mutated
    (``Assignment`` is read-only by contract), so sharing one changes nothing else."""
    if not a:
        return EMPTY  # type: ignore[return-value]
    if len(a) == len(like):
        get = like.get
        for key, ps in a.items():
            if get(key) is not ps:
                break
        else:
            return like
    return dict(a)
