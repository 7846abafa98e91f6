"""What every member of a new-protocol group is (KIP-848 "Member Epoch - Reconciliation", the
Connect draft's workers, and next KIP-932's share group members): its reconciliation state, the
epochs a member sends to leave, and :class:`ModernGroupMember`, the base of the group types'
members (``modern/consumer/model.py``, ``modern/connect/model.py``).
"""

from __future__ import annotations

from enum import IntEnum

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
