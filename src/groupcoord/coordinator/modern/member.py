"""What every member of a new-protocol group is (KIP-848 "Member Epoch - Reconciliation", the
Connect draft's workers, and next KIP-932's share group members): its reconciliation state, the
epochs a member sends to leave, and :class:`ModernGroupMember`, the base of the group types'
members (``modern/consumer/model.py``, ``modern/connect/model.py``).
"""

from __future__ import annotations

from enum import IntEnum

from groupcoord.coordinator.records import ClassicMemberMetadata, ClientAssignor

#: Member epoch sent by a member leaving the group for good.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: Member epoch of a static member that left temporarily (it keeps its assignment).
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Reconciliation state of a member (upstream CurrentAssignmentBuilder)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 3


class ModernGroupMember:
    """What every new-protocol member is, whatever it is assigned (partitions, connectors and
    tasks): its identity (member id, static instance id, client id and host), the rebalance
    timeout it sent, the client-side assignors it advertises, the classic metadata of a member
    on the classic protocol (online migration), and its current assignment's epochs and
    reconciliation state.

    The group types' members are frozen slotted dataclasses that declare these fields (and
    their own: a subscription, an assigned set); this base holds no state of its own, only the
    declarations and what is computed from them.
    """

    __slots__ = ()

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    client_assignors: tuple[ClientAssignor, ...]
    #: Set when the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat).
    classic: ClassicMemberMetadata | None
    member_epoch: int
    previous_member_epoch: int
    state: MemberState

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        """Whether the member is STABLE at ``epoch`` (the group's assignment epoch)."""
        return self.state is MemberState.STABLE and self.member_epoch == epoch
