"""Requests and responses of the coordinator core that every group type shares: ListGroups,
DeleteGroups, OffsetCommit / OffsetFetch / OffsetDelete, DescribeGroupConfigs and
AlterGroupConfigs: plain typed objects of our own (the consumer group's own are in
``modern/consumer/messages.py``, the connect group's in ``modern/connect/messages.py``,
the classic protocol's in ``classic/messages.py``).

The wire edge (``protocol/``, ``server/``) converts Kafka messages to and from these. Field names
are the snake_case of the final upstream schemas (OffsetCommit/OffsetFetch v9, ListGroups v5, ...).

All messages are frozen slotted dataclasses except those built once or more per request on the
simulator's hot paths (docs/benchmarks.md): the consumer group's heartbeat request and response,
and the OffsetCommit request, response and their per-topic and per-partition parts. Those are plain slotted
dataclasses that keep equality and hashing (``unsafe_hash``, as the record keys do), because a
frozen one pays an ``object.__setattr__`` per field on construction (a heartbeat response costs
about 2.7 times as many instructions frozen). Never mutate a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

# ----------------------------------------------------------------------------- list / delete


@dataclass(slots=True, frozen=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(slots=True, frozen=True)
class ListGroupsResponse:
    groups: tuple[ListedGroup, ...]
    error_code: int = 0


@dataclass(slots=True, frozen=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]


@dataclass(slots=True, frozen=True)
class DeletableGroupResult:
    group_id: str
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True, frozen=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


# ----------------------------------------------------------------------------- offsets


# The messages of OffsetCommit are built once per commit, topic or committed partition on each
# side (members auto-commit every owned partition every 5 s: ~240,000 partitions a 10-minute
# steady simulation). A frozen dataclass costs ~0.6 us per construction of a
# partition (``object.__setattr__`` per field) against ~0.2 us for a plain slotted one, so they
# are plain slotted dataclasses that keep equality and hashing (``unsafe_hash``, as the record
# keys do): values all the same, never mutate one.


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitTopic:
    name: str
    partitions: tuple[OffsetCommitPartition, ...]
    topic_id: UUID | None = None


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitRequest:
    group_id: str
    topics: tuple[OffsetCommitTopic, ...]
    #: Classic generation id, or the member epoch of a consumer-protocol member; -1 = admin.
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    #: The request's version (some answers depend on it, as in Kafka); the latest by default.
    api_version: int = 10


@dataclass(slots=True, unsafe_hash=True)
class PartitionResult:
    """Not frozen, for construction cost (see above). ``offsets.commit`` shares one instance
    per accepted partition index between responses: never mutate one."""

    partition_index: int
    error_code: int = 0


@dataclass(slots=True, unsafe_hash=True)
class TopicResult:
    name: str
    partitions: tuple[PartitionResult, ...]
    topic_id: UUID | None = None


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitResponse:
    topics: tuple[TopicResult, ...]
    error_code: int = 0  # not on the wire: set when every partition failed with one group error
    error_message: str | None = None


@dataclass(slots=True, frozen=True)
class OffsetFetchTopic:
    name: str
    partition_indexes: tuple[int, ...]
    topic_id: UUID | None = None


@dataclass(slots=True, frozen=True)
class OffsetFetchRequest:
    group_id: str
    #: None: every committed offset of the group.
    topics: tuple[OffsetFetchTopic, ...] | None = None
    member_id: str | None = None
    member_epoch: int = -1
    require_stable: bool = False


@dataclass(slots=True, frozen=True)
class FetchedPartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0


@dataclass(slots=True, frozen=True)
class FetchedTopic:
    name: str
    partitions: tuple[FetchedPartition, ...]
    topic_id: UUID | None = None


@dataclass(slots=True, frozen=True)
class OffsetFetchResponse:
    group_id: str
    topics: tuple[FetchedTopic, ...] = ()
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True, frozen=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[OffsetFetchTopic, ...]


@dataclass(slots=True, frozen=True)
class OffsetDeleteResponse:
    topics: tuple[TopicResult, ...] = ()
    error_code: int = 0
    error_message: str | None = None


# ----------------------------------------------------------------------------- transactions


@dataclass(slots=True, frozen=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit (KIP-98, KIP-447): offsets committed inside a producer's transaction,
    pending until the transaction's marker (:class:`CompleteTransactionRequest`)."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[OffsetCommitTopic, ...]
    #: KIP-447: the consumer's group metadata (-1 / "" / None: not given, v0-v2 or a producer
    #: that sends no group metadata). The generation id is the member epoch of a consumer
    #: group member.
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(slots=True, frozen=True)
class TxnOffsetCommitResponse:
    topics: tuple[TopicResult, ...]
    error_code: int = 0  # not on the wire: set when every partition failed with one error
    error_message: str | None = None


@dataclass(slots=True, frozen=True)
class CompleteTransactionRequest:
    """The transaction coordinator's end marker for a group (Kafka's
    ``GroupCoordinator.completeTransaction``): the producer's pending offsets in the group
    are committed or dropped."""

    group_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int = -1


@dataclass(slots=True, frozen=True)
class CompleteTransactionResponse:
    error_code: int = 0
    error_message: str | None = None


# ----------------------------------------------------------------------------- group configs


@dataclass(slots=True, frozen=True)
class DescribeGroupConfigsRequest:
    group_id: str
    #: None: every known group config.
    names: tuple[str, ...] | None = None


@dataclass(slots=True, frozen=True)
class GroupConfigEntry:
    name: str
    value: str
    is_default: bool


@dataclass(slots=True, frozen=True)
class DescribeGroupConfigsResponse:
    group_id: str
    configs: tuple[GroupConfigEntry, ...] = ()
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True, frozen=True)
class AlterGroupConfigOp:
    name: str
    op: str  # "set" | "delete" (IncrementalAlterConfigs SET=0 / DELETE=1)
    value: str | None = None


@dataclass(slots=True, frozen=True)
class AlterGroupConfigsRequest:
    group_id: str
    ops: tuple[AlterGroupConfigOp, ...] = field(default_factory=tuple)
    validate_only: bool = False


@dataclass(slots=True, frozen=True)
class AlterGroupConfigsResponse:
    group_id: str
    error_code: int = 0
    error_message: str | None = None
