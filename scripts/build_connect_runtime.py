#!/usr/bin/env python3
"""Build Apache Kafka Connect's group membership (connect/runtime's
``org.apache.kafka.connect.runtime.distributed`` worker-group classes) from an Apache Kafka
source tree with ``javac``/``jar``, against the kafka-clients build of
``scripts/build_kafka_clients.py``, for the lab's Connect workers on the wire
(``src/groupcoord/lab/java/ConnectWorker.java``, ``groupcoord.lab.wire_connect``).

    python3 scripts/build_connect_runtime.py [--git-dir /work/.mirror/apache+kafka/repo]
                                             [--clients ~/.cache/groupcoord/java/kafka-clients.json]

A plain Python script (standard library only). The sources are taken from the same commit as
the kafka-clients build (its manifest's ``commit``), so the membership and the client are one
Kafka version. Compiled from Kafka's source, unchanged (:data:`SOURCES`): the membership
(WorkerGroupMember, WorkerCoordinator, ConnectProtocol, IncrementalCooperativeConnectProtocol,
EagerAssignor, IncrementalCooperativeAssignor, ConnectAssignor, ExtendedAssignment,
ExtendedWorkerState, ConnectProtocolCompatibility, WorkerRebalanceListener) and the classes it
names that are small and self-contained (ClusterConfigState, ConfigBackingStore,
AppliedConnectorConfig, ConnectorTaskId, SessionKey, TargetState, RestartRequest and the status
classes it names; connect/api's classes come in through javac's source path as needed).
Stood in (``scripts/connect_runtime/standins``, compile-time shapes the membership names, whose
real classes pull in the whole worker - REST server, plugins, converters; :data:`STAND_INS`):
DistributedConfig (only the keys the membership reads), WorkerConfig (two label keys),
WorkerConfigTransformer (never called: no config providers), ConnectUtils (the four collection
helpers the assignor calls).

Outputs, in the clients manifest's folder: ``connect-runtime-membership-<version>.jar`` and
``connect-runtime.json`` (version, commit, the jar, what was compiled and what stood in).
Exit 0 on success, 1 with one line naming the step that failed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STANDINS = HERE / "connect_runtime" / "standins"
DEFAULT_GIT_DIR = "/work/.mirror/apache+kafka/repo"
DEFAULT_CLIENTS = Path.home() / ".cache" / "groupcoord" / "java" / "kafka-clients.json"
RUNTIME = "connect/runtime/src/main/java/org/apache/kafka/connect"
API = "connect/api/src/main/java"

#: Classes compiled from Kafka's source, unchanged (paths under connect/runtime's package root).
SOURCES = (
    "runtime/distributed/WorkerGroupMember", "runtime/distributed/WorkerCoordinator",
    "runtime/distributed/ConnectProtocol",
    "runtime/distributed/IncrementalCooperativeConnectProtocol",
    "runtime/distributed/EagerAssignor", "runtime/distributed/IncrementalCooperativeAssignor",
    "runtime/distributed/ConnectAssignor", "runtime/distributed/ExtendedAssignment",
    "runtime/distributed/ExtendedWorkerState", "runtime/distributed/ConnectProtocolCompatibility",
    "runtime/distributed/WorkerRebalanceListener",
    "storage/ClusterConfigState", "storage/ConfigBackingStore", "storage/AppliedConnectorConfig",
    "util/ConnectorTaskId", "runtime/SessionKey", "runtime/TargetState",
    "runtime/RestartRequest", "runtime/AbstractStatus", "runtime/ConnectorStatus",
    "runtime/TaskStatus",
)
#: What stands in, and why (written to the manifest).
STAND_INS = {
    "org.apache.kafka.connect.runtime.distributed.DistributedConfig":
        "an AbstractConfig with only the keys the membership reads (the real one extends "
        "WorkerConfig: REST, plugins, converters, internal topics)",
    "org.apache.kafka.connect.runtime.WorkerConfig": "its two metrics-context label keys",
    "org.apache.kafka.connect.runtime.WorkerConfigTransformer":
        "named by ClusterConfigState; never called (snapshots carry no config providers)",
    "org.apache.kafka.connect.util.ConnectUtils":
        "the four collection helpers IncrementalCooperativeAssignor calls (the real class "
        "names WorkerConfig and the connector API)",
    "org.apache.kafka.connect.runtime.distributed.DistributedHerder":
        "not compiled: lab/java/ConnectWorker.java follows its tick loop for the group "
        "(stop revoked work, start assigned work, rejoin after revocations, KIP-415's "
        "scheduled rebalance)",
}


class BuildError(RuntimeError):
    pass


def run(cmd: list[str], step: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(cmd, capture_output=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()[-5:]
        raise BuildError(f"{step} failed: " + " / ".join(tail))
    return proc


def build(git_dir: str, clients_manifest: Path) -> dict[str, object]:
    for tool in ("git", "javac", "jar"):
        if shutil.which(tool) is None:
            raise BuildError(f"no {tool} on PATH")
    try:
        clients = json.loads(clients_manifest.read_text(encoding="utf-8"))
        commit, version = str(clients["commit"]), str(clients["version"])
        classpath = [*clients["classpath"], *clients.get("compile_only", [])]
    except (OSError, ValueError, KeyError) as exc:
        raise BuildError(f"reading the kafka-clients manifest {clients_manifest}: {exc} "
                         "(build it with `python3 scripts/build_kafka_clients.py`)") from None
    out_dir = clients_manifest.parent
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="connect-runtime-") as tmp:
        work = Path(tmp)
        archive = run(["git", f"--git-dir={git_dir}", "archive", commit, "connect/runtime/src/main/java",
                       API], "extracting connect/ from the source tree")
        run(["tar", "-x", "-C", str(work)], "unpacking connect/", input=archive.stdout)
        classes = work / "classes"
        classes.mkdir()
        files = [str(work / RUNTIME / f"{s}.java") for s in SOURCES]
        run(["javac", "-nowarn", "-d", str(classes), "-cp", ":".join(classpath),
             "-sourcepath", f"{work / API}:{STANDINS}", *files], "compiling the membership")
        jar = out_dir / f"connect-runtime-membership-{version}.jar"
        run(["jar", "--create", "--file", str(jar), "-C", str(classes), "."], "jarring")
        compiled = sorted(name for name in (
            str(p.relative_to(classes)).removesuffix(".class").replace("/", ".")
            for p in classes.rglob("*.class") if "$" not in p.name) if name not in STAND_INS)
    manifest: dict[str, object] = {
        "version": version, "commit": commit, "source": f"{git_dir}@{commit}", "jar": str(jar),
        "clients": str(clients_manifest), "compiled": compiled, "stand_ins": STAND_INS,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.monotonic() - started, 1)}
    (out_dir / "connect-runtime.json").write_text(json.dumps(manifest, indent=2) + "\n",
                                                  encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--git-dir", default=DEFAULT_GIT_DIR)
    ap.add_argument("--clients", type=Path, default=DEFAULT_CLIENTS)
    a = ap.parse_args(argv)
    try:
        m = build(a.git_dir, a.clients)
    except BuildError as exc:
        print(f"build_connect_runtime: {exc}", file=sys.stderr)
        return 1
    print(f"built {m['jar']} ({len(m['compiled'])} classes, {m['build_seconds']} s)")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
