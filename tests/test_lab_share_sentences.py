"""The share page's sentences in the paper page's layout (docs/lab.md, "The report"): a claim
of at most 60 words with its command, the family's candidates and the lock-limit evidence in
the note under it, each share condition clause stated once above the sentences; and a member
loss's sentence, chosen as its family's largest effect (a kill, whose records are released on
disconnect), says in its claim on how many seeds its family's lost hosts (crashes) above the
lock limit stopped a partition (``lab.share_marks``)."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.lab.findings import Metric
from groupcoord.lab.mechanism import ORDERING, share_capacity, with_conditions
from groupcoord.lab.report import caveat_text, condition_letters, sentence_text
from groupcoord.lab.share_marks import (
    ORDERING_ALONE,
    SENTENCE_WORDS,
    family_key,
    lock_limit_clause,
    lost_host_clause,
    share_claims,
    split_conditions,
)
from groupcoord.lab.verdict import Cell, Claim, GridVerdict, VerdictRow, claims, judge, words

SHARE, KIP848 = "share:simple", "consumer:uniform"
PEAK = Metric("lag_peak", "excess lag peak", "records", floor=10.0)
SETTINGS = json.dumps({"group.share.record.lock.duration.ms": 30_000})


def _cells(values: dict[str, list[float]]) -> dict[str, Cell]:
    return {p: Cell(dict(enumerate(v))) for p, v in values.items()}


def _run(protocol: str, scenario: str, workload: str, seed: int, rate: float, size: int = 12,
         parts: int = 4, **cols: Any) -> dict[str, Any]:
    return {"protocol": protocol, "scenario": scenario, "size": size, "workload": workload,
            "seed": seed, "ok": True, "total_partitions": parts, "fault_rate": 0.0,
            "settings_json": SETTINGS, "work": json.dumps({"records_per_s": rate}), **cols}


def _runs(crash_stops: int = 2) -> list[dict[str, Any]]:
    """12 members on 4 partitions: a kill and a crash at 80 records/s a partition (above the
    2,000 / 30 s = 66.7 records/s lock limit), the crash stopping a partition on
    ``crash_stops`` of 5 seeds, a crash at 60 records/s; and a kill at 4 on 4 (one member per
    partition: the share condition's second clause)."""
    runs = [_run(SHARE, "owner-kill", "1x4-busy80", s, 80, resource_downtime_ms=0)
            for s in range(5)]
    runs += [_run(SHARE, "owner-crash", "1x4-busy80", s, 80,
                  resource_downtime_ms=5_030 if s < crash_stops else 0,
                  lag_record_s=1_715 if s < crash_stops else 18) for s in range(5)]
    runs += [_run(SHARE, "owner-crash", "1x4-busy", s, 60, resource_downtime_ms=0)
             for s in range(5)]
    runs += [_run(p, "owner-kill", "1x4-even", s, 80, size=4, resource_downtime_ms=45_700,
                  resources_moved=1) for p in (SHARE, KIP848) for s in range(5)]
    return runs


def _grid() -> GridVerdict:
    kill = judge(_cells({SHARE: [0, 3, 0, 1, 0], KIP848: [3_502, 3_466, 3_816, 3_500, 3_520]}),
                 PEAK)
    crash = judge(_cells({SHARE: [0, 1, 0, 2, 1], KIP848: [2_867, 2_651, 2_891, 2_700, 2_800]}),
                  PEAK)
    assert kill.verdict == crash.verdict == "best"
    return GridVerdict("owner", "", [SHARE, KIP848], [PEAK], [
        VerdictRow("owner-kill", 12, "1x4-busy80", 0.0, 5, [kill], rate=320.0),
        VerdictRow("owner-crash", 12, "1x4-busy", 0.0, 5, [crash], rate=240.0)], 20, 0, 0, 5)


def _page(runs: list[dict[str, Any]]) -> tuple[list[Any], list[Any], str]:
    g = _grid()
    before = with_conditions(claims([g], family_of=family_key(runs)), [g], runs)
    out = share_claims(before, claims([g], limit=100), [g], runs)
    letters = condition_letters(out)
    page = "\n".join(f"- ({letters[x]}) {x}" for x in letters) + "\n" + "\n".join(
        f"{i}. {sentence_text(c, letters)}\n   {c.command}\n   {caveat_text(c)}"
        for i, c in enumerate(out, 1))
    return before, out, page


def test_a_member_loss_sentence_is_a_claim_of_60_words_and_loses_no_fact() -> None:
    runs = _runs()
    before, out, page = _page(runs)
    (old,), (new,) = before, out
    # the family's largest effect: the kill's peak (0 against 3,502)
    assert (new.scenario, new.workload) == ("owner-kill", "1x4-busy80")
    letters = condition_letters(out)
    claim = sentence_text(new, letters)
    assert words(claim) <= SENTENCE_WORDS, claim
    # before: the family note and the lock limit made the sentence itself 150 words and more
    old_said = (old.text + " " + lock_limit_clause(old, runs)
                + " This sentence stands for 2 candidates")
    assert words(old_said) > 2 * SENTENCE_WORDS
    # nothing lost: the claim's own words, the production-time reading (in the note), how
    # many candidates it stands for, the lock-limit evidence, every condition
    reading = "at the group's 320 records/s: 0 s against 10.9 s of its production"
    assert f"({reading})" in old.text and reading not in new.text
    assert f"the medians {reading}" in page
    # the claim's head names its partitions (12 members on 4 partitions)
    assert old.text.replace(f" ({reading})", "").replace(
        "12 members,", "12 members on 4 partitions,", 1) in new.text
    assert ("this sentence stands for 2 candidates of one family (owner-kill, owner-crash at 12 "
            "members): excess lag peak, on 1x4-busy80, 1x4-busy") in page
    lock = lock_limit_clause(old, runs).rstrip(".")
    assert lock.startswith("Lock limit") and "lock limit" + lock[len("Lock limit"):] in page
    assert "a kill releases the records on disconnect" in page
    for clause in old.conditions:
        parts = split_conditions([clause])
        # split, not rewritten (the ordering alone names what it is given up for)
        assert "; ".join(parts).replace(ORDERING_ALONE, ORDERING) == clause
        for part in parts:
            assert page.count(part) == 1, part
    # the share condition is three clauses, each its own letter
    assert ORDERING_ALONE in letters and ORDERING not in page
    assert "gives up per-partition ordering for the share group's wins (KIP-932" in page
    assert any(x.startswith("12 members on 4 partitions") for x in letters)
    assert any(x.startswith("at one member per partition (4 on 4, owner-kill) the two tie")
               for x in letters)


def test_the_kills_sentence_says_where_its_familys_lost_hosts_split() -> None:
    """A family's sentence is its largest effect, here a kill (records released on
    disconnect); the claim itself says on how many seeds a crash of its family above the lock
    limit stopped a partition, from the runs."""
    _, (new,), _ = _page(_runs(crash_stops=2))
    assert new.scenario == "owner-kill"
    assert ("Above the lock limit its lost hosts stopped a partition in the model: "
            "owner-crash on 2 of 5 seeds (1x4-busy80).") in new.text
    _, (more,), _ = _page(_runs(crash_stops=4))
    assert "owner-crash on 4 of 5 seeds (1x4-busy80)" in more.text
    # no crash of the family stopped a partition: nothing to say
    _, (none,), _ = _page(_runs(crash_stops=0))
    assert "lost hosts" not in none.text
    # a sentence outside a member loss has no such clause
    runs = _runs()
    (c,) = claims([_grid()], family_of=family_key(runs))
    bounce = Claim(c.grid, c.text, c.command, c.metric, "rolling-bounce", 12, c.best,
                   c.worse, "1x4-busy80")
    assert lost_host_clause(bounce, [bounce], family_key(runs), runs) == ""


def test_a_share_condition_shared_by_several_sentences_is_stated_once() -> None:
    runs = _runs()
    over = share_capacity(12, [SHARE, KIP848], [runs[0]], runs)
    assert over.endswith("; " + ORDERING) and "; at one member per partition (" in over
    even = "at one member per partition (12 on 12, rolling-bounce) the two tie"
    parts = split_conditions([over, f"{even}; {ORDERING}", ORDERING])
    assert parts.count(ORDERING_ALONE) == 1 and even in parts and ORDERING not in parts
    assert [p for p in parts if p.startswith("12 members on 4 partitions")] == [
        over.split("; ")[0]]
    # a clause without the share shape is left whole
    assert split_conditions(["members 20% busy; heartbeat"]) == ("members 20% busy; heartbeat",)


def test_the_lost_hosts_stop_is_said_to_be_the_models_held_fetch_with_the_wires_count() -> None:
    """A lost host strands records on nearly every seed in the model because it serves the
    ShareFetch the lost host left waiting at the broker (Kafka's DelayedShareFetch completes on
    the partition's next records): the claim says the stop is the model's, the note says
    the mechanism, where it stops being near-certain (a fetch answered
    empty after its max wait) and the wire's count, both read from the shipped share
    calibration, never "a draw per seed"."""
    from groupcoord.lab.share_marks import held_fetch_clause, wire_lost_hosts
    from groupcoord.lab.share_report import load_share_calibration
    from groupcoord.sim.share_convergence import FETCH_MAX_WAIT_MS

    shipped = [(c["scenario"], c["members"], c["workload"], c["lost_host"]["wire_stopped"],
                c["lost_host"]["runs"]) for c in load_share_calibration() if c.get("lost_host")]
    assert shipped and wire_lost_hosts() == shipped
    (scen, size, wl, k, n), = shipped
    runs = _runs(crash_stops=5)
    _, (new,), page = _page(runs)
    assert "stopped a partition in the model: owner-crash on 5 of 5 seeds" in new.text
    held = held_fetch_clause(runs)
    assert "serves the ShareFetch the lost host left waiting at the broker" in held
    assert f"within a fetch's {FETCH_MAX_WAIT_MS} ms max wait (this page: one every 12.5 ms " \
           "(1x4-busy80))" in held
    assert "answered empty and strands nothing" in held
    assert f"stopped its partition on {k} of {n} runs ({scen} at {size} on {wl})" in held
    assert held in page and "a draw per seed" not in page
    # a calibration without a lost-host cell: no wire count, the mechanism still said
    assert "on the wire" not in held_fetch_clause(runs, cells=[])
    # no crash above the limit on the page: nothing to explain
    assert held_fetch_clause([r for r in runs if r["scenario"] != "owner-crash"
                              or r["workload"] != "1x4-busy80"]) == ""


def test_a_share_lag_peak_sentence_has_the_brokers_share_lag_beside_it() -> None:
    """What an operator's share-group lag alert reads is the broker's share lag (log end
    offset minus the share-partition start offset), not the processed-based excess peak the
    tables mark: a sentence quoting a share group's lag peak puts the broker's figure (median
    over the same seeds) beside it."""
    runs = _runs()
    for r in runs:
        if (r["protocol"], r["scenario"], r["workload"]) == (SHARE, "owner-kill", "1x4-busy80"):
            r["share_lag_peak"] = 20 + 10 * r["seed"]  # 20, 30, 40, 50, 60: median 40
    _, (new,), _ = _page(runs)
    assert "0 records (range 0\u20133 records; the broker's share lag 40) against 3,502" in new.text
    # without the broker's figure in the runs the sentence is as it was
    _, (plain,), _ = _page(_runs())
    assert "broker's share lag" not in plain.text
