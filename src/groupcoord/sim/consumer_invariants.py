"""The invariant checks of the consumer-group simulation (``sim.consumer``, whose docstring states
them): I1 on the coordinator's side (a shadow of who holds what, kept from the records it writes)
and on the processes' side (what each consumes), I3 on epochs, I2 on every installed target, I6
on every offset commit, and every invariant in full at checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from groupcoord.client.consumer import Partitions, TopicIdPartition
from groupcoord.coordinator.assignors.target_index import (
    MAX_INDEXED_PARTITION,
    TargetIndex,
    inversion,
)
from groupcoord.coordinator.messages import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.modern.consumer.assignment_epochs import commit_check
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
from groupcoord.coordinator.modern.subscription import subscribed_topic_ids
from groupcoord.coordinator.records import ConsumerGroupCurrentMemberAssignmentValue, Record, RecordType
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.engine import Simulation, Violation
from groupcoord.sim.process import Proc

if TYPE_CHECKING:
    from groupcoord.sim.application import Application

_E = ErrorCode
_CURRENT = RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
_TARGET_META = RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA
_TARGET_MEMBER = RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
_OFFSET = RecordType.OFFSET_COMMIT
#: The member-level errors of a commit (I6); per-partition ones (a topic deleted meanwhile,
#: UNKNOWN_TOPIC_ID) are not about fencing.
_FENCING_CODES = frozenset({int(_E.unknown_member_id), int(_E.fenced_member_epoch),
                            int(_E.stale_member_epoch), int(_E.illegal_generation)})
STATIC_LEAVE_EPOCH = -2
#: :meth:`ConsumerInvariants._expected_commit_error`: the answer depends on each partition.
PER_PARTITION = -1


def _as_is(resources: Iterable[Any]) -> Iterable[Any]:
    return resources


def _held(v: ConsumerGroupCurrentMemberAssignmentValue) -> frozenset[TopicIdPartition]:
    return frozenset([(t, p) for a in (v.assigned_partitions, v.partitions_pending_revocation)
                      for t, ps in a.items() for p in ps])


def _index_inverts(ix: TargetIndex, mappings: Any) -> bool:
    """Whether the inverted target ``ix`` is consistent and exactly ``inversion(mappings)``
    (``ix.inverse() == inversion(mappings)``), read in place: every claim of a mapping is its
    entry in the index and the index holds no other entry nor an empty topic. Building both
    inversions of a 1,000-partition target after every rebalance was most of I2's cost. True
    only when the comparison would hold; False leaves the decision to it."""
    if not ix.consistent():
        return False
    owners = ix.owners
    topic_ids = ix.topic_ids
    claims = 0
    for mid, a in mappings.items():
        for t, ps in a.items():
            if not ps:
                return False
            key = t.int
            row = owners.get(key)
            if row is None or topic_ids.get(key) != t:
                return False
            n = min(len(row), MAX_INDEXED_PARTITION)
            for q in ps:
                if not 0 <= q < n or row[q] != mid:
                    return False
            claims += len(ps)
    entries = 0
    for row in owners.values():
        held = len(row) - row.count(None)
        if not held:
            return False  # (``inverse`` would show the topic with no partition)
        entries += held
    return entries == claims


class ConsumerInvariants(Simulation):
    """The invariant checks of :class:`groupcoord.sim.consumer.ConsumerSimulation`, over the state
    its ``setup`` creates (declared here)."""

    #: The records of the group type's current assignments and of its target.
    current_type = _CURRENT
    target_types: tuple[RecordType, ...] = (_TARGET_META, _TARGET_MEMBER)
    #: How violations name a member, and what a process does with its resources.
    member_word = "member"
    verbs = ("consumed", "consumes")
    epoch_word = "epoch"
    #: The commit errors that say the committer is not (or no longer) the member it claims.
    fencing_codes = _FENCING_CODES

    gid: str
    procs: dict[str, Proc]
    _live: list[Proc] | None
    by_mid: dict[str, Proc]
    coord_holder: dict[TopicIdPartition, str]
    coord_held: dict[str, frozenset[TopicIdPartition]]
    _coord_parts: dict[str, tuple[Any, Any]]
    _sub_ids: tuple[Any, dict[tuple[Any, Any], frozenset[UUID]]]
    coord_epoch: dict[str, int]
    removals: dict[str, int]
    present: dict[str, int]
    consumers: dict[TopicIdPartition, list[Proc]]
    legit: dict[TopicIdPartition, Proc]
    legit_version: int
    last_owner: dict[TopicIdPartition, str]
    universe: frozenset[TopicIdPartition]
    _universe_key: Any
    _universe_dirty: bool
    _target_dirty: bool
    _group_records: bool
    _blocker: Proc | None
    _epochs: tuple[int, int]
    pending_restarts: set[str]
    _requests_in_flight: dict[tuple[str, int], int]
    _dead_in_flight: int
    stats: dict[str, int]
    app: Application

    # ================================================================== scenario events

    def live(self) -> list[Proc]:
        """Live processes in start order (cached until one starts or stops)."""
        live = self._live
        if live is None:
            live = self._live = [p for p in sorted(self.procs.values(), key=lambda p: p.index)
                                 if p.alive]
        return live

    def live_count(self) -> int:
        return sum(1 for p in self.procs.values() if p.alive)

    # ================================================================== invariants: members

    def is_fenced(self, p: Proc) -> bool:
        inc = self.present.get(p.member.member_id)
        return inc is None or inc != p.inc_seen

    def _accept_success(self, p: Proc, req: ConsumerGroupHeartbeatRequest,
                        body: ConsumerGroupHeartbeatResponse, inc: int, before: int) -> None:
        """A success response the member is about to accept: client-side I1 and I3."""
        if inc != p.inc_seen and p.consuming:
            raise Violation("I1", f"{p.name} (member {req.member_id}) kept consuming "
                                  f"{self.format_resource(p.consuming)} into a new incarnation "
                                  f"of its membership")
        if req.member_epoch != 0 and body.member_epoch < before:
            raise Violation("I3", f"{p.name}: member epoch would go from {before} down to "
                                  f"{body.member_epoch}")
        if inc >= 0 and self.present.get(req.member_id) == inc:
            coord = self.coord_epoch.get(req.member_id)
            if coord is not None and coord >= 0 and body.member_epoch > coord:
                raise Violation("I3", f"{p.name}: accepted epoch {body.member_epoch} is ahead of "
                                      f"the coordinator's {coord}")
        p.inc_seen = inc

    def _sync(self, p: Proc) -> None:
        """Apply the change of what a process consumes to the checker's view (stops first)."""
        owned = p.member.owned if p.alive else frozenset()
        cur = p.consuming
        if owned is cur or owned == cur:
            p.consuming = owned
            return
        gone = cur - owned
        if gone:
            self._stop_consuming(p, gone)
        new = owned - cur
        p.consuming = owned
        if new:
            self._start_consuming(p, new)
        self.dirty = True

    def _stop_consuming(self, p: Proc, parts: Iterable[TopicIdPartition]) -> None:
        legit = self.legit
        universe = self.universe
        lost = 0
        for tp in parts:
            lst = self.consumers.get(tp)
            if lst is not None and p in lst:
                lst.remove(p)
            if legit.get(tp) is p:
                del legit[tp]
                self.legit_version += 1
                if tp in universe:
                    lost += 1
        if lost:
            self.set_unowned(self._unowned + lost)
        self.app.released(p, parts)

    def _start_consuming(self, p: Proc, parts: Iterable[TopicIdPartition]) -> None:
        fenced = self.is_fenced(p)
        mid = p.member.member_id
        legit = self.legit
        universe = self.universe
        gained = 0
        self.stats["i1_checks"] += 1
        for tp in parts:  # deterministic order: ids and ints hash the same in every process
            lst = self.consumers.setdefault(tp, [])
            if not fenced:
                holder = self.coord_holder.get(tp)
                if holder != mid:
                    raise Violation("I1", f"{p.name} (member {mid}) starts consuming "
                                          f"{self._tp(tp)} which the coordinator "
                                          f"{'holds for ' + self._who(holder) if holder else 'gives nobody'}")
                for q in lst:
                    if q is not p and q.alive and not self.is_fenced(q):
                        raise Violation("I1", f"{self._tp(tp)} is consumed by {q.name} (member "
                                              f"{q.member.member_id}, not fenced) and now also by "
                                              f"{p.name} (member {mid})")
                last = self.last_owner.get(tp)
                if last is not None and last != p.name:
                    self.counters["moved"] += 1
                self.last_owner[tp] = p.name
                if tp not in legit and tp in universe:
                    gained += 1
                legit[tp] = p
                self.legit_version += 1
            lst.append(p)
        if gained:
            self.set_unowned(self._unowned - gained)
        self.app.assigned(p, parts)

    def _tp(self, tp: TopicIdPartition) -> str:
        return f"{self.topic_names.get(tp[0], str(tp[0]))}-{tp[1]}"

    def _who(self, mid: str | None) -> str:
        p = self.by_mid.get(mid or "")
        return f"{p.name} (member {mid})" if p is not None else f"member {mid}"

    # ================================================================== invariants: coordinator

    def on_records(self, records: list[Record]) -> bool:
        """Shadow the coordinator's holdings record by record (I1, I3 per member); True when
        a group record was among them (offset commits do not change the group)."""
        group = False
        for rec in records:
            t = rec.key.type
            if t is _OFFSET:
                continue
            group = True
            self.on_group_record(rec, t)
        return group

    def on_group_record(self, rec: Record, t: RecordType) -> None:
        """One record of a group: a current assignment is shadowed (:meth:`_current_record`,
        of the group type's :attr:`current_type`, seen through :meth:`current_view`), a
        target marks I2 due."""
        self._group_records = True
        if t is self.current_type:
            key: Any = rec.key
            if key.group_id == self.gid:
                v = rec.value
                self._current_record(key.member_id, None if v is None else self.current_view(v))
        elif t in self.target_types:
            self._target_dirty = True

    def current_view(self, v: Any) -> Any:
        """A current-assignment value as :meth:`_current_record` reads it (assigned and
        pending partitions, member epoch)."""
        return v

    def _current_record(self, mid: str, v: ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
        old = self.coord_held.get(mid, frozenset())
        holder = self.coord_holder
        if v is None:  # the member is removed: it is fenced, and releases everything
            self.removals[mid] = self.removals.get(mid, 0) + 1
            self.present.pop(mid, None)
            self.coord_held.pop(mid, None)
            self._coord_parts.pop(mid, None)
            self.coord_epoch.pop(mid, None)
            for tp in old:
                if holder.get(tp) == mid:
                    del holder[tp]
            p = self.by_mid.get(mid)
            if p is not None and p.alive and p.member.member_id == mid:
                self._fenced_now(p)
            return
        if mid not in self.present:
            self.present[mid] = self.removals.get(mid, 0)
        assigned, pending = v.assigned_partitions, v.partitions_pending_revocation
        prev = self._coord_parts.get(mid)
        if prev is not None and (prev[0] is assigned or prev[0] == assigned) \
                and (prev[1] is pending or prev[1] == pending):
            new = old
        else:
            new = _held(v)
            self._coord_parts[mid] = (assigned, pending)
        prev_epoch = self.coord_epoch.get(mid)
        epoch = v.member_epoch
        if prev_epoch is not None and epoch < prev_epoch and epoch != STATIC_LEAVE_EPOCH \
                and prev_epoch != STATIC_LEAVE_EPOCH:
            raise Violation("I3", f"member {self._who(mid)} epoch decreased from {prev_epoch} to "
                                  f"{epoch} without leaving")
        self.coord_epoch[mid] = epoch
        if new is old or new == old:
            return
        for tp in new - old:
            h = holder.get(tp)
            if h is not None and h != mid:
                raise Violation("I1", f"the coordinator gives {self._tp(tp)} to {self._who(mid)} "
                                      f"while {self._who(h)} still holds it (not revoked, not "
                                      f"fenced)")
            holder[tp] = mid
        released = old - new
        if released:
            p = self.by_mid.get(mid)
            if p is not None and p.alive and p.member.member_id == mid and not self.is_fenced(p):
                still = released & p.consuming
                if still:
                    raise Violation("I1", f"the coordinator released {self.format_resource(still)} "
                                          f"from {p.name} (member {mid}) which still consumes "
                                          f"them: a revocation taken as acknowledged")
            for tp in released:
                if holder.get(tp) == mid:
                    del holder[tp]
        self.coord_held[mid] = new

    def _fenced_now(self, p: Proc) -> None:
        """The coordinator removed ``p``'s member: its consumption is no longer legitimate."""
        legit = self.legit
        lost = 0
        for tp in p.consuming:
            if legit.get(tp) is p:
                del legit[tp]
                self.legit_version += 1
                if tp in self.universe:
                    lost += 1
        if lost:
            self.set_unowned(self._unowned + lost)
        if p.consuming:
            self.trace("zombie", p.name, p.member.member_epoch, p.consuming)

    def _group(self) -> ConsumerGroup | None:
        g = self.coord.shard.groups.get(self.gid) if self.coord.up else None
        return g if isinstance(g, ConsumerGroup) else None

    def group_epoch(self) -> int:
        g = self._group()
        return g.group_epoch if g is not None else self._epochs[0]

    def _check_group(self) -> None:
        g = self._group()
        if g is not None:
            ge, ae = g.group_epoch, g.assignment_epoch
            pe, pa = self._epochs
            if (ge, ae) != (pe, pa):
                if ge < pe or ae < pa:
                    raise Violation("I3", f"group epoch {pe}->{ge} / assignment epoch {pa}->{ae} "
                                          f"decreased")
                if ae > ge:
                    raise Violation("I3", f"assignment epoch {ae} > group epoch {ge}")
                self._epochs = (ge, ae)
            if self._target_dirty:
                self._target_dirty = False
                if ae == ge:
                    self.check_target(g)

    def check_target(self, g: ConsumerGroup) -> None:
        """I2: the installed target assigns every subscribed partition exactly once, to an
        existing member subscribed to its topic."""
        self.stats["i2_checks"] += 1
        meta = g.subscription_metadata
        by_id = {t.topic_id: t for t in meta.values()}
        subscribed_topics: set[UUID] = set()
        subs: dict[str, frozenset[UUID]] = {}
        # Cached per subscription metadata (the coordinator replaces it, never mutates it) and
        # per regex resolution: a regex resolved off the heartbeat path changes what a member
        # subscribes to without necessarily changing the metadata.
        cached = self._sub_ids[0]
        if cached is None or cached[0] is not meta or cached[1] != g.resolved_regexes:
            self._sub_ids = ((meta, dict(g.resolved_regexes)), {})
        ids_of = self._sub_ids[1]
        for mid in sorted(g.members):
            m = g.members[mid]
            key = (m.subscribed_topic_names, m.subscribed_topic_regex)
            ids = ids_of.get(key)
            if ids is None:
                ids = ids_of[key] = subscribed_topic_ids(*key, meta, g.resolved_regexes)
            subs[mid] = ids
            subscribed_topics |= ids
        assigned: dict[UUID, set[int]] = {}
        for mid in sorted(g.target_assignment):
            if mid not in g.members:
                raise Violation("I2", f"the target assigns partitions to {self._who(mid)}, not a "
                                      f"member")
            for t, ps in g.target_assignment[mid].items():
                if not ps:
                    continue
                if t not in subs[mid]:
                    raise Violation("I2", f"the target gives {self._who(mid)} partitions of "
                                          f"{self.topic_names.get(t, t)} it does not subscribe to")
                n = by_id[t].num_partitions if t in by_id else -1
                if min(ps) < 0 or max(ps) >= n:
                    bad = sorted(q for q in ps if not 0 <= q < n)[0]
                    raise Violation("I2", f"the target assigns {self._tp((t, bad))}, not a "
                                          f"partition of the subscribed metadata")
                have = assigned.setdefault(t, set())
                twice = have & ps
                if twice:
                    q = min(twice)
                    other = next(o for o in sorted(g.target_assignment)
                                 if q in g.target_assignment[o].get(t, ()) and o != mid)
                    raise Violation("I2", f"the target assigns {self._tp((t, q))} twice "
                                          f"({self._who(other)}, {self._who(mid)})")
                have |= ps
        for t in sorted(subscribed_topics, key=lambda u: u.bytes):
            n = by_id[t].num_partitions
            have = assigned.get(t, set())
            if len(have) != n:
                q = min(set(range(n)) - have)
                raise Violation("I2", f"the target at epoch {g.assignment_epoch} leaves "
                                      f"{self._tp((t, q))} unassigned")
        # The inverted target the assignor reads (kept by replay, rebuilt by a failover's).
        ix = g.target_index
        if _index_inverts(ix, g.target_assignment):
            inverted = True
        else:  # (the exact comparison decides)
            expected = inversion(g.target_assignment)
            inverted = ix.consistent() == (expected is not None) and (
                expected is None or ix.inverse() == expected)
        if not inverted or ix.mappings.keys() != g.target_assignment.keys() or any(
                a is not ix.mappings[mid] for mid, a in g.target_assignment.items()):
            raise Violation("I2", f"the inverted target at epoch {g.assignment_epoch} is not "
                                  f"the inversion of the target assignment")

    # ================================================================== I6

    def _expected_commit_error(self, req: OffsetCommitRequest) -> int:
        g = self._group()
        m = g.members.get(req.member_id) if g is not None else None
        if m is None:
            return int(_E.unknown_member_id)
        if req.generation_id_or_member_epoch != m.member_epoch and m.classic is not None:
            return int(_E.illegal_generation)  # Kafka's ConsumerGroup.validateMemberEpoch
        if req.generation_id_or_member_epoch > m.member_epoch:
            return int(_E.stale_member_epoch)  # ahead: as Kafka, not the KIP-848 text's FENCED
        if 0 <= req.generation_id_or_member_epoch < m.member_epoch:
            return PER_PARTITION  # KIP-1251: :meth:`_check_older_commit`
        if req.generation_id_or_member_epoch != m.member_epoch:
            return int(_E.stale_member_epoch)
        return 0

    def _older_commit_expectations(self, req: OffsetCommitRequest) -> dict[tuple[str, int], int]:
        """KIP-1251 (Kafka 4.3): what each partition of a commit at an epoch older than the
        member's must get, from the group as it is before the commit: accepted (0) where the
        member has held the partition since that epoch or earlier, else STALE_MEMBER_EPOCH.
        Topics the image does not know are left to the per-partition topic checks."""
        g = self._group()
        assert g is not None
        check = commit_check(g.members[req.member_id], req.generation_id_or_member_epoch)
        image = self.coord.shard.metadata
        out: dict[tuple[str, int], int] = {}
        for t in req.topics:
            topic = image.by_id.get(t.topic_id) if t.topic_id is not None \
                else image.by_name.get(t.name)
            if topic is None:
                continue
            for part in t.partitions:
                if 0 <= part.partition_index < topic.num_partitions:
                    ok = check(topic.topic_id, part.partition_index)
                    out[(topic.name, part.partition_index)] = 0 if ok else int(
                        _E.stale_member_epoch)
        return out

    def _check_older_commit(self, p: Proc, req: OffsetCommitRequest,
                            resp: OffsetCommitResponse, expected: dict[tuple[str, int], int],
                            fenced: bool) -> None:
        """I6 on a commit at an epoch older than the member's (KIP-1251): each partition gets
        exactly its expectation, and nothing of a fenced process is accepted."""
        self.stats["i6_checks"] += 1
        accepted = False
        for t in resp.topics:
            for pr in t.partitions:
                want = expected.get((t.name, pr.partition_index))
                if want is not None and pr.error_code != want:
                    raise Violation("I6", f"a commit from {self._committer(p, req)} got "
                                          f"{error_name(pr.error_code)} for {t.name}-"
                                          f"{pr.partition_index}, expected {error_name(want)}")
                accepted = accepted or pr.error_code == 0
        if fenced and accepted:
            raise Violation("I6", f"a commit from fenced {self._committer(p, req)} was accepted")
        self.stats["commits_accepted" if accepted else "commits_rejected"] += 1

    def _check_commit(self, p: Proc, req: OffsetCommitRequest, codes: set[int],
                      expected: int, fenced: bool) -> None:
        """I6 on a commit handled (``codes``: its answer's, :func:`_commit_codes`): one from a
        fenced process, or one the group as it was must refuse (``expected``,
        :meth:`_expected_commit_error`), is never accepted, and gets exactly the expected
        error; a current one is never refused as not the member's."""
        self.stats["i6_checks"] += 1
        accepted = 0 in codes
        if (fenced or expected) and accepted:
            raise Violation("I6", f"a commit from {'fenced ' if fenced else ''}"
                                  f"{self._committer(p, req)} was accepted, expected "
                                  f"{error_name(expected)}")
        if expected and codes != {expected}:
            raise Violation("I6", f"a commit from {self._committer(p, req)} got "
                                  f"{sorted(error_name(c) for c in codes)}, expected "
                                  f"{error_name(expected)}")
        if not expected and codes & self.fencing_codes:
            raise Violation("I6", f"a commit from {self._committer(p, req)}, current, was "
                                  f"refused with {sorted(error_name(c) for c in codes)}")
        if accepted:
            self.stats["commits_accepted"] += 1
        else:
            self.stats["commits_rejected"] += 1
            if fenced:
                self.stats["zombie_commits_rejected"] += 1

    def _committer(self, p: Proc, req: OffsetCommitRequest) -> str:
        """Who sent a commit, for an I6 violation (built only when one is raised)."""
        return f"{p.name} (member {req.member_id}, {self.epoch_word} " \
               f"{req.generation_id_or_member_epoch})"

    # ================================================================== full check

    def full_check(self) -> None:
        """Every invariant on the whole state (checkpoints, the end, ``full_checks`` runs).

        A quick pass (:meth:`_quick_full_check`) first finds out whether a check fails; only
        when one does do the checks run one by one in a canonical order (:meth:`_full_check`),
        which reports the violation, the same in every process."""
        try:
            self._quick_full_check()
        except Violation:
            self._full_check(ordered=True)
            raise

    def _quick_full_check(self) -> None:
        """The checks of :meth:`_full_check`, failing in exactly the same states (and calling
        :meth:`check_target` and :meth:`check_process` at the same points), on whole sets in
        hash order: a (topic id, partition) is hashed once on the coordinator's side and never
        on the processes' side (its hash is a Python call, ``UUID.__hash__``, while
        ``dict.fromkeys``, ``dict.update`` and comparisons of dicts and frozensets reuse the
        hashes they store). Its violations only say that a check fails."""
        g = self._group()
        if g is not None:
            holders: dict[Any, str] = {}
            ae = g.assignment_epoch
            for mid, m in g.members.items():
                if m.member_epoch > ae:
                    raise Violation("I3", "a member epoch is ahead of the assignment epoch")
                held = list(self.coordinator_holdings(m))
                n = len(holders)
                holders.update(dict.fromkeys(held, mid))
                if len(holders) != n + len(held):  # held twice, by two members or by one
                    raise Violation("I1", "a resource is held twice (coordinator)")
            if holders != self.coord_holder:
                raise Violation("I1", "the coordinator's holdings differ from the ones its records "
                                      "describe")
            if g.group_epoch == ae and g.members:
                self.check_target(g)
        seen: dict[Any, Proc] = {}
        for p in self.live():
            self.check_process(p)
            if self.is_fenced(p):
                continue
            consuming = p.consuming
            n = len(seen)
            seen.update(dict.fromkeys(consuming, p))
            if len(seen) != n + len(consuming):
                raise Violation("I1", "a resource is consumed by two processes, neither fenced")
            if not self.holds_all(p, consuming):
                raise Violation("I1", "a process consumes what the coordinator does not hold "
                                      "for it")

    def holds_all(self, p: Proc, resources: Partitions) -> bool:
        """Whether :meth:`check_holding` passes for every one of ``resources`` (the quick
        full check's): the coordinator holds each for ``p``'s member. ``coord_held`` has, for
        each member, exactly the resources ``coord_holder`` gives it (:meth:`_current_record`
        updates both together), so a subset test of two frozensets answers it."""
        return resources <= self.coord_held.get(p.member.member_id, frozenset())

    def _full_check(self, ordered: bool) -> None:
        order = self.ordered if ordered else _as_is
        g = self._group()
        if g is not None:
            holders: dict[TopicIdPartition, str] = {}
            for mid in sorted(g.members) if ordered else g.members:
                m = g.members[mid]
                if m.member_epoch > g.assignment_epoch:
                    raise Violation("I3", f"{self.member_word} {self._who(mid)} epoch "
                                          f"{m.member_epoch} > assignment epoch "
                                          f"{g.assignment_epoch}")
                for tp in order(self.coordinator_holdings(m)):
                    if tp in holders:
                        raise Violation("I1", f"{self._tp(tp)} is held by {self._who(holders[tp])} "
                                              f"and {self._who(mid)} (coordinator)")
                    holders[tp] = mid
            if holders != self.coord_holder:
                raise Violation("I1", "the coordinator's holdings differ from the ones its records "
                                      "describe")
            if g.group_epoch == g.assignment_epoch and g.members:
                self.check_target(g)
        self.check_processes(order)

    def ordered(self, resources: Iterable[Any]) -> list[Any]:
        """Resources in a canonical order (the same in every process: no hash order)."""
        return sorted(resources, key=lambda tp: (tp[0].bytes, tp[1]))

    def coordinator_holdings(self, m: Any) -> Iterable[Any]:
        """What the coordinator's member ``m`` holds (assigned or pending revocation)."""
        return m.owned_partitions()

    def check_processes(self, order: Callable[[Iterable[Any]], Iterable[Any]]) -> None:
        """I1 on the processes' side over the whole state: no resource consumed by two
        unfenced processes, each checked by :meth:`check_holding` (``order``: the order in
        which a process's resources are checked)."""
        seen: dict[Any, Proc] = {}
        consumed = self.verbs[0]
        for p in self.live():
            self.check_process(p)
            if self.is_fenced(p):
                continue
            for tp in order(p.consuming):
                if tp in seen:
                    raise Violation("I1", f"{self._tp(tp)} is {consumed} by {seen[tp].name} and "
                                          f"{p.name}, neither fenced")
                seen[tp] = p
                self.check_holding(p, tp)

    def check_process(self, p: Proc) -> None:
        """A check of one live process before :meth:`check_processes` looks at what it
        consumes (``sim.classic_connect``: a worker silent for too long)."""

    def check_holding(self, p: Proc, tp: Any) -> None:
        """An unfenced process consumes only what the coordinator holds for it."""
        if self.coord_holder.get(tp) != p.member.member_id:
            raise Violation("I1", f"{p.name} {self.verbs[1]} {self._tp(tp)} which the "
                                  f"coordinator does not hold for it")
