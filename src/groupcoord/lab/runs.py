"""One run of a sweep, in plain Python: build the cell's scenario, simulate, shape the rows.

This is what every Spark executor calls once per run (``lab.sweep``), what the benchmark's
process pool calls, and what the tests compare Spark's tables against. It imports no Spark.

:func:`run_one` returns one *result*: the ``runs`` row (the run's parameters and its summary
metrics) with three nested parts, ``disturbances`` (one row per disturbance window the
simulator measured), ``events`` (the trace, when the spec asks for it) and ``violation`` (or
None). :func:`flatten` splits a result into the rows of the four tables.

**The method: a disturbance's cost is its excess over a paired control.** A run's scenario
has its group at the field's client settings (``sim.settings``; what the scenario or the
workload sets itself stays) and its events shifted after a warm-up sized from the workload
(:func:`warmup_for`: the members' starts and the protocol's initial rounds, then the backlog
of that time drained with the group's spare capacity, plus a margin), so that the initial join
and its catch-up are over when the first disturbance comes. Each run has a *control*: the same
cell and seed with every event reduced to a marker (``sim.engine``), identical to the run up
to the first disturbance (the same random draws), so an event that moves nothing costs exactly
zero. The simulator measures each disturbance in a window from its start until the group has
converged again and the applications have caught up (``sim.engine``); the control takes its
figures over the same time spans.

Columns of ``runs`` (after the parameters), the *costs* first: each the run's figure minus
its control's over the same window, summed over the disturbance windows (each moment in one
window: a window still open when the next event comes ends there, ``sim.engine``, so the sum is
the cost of the windows' union), the initial join left out:

- ``stall_ms`` (no member processing while records wait), ``lag_record_s`` (the lag's
  integral), ``paused_partition_s`` (resources owned but not processing),
  ``records_reprocessed``, ``task_restarts`` (Connect), ``resources_moved``,
  ``resource_downtime_ms`` (resource-milliseconds without an active owner);
- ``lag_peak``: the highest excess peak of the windows (a peak does not add up over windows;
  with one disturbance window, as in most scenarios, the same thing);
- ``task_downtime_task_s`` (Connect protocols, else null): connector and task seconds not
  running, i.e. ``resource_downtime_ms`` / 1000 plus ``paused_partition_s``.

Not costs: ``convergence_ms`` (the longest window's time until the group converged; null if
one did not: ``converged`` false); ``time_to_balance_ms`` (Connect protocols: from the first
disturbance until the assignment became balanced and stayed so, connectors and tasks each
spread within one per worker, and every task of it runs again, started since its assignment
(``sim.connect.ConnectSimulation.balanced_and_running_since``: it contains the tasks' stop and
start times); null if it never did); ``time_to_balance_after_last_ms`` (the same moment
counted from the end of the scenario's last event, a bounced worker's return or the second of
two connector changes, 0 where the group was balanced by then: the report's "time until
balanced after the last event"; null where ``time_to_balance_ms`` is); ``worker_stall_ms``
(Connect protocols, else null: the longest time a worker's tasks stood still, from a
revocation that stopped every task it ran until the tasks of its next assignment ran, so the
stop, the barrier's wait for the other workers and the start; 0 when no revocation stopped all
of a worker's tasks; not an excess over the control, whose group does not rebalance;
:func:`worker_stall`); ``warmup_ms`` (when the first disturbance came); ``caught_up`` (whether
the group had converged and its applications caught up by then, a poison workload's steady
state aside, ``sim.engine``: a run that had not is no evidence of a disturbance's cost);
``recovered`` (whether every disturbance window closed with the applications caught up, false
when the run ended with its lag still there: an overloaded group, whose lag is the load's as
much as the rebalance's); ``control_lag_peak`` and ``control_lag_record_s`` (the control's own
lag over the same windows: the records always in flight); ``noop_events`` (scenario events
that changed nothing in the run: a member not running, a connector or topic that does not
exist or is already as asked; the lab's scenarios must have none: a run with any did not do
what its scenario's name says); ``event_targets`` (JSON: for each event that names a member,
``at_ms``, ``kind``, the ``member`` it hit and the group's ``leader`` at that moment,
``sim.consumer``'s ``leader()``: the check behind ``@leader`` scenarios); ``settings_json``
(the run's effective client settings under Kafka's config names); ``drawn_json`` (the event
timings the scenario's ``[draw]`` table drew for this seed, ``sim.scenario.with_draws``; null
without). The work columns are null when the workload is idle; the costs are null when a run
has no control (a violation). A scenario without disturbances has no cost (zeros) and reports
its initial join's convergence.

Raw figures of the disturbance windows: ``epoch_bumps``, ``messages``, ``records_written``,
``records_processed`` (summed over the windows), ``peak_unowned`` (their maximum),
``disturbance_count``. ``total_*`` columns are the whole run's figures. ``wall_ms`` (the run
and its control) is the only column that is not a function of the run's parameters.

``disturbances`` rows: one per window with the window's own figures; for the disturbance
windows the cost columns hold the window's excess over its control, with ``control_lag_peak``,
``control_lag_record_s`` and ``task_downtime_task_s`` beside them (the initial-join row keeps
its raw figures and has no control). ``closed_ms``: when the window took its figures.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from groupcoord.lab.spec import SCENARIO_DEFAULT, RunParams, is_connect_protocol, scale
from groupcoord.sim.engine import INITIAL_JOIN, SimResult
from groupcoord.sim.network import NetworkFaults
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.scenario import (
    Event,
    Scenario,
    ScenarioError,
    connectors_as_topics,
    load_scenario,
    parse_scenario,
    with_draws,
    with_workload,
)
from groupcoord.sim.settings import base_protocol, effective_settings, family, with_field_settings
from groupcoord.sim.workload import WORK_METRICS, WorkloadError, parse_workload

INITIAL = INITIAL_JOIN

#: Metric columns of a ``runs`` row (after the parameters), in order, with their kinds.
RUN_METRICS: tuple[tuple[str, str], ...] = (
    ("members", "int"), ("total_topics", "int"), ("total_partitions", "int"),
    ("ok", "bool"), ("invariant", "str"), ("converged", "bool"), ("convergence_ms", "long"),
    ("resources_moved", "long"), ("resource_downtime_ms", "long"), ("epoch_bumps", "long"),
    ("messages", "long"), ("records_written", "long"), ("peak_unowned", "long"),
    ("disturbance_count", "int"),
    # the members' applications (``sim.workload``; null when the workload is idle)
    ("work_model", "str"), ("records_processed", "long"), ("lag_peak", "long"),
    ("lag_record_s", "double"), ("stall_ms", "long"), ("paused_partition_s", "double"),
    ("records_reprocessed", "long"), ("task_restarts", "long"),
    # the members' lateness at the rebalances (``sim.workload.LATENESS_METRICS``): rejoins
    # and revocations met, the highest median of a window, the highest of all
    ("lateness_n", "long"), ("lateness_p50_ms", "double"), ("lateness_max_ms", "double"),
    # the method (see the module docstring)
    ("warmup_ms", "long"), ("caught_up", "bool"), ("recovered", "bool"),
    ("control_lag_peak", "long"),
    ("control_lag_record_s", "double"), ("task_downtime_task_s", "double"),
    ("time_to_balance_ms", "long"), ("time_to_balance_after_last_ms", "long"),
    ("worker_stall_ms", "long"), ("noop_events", "int"),
    ("event_targets", "str"),
    ("settings_json", "str"), ("drawn_json", "str"),
    ("total_moved", "long"), ("total_downtime_ms", "long"), ("group_epoch", "long"),
    ("total_messages", "long"), ("total_records", "long"), ("failovers", "long"),
    ("steps", "long"), ("sim_time_ms", "long"), ("wall_ms", "double"), ("summary_json", "str"),
)

#: Columns of a ``disturbances`` row after the run's keys.
DISTURBANCE_FIELDS: tuple[tuple[str, str], ...] = (
    ("window", "int"), ("disturbance", "str"), ("at_ms", "long"), ("settled_ms", "long"),
    ("closed_ms", "long"), ("cut_ms", "long"),
    ("converged", "bool"), ("time_to_converge_ms", "long"), ("peak_unowned", "long"),
    ("group_epoch_bumps", "long"), ("resources_moved", "long"),
    ("resource_downtime_ms", "long"), ("messages", "long"), ("records_written", "long"),
    ("records_processed", "long"), ("lag_peak", "long"), ("lag_record_s", "double"),
    ("stall_ms", "long"), ("paused_partition_s", "double"), ("records_reprocessed", "long"),
    ("task_restarts", "long"), ("control_lag_peak", "long"), ("control_lag_record_s", "double"),
    ("task_downtime_task_s", "double"),
    ("lateness_n", "long"), ("lateness_p50_ms", "double"), ("lateness_max_ms", "double"),
    ("worker_stall_ms", "long"),
)

#: Columns of an ``events`` row (one trace line) after the run's keys.
EVENT_FIELDS: tuple[tuple[str, str], ...] = (
    ("seq", "int"), ("time_ms", "long"), ("step", "long"), ("event", "str"), ("detail", "str"),
)

#: Columns of a ``violations`` row after the run's keys.
VIOLATION_FIELDS: tuple[tuple[str, str], ...] = (
    ("invariant", "str"), ("message", "str"), ("step", "long"), ("time_ms", "long"),
    ("command", "str"), ("trace", "str_list"),
)

#: Run columns repeated in the child tables (disturbances, events, violations).
KEY_COLUMNS: tuple[str, ...] = ("run_id", "sweep", "protocol", "scenario", "size", "workload",
                                "fault_rate", "replicate", "seed")

_NAME = re.compile(r"^c(\d+)$")


# --------------------------------------------------------------------------- scenarios


def _rename(name: str, orig: int, size: int) -> str:
    """Member names of the original scenario, in a group of ``size`` initial members."""
    m = _NAME.match(name)
    if m is None:
        return name  # "any", "all", "*"
    i = int(m.group(1))
    return f"c{min(i, size)}" if i <= orig else f"c{i - orig + size}"


def _resize_event(ev: Event, orig: int, size: int) -> Event:
    p = dict(ev.params)
    if isinstance(p.get("member"), str):
        p["member"] = _rename(p["member"], orig, size)
    if p.get("members"):
        p["members"] = tuple(dict.fromkeys(_rename(n, orig, size) for n in p["members"]))
    if ev.kind == "scale-in":
        p["count"] = max(1, min(int(p["count"]), size - 1))
    return replace(ev, params=p)


def _retopic_event(ev: Event, factors: dict[str, float], default: float) -> Event:
    if ev.kind == "add-partitions":
        f = factors.get(ev["topic"], default)
        return replace(ev, params={**ev.params, "partitions": scale(int(ev["partitions"]), f)})
    if ev.kind == "create-topic":
        return replace(ev, params={**ev.params, "partitions": scale(int(ev["partitions"]),
                                                                     default)})
    return ev


def _retask_event(ev: Event, factors: dict[str, float], default: float) -> Event:
    """A connector event in a cell whose connectors have ``tasks`` tasks each: the task count
    it asks for scaled by the connector's own factor (a new connector by the first's), as
    partition counts are; at least one task."""
    if ev.kind == "update-tasks":
        f = factors.get(ev["connector"], default)
        return replace(ev, params={**ev.params, "tasks": scale(int(ev["tasks"]), f)})
    if ev.kind == "add-connector":
        return replace(ev, params={**ev.params, "tasks": scale(int(ev["tasks"]), default)})
    return ev


#: Settings a scenario table sets itself (``[section] key`` -> the Scenario or workload field):
#: the lab keeps them instead of the field's (``sim.settings``).
_OWN_SETTINGS: dict[tuple[str, str], str] = {
    ("coordinator", "session_timeout_ms"): "session_timeout_ms",
    ("coordinator", "heartbeat_interval_ms"): "heartbeat_interval_ms",
    ("coordinator", "assignment_interval_ms"): "assignment_interval_ms",
    ("member", "rebalance_timeout_ms"): "rebalance_timeout_ms",
    ("member", "scheduled_rebalance_max_delay_ms"): "max_delay_ms",
    ("workload", "max_poll_interval_ms"): "rebalance_timeout_ms",
    ("workload", "metadata_max_age_ms"): "metadata_max_age_ms",
}

#: The longest warm-up (a group that cannot drain its start-up backlog: ``caught_up`` false).
MAX_WARMUP_MS = 600_000
#: What the group's initial join takes beyond its members' starts, per protocol family: the
#: classic coordinator's ``group.initial.rebalance.delay.ms`` (3 s) and a join/sync round per
#: heartbeat; KIP-848's reconciliation over heartbeats; Connect's rounds and task starts.
_JOIN_HEARTBEATS = {"classic": 2, "consumer": 3, "connect": 3}


def own_settings(params: RunParams) -> set[str]:
    """The settings the run's scenario (inline or file) or its workload sets itself."""
    keep: set[str] = set()
    if params.scenario_def is not None:
        table = json.loads(params.scenario_def)
        for (section, key), name in _OWN_SETTINGS.items():
            sub = table.get(section)
            if isinstance(sub, dict) and key in sub:
                keep.add(name)
    if params.work is not None:
        for (section, key), name in _OWN_SETTINGS.items():
            if section == "workload" and key in json.loads(params.work):
                keep.add(name)
    return keep


def warmup_for(sc: Scenario, protocol: str) -> int:
    """How long after the start the group has joined and drained what piled up meanwhile,
    from the workload: the members' starts (stagger, spread, start-up), the protocol's initial
    rounds (:data:`_JOIN_HEARTBEATS` heartbeats, the classic initial rebalance delay, the
    assignment interval, task starts, the state warm-up), then the backlog of that time
    processed with what the group can do beyond the production (members x 1/processing time
    for consumers, tasks x 1/processing time for Connect), plus half of that and two
    heartbeats as a margin, in whole seconds. The connect group type's initial rounds last at
    least until its first worker's hand-back has ended (:func:`handback_ms`; fenced when it
    outlasts the rebalance timeout, :func:`fenced_handback_ms`): its stops are counted in
    ``task.stop`` rounds of the herder's pool, not in heartbeats, so at a 1 s heartbeat the
    heartbeat rounds' margin no longer covers them. A group that cannot keep up gets
    :data:`MAX_WARMUP_MS` (and will not have caught up)."""
    fam = family(protocol)
    wl = sc.workload
    hb = sc.heartbeat_interval_ms
    join = (max(sc.members - 1, 0) * sc.join_stagger_ms + (sc.start_spread_ms or 0)
            + 1.5 * wl.startup_ms + _JOIN_HEARTBEATS[fam] * hb)
    if fam == "classic":
        join += 3_000
    elif fam == "consumer":
        join += sc.assignment_interval_ms
    else:
        join += wl.task_start_ms
    join += wl.warmup_ms
    hand = handback_ms(sc, protocol)
    if hand:
        join = max(join, (max(sc.members - 1, 0) * sc.join_stagger_ms + (sc.start_spread_ms or 0)
                          + 1.5 * wl.startup_ms + hb + hand + wl.warmup_ms))
    drain = 0.0
    if not wl.idle:
        if fam == "connect":
            tasks = sum(n for _, n in sc.connectors)
            rate = tasks * wl.task_records_per_s / 1000.0  # records per ms
            workers = tasks
        else:
            topics = connectors_as_topics(sc).topics if sc.connectors else sc.topics
            subscribed = set(sc.topics_subscribed()) if sc.subscription else None
            rate = sum(p * wl.rate_of(t) for t, p in topics
                       if subscribed is None or t in subscribed) / 1000.0
            workers = sc.members
        mean = wl.processing_ms.average
        spare = math.inf if mean <= 0 else workers / mean - rate
        if spare <= 0:
            return MAX_WARMUP_MS
        drain = rate * join / spare
    total = 1.5 * (join + drain) + 2 * hb
    return min(MAX_WARMUP_MS, math.ceil(total / 1000.0) * 1000)


def handback_ms(sc: Scenario, protocol: str) -> int:
    """How long after the first round the connect group type's first worker's hand-back takes
    until the items it gives back run elsewhere, at any length (0: no hand-back, as for
    classic Connect, an idle workload or a group of one): the fenced hand-back
    (:func:`fenced_handback_ms`) when it outlasts ``rebalance.timeout.ms``, else its stops
    (``start_stop_threads`` at a time, ``sim.application.Application.stop_ms``), the
    heartbeat that reports them done (the Connect draft's reconciliation: the items go to
    the other workers once revoked) and the task starts."""
    fenced = fenced_handback_ms(sc, protocol)
    if fenced:
        return fenced
    hand = _first_handback(sc, protocol, fenced_only=False)
    if hand is None:
        return 0
    _, _share, stop = hand
    return stop + sc.heartbeat_interval_ms + sc.workload.task_start_ms


def fenced_handback_ms(sc: Scenario, protocol: str) -> int:
    """How long after the first round the connect group type's first worker's hand-back takes
    until the items it gives back run elsewhere, when that hand-back outlasts
    ``rebalance.timeout.ms``; 0 otherwise (and for classic Connect, an idle workload or a
    group of one).

    The connect group type has no initial rebalance delay (the Connect draft): the first
    worker to join is given every connector and task, and the second round has it revoke all
    but its share (of n items at w workers, n - ceil(n / w)), stopped as Kafka's
    ``DistributedHerder`` stops them, ``start_stop_threads`` at a time
    (``sim.application.Application.stop_ms``). A revocation longer than
    ``rebalance.timeout.ms`` fences the worker (the Connect draft: the worker should finish
    the assignment within rebalance.timeout.ms or be kicked out of the group; classic Connect
    does the same from the client side: ``AbstractCoordinator``'s heartbeat thread leaves the
    group once the herder has not polled for ``rebalance.timeout.ms``, its ``Heartbeat`` poll
    timer), and everything it held is lost: the incremental cooperative variant holds lost
    work for ``scheduled.rebalance.max.delay.ms`` from the fencing (KIP-415), and the fenced
    worker's return after its stops brings one more round in which each worker stops its
    share. So such a hand-back ends at the later of its stops and the fencing plus the delay,
    then that round (two heartbeats, a share's stops, the task starts). A shorter hand-back
    (at 1 s stops, 17 s at 12 workers) is :func:`handback_ms`'s."""
    hand = _first_handback(sc, protocol)
    if hand is None:
        return 0
    _, share, stop = hand
    wl = sc.workload
    delay = sc.max_delay_ms if _cooperative(protocol) else 0
    hb = sc.heartbeat_interval_ms
    return (max(stop, sc.rebalance_timeout_ms + delay) + 2 * hb + _stops(sc, share)
            + wl.task_start_ms)


def _stops(sc: Scenario, k: int) -> int:
    """How long a worker takes to stop k items (``sim.workload.Workload.stop_ms``: the
    herder's pool); 0 for none."""
    return 0 if k <= 0 else sc.workload.stop_ms(k)


def _first_handback(sc: Scenario, protocol: str,
                    fenced_only: bool = True) -> tuple[int, int, int] | None:
    """The connect group type's first worker's hand-back when it outlasts the rebalance
    timeout (:func:`fenced_handback_ms`), or at any length with ``fenced_only`` false
    (:func:`handback_ms`): (items given back, items kept, the stops' time); None otherwise."""
    wl = sc.workload
    items = sum(n + 1 for _, n in sc.connectors)  # a connector is an item, as are its tasks
    if base_protocol(protocol).partition(":")[0] != "connect" or wl.idle or sc.members < 2 \
            or not items:
        return None
    share = math.ceil(items / sc.members)
    stop = _stops(sc, items - share)
    if items - share <= 0 or (fenced_only and stop <= sc.rebalance_timeout_ms):
        return None
    return (items - share, share, stop)


def fenced_handback_text(row: Mapping[str, Any]) -> str:
    """Why a run of the connect group type had not caught up before its event, when its first
    worker's hand-back was fenced (:func:`fenced_handback_ms`), in a few words; "" otherwise
    or when the row does not carry its run's parameters (a table made by hand)."""
    protocol = str(row.get("protocol") or "")
    if base_protocol(protocol).partition(":")[0] != "connect":
        return ""
    try:
        sc = _cell_scenario(RunParams.from_row(row))
    except (KeyError, TypeError, ValueError, ScenarioError, WorkloadError):
        return ""
    hand = _first_handback(sc, protocol)
    if hand is None:
        return ""
    given, _, stop = hand
    wl = sc.workload
    text = (f"its first worker hands {given} connectors and tasks back "
            f"{wl.start_stop_threads or given} at a time, {_secs(stop)} of stops, past "
            f"rebalance.timeout.ms ({_secs(sc.rebalance_timeout_ms)}): fenced, its work lost")
    if _cooperative(protocol):
        text += f" and held scheduled.rebalance.max.delay.ms ({_secs(sc.max_delay_ms)})"
    return text


def _cooperative(protocol: str) -> bool:
    """The connect group type's incremental cooperative variant (KIP-415's delay applies)."""
    return base_protocol(protocol).partition(":")[2] == "cooperative"


def _secs(ms: int) -> str:
    return f"{ms / 1000:g} s"


def with_warmup(sc: Scenario, warmup_ms: int) -> Scenario:
    """The scenario with its events shifted so that the first comes at ``warmup_ms`` (their
    spacing kept; ``end_ms`` shifted with them)."""
    if not sc.events:
        return sc
    delta = warmup_ms - min(e.at_ms for e in sc.events)
    if delta == 0:
        return sc
    events = tuple(replace(e, at_ms=e.at_ms + delta) for e in sc.events)
    end = None if sc.end_ms is None else max(0, sc.end_ms + delta)
    return replace(sc, events=events, end_ms=end)


def event_phase_ms(sc: Scenario, seed: int) -> int:
    """Where in a heartbeat interval the run's first event falls after its warm-up, drawn
    from the seed (uniform over one heartbeat interval, whole milliseconds): the field's
    disturbances come at any phase of the members' heartbeats, so the seeds' spread includes
    the heartbeat phase. A run and its paired control share the scenario, hence the phase."""
    hb = max(1, int(sc.heartbeat_interval_ms))
    return random.Random(f"event-phase/{seed}").randrange(hb)


def build_scenario(params: RunParams, warmup_ms: int | None = None) -> Scenario:
    """The scenario of a run: the named one (inline, file, built-in or drawn from the seed)
    changed by the cell's size, workload and fault rate (see ``lab.spec``), its group at the
    field's settings for the protocol (``sim.settings``; what the scenario or the workload
    sets itself stays), and its events shifted after the warm-up (:func:`warmup_for`) plus
    a phase within one heartbeat interval drawn from the seed (:func:`event_phase_ms`), or
    so that the first comes at ``warmup_ms``."""
    sc = _cell_scenario(params)
    if warmup_ms is None:
        warmup_ms = warmup_for(sc, params.protocol) + event_phase_ms(sc, params.seed)
    return with_warmup(sc, warmup_ms)


def _cell_scenario(params: RunParams) -> Scenario:
    if params.scenario_def is not None:
        sc = parse_scenario(json.loads(params.scenario_def), source=params.scenario)
    else:
        sc = load_scenario(params.scenario, params.seed)
    sc = with_draws(sc, params.seed)  # the bounces' timings drawn per seed (``[draw]``)
    sc = with_field_settings(sc, params.protocol, own_settings(params))
    changes: dict[str, Any] = {}
    events = sc.events
    if params.size is not None and params.size != sc.members:
        events = tuple(_resize_event(e, sc.members, params.size) for e in events)
        changes["members"] = params.size
    if params.topics is not None and params.partitions is not None:
        # A Connect scenario for a consumer protocol: its connectors as topics first.
        sc = connectors_as_topics(replace(sc, events=events))
        events = sc.events
        names = [n for n, _ in sc.topics][:params.topics]
        first = names[0] if names else "t"
        names += [f"{first}_{i}" for i in range(len(names) + 1, params.topics + 1)]
        changes["topics"] = tuple((n, params.partitions) for n in names)
        factors = {n: params.partitions / p for n, p in sc.topics}
        default = params.partitions / sc.topics[0][1] if sc.topics else 1.0
        events = tuple(_retopic_event(e, factors, default) for e in events)
        if sc.subscription is not None and first in sc.subscription:
            extra = tuple(n for n in names if n not in sc.subscription and n.startswith(first))
            changes["subscription"] = (*sc.subscription, *extra)
    if params.connectors is not None and params.tasks is not None:
        # The scenario's connectors first (its events name them), then connector-<i>.
        own = dict(sc.connectors)
        names = list(own)[:params.connectors]
        names += [f"connector-{i}" for i in range(len(names), params.connectors)]
        changes["connectors"] = tuple((n, params.tasks) for n in names)
        factors = {n: params.tasks / t for n, t in own.items() if t > 0}
        default = params.tasks / next(iter(own.values())) if own and next(
            iter(own.values())) > 0 else 1.0
        events = tuple(_retask_event(e, factors, default) for e in events)
    if params.fault_rate is not None:
        r = params.fault_rate
        changes["faults"] = NetworkFaults(loss=r, response_loss=r, duplicate=r, reorder=r)
    if events is not sc.events:
        changes["events"] = events
    sc = replace(sc, **changes) if changes else sc
    if params.work is not None:
        try:
            wl = parse_workload(f"workload {params.workload}", json.loads(params.work),
                                base=sc.workload)
        except WorkloadError as e:
            raise ScenarioError(str(e)) from None
        sc = with_workload(sc, wl)
    if sc.start_spread_ms is None:  # members start at phases drawn from the seed
        sc = replace(sc, start_spread_ms=sc.heartbeat_interval_ms)
    return sc


def repro_command(params: RunParams) -> str:
    """A command that reruns exactly this run (and prints its summary and violation)."""
    parts = ["groupcoord", "lab", "rerun", "--scenario", params.scenario, "--protocol",
             params.protocol, "--seed", str(params.seed)]
    if params.scenario_def is not None and not params.scenario.endswith(".toml"):
        parts += ["--spec", params.spec_ref]
    if params.size is not None:
        parts += ["--size", str(params.size)]
    if params.topics is not None and params.partitions is not None:
        parts += ["--topics", str(params.topics), "--partitions", str(params.partitions)]
    if params.connectors is not None and params.tasks is not None:
        parts += ["--connectors", str(params.connectors), "--tasks", str(params.tasks)]
    if params.fault_rate is not None:
        parts += ["--fault-rate", repr(params.fault_rate)]
    if params.max_steps is not None:
        parts += ["--max-steps", str(params.max_steps)]
    if params.checkpoint_every != 2_000:
        parts += ["--checkpoint-every", str(params.checkpoint_every)]
    if params.work is not None:
        parts += ["--work", params.work]
    return " ".join(shlex.quote(p) for p in parts)


# --------------------------------------------------------------------------- one run


def simulate_run(params: RunParams, scenario: Scenario | None = None) -> SimResult:
    """Run the simulator on the cell's scenario with the run's seed."""
    sc = scenario if scenario is not None else build_scenario(params)
    sim = build_simulation(sc, params.seed, base_protocol(params.protocol), record_trace=params.events,
                           checkpoint_every=params.checkpoint_every)
    return sim.run(max_steps=params.max_steps)


def window_ends(res: SimResult) -> list[int]:
    """When each disturbance window of a run took its figures (the group converged and the
    applications caught up, or the run's end)."""
    return [res.sim_time_ms if w.get("closed_ms") is None else int(w["closed_ms"])
            for w in res.disturbances if w["disturbance"] != INITIAL]


def run_control(params: RunParams, sc: Scenario, res: SimResult) -> list[dict[str, Any]] | None:
    """The paired control of a run: the same scenario and seed with its events reduced to
    markers (``sim.engine``), its windows closed when the run's closed; the control's window
    figures, in order (None: the run has no disturbance window, or a violation)."""
    ends = window_ends(res)
    if not ends or res.violation is not None:
        return None
    csc = replace(sc, end_ms=max(sc.end_ms or 0, max(ends)))
    # No I4 checkpoints: a control never fails over (failovers are events), and a checkpoint
    # only compacts the log and compares a rebuilt shard, so leaving them out changes nothing
    # the members see; the disturbed run has checked the same steps already.
    sim = build_simulation(csc, params.seed, base_protocol(params.protocol), checkpoint_every=1 << 62)
    return sim.run_control(ends)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def simulate_with_control(params: RunParams, sc: Scenario) -> tuple[SimResult,
                                                                    list[dict[str, Any]] | None]:
    """The run and its paired control, the control forked from the run just before the first
    event: up to there the two are one simulation, computed once (the control's reduction of
    the events to markers starts at the fork). Without ``os.fork`` (or events), the control
    is simulated from the start (:func:`run_control`: the same figures)."""
    first = min((e.at_ms for e in sc.events), default=None)
    if first is None or first <= 0 or not hasattr(os, "fork"):
        res = simulate_run(params, sc)
        return res, run_control(params, sc, res)
    sim = build_simulation(sc, params.seed, base_protocol(params.protocol), record_trace=params.events,
                           checkpoint_every=params.checkpoint_every)
    sim.start()
    if sim.advance(until_ms=first - 1, max_steps=params.max_steps):
        return sim.result(), None  # over before the first event (a violation, max_steps)
    ends_r, ends_w = os.pipe()
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the control
        status = 0
        try:
            os.close(ends_w)
            os.close(out_r)
            spans: list[int] = json.loads(_read_all(ends_r))
            os.close(ends_r)
            sim.checkpoint_every = sim._next_checkpoint = 1 << 62  # see run_control
            windows = sim.finish_control(spans) if spans else None
            _write_all(out_w, json.dumps({"windows": windows}).encode())
        except BaseException as e:  # reported to the parent, which raises it
            _write_all(out_w, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
            status = 1
        finally:
            os._exit(status)
    os.close(ends_r)
    os.close(out_w)
    ends: list[int] = []  # none: the control stops at once
    try:
        sim.advance(max_steps=params.max_steps)
        res = sim.result()
        if res.violation is None:
            ends = window_ends(res)
    finally:
        try:
            _write_all(ends_w, json.dumps(ends).encode())
        finally:
            os.close(ends_w)
            reply = _read_all(out_r)
            os.close(out_r)
            os.waitpid(pid, 0)
    got = json.loads(reply or b"{}")
    if "error" in got:
        raise RuntimeError(f"the paired control failed: {got['error']}")
    return res, got.get("windows")


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _work_value(name: str, v: Any) -> int | float | None:
    if v is None:
        return None
    if name in ("lag_record_s", "paused_partition_s", "task_downtime_task_s"):
        return round(float(v), 3)
    return round(float(v))


#: The costs of a disturbance: a window's figure minus its control's over the same span.
COST_METRICS: tuple[str, ...] = ("lag_peak", "lag_record_s", "stall_ms", "paused_partition_s",
                                 "records_reprocessed", "task_restarts", "resources_moved",
                                 "resource_downtime_ms")


def window_excess(window: dict[str, Any], control: dict[str, Any] | None,
                  connect: bool) -> dict[str, Any]:
    """A disturbance window's costs as the excess over its control (None: no control), the
    control's lag, and the task downtime (Connect: connector and task seconds without an
    owner or not running, i.e. resource downtime plus paused time)."""
    out: dict[str, Any] = {}
    for k in COST_METRICS:
        d = window.get(k)
        c = None if control is None else control.get(k)
        out[k] = None if d is None or c is None else _work_value(k, float(d) - float(c))
    out["control_lag_peak"] = None if control is None else _int(control.get("lag_peak"))
    out["control_lag_record_s"] = None if control is None else _work_value(
        "lag_record_s", control.get("lag_record_s"))
    down = out["resource_downtime_ms"]
    paused = out["paused_partition_s"]
    out["task_downtime_task_s"] = None if not connect or down is None else _work_value(
        "task_downtime_task_s", down / 1000.0 + (paused or 0.0))
    return out


def window_lateness(w: dict[str, Any]) -> dict[str, Any]:
    """A window's lateness columns (``sim.workload.LATENESS_METRICS``): how many rejoins (classic)
    or revocations (KIP-848) the members met in it, the median and the maximum of their
    lateness (ms from the protocol's asking to the member's ``poll()``); None when none."""
    n = w.get("lateness_n")
    if not n:
        return {"lateness_n": None, "lateness_p50_ms": None, "lateness_max_ms": None}
    return {"lateness_n": int(n), "lateness_p50_ms": round(float(w["lateness_p50_ms"]), 1),
            "lateness_max_ms": round(float(w["lateness_max_ms"]), 1)}


def run_lateness(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's lateness over its disturbance windows: the count, the highest window median
    and the highest lateness (None when no member met the protocol in any)."""
    rows = [window_lateness(w) for w in windows]
    rows = [r for r in rows if r["lateness_n"] is not None]
    if not rows:
        return {"lateness_n": None, "lateness_p50_ms": None, "lateness_max_ms": None}
    return {"lateness_n": sum(r["lateness_n"] for r in rows),
            "lateness_p50_ms": max(r["lateness_p50_ms"] for r in rows),
            "lateness_max_ms": max(r["lateness_max_ms"] for r in rows)}


def worker_stall(windows: list[dict[str, Any]]) -> int:
    """Connect: the longest worker stall of the windows, in ms (``sim.application``): from
    the moment the last running task of a revocation that stops every task a worker ran
    stops (its stop wave: Kafka's start/stop pool, a queued task runs until its own stop
    begins) until the tasks of its next assignment run, so its stop, the rebalance
    barrier's wait for the other workers and the start; 0
    when no revocation stopped a worker's every task (an incremental cooperative worker
    keeps the tasks it is not asked to give up). ``stall_ms`` is the time no task of the
    whole group runs; this is the time one worker's tasks stand still."""
    return round(max((float(w.get("worker_stall_ms") or 0) for w in windows), default=0.0))


def _sum(values: list[Any]) -> Any:
    if any(v is None for v in values):
        return None
    return sum(values)


def _parse_trace_line(line: str) -> tuple[int, int, str, str]:
    """``time step event detail`` from the simulator's fixed-width trace line."""
    parts = line.split(None, 2)
    t = int(parts[0]) if parts else 0
    step = int(parts[1]) if len(parts) > 1 else 0
    rest = parts[2] if len(parts) > 2 else ""
    event, detail = (rest[:12].rstrip(), rest[13:].strip()) if len(rest) > 12 else (rest, "")
    return int(t), int(step), event, detail


def summarize(params: RunParams, sc: Scenario, res: SimResult, wall_ms: float,
              control: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The nested result of one run (see the module docstring); ``control``: the paired
    control's disturbance windows (:func:`run_control`)."""
    s = res.summary
    windows = res.disturbances
    initial = next((w for w in windows if w["disturbance"] == INITIAL), None)
    rest = [w for w in windows if w["disturbance"] != INITIAL]
    connect = family(params.protocol) == "connect"
    measured = rest if rest else ([initial] if initial is not None else [])
    converged = bool(measured) and all(w["converged"] for w in measured)
    convergence = (max(int(w["time_to_converge_ms"]) for w in measured) if converged else None)
    idle = s.get("work") is None
    costs = []
    for i, w in enumerate(rest):
        c = control[i] if control is not None and i < len(control) else None
        costs.append(window_excess(w, c, connect))
    head: dict[str, Any] = {}
    for k in (*COST_METRICS, "control_lag_record_s", "task_downtime_task_s"):
        values = [c[k] for c in costs]
        if k == "lag_peak":  # a peak does not add up: the highest excess of the windows
            head[k] = None if any(v is None for v in values) else max(values, default=0)
        else:
            total = _sum(values)
            head[k] = _work_value(k, total) if total is not None else None
    head["control_lag_peak"] = (None if any(c["control_lag_peak"] is None for c in costs)
                                else max((c["control_lag_peak"] for c in costs), default=0))
    if idle:  # no application: no work metrics
        for k in (*WORK_METRICS, "control_lag_peak", "control_lag_record_s"):
            head[k] = None
    if not connect:
        head["task_downtime_task_s"] = None
    elif idle and head.get("resource_downtime_ms") is not None:
        head["task_downtime_task_s"] = _work_value("task_downtime_task_s",
                                                   head["resource_downtime_ms"] / 1000.0)
    first_at = min((int(w["at_ms"]) for w in rest), default=None)
    balanced = s.get("balanced_since_ms")
    time_to_balance = None
    if connect and balanced is not None and first_at is not None:
        time_to_balance = max(0, int(balanced) - first_at)
    quiet = s.get("quiet_at_ms")
    # the same moment counted from the scenario's last event (a bounced worker's return):
    # the report's "time until balanced after the last event", reproducible from runs/
    after_last = (max(0, int(balanced) - int(quiet))
                  if time_to_balance is not None and balanced is not None and quiet is not None
                  else None)
    v = res.violation
    command = None
    if v is not None:
        # ``lab rerun``, never ``groupcoord simulate``: a lab run's scenario has the field's
        # settings and a warm-up that the simulator's own command does not apply
        command = repro_command(params)
    row: dict[str, Any] = params.as_row()
    row.update({
        "members": sc.members, "total_topics": len(sc.topics),
        "total_partitions": sum(p for _, p in sc.topics),
        "ok": res.ok, "invariant": None if v is None else v.invariant,
        "converged": converged, "convergence_ms": convergence,
        "resources_moved": head["resources_moved"],
        "resource_downtime_ms": head["resource_downtime_ms"],
        "epoch_bumps": sum(int(w.get("group_epoch_bumps") or 0) for w in rest),
        "messages": sum(int(w.get("messages") or 0) for w in rest),
        "records_written": sum(int(w.get("records_written") or 0) for w in rest),
        "peak_unowned": max((int(w["peak_unowned"]) for w in rest), default=0),
        "disturbance_count": len(rest),
        "work_model": str(s.get("workload", "idle")),
        "records_processed": None if idle else sum(int(w.get("records_processed") or 0)
                                                   for w in rest),
        **run_lateness(rest),
        **{k: head[k] for k in ("lag_peak", "lag_record_s", "stall_ms", "paused_partition_s",
                                "records_reprocessed", "task_restarts")},
        "warmup_ms": first_at, "caught_up": s.get("caught_up"),
        "recovered": all(bool(w.get("recovered")) for w in rest) if rest else None,
        "control_lag_peak": head["control_lag_peak"],
        "control_lag_record_s": head["control_lag_record_s"],
        "task_downtime_task_s": head["task_downtime_task_s"],
        "time_to_balance_ms": time_to_balance,
        "time_to_balance_after_last_ms": after_last,
        "worker_stall_ms": worker_stall(rest) if connect and not idle else None,
        "noop_events": int(s.get("noop_events", 0)),
        "event_targets": json.dumps(s.get("event_targets", []), sort_keys=True),
        "settings_json": json.dumps(effective_settings(sc, params.protocol), sort_keys=True),
        "drawn_json": json.dumps(dict(sc.drawn), sort_keys=True) if sc.drawn else None,
        "total_moved": int(s["resources_moved"]),
        "total_downtime_ms": int(s["resource_downtime_ms"]),
        "group_epoch": int(s["group_epoch"]), "total_messages": int(s["messages"]),
        "total_records": int(s["records_written"]), "failovers": int(s.get("failovers", 0)),
        "steps": res.steps, "sim_time_ms": res.sim_time_ms, "wall_ms": wall_ms,
        "summary_json": json.dumps(s, sort_keys=True, default=str),
    })
    rows = []
    j = 0
    for i, w in enumerate(windows):
        d = {"window": i, "disturbance": w["disturbance"], "at_ms": int(w["at_ms"]),
             "settled_ms": int(w["settled_ms"]), "closed_ms": _int(w.get("closed_ms")),
             "cut_ms": _int(w.get("cut_ms")), "converged": bool(w["converged"]),
             "time_to_converge_ms": _int(w["time_to_converge_ms"]),
             "peak_unowned": int(w["peak_unowned"]),
             **{k: _int(w.get(k)) for k in ("group_epoch_bumps", "resources_moved",
                                             "resource_downtime_ms", "messages",
                                             "records_written")},
             **{k: _work_value(k, w.get(k)) for k in WORK_METRICS},
             "control_lag_peak": None, "control_lag_record_s": None,
             "task_downtime_task_s": None, **window_lateness(w),
             "worker_stall_ms": (worker_stall([w]) if connect and not idle else None)}
        if w["disturbance"] != INITIAL:
            cost = costs[j]
            j += 1
            for k, val in cost.items():
                if k in ("resources_moved", "resource_downtime_ms") or not idle:
                    d[k] = val
            if not connect:
                d["task_downtime_task_s"] = None
        rows.append(d)
    row["disturbance_rows"] = rows
    events = []
    for i, line in enumerate(res.trace):
        t, step, event, detail = _parse_trace_line(line)
        events.append({"seq": i, "time_ms": t, "step": step, "event": event, "detail": detail})
    row["event_rows"] = events
    row["violation_row"] = None if v is None else {
        "invariant": v.invariant, "message": v.message, "step": v.step, "time_ms": v.time_ms,
        "command": command, "trace": list(v.trace)}
    return row


def run_one(params: RunParams, warmup_ms: int | None = None) -> dict[str, Any]:
    """Simulate one run and its paired control and return its nested result (never raises
    on a violation; a scenario that cannot run at all is reported as a violation ``setup``
    with the error). ``warmup_ms`` replaces the warm-up :func:`warmup_for` sizes."""
    t0 = time.perf_counter()
    try:
        sc = build_scenario(params, warmup_ms)
        res, control = simulate_with_control(params, sc)
    except Exception as e:  # a crash of the simulator itself is a finding, not a lost run
        return failed_result(params, e, (time.perf_counter() - t0) * 1000.0)
    return summarize(params, sc, res, (time.perf_counter() - t0) * 1000.0, control)


def failed_result(params: RunParams, error: BaseException, wall_ms: float) -> dict[str, Any]:
    """The result of a run whose scenario or simulation raised (invariant ``setup``)."""
    row: dict[str, Any] = params.as_row()
    for name, _ in RUN_METRICS:
        row[name] = None
    row.update({"ok": False, "invariant": "setup", "converged": False, "wall_ms": wall_ms,
                "summary_json": "{}"})
    row["disturbance_rows"] = []
    row["event_rows"] = []
    row["violation_row"] = {"invariant": "setup", "message": f"{type(error).__name__}: {error}",
                            "step": 0, "time_ms": 0, "command": repro_command(params),
                            "trace": []}
    return row


# --------------------------------------------------------------------------- tables

RUN_COLUMNS: tuple[str, ...] = (*(c for c in RunParams.__dataclass_fields__),
                                *(name for name, _ in RUN_METRICS))


def flatten(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A nested result as rows of ``runs``, ``disturbances``, ``events`` and ``violations``."""
    keys = {k: result[k] for k in KEY_COLUMNS}
    out: dict[str, list[dict[str, Any]]] = {
        "runs": [{c: result[c] for c in RUN_COLUMNS}],
        "disturbances": [{**keys, **d} for d in result["disturbance_rows"]],
        "events": [{**keys, **e} for e in result["event_rows"]],
        "violations": [],
    }
    if result["violation_row"] is not None:
        out["violations"].append({**keys, **result["violation_row"]})
    return out


def describe_params(params: RunParams) -> str:
    """A short human label of a run's cell."""
    bits = [params.protocol, params.scenario]
    if params.size is not None:
        bits.append(f"size {params.size}")
    if params.workload != SCENARIO_DEFAULT:
        bits.append(params.workload)
    if params.fault_rate is not None:
        bits.append(f"faults {params.fault_rate:g}")
    bits.append(f"seed {params.seed}")
    return ", ".join(bits)


__all__ = ["DISTURBANCE_FIELDS", "EVENT_FIELDS", "KEY_COLUMNS", "RUN_COLUMNS", "RUN_METRICS",
           "VIOLATION_FIELDS", "build_scenario", "describe_params", "failed_result", "flatten",
           "is_connect_protocol", "repro_command", "run_one", "simulate_run", "summarize"]
