"""The inverted target assignment: partition -> member, kept record by record.

KIP-848 "Target Assignment": the coordinator persists the target assignment member by member
(one target-member record each) and hands the server-side assignor every member's target
partitions for stickiness. Reading 100,000 (topic, partitions) entries back costs tens of
milliseconds in Python, which is what the first computation after a load (or any input the
assignor does not recognise as its own output) would pay. Upstream Kafka keeps the inverse of
the target assignment in the group (``ModernGroup.invertedTargetAssignment``, updated with every
target-member record) and gives it to the assignor (``GroupSpecImpl.isPartitionAssigned``), so
the homogeneous uniform builder finds the unassigned partitions without reading every member.

:class:`TargetIndex` is that inverse, updated by ``put``/``remove`` as replay applies
target-member records (``ConsumerGroup.set_target``). Per topic a list indexed by partition id
holds the member id (``None``: nobody), which is smaller than a dict per partition. It also keeps
each member's mapping object and partition count, so an assignor can check cheaply that a
member's input *is* the indexed mapping (by identity) and take its count without reading it.

Target records are written member by member, so a record may give ``p`` to ``B`` before
``A``'s record drops it: the last writer takes the entry (``p -> B``, as upstream) and the
claim it replaced is kept aside (``shadowed``) until ``A``'s record drops it; a member that
drops the entry it holds hands it back to a claim kept aside, if any. Every entry ``p -> m`` is
therefore in ``m``'s mapping, and once no partition is claimed twice the index is exactly the
inversion of the mappings, whatever the order of the records (a reload replays them again).
:meth:`consistent` checks that in O(1): nothing kept aside (the entries equal the sum of the
counts), no mapping holding an empty partition set or a partition id the lists do not index.
Assignors use the index only when it is consistent and read every mapping otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from uuid import UUID

from groupcoord.coordinator.assignors.base import Assignment

__all__ = ["MAX_INDEXED_PARTITION", "TargetIndex", "inversion"]

#: Partition ids at or above this are not indexed (the list per topic would be as long as the
#: id); a mapping holding one makes the index inconsistent, so assignors read every mapping.
MAX_INDEXED_PARTITION = 1 << 21


class TargetIndex:
    """Partition -> member of a target assignment (see the module docstring)."""

    __slots__ = ("counts", "entries", "mappings", "odd", "owned", "owners", "pairs", "shadowed")

    def __init__(self) -> None:
        #: Member id -> the mapping object last set (read-only by contract).
        self.mappings: dict[str, Assignment] = {}
        #: Member id -> number of partitions in its mapping.
        self.counts: dict[str, int] = {}
        #: Topic id -> member id by partition id (None: no member; no trailing None).
        self.owners: dict[UUID, list[str | None]] = {}
        #: Topic id -> number of partitions with a member (the non-None entries of ``owners``).
        self.owned: dict[UUID, int] = {}
        #: Sum of ``counts``; number of non-None entries over all topics.
        self.pairs = 0
        self.entries = 0
        #: Empty partition sets and partition ids not indexed, over all mappings.
        self.odd = 0
        #: (topic id, partition) -> the other members claiming a partition (empty unless a
        #: partition is claimed twice: for a moment while a new target's records are applied).
        self.shadowed: dict[tuple[UUID, int], list[str]] = {}

    def consistent(self) -> bool:
        """Whether the index is exactly the inversion of ``mappings``."""
        return self.pairs == self.entries and self.odd == 0

    def put(self, member_id: str, mapping: Assignment) -> None:
        """``member_id``'s target is now ``mapping`` (an empty mapping keeps the member)."""
        old = self.mappings.get(member_id)
        if old is mapping:
            return
        if old:
            for topic_id, ps in old.items():
                new_ps = mapping.get(topic_id)
                if new_ps is ps:
                    continue
                self._drop(member_id, topic_id, ps if not new_ps else ps - new_ps, len(ps))
        count = 0
        for topic_id, ps in mapping.items():
            count += len(ps)
            old_ps = old.get(topic_id) if old else None
            if old_ps is ps:
                continue
            self._add(member_id, topic_id, ps if not old_ps else ps - old_ps, len(ps))
        self.mappings[member_id] = mapping
        self.pairs += count - self.counts.get(member_id, 0)
        self.counts[member_id] = count

    def remove(self, member_id: str) -> None:
        """``member_id`` has no target any more."""
        if member_id in self.mappings:
            self.put(member_id, {})
            del self.mappings[member_id]
            del self.counts[member_id]

    def _add(self, member_id: str, topic_id: UUID, ps: AbstractSet[int],
             size: int) -> None:
        if size == 0:
            self.odd += 1
            return
        row = self.owners.get(topic_id)
        if row is None:
            row = self.owners[topic_id] = []
        added = 0
        for p in ps:
            if p < 0 or p >= MAX_INDEXED_PARTITION:
                self.odd += 1
                continue
            if p >= len(row):
                row.extend([None] * (p + 1 - len(row)))
            elif row[p] is not None:
                self.shadowed.setdefault((topic_id, p), []).append(row[p])  # type: ignore[arg-type]
                row[p] = member_id
                continue
            row[p] = member_id
            added += 1
        if added:
            self.owned[topic_id] = self.owned.get(topic_id, 0) + added
            self.entries += added
        elif not row:
            del self.owners[topic_id]

    def _drop(self, member_id: str, topic_id: UUID, ps: AbstractSet[int],
              size: int) -> None:
        if size == 0:
            self.odd -= 1
            return
        row = self.owners.get(topic_id)
        dropped = 0
        for p in ps:
            if p < 0 or p >= MAX_INDEXED_PARTITION:
                self.odd -= 1
            elif row is not None and p < len(row) and row[p] == member_id:
                if self.shadowed:
                    others = self.shadowed.get((topic_id, p))
                    if others:
                        row[p] = others.pop()
                        if not others:
                            del self.shadowed[topic_id, p]
                        continue
                row[p] = None
                dropped += 1
            else:  # a claim kept aside
                others = self.shadowed[topic_id, p]
                others.remove(member_id)
                if not others:
                    del self.shadowed[topic_id, p]
        if dropped and row is not None:
            self.entries -= dropped
            left = self.owned[topic_id] - dropped
            if left:
                self.owned[topic_id] = left
                while row[-1] is None:
                    row.pop()
            else:
                del self.owned[topic_id]
                del self.owners[topic_id]

    def inverse(self) -> dict[UUID, dict[int, str]]:
        """The index as ``topic id -> partition -> member id`` (tests, diagnostics)."""
        return {t: {p: m for p, m in enumerate(row) if m is not None}
                for t, row in self.owners.items()}


def inversion(mappings: Mapping[str, Assignment]) -> dict[UUID, dict[int, str]] | None:
    """The inversion of ``mappings`` (``topic id -> partition -> member id``), or None when a
    partition is claimed twice or a mapping holds something the index does not (tests)."""
    out: dict[UUID, dict[int, str]] = {}
    for mid, a in mappings.items():
        for t, ps in a.items():
            if not ps:
                return None
            row = out.setdefault(t, {})
            for p in ps:
                if p in row or p < 0 or p >= MAX_INDEXED_PARTITION:
                    return None
                row[p] = mid
    return {t: row for t, row in out.items() if row}
