"""The connectors-and-tasks configuration a Connect leader assigns from (upstream
``ClusterConfigState``).

The values of the Connect embedded protocol itself (connector/task ids, assignments, worker
metadata: KIP-415 "Connect protocol's format") and their byte layout live in
:mod:`groupcoord.protocol.connect_protocol`; the assignors, and what a worker runs after an
assignment, in :mod:`groupcoord.client.connect.assignors`.

:class:`ConfigSnapshot` describes the configuration as connector name -> task count; the tasks of
a connector are ``0 .. count - 1`` (what upstream's ``ClusterConfigState.tasks`` returns for a
connector whose task configs are all present).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.protocol.connect_protocol import ConnectorsAndTasks, ConnectorTaskId


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
