"""An asyncio driver for the sans-IO Connect worker: a worker of a ``connect`` group over the wire.

:class:`AsyncConnectWorker` owns a :class:`~.worker.ConnectWorker` and runs it with the loop of
:class:`~groupcoord.client.member_driver.MemberDriver` (coordinator lookup, reconnection,
pipelined requests, deadlines, leaving on :meth:`~.MemberDriver.close`). What it adds is the
wire mapping of the worker's requests (``coordinator/modern/connect/messages.py`` dataclasses) to the
extension APIs of ``docs/wire.md`` and of their responses back:

- ConnectGroupHeartbeat (API 1002 v0), ConnectGroupPrepareAssignment (1003 v0) and
  ConnectGroupInstallAssignment (1004 v0): the worker can owe a Prepare or an Install beside
  its heartbeat; the driver sends them at once on the same connection (answers come in order);
- the worker's listener (:class:`~.listener.ConnectRebalanceListener`, e.g. the plugin runtime
  :class:`~.runtime.ConnectRuntime`) may return an awaitable from any callback: it runs as a
  task, and a revocation is acknowledged only once its awaitable finished. A runtime without a
  worker id is given the worker's member id.

It also offers the admin side a worker process needs for tests and tools:
:meth:`AsyncConnectWorker.describe` (ConnectGroupDescribe, 1006).

Not here: connector configuration changes (``groupcoord connectors``, or
:class:`~groupcoord.protocol.client.KafkaClient.connect_group_config`), REST, and the classic
(JoinGroup/SyncGroup) Connect protocol (its driver is ``async_classic_worker.py``, which shares
:class:`ListenerBridge`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from groupcoord.client.connect.assignors import DEFAULT_MAX_DELAY_MS, ConnectAssignor
from groupcoord.client.connect.listener import Connectors, ConnectRebalanceListener, Tasks
from groupcoord.client.connect.runtime import ConnectRuntime
from groupcoord.client.connect.worker import ConnectWorker
from groupcoord.client.connection import BrokerConnection, UnsupportedApi
from groupcoord.client.member_driver import DEFAULT_CLOSE_TIMEOUT_MS, MemberDriver
from groupcoord.coordinator.modern.connect import messages as cm
from groupcoord.protocol.connect_protocol import ConnectorsAndTasks
from groupcoord.protocol.versions import ApiKey

__all__ = ["AsyncConnectWorker", "ListenerBridge", "request_values", "response_from_wire"]


# ----------------------------------------------------------------------------- wire mapping


def _cat_values(c: cm.ConnectorsAndTasks) -> dict[str, Any]:
    return {"connectors": list(c.connectors),
            "tasks": [{"connector": t.connector, "task": t.task} for t in c.tasks]}


def _cat(w: Any) -> cm.ConnectorsAndTasks:
    return cm.ConnectorsAndTasks(tuple(w.connectors), tuple(
        cm.ConnectorTaskId(t.connector, int(t.task)) for t in w.tasks))


def request_values(req: Any) -> tuple[int, dict[str, Any]]:
    """A worker request -> (API key, the plain values of its v0 wire entity)."""
    if isinstance(req, cm.ConnectGroupHeartbeatRequest):
        return ApiKey.CONNECT_GROUP_HEARTBEAT, {
            "group_id": req.group_id, "member_id": req.member_id,
            "member_epoch": req.member_epoch, "instance_id": req.instance_id,
            "rebalance_timeout_ms": req.rebalance_timeout_ms,
            "server_assignor": req.server_assignor,
            "client_assignors": None if req.client_assignors is None else [
                {"name": a.name, "minimum_version": a.minimum_version,
                 "maximum_version": a.maximum_version, "reason": a.reason,
                 "version": a.version, "metadata": bytes(a.metadata)}
                for a in req.client_assignors],
            "connectors_and_tasks": None if req.connectors_and_tasks is None
            else _cat_values(req.connectors_and_tasks),
            "url": req.url}
    if isinstance(req, cm.ConnectGroupPrepareAssignmentRequest):
        return ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT, {
            "group_id": req.group_id, "member_id": req.member_id,
            "member_epoch": req.member_epoch}
    if isinstance(req, cm.ConnectGroupInstallAssignmentRequest):
        return ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT, {
            "group_id": req.group_id, "member_id": req.member_id,
            "member_epoch": req.member_epoch, "group_epoch": req.group_epoch,
            "error": req.error,
            "members": [{"member_id": m.member_id,
                         "connectors_and_tasks": _cat_values(m.connectors_and_tasks),
                         "error": m.error, "metadata_version": m.metadata_version,
                         "metadata_bytes": bytes(m.metadata_bytes)} for m in req.members],
            "scheduled_rebalance_delay_ms": req.scheduled_rebalance_delay_ms}
    raise TypeError(f"not a Connect worker request: {req!r}")


def response_from_wire(api_key: int, w: Any) -> Any:
    """A v0 wire response of a worker API -> the worker's response dataclass."""
    if api_key == ApiKey.CONNECT_GROUP_HEARTBEAT:
        a = w.assignment
        return cm.ConnectGroupHeartbeatResponse(
            error_code=int(w.error_code), error_message=w.error_message, member_id=w.member_id,
            member_epoch=int(w.member_epoch), heartbeat_interval_ms=int(w.heartbeat_interval_ms),
            assignment=None if a is None else cm.ConnectHeartbeatAssignment(
                error=int(a.error), connectors_and_tasks=_cat(a.connectors_and_tasks),
                pending_connectors_and_tasks=_cat(a.pending_connectors_and_tasks),
                metadata_version=int(a.metadata_version),
                metadata_bytes=bytes(a.metadata_bytes)),
            should_compute_assignment=bool(w.should_compute_assignment))
    if api_key == ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT:
        return cm.ConnectGroupPrepareAssignmentResponse(
            error_code=int(w.error_code), error_message=w.error_message,
            group_epoch=int(w.group_epoch), assignment_epoch=int(w.assignment_epoch),
            assignor_name=w.assignor_name,
            members=tuple(cm.ConnectPreparedMember(
                m.member_id, int(m.member_epoch), m.instance_id, m.url,
                cm.ConnectPreparedAssignor(int(m.assignor.version), int(m.assignor.reason),
                                           bytes(m.assignor.metadata)),
                _cat(m.connectors_and_tasks)) for m in w.members),
            departed_members=tuple(cm.ConnectDepartedMember(d.member_id,
                                                            _cat(d.connectors_and_tasks))
                                   for d in w.departed_members),
            config_offset=int(w.config_offset),
            connectors=tuple(cm.ConnectorConfig(c.name, int(c.task_count))
                             for c in w.connectors))
    if api_key == ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT:
        return cm.ConnectGroupInstallAssignmentResponse(error_code=int(w.error_code),
                                                        error_message=w.error_message)
    raise TypeError(f"not a Connect worker API: {api_key}")


# ----------------------------------------------------------------------------- the driver


class _ListeningDriver(Protocol):
    """What :class:`ListenerBridge` needs of a driver (both Connect worker drivers have it)."""

    listener: ConnectRebalanceListener

    def _revocation(self, out: Any) -> object: ...

    def _call(self, out: Any) -> None: ...


def worker_listener(listener: ConnectRebalanceListener | None,
                    worker_id: str) -> ConnectRebalanceListener:
    """The listener a worker driver calls: the given one (a plugin runtime without a worker id
    takes ``worker_id``), or one that does nothing."""
    if isinstance(listener, ConnectRuntime) and not listener.worker_id:
        listener.worker_id = worker_id
    return listener or ConnectRebalanceListener()


class ListenerBridge(ConnectRebalanceListener):
    """The application's listener as the worker sees it: awaitables run as driver tasks, and a
    revocation completes when its awaitable has finished. Shared by the new-protocol and the
    classic worker drivers."""

    def __init__(self, driver: _ListeningDriver) -> None:
        self.d = driver

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> object:
        return self.d._revocation(self.d.listener.on_revoked(connectors, tasks))

    def on_assigned(self, connectors: Connectors, tasks: Tasks) -> None:
        app: Any = self.d.listener  # its callbacks may return awaitables
        self.d._call(app.on_assigned(connectors, tasks))

    def on_lost(self, connectors: Connectors, tasks: Tasks) -> None:
        app: Any = self.d.listener
        self.d._call(app.on_lost(connectors, tasks))


class AsyncConnectWorker(MemberDriver[ConnectWorker]):
    """A worker of a ``connect`` group over the wire (see the module doc). It joins the group
    when started; use as an async context manager, or call :meth:`start` and :meth:`close`."""

    def __init__(self, bootstrap: str, group_id: str, *, url: str = "",
                 protocol: str = "sessioned",
                 listener: ConnectRebalanceListener | None = None,
                 instance_id: str | None = None, member_id: str | None = None,
                 max_delay_ms: int = DEFAULT_MAX_DELAY_MS, rebalance_timeout_ms: int = 60_000,
                 request_timeout_ms: int = 30_000,
                 client_id: str = "groupcoord-connect-worker",
                 reconnect_backoff_ms: int = 100, reconnect_backoff_max_ms: int = 2_000,
                 close_timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS,
                 assignors: Sequence[str | ConnectAssignor] | None = None) -> None:
        worker = ConnectWorker(group_id, url=url, protocol=protocol, max_delay_ms=max_delay_ms,
                               assignors=assignors,
                               listener=ListenerBridge(self), instance_id=instance_id,
                               member_id=member_id, rebalance_timeout_ms=rebalance_timeout_ms,
                               request_timeout_ms=request_timeout_ms, client_id=client_id)
        super().__init__(bootstrap, worker, client_id=client_id,
                         request_timeout_ms=request_timeout_ms,
                         reconnect_backoff_ms=reconnect_backoff_ms,
                         reconnect_backoff_max_ms=reconnect_backoff_max_ms,
                         close_timeout_ms=close_timeout_ms)
        self.listener = worker_listener(listener, self.member_id)

    async def __aenter__(self) -> AsyncConnectWorker:
        await self.start()
        return self

    # ------------------------------------------------------------------ application API

    def running(self) -> ConnectorsAndTasks:
        """The connectors and tasks this worker owns (runs) now."""
        return self.member.running

    async def wait_for_assignment(self, timeout_s: float = 30.0) -> ConnectorsAndTasks:
        """Wait until the worker is stable on its target (reconciled) and return what it runs."""
        await self.wait_until(lambda m: self.reconciled(), timeout_s)
        return self.running()

    async def describe(self, group_ids: Iterable[str] | None = None) -> Any:
        """ConnectGroupDescribe of this worker's group (or of ``group_ids``): the wire
        response's ``groups``."""
        conn = await self._connection()
        ids = [self.member.group_id] if group_ids is None else list(group_ids)
        return (await conn.call(ApiKey.CONNECT_GROUP_DESCRIBE, 0, group_ids=ids)).groups

    # ------------------------------------------------------------------ driver hooks

    def _before_start(self) -> None:
        self.member.join(self._now())

    async def _on_connected(self, conn: BrokerConnection) -> None:
        if not conn.supports(ApiKey.CONNECT_GROUP_HEARTBEAT, 0):
            raise UnsupportedApi("the broker does not offer ConnectGroupHeartbeat (API 1002): "
                                 "connect groups need groupcoord serve")

    async def _request(self, conn: BrokerConnection, req: Any) -> Any:
        key, values = request_values(req)
        return response_from_wire(key, await conn.call(key, 0, values))
