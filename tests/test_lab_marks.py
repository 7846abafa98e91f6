"""What a mark means to an operator (review round 5): floors relative to the group's
throughput, every classic eager mark on stall, lag or time to converge with its limit (one
member late at the rebalance, from a busy-member grid's ``-slowNms`` variants), a mark won
against KIP-415's configured delay said in the table, and a Connect grid's task downtime and
stall labelled as the task-time input times the restarts."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.report import _label, _verdict_word
from groupcoord.lab.verdict import claims, grid_verdicts

EAGER, COOP, KIP848 = "classic:eager", "classic:cooperative", "consumer:uniform"


def _row(protocol: str, scenario: str, seed: int, workload: str = "4x250", size: int = 10,
         **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "members": size,
            "workload": workload, "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "total_partitions": 32,
            "work": '{"records_per_s": 5}', **cols}


def _grid(name: str, scenarios: list[str], protocols: list[str], workload: str = "4x250",
          metrics: tuple[str, ...] = ("lag_record_s",)) -> dict[str, Any]:
    return {"name": name, "protocols": protocols, "scenarios": scenarios, "sizes": [10],
            "workloads": [workload], "metrics": list(metrics), "seeds": 5, "question": name}


def test_the_lag_floor_is_a_tenth_of_a_second_of_the_groups_production() -> None:
    """160 records/s (32 partitions x 5): eager's 0.1-0.9 record·s against 31.5-40 is a
    separation (the floor is 16 record·s, where an absolute 100 record·s made it a tie)."""
    rows = [_row(EAGER, "scale-out", s, lag_record_s=0.1 + 0.2 * s) for s in range(5)]
    rows += [_row(COOP, "scale-out", s, lag_record_s=31.5 + 2 * s) for s in range(5)]
    (g,) = grid_verdicts({"grids": [_grid("g", ["scale-out"], [EAGER, COOP])]}, rows)
    (mv,) = g.rows[0].metrics
    assert mv.metric.floor == 16.0
    assert mv.verdict == "best" and mv.best == (EAGER,)
    # 10 x 10 records/s: a 0.9 record·s difference is under the floor of 10
    near = [{**r, "lag_record_s": r["lag_record_s"] * 0.02} for r in rows]
    (g,) = grid_verdicts({"grids": [_grid("g", ["scale-out"], [EAGER, COOP])]}, near)
    assert g.rows[0].metrics[0].verdict != "best"


def _busy_rows(flip_at: int | None) -> list[dict[str, Any]]:
    """Eager best in the plain bounce; with a member late by 500 ms still best, by 2000 ms
    worst (or at every lateness, flip_at None)."""
    out = []
    for late in (0, 500, 2000):
        scenario = "bounce" if not late else f"bounce-slow{late}ms"
        eager_bad = flip_at is not None and late >= flip_at
        for s in range(5):
            out.append(_row(EAGER, scenario, s, lag_record_s=(9000 if eager_bad else 10) + s))
            out.append(_row(COOP, scenario, s, lag_record_s=800 + s))
    return out


def test_every_eager_mark_says_where_it_stops_holding() -> None:
    grids = [_grid("consumers", ["bounce"], [EAGER, COOP]),
             _grid("busy", ["bounce", "bounce-slow500ms", "bounce-slow2000ms"], [EAGER, COOP]),
             _grid("other", ["scale-out"], [EAGER, COOP])]
    rows = _busy_rows(flip_at=2000)
    rows += [_row(EAGER, "scale-out", s, lag_record_s=1 + s) for s in range(5)]
    rows += [_row(COOP, "scale-out", s, lag_record_s=900 + s) for s in range(5)]
    consumers, busy, other = grid_verdicts({"grids": grids}, rows)
    (mv,) = consumers.rows[0].metrics
    assert mv.limit == ("holds only while no member is 2 s late at the rebalance (busy: 10 "
                        "members, 4x250)")
    assert _verdict_word(mv).startswith("★ best; holds only while no member is 2 s late")
    # the variant rows themselves carry no limit; a scenario never measured says so
    assert all(not r.metrics[0].limit for r in busy.rows if "slow" in r.scenario)
    assert other.rows[0].metrics[0].limit == "not tested with a member late at the rebalance"
    (c, *_) = [c for c in claims([consumers]) if c.scenario == "bounce"]
    assert "Eager's mark holds only while no member is 2 s late at the rebalance" in c.text
    # a mark that holds at every lateness tried says how far it was tried
    consumers, _, _ = grid_verdicts({"grids": grids}, _busy_rows(flip_at=None) + rows[-10:])
    assert consumers.rows[0].metrics[0].limit.startswith(
        "holds with one member up to 2 s late at the rebalance")


def test_a_win_against_a_configured_delay_says_so_in_the_table() -> None:
    settings = '{"scheduled.rebalance.max.delay.ms": 30000}'
    eager, sessioned = "classic-connect:eager", "classic-connect:sessioned"
    rows = [_row(eager, "worker-leaves-d30s", s, workload="16x8c",
                 task_downtime_task_s=280.0 + s, stall_ms=2020, settings_json="{}") for s in range(5)]
    rows += [_row(sessioned, "worker-leaves-d30s", s, workload="16x8c",
                  task_downtime_task_s=379.0 + s, stall_ms=0, settings_json=settings) for s in range(5)]
    grid = _grid("task-times", ["worker-leaves-d30s"], [eager, sessioned], "16x8c",
                 ("task_downtime_task_s", "stall_ms"))
    (g,) = grid_verdicts({"grids": [grid]}, rows)
    mv = g.rows[0].metrics[0]
    assert mv.best == (eager,)
    assert "won against classic-connect:sessioned's configured " \
           "scheduled.rebalance.max.delay.ms (30 s), by design" in _verdict_word(mv)
    assert _label(g, mv.metric).endswith(" *")
    assert _label(g, g.metrics[1]).endswith(" *")
    from groupcoord.lab.report import _metrics_line
    assert "* = the task-time input x restarts" in _metrics_line(g)


def test_a_tested_cell_without_an_eager_mark_is_not_called_untested() -> None:
    """The busy grid's plain cell has no eager mark (a tie): another size's eager mark says the
    lateness was tried where eager had no mark, not that it was never tried."""
    rows = []
    for late in (0, 500):
        scenario = "bounce" if not late else f"bounce-slow{late}ms"
        for s in range(5):
            rows.append(_row(EAGER, scenario, s, lag_record_s=500 + s))
            rows.append(_row(COOP, scenario, s, lag_record_s=501 + s))
    rows += [_row(EAGER, "bounce", s, size=30, lag_record_s=1 + s) for s in range(5)]
    rows += [_row(COOP, "bounce", s, size=30, lag_record_s=900 + s) for s in range(5)]
    grids = [{**_grid("consumers", ["bounce"], [EAGER, COOP]), "sizes": [10, 30]},
             _grid("busy", ["bounce", "bounce-slow500ms"], [EAGER, COOP])]
    consumers, _ = grid_verdicts({"grids": grids}, rows)
    (big,) = [r for r in consumers.rows if r.size == 30]
    assert big.metrics[0].limit == ("not tested with a member late at the rebalance at this "
                                    "size (busy: 10 members, 4x250 has no eager mark even "
                                    "with none late)")


def test_the_polls_line_claims_no_wait_from_the_partitions_downtime() -> None:
    """Full polls of 10 s, eager's partitions down 0.4 s each in the scale-out: the line once
    concluded from the downtime that no rebalance waited on a long poll, which the eighteenth
    outside review found wrong (the stall and the downtime cannot see a barrier wait; the
    lateness column can: ``test_lab_round18``). Without a lateness column the line says the
    poll's length and makes no claim about waits."""
    from groupcoord.lab.mechanism import mechanisms

    settings = {p: {"heartbeat.interval.ms": 3000, "session.timeout.ms": 45000}
                for p in (EAGER, COOP)}

    def run(p: str, scenario: str, per_ms: float) -> dict[str, Any]:
        return {**_row(p, scenario, 0), "resources_moved": 10,
                "resource_downtime_ms": 10 * per_ms, "total_topics": 1,
                "work_model": "3.5 rec/s, 20 ms/rec, max.poll.records 500"}

    runs = [run(EAGER, "scale-out", 400), run(COOP, "scale-out", 3000),
            run(EAGER, "crash", 30_000), run(COOP, "crash", 44_000)]
    polls = mechanisms([EAGER, COOP], settings, runs)[-1]
    assert "takes 10 s, longer than a 3 s heartbeat" in polls
    assert "waited" not in polls and "at most 400 ms" not in polls


def test_near_zero_medians_on_a_linear_axis_are_printed(tmp_path: Any,
                                                         saved_figures: list[Any]) -> None:
    """The crossover scale-out panel: eager at 0.1-0.5 record·s beside 100-300 reads as zero
    on a linear axis, so its medians are printed at its points (the others' are not)."""
    from groupcoord.lab.report import grid_charts, protocol_styles

    rows = []
    for x, (e, c) in zip((20.0, 30.0, 40.0), ((0.1, 100.0), (0.2, 180.0), (0.5, 300.0)),
                         strict=True):
        rate = 32 * x / 100 / 0.02 / 32 * 8  # records/s per partition at x % busy, 8 members
        for s in range(5):
            for p, v in ((EAGER, e), (COOP, c)):
                rows.append({**_row(p, "scale-out", s, workload=f"p{int(x)}", size=8),
                             "work": f'{{"records_per_s": {rate / 8}, "processing_ms": 20}}',
                             "lag_record_s": v + 0.01 * s})
    grid = {**_grid("crossover", ["scale-out"], [EAGER, COOP]), "sizes": [8],
            "workloads": ["p20", "p30", "p40"]}
    (g,) = grid_verdicts({"grids": [grid]}, rows)
    assert g.parameter is not None
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert ax.get_yscale() == "linear"
    # the medians printed, beside the tables' marks (★ at each marked cell)
    assert sorted(t.get_text() for t in ax.texts if t.get_text() not in ("★", "☆")) == [
        "0.12", "0.22", "0.52"]
    assert [t.get_text() for t in ax.texts].count("★") == 3


def test_an_eager_mark_holds_while_eager_stays_among_the_marked_best() -> None:
    """Plain: eager alone best; one member 0.5 s late: eager tied for the best (= with
    cooperative, both beating KIP-848); 2 s late: cooperative alone. The limit is 2 s."""
    rows = []
    for late, (e, c) in ((0, (10, 800)), (500, (300, 301)), (2000, (9000, 800))):
        scenario = "bounce" if not late else f"bounce-slow{late}ms"
        for s in range(5):
            rows += [_row(EAGER, scenario, s, lag_record_s=e + s),
                     _row(COOP, scenario, s, lag_record_s=c + s),
                     _row(KIP848, scenario, s, lag_record_s=5000 + s)]
    grids = [_grid("busy", ["bounce", "bounce-slow500ms", "bounce-slow2000ms"],
                   [EAGER, COOP, KIP848])]
    (busy,) = grid_verdicts({"grids": grids}, rows)
    (plain,) = [r for r in busy.rows if r.scenario == "bounce"]
    (half,) = [r for r in busy.rows if r.scenario == "bounce-slow500ms"]
    assert half.metrics[0].verdict == "tied" and EAGER in half.metrics[0].best
    assert plain.metrics[0].limit.startswith("holds only while no member is 2 s late")


def test_connect_time_until_balanced_is_marked_as_the_task_time_input() -> None:
    """Round 6: worker-leaves-d0 at 12 workers, sessioned balanced in 3 s against eager's 4 s,
    which is the 1 s task stop (with a 0 s stop both take 2.49 s). The table keeps the ★ but
    marks the metric * as containing the task-time input, and no sentence rests on it; the
    grid's other marks still get their sentences."""
    eager, sessioned = "classic-connect:eager", "classic-connect:sessioned"
    rows = [_row(eager, "worker-leaves-d0", s, workload="16x8c", size=12,
                 task_restarts=40 + s, time_to_balance_ms=4000 + 10 * s, settings_json="{}")
            for s in range(5)]
    rows += [_row(sessioned, "worker-leaves-d0", s, workload="16x8c", size=12,
                  task_restarts=8 + s, time_to_balance_ms=3000 + 10 * s,
                  settings_json='{"scheduled.rebalance.max.delay.ms": 0}') for s in range(5)]
    grid = {**_grid("kip415", ["worker-leaves-d0"], [eager, sessioned], "16x8c",
                    ("task_restarts", "time_to_balance_ms")), "sizes": [12]}
    (g,) = grid_verdicts({"grids": [grid]}, rows)
    restarts, balanced = g.rows[0].metrics
    assert balanced.verdict == "best" and balanced.best == (sessioned,)
    assert restarts.verdict == "best" and restarts.best == (sessioned,)
    assert _label(g, balanced.metric).endswith(" *")
    assert not _label(g, restarts.metric).endswith(" *")
    from groupcoord.lab.report import _metrics_line
    assert "* on time until balanced = contains the task-time input" in _metrics_line(g)
    said = claims([g])
    assert [c.metric for c in said] == ["task_restarts"]
    assert all("time until balanced" not in c.text for c in said)


def test_consumer_metrics_carry_no_task_time_mark() -> None:
    """The * is a Connect grid's: a consumer grid's lag has no task times in it."""
    rows = [_row(EAGER, "scale-out", s, lag_record_s=0.1 + 0.2 * s) for s in range(5)]
    rows += [_row(COOP, "scale-out", s, lag_record_s=31.5 + 2 * s) for s in range(5)]
    (g,) = grid_verdicts({"grids": [_grid("g", ["scale-out"], [EAGER, COOP])]}, rows)
    assert not _label(g, g.metrics[0]).endswith("*")
    assert [c.metric for c in claims([g])] == ["lag_record_s"]


def test_a_log_panel_says_its_gaps_are_ratios(tmp_path: Any, saved_figures: list[Any]) -> None:
    """Outside review round 13: the mixed linear-then-log axis drew 80x-1,000x gaps as bars
    2-4x apart; the axis label says that a gap on it is a ratio. (A grid that sweeps a
    parameter keeps one linear scale instead: test_lab_round14; this grid compares sizes.)"""
    from groupcoord.lab.report import grid_charts, protocol_styles

    rows = []
    for size, (e, c) in zip((4, 8, 16), ((2_000.0, 9e6), (2_100.0, 8e6), (2_200.0, 7e6)),
                            strict=True):
        for s in range(5):
            for p, v in ((EAGER, e), (COOP, c)):
                rows.append({**_row(p, "scale-out", s, workload="p20", size=size),
                             "work": '{"records_per_s": 20.0, "processing_ms": 20}',
                             "lag_record_s": v + 0.01 * s})
    grid = {**_grid("sizes", ["scale-out"], [EAGER, COOP]), "sizes": [4, 8, 16],
            "workloads": ["p20"]}
    (g,) = grid_verdicts({"grids": [grid]}, rows)
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    (ax,) = [a for a in fig.axes if a.get_visible()]
    assert ax.get_yscale() == "symlog"
    label = " ".join(ax.get_ylabel().split())
    assert "logarithmic above: each tick step a factor, a gap between points a ratio" in label
