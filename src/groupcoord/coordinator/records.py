"""Coordinator records: the only way state changes (KIP-848 "Records").

Every state change of a shard is a record: a typed key plus a value, or a tombstone (``value is
None``) that deletes the key. Handlers produce records and apply them through ``replay``; loading
a shard is replaying its log. Keys carry a record type (the spec's key version numbers: 3 group
metadata, 4 partition metadata, 5 member metadata, 6 target assignment metadata, 7 target
assignment member, 8 current member assignment; 1 offset commit; 9 group configuration; 16 a
resolved regular expression, Kafka 4's number; 10, 11, 13, 14, 15 the share groups' member
metadata, group metadata, target metadata, target member and current member assignment, Kafka
4's numbers for KIP-932; 48 and 49 the transactional offsets, ours) so a compacted log keeps the
newest record per key.

Transactional offsets (KIP-98, KIP-447): Kafka writes a TxnOffsetCommit as an offset commit
record in a transactional batch of its producer and completes it by the control marker that
follows in the same log, so its meaning rests on the order of the log. This log is compacted by
key, newest record per key, which would lose that order (a later transaction of the same
producer replaces the older one's records). So every piece of state has its own key: a
pending offset is a record of its own (type 48, key group / producer id / topic / partition),
and the marker is not a record: completing a transaction writes its effect, the committed
offsets (type 1) and tombstones of the pending ones, plus the producer's epochs per group
(type 49, what fences a zombie's late TxnOffsetCommit as the producer state of Kafka's
``__consumer_offsets`` partition does).

Binary form (versioned): key = msgpack ``[type, key_version, *key_fields]``; value = msgpack
``[value_version, *value_fields]``. UUIDs travel as 16 raw bytes; an assignment as
``[[topic_id, [partitions...]], ...]`` sorted by topic id then partition, so equal states encode
to equal bytes. Readers accept any known version and reject unknown ones with
:class:`RecordDecodeError`.

Records are values: never mutate one. They are plain slotted dataclasses rather than frozen
ones because a frozen dataclass costs about 1 µs more per construction, which is most of a
reload's per-record budget (docs/benchmarks.md: 200,000 records/s). Encoding (the simulator
writes every record to its log) uses one shared packer and packs each offset commit key once
(a bounded cache); the bytes are exactly ``msgpack.packb``'s.

Choice recorded here: the spec's ConsumerGroupMemberMetadataValue lists no RebalanceTimeoutMs or
ServerAssignor, but Kafka 4.x persists both (a reloaded member must keep its rebalance timeout
and assignor preference), so our member value carries them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from typing import Any, ClassVar
from uuid import UUID

import msgpack

from groupcoord.coordinator.topics import TopicMetadata

Assignment = Mapping[UUID, frozenset[int]]


class RecordDecodeError(ValueError):
    """Bytes that are not a record this version understands."""


class RecordType(IntEnum):
    OFFSET_COMMIT = 1
    CLASSIC_GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    GROUP_CONFIGURATION = 9
    #: A group's resolution of one subscribed regular expression (Kafka 4's
    #: ConsumerGroupRegularExpressionKey, type 16: the topics it matched that the principal of
    #: the resolving heartbeat may DESCRIBE).
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    #: A pending transactional offset (KIP-98 TxnOffsetCommit): a block of our own.
    TXN_OFFSET_COMMIT = 48
    #: A transactional producer's epochs in a group (its last end marker).
    TXN_PRODUCER = 49
    # Connect groups (the Connect draft): the draft leaves the key numbers open; ours are a block of their
    # own.
    CONNECT_GROUP_METADATA = 32
    CONNECT_GROUP_CONNECTORS_TASKS_METADATA = 33
    CONNECT_GROUP_MEMBER_METADATA = 34
    CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA = 35
    CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER = 36
    CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT = 37
    # Share groups (KIP-932 "Share group records"): Kafka 4.x's key numbers. The target records
    # reuse the consumer groups' values (an epoch and timestamp; a member's partitions).
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 13
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 14
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 15


# --------------------------------------------------------------------------- helpers


def _by_topic_id(kv: tuple[UUID, Any]) -> int:
    return kv[0].int  # the order of the ids' bytes (big-endian), without building them per key


def encode_assignment(a: Assignment) -> list[list[Any]]:
    return [[t.bytes, sorted(ps)] for t, ps in sorted(a.items(), key=_by_topic_id) if ps]


@lru_cache(maxsize=65536)
def uuid_from_bytes(raw: bytes) -> UUID:
    """Topic ids repeat across records: build each UUID once (UUID() is slow in CPython)."""
    return UUID(bytes=raw)


def decode_assignment(raw: list[list[Any]]) -> dict[UUID, frozenset[int]]:
    return {uuid_from_bytes(bytes(t)): frozenset(ps) for t, ps in raw}


def _opt_uuid(raw: bytes | None) -> UUID | None:
    return None if raw is None else uuid_from_bytes(bytes(raw))


# --------------------------------------------------------------------------- keys


@dataclass(slots=True, unsafe_hash=True)
class GroupKey:
    """Key of the per-group singleton records (metadata, partition metadata, ...)."""

    type: RecordType
    group_id: str

    def fields(self) -> list[Any]:
        return [self.group_id]


@dataclass(slots=True, unsafe_hash=True)
class MemberKey:
    """Key of per-member records (member metadata, target member, current assignment)."""

    type: RecordType
    group_id: str
    member_id: str

    def fields(self) -> list[Any]:
        return [self.group_id, self.member_id]


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitKey:
    group_id: str
    topic: str
    partition: int
    type: RecordType = RecordType.OFFSET_COMMIT

    def fields(self) -> list[Any]:
        return [self.group_id, self.topic, self.partition]


@dataclass(slots=True, unsafe_hash=True)
class RegexKey:
    """Key of a group's resolved regular expression (one per subscribed regex)."""

    group_id: str
    regex: str
    type: RecordType = RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION

    def fields(self) -> list[Any]:
        return [self.group_id, self.regex]


@dataclass(slots=True, unsafe_hash=True)
class TxnOffsetKey:
    """Key of a pending transactional offset: the producer's offset of one partition."""

    group_id: str
    producer_id: int
    topic: str
    partition: int
    type: RecordType = RecordType.TXN_OFFSET_COMMIT

    def fields(self) -> list[Any]:
        return [self.group_id, self.producer_id, self.topic, self.partition]


@dataclass(slots=True, unsafe_hash=True)
class TxnProducerKey:
    """Key of a transactional producer's epochs in a group."""

    group_id: str
    producer_id: int
    type: RecordType = RecordType.TXN_PRODUCER

    def fields(self) -> list[Any]:
        return [self.group_id, self.producer_id]


RecordKey = GroupKey | MemberKey | OffsetCommitKey | RegexKey | TxnOffsetKey | TxnProducerKey

# --------------------------------------------------------------------------- values


@dataclass(slots=True)
class ConsumerGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int

    def fields(self) -> list[Any]:
        return [self.epoch]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupMetadataValue:
        return cls(f[0])


@dataclass(slots=True)
class ConsumerGroupPartitionMetadataValue:
    """The metadata of the topics the group subscribes to (sorted by name)."""

    VERSION: ClassVar[int] = 0
    topics: tuple[TopicMetadata, ...]

    def fields(self) -> list[Any]:
        return [[[t.topic_id.bytes, t.name, t.num_partitions] for t in self.topics]]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupPartitionMetadataValue:
        return cls(tuple(TopicMetadata(uuid_from_bytes(bytes(i)), n, p) for i, n, p in f[0]))


@dataclass(slots=True, frozen=True)
class ClientAssignor:
    """A client-side assignor a member supports (KIP-848 "Client Assignors")."""

    name: str
    minimum_version: int
    maximum_version: int
    reason: int = 0
    version: int = 0
    metadata: bytes = b""

    def to_list(self) -> list[Any]:
        return [self.name, self.minimum_version, self.maximum_version, self.reason,
                self.version, self.metadata]


@dataclass(slots=True, frozen=True)
class ClassicMemberMetadata:
    """What a consumer group keeps of a member that uses the classic protocol (upstream's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata, online migration): its
    session timeout and every (protocol name, metadata) it supports, in its order of
    preference."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    def to_list(self) -> list[Any]:
        return [self.session_timeout_ms, [[n, m] for n, m in self.supported_protocols]]

    @classmethod
    def from_list(cls, f: list[Any]) -> ClassicMemberMetadata:
        return cls(f[0], tuple((n, bytes(m)) for n, m in f[1]))


@dataclass(slots=True)
class ConsumerGroupMemberMetadataValue:
    """A member's metadata. ``classic_member`` (online migration) is set for a member that uses the
    classic protocol inside a consumer group; it is written as an optional trailing field only
    when set, so values without it encode exactly as before and older readers ignore it."""

    VERSION: ClassVar[int] = 0
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int
    client_assignors: tuple[ClientAssignor, ...] = ()
    classic_member: ClassicMemberMetadata | None = None

    def fields(self) -> list[Any]:
        out = [self.instance_id, self.rack_id, self.client_id, self.client_host,
               list(self.subscribed_topic_names), self.subscribed_topic_regex,
               self.server_assignor, self.rebalance_timeout_ms,
               [a.to_list() for a in self.client_assignors]]
        if self.classic_member is not None:
            out.append(self.classic_member.to_list())
        return out

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupMemberMetadataValue:
        return cls(f[0], f[1], f[2], f[3], tuple(f[4]), f[5], f[6], f[7],
                   tuple(ClientAssignor(a[0], a[1], a[2], a[3], a[4], bytes(a[5])) for a in f[8]),
                   ClassicMemberMetadata.from_list(f[9]) if len(f) > 9 and f[9] is not None
                   else None)


@dataclass(slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    VERSION: ClassVar[int] = 0
    assignment_epoch: int
    #: Kafka 4.3's ``AssignmentTimestampMs``: when the target was computed (assignment
    #: batching, ``group.consumer.assignment.interval.ms``); written as a second field only
    #: when set, so a record without it reads (and encodes) as before (0: not recorded).
    assignment_timestamp_ms: int = 0

    def fields(self) -> list[Any]:
        if self.assignment_timestamp_ms:
            return [self.assignment_epoch, self.assignment_timestamp_ms]
        return [self.assignment_epoch]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupTargetAssignmentMetadataValue:
        return cls(f[0], int(f[1]) if len(f) > 1 else 0)


@dataclass(slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    VERSION: ClassVar[int] = 0
    partitions: Assignment

    def fields(self) -> list[Any]:
        return [encode_assignment(self.partitions)]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupTargetAssignmentMemberValue:
        return cls(decode_assignment(f[0]))


@dataclass(slots=True)
class ConsumerGroupRegularExpressionValue:
    """What a subscribed regular expression resolved to (Kafka's
    ConsumerGroupRegularExpressionValue without its metadata-image version, which has no
    counterpart here): the topic names, sorted, and when it was resolved."""

    VERSION: ClassVar[int] = 0
    topic_names: tuple[str, ...]
    timestamp_ms: int

    def fields(self) -> list[Any]:
        return [list(self.topic_names), self.timestamp_ms]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupRegularExpressionValue:
        return cls(tuple(f[0]), f[1])


@dataclass(slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    VERSION: ClassVar[int] = 0
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment
    #: KIP-1251 (Kafka 4.3's tagged ``AssignmentEpochs``): the partitions whose assignment
    #: epoch differs from ``member_epoch``; written as a sixth field only when non-empty, so a
    #: record without it reads (and encodes) as before: every partition at the member epoch.
    assignment_epochs: Mapping[UUID, Mapping[int, int]] | None = None

    def fields(self) -> list[Any]:
        out = [self.member_epoch, self.previous_member_epoch, self.state,
               encode_assignment(self.assigned_partitions),
               encode_assignment(self.partitions_pending_revocation)]
        if self.assignment_epochs:
            out.append([[t.bytes, sorted((p, e) for p, e in ps.items())]
                        for t, ps in sorted(self.assignment_epochs.items(),
                                            key=lambda kv: kv[0].bytes) if ps])
        return out

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConsumerGroupCurrentMemberAssignmentValue:
        epochs = None
        if len(f) > 5 and f[5]:
            epochs = {uuid_from_bytes(bytes(t)): {int(p): int(e) for p, e in ps}
                      for t, ps in f[5]}
        return cls(f[0], f[1], f[2], decode_assignment(f[3]), decode_assignment(f[4]), epochs)


@dataclass(slots=True)
class OffsetCommitValue:
    VERSION: ClassVar[int] = 0
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    topic_id: UUID | None = None

    def fields(self) -> list[Any]:
        return [self.offset, self.leader_epoch, self.metadata, self.commit_timestamp,
                self.expire_timestamp, None if self.topic_id is None else self.topic_id.bytes]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> OffsetCommitValue:
        return cls(f[0], f[1], f[2], f[3], f[4], _opt_uuid(f[5]))


@dataclass(slots=True)
class TxnOffsetCommitValue:
    """A pending transactional offset: the producer epoch it was committed at and the offset
    it commits (an :class:`OffsetCommitValue` once its transaction commits)."""

    VERSION: ClassVar[int] = 0
    producer_epoch: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    topic_id: UUID | None = None

    def fields(self) -> list[Any]:
        return [self.producer_epoch, self.offset, self.leader_epoch, self.metadata,
                self.commit_timestamp, None if self.topic_id is None else self.topic_id.bytes]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> TxnOffsetCommitValue:
        return cls(f[0], f[1], f[2], f[3], f[4], _opt_uuid(f[5]))

    def committed(self) -> OffsetCommitValue:
        return OffsetCommitValue(self.offset, self.leader_epoch, self.metadata,
                                 self.commit_timestamp, -1, self.topic_id)


@dataclass(slots=True)
class TxnProducerValue:
    """A transactional producer's epoch and its transaction coordinator's epoch as of its
    last end marker in the group (-1: not given)."""

    VERSION: ClassVar[int] = 0
    producer_epoch: int
    coordinator_epoch: int = -1

    def fields(self) -> list[Any]:
        return [self.producer_epoch, self.coordinator_epoch]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> TxnProducerValue:
        return cls(f[0], f[1])


@dataclass(slots=True)
class GroupConfigurationValue:
    VERSION: ClassVar[int] = 0
    configs: tuple[tuple[str, str], ...]

    def fields(self) -> list[Any]:
        return [[list(c) for c in self.configs]]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> GroupConfigurationValue:
        return cls(tuple((k, v) for k, v in f[0]))


@dataclass(slots=True, frozen=True)
class ClassicGroupMemberMetadata:
    """One member of a classic group as upstream's GroupMetadataValue.MemberMetadata persists it:
    ``subscription`` is the member's metadata for the group's selected protocol."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes | None
    assignment: bytes

    def to_list(self) -> list[Any]:
        return [self.member_id, self.instance_id, self.client_id, self.client_host,
                self.rebalance_timeout_ms, self.session_timeout_ms, self.subscription,
                self.assignment]


@dataclass(slots=True)
class ClassicGroupMetadataValue:
    """A classic group (upstream key type 2, GroupMetadataKey/GroupMetadataValue): written when a
    generation completes (the leader's assignments), when a group is created or becomes empty,
    and when a static member is replaced without a rebalance. Members keep their join order."""

    VERSION: ClassVar[int] = 0
    protocol_type: str
    generation: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[ClassicGroupMemberMetadata, ...] = ()

    def fields(self) -> list[Any]:
        return [self.protocol_type, self.generation, self.protocol_name, self.leader,
                self.current_state_timestamp, [m.to_list() for m in self.members]]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ClassicGroupMetadataValue:
        return cls(f[0], f[1], f[2], f[3], f[4], tuple(
            ClassicGroupMemberMetadata(m[0], m[1], m[2], m[3], m[4], m[5],
                                       None if m[6] is None else bytes(m[6]), bytes(m[7]))
            for m in f[5]))


# --------------------------------------------------------------------------- connect group values
# The Connect draft's ConnectWorkerGroup* records. A connect assignment maps a connector
# name to task numbers, -1 standing for the connector itself (upstream's CONNECTOR_TASK); it
# encodes as ``[[connector, [tasks...]], ...]`` sorted by connector then task.
#
# Two deviations from the draft's "Records", by choice:
# - The draft persists these records in a ``__worker_offsets`` compacted topic; here they go to
#   the shard's one log with the consumer and classic groups' records. Groups of every type
#   share one id space and one coordinator per group id (``group.py``), so a second log would
#   need a second routing of the same ids for nothing: each record type has its own key type
#   here, which is all compaction needs (the draft's own reason for dedicated key types).
# - The draft stores the target assignment "in a single record"; here it is N+1 records, one
#   per worker (ConnectGroupTargetAssignmentMemberValue) and one with the assignment epoch
#   (ConnectGroupTargetAssignmentMetadataValue), written after the members: KIP-848's layout
#   for consumer groups, written by the same ``modern/target_assignment.py``. One record would
#   be bounded by the maximum batch size (the draft splits the group metadata into several
#   records for that reason) and would be rewritten whole when one worker's part changes.

ConnectAssignment = Mapping[str, frozenset[int]]


def encode_connect_assignment(a: ConnectAssignment) -> list[list[Any]]:
    return [[c, sorted(ts)] for c, ts in sorted(a.items()) if ts]


def decode_connect_assignment(raw: list[list[Any]]) -> dict[str, frozenset[int]]:
    return {c: frozenset(ts) for c, ts in raw}


@dataclass(slots=True)
class ConnectGroupMetadataValue:
    """ConnectWorkerGroupMetadataValue: the group epoch."""

    VERSION: ClassVar[int] = 0
    epoch: int

    def fields(self) -> list[Any]:
        return [self.epoch]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupMetadataValue:
        return cls(f[0])


@dataclass(slots=True)
class ConnectGroupConnectorsTasksMetadataValue:
    """ConnectWorkerGroupConnectorsTasksMetadataValue: the configured connectors and their task
    counts (tasks ``0 .. count - 1``), with the config offset that grows with every change."""

    VERSION: ClassVar[int] = 0
    config_offset: int
    connectors: tuple[tuple[str, int], ...]  # (name, task count), sorted by name

    def fields(self) -> list[Any]:
        return [self.config_offset, [[n, c] for n, c in self.connectors]]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupConnectorsTasksMetadataValue:
        return cls(f[0], tuple((n, c) for n, c in f[1]))


@dataclass(slots=True)
class ConnectGroupMemberMetadataValue:
    """ConnectWorkerGroupMemberMetadataValue: a worker (url, instance id, client assignors).
    ``classic_member`` (online migration) is set for a worker that uses the classic protocol inside a
    connect group (its session timeout and Connect protocols); an optional trailing field written
    only when set, as on the consumer member's value."""

    VERSION: ClassVar[int] = 0
    instance_id: str | None
    client_id: str
    client_host: str
    url: str
    rebalance_timeout_ms: int
    client_assignors: tuple[ClientAssignor, ...] = ()
    classic_member: ClassicMemberMetadata | None = None

    def fields(self) -> list[Any]:
        out = [self.instance_id, self.client_id, self.client_host, self.url,
               self.rebalance_timeout_ms, [a.to_list() for a in self.client_assignors]]
        if self.classic_member is not None:
            out.append(self.classic_member.to_list())
        return out

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupMemberMetadataValue:
        return cls(f[0], f[1], f[2], f[3], f[4],
                   tuple(ClientAssignor(a[0], a[1], a[2], a[3], a[4], bytes(a[5])) for a in f[5]),
                   ClassicMemberMetadata.from_list(f[6]) if len(f) > 6 and f[6] is not None
                   else None)


@dataclass(slots=True)
class ConnectGroupTargetAssignmentMetadataValue:
    """The target assignment's epoch, the assignor's error for the group (0: none) and the
    scheduled rebalance delay the target was installed with (> 0: items may be unassigned)."""

    VERSION: ClassVar[int] = 0
    assignment_epoch: int
    error: int = 0
    scheduled_rebalance_delay_ms: int = 0

    def fields(self) -> list[Any]:
        return [self.assignment_epoch, self.error, self.scheduled_rebalance_delay_ms]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupTargetAssignmentMetadataValue:
        return cls(f[0], f[1], f[2])


@dataclass(slots=True)
class ConnectGroupTargetAssignmentMemberValue:
    """One worker's target: connectors and tasks, the assignor's error and metadata for it."""

    VERSION: ClassVar[int] = 0
    items: ConnectAssignment
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

    def fields(self) -> list[Any]:
        return [encode_connect_assignment(self.items), self.error, self.metadata_version,
                self.metadata_bytes]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupTargetAssignmentMemberValue:
        return cls(decode_connect_assignment(f[0]), f[1], f[2], bytes(f[3]))


@dataclass(slots=True)
class ConnectGroupCurrentMemberAssignmentValue:
    """A worker's current assignment: worker epoch, previous epoch, reconciliation state, assigned
    and pending-revocation connectors/tasks, and the error/metadata of its target epoch."""

    VERSION: ClassVar[int] = 0
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: ConnectAssignment
    pending_revocation: ConnectAssignment
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

    def fields(self) -> list[Any]:
        return [self.member_epoch, self.previous_member_epoch, self.state,
                encode_connect_assignment(self.assigned),
                encode_connect_assignment(self.pending_revocation), self.error,
                self.metadata_version, self.metadata_bytes]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ConnectGroupCurrentMemberAssignmentValue:
        return cls(f[0], f[1], f[2], decode_connect_assignment(f[3]),
                   decode_connect_assignment(f[4]), f[5], f[6], bytes(f[7]))


@dataclass(slots=True)
class ShareGroupMetadataValue:
    """ShareGroupMetadataValue: the group epoch and the hash of the subscribed topics' metadata
    the epoch was bumped for (Kafka 4.1+'s ``MetadataHash``: a change of the topics bumps it)."""

    VERSION: ClassVar[int] = 0
    epoch: int
    metadata_hash: int = 0

    def fields(self) -> list[Any]:
        return [self.epoch, self.metadata_hash]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ShareGroupMetadataValue:
        return cls(f[0], f[1])


@dataclass(slots=True)
class ShareGroupMemberMetadataValue:
    """ShareGroupMemberMetadataValue: a share member's rack, client id and host, and the topic
    names it subscribes to (sorted)."""

    VERSION: ClassVar[int] = 0
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]

    def fields(self) -> list[Any]:
        return [self.rack_id, self.client_id, self.client_host, list(self.subscribed_topic_names)]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ShareGroupMemberMetadataValue:
        return cls(f[0], f[1], f[2], tuple(f[3]))


@dataclass(slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    """ShareGroupCurrentMemberAssignmentValue: the member epoch, the previous one, the state
    (always STABLE: share assignments change without revocation) and the assigned partitions."""

    VERSION: ClassVar[int] = 0
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: Assignment

    def fields(self) -> list[Any]:
        return [self.member_epoch, self.previous_member_epoch, self.state,
                encode_assignment(self.assigned_partitions)]

    @classmethod
    def from_fields(cls, version: int, f: list[Any]) -> ShareGroupCurrentMemberAssignmentValue:
        return cls(f[0], f[1], f[2], decode_assignment(f[3]))


RecordValue = (
    ShareGroupMetadataValue
    | ShareGroupMemberMetadataValue
    | ShareGroupCurrentMemberAssignmentValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | OffsetCommitValue
    | GroupConfigurationValue
    | ConnectGroupMetadataValue
    | ConnectGroupConnectorsTasksMetadataValue
    | ConnectGroupMemberMetadataValue
    | ConnectGroupTargetAssignmentMetadataValue
    | ConnectGroupTargetAssignmentMemberValue
    | ConnectGroupCurrentMemberAssignmentValue
    | ClassicGroupMetadataValue
    | ConsumerGroupRegularExpressionValue
    | TxnOffsetCommitValue
    | TxnProducerValue
)

VALUE_TYPES: dict[RecordType, Any] = {
    RecordType.OFFSET_COMMIT: OffsetCommitValue,
    RecordType.CONSUMER_GROUP_METADATA: ConsumerGroupMetadataValue,
    RecordType.CONSUMER_GROUP_PARTITION_METADATA: ConsumerGroupPartitionMetadataValue,
    RecordType.CONSUMER_GROUP_MEMBER_METADATA: ConsumerGroupMemberMetadataValue,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataValue,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberValue,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentValue,
    RecordType.GROUP_CONFIGURATION: GroupConfigurationValue,
    RecordType.CONNECT_GROUP_METADATA: ConnectGroupMetadataValue,
    RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA: ConnectGroupConnectorsTasksMetadataValue,
    RecordType.CONNECT_GROUP_MEMBER_METADATA: ConnectGroupMemberMetadataValue,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA: ConnectGroupTargetAssignmentMetadataValue,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER: ConnectGroupTargetAssignmentMemberValue,
    RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT: ConnectGroupCurrentMemberAssignmentValue,
    RecordType.CLASSIC_GROUP_METADATA: ClassicGroupMetadataValue,
    RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION: ConsumerGroupRegularExpressionValue,
    RecordType.SHARE_GROUP_METADATA: ShareGroupMetadataValue,
    RecordType.SHARE_GROUP_MEMBER_METADATA: ShareGroupMemberMetadataValue,
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataValue,
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberValue,
    RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: ShareGroupCurrentMemberAssignmentValue,
    RecordType.TXN_OFFSET_COMMIT: TxnOffsetCommitValue,
    RecordType.TXN_PRODUCER: TxnProducerValue,
}

_MEMBER_TYPES = frozenset({
    RecordType.CONSUMER_GROUP_MEMBER_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    RecordType.CONNECT_GROUP_MEMBER_METADATA,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    RecordType.SHARE_GROUP_MEMBER_METADATA,
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
})

KEY_VERSION = 0

#: One packer for every encode: ``msgpack.packb`` builds a ``Packer`` per call, which is about
#: a third of a record's encoding time (the simulator's hot path). Sharing it is safe across threads: the C
#: packer runs under the GIL from start to end (our fields are ints, strings, bytes, lists and
#: None: no ``default`` hook calls back into Python), resets its buffer after each ``pack``
#: and on errors. The bytes are those of ``msgpack.packb`` (same default options).
_pack = msgpack.Packer().pack

#: Offset commit keys repeat (members commit every owned partition every few seconds): their
#: bytes are packed once per (group, topic, partition). Bounded: cleared when full.
_OFFSET_KEY_BYTES: dict[tuple[str, str, int], bytes] = {}
_OFFSET_KEY_BYTES_SIZE = 65_536


def _offset_key_bytes(group_id: str, topic: str, partition: int) -> bytes:
    """The encoded key of an offset commit record (the bytes the generic path packs)."""
    fields = (group_id, topic, partition)
    k = _OFFSET_KEY_BYTES.get(fields)
    if k is None:
        k = _pack([int(RecordType.OFFSET_COMMIT), KEY_VERSION, group_id, topic, partition])
        if len(_OFFSET_KEY_BYTES) >= _OFFSET_KEY_BYTES_SIZE:
            _OFFSET_KEY_BYTES.clear()
        _OFFSET_KEY_BYTES[fields] = k
    return k

_RECORD_TYPES: dict[int, RecordType] = {int(t): t for t in RecordType}

_new = object.__new__


def new_offset_record(key: OffsetCommitKey, offset: int, leader_epoch: int, metadata: str,
                      commit_timestamp: int, expire_timestamp: int,
                      topic_id: UUID | None) -> Record:
    """``Record(key, OffsetCommitValue(offset, ...))`` for the hot paths (``offsets.commit``,
    ``Record.decode``: members auto-commit every owned partition every few seconds),
    built as empty instances whose fields are then all set. That is the object the dataclass
    constructors make: both are plain slotted dataclasses whose ``__init__`` only assigns every
    field (no ``__post_init__``, no conversion), at about half the cost of the two Python-level
    ``__init__`` calls. tests/test_coordinator_hot_paths.py pins the two classes' fields and
    compares the objects."""
    value = _new(OffsetCommitValue)
    value.offset = offset
    value.leader_epoch = leader_epoch
    value.metadata = metadata
    value.commit_timestamp = commit_timestamp
    value.expire_timestamp = expire_timestamp
    value.topic_id = topic_id
    record = _new(Record)
    record.key = key
    record.value = value
    return record


@dataclass(slots=True)
class Record:
    key: RecordKey
    value: RecordValue | None  # None: tombstone

    def encode(self) -> tuple[bytes, bytes | None]:
        key = self.key
        value = self.value
        if type(key) is OffsetCommitKey and key.type is RecordType.OFFSET_COMMIT:
            # Offset commits are most of the records (auto-commits): the key's bytes come from the
            # cache, the value is packed field by field (the list ``fields`` would build; the
            # topic id's bytes are what ``UUID.bytes`` returns, without the property's call).
            k = _OFFSET_KEY_BYTES.get((key.group_id, key.topic, key.partition))
            if k is None:
                k = _offset_key_bytes(key.group_id, key.topic, key.partition)
            if type(value) is OffsetCommitValue:
                tid = value.topic_id
                return k, _pack([OffsetCommitValue.VERSION, value.offset, value.leader_epoch,
                                 value.metadata, value.commit_timestamp, value.expire_timestamp,
                                 None if tid is None else tid.int.to_bytes(16, "big")])
        else:
            k = _pack([int(key.type), KEY_VERSION, *key.fields()])
        if value is None:
            return k, None
        return k, _pack([value.VERSION, *value.fields()])

    @staticmethod
    def decode(key: bytes, value: bytes | None) -> Record:
        try:
            rkey = _KEY_CACHE.get(key)
            if rkey is None:
                rkey = _decode_key(key)
                if len(_KEY_CACHE) >= _KEY_CACHE_SIZE:
                    _KEY_CACHE.clear()
                _KEY_CACHE[key] = rkey
            if value is None:
                return Record(rkey, None)
            vf = msgpack.unpackb(value)
            version = vf[0]
            if type(rkey) is OffsetCommitKey and version == OffsetCommitValue.VERSION:
                # Most records are offsets (auto-commits): built as ``from_fields`` builds them,
                # without the lookup of the value type, the version range check (the version
                # is the current one) and the copy of the fields.
                tid = vf[6]
                return new_offset_record(rkey, vf[1], vf[2], vf[3], vf[4], vf[5],
                                         None if tid is None else uuid_from_bytes(bytes(tid)))
            cls = VALUE_TYPES[rkey.type]
            if version > cls.VERSION or version < 0:
                raise RecordDecodeError(f"unknown value version {version} for {rkey.type.name}")
            return Record(rkey, cls.from_fields(version, vf[1:]))
        except RecordDecodeError:
            raise
        except Exception as e:  # malformed bytes of any kind
            raise RecordDecodeError(f"malformed record: {e!r}") from e


#: Keys repeat (offsets of the same partitions, the same members): decode each once.
_KEY_CACHE: dict[bytes, RecordKey] = {}
_KEY_CACHE_SIZE = 200_000


def _decode_key(key: bytes) -> RecordKey:
    kf = msgpack.unpackb(key)
    rtype = _RECORD_TYPES.get(kf[0])
    if rtype is None:
        raise RecordDecodeError(f"unknown record type {kf[0]!r}")
    if kf[1] != KEY_VERSION:
        raise RecordDecodeError(f"unknown key version {kf[1]} for {rtype.name}")
    if rtype is RecordType.OFFSET_COMMIT:
        return OffsetCommitKey(kf[2], kf[3], kf[4])
    if rtype in _MEMBER_TYPES:
        return MemberKey(rtype, kf[2], kf[3])
    if rtype is RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
        return RegexKey(kf[2], kf[3])
    if rtype is RecordType.TXN_OFFSET_COMMIT:
        return TxnOffsetKey(kf[2], kf[3], kf[4], kf[5])
    if rtype is RecordType.TXN_PRODUCER:
        return TxnProducerKey(kf[2], kf[3])
    return GroupKey(rtype, kf[2])


# --------------------------------------------------------------------------- constructors


def group_epoch_record(group_id: str, epoch: int) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_METADATA, group_id),
                  ConsumerGroupMetadataValue(epoch))


def regex_record(group_id: str, regex: str, topics: frozenset[str], timestamp_ms: int) -> Record:
    return Record(RegexKey(group_id, regex),
                  ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), timestamp_ms))


def regex_tombstone(group_id: str, regex: str) -> Record:
    return Record(RegexKey(group_id, regex), None)


def group_epoch_tombstone(group_id: str) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_METADATA, group_id), None)


def partition_metadata_record(group_id: str, topics: Mapping[str, TopicMetadata]) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_PARTITION_METADATA, group_id),
                  ConsumerGroupPartitionMetadataValue(tuple(topics[n] for n in sorted(topics))))


def partition_metadata_tombstone(group_id: str) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_PARTITION_METADATA, group_id), None)


def member_metadata_record(group_id: str, member_id: str,
                           value: ConsumerGroupMemberMetadataValue) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id), value)


def member_metadata_tombstone(group_id: str, member_id: str) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id), None)


def target_assignment_metadata_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id),
                  ConsumerGroupTargetAssignmentMetadataValue(epoch, timestamp_ms))


def target_assignment_metadata_tombstone(group_id: str) -> Record:
    return Record(GroupKey(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id), None)


def target_member_record(group_id: str, member_id: str, partitions: Assignment) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                  ConsumerGroupTargetAssignmentMemberValue(partitions))


def target_member_tombstone(group_id: str, member_id: str) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                  None)


def current_assignment_record(group_id: str, member_id: str,
                              value: ConsumerGroupCurrentMemberAssignmentValue) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                  value)


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return Record(MemberKey(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                  None)


def offset_commit_record(group_id: str, topic: str, partition: int,
                         value: OffsetCommitValue | None) -> Record:
    return Record(OffsetCommitKey(group_id, topic, partition), value)


def group_configuration_record(group_id: str, configs: Mapping[str, str] | None) -> Record:
    key = GroupKey(RecordType.GROUP_CONFIGURATION, group_id)
    if configs is None:
        return Record(key, None)
    return Record(key, GroupConfigurationValue(tuple(sorted(configs.items()))))


def classic_group_metadata_record(group_id: str, value: ClassicGroupMetadataValue) -> Record:
    return Record(GroupKey(RecordType.CLASSIC_GROUP_METADATA, group_id), value)


def classic_group_metadata_tombstone(group_id: str) -> Record:
    return Record(GroupKey(RecordType.CLASSIC_GROUP_METADATA, group_id), None)


# --------------------------------------------------------------------------- connect constructors


def connect_group_epoch_record(group_id: str, epoch: int | None) -> Record:
    key = GroupKey(RecordType.CONNECT_GROUP_METADATA, group_id)
    return Record(key, None if epoch is None else ConnectGroupMetadataValue(epoch))


def connect_connectors_tasks_record(group_id: str, config_offset: int | None,
                                    connectors: Mapping[str, int] | None = None) -> Record:
    key = GroupKey(RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA, group_id)
    if config_offset is None:
        return Record(key, None)
    return Record(key, ConnectGroupConnectorsTasksMetadataValue(
        config_offset, tuple(sorted((connectors or {}).items()))))


def connect_member_metadata_record(group_id: str, member_id: str,
                                   value: ConnectGroupMemberMetadataValue | None) -> Record:
    return Record(MemberKey(RecordType.CONNECT_GROUP_MEMBER_METADATA, group_id, member_id), value)


def connect_target_metadata_record(
        group_id: str, value: ConnectGroupTargetAssignmentMetadataValue | None) -> Record:
    return Record(GroupKey(RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA, group_id), value)


def connect_target_member_record(group_id: str, member_id: str,
                                 value: ConnectGroupTargetAssignmentMemberValue | None) -> Record:
    return Record(MemberKey(RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                  value)


def connect_current_assignment_record(
        group_id: str, member_id: str,
        value: ConnectGroupCurrentMemberAssignmentValue | None) -> Record:
    return Record(MemberKey(RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                  value)


# --------------------------------------------------------------------------- share constructors


def share_group_epoch_record(group_id: str, epoch: int | None, metadata_hash: int = 0) -> Record:
    key = GroupKey(RecordType.SHARE_GROUP_METADATA, group_id)
    return Record(key, None if epoch is None else ShareGroupMetadataValue(epoch, metadata_hash))


def share_member_metadata_record(group_id: str, member_id: str,
                                 value: ShareGroupMemberMetadataValue | None) -> Record:
    return Record(MemberKey(RecordType.SHARE_GROUP_MEMBER_METADATA, group_id, member_id), value)


def share_target_metadata_record(group_id: str, epoch: int | None,
                                 timestamp_ms: int = 0) -> Record:
    key = GroupKey(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id)
    return Record(key, None if epoch is None
                  else ConsumerGroupTargetAssignmentMetadataValue(epoch, timestamp_ms))


def share_target_member_record(group_id: str, member_id: str,
                               partitions: Assignment | None) -> Record:
    key = MemberKey(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
    return Record(key, None if partitions is None
                  else ConsumerGroupTargetAssignmentMemberValue(partitions))


def share_current_assignment_record(
        group_id: str, member_id: str,
        value: ShareGroupCurrentMemberAssignmentValue | None) -> Record:
    return Record(MemberKey(RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                  value)
