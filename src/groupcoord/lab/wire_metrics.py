"""The lab's metrics (docs/lab.md "Metrics") computed from what real clients logged.

Input: a :class:`~groupcoord.lab.wire_run.WireRun` — per member the records it processed (end
time, resource, offset) and its rebalance callbacks, per resource what was produced when, the
members' process lifetimes and the disturbance windows. Output: one dict per window with the
simulator's names (``time_to_converge_ms``, ``records_processed``, ``lag_peak``,
``lag_record_s``, ``stall_ms``, ``paused_partition_s``, ``records_reprocessed``,
``task_restarts``, ``resources_moved``).

Definitions, as the simulator's (METRICS.md), measured from the client side:

- *ownership*: a member owns a resource from the callback that assigns it until the one that
  revokes or loses it, or until its process closes (its ``closed`` line) or is killed.
- *converged*: every resource has exactly one live owner (a partition added during the run
  counts from when it was added; a deleted connector's tasks must have been released by whoever
  held them, as the simulator's group has rebalanced without them), every live member has had
  its first assignment callback (or, in a KIP-848 group, an ``idle`` line: the coordinator
  described it at the target assignment epoch owning nothing, ``lab.wire_idle``; librdkafka
  calls no callback for an empty first assignment), in a KIP-848 group the coordinator's members
  are the live processes, every one at the group's epoch (ConsumerGroupDescribe, as the share
  wire asks of a share group; ``lab.wire_idle``), and every live member owns at least the sum
  over the kinds of resource (topics; for Connect, connectors and tasks) of the floor of its
  share of that kind (range gives each member that much per topic; the sticky and uniform
  assignors balance the total, which is at least as much). A window's convergence is the first
  moment, not before the disturbance ended (its ``settle``), from which that holds for
  ``HOLD_S`` (or until the run ends); windows may overlap, as the simulator's do.
  ``time_to_converge_ms`` counts from the disturbance's start, as the simulator does.
- *lag(t)*: records produced up to t minus the highest position processed up to t (offset + 1),
  summed over resources; ``lag_peak`` its maximum in the window, ``lag_record_s`` its integral.
- *busy*: a member is busy on a record from its end time minus ``processing_ms`` to its end
  time. Real clients also wait for fetches between records (``fetch.wait.max.ms``, the poll
  timeout), so a member counts as *active* until ``IDLE_TOLERANCE_S`` after its last record.
- ``stall_ms``: time with lag > 0 in which no live member owned a resource (the simulator's
  stall: no processor had anything to process; a member that keeps up and waits between
  batches is working, as there); for Connect, owned a task that had started since it was
  assigned (a task starting or stopping processes nothing, as the simulator's). It is the
  eager barrier: from the last member's revocation callback to the first assignment callback
  (for Connect: to the first task started); a crashed member's partitions waiting for its
  session to expire are lag, not a stall, while the others own theirs. (Until 2026-11-28 it
  was time with lag and no member *active*, within ``IDLE_TOLERANCE_S`` of a record: that
  hid any stall shorter than the tolerance, an eager rebalance's tens of milliseconds, and
  counted members that kept up at a low rate and waited more than the tolerance for their
  next record, 6-12 s in crash windows where every member owned its partitions.)
- ``paused_partition_s``: resource·seconds owned by a member that was not active while the
  resource had lag (revocation pending, waiting at a rejoin barrier, warm-up).
- ``records_reprocessed``: records processed when their (resource, offset) had been processed
  before, counted in the window of the assignment that made the member process them (the
  simulator counts them at that assignment: the new owner's start from the committed
  position), even when it processes them after the window closed, as it does when the group
  converges at that assignment's callback; ``task_restarts``: Connect tasks started again
  after a first start.

Metrics of a window cover [disturbance start, convergence] (the window's close, as the
simulator closes it), or up to the end of the run when the window never converged.
The functions sample the run every ``SAMPLE_S`` (lag, activity and ownership are step functions
of time; 10 ms is far below any interval they are compared at).

Written by hand: it is a few step functions over logs; no library computes these.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

import numpy as np

from groupcoord.lab.wire_run import WireRun, iter_records

SAMPLE_S = 0.01
#: Gap after a member's last record during which it still counts as active (fetch wait 50 ms
#: plus the 100 ms poll timeout of the member's loop, with margin).
IDLE_TOLERANCE_S = 0.25
#: How long the group must stay converged for a window to close (a state that lasts less is a
#: step of a rebalance, not its end).
HOLD_S = 1.0


# ----------------------------------------------------------------------------- ownership


def _changes(run: WireRun) -> list[tuple[float, str, str, list[str]]]:
    """(t, member, event, resources) of every ownership change, in time order."""
    out: list[tuple[float, str, str, list[str]]] = []
    for name, events in run.logs.items():
        for d in events:
            e = d["e"]
            if e in ("assign", "revoke", "lost"):
                parts = [p if isinstance(p, str) else f"{p[0]}-{p[1]}" for p in d["parts"]]
                out.append((float(d["t"]), name, e, parts))
            elif e in ("start", "closed", "idle"):
                out.append((float(d["t"]), name, e, []))
    out.sort(key=lambda c: c[0])
    return out


def _alive(run: WireRun, name: str, t: float) -> bool:
    return any(s <= t and (e is None or t < e) for s, e in run.lifetimes.get(name, ()))


def _converged_state(run: WireRun, t: float, owned: dict[str, set[str]],
                     joined: set[str]) -> bool:
    live = [n for n in run.lifetimes if _alive(run, n, t)]
    if not live:
        return False
    owners: dict[str, int] = defaultdict(int)
    for n in live:
        if n not in joined:
            return False
        for r in owned.get(n, ()):
            if r in run.until and not run.exists(r, t):
                return False  # a deleted connector's task still held: not released yet
            owners[r] += 1
    groups = [[r for r in g if run.exists(r, t)] for g in run.item_groups]
    if any(owners.get(r, 0) != 1 for g in groups for r in g):
        return False
    share = sum(len(g) // len(live) for g in groups)
    if not all(len(owned.get(n, ())) >= share for n in live):
        return False
    if run.described:  # KIP-848: the coordinator's members are the live processes, settled
        k = bisect.bisect_right(run.described, t, key=lambda d: d[0]) - 1
        return k >= 0 and run.described[k][1] and sorted(run.described[k][2]) == sorted(live)
    return True


def _states(run: WireRun, until: float) -> list[tuple[float, bool, dict[str, set[str]]]]:
    """(t, converged after the changes at t, ownership) at every change time and every
    process start or stop, up to ``until``."""
    owned: dict[str, set[str]] = defaultdict(set)
    joined: set[str] = set()
    times: list[tuple[float, str, str, list[str]]] = list(_changes(run))
    for name, spans in run.lifetimes.items():
        for began, ended in spans:
            times.append((began, name, "alive", []))
            if ended is not None:
                times.append((ended, name, "alive", []))
    times += [(t, "", "added", []) for t in (*run.since.values(), *run.until.values())]
    times += [(t, "", "described", []) for t, _, _ in run.described]
    times.sort(key=lambda c: c[0])
    out: list[tuple[float, bool, dict[str, set[str]]]] = []
    i = 0
    while i < len(times) and times[i][0] <= until:
        t = times[i][0]
        while i < len(times) and times[i][0] == t:
            _, name, what, parts = times[i]
            if what == "assign":
                owned[name].update(parts)
                joined.add(name)
            elif what == "idle":  # the coordinator saw it reconciled owning nothing
                joined.add(name)
            elif what in ("revoke", "lost"):
                owned[name].difference_update(parts)
            elif what in ("start", "closed"):
                owned[name].clear()
                joined.discard(name)
            i += 1
        out.append((t, _converged_state(run, t + 1e-9, owned, joined),
                    {n: set(v) for n, v in owned.items()}))
    return out


def converged_now(run: WireRun) -> bool:
    """Whether the group is converged at the end of ``run`` (the harness polls this)."""
    states = _states(run, run.end)
    return bool(states) and states[-1][1]


def convergence(run: WireRun) -> list[float | None]:
    """Per window, the wall-clock time it converged (None: it did not): the first moment, not
    before the disturbance ended, from which the group stays converged for ``HOLD_S`` (or to
    the end of the run). Windows may overlap, as the simulator's do: a window closes when the
    group next converges, whatever disturbances came meanwhile."""
    states = _states(run, run.end)
    times = [t for t, _, _ in states]
    out: list[float | None] = []
    for w in run.windows:
        settle = run.t0 + w.settle_s
        k = bisect.bisect_right(times, settle) - 1
        seq = [(settle, states[k][1] if k >= 0 else False)] + [
            (t, ok) for t, ok, _ in states[k + 1:]]
        found: float | None = None
        since: float | None = None
        for t_change, ok in seq:
            if since is not None and t_change - since >= HOLD_S:
                found = since
                break
            if ok and since is None:
                since = t_change
            elif not ok:
                since = None
        if found is None and since is not None:
            found = since  # converged until the end of the run
        out.append(found)
    return out


def resources_moved(run: WireRun, start: float, end: float) -> int:
    """Assignments in [start, end) of a resource to a member other than its previous owner."""
    last: dict[str, str] = {}
    moved = 0
    for t, name, e, parts in _changes(run):
        if e != "assign":
            continue
        for r in parts:
            if start <= t < end and last.get(r) not in (None, name):
                moved += 1
            last[r] = name
    return moved


# ----------------------------------------------------------------------------- sampled series


class Series:
    """The run sampled every ``SAMPLE_S``: lag per resource, each member's activity and
    ownership."""

    def __init__(self, run: WireRun) -> None:
        self.run = run
        self.times = np.arange(run.t0, run.end, SAMPLE_S)
        n = len(self.times)
        res = run.resources
        index = {r: i for i, r in enumerate(res)}
        produced = np.zeros((len(res), n))
        for r, steps in run.produced.items():
            if r in index and steps:
                ts = np.array([s[0] for s in steps])
                cum = np.array([s[1] for s in steps], dtype=float)
                k = np.searchsorted(ts, self.times, side="right") - 1
                produced[index[r]] = np.where(k >= 0, cum[np.clip(k, 0, None)], 0.0)
        if not run.produced and run.rate > 0:  # Connect: sources producing since source_start
            produced[:] = np.floor(np.clip(self.times - run.source_start, 0, None) * run.rate)
        # the highest position processed (offset + 1) per resource, at the times it grows
        highest: dict[str, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
        seen: set[tuple[str, int]] = set()
        self.records: list[tuple[float, str, str, int, bool]] = []  # t, member, res, off, again
        #: per record processed again, the time of the assignment it followed (records_reprocessed)
        self.again_assigned: list[float] = []
        assigned: dict[tuple[str, str], list[float]] = defaultdict(list)
        for t_a, name, e, parts in _changes(run):
            if e == "assign":
                for r in parts:
                    assigned[(name, r)].append(t_a)
        for t, member, r, off in sorted(iter_records(run)):
            again = (r, off) in seen
            seen.add((r, off))
            if again:
                given = assigned.get((member, r), [])
                i_a = bisect.bisect_right(given, t) - 1
                self.again_assigned.append(given[i_a] if i_a >= 0 else t)
            grown, pos = highest[r]
            if not pos or off + 1 > pos[-1]:
                grown.append(t)
                pos.append(off + 1)
            self.records.append((t, member, r, off, again))
        processed = np.zeros((len(res), n))
        for r, (grown, pos) in highest.items():
            if r in index:
                k = np.searchsorted(np.array(grown), self.times, side="right") - 1
                processed[index[r]] = np.where(k >= 0, np.array(pos)[np.clip(k, 0, None)], 0)
        self.lag = np.clip(produced - processed, 0, None)  # (resources, samples)
        for r, ended in run.until.items():  # a deleted connector's tasks have no lag
            if r in index:
                self.lag[index[r], self.times >= ended] = 0.0
        self.total_lag = self.lag.sum(axis=0)
        p = run.processing_ms / 1000
        self.active: dict[str, np.ndarray] = {}
        for name in run.lifetimes:
            act = np.zeros(n, dtype=bool)
            for t, member, _r, _o, _a in self.records:
                if member != name:
                    continue
                lo = np.searchsorted(self.times, t - p, side="left")
                hi = np.searchsorted(self.times, t + IDLE_TOLERANCE_S, side="right")
                act[lo:hi] = True
            self.active[name] = act
        self.owned: dict[str, np.ndarray] = {}  # member -> (resources, samples) bool
        states = _states(run, run.end)
        st = np.array([s[0] for s in states]) if states else np.zeros(0)
        k = np.searchsorted(st, self.times, side="right") - 1
        for name in run.lifetimes:
            own = np.zeros((len(res), n), dtype=bool)
            for j, (_t, _ok, owned) in enumerate(states):
                mine = owned.get(name, set())
                if not mine:
                    continue
                cols = k == j
                for r in mine:
                    if r in index:
                        own[index[r], cols] = True
            self.owned[name] = own
        self.working = self._working(index)

    def _working(self, index: dict[str, int]) -> np.ndarray:
        """Per sample, whether any live member has something to process: owns a partition
        (consumers), or owns a Connect task that has started since it was assigned (the
        worker's ``task-start`` line comes once the task's start time passed; a revoked task
        is stopping, not running), as the simulator's processors work on active resources
        only."""
        n = len(self.times)
        out = np.zeros(n, dtype=bool)
        if self.run.kind != "connect":
            for own in self.owned.values():
                out |= own.any(axis=0)
            return out
        assigned: dict[tuple[str, str], list[float]] = defaultdict(list)
        for t, name, e, parts in _changes(self.run):
            if e == "assign":
                for r in parts:
                    assigned[(name, r)].append(t)
        started: dict[tuple[str, str], list[float]] = defaultdict(list)
        for name, events in self.run.logs.items():
            for d in events:
                if d["e"] == "task-start":
                    started[(name, str(d["tp"]))].append(float(d["t"]))
        for name, own in self.owned.items():
            for r, i in index.items():
                if not own[i].any():
                    continue
                a = np.array(sorted(assigned.get((name, r), ())))
                st = np.array(sorted(started.get((name, r), ())))
                if not len(st):
                    continue
                ka = np.searchsorted(a, self.times, side="right") - 1
                ks = np.searchsorted(st, self.times, side="right") - 1
                last_a = np.where(ka >= 0, a[np.clip(ka, 0, None)] if len(a) else 0.0, -np.inf)
                last_s = np.where(ks >= 0, st[np.clip(ks, 0, None)], -np.inf)
                out |= own[i] & (last_s >= last_a)
        return out

    def window(self, start: float, end: float) -> dict[str, Any]:
        sel = (self.times >= start) & (self.times < end)
        lag = self.total_lag[sel]
        paused = 0.0
        for name, act in self.active.items():
            a = act[sel]
            waiting = self.owned[name][:, sel] & (self.lag[:, sel] > 0) & ~a
            paused += float(waiting.sum()) * SAMPLE_S
        stall = float(((lag > 0) & ~self.working[sel]).sum()) * SAMPLE_S
        recs = [r for r in self.records if start <= r[0] < end]
        again = sum(1 for a in self.again_assigned if start <= a <= end)
        restarts = 0
        if self.run.kind == "connect":
            started: set[str] = set()
            for name, events in self.run.logs.items():
                del name
                for d in events:
                    if d["e"] == "task-start":
                        if d["tp"] in started and start <= d["t"] < end:
                            restarts += 1
                        started.add(d["tp"])
        return {
            "records_processed": len(recs),
            "lag_peak": int(lag.max()) if len(lag) else 0,
            "lag_record_s": round(float(lag.sum()) * SAMPLE_S, 1),
            "stall_ms": round(stall * 1000),
            "paused_partition_s": round(paused, 2),
            "records_reprocessed": again,
            "task_restarts": restarts,
        }


def window_metrics(run: WireRun) -> list[dict[str, Any]]:
    """One dict per disturbance window (see the module doc)."""
    series = Series(run)
    conv = convergence(run)
    out: list[dict[str, Any]] = []
    for i, w in enumerate(run.windows):
        start = run.t0 + w.at_s
        c = conv[i]
        end = c if c is not None else run.end
        row: dict[str, Any] = {
            "disturbance": w.label, "at_ms": round(w.at_s * 1000),
            "settled_ms": round(w.settle_s * 1000), "converged": c is not None,
            "time_to_converge_ms": None if c is None else round((c - start) * 1000),
            "resources_moved": resources_moved(run, start, end)}
        row.update(series.window(start, max(end, start + SAMPLE_S)))
        out.append(row)
    return out


def steady_lag(run: WireRun, series: Series | None = None) -> float:
    """Median lag (records) over the second half of the stable period before the first
    disturbance (the first half may still be catching up after the initial join): what the
    clients' fetch latency and processing keep in flight without any rebalance."""
    if len(run.windows) < 2:
        return 0.0
    conv = convergence(run)
    start = conv[0]
    end = run.t0 + run.windows[1].at_s
    if start is None or end - start < 2.0:
        return 0.0
    series = series or Series(run)
    sel = (series.times >= (start + end) / 2) & (series.times < end)
    return float(np.median(series.total_lag[sel])) if sel.any() else 0.0


__all__ = [
    "IDLE_TOLERANCE_S",
    "SAMPLE_S",
    "Series",
    "converged_now",
    "convergence",
    "resources_moved",
    "steady_lag",
    "window_metrics",
]
