#!/usr/bin/env python3
"""Build Apache Kafka's Java client (kafka-clients) from an Apache Kafka source tree with only
``javac``/``jar`` and the jars already on this machine, for the lab's Java members and the Java
conformance tests.

    python3 scripts/build_kafka_clients.py [--git-dir /work/.mirror/apache+kafka/repo [--rev HEAD]
                                           | --source KAFKA_CHECKOUT] [--out ~/.cache/groupcoord/java]

A plain Python script (standard library only, independent of ``groupcoord``): Kafka's own
build is Gradle with its plugins (shadow, the message generator task), which would need Maven
Central; this script does the four steps that build needs for the client and nothing else:

1. **Messages.** Kafka's ``generator`` module is compiled with ``javac`` (its Jackson
   dependencies are found on the machine) and run from a tiny main of ours
   (``scripts/kafka_clients/GenerateMessages.java``) with the arguments Kafka's
   ``processMessages`` task passes. Its command line uses argparse4j, which is not on the
   machine: ``scripts/kafka_clients/standins/`` holds compile-time stand-ins for the few
   argparse4j types ``MessageGenerator`` names (they throw if called; nothing calls them), and
   the generator's ``checker`` package (a schema-checker tool, argparse4j only) is left out.
2. **Telemetry protos.** kafka-clients' KIP-714 telemetry uses the generated classes of
   ``opentelemetry-proto`` (not on the machine). They are generated here: PyPI's
   ``opentelemetry-proto`` carries the OTLP schemas as compiled descriptors (it goes into a
   tools virtualenv under ``--out``, made with pip the first time); they are written as a
   descriptor set and Debian's ``protoc`` (``apt-get install protobuf-compiler
   libprotobuf-java``: pip's grpcio-tools carries a protoc without the Java generator) makes
   the Java classes from it, compiled and run against Debian's ``protobuf-java`` of the same
   version (3.21; Kafka 4.0 ships 3.25). The real jar relocates ``io.opentelemetry.proto`` and
   ``com.google.protobuf`` under ``org.apache.kafka.shaded``; here they keep their names, the
   generated classes in their own jar on the classpath.
3. **Compile** ``clients/src/main/java`` with the generated messages, against ``slf4j-api``,
   ``zstd-jni``, ``lz4-java``, ``snappy-java``, Jackson and ``jose4j`` (compile-only in Kafka,
   for OAUTHBEARER) found on the machine.
4. **Jar** the classes with the client's resources and ``kafka/kafka-version.properties``
   (``version`` and ``commitId``, as Kafka's ``createVersionFile`` writes them, so the client
   logs its real version and commit).

Outputs, in ``--out``: ``kafka-clients-<version>.jar``, ``opentelemetry-proto-java.jar``, and
``kafka-clients.json`` (the manifest the lab and the tests read: version, commit, source, the
runtime classpath, what was stood in). Jars are found in the virtualenvs' pyspark
(``site-packages/pyspark/jars``) and ``~/.m2/repository``; ``--jars DIR`` adds a directory.
Exit 0 on success, 1 with one line naming the step that failed.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STANDINS = HERE / "kafka_clients" / "standins"
GENERATE_MAIN = HERE / "kafka_clients" / "GenerateMessages.java"
DEFAULT_GIT_DIR = "/work/.mirror/apache+kafka/repo"
DEFAULT_OUT = Path.home() / ".cache" / "groupcoord" / "java"
TOOLS_PACKAGES = ("opentelemetry-proto==1.45.2",)
APT_HINT = "apt-get install protobuf-compiler libprotobuf-java"
#: The OTLP schemas kafka-clients' telemetry names (metrics, and what they import).
OTLP_MODULES = ("opentelemetry.proto.metrics.v1.metrics_pb2",)

#: artifact -> (Maven group path, major version wanted or None)
RUNTIME = {
    "slf4j-api": ("org/slf4j", None),
    "zstd-jni": ("com/github/luben", None),
    "lz4-java": ("org/lz4", None),
    "snappy-java": ("org/xerial/snappy", None),
}
COMPILE_ONLY = {"jose4j": ("org/bitbucket/b_c", None)}
JACKSON = {
    "jackson-databind": "com/fasterxml/jackson/core",
    "jackson-core": "com/fasterxml/jackson/core",
    "jackson-annotations": "com/fasterxml/jackson/core",
    "jackson-datatype-jdk8": "com/fasterxml/jackson/datatype",
}


class BuildError(Exception):
    pass


def run(cmd: list[str], step: str, **kw: object) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise BuildError(f"{step} failed ({' '.join(cmd[:3])} ...):\n" + "\n".join(tail))


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def jar_roots(extra: list[str]) -> list[Path]:
    roots = [Path(p) for p in extra]
    for pattern in ("/work/main/.venv/lib/python3*/site-packages/pyspark/jars",
                    str(HERE.parent / ".venv/lib/python3*/site-packages/pyspark/jars")):
        roots += [Path(p) for p in glob.glob(pattern)]
    return [r for r in roots if r.is_dir()]


def candidates(artifact: str, group: str, roots: list[Path]) -> dict[str, Path]:
    """Every version of ``artifact`` on the machine: ``version -> jar``."""
    found: dict[str, Path] = {}
    m2 = Path.home() / ".m2" / "repository" / group / artifact
    for jar in m2.glob(f"*/{artifact}-*.jar"):
        version = jar.parent.name
        if jar.name == f"{artifact}-{version}.jar":
            found.setdefault(version, jar)
    pat = re.compile(rf"^{re.escape(artifact)}-(\d[\w.\-]*)\.jar$")
    for root in roots:
        for jar in root.glob(f"{artifact}-*.jar"):
            m = pat.match(jar.name)
            if m and "shaded" not in jar.name:
                found.setdefault(m.group(1), jar)
    return found


def pick(artifact: str, group: str, major: str | None, roots: list[Path]) -> Path:
    found = candidates(artifact, group, roots)
    versions = [v for v in found if major is None or v.split(".")[0] == major]
    if not versions:
        raise BuildError(f"finding jars failed: no {artifact}"
                         f"{' ' + major + '.x' if major else ''} on this machine")
    return found[max(versions, key=_version_key)]


def pick_jackson(roots: list[Path]) -> list[Path]:
    """One Jackson release for all four artifacts (annotations are versioned major.minor)."""
    sets = {a: candidates(a, g, roots) for a, g in JACKSON.items()}
    for v in sorted(sets["jackson-databind"], key=_version_key, reverse=True):
        minor = ".".join(v.split(".")[:2])
        ann = sets["jackson-annotations"].get(v) or sets["jackson-annotations"].get(minor)
        if v in sets["jackson-core"] and v in sets["jackson-datatype-jdk8"] and ann:
            return [sets["jackson-databind"][v], sets["jackson-core"][v], ann,
                    sets["jackson-datatype-jdk8"][v]]
    raise BuildError("finding jars failed: no Jackson release with databind, core, "
                     "annotations and datatype-jdk8 all on this machine")


def check_source(ns: argparse.Namespace) -> None:
    if ns.source:
        if not (Path(ns.source) / "clients" / "src" / "main" / "java").is_dir():
            raise BuildError(f"reading the source failed: {ns.source} is not an Apache Kafka "
                             "checkout")
        return
    proc = subprocess.run(["git", "--git-dir", ns.git_dir, "rev-parse", "--verify",
                           f"{ns.rev}^{{commit}}"], capture_output=True, text=True)
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no such revision"
        raise BuildError(f"reading the source failed: {ns.git_dir} {ns.rev}: {why}")


def export_source(ns: argparse.Namespace, into: Path) -> tuple[Path, dict[str, str]]:
    """The source tree and what it is: version (gradle.properties), commit and date."""
    if ns.source:
        src = Path(ns.source).resolve()
        if not (src / "clients" / "src" / "main" / "java").is_dir():
            raise BuildError(f"reading the source failed: {src} is not an Apache Kafka checkout")
        try:
            commit = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"],
                                    capture_output=True, text=True, check=True).stdout.strip()
            date = subprocess.run(["git", "-C", str(src), "log", "-1", "--format=%cI"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        except (subprocess.CalledProcessError, FileNotFoundError):
            commit, date = "unknown", "unknown"
        origin = str(src)
    else:
        git = ["git", "--git-dir", ns.git_dir]
        try:
            commit = subprocess.run([*git, "rev-parse", ns.rev], capture_output=True, text=True,
                                    check=True).stdout.strip()
            date = subprocess.run([*git, "log", "-1", "--format=%cI", commit],
                                  capture_output=True, text=True, check=True).stdout.strip()
        except subprocess.CalledProcessError as exc:
            raise BuildError(f"reading the source failed: {ns.git_dir} {ns.rev}: "
                             f"{exc.stderr.strip()}") from exc
        src = into / "src"
        src.mkdir(parents=True)
        archive = subprocess.Popen([*git, "archive", commit, "clients/src/main", "generator/src/main",
                                    "gradle.properties"], stdout=subprocess.PIPE)
        run(["tar", "-x", "-C", str(src)], "extracting the source", stdin=archive.stdout)
        archive.wait()
        origin = f"{ns.git_dir}@{commit}"
    props = (src / "gradle.properties").read_text(encoding="utf-8")
    m = re.search(r"^version=(\S+)", props, re.M)
    if not m:
        raise BuildError("reading the source failed: no version= in gradle.properties")
    return src, {"version": m.group(1), "commit": commit, "commit_date": date, "source": origin}


def java_files(*dirs: Path) -> list[str]:
    return sorted(str(p) for d in dirs for p in d.rglob("*.java"))


def javac(out: Path, classpath: list[Path], sources: list[str], step: str,
          tmp: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    argfile = tmp / f"{out.name}.sources"
    argfile.write_text("\n".join(sources) + "\n", encoding="utf-8")
    cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "--release", "11", "-J-Xmx1g",
           "-d", str(out), "-cp", os.pathsep.join(str(p) for p in classpath), f"@{argfile}"]
    run(cmd, step)


def tools_python(out: Path) -> Path:
    """A virtualenv with the OTLP descriptors (opentelemetry-proto)."""
    venv = out / "tools-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        run([sys.executable, "-m", "venv", str(venv)], "making the tools virtualenv")
    probe = subprocess.run([str(py), "-c", "import opentelemetry.proto.metrics.v1.metrics_pb2"],
                           capture_output=True)
    if probe.returncode != 0:
        run([str(py), "-m", "pip", "install", "-q", *TOOLS_PACKAGES],
            "installing opentelemetry-proto")
    return py


DESCRIPTOR_SET = """
import importlib, sys
from google.protobuf import descriptor_pb2
seen, files = set(), descriptor_pb2.FileDescriptorSet()
def add(fd):
    if fd.name in seen:
        return
    seen.add(fd.name)
    for dep in fd.dependencies:
        add(dep)
    proto = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(proto)
    files.file.append(proto)
for name in sys.argv[2:]:
    add(importlib.import_module(name).DESCRIPTOR)
open(sys.argv[1], "wb").write(files.SerializeToString())
print("\\n".join(f.name for f in files.file))
"""


def protoc_and_runtime() -> tuple[str, Path]:
    """The system's protoc and the protobuf-java jar of its version (Debian's)."""
    protoc = shutil.which("protoc")
    if protoc is None:
        raise BuildError(f"finding protoc failed: none on PATH ({APT_HINT})")
    version = subprocess.run([protoc, "--version"], capture_output=True, text=True).stdout.split()[-1]
    for jar in (Path(f"/usr/share/java/protobuf-{version}.jar"),
                Path.home() / f".m2/repository/com/google/protobuf/protobuf-java/{version}"
                f"/protobuf-java-{version}.jar"):
        if jar.exists():
            return protoc, jar
    raise BuildError(f"finding protobuf-java {version} (protoc's version) failed ({APT_HINT})")


def build_otlp(out: Path, tmp: Path, protoc: str, protobuf_jar: Path) -> Path:
    py = tools_python(out)
    desc = tmp / "otlp.desc"
    proc = subprocess.run([str(py), "-c", DESCRIPTOR_SET, str(desc), *OTLP_MODULES],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError("writing the OTLP descriptor set failed: " + proc.stderr.strip()[-400:])
    names = [n for n in proc.stdout.split() if n.startswith("opentelemetry/")]
    gen = tmp / "otlp-java"
    gen.mkdir()
    run([protoc, f"--descriptor_set_in={desc}",
         f"--java_out={gen}", *names], "generating the OTLP Java classes (protoc)")
    classes = tmp / "otlp-classes"
    javac(classes, [protobuf_jar], java_files(gen), "compiling the OTLP Java classes", tmp)
    jar = out / "opentelemetry-proto-java.jar"
    run(["jar", "--create", "--file", str(jar), "-C", str(classes), "."], "jarring the OTLP classes")
    return jar


def build(ns: argparse.Namespace) -> dict[str, object]:
    check_source(ns)  # a bad source is said before anything is looked for or made
    out = Path(ns.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    roots = jar_roots(ns.jars)
    runtime = {a: pick(a, g, major, roots) for a, (g, major) in RUNTIME.items()}
    compile_only = [pick(a, g, major, roots) for a, (g, major) in COMPILE_ONLY.items()]
    jackson = pick_jackson(roots)
    protoc, protobuf_jar = protoc_and_runtime()
    runtime["protobuf-java"] = protobuf_jar
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kafka-clients-", dir=out) as tmpname:
        tmp = Path(tmpname)
        src, meta = export_source(ns, tmp)
        print(f"building kafka-clients {meta['version']} from {meta['source']}", flush=True)

        gen_classes = tmp / "generator-classes"
        generator_src = src / "generator" / "src" / "main" / "java"
        sources = [s for s in java_files(generator_src)
                   if "/org/apache/kafka/message/checker/" not in s]
        javac(gen_classes, jackson, sources + java_files(STANDINS) + [str(GENERATE_MAIN)],
              "compiling Kafka's message generator", tmp)
        messages = tmp / "generated" / "org" / "apache" / "kafka" / "common" / "message"
        run(["java", "-cp", os.pathsep.join([str(gen_classes), *map(str, jackson)]),
             "GenerateMessages", "org.apache.kafka.common.message", str(messages),
             str(src / "clients" / "src" / "main" / "resources" / "common" / "message"),
             "ApiMessageTypeGenerator", "MessageDataGenerator,JsonConverterGenerator"],
            "generating the messages")
        print("messages generated", flush=True)

        otlp_jar = build_otlp(out, tmp, protoc, protobuf_jar)
        print("OTLP classes generated", flush=True)

        classes = tmp / "classes"
        cp = [*runtime.values(), otlp_jar, *compile_only, *jackson]
        javac(classes, cp, java_files(src / "clients" / "src" / "main" / "java", tmp / "generated"),
              "compiling kafka-clients", tmp)
        resources = src / "clients" / "src" / "main" / "resources"
        for res in resources.rglob("*"):
            rel = res.relative_to(resources)
            if res.is_file() and not rel.as_posix().startswith("common/message/"):
                (classes / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(res, classes / rel)
        (classes / "kafka").mkdir(exist_ok=True)
        (classes / "kafka" / "kafka-version.properties").write_text(
            f"commitId={meta['commit'][:16]}\nversion={meta['version']}\n", encoding="ISO-8859-1")
        jar = out / f"kafka-clients-{meta['version']}.jar"
        run(["jar", "--create", "--file", str(jar), "-C", str(classes), "."],
            "jarring kafka-clients")

    manifest: dict[str, object] = {
        **meta,
        "jar": str(jar),
        "classpath": [str(jar), str(otlp_jar), *map(str, runtime.values())],
        "compile_only": [*map(str, compile_only), *map(str, jackson)],
        "stand_ins": {
            "argparse4j": "compile-time stand-ins for the types MessageGenerator's CLI names "
                          "(scripts/kafka_clients/standins); the generator runs from "
                          "GenerateMessages.java; its checker package is not built",
            "opentelemetry-proto": f"generated by {protoc} ({protobuf_jar.name}) from PyPI "
                                   f"{TOOLS_PACKAGES[0]}'s descriptors; not relocated",
            "shading": "none: io.opentelemetry.proto and com.google.protobuf keep their names",
        },
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.monotonic() - started, 1),
    }
    (out / "kafka-clients.json").write_text(json.dumps(manifest, indent=2) + "\n",
                                            encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="build_kafka_clients.py", description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--git-dir", default=DEFAULT_GIT_DIR,
                     help="a git directory of Apache Kafka (default: the fetch mirror)")
    src.add_argument("--source", help="an Apache Kafka checkout instead of a git directory")
    p.add_argument("--rev", default="HEAD", help="the revision of --git-dir to build")
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--jars", action="append", default=[], help="another directory of jars")
    ns = p.parse_args(argv)
    for tool in ("javac", "jar", "java", "git", "tar"):
        if shutil.which(tool) is None:
            print(f"build_kafka_clients: {tool} is not on PATH", file=sys.stderr)
            return 1
    try:
        manifest = build(ns)
    except BuildError as exc:
        print(f"build_kafka_clients: {exc}", file=sys.stderr)
        return 1
    print(f"built {manifest['jar']} (Kafka {manifest['version']}, commit {manifest['commit']}, "
          f"{manifest['commit_date']}) in {manifest['build_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
