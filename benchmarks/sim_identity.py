"""The simulator's behaviour, fingerprinted: a check that a speed-up changed nothing a run shows.

A change to the simulator's hot paths (``sim/engine.py``, ``sim/workload.py``,
``sim/application.py``, ``sim/network.py``) must keep every run's trace byte-identical and the
lab's rows identical (every column but ``wall_ms``). This module writes one fingerprint per run
of a fixed set, from whatever ``groupcoord`` the interpreter imports, and compares two such
files:

- every built-in scenario x every protocol label x ``--seeds`` (default 0-2): the full trace
  (``record_trace``), the summary, the disturbance windows, the steps, the simulated time and
  the violation, if any (the built-in scenarios' members do the default work);
- ``random`` for ``--random-seeds`` (default 0-19), each seed with its own drawn workload;
- the simulator benchmark's groups (``benchmarks.sim``) at 10 members x 100 partitions, steady
  and rolling bounce, idle and with the default work;
- every ``--lab-every``-th run of the paper spec (``lab.spec``; default every 25th, ~40 runs)
  through ``lab.runs.run_one``: its rows of every table, ``wall_ms`` left out.

Usage, comparing a branch with a reference worktree (``git worktree add /tmp/ref main``)::

    PYTHONPATH=/tmp/ref/src .venv/bin/python -m benchmarks.sim_identity write /tmp/ref.json
    .venv/bin/python -m benchmarks.sim_identity write /tmp/new.json
    .venv/bin/python -m benchmarks.sim_identity compare /tmp/ref.json /tmp/new.json

``write`` prints which ``groupcoord`` it imported (check it is the one meant); ``--jobs N``
runs N processes. ``compare`` prints every run whose fingerprint differs with the first field
that differs, and exits 1 if any does (or if a run is in one file only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

#: A run to fingerprint: (kind, name, arguments).
Case = tuple[str, str, tuple[Any, ...]]


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _sim_fields(r: Any) -> dict[str, str]:
    return {"trace": _digest(r.trace_text()),
            "summary": _digest(json.dumps(r.summary, sort_keys=True, default=str)),
            "disturbances": _digest(json.dumps(r.disturbances, sort_keys=True, default=str)),
            "steps": str(r.steps), "sim_time_ms": str(r.sim_time_ms),
            "violation": "" if r.violation is None else _digest(
                json.dumps(r.violation.as_json(), sort_keys=True, default=str))}


def _run_case(case: Case) -> tuple[str, dict[str, str]]:
    kind, name, args = case
    if kind == "sim":
        from groupcoord.sim.runner import simulate

        scenario, protocol, seed = args
        return name, _sim_fields(simulate(scenario, seed, protocol, record_trace=True))
    if kind == "bench":
        from benchmarks import sim as bench
        from groupcoord.sim.runner import simulate
        from groupcoord.sim.workload import DEFAULT_WORKLOAD, IDLE

        which, work = args
        wl = DEFAULT_WORKLOAD if work else IDLE
        sc = bench.steady(10, 100, 120, wl) if which == "steady" else \
            bench.rolling_bounce(10, 100, workload=wl)
        return name, _sim_fields(simulate(sc, 1, record_trace=True))
    from groupcoord.lab.runs import flatten, run_one
    from groupcoord.lab.spec import expand, load_spec

    (index,) = args
    params = expand(load_spec("paper"))[index]
    tables = flatten(run_one(params))
    for rows in tables.values():
        for row in rows:
            row.pop("wall_ms", None)
    return name, {table: _digest(json.dumps(rows, sort_keys=True, default=str))
                  for table, rows in sorted(tables.items())}


def cases(seeds: range, random_seeds: range, lab_every: int) -> list[Case]:
    from groupcoord.lab.spec import expand, load_spec
    from groupcoord.sim.protocols import protocol_labels
    from groupcoord.sim.scenario import BUILTINS

    out: list[Case] = []
    for scenario in sorted(BUILTINS):
        for protocol in protocol_labels():
            for seed in seeds:
                out.append(("sim", f"{scenario}/{protocol}/{seed}", (scenario, protocol, seed)))
    for seed in random_seeds:
        out.append(("sim", f"random/consumer/{seed}", ("random", "consumer", seed)))
    for which in ("steady", "rolling-bounce"):
        for work in (False, True):
            out.append(("bench", f"bench-{which}/{'work' if work else 'idle'}", (which, work)))
    if lab_every > 0:
        runs = expand(load_spec("paper"))
        for i in range(0, len(runs), lab_every):
            r = runs[i]
            out.append(("lab", f"paper/{i}/{r.scenario}/{r.protocol}/{r.size}/{r.workload}/"
                               f"{r.seed}", (i,)))
    return out


def _range(text: str) -> range:
    a, sep, b = text.partition("-")
    return range(int(a), (int(b) if sep else int(a)) + 1)


def write(path: str, seeds: range, random_seeds: range, lab_every: int, jobs: int,
          progress: Callable[[str], None]) -> int:
    import groupcoord

    todo = cases(seeds, random_seeds, lab_every)
    progress(f"groupcoord from {groupcoord.__file__}: {len(todo)} runs")
    out: dict[str, dict[str, str]] = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for name, fp in pool.map(_run_case, todo, chunksize=4):
                out[name] = fp
    else:
        for case in todo:
            name, fp = _run_case(case)
            out[name] = fp
    with open(path, "w") as f:
        json.dump({"groupcoord": groupcoord.__file__, "runs": out}, f, indent=0, sort_keys=True)
    progress(f"wrote {len(out)} fingerprints to {path}")
    return 0


def compare(a_path: str, b_path: str) -> int:
    with open(a_path) as f:
        a = json.load(f)["runs"]
    with open(b_path) as f:
        b = json.load(f)["runs"]
    bad = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"{name}: only in {a_path if name in a else b_path}")
            bad += 1
            continue
        diff = [k for k in sorted(set(a[name]) | set(b[name])) if a[name].get(k) != b[name].get(k)]
        if diff:
            print(f"{name}: differs in {', '.join(diff)}")
            bad += 1
    print(f"{len(set(a) & set(b))} runs compared, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sim_identity",
                                description="fingerprint simulator runs; compare two sets")
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--seeds", type=_range, default=range(0, 3))
    w.add_argument("--random-seeds", type=_range, default=range(0, 20))
    w.add_argument("--lab-every", type=int, default=25,
                   help="every Nth run of the paper spec (0: none)")
    w.add_argument("--jobs", type=int, default=1)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    ns = p.parse_args(argv)
    if ns.cmd == "compare":
        return compare(ns.a, ns.b)
    return write(ns.out, ns.seeds, ns.random_seeds, ns.lab_every, ns.jobs,
                 lambda s: print(s, file=sys.stderr, flush=True))


if __name__ == "__main__":  # pragma: no cover - manual runs
    sys.exit(main())
