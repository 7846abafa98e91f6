"""Client-side assignment: one member computes the group's target assignment (KIP-848 "Client-Side Assignor").

Implements KIP-848 "Client-Side Assignor", ConsumerGroupPrepareAssignment /
ConsumerGroupInstallAssignment, "Assignment Epoch" and the TargetAssignmentMetadata note, and the
Connect draft's "Assignor Selection", "Worker Selection", "Assignment Validation" and "Assignment
Error" (ConnectGroupPrepareAssignment / ConnectGroupInstallAssignment), for both group types:
:class:`ClientAssignment` is the machinery a group manager owns (``modern/consumer/handlers.py``,
``modern/connect/handlers.py``); each type adds its two handlers (``modern/consumer/client_assignment.py``,
``modern/connect/handlers.py``).

Choices where the texts leave two readings (each one is tested):

- **Which assignor.** A group uses a client-side assignor when every member advertises client
  assignors. It uses one every member supports (by name): the one ranking best in the members'
  precedence orders, i.e. with the smallest sum of its positions in the members' lists, ties by
  name (with one configuration shared by all members: simply the first of that list). A consumer
  group with a member advertising none uses its server-side assignor (KIP-848: "a client side
  assignor must be supported by all the members"; "a server side assignor is used otherwise").
- **Admission (UNSUPPORTED_ASSIGNOR).** A heartbeat that sets ClientAssignors is refused when
  none of its names is supported by every other member advertising client assignors, or when its
  version range for the group's assignor does not overlap each other member's range for it.
- **Which member computes.** Candidates are the members at a non-negative epoch whose range for
  the group's assignor covers every member's range ([min, max] contains every other [min, max];
  the draft's A[1-5], B[3-4], C[2-4] picks A). The previous assigner is kept while it qualifies;
  otherwise the first candidate after it in member-id order (wrapping), so that re-selection
  after a timeout goes round the group (and comes back to a member only when all others timed out).
- **No candidate: a fatal group error.** While a new target is needed and no member covers every
  range, every heartbeat of the group (epoch >= 0) is answered UNSUPPORTED_ASSIGNOR with a message
  naming the ranges. The heartbeat still counts - session, joins, metadata and assignor changes
  are applied - but the member is not reconciled (it would not learn the result) and the current
  target stays. The condition clears by itself as soon as a member leaves or changes its
  assignors so that some member qualifies.
- **Notification.** The chosen member is told by ShouldComputeAssignment=true in its heartbeat
  response (KIP-848's final field; the Connect draft's COMPUTE_ASSIGNMENT error is the older
  reading of the same step), on every one of its heartbeats while the computation is outstanding
  (a lost response cannot stall the group). Its deadline - its rebalance timeout - starts at the
  first one ("the time on the coordinator side starts ticking when the member is notified"), or
  at its PrepareAssignment if that comes first. When it passes, the next candidate is chosen; the
  previous one is not fenced (fencing is the session's business).
- **Request checks**, in the spec's order: INVALID_REQUEST (GroupId and MemberId non-empty,
  MemberEpoch >= 0); GROUP_ID_NOT_FOUND; UNKNOWN_MEMBER_ID; a member epoch other than the
  member's: STALE_MEMBER_EPOCH for consumer groups (KIP-848's final text), FENCED_MEMBER_EPOCH for
  connect groups (the Connect draft) - which here only rejects the request: both texts' response
  handling has the member retry after its next heartbeat, so it removes nobody; not the chosen
  member, or no computation outstanding: UNKNOWN_MEMBER_ID.
- **Validation against what was handed out.** PrepareAssignment remembers the snapshot it
  returned (epoch, members and their instance ids, the assignable items, who may take what).
  InstallAssignment must name that snapshot's GroupEpoch (only the chosen member's latest Prepare
  is kept) and is checked against it: each member of the install existed at that epoch and
  appears once; each item existed in that metadata, is assigned at most once, and (consumer) only
  to a member subscribed to its topic; every item is assigned - unless the group type allows a
  partial target (connect groups, ``scheduled_rebalance_delay_ms > 0``). Otherwise
  INVALID_ASSIGNMENT, with a message naming the first offending items.
- **Epoch X.** An assignment computed at group epoch X installs as assignment epoch X even when
  the group has moved on. Entries of members that left since are dropped (consumer) or kept until
  the next install (connect: they show the next assignor what was lost); a static member replaced
  since gets its predecessor's entry. If the group is already past X, a new computation is
  requested at once (the same assigner preferred, told at its next heartbeat).
- **Assignor error.** An install with a non-zero Error is acknowledged and keeps the current
  target and its epoch. No new computation is requested for that group epoch (asking again at once
  would loop on a deterministic failure): the next group epoch bump - a membership or metadata
  change, or a member changing its assignor reason or metadata - asks again.
- **Soft state.** The chosen member, its deadline and the remembered snapshot are not records:
  like timers they are not part of ``state_digest``. A reloaded shard chooses again in its load
  duties, and an install answering the previous coordinator's Prepare is INVALID_ASSIGNMENT
  (nothing was handed out here); the member is told to compute again at its next heartbeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.modern.group import ModernGroup
from groupcoord.coordinator.modern.member import ModernGroupMember
from groupcoord.coordinator.records import (
    ClientAssignor,
)
from groupcoord.coordinator.timers import TimerKey
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, CoordinatorError, ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

_E = ErrorCode

#: How many offending items an INVALID_ASSIGNMENT message names.
_SHOWN = 5

Item = Hashable


# ============================================================================ assignor choice


def assignor_in(assignors: Iterable[ClientAssignor], name: str) -> ClientAssignor | None:
    for a in assignors:
        if a.name == name:
            return a
    return None


def choose_assignor(lists: Sequence[Sequence[ClientAssignor]]) -> str | None:
    """The assignor every list names, ranked by the sum of its positions (ties: by name);
    ``None`` when some list is empty or no name is common."""
    if not lists or any(not lst for lst in lists):
        return None
    common = {a.name for a in lists[0]}
    for lst in lists[1:]:
        common &= {a.name for a in lst}
        if not common:
            return None
    rank = dict.fromkeys(common, 0)
    for lst in lists:
        positions: dict[str, int] = {}
        for i, a in enumerate(lst):
            positions.setdefault(a.name, i)
        for n in common:
            rank[n] += positions[n]
    return min(common, key=lambda n: (rank[n], n))


def group_assignor(members: Iterable[ModernGroupMember]) -> str | None:
    """The group's client-side assignor, or ``None`` (a member advertises none, or none is common).

    Stops at the first member that advertises none: a heartbeat of a large group on server-side
    assignors asks this once, and must not read every member to learn it."""
    lists = []
    for m in members:
        if not m.client_assignors:
            return None
        lists.append(m.client_assignors)
    return choose_assignor(lists)


def _range(a: ClientAssignor) -> str:
    return f"[{a.minimum_version}-{a.maximum_version}]"


def _unsupported(message: str) -> CoordinatorError:
    return CoordinatorError(_E.unsupported_assignor, message)


def check_assignors(members: Mapping[str, ModernGroupMember], exclude: Iterable[str],
                    assignors: Sequence[ClientAssignor]) -> None:
    """UNSUPPORTED_ASSIGNOR for a member setting ``assignors`` in a group of ``members``
    (``exclude``: the member itself and a static member it replaces)."""
    if not assignors:
        return
    skip = set(exclude)
    others = [members[mid] for mid in sorted(members)
              if mid not in skip and members[mid].client_assignors]
    if not others:
        return
    name = choose_assignor([assignors, *(m.client_assignors for m in others)])
    if name is None:
        raise _unsupported(
            f"None of the member's client assignors ({', '.join(a.name for a in assignors)}) is "
            f"supported by every member of the group.")
    mine = assignor_in(assignors, name)
    assert mine is not None
    for m in others:
        theirs = assignor_in(m.client_assignors, name)
        assert theirs is not None
        if (mine.maximum_version < theirs.minimum_version
                or theirs.maximum_version < mine.minimum_version):
            raise _unsupported(
                f"The version range {_range(mine)} of client assignor {name} does not overlap "
                f"the range {_range(theirs)} of member {m.member_id}.")


def qualifying_members(members: Mapping[str, ModernGroupMember], name: str) -> list[str]:
    """Members (epoch >= 0) whose range for ``name`` covers every member's, sorted by id."""
    ranges = [(mid, assignor_in(m.client_assignors, name)) for mid, m in members.items()]
    known = [(mid, a) for mid, a in ranges if a is not None]
    if not known:
        return []
    lo = min(a.minimum_version for _, a in known)
    hi = max(a.maximum_version for _, a in known)
    return sorted(mid for mid, a in known if members[mid].member_epoch >= 0
                  and a.minimum_version <= lo and a.maximum_version >= hi)


def _no_candidate(members: Mapping[str, ModernGroupMember], name: str) -> str:
    ranges = []
    for mid in sorted(members):
        m = members[mid]
        a = assignor_in(m.client_assignors, name)
        away = " (left temporarily)" if m.member_epoch < 0 else ""
        ranges.append(f"{mid} {_range(a) if a is not None else '[-]'}{away}")
    return (f"No member can compute the group's assignment: client assignor {name} needs a member "
            f"whose version range covers every member's range ({', '.join(ranges)}).")


# ============================================================================ install validation


@dataclass(slots=True, frozen=True)
class Snapshot:
    """What a PrepareAssignment handed out: the metadata an install is validated against."""

    member_id: str
    group_epoch: int
    assignor: str
    #: member id -> instance id, for the members of the group at ``group_epoch``.
    members: Mapping[str, str | None]
    #: Every assignable item at ``group_epoch``.
    items: frozenset[Item]
    #: member id -> the scopes (topic ids) whose items it may take; ``None``: any item.
    scopes: Mapping[str, frozenset[Any]] | None = None
    scope_of: Callable[[Any], Any] | None = None


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(INVALID_ASSIGNMENT, message)


def _listed(items: Iterable[Item], show: Callable[[Any], str]) -> str:
    shown = sorted(show(i) for i in items)
    more = f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else ""
    return ", ".join(shown[:_SHOWN]) + more


def validate_install(snapshot: Snapshot, proposed: Sequence[tuple[str, Sequence[Item]]],
                     allow_unassigned: bool, show: Callable[[Any], str]) -> None:
    """INVALID_ASSIGNMENT unless ``proposed`` (member id, items) is a legal target for the
    snapshot: known members, each once; known items, each at most once, to members that may take
    them; all of them unless ``allow_unassigned``."""
    epoch = snapshot.group_epoch
    listed: set[str] = set()
    owner: dict[Item, str] = {}
    for mid, items in proposed:
        if mid in listed:
            raise _invalid(f"Member {mid!r} appears twice in the assignment.")
        listed.add(mid)
        if mid not in snapshot.members:
            raise _invalid(f"Member {mid!r} was not a member of the group at epoch {epoch}.")
        unknown = [i for i in items if i not in snapshot.items]
        if unknown:
            raise _invalid(f"{_listed(unknown, show)} assigned to {mid} did not exist in the group "
                           f"metadata at epoch {epoch}.")
        scopes = None if snapshot.scopes is None else snapshot.scopes.get(mid, frozenset())
        for i in items:
            other = owner.get(i)
            if other is not None:
                raise _invalid(f"{show(i)} is assigned more than once (to {other} and {mid}).")
            owner[i] = mid
            if scopes is not None and snapshot.scope_of is not None \
                    and snapshot.scope_of(i) not in scopes:
                raise _invalid(f"{show(i)} is assigned to {mid}, which does not subscribe to it.")
    if not allow_unassigned and len(owner) != len(snapshot.items):
        missing = snapshot.items - owner.keys()
        raise _invalid(f"{len(missing)} item(s) of the group metadata at epoch {epoch} are not "
                       f"assigned: {_listed(missing, show)}.")


def successor(group: ModernGroup[Any], snapshot: Snapshot, member_id: str) -> str | None:
    """The current member that takes a snapshot member's target: the same id, or the static
    member that replaced it since; ``None`` if it left."""
    if member_id in group.members:
        return member_id
    instance = snapshot.members.get(member_id)
    if instance is not None:
        m = group.static_member(instance)
        if m is not None:
            return m.member_id
    return None


def check_ids(group_id: str, member_id: str, member_epoch: int) -> None:
    """INVALID_REQUEST checks of PrepareAssignment and InstallAssignment."""
    if not group_id or not group_id.strip():
        raise CoordinatorError(_E.invalid_request, "GroupId can't be empty.")
    if not member_id or not member_id.strip():
        raise CoordinatorError(_E.invalid_request, "MemberId can't be empty.")
    if member_epoch < 0:
        raise CoordinatorError(_E.invalid_request, f"MemberEpoch must be >= 0 (got {member_epoch}).")


# ============================================================================ per-group soft state


@dataclass(slots=True)
class _Computation:
    assigner: str | None = None
    #: The last member chosen (kept when it leaves: re-selection goes on after it).
    last: str | None = None
    pending: bool = False
    notified: bool = False
    generation: int = 0
    snapshot: Snapshot | None = None
    #: The group epoch whose computation the assignor reported an error for.
    failed_epoch: int | None = None
    fatal: str | None = None
    timed_out: set[str] = field(default_factory=set)


class ClientAssignment:
    """Client-side assignment of one group type on one shard (see the module docstring)."""

    def __init__(self, shard: ShardContext, timer_kind: str,
                 lookup: Callable[[str], ModernGroup[Any] | None], epoch_error: int) -> None:
        self.shard = shard
        self.timer_kind = timer_kind
        self._lookup = lookup
        self.epoch_error = epoch_error
        self._computations: dict[str, _Computation] = {}
        shard.register_timer(timer_kind, self._deadline_passed)

    # ------------------------------------------------------------------ queries

    def assignor(self, group: ModernGroup[Any]) -> str | None:
        return group_assignor(group.members.values())

    def pending(self, group_id: str) -> bool:
        c = self._computations.get(group_id)
        return c is not None and c.pending

    def assigner(self, group_id: str) -> str | None:
        """The member chosen to compute the group's next target (while one is needed)."""
        c = self._computations.get(group_id)
        return c.assigner if c is not None and c.pending else None

    def fatal(self, group: ModernGroup[Any]) -> str | None:
        """The message of the group's fatal error (no member can compute), or ``None``."""
        c = self._computations.get(group.group_id)
        return c.fatal if c is not None and c.pending else None

    def _key(self, group_id: str) -> TimerKey:
        return (self.timer_kind, group_id)

    # ------------------------------------------------------------------ lifecycle

    def request(self, group: ModernGroup[Any]) -> None:
        """A new target is needed if the group epoch is ahead: make sure a member is chosen."""
        gid = group.group_id
        c = self._computations.get(gid)
        if not group.members or group.group_epoch <= group.assignment_epoch:
            if c is not None and c.pending:
                self._stop(gid, c)
            return
        if c is None:
            c = self._computations[gid] = _Computation()
        name = self.assignor(group)
        if name is None:
            self._stop(gid, c)
            return
        if c.failed_epoch is not None and c.failed_epoch >= group.group_epoch:
            self._stop(gid, c)
            return
        c.failed_epoch = None
        c.pending = True
        candidates = qualifying_members(group.members, name)
        if c.assigner is not None and c.assigner in candidates:
            c.fatal = None
            return
        if not candidates and all(m.member_epoch < 0 for m in group.members.values()):
            c.fatal = None  # every member left temporarily (static, -2): wait for one to return
            self._switch(gid, c, None)
            return
        if not candidates:
            if c.fatal is None:
                log.warning("[%s] no member can compute the assignment", gid)
            c.fatal = _no_candidate(group.members, name)
            self._switch(gid, c, None)
            return
        c.fatal = None
        fresh = [m for m in candidates if m not in c.timed_out]
        if not fresh:  # every candidate had its chance: start another round
            c.timed_out.clear()
            fresh = candidates
        after = [m for m in fresh if c.last is not None and m > c.last]
        self._switch(gid, c, (after or fresh)[0])

    def cancel(self, group_id: str) -> None:
        """No client-side computation is needed (e.g. the group switched to a server assignor)."""
        c = self._computations.get(group_id)
        if c is not None:
            self._stop(group_id, c)

    def forget(self, group_id: str) -> None:
        self._computations.pop(group_id, None)
        self.shard.cancel(self._key(group_id))

    def member_removed(self, group_id: str, member_id: str) -> None:
        c = self._computations.get(group_id)
        if c is not None and c.assigner == member_id:
            self._switch(group_id, c, None)

    def should_compute(self, group: ModernGroup[Any], member_id: str) -> bool:
        """ShouldComputeAssignment for ``member_id``'s heartbeat response; arms the deadline."""
        c = self._computations.get(group.group_id)
        if c is None or not c.pending or c.assigner != member_id or c.fatal is not None:
            return False
        if not c.notified:
            c.notified = True
            member = group.members[member_id]
            self.shard.schedule(self._key(group.group_id),
                                self.shard.now + max(member.rebalance_timeout_ms, 0),
                                (member_id, c.generation))
            log.info("[%s] member %s asked to compute the assignment of group epoch %d",
                     group.group_id, member_id, group.group_epoch)
        return True

    def _switch(self, gid: str, c: _Computation, member_id: str | None) -> None:
        if c.assigner == member_id:
            return
        c.assigner = member_id
        if member_id is not None:
            c.last = member_id
            log.info("[%s] member %s chosen to compute the assignment", gid, member_id)
        c.notified = False
        c.snapshot = None
        c.generation += 1
        self.shard.cancel(self._key(gid))

    def _stop(self, gid: str, c: _Computation) -> None:
        c.pending = False
        c.notified = False
        c.snapshot = None
        c.fatal = None
        c.timed_out.clear()
        self.shard.cancel(self._key(gid))

    def _deadline_passed(self, key: TimerKey, payload: Any) -> None:
        gid = key[1]
        c = self._computations.get(gid)
        group = self._lookup(gid)
        if c is None or group is None or payload is None:
            return
        member_id, generation = payload
        if not c.pending or c.assigner != member_id or c.generation != generation:
            return
        log.info("[%s] member %s did not install an assignment within its rebalance timeout; "
                 "choosing another member", gid, member_id)
        c.timed_out.add(member_id)
        self._switch(gid, c, None)
        self.request(group)

    # ------------------------------------------------------------------ Prepare / Install

    def check_request(self, group: ModernGroup[Any], member_id: str,
                      member_epoch: int) -> ModernGroupMember:
        """Steps 2-4 of PrepareAssignment / InstallAssignment (the group was found)."""
        gid = group.group_id
        member = group.members.get(member_id)
        if member is None:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"Member {member_id} is not a member of group {gid}.")
        if member_epoch != member.member_epoch:
            raise CoordinatorError(
                self.epoch_error,
                f"The member epoch {member_epoch} does not match the member's epoch "
                f"{member.member_epoch}; retry after the next heartbeat.")
        c = self._computations.get(gid)
        if c is None or not c.pending:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"Member {member_id} is not the member chosen to compute the "
                                   f"assignment of group {gid}: no computation is outstanding.")
        if c.assigner != member_id:
            raise CoordinatorError(_E.unknown_member_id,
                                   f"Member {member_id} is not the member chosen to compute the "
                                   f"assignment of group {gid}.")
        return member

    def remember(self, group: ModernGroup[Any], snapshot: Snapshot) -> None:
        self.should_compute(group, snapshot.member_id)  # a Prepare before the notice arms it too
        self._computations[group.group_id].snapshot = snapshot

    def snapshot_for_install(self, group: ModernGroup[Any], member_id: str,
                             group_epoch: int) -> Snapshot:
        c = self._computations.get(group.group_id)
        s = None if c is None else c.snapshot
        if s is None or s.member_id != member_id:
            raise _invalid(f"No PrepareAssignment of member {member_id} is outstanding in group "
                           f"{group.group_id}: prepare again and compute from its response.")
        if s.group_epoch != group_epoch:
            raise _invalid(f"The assignment was computed for group epoch {group_epoch} but the "
                           f"last PrepareAssignment handed out epoch {s.group_epoch}.")
        return s

    def installed(self, group: ModernGroup[Any]) -> None:
        """A target was installed: done, unless the group has moved on (then ask again)."""
        c = self._computations.get(group.group_id)
        if c is None:
            return
        self._stop(group.group_id, c)
        if group.group_epoch > group.assignment_epoch:
            self.request(group)

    def failed(self, group: ModernGroup[Any], snapshot: Snapshot) -> None:
        """The assignor reported an error for the snapshot's epoch: keep the target."""
        c = self._computations.get(group.group_id)
        if c is None:
            return
        c.failed_epoch = snapshot.group_epoch
        self._stop(group.group_id, c)
        self.request(group)
