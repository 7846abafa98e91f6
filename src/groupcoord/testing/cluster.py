"""An embedded groupcoord server for tests, and the Python side of its control plane.

:func:`embedded_cluster` (a context manager, for blocking clients: confluent-kafka, kafka-python)
runs the server on an event loop in a background thread; :func:`async_embedded_cluster` (an
async context manager, for asyncio applications: aiokafka, ``groupcoord.client``) runs it on the
caller's loop. Both start it on a free port of 127.0.0.1 with memory storage (the record log is
a :class:`~groupcoord.storage.memory.MemoryLog`, topic data in a temporary directory removed at
exit) and short group timings (:data:`TEST_PROPERTIES`, overridable), create the topics asked
for, and yield a :class:`Cluster`: its ``bootstrap_servers``, its :class:`Control`, topic
creation, and :meth:`Cluster.restart` (the broker goes away and comes back on the same port
with the same record log, as a broker restarted on its disk).

:class:`Control` is the control plane of ``server/control.py`` as methods; the same object talks
to a server in process (:attr:`Cluster.control`) or over the wire (:meth:`Control.connect`,
the GroupcoordControl extension API, as ``groupcoord control`` does).

``brokers=N`` serves N brokers from the one process (node ids 0..N-1, one port each;
``server/brokers.py``): leaders and coordinators spread over them, and the control plane moves
coordinators and takes brokers down and up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, TypeVar

__all__ = ["TEST_PROPERTIES", "Cluster", "Control", "ControlError", "async_embedded_cluster",
           "embedded_cluster"]

T = TypeVar("T")

#: Broker configs of an embedded server: group timings short enough for tests (a KIP-848
#: heartbeat every 500 ms, sessions of 10 s, classic groups rebalancing without the initial
#: 3 s delay). Anything given as ``config`` overrides these.
TEST_PROPERTIES: dict[str, str] = {
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.session.timeout.ms": "2000",
    "group.consumer.session.timeout.ms": "10000",
    "group.min.session.timeout.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
}


class ControlError(RuntimeError):
    """The server refused a control command (the message says why)."""


class Control:
    """The control plane's commands (``server/control.py`` documents each). ``invoke`` runs one
    ``(command, arguments) -> result``; use :attr:`Cluster.control` or :meth:`connect`."""

    def __init__(self, invoke: Callable[[str, dict[str, Any]], Any]) -> None:
        self._invoke = invoke

    @classmethod
    def connect(cls, bootstrap: str, *, client_id: str = "groupcoord-control",
                timeout_s: float = 10.0, security: dict[str, Any] | None = None) -> Control:
        """A control plane over the wire (GroupcoordControl, API 1010): each command opens a
        connection to ``bootstrap`` (``H:P``); ``security``: the protocol client's
        ``ssl_context`` / ``sasl`` for a secured listener (``protocol/client_config.py``)."""
        from groupcoord.protocol.client import KafkaClient
        from groupcoord.protocol.versions import ApiKey

        def invoke(command: str, args: dict[str, Any]) -> Any:
            with KafkaClient(bootstrap, client_id=client_id, timeout=timeout_s,
                             **(security or {})) as c:
                r = c.call(ApiKey.GROUPCOORD_CONTROL, 0, command=command,
                           arguments=json.dumps(args))
            if int(r.error_code):
                raise ControlError(r.error_message or f"error {int(r.error_code)}")
            return json.loads(r.result)

        return cls(invoke)

    def run(self, command: str, **args: Any) -> Any:
        """Any command by name, arguments as keywords (None values are left out)."""
        return self._invoke(command, {k: v for k, v in args.items() if v is not None})

    def inject_error(self, api: str | int, error: str | int, count: int = 1, *,
                     group: str | None = None, client_id: str | None = None,
                     broker: int | None = None) -> dict[str, Any]:
        """Answer the next ``count`` requests of ``api`` (a name such as ``"Heartbeat"`` or a
        key) with ``error`` (a Kafka error name such as ``"NOT_COORDINATOR"`` or a code),
        optionally only those naming ``group``, from ``client_id``, or to ``broker``."""
        out: dict[str, Any] = self.run("inject-error", api=api, error=error, count=count,
                                       group=group, client_id=client_id, broker=broker)
        return out

    def add_latency(self, ms: int, *, api: str | int | None = None, broker: int | None = None,
                    client_id: str | None = None) -> dict[str, Any]:
        """Delay matching requests (every request when no filter is given) by ``ms``."""
        out: dict[str, Any] = self.run("add-latency", ms=ms, api=api, broker=broker,
                                       client_id=client_id)
        return out

    def clear_faults(self) -> int:
        """Remove every error and latency rule; how many there were."""
        return int(self.run("clear-faults")["removed"])

    def faults(self) -> dict[str, Any]:
        """The rules in force, and how many errors were injected so far."""
        out: dict[str, Any] = self.run("faults")
        return out

    def drop_connections(self, client_id: str | None = None, *,
                         every: bool = False) -> list[str]:
        """Close the connections of ``client_id`` (or all of them) now; their peers."""
        out: list[str] = self.run("drop-connections", client_id=client_id,
                                  all=True if every else None)["dropped"]
        return out

    def connections(self) -> list[dict[str, Any]]:
        """The open connections: peer, broker, listener, principal (docs/security.md), client
        id."""
        out: list[dict[str, Any]] = self.run("connections")["connections"]
        return out

    def expire_session(self, group: str, member: str) -> str:
        """The member's session expires now; the timer kind that fired."""
        return str(self.run("expire-session", group=group, member=member)["expired"])

    def move_coordinator(self, group: str, to: int | None = None) -> int:
        """Move the group's coordinator (its ``__consumer_offsets`` partition) to broker ``to``
        (default the next live one); the broker it moved to. Several brokers only."""
        return int(self.run("move-coordinator", group=group, to=to)["to"])

    def expire_transaction(self, transactional_id: str) -> dict[str, Any]:
        """The id's open transaction times out now: its producer is fenced (epoch bumped) and
        the transaction aborted; the id's state, producer id and epoch after."""
        out: dict[str, Any] = self.run("expire-transaction", transactional_id=transactional_id)
        return out

    def move_transaction_coordinator(self, transactional_id: str, to: int | None = None) -> int:
        """Move the coordinator of the transactional id (its transaction-log partition) to
        broker ``to`` (default the next live one); the broker it moved to. Several brokers
        only."""
        return int(self.run("move-transaction-coordinator", transactional_id=transactional_id,
                            to=to)["to"])

    def broker_down(self, broker: int) -> list[str]:
        """Take a broker down (connections closed, new ones closed at once, its partitions and
        coordinators to the next live broker); the peers dropped."""
        out: list[str] = self.run("broker-down", broker=broker)["dropped"]
        return out

    def broker_up(self, broker: int) -> None:
        """Bring a broker back (it leads what it prefers again)."""
        self.run("broker-up", broker=broker)

    def coordinator_of(self, group: str) -> int:
        """The node id of the group's coordinator now."""
        return int(self.run("brokers", group=group)["coordinator"])

    def hold_rebalance(self, group: str) -> None:
        """Heartbeats are answered but the group's target assignment does not advance."""
        self.run("hold-rebalance", group=group)

    def release_rebalance(self, group: str) -> None:
        """The next heartbeat computes the target held back."""
        self.run("release-rebalance", group=group)

    def fail_next_append(self, count: int = 1) -> int:
        """The next ``count`` record-log appends fail (the shard reloads); how many are
        pending."""
        return int(self.run("fail-next-append", count=count)["pending"])


class Cluster:
    """A running embedded server (see the module doc). Thread-safe: a call from another thread
    than the server's loop runs there."""

    def __init__(self, loop: asyncio.AbstractEventLoop, data_dir: str, properties: dict[str, str],
                 host: str, brokers: int = 1, racks: list[str] | None = None) -> None:
        from groupcoord.storage.memory import MemoryLog

        self.loop = loop
        self.data_dir = data_dir
        self.properties = properties
        self.host = host
        self.port = 0
        self.brokers = brokers
        self.racks = racks
        self._broker_ports: list[int] | None = None
        self._bootstrap = ""
        self.log = MemoryLog()
        #: The transaction coordinator's log, kept across restarts as ``log``.
        self.transaction_log = MemoryLog()
        #: The share-state log (KIP-932), kept across restarts as ``log`` is.
        self.share_log = MemoryLog()
        self.server: Any = None
        self.control = Control(self._run_command)

    @property
    def bootstrap_servers(self) -> str:
        """``H:P`` of every broker, comma-separated."""
        return self._bootstrap

    # ------------------------------------------------------------------ on the loop

    async def _start(self) -> None:
        from groupcoord.server.app import KafkaServer

        self.server = KafkaServer(host=self.host, port=self.port, data_dir=self.data_dir,
                                  storage="memory", properties=self.properties,
                                  record_log=self.log, brokers=self.brokers, racks=self.racks,
                                  broker_ports=self._broker_ports,
                                  transaction_log=self.transaction_log,
                                  share_state_log=self.share_log)
        _, self.port = await self.server.start()
        if self.server.brokerset is not None:
            self._broker_ports = [b.port for b in self.server.brokerset.brokers[1:]]
        self._bootstrap = self.server.bootstrap_servers

    async def _stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop(grace_s=0.5)

    def _on_loop(self, fn: Callable[[], T]) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            return fn()
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                fut.set_result(fn())
            except BaseException as e:
                fut.set_exception(e)

        self.loop.call_soon_threadsafe(call)
        return fut.result(timeout=30)

    def _run_command(self, command: str, args: dict[str, Any]) -> Any:
        def run() -> Any:
            if self.server is None:
                raise ControlError("the broker is down")
            try:
                return self.server.control.run(command, args)
            except ValueError as e:
                raise ControlError(str(e)) from None
        return self._on_loop(run)

    # ------------------------------------------------------------------ API

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic now (ValueError if it exists or the name or count is bad)."""
        from groupcoord.protocol.errors import CoordinatorError

        def create() -> None:
            if self.server is None:
                raise ControlError("the broker is down")
            try:
                self.server.registry.create(name, partitions)
            except CoordinatorError as e:
                raise ValueError(e.message) from None
            self.server.runtime.update_metadata(self.server.registry.image())
        self._on_loop(create)

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        return self._on_loop(lambda: {t.name: t.num_partitions for t in self.server.registry})

    async def restart_async(self, down_s: float = 0.0) -> None:
        """(On the server's loop.) The broker goes away (connections closed, new ones closed at once),
        stays down ``down_s``, and comes back on the same port with the same record log."""
        await self._stop()
        if down_s > 0:
            await asyncio.sleep(down_s)
        await self._start()

    def restart(self, down_s: float = 0.0) -> None:
        """:meth:`restart_async` from another thread (a cluster of :func:`embedded_cluster`);
        on the server's own loop, ``await restart_async()`` instead."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise RuntimeError("Cluster.restart() would block the server's own event loop: "
                               "await cluster.restart_async() there")
        asyncio.run_coroutine_threadsafe(self.restart_async(down_s), self.loop).result(60)


def _properties(config: Mapping[str, str] | None) -> dict[str, str]:
    props = dict(TEST_PROPERTIES)
    props.update({k: str(v) for k, v in (config or {}).items()})
    return props


@contextlib.asynccontextmanager
async def async_embedded_cluster(*, topics: Mapping[str, int] | None = None,
                                 config: Mapping[str, str] | None = None,
                                 host: str = "127.0.0.1", brokers: int = 1,
                                 racks: list[str] | None = None) -> AsyncIterator[Cluster]:
    """An embedded server on the running event loop (module doc); ``topics``: name ->
    partitions, created before it is yielded; ``config``: broker configs over
    :data:`TEST_PROPERTIES`; ``brokers``: how many brokers it serves (``server/brokers.py``),
    with optional ``racks``."""
    data_dir = tempfile.mkdtemp(prefix="groupcoord-test-")
    cluster = Cluster(asyncio.get_running_loop(), data_dir, _properties(config), host, brokers,
                      racks)
    try:
        await cluster._start()
        for name, n in (topics or {}).items():
            cluster.create_topic(name, n)
        yield cluster
    finally:
        await cluster._stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextlib.contextmanager
def embedded_cluster(*, topics: Mapping[str, int] | None = None,
                     config: Mapping[str, str] | None = None,
                     host: str = "127.0.0.1", brokers: int = 1,
                     racks: list[str] | None = None) -> Iterator[Cluster]:
    """An embedded server on an event loop of its own, in a daemon thread (module doc), for
    blocking clients. Same arguments as :func:`async_embedded_cluster`."""
    loop = asyncio.new_event_loop()
    ready: concurrent.futures.Future[Cluster] = concurrent.futures.Future()
    stop = asyncio.Event()
    data_dir = tempfile.mkdtemp(prefix="groupcoord-test-")

    async def main() -> None:
        cluster = Cluster(loop, data_dir, _properties(config), host, brokers, racks)
        try:
            await cluster._start()
            for name, n in (topics or {}).items():
                cluster.create_topic(name, n)
        except BaseException as e:
            await cluster._stop()
            ready.set_exception(e)
            return
        ready.set_result(cluster)
        try:
            await stop.wait()
        finally:
            await cluster._stop()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),),
                              name="groupcoord-embedded", daemon=True)
    thread.start()
    try:
        cluster = ready.result(timeout=60)
        yield cluster
    finally:
        if not ready.done() or ready.exception() is None:
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        if not thread.is_alive():
            loop.close()
        shutil.rmtree(data_dir, ignore_errors=True)
