"""Classic Connect workers inside a connect group (online migration, the Connect draft "Migration To the New
Protocol").

The Connect draft's "Migration To the New Protocol": while a group migrates, the workers that still
use the classic protocol keep sending JoinGroup, SyncGroup, Heartbeat and LeaveGroup (protocol type
``connect``); the coordinator translates each to the new protocol and reconciles every worker on
its own, "relying on the new engine to do the synchronization between them", and "has to trigger
[a rebalance] when needed by returning the REBALANCE_IN_PROGRESS error in the heartbeat response".
The same translation as the consumer's (``modern/consumer/classic_members.py``), for connectors and tasks:

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

The request plumbing, deadlines, lookups, protocol checks and the SyncGroup / Heartbeat /
LeaveGroup flow are the shared ``classic_bridge.ClassicBridge``; this module holds what is the
connect group's: the JoinGroup translation, the Connect assignment of SyncGroup and the rejoin rule.

Not here: static membership (Connect has none), the KIP-814 SkipAssignment answer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.classic.messages import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.modern.classic_bridge import ClassicBridge
from groupcoord.coordinator.modern.connect.migration import (
    CONNECT_PROTOCOL_TYPE,
    classic_assignment,
    header_of,
    member_metadata_value,
    owned_items,
)
from groupcoord.coordinator.modern.connect.model import ConnectGroup, ConnectGroupMember
from groupcoord.coordinator.modern.member import MemberState
from groupcoord.coordinator.modern.migration import classic_metadata
from groupcoord.coordinator.records import connect_member_metadata_record
from groupcoord.protocol.connect_protocol import (
    ConnectProtocolError,
    WorkerMetadata,
    decode_worker_metadata,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.modern.group_manager import NewProtocolGroupManager

log = logging.getLogger(__name__)

_E = ErrorCode

#: Timer kinds: a classic worker told to rejoin must do so within its rebalance timeout, and a
#: worker that joined must sync within it (keys ``(kind, group id, member id)``).
JOIN_TIMEOUT = "connect-classic-join"
SYNC_TIMEOUT = "connect-classic-sync"


class ClassicWorkers(ClassicBridge[ConnectGroup, ConnectGroupMember]):
    """Translation of the classic APIs for the workers of connect groups (one per shard)."""

    manager: NewProtocolGroupManager[ConnectGroup, ConnectGroupMember, Any, Any]

    join_timeout = JOIN_TIMEOUT
    sync_timeout = SYNC_TIMEOUT
    group_class = ConnectGroup
    protocol_type = CONNECT_PROTOCOL_TYPE
    noun = "worker"
    group_noun = "connect group"
    protocol_noun = "Connect protocol"
    static_membership = False
    decode_errors = (ConnectProtocolError,)

    # ------------------------------------------------------------------ what differs

    def _rejoin_epoch(self, group: ConnectGroup) -> int:
        # The target of a connect group is computed by a worker (Prepare/Install): a group epoch
        # merely ahead of the installed target would make the classic worker rejoin for nothing.
        return group.assignment_epoch

    def _target_items(self, group: ConnectGroup,
                      member: ConnectGroupMember) -> Iterable[tuple[str, frozenset[int]]]:
        return group.target_of(member.member_id).items.items()

    def _assigned(self, member: ConnectGroupMember) -> Mapping[str, frozenset[int]]:
        return member.assigned

    def _sync_assignment(self, group: ConnectGroup, member: ConnectGroupMember,
                         protocol: str) -> bytes:
        header = header_of(group.target_of(member.member_id).metadata_bytes
                           if member.member_epoch == group.assignment_epoch
                           else member.metadata_bytes)
        return classic_assignment(member, protocol, group.config.config_offset, header)

    def _decode(self, r: JoinGroupRequest) -> tuple[WorkerMetadata, dict[str, frozenset[int]]]:
        first = r.protocols[0]
        return decode_worker_metadata(first.metadata), owned_items(first.name, first.metadata)

    # ------------------------------------------------------------------ JoinGroup

    def _join(self, group: ConnectGroup, r: JoinGroupRequest, member_id: str, is_unknown: bool,
              decoded: Any) -> JoinGroupResponse:
        gid = group.group_id
        m = self.manager
        meta, owned = decoded

        # ---- 1. find or create the worker
        existing = group.members.get(member_id)
        if existing is not None and existing.classic is None:
            raise CoordinatorError(_E.unknown_member_id, f"Worker {member_id} of group {gid} does "
                                                         f"not use the classic protocol.")
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
            m._bump(group)

        # ---- 2. target assignment: a new-protocol worker computes it
        self._request_target(group)

        # ---- 3. reconcile with what the metadata says the worker runs
        current = group.members[member_id]
        if existing is None:
            current = replace(current, member_epoch=0, previous_member_epoch=0,
                              state=MemberState.STABLE, assigned={}, pending_revocation={})
        reconciled = m._reconcile(group, current, owned)
        if existing is None and reconciled is current:
            m._write_current_assignment(group, current)

        # ---- 4. timers and the immediate response
        assert updated.classic is not None
        return self._joined(gid, reconciled, updated.classic.session_timeout_ms, r.protocols[0].name,
                            r.reason)


__all__ = ["JOIN_TIMEOUT", "SYNC_TIMEOUT", "ClassicWorkers"]
