"""The page's answers to the fifteenth outside review (docs/lab.md): a sentence says the cost
metrics its winners lose on in the same cell, and one on a bookkeeping metric (partitions
moved, records processed twice) quotes the same cell's excess lag."""

from __future__ import annotations

from typing import Any

from groupcoord.lab.verdict import MAX_WORDS, claims, grid_verdicts, labelled_words

EAGER, COOP, UNIFORM = "classic:eager", "classic:cooperative", "consumer:uniform"


def _run(protocol: str, seed: int, scenario: str, workload: str = "4x250", size: int = 10,
         **metrics: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "members": size,
            "workload": workload, "fault_rate": 0.0, "seed": seed, "ok": True,
            "caught_up": True, "noop_events": 0, "settings_json": "{}", **metrics}


def _moved_grid() -> list[Any]:
    """rolling-bounce-down20s as the reviewer read it: cooperative and KIP-848 move fewest
    partitions (219 against eager's 724) and lose on excess lag (10,235 and 12,944 against
    5,734 record·s)."""
    grid = {"name": "bounce-downtime", "protocols": [EAGER, COOP, UNIFORM],
            "scenarios": ["rolling-bounce-down20s"],
            "metrics": ["resources_moved", "lag_record_s", "stall_ms"], "seeds": 5}
    moved = {EAGER: 724.0, COOP: 219.0, UNIFORM: 219.0}
    lag = {EAGER: 5734.0, COOP: 10235.0, UNIFORM: 12944.0}
    stall = {EAGER: 500.0, COOP: 0.0, UNIFORM: 0.0}
    rows = [_run(p, s, "rolling-bounce-down20s", resources_moved=moved[p],
                 lag_record_s=lag[p] + s, stall_ms=stall[p] + s)
            for p in (EAGER, COOP, UNIFORM) for s in range(5)]
    return grid_verdicts({"spec": "paper", "grids": [grid]}, rows)


def test_a_sentence_on_partitions_moved_quotes_the_cells_excess_lag() -> None:
    c = next(c for c in claims(_moved_grid()) if c.metric == "resources_moved")
    assert c.worse == EAGER
    # both winners' lag against the runner-up's, in the sentence, not only in the note
    assert "In the same cell, lag 10,237 and 12,946 against 5,736 record·s." in c.text
    assert labelled_words(c) <= MAX_WORDS


def test_a_non_eager_winner_says_the_cost_it_loses_to_the_runner_up() -> None:
    verdicts = _moved_grid()
    # the lag win of eager over cooperative: no cost lost (stall is eager's, said already)
    lag = next(c for c in claims(verdicts) if c.metric == "lag_record_s")
    assert lag.best == EAGER and "Worse on partitions moved and stall" in lag.full
    # a cooperative win on lag peak loses lag to the runner-up (eager): said in its sentence
    grid = {"name": "g", "protocols": [EAGER, COOP], "scenarios": ["rolling-bounce"],
            "metrics": ["lag_peak", "lag_record_s"], "seeds": 5}
    # eager's lag overlaps cooperative's (two seeds above it): lag peak is the only mark
    eager_lag = [5000.0, 5100.0, 5200.0, 11000.0, 12000.0]
    rows = [_run(p, s, "rolling-bounce", lag_peak=(300.0 if p == EAGER else 100.0) + s,
                 lag_record_s=eager_lag[s] if p == EAGER else 10235.0 + s)
            for p in (EAGER, COOP) for s in range(5)]
    c = next(c for c in claims(grid_verdicts({"spec": "paper", "grids": [grid]}, rows))
             if c.metric == "lag_peak")
    assert c.best == COOP
    assert "Worse on lag: 10,237 against 5,200 record·s." in c.text


def test_a_win_the_caveat_gives_to_the_assignor_says_so_in_its_sentence() -> None:
    from groupcoord.lab.caveats import with_caveats
    from groupcoord.lab.verdict import Claim, grid_verdict

    rr = "classic:eager-roundrobin"
    grid = {"name": "crossover", "protocols": [EAGER, rr, COOP], "metrics": ["lag_record_s"]}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, "crash", lag_record_s=59000.0 + s))
        rows.append(_run(rr, s, "crash", lag_record_s=46000.0 + s))
        rows.append(_run(COOP, s, "crash", lag_record_s=46100.0 + s))
    g = grid_verdict(grid, rows)
    c = Claim("crossover", "crash, 10 members: ☆ classic:cooperative best.", "",
              "lag_record_s", "crash", 10, COOP, "")
    (out,) = with_caveats([c], [g], rows)
    assert out.text.endswith("Eager with range loses, with roundrobin ties (4x250): the "
                             "assignor, not the protocol.")


def test_runs_carry_the_time_until_balanced_after_the_last_event() -> None:
    """The tables' "time until balanced after the last event" is a column of runs/ (the
    reviewer had to reverse-engineer the event gap from time_to_balance_ms), and the report
    reads it from there."""
    import json
    from dataclasses import replace

    from groupcoord.lab.findings import BALANCE_AFTER_LAST
    from groupcoord.lab.mechanism import attach_balance_after_last, balance_after_last
    from groupcoord.lab.runs import RUN_METRICS, run_one
    from groupcoord.lab.spec import expand, load_spec, restrict

    assert ("time_to_balance_after_last_ms", "long") in RUN_METRICS
    spec = restrict(load_spec("paper"), scenarios=["kip415-connector-removed"], sizes=[3],
                    protocols=["classic-connect:sessioned"], workloads=["16x8c"])
    params = next(r for r in expand(spec) if r.replicate == 0)
    row = run_one(replace(params, events=False))
    after = row["time_to_balance_after_last_ms"]
    assert after is not None
    assert after == balance_after_last(row, json.loads(row["summary_json"]))
    # the scenario's two connector changes are 20 s apart: counted from the second
    assert row["time_to_balance_ms"] - after >= 19_000
    # the report takes the column, no summary needed
    runs = [{"run_id": "x", "time_to_balance_ms": 25_000, "time_to_balance_after_last_ms": 1_030}]
    attach_balance_after_last(runs, {})
    assert runs[0][BALANCE_AFTER_LAST] == 1_030.0


def test_the_settings_list_says_the_assignment_interval_is_a_kafka_43_broker_setting() -> None:
    import json

    from groupcoord.lab.limits import settings_notes

    run = {"protocol": UNIFORM, "settings_json": json.dumps(
        {"group.consumer.assignment.interval.ms": 1000, "heartbeat.spread.ms": 0})}
    notes = " ".join(settings_notes([run]))
    assert "group.consumer.assignment.interval.ms (a broker setting since Apache Kafka 4.3" in notes
    assert "KIP-1263" in notes
    # what a reader on an older release gets (the twelfth outside share review: a 4.3 setting
    # on a page about 4.2's share groups)
    assert "on Kafka 4.2 and earlier the coordinator recomputes the target assignment" in notes
    from groupcoord.lab.findings import FAMILY_NAMES
    assert "the model follows Kafka 4.3's group coordinator" in FAMILY_NAMES["share"]
    # at Kafka's default: not flagged as a non-default, nor listed as a model knob
    assert "Not Kafka's defaults" not in notes
    assert "Model knobs, not Kafka settings: group.consumer" not in notes


def test_a_restore_row_of_a_spread_grid_names_its_spread() -> None:
    import json

    from groupcoord.lab.caveats import restore_rows

    plain = {"name": "crossover", "protocols": [EAGER, COOP], "metrics": ["lag_record_s"],
             "workloads": ["light"], "seeds": 5}
    labels = [f"{p}@hbspread{s}" for s in ("1s", "3s") for p in (EAGER, COOP)]
    spread = {"name": "field-costs-hbspread", "protocols": labels, "metrics": ["lag_record_s"],
              "workloads": ["field-costs"], "seeds": 5}
    rows = []
    for s in range(5):
        rows.append(_run(EAGER, s, "scale-out", "light", lag_record_s=0.2))
        rows.append(_run(COOP, s, "scale-out", "light", lag_record_s=255.0 + s))
        for label in labels:
            v = (900.0 if label.endswith("1s") else 1900.0) + 100 * s
            rows.append({**_run(label, s, "scale-out", "field-costs", lag_record_s=v),
                         "work": json.dumps({"warmup_ms": 2000})})
    verdicts = grid_verdicts({"name": "paper", "grids": [plain, spread]}, rows)
    c = next(c for c in claims(verdicts[:1]))
    text = restore_rows(c, verdicts, rows)
    assert ("field-costs-hbspread with a 2 s restore (10 members, heartbeats spread by up to "
            "1 s)") in text
    assert ("field-costs-hbspread with a 2 s restore (10 members, heartbeats spread by up to "
            "3 s)") in text


def _group_rows(fresh_range: float) -> list[Any]:
    """KIP-848's two assignors tie on the first seeds and both beat classic:cooperative; on
    the fresh seeds consumer:range sits at ``fresh_range`` (below uniform: an order among
    them), classic:cooperative far above both either way."""
    rng = "consumer:range"
    grid = {"name": "consumers", "protocols": [COOP, rng, UNIFORM], "scenarios": ["scale-out"],
            "metrics": ["lag_record_s"], "seeds": 5, "confirm_seeds": 5}
    rows = []
    for rep in range(10):
        fresh = rep >= 5
        for p, v in ((COOP, 50_000.0), (UNIFORM, 800.0),
                     (rng, fresh_range if fresh else 801.0)):
            rows.append({**_run(p, rep, "scale-out", lag_record_s=v + rep % 5),
                         "replicate": rep})
    return grid_verdicts({"spec": "paper", "grids": [grid]}, rows)


def test_a_tie_that_both_seed_sets_separate_from_every_other_protocol_is_a_shared_win() -> None:
    from groupcoord.lab.report import _verdict_word

    (g,) = _group_rows(300.0)
    mv = g.rows[0].metrics[0]
    assert mv.verdict == "tied" and mv.shared
    assert set(mv.best) == {"consumer:range", UNIFORM}
    assert "shared: " in _verdict_word(mv) and "on both seed sets" in _verdict_word(mv)
    c = next(c for c in claims([g]) if c.metric == "lag_record_s")
    assert "share the lowest" in c.text and "for classic:cooperative (the runner-up)" in c.text
    # where the fresh set puts classic:cooperative among them, it stays not confirmed
    (g,) = _group_rows(60_000.0)
    assert g.rows[0].metrics[0].verdict == "unconfirmed"


def _crossover(with_late: bool) -> list[Any]:
    import json

    plain = {"name": "crossover-20ms", "protocols": [EAGER, COOP], "scenarios": ["scale-out"],
             "metrics": ["lag_record_s"], "seeds": 5}
    busy = {"name": "busy-crossover", "protocols": [EAGER, COOP],
            "scenarios": ["scale-out-slow500ms", "scale-out-slow2000ms"],
            "metrics": ["lag_record_s"], "seeds": 5, "question": "does it hold when late"}

    def run(p: str, s: int, scenario: str, pct: int, v: float) -> dict[str, Any]:
        return {**_run(p, s, scenario, f"1x32-p20ms-{pct}pct", lag_record_s=v + s, size=8),
                "total_partitions": 32,
                "work": json.dumps({"records_per_s": pct / 8, "processing_ms": 20})}

    rows = [run(p, s, "scale-out", pct, 1.0 if p == EAGER else 256.0)
            for pct in (20, 40) for p in (EAGER, COOP) for s in range(5)]
    if with_late:
        rows += [run(p, s, sc, 40, v) for sc, vs in (("scale-out-slow500ms", (32.8, 256.0)),
                                                   ("scale-out-slow2000ms", (465.0, 256.0)))
                 for p, v in zip((EAGER, COOP), vs, strict=True) for s in range(5)]
    grids = [plain, busy] if with_late else [plain]
    return grid_verdicts({"spec": "paper", "grids": grids}, rows)


def test_an_eager_crossover_names_the_lateness_that_flips_it() -> None:
    (c,) = [c for c in claims(_crossover(True)) if c.grid == "crossover-20ms"]
    assert ("It flips with one member 2 s late at the rebalance (busy-crossover, "
            "1x32-p20ms-40pct): classic:eager 467 against classic:cooperative 258 record·s; its "
            "members are caught up, with short polls, when the event comes") in c.full
    assert "It flips with" in c.text
    (c,) = [c for c in claims(_crossover(False)) if c.grid == "crossover-20ms"]
    assert "It flips" not in c.full


def test_a_spread_gist_says_whether_eager_is_kept() -> None:
    from groupcoord.lab.verdict import SpreadOutcome, spread_gist

    def o(ms: float, held: bool) -> SpreadOutcome:
        return SpreadOutcome("g", ms, held, (), "x", 1.0, EAGER, 1.0)

    assert spread_gist([(10.0, [o(1000, False), o(3000, False)])]) == "spread 1, 3 s: not kept"
    assert spread_gist([(10.0, [o(1000, True)]), (100.0, [o(1000, False)])]) == (
        "spread 1 s: kept at some")


def test_a_lateness_sentence_leads_with_the_loss_that_answers_its_question() -> None:
    import json

    grid = {"name": "lateness", "protocols": [EAGER, COOP, UNIFORM],
            "scenarios": ["scale-out", "bounce"], "metrics": ["lag_record_s"], "seeds": 5,
            "question": "do the eager marks hold when the members' own work makes them late"}
    cells = {("scale-out", "w-pause200ms"): {EAGER: 47.8, COOP: 1850.0, UNIFORM: 1700.0},
             ("bounce", "w-pause1s"): {EAGER: 20615.0, COOP: 5000.0, UNIFORM: 1685.0}}
    rows = [{**_run(p, s, sc, wl, lag_record_s=v + s),
             "work": json.dumps({"pause_every_ms": 10000})}
            for (sc, wl), vs in cells.items() for p, v in vs.items() for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    c = next(c for c in claims(verdicts, intro="lateness asks it")
             if c.grid == "lateness" and c.best == EAGER)
    assert c.scenario == "scale-out"
    assert c.text.startswith("bounce, 10 members, w-pause1s (lateness): classic:eager loses, "
                             "classic:eager 20,617 record·s against consumer:uniform 1,687 "
                             "record·s, 12.2x. Yet in scale-out, 10 members")


def test_growth_rows_and_their_charts_say_the_lag_on_new_partitions_is_an_upper_bound() -> None:
    from groupcoord.lab.mechanism import growth_text
    from groupcoord.lab.report import chart_conditions

    run = {"growth": [{"topic": "foo", "partitions": [250, 500],
                       "records_per_s_partition": [1.6, 0.8],
                       "records_per_s_topic": [400, 400]}]}
    said = "the producer writes to new partitions at once (its own metadata refresh is left out)"
    assert said in growth_text(run) and "upper bound" in growth_text(run)
    assert growth_text({}) == ""
    grid = {"name": "consumers", "protocols": [COOP, UNIFORM], "metrics": ["lag_record_s"],
            "scenarios": ["partition-added"], "seeds": 5}
    rows = [_run(p, s, "partition-added", lag_record_s=(9000.0 if p == COOP else 800.0) + s)
            for p in (COOP, UNIFORM) for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    assert said in chart_conditions(g, g.rows)
    scale = [_run(p, s, "scale-out", lag_record_s=1.0 + s) for p in (COOP, UNIFORM)
             for s in range(5)]
    (g,) = grid_verdicts({"spec": "paper", "grids": [{**grid, "scenarios": ["scale-out"]}]},
                         scale)
    assert said not in chart_conditions(g, g.rows)


def test_a_win_of_the_losers_assignor_is_not_a_grids_headline() -> None:
    rr = "classic:eager-roundrobin"
    grid = {"name": "field-costs", "protocols": [EAGER, rr, COOP],
            "scenarios": ["crash-then-join", "rolling-bounce"], "metrics": ["lag_record_s"],
            "seeds": 5}
    cells = {"crash-then-join": {EAGER: 540_000.0, rr: 40_000.0, COOP: 40_100.0},
             "rolling-bounce": {EAGER: 4_900.0, rr: 5_000.0, COOP: 8_200.0}}
    rows = [_run(p, s, sc, "field-costs", lag_record_s=v + s)
            for sc, vs in cells.items() for p, v in vs.items() for s in range(5)]
    verdicts = grid_verdicts({"spec": "paper", "grids": [grid]}, rows)
    # the crash's win (range loses, roundrobin ties the winners) is 10x larger, yet the
    # grid's answer is the protocols' own difference
    first = claims(verdicts, limit=1)
    assert [c.scenario for c in first] == ["rolling-bounce"]


def test_grids_clauses_that_read_alike_are_said_once() -> None:
    from groupcoord.lab.verdict import merge_alike

    x = "classic:eager at 20, 30 % busy (limit in the note; spread 1, 3 s: not kept)"
    assert merge_alike(f"scale-out: [a] {x}; [b] {x}. It flips.") == f"scale-out: [a, b] {x}. It flips."
    assert merge_alike(f"[a] {x}; [b] {x}; [c] other.") == f"[a, b] {x}; [c] other."
    assert merge_alike(f"[a] {x}; [b] {x} (2).") == f"[a] {x}; [b] {x} (2)."
