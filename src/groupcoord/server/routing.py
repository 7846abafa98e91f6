"""Requests that reached the wrong broker of a several-broker server (``server/brokers.py``).

:func:`misrouted` answers, instead of the handler, a group request sent to a broker that is not
the group's coordinator (NOT_COORDINATOR, where the response schema has an error code for it), a
transaction request sent to a broker that is not its transactional id's coordinator
(NOT_COORDINATOR)
and a Produce, Fetch, ListOffsets, OffsetForLeaderEpoch or DeleteRecords naming a partition
the broker does not lead (NOT_LEADER_OR_FOLLOWER for every partition of the request), as Kafka
does so that clients look the coordinator or the leaders up again. Requests without a place for
the error (DescribeGroups, ListGroups, ...) are served by any broker.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import build, response_class
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.brokers import BrokerSet
from groupcoord.server.faults import injected_response, request_groups
from groupcoord.server.runtime import CoordinatorRuntime
from groupcoord.server.topic_registry import TopicRegistry
from groupcoord.server.transaction_runtime import TransactionRuntime

__all__ = ["GROUP_APIS", "misrouted"]

#: APIs answered by the group's coordinator only.
GROUP_APIS = frozenset({
    ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.OFFSET_DELETE, ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, ApiKey.CONNECT_GROUP_HEARTBEAT,
    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT, ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
    ApiKey.CONNECT_GROUP_CONFIG, ApiKey.SHARE_GROUP_HEARTBEAT,
})

#: APIs answered by the transactional id's coordinator only (InitProducerId: with an id).
TRANSACTION_APIS = frozenset({
    ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.END_TXN,
})

_NOT_LEADER = int(ErrorCode.not_leader_or_follower)


def transactional_id(api_key: int, body: Any) -> str | None:
    """The transactional id a transaction API request names (None: none)."""
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        return getattr(body, "v3_and_below_transactional_id", None)
    tid = getattr(body, "transactional_id", None)
    return tid if isinstance(tid, str) else None


def misrouted(brokers: BrokerSet, runtime: CoordinatorRuntime | None,
              registry: TopicRegistry | None, api_key: int, version: int, body: Any,
              broker: int, transactions: TransactionRuntime | None = None) -> Any | None:
    """The response refusing this request at ``broker``, or None to handle it."""
    if api_key in TRANSACTION_APIS and transactions is not None:
        tid = transactional_id(api_key, body)
        if tid is None or brokers.transaction_coordinator(
                transactions.coordinator.partition_of(tid)) == broker:
            return None
        return injected_response(api_key, version, body, int(ErrorCode.not_coordinator))
    if api_key in GROUP_APIS and runtime is not None:
        groups = request_groups(body)
        if any(brokers.coordinator_of_shard(runtime.shard_of(g)) != broker for g in groups):
            return injected_response(api_key, version, body, int(ErrorCode.not_coordinator))
        return None
    if registry is None:
        return None
    if api_key == ApiKey.PRODUCE:
        parts = [(t.name, int(p.index)) for t in body.topic_data for p in t.partition_data]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, responses=[
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": _NOT_LEADER, "base_offset": -1,
                 "log_append_time": -1, "log_start_offset": -1} for p in t.partition_data]}
            for t in body.topic_data])
    if api_key == ApiKey.FETCH:
        if getattr(body, "replica_id", -1) >= 0:
            return None
        parts = []
        for t in body.topics:
            name = getattr(t, "topic", None)
            if version >= 13:
                topic = registry.by_id.get(t.topic_id)
                name = None if topic is None else topic.name
            if name:
                parts.extend((name, int(p.partition)) for p in t.partitions)
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, error_code=0,
                     session_id=0, responses=[
            {"topic": getattr(t, "topic", ""), "topic_id": getattr(t, "topic_id", None),
             "partitions": [{"partition_index": p.partition, "error_code": _NOT_LEADER,
                             "high_watermark": -1, "last_stable_offset": -1,
                             "log_start_offset": -1, "aborted_transactions": (),
                             "preferred_read_replica": -1, "records": b""}
                            for p in t.partitions]} for t in body.topics])
    if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        parts = [(t.topic, int(p.partition)) for t in body.topics for p in t.partitions]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, topics=[
            {"topic": t.topic, "partitions": [
                {"error_code": _NOT_LEADER, "partition": p.partition, "leader_epoch": -1,
                 "end_offset": -1} for p in t.partitions]} for t in body.topics])
    if api_key == ApiKey.DELETE_RECORDS:
        parts = [(t.name, int(p.partition_index)) for t in body.topics for p in t.partitions]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, topics=[
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": _NOT_LEADER,
                 "low_watermark": -1} for p in t.partitions]} for t in body.topics])
    if api_key == ApiKey.DESCRIBE_PRODUCERS:
        parts = [(t.name, int(p)) for t in body.topics for p in t.partition_indexes]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, topics=[
            {"name": t.name, "partitions": [
                {"partition_index": p, "error_code": _NOT_LEADER, "error_message": None,
                 "active_producers": ()} for p in t.partition_indexes]} for t in body.topics])
    if api_key == ApiKey.WRITE_TXN_MARKERS:
        parts = [(t.name, int(p)) for m in body.markers for t in m.topics
                 for p in t.partition_indexes]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), markers=[
            {"producer_id": m.producer_id, "topics": [
                {"name": t.name, "partitions": [
                    {"partition_index": p, "error_code": _NOT_LEADER}
                    for p in t.partition_indexes]} for t in m.topics]} for m in body.markers])
    if api_key == ApiKey.LIST_OFFSETS:
        parts = [(t.name, int(p.partition_index)) for t in body.topics for p in t.partitions]
        if _all_led(brokers, registry, parts, broker):
            return None
        return build(_response_class(api_key, version), throttle_time=0, topics=[
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": _NOT_LEADER,
                 "timestamp": -1, "offset": -1, "leader_epoch": -1} for p in t.partitions]}
            for t in body.topics])
    return None


def _response_class(api_key: int, version: int) -> type[Any]:
    cls = response_class(api_key, version)
    assert cls is not None  # a supported (key, version): dispatch checked it
    return cls


def _all_led(brokers: BrokerSet, registry: TopicRegistry, parts: list[tuple[str, int]],
             broker: int) -> bool:
    """Whether ``broker`` leads every partition named (of a topic that exists: the handler
    answers the others UNKNOWN_TOPIC_OR_PARTITION)."""
    return all(brokers.leader(name, p) == broker for name, p in parts
               if registry.get(name) is not None)
