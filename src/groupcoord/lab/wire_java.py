"""The lab's Java members: Apache Kafka's Java client (kafka-clients) on the wire.

The jar is built on this machine from Apache Kafka's source by
``scripts/build_kafka_clients.py`` (see docs/clients.md), which writes a manifest
``~/.cache/groupcoord/java/kafka-clients.json`` (version, commit, the runtime classpath); this
module reads it (``GROUPCOORD_KAFKA_CLIENTS`` names another manifest), compiles the member
(``java/WireMember.java`` beside this module: the Java counterpart of
:mod:`groupcoord.lab.wire_member`, same command line and log) once into the cache, and gives the
command that runs one member. Where the jar is absent, :func:`java_client` raises
:class:`JavaClientMissing` whose message is the build command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "groupcoord" / "java"
MEMBER_SOURCE = Path(__file__).resolve().parent / "java" / "WireMember.java"
BUILD_COMMAND = "python3 scripts/build_kafka_clients.py"
#: A JVM per member on a shared 2-core machine: the C1 compiler only (no C2 compiling in the
#: background), the serial collector, a small heap; the client's code paths are the same.
#: With a class-data archive (:meth:`JavaClient.archive`, made by ``lab.wire.train_java``) the
#: classes a member used come mapped from it instead of parsed and verified again.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx192m", "-Xss512k",
               "-XX:CICompilerCount=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")


class JavaClientMissing(RuntimeError):
    """No kafka-clients build (or no ``java``/``javac``) on this machine; the message says how
    to build it."""


@dataclass(frozen=True)
class JavaClient:
    version: str
    commit: str
    classpath: tuple[str, ...]
    #: the compiled member (a jar: a class-data archive takes no directory on the classpath)
    member_jar: Path

    @property
    def describe(self) -> str:
        return f"Apache Kafka kafka-clients {self.version} (commit {self.commit[:12]}, built here)"

    def archive(self, protocol: str) -> Path:
        """The class-data archive (JDK 17's dynamic AppCDS) of a member of ``protocol``
        (``eager``, ``cooperative``, ``consumer``...): the classes such a member loads."""
        return self.member_jar.with_name(f"{protocol}.jsa")

    def command(self, protocol: str | None = None, train: Path | None = None) -> list[str]:
        """``java ... WireMember`` (the member's own arguments follow): with ``protocol``'s
        archive when there is one; ``train``: write the archive there when the JVM exits."""
        cp = os.pathsep.join([*self.classpath, str(self.member_jar)])
        cds: list[str] = []
        if train is not None:
            cds = [f"-XX:ArchiveClassesAtExit={train}"]
        elif protocol is not None and self.archive(protocol).exists():
            cds = [f"-XX:SharedArchiveFile={self.archive(protocol)}"]
        return ["java", *JVM_OPTIONS, *cds, "-cp", cp, "WireMember"]


def manifest_path() -> Path:
    return Path(os.environ.get("GROUPCOORD_KAFKA_CLIENTS", CACHE / "kafka-clients.json"))


def _slf4j_provider(classpath: list[str]) -> list[str]:
    """slf4j-simple of the same 2.0 line as the build's slf4j-api, when the machine has one, so
    the client's warnings reach the member's stderr log (without it the client logs nothing)."""
    m2 = Path.home() / ".m2" / "repository" / "org" / "slf4j" / "slf4j-simple"
    api = next((Path(p).name for p in classpath if Path(p).name.startswith("slf4j-api-")), "")
    line = api.removeprefix("slf4j-api-").removesuffix(".jar").rsplit(".", 1)[0]
    found = sorted(m2.glob(f"{line}.*/slf4j-simple-{line}.*.jar")) if line else []
    return [str(found[-1])] if found else []


def java_client() -> JavaClient:
    """The built client and the compiled member; raises :class:`JavaClientMissing`."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise JavaClientMissing(f"no {tool} on PATH (the Java members need a JDK 17)")
    path = manifest_path()
    if not path.exists():
        raise JavaClientMissing(f"no kafka-clients build at {path}: build it with "
                                f"`{BUILD_COMMAND}`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        classpath = [str(p) for p in manifest["classpath"]]
        version, commit = str(manifest["version"]), str(manifest["commit"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JavaClientMissing(f"{path} is not a kafka-clients manifest ({exc}): rebuild "
                                f"with `{BUILD_COMMAND}`") from None
    missing = [p for p in classpath if not Path(p).exists()]
    if missing:
        raise JavaClientMissing(f"{missing[0]} (of {path}) is gone: rebuild with "
                                f"`{BUILD_COMMAND}`")
    classpath += _slf4j_provider(classpath)
    # keyed by the member's source too: the cache is shared by every checkout on the machine,
    # and a checkout whose member differs must not run another checkout's build
    source = hashlib.sha256(MEMBER_SOURCE.read_bytes()).hexdigest()[:12]
    where = path.parent / "member" / f"{version}-{commit[:12]}-{source}"
    jar = where / "wire-member.jar"
    if not jar.exists() or jar.stat().st_mtime < MEMBER_SOURCE.stat().st_mtime:
        compile_jar(MEMBER_SOURCE, classpath, jar, "the Java member")
    return JavaClient(version, commit, tuple(classpath), jar)


def compile_jar(source: Path, classpath: Sequence[str], jar: Path, what: str) -> None:
    """Compile one Java ``source`` against ``classpath`` into ``jar``, in a fresh folder (the
    jar's own, cleared first: the class-data archives of an older build go with it); raises
    :class:`JavaClientMissing` with the compiler's last lines when a step fails."""
    where = jar.parent
    classes = where / "classes"
    shutil.rmtree(where, ignore_errors=True)
    classes.mkdir(parents=True)
    for cmd, step in (
            (["javac", "-nowarn", "-d", str(classes), "-cp", os.pathsep.join(classpath),
              str(source)], "compiling"),
            (["jar", "--create", "--file", str(jar), "-C", str(classes), "."], "jarring")):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            raise JavaClientMissing(f"{step} {what} failed: " + " / ".join(tail))
