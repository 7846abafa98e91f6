"""Requests and responses of the share group type (KIP-932): ShareGroupHeartbeat (API key 76)
and ShareGroupDescribe (API key 77), as the coordinator core sees them.

Field names are the snake_case of Kafka 4.x's schemas (v1 of both: the versions Kafka 4.1+ and
librdkafka's share consumer speak). A ``None`` field in a heartbeat means "unchanged since the
last heartbeat". Plain slotted dataclasses, as ``coordinator/messages.py`` says: never mutate one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from groupcoord.coordinator.records import Assignment

#: ``authorized_operations`` not asked for (Kafka's INT32_MIN).
NO_OPERATIONS = -(2**31)


@dataclass(slots=True)
class ShareGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    # From the request header / connection, not the body:
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True)
class ShareGroupHeartbeatResponse:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: The member's partitions (topic id -> partitions); None: not sent (unchanged).
    assignment: Assignment | None = None


@dataclass(slots=True, frozen=True)
class ShareGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(slots=True, frozen=True)
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


@dataclass(slots=True, frozen=True)
class DescribedShareGroup:
    group_id: str
    error_code: int = 0
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedShareMember, ...] = ()
    authorized_operations: int = NO_OPERATIONS


@dataclass(slots=True, frozen=True)
class ShareGroupDescribeResponse:
    groups: tuple[DescribedShareGroup, ...] = field(default_factory=tuple)


def topic_ids(a: Assignment) -> tuple[UUID, ...]:
    """The topics of an assignment with partitions, in topic id order."""
    return tuple(sorted((t for t, ps in a.items() if ps), key=lambda t: t.int))
