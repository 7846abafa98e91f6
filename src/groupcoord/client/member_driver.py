"""The asyncio loop shared by the drivers of our sans-IO group members.

A sans-IO member (:class:`~groupcoord.client.consumer.ConsumerMember`, and its subclass
:class:`~groupcoord.client.connect.worker.ConnectWorker`) says what to send
(``poll_request(now_ms)``), takes answers (``on_response`` / ``on_request_failed``) and says when
it next has something to do (``next_deadline()``). :class:`MemberDriver` does the IO around it,
whatever the group type:

- finds the group coordinator (FindCoordinator, key type 0) from the bootstrap servers (tried
  in turn) and keeps one pipelined :class:`~groupcoord.client.connection.BrokerConnection` to
  it; a lost connection is re-established with an exponential backoff, on the next request, and
  an answer NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE drops the connection so that the next
  request looks the coordinator up again (the Java client's ``markCoordinatorUnknown``);
- calls ``poll_request`` until it returns None (a Connect worker can owe a Prepare or an Install
  beside its heartbeat) and sends each request at once, without waiting for the answers of the
  others; each answer is fed back with the request's correlation id, a failure (timeout, lost
  connection) with ``on_request_failed``;
- sleeps until the member's next deadline, an answer, or the application's :meth:`wake`;
- runs revocations the application finishes asynchronously: a listener callback may return an
  awaitable; the driver runs it as a task and calls ``complete_revocation`` when it ends (the
  member keeps reporting the revoked items as owned until then, as the Java consumer runs its
  callback before acknowledging);
- :meth:`close` revokes everything (the listener runs), sends the leave heartbeat (epoch -1, or
  -2 for a static member), waits for it to be delivered, then closes the connection; all of it
  within the close timeout (``close_timeout_ms``, :data:`DEFAULT_CLOSE_TIMEOUT_MS`), after which
  a leave that could not be delivered (coordinator gone or paused) is abandoned.

Timeouts use ``asyncio.timeout``, never ``asyncio.wait_for``: on Python 3.11 ``wait_for``
returns the inner result when it completed in the loop iteration the caller was cancelled in
(CPython gh-86296), and a close that cancelled a reconnection against a refused port lost its
cancellation that way, leaving the process retrying forever after it had revoked its work.

Time is the event loop's monotonic clock in milliseconds. The heartbeats run on the
application's event loop (as aiokafka's; no heartbeat thread as in the Java clients): an
application that blocks the loop for longer than its session timeout loses the membership while
it still runs its partitions or tasks, which the coordinator hands to others. Blocking work
belongs in ``asyncio.to_thread`` or another process. A subclass maps the member's request
dataclasses to wire entities and the responses back (:meth:`SansIODriver._request`), and may do
more once connected (:meth:`SansIODriver._on_connected`).

The loop itself is :class:`SansIODriver`, generic over any member that has ``poll_request``,
``next_deadline`` and ``complete_revocation`` (:class:`SansIOMember`); how answers, failures,
fatal errors and leaving reach the member are hooks. :class:`MemberDriver` fills them in for the
KIP-848 members (answers matched by correlation id); the classic Connect worker's driver
(``client/connect/async_classic_worker.py``) for a member with one request in flight, whose
JoinGroup / SyncGroup the broker parks up to the rebalance timeout (:meth:`SansIODriver._timeout_ms`).

Not here: anything group-type specific (topic names, commits: ``client/driver.py``; connectors
and tasks: ``client/connect/async_worker.py``), several coordinators (every group of one member
lives on one coordinator), TLS / SASL.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from groupcoord.client.connection import BrokerConnection, ConnectionLost
from groupcoord.client.consumer import DEFER, ClientMemberState, ConsumerMember
from groupcoord.protocol.client import parse_bootstrap
from groupcoord.protocol.errors import ErrorCode, error_name

__all__ = ["COORDINATOR_MOVED_ERRORS", "DEFAULT_CLOSE_TIMEOUT_MS", "DEFER", "MemberDriver",
           "SansIODriver", "SansIOMember"]


class SansIOMember(Protocol):
    """What :class:`SansIODriver` needs of a member, whatever its protocol."""

    @property
    def group_id(self) -> str: ...

    @property
    def member_id(self) -> str: ...

    def poll_request(self, now_ms: int) -> Any: ...

    def next_deadline(self) -> int | None: ...

    def complete_revocation(self, now_ms: int) -> None: ...


N = TypeVar("N", bound=SansIOMember)

log = logging.getLogger(__name__)

#: How long :meth:`SansIODriver.close` may take by default (revocation, then the leave): short,
#: so that a process told to stop while its coordinator is gone exits promptly; the member is
#: then removed by its session timeout. Java's consumer waits at most 30 s.
DEFAULT_CLOSE_TIMEOUT_MS = 5_000
#: How long close() waits for its tasks to end once cancelled.
CANCEL_GRACE_S = 1.0
#: Errors saying the connection is not (or no longer) to the group's coordinator: the driver
#: drops it and looks the coordinator up again (FindCoordinator) for the next request.
COORDINATOR_MOVED_ERRORS = frozenset({int(ErrorCode.not_coordinator),
                                      int(ErrorCode.coordinator_not_available)})


def _peer(conn: BrokerConnection | None) -> str:
    return "?" if conn is None else conn.peer


M = TypeVar("M", bound=ConsumerMember)

_FIND_COORDINATOR = 10


class SansIODriver(ABC, Generic[N]):
    """Drives one sans-IO member over the wire (see the module doc). Use as an async context
    manager, or call :meth:`start` and :meth:`close`. Subclasses implement :meth:`_request` and
    the member hooks (:meth:`_deliver` ... :meth:`_has_left`)."""

    def __init__(self, bootstrap: str, member: N, *, client_id: str,
                 request_timeout_ms: int = 30_000, reconnect_backoff_ms: int = 100,
                 reconnect_backoff_max_ms: int = 2_000,
                 close_timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS) -> None:
        if close_timeout_ms < 0:
            raise ValueError(f"close_timeout_ms must be at least 0, got {close_timeout_ms}")
        #: Every bootstrap server (``H:P[,H:P...]``), tried in turn to find the coordinator.
        self.bootstraps = [parse_bootstrap(b) for b in bootstrap.split(",") if b.strip()] \
            or [parse_bootstrap(bootstrap)]
        self.bootstrap = self.bootstraps[0]
        self._next_bootstrap = 0
        self.close_timeout_ms = close_timeout_ms
        self.member = member
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = reconnect_backoff_max_ms
        self._conn: BrokerConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._exchanges: set[asyncio.Task[Any]] = set()
        self._closing = False
        #: The coordinator answered this member's leave (False after a close that had to give
        #: it up: coordinator unreachable, or close timeout expired).
        self.leave_delivered = False
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The last error that stopped the driver (a fatal group error, or an exception).
        self.error: BaseException | None = None

    # ------------------------------------------------------------------ subclass hooks

    @abstractmethod
    async def _request(self, conn: BrokerConnection, req: Any) -> Any:
        """Send the member's request ``req`` over ``conn``; the member's response object."""
        raise NotImplementedError

    async def _on_connected(self, conn: BrokerConnection) -> None:
        """Called with each new coordinator connection, before it is used."""

    def _correlation_id(self, req: Any) -> int:
        """The member's correlation id of the request ``poll_request`` just returned."""
        return 0

    def _before_start(self) -> None:
        """Called once connected, before the loop runs (e.g. to join the group)."""

    def _is_leave(self, req: Any) -> bool:
        """Whether ``req`` is the member's leave (its answer sets :attr:`leave_delivered`): a
        heartbeat at a negative epoch (-1, or -2 for a static member) by default."""
        return int(getattr(req, "member_epoch", 0)) < 0

    def _timeout_ms(self, req: Any) -> int:
        """How long the driver waits for the answer to ``req``."""
        return self.request_timeout_ms

    @abstractmethod
    def _deliver(self, req: Any, resp: Any, cid: int) -> None:
        """Hand the answer ``resp`` to ``req`` (correlation id ``cid``) to the member."""
        raise NotImplementedError

    @abstractmethod
    def _failed(self, req: Any, cid: int) -> None:
        """Tell the member that ``req`` got no answer (timeout, lost connection)."""
        raise NotImplementedError

    @abstractmethod
    def _fatal_message(self) -> str | None:
        """Why the member stopped for good, or None while it is not stopped."""
        raise NotImplementedError

    @abstractmethod
    def _begin_leave(self, permanent: bool) -> None:
        """Start leaving the group (the member revokes, then says goodbye)."""
        raise NotImplementedError

    @abstractmethod
    def _has_left(self) -> bool:
        """The member is out of the group (left, or stopped by a fatal error)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> SansIODriver[N]:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect to the group coordinator (errors raise here), then run the loop."""
        self._loop = asyncio.get_running_loop()
        await self._connection(retry=False)
        self._before_start()
        self._task = self._loop.create_task(self._run())

    def _now(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    def wake(self) -> None:
        """The application changed the member: let the loop look at it now."""
        self._wake.set()

    async def close(self, *, permanent: bool = False, timeout_s: float | None = None) -> None:
        """Revoke everything (the listener runs), leave the group, close the connection; all
        within ``timeout_s`` (default :attr:`close_timeout_ms`), even when the coordinator is
        unreachable: a revocation or a leave not done by then is abandoned (the coordinator
        expires the member after its session timeout), as the Java consumer's ``close(timeout)``
        gives up (it waits at most 30 s by default; ours is shorter, see
        :data:`DEFAULT_CLOSE_TIMEOUT_MS`)."""
        if self._task is None:
            return
        loop = asyncio.get_running_loop()
        budget = self.close_timeout_ms / 1000 if timeout_s is None else timeout_s
        deadline = loop.time() + max(0.0, budget)
        self._closing = True
        if not self._task.done() and self._fatal_message() is None:
            self._begin_leave(permanent)
            self._wake.set()
            try:
                async with asyncio.timeout_at(deadline):
                    await self.wait_until(lambda m: self._has_left(), budget + 1)
                    # the leave (and a request still in flight) answered, failed or given up
                    while self._exchanges:
                        await asyncio.wait(set(self._exchanges))
            except TimeoutError:
                log.warning("[%s] %s: close timeout (%.1f s) expired before the leave was "
                            "delivered; abandoning it", self.member.group_id, self.member_id,
                            budget)
            except Exception as e:  # the driver stopped meanwhile: nothing more to deliver
                log.info("[%s] leaving stopped: %r", self.member.group_id, e)
        self._task.cancel()
        tasks = {self._task, *self._tasks}
        for t in tasks:
            t.cancel()
        # A task that swallows its cancellation (an application callback) must not hold the
        # close forever: wait a bounded grace, then leave it behind.
        _, stuck = await asyncio.wait(tasks, timeout=CANCEL_GRACE_S)
        if stuck:
            log.warning("[%s] %d task(s) did not stop when cancelled: %s", self.member.group_id,
                        len(stuck), ", ".join(sorted(t.get_name() for t in stuck)))
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        self._task = None

    # ------------------------------------------------------------------ observing

    @property
    def member_id(self) -> str:
        return self.member.member_id

    async def wait_until(self, predicate: Callable[[N], bool], timeout_s: float) -> None:
        """Wait until ``predicate(member)`` holds (checked after every change); raises
        asyncio.TimeoutError, or the error that stopped the driver."""
        async def waiter() -> None:
            async with self._changed:
                while not predicate(self.member):
                    if self.error is not None:
                        raise self.error
                    await self._changed.wait()
        async with asyncio.timeout(timeout_s):
            await waiter()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        m = self.member
        try:
            while True:
                self._wake.clear()
                if self.error is not None:
                    return
                now = self._now()
                req = m.poll_request(now)
                while req is not None:
                    self._spawn_exchange(self._exchange(req, self._correlation_id(req)))
                    req = m.poll_request(now)
                await self._notify()
                fatal = self._fatal_message()
                if fatal is not None:
                    self.error = RuntimeError(f"fatal group error {fatal}")
                    await self._notify()
                    return
                d = m.next_deadline()
                timeout = None if d is None else max(0.0, (d - self._now()) / 1000)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # report it to waiters, then stop
            self.error = e
            await self._notify()
            raise

    async def _exchange(self, req: Any, cid: int) -> None:
        conn: BrokerConnection | None = None
        try:
            conn = await self._connection()
            async with asyncio.timeout(self._timeout_ms(req) / 1000):
                resp = await self._request(conn, req)
        except (TimeoutError, ConnectionLost, OSError):
            self._failed(req, cid)
            await self._drop_connection(conn)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # e.g. UnsupportedApi: the driver cannot go on
            self.error = e
        else:
            self._deliver(req, resp, cid)
            if self._is_leave(req):
                self.leave_delivered = True
            code = getattr(resp, "error_code", 0)
            if code in COORDINATOR_MOVED_ERRORS:
                # The coordinator moved or is gone: find it again before the next request
                # (the Java client's markCoordinatorUnknown); the member retries after its
                # own backoff.
                log.info("[%s] %s from %s: looking the coordinator up again",
                         self.member.group_id, error_name(int(code)), _peer(conn))
                await self._drop_connection(conn)
        self._wake.set()
        await self._notify()

    # ------------------------------------------------------------------ the connection

    async def _connection(self, *, retry: bool = True) -> BrokerConnection:
        """The coordinator connection, (re)established with an exponential backoff
        (``reconnect_backoff_ms`` doubling up to ``reconnect_backoff_max_ms``) until it works,
        or until this task is cancelled (a closing driver cancels it at its close timeout)."""
        backoff = self.reconnect_backoff_ms
        async with self._connect_lock:
            while self._conn is None or self._conn.closed:
                try:
                    async with asyncio.timeout(self.request_timeout_ms / 1000):
                        conn = await self._connect()
                        try:
                            await self._on_connected(conn)
                        except BaseException:
                            await conn.close()
                            raise
                    self._conn = conn
                except (TimeoutError, ConnectionLost, OSError, RuntimeError) as e:
                    if not retry:
                        raise
                    log.debug("[%s] no coordinator connection (%r): retrying in %d ms",
                              self.member.group_id, e, backoff)
                    await asyncio.sleep(backoff / 1000)
                    backoff = min(backoff * 2, self.reconnect_backoff_max_ms)
            return self._conn

    async def _drop_connection(self, conn: BrokerConnection | None) -> None:
        """Close ``conn`` if it is still the current connection (another request may have
        replaced it already)."""
        if conn is not None and conn is self._conn:
            self._conn = None
            await conn.close()

    async def _connect(self) -> BrokerConnection:
        """Bootstrap, then the group's coordinator (FindCoordinator key type 0). The bootstrap
        servers are tried in turn, starting after the last one that failed."""
        n = len(self.bootstraps)
        last: BaseException | None = None
        for i in range(n):
            host, port = self.bootstraps[(self._next_bootstrap + i) % n]
            try:
                return await self._connect_via(host, port)
            except (ConnectionLost, OSError, RuntimeError) as e:
                last = e
        self._next_bootstrap = (self._next_bootstrap + 1) % n
        assert last is not None
        raise last

    async def _connect_via(self, host: str, port: int) -> BrokerConnection:
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
                raise RuntimeError(f"FindCoordinator: {error_name(code)}")
            if (chost, cport) == (host, port):
                conn, boot = boot, None
            else:
                conn = await BrokerConnection.open(chost, cport, client_id=self.client_id)
        finally:
            if boot is not None:
                await boot.close()
        return conn

    # ------------------------------------------------------------------ callbacks

    def _spawn(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _spawn_exchange(self, coro: Any) -> None:
        """Spawn a request exchange (close() waits for these to deliver the leave)."""
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        self._exchanges.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._exchanges.discard)

    def _call(self, out: Any) -> None:
        """Run what a listener callback returned, if it is awaitable."""
        if inspect.isawaitable(out):
            self._spawn(out)

    def _revocation(self, out: Any) -> object:
        """What a revocation callback returned -> what the member's listener returns: an
        awaitable runs as a task and the revocation completes when it ends (:data:`DEFER`)."""
        if inspect.isawaitable(out):
            self._spawn(self._finish_revocation(out))
            return DEFER
        return out

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


class MemberDriver(SansIODriver[M]):
    """The driver of a KIP-848 member (:class:`~groupcoord.client.consumer.ConsumerMember` and
    its subclasses): answers and failures are matched by the member's correlation ids."""

    async def __aenter__(self) -> MemberDriver[M]:
        await self.start()
        return self

    @property
    def member_epoch(self) -> int:
        return self.member.member_epoch

    def reconciled(self) -> bool:
        """Stable on its target: it owns what the coordinator assigned it, nothing in flight."""
        m = self.member
        return (m.state is ClientMemberState.STABLE and m.target is not None and m.owned == m.target
                and m.inflight is None)

    def _correlation_id(self, req: Any) -> int:
        return self.member.last_correlation_id

    def _deliver(self, req: Any, resp: Any, cid: int) -> None:
        self.member.on_response(resp, self._now(), cid)

    def _failed(self, req: Any, cid: int) -> None:
        self.member.on_request_failed(self._now(), cid)

    def _fatal_message(self) -> str | None:
        m = self.member
        if m.state is not ClientMemberState.FATAL:
            return None
        code, msg = m.fatal_error or (-1, None)
        return f"{error_name(code)}: {msg}"

    def _begin_leave(self, permanent: bool) -> None:
        self.member.leave(self._now(), permanent=permanent)

    def _has_left(self) -> bool:
        return self.member.state in (ClientMemberState.UNJOINED, ClientMemberState.FATAL)
