"""What every group type shares, as the shard sees it (groups of all types share one id space).

Each group type (consumer, classic, connect) keeps its own model and its own manager that
registers request handlers, record replayers and timer kinds with the shard.

What the shard, the offsets and their retention ask of a group whatever its type is a method or
a class attribute of :class:`Group` (its state, emptiness, offset checks and expiration
condition, whether retention may delete it); the shard reaches a group's manager by
``group_type`` (``Shard.group_types``). The one ``isinstance`` left per lookup is a manager
finding a group of its own type: all types share one id space, so an id may name a group of
another type, which is then not its group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar
from uuid import UUID

from groupcoord.coordinator.records import OffsetCommitValue
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

#: An offset expiration condition (Kafka's ``OffsetExpirationCondition``): the time an offset's
#: retention is counted from.
BaseTimestamp = Callable[[OffsetCommitValue], int]
#: A commit's per-partition check (topic id, partition) -> accepted.
PartitionCheck = Callable[[UUID | None, int], bool]


def commit_timestamp(value: OffsetCommitValue) -> int:
    """The expiration condition of most groups: an offset's retention runs from its commit."""
    return value.commit_timestamp


class Group(ABC):
    """Base of the group models kept in ``Shard.groups``."""

    __slots__ = ()

    group_type: str = ""
    protocol_type: str = ""
    #: Whether the offsets retention deletes the group once it is empty and all its offsets
    #: expired (``offsets_retention.py``; connect groups keep their connector configuration).
    deleted_by_offsets_retention: ClassVar[bool] = True
    #: Whether a classic JoinGroup converts the group to a classic group while it is empty
    #: (consumer groups, as upstream; the other types answer INCONSISTENT_GROUP_PROTOCOL).
    converted_to_classic_when_empty: ClassVar[bool] = False

    group_id: str

    @abstractmethod
    def state_name(self) -> str:
        raise NotImplementedError

    @abstractmethod
    def is_empty(self) -> bool:
        raise NotImplementedError

    @abstractmethod
    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        """Raise the spec's error when a commit (or a fetch) by ``member_id`` at
        ``epoch`` (a member epoch or a classic generation; -1 with no member id = admin)
        must be refused (invariant I6)."""
        raise NotImplementedError

    @abstractmethod
    def is_subscribed_to(self, topic: str) -> bool:
        """Whether OffsetDelete must refuse the topic (GROUP_SUBSCRIBED_TO_TOPIC)."""
        raise NotImplementedError

    def offset_expiration_base(self) -> BaseTimestamp | None:
        """The group's offset expiration condition (Kafka's ``offsetExpirationCondition``):
        the timestamp each offset's retention runs from, or None when none of its offsets may
        expire now. By default an offset's own commit timestamp."""
        return commit_timestamp

    def older_epoch_commit_check(self, member_id: str, epoch: int) -> PartitionCheck | None:
        """KIP-1251 (Kafka 4.3): the per-partition check of a commit by ``member_id`` at an
        epoch older than its own, for the group types that have one (consumer groups); None:
        the commit is validated as a whole (:meth:`validate_offset_request`)."""
        return None

    @abstractmethod
    def digest(self) -> Any:
        """A canonical comparable view of the group (replay equivalence, I4)."""
        raise NotImplementedError


def check_member_epoch_offset_request(members: Mapping[str, Any], group_id: str, member_id: str,
                                      epoch: int, committing: bool, noun: str = "member") -> None:
    """I6 for the new-protocol group types (consumer and connect groups): an admin request
    (no member id, epoch < 0) may not commit while the group has members; otherwise the member
    must exist (UNKNOWN_MEMBER_ID), a commit ahead of its epoch is FENCED_MEMBER_EPOCH and any
    other epoch than its own STALE_MEMBER_EPOCH."""
    if not member_id and epoch < 0:  # admin
        if committing and members:
            raise CoordinatorError(ErrorCode.unknown_member_id,
                                   f"Group {group_id} has members: a commit needs a member "
                                   f"id and epoch.")
        return
    member = members.get(member_id)
    if member is None:
        raise CoordinatorError(ErrorCode.unknown_member_id,
                               f"Member {member_id} is not a member of group {group_id}.")
    if epoch > member.member_epoch and committing:
        raise CoordinatorError(ErrorCode.fenced_member_epoch,
                               f"The {noun} epoch {epoch} is greater than the {noun}'s "
                               f"{member.member_epoch}.")
    if epoch != member.member_epoch:
        raise CoordinatorError(ErrorCode.stale_member_epoch,
                               f"The {noun} epoch {epoch} is stale; the {noun} is at "
                               f"{member.member_epoch}.")
