"""Real Kafka Connect workers on the wire: the KIP-415 grid's metrics measured, not modelled.

The lab's ``classic-connect:*`` rows model Apache Kafka's Connect workers (``sim.classic_connect``).
This module runs Apache Kafka's own Connect group membership against ``groupcoord serve``:
connect/runtime's WorkerGroupMember, WorkerCoordinator, EagerAssignor,
IncrementalCooperativeAssignor and the Connect protocols, compiled from the Apache Kafka snapshot
by ``scripts/build_connect_runtime.py`` (manifest ``~/.cache/groupcoord/java/connect-runtime.json``;
what stands in for the rest of the worker: that script's doc), each worker a JVM running
``java/ConnectWorker.java`` beside this module (the herder's tick loop for the group: it stops
revoked connectors and tasks, starts assigned ones, rejoins after revocations and at KIP-415's
scheduled rebalance). A stop takes the workload's ``task_stop_ms`` and a start its
``task_start_ms``, as the model times them.

:func:`run_connect_wire` plays a lab scenario (a :func:`groupcoord.lab.runs.build_scenario`, so
the same members, connectors, timings and event times as the simulator's run of the same seed;
the initial workers start at ``sim.scenario.start_offsets_ms`` of the seed) with the events
``join``, ``leave``, ``crash`` (SIGKILL-like: the JVM halts), ``add-connector``,
``remove-connector`` and ``update-tasks`` (a new configuration snapshot given to every live
worker at the event's time: the config topic read at once). ``add-connector`` is two snapshots,
as Kafka's ``DistributedHerder`` creates a connector (``sim.connect``'s
``_publish_task_configs`` says where in its source): the connector with no task at the event's
time; then, once a worker logs that it starts the connector, its task configs one connector
start later (the connector's own start, the workload's ``task_start_ms``, the first of the
worker's start callables), so the workers' WorkerCoordinator sees a second config change and
rejoins, as ``onTaskConfigUpdate`` makes the herder do. ``@leader`` / ``@follower`` are
resolved at the event's time from the workers' logs (the leader of the latest assignment; a
follower is the first live worker in start order that is not it), as ``sim.consumer`` does.

:func:`connect_metrics` computes the grid's metrics from the workers' logs exactly as the
simulator defines them (``lab.runs``, ``sim.workload``, ``sim.connect``):

- ``task_restarts``: tasks (not connectors) started after the first disturbance that had been
  started before, anywhere in the group;
- ``task_downtime_task_s``: for every connector and task configured (from the disturbance on,
  or from the event that added it), the seconds without a worker running it, from the
  disturbance until the run's end (a task runs from its start's end to the beginning of its
  own stop: the worker's "item-stopping" line, logged as the item's stop callable begins on
  the start/stop pool, as in ``sim.application.Application.stop_waves``; an item queued behind
  the pool runs until then);
- ``time_to_balance_ms``: from the first disturbance until the assignment is balanced
  (connectors and tasks each spread within one per live worker, every configured item
  assigned) *and* every task of it runs again: the later of the last assignment received and
  the last start of the final assignment's tasks; None when the end state is not balanced.

The control (the same run without its disturbance) has none of the three in a steady group,
so the wire's figures are the costs the simulator's rows report.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.lab.wire_java import (
    CACHE,
    JVM_OPTIONS,
    JavaClientMissing,
    compile_jar,
    java_client,
    manifest_path,
)
from groupcoord.sim.scenario import Scenario, start_offsets_ms

WORKER_SOURCE = Path(__file__).resolve().parent / "java" / "ConnectWorker.java"
BUILD_COMMAND = "python3 scripts/build_connect_runtime.py"
#: lab protocol -> the workers' ``connect.protocol``
PROTOCOLS = {"classic-connect:eager": "eager", "classic-connect:compatible": "compatible",
             "classic-connect:sessioned": "sessioned"}
#: the events played on the wire
EVENTS = ("join", "leave", "crash", "add-connector", "remove-connector", "update-tasks")
#: a JVM is started this long before its time, so that it is ready (class loading: ~1 s on the
#: loaded 2-core machine) and its ``go`` lands on time
PRESTART_S = 6.0


class ConnectWireError(ValueError):
    """A scenario the wire cannot play, or a bad parameter; the message names it."""


@dataclass(frozen=True)
class ConnectMembershipBuild:
    version: str
    commit: str
    classpath: tuple[str, ...]
    worker_jar: Path

    @property
    def describe(self) -> str:
        return (f"Apache Kafka connect-runtime {self.version} group membership (commit "
                f"{self.commit[:12]}, built here)")

    def command(self) -> list[str]:
        cp = os.pathsep.join([*self.classpath, str(self.worker_jar)])
        return ["java", *JVM_OPTIONS, "-cp", cp, "ConnectWorker"]


def connect_runtime() -> ConnectMembershipBuild:
    """The built membership and the compiled worker; raises :class:`JavaClientMissing` naming
    the build command when something is absent."""
    client = java_client()
    path = manifest_path().parent / "connect-runtime.json"
    if not path.exists():
        raise JavaClientMissing(f"no Connect membership build at {path}: build it with "
                                f"`{BUILD_COMMAND}`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        jar = Path(manifest["jar"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JavaClientMissing(f"{path} is not a connect-runtime manifest ({exc}): rebuild "
                                f"with `{BUILD_COMMAND}`") from None
    if manifest.get("commit") != client.commit or not jar.exists():
        raise JavaClientMissing(f"{path} does not match the kafka-clients build: rebuild with "
                                f"`{BUILD_COMMAND}`")
    classpath = [*client.classpath, str(jar)]
    source = hashlib.sha256(WORKER_SOURCE.read_bytes() + jar.read_bytes()).hexdigest()[:12]
    where = CACHE / "member" / f"connect-{client.version}-{client.commit[:12]}-{source}"
    worker_jar = where / "connect-worker.jar"
    if not worker_jar.exists():
        compile_jar(WORKER_SOURCE, classpath, worker_jar, "the Connect worker")
    return ConnectMembershipBuild(client.version, client.commit, tuple(classpath), worker_jar)


# ----------------------------------------------------------------------------- the metrics


def _is_task(item: str) -> bool:
    return "/" in item


def universe_of(connectors: Iterable[tuple[str, int]]) -> set[str]:
    """Connectors and their tasks as the log names them (``A``, ``A/0``...)."""
    out: set[str] = set()
    for name, tasks in connectors:
        out.add(name)
        out.update(f"{name}/{i}" for i in range(tasks))
    return out


def _spread_ok(counts: Sequence[int]) -> bool:
    return not counts or max(counts) - min(counts) <= 1


def connect_metrics(records: Sequence[Mapping[str, Any]], disturbance: float, end: float,
                    configs: Sequence[tuple[float, set[str]]]) -> dict[str, Any]:
    """The KIP-415 grid's metrics (the module doc) from the workers' log records (``mono``
    times), the first disturbance's time, the run's end, and the configured items over time
    (``(from, items)``, the first from before the disturbance)."""
    recs = sorted(records, key=lambda r: float(r["mono"]))
    running: dict[tuple[str, str], float] = {}  # (worker, item) -> since
    intervals: dict[str, list[tuple[float, float]]] = {}
    ever_started: set[str] = set()
    restarts = 0
    last_assigned: dict[str, tuple[float, set[str], set[str]]] = {}
    live: set[str] = set()
    last_change = disturbance
    for r in recs:
        t, who, ev = float(r["mono"]), str(r["member"]), r.get("event")
        if ev == "start":
            live.add(who)
        elif ev in ("closing", "killed"):
            live.discard(who)
            if ev == "killed":
                for (w, item), began in list(running.items()):
                    if w == who:
                        intervals.setdefault(item, []).append((began, t))
                        del running[(w, item)]
        elif ev == "assigned":
            last_assigned[who] = (t, set(r.get("connectors", [])), set(r.get("tasks", [])))
            if t >= disturbance:
                last_change = max(last_change, t)
        elif ev == "started":
            for item in [*r.get("connectors", []), *r.get("tasks", [])]:
                if _is_task(item):
                    if item in ever_started and t >= disturbance:
                        restarts += 1
                    ever_started.add(item)
                running[(who, item)] = t
        elif ev == "item-stopping" or (ev == "stopping" and not r.get("queued")):
            # an item runs until its own stop begins: a revocation's "stopping" line only
            # queues its items behind the start/stop pool (``queued``), each item's
            # "item-stopping" line is its stop callable beginning (logs without it: all at once)
            for item in [*r.get("connectors", []), *r.get("tasks", [])]:
                opened = running.pop((who, item), None)
                if opened is not None:
                    intervals.setdefault(item, []).append((opened, t))
    for (_, item), began in running.items():
        intervals.setdefault(item, []).append((began, end))

    # downtime: each configured item's uncovered time from max(disturbance, configured) to end
    down = 0.0
    bounds = [*configs[1:], (end, set())]
    for (frm, items), (until, _) in zip(configs, bounds, strict=True):
        lo, hi = max(frm, disturbance), until
        if hi <= lo:
            continue
        for item in items:
            covered = 0.0
            spans = sorted((max(a, lo), min(b, hi)) for a, b in intervals.get(item, []))
            cur = lo
            for a, b in spans:
                if b <= cur:
                    continue
                covered += b - max(a, cur)
                cur = b
            down += (hi - lo) - covered

    # time until balanced: the final assignment, balanced and running
    final = configs[-1][1]
    held = {w: last_assigned[w] for w in live if w in last_assigned}
    assigned_items = [i for _, cs, ts in held.values() for i in (*cs, *ts)]
    balanced = (bool(held) and sorted(assigned_items) == sorted(final)
                and _spread_ok([len(cs) for _, cs, _ in held.values()])
                and _spread_ok([len(ts) for _, _, ts in held.values()]))
    since: float | None = None
    if balanced:
        latest = max([last_change, *(t for t, _, _ in held.values())])
        starts = [running.get((w, item)) for w, (_, _, ts) in held.items() for item in ts]
        if all(s is not None for s in starts):
            since = max([latest, *(s for s in starts if s is not None)])
    return {"task_restarts": restarts, "task_downtime_task_s": round(down, 3),
            "time_to_balance_ms": None if since is None else round((since - disturbance) * 1000),
            "balanced": balanced}


# ----------------------------------------------------------------------------- the run


@dataclass
class _Worker:
    name: str
    proc: subprocess.Popen[str]
    log: Path
    ready: threading.Event = field(default_factory=threading.Event)
    gone: bool = False


def _read_stdout(w: _Worker) -> None:
    assert w.proc.stdout is not None
    for line in w.proc.stdout:
        if line.strip() == "ready":
            w.ready.set()
    w.ready.set()


def _records(workdir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(workdir.glob("*.worker.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "mono" in rec:
                out.append(rec)
    return out


def _leader(records: Sequence[Mapping[str, Any]]) -> str | None:
    """The worker that leads the latest assignment (its member id is ``connect-<name>-...``)."""
    assigned = [r for r in records if r.get("event") == "assigned"]
    if not assigned:
        return None
    lead = str(max(assigned, key=lambda r: float(r["mono"])).get("leader", ""))
    return lead.removeprefix("connect-").rsplit("-", 1)[0] or None


def connector_started(records: Sequence[Mapping[str, Any]], connector: str,
                      since: float) -> float | None:
    """When a worker began starting ``connector`` (the monotonic time of its ``starting``
    line, at or after ``since``) and still runs it: the latest such start not followed by the
    same worker's stop of it; None when no worker has."""
    began: dict[str, float] = {}
    for r in sorted(records, key=lambda r: float(r["mono"])):
        t = float(r["mono"])
        if t < since or connector not in (r.get("connectors") or ()):
            continue
        ev, member = r.get("event"), str(r.get("member"))
        if ev == "starting":
            began[member] = t
        elif ev in ("stopping", "item-stopping"):
            began.pop(member, None)
    return max(began.values(), default=None)


def _spec(connectors: Mapping[str, int]) -> str:
    return ",".join(f"{n}={t}" for n, t in connectors.items())


def plan(sc: Scenario, seed: int) -> list[tuple[float, str, Any]]:
    """(seconds, action, argument) in time order: ``go`` a worker, ``stop``/``kill`` one
    (argument: a name or ``@leader``/``@follower``), ``config`` (argument: the connectors),
    ``tasks`` (argument: a created connector and its task count, written once a worker has
    started it: :func:`run_connect_wire`). ``add-connector`` is a ``config`` with the
    connector at no task followed by its ``tasks``."""
    for e in sc.events:
        if e.kind not in EVENTS:
            raise ConnectWireError(f"event kind {e.kind!r} is not played with Connect workers "
                                   f"on the wire (played: {', '.join(EVENTS)})")
    acts: list[tuple[float, str, Any]] = []
    names = [f"c{i}" for i in range(1, sc.members + 1)]
    for n, at_ms in zip(names, start_offsets_ms(sc, seed), strict=True):
        acts.append((at_ms / 1000, "go", n))
    connectors = dict(sc.connectors)
    created = sc.members
    for e in sorted(sc.events, key=lambda e: e.at_ms):
        at = e.at_ms / 1000
        if e.kind == "join":
            members = list(e.params.get("members", ()) or ())
            if not members:
                members = [f"c{created + i + 1}" for i in range(int(e.params.get("count", 1)))]
            for n in members:
                created += 1
                acts.append((at, "go", str(n)))
        elif e.kind in ("leave", "crash"):
            acts.append((at, "stop" if e.kind == "leave" else "kill", str(e["member"])))
        else:
            if e.kind == "add-connector":
                connectors[str(e["connector"])] = 0
                acts.append((at, "config", dict(connectors)))
                acts.append((at, "tasks", (str(e["connector"]), int(e["tasks"]))))
                continue
            if e.kind == "remove-connector":
                connectors.pop(str(e["connector"]), None)
            else:
                connectors[str(e["connector"])] = int(e["tasks"])
            acts.append((at, "config", dict(connectors)))
    acts.sort(key=lambda a: a[0])
    return acts


def run_connect_wire(sc: Scenario, protocol: str, seed: int, *, keep_dir: Path | None = None,
                     progress: Callable[[str], None] | None = None, start_stop_threads: int | None = None,
                     settle_s: float = 8.0, timeout_s: float | None = None) -> dict[str, Any]:
    """Play ``sc`` with real Connect workers (the module doc); returns the metrics with the
    run's facts (``workers``, ``leader_at_event``, ``load``, the first disturbance's time).
    ``settle_s``: the run ends once nothing happened in the workers' logs for this long after
    the last event (or at ``timeout_s`` after it: default the rebalance timeout plus KIP-415's
    delay plus 60 s). ``start_stop_threads``: the workers' start/stop pool (the herder's, 8:
    a revocation stops 8 connectors and tasks at a time); default the workload's
    ``start_stop_threads``, as the model runs it; 0, all at once."""
    from groupcoord.lab.wire import server_configs, start_server

    if protocol not in PROTOCOLS:
        raise ConnectWireError(f"protocol {protocol!r} has no Connect worker on the wire "
                               f"(known: {', '.join(PROTOCOLS)})")
    if not sc.events:
        raise ConnectWireError("the scenario has no disturbance to measure")
    acts = plan(sc, seed)
    rt = connect_runtime()
    wl = sc.workload
    pool = wl.start_stop_threads if start_stop_threads is None else start_stop_threads
    if timeout_s is None:
        timeout_s = (sc.rebalance_timeout_ms + sc.max_delay_ms) / 1000 + 60
    workdir = Path(tempfile.mkdtemp(prefix="gc-connect-")) if keep_dir is None else keep_dir
    workdir.mkdir(parents=True, exist_ok=True)
    server = start_server(workdir, server_configs(sc, {}))
    workers: dict[str, _Worker] = {}
    order: list[str] = []

    def spawn(name: str) -> _Worker:
        log = workdir / f"{name}.worker.log"
        cmd = [*rt.command(), "--bootstrap", server.bootstrap, "--group", sc.group_id,
               "--name", name, "--protocol", PROTOCOLS[protocol],
               "--connectors", _spec(dict(connectors_now)), "--log", str(log),
               "--session-timeout-ms", str(sc.session_timeout_ms),
               "--heartbeat-interval-ms", str(sc.heartbeat_interval_ms),
               "--rebalance-timeout-ms", str(sc.rebalance_timeout_ms),
               "--max-delay-ms", str(sc.max_delay_ms),
               "--task-stop-ms", str(round(wl.task_stop_ms)),
               "--task-start-ms", str(round(wl.task_start_ms)),
               "--start-stop-threads", str(pool), "--wait-go"]
        with open(workdir / f"{name}.stderr.log", "w") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, text=True)
        w = _Worker(name, proc, log)
        threading.Thread(target=_read_stdout, args=(w,), daemon=True).start()
        return w

    def send(w: _Worker, line: str) -> None:
        if w.proc.stdin is not None and w.proc.poll() is None:
            try:
                w.proc.stdin.write(line + "\n")
                w.proc.stdin.flush()
            except OSError:
                pass

    def write(connectors: dict[str, int]) -> None:
        configs.append((time.monotonic(), universe_of(connectors.items())))
        for n in order:
            if not workers[n].gone:
                send(workers[n], "config " + _spec(connectors))

    #: created connectors whose task configs are not written yet: (task count, created at)
    awaiting: dict[str, tuple[int, float]] = {}
    checked = [0.0]

    def write_task_configs() -> bool:
        """Writes the task configs of a created connector that has run for one connector
        start on a worker (``plan``'s ``tasks``); whether it wrote any."""
        now = time.monotonic()
        if not awaiting or now - checked[0] < 0.05:
            return False
        checked[0] = now
        recs = _records(workdir)
        wrote = False
        for c, (n, since) in sorted(awaiting.items()):
            began = connector_started(recs, c, since)
            if began is None:
                continue
            due = began + wl.task_start_ms / 1000
            if due > now + 0.1:
                continue
            time.sleep(max(0.0, due - time.monotonic()))
            del awaiting[c]
            if n != connectors_now.get(c):  # no task: nothing to write (Kafka writes nothing)
                connectors_now[c] = n
                if progress is not None:
                    progress(f"{protocol}: t={time.monotonic() - t0:6.1f} s tasks {c}={n}")
                write(connectors_now)
                wrote = True
        return wrote

    connectors_now: dict[str, int] = dict(sc.connectors)
    configs: list[tuple[float, set[str]]] = []
    first_event = min(e.at_ms for e in sc.events) / 1000
    loads: list[float] = []
    leader_at_event: str | None = None
    try:
        t0 = time.monotonic() + PRESTART_S
        configs.append((t0, universe_of(connectors_now.items())))
        pending = [a for a in acts if a[1] == "go"]
        for at, _, name in pending:
            if at < PRESTART_S:
                workers[name] = spawn(name)
        for at, action, arg in acts:
            while True:
                now = time.monotonic()
                for pat, _, pname in pending:
                    if pname not in workers and t0 + pat - PRESTART_S <= now:
                        workers[pname] = spawn(pname)
                if now >= t0 + at:
                    break
                write_task_configs()
                time.sleep(max(0.0, min(t0 + at - time.monotonic(), 0.02)))
            if at >= first_event and not loads:
                loads.append(os.getloadavg()[0])
            if progress is not None:
                shown = (_spec(arg) if action == "config" else
                         f"{arg[0]}={arg[1]} once started" if action == "tasks" else arg)
                progress(f"{protocol}: t={time.monotonic() - t0:6.1f} s {action} {shown}")
            if action == "go":
                w = workers[arg]
                w.ready.wait(30)
                send(w, "go")
                order.append(arg)
            elif action in ("stop", "kill"):
                name = str(arg)
                lead = _leader(_records(workdir))
                if at >= first_event and leader_at_event is None:
                    leader_at_event = lead
                if name in ("@leader", "@follower"):
                    live = [n for n in order if not workers[n].gone]
                    name = (lead if name == "@leader" else
                            next((n for n in live if n != lead), "")) or ""
                if name in workers and not workers[name].gone:
                    send(workers[name], action)
                    workers[name].gone = True
            elif action == "tasks":
                c, n = arg
                awaiting[str(c)] = (int(n), time.monotonic())
            else:
                if leader_at_event is None:
                    leader_at_event = _leader(_records(workdir))
                wanted = dict(arg)
                for c in list(awaiting):
                    if c not in wanted:  # removed before its tasks were written
                        del awaiting[c]
                        continue
                    if wanted[c] != connectors_now.get(c):  # the connector will generate these
                        awaiting[c] = (wanted[c], awaiting[c][1])
                    wanted[c] = connectors_now.get(c, 0)
                connectors_now = wanted
                write(connectors_now)
        last = time.monotonic()
        deadline = last + timeout_s
        while time.monotonic() < deadline:
            if write_task_configs():
                last = time.monotonic()
            recs = _records(workdir)
            latest = max((float(r["mono"]) for r in recs), default=last)
            if not awaiting and time.monotonic() - max(latest, last) >= settle_s:
                break
            time.sleep(0.05 if awaiting else 0.5)
        end = time.monotonic()
        loads.append(os.getloadavg()[0])
        for w in workers.values():
            if not w.gone:
                send(w, "stop")
        for w in workers.values():
            try:
                w.proc.wait(30)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait(10)
        recs = _records(workdir)
        errors = [r for r in recs if r.get("event") == "error"]
        if errors:
            raise RuntimeError(f"a Connect worker failed: {errors[0].get('error')}")
        out = connect_metrics([r for r in recs if float(r["mono"]) <= end],
                              t0 + first_event, end, configs)
        out.update({"workers": len(workers), "leader_at_event": leader_at_event,
                    "load": [round(x, 1) for x in loads], "seed": seed,
                    "runtime": rt.describe})
        return out
    finally:
        for w in workers.values():
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait(10)
        server.stop()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
