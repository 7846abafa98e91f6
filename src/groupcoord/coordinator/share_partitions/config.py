"""The configurations a share partition reads (KIP-932 "Configuration").

Group configurations (dynamic, per share group): ``share.record.lock.duration.ms`` (how long an
acquisition lock lasts, default 30 s), ``share.delivery.count.limit`` (a record released or timed
out at this many deliveries is archived, default 5), ``share.auto.offset.reset`` (``latest``,
the default, or ``earliest``: where a share partition starts when it is initialised),
``share.isolation.level`` (``read_uncommitted``, the default; ``read_committed`` needs the last
stable offset of transactional partitions, see :attr:`ShareConfig.read_committed`).

Broker configuration: ``group.share.partition.max.record.locks`` (Kafka's default 2000): the
in-flight window of a share partition, from its start offset, never spans more offsets than this,
so no more records than this are acquired at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
        if self.auto_offset_reset not in ("latest", "earliest"):
            raise _bad(AUTO_OFFSET_RESET, self.auto_offset_reset, "must be latest or earliest")
        if self.isolation_level not in ("read_uncommitted", "read_committed"):
            raise _bad(ISOLATION_LEVEL, self.isolation_level,
                       "must be read_uncommitted or read_committed")
        if self.max_record_locks <= 0:
            raise _bad(MAX_RECORD_LOCKS, self.max_record_locks, "must be > 0")

    @property
    def read_committed(self) -> bool:
        """``share.isolation.level=read_committed``: a share partition must then acquire only
        below the last stable offset and skip aborted transactions. The partition logs have no
        transactions yet, so the driver reads up to the high watermark either way; the bound to
        read to is the one seam where the last stable offset goes."""
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
                   auto_offset_reset=props.get(AUTO_OFFSET_RESET, "latest").lower(),
                   isolation_level=props.get(ISOLATION_LEVEL, "read_uncommitted").lower(),
                   max_record_locks=num(MAX_RECORD_LOCKS, DEFAULT_MAX_RECORD_LOCKS))


def _bad(key: str, value: object, why: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.invalid_config, f"{key}={value!r}: {why}")
