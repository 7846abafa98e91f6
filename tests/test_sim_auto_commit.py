"""A consumer's auto-commit runs on its own timer (``auto.commit.interval.ms``), as the Java
consumer's: the simulator used to commit only with a heartbeat that was due, so an interval
under a heartbeat changed nothing (the share comparison's review: 100 ms left the records a
crash made the next owner process again where 5 s had them)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from groupcoord.lab.runs import build_scenario, simulate_run
from groupcoord.lab.spec import expand, load_spec
from groupcoord.sim.scenario import with_workload

SPEC = Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data" / "share.toml"


def _reprocessed(interval_ms: int) -> tuple[int, int]:
    runs = expand(load_spec(str(SPEC)))
    run = next(r for r in runs if r.protocol == "consumer:uniform" and r.scenario == "crowd-crash"
               and r.size == 4 and r.workload == "1x4-busy" and r.replicate == 0)
    sc = build_scenario(run)
    sc = with_workload(sc, replace(sc.workload, auto_commit_interval_ms=interval_ms))
    res = simulate_run(run, sc)
    assert res.ok, res.violation
    s = res.summary
    return int(s["work"]["records_reprocessed"]), int(s["commits"])


def test_a_shorter_commit_interval_commits_more_and_loses_less_to_a_crash() -> None:
    slow, slow_commits = _reprocessed(5_000)
    fast, fast_commits = _reprocessed(100)
    # a 100 ms interval commits many times per 5 s heartbeat...
    assert fast_commits > 10 * slow_commits
    # ...so the crashed member's uncommitted records are a fraction of a 5 s interval's
    assert slow > 100 and fast < slow / 4
