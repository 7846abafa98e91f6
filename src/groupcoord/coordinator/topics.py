"""The topic-metadata image a shard is given (KIP-848 "Topic ID and Topic Recreation").

The image is what the broker knows about topics: id, name and partition count. A shard never
reads it on its own: the driver hands a new image to ``Shard.update_metadata`` and the shard
bumps the epoch of every group whose subscribed-topic metadata changed (partitions added, a
subscribed topic created, deleted or recreated under a new id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from uuid import UUID


@dataclass(slots=True, frozen=True)
class TopicMetadata:
    topic_id: UUID
    name: str
    num_partitions: int


@dataclass(slots=True, frozen=True)
class MetadataImage:
    """An immutable snapshot of the cluster's topics, looked up by name or by id."""

    by_name: Mapping[str, TopicMetadata] = field(default_factory=dict)
    by_id: Mapping[UUID, TopicMetadata] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Iterable[TopicMetadata]) -> MetadataImage:
        by_name: dict[str, TopicMetadata] = {}
        by_id: dict[UUID, TopicMetadata] = {}
        for t in topics:
            if t.num_partitions < 0:
                raise ValueError(f"topic {t.name}: negative partition count")
            if t.topic_id.int == 0:
                raise ValueError(f"topic {t.name}: topic id must be non-zero")
            by_name[t.name] = t
            by_id[t.topic_id] = t
        return cls(by_name, by_id)

    def topic(self, name: str) -> TopicMetadata | None:
        return self.by_name.get(name)

    def with_topic(self, topic: TopicMetadata) -> MetadataImage:
        """A new image with ``topic`` added or replaced (a name maps to one id at a time)."""
        topics = {t.name: t for t in self.by_name.values()}
        topics[topic.name] = topic
        return MetadataImage.of(topics.values())

    def without_topic(self, name: str) -> MetadataImage:
        return MetadataImage.of(t for t in self.by_name.values() if t.name != name)


EMPTY_IMAGE = MetadataImage()
