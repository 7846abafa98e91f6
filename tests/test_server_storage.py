"""The record log seen from ``groupcoord serve``, and its metrics (docs/durability-and-metrics.md).

- A corrupt database at start-up (garbage, a truncated file, a row that does not decode) makes
  ``serve`` exit with status 1 and the LogError message, naming the file, on stderr; no
  traceback.
- A large log loads in the background: a client connected meanwhile is answered
  COORDINATOR_LOAD_IN_PROGRESS, the metrics show the shard loading, and ``listening on`` is
  printed once it is loaded.
- Background compaction (``log.compaction.interval.ms``, ``log.cleaner.delete.retention.ms``)
  runs while requests are served, and a server restarted on the compacted log has the same
  groups and offsets.
- ``--metrics-port`` serves the Prometheus text format with the KIP-848 "Broker Metrics".
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.records import OffsetCommitValue, offset_commit_record
from groupcoord.protocol.client import KafkaClient, KafkaClientError
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.versions import ApiKey
from groupcoord.storage.sqlite import DB_NAME, SqliteLog

from .conftest import FAST_GROUP_CONFIGS, GROUPCOORD, ServerProcess, start_server

E = ErrorCode


def _serve_cmd(data_dir: Path, *extra: str, port: int = 0) -> list[str]:
    cmd = [*GROUPCOORD, "-v", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--data-dir", str(data_dir), "--storage", "sqlite"]
    for c in FAST_GROUP_CONFIGS:
        cmd += ["--config", c]
    return cmd + list(extra)


def _serve_fails(data_dir: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(_serve_cmd(data_dir), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "listening on" not in proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(url: str) -> dict[str, float]:
    """``name{labels}`` -> value; also checks every sample has HELP and TYPE lines."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples: dict[str, float] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            assert kind in ("gauge", "counter")
            typed.add(name)
        elif line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            assert re.fullmatch(r'[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})?', key), line
            assert key.split("{")[0] in typed, line
            samples[key] = float(value)
    return samples


# ---------------------------------------------------------------------------- corrupt logs


def test_garbage_database_exits_with_the_log_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / DB_NAME).write_bytes(b"this is not a database, it is a text file\n" * 100)
    proc = _serve_fails(data)
    assert f"error: cannot start: {data / DB_NAME}: file is not a database" in proc.stderr


def test_truncated_database_exits_with_the_log_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with SqliteLog(data) as lg:
        for i in range(200):
            lg.append(0, [offset_commit_record("g", "t", i, OffsetCommitValue(
                i, -1, "x" * 200, 1, -1, None)).encode()])
    db = data / DB_NAME
    with sqlite3.connect(db) as conn:  # fold the write-ahead log in, then cut the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.truncate(size // 2)
    proc = _serve_fails(data)
    assert f"error: cannot start: {db}" in proc.stderr
    assert re.search(r"corrupt|malformed|not a database|truncated", proc.stderr), proc.stderr


def test_a_row_that_does_not_decode_names_file_shard_and_offset(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with SqliteLog(data) as lg:
        lg.append(0, [offset_commit_record("g", "t", 0, OffsetCommitValue(
            5, -1, "", 1, -1, None)).encode()])
        lg.append(0, [(b"\x07garbage key", b"garbage value")])
    proc = _serve_fails(data)
    assert (f"error: cannot start: {data / DB_NAME}: shard 0, entry at offset 2: cannot apply "
            f"the record") in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------- loading


def _big_log(data_dir: Path, entries: int) -> None:
    """``entries`` offset commits in shard 0 (1 000 distinct keys, rewritten over and over)."""
    tid = uuid.uuid4()
    batch = [offset_commit_record(f"big-{i % 20}", "t", i, OffsetCommitValue(
        i, -1, "", 1_000, -1, tid)).encode() for i in range(1_000)]
    with SqliteLog(data_dir, "off") as lg:
        for _ in range(entries // len(batch)):
            lg.append(0, batch, 1_000)


def test_a_large_log_loads_in_the_background(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _big_log(data, 100_000)
    port, metrics_port = _free_port(), _free_port()
    err_path = tmp_path / "stderr.log"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            _serve_cmd(data, "--shards", "1", "--metrics-port", str(metrics_port), port=port),
            stdout=subprocess.PIPE, stderr=err, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        client = None
        while client is None:
            assert time.monotonic() < deadline and proc.poll() is None, err_path.read_text()
            try:
                client = KafkaClient(f"127.0.0.1:{port}", timeout=30)
            except KafkaClientError:
                time.sleep(0.01)
        codes: list[int] = []
        loading_seen = False
        with client:
            while True:
                r = client.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": "big-3",
                                                                 "topics": None}])
                codes.append(int(r.groups[0].error_code))
                if codes[-1] != E.coordinator_load_in_progress:
                    break
                if not loading_seen:
                    m = _scrape(f"http://127.0.0.1:{metrics_port}/metrics")
                    loading_seen = m.get(
                        'kafka_server_group_coordinator_metrics_partition_count{state="loading"}'
                    ) == 1.0
                    assert not lines, lines  # not ready yet: no "listening on"
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert codes[0] == E.coordinator_load_in_progress, codes
            assert codes[-1] == E.none and loading_seen
            offsets = {int(p.partition_index): int(p.committed_offset)
                       for t in r.groups[0].topics for p in t.partitions}
            assert len(offsets) == 50 and offsets[3] == 3
        while len(lines) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert lines[0] == f"listening on 127.0.0.1:{port}\n"
        assert lines[1] == f"metrics on http://127.0.0.1:{metrics_port}/metrics\n"
        m = _scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert m['kafka_server_group_coordinator_metrics_partition_count{state="active"}'] == 1
        assert m["kafka_server_group_coordinator_metrics_partition_load_time_max"] > 0
        assert "shard 0 loaded: 100000 records" in err_path.read_text()
    finally:
        proc.terminate()
        assert proc.wait(20) == 0, err_path.read_text()[-3000:]


# ---------------------------------------------------------------------------- compaction


def _hb(c: KafkaClient, group: str, member: str, epoch: int, **kw: Any) -> Any:
    r = c.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
               member_epoch=epoch, **kw)
    assert r.error_code == 0, r
    return r


def _state(c: KafkaClient, groups: list[str]) -> dict[str, Any]:
    listed = sorted((g.group_id, g.group_state) for g in c.call(ApiKey.LIST_GROUPS, 5).groups)
    d = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=groups,
               include_authorized_operations=False)
    described = {g.group_id: (int(g.error_code), g.group_state, int(g.group_epoch),
                              int(g.assignment_epoch),
                              sorted((m.member_id, int(m.member_epoch), repr(m.assignment),
                                      repr(m.target_assignment)) for m in g.members))
                 for g in d.groups}
    f = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": g, "topics": None} for g in groups])
    offsets = {g.group_id: sorted((t.name, int(p.partition_index), int(p.committed_offset))
                                  for t in g.topics for p in t.partitions) for g in f.groups}
    return {"listed": listed, "described": described, "offsets": offsets}


def test_background_compaction_keeps_the_state_across_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    extra = ("--storage", "sqlite", "--shards", "2", "--metrics-port", "0",
             "--config", "log.compaction.interval.ms=200",
             "--config", "log.cleaner.delete.retention.ms=0")
    server = start_server(data, *extra)
    topic, groups = "compact-t", ["compact-a", "compact-b", "compact-gone"]
    try:
        assert server.proc.stdout is not None
        metrics_url = server.proc.stdout.readline().split()[-1]
        with KafkaClient(server.bootstrap) as c:
            assert c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                {"name": topic, "num_partitions": 4, "replication_factor": 1}]).topics[0] \
                .error_code == 0
            members = {}
            for g in groups:
                mid = str(uuid.uuid4())
                r = _hb(c, g, mid, 0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
                        topic_partitions=[])
                members[g] = (mid, int(r.member_epoch), r.assignment)
            for round_ in range(300):  # rewrite the same offsets over and over
                for g in groups[:2]:
                    mid, epoch, assignment = members[g]
                    owned = [{"topic_id": t.topic_id, "partitions": list(t.partitions)}
                             for t in assignment.topic_partitions]
                    r = _hb(c, g, mid, epoch, topic_partitions=owned)
                    if r.assignment is not None:
                        assignment = r.assignment
                    members[g] = (mid, int(r.member_epoch), assignment)
                    r = c.call(ApiKey.OFFSET_COMMIT, 9, group_id=g,
                               generation_id_or_member_epoch=int(r.member_epoch), member_id=mid,
                               topics=[{"name": topic, "partitions": [
                                   {"partition_index": p, "committed_offset": round_ * 10 + p,
                                    "committed_metadata": ""}
                                   for t in assignment.topic_partitions for p in t.partitions]}])
                    assert all(p.error_code == 0 for p in r.topics[0].partitions)
            # a group that goes away: its records become tombstones, then nothing
            gone_mid = members["compact-gone"][0]
            _hb(c, "compact-gone", gone_mid, -1, topic_partitions=None)
            assert c.call(ApiKey.DELETE_GROUPS, 2, groups_names=["compact-gone"]).results[0] \
                .error_code == 0
            start_runs = _scrape(metrics_url)["groupcoord_log_compaction_count"]
            deadline = time.monotonic() + 30
            while _scrape(metrics_url)["groupcoord_log_compaction_count"] < start_runs + 2:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            m = _scrape(metrics_url)
            assert m["groupcoord_log_compaction_removed_count"] > 1_000
            before = _state(c, groups)
        assert server.stop() == 0, server.stderr()[-3000:]
        with SqliteLog(data) as lg:  # compacted: one entry per key, no tombstone left
            stats = lg.stats()
            assert stats.tombstones == 0 and 0 < stats.entries < 200, stats

        server = start_server(data, *extra)
        with KafkaClient(server.bootstrap) as c:
            after = _state(c, groups)
        assert after == before
        assert before["described"]["compact-gone"][0] == E.group_id_not_found
        assert before["offsets"]["compact-a"] and before["offsets"]["compact-b"]
        assert "Traceback" not in server.stderr()
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]


def test_bad_compaction_configs_are_refused(tmp_path: Path) -> None:
    proc = subprocess.run(_serve_cmd(tmp_path / "d", "--config", "log.compaction.interval.ms=x"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "log.compaction.interval.ms must be an integer" in proc.stderr


# ---------------------------------------------------------------------------- metrics


@pytest.fixture
def metrics_server(tmp_path: Path) -> Any:
    server = start_server(tmp_path / "data", "--storage", "sqlite", "--shards", "3",
                          "--metrics-port", "0")
    assert server.proc.stdout is not None
    line = server.proc.stdout.readline()
    assert line.startswith("metrics on http://127.0.0.1:"), line
    try:
        yield server, line.split()[-1]
    finally:
        assert server.stop() == 0, server.stderr()[-3000:]


def test_metrics_scrape(metrics_server: tuple[ServerProcess, str]) -> None:
    server, url = metrics_server
    k = "kafka_server_group_coordinator_metrics_"
    m = _scrape(url)
    assert m[k + 'partition_count{state="active"}'] == 3
    assert m[k + 'partition_count{state="loading"}'] == 0
    assert m[k + "partition_load_time_max"] >= m[k + "partition_load_time_avg"] >= 0
    assert m[k + 'group_count{protocol="consumer"}'] == 0
    topic = "metrics-t"
    with KafkaClient(server.bootstrap) as c:
        c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 4,
                                                 "replication_factor": 1}])
        ids = {}
        for i in range(3):  # three members of one group: three rebalances
            ids[i] = _hb(c, "metrics-g", f"m{i}", 0, rebalance_timeout=30_000,
                         subscribed_topic_names=[topic], topic_partitions=[])
        _hb(c, "metrics-empty", "x", 0, rebalance_timeout=30_000, subscribed_topic_names=[topic],
            topic_partitions=[])
        _hb(c, "metrics-empty", "x", -1, topic_partitions=None)
        c.call(ApiKey.OFFSET_COMMIT, 9, group_id="metrics-simple", topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                            "committed_metadata": ""}]}])
        m = _scrape(url)
    assert m[k + 'group_count{protocol="consumer"}'] == 2
    assert m[k + 'group_count{protocol="classic"}'] == 1  # offsets without a group
    assert m[k + 'classic_group_count{state="empty"}'] == 1
    assert m[k + 'consumer_group_count{state="empty"}'] == 1
    busy = sum(m[k + f'consumer_group_count{{state="{s}"}}']
               for s in ("assigning", "reconciling", "stable"))
    assert busy == 1 and m[k + 'consumer_group_count{state="dead"}'] == 0
    assert m[k + "consumer_group_rebalance_count"] == 5  # 3 joins, 1 join + 1 leave
    # a target computed by each join's heartbeat (3 + 1); none after the leave (no heartbeat)
    assert m["groupcoord_consumer_group_target_assignment_count"] == 4
    assert 0 < m[k + "consumer_group_rebalance_rate"] <= 5
    assert m[k + "event_queue_size"] == 0
    assert 0.0 <= m[k + "thread_idle_ratio_min"] <= m[k + "thread_idle_ratio_avg"] <= 1.0
    time.sleep(2.2)  # two whole windows of a broker doing nothing: mostly idle
    later = _scrape(url)
    assert later[k + "thread_idle_ratio_avg"] > m[k + "thread_idle_ratio_avg"]
    assert later[k + "thread_idle_ratio_avg"] > 0.5
    assert m['groupcoord_connect_group_count{state="stable"}'] == 0
    assert m["groupcoord_deferred_requests"] == 0
    with urllib.request.urlopen(url.replace("/metrics", "/anything"), timeout=10) as r:
        assert r.status == 200  # any path answers
