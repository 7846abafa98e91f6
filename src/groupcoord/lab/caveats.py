"""A first-page sentence's caveats, each computed from the runs (docs/lab.md "The report"):
what else the sentence's own rows show that bears on it, appended after its conditions.

- :func:`other_metrics`: on the same row, a metric where the protocol the sentence names as
  worse has the lowest median (eager's lag on a row where it loses on stall), with that
  metric's verdict ("not confirmed", "overlap"), so that a sentence does not read as the
  whole of the row.
- :func:`restore_rows`: an eager lag win rests on the model's assumption that every member
  learns of the rebalance at the same heartbeat and on no state restore; the rows of the same
  scenario and metric whose workload restores state (``warmup_ms``) say what they found.
- :func:`assignor_cause`: where only eager with one assignor loses and eager with another
  ties the winners, the loser's assignor is the cause, not the eager protocol.
- :func:`sign_test_draw`: a mark the paired sign test made (the ranges overlap) on a wide
  distribution: the worse protocol's median, quartiles and mean over all its seeds, and
  where it is a classic member's metadata refresh phase, said so.
- :func:`delay_variants`: a KIP-415 scenario with a configured delay (``-d30s``): what the
  same scenario at its other delays shows (the win holds at the configured delay only).
- :func:`other_workloads`: a crossover swept on one workload (hb-spread) holds on that
  workload only: what the same scenario's rows on other workloads show at fixed conditions.

Plain Python over the verdict tables (``lab.verdict``) and run dicts, as ``lab.mechanism``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from groupcoord.lab.findings import CLASSIC_ASSIGNORS, Metric, full_name, number
from groupcoord.lab.mechanism import SPREAD_FIELD, phase_clause
from groupcoord.lab.verdict import (
    PAIRED_MARK,
    SCENARIO_INPUTS,
    Cell,
    Claim,
    GridVerdict,
    MetricVerdict,
    VerdictRow,
    again_text,
    beats,
    mark_words,
    ranked,
    short_label,
    star,
)

#: The scenario-variant input KIP-415's delay is (``worker-leaves-d30s``).
_DELAY = next(p for p, name in SCENARIO_INPUTS if name == "scheduled.rebalance.max.delay.ms")
#: Metrics a classic member's metadata refresh phase decides in a topic's growth.
_REFRESH_SCENARIOS = ("grow-by", "partition-added")


def _word(mv: MetricVerdict) -> str:
    """A row's verdict as a sentence's caveat says it."""
    if mv.verdict == "unconfirmed":
        first = mv.best[0] if len(mv.best) == 1 else " and ".join(mv.best)
        return f"not confirmed ({first} on the first seeds; {again_text(mv)} on the fresh)"
    if mv.verdict == "best":
        return f"{star(mv)} {mv.best[0]}"
    if mv.verdict == "tied":
        return "= " + " and ".join(mv.best)
    return {"overlap": "an overlap (no protocol separated from all the rest)",
            "tie": "a tie", "split": "split seeds"}.get(mv.verdict, mv.verdict)


def _medians(mv: MetricVerdict, protocols: Sequence[str]) -> str:
    m = mv.metric
    return ", ".join(f"{p} {cell_words(m, mv.cells[p])}" for p in protocols if p in mv.cells)


def cell_words(m: Metric, c: Cell) -> str:
    """A cell's median, or where its seeds split into outcomes (``verdict.modes``) each
    outcome with its seeds, as the table shows it: a caveat never quotes a split cell's median
    as if it were one outcome (render 14: "lowest median classic-connect:sessioned 330 task·s"
    for a cell of 162 on 2 seeds and 330 on 3)."""
    if not c.split:
        return m.fmt(c.median)
    n = len(c.values)
    return (" | ".join(m.fmt(statistics.median(o)) for o in c.shown) + " ("
            + " | ".join(f"{len(o)} of {n}" for o in c.shown) + " seeds: split)")


def _worse_row(verdicts: Sequence[GridVerdict], c: Claim) -> tuple[GridVerdict, VerdictRow] | None:
    """The claim's row where the sentence names a worse protocol (None: it names none, or the
    sentence spans rows)."""
    return _row(verdicts, c) if c.worse else None


def _row(verdicts: Sequence[GridVerdict], c: Claim) -> tuple[GridVerdict, VerdictRow] | None:
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None:
        return None
    row = next((r for r in g.rows if r.scenario == c.scenario and r.size == c.size
                and (not c.workload or r.workload == c.workload)), None)
    return None if row is None else (g, row)


def other_metrics(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """The same row's metrics where the sentence's worse protocol has the lowest (best)
    median, with their verdicts; empty when there is none or the sentence spans rows."""
    got = _worse_row(verdicts, c)
    if got is None:
        return ""
    g, row = got
    parts = []
    for mv in row.metrics:
        if mv.metric.column == c.metric or c.worse not in mv.cells:
            continue
        # a first-set best the fresh seeds did not repeat, or one that overlaps: no mark,
        # but the sentence's loser leads there
        if mv.verdict not in ("unconfirmed", "overlap") or c.worse not in mv.best:
            continue
        pool = ranked(mv.cells)
        parts.append(f"on {short_label(mv.metric, g.excess)} {c.worse} is among the lowest "
                     f"({_medians(mv, [c.worse, *[p for p in pool if p != c.worse]])}): "
                     f"{_word(mv)}")
    return "; ".join(parts)


def _restores(runs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int, str], float]:
    out: dict[tuple[str, int, str], float] = {}
    for r in runs:
        try:  # the workload's restore (its ``work``), not the run's own warm-up column
            work = json.loads(str(r.get("work") or "{}"))
        except ValueError:
            continue
        w = work.get("warmup_ms") if isinstance(work, dict) else None
        if isinstance(w, int | float) and w > 0:
            out[(str(r.get("scenario")), int(r.get("size") or 0),
                 str(r.get("workload")))] = float(w)
    return out


def restore_rows(c: Claim, verdicts: Sequence[GridVerdict],
                 runs: Sequence[Mapping[str, Any]]) -> str:
    """For a sentence an eager protocol wins on lag: the model's two assumptions it rests on
    (when the members learn of the rebalance, ``mechanism.phase_clause``; no state restore),
    and what the rows of the same scenario and metric with a state restore found."""
    if c.metric not in ("lag_peak", "lag_record_s") or "eager" not in c.best:
        return ""
    restores = _restores(runs)
    found = []
    for g in verdicts:
        for row in g.rows:
            w = restores.get((row.scenario, row.size, row.workload))
            if row.scenario != c.scenario or w is None:
                continue
            mv = next((x for x in row.metrics if x.metric.column == c.metric), None)
            if mv is None:
                continue
            # a grid that sweeps a timing has a row per value: the value names the row
            # (round 15: "field-costs-hbspread with a 2 s restore" twice, different numbers)
            at = ("" if not row.timing or row.x is None
                  else f", heartbeats spread by up to {number(row.x / 1000)} s"
                  if "spread" in row.timing else f", {row.timing}")
            found.append(f"{g.name} with a {number(w / 1000)} s restore ({row.size} members{at}): "
                         f"{_word(mv)} ({_medians(mv, ranked(mv.cells))})")
    out = "no state restore" + (" (" + "; ".join(found) + ")" if found
                                  else " (not tested with one)")
    own = next((v for v in verdicts if v.name == c.grid), None)
    if not c.worse and own is not None:  # a crossover sentence carries no conditions: the
        # model's heartbeat assumption here
        spreads = sorted({r.x for r in own.rows if r.timing and r.x is not None}
                         ) if own.parameter == SPREAD_FIELD else []
        out = f"{phase_clause(own.protocols, spreads)} (the model's assumption); {out}"
    return out


def _assignor_rows(c: Claim, verdicts: Sequence[GridVerdict]) -> Iterator[
        tuple[GridVerdict, Any, Any, list[str]]]:
    """The rows of the sentence's scenario and size where, in its metric, only eager
    protocols lose and an eager protocol is among the winners: (grid, row, metric verdict,
    the winning eager protocols)."""
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None:
        return
    for row in g.rows:
        if row.scenario != c.scenario or row.size != c.size:
            continue
        for mv in row.metrics:
            if mv.metric.column != c.metric or mv.verdict not in ("best", "tied"):
                continue
            eager_best = [p for p in mv.best if _eager(p)]
            if eager_best and mv.beaten and all(_eager(p) for p in mv.beaten):
                yield g, row, mv, eager_best


def assignor_cause(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """Rows of the sentence where eager with one assignor ties the winners and only eager
    with another loses: the loser's assignor is the cause."""
    out = []
    for g, row, mv, eager_best in _assignor_rows(c, verdicts):
        st = row.settings or g.settings
        lose = ", ".join(full_name(p, st.get(p)) for p in mv.beaten)
        win = ", ".join(full_name(p, st.get(p)) for p in eager_best)
        out.append(f"{row.workload}: only {lose} loses while {win} ties the winners: "
                   f"the {_assignor(mv.beaten[0])} assignor, not the eager protocol, is "
                   "the cause")
    return "; ".join(out)


def assignor_clause(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """The sentence's own words for :func:`assignor_cause` (outside review round 15, S8: a
    "☆ classic:cooperative ... best" the page's caveat attributes to the range assignor read
    as a protocol's win): ``Eager with range loses and eager with roundrobin ties the
    winners (1x32-p10ms-40pct): the assignor, not the protocol.`` "" where no row says so."""
    found: dict[tuple[str, str], list[str]] = {}
    for _g, row, mv, eager_best in _assignor_rows(c, verdicts):
        key = (" and ".join(sorted({_assignor(p) for p in mv.beaten})),
               " and ".join(sorted({_assignor(p) for p in eager_best})))
        found.setdefault(key, []).append(row.workload)
    return "".join(f" Eager with {lose} loses, with {win} ties ({', '.join(ws)}): the "
                   "assignor, not the protocol."
                   for (lose, win), ws in found.items())


def _eager(p: str) -> bool:
    fam, _, variant = p.partition("@")[0].partition(":")
    return fam == "classic" and variant.split("-")[0] == "eager"


def _assignor(p: str) -> str:
    return str(CLASSIC_ASSIGNORS.get(p.partition("@")[0].partition(":")[2]) or p)


def sign_test_draw(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """A mark the sign test made where the worse protocol's range reaches the best's: its
    distribution over every seed (both sets), and the refresh phase where that is what it is."""
    got = _worse_row(verdicts, c)
    if got is None:
        return ""
    g, row = got
    mv = next((x for x in row.metrics if x.metric.column == c.metric), None)
    if mv is None or c.best not in mv.cells or c.worse not in mv.cells:
        return ""
    b, w = mv.cells[c.best], mv.cells[c.worse]
    if beats(list(b.values.values()), list(w.values.values()), mv.metric):
        return ""
    vals = list(w.values.values())
    if mv.again is not None and c.worse in mv.again.cells:
        vals += list(mv.again.cells[c.worse].values.values())
    if len(vals) < 4:
        return ""
    m = mv.metric
    q1, med, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    text = (f"the {PAIRED_MARK} comes from the paired sign test (the ranges overlap), not from "
            f"separated ranges; {c.worse}'s value is a wide draw: over its {len(vals)} seeds "
            f"median {m.fmt(med)}, quartiles {m.fmt(q1)}\u2013{m.fmt(q3)}, mean "
            f"{m.fmt(statistics.fmean(vals))}")
    st = (row.settings or g.settings).get(c.worse, {})
    age = st.get("metadata.max.age.ms")
    if c.worse.startswith("classic:") and any(x in c.scenario for x in _REFRESH_SCENARIOS) \
            and isinstance(age, int | float):
        text += (f" (the classic group rebalances when its leader's metadata refresh sees the "
                 f"new partitions: a phase drawn over metadata.max.age.ms = "
                 f"{number(age / 1000)} s)")
    return text


def delay_variants(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """For a sentence on a KIP-415 scenario with a configured delay: the same scenario at its
    other delays, per grid, on the sentence's metric (the win holds at its delay only)."""
    mt = _DELAY.match(c.scenario)
    if not mt:
        return ""
    base, here = mt.group("base"), mt.group("v")
    out = []
    for g in verdicts:
        for row in g.rows:
            other = _DELAY.match(row.scenario)
            if other is None or other.group("base") != base or other.group("v") == here \
                    or row.size != c.size:
                continue
            mv = next((x for x in row.metrics if x.metric.column == c.metric), None)
            if mv is None:
                continue
            out.append(f"{row.scenario} ({g.name}, {row.workload}): {_word(mv)} "
                       f"({_medians(mv, ranked(mv.cells))})")
    if not out:
        return ""
    return ("the marks hold at the configured delay of this scenario only; at its other "
            "delays: " + "; ".join(out))


def other_workloads(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """For a crossover swept on one workload (hb-spread: the heartbeat spread on
    1x32-p20ms-40pct): the sentence holds for that workload only; what the same scenario's
    rows on other workloads show on its metric, in the grids that sweep nothing (their
    conditions fixed: heartbeats not spread), each cell once. Round 8: S11's uniform mark at
    a 3 s spread did not hold in the rolling grid's cell, and the sentence did not say on
    which workload it was found."""
    if not c.swept_on:
        return ""
    out: dict[tuple[int, str], str] = {}
    for g in verdicts:
        if g.parameter is not None or g.labels:
            continue
        for row in g.rows:
            key = (row.size, row.workload)
            if row.scenario != c.scenario or row.workload == c.swept_on or key in out:
                continue
            mv = next((x for x in row.metrics if x.metric.column == c.metric), None)
            if mv is None or not mv.cells:
                continue
            sign = 1 if mv.metric.lower_is_better else -1
            # the lowest median among the ranked protocols (round 10: an unranked
            # connect:cooperative was named beside a ★ of classic-connect:sessioned)
            pool = ranked(mv.cells) or list(mv.cells)
            lead = min(pool, key=lambda p: (sign * mv.cells[p].median, p))
            mark = mark_words(mv) or "no mark"
            out[key] = (f"{g.name} ({row.size} {_members(c.scenario)}, {row.workload}): "
                        f"{mark}, lowest median {lead} "
                        f"{cell_words(mv.metric, mv.cells[lead])}")
    g0 = next((g for g in verdicts if g.name == c.grid), None)
    what = X_WORDS.get(g0.parameter or "", "this sweep") if g0 else "this sweep"
    # the same sweep of the same scenario on other workloads, in grids of their own (round
    # 10: kip415-hb-spread on 16x8c, kip415-hb-spread-10ms on 16x8c-task10ms)
    swept_too = sorted({f"{row.workload} ({g.name})" for g in verdicts
                        if g0 is not None and g.labels and g.parameter == g0.parameter
                        and g.name != g0.name for row in g.rows
                        if row.scenario == c.scenario and row.workload != c.swept_on})
    text = (f"found on {c.swept_on} only ({what} was run on no other workload)" if not swept_too
            else f"found on {c.swept_on} ({what} was also run on {', '.join(swept_too)}: "
            "its own rows)")
    if out:
        text += ("; the same scenario on other workloads, " + FIXED_WORDS.get(
            g0.parameter or "" if g0 else "", "at fixed conditions") + ": "
            + "; ".join(out.values()))
    return text


def _members(scenario: str) -> str:
    return "workers" if scenario.startswith(("kip415", "worker-")) else "members"


#: How a caveat names a swept timing, and the other grids' fixed value of it.
X_WORDS = {"heartbeat_spread_ms": "the heartbeat spread"}
FIXED_WORDS = {"heartbeat_spread_ms": "heartbeats not spread"}


def with_caveats(found: Sequence[Claim], verdicts: Sequence[GridVerdict],
                 runs: Sequence[Mapping[str, Any]]) -> list[Claim]:
    """The sentences with their caveats (each computed from the runs), after the ones a
    sentence already carries (a mark's limits): ``Claim.caveats``, the note the page prints
    under the sentence (``Claim.full``: the sentence with them in words)."""
    out = []
    for c in found:
        parts = [x for x in (other_metrics(c, verdicts), restore_rows(c, verdicts, runs),
                             assignor_cause(c, verdicts), sign_test_draw(c, verdicts),
                             delay_variants(c, verdicts), other_workloads(c, verdicts)) if x]
        if parts:
            c = replace(c, caveats=(*c.caveats, *parts))
        said = assignor_clause(c, verdicts)
        if said:
            # in the sentence: the win is the loser's assignor's, not a protocol's
            c = replace(c, text=c.text.rstrip() + said)
        out.append(c)
    return out
