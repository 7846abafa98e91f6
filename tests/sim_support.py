"""Checks shared by the simulator's tests (``tests/test_sim_*.py``): one run is clean, a range
of random seeds keeps every invariant, a seed always gives the same trace.

Each protocol's test module keeps its own parameters (variants, seeds per variant, chunk size)
and calls these; what a failure prints is the violation with its reproduce command."""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.sim.engine import SimResult
from groupcoord.sim.runner import simulate


def ok(r: SimResult) -> SimResult:
    """The run, after asserting it kept every invariant (else its violation is the message)."""
    assert r.ok, r.violation.format() if r.violation else ""
    return r


def assert_seeds_keep_every_invariant(protocol: str, seeds: Iterable[int],
                                      scenario: str = "random") -> None:
    """Every seed of ``seeds`` runs clean; all the violations are reported at once."""
    failures = [r.violation.format() for seed in seeds
                if (r := simulate(scenario, seed, protocol)).violation is not None]
    assert not failures, "\n\n".join(failures)


def assert_same_seed_same_trace(protocol: str, seed: int = 11, other: int = 12) -> None:
    """Two runs of one seed give the same trace and summary; another seed another trace."""
    a = simulate("random", seed, protocol, record_trace=True)
    b = simulate("random", seed, protocol, record_trace=True)
    c = simulate("random", other, protocol, record_trace=True)
    assert a.trace and a.trace == b.trace and a.summary == b.summary
    assert a.trace != c.trace
