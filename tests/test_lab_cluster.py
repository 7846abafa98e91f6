"""The lab on a real Spark standalone cluster (docs/lab.md "On a cluster").

One master and one worker start once for the module (``spark_cluster``: pyspark's own jars,
127.0.0.1, ports picked free, a clean environment whose ``python3`` has no groupcoord). Then:

- ``groupcoord lab run --master spark://...`` packs the driver's virtualenv, ships it with the
  package zip, probes an executor and runs a small sweep whose rows equal the same runs
  computed in this process without Spark;
- the documented ``spark-submit`` path (``groupcoord lab pack`` prints the options) runs it too;
- an archive the executors cannot run stops before the sweep with one line naming the cause
  and docs/lab.md, no traceback.

Each command runs in a subprocess: it starts its own driver JVM (the test session's
``local[2]`` one cannot change master). The three drivers run side by side on the cluster (one
core each), since most of their time is JVM starts, executor launches and waits. Timeouts are
generous: a loaded 2-core machine takes about two minutes per command.
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
    # Three slots so the module's three drivers run side by side (each asks for one core
    # and a small executor): most of a lab command's time is JVM starts and waits, not CPU.
    c = start_cluster(tmp_path_factory.mktemp("spark-cluster"), cores=3, memory="3g")
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


#: Settings of every driver here: one core and a small executor each, no UI.
SMALL = ["--conf", "spark.ui.enabled=false", "--conf", "spark.cores.max=1",
         "--conf", "spark.executor.memory=768m"]


class Command:
    """A command started in the background; :meth:`result` waits for it."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._done: subprocess.CompletedProcess[str] | None = None

    def result(self) -> subprocess.CompletedProcess[str]:
        if self._done is None:
            try:
                out, err = self.proc.communicate(timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            self._done = subprocess.CompletedProcess(self.cmd, self.proc.returncode, out, err)
        return self._done


@pytest.fixture(scope="module")
def commands(cluster: SparkCluster, work: Path) -> Iterator[dict[str, Any]]:
    """``lab pack`` first (it packs the archive the others reuse), then three drivers at once
    on the cluster: ``lab run``, ``spark-submit`` with the options ``lab pack`` printed, and
    ``lab run`` with an archive the executors cannot run."""
    env = driver_env(work)
    pack = subprocess.run([*GROUPCOORD, "lab", "pack"], env=env, cwd=work, text=True,
                          capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False)
    options = next((ln.removeprefix("spark-submit options: ")
                    for ln in pack.stdout.splitlines()
                    if ln.startswith("spark-submit options: ")), "")
    import groupcoord.lab.submit as submit

    bogus = work / "not-a-venv"
    bogus.mkdir()
    (bogus / "README").write_text("no bin/python in here\n")
    archive = work / "not-a-venv.tar.gz"
    subprocess.run(["tar", "czf", str(archive), "-C", str(bogus), "README"], check=True)
    spec = str(work / "spec.toml")
    started = {
        "run": Command([*GROUPCOORD, "lab", "run", spec, "--master", cluster.master_url,
                        "--out", str(work / "out-run"), *SMALL], env, work),
        "submit": Command([str(spark_home() / "bin" / "spark-submit"), "--master",
                           cluster.master_url, *shlex.split(options), *SMALL, submit.__file__,
                           "run", spec, "--out", str(work / "out-submit")],
                          {**env, "SPARK_HOME": str(spark_home())}, work),
        "bad": Command([*GROUPCOORD, "lab", "run", spec, "--master", cluster.master_url,
                        "--out", str(work / "out-bad"), "--archive", str(archive), *SMALL],
                       env, work),
    }
    try:
        yield {"pack": pack, **started}
    finally:
        for c in started.values():
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.communicate()


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


def test_lab_pack_packs_the_executors_environment(commands: dict[str, Any],
                                                  work: Path) -> None:
    pack = commands["pack"]
    assert pack.returncode == 0, pack.stderr
    assert "packed in" in pack.stdout and "pyarrow==" in pack.stdout
    assert "--archives" in pack.stdout and "#environment" in pack.stdout
    assert len(list((work / "cache").glob("env-*.tar.gz"))) == 1


def test_lab_run_ships_the_environment_to_the_executors(commands: dict[str, Any],
                                                         cluster: SparkCluster,
                                                         work: Path) -> None:
    proc = commands["run"].result()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:] + cluster.log_tail()
    # The archive lab pack made is reused, and the executors ran its interpreter and the
    # shipped package zip, not this virtualenv (the worker's environment has neither).
    assert "executors' environment" in proc.stderr and "cached" in proc.stderr
    assert "/environment/bin/python" in proc.stderr
    assert ".zip/groupcoord/__init__.py" in proc.stderr
    assert "2 runs, 0 violations" in proc.stdout
    check_tables(work / "out-run")
    assert len(list((work / "cache").glob("env-*.tar.gz"))) == 1


def test_spark_submit_with_the_packed_environment(commands: dict[str, Any],
                                                  work: Path) -> None:
    proc = commands["submit"].result()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    # spark-submit's Python driver writes its stderr to spark-submit's stdout.
    assert "/environment/bin/python" in proc.stdout + proc.stderr
    assert "2 runs, 0 violations" in proc.stdout
    check_tables(work / "out-submit")


def test_an_archive_executors_cannot_run_stops_with_one_line(commands: dict[str, Any],
                                                             work: Path) -> None:
    proc = commands["bad"].result()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert 'Cannot run program "./environment/bin/python"' in errors[0]
    assert 'docs/lab.md "On a cluster"' in errors[0]
    assert "Traceback" not in proc.stderr and "\tat " not in proc.stderr
    assert not (work / "out-bad" / "runs").exists()  # stopped before the sweep
