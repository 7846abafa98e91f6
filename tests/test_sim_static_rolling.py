"""Static membership (KIP-345; KIP-848 keeps it) in the simulator's rolling bounce, as Kafka
does it: a static member back within its session timeout gets its assignment back with no
rebalance (KIP-848: it left with epoch -2 and rejoins under its instance id; classic: a known
instance id rejoining a Stable group gets its cached assignment, and a returning leader skips
the assignment, KIP-814); a bounce longer than the session timeout rebalances."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import Scenario, load_scenario


def rolling(static: bool, down_ms: int) -> Scenario:
    sc = load_scenario("rolling-bounce")
    events = tuple(dataclasses.replace(e, params={**e.params, "down_ms": down_ms})
                   for e in sc.events)
    return dataclasses.replace(sc, static=static, events=events)


def bounce_window(sc: Scenario, protocol: str, seed: int) -> dict[str, Any]:
    r = simulate(sc, seed, protocol)
    assert r.ok, r.violation.format() if r.violation else ""
    assert r.summary["spawned"] == 2 * sc.members  # every member restarted once
    return next(d for d in r.disturbances if d["disturbance"] == "rolling-bounce")


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("protocol", ["classic:eager", "consumer:uniform"])
def test_a_static_rolling_bounce_within_the_session_does_not_rebalance(
        protocol: str, seed: int) -> None:
    sc = rolling(static=True, down_ms=3_000)
    assert sc.session_timeout_ms > 3_000
    w = bounce_window(sc, protocol, seed)
    # Every member gets its own partitions back: no new generation, nothing moves, even when
    # the bounced member is the classic leader (KIP-814: it skips the assignment and, as the
    # Java consumer, starts no round of its own).
    assert w["group_epoch_bumps"] == 0 and w["resources_moved"] == 0
    dynamic = bounce_window(rolling(static=False, down_ms=3_000), protocol, seed)
    assert dynamic["group_epoch_bumps"] >= sc.members and dynamic["resources_moved"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_cooperative_static_leader_back_asks_for_one_round_that_moves_nothing(
        seed: int) -> None:
    """The one departure from the Java consumer kept: a cooperative leader back under KIP-814
    asks for a follow-up round (its former incarnation may have left KIP-429's second round
    undone); the round moves nothing."""
    w = bounce_window(rolling(static=True, down_ms=3_000), "classic:cooperative", seed)
    assert w["group_epoch_bumps"] <= 1 and w["resources_moved"] == 0


@pytest.mark.parametrize("protocol", ["classic:eager", "classic:cooperative",
                                      "consumer:uniform"])
def test_a_static_member_down_longer_than_its_session_is_rebalanced_away(protocol: str) -> None:
    sc = rolling(static=True, down_ms=60_000)
    assert sc.session_timeout_ms < 60_000
    w = bounce_window(sc, protocol, 1)
    assert w["group_epoch_bumps"] >= 1 and w["resources_moved"] > 0
