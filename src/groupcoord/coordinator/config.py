"""Broker and dynamic group configurations (KIP-848 "Broker Configurations", "Group Configurations").

Broker configs use Kafka's broker names and are fixed for a coordinator's life. Group configs are
per-group overrides set through IncrementalAlterConfigs on the GROUP resource (type 16), stored
as GroupConfiguration records, bounded by the broker's min/max. Bad names, types or values are
INVALID_CONFIG with a message naming the config.

Choice recorded here: the spec names the dynamic group configs
``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms``; Kafka 4.x
ships them as ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``. We accept
both spellings and report the spec's.
"""

from __future__ import annotations

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
                    name, raw, minimum=0 if attr == "consumer_assignment_interval_ms" else 1)
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

GROUP_CONFIG_ALIASES: dict[str, str] = {
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
        elif canonical == ASSIGNMENT_INTERVAL:
            v = _parse_int(canonical, raw, 0)
        else:
            v = _parse_int(canonical, raw, broker.consumer_min_heartbeat_interval_ms,
                           broker.consumer_max_heartbeat_interval_ms)
        out[canonical] = str(v)
    effective = effective_group_config(broker, out)
    if effective.heartbeat_interval_ms >= effective.session_timeout_ms:
        raise _config_error(f"{HEARTBEAT_INTERVAL} must be lower than {SESSION_TIMEOUT}")
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
