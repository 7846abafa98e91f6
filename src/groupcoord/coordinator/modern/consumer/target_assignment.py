"""Computing and persisting a new target assignment (KIP-848 "Target Assignment").

When the group epoch is ahead of the assignment epoch, the coordinator runs the group's
server-side assignor over all members (their subscriptions and current target partitions) and
the subscription metadata, then writes only the *difference* with the previous target: one
target-member record per member whose partitions changed, then the target-assignment metadata
record carrying the new assignment epoch (the spec's N+1 records, members first).

Assignor choice (spec "Server Side Mode"): the most common ``ServerAssignor`` among members
(ties: by name), else the first of ``group.consumer.assignors``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import and_, attrgetter, eq, is_, is_not, not_
from uuid import UUID

from groupcoord.coordinator.assignors.base import (
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
)
from groupcoord.coordinator.assignors.target_index import TargetIndex
from groupcoord.coordinator.modern.consumer.assignment_epochs import held_epochs, held_since
from groupcoord.coordinator.modern.consumer.model import EMPTY, ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.subscription import subscribed_topic_ids
from groupcoord.coordinator.records import (
    Assignment,
    Record,
    target_assignment_metadata_record,
    target_member_record,
    target_member_tombstone,
)
from groupcoord.coordinator.topics import TopicMetadata

_server_assignor_of = attrgetter("server_assignor")


def preferred_server_assignor(members: Iterable[ConsumerGroupMember], default: str) -> str:
    counts = Counter(map(_server_assignor_of, members))  # counted in C: one pass per member
    counts.pop(None, None)
    counts.pop("", None)
    if not counts:
        return default
    best = max(counts.values())
    return min(name for name, c in counts.items() if c == best)


@dataclass(slots=True, eq=False)
class AssignorInput:
    """What the last :func:`group_spec` of one group built, for the next one to reuse.

    Soft state (kept on the group, never replayed, not in its digest): a member's
    ``MemberSubscription`` is built again only when its member object or its target mapping is
    not the very object it was built from (members are frozen dataclasses, mappings read-only by
    contract, so the same object means the same input), or when the subscription metadata
    changed. Between two target computations a few members change, and the group lists its
    members in the same order (new ones last), so the input costs a few C-level passes of
    pointer comparisons instead of one Python-level build per member (KIP-848 "Target
    Assignment": upstream's TargetAssignmentBuilder likewise takes the existing members and
    only the updated ones).
    """

    metadata: Mapping[str, TopicMetadata] = field(default_factory=dict)
    #: The group's regex resolutions the input was built with (a change rebuilds every member).
    resolved: dict[str, frozenset[str]] = field(default_factory=dict)
    topics: dict[UUID, TopicMetadata] = field(default_factory=dict)
    #: The last call's member ids, and aligned with them the member objects, target mappings
    #: and ``MemberSubscription`` built.
    mids: list[str] = field(default_factory=list)
    members: list[ConsumerGroupMember] = field(default_factory=list)
    targets: list[Assignment] = field(default_factory=list)
    subscriptions: list[MemberSubscription] = field(default_factory=list)
    #: The last call's ``GroupSpec.members`` (read-only: assignors do not mutate their input).
    specs: dict[str, MemberSubscription] = field(default_factory=dict)
    #: The members of the latest call, where the ``held_since`` of its subscriptions looks
    #: (a spec is used right after it is built).
    latest: Mapping[str, ConsumerGroupMember] = field(default_factory=dict)
    #: (topic names, regex) -> topic ids, against ``metadata``.
    topic_ids: dict[tuple[tuple[str, ...], str | None], frozenset[UUID]] = field(default_factory=dict)


def group_spec(
    members: Mapping[str, ConsumerGroupMember],
    targets: Mapping[str, Assignment],
    metadata: Mapping[str, TopicMetadata],
    resolved: Mapping[str, frozenset[str]] | None = None,
    reuse: AssignorInput | None = None,
    target_index: TargetIndex | None = None,
) -> GroupSpec:
    """The assignor's input; subscriptions resolved to ids once per distinct subscription (a
    regex to the topics of the group's recorded resolution ``resolved``, ``subscription.py``).

    ``reuse``: the group's :class:`AssignorInput`, updated in place; members whose object and
    target mapping are those of the previous call keep their ``MemberSubscription``. The result
    is the same as without it. Members are listed in ``members``' order (the assignors' results
    do not depend on it). ``target_index``: the group's inverted target, handed to the
    assignor as it is (it uses it only for members whose target is the index's mapping)."""
    if reuse is None:
        reuse = AssignorInput()
    resolved = resolved or {}
    if (reuse.metadata is not metadata and reuse.metadata != metadata) or (
            reuse.resolved != resolved):
        reuse.metadata = dict(metadata)
        reuse.resolved = dict(resolved)
        reuse.topics = {t.topic_id: t for t in metadata.values()}
        reuse.topic_ids = {}
        reuse.mids, reuse.members, reuse.targets, reuse.subscriptions = [], [], [], []
        reuse.specs = {}
    mids = list(members)
    objs = list(members.values())
    assigned = list(map(targets.get, mids, repeat(EMPTY)))
    reuse.latest = members
    # Position by position against last time (pointer comparisons): the same member id with
    # the same target mapping keeps its MemberSubscription when the member object is the same,
    # or another one with the same subscription, instance and rack (reconciliation replaces
    # member objects all the time; held_since looks the member up when called).
    aligned = mids[:len(reuse.mids)] == reuse.mids  # the ids of last time, in their places
    same = list(map(and_, map(is_, assigned, reuse.targets), map(is_, objs, reuse.members)))
    same_mid = [True] * len(same) if aligned else list(map(eq, mids, reuse.mids))
    if not aligned:
        same = list(map(and_, same, same_mid))
    subscriptions = reuse.subscriptions[:len(mids)]
    subscriptions += repeat(None, len(mids) - len(subscriptions))  # type: ignore[arg-type]
    todo = [*compress(range(len(same)), map(not_, same))] if False in same else []
    todo += range(len(same), len(mids))
    before: dict[str, tuple[ConsumerGroupMember, Assignment, MemberSubscription]] | None = None
    if len(todo) > 8:  # one dict rather than a scan per member
        before = {mid: (m, t, sub) for mid, m, t, sub in zip(
            reuse.mids, reuse.members, reuse.targets, reuse.subscriptions, strict=True)}
    cache = reuse.topic_ids
    for i in todo:
        mid = mids[i]
        m = objs[i]
        a = assigned[i]
        if i < len(same_mid) and same_mid[i]:
            old: tuple[ConsumerGroupMember, Assignment, MemberSubscription] | None = (
                reuse.members[i], reuse.targets[i], reuse.subscriptions[i])
        else:
            old = _find(reuse, mid) if before is None else before.get(mid)
        if old is not None and old[1] is a and _same_subscriber(old[0], m):
            subscriptions[i] = old[2]
            continue
        key = (m.subscribed_topic_names, m.subscribed_topic_regex)
        ids = cache.get(key)
        if ids is None:
            ids = subscribed_topic_ids(m.subscribed_topic_names, m.subscribed_topic_regex, metadata,
                                       resolved)
            cache[key] = ids
        subscriptions[i] = MemberSubscription(mid, ids, a, m.instance_id, m.rack_id,
                                              _HeldSince(reuse, mid))
    if aligned and reuse.specs:
        # The member ids of last time in the same places, then new ones: the last spec, updated.
        specs = dict(reuse.specs)
        for i in todo:
            specs[mids[i]] = subscriptions[i]
    else:
        specs = dict(zip(mids, subscriptions, strict=True))
    reuse.mids, reuse.members, reuse.targets = mids, objs, assigned
    reuse.subscriptions = subscriptions
    reuse.specs = specs
    return GroupSpec(specs, reuse.topics, target_index)


def advance(reuse: AssignorInput, result: Mapping[str, Assignment],
            changed: list[str] | None = None) -> None:
    """After the assignor returned ``result`` for the last :func:`group_spec`: remember its
    mappings as the members' targets, so that ``reuse`` holds the target generation the
    records carry (the same objects, once replayed) and not the previous one, which would stay
    alive with it. Members whose mapping changed get a new ``MemberSubscription``; a later
    input that does not hold those mappings (records not applied) rebuilds them, as any
    change does. ``changed``: the members whose mapping may have changed (all: None)."""
    targets = reuse.targets
    if changed is None:
        positions = [*compress(range(len(targets)),
                               map(is_not, map(result.get, reuse.mids, targets), targets))]
    elif len(changed) <= 4:  # a scan in C each (of strings: slower than one dict)
        positions = [reuse.mids.index(mid) for mid in changed if mid in reuse.specs]
    else:
        where = dict(zip(reuse.mids, range(len(reuse.mids)), strict=True))
        positions = [where[mid] for mid in changed if mid in where]
    if not positions:
        return
    specs = reuse.specs
    subscriptions = reuse.subscriptions
    for i in positions:
        mid = reuse.mids[i]
        new = result.get(mid)
        if new is None or new is targets[i]:
            continue
        targets[i] = new
        sub = subscriptions[i]
        subscriptions[i] = specs[mid] = MemberSubscription(
            mid, sub.subscribed_topic_ids, new, sub.instance_id, sub.rack_id, sub.held_since)


def _same_subscriber(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    """Whether two member objects give the same ``MemberSubscription`` (but ``held_since``)."""
    return old is new or (old.subscribed_topic_names == new.subscribed_topic_names
                          and old.subscribed_topic_regex == new.subscribed_topic_regex
                          and old.instance_id == new.instance_id and old.rack_id == new.rack_id)


class _HeldSince:
    """``held_since`` of the member as given to the latest :func:`group_spec` call: one kept
    per member in its ``MemberSubscription``, so a two-slot object (about 56 bytes) rather
    than a ``functools.partial`` (its object, argument tuple and keyword dict: about 200)."""

    __slots__ = ("member_id", "reuse")

    def __init__(self, reuse: AssignorInput, member_id: str) -> None:
        self.reuse = reuse
        self.member_id = member_id

    def __call__(self, topic_id: UUID, partition: int) -> int | None:
        return held_since(self.reuse.latest[self.member_id], topic_id, partition)

    def topic(self, topic_id: UUID) -> dict[int, int]:
        """The same for every partition of one topic the member holds (``held_epochs``): the
        uniform assignor's recency order asks a topic at a time."""
        return held_epochs(self.reuse.latest[self.member_id], topic_id)


def _find(reuse: AssignorInput, mid: str
          ) -> tuple[ConsumerGroupMember, Assignment, MemberSubscription] | None:
    """The previous call's member ``mid``, or None."""
    try:
        j = reuse.mids.index(mid)
    except ValueError:
        return None
    return reuse.members[j], reuse.targets[j], reuse.subscriptions[j]


def target_assignment_records(
    group: ConsumerGroup,
    members: Mapping[str, ConsumerGroupMember],
    previous_targets: Mapping[str, Assignment],
    epoch: int,
    assignor: PartitionAssignor,
    timestamp_ms: int = 0,
) -> tuple[dict[str, Assignment], list[Record]]:
    """New target assignment of ``members`` and the delta records that persist it
    (``timestamp_ms``: when it was computed, for assignment batching; 0 not recorded)."""
    reuse = group.assignor_input
    if not isinstance(reuse, AssignorInput):
        reuse = group.assignor_input = AssignorInput()
    spec = group_spec(members, previous_targets, group.subscription_metadata,
                      group.resolved_regexes, reuse, group.target_index)
    result = assignor.assign(spec)
    records: list[Record] = []
    gid = group.group_id
    old_targets = group.target_assignment
    mids = list(result)
    olds = list(map(old_targets.get, mids))
    # Assignors hand unchanged members their input mapping back: identity first, in C.
    maybe = [*compress(mids, map(is_not, olds, result.values()))]
    # The input's targets are the group's (the callers pass a copy of them): the members
    # whose mapping changed are those. Were they not, a member left out keeps its old input
    # in ``reuse``, which the next call rebuilds (``reuse`` is checked by identity).
    advance(reuse, result, maybe)
    for mid in sorted(maybe):
        new = result[mid]
        old = old_targets.get(mid)
        if old is None or _normalised(old) != _normalised(new):
            records.append(target_member_record(gid, mid, new))
    if len(old_targets) != len(mids) - olds.count(None):  # targets of members no longer here
        for mid in sorted(old_targets.keys() - result.keys()):
            records.append(target_member_tombstone(gid, mid))
    records.append(target_assignment_metadata_record(gid, epoch, timestamp_ms))
    return result, records


def _normalised(a: Assignment) -> dict[UUID, frozenset[int]]:
    return {t: ps for t, ps in a.items() if ps}
