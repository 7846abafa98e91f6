"""The configurations a share partition reads (KIP-932 "Configuration").

Group configurations (dynamic, per share group; the share group type keeps and validates them,
``coordinator/config.py``'s ``ShareGroupConfig``, which :meth:`ShareConfig.of_group` reads):
``share.record.lock.duration.ms`` (how long an acquisition lock lasts, default 30 s),
``share.delivery.count.limit`` (a record released or timed out at this many deliveries is
archived, default 5), ``share.auto.offset.reset`` (``latest``, the default, ``earliest``, or
KIP-1106's ``by_duration:<ISO-8601 duration>``: where a share partition starts when it is
initialised), ``share.isolation.level`` (``read_uncommitted``, the default; ``read_committed``
needs the last stable offset of transactional partitions, see :attr:`ShareConfig.read_committed`).

Broker configuration: ``group.share.partition.max.record.locks`` (Kafka's default 2000): the
in-flight window of a share partition, from its start offset, never spans more offsets than this,
so no more records than this are acquired at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.coordinator.config import BY_DURATION, ShareGroupConfig, parse_iso_duration_ms
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
MAX_RECORD_LOCKS = "group.share.partition.max.record.locks"

DEFAULT_LOCK_DURATION_MS = 30_000
DEFAULT_DELIVERY_COUNT_LIMIT = 5
DEFAULT_MAX_RECORD_LOCKS = 2000


@dataclass(slots=True, frozen=True)
class ShareConfig:
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS

    def __post_init__(self) -> None:
        if self.lock_duration_ms <= 0:
            raise _bad(LOCK_DURATION, self.lock_duration_ms, "must be > 0")
        if self.delivery_count_limit <= 0:
            raise _bad(DELIVERY_COUNT_LIMIT, self.delivery_count_limit, "must be > 0")
        if self.auto_offset_reset not in ("latest", "earliest") and self.reset_duration_ms is None:
            raise _bad(AUTO_OFFSET_RESET, self.auto_offset_reset,
                       "must be latest, earliest or by_duration:<ISO-8601 duration>")
        if self.isolation_level not in ("read_uncommitted", "read_committed"):
            raise _bad(ISOLATION_LEVEL, self.isolation_level,
                       "must be read_uncommitted or read_committed")
        if self.max_record_locks <= 0:
            raise _bad(MAX_RECORD_LOCKS, self.max_record_locks, "must be > 0")

    @property
    def reset_duration_ms(self) -> int | None:
        """For ``by_duration:<duration>``: the duration (a share partition starts at the first
        record at or after now minus it); None otherwise."""
        if not self.auto_offset_reset.startswith(BY_DURATION):
            return None
        return parse_iso_duration_ms(self.auto_offset_reset[len(BY_DURATION):])

    @classmethod
    def of_group(cls, group: ShareGroupConfig,
                 max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS) -> ShareConfig:
        """The share partition's view of a share group's effective configuration."""
        return cls(lock_duration_ms=group.record_lock_duration_ms,
                   delivery_count_limit=group.delivery_count_limit,
                   auto_offset_reset=group.auto_offset_reset,
                   isolation_level=group.isolation_level, max_record_locks=max_record_locks)

    @property
    def read_committed(self) -> bool:
        """``share.isolation.level=read_committed``: a share partition acquires only below the
        last stable offset and archives the records of aborted transactions (the driver reads
        both from the partition log)."""
        return self.isolation_level == "read_committed"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ShareConfig:
        """From string properties (group configurations over broker ones); unknown keys are
        ignored, a bad value raises :class:`CoordinatorError` (INVALID_CONFIG)."""
        def num(key: str, default: int) -> int:
            raw = props.get(key)
            if raw is None:
                return default
            try:
                return int(raw)
            except ValueError:
                raise _bad(key, raw, "must be an integer") from None
        return cls(lock_duration_ms=num(LOCK_DURATION, DEFAULT_LOCK_DURATION_MS),
                   delivery_count_limit=num(DELIVERY_COUNT_LIMIT, DEFAULT_DELIVERY_COUNT_LIMIT),
                   auto_offset_reset=_reset(props.get(AUTO_OFFSET_RESET, "latest")),
                   isolation_level=props.get(ISOLATION_LEVEL, "read_uncommitted").lower(),
                   max_record_locks=num(MAX_RECORD_LOCKS, DEFAULT_MAX_RECORD_LOCKS))


def _reset(raw: str) -> str:
    lowered = raw.strip().lower()
    return raw.strip() if lowered.startswith(BY_DURATION) else lowered


def _bad(key: str, value: object, why: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.invalid_config, f"{key}={value!r}: {why}")
