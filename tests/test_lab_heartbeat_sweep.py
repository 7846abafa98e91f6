"""The heartbeat interval swept in the paper spec (docs/lab.md, "Round 12"): an ``@hb1s`` label
runs the members' heartbeat every second (classic consumers, Connect workers on either group
type, KIP-848 consumers), the task-times and crossover grids carry the 1 s columns, and the
report's heartbeat condition reads what the 1 s interval does to the eager-versus-cooperative
gap from those columns; the 3-worker stop-time edge has its own grid."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.lab.mechanism import (
    crossover_heartbeat_wait,
    heartbeat_gap_clause,
    heartbeat_gap_detail,
    with_heartbeat_condition,
)
from groupcoord.lab.runs import build_scenario, simulate_run
from groupcoord.lab.spec import expand, load_spec, restrict
from groupcoord.lab.verdict import claims, grid_verdicts, is_companion, swept_timing

_HB = re.compile(r"^\s*(?P<t>\d+)\s+\d+\s+hb>\s+(?P<member>\S+)")

#: A cell of the paper spec per family whose grid now carries the ``@hb1s`` column, and the
#: family's default interval (``sim.settings.FIELD_SETTINGS``).
CELLS = [
    ("crossover-10ms", "classic:cooperative", "scale-out", "1x32-p10ms-30pct", 8, 3000),
    ("crossover-20ms", "consumer:uniform", "scale-out", "1x32-p20ms-30pct", 8, 5000),
    ("kip415-task-times", "classic-connect:sessioned", "kip415-worker-joins", "16x8c-task10ms",
     12, 3000),
    ("kip415-task-times", "connect:cooperative", "kip415-worker-joins", "16x8c-task10ms", 12,
     3000),
]


def _beat_gaps(trace: list[str]) -> list[int]:
    """The time between a member's consecutive heartbeat requests, over every member."""
    last: dict[str, int] = {}
    gaps: list[int] = []
    for line in trace:
        m = _HB.match(line)
        if m is None:
            continue
        t, who = int(m["t"]), m["member"]
        if who in last:
            gaps.append(t - last[who])
        last[who] = t
    return gaps


@pytest.mark.parametrize(("grid", "protocol", "scenario", "workload", "size", "default"), CELLS)
def test_an_hb1s_label_beats_every_second_in_the_simulator(
        grid: str, protocol: str, scenario: str, workload: str, size: int, default: int) -> None:
    spec = load_spec("paper")
    grids = {x.name: x for x in spec.grids}
    assert protocol in grids[grid].protocols
    assert f"{protocol}@hb1s" in grids[f"{grid}-hb1s"].protocols
    run = next(r for r in expand(restrict(spec, scenarios=[scenario], sizes=[size],
                                          workloads=[workload], protocols=[protocol]))
               if r.replicate == 0)
    medians = {}
    for label in (protocol, f"{protocol}@hb1s"):
        params = replace(run, protocol=label, events=True)
        sc = build_scenario(params)
        res = simulate_run(params, sc)
        assert res.ok, res.violation
        gaps = _beat_gaps(res.trace)
        assert len(gaps) > 20, label
        medians[label] = statistics.median(gaps)
    # the members' own timers, not only the setting: the usual gap between two beats of a
    # member is the interval (a rebalance's responses restart a timer, so some are shorter)
    assert medians[protocol] == pytest.approx(default, abs=100)
    assert medians[f"{protocol}@hb1s"] == pytest.approx(1000, abs=100)


def test_the_paper_spec_sweeps_the_interval_where_the_gaps_are() -> None:
    spec = load_spec("paper")
    grids = {g.name: g for g in spec.grids}
    # each parent grid's cells again at 1 s, in a grid of its own (the same cells and seeds)
    for name, ps in (("kip415-task-times", ("classic-connect:eager", "classic-connect:sessioned",
                                            "connect:eager", "connect:cooperative")),
                     ("crossover-10ms", ("classic:eager", "classic:cooperative",
                                         "consumer:uniform")),
                     ("crossover-20ms", ("classic:eager", "classic:cooperative",
                                         "consumer:uniform")),
                     ("field-costs", ("classic:eager", "classic:cooperative",
                                      "consumer:uniform"))):
        parent, hb1 = grids[name], grids[f"{name}-hb1s"]
        assert set(hb1.protocols) == {f"{p}@hb1s" for p in ps} and set(ps) <= set(
            parent.protocols)
        assert (hb1.scenarios, hb1.sizes, hb1.workloads, hb1.seeds, hb1.confirm_seeds,
                hb1.question) == (parent.scenarios, parent.sizes, parent.workloads,
                                  parent.seeds, parent.confirm_seeds, parent.question)
    # every grid where a classic eager protocol can win against an incremental one, again
    # with the classic members' heartbeat phases spread after each join by the measured 1 s
    # and the worst 3 s (the same cells and seeds; judged per spread)
    bases = ("classic:eager", "classic:eager-roundrobin", "classic:cooperative",
             "consumer:uniform")
    for name in ("crossover-10ms", "crossover-20ms", "field-costs", "lateness", "lateness-scale-out"):
        parent, spread = grids[name], grids[f"{name}-hbspread"]
        assert set(spread.protocols) == {f"{p}@hbspread{s}s" for p in bases for s in (1, 3)}
        assert set(bases) <= set(parent.protocols)
        assert (spread.scenarios, spread.sizes, spread.workloads, spread.seeds,
                spread.confirm_seeds) == (parent.scenarios, parent.sizes, parent.workloads,
                                          parent.seeds, parent.confirm_seeds)
        assert swept_timing(spread.protocols) == "heartbeat_spread_ms"
    edge = grids["kip415-stop-edge"]
    assert edge.sizes == (3,) and edge.scenarios == ("kip415-worker-joins",)
    assert set(edge.protocols) == {"classic-connect:eager", "classic-connect:sessioned"}
    assert edge.seeds == 5 and edge.confirm_seeds == 5
    stops = defaultdict(set)
    for wl in edge.workloads:
        assert wl.work is not None
        stops[wl.name].add(re.search(r'"task_stop_ms":\s*(\d+)', wl.work).group(1))  # type: ignore[union-attr]
    assert sorted(int(next(iter(v))) for v in stops.values()) == [700, 900, 1000, 1100, 1300]


EAGER, SESSIONED = "classic-connect:eager", "classic-connect:sessioned"
TT_GRID = {"name": "kip415-task-times", "protocols": [EAGER, SESSIONED, f"{EAGER}@hb1s",
                                                      f"{SESSIONED}@hb1s"],
           "scenarios": ["kip415-worker-joins"], "metrics": ["task_downtime_task_s"],
           "seeds": 5}

#: Task downtime per column and workload: the reviewer's controls at 1 s tasks (sessioned
#: 60.9 at 3 s, 20.9 at 1 s; eager 9.8 at both), a cell where sessioned already wins.
DOWNTIME = {"16x8c-task1s": {EAGER: 9.8, SESSIONED: 60.9, f"{EAGER}@hb1s": 9.8,
                             f"{SESSIONED}@hb1s": 20.9},
            "16x8c-task5s": {EAGER: 900.0, SESSIONED: 300.0, f"{EAGER}@hb1s": 880.0,
                             f"{SESSIONED}@hb1s": 260.0},
            "16x8c-task10ms": {EAGER: 2.0, SESSIONED: 40.0, f"{EAGER}@hb1s": 2.0,
                               f"{SESSIONED}@hb1s": 1.5}}


def _tt_runs() -> list[dict[str, Any]]:
    rows = []
    for wl, cols in DOWNTIME.items():
        for p, v in cols.items():
            hb = 1000 if p.endswith("@hb1s") else 3000
            for s in range(5):
                rows.append({"run_id": f"{p}-{wl}-{s}", "protocol": p,
                             "scenario": "kip415-worker-joins", "size": 12, "members": 12,
                             "workload": wl, "fault_rate": 0.0, "seed": s, "ok": True,
                             "caught_up": True, "noop_events": 0,
                             "settings_json": json.dumps({"heartbeat.interval.ms": hb}),
                             "task_downtime_task_s": v + 0.01 * s})
    return rows


def test_condition_b_reads_what_the_1s_interval_does_to_the_gap_from_the_runs() -> None:
    """Round 12: condition (b) said the interval "was not swept"; with the @hb1s columns it
    says, from their medians, where eager led at 3 s, whether it still does at 1 s and how
    much of the gap is left, and the widest cell's four medians."""
    verdicts = grid_verdicts({"spec": "paper", "grids": [TT_GRID]}, _tt_runs())
    text = heartbeat_gap_clause(verdicts)
    assert "not swept" not in text
    # eager led in the 1 s-task and 10 ms-task cells; at 1 s it still leads in the first
    # only: its lead 51.1 + 38 = 89.1 task·s at 3 s, 11.1 - 0.5 = 10.6 at 1 s
    assert ("classic-connect:sessioned against classic-connect:eager, 1 s beside 3 s "
            "(kip415-task-times, 3 cells, task downtime, medians): classic-connect:eager costs "
            "less at 3 s in 2 and still at 1 s in 1, its lead over those 2 summed: 89.1 task·s "
            "at 3 s and 10.6 task·s at 1 s") in text, text
    # the cell by cell detail is the note under the conditions (the condition stays short)
    assert text.endswith("(detail in the note under these conditions)")
    detail = heartbeat_gap_detail(verdicts)
    assert ("classic-connect:sessioned against classic-connect:eager: the 1 s interval lowers "
            "classic-connect:sessioned's in 3 of 3 cells and classic-connect:eager's in 1"
            ) in detail
    assert "(the widest, kip415-worker-joins, 12 workers, 16x8c-task1s: 60.9 task·s against " \
           "9.82 task·s at 3 s, 20.9 task·s against 9.82 task·s at 1 s)" in detail
    assert "the widest" not in text and "lowers" not in text


def test_without_1s_columns_condition_b_still_says_not_swept() -> None:
    grid = {**TT_GRID, "protocols": [EAGER, SESSIONED]}
    runs = [r for r in _tt_runs() if "@" not in r["protocol"]]
    text = heartbeat_gap_clause(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))
    assert "; no shorter interval was run for them (not swept); " in text
    # the phase the model assumes, and which the wire measured and when (round 14)
    assert ("; the model restarts every classic member's heartbeat timer at the join, so all "
            "learn of the next rebalance at the same beat") in text
    assert ("on the wire, real classic members' heartbeats stayed aligned through an eager "
            "rolling bounce, within 0.094 s of one another (medians: Java 0.022 s, librdkafka "
            "0.005 s); at the first rebalance after 5 to 35 min stable they learned of a join "
            "up to 1.098 s apart") in text


XO = ["classic:eager", "classic:cooperative", "consumer:uniform", "classic:eager@hb1s",
      "classic:cooperative@hb1s", "consumer:uniform@hb1s"]
#: Excess lag (record·s) per column at 10, 15 and 20 % busy (records/s over 8 partitions a
#: member, 10 ms each; keyed 20, 30, 40): eager wins at the first two at the
#: default intervals; at 1 s the cooperative protocols pay a fraction of it (the reviewer's
#: controls: classic:cooperative 255 against 30, consumer:uniform 230 at 5 s against 9).
XO_LAG = {20: {"classic:eager": 2.0, "classic:cooperative": 255.0, "consumer:uniform": 230.0,
               "classic:eager@hb1s": 2.0, "classic:cooperative@hb1s": 30.0,
               "consumer:uniform@hb1s": 9.0},
          30: {"classic:eager": 3.0, "classic:cooperative": 245.0, "consumer:uniform": 170.0,
               "classic:eager@hb1s": 3.0, "classic:cooperative@hb1s": 20.0,
               "consumer:uniform@hb1s": 1.0},
          40: {"classic:eager": 900.0, "classic:cooperative": 250.0, "consumer:uniform": 200.0,
               "classic:eager@hb1s": 800.0, "classic:cooperative@hb1s": 25.0,
               "consumer:uniform@hb1s": 8.0}}


def _xo_runs() -> list[dict[str, Any]]:
    out = []
    for pct, cols in XO_LAG.items():
        for p, v in cols.items():
            consumer = p.startswith("consumer")
            hb = 1000 if p.endswith("@hb1s") else (5000 if consumer else 3000)
            key = "group.consumer.heartbeat.interval.ms" if consumer else "heartbeat.interval.ms"
            for s in range(5):
                out.append({"run_id": f"{p}-{pct}-{s}", "protocol": p, "scenario": "scale-out",
                            "size": 8, "members": 8, "workload": f"1x32-p10ms-{pct}pct",
                            "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
                            "noop_events": 0, "settings_json": json.dumps({key: hb}),
                            "total_partitions": 32, "lag_record_s": v + 0.01 * s,
                            "work": json.dumps({"records_per_s": pct / 8,
                                                "processing_ms": 10})})
    return out


def test_eagers_crossover_win_says_how_much_of_the_losers_cost_is_the_heartbeat_wait() -> None:
    """Round 12, S7: eager's crossover win is "true but misleading in size": the loser's cost
    is mostly the heartbeat wait. The sentence's condition reads it from the 1 s columns,
    over the loads where eager is marked best."""
    grid = {"name": "crossover-10ms", "protocols": XO[:3], "scenarios": ["scale-out"],
            "metrics": ["lag_record_s"], "seeds": 5}
    hb1 = {**grid, "name": "crossover-10ms-hb1s", "protocols": XO[3:]}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid, hb1]}, _xo_runs())
    (c,) = [c for c in claims(verdicts) if c.grid == "crossover-10ms"]
    assert c.head and "classic:eager" in c.text
    wait = crossover_heartbeat_wait(c, verdicts)
    assert wait.startswith("the heartbeat wait in eager's win (crossover-10ms, scale-out, the "
                           "members' load 10, 15 % busy, where eager is marked best): with the "
                           "members' heartbeat at 1 s")
    # 30 + 20 = 50 against 255 + 245 = 500 (90 % less); 9 + 1 = 10 against 230 + 170 = 400
    assert ("is classic:cooperative 50 record·s against 500 record·s at 3 s (90 % less), "
            "consumer:uniform 10 record·s against 400 record·s at 5 s (97.5 % less)") in wait
    assert "eager's own: classic:eager 5.04 record·s against 5.04 record·s at 3 s" in wait
    # at 15 % busy consumer:uniform at 1 s (1 record·s) is below eager at 1 s (3)
    assert wait.endswith("at 1 s an eager protocol's median (classic:eager) is still the "
                         "lowest at 1 of those 2 values")
    found = with_heartbeat_condition([c], verdicts)[0]
    assert wait in found.conditions


def test_the_split_cells_note_says_where_the_stop_time_edge_lies_from_the_sweep() -> None:
    """Round 12: the 3-worker sessioned join is 162 or 330 task·s by seed, three task stops
    of about 1 s against the 3 s heartbeat. With the stop time swept around it (the
    kip415-stop-edge grid), the split cell's note says per stop time which outcome the seeds
    took and between which stop times the edge lies; the 1 s point that a second workload
    runs on the same seeds counts once."""
    from groupcoord.lab.mechanism import split_branch_cause

    def run(wl: str, seed: int, stop: float | None, v: float) -> dict[str, Any]:
        r = {"run_id": f"{wl}-{seed}", "protocol": SESSIONED, "scenario": "kip415-worker-joins",
             "size": 3, "workload": wl, "seed": seed, "ok": True, "task_restarts": 50.0,
             "task_start_ms": 1000.0, "task_downtime_task_s": v,
             "settings_json": json.dumps({"heartbeat.interval.ms": 3000,
                                          "start.stop.threads": 8})}
        if stop is not None:
            r["task_stop_ms"] = stop
        return r

    split = {s: (162.0 + 0.1 * s if s % 2 else 330.0 + 0.1 * s) for s in range(10)}
    runs = [run("16x8c", s, None, v) for s, v in split.items()]
    runs += [run("16x8c-task1s", s, 1000.0, v) for s, v in split.items()]
    for stop, base in ((700.0, 180.0), (900.0, 168.0), (1100.0, 325.0), (1300.0, 313.0)):
        runs += [run(f"16x8c-stop{int(stop)}ms", s, stop, base + 0.1 * s) for s in range(10)]
    said = split_branch_cause("kip415-worker-joins", 3, SESSIONED, runs, workload="16x8c")
    assert said.startswith("each of the 3 old workers stops about 17 tasks, 8 at a time, so "
                           "its revocation takes about 3 stops of 1 s, 3 s"), said
    assert "not swept" not in said
    assert ("the stop time swept at these workers (the same seeds, task start 1 s): "
            "700 ms 180 task·s on 10 of 10 seeds (low); 900 ms 168 task·s on 10 of 10 seeds "
            "(low); 1 s 162 task·s on 5 and 330 task·s on 5 of 10 seeds; 1.1 s 325 task·s on "
            "10 of 10 seeds (high); 1.3 s 313 task·s on 10 of 10 seeds (high): the edge lies "
            "between 900 ms and 1.1 s of stop time (3 stops: 2.7 s and 3.3 s of revocation)"
            ) in said, said
    # the cell alone: as before
    alone = split_branch_cause("kip415-worker-joins", 3, SESSIONED, runs[:10], workload="16x8c")
    assert alone.endswith("the stop time was not swept around this edge in these runs")


def test_a_companion_grids_finding_joins_its_parents_sentence_only() -> None:
    """A grid of @hb1s columns beside its parent (the same cells) gets no sentence of its own:
    where the parent has none for a scenario, the companion's crossover is not on the page
    (it would push another grid's sentence off it); where the parent has one, it joins it."""
    grid = {"name": "crossover-10ms", "protocols": XO[:3], "scenarios": ["scale-out"],
            "metrics": ["lag_record_s"], "seeds": 5}
    hb1 = {**grid, "name": "crossover-10ms-hb1s", "protocols": XO[3:]}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid, hb1]}, _xo_runs())
    assert is_companion(verdicts[1], verdicts) and not is_companion(verdicts[0], verdicts)
    (c,) = claims(verdicts)
    assert "[crossover-10ms]" in c.text and "[crossover-10ms-hb1s]" in c.text
    alone = grid_verdicts({"spec": "paper", "grids": [hb1]}, _xo_runs())
    assert not is_companion(alone[0], alone) and claims(alone)
    # the parent without a crossover sentence for the scenario (eager best nowhere)
    # (all three default columns alike: no mark, no sentence for the parent)
    flat = [{**r, "lag_record_s": 100.0 + r["seed"]} if "@" not in r["protocol"] else r
            for r in _xo_runs()]
    one = grid_verdicts({"spec": "paper", "grids": [grid, hb1]}, flat)
    assert is_companion(one[1], one)
    # the parent's question is still answered ("no difference"), the companion adds nothing
    (only,) = claims(one)
    assert only.grid == "crossover-10ms" and "no difference" in only.text
    assert "crossover-10ms-hb1s" not in only.text


def test_condition_b_says_the_crash_cells_it_leaves_out() -> None:
    """Outside review round 13: condition (b) summed the rolling-bounce and scale-out cells
    and silently left out the crash cells (nobody revokes there) where eager costs more; it
    now says how many it leaves out and eager's excess there, from the runs."""
    lags = {"scale-out": {"classic:eager": 5.0, "classic:cooperative": 300.0,
                          "classic:eager@hb1s": 4.0, "classic:cooperative@hb1s": 30.0},
            "crash": {"classic:eager": 5_000.0, "classic:cooperative": 4_000.0,
                      "classic:eager@hb1s": 4_800.0, "classic:cooperative@hb1s": 3_900.0}}
    runs = []
    for scen, cols in lags.items():
        for p, v in cols.items():
            hb = 1000 if p.endswith("@hb1s") else 3000
            for s in range(5):
                runs.append({"run_id": f"{p}-{scen}-{s}", "protocol": p, "scenario": scen,
                             "size": 8, "members": 8, "workload": "1x32-p10ms-20pct",
                             "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
                             "noop_events": 0,
                             "settings_json": json.dumps({"heartbeat.interval.ms": hb}),
                             "total_partitions": 32, "lag_record_s": v + 0.01 * s,
                             "work": json.dumps({"records_per_s": 2.5, "processing_ms": 10})})
    grid = {"name": "crossover-10ms", "protocols": list(lags["crash"]),
            "scenarios": ["scale-out", "crash"], "metrics": ["lag_record_s"], "seeds": 5}
    text = heartbeat_gap_clause(grid_verdicts({"spec": "paper", "grids": [grid]}, runs))
    assert "(crossover-10ms, 1 cells, excess lag, medians): classic:eager costs less at 3 s " \
           "in 1" in text, text
    assert ("left out: 1 crash cell (nobody revokes), where classic:eager costs more in 1, "
            "by 1,000 record·s at 3 s") in text, text


def test_a_swept_value_whose_runs_never_caught_up_is_not_tested_not_a_tie() -> None:
    """Outside review round 13, S5: a cell where 4 of 5 seeds of a protocol never caught up
    read "no protocol separated"; it is untested, and the sentence says so."""
    start = {"16x8c-task1s": 1000, "16x8c-task5s": 5000, "16x8c-task10ms": 10}
    # 5 seeds and 5 fresh; at 1 s tasks 2 of the first 5 never caught up (the row keeps 3)
    runs = [{**r, "run_id": f"{r['run_id']}-{k}", "seed": r["seed"] + 5 * k,
             "replicate": r["seed"] + 5 * k,
             "work": json.dumps({"task_start_ms": start[r["workload"]]}),
             "caught_up": not (r["workload"] == "16x8c-task1s" and k == 0
                               and r["seed"] in (2, 3))}
            for k in (0, 1) for r in _tt_runs()]
    grid = {**TT_GRID, "confirm_seeds": 5}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    # the render's row counts its seeds over every grid's runs of the cell (5), its cells
    # keep the 3 that caught up
    row = next(r for r in verdicts[0].rows if r.workload == "16x8c-task1s")
    assert row.metrics[0].verdict == "few seeds"
    row.seeds = 5
    (c,) = [c for c in claims(verdicts) if c.grid == "kip415-task-times"]
    said = " ".join((c.text, *c.caveats, *(n for _, _, n in c.movable)))
    assert "not tested at 1,000 ms" in said, said
    assert "3 of 5 seeds" in said, said
    assert "no protocol separated from all the rest at 1,000 ms" not in said, said
