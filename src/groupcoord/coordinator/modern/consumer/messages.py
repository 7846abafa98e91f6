"""Requests and responses of the consumer group type (KIP-848): ConsumerGroupHeartbeat,
ConsumerGroupDescribe, and the client-side assignment's ConsumerGroupPrepareAssignment and
ConsumerGroupInstallAssignment, as the coordinator core sees them.

Field names are the snake_case of the final upstream schemas (ConsumerGroupHeartbeat v0/v1 = API
key 68, ConsumerGroupDescribe v0/v1 = 69) plus the KIP's extension fields (client assignors,
ShouldComputeAssignment, pending partitions). A ``None`` field in a heartbeat means "unchanged
since the last heartbeat" (KIP-848). The heartbeat request and response are plain slotted
dataclasses, not frozen ones, for the reason ``coordinator/messages.py`` gives: never mutate one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from groupcoord.coordinator.modern.subscription import TopicFilter
from groupcoord.coordinator.records import ClientAssignor

# ----------------------------------------------------------------------------- heartbeat


@dataclass(slots=True, frozen=True)
class TopicPartitions:
    topic_id: UUID
    partitions: tuple[int, ...]


@dataclass(slots=True, unsafe_hash=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    # From the request header / connection, not the body:
    client_id: str = ""
    client_host: str = ""
    #: API version: v0 lets the coordinator generate the member id, v1 has the client send one.
    version: int = 1
    #: Which topics the request's principal may DESCRIBE (``subscription.TopicFilter``: the
    #: server's authorizer, as Kafka passes the request context to its regex resolution);
    #: None: no authorizer, a regex resolves to every topic it matches. Not part of the
    #: request's identity (not compared or hashed).
    describable_topics: TopicFilter | None = field(default=None, compare=False, hash=False,
                                                   repr=False)


@dataclass(slots=True, frozen=True)
class HeartbeatAssignment:
    topic_partitions: tuple[TopicPartitions, ...]
    #: Spec field (draft schema): target partitions not yet released by their former owners.
    pending_topic_partitions: tuple[TopicPartitions, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class ConsumerGroupHeartbeatResponse:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: HeartbeatAssignment | None = None
    should_compute_assignment: bool = False


# ----------------------------------------------------------------------------- describe / list


@dataclass(slots=True, frozen=True)
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(slots=True, frozen=True)
class DescribedAssignment:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(slots=True, frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: DescribedAssignment
    target_assignment: DescribedAssignment
    member_type: int = 1  # 1 = consumer protocol member (ConsumerGroupDescribe v1 MemberType)


@dataclass(slots=True, frozen=True)
class DescribedGroup:
    group_id: str
    error_code: int = 0
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()
    authorized_operations: int = -2147483648


@dataclass(slots=True, frozen=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]


# ----------------------------------------------------------------------------- client-side assignment
# KIP-848 "Client-Side Assignor": ConsumerGroupPrepareAssignment / ConsumerGroupInstallAssignment,
# extension
# APIs upstream never shipped. Field names follow the KIP's final text (MetadataVersion,
# MetadataBytes, RackId, TopicName in the topics' metadata).


@dataclass(slots=True, frozen=True)
class ConsumerGroupPrepareAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int


@dataclass(slots=True, frozen=True)
class PreparedAssignor:
    """A member's metadata for the group's selected client assignor."""

    reason: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""


@dataclass(slots=True, frozen=True)
class PreparedMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: tuple[UUID, ...]
    assignor: PreparedAssignor
    #: The member's current target partitions.
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(slots=True, frozen=True)
class PreparedTopic:
    topic_id: UUID
    topic_name: str
    num_partitions: int


@dataclass(slots=True, frozen=True)
class ConsumerGroupPrepareAssignmentResponse:
    error_code: int = 0
    error_message: str | None = None
    group_epoch: int = 0
    assignor_name: str = ""
    members: tuple[PreparedMember, ...] = ()
    topics: tuple[PreparedTopic, ...] = ()


@dataclass(slots=True, frozen=True)
class InstalledMember:
    member_id: str
    topic_partitions: tuple[TopicPartitions, ...] = ()
    metadata_version: int = 0
    metadata_bytes: bytes = b""


@dataclass(slots=True, frozen=True)
class ConsumerGroupInstallAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int
    #: The group epoch of the PrepareAssignment response the assignment was computed from.
    group_epoch: int
    #: The assignor's error (0: the assignment is valid; else the current target is kept).
    error: int = 0
    members: tuple[InstalledMember, ...] = ()


@dataclass(slots=True, frozen=True)
class ConsumerGroupInstallAssignmentResponse:
    error_code: int = 0
    error_message: str | None = None
