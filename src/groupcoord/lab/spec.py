"""Sweep specs: which simulations the lab runs (docs/lab.md).

A spec is TOML (read with ``tomllib``). Every key is optional except ``scenarios``::

    name = "my-sweep"
    description = "what the sweep asks"
    protocols = ["consumer:uniform", "consumer:range"]   # or "all": every label the simulator has
    scenarios = ["crash", "bounce", "random", "my-scenario", "path/to/scenario.toml"]
    sizes = [4, 8, 16]          # initial members; "scenario" keeps the scenario's own count
    fault_rates = [0.0, 0.02]   # network fault probability; "scenario" keeps the scenario's faults
    seeds = 5                   # runs per cell
    salt = ""                   # a different salt draws different seeds for the same cells
    events = false              # also write every run's trace to the ``events`` table
    checkpoint_every = 2000     # the simulator's I4 checkpoint interval (steps)
    max_steps = 0               # stop a run after this many events (0: no limit)

    [[workloads]]               # default: one workload "scenario" (the scenario's own topics)
    name = "4x16"
    topics = 4                  # topics x partitions: for consumer-group protocols
    partitions = 16
    [[workloads]]
    name = "8x4"
    connectors = 8              # connectors x tasks: for connect protocols
    tasks = 4
    [[workloads]]
    name = "slow-batches"       # what the applications do (``sim.workload``), over the
    processing_ms = { dist = "exponential", mean = 5 }   # scenario's [workload]; with or
    max_poll_records = 100      # without topics x partitions; {idle = true}: no work

    [scenario.my-scenario]      # scenarios defined inline: the simulator's scenario format
    description = "c1 (the first member) leaves"
    group = { members = 4, topics = { foo = 8 } }
    events = [{ at_ms = 30000, kind = "leave", member = "c1" }]

A **cell** is one (protocol, scenario, size, workload, fault rate); it runs ``seeds`` times.
Topic workloads pair with consumer-group protocols and connector workloads with connect
protocols (a protocol named ``connect...``); a pair that does not fit is skipped.

**Seeds.** A run's seed is derived from its cell *without the protocol* and its replicate
number through a stable hash (BLAKE2b of a canonical JSON text, never Python's ``hash``), so
re-running a cell gives the same seeds, hence the same rows, and every protocol of a cell runs
on the same seeds (the same random scenario and the same network draws as far as the protocols
send the same messages): comparisons between protocols are paired. The scenario enters the
hash by its *family* (:func:`seed_family`): KIP-415's delay variants (``worker-leaves-d0``,
``-d30s``, ``-d300s``) differ only in ``scheduled.rebalance.max.delay.ms``, so they share
their seeds, and a protocol without the delay (eager) gives the same rows in every variant.

**Confirmation seeds.** ``confirm_seeds = n`` (top level or per grid) runs ``n`` more
replicates of every cell after its ``seeds``: a second, fresh seed set (replicates ``seeds``
to ``seeds + n - 1``, seeds drawn like the others). The report marks a cell's best on the
first set and keeps the mark only if the second set marks it too (``lab.verdict``).

**How a cell changes a scenario** (:func:`groupcoord.lab.runs.build_scenario`): ``size`` sets
the initial members; events stay as written (``scale-out`` with ``count = 3`` adds three members
at every size; ``scale-in`` is capped at ``size - 1``), members named in events keep their names
(clamped to the new size), and members an event creates (``join`` with names) are renumbered
after the new size. A topic workload replaces the topics:
the scenario's topic names first, then ``<first topic>_<i>``, each with ``partitions``
partitions; partition counts of ``add-partitions`` and ``create-topic`` events scale by the
same factor. A connector workload likewise keeps the scenario's connector names first (its
``remove-connector`` and ``update-tasks`` events name them), then ``connector-<i>``, each with
``tasks`` tasks; the task counts of ``update-tasks`` and ``add-connector`` events scale by the
same factor (the connector's own, a new one's by the first's). An event that changes nothing
in a run is counted (``lab.runs``' ``noop_events``); the paper spec's cells have none. A
fault rate sets the base probability of loss, response loss, duplication and reordering
until the faults stop.

Built-in specs: ``quick`` (a few minutes of CPU at most: under 2 minutes on 2 cores) and
``paper`` (the KIP-415 scenarios and the specs' case studies, across every protocol the
simulator registers, at growing sizes).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groupcoord.sim.workload import Workload as SimWorkload
from groupcoord.sim.workload import WorkloadError, parse_workload

#: How the lab names "keep what the scenario says" in sizes and fault rates.
SCENARIO_DEFAULT = "scenario"


class SpecError(ValueError):
    """A sweep spec that cannot be run; the message names the spec and the field."""


@dataclass(slots=True, frozen=True)
class LabWorkload:
    """A named workload of a lab spec: what the group works on, topics x partitions or
    connectors x tasks (None: the scenario's own), and what its applications do (``work``, over
    the simulator's ``sim.workload.Workload``, which this is not)."""

    name: str
    topics: int | None = None
    partitions: int | None = None
    connectors: int | None = None
    tasks: int | None = None
    #: What the members' applications do, over the scenario's ``[workload]`` (canonical JSON
    #: of the overriding keys, ``sim.workload``; None: the scenario's own).
    work: str | None = None

    @property
    def kind(self) -> str:
        """``topics``, ``connectors`` or ``scenario`` (no override)."""
        if self.topics is not None:
            return "topics"
        if self.connectors is not None:
            return "connectors"
        return "scenario"

    def fits(self, protocol: str) -> bool:
        """Topic workloads go with consumer-group protocols, connector ones with connect."""
        connect = is_connect_protocol(protocol)
        return self.kind == "scenario" or (self.kind == "connectors") == connect


SCENARIO_WORKLOAD = LabWorkload(SCENARIO_DEFAULT)


def is_connect_protocol(label: str) -> bool:
    """Whether the protocol's members are Connect workers (its resources are tasks)."""
    from groupcoord.sim.protocols import resolve_protocol
    from groupcoord.sim.settings import base_protocol

    try:
        spec, _ = resolve_protocol(base_protocol(label))
    except ValueError:
        return "connect" in label.partition(":")[0]
    return spec.resource == "tasks"


@dataclass(slots=True, frozen=True)
class RunParams:
    """The parameters of one run: a row of the sweep's input DataFrame."""

    run_id: str
    sweep: str
    protocol: str
    scenario: str
    #: JSON of the scenario table for inline and file scenarios (shipped to the executors).
    scenario_def: str | None
    size: int | None
    workload: str
    topics: int | None
    partitions: int | None
    connectors: int | None
    tasks: int | None
    fault_rate: float | None
    replicate: int
    seed: int
    events: bool = False
    checkpoint_every: int = 2_000
    max_steps: int | None = None
    #: How the reproduce command names the spec (for inline scenarios): a built-in or a path.
    spec_ref: str = ""
    #: The workload's overrides of the scenario's ``[workload]`` (JSON; None: none).
    work: str | None = None

    def as_row(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PARAM_COLUMNS}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunParams:
        return cls(**{name: row[name] for name in PARAM_COLUMNS})

    @property
    def cell(self) -> tuple[Any, ...]:
        return (self.protocol, self.scenario, self.size, self.workload, self.fault_rate)


#: The columns of the runs' input table, in order.
PARAM_COLUMNS: tuple[str, ...] = tuple(RunParams.__dataclass_fields__)


@dataclass(slots=True, frozen=True)
class Grid:
    """One grid of a spec with several (``[[grid]]``): its own protocols, scenarios, sizes,
    workloads, fault rates and seeds (each inherited from the spec's top level when absent)."""

    name: str
    scenarios: tuple[str, ...]
    protocols: tuple[str, ...]
    sizes: tuple[int | None, ...]
    workloads: tuple[LabWorkload, ...]
    fault_rates: tuple[float | None, ...]
    seeds: int
    description: str = ""
    #: The metrics the question is about (the report's findings for this grid), or all.
    metrics: tuple[str, ...] = ()
    #: The question the grid answers, in one sentence.
    question: str = ""
    #: Replicates run after ``seeds``: the fresh seed set that confirms the marks.
    confirm_seeds: int = 0


@dataclass(slots=True, frozen=True)
class SweepSpec:
    name: str
    scenarios: tuple[str, ...]
    protocols: tuple[str, ...] = ("all",)
    sizes: tuple[int | None, ...] = (None,)
    workloads: tuple[LabWorkload, ...] = (SCENARIO_WORKLOAD,)
    fault_rates: tuple[float | None, ...] = (None,)
    seeds: int = 3
    salt: str = ""
    events: bool = False
    checkpoint_every: int = 2_000
    max_steps: int | None = None
    description: str = ""
    #: Inline scenarios: name -> the scenario table (the simulator's TOML layout, parsed).
    inline: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Where the spec came from: a built-in name or a file path.
    source: str = ""
    #: Several grids (``[[grid]]``): the sweep is their union; empty: the top level is the grid.
    grids: tuple[Grid, ...] = ()
    #: Replicates run after ``seeds``: the fresh seed set that confirms the marks.
    confirm_seeds: int = 0

    def resolved_protocols(self) -> list[str]:
        """``all`` expanded to the simulator's registry; every label checked against it (of
        every grid, in order, when the spec has grids)."""
        from groupcoord.sim.protocols import protocol_labels, resolve_protocol
        from groupcoord.sim.settings import split_timing

        out: list[str] = []
        wanted = ([p for g in self.grids for p in g.protocols] if self.grids
                  else list(self.protocols))
        for p in wanted:
            labels = protocol_labels() if p == "all" else [p]
            for label in labels:
                try:
                    base, _ = split_timing(label)
                    spec, variant = resolve_protocol(base)
                except ValueError as e:
                    raise SpecError(f"{self.source or self.name}: protocols: {e}") from None
                full = f"{spec.name}:{variant}" if variant else spec.name
                if base != label:  # a timing variant (``sim.settings``): kept in the label
                    full += label[len(base):]
                if full not in out:
                    out.append(full)
        return out


# --------------------------------------------------------------------------- parsing

_TOP = {"name", "description", "protocols", "scenarios", "sizes", "fault_rates", "seeds", "salt",
        "events", "checkpoint_every", "max_steps", "workloads", "scenario", "grid",
        "confirm_seeds"}
_GRID = {"name", "description", "protocols", "scenarios", "sizes", "fault_rates", "seeds",
         "workloads", "metrics", "question", "confirm_seeds"}

#: The metrics a grid may name (``lab.runs``'s columns): the costs of a disturbance (excess
#: over the paired control) and the times that are not costs.
METRICS: tuple[str, ...] = (
    "stall_ms", "lag_peak", "lag_record_s", "paused_partition_s", "records_reprocessed",
    "task_restarts", "task_downtime_task_s", "resources_moved", "resource_downtime_ms",
    "convergence_ms", "time_to_balance_ms", "records_processed", "worker_stall_ms")
_WORKLOAD = {"name", "topics", "partitions", "connectors", "tasks"}
#: The work keys a workload may set (``sim.workload.Workload``'s fields).
_WORK = {f for f in SimWorkload.__dataclass_fields__}


def _pos_int(where: str, v: Any, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise SpecError(f"{where}: expected an integer >= {minimum}, got {v!r}")
    return v


def _list(where: str, v: Any) -> list[Any]:
    if isinstance(v, str | int | float) and not isinstance(v, bool):
        return [v]
    if not isinstance(v, list) or not v:
        raise SpecError(f"{where}: expected a non-empty array")
    return v


def _workload(where: str, raw: Any) -> LabWorkload:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: expected a table")
    unknown = sorted(set(raw) - _WORKLOAD - _WORK)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(sorted(_WORKLOAD | _WORK))}")
    work_keys = {k: raw[k] for k in sorted(raw) if k in _WORK}
    work = None
    if work_keys:
        try:
            parse_workload(where, work_keys)
        except WorkloadError as e:
            raise SpecError(str(e)) from None
        work = json.dumps(work_keys, sort_keys=True, separators=(",", ":"))
    dims = {k: _pos_int(f"{where}.{k}", raw[k]) for k in ("topics", "partitions", "connectors",
                                                          "tasks") if k in raw}
    has_topics = "topics" in dims or "partitions" in dims
    has_connect = "connectors" in dims or "tasks" in dims
    if has_topics and has_connect:
        raise SpecError(f"{where}: a workload is topics x partitions or connectors x tasks, "
                        f"not both")
    if has_topics and not ("topics" in dims and "partitions" in dims):
        raise SpecError(f"{where}: give both topics and partitions")
    if has_connect and not ("connectors" in dims and "tasks" in dims):
        raise SpecError(f"{where}: give both connectors and tasks")
    if has_topics:
        default = f"{dims['topics']}x{dims['partitions']}"
    elif has_connect:
        default = f"{dims['connectors']}x{dims['tasks']}c"
    else:
        default = SCENARIO_DEFAULT
    if work is not None and "name" not in raw:
        raise SpecError(f"{where}: a workload that sets work parameters needs a name")
    name = str(raw.get("name", default))
    return LabWorkload(name, dims.get("topics"), dims.get("partitions"), dims.get("connectors"),
                    dims.get("tasks"), work)


def _sizes(where: str, raw: Any) -> tuple[int | None, ...]:
    sizes: list[int | None] = []
    for v in _list(f"{where}: sizes", raw):
        sizes.append(None if v == SCENARIO_DEFAULT else _pos_int(f"{where}: sizes", v))
    return tuple(dict.fromkeys(sizes))


def _rates(where: str, raw: Any) -> tuple[float | None, ...]:
    rates: list[float | None] = []
    for v in _list(f"{where}: fault_rates", raw):
        if v == SCENARIO_DEFAULT:
            rates.append(None)
        elif isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1:
            rates.append(float(v))
        else:
            raise SpecError(f"{where}: fault_rates: expected probabilities in [0, 1] or "
                            f"{SCENARIO_DEFAULT!r}, got {v!r}")
    return tuple(dict.fromkeys(rates))


def _metrics(where: str, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise SpecError(f"{where}: metrics: expected an array of metric names")
    unknown = [v for v in raw if v not in METRICS]
    if unknown:
        raise SpecError(f"{where}: metrics: unknown {', '.join(unknown)}; known: "
                        f"{', '.join(METRICS)}")
    return tuple(raw)


def _grid_workloads(where: str, raw: Any, defined: tuple[LabWorkload, ...]) -> tuple[LabWorkload, ...]:
    """A grid's workloads: names of the spec's ``[[workloads]]`` (``scenario``: the
    scenario's own topics or connectors)."""
    by_name = {SCENARIO_DEFAULT: SCENARIO_WORKLOAD, **{w.name: w for w in defined}}
    out = []
    for v in _list(f"{where}: workloads", raw):
        if v not in by_name:
            raise SpecError(f"{where}: workloads: unknown workload {v!r}; the spec defines "
                            f"{', '.join(by_name)}")
        out.append(by_name[v])
    return tuple(out)


def parse_spec(data: Mapping[str, Any], source: str = "") -> SweepSpec:
    """A :class:`SweepSpec` from a parsed TOML table; :class:`SpecError` names the field."""
    where = source or "spec"
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(sorted(_TOP))}")
    raw_grids = data.get("grid")
    if raw_grids is not None and (not isinstance(raw_grids, list) or not raw_grids
                                  or not all(isinstance(g, Mapping) for g in raw_grids)):
        raise SpecError(f"{where}: grid must be a non-empty array of tables ([[grid]])")
    if "scenarios" not in data and not raw_grids:
        raise SpecError(f"{where}: scenarios is required")
    protocols = tuple(str(p) for p in _list(f"{where}: protocols", data.get("protocols", "all")))
    sizes = _sizes(where, data.get("sizes", SCENARIO_DEFAULT))
    rates = _rates(where, data.get("fault_rates", SCENARIO_DEFAULT))
    raw_workloads = data.get("workloads")
    if raw_workloads is None:
        workloads: tuple[LabWorkload, ...] = (SCENARIO_WORKLOAD,)
    else:
        if not isinstance(raw_workloads, list) or not raw_workloads:
            raise SpecError(f"{where}: workloads must be a non-empty array of tables "
                            f"([[workloads]])")
        workloads = tuple(_workload(f"{where}: workloads[{i}]", w)
                          for i, w in enumerate(raw_workloads))
        names = [w.name for w in workloads]
        if len(set(names)) != len(names):
            raise SpecError(f"{where}: workload names must be unique, got {names}")
    seeds = _pos_int(f"{where}: seeds", data.get("seeds", 3))
    confirm = _pos_int(f"{where}: confirm_seeds", data.get("confirm_seeds", 0), 0)
    grids: list[Grid] = []
    for i, g in enumerate(raw_grids or []):
        gw = f"{where}: grid[{i}]"
        unknown = sorted(set(g) - _GRID)
        if unknown:
            raise SpecError(f"{gw}: unknown key(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sorted(_GRID))}")
        if "scenarios" not in g and "scenarios" not in data:
            raise SpecError(f"{gw}: scenarios is required (here or at the top level)")
        grids.append(Grid(
            name=str(g.get("name", f"grid{i}")), description=str(g.get("description", "")),
            scenarios=tuple(str(x) for x in _list(f"{gw}: scenarios",
                                                   g.get("scenarios", data.get("scenarios")))),
            protocols=(tuple(str(x) for x in _list(f"{gw}: protocols", g["protocols"]))
                       if "protocols" in g else protocols),
            sizes=_sizes(gw, g["sizes"]) if "sizes" in g else tuple(dict.fromkeys(sizes)),
            workloads=(_grid_workloads(gw, g["workloads"], workloads) if "workloads" in g
                       else workloads),
            fault_rates=(_rates(gw, g["fault_rates"]) if "fault_rates" in g
                         else tuple(dict.fromkeys(rates))),
            seeds=_pos_int(f"{gw}: seeds", g["seeds"]) if "seeds" in g else seeds,
            metrics=_metrics(gw, g.get("metrics", [])),
            question=str(g.get("question", "")),
            confirm_seeds=(_pos_int(f"{gw}: confirm_seeds", g["confirm_seeds"], 0)
                           if "confirm_seeds" in g else confirm)))
    if grids:
        scenarios = tuple(dict.fromkeys(sc for gr in grids for sc in gr.scenarios))
    else:
        scenarios = tuple(str(x) for x in _list(f"{where}: scenarios", data["scenarios"]))
    inline_raw = data.get("scenario", {})
    if not isinstance(inline_raw, Mapping):
        raise SpecError(f"{where}: [scenario.NAME] tables define inline scenarios")
    inline: dict[str, Mapping[str, Any]] = {}
    for name, table in inline_raw.items():
        if not isinstance(table, Mapping):
            raise SpecError(f"{where}: scenario.{name}: expected a table")
        inline[str(name)] = {"name": str(name), **table}
    max_steps = data.get("max_steps", 0)
    spec = SweepSpec(
        name=str(data.get("name", Path(source).stem if source else "sweep")),
        description=str(data.get("description", "")),
        scenarios=scenarios, protocols=protocols, sizes=tuple(dict.fromkeys(sizes)),
        workloads=workloads, fault_rates=tuple(dict.fromkeys(rates)), seeds=seeds,
        salt=str(data.get("salt", "")), events=bool(data.get("events", False)),
        checkpoint_every=_pos_int(f"{where}: checkpoint_every",
                                  data.get("checkpoint_every", 2_000)),
        max_steps=_pos_int(f"{where}: max_steps", max_steps, 0) or None,
        inline=inline, source=source, grids=tuple(grids), confirm_seeds=confirm)
    # Fail on the driver, before any executor runs: every scenario must load.
    for sc in spec.scenarios:
        scenario_definition(spec, sc)
    return spec


def scenario_definition(spec: SweepSpec, name: str) -> str | None:
    """The JSON the executors rebuild ``name`` from (inline and file scenarios), or None for
    the simulator's built-ins and ``random``; :class:`SpecError` if it does not load."""
    from groupcoord.sim.scenario import BUILTINS, ScenarioError, parse_scenario

    if name in spec.inline:
        table = spec.inline[name]
        where = f"{spec.source or spec.name}: scenario.{name}"
    elif name == "random" or name in BUILTINS:
        return None
    else:
        path = Path(name)
        if not (path.suffix == ".toml" or path.exists()):
            raise SpecError(f"{spec.source or spec.name}: unknown scenario {name!r}: define it "
                            f"as [scenario.{name}], give a .toml file, 'random' or one of "
                            f"{', '.join(sorted(BUILTINS))}")
        try:
            table = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SpecError(f"cannot read scenario {name}: {e}") from None
        where = name
    try:
        parse_scenario(table, source=where)
    except ScenarioError as e:
        raise SpecError(str(e)) from None
    try:
        return json.dumps(table, sort_keys=True)
    except TypeError as e:  # a TOML date or time: not part of the scenario format
        raise SpecError(f"{where}: {e}") from None


def standalone_spec() -> SweepSpec:
    """An empty spec: resolves the simulator's built-ins, ``random`` and scenario files."""
    return SweepSpec(name="rerun", scenarios=())


def load_spec(name_or_path: str) -> SweepSpec:
    """A built-in spec by name (``quick``, ``paper``) or a TOML file."""
    if name_or_path in BUILTIN_SPECS:
        return parse_spec(tomllib.loads(BUILTIN_SPECS[name_or_path]), source=name_or_path)
    path = Path(name_or_path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"cannot read spec {name_or_path}: {e.strerror or e} (built-in specs: "
                        f"{', '.join(sorted(BUILTIN_SPECS))})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{name_or_path}: not valid TOML: {e}") from None
    return parse_spec(data, source=str(path))


# --------------------------------------------------------------------------- expansion


def _stable_hash(parts: Sequence[Any], size: int = 8) -> bytes:
    text = json.dumps(list(parts), separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=size).digest()


#: A KIP-415 delay variant's suffix (``worker-leaves-d30s``: scheduled.rebalance.max.delay.ms
#: 30 s): a setting of the same disturbance, not another disturbance.
_DELAY_SUFFIX = re.compile(r"-d\d+(?:ms|s)?$")


def seed_family(scenario: str) -> str:
    """The name a scenario's seeds are drawn from: its name without a KIP-415 delay suffix
    (``worker-leaves-d30s`` -> ``worker-leaves``), so that the delay variants of one
    disturbance run on the same seeds and a protocol the delay does not concern (eager) gives
    the same rows in each."""
    return _DELAY_SUFFIX.sub("", scenario)


def derive_seed(salt: str, scenario: str, size: int | None, workload: LabWorkload,
                fault_rate: float | None, replicate: int) -> int:
    """The seed of a run: a stable 63-bit hash of its cell without the protocol (the scenario
    by its :func:`seed_family`)."""
    parts = [salt, seed_family(scenario), size, workload.topics, workload.partitions, workload.connectors,
             workload.tasks, fault_rate, replicate]
    return int.from_bytes(_stable_hash(parts), "big") & ((1 << 63) - 1)


def derive_run_id(protocol: str, seed: int, scenario: str, size: int | None,
                  workload: LabWorkload, fault_rate: float | None) -> str:
    """A stable id of a run (16 hex digits): its cell and its seed."""
    parts = [protocol, seed, scenario, size, workload.topics, workload.partitions,
             workload.connectors, workload.tasks, fault_rate]
    if workload.work is not None:
        parts.append(workload.work)
    return _stable_hash(parts).hex()


def expand(spec: SweepSpec) -> list[RunParams]:
    """Every run of the sweep, in a stable order (cell by cell, replicate by replicate; grid
    by grid, a run two grids share counted once)."""
    if spec.grids:
        runs: list[RunParams] = []
        seen: set[str] = set()
        for g in spec.grids:
            sub = replace(spec, grids=(), scenarios=g.scenarios, protocols=g.protocols,
                          sizes=g.sizes, workloads=g.workloads, fault_rates=g.fault_rates,
                          seeds=g.seeds, confirm_seeds=g.confirm_seeds)
            try:
                part = expand(sub)
            except SpecError:
                continue  # a grid whose workloads fit none of its protocols
            for r in part:
                if r.run_id not in seen:
                    seen.add(r.run_id)
                    runs.append(r)
        if not runs:
            raise SpecError(f"{spec.source or spec.name}: the sweep has no runs")
        return runs
    protocols = spec.resolved_protocols()
    defs = {sc: scenario_definition(spec, sc) for sc in spec.scenarios}
    runs = []
    for protocol in protocols:
        for scenario in spec.scenarios:
            for size in spec.sizes:
                for wl in spec.workloads:
                    if not wl.fits(protocol):
                        continue
                    for rate in spec.fault_rates:
                        for rep in range(spec.seeds + spec.confirm_seeds):
                            seed = derive_seed(spec.salt, scenario, size, wl, rate, rep)
                            runs.append(RunParams(
                                run_id=derive_run_id(protocol, seed, scenario, size, wl, rate),
                                sweep=spec.name, protocol=protocol, scenario=scenario,
                                scenario_def=defs[scenario], size=size, workload=wl.name,
                                topics=wl.topics, partitions=wl.partitions,
                                connectors=wl.connectors, tasks=wl.tasks, fault_rate=rate,
                                replicate=rep, seed=seed, events=spec.events,
                                checkpoint_every=spec.checkpoint_every,
                                max_steps=spec.max_steps, spec_ref=spec.source or spec.name,
                                work=wl.work))
    if not runs:
        raise SpecError(f"{spec.source or spec.name}: the sweep has no runs (no workload fits "
                        f"the protocols {', '.join(protocols)})")
    return runs


def restrict(spec: SweepSpec, *, scenarios: Sequence[str] = (), sizes: Sequence[int] = (),
             workloads: Sequence[str] = (), protocols: Sequence[str] = (),
             grids: Sequence[str] = ()) -> SweepSpec:
    """The spec cut down to these grids, scenarios, sizes, workloads and protocols (each
    empty: all of them). Seeds depend on the cell, not on the rest of the sweep, so the runs
    left are exactly the spec's runs of those cells (the command a finding names; a grid
    added to a rendered sweep, run on its own and merged into its tables)."""
    where = spec.source or spec.name

    def check(kind: str, wanted: Sequence[Any], have: Sequence[Any]) -> None:
        missing = [w for w in wanted if w not in have]
        if missing:
            raise SpecError(f"{where}: --{kind} {', '.join(map(str, missing))}: not in the "
                            f"spec (it has {', '.join(map(str, have))})")

    wanted = list(grids)
    every = spec.grids or (Grid(spec.name, spec.scenarios, spec.protocols, spec.sizes,
                                spec.workloads, spec.fault_rates, spec.seeds,
                                confirm_seeds=spec.confirm_seeds),)
    check("grid", wanted, [g.name for g in every])
    chosen = tuple(g for g in every if not wanted or g.name in wanted)
    check("scenario", scenarios, [s for g in chosen for s in g.scenarios])
    check("size", sizes, [z for g in chosen for z in g.sizes])
    check("workload", workloads, [w.name for g in chosen for w in g.workloads])
    labels = spec.resolved_protocols()
    check("protocol", protocols, labels)
    out: list[Grid] = []
    for g in chosen:
        gp = (tuple(p for p in protocols if p in replace(spec, grids=(g,)).resolved_protocols())
              if protocols else g.protocols)
        cut = replace(g, scenarios=tuple(s for s in g.scenarios if not scenarios or s in scenarios),
                      sizes=tuple(z for z in g.sizes if not sizes or z in sizes),
                      workloads=tuple(w for w in g.workloads
                                      if not workloads or w.name in workloads),
                      protocols=gp)
        if cut.scenarios and cut.sizes and cut.workloads and cut.protocols:
            out.append(cut)
    if not out:
        raise SpecError(f"{where}: no cell of the spec has all of the values asked for")
    return replace(spec, grids=tuple(out),
                   scenarios=tuple(dict.fromkeys(s for g in out for s in g.scenarios)))


def cells(runs: Sequence[RunParams]) -> int:
    return len({r.cell for r in runs})


def scale(count: int, factor: float) -> int:
    """``count`` scaled by ``factor``, at least 1 (rounded half up: deterministic)."""
    return max(1, math.floor(count * factor + 0.5))


# --------------------------------------------------------------------------- built-ins

BUILTIN_SPECS: dict[str, str] = {
    "quick": """
name = "quick"
description = "A small sweep: four disturbances at three sizes, with and without network faults."
protocols = ["all"]
scenarios = ["crash", "bounce", "scale-out", "rolling-bounce"]
sizes = [3, 6, 12]
fault_rates = [0.0, 0.02]
seeds = 2

[[workloads]]
name = "2x12"
topics = 2
partitions = 12

[[workloads]]
name = "4x5c"
connectors = 4
tasks = 5
""",
    "paper": """
name = "paper"
description = '''The seeds' questions, one grid each: KIP-415's scenarios under eager and \
incremental cooperative Connect rebalancing, with the model's task stop and start times swept; \
classic eager vs cooperative vs KIP-848 for 10 to 100 consumers (300 run at 3 seeds: \
medians and ranges, no marks, no sentence); the members' load at which \
each protocol starts to win, at two poll lengths (crossover); the field's anchor, 10 consumers \
while a topic grows by 900 partitions; the costs the field pays (state restore, and polls that grow \
long after a backlog; {late:field-costs}); and a join timed inside a member's long poll, \
by construction (long-poll); and members late at a \
rebalance because of their own work: pauses and heavy-tailed batches (lateness). \
The consumer grids' workloads keep the busiest member under 70 % busy under \
every assignor even with one member fewer (range included: the report prints it per row, and \
flags a row whose runs ended with their lag not caught up), so that a rebalance, not an \
overload, is what builds the lag. Every grid but consumers-300 runs a second, fresh seed set \
as large as its first: a mark stands only where that set marks the same best.'''
seeds = 5
# Every grid runs a second, fresh seed set of the same size after its seeds: a mark stands only
# if that set marks the same best (the report says so per grid); consumers-300 (3 seeds, no
# marks) opts out.
confirm_seeds = 5
fault_rates = [0.0]

[[workloads]]
name = "16x8c"
connectors = 16
tasks = 8
task_records_per_s = 10

[[workloads]]
name = "4x250"
topics = 4
partitions = 250
# 1,600 records/s at 0.5 ms each: 80 % of one member, so the first member up, alone with every
# partition until the others join (start phases are drawn), is busy but not saturated.
records_per_s = 1.6

[[workloads]]
name = "4x1000"
topics = 4
partitions = 1000
# the 4x250 group's 1,600 records/s over four times the partitions: more partitions than
# members at 300 (and at 1,000) members, so a member that joins gets some
records_per_s = 0.4

[[workloads]]
name = "field-costs"
topics = 1
partitions = 100
# 250 records/s at 20 ms each over 10 members: 50 % busy in steady state (60 % with one member
# fewer: one topic, so range balances as well as any assignor), so a backlog drains slowly in
# batches of up to 500 records (a 10 s poll) and a rebalance finds members busy in poll; each
# newly assigned partition first restores its state for 2 s
records_per_s = 2.5
processing_ms = 20
max_poll_records = 500
warmup_ms = 2000

# The long-poll grid: the field-costs load (1 x 100 partitions, 2.5 records/s each, 20 ms a
# record, up to 500 records a poll: a 10 s poll after a backlog) without the state restore, so
# that what a rebalance waits for is a member's poll and nothing else.
[[workloads]]
name = "long-poll"
topics = 1
partitions = 100
records_per_s = 2.5
processing_ms = 20
max_poll_records = 500

# The long-poll workload's control: the same load, seeds and join time with up to 50 records a
# poll (a 1 s poll after the backlog), so that the two differ only in poll length.
[[workloads]]
name = "long-poll-1s"
topics = 1
partitions = 100
records_per_s = 2.5
processing_ms = 20
max_poll_records = 50

[[workloads]]
name = "light"
records_per_s = 2

# The deciding input of a topic's growth under classic: when the metadata refresh comes
# (metadata.max.age.ms, Kafka's default 300 s, against 30 s).
[[workloads]]
name = "light-md300s"
records_per_s = 2
metadata_max_age_ms = 300000

[[workloads]]
name = "light-md30s"
records_per_s = 2
metadata_max_age_ms = 30000

# The crossover: 8 consumers on one topic of 32 partitions (range balances: 4 partitions each,
# 5 with one member fewer, as under any assignor), at 20, 30 and 40 % busy (25, 37.5 and 50 %
# with one member fewer: a crashed member's 45 s backlog drains within the minute a run waits
# for its applications), with polls of up to 500 records at 10 ms (up to 5 s) or 20 ms (up to
# 10 s) per record.
[[workloads]]
name = "1x32-p10ms-20pct"
topics = 1
partitions = 32
records_per_s = 5
processing_ms = 10

[[workloads]]
name = "1x32-p10ms-30pct"
topics = 1
partitions = 32
records_per_s = 7.5
processing_ms = 10

[[workloads]]
name = "1x32-p10ms-40pct"
topics = 1
partitions = 32
records_per_s = 10
processing_ms = 10

[[workloads]]
name = "1x32-p20ms-20pct"
topics = 1
partitions = 32
records_per_s = 2.5
processing_ms = 20

[[workloads]]
name = "1x32-p20ms-30pct"
topics = 1
partitions = 32
records_per_s = 3.75
processing_ms = 20

[[workloads]]
name = "1x32-p20ms-40pct"
topics = 1
partitions = 32
records_per_s = 5
processing_ms = 20

[[workloads]]
name = "16x8c-task1s"
connectors = 16
tasks = 8
task_records_per_s = 10
# the model's default task stop and start times, stated (the kip415-task-times grid sweeps them)
task_stop_ms = 1000
task_start_ms = 1000

[[workloads]]
name = "16x8c-task5s"
connectors = 16
tasks = 8
task_records_per_s = 10
# Connect's graceful task shutdown may take up to task.shutdown.graceful.timeout.ms (5 s by
# default); a task's start (its connector's setup, its first poll) as long
task_stop_ms = 5000
task_start_ms = 5000

# The 3-worker sessioned join's knife edge (the kip415-stop-edge grid): a task's stop time
# around the model's 1 s (16x8c-task1s is the 1 s point), its start at the model's 1 s
[[workloads]]
name = "16x8c-stop700ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 700
task_start_ms = 1000

[[workloads]]
name = "16x8c-stop900ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 900
task_start_ms = 1000

[[workloads]]
name = "16x8c-stop1100ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 1100
task_start_ms = 1000

[[workloads]]
name = "16x8c-stop1300ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 1300
task_start_ms = 1000

# Tasks that stop and start in 10 ms or 100 ms (a stateless sink): below the model's 1 s, where
# an eager stop-the-world costs little and a cooperative protocol's follow-up round (about one
# heartbeat for every moved task) may cost more
[[workloads]]
name = "16x8c-task10ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 10
task_start_ms = 10

[[workloads]]
name = "16x8c-task100ms"
connectors = 16
tasks = 8
task_records_per_s = 10
task_stop_ms = 100
task_start_ms = 100

[[grid]]
name = "kip415"
description = '''KIP-415's scenarios: eager vs incremental cooperative Connect rebalancing. \
The worker that leaves or bounces is a follower (never the leader: a leader's departure is \
kip415-leader-leaves and kip415-leader-bounces), and scheduled.rebalance.max.delay.ms is swept \
(-d0, -d30s, -d300s: 0, 30 s and Kafka's default 300 s; eager protocols have no delay, so their \
rows do not change with it). Under incremental cooperative rebalancing a departed \
worker's tasks wait that delay for it to come back, by design: its time until balanced and \
task downtime in worker-leaves are the configured delay, not a slowness of the protocol. In \
kip415-worker-joins two workers join at every size (3 to 5, 6 to 8, 12 to 14). A task takes \
the model's 1 s to stop and 1 s to start, and a worker stops its connectors and tasks 8 at a \
time (Kafka's start/stop pool; a task runs until its own stop begins): an eager rebalance's \
stall (about 2 s at every size: a worker's last stop and a start) and the task downtime of a \
restart (its own stop and the ones queued after it on its worker: 1 to 6 stops at 3 workers, \
1 to 3 at 6, 1 to 2 at 12; then the rebalance and a start) are these inputs, not measurements (the \
kip415-task-times grid sweeps them). kip415-leader-leaves has no delay, by Kafka's behaviour, \
not the model's choice: the previous assignment that tells which tasks were lost lives in \
the leader's memory (Kafka's IncrementalCooperativeAssignor), so a new leader does not know \
the departed worker's assignment and hands its tasks out at once (sessioned balances in about 2 s).'''
protocols = ["connect:eager", "connect:cooperative", "classic-connect:eager",
             "classic-connect:sessioned"]
scenarios = ["kip415-worker-joins", "worker-leaves-d0", "worker-leaves-d30s",
             "worker-leaves-d300s", "worker-bounce-d0", "worker-bounce-d30s",
             "worker-bounce-d300s", "worker-bounce-after-delay", "kip415-leader-leaves",
             "kip415-leader-bounces", "kip415-connector-added", "kip415-connector-removed"]
sizes = [3, 6, 12]
workloads = ["16x8c"]
question = "How many tasks does each Connect protocol stop and restart, for how long, and how \
soon is the work balanced again, when a worker joins, leaves or bounces?"
metrics = ["task_restarts", "task_downtime_task_s", "time_to_balance_ms", "stall_ms",
           "worker_stall_ms"]

[[grid]]
name = "kip415-crash"
description = '''KIP-415's worker departure as production sees it most: a follower crashes \
(it sends no LeaveGroup), beside the kip415 grid's clean leave (worker-leaves-d0, -d30s, \
-d300s). The group notices the crash only when the worker's session times out (Connect's \
session.timeout.ms, 10 s by default), and only then does the leader's assignment find the \
worker's tasks lost: scheduled.rebalance.max.delay.ms counts from that rebalance, not from the \
crash (Kafka's IncrementalCooperativeAssignor sets the scheduled rebalance at the leader's \
first assignment that finds the lost tasks), so a crash adds the session timeout to both \
protocols' task downtime and time until balanced, and a delay adds itself after it. \
worker-crash-d0 follows Kafka since KAFKA-15693 (lost tasks reassigned at once when the delay \
is 0). Only the protocols Apache Kafka ships are run.'''
protocols = ["classic-connect:eager", "classic-connect:sessioned"]
scenarios = ["worker-crash-d0", "worker-crash-d30s", "worker-crash-d300s"]
sizes = [3, 6, 12]
workloads = ["16x8c"]
question = "Do the KIP-415 marks on a worker that leaves hold when it crashes instead?"
metrics = ["task_restarts", "task_downtime_task_s", "time_to_balance_ms", "stall_ms",
           "worker_stall_ms"]

[[grid]]
name = "kip415-staggered-joins"
description = '''kip415-worker-joins with the two workers joining 1 s or 4 s apart instead \
of at once (a rolling deployment starts its workers one after another): a join that comes \
after the first one's round has started makes a second rebalance, in which an eager group \
stops and restarts every task again; an incremental cooperative one moves only the second \
worker's share. 6 and 12 workers, 2 join; the kip415 grid's kip415-worker-joins row is the \
at-once control.'''
protocols = ["classic-connect:eager", "classic-connect:sessioned"]
scenarios = ["worker-joins-1s-apart", "worker-joins-4s-apart"]
sizes = [6, 12]
workloads = ["16x8c"]
question = "Do the KIP-415 marks on joining workers hold when the workers join a few seconds apart?"
metrics = ["task_restarts", "task_downtime_task_s", "time_to_balance_ms", "stall_ms",
           "worker_stall_ms"]

[[grid]]
name = "kip415-hb-spread"
description = '''the heartbeat-alignment assumption behind kip415-worker-joins: the model \
lets every Connect worker restart its heartbeat timer when the round's SyncGroup answers reach \
it together, so all learn of the next rebalance at the same beat. Here each join shifts every \
worker's heartbeat phase by up to 0, 1 s or 3 s (a whole classic heartbeat), drawn per worker \
and join (@hbspread, as in the hb-spread grid): two workers join 6 and 12 workers.'''
protocols = ["classic-connect:eager@hbspread0s", "classic-connect:eager@hbspread1s",
             "classic-connect:eager@hbspread3s", "classic-connect:sessioned@hbspread0s",
             "classic-connect:sessioned@hbspread1s", "classic-connect:sessioned@hbspread3s"]
scenarios = ["kip415-worker-joins"]
sizes = [6, 12]
workloads = ["16x8c"]
question = "Do the KIP-415 marks on joining workers hold when the workers' heartbeat phases spread?"
# task downtime first (the question's metric): task restarts are a function of the assignment
# alone (the same count at every spread), so a sweep sentence on them would repeat the
# unswept kip415 row
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms",
           "worker_stall_ms"]

[[grid]]
name = "consumers"
description = '''classic eager vs cooperative vs KIP-848, 10 to 100 consumers, each caught \
up when a change comes: a poll returns a few records and takes a few ms, so an eager member \
revokes at once and the group's barrier costs one join round (the long-poll grid has a \
rebalance inside a long poll). On 4 topics range gives its first members one partition more \
of every topic: classic:eager-roundrobin is eager with roundrobin (balanced across topics), so \
that a cost of range's imbalance is not charged to the eager protocol'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:range"]
scenarios = ["crash", "bounce", "scale-out", "partition-added"]
sizes = [10, 30, 100]
workloads = ["4x250"]
question = "What does a member change cost the consumers' applications under each protocol?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "convergence_ms", "resources_moved",
           "records_reprocessed"]

[[grid]]
name = "consumers-300"
description = '''classic eager vs cooperative vs KIP-848 at 300 consumers on 4 x 1,000 \
partitions (more partitions than members, so the member a scale-out adds gets work; \
partition-added left out; 1,000 consumers are left out of the paper spec for its render time: \
at 3 seeds they gave medians only, no mark and no sentence); classic:eager-roundrobin is eager \
with a \
balanced assignor (range gives 100 of the 300 members 16 partitions, the rest 12)'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform"]
scenarios = ["crash", "bounce", "scale-out"]
sizes = [300]
workloads = ["4x1000"]
seeds = 3
confirm_seeds = 0
question = "Does the ranking of the consumer protocols hold at 300 members?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "convergence_ms", "resources_moved",
           "records_reprocessed"]

[[grid]]
name = "rolling"
description = '''a rolling bounce of every consumer, 15 s apart (it lasts members x 15 s, \
each bounce a rebalance: 10 members; rolling-30 asks the same at 30); \
classic:eager-roundrobin is eager with a balanced assignor (range is not balanced on 4 \
topics); consumer:uniform@hb3s is KIP-848 with its heartbeat at 3 s (the classic client's \
default) instead of the broker's 5 s default, so that a loss to the heartbeat interval is not \
charged to the protocol'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s"]
scenarios = ["rolling-bounce"]
sizes = [10]
workloads = ["4x250"]
seeds = 10
confirm_seeds = 10
question = "Does the group keep processing while its members restart one after another?"
# (no time to converge: the last bounce comes members x 15 s after the first, so it measures
# the script's length)
metrics = ["stall_ms", "lag_peak", "lag_record_s", "resources_moved", "records_reprocessed"]

[[grid]]
name = "rolling-30"
description = '''as rolling at 30 members (the bounce lasts 30 x 15 s): 5 seeds and 5 fresh \
ones that confirm the marks (a 30-member rolling bounce is the paper's costliest cell: ranges \
separated, no sign test)'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s"]
scenarios = ["rolling-bounce"]
sizes = [30]
workloads = ["4x250"]
seeds = 5
confirm_seeds = 5
question = "Does the group keep processing while 30 members restart one after another?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "resources_moved", "records_reprocessed"]

[[grid]]
name = "rolling-static"
description = '''rolling's cell with static members (KIP-345, group.instance.id = the member's \
name; KIP-848 keeps it): every consumer restarts, 15 s apart, each down 3 s, within its 45 s \
session, so a static member comes back to its own partitions with no rebalance (KIP-848: it \
leaves with epoch -2 and rejoins under its instance id; classic: a known instance id rejoining a \
Stable group gets its cached assignment, a returning leader skips the assignment, KIP-814). \
A cooperative leader back asks for one follow-up round that moves nothing (the model's client, \
not the Java consumer). Production rolling restarts commonly run static members; the time to \
converge runs to the last member's return, members x 15 s after the first'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s"]
scenarios = ["rolling-bounce-static"]
sizes = [10]
workloads = ["4x250"]
seeds = 10
confirm_seeds = 10
question = "What does a rolling restart cost with static membership?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "resources_moved", "convergence_ms"]

[[grid]]
name = "field-costs-static"
description = '''field-costs' rolling bounce with static members (as rolling-static: each \
member down 3 s, within its 45 s session, back to its own partitions with no rebalance, so no \
partition restores its state): 10 consumers on 1 x 100 partitions at 2.5 records/s each, \
20 ms per record, 2 s of state restore per newly assigned partition; the time to converge runs \
to the last member's return'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s", "consumer:range"]
scenarios = ["rolling-bounce-static"]
sizes = [10]
workloads = ["field-costs"]
seeds = 10
confirm_seeds = 10
question = "What does a rolling restart cost with static membership?"
metrics = ["lag_record_s", "lag_peak", "stall_ms", "resources_moved", "convergence_ms"]

[[grid]]
name = "kip415-task-times"
description = '''KIP-415's worker joins and worker leaves (scheduled.rebalance.max.delay.ms \
30 s) at 12 workers, with a task's stop and start taking the model's 1 s each \
(16x8c-task1s) or 5 s each (16x8c-task5s: Connect's task.shutdown.graceful.timeout.ms is 5 s \
by default), and below it, 10 ms and 100 ms each (16x8c-task10ms, 16x8c-task100ms: a stateless \
task): which marks hold whatever the task stop and start times, which rest on them.'''
protocols = ["connect:eager", "connect:cooperative", "classic-connect:eager",
             "classic-connect:sessioned"]
scenarios = ["kip415-worker-joins", "worker-leaves-d30s"]
sizes = [12]
workloads = ["16x8c-task10ms", "16x8c-task100ms", "16x8c-task1s", "16x8c-task5s"]
question = "Do the KIP-415 marks depend on how long a task takes to stop and start?"
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms"]

[[grid]]
name = "kip415-task-times-hb1s"
description = '''kip415-task-times with every worker's heartbeat.interval.ms at 1 s instead \
of Connect's 3 s default (@hb1s): an incremental cooperative follow-up round starts at each \
worker's next heartbeat, so beside kip415-task-times' columns (the same cells and seeds) these \
show how much of a gap to eager is the heartbeat interval. A grid of its own, so that the \
protocols are compared at one interval; the report's heartbeat condition reads the two \
grids together.'''
protocols = ["connect:eager@hb1s", "connect:cooperative@hb1s", "classic-connect:eager@hb1s",
             "classic-connect:sessioned@hb1s"]
scenarios = ["kip415-worker-joins", "worker-leaves-d30s"]
sizes = [12]
workloads = ["16x8c-task10ms", "16x8c-task100ms", "16x8c-task1s", "16x8c-task5s"]
question = "Do the KIP-415 marks depend on how long a task takes to stop and start?"
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms"]

[[grid]]
name = "kip415-stop-edge"
description = '''the knife edge of kip415-worker-joins at 3 workers under \
classic-connect:sessioned: each of the 3 old workers revokes its share of the moved tasks 8 at \
a time (three stops of a task's stop time), and the follow-up round starts at its next \
heartbeat (3 s), so a revocation about as long as the heartbeat interval catches that \
heartbeat on some seeds and waits one more on others. A task's stop time is swept around the \
model's 1 s (0.7, 0.9, 1, 1.1 and 1.3 s; its start stays 1 s; 16x8c-task1s is the 1 s point), \
eager beside it, 5 seeds and 5 fresh ones: where the edge lies.'''
protocols = ["classic-connect:eager", "classic-connect:sessioned"]
scenarios = ["kip415-worker-joins"]
sizes = [3]
workloads = ["16x8c-stop700ms", "16x8c-stop900ms", "16x8c-task1s", "16x8c-stop1100ms",
             "16x8c-stop1300ms"]
seeds = 5
confirm_seeds = 5
question = "At which task stop time does the 3-worker sessioned join wait one more heartbeat?"
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms"]

[[grid]]
name = "kip415-hb-spread-10ms"
description = '''kip415-task-times' worker joins at 10 ms tasks (16x8c-task10ms) with the \
workers' heartbeat phases spread after each join by up to 0, 1 s or 3 s (@hbspread, as in \
kip415-hb-spread): whether eager's task-downtime mark at short task times holds when the \
workers do not all learn of the rebalance at the same beat. 12 workers, 2 join.'''
protocols = ["classic-connect:eager@hbspread0s", "classic-connect:eager@hbspread1s",
             "classic-connect:eager@hbspread3s", "classic-connect:sessioned@hbspread0s",
             "classic-connect:sessioned@hbspread1s", "classic-connect:sessioned@hbspread3s"]
scenarios = ["kip415-worker-joins"]
sizes = [12]
workloads = ["16x8c-task10ms"]
question = "Does the task-times mark at 10 ms tasks hold when the workers' heartbeat phases spread?"
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms"]

[[grid]]
name = "kip415-hb-spread-100ms"
description = '''kip415-task-times' worker joins at 100 ms tasks (16x8c-task100ms) with the \
workers' heartbeat phases spread after each join by up to 0, 1 s or 3 s (@hbspread, as in \
kip415-hb-spread): whether eager's task-downtime mark at short task times holds when the \
workers do not all learn of the rebalance at the same beat. 12 workers, 2 join.'''
protocols = ["classic-connect:eager@hbspread0s", "classic-connect:eager@hbspread1s",
             "classic-connect:eager@hbspread3s", "classic-connect:sessioned@hbspread0s",
             "classic-connect:sessioned@hbspread1s", "classic-connect:sessioned@hbspread3s"]
scenarios = ["kip415-worker-joins"]
sizes = [12]
workloads = ["16x8c-task100ms"]
question = "Does the task-times mark at 100 ms tasks hold when the workers' heartbeat phases spread?"
metrics = ["task_downtime_task_s", "time_to_balance_ms", "task_restarts", "stall_ms"]

[[grid]]
name = "crossover-10ms"
description = '''the members' load at which each protocol starts to win, polls of up to 500 \
records at 10 ms each (up to 5 s): 8 consumers on 1 x 32 partitions (range balances: the \
eager column's assignor gives every member as much as the others'), 20, 30 and 40 % busy \
(25, 37.5 and 50 % with one member fewer). Range balances the load but moves more partitions \
than roundrobin when a member goes (it reassigns contiguous ranges): classic:eager-roundrobin \
is eager with roundrobin, so that range's moves are not charged to the eager protocol; \
consumer:uniform@hb3s is KIP-848 with a 3 s heartbeat beside its 5 s default'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p10ms-20pct", "1x32-p10ms-30pct", "1x32-p10ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "From which load on does each protocol cost the least lag, with polls up to 5 s?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "crossover-20ms"
description = '''as crossover-10ms, with polls of up to 500 records at 20 ms each (up to \
10 s): 8 consumers on 1 x 32 partitions, 20, 30 and 40 % busy'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p20ms-20pct", "1x32-p20ms-30pct", "1x32-p20ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "From which load on does each protocol cost the least lag, with polls up to 10 s?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "crossover-10ms-hb1s"
description = '''crossover-10ms with every member's heartbeat at 1 s (@hb1s) instead of the \
classic client's 3 s and KIP-848's 5 s defaults: an incremental protocol's members learn of a \
rebalance, or of their follow-up round, at their next heartbeat, so beside crossover-10ms's \
columns (the same cells and seeds) these show how much of a protocol's lag is the heartbeat \
wait. classic:eager, classic:cooperative and consumer:uniform only; a grid of its own, so that \
the protocols are compared at one interval (its crossovers read beside crossover-10ms's)'''
protocols = ["classic:eager@hb1s", "classic:cooperative@hb1s", "consumer:uniform@hb1s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p10ms-20pct", "1x32-p10ms-30pct", "1x32-p10ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "From which load on does each protocol cost the least lag, with polls up to 5 s?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "crossover-20ms-hb1s"
description = '''crossover-20ms with every member's heartbeat at 1 s (@hb1s) instead of the \
classic client's 3 s and KIP-848's 5 s defaults: an incremental protocol's members learn of a \
rebalance, or of their follow-up round, at their next heartbeat, so beside crossover-20ms's \
columns (the same cells and seeds) these show how much of a protocol's lag is the heartbeat \
wait. classic:eager, classic:cooperative and consumer:uniform only; a grid of its own, so that \
the protocols are compared at one interval (its crossovers read beside crossover-20ms's)'''
protocols = ["classic:eager@hb1s", "classic:cooperative@hb1s", "consumer:uniform@hb1s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p20ms-20pct", "1x32-p20ms-30pct", "1x32-p20ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "From which load on does each protocol cost the least lag, with polls up to 10 s?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "field-costs"
description = '''the costs the field pays: 10 consumers on 1 x 100 partitions at 2.5 \
records/s each, 20 ms per record (50 % busy, 60 % with one member fewer, under range as under \
any assignor), up to 500 records a poll (a 10 s poll once a \
backlog has built: a member inside one is late at a rebalance, and the Polls line below \
gives how late the latest member was in each scenario, from the runs' lateness column; the \
stall cannot show these waits, since the other members process while the group waits; the \
long-poll grid times a join inside a long poll by construction) and 2 s of state restore per \
newly assigned partition (the other grids' polls return a few records and \
nothing warms up). In crash-then-join the crash's window costs every protocol about the same \
(the 45 s session) and the protocols differ in the join's window, where much of eager's excess \
is that restore, a model input: an eager rebalance moves most partitions, a cooperative one the \
joiner's few (the "Why" list splits the lag by window). classic:eager-roundrobin is eager with \
roundrobin (range moves contiguous ranges), consumer:uniform@hb3s KIP-848 with a 3 s \
heartbeat beside its 5 s default (a 3 s bounce is shorter than a 5 s heartbeat)'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform", "consumer:uniform@hb3s", "consumer:range"]
scenarios = ["bounce", "scale-out", "rolling-bounce", "crash-then-join"]
sizes = [10]
workloads = ["field-costs"]
seeds = 10
confirm_seeds = 10
question = "When members restore state for the partitions they gain and process long batches \
after a backlog, what does a member change cost each protocol's applications?"
metrics = ["lag_record_s", "lag_peak", "stall_ms", "paused_partition_s", "convergence_ms", \
           "resources_moved", "records_reprocessed"]

[[grid]]
name = "long-poll"
description = '''a member joins while another is inside a long poll, by construction: 10 \
static consumers (group.instance.id) on 1 x 100 partitions at 50 % busy, up to 500 records a \
poll at 20 ms each; c3 restarts and is down 30 s, within the 45 s session, so it gets its own \
10 partitions back with no rebalance (static membership) and 750 records of backlog: two 10 s \
polls, then shorter ones. In join-in-long-poll a member joins 2 s after c3's return, inside \
its first poll; join-after-catch-up is the same join once c3 has caught up (the mechanism's \
control). A classic member rejoins only from poll(): eager members revoke everything and wait \
at the JoinGroup barrier until c3's batch is done; cooperative members keep processing what \
they own while the round waits; a KIP-848 member waits for nobody (only a partition c3 gives up \
waits for c3's next poll). Stall counts only the moments when no member processes, and c3 \
processes its batch while the others wait: the wait shows as partition downtime (no active \
owner) and lag, not as stall. The long-poll-1s workload is the same load, seeds and join \
times with up to 50 records a poll (a 1 s poll after the backlog), so a protocol's cost of the \
long poll alone is its join-in-long-poll row on long-poll minus the same row on long-poll-1s, \
seed by seed; join-after-catch-up's difference (both contain the same restart: c3's 10 \
partitions waiting 30 s for it, and its backlog) moves the join's time too. The time to \
converge is left out (the restart's window, c3 catching up, sets it in every run).'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
scenarios = ["join-in-long-poll", "join-after-catch-up"]
sizes = [10]
workloads = ["long-poll", "long-poll-1s"]
seeds = 10
confirm_seeds = 10
question = "What does a rebalance cost when it starts while a member is inside a long poll?"
metrics = ["resource_downtime_ms", "lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "busy-consumers"
description = '''the condition behind every eager mark: one member busy at the rebalance. \
consumers' bounce and scale-out at 10 members (4 x 250), plain and with one member (c4, never \
the one bounced) slow by 0.5 s or 2 s at every rebalance: its revocation callback (the model's \
slow event: onPartitionsRevoked, or the rest of a poll, returning that much later) holds an \
eager group's JoinGroup barrier, a cooperative or KIP-848 group only for what that member gives \
up. An eager ★ of the plain scenario that flips with a member slow by X is printed "holds only \
while no member is X late at the rebalance" wherever it stands.'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
scenarios = ["bounce", "bounce-slow500ms", "bounce-slow2000ms", "scale-out", "scale-out-slow500ms",
             "scale-out-slow2000ms"]
sizes = [10]
workloads = ["4x250"]
seeds = 5
question = "Do the eager marks hold when one member is late at the rebalance?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "convergence_ms"]

[[grid]]
name = "busy-rolling"
description = '''as busy-consumers for the rolling bounce: 10 members (4 x 250), plain and with \
one member (c6) slow by 0.5 s or 2 s at every rebalance of the bounce.'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
scenarios = ["rolling-bounce", "rolling-bounce-slow500ms", "rolling-bounce-slow2000ms"]
sizes = [10]
workloads = ["4x250"]
seeds = 5
question = "Does eager's rolling-bounce mark hold when one member is late at each rebalance?"
metrics = ["stall_ms", "lag_peak", "lag_record_s"]

[[grid]]
name = "busy-crossover"
description = '''as busy-consumers for the crossover's cells: 8 members on 1 x 32 partitions at \
20 ms a record, 40 % busy, plain and with one member (c4) slow by 0.5 s or 2 s at every \
rebalance; classic:eager-roundrobin is eager with roundrobin.'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative", \
             "consumer:uniform"]
scenarios = ["rolling-bounce", "rolling-bounce-slow500ms", "rolling-bounce-slow2000ms", "scale-out",
             "scale-out-slow500ms", "scale-out-slow2000ms", "crash", "crash-slow500ms",
             "crash-slow2000ms"]
sizes = [8]
workloads = ["1x32-p20ms-40pct"]
seeds = 5
question = "Do the crossover's eager marks hold when one member is late at the rebalance?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "bounce-downtime"
description = '''the deciding input of a bounce: how long the member is down. 3 s (the \
rolling bounce's default) is shorter than a heartbeat, so a protocol may never notice the \
member gone; 20 s (rolling) and 30 s (a single bounce, against its 10 s) are longer than any \
heartbeat and session check. 10 consumers on the field-costs workload; a ★ that flips between \
the plain scenario and its -downNs variant is printed "depends on the bounce downtime".'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform", "consumer:range"]
scenarios = ["rolling-bounce", "rolling-bounce-down20s", "bounce", "bounce-down30s"]
sizes = [10]
workloads = ["field-costs"]
seeds = 10
confirm_seeds = 10
question = "Do the bounce marks hold when the member is down longer than a heartbeat?"
metrics = ["lag_record_s", "resources_moved", "stall_ms"]

[[grid]]
name = "metadata-age"
description = '''the deciding input of a topic's growth under classic: a classic group \
rebalances when its leader's next metadata refresh sees the new partitions (the Java \
client's ConsumerCoordinator: only the leader compares its metadata with what it assigned), \
within metadata.max.age.ms (Kafka's default 300 s, against 30 s); KIP-848's coordinator \
sends the new target with the next heartbeat, whatever the client's refresh. 10 consumers; \
the producer keeps the topic's rate, spread over every partition once they exist. The \
leader's refresh phase is one uniform draw per run, so the grid runs 20 seeds and 20 fresh \
ones (a median of a phase draw carries a sentence from 20 seeds on); a ★ that flips between \
the two is printed "depends on metadata.max.age.ms".'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
scenarios = ["grow-by-900", "partition-added"]
sizes = [10]
workloads = ["light-md300s", "light-md30s"]
seeds = 20
confirm_seeds = 20
question = "Do the marks on a topic's growth hold when the metadata refresh comes every 30 s?"
metrics = ["convergence_ms", "lag_peak", "lag_record_s"]

[[grid]]
name = "anchor"
description = '''10 consumers, a topic grows by 900 partitions (librdkafka's docs: about 5 s \
with the consumer protocol, about 103 s classic, which waits for the 5-minute metadata \
refresh). A classic group rebalances at its leader's next refresh, whose phase is uniform \
within metadata.max.age.ms: any one run waits anywhere from 0 to 300 s (150 s expected), so \
the 103 s is one draw, and so is a median of a few seeds. The page does not stratify that \
phase: it reports classic's time to converge as its distribution over every run, 21 seeds \
and 21 fresh ones (median, quartiles, range, mean), KIP-848's as its median and range. The \
producer keeps the topic's rate, spread over every partition once they exist (the row's load \
says the rates before and after)'''
protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
scenarios = ["grow-by-900"]
sizes = [10]
workloads = ["light"]
seeds = 21
confirm_seeds = 21
question = "How long until 10 consumers process a topic that grew by 900 partitions?"
metrics = ["convergence_ms", "lag_peak"]

[scenario.worker-leaves-d0]
description = '''KIP-415 worker leaves (scheduled.rebalance.max.delay.ms 0): a follower leaves \
for good; with no delay its tasks go to the others at once.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 0 }
events = [{ at_ms = 30000, kind = "leave", member = "@follower" }]

[scenario.worker-bounce-d0]
description = '''KIP-415 worker bounces (scheduled.rebalance.max.delay.ms 0): a follower leaves \
and returns 10 s later; with no delay its tasks go to the others at once, and some come back.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 0 }
events = [{ at_ms = 30000, kind = "bounce", member = "@follower", down_ms = 10000 }]

[scenario.worker-leaves-d30s]
description = '''KIP-415 worker leaves (scheduled.rebalance.max.delay.ms 30 s): a follower \
leaves for good; its tasks wait for the delay, then go to the others.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 30000 }
events = [{ at_ms = 30000, kind = "leave", member = "@follower" }]

[scenario.worker-bounce-d30s]
description = '''KIP-415 worker bounces (scheduled.rebalance.max.delay.ms 30 s): a follower \
leaves and returns 10 s later; within the delay it gets its tasks back when the delay expires.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 30000 }
events = [{ at_ms = 30000, kind = "bounce", member = "@follower", down_ms = 10000 }]

[scenario.worker-leaves-d300s]
description = '''KIP-415 worker leaves (scheduled.rebalance.max.delay.ms 300 s): a follower \
leaves for good; its tasks wait for the delay, then go to the others.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 300000 }
events = [{ at_ms = 30000, kind = "leave", member = "@follower" }]

[scenario.worker-bounce-d300s]
description = '''KIP-415 worker bounces (scheduled.rebalance.max.delay.ms 300 s): a follower \
leaves and returns 10 s later; within the delay it gets its tasks back when the delay expires.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 300000 }
events = [{ at_ms = 30000, kind = "bounce", member = "@follower", down_ms = 10000 }]

[scenario.worker-bounce-after-delay]
description = '''KIP-415 worker bounces after the delay: a follower is down for \
scheduled.rebalance.max.delay.ms plus 15 s; its tasks went to the others when the delay expired.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
events = [{ at_ms = 30000, kind = "bounce", member = "@follower", after_delay_ms = 15000 }]

[scenario.worker-crash-d0]
description = '''KIP-415 worker crashes (scheduled.rebalance.max.delay.ms 0): a follower \
crashes (no LeaveGroup); the group notices at its session timeout, and with no delay its tasks \
go to the others then.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 0 }
events = [{ at_ms = 30000, kind = "crash", member = "@follower" }]

[scenario.worker-crash-d30s]
description = '''KIP-415 worker crashes (scheduled.rebalance.max.delay.ms 30 s): a follower \
crashes (no LeaveGroup); the group notices at its session timeout, and its tasks wait for the \
delay from then, then go to the others.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 30000 }
events = [{ at_ms = 30000, kind = "crash", member = "@follower" }]

[scenario.worker-crash-d300s]
description = '''KIP-415 worker crashes (scheduled.rebalance.max.delay.ms 300 s): a follower \
crashes (no LeaveGroup); the group notices at its session timeout, and its tasks wait for the \
delay from then, then go to the others.'''
group = { members = 3, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 300000 }
events = [{ at_ms = 30000, kind = "crash", member = "@follower" }]

[scenario.worker-joins-1s-apart]
description = '''KIP-415 worker joins, staggered: W1 runs everything; W2 joins, and W3 1 s \
later.'''
group = { members = 1, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 30000 }
events = [{ at_ms = 30000, kind = "join", members = ["c2"] },
          { at_ms = 31000, kind = "join", members = ["c3"] }]

[scenario.worker-joins-4s-apart]
description = '''KIP-415 worker joins, staggered: W1 runs everything; W2 joins, and W3 4 s \
later (after the first join's round).'''
group = { members = 1, connectors = { A = 2, B = 1 } }
member = { scheduled_rebalance_max_delay_ms = 30000 }
events = [{ at_ms = 30000, kind = "join", members = ["c2"] },
          { at_ms = 34000, kind = "join", members = ["c3"] }]

[scenario.crash-then-join]
description = '''c3 crashes; 50 s later, its session (45 s) expired and its partitions given to \
the others, who work off their backlog, a member joins (members working off that \
backlog may be inside a long poll at the join: the report gives how late they were). The \
crash's window costs every protocol about the \
same (the 45 s session); the protocols differ in the join's window, and there much of \
eager's excess is the 2 s state restore per gained partition (a model input: an eager \
rebalance moves most partitions, a cooperative one the joiner's few; the "Why" list splits \
the lag by window).'''
group = { members = 10, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "crash", member = "c3" },
          { at_ms = 80000, kind = "scale-out", count = 1 }]

[scenario.join-in-long-poll]
description = '''Ten static consumers; c3 restarts (down 30 s, within the session: it gets \
its partitions back with no rebalance, and a 30 s backlog); a member joins 2 s after c3 \
returns, while c3 is inside a 10 s poll.'''
group = { members = 10, static = true, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "bounce", member = "c3", down_ms = 30000 },
          { at_ms = 62000, kind = "scale-out", count = 1 }]

[scenario.join-after-catch-up]
description = '''join-in-long-poll's control: the same restart of c3, and the member joins \
60 s after c3 returned, when c3 has worked off its backlog (its polls are short again).'''
group = { members = 10, static = true, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "bounce", member = "c3", down_ms = 30000 },
          { at_ms = 120000, kind = "scale-out", count = 1 }]

[scenario.bounce-slow500ms]
description = '''bounce with c4 slow by 0.5 s at every rebalance from 5 s before it \
(c4's revocations take 0.5 s more for 60 s: a member late at the rebalance).'''
group = { members = 4, topics = { foo = 8 } }
events = [{ at_ms = 25000, kind = "slow", member = "c4", delay_ms = 500, \
duration_ms = 60000 },
          { at_ms = 30000, kind = "bounce", member = "c2", down_ms = 10000 }]

[scenario.bounce-slow2000ms]
description = '''bounce with c4 slow by 2 s at every rebalance from 5 s before it \
(c4's revocations take 2 s more for 60 s: a member late at the rebalance).'''
group = { members = 4, topics = { foo = 8 } }
events = [{ at_ms = 25000, kind = "slow", member = "c4", delay_ms = 2000, \
duration_ms = 60000 },
          { at_ms = 30000, kind = "bounce", member = "c2", down_ms = 10000 }]

[scenario.scale-out-slow500ms]
description = '''scale-out with c3 slow by 0.5 s at every rebalance from 5 s before it \
(c3's revocations take 0.5 s more for 60 s: a member late at the rebalance).'''
group = { members = 3, topics = { foo = 12 } }
events = [{ at_ms = 25000, kind = "slow", member = "c3", delay_ms = 500, \
duration_ms = 60000 },
          { at_ms = 30000, kind = "scale-out", count = 3 }]

[scenario.scale-out-slow2000ms]
description = '''scale-out with c3 slow by 2 s at every rebalance from 5 s before it \
(c3's revocations take 2 s more for 60 s: a member late at the rebalance).'''
group = { members = 3, topics = { foo = 12 } }
events = [{ at_ms = 25000, kind = "slow", member = "c3", delay_ms = 2000, \
duration_ms = 60000 },
          { at_ms = 30000, kind = "scale-out", count = 3 }]

[scenario.crash-slow500ms]
description = '''crash with c4 slow by 0.5 s at every rebalance from 5 s before it \
(c4's revocations take 0.5 s more for 90 s: a member late at the rebalance).'''
group = { members = 4, topics = { foo = 8 } }
events = [{ at_ms = 25000, kind = "slow", member = "c4", delay_ms = 500, \
duration_ms = 90000 },
          { at_ms = 30000, kind = "crash", member = "c2" }]

[scenario.crash-slow2000ms]
description = '''crash with c4 slow by 2 s at every rebalance from 5 s before it \
(c4's revocations take 2 s more for 90 s: a member late at the rebalance).'''
group = { members = 4, topics = { foo = 8 } }
events = [{ at_ms = 25000, kind = "slow", member = "c4", delay_ms = 2000, \
duration_ms = 90000 },
          { at_ms = 30000, kind = "crash", member = "c2" }]

[scenario.rolling-bounce-slow500ms]
description = '''rolling-bounce with c6 slow by 0.5 s at every rebalance from 5 s before it \
(c6's revocations take 0.5 s more for 180 s: a member late at the rebalance).'''
group = { members = 6, topics = { foo = 12, bar = 12 } }
events = [{ at_ms = 25000, kind = "slow", member = "c6", delay_ms = 500, \
duration_ms = 180000 },
          { at_ms = 30000, kind = "rolling-bounce", interval_ms = 15000, down_ms = 3000 }]

[scenario.rolling-bounce-slow2000ms]
description = '''rolling-bounce with c6 slow by 2 s at every rebalance from 5 s before it \
(c6's revocations take 2 s more for 180 s: a member late at the rebalance).'''
group = { members = 6, topics = { foo = 12, bar = 12 } }
events = [{ at_ms = 25000, kind = "slow", member = "c6", delay_ms = 2000, \
duration_ms = 180000 },
          { at_ms = 30000, kind = "rolling-bounce", interval_ms = 15000, down_ms = 3000 }]

[scenario.grow-by-900]
description = "Ten consumers on foo (100 partitions); foo grows to 1,000 partitions."
group = { members = 10, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "add-partitions", topic = "foo", partitions = 1000 }]

[scenario.rolling-bounce-down20s]
description = '''rolling-bounce with each member down 20 s instead of 3 s (every live member \
in name order, 15 s apart, so two are down at once): longer than the classic 3 s heartbeat and \
the KIP-848 5 s one, so every protocol sees the member gone.'''
group = { members = 10, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "rolling-bounce", interval_ms = 15000, down_ms = 20000 }]

[scenario.rolling-bounce-static]
description = '''rolling-bounce with static members (group.instance.id): every live member in \
name order, 15 s apart, down 3 s, within the 45 s session, so each gets its partitions back \
with no rebalance.'''
group = { members = 10, static = true, topics = { foo = 100 } }
events = [{ at_ms = 30000, kind = "rolling-bounce", interval_ms = 15000, down_ms = 3000 }]

[scenario.bounce-down30s]
description = "bounce with the member down 30 s instead of 10 s."
group = { members = 4, topics = { foo = 8 } }
events = [{ at_ms = 30000, kind = "bounce", member = "c2", down_ms = 30000 }]

# Natural lateness (docs/lab.md, "Natural lateness"; the same grid as lab/data/paper-lateness.toml).
# 4 topics x 250 partitions at 1.6 records/s each (the consumers grid's 1,600 records/s), 1 ms
# a record on average: 16 % busy at 10 members (18 % with one member fewer) from processing,
# plus the time paused (moderate 2 %, heavy 10 %): the busiest member stays under 70 %.
# none: 1 ms a record, no pause (the members are in poll() at every rebalance).
[[workloads]]
name = "4x250-p1ms"
topics = 4
partitions = 250
records_per_s = 1.6
processing_ms = 1

# moderate: a record's time lognormal (mean 1 ms, sigma 1: median 0.61 ms, 1 in 100 batches
# over 6 ms a record), and a pause every 10 s on average per member, lognormal (mean 200 ms,
# sigma 1: median 120 ms, 1 in 100 over 1.2 s).
[[workloads]]
name = "4x250-ln1ms-s1-pause200ms-10s"
topics = 4
partitions = 250
records_per_s = 1.6
processing_ms = { dist = "lognormal", mean = 1, sigma = 1 }
pause_every_ms = 10000
pause_ms = { dist = "lognormal", mean = 200, sigma = 1 }

# heavy: a record's time lognormal (mean 1 ms, sigma 1.5: median 0.32 ms, 1 in 100 batches
# over 10 ms a record, a 500-record poll 5 s), and a pause every 10 s on average per member,
# lognormal (mean 1 s, sigma 1: median 0.61 s, 1 in 100 over 6 s).
[[workloads]]
name = "4x250-ln1ms-s1.5-pause1s-10s"
topics = 4
partitions = 250
records_per_s = 1.6
processing_ms = { dist = "lognormal", mean = 1, sigma = 1.5 }
pause_every_ms = 10000
pause_ms = { dist = "lognormal", mean = 1000, sigma = 1 }

[[grid]]
name = "lateness"
description = '''the eager marks under natural lateness: 10 consumers (4 x 250) whose poll
loops pause (GC, IO) and whose records take a heavy-tailed time, at three levels named by
their distributions (none: 1 ms a record, no pause; moderate: lognormal 1 ms sigma 1, a
lognormal 200 ms sigma 1 pause every 10 s; heavy: lognormal 1 ms sigma 1.5, a lognormal 1 s
sigma 1 pause every 10 s). A classic member rejoins, and an eager one revokes, only from poll(), so a
paused or busy member holds an eager group's JoinGroup barrier; a cooperative or KIP-848 group
waits on it only for what it gives up. The lateness columns give the measured distribution.
The scale-out cells run at 20 + 20 seeds in lateness-scale-out.'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative",
             "consumer:uniform"]
scenarios = ["bounce", "rolling-bounce"]
sizes = [10]
workloads = ["4x250-p1ms", "4x250-ln1ms-s1-pause200ms-10s", "4x250-ln1ms-s1.5-pause1s-10s"]
seeds = 6
confirm_seeds = 6
question = "Do the eager marks hold when the members' own work makes them late at the rebalance?"
# (the lateness columns are the condition, not a cost: printed with the grid, never marked)
metrics = ["stall_ms", "lag_peak", "lag_record_s", "convergence_ms"]

# lateness's scale-out cells at 20 seeds and 20 fresh ones: at 6 + 6 a skewed cell's median
# rested on one seed (eager's excess lag under the moderate lateness spans three orders of
# magnitude across seeds). 20 + 20 for the whole lateness grid and its heartbeat-spread
# companion would cost 3,024 runs more; the scale-out cells alone 1,008.
[[grid]]
name = "lateness-scale-out"
description = '''lateness's scale-out cells (10 consumers, 4 x 250, a member joins) at 20 seeds and \
20 fresh ones, at the same three levels of lateness (none; moderate: lognormal 1 ms sigma 1, \
a lognormal 200 ms sigma 1 pause every 10 s; heavy: lognormal 1 ms sigma 1.5, a lognormal 1 s \
sigma 1 pause every 10 s): their excess lag is skewed across seeds (a join that meets a \
paused member), so a median needs more seeds than lateness's 6 + 6'''
protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative",
             "consumer:uniform"]
scenarios = ["scale-out"]
sizes = [10]
workloads = ["4x250-p1ms", "4x250-ln1ms-s1-pause200ms-10s", "4x250-ln1ms-s1.5-pause1s-10s"]
seeds = 20
confirm_seeds = 20
question = "Do the eager marks hold when the members' own work makes them late at a join?"
metrics = ["stall_ms", "lag_peak", "lag_record_s", "convergence_ms"]

[[grid]]
name = "hb-spread"
description = '''the heartbeat-alignment assumption behind the crossover's eager marks: the \
model lets every classic member restart its heartbeat timer when the round's answers reach it \
together, so all learn of the next rebalance at the same beat. Here each join shifts every \
member's heartbeat phase by up to 0, 1 s or 3 s (a whole classic heartbeat) drawn per member \
and join (@hbspread: the JoinGroup answers over a network round, the heartbeat thread's \
100 ms wake-ups, GC; a KIP-848 member's phase is its own): 8 members on 1 x 32 partitions at \
20 ms a record, 40 % busy; classic:eager-roundrobin is eager with roundrobin.'''
protocols = ["classic:eager@hbspread0s", "classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread0s", "classic:eager-roundrobin@hbspread1s",
             "classic:eager-roundrobin@hbspread3s", "classic:cooperative@hbspread0s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread0s", "consumer:uniform@hbspread1s",
             "consumer:uniform@hbspread3s"]
scenarios = ["rolling-bounce", "scale-out"]
sizes = [8]
workloads = ["1x32-p20ms-40pct"]
seeds = 5
confirm_seeds = 5
question = "Do the crossover's eager marks hold when the members' heartbeat phases spread?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "crossover-10ms-hbspread"
description = '''crossover-10ms's cells with every classic member's heartbeat phase spread after each \
join by up to 1 s (the spread real Java members showed at the first rebalance after 5 to \
35 min stable, lab.wire_spread) or 3 s (a whole classic heartbeat, the worst) instead of \
the model's aligned heartbeats (@hbspread, as in hb-spread; a KIP-848 member's phase is \
its own): 8 members on 1 x 32 partitions, 10 ms a record, 20, 30 and 40 % busy; the same \
cells and seeds as crossover-10ms, judged per spread, so that an eager mark of \
crossover-10ms says in its sentence whether it survives spread heartbeats'''
protocols = ["classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread1s", "classic:eager-roundrobin@hbspread3s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread1s", "consumer:uniform@hbspread3s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p10ms-20pct", "1x32-p10ms-30pct", "1x32-p10ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "Do crossover-10ms's eager marks hold when the members' heartbeat phases spread?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "crossover-20ms-hbspread"
description = '''crossover-20ms's cells with every classic member's heartbeat phase spread after each \
join by up to 1 s (the spread real Java members showed at the first rebalance after 5 to \
35 min stable, lab.wire_spread) or 3 s (a whole classic heartbeat, the worst) instead of \
the model's aligned heartbeats (@hbspread, as in hb-spread; a KIP-848 member's phase is \
its own): 8 members on 1 x 32 partitions, 20 ms a record, 20, 30 and 40 % busy; the same \
cells and seeds as crossover-20ms, judged per spread, so that an eager mark of \
crossover-20ms says in its sentence whether it survives spread heartbeats'''
protocols = ["classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread1s", "classic:eager-roundrobin@hbspread3s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread1s", "consumer:uniform@hbspread3s"]
scenarios = ["rolling-bounce", "scale-out", "crash"]
sizes = [8]
workloads = ["1x32-p20ms-20pct", "1x32-p20ms-30pct", "1x32-p20ms-40pct"]
seeds = 10
confirm_seeds = 10
question = "Do crossover-20ms's eager marks hold when the members' heartbeat phases spread?"
metrics = ["lag_record_s", "lag_peak", "stall_ms"]

[[grid]]
name = "field-costs-hbspread"
description = '''field-costs's cells with every classic member's heartbeat phase spread after each join \
by up to 1 s (the spread real Java members showed at the first rebalance after 5 to 35 \
min stable, lab.wire_spread) or 3 s (a whole classic heartbeat, the worst) instead of \
the model's aligned heartbeats (@hbspread, as in hb-spread; a KIP-848 member's phase is \
its own): 10 members on 1 x 100 partitions, 20 ms a record, 2 s of state restore a newly \
assigned partition; the same cells and seeds as field-costs, judged per spread, so that \
an eager mark of field-costs says in its sentence whether it survives spread heartbeats'''
protocols = ["classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread1s", "classic:eager-roundrobin@hbspread3s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread1s", "consumer:uniform@hbspread3s"]
scenarios = ["bounce", "scale-out", "rolling-bounce", "crash-then-join"]
sizes = [10]
workloads = ["field-costs"]
seeds = 10
confirm_seeds = 10
question = "Do field-costs' eager marks hold when the members' heartbeat phases spread?"
metrics = ["lag_record_s", "lag_peak", "stall_ms", "paused_partition_s"]

[[grid]]
name = "lateness-hbspread"
description = '''lateness's cells with every classic member's heartbeat phase spread after each join by \
up to 1 s (the spread real Java members showed at the first rebalance after 5 to 35 min \
stable, lab.wire_spread) or 3 s (a whole classic heartbeat, the worst) instead of the \
model's aligned heartbeats (@hbspread, as in hb-spread; a KIP-848 member's phase is its \
own): 10 members (4 x 250) at the lateness grid's three levels of pauses and \
heavy-tailed batches; the same cells and seeds as lateness, judged per spread, so that \
an eager mark of lateness says in its sentence whether it survives spread heartbeats'''
protocols = ["classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread1s", "classic:eager-roundrobin@hbspread3s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread1s", "consumer:uniform@hbspread3s"]
scenarios = ["bounce", "rolling-bounce"]
sizes = [10]
workloads = ["4x250-p1ms", "4x250-ln1ms-s1-pause200ms-10s", "4x250-ln1ms-s1.5-pause1s-10s"]
seeds = 6
confirm_seeds = 6
question = "Do the lateness grid's eager marks hold when the members' heartbeat phases spread?"
metrics = ["stall_ms", "lag_peak", "lag_record_s"]

[[grid]]
name = "lateness-scale-out-hbspread"
description = '''lateness-scale-out's cells with every classic member's heartbeat phase spread \
after each join by up to 1 s (the spread real Java members showed at the first rebalance after 5 to 35 min \
stable, lab.wire_spread) or 3 s (a whole classic heartbeat, the worst) instead of the \
model's aligned heartbeats (@hbspread, as in hb-spread; a KIP-848 member's phase is its \
own): 10 members (4 x 250) at the lateness grid's three levels of pauses and \
heavy-tailed batches; the same cells and seeds as lateness-scale-out, judged per spread, \
so that an eager mark of lateness-scale-out says in its sentence whether it survives spread heartbeats'''
protocols = ["classic:eager@hbspread1s", "classic:eager@hbspread3s",
             "classic:eager-roundrobin@hbspread1s", "classic:eager-roundrobin@hbspread3s",
             "classic:cooperative@hbspread1s", "classic:cooperative@hbspread3s",
             "consumer:uniform@hbspread1s", "consumer:uniform@hbspread3s"]
scenarios = ["scale-out"]
sizes = [10]
workloads = ["4x250-p1ms", "4x250-ln1ms-s1-pause200ms-10s", "4x250-ln1ms-s1.5-pause1s-10s"]
seeds = 20
confirm_seeds = 20
question = "Do lateness-scale-out's eager marks hold when the members' heartbeat phases spread?"
metrics = ["stall_ms", "lag_peak", "lag_record_s"]

[[grid]]
name = "field-costs-hb1s"
description = '''field-costs with every member's heartbeat at 1 s (@hb1s) instead of the \
classic client's 3 s and KIP-848's 5 s defaults: an incremental protocol's members learn of a \
rebalance, or of their follow-up round, at their next heartbeat, so beside field-costs's \
columns (the same cells and seeds) these show how much of a protocol's lag is the heartbeat \
wait. classic:eager, classic:cooperative and consumer:uniform only'''
protocols = ["classic:eager@hb1s", "classic:cooperative@hb1s", "consumer:uniform@hb1s"]
scenarios = ["bounce", "scale-out", "rolling-bounce", "crash-then-join"]
sizes = [10]
workloads = ["field-costs"]
seeds = 10
confirm_seeds = 10
question = "When members restore state for the partitions they gain and process long batches \
after a backlog, what does a member change cost each protocol's applications?"
metrics = ["lag_record_s", "lag_peak", "stall_ms", "paused_partition_s"]
""",
}
