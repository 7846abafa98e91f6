"""Random scenarios in CI (docs/simulator.md: 500 random seeds per protocol in CI without a
violation). Each seed draws its own group, topics, membership (static or not, names or regex),
network (latency, loss, lost responses, duplicates, reordering) and a schedule of up to five
disturbances of every kind; invariants I1-I6 are checked after every step. A failure message
carries the command that reproduces it.

Measured on the 2-core CI machine: ~15-30 ms per seed, so the 1,500 runs take ~25-45 s; they
are split in chunks so a failure points at a small range of seeds.
"""

from __future__ import annotations

import pytest

from groupcoord.sim.scenario import EVENT_KINDS, random_scenario

from .sim_support import assert_seeds_keep_every_invariant

SEEDS_PER_PROTOCOL = 500
CHUNK = 50
PROTOCOLS = ["consumer:uniform", "consumer:range", "consumer:client"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("first", range(0, SEEDS_PER_PROTOCOL, CHUNK))
def test_random_seeds_keep_every_invariant(protocol: str, first: int) -> None:
    assert_seeds_keep_every_invariant(protocol, range(first, first + CHUNK))


@pytest.mark.parametrize("seed", [6333, 6791])
def test_duplicated_heartbeat_with_its_first_answer_lost_regressions(seed: int) -> None:
    """Found by the 500-2999 sweep (I5, consumer:uniform): a duplicated heartbeat's first answer,
    the one with the assignment, was lost and the second delivered (``sim.network``)."""
    assert_seeds_keep_every_invariant("consumer:uniform", [seed])


def test_random_scenarios_cover_every_disturbance_kind() -> None:
    kinds = {e.kind for seed in range(SEEDS_PER_PROTOCOL) for e in random_scenario(seed).events}
    assert kinds == set(EVENT_KINDS)
    assert any(random_scenario(s).static for s in range(50))
    assert any(random_scenario(s).regex for s in range(50))
    assert any(random_scenario(s).faults.any for s in range(50))


def test_random_scenario_is_a_function_of_the_seed() -> None:
    assert random_scenario(42) == random_scenario(42)
    assert random_scenario(42) != random_scenario(43)
