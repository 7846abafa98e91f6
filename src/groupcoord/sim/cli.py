"""``groupcoord simulate``: run the deterministic simulator from the command line (docs/simulator.md).

- ``groupcoord simulate --scenario NAME|FILE.toml --protocol consumer[:uniform|:range]
  --seed N [--trace FILE] [--json]``: one run; prints its summary (metrics per disturbance) or,
  with ``--json``, one JSON object; ``--trace FILE`` writes the full event trace (``-`` for
  stdout).
- ``groupcoord simulate --scenario random --seeds A-B``: many seeds (each seed draws its own
  random scenario and faults); prints one line per violation and how many passed.
- ``--list``: the built-in scenarios and the protocols.
- ``--shard-factory module:attr``: run against another coordinator (a test double, e.g. a
  deliberately broken one); it is part of the reproduce command a violation prints.

Exit status: 0 when every run kept every invariant, 1 on any violation, 2 on bad arguments.
CLI output goes to stdout with ``print`` (it is the command's product).
"""

from __future__ import annotations

import argparse
import json
import sys

from groupcoord.commands import command, int_at_least
from groupcoord.sim.engine import CHECKPOINT_ENTRIES, CHECKPOINT_EVERY
from groupcoord.sim.protocols import PROTOCOLS, protocol_labels
from groupcoord.sim.runner import parse_seeds, print_result, simulate
from groupcoord.sim.scenario import BUILTINS, ScenarioError, load_scenario
from groupcoord.sim.workload import IDLE, Workload, WorkloadError, parse_workload


def _list() -> int:
    print("scenarios:")
    print(f"  {'random':<28} a random group and fault schedule drawn from the seed")
    for name in sorted(BUILTINS):
        sc = load_scenario(name)
        print(f"  {name:<28} {sc.description}")
    print("protocols:")
    for spec in sorted(PROTOCOLS.values(), key=lambda s: s.name):
        print(f"  {spec.name}[:{'|'.join(spec.variants)}]  {spec.description}")
    return 0


def _workload(text: str) -> Workload:
    """``--workload``: ``idle`` or a JSON table of workload keys (over the default)."""
    if text == "idle":
        return IDLE
    try:
        raw = json.loads(text)
    except ValueError:
        raise ValueError(f"--workload: expected 'idle' or a JSON table, got {text!r}") from None
    try:
        return parse_workload("--workload", raw)
    except WorkloadError as e:
        raise ValueError(str(e)) from None


def _run(ns: argparse.Namespace) -> int:
    if ns.list:
        return _list()
    if ns.scenario is None:
        print("error: --scenario is required (see --list)", file=sys.stderr)
        return 2
    if ns.seeds is not None and ns.trace:
        print("error: --trace takes one run (--seed), not --seeds", file=sys.stderr)
        return 2
    try:
        seeds = parse_seeds(ns.seeds) if ns.seeds is not None else range(ns.seed, ns.seed + 1)
        if ns.scenario != "random":
            load_scenario(ns.scenario)  # fail early on a bad file
        kw = {"shard_factory": ns.shard_factory, "checkpoint_every": ns.checkpoint_every,
              "full_checks": ns.full_checks,
              "workload": None if ns.workload is None else _workload(ns.workload),
              "start_spread_ms": ns.start_spread_ms}
        if ns.seeds is None:
            r = simulate(ns.scenario, ns.seed, ns.protocol, record_trace=bool(ns.trace), **kw)
        else:
            r = None
    except (ScenarioError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    if r is not None:  # one run
        return print_result(r, ns.trace, ns.json)

    passed = 0
    failed: list[dict[str, object]] = []
    for seed in seeds:
        res = simulate(ns.scenario, seed, ns.protocol, **kw)
        if res.ok:
            passed += 1
        else:
            assert res.violation is not None
            failed.append(res.violation.as_json())
            if not ns.json:
                print(f"seed {seed}: {res.violation.invariant} at step {res.violation.step}: "
                      f"{res.violation.message}\n  reproduce with: {res.violation.command}")
    total = len(seeds)
    if ns.json:
        print(json.dumps({"scenario": ns.scenario, "protocol": ns.protocol, "seeds": ns.seeds,
                          "passed": passed, "failed": len(failed), "violations": failed},
                         indent=2, sort_keys=True))
    else:
        print(f"{passed}/{total} seeds passed ({ns.scenario}, {ns.protocol})")
    return 0 if not failed else 1


@command("simulate", "run the deterministic simulator: real coordinator, real members, faults")
def _simulate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", help="a built-in name, 'random', or a scenario file (.toml)")
    p.add_argument("--protocol", default="consumer",
                   help=f"protocol[:variant]: {', '.join(protocol_labels(every=True))} (default consumer)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the run (default 0)")
    p.add_argument("--seeds", help="A-B: run every seed from A to B (inclusive)")
    p.add_argument("--trace", metavar="FILE", help="write the full event trace ('-': stdout)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--shard-factory", metavar="MODULE:ATTR",
                   help="build the coordinator shard with this factory or Shard subclass")
    p.add_argument("--checkpoint-every", type=int, default=CHECKPOINT_EVERY, metavar="STEPS",
                   help=f"I4: rebuild the shard from its log every STEPS events (default "
                        f"{CHECKPOINT_EVERY}; per {CHECKPOINT_ENTRIES:,} entries once the "
                        f"compacted log is larger)")
    p.add_argument("--full-checks", action="store_true",
                   help="also check every invariant on the whole state after every request")
    p.add_argument("--workload", metavar="idle|JSON",
                   help="what the members' applications do, over the scenario's [workload]: "
                        "'idle' (no work), or a JSON table such as "
                        "'{\"processing_ms\": 5}' (see sim/workload.py)")
    p.add_argument("--start-spread-ms", type=int_at_least(0), metavar="MS",
                   help="initial members start at an offset drawn from [0, MS) with the seed "
                        "(the lab uses the heartbeat interval; default: the scenario's, 0)")
    p.add_argument("--list", action="store_true", help="list the scenarios and protocols")
    p.set_defaults(func=_run)
