"""The broker's topics: names, ids, partition counts and partition logs, kept in the data directory.

Upstream semantics kept (CreateTopics / DeleteTopics / CreatePartitions, KIP-516 topic ids):

- topic ids are random version-4 UUIDs, never the zero UUID; a topic deleted and created again
  gets a new id (the coordinator tells the incarnations apart by id);
- names: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..`` (INVALID_TOPIC_EXCEPTION);
- partitions can only be added (INVALID_PARTITIONS otherwise);
- one node: replication factor must be -1 or 1 (INVALID_REPLICATION_FACTOR).

Persistence: ``<data-dir>/topics.json`` (``{"cluster_id": str, "topics": [{"name", "id",
"partitions", "configs"}]}``), rewritten atomically (temp file + rename) on each change, and
one :class:`PartitionLog` file per partition under ``<data-dir>/topics/<id-hex>/``.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode
from groupcoord.server.partition_log import PartitionLog

log = logging.getLogger(__name__)

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249
MAX_PARTITIONS = 100_000


def validate_topic_name(name: str) -> None:
    if not name:
        raise CoordinatorError(ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise CoordinatorError(ErrorCode.invalid_topic_exception,
                               f"Topic name cannot be \".\" or \"..\": {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise CoordinatorError(ErrorCode.invalid_topic_exception,
                               f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} "
                               f"characters, topic name: {name}")
    if not _LEGAL.match(name):
        raise CoordinatorError(ErrorCode.invalid_topic_exception,
                               f"Topic name {name!r} is illegal, it contains a character other "
                               f"than ASCII alphanumerics, '.', '_' and '-'")


def new_topic_id() -> UUID:
    while True:
        tid = uuid.uuid4()
        if tid.int != 0:
            return tid


@dataclass(slots=True)
class Topic:
    topic_id: UUID
    name: str
    partitions: list[PartitionLog]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


class TopicsFileError(ValueError):
    """``topics.json`` cannot be read; the message names the file and what is wrong."""


def read_topics_json(path: Path) -> dict[str, Any]:
    """The content of ``topics.json``, checked: a :class:`TopicsFileError` naming the file
    and the first problem (not JSON, no ``cluster_id``, a topic without a name, a valid id or
    a partition count) instead of a KeyError deep in the load."""
    def bad(why: str) -> TopicsFileError:
        return TopicsFileError(f"{path}: {why} (restore it from a backup, or move the data "
                               f"directory away to start empty)")
    try:
        raw = json.loads(path.read_text())
    except OSError as e:
        raise TopicsFileError(f"{path}: cannot read it: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise bad(f"not valid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise bad("not a JSON object")
    if not isinstance(raw.get("cluster_id"), str) or not raw["cluster_id"]:
        raise bad("no cluster_id")
    topics = raw.setdefault("topics", [])
    if not isinstance(topics, list):
        raise bad("'topics' is not a list")
    for i, t in enumerate(topics):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise bad(f"topic #{i} has no name")
        try:
            UUID(str(t.get("id")))
        except ValueError:
            raise bad(f"topic {t['name']!r} has no valid id") from None
        n = t.get("partitions")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise bad(f"topic {t['name']!r} has no valid partition count")
        if not isinstance(t.get("configs", {}), dict):
            raise bad(f"topic {t['name']!r}: 'configs' is not an object")
    return raw


class TopicRegistry:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._meta = data_dir / "topics.json"
        self._topics_dir = data_dir / "topics"
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[UUID, Topic] = {}
        self.cluster_id = ""
        #: Bumped on every change: what caches of topic-derived answers key on.
        self.generation = 0
        self._image: MetadataImage | None = None
        self._load()

    # ------------------------------------------------------------------ persistence

    def _load(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self._meta.exists():
            self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            self.save()
            return
        raw = read_topics_json(self._meta)
        self.cluster_id = raw["cluster_id"]
        for t in raw["topics"]:
            tid = UUID(t["id"])
            topic = Topic(tid, t["name"], [], dict(t.get("configs", {})))
            for p in range(int(t["partitions"])):
                topic.partitions.append(PartitionLog(self._partition_path(tid, p)))
            self.topics[topic.name] = topic
            self.by_id[tid] = topic
        log.info("loaded %d topics from %s", len(self.topics), self._meta)

    def save(self) -> None:
        data = {"cluster_id": self.cluster_id,
                "topics": [{"name": t.name, "id": str(t.topic_id), "partitions": t.num_partitions,
                            "configs": t.configs} for t in sorted(self.topics.values(),
                                                                   key=lambda t: t.name)]}
        tmp = self._meta.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._meta)
        self._image = None
        self.generation += 1

    def _partition_path(self, tid: UUID, partition: int) -> Path:
        return self._topics_dir / tid.hex / f"{partition}.log"

    # ------------------------------------------------------------------ queries

    def image(self) -> MetadataImage:
        if self._image is None:
            self._image = MetadataImage.of(TopicMetadata(t.topic_id, t.name, t.num_partitions)
                                           for t in self.topics.values())
        return self._image

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def __iter__(self) -> Iterator[Topic]:
        return iter(sorted(self.topics.values(), key=lambda t: t.name))

    def partition(self, name: str, partition: int) -> PartitionLog | None:
        t = self.topics.get(name)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    # ------------------------------------------------------------------ changes

    def create(self, name: str, num_partitions: int, replication_factor: int = -1,
               configs: Mapping[str, str] | None = None, validate_only: bool = False) -> Topic:
        validate_topic_name(name)
        if name in self.topics:
            raise CoordinatorError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        if num_partitions == -1:
            num_partitions = 1
        if not 1 <= num_partitions <= MAX_PARTITIONS:
            raise CoordinatorError(ErrorCode.invalid_partitions,
                                   f"Number of partitions must be between 1 and {MAX_PARTITIONS}, "
                                   f"got {num_partitions}.")
        if replication_factor not in (-1, 1):
            raise CoordinatorError(ErrorCode.invalid_replication_factor,
                                   f"Replication factor must be 1 (or -1 for the default) on this "
                                   f"single-node broker, got {replication_factor}.")
        tid = new_topic_id()
        topic = Topic(tid, name, [], dict(configs or {}))
        if validate_only:
            return topic
        topic.partitions = [PartitionLog(self._partition_path(tid, p)) for p in range(num_partitions)]
        self.topics[name] = topic
        self.by_id[tid] = topic
        self.save()
        log.info("created topic %s (%s) with %d partitions", name, tid, num_partitions)
        return topic

    def delete(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise CoordinatorError(ErrorCode.unknown_topic_or_partition,
                                   f"Topic '{name}' does not exist.")
        del self.topics[name]
        del self.by_id[topic.topic_id]
        self.save()
        for p in topic.partitions:
            p.close()
        shutil.rmtree(self._topics_dir / topic.topic_id.hex, ignore_errors=True)
        log.info("deleted topic %s (%s)", name, topic.topic_id)
        return topic

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise CoordinatorError(ErrorCode.unknown_topic_or_partition,
                                   f"Topic '{name}' does not exist.")
        if count < topic.num_partitions:
            raise CoordinatorError(ErrorCode.invalid_partitions,
                                   f"Topic currently has {topic.num_partitions} partitions, which "
                                   f"is higher than the requested {count}.")
        if count == topic.num_partitions:
            raise CoordinatorError(ErrorCode.invalid_partitions,
                                   f"Topic already has {count} partitions.")
        if count > MAX_PARTITIONS:
            raise CoordinatorError(ErrorCode.invalid_partitions,
                                   f"Number of partitions must be at most {MAX_PARTITIONS}.")
        if validate_only:
            return topic
        for p in range(topic.num_partitions, count):
            topic.partitions.append(PartitionLog(self._partition_path(topic.topic_id, p)))
        self.save()
        log.info("topic %s now has %d partitions", name, count)
        return topic

    def close(self) -> None:
        for t in self.topics.values():
            for p in t.partitions:
                p.close()
