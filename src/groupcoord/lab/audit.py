"""The audit job: what a real coordinator's record log says about its groups (docs/lab.md).

``groupcoord lab audit DATA_DIR --out DIR`` reads the record log of a ``groupcoord serve
--storage sqlite`` data directory and computes, per group: rebalances (group epoch bumps; a
classic group's generations) and their rate over the time the log covers, epochs, member
churn and assignment movement. Tables, as Parquet::

    DIR/audit/records/   one row per decoded record (a classic group's metadata record also
                         gives one row per member, with the member's decoded assignment)
    DIR/audit/groups/    one row per group: the figures below
    DIR/audit/epochs/    one row per rebalance: group, epoch, append time, members then
    DIR/audit/audit.json the log's figures (shards, entries, compaction gaps)

and a section of ``DIR/report/index.html``.

**Reading the log.** The SQLite log is opened *read-only* through
``storage.sqlite.SqliteLogSnapshot`` (its own connection, ``mode=ro``, one read
transaction), so the audit sees one consistent snapshot of every shard, never takes the data
directory's lock (``groupcoord.lock``, which the server holds) and never blocks the server's
appends (WAL readers do not block the writer): it works on a stopped server's directory and on
a running one. The application id and schema version
are checked as the log itself checks them. It reads the append time of every entry
(``read_with_times``), which dates the rebalances. Records are decoded with
``coordinator.records.Record.decode``.

**Per group** (records in log order; ``group_metrics``):

- ``rebalances``: group epoch bumps (records of the group's metadata whose epoch is above the
  previous one; the group's creation at epoch 1 counts) or a classic group's new generations;
  ``rebalances_per_hour`` over the group's span (first to last record; null under a second);
- ``group_epoch``, ``assignment_epoch`` (the last target assignment epoch), ``max_member_epoch``;
- churn: ``members_joined`` (a member id's metadata written while it was not a member),
  ``members_left`` (its tombstone, or absence from the next classic generation), ``members_now``,
  ``max_members``, ``distinct_members``;
- movement: ``target_updates`` (target assignment records of a member), ``resources_assigned``
  (partitions, connectors or tasks added to a member's target), ``resources_moved`` (of those,
  the ones another member held last: an owner change);
- ``offset_commits`` and ``deleted`` (the group's metadata was tombstoned last).

A compacted log has lost superseded records, so its history is partial: ``audit.json`` and
the report say which shards have gaps in their offsets.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupcoord.coordinator.records import (
    ClassicGroupMetadataValue,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataValue,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    MemberKey,
    OffsetCommitKey,
    Record,
    RecordType,
)
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment
from groupcoord.storage.log import LogError
from groupcoord.storage.sqlite import SqliteLogSnapshot

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class AuditError(Exception):
    """The data directory has no readable record log; the message says why."""


# --------------------------------------------------------------------------- reading the log


@dataclass(slots=True, frozen=True)
class LogEntry:
    shard: int
    offset: int
    ts_ms: int
    key: bytes
    value: bytes | None


@dataclass(slots=True)
class LogSnapshot:
    """Every entry of every shard, read in one transaction."""

    path: str
    entries: list[LogEntry]
    shards: dict[int, dict[str, int | None]] = field(default_factory=dict)

    def gaps(self) -> list[int]:
        """Shards whose offsets are not contiguous (compacted: history is missing)."""
        out = []
        for shard, s in self.shards.items():
            first, last, n = s["first_offset"], s["last_offset"], s["entries"]
            if first is not None and last is not None and n is not None and (
                    first != 1 or last - first + 1 != n):
                out.append(shard)
        return out


def read_log(data_dir: str | Path) -> LogSnapshot:
    """Read a sqlite record log read-only, every shard at one instant (see the module
    docstring and :class:`groupcoord.storage.sqlite.SqliteLogSnapshot`)."""
    try:
        with SqliteLogSnapshot(data_dir) as log:
            snapshot = LogSnapshot(log.path, [])
            for shard in log.shards():
                n = 0
                first = last = None
                for offset, ts, key, value in log.read_with_times(shard):
                    snapshot.entries.append(LogEntry(shard, offset, ts, key, value))
                    first = offset if first is None else first
                    last = offset
                    n += 1
                snapshot.shards[shard] = {"entries": n, "first_offset": first,
                                          "last_offset": last}
            return snapshot
    except LogError as e:
        raise AuditError(str(e)) from e


# --------------------------------------------------------------------------- decoding

#: Record family of each record type: which kind of group it belongs to.
FAMILY: dict[RecordType, str] = {
    RecordType.OFFSET_COMMIT: "offsets",
    RecordType.GROUP_CONFIGURATION: "config",
    RecordType.CLASSIC_GROUP_METADATA: "classic",
    **{t: "consumer" for t in RecordType if t.name.startswith("CONSUMER_GROUP_")},
    **{t: "connect" for t in RecordType if t.name.startswith("CONNECT_GROUP_")},
}

#: The record kind of a classic group member's row (one per member of a metadata record).
CLASSIC_MEMBER = "CLASSIC_GROUP_MEMBER_ASSIGNMENT"

RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("shard", "int"), ("offset", "long"), ("sub", "int"), ("ts_ms", "long"), ("group_id", "str"),
    ("family", "str"), ("record", "str"), ("member_id", "str"), ("tombstone", "bool"),
    ("epoch", "long"), ("resources", "str_list"), ("members", "str_list"),
)


def _partitions(a: Mapping[Any, Iterable[int]]) -> list[str]:
    return sorted(f"{t}:{p}" for t, ps in a.items() for p in ps)


def _connect_items(a: Mapping[str, Iterable[int]]) -> list[str]:
    return sorted(c if t == -1 else f"{c}/{t}" for c, ts in a.items() for t in ts)


def _classic_assignment(protocol_type: str, raw: bytes) -> list[str] | None:
    """A classic consumer's assignment (ConsumerProtocolAssignment) as ``topic:partition``;
    None for other protocol types or bytes that do not decode."""
    if protocol_type != "consumer" or len(raw) < 2:
        return None
    try:
        assignment = decode_assignment(raw)
    except ConsumerProtocolError:  # the classic group code validated it when it ran
        return None
    return sorted(f"{t}:{p}" for t, ps in assignment.partitions.items() for p in ps)


def decode_entry(e: LogEntry) -> list[dict[str, Any]]:
    """The record rows of one log entry (usually one; a classic group metadata record gives
    one row for the group and one per member)."""
    rec = Record.decode(e.key, e.value)
    key = rec.key
    base: dict[str, Any] = {"shard": e.shard, "offset": e.offset, "sub": 0, "ts_ms": e.ts_ms,
                            "group_id": key.group_id, "family": FAMILY.get(key.type, "other"),
                            "record": key.type.name, "member_id": None,
                            "tombstone": rec.value is None, "epoch": None, "resources": None,
                            "members": None}
    if isinstance(key, MemberKey):
        base["member_id"] = key.member_id
    elif isinstance(key, OffsetCommitKey):
        base["resources"] = [f"{key.topic}:{key.partition}"]
    v = rec.value
    rows = [base]
    if isinstance(v, ConsumerGroupMetadataValue | ConnectGroupMetadataValue):
        base["epoch"] = v.epoch
    elif isinstance(v, ConsumerGroupTargetAssignmentMetadataValue |
                    ConnectGroupTargetAssignmentMetadataValue):
        base["epoch"] = v.assignment_epoch
    elif isinstance(v, ConsumerGroupTargetAssignmentMemberValue):
        base["resources"] = _partitions(v.partitions)
    elif isinstance(v, ConnectGroupTargetAssignmentMemberValue):
        base["resources"] = _connect_items(v.items)
    elif isinstance(v, ConsumerGroupCurrentMemberAssignmentValue):
        base["epoch"] = v.member_epoch
        base["resources"] = _partitions(v.assigned_partitions)
    elif isinstance(v, ConnectGroupCurrentMemberAssignmentValue):
        base["epoch"] = v.member_epoch
        base["resources"] = _connect_items(v.assigned)
    elif isinstance(v, ClassicGroupMetadataValue):
        base["epoch"] = v.generation
        base["members"] = [m.member_id for m in v.members]
        for i, m in enumerate(v.members, start=1):
            rows.append({**base, "sub": i, "record": CLASSIC_MEMBER, "member_id": m.member_id,
                         "members": None, "resources":
                         _classic_assignment(v.protocol_type, m.assignment)})
    return rows


def decode_entries(entries: Iterable[LogEntry]) -> Iterator[dict[str, Any]]:
    for e in entries:
        yield from decode_entry(e)


# --------------------------------------------------------------------------- per group

GROUP_FIELDS: tuple[tuple[str, str], ...] = (
    ("group_id", "str"), ("group_type", "str"), ("shard", "int"), ("records", "long"),
    ("first_ts_ms", "long"), ("last_ts_ms", "long"), ("span_s", "double"),
    ("group_epoch", "long"), ("rebalances", "long"), ("rebalances_per_hour", "double"),
    ("assignment_epoch", "long"), ("max_member_epoch", "long"),
    ("members_joined", "long"), ("members_left", "long"), ("members_now", "long"),
    ("max_members", "long"), ("distinct_members", "long"),
    ("target_updates", "long"), ("resources_assigned", "long"), ("resources_moved", "long"),
    ("offset_commits", "long"), ("deleted", "bool"),
)

_GROUP_META = {"CONSUMER_GROUP_METADATA", "CONNECT_GROUP_METADATA"}
_MEMBER_META = {"CONSUMER_GROUP_MEMBER_METADATA", "CONNECT_GROUP_MEMBER_METADATA"}
_TARGET_MEMBER = {"CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
                  "CONNECT_GROUP_TARGET_ASSIGNMENT_MEMBER"}
_TARGET_META = {"CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
                "CONNECT_GROUP_TARGET_ASSIGNMENT_METADATA"}
_CURRENT = {"CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "CONNECT_GROUP_CURRENT_MEMBER_ASSIGNMENT"}


def _order(row: Mapping[str, Any]) -> tuple[int, int, int]:
    return (int(row["shard"]), int(row["offset"]), int(row["sub"]))


class _Movement:
    """Targets per member and the last owner of every resource."""

    def __init__(self) -> None:
        self.targets: dict[str, frozenset[str]] = {}
        self.last_owner: dict[str, str] = {}
        self.updates = 0
        self.assigned = 0
        self.moved = 0

    def set(self, member: str, resources: Iterable[str] | None) -> None:
        new = frozenset(resources or ())
        old = self.targets.get(member, frozenset())
        if resources is None:
            self.targets.pop(member, None)
        else:
            self.targets[member] = new
            self.updates += 1
        for r in sorted(new - old):
            self.assigned += 1
            prev = self.last_owner.get(r)
            if prev is not None and prev != member:
                self.moved += 1
            self.last_owner[r] = member


def group_metrics(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures of one group (see the module docstring) from its record rows."""
    ordered = sorted(rows, key=_order)
    if not ordered:
        raise ValueError("group_metrics needs at least one record")
    group_id = str(ordered[0]["group_id"])
    families = [r["family"] for r in ordered if r["family"] in ("consumer", "connect", "classic")]
    group_type = families[-1] if families else "offsets-only"
    epoch = prev_epoch = 0
    rebalances = 0
    assignment_epoch: int | None = None
    max_member_epoch: int | None = None
    members: set[str] = set()
    seen: set[str] = set()
    joined = left = max_members = commits = 0
    deleted = False
    move = _Movement()

    def join(m: str) -> None:
        nonlocal joined, max_members
        if m not in members:
            members.add(m)
            seen.add(m)
            joined += 1
            max_members = max(max_members, len(members))

    def leave(m: str) -> None:
        nonlocal left
        if m in members:
            members.discard(m)
            left += 1

    for r in ordered:
        rec = r["record"]
        tomb = bool(r["tombstone"])
        e = r["epoch"]
        if rec in _GROUP_META or rec == "CLASSIC_GROUP_METADATA":
            deleted = tomb
            value = 0 if tomb or e is None else int(e)  # a re-created group starts again
            if not tomb and value > prev_epoch:
                rebalances += 1
            prev_epoch = value
            if not tomb:
                epoch = value
            if rec == "CLASSIC_GROUP_METADATA" and not tomb:
                now = set(r["members"] if r["members"] is not None else ())
                for m in sorted(members - now):
                    leave(m)
                    move.set(m, None)
                for m in sorted(now):
                    join(m)
            elif rec == "CLASSIC_GROUP_METADATA":
                for m in sorted(members):
                    leave(m)
                    move.set(m, None)
        elif rec == CLASSIC_MEMBER:
            if r["resources"] is not None:
                move.set(str(r["member_id"]), list(r["resources"]))
        elif rec in _MEMBER_META:
            (leave if tomb else join)(str(r["member_id"]))
        elif rec in _TARGET_MEMBER:
            move.set(str(r["member_id"]), None if tomb else list(r["resources"] or ()))
        elif rec in _TARGET_META and not tomb and e is not None:
            assignment_epoch = int(e)
        elif rec in _CURRENT and not tomb and e is not None:
            max_member_epoch = max(int(e), max_member_epoch or 0)
        elif rec == "OFFSET_COMMIT" and not tomb:
            commits += 1
    first = int(ordered[0]["ts_ms"])
    last = int(ordered[-1]["ts_ms"])
    span_s = (last - first) / 1000.0
    return {
        "group_id": group_id, "group_type": group_type, "shard": int(ordered[0]["shard"]),
        "records": len({(int(r["shard"]), int(r["offset"])) for r in ordered}),
        "first_ts_ms": first, "last_ts_ms": last, "span_s": span_s,
        "group_epoch": epoch, "rebalances": rebalances,
        "rebalances_per_hour": rebalances * 3600.0 / span_s if span_s >= 1.0 else None,
        "assignment_epoch": assignment_epoch, "max_member_epoch": max_member_epoch,
        "members_joined": joined, "members_left": left, "members_now": len(members),
        "max_members": max_members, "distinct_members": len(seen),
        "target_updates": move.updates, "resources_assigned": move.assigned,
        "resources_moved": move.moved, "offset_commits": commits, "deleted": deleted,
    }


def epoch_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pure-Python twin of the epochs SQL (for tests): one row per rebalance."""
    out = []
    prev: dict[str, int] = {}
    for r in sorted(rows, key=_order):
        if r["record"] not in _GROUP_META | {"CLASSIC_GROUP_METADATA"}:
            continue
        g = str(r["group_id"])
        e = 0 if r["tombstone"] or r["epoch"] is None else int(r["epoch"])
        if not r["tombstone"] and e > prev.get(g, 0):
            out.append({"group_id": g, "epoch": e, "ts_ms": int(r["ts_ms"])})
        prev[g] = e
    return out


# --------------------------------------------------------------------------- the Spark job


def _entries_table(entries: list[LogEntry]) -> pa.Table:
    """The raw entries as an Arrow table (Spark takes it without pickling row by row)."""
    import pyarrow as pa

    return pa.table({
        "shard": pa.array([e.shard for e in entries], pa.int32()),
        "offset": pa.array([e.offset for e in entries], pa.int64()),
        "ts_ms": pa.array([e.ts_ms for e in entries], pa.int64()),
        "key": pa.array([e.key for e in entries], pa.binary()),
        "value": pa.array([e.value for e in entries], pa.binary()),
    })


def _decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: raw log entries in, decoded record rows out (on the executors)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from groupcoord.lab.schema import struct

    schema = to_arrow_schema(struct(RECORD_FIELDS))
    for batch in batches:
        entries = [LogEntry(r["shard"], r["offset"], r["ts_ms"], r["key"], r["value"])
                   for r in batch.to_pylist()]
        rows = list(decode_entries(entries))
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _group_frame(pdf: Any) -> Any:
    """``applyInPandas``: one group's record rows in, its one-row figures out."""
    import pandas as pd

    records = pdf.to_dict("records")
    for r in records:
        for col in ("resources", "members"):
            v = r[col]
            r[col] = None if v is None else [str(x) for x in v]
        e = r["epoch"]
        r["epoch"] = None if e is None or e != e else int(e)  # pandas turns a null into NaN
    return pd.DataFrame([group_metrics(records)], columns=[n for n, _ in GROUP_FIELDS])


#: One row per rebalance: a group metadata record whose epoch is above the group's previous
#: metadata record (0 after a tombstone: a deleted group starts again).
EPOCHS_SQL = """
SELECT group_id, family AS group_type, shard, offset, ts_ms, epoch
FROM (
  SELECT *, coalesce(lag(CASE WHEN tombstone THEN 0 ELSE epoch END)
                       OVER (PARTITION BY group_id ORDER BY shard, offset), 0) AS prev_epoch
  FROM audit_records
  WHERE sub = 0 AND record IN ('CONSUMER_GROUP_METADATA', 'CONNECT_GROUP_METADATA',
                               'CLASSIC_GROUP_METADATA')
)
WHERE NOT tombstone AND epoch > prev_epoch
ORDER BY group_id, shard, offset
"""


@dataclass(slots=True)
class AuditOutcome:
    out_dir: Path
    log_path: str
    entries: int
    groups: list[dict[str, Any]]
    gaps: list[int]
    wall_s: float
    report: Path | None = None


def run_audit(spark: SparkSession, data_dir: str | Path, out_dir: str | Path, *,
              report: bool = True, echo: Callable[[str], None] | None = None) -> AuditOutcome:
    """Read the log, decode it on the executors, compute the tables, write them (and the
    report)."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from groupcoord.lab.schema import struct

    t0 = time.monotonic()
    snap = read_log(data_dir)
    out = Path(out_dir) / "audit"
    out.mkdir(parents=True, exist_ok=True)
    log.info("audit %s: %d entries in %d shards", snap.path, len(snap.entries), len(snap.shards))
    raw_schema = StructType([StructField("shard", IntegerType(), False),
                             StructField("offset", LongType(), False),
                             StructField("ts_ms", LongType(), False),
                             StructField("key", BinaryType(), False),
                             StructField("value", BinaryType(), True)])
    parallelism = spark.sparkContext.defaultParallelism
    raw = spark.createDataFrame(_entries_table(snap.entries), raw_schema)
    raw = raw.repartition(max(1, min(parallelism * 4, len(snap.entries) // 5000 + 1)))
    records = raw.mapInArrow(_decode_batches, struct(RECORD_FIELDS)).cache()
    try:
        records.createOrReplaceTempView("audit_records")
        (records.coalesce(1).sortWithinPartitions("shard", "offset", "sub")
         .write.mode("overwrite").parquet(str(out / "records")))
        groups = (records.where("group_id IS NOT NULL").groupBy("group_id")
                  .applyInPandas(_group_frame, struct(GROUP_FIELDS)))
        groups = groups.coalesce(1).sortWithinPartitions("group_id")
        groups.write.mode("overwrite").parquet(str(out / "groups"))
        epochs = spark.sql(EPOCHS_SQL)
        epochs.coalesce(1).write.mode("overwrite").parquet(str(out / "epochs"))
        group_rows = [r.asDict() for r in spark.read.parquet(str(out / "groups"))
                      .orderBy("group_id").collect()]
    finally:
        records.unpersist()
    meta = {"data_dir": str(data_dir), "log": snap.path, "entries": len(snap.entries),
            "shards": {str(k): v for k, v in snap.shards.items()}, "compacted_shards": snap.gaps(),
            "groups": len(group_rows), "read_at_ms": int(time.time() * 1000)}
    (out / "audit.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    outcome = AuditOutcome(Path(out_dir), snap.path, len(snap.entries), group_rows, snap.gaps(),
                           time.monotonic() - t0)
    if report:
        from groupcoord.lab.report import build_report

        outcome.report = build_report(Path(out_dir))
    return outcome
