"""The simulator's fast paths give the same results as the general ones (docs/benchmarks.md).

- The network's fault-free path draws the same latencies, keeps the same FIFO order and counts
  the same as the general path with every fault probability at zero.
- A superseded wake-up is no step: it runs no after-step checks and brings no checkpoint on.
- I4 checkpoints come every ``checkpoint_every`` steps while the compacted log is small, and
  in proportion to its entries past ``CHECKPOINT_ENTRIES``; the run's figures do not change
  (only the counts of checkpoints and of the checks they ran).
- The full check (checkpoints, the end) reports the same violation whatever the hash order,
  and its quick pass fails in exactly the states the checks one by one fail in.
- The benchmark's time split accounts for the coordinator, the log and the checkpoints, and
  puts every method it wrapped back.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest
from benchmarks.sim import PARTS, _time_split

from groupcoord.coordinator.shard import Shard
from groupcoord.sim import engine
from groupcoord.sim.connect import ConnectSimulation
from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.coordinator import SimCoordinator
from groupcoord.sim.engine import Simulation, Violation
from groupcoord.sim.network import NO_FAULTS, Latency, Network, NetworkFaults
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import Scenario


@pytest.mark.parametrize("latency", [Latency("uniform", 1, 30), Latency("fixed", 4),
                                     Latency("exponential", 1, 80, 9)])
def test_fault_free_route_matches_the_general_path(latency: Latency) -> None:
    fast = Network(random.Random(7), latency, NetworkFaults())  # zeros, not NO_FAULTS itself
    general = Network(random.Random(7), latency, NO_FAULTS)
    assert fast._clean
    general._clean = False  # force the general path
    for now in range(0, 3_000, 3):
        ch = f"c{now % 5}>"
        assert fast.route(now, ch, "c1", now % 2 == 0) == general.route(now, ch, "c1",
                                                                         now % 2 == 0)
    fast.cut.add("c1")
    general.cut.add("c1")
    assert fast.route(5, "x", "c1", False) == general.route(5, "x", "c1", False) == ()
    assert fast.stats == general.stats and fast.stats["delivered"] == 1_000


def test_setting_faults_switches_the_path() -> None:
    net = Network(random.Random(1), Latency("uniform", 1, 10))
    assert net._clean and net.faults is NO_FAULTS
    net.faults = NetworkFaults(loss=1.0)
    assert not net._clean and net.route(0, "c", "c1", False) == ()
    net.faults = NetworkFaults()
    assert net._clean and len(net.route(0, "c", "c1", False)) == 1


class _Wakeups(Simulation):
    """A protocol-less simulation: real events and superseded wake-ups, counted."""

    protocol = "test"

    def setup(self) -> None:
        self.handled: list[int] = []
        self.after_steps = 0
        for t in range(1, 11):
            self.at(t, self._real, t)
            self.at(t, self._superseded, t)

    def _real(self, t: int) -> None:
        self.handled.append(t)

    def _superseded(self, _: Any) -> None:
        self.step -= 1  # what a superseded tick or timer does

    def after_step(self) -> None:
        self.after_steps += 1

    def apply_member_event(self, ev: Any) -> None:
        raise AssertionError(ev)


def test_superseded_wakeups_are_no_steps_and_run_no_checks() -> None:
    sim = _Wakeups(Scenario("wakeups", members=0, topics=(("foo", 2),), end_ms=20),
                   1, checkpoint_every=4)
    r = sim.run()
    assert r.ok, r.violation
    assert sim.handled == list(range(1, 11))
    # 10 real events plus the timeline's own (faults stop, the deadline wake-up)
    assert r.steps == sim.after_steps == 10 + 2
    assert r.summary["checkpoints"] == r.steps // 4 + 1  # + the final one


class _Spaced(ConsumerSimulation):
    """Records the step of every periodic checkpoint and the log's entries after it."""

    def checkpoint(self) -> None:
        super().checkpoint()
        self.seen.append((self.step, self.coord.log.size(0)))


def _spaced_run(monkeypatch: pytest.MonkeyPatch, entries: int) -> tuple[Any, list[Any]]:
    monkeypatch.setattr(engine, "CHECKPOINT_ENTRIES", entries)
    sc = Scenario("spaced", members=4, topics=(("foo", 40),), end_ms=120_000)
    sim = _Spaced(sc, 3, checkpoint_every=50)
    sim.seen = []
    r = sim.run()
    assert r.ok, r.violation
    return r, sim.seen[:-1]  # the last one is the end of the run's


def test_checkpoints_are_spaced_by_the_log_size(monkeypatch: pytest.MonkeyPatch) -> None:
    small, base = _spaced_run(monkeypatch, 1 << 30)  # never large: every 50 steps
    assert [s for s, _ in base] == list(range(50, small.steps + 1, 50))
    large, spaced = _spaced_run(monkeypatch, 20)  # the log of 40 offsets and 4 members is large
    step = 50
    for (at, _), (prev_at, prev_entries) in zip(spaced[1:], spaced, strict=False):
        assert prev_entries > 20
        assert at - prev_at == 50 * prev_entries // 20
        step = at
    assert len(spaced) < len(base) and step > 50
    # the same run: only the counts of checkpoints and of the checks they ran differ
    assert large.steps == small.steps and large.disturbances == small.disturbances

    def figures(summary: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in summary.items()
                if k != "checkpoints" and not k.endswith("_checks")}

    assert figures(large.summary) == figures(small.summary)
    assert large.summary["i2_checks"] < small.summary["i2_checks"]
    assert large.summary["checkpoints"] == len(spaced) + 1 < small.summary["checkpoints"]


def test_full_check_reports_the_canonical_violation() -> None:
    sim = ConsumerSimulation(Scenario("fc", members=3, topics=(("foo", 12),), end_ms=60_000), 4)
    sim.start()
    assert not sim.advance(until_ms=30_000)
    sim.full_check()  # converged: nothing to report
    a, b = sim.live()[0], sim.live()[1]
    # ``a`` also consumes every partition of ``b`` (not held for it): the report names the
    # first of them in canonical order (topic id bytes, partition), whatever order the set
    # iterates in.
    stolen = sorted(b.consuming, key=lambda tp: (tp[0].bytes, tp[1]))
    assert len(stolen) >= 2
    a.consuming = a.consuming | b.consuming
    with pytest.raises(Violation) as e1:
        sim.full_check()
    with pytest.raises(Violation) as e2:
        sim._full_check(ordered=True)
    assert e1.value.invariant == "I1" and e1.value.message == e2.value.message
    assert f"foo-{stolen[0][1]} " in e1.value.message and a.name in e1.value.message


def _fails(check: Callable[..., None], *args: Any) -> bool:
    try:
        check(*args)
    except Violation:
        return True
    return False


def _corruptions(sim: ConsumerSimulation) -> list[tuple[str, Callable[[], None]]]:
    """Ways to break the state the full check reads (each applied to a fresh simulation)."""
    a, b = sim.live()[0], sim.live()[1]
    g = sim._group()
    assert g is not None
    mid_a, mid_b = a.member.member_id, b.member.member_id
    tp_b = next(iter(b.consuming))

    def steal() -> None:  # a also consumes what b does: two unfenced consumers
        a.consuming = a.consuming | b.consuming

    def hand_over() -> None:  # b's resource moves to a in a's view only: not held for a
        a.consuming = a.consuming | {tp_b}
        b.consuming = b.consuming - {tp_b}

    def fence_b_steal() -> None:  # b fenced: a consuming b's resources is not held for a
        b.inc_seen = -7
        a.consuming = a.consuming | b.consuming

    def shadow_gap() -> None:  # the shadow lost a holding the coordinator has
        del sim.coord_holder[tp_b]

    def shadow_extra() -> None:  # the shadow holds a resource the coordinator gives nobody
        sim.coord_holder[(tp_b[0], 10_000)] = mid_b

    def epoch_ahead() -> None:
        m = g.members[mid_a]
        g.members[mid_a] = dataclasses.replace(m, member_epoch=g.assignment_epoch + 1)

    def nothing() -> None:
        pass

    return [("steal", steal), ("hand-over", hand_over), ("fenced", fence_b_steal),
            ("shadow-gap", shadow_gap), ("shadow-extra", shadow_extra),
            ("epoch-ahead", epoch_ahead), ("nothing", nothing)]


@pytest.mark.parametrize("corruption", ["steal", "hand-over", "fenced", "shadow-gap",
                                        "shadow-extra", "epoch-ahead", "nothing"])
@pytest.mark.parametrize("protocol", ["consumer", "connect"])
def test_quick_full_check_fails_exactly_when_the_checks_one_by_one_fail(
        protocol: str, corruption: str) -> None:
    cls = ConsumerSimulation if protocol == "consumer" else ConnectSimulation
    sim = _converged(cls, Scenario("fc", members=3, topics=(("foo", 12),), end_ms=60_000))
    dict(_corruptions(sim))[corruption]()
    i2 = sim.stats["i2_checks"]
    quick = _fails(sim._quick_full_check)
    quick_i2, i2 = sim.stats["i2_checks"] - i2, sim.stats["i2_checks"]
    slow = _fails(sim._full_check, False)
    assert quick_i2 == sim.stats["i2_checks"] - i2  # check_target called alike
    assert quick == slow == _fails(sim._full_check, True) == (corruption != "nothing")


def _converged(cls: type[ConsumerSimulation], scenario: Scenario) -> ConsumerSimulation:
    sim = cls(scenario, 4)
    sim.start()
    assert not sim.advance(until_ms=30_000)
    assert sim.converged() and all(p.consuming for p in sim.live())
    return sim


def test_time_split_covers_the_parts_and_restores_the_methods() -> None:
    before = (Shard.handle, Shard.replay, SimCoordinator.persist,
              ConsumerSimulation.__dict__["checkpoint"])
    with _time_split(ConsumerSimulation) as spent:
        r = simulate("rolling-bounce", 1)
    assert r.ok and set(spent) == set(PARTS)
    assert all(v > 0 for v in spent.values()), spent
    assert (Shard.handle, Shard.replay, SimCoordinator.persist,
            ConsumerSimulation.__dict__["checkpoint"]) == before

    class Inherits(ConsumerSimulation):
        pass

    with _time_split(Inherits):
        assert "checkpoint" in Inherits.__dict__
    assert "checkpoint" not in Inherits.__dict__  # inherited again, not pinned


def test_the_loop_collects_garbage_less_often_and_gives_the_same_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop raises the collector's first threshold while it runs
    (``engine.LOOP_GC_THRESHOLD``) and puts the process's back; a run is the same with the
    collector at its default, or run after every event."""
    import gc

    sc = Scenario("gc", members=6, topics=(("foo", 24),), end_ms=90_000)
    seen: list[tuple[int, int, int]] = []

    class Watched(ConsumerSimulation):
        def after_step(self) -> None:
            seen.append(gc.get_threshold())
            super().after_step()

    before = gc.get_threshold()
    raised = Watched(sc, 5, record_trace=True).run()
    assert gc.get_threshold() == before
    assert seen and all(t[0] == max(before[0], engine.LOOP_GC_THRESHOLD) for t in seen)
    monkeypatch.setattr(engine, "LOOP_GC_THRESHOLD", 0)  # the process's thresholds
    default = ConsumerSimulation(sc, 5, record_trace=True).run()
    gc.set_threshold(1, 1, 1)  # a collection at nearly every allocation
    try:
        eager = ConsumerSimulation(sc, 5, record_trace=True).run()
    finally:
        gc.set_threshold(*before)
    for r in (default, eager):
        assert r.ok and r.trace == raised.trace and r.summary == raised.summary
        assert r.disturbances == raised.disturbances
