"""The work model's fast paths give the runs they replace, bit for bit (docs/benchmarks.md,
the simulator's section):

- the step inside a catch-up (``Processor._grp``): the resources a member kept up with in one
  state are computed once per batch, stream advance and lag sample, the others given the same
  floats, summed in the same order;
- an answer accepting every partition of an auto-commit (which names every owned partition)
  commits its positions without a lookup per partition of the answer
  (``Application.commit_handled``).

Each run with both on is the run with both off: trace, summary, windows, and every float of
the model unrounded.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.sim.runner import build_simulation
from groupcoord.sim.workload import DEFAULT_WORKLOAD, Dist, Workload

#: Scenarios whose members catch up after rebalances, lose partitions to a crash, meet a
#: recreated topic (resources gone and new ones under the same name), a lossy network
#: (commits rejected or lost) and a coordinator failover.
SCENARIOS = ("rolling-bounce", "crash", "topic-recreated", "lossy-network",
             "coordinator-failover", "slow-member", "partition-added", "scale-out")

#: A workload with small batches and pauses (catch-ups over many batches; pauses leave the
#: step while every resource builds the same backlog); and the lab's field-costs load (busy
#: members, long batches, a warm-up of each new partition: partitions activated one by one
#: at one instant while the batch of the first is in progress).
BUSY = Workload(records_per_s=200, processing_ms=Dist("exponential", 0.5), max_poll_records=50,
                pause_every_ms=20_000, pause_ms=Dist("fixed", 800))
FIELD = Workload(records_per_s=2.5, processing_ms=Dist("fixed", 20), max_poll_records=500,
                 warmup_ms=2_000)


def _run(scenario: str, protocol: str, seed: int, workload: Workload, fast: bool) -> Any:
    sim = build_simulation(scenario, seed, protocol, record_trace=True, workload=workload)
    sim.start()  # (sets the application up; nothing processed yet)
    app = sim.app  # type: ignore[attr-defined]
    app.model.group_ok = fast
    app.fast_commits = fast
    grouped = 0
    if fast:  # (the fast path taken: count the batches with a step inside)
        from groupcoord.sim import workload as w
        orig = w._backlog

        def counting(p: Any, t: float) -> Any:
            nonlocal grouped
            grouped += bool(p._grp)
            return orig(p, t)
        w._backlog = counting  # type: ignore[assignment]
        try:
            sim.advance()
        finally:
            w._backlog = orig  # type: ignore[assignment]
    else:
        sim.advance()
    res = sim.result()
    m = app.model
    raw = (m.totals(), repr(m.processed), repr(m.reprocessed), repr(m.lag_now),
           [(repr(k), repr(r.lag_int), repr(r.hw), repr(r.committed), repr(r.t), repr(r.lag))
            for k, r in m.resources.items()],
           {name: [repr(k) for k in p.active] for name, p in m.processors.items()})
    return res, raw, grouped


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), load=st.sampled_from(["default", "busy", "field"]))
@pytest.mark.parametrize("protocol", ["consumer", "classic"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_work_models_fast_paths_give_the_same_run(scenario: str, protocol: str, seed: int,
                                                      load: str) -> None:
    wl = {"default": DEFAULT_WORKLOAD, "busy": BUSY, "field": FIELD}[load]
    (ra, rawa, _), (rb, rawb, _) = (_run(scenario, protocol, seed, wl, f)
                                          for f in (True, False))
    assert ra.ok == rb.ok and ra.violation == rb.violation
    assert ra.trace == rb.trace
    assert ra.summary == rb.summary
    assert ra.disturbances == rb.disturbances
    assert rawa == rawb


def test_a_rolling_bounce_catches_up_with_steps_inside() -> None:
    """The fast path is the common case of the benchmark's run, not a corner."""
    _, _, grouped = _run("rolling-bounce", "consumer", 1, DEFAULT_WORKLOAD, True)
    assert grouped > 50


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), revoke=st.booleans(), rejected=st.floats(0.0, 0.5),
       at=st.integers(20_000, 200_000))
def test_an_accepted_commit_of_every_owned_partition_commits_its_positions(
        seed: int, revoke: bool, rejected: float, at: int) -> None:
    """``commit_handled`` without a lookup per partition (every partition of the answer
    accepted, the commit naming every owned partition) commits what the lookups commit: an
    auto-commit of the owned set or a revocation's commit of some of them (a few not owned),
    answers accepting all or some partitions (the answer names each partition of the request,
    as the coordinator's does)."""
    sim = build_simulation("rolling-bounce", 1, "consumer", workload=DEFAULT_WORKLOAD)
    sim.start()
    sim.advance(until_ms=at)
    app = sim.app  # type: ignore[attr-defined]
    rng = random.Random(seed)
    procs = [p for p in sim.procs.values()  # type: ignore[attr-defined]
             if p.alive and p.member is not None and p.member.owned]
    if not procs:
        return
    p = rng.choice(procs)
    owned = p.member.owned
    if revoke:
        # the member no longer owns one of the partitions its application still processes
        # (a revocation's commit names the owned ones only): ``parts`` selects a resource
        # the answer does not name
        gone = sorted(owned)[:1] if len(owned) > 1 else []
        p.member.owned = owned = owned - frozenset(gone)
        others = [k for k in app.model.resources if k not in owned]
        parts = frozenset(rng.sample(sorted(owned), rng.randint(1, len(owned)))
                          + rng.sample(others, min(3, len(others))) + gone)
        named = parts & owned
    else:
        parts = named = owned
    resources = list(app.model.resources.values())
    for r in resources:  # (some committed positions behind, some ahead)
        r.committed = rng.uniform(0.0, 2.0) * r.committed
    start = [r.committed for r in resources]
    codes = {k: (0 if rng.random() >= rejected else 22) for k in named}
    response = SimpleNamespace(topics=[
        SimpleNamespace(topic_id=t, partitions=[
            SimpleNamespace(partition_index=i, error_code=codes[(t, i)])
            for i in sorted(i for (u, i) in named if u == t)])
        for t in sorted({t for t, _ in named}, key=str)])
    ends = []
    for fast in (True, False):
        for r, c in zip(resources, start, strict=True):
            r.committed = c
        app.fast_commits = fast
        req = object()
        app.commit_sent(p, req, parts, "revoke" if revoke else "auto")
        app.commit_handled(req, response, set(codes.values()) == {0})
        ends.append([repr(r.committed) for r in resources])
    assert ends[0] == ends[1]


@pytest.mark.parametrize("scenario", ["rolling-bounce", "crash", "lossy-network"])
def test_the_application_forgets_a_commit_once_it_is_answered(scenario: str) -> None:
    """``Application._commits`` holds the commits waiting for an answer, not every commit of
    the run: an answer (accepted or refused) removes its entry, so a long run's memory does
    not grow with its commits. What is left at the end is at most the commits lost in the
    network or sent by a member that died before its answer."""
    sim = build_simulation(scenario, 3, "classic", workload=DEFAULT_WORKLOAD)
    sim.start()
    sim.advance()
    app = sim.app  # type: ignore[attr-defined]
    sent = sim.result().summary.get("commits", 0)
    assert sent > 20
    assert len(app._commits) <= max(5, sent // 20)
