"""Classic Connect workers inside a connect group (issue #4, online migration).

The Connect draft's "Migration To the New Protocol": while a group migrates, the workers that still
use the classic protocol keep sending JoinGroup, SyncGroup, Heartbeat and LeaveGroup (protocol type
``connect``); the coordinator translates each to the new protocol and reconciles every worker on
its own, "relying on the new engine to do the synchronization between them", and "has to trigger
[a rebalance] when needed by returning the REBALANCE_IN_PROGRESS error in the heartbeat response".
The same translation as the consumer's (``classic_members.py``), for connectors and tasks:

- **JoinGroup** updates the worker (url and config offset from the Connect worker metadata of its
  first - most preferred - protocol, the classic session timeout and protocols, the rebalance
  timeout), bumps the group epoch when the worker is new (a url change bumps nothing: it is no
  input of the assignment), asks a new-protocol worker for a target when one is needed, and
  reconciles the worker with the connectors and tasks its metadata's allocation says it runs (the
  eager protocol, v0, reports none: an eager worker stopped everything before joining). The answer
  is immediate: generation = the worker's epoch after reconciliation, protocol = its first, no
  leader (every classic worker is a follower: the target is computed by a new-protocol worker)
  and no member list. A v4+ worker without member id gets MEMBER_ID_REQUIRED with a new id first.
  The worker must sync within its rebalance timeout (else it is removed).
- **SyncGroup** returns the worker's Connect assignment in the version of its protocol
  (``connect_migration.classic_assignment``): its assigned connectors and tasks, those pending
  revocation as revoked (v1/v2), the group's config offset, and the leader, leader url and delay
  of the header the assigner installed with the target.
- **Heartbeat** keeps the session (the classic session timeout) and answers REBALANCE_IN_PROGRESS
  when the worker must rejoin: an installed target epoch is ahead of it, it has items to revoke,
  or items it waits for were released. Unlike the consumer translation, a group epoch merely ahead
  of the target does not make it rejoin: the target of a connect group is computed by a worker
  (Prepare/Install) and is not there yet; the classic worker would rejoin for nothing.
- **LeaveGroup** removes the named workers; when only classic workers remain the group may convert
  back (``ConnectGroupManager``).

Errors as the consumer translation: an unknown worker or one that does not use the classic
protocol is UNKNOWN_MEMBER_ID; a generation other than the worker's epoch ILLEGAL_GENERATION; a
protocol type other than ``connect``, a SyncGroup protocol name other than the worker's, protocols
the classic workers share none of, or undecodable Connect metadata INCONSISTENT_GROUP_PROTOCOL.

Not here: static membership (Connect has none), the KIP-814 SkipAssignment answer.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

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
from groupcoord.coordinator.connect_group import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.connect_migration import (
    CONNECT_PROTOCOL_TYPE,
    classic_assignment,
    header_of,
    member_metadata_value,
    owned_items,
)
from groupcoord.coordinator.consumer_group import MemberState
from groupcoord.coordinator.migration import classic_metadata
from groupcoord.coordinator.records import connect_member_metadata_record
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.connect_protocol import ConnectProtocolError, decode_worker_metadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.connect_groups import ConnectGroupManager

log = logging.getLogger(__name__)

_E = ErrorCode

#: Timer kinds: a classic worker told to rejoin must do so within its rebalance timeout, and a
#: worker that joined must sync within it (keys ``(kind, group id, member id)``).
JOIN_TIMEOUT = "connect-classic-join"
SYNC_TIMEOUT = "connect-classic-sync"


def _err(code: ErrorCode, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


class ClassicWorkers:
    """Translation of the classic APIs for the workers of connect groups (one per shard)."""

    def __init__(self, manager: ConnectGroupManager) -> None:
        self.manager = manager
        self.shard = manager.shard
        self.shard.register_timer(JOIN_TIMEOUT, self._timed_out)
        self.shard.register_timer(SYNC_TIMEOUT, self._timed_out)

    # ------------------------------------------------------------------ plumbing

    def forget(self, group_id: str, member_id: str) -> None:
        """A worker left the group: its classic deadlines go."""
        self.shard.cancel((JOIN_TIMEOUT, group_id, member_id))
        self.shard.cancel((SYNC_TIMEOUT, group_id, member_id))

    def _timed_out(self, key: TimerKey, payload: Any) -> None:
        kind, gid, mid = key
        group = self.shard.groups.get(gid)
        if not isinstance(group, ConnectGroup):
            return
        member = group.members.get(mid)
        if member is not None and member.classic is not None:
            log.info("[%s] classic worker %s did not %s within its rebalance timeout", gid, mid,
                     "rejoin" if kind == JOIN_TIMEOUT else "sync")
            self.manager.fence(group, member)

    def _ask_to_rejoin(self, group_id: str, member: ConnectGroupMember) -> None:
        key = (JOIN_TIMEOUT, group_id, member.member_id)
        if key not in self.shard.timers:
            self.shard.schedule(key, self.shard.now + max(member.rebalance_timeout_ms, 0))

    def _worker(self, group: ConnectGroup, member_id: str) -> ConnectGroupMember:
        """The classic worker a SyncGroup / Heartbeat / LeaveGroup speaks for."""
        member = group.members.get(member_id)
        if member is None:
            raise _err(_E.unknown_member_id,
                       f"Worker {member_id} is not a member of group {group.group_id}.")
        if member.classic is None:
            raise _err(_E.unknown_member_id,
                       f"Worker {member_id} of group {group.group_id} does not use the classic "
                       f"protocol.")
        return member

    def _waiting_on_unreleased(self, group: ConnectGroup, member: ConnectGroupMember) -> bool:
        """Whether every target item the worker still lacks is held by another worker."""
        for c, ts in group.target_of(member.member_id).items.items():
            mine = member.assigned.get(c, frozenset())
            for t in ts - mine:
                owner = group.owner_of(c, t)
                if owner is None or owner == member.member_id:
                    return False
        return True

    def _must_rejoin(self, group: ConnectGroup, member: ConnectGroupMember) -> bool:
        return (member.member_epoch < group.assignment_epoch
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not self._waiting_on_unreleased(group, member)))

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: ConnectGroup, r: JoinGroupRequest) -> JoinGroupResponse:
        gid = group.group_id
        m = self.manager
        is_unknown = not r.member_id
        member_id = r.member_id or self._new_member_id(group, r)
        if len(group.members) >= self.shard.config.consumer_max_size \
                and member_id not in group.members:
            return JoinGroupResponse(_E.group_max_size_reached, member_id=r.member_id)
        self._check_protocols(group, r)
        if is_unknown and r.version >= JOIN_MEMBER_ID_REQUIRED_VERSION:
            log.info("[%s] new classic worker: asking it to rejoin with member id %s", gid,
                     member_id)
            return JoinGroupResponse(_E.member_id_required, member_id=member_id)
        first = r.protocols[0]
        try:
            meta = decode_worker_metadata(first.metadata)
            owned = owned_items(first.name, first.metadata)
        except ConnectProtocolError as e:
            log.info("[%s] JoinGroup of %s refused: %s", gid, member_id, e)
            return JoinGroupResponse(_E.inconsistent_group_protocol, member_id=r.member_id)

        # ---- 1. find or create the worker
        existing = group.members.get(member_id)
        if existing is not None and existing.classic is None:
            raise _err(_E.unknown_member_id, f"Worker {member_id} of group {gid} does not use "
                                             f"the classic protocol.")
        base = existing or ConnectGroupMember(member_id)
        updated = replace(
            base, instance_id=r.group_instance_id, url=meta.url, client_id=r.client_id,
            client_host=r.client_host, client_assignors=(),
            classic=classic_metadata(r.session_timeout_ms, r.protocols),
            rebalance_timeout_ms=(r.rebalance_timeout_ms if r.rebalance_timeout_ms > 0
                                  else base.rebalance_timeout_ms))
        if existing is None or member_metadata_value(existing) != member_metadata_value(updated):
            m.append(connect_member_metadata_record(gid, member_id,
                                                    member_metadata_value(updated)))
        if existing is None:
            m.bump(group)

        # ---- 2. target assignment: a new-protocol worker computes it
        m.client.request(group)

        # ---- 3. reconcile with what the metadata says the worker runs
        current = group.members[member_id]
        if existing is None:
            current = replace(current, member_epoch=0, previous_member_epoch=0,
                              state=MemberState.STABLE, assigned={}, pending_revocation={})
        reconciled = m.reconcile(group, current, owned)
        if existing is None and reconciled is current:
            m.write_current_assignment(group, current)

        # ---- 4. timers and the immediate response
        assert updated.classic is not None
        self.shard.cancel((JOIN_TIMEOUT, gid, member_id))
        m.schedule_session(gid, member_id, updated.classic.session_timeout_ms)
        self.shard.schedule((SYNC_TIMEOUT, gid, member_id),
                            self.shard.now + max(reconciled.rebalance_timeout_ms, 0))
        log.info("[%s] classic worker %s joined at epoch %d (%s)", gid, member_id,
                 reconciled.member_epoch, r.reason or "no reason given")
        return JoinGroupResponse(generation_id=reconciled.member_epoch,
                                 protocol_type=CONNECT_PROTOCOL_TYPE, protocol_name=first.name,
                                 leader="", member_id=member_id)

    def _new_member_id(self, group: ConnectGroup, r: JoinGroupRequest) -> str:
        prefix = r.group_instance_id if r.group_instance_id is not None else r.client_id
        while True:
            mid = f"{prefix}-{self.shard.new_member_id()}"
            if mid not in group.members:
                return mid

    def _check_protocols(self, group: ConnectGroup, r: JoinGroupRequest) -> None:
        """Protocol type ``connect``, and a protocol every classic worker supports."""
        if r.protocol_type != CONNECT_PROTOCOL_TYPE or not r.protocols:
            raise _err(_E.inconsistent_group_protocol,
                       f"Group {group.group_id} is a connect group: only the Connect protocol "
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
                       f"The classic workers of group {group.group_id} share none of the "
                       f"protocols {[p.name for p in r.protocols]}.")

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: ConnectGroup, r: SyncGroupRequest) -> SyncGroupResponse:
        gid = group.group_id
        member = self._worker(group, r.member_id)
        if r.generation_id != member.member_epoch:
            return SyncGroupResponse(_E.illegal_generation)
        assert member.classic is not None
        protocol = member.classic.supported_protocols[0][0]
        if (r.protocol_type is not None and r.protocol_type != CONNECT_PROTOCOL_TYPE) or \
                (r.protocol_name is not None and r.protocol_name != protocol):
            return SyncGroupResponse(_E.inconsistent_group_protocol)
        if group.assignment_epoch > member.member_epoch and \
                member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ask_to_rejoin(gid, member)
            return SyncGroupResponse(_E.rebalance_in_progress)
        self.shard.cancel((SYNC_TIMEOUT, gid, member.member_id))
        self.manager.schedule_session(gid, member.member_id, member.classic.session_timeout_ms)
        header = header_of(group.target_of(member.member_id).metadata_bytes
                           if member.member_epoch == group.assignment_epoch
                           else member.metadata_bytes)
        return SyncGroupResponse(
            protocol_type=CONNECT_PROTOCOL_TYPE, protocol_name=protocol,
            assignment=classic_assignment(member, protocol, group.config.config_offset, header))

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: ConnectGroup, r: HeartbeatRequest) -> HeartbeatResponse:
        gid = group.group_id
        member = self._worker(group, r.member_id)
        if r.generation_id != member.member_epoch:
            return HeartbeatResponse(_E.illegal_generation)
        assert member.classic is not None
        self.manager.schedule_session(gid, member.member_id, member.classic.session_timeout_ms)
        self.manager.client.request(group)
        if self._must_rejoin(group, member):
            self._ask_to_rejoin(gid, member)
            return HeartbeatResponse(_E.rebalance_in_progress)
        return HeartbeatResponse()

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: ConnectGroup, r: LeaveGroupRequest) -> list[LeaveGroupMemberResponse]:
        results: list[LeaveGroupMemberResponse] = []
        leaving: dict[str, ConnectGroupMember] = {}
        for ident in r.members:
            mid, iid = ident.member_id, ident.group_instance_id
            try:
                member = self._worker(group, mid)
            except CoordinatorError as e:
                results.append(LeaveGroupMemberResponse(mid, iid, e.code))
                continue
            log.info("[%s] classic worker %s left (%s)", group.group_id, member.member_id,
                     ident.reason or "no reason given")
            leaving[member.member_id] = member
            results.append(LeaveGroupMemberResponse(mid, iid))
        if leaving:
            self.manager.fence_members(group, tuple(leaving[k] for k in sorted(leaving)))
        return results


__all__ = ["JOIN_TIMEOUT", "SYNC_TIMEOUT", "ClassicWorkers"]
