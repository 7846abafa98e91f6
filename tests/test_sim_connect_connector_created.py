"""A connector created in a Connect cluster rebalances twice (``ConnectSimulation.
_publish_task_configs``): Kafka's herder writes the connector's config first (a rebalance
assigns the connector), and the connector, once started, generates its task configs, whose
write makes the group rebalance again to assign the tasks. Eager stops every task in both
rounds; incremental cooperative (sessioned) keeps running tasks in both."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import RunParams, expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.scenario import parse_scenario

from .sim_support import ok

ALL = ("classic-connect:eager", "classic-connect:sessioned", "connect:eager",
       "connect:cooperative")


def _params(size: int, protocol: str, replicate: int = 0) -> RunParams:
    spec = restrict(load_spec("paper"), scenarios=["kip415-connector-added"], sizes=[size],
                    workloads=["16x8c"], protocols=[protocol])
    return next(r for r in expand(spec) if r.replicate == replicate)


def _lines(trace: list[str], kind: str) -> list[tuple[int, str, str]]:
    """(time, member, resource) of the trace lines of one kind."""
    out = []
    for line in trace:
        f = line.split(None, 5)
        if len(f) >= 4 and f[2] == kind:
            out.append((int(f[0]), f[3], f[5] if len(f) > 5 else ""))
    return out


def _created(extra_events: list[dict[str, Any]] | None = None, start_ms: int = 700) -> Any:
    """KIP-415's configuration (A with 2 tasks, B with 1) under three workers; connector C
    with 3 tasks created at 20 s; connectors and tasks start in ``start_ms``."""
    return parse_scenario({
        "name": "created", "group": {"members": 3, "connectors": {"A": 2, "B": 1}},
        "events": [{"at_ms": 20_000, "kind": "add-connector", "connector": "C", "tasks": 3},
                   *(extra_events or [])],
        "workload": {"task_start_ms": start_ms, "task_stop_ms": 100,
                     "task_records_per_s": 1.0}})


@pytest.mark.parametrize("protocol", ALL)
@pytest.mark.parametrize("start_ms", [200, 2_200])
def test_the_connector_is_configured_first_and_its_tasks_once_it_has_started(
        protocol: str, start_ms: int) -> None:
    """Two configuration changes: the connector alone (no task), then its tasks, written one
    connector start after a worker was assigned the connector; the tasks are assigned only
    after that, and at the end every one of them runs."""
    sim = build_simulation(_created(start_ms=start_ms), 1, protocol, record_trace=True)
    res = ok(sim.run())
    changes = [(t, what) for t, _, what in _lines(res.trace, "config") if "C" in what]
    assert [what for _, what in changes] == ["create C=0", "update C=3"]
    (created_at, _), (tasks_at, _) = changes
    assert created_at == 20_000
    assigned = _lines(res.trace, "assigned")
    # (eager assigns the connector again in the tasks' round: the first assignment counts)
    connector_at = min(t for t, _, r in assigned if t > created_at and "C" in r.split(","))
    assert tasks_at == connector_at + start_ms
    task_times = [t for t, _, r in assigned if any(x.startswith("C/") for x in r.split(","))]
    assert len(task_times) >= 1 and min(task_times) > tasks_at
    assert {("C", -1), ("C", 0), ("C", 1), ("C", 2)} <= set(sim.legit)


@pytest.mark.parametrize("size", [3, 6, 12])
def test_eager_stops_every_task_in_both_rounds_sessioned_in_neither(size: int) -> None:
    """The paper spec's cell (16 connectors x 8 tasks, connector C with 12 tasks created):
    classic eager restarts every running task twice (2 x 128), sessioned none."""
    eager = run_one(_params(size, "classic-connect:eager"))
    sessioned = run_one(_params(size, "classic-connect:sessioned"))
    assert eager["ok"] and sessioned["ok"], (eager["invariant"], sessioned["invariant"])
    assert eager["task_restarts"] == 2 * 128
    assert sessioned["task_restarts"] == 0
    # sessioned waits for the connector's 1 s start, then the tasks' 1 s start
    assert 2_000 <= sessioned["time_to_balance_ms"] < 4_000


def test_a_connector_deleted_before_it_wrote_its_task_configs_writes_none() -> None:
    """The connector is removed while it starts: its task configs are never written and the
    group converges without them."""
    for protocol in ALL:
        sc = _created([{"at_ms": 20_300, "kind": "remove-connector", "connector": "C"}],
                      start_ms=3_000)
        sim = build_simulation(sc, 2, protocol, record_trace=True)
        res = ok(sim.run())
        changes = [what for _, _, what in _lines(res.trace, "config") if "C" in what]
        assert changes == ["create C=0", "delete C"], (protocol, changes)
        assert "C" not in sim.connectors and not sim._pending_tasks
        assert all(item[0] != "C" for item in sim.legit), protocol
