"""What the managers of the new-protocol group types share (consumer groups, connect groups).

KIP-848's rebalance protocol ("ConsumerGroupHeartbeat API", "Static Membership", "Member Epoch -
Reconciliation", "Fail Over") is also the Connect draft's: a connect group is "the machinery of
consumer groups" with connectors and tasks for partitions. :class:`NewProtocolGroupManager` holds
that machinery once, for one group type of one shard:

- the heartbeat flow: leave (epoch < 0), upgrade of a classic group (epoch 0), finding the member
  (``membership.resolve_member``), client assignors (UNSUPPORTED_ASSIGNOR), the epoch check that
  fences a member (FENCED_MEMBER_EPOCH; the lost-response case accepted; a stale epoch-0 join of
  a member on the new protocol refused without change), the metadata update and
  the group epoch bump, the static replacement that hands the target over, the target assignment,
  reconciliation, the session timeout and the response;
- leaving (-1 for good, -2 a static member's temporary leave), removing members (tombstones, timers)
  and fencing them with one epoch bump, or the conversion back to a classic group when only
  classic members remain and the policy allows it (``modern/migration.py``);
- the upgrade of a non-empty classic group on a join (GROUP_ID_NOT_FOUND when refused);
- writing a member's current assignment with its rebalance timeout (armed once per epoch at which
  it must revoke; fencing it when it fires), the session timeout, and the load duties (timers
  armed again, a pending target asked for).

Each group type (``modern/consumer/handlers.py``, ``modern/connect/handlers.py``) supplies its
records, its model, its request validation and what differs in the flow: how the request updates a
member and what change bumps the group epoch, who computes the target (a server assignor at once, or
a chosen member through Prepare/Install), what a response carries, and its words in errors and logs.
Not here: replay (record layouts differ), describe, the client-side assignment
(``modern/client_assignment.py``) and the classic translation (``modern/classic_bridge.py``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from groupcoord.coordinator.classic.model import ClassicGroup
from groupcoord.coordinator.modern.client_assignment import check_assignors
from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    MemberState,
    ModernGroupMember,
)
from groupcoord.coordinator.modern.membership import Resolved, resolve_member
from groupcoord.coordinator.modern.migration import MigrationError
from groupcoord.coordinator.records import ClassicGroupMetadataValue, Record, RecordType
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext
    from groupcoord.coordinator.modern.classic_bridge import ClassicBridge
    from groupcoord.coordinator.modern.client_assignment import ClientAssignment

log = logging.getLogger(__name__)

_E = ErrorCode

G = TypeVar("G", bound=ModernGroup[Any])  # the group model
M = TypeVar("M", bound=ModernGroupMember)  # its member
Req = TypeVar("Req")  # its heartbeat request
Resp = TypeVar("Resp")  # its heartbeat response


def _err(code: int, message: str) -> CoordinatorError:
    return CoordinatorError(code, message)


class NewProtocolGroupManager(ABC, Generic[G, M, Req, Resp]):
    """One new-protocol group type of one shard: the shared heartbeat, leave, fence, upgrade
    and reconciliation-write flow (subclasses register handlers, replayers and timers)."""

    #: The group model (``ConsumerGroup``, ``ConnectGroup``) and its heartbeat response type.
    group_class: ClassVar[type[Any]]
    response_class: ClassVar[type[Any]]
    #: The group metadata record (group epoch; its tombstone deletes the group).
    metadata_record_type: ClassVar[RecordType]
    #: Timer kinds of the session and rebalance timeouts (keys ``(kind, group id, member id)``).
    session_kind: ClassVar[str]
    rebalance_kind: ClassVar[str]
    #: Words of errors and logs: "member" / "worker", "consumer group" / "connect group", the
    #: group a member leaves ("the consumer group" / "the group").
    noun: ClassVar[str]
    group_noun: ClassVar[str]
    left_group: ClassVar[str]
    #: Whether a departed member keeps its target entry until the next installed target
    #: (connect groups) instead of losing it with its other records (consumer groups).
    keeps_departed_targets: ClassVar[bool]
    #: Whether a member's classic deadlines go before its tombstones (connect groups) or after
    #: its own timers (consumer groups): the order of the timer changes a removal reports.
    forgets_classic_first: ClassVar[bool]

    shard: ShardContext
    client: ClientAssignment
    classic_bridge: ClassicBridge[Any, Any]

    # ------------------------------------------------------------------ plumbing

    def append(self, record: Record) -> None:
        self.shard.append(record)

    def _lookup(self, group_id: str) -> G | None:
        g = self.shard.groups.get(group_id)
        return g if isinstance(g, self.group_class) else None

    def _group(self, group_id: str) -> G | None:
        """The group ``group_id`` of this type; GROUP_ID_NOT_FOUND if the id has another type."""
        g = self.shard.groups.get(group_id)
        if g is None or isinstance(g, self.group_class):
            return g
        raise _err(_E.group_id_not_found,
                   f"Group {group_id} is not a {self.group_class.group_type} group (it is a "
                   f"{g.group_type} group).")

    def schedule_session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.shard.schedule((self.session_kind, group_id, member_id), self.shard.now + timeout_ms)

    def _replay_group(self, record: Record) -> G | None:
        """Replay's first step, the same for every record type of the group type: the group
        metadata record sets the epoch (creating the group), its tombstone deletes the group;
        any other record creates the group it names (a tombstone for a group that is not there
        does nothing). The group the record is then for, or None when nothing is left to do."""
        key = record.key
        value: Any = record.value
        gid = key.group_id
        groups = self.shard.groups
        existing = groups.get(gid)
        group = existing if isinstance(existing, self.group_class) else None
        if existing is not None and group is None:
            raise ValueError(f"{self.group_class.group_type} record {key.type.name} for "
                             f"{existing.group_type} group {gid}")
        if key.type is self.metadata_record_type:
            if value is None:
                groups.pop(gid, None)
                return None
            if group is None:
                group = groups[gid] = self.group_class(gid)
            group.group_epoch = value.epoch
            return None
        if group is None:
            if value is None:
                return None
            group = groups[gid] = self.group_class(gid)
        return group

    # ------------------------------------------------------------------ what differs

    @abstractmethod
    def _validate_heartbeat(self, r: Req) -> None:
        raise NotImplementedError

    def _replaces_at_once(self, group: G, member_id: str, r: Req) -> M | None:
        """A static member a join (epoch 0, instance id) replaces at once, without the
        temporary leave ``membership.resolve_member`` asks for (None: the usual rules)."""
        return None

    def _refuses_classic(self, existing: Any, r: Any) -> bool:
        """Whether a heartbeat for ``existing`` (a member using the classic protocol) is
        UNKNOWN_MEMBER_ID."""
        return True

    @abstractmethod
    def _downgrades_when_fenced(self, r: Any) -> bool:
        """Whether fencing a member for its epoch may convert the group to a classic group."""
        raise NotImplementedError

    @abstractmethod
    def _fenced_epoch_message(self, r: Any, existing: Any) -> str:
        raise NotImplementedError

    @abstractmethod
    def _reports_subset(self, member: Any, r: Any) -> bool:
        """The lost-response case: the request reports what it owns, all of it assigned."""
        raise NotImplementedError

    @abstractmethod
    def _replacement(self, member_id: str, replaced: M | None) -> M:
        """A new member (inheriting a replaced static member's assignment)."""
        raise NotImplementedError

    @abstractmethod
    def _apply_request(self, member: M, r: Req) -> M:
        raise NotImplementedError

    @abstractmethod
    def _inputs_changed(self, updated: M, reference: M) -> bool:
        """Whether the update changed an input of the assignment (the group epoch is bumped)."""
        raise NotImplementedError

    @abstractmethod
    def _handover_record(self, group: G, member_id: str, replaced: M) -> Record | None:
        """The target entry a replaced static member hands to ``member_id``."""
        raise NotImplementedError

    @abstractmethod
    def _metadata_value(self, m: M) -> Any:
        raise NotImplementedError

    @abstractmethod
    def _member_metadata_record(self, group_id: str, m: M) -> Record:
        raise NotImplementedError

    @abstractmethod
    def _bump(self, group: G) -> None:
        """Bump the group epoch (a member joined, or an assignment input changed)."""
        raise NotImplementedError

    def _refresh_subscriptions(self, group: G, r: Req, now: int) -> bool:
        """Resolve again what the group's subscriptions cover, with this heartbeat's context;
        True if that changed (the group epoch is then bumped). Consumer groups resolve their
        regular expressions here; by default nothing."""
        return False

    @abstractmethod
    def _request_target(self, group: G) -> None:
        """Have a target assignment computed when the group epoch is ahead of it."""
        raise NotImplementedError

    @abstractmethod
    def _joining(self, current: M, base: M) -> M:
        """A joining member as it stands for reconciliation (epoch 0, ``base``'s assignment)."""
        raise NotImplementedError

    @abstractmethod
    def _owned(self, r: Req) -> Any:
        """What the request reports owning (None: not reported)."""
        raise NotImplementedError

    @abstractmethod
    def _reconcile(self, group: G, member: M, owned: Any) -> M:
        raise NotImplementedError

    @abstractmethod
    def _heartbeat_assignment(self, group: G, r: Req, existing: M | None, reconciled: M) -> Any:
        """The assignment a heartbeat response carries (None: none)."""
        raise NotImplementedError

    @abstractmethod
    def _current_assignment_record(self, group_id: str, m: M) -> Record:
        raise NotImplementedError

    @abstractmethod
    def _temporary_leave_record(self, group_id: str, member: M) -> Record:
        """A static member's current assignment once it left temporarily (epoch -2)."""
        raise NotImplementedError

    @abstractmethod
    def _removal_records(self, group: G, member_id: str, keep_target: bool) -> list[Record]:
        """A removed member's tombstones (its target entry's too unless ``keep_target``)."""
        raise NotImplementedError

    @abstractmethod
    def _after_removal(self, group: G) -> None:
        """Members were removed and the group stays: bump its epoch (and ask for a target)."""
        raise NotImplementedError

    @abstractmethod
    def _downgrade_refusal(self, group: G, leaving: set[str]) -> str | None:
        raise NotImplementedError

    @abstractmethod
    def _to_classic(self, group: G, leaving: set[str]) -> ClassicGroupMetadataValue:
        raise NotImplementedError

    @abstractmethod
    def _upgrade_refusal(self, classic: ClassicGroup) -> str | None:
        raise NotImplementedError

    @abstractmethod
    def _convert_classic(self, classic: ClassicGroup) -> Any:
        """The group a classic group becomes (``.records``, ``.members``); MigrationError when
        its embedded protocol does not decode (the message says why)."""
        raise NotImplementedError

    @abstractmethod
    def _malformed(self, e: MigrationError) -> str:
        raise NotImplementedError

    @abstractmethod
    def _log_upgrade(self, classic: ClassicGroup, upgrade: Any) -> None:
        raise NotImplementedError

    @abstractmethod
    def _on_group_loaded(self, group: G) -> None:
        raise NotImplementedError

    @abstractmethod
    def delete_group(self, group: G) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ heartbeat

    def _heartbeat(self, r: Any, now: int) -> Resp:
        self._validate_heartbeat(r)
        if r.member_epoch < 0:
            return self._leave(r)

        gid = r.group_id
        # An empty classic group converts (as upstream): its id is free for this group. A
        # non-empty one converts when the migration policy allows it (KIP-848 "Supporting Online Consumer
        # Group Upgrade").
        if r.member_epoch == 0 and not self.shard.classic.maybe_delete_empty_group(gid):
            self._maybe_upgrade(gid)
        group: Any = self._group(gid)
        if group is None and r.member_epoch != 0:
            raise _err(_E.unknown_member_id, f"Group {gid} not found.")
        member_id = r.member_id
        if not member_id:  # v0 join: the coordinator names the member
            members = group.members if group else {}
            member_id = self.shard.new_member_id()
            while member_id in members:
                member_id = self.shard.new_member_id()

        # ---- 1. find or create the member
        at_once = (self._replaces_at_once(group, member_id, r)
                   if r.member_epoch == 0 and r.instance_id is not None and group is not None
                   else None)
        resolved: Resolved[Any]
        if at_once is not None:
            resolved = Resolved(None, at_once)
        else:
            resolved = resolve_member(
                group.members if group else {}, group.static_member if group else lambda _: None,
                member_id, r.instance_id, r.member_epoch, self.shard.config.consumer_max_size,
                gid, noun=self.noun, group_noun=self.group_noun)
        existing: Any = resolved.existing
        replaced: Any = resolved.replaced
        if existing is not None and existing.classic is not None \
                and self._refuses_classic(existing, r):
            raise _err(_E.unknown_member_id, f"{self.noun.capitalize()} {member_id} of group "
                                             f"{gid} uses the classic protocol.")

        # Client-side assignment (KIP-848 "Client-Side Assignor"): UNSUPPORTED_ASSIGNOR when the member's
        # client assignors share no name with, or no version range overlap with, the other members'.
        if r.client_assignors and group is not None:
            check_assignors(group.members, (member_id, replaced.member_id if replaced else ""),
                            r.client_assignors)

        if existing is not None and r.member_epoch != existing.member_epoch \
                and not self._epoch_is_valid(existing, r):
            assert group is not None
            if r.member_epoch == 0 and existing.classic is None:
                # A join at epoch 0 of a member the group has on the new protocol at a later
                # epoch (not the lost-response case): a stale duplicate of its first join, as
                # upstream (throwIfMemberEpochIsInvalid) FENCED_MEMBER_EPOCH changing nothing.
                # The member's request in flight is another; fencing it here would hand its
                # partitions over while it still owns them (I1). A genuine rejoin finds no
                # member: fencing (below, for a non-zero epoch) and leaving remove it.
                resp: Resp = self.response_class(error_code=_E.fenced_member_epoch,
                                                 error_message=self._fenced_epoch_message(r, existing))
                return resp
            self._fence_member(group, existing, allow_downgrade=self._downgrades_when_fenced(r))
            if r.member_epoch != 0:
                resp = self.response_class(error_code=_E.fenced_member_epoch,
                                           error_message=self._fenced_epoch_message(r, existing))
                return resp
            # a classic member joining on the new protocol (online migration): fenced above, joins
            # again below
            existing = None
            group = self._group(gid)

        is_new = existing is None
        base = existing if existing is not None else self._replacement(member_id, replaced)

        # ---- 2. update the member
        updated = self._apply_request(base, r)
        reference = replaced if replaced is not None else (None if is_new else existing)
        bump = is_new and replaced is None
        if reference is not None and updated is not reference \
                and self._inputs_changed(updated, reference):
            bump = True

        handover = None
        if replaced is not None:
            assert group is not None
            log.info("[%s] static %s %s with instance id %s replaces %s %s", gid, self.noun,
                     member_id, r.instance_id, self.noun, replaced.member_id)
            handover = self._handover_record(group, member_id, replaced)
            self._remove_member_records(group, replaced)

        if is_new or (updated is not existing
                      and self._metadata_value(existing) != self._metadata_value(updated)):
            self.append(self._member_metadata_record(gid, updated))
        group = self._group(gid)
        assert group is not None
        if handover is not None:
            self.append(handover)
        if self._refresh_subscriptions(group, r, now):  # what the subscriptions resolve to
            bump = True
        if bump:  # a new member or a changed input of the assignment
            self._bump(group)

        # ---- 3. target assignment (not while the driver holds the group's rebalance)
        if gid not in self.shard.held_groups:
            self._request_target(group)

        # ---- 4. reconcile the member
        current = group.members[member_id]
        if existing is None:
            current = self._joining(current, base)
        # client-side assignment: a group no member can compute for does not reconcile (see step 5)
        fatal = self.client.fatal(group)
        reconciled = current if fatal else self._reconcile(group, current, self._owned(r))
        if existing is None and reconciled is current:
            # Persist the new member's assignment state even when reconciliation kept it.
            self._write_current_assignment(group, reconciled)

        # ---- 5. timers and response
        cfg = self.shard.group_config(gid)
        # the group's and the member's own strings in the key, not the request's (memory)
        self.shard.schedule((self.session_kind, group.group_id, reconciled.member_id),
                            now + cfg.session_timeout_ms)
        # Client-side assignment (KIP-848 "Client-Side Assignor"): no member can compute the target ->
        # the group's fatal UNSUPPORTED_ASSIGNOR; the chosen member is told to compute it.
        if fatal is not None:
            resp = self.response_class(error_code=_E.unsupported_assignor, error_message=fatal)
            return resp
        resp = self.response_class(
            member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            assignment=self._heartbeat_assignment(group, r, existing, reconciled),
            should_compute_assignment=self.client.should_compute(group, member_id))
        return resp

    def _epoch_is_valid(self, member: Any, r: Any) -> bool:
        received = r.member_epoch
        if received == member.member_epoch:
            return True
        if received > member.member_epoch:
            return False
        if received != member.previous_member_epoch:
            return False
        return self._reports_subset(member, r)

    def _write_current_assignment(self, group: Any, m: Any) -> None:
        gid = group.group_id
        self.append(self._current_assignment_record(gid, m))
        key = (self.rebalance_kind, gid, m.member_id)
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            # Armed once per epoch at which the member must revoke: a member that acknowledged
            # one revocation and must revoke again at its next epoch gets a fresh deadline.
            timers = self.shard.timers
            if key not in timers or timers.payload(key) != m.member_epoch:
                self.shard.schedule(key, self.shard.now + max(m.rebalance_timeout_ms, 0),
                                    m.member_epoch)
        else:
            self.shard.cancel(key)

    # ------------------------------------------------------------------ leave, remove, fence

    def _leave(self, r: Any) -> Resp:
        gid = r.group_id
        group: Any = self._group(gid)
        if group is None:
            raise _err(_E.unknown_member_id, f"Group {gid} not found.")
        if r.instance_id is None:
            member = group.members.get(r.member_id)
            if member is None:
                raise _err(_E.unknown_member_id, f"{self.noun.capitalize()} {r.member_id} is not "
                                                 f"a member of group {gid}.")
            log.info("[%s] %s %s left %s", gid, self.noun, r.member_id, self.left_group)
            self._fence_member(group, member)
        else:
            member = group.static_member(r.instance_id)
            if member is None:
                raise _err(_E.unknown_member_id, f"Instance id {r.instance_id} is unknown.")
            if member.member_id != r.member_id:
                raise _err(_E.fenced_instance_id,
                           f"Static {self.noun} {r.member_id} with instance id {r.instance_id} "
                           f"was fenced by {self.noun} {member.member_id}.")
            if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("[%s] static %s %s (%s) left temporarily", gid, self.noun, r.member_id,
                         r.instance_id)
                self.append(self._temporary_leave_record(gid, member))
                self.shard.cancel((self.rebalance_kind, gid, member.member_id))
            else:
                log.info("[%s] static %s %s (%s) left %s", gid, self.noun, r.member_id,
                         r.instance_id, self.left_group)
                self._fence_member(group, member)
        cfg = self.shard.group_config(gid)
        resp: Resp = self.response_class(member_id=r.member_id, member_epoch=r.member_epoch,
                                         heartbeat_interval_ms=cfg.heartbeat_interval_ms)
        return resp

    def _remove_member_records(self, group: Any, member: Any, keep_target: bool = False) -> None:
        """The member's tombstones; its timers are cancelled."""
        gid = group.group_id
        mid = member.member_id
        self.client.member_removed(gid, mid)  # client-side assignment: an assigner that leaves is replaced
        if self.forgets_classic_first:
            self.classic_bridge.forget(gid, mid)
        for rec in self._removal_records(group, mid, keep_target):
            self.append(rec)
        self.shard.cancel((self.session_kind, gid, mid))
        self.shard.cancel((self.rebalance_kind, gid, mid))
        if not self.forgets_classic_first:
            self.classic_bridge.forget(gid, mid)

    def _fence_member(self, group: G, member: M, allow_downgrade: bool = True) -> None:
        """Remove a member (left, expired, fenced) and bump the group epoch."""
        self.fence_members(group, (member,), allow_downgrade)

    def fence_members(self, group: Any, members: tuple[Any, ...],
                      allow_downgrade: bool = True) -> None:
        """Remove members and bump the group epoch once; or, when only classic members remain
        and the policy allows it (online migration), convert the group to a classic group."""
        leaving = {m.member_id for m in members}
        value = None
        if allow_downgrade and self._downgrade_refusal(group, leaving) is None:
            try:
                value = self._to_classic(group, leaving)
            except MigrationError as e:
                log.info("[%s] cannot downgrade to a classic group: %s", group.group_id, e)
        keep = self.keeps_departed_targets
        for m in members:
            self._remove_member_records(group, m, keep_target=keep)
        if value is None:
            self._after_removal(group)
            return
        gid = group.group_id
        log.info("[%s] only classic %ss remain: converting to a classic group at generation %d",
                 gid, self.noun, value.generation)
        for mid in sorted(group.members):
            self._remove_member_records(group, group.members[mid], keep_target=keep)
        self.delete_group(group)
        self.shard.classic.adopt_downgraded(gid, value, f"downgrade of {self.group_noun} {gid}")

    # ------------------------------------------------------------------ upgrade

    def _maybe_upgrade(self, gid: str) -> None:
        """Convert the non-empty classic group ``gid`` (if it is one) to a group of this type,
        or refuse with GROUP_ID_NOT_FOUND (online migration)."""
        classic = self.shard.groups.get(gid)
        if not isinstance(classic, ClassicGroup):
            return
        refusal = self._upgrade_refusal(classic)
        upgrade = None
        if refusal is None:
            try:
                upgrade = self._convert_classic(classic)
            except MigrationError as e:
                refusal = self._malformed(e)
        if upgrade is None:
            log.info("[%s] cannot upgrade the classic group: %s", gid, refusal)
            raise _err(_E.group_id_not_found,
                       f"Group {gid} is not a {self.group_noun}: it cannot be upgraded because "
                       f"{refusal}.")
        self._log_upgrade(classic, upgrade)
        self.shard.classic.release_for_upgrade(classic)
        for rec in upgrade.records:
            self.append(rec)
        for m in upgrade.members:
            assert m.classic is not None
            self.schedule_session(gid, m.member_id, m.classic.session_timeout_ms)

    # ------------------------------------------------------------------ timers and lifecycle

    def _session_expired(self, key: TimerKey, payload: Any) -> None:
        _, gid, mid = key
        group: Any = self._lookup(gid)
        member = None if group is None else group.members.get(mid)
        if group is not None and member is not None:
            log.info("[%s] %s %s session timed out", gid, self.noun, mid)
            self._fence_member(group, member)

    def _rebalance_timed_out(self, key: TimerKey, payload: Any) -> None:
        _, gid, mid = key
        group: Any = self._lookup(gid)
        member = None if group is None else group.members.get(mid)
        if (group is not None and member is not None
                and member.state is MemberState.UNREVOKED_PARTITIONS
                and member.member_epoch == payload):
            log.info("[%s] %s %s did not revoke within its rebalance timeout", gid, self.noun, mid)
            self._fence_member(group, member)

    def on_loaded(self) -> None:
        """Load duties ("Fail Over"): arm session timeouts (a classic member's own) and the
        rebalance timeouts of members revoking, then the group type's duties."""
        now = self.shard.now
        for gid in sorted(self.shard.groups):
            group: Any = self.shard.groups[gid]
            if not isinstance(group, self.group_class):
                continue
            timeout = self.shard.group_config(gid).session_timeout_ms
            for mid in sorted(group.members):
                m = group.members[mid]
                self.shard.schedule((self.session_kind, gid, mid), now + (
                    timeout if m.classic is None else m.classic.session_timeout_ms))
                if m.state is MemberState.UNREVOKED_PARTITIONS and m.member_epoch >= 0:
                    self.shard.schedule((self.rebalance_kind, gid, mid),
                                        now + max(m.rebalance_timeout_ms, 0), m.member_epoch)
            self._on_group_loaded(group)


__all__ = ["NewProtocolGroupManager"]
