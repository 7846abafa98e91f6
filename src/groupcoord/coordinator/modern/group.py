"""What every new-protocol group is (KIP-848 consumer groups, the Connect draft's connect
groups, and next KIP-932's share groups, which would be ``modern/share/`` on this base): its
states, and :class:`ModernGroup`, the base of the group types' models
(``modern/consumer/model.py``, ``modern/connect/model.py``).

Group states (upstream names): Empty (no member), Assigning (group epoch > assignment epoch),
Reconciling (some member not yet STABLE at the assignment epoch), Stable, Dead (deleted).
"""

from __future__ import annotations

from abc import abstractmethod
from enum import Enum
from typing import Any, Generic, TypeVar

from groupcoord.coordinator.group import Group
from groupcoord.coordinator.modern.member import ModernGroupMember


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


M = TypeVar("M", bound=ModernGroupMember)


class ModernGroup(Group, Generic[M]):
    """A new-protocol group's state: its epoch, its members (of type ``M``) and static members,
    the epoch of its target assignment, and whether it was deleted. What a group type adds (the
    target's shape, who holds what, its configuration) is its own. Mutated only by the shard's
    replay of records (the group types' ``put_member`` / ``remove_member`` keep what they
    derive from the members in step)."""

    __slots__ = ("assignment_epoch", "deleted", "group_epoch", "group_id", "members",
                 "static_members")

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.members: dict[str, M] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.assignment_epoch = 0
        self.deleted = False

    # ------------------------------------------------------------------ queries

    def state(self) -> GroupState:
        if self.deleted:
            return GroupState.DEAD
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        epoch = self.assignment_epoch
        for m in self.members.values():
            if not m.is_reconciled_to(epoch):
                return GroupState.RECONCILING
        return GroupState.STABLE

    def state_name(self) -> str:
        return self.state().value

    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str) -> M | None:
        mid = self.static_members.get(instance_id)
        return None if mid is None else self.members.get(mid)

    @abstractmethod
    def owner_of(self, key: Any, item: int) -> str | None:
        """The member holding ``item`` of ``key`` (a topic id's partition, a connector's task),
        assigned or pending revocation; None when no member holds it."""
        raise NotImplementedError

    @abstractmethod
    def all_classic_except(self, member_ids: set[str]) -> bool:
        """Whether every member outside ``member_ids`` uses the classic protocol (online
        migration: may the group become a classic group once they left)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ replay helpers

    @abstractmethod
    def put_member(self, member: M) -> None:
        """Add or replace a member, keeping what the group derives from its members in step."""
        raise NotImplementedError

    @abstractmethod
    def remove_member(self, member_id: str) -> None:
        raise NotImplementedError
