"""The lab on a real Spark standalone cluster (docs/lab.md "On a cluster").

One master and one worker start once for the module (``spark_cluster``: pyspark's own jars,
127.0.0.1, ports picked free, a clean environment whose ``python3`` has no groupcoord). Then:

- ``groupcoord lab run --master spark://...`` packs the driver's virtualenv, ships it with the
  package zip, probes an executor and runs a small sweep whose rows equal the same runs
  computed in this process without Spark;
- the documented ``spark-submit`` path (``groupcoord lab pack`` prints the options) runs it too;
- an archive the executors cannot run stops before the sweep with one line naming the cause
  and docs/lab.md, no traceback.

Each ``lab`` command runs in a subprocess: it starts its own driver JVM (the test session's
``local[2]`` one cannot change master). Timeouts are generous: a loaded 2-core machine takes
about a minute per command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("venv_pack")

from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import expand, parse_spec
from tests.spark_cluster import SparkCluster, spark_home, start_cluster

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                       reason="Spark needs Java 17"),
    pytest.mark.skipif(sys.prefix == sys.base_prefix,
                       reason="lab run packs the driver's virtualenv: tests must run in one"),
]

GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]
#: One lab command on a loaded machine: driver JVM, executor launch, probe, sweep, report.
COMMAND_TIMEOUT_S = 600

SPEC = """
name = "cluster-test"
scenarios = ["crash"]
protocols = ["consumer:uniform", "classic:cooperative"]
sizes = [3]
seeds = 1
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lab-cluster")
    (d / "spec.toml").write_text(SPEC)
    return d


def driver_env(work: Path) -> dict[str, str]:
    """The driver's environment: this one, without anything telling executors which Python
    to run (the lab decides), loopback addresses, and a cache of packed archives of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "GROUPCOORD_LAB_CACHE": str(work / "cache"),
                "PYTHONUNBUFFERED": "1"})
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S, check=False)


def expected_rows() -> dict[str, dict[str, Any]]:
    spec = parse_spec(tomllib.loads(SPEC), "spec.toml")
    return {r["run_id"]: r for r in (run_one(p) for p in expand(spec))}


def check_tables(out: Path) -> None:
    import pyarrow.dataset as ds

    rows = ds.dataset(str(out / "runs"), format="parquet", partitioning="hive").to_table()
    got = {r["run_id"]: r for r in rows.to_pylist()}
    want = expected_rows()
    assert set(got) == set(want)
    for run_id, row in want.items():
        for col in ("seed", "ok", "converged", "convergence_ms", "resources_moved",
                    "resource_downtime_ms", "epoch_bumps", "messages", "steps", "sim_time_ms"):
            assert got[run_id][col] == row[col], (run_id, col)
    assert (out / "report" / "index.html").exists()


def test_lab_run_ships_the_environment_to_the_executors(cluster: SparkCluster,
                                                         work: Path) -> None:
    out = work / "out-run"
    proc = run([*GROUPCOORD, "lab", "run", str(work / "spec.toml"), "--master",
                cluster.master_url, "--out", str(out), "--conf", "spark.ui.enabled=false"],
               driver_env(work), work)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:] + cluster.log_tail()
    # The executors ran the packed environment's interpreter and the shipped package zip,
    # not this virtualenv (the worker's environment has neither).
    assert "executors' environment" in proc.stderr and "packed" in proc.stderr
    assert "/environment/bin/python" in proc.stderr
    assert ".zip/groupcoord/__init__.py" in proc.stderr
    assert "2 runs, 0 violations" in proc.stdout
    check_tables(out)
    archives = list((work / "cache").glob("env-*.tar.gz"))
    assert len(archives) == 1


def test_spark_submit_with_the_packed_environment(cluster: SparkCluster, work: Path) -> None:
    env = driver_env(work)
    pack = run([*GROUPCOORD, "lab", "pack"], env, work)
    assert pack.returncode == 0, pack.stderr
    options = next(ln for ln in pack.stdout.splitlines()
                   if ln.startswith("spark-submit options: "))
    import groupcoord.lab.submit as submit

    out = work / "out-submit"
    env["SPARK_HOME"] = str(spark_home())
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url,
           *shlex.split(options.removeprefix("spark-submit options: ")),
           "--conf", "spark.ui.enabled=false", submit.__file__, "run", str(work / "spec.toml"),
           "--out", str(out)]
    proc = run(cmd, env, work)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    # spark-submit's Python driver writes its stderr to spark-submit's stdout.
    assert "/environment/bin/python" in proc.stdout + proc.stderr
    assert "2 runs, 0 violations" in proc.stdout
    check_tables(out)


def test_an_archive_executors_cannot_run_stops_with_one_line(cluster: SparkCluster,
                                                             work: Path) -> None:
    bogus = work / "not-a-venv"
    bogus.mkdir()
    (bogus / "README").write_text("no bin/python in here\n")
    archive = work / "not-a-venv.tar.gz"
    subprocess.run(["tar", "czf", str(archive), "-C", str(bogus), "README"], check=True)
    out = work / "out-bad"
    proc = run([*GROUPCOORD, "lab", "run", str(work / "spec.toml"), "--master",
                cluster.master_url, "--out", str(out), "--archive", str(archive),
                "--conf", "spark.ui.enabled=false"], driver_env(work), work)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert 'Cannot run program "./environment/bin/python"' in errors[0]
    assert 'docs/lab.md "On a cluster"' in errors[0]
    assert "Traceback" not in proc.stderr and "\tat " not in proc.stderr
    assert not (out / "runs").exists()  # stopped before the sweep
