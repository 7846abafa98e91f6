"""Values of the Connect worker protocol: connector/task ids, assignments, configuration snapshots.

These are the nouns of KIP-415 (``001_dbf4533782bb9548.txt``): "Connect protocol's format"
(worker metadata with its current allocation; assignments with revoked items and the scheduled
delay) and "Deferred Resolution of Imbalance" (the connectors and tasks the leader distributes).
The byte layout lives in :mod:`.protocol`; the assignors in :mod:`.assignors`.

Choices:

- :class:`ConnectorTaskId` is a ``NamedTuple`` rather than a dataclass: the assignors hash and
  compare tens of thousands of them per round, and tuple hashing/ordering run in C. Its order is
  upstream's ``ConnectorTaskId.compareTo`` (connector name, then task number).
- A task id of ``-1`` on the wire denotes the connector itself (upstream ``CONNECTOR_TASK``); in
  these values connectors and tasks are kept apart, as upstream's ``Assignment`` keeps them.
- :class:`ConfigSnapshot` describes the configuration as connector name -> task count; the tasks
  of a connector are ``0 .. count - 1`` (what upstream's ``ClusterConfigState.tasks`` returns for
  a connector whose task configs are all present).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "CONFIG_MISMATCH",
    "CONNECTOR_TASK",
    "NO_ERROR",
    "ConfigSnapshot",
    "ConnectAssignment",
    "ConnectorTaskId",
    "ConnectorsAndTasks",
    "WorkerMetadata",
    "apply_assignment",
]

#: Assignment error codes (upstream ``ConnectProtocol.Assignment``): no error, and the leader's
#: configuration is behind the highest config offset a member reported (members read the config
#: topic to the end and rejoin).
NO_ERROR = 0
CONFIG_MISMATCH = 1

#: The task number that denotes "the connector itself" in a wire assignment.
CONNECTOR_TASK = -1


class ConnectorTaskId(NamedTuple):
    """One task of one connector (upstream ``ConnectorTaskId``); ordered by connector, then task."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(slots=True, frozen=True)
class ConnectorsAndTasks:
    """A set of connectors and tasks, e.g. what one worker runs. Kept sorted and without duplicates
    when built through :meth:`of`."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()) -> ConnectorsAndTasks:
        """Sorted, de-duplicated connectors and tasks."""
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks))))

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def size(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __str__(self) -> str:
        items = [*self.connectors, *(str(t) for t in self.tasks)]
        return "[" + ", ".join(items) + "]"


EMPTY = ConnectorsAndTasks()


@dataclass(slots=True, frozen=True)
class ConnectAssignment:
    """What the leader sends one worker in SyncGroup (KIP-415 "Assignment", upstream
    ``ExtendedAssignment``; with ``version`` 0 the eager ``ConnectProtocol.Assignment``).

    Under the cooperative protocols (version >= 1) ``connectors``/``tasks`` are the items *newly*
    assigned in this round, ``revoked_*`` the items to stop, and ``delay`` the milliseconds after
    which the worker rejoins (0: no scheduled rebalance). Under the eager protocol the assignment is
    the worker's complete set and there is no revocation or delay. In a worker's metadata the same
    structure describes its complete current allocation (the last assignment it received, with
    ``connectors``/``tasks`` replaced by everything it runs).
    """

    version: int
    error: int
    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[ConnectorTaskId, ...] = ()
    delay: int = 0

    @property
    def failed(self) -> bool:
        return self.error != NO_ERROR

    @property
    def assigned(self) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors, self.tasks)

    @property
    def revoked(self) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.revoked_connectors, self.revoked_tasks)


@dataclass(slots=True, frozen=True)
class WorkerMetadata:
    """A worker's JoinGroup metadata (KIP-415 "Subscription", upstream ``ExtendedWorkerState``):
    protocol version, REST url, the config-topic offset it has read to, and from v1 its current
    allocation (None: it has never received an assignment)."""

    version: int
    url: str
    config_offset: int
    allocation: ConnectAssignment | None = None

    @property
    def current(self) -> ConnectorsAndTasks:
        """The connectors and tasks the worker reports as running (empty without an allocation)."""
        if self.allocation is None:
            return EMPTY
        return ConnectorsAndTasks(self.allocation.connectors, self.allocation.tasks)


@dataclass(slots=True, frozen=True)
class ConfigSnapshot:
    """The connectors-and-tasks configuration the leader assigns from (upstream
    ``ClusterConfigState``): connector name -> number of tasks, read up to ``offset`` of the config
    topic."""

    offset: int
    connectors: Mapping[str, int] = field(default_factory=dict)
    _task_ids: frozenset[ConnectorTaskId] | None = field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, count in self.connectors.items():
            if count < 0:
                raise ValueError(f"connector {name!r} has a negative task count {count}")

    def __hash__(self) -> int:
        return hash((self.offset, tuple(sorted(self.connectors.items()))))

    def task_ids(self) -> frozenset[ConnectorTaskId]:
        """Every configured task (computed once per snapshot: the leader reuses its snapshot
        across rounds until the configuration changes)."""
        if self._task_ids is None:
            ids = frozenset(ConnectorTaskId(c, i) for c, n in self.connectors.items() for i in range(n))
            object.__setattr__(self, "_task_ids", ids)
            return ids
        return self._task_ids

    def tasks(self, connector: str) -> tuple[ConnectorTaskId, ...]:
        """The tasks of ``connector`` in order (empty for an unknown connector)."""
        return tuple(ConnectorTaskId(connector, i) for i in range(self.connectors.get(connector, 0)))

    def all(self) -> ConnectorsAndTasks:
        """Every configured connector and task, sorted."""
        names = sorted(self.connectors)
        return ConnectorsAndTasks(
            tuple(names),
            tuple(ConnectorTaskId(c, i) for c in names for i in range(self.connectors[c])),
        )


def apply_assignment(current: ConnectorsAndTasks, assignment: ConnectAssignment) -> ConnectorsAndTasks:
    """What a worker runs after receiving ``assignment`` while running ``current``.

    Upstream ``WorkerCoordinator.onJoinComplete``: under the cooperative protocols (version >= 1)
    the worker stops the revoked items and adds the new ones to what it keeps; a failed assignment
    (e.g. CONFIG_MISMATCH) carries nothing, so the worker keeps its work. Under the eager protocol
    (version 0) the worker released everything before joining, so the assignment is the whole set.
    """
    if assignment.version == 0:
        return ConnectorsAndTasks.of(assignment.connectors, assignment.tasks)
    revoked_c = set(assignment.revoked_connectors)
    revoked_t = set(assignment.revoked_tasks)
    return ConnectorsAndTasks.of(
        [c for c in current.connectors if c not in revoked_c] + list(assignment.connectors),
        [t for t in current.tasks if t not in revoked_t] + list(assignment.tasks),
    )
