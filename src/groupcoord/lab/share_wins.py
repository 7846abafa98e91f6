"""The share page's count of share wins and what each needs (docs/lab.md, "Share groups
against consumer groups"; KIP-932 against KIP-848):

- **Where the members outnumber the partitions** (:func:`fetchers_line`): every confirmed
  share win there has several share members fetching each partition against one consumer
  member, split by what the rows show: a redundancy win, the share group stopping no
  partition on most seeds; a win in a cell where the share group itself stopped a partition
  on most seeds (the lock limit: a lost host's locked records pin the share-partition start
  offset), won only against a consumer group waiting out its session timeout; and a win of a
  protocol at a non-default setting (a companion grid's ``@hb1s``, a broker-side change).
- **At one member per partition or fewer**: each win with its mark as its table prints it
  (★, or ☆ on the paired sign test alone) and NEAR SATURATION where its row's load is, and,
  where a grid reruns its row at a lower per-member load (:func:`lighter_row`), whether the
  win holds there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from groupcoord.lab.findings import family, number
from groupcoord.lab.mechanism import Load, row_loads
from groupcoord.lab.share_marks import (
    LABELS,
    _all_values,
    _paired,
    _partitions,
    _share_vs_consumer,
)
from groupcoord.lab.verdict import (
    GridVerdict,
    MetricVerdict,
    VerdictRow,
    clean_workloads,
    finding_key,
    is_companion,
    star,
)

#: The column whose share cell says whether the share group itself stopped a partition.
DOWNTIME = "resource_downtime_ms"


def _share(g: GridVerdict) -> str | None:
    return next((p for p in g.protocols if family(p) == "share"), None)


def _consumer(g: GridVerdict) -> str | None:
    return next((p for p in g.protocols if family(p) != "share"), None)


def _load(loads: Mapping[tuple[Any, ...], Any], row: VerdictRow) -> Load | None:
    ld = loads.get((row.scenario, row.size, str(row.workload), row.fault_rate))
    return ld if isinstance(ld, Load) else None


def share_stops(row: VerdictRow, share: str) -> tuple[int, int, float]:
    """On how many of the row's seeds (both sets) the share group stopped a partition (its
    partitions stopped over the metric's floor), of how many, and the median stop (ms) of
    those seeds; (0, 0, 0.0) where the row has no partitions-stopped column."""
    mv = next((x for x in row.metrics if x.metric.column == DOWNTIME and share in x.cells),
              None)
    if mv is None:
        return 0, 0, 0.0
    values = _all_values(mv, share)
    stopped = sorted(v for v in values if v > mv.metric.floor)
    return len(stopped), len(values), (stopped[len(stopped) // 2] if stopped else 0.0)


def share_run_stops(runs: Sequence[Mapping[str, Any]], share: str, row: VerdictRow,
                    floor: float) -> tuple[int, int, float]:
    """On how many of the share group's own runs of ``row``'s cell (one a seed, every seed
    it ran) a partition stopped over ``floor`` (ms), of how many, and the median stop (ms)
    of those: the basis of the lock-limit note under the sentences, which counts the share
    group's runs, not the table cell's seeds (a seed dropped there for another protocol's run
    that never caught up would read 39 of 39 against the note's 40 of 40)."""
    seeds: dict[int, float] = {}
    cell = (share, row.scenario, row.size, str(row.workload))
    for r in runs:
        # a run without the column tells nothing
        if r.get("ok") and r.get(DOWNTIME) is not None and (
                r.get("protocol"), r.get("scenario"), int(r.get("size") or 0),
                str(r.get("workload"))) == cell:
            seeds[int(r.get("seed") or 0)] = float(r[DOWNTIME])
    stopped = sorted(v for v in seeds.values() if v > floor)
    return len(stopped), len(seeds), (stopped[len(stopped) // 2] if stopped else 0.0)


def lighter_row(g: GridVerdict, row: VerdictRow, verdicts: Sequence[GridVerdict],
                runs: Sequence[Mapping[str, Any]],
                loads: Mapping[tuple[Any, ...], Any]) -> tuple[GridVerdict, VerdictRow] | None:
    """Another grid's row of ``row``'s scenario, size, partitions and protocols (the same
    share and consumer labels) on a workload whose members are less busy and not near
    saturation: ``row`` again at a lower load (share-rolling-light beside share-rolling's 4
    on 4). None where the page has none."""
    mine = _load(loads, row)
    parts = _partitions(runs, row.scenario, row.size, row.workload)
    if mine is None or not parts:
        return None
    best: tuple[float, GridVerdict, VerdictRow] | None = None
    for other in verdicts:
        if other is g or _share(other) != _share(g) or _consumer(other) != _consumer(g):
            continue
        for r in other.rows:
            ld = _load(loads, r)
            if (r.scenario, r.size) != (row.scenario, row.size) or r.workload == row.workload \
                    or ld is None or ld.overloaded or ld.busy >= mine.busy \
                    or _partitions(runs, r.scenario, r.size, r.workload) != parts:
                continue
            if best is None or ld.busy < best[0]:
                best = (ld.busy, other, r)
    return (best[1], best[2]) if best else None


def _lower_on(mv: MetricVerdict, share: str, consumer: str) -> tuple[int, int]:
    """On how many paired seeds (both sets) the share group is lower, of how many."""
    a, b = _paired(mv, share), _paired(mv, consumer)
    seeds = sorted(set(a) & set(b))
    return sum(1 for k in seeds if a[k] < b[k]), len(seeds)


def is_lighter_rerun(g: GridVerdict, verdicts: Sequence[GridVerdict],
                     runs: Sequence[Mapping[str, Any]],
                     loads: Mapping[tuple[Any, ...], Any]) -> bool:
    """A grid every row of which is another grid's row at a lower load
    (:func:`lighter_row`, read from that row's side): its marks are read beside the other's,
    not counted as wins of their own."""
    if not g.rows:
        return False
    for r in g.rows:
        if not any(lighter_row(o, x, verdicts, runs, loads) == (g, r)
                   for o in verdicts if o is not g for x in o.rows):
            return False
    return True


def _light_words(g: GridVerdict, row: VerdictRow, mv: MetricVerdict,
                 verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]],
                 loads: Mapping[tuple[Any, ...], Any]) -> str:
    found = lighter_row(g, row, verdicts, runs, loads)
    share, consumer = _share(g), _consumer(g)
    if found is None or share is None or consumer is None:
        return ""
    lg, lr = found
    lmv = next((x for x in lr.metrics if x.metric.column == mv.metric.column
                and share in x.cells and consumer in x.cells), None)
    ld = _load(loads, lr)
    if lmv is None or ld is None:
        return ""
    low, n = _lower_on(lmv, share, consumer)
    held = lmv.verdict == "best" and tuple(lmv.best) == (share,)
    first = lmv.verdict == "unconfirmed" and tuple(lmv.best) == (share,)
    word = "holds" if held else "not confirmed" if first else "does not hold"
    mark = (f"{star(lmv)} " if held else f"{star(lmv)} on the first seed set only, "
            if first else "no mark, ")
    return (f"{word} at {ld.busy:.0%} busy ({lr.workload}, {lg.name}: {mark}share lower on "
            f"{low} of {n} paired seeds)")


def _cells(items: Sequence[tuple[VerdictRow, str]]) -> str:
    """'rolling-bounce 1x4-busy: excess lag peak, excess lag; ...' by row."""
    by: dict[tuple[str, str], list[str]] = {}
    for row, column in items:
        by.setdefault((row.scenario, str(row.workload)), []).append(LABELS.get(column, column))
    return "; ".join(f"{s} {w}: {', '.join(cs)}" for (s, w), cs in by.items())


def fetchers_line(verdicts: Sequence[GridVerdict], runs: Sequence[Mapping[str, Any]]) -> str:
    """One line under the share sentences: how many confirmed share wins (★ or ☆ share
    alone, on a grid with a fresh seed set that repeated it) come where the members outnumber
    the partitions, split into redundancy wins, wins in cells where the share group itself
    stopped a partition on most seeds, and wins at a non-default setting (a companion grid's
    variant); and which come at one member per partition or fewer, each with its mark, its
    row's NEAR SATURATION and whether it holds at a lower load; "" where no such win is on
    the page."""
    loads = row_loads(runs)
    clean = clean_workloads(runs)
    over: dict[tuple[int, int], dict[str, list[tuple[VerdictRow, str]]]] = {}
    #: per (members, partitions): the cells of its wins and their findings (the page's "Marks
    #: and findings" rule: a poison row's mark repeating its clean row's counts once)
    cells: dict[tuple[int, int], set[tuple[str, str, str]]] = {}
    findings: dict[tuple[int, int], set[tuple[Any, ...]]] = {}
    stops: dict[tuple[str, str], tuple[int, int, float]] = {}
    variant: list[str] = []
    settings: list[str] = []
    needs = 0
    equal: list[str] = []
    for g in verdicts:
        share = _share(g)
        if share is None or not g.confirm_seeds or not _share_vs_consumer(g.protocols):
            continue
        companion = is_companion(g, verdicts)
        if companion and "@" not in share:
            continue  # a static companion's share column is its parent's own runs
        if not companion and is_lighter_rerun(g, verdicts, runs, loads):
            continue  # read beside the row it reruns at a lower load
        for row in g.rows:
            parts = _partitions(runs, row.scenario, row.size, row.workload)
            if not parts:
                continue
            for mv in row.metrics:
                if mv.verdict != "best" or tuple(mv.best) != (share,):
                    continue
                label = LABELS.get(mv.metric.column, mv.metric.column)
                if companion:
                    settings += [share] if share not in settings else []
                    needs += not _default_wins(verdicts, share, row, mv.metric.column)
                    variant.append(f"{star(mv)} {label} ({row.scenario} at {row.size} on "
                                   f"{parts}, {row.workload})")
                    continue
                if row.size <= parts:
                    ld = _load(loads, row)
                    notes = [w for w in (
                        "NEAR SATURATION" if ld is not None and ld.overloaded else "",
                        _light_words(g, row, mv, verdicts, runs, loads)) if w]
                    equal.append(f"{star(mv)} {label} ({row.scenario} at {row.size} on "
                                 f"{parts}{', ' + '; '.join(notes) if notes else ''})")
                    continue
                stopped, seeds, median = share_stops(row, share)
                kind = "stopped" if seeds and stopped * 2 > seeds else "redundancy"
                if kind == "stopped":
                    # counted over the share group's own runs, as the lock-limit note does
                    floor = next(x.metric.floor for x in row.metrics
                                 if x.metric.column == DOWNTIME)
                    own = share_run_stops(runs, share, row, floor)
                    stops[(row.scenario, str(row.workload))] = (
                        own if own[1] else (stopped, seeds, median))
                over.setdefault((row.size, parts), {}).setdefault(kind, []).append(
                    (row, mv.metric.column))
                cells.setdefault((row.size, parts), set()).add(
                    (g.name, row.scenario, str(row.workload)))
                findings.setdefault((row.size, parts), set()).add(
                    finding_key(g, row, mv, clean))
    if not over:
        return ""
    each = []
    for (n, k), kinds in sorted(over.items()):
        total = sum(len(v) for v in kinds.values())
        red, stop = kinds.get("redundancy", []), kinds.get("stopped", [])
        most = max((share_stops(r, _share_of(verdicts, r) or "")[0] for r, _ in red),
                   default=0)
        parts_text = []
        if red:
            parts_text.append(
                f"{len(red)} redundancy win{'s' if len(red) != 1 else ''}, the share group "
                + (f"stopping a partition on at most {most} seed{'s' if most != 1 else ''} "
                   "of a cell" if most else "stopping no partition on any seed")
                + f" ({_cells(red)})")
        if stop:
            where = "; ".join(
                f"{s} {w}: {number_s(med)} on {c} of {t} seeds"
                for (s, w), (c, t, med) in stops.items())
            parts_text.append(
                f"{len(stop)} in cells where the share group itself stopped a partition on "
                f"most seeds ({where}), wins only against a consumer group waiting out its "
                f"session timeout ({_cells(stop)})")
        ncells, distinct = len(cells[(n, k)]), len(findings[(n, k)])
        repeats = (f"; {distinct} once the poison rows repeating their clean row's mark on "
                   f"the same seeds are not counted again, as in Marks and findings"
                   if distinct < total else "")
        each.append(f"at {n} members on {k} partitions, {total} confirmed share win"
                    f"{'s' if total != 1 else ''} (metric readings in {ncells} "
                    f"cell{'s' if ncells != 1 else ''}{repeats}), every one with {n // k} share members "
                    f"fetching each partition against one consumer member ({n - k} idle): "
                    + "; ".join(parts_text))
    rest = (f"at one member per partition or fewer: {len(equal)} ({', '.join(equal)})" if equal
            else "at one member per partition or fewer: none")
    hb = (f" Not counted above, at a non-default setting ({', '.join(settings)}): "
          f"{len(variant)} ({', '.join(variant)}), "
          + (f"{needs} of them not won at the default." if needs
             else "each won at the default too.") if variant else "")
    # named, not "the first ... the last": after the list of one-member-per-partition wins
    # "the first" read as those (the fifteenth outside share review)
    return (f"What the share wins need: {'. '.join(each)}. And {rest}. The redundancy wins "
            "are what a consumer group cannot have on as many partitions; those at one member "
            f"per partition or fewer, the protocol's own.{hb}")


def _default_wins(verdicts: Sequence[GridVerdict], variant: str, row: VerdictRow,
                  column: str) -> bool:
    """Whether the protocol without its setting (``share:simple`` for ``share:simple@hb1s``)
    wins the same row and metric alone in another grid."""
    base = variant.partition("@")[0]
    return any(mv.verdict == "best" and tuple(mv.best) == (base,)
               for g in verdicts if base in g.protocols for r in g.rows
               if (r.scenario, r.size, str(r.workload)) == (row.scenario, row.size,
                                                            str(row.workload))
               for mv in r.metrics if mv.metric.column == column)


def _share_of(verdicts: Sequence[GridVerdict], row: VerdictRow) -> str | None:
    return next((_share(g) for g in verdicts if any(r is row for r in g.rows)), None)


def number_s(ms: float) -> str:
    """A stop in seconds as the tables print it."""
    return f"{number(ms / 1000.0)} s"


__all__ = ["fetchers_line", "is_lighter_rerun", "lighter_row", "share_stops"]
