"""Classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and DescribeGroups.

Kafka's classic group coordinator (upstream ``GroupMetadataManager`` classicGroupJoin /
classicGroupSync / classicGroupHeartbeat / classicGroupLeave and ``ClassicGroup``), with static
membership (KIP-345) and KIP-814 (the static leader's rejoin answered with SkipAssignment).

How it runs on the shard. The model (``classic/model.py``) has a committed view, changed only by
replaying :class:`ClassicGroupMetadataValue` records, and a live view (rebalance state machine,
members mid-rebalance, pending requests) that this manager changes directly, as upstream's
in-memory ClassicGroup. A record is written when a group is created, when a generation starts
with no member (Empty), when the leader's SyncGroup brings the assignments, and when a static
member is replaced without a rebalance. JoinGroup and SyncGroup requests that must wait are
parked as ``Waiter``s holding the driver's token and answered with ``Shard.complete`` (or directly,
when the request that parked completes the phase itself). After a load every group is Stable
with its committed members (or Empty), session timers are armed again, and clients retry what
was pending.

Timers (key kinds): ``classic-heartbeat`` (group, member) session expiry, also for members sent
MEMBER_ID_REQUIRED and the 5-minute join timeout of new members; ``classic-join`` (group) the end
of the join phase (initial delay or rebalance timeout; payload ``("initial", delay, remaining)``
or ``("rebalance",)``); ``classic-sync`` (group) the SyncGroup deadline (payload: generation).

Choices where upstream's behaviour is unspecified or does not map one to one:

- A JoinGroup (SyncGroup) from a member that already has one pending supersedes it; upstream
  drops the older request unanswered, we answer it REBALANCE_IN_PROGRESS so no request of the
  driver hangs. Requests pending for a member that is removed are answered UNKNOWN_MEMBER_ID
  (upstream answers only the pending JoinGroup).
- Protocol selection: every member votes for its most preferred protocol among those all members
  support; most votes wins and a tie goes to the smallest protocol name (upstream: hash order).
- When the leader leaves, the first remaining member in join order becomes leader.
- A static consumer (protocol type ``consumer``) rejoining in Stable under a new member id
  with other subscribed topics than its former incarnation rebalances; upstream only checks
  whether the selected protocol changes and hands it an assignment of topics it may no longer
  subscribe to (see :func:`static_subscription_changed`).
- Generated member ids are ``{group.instance.id or client.id}-{shard.new_member_id()}``.
- Online migration (KIP-848 "Supporting Online Consumer Group Upgrade"): JoinGroup, SyncGroup,
  Heartbeat and LeaveGroup for a non-empty consumer (KIP-848) group are handed to
  ``modern/consumer/classic_members.py`` (on the translation shared with connect groups,
  ``modern/classic_bridge.py``), which translates them to the new protocol (the member joins the
  consumer group). An *empty* consumer group is converted, as upstream does: its records are
  tombstoned and a classic group is created. The conversions of non-empty groups
  (``modern/consumer/migration.py``) use :meth:`ClassicGroupManager.release_for_upgrade` and
  :meth:`ClassicGroupManager.adopt_downgraded`. The same for a non-empty connect group: classic
  Connect workers are handed to ``modern/connect/classic_workers.py``
  (``modern/connect/migration.py`` converts the groups). Groups of any other type answer
  INCONSISTENT_GROUP_PROTOCOL to JoinGroup and UNKNOWN_MEMBER_ID to the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic.messages import (
    DESCRIBE_ERROR_VERSION,
    JOIN_MEMBER_ID_REQUIRED_VERSION,
    JOIN_SKIP_ASSIGNMENT_VERSION,
    JOIN_STATIC_MEMBERSHIP_VERSION,
    LEAVE_BATCH_VERSION,
    SYNC_PROTOCOL_REQUIRED_VERSION,
    DescribedClassicGroup,
    DescribedClassicMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.classic.model import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    ClassicGroupMember,
    ClassicGroupState,
    Waiter,
    subscribed_topics,
)
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.records import (
    ClassicGroupMetadataValue,
    Record,
    RecordType,
    classic_group_metadata_record,
    classic_group_metadata_tombstone,
)
from groupcoord.coordinator.result import DEFERRED
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext
    from groupcoord.coordinator.modern.classic_bridge import ClassicBridge

log = logging.getLogger(__name__)

_E = ErrorCode
_S = ClassicGroupState

HEARTBEAT = "classic-heartbeat"
JOIN = "classic-join"
SYNC = "classic-sync"

#: A new member's JoinGroup may wait this long before the member is dropped (upstream's
#: classicGroupNewMemberJoinTimeoutMs): it has no member id to heartbeat with yet.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

_Response = Any  # a response dataclass, or None when the request was parked


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def static_subscription_changed(group: ClassicGroup, old: ClassicGroupMember,
                                new: ClassicGroupMember) -> bool:
    """Whether a static consumer is back subscribing to other topics than its former
    incarnation (the selected protocol's ConsumerProtocolSubscription). Upstream only
    checks the selected protocol and hands it the former assignment: partitions of topics
    it no longer subscribes to (an illegal assignment, I2), while the leader, which never
    saw the new subscription, has no reason to rebalance; the member (as the Java
    consumer) rejoins with the same metadata and is answered the same generation, without
    end. The owned partitions and generation of the subscription are ignored: they differ
    for every restart of a cooperative member, which must not rebalance (KIP-345)."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    name = group.protocol_name
    try:
        return subscribed_topics(old.metadata(name)) != subscribed_topics(new.metadata(name))
    except ValueError:
        return False  # not a readable subscription: as upstream


def leave_response(r: LeaveGroupRequest,
                   results: list[LeaveGroupMemberResponse]) -> LeaveGroupResponse:
    error: int = _E.none
    if r.version < LEAVE_BATCH_VERSION and results:
        error = results[0].error_code
    return LeaveGroupResponse(error, tuple(results))


def describe_groups(shard: ShardContext, r: DescribeGroupsRequest) -> DescribeGroupsResponse:
    """DescribeGroups: each classic group as it stands; a group with offsets only is an empty
    classic group; any other group id is answered GROUP_ID_NOT_FOUND (v6+) or Dead."""
    out = []
    for gid in r.group_ids:
        group = shard.groups.get(gid)
        if isinstance(group, ClassicGroup):
            stable = group.state is _S.STABLE
            members = tuple(
                DescribedClassicMember(
                    m.member_id, m.instance_id, m.client_id, m.client_host,
                    m.metadata(group.protocol_name) if stable else b"", m.assignment)
                for m in group.members.values())
            out.append(DescribedClassicGroup(
                gid, group_state=group.state.value, protocol_type=group.protocol_type,
                protocol_data=(group.protocol_name or "") if stable else "",
                members=members))
        elif group is None and gid in shard.offsets:
            # Offsets only (a consumer without group management): an empty classic group.
            out.append(DescribedClassicGroup(gid, group_state=_S.EMPTY.value))
        else:
            message = (f"Group {gid} not found." if group is None
                       else f"Group {gid} is not a classic group.")
            if r.version >= DESCRIBE_ERROR_VERSION:
                out.append(DescribedClassicGroup(gid, _E.group_id_not_found, message,
                                                 _S.DEAD.value))
            else:
                out.append(DescribedClassicGroup(gid, group_state=_S.DEAD.value))
    return DescribeGroupsResponse(tuple(out))


class ClassicGroupManager:
    """The classic group type of one shard: registers its handlers, record and timers."""

    #: Classic members speak the classic protocol natively: no translation (``GroupType``).
    classic_bridge = None

    def __init__(self, shard: ShardContext) -> None:
        self.shard = shard
        self._appending = False
        #: The waiter of the JoinGroup/SyncGroup being handled, and its response if the same
        #: request completed it (then it is answered directly, not as a completion).
        self._current: Waiter | None = None
        self._direct: Any = None
        shard.register_handler(JoinGroupRequest, self._join_group)
        shard.register_handler(SyncGroupRequest, self._sync_group)
        shard.register_handler(HeartbeatRequest, self._heartbeat)
        shard.register_handler(LeaveGroupRequest, self._leave_group)
        shard.register_handler(DescribeGroupsRequest, lambda r, now: describe_groups(shard, r))
        shard.register_replayer(RecordType.CLASSIC_GROUP_METADATA, self.replay)
        shard.register_timer(HEARTBEAT, self._heartbeat_expired)
        shard.register_timer(JOIN, self._join_timer)
        shard.register_timer(SYNC, self._sync_expired)
        shard.register_error_response(
            JoinGroupRequest, lambda r, e: JoinGroupResponse(e.code, member_id=r.member_id))
        shard.register_error_response(SyncGroupRequest, lambda r, e: SyncGroupResponse(e.code))
        shard.register_error_response(HeartbeatRequest, lambda r, e: HeartbeatResponse(e.code))
        shard.register_error_response(LeaveGroupRequest, lambda r, e: LeaveGroupResponse(e.code))
        shard.register_error_response(DescribeGroupsRequest, lambda r, e: DescribeGroupsResponse(
            tuple(DescribedClassicGroup(gid, e.code, e.message, _S.DEAD.value)
                  for gid in r.group_ids)))

    # ------------------------------------------------------------------ shard plumbing

    @property
    def config(self) -> CoordinatorConfig:
        return self.shard.config

    @property
    def _now(self) -> int:
        return self.shard.now

    def _classic(self, group_id: str) -> ClassicGroup | None:
        g = self.shard.groups.get(group_id)
        return g if isinstance(g, ClassicGroup) else None

    def _append(self, record: Record) -> None:
        self._appending = True
        try:
            self.shard.append(record)
        finally:
            self._appending = False

    def _persist(self, group: ClassicGroup, assignments: dict[str, bytes] | None = None) -> None:
        self._append(classic_group_metadata_record(group.group_id, group.metadata_value(assignments)))

    def _schedule_heartbeat(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.shard.schedule((HEARTBEAT, group_id, member_id), self._now + timeout_ms)

    def _schedule_join(self, group: ClassicGroup, delay_ms: int, payload: tuple[Any, ...]) -> None:
        self.shard.schedule((JOIN, group.group_id), self._now + delay_ms, payload)

    def _answer(self, waiter: Waiter, response: Any) -> None:
        if waiter is self._current:
            self._direct = response
        else:
            self.shard.complete(waiter.token, response)

    def _with_waiter(self, handle: Callable[[Any, Waiter], _Response], request: Any) -> Any:
        """Run a handler that may park the request; DEFERRED if it is still parked after."""
        waiter = Waiter(self.shard.token)
        self._current, self._direct = waiter, None
        try:
            response = handle(request, waiter)
        finally:
            self._current = None
        direct, self._direct = self._direct, None
        if response is not None:
            return response
        return DEFERRED if direct is None else direct

    # ------------------------------------------------------------------ replay and lifecycle

    def replay(self, record: Record) -> None:
        gid = record.key.group_id
        groups = self.shard.groups
        existing = groups.get(gid)
        if existing is not None and not isinstance(existing, ClassicGroup):
            raise ValueError(f"classic group record for {existing.group_type} group {gid}")
        value = record.value
        if value is None:
            groups.pop(gid, None)
            return
        assert isinstance(value, ClassicGroupMetadataValue)
        if existing is not None and self._appending:
            existing.apply_committed(value)
        else:
            groups[gid] = ClassicGroup.from_record(gid, value)

    def on_loaded(self) -> None:
        """Load duties: arm every member's session timer; rebalance groups over capacity."""
        for gid in sorted(self.shard.groups):
            group = self.shard.groups[gid]
            if not isinstance(group, ClassicGroup):
                continue
            for m in group.members.values():
                self._schedule_heartbeat(gid, m.member_id, m.session_timeout_ms)
            if len(group.members) > self.config.classic_max_size:
                self._prepare_rebalance(group, f"freshly loaded group {gid} is over capacity "
                                               f"{self.config.classic_max_size}")

    def delete_group(self, group: ClassicGroup) -> None:
        """Tombstone an empty classic group (its offsets are the shard's business)."""
        gid = group.group_id
        for mid in [*group.members, *sorted(group.pending_join_members)]:
            self.shard.cancel((HEARTBEAT, gid, mid))
        self.shard.cancel((JOIN, gid))
        self.shard.cancel((SYNC, gid))
        self._append(classic_group_metadata_tombstone(gid))

    def maybe_delete_empty_group(self, group_id: str) -> bool:
        """For the other group types: delete ``group_id`` if it is an empty classic group (as
        upstream converts an empty classic group when a group of another type claims its id)."""
        group = self._classic(group_id)
        if group is None or not group.is_empty():
            return False
        log.info("[%s] deleting the empty classic group for a group of another type", group_id)
        self.delete_group(group)
        return True

    # ------------------------------------------------------------------ online migration

    def release_for_upgrade(self, group: ClassicGroup) -> None:
        """The classic group is about to become a consumer group (online migration): pending JoinGroup
        and SyncGroup requests are answered REBALANCE_IN_PROGRESS (the members rejoin the
        consumer group) and the group's classic timers are cancelled. The caller tombstones it."""
        gid = group.group_id
        for m in group.members.values():
            if m.awaiting_join is not None:
                waiter = group.set_join_waiter(m, None)
                assert waiter is not None
                self._answer(waiter, JoinGroupResponse(_E.rebalance_in_progress,
                                                       member_id=m.member_id))
            if m.awaiting_sync is not None:
                waiter, m.awaiting_sync = m.awaiting_sync, None
                self._answer(waiter, SyncGroupResponse(_E.rebalance_in_progress))
        for mid in [*group.members, *sorted(group.pending_join_members)]:
            self.shard.cancel((HEARTBEAT, gid, mid))
        self.shard.cancel((JOIN, gid))
        self.shard.cancel((SYNC, gid))

    def adopt_downgraded(self, group_id: str, value: ClassicGroupMetadataValue,
                         reason: str, rebalance: bool = True) -> None:
        """A consumer group became this classic group (online migration; its records are already
        tombstoned): persist it, arm the members' sessions and start a rebalance so the members
        rejoin under the classic protocol (upstream's prepareRebalance after a downgrade).
        ``rebalance=False``: the group stays Stable with the persisted assignments (a classic
        static member replaced the last new-protocol member with the same subscription)."""
        self.shard.append(classic_group_metadata_record(group_id, value))  # a fresh live view
        group = self._classic(group_id)
        assert group is not None
        for m in group.members.values():
            self._schedule_heartbeat(group_id, m.member_id, m.session_timeout_ms)
        if rebalance:
            self._prepare_rebalance(group, reason)

    # ------------------------------------------------------------------ JoinGroup

    def _join_group(self, r: JoinGroupRequest, now: int) -> Any:
        return self._with_waiter(self._join, r)

    def _join(self, r: JoinGroupRequest, waiter: Waiter) -> _Response:
        cfg = self.config
        gid = r.group_id
        if not gid:
            return JoinGroupResponse(_E.invalid_group_id, member_id=r.member_id)
        if not (cfg.classic_min_session_timeout_ms <= r.session_timeout_ms
                <= cfg.classic_max_session_timeout_ms):
            return JoinGroupResponse(_E.invalid_session_timeout, member_id=r.member_id)
        r = replace(
            r,
            group_instance_id=r.group_instance_id if r.version >= JOIN_STATIC_MEMBERSHIP_VERSION
            else None,
            rebalance_timeout_ms=r.session_timeout_ms if r.version == 0 else r.rebalance_timeout_ms)
        is_unknown = not r.member_id

        existing = self.shard.groups.get(gid)
        bridge = self._bridge(existing)
        if bridge is not None and existing is not None and not existing.is_empty():
            return bridge.join(existing, r)  # a classic member joins a new-protocol group
        if existing is not None and not isinstance(existing, ClassicGroup):
            if not (existing.converted_to_classic_when_empty and existing.is_empty()):
                log.info("[%s] JoinGroup refused: the group is a non-empty %s group", gid,
                         existing.group_type)
                return JoinGroupResponse(_E.inconsistent_group_protocol, member_id="")
            if not is_unknown:
                return JoinGroupResponse(_E.unknown_member_id, member_id=r.member_id)
            log.info("[%s] converting the empty %s group to a classic group", gid,
                     existing.group_type)
            self.shard.group_types[existing.group_type].delete_group(existing)
            existing = None
        if existing is None:
            if not is_unknown:
                return JoinGroupResponse(_E.unknown_member_id, member_id=r.member_id)
            self._append(classic_group_metadata_record(
                gid, ClassicGroupMetadataValue("", 0, None, None, self._now)))
        group = self._classic(gid)
        assert group is not None

        if not self._accept_joining_member(group, r.member_id):
            # Upstream drops a known member that no longer fits (the max size may have shrunk).
            self._drop_member(group, r.member_id)
            return JoinGroupResponse(_E.group_max_size_reached, member_id="")
        if is_unknown:
            return self._join_new_member(group, r, waiter)
        return self._join_existing_member(group, r, waiter)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.classic_max_size
        if group.state is _S.EMPTY:
            return True
        if group.state is _S.PREPARING_REBALANCE:
            # The number of members already rejoined, so the last to rejoin are turned away.
            m = group.members.get(member_id)
            return (m is not None and m.awaiting_join is not None) or \
                group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _new_member_id(self, group: ClassicGroup, r: JoinGroupRequest) -> str:
        prefix = r.group_instance_id if r.group_instance_id is not None else r.client_id
        while True:
            mid = f"{prefix}-{self.shard.new_member_id()}"
            if mid not in group.members and mid not in group.pending_join_members:
                return mid

    def _join_new_member(self, group: ClassicGroup, r: JoinGroupRequest,
                         waiter: Waiter) -> _Response:
        if not group.supports_protocols(r.protocol_type, (p.name for p in r.protocols)):
            return JoinGroupResponse(_E.inconsistent_group_protocol, member_id="")
        new_id = self._new_member_id(group, r)
        if r.group_instance_id is not None:
            old_id = group.static_members.get(r.group_instance_id)
            if old_id is not None:
                log.info("[%s] static member %s (unknown member id) joins in state %s; it "
                         "replaces member %s", group.group_id, r.group_instance_id,
                         group.state.value, old_id)
                return self._update_static_member(group, r, old_id, new_id, waiter)
            return self._add_member(group, r, new_id, waiter)
        if r.version >= JOIN_MEMBER_ID_REQUIRED_VERSION:
            log.info("[%s] new dynamic member: asking it to rejoin with member id %s",
                     group.group_id, new_id)
            group.pending_join_members.add(new_id)
            self._schedule_heartbeat(group.group_id, new_id, r.session_timeout_ms)
            return JoinGroupResponse(_E.member_id_required, member_id=new_id)
        return self._add_member(group, r, new_id, waiter)

    def _join_existing_member(self, group: ClassicGroup, r: JoinGroupRequest,
                              waiter: Waiter) -> _Response:
        mid = r.member_id
        if not group.supports_protocols(r.protocol_type, (p.name for p in r.protocols)):
            return JoinGroupResponse(_E.inconsistent_group_protocol, member_id=mid)
        if mid in group.pending_join_members and r.group_instance_id is None:
            log.info("[%s] pending member %s joins", group.group_id, mid)
            return self._add_member(group, r, mid, waiter)
        try:
            group.validate_member(mid, r.group_instance_id)
        except CoordinatorError as e:
            return JoinGroupResponse(e.code, member_id=mid)
        member = group.members[mid]
        reason = f"member {mid} rejoins ({r.reason or 'no reason given'})"
        if group.state is _S.PREPARING_REBALANCE:
            return self._update_member_then_rebalance(group, member, r, waiter, reason)
        if group.state is _S.COMPLETING_REBALANCE:
            if member.matches(r.protocols):
                # A lost JoinGroup response: the current generation again.
                members = group.join_response_members() if group.is_leader(mid) else ()
                return self._join_ok(group, mid, members)
            return self._update_member_then_rebalance(group, member, r, waiter, reason)
        if group.state is _S.STABLE:
            if group.is_leader(mid) or not member.matches(r.protocols):
                # A leader's JoinGroup always rebalances (it saw a metadata change).
                return self._update_member_then_rebalance(group, member, r, waiter, reason)
            return self._join_ok(group, mid)
        return JoinGroupResponse(_E.unknown_member_id, member_id=mid)  # Empty

    def _join_ok(self, group: ClassicGroup, member_id: str,
                 members: tuple[JoinGroupResponseMember, ...] = (), leader: str | None = None,
                 skip_assignment: bool = False) -> JoinGroupResponse:
        return JoinGroupResponse(
            generation_id=group.generation_id, protocol_type=group.protocol_type or None,
            protocol_name=group.protocol_name,
            leader=(group.leader_id if leader is None else leader) or "",
            skip_assignment=skip_assignment, member_id=member_id, members=members)

    def _add_member(self, group: ClassicGroup, r: JoinGroupRequest, member_id: str,
                    waiter: Waiter) -> _Response:
        member = ClassicGroupMember(member_id, r.group_instance_id, r.client_id, r.client_host,
                                    r.rebalance_timeout_ms, r.session_timeout_ms, r.protocol_type,
                                    r.protocols, is_new=True)
        if group.state is _S.PREPARING_REBALANCE and group.previous_state is _S.EMPTY:
            group.new_member_added = True
        group.add(member, waiter)
        # The session timeout does not apply yet: a new member has no id to heartbeat with.
        self._schedule_heartbeat(group.group_id, member_id, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(
            group, f"adding member {member_id} with instance id {r.group_instance_id} "
                   f"({r.reason or 'no reason given'})")
        return None

    def _update_member_then_rebalance(self, group: ClassicGroup, member: ClassicGroupMember,
                                      r: JoinGroupRequest, waiter: Waiter,
                                      reason: str) -> _Response:
        superseded = group.update_member(member, r.protocols, r.rebalance_timeout_ms,
                                         r.session_timeout_ms, waiter)
        if superseded is not None:
            self._answer(superseded, JoinGroupResponse(_E.rebalance_in_progress,
                                                       member_id=member.member_id))
        self._maybe_prepare_rebalance_or_complete_join(group, reason)
        return None

    def _update_static_member(self, group: ClassicGroup, r: JoinGroupRequest, old_id: str,
                              new_id: str, waiter: Waiter) -> _Response:
        """A known instance id with an unknown member id: the new id replaces the old one."""
        assert r.group_instance_id is not None
        gid = group.group_id
        current_leader = group.leader_id
        old, new = group.replace_static_member(r.group_instance_id, old_id, new_id)
        if old.awaiting_join is not None:
            self._answer(old.awaiting_join, JoinGroupResponse(_E.fenced_instance_id,
                                                              member_id=old_id))
        if old.awaiting_sync is not None:
            self._answer(old.awaiting_sync, SyncGroupResponse(_E.fenced_instance_id))
        self.shard.cancel((HEARTBEAT, gid, old_id))
        self._schedule_heartbeat(gid, new_id, new.session_timeout_ms)
        group.update_member(new, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, waiter)
        reason = f"static member {r.group_instance_id} rejoined as {new_id}"

        if group.state is _S.STABLE:
            if group.protocol_name == group.select_protocol() and \
                    not static_subscription_changed(group, old, new):
                # No rebalance: persist the new member id; the generation stays.
                log.info("[%s] %s; the selected protocol does not change: no rebalance", gid,
                         reason)
                self._persist(group)
                if r.version >= JOIN_SKIP_ASSIGNMENT_VERSION:
                    # KIP-814: the leader learns it leads, and skips the assignment.
                    is_leader = group.is_leader(new_id)
                    response = self._join_ok(
                        group, new_id, group.join_response_members() if is_leader else (),
                        skip_assignment=is_leader)
                else:
                    # Older clients: the old leader id, so a rejoining leader acts as follower.
                    response = self._join_ok(group, new_id, leader=current_leader or "")
                self._answer_join(group, new, response)
                return None
            self._maybe_prepare_rebalance_or_complete_join(
                group, f"{reason} with a change of the selected protocol or of its topics")
        elif group.state is _S.COMPLETING_REBALANCE:
            # The leader may have computed an assignment for the old id: rebalance.
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)
        return None

    def _answer_join(self, group: ClassicGroup, member: ClassicGroupMember,
                     response: JoinGroupResponse) -> None:
        waiter = group.set_join_waiter(member, None)
        if waiter is not None:
            self._answer(waiter, response)

    # ------------------------------------------------------------------ rebalance phases

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.state is _S.COMPLETING_REBALANCE:
            # Members waiting for their assignment must rejoin.
            for m in group.members.values():
                m.assignment = b""
            self._propagate_assignment(group, _E.rebalance_in_progress)
        self._remove_sync_expiration(group)
        initial = group.state is _S.EMPTY
        if initial:
            # A new group: give more members time to join.
            delay = self.config.classic_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_join(group, delay, ("initial", delay, remaining))
        log.info("[%s] preparing to rebalance in state %s with old generation %d (%s)",
                 group.group_id, group.state.value, group.generation_id, reason)
        group.transition_to(_S.PREPARING_REBALANCE, self._now)
        if not initial:
            if group.has_all_members_joined():
                self._complete_join_phase(group)
            else:
                self._schedule_join(group, group.rebalance_timeout_ms(), ("rebalance",))

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        """Complete the join phase if every member rejoined, except during the initial one."""
        if (group.state is _S.PREPARING_REBALANCE and group.previous_state is not _S.EMPTY
                and group.has_all_members_joined()):
            self._complete_join_phase(group)

    def _join_timer(self, key: TimerKey, payload: Any) -> None:
        group = self._classic(key[1])
        if group is None or group.state is not _S.PREPARING_REBALANCE:
            return
        if payload[0] == "initial":
            _, delay, remaining = payload
            if group.new_member_added and remaining != 0:
                # Members keep joining: extend the initial delay, up to the rebalance timeout.
                group.new_member_added = False
                new_delay = min(self.config.classic_initial_rebalance_delay_ms, remaining)
                self._schedule_join(group, new_delay,
                                    ("initial", new_delay, max(remaining - delay, 0)))
                return
        self._complete_join_phase(group)

    def _complete_join_phase(self, group: ClassicGroup) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation, answer every pending JoinGroup and wait for the SyncGroups."""
        gid = group.group_id
        self.shard.cancel((JOIN, gid))
        failed = [m.member_id for m in group.not_yet_rejoined() if not m.is_static]
        for mid in failed:
            self._drop_member(group, mid)
        if failed:
            log.info("[%s] removed dynamic members that did not rejoin: %s", gid, failed)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that have not rejoined: wait for them (or their sessions).
            log.error("[%s] cannot complete the rebalance: no member rejoined", gid)
            self._schedule_join(group, group.rebalance_timeout_ms(), ("rebalance",))
            return
        group.init_next_generation(self._now)
        if group.state is _S.EMPTY:
            log.info("[%s] generation %d is empty", gid, group.generation_id)
            self._persist(group)
            return
        log.info("[%s] stabilized generation %d with %d members (protocol %s)", gid,
                 group.generation_id, len(group.members), group.protocol_name)
        leader_view = group.join_response_members()
        for m in list(group.members.values()):
            self._answer_join(group, m, self._join_ok(
                group, m.member_id, leader_view if group.is_leader(m.member_id) else ()))
            self._schedule_heartbeat(gid, m.member_id, m.session_timeout_ms)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        self.shard.schedule((SYNC, gid), self._now + group.rebalance_timeout_ms(),
                            group.generation_id)

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.shard.cancel((SYNC, group.group_id))

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        """Answer every pending SyncGroup (with the assignment, or ``error``)."""
        ok = error == _E.none
        for m in group.members.values():
            waiter = m.awaiting_sync
            if waiter is None:
                continue
            m.awaiting_sync = None
            self._answer(waiter, SyncGroupResponse(
                error, (group.protocol_type or None) if ok else None,
                group.protocol_name if ok else None, m.assignment))
            self._schedule_heartbeat(group.group_id, m.member_id, m.session_timeout_ms)

    def _sync_expired(self, key: TimerKey, payload: Any) -> None:
        group = self._classic(key[1])
        if group is None or payload != group.generation_id:
            return
        if group.state in (_S.COMPLETING_REBALANCE, _S.STABLE) and group.pending_sync_members:
            late = [mid for mid in group.members if mid in group.pending_sync_members]
            for mid in late:
                self._drop_member(group, mid)
            log.info("[%s] removed members that did not sync in time: %s", group.group_id, late)
            self._prepare_rebalance(group, f"removing {late} on pending sync request expiration")

    def _heartbeat_expired(self, key: TimerKey, payload: Any) -> None:
        _, gid, mid = key
        group = self._classic(gid)
        if group is None:
            return
        if mid in group.pending_join_members:
            log.info("[%s] pending member %s did not rejoin in time", gid, mid)
            group.pending_join_members.discard(mid)
            if group.state is _S.PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join_phase(group)
            return
        member = group.members.get(mid)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("[%s] member %s session expired: removing it", gid, mid)
        self._drop_member(group, mid)
        self._after_member_removed(group, f"member {mid} expired")

    def _after_member_removed(self, group: ClassicGroup, reason: str) -> None:
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.state is _S.PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join_phase(group)

    def _drop_member(self, group: ClassicGroup, member_id: str) -> None:
        """Remove a member (or a pending member id); its pending requests get
        UNKNOWN_MEMBER_ID so the client rejoins."""
        member = group.remove(member_id)
        if member is not None:
            if member.awaiting_join is not None:
                waiter, member.awaiting_join = member.awaiting_join, None
                self._answer(waiter, JoinGroupResponse(_E.unknown_member_id, member_id=""))
            if member.awaiting_sync is not None:
                waiter, member.awaiting_sync = member.awaiting_sync, None
                self._answer(waiter, SyncGroupResponse(_E.unknown_member_id))
        self.shard.cancel((HEARTBEAT, group.group_id, member_id))

    # ------------------------------------------------------------------ SyncGroup

    def _sync_group(self, r: SyncGroupRequest, now: int) -> Any:
        return self._with_waiter(self._sync, r)

    def _sync(self, r: SyncGroupRequest, waiter: Waiter) -> _Response:
        if not r.group_id:
            return SyncGroupResponse(_E.invalid_group_id)
        if r.version >= SYNC_PROTOCOL_REQUIRED_VERSION and (
                r.protocol_type is None or r.protocol_name is None):
            return SyncGroupResponse(_E.inconsistent_group_protocol)
        found = self.shard.groups.get(r.group_id)
        bridge = self._bridge(found)
        if bridge is not None:
            return bridge.sync(found, r)
        group = self._group_for_member_request(r.group_id, r.member_id, r.group_instance_id)
        if group.is_empty():
            return SyncGroupResponse(_E.unknown_member_id)
        mid = r.member_id
        try:
            group.validate_member(mid, r.group_instance_id)
        except CoordinatorError as e:
            return SyncGroupResponse(e.code)
        if r.generation_id != group.generation_id:
            return SyncGroupResponse(_E.illegal_generation)
        if (_inconsistent(r.protocol_type, group.protocol_type or None)
                or _inconsistent(r.protocol_name, group.protocol_name)):
            return SyncGroupResponse(_E.inconsistent_group_protocol)
        if group.state is _S.PREPARING_REBALANCE:
            return SyncGroupResponse(_E.rebalance_in_progress)
        member = group.members[mid]
        if group.state is _S.STABLE:
            self._remove_pending_sync_member(group, mid)
            return SyncGroupResponse(protocol_type=group.protocol_type or None,
                                     protocol_name=group.protocol_name,
                                     assignment=member.assignment)
        # CompletingRebalance
        superseded, member.awaiting_sync = member.awaiting_sync, waiter
        if superseded is not None:
            self._answer(superseded, SyncGroupResponse(_E.rebalance_in_progress))
        self._remove_pending_sync_member(group, mid)
        if group.is_leader(mid):
            given = {a.member_id: a.assignment for a in r.assignments}
            missing = [m for m in group.members if m not in given]
            if missing:
                log.warning("[%s] the leader gave no assignment to %s in generation %d: empty",
                            group.group_id, missing, group.generation_id)
            log.info("[%s] assignment received from leader %s for generation %d",
                     group.group_id, mid, group.generation_id)
            self._persist(group, {m: given.get(m, b"") for m in group.members})
            group.transition_to(_S.STABLE, self._now)
            self._propagate_assignment(group, _E.none)
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.shard.cancel((SYNC, group.group_id))

    def _bridge(self, group: Group | None) -> ClassicBridge[Any, Any] | None:
        """The translation of classic requests for the members of a new-protocol group (online
        migration: ``modern/classic_bridge.py``), or None for a group of another type (or none)."""
        manager = None if group is None else self.shard.group_types.get(group.group_type)
        bridge: ClassicBridge[Any, Any] | None = None if manager is None else manager.classic_bridge
        return bridge

    def _group_for_member_request(self, group_id: str, member_id: str,
                                  instance_id: str | None) -> ClassicGroup:
        """The classic group of a SyncGroup / Heartbeat; UNKNOWN_MEMBER_ID (or
        FENCED_INSTANCE_ID) when there is none."""
        group = self.shard.groups.get(group_id)
        if group is None:
            raise CoordinatorError(_E.unknown_member_id, f"Group {group_id} not found.")
        if not isinstance(group, ClassicGroup):
            self._refuse_foreign_member(group, member_id, instance_id)
        assert isinstance(group, ClassicGroup)
        return group

    def _refuse_foreign_member(self, group: Group, member_id: str,
                               instance_id: str | None) -> None:
        """A classic request for a group of a type without classic members (consumer groups
        are handled by ``modern/classic_bridge.py`` before this)."""
        raise CoordinatorError(_E.unknown_member_id,
                               f"Group {group.group_id} is a {group.group_type} group: member "
                               f"{member_id} does not use the classic protocol.")

    # ------------------------------------------------------------------ Heartbeat

    def _heartbeat(self, r: HeartbeatRequest, now: int) -> HeartbeatResponse:
        if not r.group_id:
            return HeartbeatResponse(_E.invalid_group_id)
        found = self.shard.groups.get(r.group_id)
        bridge = self._bridge(found)
        if bridge is not None:
            return bridge.heartbeat(found, r)
        group = self._group_for_member_request(r.group_id, r.member_id, r.group_instance_id)
        group.validate_member(r.member_id, r.group_instance_id)
        if r.generation_id != group.generation_id:
            return HeartbeatResponse(_E.illegal_generation)
        if group.state is _S.EMPTY:
            return HeartbeatResponse(_E.unknown_member_id)
        member = group.members[r.member_id]
        self._schedule_heartbeat(group.group_id, member.member_id, member.session_timeout_ms)
        if group.state is _S.PREPARING_REBALANCE:
            return HeartbeatResponse(_E.rebalance_in_progress)
        # CompletingRebalance (heartbeats may start right after the JoinGroup) or Stable.
        return HeartbeatResponse()

    # ------------------------------------------------------------------ LeaveGroup

    def _leave_group(self, r: LeaveGroupRequest, now: int) -> LeaveGroupResponse:
        if not r.group_id:
            return LeaveGroupResponse(_E.invalid_group_id)
        group = self.shard.groups.get(r.group_id)
        if group is None:
            raise CoordinatorError(_E.unknown_member_id, f"Group {r.group_id} not found.")
        results: list[LeaveGroupMemberResponse] = []
        if not isinstance(group, ClassicGroup):
            bridge = self._bridge(group)
            if bridge is None:
                raise CoordinatorError(_E.unknown_member_id, f"Group {r.group_id} not found.")
            return leave_response(r, bridge.leave(group, r))

        gid = group.group_id
        left: list[str] = []
        for ident in r.members:
            mid, iid = ident.member_id, ident.group_instance_id
            why = ident.reason or "no reason given"
            if not mid:
                # An administrative removal of a static member by instance id.
                static = None if iid is None else group.static_members.get(iid)
                if static is None:
                    results.append(LeaveGroupMemberResponse(mid, iid, _E.unknown_member_id))
                    continue
                log.info("[%s] static member %s (%s) removed by LeaveGroup (%s)", gid, static,
                         iid, why)
                self._drop_member(group, static)
                left.append(static)
            elif mid in group.pending_join_members:
                log.info("[%s] pending member %s left (%s)", gid, mid, why)
                group.pending_join_members.discard(mid)
                self.shard.cancel((HEARTBEAT, gid, mid))
                left.append(mid)
            else:
                try:
                    group.validate_member(mid, iid)
                except CoordinatorError as e:
                    results.append(LeaveGroupMemberResponse(mid, iid, e.code))
                    continue
                log.info("[%s] member %s left the group (%s)", gid, mid, why)
                self._drop_member(group, mid)
                left.append(mid)
            results.append(LeaveGroupMemberResponse(mid, iid))
        if left:
            if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, f"members {left} left")
            elif group.state is _S.PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        return leave_response(r, results)
