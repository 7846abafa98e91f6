"""The OffsetCommit requests of a consumer group member, KIP-848 or classic.

:class:`OffsetCommits` is mixed into :class:`groupcoord.client.consumer.ConsumerMember` (the
request carries the member epoch) and :class:`groupcoord.client.classic_consumer.ClassicConsumerMember`
(the generation): OffsetCommit v9 of positions of *owned* partitions only, by topic id and
name, topics in the order of their id's bytes and partitions ascending (the canonical order of
``to_topic_partitions``), with the member id, the epoch or generation and the instance id
(KIP-848 "OffsetCommit API": the coordinator fences commits by them). Two builders:
:meth:`OffsetCommits.commit_request` (given offsets) and
:meth:`OffsetCommits.positions_commit_request` (a position function, or one position for all:
the auto-commit of every owned partition, as the Java consumer's ``allConsumed()``, or the
commit before a revocation).
The per-topic grouping of the owned set is kept between auto-commits, so a periodic commit
costs one step per partition.

Not here: when to commit (the driver's: ``auto.commit.interval.ms``, before a revocation),
OffsetFetch, retries of a failed commit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from uuid import UUID

from groupcoord.coordinator.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
)

#: A partition of a topic, by topic id.
TopicIdPartition = tuple[UUID, int]
Partitions = frozenset[TopicIdPartition]
#: Partitions per topic in the canonical order (topic id bytes, then partition).
TopicGroups = tuple[tuple[UUID, tuple[int, ...]], ...]

EMPTY: Partitions = frozenset()


def group_by_topic(parts: Iterable[TopicIdPartition]) -> TopicGroups:
    """Partitions per topic, sorted by topic id bytes then partition (canonical order)."""
    by_topic: dict[UUID, list[int]] = {}
    for t, p in parts:
        ps = by_topic.get(t)
        if ps is None:
            by_topic[t] = [p]
        else:
            ps.append(p)
    return tuple((t, tuple(sorted(ps)))
                 for t, ps in sorted(by_topic.items(), key=lambda kv: kv[0].bytes))


class OffsetCommits(ABC):
    """The commit builders of a member (see the module doc). The member provides ``group_id``,
    ``member_id``, ``instance_id``, ``owned``, :meth:`_may_commit` and :meth:`_commit_epoch`."""

    group_id: str
    member_id: str
    instance_id: str | None
    owned: Partitions
    # The owned set grouped per topic (auto-commits), for the ``owned`` it was made of.
    _owned_groups: TopicGroups = ()
    _owned_groups_of: Partitions = EMPTY

    @abstractmethod
    def _may_commit(self) -> bool:
        """Whether the member is in a group it can commit in (else the builders give None)."""
        raise NotImplementedError

    @abstractmethod
    def _commit_epoch(self) -> int:
        """The member epoch (KIP-848) or generation (classic) a commit carries."""
        raise NotImplementedError

    def _commit_topic_names(self, topic_names: Mapping[UUID, str] | None) -> Mapping[UUID, str]:
        """The topic names the request carries besides the ids (the driver's, by default)."""
        return topic_names or {}

    def commit_request(self, offsets: Mapping[TopicIdPartition, int],
                       topic_names: Mapping[UUID, str] | None = None,
                       metadata: str = "") -> OffsetCommitRequest | None:
        """An OffsetCommit for the given positions of owned partitions, carrying the member
        id and epoch (None when nothing owned is given or the member is not in a group)."""
        if not self._may_commit():
            return None
        owned = self.owned
        groups = group_by_topic(tp for tp in offsets if tp in owned)
        return self._offset_commit(groups, lambda t, p: offsets[(t, p)], topic_names, metadata)

    def positions_commit_request(self, position: Callable[[UUID, int], int] | int,
                                 partitions: Partitions | None = None,
                                 topic_names: Mapping[UUID, str] | None = None,
                                 metadata: str = "") -> OffsetCommitRequest | None:
        """An OffsetCommit of ``position(topic_id, partition)`` for every owned partition, as
        the Java consumer's auto-commit sends ``allConsumed()`` (changed or not), or for the
        owned ones among ``partitions`` (the commit before a revocation). The same request as
        :meth:`commit_request` with those offsets. An int ``position`` is every partition's
        (the simulator commits its clock): the same request as ``lambda t, p: position``,
        without a call per partition."""
        if not self._may_commit():
            return None
        if partitions is None:
            if self._owned_groups_of is not self.owned:
                self._owned_groups = group_by_topic(self.owned)
                self._owned_groups_of = self.owned
            groups = self._owned_groups
        else:
            groups = group_by_topic(partitions & self.owned)
        return self._offset_commit(groups, position, topic_names, metadata)

    def _offset_commit(self, groups: TopicGroups, position: Callable[[UUID, int], int] | int,
                       topic_names: Mapping[UUID, str] | None,
                       metadata: str) -> OffsetCommitRequest | None:
        if not groups:
            return None
        names = self._commit_topic_names(topic_names)
        if isinstance(position, int):
            topics = tuple([
                OffsetCommitTopic(names.get(t, ""), tuple([OffsetCommitPartition(p, position, -1,
                                                                                 metadata)
                                                           for p in ps]), topic_id=t)
                for t, ps in groups])
        else:
            topics = tuple([
                OffsetCommitTopic(names.get(t, ""), tuple([OffsetCommitPartition(p, position(t, p),
                                                                                 -1, metadata)
                                                           for p in ps]), topic_id=t)
                for t, ps in groups])
        return OffsetCommitRequest(self.group_id, topics,
                                   generation_id_or_member_epoch=self._commit_epoch(),
                                   member_id=self.member_id, group_instance_id=self.instance_id)

    @staticmethod
    def commit_errors(resp: OffsetCommitResponse) -> dict[TopicIdPartition | str, int]:
        """The non-zero error codes of a commit response, per (topic id or name, partition)."""
        out: dict[TopicIdPartition | str, int] = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    if t.topic_id is not None:
                        out[(t.topic_id, p.partition_index)] = p.error_code
                    else:
                        out[f"{t.name}-{p.partition_index}"] = p.error_code
        return out


__all__ = ["EMPTY", "OffsetCommits", "Partitions", "TopicGroups", "TopicIdPartition",
           "group_by_topic"]
