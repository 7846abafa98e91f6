"""Members that do work, inside the simulator (``sim/application.py`` over ``sim/workload.py``):
each part of the model in a run, determinism, invariants, bad parameters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import (
    Event,
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    random_scenario,
    start_offsets_ms,
)
from groupcoord.sim.workload import DEFAULT_WORKLOAD, IDLE, Dist, Workload


def _lines(r: Any, event: str, member: str = "") -> list[list[str]]:
    out = []
    for line in r.trace:
        parts = line.split()
        if len(parts) > 2 and parts[2] == event and (not member or parts[3] == member):
            out.append(parts)
    return out


def _window(r: Any, kind: str) -> dict[str, Any]:
    return next(w for w in r.disturbances if w["disturbance"] == kind)


def busy_group(ms_per_record: float, joins_at: int = 40_000) -> Scenario:
    """Two consumers on two partitions, each with more records than it can process (a full
    batch of 500 records in flight all the time when ``ms_per_record`` is 10: 5 s), then a
    third member joins. Records can be polled as soon as produced (no fetch latency), so the
    first member is busy from its first poll, while the initial join still rebalances."""
    return Scenario("busy", members=2, topics=(("foo", 2),), session_timeout_ms=45_000,
                    heartbeat_interval_ms=3_000, rebalance_timeout_ms=60_000,
                    events=(Event(joins_at, "join", {"members": ("c3",), "count": 1}),),
                    workload=Workload(records_per_s=200, max_poll_records=500,
                                      processing_ms=Dist("fixed", ms_per_record),
                                      commit_latency_ms=5, fetch_latency_ms=0),
                    source="busy")


def test_a_member_busy_for_x_ms_holds_an_eager_rebalance_by_x() -> None:
    r = simulate(busy_group(10.0), 1, "classic:eager", record_trace=True)
    assert r.ok, r.violation and r.violation.format()
    join_at = 40_000
    held = []
    for name in ("c1", "c2"):
        notice = next(int(p[0]) for p in _lines(r, "hb<", name)
                      if int(p[0]) >= join_at and "REBALANCE_IN_PROGRESS" in p)
        busy = next(p for p in _lines(r, "busy", name) if int(p[0]) == notice)
        wait = int(busy[-2])  # "rejoin at poll, X ms"
        joined = next(int(p[0]) for p in _lines(r, "join>", name) if int(p[0]) > notice)
        # the JoinGroup goes when the batch is done and the revocation's commit returned
        assert joined == notice + wait + 5, (name, notice, wait, joined)
        assert wait > 0
        held.append(joined)
    # the whole group waits for the last of them: the rebalance completes after it joined
    synced = min(int(p[0]) for p in _lines(r, "sync<") if int(p[0]) > join_at)
    assert synced > max(held)
    # idle members answer at once: the same rebalance is shorter by about the batch time
    idle = simulate(busy_group(10.0), 1, "classic:eager", workload=IDLE)
    assert _window(r, "join")["time_to_converge_ms"] > \
        _window(idle, "join")["time_to_converge_ms"] + min(h - join_at for h in held) - 3_000


def test_a_cooperative_member_keeps_processing_while_its_rejoin_waits_for_poll() -> None:
    r = simulate(busy_group(10.0), 1, "classic:cooperative", record_trace=True)
    assert r.ok, r.violation and r.violation.format()
    w = _window(r, "join")
    eager = _window(simulate(busy_group(10.0), 1, "classic:eager"), "join")
    assert w["stall_ms"] == 0  # somebody always processed
    assert eager["records_processed"] < w["records_processed"]
    assert _lines(r, "busy", "c1")  # its rejoin waited for its poll()


def test_kip848_revocation_waits_for_poll_and_the_ack_follows_it() -> None:
    r = simulate(busy_group(10.0), 1, "consumer:uniform", record_trace=True)
    assert r.ok, r.violation and r.violation.format()
    busy = [p for p in _lines(r, "busy") if "revocation" in " ".join(p)]
    assert busy
    first = busy[0]
    t, name, wait = int(first[0]), first[3], int(first[-2])
    revoked = next(int(p[0]) for p in _lines(r, "revoked", name) if int(p[0]) >= t)
    assert revoked == t + wait + 5  # at the end of the batch, plus the commit
    ack = next(int(p[0]) for p in _lines(r, "hb>", name) if int(p[0]) >= revoked)
    assert ack == revoked  # the acknowledgement goes right after the callback


def test_records_processed_twice_only_when_a_move_loses_uncommitted_work() -> None:
    base = load_scenario("bounce")
    graceful = simulate(base, 3, "consumer:uniform")
    assert graceful.ok and _window(graceful, "bounce")["records_reprocessed"] == 0
    crash = load_scenario("crash")
    r = simulate(crash, 3, "consumer:uniform")
    assert r.ok
    w = _window(r, "crash")
    # the crashed member's partitions are processed again from the last auto-commit: at most
    # one commit interval of their records (plus the batch in flight)
    rate = DEFAULT_WORKLOAD.records_per_s * sum(p for _, p in crash.topics)
    assert 0 < w["records_reprocessed"] <= rate * crash.commit_interval_ms / 1000


def test_warm_up_delays_processing_not_ownership() -> None:
    sc = load_scenario("scale-out")
    cold = simulate(sc, 2, "consumer:uniform",
                    workload=Workload(warmup_ms=0))
    warm = simulate(sc, 2, "consumer:uniform", workload=Workload(warmup_ms=8_000))
    assert cold.ok and warm.ok
    a, b = _window(cold, "scale-out"), _window(warm, "scale-out")
    assert a["resource_downtime_ms"] == b["resource_downtime_ms"]  # ownership: unchanged
    assert a["time_to_converge_ms"] == b["time_to_converge_ms"]
    # every partition that moved waited 8 s owned but not processing (the run goes on until
    # the applications caught up: the windows close when the group converged)
    assert warm.summary["work"]["paused_partition_s"] >= \
        cold.summary["work"]["paused_partition_s"] + 8 * b["resources_moved"]
    assert warm.summary["work"]["lag_record_s"] > cold.summary["work"]["lag_record_s"]


def test_a_batch_longer_than_max_poll_interval_makes_the_member_leave_and_rejoin() -> None:
    sc = Scenario("slow", members=2, topics=(("foo", 2),), rebalance_timeout_ms=20_000,
                  workload=Workload(records_per_s=100, max_poll_records=500,
                                    processing_ms=Dist("fixed", 60.0)),
                  end_ms=120_000, source="slow")
    r = simulate(sc, 1, "classic:cooperative", record_trace=True, max_steps=20_000)
    timeouts = _lines(r, "poll-timeout")
    assert timeouts
    t, name = int(timeouts[0][0]), timeouts[0][3]
    assert any(int(p[0]) == t for p in _lines(r, "leave>", name))  # LeaveGroup at once
    # it rejoins as a new incarnation when its batch (30 s) ends
    starts = [p for p in _lines(r, "start", name) if int(p[0]) > t]
    assert starts and starts[0][4] == "#2"
    assert r.summary["poll_timeouts"] >= 1


def test_classic_members_see_new_partitions_at_their_metadata_refresh() -> None:
    sc = Scenario("grow", members=3, topics=(("foo", 6),), heartbeat_interval_ms=3_000,
                  events=(Event(30_000, "add-partitions", {"topic": "foo",
                                                           "partitions": 30}),),
                  workload=Workload(metadata_max_age_ms=100_000), source="grow")
    kip848 = _window(simulate(sc, 1, "consumer:uniform"), "add-partitions")
    assert kip848["time_to_converge_ms"] < 10_000
    # each incarnation refreshes every 100 s at a phase drawn from the seed: the growth is
    # seen within one period, at a point that differs from seed to seed (it was 70 s after
    # the growth in every seed when refreshes were counted from the members' start)
    firsts = []
    for seed in range(1, 7):
        r = simulate(sc, seed, "classic:cooperative", record_trace=True)
        refreshes = [int(p[0]) for p in _lines(r, "md-refresh")]
        assert refreshes and all(30_000 <= t < 130_000 for t in refreshes)
        firsts.append(refreshes[0] - 30_000)
        # not before a member saw the new partitions
        assert _window(r, "add-partitions")["time_to_converge_ms"] >= firsts[-1]
    assert len(set(firsts)) == len(firsts)
    at_once = _window(simulate(sc, 1, "classic:cooperative",
                               workload=Workload(metadata_max_age_ms=0)), "add-partitions")
    assert at_once["time_to_converge_ms"] < 20_000


def test_connect_workers_restart_tasks_eager_stops_them_all() -> None:
    eager = simulate("kip415-worker-joins", 1, "classic-connect:eager")
    coop = simulate("kip415-worker-joins", 1, "classic-connect:sessioned")
    assert eager.ok and coop.ok
    # eager workers stop every task and start what they get back; KIP-415 ones only move
    # what the new worker takes
    assert eager.summary["work"]["task_restarts"] > coop.summary["work"]["task_restarts"] > 0
    assert _window(eager, "join")["paused_partition_s"] > 0  # owned while stopping


@pytest.mark.parametrize("protocol", ["consumer:uniform", "classic:eager", "classic:cooperative",
                                      "connect:cooperative", "classic-connect:sessioned"])
def test_same_seed_same_trace_with_work(protocol: str) -> None:
    sc = random_scenario(11)
    if sc.workload.idle:
        sc = Scenario(**{**{f: getattr(sc, f) for f in sc.__dataclass_fields__},
                         "workload": Workload(processing_ms=Dist("exponential", 2.0))})
    a = simulate(sc, 11, protocol, record_trace=True)
    b = simulate(sc, 11, protocol, record_trace=True)
    assert a.trace_text() == b.trace_text()
    assert json.dumps(a.summary, sort_keys=True) == json.dumps(b.summary, sort_keys=True)
    assert a.disturbances == b.disturbances


def test_idle_is_an_explicit_choice_and_reports_no_work() -> None:
    r = simulate("bounce", 1, "consumer:uniform", workload=IDLE)
    assert r.summary["workload"] == "idle"
    assert "records_processed" not in _window(r, "bounce")
    w = _window(simulate("bounce", 1, "consumer:uniform"), "bounce")
    assert w["records_processed"] > 0


def test_a_scenario_workload_table_and_its_errors() -> None:
    sc = parse_scenario({"workload": {"records_per_s": 5, "max_poll_interval_ms": 40_000}})
    assert sc.workload.records_per_s == 5 and sc.rebalance_timeout_ms == 40_000
    assert parse_scenario({"workload": {"idle": True}}).workload is IDLE
    with pytest.raises(ScenarioError, match=r"s.toml: workload.max_poll_records: expected an "
                                            r"integer >= 1, got 0"):
        parse_scenario({"workload": {"max_poll_records": 0}}, source="s.toml")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    return subprocess.run([sys.executable, "-c", "import sys; from groupcoord.cli import main; "
                           "sys.exit(main())", *args], capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})


def test_bad_workload_parameters_exit_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[workload]\nprocessing_ms = { dist = "zipf", mean = 1 }\n')
    r = _cli("simulate", "--scenario", str(bad))
    assert r.returncode == 2
    assert "workload.processing_ms.dist: expected one of" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _cli("simulate", "--scenario", "bounce", "--workload", '{"warmup_ms": -5}')
    assert r.returncode == 2 and "--workload.warmup_ms" in r.stderr
    r = _cli("simulate", "--scenario", "bounce", "--workload", "busy")
    assert r.returncode == 2 and "--workload" in r.stderr


def test_work_metrics_do_not_depend_on_the_hash_seed() -> None:
    # Connect items hold strings (hashed per interpreter): no set order may reach the order of
    # events or of the float sums behind the metrics.
    src = str(Path(__file__).resolve().parents[1] / "src")
    code = ("import json, sys; from groupcoord.sim.runner import simulate; "
            "r = simulate('crash', 1, 'classic-connect:eager', record_trace=True); "
            "sys.stdout.write(r.trace_text() + json.dumps(r.summary, sort_keys=True) + "
            "json.dumps(r.disturbances, sort_keys=True))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, timeout=300,
                           env={"PYTHONHASHSEED": str(h), "PYTHONPATH": src}).stdout
            for h in (1, 2, 3)]
    assert runs[0] and runs[0] == runs[1] == runs[2]


def test_members_start_at_offsets_drawn_from_the_seed() -> None:
    """``start_spread_ms``: the initial members start at offsets drawn from the seed (the
    phases of their heartbeats), the same in every run of a seed; 0 (the default of
    ``groupcoord simulate``) starts them all at once."""
    sc = parse_scenario({"name": "spread", "group": {"members": 4, "start_spread_ms": 5_000}})
    assert sc.start_spread_ms == 5_000
    starts = {}
    for seed in (1, 2):
        r = simulate(sc, seed, "consumer:uniform", record_trace=True)
        starts[seed] = sorted(int(p[0]) for p in _lines(r, "start"))
        assert starts[seed] == sorted(start_offsets_ms(sc, seed))
        assert all(0 <= t < 5_000 for t in starts[seed]) and len(set(starts[seed])) == 4
        again = simulate(sc, seed, "consumer:uniform", record_trace=True)
        assert again.trace_text() == r.trace_text()
    assert starts[1] != starts[2]
    flat = simulate(sc, 1, "consumer:uniform", record_trace=True, start_spread_ms=0)
    assert {int(p[0]) for p in _lines(flat, "start")} == {0}


@pytest.mark.parametrize("protocol", ["consumer:uniform", "classic:eager", "connect:cooperative"])
def test_a_process_sends_nothing_until_its_startup_is_over(protocol: str) -> None:
    """``startup_ms``: each new process's first request comes after a start-up drawn from the
    seed within half to one and a half times it (a Connect worker reading its config topic);
    with 0 it goes at once."""
    sc = load_scenario("scale-out")
    slow = Workload(startup_ms=2_000)
    r = simulate(sc, 3, protocol, record_trace=True, workload=slow)
    assert r.ok, r.violation and r.violation.format()
    firsts = {}
    for line in r.trace:
        parts = line.split()
        if len(parts) > 3 and parts[2] == "start" and parts[3] not in firsts:
            firsts[parts[3]] = [int(parts[0]), None]
        if len(parts) > 3 and parts[2] in ("hb>", "join>") and parts[3] in firsts \
                and firsts[parts[3]][1] is None:
            firsts[parts[3]][1] = int(parts[0])
    delays = [sent - started for started, sent in firsts.values() if sent is not None]
    assert len(delays) == 6
    assert all(1_000 <= d < 3_000 + 50 for d in delays), delays
    assert len(set(delays)) > 1  # drawn per process
    again = simulate(sc, 3, protocol, record_trace=True, workload=slow)
    assert again.trace_text() == r.trace_text()
    at_once = simulate(sc, 3, protocol, record_trace=True, workload=Workload())
    first = next(line.split() for line in at_once.trace if " hb> " in line or " join> " in line)
    assert int(first[0]) == 0
