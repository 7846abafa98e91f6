"""Fault injection for tests, in the server layer (the coordinator core never sees it).

What :class:`FaultInjector` holds is consulted by :meth:`KafkaServer.dispatch
<groupcoord.server.app.KafkaServer.dispatch>` for every decoded request, before its handler:

- **error rules** (:meth:`FaultInjector.inject_error`): the next ``count`` requests of an API
  (optionally only those naming one group, from one client id, or to one broker) are answered
  with an error code *instead of* being handled, as librdkafka's mock cluster does with
  ``rd_kafka_mock_push_request_errors`` and kfake with a control function that returns an
  error: the coordinator never sees them (a heartbeat answered NOT_COORDINATOR did not renew
  the session). The error goes where the response schema has it: the top-level ErrorCode;
  OffsetCommit and AddPartitionsToTxn: every partition; FindCoordinator v4+: every key;
  OffsetFetch v8+: every group;
  an API with no error code anywhere is refused when the rule is made (ValueError);
- **latency rules** (:meth:`FaultInjector.add_latency`): requests of an API and/or to a broker
  are handled only after a delay (the connection's later requests wait too, as Kafka answers a
  connection's requests in order);
- **append failures** (:class:`FailingAppendLog`): the next ``count`` appends to the record log
  fail; the runtime answers COORDINATOR_NOT_AVAILABLE and reloads the shard from its log, as
  after a real write failure (``server/runtime.py`` "Write before respond").

Rules are matched in the order they were made; each request consumes at most one error rule.
Everything here runs on the server's event loop (no locks).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.protocol.codec import build, response_class
from groupcoord.protocol.errors import error_name
from groupcoord.protocol.versions import API_VERSIONS, ApiKey, api_name
from groupcoord.storage.log import (
    CompactionResult,
    Entry,
    LogError,
    LogStats,
    OffsetEntry,
    RecordLog,
)

__all__ = ["ErrorRule", "FailingAppendLog", "FaultInjector", "LatencyRule", "injected_response",
           "parse_api", "request_groups"]

_ids = itertools.count(1)


def parse_api(api: str | int) -> int:
    """An API by key (``12``) or name (``Heartbeat``, ``heartbeat``, ``HEARTBEAT``,
    ``OffsetCommit``, ``offset-commit``); ValueError naming the input otherwise."""
    if isinstance(api, int) or (isinstance(api, str) and api.strip().isdigit()):
        key = int(api)
        if key not in API_VERSIONS:
            raise ValueError(f"unknown API key {key}")
        return key
    wanted = str(api).replace("-", "").replace("_", "").lower()
    for k in ApiKey:
        if k.name.replace("_", "").lower() == wanted:
            return int(k)
    raise ValueError(f"unknown API {api!r} (a name such as Heartbeat or OffsetCommit, or a key)")


def request_groups(body: Any) -> tuple[str, ...]:
    """The group ids a request names (empty for APIs without groups)."""
    gid = getattr(body, "group_id", None)
    if isinstance(gid, str):
        return (gid,)
    out: list[str] = []
    for g in getattr(body, "groups", None) or ():  # OffsetFetch v8+, DescribeGroups
        out.append(g if isinstance(g, str) else str(getattr(g, "group_id", "")))
    out.extend(getattr(body, "group_ids", None) or ())  # ConsumerGroupDescribe, ...
    if int(getattr(body, "key_type", 0) or 0) == 0:  # FindCoordinator of groups
        key = getattr(body, "key", None)
        if isinstance(key, str) and key:
            out.append(key)
        out.extend(getattr(body, "coordinator_keys", None) or ())
    return tuple(out)


def injected_response(api_key: int, version: int, body: Any, code: int) -> Any | None:
    """A response of (``api_key``, ``version``) to ``body`` carrying ``code`` (module doc);
    None when the schema has no place for an error code."""
    cls = response_class(api_key, version)
    if cls is None:
        return None
    fields = cls.__dataclass_fields__
    message = f"{error_name(code)} (injected by the groupcoord control plane)"
    if api_key == ApiKey.FIND_COORDINATOR and "coordinators" in fields:
        return build(cls, throttle_time=0, coordinators=[
            {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code,
             "error_message": message} for k in body.coordinator_keys])
    if api_key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
        return build(cls, throttle_time=0, topics=[
            {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                             "error_code": code} for p in t.partitions]}
            for t in body.topics])
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN and "results_by_topic_v3_and_below" in fields:
        return build(cls, throttle_time=0, results_by_topic_v3_and_below=[
            {"name": t.name, "results_by_partition": [
                {"partition_index": p, "partition_error_code": code} for p in t.partitions]}
            for t in body.v3_and_below_topics])
    if api_key == ApiKey.OFFSET_FETCH and "groups" in fields:
        return build(cls, throttle_time=0, groups=[
            {"group_id": g.group_id, "topics": (), "error_code": code} for g in body.groups])
    if "error_code" not in fields:
        return None
    values: dict[str, Any] = {"error_code": code}
    if "error_message" in fields:
        values["error_message"] = message
    if api_key == ApiKey.API_VERSIONS:
        values["api_keys"] = ()
    return build(cls, values)


def _can_inject(api_key: int) -> bool:
    _, hi = API_VERSIONS[api_key]
    cls = response_class(api_key, hi)
    if cls is None:
        return False
    if api_key in (ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH,
                   ApiKey.TXN_OFFSET_COMMIT, ApiKey.ADD_PARTITIONS_TO_TXN):
        return True
    return "error_code" in cls.__dataclass_fields__


@dataclass
class ErrorRule:
    api: int
    code: int
    remaining: int
    group: str | None = None
    client_id: str | None = None
    broker: int | None = None
    id: int = field(default_factory=lambda: next(_ids))

    def matches(self, api: int, groups: Sequence[str], client_id: str, broker: int) -> bool:
        return (self.api == api and (self.group is None or self.group in groups)
                and (self.client_id is None or self.client_id == client_id)
                and (self.broker is None or self.broker == broker))

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "api": api_name(self.api), "error": error_name(self.code),
                "remaining": self.remaining, "group": self.group, "client_id": self.client_id,
                "broker": self.broker}


@dataclass
class LatencyRule:
    ms: int
    api: int | None = None
    broker: int | None = None
    client_id: str | None = None
    id: int = field(default_factory=lambda: next(_ids))

    def matches(self, api: int, client_id: str, broker: int) -> bool:
        return ((self.api is None or self.api == api)
                and (self.broker is None or self.broker == broker)
                and (self.client_id is None or self.client_id == client_id))

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "ms": self.ms,
                "api": None if self.api is None else api_name(self.api),
                "broker": self.broker, "client_id": self.client_id}


class FaultInjector:
    """The fault rules of one server (module doc)."""

    def __init__(self) -> None:
        self.errors: list[ErrorRule] = []
        self.latencies: list[LatencyRule] = []
        #: Requests answered with an injected error so far.
        self.injected = 0

    @property
    def active(self) -> bool:
        return bool(self.errors or self.latencies)

    def inject_error(self, api: str | int, code: int, count: int = 1, *, group: str | None = None,
                     client_id: str | None = None, broker: int | None = None) -> ErrorRule:
        key = parse_api(api)
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        if code == 0:
            raise ValueError("error code 0 is not an error")
        if not _can_inject(key):
            raise ValueError(f"{api_name(key)} responses have no error code to inject")
        rule = ErrorRule(key, int(code), int(count), group, client_id, broker)
        self.errors.append(rule)
        return rule

    def add_latency(self, ms: int, *, api: str | int | None = None, broker: int | None = None,
                    client_id: str | None = None) -> LatencyRule:
        if ms < 0:
            raise ValueError(f"latency must be at least 0 ms, got {ms}")
        rule = LatencyRule(int(ms), None if api is None else parse_api(api), broker, client_id)
        self.latencies.append(rule)
        return rule

    def clear(self) -> int:
        """Remove every rule; how many there were."""
        n = len(self.errors) + len(self.latencies)
        self.errors.clear()
        self.latencies.clear()
        return n

    def take_error(self, api: int, version: int, body: Any, client_id: str,
                   broker: int) -> Any | None:
        """The response to answer this request with instead of handling it (one use of the
        first matching rule is consumed), or None. A version of the API whose response has no
        error code (old Metadata versions) is handled normally and consumes nothing."""
        if not self.errors:
            return None
        groups = request_groups(body)
        for i, rule in enumerate(self.errors):
            if rule.matches(api, groups, client_id, broker):
                entity = injected_response(api, version, body, rule.code)
                if entity is None:
                    return None
                rule.remaining -= 1
                if rule.remaining <= 0:
                    del self.errors[i]
                self.injected += 1
                return entity
        return None

    def delay_ms(self, api: int, client_id: str, broker: int) -> int:
        """The latency to add to this request: the largest of the matching rules."""
        return max((r.ms for r in self.latencies if r.matches(api, client_id, broker)),
                   default=0)

    def describe(self) -> dict[str, Any]:
        return {"errors": [r.describe() for r in self.errors],
                "latencies": [r.describe() for r in self.latencies], "injected": self.injected}


class FailingAppendLog:
    """A record log whose next ``fail_next`` appends fail with a LogError (and keep nothing, as
    the :class:`~groupcoord.storage.log.RecordLog` contract says of a failed append); everything
    else goes to the log it wraps."""

    def __init__(self, inner: RecordLog) -> None:
        self.inner = inner
        self.fail_next = 0
        self.failed = 0

    @property
    def location(self) -> str:
        return self.inner.location

    def append(self, shard: int, batch: Sequence[Entry], now_ms: int | None = None) -> None:
        if self.fail_next > 0:
            self.fail_next -= 1
            self.failed += 1
            raise LogError(f"{self.inner.location}: append to shard {shard} failed (injected "
                           f"by the groupcoord control plane)")
        self.inner.append(shard, batch, now_ms)

    def read(self, shard: int) -> Iterator[Entry]:
        return self.inner.read(shard)

    def read_with_offsets(self, shard: int) -> Iterator[OffsetEntry]:
        return self.inner.read_with_offsets(shard)

    def shards(self) -> list[int]:
        return self.inner.shards()

    def compact(self, shard: int, now_ms: int, tombstone_retention_ms: int) -> CompactionResult:
        return self.inner.compact(shard, now_ms, tombstone_retention_ms)

    def stats(self) -> LogStats:
        return self.inner.stats()

    def close(self) -> None:
        self.inner.close()
