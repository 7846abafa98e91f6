"""Pending transactional offsets: what a shard holds of the transactions that committed
offsets to its groups (KIP-98 TxnOffsetCommit, KIP-447; Kafka's ``OffsetMetadataManager``
``pendingTransactionalOffsets`` and ``openTransactionsByGroup``).

Rebuilt only by replay (``records.py`` explains the two record types): a pending offset
(group, producer id, topic, partition) and a producer's epochs in a group. The handlers are in
``transactional_offsets.py``.

Which offset wins when a transaction commits (Kafka's ``replayEndTransactionMarker``): the
pending offset, unless a regular OffsetCommit of the same partition was written after it; Kafka
compares the records' log offsets, here a regular commit replayed after the pending offset
marks it ``superseded`` (the same order: compaction keeps the relative order of the records
it keeps, and a pending offset written again is newer than every commit before it).
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.records import (
    TxnOffsetCommitValue,
    TxnOffsetKey,
    TxnProducerKey,
    TxnProducerValue,
)


class PendingOffset:
    """One pending offset, whether a regular commit of its partition came after it, and its
    place in the order of replay (``seq``: only compared, never stored; a rebuilt shard numbers
    differently but in the same order)."""

    __slots__ = ("seq", "superseded", "value")

    def __init__(self, value: TxnOffsetCommitValue, seq: int) -> None:
        self.value = value
        self.superseded = False
        self.seq = seq


class PendingOffsets:
    """The pending transactional offsets and transactional producers of one shard."""

    __slots__ = ("_seq", "pending", "producers")

    def __init__(self) -> None:
        self._seq = 0
        #: group -> producer id -> (topic, partition) -> pending offset.
        self.pending: dict[str, dict[int, dict[tuple[str, int], PendingOffset]]] = {}
        #: group -> producer id -> the producer's epochs as of its last end marker.
        self.producers: dict[str, dict[int, TxnProducerValue]] = {}

    # ------------------------------------------------------------------ replay

    def replay_offset(self, key: TxnOffsetKey, value: TxnOffsetCommitValue | None) -> None:
        by_producer = self.pending.get(key.group_id)
        if value is None:
            if by_producer is None:
                return
            offsets = by_producer.get(key.producer_id)
            if offsets is None:
                return
            offsets.pop((key.topic, key.partition), None)
            if not offsets:
                del by_producer[key.producer_id]
                if not by_producer:
                    del self.pending[key.group_id]
            return
        if by_producer is None:
            by_producer = self.pending[key.group_id] = {}
        self._seq += 1
        by_producer.setdefault(key.producer_id, {})[(key.topic, key.partition)] = \
            PendingOffset(value, self._seq)

    def replay_producer(self, key: TxnProducerKey, value: TxnProducerValue | None) -> None:
        if value is None:
            producers = self.producers.get(key.group_id)
            if producers is not None:
                producers.pop(key.producer_id, None)
                if not producers:
                    del self.producers[key.group_id]
            return
        self.producers.setdefault(key.group_id, {})[key.producer_id] = value

    def committed(self, group_id: str, topic: str, partition: int) -> None:
        """A regular offset commit of the partition was replayed: the group's pending offsets
        of it are older (they no longer win when their transaction commits)."""
        by_producer = self.pending.get(group_id)
        if by_producer is None:
            return
        for offsets in by_producer.values():
            p = offsets.get((topic, partition))
            if p is not None:
                p.superseded = True

    # ------------------------------------------------------------------ queries

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether some open transaction holds an offset of the partition for the group
        (Kafka's ``hasPendingTransactionalOffsets``)."""
        by_producer = self.pending.get(group_id)
        if not by_producer:
            return False
        return any((topic, partition) in offsets for offsets in by_producer.values())

    def newer_than(self, group_id: str, topic: str, partition: int,
                   seq: int) -> list[tuple[int, PendingOffset]]:
        """(producer id, pending offset) of the partition written after ``seq``, in order."""
        out = [(pid, p) for pid, offsets in self.pending.get(group_id, {}).items()
               for p in (offsets.get((topic, partition)),) if p is not None and p.seq > seq]
        out.sort(key=lambda item: item[1].seq)
        return out

    def open_producers(self, group_id: str) -> list[int]:
        """The producers with pending offsets in the group, sorted."""
        return sorted(self.pending.get(group_id, ()))

    def of(self, group_id: str, producer_id: int) -> dict[tuple[str, int], PendingOffset]:
        return self.pending.get(group_id, {}).get(producer_id, {})

    def epoch(self, group_id: str, producer_id: int) -> int | None:
        """The producer's latest epoch in the group: of its last marker or of a pending
        offset, whichever is newer; None if the group knows no such producer."""
        known = self.producers.get(group_id, {}).get(producer_id)
        epoch = None if known is None else known.producer_epoch
        for p in self.of(group_id, producer_id).values():
            if epoch is None or p.value.producer_epoch > epoch:
                epoch = p.value.producer_epoch
        return epoch

    def coordinator_epoch(self, group_id: str, producer_id: int) -> int:
        known = self.producers.get(group_id, {}).get(producer_id)
        return -1 if known is None else known.coordinator_epoch

    def digest(self) -> dict[str, Any]:
        """A canonical view (replay equivalence, I4)."""
        return {
            "pending": {gid: {pid: [(tp, p.superseded, p.value.producer_epoch, p.value.offset,
                                     p.value.leader_epoch, p.value.metadata,
                                     p.value.commit_timestamp, p.value.topic_id)
                                    for tp, p in sorted(offsets.items())]
                              for pid, offsets in sorted(by_producer.items())}
                        for gid, by_producer in sorted(self.pending.items())},
            "producers": {gid: {pid: (v.producer_epoch, v.coordinator_epoch)
                                for pid, v in sorted(producers.items())}
                          for gid, producers in sorted(self.producers.items())},
        }
