"""Running simulations: one scenario and seed, or many seeds; summaries as text.

:func:`simulate` is what the CLI (``sim/cli.py``), the tests and the benchmark call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from groupcoord.sim.coordinator import ShardFactory, load_shard_factory
from groupcoord.sim.engine import CHECKPOINT_EVERY, SimResult, Simulation
from groupcoord.sim.protocols import resolve_protocol
from groupcoord.sim.scenario import Scenario, connectors_as_topics, load_scenario, with_workload
from groupcoord.sim.workload import Workload


def build_simulation(scenario: str | Scenario, seed: int = 0, protocol: str = "consumer", *,
                     shard_factory: ShardFactory | str | None = None,
                     record_trace: bool = False, checkpoint_every: int = CHECKPOINT_EVERY,
                     full_checks: bool = False, workload: Workload | None = None,
                     start_spread_ms: int | None = None) -> Simulation:
    """The simulation :func:`simulate` runs (not started)."""
    spec, variant = resolve_protocol(protocol)
    sc = load_scenario(scenario, seed) if isinstance(scenario, str) else scenario
    if workload is not None:
        sc = with_workload(sc, workload)
    if start_spread_ms is not None:
        sc = replace(sc, start_spread_ms=start_spread_ms)
    if spec.resource == "partitions":
        sc = connectors_as_topics(sc)
    factory_spec = shard_factory if isinstance(shard_factory, str) else None
    factory = load_shard_factory(shard_factory) if isinstance(shard_factory, str) else shard_factory
    return spec.simulation(sc, seed, variant, shard_factory=factory,
                           shard_factory_spec=factory_spec, record_trace=record_trace,
                           checkpoint_every=checkpoint_every, full_checks=full_checks)


def simulate(scenario: str | Scenario, seed: int = 0, protocol: str = "consumer", *,
             shard_factory: ShardFactory | str | None = None, record_trace: bool = False,
             checkpoint_every: int = CHECKPOINT_EVERY, full_checks: bool = False,
             max_steps: int | None = None, workload: Workload | None = None,
             start_spread_ms: int | None = None) -> SimResult:
    """Run one scenario (a name, a TOML path, ``random``, or a :class:`Scenario`); a Connect
    scenario run by a consumer protocol has its connectors as topics
    (:func:`~groupcoord.sim.scenario.connectors_as_topics`). ``workload`` replaces the
    scenario's (``sim.workload``; ``IDLE``: members that do no work); ``start_spread_ms``
    the scenario's (:func:`~groupcoord.sim.scenario.start_offsets_ms`)."""
    sim = build_simulation(scenario, seed, protocol, shard_factory=shard_factory,
                           record_trace=record_trace, checkpoint_every=checkpoint_every,
                           full_checks=full_checks, workload=workload,
                           start_spread_ms=start_spread_ms)
    return sim.run(max_steps=max_steps)


def parse_seeds(spec: str) -> range:
    """``A-B`` (inclusive) or ``N``."""
    a, sep, b = spec.partition("-")
    try:
        lo = int(a)
        hi = int(b) if sep else lo
    except ValueError:
        raise ValueError(f"--seeds expects A-B, got {spec!r}") from None
    if hi < lo:
        raise ValueError(f"--seeds {spec}: the range is empty")
    return range(lo, hi + 1)


def format_summary(r: SimResult) -> str:
    s = r.summary
    lines = [f"scenario {r.scenario}  protocol {r.protocol}  seed {r.seed}: "
             f"{'OK' if r.ok else 'VIOLATION'}",
             f"  {r.steps} events, {r.sim_time_ms} ms simulated, {r.wall_s:.3f} s wall "
             f"({r.events_per_s:,.0f} events/s)",
             f"  faults stopped at {s['quiet_at_ms']} ms, converged at {s['converged_at_ms']} ms "
             f"(I5 bound {s['i5_bound_ms']} ms)",
             f"  messages {s['messages']}, records written {s['records_written']} (log now "
             f"{s['log_entries']}), group epoch {s['group_epoch']}, checkpoints "
             f"{s['checkpoints']}, failovers {s['failovers']}",
             "  network " + ", ".join(f"{k} {v}" for k, v in s["network"].items()),
             "  members " + ", ".join(f"{k} {s[k]}" for k in (
                 "members_live", "processes", "heartbeats", "commits", "commits_accepted",
                 "commits_rejected", "zombie_commits_rejected", "fenced", "timeouts",
                 "fatal_restarts", "slow_revocations") if k in s),
             f"  workload {s.get('workload', 'idle')}" + ("" if "work" not in s else ": " + ", ".join(
                 f"{k} {v:g}" for k, v in sorted(s["work"].items()))),
             "", f"  {'disturbance':<22} {'at ms':>8} {'converge ms':>11} {'bumps':>5} "
                 f"{'moved':>5} {'downtime ms':>11} {'peak':>4} {'msgs':>6} {'records':>7}"]
    for d in r.disturbances:
        ttc = d["time_to_converge_ms"]
        lines.append(f"  {d['disturbance']:<22} {d['at_ms']:>8} "
                     f"{'-' if ttc is None else ttc:>11} {d.get('group_epoch_bumps', 0):>5} "
                     f"{d.get('resources_moved', 0):>5} {d.get('resource_downtime_ms', 0):>11} "
                     f"{d['peak_unowned']:>4} {d.get('messages', 0):>6} "
                     f"{d.get('records_written', 0):>7}")
    if r.violation is not None:
        lines += ["", r.violation.format()]
    return "\n".join(lines)


def print_result(r: SimResult, trace: str | None, as_json: bool) -> int:
    """What ``groupcoord simulate`` (and ``lab rerun``) print for one run: the trace to a file
    or stdout (``-``) if asked, then the JSON or the summary; the exit status (1: violation)."""
    if trace:
        text = r.trace_text()
        if trace == "-":
            sys.stdout.write(text)
        else:
            Path(trace).write_text(text)
    if as_json:
        print(json.dumps(r.as_json(), indent=2, sort_keys=True))
    else:
        print(format_summary(r))
    return 0 if r.ok else 1


def run_seeds(scenario: str, seeds: Iterable[int], protocol: str = "consumer",
              **kw: Any) -> list[SimResult]:
    return [simulate(scenario, seed, protocol, **kw) for seed in seeds]
