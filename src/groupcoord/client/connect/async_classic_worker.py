"""An asyncio driver for the classic-protocol Connect worker: a Kafka Connect worker of a classic
group (protocol type ``connect``, KIP-415) over the wire.

:class:`AsyncClassicConnectWorker` owns a :class:`~.classic_worker.ClassicConnectWorker` (sans-IO)
and runs it with the loop of :class:`~groupcoord.client.member_driver.SansIODriver` (coordinator
lookup, reconnection, deadlines, leaving on close). What it adds:

- **The wire mapping** of the worker's requests (``coordinator/classic/messages.py``
  dataclasses) to JoinGroup v9, SyncGroup v5, Heartbeat v4 and LeaveGroup v5 (the versions the
  worker asks for, capped by what the broker offers) and of the answers back
  (:func:`classic_request_values`, :func:`classic_response_from_wire`). The worker has one
  request in flight; an answer to a request it has given up on (timed out, replaced) is dropped.
- **Late answers**: the broker parks a JoinGroup until the join phase ends and a follower's
  SyncGroup until the leader's, so those two are given ``rebalance.timeout.ms`` plus
  :data:`JOIN_TIMEOUT_MARGIN_MS` (the Java client waits the rebalance timeout plus 5 s for a
  JoinGroup; the worker's own timeout of a JoinGroup is the same), not the request timeout.
- **The config topic**. There is no Kafka config topic here, so the worker's
  :class:`~.classic_worker.ConfigStore` is :class:`CoordinatorConfigStore`: the connectors and
  task counts the coordinator keeps for connect groups (ConnectGroupConfig, API 1005, i.e.
  ``groupcoord connectors``), read with ConnectGroupDescribe (1006), its ``config_offset`` as the
  config offset. A classic group has no such configuration and an id holds one group, so the
  configuration of a classic Connect cluster lives in a *config group*: a connect group that only
  holds configuration, by default ``{group}-configs`` (:func:`default_config_group`, after
  Connect's ``config.storage.topic``). Once the worker's own group is a connect group (the
  online upgrade of ``coordinator/modern/connect/migration.py`` converted it when a new-protocol worker
  joined) the store reads that group's configuration instead: the coordinator derives it from
  what the classic workers run at the config offset they reported, so the offsets carry on, and
  later changes go to the group the new-protocol workers read too (after a downgrade back to a
classic group the store returns to the config group, which has not seen changes made on the
connect group meanwhile: declare them there too). The driver reads it on every
  (re)connection before anything else (so the first JoinGroup carries a real offset), every
  ``config_poll_ms``, and at once when the worker asks to read to the end (a CONFIG_MISMATCH);
  a change wakes the worker, which rejoins when its connectors or tasks changed.
- **The listener** (e.g. the plugin runtime :class:`~.runtime.ConnectRuntime`) may return
  awaitables, run as tasks; a revocation completes when its awaitable ends
  (:class:`~.async_worker.ListenerBridge`). A runtime without a worker id gets the client id.

Not here: reading a real config topic, session keys of ``sessioned`` (KIP-507), REST, several
coordinators. ``read_to_end`` cannot block in a sans-IO member: it returns the latest snapshot
read and asks the driver for a fresh one; a leader still behind answers CONFIG_MISMATCH again
and the round repeats once the read has landed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from groupcoord.client.connect.assignors import DEFAULT_MAX_DELAY_MS, ConnectAssignor
from groupcoord.client.connect.async_worker import ListenerBridge, worker_listener
from groupcoord.client.connect.classic_worker import ClassicConnectWorker, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import ConnectRebalanceListener
from groupcoord.client.connection import BrokerConnection, ConnectionLost, UnsupportedApi
from groupcoord.client.member_driver import DEFAULT_CLOSE_TIMEOUT_MS, SansIODriver
from groupcoord.coordinator.classic import messages as cm
from groupcoord.protocol.connect_protocol import ConnectorsAndTasks, default_config_group
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey

__all__ = [
    "JOIN_TIMEOUT_MARGIN_MS",
    "AsyncClassicConnectWorker",
    "CoordinatorConfigStore",
    "classic_request_values",
    "classic_response_from_wire",
    "default_config_group",
]

#: Added to the rebalance timeout for the JoinGroup / SyncGroup the broker answers late.
JOIN_TIMEOUT_MARGIN_MS = 5_000

#: The configuration before any was read (upstream: an empty config topic, offset -1).
NO_CONFIG = ConfigSnapshot(-1)


# ----------------------------------------------------------------------------- wire mapping


def classic_request_values(req: Any) -> tuple[int, int, dict[str, Any]]:
    """A classic worker request -> (API key, the version it asks for, plain wire values)."""
    if isinstance(req, cm.JoinGroupRequest):
        return ApiKey.JOIN_GROUP, req.version, {
            "group_id": req.group_id, "session_timeout": req.session_timeout_ms,
            "rebalance_timeout": req.rebalance_timeout_ms, "member_id": req.member_id,
            "group_instance_id": req.group_instance_id, "protocol_type": req.protocol_type,
            "protocols": [{"name": p.name, "metadata": bytes(p.metadata)} for p in req.protocols],
            "reason": req.reason}
    if isinstance(req, cm.SyncGroupRequest):
        return ApiKey.SYNC_GROUP, req.version, {
            "group_id": req.group_id, "generation_id": req.generation_id,
            "member_id": req.member_id, "group_instance_id": req.group_instance_id,
            "protocol_type": req.protocol_type, "protocol_name": req.protocol_name,
            "assignments": [{"member_id": a.member_id, "assignment": bytes(a.assignment)}
                            for a in req.assignments]}
    if isinstance(req, cm.HeartbeatRequest):
        return ApiKey.HEARTBEAT, req.version, {
            "group_id": req.group_id, "generation_id": req.generation_id,
            "member_id": req.member_id, "group_instance_id": req.group_instance_id}
    if isinstance(req, cm.LeaveGroupRequest):
        return ApiKey.LEAVE_GROUP, req.version, {
            "group_id": req.group_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "reason": m.reason} for m in req.members]}
    raise TypeError(f"not a classic Connect worker request: {req!r}")


def classic_response_from_wire(req: Any, w: Any) -> Any:
    """The wire answer ``w`` to ``req`` -> the worker's response dataclass."""
    if isinstance(req, cm.JoinGroupRequest):
        return cm.JoinGroupResponse(
            error_code=int(w.error_code), generation_id=int(w.generation_id),
            protocol_type=w.protocol_type, protocol_name=w.protocol_name, leader=w.leader,
            skip_assignment=bool(getattr(w, "skip_assignment", False)), member_id=w.member_id,
            members=tuple(cm.JoinGroupResponseMember(m.member_id, m.group_instance_id,
                                                     bytes(m.metadata)) for m in w.members))
    if isinstance(req, cm.SyncGroupRequest):
        return cm.SyncGroupResponse(
            error_code=int(w.error_code), protocol_type=getattr(w, "protocol_type", None),
            protocol_name=getattr(w, "protocol_name", None), assignment=bytes(w.assignment))
    if isinstance(req, cm.HeartbeatRequest):
        return cm.HeartbeatResponse(error_code=int(w.error_code))
    if isinstance(req, cm.LeaveGroupRequest):
        return cm.LeaveGroupResponse(
            error_code=int(w.error_code),
            members=tuple(cm.LeaveGroupMemberResponse(m.member_id, m.group_instance_id,
                                                      int(m.error_code)) for m in w.members))
    raise TypeError(f"not a classic Connect worker request: {req!r}")


# ----------------------------------------------------------------------------- the config


class CoordinatorConfigStore:
    """The worker's config view, read from the coordinator (see the module doc). Sans-IO: the
    driver feeds it with :meth:`update`; :meth:`read_to_end` asks the driver for a fresh read."""

    def __init__(self, on_read_to_end: Callable[[], None] | None = None) -> None:
        self._snapshot = NO_CONFIG
        #: The group the snapshot was read from (None: nothing read yet, or nothing configured).
        self.source: str | None = None
        self.on_read_to_end = on_read_to_end
        self.reads = 0

    def snapshot(self) -> ConfigSnapshot:
        return self._snapshot

    def read_to_end(self) -> ConfigSnapshot:
        if self.on_read_to_end is not None:
            self.on_read_to_end()
        return self._snapshot

    def update(self, snapshot: ConfigSnapshot, source: str | None) -> bool:
        """Take a fresh read; True if the configuration or its offset changed."""
        self.reads += 1
        self.source = source
        if snapshot == self._snapshot:
            return False
        self._snapshot = snapshot
        return True


def config_from_describe(groups: Any, group_id: str, config_group: str
                         ) -> tuple[ConfigSnapshot, str | None]:
    """The configuration a ConnectGroupDescribe of ``[group_id, config_group]`` gives: the
    worker's group's if it is a connect group, else the config group's, else none."""
    by_id = {g.group_id: g for g in groups}
    for gid in (group_id, config_group):
        g = by_id.get(gid)
        if g is not None and int(g.error_code) == ErrorCode.none:
            return (ConfigSnapshot(int(g.config_offset),
                                   {c.name: int(c.task_count) for c in g.connectors}), gid)
    return NO_CONFIG, None


# ----------------------------------------------------------------------------- the driver


class AsyncClassicConnectWorker(SansIODriver[ClassicConnectWorker]):
    """A Connect worker of a classic group over the wire (see the module doc). It joins the group
    when started; use as an async context manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, bootstrap: str, group_id: str, *, url: str = "",
                 protocol: str = "sessioned",
                 listener: ConnectRebalanceListener | None = None,
                 config_group: str | None = None, config_poll_ms: int = 500,
                 max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
                 assignors: Sequence[str | ConnectAssignor] | None = None,
                 session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 60_000,
                 heartbeat_interval_ms: int = 3_000, request_timeout_ms: int = 40_000,
                 client_id: str = "connect-worker",
                 reconnect_backoff_ms: int = 100, reconnect_backoff_max_ms: int = 2_000,
                 close_timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS) -> None:
        self.config_group = config_group or default_config_group(group_id)
        self.config_poll_ms = config_poll_ms
        self.config = CoordinatorConfigStore(self._want_config)
        worker = ClassicConnectWorker(
            group_id, url, self.config, protocol=protocol, listener=ListenerBridge(self),
            client_id=client_id, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms, request_timeout_ms=request_timeout_ms,
            max_delay_ms=max_delay_ms, assignors=assignors)
        super().__init__(bootstrap, worker, client_id=client_id,
                         request_timeout_ms=request_timeout_ms,
                         reconnect_backoff_ms=reconnect_backoff_ms,
                         reconnect_backoff_max_ms=reconnect_backoff_max_ms,
                         close_timeout_ms=close_timeout_ms)
        self.listener = worker_listener(listener, client_id)
        self._current: Any = None  # the request the worker waits an answer for
        self._config_wanted = asyncio.Event()

    async def __aenter__(self) -> AsyncClassicConnectWorker:
        await self.start()
        return self

    # ------------------------------------------------------------------ application API

    def running(self) -> ConnectorsAndTasks:
        """The connectors and tasks this worker runs now."""
        return self.member.running

    def stable(self) -> bool:
        """In a generation (heartbeating), not joining or syncing."""
        return self.member.state is WorkerState.STABLE

    async def refresh_config(self) -> bool:
        """Read the configuration now; True if it changed."""
        return await self._fetch_config(await self._connection())

    # ------------------------------------------------------------------ driver hooks

    def _before_start(self) -> None:
        self.member.start(self._now())
        self._spawn(self._poll_config())

    async def _on_connected(self, conn: BrokerConnection) -> None:
        for key in (ApiKey.JOIN_GROUP, ApiKey.CONNECT_GROUP_DESCRIBE):
            if not conn.supports(key, 0):
                raise UnsupportedApi(f"the broker does not offer API {key}: classic Connect "
                                     "workers read their configuration from groupcoord serve")
        await self._fetch_config(conn)

    def _timeout_ms(self, req: Any) -> int:
        if isinstance(req, cm.JoinGroupRequest | cm.SyncGroupRequest):
            return max(self.request_timeout_ms,
                       self.member.rebalance_timeout_ms + JOIN_TIMEOUT_MARGIN_MS)
        return self.request_timeout_ms

    async def _request(self, conn: BrokerConnection, req: Any) -> Any:
        key, version, values = classic_request_values(req)
        w = await conn.call(key, version, values)
        return classic_response_from_wire(req, w)

    def _correlation_id(self, req: Any) -> int:
        self._current = req
        return 0

    def _is_leave(self, req: Any) -> bool:
        return isinstance(req, cm.LeaveGroupRequest)

    def _deliver(self, req: Any, resp: Any, cid: int) -> None:
        if req is self._current:  # else the worker gave it up and sent another
            self._current = None
            self.member.on_response(resp, self._now())

    def _failed(self, req: Any, cid: int) -> None:
        if req is self._current:
            self._current = None
            self.member.on_request_failed(self._now())

    def _fatal_message(self) -> str | None:
        m = self.member
        return None if m.state is not WorkerState.FATAL else (m.fatal_error or "unknown")

    def _begin_leave(self, permanent: bool) -> None:
        self.member.leave(self._now())

    def _has_left(self) -> bool:
        return self.member.state in (WorkerState.UNJOINED, WorkerState.FATAL)

    # ------------------------------------------------------------------ the configuration

    def _want_config(self) -> None:
        self._config_wanted.set()

    async def _fetch_config(self, conn: BrokerConnection) -> bool:
        g = self.member.group_id
        resp = await conn.call(ApiKey.CONNECT_GROUP_DESCRIBE, 0, group_ids=[g, self.config_group])
        snapshot, source = config_from_describe(resp.groups, g, self.config_group)
        changed = self.config.update(snapshot, source)
        if changed:
            self.wake()
        return changed

    async def _poll_config(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config_poll_ms / 1000):
                    await self._config_wanted.wait()
            self._config_wanted.clear()
            try:
                conn = await self._connection()
                async with asyncio.timeout(self.request_timeout_ms / 1000):
                    await self._fetch_config(conn)
            except (TimeoutError, ConnectionLost, OSError):
                continue  # the next poll tries again (the member's requests reconnect)
