"""Share group configurations (KIP-932 "Configuration"): the broker's ``group.share.*``
settings and the group configs ``share.*`` with Kafka 4.x's defaults and bounds, set through
the GROUP resource's configs and read per group by share partitions
(``Shard.share_group_config``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.coordinator.config import (
    CoordinatorConfig,
    ShareGroupConfig,
    parse_iso_duration_ms,
)
from groupcoord.coordinator.messages import AlterGroupConfigOp, AlterGroupConfigsRequest
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image

E = ErrorCode


def alter(c: Client, group: str, *ops: tuple[str, str, str | None]):
    return c.handle(AlterGroupConfigsRequest(
        group, tuple(AlterGroupConfigOp(n, op, v) for n, op, v in ops), False))


def test_defaults_are_kafkas() -> None:
    cfg = Shard().share_group_config("g")
    assert cfg == ShareGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000,
                                   record_lock_duration_ms=30_000, delivery_count_limit=5,
                                   auto_offset_reset="latest", isolation_level="read_uncommitted",
                                   assignment_interval_ms=1_000)
    assert cfg.auto_offset_reset_duration_ms is None and not cfg.read_committed


def test_broker_settings_are_the_defaults_of_every_group() -> None:
    config = CoordinatorConfig.from_properties({
        "group.share.record.lock.duration.ms": "20000", "group.share.delivery.count.limit": "3",
        "group.share.session.timeout.ms": "50000", "group.share.assignment.interval.ms": "0"})
    cfg = Shard(config=config).share_group_config("g")
    assert (cfg.record_lock_duration_ms, cfg.delivery_count_limit, cfg.session_timeout_ms,
            cfg.assignment_interval_ms) == (20_000, 3, 50_000, 0)


@pytest.mark.parametrize("props", [
    {"group.share.record.lock.duration.ms": "10000"},  # below group.share.min.record.lock...
    {"group.share.delivery.count.limit": "11"},        # above group.share.max.delivery.count.limit
    {"group.share.heartbeat.interval.ms": "4000"},
    {"group.share.max.size": "0"},
])
def test_broker_settings_out_of_bounds_are_invalid_config(props: dict[str, str]) -> None:
    from groupcoord.protocol.errors import CoordinatorError
    with pytest.raises(CoordinatorError) as e:
        CoordinatorConfig.from_properties(props)
    assert e.value.code == E.invalid_config


def test_group_overrides_are_read_per_group_and_replayed() -> None:
    shard = Shard(metadata=image(foo=1))
    c = Client(shard)
    r = alter(c, "g", ("share.record.lock.duration.ms", "set", "15000"),
              ("share.delivery.count.limit", "set", "2"),
              ("share.auto.offset.reset", "set", "EARLIEST"),
              ("share.isolation.level", "set", "read_committed"))
    assert r.error_code == 0, r.error_message
    cfg = shard.share_group_config("g")
    assert (cfg.record_lock_duration_ms, cfg.delivery_count_limit, cfg.auto_offset_reset,
            cfg.isolation_level, cfg.read_committed) == (15_000, 2, "earliest", "read_committed",
                                                         True)
    assert shard.share_group_config("other") == ShareGroupConfig()
    rebuilt = Shard(metadata=image(foo=1))
    rebuilt.replay_all(Record.decode(*rec.encode()) for rec in c.records)
    assert rebuilt.share_group_config("g") == cfg
    # deleting the override goes back to the broker's value
    assert alter(c, "g", ("share.delivery.count.limit", "delete", None)).error_code == 0
    assert shard.share_group_config("g").delivery_count_limit == 5


def test_by_duration_reset() -> None:
    shard = Shard()
    c = Client(shard)
    assert alter(c, "g", ("share.auto.offset.reset", "set", "by_duration:PT1H30M")).error_code == 0
    cfg = shard.share_group_config("g")
    assert cfg.auto_offset_reset == "by_duration:PT1H30M"
    assert cfg.auto_offset_reset_duration_ms == 90 * 60_000


@pytest.mark.parametrize("name,value", [
    ("share.session.timeout.ms", "44999"), ("share.session.timeout.ms", "60001"),
    ("share.heartbeat.interval.ms", "4999"), ("share.heartbeat.interval.ms", "15001"),
    ("share.record.lock.duration.ms", "14999"), ("share.record.lock.duration.ms", "60001"),
    ("share.delivery.count.limit", "1"), ("share.delivery.count.limit", "11"),
    ("share.assignment.interval.ms", "-1"),
    ("share.auto.offset.reset", "none"), ("share.auto.offset.reset", "by_duration:-PT1H"),
    ("share.auto.offset.reset", "by_duration:PT"), ("share.auto.offset.reset", "by_duration:1h"),
    ("share.isolation.level", "READ_COMMITTED"), ("share.isolation.level", "serializable"),
    ("share.delivery.count.limit", "five"),
])
def test_out_of_bounds_or_malformed_is_invalid_config(name: str, value: str) -> None:
    shard = Shard()
    r = alter(Client(shard), "g", (name, "set", value))
    assert r.error_code == E.invalid_config and r.error_message and name in r.error_message
    assert "g" not in shard.group_configs


def test_heartbeat_not_below_session_is_invalid_config() -> None:
    shard = Shard(config=CoordinatorConfig(share_max_heartbeat_interval_ms=60_000))
    r = alter(Client(shard), "g", ("share.heartbeat.interval.ms", "set", "45000"))
    assert r.error_code == E.invalid_config


@given(st.integers(0, 30), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
       st.integers(0, 999))
def test_iso_durations_read_as_javas_duration_parse(d: int, h: int, m: int, s: int,
                                                   ms: int) -> None:
    text = f"P{d}DT{h}H{m}M{s}.{ms:03d}S"
    assert parse_iso_duration_ms(text) == (((d * 24 + h) * 60 + m) * 60 + s) * 1000 + ms
    assert parse_iso_duration_ms(text.lower()) == parse_iso_duration_ms(text)
