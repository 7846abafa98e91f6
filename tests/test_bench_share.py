"""The share benchmark module runs (small sizes) and reports docs/design.md-shaped results: every
record delivered and acknowledged by the share consumers, and by the consumer group beside them.

No timing assertions: speed is measured by the benchmarks, never by tests.
"""

from __future__ import annotations

import pytest
from benchmarks._harness import Result
from benchmarks.share import run

pytest.importorskip("confluent_kafka")


def test_small_run_shape() -> None:
    results = run(quick=True, consumers="3", partitions="2", records="600", beside="1")
    assert results and all(isinstance(r, Result) for r in results)
    by_name = {r.name: r for r in results}
    size = "consumers=3.partitions=2"
    assert set(by_name) == {
        f"share.beside-consumer-group.records_per_s.{size}",
        f"share.beside-consumer-group.ack_p99_ms.{size}",
        f"share.beside-consumer-group.ack_p50_ms.{size}",
        f"consumer-group.records_per_s.{size}", f"consumer-group.commit_p99_ms.{size}"}
    for r in results:
        assert r.value > 0 and r.unit == ("per_s" if "records_per_s" in r.name else "ms")
        assert r.params["records"] == 600 and set(r.as_json()) == {"name", "value", "unit",
                                                                   "params"}
