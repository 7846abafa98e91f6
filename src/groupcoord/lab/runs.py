"""One run of a sweep, in plain Python: build the cell's scenario, simulate, shape the rows.

This is what every Spark executor calls once per run (``lab.sweep``), what the benchmark's
process pool calls, and what the tests compare Spark's tables against. It imports no Spark.

:func:`run_one` returns one *result*: the ``runs`` row (the run's parameters and its summary
metrics) with three nested parts, ``disturbances`` (one row per disturbance window the
simulator measured), ``events`` (the trace, when the spec asks for it) and ``violation`` (or
None). :func:`flatten` splits a result into the rows of the four tables.

**Summary metrics of a run** (columns of ``runs``). The simulator measures each disturbance
in a window from its start until the group converges again (``sim.engine``). The *headline*
metrics are those of the scenario's disturbances, the initial join left out:

- ``convergence_ms``: the longest time to converge of those windows (null if one did not
  converge: ``converged`` is then false);
- ``resources_moved``, ``resource_downtime_ms`` (resource-milliseconds without an active
  owner) and ``epoch_bumps`` (group epoch bumps): the run's totals minus what the initial-join
  window counted, i.e. everything after the group first settled (none of them grows while the
  group is stable, and overlapping windows are not counted twice);
- ``messages`` and ``records_written``: summed over those windows (steady-state heartbeats
  and commits after convergence left out; windows that overlap count their overlap twice);
- ``peak_unowned``: the most resources without an owner at once in those windows.

A scenario without disturbances (``join``, say) reports its initial-join window instead.
``total_*`` columns are the whole run's figures. ``wall_ms`` is the only column that is not a
function of the run's parameters.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import replace
from typing import Any

from groupcoord.lab.spec import SCENARIO_DEFAULT, RunParams, is_connect_protocol, scale
from groupcoord.sim.engine import SimResult
from groupcoord.sim.network import NetworkFaults
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import (
    Event,
    Scenario,
    ScenarioError,
    connectors_as_topics,
    load_scenario,
    parse_scenario,
    with_workload,
)
from groupcoord.sim.workload import WORK_METRICS, WorkloadError, parse_workload

INITIAL = "initial-join"

#: Metric columns of a ``runs`` row (after the parameters), in order, with their kinds.
RUN_METRICS: tuple[tuple[str, str], ...] = (
    ("members", "int"), ("total_topics", "int"), ("total_partitions", "int"),
    ("ok", "bool"), ("invariant", "str"), ("converged", "bool"), ("convergence_ms", "long"),
    ("resources_moved", "long"), ("resource_downtime_ms", "long"), ("epoch_bumps", "long"),
    ("messages", "long"), ("records_written", "long"), ("peak_unowned", "long"),
    ("disturbance_count", "int"),
    # the members' applications (``sim.workload``; null when the workload is idle)
    ("work_model", "str"), ("records_processed", "long"), ("lag_peak", "long"),
    ("lag_record_s", "double"), ("stall_ms", "long"), ("paused_partition_s", "double"),
    ("records_reprocessed", "long"), ("task_restarts", "long"),
    ("total_moved", "long"), ("total_downtime_ms", "long"), ("group_epoch", "long"),
    ("total_messages", "long"), ("total_records", "long"), ("failovers", "long"),
    ("steps", "long"), ("sim_time_ms", "long"), ("wall_ms", "double"), ("summary_json", "str"),
)

#: Columns of a ``disturbances`` row after the run's keys.
DISTURBANCE_FIELDS: tuple[tuple[str, str], ...] = (
    ("window", "int"), ("disturbance", "str"), ("at_ms", "long"), ("settled_ms", "long"),
    ("converged", "bool"), ("time_to_converge_ms", "long"), ("peak_unowned", "long"),
    ("group_epoch_bumps", "long"), ("resources_moved", "long"),
    ("resource_downtime_ms", "long"), ("messages", "long"), ("records_written", "long"),
    ("records_processed", "long"), ("lag_peak", "long"), ("lag_record_s", "double"),
    ("stall_ms", "long"), ("paused_partition_s", "double"), ("records_reprocessed", "long"),
    ("task_restarts", "long"),
)

#: Columns of an ``events`` row (one trace line) after the run's keys.
EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("seq", "int"), ("time_ms", "long"), ("step", "long"), ("event", "str"), ("detail", "str"),
)

#: Columns of a ``violations`` row after the run's keys.
VIOLATION_FIELDS: tuple[tuple[str, str], ...] = (
    ("invariant", "str"), ("message", "str"), ("step", "long"), ("time_ms", "long"),
    ("command", "str"), ("trace", "str_list"),
)

#: Run columns repeated in the child tables (disturbances, events, violations).
KEY_COLUMNS: tuple[str, ...] = ("run_id", "sweep", "protocol", "scenario", "size", "workload",
                                "fault_rate", "replicate", "seed")

_NAME = re.compile(r"^c(\d+)$")


# --------------------------------------------------------------------------- scenarios


def _rename(name: str, orig: int, size: int) -> str:
    """Member names of the original scenario, in a group of ``size`` initial members."""
    m = _NAME.match(name)
    if m is None:
        return name  # "any", "all", "*"
    i = int(m.group(1))
    return f"c{min(i, size)}" if i <= orig else f"c{i - orig + size}"


def _resize_event(ev: Event, orig: int, size: int) -> Event:
    p = dict(ev.params)
    if isinstance(p.get("member"), str):
        p["member"] = _rename(p["member"], orig, size)
    if p.get("members"):
        p["members"] = tuple(dict.fromkeys(_rename(n, orig, size) for n in p["members"]))
    if ev.kind == "scale-in":
        p["count"] = max(1, min(int(p["count"]), size - 1))
    return replace(ev, params=p)


def _retopic_event(ev: Event, factors: dict[str, float], default: float) -> Event:
    if ev.kind == "add-partitions":
        f = factors.get(ev["topic"], default)
        return replace(ev, params={**ev.params, "partitions": scale(int(ev["partitions"]), f)})
    if ev.kind == "create-topic":
        return replace(ev, params={**ev.params, "partitions": scale(int(ev["partitions"]),
                                                                     default)})
    return ev


def build_scenario(params: RunParams) -> Scenario:
    """The scenario of a run: the named one (inline, file, built-in or drawn from the seed)
    changed by the cell's size, workload and fault rate (see ``lab.spec``)."""
    if params.scenario_def is not None:
        sc = parse_scenario(json.loads(params.scenario_def), source=params.scenario)
    else:
        sc = load_scenario(params.scenario, params.seed)
    changes: dict[str, Any] = {}
    events = sc.events
    if params.size is not None and params.size != sc.members:
        events = tuple(_resize_event(e, sc.members, params.size) for e in events)
        changes["members"] = params.size
    if params.topics is not None and params.partitions is not None:
        # A Connect scenario for a consumer protocol: its connectors as topics first.
        sc = connectors_as_topics(replace(sc, events=events))
        events = sc.events
        names = [n for n, _ in sc.topics][:params.topics]
        first = names[0] if names else "t"
        names += [f"{first}_{i}" for i in range(len(names) + 1, params.topics + 1)]
        changes["topics"] = tuple((n, params.partitions) for n in names)
        factors = {n: params.partitions / p for n, p in sc.topics}
        default = params.partitions / sc.topics[0][1] if sc.topics else 1.0
        events = tuple(_retopic_event(e, factors, default) for e in events)
        if sc.subscription is not None and first in sc.subscription:
            extra = tuple(n for n in names if n not in sc.subscription and n.startswith(first))
            changes["subscription"] = (*sc.subscription, *extra)
    if params.connectors is not None or params.tasks is not None:
        changes["connectors"] = tuple((f"connector-{i}", params.tasks)
                                      for i in range(params.connectors or 0))
    if params.fault_rate is not None:
        r = params.fault_rate
        changes["faults"] = NetworkFaults(loss=r, response_loss=r, duplicate=r, reorder=r)
    if events is not sc.events:
        changes["events"] = events
    sc = replace(sc, **changes) if changes else sc
    if params.work is not None:
        try:
            wl = parse_workload(f"workload {params.workload}", json.loads(params.work),
                                base=sc.workload)
        except WorkloadError as e:
            raise ScenarioError(str(e)) from None
        sc = with_workload(sc, wl)
    if sc.start_spread_ms is None:  # members start at phases drawn from the seed
        sc = replace(sc, start_spread_ms=sc.heartbeat_interval_ms)
    return sc


def repro_command(params: RunParams) -> str:
    """A command that reruns exactly this run (and prints its summary and violation)."""
    parts = ["groupcoord", "lab", "rerun", "--scenario", params.scenario, "--protocol",
             params.protocol, "--seed", str(params.seed)]
    if params.scenario_def is not None and not params.scenario.endswith(".toml"):
        parts += ["--spec", params.spec_ref]
    if params.size is not None:
        parts += ["--size", str(params.size)]
    if params.topics is not None and params.partitions is not None:
        parts += ["--topics", str(params.topics), "--partitions", str(params.partitions)]
    if params.connectors is not None and params.tasks is not None:
        parts += ["--connectors", str(params.connectors), "--tasks", str(params.tasks)]
    if params.fault_rate is not None:
        parts += ["--fault-rate", repr(params.fault_rate)]
    if params.max_steps is not None:
        parts += ["--max-steps", str(params.max_steps)]
    if params.checkpoint_every != 2_000:
        parts += ["--checkpoint-every", str(params.checkpoint_every)]
    if params.work is not None:
        parts += ["--work", params.work]
    return " ".join(shlex.quote(p) for p in parts)


def needs_lab_rerun(params: RunParams) -> bool:
    """False when ``groupcoord simulate`` alone reproduces the run (no cell override)."""
    return (params.scenario_def is not None and not params.scenario.endswith(".toml")) or any(
        v is not None for v in (params.size, params.topics, params.connectors,
                                params.fault_rate, params.max_steps, params.work)) or (
        params.checkpoint_every != 2_000)


# --------------------------------------------------------------------------- one run


def simulate_run(params: RunParams, scenario: Scenario | None = None) -> SimResult:
    """Run the simulator on the cell's scenario with the run's seed."""
    sc = scenario if scenario is not None else build_scenario(params)
    return simulate(sc, params.seed, params.protocol, record_trace=params.events,
                    checkpoint_every=params.checkpoint_every, max_steps=params.max_steps)


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _work_value(name: str, v: Any) -> int | float | None:
    if v is None:
        return None
    if name in ("lag_record_s", "paused_partition_s"):
        return round(float(v), 3)
    return round(float(v))


def _work_head(summary: dict[str, Any], initial: dict[str, Any] | None,
               measured: list[dict[str, Any]]) -> dict[str, int | float | None]:
    """The headline application metrics of a run (null when the workload is idle): what
    happened after the initial join settled, until the run ended (the group converged and the
    applications caught up, or the I5 deadline): the run's totals minus the initial-join
    window's, and the lag's peak since then. A scenario without disturbances reports its
    initial-join window."""
    work = summary.get("work")
    if work is None:
        return dict.fromkeys(WORK_METRICS)
    if initial is None or (measured and measured[0] is initial):
        return {k: _work_value(k, initial.get(k)) if initial else None for k in WORK_METRICS}
    out: dict[str, int | float | None] = {}
    for k in WORK_METRICS:
        if k == "lag_peak":
            out[k] = round(float(work.get("lag_peak_after_initial", 0.0)))
        else:
            out[k] = _work_value(k, float(work[k]) - float(initial.get(k) or 0))
    return out


def _parse_trace_line(line: str) -> tuple[int, int, str, str]:
    """``time step event detail`` from the simulator's fixed-width trace line."""
    parts = line.split(None, 2)
    t = int(parts[0]) if parts else 0
    step = int(parts[1]) if len(parts) > 1 else 0
    rest = parts[2] if len(parts) > 2 else ""
    event, detail = (rest[:12].rstrip(), rest[13:].strip()) if len(rest) > 12 else (rest, "")
    return int(t), int(step), event, detail


def summarize(params: RunParams, sc: Scenario, res: SimResult, wall_ms: float) -> dict[str, Any]:
    """The nested result of one run (see the module docstring)."""
    s = res.summary
    windows = res.disturbances
    initial = next((w for w in windows if w["disturbance"] == INITIAL), None)
    rest = [w for w in windows if w["disturbance"] != INITIAL]
    totals = {"resources_moved": int(s["resources_moved"]),
              "resource_downtime_ms": int(s["resource_downtime_ms"]),
              "group_epoch_bumps": int(s["group_epoch"]), "messages": int(s["messages"]),
              "records_written": int(s["records_written"])}
    if rest:
        head = {k: v - int((initial or {}).get(k, 0)) for k, v in totals.items()}
        for k in ("messages", "records_written"):  # the windows only: no steady-state traffic
            head[k] = sum(int(w.get(k, 0)) for w in rest)
        measured = rest
    else:
        w0 = initial or {}
        head = {k: int(w0.get(k, 0)) for k in totals}
        measured = [w0] if initial is not None else []
    converged = bool(measured) and all(w["converged"] for w in measured)
    convergence = (max(int(w["time_to_converge_ms"]) for w in measured) if converged else None)
    v = res.violation
    command = None
    if v is not None:
        command = repro_command(params) if needs_lab_rerun(params) else v.command
    row: dict[str, Any] = params.as_row()
    row.update({
        "members": sc.members, "total_topics": len(sc.topics),
        "total_partitions": sum(p for _, p in sc.topics),
        "ok": res.ok, "invariant": None if v is None else v.invariant,
        "converged": converged, "convergence_ms": convergence,
        "resources_moved": head["resources_moved"],
        "resource_downtime_ms": head["resource_downtime_ms"],
        "epoch_bumps": head["group_epoch_bumps"], "messages": head["messages"],
        "records_written": head["records_written"],
        "peak_unowned": max((int(w["peak_unowned"]) for w in measured), default=0),
        "disturbance_count": len(rest),
        "work_model": str(s.get("workload", "idle")),
        **_work_head(s, initial, measured),
        "total_moved": totals["resources_moved"],
        "total_downtime_ms": totals["resource_downtime_ms"],
        "group_epoch": totals["group_epoch_bumps"], "total_messages": totals["messages"],
        "total_records": totals["records_written"], "failovers": int(s.get("failovers", 0)),
        "steps": res.steps, "sim_time_ms": res.sim_time_ms, "wall_ms": wall_ms,
        "summary_json": json.dumps(s, sort_keys=True, default=str),
    })
    row["disturbance_rows"] = [
        {"window": i, "disturbance": w["disturbance"], "at_ms": int(w["at_ms"]),
         "settled_ms": int(w["settled_ms"]), "converged": bool(w["converged"]),
         "time_to_converge_ms": _int(w["time_to_converge_ms"]),
         "peak_unowned": int(w["peak_unowned"]),
         **{k: _int(w.get(k)) for k in ("group_epoch_bumps", "resources_moved",
                                         "resource_downtime_ms", "messages", "records_written")},
         **{k: _work_value(k, w.get(k)) for k in WORK_METRICS}}
        for i, w in enumerate(windows)]
    events = []
    for i, line in enumerate(res.trace):
        t, step, event, detail = _parse_trace_line(line)
        events.append({"seq": i, "time_ms": t, "step": step, "event": event, "detail": detail})
    row["event_rows"] = events
    row["violation_row"] = None if v is None else {
        "invariant": v.invariant, "message": v.message, "step": v.step, "time_ms": v.time_ms,
        "command": command, "trace": list(v.trace)}
    return row


def run_one(params: RunParams) -> dict[str, Any]:
    """Simulate one run and return its nested result (never raises on a violation; a scenario
    that cannot run at all is reported as a violation ``setup`` with the error)."""
    t0 = time.perf_counter()
    try:
        sc = build_scenario(params)
        res = simulate_run(params, sc)
    except Exception as e:  # a crash of the simulator itself is a finding, not a lost run
        return failed_result(params, e, (time.perf_counter() - t0) * 1000.0)
    return summarize(params, sc, res, (time.perf_counter() - t0) * 1000.0)


def failed_result(params: RunParams, error: BaseException, wall_ms: float) -> dict[str, Any]:
    """The result of a run whose scenario or simulation raised (invariant ``setup``)."""
    row: dict[str, Any] = params.as_row()
    for name, _ in RUN_METRICS:
        row[name] = None
    row.update({"ok": False, "invariant": "setup", "converged": False, "wall_ms": wall_ms,
                "summary_json": "{}"})
    row["disturbance_rows"] = []
    row["event_rows"] = []
    row["violation_row"] = {"invariant": "setup", "message": f"{type(error).__name__}: {error}",
                            "step": 0, "time_ms": 0, "command": repro_command(params),
                            "trace": []}
    return row


# --------------------------------------------------------------------------- tables

RUN_COLUMNS: tuple[str, ...] = (*(c for c in RunParams.__dataclass_fields__),
                                *(name for name, _ in RUN_METRICS))


def flatten(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A nested result as rows of ``runs``, ``disturbances``, ``events`` and ``violations``."""
    keys = {k: result[k] for k in KEY_COLUMNS}
    out: dict[str, list[dict[str, Any]]] = {
        "runs": [{c: result[c] for c in RUN_COLUMNS}],
        "disturbances": [{**keys, **d} for d in result["disturbance_rows"]],
        "events": [{**keys, **e} for e in result["event_rows"]],
        "violations": [],
    }
    if result["violation_row"] is not None:
        out["violations"].append({**keys, **result["violation_row"]})
    return out


def describe_params(params: RunParams) -> str:
    """A short human label of a run's cell."""
    bits = [params.protocol, params.scenario]
    if params.size is not None:
        bits.append(f"size {params.size}")
    if params.workload != SCENARIO_DEFAULT:
        bits.append(params.workload)
    if params.fault_rate is not None:
        bits.append(f"faults {params.fault_rate:g}")
    bits.append(f"seed {params.seed}")
    return ", ".join(bits)


__all__ = ["DISTURBANCE_FIELDS", "EVENT_FIELDS", "KEY_COLUMNS", "RUN_COLUMNS", "RUN_METRICS",
           "VIOLATION_FIELDS", "build_scenario", "describe_params", "failed_result", "flatten",
           "is_connect_protocol", "repro_command", "run_one", "simulate_run", "summarize"]
