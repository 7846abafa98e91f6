"""The share page's rolling bounces beside a consumer group with static members (KIP-345,
``group.instance.id``; KIP-848 keeps it): ``consumer:uniform@static`` runs the share grids'
rolling bounce with the consumer members static, on the same seeds and the same drawn spacing
and downtime as share:simple and the dynamic consumer:uniform (share groups have no static
membership, KIP-932)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


# --------------------------------------------------------------------------- the sentences

def _static_grids(static_down: list[float]) -> list[Any]:
    from groupcoord.lab.findings import Metric
    from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge

    share, kip848 = "share:simple", "consumer:uniform"
    down = Metric("resource_downtime_ms", "resource downtime", "resource·s", scale=1000.0,
                  floor=500.0)

    def row(values: dict[str, list[float]]) -> Any:
        return VerdictRow("rolling-bounce", 12, "1x12-busy", 0.0, 5, [judge(
            {p: Cell(dict(enumerate(v))) for p, v in values.items()}, down)])

    share_down = [26_685, 24_810, 25_554, 32_384, 35_027]
    parent = row({share: share_down, kip848: [62_600, 51_862, 60_000, 65_000, 69_609]})
    companion = row({share: share_down, STATIC: static_down})
    return [GridVerdict("equal-capacity-rolling", "", [share, kip848], [down], [parent],
                        10, 0, 0, 5),
            GridVerdict("equal-capacity-rolling-static", "", [share, STATIC], [down],
                        [companion], 10, 0, 0, 5)]


def _sentences(verdicts: list[Any]) -> list[Any]:
    import json

    from groupcoord.lab.share_marks import family_key, share_claims
    from groupcoord.lab.verdict import claims

    work = {"max_poll_records": 100, "processing_ms": {"dist": "exponential", "mean": 10},
            "records_per_s": 20}
    runs = [{"protocol": p, "scenario": "rolling-bounce", "size": 12, "workload": "1x12-busy",
             "seed": s, "ok": True, "total_partitions": 12, "fault_rate": 0.0,
             "settings_json": "{}", "work": json.dumps(work)}
            for p in ("share:simple", "consumer:uniform", STATIC) for s in range(5)]
    found = claims(verdicts, family_of=family_key(runs))
    return share_claims(found, claims(verdicts, limit=100), verdicts, runs)


def test_the_rolling_sentence_says_the_win_survives_static_consumers() -> None:
    from groupcoord.lab.verdict import claim_candidates

    verdicts = _static_grids([70_000, 71_000, 72_000, 73_000, 74_000])
    # the static companion gives no sentence of its own: its reading joins its parent's
    assert claim_candidates(verdicts) == claim_candidates(verdicts[:1])
    (c,) = _sentences(verdicts)
    assert c.grid == "equal-capacity-rolling"
    assert ("Against static consumer members (KIP-345; equal-capacity-rolling-static, the same "
            "seeds): ★ share:simple, 26.7 against 72 resource·s: the win survives."
            ) in c.text, c.text


def test_the_rolling_sentence_says_static_consumers_reverse_the_win() -> None:
    (c,) = _sentences(_static_grids([10_000, 11_000, 12_000, 13_000, 14_000]))
    assert ("Against static consumer members (KIP-345; equal-capacity-rolling-static, the same "
            "seeds): ★ consumer:uniform@static, 26.7 against 12 resource·s: static membership "
            "reverses it.") in c.text, c.text


def test_the_rolling_sentence_says_a_tie_with_static_consumers_ends_the_win() -> None:
    (c,) = _sentences(_static_grids([20_000, 40_000, 26_000, 30_000, 24_000]))
    assert "26.7 against 26 resource·s: the win does not survive." in c.text, c.text


def test_the_page_says_what_the_static_label_is() -> None:
    from groupcoord.lab.report import timing_text

    text = timing_text(STATIC, share=True)
    assert text.startswith("consumer:uniform with static members (KIP-345: group.instance.id")
    assert " s " not in text and "instead of" not in text


def test_the_model_limits_name_the_static_label_as_a_static_rolling_bounce() -> None:
    """"What the model leaves out" no longer says static membership is not run where a
    ``@static`` label runs the rolling bounce: it names the label."""
    from groupcoord.lab.limits import model_limits

    spec = parse_spec({"name": "t", "protocols": ["consumer:uniform", STATIC],
                       "scenarios": ["rolling-bounce"], "sizes": [3], "seeds": 1})
    text = "\n".join(model_limits([{**p.as_row(), "ok": True} for p in expand(spec)]))
    line = text.split("Static membership")[1].split("\n")[0]
    assert "not run" not in line
    assert f"static members too (rolling-bounce as {STATIC}: each back within its session " \
        "timeout keeps its partitions with no rebalance)" in line


def test_the_static_clause_prints_the_companion_cells_final_mark() -> None:
    """The companion's first set separates the ranges but a fresh static seed falls inside
    share's range (the page's 12 on 12: static 30.8 s against share 36.6 s), so its table and
    chart show ☆ (the union of both sets); the sentence's clause says ☆ too, never ★."""
    from groupcoord.lab.verdict import Cell, confirm, judge, mark_words

    verdicts = _static_grids([70_000, 71_000, 72_000, 73_000, 74_000])
    mv = verdicts[1].rows[0].metrics[0]
    fresh = judge({"share:simple": Cell(dict(enumerate([28_000, 29_000, 36_600, 30_000, 31_000,
                                                        27_000, 29_500, 30_500, 28_500,
                                                        29_800]))),
                   STATIC: Cell(dict(enumerate([30_800, 75_000, 80_000, 82_000, 90_000, 78_000,
                                                85_000, 79_000, 81_000, 88_000])))},
                  mv.metric)
    confirmed = confirm(mv, fresh)
    verdicts[1].rows[0].metrics[0] = confirmed
    assert mark_words(confirmed) == "☆ share:simple"
    (c,) = _sentences(verdicts)
    assert ("Against static consumer members (KIP-345; equal-capacity-rolling-static, the same "
            "seeds): ☆ share:simple, 26.7 against 72 resource·s: the win survives."
            ) in c.text, c.text
