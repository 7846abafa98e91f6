"""The Connect worker's plugin runtime: connector and task objects started and stopped as the
group says.

A reduced form of upstream Kafka Connect's plugin API (``Connector`` / ``Task`` /
``SourceTask.poll``) and of the ``Worker`` that runs them:

- :class:`Connector`: ``start(config)``, ``stop()``, ``task_configs(max_tasks)`` and the class
  of its tasks (:attr:`Connector.task_class`);
- :class:`Task`: ``start(config)``, ``stop()`` and ``poll()``, a coroutine the runtime calls in a
  loop while the task runs (one unit of work per call, as ``SourceTask.poll``);
- :class:`ConnectorRegistry`: connector classes by name (a plugin path of one module);
- :class:`ConnectRuntime`: the worker's :class:`~.listener.ConnectRebalanceListener`. It maps
  each connector name of the group to a class (``connector_classes``, else ``default_class``)
  and a configuration, and starts what ``on_assigned`` names, stops what ``on_revoked`` and
  ``on_lost`` name. Every callback returns a coroutine: the asyncio driver
  (:class:`~.async_worker.AsyncConnectWorker`) runs it, and for a revocation acknowledges only
  when it has finished, so a connector or task is stopped before the group may give it to
  another worker (docs/design.md I1 on the workers' side). Starts and stops run one at a time in the
  order of the callbacks. :attr:`ConnectRuntime.events` records what this worker started and
  stopped, and when (wall clock), for tests and logs.

Differences from upstream, on purpose: there is no config topic. A connector's configuration is
the worker's (every worker of a group is given the same mapping), and a task's configuration is
computed on the worker that runs the task, as ``task_configs(n + 1)[n]`` of a configured (not
started) instance of its connector class: task configurations must not depend on the task
count. Not here: offsets, converters, transforms, a REST API, task status reporting (a task
whose ``poll`` raises is logged and recorded ``failed``; it stays assigned, as upstream leaves
a FAILED task to an operator).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from groupcoord.client.connect.listener import Connectors, ConnectRebalanceListener, Tasks
from groupcoord.protocol.connect_protocol import ConnectorTaskId

__all__ = [
    "ConnectRuntime",
    "Connector",
    "ConnectorContext",
    "ConnectorRegistry",
    "RuntimeEvent",
    "Task",
    "TaskContext",
    "item_label",
]

log = logging.getLogger(__name__)

Config = Mapping[str, str]


def item_label(connector: str, task: int | None = None) -> str:
    """``name`` for a connector, ``name-N`` for its task N (upstream's ConnectorTaskId text)."""
    return connector if task is None or task < 0 else f"{connector}-{task}"


@dataclass(slots=True, frozen=True)
class ConnectorContext:
    """What a connector knows of where it runs."""

    worker_id: str
    connector: str


@dataclass(slots=True, frozen=True)
class TaskContext:
    """What a task knows of where it runs."""

    worker_id: str
    connector: str
    task: int

    @property
    def label(self) -> str:
        return item_label(self.connector, self.task)


class Task:
    """One task of a connector (subclass; upstream's ``SourceTask``). ``start`` / ``stop`` may be
    plain or ``async``; :meth:`poll` is a coroutine called in a loop until the task stops."""

    context: TaskContext

    def initialize(self, context: TaskContext) -> None:
        self.context = context

    def start(self, config: Config) -> Any:
        return None

    async def poll(self) -> None:
        """One unit of work; the default idles."""
        await asyncio.sleep(1.0)

    def stop(self) -> Any:
        return None


class Connector:
    """A connector (subclass; upstream's ``Connector``). ``start`` / ``stop`` may be plain or
    ``async``. The base class keeps its configuration in :attr:`config` (set before ``start``
    and for an instance only asked for :meth:`task_configs`)."""

    #: The class of this connector's tasks (upstream's ``taskClass()``).
    task_class: ClassVar[type[Task]] = Task

    config: Config
    context: ConnectorContext

    def configure(self, config: Config) -> None:
        self.config = dict(config)

    def initialize(self, context: ConnectorContext) -> None:
        self.context = context

    def start(self, config: Config) -> Any:
        return None

    def stop(self) -> Any:
        return None

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Configurations for up to ``max_tasks`` tasks; task ``n``'s must not depend on
        ``max_tasks`` (see the module doc). Default: the connector's, with ``task.number``."""
        return [{**self.config, "task.number": str(n)} for n in range(max_tasks)]


class ConnectorRegistry:
    """Connector classes by name."""

    def __init__(self, classes: Mapping[str, type[Connector]] | None = None) -> None:
        self._classes: dict[str, type[Connector]] = dict(classes or {})

    def register(self, name: str, cls: type[Connector]) -> type[Connector]:
        if not (isinstance(cls, type) and issubclass(cls, Connector)):
            raise TypeError(f"{cls!r} is not a Connector class")
        if self._classes.get(name, cls) is not cls:
            raise ValueError(f"connector class name {name!r} is taken")
        self._classes[name] = cls
        return cls

    def get(self, name: str) -> type[Connector]:
        try:
            return self._classes[name]
        except KeyError:
            raise KeyError(f"unknown connector class {name!r} (known: "
                           f"{', '.join(sorted(self._classes)) or 'none'})") from None

    def names(self) -> list[str]:
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes


@dataclass(slots=True, frozen=True)
class RuntimeEvent:
    """Something the runtime did: ``started`` / ``stopped`` / ``failed`` one connector
    (``task`` -1) or task, on ``worker``, at wall-clock time ``t`` (seconds)."""

    t: float
    worker: str
    event: str
    connector: str
    task: int

    @property
    def label(self) -> str:
        return item_label(self.connector, self.task)


@dataclass(slots=True)
class _RunningTask:
    task: Task
    loop: asyncio.Task[None] | None


class ConnectRuntime(ConnectRebalanceListener):
    """Starts and stops one worker's connectors and tasks (see the module doc)."""

    def __init__(self, registry: ConnectorRegistry, *,
                 connector_classes: Mapping[str, str] | None = None,
                 default_class: str | None = None,
                 connector_configs: Mapping[str, Config] | None = None,
                 default_config: Config | None = None,
                 worker_id: str = "",
                 on_event: Callable[[RuntimeEvent], None] | None = None) -> None:
        self.registry = registry
        self.connector_classes = dict(connector_classes or {})
        self.default_class = default_class
        self.connector_configs = {k: dict(v) for k, v in (connector_configs or {}).items()}
        self.default_config = dict(default_config or {})
        #: Set by the driver to the worker's member id (the events name the worker).
        self.worker_id = worker_id
        self.on_event = on_event
        self.connectors: dict[str, Connector] = {}
        self.tasks: dict[ConnectorTaskId, _RunningTask] = {}
        self.events: list[RuntimeEvent] = []
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ what runs

    def running(self) -> set[str]:
        """Labels of the connectors and tasks running here now."""
        return set(self.connectors) | {item_label(t.connector, t.task) for t in self.tasks}

    def class_of(self, connector: str) -> type[Connector]:
        name = self.connector_classes.get(connector, self.default_class)
        if name is None:
            raise KeyError(f"no connector class configured for connector {connector!r}")
        return self.registry.get(name)

    def config_of(self, connector: str) -> dict[str, str]:
        return {**self.default_config, **self.connector_configs.get(connector, {}),
                "name": connector}

    # ------------------------------------------------------------------ the listener

    def on_assigned(self, connectors: Connectors,  # type: ignore[override]
                    tasks: Tasks) -> Coroutine[Any, Any, None]:
        return self._serially(self._start, connectors, tasks)

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> Coroutine[Any, Any, None]:
        return self._serially(self._stop, connectors, tasks)

    def on_lost(self, connectors: Connectors,  # type: ignore[override]
                tasks: Tasks) -> Coroutine[Any, Any, None]:
        return self._serially(self._stop, connectors, tasks)

    async def stop_all(self) -> None:
        """Stop everything still running (the worker is going away without a group)."""
        await self._serially(self._stop, tuple(self.connectors), tuple(self.tasks))

    # ------------------------------------------------------------------ starting and stopping

    async def _serially(self, step: Callable[..., Coroutine[Any, Any, None]],
                        *args: Any) -> None:
        async with self._lock:
            await step(*args)

    async def _start(self, connectors: Iterable[str], tasks: Iterable[ConnectorTaskId]) -> None:
        for name in connectors:
            if name in self.connectors:
                continue
            try:
                c = self.class_of(name)()
                config = self.config_of(name)
                c.configure(config)
                c.initialize(ConnectorContext(self.worker_id, name))
                await _maybe(c.start(config))
            except Exception as e:
                self._failed(name, -1, e)
                continue
            self.connectors[name] = c
            self._record("started", name, -1)
        for tid in tasks:
            if tid in self.tasks:
                continue
            try:
                cls = self.class_of(tid.connector)
                proto = cls()
                proto.configure(self.config_of(tid.connector))
                config = proto.task_configs(tid.task + 1)[tid.task]
                task = cls.task_class()
                task.initialize(TaskContext(self.worker_id, tid.connector, tid.task))
                await _maybe(task.start(config))
            except Exception as e:
                self._failed(tid.connector, tid.task, e)
                continue
            running = self.tasks[tid] = _RunningTask(task, None)
            self._record("started", tid.connector, tid.task)
            running.loop = asyncio.get_running_loop().create_task(self._poll(tid, task))

    async def _poll(self, tid: ConnectorTaskId, task: Task) -> None:
        try:
            while True:
                await task.poll()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._failed(tid.connector, tid.task, e)

    async def _stop(self, connectors: Iterable[str], tasks: Iterable[ConnectorTaskId]) -> None:
        for tid in tasks:
            running = self.tasks.pop(tid, None)
            if running is None:
                continue
            if running.loop is not None:
                running.loop.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running.loop
            try:
                await _maybe(running.task.stop())
            except Exception as e:
                log.exception("worker %s: task %s failed to stop: %s", self.worker_id,
                              item_label(tid.connector, tid.task), e)
            self._record("stopped", tid.connector, tid.task)
        for name in connectors:
            c = self.connectors.pop(name, None)
            if c is None:
                continue
            try:
                await _maybe(c.stop())
            except Exception as e:
                log.exception("worker %s: connector %s failed to stop: %s", self.worker_id,
                              name, e)
            self._record("stopped", name, -1)

    def _record(self, event: str, connector: str, task: int) -> None:
        ev = RuntimeEvent(time.time(), self.worker_id, event, connector, task)
        self.events.append(ev)
        log.info("worker %s: %s %s", self.worker_id, event, ev.label)
        if self.on_event is not None:
            self.on_event(ev)

    def _failed(self, connector: str, task: int, e: BaseException) -> None:
        log.error("worker %s: %s failed: %r", self.worker_id, item_label(connector, task), e)
        self._record("failed", connector, task)


async def _maybe(out: Any) -> Any:
    return await out if inspect.isawaitable(out) else out
