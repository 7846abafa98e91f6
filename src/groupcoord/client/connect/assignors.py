"""The Connect leader's assignors: Eager and Incremental Cooperative (KIP-415), pure and sans-IO.

Implements KIP-415 "Deferred Resolution of Imbalance under Different
Rebalancing Scenarios" (worker joins, leaves, bounces; leader leaves, bounces) and the
``scheduled.rebalance.max.delay.ms`` property, with the behaviour of upstream Kafka Connect's
``IncrementalCooperativeAssignor`` (3.x+, with successive-revoking-rounds backoff) and
``EagerAssignor`` as ``NOTES.md`` summarises them. No clock, no IO, no randomness: the caller
passes the decoded member metadata, the configuration snapshot, the generation and ``now_ms``;
the result is one :class:`~.model.ConnectAssignment` per member.

**Eager** (protocol ``default``, v0): members sorted by id; the sorted connectors are dealt
round-robin, then every connector's tasks (connectors in sorted order, tasks in order) continue
the same circular iterator. Every assignment is the member's complete set.

**Incremental Cooperative** (``compatible`` v1 / ``sessioned`` v2). The leader keeps, between the
rounds it computes, the state in :class:`CooperativeLeaderState`. Per round:

1. a leader whose previous generation is not the last one it completed starts from an empty
   previous assignment; if a revocation it asked for did not take effect (a revoked item is still
   reported), the previous assignment becomes what members report;
2. configured, active (reported) and previous sets give: deleted = previous - configured;
   duplicated = reported by more than one worker; lost = previous - active - deleted;
   created = configured - previous - active;
3. deleted and duplicated items are revoked from every worker reporting them;
4. lost items: none (and no revocation in the previous round) -> the delay is reset; no delay
   scheduled and every previous member present -> reassigned now as new; max delay 0 -> now;
   the scheduled delay expired -> dealt round-robin (connectors, then tasks from the first
   candidate again) onto the candidate workers (workers that were empty while the delay ran) that
   are still present, else treated as new, and the delay is reset; otherwise empty workers become
   candidates and the delay is the remaining time (or the max when none was scheduled);
5. only with delay 0: load-balancing revocations, per type, down to ``total // workers`` (the
   first ``total % workers`` workers above that floor may keep one more); if the previous round
   revoked too, the ``n``-th successive revoking round waits ``min(max, 1 * 40**n)`` ms
   (upstream's ``ExponentialBackoff(1, 40, max, 0)``; 0 when the max is 0) and revokes nothing
   while that backoff is non-zero;
6. created and reassigned-as-new items go to the least-loaded workers: workers sorted by
   (count of that type, worker id), then filled level by level (upstream ``assignConnectors`` /
   ``assignTasks``), connectors first, then tasks;
7. each member gets the items newly assigned to it, the items revoked from it, and the same delay.

Choices where upstream leaves order to hash iteration (all documented, all deterministic):

- workers are visited in sorted member-id order (load-balancing cuts, who keeps an extra item);
- a worker above its share gives up its *highest* items in sorted order (it keeps the lowest). With
  this KIP-415's "Worker joins" table comes out exactly (W1 keeps AC0 and AT1);
- created and lost items are handled in sorted order; workers that become candidates in the same
  round are appended in sorted order (the candidate list keeps insertion order across rounds);
- ids compare as Python strings (code points); Java compares UTF-16 units, which differs only for
  characters outside the Basic Multilingual Plane.

Where this differs from the KIP's tables (the KIP was written before the code; we follow the code):

- connectors and tasks are balanced separately, so in "Worker leaves" (after the delay) and
  "Leader leaves" the lost connector goes to the worker with fewer *connectors* and the lost task
  to the worker with fewer *tasks* (ties by id), not as the KIP's tables place them; every worker
  ends with the same number of items as in the tables;
- upstream's new leader has no previous assignment and no delay, so in "Leader bounces" it assigns
  the unaccounted items at once with delay 0. The opt-in ``honor_reported_delay`` reproduces the
  KIP's table instead: a leader without a usable previous assignment that sees members report a
  non-zero delay (their allocation in the metadata is the last assignment they received, delay
  included) treats the unaccounted items as lost and waits the largest reported delay (capped at
  the max; a leader that still has a rebalance of its own scheduled keeps that time) before
  reassigning them. The reported delay is the one members were given, an upper bound of the
  remaining one (the KIP's d''): members do not report when they received it. Upstream knowingly
  skipped this (a comment in its ``handleLostAssignments`` mentions taking the delay from the
  group as an optimisation not made).

CONFIG_MISMATCH: both assignors answer error 1, with the highest reported config offset and no
items (state untouched), when the leader's snapshot is older than a member's reported offset.
Otherwise the assignment carries the offset of the snapshot it was computed from (upstream's
``ensureLeaderConfig`` returns the offset of the fresh snapshot a lagging leader takes): the
highest reported one when the leader's snapshot is the one it joined with, a higher one when the
caller passed a fresher snapshot. Members behind that offset read the config to the end before
they start the work; an assignment labelled with an older offset than its snapshot would have
them start connectors or tasks that their config does not hold yet (found by the
classic-connect simulation, ``sim/classic_connect.py``).
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import cycle
from typing import Protocol, TypeVar, runtime_checkable

from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.protocol.connect_protocol import (
    CONFIG_MISMATCH,
    CONNECT_PROTOCOL_V0,
    CONNECT_PROTOCOL_V1,
    CONNECT_PROTOCOL_V2,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    ConnectorTaskId,
    WorkerMetadata,
    decode_worker_metadata,
    encode_assignment,
)

__all__ = [
    "DEFAULT_MAX_DELAY_MS",
    "EAGER",
    "INCREMENTAL_COOPERATIVE",
    "ConnectAssignor",
    "ConnectGroupAssignment",
    "CooperativeLeaderState",
    "EagerAssignor",
    "IncrementalCooperativeAssignor",
    "apply_assignment",
    "assignor_names",
    "create_assignor",
    "decode_members",
    "register_assignor",
    "resolve_assignors",
    "revoking_backoff_ms",
]

log = logging.getLogger(__name__)

#: ``scheduled.rebalance.max.delay.ms`` default (KIP-415 "Configuration Properties").
DEFAULT_MAX_DELAY_MS = 300_000

_T = TypeVar("_T", str, ConnectorTaskId)


@dataclass(slots=True, frozen=True)
class ConnectGroupAssignment:
    """The leader's answer for one round.

    ``assignments`` is what each member is sent (newly assigned / revoked items and the delay under
    the cooperative protocols; the complete set under eager). ``allocations`` is what each member
    runs once it has applied its assignment (upstream's ``allAssignedConnectors/Tasks``): under
    CONFIG_MISMATCH, what it reported.
    """

    leader: str
    leader_url: str
    config_offset: int
    error: int
    delay: int
    assignments: Mapping[str, ConnectAssignment]
    allocations: Mapping[str, ConnectorsAndTasks]

    def encoded(self) -> dict[str, bytes]:
        """Member id -> SyncGroup assignment bytes."""
        return {mid: encode_assignment(a) for mid, a in self.assignments.items()}


def decode_members(metadata: Mapping[str, bytes]) -> dict[str, WorkerMetadata]:
    """Member id -> decoded worker metadata (JoinGroup response members of the leader)."""
    return {mid: decode_worker_metadata(raw) for mid, raw in metadata.items()}


def _check_members(leader_id: str, members: Mapping[str, WorkerMetadata]) -> None:
    if not members:
        raise ValueError("no members to assign to")
    if leader_id not in members:
        raise ValueError(f"leader {leader_id!r} is not among the members")


def _mismatch(
    leader_id: str, members: Mapping[str, WorkerMetadata], max_offset: int, version: int
) -> ConnectGroupAssignment:
    url = members[leader_id].url
    log.info("leader %s: config behind offset %d reported by a member: CONFIG_MISMATCH",
             leader_id, max_offset)
    assignments = {
        mid: ConnectAssignment(version, CONFIG_MISMATCH, leader_id, url, max_offset)
        for mid in sorted(members)
    }
    allocations = {mid: ConnectorsAndTasks.of(members[mid].current.connectors, members[mid].current.tasks)
                   for mid in sorted(members)}
    return ConnectGroupAssignment(leader_id, url, max_offset, CONFIG_MISMATCH, 0, assignments, allocations)


# ---------------------------------------------------------------------------------------------
# The Connect draft's ConnectAssignor interface and the registry of assignors by name
# ---------------------------------------------------------------------------------------------

#: The built-in assignors' names (the client assignor names a worker advertises).
EAGER = "eager"
INCREMENTAL_COOPERATIVE = "incremental-cooperative"


@runtime_checkable
class ConnectAssignor(Protocol):
    """The Connect draft's ``ConnectAssignor`` ("Client Side Assignor": Connect keeps its own
    assignor interface and extends it): ``name``, ``assign`` and ``onAssignment``.

    ``name`` is the client assignor name the worker advertises, with the Connect protocol
    versions ``minimum_version`` .. ``maximum_version`` it supports (the coordinator picks an
    assignor every worker supports, the draft's "Assignor Selection"). ``assign`` runs on the
    worker the coordinator chose: ``members`` carry each worker's metadata, its allocation being
    its current target; it returns one :class:`~.model.ConnectAssignment` per member and what
    each then runs. ``on_assignment`` is called on every worker with each assignment it
    receives (the draft's Rebalance Process, step 2b), before the listener's ``on_assigned``.
    """

    @property
    def name(self) -> str: ...

    @property
    def minimum_version(self) -> int: ...

    @property
    def maximum_version(self) -> int: ...

    def assign(self, leader_id: str, members: Mapping[str, WorkerMetadata],
               config: ConfigSnapshot, *, now_ms: int, generation: int,
               last_completed_generation: int | None = None,
               protocol_version: int = CONNECT_PROTOCOL_V2) -> ConnectGroupAssignment: ...

    def on_assignment(self, assignment: ConnectAssignment, generation: int) -> None: ...


#: name -> factory(max_delay_ms) of an assignor (``scheduled.rebalance.max.delay.ms``; an
#: assignor without deferred resolution ignores it).
_REGISTRY: dict[str, Callable[[int], ConnectAssignor]] = {}


def register_assignor(name: str, factory: Callable[[int], ConnectAssignor]) -> None:
    """Make an assignor available by ``name`` to workers (``ConnectWorker(assignors=[name])``).
    ``factory(max_delay_ms)`` builds one instance per worker (an assignor may keep state
    between the rounds it computes). A name is registered once."""
    if not name:
        raise ValueError("an assignor needs a non-empty name")
    if name in _REGISTRY:
        raise ValueError(f"an assignor named {name!r} is already registered")
    _REGISTRY[name] = factory


def assignor_names() -> tuple[str, ...]:
    """The registered assignor names, sorted."""
    return tuple(sorted(_REGISTRY))


def create_assignor(name: str, max_delay_ms: int = 0) -> ConnectAssignor:
    """A new instance of the assignor registered as ``name``; ValueError naming the known ones
    otherwise."""
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ValueError(f"unknown Connect assignor {name!r} (known: {', '.join(assignor_names())})")
    assignor = factory(max_delay_ms)
    if assignor.name != name:
        raise ValueError(f"the assignor registered as {name!r} calls itself {assignor.name!r}")
    return assignor


def resolve_assignors(given: Sequence[str | ConnectAssignor],
                      max_delay_ms: int = 0) -> tuple[ConnectAssignor, ...]:
    """A worker's assignors, in preference order, from ``given``: names from the registry
    (a new instance each, :func:`create_assignor`) or instances. Both workers (the connect
    group type's and the classic one's) take their assignors this way. ValueError when there is
    none, one is not a :class:`ConnectAssignor`, two share a name, or a version range is
    empty."""
    out = tuple(create_assignor(a, max_delay_ms) if isinstance(a, str) else a for a in given)
    if not out:
        raise ValueError("a worker needs at least one assignor")
    for a in out:
        if not isinstance(a, ConnectAssignor):
            raise ValueError(f"{a!r} is not a ConnectAssignor (name, assign, on_assignment)")
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"assignor names must be unique, got {names}")
    for a in out:
        if not 0 <= a.minimum_version <= a.maximum_version:
            raise ValueError(f"assignor {a.name!r}: bad version range "
                             f"{a.minimum_version}..{a.maximum_version}")
    return out


# ---------------------------------------------------------------------------------------------
# Eager
# ---------------------------------------------------------------------------------------------


class EagerAssignor:
    """Upstream ``EagerAssignor``: round-robin of sorted connectors, then their tasks (stateless).
    A :class:`ConnectAssignor` named ``eager``, Connect protocol version 0."""

    name = EAGER
    minimum_version = CONNECT_PROTOCOL_V0
    maximum_version = CONNECT_PROTOCOL_V0

    def on_assignment(self, assignment: ConnectAssignment, generation: int) -> None:
        """Nothing to remember: every eager assignment is complete."""

    def assign(
        self, leader_id: str, members: Mapping[str, WorkerMetadata], config: ConfigSnapshot,
        *, now_ms: int = 0, generation: int = 0, last_completed_generation: int | None = None,
        protocol_version: int = CONNECT_PROTOCOL_V0,
    ) -> ConnectGroupAssignment:
        """One round (the time, generation and version do not matter to the eager assignor)."""
        _check_members(leader_id, members)
        max_offset = max(m.config_offset for m in members.values())
        if config.offset < max_offset:
            return _mismatch(leader_id, members, max_offset, CONNECT_PROTOCOL_V0)
        offset = config.offset  # the snapshot assigned from (module docstring)
        ids = sorted(members)
        connectors: dict[str, list[str]] = {mid: [] for mid in ids}
        tasks: dict[str, list[ConnectorTaskId]] = {mid: [] for mid in ids}
        names = sorted(config.connectors)
        member_it = cycle(ids)
        for name in names:
            connectors[next(member_it)].append(name)
        for name in names:
            for task in config.tasks(name):
                tasks[next(member_it)].append(task)
        url = members[leader_id].url
        assignments = {
            mid: ConnectAssignment(CONNECT_PROTOCOL_V0, NO_ERROR, leader_id, url, offset,
                                   tuple(connectors[mid]), tuple(tasks[mid]))
            for mid in ids
        }
        allocations = {mid: ConnectorsAndTasks(tuple(connectors[mid]), tuple(sorted(tasks[mid])))
                       for mid in ids}
        return ConnectGroupAssignment(leader_id, url, offset, NO_ERROR, 0, assignments, allocations)


# ---------------------------------------------------------------------------------------------
# Incremental Cooperative
# ---------------------------------------------------------------------------------------------


def revoking_backoff_ms(successive_rounds: int, max_delay_ms: int) -> int:
    """The delay before the ``successive_rounds``-th successive revoking round may revoke:
    upstream's ``ExponentialBackoff(initial = 1 if max > 0 else 0, multiplier 40, max, jitter 0)``."""
    initial = min(max_delay_ms, 0 if max_delay_ms == 0 else 1)
    if max_delay_ms <= initial:
        return initial
    exp_max = math.log(max_delay_ms / max(initial, 1)) / math.log(40)
    term = initial * math.pow(40, min(successive_rounds, exp_max))
    return min(int(term), max_delay_ms)


@dataclass(slots=True)
class CooperativeLeaderState:
    """What the Incremental Cooperative leader remembers between the rounds it computes
    (upstream's assignor fields). Plain data: a driver may copy, persist or restore it."""

    previous_connectors: set[str] = field(default_factory=set)
    previous_tasks: set[ConnectorTaskId] = field(default_factory=set)
    revoked_connectors: set[str] = field(default_factory=set)  # previous revocation
    revoked_tasks: set[ConnectorTaskId] = field(default_factory=set)
    revoked_in_previous: bool = False
    candidate_workers: list[str] = field(default_factory=list)  # insertion ordered, unique
    scheduled_rebalance_ms: int = 0
    delay_ms: int = 0
    previous_generation: int = -1
    previous_members: frozenset[str] = frozenset()
    successive_revoking_rounds: int = 0

    def copy(self) -> CooperativeLeaderState:
        return CooperativeLeaderState(
            set(self.previous_connectors), set(self.previous_tasks), set(self.revoked_connectors),
            set(self.revoked_tasks), self.revoked_in_previous, list(self.candidate_workers),
            self.scheduled_rebalance_ms, self.delay_ms, self.previous_generation, self.previous_members,
            self.successive_revoking_rounds,
        )


@dataclass(slots=True)
class _Load:
    """One worker's connectors and tasks during the computation (upstream ``WorkerLoad``)."""

    worker: str
    connectors: set[str]
    tasks: set[ConnectorTaskId]

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks


class IncrementalCooperativeAssignor:
    """Upstream ``IncrementalCooperativeAssignor`` (see the module docstring).

    One instance per worker: it keeps its leader state between the rounds this worker leads.
    A :class:`ConnectAssignor` named ``incremental-cooperative``, Connect protocol versions 1 ..
    ``maximum_version`` (2, ``sessioned``; 1 for ``compatible``).
    """

    name = INCREMENTAL_COOPERATIVE
    minimum_version = CONNECT_PROTOCOL_V1

    def __init__(
        self, max_delay_ms: int = DEFAULT_MAX_DELAY_MS, *, honor_reported_delay: bool = False,
        maximum_version: int = CONNECT_PROTOCOL_V2,
    ) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"scheduled.rebalance.max.delay.ms must be >= 0, got {max_delay_ms}")
        if not CONNECT_PROTOCOL_V1 <= maximum_version <= CONNECT_PROTOCOL_V2:
            raise ValueError(f"the incremental cooperative assignor speaks Connect protocol 1 or 2, "
                             f"got {maximum_version}")
        self.max_delay_ms = max_delay_ms
        self.honor_reported_delay = honor_reported_delay
        self.maximum_version = maximum_version
        self.state = CooperativeLeaderState()

    def on_assignment(self, assignment: ConnectAssignment, generation: int) -> None:
        """Nothing: the leader state is the computing worker's (``state``), not the receivers'."""

    # -- public -----------------------------------------------------------------------------

    def assign(
        self,
        leader_id: str,
        members: Mapping[str, WorkerMetadata],
        config: ConfigSnapshot,
        *,
        now_ms: int,
        generation: int,
        last_completed_generation: int | None = None,
        protocol_version: int = CONNECT_PROTOCOL_V2,
    ) -> ConnectGroupAssignment:
        """One round computed by leader ``leader_id`` for generation ``generation``.

        ``last_completed_generation`` is the last generation this worker completed (received an
        assignment for); None means ``generation - 1`` (every round completed). A mismatch with the
        generation this leader last computed discards its previous assignment.
        ``protocol_version`` (1 ``compatible`` or 2 ``sessioned``) is written into the assignments.
        """
        _check_members(leader_id, members)
        if protocol_version < 1:
            raise ValueError("the incremental cooperative assignor needs Connect protocol version >= 1")
        max_offset = max(m.config_offset for m in members.values())
        if config.offset < max_offset:
            return _mismatch(leader_id, members, max_offset, protocol_version)
        offset = config.offset  # the snapshot assigned from (module docstring)
        if last_completed_generation is None:
            last_completed_generation = generation - 1

        ids = sorted(members)
        reported = {mid: members[mid].current for mid in ids}
        allocations, new, revoked = self._compute(config, reported, members, generation,
                                                  last_completed_generation, now_ms)
        delay = self.state.delay_ms
        url = members[leader_id].url
        assignments = {}
        for mid in ids:
            nc, nt = new[mid]
            rc, rt = revoked.get(mid, ((), ()))
            assignments[mid] = ConnectAssignment(protocol_version, NO_ERROR, leader_id, url, offset,
                                                 nc, nt, rc, rt, delay)
        return ConnectGroupAssignment(leader_id, url, offset, NO_ERROR, delay, assignments, allocations)

    # -- the round --------------------------------------------------------------------------

    def _compute(
        self,
        config: ConfigSnapshot,
        reported: Mapping[str, ConnectorsAndTasks],
        members: Mapping[str, WorkerMetadata],
        generation: int,
        last_completed: int,
        now: int,
    ) -> tuple[
        dict[str, ConnectorsAndTasks],
        dict[str, tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]],
        dict[str, tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]],
    ]:
        st = self.state
        ids = list(reported)  # sorted by the caller

        configured_c = set(config.connectors)
        configured_t = config.task_ids()

        member_c = {mid: set(reported[mid].connectors) for mid in ids}
        member_t = {mid: set(reported[mid].tasks) for mid in ids}
        active_c: set[str] = set().union(*member_c.values())
        active_t: set[ConnectorTaskId] = set().union(*member_t.values())

        reset = st.previous_generation != last_completed
        if reset:
            log.debug("previous generation %d != last completed %d: previous assignment discarded",
                      st.previous_generation, last_completed)
            st.previous_connectors = set()
            st.previous_tasks = set()
            if self.honor_reported_delay and self.max_delay_ms > 0:
                reported_delay = max(
                    (m.allocation.delay for m in members.values() if m.allocation), default=0
                )
                if reported_delay > 0:
                    # Extension (module docstring): a delay is in progress in the group.
                    st.previous_connectors = configured_c | active_c
                    st.previous_tasks = set(configured_t | active_t)
                    if st.scheduled_rebalance_ms <= 0:  # else: this leader's own schedule stands
                        st.candidate_workers = []
                        st.scheduled_rebalance_ms = now + min(reported_delay, self.max_delay_ms)

        if st.revoked_connectors or st.revoked_tasks:
            if not st.revoked_connectors.isdisjoint(active_c) or not st.revoked_tasks.isdisjoint(active_t):
                # A revocation did not take effect: start again from what members report.
                st.previous_connectors = set(active_c)
                st.previous_tasks = set(active_t)
            st.revoked_connectors = set()
            st.revoked_tasks = set()

        prev_c, prev_t = st.previous_connectors, st.previous_tasks
        # Deleted: previously assigned *or reported running* but no longer configured (a leader
        # whose previous assignment was reset still revokes the work of deleted connectors;
        # found by the classic-connect simulation, sim/classic_connect.py).
        deleted_c = (prev_c | active_c) - configured_c
        deleted_t = (prev_t | active_t) - configured_t
        lost_c = prev_c - active_c - deleted_c
        lost_t = prev_t - active_t - deleted_t
        created_c = configured_c - prev_c - active_c
        created_t = configured_t - prev_t - active_t
        dup_c = _duplicated(member_c.values(), len(active_c))
        dup_t = _duplicated(member_t.values(), len(active_t))

        to_revoke_c: dict[str, set[str]] = {}
        to_revoke_t: dict[str, set[ConnectorTaskId]] = {}
        current_c: dict[str, set[str]] = {}
        current_t: dict[str, set[ConnectorTaskId]] = {}
        loads: list[_Load] = []
        for mid in ids:
            mc, mt = member_c[mid], member_t[mid]
            rc = (mc & deleted_c) | (mc & dup_c) if (deleted_c or dup_c) else set()
            rt = (mt & deleted_t) | (mt & dup_t) if (deleted_t or dup_t) else set()
            if rc:
                to_revoke_c[mid] = rc
            if rt:
                to_revoke_t[mid] = rt
            current_c[mid] = mc - deleted_c if deleted_c else mc
            current_t[mid] = mt - deleted_t if deleted_t else mt
            loads.append(_Load(mid, mc - rc if rc else set(mc), mt - rt if rt else set(mt)))

        reassign_c, reassign_t = self._handle_lost(lost_c, lost_t, loads, now)

        if st.delay_ms == 0:
            lb_c, lb_t = _load_balancing_revocations(len(configured_c), len(configured_t), loads)
            if st.revoked_in_previous and (lb_c or lb_t):
                st.successive_revoking_rounds += 1
                st.delay_ms = revoking_backoff_ms(st.successive_revoking_rounds, self.max_delay_ms)
                if st.delay_ms != 0:
                    st.scheduled_rebalance_ms = now + st.delay_ms
                    log.debug("successive revoking round %d: no revocation, delay %d ms",
                              st.successive_revoking_rounds, st.delay_ms)
                else:
                    _revoke(loads, lb_c, lb_t, to_revoke_c, to_revoke_t)
            elif lb_c or lb_t:
                _revoke(loads, lb_c, lb_t, to_revoke_c, to_revoke_t)
                st.revoked_in_previous = True
            elif st.revoked_in_previous:
                st.revoked_in_previous = False
                st.successive_revoking_rounds = 0
        else:
            st.revoked_in_previous = False

        to_assign_c = sorted(created_c) + [c for c in sorted(reassign_c) if c not in created_c]
        to_assign_t = sorted(created_t) + [t for t in sorted(reassign_t) if t not in created_t]
        _level_fill(loads, [load.connectors for load in loads], to_assign_c)
        _level_fill(loads, [load.tasks for load in loads], to_assign_t)

        allocations: dict[str, ConnectorsAndTasks] = {}
        new: dict[str, tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]] = {}
        revoked: dict[str, tuple[tuple[str, ...], tuple[ConnectorTaskId, ...]]] = {}
        all_c: set[str] = set()
        all_t: set[ConnectorTaskId] = set()
        for load in loads:
            mid = load.worker
            added_c = load.connectors - current_c[mid]
            added_t = load.tasks - current_t[mid]
            allocations[mid] = ConnectorsAndTasks(
                _sorted_after(reported[mid].connectors, load.connectors, added_c),
                _sorted_after(reported[mid].tasks, load.tasks, added_t),
            )
            new[mid] = (tuple(sorted(added_c)), tuple(sorted(added_t)))
            rc = to_revoke_c.get(mid, set())
            rt = to_revoke_t.get(mid, set())
            if rc or rt:
                revoked[mid] = (tuple(sorted(rc)), tuple(sorted(rt)))
                st.revoked_connectors |= rc
                st.revoked_tasks |= rt
            all_c |= load.connectors
            all_t |= load.tasks

        # computePreviousAssignment: what will run after this round, plus what is still lost.
        st.previous_connectors = (all_c - st.revoked_connectors) | lost_c
        st.previous_tasks = (all_t - st.revoked_tasks) | lost_t
        st.previous_generation = generation
        st.previous_members = frozenset(ids)
        return allocations, new, revoked

    def _handle_lost(
        self, lost_c: set[str], lost_t: set[ConnectorTaskId], loads: list[_Load], now: int
    ) -> tuple[set[str], set[ConnectorTaskId]]:
        """Upstream ``handleLostAssignments``: the lost items to reassign as new in this round
        (lost items dealt to candidate workers are added to ``loads`` directly)."""
        st = self.state
        if not lost_c and not lost_t and not st.revoked_in_previous:
            self._reset_delay()
            return set(), set()
        active = {load.worker for load in loads}
        if st.scheduled_rebalance_ms <= 0 and active >= st.previous_members:
            # No worker left: the lost items were probably never received. Reassign them now.
            return lost_c, lost_t
        if self.max_delay_ms == 0:
            return lost_c, lost_t
        if 0 < st.scheduled_rebalance_ms <= now:
            by_worker = {load.worker: load for load in loads}
            candidates = [by_worker[w] for w in st.candidate_workers if w in by_worker]
            result: tuple[set[str], set[ConnectorTaskId]] = (set(), set())
            if candidates:
                log.debug("delay expired: lost items to candidates %s", [c.worker for c in candidates])
                for load, connector in zip(cycle(candidates), sorted(lost_c)):
                    load.connectors.add(connector)
                for load, task in zip(cycle(candidates), sorted(lost_t)):
                    load.tasks.add(task)
            else:
                result = (lost_c, lost_t)
            self._reset_delay()
            st.revoked_in_previous = False
            return result
        known = set(st.candidate_workers)
        st.candidate_workers.extend(
            load.worker for load in sorted(loads, key=lambda w: w.worker)
            if load.is_empty() and load.worker not in known
        )
        if now < st.scheduled_rebalance_ms:
            remaining = st.scheduled_rebalance_ms - now
            st.delay_ms = min(remaining, self.max_delay_ms) if remaining > 0 else 0
        else:
            st.delay_ms = self.max_delay_ms
        st.scheduled_rebalance_ms = now + st.delay_ms
        log.debug("lost items held back: delay %d ms, candidates %s", st.delay_ms, st.candidate_workers)
        return set(), set()

    def _reset_delay(self) -> None:
        st = self.state
        st.candidate_workers = []
        st.scheduled_rebalance_ms = 0
        st.delay_ms = 0


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _sorted_after(reported: tuple[_T, ...], now: set[_T], added: set[_T]) -> tuple[_T, ...]:
    """``now`` sorted, given that it is what the worker reported (usually sorted already: the
    assignors and the canonical encoding produce sorted lists), minus some, plus ``added``.
    Filtering the reported order and letting timsort merge the runs is much cheaper than
    sorting a set's hash order."""
    items = [x for x in reported if x in now]
    if added:
        items.extend(added)
    if len(items) != len(now):  # the worker reported an item twice
        return tuple(sorted(now))
    items.sort()
    return tuple(items)


def _duplicated(per_worker: Iterable[set[_T]], distinct: int) -> set[_T]:
    """Items held by more than one worker (``distinct``: the size of their union)."""
    per_worker = list(per_worker)
    if sum(len(items) for items in per_worker) == distinct:
        return set()
    counts: Counter[_T] = Counter()
    for items in per_worker:
        counts.update(items)
    return {item for item, n in counts.items() if n > 1}


def _load_balancing_revocations(
    total_c: int, total_t: int, loads: list[_Load]
) -> tuple[dict[str, list[str]], dict[str, list[ConnectorTaskId]]]:
    """Upstream ``performLoadBalancingRevocations``: per type, what to take from each worker."""
    if all(load.is_empty() for load in loads) or (total_c == 0 and total_t == 0):
        return {}, {}
    return (_revocations(total_c, loads, [load.connectors for load in loads]),
            _revocations(total_t, loads, [load.tasks for load in loads]))


def _revocations(total: int, loads: list[_Load], allocated: list[set[_T]]) -> dict[str, list[_T]]:
    n = len(loads)
    floor, extra = divmod(total, n)
    sizes = [len(items) for items in allocated]
    at_floor = sum(1 for s in sizes if s == floor)
    at_extra = sum(1 for s in sizes if s == floor + 1)
    if at_extra == extra and at_floor + at_extra == n:
        return {}
    result: dict[str, list[_T]] = {}
    extras_given = 0
    for load, items, size in zip(loads, allocated, sizes, strict=True):
        if size <= floor:
            continue
        if extras_given < extra:
            extras_given += 1
            if size == floor + 1:
                continue
            keep = floor + 1
        else:
            keep = floor
        # Keep the lowest items, give up the highest (module docstring).
        cut = size - keep
        result[load.worker] = heapq.nlargest(cut, items) if cut * 8 < size else sorted(items)[: -cut - 1: -1]
    return result


def _revoke(
    loads: list[_Load],
    lb_c: dict[str, list[str]],
    lb_t: dict[str, list[ConnectorTaskId]],
    to_revoke_c: dict[str, set[str]],
    to_revoke_t: dict[str, set[ConnectorTaskId]],
) -> None:
    for load in loads:
        rc = lb_c.get(load.worker)
        if rc:
            to_revoke_c.setdefault(load.worker, set()).update(rc)
            load.connectors.difference_update(rc)
        rt = lb_t.get(load.worker)
        if rt:
            to_revoke_t.setdefault(load.worker, set()).update(rt)
            load.tasks.difference_update(rt)


def _level_fill(loads: list[_Load], sets: list[set[_T]], items: list[_T]) -> None:
    """Upstream ``assignConnectors`` / ``assignTasks``: workers sorted by (count of the type,
    worker id); each pass gives one item to every worker tied with the least loaded one, in that
    order, until the items run out."""
    if not items:
        return
    order = sorted(range(len(loads)), key=lambda i: (len(sets[i]), loads[i].worker))
    targets = [sets[i] for i in order]
    sizes = [len(s) for s in targets]
    n = len(targets)
    i = 0
    total = len(items)
    while i < total:
        first = sizes[0]
        up_to = 1
        while up_to < n and sizes[up_to] <= first:
            up_to += 1
        for k in range(min(up_to, total - i)):
            targets[k].add(items[i])
            sizes[k] += 1
            i += 1


def apply_assignment(current: ConnectorsAndTasks, assignment: ConnectAssignment) -> ConnectorsAndTasks:
    """What a worker runs after receiving ``assignment`` while running ``current``.

    Upstream ``WorkerCoordinator.onJoinComplete``: under the cooperative protocols (version >= 1)
    the worker stops the revoked items and adds the new ones to what it keeps; a failed assignment
    (e.g. CONFIG_MISMATCH) carries nothing, so the worker keeps its work. Under the eager protocol
    (version 0) the worker released everything before joining, so the assignment is the whole set.
    """
    if assignment.version == 0:
        return ConnectorsAndTasks.of(assignment.connectors, assignment.tasks)
    revoked_c = set(assignment.revoked_connectors)
    revoked_t = set(assignment.revoked_tasks)
    return ConnectorsAndTasks.of(
        [c for c in current.connectors if c not in revoked_c] + list(assignment.connectors),
        [t for t in current.tasks if t not in revoked_t] + list(assignment.tasks),
    )


register_assignor(EAGER, lambda max_delay_ms: EagerAssignor())
register_assignor(INCREMENTAL_COOPERATIVE, IncrementalCooperativeAssignor)
