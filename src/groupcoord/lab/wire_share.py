"""Share groups (KIP-932) on the wire: a lab scenario played with real share consumers.

:func:`run_share_wire` plays a share scenario (``sim.scenario``, as ``lab.runs.build_scenario``
makes it for ``share:simple``) in wall-clock time against ``groupcoord serve --storage memory``
with the group's share settings as broker configs (``group.share.*``: heartbeat, session,
assignment interval, record lock duration, delivery count limit), one
:mod:`groupcoord.lab.wire_share_member` process per member (confluent-kafka's ``ShareConsumer``)
and the calibration's producer (``lab.wire``: ``records_per_s`` to every partition from the
scenario's start). Events: ``bounce`` and ``rolling-bounce`` (SIGTERM: the member
releases what it has not processed, closes and leaves; a new process ``down_ms`` later;
``hard``: SIGKILL), ``kill`` (SIGKILL: the host closes the process's connections, so the
server ends its share session and releases what it had acquired at once, as Kafka 4.1+; its
membership waits for the session timeout: the simulator's ``kill``), ``crash`` (SIGSTOP,
``lab.wire._Members.hang``: the simulator's lost host; nothing closes, so what the process had
acquired waits for ``share.record.lock.duration.ms`` and its membership for the session
timeout; the process is killed only when the run is over; ``lost_host=False`` plays it as
SIGKILL, as the wire did before 2026-11-29), ``leave``, ``scale-in``,
``scale-out``; a member ``@owner`` is the simulator's draw among the live members
(``sim.scenario.pick_owner``). ``control=True``
plays the initial members only (the paired control: the same seed, the same start phases, no
disturbance) until ``until_s``.

A share consumer has no rebalance callback: who is a member with what comes from the
coordinator. A thread polls ShareGroupDescribe every ``DESCRIBE_EVERY_S`` and records whether
the group is *converged* as the simulator's share group is (``ShareSimulation.converged``):
the assignment epoch at the group epoch, every member at the group epoch, and the members'
client ids exactly the live processes' names (a crashed process's member counts until the
session timeout removes it).

The metrics (:func:`share_window_metrics`, pure: tested on synthetic logs), with the
simulator's definitions (``sim.share``): a record is *done* at the end of the batch that
processed it (its acknowledgement goes with the next poll); lag(t) = records produced minus
distinct records done up to t; a window runs from the disturbance until the group has
converged (held ``HOLD_S``) and then caught up (lag back at or under its peak over the
``STEADY_S`` before the disturbance), or ``sim.application.RECOVERY_WAIT_MS`` after the
convergence if it does not catch up (members that cannot keep up never do: the simulator's
rule, ``sim.share.may_end``), or the run's end; ``time_to_converge_ms`` counts from
the disturbance to the convergence; ``lag_peak`` and ``lag_record_s`` (the lag's integral)
over the window; ``records_reprocessed``: records done again in the window after a first
time (a member that processed a batch and did not get its acknowledgement in before the lock
expired, or was killed before sending it).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groupcoord.lab.wire import (
    MEMBER,
    PRESTART_S,
    WireError,
    WireWorkload,
    _actions,
    _Members,
    _Proc,
    _Producer,
    _read_jsonl,
    _sleep_until,
    create_topics,
    start_server,
)
from groupcoord.lab.wire_run import WireWindow
from groupcoord.sim.application import RECOVERY_WAIT_MS
from groupcoord.sim.scenario import Scenario

SHARE_MEMBER = [MEMBER[0], "-m", "groupcoord.lab.wire_share_member"]
PROTOCOL = "share:simple"
DESCRIBE_EVERY_S = 0.2
SAMPLE_S = 0.05
HOLD_S = 1.0
STEADY_S = 20.0
#: The events a share scenario plays on the wire.
SHARE_EVENTS = ("bounce", "rolling-bounce", "crash", "kill", "leave", "scale-in", "scale-out")


def share_server_configs(settings: Mapping[str, int]) -> dict[str, str]:
    """The broker configs for a share group at ``settings`` (``sim.settings.effective_settings``
    of ``share:simple``: Kafka's ``group.share.*`` names), their bounds widened to include
    them, as the simulator's coordinator gets them."""
    hb = int(settings["group.share.heartbeat.interval.ms"])
    session = int(settings["group.share.session.timeout.ms"])
    lock = int(settings["group.share.record.lock.duration.ms"])
    limit = int(settings["group.share.delivery.count.limit"])
    return {
        "group.share.heartbeat.interval.ms": str(hb),
        "group.share.min.heartbeat.interval.ms": str(min(hb, 5_000)),
        "group.share.max.heartbeat.interval.ms": str(max(hb, 15_000)),
        "group.share.session.timeout.ms": str(session),
        "group.share.min.session.timeout.ms": str(min(session, 45_000)),
        "group.share.max.session.timeout.ms": str(max(session, 60_000)),
        "group.share.assignment.interval.ms": str(settings["group.share.assignment.interval.ms"]),
        "group.share.record.lock.duration.ms": str(lock),
        "group.share.min.record.lock.duration.ms": str(min(lock, 15_000)),
        "group.share.max.record.lock.duration.ms": str(max(lock, 60_000)),
        "group.share.delivery.count.limit": str(limit),
        "group.share.min.delivery.count.limit": str(min(limit, 2)),
        "group.share.max.delivery.count.limit": str(max(limit, 10)),
    }


@dataclass(slots=True)
class ShareWireRun:
    """What a share run on the wire logged (times: wall-clock seconds)."""

    t0: float
    end: float
    windows: list[WireWindow]
    #: partition key ("topic-p") -> [(t, cumulative produced)]
    produced: dict[str, list[tuple[float, int]]]
    #: member name -> its log lines (``wire_share_member``'s), in time order
    logs: dict[str, list[dict[str, Any]]]
    #: member name -> [(start, stop)] of its processes
    lifetimes: dict[str, list[tuple[float, float | None]]]
    #: (t, epochs settled, client ids of the members) from ShareGroupDescribe
    described: list[tuple[float, bool, tuple[str, ...]]]
    server_config: dict[str, str] = field(default_factory=dict)
    #: (t, client id -> the partitions ("topic-p") of its member's current assignment) from
    #: the same ShareGroupDescribe answers: what the member has heartbeated
    assigned: list[tuple[float, dict[str, tuple[str, ...]]]] = field(default_factory=list)


# ----------------------------------------------------------------------------- metrics


def _alive(run: ShareWireRun, name: str, t: float) -> bool:
    return any(s <= t and (e is None or t < e) for s, e in run.lifetimes.get(name, ()))


def converged_at(run: ShareWireRun) -> list[tuple[float, bool]]:
    """(t, converged) at every ShareGroupDescribe answer (see the module doc)."""
    out = []
    for t, settled, clients in run.described:
        live = sorted(n for n in run.lifetimes if _alive(run, n, t))
        out.append((t, settled and bool(live) and sorted(clients) == live))
    return out


def done_times(run: ShareWireRun) -> tuple[dict[tuple[int, int], float], list[tuple[float, int, int]]]:
    """Each record's first done time by (partition, offset), and every completion
    (t, partition, offset) in time order."""
    completions: list[tuple[float, int, int]] = []
    for lines in run.logs.values():
        for d in lines:
            if d.get("e") == "batch":
                completions += [(float(d["t"]), int(r[0]), int(r[1])) for r in d["recs"]]
    completions.sort()
    first: dict[tuple[int, int], float] = {}
    for t, p, o in completions:
        first.setdefault((p, o), t)
    return first, completions


def start_offsets(run: ShareWireRun) -> dict[int, int]:
    """Each partition's first offset the group delivered (the lowest done): the share group's
    start offset at its first fetch. ``share.auto.offset.reset`` is ``latest`` (KIP-932's
    default), so the records produced before a partition's first ShareFetch are never
    delivered; the simulator's group has none such. One topic (the members log partitions)."""
    first, _ = done_times(run)
    start: dict[int, int] = {}
    for p, o in first:
        start[p] = min(start.get(p, o), o)
    return start


def lag_series(run: ShareWireRun, until: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, lag) sampled every ``SAMPLE_S`` from ``t0`` to ``until`` (default: the end).
    Produced counts from each partition's start offset (:func:`start_offsets`): the records
    before it were never to be delivered, and counted they were a constant lag of the run's own
    (2 to 90 records in the rolling bounce's runs at 12 members, from how long the
    partitions waited for their first fetch) that read as an excess against the control's."""
    end = run.end if until is None else until
    ts = np.arange(run.t0, end + SAMPLE_S / 2, SAMPLE_S)
    produced = np.zeros_like(ts)
    start = start_offsets(run)
    for key, series in run.produced.items():
        if not series:
            continue
        skipped = start.get(int(key.rsplit("-", 1)[1]), 0)
        st = np.array([s[0] for s in series])
        counts = np.maximum(np.array([s[1] for s in series], dtype=float) - skipped, 0.0)
        idx = np.searchsorted(st, ts, side="right") - 1
        produced += np.where(idx >= 0, counts[np.clip(idx, 0, None)], 0.0)
    first, _ = done_times(run)
    done_t = np.sort(np.array(list(first.values()), dtype=float))
    done = np.searchsorted(done_t, ts, side="right").astype(float)
    return ts, np.maximum(produced - done, 0.0)


#: A partition whose records no member was handed for longer than this, while a live member
#: had it, was held at the record-lock limit (:func:`partitions_stopped_s`): at the share
#: cells' rates (60-300 records/s a partition) a member is handed its records every few tens of
#: milliseconds, and the machine's own stalls seen on the wire were under 1.3 s.
LOCK_GAP_S = 2.0
#: A ``crash`` window's hung process is the one whose lifetime ends this close to it
#: (:func:`lost_host_holds`).
LOST_MATCH_S = 2.0


def _unowned(run: ShareWireRun, a: float, b: float) -> dict[str, float]:
    """Per partition, the seconds from ``a`` to ``b`` with no live process whose member has it
    in its current assignment."""
    parts = sorted(run.produced)
    out = dict.fromkeys(parts, 0.0)
    for i, (t, held) in enumerate(run.assigned):
        t_next = run.assigned[i + 1][0] if i + 1 < len(run.assigned) else run.end
        lo, hi = max(t, a), min(t_next, b)
        if hi <= lo:
            continue
        owned = {k for c, ks in held.items() if _alive(run, c, t) for k in ks}
        for k in parts:
            if k not in owned:
                out[k] += hi - lo
    return out


def lock_held_s(run: ShareWireRun, a: float, b: float) -> dict[str, float]:
    """Per partition, the seconds from ``a`` to ``b`` it was held at the record-lock limit:
    gaps longer than :data:`LOCK_GAP_S` between two deliveries of its records (the members'
    ``poll`` lines: a record handed out, any delivery count), less the time inside them with
    no live member that had the partition (counted as unassigned already). Records were there
    all along at the cells' rates, so such a gap is the partition's window of
    ``group.share.partition.max.record.locks`` offsets full behind the acquired records of a
    lost host (KIP-932: the share-partition start offset cannot pass them until their lock
    expires). Runs logged before the ``poll`` lines existed give nothing."""
    handed: dict[int, list[float]] = {}
    for lines in run.logs.values():
        for d in lines:
            if d.get("e") == "poll":
                for r in d["recs"]:
                    handed.setdefault(int(r[0]), []).append(float(d["t"]))
    out: dict[str, float] = {}
    for key in sorted(run.produced):
        ts = sorted(handed.get(int(key.rsplit("-", 1)[1]), ()))
        held = 0.0
        for t1, t2 in itertools.pairwise(ts):
            if t2 - t1 <= LOCK_GAP_S:
                continue
            lo, hi = max(t1, a), min(t2, b)
            if hi > lo:
                held += max(hi - lo - _unowned(run, lo, hi).get(key, 0.0), 0.0)
        out[key] = held
    return out


def partitions_stopped_s(run: ShareWireRun, a: float, b: float) -> float | None:
    """Partition·s from ``a`` to ``b`` (wall-clock) with records there and none that can be
    delivered (the simulator's resource downtime of a share group, ``sim.share``): no live
    process whose member has the partition in its current assignment (the assignment it
    heartbeated, from the ShareGroupDescribe answers, each holding until the next), or held at
    the record-lock limit (:func:`lock_held_s`); None without any answer."""
    if not run.assigned or not run.produced:
        return None
    held = lock_held_s(run, a, b)
    return sum(_unowned(run, a, b).values()) + sum(held.values())


def lost_host_holds(run: ShareWireRun) -> list[dict[str, Any]]:
    """What each lost host (a ``crash`` window's hung process) held acquired when it stopped,
    from the members' logs: ``member``; ``in_hand``, the records of its last poll that its
    application had not finished (no ``batch`` line after it); ``since_last_batch_s``, how long
    before the stop it had finished its last batch (then it was in its next poll: its
    acknowledgements and a ShareFetch out); ``redelivered``, the records of its partitions handed
    to another member later with a delivery count of 2 or more, before the first graceful
    close (what it held, back after the lock: nothing else releases a record in these cells
    until the run's end closes its members), of which ``acquired_unseen`` were
    never handed to its application: acquired for it after its last poll returned (a ShareFetch
    it had outstanding, answered by the broker after the stop, or records waiting in its
    client's queue); ``pinned``: it held any. Real share consumers keep a ShareFetch outstanding
    whenever the application holds nothing (docs/lab.md "Share groups against real share
    consumers"), so a lost host pins its partition whether or not its application was busy.
    One entry per ``crash`` window whose hung process is found (its lifetime ends within
    :data:`LOST_MATCH_S` of the window)."""
    out: list[dict[str, Any]] = []
    for w in run.windows:
        if w.label != "crash":
            continue
        at = run.t0 + w.at_s
        hung = min(((abs(e - at), n, e) for n, lts in run.lifetimes.items() for _, e in lts
                    if e is not None and abs(e - at) <= LOST_MATCH_S), default=None)
        if hung is None:
            continue
        _, name, stop = hung
        lines = [d for d in run.logs.get(name, ()) if float(d["t"]) <= stop]
        polls = [d for d in lines if d.get("e") == "poll"]
        batches = [d for d in lines if d.get("e") == "batch"]
        last_poll = float(polls[-1]["t"]) if polls else None
        last_batch = float(batches[-1]["t"]) if batches else None
        in_hand = len(polls[-1]["recs"]) if last_poll is not None and (
            last_batch is None or last_poll > last_batch) else 0
        handed = {(int(r[0]), int(r[1])) for d in run.logs.get(name, ()) if d.get("e") == "poll"
                  for r in d["recs"]}
        mine = {int(r[0]) for d in polls[-5:] for r in d["recs"]}
        # until the first graceful close after the stop (the run's end: a closing member
        # releases what it has not processed, delivered again to the others)
        closing = min((float(d["t"]) for ls in run.logs.values() for d in ls
                       if d.get("e") == "closing" and float(d["t"]) > stop), default=run.end)
        again: set[tuple[int, int]] = set()
        for other, ls in run.logs.items():
            if other == name:
                continue
            for d in ls:
                if d.get("e") == "poll" and stop < float(d["t"]) < closing:
                    again |= {(int(r[0]), int(r[1])) for r in d["recs"]
                              if int(r[2]) >= 2 and int(r[0]) in mine}
        unseen = len(again - handed)
        out.append({"member": name, "in_hand": in_hand,
                    "since_last_batch_s": None if last_batch is None else
                    round(stop - last_batch, 3),
                    "redelivered": len(again), "acquired_unseen": unseen,
                    "pinned": in_hand > 0 or bool(again)})
    return out


def batch_in_hand_fraction(run: ShareWireRun, a: float, b: float) -> float | None:
    """The mean share of ``a`` .. ``b`` (wall-clock) that a member alive throughout had a polled
    batch in its application's hands (from a ``poll`` line to the ``batch`` line after it): the
    client side of the time a share consumer holds acquired records (the broker holds them a
    request's way longer, until the acknowledgements arrive with the next ShareFetch). None if
    no member was alive throughout."""
    shares = []
    for name, lines in run.logs.items():
        if not any(s <= a and (e is None or e >= b) for s, e in run.lifetimes.get(name, ())):
            continue
        held, since = 0.0, None
        for d in lines:
            t = float(d["t"])
            if t > b:
                break
            if d.get("e") == "poll":
                since = t
            elif d.get("e") == "batch" and since is not None:
                held += max(min(t, b) - max(since, a), 0.0)
                since = None
        if since is not None:
            held += max(b - max(since, a), 0.0)
        shares.append(held / (b - a))
    return round(sum(shares) / len(shares), 3) if shares else None


def _integral(ts: np.ndarray, lag: np.ndarray, a: float, b: float) -> float:
    m = (ts >= a) & (ts <= b)
    if m.sum() < 2:
        return 0.0
    return float(np.trapezoid(lag[m], ts[m]))


def window_end(ts: np.ndarray, lag: np.ndarray, steady: float, converged: float | None,
               run_end: float) -> tuple[float, bool, bool]:
    """Where a wire disturbance window ends (the simulator's ``sim.application`` rule), for
    the share side and the consumer side (``lab.wire_share_consumer``) alike: (the end;
    caught up; closed). The window ends when the lag is back at ``steady`` (its peak over the
    ``STEADY_S`` before the disturbance) after the group converged, or ``RECOVERY_WAIT_MS``
    after the convergence if it is not (closed, not caught up), or at the run's end
    (neither)."""
    if converged is not None:
        after = np.nonzero((ts >= converged) & (lag <= steady))[0]
        give_up = converged + RECOVERY_WAIT_MS / 1000
        if after.size and ts[after[0]] <= give_up:
            return float(ts[after[0]]), True, True
        if run_end >= give_up:
            return give_up, False, True
    return run_end, False, False


def _window_converged(conv: list[tuple[float, bool]], settle: float, end: float) -> float | None:
    """When the group converged after ``settle`` and held it ``HOLD_S`` (None: not yet)."""
    for i, (t, ok) in enumerate(conv):
        if t < settle or not ok:
            continue
        later = [c for c in conv[i:] if c[0] <= t + HOLD_S]
        if all(c[1] for c in later) and (t + HOLD_S <= conv[-1][0] or t + HOLD_S > end):
            return t
    return None


def windows_converged(run: ShareWireRun) -> bool:
    """Whether every disturbance window has converged (:func:`converged_at`, held ``HOLD_S``):
    computed from the ShareGroupDescribe answers and the lifetimes only, no member log read.
    A window cannot close before (:func:`window_end`), so the run's closing check
    (:func:`run_share_wire`) reads the logs and computes :func:`share_window_metrics` only from
    then on: that computation holds the harness's interpreter for a large part of a second
    (parsing every member's log, the lag series over every record), and the harness's
    producer is a thread of that interpreter; computed each second from the disturbance on, it
    delayed the producer's 20 ms ticks by 0.1-0.5 s every 1.5-1.8 s until the window closed
    (never in the paired control, which has no closing check), and each late tick produced
    its share of records at once: a lag peak of the harness's making."""
    conv = converged_at(run)
    return all(_window_converged(conv, run.t0 + w.settle_s, run.end) is not None
               for w in run.windows if w.label != "initial-join")


def share_window_metrics(run: ShareWireRun) -> list[dict[str, Any]]:
    """One dict per disturbance window (the initial join left out): ``disturbance``,
    ``at_ms`` (since t0), ``time_to_converge_ms`` (None: not converged), ``lag_peak``,
    ``lag_record_s``, ``records_reprocessed``, ``resource_downtime_ms`` (partitions stopped,
    :func:`partitions_stopped_s`; None without assignments), ``lag_mean_before`` (the mean lag
    over the ``STEADY_S`` before the disturbance: the run's own stock of records in flight, to
    read an excess against the control's), ``lag_peak_before`` (its peak there), ``span``
    ((start, end) seconds
    since t0: what a paired control is measured over), ``caught_up``, ``closed`` (caught up,
    or given up on)."""
    conv = converged_at(run)
    ts, lag = lag_series(run)
    _, completions = done_times(run)
    out: list[dict[str, Any]] = []
    for w in run.windows:
        if w.label == "initial-join":
            continue
        at = run.t0 + w.at_s
        converged = _window_converged(conv, run.t0 + w.settle_s, run.end)
        before = (ts >= at - STEADY_S) & (ts < at)
        steady = float(lag[before].max()) if before.any() else 0.0
        end, caught_up, closed = window_end(ts, lag, steady, converged, run.end)
        inside = (ts >= at) & (ts <= end)
        seen: set[tuple[int, int]] = set()
        again = 0
        for t, p, o in completions:
            if t > end:
                break
            if (p, o) in seen and t >= at:
                again += 1
            seen.add((p, o))
        out.append({
            "disturbance": w.label, "at_ms": round(w.at_s * 1000),
            "time_to_converge_ms": None if converged is None else round((converged - at) * 1000),
            "lag_peak": int(lag[inside].max()) if inside.any() else 0,
            "lag_record_s": round(_integral(ts, lag, at, end), 3),
            "records_reprocessed": again,
            "resource_downtime_ms": None if (stopped := partitions_stopped_s(run, at, end))
            is None else round(stopped * 1000),
            "lag_mean_before": round(float(lag[before].mean()), 1) if before.any() else None,
            "lag_peak_before": int(steady),
            "span": (w.at_s, end - run.t0), "caught_up": caught_up, "closed": closed})
    return out


def span_lag_record_s(run: ShareWireRun, span: tuple[float, float]) -> float:
    """The lag's integral over ``span`` (seconds since the run's t0): a control's figure over
    its run's window."""
    ts, lag = lag_series(run, run.t0 + span[1])
    return round(_integral(ts, lag, run.t0 + span[0], run.t0 + span[1]), 3)


def span_lag_mean(run: ShareWireRun, span: tuple[float, float]) -> float | None:
    """The lag's mean over ``span`` (seconds since the run's t0); None if it holds no sample."""
    ts, lag = lag_series(run, run.t0 + span[1])
    inside = (ts >= run.t0 + span[0]) & (ts < run.t0 + span[1])
    return round(float(lag[inside].mean()), 3) if inside.any() else None


def span_lag_peak(run: ShareWireRun, span: tuple[float, float]) -> int:
    """The lag's peak over ``span`` (seconds since the run's t0)."""
    ts, lag = lag_series(run, run.t0 + span[1])
    inside = (ts >= run.t0 + span[0]) & (ts <= run.t0 + span[1])
    return int(lag[inside].max()) if inside.any() else 0


# ----------------------------------------------------------------------------- the run


class _ShareContext:
    """Spawns share member processes (what ``lab.wire._Members`` asks its run for)."""

    def __init__(self, bootstrap: str, sc: Scenario, wl: WireWorkload, workdir: Path,
                 seed: int, processing_ms: float) -> None:
        self.bootstrap = bootstrap
        self.sc = sc
        self.wl = wl
        self.seed = seed
        self.processing_ms = processing_ms
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.spawned = 0

    def spawn(self, name: str) -> _Proc:
        self.spawned += 1
        cmd = [*SHARE_MEMBER, "--bootstrap", self.bootstrap, "--group", self.sc.group_id,
               "--name", name, "--topics", ",".join(self.sc.topics_subscribed()),
               "--log", str(self.logs / f"{name}.jsonl"),
               "--max-poll-records", str(self.wl.max_poll_records),
               "--processing-ms", str(self.processing_ms),
               "--seed", str(self.seed * 1000 + self.spawned), "--wait-go"]
        with open(self.logs / f"{name}.stderr.log", "a") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=err, text=True)
        return _Proc(name, proc)


class _Describer:
    """Polls ShareGroupDescribe in a thread (see the module doc)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.seen: list[tuple[float, bool, tuple[str, ...]]] = []
        self.assigned: list[tuple[float, dict[str, tuple[str, ...]]]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="share-describe", daemon=True)

    def _run(self) -> None:
        from groupcoord.protocol.client import KafkaClient
        from groupcoord.protocol.versions import ApiKey

        with KafkaClient(self.bootstrap) as c:
            while not self.stop.is_set():
                r = c.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, group_ids=[self.group],
                           include_authorized_operations=False)
                g = r.groups[0]
                t = time.time()
                if int(g.error_code) == 0:
                    settled = g.assignment_epoch == g.group_epoch and all(
                        m.member_epoch == g.group_epoch for m in g.members)
                    self.seen.append((t, settled, tuple(m.client_id for m in g.members)))
                    self.assigned.append((t, {m.client_id: tuple(
                        f"{tp.topic_name}-{p}" for tp in (m.assignment.topic_partitions
                                                           if m.assignment else ())
                        for p in tp.partitions) for m in g.members}))
                else:
                    self.seen.append((t, False, ()))
                self.stop.wait(DESCRIBE_EVERY_S)


def check_share_playable(sc: Scenario) -> None:
    """WireError naming what of ``sc`` the share wire cannot play."""
    for e in sc.events:
        if e.kind not in SHARE_EVENTS:
            raise WireError(f"event kind {e.kind!r} is not played for share groups on the "
                            f"wire (supported: {', '.join(SHARE_EVENTS)})")
    _actions(sc)


def run_share_wire(sc: Scenario, settings: Mapping[str, int], wl: WireWorkload,
                   processing_ms: float, *, seed: int = 0, control: bool = False,
                   until_s: float | None = None, tail_s: float = 3.0,
                   converge_timeout_s: float | None = None, keep_dir: Path | None = None,
                   progress: Callable[[str], None] | None = None,
                   lost_host: bool = True) -> ShareWireRun:
    """Play ``sc`` with share consumers (see the module doc). ``control``: the initial members
    only, until ``until_s`` seconds after the start. Otherwise the run goes on after the last
    disturbance until its windows have converged and caught up (at most
    ``converge_timeout_s``: default 120 s plus the session timeout and the lock duration),
    then ``tail_s``. ``lost_host``: a ``crash`` is SIGSTOP (default), else SIGKILL."""
    try:
        import confluent_kafka  # noqa: F401 - fail before starting anything
    except ImportError:
        raise RuntimeError("share groups on the wire need confluent-kafka "
                           "(pip install 'groupcoord[lab]')") from None
    check_share_playable(sc)
    acts, windows = _actions(sc, seed, lost_host)
    if control:
        acts = [a for a in acts if a[1] == "go" and a[0] <= windows[0].settle_s]
        windows = windows[:1]
    if converge_timeout_s is None:
        converge_timeout_s = 120.0 + (int(settings["group.share.session.timeout.ms"])
                                      + int(settings["group.share.record.lock.duration.ms"])
                                      ) / 1000
    configs = share_server_configs(settings)
    workdir = Path(tempfile.mkdtemp(prefix="gc-share-calibrate-")) if keep_dir is None \
        else keep_dir
    workdir.mkdir(parents=True, exist_ok=True)
    server = start_server(workdir, configs, verbose=keep_dir is not None)
    members: _Members | None = None
    producer: _Producer | None = None
    describer: _Describer | None = None
    try:
        create_topics(server.bootstrap, sc.topics)
        ctx = _ShareContext(server.bootstrap, sc, wl, workdir, seed, processing_ms)
        members = _Members(ctx)  # type: ignore[arg-type]  # needs .spawn only
        producer = _Producer(server.bootstrap, sc.topics, wl.records_per_s)
        describer = _Describer(server.bootstrap, sc.group_id)
        t0 = time.time() + PRESTART_S
        for a in acts:
            if a[1] == "go" and a[0] < PRESTART_S:
                members.prepare(a[2])
        _sleep_until(t0)
        producer.start(t0)
        describer.thread.start()
        label = "control" if control else "run"
        for at, action, name, hard in acts:
            _sleep_until(t0 + at - PRESTART_S)
            if action == "go":
                members.prepare(name)
            _sleep_until(t0 + at)
            if progress is not None:
                progress(f"share {label}: t={time.time() - t0:6.1f} s {action} {name}")
            if action == "go":
                members.go(name)
            elif action == "hang":
                members.hang(name)
            else:
                members.stop(name, hard)
        if control:
            _sleep_until(t0 + (until_s or 0.0))
        else:
            _sleep_until(t0 + max(w.settle_s for w in windows))
            deadline = time.time() + converge_timeout_s
            while time.time() < deadline:
                # the logs are read only once the windows can close (windows_converged)
                if windows_converged(_membership(members, describer, t0, time.time(),
                                                 windows)):
                    snap = _collect(ctx, members, producer, describer, t0, time.time(),
                                    windows)
                    if all(w["closed"] for w in share_window_metrics(snap)):
                        break
                time.sleep(1.0)
            time.sleep(tail_s)
        end = time.time()
        describer.stop.set()
        members.close_all()
        producer.stop.set()
        producer.thread.join(15)
        run = _collect(ctx, members, producer, describer, t0, end, windows)
        run.server_config = configs
        if keep_dir is not None:  # what the metrics are computed from, beside the logs
            (workdir / "run.json").write_text(dump(run))
        return run
    finally:
        if describer is not None:
            describer.stop.set()
        if members is not None:
            members.close_all()
        if producer is not None:
            producer.stop.set()
        server.stop()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _lifetimes(members: _Members) -> dict[str, list[tuple[float, float | None]]]:
    lifetimes: dict[str, list[tuple[float, float | None]]] = {}
    for p in [*members.done, *members.live.values()]:
        if p.started is not None:
            lifetimes.setdefault(p.name, []).append((p.started, p.stopped))
    return lifetimes


def _membership(members: _Members, describer: _Describer, t0: float, end: float,
                windows: Sequence[WireWindow]) -> ShareWireRun:
    """The run so far without its logs and production: what :func:`windows_converged` reads."""
    return ShareWireRun(t0, end, list(windows), {}, {}, _lifetimes(members),
                        list(describer.seen))


def _collect(ctx: _ShareContext, members: _Members, producer: _Producer,
             describer: _Describer, t0: float, end: float,
             windows: Sequence[WireWindow]) -> ShareWireRun:
    lifetimes = _lifetimes(members)
    logs = {name: sorted(_read_jsonl(ctx.logs / f"{name}.jsonl"), key=lambda d: d["t"])
            for name in lifetimes}
    return ShareWireRun(t0, end, list(windows),
                        {k: list(v) for k, v in producer.produced.items()}, logs, lifetimes,
                        list(describer.seen), assigned=list(describer.assigned))


def dump(run: ShareWireRun) -> str:
    """The run as JSON (``--keep``: what the metrics were computed from)."""
    with contextlib.suppress(TypeError):
        return json.dumps({"t0": run.t0, "end": run.end, "windows": [
            (w.label, w.at_s, w.settle_s) for w in run.windows], "produced": run.produced,
            "lifetimes": run.lifetimes, "described": run.described,
            "assigned": run.assigned, "server_config": run.server_config})
    return "{}"


__all__ = [
    "PROTOCOL",
    "SHARE_EVENTS",
    "ShareWireRun",
    "batch_in_hand_fraction",
    "check_share_playable",
    "converged_at",
    "done_times",
    "dump",
    "lag_series",
    "lock_held_s",
    "lost_host_holds",
    "partitions_stopped_s",
    "run_share_wire",
    "share_server_configs",
    "share_window_metrics",
    "span_lag_mean",
    "span_lag_peak",
    "span_lag_record_s",
    "start_offsets",
    "windows_converged",
]
