"""Why a verdict table came out as it did: the load per member of each row, and one line per
grid and scenario on the mechanism, computed from the runs' own columns and workload (docs/lab.md
"The report").

- :func:`member_load`: what one member of a consumer row carries: records per second (the
  production rate per partition times the partitions over the members), the share of its time
  spent processing, and the records a poll returns (the rate times the fetch latency: what is in
  flight when it polls). Where a grid's sizes change and its partitions stay fixed, this is what
  changes with the size.
- :func:`mechanisms`: per scenario of a consumer grid, the downtime per moved partition
  (resource downtime over partitions moved, the median over the runs) beside each protocol's
  heartbeat interval from the runs' settings: an eager group rejoins at once, so its gap per
  partition is short, while a cooperative member learns its second round, and a KIP-848 member
  its target, at its next heartbeat. Plus, once per grid, how long a poll takes: where it is
  short, no member is caught inside a long poll when the rebalance starts, which is where eager
  loses in the field (KIP-429's motivation: the whole group waits for the slowest member's
  batch); where it is long, how late the latest member was at each scenario's rebalances
  (the runs' lateness column, per protocol).
- :func:`conditions`: first in a consumer grid's list, the conditions its marks hold under,
  from its runs' settings (heartbeat, session, ``max.poll.interval.ms``) and how the members'
  heartbeats line up (as the Java client and librdkafka line them up: at the join).
- :func:`metadata_mechanism`: for a scenario whose events change the topics' metadata (a topic
  grows), why classic converges late: its members see the change at their next metadata
  refresh (``metadata.max.age.ms``), where KIP-848's coordinator sends the new target with the
  next heartbeat.

Plain Python over row dicts.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from groupcoord.lab.findings import (
    BALANCE_AFTER_LAST,
    BY_COLUMN,
    HEARTBEAT_SETTING,
    X_NAMES,
    Metric,
    family,
    number,
    run_settings,
    work_value,
)
from groupcoord.lab.lateness import rebalance_lateness
from groupcoord.lab.verdict import (
    DASH,
    GROWTH_SCENARIOS,
    SLOW_VARIANT,
    Claim,
    GridVerdict,
    MetricVerdict,
    VerdictRow,
    label_at,
    member_word,
    short_label,
    threshold,
)
from groupcoord.sim.application import RECOVERY_WAIT_MS
from groupcoord.sim.engine import INITIAL_JOIN
from groupcoord.sim.workload import Workload

#: (a processing time drawn from a distribution is named by it, "exponential:10 ms/rec": its mean)
_WORK_MODEL = re.compile(
    r"([\d.]+) rec/s, (?:[a-z]+:)?([\d.]+)(?:-([\d.]+)|:[\d.]+)? ms/rec"
    r"(?:, max.poll.records (\d+))?")
#: Natural lateness in a work model (``sim.workload``: "pauses lognormal:200:1 ms every
#: 10000 ms"): the pause's mean (or a uniform's ends) and how often, on average.
_PAUSES = re.compile(r"pauses (?:[a-z]+:)?([\d.]+)(?:-([\d.]+)|:[\d.]+)? ms every ([\d.]+) ms")
#: The lab's fetch latency (a run's column does not carry it: ``sim.workload.Workload``'s).
DEFAULT_FETCH_MS = float(Workload().fetch_latency_ms)
#: Heartbeat settings per family, as the runs' ``settings_json`` names them.
HEARTBEAT_KEYS: dict[str, tuple[str, ...]] = {
    "classic": ("heartbeat.interval.ms",),
    "consumer": ("group.consumer.heartbeat.interval.ms", "heartbeat.interval.ms"),
    "share": ("group.share.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms"),
}
#: Session timeout settings per family (a crashed member's partitions wait for it).
SESSION_KEYS: dict[str, tuple[str, ...]] = {
    "classic": ("session.timeout.ms",),
    "consumer": ("group.consumer.session.timeout.ms", "session.timeout.ms"),
    "share": ("group.share.session.timeout.ms", "group.consumer.session.timeout.ms"),
}


#: The assignor behind each consumer protocol the lab runs: classic eager members use the
#: Java client's default ``range`` (eager: revoke everything, then range; ``eager-roundrobin``:
#: the same with ``roundrobin``, balanced across topics), classic cooperative ones
#: ``cooperative-sticky`` (balanced), KIP-848 groups the server-side ``uniform`` (balanced) or
#: ``range``.
ASSIGNORS: dict[str, str] = {"classic:eager": "range", "classic:eager-roundrobin": "roundrobin",
                             "classic:cooperative": "cooperative-sticky",
                             "consumer:uniform": "uniform", "consumer:range": "range"}
#: A busiest member above this share of its time, with one member fewer, is near saturation:
#: a backlog drains slowly or not at all, so its lag is the load's as much as the rebalance's.
BUSY_LIMIT = 0.7


def is_eager(protocol: str) -> bool:
    """An eager protocol (every member revokes everything at each rebalance): classic or
    Connect ``eager``, and classic ``eager-roundrobin`` (eager with another assignor)."""
    return protocol.partition(":")[2].split("-")[0] == "eager"


def busiest_partitions(topics: int, partitions: int, members: int, assignor: str) -> int:
    """The most partitions one member holds when ``members`` share ``topics`` topics of
    ``partitions`` each: ``range`` assigns each topic on its own, its first members one
    partition more, and the first member is first in every topic (``topics`` x
    ceil(partitions / members)); the balanced assignors (sticky, uniform, round-robin) spread
    all partitions together (ceil(total / members))."""
    if members <= 0:
        return topics * partitions
    if assignor == "range":
        return topics * -(-partitions // members)
    return -(-(topics * partitions) // members)


@dataclass(slots=True, frozen=True)
class Load:
    """One member's load in a consumer row."""

    records_per_s: float
    busy: float
    per_poll: float
    batch_ms: float
    #: A full poll's processing time (max.poll.records records: a poll after a backlog).
    full_batch_ms: float = 0.0
    #: The busiest member's busy share with one member fewer than the row's size (a crash,
    #: a bounce, a member of a rolling bounce away), under range and under a balanced
    #: assignor (:func:`busiest_partitions`).
    busiest_range: float = 0.0
    busiest_balanced: float = 0.0
    #: The row's runs, and those whose lag had not caught up when they ended.
    runs: int = 0
    not_recovered: int = 0
    #: The group's members and partitions (0: unknown), and the rate per partition.
    members: int = 0
    partitions: int = 0
    per_partition: float = 0.0

    @property
    def overloaded(self) -> bool:
        """Near saturation after a disturbance under some assignor, or a run never caught up."""
        return max(self.busiest_range, self.busiest_balanced) > BUSY_LIMIT or \
            self.not_recovered > 0

    #: The share of a member's time its natural lateness pauses it (``sim.workload``'s
    #: pauses: mean pause over mean gap), part of ``busy``.
    paused: float = 0.0
    #: A grown topic's production before and after (:func:`growth_text`), or "".
    growth: str = ""

    def working(self, protocol: str) -> tuple[float, int]:
        """A working member's busy share and how many members work, under ``protocol``: a
        share group's members all fetch the partitions they share (KIP-932: every member
        works, :attr:`busy`), a consumer group's members beyond the partitions idle, so its
        working members take a partition's whole rate each."""
        if family(protocol) == "share" or not self.members > self.partitions > 0:
            return self.busy, self.members
        return self.per_partition * self.busy / max(self.records_per_s, 1e-9), self.partitions

    def text(self, share: bool = False, consumer: bool = False) -> str:
        """The load in words; ``share``: a row of share groups (KIP-932) beside consumer
        groups, which with more members than partitions load their members differently (a
        share group's members all fetch every partition they share, a consumer group's
        members beyond the partitions idle), so each is said; ``consumer``: a row of
        consumer groups only, whose members beyond the partitions idle (its working members'
        load is said, not the rate spread over every member)."""
        out = f"{number(self.records_per_s)} rec/s, {self.busy:.1%} busy per member"
        if consumer and not share and self.members > self.partitions > 0:
            one, n = self.working("consumer")
            out = (f"{n} of {self.members} members work, {number(self.per_partition)} rec/s, "
                   f"{one:.1%} busy each ({self.members - n} idle)")
        if self.paused:
            out += (f" (processing {self.busy - self.paused:.1%} + paused "
                    f"{self.paused:.1%})")
        if share and self.members > self.partitions > 0:
            one = self.per_partition * self.busy / max(self.records_per_s, 1e-9)
            out = (f"share group: {number(self.records_per_s)} rec/s, {self.busy:.1%} busy per "
                   f"member ({number(self.members / self.partitions)} members fetch each "
                   f"partition); consumer group: {self.partitions} of {self.members} members "
                   f"work, {number(self.per_partition)} rec/s, {one:.1%} busy each "
                   f"({self.members - self.partitions} idle)")
        if self.growth:
            out += f"; {self.growth}"
        if self.busiest_range or self.busiest_balanced:
            out += (f"; busiest member, one member fewer: {self.busiest_range:.1%} under "
                    f"range, {self.busiest_balanced:.1%} balanced")
        if self.not_recovered:
            out += (f"; NOT CAUGHT UP in {self.not_recovered} of {self.runs} runs: lag still "
                    f"there {RECOVERY_WAIT_MS // 1000} s after the group converged, when the "
                    "run ended (its lag is the load's as much as the rebalance's)")
        elif self.overloaded:
            out += f"; NEAR SATURATION: busiest member over {BUSY_LIMIT:.0%}"
        return out


@dataclass(slots=True, frozen=True)
class TaskTimes:
    """A Connect row's task stop and start times: the model's inputs, which an eager
    rebalance's stall and a restart's downtime are made of."""

    stop_ms: float
    start_ms: float
    overloaded: bool = False

    def short(self) -> str:
        """The times alone, as a verdict table's load column says them (the rule that makes
        them a stall and a revocation is :data:`TASK_POOL`, said once above the table)."""
        return (f"a task stops in {number(self.stop_ms / 1000.0)} s and starts in "
                f"{number(self.start_ms / 1000.0)} s (model inputs)")

    def text(self) -> str:
        return (f"a task stops in {number(self.stop_ms / 1000.0)} s and starts in "
                f"{number(self.start_ms / 1000.0)} s (model inputs; a worker stops its "
                f"connectors and tasks 8 at a time, Kafka's start/stop pool, and a task runs "
                f"until its own stop begins: an eager stall is one stop and one start, "
                f"{number(self.stop_ms / 1000.0)} s plus {number(self.start_ms / 1000.0)} s, "
                f"and a worker's revocation takes {number(self.stop_ms / 1000.0)} s per 8 of "
                f"them it holds)")


#: How a Connect row's task stop and start times make its costs (:meth:`TaskTimes.text`
#: without the times): said once above a Connect grid's table, whose rows give the times.
TASK_POOL = ("Task stop and start times are model inputs; in every Connect row a worker stops "
             "its connectors and tasks 8 at a time, Kafka's start/stop pool, and a task runs "
             "until its own stop begins: an eager stall is one stop and one start, and a "
             "worker's revocation takes one stop time per 8 of them it holds.")


def task_times(run: Mapping[str, Any]) -> TaskTimes | None:
    """A Connect run's task stop and start times (its workload's, else the model's defaults);
    None for a consumer protocol."""
    if not family(str(run.get("protocol"))).endswith("connect"):
        return None
    stop, start = work_value(run, "task_stop_ms"), work_value(run, "task_start_ms")
    model = Workload()
    return TaskTimes(float(model.task_stop_ms) if stop is None else stop,
                     float(model.task_start_ms) if start is None else start)


def member_load(run: Mapping[str, Any], fetch_ms: float = DEFAULT_FETCH_MS) -> Load | None:
    """A consumer run's load per member (None for Connect, idle or unknown workloads)."""
    if family(str(run.get("protocol"))).endswith("connect"):
        return None
    found = _WORK_MODEL.search(str(run.get("work_model") or ""))
    parts = run.get("total_partitions") or run.get("partitions")
    members = run.get("members") or run.get("size")
    if not found or not parts or not members:
        return None
    per_partition = float(found.group(1))
    rate = per_partition * float(parts) / float(members)
    proc = _mean(found.group(2), found.group(3))
    per_poll = rate * fetch_ms / 1000.0
    full = float(found.group(4)) * proc if found.group(4) else 0.0
    pauses = _PAUSES.search(str(run.get("work_model") or ""))
    paused = (_mean(pauses.group(1), pauses.group(2)) / float(pauses.group(3))
              if pauses and float(pauses.group(3)) > 0 else 0.0)
    topics = int(run.get("total_topics") or run.get("topics") or 1)
    each = max(1, int(parts) // topics)

    def busiest(assignor: str) -> float:
        n = busiest_partitions(topics, each, max(1, int(members) - 1), assignor)
        return n * per_partition * proc / 1000.0 + paused

    return Load(rate, rate * proc / 1000.0 + paused, per_poll, per_poll * proc, full,
                busiest("range"), busiest("balanced"), members=int(members),
                partitions=int(parts), per_partition=per_partition, paused=paused,
                growth=growth_text(run))


def run_growth(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The topics a run grew, with their production before and after (the simulator's
    summary, ``sim.application.Application.growth``: the run's ``growth``, which
    :func:`attach_growth` reads, else its ``summary_json``); empty for a run without growth."""
    grown = run.get("growth")
    if grown is None:
        try:
            s = json.loads(str(run.get("summary_json") or "{}"))
        except ValueError:
            return []
        grown = s.get("growth") if isinstance(s, dict) else None
    return [g for g in grown if isinstance(g, dict)] if isinstance(grown, list) else []


def growth_runs(runs: Sequence[Mapping[str, Any]]) -> set[str]:
    """The run ids of the runs on a topic's growth (their summaries say its production)."""
    return {str(r["run_id"]) for r in runs
            if any(x in str(r.get("scenario")) for x in GROWTH_SCENARIOS)}


def attach_growth(runs: Sequence[dict[str, Any]],
                  summaries: Mapping[str, Mapping[str, Any]]) -> None:
    """Each run's grown topics from its simulator summary (the report reads the runs without
    their bulky ``summary_json``): ``growth``, what :func:`run_growth` reads."""
    for r in runs:
        s = summaries.get(str(r.get("run_id")))
        if s is not None and isinstance(s.get("growth"), list):
            r["growth"] = s["growth"]


def growth_text(run: Mapping[str, Any]) -> str:
    """A grown topic's production before and after, in words: records/s a partition and the
    topic's, and which producer (``sim.workload``, "A topic's growth": a producer at a fixed
    rate, whose default partitioner spreads its records over the partitions it knows, or
    ``growth_rate = "partition"``, producers that scale with the partitions)."""
    out = []
    for g in run_growth(run):
        (n0, n1), (p0, p1), (t0, t1) = (g["partitions"], g["records_per_s_partition"],
                                        g["records_per_s_topic"])
        head = f"{g['topic']} grows from {number(n0)} to {number(n1)} partitions: "
        if g.get("growth_rate") == "partition":
            out.append(head + f"{number(p0)} rec/s a partition before and after, the topic "
                       f"{number(t0)} rec/s before, {number(t1)} after (growth_rate "
                       "partition: producers that scale with the partitions)")
        else:
            out.append(head + f"{number(p0)} rec/s a partition before, {number(p1)} after, the "
                       f"topic {number(t0)} rec/s before and after (a producer at a fixed "
                       "rate, spread over every partition once they exist)")
    return "; ".join(out) + (f"; {INSTANT_PRODUCER}; {EARLIEST_READ}" if out else "")


#: Where a new partition is read from (the model's ``auto.offset.reset``, not Kafka's default):
#: said on the growth rows, as the settings list flags it.
EARLIEST_READ = ("a new partition is read from its first record (auto.offset.reset earliest; "
                 "with Kafka's default latest, the records written to it before its first "
                 "fetch would be skipped, not counted as lag)")
#: The model's producer finds a topic's new partitions at once (round 15: said on the growth
#: rows and their charts, not only under "What the model leaves out").
INSTANT_PRODUCER = ("the producer writes to new partitions at once (its own metadata "
                    "refresh is left out): the lag on them is an upper bound")


def _mean(first: str, high: str | None) -> float:
    """A work model's distribution's mean: its first number, or a uniform's midpoint."""
    return (float(first) + float(high)) / 2 if high else float(first)


def row_loads(runs: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], Load | TaskTimes]:
    """Per verdict row (scenario, size, workload, fault rate) the load per member of its
    first run that has one, with how many of its runs ended with their lag not caught up;
    for a Connect row, its task stop and start times."""
    out: dict[tuple[Any, ...], Load | TaskTimes] = {}
    counts: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for r in runs:
        key = (str(r.get("scenario")), int(r.get("size") or r.get("members") or 0),
               str(r.get("workload")), r.get("fault_rate"))
        if r.get("ok"):
            counts[key][0] += 1
            counts[key][1] += r.get("recovered") is False
        if key not in out:
            ld: Load | TaskTimes | None = member_load(r) or task_times(r)
            if ld is not None:
                out[key] = ld
    return {k: replace(ld, runs=counts[k][0], not_recovered=counts[k][1])
            if isinstance(ld, Load) else ld for k, ld in out.items()}


def busy_clause(ld: Load, protocols: Sequence[str]) -> str:
    """How busy a sentence's members are, per protocol where they differ (a share group's
    members all work; a consumer group with more members than partitions has as many working
    members as partitions, each at a partition's whole rate, :meth:`Load.working`), with the
    processing time of a poll when caught up (its records in one fetch interval)."""
    said = []
    for p in dict.fromkeys(protocols):
        share, n = ld.working(p)
        poll = _ms(ld.batch_ms * share / ld.busy) if ld.busy > 0 else _ms(ld.batch_ms)
        who = (f"{n} working members of {ld.members} ({ld.members - n} idle)"
               if n < ld.members else "members")
        said.append((p, who, f"{share:.0%}", poll))
    if len({(w, b, q) for _, w, b, q in said}) <= 1:
        _, who, busy, poll = said[0] if said else ("", "members", f"{ld.busy:.0%}",
                                                   _ms(ld.batch_ms))
        return f"{who} {busy} busy, polls of about {poll} when caught up"
    return "; ".join(f"{p}'s {who} {busy} busy, polls of about {poll}" for p, who, busy, poll
                     in said) + " when caught up"


def _heartbeat(settings: Mapping[str, Any], protocol: str,
               keys: Mapping[str, tuple[str, ...]] = HEARTBEAT_KEYS) -> float | None:
    for k in keys.get(family(protocol), ()):
        v = settings.get(k)
        if isinstance(v, int | float):
            return float(v)
    return None


def _ms(v: float) -> str:
    return f"{number(v / 1000.0)} s" if v >= 1000 else f"{number(v)} ms"


#: A margin between the closest seeds below this many times the metric's floor is narrow:
#: one seed more or less could undo the mark.
NARROW_MARGIN = 2.0
#: Medians closer than this share of the larger are a small difference, whatever the seeds.
SMALL_DIFFERENCE = 0.15


def condition_clauses(claim: Claim, verdicts: Sequence[GridVerdict],
                      runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """What a sentence's mark rests on, clause by clause: a narrow margin between the
    closest seeds (a mark one seed could undo), a small difference between the medians, and
    the conditions of its row: a consumer row's load and poll length and that its members
    learn of a rebalance together (heartbeat timers restart at the join), a crash's session
    timeout (it sets most of every protocol's lag), a Connect row's task stop and start times
    (model inputs). Empty for a crossover sentence (it spans several rows)."""
    g = next((v for v in verdicts if v.name == claim.grid), None)
    if g is None or not claim.worse:
        return []
    row = next((r for r in g.rows if r.scenario == claim.scenario and r.size == claim.size
                and (not claim.workload or r.workload == claim.workload)
                and (claim.timing_ms is None or r.x == claim.timing_ms)), None)
    if row is None:
        return []
    mv = next((x for x in row.metrics if x.metric.column == claim.metric), None)
    parts = []
    if mv is not None and claim.best in mv.cells and claim.worse in mv.cells:
        m, b, w = mv.metric, mv.cells[claim.best], mv.cells[claim.worse]
        near_w, near_b = (w.low, b.high) if m.lower_is_better else (w.high, b.low)
        gap = (near_w - near_b) if m.lower_is_better else (near_b - near_w)
        floor = threshold(m, near_w, near_b)  # as the test applies it: at the closest seeds
        if 0 < gap < NARROW_MARGIN * floor:
            parts.append(f"narrow: the closest seeds are {number(gap / m.scale)}"
                         f"{' ' + m.unit if m.unit else ''} apart (a difference counts beyond "
                         f"{number(floor / m.scale)}), so one seed could undo the mark")
        top = max(abs(b.median), abs(w.median))
        if top > 0 and abs(w.median - b.median) / top < SMALL_DIFFERENCE:
            parts.append(f"a {abs(w.median - b.median) / top:.0%} difference of the medians")
    key = (row.scenario, row.size, row.workload, row.fault_rate)
    mine = [r for r in runs if (str(r.get("scenario")), int(r.get("size") or 0),
                                str(r.get("workload")), r.get("fault_rate")) == key]
    ld = row_loads(mine).get(key)
    if isinstance(ld, TaskTimes):
        parts.append(f"{ld.text()}")
    elif isinstance(ld, Load):
        named = [p for p in (claim.best, claim.worse) if p]
        # the load and the heartbeat phase each a clause: sentences of different loads
        # share the phase's (the page letters each clause once)
        parts.append(busy_clause(ld, named))
        phase = phase_clause(named, spreads_of(
            [r for r in mine if r.get("protocol") in {label_at(g, p, row) for p in named}]))
        if phase:
            parts.append(phase)
        late = SLOW_VARIANT.match(row.scenario)
        if late:
            parts.append(f"one member {_ms(float(late.group('v')))} late at every rebalance "
                         "(its revocations take that much more: the model's slow event)")
        if ld.overloaded:
            parts.append("near saturation or not caught up when the run ended (see the row): "
                         "the lag is the load's as much as the rebalance's")
    shared = share_capacity(claim.size, [claim.best, claim.worse], mine, runs)
    if not shared and claim.best and family(claim.best) == "share" and mine:
        shared = _even_mechanism(claim.size, [claim.best, claim.worse], mine)
    if shared:
        parts.append(shared)
    if "crash" in row.scenario and not isinstance(ld, TaskTimes):
        owned = crash_owners([claim.best, claim.worse], mine)
        if owned:
            parts.append(owned)
        sessions = {x for p in (claim.best, claim.worse)
                    if (x := _heartbeat(row.settings.get(p) or g.settings.get(p, {}), p,
                                        SESSION_KEYS)) is not None}
        stuck = not_caught_up(row.size, [claim.worse, claim.best], mine)
        if sessions and not stuck:
            parts.append("a crashed member's partitions wait for its session timeout ("
                         + ", ".join(_ms(x) for x in sorted(sessions))
                         + "), which sets most of every protocol's lag")
        elif stuck:
            parts.append(("a crashed member's partitions wait for its session timeout ("
                          + ", ".join(_ms(x) for x in sorted(sessions))
                          + "), which is not all of the lag here: " if sessions else "")
                         + "; ".join(stuck))
    return parts


def crash_owners(protocols: Sequence[str], runs: Sequence[Mapping[str, Any]]) -> str:
    """On how many seeds of a crash row the crashed member owned a partition, per protocol,
    from the runs (a crash window that moved a partition): where it is not every seed a
    crash sentence compares an idle member's crash on the others; "" where it is every seed."""
    out = []
    for p in dict.fromkeys(x for x in protocols if x):
        mine = [r for r in runs if r.get("protocol") == p and r.get("ok")
                and r.get("resources_moved") is not None]
        owned = sum(1 for r in mine if float(r["resources_moved"]) > 0)
        if mine and owned < len(mine):
            out.append(f"{p}'s crashed member owned a partition on {owned} of {len(mine)} "
                       "seeds (an idle member on the others)")
    return "; ".join(out)


def _per_moved(runs: Sequence[Mapping[str, Any]],
               protocol: str) -> tuple[float, float, int] | None:
    """Median resource downtime (ms) and median downtime per moved partition (ms) of a
    protocol's runs, from their ``resource_downtime_ms`` and ``resources_moved``."""
    mine = [r for r in runs if r.get("protocol") == protocol and r.get("ok")
            and r.get("resource_downtime_ms") is not None]
    per = [float(r["resource_downtime_ms"]) / float(r["resources_moved"])
           for r in mine if float(r.get("resources_moved") or 0) > 0]
    if not mine or not per:
        return None
    return (statistics.median(float(r["resource_downtime_ms"]) for r in mine),
            statistics.median(per), len(mine))


def one_per_partition(scenario: str, protocols: Sequence[str],
                      runs: Sequence[Mapping[str, Any]]) -> str:
    """A share group (KIP-932) against a consumer group (KIP-848) at one member per partition,
    from the runs of ``scenario`` whose members equal their partitions. Only a scenario with a
    rejoin (a bounce: the member comes back and its partition is handed back) has a revocation
    gap: a share group's assignment change has no revocation step, a consumer group's member
    first revokes (KIP-848 "Reconciliation") and the partition's next owner gets it only
    after. So the clause says "lower by the rejoin's revocation gap" only where the scenario
    rejoins and the share group's median is lower by more than a tenth; otherwise (a crash or
    a kill: no rejoin, or medians within a tenth) it states the result as it is ("the two
    tie", or which is lower, without a mechanism); "" where the runs hold no such pair."""
    share = next((p for p in protocols if p and family(p) == "share"), None)
    other = next((p for p in protocols if p and family(p) != "share"), None)
    if share is None or other is None:
        return ""
    even = [r for r in runs if str(r.get("scenario")) == scenario
            and int(r.get("size") or 0) > 0
            and int(r.get("size") or 0) == int(r.get("total_partitions") or -1)]
    sizes = sorted({int(r["size"]) for r in even})
    rejoins = "bounce" in scenario
    for size in reversed(sizes):
        at = [r for r in even if int(r["size"]) == size]
        a, b = _per_moved(at, share), _per_moved(at, other)
        if a is None or b is None:
            continue
        counts = (f"{_ms(a[0])} against {_ms(b[0])} of resource downtime, {_ms(a[1])} against "
                  f"{_ms(b[1])} per moved partition (medians of {a[2]} and {b[2]} runs, every "
                  "seed set)")
        where = f"at one member per partition ({size} on {size}, {scenario})"
        if rejoins and a[0] * 1.1 < b[0]:
            return (f"{where} the share group's downtime is lower by the rejoin's revocation "
                    f"gap: {counts}: a share group has no revocation step, a consumer group's "
                    "partition waits for its member to revoke it before the next owner gets it")
        if abs(a[0] - b[0]) <= 0.1 * max(a[0], b[0]):
            return (f"{where} the two tie: {counts}"
                    + ("" if rejoins else f" ({scenario} has no rejoin, so no revocation gap: "
                       "both wait for the session timeout)"))
        lower = "share group's" if a[0] < b[0] else "consumer group's"
        return f"{where} the {lower} downtime is lower: {counts}"
    return ""


def _even_mechanism(size: int, protocols: Sequence[str],
                    mine: Sequence[Mapping[str, Any]]) -> str:
    """The mechanism of a share group's win at one member per partition (the row's own runs):
    the revocation gap, and the ordering it gives up."""
    r0 = mine[0]
    if size != int(r0.get("total_partitions") or -1) or any(
            family(p) == "share" for p in protocols[1:] if p):
        return ""
    even = one_per_partition(str(r0.get("scenario") or ""), protocols, mine)
    return f"{even}; {ORDERING}" if even else ""


#: The price of a share group's interleaving, said wherever a share group wins a sentence.
ORDERING = ("a share group gives up per-partition ordering for it (KIP-932: a partition's "
            "records go to several members at once, and a poison record's retries "
            "interleave with later records)")


def share_capacity(size: int, protocols: Sequence[str],
                   runs: Sequence[Mapping[str, Any]],
                   everything: Sequence[Mapping[str, Any]] = ()) -> str:
    """A share group (KIP-932) against a consumer group with more members than partitions:
    the share group's members of a partition all fetch it (size / partitions of them), the
    consumer group's one member does and the rest idle, so a share member's absence leaves
    its partition fetched by the others: the difference is that redundancy (the second
    outside review's control at 60 % busy share members still showed it), and the load per
    member (from the runs' workload, :meth:`Load.working`): the consumer group's working
    members carry size / partitions times a share member's (the ninth outside review's
    control, a consumer group at a share member's load, kept a quarter of its excess lag in
    a rolling bounce); at one member per partition (from ``everything``, the page's runs) what
    remains is the revocation gap (:func:`one_per_partition`); "" otherwise (from the runs'
    members and partitions)."""
    named = [p for p in protocols if p]
    if not any(family(p) == "share" for p in named) or all(family(p) == "share" for p in named):
        return ""
    r0 = next((r for r in runs if r.get("total_partitions") or r.get("partitions")), None)
    parts = int((r0 or {}).get("total_partitions") or (r0 or {}).get("partitions") or 0)
    if not parts or size <= parts:
        return ""
    scenario = str((r0 or {}).get("scenario") or "")
    even = one_per_partition(scenario, named, everything) if scenario else ""
    ld = member_load(r0) if r0 is not None else None
    lighter = ""
    if ld is not None and ld.busy > 0:
        other = next(p for p in named if family(p) != "share")
        heavy, _ = ld.working(other)
        lighter = (f", and {number(heavy / ld.busy)}x less load per member ({ld.busy:.0%} "
                   f"busy against the consumer group's working members' {heavy:.0%}: more "
                   "of each member's time is left to drain a backlog)")
    return (f"{size} members on {parts} partitions: the share group has {number(size / parts)} "
            "members fetching each partition, the consumer group one (the others idle), so "
            "while one member is away its partition's other share members go on: the "
            "difference is that redundancy, a share group's own" + (
                lighter or ", not spare capacity")
            + (f"; {even}" if even else "") + f"; {ORDERING}")


def not_caught_up(size: int, protocols: Sequence[str],
                  runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per protocol of a crash row whose runs ended with their lag not caught up (the runs'
    ``recovered`` column), what its lag is made of, from the runs' load: a consumer group's
    member left with more partitions than it can process (its busy share over 100 %, one
    member fewer, under the protocol's assignor) never catches up, so its lag grows with the
    run's length, not with the session timeout; otherwise the backlog drains slowly (a share
    group's members of a partition share its records: no one member's load is named)."""
    out = []
    for p in dict.fromkeys(x for x in protocols if x):
        mine = [r for r in runs if r.get("protocol") == p and r.get("ok")]
        late = sum(1 for r in mine if r.get("recovered") is False)
        if not late:
            continue
        seen = f"not caught up when the run ended in {late} of {len(mine)} runs"
        ld = member_load(mine[0])
        assignor = ASSIGNORS.get(p.partition("@")[0])  # a timing variant: its protocol
        if ld is not None and assignor is not None and ld.busy > 0:
            r0 = mine[0]
            topics = int(r0.get("total_topics") or r0.get("topics") or 1)
            parts = int(r0.get("total_partitions") or r0.get("partitions") or 0)
            n = busiest_partitions(topics, max(1, parts // topics), max(1, size - 1),
                                   "range" if assignor == "range" else "balanced")
            busy = n * ld.busy * size / max(1, parts)  # a partition's share of the work
            if busy > 1.0:
                out.append(f"{p}'s lag is a member left with {n} partitions at {busy:.0%} busy, "
                           f"which never catches up ({seen}): it grows with the run's length, "
                           "not with the session timeout")
                continue
        out.append(f"{p} {seen}, so its lag too grows with the run's length")
    return out


def with_conditions(found: Sequence[Claim], verdicts: Sequence[GridVerdict],
                    runs: Sequence[Mapping[str, Any]]) -> list[Claim]:
    """The sentences with their conditions (:func:`condition_clauses`, ``Claim.conditions``:
    the page letters each clause once and the sentence names its letters)."""
    return [replace(c, conditions=(*c.conditions, *condition_clauses(c, verdicts, runs)))
            for c in found]


#: The run column :func:`attach_moving_downtime` adds to a run of several disturbance windows:
#: each window's (label, excess lag in record·s), in order.
WINDOW_LAGS = "window_lags"
#: The run column :func:`attach_moving_downtime` adds: the resource downtime of the run's
#: disturbance windows that moved something (ms).
MOVING_DOWNTIME = "moving_downtime_ms"


def attach_moving_downtime(runs: Sequence[dict[str, Any]],
                           windows: Sequence[Mapping[str, Any]]) -> None:
    """Give each run its resource downtime summed over the disturbance windows that moved
    something (``disturbances`` rows: each window's excess over the control), as
    :data:`MOVING_DOWNTIME`. A window that moved nothing may still have downtime: a static
    member's restart within its session (its partitions wait for it, with no rebalance); charged
    to the moves of the run's other windows it would make a downtime per moved partition that no
    partition had (the long-poll grid's restart: 300 partition·s over a join's 9 moves)."""
    per: dict[str, float] = defaultdict(float)
    lags: dict[str, list[tuple[int, str, float]]] = defaultdict(list)
    starts: dict[str, list[int]] = defaultdict(list)
    for w in windows:
        if w.get("disturbance") == INITIAL_JOIN:
            continue
        rid = str(w.get("run_id"))
        if w.get("at_ms") is not None:
            starts[rid].append(int(w["at_ms"]))
        if w.get("lag_record_s") is not None:
            lags[rid].append((int(w.get("window") or 0), str(w.get("disturbance")),
                              float(w["lag_record_s"])))
        moved, down = w.get("resources_moved"), w.get("resource_downtime_ms")
        if not moved or down is None:
            continue
        per[rid] += float(down)
    for r in runs:
        rid = str(r.get("run_id"))
        r[MOVING_DOWNTIME] = per.get(rid, 0.0)
        if len(lags.get(rid, ())) > 1:
            r[WINDOW_LAGS] = [(label, lag) for _, label, lag in sorted(lags[rid])]
        if starts.get(rid):
            r[WINDOW_STARTS] = sorted(starts[rid])


def balance_after_last(run: Mapping[str, Any], summary: Mapping[str, Any]) -> float | None:
    """A Connect run's time until balanced counted from its scenario's last event
    (:data:`~groupcoord.lab.findings.BALANCE_AFTER_LAST`, ms): the simulator's
    ``balanced_since_ms`` (else the first disturbance plus ``time_to_balance_ms``) minus its
    ``quiet_at_ms``, the end of the last disturbance as run (a bounced worker's return, the
    second of two connector changes); 0 where the group was balanced before then and stayed
    so. None where the run never balanced or the summary lacks the moment."""
    tb, quiet = run.get("time_to_balance_ms"), summary.get("quiet_at_ms")
    if tb is None or quiet is None:
        return None
    since = summary.get("balanced_since_ms")
    if since is None:
        if run.get("warmup_ms") is None:
            return None
        since = float(run["warmup_ms"]) + float(tb)
    return max(0.0, float(since) - float(quiet))


#: The runs table's column of :func:`balance_after_last` (``lab.runs``).
AFTER_LAST_COLUMN = "time_to_balance_after_last_ms"


def attach_balance_after_last(runs: Sequence[dict[str, Any]],
                              summaries: Mapping[str, Mapping[str, Any]]) -> None:
    """Give each run with a time until balanced its :func:`balance_after_last`, from its
    simulator summary (``summaries`` by run id: the ``runs`` table's ``summary_json``)."""
    for r in runs:
        if r.get(AFTER_LAST_COLUMN) is not None:
            # the runs table's own column (runs written before it: from the summary)
            r[BALANCE_AFTER_LAST] = float(r[AFTER_LAST_COLUMN])
            continue
        summary = summaries.get(str(r.get("run_id")))
        if summary is None:
            continue
        got = balance_after_last(r, summary)
        if got is not None:
            r[BALANCE_AFTER_LAST] = got


#: A run's disturbance windows' start times (ms; :func:`attach_moving_downtime`).
WINDOW_STARTS = "_window_starts_ms"


def balance_per_window(scenario: str, protocols: Sequence[str],
                       runs: Sequence[Mapping[str, Any]]) -> str:
    """Where a Connect scenario has several disturbances, time until balanced (which counts
    from the first) contains the gap between them: the line gives the gap and each protocol's
    time until balanced from the last disturbance (median over the runs), the time that
    disturbance's window took. The windows before the last are cut by the next one's start
    (the run records when the assignment last became balanced, not each window's)."""
    gaps: list[float] = []
    after: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        starts = r.get(WINDOW_STARTS)
        tb = r.get("time_to_balance_ms")
        if not starts or len(starts) < 2 or tb is None:
            continue
        gap = float(starts[-1] - starts[0])
        gaps.append(gap)
        if float(tb) >= gap:
            after[str(r["protocol"])].append(float(tb) - gap)
    if not gaps:
        return ""
    ps = [p for p in protocols if after.get(p)]
    if not ps:
        return ""
    return (f"{scenario}: its disturbances come {_ms(statistics.median(gaps))} apart, and time "
            "until balanced from the first would contain that gap, a setting of the scenario "
            "(the table counts from the last event's end); per window, from the last "
            "disturbance's start until balanced (median over the runs): "
            + ", ".join(f"{p} {_ms(statistics.median(after[p]))}" for p in ps) + ".")


def window_split(scenario: str, protocols: Sequence[str],
                 runs: Sequence[Mapping[str, Any]]) -> str:
    """For a scenario of several disturbances, where each protocol's excess lag comes from:
    the median over the runs of each window's (``disturbances``, via
    :func:`attach_moving_downtime`); "" when the runs carry no windows."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    labels: dict[str, None] = {}
    for r in runs:
        for label, lag in r.get(WINDOW_LAGS) or ():
            labels.setdefault(label)
            per[str(r["protocol"])][label].append(lag)
    # (a window that costs nothing under every protocol, as a slow event's, says nothing)
    shown = [label for label in labels
             if any(statistics.median(per[p][label]) for p in per if per[p].get(label))]
    if len(shown) < 2:
        return ""
    parts = []
    for label in shown:
        vals = [f"{p} {number(statistics.median(per[p][label]))}" for p in protocols
                if per.get(p, {}).get(label)]
        parts.append(f"{label}: " + ", ".join(vals))
    return (f"{scenario}: excess lag by disturbance window (record·s, median over the runs): "
            + "; ".join(parts) + ".")


def downtime_per_move(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per protocol, the median over its runs (those that moved something) of resource
    downtime over resources moved, in ms; the downtime of the windows that moved something
    where the runs carry it (:func:`attach_moving_downtime`)."""
    per: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        moved = r.get("resources_moved")
        down = r.get(MOVING_DOWNTIME, r.get("resource_downtime_ms"))
        if moved and down is not None:
            per[str(r["protocol"])].append(float(down) / float(moved))
    return {p: statistics.median(v) for p, v in per.items()}


def leader_hits(runs: Sequence[Mapping[str, Any]]) -> int | None:
    """How many of the runs had an event hit the group's leader of that moment (the runs'
    ``event_targets``: each event's member and who led); None when a run does not say."""
    n = 0
    for r in runs:
        raw = r.get("event_targets")
        if not raw:
            return None
        try:
            events = json.loads(str(raw))
        except ValueError:
            return None
        if not isinstance(events, list) or not events:
            return None
        n += any(isinstance(e, dict) and e.get("member") and e.get("member") == e.get("leader")
                 for e in events)
    return n


def _run_setting(run: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """A setting of one run (its ``settings_json``), else ``default``."""
    return run_settings(run).get(name, default)


def connect_mechanisms(protocols: Sequence[str], settings: Mapping[str, Mapping[str, Any]],
                       runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per scenario of a Connect grid: task restarts per rebalance (restarts over the group
    epoch's bumps) against the group's tasks (connectors x tasks), the median over the runs;
    and where a protocol's time until balanced splits into outcomes (``verdict.modes``), how
    many rebalances each outcome took and whether the slow one waited KIP-415's delay."""
    from groupcoord.lab.findings import BY_COLUMN
    from groupcoord.lab.verdict import DELAY_SETTING, modes

    tb = BY_COLUMN["time_to_balance_ms"]
    by_scenario: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in runs:
        if r.get("protocol") in protocols and r.get("ok"):
            by_scenario[str(r["scenario"])].append(r)
    lines = []
    for scenario, rs in by_scenario.items():
        parts = []
        total = 0
        for p in protocols:
            mine = [r for r in rs if r["protocol"] == p and r.get("epoch_bumps")
                    and r.get("task_restarts") is not None]
            if not mine:
                continue
            total = int((mine[0].get("connectors") or 0) * (mine[0].get("tasks") or 0))
            per = statistics.median(float(r["task_restarts"]) / float(r["epoch_bumps"])
                                    for r in mine)
            share = f" ({per / total:.0%} of them)" if total else ""
            parts.append(f"{p} {number(per)}{share}")
        if not parts:
            continue
        line = (f"{scenario}: task restarts per rebalance (restarts over rebalances, median "
                f"over the runs), of the group's {total:,} tasks: " + ", ".join(parts) + ".")
        per_window = balance_per_window(scenario, protocols, rs)
        if per_window:
            line += " The" + per_window[len(scenario) + 5:]  # ("SCENARIO: its ...")
        for phase in task_time_phase(scenario, protocols, rs):
            line += " " + phase
        for p in protocols:
            by_size: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
            for r in rs:
                if r["protocol"] == p and r.get("time_to_balance_ms") is not None:
                    by_size[int(r.get("size") or 0)].append(r)
            for size, cell in sorted(by_size.items()):
                outs = modes([float(r["time_to_balance_ms"]) for r in cell], tb)
                if len(outs) < 2:
                    continue
                cut = outs[0][-1]
                fast = [r for r in cell if float(r["time_to_balance_ms"]) <= cut]
                slow = [r for r in cell if float(r["time_to_balance_ms"]) > cut]

                def bumps(xs: Sequence[Mapping[str, Any]]) -> str:
                    vals = sorted({int(x.get("epoch_bumps") or 0) for x in xs})
                    return "/".join(str(v) for v in vals)

                delay = _run_setting(slow[0], DELAY_SETTING,
                                     settings.get(p, {}).get(DELAY_SETTING))
                waited = ""
                if isinstance(delay, int | float) and min(
                        float(r["time_to_balance_ms"]) for r in slow) >= 0.9 * delay:
                    waited = f", waiting {DELAY_SETTING} ({int(delay):,} ms)"
                t_fast = statistics.median(float(r["time_to_balance_ms"]) for r in fast)
                t_slow = statistics.median(float(r["time_to_balance_ms"]) for r in slow)
                line += (f" At {size} workers {p}'s seeds split: {len(fast)} of {len(cell)} "
                         f"balanced in {_ms(t_fast)} after {bumps(fast)} rebalance(s), "
                         f"{len(slow)} in {_ms(t_slow)} after {bumps(slow)}{waited}")
                hf, hs = leader_hits(fast), leader_hits(slow)
                if hf is not None and hs is not None:
                    line += (f"; the event hit the group's leader in {hf} of the "
                             f"{len(fast)} fast seeds and {hs} of the {len(slow)} slow ones")
                line += "."
        lines.append(line)
    return lines


def _stop_start(run: Mapping[str, Any]) -> float:
    tt = task_times(run)
    return 0.0 if tt is None else tt.stop_ms + tt.start_ms


def task_time_phase(scenario: str, protocols: Sequence[str],
                    runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per size and protocol of a scenario run at several task start times (the kip415-task-
    times grid): where the median time until balanced does not follow the task time (it drops,
    or grows by less than half of what a task's stop and start add), why, from the runs
    (round 8: classic-connect:sessioned's 4.5 s at 10 ms against 3.62 s at 1 s, unexplained).
    The time is counted from the disturbance, and the disturbance comes after a warm-up
    (``warmup_ms``) that grows with the task time, while the workers' heartbeat timers run
    from their join: a rebalance the workers learn of at their next heartbeat starts at
    another point of the heartbeat interval at each task time. The line gives the warm-ups and
    the moment the group is balanced counted from the run's start (warm-up plus time until
    balanced), and on how many of the seeds run at two neighbouring task times that moment is
    no earlier at the longer one."""
    lines = []
    by_cell: dict[tuple[int, str], dict[float, dict[Any, Mapping[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict))
    for r in runs:
        tt = task_times(r)
        if (r.get("protocol") in protocols and r.get("ok") and tt is not None
                and r.get("time_to_balance_ms") is not None and r.get("warmup_ms") is not None):
            # one run per seed (two workload names of the same task times are one run)
            by_cell[(int(r.get("size") or 0), str(r["protocol"]))][tt.start_ms].setdefault(
                r["seed"], r)
    floor = BY_COLUMN["time_to_balance_ms"].floor
    for (size, p), seeded in sorted(by_cell.items()):
        by_time = {t: list(v.values()) for t, v in seeded.items()}
        times = sorted(by_time)
        if len(times) < 2:
            continue
        tub = [statistics.median(float(r["time_to_balance_ms"]) for r in by_time[t])
               for t in times]
        # a task's stop and start at each task time: what a moved task adds to the time
        inputs = [statistics.median(_stop_start(r) for r in by_time[t]) for t in times]
        # out of step: the time grows by less than half of what the inputs add (or drops),
        # by more than the metric's floor (a difference the tables would count)
        odd = [(a, b, tub[i + 1] - tub[i], inputs[i + 1] - inputs[i])
               for i, (a, b) in enumerate(pairwise(times))
               if (inputs[i + 1] - inputs[i]) / 2 - (tub[i + 1] - tub[i]) > floor]
        if not odd:
            continue
        warm = [statistics.median(float(r["warmup_ms"]) for r in by_time[t]) for t in times]
        ends = [statistics.median(float(r["warmup_ms"]) + float(r["time_to_balance_ms"])
                                  for r in by_time[t]) for t in times]
        pairs = later = 0
        for a, b in pairwise(times):
            at_a = {r["seed"]: float(r["warmup_ms"]) + float(r["time_to_balance_ms"])
                    for r in by_time[a]}
            for r in by_time[b]:
                if r["seed"] in at_a:
                    pairs += 1
                    later += float(r["warmup_ms"]) + float(r["time_to_balance_ms"]) \
                        >= at_a[r["seed"]]
        beat = _run_setting(by_time[times[0]][0], "heartbeat.interval.ms")
        at = ", ".join(f"{_ms(v)} at {_ms(t)}" for v, t in zip(tub, times, strict=True))
        steps = "; ".join(f"from {_ms(a)} to {_ms(b)} it {'drops' if d < 0 else 'grows'} by "
                          f"{_ms(abs(d))} where a task's stop and start add {_ms(e)}"
                          for a, b, d, e in odd)
        line = (f"{scenario}, {size} workers: {p}'s time until balanced does not follow the "
                f"task time (median {at}: {steps}). It is counted from the disturbance, "
                "which comes after a warm-up that grows with the task time ("
                + ", ".join(_ms(w) for w in warm) + "), while the workers' heartbeat timers "
                "run from their join: the workers learn of the rebalance at their next "
                "heartbeat, at another point of the "
                + (f"{_ms(float(beat))} heartbeat.interval.ms" if isinstance(beat, int | float)
                   else "heartbeat interval")
                + " at each task time. Counted from the run's start (warm-up plus time until "
                "balanced), the group is balanced at " + ", ".join(_ms(e) for e in ends))
        if pairs:
            line += (f"; of the {pairs} seeds run at two neighbouring task times, {later} "
                     "balance no earlier at the longer one")
        lines.append(line + ".")
    return lines


#: Events that change the topics' metadata: classic members see them at their next refresh.
METADATA_EVENTS = frozenset({"add-partitions", "create-topic", "delete-topic"})


def event_kinds(run: Mapping[str, Any]) -> frozenset[str]:
    """The kinds of the events of a run's scenario (its inline definition, else the built-in
    scenario of that name); empty when neither says."""
    raw = run.get("scenario_def")
    if raw:
        try:
            table = json.loads(str(raw))
        except ValueError:
            return frozenset()
        events = table.get("events") if isinstance(table, dict) else None
        if not isinstance(events, list):
            return frozenset()
        return frozenset(str(e.get("kind")) for e in events if isinstance(e, dict))
    from groupcoord.sim.scenario import BUILTINS, ScenarioError, load_scenario

    name = str(run.get("scenario") or "")
    if name not in BUILTINS:
        return frozenset()
    try:
        return frozenset(e.kind for e in load_scenario(name, 0).events)
    except (ScenarioError, ValueError):
        return frozenset()


#: Whether a run is of its grid's second (fresh) seed set (``lab.report.grid_runs``).
FRESH_SET = "_fresh_seed_set"


def _per_set(rs: Sequence[Mapping[str, Any]], protocol: str) -> str:
    """`` (first seeds' median a, fresh seeds' b)`` where the runs carry their seed set."""
    sets: dict[bool, list[float]] = defaultdict(list)
    for r in rs:
        if r["protocol"] == protocol and FRESH_SET in r:
            sets[bool(r[FRESH_SET])].append(float(r["convergence_ms"]))
    if not sets.get(False) or not sets.get(True):
        return ""
    return (f" (first seeds' median {_ms(statistics.median(sets[False]))}, fresh seeds' "
            f"{_ms(statistics.median(sets[True]))})")


def _distribution(vals: Sequence[float]) -> str:
    """A wide draw in words: median, quartiles, range and mean over the runs."""
    vals = sorted(vals)
    text = f"median {_ms(statistics.median(vals))} over {len(vals)} runs"
    if len(vals) >= 4:
        q1, _, q3 = statistics.quantiles(vals, n=4)
        text += f", quartiles {_ms(q1)} to {_ms(q3)}"
    return text + f", range {_ms(vals[0])} to {_ms(vals[-1])}, mean {_ms(statistics.fmean(vals))}"


def metadata_mechanism(scenario: str, protocols: Sequence[str],
                       settings: Mapping[str, Mapping[str, Any]],
                       runs: Sequence[Mapping[str, Any]]) -> str:
    """Why a topic's growth converges late under classic: a classic member learns of new
    partitions at its next metadata refresh (``metadata.max.age.ms``, at a phase uniform within
    it: a wait anywhere from 0 to the whole of it), where a KIP-848 coordinator sees the
    change itself and sends each member its target with its next heartbeat.

    The leader's refresh phase is drawn per run (as in the field, where anything may have
    refreshed a client's metadata; a follower's refresh does not rebalance the group), so a
    classic median over a few seeds is one sample of that draw: classic's time to converge is
    given as
    its distribution over every run of the cell, both seed sets, per workload (a grid may sweep
    ``metadata.max.age.ms`` by workload), beside its expectation; KIP-848's as its median and
    range."""
    by_wl: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in runs:
        if r.get("convergence_ms") is not None:
            by_wl[str(r.get("workload"))].append(r)
    out = []
    for wl, rs in sorted(by_wl.items()):
        parts = []
        for fam in dict.fromkeys(family(p) for p in protocols):
            mine = [p for p in protocols if family(p) == fam
                    and any(r["protocol"] == p for r in rs)]
            if not mine:
                continue
            vals = {p: [float(r["convergence_ms"]) for r in rs if r["protocol"] == p]
                    for p in mine}
            s = next((st for r in rs if r["protocol"] == mine[0]
                      for st in [run_settings(r)] if st), settings.get(mine[0], {}))
            if fam == "classic":
                age = s.get("metadata.max.age.ms")
                times = "; ".join(f"{p} {_distribution(vals[p])}{_per_set(rs, p)}"
                                  for p in mine)
                why = (f"the group rebalances when its leader's next metadata refresh sees "
                       "the new partitions (only the leader compares the metadata with what it "
                       "assigned, as the Java client's ConsumerCoordinator does) "
                       f"(metadata.max.age.ms {_ms(float(age))}, at a phase drawn per run, "
                       f"uniform within it: a wait from 0 to {_ms(float(age))}, "
                       f"{_ms(float(age) / 2)} expected), so each run is one draw of that "
                       "phase and the distribution, not a median, is the result"
                       if isinstance(age, int | float) else "a member sees them at its next "
                       "metadata refresh")
            else:
                times = "; ".join(
                    f"{p} median {_ms(statistics.median(vals[p]))} over {len(vals[p])} runs, "
                    f"range {_ms(min(vals[p]))} to {_ms(max(vals[p]))}{_per_set(rs, p)}"
                    for p in mine)
                hb = _heartbeat(s, mine[0])
                why = ("the coordinator sees the new partitions and sends each member its "
                       "target " + (f"with its next heartbeat ({_ms(hb)})" if hb
                                    else "at its next heartbeat"))
            parts.append(f"{times}: {why}")
        if parts:
            where = f" ({wl})" if len(by_wl) > 1 else ""
            out.append(f"{scenario}{where}: the topic grows; time to converge over every run "
                       "of the cell (first and fresh seed sets together): "
                       + "; ".join(parts) + ".")
    return " ".join(out)


#: How KIP-848 and KIP-932 members' heartbeats line up, in the simulator as in the field: no
#: JoinGroup round restarts their timers together. Each member's timer restarts at its own
#: heartbeat's answer (``client.consumer``'s ``_on_success``, ``sim.share``'s), so each keeps
#: the phase it started with (the lab draws each initial member's start over one heartbeat
#: interval, ``sim.scenario.start_offsets_ms``; a bounced member's is set by its restart).
OWN_PHASE = ("KIP-848 and KIP-932 members keep their own heartbeat phase (drawn per member at "
             "the start over one heartbeat interval, a bounced member's set by its restart; "
             "an acknowledging heartbeat moves only its own member's): each learns of a "
             "rebalance at its own next heartbeat, spread over one interval.")


#: The model's spread of heartbeat phases after a join (``sim.settings``: a run's
#: ``settings_json`` has it when non-zero; ``Scenario.heartbeat_spread_ms``).
SPREAD_KEY = "heartbeat.spread.ms"
#: The same spread as a Scenario field: a grid's swept timing (``lab.verdict.swept_timing``).
SPREAD_FIELD = "heartbeat_spread_ms"


def spreads_of(runs: Sequence[Mapping[str, Any]]) -> list[float]:
    """The heartbeat spreads (ms) of the runs (:data:`SPREAD_KEY`; 0 where unset), low to
    high."""
    return sorted({float(run_settings(r).get(SPREAD_KEY) or 0) for r in runs})


def spread_text(spreads: Sequence[float]) -> str:
    """``1 s`` or ``0, 1 s and 3 s``: the spreads in words."""
    texts = [_ms(v) if v else "0" for v in spreads]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def phase_clause(protocols: Sequence[str], spreads: Sequence[float] = ()) -> str:
    """When the members of a row's protocols learn of a rebalance (:func:`conditions`): at the
    same moment for classic members (timers restart at the join), each at its own next
    heartbeat for KIP-848 and share members (:data:`OWN_PHASE`). With a spread of the
    heartbeat phases (``spreads``, ms, from the runs' ``settings_json``) the classic members'
    heartbeats spread over up to that much after a join instead."""
    fams = {family(p) for p in protocols}
    out = []
    if "classic" in fams and any(spreads):
        out.append(f"the members' heartbeats spread over up to {spread_text(spreads)} after a "
                   "join (the model's spread of heartbeat phases)")
    elif "classic" in fams:
        out.append("every classic member learns of a rebalance at the same moment (heartbeat "
                   "timers restart at the join)")
    if fams & {"consumer", "share"}:
        out.append("a KIP-848 or share member learns of it at its own next heartbeat (each "
                   "keeps its own phase" + (f", a KIP-848 member's shifted by up to "
                                            f"{spread_text(spreads)} at each of its joins"
                                            if any(spreads) and "consumer" in fams else "")
                   + ")")
    return "; ".join(out) or ("every member learns of a rebalance at the same moment "
                              "(heartbeat timers restart at the join)")


def conditions(protocols: Sequence[str], settings: Mapping[str, Mapping[str, Any]],
               spreads: Sequence[float] = ()) -> str:
    """Under which conditions a consumer grid's marks hold, from its runs' settings: the
    heartbeat and session per family, and how the members' heartbeats line up. The Java
    client's heartbeat thread restarts its timers when the JoinGroup response arrives (the
    thread is enabled then) and afterwards wakes every ``retry.backoff.ms`` (100 ms) to see
    whether a heartbeat is due; librdkafka restarts its heartbeat timer when the join
    completes too. Every member of a round gets its JoinGroup response at the same moment, so
    the members' heartbeats stay within a network round (plus up to 100 ms a beat) of each
    other, as they do in the simulator: a rebalance is learnt by every member at once, not
    spread over an interval. What spreads the members in the field is the poll loop: a
    classic member rejoins only from ``poll()``, so one inside a long batch holds an eager
    group's barrier until its batch is done (bounded by ``max.poll.interval.ms``)."""
    parts = []
    for fam in dict.fromkeys(family(p) for p in protocols):
        # the family at its defaults; a timing variant (``consumer:uniform@hb3s``) after it
        mine = sorted((p for p in protocols if family(p) == fam), key=lambda p: "@" in p)
        timed = [f"{p}: heartbeat {_ms(h)}" for p in mine[1:]
                 if "@" in p and (h := _heartbeat(settings.get(p, {}), p)) is not None]
        s = settings.get(mine[0], {})
        hb, st = _heartbeat(s, mine[0]), _heartbeat(s, mine[0], SESSION_KEYS)
        mp = s.get("max.poll.interval.ms")
        if hb is None:
            continue
        name = {"classic": "classic", "share": "KIP-932 share"}.get(fam, "KIP-848")
        text = f"{name} heartbeat {_ms(hb)}"
        if st:
            text += f", session {_ms(st)}"
        if isinstance(mp, int | float):
            text += f", max.poll.interval.ms {_ms(float(mp))}"
        parts.append(text)
        parts += timed
    if not parts:
        return ""
    fams = {family(p) for p in protocols}
    together = ("Heartbeat timers restart when a member's "
                "join completes, as the Java client (its heartbeat thread is enabled on the "
                "JoinGroup response and wakes every 100 ms) and librdkafka do, and every member "
                "of a round completes it at once: classic members learn of a rebalance "
                "together, not spread over an interval." if "classic" in fams else "")
    if "classic" in fams and any(spreads):
        together = (f"The members' heartbeats spread over up to {spread_text(spreads)} after a "
                    "join (the model's spread of heartbeat phases, drawn per member and join; "
                    "a row says its spread): classic members learn of a rebalance over that "
                    "spread, not at the same moment.")
    own = (OWN_PHASE if fams & {"consumer", "share"} else "")
    if own and "consumer" in fams and any(spreads):
        # the spread shifts a KIP-848 member's phase too (``sim.consumer.spread_heartbeat``:
        # at each of its joins), so its numbers move with the spread (round 8)
        own += (f" With the spread, a KIP-848 member's heartbeat is shifted by up to "
                f"{spread_text(spreads)} at each of its joins as well (a new or bounced "
                "member), so KIP-848's numbers move with the spread too.")
    return ("Conditions: " + "; ".join(parts) + ". " + " ".join(x for x in (together, own) if x)
            + (" A classic member rejoins only from its poll loop, so one busy in a long poll "
               "holds an eager group's barrier until its batch is done (see Polls below for "
               "how long a poll takes in this grid)."
               if any(family(p) == "classic" for p in protocols) else ""))


#: A share group's (KIP-932) broker settings that set its lock-limit stop.
SHARE_LOCK_DURATION = "group.share.record.lock.duration.ms"
SHARE_MAX_LOCKS = "group.share.partition.max.record.locks"


def lock_limit_stop_ms(run: Mapping[str, Any]) -> tuple[float, int, float, float] | None:
    """The lock-limit stop a lost host (a crash: nothing closes) causes at this run's rate,
    as (stop ms, max.record.locks, lock duration ms, records/s a partition): KIP-932's
    in-flight limit, ``group.share.partition.max.record.locks`` offsets beyond the
    share-partition start offset, fills ``locks / rate`` seconds into the lost host's 30 s
    lock, and the partition stops for its other members for the rest of the lock. None for
    a run that is not a share run with a lock duration in its settings, or whose rate never
    fills the limit within the lock."""
    from groupcoord.coordinator.share_partitions.config import DEFAULT_MAX_RECORD_LOCKS

    if family(str(run.get("protocol"))) != "share":
        return None
    s = run_settings(run)
    dur, rate = s.get(SHARE_LOCK_DURATION), work_value(run, "records_per_s")
    if not isinstance(dur, int | float) or not rate:
        return None
    locks = int(s.get(SHARE_MAX_LOCKS) or DEFAULT_MAX_RECORD_LOCKS)
    stop = float(dur) - locks / float(rate) * 1000.0
    return (stop, locks, float(dur), float(rate)) if stop > 0 else None


def _lock_limit_text(per: float, rs: Sequence[Mapping[str, Any]], protocol: str) -> str:
    """" (the lock-limit stop: ...)" where a share protocol's downtime per moved partition
    in a crash matches the lock-limit arithmetic of its runs' rate (within 10 %), else ""."""
    mine = [r for r in rs if r.get("protocol") == protocol]
    stops = {lock_limit_stop_ms(r) for r in mine}
    if len(stops) != 1 or (got := stops.pop()) is None:
        return ""
    stop, locks, dur, rate = got
    if abs(per - stop) > 0.1 * stop:
        return ""
    return (f" (the lock-limit stop: a {_ms(dur)} lock less {number(locks)} locks / "
            f"{number(rate)} records/s a partition = {_ms(stop)})")


def _downtime_line(scenario: str, label: str, protocols: Sequence[str],
                   settings: Mapping[str, Mapping[str, Any]], rs: Sequence[Mapping[str, Any]],
                   eager_gaps: list[tuple[str, float]], spread: float = 0) -> str | None:
    """One scenario's (one group size's, one heartbeat spread's) downtime per moved
    partition per protocol, with what it says about the rebalance (see :func:`mechanisms`);
    appends eager's figures outside a crash to ``eager_gaps``; None without moves."""
    per = downtime_per_move(rs)
    if not per:
        return None
    parts = []
    by_beat = []
    for p in protocols:
        if p not in per:
            continue
        hb = _heartbeat(settings.get(p, {}), p)
        st = _heartbeat(settings.get(p, {}), p, SESSION_KEYS)
        # a share partition stops after a lost host at the lock limit where its other
        # members fetch it: the rate's arithmetic names that, never a heartbeat whose
        # value happens to be near
        share_crash = family(p) == "share" and "crash" in event_kinds(rs[0])
        beat = _lock_limit_text(per[p], rs, p) if share_crash else ""
        if beat:
            pass
        # (an eager member's gap is a join round, never a heartbeat: an eager figure
        # near one is a coincidence of the moves it is spread over, as in a crash)
        elif hb and not is_eager(p) and not share_crash and 0.5 * hb <= per[p] <= 1.5 * hb:
            beat = f" (about one {_ms(hb)} heartbeat)"
            by_beat.append(p)
        elif st and 0.7 * st <= per[p] <= 1.3 * st:
            beat = f" (about the {_ms(st)} session timeout)"
        parts.append(f"{p} {_ms(per[p])}{beat}")
    line = (f"{label}: downtime per moved partition (resource downtime over partitions "
            f"moved, median over the runs): " + ", ".join(parts) + ".")
    eager = [p for p in per if is_eager(p)]
    rest = [p for p in per if not is_eager(p)]
    if "crash" not in event_kinds(rs[0]) and not spread:
        # (a spread of the heartbeat phases sets eager's gap too, not a long poll)
        eager_gaps += [(scenario, per[p]) for p in eager]
    late = SLOW_VARIANT.match(scenario)
    if late and eager:
        line += (f" One member is {_ms(float(late.group('v')))} late at every rebalance "
                 "(its revocations): an eager group, having revoked everything, waits for it.")
    elif (eager and rest and by_beat
            and max(per[p] for p in eager) < min(per[p] for p in rest)):
        together = ("the whole group rejoins at once" if not spread else
                    f"the group rejoins within the heartbeats' {spread_text([spread])} spread")
        line += (f" Eager revokes every partition, but {together}, so "
                 "each waits only that long; a cooperative member learns its second round, "
                 "and a KIP-848 member its new target, at its next heartbeat.")
    beats_here = [hb for p in per for hb in (_heartbeat(settings.get(p, {}), p),) if hb]
    sessions = [st for p in eager for st in (_heartbeat(settings.get(p, {}), p,
                                                         SESSION_KEYS),) if st]
    if eager and rest and beats_here:
        slowest = min(per[p] for p in eager)
        if (slowest > 2 * max(beats_here) and slowest > max(per[p] for p in rest)
                and not (sessions and slowest >= 0.7 * min(sessions))):
            line += (" Eager's partitions were down longer than two heartbeats each, and "
                     "longer than under any other protocol: its JoinGroup barrier waited "
                     "for a member inside a long poll (a classic member rejoins only from "
                     "poll(), and eager members revoke everything before they rejoin)"
                     + ("; cooperative members keep processing what they own meanwhile"
                        if any(p.endswith(":cooperative") for p in rest) else "")
                     + ("; a KIP-848 member waits for no other member"
                        if any(family(p) == "consumer" for p in rest) else "") + ".")
    return line


def mechanisms(protocols: Sequence[str], settings: Mapping[str, Mapping[str, Any]],
               runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per scenario of the grid (see the module docstring; a Connect grid:
    :func:`connect_mechanisms`); nothing for runs without moves."""
    if not protocols:
        return []
    if all(family(p).endswith("connect") for p in protocols):
        return connect_mechanisms(protocols, settings, runs)
    if any(family(p).endswith("connect") for p in protocols):
        return []
    by_scenario: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in runs:
        if r.get("protocol") in protocols and r.get("ok"):
            by_scenario[str(r["scenario"])].append(r)
    lines = []
    # eager's downtime per moved partition per scenario, where no crash sets it (a crashed
    # member's partitions wait the session timeout, whatever the polls)
    eager_gaps: list[tuple[str, float]] = []
    for scenario, rs in by_scenario.items():
        if event_kinds(rs[0]) & METADATA_EVENTS:
            grown = metadata_mechanism(scenario, protocols, settings, rs)
            if grown:
                lines.append(grown)
        split = window_split(scenario, protocols, rs)
        if split:
            lines.append(split)
        sizes = sorted({int(r.get("size") or r.get("members") or 0) for r in rs})
        spreads = spreads_of(rs)
        workloads = list(dict.fromkeys(str(r.get("workload") or "") for r in rs))
        # per group size: a median across sizes mixes a crash at 4 members with one at 12;
        # per spread of the heartbeat phases (a grid that sweeps it), likewise; per workload
        # (a median over two rates is a value no run had)
        for size in sizes:
            for spread in spreads:
                for workload in workloads:
                    mine = [r for r in rs if (len(sizes) == 1 or int(
                        r.get("size") or r.get("members") or 0) == size)
                        and (len(spreads) == 1 or spreads_of([r]) == [spread])
                        and (len(workloads) == 1 or str(r.get("workload") or "") == workload)]
                    if not mine:
                        continue
                    label = scenario if len(sizes) == 1 else (
                        f"{scenario}, {size} {member_word(scenario, protocols)}")
                    if len(workloads) > 1:
                        label += f", {workload}"
                    if len(spreads) > 1:
                        label += (f", heartbeats spread over up to {spread_text([spread])}"
                                  if spread else ", heartbeats not spread")
                    line = _downtime_line(scenario, label, protocols, settings, mine,
                                          eager_gaps, spread)
                    if line:
                        lines.append(line)
    loads = [ld for r in runs if r.get("protocol") in protocols
             for ld in (member_load(r),) if ld is not None]
    beats = [hb for p in protocols for hb in (_heartbeat(settings.get(p, {}), p),) if hb]
    cond = conditions(protocols, settings,
                      spreads_of([r for r in runs if r.get("protocol") in protocols]))
    if cond:
        lines.insert(0, cond)
    if loads:
        polls = sorted({ld.per_poll for ld in loads})
        batch = max(ld.batch_ms for ld in loads)
        full = max(ld.full_batch_ms for ld in loads)
        lines.append(
            f"Polls: a member gets {number(polls[0])}"
            + (f" to {number(polls[-1])}" if number(polls[-1]) != number(polls[0]) else "")
            + f" records per poll when caught up (its records/s times the "
            f"{number(DEFAULT_FETCH_MS)} ms in flight) and processes them in at most "
            f"{_ms(batch)}; a full poll after a backlog (max.poll.records) takes {_ms(full)}")
        if beats and max(batch, full) < min(beats) and not any(map(is_eager, protocols)):
            lines[-1] += ", under a heartbeat."
        elif beats and max(batch, full) < min(beats):
            lines[-1] += (", under a heartbeat, so no member is busy inside a long poll when a "
                          "rebalance starts: the case where eager loses in the field (the "
                          "whole group waits for the slowest member's batch) does not arise "
                          "here.")
        elif beats:
            # how late the members were at the rebalances, from the runs' lateness column:
            # the barrier waits a long poll causes (the stall cannot show them: members that
            # process while the group waits are no stall)
            lines[-1] += f", longer than a {_ms(min(beats))} heartbeat"
            if eager_gaps and max(v for _, v in eager_gaps) > 2 * max(beats):
                slow = ", ".join(dict.fromkeys(s for s, v in eager_gaps if v > 2 * max(beats)))
                lines[-1] += (f"; in {slow} eager's downtime per moved partition is over two "
                              "heartbeats: a rebalance there waited on a member (inside a long "
                              "poll, or late in its revocation)")
            late = rebalance_lateness(list(by_scenario), protocols,
                                      [r for rs in by_scenario.values() for r in rs])
            lines[-1] += f"; {late}." if late else "."
        else:
            lines[-1] += "."
    return lines


#: The metrics on which an incremental cooperative protocol's follow-up round costs each moved
#: task or partition about one heartbeat interval (KIP-429, KIP-415): task downtime and lag.
HEARTBEAT_GAP_METRICS = frozenset({"task_downtime_task_s", "lag_record_s", "lag_peak"})


def _incremental_classic(protocol: str) -> bool:
    """A classic-group protocol with a follow-up round (KIP-429 cooperative-sticky, KIP-415
    sessioned Connect): the revoking member rejoins at once, the others at their next
    heartbeat."""
    kind = protocol.partition(":")[2].split("@")[0]
    return family(protocol) in ("classic", "classic-connect") and kind in (
        "cooperative", "sessioned")


def _base_label(protocol: str) -> str:
    return protocol.split("@")[0]


def heartbeat_gap_clause(verdicts: Sequence[GridVerdict]) -> str:
    """The condition every cooperative-against-eager gap on task downtime or lag rests on,
    said once for the page: an incremental cooperative protocol's follow-up round (KIP-429
    for classic consumers, KIP-415 for Connect) starts at each member's next heartbeat, so
    its task downtime and excess lag carry about one heartbeat interval per moved task or
    partition, and the gap to eager scales with ``heartbeat.interval.ms``. The interval is
    read from the runs' settings; whether the spec ran those protocols at another interval
    (an ``@hb`` variant; ``@hbspread`` spreads the phase, not the interval) is said, and a
    KIP-848 pair at two intervals in one cell (``consumer:uniform`` and ``@hb3s``) is quoted
    where the tables have one. "" when no grid compares such a protocol with an eager one."""
    beats: set[float] = set()
    variants: set[float] = set()
    for g in verdicts:
        if not any(is_eager(_base_label(p)) for p in g.protocols):
            continue
        for row in g.rows:
            st = row.settings or g.settings
            for p in g.protocols:
                if not _incremental_classic(p):
                    continue
                hb = _heartbeat(st.get(p) or g.settings.get(p, {}), p, HEARTBEAT_SETTING)
                if hb is None:
                    continue
                rest = p.partition("@")[2]
                if rest.startswith("hb") and not rest.startswith("hbspread"):
                    variants.add(hb)
                else:
                    beats.add(hb)
    if not beats:
        return ""
    swept = sorted(variants - beats)
    text = ("an incremental cooperative protocol's follow-up round (classic:cooperative, "
            "classic-connect:sessioned) starts at each member's next heartbeat, so its task "
            "downtime and excess lag carry about one heartbeat interval per moved task or "
            "partition and its gap to eager scales with heartbeat.interval.ms: "
            + ", ".join(_ms(b) for b in sorted(beats)) + " in these runs (the settings table)")
    gaps = _swept_gaps(verdicts)
    crashes = _swept_gaps(verdicts, crash=True)
    if gaps:
        text += "; " + "; ".join(_gap_words(gs, crashes.get(k, ())) for k, gs in gaps.items())
    elif swept:
        text += "; also run at " + ", ".join(_ms(b) for b in swept) + " (their own rows)"
    else:
        text += "; no shorter interval was run for them (not swept)"
    # which alignment the model assumes, and which the wire measured and when (outside
    # review round 14: the condition named the interval, not the phase the eager wins rest on)
    from groupcoord.lab.wire_spread import alignment_text, load_spread, load_stable

    text += ("; the model restarts every classic member's heartbeat timer at the join, so "
             "all learn of the next rebalance at the same beat (a heartbeat-spread grid's "
             "columns excepted)")
    if measured := alignment_text(load_spread(), load_stable()):
        text += f"; on the wire, {measured}"
    if heartbeat_gap_detail(verdicts):
        text += " (detail in the note under these conditions)"
    return text


@dataclass(frozen=True, slots=True)
class SweptGap:
    """One cell where an incremental cooperative protocol and its family's eager one both ran
    at their default heartbeat interval and at a shorter one (an ``@hb`` variant beside them):
    the medians of the four columns on the metric."""

    grid: str
    scenario: str
    size: int
    workload: str
    metric: Metric
    incremental: str
    eager: str
    default_ms: float
    short_ms: float
    #: medians: the incremental protocol and eager at the default, then at the short interval
    inc: float
    eag: float
    inc_short: float
    eag_short: float

    @property
    def gap(self) -> float:
        """How much more the incremental protocol costs than eager (negative: less)."""
        sign = 1.0 if self.metric.lower_is_better else -1.0
        return sign * (self.inc - self.eag)

    @property
    def gap_short(self) -> float:
        sign = 1.0 if self.metric.lower_is_better else -1.0
        return sign * (self.inc_short - self.eag_short)


def _interval_variant(label: str) -> tuple[str, float] | None:
    """``classic:cooperative@hb1s`` -> (``classic:cooperative``, 1000); None for a label
    without a heartbeat-interval variant (or with other timings beside it)."""
    from groupcoord.sim.settings import split_timing

    try:
        base, timings = split_timing(label)
    except ValueError:
        return None
    if set(timings) != {"heartbeat_interval_ms"}:
        return None
    return base, float(timings["heartbeat_interval_ms"])


@dataclass(slots=True)
class _Merged:
    """One (scenario, size, workload) row and metric over every grid that runs it: each
    label's cell and settings (a grid of ``@hb1s`` columns beside its parent's)."""

    metric: Metric
    grids: list[str]
    cells: dict[str, Any]
    settings: dict[str, Mapping[str, Any]]
    limit: str


def _merged_cells(verdicts: Sequence[GridVerdict]) -> dict[tuple[Any, ...], _Merged]:
    out: dict[tuple[Any, ...], _Merged] = {}
    for g in verdicts:
        for row in g.rows:
            st = row.settings or g.settings
            for mv in row.metrics:
                key = (row.scenario, row.size, row.workload, mv.metric.column)
                mg = out.get(key)
                if mg is None:
                    mg = out[key] = _Merged(mv.metric, [], {}, {}, mv.limit)
                mg.grids.append(g.name)
                for label, cell in mv.cells.items():
                    mg.cells.setdefault(label, cell)
                    mg.settings.setdefault(label, st.get(label) or g.settings.get(label, {}))
    return out


def swept_gaps(verdicts: Sequence[GridVerdict], crash: bool = False) -> list[SweptGap]:
    """Every cell that ran an incremental cooperative protocol (:func:`_incremental_classic`)
    and its family's eager protocol both at their default heartbeat interval and at a shorter
    ``@hb`` one (in one grid, or in a grid of ``@hb`` columns beside its parent's: the same
    scenario, size and workload), on a metric of :data:`HEARTBEAT_GAP_METRICS` (a crash, where
    nobody revokes, and KIP-415's delay variants, a configured wait, excepted). ``crash``: the
    crash cells instead, the ones condition (b) leaves out and says it does."""
    from groupcoord.lab.spec import seed_family

    out: list[SweptGap] = []
    for (scenario, size, workload, column), mg in _merged_cells(verdicts).items():
        if ("crash" in scenario) != crash or column not in HEARTBEAT_GAP_METRICS \
                or mg.limit.startswith("is won") or seed_family(scenario) != scenario:
            continue
        c = mg.cells
        for label in c:
            var = _interval_variant(label)
            if var is None or not _incremental_classic(var[0]) or var[0] not in c:
                continue
            inc, short = var
            default = _heartbeat(mg.settings.get(inc, {}), inc, HEARTBEAT_SETTING)
            if default is None or default <= short:
                continue
            suffix = label.partition("@")[2]
            for e in c:
                if "@" in e or e.partition(":")[2] != "eager" or family(e) != family(inc) \
                        or f"{e}@{suffix}" not in c:
                    continue
                grid = next((gn for gn in mg.grids if gn and not gn.endswith("-hb1s")),
                            mg.grids[0])
                out.append(SweptGap(
                    grid, scenario, size, workload, mg.metric, inc, e, default, short,
                    c[inc].median, c[e].median, c[label].median, c[f"{e}@{suffix}"].median))
    return out


def _swept_gaps(verdicts: Sequence[GridVerdict], crash: bool = False
                ) -> dict[tuple[str, str], list[SweptGap]]:
    """:func:`swept_gaps` by incremental protocol and metric, the protocol's own metric
    first (task downtime for Connect, excess lag for classic consumers)."""
    by: dict[tuple[str, str], list[SweptGap]] = defaultdict(list)
    for x in swept_gaps(verdicts, crash):
        if (family(x.incremental) == "classic-connect") == (x.metric.column
                                                            == "task_downtime_task_s") \
                and x.metric.column != "lag_peak":
            by[(x.incremental, x.metric.column)].append(x)
    return dict(by)


def _crash_words(gs: Sequence[SweptGap]) -> str:
    """The crash cells condition (b) leaves out (nobody revokes, so no follow-up round waits
    for a heartbeat), said so that its cell count hides none: how many, and in how many of
    them eager costs more, by how much at the default interval (medians)."""
    x0 = gs[0]
    more = sorted(-x.gap for x in gs if x.gap < 0)
    cells = f"{len(gs)} crash cell{'s' if len(gs) != 1 else ''}"
    if not more:
        return f"left out: {cells} (nobody revokes)"
    by = (x0.metric.fmt(more[0]) if len(more) == 1
          else f"{x0.metric.fmt(more[0])}{DASH}{x0.metric.fmt(more[-1])}")
    return (f"left out: {cells} (nobody revokes), where {x0.eager} costs more in "
            f"{len(more)}, by {by} at {_ms(x0.default_ms)}")


def _gap_words(gs: Sequence[SweptGap], crash: Sequence[SweptGap] = ()) -> str:
    """What the shorter interval does to one protocol's gap to eager over its swept cells, as
    condition (b) says it: in how many of them eager cost less at the default interval, in how
    many it still does at the shorter one, and its lead summed over those cells at both
    (medians); the cell by cell detail is :func:`_gap_detail`'s."""
    x0 = gs[0]
    m = x0.metric
    where = sorted({x.grid for x in gs})
    lead = [x for x in gs if x.gap > 0]
    text = (f"{x0.incremental} against {x0.eager}, {_ms(x0.short_ms)} beside "
            f"{_ms(x0.default_ms)} ({', '.join(where)}, {len(gs)} cells, "
            f"{short_label(m, excess=True)}, medians): {x0.eager} costs less at "
            f"{_ms(x0.default_ms)} in ")
    left = f"; {_crash_words(crash)}" if crash else ""
    if not lead:
        return text + "none of them" + left
    still = [x for x in lead if x.gap_short > 0]
    return text + (f"{len(lead)} and still at {_ms(x0.short_ms)} in {len(still)}, its lead "
                   f"over those {len(lead)} summed: {m.fmt(sum(x.gap for x in lead))} at "
                   f"{_ms(x0.default_ms)} and {m.fmt(sum(x.gap_short for x in lead))} at "
                   f"{_ms(x0.short_ms)}") + left


def _gap_detail(gs: Sequence[SweptGap]) -> str:
    """The cell by cell detail of :func:`_gap_words` (the note under the conditions): in how
    many cells the shorter interval lowers each protocol's cost, and the cell where eager led
    by most, each column's median."""
    x0 = gs[0]
    m = x0.metric
    inc_down = sum(1 for x in gs if x.inc_short < x.inc)
    eag_down = sum(1 for x in gs if x.eag_short < x.eag)
    text = (f"{x0.incremental} against {x0.eager}: the {_ms(x0.short_ms)} interval lowers "
            f"{x0.incremental}'s in {inc_down} of {len(gs)} cells and {x0.eager}'s in "
            f"{eag_down}")
    lead = [x for x in gs if x.gap > 0]
    if not lead:
        return text
    top = max(lead, key=lambda x: x.gap)
    return text + (f" (the widest, {top.scenario}, {top.size} "
                   f"{member_word(top.scenario, [top.eager])}, {top.workload}: "
                   f"{m.fmt(top.inc)} against {m.fmt(top.eag)} at {_ms(top.default_ms)}, "
                   f"{m.fmt(top.inc_short)} against {m.fmt(top.eag_short)} at "
                   f"{_ms(top.short_ms)})")


def heartbeat_gap_detail(verdicts: Sequence[GridVerdict]) -> str:
    """What condition (b) (:func:`heartbeat_gap_clause`) leaves to the note under the
    conditions: each swept pair's cells in detail, and KIP-848's ``consumer:uniform`` at
    several intervals in one cell. "" when there is none."""
    parts = [_gap_detail(gs) for gs in _swept_gaps(verdicts).values()]
    if pair := _kip848_interval_pair(verdicts):
        parts.append(pair)
    return "; ".join(parts)


def _kip848_interval_pair(verdicts: Sequence[GridVerdict]) -> str:
    """Where one cell runs ``consumer:uniform`` at several heartbeat intervals (the default and
    ``@hb`` variants, in one grid or in a companion grid of the same cells), its excess lag at
    each: what a shorter interval does to a protocol that also learns of a rebalance at its
    next heartbeat. The first scale-out row with most intervals, else the first row."""
    found: list[tuple[int, int, int, str]] = []
    for (scenario, size, workload, column), mg in _merged_cells(verdicts).items():
        if column != "lag_record_s":
            continue
        ps = [p for p in mg.cells if _base_label(p) == "consumer:uniform"
              and not p.partition("@")[2].startswith("hbspread")]
        if len(ps) < 2:
            continue
        hbs = {p: _heartbeat(mg.settings.get(p, {}), p) for p in ps}
        if None in hbs.values() or len(set(hbs.values())) < 2:
            continue
        where = f"{scenario}, {size} members, {workload} ({', '.join(dict.fromkeys(mg.grids))})"
        each = ", ".join(f"{mg.metric.fmt(mg.cells[p].median)} at {_ms(hbs[p] or 0)}"
                         for p in sorted(ps, key=lambda p: -(hbs[p] or 0)))
        n = len(set(hbs.values()))
        found.append((0 if scenario == "scale-out" else 1, -n, len(found),
                      f"KIP-848's consumer:uniform ran at {n} intervals in {where}: "
                      f"excess lag {each} (medians)"))
    return min(found)[3] if found else ""


def with_heartbeat_condition(found: Sequence[Claim], verdicts: Sequence[GridVerdict]
                             ) -> list[Claim]:
    """The sentences on task downtime or lag of a grid that compares an eager protocol with an
    incremental cooperative one (not a crash: no member revokes there) with
    :func:`heartbeat_gap_clause` among their conditions: the page states it once, lettered."""
    clause = heartbeat_gap_clause(verdicts)
    if not clause:
        return list(found)
    out = []
    for c in found:
        g = next((v for v in verdicts if v.name == c.grid), None)
        if (g is not None and c.metric in HEARTBEAT_GAP_METRICS and "crash" not in c.scenario
                and any(is_eager(_base_label(p)) for p in g.protocols)
                and any(_incremental_classic(p) for p in g.protocols)):
            c = replace(c, conditions=(*c.conditions, clause))
            wait = crossover_heartbeat_wait(c, verdicts)
            if wait:
                c = replace(c, conditions=(*c.conditions, wait))
        out.append(c)
    return out


def crossover_heartbeat_wait(c: Claim, verdicts: Sequence[GridVerdict]) -> str:
    """For a crossover sentence (a grid that sweeps the load or the task times) where eager
    is marked best at some values: how much of the cost of the protocols eager beats there is
    the heartbeat wait, from the grid's shortest-interval columns (``classic:cooperative@hb1s``
    beside ``classic:cooperative``): each one's median at its default interval and at the
    short one, summed over those values, the share the short interval removes; eager's own at
    both; and at how many of those values eager's median is still the lowest at the short
    interval. "" where the grid has no such columns or eager is marked best nowhere."""
    if not c.head or c.workload:
        return ""
    g = next((v for v in verdicts if v.name == c.grid), None)
    if g is None or g.parameter is None or g.labels:  # not a grid that sweeps a timing
        return ""
    rows = sorted((r for r in g.rows if r.scenario == c.scenario and r.size == c.size
                   and r.x is not None), key=lambda r: r.x or 0.0)
    won: list[tuple[VerdictRow, MetricVerdict, str]] = []
    for r in rows:
        mv = next((x for x in r.metrics if x.metric.column == c.metric), None)
        if mv is None or mv.verdict not in ("best", "tied") or not mv.beaten \
                or mv.limit.startswith("is won"):
            continue
        eager = next((p for p in mv.best if "@" not in p and is_eager(p)), None)
        if eager is not None:
            won.append((r, mv, eager))
    if not won:
        return ""
    m = won[0][1].metric
    # each row's cells over every grid that runs it (a grid of @hb columns beside this one)
    merged = _merged_cells(verdicts)
    won = [(r, replace(mv, cells={**merged[(r.scenario, r.size, r.workload, c.metric)].cells,
                                  **mv.cells}), e) for r, mv, e in won]
    # the shortest interval any column of those rows ran (1 s beside a 3 s variant)
    shorts = {v[1] for _, mv, _ in won for lb in mv.cells
              if (v := _interval_variant(lb)) is not None and v[0] in mv.cells}
    if not shorts:
        return ""
    short = min(shorts)
    x_name, x_unit = X_NAMES.get(g.parameter or "", (g.parameter or "", ""))
    at = ", ".join(number(r.x or 0.0) for r, _, _ in won) + x_unit

    def default_of(r: VerdictRow, base: str) -> float | None:
        st = r.settings or g.settings
        return _heartbeat(st.get(base) or g.settings.get(base, {}), base, HEARTBEAT_SETTING)

    losers: list[str] = []
    own: list[str] = []
    labels = sorted({lb for _, mv, _ in won for lb in mv.cells})
    for label in labels:
        var = _interval_variant(label)
        if var is None or var[1] != short:
            continue
        base = var[0]
        pairs = [(mv.cells[base].median, mv.cells[label].median) for _, mv, _ in won
                 if base in mv.cells and label in mv.cells]
        default = default_of(won[0][0], base)
        if len(pairs) != len(won) or default is None or default <= short:
            continue
        d, s = sum(a for a, _ in pairs), sum(b for _, b in pairs)
        text = f"{base} {m.fmt(s)} against {m.fmt(d)} at {_ms(default)}"
        if is_eager(base):
            own.append(text)
        else:
            cut = f" ({number(100.0 * (d - s) / d)} % less)" if d > 0 else ""
            losers.append(text + cut)
    if not losers:
        return ""
    out = (f"the heartbeat wait in eager's win ({g.name}, {c.scenario}, {x_name} {at}, where "
           f"eager is marked best): with the members' heartbeat at {_ms(short)} (the @hb "
           f"columns, the same seeds), {short_label(m, excess=True)} summed over those values "
           "(medians) is " + ", ".join(losers))
    if own:
        out += "; eager's own: " + ", ".join(own)
        still = 0
        for _, mv, _ in won:
            # the marked eager protocol that also ran at the short interval
            e_short = next((mv.cells[lb].median for e in mv.best for lb in mv.cells
                            if _interval_variant(lb) == (e, short)), None)
            others = [mv.cells[lb].median for lb in mv.cells
                      if (v := _interval_variant(lb)) is not None and v[1] == short
                      and not is_eager(v[0])]
            if e_short is not None and others and all(
                    (e_short < v) == m.lower_is_better for v in others):
                still += 1
        named = ", ".join(dict.fromkeys(lb.partition(" ")[0] for lb in own))
        out += (f"; at {_ms(short)} an eager protocol's median ({named}) is still the "
                f"lowest at {still} of those {len(won)} values")
    return out


def split_branch_cause(scenario: str, size: int, protocol: str,
                       runs: Sequence[Mapping[str, Any]], workload: str | None = None) -> str:
    """What decides which outcome a split Connect cell takes (a sessioned join): each old
    worker revokes its share of the moved tasks through Kafka's start/stop pool, one stop time
    per ``start.stop.threads`` of them, and the follow-up round (KIP-415) starts at the next
    heartbeat after that revocation, so a revocation about as long as the heartbeat interval
    catches that heartbeat on some seeds (the heartbeat phase) and waits one more on others.
    From the runs: the task restarts over the old workers, the stop time, the pool's size,
    the heartbeat; where the runs also have the cell at other stop times (the same start
    time), where the edge lies (:func:`stop_time_edge`). "" when the runs do not have them."""
    same = [r for r in runs if r.get("scenario") == scenario and int(r.get("size") or 0) == size
            and str(r.get("protocol")) == protocol]
    mine = [r for r in same if workload is None or r.get("workload") == workload]
    if not mine or size <= 0:
        return ""
    tt = task_times(mine[0])
    st = run_settings(mine[0])
    threads, hb = st.get("start.stop.threads"), st.get("heartbeat.interval.ms")
    restarts = [float(r["task_restarts"]) for r in mine if r.get("task_restarts") is not None]
    if tt is None or not isinstance(threads, int | float) or threads <= 0 or not restarts \
            or not isinstance(hb, int | float):
        return ""
    each = statistics.median(restarts) / size
    batches = -(-round(each) // int(threads))
    text = (f"each of the {size} old workers stops about {number(round(each))} tasks, "
            f"{int(threads)} at a time, so its revocation takes about {batches} stops of "
            f"{_ms(tt.stop_ms)}, {_ms(batches * tt.stop_ms)}, against the {_ms(float(hb))} "
            "heartbeat interval: the follow-up round starts at the next heartbeat after the "
            "revocation, so the heartbeat's phase decides whether it catches the earlier "
            "heartbeat (the low outcome) or waits one more (the high one)")
    edge = stop_time_edge(mine, same, tt, batches)
    return text + ("; " + edge if edge else
                   "; the stop time was not swept around this edge in these runs")


def stop_time_edge(cell: Sequence[Mapping[str, Any]], same: Sequence[Mapping[str, Any]],
                   tt: TaskTimes, batches: int,
                   column: str = "task_downtime_task_s") -> str:
    """Where a split Connect cell's edge lies, from the runs of the same scenario, size and
    protocol at other task stop times (the same start time): per stop time, how many seeds
    take the cell's low outcome and how many its high one (each seed's value nearest to which
    outcome's median), and the edge between the longest stop at which every seed is low and
    the shortest at which every seed is high. "" without such runs or without a split."""
    from groupcoord.lab.verdict import modes

    m = BY_COLUMN[column]
    vals = [float(r[column]) for r in cell if r.get(column) is not None]
    outcomes = modes(vals, m) if len(vals) >= 3 else []
    if len(outcomes) != 2:
        return ""
    low, high = sorted(statistics.median(o) for o in outcomes)
    # one value per seed and stop time (a grid may run the model's default stop time under
    # two workloads' names on the same seeds)
    seen: dict[tuple[float, Any], float] = {}
    for r in same:
        t = task_times(r)
        if t is None or t.start_ms != tt.start_ms or r.get(column) is None:
            continue
        seen.setdefault((t.stop_ms, r.get("seed")), float(r[column]))
    by_stop: dict[float, list[float]] = defaultdict(list)
    for (stop, _), v in seen.items():
        by_stop[stop].append(v)
    if len(by_stop) < 2:
        return ""
    parts = []
    all_low: list[float] = []
    all_high: list[float] = []
    for stop in sorted(by_stop):
        vs = by_stop[stop]
        lo = [v for v in vs if abs(v - low) <= abs(v - high)]
        hi = [v for v in vs if abs(v - low) > abs(v - high)]
        if not hi:
            all_low.append(stop)
            parts.append(f"{_ms(stop)} {m.fmt(statistics.median(lo))} on {len(lo)} of "
                         f"{len(vs)} seeds (low)")
        elif not lo:
            all_high.append(stop)
            parts.append(f"{_ms(stop)} {m.fmt(statistics.median(hi))} on {len(hi)} of "
                         f"{len(vs)} seeds (high)")
        else:
            parts.append(f"{_ms(stop)} {m.fmt(statistics.median(lo))} on {len(lo)} and "
                         f"{m.fmt(statistics.median(hi))} on {len(hi)} of {len(vs)} seeds")
    text = ("the stop time swept at these workers (the same seeds, task start "
            f"{_ms(tt.start_ms)}): " + "; ".join(parts))
    below = [x for x in all_low if not any(h <= x for h in all_high)]
    above = [x for x in all_high if not any(lo >= x for lo in all_low)]
    if below and above and max(below) < min(above):
        a, b = max(below), min(above)
        text += (f": the edge lies between {_ms(a)} and {_ms(b)} of stop time ({batches} stops: "
                 f"{_ms(batches * a)} and {_ms(batches * b)} of revocation)")
    return text


def connect_leaves_out(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """What task downtime leaves out of a Connect row, and how many rebalances the runs make
    of a connector's creation, read from the runs (kip415-connector-added under
    classic-connect:eager, where every rebalance stops every task: its task restarts over the
    group's tasks). Kafka's herder rebalances twice (the connector's config, then its task
    configs once it has started: DistributedHerder's onConnectorConfigUpdate and
    onTaskConfigUpdate). Empty without Connect runs."""
    connect = [r for r in runs if family(str(r.get("protocol"))) in ("connect", "classic-connect")]
    if not connect:
        return []
    out = ["A sink task's restart also rebalances its connector's own consumer group (the "
           "task's consumer leaves and rejoins it); task downtime counts the task not running, "
           "not that group's rebalance, so a protocol that restarts more tasks costs more than "
           "the tables show, in every sink connector's group."]
    added = [r for r in connect if r.get("scenario") == "kip415-connector-added"
             and r.get("protocol") == "classic-connect:eager" and r.get("ok")
             and r.get("task_restarts") is not None]
    if added:
        total = int((added[0].get("connectors") or 0) * (added[0].get("tasks") or 0))
        restarts = statistics.median(float(r["task_restarts"]) for r in added)
        if total:
            rounds = restarts / total
            out.append(
                "A connector's creation: these runs make it "
                f"{number(rounds)} rebalance{'s' if rounds != 1 else ''} that "
                f"stop{'s' if rounds == 1 else ''} every task "
                f"under eager (kip415-connector-added, classic-connect:eager: {number(restarts)} "
                f"task restarts, median, of the group's {total:,} tasks); Kafka's herder "
                "rebalances twice (the connector's config, then its task configs once it has "
                "started), and eager stops every task in both.")
    return out


__all__ = [
    "ASSIGNORS",
    "BUSY_LIMIT",
    "HEARTBEAT_GAP_METRICS",
    "METADATA_EVENTS",
    "MOVING_DOWNTIME",
    "OWN_PHASE",
    "TASK_POOL",
    "WINDOW_LAGS",
    "Load",
    "TaskTimes",
    "attach_balance_after_last",
    "attach_moving_downtime",
    "balance_after_last",
    "busiest_partitions",
    "condition_clauses",
    "conditions",
    "connect_leaves_out",
    "connect_mechanisms",
    "crossover_heartbeat_wait",
    "downtime_per_move",
    "event_kinds",
    "heartbeat_gap_clause",
    "heartbeat_gap_detail",
    "is_eager",
    "mechanisms",
    "member_load",
    "metadata_mechanism",
    "phase_clause",
    "row_loads",
    "split_branch_cause",
    "stop_time_edge",
    "swept_gaps",
    "task_time_phase",
    "task_times",
    "window_split",
    "with_conditions",
    "with_heartbeat_condition",
]
