"""Before a sweep: can an executor run the simulator? One tiny job says, or says why not.

A sweep whose executors cannot import ``groupcoord`` (or kio, google-re2, msgpack, pyarrow)
fails in every task, and what reaches the user is Spark's abort with a Python traceback from
an executor inside a Java one. :func:`check_executors` runs one ``mapInArrow`` task first (the
path the sweep takes) whose function imports the simulator's modules and runs a two-member
simulation, returning what failed as data. Its function is compiled from source in a namespace
that is no importable module, so cloudpickle ships it by value: the probe itself needs nothing
but pyspark and pyarrow on the executor. When the executor cannot even start (no
``./environment/bin/python``: an archive for another OS; a Python of another version; a
missing pyarrow), the job fails; :func:`reason` digs the one line that says why out of Spark's
error. Either way the caller gets a :class:`ProbeError` with one message naming the cause and
``docs/lab.md``. A job that no executor picks up (no worker, or none with free cores and
memory) is cancelled after ``timeout_s``.
"""

from __future__ import annotations

import json
import platform
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Modules a simulation imports on the executor (the sweep's function imports the rest).
PROBE_MODULES: tuple[str, ...] = ("pyarrow", "msgpack", "re2", "kio", "groupcoord",
                                  "groupcoord.lab.runs", "groupcoord.sim.runner")
DOC = 'docs/lab.md "On a cluster"'
DEFAULT_TIMEOUT_S = 180.0

_PROBE_SOURCE = '''
def probe(batches):
    import importlib, json, platform, sys
    import pyarrow as pa
    out = {"python": platform.python_version(), "machine": platform.machine(),
           "system": platform.system(), "executable": sys.executable, "errors": {}}
    for name in MODULES:
        try:
            importlib.import_module(name)
        except BaseException as e:
            out["errors"][name] = type(e).__name__ + ": " + str(e)
    if not out["errors"]:
        try:
            from groupcoord.sim.runner import simulate
            from groupcoord.sim.scenario import load_scenario
            res = simulate(load_scenario("crash", 1), 1, "consumer:uniform", max_steps=20000)
            out["simulated"] = res.steps
        except BaseException as e:
            out["errors"]["simulate"] = type(e).__name__ + ": " + str(e)
    try:
        import groupcoord
        out["groupcoord"] = groupcoord.__file__
    except BaseException:
        pass
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pylist([{"probe": json.dumps(out)}])
'''


class ProbeError(Exception):
    """The executors cannot run the simulator; the message is the one line to show."""


@dataclass(slots=True, frozen=True)
class ExecutorInfo:
    python: str
    machine: str
    system: str
    executable: str
    groupcoord: str | None


def _probe_function() -> Any:
    namespace: dict[str, Any] = {"__name__": "groupcoord_lab_probe", "MODULES": PROBE_MODULES}
    exec(compile(_PROBE_SOURCE, "<groupcoord-lab-probe>", "exec"), namespace)
    return namespace["probe"]


#: Exception lines that only wrap the cause (skipped when looking for it).
_WRAPPERS = re.compile(r"(Py4JJavaError|SparkException|PythonException|Job aborted|"
                       r"An error occurred while calling|Traceback|Caused by: org\.apache\.spark"
                       r"|SparkRuntimeException)")
_CAUSE = re.compile(r"^\s*(?:Caused by: )?([A-Za-z_][\w.]*(?:Error|Exception)|"
                    r"\[[A-Z_]+\])[:\s](.+)$")


def reason(text: str) -> str:
    """The line of a Spark job's failure that names its cause: the Python exception raised on
    the executor, or the Java one that kept the worker from starting, else the first line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:  # PySpark's own error classes name the problem precisely
        m = re.search(r"\[(PYTHON_VERSION_MISMATCH|PYTHON_[A-Z_]+)\]\s*(.+)", ln)
        if m:
            return f"[{m.group(1)}] {m.group(2)}"
    python_causes = [ln for ln in lines if _CAUSE.match(ln) and not _WRAPPERS.search(ln)
                     and not ln.startswith(("at ", "java.lang.Thread"))]
    for ln in python_causes:  # the executor's interpreter did not start
        if "Cannot run program" in ln:
            return re.sub(r"^\s*(Caused by: )?", "", ln)
    # The last exception line of a Python traceback is its cause.
    py = [ln for ln in python_causes if not ln.startswith(("java.", "org.", "scala.", "py4j."))]
    if py:
        return py[-1]
    if python_causes:
        return re.sub(r"^\s*Caused by: ", "", python_causes[-1])
    return lines[0] if lines else "unknown error"


def _explain(info: dict[str, Any], master: str) -> str:
    errs = info.get("errors") or {}
    first = next(iter(errs.items()))
    where = (f"executor Python {info.get('python')} on {info.get('system')}/"
             f"{info.get('machine')} ({info.get('executable')})")
    hint = ""
    if info.get("python", "").rsplit(".", 1)[0] != platform.python_version().rsplit(".", 1)[0]:
        hint = f"; the driver runs Python {platform.python_version()}"
    elif info.get("machine") != platform.machine() or info.get("system") != platform.system():
        hint = f"; the driver runs on {platform.system()}/{platform.machine()}"
    return (f"the executors of {master} cannot run the simulator: cannot import "
            f"{first[0]} ({first[1]}) in the {where}{hint}. Ship an environment they can run: "
            f"see {DOC}")


def check_executors(spark: SparkSession, timeout_s: float = DEFAULT_TIMEOUT_S) -> ExecutorInfo:
    """Run the probe on one executor; :class:`ProbeError` with one line when it cannot run the
    simulator, did not start, or no executor took it within ``timeout_s``."""
    from pyspark.sql.types import StringType, StructField, StructType

    sc = spark.sparkContext
    master = str(sc.master)
    schema = StructType([StructField("probe", StringType())])
    frame = spark.range(1, numPartitions=1).mapInArrow(_probe_function(), schema)
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["rows"] = frame.collect()
        except BaseException as e:  # reported on the driver thread below
            result["error"] = e

    sc.setLogLevel("OFF")  # the executors' tracebacks of a failing probe are not for the user
    thread = threading.Thread(target=run, name="lab-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        sc.cancelAllJobs()
        thread.join(5)
        raise ProbeError(
            f"no executor of {master} ran the probe job within {timeout_s:.0f} s: is a "
            f"worker registered with the master, with free cores and memory for an "
            f"executor (spark.executor.memory)? See {DOC}")
    if "error" in result:
        why = reason(str(result["error"]))
        if "Cannot run program" in why:
            why += (" (the executors' Python: is the archive a virtualenv packed for the nodes' "
                    "OS and CPU, and does the Python it links to exist there? --python-prefix "
                    "names where it lives)")
        raise ProbeError(f"the executors of {master} cannot run the simulator: {why}. "
                         f"See {DOC}")
    info = json.loads(result["rows"][0]["probe"])
    if info.get("errors"):
        raise ProbeError(_explain(info, master))
    sc.setLogLevel("WARN")
    return ExecutorInfo(info["python"], info["machine"], info["system"], info["executable"],
                        info.get("groupcoord"))


def describe(info: ExecutorInfo) -> str:
    return (f"executors run Python {info.python} on {info.system}/{info.machine} "
            f"({info.executable}), groupcoord from {info.groupcoord}")


__all__ = ["PROBE_MODULES", "ExecutorInfo", "ProbeError", "check_executors", "describe",
           "reason"]
