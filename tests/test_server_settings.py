"""The ``--config`` registry (``server/settings.py``) and the record log's durability chosen
from ``serve`` (``--durability``, docs/durability-and-metrics.md)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest

from groupcoord.server.app import KafkaServer
from groupcoord.server.limits import Limits
from groupcoord.server.settings import (
    KAFKA_IGNORED,
    SETTINGS,
    ConfigError,
    check_properties,
)

from .conftest import start_server


def test_unknown_key_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown config 'max.conections'; did you mean "
                                          r"'max.connections'\?"):
        check_properties({"max.conections": "3"})
    with pytest.raises(ConfigError,
                       match="unknown config 'zzz'; groupcoord takes Kafka's broker config names"):
        check_properties({"zzz": "1"})
    with pytest.raises(ConfigError, match=re.escape("did you mean 'group.consumer.session.timeout.ms'")):
        KafkaServer(port=0, storage="memory", properties={"group.consumer.sesion.timeout.ms": "1"})


@pytest.mark.parametrize("key, value, message", [
    ("max.connections", "x", "max.connections must be an integer, got 'x'"),
    ("max.connections", "-1", "max.connections must be at least 0, got -1"),
    ("socket.request.max.bytes", "0", "socket.request.max.bytes must be at least 1"),
    ("connections.max.idle.ms", "1.5", "connections.max.idle.ms must be an integer"),
    ("group.max.size", "0", "group.max.size must be at least 1"),
    ("auto.create.topics.enable", "yes", "auto.create.topics.enable must be true or false"),
    ("num.partitions", "many", "num.partitions must be an integer, got 'many'"),
])
def test_bad_values_are_refused_naming_key_and_value(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_properties({key: value})


def test_kafka_configs_without_effect_are_accepted_with_a_warning() -> None:
    assert "log.retention.hours" in KAFKA_IGNORED
    warnings = check_properties({"log.retention.hours": "168", "num.io.threads": "8",
                                 "max.connections": "10"})
    assert warnings == ["Kafka broker configs without effect here, ignored: "
                        "log.retention.hours, num.io.threads"]


def test_security_configs_are_registered_and_take_effect_without_a_warning() -> None:
    """Every key the security layer reads is registered (an unknown-key check would refuse it
    otherwise) and accepted without a warning; Kafka's security keys it does not read are
    accepted with the "without effect" warning."""
    from groupcoord.server.security.config import CONFIG_KEYS, CONFIG_PREFIXES

    assert set(SETTINGS) >= CONFIG_KEYS
    for key in (*CONFIG_KEYS, "super.users", "listener.name.sasl_ssl.plain.sasl.jaas.config"):
        assert key in SETTINGS or key.startswith(CONFIG_PREFIXES)
        assert check_properties({key: "100" if key.endswith(".ms") else "x"}) == []
    assert check_properties({"allow.everyone.if.no.acl.found": "true"}) == []
    warnings = check_properties({"ssl.keystore.password": "pw", "security.inter.broker.protocol":
                                 "SSL"})
    assert len(warnings) == 1 and "ssl.keystore.password" in warnings[0]
    assert check_properties({}) == []


def test_every_key_the_server_reads_is_registered() -> None:
    """The owners' names (coordinator, compaction, apis, limits) are all in the registry, with
    defaults that pass their own check."""
    from groupcoord.coordinator.config import BROKER_NAMES
    from groupcoord.server import compaction

    for name in [*BROKER_NAMES, compaction.INTERVAL_CONFIG, compaction.RETENTION_CONFIG,
                 "auto.create.topics.enable", "num.partitions", "offsets.retention.minutes",
                 "group.initial.rebalance.delay.ms"]:
        assert name in SETTINGS, name
    assert check_properties({s.name: s.default for s in SETTINGS.values()
                             if s.default}) == []


def test_limits_from_properties() -> None:
    lim = Limits.from_properties({"max.connections": "7", "max.connections.per.ip": "0",
                                  "max.connections.per.ip.overrides": "127.0.0.1:3, ::1:2",
                                  "connections.max.idle.ms": "-1"})
    assert (lim.max_connections, lim.max_connections_per_ip) == (7, 0)
    assert lim.per_ip_overrides == {"127.0.0.1": 3, "::1": 2}
    assert lim.idle_ms == -1
    defaults = Limits.from_properties({})
    assert (defaults.idle_ms, defaults.max_request_bytes,
            defaults.queued_max_request_bytes) == (600_000, 104_857_600, 104_857_600)
    with pytest.raises(ConfigError, match=re.escape("can be 0 only if max.connections.per.ip.overrides")):
        Limits.from_properties({"max.connections.per.ip": "0"})
    with pytest.raises(ConfigError, match="'h' is not host:count"):
        Limits.from_properties({"max.connections.per.ip.overrides": "h"})


def test_offsets_topic_num_partitions_sets_the_shards() -> None:
    assert KafkaServer(port=0, storage="memory",
                       properties={"offsets.topic.num.partitions": "4"}).num_shards == 4
    assert KafkaServer(port=0, storage="memory", shards=2,
                       properties={"offsets.topic.num.partitions": "4"}).num_shards == 2


# ------------------------------------------------------------------ durability


def _synchronous(server: KafkaServer) -> int:
    conn = getattr(server._log, "_conn", None)
    assert isinstance(conn, sqlite3.Connection)
    (value,) = conn.execute("PRAGMA synchronous").fetchone()
    return int(value)


@pytest.mark.parametrize("durability, pragma", [(None, 1), ("normal", 1), ("full", 2),
                                                ("off", 0)])
def test_durability_reaches_the_sqlite_log(tmp_path: Path, durability: str | None,
                                           pragma: int) -> None:
    async def run() -> int:
        server = KafkaServer(port=0, data_dir=tmp_path / "d", storage="sqlite",
                             durability=durability)
        await server.start()
        try:
            return _synchronous(server)
        finally:
            await server.stop()

    assert asyncio.run(run()) == pragma


def test_serve_durability_flag(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "data", "--storage", "sqlite", "--durability", "full")
    try:
        assert "(durability=full," in srv.stderr()
    finally:
        srv.stop()
