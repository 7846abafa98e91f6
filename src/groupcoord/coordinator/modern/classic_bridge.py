"""Classic members inside a new-protocol group: the translation both group types share (online migration).

KIP-848 "Supporting Online Consumer Group Upgrade" and the Connect draft's "Migration To the New
Protocol" describe one mechanism for two group types: while a group migrates, the members that
still use the classic protocol keep sending JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and
the coordinator translates each request to the new protocol, reconciling every member on its own
and asking a member to rejoin (REBALANCE_IN_PROGRESS) when the new engine needs it to. This module
holds what the translation is for both: :class:`ClassicBridge` with

- the deadlines: a member told to rejoin must do so within its rebalance timeout, a member that
  joined must sync within it (else it is fenced); a member that leaves loses both;
- the member lookup of SyncGroup / Heartbeat / LeaveGroup (UNKNOWN_MEMBER_ID for an unknown member
  or one on the new protocol; FENCED_INSTANCE_ID for a static member id mismatch where the group
  type has static classic members);
- the checks of a JoinGroup before the member is touched (GROUP_MAX_SIZE_REACHED, the protocol
  type and a protocol every other classic member supports, MEMBER_ID_REQUIRED for a v4+ dynamic
  member without member id, metadata that does not decode) and its immediate answer (generation =
  the member's epoch after reconciliation, no leader, no member list);
- the JoinGroup's embedded generation (ConsumerProtocolSubscription v2+ ``GenerationId``) is not
  checked: KIP-848 "JoinGroup Handling" says it must equal the member epoch, but Kafka 4's
  ``GroupMetadataManager.classicGroupJoinToConsumerGroup`` reads only the subscription's topics,
  owned partitions and rack, and checks the generation on SyncGroup and Heartbeat
  (``throwIfGenerationIdUnmatched``); we follow Kafka (a classic client that lost its
  generation rejoins with -1);
- SyncGroup (ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS while the
  member is behind and not revoking, else the member's assignment), Heartbeat (the session, and
  REBALANCE_IN_PROGRESS when the member is behind, must revoke, or waits on items nobody holds)
  and LeaveGroup (named members fenced at once, in member id order).

What differs stays with each group type (``modern/consumer/classic_members.py`` for consumer groups,
``modern/connect/classic_workers.py`` for connect groups): how JoinGroup metadata becomes a member and is
reconciled, the assignment bytes of SyncGroup, which epoch a member must reach before it stops
being asked to rejoin (the group epoch, or the epoch of an installed target), how a heartbeat
gets a pending target computed, and whether the type has static classic members. Not here: the
conversions between group types (``modern/consumer/migration.py``, ``modern/connect/migration.py``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from groupcoord.coordinator.classic.messages import (
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
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import MemberState, ModernGroupMember
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

_E = ErrorCode


M = TypeVar("M", bound=ModernGroupMember)
G = TypeVar("G", bound=ModernGroup[Any])


class BridgedManager(Protocol):
    """What the translation asks of the new-protocol group manager."""

    @property
    def shard(self) -> ShardContext: ...
    def schedule_session(self, group_id: str, member_id: str, timeout_ms: int) -> None: ...
    def fence_members(self, group: Any, members: tuple[Any, ...],
                      allow_downgrade: bool = True) -> None: ...
    def _request_target(self, group: Any) -> None: ...


class ClassicBridge(ABC, Generic[G, M]):
    """The classic APIs for the members of one new-protocol group type (one per shard)."""

    #: Timer kinds of the rejoin and sync deadlines (keys ``(kind, group id, member id)``).
    join_timeout: ClassVar[str]
    sync_timeout: ClassVar[str]
    #: The group model this translation serves, and its classic protocol type.
    group_class: ClassVar[type[Any]]
    protocol_type: ClassVar[str]
    #: How errors and logs name a member ("member", "worker"), the group type ("consumer
    #: group") and its embedded protocol ("consumer protocol").
    noun: ClassVar[str]
    group_noun: ClassVar[str]
    protocol_noun: ClassVar[str]
    #: Whether a classic member may be static (instance ids are then checked and resolved).
    static_membership: ClassVar[bool]
    #: The errors of metadata that does not decode (answered INCONSISTENT_GROUP_PROTOCOL).
    decode_errors: ClassVar[tuple[type[Exception], ...]]

    manager: BridgedManager

    def __init__(self, manager: BridgedManager) -> None:
        self.manager = manager
        self.shard = manager.shard
        self.shard.register_timer(self.join_timeout, self._timed_out)
        self.shard.register_timer(self.sync_timeout, self._timed_out)

    # ------------------------------------------------------------------ what differs

    @abstractmethod
    def _rejoin_epoch(self, group: G) -> int:
        """The epoch a member must have reached not to be asked to rejoin."""
        raise NotImplementedError

    @abstractmethod
    def _target_items(self, group: G, member: M) -> Iterable[tuple[Any, frozenset[int]]]:
        """The member's target assignment, as (topic or connector, numbers)."""
        raise NotImplementedError

    @abstractmethod
    def _assigned(self, member: M) -> Mapping[Any, frozenset[int]]:
        raise NotImplementedError

    def _request_target(self, group: G) -> None:
        """A heartbeat's duty: have a pending target assignment computed (as the group type's
        own heartbeat does)."""
        self.manager._request_target(group)

    @abstractmethod
    def _sync_assignment(self, group: G, member: M, protocol: str) -> bytes:
        """The member's assignment as SyncGroup returns it, for its protocol ``protocol``."""
        raise NotImplementedError

    @abstractmethod
    def _decode(self, r: JoinGroupRequest) -> Any:
        """The JoinGroup's metadata (of its first protocol) decoded; raises one of
        :attr:`decode_errors` when it does not decode."""
        raise NotImplementedError

    @abstractmethod
    def _join(self, group: G, r: JoinGroupRequest, member_id: str, is_unknown: bool,
              decoded: Any) -> JoinGroupResponse:
        """Find, create or replace the member, update and reconcile it (the checks passed);
        answer with :meth:`_joined`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing

    def forget(self, group_id: str, member_id: str) -> None:
        """A member left the group: its classic deadlines go."""
        self.shard.cancel((self.join_timeout, group_id, member_id))
        self.shard.cancel((self.sync_timeout, group_id, member_id))

    def _timed_out(self, key: TimerKey, payload: Any) -> None:
        kind, gid, mid = key
        group = self.shard.groups.get(gid)
        if not isinstance(group, self.group_class):
            return
        member = group.members.get(mid)
        if member is not None and member.classic is not None:
            log.info("[%s] classic %s %s did not %s within its rebalance timeout", gid, self.noun,
                     mid, "rejoin" if kind == self.join_timeout else "sync")
            self.manager.fence_members(group, (member,))

    def _schedule_session(self, group_id: str, member: M) -> None:
        assert member.classic is not None
        self.manager.schedule_session(group_id, member.member_id,
                                       member.classic.session_timeout_ms)

    def _ask_to_rejoin(self, group_id: str, member: M) -> None:
        key = (self.join_timeout, group_id, member.member_id)
        if key not in self.shard.timers:
            self.shard.schedule(key, self.shard.now + max(member.rebalance_timeout_ms, 0))

    def _classic_member(self, group: G, member_id: str, instance_id: str | None) -> M:
        """The classic member a SyncGroup / Heartbeat / LeaveGroup speaks for."""
        member: M | None
        if instance_id is None or not self.static_membership:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise CoordinatorError(
                    _E.fenced_instance_id,
                    f"Static {self.noun} {member_id} with instance id {instance_id} was fenced "
                    f"by {self.noun} {member.member_id}.")
        noun = self.noun.capitalize()
        if member is None:
            raise CoordinatorError(_E.unknown_member_id, f"{noun} {member_id} is not a member of "
                                                         f"group {group.group_id}.")
        if member.classic is None:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"{noun} {member_id} of group {group.group_id} does not use "
                                   f"the classic protocol.")
        return member

    def _waiting_on_unreleased(self, group: G, member: M) -> bool:
        """Whether every target item the member still lacks is held by another member."""
        assigned = self._assigned(member)
        for key, items in self._target_items(group, member):
            mine = assigned.get(key, frozenset())
            for item in items - mine:
                owner = group.owner_of(key, item)
                if owner is None or owner == member.member_id:
                    return False
        return True

    def _must_rejoin(self, group: G, member: M) -> bool:
        return (member.member_epoch < self._rejoin_epoch(group)
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not self._waiting_on_unreleased(group, member)))

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: G, r: JoinGroupRequest) -> JoinGroupResponse:
        gid = group.group_id
        is_unknown = not r.member_id
        member_id = r.member_id or self._new_member_id(group, r)
        static = self.static_membership and r.group_instance_id is not None
        if len(group.members) >= self.shard.config.consumer_max_size \
                and member_id not in group.members \
                and not (static and group.static_member(r.group_instance_id or "") is not None):
            return JoinGroupResponse(_E.group_max_size_reached, member_id=r.member_id)
        self._check_protocols(group, r)
        if is_unknown and not static and r.version >= JOIN_MEMBER_ID_REQUIRED_VERSION:
            log.info("[%s] new classic %s: asking it to rejoin with member id %s", gid, self.noun,
                     member_id)
            return JoinGroupResponse(_E.member_id_required, member_id=member_id)
        try:
            decoded = self._decode(r)
        except self.decode_errors as e:
            log.info("[%s] JoinGroup of %s refused: %s", gid, member_id, e)
            return JoinGroupResponse(_E.inconsistent_group_protocol, member_id=r.member_id)
        return self._join(group, r, member_id, is_unknown, decoded)

    def _joined(self, group_id: str, member: M, session_timeout_ms: int, protocol_name: str,
                reason: str | None) -> JoinGroupResponse:
        """Step 4 of a JoinGroup: the deadlines (session; sync within the rebalance timeout) and
        the immediate answer."""
        mid = member.member_id
        self.shard.cancel((self.join_timeout, group_id, mid))
        self.manager.schedule_session(group_id, mid, session_timeout_ms)
        self.shard.schedule((self.sync_timeout, group_id, mid),
                            self.shard.now + max(member.rebalance_timeout_ms, 0))
        log.info("[%s] classic %s %s joined at epoch %d (%s)", group_id, self.noun, mid,
                 member.member_epoch, reason or "no reason given")
        return JoinGroupResponse(generation_id=member.member_epoch,
                                 protocol_type=self.protocol_type, protocol_name=protocol_name,
                                 leader="", member_id=mid)

    def _new_member_id(self, group: G, r: JoinGroupRequest) -> str:
        prefix = r.group_instance_id if r.group_instance_id is not None else r.client_id
        while True:
            mid = f"{prefix}-{self.shard.new_member_id()}"
            if mid not in group.members:
                return mid

    def _check_protocols(self, group: G, r: JoinGroupRequest) -> None:
        """The group type's protocol type, and a protocol every other classic member supports."""
        if r.protocol_type != self.protocol_type or not r.protocols:
            raise CoordinatorError(
                _E.inconsistent_group_protocol,
                f"Group {group.group_id} is a {self.group_noun}: only the {self.protocol_noun} "
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
            raise CoordinatorError(
                _E.inconsistent_group_protocol,
                f"The classic {self.noun}s of group {group.group_id} share none of the "
                f"protocols {[p.name for p in r.protocols]}.")

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: G, r: SyncGroupRequest) -> SyncGroupResponse:
        gid = group.group_id
        member = self._classic_member(group, r.member_id, r.group_instance_id)
        if r.generation_id != member.member_epoch:
            return SyncGroupResponse(_E.illegal_generation)
        assert member.classic is not None
        protocol = member.classic.supported_protocols[0][0]
        if (r.protocol_type is not None and r.protocol_type != self.protocol_type) or \
                (r.protocol_name is not None and r.protocol_name != protocol):
            return SyncGroupResponse(_E.inconsistent_group_protocol)
        if self._rejoin_epoch(group) > member.member_epoch and \
                member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ask_to_rejoin(gid, member)
            return SyncGroupResponse(_E.rebalance_in_progress)
        self.shard.cancel((self.sync_timeout, gid, member.member_id))
        self._schedule_session(gid, member)
        return SyncGroupResponse(protocol_type=self.protocol_type, protocol_name=protocol,
                                 assignment=self._sync_assignment(group, member, protocol))

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: G, r: HeartbeatRequest) -> HeartbeatResponse:
        gid = group.group_id
        member = self._classic_member(group, r.member_id, r.group_instance_id)
        if r.generation_id != member.member_epoch:
            return HeartbeatResponse(_E.illegal_generation)
        self._schedule_session(gid, member)
        self._request_target(group)
        if self._must_rejoin(group, member):
            self._ask_to_rejoin(gid, member)
            return HeartbeatResponse(_E.rebalance_in_progress)
        return HeartbeatResponse()

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: G, r: LeaveGroupRequest) -> list[LeaveGroupMemberResponse]:
        results: list[LeaveGroupMemberResponse] = []
        leaving: dict[str, M] = {}
        for ident in r.members:
            mid, iid = ident.member_id, ident.group_instance_id
            member: M | None
            try:
                if self.static_membership and not mid and iid is not None:
                    # an administrative removal by instance id
                    member = group.static_member(iid)
                    if member is None:
                        raise CoordinatorError(_E.unknown_member_id, f"Instance id {iid} is unknown.")
                else:
                    member = self._classic_member(group, mid, iid)
            except CoordinatorError as e:
                results.append(LeaveGroupMemberResponse(mid, iid, e.code))
                continue
            log.info("[%s] classic %s %s left (%s)", group.group_id, self.noun, member.member_id,
                     ident.reason or "no reason given")
            leaving[member.member_id] = member
            results.append(LeaveGroupMemberResponse(mid, iid))
        if leaving:
            self.manager.fence_members(group, tuple(leaving[k] for k in sorted(leaving)))
        return results


__all__ = ["BridgedManager", "ClassicBridge"]
