"""The report from tables written without Spark: violations with their commands, audit-only
directories, and the audit's per-group figures on hand-made records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.lab.aggregate import aggregate_columns
from groupcoord.lab.audit import epoch_rows, group_metrics
from groupcoord.lab.report import build_report


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path / "part-0.parquet")


def _agg(protocol: str, size: int, downtime: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(aggregate_columns(), 1.0)
    row.update(protocol=protocol, scenario="crash", size=size, workload="scenario",
               fault_rate=0.0, runs=3, ok_runs=3, violations=0, converged_runs=3)
    row.update(resource_downtime_ms_p50=downtime, resource_downtime_ms_p95=downtime * 1.5)
    return row


def test_report_lists_violations_with_their_commands(tmp_path: Path) -> None:
    (tmp_path / "sweep.json").write_text(json.dumps({
        "name": "t", "spec": "t.toml", "runs": 6, "cells": 4, "sim_s": 1.0,
        "protocols": ["consumer:range", "consumer:uniform"], "master": "local[2]"}))
    _write(tmp_path / "aggregates", [_agg(p, s, 1000.0 * s) for p in ("consumer:range",
                                                                        "consumer:uniform")
                                     for s in (3, 6)])
    cmd = "groupcoord lab rerun --scenario crash --protocol consumer:range --seed 5 --size 6"
    _write(tmp_path / "violations" / "protocol=consumer%3Arange" / "scenario=crash", [{
        "run_id": "abc", "size": 6, "seed": 5, "invariant": "I1", "message": "p0 <held> twice",
        "command": cmd, "trace": ["1 2 x"]}])
    index = build_report(tmp_path).read_text()
    assert "Invariant violations: <span class='bad'>1</span>" in index
    assert cmd in index and "p0 &lt;held&gt; twice" in index  # escaped
    assert "consumer:range" in index  # the partition value, URI-decoded
    assert sorted(p.name for p in (tmp_path / "report").glob("*.png")) == [
        "crash__scenario__0.0.png", "overview.png"]
    md = (tmp_path / "report" / "summary.md").read_text()
    assert f"reproduce with: `{cmd}`" in md and "**I1**" in md


def test_an_empty_directory_still_renders(tmp_path: Path) -> None:
    assert "No lab tables" in build_report(tmp_path).read_text()


def _rec(offset: int, record: str, ts: int, member: str | None = None, epoch: int | None = None,
         resources: list[str] | None = None, tombstone: bool = False) -> dict[str, Any]:
    return {"shard": 0, "offset": offset, "sub": 0, "ts_ms": ts, "group_id": "g",
            "family": "consumer", "record": record, "member_id": member, "tombstone": tombstone,
            "epoch": epoch, "resources": resources, "members": None}


def test_group_metrics_follow_the_records() -> None:
    meta, member, target = ("CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_MEMBER_METADATA",
                            "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER")
    rows = [
        _rec(1, member, 0, "a"), _rec(2, meta, 0, epoch=1), _rec(3, target, 0, "a", None,
                                                                   ["t:0", "t:1"]),
        _rec(4, member, 1000, "b"), _rec(5, meta, 1000, epoch=2),
        _rec(6, target, 1000, "a", None, ["t:0"]), _rec(7, target, 1000, "b", None, ["t:1"]),
        _rec(8, member, 3600_000, "a", tombstone=True), _rec(9, target, 3600_000, "a",
                                                             tombstone=True),
        _rec(10, meta, 3600_000, epoch=3), _rec(11, target, 3600_000, "b", None, ["t:0", "t:1"]),
        _rec(12, "OFFSET_COMMIT", 3600_000, resources=["t:0"]),
    ]
    m = group_metrics(reversed(rows))  # order comes from the offsets
    assert (m["rebalances"], m["group_epoch"]) == (3, 3)
    assert (m["members_joined"], m["members_left"], m["members_now"], m["max_members"]) == (
        2, 1, 1, 2)
    assert (m["resources_assigned"], m["resources_moved"]) == (4, 2)
    assert m["rebalances_per_hour"] == pytest.approx(3.0)
    assert m["offset_commits"] == 1 and not m["deleted"]
    assert [e["epoch"] for e in epoch_rows(rows)] == [1, 2, 3]
    # a deleted and re-created group starts its epochs again
    again = [*rows, _rec(13, meta, 3700_000, tombstone=True), _rec(14, meta, 3800_000, epoch=1)]
    m2 = group_metrics(again)
    assert (m2["rebalances"], m2["group_epoch"], m2["deleted"]) == (4, 1, False)
    assert [e["epoch"] for e in epoch_rows(again)] == [1, 2, 3, 1]
