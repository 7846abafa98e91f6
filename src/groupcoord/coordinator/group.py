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

    def validate_transactional_offset_commit(self, group_id: str, member_id: str,
                                             generation_id: int,
                                             group_instance_id: str | None) -> None:
        """KIP-447: raise the error of a TxnOffsetCommit the group refuses. As Kafka 4.x's
        ``validateOffsetCommit`` with ``isTransactional``: a request without group metadata
        (generation -1, no member id, no instance id) is accepted; otherwise it is checked as an
        offset commit (:meth:`validate_offset_request`), a stale member epoch answered
        ILLEGAL_GENERATION (``OffsetMetadataManager.validateTransactionalOffsetCommit``)."""
        if generation_id == -1 and not member_id and group_instance_id is None:
            return
        try:
            self.validate_offset_request(group_id, member_id, generation_id, True,
                                         group_instance_id=group_instance_id)
        except CoordinatorError as e:
            if e.code == ErrorCode.stale_member_epoch:
                raise CoordinatorError(ErrorCode.illegal_generation, e.message) from None
            raise

    def validate_offset_commit_version(self, member_id: str, epoch: int, api_version: int) -> None:
        """Raise the error of an OffsetCommit whose version the member may not use; by default
        none (consumer groups: a member of the consumer protocol commits with v9 or later)."""
        return

    def validate_offset_delete(self) -> None:
        """Raise the error of an OffsetDelete the group refuses as a whole; by default none
        (Kafka's ``ConsumerGroup.validateOffsetDelete``: the subscribed topics are refused per
        partition, ``is_subscribed_to``)."""
        return

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
                                      epoch: int, committing: bool, noun: str = "member",
                                      *, kafka_epochs: bool = False) -> None:
    """I6 for the new-protocol group types (consumer and connect groups), as Kafka 4.3's
    ``ConsumerGroup.validateOffsetCommit`` and ``validateOffsetFetch`` rule: a commit at a
    negative epoch is accepted while the group has no member, whatever member id it carries
    (the admin client, or a consumer without group management: librdkafka's simple consumer
    sends its client-generated member id with epoch -1 after a manual ``assign()``); a fetch
    with no member id and a negative epoch is always accepted. Otherwise the member must exist
    (UNKNOWN_MEMBER_ID), a commit ahead of its epoch is FENCED_MEMBER_EPOCH (the KIP-848 text
    and the Connect draft) and any other epoch than its own STALE_MEMBER_EPOCH.

    ``kafka_epochs`` (consumer groups): as Kafka's ``ConsumerGroup.validateMemberEpoch`` instead,
    any other epoch than the member's is STALE_MEMBER_EPOCH, ahead of it too, and
    ILLEGAL_GENERATION for a member using the classic protocol (its client knows no other
    error: a classic consumer rejoins on ILLEGAL_GENERATION)."""
    if committing and epoch < 0 and not members:
        return  # admin client or a consumer without group management, to an empty group
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
    if kafka_epochs and epoch != member.member_epoch and \
            getattr(member, "classic", None) is not None:
        raise CoordinatorError(ErrorCode.illegal_generation,
                               f"The received generation id {epoch} does not match the "
                               f"{noun}'s {member.member_epoch}.")
    if epoch > member.member_epoch and committing and not kafka_epochs:
        raise CoordinatorError(ErrorCode.fenced_member_epoch,
                               f"The {noun} epoch {epoch} is greater than the {noun}'s "
                               f"{member.member_epoch}.")
    if epoch != member.member_epoch:
        raise CoordinatorError(ErrorCode.stale_member_epoch,
                               f"The {noun} epoch {epoch} is stale; the {noun} is at "
                               f"{member.member_epoch}.")
