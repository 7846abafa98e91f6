"""Finding the member a heartbeat speaks for (KIP-848 "Static Membership"), for every group
type on the new protocol (consumer and connect groups share these rules).

- Without an instance id the member id names the member; an unknown member id is
  UNKNOWN_MEMBER_ID unless the member joins (epoch 0).
- With an instance id and epoch 0: a new static member, the same member joining again (its
  member id holds the instance id: a join whose response was lost, or a connect worker that
  has no target yet and so is still at epoch 0), or the replacement of the static member
  holding the instance id, allowed only once it left temporarily (epoch -2), else
  UNRELEASED_INSTANCE_ID.
- With an instance id and epoch != 0: the instance id must be known (UNKNOWN_MEMBER_ID) and
  held by this member id (FENCED_INSTANCE_ID).
- A new member beyond the group's maximum size is GROUP_MAX_SIZE_REACHED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from groupcoord.coordinator.modern.member import LEAVE_GROUP_STATIC_MEMBER_EPOCH, ModernGroupMember
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

M = TypeVar("M", bound=ModernGroupMember)


@dataclass(slots=True)
class Resolved(Generic[M]):
    """What ``resolve_member`` found (built once per heartbeat: a plain slotted dataclass, half
    the construction cost of a frozen one; never mutated)."""

    #: The member the request speaks for, when the group has it.
    existing: M | None
    #: The static member a joining instance replaces.
    replaced: M | None


def resolve_member(
    members: Mapping[str, M],
    static_member: Callable[[str], M | None],
    member_id: str,
    instance_id: str | None,
    member_epoch: int,
    max_size: int,
    group_id: str,
    noun: str = "member",
    group_noun: str = "consumer group",
) -> Resolved[M]:
    """The existing member and the replaced static member of a heartbeat, or the spec's error."""
    replaced: M | None = None
    existing: M | None
    if instance_id is None:
        existing = members.get(member_id)
    else:
        static = static_member(instance_id)
        if member_epoch == 0:
            if static is not None and static.member_id == member_id \
                    and static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                return Resolved(static, None)
            if static is not None:
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise CoordinatorError(
                        ErrorCode.unreleased_instance_id,
                        f"Static {noun} {member_id} with instance id {instance_id} cannot join "
                        f"the group because the instance id is owned by {noun} "
                        f"{static.member_id}.")
                replaced = static
            existing = None if replaced is not None else members.get(member_id)
        else:
            if static is None:
                raise CoordinatorError(ErrorCode.unknown_member_id,
                                       f"Instance id {instance_id} is unknown.")
            if static.member_id != member_id:
                raise CoordinatorError(
                    ErrorCode.fenced_instance_id,
                    f"Static {noun} {member_id} with instance id {instance_id} was fenced by "
                    f"{noun} {static.member_id}.")
            existing = static
    if existing is None and replaced is None:
        if member_epoch != 0:
            raise CoordinatorError(ErrorCode.unknown_member_id,
                                   f"{noun.capitalize()} {member_id} is not a member of group "
                                   f"{group_id}.")
        if len(members) >= max_size:
            raise CoordinatorError(ErrorCode.group_max_size_reached,
                                   f"The {group_noun} has reached its maximum capacity of "
                                   f"{max_size} {noun}s.")
    return Resolved(existing, replaced)
