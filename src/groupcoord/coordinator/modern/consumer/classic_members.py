"""Classic members inside a consumer group (online migration, KIP-848 "Supporting Online Consumer Group
Upgrade").

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

The request plumbing, deadlines, lookups, protocol checks and the SyncGroup / Heartbeat /
LeaveGroup flow are the shared ``classic_bridge.ClassicBridge`` (connect groups use it too); this
module holds what is the consumer group's: the JoinGroup translation (subscription, static
replacement, downgrade on replacement), the ConsumerProtocolAssignment of SyncGroup, and the
rejoin rule (the group epoch: a consumer group's target is computed at once).

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
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol
from uuid import UUID

from groupcoord.coordinator.classic.messages import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.classic.model import CONSUMER_PROTOCOL_TYPE
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.classic_bridge import BridgedManager, ClassicBridge
from groupcoord.coordinator.modern.consumer.messages import TopicPartitions
from groupcoord.coordinator.modern.consumer.migration import (
    MigrationError,
    assignment_bytes,
    classic_metadata,
    consumer_to_classic,
    current_assignment_value,
    downgrade_refusal,
    member_metadata_value,
    names_to_ids,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember, joining
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.records import (
    Record,
    current_assignment_record,
    member_metadata_record,
    target_member_record,
)
from groupcoord.coordinator.topics import MetadataImage
from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    Subscription,
    decode_subscription,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

log = logging.getLogger(__name__)

_E = ErrorCode

#: Timer kinds: a classic member told to rejoin must do so within its rebalance timeout, and
#: a member that joined must sync within it (keys ``(kind, group id, member id)``).
JOIN_TIMEOUT = "consumer-classic-join"
SYNC_TIMEOUT = "consumer-classic-sync"


def _err(code: ErrorCode, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


class ConsumerGroups(BridgedManager, Protocol):
    """What the translation asks of the consumer group manager (``handlers.ConsumerGroupManager``,
    which builds it: typed by what it uses, the translation does not import the manager back)."""

    @property
    def config(self) -> CoordinatorConfig: ...
    @property
    def metadata(self) -> MetadataImage: ...
    def append(self, record: Record) -> None: ...
    def delete_group(self, group: ConsumerGroup) -> None: ...
    def _remove_member_records(self, group: Any, member: Any, keep_target: bool = False) -> None: ...
    def _maybe_update_subscription_metadata(self, group: ConsumerGroup, force_bump: bool) -> None: ...
    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   owned: tuple[TopicPartitions, ...] | None) -> ConsumerGroupMember: ...


class ClassicMembers(ClassicBridge[ConsumerGroup, ConsumerGroupMember]):
    """Translation of the classic APIs for the members of consumer groups (one per shard)."""

    manager: ConsumerGroups

    def __init__(self, manager: ConsumerGroups) -> None:
        super().__init__(manager)

    join_timeout = JOIN_TIMEOUT
    sync_timeout = SYNC_TIMEOUT
    group_class = ConsumerGroup
    protocol_type = CONSUMER_PROTOCOL_TYPE
    noun = "member"
    group_noun = "consumer group"
    protocol_noun = "consumer protocol"
    static_membership = True
    decode_errors = (ConsumerProtocolError,)

    # ------------------------------------------------------------------ what differs

    def _rejoin_epoch(self, group: ConsumerGroup) -> int:
        return group.group_epoch  # the target is computed by the coordinator, at once

    def _target_items(self, group: ConsumerGroup,
                      member: ConsumerGroupMember) -> Iterable[tuple[UUID, frozenset[int]]]:
        return group.target_of(member.member_id).items()

    def _assigned(self, member: ConsumerGroupMember) -> Mapping[UUID, frozenset[int]]:
        return member.assigned_partitions

    def _sync_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember,
                         protocol: str) -> bytes:
        return assignment_bytes(member, protocol, member.assigned_partitions,
                                self.manager.metadata)

    def _decode(self, r: JoinGroupRequest) -> Subscription:
        return decode_subscription(r.protocols[0].metadata)

    # ------------------------------------------------------------------ JoinGroup

    def _join(self, group: ConsumerGroup, r: JoinGroupRequest, member_id: str, is_unknown: bool,
              decoded: Any) -> JoinGroupResponse:
        gid = group.group_id
        m = self.manager
        sub: Subscription = decoded

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
        self._request_target(group)

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
        assert reconciled.classic is not None
        return self._joined(gid, reconciled, reconciled.classic.session_timeout_ms,
                            r.protocols[0].name, r.reason)

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


__all__ = ["JOIN_TIMEOUT", "SYNC_TIMEOUT", "ClassicMembers"]
