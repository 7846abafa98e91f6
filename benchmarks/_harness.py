"""Shared benchmark plumbing: timing by median of repeated runs, results as docs/design.md's JSON.

Each benchmark module in this folder exposes ``run(quick: bool = False) -> list[Result]``;
``groupcoord bench NAME [--json]`` imports ``benchmarks/NAME.py`` and prints the results.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Result:
    name: str
    value: float
    unit: str  # "ms" | "per_s" | "ratio"
    params: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "params": self.params}


def median_ms(fn: Callable[[], object], repeat: int = 5, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn`` in milliseconds over ``repeat`` runs (``setup`` untimed)."""
    samples = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1000.0)
        finally:
            gc.enable()
    return statistics.median(samples)


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """Stop a server the benchmark started: SIGTERM, then SIGKILL if it has not exited within
    ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
