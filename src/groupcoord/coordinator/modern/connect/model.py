"""Connect groups: the in-memory model rebuilt from records (the Connect draft).

The Connect draft's data model ("Worker Group and Worker", "Target Assignment", "Current
Assignment"): a worker group with its epoch and workers (member id, instance id, url, client
assignors, rebalance timeout); the connectors-and-tasks configuration (connector -> task count,
with a growing config offset; the draft's ConnectorsTasks metadata record); the target assignment
with its epoch, the assignor's error and the scheduled rebalance delay it was installed with, one
entry per worker (connectors and tasks, error, metadata version and bytes); and each worker's
current assignment (worker epoch, previous epoch, reconciliation state, assigned, pending
revocation, error and metadata of its epoch). Nothing here changes except by ``Shard.replay``.

Connectors and tasks are kept as a mapping connector -> task numbers where -1 is the connector
itself (:data:`~groupcoord.coordinator.modern.connect.messages.CONNECTOR_TASK`), so reconciliation works
on them as on topic partitions. States are the consumer group's (Empty, Assigning, Reconciling,
Stable, Dead); a group that has a configuration but no worker is Empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.group import check_member_epoch_offset_request
from groupcoord.coordinator.modern.connect.messages import (
    CONNECTOR_TASK,
    ConnectorsAndTasks,
    ConnectorTaskId,
)
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import MemberState, ModernGroupMember
from groupcoord.coordinator.records import ClassicMemberMetadata, ClientAssignor, ConnectAssignment

EMPTY: ConnectAssignment = {}

Item = tuple[str, int]  # (connector, task number; -1: the connector itself)


# ----------------------------------------------------------------------------- assignments


def items_of(a: ConnectAssignment) -> Iterator[Item]:
    for c, ts in a.items():
        for t in ts:
            yield c, t


def assignment_of(items: Iterable[Item]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for c, t in items:
        out.setdefault(c, set()).add(t)
    return {c: frozenset(ts) for c, ts in out.items()}


def to_wire(a: ConnectAssignment) -> ConnectorsAndTasks:
    connectors = []
    tasks = []
    for c in sorted(a):
        for t in sorted(a[c]):
            if t == CONNECTOR_TASK:
                connectors.append(c)
            else:
                tasks.append(ConnectorTaskId(c, t))
    return ConnectorsAndTasks(tuple(connectors), tuple(tasks))


def from_wire(ct: ConnectorsAndTasks) -> dict[str, frozenset[int]]:
    return assignment_of([(c, CONNECTOR_TASK) for c in ct.connectors]
                         + [(t.connector, t.task) for t in ct.tasks])


def wire_items(ct: ConnectorsAndTasks) -> list[Item]:
    """Every item of a wire value, duplicates kept (validation counts them)."""
    return [(c, CONNECTOR_TASK) for c in ct.connectors] + [(t.connector, t.task) for t in ct.tasks]


def show_item(item: Item) -> str:
    c, t = item
    return f"connector {c}" if t == CONNECTOR_TASK else f"task {c}-{t}"


def digest_of(a: ConnectAssignment) -> list[tuple[str, list[int]]]:
    return sorted((c, sorted(ts)) for c, ts in a.items() if ts)


def minus(a: ConnectAssignment, b: ConnectAssignment) -> dict[str, frozenset[int]]:
    out = {}
    for c, ts in a.items():
        rest = ts - b.get(c, frozenset())
        if rest:
            out[c] = rest
    return out


# ----------------------------------------------------------------------------- values


@dataclass(slots=True, frozen=True)
class ConnectorsConfig:
    """The connectors-and-tasks configuration: connector name -> task count."""

    config_offset: int = 0
    connectors: Mapping[str, int] = field(default_factory=dict)

    def items(self) -> frozenset[Item]:
        return frozenset((c, t) for c, n in self.connectors.items()
                         for t in range(CONNECTOR_TASK, n))

    def digest(self) -> Any:
        return (self.config_offset, sorted(self.connectors.items()))


@dataclass(slots=True, frozen=True)
class ConnectMemberTarget:
    """One worker's entry in the target assignment."""

    items: ConnectAssignment = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

    def digest(self) -> Any:
        return (digest_of(self.items), self.error, self.metadata_version, self.metadata_bytes)

    def same_as(self, other: ConnectMemberTarget | None) -> bool:
        return other is not None and self.digest() == other.digest()


NO_TARGET = ConnectMemberTarget()


@dataclass(slots=True, frozen=True)
class ConnectGroupMember(ModernGroupMember):
    """One worker: its metadata (member metadata record) and current assignment."""

    member_id: str
    instance_id: str | None = None
    url: str = ""
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    client_assignors: tuple[ClientAssignor, ...] = ()
    #: Set for a worker that uses the classic protocol (online migration, the Connect draft "Migration To
    #: the New Protocol").
    classic: ClassicMemberMetadata | None = None
    # current assignment
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: ConnectAssignment = field(default_factory=dict)
    pending_revocation: ConnectAssignment = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

    def held(self) -> Iterator[Item]:
        """Every connector and task the coordinator considers held by this worker."""
        yield from items_of(self.assigned)
        yield from items_of(self.pending_revocation)

    def digest(self) -> tuple[Any, ...]:
        return (self.instance_id, self.url, self.client_id, self.client_host,
                self.rebalance_timeout_ms, self.client_assignors, self.member_epoch,
                self.previous_member_epoch, self.state.name, digest_of(self.assigned),
                digest_of(self.pending_revocation), self.error, self.metadata_version,
                self.metadata_bytes, self.classic)


# ----------------------------------------------------------------------------- the group


class ConnectGroup(ModernGroup[ConnectGroupMember]):
    """A connect (worker) group's state. Mutated only by the shard's replay of records."""

    group_type = "connect"
    protocol_type = "connect"
    #: Its connector configuration is durable configuration, not soft state (DeleteGroups
    #: removes it).
    deleted_by_offsets_retention = False

    __slots__ = ("assignment_error", "config", "owners", "scheduled_rebalance_delay_ms",
                 "target_assignment")

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.config = ConnectorsConfig()
        self.assignment_error = 0
        self.scheduled_rebalance_delay_ms = 0
        #: member id -> target entry; may hold workers that left since the last install.
        self.target_assignment: dict[str, ConnectMemberTarget] = {}
        #: connector -> task number -> member id holding it (assigned or revoking).
        self.owners: dict[str, dict[int, str]] = {}

    # ------------------------------------------------------------------ queries

    def digest(self) -> Any:
        return {
            "type": self.group_type,
            "epoch": self.group_epoch,
            "config": self.config.digest(),
            "assignment_epoch": self.assignment_epoch,
            "assignment_error": self.assignment_error,
            "delay": self.scheduled_rebalance_delay_ms,
            "members": {mid: m.digest() for mid, m in sorted(self.members.items())},
            "static": dict(sorted(self.static_members.items())),
            "target": {mid: t.digest() for mid, t in sorted(self.target_assignment.items())},
            "owners": sorted((c, t, mid) for c, ts in self.owners.items()
                             for t, mid in ts.items()),
        }

    def validate_offset_request(self, group_id: str, member_id: str, epoch: int,
                                committing: bool, group_instance_id: str | None = None) -> None:
        """The worker epoch fences offset commits (the draft: "This epoch is the one used to
        fence the worker (e.g. offsets commit)"), with the consumer group's codes."""
        check_member_epoch_offset_request(self.members, group_id, member_id, epoch, committing,
                                          'worker')

    def is_subscribed_to(self, topic: str) -> bool:
        return False  # workers subscribe to no topic through the group

    def owner_of(self, connector: str, task: int) -> str | None:
        ts = self.owners.get(connector)
        return None if ts is None else ts.get(task)

    def target_of(self, member_id: str) -> ConnectMemberTarget:
        return self.target_assignment.get(member_id, NO_TARGET)

    def all_classic_except(self, leaving: set[str]) -> bool:
        """Whether every member but ``leaving`` uses the classic protocol (online migration)."""
        return all(m.classic is not None for mid, m in self.members.items() if mid not in leaving)

    # ------------------------------------------------------------------ replay helpers

    def put_member(self, member: ConnectGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._hold(member)

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _hold(self, m: ConnectGroupMember) -> None:
        for c, t in m.held():
            self.owners.setdefault(c, {})[t] = m.member_id

    def _release(self, m: ConnectGroupMember) -> None:
        for c, t in m.held():
            ts = self.owners.get(c)
            if ts is not None and ts.get(t) == m.member_id:
                del ts[t]
                if not ts:
                    del self.owners[c]
