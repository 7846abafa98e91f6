"""Classic Connect at a 1 s heartbeat with 1 s task starts: the group's convergence is seen.

A Stable worker whose heartbeat is due in the same millisecond as the step that last changed
the group (a task start of ``task.start`` 1 s after a SyncGroup, the heartbeat 1 s after it)
is converged: a due heartbeat keeps the member in its generation (``AbstractCoordinator``'s
heartbeat thread) and moves nothing, and no later step (heartbeats mark nothing) would look
again. Only a due rejoin (a configuration change, KIP-415's scheduled delay) holds it back.
"""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import PARAM_COLUMNS, RunParams

#: Two seeds of the paper's cell whose 1 s heartbeat fell due as a task started.
SEEDS = (227360953674159360, 431514727618802976)


def _params(protocol: str, seed: int) -> RunParams:
    base: dict[str, Any] = {name: None for name in PARAM_COLUMNS}
    base.update(run_id="r", sweep="t", protocol=protocol, scenario="kip415-worker-joins",
                size=12, workload="16x8c-task1s", connectors=16, tasks=8, fault_rate=0.0,
                replicate=0, seed=seed, events=False, checkpoint_every=2000, spec_ref="paper",
                work='{"task_records_per_s":10,"task_start_ms":1000,"task_stop_ms":1000}')
    return RunParams(**base)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("protocol", ["classic-connect:sessioned@hb1s",
                                      "classic-connect:eager@hb1s"])
def test_a_heartbeat_due_as_tasks_start_does_not_hide_the_initial_join_s_end(
        protocol: str, seed: int) -> None:
    r = run_one(_params(protocol, seed), warmup_ms=60_000)
    assert r["violation_row"] is None
    initial = r["disturbance_rows"][0]
    assert initial["disturbance"] == "initial-join"
    assert initial["converged"] is True
    assert initial["closed_ms"] < 60_000  # closed before the event, not at the run's end
    assert r["caught_up"] is True
    assert r["converged"] is True and r["recovered"] is True


@pytest.mark.parametrize("protocol", ["connect:eager@hb1s", "connect:cooperative@hb1s"])
def test_the_warm_up_outlasts_the_first_worker_s_hand_back_at_a_1s_heartbeat(
        protocol: str) -> None:
    """The connect group type's first worker hands back all but its share, 8 stops of 1 s at
    a time (17 s at 12 workers): its warm-up covers that at any heartbeat, not only when the
    heartbeat rounds' margin (3 s each) happens to be longer."""
    r = run_one(_params(protocol, 380804046062075098))
    assert r["violation_row"] is None
    initial = r["disturbance_rows"][0]
    assert initial["disturbance"] == "initial-join"
    assert initial["closed_ms"] < r["warmup_ms"]
    assert r["caught_up"] is True
