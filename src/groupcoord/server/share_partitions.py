"""The broker's share partitions and their durable state (KIP-932; Kafka's
``SharePartitionManager`` and, for the durable part, the share coordinator with its
Initialize / Read / Write / DeleteShareGroupState).

:class:`SharePartitionManager` keeps one pure
:class:`~groupcoord.coordinator.share_partitions.partition.SharePartition` per (share group,
topic id, partition) and drives it:

- **Initialisation**: a share partition starts on its first ShareFetch, at the log's end
  (``share.auto.offset.reset=latest``, the default) or its start (``earliest``). Kafka
  initialises when the group coordinator first assigns the partition to a member; a member
  fetches only what it was assigned, so for a client the first fetch is the same moment.
- **Durability** (write before respond): every change (initialisation, acquisition,
  acknowledgement, release, lock expiry, an offset reset) appends the partition's whole state
  record (``coordinator/share_partitions/records.py``) to a record log of its own (the storage
  layer's RecordLog: ``<data-dir>/share-state/groupcoord.db`` with sqlite, or memory) before the
  response goes out; a deletion appends a tombstone. On start the log is replayed: every
  partition comes back with its start offset, acknowledgements and delivery counts, and what
  was ACQUIRED is AVAILABLE again (no lock survives, so no record is held by two members). If
  an append fails, the partition goes back to its last durable state (as a shard is reloaded
  from its log) and the request gets KAFKA_STORAGE_ERROR. The log is compacted like the
  coordinator's (newest entry per key).
- **Lock expiry**: one event-loop timer at the earliest acquisition-lock deadline; when it
  fires, every partition expires its locks with the clock's time passed in, the changes are
  written, and waiting ShareFetches are woken (records became available).
- **Group configuration**: :attr:`SharePartitionManager.group_config` is the share group
  type's accessor of a group's effective configuration (lock duration, delivery count limit,
  auto offset reset, isolation level); ``group.share.partition.max.record.locks`` is the
  broker's.
- ``share.auto.offset.reset=by_duration:<duration>`` (KIP-1106) starts at the first batch
  whose records reach now minus the duration (the partition log's time index has batch
  granularity), or at the end of the log if there is none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from uuid import UUID

from groupcoord.coordinator.config import (
    CoordinatorConfig,
    ShareGroupConfig,
    effective_share_group_config,
)
from groupcoord.coordinator.share_partitions.config import (
    DEFAULT_MAX_RECORD_LOCKS,
    MAX_RECORD_LOCKS,
    ShareConfig,
)
from groupcoord.coordinator.share_partitions.partition import ShareCounters, SharePartition
from groupcoord.coordinator.share_partitions.records import ShareStateKey, ShareStateValue
from groupcoord.server.partition_log import PartitionLog
from groupcoord.storage.log import LogError, RecordLog, replay_entries

log = logging.getLogger(__name__)

#: The share-state log holds one shard.
SHARD = 0
#: The share-state log's directory under the data directory (sqlite: its ``groupcoord.db``).
SHARE_STATE_DIR = "share-state"

class ShareStateError(Exception):
    """The share state could not be written (KAFKA_STORAGE_ERROR)."""


class SharePartitionManager:
    def __init__(self, state_log: RecordLog, now_ms: Callable[[], int],
                 broker_configs: Mapping[str, str] | None = None) -> None:
        self.log = state_log
        self.now_ms = now_ms
        props = dict(broker_configs or {})
        self.max_record_locks = int(props.get(MAX_RECORD_LOCKS, DEFAULT_MAX_RECORD_LOCKS))
        broker = CoordinatorConfig.from_properties(props)
        defaults = effective_share_group_config(broker, {})
        #: A share group's effective configuration: the share group type's accessor
        #: (``CoordinatorRuntime.share_group_config``), which the server sets; the broker's
        #: defaults until then.
        self.group_config: Callable[[str], ShareGroupConfig] = lambda group_id: defaults
        self.partitions: dict[ShareStateKey, SharePartition] = {}
        #: The last durable value of each partition (what a failed append goes back to).
        self._durable: dict[ShareStateKey, ShareStateValue] = {}
        #: Called when records may have become available (lock expiry, release).
        self.on_available: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        #: ShareConfig by the (frozen, hashable) group configuration it is made from.
        self._configs: dict[ShareGroupConfig, ShareConfig] = {}
        #: The earliest lock deadline of each partition holding locks.
        self._deadlines: dict[ShareStateKey, int] = {}
        self.writes = 0
        #: What every partition did to records since start (the metrics endpoint's share
        #: counters, ``server/metrics.py``); shared by the partitions this manager makes.
        self.counters = ShareCounters()

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> int:
        """Replay the share-state log; the number of entries read. Raises LogError."""
        durable: dict[ShareStateKey, ShareStateValue] = {}

        def apply(key: bytes, value: bytes | None) -> None:
            k = ShareStateKey.decode(key)
            if value is None:
                durable.pop(k, None)
            else:
                durable[k] = ShareStateValue.decode(value)

        n = replay_entries(self.log, SHARD, apply)
        self._durable = durable
        self.partitions = {k: SharePartition.from_value(self.config(k.group_id), v,
                                                      self.counters)
                           for k, v in durable.items()}
        log.info("share state: %d share partitions from %d records", len(durable), n)
        return n

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = None
        self._loop = None

    def config(self, group_id: str) -> ShareConfig:
        """The share configuration of ``group_id`` (its group configs over the broker's)."""
        group = self.group_config(group_id)
        config = self._configs.get(group)
        if config is None:
            if len(self._configs) >= 1024:  # a few distinct configurations in practice
                self._configs.clear()
            config = self._configs[group] = ShareConfig.of_group(group, self.max_record_locks)
        return config

    # ------------------------------------------------------------------ partitions

    def get(self, key: ShareStateKey) -> SharePartition | None:
        sp = self.partitions.get(key)
        if sp is not None:
            sp.config = self.config(key.group_id)
        return sp

    def get_or_init(self, key: ShareStateKey, plog: PartitionLog) -> SharePartition:
        """The share partition of ``key``, initialised from ``share.auto.offset.reset`` on its
        first use (written before it is used). Raises ShareStateError, OSError, LogError."""
        sp = self.get(key)
        if sp is not None:
            return sp
        config = self.config(key.group_id)
        start = plog.high_watermark
        if config.auto_offset_reset == "earliest":
            start = plog.log_start_offset
        elif (duration := config.reset_duration_ms) is not None:
            found = plog.offset_for_timestamp(self.now_ms() - duration)
            start = found[0] if found is not None else plog.high_watermark
        sp = SharePartition(config, start, counters=self.counters)
        self.partitions[key] = sp
        self.persist(key)
        return sp

    def of_group(self, group_id: str) -> Iterator[tuple[ShareStateKey, SharePartition]]:
        for k, sp in sorted(self.partitions.items(), key=lambda kv: kv[0]):
            if k.group_id == group_id:
                yield k, sp

    def persist(self, key: ShareStateKey) -> None:
        """Write ``key``'s state record; on failure the partition goes back to its last durable
        state and ShareStateError is raised."""
        sp = self.partitions[key]
        value = sp.value()
        try:
            self.log.append(SHARD, [(key.encode(), value.encode())], self.now_ms())
        except (LogError, OSError) as e:
            log.error("share state of %s %s-%d: append failed (%s); back to its durable state",
                      key.group_id, key.topic_id, key.partition, e)
            old = self._durable.get(key)
            if old is None:
                del self.partitions[key]
            else:
                self.partitions[key] = SharePartition.from_value(sp.config, old, self.counters)
            self._track(key)
            raise ShareStateError(str(e)) from e
        self.writes += 1
        self._durable[key] = value
        self._track(key)

    def delete(self, key: ShareStateKey) -> None:
        """DeleteShareGroupState: a tombstone, and the partition is gone."""
        try:
            self.log.append(SHARD, [(key.encode(), None)], self.now_ms())
        except (LogError, OSError) as e:
            raise ShareStateError(str(e)) from e
        self.partitions.pop(key, None)
        self._durable.pop(key, None)
        self._track(key)

    def keep_topics(self, topic_ids: set[UUID]) -> int:
        """Topics were deleted: the share state of every topic not in ``topic_ids`` goes, a
        tombstone per partition, as Kafka's share coordinator deletes the state of deleted
        topics (a topic created again has a new id, so its share partitions start afresh);
        how many. A tombstone that cannot be written is logged and tried at the next change."""
        n = 0
        for key in [k for k in self.partitions if k.topic_id not in topic_ids]:
            try:
                self.delete(key)
                n += 1
            except ShareStateError as e:
                log.error("share state of a deleted topic (%s): %s", key.topic_id, e)
        return n

    def delete_groups(self, group_ids: list[str]) -> int:
        """The groups were deleted (DeleteGroups): their share state goes (Kafka's
        DeleteShareGroupState), a tombstone per partition; how many. A tombstone that cannot
        be written is logged (the group is gone already) and its state stays until the next
        deletion of the group or of its offsets."""
        gone = set(group_ids)
        n = 0
        for key in [k for k in self.partitions if k.group_id in gone]:
            try:
                self.delete(key)
                n += 1
            except ShareStateError as e:
                log.error("share state of deleted group %s: %s", key.group_id, e)
        return n

    def reset(self, key: ShareStateKey, start_offset: int) -> None:
        """AlterShareGroupOffsets for one partition (initialising it at ``start_offset`` if it
        had no state)."""
        sp = self.get(key)
        if sp is None:
            sp = self.partitions[key] = SharePartition(self.config(key.group_id), start_offset,
                                                       counters=self.counters)
        else:
            sp.reset(start_offset)
        self.persist(key)

    def log_start_moved(self, topic_id: UUID, partition: int, log_start_offset: int) -> int:
        """DeleteRecords moved a partition's log start offset: every share partition of it
        whose SPSO is below moves there (:meth:`SharePartition.move_start`) and is written; how
        many. A write that fails is logged (the partition went back to its durable state; the
        next ShareFetch moves it again)."""
        changed = 0
        for key in [k for k in self.partitions
                    if k.topic_id == topic_id and k.partition == partition]:
            sp = self.get(key)
            if sp is not None and sp.move_start(log_start_offset):
                changed += 1
                with contextlib.suppress(ShareStateError):
                    self.persist(key)
        if changed:
            self._notify()
        return changed

    def release_member(self, group_id: str, member_id: str,
                       keys: Iterator[ShareStateKey] | list[ShareStateKey] | None = None) -> int:
        """Release every record ``member_id`` holds in ``group_id`` (on ``keys`` only, if
        given): it left the group or closed its share session. The partitions written."""
        changed = 0
        targets = list(keys) if keys is not None else [k for k, _ in self.of_group(group_id)]
        for key in targets:
            sp = self.get(key)
            if sp is not None and sp.release_member(member_id):
                changed += 1
                # logged; the partition went back to its durable state
                with contextlib.suppress(ShareStateError):
                    self.persist(key)
        if changed:
            self._notify()
        return changed

    # ------------------------------------------------------------------ lock expiry

    def _track(self, key: ShareStateKey) -> None:
        """Note ``key``'s earliest lock deadline (none: it holds no lock) and re-arm."""
        sp = self.partitions.get(key)
        deadline = None if sp is None else sp.next_deadline()
        if deadline is None:
            self._deadlines.pop(key, None)
        else:
            self._deadlines[key] = deadline
        self.schedule()

    def schedule(self) -> None:
        """(Re)arm the timer at the earliest lock deadline of all partitions."""
        if self._loop is None:
            return
        at = min(self._deadlines.values(), default=None)
        if at == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = at
        if at is not None:
            delay = max(at - self.now_ms(), 0) / 1000.0
            self._timer = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        self.expire(self.now_ms())

    def expire(self, now_ms: int) -> int:
        """Expire the acquisition locks due at ``now_ms``; the partitions changed."""
        changed = 0
        for key in [k for k, d in self._deadlines.items() if d <= now_ms]:
            sp = self.partitions.get(key)
            if sp is not None and sp.expire(now_ms):
                changed += 1
                with contextlib.suppress(ShareStateError):
                    self.persist(key)
            self._track(key)
        self.schedule()
        if changed:
            self._notify()
        return changed

    def _notify(self) -> None:
        for cb in self.on_available:
            cb()

    @staticmethod
    def key(group_id: str, topic_id: UUID, partition: int) -> ShareStateKey:
        return ShareStateKey(group_id, topic_id, partition)
