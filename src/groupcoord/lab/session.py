"""The Spark session of the lab: local mode by default, any master by argument.

Local masters (``local``, ``local[N]``, ``local[*]``) get the settings that work on a small
machine (see shared NOTES "PySpark on this machine"): loopback addresses, no UI, a modest
driver heap (1 g), few shuffle partitions, and the executors' Python set to the driver's own
interpreter, so they import the same installed ``groupcoord``. Other masters get what the
caller passes, and with ``ship`` (``lab.ship``) the executors' environment: the packed archive
through ``spark.archives``, run as ``./environment/bin/python``, and the package zip through
``addPyFile`` (``docs/lab.md`` "On a cluster").
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.lab.ship import ShippedEnv

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "1g"

#: The settings of the test suite's one session (NOTES: local[2], two partitions, no UI).
TEST_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def local_cores(master: str) -> int:
    """The worker threads of a local master (``local[*]``: the machine's CPUs)."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master)
    n = None if m is None else m.group(1)
    if n is None:
        return 1
    return (os.cpu_count() or 1) if n == "*" else int(n)


def under_spark_submit() -> bool:
    """True when this driver was launched by ``spark-submit`` (its JVM is already running and
    carries the master, memory and archives given on the command line)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def make_session(master: str | None = None, *, app_name: str = "groupcoord-lab",
                 driver_memory: str = DEFAULT_DRIVER_MEMORY,
                 conf: Mapping[str, str] | None = None,
                 ship: ShippedEnv | None = None) -> SparkSession:
    """Start (or reuse) a Spark session for the lab. ``master=None``: the one ``spark-submit``
    was given, else ``local[*]``. ``ship``: the environment archive and package zip the
    executors run (PySpark reads the executors' interpreter from ``PYSPARK_PYTHON`` when the
    context starts, so it is set for that moment)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    settings: dict[str, str] = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    if master is None and not under_spark_submit():
        master = DEFAULT_MASTER
    if master is not None:
        builder = builder.master(master)
    if not under_spark_submit():
        settings["spark.driver.memory"] = driver_memory  # too late once the JVM runs
    if master is not None and is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        cores = local_cores(master)
        settings.update({
            "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": str(max(cores, 1)),
            "spark.default.parallelism": str(max(cores, 1)),
        })
    if ship is not None:
        settings.update(ship.spark_conf())
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    saved = os.environ.get("PYSPARK_PYTHON")
    if ship is not None:
        os.environ["PYSPARK_PYTHON"] = ship.python
    try:
        spark = builder.getOrCreate()
    finally:
        if ship is not None:
            if saved is None:
                os.environ.pop("PYSPARK_PYTHON", None)
            else:
                os.environ["PYSPARK_PYTHON"] = saved
    if ship is not None:
        spark.sparkContext.addPyFile(str(ship.package_zip))
    spark.sparkContext.setLogLevel("WARN")
    log.info("spark %s on %s (default parallelism %d)", spark.version,
             spark.sparkContext.master, spark.sparkContext.defaultParallelism)
    return spark
