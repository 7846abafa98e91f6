"""A Connect worker's revocation stops its items wave by wave, and a task queued behind the
pool keeps running until its own wave's stop starts (``sim.application.Application.stop_waves``).

Kafka's ``DistributedHerder`` hands a rebalance's stopping callables (connectors first, then
tasks) to its pool of 8 with ``invokeAll``; a callable is ``Worker.stopAndAwaitTask``, which
signals its one task (``WorkerTask.stop``) and awaits it. Until then the task's own thread
goes on polling and processing. So wave ``k`` stops ``k * task_stop_ms`` after the
revocation, the worker answers the rebalance after the last wave, and a task of wave ``k`` is
down for the stops left (``rounds - k``), the rebalance and its start."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.lab.runs import build_scenario, simulate_with_control, summarize
from groupcoord.lab.spec import RunParams, expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.scenario import parse_scenario
from groupcoord.sim.workload import Processor, WorkModel, parse_workload

STOP = 1000
START = 1000


def _one_worker_joined(protocol: str, tasks: int = 20) -> Any:
    """1 worker with one connector of ``tasks`` tasks; a second joins at 30 s."""
    sc = parse_scenario({"group": {"members": 1, "connectors": {"A": tasks}},
                         "events": [{"at_ms": 30_000, "kind": "join", "count": 1}]},
                        source="one-worker-joined")
    wl = parse_workload("w", {"task_records_per_s": 10, "task_start_ms": START,
                              "task_stop_ms": STOP})
    return replace(sc, workload=wl)


def _stop_times(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, Any], list[int]]:
    """When each (processor, task) stopped processing (``Processor.deactivate``)."""
    out: dict[tuple[str, Any], list[int]] = defaultdict(list)
    original = Processor.deactivate

    def deactivate(self: Processor, keys: Any, commit: bool) -> None:
        keys = list(keys)
        for k in keys:
            if k in self.active:
                out[(self.name, k)].append(int(self.model.now()))
        original(self, keys, commit)

    monkeypatch.setattr(Processor, "deactivate", deactivate)
    return out


@pytest.mark.parametrize("protocol", ["classic-connect:eager", "connect:eager"])
def test_a_revoked_task_runs_until_its_own_wave_and_is_down_for_the_stops_left(
        protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stops = _stop_times(monkeypatch)
    sim = build_simulation(_one_worker_joined(protocol), 0, protocol, record_trace=True)
    res = sim.run()
    assert res.ok, res.violation
    trace = [t for t in sim._trace if t[0] >= 30_000]
    revoke = next(t for t in trace if t[2] == "revoke")
    at = revoke[0]
    waves = [t for t in trace if t[2] == "stop-wave" and t[3] == revoke[3]]
    revoked = next(t for t in trace if t[2] == "revoked" and t[3] == revoke[3])
    # the revoked items in the assignment's order, connectors first, 8 a wave, one stop time
    # apart; the worker answers the rebalance after the last
    items = sorted(revoke[5], key=lambda it: (it[1] >= 0, it[0], it[1]))
    expect = [items[i:i + 8] for i in range(0, len(items), 8)]
    assert len(expect) >= 2
    assert [w[0] - at for w in waves] == [k * STOP for k in range(len(expect))]
    assert [w[5] for w in waves] == [",".join(f"{c}/{n}" for c, n in wave if n >= 0)
                                     for wave in expect]
    if protocol == "classic-connect:eager":  # everything: the connector, then A/0 .. A/19
        assert [len(wave) for wave in expect] == [8, 8, 5] and expect[0][0] == ("A", -1)
    assert revoked[0] - at == len(expect) * STOP
    # each task processed until its own wave's stop started, then stood still until it ran
    # again: the stops left after its wave, the rebalance and the start
    model = sim.app.model
    old = f"{revoke[3]}#1"
    for k, wave in enumerate(waves):
        for name in wave[5].split(","):
            task = next(key for (p, key) in stops if p.startswith(old + "/")
                        and f"{key[0]}/{key[1]}" == name)
            stopped = stops[(f"{old}/{task[0]}/{task[1]}", task)]
            assert stopped == [at + k * STOP], (name, stopped)
            down = model.started_at[task] - stopped[0]
            assigned_to_it = next(t[0] for t in trace if t[2] == "assigned"
                                  and task in t[5])
            assert down == (len(expect) - k) * STOP + (assigned_to_it - revoked[0]) + START
            assert 0 <= assigned_to_it - revoked[0] < 5_000


def _params(protocol: str, size: int, scenario: str = "kip415-worker-joins") -> RunParams:
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[size],
                    workloads=["16x8c"], protocols=[protocol])
    return next(r for r in expand(spec) if r.replicate == 0)


def _row(protocol: str, size: int, scenario: str = "kip415-worker-joins") -> dict[str, Any]:
    p = _params(protocol, size, scenario)
    sc = build_scenario(p)
    res, control = simulate_with_control(p, sc)
    assert res.ok, res.violation
    return summarize(p, sc, res, 0.0, control)


@pytest.mark.parametrize("size", [3, 6, 12])
def test_an_eager_stall_is_one_stop_and_one_start_at_any_size(size: int) -> None:
    """The paper's worker-joins cell (16 connectors x 8 tasks, 1 s stops and starts): every
    worker revokes its 144 / size items at the same heartbeat; the group stands still only
    from its last wave's stop until the first restarted task runs: one stop, the rebalance,
    one start, about 2 s at 3, 6 and 12 workers. (When every revoked task counted as down
    from the revocation, the stall was ceil(144 / size / 8) stops and a start: 7, 4 and 3 s.)
    The time until balanced still waits for every wave."""
    r = _row("classic-connect:eager", size)
    wl = build_scenario(_params("classic-connect:eager", size)).workload
    assert wl.task_stop_ms == STOP and wl.task_start_ms == START
    assert STOP + START <= r["stall_ms"] < STOP + START + 100, r["stall_ms"]
    assert STOP + START <= r["worker_stall_ms"] < STOP + START + 100, r["worker_stall_ms"]
    rounds = -(-(144 // size) // 8)
    assert r["time_to_balance_ms"] >= rounds * STOP + START
    # a task's mean downtime lies between the last wave's and the first wave's, well under
    # the first wave's (every task's, when all counted as down from the revocation)
    mean = r["task_downtime_task_s"] * 1000 / r["task_restarts"]
    assert STOP + START <= mean < rounds * STOP + START - STOP / 4, mean


def _check_one_runner(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """I1 on the tasks' threads: after every activation and stop, each task is processing
    on at most one worker."""
    checks = [0]
    original = WorkModel.recount

    def recount(self: WorkModel, p: Processor) -> None:
        running: dict[Any, str] = {}
        for proc in self.processors.values():
            for k in proc.active:
                assert k not in running, (k, running.get(k), proc.name, self.now())
                running[k] = proc.name
        checks[0] += 1
        original(self, p)

    monkeypatch.setattr(WorkModel, "recount", recount)
    return checks


@pytest.mark.parametrize("protocol", ["classic-connect:sessioned", "connect:cooperative",
                                      "classic-connect:eager"])
def test_a_task_still_running_in_a_late_wave_is_not_started_elsewhere(
        protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Incremental cooperative: the follow-up round hands a revoked task over only after the
    old owner's last wave stopped; eager: nothing is reassigned before everyone rejoined."""
    checks = _check_one_runner(monkeypatch)
    stops = _stop_times(monkeypatch)
    for size in (3, 6):
        r = _row(protocol, size)
        assert r["task_restarts"] > 0
    assert checks[0] > 0
    # more than one wave ran in these revocations: tasks stopped at several times
    assert len({t for times in stops.values() for t in times}) > 1
