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
from functools import partial
from uuid import UUID

from groupcoord.coordinator.assignors.base import (
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
)
from groupcoord.coordinator.modern.consumer.assignment_epochs import held_since
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.subscription import subscribed_topic_ids
from groupcoord.coordinator.records import (
    Assignment,
    Record,
    target_assignment_metadata_record,
    target_member_record,
    target_member_tombstone,
)
from groupcoord.coordinator.topics import TopicMetadata


def preferred_server_assignor(members: Iterable[ConsumerGroupMember], default: str) -> str:
    counts = Counter(m.server_assignor for m in members if m.server_assignor)
    if not counts:
        return default
    best = max(counts.values())
    return min(name for name, c in counts.items() if c == best)


def group_spec(
    members: Mapping[str, ConsumerGroupMember],
    targets: Mapping[str, Assignment],
    metadata: Mapping[str, TopicMetadata],
    resolved: Mapping[str, frozenset[str]] | None = None,
) -> GroupSpec:
    """The assignor's input; subscriptions resolved to ids once per distinct subscription (a
    regex to the topics of the group's recorded resolution ``resolved``, ``subscription.py``)."""
    cache: dict[tuple[tuple[str, ...], str | None], frozenset[UUID]] = {}
    specs: dict[str, MemberSubscription] = {}
    for mid in sorted(members):
        m = members[mid]
        key = (m.subscribed_topic_names, m.subscribed_topic_regex)
        ids = cache.get(key)
        if ids is None:
            ids = subscribed_topic_ids(m.subscribed_topic_names, m.subscribed_topic_regex, metadata,
                                       resolved)
            cache[key] = ids
        specs[mid] = MemberSubscription(mid, ids, targets.get(mid, {}), m.instance_id, m.rack_id,
                                        partial(held_since, m))
    topics = {t.topic_id: t for t in metadata.values()}
    return GroupSpec(specs, topics)


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
    spec = group_spec(members, previous_targets, group.subscription_metadata,
                      group.resolved_regexes)
    result = assignor.assign(spec)
    records: list[Record] = []
    gid = group.group_id
    for mid in sorted(result):
        new = result[mid]
        old = group.target_assignment.get(mid)
        # Assignors hand unchanged members their input mapping back: identity first.
        if old is None or (old is not new and _normalised(old) != _normalised(new)):
            records.append(target_member_record(gid, mid, new))
    for mid in sorted(group.target_assignment):
        if mid not in result:
            records.append(target_member_tombstone(gid, mid))
    records.append(target_assignment_metadata_record(gid, epoch, timestamp_ms))
    return result, records


def _normalised(a: Assignment) -> dict[UUID, frozenset[int]]:
    return {t: ps for t, ps in a.items() if ps}
