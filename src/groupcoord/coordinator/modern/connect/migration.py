"""Online migration between classic Connect groups and connect groups.

The Connect draft's "Migration To the New Protocol" (and its later
revision): when the first worker using the new protocol joins a (non-empty) classic group of
protocol type ``connect``, the group is converted to a ``connect`` group whose epoch starts at the
classic generation; when the last new-protocol worker leaves, it switches back. The classic
workers keep working inside the connect group: their JoinGroup, SyncGroup and Heartbeat are
translated (``modern/connect/classic_workers.py``). ``group.connect.migration.policy`` (ours, after
``group.consumer.migration.policy``: bidirectional, upgrade, downgrade, disabled) allows either
direction; empty groups always convert (the managers delete an empty group of the other type).

This module is pure: it turns one group into the records (or the record value) of the other type,
builds the Connect assignment bytes a classic worker receives, and says whether a conversion is
allowed (the policy checks and the classic group value are the shared rules of
``modern/migration.py``, with :data:`CONNECT_MIGRATION`). ``modern/connect/handlers.py`` appends the
records, moves timers and answers pending requests.

Upgrade (classic -> connect), after the consumer migration (``modern/consumer/migration.py``): every
member of the classic group's live view becomes a worker at worker epoch = previous epoch =
generation, STABLE, with its classic metadata (session timeout, Connect protocols), url from its
Connect worker metadata for the selected protocol (else its first), and as assigned connectors and
tasks what it runs: for the eager protocol (v0) its assignment; for the cooperative ones (v1/v2) the
allocation of its metadata minus the assignment's revoked items plus the assignment's newly assigned
ones (what ``ClassicConnectWorker`` and upstream's herder run after a SyncGroup). An item claimed by
two members stays with the first (by member id), so invariant I1 holds. The target is that same
assignment at epoch = generation, each entry's metadata the Connect assignment header of the classic
generation (leader, leader url, config offset; no delay).

**The connectors-and-tasks configuration of the converted group.** The draft says nothing (a
classic group keeps no configuration: the workers read it from the config topic). We take it from
what the classic workers run: every connector that is assigned or has an assigned task, with
task count = highest assigned task number + 1; config offset = the highest offset a member
reported (metadata) or an assignment carried. In a Stable classic group that is the whole
configuration; work the leader held back (a KIP-415 scheduled delay, a CONFIG_MISMATCH round) is
not in it until the configuration is declared again through ConnectGroupConfig - which is also how
the new-protocol workers learn every later change (they read the configuration from the
coordinator).

Downgrade (connect -> classic): generation = group epoch, protocol type ``connect``, the protocol
chosen by the classic vote among the protocols every remaining worker supports, the first worker
(by member id) as leader, each worker's metadata for that protocol as it last joined, and as its
assignment its *current* connectors and tasks (revoked: those pending revocation) encoded in the
protocol's version. The caller then starts a classic rebalance; the classic leader's assignor
sees every worker's allocation in its metadata.

Not here: static membership (Connect has none: a classic worker's instance id is kept but a
replacement by instance id is not translated), classic workers computing the target assignment
(only new-protocol workers are chosen; a connect group left with classic workers only, when the
policy forbids the downgrade, keeps its target until a new-protocol worker joins).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupMember
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern import migration as gm
from groupcoord.coordinator.modern.connect.model import (
    ConnectGroup,
    ConnectGroupMember,
    assignment_of,
    to_wire,
)
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.modern.migration import MigrationError, classic_metadata
from groupcoord.coordinator.records import (
    ClassicGroupMetadataValue,
    ConnectAssignment,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataValue,
    Record,
    classic_group_metadata_tombstone,
    connect_connectors_tasks_record,
    connect_current_assignment_record,
    connect_group_epoch_record,
    connect_member_metadata_record,
    connect_target_member_record,
    connect_target_metadata_record,
)
from groupcoord.protocol import connect_protocol as cp

CONNECT_PROTOCOL_TYPE = cp.CONNECT_PROTOCOL_TYPE

Item = tuple[str, int]


#: Connect groups as the shared migration rules (``modern/migration.py``) speak of them.
CONNECT_MIGRATION = gm.MigrationKind(
    setting="group.connect.migration.policy", config_field="connect_migration_policy",
    protocol_type=CONNECT_PROTOCOL_TYPE, protocol_noun="Connect protocol", noun="worker",
    new_protocol_members="workers using the new protocol")


def upgrade_enabled(config: CoordinatorConfig) -> bool:
    return CONNECT_MIGRATION.upgrade_enabled(config)


def downgrade_enabled(config: CoordinatorConfig) -> bool:
    return CONNECT_MIGRATION.downgrade_enabled(config)


# ---------------------------------------------------------------------- Connect bytes <-> items


def protocol_version(name: str) -> int:
    """The Connect protocol version of a JoinGroup protocol name (unknown names: v0)."""
    try:
        return cp.ConnectProtocolCompatibility.from_protocol(name).version
    except ValueError:
        return cp.CONNECT_PROTOCOL_V0


def _items(connectors: Iterable[str], tasks: Iterable[cp.ConnectorTaskId]) -> set[Item]:
    return {(c, cp.CONNECTOR_TASK) for c in connectors} | {(t.connector, t.task) for t in tasks}


def _wire(a: ConnectAssignment) -> tuple[tuple[str, ...], tuple[cp.ConnectorTaskId, ...]]:
    ct = to_wire(a)
    return ct.connectors, tuple(cp.ConnectorTaskId(t.connector, t.task) for t in ct.tasks)


def running_items(metadata: cp.WorkerMetadata | None, assignment: cp.ConnectAssignment | None
                  ) -> set[Item]:
    """What a classic worker runs after applying ``assignment`` (see the module docstring)."""
    if assignment is None or assignment.failed:
        held = set() if metadata is None else _items(metadata.current.connectors,
                                                     metadata.current.tasks)
        return held
    if assignment.version == cp.CONNECT_PROTOCOL_V0:
        return _items(assignment.connectors, assignment.tasks)
    held = set() if metadata is None else _items(metadata.current.connectors,
                                                 metadata.current.tasks)
    held -= _items(assignment.revoked_connectors, assignment.revoked_tasks)
    return held | _items(assignment.connectors, assignment.tasks)


def header_of(raw: bytes) -> cp.ConnectAssignment | None:
    """The Connect assignment header an assignor stored as a target's metadata (None: none)."""
    if not raw:
        return None
    try:
        return cp.decode_assignment(raw)
    except cp.ConnectProtocolError:
        return None


def header_bytes(version: int, leader: str, leader_url: str, config_offset: int,
                 delay: int = 0) -> bytes:
    return cp.encode_assignment(cp.ConnectAssignment(version, cp.NO_ERROR, leader, leader_url,
                                                     config_offset, delay=delay))


def classic_assignment(member: ConnectGroupMember, protocol_name: str, config_offset: int,
                       header: cp.ConnectAssignment | None) -> bytes:
    """The Connect assignment a classic worker receives in SyncGroup: its assigned connectors and
    tasks (v0: the complete set; v1/v2: the complete set too - the worker starts what it does not
    run yet - and the items pending revocation as revoked), in the version of ``protocol_name``,
    with the leader, leader url and delay of the installed target's header."""
    version = protocol_version(protocol_name)
    connectors, tasks = _wire(member.assigned)
    leader, url, delay = ("", "", 0) if header is None else (header.leader, header.leader_url,
                                                             header.delay)
    if version == cp.CONNECT_PROTOCOL_V0:
        return cp.encode_assignment(cp.ConnectAssignment(
            version, member.error, leader, url, config_offset, connectors, tasks))
    revoked_c, revoked_t = _wire(member.pending_revocation)
    return cp.encode_assignment(cp.ConnectAssignment(
        version, member.error, leader, url, config_offset, connectors, tasks, revoked_c, revoked_t,
        delay))


def owned_items(protocol_name: str, metadata: bytes) -> dict[str, frozenset[int]]:
    """The connectors and tasks a classic worker reports running in its JoinGroup metadata for
    ``protocol_name`` (v0 reports none: an eager worker revoked everything before joining).
    Raises ConnectProtocolError when the metadata does not decode."""
    meta = cp.decode_worker_metadata(metadata)
    if protocol_version(protocol_name) == cp.CONNECT_PROTOCOL_V0:
        return {}
    return assignment_of(_items(meta.current.connectors, meta.current.tasks))


# ---------------------------------------------------------------------- upgrade


@dataclass(slots=True, frozen=True)
class ConnectUpgrade:
    """The connect group a classic group becomes: its records, workers and configuration."""

    records: list[Record]
    members: list[ConnectGroupMember]
    config_offset: int
    connectors: Mapping[str, int]


def upgrade_refusal(group: ClassicGroup, config: CoordinatorConfig) -> str | None:
    """Why a non-empty classic group may not become a connect group (None: it may)."""
    return gm.upgrade_refusal(CONNECT_MIGRATION, group, config)


def _metadata_for(group: ClassicGroup, m: ClassicGroupMember) -> tuple[str, bytes]:
    if group.protocol_name is not None and group.protocol_name in m.protocol_names():
        return group.protocol_name, m.metadata(group.protocol_name)
    if m.protocols:
        return m.protocols[0].name, m.protocols[0].metadata
    return "", b""


def classic_to_connect(group: ClassicGroup) -> ConnectUpgrade:
    """The records converting ``group`` to a connect group (the classic tombstone first).
    Raises MigrationError when a member's Connect metadata or assignment does not decode."""
    gid = group.group_id
    generation = group.generation_id
    decoded: list[tuple[ClassicGroupMember, str, cp.WorkerMetadata, cp.ConnectAssignment | None]] = []
    config_offset = -1
    for mid in sorted(group.members):
        m = group.members[mid]
        name, raw = _metadata_for(group, m)
        try:
            meta = cp.decode_worker_metadata(raw)
            a = cp.decode_assignment(m.assignment) if m.assignment else None
        except cp.ConnectProtocolError as e:
            raise MigrationError(f"member {mid}: {e}") from None
        config_offset = max(config_offset, meta.config_offset,
                            a.config_offset if a is not None else -1)
        decoded.append((m, name, meta, a))
    leader_url = ""
    for m, _, meta, _ in decoded:
        if m.member_id == group.leader_id:
            leader_url = meta.url
    held: set[Item] = set()
    members: list[ConnectGroupMember] = []
    for m, name, meta, a in decoded:
        mine = running_items(meta, a) - held
        held |= mine
        version = protocol_version(name)
        header = header_bytes(version, group.leader_id or "", leader_url, config_offset)
        members.append(ConnectGroupMember(
            m.member_id, instance_id=m.instance_id, url=meta.url, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
            classic=classic_metadata(m.session_timeout_ms, m.protocols),
            member_epoch=generation, previous_member_epoch=generation, state=MemberState.STABLE,
            assigned=assignment_of(mine), metadata_version=version, metadata_bytes=header))
    connectors: dict[str, int] = {}
    for c, t in held:
        connectors[c] = max(connectors.get(c, 0), t + 1)
    offset = max(config_offset, 0)
    records = [classic_group_metadata_tombstone(gid), connect_group_epoch_record(gid, generation),
               connect_connectors_tasks_record(gid, offset, connectors)]
    for w in members:
        records.append(connect_member_metadata_record(gid, w.member_id, member_metadata_value(w)))
        records.append(connect_target_member_record(gid, w.member_id, ConnectGroupTargetAssignmentMemberValue(
            w.assigned, 0, w.metadata_version, w.metadata_bytes)))
        records.append(connect_current_assignment_record(gid, w.member_id,
                                                         current_assignment_value(w)))
    records.append(connect_target_metadata_record(
        gid, ConnectGroupTargetAssignmentMetadataValue(generation, 0, 0)))
    return ConnectUpgrade(records, members, offset, connectors)


def member_metadata_value(m: ConnectGroupMember) -> ConnectGroupMemberMetadataValue:
    return ConnectGroupMemberMetadataValue(m.instance_id, m.client_id, m.client_host, m.url,
                                           m.rebalance_timeout_ms, m.client_assignors, m.classic)


def current_assignment_value(m: ConnectGroupMember) -> ConnectGroupCurrentMemberAssignmentValue:
    return ConnectGroupCurrentMemberAssignmentValue(
        m.member_epoch, m.previous_member_epoch, int(m.state), m.assigned, m.pending_revocation,
        m.error, m.metadata_version, m.metadata_bytes)


# ---------------------------------------------------------------------- downgrade


def downgrade_refusal(group: ConnectGroup, leaving: set[str],
                      config: CoordinatorConfig) -> str | None:
    """Why ``group`` stays a connect group once ``leaving`` are gone (None: it converts)."""
    return gm.downgrade_refusal(CONNECT_MIGRATION, group, leaving, config)


def connect_to_classic(group: ConnectGroup, leaving: set[str], now: int) -> ClassicGroupMetadataValue:
    """The classic group ``group`` becomes once ``leaving`` are gone (every remaining worker uses
    the classic protocol). Raises MigrationError when the workers share no protocol."""
    remaining = [group.members[mid] for mid in sorted(group.members) if mid not in leaving]
    offset = group.config.config_offset

    def assignment(w: ConnectGroupMember, protocol: str) -> bytes:
        leader = remaining[0]
        header = cp.ConnectAssignment(protocol_version(protocol), cp.NO_ERROR, leader.member_id,
                                      leader.url, offset)
        return classic_assignment(w, protocol, offset, header)

    return gm.to_classic(CONNECT_MIGRATION, group, remaining, now, assignment)


__all__ = ["CONNECT_MIGRATION", "CONNECT_PROTOCOL_TYPE", "ConnectUpgrade", "classic_assignment",
           "classic_to_connect",
           "connect_to_classic", "current_assignment_value", "downgrade_enabled",
           "downgrade_refusal", "header_bytes", "header_of", "member_metadata_value",
           "owned_items", "protocol_version", "running_items", "upgrade_enabled",
           "upgrade_refusal"]
