"""Requests and responses of the connect group type (the Connect draft): plain typed objects of our own.

The Connect draft's ConnectGroupHeartbeat, ConnectGroupPrepareAssignment and
ConnectGroupInstallAssignment, plus two admin requests of ours: ConnectGroupConfig (create a
connector with N tasks, change its task count, delete it) and ConnectGroupDescribe. None of these
APIs exists upstream; field names are the snake_case of the draft's schemas. Choices:

- ``ConnectorsAndTasks`` is one struct {connectors, tasks} (the draft types the field as an array
  of such structs, which adds nothing); a task is (connector, task number), numbered from 0 as
  upstream's ``ConnectorTaskId`` (the draft's case studies print task n as ``T{n+1}``).
- ``url`` in the heartbeat is an extension field: the draft's worker data model has a url but its
  heartbeat schema has no field to carry it (null: unchanged).
- We model a heartbeat of the connect type of its own rather than the revision's generic
  ``GroupHeartbeat``: it has no TopicPartitions field, so the revision's rule "TopicPartitions and
  ConnectorsAndTasks cannot be used together" holds by construction.
- ``scheduled_rebalance_delay_ms`` in the install is an extension field for KIP-415's deferred
  resolution (see ``modern/connect/handlers.py``): when > 0 the target may leave items unassigned.
- The Prepare response also carries the configuration snapshot (connectors and task counts, config
  offset) - workers learn the configuration from the coordinator - and ``departed_members``: the
  target entries of workers that left since the last installed target (the "lost" work of KIP-415).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from groupcoord.coordinator.records import ClientAssignor

#: The task number that denotes the connector itself (upstream's CONNECTOR_TASK).
CONNECTOR_TASK = -1


class ConnectorTaskId(NamedTuple):
    """One task of one connector; ordered by connector, then task number."""

    connector: str
    task: int


@dataclass(slots=True, frozen=True)
class ConnectorsAndTasks:
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()


EMPTY_CONNECTORS_AND_TASKS = ConnectorsAndTasks()

# ----------------------------------------------------------------------------- heartbeat


@dataclass(slots=True, frozen=True)
class ConnectGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None
    #: The connectors and tasks the worker runs (null: unchanged since the last heartbeat).
    connectors_and_tasks: ConnectorsAndTasks | None = None
    #: Extension: the worker's REST url (null: unchanged).
    url: str | None = None
    # From the request header / connection:
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True, frozen=True)
class ConnectHeartbeatAssignment:
    #: The assignor's error for this worker (its target's Error).
    error: int
    #: The connectors and tasks the worker may run now.
    connectors_and_tasks: ConnectorsAndTasks
    #: Target items not released by their former owners yet.
    pending_connectors_and_tasks: ConnectorsAndTasks = EMPTY_CONNECTORS_AND_TASKS
    metadata_version: int = 0
    metadata_bytes: bytes = b""


@dataclass(slots=True, frozen=True)
class ConnectGroupHeartbeatResponse:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: ConnectHeartbeatAssignment | None = None
    should_compute_assignment: bool = False


# ----------------------------------------------------------------------------- prepare / install


@dataclass(slots=True, frozen=True)
class ConnectGroupPrepareAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int


@dataclass(slots=True, frozen=True)
class ConnectPreparedAssignor:
    version: int = 0
    reason: int = 0
    metadata: bytes = b""


@dataclass(slots=True, frozen=True)
class ConnectPreparedMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    url: str
    assignor: ConnectPreparedAssignor
    #: The worker's current target connectors and tasks.
    connectors_and_tasks: ConnectorsAndTasks


@dataclass(slots=True, frozen=True)
class ConnectDepartedMember:
    """A target entry of a worker that left since the last installed target."""

    member_id: str
    connectors_and_tasks: ConnectorsAndTasks


@dataclass(slots=True, frozen=True)
class ConnectorConfig:
    name: str
    task_count: int


@dataclass(slots=True, frozen=True)
class ConnectGroupPrepareAssignmentResponse:
    error_code: int = 0
    error_message: str | None = None
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConnectPreparedMember, ...] = ()
    departed_members: tuple[ConnectDepartedMember, ...] = ()
    config_offset: int = 0
    connectors: tuple[ConnectorConfig, ...] = ()


@dataclass(slots=True, frozen=True)
class ConnectInstalledMember:
    member_id: str
    connectors_and_tasks: ConnectorsAndTasks = EMPTY_CONNECTORS_AND_TASKS
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""


@dataclass(slots=True, frozen=True)
class ConnectGroupInstallAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: int
    group_epoch: int
    error: int = 0
    members: tuple[ConnectInstalledMember, ...] = ()
    #: Extension (KIP-415): > 0 when the assignor defers the reassignment of lost items.
    scheduled_rebalance_delay_ms: int = 0


@dataclass(slots=True, frozen=True)
class ConnectGroupInstallAssignmentResponse:
    error_code: int = 0
    error_message: str | None = None


# ----------------------------------------------------------------------------- admin


@dataclass(slots=True, frozen=True)
class ConnectorConfigOp:
    op: str  # "create" | "update" (the task count) | "delete"
    connector: str
    task_count: int = 0


@dataclass(slots=True, frozen=True)
class ConnectGroupConfigRequest:
    group_id: str
    ops: tuple[ConnectorConfigOp, ...] = field(default_factory=tuple)


@dataclass(slots=True, frozen=True)
class ConnectGroupConfigResponse:
    error_code: int = 0
    error_message: str | None = None
    group_epoch: int = 0
    config_offset: int = 0


@dataclass(slots=True, frozen=True)
class ConnectGroupDescribeRequest:
    group_ids: tuple[str, ...]


@dataclass(slots=True, frozen=True)
class DescribedConnectMember:
    member_id: str
    instance_id: str | None
    url: str
    member_epoch: int
    state: str
    client_id: str
    client_host: str
    client_assignors: tuple[ClientAssignor, ...]
    assignment: ConnectorsAndTasks
    pending_revocation: ConnectorsAndTasks
    target_assignment: ConnectorsAndTasks


@dataclass(slots=True, frozen=True)
class DescribedConnectGroup:
    group_id: str
    error_code: int = 0
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignment_error: int = 0
    scheduled_rebalance_delay_ms: int = 0
    assignor_name: str = ""
    #: The member chosen to compute the next target, while one is needed.
    assigner: str | None = None
    config_offset: int = 0
    connectors: tuple[ConnectorConfig, ...] = ()
    members: tuple[DescribedConnectMember, ...] = ()


@dataclass(slots=True, frozen=True)
class ConnectGroupDescribeResponse:
    groups: tuple[DescribedConnectGroup, ...]
