"""What a share group's (KIP-932) marks and sentences against a consumer group (KIP-848) may
claim, beyond the verdict test (docs/lab.md, "Share groups against consumer groups"; the fifth
share review):

- **Records processed twice after a member loss is the consumer's commit interval**
  (:func:`unmark_commit_dependent`): a consumer group's crashed member loses what it
  processed since its last commit (5 s auto-commit by default); committing each batch
  (``consumer:uniform@commit100ms``) ties the share group. Where a grid has no such column,
  a share-vs-consumer mark on that metric does not stand.
- **The broker's share lag against a ★ on the share lag peak** (:func:`unmark_broker_lag`):
  the processed-based excess peak is not what an operator sees; where the broker's share lag
  (log end offset minus the share-partition start offset) reaches the consumer group's excess
  peak on a seed, the share group's ★ on lag peak does not stand.
- **One sentence per scenario family and size** (:func:`family_key`, :func:`share_claims`):
  a share sentence against a consumer group stands for every candidate of its family (a
  member lost: crowd-crash, owner-crash, owner-kill) at its size, and says how many.
- **The lock limit** (:func:`lock_limit_clause`): a lost host (a crash, nothing closes)
  holding acquired records pins the share-partition start offset for the lock duration; above
  ``group.share.partition.max.record.locks`` / ``share.record.lock.duration.ms`` records/s a
  partition (KIP-932's in-flight limit) its other members stop until the locks expire. A kill
  releases the records on disconnect (Kafka's ``ShareSessionCache`` disconnect listener).
- **Confirmation**: a sentence on a grid without a second seed set says so itself.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from groupcoord.lab.findings import Metric, family, number, run_settings, work_value
from groupcoord.lab.limits import SHARE_CALIBRATION, broker_minimum, share_cells
from groupcoord.lab.mechanism import ORDERING
from groupcoord.lab.verdict import (
    MIN_SEEDS,
    Claim,
    GridVerdict,
    MetricVerdict,
    fresh_seeds,
    is_companion,
    mark_words,
    modes,
    threshold,
    widest_gap,
    words,
)

#: The verdict of a share-vs-consumer mark on records processed twice after a member loss
#: in a grid without a commit-per-batch consumer column.
COMMIT_DEPENDENT = "commit interval"
#: The verdict of a share ★ on lag peak that the broker's share lag reaches.
BROKER_LAG = "broker share lag"

LOCK_DURATION = "group.share.record.lock.duration.ms"
MAX_LOCKS = "group.share.partition.max.record.locks"
#: The scenario families of :func:`family_key`: a member lost, however.
MEMBER_LOST = "a member lost"
#: The share page's words for the metrics a family sentence names.
LABELS = {"lag_record_s": "excess lag", "lag_peak": "excess lag peak",
          "resource_downtime_ms": "resource downtime",
          "records_reprocessed": "records processed twice", "stall_ms": "stall",
          "time_to_converge_ms": "time to converge"}


def _member_loss(scenario: str) -> bool:
    return "crash" in scenario or "kill" in scenario


def _share_vs_consumer(protocols: Sequence[str]) -> bool:
    fams = {family(p) == "share" for p in protocols if p}
    return len(fams) == 2


def _commit_variant(protocol: str) -> float | None:
    """The commit interval (ms) of a consumer protocol's timing variant, None otherwise."""
    from groupcoord.sim.settings import split_timing

    try:
        base, timings = split_timing(protocol)
    except ValueError:
        return None
    v = timings.get("commit_interval_ms")
    return float(v) if v is not None and base != protocol else None


def _unmark(mv: MetricVerdict, verdict: str, why: str) -> None:
    for c in mv.cells.values():
        c.mark = ""
    mv.verdict, mv.best, mv.beaten, mv.limit, mv.depends = verdict, (), (), "", why


def commit_reference(verdicts: Sequence[GridVerdict]) -> str:
    """Where the page shows the commit interval deciding records processed twice: "at 100 ms
    a tie in equal-capacity" from the first member-loss row where a consumer group's
    commit-per-batch column ties the share group (medians within the metric's floor) while
    its default beats it by more; "" where none does."""
    for g in verdicts:
        variants = {p: ms for p in g.protocols if (ms := _commit_variant(p)) is not None}
        share = next((p for p in g.protocols if family(p) == "share"), None)
        if not variants or share is None:
            continue
        for row in g.rows:
            if not _member_loss(row.scenario):
                continue
            for mv in row.metrics:
                if mv.metric.column != "records_reprocessed" or share not in mv.cells:
                    continue
                floor, own = mv.metric.floor, mv.cells[share].median
                for p, ms in variants.items():
                    base = p.partition("@")[0]
                    if (p in mv.cells and base in mv.cells
                            and abs(mv.cells[p].median - own) <= floor
                            and mv.cells[base].median - own > floor):
                        return f"at {number(ms)} ms a tie in {g.name}"
    return ""


def unmark_commit_dependent(verdicts: Sequence[GridVerdict]) -> None:
    """No share-vs-consumer ★ or = on records processed twice after a member loss in a grid
    without a commit-per-batch consumer column: the consumer group's count there is what its
    member processed since its last 5 s auto-commit, a fact of the commit interval (the
    equal-capacity grid's ``consumer:uniform@commit100ms`` ties the share group; the fifth
    share review's run A: 69 against 3). The row reads "no mark: depends on the consumer's
    commit interval (at 100 ms a tie in <grid>)"; the values stay. A first seed set's mark the
    fresh set did not repeat reads the same (its siblings' reason, not "not confirmed": the
    first set's mark would rest on the commit interval too)."""
    ref = commit_reference(verdicts)
    why = "the consumer's commit interval" + (f" ({ref})" if ref else "")
    for g in verdicts:
        if any(_commit_variant(p) is not None for p in g.protocols):
            continue
        for row in g.rows:
            if not _member_loss(row.scenario):
                continue
            for mv in row.metrics:
                if (mv.metric.column == "records_reprocessed"
                        and mv.verdict in ("best", "tied", "unconfirmed")
                        and _share_vs_consumer([*mv.best, *mv.beaten])):
                    _unmark(mv, COMMIT_DEPENDENT, why)


def _broker_peaks(runs: Sequence[Mapping[str, Any]]
                  ) -> dict[tuple[str, str, int, str, int], float]:
    return {(str(r.get("protocol")), str(r.get("scenario")), int(r.get("size") or 0),
             str(r.get("workload")), int(r.get("seed") or 0)): float(r["share_lag_peak"])
            for r in runs
            if r.get("share_lag_peak") is not None and family(str(r.get("protocol"))) == "share"}


def unmark_broker_lag(verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]]
                      ) -> None:
    """No share ★ on excess lag peak where the broker's share lag peak (what an operator
    sees: end offset minus share-partition start offset, ``share_lag_peak``) on one of the
    cell's seeds reaches the lowest excess lag peak of a consumer group the ★ beats: the
    processed-based peak hides a crashed member's locked records. The row says so."""
    peaks = _broker_peaks(runs)
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                if (mv.metric.column != "lag_peak" or mv.verdict != "best"
                        or not _share_vs_consumer([*mv.best, *mv.beaten])):
                    continue
                share = next((p for p in mv.best if family(p) == "share"), None)
                others = [p for p in mv.beaten if family(p) != "share"]
                if share is None or not others:
                    continue
                key = (share, row.scenario, int(row.size or 0), str(row.workload))
                broker = [v for s in mv.cells[share].values
                          if (v := peaks.get((*key, int(s)))) is not None]
                low = min(min(mv.cells[p].values.values()) for p in others)
                if broker and max(broker) >= low:
                    _unmark(mv, BROKER_LAG,
                            f"the broker's share lag peak reaches {number(max(broker))} "
                            f"records on a seed, the consumer group's excess peak "
                            f"{number(low)} at its lowest")


def verdict_word(mv: MetricVerdict) -> str:
    """The verdict column's words for :data:`COMMIT_DEPENDENT` and :data:`BROKER_LAG`; ""
    for any other verdict."""
    if mv.verdict == COMMIT_DEPENDENT:
        return f"no mark: depends on {mv.depends}"
    if mv.verdict == BROKER_LAG:
        return f"no mark: {mv.depends}"
    return ""


def _cell_runs(runs: Sequence[Mapping[str, Any]], scenario: str, size: int,
               workload: str) -> Iterator[Mapping[str, Any]]:
    return (r for r in runs if (str(r.get("scenario")), int(r.get("size") or 0),
                                str(r.get("workload"))) == (scenario, size, workload))


def _production(runs: Sequence[Mapping[str, Any]], scenario: str, size: int,
                workload: str) -> tuple[int, float | None]:
    """A cell's production: its partitions and records per second a partition (the first run
    of the cell)."""
    r = next(_cell_runs(runs, scenario, size, workload), None)
    if r is None:
        return 0, None
    return int(r.get("total_partitions") or 0), work_value(r, "records_per_s")


def _faults(runs: Sequence[Mapping[str, Any]], scenario: str, size: int,
            workload: str) -> float:
    """A cell's poison-record rate (the first run of the cell: its workload's poison_rate)."""
    r = next(_cell_runs(runs, scenario, size, workload), None)
    return float(work_value(r, "poison_rate") or 0.0) if r is not None else 0.0


def _partitions(runs: Sequence[Mapping[str, Any]], scenario: str, size: int,
                workload: str) -> int:
    return next((int(r["total_partitions"]) for r in _cell_runs(runs, scenario, size, workload)
                 if r.get("total_partitions")), 0)


def family_key(runs: Sequence[Mapping[str, Any]]) -> Callable[[Claim], Hashable]:
    """A sentence's family for ``lab.verdict.claims``' ``family_of``: a share sentence against a
    consumer group is one of (scenario family, size, more members than partitions), a member
    lost (crowd-crash, owner-crash, owner-kill) being one family; None for any other (each
    its own)."""
    def key(c: Claim) -> Hashable:
        if not _share_vs_consumer([*c.best.split(" and "), c.worse]):
            return None
        fam = MEMBER_LOST if _member_loss(c.scenario) else c.scenario
        parts = _partitions(runs, c.scenario, c.size, c.workload)
        return (fam, c.size, bool(parts) and c.size > parts)
    return key


def family_rule(verdicts: Sequence[GridVerdict]) -> str:
    """The selection rule's clause for :func:`family_key` where a grid compares a share group
    with a consumer group; "" otherwise."""
    if not any(_share_vs_consumer(g.protocols) for g in verdicts):
        return ""
    return (" A share group against a consumer group gets at most one sentence per scenario "
            "family (crowd-crash, owner-crash and owner-kill are one: a member lost) and size "
            "(and whether the members outnumber the partitions), the first by the rule above (the "
            "largest effect: the family's most favourable cell, so a member loss's sentence "
            "also says on how many seeds its family's lost hosts above the lock limit stopped "
            "a partition); the note under each such sentence says how many candidates it "
            "stands for.")


def _settings(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first share run's settings that read (``findings.run_settings``)."""
    for r in runs:
        if family(str(r.get("protocol"))) == "share" and (d := run_settings(r)):
            return d
    return {}


def lock_limit(runs: Sequence[Mapping[str, Any]]) -> tuple[int, float] | None:
    """(max.record.locks, lock duration ms) of the share runs' settings (the broker default
    of ``coordinator.share_partitions.config`` where the settings do not set the limit)."""
    from groupcoord.coordinator.share_partitions.config import DEFAULT_MAX_RECORD_LOCKS

    s = _settings(runs)
    if LOCK_DURATION not in s:
        return None
    return int(s.get(MAX_LOCKS) or DEFAULT_MAX_RECORD_LOCKS), float(s[LOCK_DURATION])


def _rate(r: Mapping[str, Any]) -> float | None:
    v = work_value(r, "records_per_s")
    return float(v) if v is not None else None


def _busy(r: Mapping[str, Any]) -> float | None:
    """A share member's busy share of its time (KIP-932: every member of a partition fetches
    it, so the partitions' records are shared by all members): records/s a partition times
    the partitions over the members, times the mean processing time a record."""
    rate, ms = _rate(r), work_value(r, "processing_ms")
    parts, size = int(r.get("total_partitions") or 0), int(r.get("size") or 0)
    if rate is None or ms is None or not parts or not size:
        return None
    return rate * parts / size * float(ms) / 1000.0


def _over(runs: Sequence[Mapping[str, Any]], limit: float, kill: bool
          ) -> list[tuple[str, int, str, float, int, list[Mapping[str, Any]]]]:
    """The page's own member-loss cells of a share group above the lock-limit rate, with more
    members than partitions, as (scenario, size, workload, rate, seeds, stopped seeds' runs)."""
    cells: dict[tuple[str, int, str], list[Mapping[str, Any]]] = {}
    for r in runs:
        scen = str(r.get("scenario"))
        if (family(str(r.get("protocol"))) != "share" or not r.get("ok")
                or not _member_loss(scen) or ("kill" in scen) != kill):
            continue
        rate, parts = _rate(r), int(r.get("total_partitions") or 0)
        if rate is None or rate <= limit or not parts or int(r.get("size") or 0) <= parts:
            continue
        cells.setdefault((scen, int(r["size"]), str(r.get("workload"))), []).append(r)
    out = []
    for (scen, size, workload), rs in sorted(cells.items()):
        seeds = {int(r.get("seed") or 0): r for r in rs}
        stopped = [r for r in seeds.values() if float(r.get("resource_downtime_ms") or 0) > 0]
        out.append((scen, size, workload, _rate(rs[0]) or 0.0, len(seeds), stopped))
    return out


def _cells_over(runs: Sequence[Mapping[str, Any]], limit: float, kill: bool) -> list[str]:
    """The page's own member-loss cells of a share group above the lock-limit rate, with more
    members than partitions: on how many seeds a partition stopped, the stopped seeds' median
    excess lag and partitions stopped."""
    out = []
    for scen, size, workload, rate, seeds, stopped in _over(runs, limit, kill):
        one = next((r for r in runs if (r.get("scenario"), int(r.get("size") or 0),
                                        r.get("workload")) == (scen, size, workload)
                    and family(str(r.get("protocol"))) == "share"), None)
        busy = _busy(one) if one is not None else None
        load = f", members {busy:.0%} busy" if busy is not None else ""
        text = (f"{scen} at {size} on {workload}, {number(rate)} records/s{load}: "
                f"a partition stopped on {len(stopped)} of {seeds} seeds")
        if stopped:
            lag = statistics.median(float(r.get("lag_record_s") or 0) for r in stopped)
            down = statistics.median(float(r["resource_downtime_ms"]) for r in stopped)
            text += f" ({number(lag)} record·s, {number(down / 1000)} s stopped)"
        out.append(text)
    return out


def load_share_calibration(path: Path = SHARE_CALIBRATION) -> list[dict[str, Any]]:
    """The share calibration's cells (``lab calibrate --share --json``: ``cells``); [] when
    the file is not there or is not such a document (``lab.limits.share_cells``, the one
    reader of the shipped file)."""
    return share_cells(path)


def wire_lost_hosts(cells: Sequence[Mapping[str, Any]] | None = None
                    ) -> list[tuple[str, int, str, int, int]]:
    """The share calibration's lost-host cells (``lab calibrate --share``: a hung
    ShareConsumer, SIGSTOP), as (scenario, members, workload, runs whose partition stopped,
    runs), from the cells' ``lost_host`` counts (``lab.share_calibration.lost_host_counts``);
    the shipped ``lab/data/share_calibration.json`` by default."""
    if cells is None:
        cells = load_share_calibration()
    out = []
    for c in cells:
        n = c.get("lost_host")
        if isinstance(n, dict) and n.get("runs"):
            out.append((str(c.get("scenario")), int(c.get("members") or 0),
                        str(c.get("workload") or ""), int(n.get("wire_stopped") or 0),
                        int(n["runs"])))
    return out


def wire_lost_host_stops(cells: Sequence[Mapping[str, Any]] | None = None
                         ) -> dict[tuple[str, int, str], list[float]]:
    """The share calibration's lost-host cells' wire runs, each run's partitions stopped (ms,
    ``resource_downtime_ms`` as the calibration measured it), per (scenario, members,
    workload); the shipped ``lab/data/share_calibration.json`` by default."""
    if cells is None:
        cells = load_share_calibration()
    return {(str(c.get("scenario")), int(c.get("members") or 0), str(c.get("workload") or "")):
            [float(r.get("resource_downtime_ms") or 0.0) for r in c.get("wire") or ()]
            for c in cells if isinstance(c.get("lost_host"), dict)}


def wire_tail_words(stops: Sequence[float], model: Sequence[float], floor: float) -> str:
    """The wire's lost-host runs that stopped their partition longer than the model's longest
    stop by more than ``floor`` (ms): "on 3 of 10 runs for 36.5, 38.1 and 53.2 s, against the
    model's 23.4 s on 40 of 40 seeds (its longest 23.4 s)"; "" where none did."""
    if not model or not stops:
        return ""
    longest = max(model)
    tail = sorted(v for v in stops if v > longest + floor)
    if not tail:
        return ""
    stopped = [v for v in model if v > floor]
    said = [f"{number(v / 1000.0)}" for v in tail]
    listed = (", ".join(said[:-1]) + " and " + said[-1]) if len(said) > 1 else said[0]
    return (f"on {len(tail)} of {len(stops)} runs for {listed} s, against the model's "
            f"{number(statistics.median(stopped) / 1000.0) if stopped else 0} s on "
            f"{len(stopped)} of {len(model)} seeds (its longest {number(longest / 1000.0)} s)")


def _wire_count(cells: Sequence[Mapping[str, Any]] | None = None) -> str:
    """"9 of 10 runs (owner-crash at 12 on 1x4-hot)": the wire's lost hosts that stopped
    their partition, per calibration cell; "" without one."""
    return "; ".join(f"{k} of {n} runs ({scen} at {size} on {wl})"
                     for scen, size, wl, k, n in wire_lost_hosts(cells))


def held_fetch_clause(runs: Sequence[Mapping[str, Any]],
                      cells: Sequence[Mapping[str, Any]] | None = None) -> str:
    """Why a lost host above the lock limit stops its partition on nearly every seed: the
    model serves the ShareFetch it left waiting at the broker (Kafka's broker keeps a waiting
    share fetch, ``DelayedShareFetch``, and completes it when records arrive, whatever the
    client is doing), so the fetch acquires records for the dead member; a waiting fetch is
    answered empty after its max wait (``sim.share_convergence.FETCH_MAX_WAIT_MS``), so this
    is near-certain only where records arrive well within it: the page's cells above the
    limit, their interval between records, and the wire's count of hung share consumers
    that stopped their partition (``cells``: the share calibration's)."""
    from groupcoord.sim.share_convergence import FETCH_MAX_WAIT_MS

    lim = lock_limit(runs)
    if lim is None:
        return ""
    over = _over(runs, lim[0] / (lim[1] / 1000.0), kill=False)
    if not over:
        return ""
    every = ", ".join(dict.fromkeys(f"{number(1000.0 / rate)} ms ({wl})"
                                    for _, _, wl, rate, _, _ in over if rate))
    wire = _wire_count(cells)
    return ("why a lost host stops its partition on nearly every seed: the model serves the "
            "ShareFetch the lost host left waiting at the broker (Kafka's broker keeps a "
            "waiting share fetch and completes it when records arrive), which acquires records "
            "for the dead member, so it strands records wherever a record "
            f"comes well within a fetch's {number(FETCH_MAX_WAIT_MS)} ms max wait (this page: "
            f"one every {every}); a fetch that waits longer is answered empty and strands "
            "nothing" + (f"; on the wire a hung share consumer (SIGSTOP) stopped its partition "
                         f"on {wire}" if wire else ""))


def lock_limit_clause(c: Claim, runs: Sequence[Mapping[str, Any]]) -> str:
    """The lock-limit condition of a share sentence on a member loss (KIP-932's in-flight
    limit), generated from the runs' settings: the limit rate, the page's own cells above it,
    and the sentence's cell's own rate; a kill's sentence says the release on disconnect is
    why it holds above it. "" for any other sentence."""
    if not _member_loss(c.scenario) or not _share_vs_consumer([*c.best.split(" and "),
                                                               c.worse]):
        return ""
    lim = lock_limit(runs)
    if lim is None:
        return ""
    locks, dur = lim
    limit = locks / (dur / 1000.0)
    mine = [r for r in runs if (str(r.get("scenario")), int(r.get("size") or 0),
                                str(r.get("workload"))) == (c.scenario, c.size, c.workload)
            and family(str(r.get("protocol"))) == "share"]
    rate = _rate(mine[0]) if mine else None
    kill = "kill" in c.scenario
    head = (f"Lock limit: a lost host holding acquired records pins the share-partition start "
            f"offset; above max.record.locks / share.record.lock.duration.ms ({number(locks)} "
            f"/ {number(dur / 1000)} s = {number(limit)} records/s a partition) the "
            "partition's other members stop until the locks expire")
    crashes = _cells_over(runs, limit, kill=False)
    if crashes:
        head += " (this page: " + "; ".join(crashes) + ")"
    own = ""
    if rate is not None:
        own = (f"; this cell runs {number(rate)} records/s a partition, "
               + ("under the limit" if rate <= limit else "above it"))
    if kill:
        kills = _cells_over(runs, limit, kill=True)
        held = held_fetch_clause(runs) if crashes else ""
        return (head + own + "; a kill releases the records on disconnect (the share session "
                "ends with the connection), which is why kills hold above it"
                + (" (this page: " + "; ".join(kills) + ")" if kills else "")
                + (f"; {held}" if held else "") + ".")
    held = held_fetch_clause(runs) if crashes else ""
    return head + own + ("; the sentence holds at this rate only" if rate is not None
                         and rate <= limit else "") + (f"; {held}" if held else "") + "."


def share_modes(values: Sequence[float], m: Metric) -> list[list[float]]:
    """The seeds' distinct outcomes on the share page: ``verdict.modes``, and also where one
    side of the widest gap is one value repeated on at least two seeds (no spread: the event
    cost nothing there, as a crash of a consumer group's idle member) and the gap counts
    (:func:`verdict.threshold`) and is at least half its larger end. The spread rule of
    ``modes`` keeps a continuous draw one outcome; a repeated exact value beside a gap of a
    factor of 2 is no draw (the seventh share review: crowd-crash at 12 on 1x4-busy, a consumer
    group's excess lag 0, 0, 0, 161,668, 223,304 read as "0 (0-223,304)")."""
    found = modes(values, m)
    if len(found) > 1:
        return found
    v = sorted(values)
    if len(v) < 3:
        return [v]
    lo, hi, gap = widest_gap(v)
    flat = any(len(x) >= 2 and x[0] == x[-1] for x in (lo, hi))
    if (flat and gap > threshold(m, lo[-1], hi[0])
            and gap >= 0.5 * max(abs(lo[-1]), abs(hi[0]))):
        return [lo, hi]
    return [v]


def _all_values(mv: MetricVerdict, protocol: str) -> list[float]:
    values = list(mv.cells[protocol].values.values())
    if mv.again is not None and protocol in mv.again.cells:
        values += list(mv.again.cells[protocol].values.values())
    return values


def all_seed_outcomes(verdicts: Sequence[GridVerdict]) -> None:
    """A share-vs-consumer grid's cells split over all their seeds, the first and the fresh
    set together (:func:`share_modes`), the outcome most of those seeds had first (the seventh
    share review: owner-crash at 12 on 1x4-hot stopped a partition on 24 of 40 seeds, 9 of the
    first 20, and led with 0); a cell whose seeds do not split over both sets shows its median
    and range. Report-level: the marks, judged on each set as before, stay;
    :func:`all_seeds_note` gives the median of all seeds beside a split cell."""
    for g in verdicts:
        if not _share_vs_consumer(g.protocols):
            continue
        for row in g.rows:
            for mv in row.metrics:
                for p, c in mv.cells.items():
                    found = share_modes(_all_values(mv, p), mv.metric)
                    c.outcomes = (sorted(found, key=lambda o: (-len(o), o[0]))
                                  if len(found) > 1 else [sorted(c.values.values())])


def all_seeds_note(column: str, protocol: str, row: Any, seeds: Sequence[int]) -> str:
    """A split cell's median over all its seeds (both sets, :func:`all_seed_outcomes`), for
    ``lab.report``'s ``cell_note``; "" for a cell that does not split."""
    mv = next((x for x in getattr(row, "metrics", ()) if x.metric.column == column), None)
    if mv is None or protocol not in mv.cells or not mv.cells[protocol].split:
        return ""
    values = _all_values(mv, protocol)
    m = mv.metric
    return f"median of all {len(values)} seeds {number(statistics.median(values) / m.scale)}"


#: The columns :func:`contrary_clause` does not weigh: counts of different things for the two
#: group types (a share group's assignment change has no hand-over), never marked.
NOT_COMPARED = frozenset({"resources_moved", "messages"})


def _paired(mv: MetricVerdict, protocol: str) -> dict[int, float]:
    c = mv.cells.get(protocol)
    out = dict(c.values) if c is not None else {}
    if mv.again is not None and protocol in mv.again.cells:
        out.update(mv.again.cells[protocol].values)
    return out


def broker_lag_text(runs: Sequence[Mapping[str, Any]], protocol: str, scenario: str,
                    size: int, workload: str | None, seeds: Sequence[int]) -> str:
    """"the broker's share lag N": the median over ``seeds`` of a share cell's broker share lag
    peak (log end offset minus the share-partition start offset, what an operator's share-group
    lag alert reads; ``share_lag_peak``, ``lab.share_report.attach_share_lag``), to stand
    beside the processed-based excess peak a sentence quotes; "" without it."""
    if family(protocol) != "share":
        return ""
    want = set(seeds)
    vals = [float(r["share_lag_peak"]) for r in runs
            if r.get("protocol") == protocol and r.get("scenario") == scenario
            and int(r.get("size") or 0) == size
            and (workload is None or r.get("workload") == workload) and r.get("ok")
            and int(r.get("seed") or 0) in want and r.get("share_lag_peak") is not None]
    return f"the broker's share lag {number(statistics.median(vals))}" if vals else ""


#: The claim's own figure of the best protocol: "3 records (range 2-7 records)".
_OWN_FIGURE = re.compile(r"(has the lowest (?:excess )?lag peak, [^()]*\(range [^()]*)\)")


def _with_broker_lag(text: str, c: Claim, verdicts: Sequence[GridVerdict],
                     runs: Sequence[Mapping[str, Any]]) -> str:
    """A share claim on the excess lag peak with the broker's share lag beside its figure
    (over the row's seeds): "3 records (range 2-7 records; the broker's share lag 27)"."""
    best = c.best.split(" and ")[0]
    if c.metric != "lag_peak" or family(best) != "share":
        return text
    grid = next((g for g in verdicts if g.name == c.grid), None)
    row = next((r for r in grid.rows if (r.scenario, r.size, str(r.workload))
                == (c.scenario, c.size, c.workload or str(r.workload))), None) if grid else None
    mv = next((m for m in row.metrics if m.metric.column == "lag_peak"), None) if row else None
    cell = mv.cells.get(best) if mv is not None else None
    if cell is None:
        return text
    broker = broker_lag_text(runs, best, c.scenario, c.size, c.workload, list(cell.values))
    return _OWN_FIGURE.sub(lambda m: f"{m.group(1)}; {broker})", text, count=1) if broker \
        else text


def contrary_clause(c: Claim, verdicts: Sequence[GridVerdict],
                    runs: Sequence[Mapping[str, Any]] = ()) -> str:
    """The claim's words on its own cell's other metrics where the other protocol is better
    on most paired seeds (both seed sets, better by more than the metric's floor), whatever
    the marks say: the seventh share review found, under a downtime win at 12 on 12, the share
    group's lag peak worse on 9 of 10 paired seeds, one seed short of the sign test's 10 of
    10, so the table shows "tie". "" where no metric of the cell goes the other way."""
    parts = [text for _, text in contrary_parts(c, verdicts, runs)]
    return ("In the same cell " + "; ".join(parts) + ".") if parts else ""


def contrary_short(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """What stays in the sentence when its contrary clause (:func:`contrary_clause`) goes to
    the note: the metrics its winner loses in the same cell, named, with their medians and
    paired seeds ("Worse on its excess lag peak (118 against 99.5 records, 9 of 10 paired
    seeds) (note)."), as a paper sentence keeps
    "Worse on ... (note)." (``verdict.weakest_metric``; the eleventh outside share review:
    sentence 1's worse lag peak was only in the note). "" where none goes the other way."""
    parts = contrary_parts(c, verdicts)
    if not parts:
        return ""
    # each metric with its medians and paired seeds: the reversal is the sentence's, not the
    # note's alone (the fifteenth outside share review: "worse on its excess lag peak" without
    # its figures reads as a footnote)
    said = []
    for n, t in parts:
        m = re.search(r"worse on (\d+ of \d+) paired seeds \(medians ([^;()]*)", t)
        said.append(f"{n} ({m.group(2)}, {m.group(1)} paired seeds)" if m else n)
    both = (", ".join(said[:-1]) + " and " + said[-1]) if len(said) > 1 else said[0]
    return f"Worse on its {both} (note)."


def contrary_parts(c: Claim, verdicts: Sequence[GridVerdict],
                   runs: Sequence[Mapping[str, Any]] = ()) -> list[tuple[str, str]]:
    """(metric's name, words) per metric of :func:`contrary_clause`, in the row's order."""
    grid = next((g for g in verdicts if g.name == c.grid), None)
    best = c.best.split(" and ")[0]
    if grid is None or not _share_vs_consumer([best, c.worse]):
        return []
    row = next((r for r in grid.rows if (r.scenario, r.size, str(r.workload))
                == (c.scenario, c.size, c.workload or str(r.workload))), None)
    parts = []
    for mv in row.metrics if row is not None else ():
        if mv.metric.column in NOT_COMPARED or mv.metric.column == c.metric:
            continue
        mine, other = _paired(mv, best), _paired(mv, c.worse)
        seeds = sorted(set(mine) & set(other))
        sign = 1 if mv.metric.lower_is_better else -1
        worse = sum(1 for s in seeds if sign * (mine[s] - other[s])
                    > threshold(mv.metric, mine[s], other[s]))
        if seeds and 2 * worse > len(seeds):
            m = mv.metric
            med = [number(statistics.median(x.values()) / m.scale) for x in (mine, other)]
            # a share lag peak: the broker's share lag beside it, over the same seeds
            broker = (broker_lag_text(runs, best, c.scenario, c.size, c.workload, seeds)
                      if m.column == "lag_peak" else "")
            name = LABELS.get(m.column, m.label)
            parts.append((name, f"its {name} is worse on {worse} of "
                          f"{len(seeds)} paired seeds (medians {med[0]} against {med[1]}"
                          f"{' ' + m.unit if m.unit else ''}{'; ' + broker if broker else ''})"))
    return parts


#: A claim's own figures' ranges: the best's "(range 2-7 records; ...)" and the runner-up's
#: "against 13,121 records (12,997-14,308 records) for".
_BEST_RANGE = re.compile(r" \(range ([^()]*)\)")
_WORSE_RANGE = re.compile(r"(?<= against )[^()]*? \(([^()]*)\)(?= for )")
#: A same-members comparison's seed counts: " (medians of 10 and 10 seeds, unpaired)".
_SAME_SEEDS = re.compile(r" \((medians of \d+ and \d+ seeds, unpaired)\)(?=\. On )")


def _figure_movables(text: str, c: Claim, runs: Sequence[Mapping[str, Any]] = ()
                     ) -> list[tuple[str, str, str]]:
    """The claim's figures' ranges and its same-members comparison's seed counts as clauses
    the note may take (``Claim.movable``), each with the note's words that keep its facts. A
    range in the note names its cell ("at 12 on 4 (1x4-busy)"): the note quotes other cells'
    numbers before it (the twelfth outside share review: the 12-member cell's ranges read as
    those of the 4-on-4 cell quoted just before them)."""
    out: list[tuple[str, str, str]] = []
    best = c.best.split(" and ")[0]
    parts = _partitions(runs, c.scenario, c.size, c.workload) if runs else 0
    where = (f" at {c.size} on {parts} ({c.workload})" if parts
             else f" at {c.size} members ({c.workload})" if c.workload else "")
    if m := _BEST_RANGE.search(text):
        out.append((m.group(0), "",
                     f"{best}'s range{where} {m.group(1).replace('; ', ', ')}"))
    if m := _WORSE_RANGE.search(text):
        frag = f" ({m.group(1)})"
        out.append((frag, "", f"{c.worse}'s range{where} {m.group(1)}"))
    if m := _SAME_SEEDS.search(text):
        out.append((m.group(0), "", f"the same members' figures: {m.group(1)}"))
    return out


def _ok_values(runs: Sequence[Mapping[str, Any]], protocol: str, scenario: str, size: int,
               column: str, partitions: int, workload: str | None = None
               ) -> dict[str, list[float]]:
    """Per workload, a protocol's values of ``column`` in the runs of a scenario and size on
    a topic of ``partitions`` partitions (``workload``: that one only)."""
    out: dict[str, list[float]] = {}
    for r in runs:
        if (r.get("protocol") == protocol and r.get("scenario") == scenario
                and int(r.get("size") or 0) == size and r.get("ok")
                and int(r.get("total_partitions") or 0) == partitions
                and r.get(column) is not None
                and (workload is None or r.get("workload") == workload)):
            out.setdefault(str(r.get("workload")), []).append(float(r[column]))
    return out


def _table_values(verdicts: Sequence[GridVerdict], protocol: str, scenario: str, size: int,
                  column: str, workload: str | None, grid: str = "") -> list[float]:
    """A protocol's values in a cell as the tables' medians take them: the seeds of the first
    seed set (what the row's mark rests on); ``grid``'s row first. [] where no table has the
    cell (the twelfth outside share review: one seed basis for a cell, the table's)."""
    rows = sorted(((g.name != grid, mv) for g in verdicts for row in g.rows
                   if (row.scenario, row.size, str(row.workload)) == (scenario, size,
                                                                      str(workload))
                   for mv in row.metrics if mv.metric.column == column
                   and protocol in mv.cells), key=lambda x: x[0])
    if not rows:
        return []
    return list(rows[0][1].cells[protocol].values.values())


def _metric_of(verdicts: Sequence[GridVerdict], column: str) -> Metric | None:
    return next((m for g in verdicts for m in g.metrics if m.column == column), None)


def _load(runs: Sequence[Mapping[str, Any]], workload: str | None
          ) -> tuple[dict[str, Any], float] | None:
    """A workload's model without its rate, and its production over the topic (records/s);
    None where no run of it says."""
    for r in runs:
        if r.get("workload") == workload and r.get("work") and r.get("total_partitions"):
            work = dict(json.loads(str(r["work"])))
            rate = float(work.pop("records_per_s", 0.0) or 0.0)
            return work, rate * int(r["total_partitions"])
    return None


def same_load(runs: Sequence[Mapping[str, Any]], workload: str | None,
              others: Sequence[str]) -> list[str]:
    """Of ``others``, the workloads of ``workload``'s production (records/s over the topic,
    within 0.1 %) and its model otherwise (processing, poll size, poison records): 1x12-hot for
    1x4-hot, never 1x12-busy80, whatever their partitions."""
    mine = _load(runs, workload)
    if mine is None:
        return []
    out = []
    for wl in sorted(others):
        theirs = _load(runs, wl)
        if theirs is not None and theirs[0] == mine[0] \
                and abs(theirs[1] - mine[1]) <= 1e-3 * max(mine[1], 1.0):
            out.append(wl)
    return out


def same_members_clause(c: Claim, verdicts: Sequence[GridVerdict],
                        runs: Sequence[Mapping[str, Any]]) -> str:
    """Where the sentence's members outnumber its partitions, the comparison at the same
    members the page has (the share group on its partitions against a consumer group with a
    partition for each member: "Share groups: the same members on either topic"), which the
    claim leads with: the seventh share review asked that a win over a consumer group's idle
    members not be the sentence's first number. The consumer cell is one of the same
    production and model (:func:`same_load`: 1x12-hot for 1x4-hot). "" where no such consumer
    cell ran."""
    best = c.best.split(" and ")[0]
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    m = _metric_of(verdicts, c.metric)
    if m is None or not parts or c.size <= parts or not _share_vs_consumer([best, c.worse]):
        return ""
    mine = _ok_values(runs, best, c.scenario, c.size, c.metric, parts, c.workload)
    other = _ok_values(runs, c.worse, c.scenario, c.size, c.metric, c.size)
    wl = same_members_workload(c, runs)
    if not mine or not wl:
        return ""
    grid = quoted_grid(c, verdicts, wl)
    theirs = _table_values(verdicts, c.worse, c.scenario, c.size, c.metric, wl,
                           grid) or other[wl]
    ours = _table_values(verdicts, best, c.scenario, c.size, c.metric, c.workload, c.grid) or (
        mine[c.workload] if c.workload in mine else next(iter(mine.values())))
    unit = f" {m.unit}" if m.unit else ""
    med = [number(statistics.median(x) / m.scale) for x in (ours, theirs)]
    where = f"{grid}, {wl}" if grid else wl
    return (f"{c.scenario}, the same {c.size} members: {best} on {parts} partitions "
            f"{med[0]} against {c.worse} on {c.size} ({where}) {med[1]}{unit} of "
            f"{LABELS.get(m.column, m.label)} (medians of {len(ours)} and {len(theirs)} "
            f"seeds, each table's, unpaired). On {parts} partitions ({c.workload}; {c.size - parts} consumer "
            "members idle): ")


def same_members_workload(c: Claim, runs: Sequence[Mapping[str, Any]]) -> str:
    """The workload of the consumer cell a same-members comparison quotes: the runner-up's
    runs at one member per partition on the claim's load (:func:`same_load`); "" where none
    ran."""
    other = _ok_values(runs, c.worse, c.scenario, c.size, c.metric, c.size)
    same = same_load(runs, c.workload, list(other))
    return same[0] if same else ""


def quoted_grid(c: Claim, verdicts: Sequence[GridVerdict], workload: str) -> str:
    """The grid, other than the claim's own, whose row of the claim's scenario and size on
    ``workload`` holds the claim's metric for its runner-up: the cells a same-members
    comparison quotes (owner-equal for an owner-kill claim on 1x4-hot); "" where the claim's
    own grid has that row or none does."""
    holders = [g.name for g in verdicts for row in g.rows
               if (row.scenario, row.size, str(row.workload)) == (c.scenario, c.size, workload)
               and any(mv.metric.column == c.metric and c.worse in mv.cells
                       for mv in row.metrics)]
    return "" if not holders or c.grid in holders else holders[0]


def equal_members_clause(c: Claim, verdicts: Sequence[GridVerdict],
                         runs: Sequence[Mapping[str, Any]]) -> str:
    """Where the sentence's members outnumber its partitions, the page's result on the same
    metric and scenario at one member per partition: first the same members on as many
    partitions on the sentence's load (:func:`same_load`: the share group's own result where
    a consumer group has a partition for each member), then as many members as the
    sentence's partitions (the sentence's workload where it ran, else another of those
    partitions, named): the mark, or "no mark" with the two medians. "" where the page has
    no such row."""
    best = c.best.split(" and ")[0]
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    if not parts or c.size <= parts or not _share_vs_consumer([best, c.worse]):
        return ""
    found: list[tuple[bool, str, MetricVerdict]] = []
    for g in verdicts:
        for row in g.rows:
            if (row.scenario != c.scenario or row.size != parts
                    or _partitions(runs, row.scenario, row.size, row.workload) != parts):
                continue
            for mv in row.metrics:
                if (mv.metric.column == c.metric and best in mv.cells
                        and c.worse in mv.cells):
                    found.append((str(row.workload) != c.workload, str(row.workload), mv))
    out = []
    same = _same_members_row(c, verdicts, runs)
    if same is not None:
        out.append(_row_words(c, *same))
    if found:
        _, wl, mv = min(found, key=lambda x: (x[0], x[1]))
        out.append(_row_words(c, parts, wl, mv))
    return " ".join(out)


def _row_words(c: Claim, parts: int, workload: str, mv: MetricVerdict) -> str:
    best = c.best.split(" and ")[0]
    m = mv.metric
    med = [number(mv.cells[p].median / m.scale) for p in (best, c.worse)]
    mark = mark_words(mv) or unmarked_words(mv, best, c.worse)
    n = sorted({len(mv.cells[p].values) for p in (best, c.worse)})
    seeds = " and ".join(str(k) for k in n)
    return (f"At {parts} on {parts} ({workload}): {mark}, {med[0]} against "
            f"{med[1]}{' ' + m.unit if m.unit else ''} (medians of {seeds} seeds, the "
            "table's).")


#: How much higher (lower, for a metric where higher is better) the best's median may be
#: than the runner-up's in an unmarked row before a note calls it higher, not a tie.
HIGHER_BY = 0.2


def unmarked_words(mv: MetricVerdict, best: str, worse: str) -> str:
    """An unmarked row's words where a note quotes it: "a tie (no mark)", or, where ``best``'s
    median is at least :data:`HIGHER_BY` worse than ``worse``'s (the thirteenth outside
    share review: 4,086 against 3,267 read "a tie"), "best higher, not separated (no
    mark)"; a row left with too few seeds says so."""
    m = mv.metric
    if mv.verdict == "few seeds":
        return f"no mark (< {MIN_SEEDS} seeds)"
    a, b = mv.cells[best].median, mv.cells[worse].median
    sign = 1.0 if m.lower_is_better else -1.0
    if sign * (a - b) >= HIGHER_BY * abs(b) and abs(a - b) > m.floor:
        return (f"{best} {'higher' if m.lower_is_better else 'lower'}, not separated "
                "(no mark)")
    return "a tie (no mark)"


def few_seeds_clause(c: Claim, verdicts: Sequence[GridVerdict],
                     runs: Sequence[Mapping[str, Any]]) -> str:
    """The rows a share sentence would have stood for but which a dropped seed left under
    :data:`MIN_SEEDS` (the thirteenth outside share review: one consumer run that never
    caught up unmarked owner-crash at 12 on 1x4-busy, the cleanest lost host below the lock
    limit): the same scenario family (a member lost) or scenario, size and metric, with
    both the sentence's protocols, each with its seeds and medians. "" where none."""
    best = c.best.split(" and ")[0]
    out = []
    for g in verdicts:
        for row in g.rows:
            same = ((_member_loss(row.scenario) and _member_loss(c.scenario))
                    or row.scenario == c.scenario)
            if not same or row.size != c.size:
                continue
            for mv in row.metrics:
                if mv.metric.column != c.metric or mv.verdict != "few seeds" \
                        or best not in mv.cells or c.worse not in mv.cells:
                    continue
                m = mv.metric
                n = min(len(mv.cells[p].values) for p in (best, c.worse))
                out.append(f"{row.scenario} on {row.workload} ({g.name}, {n} of {g.seeds} "
                           f"seeds after a dropped one: "
                           f"{number(mv.cells[best].median / m.scale)} against "
                           f"{number(mv.cells[c.worse].median / m.scale)}"
                           f"{' ' + m.unit if m.unit else ''})")
    if not out:
        return ""
    return f"Unmarked, with under {MIN_SEEDS} seeds: {'; '.join(out)}."


def _same_members_row(c: Claim, verdicts: Sequence[GridVerdict],
                      runs: Sequence[Mapping[str, Any]]
                      ) -> tuple[int, str, MetricVerdict] | None:
    """The page's row of the claim's scenario and size at one member per partition on the
    claim's load (:func:`same_load`): the share group itself on as many partitions as
    members, with the claim's metric for both its protocols."""
    best = c.best.split(" and ")[0]
    rows: dict[str, MetricVerdict] = {}
    for g in verdicts:
        for row in g.rows:
            if (row.scenario, row.size) != (c.scenario, c.size) or _partitions(
                    runs, row.scenario, row.size, str(row.workload)) != c.size:
                continue
            for mv in row.metrics:
                if mv.metric.column == c.metric and best in mv.cells and c.worse in mv.cells:
                    rows.setdefault(str(row.workload), mv)
    same = same_load(runs, c.workload, list(rows))
    return (c.size, same[0], rows[same[0]]) if same else None


def _span(values: Sequence[float], m: Metric) -> str:
    return f"{number(min(values) / m.scale)}\u2013{number(max(values) / m.scale)}"


def kill_lost_host_clause(c: Claim, verdicts: Sequence[GridVerdict],
                          runs: Sequence[Mapping[str, Any]]) -> str:
    """A kill's sentence (KIP-932: the share session ends with the connection, its records
    are released at once) quotes its lost host beside it: the crash of the same cell (the
    table's medians) and, where the members outnumber the partitions, the consumer group
    with the same members on as many partitions on the same load (:func:`same_load`), with
    which side is lower on every seed or that the ranges overlap (the eighth share review's
    control: a lost host's win at 12 members on 4 partitions reverses at 12 on 12). "" for
    any other sentence or where the page has no such crash."""
    best = c.best.split(" and ")[0]
    if "kill" not in c.scenario or not _share_vs_consumer([best, c.worse]):
        return ""
    crash = c.scenario.replace("kill", "crash")
    mv = next((x for g in verdicts for row in g.rows
               if (row.scenario, row.size, str(row.workload)) == (crash, c.size, c.workload)
               for x in row.metrics if x.metric.column == c.metric
               and best in x.cells and c.worse in x.cells), None)
    if mv is None:
        return ""
    m = mv.metric
    unit = f" {m.unit}" if m.unit else ""
    med = [number(mv.cells[p].median / m.scale) for p in (best, c.worse)]
    n = " and ".join(str(k) for k in sorted({len(mv.cells[p].values) for p in (best, c.worse)}))
    text = (f"A lost host ({crash}) in the same cell: {med[0]} against {med[1]}{unit} "
            f"(medians of {n} seeds, the table's)")
    parts = _partitions(runs, crash, c.size, c.workload)
    mine = list(mv.cells[best].values.values())
    other = _ok_values(runs, c.worse, crash, c.size, c.metric, c.size)
    same = same_load(runs, c.workload, list(other))
    if parts and c.size > parts and mine and same:
        theirs = _table_values(verdicts, c.worse, crash, c.size, c.metric,
                               same[0]) or other[same[0]]
        side = ("lower on every seed" if max(theirs) < min(mine) else
                "higher on every seed" if min(theirs) > max(mine) else "the ranges overlap")
        text += (f"; against {c.worse} on {c.size} ({same[0]}) "
                 f"{number(statistics.median(theirs) / m.scale)}{unit}, {side} "
                 f"({_span(theirs, m)} against {_span(mine, m)}; medians of {len(theirs)} "
                 f"and {len(mine)} seeds, each table's, unpaired)")
    return text + "."


def kill_crash_sentence(c: Claim, verdicts: Sequence[GridVerdict],
                        runs: Sequence[Mapping[str, Any]],
                        cells: Sequence[Mapping[str, Any]] | None = None) -> str:
    """A kill's sentence with the lost host of its own cell in it (the tenth outside share
    review: a platform team cannot choose how a member dies, and the family's sentence, its
    largest effect, picks the kill, whose records KIP-932's broker releases on disconnect).
    Where the members outnumber the partitions and the page has the crash of the same cell
    and the consumer group with the same members on as many partitions on the same load
    (:func:`same_load`): the kill's medians, then the crash's share median against that
    consumer group (worse or better on every seed, or the ranges overlap) and on how many
    seeds a share partition stopped, and for how long (median), above the lock limit. The
    rest of the sentence's reading goes whole to the note. "" where any of it is missing."""
    best = c.best.split(" and ")[0]
    if "kill" not in c.scenario or not _share_vs_consumer([best, c.worse]):
        return ""
    crash = c.scenario.replace("kill", "crash")

    def cell(scenario: str) -> MetricVerdict | None:
        return next((x for g in verdicts for row in g.rows
                     if (row.scenario, row.size, str(row.workload))
                     == (scenario, c.size, c.workload)
                     for x in row.metrics if x.metric.column == c.metric
                     and best in x.cells and c.worse in x.cells), None)

    kill, lost = cell(c.scenario), cell(crash)
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    if kill is None or lost is None or not parts or c.size <= parts:
        return ""
    # the tables' seeds of each cell (their first seed set), as the medians quoted beside
    mine = list(lost.cells[best].values.values())
    other = _ok_values(runs, c.worse, crash, c.size, c.metric, c.size)
    same = same_load(runs, c.workload, list(other))
    if not mine or not same:
        return ""
    theirs = _table_values(verdicts, c.worse, crash, c.size, c.metric, same[0]) \
        or other[same[0]]
    m = kill.metric
    sign = 1.0 if m.lower_is_better else -1.0
    side = ("worse than" if min(sign * v for v in mine) > max(sign * v for v in theirs) else
            "better than" if max(sign * v for v in mine) < min(sign * v for v in theirs) else
            "the ranges overlapping with")
    every = "" if side.startswith("the ranges") else " on every seed"
    unit = f" {m.unit}" if m.unit else ""
    label = LABELS.get(m.column, m.label)
    def beside(p: str) -> str:  # the wire's median of the same cell beside the model's
        w = wire_text(c.scenario, c.size, c.workload, p, m.column, cells)
        return (f" (wire: {w})" if w is not None
                else f" ({p.split(':')[0]}'s {c.scenario.split('-')[-1]} not run on the wire)")

    text = (f"{c.scenario}, {c.size} members on {parts} partitions ({c.workload}): {best} "
            f"{number(kill.cells[best].median / m.scale)}{beside(best)} against {c.worse} "
            f"{number(kill.cells[c.worse].median / m.scale)}{beside(c.worse)}{unit} of "
            f"{label}, medians of {len(kill.cells[best].values)} seeds.")
    if lock_limit_sentence(c, verdicts, runs, cells):
        return text  # the lost host has a sentence of its own (the lock limit)
    return (text + f" A lost host or hung process ({crash}) there: {best} "
            f"{number(lost.cells[best].median / m.scale)}, {side} {c.worse} on {c.size} "
            f"partitions ({number(statistics.median(theirs) / m.scale)}){every} (medians "
            f"of {len(mine)} and {len(theirs)} seeds, each table's).")


#: A sentence's metric (the tables' column) -> the share calibration's figure of it (the
#: runs' lag and lag peak are their excess over the paired control).
WIRE_METRIC = {"lag_record_s": "excess_lag_record_s", "lag_peak": "excess_lag_peak",
               "resource_downtime_ms": "resource_downtime_ms",
               "records_reprocessed": "records_reprocessed"}


def wire_median(scenario: str, size: int, workload: str, protocol: str, column: str,
                cells: Sequence[Mapping[str, Any]] | None = None) -> float | None:
    """The share calibration's wire median of one cell and side on a sentence's metric
    (``cells``: the shipped ``lab/data/share_calibration.json`` by default); None where no
    wire row measured it."""
    if cells is None:
        cells = load_share_calibration()
    key = WIRE_METRIC.get(column)
    for cell in cells:
        if (cell.get("scenario"), int(cell.get("members") or 0), cell.get("workload"),
                cell.get("protocol") or "share:simple") == (scenario, size, workload, protocol):
            v = ((cell.get("medians") or {}).get(key) or {}).get("wire") if key else None
            return None if v is None else float(v)
    return None


def wire_text(scenario: str, size: int, workload: str, protocol: str, column: str,
              cells: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """The wire's figure of one cell and side on a sentence's metric, for the sentence beside
    the model's: its median; where that is an excess under its floor or below 0, the raw
    figure against its control's (medians over the wire runs: the calibration line has the
    excess) and that the excess is within the control's noise. None where no wire row measured it."""
    from groupcoord.lab.share_calibration import SHARE_FLOORS

    w = wire_median(scenario, size, workload, protocol, column, cells)
    key = WIRE_METRIC.get(column, "")
    if w is None:
        return None
    if not key.startswith("excess_") or w > SHARE_FLOORS.get(key, 0.0):
        return number(w)
    raw = key.removeprefix("excess_")
    if cells is None:
        cells = load_share_calibration()
    rows = next((list(cell.get("wire") or []) for cell in cells
                 if (cell.get("scenario"), int(cell.get("members") or 0), cell.get("workload"),
                     cell.get("protocol") or "share:simple")
                 == (scenario, size, workload, protocol)), [])
    run = [float(r[raw]) for r in rows if r.get(raw) is not None]
    ctl = [float(r[f"control_{raw}"]) for r in rows if r.get(f"control_{raw}") is not None]
    if not run or not ctl:
        return "within its control's noise"
    return (f"{number(statistics.median(run))} against its control's "
            f"{number(statistics.median(ctl))}, within the control's noise")


def lock_limit_sentence(c: Claim, verdicts: Sequence[GridVerdict],
                        runs: Sequence[Mapping[str, Any]],
                        cells: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The lock limit as a sentence of its own (the eleventh outside share review: the page's
    most useful finding for a platform team stood as a clause of the kill's sentence): a lost
    host or hung process stalls a share partition for the record lock duration minus
    max.record.locks / the partition's rate (KIP-932's in-flight limit), computed from the
    runs' settings at the kill sentence's cell's rate and the page's other rates above the
    limit; the crash of the kill's cell stopped that long on how many seeds, its median
    against the consumer group with the same members on as many partitions, and the wire's
    hung share consumers (SIGSTOP) that stopped their partition. "" for any other sentence,
    or where no seed of the crash stopped a partition."""
    best = c.best.split(" and ")[0]
    lim = lock_limit(runs)
    if "kill" not in c.scenario or not _share_vs_consumer([best, c.worse]) or lim is None:
        return ""
    crash = c.scenario.replace("kill", "crash")
    locks, dur = lim
    over = _over(runs, locks / (dur / 1000.0), kill=False)
    stop = next(((rate, n, st) for scen, size, wl, rate, n, st in over
                 if (scen, size, wl) == (crash, c.size, c.workload)), None)
    parts = _partitions(runs, crash, c.size, c.workload)
    lost = next((x for g in verdicts for row in g.rows
                 if (row.scenario, row.size, str(row.workload)) == (crash, c.size, c.workload)
                 for x in row.metrics if x.metric.column == c.metric
                 and best in x.cells and c.worse in x.cells), None)
    if stop is None or not stop[2] or lost is None or not parts or c.size <= parts:
        return ""
    rate, seeds, stopped = stop
    # the lag peaks on the tables' seeds of each cell (their first seed set), as the median
    mine = list(lost.cells[best].values.values())
    other = _ok_values(runs, c.worse, crash, c.size, c.metric, c.size)
    same = same_load(runs, c.workload, list(other))
    m = lost.metric
    down = statistics.median(float(r["resource_downtime_ms"]) for r in stopped)

    def stall(r: float) -> str:
        return number(dur / 1000.0 - locks / r)

    others = sorted({x[3] for x in over if x[3] != rate})
    text = (f"Lock limit: a lost host or hung process ({crash}) stalls a share partition for "
            f"the record lock duration minus max.record.locks / the partition's rate "
            f"({number(dur / 1000)} s - {number(locks)} / {number(rate)} records/s = "
            f"{stall(rate)} s on {c.workload}"
            + (", " + " and ".join(f"{stall(r)} s at {number(r)}" for r in others)
               + " records/s" if others else "")
            + f"): {c.size} members on {parts} partitions, resource downtime "
            f"{number(down / 1000)} s on {len(stopped)} of {seeds} seeds")
    if mine and same:
        theirs = _table_values(verdicts, c.worse, crash, c.size, c.metric, same[0]) \
            or other[same[0]]
        sign = 1.0 if m.lower_is_better else -1.0
        side = ("worse than" if min(sign * v for v in mine) > max(sign * v for v in theirs)
                else "better than" if max(sign * v for v in mine) < min(sign * v for v in
                                                                         theirs)
                else "the ranges overlapping with")
        every = "" if side.startswith("the ranges") else " on every seed"
        unit = f" {m.unit}" if m.unit else ""
        text += (f"; {best}'s {LABELS.get(m.column, m.label)} "
                 f"{number(lost.cells[best].median / m.scale)}{unit}, {side} {c.worse} on "
                 f"{c.size} partitions ({number(statistics.median(theirs) / m.scale)})"
                 f"{every} (medians of {len(mine)} and {len(theirs)} seeds, each table's)")
        # the same partitions beside the cross-layout comparison (the fifteenth outside share
        # review: the loss is 4 hot partitions against 12, not share against consumer)
        ours12 = _table_values(verdicts, best, crash, c.size, c.metric, same[0])
        theirs4 = list(lost.cells[c.worse].values.values()) if c.worse in lost.cells else []
        like = [f"{number(statistics.median(a) / m.scale)} against "
                f"{number(statistics.median(b) / m.scale)} on the same {k} partitions"
                for a, b, k in ((ours12, theirs, _partitions(runs, crash, c.size, same[0])),
                                (mine, theirs4, parts)) if a and b and k]
        if like:
            text += f"; {best} against {c.worse}: " + ", ".join(like)
    wire = [(k, n) for scen, size, wl, k, n in wire_lost_hosts(cells)
            if (scen, size, wl) == (crash, c.size, c.workload)]
    if wire:
        text += (f". On the wire a hung share consumer (SIGSTOP) stopped its partition on "
                 f"{wire[0][0]} of {wire[0][1]} runs")
        model = [float(r.get("resource_downtime_ms") or 0.0) for r in stopped]
        model += [0.0] * max(seeds - len(model), 0)
        from groupcoord.lab.share_calibration import SHARE_FLOORS

        floor = SHARE_FLOORS["resource_downtime_ms"]
        if tail := wire_tail_words(wire_lost_host_stops(cells).get(
                (crash, c.size, str(c.workload)), []), model, floor):
            text += f", longer than the model: {tail}"
    text += "."
    if lever := lock_lever_clause(crash, c.size, c.workload, verdicts, runs):
        text += " " + lever
    if dash := broker_lag_lost_host(crash, c.size, verdicts, runs):
        text += " " + dash
    return text


def _lock_ms(r: Mapping[str, Any]) -> float | None:
    v = run_settings(r).get(LOCK_DURATION)
    return float(v) if isinstance(v, int | float) else None


def _stops(runs: Sequence[Mapping[str, Any]]) -> tuple[int, int, float]:
    """On how many seeds of a cell's share runs a partition stopped, of how many, and their
    median stop (ms)."""
    seeds = {int(r.get("seed") or 0): float(r.get("resource_downtime_ms") or 0) for r in runs}
    stopped = [v for v in seeds.values() if v > 0]
    return len(stopped), len(seeds), statistics.median(stopped) if stopped else 0.0


def lock_lever_clause(crash: str, size: int, workload: str | None,
                      verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]]
                      ) -> str:
    """The operator's lever beside the lock limit (the thirteenth outside share review): the
    page's share cell of the same lost host, members, partitions, rate and processing with
    another record lock duration, its stop against the prediction (lock duration minus
    max.record.locks / the rate) and against this cell's; the two settings named, and the
    broker's minimum that bounds the group's lock from below (Kafka's GroupConfig validation
    against ShareGroupConfig's ``group.share.min.record.lock.duration.ms``, 15,000 ms by
    default in Kafka 4.2 and 4.3): a lock under it needs the broker changed, as the page says
    of a 1 s heartbeat. "" where the page has no such cell."""
    def share_runs(wl: str) -> list[Mapping[str, Any]]:
        return [r for r in runs if family(str(r.get("protocol"))) == "share" and r.get("ok")
                and (str(r.get("scenario")), int(r.get("size") or 0), str(r.get("workload")))
                == (crash, size, wl)]

    mine = share_runs(str(workload))
    if not mine or (dur := _lock_ms(mine[0])) is None:
        return ""
    key = (_rate(mine[0]), work_value(mine[0], "processing_ms"),
           int(mine[0].get("total_partitions") or 0), run_settings(mine[0]).get(MAX_LOCKS))
    found = []
    for wl in dict.fromkeys(str(r.get("workload")) for r in runs):
        rs = share_runs(wl)
        if wl == workload or not rs or (lock := _lock_ms(rs[0])) is None or lock == dur \
                or (_rate(rs[0]), work_value(rs[0], "processing_ms"),
                    int(rs[0].get("total_partitions") or 0),
                    run_settings(rs[0]).get(MAX_LOCKS)) != key:
            continue
        found.append((lock, wl, rs))
    if not found or (lim := lock_limit(mine)) is None:
        return ""
    locks, rate = lim[0], key[0] or 0.0
    n, seeds, here = _stops(mine)
    low = broker_minimum(LOCK_DURATION)
    parts = []
    for lock, wl, rs in sorted(found):
        k, m, down = _stops(rs)
        grid = next((g.name for g in verdicts for row in g.rows
                     if (row.scenario, row.size, str(row.workload)) == (crash, size, wl)), wl)
        floor = " (the default minimum)" if low is not None and lock == low[1] else ""
        parts.append(f"at {number(lock / 1000)} s{floor} it stopped {number(down / 1000)} s on "
                     f"{k} of {m} seeds ({grid}, {wl}; {number(lock / 1000)} s - "
                     f"{number(locks)} / {number(rate)} = "
                     f"{number(lock / 1000 - locks / rate)} s predicted)")
    under = sorted({lock for lock, _, _ in found if low is not None and lock < low[1]})
    bound = ("" if low is None else
             f", within the broker's {low[0]}, {number(low[1] / 1000)} s by default: Kafka "
             f"refuses a group's lock below it"
             + (f", so {' and '.join(f'{number(v / 1000)} s' for v in under)} needs it lowered"
                if under else ""))
    return ("The operator's lever is the record lock duration (share.record.lock.duration.ms "
            f"for the group, group.share.record.lock.duration.ms on the broker{bound}): "
            + "; ".join(parts) + f", against {number(here / 1000)} s on {n} of {seeds} at "
            f"{number(dur / 1000)} s; {MAX_LOCKS} ({number(locks)}) sets the rate above which "
            f"a lost host stops its partition ({number(locks / (dur / 1000))} records/s a "
            f"partition at {number(dur / 1000)} s).")


def broker_lag_lost_host(crash: str, size: int, verdicts: Sequence[GridVerdict],
                         runs: Sequence[Mapping[str, Any]]) -> str:
    """What an operator's share-lag alert reads on a lost host below the lock limit (the
    thirteenth outside share review): the page's row of ``crash`` at ``size`` whose share
    cell's excess lag peak is under the metric's floor while its broker share lag peak (the
    table's broker-lag column, over the same seeds) is over ten times it, both medians as the
    table prints them. "" where no row does."""
    for g in verdicts:
        share = next((p for p in g.protocols if family(p) == "share"), None)
        if share is None or not _share_vs_consumer(g.protocols):
            continue
        for row in g.rows:
            mv = next((x for x in row.metrics if x.metric.column == "lag_peak"
                       and share in x.cells), None)
            if (row.scenario, row.size) != (crash, size) or mv is None \
                    or not mv.cells[share].values:
                continue
            cell, m = mv.cells[share], mv.metric
            seeds = sorted(cell.values)
            vals = [float(r["share_lag_peak"]) for r in runs
                    if (r.get("protocol"), r.get("scenario"), int(r.get("size") or 0),
                        str(r.get("workload"))) == (share, crash, size, str(row.workload))
                    and r.get("ok") and int(r.get("seed") or 0) in seeds
                    and r.get("share_lag_peak") is not None]
            excess = statistics.median(cell.values.values())
            if not vals or abs(excess) >= m.floor or statistics.median(vals) < 10 * m.floor:
                continue
            return (f"An operator's share-lag alert reads the locks, not lateness: on a lost "
                    f"host below the limit ({crash} at {size} on {row.workload}, {g.name}) the "
                    f"broker's share lag peaks at {number(statistics.median(vals))} records "
                    f"while the excess lag peak is {number(excess)} (the table's broker-lag "
                    f"column, medians of its {len(seeds)} seeds).")
    return ""


def heartbeat_clause(c: Claim, verdicts: Sequence[GridVerdict], short: bool = False) -> str:
    """The claim's cell in a companion grid of the claim's protocols at a shorter heartbeat
    interval on both sides (``lab.verdict.is_companion``: every label ``@hb1s``, the same
    cells and seeds): its mark and medians, and how much of the gap at the default interval
    is left (the eighth share review's control: a consumer member learns of its revocation,
    and either group's member of its assignment, at its next heartbeat). "" where no
    companion grid ran the cell. ``short``: the sentence's own words instead (the tenth
    outside share review: the client default's share of the gap belongs in the sentence): how
    much of the gap the shorter interval removes, and where the runner-up at it already beats
    the best at its default by more than the metric's floor, that too."""
    from groupcoord.sim.settings import split_timing

    best = c.best.split(" and ")[0]
    key = (c.scenario, c.size, c.workload)

    def cell(g: GridVerdict) -> MetricVerdict | None:
        return next((mv for row in g.rows
                     if (row.scenario, row.size, str(row.workload)) == key
                     for mv in row.metrics if mv.metric.column == c.metric), None)

    own = next((cell(g) for g in verdicts if g.name == c.grid), None)
    if own is None or best not in own.cells or c.worse not in own.cells:
        return ""
    for g in verdicts:
        mv = cell(g)
        if g.parameter is not None or mv is None or not is_companion(g, verdicts):
            continue
        for label in mv.cells:
            base, timings = split_timing(label)
            if base != best or set(timings) != {"heartbeat_interval_ms"}:
                continue
            other = f"{c.worse}@{label.partition('@')[2]}"
            if other not in mv.cells:
                continue
            m = mv.metric
            sign = 1.0 if m.lower_is_better else -1.0
            # both gaps on the seeds all four cells have (a run left out of one leaves its
            # seed out of both: the thirteenth outside share review)
            four = [own.cells[best].values, own.cells[c.worse].values,
                    mv.cells[label].values, mv.cells[other].values]
            common = set.intersection(*(set(v) for v in four))
            if not common:
                continue

            at = [statistics.median(v[k] for k in common) for v in four]
            gap = sign * (at[1] - at[0])
            short_gap = sign * (at[3] - at[2])
            if gap <= 0:
                continue
            unit = f" {m.unit}" if m.unit else ""
            mark = mark_words(mv) or f"no mark ({mv.verdict})"
            if mv.verdict == "unconfirmed" and mv.again is not None \
                    and mv.again.verdict == "few seeds" and g.confirm_seeds:
                # a fresh run that never caught up is a lost seed, not a doubt (the tenth
                # outside share review)
                mark = (f"no mark (unconfirmed: the fresh set had {fresh_seeds(mv)} of "
                        f"{g.confirm_seeds} seeds, a run left out)")
            secs = number(timings["heartbeat_interval_ms"] / 1000.0)
            if short:
                text = (f"{group_heartbeat_words(timings['heartbeat_interval_ms'])} on "
                        "both sides removes "
                        f"{round(100 * (gap - short_gap) / gap)}% of the gap")
                ahead = sign * (own.cells[best].median - mv.cells[other].median)
                if ahead > m.floor:
                    text += (f"; with that broker-side change alone {other} "
                             f"({number(mv.cells[other].median / m.scale)}{unit}) "
                             f"already beats {best} at its default "
                             f"({number(own.cells[best].median / m.scale)})")
                return text + "."
            return (f"At a {secs} s heartbeat on both sides ({g.name}, the same seeds): "
                    f"{mark}, {number(mv.cells[label].median / m.scale)} against "
                    f"{number(mv.cells[other].median / m.scale)}{unit}, "
                    f"{number(short_gap / m.scale)} of the gap of {number(gap / m.scale)} "
                    f"left ({round(100 * short_gap / gap)}%).")
    return ""


def restart_text(runs: Sequence[Mapping[str, Any]], protocol: str, scenario: str,
                 size: int, workload: str | None) -> str:
    """The restart downtime a cell's bounces were run at, from its runs' scenario definition
    (``scenario_def``: the drawn ``down_ms`` range, else the events' fixed ``down_ms``):
    "restarts 2-10 s down, drawn per seed", "restarts 3 s down"; "" where the runs do not
    say. A static member's partitions wait out its restart (KIP-345), so a win against static
    members holds at the restarts it was run at (the fifteenth outside share review: at 1-3 s
    the two tie)."""
    for r in runs:
        if (r.get("protocol"), r.get("scenario"), int(r.get("size") or 0)) != (
                protocol, scenario, size) or (workload and r.get("workload") != workload):
            continue
        try:
            sd = json.loads(str(r.get("scenario_def") or "{}"))
        except ValueError:
            return ""
        drawn = (sd.get("draw") or {}).get("down_ms")
        if drawn and len(drawn) == 2:
            return (f"restarts {number(drawn[0] / 1000)}-{number(drawn[1] / 1000)} s down, "
                    "drawn per seed")
        downs = {int(e["down_ms"]) for e in sd.get("events") or () if "down_ms" in e}
        if len(downs) == 1:
            return f"restarts {number(downs.pop() / 1000)} s down"
        return ""
    return ""


def static_clause(c: Claim, verdicts: Sequence[GridVerdict],
                  runs: Sequence[Mapping[str, Any]] = ()) -> str:
    """The claim's cell in a static companion grid (``lab.verdict.is_companion``: the
    runner-up's label ``@static``, KIP-345's static members, beside the best's own column on
    the same seeds and drawn timings): whether the win survives against the consumer group as
    production rolling restarts run it (the twelfth outside share review: a rolling bounce's
    win over dynamic members alone is no headline). Its mark and medians, said in the sentence
    itself: "Against static consumer members (KIP-345; share-rolling-static, the same seeds):
    ★ share:simple, 30.7 against 63.2 resource·s: the win survives." (the mark is the
    companion cell's final one, ☆ where a fresh seed falls inside the other's range). "" where
    no static companion ran the cell, or where the best is no share protocol."""
    from groupcoord.sim.settings import STATIC_VARIANT

    best = c.best.split(" and ")[0]
    if family(best) != "share" or "@" in c.worse:
        return ""
    static = f"{c.worse}@{STATIC_VARIANT}"
    key = (c.scenario, c.size, c.workload)
    for g in verdicts:
        if g.name == c.grid or static not in g.protocols or not is_companion(g, verdicts):
            continue
        mv = next((mv for row in g.rows if (row.scenario, row.size, str(row.workload)) == key
                   for mv in row.metrics if mv.metric.column == c.metric), None)
        if mv is None or best not in mv.cells or static not in mv.cells:
            continue
        m = mv.metric
        unit = f" {m.unit}" if m.unit else ""
        if mv.verdict in ("best", "tied") and mv.best:
            # the companion table's own final mark (``mark_words``): ★ only where the ranges
            # stay apart over the union of both seed sets, else ☆, as its cell and chart print
            mark = mark_words(mv)
        elif mv.verdict == "unconfirmed" and mv.again is not None \
                and mv.again.verdict == "few seeds" and g.confirm_seeds:
            mark = (f"no mark (unconfirmed: the fresh set had {fresh_seeds(mv)} of "
                    f"{g.confirm_seeds} seeds, a run left out)")
        else:
            mark = f"no mark ({mv.verdict})"
        if mv.verdict == "best" and tuple(mv.best) == (best,):
            verdict = "the win survives"
        elif mv.verdict == "best" and tuple(mv.best) == (static,):
            verdict = "static membership reverses it"
        else:
            verdict = "the win does not survive"
        restarts = restart_text(runs, static, c.scenario, c.size, c.workload)
        if restarts and verdict == "the win survives":
            # a static member's partitions wait out its restart: the win is the restart
            # duration's as much as the protocol's
            verdict += (" at these restarts (a static member's partitions wait out its "
                        "restart; shorter restarts not run)")
        return (f"Against static consumer members (KIP-345; {g.name}, the same seeds"
                f"{', ' + restarts if restarts else ''}): "
                f"{mark}, {number(mv.cells[best].median / m.scale)} against "
                f"{number(mv.cells[static].median / m.scale)}{unit}: {verdict}.")
    return ""


def _min_heartbeat_ms() -> int:
    """The broker's default minimum heartbeat interval of both group types (KIP-848's
    group.consumer.min.heartbeat.interval.ms, KIP-932's group.share.min.heartbeat.interval.ms),
    from the coordinator's config; the larger where they differ."""
    from groupcoord.coordinator.config import CoordinatorConfig

    cfg = CoordinatorConfig()
    return max(cfg.consumer_min_heartbeat_interval_ms, cfg.share_min_heartbeat_interval_ms)


def group_heartbeat_words(interval_ms: float) -> str:
    """A sentence's heartbeat variant as what it is (the eleventh outside share review): in
    KIP-848 and KIP-932 the interval is the group's, a broker-side config the broker bounds,
    not a client default."""
    low = _min_heartbeat_ms()
    under = (f", under its {number(low / 1000.0)} s default minimum" if interval_ms < low
             else "")
    return f"A {number(interval_ms / 1000.0)} s group heartbeat (a broker-side config{under})"


def group_heartbeat_config(protocol: str, interval_ms: float) -> str:
    """A KIP-848 or KIP-932 label's heartbeat on the protocol line: the group config and the
    broker's minimum that bounds it (Kafka's group configs; KIP-848, KIP-932), its default
    from the coordinator's config; "" for any other family (a classic member's heartbeat is
    its client's)."""
    from groupcoord.coordinator.config import CoordinatorConfig

    kind = family(protocol)
    if kind not in ("consumer", "share"):
        return ""
    cfg = CoordinatorConfig()
    low = (cfg.consumer_min_heartbeat_interval_ms if kind == "consumer"
           else cfg.share_min_heartbeat_interval_ms)
    need = f", so {number(interval_ms / 1000.0)} s needs it lowered" if interval_ms < low else ""
    return (f"group's heartbeat interval {number(interval_ms / 1000.0)} s (the group config "
            f"{kind}.heartbeat.interval.ms, within the broker's "
            f"group.{kind}.min.heartbeat.interval.ms, {number(low / 1000.0)} s by "
            f"default{need}) instead of the default")


#: The workload of the per-member-load control: the share comparison's 1x4 production with a
#: record a third as long, so a consumer group's working member is as busy as a share member.
LIGHT = "1x4-light"


def load_control_clause(c: Claim, verdicts: Sequence[GridVerdict],
                        runs: Sequence[Mapping[str, Any]], short: bool = False) -> str:
    """A share sentence's cell with more members than partitions, its consumer side again at
    a share member's load per member (:data:`LIGHT`, the ninth outside review's control):
    the consumer group's median there against its median in a cell of the same scenario,
    size and production (partitions and records per second a partition), on how many paired
    seeds (the same replicates' seeds) it is lower or higher. The control changes only the
    time a record takes, so its baseline is the sentence's cell where that produces at
    :data:`LIGHT`'s rate, else the cell of the same scenario and size that does, named (the
    tenth outside review: beside 1x4-hot's 300 records/s a partition the gap was the
    production rate's; 1x4-busy is the baseline). "" where the page has no such cells. ``short``: the
    sentence's own words (the thirteenth outside share review: the consumer group's cost at
    the share members' load belongs beside its headline figure), the medians alone, where
    the control ran the sentence's own cell at another record time."""
    best = c.best.split(" and ")[0]
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    if c.workload == LIGHT or not parts or c.size <= parts or \
            not _share_vs_consumer([best, c.worse]):
        return ""
    rate = _production(runs, c.scenario, c.size, LIGHT)
    if not rate[0]:
        return ""

    def cell(workload: str) -> MetricVerdict | None:
        return next((mv for g in verdicts for row in g.rows
                     if (row.scenario, row.size, str(row.workload)) == (c.scenario, c.size,
                                                                          workload)
                     for mv in row.metrics if mv.metric.column == c.metric
                     and c.worse in mv.cells), None)

    base = c.workload or ""
    if _production(runs, c.scenario, c.size, base) != rate:
        loads = dict.fromkeys(str(r.get("workload")) for r in runs
                              if (str(r.get("scenario")), int(r.get("size") or 0))
                              == (c.scenario, c.size))
        # of the same production and the same records (no poison where the control has
        # none): only a record's time differs
        base = next((w for w in loads if w != LIGHT and cell(w) is not None
                     and _production(runs, c.scenario, c.size, w) == rate
                     and _faults(runs, c.scenario, c.size, w)
                     == _faults(runs, c.scenario, c.size, LIGHT)), "")
    own = cell(base) if base else None
    light = next(((g, mv) for g in verdicts for row in g.rows
                  if (row.scenario, row.size, str(row.workload)) == (c.scenario, c.size, LIGHT)
                  for mv in row.metrics if mv.metric.column == c.metric
                  and c.worse in mv.cells), None)
    if own is None or light is None:
        return ""
    g, mv = light
    m = mv.metric
    # the tables' seeds (the first set, what the marks rest on): the medians the tables show
    heavy, lit = dict(own.cells[c.worse].values), dict(mv.cells[c.worse].values)
    seeds = sorted(set(heavy) & set(lit))
    lower = sum(1 for k in seeds if lit[k] < heavy[k])
    higher = sum(1 for k in seeds if lit[k] > heavy[k])
    unit = f" {m.unit}" if m.unit else ""
    where = "" if base == c.workload else (
        f" on {base} (the same {number(rate[1] or 0.0)} records/s a partition; "
        f"this sentence's {c.workload} produces at another rate)")
    side = (f", higher on {higher} of {len(seeds)} paired seeds" if higher > lower
            else f", lower on {lower} of {len(seeds)} paired seeds") if seeds else ""
    if short:
        return (f"At a share member's load per member ({LIGHT}) {c.worse} costs "
                f"{number(statistics.median(lit.values()) / m.scale)}{unit} against "
                f"{number(statistics.median(heavy.values()) / m.scale)}." if not where else "")
    return (f"At a share member's load per member ({LIGHT}, {g.name}): {c.worse} "
            f"{number(statistics.median(lit.values()) / m.scale)} against "
            f"{number(statistics.median(heavy.values()) / m.scale)}{unit}{where}"
            + side + f" (medians of {len(lit)} and {len(heavy)} seeds, the tables' first "
            "seed set).")


def _with_partitions(text: str, c: Claim, runs: Sequence[Mapping[str, Any]]) -> str:
    """The claim's head with its topic's partitions ("12 members on 12 partitions"): a share
    group's result depends on how many members fetch each partition."""
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    head = f"{c.scenario}, {c.size} members"
    if not parts or not text.startswith(head) or text.startswith(head + " on "):
        return text
    return f"{head} on {parts} partitions" + text[len(head):]


def _family_note(c: Claim, every: Sequence[Claim], key: Callable[[Claim], Hashable]) -> str:
    """How many candidates a family's sentence stands for, and which (a note under it)."""
    k = key(c)
    if k is None:
        return ""
    same = [x for x in every if key(x) == k]
    if len(same) <= 1:
        return "this sentence stands for 1 candidate"
    metrics = list(dict.fromkeys(LABELS.get(x.metric, x.metric) for x in same))
    scens = list(dict.fromkeys(x.scenario for x in same))
    loads = list(dict.fromkeys(x.workload for x in same if x.workload))
    return (f"this sentence stands for {len(same)} candidates of one family "
            f"({', '.join(scens)} at {c.size} members): {', '.join(metrics)}"
            + (f", on {', '.join(loads)}" if loads else "") + "; the others are marked in the "
            "tables above")


def lost_host_clause(c: Claim, every: Sequence[Claim], key: Callable[[Claim], Hashable],
                     runs: Sequence[Mapping[str, Any]]) -> str:
    """The claim's own words on its family's lost hosts (KIP-932's in-flight limit): on how
    many seeds a crash of the family's candidates' scenarios at the sentence's size, above the
    lock-limit rate, stopped a partition, cell by cell. The family's sentence is its first
    candidate by the page's rule, the largest effect, which favours the cell where the share
    group does best (a kill, whose records are released on disconnect); so the claim itself
    says where the family's cells split instead of leaving it to the note. "" where no such
    crash stopped a partition."""
    k = key(c)
    lim = lock_limit(runs)
    if k is None or lim is None or not _member_loss(c.scenario):
        return ""
    limit = lim[0] / (lim[1] / 1000.0)
    scens = {x.scenario for x in (c, *every) if key(x) == k and "kill" not in x.scenario}
    cells: dict[str, list[str]] = {}
    for scen, size, workload, _, n, stopped in _over(runs, limit, kill=False):
        if size == c.size and scen in scens and stopped:
            seeds = "" if any(cells.values()) else " seeds"
            cells.setdefault(scen, []).append(f"{len(stopped)} of {n}{seeds} ({workload})")
    if not cells:
        return ""
    # "in the model": its lost host serves its waiting ShareFetch on nearly every seed, the
    # note says so with the wire's count (:func:`held_fetch_clause`)
    return ("Above the lock limit its lost hosts stopped a partition in the model: "
            + "; ".join(f"{scen} on " + " and ".join(xs) for scen, xs in cells.items()) + ".")


#: A claim's reading of its medians in the group's production time (``lab.verdict``'s
#: throughput clause), which the note takes where the claim would pass :data:`SENTENCE_WORDS`.
_THROUGHPUT = re.compile(r" \(((?:at the group's|record·s = the group's) [^()]*)\)")
#: The words a share sentence's claim keeps to, its condition letters included (docs/lab.md,
#: "The report": a claim of about 60 words, its evidence in the note under it).
SENTENCE_WORDS = 60


#: :data:`lab.mechanism.ORDERING` as a condition of its own ("for it" said after the win's
#: mechanism; alone, the win it is given up for).
ORDERING_ALONE = ORDERING.replace(" for it ", " for the share group's wins ", 1)


def split_conditions(conditions: Sequence[str]) -> tuple[str, ...]:
    """The share conditions (``lab.mechanism.share_capacity``) clause by clause, so that a
    clause several sentences rest on is stated once above them: the redundancy of more
    members than partitions, what remains at one member per partition, and the ordering a
    share group gives up (KIP-932, :data:`ORDERING_ALONE`) each its own condition."""
    out: list[str] = []
    for x in conditions:
        parts = [x]
        if x.endswith("; " + ORDERING):
            parts = [x[:-len("; " + ORDERING)], ORDERING_ALONE]
        elif x == ORDERING:
            parts = [ORDERING_ALONE]
        head, sep, even = parts[0].partition("; at one member per partition (")
        if sep:
            parts[0:1] = [head, "at one member per partition (" + even]
        out += [p for p in parts if p not in out]
    return tuple(out)


def share_claims(found: Sequence[Claim], every: Sequence[Claim],
                 verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]]
                 ) -> list[Claim]:
    """The share sentences with what their marks rest on. The claim keeps to about
    :data:`SENTENCE_WORDS` words with its command: on a member loss it says on how many
    seeds its family's lost hosts above the lock limit stopped a partition
    (:func:`lost_host_clause`), and "N seeds, no confirmation set" on a grid without a second
    seed set. The note under it (``Claim.caveats``) says how many candidates it stands for
    (``every``: the page's candidates) and the lock-limit evidence
    (:func:`lock_limit_clause`); where the claim would pass its words, the medians in the
    group's production time move there too. Its share conditions are split clause by clause
    (:func:`split_conditions`). Other sentences unchanged."""
    key = family_key(runs)
    grids = {g.name: g for g in verdicts}
    out = []
    named: dict[int, str] = {}  # a sentence -> the grid its same-members comparison quotes
    for c in found:
        g = grids.get(c.grid)
        if g is None or not any(family(p) == "share" for p in g.protocols):
            out.append(c)
            continue
        text = _with_broker_lag(_with_partitions(c.text.rstrip(), c, runs), c, verdicts, runs)
        if same := same_members_clause(c, verdicts, runs):
            # the same-members comparison leads; the claim's own head (scenario, size,
            # partitions, workload) is said in it
            text = same + text.partition(": ")[2]
        if equal := equal_members_clause(c, verdicts, runs):
            text += " " + equal
        if crash := kill_lost_host_clause(c, verdicts, runs):
            text += " " + crash
        if static := static_clause(c, verdicts, runs):
            # whether the win survives static consumer members, in the sentence itself
            text += " " + static
        hb = heartbeat_clause(c, verdicts)
        if hb_short := heartbeat_clause(c, verdicts, short=True):
            text += " " + hb_short
        light = load_control_clause(c, verdicts, runs)
        if light_short := load_control_clause(c, verdicts, runs, short=True):
            # the medians in the sentence, the clause whole in the note
            text += " " + light_short
            c = replace(c, caveats=(*c.caveats, light[0].lower() + light[1:].rstrip(".")))
            light = ""
        elif light:
            text += " " + light
        if contrary := contrary_clause(c, verdicts, runs):
            text += " " + contrary
        if lost := lost_host_clause(c, every, key, runs):
            text += " " + lost
        if few := few_seeds_clause(c, verdicts, runs):
            text += " " + few
        if not g.confirm_seeds:
            text += f" {g.seeds} seeds, no confirmation set."
        conditions = split_conditions(c.conditions)
        if both := kill_crash_sentence(c, verdicts, runs):
            if not g.confirm_seeds:
                both += f" {g.seeds} seeds, no confirmation set."
            if few:  # in the kill's sentence itself, not only in its reading in the note
                both += " " + few
                text = text.replace(" " + few, "", 1)
            # the kill and its lost host in the sentence; the rest of its reading, whole, in
            # the note under it
            lock = lock_limit_sentence(c, verdicts, runs)
            limit = lock_limit_clause(c, runs)
            notes = [x[0].lower() + x[1:].rstrip(".")
                     for x in (_family_note(c, every, key), "" if lock else limit) if x]
            # without a sentence of its own, the lost host's clause goes whole to the note
            # where the sentence runs over its words (``lab.report.fitted``)
            i = both.find(" A lost host or hung process (")
            tail = both[i:both.index(".", i + 1) + 1] if i >= 0 and not lock else ""
            out.append(replace(c, text=both, conditions=conditions,
                               caveats=(*c.caveats, "the kill's reading in full: "
                                        + text.rstrip("."), *notes),
                               movable=((tail, "", tail.strip().rstrip(".")),) if tail
                               else ()))
            if same:
                named[id(out[-1])] = quoted_grid(c, verdicts, same_members_workload(c, runs))
            if lock:  # the lock limit, a sentence of its own after the kill's
                crash = c.scenario.replace("kill", "crash")
                out.append(replace(
                    c, text=lock, scenario=crash, conditions=(), movable=(),
                    command=c.command.replace(f"--scenario {c.scenario} ",
                                              f"--scenario {crash} "),
                    caveats=(limit[0].lower() + limit[1:].rstrip("."),) if limit else ()))
            continue
        # what the sentence gives, whole, to the note under it where it runs over MAX_WORDS
        # as printed (``lab.verdict.fit``), in this order; the contrary clause goes last
        added = [(f" {x}", "", x.rstrip(".")) for x in (light, equal, crash, lost) if x]
        added += _figure_movables(text, c, runs)
        if contrary:
            # the metrics the winner loses stay named in the sentence (a paper sentence's
            # "Worse on ... (note)."), the clause whole in the note
            short = contrary_short(c, verdicts)
            added.append((f" {contrary}", f" {short}" if short else "",
                          contrary.rstrip(".")))
            # the short contrary stays in the sentence with its medians and paired seeds,
            # however long the sentence (the fifteenth outside share review: sentence 1's
            # worse excess lag peak is what an operator's lag alert reads)
        notes = [x[0].lower() + x[1:].rstrip(".")
                 for x in (_family_note(c, every, key), lock_limit_clause(c, runs), hb) if x]
        said = words(text) + (len(conditions) + 1 if conditions else 0)
        if said > SENTENCE_WORDS and (m := _THROUGHPUT.search(text)):
            text = text[:m.start()] + text[m.end():]
            medians = m.group(1)
            notes.insert(1, "the medians " + (medians if medians.startswith("at ")
                                              else f"in the group's production: {medians}"))
        out.append(replace(c, text=text, conditions=conditions,
                           caveats=(*c.caveats, *notes), movable=(*c.movable, *added)))
        if same:
            named[id(out[-1])] = quoted_grid(c, verdicts, same_members_workload(c, runs))
    # a grid whose cells a sentence's same-members comparison quotes on the sentence's own
    # metric (the owner grid's same-members companion) gets no sentence of its own on that
    # metric: it would restate them; the quoting sentence names it
    out = [c for c in out if not any(
        k is not c and named.get(id(k)) == c.grid and k.metric == c.metric for k in out)]
    out = likewise_under_member_loss(out)
    # the equal-capacity result first (the sixth share review): a share sentence at one member
    # per partition or fewer leads, the redundancy of more members than partitions follows
    return sorted(out, key=lambda c: not _at_equal_capacity(c, runs))


#: A "Likewise" finding (``lab.verdict._add_likewise``) as its note says it.
_LIKEWISE = re.compile(r"Likewise in (?P<scenario>[\w-]+), ")


def likewise_under_member_loss(found: Sequence[Claim]) -> list[Claim]:
    """A share page's "Likewise" findings on a member loss (a crash, a kill; added by
    ``lab.verdict._likewise_host`` to whichever sentence shares the metric and winners) go
    under a member-loss sentence, the one on the same scenario and metric first, then the same
    scenario, then any member loss, with their commands' lines (the eleventh outside share
    review: owner-crash Likewise lines in the note of the rolling-bounce sentence). Kept where
    they are where no member-loss sentence is on the page."""
    out = list(found)
    if not any(_member_loss(h.scenario) for h in out):
        return out  # no member-loss sentence: each finding stays where it was
    for i, c in enumerate(out):
        if _member_loss(c.scenario):
            continue
        moved: list[tuple[str, str]] = []  # (scenario, the note's words)
        text, caveats = c.text, list(c.caveats)
        for frag, _, note in c.movable:
            m = _LIKEWISE.match(note)
            if m is None or not _member_loss(m["scenario"]):
                continue
            if frag and frag in text:
                text = text.replace(frag, "", 1)
            elif note in caveats:
                caveats.remove(note)
            else:
                continue
            moved.append((m["scenario"], note))
        for scenario, note in moved:
            hosts = [h for h in out if _member_loss(h.scenario)]
            host = next((h for h in hosts if (h.scenario, h.metric) == (scenario, c.metric)),
                        next((h for h in hosts if h.scenario == scenario),
                             hosts[0] if hosts else None))
            if host is None:
                continue
            lines = [x for x in c.command.split("\n")[1:] if f"--scenario {scenario} " in x]
            command = host.command + "".join("\n" + x for x in lines
                                             if x not in host.command)
            j = out.index(host)
            out[j] = replace(host, caveats=(*host.caveats, note), command=command)
            c_lines = c.command.split("\n")
            c = replace(c, command="\n".join([c_lines[0], *(x for x in c_lines[1:]
                                                            if x not in lines)]))
        if moved:
            out[i] = replace(c, text=text, caveats=tuple(caveats))
    return out


def _at_equal_capacity(c: Claim, runs: Sequence[Mapping[str, Any]]) -> bool:
    parts = _partitions(runs, c.scenario, c.size, c.workload)
    return (_share_vs_consumer([*c.best.split(" and "), c.worse]) and bool(parts)
            and c.size <= parts)


#: The share comparison's primary grid (crowd-crash and bounce, ``lab/data/share.toml``).
SHARE_GRID = "share"


def share_grid_line(verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]],
                    grid: str = SHARE_GRID) -> str:
    """The primary share grid's own sentence where no row of it separates the two groups (no
    ★ or = on any metric): its scenarios and sizes, and, on excess lag in its crash row with
    the most members over the partitions (its first workload), each side over both seed sets:
    a consumer group whose crashed member was idle on most seeds costs 0 there and much on the
    others (:func:`share_modes`), a share group a small cost on every seed (the ninth outside
    review: the page's primary grid had no sentence). "" where the grid is not on the page, a
    row of it is marked, or it has no such crash row."""
    g = next((v for v in verdicts if v.name == grid and _share_vs_consumer(v.protocols)), None)
    if g is None or any(mv.verdict in ("best", "tied") for row in g.rows for mv in row.metrics):
        return ""
    share = next(p for p in g.protocols if family(p) == "share")
    consumer = next(p for p in g.protocols if family(p) != "share")
    workload = str(g.rows[0].workload) if g.rows else ""
    crash = sorted(((row.size, row) for row in g.rows if "crash" in row.scenario
                    and str(row.workload) == workload
                    and row.size > (_partitions(runs, row.scenario, row.size, workload) or
                                    row.size)), key=lambda x: x[0])
    mv = next((x for x in crash[-1][1].metrics if x.metric.column == "lag_record_s"
               and share in x.cells and consumer in x.cells), None) if crash else None
    if mv is None:
        return ""
    row, m = crash[-1][1], mv.metric
    mine, theirs = _all_values(mv, share), _all_values(mv, consumer)
    outcomes = sorted(share_modes(theirs, m), key=lambda o: o[0])
    if len(outcomes) < 2 or max(abs(v) for v in outcomes[0]) > m.floor or min(mine) <= 0:
        return ""
    low, high = outcomes[0], [v for o in outcomes[1:] for v in o]
    scenarios = " and ".join(dict.fromkeys(r.scenario for r in g.rows))
    sizes = " and ".join(map(str, sorted({r.size for r in g.rows})))
    return (f"{grid} ({scenarios} at {sizes} members): no difference: no metric separates "
            f"the two groups in its {len(g.rows)} rows. When any member crashes at "
            f"{row.size} on {workload}, {consumer}'s "
            f"excess lag is 0 on {len(low)} of {len(theirs)} seeds (an idle member) and "
            f"{m.fmt(statistics.median(high))} on {len(high)}; {share}'s "
            f"{m.fmt(statistics.median(mine))} ({_span(mine, m)}), a small cost on every one "
            f"of its {len(mine)} seeds.")


__all__ = [
    "BROKER_LAG",
    "COMMIT_DEPENDENT",
    "MEMBER_LOST",
    "all_seed_outcomes",
    "all_seeds_note",
    "broker_lag_lost_host",
    "broker_lag_text",
    "commit_reference",
    "contrary_clause",
    "equal_members_clause",
    "family_key",
    "family_rule",
    "heartbeat_clause",
    "held_fetch_clause",
    "kill_lost_host_clause",
    "load_control_clause",
    "lock_lever_clause",
    "lock_limit",
    "lock_limit_clause",
    "lost_host_clause",
    "same_load",
    "same_members_clause",
    "share_claims",
    "share_grid_line",
    "share_modes",
    "split_conditions",
    "static_clause",
    "unmark_broker_lag",
    "unmark_commit_dependent",
    "verdict_word",
    "wire_lost_hosts",
]
