"""The lab's metric catalog and the helpers its verdict tables share (``lab.verdict``).

:data:`CATALOG` names every metric the lab reports, with its unit, which way is better and its
floor (the smallest difference worth a word: below it two protocols tie); the work model's
application metrics (stall, lag, paused partition time, records processed twice, task
restarts, task downtime, time until balanced) come first, then the coordination's (resource
downtime, time to converge, resources moved). A spec's grid may name the metrics its question
is about (``metrics = [...]``, checked against :data:`BY_COLUMN`).

The helpers: :func:`work_value` and :func:`with_work_parameters` read a run's workload
parameters (a column, else the ``work`` overrides), :func:`sweep_parameter` finds the numeric
parameter a grid sweeps across its workloads (the processing time per record, say), and
:func:`reproduce` prints the ``lab run`` command that reruns cells of a spec with the same
seeds. Plain Python over row dicts (no Spark, no pandas).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Time until balanced counted from the scenario's last event (a bounced worker's return, the
#: second of two connector changes) rather than from its first: a column the report derives
#: (``lab.mechanism.attach_balance_after_last``), not one of the ``runs`` table.
BALANCE_AFTER_LAST = "balance_after_last_ms"


@dataclass(slots=True, frozen=True)
class Metric:
    """A metric column: how to name it, its unit after dividing by ``scale``, which way is
    better."""

    column: str
    label: str
    unit: str
    scale: float = 1.0
    lower_is_better: bool = True
    #: The smallest difference (in the column's own unit) worth a sentence: below it two
    #: protocols tie (a 20 ms stall is a heartbeat's jitter, not a finding).
    floor: float = 0.0

    def fmt(self, raw: float | None) -> str:
        if raw is None:
            return "-"
        return f"{_num(raw / self.scale)}{(' ' + self.unit) if self.unit else ''}"


#: Every metric the lab reports, in the order tables and charts take them (the application's
#: view first: what a user of the group sees; then the coordinator's).
CATALOG: tuple[Metric, ...] = (
    Metric("stall_ms", "stall time (whole group processing nothing)", "s", 1000.0,
           floor=250.0),
    Metric("lag_peak", "peak consumer lag", "records", floor=10.0),
    Metric("lag_record_s", "lag integral", "record·s", floor=100.0),
    Metric("paused_partition_s", "paused partition time (owned, not processing)",
           "partition·s", floor=1.0),
    Metric("records_reprocessed", "records processed twice", "records", floor=10.0),
    Metric("task_restarts", "task restarts", "", floor=1.0),
    Metric("task_downtime_task_s", "task downtime (tasks not running)", "task·s", floor=1.0),
    Metric("time_to_balance_ms", "time until balanced", "s", 1000.0, floor=250.0),
    Metric("worker_stall_ms", "worker stall (revocation until its tasks run again)", "s",
           1000.0, floor=250.0),
    # the same moment counted from the scenario's last event (``lab.mechanism``): what a
    # Connect grid shows, so that neither a gap between two events nor a worker's absence
    # is in it
    Metric(BALANCE_AFTER_LAST, "time until balanced after the last event", "s", 1000.0,
           floor=250.0),
    Metric("resource_downtime_ms", "resource downtime (no active owner)", "resource·s",
           1000.0, floor=1000.0),
    Metric("convergence_ms", "time to converge", "s", 1000.0, floor=250.0),
    Metric("resources_moved", "partitions or tasks moved", "", floor=1.0),
    Metric("records_processed", "records processed", "records", lower_is_better=False,
           floor=100.0),
)
BY_COLUMN: dict[str, Metric] = {m.column: m for m in CATALOG}

#: Numeric run parameters a grid may sweep across its workloads, in the order they are looked
#: for; the first that varies is the verdict table's row order and the charts' x axis.
#: (Not the workload's ``warmup_ms``: ``runs`` has a column of that name, the lab's warm-up
#: before the first disturbance, which differs between sizes and is no swept parameter.)
#: ``busy_pct`` is derived (:func:`busy_pct`): the members' load, swept where a grid's
#: workloads change the production rate at one processing time and one size.
SWEEP_PARAMETERS: tuple[str, ...] = ("processing_ms", "busy_pct", "records_per_s",
                                     "max_poll_records", "commit_latency_ms", "task_start_ms",
                                     "metadata_max_age_ms")


def busy_pct(row: Mapping[str, Any]) -> float | None:
    """A consumer run's members' load in steady state: the share of a member's time spent
    processing (production rate per partition x partitions / members x processing time per
    record), in percent, rounded to a whole percent; None where a part is unknown."""
    rate, proc = work_value(row, "records_per_s"), work_value(row, "processing_ms")
    parts, members = row.get("total_partitions"), row.get("members") or row.get("size")
    if rate is None or proc is None or not parts or not members:
        return None
    return float(round(100.0 * rate * float(parts) / float(members) * proc / 1000.0))

def _num(v: float) -> str:
    """Three significant digits, no exponent for the magnitudes a run produces."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    if a >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def number(v: float) -> str:
    """A metric's value as the report prints it: three significant digits, thousands
    separated, no exponent."""
    return _num(v)


def family(protocol: str) -> str:
    """``classic``, ``consumer``, ``connect`` or ``classic-connect`` (the label's name)."""
    return protocol.partition(":")[0]


#: What each protocol family is, in the field's words (the report's first page and the charts'
#: legend say it). ``connect`` is this project's connect group type (the Connect draft), which
#: Apache Kafka does not ship: Connect as shipped runs its workers in classic groups
#: (``classic-connect``).
FAMILY_NAMES: dict[str, str] = {
    "classic": "classic consumer group protocol (JoinGroup/SyncGroup, the leader assigns; "
               "variant: the rebalance protocol, with the assignor the Java client pairs with "
               "it: eager with range, cooperative with cooperative-sticky)",
    "consumer": "KIP-848 consumer group protocol (the coordinator assigns; variant: its "
                "server-side assignor)",
    "classic-connect": "Connect as shipped (classic group protocol)",
    "share": "KIP-932 share group (production-ready since Kafka 4.2; the model follows Kafka "
             "4.3's group coordinator, as the consumer groups beside it: the members of a "
             "partition all fetch it, each record acquired by one member at a time under a "
             "lock, acknowledged one by one)",
    "connect": "Connect on the connect group type (this project's, not in Apache Kafka)",
}
#: Variants that are not a family's usual pairing, said where a table has them.
VARIANT_NAMES: dict[str, str] = {
    "classic:eager-roundrobin": "eager with roundrobin (the Java client's RoundRobinAssignor, "
                                "balanced across topics, where range assigns each topic on "
                                "its own)",
}
#: The assignor behind each classic consumer protocol label (the Java client's pairing: eager
#: with range, cooperative with cooperative-sticky; ``eager-roundrobin``: eager with
#: roundrobin); a KIP-848 label's variant is its server-side assignor.
CLASSIC_ASSIGNORS: dict[str, str] = {"eager": "range", "eager-roundrobin": "roundrobin",
                                     "cooperative": "cooperative-sticky"}
#: The heartbeat setting per family, under Kafka's names (the runs' ``settings_json``).
HEARTBEAT_SETTING: dict[str, tuple[str, ...]] = {
    "classic": ("heartbeat.interval.ms",),
    "consumer": ("group.consumer.heartbeat.interval.ms", "heartbeat.interval.ms"),
    "classic-connect": ("heartbeat.interval.ms",), "connect": ("heartbeat.interval.ms",)}


def full_name(protocol: str, settings: Mapping[str, Any] | None = None) -> str:
    """A consumer protocol named with what decides its results beside the protocol: its
    assignor and its heartbeat (``classic:eager (range, 3 s heartbeat)``,
    ``consumer:uniform@hb3s (uniform, 3 s heartbeat)``), from the runs' settings; other
    labels, and rows without settings, as they are."""
    base = protocol.partition("@")[0]
    fam, _, variant = base.partition(":")
    if fam == "classic":
        assignor = CLASSIC_ASSIGNORS.get(variant)
    elif fam == "consumer":
        assignor = variant or None
    else:
        return protocol
    for k in HEARTBEAT_SETTING.get(fam, ()):
        v = (settings or {}).get(k)
        if isinstance(v, int | float):
            hb = f"{number(float(v) / 1000.0)} s heartbeat"
            return f"{protocol} ({assignor}, {hb})" if assignor else f"{protocol} ({hb})"
    return protocol  # (rows without their settings: the label alone)


#: Families Apache Kafka ships; the verdict tables rank these against each other only.
#: (Share groups, KIP-932, are production-ready since Kafka 4.2: ranked with the others, so a
#: grid with two consumer columns, a timing variant beside its default, still ranks the share
#: group's.)
SHIPPED_FAMILIES = frozenset({"classic", "consumer", "classic-connect", "share"})


@dataclass(slots=True, frozen=True)
class KafkaChange:
    """A change to Apache Kafka's Connect ``IncrementalCooperativeAssignor`` that the lab's
    Connect model follows (``client.connect.assignors``): its ticket, pull request, the first
    releases that ship it (from the apache/kafka repository's tags) and what it does."""

    ticket: str
    pull: int
    releases: str
    behaviour: str


#: The Kafka behaviour the classic-connect rows model, newest last. From the apache/kafka
#: snapshot read for this (4.0.0-SNAPSHOT, October 2024) the assignor's behaviour has not
#: changed since the last of these (later commits to it reformat only); Kafka 4.1 to 4.3 were
#: not read.
CONNECT_KAFKA_CHANGES: tuple[KafkaChange, ...] = (
    KafkaChange("KAFKA-10413", 9319, "2.8.0",
                "workers that join at the same time all get a share of the lost and new "
                "tasks"),
    KafkaChange("KAFKA-12495", 12561, "3.4.0",
                "back-to-back joins: a revoking rebalance right after another may revoke "
                "again after an exponential backoff (1 ms x 40^n, at most the delay), where "
                "before it the later worker stayed without tasks until some other rebalance"),
    KafkaChange("KAFKA-15693", 14647, "3.7.0, 3.6.1 and 3.5.2",
                "scheduled.rebalance.max.delay.ms = 0 reassigns a departed worker's tasks at "
                "once; before it a delay of 0 read as no scheduled rebalance, and the lost "
                "tasks waited for some unrelated rebalance"),
)


def connect_kafka_text() -> str:
    """Which Kafka version's Connect behaviour the classic-connect rows model, from
    :data:`CONNECT_KAFKA_CHANGES` (one place: the page never types a version elsewhere)."""
    newest = CONNECT_KAFKA_CHANGES[-1]
    first = newest.releases.split(",")[0].strip()
    changes = "; ".join(f"{c.ticket} (apache/kafka PR {c.pull}, Kafka {c.releases}): "
                        f"{c.behaviour}" for c in CONNECT_KAFKA_CHANGES)
    return (f"Kafka version modelled: the classic-connect rows follow Apache Kafka's "
            f"IncrementalCooperativeAssignor as of Kafka {first} and later (unchanged through "
            f"the 4.0 source read; 4.1 to 4.3 not read), with {changes}. On a Kafka without "
            f"{newest.ticket} (before {newest.releases} on their branches) the -d0 rows do "
            f"not hold: there a departed worker's tasks wait for some unrelated rebalance")


def shipped(protocol: str) -> bool:
    """Whether Apache Kafka ships the protocol (the connect group type it does not)."""
    return family(protocol) in SHIPPED_FAMILIES


def run_settings(row: Mapping[str, Any]) -> dict[str, Any]:
    """A run's effective settings (its ``settings_json`` column), {} where it has none."""
    try:
        d = json.loads(str(row.get("settings_json") or "{}"))
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def work_value(row: Mapping[str, Any], key: str) -> float | None:
    """A workload parameter of a run: its own column, else the workload's overrides (the
    ``work`` column, JSON). A distribution counts as its mean (``uniform``: the middle)."""
    v = row.get(key)
    if v is None and row.get("work"):
        try:
            v = json.loads(str(row["work"])).get(key)
        except (ValueError, AttributeError):
            v = None
    if isinstance(v, Mapping):
        if "mean" in v:
            v = v["mean"]
        elif "min" in v and "max" in v:
            v = (float(v["min"]) + float(v["max"])) / 2
        else:
            v = None
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def with_work_parameters(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with each of :data:`SWEEP_PARAMETERS` as a column (from ``work``)."""
    out = []
    for r in rows:
        d = dict(r)
        for key in SWEEP_PARAMETERS:
            if d.get(key) is None:
                v = busy_pct(r) if key == "busy_pct" else work_value(r, key)
                if v is not None:
                    d[key] = v
        out.append(d)
    return out


def sweep_parameter(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The first of :data:`SWEEP_PARAMETERS` that takes several values in ``rows`` (the load,
    ``busy_pct``, only where the rows share one size: across sizes it follows the size).

    None where two of the workload's own parameters vary together (the load, ``busy_pct``,
    follows from them and is not one): such workloads are different workloads, not a sweep, and
    an axis named after one of their parameters would credit it with what the other did (the
    share lock-rate grid's 80 and 300 records/s workloads differ in rate and in processing time).
    """
    sizes = {r.get("size") or r.get("members") for r in rows}
    varying = [col for col in SWEEP_PARAMETERS if col != "busy_pct"
               and len({r.get(col) for r in rows if r.get(col) is not None}) > 1]
    if len(varying) > 1:
        return None
    for col in SWEEP_PARAMETERS:
        if col == "busy_pct" and len(sizes) > 1:
            continue
        values = {r.get(col) for r in rows if r.get(col) is not None}
        if len(values) > 1 and all(isinstance(v, int | float) for v in values):
            return col
    return None


def reproduce(spec: str, scenario: str, size: int | Sequence[int] | None = None,
              workload: str | None = None, protocols: Sequence[str] = ()) -> str:
    """The ``lab run`` that reruns just these cells of the spec (same seeds, same rows);
    ``size`` one size or several (``--size`` once each)."""
    parts = ["groupcoord", "lab", "run", "--spec", spec, "--scenario", scenario]
    for n in ([size] if isinstance(size, int) else size or ()):
        parts += ["--size", str(n)]
    if workload is not None:
        parts += ["--workload", workload]
    for p in protocols:
        parts += ["--protocol", p]
    parts += ["--out", "DIR"]
    return " ".join(shlex.quote(p) for p in parts)


#: How a swept parameter reads in a sentence: its name, and its unit after a value.
X_NAMES: dict[str, tuple[str, str]] = {
    "processing_ms": ("the processing time per record", " ms"),
    "busy_pct": ("the members' load", " % busy"),
    "records_per_s": ("the production rate per partition", " records/s"),
    "max_poll_records": ("max.poll.records", ""),
    "commit_latency_ms": ("the commit latency", " ms"),
    "warmup_ms": ("the warm-up per partition", " ms"),
    # the grids that sweep it sweep the stop time with it, equal (``lab.spec``'s paper spec)
    "task_start_ms": ("the task stop and start time (each, swept together)", " ms"),
    "metadata_max_age_ms": ("metadata.max.age.ms", " ms"),
    # timings a grid sweeps across every protocol (``lab.verdict.swept_timing``)
    "heartbeat_spread_ms": ("the members' heartbeat spread after a join", " ms"),
    "heartbeat_interval_ms": ("the heartbeat interval", " ms"),
    "session_timeout_ms": ("the session timeout", " ms"),
    "commit_interval_ms": ("the auto-commit interval", " ms"),
}

__all__ = [
    "BALANCE_AFTER_LAST",
    "BY_COLUMN",
    "CATALOG",
    "CONNECT_KAFKA_CHANGES",
    "FAMILY_NAMES",
    "SHIPPED_FAMILIES",
    "SWEEP_PARAMETERS",
    "X_NAMES",
    "KafkaChange",
    "Metric",
    "busy_pct",
    "connect_kafka_text",
    "family",
    "number",
    "reproduce",
    "run_settings",
    "shipped",
    "sweep_parameter",
    "with_work_parameters",
    "work_value",
]
