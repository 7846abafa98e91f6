"""Simulator benchmarks (``groupcoord bench sim [--json]``; docs/simulator.md).

Every run is a full simulation: the real :class:`Shard` and real ``ConsumerMember`` processes,
the simulated network, every invariant checked after every step, I4 checkpoints (every 2,000
steps and at the end: these groups' compacted logs hold ~1,150 entries, under the 2,000 past
which ``sim.engine`` spaces them), exactly as ``groupcoord simulate`` runs them. Figures (medians of
repeated runs, garbage collector off, see ``_harness.median_ms``):

- ``sim.events_per_s.scenario=steady.members=50.partitions=1000`` (per_s): simulated events
  per wall second of a stable group (10 minutes of heartbeats and auto-commits every 5 s).
  Target: >= 100,000/s.
- ``sim.events_per_s.scenario=rolling-bounce...`` and ``sim.events_per_s.scenario=random``
  (per_s): the same over the rolling bounce below, and over random scenarios (seeds 0-99).
- ``sim.rolling_bounce.members=50.partitions=1000`` (ms): wall time of a rolling bounce: a
  stable group of 50 dynamic members on 1,000 partitions (2 topics x 500) whose members bounce
  one after the other (10 s apart, 3 s down: 100 rebalances), simulated from the first bounce
  (t = 60 s, the group settled) until the group converged again (~500 s of simulated time).
  The run up to the bounce (joins, a minute of heartbeats and commits) is not timed; its
  ``params`` carry the whole run's wall time (``whole_run_ms``). Target:
  <= 2,000 ms. ``...static=true...``: the same group with static membership (no rebalance).
- ``sim.coordinator_share.scenario=...`` (ratio): the part of that wall time spent inside the
  coordinator's entry points (``Shard.handle``, ``expire_timers``, ``on_loaded``,
  ``update_metadata``, the replays of failovers): what the simulator itself cannot speed up.

``params`` carry the events, simulated time, group size and commit interval of each run, the
CPU time of one run (``cpu_ms``, ``events_per_cpu_s``: on a shared, loaded machine the
wall-clock figures move with the load, the CPU ones much less), and ``time_split``: the shares
of one run's wall time spent in the coordinator, in appending its records to the log
(``SimCoordinator.persist``; ``sim.log.SimLog`` encodes a record when a rebuild first reads
it, inside the checkpoints), in the I4 checkpoints (compaction, encoding, rebuild, digests, full
checks) and in the simulator itself (the rest: loop, network, members, incremental checks).
``ceiling_events_per_s`` is the rate the run would reach if the simulator's own code took no
time at all: the bound the coordinator, the log and the checkpoints set.
Run with ``groupcoord bench sim [--json]`` or ``python -m benchmarks.sim [--quick]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks._harness import Result, median_ms
from groupcoord.coordinator.shard import Shard
from groupcoord.sim.coordinator import SimCoordinator
from groupcoord.sim.engine import SimResult, Simulation
from groupcoord.sim.protocols import resolve_protocol
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import Event, Scenario
from groupcoord.sim.workload import DEFAULT_WORKLOAD, IDLE, Workload


def _group(members: int, partitions: int, static: bool = False, events: tuple[Event, ...] = (),
           end_ms: int | None = None, name: str = "bench",
           workload: Workload = IDLE) -> Scenario:
    half = partitions // 2
    # assignment_interval_ms 0: the target computed at once, as the simulator did before the
    # scenario's default became Kafka's 1 s, so that figures compare with earlier trees
    return Scenario(name, f"{members} members on {partitions} partitions", members=members,
                    static=static, topics=(("t0", half), ("t1", partitions - half)),
                    events=events, end_ms=end_ms, source=name, workload=workload,
                    assignment_interval_ms=0)


BOUNCE_AT_MS = 60_000


def rolling_bounce(members: int, partitions: int, static: bool = False,
                   workload: Workload = IDLE) -> Scenario:
    ev = Event(BOUNCE_AT_MS, "rolling-bounce",
               {"interval_ms": 10_000, "down_ms": 3_000, "hard": False})
    return _group(members, partitions, static, (ev,), name="rolling-bounce", workload=workload)


def steady(members: int, partitions: int, seconds: int, workload: Workload = IDLE) -> Scenario:
    return _group(members, partitions, end_ms=seconds * 1000, name="steady", workload=workload)


#: Where a run's wall time goes (``_time_split``): the coordinator's entry points, appending
#: its records to the log, the I4 checkpoints (compaction, rebuild, digests, full checks),
#: and the rest: the simulator itself (loop, network, members, incremental invariants).
PARTS = ("coordinator", "log", "checkpoints")


@contextmanager
def _time_split(sim_class: type[Simulation]) -> Iterator[dict[str, float]]:
    """Accumulate the wall time spent in each of :data:`PARTS` (outermost call counts: the
    replays of a checkpoint's rebuild are the checkpoint's)."""
    spent = dict.fromkeys(PARTS, 0.0)
    targets: list[tuple[type, str, str]] = [
        *((Shard, name, "coordinator") for name in ("handle", "expire_timers", "replay",
                                                    "on_loaded", "update_metadata")),
        (SimCoordinator, "persist", "log"), (sim_class, "checkpoint", "checkpoints")]
    saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in targets]
    depth = [0]

    def wrap(fn: Callable[..., Any], part: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - t0
                depth[0] -= 1
        return timed

    for cls, name, part in targets:
        setattr(cls, name, wrap(getattr(cls, name), part))
    try:
        yield spent
    finally:
        for cls, name, fn in saved:
            if fn is None:
                delattr(cls, name)  # it was inherited
            else:
                setattr(cls, name, fn)


def _measure(label: str, make: Callable[[], SimResult], repeat: int,
             params: dict[str, Any]) -> tuple[list[Result], float]:
    """Events per second and coordinator share of one scenario; also its median wall ms."""
    out: list[SimResult] = []

    def run_once() -> None:
        r = make()
        assert r.ok, r.violation.format() if r.violation else label
        out.append(r)

    ms = median_ms(run_once, repeat=repeat)
    r = out[-1]
    c0 = time.process_time()
    make()
    cpu = time.process_time() - c0
    spec, _ = resolve_protocol(r.protocol)
    with _time_split(spec.simulation) as spent:
        t0 = time.perf_counter()
        make()
        wall = time.perf_counter() - t0
    split = {part: round(spent[part] / wall, 3) for part in PARTS}
    split["simulator"] = round(1.0 - sum(spent.values()) / wall, 3)
    outside = sum(spent.values())
    p = {**params, "events": r.steps, "sim_time_ms": r.sim_time_ms,
         "records": r.summary["records_written"], "messages": r.summary["messages"],
         "cpu_ms": round(cpu * 1000.0, 1), "events_per_cpu_s": round(r.steps / cpu, 1),
         "time_split": split,
         # The events/s of this run if the simulator's own code took no time at all.
         "ceiling_events_per_s": round(r.steps / outside, 1) if outside else None}
    return [Result(f"sim.events_per_s.scenario={label}", r.steps / (ms / 1000.0), "per_s", p),
            Result(f"sim.coordinator_share.scenario={label}", spent["coordinator"] / wall,
                   "ratio", p)], ms


def bounce_ms(sc: Scenario, repeat: int) -> tuple[float, SimResult]:
    """Median wall ms of the run from the first bounce to its end (the run up to it untimed)."""
    spec, variant = resolve_protocol("consumer")
    sims: list[Simulation] = []

    def setup() -> None:
        sim = spec.simulation(sc, 1, variant)
        sim.start()
        assert not sim.advance(until_ms=BOUNCE_AT_MS - 1)
        sims[:] = [sim]

    def bounce() -> None:
        assert sims[0].advance()

    ms = median_ms(bounce, repeat=repeat, setup=setup)
    r = sims[0].result()
    assert r.ok, r.violation.format() if r.violation else sc.name
    return ms, r


def _runner(sc: Scenario) -> Callable[[], SimResult]:
    return lambda: simulate(sc, 1)


def run(quick: bool = False) -> list[Result]:
    """Simulator benchmarks; ``quick`` shrinks the group and the seeds (a few seconds)."""
    members, partitions = (10, 100) if quick else (50, 1000)
    repeat = 1 if quick else 3
    seeds = range(10) if quick else range(100)
    size = f"members={members}.partitions={partitions}"
    base = {"members": members, "partitions": partitions, "commit_interval_ms": 5_000}
    results: list[Result] = []

    sc = steady(members, partitions, 120 if quick else 600)
    rs, _ = _measure(f"steady.{size}", _runner(sc), repeat,
                     {**base, "scenario": "steady"})
    results += rs

    for static in (False, True):
        sc_rb = rolling_bounce(members, partitions, static)
        label = f"rolling-bounce.{'static=true.' if static else ''}{size}"
        rs, whole_ms = _measure(label, _runner(sc_rb), repeat,
                                {**base, "scenario": "rolling-bounce", "static": static})
        results += rs
        ms, r = bounce_ms(sc_rb, repeat)
        name = f"sim.rolling_bounce.{'static=true.' if static else ''}{size}"
        results.append(Result(name, ms, "ms", {
            **base, "scenario": "rolling-bounce", "static": static, "events": r.steps,
            "sim_time_ms": r.sim_time_ms, "bounce_from_ms": BOUNCE_AT_MS,
            "whole_run_ms": round(whole_ms, 1),
            "rebalances": r.disturbances[-1].get("group_epoch_bumps", 0)}))

    # The same with members that do work (``sim.workload``'s default: 50 records/s per
    # partition, 0.5 ms per record, batches of up to 500 records)
    work = {**base, "workload": DEFAULT_WORKLOAD.describe()}
    sc = steady(members, partitions, 120 if quick else 600, DEFAULT_WORKLOAD)
    rs, _ = _measure(f"steady.{size}.work=default", _runner(sc), repeat,
                     {**work, "scenario": "steady"})
    results += rs
    sc_rb = rolling_bounce(members, partitions, workload=DEFAULT_WORKLOAD)
    rs, whole_ms = _measure(f"rolling-bounce.{size}.work=default", _runner(sc_rb), repeat,
                            {**work, "scenario": "rolling-bounce", "static": False})
    results += rs
    ms, r = bounce_ms(sc_rb, repeat)
    results.append(Result(f"sim.rolling_bounce.{size}.work=default", ms, "ms", {
        **work, "scenario": "rolling-bounce", "events": r.steps, "sim_time_ms": r.sim_time_ms,
        "bounce_from_ms": BOUNCE_AT_MS, "whole_run_ms": round(whole_ms, 1),
        "rebalances": r.disturbances[-1].get("group_epoch_bumps", 0)}))

    totals: dict[str, int] = {"events": 0, "sim_time_ms": 0}

    def random_runs(workload: Workload | None) -> Callable[[], None]:
        def go() -> None:
            totals["events"] = totals["sim_time_ms"] = 0
            for seed in seeds:
                r = simulate("random", seed, workload=workload)
                assert r.ok, r.violation.format() if r.violation else seed
                totals["events"] += r.steps
                totals["sim_time_ms"] += r.sim_time_ms
        return go

    # idle members (today's figure), then each seed's own drawn workload
    for label, wl in (("random", IDLE), ("random.work=drawn", None)):
        ms = median_ms(random_runs(wl), repeat=repeat)
        results.append(Result(f"sim.events_per_s.scenario={label}",
                              totals["events"] / (ms / 1000.0), "per_s",
                              {"scenario": "random", "seeds": len(seeds),
                               "workload": "idle" if wl is not None else "drawn from the seed",
                               "events": totals["events"],
                               "sim_time_ms": totals["sim_time_ms"],
                               "ms_per_seed": ms / len(seeds)}))
    return results


if __name__ == "__main__":  # pragma: no cover - manual runs
    import json
    import sys

    rows = [r.as_json() for r in run(quick="--quick" in sys.argv)]
    json.dump(rows, sys.stdout, indent=1)
    sys.stdout.write("\n")
