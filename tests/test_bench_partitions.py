"""The partition-store benchmark runs (quick sizes, a server under ``ulimit -n 1024``) and
reports docs/design.md-shaped results; no timing asserted."""

from __future__ import annotations

import json
import math

from benchmarks.partitions import run


def test_quick_run_shape() -> None:
    results = run(quick=True)
    by_name = {r.name: r for r in results}
    assert set(by_name) == {"partitions.create", "partitions.describe", "partitions.produce",
                            "partitions.fetch", "partitions.restart", "partitions.fds",
                            "topics.create", "topics.describe"}
    for r in results:
        assert math.isfinite(r.value) and r.value > 0, r
        assert r.unit == ("ratio" if r.name == "partitions.fds" else "ms")
        json.dumps(r.as_json())
    fds = by_name["partitions.fds"]
    assert 0 < fds.params["open"] < 1024 and fds.params["partitions"] == 2_000
    assert by_name["topics.create"].params == {"topics": 10, "partitions_per_topic": 200}
