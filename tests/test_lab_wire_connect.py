"""Real Kafka Connect workers on the wire (``lab.wire_connect``, ``lab/java/ConnectWorker.java``):
Apache Kafka's own Connect group membership (connect/runtime's WorkerGroupMember,
WorkerCoordinator and assignors, built by ``scripts/build_connect_runtime.py``) joined to
``groupcoord serve``, and the KIP-415 grid's metrics computed from the workers' logs.

The metric tests run on written logs. The end-to-end tests skip where no build is present (the
skip reason names the build command); they check KIP-415's behaviour on the wire: eager
restarts every task when a worker joins, incremental cooperative (sessioned) only the moved
ones, and both end balanced with every task running.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from groupcoord.lab.wire_connect import (
    ConnectMembershipBuild,
    ConnectWireError,
    JavaClientMissing,
    connect_metrics,
    connect_runtime,
    connector_started,
    plan,
    run_connect_wire,
    universe_of,
)
from groupcoord.sim.scenario import parse_scenario


def _rec(t: float, member: str, event: str, **kw: Any) -> dict[str, Any]:
    return {"mono": t, "member": member, "event": event, **kw}


def test_metrics_count_restarts_downtime_and_balance_as_the_model_defines_them() -> None:
    universe = universe_of([("A", 2)])
    assert universe == {"A", "A/0", "A/1"}
    recs = [
        _rec(0.0, "c1", "start"), _rec(0.0, "c2", "start"),
        _rec(1.0, "c1", "assigned", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(2.0, "c1", "started", connectors=["A"], tasks=["A/0", "A/1"]),
        # the disturbance at 10 s: c2 takes A/1 (eager: everything stops and restarts)
        _rec(11.0, "c1", "stopping", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(12.0, "c1", "stopped", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(12.5, "c1", "assigned", connectors=["A"], tasks=["A/0"]),
        _rec(12.5, "c2", "assigned", connectors=[], tasks=["A/1"]),
        _rec(13.5, "c1", "started", connectors=["A"], tasks=["A/0"]),
        _rec(14.0, "c2", "started", connectors=[], tasks=["A/1"]),
    ]
    m = connect_metrics(recs, 10.0, 30.0, [(0.0, universe)])
    assert m["task_restarts"] == 2  # A/0 and A/1 ran before; the connector is not a task
    # down from 11 s: A and A/0 until 13.5 s, A/1 until 14 s
    assert m["task_downtime_task_s"] == pytest.approx(2.5 + 2.5 + 3.0)
    assert m["balanced"] and m["time_to_balance_ms"] == 4000
    # a task not running at the end: no balance
    m = connect_metrics(recs[:-1], 10.0, 30.0, [(0.0, universe)])
    assert m["time_to_balance_ms"] is None
    # a worker holding both tasks while another holds none is not balanced
    skew = [*recs[:4], _rec(12.5, "c2", "assigned", connectors=[], tasks=[])]
    assert connect_metrics(skew, 10.0, 30.0, [(0.0, universe)])["balanced"] is False


def test_a_task_queued_behind_the_pool_is_down_from_its_own_stop_not_the_revocation() -> None:
    """The worker logs the revocation's items as queued ("stopping", ``queued``) and each
    item's stop as its callable begins ("item-stopping"): an item runs until its own stop, as
    Kafka's ``Worker.stopAndAwaitTask`` signals the task only then."""
    universe = universe_of([("A", 2)])
    recs = [
        _rec(0.0, "c1", "start"),
        _rec(1.0, "c1", "assigned", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(2.0, "c1", "started", connectors=["A"], tasks=["A/0", "A/1"]),
        # the disturbance at 10 s; a pool of 2: A and A/0 stop first, A/1 one stop later
        _rec(11.0, "c1", "stopping", connectors=["A"], tasks=["A/0", "A/1"], queued=True),
        _rec(11.0, "c1", "item-stopping", connectors=["A"], tasks=[]),
        _rec(11.0, "c1", "item-stopping", connectors=[], tasks=["A/0"]),
        _rec(12.0, "c1", "item-stopping", connectors=[], tasks=["A/1"]),
        _rec(13.0, "c1", "stopped", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(13.5, "c1", "assigned", connectors=["A"], tasks=["A/0", "A/1"]),
        _rec(14.5, "c1", "started", connectors=["A"], tasks=["A/0", "A/1"]),
    ]
    m = connect_metrics(recs, 10.0, 30.0, [(0.0, universe)])
    # A and A/0 down from 11 s, A/1 only from 12 s, all until 14.5 s
    assert m["task_downtime_task_s"] == pytest.approx(3.5 + 3.5 + 2.5)
    assert m["task_restarts"] == 2 and m["time_to_balance_ms"] == 4500
    # the same revocation logged without its items' own stops: all down from the revocation
    old = [{k: v for k, v in r.items() if k != "queued"} for r in recs
           if r["event"] != "item-stopping"]
    assert connect_metrics(old, 10.0, 30.0, [(0.0, universe)])["task_downtime_task_s"] == \
        pytest.approx(3 * 3.5)


def test_an_added_connector_counts_its_downtime_from_its_creation_and_no_restart() -> None:
    before, after = universe_of([("A", 1)]), universe_of([("A", 1), ("B", 1)])
    recs = [_rec(0.0, "c1", "start"),
            _rec(1.0, "c1", "assigned", connectors=["A"], tasks=["A/0"]),
            _rec(1.0, "c1", "started", connectors=["A"], tasks=["A/0"]),
            _rec(12.0, "c1", "assigned", connectors=["A", "B"], tasks=["A/0", "B/0"]),
            _rec(13.0, "c1", "started", connectors=["B"], tasks=["B/0"])]
    m = connect_metrics(recs, 10.0, 20.0, [(0.0, before), (10.0, after)])
    assert m["task_restarts"] == 0
    assert m["task_downtime_task_s"] == pytest.approx(6.0)  # B and B/0, 10 s to 13 s
    assert m["time_to_balance_ms"] == 3000


def test_the_wire_plays_only_the_connect_events_it_knows() -> None:
    sc = parse_scenario({"name": "x", "group": {"members": 2, "connectors": {"A": 2}},
                         "events": [{"at_ms": 5000, "kind": "network-partition",
                                     "members": ["c1"], "duration_ms": 1000}]})
    with pytest.raises(ConnectWireError, match="network-partition"):
        plan(sc, 1)
    sc = parse_scenario({"name": "x", "group": {"members": 2, "connectors": {"A": 2}},
                         "events": [{"at_ms": 5000, "kind": "add-connector", "connector": "B",
                                     "tasks": 3}, {"at_ms": 6000, "kind": "leave",
                                                   "member": "@follower"}]})
    acts = plan(sc, 1)
    # a created connector: its config with no task, then its tasks once a worker started it
    assert [a[1] for a in acts] == ["go", "go", "config", "tasks", "stop"]
    assert acts[2][2] == {"A": 2, "B": 0} and acts[3][2] == ("B", 3)
    assert acts[2][0] == acts[3][0] == 5.0 and acts[4][2] == "@follower"


def test_a_created_connector_s_start_is_the_latest_start_its_worker_still_runs() -> None:
    recs = [_rec(1.0, "c1", "starting", connectors=["A"], tasks=["A/0"]),
            _rec(10.5, "c2", "starting", connectors=["B"], tasks=[])]
    assert connector_started(recs, "B", 10.0) == 10.5
    assert connector_started(recs, "B", 11.0) is None  # a start before the creation is not it
    assert connector_started(recs, "A", 0.0) == 1.0
    # revoked (its own stop began) before it could write its tasks: started again elsewhere
    recs += [_rec(10.7, "c2", "item-stopping", connectors=["B"], tasks=[])]
    assert connector_started(recs, "B", 10.0) is None
    recs += [_rec(12.0, "c1", "starting", connectors=["A", "B"], tasks=[])]
    assert connector_started(recs, "B", 10.0) == 12.0


def _runtime() -> ConnectMembershipBuild:
    try:
        return connect_runtime()
    except JavaClientMissing as e:
        pytest.skip(str(e))


JOIN = {"name": "join", "group": {"members": 2, "connectors": {"A": 4, "B": 4},
                                   "start_spread_ms": 500},
        "coordinator": {"heartbeat_interval_ms": 1000, "session_timeout_ms": 10000},
        "member": {"scheduled_rebalance_max_delay_ms": 5000},
        "events": [{"at_ms": 9000, "kind": "join", "members": ["c3"]}]}


@pytest.mark.parametrize("protocol, restarts", [("classic-connect:eager", "all"),
                                                ("classic-connect:sessioned", "moved")])
def test_real_connect_workers_rebalance_a_join_as_kip415_says(protocol: str, restarts: str,
                                                              tmp_path: Path) -> None:
    rt = _runtime()
    assert "connect-runtime" in rt.describe
    sc = parse_scenario(JOIN)
    sc = replace(sc, workload=replace(sc.workload, task_stop_ms=200, task_start_ms=200))
    m = run_connect_wire(sc, protocol, 7, keep_dir=tmp_path, settle_s=4.0)
    assert m["workers"] == 3 and m["balanced"], m
    logs = "".join(p.read_text() for p in tmp_path.glob("*.worker.log"))
    assert '"client": "connect-runtime"' in logs
    # the Connect protocol version the assignments carried: eager's 0, sessioned's 2
    assert ('"version": 0' if restarts == "all" else '"version": 2') in logs
    if restarts == "all":  # eager: every one of the 8 tasks stops and starts again
        assert m["task_restarts"] == 8
    else:  # sessioned: 2 or 3 tasks move to the new worker (8 over 3), nothing else restarts
        assert 2 <= m["task_restarts"] <= 3
    assert m["time_to_balance_ms"] is not None and m["time_to_balance_ms"] > 0
    assert m["task_downtime_task_s"] > 0



@pytest.mark.parametrize("protocol", ["classic-connect:eager", "classic-connect:sessioned"])
def test_real_workers_create_a_connector_in_two_rebalances_as_kafka_s_herder_does(
        protocol: str, tmp_path: Path) -> None:
    """``add-connector`` on the wire: the connector's config first (a rebalance assigns it,
    with no task), its task configs once its worker has started it (a second rebalance assigns
    them, Kafka's ``onTaskConfigUpdate``). Eager stops A's 4 tasks in both rounds (8 restarts,
    4 with the tasks in the same snapshot as the connector); sessioned in neither."""
    import json

    _runtime()
    sc = parse_scenario({**JOIN, "group": {**JOIN["group"], "connectors": {"A": 4}},
                         "events": [{"at_ms": 9000, "kind": "add-connector", "connector": "B",
                                     "tasks": 2}]})
    sc = replace(sc, workload=replace(sc.workload, task_stop_ms=200, task_start_ms=400))
    m = run_connect_wire(sc, protocol, 7, keep_dir=tmp_path, settle_s=4.0)
    assert m["workers"] == 2 and m["balanced"], m
    recs = sorted((json.loads(line) for p in tmp_path.glob("*.worker.log")
                   for line in p.read_text().splitlines()), key=lambda r: r["mono"])
    configs = [r for r in recs if r["event"] == "config"]
    assert [c["offset"] for c in configs if c["member"] == "c1"] == [1, 2]
    created, tasks = configs[0]["mono"], configs[-1]["mono"]
    # B's worker began starting B, and its tasks were written one connector start (0.4 s) later
    began = [r for r in recs if r["event"] == "starting" and "B" in r["connectors"]]
    assert began and created <= began[0]["mono"] and tasks - began[0]["mono"] >= 0.4 - 0.01
    # the round on the first snapshot assigns B with no task; the round on the second, its tasks
    at_1 = [r for r in recs if r["event"] == "assigned" and r["offset"] == 1]
    at_2 = [r for r in recs if r["event"] == "assigned" and r["offset"] == 2]
    assert any("B" in r["connectors"] for r in at_1)
    assert not any(t.startswith("B/") for r in at_1 for t in r["tasks"])
    assert sorted(t for r in at_2 for t in r["tasks"] if t.startswith("B/")) == ["B/0", "B/1"]
    assert m["task_restarts"] == (8 if protocol.endswith("eager") else 0)


def _stop_seconds(keep: Path, why: str) -> list[tuple[int, float]]:
    """(items, seconds) of every stop the workers logged for ``why`` (revoked, shutdown)."""
    import json

    out = []
    for log in sorted(keep.glob("*.worker.log")):
        began: tuple[int, float] | None = None
        for line in log.read_text().splitlines():
            e = json.loads(line)
            if e["event"] == "stopping" and e.get("why") == why:
                began = (len(e["connectors"]) + len(e["tasks"]), e["mono"])
            elif e["event"] == "stopped" and began is not None:
                out.append((began[0], e["mono"] - began[1]))
                began = None
    return out


def _item_stop_waves(keep: Path) -> list[list[tuple[float, int]]]:
    """Per revocation of more than 8 items: (seconds after its "stopping" line, items) of
    each of its "item-stopping" lines (an item's own stop callable beginning)."""
    import json

    out = []
    for log in sorted(keep.glob("*.worker.log")):
        cur: list[tuple[float, int]] | None = None
        began = 0.0
        for line in log.read_text().splitlines():
            e = json.loads(line)
            if e["event"] == "stopping" and e.get("why") == "revoked":
                assert e.get("queued") is True
                cur, began = ([], e["mono"]) if len(e["connectors"]) + len(e["tasks"]) > 8 \
                    else (None, 0.0)
            elif e["event"] == "item-stopping" and cur is not None:
                cur.append((e["mono"] - began, len(e["connectors"]) + len(e["tasks"])))
            elif e["event"] == "stopped" and cur is not None:
                out.append(cur)
                cur = None
    return out


@pytest.mark.parametrize("pool", [8, 0])
def test_real_eager_workers_stop_a_rebalance_s_items_8_at_a_time(pool: int,
                                                                 tmp_path: Path) -> None:
    """The wire worker follows Kafka's herder: a rebalance's revocation stops its connectors
    and tasks on the start/stop pool of 8 (each stop callable waits for its item), so a
    worker with 13 of them needs two stop times; the shutdown stops all at once. The
    workload's ``start_stop_threads`` sets the workers' pool (0: all at once)."""
    _runtime()
    group = {**JOIN["group"], "connectors": {"A": 12, "B": 12}}  # 26 items, 13 a worker
    sc = parse_scenario({**JOIN, "group": group})
    stop = 400
    sc = replace(sc, workload=replace(sc.workload, task_stop_ms=stop, task_start_ms=100,
                                      start_stop_threads=pool))
    m = run_connect_wire(sc, "classic-connect:eager", 7, keep_dir=tmp_path, settle_s=4.0)
    assert m["workers"] == 3 and m["balanced"], m
    revoked = [(n, s) for n, s in _stop_seconds(tmp_path, "revoked") if n > 8]
    assert revoked, _stop_seconds(tmp_path, "revoked")
    for n, took in revoked:
        rounds = 1 if pool == 0 else -(-n // pool)
        assert rounds * stop / 1000 <= took < (rounds + 1) * stop / 1000, (n, took)
    for _n, took in _stop_seconds(tmp_path, "shutdown"):
        assert stop / 1000 <= took < 2 * stop / 1000
    # each item's own stop begins when a pool thread takes it: 8 at once, the rest one stop
    # time later (an item runs until then); all at once without a pool
    waves = _item_stop_waves(tmp_path)
    assert waves
    for wave in waves:
        n = sum(k for _, k in wave)
        if pool == 0:
            assert len(wave) == 1 and wave[0][0] < stop / 2000
            continue
        first = [k for t, k in wave if t < stop / 2000]
        later = [k for t, k in wave if stop / 2000 <= t < 1.5 * stop / 1000]
        assert sum(first) == pool and sum(later) == n - pool, wave

def _revocations(log: Path) -> list[dict[str, Any]]:
    """Each revocation a worker logged: when its "revoked" line came, and the (time, thread)
    of each of its items' "item-stopping" lines."""
    import json

    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in log.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "revoked":
            cur = {"at": e["mono"], "items": []}
        elif e["event"] == "item-stopping" and cur is not None:
            cur["items"].append((e["mono"], e.get("thread")))
        elif e["event"] == "stopped" and cur is not None:
            out.append(cur)
            cur = None
    return out


def test_a_worker_s_stops_run_on_one_pool_made_with_the_worker(tmp_path: Path) -> None:
    """Kafka's herder makes its start/stop pool (``startAndStopExecutor``, 8 threads) once, with
    the herder, and hands every rebalance's callables to it; the wire worker does the same: its
    pool's 8 threads run before its first revocation (the "start" line), every stop of every
    revocation runs on them, and a revocation's first stops begin as it begins, with no pool
    to build first (a pool made per revocation began its first wave 9-69 ms after the
    revocation in one run on the loaded machine, and 0.2-0.4 s late in calibration runs)."""
    _runtime()
    group = {**JOIN["group"], "connectors": {"A": 12, "B": 12}}  # 26 items
    events = [*JOIN["events"], {"at_ms": 14000, "kind": "join", "members": ["c4"]}]
    sc = parse_scenario({**JOIN, "group": group, "events": events})
    sc = replace(sc, workload=replace(sc.workload, task_stop_ms=300, task_start_ms=100))
    m = run_connect_wire(sc, "classic-connect:eager", 7, keep_dir=tmp_path, settle_s=4.0)
    assert m["workers"] == 4 and m["balanced"], m
    import json

    pool = {f"StartAndStopExecutor-{i}" for i in range(8)}
    twice = 0
    for log in sorted(tmp_path.glob("*.worker.log")):
        start = json.loads(log.read_text().splitlines()[0])
        assert start["event"] == "start" and start["start_stop_threads"] == 8
        assert start["pool_threads"] == 8  # made and started with the worker
        revs = _revocations(log)
        twice += len(revs) >= 2
        for rev in revs:
            assert rev["items"], rev
            assert {thread for _, thread in rev["items"]} <= pool, rev
            first = min(t for t, _ in rev["items"])
            assert first - rev["at"] < 0.1, (log.name, first - rev["at"])
            wave = sorted(t for t, _ in rev["items"])[:8]
            assert wave[-1] - first < 0.1, (log.name, wave)
    assert twice >= 2  # c1 and c2 revoke at both joins: one pool across revocations


def test_a_killed_worker_s_work_is_down_from_its_death_until_another_starts_it() -> None:
    universe = universe_of([("A", 1)])
    recs = [_rec(0.0, "c1", "start"), _rec(0.0, "c2", "start"),
            _rec(1.0, "c1", "assigned", connectors=["A"], tasks=[]),
            _rec(1.0, "c2", "assigned", connectors=[], tasks=["A/0"]),
            _rec(1.0, "c1", "started", connectors=["A"], tasks=[]),
            _rec(1.0, "c2", "started", connectors=[], tasks=["A/0"]),
            _rec(10.0, "c2", "killed"),  # no stop logged: the JVM halted
            _rec(21.0, "c1", "assigned", connectors=["A"], tasks=["A/0"]),
            _rec(22.0, "c1", "started", connectors=[], tasks=["A/0"])]
    m = connect_metrics(recs, 10.0, 30.0, [(0.0, universe)])
    assert m["task_restarts"] == 1
    assert m["task_downtime_task_s"] == pytest.approx(12.0)
    assert m["balanced"] and m["time_to_balance_ms"] == 12000
