"""Broker and dynamic group configurations (KIP-848 "Broker Configurations", "Group Configurations").

Broker configs use Kafka's broker names and are fixed for a coordinator's life. Group configs are
per-group overrides set through IncrementalAlterConfigs on the GROUP resource (type 16), stored
as GroupConfiguration records, bounded by the broker's min/max. Bad names, types or values are
INVALID_CONFIG with a message naming the config.

Share groups (KIP-932 "Configuration"): the broker's ``group.share.*`` settings and the group
configs ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``,
``share.record.lock.duration.ms``, ``share.delivery.count.limit``, ``share.auto.offset.reset``,
``share.isolation.level`` and ``share.assignment.interval.ms``, with Kafka 4.x's defaults and bounds
(Kafka's ``GroupCoordinatorConfig``, ``ShareGroupConfig`` and ``GroupConfig``): session 45 s
within [45 s, 60 s], heartbeat 5 s within [5 s, 15 s], lock duration 30 s within [15 s, 60 s],
delivery count limit 5 within [2, 10], assignment interval 1 s (0 or more), auto offset reset
``latest`` | ``earliest`` | ``by_duration:<ISO-8601 duration>`` (not negative), isolation level
``read_uncommitted`` | ``read_committed``. :class:`ShareGroupConfig` is a group's effective
share settings (``Shard.share_group_config``, ``CoordinatorRuntime.share_group_config``).

Choice recorded here: the spec names the dynamic group configs
``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms``; Kafka 4.x
ships them as ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``. We accept
both spellings and report the spec's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from groupcoord.protocol.errors import CoordinatorError, ErrorCode

INT32_MAX = 2**31 - 1


def _config_error(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.invalid_config, message)


@dataclass(slots=True, frozen=True)
class CoordinatorConfig:
    """Broker-level settings of the group coordinator, Kafka names in ``BROKER_NAMES``."""

    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_max_size: int = INT32_MAX
    #: ``group.consumer.assignment.interval.ms`` (Kafka 4.3's assignment batching, KIP-1263):
    #: a heartbeat that finds the group epoch ahead of the target computes a new target only
    #: when this long has passed since the last computation finished (Kafka stamps its end);
    #: the heartbeats in between reconcile members towards the current target. 0 computes at
    #: every epoch bump (Kafka before 4.3). Kafka 4.3's default, 1000; a group overrides it with
    #: the group config ``consumer.assignment.interval.ms``.
    consumer_assignment_interval_ms: int = 1_000
    #: ``group.consumer.regex.refresh.interval.ms`` (Kafka 4.1+, at least 10 s): a group's
    #: regular expressions are resolved again by the first heartbeat this long after their last
    #: resolution, even if no topic was created: what picks up a change of ACLs
    #: (``modern/consumer/handlers.py``, "Regular expressions").
    consumer_regex_refresh_interval_ms: int = 600_000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_migration_policy: str = "bidirectional"
    #: ``group.connect.migration.policy`` (the Connect draft; ours: upstream has no connect group type):
    #: online migration between classic groups of protocol type ``connect`` and connect groups,
    #: with the consumer policy's values (bidirectional, upgrade, downgrade, disabled).
    connect_migration_policy: str = "bidirectional"
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    # Classic groups (JoinGroup/SyncGroup): Kafka's group.min/max.session.timeout.ms,
    # group.initial.rebalance.delay.ms and group.max.size.
    classic_min_session_timeout_ms: int = 6_000
    classic_max_session_timeout_ms: int = 1_800_000
    classic_initial_rebalance_delay_ms: int = 3_000
    classic_max_size: int = INT32_MAX
    # Share groups (KIP-932): Kafka's group.share.* broker settings.
    share_session_timeout_ms: int = 45_000
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    share_heartbeat_interval_ms: int = 5_000
    share_min_heartbeat_interval_ms: int = 5_000
    share_max_heartbeat_interval_ms: int = 15_000
    share_record_lock_duration_ms: int = 30_000
    share_min_record_lock_duration_ms: int = 15_000
    share_max_record_lock_duration_ms: int = 60_000
    share_delivery_count_limit: int = 5
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    share_max_size: int = 200
    #: ``group.share.assignment.interval.ms`` (KIP-1263, as the consumer groups' one).
    share_assignment_interval_ms: int = 1_000
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.consumer_min_session_timeout_ms <= self.consumer_session_timeout_ms
                <= self.consumer_max_session_timeout_ms):
            raise _config_error(
                "group.consumer.session.timeout.ms must be within "
                "[group.consumer.min.session.timeout.ms, group.consumer.max.session.timeout.ms]")
        if not (self.consumer_min_heartbeat_interval_ms <= self.consumer_heartbeat_interval_ms
                <= self.consumer_max_heartbeat_interval_ms):
            raise _config_error(
                "group.consumer.heartbeat.interval.ms must be within "
                "[group.consumer.min.heartbeat.interval.ms, group.consumer.max.heartbeat.interval.ms]")
        if self.consumer_heartbeat_interval_ms >= self.consumer_session_timeout_ms:
            raise _config_error(
                "group.consumer.heartbeat.interval.ms must be lower than "
                "group.consumer.session.timeout.ms")
        if self.consumer_regex_refresh_interval_ms < MIN_REGEX_REFRESH_INTERVAL_MS:
            raise _config_error(f"group.consumer.regex.refresh.interval.ms must be at least "
                                f"{MIN_REGEX_REFRESH_INTERVAL_MS}")
        if not self.consumer_assignors:
            raise _config_error("group.consumer.assignors must name at least one assignor")
        if self.consumer_max_size < 1:
            raise _config_error("group.consumer.max.size must be at least 1")
        if self.consumer_migration_policy not in MIGRATION_POLICIES:
            raise _config_error(
                f"group.consumer.migration.policy must be one of {sorted(MIGRATION_POLICIES)}")
        if self.connect_migration_policy not in MIGRATION_POLICIES:
            raise _config_error(
                f"group.connect.migration.policy must be one of {sorted(MIGRATION_POLICIES)}")
        if self.classic_min_session_timeout_ms > self.classic_max_session_timeout_ms:
            raise _config_error(
                "group.min.session.timeout.ms must not be greater than group.max.session.timeout.ms")
        if self.classic_initial_rebalance_delay_ms < 0:
            raise _config_error("group.initial.rebalance.delay.ms must be at least 0")
        if self.classic_max_size < 1:
            raise _config_error("group.max.size must be at least 1")
        for name, low, value, high in (
                ("session.timeout.ms", self.share_min_session_timeout_ms,
                 self.share_session_timeout_ms, self.share_max_session_timeout_ms),
                ("heartbeat.interval.ms", self.share_min_heartbeat_interval_ms,
                 self.share_heartbeat_interval_ms, self.share_max_heartbeat_interval_ms),
                ("record.lock.duration.ms", self.share_min_record_lock_duration_ms,
                 self.share_record_lock_duration_ms, self.share_max_record_lock_duration_ms),
                ("delivery.count.limit", self.share_min_delivery_count_limit,
                 self.share_delivery_count_limit, self.share_max_delivery_count_limit)):
            if not low <= value <= high:
                raise _config_error(f"group.share.{name} must be within [group.share.min.{name}, "
                                    f"group.share.max.{name}]")
        if self.share_heartbeat_interval_ms >= self.share_session_timeout_ms:
            raise _config_error("group.share.heartbeat.interval.ms must be lower than "
                                "group.share.session.timeout.ms")
        if self.share_max_size < 1:
            raise _config_error("group.share.max.size must be at least 1")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> CoordinatorConfig:
        """Build from Kafka broker property names (``--config key=value``)."""
        kwargs: dict[str, Any] = {}
        extra: dict[str, str] = {}
        types = {f.name: f.type for f in fields(cls)}
        for name, raw in props.items():
            attr = BROKER_NAMES.get(name)
            if attr is None:
                extra[name] = raw
                continue
            kind = types[attr]
            if kind in ("int", int):
                # 0 is a legal assignment interval (a target at every epoch bump)
                kwargs[attr] = _parse_int(
                    name, raw, minimum=0 if attr in _ZERO_ALLOWED else 1)
            elif attr == "consumer_assignors":
                names = tuple(_short_assignor_name(s) for s in raw.split(",") if s.strip())
                kwargs[attr] = names
            elif attr in ("consumer_migration_policy", "connect_migration_policy"):
                kwargs[attr] = raw.strip().lower()
            else:
                kwargs[attr] = raw.strip()
        if "offsets.retention.minutes" in props:
            kwargs["offsets_retention_ms"] = _parse_int(
                "offsets.retention.minutes", props["offsets.retention.minutes"], minimum=1) * 60_000
            extra.pop("offsets.retention.minutes", None)
        if "group.initial.rebalance.delay.ms" in props:  # 0 is a legal value (no delay)
            kwargs["classic_initial_rebalance_delay_ms"] = _parse_int(
                "group.initial.rebalance.delay.ms", props["group.initial.rebalance.delay.ms"],
                minimum=0)
            extra.pop("group.initial.rebalance.delay.ms", None)
        return cls(**kwargs, extra=extra)

    def with_(self, **changes: Any) -> CoordinatorConfig:
        return replace(self, **changes)


#: Broker settings where 0 is legal (an assignment at every epoch bump).
_ZERO_ALLOWED = frozenset({"consumer_assignment_interval_ms", "share_assignment_interval_ms"})

MIGRATION_POLICIES = frozenset({"bidirectional", "upgrade", "downgrade", "disabled"})
#: Kafka's lower bound of ``group.consumer.regex.refresh.interval.ms``.
MIN_REGEX_REFRESH_INTERVAL_MS = 10_000

BROKER_NAMES: dict[str, str] = {
    "group.consumer.session.timeout.ms": "consumer_session_timeout_ms",
    "group.consumer.min.session.timeout.ms": "consumer_min_session_timeout_ms",
    "group.consumer.max.session.timeout.ms": "consumer_max_session_timeout_ms",
    "group.consumer.heartbeat.interval.ms": "consumer_heartbeat_interval_ms",
    "group.consumer.min.heartbeat.interval.ms": "consumer_min_heartbeat_interval_ms",
    "group.consumer.max.heartbeat.interval.ms": "consumer_max_heartbeat_interval_ms",
    "group.consumer.max.size": "consumer_max_size",
    "group.consumer.assignment.interval.ms": "consumer_assignment_interval_ms",
    "group.consumer.regex.refresh.interval.ms": "consumer_regex_refresh_interval_ms",
    "group.consumer.assignors": "consumer_assignors",
    "group.consumer.migration.policy": "consumer_migration_policy",
    "group.connect.migration.policy": "connect_migration_policy",
    "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
    "group.min.session.timeout.ms": "classic_min_session_timeout_ms",
    "group.max.session.timeout.ms": "classic_max_session_timeout_ms",
    "group.max.size": "classic_max_size",
    "group.share.session.timeout.ms": "share_session_timeout_ms",
    "group.share.min.session.timeout.ms": "share_min_session_timeout_ms",
    "group.share.max.session.timeout.ms": "share_max_session_timeout_ms",
    "group.share.heartbeat.interval.ms": "share_heartbeat_interval_ms",
    "group.share.min.heartbeat.interval.ms": "share_min_heartbeat_interval_ms",
    "group.share.max.heartbeat.interval.ms": "share_max_heartbeat_interval_ms",
    "group.share.record.lock.duration.ms": "share_record_lock_duration_ms",
    "group.share.min.record.lock.duration.ms": "share_min_record_lock_duration_ms",
    "group.share.max.record.lock.duration.ms": "share_max_record_lock_duration_ms",
    "group.share.delivery.count.limit": "share_delivery_count_limit",
    "group.share.min.delivery.count.limit": "share_min_delivery_count_limit",
    "group.share.max.delivery.count.limit": "share_max_delivery_count_limit",
    "group.share.max.size": "share_max_size",
    "group.share.assignment.interval.ms": "share_assignment_interval_ms",
}


def _short_assignor_name(raw: str) -> str:
    """Accept ``uniform`` or upstream's class names (``...UniformAssignor``)."""
    s = raw.strip()
    tail = s.rsplit(".", 1)[-1]
    lowered = tail.lower()
    for suffix in ("assignor",):
        if lowered.endswith(suffix) and lowered != suffix:
            lowered = lowered[: -len(suffix)]
    return lowered


def _parse_int(name: str, raw: str, minimum: int | None = None,
               maximum: int | None = None) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise _config_error(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise _config_error(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise _config_error(f"{name} must be at most {maximum}, got {value}")
    return value


# ----------------------------------------------------------------- dynamic group configs

SESSION_TIMEOUT = "group.consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "group.consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "group.consumer.assignment.interval.ms"

# Share groups (KIP-932): Kafka's names are the only ones.
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
SHARE_ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"
SHARE_GROUP_CONFIGS = (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL, SHARE_RECORD_LOCK_DURATION,
                       SHARE_DELIVERY_COUNT_LIMIT, SHARE_AUTO_OFFSET_RESET, SHARE_ISOLATION_LEVEL,
                       SHARE_ASSIGNMENT_INTERVAL)
#: The group configs whose values are strings (DescribeConfigs' ConfigType); the others are ints.
STRING_GROUP_CONFIGS = frozenset({SHARE_AUTO_OFFSET_RESET, SHARE_ISOLATION_LEVEL})
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")

GROUP_CONFIG_ALIASES: dict[str, str] = {
    **{name: name for name in SHARE_GROUP_CONFIGS},
    SESSION_TIMEOUT: SESSION_TIMEOUT,
    HEARTBEAT_INTERVAL: HEARTBEAT_INTERVAL,
    ASSIGNMENT_INTERVAL: ASSIGNMENT_INTERVAL,
    "consumer.session.timeout.ms": SESSION_TIMEOUT,
    "consumer.heartbeat.interval.ms": HEARTBEAT_INTERVAL,
    # KIP-1263's group config (Kafka 4.3): the group's own assignment interval.
    "consumer.assignment.interval.ms": ASSIGNMENT_INTERVAL,
}


@dataclass(slots=True, frozen=True)
class GroupConfig:
    """The effective session timeout, heartbeat interval and assignment interval of one
    group (its overrides, else the broker's settings)."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_interval_ms: int = 0


def canonical_group_config_name(name: str) -> str:
    canonical = GROUP_CONFIG_ALIASES.get(name)
    if canonical is None:
        raise _config_error(
            f"Unknown group config name: {name}. Known: {sorted(set(GROUP_CONFIG_ALIASES.values()))}")
    return canonical


def validate_group_configs(broker: CoordinatorConfig, configs: Mapping[str, str]) -> dict[str, str]:
    """Canonicalise and bound-check a whole set of group overrides; INVALID_CONFIG if bad."""
    out: dict[str, str] = {}
    for name, raw in configs.items():
        canonical = canonical_group_config_name(name)
        if canonical == SESSION_TIMEOUT:
            v = _parse_int(canonical, raw, broker.consumer_min_session_timeout_ms,
                           broker.consumer_max_session_timeout_ms)
        elif canonical in (ASSIGNMENT_INTERVAL, SHARE_ASSIGNMENT_INTERVAL):
            v = _parse_int(canonical, raw, 0)
        elif canonical in _SHARE_BOUNDS:
            low, high = _SHARE_BOUNDS[canonical]
            v = _parse_int(canonical, raw, getattr(broker, low), getattr(broker, high))
        elif canonical == SHARE_AUTO_OFFSET_RESET:
            out[canonical] = _auto_offset_reset(raw)
            continue
        elif canonical == SHARE_ISOLATION_LEVEL:
            if raw not in ISOLATION_LEVELS:
                raise _config_error(f"{canonical} must be one of {list(ISOLATION_LEVELS)}, "
                                    f"got {raw!r}")
            out[canonical] = raw
            continue
        else:
            v = _parse_int(canonical, raw, broker.consumer_min_heartbeat_interval_ms,
                           broker.consumer_max_heartbeat_interval_ms)
        out[canonical] = str(v)
    effective = effective_group_config(broker, out)
    if effective.heartbeat_interval_ms >= effective.session_timeout_ms:
        raise _config_error(f"{HEARTBEAT_INTERVAL} must be lower than {SESSION_TIMEOUT}")
    share = effective_share_group_config(broker, out)
    if share.heartbeat_interval_ms >= share.session_timeout_ms:
        raise _config_error(f"{SHARE_HEARTBEAT_INTERVAL} must be lower than {SHARE_SESSION_TIMEOUT}")
    return out


def effective_group_config(broker: CoordinatorConfig, overrides: Mapping[str, str]) -> GroupConfig:
    session = overrides.get(SESSION_TIMEOUT)
    interval = overrides.get(HEARTBEAT_INTERVAL)
    assignment = overrides.get(ASSIGNMENT_INTERVAL)
    return GroupConfig(
        int(session) if session is not None else broker.consumer_session_timeout_ms,
        int(interval) if interval is not None else broker.consumer_heartbeat_interval_ms,
        int(assignment) if assignment is not None else broker.consumer_assignment_interval_ms,
    )


# ----------------------------------------------------------------- share groups (KIP-932)

#: The share group configs bounded by broker settings: name -> (min attr, max attr).
_SHARE_BOUNDS: dict[str, tuple[str, str]] = {
    SHARE_SESSION_TIMEOUT: ("share_min_session_timeout_ms", "share_max_session_timeout_ms"),
    SHARE_HEARTBEAT_INTERVAL: ("share_min_heartbeat_interval_ms",
                               "share_max_heartbeat_interval_ms"),
    SHARE_RECORD_LOCK_DURATION: ("share_min_record_lock_duration_ms",
                                 "share_max_record_lock_duration_ms"),
    SHARE_DELIVERY_COUNT_LIMIT: ("share_min_delivery_count_limit",
                                 "share_max_delivery_count_limit"),
}

#: ISO-8601 durations as Java's ``Duration.parse`` reads them (``PnDTnHnMn.nS``), without a
#: sign: KIP-1106's ``by_duration:`` refuses negative durations.
_ISO_DURATION = re.compile(
    r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)
BY_DURATION = "by_duration:"


def parse_iso_duration_ms(text: str) -> int | None:
    """Milliseconds of a non-negative ISO-8601 duration (``PT1H30M``, ``P2D``, ``PT0.5S``), or
    None when ``text`` is not one (a bare ``P`` or ``PT`` is not one either)."""
    m = _ISO_DURATION.fullmatch(text)
    if m is None or text.upper() in ("P", "PT") or text.upper().endswith("T"):
        return None
    days, hours, minutes, seconds, fraction = m.groups()
    ms = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60_000
    ms += int(seconds or 0) * 1000 + int(((fraction or "") + "000")[:3])
    return ms


def _auto_offset_reset(raw: str) -> str:
    """``share.auto.offset.reset`` canonicalised (Kafka's ShareGroupAutoOffsetResetStrategy,
    KIP-1106): ``earliest``, ``latest`` (any case) or ``by_duration:<ISO-8601 duration>``."""
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("earliest", "latest"):
        return lowered
    if lowered.startswith(BY_DURATION):
        duration = value[len(BY_DURATION):].strip()
        if parse_iso_duration_ms(duration) is not None:
            return BY_DURATION + duration
        raise _config_error(f"{SHARE_AUTO_OFFSET_RESET}: {duration!r} is not a non-negative "
                            f"ISO-8601 duration (PnDTnHnMn.nS)")
    raise _config_error(f"{SHARE_AUTO_OFFSET_RESET} must be earliest, latest or "
                        f"by_duration:<ISO-8601 duration>, got {raw!r}")


@dataclass(slots=True, frozen=True)
class ShareGroupConfig:
    """One share group's effective settings (its group configs, else the broker's): what the
    share group coordinator uses (session timeout, heartbeat interval, assignment interval) and
    what the share partitions read per group (lock duration, delivery count limit, where a
    share partition starts, which records it delivers)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    #: ``latest``, ``earliest`` or ``by_duration:<ISO-8601 duration>``.
    auto_offset_reset: str = "latest"
    #: ``read_uncommitted`` or ``read_committed``.
    isolation_level: str = "read_uncommitted"
    assignment_interval_ms: int = 1_000

    @property
    def auto_offset_reset_duration_ms(self) -> int | None:
        """For ``by_duration:``, the duration in milliseconds (the share partition starts at the
        first record at or after now minus it); None for ``earliest`` and ``latest``."""
        if not self.auto_offset_reset.startswith(BY_DURATION):
            return None
        return parse_iso_duration_ms(self.auto_offset_reset[len(BY_DURATION):])

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"


def effective_share_group_config(broker: CoordinatorConfig,
                                 overrides: Mapping[str, str]) -> ShareGroupConfig:
    """A share group's settings: its overrides (validated when set), else the broker's."""
    def num(name: str, default: int) -> int:
        raw = overrides.get(name)
        return default if raw is None else int(raw)

    return ShareGroupConfig(
        num(SHARE_SESSION_TIMEOUT, broker.share_session_timeout_ms),
        num(SHARE_HEARTBEAT_INTERVAL, broker.share_heartbeat_interval_ms),
        num(SHARE_RECORD_LOCK_DURATION, broker.share_record_lock_duration_ms),
        num(SHARE_DELIVERY_COUNT_LIMIT, broker.share_delivery_count_limit),
        overrides.get(SHARE_AUTO_OFFSET_RESET, "latest"),
        overrides.get(SHARE_ISOLATION_LEVEL, "read_uncommitted"),
        num(SHARE_ASSIGNMENT_INTERVAL, broker.share_assignment_interval_ms),
    )
