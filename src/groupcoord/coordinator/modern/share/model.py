"""Share groups (KIP-932): the in-memory model rebuilt from records.

KIP-932 "Share group membership" and Kafka's ``modern/share/ShareGroup`` and
``ShareGroupMember``: a group epoch (with the hash of the subscribed topics' metadata it was
bumped for), members with their subscriptions (topic names, no regular expressions, no static
membership, no classic members), the target assignment and its epoch, each member's current
assignment (member epoch, previous epoch, assigned partitions). Unlike a consumer group, one
partition may be assigned to several members at once: share partitions hand each record to one
consumer at a time, so nothing is revoked before it is assigned elsewhere and a member's state is
always STABLE. Nothing here changes except by ``Shard.replay``.

Group states are Kafka's for share groups: Empty (no member), Stable (members), Dead (deleted);
there is no Assigning or Reconciling state, a share assignment taking effect at once.

A share group keeps no committed offsets (its progress is the share-partition state): offset
commits, fetches and deletes are GROUP_ID_NOT_FOUND ("not a consumer group"), as Kafka's
``ShareGroup.validateOffsetCommit`` answers. Choice recorded here, as for connect groups: the
offsets retention never deletes an empty share group (its share-partition state is durable, and
Kafka does not expire share groups); DeleteGroups does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from uuid import UUID

from groupcoord.coordinator.modern.group import GroupState, ModernGroup
from groupcoord.coordinator.modern.member import MemberState, ModernGroupMember
from groupcoord.coordinator.records import Assignment, ClassicMemberMetadata, ClientAssignor
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

EMPTY: Mapping[UUID, frozenset[int]] = {}


def _empty() -> Mapping[UUID, frozenset[int]]:
    return EMPTY


def assignment_digest(a: Assignment) -> list[tuple[str, list[int]]]:
    return sorted((str(t), sorted(ps)) for t, ps in a.items() if ps)


@dataclass(slots=True, frozen=True)
class ShareGroupMember(ModernGroupMember):
    """One share member: its metadata (rack, client, subscribed topic names) and its current
    assignment. A share member has no instance id, no rebalance timeout, no client-side
    assignors and never uses the classic protocol (the base's fields, fixed)."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=_empty)
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_assignors: tuple[ClientAssignor, ...] = ()
    classic: ClassicMemberMetadata | None = None

    def digest(self) -> tuple[Any, ...]:
        return (self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.member_epoch, self.previous_member_epoch, self.state.name,
                assignment_digest(self.assigned_partitions))


class ShareGroup(ModernGroup[ShareGroupMember]):
    """A share group's state (mutated only by replay)."""

    __slots__ = ("assignment_timestamp_ms", "metadata_hash", "target")

    group_type = "share"
    protocol_type = "share"
    deleted_by_offsets_retention: ClassVar[bool] = False

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.metadata_hash = 0
        #: When the target of ``assignment_epoch`` was computed (assignment batching).
        self.assignment_timestamp_ms = 0
        #: The target assignment: member id -> its partitions.
        self.target: dict[str, Assignment] = {}

    # ------------------------------------------------------------------ queries

    def state(self) -> GroupState:
        if self.deleted:
            return GroupState.DEAD
        return GroupState.STABLE if self.members else GroupState.EMPTY

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(t for m in self.members.values() for t in m.subscribed_topic_names)

    def is_subscribed_to(self, topic: str) -> bool:
        return any(topic in m.subscribed_topic_names for m in self.members.values())

    def owner_of(self, key: Any, item: int) -> str | None:
        """The first member (by id) assigned partition ``item`` of topic id ``key``: share
        partitions may have several."""
        for mid in sorted(self.members):
            if item in self.members[mid].assigned_partitions.get(key, ()):
                return mid
        return None

    def holders_of(self, topic_id: UUID, partition: int) -> list[str]:
        """Every member assigned the partition, sorted."""
        return sorted(mid for mid, m in self.members.items()
                      if partition in m.assigned_partitions.get(topic_id, ()))

    def all_classic_except(self, member_ids: set[str]) -> bool:
        return False  # share groups have no classic members and never become classic groups

    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {group_id} is not a consumer group.")

    def validate_offset_delete(self) -> None:
        raise CoordinatorError(ErrorCode.group_id_not_found,
                               f"Group {self.group_id} is not a consumer group.")

    def offset_expiration_base(self) -> None:
        return None

    def digest(self) -> Any:
        return {
            "epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "assignment_timestamp_ms": self.assignment_timestamp_ms,
            "members": {mid: m.digest() for mid, m in sorted(self.members.items())},
            "target": {mid: assignment_digest(a) for mid, a in sorted(self.target.items())},
        }

    # ------------------------------------------------------------------ replay helpers

    def put_member(self, member: ShareGroupMember) -> None:
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> None:
        self.members.pop(member_id, None)
