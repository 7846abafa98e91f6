"""The server-side assignor interface (KIP-848 "Broker API", PartitionAssignor).

An assignor is a pure function from a group specification to a target assignment. It is given
every member's subscription (as topic ids) and its *current target* partitions (for stickiness),
plus the metadata of the subscribed topics, and returns the new target partitions of every
member. It must not mutate its inputs. It raises :class:`PartitionAssignorError` when it cannot
produce an assignment; the coordinator then answers UNKNOWN_SERVER_ERROR and keeps the previous
target assignment.

Assignments are ``Mapping[UUID, frozenset[int]]`` (topic id -> partition ids); a member with no
partitions has an empty mapping. Topics absent from a member's mapping hold no partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

from groupcoord.coordinator.assignors.target_index import Assignment, TargetIndex
from groupcoord.coordinator.topics import TopicMetadata

EMPTY_ASSIGNMENT: Assignment = {}


class PartitionAssignorError(Exception):
    """The assignor could not compute an assignment."""


@dataclass(slots=True, frozen=True)
class MemberSubscription:
    """One member as an assignor sees it."""

    member_id: str
    subscribed_topic_ids: frozenset[UUID]
    #: The member's partitions in the current target assignment (stickiness input).
    assigned_partitions: Assignment = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None
    #: The epoch since which the member holds a partition of its *current* assignment (KIP-1251
    #: assignment epochs), None for one it does not hold yet; None: not known. An assignor that
    #: takes partitions from a member takes the most recently added first (the KIP-848 "Online
    #: Migration" case study: C of [foo-2, foo-5, foo-4] gives up foo-4).
    held_since: Callable[[UUID, int], int | None] | None = field(default=None, compare=False)


@dataclass(slots=True, frozen=True)
class GroupSpec:
    """The input of an assignment: members by id and the subscribed topics' metadata by id.

    ``topics`` holds only topics that exist; a subscribed topic id missing from it has no
    partitions to assign.
    """

    members: Mapping[str, MemberSubscription]
    topics: Mapping[UUID, TopicMetadata]
    #: The group's target assignment inverted (partition -> member), kept by replay, when the
    #: coordinator has one (upstream's ``GroupSpecImpl`` carries the same map). An assignor may
    #: use it for the members whose ``assigned_partitions`` *is* the index's mapping (by
    #: identity) and must read the others; None: read every member.
    target_index: TargetIndex | None = field(default=None, compare=False)

    def is_homogeneous(self) -> bool:
        """True when every member subscribes to the same set of topics."""
        first: frozenset[UUID] | None = None
        for m in self.members.values():
            if first is None:
                first = m.subscribed_topic_ids
            elif m.subscribed_topic_ids != first:
                return False
        return True


#: The result: every member id of the spec mapped to its new target partitions.
GroupAssignment = dict[str, Assignment]


class PartitionAssignor(Protocol):
    """A server-side assignor, selected by ``name`` (``group.consumer.assignors``)."""

    name: str

    def assign(self, spec: GroupSpec) -> GroupAssignment:
        ...
