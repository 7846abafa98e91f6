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

from collections.abc import Mapping
from dataclasses import dataclass, field

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

# The wire values live with their codec in ``groupcoord.protocol.connect_protocol`` (the
# coordinator reads them during an online migration); re-exported here unchanged.
from groupcoord.protocol.connect_protocol import (
    CONFIG_MISMATCH,
    CONNECTOR_TASK,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
    WorkerMetadata,
)


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
