"""Hand-written encoders for the hot path: the ConsumerGroupHeartbeat response (API 68 v0/v1).

kio's writers are generic pure Python (~10 µs for a heartbeat response); steady-state heartbeats
dominate a coordinator's traffic, so this one response is encoded directly. The layout is the
upstream schema ``ConsumerGroupHeartbeatResponse.json`` (flexible in every version; v0 and v1
have the same response fields):

    ThrottleTimeMs int32, ErrorCode int16, ErrorMessage compact nullable string,
    MemberId compact nullable string, MemberEpoch int32, HeartbeatIntervalMs int32,
    Assignment nullable struct (int8 -1 = null, 1 = present; KIP-893) of
        TopicPartitions compact array of (TopicId uuid, Partitions compact array of int32,
        tagged fields), tagged fields;
    tagged fields: none, or groupcoord's ShouldComputeAssignment (tag 0, bool) when it is true
    (``protocol/schemas/ConsumerGroupHeartbeatResponse.json``; only members that advertised
    client-side assignors are ever told to compute, so real clients get upstream's bytes).

Tests check the bytes equal kio's encoding of the same response.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, overload
from uuid import UUID

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_HDR = struct.Struct(">ih")
_TAIL = struct.Struct(">ii")


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_nullable_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    n = len(b) + 1
    return (bytes((n,)) if n < 0x80 else uvarint(n)) + b


def consumer_group_heartbeat_response(
    error_code: int, error_message: str | None, member_id: str | None, member_epoch: int,
    heartbeat_interval_ms: int,
    assignment: Iterable[tuple[UUID, Sequence[int]]] | None,
    throttle_time_ms: int = 0,
    should_compute_assignment: bool = False,
) -> bytes:
    """The body of a ConsumerGroupHeartbeat v0/v1 response."""
    parts = [_HDR.pack(throttle_time_ms, error_code), compact_nullable_string(error_message),
             compact_nullable_string(member_id), _TAIL.pack(member_epoch, heartbeat_interval_ms)]
    if assignment is None:
        parts.append(b"\xff")
    else:
        tps = list(assignment)
        parts.append(b"\x01")
        parts.append(uvarint(len(tps) + 1))
        for topic_id, partitions in tps:
            parts.append(topic_id.bytes)
            parts.append(uvarint(len(partitions) + 1))
            if partitions:
                parts.append(struct.pack(f">{len(partitions)}i", *partitions))
            parts.append(b"\x00")
        parts.append(b"\x00")
    # Top-level tagged fields: count, then (tag 0, size 1, true) for ShouldComputeAssignment.
    parts.append(b"\x01\x00\x01\x01" if should_compute_assignment else b"\x00")
    return b"".join(parts)


# ---------------------------------------------------------------------------- Metadata (API 3)
#
# A Metadata response for a 100,000-partition topic is 100,000 partition entries; kio's generic
# writers take seconds for it. ``metadata_response`` encodes the response's other fields with
# kio (given a response whose ``topics`` is empty) and the topics array by hand, spliced where
# the empty array was. Layout per upstream ``MetadataResponse.json`` (flexible from v9):
#   topic: ErrorCode int16, Name string (compact from v9, nullable from v12), TopicId uuid
#   (v10+), IsInternal bool (v1+), Partitions array, TopicAuthorizedOperations int32 (v8+),
#   tagged fields (v9+);
#   partition: ErrorCode int16, PartitionIndex int32, LeaderId int32, LeaderEpoch int32 (v7+),
#   ReplicaNodes, IsrNodes, OfflineReplicas (v5+) arrays of int32, tagged fields (v9+).
# The response's fields after Topics: ClusterAuthorizedOperations int32 (v8-v10), ErrorCode
# int16 (v13+), tagged fields (v9+). Tests check the bytes equal kio's for every version.

_METADATA_AFTER_TOPICS = {8: 4, 9: 5, 10: 5, 11: 1, 12: 1, 13: 3}


class UniformPartitions(Sequence[dict[str, Any]]):
    """Metadata partition entries 0..count-1 that differ only in their index (one broker leads
    them all, no error): the dicts ``build`` takes, made on demand, and encoded by
    :func:`metadata_response` without making them."""

    __slots__ = ("isr", "leader_epoch", "leader_id", "replicas", "size")

    def __init__(self, size: int, leader_id: int, leader_epoch: int) -> None:
        self.size = size
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.replicas = (leader_id,)
        self.isr = (leader_id,)

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | Sequence[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(index)
        return {"error_code": 0, "partition_index": index, "leader_id": self.leader_id,
                "leader_epoch": self.leader_epoch, "replica_nodes": self.replicas,
                "isr_nodes": self.isr, "offline_replicas": ()}


def _uniform_partitions(version: int, parts: UniformPartitions) -> bytes:
    flexible = version >= 9
    tail = _I32.pack(parts.leader_id)
    if version >= 7:
        tail += _I32.pack(parts.leader_epoch)
    tail += _int32_array(parts.replicas, flexible) + _int32_array(parts.isr, flexible)
    if version >= 5:
        tail += _int32_array((), flexible)
    if flexible:
        tail += b"\x00"
    # ErrorCode 0 and PartitionIndex, then the tail common to all
    head = _PART_HEAD_NO_LEADER.pack
    return _array_len(parts.size, flexible) + b"".join(
        [head(0, p) + tail for p in range(parts.size)])
_PART_HEAD_NO_LEADER = struct.Struct(">hi")
_ZERO_UUID = bytes(16)


def _array_len(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else _I32.pack(n)


def _int32_array(values: Sequence[int], flexible: bool) -> bytes:
    return _array_len(len(values), flexible) + b"".join(_I32.pack(v) for v in values)


def _metadata_topic(version: int, t: Any) -> bytes | None:
    flexible = version >= 9
    name = t["name"]
    out = [_I16.pack(int(t["error_code"]))]
    if name is None:
        if version < 12:
            return None
        out.append(b"\x00")
    else:
        raw = name.encode()
        out.append(uvarint(len(raw) + 1) + raw if flexible else _I16.pack(len(raw)) + raw)
    if version >= 10:
        tid = t.get("topic_id")
        out.append(_ZERO_UUID if tid is None else tid.bytes)
    if version >= 1:
        out.append(b"\x01" if t.get("is_internal") else b"\x00")
    parts = t["partitions"]
    cache: dict[tuple[Any, ...], bytes] = {}
    if isinstance(parts, UniformPartitions):
        out.append(_uniform_partitions(version, parts))
        parts = ()
    else:
        out.append(_array_len(len(parts), flexible))
    for p in parts:
        key = (p["leader_id"], p.get("leader_epoch", -1), tuple(p["replica_nodes"]),
               tuple(p["isr_nodes"]), tuple(p.get("offline_replicas", ())), p["error_code"])
        tail = cache.get(key)
        if tail is None:  # what follows PartitionIndex: the same for most partitions
            tail = _I32.pack(int(p["leader_id"]))
            if version >= 7:
                tail += _I32.pack(int(p.get("leader_epoch", -1)))
            tail += _int32_array(key[2], flexible) + _int32_array(key[3], flexible)
            if version >= 5:
                tail += _int32_array(key[4], flexible)
            if flexible:
                tail += b"\x00"
            cache[key] = tail
        out.append(_I16.pack(int(p["error_code"])))
        out.append(_I32.pack(int(p["partition_index"])))
        out.append(tail)
    if version >= 8:
        out.append(_I32.pack(int(t.get("topic_authorized_operations", -2147483648))))
    if flexible:
        out.append(b"\x00")
    return b"".join(out)


def metadata_response(version: int, encoded_without_topics: bytes,
                      topics: Sequence[Any]) -> bytes | None:
    """The body of a Metadata response: ``encoded_without_topics`` (kio's encoding of the
    response with an empty ``topics``) with ``topics`` (the dicts given to ``build``) encoded
    in place of the empty array; None if a topic cannot be encoded here (the caller then
    encodes the whole response with kio)."""
    flexible = version >= 9
    empty = b"\x01" if flexible else b"\x00\x00\x00\x00"
    after = _METADATA_AFTER_TOPICS.get(version, 0)
    cut = len(encoded_without_topics) - after - len(empty)
    if cut < 0 or encoded_without_topics[cut:cut + len(empty)] != empty:
        return None
    body = []
    for t in topics:
        enc = _metadata_topic(version, t)
        if enc is None:
            return None
        body.append(enc)
    return b"".join([encoded_without_topics[:cut], _array_len(len(topics), flexible), *body,
                     encoded_without_topics[cut + len(empty):]])


# ---------------------------------------------------------------- ConsumerGroupDescribe (API 69)
#
# A described group of 10,000 members lists every member's assignment and target: kio's generic
# writers took seconds for it (the dicts ``build`` takes cost as much again), and a join storm's
# convergence is checked with it. Layout per upstream ``ConsumerGroupDescribeResponse.json``
# (flexible in every version; v1 adds MemberType):
#   ThrottleTimeMs int32, Groups compact array of: ErrorCode int16, ErrorMessage compact
#   nullable string, GroupId, GroupState compact strings, GroupEpoch, AssignmentEpoch int32,
#   AssignorName compact string, Members compact array of: MemberId compact string, InstanceId,
#   RackId compact nullable strings, MemberEpoch int32, ClientId, ClientHost compact strings,
#   SubscribedTopicNames compact array of compact strings, SubscribedTopicRegex compact nullable
#   string, Assignment, TargetAssignment (each: TopicPartitions compact array of (TopicId uuid,
#   TopicName compact string, Partitions compact array of int32, tagged fields), tagged
#   fields), MemberType int8 (v1+), tagged fields; AuthorizedOperations int32, tagged fields;
#   tagged fields. Tests check the bytes equal kio's for both versions.


class DescribedTopics:
    """Encoded (TopicId, TopicName) prefixes of the topics of one describe response: a topic's
    id and name are encoded once, not once per member (``name_of`` gives a topic id's name, ""
    when the topic is unknown, as the dict-based path answers)."""

    __slots__ = ("_cache", "_name_of")

    def __init__(self, name_of: Any) -> None:
        self._name_of = name_of
        self._cache: dict[UUID, bytes] = {}

    def prefix(self, topic_id: UUID) -> bytes:
        p = self._cache.get(topic_id)
        if p is None:
            p = self._cache[topic_id] = topic_id.bytes + compact_nullable_string(
                self._name_of(topic_id))
        return p


def _described_assignment(tps: Sequence[Any], topics: DescribedTopics, out: list[bytes]) -> None:
    out.append(uvarint(len(tps) + 1))
    prefix = topics.prefix
    for tp in tps:
        ps = tp.partitions
        out.append(prefix(tp.topic_id))
        out.append(uvarint(len(ps) + 1))
        if ps:
            out.append(struct.pack(f">{len(ps)}i", *ps))
        out.append(b"\x00")
    out.append(b"\x00")


def consumer_group_describe_response(version: int, groups: Sequence[Any],
                                     authorized_operations: Sequence[int],
                                     topics: DescribedTopics, throttle_time_ms: int = 0) -> bytes:
    """The body of a ConsumerGroupDescribe v0/v1 response: ``groups`` are the coordinator's
    ``DescribedGroup`` (members with ``DescribedAssignment``), ``authorized_operations`` the
    value to write for each."""
    s = compact_nullable_string
    i32 = _I32.pack
    # Members of a group mostly share their subscription and (converged) hold their target:
    # each distinct topic-name list and each assignment object is encoded once.
    names_cache: dict[tuple[str, ...], bytes] = {}
    out = [i32(throttle_time_ms), uvarint(len(groups) + 1)]
    for g, ops in zip(groups, authorized_operations, strict=True):
        out += [_I16.pack(int(g.error_code)), s(g.error_message), s(g.group_id), s(g.group_state),
                _TAIL.pack(g.group_epoch, g.assignment_epoch), s(g.assignor_name),
                uvarint(len(g.members) + 1)]
        for m in g.members:
            names = m.subscribed_topic_names
            encoded_names = names_cache.get(names)
            if encoded_names is None:
                encoded_names = names_cache[names] = b"".join(
                    [uvarint(len(names) + 1), *map(s, names)])
            out += [s(m.member_id), s(m.instance_id), s(m.rack_id), i32(m.member_epoch),
                    s(m.client_id), s(m.client_host), encoded_names,
                    s(m.subscribed_topic_regex)]
            start = len(out)
            _described_assignment(m.assignment.topic_partitions, topics, out)
            if m.target_assignment.topic_partitions is m.assignment.topic_partitions:
                out.extend(out[start:])
            else:
                _described_assignment(m.target_assignment.topic_partitions, topics, out)
            if version >= 1:
                out.append(struct.pack(">b", m.member_type))
            out.append(b"\x00")
        out.append(i32(ops))
        out.append(b"\x00")
    out.append(b"\x00")
    return b"".join(out)


# ------------------------------------------------- the transaction coordinator (KIP-98, 24-26)
#
# A transaction is five requests (AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit,
# EndTxn); kio's generic writers took about a third of the server's CPU under
# ``bench transactions``. Three of the answers are encoded here; layouts from the upstream
# schemas (flexible from v3 in each):
#
#   EndTxnResponse, AddOffsetsToTxnResponse: ThrottleTimeMs int32, ErrorCode int16, tagged fields.
#   AddPartitionsToTxnResponse v0-v3: ThrottleTimeMs int32, ResultsByTopicV3AndBelow array of
#     (Name string, ResultsByPartition array of (PartitionIndex int32, PartitionErrorCode int16,
#     tagged fields), tagged fields), tagged fields.

_TXN_FLEXIBLE_SINCE = 3
_PARTITION_RESULT = struct.Struct(">ih")


def _string(s: str, flexible: bool) -> bytes:
    b = s.encode()
    return (uvarint(len(b) + 1) if flexible else _I16.pack(len(b))) + b


def throttle_and_error_response(version: int, error_code: int, throttle_time_ms: int = 0) -> bytes:
    """The body of an EndTxn (0-5) or AddOffsetsToTxn (0-4) response: the two fields, then the
    empty tagged fields from v3."""
    body = _HDR.pack(throttle_time_ms, error_code)
    return body + b"\x00" if version >= _TXN_FLEXIBLE_SINCE else body


def add_partitions_to_txn_response(version: int,
                                   results: Iterable[tuple[str, Sequence[tuple[int, int]]]],
                                   throttle_time_ms: int = 0) -> bytes:
    """The body of an AddPartitionsToTxn v0-v3 response: ``results`` is (topic, [(partition,
    error code)]) in the order to answer."""
    if version > 3:
        raise ValueError(f"AddPartitionsToTxn v{version}: only v0-v3 are encoded here")
    return _topic_partition_errors(version, results, throttle_time_ms)


def txn_offset_commit_response(version: int,
                               results: Iterable[tuple[str, Sequence[tuple[int, int]]]],
                               throttle_time_ms: int = 0) -> bytes:
    """The body of a TxnOffsetCommit v0-v5 response (``TxnOffsetCommitResponse.json``:
    ThrottleTimeMs int32, Topics array of (Name string, Partitions array of (PartitionIndex
    int32, ErrorCode int16, tagged fields), tagged fields), tagged fields; flexible from v3):
    AddPartitionsToTxn v0-v3's layout. ``results`` is (topic, [(partition, error code)])."""
    if version > 5:
        raise ValueError(f"TxnOffsetCommit v{version}: only v0-v5 are encoded here")
    return _topic_partition_errors(version, results, throttle_time_ms)


def _topic_partition_errors(version: int,
                            results: Iterable[tuple[str, Sequence[tuple[int, int]]]],
                            throttle_time_ms: int) -> bytes:
    flexible = version >= _TXN_FLEXIBLE_SINCE
    tagged = b"\x00" if flexible else b""
    topics = list(results)
    parts = [_I32.pack(throttle_time_ms), _array_len(len(topics), flexible)]
    for name, partitions in topics:
        parts.append(_string(name, flexible))
        parts.append(_array_len(len(partitions), flexible))
        for index, code in partitions:
            parts.append(_PARTITION_RESULT.pack(index, code))
            parts.append(tagged)
        parts.append(tagged)
    parts.append(tagged)
    return b"".join(parts)


# ------------------------------------------------------------------------------ Produce (API 0)
#
# The transactional producer's batch is the second request of every transaction. Layout from
# the upstream ``ProduceResponse.json`` for the versions the broker serves (v3-v12; flexible
# from v9):
#   Responses array of (Name string, PartitionResponses array of (Index int32, ErrorCode int16,
#   BaseOffset int64, LogAppendTimeMs int64, LogStartOffset int64 (v5+), RecordErrors array of
#   (BatchIndex int32, BatchIndexErrorMessage nullable string, tagged fields) (v8+),
#   ErrorMessage nullable string (v8+), tagged fields: CurrentLeader (v10+, tag 0, never set
#   here)), tagged fields), ThrottleTimeMs int32, tagged fields: NodeEndpoints (v10+, tag 0,
#   never set here). Tests check the bytes equal kio's for every version.

_PRODUCE_FLEXIBLE_SINCE = 9
_PRODUCE_HEAD = struct.Struct(">ihqq")
_I64 = struct.Struct(">q")


def _nullable_string(s: str | None, flexible: bool) -> bytes:
    if flexible:
        return compact_nullable_string(s)
    if s is None:
        return b"\xff\xff"
    b = s.encode()
    return _I16.pack(len(b)) + b


def produce_response(version: int, topics: Iterable[tuple[str, Iterable[Any]]],
                     throttle_time_ms: int = 0) -> bytes:
    """The body of a Produce v3-v12 response: ``topics`` is (topic name, partition results),
    each result a mapping with ``index``, ``error_code``, ``base_offset``, ``log_append_time``,
    ``log_start_offset`` and ``error_message`` (the dicts the Produce handler answers; no
    record errors: the broker refuses a batch whole)."""
    if not 3 <= version <= 12:
        raise ValueError(f"Produce v{version}: only v3-v12 are encoded here")
    flexible = version >= _PRODUCE_FLEXIBLE_SINCE
    tagged = b"\x00" if flexible else b""
    # v8+: the empty RecordErrors array
    no_record_errors = (b"\x01" if flexible else b"\x00\x00\x00\x00") if version >= 8 else b""
    topics = list(topics)
    parts = [_array_len(len(topics), flexible)]
    head = _PRODUCE_HEAD.pack
    for name, results in topics:
        results = list(results)
        parts.append(_string(name, flexible))
        parts.append(_array_len(len(results), flexible))
        for r in results:
            parts.append(head(r["index"], r["error_code"], r["base_offset"],
                              r["log_append_time"]))
            if version >= 5:
                parts.append(_I64.pack(r["log_start_offset"]))
            if version >= 8:
                parts.append(no_record_errors)
                parts.append(_nullable_string(r["error_message"], flexible))
            parts.append(tagged)
        parts.append(tagged)
    parts.append(_I32.pack(throttle_time_ms))
    parts.append(tagged)
    return b"".join(parts)
