"""The audit job on a data directory written by a real server (docs/lab.md).

A ``groupcoord serve --storage sqlite`` subprocess gets a topic, a consumer group where member A
joins, B joins (A gives up half its partitions), A commits offsets and leaves, a second group
with one member that joins and leaves, and offsets committed for an admin-managed group. The
log is read once while the server runs (read-only, no lock taken), then the server stops and
the audit runs on Spark; its tables must equal the same figures computed in plain Python over
the log, and match what the test did.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from groupcoord.cli import main
from groupcoord.lab.audit import (
    AuditError,
    decode_entries,
    epoch_rows,
    group_metrics,
    read_log,
    run_audit,
)
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import start_server

TOPIC = "audit-topic"


def _hb(c: KafkaClient, group: str, member: str = "", epoch: int = 0,
        owned: list[int] | None = None, topic_id: Any = None) -> Any:
    kw: dict[str, Any] = {"group_id": group, "member_id": member, "member_epoch": epoch}
    if epoch == 0:
        kw.update(rebalance_timeout=30_000, subscribed_topic_names=[TOPIC], topic_partitions=[])
    elif epoch > 0:
        kw["topic_partitions"] = [{"topic_id": topic_id, "partitions": owned or []}]
    else:
        kw["topic_partitions"] = None
    r = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, **kw)
    assert int(r.error_code) == 0, r
    return r


def _owned(r: Any) -> list[int]:
    if r.assignment is None:
        return []
    return sorted(int(p) for tp in r.assignment.topic_partitions for p in tp.partitions)


def _drive(bootstrap: str) -> None:
    with KafkaClient(bootstrap) as c:
        created = c.call(ApiKey.CREATE_TOPICS, 7, topics=[
            {"name": TOPIC, "num_partitions": 4, "replication_factor": 1}])
        tid = created.topics[0].topic_id
        a = _hb(c, "audit-g1")
        a_owned = _owned(a)
        assert a_owned == [0, 1, 2, 3]
        time.sleep(0.6)
        b = _hb(c, "audit-g1")
        # A is asked to give up half its partitions, acknowledges, then B gets them
        a2 = _hb(c, "audit-g1", a.member_id, a.member_epoch, a_owned, tid)
        a_owned = _owned(a2) if a2.assignment is not None else a_owned
        a3 = _hb(c, "audit-g1", a.member_id, a2.member_epoch, a_owned, tid)
        assert len(a_owned) == 2 and a3.member_epoch == b.member_epoch
        b2 = _hb(c, "audit-g1", b.member_id, b.member_epoch, [], tid)
        assert len(_owned(b2)) == 2
        r = c.call(ApiKey.OFFSET_COMMIT, 9, group_id="audit-g1",
                   generation_id_or_member_epoch=a3.member_epoch, member_id=a.member_id,
                   topics=[{"name": TOPIC, "partitions": [
                       {"partition_index": p, "committed_offset": 10 + p, "committed_metadata": ""}
                       for p in a_owned]}])
        assert all(int(p.error_code) == 0 for p in r.topics[0].partitions)
        time.sleep(0.6)
        _hb(c, "audit-g1", a.member_id, -1)  # A leaves: B gets everything
        b3 = _hb(c, "audit-g1", b.member_id, b2.member_epoch, _owned(b2), tid)
        assert _owned(b3) == [0, 1, 2, 3]
        g2 = _hb(c, "audit-g2")
        _hb(c, "audit-g2", g2.member_id, -1)
        r = c.call(ApiKey.OFFSET_COMMIT, 9, group_id="audit-admin",
                   generation_id_or_member_epoch=-1, member_id="", topics=[{"name": TOPIC,
                   "partitions": [{"partition_index": 0, "committed_offset": 5,
                                   "committed_metadata": ""}]}])
        assert int(r.topics[0].partitions[0].error_code) == 0


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("audit") / "data"
    server = start_server(data, "--storage", "sqlite")
    try:
        _drive(server.bootstrap)
        live = read_log(data)  # read-only while the server runs: no lock conflict
        assert len(live.entries) > 10
        with KafkaClient(server.bootstrap) as c:  # the server is unaffected
            assert int(c.call(ApiKey.LIST_GROUPS, 5).error_code) == 0
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]
    return data


def test_audit_of_a_real_server(spark: Any, data_dir: Path, tmp_path: Path) -> None:
    outcome = run_audit(spark, data_dir, tmp_path / "out")
    snap = read_log(data_dir)
    rows = list(decode_entries(snap.entries))
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_group[r["group_id"]].append(r)
    want = {g: group_metrics(rs) for g, rs in by_group.items()}
    got = {g["group_id"]: g for g in outcome.groups}
    assert set(got) == set(want) == {"audit-g1", "audit-g2", "audit-admin"}
    for g, w in want.items():
        assert got[g] == pytest.approx(w), g

    g1 = got["audit-g1"]
    assert g1["group_type"] == "consumer"
    assert g1["rebalances"] == g1["group_epoch"] == 3  # A joins, B joins, A leaves
    assert (g1["members_joined"], g1["members_left"], g1["members_now"]) == (2, 1, 1)
    assert g1["max_members"] == g1["distinct_members"] == 2
    # 4 partitions to A; 2 of them move to B; A's other 2 move to B when A leaves
    assert (g1["resources_assigned"], g1["resources_moved"]) == (8, 4)
    assert g1["offset_commits"] == 2 and g1["max_member_epoch"] >= 2
    assert g1["span_s"] >= 1.0
    assert g1["rebalances_per_hour"] == pytest.approx(3 * 3600 / g1["span_s"])
    g2 = got["audit-g2"]
    assert (g2["rebalances"], g2["members_joined"], g2["members_left"]) == (2, 1, 1)
    admin = got["audit-admin"]
    assert admin["group_type"] == "offsets-only" and admin["offset_commits"] == 1
    assert admin["rebalances"] == 0

    epochs = spark.read.parquet(str(tmp_path / "out" / "audit" / "epochs")).collect()
    assert sorted((e["group_id"], e["epoch"], e["ts_ms"]) for e in epochs) == sorted(
        (e["group_id"], e["epoch"], e["ts_ms"]) for e in epoch_rows(rows))
    records = spark.read.parquet(str(tmp_path / "out" / "audit" / "records"))
    assert records.count() == len(rows)

    assert outcome.report is not None
    index = outcome.report.read_text()
    assert "Audit of a coordinator" in index and "audit-g1" in index
    assert (outcome.report.parent / "audit_epochs.png").stat().st_size > 10_000
    assert "audit-g1" in (outcome.report.parent / "summary.md").read_text()


def test_audit_refuses_a_directory_without_a_log(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AuditError, match="no record log"):
        read_log(tmp_path)
    assert main(["lab", "audit", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no record log" in capsys.readouterr().err
