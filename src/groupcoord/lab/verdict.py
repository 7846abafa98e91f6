"""Verdict tables: the report's first page, one table per grid of a sweep (docs/lab.md "The
report").

A grid asks one question and names the metrics that answer it (:func:`question_metrics`):
KIP-415's question (eager against incremental cooperative Connect rebalancing) is answered by
task restarts, task downtime, time until balanced and stall; the consumer protocols' question
(classic eager against cooperative against KIP-848) by stall, excess lag (peak and
record·seconds), time to converge, partitions moved and records processed twice. A spec's grid
may name its own (``metrics = [...]``).

Rows are scenario x size x workload (the load), columns the grid's protocols; a cell holds the
median over the seeds of the protocol's runs that kept every invariant and caught up before
their first disturbance.

**Which differences count** (:func:`beats`). Protocols of a cell run on the same seeds, but a
handful of seeds cannot carry a paired test at 5 %: a sign test over 3 seeds cannot go below
12.5 %. The lab uses *separated ranges* instead: protocol A is better than B on a metric when
A's worst value over the seeds is better than B's best by more than the metric's floor
(:func:`threshold`: the larger of the catalog's absolute floor, the smallest difference worth a
word, and :data:`RELATIVE_FLOOR` of the values compared: 7 s on a 140 s time to converge, or
88 against 90 partitions moved, is no difference). If the two protocols did not differ,
the 2n values of n seeds each would be exchangeable and the chance that A's n fall all below
B's n is 1 / C(2n, n): 1 in 20 with 3 seeds, 1 in 252 with 5. With fewer than
:data:`MIN_SEEDS` seeds nothing is marked. From :data:`SIGN_MIN_SEEDS` seeds on, a paired sign
test may mark a difference too (:func:`sign_test`: A better than B by more than the floor in
enough seeds for a one-sided p of at most :data:`SIGN_ALPHA`; 17 of 21), so that one seed of a
wide distribution (a classic member's metadata refresh that happened to fall right after the
change) does not hide what the other twenty show.

**Distinct outcomes** (:func:`modes`). Where a protocol's seeds fall into separate outcomes
(a leader's departure balances in 2 s, anyone else's in 300 s) its median and range describe
none of them: the cell shows each outcome and its seeds, and a row where the best protocol's
range overlaps another's only through such a split is *split*: neither best nor tied.

**Marks**. Only protocols Apache Kafka ships are ranked (``findings.shipped``): the connect
group type (this project's) is shown beside them, unmarked. The protocol with the best median
is *best* when it is better (as above) than every other ranked protocol; the protocols it is
not better than share the place with it (*tied best*) when each of them is also better than
every protocol the best is better than; when one of them is not (it sits between the best and
a worse protocol, separated from neither) the row is an *overlap* (no mark: no protocol is
separated from all the others); when no protocol is better than another the row is a tie (no
mark).

**Confirmation on fresh seeds** (:func:`confirm`). A grid with ``confirm_seeds`` runs a
second seed set after its first (replicates ``seeds`` on, seeds drawn like the first's). The
table's numbers and marks are the first set's; each row is judged again, by the same rule, on
the second set alone, and a mark (★ or =) stands only if the second set marks the same best;
otherwise the row is *not confirmed*: no mark, and the verdict column says what each set
found. A chance separation (1 / C(2n, n) for separated ranges, the sign test's p) has to
happen twice, in the same direction, to leave a mark.

**Claims** (:func:`claims`): at most :data:`MAX_CLAIMS` sentences for the whole page, each one
difference that passed the test in a cell of at least :data:`CLAIM_MIN_SEEDS` seeds (so that
across the hundreds of pairs a page tests, chance separations are about one: see
:func:`comparisons`), with the ``lab run`` command that reruns its cell. A sentence that names
several protocols gives each one's own numbers.

Plain Python over row dicts (no Spark, no pandas), as ``lab.findings``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.lab.findings import (
    BALANCE_AFTER_LAST,
    BY_COLUMN,
    X_NAMES,
    Metric,
    family,
    full_name,
    number,
    reproduce,
    shipped,
    sweep_parameter,
    with_work_parameters,
    work_value,
)
from groupcoord.lab.runs import fenced_handback_text
from groupcoord.lab.wire_spread import load_spread, load_stable, spread_text, stable_text
from groupcoord.sim.settings import base_protocol, settings_read

#: KIP-415's question: what an eager or an incremental cooperative Connect rebalance costs
#: the tasks (the KIP's own measures), and whether the whole group stops.
KIP415_METRICS: tuple[str, ...] = ("task_restarts", "task_downtime_task_s", "time_to_balance_ms",
                                   "stall_ms")
#: The consumer protocols' question: what a rebalance costs the consuming application.
CONSUMER_METRICS: tuple[str, ...] = ("stall_ms", "lag_peak", "lag_record_s", "convergence_ms",
                                     "resources_moved", "records_reprocessed")
#: Fewer seeds than this: no mark, in the tables as in the sentences (three seeds each
#: separate by chance one time in ten, either way round).
MIN_SEEDS = 5
#: Seeds split into two outcomes only across a gap this many times their own spread
#: (:func:`modes`).
MODE_GAP = 10
#: From this many seeds on, a paired sign test can mark a difference too (the anchor's 21
#: seeds: a wide distribution whose ranges may touch in one seed of many).
SIGN_MIN_SEEDS = 10
#: The sign test's one-sided level.
SIGN_ALPHA = 0.01
#: Sentences on the first page, all grids together.
MAX_CLAIMS = 12
#: A claim rests on a cell with at least this many seeds per protocol: separated ranges then
#: happen by chance once in 252 pairs (with 3 seeds once in 20: across ~1,000 pairs tested on
#: a page, dozens of chance marks).
CLAIM_MIN_SEEDS = 5
#: Besides the catalog's absolute floor: a difference smaller than this share of the larger
#: value compared is no difference.
RELATIVE_FLOOR = 0.05

_CONNECT_FAMILIES = {"connect", "classic-connect"}
#: Between the ends of a range (an en dash: a hyphen would read as a minus sign).
DASH = "\u2013"

#: The mark of a best whose win over some protocol it beats rests on the paired sign test
#: alone (the two protocols' seed ranges overlap); ★ is a win with separated ranges over every
#: protocol it beats.
PAIRED_MARK = "\u2606"
#: The page's legend line for it (the verdict tables, the sentences and the charts).
PAIRED_LEGEND = (f"{PAIRED_MARK} marks a best whose win over at least one protocol rests on the "
                 "paired sign test alone (the two protocols' seed ranges overlap); ★ a win with "
                 "separated ranges over every protocol it beats")


def star(mv: MetricVerdict) -> str:
    """A mark's star: ★ with separated ranges, :data:`PAIRED_MARK` on the sign test alone."""
    return PAIRED_MARK if mv.paired else "\u2605"


def mark_words(mv: MetricVerdict) -> str:
    """A row's mark as its table prints it, for a sentence or a note that quotes the row:
    "★ a" (separated ranges) or "☆ a" (the paired sign test alone) for a best, "= a and b"
    ("=☆" on the sign test alone) for a tie at the top; "" for a row without a mark. A note
    never calls a ☆ row's win ★."""
    if mv.verdict == "best" and mv.best:
        return f"{star(mv)} {' and '.join(mv.best)}"
    if mv.verdict == "tied" and mv.best:
        return f"={PAIRED_MARK if mv.paired else ''} {' and '.join(mv.best)}"
    return ""


def question_metrics(grid: Mapping[str, Any], rows: Sequence[Mapping[str, Any]] = ()
                     ) -> list[Metric]:
    """The metrics that answer a grid's question: those the grid names, else KIP-415's for a
    grid of Connect protocols and the consumers' otherwise; only those the rows have (a
    column the runs do not carry is left out rather than shown empty)."""
    named = [c for c in grid.get("metrics") or () if c in BY_COLUMN]
    if not named:
        protocols = list(grid.get("protocols") or {str(r["protocol"]) for r in rows})
        connect = bool(protocols) and all(family(p) in _CONNECT_FAMILIES for p in protocols)
        named = list(KIP415_METRICS if connect else CONSUMER_METRICS)
    if not rows:
        return [BY_COLUMN[c] for c in named]
    if any(r.get(BALANCE_AFTER_LAST) is not None for r in rows):
        # time until balanced from the last event, where the report derived it: from the first
        # event it would contain the gap between two events or a worker's whole absence
        named = [BALANCE_AFTER_LAST if c == "time_to_balance_ms" else c for c in named]
    return [BY_COLUMN[c] for c in named if any(r.get(c) is not None for r in rows)]


def usable(r: Mapping[str, Any]) -> bool:
    """A run that counts: it kept every invariant, caught up before its first disturbance (a
    run without the ``caught_up`` column counts as caught up) and every event of its scenario
    changed something (``noop_events``: an event naming a connector or member the run does not
    have measures nothing, and its zeros would read as a tie)."""
    return (bool(r.get("ok")) and r.get("caught_up") is not False
            and not r.get("noop_events"))


def separation_chance(n: int) -> float:
    """The chance that n values of one protocol all fall below n of another when both come
    from the same distribution: 1 / C(2n, n)."""
    return 1.0 / math.comb(2 * n, n) if n > 0 else 1.0


def threshold(m: Metric, x: float, y: float) -> float:
    """The smallest difference between ``x`` and ``y`` that counts: the metric's absolute
    floor or :data:`RELATIVE_FLOOR` of the larger magnitude, whichever is larger."""
    return max(m.floor, RELATIVE_FLOOR * max(abs(x), abs(y)))


def beats(a: Sequence[float], b: Sequence[float], m: Metric, min_seeds: int = MIN_SEEDS) -> bool:
    """Whether values ``a`` are better than ``b`` beyond the seeds' spread: each has at least
    ``min_seeds`` values, and a's worst is better than b's best by more than
    :func:`threshold`."""
    if len(a) < min_seeds or len(b) < min_seeds:
        return False
    if m.lower_is_better:
        return min(b) - max(a) > threshold(m, min(b), max(a))
    return min(a) - max(b) > threshold(m, min(a), max(b))


def widest_gap(v: Sequence[float]) -> tuple[list[float], list[float], float]:
    """Sorted values (at least two) cut at their widest gap, the lower cut on a tie: the two
    sides and the gap, the candidate outcomes the split rules (:func:`modes`, the share page's
    seed-set split) test."""
    i = max(range(len(v) - 1), key=lambda k: (v[k + 1] - v[k], -k))
    return list(v[:i + 1]), list(v[i + 1:]), v[i + 1] - v[i]


def modes(values: Sequence[float], m: Metric) -> list[list[float]]:
    """The seeds' distinct outcomes: sorted, the values split at their widest gap between
    neighbours when that gap counts as a difference (:func:`threshold`), is more than
    :data:`MODE_GAP` times as wide as either side's own spread and at least half the larger
    of its two ends (the outcomes differ by a factor of 2 or more: 2 s against 300 s, not 32
    against 36 partitions); otherwise one outcome, shown as its median and range. At least 3
    values (two seeds that differ are just two seeds).

    A continuous draw (a classic member's metadata refresh, uniform over 0-300 s) leaves gaps
    between its seeds a few times as wide as the clusters on either side (28.9 and 70.6 s,
    then 198-220 s: a gap three times the wider side), so such a cell is one distribution;
    only outcomes whose gap dwarfs their own spread (a leader's departure balanced in 2 s,
    a follower's in 300 s: a gap hundreds of times the spread) are two."""
    v = sorted(values)
    if len(v) < 3:
        return [v]
    lo, hi, gap = widest_gap(v)
    spread = max(lo[-1] - lo[0], hi[-1] - hi[0])
    if (gap > threshold(m, lo[-1], hi[0]) and gap > MODE_GAP * spread
            and gap >= 0.5 * max(abs(lo[-1]), abs(hi[0]))):
        return [lo, hi]
    return [v]


def sign_test(a: Mapping[int, float], b: Mapping[int, float], m: Metric,
              min_seeds: int = SIGN_MIN_SEEDS) -> float:
    """The one-sided p-value of a sign test that ``a`` is better than ``b``, paired by seed:
    a seed counts for ``a`` only when ``a`` is better by more than the metric's floor; 1.0
    with fewer than ``min_seeds`` shared seeds (too few for the test to mean anything)."""
    shared = sorted(set(a) & set(b))
    n = len(shared)
    if n < min_seeds:
        return 1.0
    sign = 1 if m.lower_is_better else -1
    k = sum(1 for s in shared if sign * (b[s] - a[s]) > threshold(m, a[s], b[s]))
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n


def sign_needed(n: int, alpha: float = SIGN_ALPHA) -> int | None:
    """The fewest of ``n`` seeds in favour for the sign test to reach ``alpha`` (None: it
    cannot)."""
    for k in range(n + 1):
        if sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n <= alpha:
            return k
    return None


def sign_chance(n: int, alpha: float = SIGN_ALPHA) -> tuple[int, int]:
    """The paired sign test's chance, one direction, of marking a pair of ``n`` seeds that do
    not differ (each seed a fair coin): the tail at :func:`sign_needed`, as (numerator,
    2 ** n); (0, 2 ** n) where the test cannot reach ``alpha``. 1 / 1,024 at 10 seeds,
    against separated ranges' 1 / 184,756 (:func:`separation_chance`)."""
    k = sign_needed(n, alpha)
    return (sum(math.comb(n, i) for i in range(k, n + 1)) if k is not None else 0), 2 ** n


@dataclass(slots=True)
class Cell:
    """One protocol's values (per seed) of one metric in one row."""

    values: dict[int, float]
    mark: str = ""  # best | tied | "" (a tie of all, or no test)
    #: The mark rests on the paired sign test: against some protocol it beats, the seeds'
    #: ranges overlap (:data:`PAIRED_MARK` instead of ★).
    paired: bool = False
    #: The seeds' distinct outcomes (:func:`modes`), low to high; one entry: no split.
    outcomes: list[list[float]] = field(default_factory=list)
    #: A lag cell's raw lag per seed (the run's own, its control's added back), kept only
    #: where the control does not cancel (:func:`uncancelled`).
    raw: dict[int, float] = field(default_factory=dict)
    #: Each seed's replicate (its place in the grid's seed sets), where the runs say: the key
    #: that pairs a row's seeds with its control row's (:func:`control_cost`).
    replicates: dict[int, int] = field(default_factory=dict)

    @property
    def split(self) -> bool:
        return len(self.outcomes) > 1

    @property
    def shown(self) -> list[list[float]]:
        """The outcomes in the order a page prints them: the one most seeds had first, low
        to high on a tie of counts (round 12: "162 | 330 (2 of 5 | 3 of 5)" led with the
        branch of fewer seeds, and not the one the real workers measured)."""
        return sorted(self.outcomes, key=lambda o: -len(o))

    @property
    def median(self) -> float:
        return statistics.median(self.values.values())

    @property
    def low(self) -> float:
        return min(self.values.values())

    @property
    def high(self) -> float:
        return max(self.values.values())


@dataclass(frozen=True, slots=True)
class SpreadOutcome:
    """An eager mark's cell judged again with the classic members' heartbeat phases spread
    after each join (a heartbeat-spread grid's row of the same scenario, size and workload):
    whether eager keeps the mark there, who has it (or the lowest median where none
    separates) and the two medians the sentence quotes."""

    grid: str
    spread_ms: float
    #: an eager protocol of the mark is marked best (or tied best) at this spread too
    held: bool
    #: the spread row's marked best (empty: none separated)
    best: tuple[str, ...]
    #: the spread row's lowest median (its marked best's first where it has one)
    lead: str
    lead_median: float
    #: the mark's eager protocol and its median at this spread
    eager: str
    eager_median: float
    #: the lowest median among the protocols that are not eager ("" where none ran)
    rival: str = ""
    rival_median: float = 0.0

    @property
    def status(self) -> str:
        """``kept`` (eager still marked), ``reversed`` (another protocol marked best) or
        ``not separated``."""
        return "kept" if self.held else "reversed" if self.best else "not separated"

    def words(self, m: Metric) -> str:
        """This spread's finding in the cell, with the two medians that say it."""
        if self.held:
            return "eager kept"
        if self.best:
            return (f"{' and '.join(self.best)} lowest, "
                    f"{_pair(m, self.lead_median, self.eager_median, self.eager)}")
        if _spread_eager(self.lead) and self.rival:
            return (f"not separated ({self.lead} {_bare(m, self.lead_median)} against "
                    f"{self.rival}'s {m.fmt(self.rival_median)})")
        return (f"not separated ({self.lead} "
                f"{_pair(m, self.lead_median, self.eager_median, self.eager)})")


@dataclass(slots=True)
class MetricVerdict:
    metric: Metric
    cells: dict[str, Cell]
    #: best | tied | overlap | tie | split | few seeds | one protocol
    verdict: str
    best: tuple[str, ...] = ()
    #: The protocols the best one is better than (beyond the spread).
    beaten: tuple[str, ...] = ()
    #: The deciding input a ★ flips across (:func:`mark_dependence`): "" when it holds.
    depends: str = ""
    #: An eager mark's limit (:func:`mark_busy_limits`): under which condition of the members
    #: at the rebalance it holds, or that it was not tested with a late member.
    limit: str = ""
    #: The same row judged on the grid's second, fresh seed set (:func:`confirm`); None: the
    #: grid has none.
    again: MetricVerdict | None = None
    #: Where the same scenario's mark on this metric names another winner at another size:
    #: each size's mark (``"★ classic-connect:eager at 3, 6 workers; ★ ... at 12"``).
    by_size: str = ""
    #: The mark rests on the paired sign test alone against at least one protocol it beats
    #: (their seeds' ranges overlap): printed :data:`PAIRED_MARK`, not ★.
    paired: bool = False
    #: An eager mark's cell in a heartbeat-spread grid (:func:`mark_spread_limits`): what
    #: that grid found there at each spread above 0, whether or not eager keeps the mark.
    spread: tuple[SpreadOutcome, ...] = ()
    #: A tie confirmed as a group (:func:`shared_win`): the fresh set separates the same
    #: tied protocols from every other, though it orders them otherwise among themselves.
    shared: bool = False
    #: A topic's growth where the row's classic figures are draws of the leader's refresh
    #: phase (:func:`phase_draw`): said on the row, beside its mark.
    phase_note: str = ""


@dataclass(slots=True)
class VerdictRow:
    scenario: str
    size: int
    workload: str
    fault_rate: float | None
    seeds: int
    metrics: list[MetricVerdict] = field(default_factory=list)
    #: The swept parameter's value when the grid sweeps one across its workloads.
    x: float | None = None
    #: Per protocol, the settings of the row's runs (a grid may sweep a setting by scenario).
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The group's production rate (records/s over all its partitions), when known.
    rate: float | None = None
    #: How long a bounced member is down in the row's scenario (its bounce events), if any.
    down_ms: int | None = None
    #: A rolling bounce's spacing in the row's scenario, if any.
    spacing_ms: int | None = None
    #: Seeds dropped from every protocol of the row because one protocol's run on that seed
    #: was left out (:func:`same_seeds`).
    dropped: int = 0
    #: Of :attr:`dropped`, the seeds of the grid's fresh (confirming) set; None: the grid has
    #: no fresh set (the twelfth outside share review: "2 seeds dropped" read as about the
    #: numbers shown, which are the first set's).
    dropped_fresh: int | None = None
    #: Per protocol, how many of its runs in the row were left out, by reason
    #: (:func:`same_seeds`); an unranked protocol's cost its own columns only.
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    #: The grids this row's cell is shared with, when judged on all of their runs
    #: (:func:`judge_shared_cells`); empty when the cell is this grid's alone.
    pooled: str = ""
    #: Distinct seeds of the second (fresh) set a pooled row rests on (:func:`judge_shared_cells`;
    #: 0 when the row is this grid's alone or has none).
    fresh_seeds: int = 0
    #: The row's value of the timing its grid sweeps across every protocol
    #: (:func:`swept_timing`), in words ("heartbeats spread over up to 1 s after a join");
    #: empty when the grid sweeps none.
    timing: str = ""
    #: The row's members are late at the rebalance by construction: one member slow at every
    #: rebalance (a ``-slowNms`` scenario) or poll loops that pause (the work's pauses).
    late: bool = False
    #: A member leaves the group in the row's scenario (a leave, crash or bounce: KIP-415's
    #: delay then holds its tasks); True when the scenario's events are not known.
    departs: bool = True
    #: The row's members are static (the scenario's group sets ``group.instance.id``).
    static: bool = False


@dataclass(slots=True)
class GridVerdict:
    name: str
    question: str
    protocols: list[str]
    metrics: list[Metric]
    rows: list[VerdictRow]
    runs: int
    #: Runs left out: invariant violated, never caught up.
    violated: int
    not_caught_up: int
    seeds: int
    parameter: str | None = None
    spec: str = "SPEC"
    #: The runs carry paired controls: lag is the excess over the control's.
    excess: bool = False
    #: Per protocol, the settings of its runs (``settings_json``; one run's, parsed).
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The grid's setup in words (the spec's description), beside its question.
    description: str = ""
    #: Runs left out because an event of their scenario changed nothing.
    noop: int = 0
    #: Seeds per cell of the second set that confirms the marks (0: none).
    confirm_seeds: int = 0
    #: The grid's protocol labels as run, when it sweeps a timing across every protocol
    #: (:func:`swept_timing`): ``protocols`` are then their base protocols.
    labels: list[str] = field(default_factory=list)
    #: The ids of the runs the grid counts (``runs``: those left out included), so that the
    #: page can say how many distinct runs the grids' counts are.
    run_ids: frozenset[str] = frozenset()

    @property
    def unconfirmed(self) -> int:
        """Marks of the first seed set that the second did not repeat."""
        return sum(1 for r in self.rows for mv in r.metrics if mv.verdict == "unconfirmed")

    @property
    def confirmed(self) -> int:
        """Marks that the second seed set repeated."""
        return sum(1 for r in self.rows for mv in r.metrics
                   if mv.verdict in ("best", "tied") and mv.again is not None)


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders numbers inside names as numbers (p0.5, p2, p5, p10, p20)."""
    out: list[Any] = []
    for i, part in enumerate(re.split(r"(\d+(?:\.\d+)?)", text)):
        out.append((0, float(part), "") if i % 2 else (1, 0.0, part))
    return tuple(out)


def ranked(protocols: Iterable[str]) -> list[str]:
    """The protocols a row ranks: those Apache Kafka ships, when there are two; else all."""
    ps = list(protocols)
    ship = [p for p in ps if shipped(p)]
    return ship if len(ship) >= 2 else ps


#: Floors relative to the group's throughput, in seconds of its production (records/s over all
#: its partitions): a lag difference smaller than a tenth of a second of what the group
#: produces (a lag peak: 50 ms of it, the records always in flight) is no finding, however many
#: records that is; an absolute floor made a 0.9 record·s eager cost "tie" with 31.5 on 160
#: records/s, and hid 29 against 1,268 record·s. The catalogue's absolute floor applies where
#: the rate is not known (Connect tasks).
THROUGHPUT_FLOORS: dict[str, float] = {"lag_record_s": 0.1, "lag_peak": 0.05}


def row_metric(m: Metric, rate: float | None) -> Metric:
    """The metric with the row's floor: :data:`THROUGHPUT_FLOORS` times the group's rate, at
    least 1 in the metric's unit."""
    per = THROUGHPUT_FLOORS.get(m.column)
    if per is None or not rate:
        return m
    return replace(m, floor=max(1.0, rate * per))


def judge(cells: dict[str, Cell], m: Metric, min_seeds: int = MIN_SEEDS) -> MetricVerdict:
    """The marks of one row and metric (see the module docstring)."""
    for c in cells.values():
        c.outcomes = modes(list(c.values.values()), m)
    pool = ranked(cells)
    if len(pool) < 2:
        return MetricVerdict(m, cells, "one protocol")
    sign = 1 if m.lower_is_better else -1
    order = sorted(pool, key=lambda p: (sign * cells[p].median, p))
    top = order[0]
    if min(len(cells[p].values) for p in pool) < min_seeds:
        return MetricVerdict(m, cells, "few seeds")
    vals = {p: list(cells[p].values.values()) for p in pool}
    beaten = tuple(p for p in order[1:] if beats(vals[top], vals[p], m, min_seeds)
                   or sign_test(cells[top].values, cells[p].values, m) <= SIGN_ALPHA)
    best = tuple(p for p in order if p not in beaten)
    if len(best) > 1 and beaten and any(
            not (beats(vals[p], vals[q], m, min_seeds)
                 or sign_test(cells[p].values, cells[q].values, m) <= SIGN_ALPHA)
            for p in best[1:] for q in beaten):
        # "=" means not separated from the best AND separated from the rest: a protocol the
        # best does not beat that does not beat a worse one either sits between them, and no
        # protocol is separated from every other: no mark (the best still beats ``beaten``)
        return MetricVerdict(m, cells, "overlap", (top,), beaten)
    if len(best) > 1 and any(cells[p].split for p in best):
        # the best's range overlaps another's, and one of them has distinct outcomes: the
        # overlap is the split's, not a tie (nor a best)
        return MetricVerdict(m, cells, "split", (), beaten)
    if not beaten:
        return MetricVerdict(m, cells, "tie", best)
    # a win the sign test gives where the seeds' ranges overlap is marked apart, so that a
    # reader sees which wins a glance at the ranges confirms and which rest on the pairing
    paired = any(not beats(vals[p], vals[q], m, min_seeds) for p in best for q in beaten)
    for p in best:
        cells[p].mark = "best" if len(best) == 1 else "tied"
        cells[p].paired = paired
    return MetricVerdict(m, cells, "best" if len(best) == 1 else "tied", best, beaten,
                         paired=paired)


def confirm(mv: MetricVerdict, again: MetricVerdict) -> MetricVerdict:
    """A row's verdict on the first seed set, kept only where the second (fresh) set gives
    the same: a ★ or = whose best the second set does not mark alike becomes *unconfirmed*
    (no mark; ``best`` and ``beaten`` still say what the first set found, ``again`` what the
    second did)."""
    mv.again = again
    if mv.verdict not in ("best", "tied"):
        return mv
    if again.verdict == mv.verdict and set(again.best) == set(mv.best):
        return union_paired(mv, again)
    if mv.verdict == "tied" and shared_win(again, mv.best):
        # the tied group wins on both sets (round 15: KIP-848's two assignors against every
        # classic protocol, "not confirmed" only because they tie each other on fresh seeds)
        mv.shared = True
        return union_paired(mv, again)
    for c in mv.cells.values():
        c.mark = ""
    mv.verdict = "unconfirmed"
    return mv


def union_paired(mv: MetricVerdict, again: MetricVerdict) -> MetricVerdict:
    """A confirmed mark is ★ (separated) only where the ranges stay apart over the union of
    the first and fresh seed sets: else :data:`PAIRED_MARK`, the win resting on the paired
    sign test (the seventeenth outside review: eager's rare JoinGroup barrier wait, about one
    seed in 30, put a fresh seed of its ★ cell inside cooperative's range)."""
    if mv.paired:
        return mv
    m = mv.metric
    for p in mv.best:
        for q in mv.beaten:
            a = [*mv.cells[p].values.values(), *(again.cells[p].values.values()
                                                 if p in again.cells else ())]
            b = [*mv.cells[q].values.values(), *(again.cells[q].values.values()
                                                 if q in again.cells else ())]
            if not beats(a, b, m):
                mv.paired = True
                for c in mv.best:
                    mv.cells[c].paired = True
                return mv
    return mv


def shared_win(again: MetricVerdict, group: Sequence[str], min_seeds: int = MIN_SEEDS
               ) -> bool:
    """Whether, on a seed set's verdict ``again``, each protocol of ``group`` is separated
    (ranges apart, or the paired sign test) from every ranked protocol outside it, whatever
    their order among themselves: a win the group shares."""
    m = again.metric
    cells = again.cells
    pool = [p for p in ranked(cells) if cells[p].values]
    rest = [q for q in pool if q not in group]
    if not rest or any(p not in pool or len(cells[p].values) < min_seeds for p in group) \
            or any(len(cells[q].values) < min_seeds for q in rest):
        return False
    sign = 1 if m.lower_is_better else -1
    for p in group:
        for q in rest:
            if sign * (cells[p].median - cells[q].median) >= 0:
                return False
            if not (beats(list(cells[p].values.values()), list(cells[q].values.values()), m,
                          min_seeds)
                    or sign_test(cells[p].values, cells[q].values, m) <= SIGN_ALPHA):
                return False
    return True


def fresh_seeds(mv: MetricVerdict) -> int | None:
    """How many seeds the row's fresh seed set judged (the fewest of its protocols'), None
    without a fresh set."""
    a = mv.again
    if a is None or not a.cells:
        return None
    return min(len(c.values) for c in a.cells.values())


def again_text(mv: MetricVerdict) -> str:
    """What the second seed set found in a row, in a few words."""
    a = mv.again
    if a is None:
        return ""
    if a.verdict == "best":
        return f"{star(a)} {a.best[0]}"
    if a.verdict == "tied":
        return "= " + " and ".join(a.best)
    if a.verdict == "overlap":
        return f"{a.best[0]} best, overlapping"
    if a.verdict == "few seeds" and (n := fresh_seeds(mv)) is not None:
        # a run left out (one that never caught up) is a lost seed, not a doubt: say so
        return f"only {n} seeds (< {MIN_SEEDS}: a run left out)"
    return {"tie": "a tie", "split": "split seeds", "few seeds": f"< {MIN_SEEDS} seeds",
            "one protocol": "one protocol"}.get(a.verdict, a.verdict)


def _first_set(r: Mapping[str, Any], seeds: int, confirm_seeds: int) -> bool:
    """Whether a run belongs to its grid's first seed set (replicates before ``seeds``)."""
    rep = r.get("replicate")
    return not confirm_seeds or rep is None or int(rep) < seeds


def _size(r: Mapping[str, Any]) -> int:
    s = r.get("size")
    return int(s if s is not None else r.get("members") or 0)


def _in_grid(r: Mapping[str, Any], g: Mapping[str, Any]) -> bool:
    def has(key: str, value: Any) -> bool:
        allowed = g.get(key)
        return allowed is None or value in allowed

    return (has("protocols", r["protocol"]) and has("scenarios", r["scenario"])
            and has("sizes", r.get("size")) and has("workloads", r.get("workload"))
            and has("fault_rates", r.get("fault_rate")))


def _row_of(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (str(r["scenario"]), _size(r), str(r.get("workload")), r.get("fault_rate"),
            r.get(SWEPT_VALUE))


#: A run's column with its grid's swept timing value (:func:`swept_timing`), set by
#: :func:`by_swept_timing`; absent in every other grid's runs.
SWEPT_VALUE = "swept_timing_ms"

#: How a swept timing's value reads in a row (the Scenario field -> its words).
TIMING_WORDS: dict[str, str] = {
    "heartbeat_spread_ms": "heartbeats spread over up to {} after a join",
    "heartbeat_interval_ms": "heartbeat {}",
    "session_timeout_ms": "session {}",
    "commit_interval_ms": "auto-commit every {}",
}


def swept_timing(protocols: Sequence[str]) -> str | None:
    """The timing (a Scenario field of ``sim.settings.TIMING_KEYS``) a grid sweeps across
    every protocol: each label names it after ``@`` (``classic:eager@hbspread1s``), it takes
    several values, and every base protocol runs at each of them. Such a grid is judged per
    value of the timing (the timing is the condition, the base protocols are compared within
    it); a grid where only some labels carry a timing (``consumer:uniform@hb3s`` beside
    ``consumer:uniform``) compares the variant with the others, and gets None."""
    from groupcoord.sim.settings import split_timing

    try:
        split = [split_timing(p) for p in protocols]
    except ValueError:
        return None
    if len(split) < 2 or not all(t for _, t in split):
        return None
    for key in split[0][1]:
        if not all(key in t for _, t in split):
            continue
        values = {t[key] for _, t in split}
        bases = {_strip_timing(p, key) for p in protocols}
        if len(values) > 1 and len(bases) * len(values) == len(set(protocols)):
            return key
    return None


def _strip_timing(label: str, key: str) -> str:
    """The label without its ``key`` timing (other timings kept)."""
    from groupcoord.sim.settings import TIMING_KEYS

    base, sep, rest = label.partition("@")
    short = {v: k for k, v in TIMING_KEYS.items()}[key]
    left = [part for part in rest.split("+") if not re.fullmatch(rf"{short}\d+(ms|s)", part)]
    return base + (sep + "+".join(left) if left else "")


def by_swept_timing(runs: Iterable[Mapping[str, Any]], key: str) -> list[dict[str, Any]]:
    """The runs with their label's ``key`` timing moved from the protocol to
    :data:`SWEPT_VALUE` (``classic:eager@hbspread1s`` -> ``classic:eager``, 1000)."""
    from groupcoord.sim.settings import split_timing

    out = []
    for r in runs:
        label = str(r["protocol"])
        out.append({**r, "protocol": _strip_timing(label, key),
                    SWEPT_VALUE: split_timing(label)[1][key]})
    return out


def timing_words(key: str, ms: float) -> str:
    """A swept timing's value in words (:data:`TIMING_WORDS`)."""
    if key == "heartbeat_spread_ms" and not ms:
        return "heartbeats not spread after a join"
    text = f"{number(ms / 1000)} s" if ms >= 1000 else f"{number(ms)} ms"
    return TIMING_WORDS.get(key, key + " {}").format(text)


def left_out_reason(r: Mapping[str, Any]) -> str:
    """Why a run does not count (:func:`usable`), in a few words."""
    if not r.get("ok"):
        return "broke an invariant"
    if r.get("caught_up") is False:
        why = fenced_handback_text(r)
        return "never caught up before the event" + (f" ({why})" if why else "")
    return "an event changed nothing"


def same_seeds(runs: Sequence[Mapping[str, Any]], rank: Iterable[str] | None = None
               ) -> tuple[list[dict[str, Any]], dict[tuple[Any, ...], int],
                          dict[tuple[Any, ...], dict[str, dict[str, int]]]]:
    """The usable runs (:func:`usable`) with every seed a ranked protocol's run was left out
    on dropped from every protocol of its row, so that a row compares the protocols on the
    same seeds (a protocol that never caught up on one seed would otherwise be compared on the
    others' easier draws). A run of an unranked protocol (``rank`` names the ranked ones;
    None: every protocol is) that was left out costs its own column only: unranked columns
    carry no mark, and the ranked protocols keep their paired verdict on that seed. Also, per
    row, how many seeds were dropped from every protocol, and per row and protocol, how many
    of its runs were left out and why (:func:`left_out_reason`)."""
    ranks = None if rank is None else set(rank)
    left: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    why: dict[tuple[Any, ...], dict[str, dict[str, int]]] = defaultdict(dict)
    for r in runs:
        if not usable(r):
            key, proto = _row_of(r), str(r["protocol"])
            if ranks is None or proto in ranks:
                left[key].add(int(r.get("seed") or 0))
            reasons = why[key].setdefault(proto, {})
            reason = left_out_reason(r)
            reasons[reason] = reasons.get(reason, 0) + 1
    kept = [dict(r) for r in runs
            if usable(r) and int(r.get("seed") or 0) not in left.get(_row_of(r), ())]
    return kept, {k: len(v) for k, v in left.items()}, dict(why)


def cells_of(rs: Sequence[Mapping[str, Any]], protocols: Sequence[str], m: Metric
             ) -> dict[str, Cell]:
    """Per protocol, its values of ``m`` by seed over runs ``rs``."""
    cells: dict[str, Cell] = {}
    control = f"control_{m.column}" if m.column in LAG_METRICS else ""
    for p in protocols:
        vals = {int(r.get("seed") or 0): float(r[m.column]) for r in rs
                if r["protocol"] == p and r.get(m.column) is not None}
        if vals:
            raw = {int(r.get("seed") or 0): float(r[m.column]) + float(r[control]) for r in rs
                   if control and r["protocol"] == p and r.get(m.column) is not None
                   and r.get(control) is not None}
            reps = {int(r.get("seed") or 0): int(r["replicate"]) for r in rs
                    if r["protocol"] == p and r.get(m.column) is not None
                    and r.get("replicate") is not None}
            cells[p] = Cell(vals, raw=raw, replicates=reps)
    return cells


#: Lag metrics: with paired controls, the run's excess over its control's.
LAG_METRICS = frozenset({"lag_peak", "lag_record_s"})
#: The verdict of a lag row whose control does not cancel the members' own delays.
UNCANCELLED = "control does not cancel"


def uncancelled(mv: MetricVerdict) -> MetricVerdict:
    """A lag row where some seed's excess is below minus the metric's floor (in either seed
    set): the paired control did not cancel what the run's members do besides the rebalance
    (natural lateness: the pauses after the disturbance fall differently in run and control),
    so excess lag there is no measure of the rebalance. No mark (hence no sentence); the
    cells keep their raw lag for the page to print beside the excess."""
    if mv.metric.column not in LAG_METRICS:
        return mv
    sets = [mv, *([mv.again] if mv.again is not None else [])]
    if not any(v < -mv.metric.floor for s in sets for c in s.cells.values()
               for v in c.values.values()):
        for s in sets:
            for c in s.cells.values():
                c.raw = {}
        return mv
    for c in mv.cells.values():
        c.mark = ""
    mv.verdict, mv.best, mv.beaten = UNCANCELLED, (), ()
    return mv


def judge_sets(first: Sequence[Mapping[str, Any]], fresh: Sequence[Mapping[str, Any]],
               protocols: Sequence[str], m: Metric, min_seeds: int = MIN_SEEDS
               ) -> MetricVerdict:
    """A row's verdict on its first seed set, confirmed on the fresh one when there is one."""
    mv = judge(cells_of(first, protocols, m), m, min_seeds)
    if fresh:
        mv = confirm(mv, judge(cells_of(fresh, protocols, m), m, min_seeds))
    return uncancelled(mv)


def grid_verdict(grid: Mapping[str, Any], runs: Iterable[Mapping[str, Any]],
                 spec: str = "SPEC", min_seeds: int = MIN_SEEDS) -> GridVerdict:
    """The verdict table of one grid (``sweep.json``'s record of it) over a sweep's runs."""
    mine = [dict(r) for r in with_work_parameters(r for r in runs if _in_grid(r, grid))]
    labels = [p for p in grid.get("protocols") or sorted({str(r["protocol"]) for r in mine})
              if any(r["protocol"] == p for r in mine)]
    swept = swept_timing(labels)
    if swept is not None:  # judged per value of the timing: the base protocols compared
        mine = by_swept_timing(mine, swept)
    protocols = (list(dict.fromkeys(_strip_timing(p, swept) for p in labels))
                 if swept is not None else labels)
    good, dropped, left_out = same_seeds(mine, ranked(protocols))
    metrics = question_metrics(grid, good or mine)
    param = swept if swept is not None else sweep_parameter(good)
    wls = set(grid.get("workloads") or ())
    if swept is None and any(CONTROL_WORKLOADS.get(w) in wls for w in wls):
        param = None  # a workload and its control are a comparison, not a sweep of a setting
    by_row: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in good:
        by_row[_row_of(r)].append(r)
    scen_order = {s: i for i, s in enumerate(grid.get("scenarios") or ())}

    def row_key(k: tuple[Any, ...]) -> tuple[Any, ...]:
        x = k[4] if swept is not None else _x_of(by_row[k], param)
        return (scen_order.get(k[0], len(scen_order)), k[0], k[1],
                x if x is not None else -1.0, natural_key(k[2]),
                -1.0 if k[3] is None else k[3])

    n_first = int(grid.get("seeds") or 0)
    n_confirm = int(grid.get("confirm_seeds") or 0) if n_first else 0

    every_run: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in mine:
        every_run[_row_of(r)].append(r)
    rows = []
    for key in sorted(by_row, key=row_key):
        every = by_row[key]
        kept = {r.get("seed") for r in every}
        gone_fresh = {r.get("seed") for r in every_run[key] if r.get("seed") not in kept
                      and not _first_set(r, n_first, n_confirm)}
        rs = [r for r in every if _first_set(r, n_first, n_confirm)]
        fresh = [r for r in every if not _first_set(r, n_first, n_confirm)]
        vr = VerdictRow(key[0], key[1], key[2], key[3], len({r.get("seed") for r in rs}),
                        x=_x_of(every, param), settings=_settings_of(every),
                        rate=_rate_of(every), down_ms=bounce_down_ms(every[0]),
                        spacing_ms=bounce_spacing_ms(every[0]),
                        departs=scenario_departs(every[0]),
                        static=scenario_static(every[0]),
                        dropped=dropped.get(key, 0), left_out=left_out.get(key, {}),
                        dropped_fresh=len(gone_fresh) if n_confirm else None,
                        late=bool(SLOW_VARIANT.match(str(key[0]))) or any(
                            "pause_every_ms" in str(r.get("work") or "") for r in every))
        if swept is not None:
            vr.x, vr.timing = float(key[4]), timing_words(swept, key[4])
        for m in (row_metric(m0, vr.rate) for m0 in metrics):
            mv = judge_sets(rs, fresh, protocols, m, min_seeds)
            if mv.verdict in ("best", "tied") and phase_draw(vr.scenario, mv):
                n = min(len(mv.cells[p].values) for p in (*mv.best, *mv.beaten))
                mv.phase_note = (f"the classic figures are draws of the leader's refresh "
                                 f"phase ({n} seeds; a sentence needs {PHASE_MIN_SEEDS})")
            vr.metrics.append(mv)
        rows.append(vr)
    mark_dependence(rows, X_NAMES.get(param or "", (param or "",))[0] if param else None)
    mark_size_dependence(rows, protocols)
    mark_timing_dependence(rows)
    title = str(grid.get("question") or grid.get("description") or "")
    return GridVerdict(str(grid.get("name") or ""), title, protocols, metrics, rows, len(mine),
                       sum(1 for r in mine if not r.get("ok")),
                       sum(1 for r in mine if r.get("ok") and r.get("caught_up") is False),
                       int(grid.get("seeds") or len({r.get("seed") for r in mine})),
                       param, spec, any(r.get("control_lag_peak") is not None for r in mine),
                       _settings_of(mine), str(grid.get("description") or ""),
                       sum(1 for r in mine if r.get("ok") and r.get("caught_up") is not False
                           and r.get("noop_events")),
                       n_confirm if any(not _first_set(r, n_first, n_confirm) for r in good)
                       else 0, labels if swept is not None else [],
                       frozenset(str(r["run_id"]) for r in mine if r.get("run_id")))


#: Scenario variants that set one deciding input in their name (``rolling-bounce-down20s``:
#: each member down 20 s; ``worker-leaves-d30s``: KIP-415's delay at 30 s), with the input's
#: name; the variant without the suffix is the input's default.
SCENARIO_INPUTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?P<base>.+)-down(?P<v>\d+)s$"), "the bounce downtime"),
    (re.compile(r"^(?P<base>.+)-d(?P<v>\d+)s?$"), "scheduled.rebalance.max.delay.ms"),
)
#: A scenario variant with one member late at every rebalance (``bounce-slow500ms``: its
#: revocations take 0.5 s more, the model's ``slow`` event); not a :data:`SCENARIO_INPUTS`
#: sweep: :func:`mark_busy_limits` says what it decides, on every eager mark it decides.
SLOW_VARIANT = re.compile(r"^(?P<base>.+)-slow(?P<v>\d+)ms$")
#: The metrics an eager mark rests on a prompt rejoin of every member for (a member late at the
#: rebalance holds an eager group's barrier): stall, lag and time to converge.
BARRIER_METRICS = frozenset({"stall_ms", "lag_peak", "lag_record_s", "convergence_ms"})


def _classic_eager(protocol: str) -> bool:
    name, _, variant = protocol.partition(":")
    return name == "classic" and variant.split("-")[0] == "eager"


def _shape(workload: str) -> str:
    """A workload's topics x partitions (``1x32-p20ms-40pct`` -> ``1x32``): the busy-member
    grids measure a limit on one load of a shape and the page applies it to the shape."""
    return str(workload).split("-")[0]


def busy_limits(verdicts: Sequence[GridVerdict]
                ) -> dict[tuple[str, str, str], tuple[int | None, int, str, int, str]]:
    """Per (plain scenario, workload shape, metric): where a classic eager mark of the plain
    scenario stops holding when one member is late at every rebalance (the ``-slowNms``
    variants of a busy-member grid): (the smallest lateness in ms at which the mark goes to
    another protocol or to none, None if it holds at every one, 0 if the plain scenario has no
    eager mark; the largest tested; the grid; its size; its workload)."""
    out: dict[tuple[str, str, str], tuple[int | None, int, str, int, str]] = {}
    for g in verdicts:
        groups: dict[tuple[str, int, str], dict[int, VerdictRow]] = defaultdict(dict)
        for row in g.rows:
            mt = SLOW_VARIANT.match(row.scenario)
            base, late = (mt.group("base"), int(mt.group("v"))) if mt else (row.scenario, 0)
            groups[(base, row.size, row.workload)][late] = row
        for (base, size, workload), by_late in groups.items():
            plain = by_late.get(0)
            if plain is None or len(by_late) < 2:
                continue
            for i, mv in enumerate(plain.metrics):
                if mv.verdict not in ("best", "tied") or \
                        not any(_classic_eager(p) for p in mv.best):
                    # tested, but eager has no mark here even with no member late (0)
                    out.setdefault((base, _shape(workload), mv.metric.column),
                                   (0, max(by_late), g.name, size, workload))
                    continue
                flip = None
                for late in sorted(v for v in by_late if v):
                    other = by_late[late].metrics[i]
                    # holds while eager stays marked (alone or tied for the best)
                    if other.verdict not in ("best", "tied") or \
                            not any(_classic_eager(p) for p in other.best):
                        flip = late
                        break
                out[(base, _shape(workload), mv.metric.column)] = (
                    flip, max(by_late), g.name, size, workload)
    return out


def mark_by_design(verdicts: Sequence[GridVerdict]) -> None:
    """A mark won against a protocol whose number is a configured delay (KIP-415's
    ``scheduled.rebalance.max.delay.ms``: an incremental cooperative group holds a departed
    worker's tasks that long, by design) says so in the table, as the sentences leave such a
    win out: the mark is a fact of the setting, not of the protocols' merit."""
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied") or not mv.beaten or mv.limit:
                    continue
                sign = 1 if mv.metric.lower_is_better else -1
                runner = min(mv.beaten, key=lambda p: (sign * mv.cells[p].median, p))
                if _by_design(row.settings or g.settings, mv.metric, runner,
                              mv.cells[runner].median, row.down_ms, row.departs):
                    delay = (row.settings or g.settings).get(runner, {}).get(DELAY_SETTING)
                    mv.limit = (f"is won against {runner}'s configured {DELAY_SETTING} "
                                f"({int(delay or 0) / 1000:g} s), by design")


#: Metrics a bounce shorter than a heartbeat can leave at zero: the coordinator may never see
#: the member gone, so nothing moves and nothing waits for a new owner.
HEARTBEAT_METRICS = frozenset({"resources_moved", "paused_partition_s", "resource_downtime_ms"})
_HB_KEYS = ("group.consumer.heartbeat.interval.ms", "heartbeat.interval.ms")


def bounce_down_ms(run: Mapping[str, Any]) -> int | None:
    """How long a bounced member is down in a run's scenario (the longest ``down_ms`` of its
    bounce events: inline definition, else the built-in scenario); None without a bounce."""
    return _bounce_param(run, "down_ms")


def bounce_spacing_ms(run: Mapping[str, Any]) -> int | None:
    """A rolling bounce's spacing in a run's scenario (the longest ``interval_ms`` of its
    bounce events); None without one."""
    return _bounce_param(run, "interval_ms")


#: Events by which a member leaves its group (for a while or for good).
DEPARTURES = frozenset({"leave", "crash", "bounce", "rolling-bounce", "scale-in"})


def scenario_static(run: Mapping[str, Any]) -> bool:
    """Whether a run's scenario runs static members (its group's ``static``: each member
    has a ``group.instance.id``), from its inline definition; False where none is recorded."""
    try:
        table = json.loads(str(run.get("scenario_def") or "{}"))
    except ValueError:
        return False
    group = table.get("group") if isinstance(table, dict) else None
    return bool(isinstance(group, dict) and group.get("static"))


def scenario_departs(run: Mapping[str, Any]) -> bool:
    """Whether a member leaves the group in a run's scenario (inline definition, else the
    built-in scenario); True when its events cannot be read (the caller's caveat stays)."""
    raw = run.get("scenario_def")
    if raw:
        try:
            table = json.loads(str(raw))
        except ValueError:
            return True
        events = list(table.get("events") or []) if isinstance(table, dict) else []
        return not events or any(isinstance(e, dict) and e.get("kind") in DEPARTURES
                                 for e in events)
    from groupcoord.sim.scenario import BUILTINS, ScenarioError, load_scenario

    name = str(run.get("scenario") or "")
    if name not in BUILTINS:
        return True
    try:
        return any(e.kind in DEPARTURES for e in load_scenario(name, 0).events)
    except (ScenarioError, ValueError):
        return True


def _bounce_param(run: Mapping[str, Any], key: str) -> int | None:
    raw = run.get("scenario_def")
    events: list[Any] = []
    if raw:
        try:
            table = json.loads(str(raw))
        except ValueError:
            return None
        if isinstance(table, dict) and key in (table.get("draw") or {}):
            return None  # drawn per seed (``sim.scenario.with_draws``): no one value
        events = list(table.get("events") or []) if isinstance(table, dict) else []
    else:
        from groupcoord.sim.scenario import BUILTINS, ScenarioError, load_scenario

        name = str(run.get("scenario") or "")
        if name not in BUILTINS:
            return None
        try:
            events = [{"kind": e.kind, **e.params} for e in load_scenario(name, 0).events]
        except (ScenarioError, ValueError):
            return None
    vals = [int(e[key]) for e in events if isinstance(e, dict)
            and str(e.get("kind", "")).endswith("bounce") and e.get(key) is not None]
    return max(vals) if vals else None


#: Where the wire spread was measured, against a scenario that does not start from there: a
#: rolling bounce's rebalances restart every member's heartbeat timer, while a scale-out
#: usually comes to a group that has been stable for hours.
MEASURED_ELSEWHERE = (", measured where each rebalance restarts every member's heartbeat "
                      "timer; a {scenario} usually comes to a group stable for hours, whose "
                      "heartbeat phases were not measured")
#: The same where a stable group was measured on the wire (``lab.wire_spread --stable``): its
#: figure, and how long the group had been stable against the hours of the field.
MEASURED_STABLE = ("; {stable} (a rolling bounce restarts every member's heartbeat timer; "
                   "a {scenario} into a group stable for hours was not measured)")


#: What the wire spread measured means for a Connect mark: consumers were measured, and a
#: Connect worker's group membership runs the same classic heartbeat (Kafka's
#: WorkerCoordinator is an AbstractCoordinator, as the Java consumer's is).
CONNECT_MEASURED = (" (consumers; a Connect worker's WorkerCoordinator runs the same classic "
                    "heartbeat thread, not measured on its own)")


def mark_spread_limits(verdicts: Sequence[GridVerdict],
                       wire: Sequence[Mapping[str, Any]] | None = None,
                       stable: Sequence[Mapping[str, Any]] | None = None) -> None:
    """A classic eager mark (a consumer group's or Connect's, ``classic-connect:eager``) in a
    cell that a heartbeat-spread grid also runs (the same scenario, size and workload, judged
    per spread) holds only with aligned heartbeats where that grid does not give eager the mark
    at a spread above 0: the mark says what the spread grid found there, naming that grid
    (round 8: S4 and S6, eager's scale-out wins, did not cite hb-spread's 1 s and 3 s rows on
    the same cell; round 10: kip415-task-times' eager win at 10 ms tasks reversed at a 3 s
    spread, and its sentence did not say so), and how far apart real classic members learned of a
    rebalance on the wire (``wire``: the stored measurement, :func:`lab.wire_spread.load_spread`
    by default), so a reader can tell which spread the field has. Outside a rolling bounce
    (where each rebalance restarts every member's heartbeat timer) the mark cites how far apart
    the members of a group stable for minutes learned of a join (``stable``: the stored
    stable-group rows, :func:`lab.wire_spread.load_stable` by default), or, without such rows,
    says that the phases of a stable group were not measured."""
    measured = spread_text(load_spread() if wire is None else wire)
    settled = stable_text(load_stable() if stable is None else stable)
    spread_rows = [(g, r) for g in verdicts if g.labels and g.parameter == "heartbeat_spread_ms"
                   for r in g.rows if (r.x or 0) > 0]
    if not spread_rows:
        return
    for g in verdicts:
        if g.labels:
            continue
        for row in g.rows:
            others = [(sg, sr) for sg, sr in spread_rows if (sr.scenario, sr.size, sr.workload)
                      == (row.scenario, row.size, row.workload)]
            if not others:
                _untested_spread(row, spread_rows)
                continue
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied") or not any(
                        _spread_eager(p) for p in mv.best):
                    continue
                found, names = [], []
                outcomes = []
                for sg, sr in sorted(others, key=lambda o: o[1].x or 0):
                    smv = next((x for x in sr.metrics if x.metric.column == mv.metric.column),
                               None)
                    if smv is not None and (out := _spread_outcome(sg, sr, mv, smv)):
                        outcomes.append(out)
                    if smv is None or (smv.verdict in ("best", "tied") and any(
                            _spread_eager(p) for p in smv.best)):
                        continue
                    at = f"{number((sr.x or 0) / 1000)} s"
                    found.append(f"at {at}: " + (
                        f"{' and '.join(smv.best)}" if smv.verdict in ("best", "tied")
                        and smv.best else _unconfirmed_text(smv) or "no protocol separated"))
                    names.append(sg.name)
                if found:
                    lim = (f"holds only with aligned heartbeats ({', '.join(dict.fromkeys(names))}"
                           ", heartbeats spread after a join, the same cell: " + "; ".join(found)
                           + "; that grid is where eager's mark goes)"
                           + (f"; {measured}" if measured else "")
                           + (CONNECT_MEASURED if measured and any(
                               family(p) == "classic-connect" for p in mv.best) else "")
                           + _elsewhere(row.scenario, measured, settled))
                    mv.limit = f"{mv.limit}; {lim}" if mv.limit else lim
                mv.spread = tuple(outcomes)


def _spread_outcome(sg: GridVerdict, sr: VerdictRow, mv: MetricVerdict,
                    smv: MetricVerdict) -> SpreadOutcome | None:
    """What a heartbeat-spread row found in an eager mark's cell (:class:`SpreadOutcome`);
    None where the spread row did not run the mark's eager protocol."""
    eager = next((p for p in mv.best if _spread_eager(p) and p in smv.cells
                  and smv.cells[p].values), None)
    if eager is None:
        return None
    sign = 1 if smv.metric.lower_is_better else -1
    marked = smv.verdict in ("best", "tied") and bool(smv.best)
    pool = [p for p in ranked(smv.cells) if smv.cells[p].values]
    lead = (smv.best[0] if marked else
            min(pool, key=lambda p: (sign * smv.cells[p].median, p)))
    others = [p for p in pool if not _spread_eager(p)]
    rival = min(others, key=lambda p: (sign * smv.cells[p].median, p)) if others else ""
    held = marked and any(_spread_eager(p) for p in smv.best)
    return SpreadOutcome(sg.name, float(sr.x or 0.0), held, smv.best if marked else (), lead,
                         smv.cells[lead].median, eager, smv.cells[eager].median, rival,
                         smv.cells[rival].median if rival else 0.0)


def _bare(m: Metric, raw: float) -> str:
    """A metric's value without its unit (the unit said once after the pair)."""
    text = m.fmt(raw)
    return text.removesuffix(f" {m.unit}") if m.unit else text


def _pair(m: Metric, a: float, b: float, whose: str = "") -> str:
    """``12,132 against 19,603 record·s`` (``whose``: ``12,132 against classic:eager's
    19,603 record·s``)."""
    return f"{_bare(m, a)} against {whose + chr(39) + 's ' if whose else ''}{m.fmt(b)}"


def _secs(ms: float) -> str:
    return f"{number(ms / 1000)} s"


def crossover_spread_words(found: Sequence[tuple[float | None, Sequence[SpreadOutcome]]],
                           m: Metric, x_unit: str, xs: Sequence[float | None] = ()
                           ) -> tuple[str, str]:
    """An eager crossover mark's values judged again with spread heartbeats (each value's
    :class:`SpreadOutcome` list): the sentence's words (at each spread, whether eager keeps
    the mark, is no longer separated, or another protocol takes it, and at which values) and
    the note's (each value's finding with its medians). ``xs``: every value the mark holds
    at; where a spread grid ran only some of them, the words say at which."""
    ran = [x for x, _ in found]
    where = ("" if not xs or set(xs) <= set(ran)
             else f"at {', '.join(number(x or 0.0) for x in ran)}{x_unit}: ")
    spreads = sorted({o.spread_ms for _, outs in found for o in outs})
    if all(o.held for _, outs in found for o in outs):
        return (where + "kept with heartbeats spread by "
                + " and ".join(_secs(ms) for ms in spreads),
                "eager still marked at every value and spread")
    said, detail = [], []
    statuses = {o.status for _, outs in found for o in outs}
    for ms in spreads:
        by: dict[str, list[float | None]] = {}
        for x, outs in found:
            for o in outs:
                if o.spread_ms == ms:
                    by.setdefault(o.status, []).append(x)
                    detail.append(f"at {number(x or 0.0)}{x_unit}, spread {_secs(ms)} "
                                  f"({o.grid}): {o.words(m)}")
        if len(by) == 1:
            said.append(f"{_secs(ms)} {next(iter(by))}")
        else:
            said.append(f"{_secs(ms)} " + ", ".join(
                f"{st} at {', '.join(number(x or 0.0) for x in at)}{x_unit}"
                for st, at in by.items()))
    if len(statuses) == 1:  # one outcome at every value and spread: said once
        return (where + "spread " + ", ".join(number(ms / 1000) for ms in spreads)
                + f" s: {next(iter(statuses))}", "; ".join(detail))
    return where + "spread " + "; ".join(said), "; ".join(detail)


def spread_gist(found: Sequence[tuple[float | None, Sequence[SpreadOutcome]]]) -> str:
    """``spread 1, 3 s: not kept``: whether an eager crossover mark survives spread
    heartbeats, in the fewest words (kept at every value and spread, at none, or at some)."""
    outs = [o for _, os in found for o in os]
    spreads = ", ".join(number(ms / 1000) for ms in sorted({o.spread_ms for o in outs}))
    held = {o.held for o in outs}
    word = "kept" if held == {True} else "not kept" if held == {False} else "kept at some"
    return f"spread {spreads} s: {word}"


def spread_words(outcomes: Sequence[SpreadOutcome], m: Metric) -> str:
    """Whether an eager mark survives spread heartbeats, as its sentence says it (outside
    review round 14: the rolling-bounce eager win reversed at a 3 s spread and its sentence
    read as a plain eager win): each spread's finding in the cell, with the two medians that
    say it. "" without outcomes."""
    if not outcomes:
        return ""
    grids = ", ".join(dict.fromkeys(o.grid for o in outcomes))
    if all(o.held for o in outcomes):
        at = " and ".join(_secs(o.spread_ms) for o in outcomes)
        return f"It holds with heartbeats spread by up to {at} after a join ({grids})."
    return (f"With heartbeats spread after a join ({grids}): "
            + "; ".join(f"by {_secs(o.spread_ms)}, {o.words(m)}" for o in outcomes) + ".")


def spread_short(outcomes: Sequence[SpreadOutcome], m: Metric) -> tuple[str, str]:
    """What :func:`spread_words` leaves in a sentence that runs long: the widest spread that
    takes eager's mark with its medians, then only each spread's outcome in a word."""
    lost = [o for o in outcomes if not o.held]
    if not lost:
        return " It holds with spread heartbeats (note).", ""
    o = max(lost, key=lambda x: x.spread_ms)
    kept = [_secs(x.spread_ms) for x in outcomes if x.held]
    medium = (" Spread heartbeats: " + (f"{' and '.join(kept)} kept; " if kept else "")
              + f"{_secs(o.spread_ms)} {o.words(m)} (note).")
    short = (" Spread heartbeats: " + ", ".join(f"{_secs(x.spread_ms)} {x.status}"
                                                for x in outcomes) + " (note).")
    return medium, short


#: How a heartbeat-spread grid's mark reads where it exists only at spreads wider than the
#: wire measured (:func:`mark_wider_than_measured`).
WIDER_THAN_MEASURED = ("exists only at a heartbeat spread of {at}, wider than real classic "
                       "members showed on the wire (at most {top:.1f} s: {measured})")


def mark_wider_than_measured(verdicts: Sequence[GridVerdict],
                             wire: Sequence[Mapping[str, Any]] | None = None,
                             stable: Sequence[Mapping[str, Any]] | None = None) -> None:
    """A heartbeat-spread grid's mark at a spread wider than real classic members learned of a
    rebalance on the wire (the largest of the rolling-bounce and the stable-group rows,
    ``lab.wire_spread``), where the same protocol has no mark at any spread within it, says
    so with the measurements, as the eager marks of :func:`mark_spread_limits` do (round 12:
    S11's consumer:uniform mark on rolling-bounce exists at a 3 s spread only, against at most
    1.1 s measured, and its sentence left the measurements out)."""
    wire = load_spread() if wire is None else wire
    stable = load_stable() if stable is None else stable
    tops = [float(r["largest_s"]) for r in (*wire, *stable)
            if r.get("rebalances") and r.get("largest_s") is not None]
    if not tops:
        return
    top = max(tops)
    # the two figures in a few words (the clients' medians are under the eager marks' notes)
    parts = []
    for rows, where in ((wire, "in an eager rolling bounce"),
                        (stable, "at a join into a group stable for minutes")):
        got = [float(r["largest_s"]) for r in rows
               if r.get("rebalances") and r.get("largest_s") is not None]
        if got:
            parts.append(f"within {max(got):.3f} s of one another {where}")
    measured = "; ".join(parts)
    for g in verdicts:
        if not g.labels or g.parameter != "heartbeat_spread_ms":
            continue
        for row in g.rows:
            if (row.x or 0) <= top * 1000:
                continue
            near = [r for r in g.rows if (r.scenario, r.size, r.workload)
                    == (row.scenario, row.size, row.workload) and (r.x or 0) <= top * 1000]
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied") or not mv.best \
                        or mv.limit.startswith("is won"):
                    continue
                within = {p for r in near for m in r.metrics
                          if m.metric.column == mv.metric.column
                          and m.verdict in ("best", "tied") for p in m.best}
                if set(mv.best) & within:
                    continue
                lim = WIDER_THAN_MEASURED.format(at=f"{number((row.x or 0) / 1000)} s",
                                                 top=top, measured=measured)
                mv.limit = f"{mv.limit}; {lim}" if mv.limit else lim


#: How an eager mark reads where a spread grid ran its scenario and size on other workloads
#: only (round 10: S6's aligned-heartbeat condition was tested at 40 % busy, and its 20 and
#: 30 % wins did not say that they were never run with a spread).
UNTESTED_SPREAD = "was not tested with spread heartbeats ({where})"


def _untested_spread(row: VerdictRow, spread_rows: Sequence[tuple[GridVerdict, VerdictRow]]
                     ) -> None:
    """An eager mark in a cell whose scenario and size a heartbeat-spread grid ran on other
    workloads only: the mark says where the spread was run (:func:`mark_spread_limits`)."""
    ran = sorted({(sg.name, sr.workload) for sg, sr in spread_rows
                  if (sr.scenario, sr.size) == (row.scenario, row.size)})
    if not ran:
        return
    word = member_word(row.scenario, list(row.metrics[0].cells) if row.metrics else [])
    where = "; ".join(f"{name} ran {row.scenario} at {row.size} {word} on {wl} only"
                      for name, wl in ran)
    lim = UNTESTED_SPREAD.format(where=where)
    for mv in row.metrics:
        if mv.verdict in ("best", "tied") and any(_spread_eager(p) for p in mv.best) \
                and lim not in mv.limit:
            mv.limit = f"{mv.limit}; {lim}" if mv.limit else lim


def _spread_eager(protocol: str) -> bool:
    """An eager classic-group protocol, a consumer group's (``classic:eager``,
    ``classic:eager-roundrobin``) or Connect's (``classic-connect:eager``): the protocols
    whose every member must learn of the rebalance at once (:func:`mark_spread_limits`)."""
    fam, _, variant = protocol.partition("@")[0].partition(":")
    return fam in ("classic", "classic-connect") and variant.split("-")[0] == "eager"


def _elsewhere(scenario: str, measured: str, settled: str) -> str:
    """What a spread mark adds outside a rolling bounce (:func:`mark_spread_limits`)."""
    if "rolling" in scenario or not measured:
        return ""
    if settled:
        return MEASURED_STABLE.format(stable=settled, scenario=scenario)
    return MEASURED_ELSEWHERE.format(scenario=scenario)


def mark_heartbeat_limits(verdicts: Sequence[GridVerdict]) -> None:
    """A mark on partitions moved or paused won by a protocol whose heartbeat is longer than
    the bounced member's downtime rests on that: the member is back before its coordinator
    expects its next heartbeat, so the protocol may never see it gone (the field-costs rolling
    bounce: 3 s down against KIP-848's 5 s heartbeat). The mark says so (the bounce-downtime
    grid runs the same at 20 s)."""
    for g in verdicts:
        for row in g.rows:
            if row.down_ms is None:
                continue
            for mv in row.metrics:
                if (mv.verdict not in ("best", "tied") or mv.limit
                        or mv.metric.column not in HEARTBEAT_METRICS):
                    continue
                slow = []
                for p in mv.best:
                    st = (row.settings or g.settings).get(p, {})
                    hb = next((st[k] for k in _HB_KEYS if isinstance(st.get(k), int | float)),
                              None)
                    if hb is not None and hb > row.down_ms:
                        slow.append(f"{p}'s {hb / 1000:g} s heartbeat")
                if slow:
                    mv.limit = (f"rests on the {row.down_ms / 1000:g} s bounce, shorter than "
                                f"{' and '.join(slow)}")


#: The verdict of a row whose metric means different things for the protocols it compares.
DIFFERENT_MEANING = "different meaning"
#: Metrics whose meaning differs between a share group (KIP-932) and a consumer group
#: (KIP-848): a share group's assignment change has no revocation, no commit and no gap (the
#: partition's other members go on fetching), a consumer group's hands the partition over.
SHARE_INCOMPARABLE = frozenset({"resources_moved"})


def unmark_share_moves(verdicts: Sequence[GridVerdict]) -> None:
    """No ★ or = on a metric whose meaning differs between a share group and a consumer group
    (:data:`SHARE_INCOMPARABLE`; docs/lab.md, "Share groups against consumer groups"): the
    counts stay in the table, the row reads "different meaning", and no sentence rests on
    it. A mark between two share groups or two consumer groups stays."""
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                if mv.metric.column not in SHARE_INCOMPARABLE:
                    continue
                fams = {family(p) == "share" for p in mv.cells}
                if len(fams) < 2:
                    continue
                for c in mv.cells.values():
                    c.mark = ""
                mv.verdict, mv.best, mv.beaten, mv.limit = DIFFERENT_MEANING, (), (), ""
                mv.depends = ""


#: The verdict of a metric the calibration reports but does not check
#: (:func:`unmark_unchecked`).
NOT_CHECKED = "not checked"


def unmark_unchecked(verdicts: Sequence[GridVerdict]) -> None:
    """No ★, ☆ or = on a metric the calibration reports but does not check against real
    clients (``lab.calibrate.UNCHECKED``: paused partition time): its values stay in the
    table, the row reads "not checked" and says why, and no sentence rests on it (a ranking
    the wire runs did not test is the model's alone)."""
    from groupcoord.lab.calibrate import UNCHECKED

    unchecked = UNCHECKED
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                if mv.metric.column not in unchecked:
                    continue
                for x in (mv, mv.again):
                    if x is None:
                        continue
                    for c in x.cells.values():
                        c.mark, c.paired = "", False
                    x.verdict, x.best, x.beaten, x.limit = NOT_CHECKED, (), (), ""
                    x.depends, x.paired, x.by_size, x.shared = "", False, "", False
                    x.spread = ()


#: How a limit of :func:`mark_heartbeat_multiples` begins (the sentence's conditions print it).
HEARTBEAT_MULTIPLE = "rests on the disturbance's timing"


def mark_heartbeat_multiples(verdicts: Sequence[GridVerdict]) -> None:
    """A share group's (KIP-932) mark against a consumer group (KIP-848) in a bounce whose
    downtime or spacing is a whole number of the consumer group's heartbeats rests on that
    alignment: each disturbance falls at the same phase of the consumer member's heartbeat
    (a 10 s bounce is two 5 s heartbeats, so a consumer member's two gaps add up to one
    heartbeat in every seed; a rolling bounce 15 s apart bounces each member three heartbeats
    after the last). The mark says so, computed from the scenario and the heartbeat, as the
    bounce shorter than a heartbeat does (:func:`mark_heartbeat_limits`)."""
    for g in verdicts:
        for row in g.rows:
            if row.down_ms is None:
                continue
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied") or mv.limit:
                    continue
                fams = {family(p) for p in mv.cells}
                if not {"share", "consumer"} <= fams:
                    continue
                aligned: dict[tuple[str, int, int], list[str]] = {}
                for p in mv.beaten:
                    if family(p) != "consumer":
                        continue
                    st = (row.settings or g.settings).get(p, {})
                    hb = next((int(st[k]) for k in _HB_KEYS
                               if isinstance(st.get(k), int | float)), 0)
                    for what, ms in (("bounce's downtime", row.down_ms),
                                     ("bounces' spacing", row.spacing_ms)):
                        if hb and ms and ms % hb == 0:
                            aligned.setdefault((what, ms, hb), []).append(p)
                parts = [f"the {ms / 1000:g} s {what} is {ms // hb} \u00d7 the {hb / 1000:g} s "
                         f"heartbeat of {' and '.join(ps)}"
                         for (what, ms, hb), ps in aligned.items()]
                if parts:
                    mv.limit = (f"{HEARTBEAT_MULTIPLE}: {'; '.join(parts)}, so every bounce "
                                "falls at one phase of that heartbeat (not tested with a "
                                "downtime or spacing off its multiples)")


def mark_busy_limits(verdicts: Sequence[GridVerdict]) -> None:
    """Give every classic eager mark on stall, lag or time to converge its limit: a member
    late at the rebalance holds an eager group's JoinGroup barrier (it rejoins only once its
    poll or revocation callback returns) while the other members have revoked everything, so
    an eager win that rests on every member rejoining at once is a fact of that condition.
    Where a busy-member grid measured the plain scenario on the row's workload shape: "holds
    only while no member is X late at the rebalance" (or "holds with a member up to X late");
    elsewhere: "not tested with a member late at the rebalance"."""
    limits = busy_limits(verdicts)
    for g in verdicts:
        for row in g.rows:
            if SLOW_VARIANT.match(row.scenario):
                continue
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied") or mv.metric.column not in BARRIER_METRICS \
                        or not any(_classic_eager(p) for p in mv.best):
                    continue
                got = limits.get((row.scenario, _shape(row.workload), mv.metric.column))
                if got is None:
                    mv.limit = "not tested with a member late at the rebalance"
                    continue
                flip, top, grid, size, workload = got
                where = f"{grid}: {size} members, {workload}"
                if flip == 0:
                    mv.limit = (f"not tested with a member late at the rebalance at this size "
                                f"({where} has no eager mark even with none late)")
                elif flip is None:
                    mv.limit = (f"holds with one member up to {top / 1000:g} s late at the "
                                f"rebalance ({where})")
                else:
                    mv.limit = (f"holds only while no member is {flip / 1000:g} s late at the "
                                f"rebalance ({where})")


def _input_of(row: VerdictRow, param_name: str | None) -> tuple[tuple[Any, ...], str] | None:
    """The row's place in a sweep of a deciding input: (the rows it is compared with, the
    input's name); None when no input varies."""
    for pat, name in SCENARIO_INPUTS:
        mt = pat.match(row.scenario)
        if mt:
            return (mt.group("base"), row.size, row.workload, row.fault_rate), name
    if param_name is not None and row.x is not None:
        return (row.scenario, row.size, row.fault_rate), param_name
    return None


def mark_dependence(rows: Sequence[VerdictRow], param_name: str | None = None) -> None:
    """A ★ that flips across a deciding input is printed "depends on X": among the rows that
    differ only in one input (a swept workload parameter, or a scenario variant of
    :data:`SCENARIO_INPUTS` with its default, the plain scenario), per metric, when some row
    marks a single best and another row of the same sweep marks a different one or none, each
    marked row's verdict gets ``depends`` (the ★ is a fact of the input's value, not of the
    protocol)."""
    groups: dict[tuple[Any, ...], list[VerdictRow]] = defaultdict(list)
    names: dict[tuple[Any, ...], str] = {}
    for row in rows:
        got = _input_of(row, param_name)
        if got is not None:
            groups[got[0]].append(row)
            names[got[0]] = got[1]
    for row in rows:
        # the plain scenario is the variants' default (rolling-bounce: 3 s down)
        if any(pat.match(row.scenario) for pat, _ in SCENARIO_INPUTS):
            continue
        key = (row.scenario, row.size, row.workload, row.fault_rate)
        if key in groups and row not in groups[key]:
            groups[key].append(row)
    for key, members in groups.items():
        if len(members) < 2:
            continue
        for i in range(min(len(r.metrics) for r in members)):
            marks = [(r.metrics[i].best if r.metrics[i].verdict == "best" else None)
                     for r in members]
            if any(marks) and len(set(marks)) > 1:
                for r in members:
                    if r.metrics[i].verdict == "best":
                        r.metrics[i].depends = names[key]


def mark_size_dependence(rows: Sequence[VerdictRow], protocols: Sequence[str] = ()) -> None:
    """Where a scenario's ★ on a metric names a different winner at another size (the same
    workload, fault rate and swept value), every row of that scenario and metric says each
    size's mark (:attr:`MetricVerdict.by_size`): a ★ at one size is no ranking at the others
    (worker-bounce-d30s's task downtime: sessioned at 12 workers, eager at 3 and 6). Each
    size's mark is its own star (:func:`star`): ☆ where that win rests on the sign test."""
    word = ("workers" if protocols and all(family(p) in _CONNECT_FAMILIES for p in protocols)
            else "members")
    groups: dict[tuple[Any, ...], list[VerdictRow]] = defaultdict(list)
    for row in rows:
        groups[(row.scenario, row.workload, row.fault_rate, row.x, row.timing)].append(row)
    for members in groups.values():
        if len({r.size for r in members}) < 2:
            continue
        columns = dict.fromkeys(mv.metric.column for r in members for mv in r.metrics)
        for column in columns:
            marks: dict[str, list[int]] = defaultdict(list)
            verdicts = []
            for r in sorted(members, key=lambda r: r.size):
                mv = next((m for m in r.metrics if m.metric.column == column), None)
                if mv is None:
                    continue
                verdicts.append(mv)
                if mv.verdict == "best" and len(mv.best) == 1:
                    marks[f"{star(mv)} {mv.best[0]}"].append(r.size)
                else:
                    marks["no \u2605"].append(r.size)
            winners = {k.split(" ", 1)[1] for k in marks if k != "no \u2605"}
            if len(winners) < 2:
                continue
            text = "; ".join(f"{k} at {', '.join(str(n) for n in sizes)} {word}"
                             for k, sizes in marks.items())
            for mv in verdicts:
                mv.by_size = text


#: Timing variants (``sim.settings.split_timing``) whose mark decides a verdict's reading:
#: the Scenario field -> how the dependence reads. A consumer group's records processed
#: twice after a crash are what it processed since its last commit, so a mark won against
#: its default 5 s auto-commit and not against its variant that commits each batch is a
#: fact of the commit interval, not of the protocol (the share comparison's equal-capacity
#: grid runs both).
DEPENDS_ON_TIMING: dict[str, str] = {"commit_interval_ms": "the consumer's commit interval"}


def mark_timing_dependence(rows: Sequence[VerdictRow]) -> None:
    """A ★ or = that a protocol's timing variant decides is printed "depends on X": in a row
    where a protocol and its variant of :data:`DEPENDS_ON_TIMING` are both ranked and the mark
    treats them differently (one beaten, the other best, tied or not separated), the marked
    verdict gets ``depends`` (the commit interval's name), as :func:`mark_dependence` does
    for a swept input."""
    from groupcoord.sim.settings import split_timing

    for row in rows:
        for mv in row.metrics:
            if mv.verdict not in ("best", "tied") or mv.depends:
                continue
            pool = ranked(mv.cells)
            for v in pool:
                try:
                    base, timings = split_timing(v)
                except ValueError:
                    continue
                names = [DEPENDS_ON_TIMING[k] for k in timings if k in DEPENDS_ON_TIMING]
                if not names or base == v or base not in pool:
                    continue
                if (base in mv.beaten) != (v in mv.beaten) or (base in mv.best) != (v in mv.best):
                    mv.depends = names[0]
                    break


def _rate_of(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The group's production rate in records/s (per partition x partitions), the median over
    the rows' runs; None where a part is unknown."""
    rates = []
    for r in rows:
        per, parts = work_value(r, "records_per_s"), r.get("total_partitions")
        if per is not None and parts:
            rates.append(float(per) * float(parts))
    return statistics.median(rates) if rates else None


def throughput(m: Metric, rate: float | None, *values: float) -> str:
    """Lag in the units a platform team uses, the group's throughput: a lag peak as seconds
    of the group's production, lag·s as the group's rate times seconds (record·s = records/s
    x s). Empty for other metrics or an unknown rate."""
    if not rate or m.column not in ("lag_peak", "lag_record_s"):
        return ""
    secs = " against ".join(f"{number(v / rate)} s" for v in values)
    if m.column == "lag_peak":
        return f" (at the group's {number(rate)} records/s: {secs} of its production)"
    return f" (record·s = the group's {number(rate)} records/s x {secs})"


def _settings_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        p = str(r["protocol"])
        if p in out or not r.get("settings_json"):
            continue
        try:
            d = json.loads(str(r["settings_json"]))
        except ValueError:
            continue
        if isinstance(d, dict):
            out[p] = settings_read(p, d)  # what the protocol reads (no delay under eager)
    return out


def _x_of(rows: Sequence[Mapping[str, Any]], param: str | None) -> float | None:
    if param is None:
        return None
    xs = {float(r[param]) for r in rows if r.get(param) is not None}
    return xs.pop() if len(xs) == 1 else None


#: What makes two rows of different grids the same cell: the scenario (and its inline
#: definition), the group's size, the fault rate, the work each member does and every setting
#: of every protocol (``light`` and ``light-md300s`` differ in name only: Kafka's default
#: metadata.max.age.ms is 300 s).
_CELL_COLUMNS = ("scenario", "scenario_def", "fault_rate", "topics", "partitions",
                 "total_partitions", "connectors", "tasks")


def _work(r: Mapping[str, Any]) -> str:
    """A run's workload with every default filled in (``sim.workload``'s table), so that two
    names of the same work compare equal and any difference (a task time, a pause) does not."""
    from groupcoord.sim.workload import WorkloadError, parse_workload

    try:
        table = parse_workload("work", json.loads(str(r.get("work") or "{}"))).as_table()
    except (ValueError, WorkloadError):
        return f"{r.get('workload')}: {r.get('work')}"
    return json.dumps(table, sort_keys=True, default=str)


def _condition(rs: Sequence[Mapping[str, Any]]) -> tuple[tuple[Any, ...], dict[str, str]]:
    """A row's conditions: what every protocol shares, and each protocol's settings."""
    base = {(*(str(r.get(c)) for c in _CELL_COLUMNS), _size(r), _work(r)) for r in rs}
    return (*sorted(base),), {str(r["protocol"]): str(r.get("settings_json")) for r in rs}


def judge_shared_cells(grids: Sequence[Mapping[str, Any]], verdicts: Sequence[GridVerdict],
                       runs: Sequence[Mapping[str, Any]], min_seeds: int = MIN_SEEDS) -> None:
    """One verdict per (cell, metric) across grids: a cell two grids share (the same runs, as
    rolling's and busy-rolling's plain rolling bounce, or the same conditions under two
    workload names, as the anchor's topic growth and metadata-age's at 300 s) is judged in
    each grid on all the runs of every grid that has it, each run in the seed set (first or
    fresh) the grid with the most seeds gives it, so that a row cannot read ★ in one grid on
    a few of the runs another grid calls an overlap on all of them. The row says so
    (``VerdictRow.pooled``)."""
    spans = {id(g): int(g.get("seeds") or 0) + int(g.get("confirm_seeds") or 0)
             for g in grids}
    owners: dict[tuple[Any, ...], list[tuple[int, VerdictRow]]] = defaultdict(list)
    pooled: dict[tuple[Any, ...], dict[tuple[Any, ...], dict[str, Any]]] = defaultdict(dict)
    mine = [dict(r) for r in with_work_parameters(runs)]
    for gi, (grid, gv) in enumerate(zip(grids, verdicts, strict=True)):
        if gv.labels:  # judged per value of a swept timing: its cells are its own
            continue
        rows = {(row.scenario, row.size, row.workload, row.fault_rate, None): row
                for row in gv.rows}
        inside = [r for r in mine if _in_grid(r, grid)]
        kept, _, _ = same_seeds(inside, ranked(gv.protocols))
        by_row: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for r in kept:
            by_row[_row_of(r)].append(r)
        for key, rs in by_row.items():
            row = rows.get(key)
            if row is None:
                continue
            base, settings = _condition(rs)
            # the same conditions, and every protocol both rows run set alike
            cond = next((c for c in owners if c[0] == base and all(
                st.get(p, v) == v for p, v in settings.items() for st in (dict(c[1]),))),
                (base, tuple(sorted(settings.items()))))
            owners[cond].append((gi, row))
            for r in rs:
                # one run per protocol and seed: the same conditions and seed are the same
                # simulation, whatever workload name or grid it was run under (round 8: grow-
                # by-900's light and light-md300s, kip415's 16x8c and 16x8c-task1s counted
                # each seed twice, and a sign test on 5 seeds read as one on 10)
                rid = (r["protocol"], int(r.get("seed") or 0))
                best = pooled[cond].get(rid)
                if best is None or spans[id(grid)] > spans[id(grids[best["_grid"]])]:
                    pooled[cond][rid] = {**r, "_grid": gi}
    touched: set[int] = set()
    for cond, rows_of in owners.items():
        if len({gi for gi, _ in rows_of}) < 2:
            continue
        rs = list(pooled[cond].values())
        names = sorted({str(verdicts[gi].name) for gi, _ in rows_of})

        def first(r: Mapping[str, Any]) -> bool:
            g = grids[r["_grid"]]
            n = int(g.get("seeds") or 0)
            return _first_set(r, n, int(g.get("confirm_seeds") or 0) if n else 0)

        one = [r for r in rs if first(r)]
        fresh = [r for r in rs if not first(r)]
        for gi, row in rows_of:
            gv = verdicts[gi]
            row.metrics = [judge_sets(one, fresh, gv.protocols, mv.metric, min_seeds)
                           for mv in row.metrics]
            row.seeds = len({r.get("seed") for r in one})
            n_fresh = len({r.get("seed") for r in fresh})
            row.fresh_seeds = n_fresh
            others = [n for n in names if n != gv.name]
            row.pooled = (f"the same cell as {', '.join(others)}: judged on every grid's runs "
                          f"of it ({row.seeds} distinct seeds" + (f" + {n_fresh} fresh" if n_fresh
                                                          else "") + ")")
            touched.add(gi)
    for gi in touched:
        gv = verdicts[gi]
        for row in gv.rows:
            for mv in row.metrics:
                mv.depends = ""
        mark_dependence(gv.rows, X_NAMES.get(gv.parameter or "", (gv.parameter or "",))[0]
                        if gv.parameter else None)


def grid_verdicts(meta: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
                  ) -> list[GridVerdict]:
    """One verdict table per grid of ``sweep.json`` (one for the whole sweep without grids)."""
    spec = str(meta.get("spec") or meta.get("name") or "SPEC")
    grids = list(meta.get("grids") or [])
    if not grids:
        # a spec without grids: one question per kind of group, each with its metrics
        name = str(meta.get("name") or "sweep")
        present = list(meta.get("protocols") or sorted({str(r["protocol"]) for r in runs}))
        kinds = (("Connect", [p for p in present if family(p) in _CONNECT_FAMILIES]),
                 ("consumers", [p for p in present if family(p) not in _CONNECT_FAMILIES]))
        grids = [{"name": f"{name}: {kind}" if all(ps for _, ps in kinds) else name,
                  "description": meta.get("description"), "protocols": ps,
                  "seeds": meta.get("seeds"), "confirm_seeds": meta.get("confirm_seeds")}
                 for kind, ps in kinds if ps]
    out = [grid_verdict(g, runs, spec) for g in grids]
    judge_shared_cells(grids, out, runs)
    unmark_share_moves(out)
    unmark_unchecked(out)
    mark_busy_limits(out)
    mark_heartbeat_limits(out)
    mark_spread_limits(out)
    mark_heartbeat_multiples(out)
    mark_by_design(out)
    mark_wider_than_measured(out)
    return out


# --------------------------------------------------------------------------- claims


def member_word(scenario: str, protocols: Sequence[str]) -> str:
    connect = bool(protocols) and all(family(p) in _CONNECT_FAMILIES for p in protocols)
    return "workers" if connect else "members"


@dataclass(slots=True)
class Claim:
    grid: str
    text: str
    command: str
    metric: str
    scenario: str
    size: int
    best: str
    worse: str
    #: The row's workload (a sentence on one row; empty for a crossover across workloads).
    workload: str = ""
    #: A crossover's sentence without its grid's name, and its findings per value swept
    #: (grids that ask the same question at another setting share one sentence).
    head: str = ""
    detail: str = ""
    #: The row's value of its grid's swept timing (:func:`swept_timing`), ms; None: none.
    timing_ms: float | None = None
    #: A crossover's one workload, when its grid sweeps on one (empty: several, or a row).
    swept_on: str = ""
    #: What the sentence's mark rests on (``lab.mechanism.condition_clauses``), clause by
    #: clause: the page states each clause once, lettered above the sentences, and the sentence
    #: names the letters (a Connect row's task-time inputs are the same for every sentence).
    conditions: tuple[str, ...] = ()
    #: The sentence's caveats (``lab.caveats``, a mark's limits, the client note), clause by
    #: clause: the page prints them in a note under the sentence, so that the sentence itself
    #: stays a claim a reader can check with its command.
    caveats: tuple[str, ...] = ()
    #: The sizes a crossover holds at alike (one sentence for them: the size rule); empty:
    #: ``size`` alone.
    sizes: tuple[int, ...] = ()
    #: Clauses the sentence may give to the note under it when it runs over
    #: :data:`MAX_WORDS` (:func:`fit`), in the order they go: each its words in ``text``, what
    #: stands in their place, and the note's clause that keeps their facts ("" when the note
    #: already holds them).
    movable: tuple[tuple[str, str, str], ...] = ()

    @property
    def full(self) -> str:
        """The sentence with its conditions and caveats in words, as one paragraph (every fact
        the page prints for it, without the condition letters)."""
        text = self.text.rstrip()
        if self.conditions:
            text += " Conditions: " + "; ".join(self.conditions) + "."
        if self.caveats:
            text += " Caveats: " + "; ".join(self.caveats) + "."
        return text


#: The costs whose winner under the metric's floor reads "no measurable" (:func:`_claim`).
UNMEASURED_METRICS = frozenset({"lag_peak", "lag_record_s", "stall_ms",
                                "task_downtime_task_s", "resource_downtime_ms"})


def _claim(g: GridVerdict, row: VerdictRow, mv: MetricVerdict) -> Claim:
    m = mv.metric
    best = mv.best[0]
    # the runner-up: the protocol closest to the best among those it beats (against the
    # worst, any win looks large)
    sign = 1 if m.lower_is_better else -1
    worse = min(mv.beaten, key=lambda p: (sign * mv.cells[p].median, p))
    b, w = mv.cells[best], mv.cells[worse]
    where = f"{row.scenario}, {row.size} {member_word(row.scenario, g.protocols)}"
    # the row's workload, where the grid sweeps one or has several (a clean workload and the
    # same with poison records): the sentence says which row it quotes
    if (g.parameter is not None and row.x is not None) or len({r.workload for r in g.rows}) > 1:
        where += f", {row.workload}"
    if row.timing:
        where += f", {row.timing}"
    n = min(len(mv.cells[p].values) for p in (*mv.best, worse))
    word = "lowest" if m.lower_is_better else "highest"
    st = row.settings or g.settings

    def nm(p: str) -> str:  # protocol, assignor and heartbeat (``findings.full_name``)
        return full_name(p, st.get(p))

    # a mark that rests on the paired sign test alone says so where it names its winner
    mark = f"{PAIRED_MARK} " if mv.paired else ""
    movable: list[tuple[str, str, str]] = []
    # a winner whose every median is under the metric's floor costs nothing the test can
    # tell from zero: "no measurable" cost, not a race of numbers below the floor (the
    # eighteenth outside review: eager's 72-record peak under an 80-record floor)
    unmeasured = (m.lower_is_better and m.column in UNMEASURED_METRICS
                  and all(abs(mv.cells[p].median) < m.floor and not mv.cells[p].split
                          and family(p) != "share" for p in mv.best))
    # (a split cell's outcomes are said apart; the share page's sentences quote a winner's
    # lag peak beside the broker's, ``lab.share_marks``, and keep their wording)
    floor = f"under its {m.fmt(m.floor)} floor"
    if len(mv.best) == 1:
        lead = (f"{mark}{nm(best)} has no measurable {short_label(m, g.excess)} ({floor}: "
                f"{_quote(m, b, 'range ')})" if unmeasured else
                f"{mark}{nm(best)} has the {word} {short_label(m, g.excess)}, "
                f"{_quote(m, b, 'range ')}")
    else:
        each = [f"{p} {_quote(m, mv.cells[p])}" for p in mv.best]
        tie = f" ({floor + ': ' if unmeasured else ''}{'; '.join(each)})"
        lead = (f"{mark}{' and '.join(nm(p) for p in mv.best)} "
                + (f"have no measurable {short_label(m, g.excess)}{tie}"
                   if unmeasured else f"share the {word} {short_label(m, g.excess)}{tie}"))
        # a tie's every median and range is the longest clause: the note may hold it (the
        # floor they are under stays a while longer)
        movable.append((tie, f" ({floor})" if unmeasured else "",
                        f"the tied best's medians and ranges: {'; '.join(each)}"))
        if unmeasured:
            movable.append((f" ({floor})", "", f"the tied best's medians are {floor}"))
    rated = throughput(m, row.rate, b.median, w.median)
    # an assignor's count the same on every seed of each protocol named: no median to take
    over = (f"on every one of {n} seeds" if assignor_count(m.column) and constant_cells(
        [mv.cells[p] for p in (*mv.best, worse)]) else f"medians of {n} seeds")
    text = (f"{where}: {lead} against {_quote(m, w)} for {nm(worse)} (the runner-up), {over}"
            f"{rated}.")
    if rated:
        # the lag restated in the group's production: the note may hold it, before the
        # mark's limit
        movable.append((rated, "", f"{short_label(m, g.excess)} restated{rated}"))
    text += _by_design(row.settings or g.settings, m, worse, w.median, row.down_ms,
                       row.departs)
    if mv.depends in DEPENDS_ON_TIMING.values():
        text += (f" The mark depends on {mv.depends}: the protocol at another timing of it "
                 "(a column of this row) is not marked the same way.")
    elif mv.depends:
        text += (f" The mark depends on {mv.depends}: at another value swept it goes to "
                 "another protocol or to none.")
    caveats: tuple[str, ...] = ()
    if mv.limit and not mv.limit.startswith("is won"):  # (_by_design says that one)
        whose = ("The mark" if mv.limit.startswith(("rests on", WIDER_THAN_MEASURED[:12]))
                 else "Eager's mark")
        # the limit's gist in the sentence, its evidence in the note under it
        short = gist(mv.limit) if words(mv.limit) > LONG_LIMIT else mv.limit
        said = f" {whose} {short}" + (" (note below)." if short != mv.limit else ".")
        text += said
        whole = f"{whose[0].lower()}{whose[1:]} {mv.limit}"
        if short != mv.limit:
            caveats = (whole,)
        # the limit's gist may go to the note too, where the sentence runs long
        movable.append((said, " Its limit: note below.",
                        "" if short != mv.limit else whole))
    cmd = reproduce(g.spec, row.scenario, row.size, row.workload,
                    [label_at(g, p, row) for p in (*mv.best, worse)])
    return Claim(g.name, text, cmd, m.column, row.scenario, row.size, best, worse,
                 row.workload, timing_ms=row.x if row.timing else None, caveats=caveats,
                 movable=tuple(movable))


#: A sentence is a claim of at most this many words, its conditions' letters included (the
#: outside reviewer's rule): what runs over goes to the note under it (:func:`fit`).
MAX_WORDS = 60


#: A movable clause (:attr:`Claim.movable`) that stands for whatever sentence is last in the
#: text when :func:`fit` reaches it (its first sentence, the claim, stays).
LAST_SENTENCE = "\x01last sentence"
#: One that stands for a crossover's last grid's clauses (``; [grid] ...``), the first grid's
#: staying.
LAST_BRACKET = "\x01last bracket"
#: :data:`LAST_SENTENCE`, a "Worse on" sentence included.
ANY_LAST_SENTENCE = "\x01any last sentence"
#: One that stands for the seed ranges the sentence quotes beside its medians.
RANGES = "\x01ranges"


def fit(c: Claim, count: Callable[[Claim], int] | None = None,
        budget: int = MAX_WORDS) -> Claim:
    """The sentence within ``budget`` words (``count``: how the page counts them, the
    sentence's own words by default): its movable clauses (``Claim.movable``: a tie's every
    median and range, a mark's limit, the lowest medians where no protocol separates) go to
    the note under it, one at a time in their order, until it fits; every fact stays on the
    page, in the sentence or its note."""
    size = count or (lambda x: words(x.text))
    c = replace(c, text=merge_alike(c.text))
    for frag, stand_in, note in c.movable:
        c = replace(c, text=merge_alike(c.text))
        if size(c) <= budget:
            break
        if frag in (LAST_SENTENCE, ANY_LAST_SENTENCE):
            # the sentence's last sentence but its first, whole, to the note; one naming a
            # cost the winner is worse on (:func:`weakest_metric`) only as the last resort
            parts = re.split(r"(?<=\.)\s+(?=[A-Z])", c.text.strip())
            k = next((j for j in range(len(parts) - 1, 0, -1)
                      if frag == ANY_LAST_SENTENCE or not parts[j].startswith("Worse on")),
                     None)
            if k is not None:
                c = replace(c, text=" ".join(parts[:k] + parts[k + 1:]),
                            caveats=(*c.caveats, parts[k].rstrip(".")))
            continue
        if frag == RANGES:
            # the claim's seed ranges, each with the median it goes with, to the note
            pat = re.compile(r"([\d.,]+(?: [^\s()]+)?) \((?:range )?([\d.,]+\u2013[^()]*)\)")
            got = pat.findall(c.text)
            if got:
                c = replace(c, text=pat.sub(r"\1", c.text), caveats=(
                    *c.caveats, "the seeds' ranges: " + "; ".join(
                        f"{med}: {rng}" for med, rng in got)))
            continue
        if frag == LAST_BRACKET:
            # a crossover's last grid's clauses (``; [grid] ...``) but its first, to the note
            seg = re.search(r"; (\[[^\]]+\] [^\[]*?)(?=\.\s*$)", c.text)
            if seg:
                c = replace(c, text=c.text[:seg.start()] + c.text[seg.end():],
                            caveats=(*c.caveats, seg[1]))
            continue
        if frag not in c.text:
            continue
        text = c.text.replace(frag, stand_in, 1)
        if not stand_in:  # a clause gone from a list: its separator with it
            text = re.sub(r"\s*;\s*(?=[;.)\]]|$)", "", text)
            text = re.sub(r"([:\]])\s*;\s*", r"\1 ", text)
        c = replace(c, text=text, caveats=(*c.caveats, note) if note else c.caveats)
    return c


_ALIKE = re.compile(r"\[([^\]]+)\] ([^\[;]+(?:; [^\[;]+)*?); \[([^\]]+)\] \2(?=[.;]|$)")


def merge_alike(text: str) -> str:
    """Grids' clauses of a crossover sentence that read alike once shortened, said once with
    both grids named (``[a] X; [b] X`` → ``[a, b] X``): the same facts, fewer words."""
    while (m := _ALIKE.search(text)) is not None:
        text = text[:m.start()] + f"[{m[1]}, {m[3]}] {m[2]}" + text[m.end():]
    return text


#: A mark's limit longer than this many words goes to the note under its sentence, the
#: sentence keeping its gist (:func:`gist`): a sentence is a claim of about 60 words.
LONG_LIMIT = 25


def words(text: str) -> int:
    """How many words ``text`` has (what the page's sentence length counts)."""
    return len(text.split())


def gist(limit: str) -> str:
    """A mark's limit as a sentence says it: its clauses without the parentheses that hold
    their evidence, and without the wire's measurements ("holds only with aligned heartbeats
    (kip415-hb-spread-10ms, ...); real classic members ..." -> "holds only with aligned
    heartbeats"); the evidence goes to the note under the sentence."""
    kept = []
    for clause in limit_clauses(limit):
        out, depth = [], 0
        for ch in clause:
            depth += ch == "("
            if depth == 0:
                out.append(ch)
            depth -= ch == ")" and depth > 0
        bare = re.sub(r"\s+", " ", "".join(out)).strip().rstrip(",;:")
        # the wire's measurements are the evidence, not the limit: the note holds them
        if bare and "real classic members" not in bare:
            kept.append(bare)
    return "; ".join(kept) or limit


def label_at(g: GridVerdict, protocol: str, row: VerdictRow) -> str:
    """The label a row's protocol ran under: in a grid judged per value of a swept timing
    (:func:`swept_timing`), the base protocol at the row's value (``classic:eager`` in the
    1 s row -> ``classic:eager@hbspread1s``); else the protocol."""
    from groupcoord.sim.settings import split_timing

    if not (row.timing and g.labels and g.parameter):
        return protocol
    return next((lb for lb in g.labels if _strip_timing(lb, g.parameter) == protocol
                 and split_timing(lb)[1].get(g.parameter) == row.x), protocol)


#: KIP-415's delay: an incremental cooperative Connect group waits this long before it hands a
#: departed worker's tasks to the others.
DELAY_SETTING = "scheduled.rebalance.max.delay.ms"
#: A crossover's value where the only mark is won against that delay (no finding).
DELAY_WIN = "\x00delay"


def _by_design(settings: Mapping[str, Mapping[str, Any]], m: Metric, worse: str,
               value: float, down_ms: int | None = None, departs: bool = True) -> str:
    """What the reader must know when an incremental cooperative Connect protocol is the
    slower one to balance (or has the more task downtime) and took at least its delay (the
    row's own setting: the grid may sweep it): KIP-415 waits, by design. Time until balanced
    after the last event of a bounce (``down_ms``: how long the worker was away) counts from
    the worker's return, while the delay runs from its departure: what is left of the delay
    then is the delay less the absence (round 11: worker-bounce-d30s's 23-24 s is the rest of
    the 30 s delay, unlabelled while the 300 s rows carried the label). Only where the delay
    is used: a protocol that reads it (not eager Connect, with or without a timing variant)
    in a scenario where a worker departs (``departs``); a worker that only joins leaves no
    task waiting on it, whatever the setting says."""
    if (m.column not in ("time_to_balance_ms", BALANCE_AFTER_LAST, "task_downtime_task_s")
            or family(worse) not in _CONNECT_FAMILIES
            or base_protocol(worse).endswith(":eager") or not departs):
        return ""
    delay = settings.get(worse, {}).get(DELAY_SETTING)
    if m.column == "task_downtime_task_s":
        # at least one task stood for the whole delay (task·s against ms)
        if not isinstance(delay, int | float) or delay <= 0 or value < 0.9 * delay / 1000.0:
            return ""
        return (f" By design: KIP-415 holds a departed worker's tasks, not running, for "
                f"{DELAY_SETTING} ({int(delay):,} ms here) in case it comes back.")
    if not isinstance(delay, int | float) or delay <= 0:
        return ""
    rest = delay - down_ms if (m.column == BALANCE_AFTER_LAST and down_ms
                               and 0 < down_ms < delay) else delay
    if value < 0.9 * rest:
        return ""
    return (f" By design: KIP-415 holds a departed worker's tasks for {DELAY_SETTING} "
            f"({int(delay):,} ms here) in case it comes back.")


def _quote(m: Metric, c: Cell, lead: str = "") -> str:
    """A cell's median and range, or, when its seeds split, every outcome with its count and
    the typical one (the outcome most seeds gave; none when two gave as many): a sentence
    never headlines one outcome of a split as the cell's number."""
    if not c.split:
        return f"{m.fmt(c.median)}{_range(m, c, lead)}{rare_tail(m, c)}"
    n = sum(len(o) for o in c.outcomes)  # the seeds the outcomes were found over
    each = " and ".join(f"{m.fmt(statistics.median(o))} on {len(o)} of {n} seeds"
                        for o in c.shown)
    most = max(len(o) for o in c.outcomes)
    top = [o for o in c.outcomes if len(o) == most]
    typical = (f"typical: {m.fmt(statistics.median(top[0]))}" if len(top) == 1
               else "no outcome typical")
    # the cell's median is its first seed set's (what the mark rests on), the outcomes may
    # count both sets' seeds: the median says its own seeds
    which = (f"all {n}" if len(c.values) == n
             else f"the first seed set's {len(c.values)}")
    mean = f", mean {m.fmt(statistics.fmean(c.values.values()))}" if rare_tail(m, c) else ""
    return f"{each} (its seeds split; {typical}; median of {which}: {m.fmt(c.median)}{mean})"


#: A cell's mean over this many times its median: a rare bad seed the median hides, quoted.
MEAN_OVER_MEDIAN = 2.0


def rare_tail(m: Metric, c: Cell) -> str:
    """A sentence's words for a cell whose mean is over :data:`MEAN_OVER_MEDIAN` times its
    median (a rare bad outcome the median hides: eager's JoinGroup barrier wait when an event
    lands inside the classic heartbeat burst) whose worst seed is beyond the metric's floor
    from the median: " (mean X, worst seed Y: k of n seeds beyond 2x the median)"; nothing
    otherwise (a higher-is-better metric's worst is its lowest). A split cell's outcomes
    already say the worst and how often: its text adds the mean (:func:`_quote`)."""
    vals = list(c.values.values())
    if len(vals) < 2:
        return ""
    med, mean = c.median, statistics.fmean(vals)
    worst = max(vals) if m.lower_is_better else min(vals)
    bad = mean > MEAN_OVER_MEDIAN * med if m.lower_is_better else \
        mean * MEAN_OVER_MEDIAN < med
    if not bad or med < 0 or abs(worst - med) <= m.floor:
        # (a worst seed within the metric's floor of the median is no outcome that counts)
        return ""
    far = sum(1 for v in vals if (v > MEAN_OVER_MEDIAN * med if m.lower_is_better
                                  else v * MEAN_OVER_MEDIAN < med))
    return (f" (mean {m.fmt(mean)}, worst seed {m.fmt(worst)}: {far} of {len(vals)} seeds "
            f"beyond {MEAN_OVER_MEDIAN:g}x the median)")


def _range(m: Metric, c: Cell, lead: str = "") -> str:
    """`` (lo-hi unit)`` of a cell's seeds, nothing when they print the same."""
    lo, hi = number(c.low / m.scale), number(c.high / m.scale)
    if lo == hi:
        return ""
    return f" ({lead}{lo}{DASH}{hi}{' ' + m.unit if m.unit else ''})"


def _strength(mv: MetricVerdict) -> float:
    m = mv.metric
    b = mv.cells[mv.best[0]].median
    sign = 1 if m.lower_is_better else -1
    w = min((mv.cells[p].median for p in mv.beaten), key=lambda v: sign * v)
    lo, hi = sorted((abs(b), abs(w)))
    return (hi + m.floor) / (lo + m.floor)


#: How a crossover sentence names a value whose first seed set marked a best the fresh set
#: did not repeat.
NOT_CONFIRMED = "not confirmed"


#: A crossover's words for a value whose cells kept fewer than :data:`MIN_SEEDS` seeds.
NOT_TESTED = "not tested"


def _untested_text(row: VerdictRow, mv: MetricVerdict) -> str:
    """A crossover's words for a row judged on too few seeds ("few seeds": runs that never
    caught up, or broke an invariant, are left out, and their seeds dropped from the row):
    not tested, with the seeds its ranked cells kept of the row's."""
    kept = min((len(mv.cells[p].values) for p in ranked(mv.cells)), default=0)
    return (f"{NOT_TESTED} ({kept} of {row.seeds} seeds kept: the others' runs left out, "
            "the table says why)")


def _unconfirmed_text(mv: MetricVerdict) -> str | None:
    """A crossover's words for a row whose mark the fresh seeds did not repeat (None: no mark
    on either set: "no protocol separated")."""
    if mv.verdict != "unconfirmed":
        return None
    first = mv.best[0] if len(mv.best) == 1 else " and ".join(mv.best)
    return f"{NOT_CONFIRMED} ({first} on the first seeds; {again_text(mv)} on the fresh)"


def limit_clauses(limit: str) -> list[str]:
    """A mark's limit split into its clauses: at each "; " outside parentheses (a clause's own
    parenthesis may hold "; ")."""
    out, depth, start = [], 0, 0
    for k, ch in enumerate(limit):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and limit.startswith("; ", k):
            out.append(limit[start:k])
            start = k + 2
    out.append(limit[start:])
    return [c for c in out if c]


def limit_clauses_text(lim_rows: Sequence[tuple[float | None, str]],
                       xs: Sequence[float | None], x_unit: str) -> str:
    """The limits of the values a crossover sentence names together, each clause once: a
    clause every value carries as it is, a clause only some carry with the values it holds
    at ("at 40 % busy: the mark holds only with aligned heartbeats ...")."""
    where: dict[str, list[float | None]] = {}
    for x, lim in lim_rows:
        for c in limit_clauses(lim):
            where.setdefault(c, [])
            if x not in where[c]:
                where[c].append(x)
    texts = []
    for c, at in where.items():
        text = c if c.startswith("real ") else f"the mark {c}"
        if len(at) < len(set(xs)):
            text = f"at {', '.join(number(x or 0.0) for x in at)}{x_unit}: {text}"
        texts.append(text)
    return "; ".join(texts)


def _crossovers(g: GridVerdict) -> list[Claim]:
    """Per scenario and metric of a grid that sweeps a parameter: the marked best at each
    value swept (the tied best together, when they beat the others), when it is not the same
    at every value (where the winner changes); the question's first metric at every value."""
    x_unit = X_NAMES.get(g.parameter or "", (g.parameter or "", ""))[1]
    out = []
    # a swept timing's rows differ by workload too: each workload its own sweep (as
    # :func:`sweep_findings`; one sweep over two workloads read "at 3,000, 3,000 ms")
    by_scenario: dict[tuple[str, int, str], list[VerdictRow]] = defaultdict(list)
    for row in g.rows:
        if row.x is not None:
            by_scenario[(row.scenario, row.size, row.workload if row.timing else "")].append(row)
    for (scenario, size, _work), rows in by_scenario.items():
        rows = sorted(rows, key=lambda r: r.x or 0.0)
        if min(r.seeds for r in rows) < CLAIM_MIN_SEEDS:
            continue
        for i, m in enumerate(g.metrics):
            if task_time_input(g, m):
                continue  # the task-time inputs' result, not the protocols'
            # the marked best, or the tied best together when they beat the others
            winners = [(r.x, (f"{PAIRED_MARK} " if r.metrics[i].paired else "")
                        # tied winners in one order at every value (the same pair at two
                        # values reads as one finding)
                        + " and ".join(full_name(p, (r.settings or g.settings).get(p))
                                       for p in sorted(r.metrics[i].best))
                        if r.metrics[i].verdict in ("best", "tied") and r.metrics[i].beaten
                        else _unconfirmed_text(r.metrics[i])) for r in rows]
            # a win over a configured KIP-415 delay is no finding (the page's rule): said
            # as such, never named as a winner
            winners = [(x, DELAY_WIN if w is not None and r.metrics[i].limit.startswith("is won")
                        else w) for r, (x, w) in zip(rows, winners, strict=True)]
            # a value whose cells kept too few seeds (runs that never caught up are left out)
            # was not tested: never "no protocol separated"
            winners = [(x, _untested_text(r, r.metrics[i]) if r.metrics[i].verdict
                        == "few seeds" else w) for r, (x, w) in zip(rows, winners, strict=True)]
            named = {w for _, w in winners if w is not None and w != DELAY_WIN
                     and not w.startswith((NOT_CONFIRMED, NOT_TESTED))}
            # the grid's own metric (its question's first) is answered at every value swept;
            # the others only where the winner changes
            if not named or (i > 0 and len(named) < 2):
                continue
            parts = []
            notes = []  # each mark's limits: the note under the sentence
            moves: list[tuple[str, str, str]] = []  # what fit() may give to the note
            # a clause already shortened, shortened again: after every first shortening
            later: list[tuple[str, str, str]] = []
            # one winner at every value swept: the sweep has no crossover, and says so (the
            # seventeenth outside review: "the load at which each protocol starts to win"
            # read as a crossover the sweep never found)
            same = no_crossover(winners, named)
            for w in dict.fromkeys(w for _, w in winners):
                xs = ", ".join(number(x or 0.0) for x, v in winners if v == w)
                part = f"{w or 'no protocol separated from all the rest'} at {xs}{x_unit}"
                if same:
                    part = f"{w}, {same_winner_words(winners, x_unit)}"
                    # over 60 words, the short form
                    moves.append((part, f"{w} at {xs}{x_unit} (no crossover)", ""))
                if w is not None and w.startswith(NOT_TESTED):
                    why = w.removeprefix(NOT_TESTED)
                    parts.append(f"{NOT_TESTED} at {xs}{x_unit}{why}")
                    moves.append((why, "", f"{NOT_TESTED} at {xs}{x_unit}{why}"))
                    # over 60 words still, the value goes to the note whole, as an untied
                    # "no protocol separated" does
                    moves.append((f"{NOT_TESTED} at {xs}{x_unit}", "", ""))
                    continue
                if w == DELAY_WIN:
                    won = (f" the only mark is won against the configured {DELAY_SETTING}, "
                           "by design (no finding)")
                    parts.append(f"at {xs}{x_unit}{won}")
                    moves.append((f"at {xs}{x_unit}{won}", f"at {xs}{x_unit} no finding (note)",
                                  f"at {xs}{x_unit}{won}"))
                    continue
                # what the mark rests on (a member late at the rebalance, a configured
                # delay), as the table says it
                # once per clause (round 8: a clause the 40 % row shared with 20 and 30 %
                # printed twice); a clause only some of the values carry says at which
                lim_rows = [(x, r.metrics[i].limit) for r, (x, v) in zip(rows, winners, strict=True)
                            if v == w and w is not None and r.metrics[i].limit]
                # whether an eager mark survives spread heartbeats, in the sentence itself
                # (outside review round 13: the crossover's eager mark at 40 % busy reversed
                # with a spread, and only its note said so), beside the mark's limits
                mine = [(x, r.metrics[i].spread) for r, (x, v) in zip(rows, winners, strict=True)
                        if v == w and w is not None and r.metrics[i].spread]
                said = ""
                if mine:
                    said, detail = crossover_spread_words(
                        mine, m, x_unit, [x for x, v in winners if v == w])
                    notes.append(f"{w} at {xs}{x_unit}, with spread heartbeats: {detail}")
                kept = f"; {said}" if said else ""
                if lim_rows:
                    # a limit's evidence is long (the heartbeat spread measured on the wire):
                    # the sentence says the limit's gist and the note under it the evidence
                    at = [x for x, v in winners if v == w]
                    full = limit_clauses_text(lim_rows, at, x_unit)
                    short = limit_clauses_text([(x, gist(lim)) for x, lim in lim_rows], at,
                                               x_unit)
                    gone = f" (limit in the note{kept})"
                    if short == full or words(full) <= LONG_LIMIT:
                        part += f" ({full}{kept})"
                        moves.append((f" ({full}{kept})", gone,
                                      f"{w} at {xs}{x_unit}: {full}"))
                    else:
                        part += f" ({short}; note below{kept})"
                        notes.append(f"{w} at {xs}{x_unit}: {full}")
                        moves.append((f" ({short}; note below{kept})", gone, ""))
                    if said:
                        # the spread's outcome in three words stays in the sentence (round
                        # 15, S5: Connect eager's sentence had lost it to the note)
                        later.append((gone, f" ({spread_gist(mine)}; note)", ""))
                    else:
                        # last of all, the limit's pointer in one word
                        later.append((gone, " (note)", ""))
                elif said:
                    part += f" ({said})"
                    moves.append((f" ({said})", " (spread heartbeats: note)", ""))
                if w is None:
                    # no mark is no reversal: which protocol still has the best median there
                    # (round 8: a spread narrowed eager's lead, the sentence read as a flip)
                    sign = 1 if m.lower_is_better else -1
                    leads = []
                    for r, (x, v) in zip(rows, winners, strict=True):
                        cells = {p: c for p, c in r.metrics[i].cells.items() if p in ranked(
                            g.protocols)}
                        if v is None and cells:
                            lead = min(cells, key=lambda p: (sign * cells[p].median, p))
                            leads.append(f"{lead} at {number(x or 0.0)}{x_unit}")
                    if leads:
                        low = (f"the {'lowest' if sign > 0 else 'highest'} median: "
                               + ", ".join(leads))
                        part += f" ({low})"
                        moves.append((f" ({low})", "",
                                      f"where no protocol separated, {low}"))
                    # last of all, the values where none separated go to the note whole
                    moves.append((part.partition(" (")[0], "", part.partition(" (")[0]))
                parts.append(part)
            # a grid that sweeps a timing on one workload: the sentence names it (round 8:
            # S11 held on its workload only, the sentence did not say which)
            loads = {r.workload for r in rows}
            on = f" on {next(iter(loads))}" if len(loads) == 1 else ""
            first = next(iter(sorted(named))).removeprefix(f"{PAIRED_MARK} ")
            out.append(Claim(g.name, "", "", m.column, scenario, size,
                             first, "", head=f"{on}\x00{m.column}",
                             detail="; ".join(parts), swept_on=next(iter(loads)) if on else "",
                             caveats=tuple(notes), sizes=(size,),
                             # a mark's limits go to the note before the lowest medians
                             movable=(*(mv for mv in moves if mv[1]), *later,
                                      *(mv for mv in moves if not mv[1]))))
    return _crossover_texts(g, _merge_sizes(out))


#: What a sweep with one winner at every value says (:func:`same_winner_words`).
NO_CROSSOVER = "no crossover in the sweep"


def no_crossover(winners: Sequence[tuple[float | None, str | None]],
                 named: Collection[str]) -> bool:
    """Whether a sweep's marks (per value swept, its winner's words) name one winner at every
    value, at two or more values: the sweep found no crossover."""
    ws = {w for _, w in winners}
    return len(winners) > 1 and len(ws) == 1 and next(iter(ws)) in named


def same_winner_words(winners: Sequence[tuple[float | None, str | None]], x_unit: str) -> str:
    """"the same winner from 20 to 40 % busy: no crossover in the sweep"."""
    xs = sorted(x or 0.0 for x, _ in winners)
    return f"the same winner from {number(xs[0])} to {number(xs[-1])}{x_unit}: {NO_CROSSOVER}"


def sweep_findings(g: GridVerdict) -> list[str]:
    """Per scenario and size of a grid that sweeps a parameter, on its question's first
    metric, whether the winner changes within the sweep, computed from the rows: "scale-out,
    8 members: classic:eager, the same winner from 20 to 40 % busy: no crossover in the
    sweep", or the values where the marked winner changes. Empty for a grid that sweeps
    nothing (the grid's section prints these under its description)."""
    if g.parameter is None or not g.metrics:
        return []
    x_unit = X_NAMES.get(g.parameter, (g.parameter, ""))[1]
    i = next((k for k, m in enumerate(g.metrics) if not task_time_input(g, m)), None)
    if i is None:
        return []
    # a swept timing's rows differ by workload too: each workload its own sweep
    by: dict[tuple[str, int, str], list[VerdictRow]] = defaultdict(list)
    for row in g.rows:
        if row.x is not None and len(row.metrics) > i:
            by[(row.scenario, row.size, row.workload if row.timing else "")].append(row)
    out = []
    for (scenario, size, work), rows in by.items():
        rows = sorted(rows, key=lambda r: r.x or 0.0)
        if len(rows) < 2:
            continue
        winners = [(r.x, " and ".join(sorted(r.metrics[i].best))
                    if r.metrics[i].verdict in ("best", "tied") and r.metrics[i].beaten
                    else None) for r in rows]
        named = {w for _, w in winners if w}
        where = (f"{scenario}, {size} {member_word(scenario, g.protocols)}"
                 + (f", {work}" if work else ""))
        if no_crossover(winners, named):
            out.append(f"{where}: {winners[0][1]}, {same_winner_words(winners, x_unit)}")
        elif named:
            each = "; ".join(f"{number(x or 0.0)}{x_unit}: {w or 'none separated'}"
                             for x, w in winners)
            out.append(f"{where}: the marked winner by value ({each})")
        else:
            out.append(f"{where}: no protocol separated at any value")
    return out


def _merge_sizes(found: Sequence[Claim]) -> list[Claim]:
    """The size rule for crossovers: one sentence per scenario and metric for the sizes whose
    findings read alike (the same winners at the same values, the same limits), naming those
    sizes; sizes whose findings differ keep their own sentences."""
    out: list[Claim] = []
    for c in found:
        same = next((o for o in out if (o.scenario, o.metric, o.head, o.detail, o.caveats)
                     == (c.scenario, c.metric, c.head, c.detail, c.caveats)), None)
        if same is None:
            out.append(c)
        else:
            same.sizes = (*same.sizes, c.size)
            same.size = max(same.size, c.size)
    return out


def sizes_text(sizes: Sequence[int], word: str) -> str:
    """``6 workers``, ``6 and 12 workers``, ``3, 6 and 12 workers``."""
    names = [f"{s:,}" for s in sorted(sizes)]
    both = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{both} {word}"


def _crossover_texts(g: GridVerdict, found: Sequence[Claim]) -> list[Claim]:
    """A crossover's words, head and command once its sizes are merged (:func:`_merge_sizes`):
    the head (without the grid's name) is what grids asking the same question at another
    setting share."""
    x_name = X_NAMES.get(g.parameter or "", (g.parameter or "", ""))[0]
    out = []
    for c in found:
        on, _, column = c.head.partition("\x00")
        m = BY_COLUMN[column]
        where = f"{c.scenario}, {sizes_text(c.sizes, member_word(c.scenario, g.protocols))}{on}"
        word = "lowest" if m.lower_is_better else "highest"
        what = f"{short_label(m, g.excess)} against {x_name}, the {word}, separated from the rest"
        c.head = f"{where}, {what}"
        c.text = f"{where} ({g.name}), {what}: {c.detail}."
        c.command = reproduce(g.spec, c.scenario, c.sizes if len(c.sizes) > 1 else c.size, None,
                              g.labels or g.protocols)
        out.append(c)
    return out


def claimable(mv: MetricVerdict, min_seeds: int = CLAIM_MIN_SEEDS) -> bool:
    """Whether a marked difference may carry a sentence: every protocol it names has at least
    ``min_seeds`` seeds (separated ranges; from :data:`SIGN_MIN_SEEDS` on the sign test too)."""
    named = (*mv.best, *mv.beaten)
    return bool(named) and all(len(mv.cells[p].values) >= min_seeds for p in named)


@dataclass(slots=True, frozen=True)
class Comparisons:
    """How many pairs the tables test, and how many would separate by chance alone."""

    rows: int
    pairs: int
    expected: float
    claim_pairs: int
    claim_expected: float
    #: Pairs left out of the chance figure: both protocols' values the same on every seed
    #: (a count the assignment fixes, as task restarts 128 against 50), no draw to be lucky in.
    fixed: int = 0
    claim_fixed: int = 0
    #: Pairs with :data:`SIGN_MIN_SEEDS` seeds or more, where the paired sign test marks too
    #: (☆), and the marks chance would give there by that test (:func:`sign_chance`, both
    #: directions), and the pairs per seed count n.
    sign_pairs: int = 0
    sign_expected: float = 0.0
    sign_seeds: tuple[tuple[int, int], ...] = ()


def fixed_pair(a: Cell, b: Cell) -> bool:
    """Whether two cells are each one value on every seed (:class:`Comparisons`): the chance
    1 / C(2n, n) assumes values drawn from a continuous distribution, which a count fixed by
    the assignment is not."""
    return len(set(a.values.values())) == 1 and len(set(b.values.values())) == 1


def comparisons(verdicts: Sequence[GridVerdict]) -> Comparisons:
    """Every (row, metric, pair of ranked protocols) tested with separated ranges, and the
    expected number of chance marks if no protocol differed from any other: the sum of
    1 / C(2n, n) over the pairs (n the fewer seeds of the two); the same over the pairs in
    cells a claim may rest on (:data:`CLAIM_MIN_SEEDS`). A pair whose two protocols each
    have the same value on every seed (:func:`fixed_pair`: task restarts, a pure function of
    the assignment) is no chance event: it is counted apart (``fixed``), not in ``pairs``
    nor ``expected``."""
    rows = pairs = claim_pairs = fixed = claim_fixed = sign_pairs = 0
    expected = claim_expected = sign_expected = 0.0
    by_n: dict[int, int] = {}
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                pool = ranked(mv.cells)
                if len(pool) < 2:
                    continue
                tested = False
                for i, a in enumerate(pool):
                    for b in pool[i + 1:]:
                        n = min(len(mv.cells[a].values), len(mv.cells[b].values))
                        if n < MIN_SEEDS:
                            continue
                        # either of the two may come out better: twice the one-sided chance
                        p = 2 * separation_chance(n)
                        if not tested:  # a row-metric counts when one of its pairs is tested
                            rows += 1   # (round 8: consumers-300's 18, too few seeds, were)
                            tested = True
                        if fixed_pair(mv.cells[a], mv.cells[b]):
                            fixed += 1
                            claim_fixed += n >= CLAIM_MIN_SEEDS
                            continue
                        pairs += 1
                        expected += p
                        if n >= CLAIM_MIN_SEEDS:
                            claim_pairs += 1
                            claim_expected += p
                        if n >= SIGN_MIN_SEEDS:
                            # a mark there (★ or ☆) is as likely by chance as the sign
                            # test's (separated ranges are a sign test won on every seed)
                            top, whole = sign_chance(n)
                            sign_pairs += 1
                            sign_expected += 2 * top / whole
                            by_n[n] = by_n.get(n, 0) + 1
    return Comparisons(rows, pairs, expected, claim_pairs, claim_expected, fixed, claim_fixed,
                       sign_pairs, sign_expected, tuple(sorted(by_n.items())))


def _clean_work(run: Mapping[str, Any]) -> str:
    """A run's workload parameters without its poison keys (``poison_*``): two workloads with
    the same clean parameters are the same records, one with poison records among them."""
    try:
        work = json.loads(str(run.get("work") or "{}"))
    except ValueError:
        return str(run.get("workload"))
    if not isinstance(work, dict):
        return str(run.get("workload"))
    return json.dumps({k: v for k, v in work.items() if not str(k).startswith("poison")},
                      sort_keys=True)


def distinct_marks(verdicts: Sequence[GridVerdict],
                   runs: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """The marked row-metrics (★ or =) and the distinct findings among them: a row of a
    workload that differs from another row's only in its poison records (the same clean
    parameters), on the same seeds, with the same mark (the same best and the same protocols
    beaten) repeats that row's finding and does not count again (a poison workload whose
    records cost a clean one's barely changes an outcome: its ★ is the clean row's twin)."""
    clean = clean_workloads(runs)
    marks = 0
    seen: set[tuple[Any, ...]] = set()
    for g in verdicts:
        for row in g.rows:
            for mv in row.metrics:
                if mv.verdict not in ("best", "tied"):
                    continue
                marks += 1
                seen.add(finding_key(g, row, mv, clean))
    return marks, len(seen)


def clean_workloads(runs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each workload's parameters without its poison records (:func:`_clean_work`)."""
    clean: dict[str, str] = {}
    for r in runs:
        clean.setdefault(str(r.get("workload")), _clean_work(r))
    return clean


def finding_key(g: GridVerdict, row: VerdictRow, mv: MetricVerdict,
                clean: Mapping[str, str]) -> tuple[Any, ...]:
    """A mark's finding (:func:`distinct_marks`): two marks with the same key are one finding,
    a poison row's mark repeating its clean row's on the same seeds."""
    seeds = tuple(sorted({s for m in row.metrics for c in m.cells.values() for s in c.values}))
    return (g.name, row.scenario, row.size, row.fault_rate, row.x,
            clean.get(str(row.workload), str(row.workload)), seeds, mv.metric.column,
            tuple(mv.best), tuple(sorted(mv.beaten)))


#: The page's sentence-selection rule, as the report states it (``{limit}``: MAX_CLAIMS,
#: ``{seeds}``: CLAIM_MIN_SEEDS).
CLAIM_RULE = (
    "Which differences get a sentence: every one marked ★ (or = beside a ★) by the test "
    "above in a cell of at least {seeds} seeds per "
    "protocol, in the grid's own metrics, is a candidate; of one scenario and metric only the "
    "size with the largest effect counts; a win over a protocol whose number is a configured "
    "delay (KIP-415's scheduled.rebalance.max.delay.ms) is no candidate, nor a Connect "
    "grid's time until balanced (it contains the model's task stop and start times, marked "
    "*); on a topic's growth against a classic protocol the numbers are draws of the "
    "classic leader's metadata refresh phase (uniform over metadata.max.age.ms), so a "
    "candidate there is in time to converge, shown as its distribution over every seed, "
    "with at least {phase} seeds per protocol: lag, record·s and downtime there are quoted "
    "beside it, never headlined. First, every question the grids ask of their own (a grid that asks whether "
    "another grid's marks hold is answered by the limit those marks carry in their "
    "sentences) gets one sentence: its grid's strongest win (where the question names some "
    "of its scenarios' events, as a worker that joins, leaves or bounces, among those, at "
    "Kafka's default delay, in its first metric; a winner that loses at Kafka's default "
    "scheduled.rebalance.max.delay.ms of 300 s says where), or, where no protocol "
    "separates in any of its rows, that there is no difference. An eager win opens with "
    "its aligned heartbeats, also where its cell was never run with them spread (naming "
    "the same scenario's spread cell where one ran); a winner under the metric's floor has "
    "no measurable cost. Then, in each grid, "
    "every protocol that wins in the grid's first cost metric a protocol separates on (its "
    "question's: task downtime, lag, stall, time to converge or balance; an assignor's "
    "count, partitions moved or task restarts, ranks after every cost of its grid and is "
    "quoted as a clause of the cost's sentence, \"on every seed\" where it never varies; a "
    "topic's growth after a member's change) gets its strongest "
    "win there, a shared win counting for each protocol sharing it "
    "(a grid that sweeps a parameter instead says, per scenario, where its first metric's "
    "winner changes, protocols tied for it named together, the sizes where it reads alike "
    "in one sentence); then the remaining candidates by "
    "effect size (the ratio of the best's median to its runner-up's, the closest protocol it "
    "separates from, each plus the metric's floor; a sentence names the runner-up, never the "
    "worst protocol), a scenario not "
    "yet named before another sentence on one that is; a sentence on a grid whose finding "
    "an earlier sentence already quotes (a mark's limit naming that grid) is not shown; at "
    "most {limit} sentences in all, shown in the grids' order. A grid the introduction names "
    "is a question of the page's own even where it asks whether other marks hold, answered "
    "on its rows under its own condition (a member slow at each rebalance, poll loops that "
    "pause); a grid that sweeps a setting around another answer's cell is said in that "
    "answer's sentence; a grid that asks whether other marks hold, with no sentence on the "
    "page and quoted by none, is added to a sentence with the same finding (\"Likewise\") or "
    "on its plain cell (\"with one member late\"), else gets a sentence after each grid's "
    "first ones while places remain. Each sentence is at most 60 words as printed: what runs "
    "over goes, whole, to the note under it.")


#: Connect metrics that contain the model's task stop and start times: every rebalance of a
#: Connect group waits for the tasks it moves to stop and start, so time until balanced is
#: made of those inputs as much as of the protocol (with a 0 s task stop, eager and sessioned
#: balance worker-leaves at 12 workers in the same 2,490 ms, where a 1 s stop gave 4 s
#: against 3 s). A Connect worker stall is a worker's task stop and start plus the barrier's wait
#: between them: the same inputs.
TASK_TIME_INPUTS = frozenset({"time_to_balance_ms", BALANCE_AFTER_LAST, "worker_stall_ms"})


def task_time_input(g: GridVerdict, m: Metric) -> bool:
    """Whether ``m`` in grid ``g`` contains the task-time inputs (a Connect grid's time until
    balanced: the table marks it with a *, and its ★ carries no sentence)."""
    return (m.column in TASK_TIME_INPUTS and bool(g.protocols)
            and all(family(p) in _CONNECT_FAMILIES for p in g.protocols))


#: Metrics a ``-slowNms`` scenario variant injects: eager's stall there is the rebalances
#: times the slow event the scenario adds (one member late by N ms at every rebalance).
SLOW_INPUTS = frozenset({"stall_ms"})


def injected_input(row: VerdictRow, m: Metric) -> bool:
    """Whether ``m`` in ``row`` equals an input the scenario injects (a busy-member grid's
    stall: rebalances x the slow event), so that its mark is the input's, not the
    protocols': no sentence, like a Connect grid's task-time input."""
    return m.column in SLOW_INPUTS and SLOW_VARIANT.match(row.scenario) is not None


#: Seeds per protocol a sentence on a topic's growth against a classic protocol needs (its
#: values are draws of the leader's refresh phase, uniform over metadata.max.age.ms: the
#: median of 5 such draws moves several times between seed sets, that of 20 far less).
PHASE_MIN_SEEDS = 20
#: The metrics that phase decides on a topic's growth (how long the new partitions wait);
#: of them a sentence headlines time to converge only (:data:`CLAIM_RULE`).
PHASE_DECIDED = frozenset({"convergence_ms", "time_to_balance_ms", "lag_peak", "lag_record_s",
                           "resource_downtime_ms", "paused_partition_s"})


def phase_draw(scenario: str, mv: MetricVerdict) -> bool:
    """Whether a marked difference on ``scenario`` is a classic refresh phase's draw that may
    not carry a sentence (:data:`CLAIM_RULE`): a topic's growth, a classic protocol named, a
    metric the phase decides, and either not time to converge or fewer than
    :data:`PHASE_MIN_SEEDS` seeds for a protocol it names."""
    named = (*mv.best, *mv.beaten)
    if not any(x in scenario for x in GROWTH_SCENARIOS) \
            or mv.metric.column not in PHASE_DECIDED \
            or not any(family(p) == "classic" for p in named):
        return False
    return mv.metric.column != "convergence_ms" or any(
        len(mv.cells[p].values) < PHASE_MIN_SEEDS for p in named)


#: The strength a count's candidate ranks at where its grid has a cost candidate
#: (:func:`_candidates`): after every cost, before an assignor's win.
COUNT_RANK = -0.5


def assignor_count(column: str) -> bool:
    """Whether a metric is a count the protocol's assignor decides (``lab.calibrate.
    ASSIGNOR_COUNTS``: partitions moved, task restarts): the same on every seed where the
    assignment is, so its ratio (0 against 256) outranks any cost's and answers no question
    of what a change costs."""
    from groupcoord.lab.calibrate import ASSIGNOR_COUNTS

    return column in ASSIGNOR_COUNTS


def headline_metric(g: GridVerdict, columns: Collection[str]) -> str:
    """The metric a grid's sentences lead with, of the ``columns`` its candidates mark: the
    first of its question's metrics that is a cost (task downtime, excess lag, stall, time to
    converge or balance; not an assignor's count, :func:`assignor_count`) on which a protocol
    separates; the question's first metric where none does (the seventeenth outside review:
    "0 against 256 restarts" headlined the grid that asks what a change costs)."""
    order = [m.column for m in g.metrics]
    costs = [c for c in order if c in columns and not assignor_count(c)]
    return costs[0] if costs else (order[0] if order else "")


def _candidates(g: GridVerdict) -> list[tuple[float, Claim, tuple[str, ...]]]:
    """A grid's candidate sentences with their effect sizes: per scenario and question metric
    the marked difference of the size with the largest effect. Where the grid has a cost
    candidate, a count's (:func:`assignor_count`) ranks after every cost
    (:data:`COUNT_RANK`), its figure a clause of the cost's sentence (:func:`count_clause`);
    a topic's growth ranks after a member's change of the same kind (a grid asking what a
    member change costs is answered by one)."""
    scored = _scored(g, g.rows)
    has_cost = any(not assignor_count(mv.metric.column) for _, _, mv in scored)
    changes = any(not _growth(row.scenario) for _, row, _ in scored)
    out = []
    for st, row, mv in scored:
        if assignor_win(mv):
            # a win the loser's assignor makes (eager with range loses, eager with another
            # assignor among the winners) answers no question of protocols: after every other
            st = -1.0
        elif has_cost and assignor_count(mv.metric.column):
            st = COUNT_RANK
        elif changes and _growth(row.scenario) and st > 0:
            # a topic's growth after every member change of its kind (cost or count)
            st = st / (1 + st)
        out.append((st, _claim(g, row, mv), mv.best))
    return out


def _growth(scenario: str) -> bool:
    return any(x in scenario for x in GROWTH_SCENARIOS)


def assignor_win(mv: MetricVerdict) -> bool:
    """Whether a mark is the loser's assignor's: every protocol it beats is classic eager,
    and a classic eager protocol (with another assignor) is among its winners (outside
    review round 15, S8: the page's own caveat said the range assignor was the cause)."""
    return bool(mv.beaten) and all(_spread_eager(p) and family(p) == "classic"
                                   for p in mv.beaten) \
        and any(_spread_eager(p) and family(p) == "classic" for p in mv.best)


def _scored(g: GridVerdict, rows: Sequence[VerdictRow]
            ) -> list[tuple[float, VerdictRow, MetricVerdict]]:
    """:func:`_candidates` of ``rows`` (of ``g``), as the rows and marks with their effect
    sizes."""
    best: dict[tuple[str, str], tuple[float, VerdictRow, MetricVerdict]] = {}
    for row in rows:
        for mv in row.metrics:
            if mv.verdict not in ("best", "tied") or not mv.beaten or not claimable(mv) \
                    or task_time_input(g, mv.metric) or injected_input(row, mv.metric):
                continue
            if mv.metric.column == "stall_ms" and not any(
                    family(p) in _CONNECT_FAMILIES for p in g.protocols) and any(
                    m.column in ("lag_record_s", "lag_peak") for m in g.metrics):
                # a consumer group's stall is 0 by construction under cooperative and KIP-848
                # (no global barrier): a sentence on it answers with the one metric eager
                # cannot win; the question's lag answers it (round 8, S10)
                continue
            if phase_draw(row.scenario, mv):
                continue  # (:data:`CLAIM_RULE`: a refresh phase's draw is not a headline)
            sign = 1 if mv.metric.lower_is_better else -1
            runner_up = min(mv.beaten, key=lambda p: (sign * mv.cells[p].median, p))
            if _by_design(row.settings or g.settings, mv.metric, runner_up,
                          mv.cells[runner_up].median, row.down_ms, row.departs):
                # the other protocol's number is a configured delay (KIP-415's
                # scheduled.rebalance.max.delay.ms): not a headline of a protocol's merit
                continue
            key = (row.scenario, mv.metric.column)
            strength = _strength(mv)
            if key not in best or (strength, row.size) > (best[key][0], best[key][1].size):
                best[key] = (strength, row, mv)
    return list(best.values())


def claim_candidates(verdicts: Sequence[GridVerdict]) -> int:
    """How many candidate sentences the page has (the rule of :data:`CLAIM_RULE`; a
    companion grid's marks, :func:`is_companion`, are read beside its parent's, none of its
    own)."""
    return sum(len(_crossovers(g)) if g.parameter is not None
               else 0 if is_companion(g, verdicts) else len(_candidates(g))
               for g in verdicts)


def is_companion(g: GridVerdict, verdicts: Sequence[GridVerdict]) -> bool:
    """A grid that reruns an earlier grid's cells with a timing variant of its protocols
    (``crossover-10ms-hb1s``: every label ``@hb1s``, the same scenarios, sizes and
    workloads as crossover-10ms, whose protocols include the bases): its findings are read
    beside the parent's, never as a sentence of their own. A static companion
    (``share-rolling-static``: its variants all ``@static``, KIP-345's static members, beside
    labels of the parent's own, a share group having no static membership) is one too."""
    from groupcoord.sim.settings import STATIC_VARIANT

    variants = [p for p in g.protocols if "@" in p]
    if g.labels or not variants:
        return False
    if len(variants) < len(g.protocols) and not all(
            p.partition("@")[2] == STATIC_VARIANT for p in variants):
        return False
    bases = {p.partition("@")[0] for p in g.protocols}
    cells = {(r.scenario, r.size, r.workload) for r in g.rows}
    for other in verdicts:
        if other is g:
            return False
        if bases <= set(other.protocols) and cells <= {(r.scenario, r.size, r.workload)
                                                        for r in other.rows}:
            return True
    return False


def claims(verdicts: Sequence[GridVerdict], limit: int = MAX_CLAIMS,
           family_of: Callable[[Claim], Hashable] | None = None,
           intro: str = "", noted: Collection[str] = ()) -> list[Claim]:
    """At most ``limit`` sentences for the page, chosen by :data:`CLAIM_RULE`: first each
    grid's winners' strongest wins (a grid that sweeps a parameter: its crossovers of the
    question's first metric), then the other candidates by effect size, scenarios not yet on
    the page first. With ``family_of``, a candidate whose key (not None) an earlier one already
    has is not shown (``lab.share_marks.family_key``: one share sentence per scenario family
    and size). With ``intro`` (the page's introduction), a grid it names is a question of the
    page's own even where it asks whether other marks hold (:func:`late_answer`). A grid in
    ``noted`` is answered by a note the page prints under a sentence (a split cell's note
    naming the grid that swept its deciding input): no sentence of its own."""
    first: list[tuple[float, Claim]] = []
    rest: list[tuple[float, Claim]] = []
    merged: dict[str, Claim] = {}  # one crossover sentence across grids asking the same
    won: dict[int, frozenset[str]] = {}  # a sentence's winners (a Likewise matches them)
    leads: dict[str, str] = {}  # each grid's headline metric
    groups: dict[str, list[tuple[list[str], str, tuple[str, ...],
                                 tuple[tuple[str, str, str], ...]]]] = {}
    for g in verdicts:
        if g.parameter is not None:
            found = []
            companion = is_companion(g, verdicts)
            for c in _crossovers(g):
                same = merged.get(c.head)
                if same is None and companion:
                    continue  # a companion grid's finding joins its parent's sentence only
                if same is None:
                    merged[c.head] = c
                    groups[c.head] = [([c.grid], c.detail, c.caveats, c.movable)]
                    found.append(c)
                    continue
                # grids that found the same (the same winners at the same values, the same
                # limits) are named together, once
                mine = groups[c.head]
                alike = next((x for x in mine if x[1:3] == (c.detail, c.caveats)), None)
                if alike is None:
                    mine.append(([c.grid], c.detail, c.caveats, c.movable))
                else:
                    alike[0].append(c.grid)
                same.text = f"{same.head}: " + "; ".join(
                    f"[{', '.join(gs)}] {d}" for gs, d, _, _ in mine) + "."
                same.caveats = tuple(f"[{', '.join(gs)}] {x}"
                                     for gs, _, cv, _ in mine for x in cv)
                # each grid's clauses move on their own, their note naming the grids
                every = [(f, t, f"[{', '.join(gs)}] {n}" if n else "")
                         for gs, _, _, mv in mine for f, t, n in mv]
                # a clause shortened again (its frag another clause's stand-in) only after
                # every grid's first shortening
                twice = {t for _, t, _ in every if t}
                same.movable = (*(x for x in every if x[1] and x[0] not in twice),
                                *(x for x in every if x[0] in twice),
                                *(x for x in every if not x[1] and x[0] not in twice))
            lead = g.metrics[0].column if g.metrics else ""
            first += [(math.inf, c) for c in found if c.metric == lead]
            rest += [(0.0, c) for c in found if c.metric != lead]
            continue
        if is_companion(g, verdicts):
            continue  # a companion grid's reading joins its parent's sentence only
        cands = sorted(_candidates(g), key=lambda sc: (-sc[0], sc[1].scenario, sc[1].metric))
        seen: set[str] = set()
        lead = headline_metric(g, {c.metric for _, c, _ in cands})
        leads[g.name] = lead
        for st, c, winners in cands:
            won[id(c)] = frozenset(winners)
            # a win shared by tied protocols counts for each of them; a grid's headlines are
            # in its question's metric (task downtime for KIP-415, not restart counts)
            if c.metric == lead and set(winners) - seen:
                seen.update(winners)
                first.append((st, c))
            else:
                rest.append((st, c))
    first.sort(key=lambda sc: -sc[0])
    rest.sort(key=lambda sc: -sc[0])
    # every question the page asks gets a sentence first: each grid that asks one of its own
    # (not whether another grid's marks hold: that answer is the limit those marks carry in
    # their own sentences) its strongest win, or, where it has none, that no protocol differs
    by_grid = {g.name: g for g in verdicts}
    answers: list[Claim] = []
    answered: set[str] = set()
    for g in verdicts:
        if g.name in noted:
            answered.add(g.name)
            continue
        if g.parameter is None and is_companion(g, verdicts):
            continue  # a companion grid's reading joins its parent's sentence only
        if follow_up(g):
            if g.parameter is None and names_grid(intro, g.name):
                # the introduction asks it: answered on its own rows under its condition
                pick = late_answer(g)
                if pick is not None:
                    c = _claim(g, *pick)
                    won[id(c)] = frozenset(pick[1].best)
                    answers.append(c)
                    answered.add(g.name)
            continue
        # its own sentences, or a crossover naming it among the grids in a bracket (the
        # whole name: "[kip415" begins "[kip415-task-times]" too)
        bracket = re.compile(rf"\[(?:[^\]]*, )?{re.escape(g.name)}(?:, [^\]]*)?\]")
        own = [c for _, c in first + rest if c.grid == g.name or bracket.search(c.text)]
        # the question's own events first, at Kafka's default delay before another delay
        # (the eighteenth outside review: kip415 asks what a worker that joins, leaves or
        # bounces costs, and its answer was a connector's creation)
        own.sort(key=lambda c: (question_rank(g, c.scenario),
                                c.metric != leads.get(c.grid, c.metric)))
        if own:
            if own[0].grid not in answered:
                answers.append(own[0])
                answered.add(own[0].grid)
            answered.add(g.name)
            continue
        answer = no_difference(g)
        if answer is None:
            continue
        # the same finding as an earlier answer at another size (rolling-30 after rolling):
        # said once, the other grid's cell added to its sentence and its command
        same = next((a for a in answers if (a.scenario, a.metric, a.best, a.worse)
                     == (answer.scenario, answer.metric, answer.best, answer.worse)), None)
        if same is not None:
            same.text += (f" Likewise at {answer.size:,} "
                          f"{member_word(answer.scenario, g.protocols)} ({g.name}).")
            same.command = same.command.replace(
                f" --size {same.size} ", f" --size {same.size} --size {answer.size} ", 1)
        else:
            answers.append(answer)
        answered.add(g.name)
    chosen = {id(c) for c in answers}
    first = [sc for sc in first if id(sc[1]) not in chosen]
    rest = [sc for sc in rest if id(sc[1]) not in chosen]
    # a follow-up grid's sweep of an answer's own cell (metadata-age's refresh intervals
    # around the anchor's topic growth) is that answer's question at other settings: said in
    # its sentence, with its command, not in a sentence of its own
    for pool in (first, rest):
        for sc in list(pool):
            c = sc[1]
            sweep = by_grid.get(c.grid)
            if sweep is None or sweep.parameter is None or not follow_up(sweep) or c.worse:
                continue
            host = next((a for a in answers if a.worse and a.grid != c.grid
                         and (a.scenario, a.metric) == (c.scenario, c.metric)
                         and a.size in (c.sizes or (c.size,))), None)
            if host is None:
                continue
            if spread_quotes(host, c.grid, verdicts):
                # a heartbeat-spread grid's finding in the answer's cell: the answer's own
                # spread clause says it (spread_condition), with the medians
                pool.remove(sc)
                answered.add(c.grid)
                continue
            x_name = X_NAMES.get(sweep.parameter, (sweep.parameter, ""))[0]
            body = c.text.partition(": ")[2].rstrip(".")
            whose = "" if body.startswith("[") else f" ({c.grid})"
            host.text += f" Against {x_name}{whose}: {body}."
            host.command += "\n" + c.command
            host.caveats = (*host.caveats, *c.caveats)
            host.movable = (*host.movable, *c.movable)
            pool.remove(sc)
            answered.add(c.grid)
    # the rest: a scenario not yet on the page before a scenario's second sentence
    shown = {(c.grid, c.scenario) for c in answers} | {(c.grid, c.scenario) for _, c in first}
    fresh: list[tuple[float, Claim]] = []
    again: list[tuple[float, Claim]] = []
    for sc in rest:
        key = (sc[1].grid, sc[1].scenario)
        (again if key in shown else fresh).append(sc)
        shown.add(key)
    top = answers + [c for _, c in first]
    ordered = top + [c for _, c in (fresh + again)]
    # a sentence on a grid whose findings a sentence before it already quotes (a mark's
    # limit naming that grid) restates them: not shown
    kept: list[Claim] = []
    for c in ordered:
        if c.grid in noted or (c.grid in by_grid and any(c.grid != k.grid and quotes(k, c.grid)
                                                         for k in kept)):
            continue
        kept.append(c)
    ordered = kept
    if family_of is not None:
        keys: set[Hashable] = set()
        kept = []
        for c in ordered:
            k = family_of(c)
            if k is not None and k in keys:
                continue
            keys.add(k)
            kept.append(c)
        ordered = kept
    # a follow-up grid with no sentence on the page whose marks no sentence quotes: its
    # finding under its own condition, added to a sentence with the same finding
    # ("Likewise"), to the sentence on its plain cell ("with one member late"), or, after the
    # grids' first sentences, a sentence of its own
    page = ordered[:limit]
    extra: list[Claim] = []
    for g in verdicts:
        if (not follow_up(g) or g.parameter is not None or g.name in answered
                or any(c.grid == g.name or quotes(c, g.name) or spread_quotes(c, g.name,
                                                                             verdicts)
                       for c in page + extra)):
            continue
        host, pick = _likewise_host(g, page + extra, won)
        late = _late_host(g, page + extra)
        if host is not None and pick is not None:
            _add_likewise(host, g, *pick)
        elif late is not None:
            _add_late(*late, g)
        elif (pick := late_answer(g)) is not None:
            c = _claim(g, *pick)
            won[id(c)] = frozenset(pick[1].best)
            extra.append(c)
    tops = {id(c) for c in top}
    ordered = ([c for c in ordered if id(c) in tops] + extra
               + [c for c in ordered if id(c) not in tops])
    # each sentence within MAX_WORDS words as the page names its protocols (by label, their
    # assignor and heartbeat said once above the sentences); the page fits it again with its
    # conditions' letters (``lab.report.fitted``)
    # the growth's cause is the last clause the page moves to the note, the adverse row the
    # one before it
    # an eager win's spread-heartbeat finding and its weakest metric are the last clauses
    # but the growth's cause to go
    # a growth row's lag the fitted sentence still quotes: its upper bound said last, kept
    # (outside the word budget, as the cell's lag a count's sentence quotes)
    def pipeline(c: Claim) -> Claim:
        c = count_clause(closer_elsewhere(c, verdicts), verdicts)
        # an eager win that needs aligned heartbeats opens with that condition, which says
        # the spread's finding: the spread clauses after the claim go to the note
        opened = eager_condition(c, verdicts)
        opens = opened is not c
        notes = opened.caveats[len(c.caveats):]  # the opening's own facts for the note
        for step in (adverse_row, late_flip, weakest_metric, spread_condition,
                     aligned_heartbeats, discovery_cause, against_control, default_delay):
            if opens and step in (spread_condition, aligned_heartbeats):
                said = step(c, verdicts)
                extra = said.text[len(c.text):].strip()
                c = replace(c, caveats=(*c.caveats, extra.rstrip("."))) if extra else c
                continue
            c = step(c, verdicts)
        if opens:
            c = opened_fit(replace(c, caveats=(*c.caveats, *notes)),
                           opened.text.partition("\x00")[0])
        return fit_growth(c, verdicts, labelled_words)

    out = [pipeline(c) for c in ordered[:limit]]
    order = {g.name: i for i, g in enumerate(verdicts)}
    out.sort(key=lambda c: order.get(c.grid, 0))
    return out


#: What a sentence quoting a growth row's lag says of it (docs/lab.md, "What the model leaves
#: out": the model's producer finds a topic's new partitions at once, where a real producer
#: waits for its own metadata refresh).
GROWTH_LAG_BOUND = "Lag an upper bound: the model's producer sees new partitions at once."
#: The lag metrics whose figures on a growth row are such a bound.
GROWTH_LAG_METRICS = ("lag_peak", "lag_record_s")


def growth_lag_bound(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence on a topic's growth (:data:`GROWTH_SCENARIOS`) that quotes a lag figure (its
    own metric, its cell's lag, or a worse-on clause) says in one clause that the lag is an
    upper bound (:data:`GROWTH_LAG_BOUND`): the seventeenth outside review found it in the
    chart's footnote only. The clause is not movable: it stays in the sentence."""
    if not any(x in c.scenario for x in GROWTH_SCENARIOS) or GROWTH_LAG_BOUND in c.text:
        return c
    g = next((v for v in verdicts if v.name == c.grid), None)
    excess = bool(g is not None and g.excess)
    names = {short_label(BY_COLUMN[x], e) for x in GROWTH_LAG_METRICS for e in (excess, False)}
    if c.metric not in GROWTH_LAG_METRICS and not any(n in c.text for n in names):
        return c
    return replace(c, text=f"{c.text.rstrip()} {GROWTH_LAG_BOUND}")


def fit_growth(c: Claim, verdicts: Sequence[GridVerdict],
               count: Callable[[Claim], int] | None = None) -> Claim:
    """:func:`fit`, then :func:`growth_lag_bound` on what the sentence still quotes, within the
    same word budget: where the clause would run the sentence over it, the sentence is fitted
    again with the clause's words kept free (a lag clause moved to the note takes no bound)."""
    out = growth_lag_bound(fit(c, count), verdicts)
    size = count or (lambda x: words(x.text))
    if out.text.endswith(GROWTH_LAG_BOUND) and size(out) > MAX_WORDS:
        out = growth_lag_bound(fit(c, count, MAX_WORDS - words(GROWTH_LAG_BOUND)), verdicts)
    return out


#: Scenarios whose cost a grid defines against a control scenario run beside it: the same
#: disturbance without the mechanism under test (the long-poll grid: a member joins inside
#: c3's long poll, or the same join once c3 has caught up; both contain c3's restart). Such a
#: control differs in when the member joins too; a control workload (below) does not.
CONTROL_SCENARIOS = {"join-in-long-poll": "join-after-catch-up"}
#: What each such scenario adds to its control (the mechanism its difference measures).
CONTROL_MECHANISM = {"join-in-long-poll": "the long poll"}
#: What a control scenario changes besides the mechanism (said wherever its difference is).
CONTROL_ALSO = {"join-in-long-poll": "the join's time too (60 s after c3's return, not 2 s)"}
#: Workloads whose cost a grid defines against a control workload run beside it on the same
#: scenario and seeds: one input changed and nothing else (the long-poll grid: up to 50 records
#: a poll instead of 500, so a 1 s poll after c3's backlog instead of a 10 s one, at the same
#: load and join time: the outside review's control c2). Preferred to a control scenario.
CONTROL_WORKLOADS = {"long-poll": "long-poll-1s"}
#: The settings a control workload changes, as the runs record them (``settings_json``).
CONTROL_SETTINGS = ("max.poll.records",)


def paired_difference(a: Cell, b: Cell, by_seed: bool = False) -> tuple[float, int] | None:
    """The median of the per-seed difference ``a - b`` over the seeds both cells ran (paired
    by replicate, a scenario's seed numbers being its own; by seed where the runs carry no
    replicate, or with ``by_seed``: two workloads of one scenario run the same seeds), and
    how many: None where they share none. A difference of medians pairs no seed with its own
    control (the seventeenth outside review, S11)."""
    if by_seed:
        ka, kb = dict(a.values), dict(b.values)
    else:
        ka = {a.replicates.get(s, s): v for s, v in a.values.items()}
        kb = {b.replicates.get(s, s): v for s, v in b.values.items()}
    common = sorted(set(ka) & set(kb))
    if not common:
        return None
    return statistics.median(ka[k] - kb[k] for k in common), len(common)


def control_row(g: GridVerdict, row: VerdictRow) -> tuple[VerdictRow, bool] | None:
    """``row``'s control in ``g`` and whether it pairs by seed: the same scenario and size on
    the control workload (:data:`CONTROL_WORKLOADS`: the same seeds, one input changed),
    else the control scenario (:data:`CONTROL_SCENARIOS`) on the same workload (paired by
    replicate); None where ``g`` has neither, and for a row on a control workload."""
    if row.workload in CONTROL_WORKLOADS.values():
        return None  # a control workload's row is itself the control
    wl = CONTROL_WORKLOADS.get(row.workload)
    ctl = None if wl is None else next(
        (r for r in g.rows if (r.scenario, r.size, r.workload) == (row.scenario, row.size, wl)),
        None)
    if ctl is not None and row.scenario in CONTROL_SCENARIOS:
        return ctl, True
    control = CONTROL_SCENARIOS.get(row.scenario)
    ctl = next((r for r in g.rows if (r.scenario, r.size, r.workload)
                == (control, row.size, row.workload)), None)
    return None if ctl is None else (ctl, False)


def control_cost(g: GridVerdict, row: VerdictRow, ctl: VerdictRow | None = None,
                 by_seed: bool = False) -> list[tuple[Metric, dict[str, float]]] | None:
    """Per metric of ``g`` (resource downtime, excess lag, lag peak: each that a protocol's
    difference takes beyond the metric's floor), each protocol's paired difference between
    ``row`` and its control row (``ctl``, else :func:`control_row`'s): the median of its
    per-seed differences (:func:`paired_difference`); None where ``row`` has no control in
    ``g``."""
    if ctl is None:
        found = control_row(g, row)
        if found is None:
            return None
        ctl, by_seed = found
    out = []
    for mv in row.metrics:
        cv = next((x for x in ctl.metrics if x.metric.column == mv.metric.column), None)
        if cv is None or task_time_input(g, mv.metric):
            continue
        diff = {p: d[0] for p in ranked(g.protocols)
                if p in mv.cells and p in cv.cells
                and (d := paired_difference(mv.cells[p], cv.cells[p], by_seed)) is not None}
        if diff and any(abs(d) > mv.metric.floor for d in diff.values()):
            out.append((mv.metric, diff))
    return out


def control_change(row: VerdictRow, ctl: VerdictRow) -> str:
    """What a control workload changes, from the rows' settings (:data:`CONTROL_SETTINGS`,
    the first protocol's): "max.poll.records 500 instead of 50"; "" where none differs."""
    def first(r: VerdictRow) -> Mapping[str, Any]:
        return next(iter(r.settings.values()), {})
    a, b = first(row), first(ctl)
    return ", ".join(f"{k} {a[k]:,} against {b[k]:,}"
                     for k in CONTROL_SETTINGS if k in a and k in b and a[k] != b[k])


def _signed(m: Metric, v: float) -> str:
    return ("+" if v > 0 else "") + _bare(m, v)


def _cost_parts(g: GridVerdict, costs: list[tuple[Metric, dict[str, float]]],
                protocols: Sequence[str]) -> str:
    # the first metric names each protocol, the others give theirs in the same order
    return "; ".join(f"{short_label(m, g.excess)} " + ", ".join(
        (f"{p} " if j == 0 else "") + _signed(m, d.get(p, math.nan)) for p in protocols)
        + (f" {m.unit}" if m.unit else "") for j, (m, d) in enumerate(costs))


def _pairs(row: VerdictRow, ctl: VerdictRow, column: str, protocols: Sequence[str],
           by_seed: bool) -> int:
    n = [d[1] for mv in row.metrics if mv.metric.column == column
         for cv in ctl.metrics if cv.metric.column == column
         for p in protocols if p in mv.cells and p in cv.cells
         and (d := paired_difference(mv.cells[p], cv.cells[p], by_seed)) is not None]
    return min(n, default=row.seeds)


def against_control(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence on a scenario its grid measures against a control (:func:`control_row`)
    quotes what the grid defines as the cost: per protocol, its row minus its control row,
    the median of the per-seed differences, each metric that differs; the raw rows' finding
    goes to the note (outside review round 16, S11: join-in-long-poll quoted raw totals,
    about 320 resource·s of each the common restart). Where the grid runs a control workload
    (:data:`CONTROL_WORKLOADS`: the same scenario, seeds and join time, one setting changed:
    the eighteenth outside review's c2), that is the cost, paired by seed; the difference
    against the control scenario, which moves the join's time too, goes to the note, said
    so (:data:`CONTROL_ALSO`)."""
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None or c.scenario not in CONTROL_SCENARIOS:
        return c
    # a sentence on a control workload's row speaks of the row it controls
    main = next((w for w, v in CONTROL_WORKLOADS.items() if v == c.workload), c.workload)
    row = next((r for r in g.rows if (r.scenario, r.size, r.workload)
                == (c.scenario, c.size, main)), None)
    found = None if row is None else control_row(g, row)
    if row is None or found is None:
        return c
    ctl, by_seed = found
    costs = control_cost(g, row, ctl, by_seed)
    if not costs:
        return c
    # the sentence's own metric first
    costs.sort(key=lambda x: x[0].column != c.metric)
    protocols = list(costs[0][1])
    n = _pairs(row, ctl, costs[0][0].column, protocols, by_seed)
    members = ("static " if row.static else "") + member_word(c.scenario, g.protocols)
    static = " with group.instance.id" if row.static else ""
    if by_seed:
        change = control_change(row, ctl)
        what = f"only {change}" if change else f"only in its {ctl.workload} workload"
        text = (f"{c.scenario}, {c.size:,} {members}{static} ({g.name}): the cost of the "
                f"long poll alone, each protocol's {row.workload} row minus its {ctl.workload} "
                f"row on the same seeds (the same load and join time, {what}), medians "
                f"over {n} seeds: " + _cost_parts(g, costs, protocols) + ".")
    else:
        what = CONTROL_MECHANISM.get(c.scenario, "the mechanism under test")
        text = (f"{c.scenario}, {c.size:,} {members}{static} ({g.name}): "
                f"each protocol's row minus its {ctl.scenario} row per seed, medians over "
                f"{n} seeds: " + _cost_parts(g, costs, protocols) + ".")
        # a negative difference: that protocol's control costs more than its row, so the
        # control differs from the row by more than the mechanism under test
        for p in protocols:
            # (by the first metric it is negative on: the sentence's own first)
            below = [(m, d[p]) for m, d in costs if p in d and d[p] < -m.floor]
            if below:
                text += (f" {p}'s control costs more, by {below[0][0].fmt(-below[0][1])}: "
                         f"it differs by more than {what}.")
    notes: list[str] = []
    if by_seed:
        # the scenario control's difference, said to differ in the join's time too
        other = next((r for r in g.rows if (r.scenario, r.size, r.workload)
                      == (CONTROL_SCENARIOS[c.scenario], row.size, row.workload)), None)
        again = None if other is None else control_cost(g, row, other, False)
        if again and other is not None:
            again.sort(key=lambda x: x[0].column != c.metric)
            also = CONTROL_ALSO.get(c.scenario, "more than the mechanism")
            notes.append(
                f"against {other.scenario} instead, which differs in {also}, paired by "
                f"replicate (its seeds are its own), medians over "
                f"{_pairs(row, other, again[0][0].column, list(again[0][1]), False)} seeds: "
                + _cost_parts(g, again, list(again[0][1])))
    raw = "the raw rows: " + c.text.rstrip(".")
    return replace(c, text=text, workload=row.workload, caveats=(*notes, raw, *c.caveats),
                   movable=())


_FULL_NAME = re.compile(r" \([^()]*, [\d.,]+ m?s heartbeat\)")


def labelled_words(c: Claim) -> int:
    """A sentence's words with each protocol named by its label, as the page prints it
    (``findings.full_name``'s "(assignor, heartbeat)" said once above the sentences)."""
    return words(_FULL_NAME.sub("", c.text))


def names_grid(text: str, grid: str) -> bool:
    """Whether ``text`` (the page's introduction) names ``grid``."""
    return bool(re.search(rf"(?<![\w-]){re.escape(grid)}(?![\w-])", text))


def late_answer(g: GridVerdict) -> tuple[VerdictRow, MetricVerdict] | None:
    """A follow-up grid's answer of its own: its strongest marked difference (the sentence
    rule's candidates) among its rows under the condition it adds (``VerdictRow.late``: a
    member slow at every rebalance, poll loops that pause), among all its rows where none
    carries one; None without a candidate."""
    rows = [r for r in g.rows if r.late] or g.rows
    scored = sorted(_scored(g, rows), key=lambda x: (-x[0], x[1].scenario, x[2].metric.column))
    return (scored[0][1], scored[0][2]) if scored else None


def _runner_up(mv: MetricVerdict) -> str:
    sign = 1 if mv.metric.lower_is_better else -1
    return min(mv.beaten, key=lambda p: (sign * mv.cells[p].median, p))


def _likewise_host(g: GridVerdict, hosts: Sequence[Claim], won: Mapping[int, frozenset[str]]
                   ) -> tuple[Claim | None, tuple[VerdictRow, MetricVerdict] | None]:
    """The sentence among ``hosts`` whose finding one of ``g``'s candidates repeats (the same
    metric, the same winners, the same runner-up), with that candidate, the strongest such;
    (None, None) where none does. A candidate whose winners pay more excess lag than its
    runner-up in its own cell (:func:`lag_disagrees`) repeats nothing: a Likewise agrees on
    what the application pays (outside review round 16, S3: in rolling-bounce-down20s the
    protocols that moved fewest partitions cost 1.8-2.3x eager's lag)."""
    rows = [r for r in g.rows if r.late] or g.rows
    for _, row, mv in sorted(_scored(g, rows),
                             key=lambda x: (-x[0], x[1].scenario, x[2].metric.column)):
        if lag_disagrees(row, mv.best, _runner_up(mv)):
            continue
        for h in hosts:
            if (h.worse and h.metric == mv.metric.column and h.worse == _runner_up(mv)
                    and won.get(id(h)) == frozenset(mv.best)):
                return h, (row, mv)
    return None, None


def lag_disagrees(row: VerdictRow, winners: Sequence[str], worse: str) -> bool:
    """Whether, in ``row``, a winner's excess lag (record·s, median) exceeds ``worse``'s by
    more than the metric's floor (:func:`threshold`): the winners pay the application more
    than the protocol they beat. False where the row has no lag for them."""
    mv = next((x for x in row.metrics if x.metric.column == "lag_record_s"), None)
    if mv is None or any(p not in mv.cells or not mv.cells[p].values
                         for p in (*winners, worse)):
        return False
    low = mv.cells[worse].median
    return any(mv.cells[p].median - low > threshold(mv.metric, mv.cells[p].median, low)
               for p in winners)


def _late_host(g: GridVerdict, hosts: Sequence[Claim]
               ) -> tuple[Claim, VerdictRow, MetricVerdict] | None:
    """The sentence among ``hosts`` on the plain cell of ``g``'s answer (:func:`late_answer`)
    where that answer's row is the plain scenario with one member slow (``-slowNms``), on the
    same metric: the follow-up's finding is that sentence's question with a member late."""
    pick = late_answer(g)
    if pick is None:
        return None
    row, mv = pick
    slow = SLOW_VARIANT.match(row.scenario)
    if slow is None:
        return None
    host = next((h for h in hosts if (h.scenario, h.size, h.metric)
                 == (slow["base"], row.size, mv.metric.column)), None)
    return None if host is None else (host, row, mv)


def _add_late(host: Claim, row: VerdictRow, mv: MetricVerdict, g: GridVerdict) -> None:
    """``host`` says what ``g``'s row with one member late finds on its metric (the marked
    best against the runner-up, medians), and its command reruns that cell too."""
    m = mv.metric
    slow = SLOW_VARIANT.match(row.scenario)
    late = number(int(slow["v"]) / 1000) if slow else "?"
    worse = _runner_up(mv)
    mark = f"{PAIRED_MARK} " if mv.paired else ""
    best = " and ".join(f"{p} {m.fmt(mv.cells[p].median)}" for p in mv.best)
    said = (f" With one member {late} s late at each rebalance ({row.scenario}, "
            f"{g.name}): {mark}{best} {'share' if len(mv.best) > 1 else 'has'} the "
            f"lowest, against {worse} {m.fmt(mv.cells[worse].median)}.")
    lag = _late_lag(g, mv.metric.column)
    host.text += said + lag
    # an added finding goes to the note before the sentence's own clauses
    host.movable = ((said, "", said.strip().rstrip(".")), *host.movable)
    if lag:
        host.movable = ((lag, "", lag.strip().rstrip(".")), *host.movable)
    host.command += "\n" + reproduce(g.spec, row.scenario, row.size, row.workload,
                                     [label_at(g, p, row) for p in (*mv.best, worse)])


def _late_lag(g: GridVerdict, said: str) -> str:
    """A follow-up grid's excess lag on each of its rows with one member late (``-slowNms``),
    both directions: a marked best against its runner-up, or, unmarked, the lowest median
    against each protocol more than 2x (and the floor) above it, with the verdict where it
    is not a mark (outside review round 13: busy-rolling's lag had eager best at 0.5 s late
    and 4.6x worse at 2 s, the sentence quoted only the lag peak). "" where the grid has no
    lag beside the metric already said."""
    parts = []
    for row in sorted((r for r in g.rows if SLOW_VARIANT.match(r.scenario)),
                      key=lambda r: int(SLOW_VARIANT.match(r.scenario)["v"])):  # type: ignore[index]
        mv = next((x for x in row.metrics if x.metric.column == "lag_record_s"
                   and x.metric.column != said), None)
        if mv is None:
            continue
        m = mv.metric
        pool = [p for p in ranked(g.protocols) if p in mv.cells and mv.cells[p].values]
        if len(pool) < 2:
            continue
        late = number(int(SLOW_VARIANT.match(row.scenario)["v"]) / 1000)  # type: ignore[index]
        sign = 1 if m.lower_is_better else -1
        order = sorted(pool, key=lambda p: (sign * mv.cells[p].median, p))
        low = order[0]
        if mv.verdict in ("best", "tied") and mv.beaten:
            best = " and ".join(f"{p} {m.fmt(mv.cells[p].median)}" for p in mv.best)
            parts.append(f"{late} s late {_mark(mv)}{best} against {_runner_up(mv)} "
                         f"{m.fmt(mv.cells[_runner_up(mv)].median)}")
            continue
        lo = abs(mv.cells[low].median)
        far = [p for p in order[1:] if abs(mv.cells[p].median) - lo > m.floor
               and abs(mv.cells[p].median) > 2 * max(lo, m.floor)]
        if not far:
            continue
        hi = abs(mv.cells[far[-1]].median)
        ratio = f"{hi / lo:.1f}x, " if lo > 0 else ""
        parts.append(f"{late} s late {low} {m.fmt(mv.cells[low].median)} against "
                     + ", ".join(f"{p} {m.fmt(mv.cells[p].median)}" for p in far)
                     + f" ({ratio}{_LAG_WORDS.get(mv.verdict, mv.verdict)})")
    if not parts:
        return ""
    lag = next(m for m in g.metrics if m.column == "lag_record_s")
    return f" Its {short_label(lag, g.excess)}: " + "; ".join(parts) + "."


#: How :func:`_late_lag` names an unmarked row's verdict.
_LAG_WORDS = {"unconfirmed": "not confirmed", "overlap": "not separated", "tie": "a tie",
              "split": "split seeds", "few seeds": f"< {MIN_SEEDS} seeds"}


def _mark(mv: MetricVerdict) -> str:
    return f"{PAIRED_MARK} " if mv.paired else "★ "


#: A KIP-415 scenario's delay variant (``worker-crash-d0``: scheduled.rebalance.max.delay.ms
#: 0) and the variant at Kafka's default delay, 300 s.
_DELAY_VARIANT = re.compile(r"^(?P<base>.+)-(?P<d>d(?:0|\d+s))$")
DEFAULT_DELAY_VARIANT = "d300s"


def _at_default_delay(g: GridVerdict, row: VerdictRow, mv: MetricVerdict, worse: str) -> str:
    """Where a Likewise quotes a KIP-415 delay variant other than Kafka's default delay
    (``worker-crash-d0``), what the same protocols cost at the default (``-d300s``, the same
    grid, size and workload) in task downtime: the restarts a short delay saves can cost
    downtime at the default one (outside review round 13, S1: 11 restarts against 128 at
    delay 0, 3,722 task·s against eager's 475 at 300 s). "" where the grid has no such row."""
    var = _DELAY_VARIANT.match(row.scenario)
    if var is None or var["d"] == DEFAULT_DELAY_VARIANT:
        return ""
    at = f"{var['base']}-{DEFAULT_DELAY_VARIANT}"
    other = next((r for r in g.rows if (r.scenario, r.size, r.workload)
                  == (at, row.size, row.workload)), None)
    dm = None if other is None else next(
        (x for x in other.metrics if x.metric.column == "task_downtime_task_s"), None)
    if dm is None or any(p not in dm.cells or not dm.cells[p].values
                         for p in (*mv.best, worse)):
        return ""
    m = dm.metric
    return (f"; at Kafka's default {DELAY_SETTING} of 300 s ({at}) their "
            f"{short_label(m)} is " + " and ".join(m.fmt(dm.cells[p].median) for p in mv.best)
            + f" against {m.fmt(dm.cells[worse].median)}")


#: A scenario's words that name who changes, not what happens (:func:`question_names`).
_ACTORS = frozenset({"worker", "member", "leader", "connector", "consumer", "task", "group",
                     "after", "with"})


def _stem(w: str) -> str:
    return w.lower().rstrip("s").rstrip("e")


def question_names(g: GridVerdict, scenario: str) -> bool:
    """Whether grid ``g``'s question names the event of ``scenario`` ("when a worker joins,
    leaves or bounces": ``kip415-worker-joins``, ``worker-leaves-d30s``,
    ``kip415-leader-bounces``, not ``kip415-connector-added``): a word of the scenario's name,
    not its actor nor a delay, among the question's words."""
    asked = {_stem(w) for w in re.findall(r"[A-Za-z]+", g.question)}
    var = _DELAY_VARIANT.match(scenario)
    base = var["base"] if var else scenario
    return any(_stem(t) in asked for t in base.split("-")
               if len(t) > 3 and t.isalpha() and t not in _ACTORS)


def question_rank(g: GridVerdict, scenario: str) -> int:
    """A grid's answer's order among its own sentences (:func:`claims`): where the question
    names some of its scenarios but not all, a scenario it names first (0), at Kafka's
    default delay or with none; then one it names at another delay (1); then the rest (2).
    0 for every scenario of a grid whose question names all or none of them."""
    named = [question_names(g, sc) for sc in {r.scenario for r in g.rows}]
    if all(named) or not any(named):
        return 0
    if not question_names(g, scenario):
        return 2
    var = _DELAY_VARIANT.match(scenario)
    return 1 if var and var["d"] != DEFAULT_DELAY_VARIANT else 0


def _verb(base: str) -> str:
    """``worker-crash`` → ``crashes``: the event of a delay variant's base, as a verb."""
    t = base.rsplit("-", 1)[-1]
    if t.endswith("s") and not t.endswith("ss"):
        return t
    return t + ("es" if t.endswith(("sh", "ch", "ss", "x")) else "s")


def default_delay(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence whose winner loses at Kafka's default delay (KIP-415's
    scheduled.rebalance.max.delay.ms, 300 s: the ``-d300s`` rows of any grid, the same size,
    workload and metric) says so in itself, with the events and the medians (these to the
    note where the sentence runs long): the incremental cooperative protocol holds a departed
    worker's tasks for the delay, by KIP-415's design (the eighteenth outside review: S1 said
    only that sessioned wins; at 300 s eager had the lower task downtime when a worker left,
    bounced or crashed)."""
    if not c.best or not c.worse or c.head:
        return c
    found: list[tuple[str, float, float, Metric]] = []
    for g in verdicts:
        for r in g.rows:
            var = _DELAY_VARIANT.match(r.scenario)
            if var is None or var["d"] != DEFAULT_DELAY_VARIANT \
                    or (r.size, r.workload) != (c.size, c.workload):
                continue
            mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
            if mv is None or mv.verdict not in ("best", "tied") or c.worse not in mv.best \
                    or c.best not in mv.cells or not mv.cells[c.best].values:
                continue
            v = _verb(var["base"])
            if v not in [f[0] for f in found]:
                found.append((v, mv.cells[c.worse].median, mv.cells[c.best].median,
                              mv.metric))
    if not found:
        return c
    m = found[0][3]
    who = _DELAY_VARIANT.match(next(r.scenario for g in verdicts for r in g.rows
                                    if _DELAY_VARIANT.match(r.scenario)))
    actor = (who["base"].split("-")[0] if who else "member")
    # the winner's own wins at the default on the other events its grid's question names
    # (a join: no worker departs, no delay applies)
    own = next((g for g in verdicts if g.name == c.grid), None)
    wins: list[tuple[str, float, float, Metric]] = []
    for r in own.rows if own is not None else ():
        assert own is not None
        var = _DELAY_VARIANT.match(r.scenario)
        if r.scenario == c.scenario or (r.size, r.workload) != (c.size, c.workload) \
                or question_rank(own, r.scenario) != 0 or var is not None \
                or not question_names(own, r.scenario):
            continue
        mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
        if mv is None or mv.verdict != "best" or mv.best != (c.best,) \
                or c.worse not in mv.beaten:
            continue
        parts = r.scenario.split("-")
        if actor in parts and parts.index(actor) < len(parts) - 1:
            v = f"{'the' if actor == 'leader' else 'a'} {actor} {_verb(r.scenario)}"
        else:
            continue
        wins.append((v, mv.cells[c.best].median, mv.cells[c.worse].median, mv.metric))

    def each(xs: Sequence[tuple[str, float, float, Metric]]) -> str:
        # "a worker leaves, bounces or crashes": each actor once, its verbs after it
        by: dict[str, list[str]] = {}
        for v, *_ in xs:
            who, _, verb = v.rpartition(" ")
            by.setdefault(who, []).append(verb)
        return " or ".join(f"{who} " + ", ".join(vs[:-1]) + (" or " if len(vs) > 1 else "")
                           + vs[-1] for who, vs in by.items())

    def nums(xs: Sequence[tuple[str, float, float, Metric]]) -> str:
        return " (" + "; ".join(f"{_bare(m, a)} against {_bare(m, b)}"
                                for _, a, b, _ in xs) + f" {m.unit})"

    lost = [(f"a {actor} {v}", a, b, x) for v, a, b, x in found]
    pairs = [nums(xs) for xs in (wins, lost) if xs]
    head = (f"{c.best} has the lower {short_label(m)} when {each(wins)}{pairs[0]}, and "
            f"{c.worse} when {each(lost)}{pairs[-1]}" if wins else
            f"{c.worse} has the lower {short_label(m)} when {each(lost)}{pairs[-1]}")
    clause = f" At Kafka's default {DELAY_SETTING} of 300 s, {head}, by KIP-415's design."
    note = (f"at Kafka's default {DELAY_SETTING} of 300 s, task downtime "
            + "; ".join(f"when {v}: {p} {_bare(m, a)} against {q} {m.fmt(b)}"
                        for xs, p, q in ((wins, c.best, c.worse), (lost, c.worse, c.best))
                        for v, a, b, _ in xs))
    return replace(c, text=c.text + clause,
                   movable=(*c.movable, *((p, " (note)" if i == len(pairs) - 1 else "",
                                           note if i == len(pairs) - 1 else "")
                                          for i, p in enumerate(pairs))))


def _add_likewise(host: Claim, g: GridVerdict, row: VerdictRow, mv: MetricVerdict) -> None:
    """``host`` says that grid ``g``'s row finds the same, with the medians, and its command
    reruns that cell too."""
    m = mv.metric

    def q(c: Cell) -> str:  # a split cell keeps its outcomes (never one outcome as its number)
        if not c.split:
            return m.fmt(c.median)
        n = sum(len(o) for o in c.outcomes)  # the seeds the outcomes were found over
        return " and ".join(f"{m.fmt(statistics.median(o))} on {len(o)} of {n} seeds"
                            for o in c.shown)

    worse = _runner_up(mv)
    where = f"{row.scenario}, {row.size:,} {member_word(row.scenario, g.protocols)}"
    # a bookkeeping metric carries the row's excess lag (round 15: in rolling-bounce-down20s
    # the protocols that moved fewest lost on lag)
    lag = cell_lag(g, row, mv.best, worse) if m.column in LAG_PROXIES else ""
    said = (f" Likewise in {where} ({g.name}): " + " and ".join(q(mv.cells[p]) for p in mv.best)
            + f" against {q(mv.cells[worse])}" + (f" ({lag})" if lag else "")
            + _at_default_delay(g, row, mv, worse) + ".")
    host.text += said
    # an added finding goes to the note before the sentence's own clauses
    host.movable = ((said, "", said.strip().rstrip(".")), *host.movable)
    cmd = reproduce(g.spec, row.scenario, row.size, row.workload,
                    [label_at(g, p, row) for p in (*mv.best, worse)])
    mine = host.command.split("\n")[0]

    def cells(command: str) -> str:  # the command without its scenarios
        return re.sub(r" --scenario \S+", "", command)

    if cells(cmd) == cells(mine):
        host.command = host.command.replace(" --size ", f" --scenario {row.scenario} --size ", 1)
    else:
        host.command += "\n" + cmd


_HOLDS = re.compile(r"\bholds?\b")


def follow_up(g: GridVerdict) -> bool:
    """Whether a grid asks whether another grid's marks hold under one more condition (a
    member late, heartbeat phases spread, a crash instead of a leave, 300 members): its
    answer is the limit those marks carry (``mark_busy_limits``, ``mark_spread_limits``,
    ``mark_dependence``) in their own sentences, not a question of the page's own."""
    return bool(_HOLDS.search(g.question))


def quotes(c: Claim, grid: str) -> bool:
    """Whether sentence ``c`` names ``grid`` (a mark's limit quoting that grid's finding), in
    its words or the note under it. A name after "on " is a workload's ("ran scale-out on
    field-costs only": the workload the field-costs grid is named after), not the grid's."""
    pat = re.compile(rf"(?<![\w-])(?<!\bon ){re.escape(grid)}(?![\w-])")
    return any(pat.search(t) for t in (c.text, *c.caveats))


def no_difference(g: GridVerdict) -> Claim | None:
    """A grid's answer where no protocol separates in any row of at least
    :data:`CLAIM_MIN_SEEDS` seeds (no candidate sentence): that no difference passes the test,
    on its question's first metric, with the lowest median of each such row. None for a grid
    without such a row (too few seeds: the page says so apart)."""
    # the first metric a sentence may rest on: not a Connect grid's task-time input, nor a
    # consumer group's stall beside its lag (the sentence rule's exclusions)
    lag = any(x.column in ("lag_record_s", "lag_peak") for x in g.metrics)
    connect = any(family(p) in _CONNECT_FAMILIES for p in g.protocols)
    i = next((k for k, x in enumerate(g.metrics) if not task_time_input(g, x)
              and not (x.column == "stall_ms" and lag and not connect)), None)
    if i is None:
        return None
    m = g.metrics[i]
    rows = [r for r in g.rows if len(r.metrics) > i and r.seeds >= CLAIM_MIN_SEEDS
            and not injected_input(r, m)]
    verdicts = [r.metrics[i].verdict for r in rows]
    if not rows or any(v not in ("tie", "overlap", "unconfirmed") for v in verdicts):
        # a mark the sentence rule leaves out (by design), split seeds, a lag whose control
        # does not cancel: no "no difference"
        return None
    if all(abs(c.median) <= m.floor for r in rows for c in r.metrics[i].cells.values()):
        return None  # nothing to compare: every cost under the floor
    first_only = sum(1 for v in verdicts if v == "unconfirmed")
    sign = 1 if m.lower_is_better else -1
    word = "lowest" if m.lower_is_better else "highest"
    leads = []
    for r in rows:
        cells = {p: c for p, c in r.metrics[i].cells.items() if p in ranked(g.protocols)
                 and c.values}
        if not cells:
            continue
        lead = min(cells, key=lambda p: (sign * cells[p].median, p))
        where = f"{r.scenario}, {r.size:,} {member_word(r.scenario, g.protocols)}"
        if len({x.workload for x in g.rows}) > 1:
            where += f", {r.workload}"
        if r.timing:
            where += f", {r.timing}"
        leads.append(f"{where}: {lead} {_quote(m, cells[lead])}")
    if not leads:
        return None
    shown = leads if len(leads) <= 3 else [*leads[:2], f"and {len(leads) - 2} more rows"]
    scen = list(dict.fromkeys(r.scenario for r in rows))
    unconfirmed = (f"; {first_only} marked on the first seeds only, not on the fresh"
                   if first_only else "")
    low = f" (the {word} median: " + "; ".join(shown) + ")"
    # "no difference" only where no metric of the grid separates: otherwise the sentence
    # names what does, and the metrics whose medians lie far apart without separating
    others = _other_metrics(g, rows, i)
    text = (f"{g.name}, {short_label(m, g.excess)}: {'' if others else 'no difference; '}"
            f"no protocol separates from all the rest in "
            f"{'its one row' if len(rows) == 1 else f'any of its {len(rows)} rows'}"
            f"{unconfirmed}{low}" + "".join(f"; {o}" for o in others) + ".")
    sizes = sorted({r.size for r in rows})
    cmd = reproduce(g.spec, scen[0], sizes, None, g.labels or g.protocols)
    for extra in scen[1:]:  # every scenario of the grid's rows, one command
        cmd = cmd.replace(" --size ", f" --scenario {extra} --size ", 1)
    return Claim(g.name, text, cmd, m.column, scen[0], sizes[-1], "", "", sizes=tuple(sizes),
                 movable=((low, " (lowest medians in the note)",
                           f"the {word} median: " + "; ".join(shown)),
                          *((f"; {o}", "", o) for o in reversed(others[1:]))))


def _by_median(m: Metric, cells: Mapping[str, Cell], protocols: Sequence[str]) -> str:
    """``a and b 0 s, c 0.5 s``: protocols low to high by median, those printing the same
    median named together."""
    sign = 1 if m.lower_is_better else -1
    groups: dict[str, list[str]] = {}
    for p in sorted(protocols, key=lambda p: (sign * cells[p].median, p)):
        groups.setdefault(m.fmt(cells[p].median), []).append(p)
    return ", ".join(f"{' and '.join(ps)} {v}" for v, ps in groups.items())


def _other_metrics(g: GridVerdict, rows: Sequence[VerdictRow], i: int) -> list[str]:
    """What a grid's other metrics show in ``rows`` beside a first metric on which no
    protocol separates: each that separates (a ★ or = with protocols beaten: the best
    against the beaten, medians), then each whose medians lie more than 2x (and the floor)
    apart without separating (every ranked median); a grid's "no difference" may stand only
    where this is empty."""
    sep: list[str] = []
    far: list[str] = []
    for r in rows:
        where = f" ({r.scenario}, {r.size:,})" if len(rows) > 1 else ""
        for j, mv in enumerate(r.metrics):
            m = mv.metric
            pool = [p for p in ranked(g.protocols) if p in mv.cells and mv.cells[p].values]
            if j == i or len(pool) < 2 or task_time_input(g, m):
                continue
            name = short_label(m, g.excess)
            if mv.verdict in ("best", "tied") and mv.beaten:
                won = [p for p in pool if p not in mv.beaten]
                # partitions moved or a stall says what its winners pay the application
                # (outside review round 16, S4: a 0.5 s stall headlined over a 6x lag spread)
                paid = lag_of(g, r, won, mv.beaten) if m.column in LAG_PROXIES else ""
                sep.append(f"{name}{where} separates: {_by_median(m, mv.cells, won)} against "
                           f"{_by_median(m, mv.cells, list(mv.beaten))}"
                           + (f" ({paid})" if paid else ""))
                continue
            meds = sorted(abs(mv.cells[p].median) for p in pool)
            lo, hi = meds[0], meds[-1]
            if hi - lo > m.floor and hi > 2 * max(lo, m.floor):
                # a share page's rule (the eleventh outside share review): no ratio over a
                # median under the floor
                share = any(family(p) == "share" for p in g.protocols)
                ratio = f"{hi / lo:.1f}x" if lo > (m.floor if share else 0) else "far"
                far.append(f"{name}{where} medians {ratio} apart, not separated: "
                           f"{_by_median(m, mv.cells, pool)}")
    return sep + far


#: Scenarios that grow a topic: a classic member finds the new partitions only at its next
#: metadata refresh (metadata.max.age.ms), a KIP-848 member when the broker tells it.
GROWTH_SCENARIOS = ("grow-by", "partition-added")
AGE_KEY = "metadata.max.age.ms"


def _age(row: VerdictRow, g: GridVerdict, p: str) -> float | None:
    v = ((row.settings or g.settings).get(p) or g.settings.get(p) or {}).get(AGE_KEY)
    return float(v) if isinstance(v, int | float) else None


def discovery_cause(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence on a topic's growth that compares against a classic protocol says the
    cause: metadata discovery (the classic member's refresh), and quotes time to converge
    beside lag (or lag beside time to converge), and, where a grid ran the same scenario and
    size at several refresh intervals, the classic protocol at each (outside review round 13:
    most of partition-added's classic lag is the 5-minute metadata.max.age.ms)."""
    classic = next((p for p in (c.worse, c.best) if p.startswith("classic:")), "")
    if not classic or not c.workload or not any(x in c.scenario for x in GROWTH_SCENARIOS) \
            or c.metric not in PHASE_DECIDED:
        return c  # (partitions moved: eager's revocation, not the refresh, is the cause)
    g = next((x for x in verdicts if x.name == c.grid), None)
    row = None if g is None else next(
        (r for r in g.rows if (r.scenario, r.size, r.workload)
         == (c.scenario, c.size, c.workload)), None)
    if g is None or row is None:
        return c
    age = _age(row, g, classic)
    parts = ["Cause: metadata discovery (the classic leader's next refresh finds the new "
             "partitions" + (f", {AGE_KEY} {number(age / 1000)} s" if age else "") + ")"]
    other = "convergence_ms" if c.metric != "convergence_ms" else "lag_record_s"
    mv = next((x for x in row.metrics if x.metric.column == other), None)
    if mv is not None and c.best in mv.cells and c.worse in mv.cells:
        m = mv.metric
        parts.append(f"{short_label(m, g.excess)} {m.fmt(mv.cells[c.best].median)} against "
                     f"{m.fmt(mv.cells[c.worse].median)}")
    for og in verdicts:
        if og.parameter != "metadata_max_age_ms":
            continue
        at: dict[float, tuple[str, str]] = {}
        for r in og.rows:
            if (r.scenario, r.size) != (c.scenario, c.size):
                continue
            x = next((x for x in r.metrics if x.metric.column == c.metric), None)
            a = _age(r, og, classic)
            if x is not None and a is not None and classic in x.cells \
                    and x.cells[classic].values:
                at[a] = (x.metric.fmt(x.cells[classic].median), r.workload)
        if len(at) > 1:
            ages = sorted(at)
            hi = ages[-1]
            parts += [f"{classic} at a {number(a / 1000)} s refresh ({og.name}, {at[a][1]}): "
                      f"{at[a][0]} against {at[hi][0]} at {number(hi / 1000)} s"
                      for a in ages[:-1]]
    # the cause stays in the sentence; over 60 words its quotes go to the note, the refresh
    # sweep's first, time to converge last
    return replace(c, text=c.text + " " + "; ".join(parts) + ".",
                   movable=(*c.movable, *((f"; {x}", "", x) for x in reversed(parts[1:]))))


def _claim_row(c: Claim, verdicts: Sequence[GridVerdict]
               ) -> tuple[VerdictRow, MetricVerdict] | None:
    """A row sentence's row and metric verdict in its grid (None for a crossover)."""
    if c.head or not c.best:
        return None
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None:
        return None
    for r in g.rows:
        if (r.scenario, r.size, r.workload) != (c.scenario, c.size, c.workload) \
                or (c.timing_ms is not None and r.x != c.timing_ms):
            continue
        mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
        if mv is not None and c.best in mv.best:
            return r, mv
    return None


def spread_quotes(c: Claim, grid: str, verdicts: Sequence[GridVerdict]) -> bool:
    """Whether sentence ``c`` says what heartbeat-spread grid ``grid`` found in its cell
    (:func:`spread_condition`): that grid's answer is there, no clause of its own."""
    found = _claim_row(c, verdicts)
    return found is not None and any(o.grid == grid for o in found[1].spread)


def spread_condition(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence whose winner is a classic eager protocol, in a cell a heartbeat-spread grid
    also ran, says in the sentence whether the win survives spread heartbeats
    (:func:`spread_words`; outside review round 14: the rolling-bounce eager win reversed at
    a 3 s spread, and only a condition letter said it rested on aligned heartbeats). Moved to
    the note whole, late, where the sentence runs over :data:`MAX_WORDS`."""
    found = _claim_row(c, verdicts)
    if found is None or not found[1].spread:
        return c
    _, mv = found
    m = mv.metric
    clause = " " + spread_words(mv.spread, m)
    medium, short = spread_short(mv.spread, m)
    moves = [(clause, medium, clause.strip().rstrip("."))]
    if short:
        moves.append((medium, short, ""))
        # last of all, only that the spread takes eager's mark
        moves.append((short, " Not kept with spread heartbeats (note).", ""))
    return replace(c, text=c.text + clause, movable=(*c.movable, *moves))


def stable_drift(stable: Sequence[Mapping[str, Any]] | None = None) -> tuple[float, float] | None:
    """How far apart real classic clients learned of a join after a stable period, from the
    wire's stored rows (``lab.wire_spread.load_stable``): the lowest median and the largest
    gap, seconds; None without rows."""
    rows = [r for r in (load_stable() if stable is None else stable)
            if r.get("rebalances") and r.get("largest_s") is not None
            and r.get("median_s") is not None]
    if not rows:
        return None
    return (min(float(r["median_s"]) for r in rows), max(float(r["largest_s"]) for r in rows))


#: The heartbeat spread whose finding an eager win's opening condition quotes (ms): about
#: what real clients drift after a stable period (:func:`stable_drift`).
OPENING_SPREAD_MS = 1000.0


def _eager_outcomes(c: Claim, verdicts: Sequence[GridVerdict]
                    ) -> list[tuple[float | None, SpreadOutcome]]:
    """The heartbeat-spread findings (:attr:`MetricVerdict.spread`) of a sentence's eager
    marks, at :data:`OPENING_SPREAD_MS`: its row's, or a crossover's at each value where an
    eager protocol is marked."""
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None:
        return []
    out = [(r.x, o) for r, mv in _sentence_cells(c, g)
           if mv.verdict in ("best", "tied") and any(_spread_eager(p) for p in mv.best)
           for o in mv.spread if o.spread_ms == OPENING_SPREAD_MS]
    return sorted(out, key=lambda xo: xo[0] or 0.0)


def _sentence_cells(c: Claim, g: GridVerdict) -> list[tuple[VerdictRow, MetricVerdict]]:
    """A sentence's rows of its grid (its scenario, its sizes, its workload unless a crossover
    names none) with the sentence's metric of each."""
    sizes = c.sizes or (c.size,)
    out = []
    for r in g.rows:
        if r.scenario != c.scenario or r.size not in sizes \
                or (not c.head and r.workload != c.workload):
            continue
        mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
        if mv is not None:
            out.append((r, mv))
    return out


def opened_fit(c: Claim, opening: str) -> Claim:
    """A sentence that opens with its eager condition (:func:`eager_condition`): the clauses
    that say a spread's finding after the claim repeat the opening and go to the note (their
    facts there), and every pointer a clause leaves behind ("note below", "(note)") may go
    last where the sentence still runs over :data:`MAX_WORDS` (its facts are in the note)."""
    text, caveats, moves = c.text, list(c.caveats), []
    for frag, stand_in, note in c.movable:
        if "spread" in frag.lower() and frag in text:
            text = text.replace(frag, "", 1)
            if note or frag.strip():
                caveats.append(note or frag.strip().strip("()").rstrip("."))
            continue
        moves.append((frag, stand_in, note))
    text = re.sub(r"\s*;\s*(?=[;.)\]]|$)", "", text)
    # the stand-ins that only point at the note: gone once the clauses have moved
    stubs = [(st, "", "") for _, st, _ in moves if st.strip() and "note" in st
             and not st.strip().startswith("Worse on")]
    # then, where the sentence still runs long, its later sentences (the claim's first
    # stays), last first; a companion grid's clauses of a crossover; the opening's medians
    later = [(LAST_SENTENCE, "", "")] * len(re.split(r"(?<=\.)\s+(?=[A-Z])", text)[1:])
    brackets = [(LAST_BRACKET, "", "")] * (len(re.findall(r"; \[[^\]]+\] ", text)))
    medians = re.search(r"(?<=: not separated) \([^()]*\)(?=\): )", opening)
    own = [(medians[0], "", "the 1 s spread's medians:" + medians[0].rstrip(")").lstrip(" ("))
           ] if medians else []
    # an untested win's finding elsewhere (:func:`untested_condition`): in full in the note
    # (the last of the opening to go, after the ranges)
    far = re.search(r"not run spread; on [^;]*: (?:reversed|not separated|kept) at [^;]*"
                    r"(?=\): $)", opening)
    return replace(c, text=opening + text, caveats=tuple(caveats),
                   movable=(*moves, *dict.fromkeys(stubs), *later, *brackets, *own,
                            (RANGES, "", ""),
                            *([(far[0], "not run with spread heartbeats", "")] if far else []),
                            *[(ANY_LAST_SENTENCE, "", "")] * len(later)))


def _eager_marks(c: Claim, verdicts: Sequence[GridVerdict]
                 ) -> list[tuple[VerdictRow, MetricVerdict]]:
    """A sentence's rows whose metric marks a classic or Connect eager protocol best (or tied
    best): its row's, or a crossover's at each value where eager is marked; none in a grid
    that spreads the heartbeats itself."""
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None or g.parameter == "heartbeat_spread_ms":
        return []
    # (a mark won against a configured delay is no finding: the sentence says so)
    return [(r, mv) for r, mv in _sentence_cells(c, g)
            if mv.verdict in ("best", "tied") and not mv.limit.startswith("is won")
            and any(_spread_eager(p) for p in mv.best)]


def untested_condition(c: Claim, verdicts: Sequence[GridVerdict],
                       stable: Sequence[Mapping[str, Any]] | None = None) -> Claim:
    """An eager win whose cell no heartbeat-spread grid ran opens with its condition too: it
    holds with every member's heartbeat aligned, as right after a rebalance, real clients
    drift apart once stable (:func:`stable_drift`), and it was not run with spread
    heartbeats; where a spread grid ran the same scenario at another workload or size, the
    opening names that cell's finding at each spread (the eighteenth outside review: S3's
    scale-out win, never run spread, reverses on its own cell at a 1 s spread, and the
    paper's lateness-scale-out-hbspread showed as much). The returned claim's text is the
    opening, then ``\x00``, and its note the finding elsewhere in full; ``c`` itself where
    the sentence names no eager win."""
    marks = _eager_marks(c, verdicts)
    if not marks or not any(g.parameter == "heartbeat_spread_ms" for g in verdicts):
        # (a page that runs no heartbeat spread anywhere: its aligned heartbeats are the
        # model's condition (d), not a test it skipped for this cell)
        return c
    spread_rows = [sr for sg in verdicts if sg.parameter == "heartbeat_spread_ms"
                   for sr in sg.rows if (sr.x or 0) > 0]
    if any((sr.scenario, sr.size, sr.workload) == (r.scenario, r.size, r.workload)
           for sr in spread_rows for r, _ in marks):
        return c  # its own cell ran spread (at another spread): spread_condition says it
    drift = stable_drift(stable)
    real = (f"; real clients drift {drift[0]:.1f}\u2013{drift[1]:.1f} s apart once stable"
            if drift else "")
    # the same scenario run with spread heartbeats elsewhere: each cell's finding per spread
    cells: dict[tuple[int, str], list[str]] = {}
    # each spread's finding in a word, for the opening: the least spread that reverses the
    # win, else the least that leaves it unseparated, else that it was kept
    brief: dict[tuple[int, str], list[tuple[int, float, str]]] = {}
    for sg in verdicts:
        if sg.parameter != "heartbeat_spread_ms":
            continue
        for sr in sorted(sg.rows, key=lambda r: r.x or 0):
            if (sr.x or 0) <= 0 or sr.scenario != c.scenario:
                continue
            for _, mv in marks:
                smv = next((x for x in sr.metrics if x.metric.column == mv.metric.column),
                           None)
                o = None if smv is None else _spread_outcome(sg, sr, mv, smv)
                if o is None or smv is None:
                    continue
                key = (sr.size, sr.workload)
                cells.setdefault(key, [f"{sg.name}, {sr.size} "
                                       f"{member_word(sr.scenario, list(smv.cells))}, "
                                       f"{sr.workload}:"])
                said = f"at {_secs(o.spread_ms)} {o.words(smv.metric)}"
                if said not in cells[key]:
                    cells[key].append(said)
                    brief.setdefault(key, []).append(
                        (0 if o.best and not o.held else 1 if not o.held else 2,
                         o.spread_ms, o.status))
                break
    found = [f"{v[0]} " + "; ".join(v[1:]) for v in cells.values() if len(v) > 1]
    # the nearest such cell in the opening (the claim's size first, then the workload
    # closest to the claim's by name), every one in the note
    near = sorted(cells, key=lambda k: (k[0] != c.size, not k[1].startswith(c.workload or ""),
                                        len(k[1]), k[1]))
    near = [k for k in near if len(cells[k]) > 1]
    elsewhere = ""
    if near:
        k = near[0]
        size = (f"{k[0]} {member_word(c.scenario, [])}, " if k[0] != c.size else "")
        _, at, status = min(brief[k])
        elsewhere = f"; on {size}{k[1]}: {status} at {_secs(at)}"
    untested = "not run spread" if elsewhere else "not run with spread heartbeats"
    opening = (f"Only with all heartbeats aligned (as right after a rebalance{real}; "
               f"{untested}{elsewhere}): ")
    note = ("the same scenario with spread heartbeats at another workload or size: "
            + "; ".join(found)) if found else ""
    return replace(c, text=opening + "\x00", caveats=(*c.caveats, note) if note else c.caveats)


def eager_condition(c: Claim, verdicts: Sequence[GridVerdict],
                    stable: Sequence[Mapping[str, Any]] | None = None) -> Claim:
    """An eager win (a classic or Connect eager protocol marked best) whose cell a
    heartbeat-spread grid also ran opens with its condition: it holds with every member's
    heartbeat aligned, as right after a rebalance, while real clients drift apart after a
    stable period (the wire's own rows, :func:`stable_drift`), and what the 1 s spread found
    (the seventeenth outside review: S7, S9 and S10 stated the limit after the claim). The
    returned claim's text is the opening, then ``\x00``; ``c`` itself where none applies."""
    found = _eager_outcomes(c, verdicts)
    if not found:
        return untested_condition(c, verdicts, stable)
    if all(o.held for _, o in found):
        return c  # (a win the spread keeps: spread_condition says it holds)
    g = next(v for v in verdicts if v.name == c.grid)
    m = BY_COLUMN.get(c.metric) or next(x for x in g.metrics if x.column == c.metric)
    unit = X_NAMES.get(g.parameter or "", ("", ""))[1]
    kept = [number(x or 0.0) for x, o in found if o.held]
    lost = [number(x or 0.0) for x, o in found if not o.held]
    if len(found) == 1:
        at = found[0][1].words(m)
    elif kept and lost:
        at = f"kept at {', '.join(kept)}{unit}, not at {', '.join(lost)}{unit}"
    else:
        at = "kept" if kept else "not kept"
    drift = stable_drift(stable)
    real = (f"; real clients drift {drift[0]:.1f}\u2013{drift[1]:.1f} s apart once stable"
            if drift else "")
    opening = (f"Only with all heartbeats aligned (as right after a rebalance{real}; "
               f"at a {_secs(OPENING_SPREAD_MS)} spread: {at}): ")
    return replace(c, text=opening + "\x00")


def aligned_heartbeats(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence whose winners include a classic eager protocol that loses its mark where
    the classic members' heartbeats are spread (:attr:`MetricVerdict.spread`), or whose cell
    another grid runs with a classic protocol at a shorter heartbeat (an ``@hb`` column) that
    beats every eager winner's median, says in itself that the win needs every classic
    member's heartbeat aligned, at its interval, naming those grids (their numbers are in the
    note): outside review round 16, S10, the field-costs rolling-bounce tie exists only with
    aligned 3 s heartbeats (spread by 1 s, or cooperative at a 1 s heartbeat, eager loses)."""
    found = _claim_row(c, verdicts)
    own = next((g for g in verdicts if g.name == c.grid), None)
    if found is None or own is None:
        return c
    row, mv = found
    eager = [p for p in mv.best if family(p) == "classic" and _spread_eager(p)]
    if not eager:
        return c
    m = mv.metric
    sign = 1 if m.lower_is_better else -1
    lost = sorted((o for o in mv.spread if not o.held), key=lambda o: o.spread_ms)
    why: list[str] = []
    if lost:
        why.append(f"its mark with heartbeats spread by {_secs(lost[0].spread_ms)} "
                   f"({lost[0].grid})")
    top = max(sign * mv.cells[p].median for p in eager)
    for g in verdicts:
        if g is own:
            continue
        for r in g.rows:
            if (r.scenario, r.size, r.workload) != (row.scenario, row.size, row.workload):
                continue
            omv = next((x for x in r.metrics if x.metric.column == m.column), None)
            faster = [] if omv is None else sorted(
                (sign * cell.median, p) for p, cell in omv.cells.items()
                if family(p) == "classic" and not _spread_eager(p)
                and re.search(r"@hb\d", p) and cell.values
                and top - sign * cell.median > threshold(m, top, cell.median))
            if faster:
                why.append(f"to {faster[0][1]} ({g.name})")
    if len(why) == len(lost[:1]):
        # the spread alone: spread_condition's clause says it
        return c
    hb = {(row.settings.get(p) or {}).get("heartbeat.interval.ms") for p in eager}
    one = next(iter(hb)) if len(hb) == 1 else None
    at = f" {_secs(float(one))}" if isinstance(one, int | float) else ""
    clause = (f" The win needs every classic member's{at} heartbeat aligned: eager loses "
              + " and ".join(why) + ".")
    # spread_condition's last stand-in says less than this clause: it goes if still too long
    gone = (" Not kept with spread heartbeats (note).", "", "")
    return replace(c, text=c.text + clause, movable=(*c.movable, gone))


#: An application's costs (excess lag, stall, downtime): a sentence says, whoever wins, each
#: of them on which a winner is worse than the runner-up in the same cell.
COST_METRICS = ("lag_record_s", "stall_ms", "task_downtime_task_s", "resource_downtime_ms")
#: Bookkeeping metrics (what moved, what ran twice), no cost of their own: a sentence on one
#: quotes the same cell's excess lag of its winners and runner-up.
BOOKKEEPING = frozenset({"resources_moved", "records_reprocessed"})
#: Metrics that stand in for the application's cost without being it: a sentence on one says
#: in itself what its winners pay in excess lag (outside review round 16, S3 and S4).
LAG_PROXIES = BOOKKEEPING | {"stall_ms"}


def lag_of(g: GridVerdict, row: VerdictRow, won: Sequence[str], beaten: Sequence[str]) -> str:
    """``excess lag: a 9,908, b 15,340 against c 2,596 record·s``: the row's excess lag of
    each protocol ``won`` and ``beaten`` (medians; a topic's growth: :func:`cell_lag`'s
    distribution over every seed); "" where the row has no lag for them."""
    mv = next((x for x in row.metrics if x.metric.column == "lag_record_s"), None)
    if mv is None or any(p not in mv.cells or not mv.cells[p].values for p in (*won, *beaten)):
        return ""
    if any(x in row.scenario for x in GROWTH_SCENARIOS):
        return cell_lag(g, row, tuple(won), beaten[0]) if len(beaten) == 1 else ""
    m = mv.metric
    return (f"{short_label(m, g.excess)}: "
            + ", ".join(f"{p} {_bare(m, mv.cells[p].median)}" for p in won) + " against "
            + ", ".join(f"{p} {_bare(m, mv.cells[p].median)}" for p in beaten) + f" {m.unit}")


def cell_lag(g: GridVerdict, row: VerdictRow, winners: Sequence[str], worse: str) -> str:
    """``excess lag 10,235 and 12,944 against 5,734 record·s``: the row's lag of each winner
    and of the runner-up, medians (a topic's growth: the classic figures are draws of the
    leader's refresh phase, said with them); "" where the row has no lag for them."""
    mv = next((x for x in row.metrics if x.metric.column == "lag_record_s"), None)
    if mv is None or any(p not in mv.cells or not mv.cells[p].values
                         for p in (*winners, worse)):
        return ""
    m = mv.metric
    named = (*winners, worse)
    if any(x in row.scenario for x in GROWTH_SCENARIOS) \
            and any(family(p) == "classic" for p in named):
        # a classic figure is one draw of the leader's refresh phase a seed: the distribution
        # over every seed of the cell (both seed sets), three digits, never a median of the
        # first few (outside review round 16, S3: 3,845,699 over 5 seeds, 1.07 M over 10)
        every = {p: seeds_of(mv, p) for p in named}
        n = min(len(v) for v in every.values())

        def dist(p: str) -> str:
            v = sorted(every[p])
            return (f"{p} {_bare(m, _sig3(statistics.median(v)))} "
                    f"({_bare(m, _sig3(v[0]))}{DASH}{_bare(m, _sig3(v[-1]))})")

        return (f"{short_label(m, g.excess)}, median (range) over all {n} seeds: "
                + " and ".join(dist(p) for p in winners) + f" against {dist(worse)} {m.unit}"
                + " (classic: one metadata-refresh-phase draw a seed)")
    return (f"{short_label(m, g.excess)} " + " and ".join(_bare(m, mv.cells[p].median)
                                                          for p in winners)
            + f" against {m.fmt(mv.cells[worse].median)}")


def seeds_of(mv: MetricVerdict, p: str) -> list[float]:
    """``p``'s values in a row over every seed it ran: the first seed set and the fresh one
    (:func:`confirm`), each seed once."""
    values = dict(mv.cells[p].values) if p in mv.cells else {}
    if mv.again is not None and p in mv.again.cells:
        values.update(mv.again.cells[p].values)
    return list(values.values())


def _sig3(v: float) -> float:
    """``v`` rounded to three significant digits (a phase draw's figure: more digits claim a
    precision the draw does not have)."""
    if v == 0:
        return 0.0
    return round(v, 2 - math.floor(math.log10(abs(v))))


def constant_cells(cells: Sequence[Cell]) -> bool:
    """Whether every cell has one value on all its seeds."""
    return bool(cells) and all(c.values and c.low == c.high for c in cells)


def count_clause(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A cost's sentence adds its cell's assignor counts (:func:`assignor_count`: task
    restarts, partitions moved) where the same row marks the sentence's winner on them
    against its runner-up: a clause after the cost, "on every seed" where the count is the
    same on each seed of both protocols, medians otherwise (the seventeenth outside review: a
    count headlined a grid that asks what a change costs). The clause may go to the note
    under the sentence when it runs long."""
    if assignor_count(c.metric):
        return c
    found = _claim_row(c, verdicts)
    g = next((v for v in verdicts if v.name == c.grid), None)
    if found is None or g is None or not c.worse:
        return c
    row, _ = found
    said = []
    for mv in row.metrics:
        if not assignor_count(mv.metric.column) or mv.verdict not in ("best", "tied") \
                or c.best not in mv.best or c.worse not in mv.beaten:
            continue
        b, w = mv.cells[c.best], mv.cells[c.worse]
        every = "on every seed" if constant_cells([b, w]) else "(medians)"
        said.append(f"{short_label(mv.metric, g.excess)} {_pair(mv.metric, b.median, w.median)}"
                    f" {every}")
    if not said:
        return c
    text = "; ".join(said)
    clause = f" {text[0].upper()}{text[1:]}."
    text = c.text.rstrip()
    return replace(c, text=f"{text}{clause}",
                   movable=(*c.movable, (clause, "", clause.strip().rstrip("."))))


def weakest_metric(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence names the grid's cost metrics (:data:`COST_METRICS`; a classic eager
    winner: every other metric) on which, in the same cell, a winner is worse than the
    runner-up the sentence quotes (by more than the metric's floor, medians), and a sentence
    on a bookkeeping metric (:data:`BOOKKEEPING`) quotes the cell's excess lag of its winners
    and runner-up: outside review round 14, the rolling-bounce eager lag win whose peak lag
    and stall were worse in the same cell, which a platform team alerts on; round 15, S3:
    partitions moved headlined where the same row's lag put classic:cooperative ~4,700x
    above KIP-848."""
    found = _claim_row(c, verdicts)
    g = next((v for v in verdicts if v.name == c.grid), None)
    if found is None or g is None or not c.worse:
        return c
    row, said = found
    winners = tuple(said.best) if c.best in said.best else (c.best,)
    keeps = c.metric in LAG_PROXIES
    lag = cell_lag(g, row, winners, c.worse) if keeps else ""
    worse = []
    for mv in row.metrics:
        m = mv.metric
        # a metric the calibration does not check (:func:`unmark_unchecked`) weighs nothing
        if m.column == c.metric or c.worse not in mv.cells or not mv.cells[c.worse].values \
                or (keeps and m.column == "lag_record_s") or mv.verdict == NOT_CHECKED:
            continue
        for p in winners:
            if p not in mv.cells or not mv.cells[p].values:
                continue
            if m.column not in COST_METRICS and not (p == c.best and _spread_eager(p)):
                continue
            b, w = mv.cells[p].median, mv.cells[c.worse].median
            sign = 1 if m.lower_is_better else -1
            if sign * (b - w) > max(m.floor, RELATIVE_FLOOR * max(abs(b), abs(w))):
                name = short_label(m, g.excess) + (f" ({p})" if p != c.best else "")
                worse.append((name, _pair(m, b, w)))
    text = c.text
    if lag:
        # stays in the sentence: a bookkeeping metric without its cost misleads
        text += f" In the same cell, {lag}."
    if not worse:
        return replace(c, text=text)
    names = (", ".join(n for n, _ in worse[:-1]) + " and " + worse[-1][0] if len(worse) > 1
             else worse[0][0])
    clause = f" Worse on {names}: " + "; ".join(v for _, v in worse) + "."
    few = names if len(worse) <= 2 else (f"{worse[0][0]}, {worse[1][0]} and "
                                         f"{len(worse) - 2} more")
    first = f" Worse on {worse[0][0]}" + (f" and {len(worse) - 1} more" if len(worse) > 1
                                          else "") + " (note)."
    moves = [(clause, f" Worse on {few} (note).", f"in the same cell, {c.best} against "
              f"{c.worse} on " + "; ".join(f"{n}: {v}" for n, v in worse))]
    if len(worse) > 2:
        moves.append((f" Worse on {few} (note).", first, ""))
    return replace(c, text=text + clause, movable=(*c.movable, *moves))


def adverse_row(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence whose winner loses another row of the same grid, or the same scenario with
    one member late (``-slowNms``, a follow-up grid's row), on the sentence's metric: the
    winner's median more than 2x (and the floor) the row's lowest. The sentence says so, the
    row with the largest ratio and the two medians (outside review round 13: lateness answered
    from its mild row while its heavier row had eager at 89,405 against 19,710; the
    rolling-bounce win while busy-rolling had eager 4.6x worse with a member 2 s late)."""
    if not c.best or not c.workload:
        return c
    worst: tuple[float, str, str, str, str] | None = None
    for g in verdicts:
        for r in g.rows:
            slow = SLOW_VARIANT.match(r.scenario)
            if g.name != c.grid and (slow is None or slow["base"] != c.scenario):
                continue
            if (r.scenario, r.size, r.workload) == (c.scenario, c.size, c.workload):
                continue
            if g.name == c.grid and r.scenario != c.scenario and r.workload == c.workload:
                # the grid's other scenarios on the same work are other questions (a
                # partition's growth against a scale-out), not the answer's adverse rows
                continue
            mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
            if mv is None or c.best not in mv.cells or not mv.cells[c.best].values:
                continue
            m = mv.metric
            pool = [p for p in ranked(g.protocols) if p in mv.cells and mv.cells[p].values]
            sign = 1 if m.lower_is_better else -1
            low = min(pool, key=lambda p: (sign * mv.cells[p].median, p))
            b, lo = abs(mv.cells[c.best].median), abs(mv.cells[low].median)
            if low == c.best or not m.lower_is_better or b - lo <= m.floor \
                    or b <= 2 * max(lo, m.floor):
                continue
            ratio = b / lo if lo > 0 else math.inf
            where = (f"{r.scenario}, {r.size:,} {member_word(r.scenario, g.protocols)}, "
                     f"{r.workload} ({g.name})")
            said = (f"{c.best} {m.fmt(mv.cells[c.best].median)} against {low} "
                    f"{m.fmt(mv.cells[low].median)}"
                    + (f", {ratio:.1f}x" if lo > 0 else ""))
            if worst is None or ratio > worst[0]:
                worst = (ratio, where, said, f"{r.scenario} ({g.name})", g.name)
    if worst is None:
        return c
    own = next((g for g in verdicts if g.name == c.grid), None)
    if own is not None and worst[4] == c.grid and follow_up(own):
        # the grid asks whether a win holds when members are late: its loss answers that
        # question, so the sentence leads with it (round 15, S12: "It loses 12.2x in bounce"
        # came after the scale-out win)
        lead = f"{worst[1]}: {c.best} loses, {worst[2]}. Yet in "
        return replace(c, text=lead + c.text)
    clause = f" It loses in {worst[1]}: {worst[2]}."
    short = (f" It loses {worst[0]:.1f}x in {worst[3]}, note." if math.isfinite(worst[0])
             else f" It loses in {worst[3]}, note.")
    # said in the sentence; moved to the note late, its ratio and row staying in the sentence
    return replace(c, text=c.text + clause,
                   movable=(*c.movable, (clause, short, clause.strip().rstrip("."))))


def late_flip(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A crossover sentence whose winners are classic eager protocols names the case that
    flips it: the least lateness of one member at the rebalance (a ``-slowNms`` row of the
    same scenario and size, any grid) at which eager's median is above the lowest other
    protocol's (by more than the floor), with the two medians; and, where its own rows have
    no pausing work, that its members are caught up, with short polls, when the event comes
    (outside review round 15, S7: busy-crossover, one member 2 s late: eager 465 against
    cooperative 256 record·s)."""
    # a crossover's best is its winners as named ("classic:eager (range, 3 s heartbeat) and
    # ..."): the first protocol's label
    if not c.head or not _spread_eager(c.best.split(" ", 1)[0]):
        return c
    own = next((g for g in verdicts if g.name == c.grid), None)
    found: list[tuple[int, str, str]] = []
    for g in verdicts:
        for r in g.rows:
            slow = SLOW_VARIANT.match(r.scenario)
            if slow is None or slow["base"] != c.scenario or r.size != c.size:
                continue
            mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
            if mv is None:
                continue
            m = mv.metric
            pool = [p for p in ranked(g.protocols) if p in mv.cells and mv.cells[p].values]
            eager = [p for p in pool if _spread_eager(p)]
            rest = [p for p in pool if not _spread_eager(p)]
            if not eager or not rest or not m.lower_is_better:
                continue
            e = min(eager, key=lambda p: (mv.cells[p].median, p))
            o = min(rest, key=lambda p: (mv.cells[p].median, p))
            ev, ov = mv.cells[e].median, mv.cells[o].median
            if ev - ov > max(m.floor, RELATIVE_FLOOR * ev):
                late = number(int(slow["v"]) / 1000)
                found.append((int(slow["v"]), f"one member {late} s late at the rebalance "
                              f"({g.name}, {r.workload}): {e} {_bare(m, ev)} against {o} "
                              f"{m.fmt(ov)}",
                              f"A member {late} s late ({g.name}, {e} {_bare(m, ev)} against "
                              f"{o} {m.fmt(ov)})"))
    if not found:
        return c
    _, said, mid_said = min(found)
    caught = ("" if own is None or any(r.late for r in own.rows) else
              "; its members are caught up, with short polls, when the event comes")
    clause = f" It flips with {said}{caught}."
    mid = f" {mid_said} flips it{'; members caught up, short polls' if caught else ''}."
    return replace(c, text=c.text + clause,
                   movable=(*c.movable, (clause, mid, clause.strip().rstrip("."))))


def closer_elsewhere(c: Claim, verdicts: Sequence[GridVerdict]) -> Claim:
    """A sentence whose cell another grid also runs, with protocols this grid does not
    (``consumer:uniform@hb3s`` in crossover-20ms beside busy-crossover's columns): where one
    of them is closer to the best than the runner-up named, the sentence says so (round 8,
    S6: "255 for classic:cooperative (the runner-up)" while the same cell had @hb3s at 66.4)."""
    if not c.worse or not c.workload:
        return c
    own = next((g for g in verdicts if g.name == c.grid), None)
    if own is None:
        return c
    row = next((r for r in own.rows if (r.scenario, r.size, r.workload)
                == (c.scenario, c.size, c.workload)), None)
    mv = None if row is None else next((x for x in row.metrics if x.metric.column == c.metric),
                                       None)
    if mv is None or c.worse not in mv.cells:
        return c
    sign = 1 if mv.metric.lower_is_better else -1
    named = sign * mv.cells[c.worse].median
    closer: list[tuple[float, str, str]] = []
    for g in verdicts:
        if g is own or g.labels:
            continue
        for r in g.rows:
            if (r.scenario, r.size, r.workload) != (c.scenario, c.size, c.workload):
                continue
            omv = next((x for x in r.metrics if x.metric.column == c.metric), None)
            if omv is None:
                continue
            for p, cell in omv.cells.items():
                if p in mv.cells or p in omv.best or p not in ranked(g.protocols):
                    continue
                if sign * cell.median < named:
                    closer.append((sign * cell.median, p, g.name))
    if not closer:
        return c
    v, p, gname = min(closer)
    m = mv.metric
    # a caveat: the note under the sentence says it
    return replace(c, caveats=(*c.caveats, f"closer to the best in the same cell: {p} at "
                               f"{m.fmt(sign * v)} (a column of {gname}, not of this grid)"))


# --------------------------------------------------------------------------- labels


#: Short column titles for the tables (the catalog's labels are sentences).
SHORT: dict[str, str] = {
    "stall_ms": "stall",
    "lag_peak": "lag peak",
    "lag_record_s": "lag",
    "convergence_ms": "time to converge",
    "resources_moved": "partitions moved",
    "records_reprocessed": "records processed twice",
    "task_restarts": "task restarts",
    "task_downtime_task_s": "task downtime",
    "time_to_balance_ms": "time until balanced",
    BALANCE_AFTER_LAST: "time until balanced after the last event",
    "paused_partition_s": "paused partition time",
    "resource_downtime_ms": "resource downtime",
    "records_processed": "records processed",
}


#: Metrics that are the excess over a paired control when the runs carry controls.
EXCESS = frozenset({"lag_peak", "lag_record_s"})


def short_label(m: Metric, excess: bool = False) -> str:
    """The metric's name in a table or a sentence (``excess``: the runs measured it against
    a paired control, and the name says so)."""
    name = SHORT.get(m.column, m.label)
    return f"excess {name}" if excess and m.column in EXCESS else name


__all__ = [
    "CLAIM_MIN_SEEDS",
    "CLAIM_RULE",
    "CONSUMER_METRICS",
    "DASH",
    "KIP415_METRICS",
    "MAX_CLAIMS",
    "MAX_WORDS",
    "MIN_SEEDS",
    "MODE_GAP",
    "RELATIVE_FLOOR",
    "SCENARIO_INPUTS",
    "SWEPT_VALUE",
    "Cell",
    "Claim",
    "Comparisons",
    "GridVerdict",
    "MetricVerdict",
    "SpreadOutcome",
    "VerdictRow",
    "beats",
    "by_swept_timing",
    "claim_candidates",
    "claimable",
    "claims",
    "comparisons",
    "distinct_marks",
    "fit",
    "grid_verdict",
    "grid_verdicts",
    "is_companion",
    "judge",
    "label_at",
    "labelled_words",
    "late_answer",
    "mark_dependence",
    "mark_size_dependence",
    "mark_timing_dependence",
    "mark_words",
    "modes",
    "names_grid",
    "natural_key",
    "question_metrics",
    "ranked",
    "separation_chance",
    "short_label",
    "sign_needed",
    "sign_test",
    "swept_timing",
    "threshold",
    "throughput",
    "timing_words",
    "usable",
]
