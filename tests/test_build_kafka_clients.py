"""``scripts/build_kafka_clients.py``: Apache Kafka's Java client built from source with the
jars on the machine (docs/clients.md). The jar-picking is checked on a made-up Maven tree; a
bad source is one line and exit 1; and where a build is present (not on CI: the test skips,
naming the build command), the jar holds what the build must put there: the generated message
classes, the client's version file with the commit, and the OTLP classes beside it."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "build_kafka_clients.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_kafka_clients", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _jar(root: Path, group: str, artifact: str, version: str) -> Path:
    p = root / group / artifact / version / f"{artifact}-{version}.jar"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"PK")
    return p


def test_the_newest_jar_of_the_wanted_major_is_picked(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    build = _script()
    monkeypatch.setenv("HOME", str(tmp_path))
    m2 = tmp_path / ".m2" / "repository"
    for v in ("3.25.5", "4.29.3", "4.32.1", "4.9.0"):
        _jar(m2, "com/google/protobuf", "protobuf-java", v)
    spark = tmp_path / "jars"
    spark.mkdir()
    (spark / "lz4-java-1.11.0.jar").write_bytes(b"PK")
    (spark / "orc-core-2.3.0-shaded-protobuf.jar").write_bytes(b"PK")
    picked = build.pick("protobuf-java", "com/google/protobuf", "4", [spark])
    assert picked.name == "protobuf-java-4.32.1.jar"  # numeric order: 4.32 > 4.9
    assert build.pick("protobuf-java", "com/google/protobuf", "3", []).name == \
        "protobuf-java-3.25.5.jar"
    assert build.pick("lz4-java", "org/lz4", None, [spark]).name == "lz4-java-1.11.0.jar"
    with pytest.raises(build.BuildError, match="no snappy-java on this machine"):
        build.pick("snappy-java", "org/xerial/snappy", None, [spark])


def test_jackson_is_one_release_that_has_all_four_artifacts(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    build = _script()
    monkeypatch.setenv("HOME", str(tmp_path))
    m2 = tmp_path / ".m2" / "repository"
    core, dt = "com/fasterxml/jackson/core", "com/fasterxml/jackson/datatype"
    for v in ("2.21.2", "2.22.3"):
        _jar(m2, core, "jackson-databind", v)
        _jar(m2, core, "jackson-core", v)
    _jar(m2, core, "jackson-annotations", "2.21")  # versioned major.minor
    _jar(m2, core, "jackson-annotations", "2.22")
    _jar(m2, dt, "jackson-datatype-jdk8", "2.21.2")  # no jdk8 module of 2.22.3
    names = [p.name for p in build.pick_jackson([])]
    assert names == ["jackson-databind-2.21.2.jar", "jackson-core-2.21.2.jar",
                     "jackson-annotations-2.21.jar", "jackson-datatype-jdk8-2.21.2.jar"]


def test_a_source_that_is_not_kafka_is_one_line_and_exit_1(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    build = _script()
    rc = build.main(["--source", str(tmp_path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and "is not an Apache Kafka checkout" in err
    rc = build.main(["--git-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1 and "reading the source failed" in err


def test_the_built_jar_has_the_generated_messages_and_its_version() -> None:
    from groupcoord.lab.wire_java import BUILD_COMMAND, manifest_path

    path = manifest_path()
    if not path.exists():
        pytest.skip(f"no kafka-clients build: build it with `{BUILD_COMMAND}`")
    manifest = json.loads(path.read_text())
    jar = Path(manifest["jar"])
    assert jar.name == f"kafka-clients-{manifest['version']}.jar"
    assert jar.exists() and str(jar) == manifest["classpath"][0]
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        version = z.read("kafka/kafka-version.properties").decode("iso-8859-1")
    # what the message generator made from the schemas, and the client built on it
    for cls in ("org/apache/kafka/common/message/ConsumerGroupHeartbeatRequestData.class",
                "org/apache/kafka/common/message/ApiMessageType.class",
                "org/apache/kafka/clients/consumer/KafkaConsumer.class"):
        assert cls in names, cls
    assert not any(n.startswith("net/sourceforge/argparse4j") for n in names)
    assert f"version={manifest['version']}" in version
    assert f"commitId={manifest['commit'][:16]}" in version
    otlp = next(Path(p) for p in manifest["classpath"] if "opentelemetry" in p)
    with zipfile.ZipFile(otlp) as z:
        assert "io/opentelemetry/proto/metrics/v1/MetricsData.class" in z.namelist()
