"""A Connect worker's start/stop pool (``sim.application.Application.stop_ms``, the workload's
``start_stop_threads``): Kafka's ``DistributedHerder`` stops the connectors and tasks of a
rebalance's revocation 8 at a time (``START_STOP_THREAD_POOL_SIZE``; each stopping callable
waits for its item's graceful stop), so a revocation of N items takes ceil(N / 8) stop times;
starts are not bounded in time (a starting callable returns once the task is submitted to its
own thread). Both Connect group types, eager and incremental cooperative."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.lab.runs import build_scenario, simulate_with_control, summarize
from groupcoord.lab.spec import RunParams, expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.settings import effective_settings
from groupcoord.sim.workload import DEFAULT_WORKLOAD, WorkloadError, parse_workload

EAGER = ("classic-connect:eager", "connect:eager")
COOPERATIVE = ("classic-connect:sessioned", "connect:cooperative")


def _params(protocol: str, scenario: str = "kip415-worker-joins", size: int = 3) -> RunParams:
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[size],
                    workloads=["16x8c"], protocols=[protocol])
    return next(r for r in expand(spec) if r.replicate == 0)


def _with_pool(p: RunParams, pool: int) -> Any:
    sc = build_scenario(p)
    return replace(sc, workload=replace(sc.workload, start_stop_threads=pool))


def _row(protocol: str, pool: int) -> dict[str, Any]:
    p = _params(protocol)
    sc = _with_pool(p, pool)
    res, control = simulate_with_control(p, sc)
    assert res.ok, res.violation
    return summarize(p, sc, res, 0.0, control)


def test_kafkas_pool_is_the_default_and_a_setting_of_the_runs() -> None:
    assert DEFAULT_WORKLOAD.start_stop_threads == 8
    sc = build_scenario(_params("classic-connect:eager"))
    assert effective_settings(sc, "classic-connect:eager")["start.stop.threads"] == 8
    # the workload's table (the lab's run identity) names it only when it is not Kafka's
    assert "start_stop_threads" not in sc.workload.as_table()
    four = parse_workload("w", {"start_stop_threads": 4})
    assert four.as_table()["start_stop_threads"] == 4
    assert parse_workload("w", four.as_table()) == four
    with pytest.raises(WorkloadError, match=">= 0"):
        parse_workload("w", {"start_stop_threads": -1})


_APP: list[Any] = []


def _application() -> Any:
    sim = build_simulation(build_scenario(_params("classic-connect:eager")), 0,
                           "classic-connect:eager")
    sim.setup()
    _APP.append(sim.app)
    return sim.app


@settings(max_examples=200, deadline=None)
@given(items=st.integers(0, 500), pool=st.integers(0, 64), stop=st.integers(0, 10_000))
def test_a_revocation_takes_a_stop_time_per_round_of_the_pool(items: int, pool: int,
                                                              stop: int) -> None:
    app = _APP[0] if _APP else _application()
    app.workload = replace(app.workload, start_stop_threads=pool, task_stop_ms=stop)
    ms = app.stop_ms(items)
    rounds = 1 if pool == 0 or items == 0 else -(-items // pool)
    assert ms == rounds * stop
    assert (ms == stop) == (pool == 0 or items <= pool or stop == 0)
    assert app.stop_ms(items + 1) >= ms  # more items never stop sooner
    # never faster than all at once, never slower than one at a time
    assert stop <= ms <= max(items, 1) * stop


def _revocations(protocol: str, pool: int) -> list[tuple[int, int, int]]:
    """(items revoked, when, how long until the worker's revocation completed) per revocation
    of a worker that stays, in the trace of the cell's replicate 0."""
    p = _params(protocol)
    sim = build_simulation(_with_pool(p, pool), p.seed, protocol, record_trace=True)
    res = sim.run()
    assert res.ok, res.violation
    out = []
    pending: dict[str, tuple[int, int]] = {}
    for now, _step, event, member, _epochs, resource in sim._trace:
        if event == "revoke":
            items = list(resource)  # tasks (connector, n >= 0), connectors (name, -1)
            if any(it[1] >= 0 for it in items):  # (connectors alone cost nothing)
                pending[member] = (now, len(items))
        elif event == "revoked" and member in pending:
            at, n = pending.pop(member)
            out.append((n, at, now - at))
    return out


@pytest.mark.parametrize("protocol", EAGER + COOPERATIVE)
def test_the_last_item_of_a_revocation_stops_after_ceil_n_over_the_pool_stop_times(
        protocol: str) -> None:
    stop = build_scenario(_params(protocol)).workload.task_stop_ms
    for pool in (8, 5):
        revs = _revocations(protocol, pool)
        assert revs, protocol
        for n, at, took in revs:
            assert took == -(-n // pool) * stop, (protocol, pool, n, at, took)
        if protocol in EAGER:  # every worker stops everything: 48 items each at 3 workers
            assert max(n for n, _, _ in revs) > pool
    assert all(took == stop for _, _, took in _revocations(protocol, 0))


def test_eager_task_downtime_grows_as_the_pool_shrinks() -> None:
    """Kafka's classic Connect workers, eager, 3 workers (48 connectors and tasks each) joined
    by 2, 1 s stops and starts: a worker's revocation takes ceil(48 / pool) stops, and the
    time until balanced waits for all of them; a task runs until its own wave's stop starts
    (``Application.stop_waves``), so the group stall is the last wave's stop and a start
    whatever the pool, and the downtime grows as the pool shrinks (the later waves' tasks
    wait for fewer stops); all at once (0) is the model before the pool (one stop). Restarts
    do not change."""
    rows = {pool: _row("classic-connect:eager", pool) for pool in (0, 16, 8, 4)}
    wl = build_scenario(_params("classic-connect:eager")).workload
    for pool, r in rows.items():
        rounds = 1 if pool == 0 else -(-48 // pool)
        expect = wl.task_stop_ms + wl.task_start_ms
        assert expect <= r["stall_ms"] < expect + 100, (pool, r["stall_ms"])
        assert r["time_to_balance_ms"] >= rounds * wl.task_stop_ms + wl.task_start_ms
        assert r["task_restarts"] == 128
    downtime = [rows[pool]["task_downtime_task_s"] for pool in (0, 16, 8, 4)]
    assert downtime == sorted(downtime) and len(set(downtime)) == 4, downtime
    # Kafka's pool doubles the all-at-once model's eager downtime here
    assert rows[8]["task_downtime_task_s"] > 2 * rows[0]["task_downtime_task_s"]
