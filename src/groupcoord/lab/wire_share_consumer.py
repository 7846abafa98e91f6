"""The consumer side of the share comparison on the wire: a share cell's ``consumer:uniform``
column (KIP-848 consumer groups) played with real consumers and measured as the share side is.

A share sentence compares ``share:simple`` with ``consumer:uniform`` in one cell of
``lab/data/share.toml``; ``lab calibrate --share --protocol consumer:uniform`` measures the
consumer side of that cell: ``lab.wire.run_wire`` plays the cell's scenario (the lab's, at the
field's settings for ``consumer:uniform``: heartbeat 5 s, session 45 s, auto-commit 5 s) with
confluent-kafka consumers (``lab.wire_member``, ``group.protocol=consumer``), a ``crash`` as a
lost host (SIGSTOP, ``lab.wire._Members.hang``: nothing closes, the member's partitions wait
for its session timeout), ``kill`` as SIGKILL; an ``@owner`` member is drawn a second before
the event among the members that own a partition then on the wire (``owner_at_event``: at 12
members on 4 partitions 8 are idle, and drawn ahead among all of them the wire's crash hit an
idle member on 2 of 3 seeds). The wire member processes each record for the
workload's mean processing time (the simulator draws it from the workload's distribution, an
exponential of that mean).

The window and metrics are the share side's (``lab.wire_share.share_window_metrics``, the
simulator's ``sim.application`` rule), computed from the consumers' logs with
``lab.wire_metrics``'s series (lag = produced minus the highest position processed, per
partition; ownership from the rebalance callbacks, a hung or killed process owning nothing
from its stop): the window runs from the disturbance until the group has converged
(``lab.wire_metrics.convergence``) and then caught up (lag back at or under its peak over the
``STEADY_S`` before the disturbance), or ``RECOVERY_WAIT_MS`` after the convergence if it does
not, or the run's end. ``resource_downtime_ms`` is partition·s with no live owner (the
simulator's resource downtime), ``records_reprocessed`` records processed again after the
assignment that gave them to their new owner (``lab.wire_metrics``'s definition). The paired
control is a run of the same cell without the disturbance, measured over each run's span.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from groupcoord.lab.wire import WireWorkload, run_wire
from groupcoord.lab.wire_metrics import SAMPLE_S, Series, convergence
from groupcoord.lab.wire_run import WireRun
from groupcoord.lab.wire_share import STEADY_S, window_end
from groupcoord.sim.application import RECOVERY_WAIT_MS
from groupcoord.sim.scenario import Scenario

PROTOCOL = "consumer:uniform"
#: The client the consumer side drives.
CLIENT = "confluent-kafka {ver} Consumer (librdkafka {lib}), group.protocol=consumer"


def consumer_workload(sc: Scenario) -> WireWorkload:
    """The wire's workload of a consumer cell: the rate, batch, mean processing time and
    auto-commit interval the simulator runs."""
    wl = sc.workload
    commit = wl.auto_commit_interval_ms if wl.auto_commit_interval_ms is not None \
        else sc.commit_interval_ms
    return WireWorkload(records_per_s=wl.records_per_s, max_poll_records=wl.max_poll_records,
                        processing_ms=float(wl.processing_ms.average),
                        auto_commit_interval_ms=int(commit),
                        metadata_max_age_ms=wl.metadata_max_age_ms)


def run_consumer_wire(sc: Scenario, seed: int, *, control: bool = False,
                      until_s: float = 0.0, keep_dir: Path | None = None,
                      progress: Callable[[str], None] | None = None,
                      tail_s: float | None = None) -> WireRun:
    """One wire run of the cell's consumer side (``control``: without its events, at least
    ``until_s`` seconds long). A run goes on ``tail_s`` after the group converged, by default
    ``RECOVERY_WAIT_MS`` and 2 s, the longest its window can run."""
    wl = consumer_workload(sc)
    if control:
        # the initial join converges within seconds; the wait for it re-reads every log
        # (slow at 12 members after minutes), so it is bounded here: the run's length is the
        # tail, at least ``until_s``
        return run_wire(replace(sc, events=()), PROTOCOL, wl, tail_s=until_s, seed=seed,
                        keep_dir=keep_dir, progress=progress, lost_host=True,
                        converge_timeout_s=20.0)
    tail = RECOVERY_WAIT_MS / 1000 + 2.0 if tail_s is None else tail_s
    return run_wire(sc, PROTOCOL, wl, tail_s=tail, seed=seed,
                    keep_dir=keep_dir, progress=progress, lost_host=True, owner_at_event=True)


def _unowned(series: Series) -> np.ndarray:
    """Per sample, how many partitions no live member owns."""
    owned = np.zeros(series.lag.shape, dtype=bool)
    for own in series.owned.values():
        owned |= own
    return (~owned).sum(axis=0)


def consumer_window_metrics(run: WireRun) -> list[dict[str, Any]]:
    """One dict per disturbance window (the initial join left out), with
    ``lab.wire_share.share_window_metrics``' keys and window (see the module doc)."""
    series = Series(run)
    conv = convergence(run)
    ts, lag = series.times, series.total_lag
    unowned = _unowned(series)
    out: list[dict[str, Any]] = []
    for i, w in enumerate(run.windows):
        if w.label == "initial-join":
            continue
        at = run.t0 + w.at_s
        c = conv[i]
        before = (ts >= at - STEADY_S) & (ts < at)
        steady = float(lag[before].max()) if before.any() else 0.0
        end, caught_up, closed = window_end(ts, lag, steady, c, run.end)
        inside = (ts >= at) & (ts < end)
        out.append({
            "disturbance": w.label, "at_ms": round(w.at_s * 1000),
            "time_to_converge_ms": None if c is None else round((c - at) * 1000),
            "lag_peak": int(lag[inside].max()) if inside.any() else 0,
            "lag_record_s": round(float(lag[inside].sum()) * SAMPLE_S, 1),
            "records_reprocessed": sum(1 for a in series.again_assigned if at <= a <= end),
            "resource_downtime_ms": round(float(unowned[inside].sum()) * SAMPLE_S * 1000),
            "lag_mean_before": round(float(lag[before].mean()), 1) if before.any() else None,
            "lag_peak_before": int(steady),
            "span": (w.at_s, end - run.t0), "caught_up": caught_up, "closed": closed})
    return out


def span_lag(run: WireRun, span: tuple[float, float]) -> tuple[float, int, float | None]:
    """The lag's integral (record·s), peak and mean over ``span`` (seconds since the run's
    t0), and its mean over the ``STEADY_S`` before it: a control's figures over a run's
    window."""
    series = Series(run)
    ts, lag = series.times, series.total_lag
    a, b = run.t0 + span[0], run.t0 + span[1]
    inside = (ts >= a) & (ts < b)
    before = (ts >= a - STEADY_S) & (ts < a)
    return (round(float(lag[inside].sum()) * SAMPLE_S, 1),
            int(lag[inside].max()) if inside.any() else 0,
            round(float(lag[before].mean()), 3) if before.any() else None)


__all__ = ["CLIENT", "PROTOCOL", "consumer_window_metrics", "consumer_workload",
           "run_consumer_wire", "span_lag"]
