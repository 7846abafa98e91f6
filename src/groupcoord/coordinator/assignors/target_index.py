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

from collections import deque
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from itertools import repeat
from uuid import UUID

#: A member's partitions (topic id -> partition ids), as assignors take and return them
#: (``assignors.base`` imports it from here: the index, which ``GroupSpec`` carries, depends on
#: no other module of the assignors).
Assignment = Mapping[UUID, frozenset[int]]

__all__ = ["MAX_INDEXED_PARTITION", "TargetIndex", "inversion"]

#: Partition ids at or above this are not indexed (the list per topic would be as long as the
#: id); a mapping holding one makes the index inconsistent, so assignors read every mapping.
MAX_INDEXED_PARTITION = 1 << 21

#: Partition sets up to this size are walked in Python; larger ones with C-level maps.
_SMALL = 8


class TargetIndex:
    """Partition -> member of a target assignment (see the module docstring).

    Topics are keyed by ``UUID.int`` (``uuid.UUID`` hashes in Python code; its ``int`` in C):
    ``topic_ids`` maps it back."""

    __slots__ = ("counts", "entries", "mappings", "odd", "owned", "owners", "pairs", "shadowed",
                 "topic_ids")

    def __init__(self) -> None:
        #: Member id -> the mapping object last set (read-only by contract).
        self.mappings: dict[str, Assignment] = {}
        #: Member id -> number of partitions in its mapping.
        self.counts: dict[str, int] = {}
        #: Topic (``UUID.int``) -> member id by partition id (None: no member; no trailing None).
        self.owners: dict[int, list[str | None]] = {}
        #: Topic -> number of partitions with a member (the non-None entries of ``owners``).
        self.owned: dict[int, int] = {}
        #: ``UUID.int`` -> the topic id, for every topic seen.
        self.topic_ids: dict[int, UUID] = {}
        #: Sum of ``counts``; number of non-None entries over all topics.
        self.pairs = 0
        self.entries = 0
        #: Empty partition sets and partition ids not indexed, over all mappings.
        self.odd = 0
        #: (topic, partition) -> the other members claiming a partition (empty unless a
        #: partition is claimed twice: for a moment while a new target's records are applied).
        self.shadowed: dict[tuple[int, int], list[str]] = {}

    def consistent(self) -> bool:
        """Whether the index is exactly the inversion of ``mappings``."""
        return self.pairs == self.entries and self.odd == 0

    def put(self, member_id: str, mapping: Assignment) -> None:
        """``member_id``'s target is now ``mapping`` (an empty mapping keeps the member)."""
        old = self.mappings.get(member_id)
        if old is mapping:
            return
        old_sets: dict[int, AbstractSet[int]] = {}
        if old:
            new_sets = {t.int: ps for t, ps in mapping.items()}
            for t, ps in old.items():
                key = t.int
                old_sets[key] = ps
                new_ps = new_sets.get(key)
                if new_ps is ps:
                    continue
                self._drop(member_id, key, ps if not new_ps else ps - new_ps, len(ps))
        count = 0
        topic_ids = self.topic_ids
        for t, ps in mapping.items():
            count += len(ps)
            key = t.int
            old_ps = old_sets.get(key)
            if old_ps is ps:
                continue
            if key not in topic_ids:
                topic_ids[key] = t
            self._add(member_id, key, ps if not old_ps else ps - old_ps, len(ps))
        self.mappings[member_id] = mapping
        self.pairs += count - self.counts.get(member_id, 0)
        self.counts[member_id] = count

    def remove(self, member_id: str) -> None:
        """``member_id`` has no target any more."""
        if member_id in self.mappings:
            self.put(member_id, {})
            del self.mappings[member_id]
            del self.counts[member_id]

    def _add(self, member_id: str, key: int, ps: AbstractSet[int], size: int) -> None:
        if size == 0:
            self.odd += 1
            return
        if not ps:
            return
        row = self.owners.get(key)
        if row is None:
            row = self.owners[key] = []
        if len(ps) <= _SMALL:
            added = 0
            for p in ps:
                if p < 0 or p >= MAX_INDEXED_PARTITION:
                    self.odd += 1
                    continue
                if p >= len(row):
                    row.extend(repeat(None, p + 1 - len(row)))
                else:
                    other = row[p]
                    if other is not None:
                        self.shadowed.setdefault((key, p), []).append(other)
                        row[p] = member_id
                        continue
                row[p] = member_id
                added += 1
            if added:
                self.owned[key] = self.owned.get(key, 0) + added
                self.entries += added
            elif not row:
                del self.owners[key]
            return
        if min(ps) < 0 or max(ps) >= MAX_INDEXED_PARTITION:
            ps = self._odd_out(ps, 1)
            if not ps:
                if not row:
                    del self.owners[key]
                return
        top = max(ps)
        if top >= len(row):
            row.extend(repeat(None, top + 1 - len(row)))
        # Whole sets at C speed; a partition claimed already is kept aside (rare).
        before = list(map(row.__getitem__, ps))
        added = before.count(None)
        if added != len(before):
            shadowed = self.shadowed
            for p, other in zip(ps, before, strict=True):
                if other is not None:
                    shadowed.setdefault((key, p), []).append(other)
        deque(map(row.__setitem__, ps, repeat(member_id)), 0)
        if added:
            self.owned[key] = self.owned.get(key, 0) + added
            self.entries += added

    def _drop(self, member_id: str, key: int, ps: AbstractSet[int], size: int) -> None:
        if size == 0:
            self.odd -= 1
            return
        if not ps:
            return
        if min(ps) < 0 or max(ps) >= MAX_INDEXED_PARTITION:
            ps = self._odd_out(ps, -1)
            if not ps:
                return
        row = self.owners.get(key)
        if row is None or max(ps) >= len(row):  # pragma: no cover - a mapping's own entries
            return
        held = [row[p] for p in ps] if len(ps) <= _SMALL else list(map(row.__getitem__, ps))
        if not self.shadowed and held.count(member_id) == len(held):
            if len(ps) <= _SMALL:
                for p in ps:
                    row[p] = None
            else:
                deque(map(row.__setitem__, ps, repeat(None)), 0)
            dropped = len(held)
        else:
            dropped = 0
            for p, holder in zip(ps, held, strict=True):
                others = self.shadowed.get((key, p))
                if holder != member_id:  # a claim kept aside
                    if others is not None and member_id in others:
                        others.remove(member_id)
                        if not others:
                            del self.shadowed[key, p]
                elif others:  # the entry goes back to a claim kept aside
                    row[p] = others.pop()
                    if not others:
                        del self.shadowed[key, p]
                else:
                    row[p] = None
                    dropped += 1
        if dropped:
            self.entries -= dropped
            left = self.owned[key] - dropped
            if left:
                self.owned[key] = left
                while row[-1] is None:
                    row.pop()
            else:
                del self.owned[key]
                del self.owners[key]

    def _odd_out(self, ps: AbstractSet[int], sign: int) -> AbstractSet[int]:
        """``ps`` without the partition ids not indexed, counted in ``odd``."""
        kept = {p for p in ps if 0 <= p < MAX_INDEXED_PARTITION}
        self.odd += sign * (len(ps) - len(kept))
        return kept

    def by_topic_id(self) -> dict[UUID, int]:
        """Topic id -> its key in ``owners`` and ``owned``, for the topics held."""
        return {self.topic_ids[key]: key for key in self.owned}

    def inverse(self) -> dict[UUID, dict[int, str]]:
        """The index as ``topic id -> partition -> member id`` (tests, diagnostics)."""
        return {self.topic_ids[t]: {p: m for p, m in enumerate(row) if m is not None}
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
