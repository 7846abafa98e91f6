"""The broker configs of the transaction coordinator, Kafka's names and defaults.

- ``transaction.max.timeout.ms`` (900000): InitProducerId with a larger
  ``transaction.timeout.ms`` gets INVALID_TRANSACTION_TIMEOUT.
- ``transactional.id.expiration.ms`` (604800000, 7 days): an id with no transaction open and no
  request for this long is removed (a tombstone in the transaction log).
- ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10000): how often Kafka looks
  for timed-out transactions. Here a timed-out transaction's deadline is exact (timers as data),
  so this is only the upper bound of how late a driver may check.
- ``transaction.remove.expired.transaction.cleanup.interval.ms`` (3600000): how often expired
  ids are looked for.
- ``transaction.state.log.num.partitions`` (50): partitions of the transaction log; a
  transactional id lives in ``abs(hashCode) % partitions`` (Kafka's ``partitionFor``), which
  FindCoordinator with several brokers reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.protocol.errors import CoordinatorError, ErrorCode

__all__ = ["TransactionConfig"]

NAMES = {
    "transaction.max.timeout.ms": "max_timeout_ms",
    "transactional.id.expiration.ms": "id_expiration_ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "abort_check_interval_ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "expire_check_interval_ms",
    "transaction.state.log.num.partitions": "partitions",
}


@dataclass(slots=True, frozen=True)
class TransactionConfig:
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    abort_check_interval_ms: int = 10_000
    expire_check_interval_ms: int = 3_600_000
    partitions: int = 50

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TransactionConfig:
        """The configs ``props`` sets (others default); INVALID_CONFIG naming a bad value."""
        values: dict[str, int] = {}
        for name, attr in NAMES.items():
            if name not in props:
                continue
            try:
                n = int(str(props[name]).strip())
            except ValueError:
                raise CoordinatorError(ErrorCode.invalid_config,
                                       f"config {name}: not an integer: {props[name]!r}") from None
            if n < 1:
                raise CoordinatorError(ErrorCode.invalid_config,
                                       f"config {name}: must be at least 1, got {n}")
            values[attr] = n
        return cls(**values)
