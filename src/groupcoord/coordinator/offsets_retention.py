"""Offsets retention: Kafka's periodic group metadata cleanup (``offsets.retention.minutes``).

Modelled on Kafka's ``GroupCoordinatorShard.cleanupGroupMetadata`` /
``OffsetMetadataManager.cleanupExpiredOffsets`` / ``Group.offsetExpirationCondition``. Every
``offsets.retention.check.interval.ms`` (a shard timer, first armed by the load duties
``Shard.on_loaded`` and re-armed by each check), for every group of the shard, in group id order:

1. **Which offsets may expire** (the group's *expiration condition*; a group without one keeps
   all its offsets):

   - offsets without a group (committed by an admin client or a consumer without group
     management: Kafka's "simple" consumer, listed as an empty classic group): each offset
     expires ``retention`` after its own commit timestamp;
   - a classic group that is **Empty**: every offset expires ``retention`` after the time the
     group became empty (its state timestamp), whatever its commit timestamp;
   - a classic group of protocol type ``consumer`` that is **Stable**: offsets of topics no
     member subscribes to expire ``retention`` after their commit timestamp;
   - a classic group in any other state (a rebalance is in flight): nothing expires;
   - a consumer group or a connect group: offsets of topics the group does not subscribe to
     (all of them once the group is empty) expire ``retention`` after their commit timestamp.

   An offset committed with an explicit expire timestamp (OffsetCommit v2-v4
   ``retention_time_ms``) expires at that timestamp instead, under the same condition. An offset
   of a topic the group subscribes to never expires.
2. **Tombstones**: an expired offset gets an offset commit tombstone (through ``Shard.append``,
   so it is replayed now and persisted by the driver like any other record).
3. **Empty groups are deleted** once all their offsets expired (or they had none), as Kafka's
   ``maybeDeleteGroup`` does: a consumer group without members, a classic group in state Empty
   (tombstones through ``Shard.delete_group``; dynamic group configurations are kept, as for
   DeleteGroups). Choice recorded here: a connect group is never deleted by the cleanup (its
   connector configuration is durable configuration, not soft state; DeleteGroups removes it).

Pure and deterministic: the time is ``shard.now`` (the timer's deadline as the driver passes
it), groups and partitions are visited in sorted order, nothing reads a clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.group import BaseTimestamp, Group, commit_timestamp
from groupcoord.coordinator.records import OffsetCommitValue, offset_commit_record
from groupcoord.coordinator.timers import TimerKey

if TYPE_CHECKING:
    from groupcoord.coordinator.context import ShardContext

log = logging.getLogger(__name__)

#: Timer kind (and the whole key) of the periodic check.
OFFSETS_RETENTION = "offsets-retention"
CHECK_TIMER: TimerKey = (OFFSETS_RETENTION,)

def expiration_base(group: Group | None) -> BaseTimestamp | None:
    """The group's expiration condition (Kafka's ``offsetExpirationCondition``): the timestamp
    each offset's retention runs from, or ``None`` when none of its offsets may expire now
    (``Group.offset_expiration_base``; offsets without a group: their commit timestamps)."""
    if group is None:
        return commit_timestamp
    return group.offset_expiration_base()


def is_expired(value: OffsetCommitValue, base: BaseTimestamp, now_ms: int,
               retention_ms: int) -> bool:
    """Kafka's ``OffsetExpirationConditionImpl.isOffsetExpired``."""
    if value.expire_timestamp >= 0:
        return now_ms >= value.expire_timestamp
    return now_ms - base(value) >= retention_ms


@dataclass(slots=True, frozen=True)
class CleanupResult:
    """What one check did: the offsets it expired and the groups it deleted."""

    expired: tuple[tuple[str, str, int], ...] = ()
    deleted_groups: tuple[str, ...] = ()


class OffsetsRetention:
    """The periodic offsets retention check of one shard (module docstring)."""

    def __init__(self, shard: ShardContext) -> None:
        self.shard = shard
        shard.register_timer(OFFSETS_RETENTION, self._on_timer)

    def on_loaded(self) -> None:
        """Load duty: arm the first check one interval from now."""
        self._arm()

    def _arm(self) -> None:
        self.shard.schedule(CHECK_TIMER, self.shard.now +
                            self.shard.config.offsets_retention_check_interval_ms)

    def _on_timer(self, key: TimerKey, payload: Any) -> None:
        self.cleanup()
        self._arm()

    def cleanup(self) -> CleanupResult:
        """Expire offsets and delete empty groups as of ``shard.now`` (module docstring)."""
        shard = self.shard
        now = shard.now
        retention = shard.config.offsets_retention_ms
        expired: list[tuple[str, str, int]] = []
        deleted: list[str] = []
        for gid in sorted(set(shard.groups) | set(shard.offsets)):
            group = shard.groups.get(gid)
            all_expired = self._expire_offsets(gid, group, now, retention, expired)
            if (all_expired and group is not None and group.is_empty()
                    and group.deleted_by_offsets_retention):
                shard.delete_group(gid)
                deleted.append(gid)
        if expired or deleted:
            log.info("shard %d: offsets retention expired %d offsets and deleted %d empty groups",
                     shard.shard_id, len(expired), len(deleted))
        return CleanupResult(tuple(expired), tuple(deleted))

    def _expire_offsets(self, gid: str, group: Group | None, now: int, retention: int,
                        out: list[tuple[str, str, int]]) -> bool:
        """Tombstone the group's expired offsets; whether none is left."""
        offsets = self.shard.offsets.get(gid)
        txn = self.shard.txn_offsets
        if not offsets:
            return gid not in txn.pending  # never delete a group with an open transaction
        base = expiration_base(group)
        if base is None:
            return False
        all_expired = True
        subscribed: dict[str, bool] = {}
        for topic, partition in sorted(offsets):
            if group is not None:
                sub = subscribed.get(topic)
                if sub is None:
                    sub = subscribed[topic] = group.is_subscribed_to(topic)
                if sub:
                    all_expired = False
                    continue
            if is_expired(offsets[(topic, partition)], base, now, retention) \
                    and not txn.has_pending(gid, topic, partition):
                self.shard.append(offset_commit_record(gid, topic, partition, None))
                out.append((gid, topic, partition))
            else:
                all_expired = False
        return all_expired and gid not in txn.pending


__all__ = ["CHECK_TIMER", "OFFSETS_RETENTION", "CleanupResult", "OffsetsRetention",
           "expiration_base", "is_expired"]
