"""CPU seconds of the paper spec's runs without Spark, per grid, with a fingerprint of each
run's rows: the before/after of a simulator change on the lab's real workload.

Every run of ``lab run --spec paper`` (or, with ``--first-seed``, every cell's first seed: 328
runs) goes through ``lab.runs.run_one`` in a process pool, largest groups first; the output
JSON has per run its grid, CPU seconds (user and system time of the process and of the
paired control it forks, around ``run_one``), steps and a
digest of its rows in every table (``wall_ms``, and the summary's counts of I4 checkpoints
and of invariant checks, left out), and per grid the CPU total. Two
trees side by side, same time (each from its own ``src``)::

    PYTHONPATH=/tmp/ref/src .venv/bin/python -m benchmarks.paper_cells /tmp/ref.json --first-seed &
    .venv/bin/python -m benchmarks.paper_cells /tmp/new.json --first-seed
    .venv/bin/python -m benchmarks.paper_cells --compare /tmp/ref.json /tmp/new.json

``--compare`` prints the CPU per grid of both and the runs whose rows differ (exit 1 if any).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import resource
import sys
import time
from dataclasses import replace
from multiprocessing import Pool
from typing import Any

from benchmarks._harness import Result
from groupcoord.lab.spec import RunParams, expand, load_spec


@functools.lru_cache(maxsize=1)
def _grid_names() -> dict[str, str]:
    """Run id -> the paper spec's first grid that has the run (``lab.spec.expand`` runs a run
    two grids share once, in the first)."""
    spec = load_spec("paper")
    out: dict[str, str] = {}
    for g in getattr(spec, "grids", ()):
        for r in expand(replace(spec, grids=(g,))):
            out.setdefault(r.run_id, g.name)
    return out


def grid_of(r: RunParams) -> str:
    """The paper spec's grid of a run: its name in the spec; for a tree whose spec has no
    grids, told apart by its workload and size."""
    name = _grid_names().get(r.run_id)
    if name is not None:
        return name
    if r.workload == "16x8c":
        return "kip415"
    if r.scenario == "grow-by-900":
        return "anchor"
    if r.workload.startswith("4x8-"):
        return "crossover"
    if r.size in (300, 1000):
        return "consumers-1000"
    if r.scenario == "rolling-bounce":
        return "rolling"
    return "consumers"


#: Which runs: every run of the spec, every cell's first seed, or (``quick``, the benchmark's
#: shape test) one first seed per grid, at the grid's smallest size.
SELECTIONS = ("all", "first", "quick")


@functools.lru_cache(maxsize=len(SELECTIONS))
def _runs(selection: str) -> list[RunParams]:
    runs = expand(load_spec("paper"))
    if selection == "all":
        return runs
    runs = [r for r in runs if r.replicate == 0]
    if selection == "first":
        return runs
    smallest: dict[str, int] = {}
    for r in runs:
        g = grid_of(r)
        smallest[g] = min(smallest.get(g, 1 << 30), r.size or 0)
    seen: set[str] = set()
    out = []
    for r in runs:
        g = grid_of(r)
        if (r.size or 0) == smallest[g] and g not in seen:
            seen.add(g)
            out.append(r)
    return out


def spec_runs_per_grid() -> dict[str, int]:
    """How many runs each grid of the whole spec has (all seeds)."""
    counts: dict[str, int] = {}
    for r in expand(load_spec("paper")):
        counts[grid_of(r)] = counts.get(grid_of(r), 0) + 1
    return counts


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (the paired control runs
    in a child forked from the run: ``lab.runs.simulate_with_control``)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _one(arg: tuple[int, str]) -> tuple[int, float, int, str, dict[str, Any]]:
    from groupcoord.lab.runs import flatten, run_one

    i, selection = arg
    r = _runs(selection)[i]
    c0 = _cpu()
    res = run_one(r)
    cpu = _cpu() - c0
    tables = flatten(res)
    for rows in tables.values():
        for row in rows:
            row.pop("wall_ms", None)
            if "summary_json" in row:  # how often the invariants were checked: no figure
                summary = json.loads(row["summary_json"])
                row["summary_json"] = json.dumps(
                    {k: v for k, v in summary.items()
                     if k != "checkpoints" and not k.endswith("_checks")}, sort_keys=True)
    digest = hashlib.sha256(json.dumps(tables, sort_keys=True, default=str).encode()).hexdigest()
    return i, cpu, int(res["steps"] or 0), digest, tables


def measure(out: str | None, selection: str, jobs: int,
            keep_rows: bool = False) -> dict[str, Any]:
    """Run the selected runs in a pool of ``jobs`` processes, largest groups first; the
    result (written to ``out`` as JSON when given): wall and CPU seconds, CPU per grid, and
    ``spec_cpu_s``, the whole spec's CPU estimated from it (each grid's CPU per run times its
    runs in the spec). ``keep_rows``: each run's rows too, for ``--compare``'s tolerance."""
    import groupcoord

    runs = _runs(selection)
    order = sorted(range(len(runs)), key=lambda i: -(runs[i].size or 0))
    w0 = time.perf_counter()
    found: dict[str, dict[str, Any]] = {}
    with Pool(jobs) as pool:
        for i, cpu, steps, digest, tables in pool.imap_unordered(
                _one, [(i, selection) for i in order]):
            r = runs[i]
            found[r.run_id] = {"grid": grid_of(r), "cpu_s": round(cpu, 3), "steps": steps,
                               "rows": digest, "run": f"{r.scenario}/{r.protocol}/{r.size}/"
                                                     f"{r.workload}/{r.replicate}"}
            if keep_rows:
                found[r.run_id]["tables"] = tables
    wall = time.perf_counter() - w0
    grids: dict[str, float] = {}
    counts: dict[str, int] = {}
    for v in found.values():
        grids[v["grid"]] = round(grids.get(v["grid"], 0.0) + v["cpu_s"], 3)
        counts[v["grid"]] = counts.get(v["grid"], 0) + 1
    in_spec = spec_runs_per_grid()
    spec_cpu = sum(grids[g] / counts[g] * in_spec.get(g, 0) for g in grids)
    result = {"groupcoord": groupcoord.__file__, "selection": selection, "jobs": jobs,
              "wall_s": round(wall, 1),
              "cpu_s": round(sum(v["cpu_s"] for v in found.values()), 1), "grids": grids,
              "runs_per_grid": counts, "spec_runs_per_grid": in_spec,
              "spec_cpu_s": round(spec_cpu, 3), "runs": found}
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=0, sort_keys=True)
    return result


def run(quick: bool = False) -> list[Result]:
    """``groupcoord bench paper_cells [--json]``: every cell's first seed of the paper spec
    (quick: one small run per grid) in a pool of 2 processes without Spark (the
    simulations are what the spec's wall time is made of; Spark's start, the tables and the
    report add under a minute). ``lab.paper.wall_ms``: the pool's wall time;
    ``lab.paper.cpu_ms.grid=NAME``: CPU time per grid (user and system, the forked paired
    controls included); ``lab.paper.spec_cpu_ms``: the whole spec's CPU estimated from them.
    On 2 cores the spec's simulations take at least half that CPU time in wall time."""
    res = measure(None, "quick" if quick else "first", 2)
    params = {"selection": res["selection"], "jobs": res["jobs"], "runs": len(res["runs"]),
              "cpu_s": res["cpu_s"], "wall_s": res["wall_s"]}
    out = [Result("lab.paper.wall_ms", res["wall_s"] * 1000.0, "ms", params),
           Result("lab.paper.spec_cpu_ms", res["spec_cpu_s"] * 1000.0, "ms",
                  {**params, "spec_runs_per_grid": res["spec_runs_per_grid"]})]
    for g, cpu in sorted(res["grids"].items()):
        out.append(Result(f"lab.paper.cpu_ms.grid={g}", cpu * 1000.0, "ms",
                          {"runs": res["runs_per_grid"][g],
                           "spec_runs": res["spec_runs_per_grid"].get(g, 0)}))
    return out


def _differences(a: Any, b: Any, rel_tol: float, where: str = "") -> list[str]:
    """Where two runs' rows differ: a number of a lag column (``lag`` in its name, or in the
    summary's JSON) by more than ``rel_tol`` (relative; absolute below 1e-3 records), anything
    else at all."""
    if isinstance(a, str) and isinstance(b, str) and a.startswith("{") and b.startswith("{"):
        with contextlib.suppress(ValueError):
            a, b = json.loads(a), json.loads(b)
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: in one only")
            else:
                out += _differences(a[k], b[k], rel_tol, f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} rows against {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, rel_tol, f"{where}[{i}]")]
    if a == b:
        return []
    if "lag" in where.rsplit(".", 1)[-1] and isinstance(a, int | float) \
            and isinstance(b, int | float) and not isinstance(a, bool) \
            and abs(a - b) <= max(rel_tol * max(abs(a), abs(b)), 1e-3):
        return []
    return [f"{where}: {a!r} -> {b!r}"]


def compare(a_path: str, b_path: str, rel_tol: float | None = None) -> int:
    """The CPU per grid of two measurements and the runs whose rows differ; with
    ``rel_tol`` (both files written with ``--rows``), lag columns may differ by that much
    (relative) and every other difference is printed."""
    with open(a_path) as f:
        a = json.load(f)
    with open(b_path) as f:
        b = json.load(f)
    for g in sorted(set(a["grids"]) | set(b["grids"])):
        x, y = a["grids"].get(g, 0.0), b["grids"].get(g, 0.0)
        print(f"{g:<16} {x:8.1f} s {y:8.1f} s  {(y / x - 1) * 100 if x else 0:+.0f} %")
    print(f"{'total':<16} {a['cpu_s']:8.1f} s {b['cpu_s']:8.1f} s")
    differ = []
    for k in a["runs"]:
        if k not in b["runs"] or a["runs"][k]["rows"] == b["runs"][k]["rows"]:
            continue
        ra, rb = a["runs"][k], b["runs"][k]
        if rel_tol is not None and "tables" in ra and "tables" in rb:
            found = _differences(ra["tables"], rb["tables"], rel_tol)
            if not found:
                continue
            for d in found[:5]:
                print(f"  {ra['run']}: {d}")
        differ.append(k)
        print(f"rows differ: {a['runs'][k]['run']}")
    missing = set(a["runs"]) ^ set(b["runs"])
    print(f"{len(set(a['runs']) & set(b['runs']))} runs compared, {len(differ)} differ"
          f"{'' if rel_tol is None else f' beyond {rel_tol:g} on lag columns'}, "
          f"{len(missing)} in one file only")
    return 1 if differ or missing else 0


def schedule_estimate(path: str, cores: int = 2, draws: int = 50) -> dict[str, float]:
    """The whole spec's wall time on ``cores`` estimated from a measurement (``out`` of
    :func:`measure`), every run costing its cell's first seed: Spark's list scheduling (each
    task to the first free core, in partition order) replayed for the sweep's order
    (``lab.sweep.task_chunks``: largest first) and for the order before it (run ids, spread by
    ``repartition``'s round robin from a random start per input slice: ``draws`` draws)."""
    import heapq
    import random

    from groupcoord.lab.sweep import runs_per_task, task_chunks

    with open(path) as f:
        found = json.load(f)
    cell = {v["run"].rsplit("/", 1)[0]: v["cpu_s"] for v in found["runs"].values()}
    runs = expand(load_spec("paper"))

    def cpu(r: RunParams) -> float:
        return float(cell[f"{r.scenario}/{r.protocol}/{r.size}/{r.workload}"])

    def makespan(tasks: list[list[RunParams]]) -> float:
        free = [0.0] * cores
        for t in tasks:
            heapq.heappush(free, heapq.heappop(free) + sum(map(cpu, t)))
        return max(free)

    per = runs_per_task(len(runs), cores)
    n_tasks = -(-len(runs) // per)
    by_id = sorted(runs, key=lambda r: r.run_id)
    half = -(-len(by_id) // cores)
    old = []
    for seed in range(draws):
        rnd = random.Random(seed)
        tasks: list[list[RunParams]] = [[] for _ in range(n_tasks)]
        for s in range(cores):
            start = rnd.randrange(n_tasks)
            for j, r in enumerate(by_id[s * half:(s + 1) * half]):
                tasks[(start + j) % n_tasks].append(r)
        old.append(makespan(tasks))
    old.sort()
    total = sum(map(cpu, runs))
    return {"runs": len(runs), "cpu_s": round(total, 1),
            "bound_s": round(max(total / cores, max(map(cpu, runs))), 1),
            "largest_first_s": round(makespan(task_chunks(runs, per, cores)), 1),
            "before_median_s": round(old[len(old) // 2], 1), "before_worst_s": round(old[-1], 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.paper_cells")
    p.add_argument("out", nargs="?")
    p.add_argument("--first-seed", action="store_true", help="every cell's first seed only")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    p.add_argument("--rows", action="store_true", help="keep each run's rows in the output")
    p.add_argument("--rel-tol", type=float, default=None,
                   help="with --compare: lag columns may differ by this much (relative)")
    p.add_argument("--schedule", metavar="MEASUREMENT",
                   help="the whole spec's wall time on 2 cores estimated from a measurement, "
                        "the sweep's order against the one before it")
    ns = p.parse_args(argv)
    if ns.schedule:
        print(json.dumps(schedule_estimate(ns.schedule)))
        return 0
    if ns.compare:
        return compare(*ns.compare, rel_tol=ns.rel_tol)
    if not ns.out:
        p.error("give the output file (or --compare A B)")
    res = measure(ns.out, "first" if ns.first_seed else "all", ns.jobs, keep_rows=ns.rows)
    print(json.dumps({k: res[k] for k in ("groupcoord", "wall_s", "cpu_s", "grids",
                                          "spec_cpu_s")}))
    return 0


if __name__ == "__main__":  # pragma: no cover - manual runs
    sys.exit(main())
