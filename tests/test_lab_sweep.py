"""A small sweep on local[2], end to end (docs/lab.md).

One sweep (2 scenarios x 2 sizes x 2 fault rates x 2 seeds x every protocol, traces on) runs
once for the module; the tests check its Parquet tables (schema, row counts), its aggregates
against the same numbers computed in plain Python over ``run_one`` (the same simulator code,
without Spark), its report, and that re-running a cell on Spark reproduces identical rows.
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from groupcoord.lab.aggregate import (
    GROUP_COLUMNS,
    PERCENTILES,
    aggregate_columns,
    metrics_for,
)
from groupcoord.lab.runs import RUN_COLUMNS, flatten, run_one
from groupcoord.lab.schema import (
    DISTURBANCES_SCHEMA,
    EVENTS_SCHEMA,
    PARAM_FIELDS,
    RUNS_SCHEMA,
    VIOLATIONS_SCHEMA,
)
from groupcoord.lab.spec import PARAM_COLUMNS, RunParams, SweepSpec, expand, is_connect_protocol, parse_spec
from groupcoord.lab.sweep import SweepOutcome, result_tables, run_sweep, simulate_frame
from groupcoord.sim.protocols import protocol_labels

SPEC = """
name = "lab-test"
scenarios = ["crash", "bounce"]
protocols = ["all"]
sizes = [3, 5]
fault_rates = [0.0, 0.05]
seeds = 2
events = true
"""


@pytest.fixture(scope="module")
def spec() -> SweepSpec:
    return parse_spec(tomllib.loads(SPEC), "lab-test.toml")


@pytest.fixture(scope="module")
def sweep(spark: Any, spec: SweepSpec, tmp_path_factory: pytest.TempPathFactory) -> SweepOutcome:
    seen: list[int] = []
    out = run_sweep(spark, spec, tmp_path_factory.mktemp("lab") / "out",
                    progress=lambda p: seen.append(p.done))
    assert seen and seen[-1] == out.runs  # progress reached runs done == total
    return out


@pytest.fixture(scope="module")
def expected(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every run's result computed in this process, without Spark."""
    return [run_one(p) for p in expand(spec)]


def _read(spark: Any, path: Path) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(path)).collect()]


def _types(schema: Any) -> dict[str, Any]:
    """Column name -> type, an array's element nullability left out (Parquet does not keep
    it: an array read back may always hold nulls)."""
    from pyspark.sql.types import ArrayType

    return {f.name: ArrayType(f.dataType.elementType) if isinstance(f.dataType, ArrayType)
            else f.dataType for f in schema.fields}


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "wall_ms"}


def test_param_schema_matches_the_dataclass() -> None:
    assert tuple(n for n, _ in PARAM_FIELDS) == PARAM_COLUMNS
    assert tuple(f.name for f in RUNS_SCHEMA.fields) == RUN_COLUMNS


def test_tables_have_their_schema_and_rows(spark: Any, sweep: SweepOutcome,
                                           expected: list[dict[str, Any]]) -> None:
    runs = 2 * 2 * 2 * 2 * len(protocol_labels())
    assert sweep.runs == runs == len(expected)
    out = sweep.out_dir
    want_rows = {"runs": runs,
                 "disturbances": sum(len(flatten(e)["disturbances"]) for e in expected),
                 "events": sum(len(flatten(e)["events"]) for e in expected),
                 "violations": 0}
    schemas = {"runs": RUNS_SCHEMA, "disturbances": DISTURBANCES_SCHEMA,
               "events": EVENTS_SCHEMA, "violations": VIOLATIONS_SCHEMA}
    for name, rows in want_rows.items():
        path = out / name
        assert (path / "_SUCCESS").exists()
        df = spark.read.parquet(str(path))  # an empty table too: one file, its schema
        assert df.count() == rows, name
        assert _types(df.schema) == _types(schemas[name]), name
        if rows == 0:
            continue
        # partitioned by protocol and scenario, one file per partition
        dirs = sorted(p.relative_to(path).as_posix() for p in path.glob("protocol=*/scenario=*"))
        assert len(dirs) == len(protocol_labels()) * 2
        assert all(len(list((path / d).glob("*.parquet"))) == 1 for d in dirs)
    by_id = {r["run_id"]: r for r in _read(spark, out / "runs")}
    for e in expected:
        assert _strip(by_id[e["run_id"]]) == _strip(flatten(e)["runs"][0])


def _percentile(values: list[float], p: float) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    pos = p * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def test_aggregates_equal_plain_python(spark: Any, sweep: SweepOutcome,
                                       expected: list[dict[str, Any]]) -> None:
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for e in expected:
        cells[tuple(e[c] for c in GROUP_COLUMNS)].append(e)
    want = []
    for key, rows in sorted(cells.items(), key=lambda kv: str(kv[0])):
        ok = [r for r in rows if r["ok"]]
        row: dict[str, Any] = dict(zip(GROUP_COLUMNS, key, strict=True))
        row.update(runs=len(rows), ok_runs=len(ok), violations=len(rows) - len(ok),
                   converged_runs=sum(1 for r in ok if r["converged"]),
                   members=sum(r["members"] for r in rows) / len(rows))
        for metric, _ in metrics_for(RUN_COLUMNS):
            values = [float(r[metric]) for r in ok if r[metric] is not None]
            for name, p in PERCENTILES:
                row[f"{metric}_{name}"] = _percentile(values, p)
            row[f"{metric}_mean"] = sum(values) / len(values) if values else None
        want.append(row)
    got = _read(spark, sweep.out_dir / "aggregates")
    # the headline metrics, then the catalog's that the runs have (task downtime, time until
    # balanced: the Connect protocols' columns)
    assert list(got[0]) == aggregate_columns(metrics_for(RUN_COLUMNS))
    got.sort(key=lambda r: str(tuple(r[c] for c in GROUP_COLUMNS)))
    assert len(got) == len(want) == len(cells)
    for g, w in zip(got, want, strict=True):
        assert {c: g.pop(c) for c in GROUP_COLUMNS} == {c: w.pop(c) for c in GROUP_COLUMNS}
        # a metric no run of the cell has (task downtime of a consumer protocol) is null
        nulls = sorted(k for k, v in w.items() if v is None)
        assert sorted(k for k, v in g.items() if v is None) == nulls
        assert {k: v for k, v in g.items() if v is not None} == pytest.approx(
            {k: v for k, v in w.items() if v is not None}, rel=1e-9, abs=1e-9)
    assert sweep.aggregates and len(sweep.aggregates) == len(want)


def test_report_has_its_plots_and_table(sweep: SweepOutcome) -> None:
    assert sweep.report is not None
    index = sweep.report.read_text()
    pngs = sorted(p.name for p in sweep.report.parent.glob("*.png"))
    # a spec without grids: one question per kind of group (Connect, consumers), a figure per
    # scenario and fault rate of each (none where every metric is zero)
    assert 1 <= len(pngs) <= 2 * 2 * 2
    for name in pngs:
        assert f"src='{name}'" in index
        data = (sweep.report.parent / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000
    assert "Invariant violations: <span class=''>0</span>" in index
    assert index.index("<h2>How to read the tables</h2>") < index.index("class='verdict'") \
        < index.index("<h2>What the tables show</h2>") < index.index("<h2>Charts</h2>")
    summary = (sweep.report.parent / "summary.md").read_text()
    labels = set(protocol_labels())
    # the worst-seed table: one line per cell (protocol in its fourth column)
    table = [line for line in summary.splitlines()
             if line.startswith("| ") and len(line.split("|")) > 5
             and line.split("|")[4].strip() in labels]
    # one line per cell, except where the same-seed rule emptied a row: a seed on which one
    # protocol's run was left out (never caught up) is dropped from every protocol of its row,
    # so a row of 2 seeds with a left-out run on each has no seed left and no line
    def size_of(text: str) -> int:
        return int(text.split()[0])

    shown = [(ln.split("|")[1].strip(), size_of(ln.split("|")[2].strip()),
              ln.split("|")[4].strip()) for ln in table]
    # (a cell is also keyed by its workload and fault rate: counted per scenario, size, protocol)
    from collections import Counter

    shown_n = Counter(shown)
    cells = Counter((a["scenario"], int(a["size"]), a["protocol"]) for a in sweep.aggregates)
    assert shown_n and all(shown_n[k] <= cells[k] for k in shown_n)
    import pyarrow.dataset as pads

    runs = pads.dataset(str(sweep.out_dir / "runs"), partitioning="hive").to_table(
        columns=["protocol", "scenario", "size", "caught_up"]).to_pylist()
    left_out_rows = {(r["scenario"], int(r["size"]), is_connect_protocol(r["protocol"]))
                     for r in runs if r["caught_up"] is False}
    for (scenario, size, protocol), n in cells.items():
        if shown_n[(scenario, size, protocol)] < n:  # a row emptied by the same-seed rule
            assert (scenario, size, is_connect_protocol(protocol)) in left_out_rows


def test_rerunning_a_cell_reproduces_identical_rows(spark: Any, spec: SweepSpec,
                                                    sweep: SweepOutcome) -> None:
    runs = expand(spec)
    cell = runs[0].cell
    again = [r for r in runs if r.cell == cell]
    assert len(again) == spec.seeds
    bad = RunParams(**{**again[0].as_row(), "run_id": "bad", "protocol": "gossip"})
    results = simulate_frame(spark, [*again, bad], progress=None)
    try:
        tables = result_tables(results)
        rows = {r["run_id"]: r.asDict() for r in tables["runs"].collect()}
        violations = [r.asDict() for r in tables["violations"].collect()]
        events = sorted((r["run_id"], r["seq"], r["event"], r["detail"])
                        for r in tables["events"].where("run_id != 'bad'").collect())
    finally:
        results.unpersist()
    stored = {r["run_id"]: r for r in _read(spark, sweep.out_dir / "runs")}
    for p in again:
        assert _strip(rows[p.run_id]) == _strip(stored[p.run_id])
    ids = {p.run_id for p in again}
    stored_events = sorted((r["run_id"], r["seq"], r["event"], r["detail"])
                           for r in _read(spark, sweep.out_dir / "events") if r["run_id"] in ids)
    assert events == stored_events and events
    # a run that cannot start is surfaced as a violation with its reproducing command
    assert rows["bad"]["ok"] is False and rows["bad"]["invariant"] == "setup"
    (v,) = violations
    assert v["run_id"] == "bad" and "--protocol gossip" in v["command"]


def test_an_empty_table_reads_back_in_spark_with_its_schema(spark: Any, sweep: SweepOutcome,
                                                             tmp_path: Path) -> None:
    """The sweep kept every invariant, so ``violations/`` has no row: Spark still reads it,
    with the table's columns (not UNABLE_TO_INFER_SCHEMA), and so does the report's reader."""
    from groupcoord.lab.report import read_rows
    from groupcoord.lab.sweep import write_table

    assert sweep.violations == []
    df = spark.read.parquet(str(sweep.out_dir / "violations"))
    assert df.count() == 0
    assert _types(df.schema) == _types(VIOLATIONS_SCHEMA)
    assert read_rows(sweep.out_dir / "violations") == []
    # every table of the sweep's schema, written empty, reads back with its columns
    for name, schema in (("runs", RUNS_SCHEMA), ("disturbances", DISTURBANCES_SCHEMA),
                         ("events", EVENTS_SCHEMA)):
        write_table(spark.createDataFrame([], schema), tmp_path / name, ("run_id",))
        back = spark.read.parquet(str(tmp_path / name))
        assert back.count() == 0, name
        assert _types(back.schema) == _types(schema), name
