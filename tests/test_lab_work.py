"""The lab and the work model: workload overrides in sweep specs, the application metrics in
the ``runs`` and ``disturbances`` rows (plain Python, no Spark)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from groupcoord.cli import main
from groupcoord.lab.runs import RUN_COLUMNS, build_scenario, flatten, repro_command, run_one
from groupcoord.lab.spec import PARAM_COLUMNS, RunParams, SpecError, expand, parse_spec
from groupcoord.sim.workload import IDLE, WORK_METRICS, Dist


def _params(**kw: object) -> RunParams:
    base: dict[str, object] = {name: None for name in PARAM_COLUMNS}
    base.update(run_id="r", sweep="t", protocol="classic:eager", scenario="bounce",
                workload="scenario", replicate=0, seed=7, events=False, checkpoint_every=2000,
                spec_ref="t")
    base.update(kw)
    return RunParams(**base)  # type: ignore[arg-type]


SPEC = """
name = "w"
protocols = ["classic:eager"]
scenarios = ["bounce"]
seeds = 1
[[workloads]]
name = "default"
[[workloads]]
name = "slow"
processing_ms = { dist = "exponential", mean = 4 }
max_poll_records = 100
[[workloads]]
name = "idle"
idle = true
"""


def test_workloads_carry_work_overrides_into_the_runs() -> None:
    runs = expand(parse_spec(tomllib.loads(SPEC), "w.toml"))
    by = {r.workload: r for r in runs}
    assert by["default"].work is None
    assert json.loads(by["slow"].work or "") == {
        "max_poll_records": 100, "processing_ms": {"dist": "exponential", "mean": 4}}
    assert by["idle"].work == '{"idle":true}'
    assert len({r.run_id for r in runs}) == 3  # the work tells the runs apart
    assert len({r.seed for r in runs}) == 1  # and the comparison stays paired
    slow = build_scenario(by["slow"])
    assert slow.workload.processing_ms == Dist("exponential", 4.0)
    assert slow.workload.max_poll_records == 100
    assert build_scenario(by["idle"]).workload is IDLE


@pytest.mark.parametrize(("text", "message"), [
    ("[[workloads]]\nname = 'x'\nprocessing_ms = -1", "workloads[0].processing_ms: expected a "
                                                      "number >= 0"),
    ("[[workloads]]\nname = 'x'\nmax_poll_records = 0", "workloads[0].max_poll_records"),
    ("[[workloads]]\nwarmup_ms = 5", "needs a name"),
    ("[[workloads]]\nname = 'x'\nwarm_up = 5", "unknown key(s) warm_up"),
])
def test_bad_work_parameters_name_the_field(text: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(tomllib.loads("scenarios = ['bounce']\n" + text), "s.toml")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cli_exits_2_on_a_bad_work_parameter(tmp_path: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("scenarios = ['bounce']\n[[workloads]]\nname = 'x'\n"
                   "processing_ms = { dist = 'zipf', mean = 1 }\n")
    assert main(["lab", "run", str(bad), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "workloads[0].processing_ms.dist: expected one of" in err


def test_application_metrics_in_the_rows() -> None:
    res = run_one(_params())
    assert res["ok"] and res["work_model"].startswith("50 rec/s")
    for k in WORK_METRICS:
        assert res[k] is not None, k
    assert res["records_processed"] > 0 and res["stall_ms"] >= 0
    tables = flatten({**res, "wall_ms": 1.0})
    assert list(tables["runs"][0]) == list(RUN_COLUMNS)
    bounce = tables["disturbances"][1]
    assert bounce["disturbance"] == "bounce" and bounce["records_processed"] > 0
    idle = run_one(_params(work='{"idle":true}'))
    assert idle["work_model"] == "idle"
    assert all(idle[k] is None for k in WORK_METRICS)
    assert all(flatten({**idle, "wall_ms": 1.0})["disturbances"][1][k] is None
               for k in WORK_METRICS)


def test_a_run_with_work_overrides_reruns_from_its_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    p = _params(work='{"processing_ms":2}')
    cmd = repro_command(p)
    assert "--work" in cmd
    import shlex

    argv = shlex.split(cmd)[1:]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["summary"]["workload"].startswith("50 rec/s, 2 ms/rec")
    assert got["steps"] == run_one(p)["steps"]
