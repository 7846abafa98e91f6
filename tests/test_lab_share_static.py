"""The share page's rolling bounces beside a consumer group with static members (KIP-345,
``group.instance.id``; KIP-848 keeps it): ``consumer:uniform@static`` runs the share grids'
rolling bounce with the consumer members static, on the same seeds and the same drawn spacing
and downtime as share:simple and the dynamic consumer:uniform (share groups have no static
membership, KIP-932)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.lab.runs import flatten, run_one
from groupcoord.lab.spec import SpecError, expand, load_spec, parse_spec
from groupcoord.sim.scenario import load_scenario
from groupcoord.sim.settings import split_timing, with_field_settings

SPEC = Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data" / "share.toml"
STATIC = "consumer:uniform@static"


def test_the_static_variant_makes_the_members_static_and_nothing_else() -> None:
    assert split_timing(STATIC) == ("consumer:uniform", {"static": 1})
    sc = load_scenario("rolling-bounce", 1)
    assert not sc.static
    dyn = with_field_settings(sc, "consumer:uniform")
    stat = with_field_settings(sc, STATIC)
    assert stat.static is True and dyn.static is False
    assert stat.heartbeat_interval_ms == dyn.heartbeat_interval_ms
    assert stat.session_timeout_ms == dyn.session_timeout_ms


def test_a_share_group_has_no_static_variant() -> None:
    # KIP-932: share groups have no static membership
    with pytest.raises(SpecError, match="static"):
        parse_spec({"name": "x", "protocols": ["share:simple@static"],
                    "scenarios": ["rolling-bounce"]}).resolved_protocols()


def test_the_static_companions_run_the_share_rolling_cells_on_their_seeds() -> None:
    spec = load_spec(str(SPEC))
    grids = {g.name: g for g in spec.grids}
    for parent, companion in (("share-rolling", "share-rolling-static"),
                              ("equal-capacity-rolling", "equal-capacity-rolling-static")):
        p, c = grids[parent], grids[companion]
        assert c.protocols == ("share:simple", STATIC)
        assert (c.scenarios, c.sizes, [w.name for w in c.workloads], c.seeds,
                c.confirm_seeds) == (p.scenarios, p.sizes, [w.name for w in p.workloads],
                                     p.seeds, p.confirm_seeds)
    runs = expand(spec)
    seeds: dict[tuple[object, ...], set[int]] = {}
    for r in runs:
        if r.scenario == "rolling-bounce" and r.workload in ("1x4-busy", "1x4-poison",
                                                            "1x12-busy"):
            seeds.setdefault((r.size, r.workload, r.replicate, r.protocol), set()).add(r.seed)
    static = {k: v for k, v in seeds.items() if k[3] == STATIC}
    assert len(static) == 2 * 2 * 20 + 2 * 20  # 10 + 10 seeds a cell, 6 cells
    for (size, wl, rep, _), s in static.items():
        assert s == seeds[(size, wl, rep, "share:simple")] == seeds[(size, wl, rep,
                                                                   "consumer:uniform")]


@pytest.mark.parametrize("size", [4, 12])
def test_a_static_member_back_within_its_session_moves_nothing(size: int) -> None:
    """The rolling bounce's members are each down 2-10 s, inside the 45 s session: a static
    member comes back to its own partitions with no rebalance (resources moved 0), the dynamic
    group on the same seed and drawn timings moves partitions at each bounce."""
    runs = [r for r in expand(load_spec(str(SPEC))) if r.scenario == "rolling-bounce"
            and r.size == size and r.workload == "1x4-busy" and r.replicate == 0]
    got = {}
    for proto in (STATIC, "consumer:uniform"):
        f = flatten(run_one(next(r for r in runs if r.protocol == proto)))
        row = f["runs"][0]
        assert row["ok"], row["invariant"]
        got[proto] = row
    assert got[STATIC]["drawn_json"] == got["consumer:uniform"]["drawn_json"]
    assert got[STATIC]["resources_moved"] == 0
    assert got["consumer:uniform"]["resources_moved"] > 0
