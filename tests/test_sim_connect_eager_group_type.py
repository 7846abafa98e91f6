"""Why the connect group type's eager variant (``connect:eager``) shows a stall of 0.

``connect:eager`` is the Eager assignor (members sorted, connectors and tasks dealt round
robin: no stickiness) on the Connect draft's group type, and the draft reconciles every target
item by item ("Rebalance Process": the coordinator revokes the connectors and tasks which are
no longer in the member's target assignment, and gives a worker its new ones once their old
owners revoked them). There is no JoinGroup barrier and no ``onJoinPrepare`` that stops all of
a worker's work, as classic Connect's eager protocol has. So each worker stops only what the
new round robin moves away from it, at its own heartbeat, and the items the round robin leaves
on their worker never stop: some task of the group always runs, and the stall (the time no
task of the group runs) is 0 at every task time, while the restarts are the tasks that moved.
``classic-connect:eager`` in the same cell stops every task and stalls one stop and one start.

The cell is the paper spec's kip415-worker-joins at 12 workers (two workers join); in replicate 0
every old worker keeps a task, in replicate 9 one keeps none and stands still (its worker stall).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from groupcoord.lab.runs import build_scenario, run_one
from groupcoord.lab.spec import RunParams, expand, load_spec, restrict
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.workload import Processor, WorkModel

TASKS = 128


def _params(protocol: str, workload: str, replicate: int = 0) -> RunParams:
    spec = restrict(load_spec("paper"), scenarios=["kip415-worker-joins"], sizes=[12],
                    workloads=[workload], protocols=[protocol])
    return next(r for r in expand(spec) if r.replicate == replicate)


def _traced(protocol: str, workload: str, monkeypatch: pytest.MonkeyPatch,
            replicate: int = 0) -> dict[str, Any]:
    """The run of the cell with each task's stops after the event, the fewest tasks running
    at once after it, and who ran each task just before the event and at the end."""
    params = _params(protocol, workload, replicate)
    sc = build_scenario(params)
    first = min(e.at_ms for e in sc.events)
    stops: dict[Any, int] = defaultdict(int)
    low = [TASKS]
    deactivate, recount = Processor.deactivate, WorkModel.recount

    def counted_deactivate(self: Processor, keys: Any, commit: bool) -> None:
        keys = list(keys)
        if self.model.now() >= first:
            for k in keys:
                if k in self.active:
                    stops[k] += 1
        deactivate(self, keys, commit)

    def counted_recount(self: WorkModel, p: Processor) -> None:
        recount(self, p)
        if self.now() >= first:
            low[0] = min(low[0], sum(len(q.active) for q in self.processors.values()))

    monkeypatch.setattr(Processor, "deactivate", counted_deactivate)
    monkeypatch.setattr(WorkModel, "recount", counted_recount)
    sim = build_simulation(sc, params.seed, protocol)
    sim.start()
    sim.advance(until_ms=first - 1)
    before = {it: p.name for it, p in sim.legit.items() if it[1] >= 0}
    sim.advance()
    res = sim.result()
    assert res.ok, res.violation
    after = {it: p.name for it, p in sim.legit.items() if it[1] >= 0}
    assert len(before) == len(after) == TASKS
    monkeypatch.undo()
    return {"before": before, "after": after, "stops": dict(stops), "low": low[0],
            "row": run_one(params)}


@pytest.mark.parametrize(("workload", "replicate"),
                         [("16x8c", 0), ("16x8c-task5s", 0), ("16x8c-task5s", 9)])
def test_connect_eager_stops_only_what_the_round_robin_moves_so_the_group_never_stalls(
        workload: str, replicate: int, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _traced("connect:eager", workload, monkeypatch, replicate)
    before, after, stops = r["before"], r["after"], r["stops"]
    kept = {it for it in before if after[it] == before[it]}
    moved = set(before) - kept
    # the round robin over 14 workers leaves a few tasks where they ran over 12
    assert 0 < len(kept) < TASKS // 4, len(kept)
    # a kept task never stops; a moved one stops once, on its old worker
    assert not kept & set(stops)
    assert set(stops) == moved and set(stops.values()) == {1}
    # so the group never runs fewer tasks than it kept: no stall, and the restarts are the moves
    assert r["low"] >= len(kept)
    row = r["row"]
    assert row["ok"] and row["caught_up"]
    assert row["stall_ms"] == 0
    assert row["task_restarts"] == len(moved)
    # a worker whose every task moved stands still (worker stall) even though the group runs
    emptied = {w for w in set(before.values())
               if not any(before[it] == w for it in kept)}
    assert (row["worker_stall_ms"] > 0) == bool(emptied), (row["worker_stall_ms"], emptied)


def test_classic_connect_eager_stops_every_task_and_stalls_a_stop_and_a_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: classic Connect's eager worker revokes its whole assignment before it
    rejoins (``WorkerCoordinator.onJoinPrepare``), so every task stops, and the group stands
    still from the last stop until the first restarted task runs."""
    r = _traced("classic-connect:eager", "16x8c", monkeypatch)
    assert set(r["stops"]) == set(r["before"])
    assert r["low"] == 0
    row = r["row"]
    wl = build_scenario(_params("classic-connect:eager", "16x8c")).workload
    assert row["stall_ms"] >= wl.task_stop_ms + wl.task_start_ms
    assert row["task_restarts"] == TASKS
