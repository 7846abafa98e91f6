"""The lab without Spark: sweep specs, seeds, cell scenarios, one run's rows, the rerun CLI."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from groupcoord.cli import main
from groupcoord.lab.runs import (
    RUN_COLUMNS,
    build_scenario,
    flatten,
    repro_command,
    run_one,
)
from groupcoord.lab.spec import (
    BUILTIN_SPECS,
    PARAM_COLUMNS,
    LabWorkload,
    RunParams,
    SpecError,
    cells,
    derive_seed,
    expand,
    load_spec,
    parse_spec,
    restrict,
)
from groupcoord.sim.protocols import protocol_labels


def _spec(text: str) -> object:
    return parse_spec(tomllib.loads(text), "test.toml")


def test_builtin_specs_expand() -> None:
    quick = expand(load_spec("quick"))
    labels = protocol_labels()
    # 4 scenarios x 3 sizes x 2 fault rates x 2 seeds, per protocol (one workload each)
    assert len(quick) == 4 * 3 * 2 * 2 * len(labels)
    assert cells(quick) == len(quick) // 2
    assert {r.protocol for r in quick} == set(labels)
    paper = load_spec("paper")
    assert set(paper.scenarios) >= {"crash", "rolling-bounce", "kip415-leader-leaves",
                                    "worker-bounce-d300s", "crash-then-join", "grow-by-900"}
    runs = expand(paper)
    # connector workloads pair with Connect protocols, topic workloads with consumer ones
    from groupcoord.lab.spec import is_connect_protocol

    assert {r.workload for r in runs if not is_connect_protocol(r.protocol)} == {
        "4x250", "4x1000", "field-costs", "long-poll", "long-poll-1s", "light", "light-md300s", "light-md30s",
        *(f"1x32-p{ms}ms-{pct}pct" for ms in (10, 20) for pct in (20, 30, 40)),
        # natural lateness: none, moderate, heavy
        "4x250-p1ms", "4x250-ln1ms-s1-pause200ms-10s", "4x250-ln1ms-s1.5-pause1s-10s"}
    # the deciding inputs are swept: bounce downtime by scenario variant, the metadata
    # refresh by workload (so a flipping ★ reads "depends on X")
    grids = {g.name: g for g in paper.grids}
    assert {"rolling-bounce", "rolling-bounce-down20s", "bounce", "bounce-down30s"} <= set(
        grids["bounce-downtime"].scenarios)
    ages = {w.name: json.loads(w.work or "{}").get("metadata_max_age_ms")
            for w in grids["metadata-age"].workloads}
    assert ages == {"light-md300s": 300_000, "light-md30s": 30_000}
    assert {r.workload for r in runs if is_connect_protocol(r.protocol)} == {
        "16x8c", "16x8c-task10ms", "16x8c-task100ms", "16x8c-task1s", "16x8c-task5s",
        "16x8c-stop700ms", "16x8c-stop900ms", "16x8c-stop1100ms", "16x8c-stop1300ms"}
    assert {p for p in labels if is_connect_protocol(p)} == {
        label for label in labels if label.split(":")[0] in ("connect", "classic-connect")}
    assert set(BUILTIN_SPECS) == {"quick", "paper"}


def test_seeds_are_stable_and_shared_by_protocols() -> None:
    spec = _spec('scenarios = ["crash", "random"]\nsizes = [3, 5]\nseeds = 4\n'
                 'protocols = ["consumer:uniform", "consumer:range"]')
    a, b = expand(spec), expand(spec)
    assert a == b
    assert len({r.run_id for r in a}) == len(a)
    by_cell: dict[tuple[object, ...], set[int]] = {}
    for r in a:
        by_cell.setdefault((r.scenario, r.size, r.replicate), set()).add(r.seed)
    assert all(len(seeds) == 1 for seeds in by_cell.values())  # paired across protocols
    wl = LabWorkload("scenario")
    seed = derive_seed("", "crash", 3, wl, None, 0)
    assert seed == derive_seed("", "crash", 3, wl, None, 0)
    assert seed != derive_seed("salt", "crash", 3, wl, None, 0)
    assert seed != derive_seed("", "crash", 3, wl, None, 1)
    assert 0 <= seed < 1 << 63


@pytest.mark.parametrize(("text", "message"), [
    ("protocols = ['consumer']", "scenarios is required"),
    ("scenarios = ['nope']", "unknown scenario 'nope'"),
    ("scenarios = ['crash']\nprotocols = ['gossip']", "unknown protocol"),
    ("scenarios = ['crash']\nsizes = [0]", "sizes"),
    ("scenarios = ['crash']\nfault_rates = [2.0]", "fault_rates"),
    ("scenarios = ['crash']\n[[workloads]]\ntopics = 3", "both topics and partitions"),
    ("scenarios = ['crash']\n[[workloads]]\ntopics = 3\npartitions = 2\nconnectors = 1\n"
     "tasks = 1", "not both"),
    ("scenarios = ['crash']\ncolour = 'red'", "unknown key(s) colour"),
    ("scenarios = ['mine']\n[scenario.mine]\ngroup = { members = 'x' }", "group.members"),
])
def test_bad_specs_name_the_field(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expand(_spec(text))  # type: ignore[arg-type]


def _params(**kw: object) -> RunParams:
    base: dict[str, object] = {name: None for name in PARAM_COLUMNS}
    base.update(run_id="r", sweep="t", protocol="consumer:uniform", scenario="crash",
                workload="scenario", replicate=0, seed=7, events=False, checkpoint_every=2000,
                spec_ref="t")
    base.update(kw)
    return RunParams(**base)  # type: ignore[arg-type]


def test_cells_change_the_scenario() -> None:
    base = build_scenario(_params())
    assert base.members == 4 and base.topics == (("foo", 8),)
    grown = build_scenario(_params(size=10, topics=3, partitions=16, fault_rate=0.05))
    assert grown.members == 10
    assert grown.topics == (("foo", 16), ("foo_2", 16), ("foo_3", 16))
    assert grown.faults.loss == grown.faults.reorder == 0.05
    # c2 crashes in both, after each cell's warm-up (sized from its workload)
    assert [(e.kind, e.params) for e in grown.events] == [(e.kind, e.params)
                                                         for e in base.events]
    assert grown.events[0].at_ms >= base.events[0].at_ms  # more members, more to join
    small = build_scenario(_params(scenario="case-study-c-joins", size=5))
    (join,) = small.events
    assert join["members"] == ("c6",)  # the newcomer is renumbered after the initial members
    added = build_scenario(_params(scenario="partition-added", topics=1, partitions=16))
    (grow,) = added.events
    assert grow["partitions"] == 32  # 4 -> 8 scales to 16 -> 32
    shrink = build_scenario(_params(scenario="scale-in", size=2))
    assert shrink.events[0]["count"] == 1


def test_run_one_rows_are_a_function_of_the_parameters() -> None:
    p = _params(scenario="bounce", size=3, events=True)
    a, b = run_one(p), run_one(p)
    a.pop("wall_ms")
    b.pop("wall_ms")
    assert a == b
    assert a["ok"] and a["converged"] and a["disturbance_count"] == 1
    assert a["epoch_bumps"] >= 1 and a["resource_downtime_ms"] > 0
    tables = flatten({**a, "wall_ms": 1.0})
    assert list(tables["runs"][0]) == list(RUN_COLUMNS)
    assert [d["disturbance"] for d in tables["disturbances"]] == ["initial-join", "bounce"]
    assert tables["events"] and tables["events"][0]["seq"] == 0
    assert {e["event"] for e in tables["events"]} >= {"start", "bounce"}
    assert tables["violations"] == []


def test_a_run_that_cannot_start_is_a_setup_violation() -> None:
    res = run_one(_params(protocol="gossip"))
    assert not res["ok"] and res["invariant"] == "setup"
    v = flatten(res)["violations"][0]
    assert "gossip" in v["message"]
    assert v["command"].startswith("groupcoord lab rerun --scenario crash --protocol gossip")


def test_repro_command_reruns_the_same_run(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    p = _params(scenario="kip415-leader-leaves", size=5, fault_rate=0.02, spec_ref="paper",
                scenario_def=None)
    spec = load_spec("paper")
    from groupcoord.lab.spec import scenario_definition

    assert scenario_definition(spec, p.scenario) is None  # a simulator built-in
    cmd = repro_command(p)
    assert "--spec" not in cmd and "--size 5" in cmd and "--fault-rate 0.02" in cmd
    argv = cmd.split()[1:]
    trace = tmp_path / "trace.txt"
    assert main([*argv, "--json", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    import json

    got = json.loads(out)
    expected = run_one(p)
    assert got["steps"] == expected["steps"] and got["seed"] == p.seed
    assert got["summary"]["resource_downtime_ms"] == expected["total_downtime_ms"]
    assert trace.read_text().count("\n") > 10


def test_cli_dry_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "run", "--spec", "quick", "--out", "unused", "--dry-run"]) == 0
    assert "runs in" in capsys.readouterr().out
    assert main(["lab", "run", "--spec", "nope", "--out", "unused", "--dry-run"]) == 2
    assert "cannot read spec nope" in capsys.readouterr().err


def test_a_connect_scenario_with_a_topic_workload_runs_on_topics() -> None:
    """A Connect scenario in a consumer protocol's cell: its connectors become topics, then the
    workload's topics x partitions apply; connector events become topic events."""
    sc = build_scenario(_params(scenario="kip415-connector-added", workload="2x6", topics=2,
                                partitions=6))
    assert sc.connectors == ()
    assert [p for _, p in sc.topics] == [6, 6]
    kinds = [e.kind for e in sc.events]
    assert "add-connector" not in kinds and "create-topic" in kinds
    created = next(e for e in sc.events if e.kind == "create-topic")
    assert created["topic"] in (sc.subscription or ())


GRIDS = """
name = "grids"
seeds = 2
[[workloads]]
name = "2x6"
topics = 2
partitions = 6
[[workloads]]
name = "2x3c"
connectors = 2
tasks = 3
[[grid]]
name = "a"
protocols = ["classic:eager", "consumer:uniform"]
scenarios = ["crash", "bounce"]
sizes = [3, 5]
workloads = ["2x6"]
[[grid]]
name = "b"
protocols = ["connect:eager", "classic:eager"]
scenarios = ["crash"]
sizes = [3]
workloads = ["2x3c", "2x6"]
seeds = 3
"""


def test_grids_expand_to_their_union_and_share_runs() -> None:
    spec = parse_spec(tomllib.loads(GRIDS), "grids.toml")
    runs = expand(spec)
    # a: 2 protocols x 2 scenarios x 2 sizes x 2 seeds = 16; b: connect:eager on 2x3c and
    # classic:eager on 2x6, 3 seeds each = 6, of which classic:eager crash size 3 seeds 0-1
    # are a's runs (same cell, same seeds): 4 new.
    assert len(runs) == 16 + 4
    assert len({r.run_id for r in runs}) == len(runs)
    assert spec.resolved_protocols() == ["classic:eager", "consumer:uniform", "connect:eager"]
    assert spec.scenarios == ("crash", "bounce")


def test_restrict_keeps_the_same_runs_of_the_cells_asked_for() -> None:
    spec = parse_spec(tomllib.loads(GRIDS), "grids.toml")
    full = {r.run_id: r for r in expand(spec)}
    cut = expand(restrict(spec, scenarios=["crash"], sizes=[3], protocols=["classic:eager"]))
    assert cut and all(r.run_id in full and full[r.run_id] == r for r in cut)
    assert {(r.scenario, r.size, r.protocol) for r in cut} == {("crash", 3, "classic:eager")}
    assert len(cut) == 3  # the 3 seeds of grid b, which include grid a's 2
    with pytest.raises(SpecError, match="--size 7: not in the spec"):
        restrict(spec, sizes=[7])
    with pytest.raises(SpecError, match="no cell"):
        restrict(spec, scenarios=["bounce"], protocols=["connect:eager"])
    # one grid's runs only (a grid added to a rendered sweep, run on its own and merged)
    only_b = expand(restrict(spec, grids=["b"]))
    assert only_b and all(full[r.run_id] == r for r in only_b)
    assert {r.protocol for r in only_b} == {"connect:eager", "classic:eager"}
    assert len(only_b) == 6
    with pytest.raises(SpecError, match="--grid nope: not in the spec"):
        restrict(spec, grids=["nope"])


@pytest.mark.parametrize(("grid", "message"), [
    ('[[grid]]\nscenarios = ["crash"]\nbogus = 1', r"grid\[0\]: unknown key\(s\) bogus"),
    ('[[grid]]\nscenarios = ["crash"]\nworkloads = ["nope"]', "unknown workload 'nope'"),
    ('[[grid]]\nscenarios = ["crash"]\nsizes = [0]', r"grid\[0\]: sizes: expected an integer"),
    ('[[grid]]\nprotocols = ["all"]', r"grid\[0\]: scenarios is required"),
    ("grid = 3", "grid must be a non-empty array of tables"),
    ('[[grid]]\nscenarios = ["crash"]\nmetrics = ["nope"]', "metrics: unknown nope"),
])
def test_bad_grids_name_the_field(grid: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(tomllib.loads(grid), "g.toml")


def test_cli_runs_a_findings_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "run", "--spec", "paper", "--scenario", "grow-by-900", "--protocol",
                 "classic:eager", "--workload", "light", "--out", "unused", "--dry-run"]) == 0
    # 21 seeds and 21 more that confirm the marks
    assert "sweep paper: 42 runs in 1 cells (classic:eager)" in capsys.readouterr().out
    # the metadata-age grid adds the growth at both metadata.max.age.ms (20 + 20 seeds each:
    # a median of the leader's refresh phase carries a sentence from 20 seeds on)
    assert main(["lab", "run", "--spec", "paper", "--scenario", "grow-by-900", "--protocol",
                 "classic:eager", "--out", "unused", "--dry-run"]) == 0
    assert "sweep paper: 122 runs in 3 cells (classic:eager)" in capsys.readouterr().out
    # the spread companion of field-costs alone: 4 scenarios x 8 labels x (10 + 10) seeds
    assert main(["lab", "run", "--spec", "paper", "--grid", "field-costs-hbspread", "--out",
                 "unused", "--dry-run"]) == 0
    assert "sweep paper: 640 runs in 32 cells" in capsys.readouterr().out
    assert main(["lab", "run", "--spec", "paper", "--size", "7", "--out", "u", "--dry-run"]) == 2
    assert "--size 7: not in the spec" in capsys.readouterr().err


def test_paper_spec_asks_the_seeds_questions() -> None:
    spec = load_spec("paper")
    names = {g.name for g in spec.grids}
    assert {"kip415", "kip415-task-times", "consumers", "consumers-300", "rolling",
            "crossover-10ms", "crossover-20ms", "anchor"} <= names
    # each crossover grid sweeps the members' load at one poll length, on the same seeds
    from groupcoord.lab.findings import busy_pct, sweep_parameter, with_work_parameters

    for ms in (10, 20):
        cross = [r for r in expand(spec) if r.scenario == "scale-out" and r.size == 8
                 and r.protocol == "classic:eager" and f"p{ms}ms" in r.workload]
        rows = [{**r.as_row(), "members": 8, "total_partitions": 32} for r in cross]
        assert sorted({busy_pct(r) for r in rows}) == [20, 30, 40]
        assert sweep_parameter(with_work_parameters(rows)) == "busy_pct"
        assert len({r.seed for r in cross}) == 20  # 10 seeds and 10 that confirm the marks
    # rolling, crossover and field-costs carry enough seeds for sentences (>= 5) and for the
    # sign test (>= 10)
    assert {g.name: g.seeds for g in spec.grids
            if g.name in ("rolling", "crossover-10ms", "crossover-20ms", "field-costs")} == {
        "rolling": 10, "crossover-10ms": 10, "crossover-20ms": 10, "field-costs": 10}
    # KIP-415: the worker that leaves or bounces is a follower, and the delay is swept
    delays: dict[str, set[int]] = {}
    for r in expand(spec):
        if r.scenario.startswith(("worker-leaves-", "worker-bounce-")) and r.size == 12:
            sc = build_scenario(r)
            assert {e["member"] for e in sc.events} == {"@follower"}
            delays.setdefault(r.scenario.split("-")[1], set()).add(sc.max_delay_ms)
    assert delays == {"leaves": {0, 30_000, 300_000}, "bounce": {0, 30_000, 300_000}}
    sizes = {z for g in spec.grids for z in g.sizes}
    assert {10, 300} <= sizes
    anchor = build_scenario(next(r for r in expand(spec) if r.scenario == "grow-by-900"))
    assert anchor.members == 10 and anchor.topics == (("foo", 100),)
    grow = next(e for e in anchor.events if e.kind == "add-partitions")
    assert grow["partitions"] == 1000


def test_the_labs_members_start_across_a_heartbeat_interval() -> None:
    """Every lab run spreads its initial members' starts over one heartbeat interval (drawn
    from the run's seed); a scenario that says its own spread keeps it; the violation's
    reproduce command carries it."""
    sc = build_scenario(_params())
    assert sc.start_spread_ms == sc.heartbeat_interval_ms == 5_000
    own = build_scenario(_params(
        scenario="own", scenario_def='{"name": "own", "group": {"start_spread_ms": 0}}'))
    assert own.start_spread_ms == 0
    from groupcoord.sim.runner import simulate

    r = simulate(sc, 7, "consumer:uniform", record_trace=True)
    starts = sorted(int(line.split()[0]) for line in r.trace if line.split()[2] == "start")
    assert len(set(starts)) == sc.members and starts[0] >= 0 and starts[-1] < 5_000
    from groupcoord.sim.protocols import resolve_protocol

    spec, variant = resolve_protocol("consumer:uniform")
    assert "--start-spread-ms 5000" in spec.simulation(sc, 7, variant).reproduce_command()


def test_paper_consumer_grids_stay_below_saturation_under_every_assignor() -> None:
    """The spec's description says the busiest member stays under 70 % busy under every
    assignor even with one member fewer (range included): true of every consumer cell, from
    the scenario each run builds (its topics, partitions and workload)."""
    from groupcoord.lab.mechanism import BUSY_LIMIT, busiest_partitions
    from groupcoord.lab.spec import is_connect_protocol

    spec = load_spec("paper")
    assert "under 70 % busy under every assignor" in " ".join(spec.description.split())
    seen = set()
    for r in expand(spec):
        key = (r.scenario, r.size, r.workload)
        if is_connect_protocol(r.protocol) or key in seen or r.replicate:
            continue
        seen.add(key)
        sc = build_scenario(r)
        work = sc.workload
        if work.idle:
            continue
        for assignor in ("range", "uniform"):
            most = max(busiest_partitions(1, p, sc.members - 1, assignor) * len(sc.topics)
                       if assignor == "range" else
                       busiest_partitions(1, sum(q for _, q in sc.topics), sc.members - 1,
                                          assignor) for _, p in sc.topics)
            rate = max(work.rate_of(t) for t, _ in sc.topics)
            busy = most * rate * work.processing_ms.average / 1000.0
            assert busy <= BUSY_LIMIT, (key, assignor, busy)
