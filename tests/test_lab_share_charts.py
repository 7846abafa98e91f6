"""The share page's charts (``lab.report.grid_charts``): a share grid's two group sizes are two
setups (one member per partition; three share members per partition against one consumer and
idle ones), not a trend, so nothing joins them; a split cell's minority seeds are drawn above
every protocol's marker and aside from it; the records-processed-twice panel says the
consumer's figure is set by its commit interval; the colour key names share groups."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.verdict import grid_verdicts

SHARE, KIP848 = "share:simple", "consumer:uniform"


def _row(protocol: str, seed: int, size: int, **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": "crowd-crash", "size": size, "members": size,
            "workload": "1x4-busy", "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "total_partitions": 4,
            "work": '{"records_per_s": 60}', **cols}


def _grid() -> Any:
    rows = []
    for size in (4, 12):
        for s in range(10):
            # at 12 the consumer's crash hits an idle member on 8 of 10 seeds: a split cell
            consumer = 2_800.0 + s if size == 4 or s < 2 else 0.0
            rows += [_row(SHARE, s, size, lag_peak=3_900.0 + s if size == 4 else float(s % 3),
                          records_reprocessed=0.0),
                     _row(KIP848, s, size, lag_peak=consumer, records_reprocessed=200.0 + s)]
    grid = {"name": "share", "protocols": [SHARE, KIP848], "scenarios": ["crowd-crash"],
            "sizes": [4, 12], "workloads": ["1x4-busy"], "seeds": 10, "question": "share",
            "metrics": ["lag_peak", "records_reprocessed"]}
    (g,) = grid_verdicts({"grids": [grid]}, rows)
    return g


def test_a_share_grids_sizes_are_markers_not_a_line(tmp_path: Any,
                                                     saved_figures: list[Any]) -> None:
    from matplotlib.collections import PathCollection, PolyCollection

    from groupcoord.lab.report import grid_charts, protocol_styles

    g = _grid()
    grid_charts(g, tmp_path, protocol_styles(g.protocols))
    (fig,) = saved_figures
    peak, twice = [a for a in fig.axes if a.get_visible()]
    for ax in (peak, twice):
        lines = [ln for ln in ax.get_lines() if ln.get_label() in (SHARE, KIP848)]
        assert lines and all(ln.get_linestyle() == "None" for ln in lines)
        assert not [c for c in ax.collections if isinstance(c, PolyCollection)]  # no band
        assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "12"]
    # the consumer's split cell at 12: its seeds are dots above every median marker, and
    # aside from the share group's marker at 12
    dots = [c for c in peak.collections if isinstance(c, PathCollection)]
    assert dots and all(c.get_zorder() > max(ln.get_zorder() for ln in peak.get_lines())
                        for c in dots)
    share_x = {x for ln in peak.get_lines() if ln.get_label() == SHARE
               for x in ln.get_xdata() if x > 8}
    assert share_x and not share_x & {float(x) for c in dots for x, _ in c.get_offsets()}
    assert "commit interval" in twice.get_title()
    assert "commit interval" not in peak.get_title()


def test_the_chart_legend_names_share_groups() -> None:
    from groupcoord.lab.report import LEGEND_FAMILIES

    assert LEGEND_FAMILIES.get("share") == "KIP-932 share groups"


def test_a_kill_chart_sets_its_lost_host_beside_it() -> None:
    """The tenth outside share review: no chart set the lost host and the kill of 1x4-hot at
    12 side by side; the kill chart's caption does, from the crash grid's medians."""
    from groupcoord.lab.findings import Metric
    from groupcoord.lab.report import _chart_groups, kill_crash_caption
    from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge

    peak = Metric("lag_peak", "peak consumer lag", "records", floor=10.0)
    down = Metric("resource_downtime_ms", "resource downtime", "resource·s", scale=1000.0,
                  floor=1000.0)
    share, kip848 = "share:simple", "consumer:uniform"

    def row(scenario: str, peaks: tuple[list[float], list[float]],
            downs: tuple[list[float], list[float]]) -> VerdictRow:
        mvs = [judge({p: Cell(dict(enumerate(v))) for p, v in zip((share, kip848), vals,
                                                                 strict=True)}, m)
               for m, vals in ((peak, peaks), (down, downs))]
        return VerdictRow(scenario, 12, "1x4-hot", 0.0, 5, mvs)

    kill = GridVerdict("lock-rate-owner-kill", "", [share, kip848], [peak, down],
                       [row("owner-kill", ([3, 2, 7, 3, 4], [13_121] * 5),
                            ([0] * 5, [43_700] * 5))], 10, 0, 0, 5)
    crash = GridVerdict("lock-rate-owner", "", [share, kip848], [peak, down],
                        [row("owner-crash", ([7_046] * 5, [13_526] * 5),
                             ([23_400] * 5, [45_100] * 5))], 10, 0, 0, 5)
    (key, rows), = _chart_groups(kill).items()
    cap = kill_crash_caption(kill, [kill, crash], key, rows)
    assert "excess lag peak: killed share:simple 3 against consumer:uniform 13,121; lost " \
           "host share:simple 7,046 against consumer:uniform 13,526 records" in cap, cap
    assert "resource downtime: killed share:simple 0 against consumer:uniform 43.7; lost " \
           "host share:simple 23.4 against consumer:uniform 45.1 resource·s" in cap, cap
    (key, rows), = _chart_groups(crash).items()
    assert kill_crash_caption(crash, [kill, crash], key, rows) == ""


def test_a_chart_says_which_cells_never_caught_up_and_where_the_control_does_not_cancel(
        ) -> None:
    """The eleventh outside share review: a chart's cell whose runs never caught up had no
    point and no word; a poison panel whose control does not cancel carried no warning. Both
    in the chart's caption (``chart_conditions``)."""
    from groupcoord.lab.report import chart_conditions
    from groupcoord.lab.verdict import UNCANCELLED, grid_verdict

    share, kip848 = "share:simple", "consumer:uniform"

    def run(p: str, size: int, seed: int, **cols: object) -> dict[str, object]:
        return {"protocol": p, "scenario": "crowd-crash", "size": size,
                "workload": "1x4-poison", "seed": seed, "ok": True, "fault_rate": 0.0,
                "caught_up": True, "control_lag_peak": 10.0, **cols}

    runs = [run(share, 4, s, lag_peak=-500.0 if s == 0 else 5.0) for s in range(5)]
    runs += [run(kip848, 4, s, lag_peak=300.0) for s in range(5)]
    # at 12 members the share group never caught up on 2 of 7 seeds (dropped from the row)
    runs += [run(share, 12, s, lag_peak=5.0, caught_up=s >= 2) for s in range(7)]
    runs += [run(kip848, 12, s, lag_peak=300.0) for s in range(7)]
    g = grid_verdict({"name": "poison-lock", "protocols": [share, kip848],
                      "metrics": ["lag_peak"]}, runs)
    assert any(mv.verdict == UNCANCELLED for r in g.rows for mv in r.metrics)
    caption = chart_conditions(g, g.rows)
    assert f"excess lag peak: {UNCANCELLED}" in caption
    assert "not caught up (left out): share:simple at 12, 1x4-poison, 2 runs" in caption


def test_a_setups_charts_mark_is_drawn_at_its_winners_marker(tmp_path: Any,
                                                              saved_figures: list[Any]) -> None:
    """A share grid's sizes are two setups, each protocol's marker a little aside: the ★/☆
    of a share win is drawn at share:simple's marker, not at the setup's x beside the
    consumer group's marker (outside share review 15 read it as the consumer's win)."""
    from groupcoord.lab.findings import Metric
    from groupcoord.lab.report import plot_grid, protocol_styles
    from groupcoord.lab.verdict import Cell, GridVerdict, VerdictRow, judge

    share, kip848 = "share:simple", "consumer:uniform"
    down = Metric("resource_downtime_ms", "resource downtime", "resource·s", 1000.0,
                  floor=1000.0)
    saved = saved_figures
    rows = []
    for size in (4, 12):
        vals = {share: [5_000 + 1_000 * i for i in range(10)],
                kip848: [40_000 + 2_000 * i for i in range(10)]}
        rows.append(VerdictRow("rolling-bounce", size, "1x4-busy", 0.0, 10, [
            judge({p: Cell(dict(enumerate(v))) for p, v in vals.items()}, down)]))
    g = GridVerdict("share-rolling", "", [share, kip848], [down], rows, 40, 0, 0, 10)
    plot_grid(g, rows, "share-rolling: rolling-bounce, 1x4-busy", tmp_path / "r.png",
              protocol_styles([share, kip848]))
    (fig,) = saved
    (ax,) = [a for a in fig.axes if a.get_lines()]
    where = {ln.get_label(): list(ln.get_xdata()) for ln in ax.get_lines()
             if ln.get_label() in (share, kip848)}
    marks = [t for t in ax.texts if t.get_text() in ("★", "☆")]
    assert len(marks) == 2, [t.get_text() for t in ax.texts]
    for t in marks:
        x = float(t.xy[0])
        own = min(abs(x - float(v)) for v in where[share])
        other = min(abs(x - float(v)) for v in where[kip848])
        assert own < 1e-9 < other, (x, where)
