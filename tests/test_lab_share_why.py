"""The share page's "Why" lines (``lab.mechanism.mechanisms``) on a lost host above the
share group's record-lock limit (KIP-932: ``group.share.partition.max.record.locks`` beyond the
share-partition start offset): the stop is named from the lock-limit arithmetic of the
workload's rate, never a heartbeat whose value happens to be near, and a median is never
pooled over two workloads of one scenario."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.mechanism import lock_limit_stop_ms, mechanisms

SHARE, CONSUMER = "share:simple", "consumer:uniform"
SHARE_SETTINGS = {"group.share.heartbeat.interval.ms": 5000,
                  "group.share.session.timeout.ms": 45000,
                  "group.share.record.lock.duration.ms": 30000}
CONSUMER_SETTINGS = {"group.consumer.heartbeat.interval.ms": 5000,
                     "group.consumer.session.timeout.ms": 45000}
CRASH = json.dumps({"name": "owner-crash", "events": [
    {"at_ms": 30000, "kind": "crash", "member": "@owner"}]})


def _run(protocol: str, seed: int, workload: str, rate: float, down_ms: float) -> dict[str, Any]:
    settings = SHARE_SETTINGS if protocol == SHARE else CONSUMER_SETTINGS
    return {"protocol": protocol, "scenario": "owner-crash", "scenario_def": CRASH, "size": 12,
            "members": 12, "workload": workload, "seed": seed, "ok": True, "caught_up": True,
            "total_partitions": 4, "total_topics": 1,
            "work": json.dumps({"records_per_s": rate, "processing_ms": {"mean": 2},
                                "max_poll_records": 100}),
            "settings_json": json.dumps(settings), "resources_moved": 1,
            "resource_downtime_ms": down_ms}


def _runs() -> list[dict[str, Any]]:
    # 80 records/s: 30 s - 2000 / 80 = 5 s; 300 records/s: 30 s - 2000 / 300 = 23.3 s
    runs = [_run(SHARE, s, "1x4-busy80", 80, 5030 + s) for s in range(5)]
    runs += [_run(SHARE, s, "1x4-hot", 300, 23350 + s) for s in range(5)]
    runs += [_run(CONSUMER, s, wl, r, 44000 + s) for s in range(5)
             for wl, r in (("1x4-busy80", 80), ("1x4-hot", 300))]
    return runs


def _downtime_lines(runs: list[dict[str, Any]]) -> list[str]:
    settings = {SHARE: SHARE_SETTINGS, CONSUMER: CONSUMER_SETTINGS}
    return [t for t in mechanisms([SHARE, CONSUMER], settings, runs)
            if "downtime per moved partition" in t]


def test_the_lock_limit_stop_is_the_locks_arithmetic_of_the_rate() -> None:
    got = lock_limit_stop_ms(_run(SHARE, 0, "1x4-busy80", 80, 0))
    assert got == (5000.0, 2000, 30000.0, 80.0)
    assert lock_limit_stop_ms(_run(SHARE, 0, "1x4-busy", 60, 0)) is None  # never fills
    assert lock_limit_stop_ms(_run(CONSUMER, 0, "1x4-busy80", 80, 0)) is None


def test_a_lost_hosts_stop_is_named_the_lock_limit_not_a_heartbeat() -> None:
    lines = _downtime_lines(_runs())
    busy80 = next(t for t in lines if "1x4-busy80" in t)
    assert ("share:simple 5.03 s (the lock-limit stop: a 30 s lock less 2,000 locks / "
            "80 records/s a partition = 5 s)") in busy80
    assert "heartbeat" not in busy80


def test_a_median_is_never_pooled_over_two_workloads() -> None:
    lines = _downtime_lines(_runs())
    assert len(lines) == 2
    hot = next(t for t in lines if t.startswith("owner-crash, 1x4-hot:"))
    assert "share:simple 23.4 s (the lock-limit stop" in hot
    # the pooled median of the two workloads' runs (about 14 s) is a value no run had
    assert not any("share:simple 14" in t for t in lines)


def test_a_share_stop_off_the_arithmetic_gets_no_label() -> None:
    runs = [_run(SHARE, s, "1x4-busy80", 80, 9000) for s in range(3)]
    (line,) = _downtime_lines(runs)
    assert "share:simple 9 s." in line or "share:simple 9 s," in line
    assert "lock-limit" not in line and "heartbeat" not in line
