"""An asyncio driver for the sans-IO KIP-848 consumer member, against any Kafka broker that
speaks ConsumerGroupHeartbeat (``groupcoord serve``, or Apache Kafka 4.x).

:class:`AsyncConsumer` owns a :class:`~groupcoord.client.consumer.ConsumerMember` and does its
IO: it finds the group coordinator (FindCoordinator, key type 0), sends each heartbeat the member
asks for, feeds the answer back (``on_response``) or reports the failure
(``on_request_failed``: a lost connection is re-established with a backoff, and the member sends
a full heartbeat), and sleeps until the member's next deadline or until the application acts.
Time is the event loop's monotonic clock, in milliseconds. The loop, the connection and the
coordinator lookup are :class:`~groupcoord.client.member_driver.MemberDriver`'s, shared with the
Connect worker's driver (``client/connect/async_worker.py``); this module adds the consumer's
wire mapping (ConsumerGroupHeartbeat v0/v1), topic names and offsets. A consumer given
``local_assignors`` sends them as the heartbeat's ClientAssignors tagged field and, when chosen,
its ConsumerGroupPrepareAssignment (1000) and ConsumerGroupInstallAssignment (1001) over the same
connection (docs/wire.md "Tagged fields on ConsumerGroupHeartbeat").

The application sees partitions by topic **name**: the driver maps topic ids (the heartbeat
speaks ids) through Metadata, refreshed when an assignment names a topic id it does not know.
What it offers: :meth:`~AsyncConsumer.subscribe` (names or an RE2 regex),
:meth:`~AsyncConsumer.assignment`, a rebalance listener (:class:`NamedRebalanceListener`, whose
``on_partitions_revoked`` may be ``async``: the revocation completes when it returns, as the Java
consumer runs its callback before acknowledging), :meth:`~AsyncConsumer.commit` and
:meth:`~AsyncConsumer.committed` (OffsetCommit / OffsetFetch carrying the member id and epoch),
:meth:`~AsyncConsumer.close` (revoke, then leave with epoch -1, or -2 for a static member).

Heartbeats run on the application's event loop (see ``member_driver.py``): blocking it for
longer than the session timeout (``group.consumer.session.timeout.ms``, 45 s by default) costs
the membership.

Not here: fetching records (any Kafka client's Fetch works beside it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from groupcoord.client.assignors import ClientSideAssignor
from groupcoord.client.connection import BrokerConnection, ConnectionLost, UnsupportedApi
from groupcoord.client.consumer import ConsumerMember, Partitions, RebalanceListener
from groupcoord.client.member_driver import (
    COORDINATOR_MOVED_ERRORS,
    DEFAULT_CLOSE_TIMEOUT_MS,
    MemberDriver,
)
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    HeartbeatAssignment,
    PreparedAssignor,
    PreparedMember,
    PreparedTopic,
    TopicPartitions,
)
from groupcoord.protocol.codec import build, request_class, to_ms
from groupcoord.protocol.errors import ErrorCode

__all__ = ["AsyncConsumer", "NamedRebalanceListener", "TopicPartition"]

#: A partition by topic name, as the application sees it.
TopicPartition = tuple[str, int]

_CONSUMER_GROUP_HEARTBEAT = 68
_METADATA = 3
_OFFSET_COMMIT = 8
_OFFSET_FETCH = 9
_PREPARE_ASSIGNMENT = 1000
_INSTALL_ASSIGNMENT = 1001


class NamedRebalanceListener:
    """Rebalance callbacks with partitions by topic name. Every method is optional and may be a
    coroutine function; the revocation is acknowledged once ``on_partitions_revoked`` returns."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> Any:
        return None


class _Bridge(RebalanceListener):
    """Runs the application's listener for the member: names for ids; async callbacks become
    tasks (a revocation is deferred until its task finishes)."""

    def __init__(self, consumer: AsyncConsumer) -> None:
        self.c = consumer

    def on_partitions_revoked(self, partitions: Partitions) -> object:
        return self.c._revocation(
            self.c.listener.on_partitions_revoked(self.c._named(partitions)))

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        self.c._call(self.c.listener.on_partitions_assigned(self.c._named(partitions)))

    def on_partitions_lost(self, partitions: Partitions) -> None:
        self.c._call(self.c.listener.on_partitions_lost(self.c._named(partitions)))


class AsyncConsumer(MemberDriver[ConsumerMember]):
    """A KIP-848 group member over the wire (see the module doc). Use as an async context
    manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, bootstrap: str, group_id: str, *,
                 listener: NamedRebalanceListener | None = None,
                 instance_id: str | None = None, rack_id: str | None = None,
                 server_assignor: str | None = None, rebalance_timeout_ms: int = 300_000,
                 request_timeout_ms: int = 30_000, client_id: str = "groupcoord-consumer",
                 member_id: str | None = None,
                 reconnect_backoff_ms: int = 100, reconnect_backoff_max_ms: int = 2_000,
                 close_timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS,
                 local_assignors: Sequence[ClientSideAssignor] = ()) -> None:
        member = ConsumerMember(
            group_id, member_id=member_id, instance_id=instance_id, rack_id=rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=server_assignor,
            client_id=client_id, request_timeout_ms=request_timeout_ms, listener=_Bridge(self),
            local_assignors=local_assignors)
        super().__init__(bootstrap, member, client_id=client_id,
                         request_timeout_ms=request_timeout_ms,
                         reconnect_backoff_ms=reconnect_backoff_ms,
                         reconnect_backoff_max_ms=reconnect_backoff_max_ms,
                         close_timeout_ms=close_timeout_ms)
        self.listener = listener or NamedRebalanceListener()
        self._names: dict[UUID, str] = {}
        self._ids: dict[str, UUID] = {}

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    # ------------------------------------------------------------------ application API

    def subscribe(self, topics: Iterable[str] | None = None, *, regex: str | None = None) -> None:
        self.member.subscribe(topics, regex=regex, now_ms=self._now())
        self.wake()

    def assignment(self) -> set[TopicPartition]:
        """The partitions this member owns (consumes) now."""
        return self._named(self.member.owned)

    async def wait_for_assignment(self, timeout_s: float = 30.0) -> set[TopicPartition]:
        """Wait until the member is stable on its target (reconciled) and return what it owns."""
        await self.wait_until(lambda m: self.reconciled(), timeout_s)
        return self.assignment()

    async def commit(self, offsets: Mapping[TopicPartition, int],
                     metadata: str = "") -> dict[TopicPartition, int]:
        """Commit positions of owned partitions (others are skipped); the per-partition error
        codes that are not zero."""
        by_id: dict[tuple[UUID, int], int] = {}
        for (name, p), off in offsets.items():
            tid = self._ids.get(name)
            if tid is not None:
                by_id[(tid, p)] = off
        req = self.member.commit_request(by_id, self._names, metadata)
        if req is None:
            return {}
        async with self._admin_call() as conn:
            resp = await conn.call(_OFFSET_COMMIT, 9, group_id=req.group_id,
                generation_id_or_member_epoch=req.generation_id_or_member_epoch,
                member_id=req.member_id, group_instance_id=req.group_instance_id,
                topics=[{"name": t.name, "partitions": [
                    {"partition_index": p.partition_index,
                     "committed_offset": p.committed_offset,
                     "committed_leader_epoch": p.committed_leader_epoch,
                     "committed_metadata": p.committed_metadata}
                    for p in t.partitions]} for t in req.topics])
            errors = {(t.name, int(p.partition_index)): int(p.error_code)
                      for t in resp.topics for p in t.partitions if int(p.error_code)}
            if any(c in COORDINATOR_MOVED_ERRORS for c in errors.values()):
                await self._drop_connection(conn)
        return errors

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The committed offsets of ``partitions`` (-1: none), read with the member's id and
        epoch (OffsetFetch v9) so that a stale member is refused."""
        by_topic: dict[str, list[int]] = {}
        for name, p in partitions:
            by_topic.setdefault(name, []).append(p)
        async with self._admin_call() as conn:
            version = conn.version_for(_OFFSET_FETCH, 9, 8)
            values: dict[str, Any] = {"groups": [{
                "group_id": self.member.group_id,
                "topics": [{"name": n, "partition_indexes": ps} for n, ps in by_topic.items()]}]}
            if version >= 9:
                values["groups"][0].update(member_id=self.member.member_id,
                                           member_epoch=self.member.member_epoch)
            resp = await conn.call(_OFFSET_FETCH, version, values, wanted_min=8)
            group = resp.groups[0]
            if int(group.error_code) in COORDINATOR_MOVED_ERRORS:
                await self._drop_connection(conn)
        if int(group.error_code):
            raise RuntimeError(f"OffsetFetch failed: {ErrorCode(int(group.error_code)).name}")
        return {(t.name, int(p.partition_index)): int(p.committed_offset)
                for t in group.topics for p in t.partitions}

    @contextlib.asynccontextmanager
    async def _admin_call(self) -> AsyncIterator[BrokerConnection]:
        """The coordinator connection for one application request (commit, committed),
        bounded by the request timeout: a connection that fails or times out is dropped (the
        next request looks the coordinator up again) and the error raised (TimeoutError,
        ConnectionLost)."""
        conn: BrokerConnection | None = None
        try:
            async with asyncio.timeout(self.request_timeout_ms / 1000):
                conn = await self._connection()
                yield conn
        except (TimeoutError, ConnectionLost, OSError):
            await self._drop_connection(conn)
            raise

    # ------------------------------------------------------------------ the wire

    async def _request(self, conn: BrokerConnection, req: Any) -> Any:
        if isinstance(req, ConsumerGroupPrepareAssignmentRequest):
            return _prepare_response(await conn.call(
                _PREPARE_ASSIGNMENT, 0, group_id=req.group_id, member_id=req.member_id,
                member_epoch=req.member_epoch))
        if isinstance(req, ConsumerGroupInstallAssignmentRequest):
            w = await conn.call(_INSTALL_ASSIGNMENT, 0, _install_values(req))
            return ConsumerGroupInstallAssignmentResponse(int(w.error_code), w.error_message)
        resp = _heartbeat_response(await self._send_heartbeat(conn, req))
        a = resp.assignment
        if a is not None and any(tp.topic_id not in self._names for tp in a.topic_partitions):
            with contextlib.suppress(ConnectionLost, OSError, TimeoutError):
                async with asyncio.timeout(self.request_timeout_ms / 1000):
                    await self._refresh_metadata(conn)
        return resp

    async def _on_connected(self, conn: BrokerConnection) -> None:
        if self.member.local_assignors and not conn.supports(_PREPARE_ASSIGNMENT, 0):
            raise UnsupportedApi("the broker does not offer ConsumerGroupPrepareAssignment (API "
                                 "1000): client-side assignors need groupcoord serve")
        await self._refresh_metadata(conn)

    def _send_heartbeat(self, conn: BrokerConnection,
                        req: ConsumerGroupHeartbeatRequest) -> Any:
        # v1 (client-generated member ids, regex) when offered; v0 otherwise.
        version = conn.version_for(_CONSUMER_GROUP_HEARTBEAT, 1)
        if version == 0 and req.subscribed_topic_regex is not None:
            raise UnsupportedApi("the broker has ConsumerGroupHeartbeat v0 only (no regex)")
        cls = request_class(_CONSUMER_GROUP_HEARTBEAT, version)
        assert cls is not None
        values: dict[str, Any] = {
            "group_id": req.group_id,
            "member_id": req.member_id if version >= 1 or req.member_epoch != 0 else "",
            "member_epoch": req.member_epoch, "instance_id": req.instance_id,
            "rack_id": req.rack_id, "rebalance_timeout": req.rebalance_timeout_ms,
            "subscribed_topic_names": None if req.subscribed_topic_names is None
            else list(req.subscribed_topic_names),
            "server_assignor": req.server_assignor,
            "topic_partitions": None if req.topic_partitions is None else [
                {"topic_id": tp.topic_id, "partitions": list(tp.partitions)}
                for tp in req.topic_partitions]}
        if version >= 1:
            values["subscribed_topic_regex"] = req.subscribed_topic_regex
        if req.client_assignors is not None:  # groupcoord's tagged field (docs/wire.md)
            values["client_assignors"] = [
                {"name": a.name, "minimum_version": a.minimum_version,
                 "maximum_version": a.maximum_version, "reason": a.reason,
                 "version": a.version, "metadata": bytes(a.metadata)}
                for a in req.client_assignors]
        return conn.send(build(cls, values))

    async def _refresh_metadata(self, conn: BrokerConnection) -> None:
        version = conn.version_for(_METADATA, 12, 10)
        resp = await conn.call(_METADATA, version, topics=None,
                               allow_auto_topic_creation=False)
        for t in resp.topics:
            if t.name is not None and t.topic_id is not None and int(t.topic_id.int):
                self._names[t.topic_id] = t.name
                self._ids[t.name] = t.topic_id

    # ------------------------------------------------------------------ helpers

    def _named(self, parts: Partitions) -> set[TopicPartition]:
        return {(self._names.get(t, str(t)), p) for t, p in parts}


def _heartbeat_response(wire: Any) -> ConsumerGroupHeartbeatResponse:
    a = wire.assignment
    return ConsumerGroupHeartbeatResponse(
        error_code=int(wire.error_code), error_message=wire.error_message,
        member_id=wire.member_id, member_epoch=int(wire.member_epoch),
        heartbeat_interval_ms=to_ms(wire.heartbeat_interval),
        assignment=None if a is None else HeartbeatAssignment(_tps(a.topic_partitions)),
        should_compute_assignment=bool(getattr(wire, "should_compute_assignment", False)))


def _tps(wire: Iterable[Any]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(tp.topic_id, tuple(int(p) for p in tp.partitions))
                 for tp in wire)


def _prepare_response(w: Any) -> ConsumerGroupPrepareAssignmentResponse:
    """A ConsumerGroupPrepareAssignment v0 response (API 1000) -> the member's dataclass."""
    return ConsumerGroupPrepareAssignmentResponse(
        error_code=int(w.error_code), error_message=w.error_message,
        group_epoch=int(w.group_epoch), assignor_name=w.assignor_name,
        members=tuple(PreparedMember(
            m.member_id, int(m.member_epoch), m.instance_id, m.rack_id,
            tuple(m.subscribed_topic_ids),
            PreparedAssignor(int(m.assignor.reason), int(m.assignor.metadata_version),
                             bytes(m.assignor.metadata_bytes)),
            _tps(m.topic_partitions)) for m in w.members),
        topics=tuple(PreparedTopic(t.topic_id, t.topic_name, int(t.num_partitions))
                     for t in w.topics))


def _install_values(req: ConsumerGroupInstallAssignmentRequest) -> dict[str, Any]:
    """The plain values of a ConsumerGroupInstallAssignment v0 request (API 1001)."""
    return {"group_id": req.group_id, "member_id": req.member_id,
            "member_epoch": req.member_epoch, "group_epoch": req.group_epoch, "error": req.error,
            "members": [{"member_id": m.member_id,
                         "topic_partitions": [{"topic_id": tp.topic_id,
                                               "partitions": list(tp.partitions)}
                                              for tp in m.topic_partitions],
                         "metadata_version": m.metadata_version,
                         "metadata_bytes": bytes(m.metadata_bytes)} for m in req.members]}
