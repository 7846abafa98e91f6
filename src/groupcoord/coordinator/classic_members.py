"""Classic members inside a consumer group (issue #4, online migration).

KIP-848 "Supporting Online Consumer Group Upgrade": during a migration the members that still use
the classic protocol keep sending JoinGroup, SyncGroup, Heartbeat and LeaveGroup; the coordinator
translates each request to the new protocol and reconciles every member individually (upstream's
``classicGroupJoinToConsumerGroup`` and friends):

- **JoinGroup** updates the member (subscription and rack decoded from the ConsumerProtocol
  metadata of its first protocol, the classic session timeout and supported protocols, the
  rebalance timeout), bumps the group epoch when the member is new or its subscribed topics
  changed, computes the target assignment when the group epoch is ahead, and reconciles the
  member with the owned partitions its subscription reports (v0 reports none: an eager member
  revoked everything before rejoining). The response is immediate: the generation is the
  member's epoch after reconciliation (the new epoch once nothing is left to revoke), the protocol
  is the member's first, no leader and no member list. A v4+ dynamic member without member id
  gets MEMBER_ID_REQUIRED with a generated id first; a static member whose instance id is known
  joining without member id replaces the old member (its assignment carries over). The member
  must then sync within its rebalance timeout (else it is removed). A static member replacing
  the last member that uses the new protocol converts the group back to a classic group when
  the policy allows it (upstream's classicGroupJoinToConsumerGroup): without a rebalance when
  every member is reconciled at the group epoch and the subscription is the replaced member's
  (the JoinGroup answers the group epoch, which is the classic generation), else the classic
  group rebalances.
- **SyncGroup** returns the member's assigned partitions as a ConsumerProtocolAssignment, in the
  version of its subscription. REBALANCE_IN_PROGRESS when the group epoch moved past the member
  and it is not in the middle of a revocation.
- **Heartbeat** keeps the session (the classic session timeout) and signals a rebalance with
  REBALANCE_IN_PROGRESS when the group epoch is ahead of the member, when the member must revoke
  partitions, or when partitions it waits for were released; it must then rejoin within its
  rebalance timeout. A heartbeat also computes a pending target assignment (the spec's case study:
  "The group coordinator computes a new target assignment and installs it. It also triggers a
  rebalance for C."); upstream leaves that to the next JoinGroup or ConsumerGroupHeartbeat.
- **LeaveGroup** removes the named members (by member id, or a static member by instance id);
  when only classic members remain the group may convert back (``ConsumerGroupManager``).

Errors as upstream: a member that does not use the classic protocol, or is unknown, is
UNKNOWN_MEMBER_ID; a static member id mismatch FENCED_INSTANCE_ID; a generation other than the
member's epoch ILLEGAL_GENERATION; a protocol type other than ``consumer``, or (SyncGroup) a
protocol name other than the member's, or protocols the classic members share none of,
INCONSISTENT_GROUP_PROTOCOL. Classic members joining a non-empty consumer group is allowed
whatever the migration policy (as upstream: the policy governs conversions only).

Not implemented: DescribeGroups of a consumer group (still GROUP_ID_NOT_FOUND there), the KIP-814
SkipAssignment answer (a classic static leader rejoining inside a consumer group is answered
like any member) and custom classic assignors' user data (assignments are sent without it).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic_group import CONSUMER_PROTOCOL_TYPE
from groupcoord.coordinator.classic_messages import (
    JOIN_MEMBER_ID_REQUIRED_VERSION,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    joining,
)
from groupcoord.coordinator.messages import TopicPartitions
from groupcoord.coordinator.migration import (
    MigrationError,
    assignment_bytes,
    classic_metadata,
    consumer_to_classic,
    current_assignment_value,
    downgrade_refusal,
    member_metadata_value,
    names_to_ids,
)
from groupcoord.coordinator.records import (
    current_assignment_record,
    member_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_subscription
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.consumer_groups import ConsumerGroupManager

log = logging.getLogger(__name__)

_E = ErrorCode

#: Timer kinds: a classic member told to rejoin must do so within its rebalance timeout, and
#: a member that joined must sync within it (keys ``(kind, group id, member id)``).
JOIN_TIMEOUT = "consumer-classic-join"
SYNC_TIMEOUT = "consumer-classic-sync"


def _err(code: ErrorCode, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


class ClassicMembers:
    """Translation of the classic APIs for the members of consumer groups (one per shard)."""

    def __init__(self, manager: ConsumerGroupManager) -> None:
        self.manager = manager
        self.shard = manager.shard
        self.shard.register_timer(JOIN_TIMEOUT, self._timed_out)
        self.shard.register_timer(SYNC_TIMEOUT, self._timed_out)

    # ------------------------------------------------------------------ plumbing

    def forget(self, group_id: str, member_id: str) -> None:
        """A member left the group: its classic deadlines go."""
        self.shard.cancel((JOIN_TIMEOUT, group_id, member_id))
        self.shard.cancel((SYNC_TIMEOUT, group_id, member_id))

    def _timed_out(self, key: TimerKey, payload: Any) -> None:
        kind, gid, mid = key
        group = self.shard.groups.get(gid)
        if not isinstance(group, ConsumerGroup):
            return
        member = group.members.get(mid)
        if member is not None and member.classic is not None:
            log.info("[%s] classic member %s did not %s within its rebalance timeout", gid, mid,
                     "rejoin" if kind == JOIN_TIMEOUT else "sync")
            self.manager.fence_members(group, (member,))

    def _schedule_session(self, group_id: str, member: ConsumerGroupMember) -> None:
        assert member.classic is not None
        self.manager.schedule_session(group_id, member.member_id, member.classic.session_timeout_ms)

    def _ask_to_rejoin(self, group_id: str, member: ConsumerGroupMember) -> None:
        key = (JOIN_TIMEOUT, group_id, member.member_id)
        if key not in self.shard.timers:
            self.shard.schedule(key, self.shard.now + max(member.rebalance_timeout_ms, 0))

    def _classic_member(self, group: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerGroupMember:
        """The classic member a SyncGroup / Heartbeat / LeaveGroup speaks for."""
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise _err(_E.fenced_instance_id,
                           f"Static member {member_id} with instance id {instance_id} was "
                           f"fenced by member {member.member_id}.")
        if member is None:
            raise _err(_E.unknown_member_id,
                       f"Member {member_id} is not a member of group {group.group_id}.")
        if member.classic is None:
            raise _err(_E.unknown_member_id,
                       f"Member {member_id} of group {group.group_id} does not use the classic "
                       f"protocol.")
        return member

    def _waiting_on_unreleased(self, group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        """Whether every target partition the member still lacks is held by another member."""
        for tid, ps in group.target_of(member.member_id).items():
            mine = member.assigned_partitions.get(tid, frozenset())
            for p in ps - mine:
                owner = group.owner_of(tid, p)
                if owner is None or owner == member.member_id:
                    return False
        return True

    def _must_rejoin(self, group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        return (member.member_epoch < group.group_epoch
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not self._waiting_on_unreleased(group, member)))

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: ConsumerGroup, r: JoinGroupRequest) -> JoinGroupResponse:
        gid = group.group_id
        m = self.manager
        is_unknown = not r.member_id
        member_id = r.member_id or self._new_member_id(group, r)
        if len(group.members) >= m.config.consumer_max_size and member_id not in group.members \
                and (r.group_instance_id is None
                     or group.static_member(r.group_instance_id) is None):
            return JoinGroupResponse(_E.group_max_size_reached, member_id=r.member_id)
        self._check_protocols(group, r)
        if is_unknown and r.group_instance_id is None \
                and r.version >= JOIN_MEMBER_ID_REQUIRED_VERSION:
            log.info("[%s] new classic member: asking it to rejoin with member id %s", gid,
                     member_id)
            return JoinGroupResponse(_E.member_id_required, member_id=member_id)
        try:
            sub = decode_subscription(r.protocols[0].metadata)
        except ConsumerProtocolError as e:
            log.info("[%s] JoinGroup of %s refused: %s", gid, member_id, e)
            return JoinGroupResponse(_E.inconsistent_group_protocol, member_id=r.member_id)

        # ---- 1. find, create or replace the member
        existing: ConsumerGroupMember | None = None
        replaced: ConsumerGroupMember | None = None
        if r.group_instance_id is None:
            existing = group.members.get(member_id)
            if existing is not None and existing.classic is None:
                raise _err(_E.unknown_member_id, f"Member {member_id} of group {gid} does not "
                                                 f"use the classic protocol.")
        else:
            static = group.static_member(r.group_instance_id)
            if static is not None and is_unknown:
                replaced = static
            elif static is not None:
                if static.member_id != member_id:
                    raise _err(_E.fenced_instance_id,
                               f"Static member {member_id} with instance id "
                               f"{r.group_instance_id} was fenced by member {static.member_id}.")
                existing = static
            elif not is_unknown and member_id in group.members:
                raise _err(_E.unknown_member_id, f"Member {member_id} of group {gid} has no "
                                                 f"instance id {r.group_instance_id}.")
        if replaced is not None:
            base = ConsumerGroupMember(member_id, assigned_partitions=replaced.assigned_partitions)
        else:
            base = existing or ConsumerGroupMember(member_id)
        reference = existing or replaced
        updated = replace(
            base, instance_id=r.group_instance_id, rack_id=sub.rack_id or base.rack_id,
            client_id=r.client_id, client_host=r.client_host,
            subscribed_topic_names=tuple(sorted(set(sub.topics))), subscribed_topic_regex=None,
            server_assignor=None, classic=classic_metadata(r.session_timeout_ms, r.protocols),
            rebalance_timeout_ms=(r.rebalance_timeout_ms if r.rebalance_timeout_ms > 0
                                  else base.rebalance_timeout_ms))
        bump = reference is None or reference.subscribed_topic_names != \
            updated.subscribed_topic_names or reference.subscribed_topic_regex is not None

        if replaced is not None:
            log.info("[%s] classic static member %s (%s) replaces member %s", gid, member_id,
                     r.group_instance_id, replaced.member_id)
            previous_target = group.target_of(replaced.member_id)
            m._remove_member_records(group, replaced)
        if existing is None or member_metadata_value(existing) != member_metadata_value(updated):
            m.append(member_metadata_record(gid, member_id, member_metadata_value(updated)))
        if replaced is not None:
            m.append(target_member_record(gid, member_id, previous_target))
        if bump:
            m._maybe_update_subscription_metadata(group, force_bump=True)

        # ---- 2. target assignment
        if group.group_epoch > group.assignment_epoch:
            m._compute_target_assignment(group, dict(group.members), dict(group.target_assignment))

        # ---- 3. reconcile with the partitions the subscription says it owns
        current = group.members[member_id]
        if existing is None:
            current = joining(current, base.assigned_partitions)
        owned = tuple(TopicPartitions(t, tuple(sorted(ps)))
                      for t, ps in names_to_ids(sub.owned_partitions, m.metadata).items())
        reconciled = m._reconcile(group, current, owned)
        if existing is None and reconciled is current:
            m.append(current_assignment_record(gid, member_id, current_assignment_value(current)))
        if replaced is not None and replaced.classic is None:
            downgraded = self._downgrade_on_replacement(group, reconciled, bump)
            if downgraded is not None:
                return downgraded

        # ---- 4. timers and the immediate response
        self.shard.cancel((JOIN_TIMEOUT, gid, member_id))
        self._schedule_session(gid, reconciled)
        self.shard.schedule((SYNC_TIMEOUT, gid, member_id),
                            self.shard.now + max(reconciled.rebalance_timeout_ms, 0))
        log.info("[%s] classic member %s joined at epoch %d (%s)", gid, member_id,
                 reconciled.member_epoch, r.reason or "no reason given")
        return JoinGroupResponse(generation_id=reconciled.member_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE,
                                 protocol_name=r.protocols[0].name, leader="",
                                 member_id=member_id)

    def _downgrade_on_replacement(self, group: ConsumerGroup, joined: ConsumerGroupMember,
                                  subscription_changed: bool) -> JoinGroupResponse | None:
        """``joined`` (classic, static) replaced the last member using the new protocol: the
        group becomes a classic group when the policy allows it (upstream's
        classicGroupJoinToConsumerGroup step 4). It stays Stable, every member keeping its
        partitions and the group epoch as generation, when everyone is reconciled at the group
        epoch and the subscription did not change; otherwise it rebalances. None: no downgrade."""
        m = self.manager
        gid = group.group_id
        refusal = downgrade_refusal(group, set(), m.config)
        if refusal is not None:
            log.debug("[%s] no downgrade on the replacement of a static member: %s", gid, refusal)
            return None
        try:
            value = consumer_to_classic(group, set(), m.metadata, self.shard.now)
        except MigrationError as e:
            log.info("[%s] cannot downgrade to a classic group: %s", gid, e)
            return None
        settled = (not subscription_changed and group.assignment_epoch == group.group_epoch
                   and all(mb.member_epoch == group.group_epoch
                           and mb.state is MemberState.STABLE for mb in group.members.values()))
        log.info("[%s] classic static member %s replaced the last member using the consumer "
                 "protocol: converting to a classic group at generation %d%s", gid,
                 joined.member_id, value.generation, "" if settled else ", rebalancing")
        for mid in sorted(group.members):
            m._remove_member_records(group, group.members[mid])
        m.delete_group(group)
        self.shard.classic.adopt_downgraded(gid, value, f"downgrade of consumer group {gid} on "
                                            f"a static member replacement", rebalance=not settled)
        return JoinGroupResponse(generation_id=value.generation if settled else joined.member_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE,
                                 protocol_name=value.protocol_name, leader="",
                                 member_id=joined.member_id)

    def _new_member_id(self, group: ConsumerGroup, r: JoinGroupRequest) -> str:
        prefix = r.group_instance_id if r.group_instance_id is not None else r.client_id
        while True:
            mid = f"{prefix}-{self.shard.new_member_id()}"
            if mid not in group.members:
                return mid

    def _check_protocols(self, group: ConsumerGroup, r: JoinGroupRequest) -> None:
        """Protocol type ``consumer``, and a protocol every classic member supports."""
        if r.protocol_type != CONSUMER_PROTOCOL_TYPE or not r.protocols:
            raise _err(_E.inconsistent_group_protocol,
                       f"Group {group.group_id} is a consumer group: only the consumer protocol "
                       f"may join it, not {r.protocol_type!r}.")
        counts: dict[str, int] = {}
        classic = 0
        for mid, mb in group.members.items():
            if mb.classic is None or mid == r.member_id:
                continue
            classic += 1
            for name, _ in mb.classic.supported_protocols:
                counts[name] = counts.get(name, 0) + 1
        if classic and not any(counts.get(p.name, 0) == classic for p in r.protocols):
            raise _err(_E.inconsistent_group_protocol,
                       f"The classic members of group {group.group_id} share none of the "
                       f"protocols {[p.name for p in r.protocols]}.")

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: ConsumerGroup, r: SyncGroupRequest) -> SyncGroupResponse:
        gid = group.group_id
        member = self._classic_member(group, r.member_id, r.group_instance_id)
        if r.generation_id != member.member_epoch:
            return SyncGroupResponse(_E.illegal_generation)
        assert member.classic is not None
        protocol = member.classic.supported_protocols[0][0]
        if (r.protocol_type is not None and r.protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                (r.protocol_name is not None and r.protocol_name != protocol):
            return SyncGroupResponse(_E.inconsistent_group_protocol)
        if group.group_epoch > member.member_epoch and \
                member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ask_to_rejoin(gid, member)
            return SyncGroupResponse(_E.rebalance_in_progress)
        self.shard.cancel((SYNC_TIMEOUT, gid, member.member_id))
        self._schedule_session(gid, member)
        return SyncGroupResponse(
            protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocol,
            assignment=assignment_bytes(member, protocol, member.assigned_partitions,
                                        self.manager.metadata))

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: ConsumerGroup, r: HeartbeatRequest) -> HeartbeatResponse:
        gid = group.group_id
        member = self._classic_member(group, r.member_id, r.group_instance_id)
        if r.generation_id != member.member_epoch:
            return HeartbeatResponse(_E.illegal_generation)
        self._schedule_session(gid, member)
        if group.group_epoch > group.assignment_epoch:
            self.manager._compute_target_assignment(group, dict(group.members),
                                                    dict(group.target_assignment))
        if self._must_rejoin(group, member):
            self._ask_to_rejoin(gid, member)
            return HeartbeatResponse(_E.rebalance_in_progress)
        return HeartbeatResponse()

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: ConsumerGroup, r: LeaveGroupRequest) -> list[LeaveGroupMemberResponse]:
        results: list[LeaveGroupMemberResponse] = []
        leaving: dict[str, ConsumerGroupMember] = {}
        for ident in r.members:
            mid, iid = ident.member_id, ident.group_instance_id
            try:
                if not mid and iid is not None:  # an administrative removal by instance id
                    member = group.static_member(iid)
                    if member is None:
                        raise _err(_E.unknown_member_id, f"Instance id {iid} is unknown.")
                else:
                    member = self._classic_member(group, mid, iid)
            except CoordinatorError as e:
                results.append(LeaveGroupMemberResponse(mid, iid, e.code))
                continue
            log.info("[%s] classic member %s left (%s)", group.group_id, member.member_id,
                     ident.reason or "no reason given")
            leaving[member.member_id] = member
            results.append(LeaveGroupMemberResponse(mid, iid))
        if leaving:
            self.manager.fence_members(group, tuple(leaving[k] for k in sorted(leaving)))
        return results


__all__ = ["JOIN_TIMEOUT", "SYNC_TIMEOUT", "ClassicMembers"]
