"""Consumer groups on the KIP-848 protocol: the handlers, replay and timers of the group type.

Implements KIP-848's "ConsumerGroupHeartbeat API", "Static Membership", "Group Epoch - Trigger
a rebalance", "Assignment Epoch - Compute the group assignment", "Member Epoch -
Reconciliation", "Fail Over" and "ConsumerGroupDescribe API", with these choices where the
spec's diff text leaves two readings:

- A heartbeat with epoch != 0 for a group that does not exist answers UNKNOWN_MEMBER_ID (as
  Kafka 4.x; librdkafka treats GROUP_ID_NOT_FOUND in a heartbeat as fatal).
- FENCED_MEMBER_EPOCH removes the member from the group (spec, request handling step 3); a
  member rejoining with epoch 0 under a member id the group still has is fenced and re-added
  in the same request, unless it is the lost-response case.
- The lost-response case: a smaller epoch equal to the member's previous epoch is accepted
  when the owned partitions it reports are a subset of its assigned partitions.
- SubscribedTopicNames and SubscribedTopicRegex may not both be non-empty in one request; on
  a join (epoch 0) at least one of them must be given.
- A static member replaced by a new member id (after a temporary leave, epoch -2) hands its
  current and target assignment to the new id without a group epoch bump, unless the new
  member's subscription differs.
- The rebalance timeout is armed while a member is in UNREVOKED_PARTITIONS, afresh for each
  epoch at which it must revoke; when it fires, the member is fenced.
- Client-side assignment (issue #3, ``client_assignment.py``): a group whose members all advertise
  client assignors gets its target from a chosen member (PrepareAssignment / InstallAssignment),
  not from a server assignor; a change of a member's client assignors (list, ranges, reason,
  version or metadata) bumps the group epoch.
- Online migration (issue #4, ``migration.py``, ``classic_members.py``): a heartbeat at epoch 0
  for a non-empty classic group of protocol type ``consumer`` converts it when
  ``group.consumer.migration.policy`` allows the upgrade (else GROUP_ID_NOT_FOUND, as before);
  the conversion is written even if the joining member is then refused (e.g.
  GROUP_MAX_SIZE_REACHED): the group keeps working with its classic members. A static member
  joining with the instance id of a member that uses the classic protocol replaces it at once
  (upstream: no temporary leave needed when either side uses the classic protocol). Removing
  members (leave, session or rebalance timeout, classic LeaveGroup) converts the group back to a
  classic group when only classic members remain and the policy allows the downgrade; a member
  fenced for a wrong epoch in a heartbeat never triggers it (it rejoins at once).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from uuid import UUID

from groupcoord.coordinator.assignors.base import PartitionAssignor
from groupcoord.coordinator.classic_group import ClassicGroup
from groupcoord.coordinator.classic_members import ClassicMembers
from groupcoord.coordinator.client_assignment import ConsumerClientAssignment, check_assignors
from groupcoord.coordinator.config import CoordinatorConfig, GroupConfig
from groupcoord.coordinator.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    joining,
)
from groupcoord.coordinator.membership import Resolved, resolve_member
from groupcoord.coordinator.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    HeartbeatAssignment,
    TopicPartitions,
)
from groupcoord.coordinator.migration import (
    MigrationError,
    classic_to_consumer,
    consumer_to_classic,
    downgrade_refusal,
    member_metadata_value,
    upgrade_refusal,
)
from groupcoord.coordinator.reconciliation import reconcile
from groupcoord.coordinator.records import (
    Assignment,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    MemberKey,
    Record,
    RecordType,
    current_assignment_record,
    current_assignment_tombstone,
    group_epoch_record,
    group_epoch_tombstone,
    member_metadata_record,
    member_metadata_tombstone,
    partition_metadata_record,
    partition_metadata_tombstone,
    target_assignment_metadata_tombstone,
    target_member_record,
    target_member_tombstone,
)
from groupcoord.coordinator.subscription import compile_regex, subscribed_topics
from groupcoord.coordinator.target_assignment import (
    preferred_server_assignor,
    target_assignment_records,
)
from groupcoord.coordinator.timers import TimerKey, Timers
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.shard import Shard

log = logging.getLogger(__name__)

SESSION = "session"
REBALANCE = "rebalance"

_E = ErrorCode

CONSUMER_RECORD_TYPES = (
    RecordType.CONSUMER_GROUP_METADATA,
    RecordType.CONSUMER_GROUP_PARTITION_METADATA,
    RecordType.CONSUMER_GROUP_MEMBER_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
)


def _err(code: ErrorCode, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


def _sorted_tps(a: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(a.items(), key=lambda kv: kv[0].bytes) if ps)


#: Assignment mappings are never mutated and are shared until a member's assignment changes,
#: so a full heartbeat's response body is built once per mapping object (id + identity check).
_TPS_CACHE: dict[int, tuple[Assignment, tuple[TopicPartitions, ...]]] = {}


def _response_tps(a: Assignment) -> tuple[TopicPartitions, ...]:
    hit = _TPS_CACHE.get(id(a))
    if hit is not None and hit[0] is a:
        return hit[1]
    tps = _sorted_tps(a)
    if len(_TPS_CACHE) >= 100_000:
        _TPS_CACHE.clear()
    _TPS_CACHE[id(a)] = (a, tps)
    return tps


def _minus(a: Assignment, b: Assignment) -> dict[UUID, frozenset[int]]:
    out = {}
    for t, ps in a.items():
        rest = ps - b.get(t, frozenset())
        if rest:
            out[t] = rest
    return out


class ConsumerGroupManager:
    """The consumer group type of one shard: registers its handlers, records and timers."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        shard.register_handler(ConsumerGroupHeartbeatRequest, self._consumer_group_heartbeat)
        shard.register_handler(ConsumerGroupDescribeRequest, self._consumer_group_describe)
        for rtype in CONSUMER_RECORD_TYPES:
            shard.register_replayer(rtype, self.replay)
        shard.register_timer(SESSION, self._session_expired)
        shard.register_timer(REBALANCE, self._rebalance_timed_out)
        # Client-side assignment (issue #3): Prepare/InstallAssignment handlers, assigner deadlines.
        self.client = ConsumerClientAssignment(shard)
        # Online migration (issue #4): classic members inside consumer groups.
        self.classic_members = ClassicMembers(self)

    # ------------------------------------------------------------------ shard plumbing

    @property
    def config(self) -> CoordinatorConfig:
        return self.shard.config

    @property
    def metadata(self) -> MetadataImage:
        return self.shard.metadata

    @property
    def assignors(self) -> Mapping[str, PartitionAssignor]:
        return self.shard.assignors

    @property
    def timers(self) -> Timers:
        return self.shard.timers

    @property
    def _now(self) -> int:
        return self.shard.now

    def _member_ids(self) -> str:
        return self.shard.new_member_id()

    def append(self, record: Record) -> None:
        self.shard.append(record)

    def _schedule(self, key: TimerKey, deadline: int, payload: Any = None) -> None:
        self.shard.schedule(key, deadline, payload)

    def _cancel(self, key: TimerKey) -> None:
        self.shard.cancel(key)

    def group_config(self, group_id: str) -> GroupConfig:
        return self.shard.group_config(group_id)

    def _group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group ``group_id``; GROUP_ID_NOT_FOUND if the id has another type."""
        g = self.shard.groups.get(group_id)
        if g is None or isinstance(g, ConsumerGroup):
            return g
        raise _err(_E.group_id_not_found,
                   f"Group {group_id} is not a consumer group (it is a {g.group_type} group).")

    # ------------------------------------------------------------------ replay

    def replay(self, record: Record) -> None:
        key = record.key
        value = record.value
        rtype = key.type
        gid = key.group_id
        groups = self.shard.groups
        existing = groups.get(gid)
        group = existing if isinstance(existing, ConsumerGroup) else None
        if existing is not None and group is None:
            raise ValueError(f"consumer record {rtype.name} for {existing.group_type} group {gid}")
        if rtype is RecordType.CONSUMER_GROUP_METADATA:
            if value is None:
                groups.pop(gid, None)
                return
            if group is None:
                group = ConsumerGroup(gid)
                groups[gid] = group
            group.group_epoch = value.epoch  # type: ignore[union-attr]
            return
        if group is None:
            if value is None:
                return
            group = ConsumerGroup(gid)
            groups[gid] = group
        if rtype is RecordType.CONSUMER_GROUP_PARTITION_METADATA:
            group.subscription_metadata = (
                {} if value is None else {t.name: t for t in value.topics})  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = 0 if value is None else value.assignment_epoch  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            assert isinstance(key, MemberKey)
            if value is None:
                group.target_assignment.pop(key.member_id, None)
            else:
                group.target_assignment[key.member_id] = value.partitions  # type: ignore[union-attr]
        elif rtype is RecordType.CONSUMER_GROUP_MEMBER_METADATA:
            assert isinstance(key, MemberKey)
            if value is None:
                group.remove_member(key.member_id)
                return
            v: ConsumerGroupMemberMetadataValue = value  # type: ignore[assignment]
            old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
            group.put_member(replace(
                old, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
                client_host=v.client_host, subscribed_topic_names=v.subscribed_topic_names,
                subscribed_topic_regex=v.subscribed_topic_regex, server_assignor=v.server_assignor,
                rebalance_timeout_ms=v.rebalance_timeout_ms, client_assignors=v.client_assignors,
                classic=v.classic_member))
        elif rtype is RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            assert isinstance(key, MemberKey)
            old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
            if value is None:
                group.put_member(replace(
                    old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, state=MemberState.STABLE,
                    assigned_partitions={}, partitions_pending_revocation={}))
                return
            a: ConsumerGroupCurrentMemberAssignmentValue = value  # type: ignore[assignment]
            group.put_member(replace(
                old, member_epoch=a.member_epoch, previous_member_epoch=a.previous_member_epoch,
                state=MemberState(a.state), assigned_partitions=a.assigned_partitions,
                partitions_pending_revocation=a.partitions_pending_revocation))

    # ------------------------------------------------------------------ timers and lifecycle

    def _session_expired(self, key: TimerKey, payload: Any) -> None:
        _, gid, mid = key
        found = self.shard.groups.get(gid)
        group = found if isinstance(found, ConsumerGroup) else None
        member = None if group is None else group.members.get(mid)
        if group is not None and member is not None:
            log.info("[%s] member %s session timed out", gid, mid)
            self._fence_member(group, member)

    def _rebalance_timed_out(self, key: TimerKey, payload: Any) -> None:
        _, gid, mid = key
        found = self.shard.groups.get(gid)
        group = found if isinstance(found, ConsumerGroup) else None
        member = None if group is None else group.members.get(mid)
        if (group is not None and member is not None
                and member.state is MemberState.UNREVOKED_PARTITIONS
                and member.member_epoch == payload):
            log.info("[%s] member %s did not revoke within its rebalance timeout", gid, mid)
            self._fence_member(group, member)

    def on_metadata_update(self) -> None:
        """A new topic image: bump the epoch of every group whose subscribed topics changed."""
        for gid in sorted(self.shard.groups):
            group = self.shard.groups[gid]
            if isinstance(group, ConsumerGroup) and group.members:
                self._maybe_update_subscription_metadata(group, force_bump=False)

    def on_loaded(self) -> None:
        """Load duties ("Fail Over"): arm session timeouts, re-check metadata and regexes,
        compute a pending target assignment."""
        now = self._now
        for gid in sorted(self.shard.groups):
            group = self.shard.groups[gid]
            if not isinstance(group, ConsumerGroup):
                continue
            timeout = self.group_config(gid).session_timeout_ms
            for mid in sorted(group.members):
                m = group.members[mid]
                self._schedule((SESSION, gid, mid), now + (
                    timeout if m.classic is None else m.classic.session_timeout_ms))
                if m.state is MemberState.UNREVOKED_PARTITIONS and m.member_epoch >= 0:
                    self._schedule((REBALANCE, gid, mid), now + max(m.rebalance_timeout_ms, 0),
                                   m.member_epoch)
            if group.members:
                self._maybe_update_subscription_metadata(group, force_bump=False)
                if group.group_epoch > group.assignment_epoch:
                    self._compute_target_assignment(group, dict(group.members),
                                                    dict(group.target_assignment))

    def delete_group(self, group: ConsumerGroup) -> None:
        """Tombstones for an empty consumer group (its offsets are the shard's business)."""
        gid = group.group_id
        self.client.forget(gid)  # issue #3: drop the group's client-side assignment soft state
        for mid in sorted(group.target_assignment):
            self.append(target_member_tombstone(gid, mid))
        self.append(target_assignment_metadata_tombstone(gid))
        self.append(partition_metadata_tombstone(gid))
        self.append(group_epoch_tombstone(gid))

    # ------------------------------------------------------------------ handlers

    def _validate_heartbeat(self, r: ConsumerGroupHeartbeatRequest) -> None:
        def empty(s: str | None) -> bool:
            return s is not None and not s.strip()

        if not r.group_id or not r.group_id.strip():
            raise _err(_E.invalid_request, "GroupId can't be empty.")
        if empty(r.instance_id):
            raise _err(_E.invalid_request, "InstanceId can't be empty.")
        if empty(r.rack_id):
            raise _err(_E.invalid_request, "RackId can't be empty.")
        epoch = r.member_epoch
        if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _err(_E.invalid_request, f"MemberEpoch {epoch} is invalid.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and r.instance_id is None:
            raise _err(_E.invalid_request, "InstanceId can't be null when MemberEpoch is -2.")
        if (epoch != 0 or r.version >= 1) and (not r.member_id or not r.member_id.strip()):
            raise _err(_E.invalid_request, "MemberId can't be empty.")
        if epoch == 0:
            if r.rebalance_timeout_ms <= 0:
                raise _err(_E.invalid_request,
                           "RebalanceTimeoutMs must be provided (> 0) in the first request.")
            if r.topic_partitions is None or len(r.topic_partitions) != 0:
                raise _err(_E.invalid_request, "TopicPartitions must be empty when (re-)joining.")
            if r.subscribed_topic_names is None and r.subscribed_topic_regex is None:
                raise _err(_E.invalid_request, "SubscribedTopicNames or SubscribedTopicRegex "
                                               "must be set in the first request.")
        elif r.rebalance_timeout_ms == 0 or r.rebalance_timeout_ms < -1:
            raise _err(_E.invalid_request, "RebalanceTimeoutMs must be larger than zero.")
        if r.subscribed_topic_names and r.subscribed_topic_regex:
            raise _err(_E.invalid_request,
                       "SubscribedTopicNames and SubscribedTopicRegex cannot be used together.")
        if r.subscribed_topic_names is not None and any(
                not n or not n.strip() for n in r.subscribed_topic_names):
            raise _err(_E.invalid_request, "SubscribedTopicNames can't contain empty names.")
        if r.subscribed_topic_regex:
            compile_regex(r.subscribed_topic_regex)
        if r.server_assignor is not None and r.client_assignors:
            raise _err(_E.invalid_request, "ServerAssignor and ClientAssignors cannot be used together.")
        for a in r.client_assignors or ():
            if not a.name or not a.name.strip():
                raise _err(_E.invalid_request, "Assignor.Name must be non-empty.")
            if a.minimum_version < -1:
                raise _err(_E.invalid_request, "Assignor.MinimumVersion must be >= -1.")
            if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
                raise _err(_E.invalid_request,
                           "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion.")
            if not a.minimum_version <= a.version <= a.maximum_version:
                raise _err(_E.invalid_request, "Assignor.Version must be within "
                                               "[Assignor.MinimumVersion, Assignor.MaximumVersion].")
        if r.server_assignor is not None and (
                r.server_assignor not in self.config.consumer_assignors
                or r.server_assignor not in self.assignors):
            raise _err(_E.unsupported_assignor,
                       f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                       f"{', '.join(self.config.consumer_assignors)}.")

    def _consumer_group_heartbeat(self, r: ConsumerGroupHeartbeatRequest,
                                  now: int) -> ConsumerGroupHeartbeatResponse:
        self._validate_heartbeat(r)
        if r.member_epoch < 0:
            return self._consumer_group_leave(r)

        gid = r.group_id
        # An empty classic group converts (as upstream): its id is free for this group. A
        # non-empty one converts when the migration policy allows it (issue #4).
        if r.member_epoch == 0 and not self.shard.classic.maybe_delete_empty_group(gid):
            self._maybe_upgrade(gid)
        group = self._group(gid)
        if group is None and r.member_epoch != 0:
            raise _err(_E.unknown_member_id, f"Group {gid} not found.")
        members: Mapping[str, ConsumerGroupMember] = group.members if group else {}
        member_id = r.member_id
        if not member_id:  # v0 join: the coordinator names the member
            member_id = self._member_ids()
            while member_id in members:
                member_id = self._member_ids()

        # ---- 1. find or create the member
        classic_static = (group.static_member(r.instance_id)
                          if group is not None and r.instance_id is not None
                          and r.member_epoch == 0 else None)
        resolved: Resolved[ConsumerGroupMember]
        if (classic_static is not None and classic_static.classic is not None
                and classic_static.member_id != member_id):
            # Issue #4: a static member that used the classic protocol is replaced at once.
            resolved = Resolved(None, classic_static)
        else:
            resolved = resolve_member(members, group.static_member if group else lambda _: None,
                                      member_id, r.instance_id, r.member_epoch,
                                      self.config.consumer_max_size, gid,
                                      noun="member", group_noun="consumer group")
        existing: ConsumerGroupMember | None = resolved.existing
        replaced: ConsumerGroupMember | None = resolved.replaced
        if existing is not None and existing.classic is not None and r.member_epoch != 0:
            raise _err(_E.unknown_member_id, f"Member {member_id} of group {gid} uses the "
                                             f"classic protocol.")

        # Client-side assignment (issue #3): UNSUPPORTED_ASSIGNOR when the member's client
        # assignors share no name with, or no version range overlap with, the other members'.
        if r.client_assignors and group is not None:
            check_assignors(group.members, (member_id, replaced.member_id if replaced else ""),
                            r.client_assignors)

        if existing is not None and not self._epoch_is_valid(existing, r):
            assert group is not None
            self._fence_member(group, existing, allow_downgrade=False)
            if r.member_epoch != 0:
                return ConsumerGroupHeartbeatResponse(
                    error_code=_E.fenced_member_epoch,
                    error_message=(
                        f"The consumer group member has a "
                        f"{'greater' if r.member_epoch > existing.member_epoch else 'smaller'} "
                        f"member epoch ({r.member_epoch}) than the one known by the group "
                        f"coordinator ({existing.member_epoch}). The member must abandon all its "
                        f"partitions and rejoin."))
            existing = None  # a rejoin at epoch 0: fenced above, joins again below
            group = self._group(gid)

        is_new = existing is None
        if existing is not None:
            base = existing
        elif replaced is not None:
            base = ConsumerGroupMember(member_id, assigned_partitions=replaced.assigned_partitions)
        else:
            base = ConsumerGroupMember(member_id)

        # ---- 2. update the member's subscription
        updated = _apply_request(base, r)
        reference = replaced if replaced is not None else (None if is_new else existing)
        bump = is_new and replaced is None
        if reference is not None and updated is not reference and (
                updated.subscribed_topic_names != reference.subscribed_topic_names
                or updated.subscribed_topic_regex != reference.subscribed_topic_regex
                or updated.server_assignor != reference.server_assignor
                # issue #3: a changed client assignor (reason, metadata, ...) asks for a rebalance
                or updated.client_assignors != reference.client_assignors):
            bump = True

        if replaced is not None:
            assert group is not None
            log.info("[%s] static member %s with instance id %s replaces member %s", gid,
                     member_id, r.instance_id, replaced.member_id)
            previous_target = group.target_of(replaced.member_id)
            self._remove_member_records(group, replaced)
        else:
            previous_target = None

        if is_new or (updated is not existing and _metadata_changed(existing, updated)):
            self.append(member_metadata_record(gid, member_id, _metadata_value(updated)))
        group = self._group(gid)
        assert group is not None

        if replaced is not None and previous_target is not None:
            self.append(target_member_record(gid, member_id, previous_target))
        if bump:  # a new member or a changed subscription: the subscribed topics may differ
            self._maybe_update_subscription_metadata(group, force_bump=True)

        # ---- 3. target assignment
        if group.group_epoch > group.assignment_epoch:
            self._compute_target_assignment(group, dict(group.members),
                                            dict(group.target_assignment))

        # ---- 4. reconcile the member
        current = group.members[member_id]
        if existing is None:
            current = joining(current, base.assigned_partitions)
        # issue #3: a group no member can compute for does not reconcile (see step 5)
        fatal = self.client.fatal(group)
        reconciled = current if fatal else self._reconcile(group, current, r.topic_partitions)
        if existing is None and reconciled is current:
            # Persist the new member's assignment state even when reconciliation kept it.
            self._write_current_assignment(group, reconciled)

        # ---- 5. timers and response
        cfg = self.group_config(gid)
        self._schedule((SESSION, gid, member_id), now + cfg.session_timeout_ms)

        before = existing.assigned_partitions if existing is not None else None
        send_assignment = (r.topic_partitions is not None or r.member_epoch == 0
                           or before != reconciled.assigned_partitions)
        assignment = None
        if send_assignment:
            pending: tuple[TopicPartitions, ...] = ()
            if reconciled.state is MemberState.UNRELEASED_PARTITIONS:
                pending = _sorted_tps(_minus(group.target_of(member_id),
                                             reconciled.assigned_partitions))
            assignment = HeartbeatAssignment(_response_tps(reconciled.assigned_partitions), pending)
        # Client-side assignment (issue #3): no member can compute the target -> the group's
        # fatal UNSUPPORTED_ASSIGNOR; the chosen member is told to compute it.
        if fatal is not None:
            return ConsumerGroupHeartbeatResponse(error_code=_E.unsupported_assignor,
                                                  error_message=fatal)
        return ConsumerGroupHeartbeatResponse(
            member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms, assignment=assignment,
            should_compute_assignment=self.client.should_compute(group, member_id))

    def _epoch_is_valid(self, member: ConsumerGroupMember, r: ConsumerGroupHeartbeatRequest) -> bool:
        received = r.member_epoch
        if received == member.member_epoch:
            return True
        if received > member.member_epoch:
            return False
        if received != member.previous_member_epoch or r.topic_partitions is None:
            return False
        assigned = member.assigned_partitions
        for tp in r.topic_partitions:
            ps = assigned.get(tp.topic_id)
            if ps is None and tp.partitions:
                return False
            if ps is not None and not ps.issuperset(tp.partitions):
                return False
        return True

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   owned: tuple[TopicPartitions, ...] | None) -> ConsumerGroupMember:
        epoch = group.assignment_epoch
        if member.member_epoch < 0 or member.is_reconciled_to(epoch):
            return member
        updated = reconcile(member, epoch, group.target_of(member.member_id), group.owner_of, owned)
        if updated is not member:
            self._write_current_assignment(group, updated)
        return updated

    def _write_current_assignment(self, group: ConsumerGroup, m: ConsumerGroupMember) -> None:
        gid = group.group_id
        self.append(current_assignment_record(gid, m.member_id, ConsumerGroupCurrentMemberAssignmentValue(
            m.member_epoch, m.previous_member_epoch, int(m.state), m.assigned_partitions,
            m.partitions_pending_revocation)))
        key = (REBALANCE, gid, m.member_id)
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            # Armed once per epoch at which the member must revoke: a member that acknowledged
            # one revocation and must revoke again at its next epoch gets a fresh deadline.
            if key not in self.timers or self.timers.payload(key) != m.member_epoch:
                self._schedule(key, self._now + max(m.rebalance_timeout_ms, 0), m.member_epoch)
        else:
            self._cancel(key)

    def _consumer_group_leave(self, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        gid = r.group_id
        group = self._group(gid)
        if group is None:
            raise _err(_E.unknown_member_id, f"Group {gid} not found.")
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise _err(_E.unknown_member_id,
                           f"Member {r.member_id} is not a member of group {gid}.")
            log.info("[%s] member %s left the consumer group", gid, r.member_id)
            self._fence_member(group, member)
        else:
            member = group.static_member(r.instance_id)
            if member is None:
                raise _err(_E.unknown_member_id, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise _err(_E.fenced_instance_id,
                           f"Static member {r.member_id} with instance id {r.instance_id} was "
                           f"fenced by member {member.member_id}.")
            if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("[%s] static member %s (%s) left temporarily", gid, r.member_id,
                         r.instance_id)
                self.append(current_assignment_record(
                    gid, member.member_id, ConsumerGroupCurrentMemberAssignmentValue(
                        # Nothing is pending revocation any more: the member keeps its
                        # assigned partitions, and no rebalance timeout applies to it.
                        LEAVE_GROUP_STATIC_MEMBER_EPOCH, member.member_epoch,
                        int(MemberState.STABLE),
                        member.assigned_partitions, {})))
                self._cancel((REBALANCE, gid, member.member_id))
            else:
                log.info("[%s] static member %s (%s) left the consumer group", gid,
                         r.member_id, r.instance_id)
                self._fence_member(group, member)
        cfg = self.group_config(gid)
        return ConsumerGroupHeartbeatResponse(member_id=r.member_id, member_epoch=r.member_epoch,
                                              heartbeat_interval_ms=cfg.heartbeat_interval_ms)

    def _remove_member_records(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """The member's tombstones; its timers are cancelled."""
        gid = group.group_id
        mid = member.member_id
        self.client.member_removed(gid, mid)  # issue #3: an assigner that leaves is replaced
        self.append(current_assignment_tombstone(gid, mid))
        if mid in group.target_assignment:
            self.append(target_member_tombstone(gid, mid))
        self.append(member_metadata_tombstone(gid, mid))
        self._cancel((SESSION, gid, mid))
        self._cancel((REBALANCE, gid, mid))
        self.classic_members.forget(gid, mid)

    def _fence_member(self, group: ConsumerGroup, member: ConsumerGroupMember,
                      allow_downgrade: bool = True) -> None:
        """Remove a member (left, expired, fenced) and bump the group epoch."""
        self.fence_members(group, (member,), allow_downgrade)

    def fence_members(self, group: ConsumerGroup, members: tuple[ConsumerGroupMember, ...],
                      allow_downgrade: bool = True) -> None:
        """Remove members and bump the group epoch once; or, when only classic members remain
        and the policy allows it (issue #4), convert the group to a classic group."""
        leaving = {m.member_id for m in members}
        value = None
        if allow_downgrade and downgrade_refusal(group, leaving, self.config) is None:
            try:
                value = consumer_to_classic(group, leaving, self.metadata, self._now)
            except MigrationError as e:
                log.info("[%s] cannot downgrade to a classic group: %s", group.group_id, e)
        for m in members:
            self._remove_member_records(group, m)
        if value is None:
            self._maybe_update_subscription_metadata(group, force_bump=True)
            return
        gid = group.group_id
        log.info("[%s] only classic members remain: converting to a classic group at "
                 "generation %d", gid, value.generation)
        for mid in sorted(group.members):
            self._remove_member_records(group, group.members[mid])
        self.delete_group(group)
        self.shard.classic.adopt_downgraded(gid, value, f"downgrade of consumer group {gid}")

    def schedule_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._schedule((SESSION, group_id, member_id), self._now + timeout_ms)

    def _maybe_upgrade(self, gid: str) -> None:
        """Convert the non-empty classic group ``gid`` (if it is one) to a consumer group, or
        refuse with GROUP_ID_NOT_FOUND (issue #4)."""
        classic = self.shard.groups.get(gid)
        if not isinstance(classic, ClassicGroup):
            return
        refusal = upgrade_refusal(classic, self.config)
        upgrade = None
        if refusal is None:
            try:
                upgrade = classic_to_consumer(classic, self.metadata)
            except MigrationError as e:
                refusal = f"its embedded consumer protocol is malformed ({e})"
        if upgrade is None:
            log.info("[%s] cannot upgrade the classic group: %s", gid, refusal)
            raise _err(_E.group_id_not_found,
                       f"Group {gid} is not a consumer group: it cannot be upgraded because "
                       f"{refusal}.")
        log.info("[%s] upgrading the classic group at generation %d to a consumer group", gid,
                 classic.generation_id)
        self.shard.classic.release_for_upgrade(classic)
        for rec in upgrade.records:
            self.append(rec)
        for m in upgrade.members:
            assert m.classic is not None
            self.schedule_session(gid, m.member_id, m.classic.session_timeout_ms)

    def _maybe_update_subscription_metadata(self, group: ConsumerGroup, force_bump: bool) -> None:
        """Recompute the subscribed topics' metadata; bump the epoch when it or ``force_bump``."""
        metadata: dict[str, TopicMetadata] = subscribed_topics(
            group.subscribed_names, None, self.metadata)
        for rx in sorted(group.subscribed_regexes):
            metadata.update(subscribed_topics((), rx, self.metadata))
        bump = force_bump
        if metadata != group.subscription_metadata:
            self.append(partition_metadata_record(group.group_id, metadata))
            bump = True
        if bump:
            self.append(group_epoch_record(group.group_id, group.group_epoch + 1))
            log.info("[%s] bumped group epoch to %d", group.group_id, group.group_epoch)

    def _compute_target_assignment(self, group: ConsumerGroup,
                                   members: dict[str, ConsumerGroupMember],
                                   previous: dict[str, Assignment]) -> None:
        # Client-side assignment (issue #3): a group whose members all advertise a common client
        # assignor asks a chosen member for its target instead of running a server assignor.
        if self.client.assignor(group) is not None:
            self.client.request(group)
            return
        self.client.cancel(group.group_id)
        default = self.config.consumer_assignors[0]
        name = preferred_server_assignor(members.values(), default)
        assignor = self.assignors[name]
        _, records = target_assignment_records(group, members, previous, group.group_epoch,
                                               assignor)
        for rec in records:
            self.append(rec)

    def _consumer_group_describe(self, r: ConsumerGroupDescribeRequest,
                                 now: int) -> ConsumerGroupDescribeResponse:
        out = []
        for gid in r.group_ids:
            try:
                group = self._group(gid)
            except CoordinatorError as e:  # a group of another type: an error for that group
                out.append(DescribedGroup(gid, e.code, e.message))
                continue
            if group is None:
                out.append(DescribedGroup(gid, _E.group_id_not_found,
                                          f"Group {gid} not found."))
                continue
            default = self.config.consumer_assignors[0]
            members = []
            for mid in sorted(group.members):
                m = group.members[mid]
                members.append(DescribedMember(
                    member_id=mid, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=DescribedAssignment(_sorted_tps(m.assigned_partitions)),
                    target_assignment=DescribedAssignment(_sorted_tps(group.target_of(mid))),
                    member_type=0 if m.classic is not None else 1))  # issue #4: 0 = classic
            out.append(DescribedGroup(
                gid, group_state=group.state().value, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                # issue #3: the client-side assignor when the group uses one
                assignor_name=(self.client.assignor(group)
                               or preferred_server_assignor(group.members.values(), default)),
                members=tuple(members)))
        return ConsumerGroupDescribeResponse(tuple(out))


def _apply_request(m: ConsumerGroupMember, r: ConsumerGroupHeartbeatRequest) -> ConsumerGroupMember:
    """The member with the request's non-null fields applied (null = unchanged)."""
    changes: dict[str, Any] = {}
    if r.instance_id is not None and r.instance_id != m.instance_id:
        changes["instance_id"] = r.instance_id
    if r.rack_id is not None and r.rack_id != m.rack_id:
        changes["rack_id"] = r.rack_id
    if r.rebalance_timeout_ms > 0 and r.rebalance_timeout_ms != m.rebalance_timeout_ms:
        changes["rebalance_timeout_ms"] = r.rebalance_timeout_ms
    if r.server_assignor is not None and r.server_assignor != m.server_assignor:
        changes["server_assignor"] = r.server_assignor
    if r.client_assignors is not None and r.client_assignors != m.client_assignors:
        changes["client_assignors"] = r.client_assignors
    if r.subscribed_topic_names is not None:
        names = tuple(sorted(set(r.subscribed_topic_names)))
        if names != m.subscribed_topic_names:
            changes["subscribed_topic_names"] = names
        if r.subscribed_topic_regex is None and m.subscribed_topic_regex and names:
            changes["subscribed_topic_regex"] = None
    if r.subscribed_topic_regex is not None:
        regex = r.subscribed_topic_regex or None
        if regex != m.subscribed_topic_regex:
            changes["subscribed_topic_regex"] = regex
        if regex and r.subscribed_topic_names is None and m.subscribed_topic_names:
            changes["subscribed_topic_names"] = ()
    if r.client_id != m.client_id:
        changes["client_id"] = r.client_id
    if r.client_host != m.client_host:
        changes["client_host"] = r.client_host
    return replace(m, **changes) if changes else m


def _metadata_changed(old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> bool:
    return old is None or _metadata_value(old) != _metadata_value(new)


_metadata_value = member_metadata_value
