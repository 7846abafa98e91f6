"""What ``lab run`` ships to a cluster's executors (``lab.ship``, ``lab.probe``), without a
cluster: which distributions the archive holds, that it is cached, that the package zip
imports, and the probe's own verdicts. ``test_lab_cluster`` runs them on a real cluster."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("venv_pack")

from groupcoord.lab import probe, ship

in_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtualenv")


def test_executor_distributions_are_the_simulators_dependencies_only() -> None:
    names = {ship._canon(d.metadata["Name"]) for d in ship.executor_distributions()}
    assert {"kio", "google-re2", "msgpack", "pyarrow"} <= names
    # Worker-provided, driver-only and development packages stay out.
    for absent in ("pyspark", "py4j", "groupcoord", "matplotlib", "pytest", "mypy", "pandas"):
        assert absent not in names


def test_a_missing_dependency_is_named() -> None:
    with pytest.raises(ship.ShipError, match="no-such-dist-xyz"):
        ship.executor_distributions(("no-such-dist-xyz>=1",))


def test_not_a_virtualenv_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    with pytest.raises(ship.ShipError, match=r"not a virtualenv.*--archive"):
        ship.venv_prefix()


@in_venv
def test_venv_pack_refuses_this_editable_environment() -> None:
    """Why the package travels as a zip: venv-pack refuses an editable install (checked,
    not assumed), so the archive is packed from our own file list."""
    import venv_pack

    editable = any((d.read_text("direct_url.json") or "").find('"editable": true') >= 0
                   for d in md.distributions() if d.metadata["Name"] == "groupcoord")
    if not editable:
        pytest.skip("groupcoord is not installed editable here")
    with pytest.raises(venv_pack.VenvPackException, match="editable"):
        venv_pack.Env(sys.prefix)


@in_venv
def test_pack_is_cached_and_holds_no_editable_package(tmp_path: Path) -> None:
    archive, packed, _, names = ship.pack_environment(tmp_path)
    assert packed and archive.exists() and any(n.startswith("pyarrow==") for n in names)
    again, packed_again, _, _ = ship.pack_environment(tmp_path)
    assert again == archive and not packed_again
    with tarfile.open(archive) as tar:
        members = tar.getnames()
    assert "bin/python" in members and "pyvenv.cfg" in members
    assert any(m.endswith("site-packages/kio/__init__.py") for m in members)
    for bad in ("pyspark/", "groupcoord/", "__editable__", "pytest/", "matplotlib/"):
        assert not any(f"site-packages/{bad}" in m for m in members), bad


def test_package_zip_imports_the_simulator(tmp_path: Path) -> None:
    z = ship.package_zip(tmp_path)
    assert z == ship.package_zip(tmp_path)  # named by its contents
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
    assert "groupcoord/lab/runs.py" in names and not any(n.endswith(".pyc") for n in names)
    assert any(n.startswith("groupcoord/protocol/schemas/") for n in names)  # package data
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import groupcoord.sim.runner, "
            "groupcoord.protocol.extensions as e; import groupcoord; print(groupcoord.__file__)")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(z)], capture_output=True,
                         text=True, check=False, env={"PYTHONPATH": ":".join(sys.path[1:])})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(z))


def test_the_probe_reports_what_an_executor_cannot_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "PROBE_MODULES", ("json", "no_such_module_xyz"))
    fn = probe._probe_function()
    batch = next(fn(iter([])))
    import json

    info = json.loads(batch.to_pylist()[0]["probe"])
    assert "no_such_module_xyz" in info["errors"]
    text = probe._explain(info, "spark://h:7077")
    assert "cannot import no_such_module_xyz" in text and 'docs/lab.md "On a cluster"' in text


def test_reason_finds_the_cause_in_sparks_error() -> None:
    java = ("An error occurred while calling o42.collectToPython.\n"
            ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 ...\n"
            "Caused by: java.io.IOException: error=2, No such file or directory\n"
            "\tat java.base/java.lang.ProcessImpl.forkAndExec(Native Method)\n"
            "Caused by: java.io.IOException: Cannot run program \"./environment/bin/python\": "
            "error=2, No such file or directory\n")
    assert probe.reason(java).startswith('java.io.IOException: Cannot run program "./env')
    python = ("pyspark.errors.exceptions.captured.PythonException: An exception was thrown\n"
              "Traceback (most recent call last):\n  File \"worker.py\", line 1, in main\n"
              "ModuleNotFoundError: No module named 'pyarrow'\n\n"
              "\tat org.apache.spark.api.python.BasePythonRunner...\n")
    assert probe.reason(python) == "ModuleNotFoundError: No module named 'pyarrow'"


def test_reason_names_a_python_version_mismatch() -> None:
    text = ("pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] "
            "Python in worker has different version (3, 12) than that in driver 3.11, PySpark "
            "cannot run with different minor versions.\n\tat org.apache.spark.api.python...")
    assert probe.reason(text).startswith("[PYTHON_VERSION_MISMATCH] Python in worker has "
                                         "different version (3, 12)")
