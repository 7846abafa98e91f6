"""A Spark standalone cluster on this machine for tests: one master and one worker, started
from pyspark's own jars (``$SPARK_HOME/bin/spark-class ...deploy.master.Master`` and
``...deploy.worker.Worker``), bound to 127.0.0.1 on ports picked free, with their logs, work
and scratch directories under a temporary directory.

The daemons run in a clean environment: no ``PYTHONPATH``, no ``PYSPARK_PYTHON``, no
virtualenv on ``PATH``. So the executors see what a fresh node would see (the ``python3`` on
``PATH``, without groupcoord), and a sweep that works through this cluster works because
``lab run`` shipped what the executors need, not because they found the driver's virtualenv.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: How long the master and the worker may take to come up on a loaded 2-core machine.
START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def clean_env(base: Path) -> dict[str, str]:
    """The environment of a node that has Java and a Python, and nothing of the driver's."""
    venv_bins = {str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)}
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in venv_bins]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_", "PYTHON", "VIRTUAL_ENV"))}
    env.update({
        "PATH": os.pathsep.join(path), "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_WORKER_DIR": str(base / "work"), "SPARK_LOCAL_DIRS": str(base / "local"),
        "SPARK_NO_DAEMONIZE": "1",
    })
    return env


@dataclass
class SparkCluster:
    base: Path
    master_url: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)

    def log_tail(self, chars: int = 4000) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-chars:]}"
                         for p in self.logs if p.exists())


def _wait_for(cluster: SparkCluster, log: Path, proc: subprocess.Popen[bytes], text: str,
              deadline: float) -> None:
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    cluster.stop()
    raise RuntimeError(f"spark: {text!r} not seen in {log}\n{cluster.log_tail()}")


def start_cluster(base: Path, cores: int = 2, memory: str = "2g") -> SparkCluster:
    """A master and one worker with ``cores`` and ``memory``; returns once the worker is
    registered with the master."""
    for d in ("logs", "work", "local"):
        (base / d).mkdir(parents=True, exist_ok=True)
    env = clean_env(base)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port = free_port()
    cluster = SparkCluster(base, f"spark://127.0.0.1:{port}")
    deadline = time.monotonic() + START_TIMEOUT_S

    def launch(name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = base / "logs" / f"{name}.out"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, cwd=base,
                                    start_new_session=True)
        cluster.procs.append(proc)
        cluster.logs.append(log)
        return proc, log

    master, mlog = launch("master", ["org.apache.spark.deploy.master.Master",
                                     "--host", "127.0.0.1", "--port", str(port),
                                     "--webui-port", str(free_port())])
    _wait_for(cluster, mlog, master, "I have been elected leader", deadline)
    worker, wlog = launch("worker", ["org.apache.spark.deploy.worker.Worker",
                                     "--host", "127.0.0.1", "--port", str(free_port()),
                                     "--webui-port", str(free_port()), "--cores", str(cores),
                                     "--memory", memory, "--work-dir", str(base / "work"),
                                     cluster.master_url])
    _wait_for(cluster, wlog, worker, "Successfully registered with master", deadline)
    return cluster
