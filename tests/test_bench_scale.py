"""``bench scale`` and its load generator (benchmarks/_loadgen.py).

The load generator writes ConsumerGroupHeartbeat requests and reads their responses by hand:
the bytes are checked against kio (the codec the server uses) both ways. A tiny ``bench scale``
run keeps the benchmark working (its shape and its bookkeeping, never its speed: speed is
measured by the benchmarks, never by tests).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from benchmarks._harness import Result
from benchmarks._loadgen import encode_heartbeat, parse_describe_response, parse_heartbeat_response
from benchmarks._plot_scale import main as plot_main
from benchmarks.scale import run

from groupcoord.coordinator.modern.consumer.messages import (
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    TopicPartitions,
)
from groupcoord.protocol import fast
from groupcoord.protocol.codec import decode_request_body, parse_request_header, request_class
from groupcoord.protocol.versions import ApiKey


def _decode(frame: bytearray) -> object:
    buf = bytes(frame[4:])
    header = parse_request_header(buf, flexible=True)
    assert (header.api_key, header.api_version, header.client_id) == (68, 1, "loadgen")
    cls = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1)
    assert cls is not None
    return decode_request_body(cls, buf, header.size)


def test_join_request_decodes_as_kio_reads_it() -> None:
    r: object = _decode(encode_heartbeat("g", "m-1", 0, rebalance_timeout_ms=300_000,
                                         topics=["a", "b"], owned={}))
    assert r.group_id == "g" and r.member_id == "m-1" and r.member_epoch == 0  # type: ignore[attr-defined]
    assert list(r.subscribed_topic_names) == ["a", "b"]  # type: ignore[attr-defined]
    assert r.topic_partitions == ()  # type: ignore[attr-defined]
    assert r.instance_id is None and r.server_assignor is None  # type: ignore[attr-defined]


def test_ack_and_steady_requests_decode_as_kio_reads_them() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    r: object = _decode(encode_heartbeat("g", "m", 7, owned={t2: (3,), t1: (0, 200)}))
    got = {tp.topic_id: tuple(tp.partitions) for tp in r.topic_partitions}  # type: ignore[attr-defined]
    assert got == {t1: (0, 200), t2: (3,)} and r.member_epoch == 7  # type: ignore[attr-defined]
    steady: object = _decode(encode_heartbeat("g", "m", 7))
    assert steady.topic_partitions is None and steady.subscribed_topic_names is None  # type: ignore[attr-defined]
    leave: object = _decode(encode_heartbeat("g", "m", -1))
    assert leave.member_epoch == -1  # type: ignore[attr-defined]


def test_response_parser_reads_the_servers_encoding() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    body = fast.consumer_group_heartbeat_response(0, None, "m", 9, 5000,
                                                  [(t1, [4, 1]), (t2, []), (t2, [7])])
    frame = (42).to_bytes(4, "big") + b"\x00" + body
    r = parse_heartbeat_response(frame)
    assert (r.correlation_id, r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (42, 0, 9, 5000)
    assert r.assignment == {t1: (1, 4), t2: (7,)}
    err = fast.consumer_group_heartbeat_response(25, "Unknown member.", None, 0, 0, None)
    r = parse_heartbeat_response((1).to_bytes(4, "big") + b"\x00" + err)
    assert r.error_code == 25 and r.assignment is None


def test_describe_parser_reads_the_servers_encoding() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    a = DescribedAssignment((TopicPartitions(t1, (0, 5)), TopicPartitions(t2, ())))
    b = DescribedAssignment((TopicPartitions(t2, (1,)),))
    groups = [DescribedGroup("missing", 69, "Group missing not found."),
              DescribedGroup("g", group_state="Stable", group_epoch=4, assignment_epoch=3,
                             assignor_name="uniform", members=(
                  DescribedMember("m-1", "i-1", None, 3, "c", "/h", ("x", "y"), None, a, a),
                  DescribedMember("m-2", None, "r", 2, "c", "/h", (), "x.*", b,
                                  DescribedAssignment(()), member_type=0)))]
    for version in (0, 1):
        body = fast.consumer_group_describe_response(version, groups, [0, 0],
                                                     fast.DescribedTopics(lambda _: "t"))
        corr, got = parse_describe_response((7).to_bytes(4, "big") + b"\x00" + body, version)
        assert corr == 7 and [g.error_code for g in got] == [69, 0]
        g = got[1]
        assert (g.group_id, g.group_epoch, g.assignment_epoch) == ("g", 4, 3)
        assert [(m.member_id, m.member_epoch) for m in g.members] == [("m-1", 3), ("m-2", 2)]
        assert g.members[0].assignment == g.members[0].target == {(t1, 0), (t1, 5)}
        assert g.members[1].assignment == {(t2, 1)} and g.members[1].target == frozenset()


def test_tiny_scale_run_shape_and_plot(tmp_path: Path) -> None:
    results = run(quick=True, members="6", partitions="12", topics="1,3", waves="1",
                  steady_s="0.5")
    data = tmp_path / "scale.json"
    data.write_text(json.dumps([r.as_json() for r in results]))
    assert plot_main([str(data), str(tmp_path / "scale.png")]) == 0
    assert (tmp_path / "scale.png").stat().st_size > 0
    assert plot_main([str(tmp_path / "missing.json"), str(tmp_path / "x.png")]) == 2
    assert results and all(isinstance(r, Result) for r in results)
    names = {r.name for r in results}
    assert len(names) == len(results)
    for topics in (1, 3):
        suffix = f"members=6.partitions=12.topics={topics}"
        assert {f"scale.storm.{suffix}", f"scale.storm.rss_growth_vs_budget.{suffix}",
                f"scale.steady.cpu_share.{suffix}", f"scale.steady.p99.{suffix}",
                f"scale.churn.converge.{suffix}", f"scale.churn.moved.{suffix}"} <= names
    storms = [r for r in results if r.name.startswith("scale.storm.members")]
    for r in storms:
        assert r.value > 0 and r.unit == "ms"
        assert r.params["target_assignments"] >= 1  # read from the server's metric
        assert r.params["converged"] and r.params["rejoins"] == 0 and r.params["errors"] == {}
        assert r.params["server_cpu_s"] > 0 and r.params["peak_rss_mb"] > 0
    memory = [r for r in results if r.name.startswith("scale.memory.")]
    assert len(memory) == 2 and all(r.params["coordinator_mb"] > 0 for r in memory)
    for r in results:
        assert set(r.as_json()) == {"name", "value", "unit", "params"}
        if r.name.startswith("scale.churn.moved"):
            # one member of six restarted: its two partitions at least found a new owner
            assert r.value >= 2 and r.params["restarted_per_wave"] == 1


def test_plot_of_a_run_that_measured_nothing(tmp_path: Path) -> None:
    """A tiny run can measure 0 (no CPU share, a storm under a millisecond): the plot still
    comes out (a log axis without a positive value made matplotlib fail)."""
    import json
    import subprocess
    import sys

    results = [{"name": "scale.storm.members=10", "value": 0.0,
                "params": {"members": 10, "topics": 1, "partitions": 10, "server_cpu_s": 0.0}},
               {"name": "scale.steady.cpu_share.members=10", "value": 0.0,
                "params": {"members": 10, "topics": 1, "partitions": 10}}]
    (tmp_path / "s.json").write_text(json.dumps(results))
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "_plot_scale.py"
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "s.json"),
                        str(tmp_path / "o.png")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "o.png").stat().st_size > 0
