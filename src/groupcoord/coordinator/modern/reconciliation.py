"""Member reconciliation: moving one member's current assignment towards its target.

KIP-848 "Member Epoch - Reconciliation" and the case studies, shaped like upstream's
CurrentAssignmentBuilder (states STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS):

- assigned = current ∩ target; pending revocation = current - target;
  pending assignment = target - assigned - partitions still held by another member.
- If something must be revoked and the member still owns (or did not report) a revoked
  partition, it stays at its epoch in UNREVOKED_PARTITIONS and is told to revoke (its response
  assignment no longer lists them). It never gets new partitions in the same step.
- Otherwise it moves to the target epoch, gets every free target partition, and is STABLE, or
  UNRELEASED_PARTITIONS while some target partitions are still held by others.
- A member in UNREVOKED_PARTITIONS that acknowledges the revocation (its owned partitions no
  longer include them) advances to min(epoch + 1, target epoch) and reconciles again.

The algorithm is generic over the unit of assignment (the Connect draft's "Member Epoch -
Reconciliation of the group" is the same three phases): an assignment is a mapping from a *key*
to a set of ints - a topic id to partitions for consumer groups, a connector name to task numbers
(-1 standing for the connector itself) for connect groups. :func:`reconcile_items` holds it;
each group type has its member's view of it (``modern/consumer/reconciliation.py``,
``modern/connect/handlers.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq
from typing import Any, Generic, TypeVar
from uuid import UUID

from groupcoord.coordinator.modern.member import MemberState

K = TypeVar("K")

OwnerOf = Callable[[UUID, int], str | None]
#: The holders of a key's items (item -> member id), None when nobody holds one: a faster
#: ``owner_of`` for a whole key at once.
HoldersOf = Callable[[Any], Mapping[int, str] | None]


@dataclass(slots=True, frozen=True)
class Reconciled(Generic[K]):
    """A member's next current assignment, as :func:`reconcile_items` computes it."""

    state: MemberState
    member_epoch: int
    previous_member_epoch: int
    assigned: Mapping[K, frozenset[int]]
    pending_revocation: Mapping[K, frozenset[int]]


def owns_any_items(owned: Mapping[K, Collection[int]] | None,
                   items: Mapping[K, frozenset[int]]) -> bool:
    """:func:`owns_any` for an owned set given as a mapping (``None``: not reported)."""
    if owned is None:
        return True
    for key, ids in owned.items():
        revoking = items.get(key)
        if revoking and any(i in revoking for i in ids):
            return True
    return False


def reconcile_items(
    member_id: str,
    state: MemberState,
    member_epoch: int,
    previous_member_epoch: int,
    assigned: Mapping[K, frozenset[int]],
    pending_revocation: Mapping[K, frozenset[int]],
    target_epoch: int,
    target: Mapping[K, frozenset[int]],
    owner_of: Callable[[K, int], str | None],
    still_owns: Callable[[Mapping[K, frozenset[int]]], bool],
    order: Callable[[K], Any] | None = None,
    holders_of: HoldersOf | None = None,
) -> Reconciled[K] | None:
    """One reconciliation step of a member; ``None`` when nothing changes.

    ``owner_of(key, i)`` names the member holding an item (assigned or revoking);
    ``still_owns(items)`` says whether the member's request still reports any of ``items`` (true
    when it reported nothing); ``order`` sorts keys (determinism only); ``holders_of(key)``,
    when given, answers ``owner_of`` for a whole key with one lookup (a member given a whole
    100,000-partition topic otherwise pays a call per partition).
    """
    if state is MemberState.STABLE:
        if member_epoch == target_epoch:
            return None
        return _next(member_id, state, member_epoch, previous_member_epoch, assigned,
                     pending_revocation, member_epoch, target_epoch, target, owner_of,
                     still_owns, order, holders_of)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if still_owns(pending_revocation):
            return None
        return _next(member_id, state, member_epoch, previous_member_epoch, assigned,
                     pending_revocation, min(member_epoch + 1, target_epoch), target_epoch,
                     target, owner_of, still_owns, order, holders_of)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member_id, state, member_epoch, previous_member_epoch, assigned,
                     pending_revocation, member_epoch, target_epoch, target, owner_of,
                     still_owns, order, holders_of)
    raise ValueError(f"member {member_id} is in state {state.name}")


def _next(
    mid: str,
    state: MemberState,
    old_epoch: int,
    old_previous: int,
    current: Mapping[K, frozenset[int]],
    revoking_now: Mapping[K, frozenset[int]],
    member_epoch: int,
    target_epoch: int,
    target: Mapping[K, frozenset[int]],
    owner_of: Callable[[K, int], str | None],
    still_owns: Callable[[Mapping[K, frozenset[int]]], bool],
    order: Callable[[K], Any] | None,
    holders_of: HoldersOf | None = None,
) -> Reconciled[K] | None:
    new_assigned: dict[K, frozenset[int]] = {}
    new_revoking: dict[K, frozenset[int]] = {}
    pending_assign: dict[K, frozenset[int]] = {}
    unreleased = False
    empty: frozenset[int] = frozenset()
    keys: list[Any] = list(set(target) | set(current))
    keys.sort(key=order)
    for key in keys:
        tgt = target.get(key, empty)
        cur = current.get(key, empty)
        kept = cur & tgt
        # Share the sets already held (the member's or its target's) where equal: a converged
        # member then holds its target's set, not a copy (memory per assigned partition).
        if len(kept) == len(cur):
            kept = cur
        elif len(kept) == len(tgt):
            kept = tgt
        revoking = cur - kept
        wanted = tgt - kept
        if wanted:
            mine = revoking_now.get(key, empty)
            if holders_of is not None:
                held = holders_of(key)
                if held:
                    # Free: held by nobody, by this member, or revoked by it now. Set
                    # operations and C-level maps, not a Python test per item: a member
                    # waiting for a few hundred partitions asks again at every heartbeat.
                    taken = held.keys() & wanted
                    if taken:
                        ts = list(taken)
                        free = wanted - taken
                        free = free.union(
                            compress(ts, map(eq, map(held.__getitem__, ts), repeat(mid))))
                        if mine:
                            free |= taken & mine
                        if len(free) != len(wanted):
                            unreleased = True
                        wanted = free
            else:
                free_items = []
                for i in sorted(wanted):
                    holder = owner_of(key, i)
                    if holder is None or holder == mid or i in mine:
                        free_items.append(i)
                    else:
                        unreleased = True
                wanted = frozenset(free_items)
        if kept:
            new_assigned[key] = kept
        if revoking:
            new_revoking[key] = revoking
        if wanted:
            pending_assign[key] = wanted

    if new_revoking and still_owns(new_revoking):
        return _with(state, old_epoch, old_previous, current, revoking_now,
                     MemberState.UNREVOKED_PARTITIONS, member_epoch, new_assigned, new_revoking)
    for key, ids in pending_assign.items():
        merged = new_assigned.get(key, empty) | ids
        tgt = target.get(key, empty)
        new_assigned[key] = tgt if len(merged) == len(tgt) else merged  # within the target
    new_state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with(state, old_epoch, old_previous, current, revoking_now, new_state, target_epoch,
                 new_assigned, {})


def _with(old_state: MemberState, old_epoch: int, old_previous: int,
          old_assigned: Mapping[K, frozenset[int]], old_revoking: Mapping[K, frozenset[int]],
          state: MemberState, epoch: int, assigned: Mapping[K, frozenset[int]],
          revoking: Mapping[K, frozenset[int]]) -> Reconciled[K] | None:
    previous = old_epoch if epoch != old_epoch else old_previous
    if (state is old_state and epoch == old_epoch and assigned == old_assigned
            and revoking == old_revoking):
        return None
    return Reconciled(state, epoch, previous, assigned, revoking)
