"""The server-side ``uniform`` assignor (KIP-848 "Assignor" / ``UniformAssignor``; "Case Studies").

KIP-848 ships two server-side assignors; ``uniform`` "uniformly assigns partitions amongst the
members", somewhat like the classic sticky assignor: as balanced as possible first, then as sticky
as possible. The spec's "Case Studies" chapter fixes its observable behaviour on one topic
(``A=[0,1,2]`` + ``B`` joins -> ``A=[0,1], B=[2]``; ...), which the rules below reproduce.

Homogeneous subscriptions (every member subscribes to the same topics), ``P`` partitions over
``M`` members, ``q, r = divmod(P, M)``:

1. Each member's previous target partitions are cleaned: partitions of topics that no longer
   exist, that the member does not subscribe to, or with ids outside ``[0, num_partitions)`` are
   dropped; a partition claimed by several members (invalid input) stays with the smallest
   member id.
2. Quotas: every member ends with ``q`` or ``q + 1`` partitions. The ``r`` extra slots go first
   to members already holding more than ``q`` partitions (in member-id order), so as many of them
   as possible keep ``q + 1``.
3. A member above its quota gives partitions up: its topics in topic-id order, within a topic the
   most recently added first (``MemberSubscription.held_since``: partitions of its target it does
   not hold yet, then those it got at the highest epoch), then the highest partition ids first.
   Everything else it holds, it keeps. The KIP-848 "Online Migration" case study relies on that
   order (C holding [foo-2, foo-5] since epoch 22 and foo-4 since 23 gives up foo-4); without
   epochs (all equal) it is the highest ids, as the other case studies print.
4. Every partition nobody keeps is handed out in (topic name, topic id, partition) order, each to
   the member holding the fewest partitions at that moment, ties broken by member id.

Heterogeneous subscriptions (members subscribe to different topic sets) follow the idea of Kafka's
``GeneralUniformAssignmentBuilder``: members keep their cleaned previous partitions, unassigned
partitions go to the least-loaded subscriber of their topic, then partitions are moved along
shortest *cost-reducing paths* (a member with ``L`` partitions gives one to a subscriber of its
topic, which gives one on, ... to a member with at most ``L - 2``) until no such path exists. An
assignment without cost-reducing paths is an optimal semi-matching: among members that can
exchange partitions it minimises the largest count and maximises the smallest one.

The assignor is a pure function of its input: it never mutates the spec, and its result does not
depend on the iteration order of unordered inputs. Members whose assignment does not change get
their input mapping back (the same object).

Incremental fast path (homogeneous only). Reading every member's previous partitions is the cost
that dominates a small change to a large group (100k one-partition sets to visit at 10k members x
100k partitions). The assignor therefore remembers its last few homogeneous outputs (member id ->
mapping object, partition counts, topic sizes). When every member's ``assigned_partitions`` *is*
(by identity) the mapping a remembered output gave that member, or is empty, the counts and the
free partitions (those of members that left, and of grown topics) are known without reading the
others, and the result is the same as the full read would give: the remembered output was legal
and complete, and mappings are read-only. Anything else (copied mappings, changed topics or
subscriptions) takes the full read. A coordinator lists a group's members in the same order
from one computation to the next (new members last), so the check goes by position first: the
members that come in the output's order with its mappings are certified by pointer comparisons
alone, the rest by member id; the result starts from a copy of the remembered output. Between
two epochs of a 10,000-member group this touches no member's mapping and looks up no member id
but the few that changed. The memory is bounded (the recent outputs kept hold at most
``memo_members`` member mappings in all and are at most ``memo_records`` outputs, 64 by
default; the newest output is always kept) and only affects
speed, never results; ``UniformAssignor(memo_members=0)`` turns it off. The built-in instance is
shared by all groups, so each group's latest output stays remembered while the other groups'
recent outputs fit in the budgets; past them, calls take the full read. An output that served
a later call is dropped (the later output supersedes it), so the memo does not keep the
previous generation of a group's target sets alive. Members handed back as the very
``MemberSubscription`` objects an output was computed from, and whose mapping it returned
unchanged, are not read at all (frozen objects: same object, same subscription and mapping).

The group's inverted target (``GroupSpec.target_index``, kept by the coordinator's replay;
``target_index.py``) serves the calls the memo does not recognise (after a load, copied
mappings): members whose input *is* the index's mapping are counted from the index, the free
partitions are its empty slots and the targets of members that left, and only the members
above their quota are read. Used only while the index is the exact inversion; the result is
the full read's.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress, repeat
from operator import attrgetter, eq, is_, is_not, ne, not_
from uuid import UUID

from groupcoord.coordinator.assignors.base import (
    EMPTY_ASSIGNMENT,
    Assignment,
    GroupAssignment,
    GroupSpec,
    MemberSubscription,
)
from groupcoord.coordinator.assignors.target_index import TargetIndex

log = logging.getLogger(__name__)

__all__ = ["UniformAssignor"]


#: How many of an output's changed members a later call checks before the full comparison.
_PRECHECK = 16

_subscription_of = attrgetter("subscribed_topic_ids")
_assigned_of = attrgetter("assigned_partitions")


@lru_cache(maxsize=256)
def _partition_ids(num_partitions: int) -> tuple[int, ...]:
    """``tuple(range(n))``, cached: topic sizes repeat across calls and groups, and target
    sets made of these share their int objects (a cached frozenset would cost its table too:
    4 MB at 100,000 partitions)."""
    return tuple(range(num_partitions))


def _compact(partitions: Iterable[int]) -> frozenset[int]:
    """A frozenset of ``partitions`` with the smallest table CPython gives it. A set built
    element by element (from a list, or by ``union``) keeps the table it grew, up to twice the
    size of one made from a set; target partition sets live as long as the target. A single
    partition is the shared ``_single`` set: with many topics most members hold one partition
    of each (10,000 members on 100 topics x 1,000 partitions: 100,000 one-element sets of 216
    bytes each, or 1,000 shared ones)."""
    ps = set(partitions)
    if len(ps) == 1:
        (p,) = ps
        single = _SINGLES.get(p)
        if single is None:
            single = frozenset(ps)
            if 0 <= p < _MAX_SINGLE:
                _SINGLES[p] = single
        return single
    return frozenset(ps)


#: Partition ids below this get a shared one-element set (``_compact``), kept for the life of
#: the process (one per partition id in use: at most 216 bytes times ``_MAX_SINGLE``).
_MAX_SINGLE = 1 << 16
_SINGLES: dict[int, frozenset[int]] = {}


@dataclass(slots=True, eq=False)
class _Topic:
    """A subscribed, existing topic with at least one partition (hashed by identity)."""

    topic_id: UUID
    name: str
    num_partitions: int
    #: Position in (name, topic id) order: the order free partitions are handed out in.
    handout_rank: int = 0
    #: Position in topic-id order: the order in which over-quota members give topics up.
    id_rank: int = 0
    #: ``0 .. num_partitions - 1`` (shared int objects).
    all_partitions: tuple[int, ...] = ()
    #: Scratch of one call: partitions some member keeps.
    owned: set[int] = field(default_factory=set)


class _TopicIndex:
    """Resolves the topic-id keys of members' mappings to :class:`_Topic`, cheaply.

    ``uuid.UUID`` hashes in Python code, so a dict lookup by UUID costs a Python call; the keys of
    members' mappings are usually the very objects of the spec (or of this assignor's previous
    output), so lookups go by object identity first and fall back to equality. Every object whose
    ``id`` is cached is kept alive in ``_alive`` for the life of the index (one call), so an
    ``id`` cannot be recycled meanwhile.
    """

    __slots__ = ("_alive", "_by_oid", "_by_uuid")

    def __init__(self, topics: Mapping[UUID, _Topic], other_keys: Iterable[UUID]) -> None:
        self._by_uuid: dict[UUID, _Topic] = dict(topics)
        self._by_oid: dict[int, _Topic | None] = {}
        self._alive: list[object] = []
        for key, topic in topics.items():
            self._remember(key, topic)
        for key in other_keys:
            found = self._by_uuid.get(key)
            if found is not None:
                self._remember(key, found)

    def _remember(self, key: object, topic: _Topic | None) -> None:
        self._by_oid[id(key)] = topic
        self._alive.append(key)

    def get(self, key: UUID) -> _Topic | None:
        try:
            return self._by_oid[id(key)]
        except KeyError:
            pass
        topic = self._by_uuid.get(key)
        self._remember(key, topic)
        return topic

    def owned_sets(self) -> dict[int, set[int]]:
        """``id(key) -> topic.owned`` for every key object seen so far."""
        return {oid: t.owned for oid, t in self._by_oid.items() if t is not None}


def _subscribed_topics(spec: GroupSpec, topic_ids: Iterable[UUID]) -> dict[UUID, _Topic]:
    """The topics of ``topic_ids`` that exist and have partitions, ranked (deterministically)."""
    found: dict[UUID, _Topic] = {}
    for tid in topic_ids:
        meta = spec.topics.get(tid)
        if meta is not None and meta.num_partitions > 0:
            found[tid] = _Topic(tid, meta.name, meta.num_partitions)
    # UUIDs order as their ``int`` (which compares in C; ``UUID.__lt__`` is Python code).
    for rank, t in enumerate(sorted(found.values(), key=lambda t: (t.name, t.topic_id.int))):
        t.handout_rank = rank
    for rank, t in enumerate(sorted(found.values(), key=lambda t: t.topic_id.int)):
        t.id_rank = rank
        t.all_partitions = _partition_ids(t.num_partitions)
    return found


def _is_homogeneous(subscriptions: list[frozenset[UUID]]) -> bool:
    # list.count compares by identity first, then by equality: C speed when objects are shared.
    return subscriptions.count(subscriptions[0]) == len(subscriptions)


#: At most this many remembered outputs (the most recently made or used first). Each call walks
#: them (recall) and rebuilds the list (remember): with many small groups sharing the built-in
#: instance, a budget in members alone let thousands of records pile up and made every call
#: pay for all of them (found by the simulator's benchmark). A group evicted from the memo takes the full
#: read, whose cost is proportional to its size, so small groups lose little; large ones are bounded by
#: ``memo_members`` anyway (10 outputs of 10,000 members).
MEMO_RECORDS = 64


@dataclass(slots=True, eq=False)
class _Record:
    """One homogeneous output of this assignor, as a later call may be handed it back."""

    subscription: frozenset[UUID]
    #: Topic id -> partition count the output covered (all of them, each exactly once).
    sizes: dict[UUID, int]
    #: Member id -> the mapping object returned (read-only by contract).
    mappings: dict[str, Assignment]
    #: The member ids in the order of the input, and aligned with them the mapping objects
    #: returned and their partition counts: a later input listing the same members in the same
    #: order (what a coordinator passes between two epochs) is compared position by position,
    #: by identity, without a lookup per member.
    mids: list[str]
    assigned: list[Assignment]
    counts: list[int]
    #: Some members this output gave a new mapping: a cheap first test that an input is this
    #: output rather than the one it was computed from (they share the unchanged mappings).
    changed: tuple[str, ...] = ()
    #: Member id -> count, built when first needed (an input in another order).
    counts_by_mid: dict[str, int] | None = None
    #: Aligned with ``mids``: the input's member objects whose mapping the output returned as
    #: it was (None for the others): the same object later has the same subscription and
    #: mapping, so a later call need not read it (``_recall_inputs``).
    objs: list[MemberSubscription | None] = field(default_factory=list)
    #: A position of ``objs`` that is not None (-1: none).
    probe: int = -1
    #: The output's quota, and the positions whose count is not the quota (they hold one
    #: more); every other member holds exactly the quota.
    off: list[int] = field(default_factory=list)
    quota: int = 0

    def count_of(self) -> dict[str, int]:
        if self.counts_by_mid is None:
            self.counts_by_mid = dict(zip(self.mids, self.counts, strict=True))
        return self.counts_by_mid


class UniformAssignor:
    """Balanced, then sticky (see the module docstring for the exact rules)."""

    name = "uniform"

    def __init__(self, memo_members: int = 100_000, memo_records: int = MEMO_RECORDS) -> None:
        self._memo_members = memo_members
        self._memo_records = max(1, memo_records)
        #: Newest first. Replaced as a whole (never mutated), so concurrent calls are safe.
        self._records: tuple[_Record, ...] = ()

    def assign(self, spec: GroupSpec) -> GroupAssignment:
        members = spec.members
        if not members:
            return {}
        values = list(members.values())
        known = self._recall_inputs(values)
        if known is not None:
            return self._assign_homogeneous(spec, known[0], values, known[1], known[2])
        subscriptions = list(map(_subscription_of, values))
        if _is_homogeneous(subscriptions):
            return self._assign_homogeneous(spec, subscriptions[0], values)
        return _assign_heterogeneous(spec)

    def _recall_inputs(
        self, values: list[MemberSubscription]
    ) -> tuple[frozenset[UUID], list[Assignment], tuple[_Record, list[int]]] | None:
        """The subscription (homogeneous) and the mappings of ``values`` when most of them are
        the very member objects a remembered output was computed from and left unchanged: their
        subscription is that output's and their mapping the one it returned. Only the other
        members are read (a coordinator builds a new object for a member whose target or
        subscription changed); they are returned with the record. None: read every member."""
        for record in self._records:
            objs = record.objs
            k = record.probe
            if k < 0 or k >= len(values) or objs[k] is not values[k]:
                continue
            subscribed = record.subscription
            assigned = record.assigned[:len(values)]
            same = list(map(is_, values, objs))
            others = [*compress(range(len(same)), map(not_, same))] if False in same else []
            others += range(len(same), len(values))
            if len(others) > _FEW:
                return None
            assigned += repeat(EMPTY_ASSIGNMENT, len(values) - len(assigned))
            for i in others:
                m = values[i]
                subs = m.subscribed_topic_ids
                if subs is not subscribed and subs != subscribed:
                    return None
                assigned[i] = m.assigned_partitions
            return subscribed, assigned, (record, others)
        return None

    # ----------------------------------------------------------------------------------------
    # Homogeneous subscriptions
    # ----------------------------------------------------------------------------------------

    def _assign_homogeneous(self, spec: GroupSpec, subscribed: frozenset[UUID],
                            values: list[MemberSubscription],
                            assigned: list[Assignment] | None = None,
                            known: tuple[_Record, list[int]] | None = None) -> GroupAssignment:
        members = spec.members
        topics = _subscribed_topics(spec, subscribed)
        if not topics:
            return dict.fromkeys(members, EMPTY_ASSIGNMENT)
        index = _TopicIndex(topics, spec.topics)
        mids = list(members)
        if assigned is None:
            assigned = list(map(_assigned_of, values))
        num_members = len(mids)
        quota, extras = divmod(sum(t.num_partitions for t in topics.values()), num_members)

        # Step 1: counts, cleaned mappings (kept[i] None = the input mapping as is) and the
        # partitions nobody keeps.
        kept: list[dict[_Topic, frozenset[int]] | None] = [None] * num_members
        recalled = self._recall(mids, assigned, members, subscribed, topics, index, known)
        if recalled is None and spec.target_index is not None:
            recalled = _index_read(spec.target_index, mids, assigned, members, topics, index)
        base: Mapping[str, Assignment] | None = None
        leavers: list[str] = []
        uncertified: list[int] = []
        hint: list[int] | None = None
        if recalled is not None:
            counts, free, base, leavers, uncertified, hint, hint_quota = recalled
            if hint_quota != quota:
                hint = None
            changed: set[int] = set()  # members with nothing stay as they are unless they receive
        else:
            counts, free = _read_all(mids, assigned, topics, index, kept)
            changed = set(compress(range(num_members), map(is_not, kept, repeat(None))))

        # Steps 2 and 3: quotas; members above theirs give partitions up.
        if hint is None:
            off_quota = list(compress(range(num_members), map(ne, repeat(quota), counts)))
        else:  # the others hold the remembered output's quota, which is this one
            off_quota = [i for i in hint if counts[i] != quota]
        over = sorted((mids[i], i) for i in off_quota if counts[i] > quota)
        for _, i in over:
            if extras > 0:
                extras -= 1
                limit = quota + 1
            else:
                limit = quota
            if counts[i] > limit:
                current = kept[i]
                if current is None:
                    current = _by_topic(assigned[i], index)
                kept[i] = _give_up(current, counts[i] - limit, free,
                                   members[mids[i]].held_since)
                counts[i] = limit
                changed.add(i)

        # Step 4: hand out the free partitions in (name, id, partition) order.
        free_topic: list[_Topic] = []
        free_part: list[int] = []
        for topic in sorted(free, key=lambda t: t.handout_rank):
            ps = free[topic]
            if ps:
                free_part.extend(sorted(ps))
                free_topic.extend(repeat(topic, len(ps)))
        receivers = _handout_order(mids, counts, quota, extras, len(free_part),
                                   [i for i in off_quota if counts[i] < quota])
        received: dict[int, list[int]] = {}
        for slot, i in enumerate(receivers):
            received.setdefault(i, []).append(slot)
        changed.update(received)

        # The result: members without change get their input mapping back.
        if base is None:
            result: GroupAssignment = dict(zip(mids, assigned, strict=True))
        else:  # the remembered output, of which only a few members differ
            result = dict(base)
            for mid in leavers:
                del result[mid]
            for i in uncertified:
                result[mids[i]] = assigned[i]
        out_assigned = assigned.copy()
        for i in sorted(changed):
            current = kept[i]
            if current is None:
                current = _by_topic(assigned[i], index)
            got = received.get(i)
            if got is not None:
                grouped: dict[_Topic, list[int]] = {}
                for slot in got:
                    grouped.setdefault(free_topic[slot], []).append(free_part[slot])
                current = dict(current)
                for topic, new in grouped.items():
                    prev = current.get(topic)
                    current[topic] = _compact(new if prev is None else prev.union(new))
            out_assigned[i] = result[mids[i]] = (
                {t.topic_id: ps for t, ps in current.items()} if current else EMPTY_ASSIGNMENT
            )
        off = [i for i in sorted({*off_quota, *received}) if counts[i] != quota]
        self._remember(subscribed, topics, result, mids, out_assigned, counts, changed, values,
                       off, quota)
        return result

    def _remember(
        self,
        subscribed: frozenset[UUID],
        topics: dict[UUID, _Topic],
        result: GroupAssignment,
        mids: list[str],
        assigned: list[Assignment],
        counts: list[int],
        changed: set[int],
        values: list[MemberSubscription],
        off: list[int],
        quota: int,
    ) -> None:
        if self._memo_members <= 0:
            return
        objs: list[MemberSubscription | None] = []
        objs += values
        for i in changed:  # their objects hold the input mapping, not the output's
            objs[i] = None
        record = _Record(
            subscription=subscribed,
            sizes={tid: t.num_partitions for tid, t in topics.items()},
            mappings=dict(result),
            mids=mids,
            assigned=assigned,
            counts=counts,
            changed=tuple(sorted(mids[i] for i in changed)[:_PRECHECK]),
            objs=objs,
            probe=next(compress(range(len(objs)), map(is_not, objs, repeat(None))), -1),
            off=off,
            quota=quota,
        )
        kept = [record]
        total = len(record.mappings)
        budget = self._memo_members
        for older in self._records[:self._memo_records - 1]:
            total += len(older.mappings)
            if total > budget:
                break
            kept.append(older)
        self._records = tuple(kept)

    def _recall(
        self,
        mids: list[str],
        assigned: list[Assignment],
        members: Mapping[str, MemberSubscription],
        subscribed: frozenset[UUID],
        topics: dict[UUID, _Topic],
        index: _TopicIndex,
        known: tuple[_Record, list[int]] | None = None,
    ) -> _Recalled | None:
        """Counts and free partitions from a remembered output, when the input is (by identity)
        that output minus leavers plus members with nothing; else None (read everything).
        ``known``: a record and the only positions where ``assigned`` may differ from its
        output (``_recall_inputs``), tried first."""
        records = self._records
        if known is not None and known[0] in records:
            record, others = known
            recalled = _recall_from(record, mids, assigned, members, subscribed, topics, index,
                                    others)
            if recalled is not None:
                self._records = tuple(r for r in records if r is not record)
                return recalled
        first = next(compress(range(len(assigned)), assigned), None)
        if first is None:
            return None
        for record in records:
            # Outputs share unchanged mappings, so several records may match one member.
            if record.mappings.get(mids[first]) is not assigned[first]:
                continue
            if not all(_not_contradicting(record, mid, members) for mid in record.changed):
                continue
            recalled = _recall_from(record, mids, assigned, members, subscribed, topics, index)
            if recalled is not None:
                # The output of this call supersedes the record that served: it is dropped, so
                # that the mappings it alone still holds (the previous generation of the
                # group's target) are not kept alive.
                self._records = tuple(r for r in records if r is not record)
                return recalled
        return None


def _not_contradicting(record: _Record, mid: str, members: Mapping[str, MemberSubscription]) -> bool:
    member = members.get(mid)
    if member is None:
        return True
    mapping = member.assigned_partitions
    return not mapping or mapping is record.mappings[mid]


#: What a remembered output gives a call: counts, free partitions, the output itself (member
#: id -> mapping), the members of it that left, and the input positions it does not certify
#: (members with nothing: joined, or their target reset); then, when known, the positions
#: whose count may differ from the output's quota, and that quota.
_Recalled = tuple[list[int], dict[_Topic, set[int]], Mapping[str, Assignment], list[str], list[int],
                  list[int] | None, int]

#: Up to this many members out of the output's order are checked one by one; more, in bulk.
_FEW = 64


def _recall_from(
    record: _Record,
    mids: list[str],
    assigned: list[Assignment],
    members: Mapping[str, MemberSubscription],
    subscribed: frozenset[UUID],
    topics: dict[UUID, _Topic],
    index: _TopicIndex,
    others: list[int] | None = None,
) -> _Recalled | None:
    if record.subscription is not subscribed and record.subscription != subscribed:
        return None
    if record.sizes.keys() != topics.keys():
        return None
    mappings = record.mappings
    uncertified: list[int] = []
    hint: list[int] | None = None
    if others is not None and mids[:len(record.mids)] == record.mids[:len(mids)]:
        # ``assigned`` is the output's, position by position, but at ``others`` (ascending).
        counts = record.counts[:len(mids)]
        counts += repeat(0, len(mids) - len(counts))
        out = record.assigned
        for i in others:
            a = assigned[i]
            if i < len(out) and a is out[i]:
                continue
            if mappings.get(mids[i]) is a:
                counts[i] = sum(map(len, a.values()))
            elif a:
                return None  # a mapping this output did not give: read everything
            else:
                counts[i] = 0
                uncertified.append(i)
        k = others[0] if others else len(mids)
        hint = sorted({*(i for i in record.off if i < len(mids)), *others})
    else:
        # Members listed in the same order as in the output and handed its mappings are
        # certified by position (pointer comparisons only); the others by member id.
        same = list(map(is_, assigned, record.assigned))
        k = same.index(False) if False in same else len(same)
        if mids[:k] != record.mids[:k]:
            k = 0
        counts = record.counts[:k]
    if hint is not None:
        pass
    elif len(mids) - k <= _FEW:
        for i in range(k, len(mids)):
            a = assigned[i]
            if mappings.get(mids[i]) is a:
                counts.append(sum(map(len, a.values())))
            elif a:
                return None  # a mapping this output did not give: read everything
            else:
                counts.append(0)
                uncertified.append(i)
    else:
        tail_mids = mids[k:]
        tail_assigned = assigned[k:]
        certified = list(map(is_, map(mappings.get, tail_mids), tail_assigned))
        counts += map(record.count_of().get, tail_mids, repeat(0))
        for j in compress(range(len(tail_mids)), map(eq, repeat(False), certified)):
            if tail_assigned[j]:
                return None
            counts[k + j] = 0
            uncertified.append(k + j)
    free: dict[_Topic, set[int]] = {}
    for tid, old_size in record.sizes.items():
        topic = topics[tid]
        if topic.num_partitions < old_size:
            return None
        if topic.num_partitions > old_size:
            free[topic] = set(range(old_size, topic.num_partitions))
    leavers: list[str] = []
    if len(mids) - len(uncertified) != len(mappings):
        # Members that left (or whose target was reset): their partitions are free. Those
        # certified by position are neither.
        for mid in record.mids[k:]:
            mapping = mappings[mid]
            member = members.get(mid)
            if member is None:
                leavers.append(mid)
            if mapping and (member is None or member.assigned_partitions is not mapping):
                for key, ps in mapping.items():
                    held = index.get(key)
                    if held is None:  # pragma: no cover - records hold valid keys only
                        return None
                    free.setdefault(held, set()).update(ps)
    return counts, free, mappings, leavers, uncertified, hint, record.quota


def _index_read(
    ix: TargetIndex,
    mids: list[str],
    assigned: list[Assignment],
    members: Mapping[str, MemberSubscription],
    topics: dict[UUID, _Topic],
    index: _TopicIndex,
) -> _Recalled | None:
    """Counts and free partitions from the group's inverted target (``GroupSpec.target_index``)
    when every member's input is (by identity) the index's mapping of it, or is empty; else
    None (read everything).

    The result is what :func:`_read_all` would find: the index is the exact inversion of its
    mappings (``consistent``: no partition claimed twice, no empty sets), every topic it holds
    is subscribed and within its partition count, so every certified mapping is clean and its
    count is the index's. The partitions of the index's members that are not certified (they
    left, or their input is empty) are free, as are those nobody holds."""
    if not ix.consistent():
        return None
    owned = ix.owned
    for tid, key in ix.by_topic_id().items():
        topic = topics.get(tid)
        if topic is None or len(ix.owners[key]) > topic.num_partitions:
            return None
    mappings = ix.mappings
    same = list(map(is_, assigned, map(mappings.get, mids)))
    counts = list(map(ix.counts.get, mids, repeat(0)))
    uncertified: list[int] = []
    released: list[str] = []
    indexed = len(mids)  # members of the spec that the index holds a mapping of
    if False in same:
        for i in compress(range(len(mids)), map(not_, same)):
            if assigned[i]:
                return None  # a mapping the index does not hold: read everything
            counts[i] = 0
            uncertified.append(i)
            previous = mappings.get(mids[i])
            if previous is None:
                indexed -= 1
            elif previous:
                released.append(mids[i])
    leavers: list[str] = []
    if len(mappings) != indexed:
        leavers = [mid for mid in mappings if mid not in members]
        released += leavers
    free: dict[_Topic, set[int]] = {}
    for mid in released:
        for tid_key, ps in mappings[mid].items():
            held = index.get(tid_key)
            if held is None:  # pragma: no cover - checked above: every indexed topic is known
                return None
            free.setdefault(held, set()).update(ps)
    for tid, topic in topics.items():
        n = topic.num_partitions
        key = tid.int
        if owned.get(key, 0) == n:
            continue
        row = ix.owners.get(key)
        nobody = free.setdefault(topic, set())
        if row is None:  # the partition ids of the shared ``all_partitions``, not new ints
            nobody.update(topic.all_partitions)
            continue
        nobody.update(compress(range(len(row)), map(is_, row, repeat(None))))
        nobody.update(range(len(row), n))
    return counts, free, mappings, leavers, uncertified, None, 0


def _read_all(
    mids: list[str],
    assigned: list[Assignment],
    topics: dict[UUID, _Topic],
    index: _TopicIndex,
    kept: list[dict[_Topic, frozenset[int]] | None],
) -> tuple[list[int], dict[_Topic, set[int]]]:
    """Read every member's previous partitions: counts, cleaned mappings (into ``kept``) and the
    free partitions of each topic."""
    counts = [0] * len(assigned)
    dirty: list[int] = []
    owned_by_oid = index.owned_sets()
    get = owned_by_oid.get
    for i, a in enumerate(assigned):
        if not a:
            continue
        count = 0
        clean = True
        for key, ps in a.items():
            owned = get(id(key))
            if owned is None:
                topic = index.get(key)
                if topic is None:
                    clean = False
                    continue
                owned = owned_by_oid[id(key)] = topic.owned
            if not ps:
                clean = False
                continue
            owned |= ps
            count += len(ps)
        counts[i] = count
        if not clean:
            dirty.append(i)
    if any(t.owned and (min(t.owned) < 0 or max(t.owned) >= t.num_partitions)
           for t in topics.values()):
        # Partition ids out of range somewhere: check every mapping entry by entry.
        dirty.clear()
        for t in topics.values():
            t.owned = set()
        for i, a in enumerate(assigned):
            if not a:
                continue
            counts[i], cleaned = _clean(a, index)
            if cleaned is None:
                cleaned = _by_topic(a, index)
            else:
                dirty.append(i)
            for topic, ps in cleaned.items():
                topic.owned |= ps
    for i in dirty:
        kept[i] = _clean(assigned[i], index)[1] or {}
    if sum(len(t.owned) for t in topics.values()) != sum(counts):
        _drop_duplicates(mids, assigned, index, counts, kept)
    free: dict[_Topic, set[int]] = {}
    for topic in topics.values():
        if len(topic.owned) != topic.num_partitions:
            free[topic] = set(topic.all_partitions)
            free[topic] -= topic.owned
        topic.owned = set()
    return counts, free


def _clean(
    assigned: Assignment, index: _TopicIndex
) -> tuple[int, dict[_Topic, frozenset[int]] | None]:
    """Count a member's valid previous partitions.

    Returns ``(count, None)`` when the mapping is entirely valid (it can be reused as is), else
    ``(count, cleaned)`` with only the valid, non-empty entries.
    """
    count = 0
    for key, ps in assigned.items():
        topic = index.get(key)
        if topic is None or not ps or min(ps) < 0 or max(ps) >= topic.num_partitions:
            break
        count += len(ps)
    else:
        return count, None
    cleaned: dict[_Topic, frozenset[int]] = {}
    count = 0
    for key, ps in assigned.items():
        topic = index.get(key)
        if topic is None or not ps:
            continue
        n = topic.num_partitions
        valid = frozenset(p for p in ps if 0 <= p < n)
        if valid:
            cleaned[topic] = valid
            count += len(valid)
    return count, cleaned


def _by_topic(assigned: Assignment, index: _TopicIndex) -> dict[_Topic, frozenset[int]]:
    """A mapping known to be valid, keyed by :class:`_Topic`."""
    out: dict[_Topic, frozenset[int]] = {}
    for key, ps in assigned.items():
        topic = index.get(key)
        assert topic is not None
        out[topic] = ps
    return out


def _give_up(
    current: dict[_Topic, frozenset[int]], excess: int, free: dict[_Topic, set[int]],
    held_since: Callable[[UUID, int], int | None] | None = None,
) -> dict[_Topic, frozenset[int]]:
    """Drop ``excess`` partitions (topics in id order; within a topic the most recently added,
    then the highest ids, first) into ``free``."""
    remaining: dict[_Topic, frozenset[int]] = {}
    for topic in sorted(current, key=lambda t: t.id_rank):
        ps = current[topic]
        if excess > 0:
            if held_since is None:
                ordered = sorted(ps)
            else:
                ordered = _by_recency(ps, topic.topic_id, held_since)
            give = min(excess, len(ordered))
            excess -= give
            cut = len(ordered) - give
            free.setdefault(topic, set()).update(ordered[cut:])
            ps = _compact(ordered[:cut])
        if ps:
            remaining[topic] = ps
    return remaining


def _by_recency(ps: frozenset[int], tid: UUID,
                held_since: Callable[[UUID, int], int | None]) -> list[int]:
    """``ps`` in (recency, partition id) order. A ``held_since`` that also answers for a whole
    topic (a ``topic(topic_id)`` method: the epoch of every partition held, the coordinator's
    KIP-1251 assignment epochs) is asked once: the ids sorted, then a stable sort by recency,
    is the same order as the pair key, without a call per partition."""
    whole = getattr(held_since, "topic", None)
    if whole is None:
        return sorted(ps, key=lambda p: (_recency(held_since(tid, p)), p))
    since: dict[int, int] = whole(tid)
    ordered = sorted(ps)
    if since:
        recency: dict[int, float] = dict.fromkeys(ordered, float("inf"))  # not held: newest
        recency.update(since)
        ordered.sort(key=recency.__getitem__)
    return ordered


def _recency(since: int | None) -> float:
    """A partition's place in "most recently added" order (not held yet: the most recent)."""
    return float("inf") if since is None else since


def _drop_duplicates(
    mids: list[str],
    assigned: list[Assignment],
    index: _TopicIndex,
    counts: list[int],
    kept: list[dict[_Topic, frozenset[int]] | None],
) -> None:
    """A partition claimed by several members stays with the smallest member id (invalid input)."""
    log.warning("uniform assignor: the previous assignment holds a partition twice; resolving")
    taken: dict[_Topic, set[int]] = {}
    for _, i in sorted((mid, i) for i, mid in enumerate(mids)):
        current = kept[i]
        if current is None:
            if not assigned[i]:
                continue
            current = _by_topic(assigned[i], index)
        cleaned: dict[_Topic, frozenset[int]] = {}
        changed = kept[i] is not None
        for topic, ps in current.items():
            seen = taken.setdefault(topic, set())
            mine = ps - seen
            seen |= mine
            if len(mine) != len(ps):
                changed = True
            if mine:
                cleaned[topic] = frozenset(mine)
        if changed:
            kept[i] = cleaned
            counts[i] = sum(len(ps) for ps in cleaned.values())


def _handout_order(
    mids: list[str], counts: list[int], quota: int, extras: int, num_free: int,
    needy: list[int],
) -> list[int]:
    """Receivers (member positions) of the free partitions, one per free partition, in order.

    Equivalent to giving each free partition to the member with the fewest partitions at that
    moment, ties broken by member id; ``counts`` is updated in place. While some member is below
    ``quota`` the fewest-partitions member is below ``quota``, so members fill up level by level
    (every member at level L, in member-id order, then level L + 1, ...); once all members are
    at ``quota`` the remaining ``extras`` go one each to members at ``quota`` in member-id order.
    """
    order: list[int] = []
    if num_free == 0:
        return order
    deficit = sorted((counts[i], mids[i], i) for i in needy)
    active: list[tuple[str, int]] = []
    j = 0
    level = deficit[0][0] if deficit else quota
    while level < quota:
        joined: list[tuple[str, int]] = []
        while j < len(deficit) and deficit[j][0] == level:
            joined.append((deficit[j][1], deficit[j][2]))
            j += 1
        if joined:
            active = joined if not active else sorted(active + joined)
        order.extend(i for _, i in active)
        level += 1
    for _, _, i in deficit:
        counts[i] = quota
    if extras > 0 and len(order) < num_free:
        at_quota = ((mids[i], i)
                    for i in compress(range(len(mids)), map(eq, repeat(quota), counts)))
        for _, i in heapq.nsmallest(min(extras, num_free - len(order)), at_quota):
            order.append(i)
            counts[i] = quota + 1
    if len(order) != num_free:  # pragma: no cover - arithmetic guarantees equality
        raise AssertionError(f"uniform assignor: {num_free} free partitions, {len(order)} slots")
    return order


# --------------------------------------------------------------------------------------------
# Heterogeneous subscriptions
# --------------------------------------------------------------------------------------------


def _assign_heterogeneous(spec: GroupSpec) -> GroupAssignment:
    members = spec.members
    mids = sorted(members)
    all_subscribed: set[UUID] = set()
    for m in members.values():
        all_subscribed |= m.subscribed_topic_ids
    topics = _subscribed_topics(spec, all_subscribed)
    index = _TopicIndex(topics, spec.topics)
    ordered_topics = sorted(topics.values(), key=lambda t: t.id_rank)
    tpos = {t.topic_id: k for k, t in enumerate(ordered_topics)}

    num_members = len(mids)
    # subscribers[k]: member positions (member-id order) subscribed to topic k.
    subscribers: list[list[int]] = [[] for _ in ordered_topics]
    member_topics: list[set[int]] = []
    for i, mid in enumerate(mids):
        mine = {tpos[t] for t in members[mid].subscribed_topic_ids if t in tpos}
        member_topics.append(mine)
        for k in mine:
            subscribers[k].append(i)

    # owner[k][p] = member position or -1; held[i][k] = partitions of topic k that i holds.
    owner: list[list[int]] = [[-1] * t.num_partitions for t in ordered_topics]
    held: list[dict[int, set[int]]] = [{} for _ in range(num_members)]
    load = [0] * num_members
    for i, mid in enumerate(mids):
        for key, ps in members[mid].assigned_partitions.items():
            topic = index.get(key)
            if topic is None:
                continue
            k = tpos[topic.topic_id]
            if k not in member_topics[i]:
                continue
            row = owner[k]
            for p in sorted(ps):
                if 0 <= p < len(row) and row[p] < 0:
                    row[p] = i
                    held[i].setdefault(k, set()).add(p)
                    load[i] += 1

    # Unassigned partitions: topics with fewer subscribers first (they are the constrained
    # ones), each to its least-loaded subscriber (ties: member id).
    for k in sorted(range(len(ordered_topics)), key=lambda k: (len(subscribers[k]), k)):
        subs = subscribers[k]
        if not subs:
            continue
        row = owner[k]
        heap = [(load[i], i) for i in subs]
        heapq.heapify(heap)
        for p in range(len(row)):
            if row[p] >= 0:
                continue
            while True:
                c, i = heap[0]
                if c == load[i]:
                    break
                heapq.heapreplace(heap, (load[i], i))
            row[p] = i
            held[i].setdefault(k, set()).add(p)
            load[i] += 1
            heapq.heapreplace(heap, (load[i], i))

    _balance(load, held, owner, subscribers)

    positions = {mid: i for i, mid in enumerate(mids)}
    result: GroupAssignment = {}
    for mid, m in members.items():
        i = positions[mid]
        out = {
            ordered_topics[k].topic_id: _compact(ps) for k, ps in sorted(held[i].items()) if ps
        }
        prev = m.assigned_partitions
        result[mid] = prev if prev == out else (out or EMPTY_ASSIGNMENT)
    return result


def _balance(
    load: list[int],
    held: list[dict[int, set[int]]],
    owner: list[list[int]],
    subscribers: list[list[int]],
) -> None:
    """Move partitions along shortest cost-reducing paths until none is left.

    A cost-reducing path goes from a member with load L, through members each giving one
    partition of a topic the next one subscribes to, to a member with load <= L - 2. Sources are
    tried from the highest load down; members and topics are explored in ascending position, so
    the result is deterministic.
    """
    num_members = len(load)
    moves = 0
    while True:
        path = _find_path(load, held, subscribers, num_members)
        if path is None:
            break
        for giver, k, taker in path:
            ps = held[giver][k]
            p = max(ps)
            ps.discard(p)
            if not ps:
                del held[giver][k]
            held[taker].setdefault(k, set()).add(p)
            owner[k][p] = taker
            moves += 1
        load[path[0][0]] -= 1
        load[path[-1][2]] += 1
    if moves:
        log.debug("uniform assignor: balancing moved %d partitions", moves)


def _find_path(
    load: list[int],
    held: list[dict[int, set[int]]],
    subscribers: list[list[int]],
    num_members: int,
) -> list[tuple[int, int, int]] | None:
    if num_members < 2:
        return None
    lowest = min(load)
    for level in sorted(set(load), reverse=True):
        if level - 2 < lowest:
            return None
        sources = [i for i in range(num_members) if load[i] == level]
        parent: dict[int, tuple[int, int]] = {}
        seen_members = set(sources)
        seen_topics: set[int] = set()
        queue = deque(sources)
        while queue:
            u = queue.popleft()
            for k in sorted(held[u]):
                if k in seen_topics:
                    continue
                seen_topics.add(k)
                for v in subscribers[k]:
                    if v in seen_members:
                        continue
                    seen_members.add(v)
                    parent[v] = (u, k)
                    if load[v] <= level - 2:
                        path: list[tuple[int, int, int]] = []
                        node = v
                        while node in parent:
                            prev, topic = parent[node]
                            path.append((prev, topic, node))
                            node = prev
                        path.reverse()
                        return path
                    queue.append(v)
    return None
