"""Connect groups on the new protocol: the handlers, replay and timers of the group type.

Implements the Connect draft (and its later revision): "Connect
group type", "Rebalance Process", ConnectGroupHeartbeat ("Request Validation", "Request
Handling", "Response Handling"), ConnectGroupPrepareAssignment, ConnectGroupInstallAssignment,
"Assignment Validation", "Assignment Error", "Records" and "Triggering Rebalances", on the
machinery of consumer groups: reconciliation is theirs (``reconciliation.reconcile_items``:
revoke, acknowledge, then assign, never both in one response; an item goes to its new owner only
once the old one released it), client-side assignment is the shared ``modern/client_assignment.py``.
Two admin requests of ours: ConnectGroupConfig changes the connectors-and-tasks configuration
(part of the group state), ConnectGroupDescribe describes groups; ListGroups lists them with type
``connect``.

Choices where the draft leaves two readings:

- MemberId must be non-empty (the draft's validation list; the worker keeps it across rejoins, as
  with ConsumerGroupHeartbeat v1). MemberEpoch >= -2: -1 leaves, -2 is a static worker's temporary
  leave as in KIP-848 (the draft says >= -1 but keeps KIP-848's static membership).
- A join (epoch 0) must provide RebalanceTimeoutMs: -1 ("not provided") is INVALID_REQUEST, any
  other value is accepted, as Kafka 4.3 accepts it in a ConsumerGroupHeartbeat (a non-positive one
  never replaces the worker's timeout: a worker that joined with 0 has no time to revoke). It must
  provide ClientAssignors too (INVALID_REQUEST without them or a ServerAssignor): connect groups
  compute their assignment on a worker and there is no server-side connect assignor, so a
  ServerAssignor is UNSUPPORTED_ASSIGNOR. ConnectorsAndTasks must be null or empty on a join (a
  fenced worker abandons everything before rejoining); task numbers are >= 0.
- Heartbeat handling, fencing (FENCED_MEMBER_EPOCH removes the worker), the lost-response rule (a
  smaller epoch equal to the previous one is accepted when the connectors/tasks reported are a
  subset of the assigned ones) and static membership are the consumer groups': one flow,
  ``modern/group_manager.py``'s ``NewProtocolGroupManager``, serves both group types.
  A worker whose group no longer knows it gets UNKNOWN_MEMBER_ID and rejoins at epoch 0 (the
  draft's bouncing worker "may join with the last known epoch ... or even with epoch 0").
- Group epoch bumps: a worker joins, leaves or is removed; a worker's client assignors change
  (list, ranges, reason, version, metadata - how a KIP-415 assignor asks for the follow-up
  rebalance); the configuration changes while the group has workers. A url change does not bump
  (it is no input of the assignment). A configuration change in a group without workers bumps
  nothing, there being nothing to assign (the draft's "Empty Group": epoch 0, connectors
  configured).
- A worker that leaves or is removed keeps its entry in the target assignment until the next
  installed target replaces the whole target (the draft's tables show it so). PrepareAssignment
  lists such entries as ``departed_members``: that is how a KIP-415 assignor tells lost work from
  new work without state of its own. A static worker replaced by a new member id hands its entry
  over. A worker rejoining under the same member id before the next install finds its entry.
- The configuration changes through ConnectGroupConfig: create (a connector with N tasks,
  0 <= N <= 65536), update (the task count), delete; ops apply in order, all or nothing. An
  existing connector created again is INVALID_REQUEST, an unknown one updated or deleted is
  RESOURCE_NOT_FOUND. Each change writes the ConnectorsTasks record with config offset + 1.
  Deleting a group deletes its configuration with it.
- **Deferred resolution (KIP-415).** InstallAssignment carries ``scheduled_rebalance_delay_ms``,
  an extension of ours. When it is > 0 the installed target may leave configured items
  unassigned - each item still at most once, and only to workers of the snapshot: the assignor
  holds a lost worker's items back during the delay. With 0, every configured item must be
  assigned. The coordinator records the delay with the target but schedules nothing: as the draft
  says, the assignor's worker triggers the follow-up rebalance when the delay expires by
  heartbeating a changed assignor reason (or metadata), which bumps the group epoch; any other
  bump (a worker joining, a configuration change) asks for a new target too.
- An install with a non-zero Error keeps the target (``modern/client_assignment.py``) and records
  the error in the target metadata (describe shows it) until the next successful install.
- The worker epoch fences offset commits as a consumer member epoch does (ConnectGroup).
- Session timeout and heartbeat interval are the group's ``group.consumer.*`` settings (there are
  no connect-specific ones yet); the group size cap is ``group.consumer.max.size``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.modern.client_assignment import (
    ClientAssignment,
    Snapshot,
    assignor_in,
    check_ids,
    group_assignor,
    successor,
    validate_install,
)
from groupcoord.coordinator.modern.connect.classic_workers import ClassicWorkers
from groupcoord.coordinator.modern.connect.messages import (
    ConnectDepartedMember,
    ConnectGroupConfigRequest,
    ConnectGroupConfigResponse,
    ConnectGroupDescribeRequest,
    ConnectGroupDescribeResponse,
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    ConnectHeartbeatAssignment,
    ConnectorConfig,
    ConnectPreparedAssignor,
    ConnectPreparedMember,
    DescribedConnectGroup,
    DescribedConnectMember,
)
from groupcoord.coordinator.modern.connect.migration import (
    ConnectUpgrade,
    classic_to_connect,
    connect_to_classic,
    current_assignment_value,
    downgrade_refusal,
    member_metadata_value,
    protocol_version,
    upgrade_refusal,
)
from groupcoord.coordinator.modern.connect.model import (
    ConnectGroup,
    ConnectGroupMember,
    ConnectMemberTarget,
    ConnectorsConfig,
    from_wire,
    minus,
    show_item,
    to_wire,
    wire_items,
)
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.group_manager import NewProtocolGroupManager
from groupcoord.coordinator.modern.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
)
from groupcoord.coordinator.modern.migration import MigrationError
from groupcoord.coordinator.modern.reconciliation import owns_any_items, reconcile_items
from groupcoord.coordinator.records import (
    ClassicGroupMetadataValue,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataValue,
    MemberKey,
    Record,
    RecordType,
    connect_connectors_tasks_record,
    connect_current_assignment_record,
    connect_group_epoch_record,
    connect_member_metadata_record,
    connect_target_member_record,
    connect_target_metadata_record,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from collections.abc import Mapping

    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

_E = ErrorCode

CONNECT_SESSION = "connect-session"
CONNECT_REBALANCE = "connect-rebalance"
CONNECT_ASSIGNMENT = "connect-assignment"

#: Upper bound of a connector's task count in ConnectGroupConfig.
MAX_TASKS = 65536

CONNECT_RECORD_TYPES = (
    RecordType.CONNECT_GROUP_METADATA,
    RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA,
    RecordType.CONNECT_GROUP_MEMBER_METADATA,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA,
    RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT,
)


def _err(code: int, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


class _ConnectClientAssignment(ClientAssignment):
    """Client-side assignment of connect groups: the assignor is chosen among the workers that
    advertise client assignors; classic workers of a migrating group (online migration) advertise none,
    never compute and do not constrain the choice."""

    def assignor(self, group: ModernGroup[Any]) -> str | None:
        return group_assignor(m for m in group.members.values() if m.client_assignors)


class ConnectGroupManager(NewProtocolGroupManager[ConnectGroup, ConnectGroupMember,
                                                  ConnectGroupHeartbeatRequest,
                                                  ConnectGroupHeartbeatResponse]):
    """The connect group type of one shard: registers its handlers, records and timers."""

    group_class = ConnectGroup
    response_class = ConnectGroupHeartbeatResponse
    session_kind = CONNECT_SESSION
    metadata_record_type = RecordType.CONNECT_GROUP_METADATA
    rebalance_kind = CONNECT_REBALANCE
    noun = "worker"
    group_noun = "connect group"
    left_group = "the group"
    keeps_departed_targets = True
    forgets_classic_first = True

    def __init__(self, shard: ShardContext) -> None:
        self.shard = shard
        shard.register_handler(ConnectGroupHeartbeatRequest, self._heartbeat)
        shard.register_handler(ConnectGroupPrepareAssignmentRequest, self._prepare)
        shard.register_handler(ConnectGroupInstallAssignmentRequest, self._install)
        shard.register_handler(ConnectGroupConfigRequest, self._configure)
        shard.register_handler(ConnectGroupDescribeRequest, self._describe)
        for rtype in CONNECT_RECORD_TYPES:
            shard.register_replayer(rtype, self.replay)
        shard.register_timer(CONNECT_SESSION, self._session_expired)
        shard.register_timer(CONNECT_REBALANCE, self._rebalance_timed_out)
        self.client = _ConnectClientAssignment(shard, CONNECT_ASSIGNMENT, self._lookup,
                                               _E.fenced_member_epoch)
        # Online migration (the Connect draft "Migration To the New Protocol"): classic workers inside
        # connect groups.
        self.classic_workers = self.classic_bridge = ClassicWorkers(self)
        shard.register_error_response(
            ConnectGroupHeartbeatRequest,
            lambda r, e: ConnectGroupHeartbeatResponse(error_code=e.code, error_message=e.message))
        shard.register_error_response(
            ConnectGroupPrepareAssignmentRequest,
            lambda r, e: ConnectGroupPrepareAssignmentResponse(error_code=e.code,
                                                               error_message=e.message))
        shard.register_error_response(
            ConnectGroupInstallAssignmentRequest,
            lambda r, e: ConnectGroupInstallAssignmentResponse(error_code=e.code,
                                                               error_message=e.message))
        shard.register_error_response(
            ConnectGroupConfigRequest,
            lambda r, e: ConnectGroupConfigResponse(error_code=e.code, error_message=e.message))
        shard.register_error_response(
            ConnectGroupDescribeRequest,
            lambda r, e: ConnectGroupDescribeResponse(tuple(
                DescribedConnectGroup(gid, e.code, e.message) for gid in r.group_ids)))

    # ------------------------------------------------------------------ plumbing

    def _existing(self, group_id: str) -> ConnectGroup:
        g = self._group(group_id)
        if g is None:
            raise _err(_E.group_id_not_found, f"Group {group_id} not found.")
        return g

    # ------------------------------------------------------------------ replay

    def replay(self, record: Record) -> None:
        group: ConnectGroup | None = self._replay_group(record)
        if group is None:
            return
        key = record.key
        value: Any = record.value
        rtype = key.type
        if rtype is RecordType.CONNECT_GROUP_CONNECTORS_TASKS_METADATA:
            group.config = (ConnectorsConfig() if value is None
                            else ConnectorsConfig(value.config_offset, dict(value.connectors)))
        elif rtype is RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA:
            if value is None:
                group.assignment_epoch, group.assignment_error = 0, 0
                group.scheduled_rebalance_delay_ms = 0
            else:
                group.assignment_epoch = value.assignment_epoch
                group.assignment_error = value.error
                group.scheduled_rebalance_delay_ms = value.scheduled_rebalance_delay_ms
        elif rtype is RecordType.CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER:
            assert isinstance(key, MemberKey)
            if value is None:
                group.target_assignment.pop(key.member_id, None)
            else:
                group.target_assignment[key.member_id] = ConnectMemberTarget(
                    dict(value.items), value.error, value.metadata_version, value.metadata_bytes)
        elif rtype is RecordType.CONNECT_GROUP_MEMBER_METADATA:
            assert isinstance(key, MemberKey)
            if value is None:
                group.remove_member(key.member_id)
                return
            old = group.members.get(key.member_id) or ConnectGroupMember(key.member_id)
            group.put_member(replace(
                old, instance_id=value.instance_id, client_id=value.client_id,
                client_host=value.client_host, url=value.url,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                client_assignors=value.client_assignors, classic=value.classic_member))
        elif rtype is RecordType.CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            assert isinstance(key, MemberKey)
            current = group.members.get(key.member_id)
            if value is None:
                if current is not None:
                    group.put_member(replace(
                        current, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                        previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, state=MemberState.STABLE,
                        assigned={}, pending_revocation={}, error=0, metadata_version=0,
                        metadata_bytes=b""))
                return
            old = current or ConnectGroupMember(key.member_id)
            group.put_member(replace(
                old, member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch, state=MemberState(value.state),
                assigned=dict(value.assigned), pending_revocation=dict(value.pending_revocation),
                error=value.error, metadata_version=value.metadata_version,
                metadata_bytes=value.metadata_bytes))

    # ------------------------------------------------------------------ timers and lifecycle

    def on_metadata_update(self) -> None:
        """Topic metadata is no input of connect groups: nothing to do."""

    def _on_group_loaded(self, group: ConnectGroup) -> None:
        """Load duties besides the timers: ask for a pending target."""
        self.client.request(group)

    def delete_group(self, group: ConnectGroup) -> None:
        """Tombstones for an empty connect group, its configuration included."""
        gid = group.group_id
        self.client.forget(gid)
        for mid in sorted(group.target_assignment):
            self.append(connect_target_member_record(gid, mid, None))
        self.append(connect_target_metadata_record(gid, None))
        self.append(connect_connectors_tasks_record(gid, None))
        self.append(connect_group_epoch_record(gid, None))

    # ------------------------------------------------------------------ heartbeat

    def _validate_heartbeat(self, r: ConnectGroupHeartbeatRequest) -> None:
        """ConnectGroupHeartbeat validation (the Connect draft, "ConnectGroupHeartbeat API"),
        with the rules it shares with ConsumerGroupHeartbeat read as Kafka 4.3 ships them:
        RebalanceTimeoutMs is checked on a join (epoch 0) only, where -1 ("not provided") is
        refused; a leave (-1, -2) or a steady heartbeat carries whatever the worker sends."""
        def invalid(message: str) -> CoordinatorError:
            return _err(_E.invalid_request, message)

        if not r.group_id or not r.group_id.strip():
            raise invalid("GroupId can't be empty.")
        if not r.member_id or not r.member_id.strip():
            raise invalid("MemberId can't be empty.")
        epoch = r.member_epoch
        if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid(f"MemberEpoch {epoch} is invalid.")
        if r.instance_id is not None and not r.instance_id.strip():
            raise invalid("InstanceId can't be empty.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and r.instance_id is None:
            raise invalid("InstanceId can't be null when MemberEpoch is -2.")
        if epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            ct = r.connectors_and_tasks
            if ct is not None and (ct.connectors or ct.tasks):
                raise invalid("ConnectorsAndTasks must be empty when (re-)joining.")
            if not r.client_assignors and r.server_assignor is None:
                raise invalid("ClientAssignors must be set in the first request.")
        if r.server_assignor is not None and r.client_assignors:
            raise invalid("ServerAssignor and ClientAssignors cannot be used together.")
        if r.client_assignors is not None and not r.client_assignors and r.server_assignor is None:
            raise invalid("ClientAssignors can't be empty: a connect group computes its "
                          "assignment with a client-side assignor.")
        for a in r.client_assignors or ():
            if not a.name or not a.name.strip():
                raise invalid("Assignor.Name must be non-empty.")
            if a.minimum_version < -1:
                raise invalid("Assignor.MinimumVersion must be >= -1.")
            if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
                raise invalid("Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion.")
            if not a.minimum_version <= a.version <= a.maximum_version:
                raise invalid("Assignor.Version must be within "
                              "[Assignor.MinimumVersion, Assignor.MaximumVersion].")
        ct = r.connectors_and_tasks
        if ct is not None:
            if any(not c for c in ct.connectors) or any(not t.connector for t in ct.tasks):
                raise invalid("ConnectorsAndTasks can't name an empty connector.")
            if any(t.task < 0 for t in ct.tasks):
                raise invalid("ConnectorsAndTasks task numbers must be >= 0.")
        if r.server_assignor is not None:
            raise _err(_E.unsupported_assignor,
                       f"ServerAssignor {r.server_assignor} is not supported: connect groups use "
                       f"client-side assignors only.")

    def _downgrades_when_fenced(self, r: ConnectGroupHeartbeatRequest) -> bool:
        return r.member_epoch != 0

    def _fenced_epoch_message(self, r: ConnectGroupHeartbeatRequest,
                              existing: ConnectGroupMember) -> str:
        return (f"The worker has a "
                f"{'greater' if r.member_epoch > existing.member_epoch else 'smaller'} "
                f"epoch ({r.member_epoch}) than the one known by the group coordinator "
                f"({existing.member_epoch}). The worker must abandon all its connectors "
                f"and tasks and rejoin.")

    def _reports_subset(self, member: ConnectGroupMember, r: ConnectGroupHeartbeatRequest) -> bool:
        if r.connectors_and_tasks is None:
            return False
        for c, ts in from_wire(r.connectors_and_tasks).items():
            if not ts <= member.assigned.get(c, frozenset()):
                return False
        return True

    def _replacement(self, member_id: str,
                     replaced: ConnectGroupMember | None) -> ConnectGroupMember:
        if replaced is not None:
            return ConnectGroupMember(member_id, assigned=replaced.assigned, error=replaced.error,
                                      metadata_version=replaced.metadata_version,
                                      metadata_bytes=replaced.metadata_bytes)
        return ConnectGroupMember(member_id)

    def _apply_request(self, m: ConnectGroupMember, r: ConnectGroupHeartbeatRequest) -> ConnectGroupMember:
        """The worker with the request's non-null fields applied (null = unchanged)."""
        changes: dict[str, Any] = {}
        if r.instance_id is not None and r.instance_id != m.instance_id:
            changes["instance_id"] = r.instance_id
        if r.rebalance_timeout_ms > 0 and r.rebalance_timeout_ms != m.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = r.rebalance_timeout_ms
        if r.client_assignors is not None and r.client_assignors != m.client_assignors:
            changes["client_assignors"] = r.client_assignors
        if r.url is not None and r.url != m.url:
            changes["url"] = r.url
        if r.client_id != m.client_id:
            changes["client_id"] = r.client_id
        if r.client_host != m.client_host:
            changes["client_host"] = r.client_host
        return replace(m, **changes) if changes else m

    def _inputs_changed(self, updated: ConnectGroupMember, reference: ConnectGroupMember) -> bool:
        # a url change bumps nothing: it is no input of the assignment
        return updated.client_assignors != reference.client_assignors

    def _handover_record(self, group: ConnectGroup, member_id: str,
                         replaced: ConnectGroupMember) -> Record | None:
        previous = group.target_assignment.get(replaced.member_id)
        if previous is None:
            return None
        return connect_target_member_record(group.group_id, member_id, _target_value(previous))

    def _metadata_value(self, m: ConnectGroupMember) -> ConnectGroupMemberMetadataValue:
        return member_metadata_value(m)

    def _member_metadata_record(self, group_id: str, m: ConnectGroupMember) -> Record:
        return connect_member_metadata_record(group_id, m.member_id, member_metadata_value(m))

    def _request_target(self, group: ConnectGroup) -> None:
        # the chosen worker computes the target when a new one is needed
        self.client.request(group)

    def _joining(self, current: ConnectGroupMember, base: ConnectGroupMember) -> ConnectGroupMember:
        return replace(current, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE,
                       assigned=base.assigned, pending_revocation={}, error=base.error,
                       metadata_version=base.metadata_version, metadata_bytes=base.metadata_bytes)

    def _owned(self, r: ConnectGroupHeartbeatRequest) -> dict[str, frozenset[int]] | None:
        return None if r.connectors_and_tasks is None else from_wire(r.connectors_and_tasks)

    def _heartbeat_assignment(self, group: ConnectGroup, r: ConnectGroupHeartbeatRequest,
                              existing: ConnectGroupMember | None,
                              reconciled: ConnectGroupMember) -> ConnectHeartbeatAssignment | None:
        if not (r.connectors_and_tasks is not None or r.member_epoch == 0 or existing is None
                or existing.assigned != reconciled.assigned
                or existing.member_epoch != reconciled.member_epoch):
            return None
        pending = {}
        if reconciled.state is MemberState.UNRELEASED_PARTITIONS:
            pending = minus(group.target_of(reconciled.member_id).items, reconciled.assigned)
        return ConnectHeartbeatAssignment(
            reconciled.error, to_wire(reconciled.assigned), to_wire(pending),
            reconciled.metadata_version, reconciled.metadata_bytes)

    def _reconcile(self, group: ConnectGroup, member: ConnectGroupMember,
                   owned: Mapping[str, frozenset[int]] | None) -> ConnectGroupMember:
        epoch = group.assignment_epoch
        if member.member_epoch < 0 or member.is_reconciled_to(epoch):
            return member
        target = group.target_of(member.member_id)
        step = reconcile_items(
            member.member_id, member.state, member.member_epoch, member.previous_member_epoch,
            member.assigned, member.pending_revocation, epoch, target.items, group.owner_of,
            lambda revoking: owns_any_items(owned, revoking))
        if step is None:
            return member
        updated = replace(member, state=step.state, member_epoch=step.member_epoch,
                          previous_member_epoch=step.previous_member_epoch,
                          assigned=dict(step.assigned),
                          pending_revocation=dict(step.pending_revocation))
        if step.member_epoch == epoch:  # at the target epoch: the target's error and metadata
            updated = replace(updated, error=target.error, metadata_version=target.metadata_version,
                              metadata_bytes=target.metadata_bytes)
        self._write_current_assignment(group, updated)
        return updated

    def _current_assignment_record(self, group_id: str, m: ConnectGroupMember) -> Record:
        return connect_current_assignment_record(group_id, m.member_id,
                                                 current_assignment_value(m))

    def _temporary_leave_record(self, group_id: str, member: ConnectGroupMember) -> Record:
        return connect_current_assignment_record(
            group_id, member.member_id, ConnectGroupCurrentMemberAssignmentValue(
                LEAVE_GROUP_STATIC_MEMBER_EPOCH, member.member_epoch, int(member.state),
                member.assigned, {}, member.error, member.metadata_version,
                member.metadata_bytes))

    # ------------------------------------------------------------------ remove, fence, migrate

    def _removal_records(self, group: ConnectGroup, member_id: str,
                         keep_target: bool) -> list[Record]:
        gid = group.group_id
        records = [connect_current_assignment_record(gid, member_id, None)]
        if not keep_target and member_id in group.target_assignment:
            records.append(connect_target_member_record(gid, member_id, None))
        records.append(connect_member_metadata_record(gid, member_id, None))
        return records

    def _after_removal(self, group: ConnectGroup) -> None:
        # the departed workers keep their target entries until the next installed target
        self._bump(group)
        self.client.request(group)

    def _downgrade_refusal(self, group: ConnectGroup, leaving: set[str]) -> str | None:
        return downgrade_refusal(group, leaving, self.shard.config)

    def _to_classic(self, group: ConnectGroup, leaving: set[str]) -> ClassicGroupMetadataValue:
        return connect_to_classic(group, leaving, self.shard.now)

    def _upgrade_refusal(self, classic: ClassicGroup) -> str | None:
        return upgrade_refusal(classic, self.shard.config)

    def _convert_classic(self, classic: ClassicGroup) -> ConnectUpgrade:
        return classic_to_connect(classic)

    def _malformed(self, e: MigrationError) -> str:
        return f"its Connect protocol metadata or assignment is malformed ({e})"

    def _log_upgrade(self, classic: ClassicGroup, upgrade: ConnectUpgrade) -> None:
        log.info("[%s] upgrading the classic group at generation %d to a connect group "
                 "(connectors %s at config offset %d)", classic.group_id, classic.generation_id,
                 sorted(upgrade.connectors.items()), upgrade.config_offset)

    def _bump(self, group: ConnectGroup) -> None:
        self.append(connect_group_epoch_record(group.group_id, group.group_epoch + 1))
        log.info("[%s] bumped group epoch to %d", group.group_id, group.group_epoch)

    # ------------------------------------------------------------------ prepare / install

    def _prepare(self, r: ConnectGroupPrepareAssignmentRequest,
                 now: int) -> ConnectGroupPrepareAssignmentResponse:
        check_ids(r.group_id, r.member_id, r.member_epoch)
        group = self._existing(r.group_id)
        self.client.check_request(group, r.member_id, r.member_epoch)
        name = self.client.assignor(group)
        assert name is not None  # every worker advertises client assignors
        members = []
        for mid in sorted(group.members):
            m = group.members[mid]
            if m.classic is not None:  # online migration: the Connect version and metadata it prefers
                first, meta = m.classic.supported_protocols[0]
                prepared = ConnectPreparedAssignor(protocol_version(first), 0, meta)
            else:
                a = assignor_in(m.client_assignors, name)
                assert a is not None
                prepared = ConnectPreparedAssignor(a.version, a.reason, a.metadata)
            members.append(ConnectPreparedMember(
                mid, m.member_epoch, m.instance_id, m.url, prepared,
                to_wire(group.target_of(mid).items)))
        departed = tuple(ConnectDepartedMember(mid, to_wire(t.items))
                         for mid, t in sorted(group.target_assignment.items())
                         if mid not in group.members)
        self.client.remember(group, Snapshot(
            r.member_id, group.group_epoch, name,
            {mid: m.instance_id for mid, m in group.members.items()}, group.config.items()))
        return ConnectGroupPrepareAssignmentResponse(
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            assignor_name=name, members=tuple(members), departed_members=departed,
            config_offset=group.config.config_offset,
            connectors=tuple(ConnectorConfig(n, c)
                             for n, c in sorted(group.config.connectors.items())))

    def _install(self, r: ConnectGroupInstallAssignmentRequest,
                 now: int) -> ConnectGroupInstallAssignmentResponse:
        check_ids(r.group_id, r.member_id, r.member_epoch)
        if r.scheduled_rebalance_delay_ms < 0:
            raise _err(_E.invalid_request, "ScheduledRebalanceDelayMs must be >= 0.")
        group = self._existing(r.group_id)
        self.client.check_request(group, r.member_id, r.member_epoch)
        snapshot = self.client.snapshot_for_install(group, r.member_id, r.group_epoch)
        gid = group.group_id
        if r.error:
            log.warning("[%s] worker %s's assignor failed with error %d at epoch %d; the target "
                        "assignment is kept", gid, r.member_id, r.error, snapshot.group_epoch)
            self.append(connect_target_metadata_record(gid, ConnectGroupTargetAssignmentMetadataValue(
                group.assignment_epoch, r.error, group.scheduled_rebalance_delay_ms)))
            self.client.failed(group, snapshot)
            return ConnectGroupInstallAssignmentResponse()
        validate_install(snapshot, [(m.member_id, wire_items(m.connectors_and_tasks))
                                    for m in r.members],
                         allow_unassigned=r.scheduled_rebalance_delay_ms > 0, show=show_item)
        listed = {m.member_id: m for m in r.members}
        targets: dict[str, ConnectMemberTarget] = {}
        for mid in sorted(snapshot.members):
            to = successor(group, snapshot, mid) or mid  # a worker that left since keeps its entry
            im = listed.get(mid)
            targets[to] = (ConnectMemberTarget() if im is None else ConnectMemberTarget(
                from_wire(im.connectors_and_tasks), im.error, im.metadata_version,
                im.metadata_bytes))
        for mid in sorted(group.target_assignment):
            if mid not in targets:
                self.append(connect_target_member_record(gid, mid, None))
        for mid in sorted(targets):
            if not targets[mid].same_as(group.target_assignment.get(mid)):
                self.append(connect_target_member_record(gid, mid, _target_value(targets[mid])))
        self.append(connect_target_metadata_record(gid, ConnectGroupTargetAssignmentMetadataValue(
            snapshot.group_epoch, 0, r.scheduled_rebalance_delay_ms)))
        log.info("[%s] worker %s installed the target assignment of epoch %d (delay %d ms)", gid,
                 r.member_id, snapshot.group_epoch, r.scheduled_rebalance_delay_ms)
        self.client.installed(group)
        return ConnectGroupInstallAssignmentResponse()

    # ------------------------------------------------------------------ admin

    def _configure(self, r: ConnectGroupConfigRequest, now: int) -> ConnectGroupConfigResponse:
        gid = r.group_id
        if not gid or not gid.strip():
            raise _err(_E.invalid_request, "GroupId can't be empty.")
        group = self._group(gid)
        old = group.config if group is not None else ConnectorsConfig()
        connectors = dict(old.connectors)
        for op in r.ops:
            name = op.connector
            if not name or not name.strip():
                raise _err(_E.invalid_request, "The connector name can't be empty.")
            if op.op in ("create", "update") and not 0 <= op.task_count <= MAX_TASKS:
                raise _err(_E.invalid_request,
                           f"The task count of connector {name} must be within [0, {MAX_TASKS}] "
                           f"(got {op.task_count}).")
            if op.op == "create":
                if name in connectors:
                    raise _err(_E.invalid_request, f"Connector {name} already exists.")
                connectors[name] = op.task_count
            elif op.op in ("update", "delete"):
                if name not in connectors:
                    raise _err(_E.resource_not_found, f"Connector {name} does not exist.")
                if op.op == "update":
                    connectors[name] = op.task_count
                else:
                    del connectors[name]
            else:
                raise _err(_E.invalid_request, f"Unknown connector operation {op.op!r}.")
        if connectors == dict(old.connectors):
            return ConnectGroupConfigResponse(
                group_epoch=group.group_epoch if group is not None else 0,
                config_offset=old.config_offset)
        self.append(connect_connectors_tasks_record(gid, old.config_offset + 1, connectors))
        group = self._group(gid)
        assert group is not None
        log.info("[%s] connectors configuration at offset %d: %s", gid,
                 group.config.config_offset, sorted(connectors.items()))
        if group.members:
            self._bump(group)
            self.client.request(group)
        return ConnectGroupConfigResponse(group_epoch=group.group_epoch,
                                          config_offset=group.config.config_offset)

    def _describe(self, r: ConnectGroupDescribeRequest, now: int) -> ConnectGroupDescribeResponse:
        out = []
        for gid in r.group_ids:
            g = self.shard.groups.get(gid)
            if g is None:
                out.append(DescribedConnectGroup(gid, _E.group_id_not_found,
                                                 f"Group {gid} not found."))
                continue
            if not isinstance(g, ConnectGroup):
                out.append(DescribedConnectGroup(
                    gid, _E.group_id_not_found,
                    f"Group {gid} is not a connect group (it is a {g.group_type} group)."))
                continue
            members = tuple(
                DescribedConnectMember(
                    member_id=mid, instance_id=m.instance_id, url=m.url,
                    member_epoch=m.member_epoch, state=m.state.name, client_id=m.client_id,
                    client_host=m.client_host, client_assignors=m.client_assignors,
                    assignment=to_wire(m.assigned), pending_revocation=to_wire(m.pending_revocation),
                    target_assignment=to_wire(g.target_of(mid).items))
                for mid, m in sorted(g.members.items()))
            out.append(DescribedConnectGroup(
                gid, group_state=g.state_name(), group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch, assignment_error=g.assignment_error,
                scheduled_rebalance_delay_ms=g.scheduled_rebalance_delay_ms,
                assignor_name=self.client.assignor(g) or "", assigner=self.client.assigner(gid),
                config_offset=g.config.config_offset,
                connectors=tuple(ConnectorConfig(n, c)
                                 for n, c in sorted(g.config.connectors.items())),
                members=members))
        return ConnectGroupDescribeResponse(tuple(out))


def _target_value(t: ConnectMemberTarget) -> ConnectGroupTargetAssignmentMemberValue:
    return ConnectGroupTargetAssignmentMemberValue(t.items, t.error, t.metadata_version,
                                                   t.metadata_bytes)
