"""The broker's topics: names, ids, partition counts and partition logs, kept in the data directory.

Upstream semantics kept (CreateTopics / DeleteTopics / CreatePartitions, KIP-516 topic ids):

- topic ids are random version-4 UUIDs, never the zero UUID; a topic deleted and created again
  gets a new id (the coordinator tells the incarnations apart by id);
- names: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..`` (INVALID_TOPIC_EXCEPTION);
- partitions can only be added (INVALID_PARTITIONS otherwise);
- one node: replication factor must be -1 or 1 (INVALID_REPLICATION_FACTOR).

Persistence: ``<data-dir>/topics.json`` (``{"cluster_id": str, "topics": [{"name", "id",
"partitions", "configs"}]}``), rewritten atomically (temp file + rename) on each change, and
one :class:`PartitionLog` file per partition written to, under ``<data-dir>/topics/<id-hex>/``
(docs/durability-and-metrics.md "Partition data").

Scale: a topic's partitions are a :class:`Partitions` sequence that makes a partition's log on
first use, so creating or describing a 100,000-partition topic touches no file and allocates no
per-partition object; the logs share one bounded cache of descriptors (``self.files``). At
start-up, :meth:`TopicRegistry.recover` runs Kafka's log recovery on every partition file
present (``partition_log.py``: a torn tail is cut, damage before it stops the start).

Clean shutdown (Kafka's ``LogManager``: ``.kafka_cleanshutdown`` in each log directory):
``close(clean=True)`` (``serve``'s orderly stop) fsyncs every partition file appended to since
start-up, closes them and writes ``<data-dir>/.kafka_cleanshutdown`` last, fsynced.
At start-up a marker that is there is deleted first (fsynced away, so a crash from then on
means recovery at the next start) and no partition file is read: each is recovered, with the
same checks, on its first use (``PartitionLog.expect_file``). No marker (a crash, SIGKILL, a
power loss before the marker reached the disk) means full recovery as before. Like Kafka, the
marker is trusted: a file changed after a clean stop is found damaged only when first used,
and that partition answers KAFKA_STORAGE_ERROR (never an empty log) until
``groupcoord recover-partitions`` (which reads every file whatever the marker says, and leaves
the marker as it is) or a restored copy fixes it.

Log start offsets (DeleteRecords; Kafka's ``log-start-offset-checkpoint``):
``<data-dir>/log-start-offset-checkpoint`` holds every partition's log start offset above 0,
in Kafka's checkpoint layout (a version line ``0``, a count line, then ``<topic-id-hex>
<partition> <offset>`` per line; topic ids, not names, so a topic created again starts at 0).
:meth:`TopicRegistry.delete_records` fsyncs the partition's file first, then writes the
checkpoint atomically (temp file, fsync, rename, fsync of the directory): a crash leaves the
old or the new checkpoint, never a torn one, and never a start beyond data that was lost.
Lines of topics that no longer exist are dropped at the next write.

All or nothing: a change whose ``topics.json`` cannot be written (disk full, no descriptor
left) is undone in memory and answered KAFKA_STORAGE_ERROR naming the file and the reason;
since partition files are only made by appends, a failed create leaves nothing on disk.

``in_memory`` (``--storage memory``): the same without the data directory — topics and
partition data live in memory, nothing is read or written.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload
from uuid import UUID

from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.errors import CoordinatorError, ErrorCode
from groupcoord.server.partition_files import OpenFiles
from groupcoord.server.partition_log import PartitionLog, PartitionLogCorrupt

log = logging.getLogger(__name__)

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249
MAX_PARTITIONS = 100_000
#: Kafka's name for the marker of a clean shutdown (``LogLoader.CleanShutdownFileName``).
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: Kafka's name for the log start offsets' checkpoint (``LogManager.LogStartOffsetCheckpointFile``).
LOG_START_CHECKPOINT_FILE = "log-start-offset-checkpoint"


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


class Partitions(Sequence[PartitionLog]):
    """A topic's partition logs, made on first use: a 100,000-partition topic costs an int until
    its partitions are produced to or read (``partition_log.py``: no file, no descriptor, no
    index for an empty partition)."""

    __slots__ = ("_count", "_logs", "_make")

    def __init__(self, make: Callable[[int], PartitionLog], count: int) -> None:
        self._make = make
        self._count = count
        self._logs: dict[int, PartitionLog] = {}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> PartitionLog: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[PartitionLog]: ...

    def __getitem__(self, index: int | slice) -> PartitionLog | Sequence[PartitionLog]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        plog = self._logs.get(index)
        if plog is None:
            plog = self._logs[index] = self._make(index)
        return plog

    def resize(self, count: int) -> None:
        self._count = count
        for i in [i for i in self._logs if i >= count]:
            self._logs.pop(i).close()

    def opened(self) -> list[PartitionLog]:
        """The partition logs made so far (the others have no state)."""
        return list(self._logs.values())


@dataclass(slots=True)
class Topic:
    topic_id: UUID
    name: str
    partitions: Partitions
    configs: dict[str, str] = field(default_factory=dict)
    #: Recorded and shown in Metadata (replicas, ISR) as Kafka does; the data is stored once.
    replication_factor: int = 1

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


class TopicsFileError(ValueError):
    """``topics.json`` (or the log start offsets' checkpoint) cannot be read; the message names
    the file and what is wrong."""


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
    def __init__(self, data_dir: Path, *, in_memory: bool = False,
                 max_open_files: int | None = None, recover: bool = True) -> None:
        self.data_dir = data_dir
        #: ``--storage memory``: topics and partition data in memory only; nothing is read
        #: from or written to ``data_dir``.
        self.in_memory = in_memory
        self._meta = data_dir / "topics.json"
        self._topics_dir = data_dir / "topics"
        self.files = OpenFiles(max_open_files)
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[UUID, Topic] = {}
        self.cluster_id = ""
        #: The brokers of the server (``--brokers``): the largest replication factor accepted
        #: (Kafka's INVALID_REPLICATION_FACTOR above the number of registered brokers).
        self.num_brokers = 1
        #: Bumped on every change: what caches of topic-derived answers key on.
        self.generation = 0
        self._image: MetadataImage | None = None
        #: Partition files read and checked at start-up (0 after a clean shutdown).
        self.files_recovered = 0
        #: Whether start-up found the clean-shutdown marker (and so read no partition file).
        self.clean_start = False
        #: Called after :meth:`write_marker` stored a marker (the Fetch family wakes its
        #: waiting fetches: a read_committed consumer's data became visible).
        self.marker_listeners: list[Callable[[], None]] = []
        #: (topic id, partition) -> log start offset above 0 (the checkpoint's content).
        self._log_starts: dict[tuple[UUID, int], int] = {}
        self._load(recover)

    # ------------------------------------------------------------------ persistence

    def _new_topic(self, tid: UUID, name: str, count: int, configs: dict[str, str]) -> Topic:
        tdir = str(self._topics_dir / tid.hex)
        files = self.files
        in_memory = self.in_memory

        starts = self._log_starts

        def make(p: int) -> PartitionLog:  # files present at start-up are recovered by recover()
            plog = PartitionLog(f"{tdir}/{p}.log", files, in_memory=in_memory, fresh=True)
            plog.on_marker = self._marker_written
            plog.log_start_offset = starts.get((tid, p), 0)
            return plog

        return Topic(tid, name, Partitions(make, count), configs)

    def _load(self, recover: bool) -> None:
        if self.in_memory:
            self.cluster_id = _new_cluster_id()
            self._changed()
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The marker goes first, whatever follows: a crash from now on means recovery.
        self.clean_start = recover and self._take_clean_shutdown_marker()
        if not self._meta.exists():
            self.cluster_id = _new_cluster_id()
            self.save()
            return
        raw = read_topics_json(self._meta)
        self.cluster_id = raw["cluster_id"]
        self._log_starts.update(read_log_start_checkpoint(self.log_start_checkpoint))
        for t in raw["topics"]:
            tid = UUID(t["id"])
            topic = self._new_topic(tid, str(t["name"]), int(t["partitions"]),
                                    dict(t.get("configs", {})))
            topic.replication_factor = int(t.get("replication_factor", 1))
            self.topics[topic.name] = topic
            self.by_id[tid] = topic
        if self.clean_start:
            present = 0
            for topic, p, _path in self._partition_files():
                topic.partitions[p].expect_file()
                present += 1
            log.info("loaded %d topics from %s (clean shutdown: %d partition files not read, "
                     "each is checked on first use)", len(self.topics), self._meta, present)
            return
        files = self.files_recovered = self.recover() if recover else 0
        log.info("loaded %d topics from %s (%d partition files checked)", len(self.topics),
                 self._meta, files)

    @property
    def log_start_checkpoint(self) -> Path:
        return self.data_dir / LOG_START_CHECKPOINT_FILE

    def _write_log_starts(self) -> None:
        """Write the log start offsets' checkpoint atomically (temp file, fsync, rename, fsync
        of the directory); an OSError leaves the previous file and no temporary one."""
        rows = sorted((tid.hex, p, off) for (tid, p), off in self._log_starts.items()
                      if off > 0 and tid in self.by_id)
        text = f"0\n{len(rows)}\n" + "".join(f"{t} {p} {off}\n" for t, p, off in rows)
        path = self.log_start_checkpoint
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(self.data_dir)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def delete_records(self, name: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition: its log start offset moves up to ``offset`` (-1:
        the high watermark; :meth:`PartitionLog.delete_records`), durably (the partition's
        file fsynced, then the checkpoint written). Returns the new log start offset.
        KeyError: no such partition; ``OffsetOutOfRange``; CoordinatorError
        KAFKA_STORAGE_ERROR when the checkpoint cannot be written (nothing changed)."""
        plog = self.partition(name, partition)
        if plog is None:
            raise KeyError(f"no partition {name}-{partition}")
        topic = self.topics[name]
        before = plog.log_start_offset
        after = plog.delete_records(offset)
        if after == before or self.in_memory:
            return after
        key = (topic.topic_id, partition)
        self._log_starts[key] = after
        try:
            plog.sync()
            self._write_log_starts()
        except OSError as e:
            plog.log_start_offset = before
            self._log_starts[key] = before
            raise _storage_error(f"Cannot delete records of {name}-{partition}",
                                 self.log_start_checkpoint, e) from None
        return after

    @property
    def clean_shutdown_marker(self) -> Path:
        return self.data_dir / CLEAN_SHUTDOWN_FILE

    def _take_clean_shutdown_marker(self) -> bool:
        """Whether the last stop was clean; the marker is deleted (and the deletion fsynced)
        before anything is written, so a crash from now on means recovery at the next start.
        An OSError (the marker cannot be deleted) stops the start: trusting a marker that
        would outlive a crash could skip a needed recovery."""
        marker = self.clean_shutdown_marker
        if not marker.exists():
            return False
        marker.unlink()
        _fsync_dir(self.data_dir)
        return True

    def _partition_files(self) -> Iterator[tuple[Topic, int, Path]]:
        """(topic, partition, path) of every partition file present (a directory listing; no
        file is opened). A file beyond the topic's partition count is logged and skipped."""
        for topic in self.topics.values():
            tdir = self._topics_dir / topic.topic_id.hex
            try:
                names = os.listdir(tdir)
            except FileNotFoundError:
                continue
            for fname in names:
                stem, _dot, ext = fname.partition(".")
                if ext != "log" or not stem.isdigit():
                    continue
                p = int(stem)
                if p >= topic.num_partitions:
                    log.warning("%s: partition %d beyond the %d of topic %s: ignored", tdir / fname,
                                p, topic.num_partitions, topic.name)
                    continue
                yield topic, p, tdir / fname

    def recover(self, *, cut_damage: bool = False,
                report: Callable[[Path, int, str], None] | None = None) -> int:
        """Kafka's log recovery for every partition file present (``PartitionLog.recover``):
        each is indexed and its batches checked (header, offsets, CRC-32C) at start-up, so
        damage is found before the first request and not when a consumer reaches it; a torn
        tail is cut with a warning; damage before the tail raises
        :class:`PartitionLogCorrupt` (``serve`` stops with its one line) unless ``cut_damage``.
        The cost is one read of the stored data; partitions without a file (never written)
        cost nothing. ``report(file, byte, problem)`` is called for each cut. Returns the number
        of files checked."""
        checked = 0
        for topic, p, path in self._partition_files():
            try:
                cut = topic.partitions[p].recover(cut_damage=cut_damage)
            except PartitionLogCorrupt as e:
                e.data_dir = self.data_dir
                raise
            if cut is not None and report is not None:
                report(path, *cut)
            checked += 1
        return checked

    def save(self) -> None:
        """Write ``topics.json`` (atomically: a temporary file renamed over it); an OSError
        leaves the previous file in place and no temporary file behind."""
        if not self.in_memory:
            data = {"cluster_id": self.cluster_id,
                    "topics": [{"name": t.name, "id": str(t.topic_id),
                                "partitions": t.num_partitions, "configs": t.configs,
                                "replication_factor": t.replication_factor}
                               for t in sorted(self.topics.values(), key=lambda t: t.name)]}
            tmp = self._meta.with_suffix(".json.tmp")
            try:
                with open(tmp, "w") as f:
                    json.dump(data, f, indent=1)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self._meta)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        self._changed()

    def _changed(self) -> None:
        self._image = None
        self.generation += 1
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

    def write_marker(self, name: str, partition: int, producer_id: int, producer_epoch: int,
                     commit: bool, coordinator_epoch: int, timestamp_ms: int) -> int:
        """The transaction coordinator's commit or abort marker on one partition
        (:meth:`PartitionLog.append_control`: its offset, or its ProducerStateError, OSError
        or LogError). KeyError for a partition that does not exist (the topic was deleted).
        Every marker of a partition of the registry, written here or by ``append_control``,
        calls :attr:`marker_listeners` (the waiting fetches are woken)."""
        plog = self.partition(name, partition)
        if plog is None:
            raise KeyError(f"no partition {name}-{partition}")
        return plog.append_control(producer_id, producer_epoch, commit, coordinator_epoch,
                                   timestamp_ms)

    def _marker_written(self) -> None:
        """A partition of this registry stored a marker (:meth:`PartitionLog.append_control`,
        directly or through :meth:`write_marker`)."""
        for listener in self.marker_listeners:
            listener()

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
        if replication_factor != -1 and not 1 <= replication_factor <= self.num_brokers:
            raise CoordinatorError(ErrorCode.invalid_replication_factor,
                                   f"Replication factor must be between 1 and the number of "
                                   f"brokers, {self.num_brokers} (or -1 for the default), got "
                                   f"{replication_factor}.")
        tid = new_topic_id()
        topic = self._new_topic(tid, name, num_partitions, dict(configs or {}))
        topic.replication_factor = max(replication_factor, 1)
        if validate_only:
            return topic
        self.topics[name] = topic
        self.by_id[tid] = topic
        try:
            self.save()
        except OSError as e:  # all or nothing: the topic is not there
            del self.topics[name]
            del self.by_id[tid]
            raise _storage_error(f"Cannot create topic '{name}'", self._meta, e) from None
        log.info("created topic %s (%s) with %d partitions", name, tid, num_partitions)
        return topic

    def delete(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise CoordinatorError(ErrorCode.unknown_topic_or_partition,
                                   f"Topic '{name}' does not exist.")
        del self.topics[name]
        del self.by_id[topic.topic_id]
        try:
            self.save()
        except OSError as e:  # the topic stays, data included
            self.topics[name] = topic
            self.by_id[topic.topic_id] = topic
            raise _storage_error(f"Cannot delete topic '{name}'", self._meta, e) from None
        for p in topic.partitions.opened():
            p.close()
        if not self.in_memory:  # what is left (a failed removal) is ignored at start-up
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
        before = topic.num_partitions
        topic.partitions.resize(count)
        try:
            self.save()
        except OSError as e:
            topic.partitions.resize(before)
            raise _storage_error(f"Cannot add partitions to topic '{name}'", self._meta,
                                 e) from None
        log.info("topic %s now has %d partitions", name, count)
        return topic

    def close(self, *, clean: bool = False) -> None:
        """Close every partition file. ``clean`` (an orderly stop, after the last append):
        first fsync every file appended to since start-up, then write the clean-shutdown
        marker last, so the next start reads no partition file (Kafka's
        ``LogManager.shutdown`` flushes every log, then writes the marker). An error is
        logged and leaves no marker: the next start then recovers every file, as after a
        crash."""
        if not clean or self.in_memory:
            self.files.close_all()
            return
        marker = self.clean_shutdown_marker
        try:
            # every partition file's data on disk before the marker says so
            flushed = self.files.sync()
            self.files.close_all()
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            _fsync_dir(self.data_dir)
        except OSError as e:
            self.files.close_all()
            log.error("cannot write the clean-shutdown marker %s: %s (the next start checks "
                      "every partition file)", marker, e)
            with contextlib.suppress(OSError):
                marker.unlink()
            return
        log.info("partition files closed (%d flushed); clean-shutdown marker written: %s",
                 flushed, marker)


def read_log_start_checkpoint(path: Path) -> dict[tuple[UUID, int], int]:
    """The log start offsets of ``path`` (none if it is missing). A file that cannot be
    parsed stops the start with one line: guessing 0 would serve deleted records again."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    out: dict[tuple[UUID, int], int] = {}
    try:
        if not lines or lines[0] != "0" or int(lines[1]) != len(lines) - 2:
            raise ValueError("bad version or count line")
        for line in lines[2:]:
            tid, p, off = line.split()
            out[(UUID(hex=tid), int(p))] = int(off)
    except (ValueError, IndexError) as e:
        raise TopicsFileError(f"{path}: not a log start offset checkpoint ({e}); restore it "
                              f"or remove it (every partition then starts at offset 0)") from None
    return out


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _storage_error(what: str, path: Path, e: OSError) -> CoordinatorError:
    """KAFKA_STORAGE_ERROR for a change that could not be written (nothing was changed)."""
    log.error("%s: cannot write %s: %s", what, path, e)
    return CoordinatorError(ErrorCode.kafka_storage_error,
                            f"{what}: cannot write {path}: {e.strerror or e}; nothing was changed.")
