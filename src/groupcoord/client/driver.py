"""An asyncio driver for the sans-IO KIP-848 consumer member, against any Kafka broker that
speaks ConsumerGroupHeartbeat (``groupcoord serve``, or Apache Kafka 4.x).

:class:`AsyncConsumer` owns a :class:`~groupcoord.client.consumer.ConsumerMember` and does its
IO: it finds the group coordinator (FindCoordinator, key type 0), sends each heartbeat the member
asks for, feeds the answer back (``on_response``) or reports the failure
(``on_request_failed``: a lost connection is re-established with a backoff, and the member sends
a full heartbeat), and sleeps until the member's next deadline or until the application acts.
Time is the event loop's monotonic clock, in milliseconds.

The application sees partitions by topic **name**: the driver maps topic ids (the heartbeat
speaks ids) through Metadata, refreshed when an assignment names a topic id it does not know.
What it offers: :meth:`~AsyncConsumer.subscribe` (names or an RE2 regex),
:meth:`~AsyncConsumer.assignment`, a rebalance listener (:class:`NamedRebalanceListener`, whose
``on_partitions_revoked`` may be ``async``: the revocation completes when it returns, as the Java
consumer runs its callback before acknowledging), :meth:`~AsyncConsumer.commit` and
:meth:`~AsyncConsumer.committed` (OffsetCommit / OffsetFetch carrying the member id and epoch),
:meth:`~AsyncConsumer.close` (revoke, then leave with epoch -1, or -2 for a static member).

Not here: fetching records (any Kafka client's Fetch works beside it) and the client-side
assignor flow (ConsumerGroupPrepareAssignment / InstallAssignment).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from uuid import UUID

from groupcoord.client.connection import BrokerConnection, ConnectionLost, UnsupportedApi
from groupcoord.client.consumer import (
    DEFER,
    ConsumerMember,
    MemberState,
    Partitions,
    RebalanceListener,
)
from groupcoord.coordinator.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
    TopicPartitions,
)
from groupcoord.protocol.client import parse_bootstrap
from groupcoord.protocol.codec import to_ms
from groupcoord.protocol.errors import ErrorCode

__all__ = ["AsyncConsumer", "NamedRebalanceListener", "TopicPartition"]

#: A partition by topic name, as the application sees it.
TopicPartition = tuple[str, int]

_CONSUMER_GROUP_HEARTBEAT = 68
_FIND_COORDINATOR = 10
_METADATA = 3
_OFFSET_COMMIT = 8
_OFFSET_FETCH = 9


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
        out = self.c.listener.on_partitions_revoked(self.c._named(partitions))
        if inspect.isawaitable(out):
            self.c._spawn(self.c._finish_revocation(out))
            return DEFER
        return None

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        self.c._call(self.c.listener.on_partitions_assigned(self.c._named(partitions)))

    def on_partitions_lost(self, partitions: Partitions) -> None:
        self.c._call(self.c.listener.on_partitions_lost(self.c._named(partitions)))


class AsyncConsumer:
    """A KIP-848 group member over the wire (see the module doc). Use as an async context
    manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, bootstrap: str, group_id: str, *,
                 listener: NamedRebalanceListener | None = None,
                 instance_id: str | None = None, rack_id: str | None = None,
                 server_assignor: str | None = None, rebalance_timeout_ms: int = 300_000,
                 request_timeout_ms: int = 30_000, client_id: str = "groupcoord-consumer",
                 member_id: str | None = None,
                 reconnect_backoff_ms: int = 100, reconnect_backoff_max_ms: int = 2_000) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.listener = listener or NamedRebalanceListener()
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self.member = ConsumerMember(
            group_id, member_id=member_id, instance_id=instance_id, rack_id=rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=server_assignor,
            client_id=client_id, request_timeout_ms=request_timeout_ms, listener=_Bridge(self))
        self._conn: BrokerConnection | None = None
        self._names: dict[UUID, str] = {}
        self._ids: dict[str, UUID] = {}
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The last error that stopped the driver (a fatal group error, or an exception).
        self.error: BaseException | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._conn = await self._connect()
        self._task = self._loop.create_task(self._run())

    def _now(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    async def close(self, *, permanent: bool = False, timeout_s: float = 10.0) -> None:
        """Revoke everything (the listener runs), leave the group, close the connection."""
        if self._task is None:
            return
        if self._task.done() is False and self.member.state is not MemberState.FATAL:
            self.member.leave(self._now(), permanent=permanent)
            self._wake.set()
            with contextlib.suppress(asyncio.TimeoutError):
                await self.wait_until(lambda m: m.state in (MemberState.UNJOINED,
                                                            MemberState.FATAL), timeout_s)
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        for t in list(self._tasks):
            t.cancel()
        if self._conn is not None:
            await self._conn.close()
        self._task = None

    # ------------------------------------------------------------------ application API

    def subscribe(self, topics: Iterable[str] | None = None, *, regex: str | None = None) -> None:
        self.member.subscribe(topics, regex=regex, now_ms=self._now())
        self._wake.set()

    def assignment(self) -> set[TopicPartition]:
        """The partitions this member owns (consumes) now."""
        return self._named(self.member.owned)

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def member_epoch(self) -> int:
        return self.member.member_epoch

    async def wait_until(self, predicate: Callable[[ConsumerMember], bool],
                         timeout_s: float) -> None:
        """Wait until ``predicate(member)`` holds (checked after every change); raises
        asyncio.TimeoutError, or the error that stopped the driver."""
        async def waiter() -> None:
            async with self._changed:
                while not predicate(self.member):
                    if self.error is not None:
                        raise self.error
                    await self._changed.wait()
        await asyncio.wait_for(waiter(), timeout_s)

    async def wait_for_assignment(self, timeout_s: float = 30.0) -> set[TopicPartition]:
        """Wait until the member is stable on its target (reconciled) and return what it owns."""
        await self.wait_until(lambda m: m.state is MemberState.STABLE and m.target is not None
                              and m.owned == m.target and m.inflight is None, timeout_s)
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
        conn = await self._connection()
        resp = await conn.call(_OFFSET_COMMIT, 9, group_id=req.group_id,
                               generation_id_or_member_epoch=req.generation_id_or_member_epoch,
                               member_id=req.member_id, group_instance_id=req.group_instance_id,
                               topics=[{"name": t.name, "partitions": [
                                   {"partition_index": p.partition_index,
                                    "committed_offset": p.committed_offset,
                                    "committed_leader_epoch": p.committed_leader_epoch,
                                    "committed_metadata": p.committed_metadata}
                                   for p in t.partitions]} for t in req.topics])
        return {(t.name, int(p.partition_index)): int(p.error_code)
                for t in resp.topics for p in t.partitions if int(p.error_code)}

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The committed offsets of ``partitions`` (-1: none), read with the member's id and
        epoch (OffsetFetch v9) so that a stale member is refused."""
        by_topic: dict[str, list[int]] = {}
        for name, p in partitions:
            by_topic.setdefault(name, []).append(p)
        conn = await self._connection()
        version = conn.version_for(_OFFSET_FETCH, 9, 8)
        values: dict[str, Any] = {"groups": [{
            "group_id": self.member.group_id,
            "topics": [{"name": n, "partition_indexes": ps} for n, ps in by_topic.items()]}]}
        if version >= 9:
            values["groups"][0].update(member_id=self.member.member_id,
                                       member_epoch=self.member.member_epoch)
        resp = await conn.call(_OFFSET_FETCH, version, values, wanted_min=8)
        group = resp.groups[0]
        if int(group.error_code):
            raise RuntimeError(f"OffsetFetch failed: {ErrorCode(int(group.error_code)).name}")
        return {(t.name, int(p.partition_index)): int(p.committed_offset)
                for t in group.topics for p in t.partitions}

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        m = self.member
        try:
            while True:
                now = self._now()
                req = m.poll_request(now)
                if req is not None:
                    assert m.inflight is not None
                    await self._exchange(req, m.inflight.correlation_id)
                    await self._notify()
                    continue
                await self._notify()
                if m.state is MemberState.FATAL:
                    code, msg = m.fatal_error or (-1, None)
                    self.error = RuntimeError(f"fatal group error {_name(code)}: {msg}")
                    await self._notify()
                    return
                d = m.next_deadline()
                self._wake.clear()
                timeout = None if d is None else max(0.0, (d - self._now()) / 1000)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # report it to waiters, then stop
            self.error = e
            await self._notify()
            raise

    async def _exchange(self, req: ConsumerGroupHeartbeatRequest, cid: int) -> None:
        m = self.member
        try:
            conn = await self._connection()
            wire = await asyncio.wait_for(self._send_heartbeat(conn, req),
                                          self.request_timeout_ms / 1000)
        except (TimeoutError, ConnectionLost, OSError):
            m.on_request_failed(self._now(), cid)
            await self._drop_connection()
            return
        resp = _heartbeat_response(wire)
        a = resp.assignment
        if a is not None and any(tp.topic_id not in self._names for tp in a.topic_partitions):
            with contextlib.suppress(ConnectionLost, OSError, asyncio.TimeoutError):
                await asyncio.wait_for(self._refresh_metadata(), self.request_timeout_ms / 1000)
        m.on_response(resp, self._now(), cid)

    def _send_heartbeat(self, conn: BrokerConnection,
                        req: ConsumerGroupHeartbeatRequest) -> Any:
        # v1 (client-generated member ids, regex) when offered; v0 otherwise.
        version = conn.version_for(_CONSUMER_GROUP_HEARTBEAT, 1)
        if version == 0 and req.subscribed_topic_regex is not None:
            raise UnsupportedApi("the broker has ConsumerGroupHeartbeat v0 only (no regex)")
        from groupcoord.protocol.codec import build, request_class
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
        return conn.send(build(cls, values))

    async def _connection(self) -> BrokerConnection:
        backoff = self.reconnect_backoff_ms
        while self._conn is None or self._conn.closed:
            try:
                self._conn = await self._connect()
            except (TimeoutError, ConnectionLost, OSError, RuntimeError):
                await asyncio.sleep(backoff / 1000)
                backoff = min(backoff * 2, self.reconnect_backoff_max_ms)
        return self._conn

    async def _drop_connection(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def _connect(self) -> BrokerConnection:
        """Bootstrap, then the group's coordinator (FindCoordinator key type 0)."""
        host, port = self.bootstrap
        boot: BrokerConnection | None = await BrokerConnection.open(
            host, port, client_id=self.client_id)
        assert boot is not None
        try:
            version = boot.version_for(_FIND_COORDINATOR, 4, 0)
            if version >= 4:
                resp = await boot.call(_FIND_COORDINATOR, version, key_type=0,
                                       coordinator_keys=[self.member.group_id])
                c = resp.coordinators[0]
                code, chost, cport = int(c.error_code), c.host, int(c.port)
            else:
                resp = await boot.call(_FIND_COORDINATOR, version, key=self.member.group_id)
                code, chost, cport = int(resp.error_code), resp.host, int(resp.port)
            if code:
                raise RuntimeError(f"FindCoordinator: {_name(code)}")
            if (chost, cport) == (host, port):
                conn, boot = boot, None
            else:
                conn = await BrokerConnection.open(chost, cport, client_id=self.client_id)
        finally:
            if boot is not None:
                await boot.close()
        self._conn = conn
        await self._refresh_metadata()
        return conn

    async def _refresh_metadata(self) -> None:
        conn = self._conn
        assert conn is not None
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

    def _spawn(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _call(self, out: Any) -> None:
        if inspect.isawaitable(out):
            self._spawn(out)

    async def _finish_revocation(self, awaitable: Any) -> None:
        try:
            await awaitable
        finally:
            self.member.complete_revocation(self._now())
            self._wake.set()
            await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _heartbeat_response(wire: Any) -> ConsumerGroupHeartbeatResponse:
    a = wire.assignment
    return ConsumerGroupHeartbeatResponse(
        error_code=int(wire.error_code), error_message=wire.error_message,
        member_id=wire.member_id, member_epoch=int(wire.member_epoch),
        heartbeat_interval_ms=to_ms(wire.heartbeat_interval),
        assignment=None if a is None else HeartbeatAssignment(tuple(
            TopicPartitions(tp.topic_id, tuple(int(p) for p in tp.partitions))
            for tp in a.topic_partitions)))
