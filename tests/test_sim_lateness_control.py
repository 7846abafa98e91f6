"""Natural lateness and the paired control (``sim/workload.py``, ``WorkModel.keyed_draws``):
with pauses on, a member's draws are keyed by the member and the time, not by the order of the
calls, so a member the disturbance did not touch works the same in a run and in its control,
and a restarted member pauses on its own schedule; without pauses nothing changes."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.sim.workload import DEFAULT_WORKLOAD, Dist, Processor, Workload, member_of
from tests.test_sim_workload import Loop, fixed


def _lateness(**kw: Any) -> Workload:
    return Workload(records_per_s=100.0, fetch_latency_ms=0, max_poll_records=50,
                    processing_ms=Dist("lognormal", 1.0, sigma=1.5), pause_every_ms=5_000,
                    pause_ms=Dist("lognormal", 1_000, sigma=1.0), **kw)


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every pause of a current poll loop: (member, time)."""
    seen: list[tuple[str, int]] = []
    original = Processor._pause

    def record(self: Processor, arg: Any) -> None:
        if self.model.processors.get(self.name) is self:
            seen.append((member_of(self.name), self.model.now()))
        original(self, arg)
    monkeypatch.setattr(Processor, "_pause", record)
    return seen


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float, float]]:
    """Every batch started: (member, start, end)."""
    seen: list[tuple[str, float, float]] = []
    original = Processor._start_batch

    def record(self: Processor, t0: float, *a: Any, **kw: Any) -> None:
        original(self, t0, *a, **kw)
        seen.append((member_of(self.name), t0, self.batch_end))
    monkeypatch.setattr(Processor, "_start_batch", record)
    return seen


def test_draws_stay_in_call_order_without_pauses() -> None:
    loop = Loop()
    assert not loop.model(DEFAULT_WORKLOAD).keyed_draws
    assert not loop.model(fixed(100, 1.0)).keyed_draws
    heavy = Workload(processing_ms=Dist("lognormal", 1.0, sigma=1.5))
    assert not loop.model(heavy).keyed_draws
    assert loop.model(_lateness()).keyed_draws


def test_a_member_works_the_same_whether_or_not_another_member_works_beside_it(
        batches: list[tuple[str, float, float]]) -> None:
    def c1_batches(with_c2: bool) -> list[tuple[str, float, float]]:
        batches.clear()
        loop = Loop()
        m = loop.model(_lateness())
        m.add_resource("p0", 100)
        m.add_resource("p1", 100)
        m.processor("c1#1").assign(["p0"])
        if with_c2:
            m.processor("c2#1").assign(["p1"])
        loop.run_until(120_000)
        return [b for b in batches if b[0] == "c1"]
    alone = c1_batches(False)
    beside = c1_batches(True)
    assert len(alone) > 10  # (its pauses leave backlogs, polled in batches)
    assert beside == alone


def test_a_restarted_member_pauses_on_the_schedule_it_had(
        pauses: list[tuple[str, int]]) -> None:
    def times(restart: bool) -> list[int]:
        pauses.clear()
        loop = Loop()
        m = loop.model(_lateness())
        m.add_resource("p0", 100)
        m.processor("c1#1").assign(["p0"])
        if restart:
            loop.run_until(40_000)
            m.drop("c1#1", commit=True)
            loop.run_until(70_000)
            m.processor("c1#2").assign(["p0"])
        loop.run_until(200_000)
        return [t for _, t in pauses]
    steady = times(False)
    restarted = times(True)
    assert [t for t in restarted if t < 40_000] == [t for t in steady if t < 40_000]
    assert not [t for t in restarted if 40_000 < t < 70_000]  # down: no poll loop to pause
    after = [t for t in steady if t >= 70_000]
    assert len(after) > 10
    assert [t for t in restarted if t >= 70_000] == after
