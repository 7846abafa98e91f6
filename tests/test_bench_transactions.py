"""``bench transactions`` (``benchmarks/transactions.py``): runs with quick sizes against a real
server and reports its figures with their parameters; no figure asserted beyond its shape (the
lead takes quiet figures), except that the paced run commits about what its cadence allows."""

from __future__ import annotations

import json
import math
import os

import pytest
from benchmarks import transactions


def test_quick_shape() -> None:
    results = transactions.run(quick=True, producers="3", seconds="1", storage="memory")
    by_name = {r.name: r for r in results}
    names = [
        "transactions.paced.committed_per_s", "transactions.paced.end_txn_p99",
        "transactions.paced.end_txn_p50", "transactions.saturated.committed_per_s",
        "transactions.saturated.end_txn_p99", "transactions.saturated.per_server_cpu_second",
        "transactions.overhead.records_ratio", "transactions.overhead.server_cpu_ratio"]
    if not os.path.exists("/proc/self/stat"):  # the server CPU figures need Linux's /proc
        names = [n for n in names if "cpu" not in n]
    assert list(by_name) == names
    for r in results:
        assert math.isfinite(r.value) and r.value > 0, r
        assert r.params["producers"] == 3 and r.params["storage"] == "memory"
        json.dumps(r.as_json())
    # 3 producers every 100 ms for about a second: about 30 commits a second, never more
    assert by_name["transactions.paced.committed_per_s"].value <= 3 * 10 * 1.5
    ratio = by_name["transactions.overhead.records_ratio"]
    assert ratio.params["with_per_s"] > 0 and ratio.params["without_per_s"] > 0
    if "transactions.overhead.server_cpu_ratio" in by_name:
        cpu = by_name["transactions.overhead.server_cpu_ratio"]
        assert cpu.value == pytest.approx(cpu.params["without_per_server_cpu_s"]
                                          / cpu.params["with_per_server_cpu_s"])


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown options: colour"):
        transactions.run(quick=True, colour="red")
    with pytest.raises(ValueError, match="storage"):
        transactions.run(quick=True, storage="tape")
