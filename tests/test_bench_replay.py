"""The replay benchmark runs (quick) and reports docs/design.md's result shape; no timing asserted."""

from __future__ import annotations

import json
import math

from benchmarks import replay


def test_replay_benchmark_quick_shape() -> None:
    results = replay.run(quick=True)
    by_name = {r.name: r for r in results}
    assert len(by_name) == len(results)
    for name in ("replay.sqlite.reload", "replay.sqlite.read", "replay.decode", "replay.apply",
                 "replay.memory.reload", "replay.sqlite.reload.workload=churn",
                 "replay.sqlite.append.durability=normal", "replay.sqlite.append.durability=full",
                 "replay.sqlite.append.durability=off"):
        assert by_name[name].unit == "per_s", name
    for name in ("replay.sqlite.open", "replay.sqlite.compact", "replay.sqlite.reload.compacted",
                 "replay.sqlite.append.during_compaction.p99"):
        assert by_name[name].unit == "ms", name
    for r in results:
        assert isinstance(r.value, float) and math.isfinite(r.value) and r.value > 0, r
        assert r.unit in ("ms", "per_s", "ratio")
        json.dumps(r.as_json())
    reload = by_name["replay.sqlite.reload"].params
    assert reload["records"] > 0 and reload["batch_mean"] >= 1
    assert abs(sum(reload["mix"].values()) - 1.0) < 0.01
    for d in ("normal", "full", "off"):
        p = by_name[f"replay.sqlite.append.durability={d}"].params
        assert p["durability"] == d and p["batches"] > 0 and 1 <= p["batch_mean"] <= p["batch_max"]
