"""The broker's ``--config KEY=VALUE`` keys: one registry of every name ``serve`` knows
(docs/configuration.md lists them with their defaults).

A key is one of:

- **used**: it changes what the broker does; its value is checked here (an integer where an
  integer is meant, within its bounds; a boolean is ``true`` or ``false``) and read by the module
  that owns the behaviour (``coordinator/config.py``, ``server/compaction.py``,
  ``server/limits.py``, ``server/apis/``). The owners may check more (a value relative to
  another one).
- **ignored**: a Kafka broker config that makes no sense here (replication, KRaft, Kafka's own
  log segments, thread pools). **Accepted with one warning listing them**, not refused: a
  ``server.properties`` written for Kafka then starts, and the warning says what was not applied.

Any other key is refused: :func:`check_properties` raises :class:`ConfigError`, one line naming
the key and the closest known name (``difflib``), which ``serve`` prints with exit status 2, so
a typo (``max.conections``) never goes unnoticed. A bad value is refused the same way, naming
the key and the value.

To add a key: one :func:`_add` line below (or one name in :data:`KAFKA_IGNORED`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.server.partition_files import default_max_open_files

__all__ = ["KAFKA_IGNORED", "SETTINGS", "ConfigError", "Setting", "check_properties",
           "get_bool", "get_int", "known_names"]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A ``--config`` key or value the broker refuses; the message is one line."""


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    #: ``int`` (Kafka's int and long), ``bool``, ``str`` or ``list`` (comma-separated).
    kind: str
    #: Kafka's default (ours where we differ; the docs say so), as Kafka writes it.
    default: str
    #: Where its behaviour lives.
    owner: str
    minimum: int | None = None
    maximum: int | None = None


SETTINGS: dict[str, Setting] = {}


def _add(name: str, kind: str, default: str, owner: str, minimum: int | None = None,
         maximum: int | None = None) -> None:
    SETTINGS[name] = Setting(name, kind, default, owner, minimum, maximum)


# -- group coordinator (coordinator/config.py; KIP-848 "Broker Configurations")
_add("group.consumer.session.timeout.ms", "int", "45000", "coordinator", 1)
_add("group.consumer.min.session.timeout.ms", "int", "45000", "coordinator", 1)
_add("group.consumer.max.session.timeout.ms", "int", "60000", "coordinator", 1)
_add("group.consumer.heartbeat.interval.ms", "int", "5000", "coordinator", 1)
_add("group.consumer.min.heartbeat.interval.ms", "int", "5000", "coordinator", 1)
_add("group.consumer.max.heartbeat.interval.ms", "int", "15000", "coordinator", 1)
_add("group.consumer.max.size", "int", str(INT32_MAX), "coordinator", 1)
_add("group.consumer.assignors", "list", "uniform,range", "coordinator")
_add("group.consumer.assignment.interval.ms", "int", "1000", "coordinator", 0)
_add("group.consumer.regex.refresh.interval.ms", "int", "600000", "coordinator", 10_000)
_add("group.consumer.migration.policy", "str", "bidirectional", "coordinator")
_add("group.connect.migration.policy", "str", "bidirectional", "coordinator")
# -- share groups (coordinator/config.py; KIP-932 "Configuration", Kafka 4.x's defaults)
_add("group.share.session.timeout.ms", "int", "45000", "coordinator", 1)
_add("group.share.min.session.timeout.ms", "int", "45000", "coordinator", 1)
_add("group.share.max.session.timeout.ms", "int", "60000", "coordinator", 1)
_add("group.share.heartbeat.interval.ms", "int", "5000", "coordinator", 1)
_add("group.share.min.heartbeat.interval.ms", "int", "5000", "coordinator", 1)
_add("group.share.max.heartbeat.interval.ms", "int", "15000", "coordinator", 1)
_add("group.share.record.lock.duration.ms", "int", "30000", "coordinator", 1000, 3_600_000)
_add("group.share.min.record.lock.duration.ms", "int", "15000", "coordinator", 1000, 30_000)
_add("group.share.max.record.lock.duration.ms", "int", "60000", "coordinator", 30_000, 3_600_000)
_add("group.share.delivery.count.limit", "int", "5", "coordinator", 2, 10)
_add("group.share.min.delivery.count.limit", "int", "2", "coordinator", 2, 5)
_add("group.share.max.delivery.count.limit", "int", "10", "coordinator", 5, 25)
_add("group.share.max.size", "int", "200", "coordinator", 1, 1000)
_add("group.share.assignment.interval.ms", "int", "1000", "coordinator", 0)
_add("offsets.retention.minutes", "int", "10080", "coordinator", 1)
_add("offsets.retention.check.interval.ms", "int", "600000", "coordinator", 1)
_add("group.min.session.timeout.ms", "int", "6000", "coordinator", 1)
_add("group.max.session.timeout.ms", "int", "1800000", "coordinator", 1)
_add("group.initial.rebalance.delay.ms", "int", "3000", "coordinator", 0)
_add("group.max.size", "int", str(INT32_MAX), "coordinator", 1)
# share partitions (KIP-932; server/share_partitions.py, server/share_sessions.py)
_add("group.share.partition.max.record.locks", "int", "2000", "server/share_partitions", 100, 4000)
_add("group.share.max.share.sessions", "int", "2000", "server/share_sessions", 1)
_add("offsets.topic.num.partitions", "int", "50", "server/app.py (--shards)", 1)
# -- transaction coordinator (transactions/config.py; KIP-98)
_add("transaction.max.timeout.ms", "int", "900000", "transactions", 1)
_add("transactional.id.expiration.ms", "int", "604800000", "transactions", 1)
_add("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", "10000",
     "transactions", 1)
_add("transaction.remove.expired.transaction.cleanup.interval.ms", "int", "3600000",
     "transactions", 1)
_add("transaction.state.log.num.partitions", "int", "50", "transactions", 1)
# -- record log compaction (server/compaction.py)
_add("log.compaction.interval.ms", "int", "300000", "compaction", 0)
_add("log.cleaner.delete.retention.ms", "int", "86400000", "compaction", -1)
# -- topics (server/apis/metadata.py, server/apis/topics.py)
_add("auto.create.topics.enable", "bool", "false", "apis")
_add("num.partitions", "int", "1", "apis", 1)
# -- the data plane (server/apis/produce_fetch.py): the most a Fetch response holds
_add("fetch.max.bytes", "int", "57671680", "apis", 1024)
# -- partition data (server/partition_files.py): a groupcoord setting, Kafka has none; its
#    default is a quarter of ``ulimit -n`` (8 to 1,024), computed here for this process
_add("groupcoord.partition.max.open.files", "int", str(default_max_open_files()), "partition_files",
     1)
# -- connections and requests (server/limits.py)
_add("max.connections", "int", str(INT32_MAX), "limits", 0)
_add("max.connections.per.ip", "int", str(INT32_MAX), "limits", 0)
_add("max.connections.per.ip.overrides", "str", "", "limits")
_add("connections.max.idle.ms", "int", "600000", "limits", -1)
_add("socket.request.max.bytes", "int", "104857600", "limits", 1)
_add("queued.max.request.bytes", "int", "104857600", "limits", -1)

# -- security (server/security/, docs/security.md and docs/acls.md): listeners, TLS, SASL, ACLs
for _name, _kind, _default in (
        ("listeners", "list", "PLAINTEXT://127.0.0.1:9092"),
        ("advertised.listeners", "list", ""),
        ("listener.security.protocol.map", "list", ""),
        ("ssl.keystore.location", "str", ""), ("ssl.keystore.type", "str", "PEM"),
        ("ssl.key.password", "str", ""),
        ("ssl.keystore.certificate.chain", "str", ""), ("ssl.keystore.key", "str", ""),
        ("ssl.truststore.location", "str", ""), ("ssl.truststore.type", "str", "PEM"),
        ("ssl.truststore.certificates", "str", ""),
        ("ssl.client.auth", "str", "none"), ("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3"),
        ("sasl.enabled.mechanisms", "list", "SCRAM-SHA-256,SCRAM-SHA-512"),
        ("connection.failed.authentication.delay.ms", "int", "100"),
        ("super.users", "str", ""), ("allow.everyone.if.no.acl.found", "bool", "")):
    _add(_name, _kind, _default, "security")

#: Kafka's per-listener overrides (``listener.name.sasl_ssl.ssl.keystore.location``), read by
#: ``server/security/config.py``.
SECURITY_PREFIXES = ("listener.name.",)

#: Kafka broker configs with no meaning here: accepted with one warning (module doc). The
#: security ones among them: inter-broker settings (there is no other broker), JKS passwords (PEM
#: only), pluggable classes, KIP-368 re-authentication (a session lasts as long as its
#: connection), ciphers and TLS versions beyond ``ssl.enabled.protocols``.
KAFKA_IGNORED = frozenset({
    "security.inter.broker.protocol", "sasl.mechanism.inter.broker.protocol",
    "ssl.keystore.password", "ssl.truststore.password", "ssl.protocol", "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm", "connections.max.reauth.ms",
    "authorizer.class.name", "principal.builder.class",
    "broker.id", "node.id", "process.roles", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "controller.listener.names",
    "inter.broker.listener.name", "zookeeper.connect", "zookeeper.connection.timeout.ms",
    "broker.rack", "log.dir", "log.dirs", "metadata.log.dir", "num.network.threads",
    "num.io.threads", "background.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes", "socket.listen.backlog.size", "queued.max.requests",
    "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
    "offsets.load.buffer.size", "offsets.commit.timeout.ms", "offset.metadata.max.bytes",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "producer.id.expiration.ms", "default.replication.factor", "min.insync.replicas",
    "replica.lag.time.max.ms", "replica.fetch.max.bytes", "unclean.leader.election.enable",
    "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
    "delete.topic.enable", "log.retention.hours", "log.retention.minutes", "log.retention.ms",
    "log.retention.bytes", "log.retention.check.interval.ms", "log.segment.bytes",
    "log.roll.hours", "log.roll.ms", "log.flush.interval.messages", "log.flush.interval.ms",
    "log.cleaner.enable", "log.cleaner.threads", "log.cleanup.policy", "log.index.size.max.bytes",
    "log.message.format.version", "inter.broker.protocol.version", "compression.type",
    "message.max.bytes", "request.timeout.ms", "metric.reporters", "metrics.num.samples",
    "metrics.sample.window.ms", "metrics.recording.level", "group.coordinator.threads",
    "group.coordinator.new.enable", "group.coordinator.rebalance.protocols",
    "share.coordinator.state.topic.replication.factor", "quota.window.num",
    "quota.window.size.seconds", "replica.socket.timeout.ms", "controlled.shutdown.enable",
    "unstable.api.versions.enable", "unstable.feature.versions.enable",
})


def known_names() -> list[str]:
    """Every name :func:`check_properties` accepts (for the closest-name hint)."""
    return sorted(set(SETTINGS) | KAFKA_IGNORED)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    group = name.split(".")[0] + "."
    same = [k for k in known_names() if k.startswith(group)]
    if same and len(same) <= 12:
        return f"; the known {group}* keys: {', '.join(same)}"
    prefixes = sorted({k.split(".")[0] for k in SETTINGS})
    return (f"; groupcoord takes Kafka's broker config names (beginning "
            f"{', '.join(p + '.' for p in prefixes)})")


def _check_value(s: Setting, raw: str) -> None:
    value = raw.strip()
    if s.kind == "int":
        try:
            n = int(value)
        except ValueError:
            raise ConfigError(f"config {s.name} must be an integer, got {raw!r}") from None
        if s.minimum is not None and n < s.minimum:
            raise ConfigError(f"config {s.name} must be at least {s.minimum}, got {n}")
        upper = INT64_MAX if s.maximum is None else s.maximum
        if n > upper:
            raise ConfigError(f"config {s.name} must be at most {upper}, got {n}")
    elif s.kind == "bool" and value.lower() not in ("true", "false"):
        raise ConfigError(f"config {s.name} must be true or false, got {raw!r}")


def check_properties(props: Mapping[str, str]) -> list[str]:
    """Refuse an unknown key or a bad value (:class:`ConfigError`, one line); return one line
    of warning per kind of key accepted without effect (module doc), empty if none."""
    ignored: list[str] = []
    for name, raw in props.items():
        s = SETTINGS.get(name)
        if s is not None:
            _check_value(s, raw)
        elif name.startswith(SECURITY_PREFIXES):
            pass
        elif name in KAFKA_IGNORED:
            ignored.append(name)
        else:
            raise ConfigError(f"unknown config {name!r}{_suggest(name)}")
    warnings = []
    if ignored:
        warnings.append(f"Kafka broker configs without effect here, ignored: "
                        f"{', '.join(sorted(ignored))}")
    return warnings


def get_int(props: Mapping[str, str], name: str) -> int:
    """``name``'s value, else its default; call after :func:`check_properties`."""
    raw = props.get(name)
    return int((SETTINGS[name].default if raw is None else raw).strip())


def get_bool(props: Mapping[str, str], name: str) -> bool:
    raw = props.get(name)
    return (SETTINGS[name].default if raw is None else raw).strip().lower() == "true"
