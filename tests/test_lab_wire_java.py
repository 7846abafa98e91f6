"""The lab's Java members (``lab.wire_java``, ``lab/java/WireMember.java``): Apache Kafka's Java
client, built on this machine from Kafka's source by ``scripts/build_kafka_clients.py``, as the
consumers of ``groupcoord lab calibrate --client java``.

The tests that run the Java client skip where no build is present (as on CI): the skip reason
is :class:`JavaClientMissing`'s message, which names the build command. The end-to-end test
runs ``groupcoord serve`` and Java consumers in their own JVMs for the three protocols the
calibration compares, and checks that the members really were kafka-clients (their ``start``
lines carry the client's own version) and that what was measured is sane; it does not assert
the figures (they depend on the machine's load).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from groupcoord.lab.wire import WireError, WireWorkload, run_wire
from groupcoord.lab.wire_java import BUILD_COMMAND, JavaClient, JavaClientMissing, java_client
from groupcoord.sim.scenario import parse_scenario
from tests.test_lab_calibrate import SMALL  # the same small bounce both clients calibrate

GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]


def _java() -> JavaClient:
    try:
        return java_client()
    except JavaClientMissing as e:
        pytest.skip(str(e))


def test_without_a_build_the_java_client_is_missing_naming_the_build_command(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GROUPCOORD_KAFKA_CLIENTS", str(tmp_path / "kafka-clients.json"))
    with pytest.raises(JavaClientMissing, match=r"build_kafka_clients\.py"):
        java_client()
    assert "scripts/build_kafka_clients.py" in BUILD_COMMAND


def test_a_manifest_whose_jar_is_gone_asks_for_a_rebuild(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    manifest = tmp_path / "kafka-clients.json"
    monkeypatch.setenv("GROUPCOORD_KAFKA_CLIENTS", str(manifest))
    manifest.write_text(json.dumps({"version": "4.0.0", "commit": "abc",
                                    "classpath": [str(tmp_path / "kafka-clients-4.0.0.jar")]}))
    with pytest.raises(JavaClientMissing, match="is gone: rebuild"):
        java_client()
    manifest.write_text("{not json")
    with pytest.raises(JavaClientMissing, match="not a kafka-clients manifest"):
        java_client()


def test_the_java_client_is_for_consumers_and_an_unknown_client_is_refused() -> None:
    sc = parse_scenario(tomllib.loads(SMALL))
    with pytest.raises(WireError, match="no Java client"):
        run_wire(sc, "connect:cooperative", WireWorkload(), client="java")
    with pytest.raises(WireError, match="client 'jvm' is not one of librdkafka, java"):
        run_wire(sc, "classic:eager", WireWorkload(), client="jvm")


def test_calibrate_refuses_an_unknown_client_in_one_line() -> None:
    out = subprocess.run([*GROUPCOORD, "lab", "calibrate", "--client", "jvm"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--client" in out.stderr and "Traceback" not in out.stderr


def test_calibrate_with_java_refuses_connect_protocols_and_says_how_to_build(
        tmp_path: Path) -> None:
    out = subprocess.run([*GROUPCOORD, "lab", "calibrate", "--client", "java", "--protocol",
                          "connect:cooperative"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr == ("error: --client java: connect:cooperative has no Java client (the "
                          "Java members are consumers)\n")
    env = {**os.environ, "GROUPCOORD_KAFKA_CLIENTS": str(tmp_path / "none.json")}
    out = subprocess.run([*GROUPCOORD, "lab", "calibrate", "--client", "java"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and BUILD_COMMAND in out.stderr, out.stderr


def test_the_java_member_refuses_bad_arguments_in_one_line(tmp_path: Path) -> None:
    java = _java()
    base = [*java.command(), "--bootstrap", "127.0.0.1:1", "--group", "g", "--name", "c1",
            "--topics", "foo", "--log", str(tmp_path / "c1.jsonl")]
    for bad, says in ((["--protocol", "sticky"], "--protocol"), ([], "--protocol is required"),
                      (["--protocol", "eager", "--max-poll-records"], "needs a value")):
        out = subprocess.run([*base, *bad], capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, out.stderr
        assert says in out.stderr and out.stderr.strip().count("\n") == 0, out.stderr
        assert not (tmp_path / "c1.jsonl").exists()


def test_java_members_calibrate_a_small_case_end_to_end(tmp_path: Path) -> None:
    java = _java()
    scenario = tmp_path / "small.toml"
    scenario.write_text(SMALL)
    keep = tmp_path / "keep"
    protocols = ["classic:eager", "classic:cooperative", "consumer:uniform"]
    out = subprocess.run(
        [*GROUPCOORD, "lab", "calibrate", "--client", "java", "--scenario", str(scenario),
         *(a for p in protocols for a in ("--protocol", p)), "--heartbeat-interval-ms", "1000",
         "--session-timeout-ms", "10000", "--workload", "records_per_s=10",
         "--workload", "processing_ms=5", "--seeds", "1", "--tail-s", "1", "--json", "--quiet",
         "--keep", str(keep)],
        # three protocols of about 30 s each on an idle machine; generous for a loaded one
        capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout)
    assert [r["protocol"] for r in data["results"]] == protocols
    for r in data["results"]:
        assert r["error"] is None
        bounce = r["wire_windows"][1]
        assert bounce["disturbance"] == "bounce"
        assert bounce["converged"] is True
        assert 1_500 <= bounce["time_to_converge_ms"] <= 60_000
        assert bounce["records_processed"] > 0
        # every member process was Apache Kafka's Java client, the version built here
        logs = sorted((keep / r["protocol"].replace(":", "-") / "1" / "logs").glob("c*.jsonl"))
        assert {p.stem for p in logs} == {"c1", "c2", "c3"}
        for log in logs:
            starts = [json.loads(line) for line in log.read_text().splitlines()
                      if '"e": "start"' in line]
            assert len(starts) == (2 if log.stem == "c2" else 1)  # c2 bounced
            for s in starts:
                assert (s["client"], s["version"]) == ("kafka-clients", java.version)
        # the bounce went through the client: c2's close revoked what it owned (the Java
        # client's close runs the revocation callback), and c2 came back owning partitions
        events = [json.loads(line) for line in (logs[1]).read_text().splitlines()
                  if '"e": "rec"' not in line]
        kinds = [e["e"] for e in events]
        first_close = kinds.index("closed")
        assert any(e["e"] == "revoke" and e["parts"] for e in events[:first_close])
        assert any(e["e"] == "assign" and e["parts"] for e in events[first_close:])
