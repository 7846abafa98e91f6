"""The page's answers to the sixteenth outside review (docs/lab.md): KIP-415's delay is a
caveat only where a protocol reads it and a worker departs; the settings list names what each
protocol reads."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.lab.limits import settings_table
from groupcoord.lab.runs import run_one
from groupcoord.lab.spec import expand, load_spec, restrict
from groupcoord.lab.verdict import DELAY_SETTING, grid_verdicts

EAGER, SESSIONED = "classic-connect:eager@hb1s", "classic-connect:sessioned@hb1s"
#: what the paper render's eager Connect runs recorded before eager stopped listing the delay
RECORDED = {"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 5000,
            "rebalance.timeout.ms": 60000, "request.timeout.ms": 5000,
            DELAY_SETTING: 300000, "session.timeout.ms": 10000, "start.stop.threads": 8}


@pytest.fixture(scope="module")
def worker_joins() -> list[dict[str, Any]]:
    """kip415-task-times-hb1s' kip415-worker-joins cell at 5 s task stop and start, 12
    workers, its first 5 seeds, simulated."""
    return _simulated("kip415-worker-joins", 12, "16x8c-task5s", [EAGER, SESSIONED], 5)


def test_a_worker_join_is_no_win_over_a_delay_eager_does_not_read(
        worker_joins: list[dict[str, Any]]) -> None:
    # the runs as the paper render recorded them: eager's settings carry the delay
    recorded = [{**r, "settings_json": json.dumps(RECORDED)} if r["protocol"] == EAGER else r
                for r in worker_joins]
    grid = {"name": "kip415-task-times-hb1s", "protocols": [EAGER, SESSIONED],
            "scenarios": ["kip415-worker-joins"], "workloads": ["16x8c-task5s"],
            "metrics": ["task_downtime_task_s", "time_to_balance_ms", "task_restarts"],
            "seeds": 5}
    for runs in (worker_joins, recorded):
        (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
        (row,) = g.rows
        assert not row.departs
        mv = next(mv for mv in row.metrics if mv.metric.column == "task_downtime_task_s")
        # sessioned's downtime is a fifth of eager's (no task waits 300 s on any seed)
        assert tuple(mv.best) == (SESSIONED,) and mv.verdict == "best"
        assert mv.cells[EAGER].median > 5 * mv.cells[SESSIONED].median
        assert mv.cells[EAGER].median > 0.9 * 300
        assert all(not m.limit.startswith("is won") for m in row.metrics), mv.limit
        assert DELAY_SETTING not in g.settings.get(EAGER, {})


def test_the_settings_list_names_the_delay_only_under_protocols_that_read_it(
        worker_joins: list[dict[str, Any]]) -> None:
    # what a run records: the delay under sessioned, none under eager
    assert {r["protocol"]: DELAY_SETTING in json.loads(r["settings_json"])
            for r in worker_joins} == {EAGER: False, SESSIONED: True}
    recorded = [{**r, "settings_json": json.dumps(RECORDED)} for r in worker_joins]
    cols, rows = settings_table(recorded)
    delay = dict(rows)[DELAY_SETTING]
    by_col = {p: v for ps, v in zip(cols, delay, strict=True) for p in ps}
    assert by_col[EAGER] == "" and by_col[SESSIONED] == "300,000"


def test_the_settings_list_flags_auto_offset_reset_and_growth_rows_say_what_latest_does(
        ) -> None:
    from groupcoord.lab.limits import settings_notes
    from groupcoord.lab.mechanism import growth_text

    growth = {"growth": [{"topic": "foo", "partitions": [250, 500],
                          "records_per_s_partition": [1.6, 0.8],
                          "records_per_s_topic": [400, 400]}]}
    polls = json.dumps({"heartbeat.interval.ms": 3000, "max.poll.records": 500})
    runs = [{"protocol": "classic:eager", "scenario": "grow-by-900", "workload": "light",
             "settings_json": polls, **growth},
            {"protocol": "consumer:uniform", "scenario": "scale-out", "workload": "4x250",
             "settings_json": polls},
            # an idle member never fetches: nothing to reset
            {"protocol": "classic:cooperative", "scenario": "bounce", "workload": "idle",
             "settings_json": json.dumps({"heartbeat.interval.ms": 3000})}]
    cols, rows = settings_table(runs)
    reset = {p: v for ps, v in zip(cols, dict(rows)["auto.offset.reset"], strict=True)
             for p in ps}
    assert reset == {"classic:eager": "earliest", "consumer:uniform": "earliest",
                     "classic:cooperative": ""}
    (off,) = [t for t in settings_notes(runs) if t.startswith("Not Kafka's defaults")]
    assert ("auto.offset.reset earliest (Kafka's default: latest for a consumer; with latest, "
            "the records written to a new partition before its first fetch would be skipped, "
            "not counted as lag: the growth rows (grow-by-900) count them)") in off
    assert ("auto.offset.reset earliest; with Kafka's default latest, the records written to "
            "it before its first fetch would be skipped, not counted as lag") in growth_text(
                growth)


def test_a_charts_conditions_go_under_it_and_its_legend_covers_no_panel(
        tmp_path: Any, saved_figures: list[Any]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from groupcoord.lab.report import plot_grid, protocol_styles

    protocols = ["classic:eager", "classic:eager-roundrobin", "classic:cooperative",
                 "consumer:uniform", "consumer:uniform@hb3s"]
    grid = {"name": "crossover-10ms", "protocols": protocols, "scenarios": ["scale-out"],
            "metrics": ["lag_record_s", "lag_peak"], "seeds": 5}
    base = {p: 0.2 if "eager" in p else 200.0 + 50 * k for k, p in enumerate(protocols)}
    runs = [{"protocol": p, "scenario": "scale-out", "size": n, "members": n,
             "workload": "1x32", "fault_rate": 0.0, "seed": s, "ok": True, "caught_up": True,
             "noop_events": 0, "settings_json": "{}", "lag_record_s": base[p] * n / 8 + s,
             "lag_peak": base[p] / 2 + s} for p in protocols for n in (8, 16, 32)
            for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, runs)
    saved = saved_figures
    # conditions as long as sentence 9's: a paragraph
    caption = "eager's marks rest on the model's aligned classic heartbeats; " * 12
    plot_grid(g, g.rows, "crossover-10ms: scale-out", tmp_path / "c.png",
              protocol_styles(protocols), caption=caption)
    (fig,) = saved
    assert fig.get_suptitle().startswith("crossover-10ms: scale-out")
    assert "aligned classic heartbeats" not in fig.get_suptitle()
    # the PNG still carries them, under the panels with the legend
    (legend,) = fig.legends
    said = legend.get_title().get_text().replace("\n", " ")
    assert "Conditions: eager's marks rest on the model's aligned classic heartbeats" in said
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # as saved: the layout placed every panel, the title and the legend
    renderer = canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2
    for ax in panels:
        frame = ax.get_window_extent(renderer)
        assert frame.height > 100  # not collapsed under the text
        assert not frame.overlaps(box), (frame, box)


COOP, UNIFORM, RANGE, CLASSIC_EAGER = ("classic:cooperative", "consumer:uniform",
                                       "consumer:range", "classic:eager")
CONSUMERS = [CLASSIC_EAGER, COOP, UNIFORM, RANGE]


@pytest.fixture(scope="module")
def down20s() -> list[dict[str, Any]]:
    """bounce-downtime's rolling-bounce-down20s cell (10 members, field-costs), both seed
    sets (10 and 10 fresh), simulated."""
    return _simulated("rolling-bounce-down20s", 10, "field-costs", CONSUMERS, 20)


def _moved_host() -> list[dict[str, Any]]:
    """A partition-added sentence on partitions moved (cooperative and KIP-848 0 against
    eager's 246), as the paper render's consumers grid found it."""
    moved = {CLASSIC_EAGER: 246.0, COOP: 0.0, UNIFORM: 0.0, RANGE: 0.0}
    lag = {CLASSIC_EAGER: 3.89e6, COOP: 3.85e6, UNIFORM: 821.0, RANGE: 797.0}
    return [{"protocol": p, "scenario": "partition-added", "size": 100, "members": 100,
             "workload": "4x250", "fault_rate": 0.0, "seed": s, "ok": True,
             "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "resources_moved": moved[p] + (s if p == CLASSIC_EAGER else 0),
             "lag_record_s": lag[p] * (1 + s / 100)} for p in CONSUMERS for s in range(5)]


def test_a_likewise_whose_winners_pay_more_lag_than_the_runner_up_is_not_said(
        down20s: list[dict[str, Any]]) -> None:
    from groupcoord.lab.verdict import claims, lag_disagrees

    consumers = {"name": "consumers", "protocols": CONSUMERS, "scenarios": ["partition-added"],
                 "workloads": ["4x250"], "metrics": ["resources_moved", "lag_record_s"],
                 "seeds": 5,
                 "question": "What does a member change cost the consumers' applications?"}
    downtime = {"name": "bounce-downtime", "protocols": CONSUMERS,
                "scenarios": ["rolling-bounce-down20s"], "workloads": ["field-costs"],
                "metrics": ["lag_record_s", "resources_moved", "stall_ms"], "seeds": 10,
                "confirm_seeds": 10,
                "question": "Do the bounce marks hold when the member is down longer than a "
                            "heartbeat?"}
    verdicts = grid_verdicts({"spec": "paper", "grids": [consumers, downtime]},
                             _moved_host() + down20s)
    (row,) = verdicts[1].rows
    moved = next(mv for mv in row.metrics if mv.metric.column == "resources_moved")
    # the real cell: fewest partitions moved by cooperative and KIP-848, eager the runner-up,
    # and each of them pays more excess lag than eager
    assert set(moved.best) == {COOP, UNIFORM, RANGE} and moved.verdict in ("best", "tied")
    assert tuple(moved.beaten) == (CLASSIC_EAGER,)
    lag = next(mv for mv in row.metrics if mv.metric.column == "lag_record_s")
    assert all(lag.cells[p].median > 1.5 * lag.cells[CLASSIC_EAGER].median
               for p in moved.best)
    assert lag_disagrees(row, moved.best, CLASSIC_EAGER)
    # one place on the page: the follow-up grid's finding can only join the host's sentence
    (host,) = claims(verdicts, limit=1)
    assert host.scenario == "partition-added" and host.worse == CLASSIC_EAGER
    assert "rolling-bounce-down20s" not in host.full, host.full


def _simulated(scenario: str, size: int, workload: str, protocols: list[str],
               replicates: int) -> list[dict[str, Any]]:
    """The paper spec's runs of one cell, its first ``replicates`` (both seed sets), simulated."""
    spec = restrict(load_spec("paper"), scenarios=[scenario], sizes=[size],
                    protocols=protocols, workloads=[workload])
    rows = []
    for r in expand(spec):
        if r.replicate < replicates:
            row = run_one(replace(r, events=False))
            assert row["ok"], row["violation_row"]
            rows.append(row)
    assert len(rows) == len(protocols) * replicates
    return rows


def test_a_partition_added_sentence_quotes_the_classic_lag_over_every_seed() -> None:
    import math
    import statistics

    from groupcoord.lab.verdict import claims

    def _sig3(v: float) -> float:  # three significant digits
        return round(v, 2 - math.floor(math.log10(abs(v)))) if v else 0.0

    rows = _simulated("partition-added", 100, "4x250", CONSUMERS, 10)
    grid = {"name": "consumers", "protocols": CONSUMERS, "scenarios": ["partition-added"],
            "workloads": ["4x250"], "seeds": 5, "confirm_seeds": 5,
            "metrics": ["stall_ms", "lag_peak", "lag_record_s", "resources_moved"],
            "question": "What does a member change cost the consumers' applications under "
                        "each protocol?"}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    page = claims(verdicts)
    # the phase rule: the classic lag is a refresh-phase draw, 10 seeds are too few to
    # headline it
    assert not any(c.metric in ("lag_record_s", "lag_peak") and c.scenario == "partition-added"
                   for c in page)
    c = next(c for c in page if c.scenario == "partition-added")
    assert c.metric == "resources_moved" and c.worse == CLASSIC_EAGER
    # the lag in the sentence itself: every protocol's median and range over all 10 seeds
    # (both sets), three digits
    for p in CONSUMERS:
        lag = sorted(r["lag_record_s"] for r in rows if r["protocol"] == p)
        assert len(lag) == 10
        said = (f"{p} {_sig3(statistics.median(lag)):,.0f} "
                f"({_sig3(lag[0]):,.0f}\u2013{_sig3(lag[-1]):,.0f})")
        assert said in c.text, (said, c.text)
    assert "over all 10 seeds" in c.text and "5 seeds)" not in c.text


def test_a_stall_that_separates_says_what_its_winners_pay_in_lag() -> None:
    from groupcoord.lab.verdict import claims

    protocols = [CLASSIC_EAGER, "classic:eager-roundrobin", COOP, UNIFORM,
                 "consumer:uniform@hb3s"]
    rows = _simulated("rolling-bounce", 10, "4x250", protocols, 10)
    grid = {"name": "rolling", "protocols": protocols, "scenarios": ["rolling-bounce"],
            "workloads": ["4x250"], "seeds": 5, "confirm_seeds": 5,
            "metrics": ["stall_ms", "lag_peak", "lag_record_s", "resources_moved",
                        "records_reprocessed"],
            "question": "Does the group keep processing while its members restart one after "
                        "another?"}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    (row,) = verdicts[0].rows
    stall = next(mv for mv in row.metrics if mv.metric.column == "stall_ms")
    lag = next(mv for mv in row.metrics if mv.metric.column == "lag_record_s")
    assert stall.beaten and CLASSIC_EAGER in stall.beaten
    (c,) = claims(verdicts)
    _, _, rest = c.text.partition("stall separates: ")
    assert rest, c.text
    # in the sentence, beside the stall: each protocol's excess lag median
    clause = rest.split(";")[0]
    for p in protocols:
        assert f"{p} {lag.metric.fmt(lag.cells[p].median).split(' ')[0]}" in clause, clause
    assert "excess lag" in clause


def test_a_long_poll_sentence_quotes_each_protocols_row_minus_its_control() -> None:
    import statistics

    from groupcoord.lab.verdict import MAX_WORDS, claims, labelled_words

    protocols = [CLASSIC_EAGER, COOP, UNIFORM]
    rows = [*_simulated("join-in-long-poll", 10, "long-poll", protocols, 10),
            *_simulated("join-after-catch-up", 10, "long-poll", protocols, 10)]
    grid = {"name": "long-poll", "protocols": protocols,
            "scenarios": ["join-in-long-poll", "join-after-catch-up"],
            "workloads": ["long-poll"], "seeds": 10,
            "metrics": ["resource_downtime_ms", "lag_record_s", "lag_peak", "stall_ms"],
            "question": "What does a rebalance cost when it starts while a member is inside a "
                        "long poll?"}
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    page = claims(verdicts)
    c = next(c for c in page if c.scenario == "join-in-long-poll")

    def cost(p: str, col: str) -> float:
        # the median of each seed's difference, the row's seed paired with its control's by
        # replicate (round 17's S11: not the difference of the two medians)
        def by_rep(sc: str) -> dict[int, float]:
            return {int(r["replicate"]): r[col] for r in rows
                    if r["protocol"] == p and r["scenario"] == sc}
        row, ctl = by_rep("join-in-long-poll"), by_rep("join-after-catch-up")
        return statistics.median(row[k] - ctl[k] for k in row)

    down = {p: cost(p, "resource_downtime_ms") / 1000 for p in protocols}
    # the grid's finding: eager pays the long poll many times over, KIP-848 about nothing
    assert down[CLASSIC_EAGER] > 5 * down[COOP] > 0 and abs(down[UNIFORM]) < 0.2 * down[COOP]
    assert "row minus its join-after-catch-up row" in c.text
    for p in protocols:
        v = down[p]
        want = ("+" if v > 0 else "") + (f"{v:,.0f}" if abs(v) >= 100 else
                                         f"{v:.1f}".rstrip("0").rstrip(".") if abs(v) >= 10
                                         else f"{v:.2f}".rstrip("0").rstrip("."))
        assert f"{p} {want}" in c.text, (want, c.text)
    lag = [cost(p, "lag_record_s") for p in protocols]
    assert "excess lag " + ", ".join(("+" if v > 0 else "") + f"{v:,.0f}" for v in lag) \
        in c.text, c.text
    # and the chart of the join-in-long-poll row says the same differences
    from groupcoord.lab.report import chart_conditions

    (g,) = verdicts
    caption = chart_conditions(g, [r for r in g.rows if r.scenario == "join-in-long-poll"])
    assert "minus its join-after-catch-up row" in caption
    assert all(f"{p} {('+' if down[p] > 0 else '')}" in caption for p in protocols), caption
    # the raw totals stay in the note, not in the sentence
    assert any(x.startswith("the raw rows: ") for x in c.caveats)
    assert labelled_words(c) <= MAX_WORDS


def test_a_charts_conditions_name_only_the_eager_marks_it_draws() -> None:
    from groupcoord.lab.report import chart_conditions, chart_panels, drawn_mark

    # a topic's growth charted against sizes: eager's lag peak the lowest (a classic refresh
    # phase's draw: the chart draws its seeds as dots over every size, no mark)
    protocols = [CLASSIC_EAGER, UNIFORM]
    rows = [{"protocol": p, "scenario": "partition-added", "size": n, "members": n,
             "workload": "4x250", "fault_rate": 0.0, "seed": s, "ok": True,
             "caught_up": True, "noop_events": 0, "settings_json": "{}",
             "lag_peak": (100.0 if p == CLASSIC_EAGER else 800.0) + s,
             "resources_moved": 0.0 if p == UNIFORM else 200.0 + s}
            for p in protocols for n in (10, 30) for s in range(5)]
    grid = {"name": "consumers", "protocols": protocols, "scenarios": ["partition-added"],
            "workloads": ["4x250"], "seeds": 5, "metrics": ["lag_peak", "resources_moved"]}
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    assert all(CLASSIC_EAGER in r.metrics[0].best for r in g.rows)
    panels = chart_panels(g, g.rows)
    assert [m.column for _, m in panels] == ["lag_peak", "resources_moved"]
    drawn = {p for r in g.rows for i, _ in panels for p in protocols if drawn_mark(g, r, i, p)}
    assert drawn == {UNIFORM}
    assert "eager's marks" not in chart_conditions(g, g.rows)


def test_the_settings_list_names_the_classic_groups_initial_rebalance_delay() -> None:
    from groupcoord.coordinator.config import CoordinatorConfig
    from groupcoord.lab.limits import settings_notes

    hb = json.dumps({"heartbeat.interval.ms": 3000})
    runs = [{"protocol": p, "scenario": "bounce", "workload": "4x250", "settings_json": hb}
            for p in (CLASSIC_EAGER, UNIFORM, "classic-connect:sessioned", "connect:eager")]
    cols, rows = settings_table(runs)
    delay = {p: v for ps, v in zip(cols, dict(rows)["group.initial.rebalance.delay.ms"],
                                   strict=True) for p in ps}
    # the classic coordinator's delay the simulator runs at, under the classic groups only
    want = f"{CoordinatorConfig().classic_initial_rebalance_delay_ms:,}"
    assert delay == {CLASSIC_EAGER: want, "classic-connect:sessioned": want, UNIFORM: "",
                     "connect:eager": ""}
    (broker,) = [t for t in settings_notes(runs) if t.startswith("Broker settings")]
    assert "group.initial.rebalance.delay.ms (" in broker and "start-up" in broker


def test_an_eager_win_says_in_itself_it_needs_aligned_heartbeats() -> None:
    from groupcoord.lab.verdict import claims

    plain = [CLASSIC_EAGER, "classic:eager-roundrobin", COOP, UNIFORM, "consumer:uniform@hb3s"]
    spread = [f"{p}@hbspread1s" for p in (CLASSIC_EAGER, "classic:eager-roundrobin", COOP,
                                         UNIFORM)]
    hb1s = [f"{COOP}@hb1s"]
    rows = _simulated("rolling-bounce", 10, "field-costs", plain + spread + hb1s, 10)
    metrics = ["lag_record_s", "lag_peak", "stall_ms"]
    grids = [{"name": "field-costs", "protocols": plain, "scenarios": ["rolling-bounce"],
              "workloads": ["field-costs"], "seeds": 10, "metrics": metrics,
              "question": "What does a member change cost each protocol's applications?"},
             {"name": "field-costs-hbspread", "protocols": spread,
              "scenarios": ["rolling-bounce"], "workloads": ["field-costs"], "seeds": 10,
              "metrics": metrics,
              "question": "Do field-costs' eager marks hold when the members' heartbeat "
                          "phases spread?"},
             {"name": "field-costs-hb1s", "protocols": hb1s, "scenarios": ["rolling-bounce"],
              "workloads": ["field-costs"], "seeds": 10, "metrics": metrics,
              "question": "What does a member change cost each protocol's applications?"}]
    verdicts = grid_verdicts({"spec": "paper", "grids": grids}, rows)
    c = next(c for c in claims(verdicts) if c.grid == "field-costs"
             and c.scenario == "rolling-bounce" and c.metric == "lag_record_s")
    assert CLASSIC_EAGER in (c.best, *c.text.split(" share ")[0].split(" and "))
    lag = {p: statistics.median(r["lag_record_s"] for r in rows if r["protocol"] == p)
           for p in (CLASSIC_EAGER, f"{COOP}@hb1s")}
    assert lag[f"{COOP}@hb1s"] < lag[CLASSIC_EAGER]
    # in the sentence itself, not only in its note
    assert "needs every classic member's 3 s heartbeat aligned" in c.text, c.text
    assert f"eager loses to {COOP}@hb1s (field-costs-hb1s)" in c.text, c.text
