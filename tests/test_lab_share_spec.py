"""The lab's share-group comparison (``src/groupcoord/lab/data/share.toml``): share groups
(KIP-932) against consumer groups (KIP-848) on the same workloads, seeds and scenarios, each run
paired with its control."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from groupcoord.lab.runs import flatten, run_one
from groupcoord.lab.spec import expand, load_spec

SPEC = Path(__file__).parent.parent / "src" / "groupcoord" / "lab" / "data" / "share.toml"


def test_the_share_spec_pairs_share_and_consumer_groups_on_the_same_seeds() -> None:
    runs = expand(load_spec(str(SPEC)))
    assert {r.protocol for r in runs} == {"share:simple", "consumer:uniform",
                                          "consumer:uniform@commit100ms",
                                          # the heartbeat companions (every label at 1 s)
                                          "share:simple@hb1s", "consumer:uniform@hb1s",
                                          # the static companions (KIP-345 static members)
                                          "consumer:uniform@static"}
    by_cell: dict[tuple[object, ...], set[tuple[str, int]]] = {}
    # (the lock grid is share groups' only: a consumer group has no lock, its rows would be
    # the poison workload's)
    assert {r.protocol for r in runs if r.workload == "1x4-poison-lock"} == {"share:simple"}
    # (and the back-off-0 grid consumer groups' only: a share group has no back-off)
    assert {r.protocol for r in runs if r.workload == "1x4-poison-b0"} == {"consumer:uniform"}
    # (and the per-member-load control consumer groups' only at 12 members: the share
    # members' load; at 4 members share-rolling-light runs both, share-rolling at 20 % busy)
    assert {r.protocol for r in runs if r.workload == "1x4-light" and r.size == 12} \
        == {"consumer:uniform"}
    # (and the 10 s lock's grid share groups' only: a consumer group has no lock)
    assert {r.protocol for r in runs if r.workload == "1x4-hot-lock10"} == {"share:simple"}
    assert {r.protocol for r in runs if r.workload == "1x4-hot-lock15"} == {"share:simple"}
    for r in runs:
        if r.workload in ("1x4-poison-lock", "1x4-poison-b0", "1x4-hot-lock10",
                          "1x4-hot-lock15") or (
                r.workload == "1x4-light" and r.size == 12):
            continue
        key = (r.scenario, r.size, r.workload, r.fault_rate, r.replicate)
        by_cell.setdefault(key, set()).add((r.protocol, r.seed))
    # every cell runs both protocols on one seed: the comparison is paired
    assert all(len(v) >= 2 and len({s for _, s in v}) == 1 for v in by_cell.values())
    assert all({"share:simple", "consumer:uniform"} <= {p for p, _ in v}
               for v in by_cell.values())
    assert {r.size for r in runs} == {4, 12} and {r.scenario for r in runs} >= {"crowd-crash"}


def test_a_share_run_and_its_control_are_simulated_step_by_step() -> None:
    runs = expand(load_spec(str(SPEC)))
    run = next(r for r in runs if r.protocol == "share:simple" and r.scenario == "crowd-crash"
               and r.size == 12 and r.fault_rate == 0.0)
    f = flatten(run_one(run))
    assert f["runs"][0]["ok"], f["runs"][0]["invariant"]
    crash = next(d for d in f["disturbances"] if d["disturbance"] == "crash")
    # the control keeps up (its lag is the records in flight), so the crash's excess is real;
    # a control whose clock jumped without its consumers would pile the production up as lag
    assert crash["control_lag_peak"] is not None and crash["control_lag_peak"] < 200
    assert crash["records_processed"] > 0


def test_the_poison_workloads_are_the_clean_one_with_poison_records() -> None:
    spec = load_spec(str(SPEC))
    work = {w.name: json.loads(w.work or "{}") for w in spec.workloads}
    clean = work["1x4-busy"]
    w = dict(work["1x4-poison"])
    # as in the field: a 2 s attempt, 1 s back-off, dead-letter after 5 attempts (the default)
    assert (w.pop("poison_rate"), w.pop("poison_attempt_ms"), w.pop("poison_backoff_ms")) \
        == (0.0002, 2000, 1000)
    assert w == clean  # the same records, rates and processing: only the poison differs
    lock = dict(work["1x4-poison-lock"])
    assert lock.pop("share_lock_duration_ms") == 1500 < 2000  # the attempt outlasts the lock
    assert lock == work["1x4-poison"]
    runs = expand(spec)
    assert {r.workload for r in runs} == set(work)


def test_a_poison_run_meets_its_poison_records_in_both_protocols() -> None:
    runs = expand(load_spec(str(SPEC)))
    picked = [r for r in runs if r.workload == "1x4-poison" and r.scenario == "bounce"
              and r.size == 4 and r.fault_rate == 0.0 and r.replicate == 0]
    assert {r.protocol for r in picked} == {"share:simple", "consumer:uniform"}
    for r in picked:
        f = flatten(run_one(r))
        row = f["runs"][0]
        assert row["ok"], row["invariant"]
        summary = json.loads(row["summary_json"])
        if r.protocol == "share:simple":
            assert summary["share_archived"] > 0
        else:
            assert summary["work"]["poison_skipped"] > 0


def test_an_equal_capacity_workload_runs_beside_the_four_partition_one() -> None:
    """1x12-busy: the same total production and processing as 1x4-busy on 12 partitions, so at
    12 members each protocol works each partition with one member (capacity not confounded
    with protocol); the grid shows the partitions stopped beside the assignment changes."""
    spec = load_spec(str(SPEC))
    by_name = {w.name: w for w in spec.workloads}
    four, twelve = by_name["1x4-busy"], by_name["1x12-busy"]
    w4, w12 = json.loads(four.work or "{}"), json.loads(twelve.work or "{}")
    assert four.partitions * w4.pop("records_per_s") == twelve.partitions * w12.pop("records_per_s")
    assert (four.partitions, twelve.partitions) == (4, 12) and w4 == w12
    cells = {(r.protocol, r.size) for r in expand(spec) if r.workload == "1x12-busy"}
    assert cells >= {("share:simple", 12), ("consumer:uniform", 12)}
    # its own grid: a grid whose workloads differ in rate per partition reads as a sweep of it
    grids = {g.name: g for g in spec.grids}
    assert [w.name for w in grids["equal-capacity"].workloads] == ["1x12-busy"]
    assert "1x12-busy" not in [w.name for w in grids["share"].workloads]
    for grid in grids.values():
        assert {"resources_moved", "resource_downtime_ms", "records_reprocessed"} <= set(
            grid.metrics)
        # a rolling bounce's time to converge is its schedule's length: not a metric there
        assert ("convergence_ms" in grid.metrics) == ("rolling-bounce" not in grid.scenarios)


def test_the_consumer_group_also_commits_at_a_matched_cadence() -> None:
    """Records processed twice after a crash are what a consumer group processed since its
    last commit: the equal-capacity grid runs it at its 5 s default and at 100 ms (an
    application that commits each batch) on the same seeds, beside the share group."""
    from groupcoord.lab.runs import build_scenario

    spec = load_spec(str(SPEC))
    grids = {g.name: g for g in spec.grids}
    assert grids["equal-capacity"].protocols == ("share:simple", "consumer:uniform",
                                                 "consumer:uniform@commit100ms")
    assert "crowd-crash" in grids["equal-capacity"].scenarios
    runs = [r for r in expand(spec) if r.workload == "1x12-busy" and r.scenario == "crowd-crash"
            and r.size == 4 and r.replicate == 0]
    by = {r.protocol: r for r in runs}
    assert by["consumer:uniform"].seed == by["consumer:uniform@commit100ms"].seed
    assert build_scenario(by["consumer:uniform"]).commit_interval_ms == 5_000
    assert build_scenario(by["consumer:uniform@commit100ms"]).commit_interval_ms == 100
    # each rolling bounce in a grid of its own: no time to converge there
    rolling = [g for g in grids.values() if "rolling-bounce" in g.scenarios]
    assert rolling and all(g.scenarios == ("rolling-bounce",) for g in rolling)


def test_a_crash_at_three_members_per_partition_reaches_the_lock_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock-limit grid: at 100 records/s a partition the crashed member's locked records
    hold the share-partition start offset 30 s, and 2,000 offsets on (Kafka's
    group.share.partition.max.record.locks) the partition stops for its other members too;
    without the limit they go on."""
    from dataclasses import replace

    import groupcoord.sim.share as share

    spec = load_spec(str(SPEC))
    grids = {g.name: g for g in spec.grids}
    assert grids["lock-limit"].scenarios == ("crowd-crash",) and grids["lock-limit"].sizes == (12,)
    run = next(r for r in expand(spec) if r.workload == "1x4-fast" and r.replicate == 0
               and r.protocol == "share:simple")
    limited = flatten(run_one(run))["runs"][0]
    assert limited["ok"], limited["invariant"]
    of_group = share.ShareConfig.of_group

    def unlimited(*args: object, **kw: object) -> object:
        return replace(of_group(*args, **kw), max_record_locks=10**9)  # type: ignore[arg-type]

    monkeypatch.setattr(share.ShareConfig, "of_group", staticmethod(unlimited))
    free = flatten(run_one(run))["runs"][0]
    assert free["ok"], free["invariant"]
    # the stop: seconds of the partition's production pile up (100 records/s)
    assert limited["lag_peak"] > 500 and limited["lag_record_s"] > 2_000
    assert free["lag_peak"] < 50 and free["lag_record_s"] < 500
    # partitions stopped counts the partition held at the limit (records there, none can be
    # delivered) though its members fetch it: from 20 s into the 30 s lock until it expires
    assert 9_000 <= limited["resource_downtime_ms"] <= 11_000
    assert free["resource_downtime_ms"] == 0


def test_the_bounces_timings_are_drawn_per_seed_off_the_heartbeat() -> None:
    """The share grids' bounce downtime and rolling-bounce spacing are drawn per seed from the
    ranges the spec states (``[draw]``), one value per run shared by its control, recorded in
    the runs table (``drawn_json``); a fresh confirmation seed set doubles every cell."""
    from groupcoord.lab.runs import build_scenario
    from groupcoord.lab.verdict import bounce_down_ms, bounce_spacing_ms

    spec = load_spec(str(SPEC))
    # (the back-off-0 columns run one set: they only compare the consumer group's back-off,
    # their description says so; every marked share-against-consumer grid has both sets)
    one_set = {"poison-backoff0", "poison-backoff0-rolling"}
    # (the lost-host cells run 20 + 20: test_the_lost_host_cells_run_enough_seeds_...)
    assert spec.confirm_seeds == 5
    # (the grids a numbered sentence rests on run 10 + 10:
    # test_the_grids_a_numbered_sentence_rests_on_run_10_and_10_seeds)
    ten = {"equal-capacity-rolling", "share-rolling", "lock-rate-owner-kill",
           "equal-capacity-rolling-hb1s", "share-rolling-hb1s",
           "equal-capacity-rolling-static", "share-rolling-static", "share-rolling-light"}
    twenty = {"lock-rate-owner", "lock-rate-owner-lock10", "lock-rate-owner-lock15"}
    assert all(g.confirm_seeds == (0 if g.name in one_set else 20 if g.name in twenty
                                   else 10 if g.name in ten else 5) for g in spec.grids)
    runs = [r for r in expand(spec) if r.scenario in ("bounce", "rolling-bounce")
            and r.protocol == "share:simple" and r.workload == "1x4-busy" and r.size == 4]
    drawn: dict[str, set[int]] = {"down_ms": set(), "interval_ms": set()}
    for r in runs:
        sc = build_scenario(r)
        assert build_scenario(r).drawn == sc.drawn  # a function of the seed
        (ev,) = sc.events
        for key, value in sc.drawn:
            assert ev[key] == value
            drawn[key].add(value)
        if r.scenario == "bounce":
            assert 6000 <= ev["down_ms"] <= 14000
        else:
            assert 2000 <= ev["down_ms"] <= 10000 and 12000 <= ev["interval_ms"] <= 18000
        # the report's heartbeat-multiple limit reads no one value from a drawn scenario
        assert bounce_down_ms(r.as_row()) is None
        if r.scenario == "rolling-bounce":
            assert bounce_spacing_ms(r.as_row()) is None
    assert len(drawn["down_ms"]) > 10  # one value a run, hardly ever the same twice
    assert not all(v % 5000 == 0 for v in drawn["down_ms"] | drawn["interval_ms"])
    run = next(r for r in runs if r.scenario == "bounce")
    row = flatten(run_one(run))["runs"][0]
    assert json.loads(row["drawn_json"]) == {"down_ms": dict(build_scenario(run).drawn)["down_ms"]}


def test_a_draw_outside_what_a_scenario_can_draw_is_a_one_line_error() -> None:
    from groupcoord.sim.scenario import ScenarioError, parse_scenario

    base = {"events": [{"at_ms": 1, "kind": "bounce", "member": "c1"}]}
    for draw, msg in (({"at_ms": [1, 2]}, "draws down_ms, interval_ms"),
                      ({"down_ms": [3, 2]}, "above high"),
                      ({"down_ms": 5}, "expected [low, high]")):
        with pytest.raises(ScenarioError, match=re.escape(msg)) as e:
            parse_scenario({**base, "draw": draw}, source="s.toml")
        assert "\n" not in str(e.value)


def test_a_poison_block_at_the_first_event_is_the_workloads_steady_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of the poison workload whose partition stands at a poison record, or catches up
    after one, when the first disturbance comes is caught up (the control meets the same
    records): the rule asks the group's convergence, the warm-up drained the initial join's
    backlog (the clean twin on the same seed caught up by the ordinary rule). Render 12 left
    this run out."""
    from groupcoord.sim.engine import INITIAL_JOIN, Simulation

    ordinary: list[bool] = []
    new_rule = Simulation.is_caught_up

    def spy(self: Simulation) -> bool:
        ordinary.append(self.converged_at is not None and not any(
            w.label == INITIAL_JOIN for w in (*self._open, *self._closing))
            and self.work_recovered())
        return new_rule(self)

    monkeypatch.setattr(Simulation, "is_caught_up", spy)
    runs = expand(load_spec(str(SPEC)))
    pick = {r.workload: r for r in runs if r.protocol == "consumer:uniform"
            and r.scenario == "rolling-bounce" and r.size == 4 and r.replicate == 3}
    poison = flatten(run_one(pick["1x4-poison"]))["runs"][0]
    assert poison["ok"] and poison["caught_up"] is True
    assert ordinary == [False]  # the ordinary rule: a backlog at the first event
    clean = flatten(run_one(pick["1x4-busy"]))["runs"][0]
    assert clean["ok"] and clean["caught_up"] is True and ordinary == [False, True]


def test_the_back_off_0_column_is_the_poison_workload_on_the_same_seeds() -> None:
    """The consumer group on 1x4-poison with its back-off at 0 (the poison-backoff0 grid) runs
    on the seeds of its 1 s twin in the share grid: only the back-off differs, so the page
    can put the two columns side by side."""
    spec = load_spec(str(SPEC))
    work = {w.name: json.loads(w.work or "{}") for w in spec.workloads}
    b0, b1 = dict(work["1x4-poison-b0"]), dict(work["1x4-poison"])
    assert (b0.pop("poison_backoff_ms"), b1.pop("poison_backoff_ms")) == (0, 1000)
    assert b0 == b1
    runs = expand(spec)
    seeds = {(r.scenario, r.size, r.replicate): r.seed for r in runs
             if r.workload == "1x4-poison" and r.protocol == "consumer:uniform"}
    zero = [r for r in runs if r.workload == "1x4-poison-b0"]
    assert {r.scenario for r in zero} == {"crowd-crash", "bounce", "rolling-bounce"}
    assert zero and all(seeds[(r.scenario, r.size, r.replicate)] == r.seed for r in zero)


def test_the_owner_grids_crash_and_kill_a_partition_owner_in_both_groups() -> None:
    """owner-crash and owner-kill: the target a member that holds a partition at the event,
    for both group types, on the share grid's workloads and sizes (and the lock-rate one)."""
    spec = load_spec(str(SPEC))
    grids = {g.name: g for g in spec.grids}
    assert set(grids["owner"].scenarios) == {"owner-crash", "owner-kill"}
    assert set(grids["owner"].workloads) == set(grids["share"].workloads)
    for name, kind in (("owner-crash", "crash"), ("owner-kill", "kill"),
                       ("crowd-crash", "crash")):
        events = spec.inline[name]["events"]
        assert [e["kind"] for e in events] == [kind]
        assert events[0]["member"] == ("c1" if name == "crowd-crash" else "@owner")
    runs = expand(spec)
    cells = {(r.scenario, r.size, r.workload, r.protocol) for r in runs
             if r.scenario in ("owner-crash", "owner-kill")}
    assert {(s, n, w) for s, n, w, _ in cells} >= {
        (s, n, w) for s in ("owner-crash", "owner-kill") for n in (4, 12)
        for w in ("1x4-busy", "1x4-poison")}
    # the owner grid runs the consumer group at its client's 5 s auto-commit and at 100 ms (an
    # application committing each batch), so a mark on records processed twice shows whether
    # it rests on the commit interval
    assert {p for s, n, w, p in cells if w in ("1x4-busy", "1x4-poison")} == {
        "share:simple", "consumer:uniform", "consumer:uniform@commit100ms"}
    # the lock-rate cells run at 80 records/s a partition and at a production rate, 300
    assert {w for s, n, w, _ in cells if w not in ("1x4-busy", "1x4-poison", "1x4-light")
            and not w.startswith("1x12")} == {"1x4-busy80", "1x4-hot", "1x4-hot-lock10",
                                              "1x4-hot-lock15"}
    # and every 4-partition owner workload's load on 12 partitions, at 12 members only (the
    # same members with a partition each: owner-equal)
    work = {w.name: w for w in spec.workloads}
    for w4, w12 in (("1x4-busy", "1x12-busy"), ("1x4-busy80", "1x12-busy80"),
                    ("1x4-hot", "1x12-hot")):
        assert (work[w4].partitions, work[w12].partitions) == (4, 12)
        a, b = (json.loads(work[w].work or "{}") for w in (w4, w12))
        assert b.pop("records_per_s") * 12 == pytest.approx(a.pop("records_per_s") * 4,
                                                            rel=1e-3)
        assert a == b
        assert {(s, n, p) for s, n, w, p in cells if w == w12} == {
            (s, 12, p) for s in ("owner-crash", "owner-kill")
            for p in ("share:simple", "consumer:uniform")}


def test_a_killed_owner_releases_its_records_where_a_crashed_one_stops_the_partition() -> None:
    """lock-rate-owner at 12 members, replicate 0, share group: the crashed owner's locked
    records hold the share-partition start offset until the lock limit stops the partition for
    its two other members; the killed owner's are released with its connection, nothing stops."""
    spec = load_spec(str(SPEC))
    by = {r.scenario: r for r in expand(spec) if r.workload == "1x4-busy80"
          and r.size == 12 and r.replicate == 0 and r.protocol == "share:simple"
          and r.scenario in ("owner-crash", "owner-kill")}
    crash = flatten(run_one(by["owner-crash"]))["runs"][0]
    kill = flatten(run_one(by["owner-kill"]))["runs"][0]
    assert crash["ok"] and kill["ok"], (crash["invariant"], kill["invariant"])
    assert crash["resource_downtime_ms"] > 1_000 and crash["lag_peak"] > 100
    assert kill["resource_downtime_ms"] == 0 and kill["lag_peak"] < 50


def test_the_lost_host_cells_run_enough_seeds_for_their_stall_rate() -> None:
    """A lost host stops its partition at the lock limit where it holds acquired records:
    owner-crash at 12 on 1x4-hot and 1x4-busy80 runs 20 seeds and 20 fresh ones, their first
    10 the seeds they had at 5 + 5; the killed owner's cells (its records are released on
    close) run 10 + 10, their grid carrying a numbered sentence. The grid's description says
    why a lost host holds records on nearly
    every seed (the model serves the ShareFetch it left waiting, as Kafka's broker completes a
    waiting share fetch when records arrive), and at what wait it strands nothing (the
    model's max wait), never "a draw per seed"."""
    from groupcoord.sim.share_convergence import FETCH_MAX_WAIT_MS
    runs = expand(load_spec(str(SPEC)))
    # (the kill's 10 + 10 since its grid carries a numbered sentence)
    for scenario, want in (("owner-crash", 40), ("owner-kill", 20)):
        for w in ("1x4-hot", "1x4-busy80"):
            for p in ("share:simple", "consumer:uniform"):
                reps = sorted(r.replicate for r in runs if (r.scenario, r.size, r.workload,
                                                           r.protocol) == (scenario, 12, w, p))
                assert reps == list(range(want)), (scenario, w, p, reps)
    spec = load_spec(str(SPEC))
    g = next(g for g in spec.grids if g.name == "lock-rate-owner")
    assert (g.seeds, g.confirm_seeds, g.scenarios) == (20, 20, ("owner-crash",))
    text = " ".join(g.description.split())
    assert "a draw per seed" not in text and "draw" not in text
    assert "serves the ShareFetch it left waiting at the broker" in text
    assert f"answered empty after its max wait ({FETCH_MAX_WAIT_MS} ms)" in text
    # the same seeds as every other cell's replicates (drawn per cell and replicate, not grid)
    hot = {r.replicate: r.seed for r in runs if (r.scenario, r.workload, r.protocol)
           == ("owner-crash", "1x4-hot", "share:simple")}
    kill = {r.replicate: r.seed for r in runs if (r.scenario, r.workload, r.protocol)
            == ("owner-kill", "1x4-hot", "share:simple")}
    assert len(set(hot.values())) == 40 and set(kill) <= set(hot)


def test_the_share_specs_words_say_what_the_page_has_and_what_the_poison_back_off_is() -> None:
    """The spec's head does not say "one grid" (the share comparison runs in several); the
    poison workload is not "as in the field": its 5 attempts 1 s apart are said to be kinder to
    the consumer group than Spring Kafka's DefaultErrorHandler default (10 attempts, no
    back-off); poison-lock's negative records processed twice (crowd-crash at 4) is said to be
    the control's own churn under a lock shorter than the attempt."""
    spec = load_spec(str(SPEC))
    head = " ".join(spec.description.split())
    assert "one grid" not in head and len(spec.grids) > 1
    share = " ".join(next(g for g in spec.grids if g.name == "share").description.split())
    assert "as in the field" not in share
    assert ("kinder to the consumer group than Spring Kafka's DefaultErrorHandler default of 10 "
            "attempts with no back-off") in share
    lock = " ".join(next(g for g in spec.grids if g.name == "poison-lock").description.split())
    assert "negative records processed twice" in lock and "the control's own churn" in lock


def test_the_grids_a_numbered_sentence_rests_on_run_10_and_10_seeds() -> None:
    """The eleventh outside share review: sentence 1's ★ (downtime, 5 + 5 seeds) was a ☆ at 20
    seeds. The grids the numbered sentences rest on, and their heartbeat companions (the same
    cells and seeds), run 10 seeds and 10 fresh ones: 280 runs more than at 5 + 5."""
    import tomllib

    grids = {g["name"]: g for g in tomllib.loads(SPEC.read_text())["grid"]}
    for name in ("equal-capacity-rolling", "share-rolling", "lock-rate-owner-kill",
                 "equal-capacity-rolling-hb1s", "share-rolling-hb1s",
                 "equal-capacity-rolling-static", "share-rolling-static"):
        assert grids[name].get("seeds") == 10 and grids[name].get("confirm_seeds") == 10, name


def test_the_lever_and_load_grids_rerun_their_parents_seeds() -> None:
    """lock-rate-owner-lock10 is lock-rate-owner's 1x4-hot lost host with a 10 s record lock,
    on the same seeds (the thirteenth outside share review's control A), and
    share-rolling-light share-rolling's 4-on-4 rolling bounce at 20 % busy on the same seeds
    and drawn timings (its control B)."""
    spec = load_spec(str(SPEC))
    work = {w.name: json.loads(w.work or "{}") for w in spec.workloads}
    hot = dict(work["1x4-hot-lock10"])
    assert hot.pop("share_lock_duration_ms") == 10_000 and hot == work["1x4-hot"]
    runs = expand(spec)

    def seeds(scenario: str, size: int, workload: str, protocol: str) -> list[int]:
        return sorted(r.seed for r in runs if (r.scenario, r.size, r.workload, r.protocol)
                      == (scenario, size, workload, protocol))

    lever = seeds("owner-crash", 12, "1x4-hot-lock10", "share:simple")
    assert len(lever) == 40 and lever == seeds("owner-crash", 12, "1x4-hot", "share:simple")
    for p in ("share:simple", "consumer:uniform"):
        light = seeds("rolling-bounce", 4, "1x4-light", p)
        assert len(light) == 20 and light == seeds("rolling-bounce", 4, "1x4-busy", p)
