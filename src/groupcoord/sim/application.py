"""The application around each simulated member: the glue between ``sim.workload`` (the work
model: poll loops, batches, commits, metrics) and the simulations of every protocol.

:class:`Application` is one per simulation (``sim.application`` of
:class:`groupcoord.sim.consumer.ConsumerSimulation`); the simulation calls it where the
application meets the group protocol:

- what a process owns changed (:meth:`Application.assigned`, :meth:`Application.released`):
  a consumer process is one :class:`~groupcoord.sim.workload.Processor` (its poll loop), a
  Connect worker one per task (a task's thread; connectors do no record work);
- a revocation callback (:meth:`Application.revoke`): consumers run it in ``poll()``, after
  the batch in progress, commit synchronously what they processed (``commit_latency_ms``)
  and then let the member go on (``DEFER`` until then: the member keeps heartbeating, a
  classic eager member sends its JoinGroup only then, a KIP-848 member acknowledges only
  then); Connect workers stop the revoked tasks (``task_stop_ms``);
- a classic consumer's rejoin (:class:`PollGatedClassicConsumer`): asked by the heartbeat
  thread, joined from ``poll()``;
- offset commits (:meth:`Application.commit_sent`, :meth:`Application.commit_handled`): what a
  commit carries is what the process had polled (auto-commit) or processed (revocation), and
  it counts once the coordinator accepted it;
- ``max.poll.interval.ms``: a batch that outlasts it makes the member leave the group (no
  revocation callback, nothing committed) and rejoin as a new incarnation when the batch ends;
- classic members' metadata (:meth:`Application.classic_view`): partitions added to a topic
  are seen at the member's next metadata refresh (every ``metadata.max.age.ms``, the first one
  at a phase drawn per incarnation from the run's seed uniformly within the period; topics
  created or deleted are seen at once);
- the metrics of each disturbance window (:meth:`Application.totals`, the lag's peak).

With an ``idle`` workload nothing here runs: the members behave as they always did.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol
from uuid import UUID

from groupcoord.client.classic_consumer import COOPERATIVE, ClassicConsumerMember
from groupcoord.client.consumer import DEFER, ClientMemberState, Partitions
from groupcoord.coordinator.classic.messages import JoinGroupResponse
from groupcoord.coordinator.topics import MetadataImage, TopicMetadata
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_subscription
from groupcoord.sim.engine import Handler, Window
from groupcoord.sim.process import Proc
from groupcoord.sim.scenario import Scenario
from groupcoord.sim.workload import Processor, Resource, WorkModel, order_key


def _ordered(items: Iterable[Any]) -> list[Any]:
    """Resources in an order that is the same in every process (Connect items hold strings,
    whose hashes change with the interpreter's hash seed: no set order may leak into the
    order of events or of float sums)."""
    return sorted(items, key=order_key)


#: How long a converged run waits for its applications to catch up (at most), and how often
#: it looks whether they did.
RECOVERY_WAIT_MS = 60_000
RECOVERY_RECHECK_MS = 1_000


class PollGatedClassicConsumer(ClassicConsumerMember):
    """A classic consumer whose rejoins are joined from the application's ``poll()``.

    The Java consumer's heartbeat thread only marks a rejoin as needed (REBALANCE_IN_PROGRESS,
    a metadata or subscription change); ``ConsumerCoordinator.poll`` runs ``onJoinPrepare`` and
    sends the JoinGroup when the application next calls ``poll()``. Meanwhile the member stays
    Stable and keeps heartbeating. ``poll_gate(member)`` answers True when the application is
    in ``poll()`` now, else arranges for :meth:`rejoin_at_poll` to be called at its next one.
    Rejoins the member starts itself while handling a rebalance (a cooperative member after
    its revocation, a lost generation) are not gated: they happen inside ``poll()`` already or
    on errors the coordinator answered."""

    poll_gate: Callable[[PollGatedClassicConsumer], bool] | None = None

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._gated = False

    @property
    def rejoin_pending(self) -> bool:
        return self._gated or self._rejoin_needed

    def request_rejoin(self) -> None:
        gate = self.poll_gate
        if gate is not None and self.state is ClientMemberState.STABLE:
            if self._gated:
                return
            if not gate(self):
                self._gated = True
                return
        super().request_rejoin()

    def _on_join(self, resp: JoinGroupResponse) -> None:
        """An eager static leader back under KIP-814 (``skip_assignment``) as the Java
        consumer: ``ConsumerCoordinator.onLeaderElected`` keeps the existing assignment, takes
        the group's subscriptions from the response and the current metadata as its
        assignment snapshot (``assignmentSnapshot = metadataSnapshot``), and asks for no
        further round. The library's member asks for a follow-up round a heartbeat later
        instead (it cannot know what changed while it was away), which would charge every
        static rolling bounce of an eager group one stop-the-world rebalance the Java
        consumer does not start. A cooperative leader keeps the follow-up: its former
        incarnation may have revoked partitions withheld from their new owners (KIP-429's
        first round) and gone away before it rejoined, and the members' subscriptions in the
        response are those of their last JoinGroup, so they cannot tell; nobody else would
        start the second round. The snapshot keeps the leader's later metadata checks (a
        topic's new partitions) as the Java leader's."""
        super()._on_join(resp)
        if resp.error_code != 0 or not resp.skip_assignment or resp.leader != self.member_id \
                or self.protocol == COOPERATIVE:
            return
        topics: set[str] = set()
        for m in resp.members:
            with contextlib.suppress(ConsumerProtocolError):
                topics.update(decode_subscription(m.metadata).topics)
        self._group_topics = frozenset(topics)
        self._snapshot = self._partition_counts(self._group_topics)
        self._withheld = False

    def rejoin_at_poll(self) -> None:
        """The application is in ``poll()``: the rejoin it was asked for happens now."""
        if not self._gated:
            return
        self._gated = False
        if self.state is ClientMemberState.STABLE:
            super().request_rejoin()
        elif self.state in (ClientMemberState.JOINING, ClientMemberState.RECONCILING):
            self._rejoin_needed = True


class ApplicationHost(Protocol):
    """The simulation as its applications see it: what :class:`Application` reads and calls of
    :class:`~groupcoord.sim.consumer.ConsumerSimulation` (and its classic and Connect
    subclasses), which builds it with itself."""

    now: int
    step: int
    dirty: bool
    seed: int
    scenario: Scenario
    image: MetadataImage
    topic_names: dict[UUID, str]
    windows: list[Window]
    _open: list[Window]
    stats: dict[str, int]
    universe: frozenset[Any]
    procs: dict[str, Proc]
    commits_offsets: bool
    fast_forward: bool

    def at(self, t: int, handler: Handler, arg: Any = None) -> None: ...

    def trace(self, event: str, member: str = "", epochs: str | int = "",
              resource: Any = "") -> None: ...

    def leave(self, p: Proc, permanent: bool) -> None: ...

    def _commit(self, p: Proc, parts: Partitions, why: str) -> None: ...

    def _drive(self, p: Proc) -> None: ...

    def _restart_later(self, p: Proc, delay_ms: int) -> None: ...

    def _sync(self, p: Proc) -> None: ...

    def _revocation_done(self, arg: tuple[Proc, int]) -> None: ...


class Application:
    """The applications of one simulation (see the module docstring)."""

    def __init__(self, sim: ApplicationHost) -> None:
        self.sim = sim
        sc = sim.scenario
        wl = sc.workload
        self.on = not wl.idle
        self.connect = not sim.commits_offsets
        self.workload = wl
        interval = wl.auto_commit_interval_ms if wl.auto_commit_interval_ms is not None \
            else sc.commit_interval_ms
        self.model = WorkModel(wl, sim.seed, lambda: sim.now, sim.at, self._stale,
                               max_poll_interval_ms=sc.rebalance_timeout_ms,
                               commit_interval_ms=interval, connect=self.connect)
        if not self.connect:
            self.model.on_poll_timeout = self._poll_timeout
        if self.on and (wl.pause_every_ms > 0 or self.model.poison_field):
            # a paired control simulates every step: its members' pauses (and poison records'
            # blocks, as in the field) go on after it has caught up, and a jump of the clock
            # would skip them (``finish_control``)
            sim.fast_forward = False
        self.model.on_lag = self._lag
        self.model.on_late = self._late
        self.model.on_change = self._changed
        #: The lag's peak since the initial join settled (the run's headline).
        self.run_lag_peak = 0.0
        #: When the converged run first waited for its applications to catch up, and when
        #: it looks again.
        self._waiting_since: int | None = None
        self._recheck_at: int | None = None
        #: Commits in flight: id(request) -> (request, the position it commits per resource,
        #: whether it names every owned partition: :meth:`commit_handled`).
        self._commits: dict[int, tuple[Any, dict[Resource, float], bool]] = {}
        #: Whether an answer accepting every partition of such a commit is applied without a
        #: lookup per partition (off: each looked up, the same result).
        self.fast_commits = True
        #: Incarnations that left on a poll timeout: their revocation runs no callback.
        self._timed_out: set[tuple[str, int]] = set()
        #: Incarnations revoking (Connect: their tasks' offsets are flushed when they stop).
        self._stopping: dict[tuple[str, int], set[Any]] = {}
        #: Connect workers whose revocation stopped every task they ran: since when (their
        #: worker stall ends when the tasks of their next assignment run).
        self._stalled_since: dict[tuple[str, int], int] = {}
        #: Connect workers: the names of their task processors (assigned, not yet released).
        self._task_procs: dict[tuple[str, int], set[str]] = {}
        #: Classic members: the topic partitions each incarnation saw at its last refresh,
        #: and when it started (refreshes come every metadata.max.age.ms after it).
        self._seen: dict[tuple[str, int], dict[Any, int]] = {}
        self._started_at: dict[tuple[str, int], int] = {}
        #: Its own stream of the seed: the phase of each classic incarnation's refreshes.
        self._md_rng = random.Random(f"metadata:{sim.seed}")
        self._startup_rng = random.Random(f"startup:{sim.seed}")
        self._refresh_at: dict[tuple[str, int], int] = {}
        #: The universe and metadata image the resources were last synced with (the
        #: simulation keeps the same objects while they do not change: a process starting or
        #: stopping marks the universe for recomputation, which usually finds it unchanged).
        self._synced: tuple[object, object] = (None, None)
        #: Each topic's partition count when the resources were first synced with it (by
        #: topic id: a recreated topic is another): its production rate under
        #: ``growth_rate = "topic"`` is the workload's rate times this count.
        self._base_counts: dict[Any, int] = {}

    def _stale(self) -> None:
        self.sim.step -= 1  # a superseded wake-up: not an event of the simulation

    # ---------------------------------------------------------------- names

    @staticmethod
    def _key(p: Proc) -> tuple[str, int]:
        return (p.name, p.gen)

    def _pname(self, p: Proc, item: Any = None) -> str:
        return f"{p.name}#{p.gen}" if item is None else f"{p.name}#{p.gen}/{item[0]}/{item[1]}"

    def _is_task(self, item: Any) -> bool:
        return self.connect and isinstance(item, tuple) and item[1] >= 0

    # ---------------------------------------------------------------- resources

    def universe_changed(self) -> None:
        """The group's resources changed: new ones start producing now (a partition is
        tracked from when the group first subscribes to it until its topic is gone)."""
        if not self.on:
            return
        sim = self.sim
        if sim.universe is self._synced[0] and sim.image is self._synced[1]:
            return  # the same universe and topics as at the last sync: nothing to change
        self._synced = (sim.universe, sim.image)
        wl = self.workload
        wanted: dict[Any, float] = {}
        if self.connect:
            for item in _ordered(sim.universe):
                if self._is_task(item):
                    wanted[item] = wl.task_records_per_s
        else:
            names = sim.topic_names
            live = {t.topic_id for t in sim.image.by_name.values()}
            for k in self.model.resources:
                if isinstance(k, tuple) and k[0] in live:
                    wanted[k] = self.model.resources[k].rate * 1000.0
            per = self._partition_rates()
            if wl.growth_rate != "topic":
                per = {}
            rates: dict[Any, float] = {}
            for tp in _ordered(sim.universe):
                r = per.get(tp[0])
                if r is not None and tp in wanted and wanted[tp] != r:
                    rates[tp] = wanted[tp] = r  # (a grown topic: its rate spread)
                elif tp not in wanted:
                    wanted[tp] = wl.rate_of(names.get(tp[0], "")) if r is None else r
            if rates:
                self.model.set_rates(rates)
        self.model.sync_resources(wanted)

    def _partition_rates(self) -> dict[Any, float]:
        """``growth_rate = "topic"`` (``sim.workload``, "A topic's growth"): the records/s of
        each partition of a grown topic, by topic id: the topic's rate (the workload's rate a
        partition times its count when first seen here) over its partition count now; a topic
        that has not grown is not listed (its partitions keep the workload's rate, the same
        float as before the option)."""
        out: dict[Any, float] = {}
        base = self._base_counts
        for t in self.sim.image.by_name.values():
            n0 = base.setdefault(t.topic_id, t.num_partitions)
            if t.num_partitions != n0:
                out[t.topic_id] = self.workload.rate_of(t.name) * n0 / t.num_partitions
        return out

    def spawned(self, p: Proc) -> None:
        """A new incarnation of ``p`` started: a classic consumer's rejoins go through its
        application's ``poll()``."""
        if not self.on:
            return
        m = p.member
        if isinstance(m, PollGatedClassicConsumer):
            m.poll_gate = self.poll_gate(p)
            self.classic_spawned(p)

    # ---------------------------------------------------------------- ownership

    def assigned(self, p: Proc, items: Iterable[Any]) -> None:
        if not self.on:
            return
        if self.connect:
            tasks = 0
            for item in _ordered(items):
                if self._is_task(item):
                    tasks += 1
                    name = self._pname(p, item)
                    self._task_procs.setdefault(self._key(p), set()).add(name)
                    self.model.processor(name).assign(
                        [item], delay_ms=self.workload.task_start_ms)
            since = self._stalled_since.pop(self._key(p), None) if tasks else None
            if since is not None:
                self._worker_stall(self.sim.now + self.workload.task_start_ms - since)
            return
        self.model.processor(self._pname(p)).assign(_ordered(items))

    def released(self, p: Proc, items: Iterable[Any]) -> None:
        if not self.on:
            return
        key = self._key(p)
        stopping = self._stopping.get(key, set())
        if self.connect:
            names = self._task_procs.get(key, set())
            for item in _ordered(items):
                if self._is_task(item):
                    name = self._pname(p, item)
                    self.model.drop(name, commit=item in stopping)
                    names.discard(name)
                    stopping.discard(item)
            return
        proc = self.model.processors.get(self._pname(p))
        if proc is not None:
            proc.release(_ordered(items), commit=False)

    def stopped(self, p: Proc) -> None:
        """The process is gone (crashed, exited): its applications stop."""
        if not self.on:
            return
        key = self._key(p)
        if self.connect:
            prefix = self._pname(p) + "/"
            for name in [n for n in self.model.processors if n.startswith(prefix)]:
                self.model.drop(name, commit=False)
        else:
            self.model.drop(self._pname(p), commit=False)
        self._stopping.pop(key, None)
        self._stalled_since.pop(key, None)  # gone: no barrier holds it
        self._task_procs.pop(key, None)
        self._timed_out.discard(key)
        self._seen.pop(key, None)
        self._refresh_at.pop(key, None)

    # ---------------------------------------------------------------- revocations

    def revoke(self, p: Proc, parts: frozenset[Any], slow_ms: int) -> object:
        """The revocation callback (see the module docstring); ``slow_ms``: a ``slow``
        scenario event's extra time. Returns ``DEFER`` while the callback has not finished."""
        sim = self.sim
        key = self._key(p)
        if key in self._timed_out:
            return None  # left on a poll timeout: no callback ran, nothing committed
        gen = p.gen
        if self.connect:
            tasks = [it for it in _ordered(parts) if self._is_task(it)]
            self._stopping.setdefault(key, set()).update(tasks)
            # a worker leaving stops everything at once (the herder's halt), a rebalance's
            # revocation through the start/stop pool, wave by wave (:meth:`stop_waves`): a
            # task keeps processing until its own wave's stop starts
            step = self.workload.task_stop_ms
            for k, wave in enumerate(self.stop_waves(parts, p.leaving)):
                stopping = [it for it in wave if self._is_task(it)]
                if not stopping:
                    continue  # connectors only: no record work stops
                if k == 0 or step <= 0:
                    self._stop_wave((p, gen, stopping))
                else:
                    sim.at(sim.now + k * step, self._stop_wave, (p, gen, stopping))
            items = 0 if p.leaving else len(parts)
            delay = (self.stop_ms(items) if tasks else 0) + slow_ms
            if delay <= 0:
                return None
            sim.at(sim.now + delay, sim._revocation_done, (p, gen))
            return DEFER
        proc = self.model.processor(self._pname(p))
        latency = self.workload.commit_latency_ms if sim.commits_offsets else 0
        # a KIP-848 member's lateness is its revocation's (a classic member's, its rejoin's)
        measured = not isinstance(p.member, PollGatedClassicConsumer)
        asked = sim.now

        def in_poll() -> None:
            if p.gen != gen or not p.alive:
                return
            if measured:
                self.model.late(asked)
            if sim.commits_offsets:
                sim._commit(p, parts, "revoke")
            proc.deactivate(_ordered(parts), commit=False)
            sim.at(sim.now + latency + slow_ms, sim._revocation_done, (p, gen))

        proc.next_poll()  # (brings it to now: a batch may end now)
        if not proc.busy:
            if measured:
                self.model.late(asked)
            if sim.commits_offsets:
                sim._commit(p, parts, "revoke")
            proc.deactivate(_ordered(parts), commit=False)
            if latency + slow_ms <= 0:
                return None
            sim.at(sim.now + latency + slow_ms, sim._revocation_done, (p, gen))
            return DEFER
        sim.trace("busy", p.name, p.member.member_epoch,
                  f"revocation at poll, {proc.next_poll() - sim.now} ms")
        proc.at_poll(in_poll)
        return DEFER

    def stop_waves(self, parts: Iterable[Any], leaving: bool = False) -> list[list[Any]]:
        """The waves in which a Connect worker's revocation stops ``parts``: wave ``k``'s
        stops start ``k * task_stop_ms`` after the revocation (:meth:`stop_ms`).

        The order is Kafka's (read at the 4.0.0-SNAPSHOT commit named in :meth:`stop_ms`):
        ``DistributedHerder``'s rebalance listener (``onRevoked``)
        lists one stopping callable per revoked connector, then one per revoked task, each
        in the order of the revoked collection, and ``startAndStop`` hands the list to the
        fixed pool's ``invokeAll``, whose threads take the callables first in, first out.
        The model's revoked collection is in the assignment's order (Kafka's
        ``ConnectorsAndTasks``: connectors by name, tasks by connector, then task number; the
        same in every process): connectors first, then tasks, 8 (``start_stop_threads``) to
        a wave. A worker leaving (the herder's halt) and a pool of 0 stop everything in one
        wave."""
        ordered = sorted(parts, key=lambda it: (it[0], it[1]))
        items = [it for it in ordered if not self._is_task(it)] + \
            [it for it in ordered if self._is_task(it)]
        n = self.workload.start_stop_threads
        if leaving or n <= 0:
            return [items] if items else []
        return [items[i:i + n] for i in range(0, len(items), n)]

    def _stop_wave(self, arg: tuple[Proc, int, list[Any]]) -> None:
        """One wave of a Connect worker's revocation starts its stops: its tasks stop
        processing now (their offsets are flushed when they are released); the worker's stall
        starts when the last task it ran stops."""
        p, gen, tasks = arg
        key = (p.name, gen)
        stopping = self._stopping.get(key)
        if p.gen != gen or not p.alive or not stopping:
            self._stale()  # the worker is gone or its revocation ended: nothing stops
            return
        running = self._runs_tasks(p)
        self.sim.trace("stop-wave", p.name, p.member.member_epoch,
                       ",".join(f"{c}/{t}" for c, t in tasks))
        for it in tasks:
            proc = self.model.processors.get(self._pname(p, it))
            if proc is not None and it in stopping:
                proc.deactivate([it], commit=True)
        if running and not self._runs_tasks(p):
            self._stalled_since.setdefault(key, self.sim.now)

    def stop_ms(self, items: int) -> int:
        """How long a Connect worker's revocation of ``items`` connectors and tasks takes to
        stop them: ``ceil(items / start_stop_threads) * task_stop_ms`` (all at once, one
        ``task_stop_ms``, when the pool is 0).

        What Kafka does (Apache Kafka's ``connect/runtime``, read at the 4.0.0-SNAPSHOT trunk
        commit ``1eb7644349cb``, 2024-10-25, the snapshot the lab's wire workers are built
        from; not re-read at 4.3): ``DistributedHerder`` runs a fixed pool of
        ``START_STOP_THREAD_POOL_SIZE`` (8) threads, ``startAndStopExecutor``, and
        ``startAndStop(callables)`` hands it a list of callables with ``invokeAll`` (it
        returns when every one has). The rebalance listener's
        ``onRevoked`` (eager: every connector and task the worker ran, as
        ``WorkerCoordinator.onJoinPrepare`` revokes the whole assignment; incremental
        cooperative: the revoked ones, from ``onJoinComplete``) builds one
        ``getConnectorStoppingCallable`` per connector and one ``getTaskStoppingCallable`` per
        task and runs them through ``startAndStop``: each stopping callable is
        ``Worker.stopAndAwaitConnector`` / ``Worker.stopAndAwaitTask``, which signals its one
        task (``stopTask``) and waits for it (``awaitStopTasks`` of that task alone, up to
        ``task.shutdown.graceful.timeout.ms``, 5 s). So **stops are bounded**: 8 connectors or
        tasks at a time, the revocation (and with it an eager worker's JoinGroup, a
        cooperative worker's follow-up) ends after ``ceil(items / 8)`` stop times. (The
        concurrent stop, ``Worker.stopAndAwaitTasks(ids)``: signal all, then await all, is used
        for task reconfiguration and the herder's shutdown, not by a rebalance.) **Starts are
        not bounded in time**: ``startWork`` runs one ``getConnectorStartingCallable`` /
        ``getTaskStartingCallable`` per new item through the same pool, but a starting
        callable returns once ``Worker.startConnector`` / ``Worker.startTask`` has built the
        task and submitted it to the worker's own (cached, unbounded) executor; the task's
        start-up (``WorkerTask.run``: ``initializeAndStart``, the connector's ``start``) runs
        on its own thread. So every task of an assignment starts ``task_start_ms`` after it
        (:meth:`assigned`). A worker that stops (``DistributedHerder.halt``, before it leaves
        the group) stops its work with ``Worker.stopAndAwaitConnectors()`` and
        ``stopAndAwaitTasks()``: every item signalled, then awaited, no pool; the model stops
        a leaving worker's items at once (``items`` 0: one ``task_stop_ms``; Kafka's halt
        awaits the connectors, then the tasks). **A task queued behind the pool keeps
        running**: a stopping callable is ``Worker.stopAndAwaitTask``, which calls
        ``stopTask`` (``WorkerTask.stop()``: ``triggerStop``, the flag the task's own thread
        reads) and then awaits that task; until its callable runs, the task's thread goes on
        in ``WorkerSinkTask.execute``'s ``while (!isStopping()) iteration()`` (a source task:
        ``AbstractWorkerSourceTask.execute``'s ``while (!isStopping())``), polling and
        processing. The same path serves eager (``WorkerCoordinator.onJoinPrepare``) and
        incremental cooperative (``onJoinComplete``) revocations. So the model stops each
        task's processing when its own wave's stop starts (:meth:`stop_waves`, wave ``k`` at
        ``k * task_stop_ms``): its downtime and the input's stall start there, not at the
        revocation; the worker still answers the rebalance after the last wave. (Until
        2026-11-29 the model stopped every revoked task at the revocation.) A revocation of
        connectors only costs nothing in the model (connectors do no record work), as before
        the pool. The rule is the worker's, so it
        holds on both group types (classic-connect, and the Connect draft's ``connect``),
        eager and incremental cooperative."""
        return self.workload.stop_ms(items)

    def poll_gate(self, p: Proc) -> Callable[[PollGatedClassicConsumer], bool]:
        """The gate of a classic consumer's rejoins (:class:`PollGatedClassicConsumer`)."""
        sim = self.sim
        gen = p.gen

        def gate(member: PollGatedClassicConsumer) -> bool:
            proc = self.model.processors.get(self._pname(p))
            if proc is None:
                return True
            wait = proc.next_poll() - sim.now  # (brings it to now: a batch may end now)
            asked = sim.now
            if not proc.busy:
                self.model.late(asked)
                return True
            member._gated = True

            def at_poll() -> None:
                if p.gen != gen or not p.alive or p.member is not member:
                    return
                self.model.late(asked)
                member.rejoin_at_poll()
                sim._sync(p)
                sim._drive(p)

            sim.trace("busy", p.name, member.generation, f"rejoin at poll, {wait} ms")
            proc.at_poll(at_poll)
            return False
        return gate

    def _poll_timeout(self, proc: Processor, batch_end: int) -> None:
        sim = self.sim
        name, _, gen = proc.name.partition("#")
        p = sim.procs.get(name)
        if p is None or str(p.gen) != gen or not p.alive or p.leaving:
            return
        sim.trace("poll-timeout", p.name, p.member.member_epoch,
                  f"batch until {batch_end} > max.poll.interval.ms: leaves the group")
        sim.stats["poll_timeouts"] = sim.stats.get("poll_timeouts", 0) + 1
        self._timed_out.add(self._key(p))
        sim.leave(p, permanent=False)
        sim._restart_later(p, max(batch_end - sim.now, 0))

    # ---------------------------------------------------------------- commits

    def commit_sent(self, p: Proc, req: Any, parts: Collection[Any], why: str) -> None:
        if not self.on:
            return
        proc = self.model.processors.get(self._pname(p))
        if proc is None:
            return
        # (an auto-commit names every owned partition: the request's partitions are
        # ``parts``, and each resource of the positions is one of them)
        self._commits[id(req)] = (req, proc.commit_positions(parts, polled=why != "revoke"),
                                  parts is getattr(p.member, "owned", None))

    def commit_answered(self, req: Any, response: Any, codes: Collection[int]) -> None:
        """The coordinator answered a commit with these error codes: what it accepted is
        committed (:meth:`commit_handled`); a commit it refused whole commits nothing, and its
        positions are forgotten."""
        if 0 in codes:
            self.commit_handled(req, response, len(codes) == 1)
        else:
            self._commits.pop(id(req), None)

    def commit_handled(self, req: Any, response: Any, all_accepted: bool = False) -> None:
        """The coordinator answered a commit: the partitions it accepted are committed.
        ``all_accepted``: every partition of the answer was (its error codes are all 0); the
        answer names each partition of the request, so a commit of every owned partition
        commits each of its positions, without a lookup per partition of the answer."""
        # (popped: an answered commit is done with; the entry holds the request, so its id
        # is not reused while it waits)
        entry = self._commits.pop(id(req), None)
        if entry is None or entry[0] is not req:
            return
        positions = entry[1]
        if all_accepted and entry[2] and self.fast_commits:
            for res, at in positions.items():
                if at > res.committed:
                    res.committed = at
            return
        of_topic = self.model.partition_resources
        for t in response.topics:
            resources = of_topic(t.topic_id)  # (the model's resource of (topic id, partition))
            for pr in t.partitions:
                if pr.error_code == 0:
                    r = resources.get(pr.partition_index)
                    if r is not None:
                        pos = positions.get(r)
                        if pos is not None and pos > r.committed:
                            r.committed = pos

    # ---------------------------------------------------------------- classic metadata

    def classic_spawned(self, p: Proc) -> None:
        key = self._key(p)
        # The refresh timer's phase: a real client refreshes metadata every
        # metadata.max.age.ms since its last refresh, and anything may have refreshed it
        # (start-up, a leader change, a produce error), so where the period falls relative to
        # a topic's growth is uniform: the first refresh comes within one period of the start.
        # Under metadata_phase "start" (``sim.workload``) the first refresh is at the start: a
        # client started for the run fetches the topic's metadata at its first poll.
        age = self.workload.metadata_max_age_ms
        drawn = age > 0 and self.workload.metadata_phase == "drawn"
        self._started_at[key] = self.sim.now + (self._md_rng.randrange(age) if drawn else 0)
        self._seen[key] = {t.topic_id: t.num_partitions for t in self.sim.image.by_name.values()}

    def classic_view(self, p: Proc) -> list[TopicMetadata]:
        """The topics a classic member sees now: partitions added since its last metadata
        refresh are not seen yet (its next refresh is scheduled)."""
        image = self.sim.image
        age = self.workload.metadata_max_age_ms
        if not self.on or age <= 0:
            return list(image.by_name.values())
        key = self._key(p)
        seen = self._seen.setdefault(key, {})
        out = []
        stale = False
        for t in image.by_name.values():
            n = seen.get(t.topic_id)
            if n is not None and n < t.num_partitions:
                out.append(TopicMetadata(t.topic_id, t.name, n))
                stale = True
            else:
                out.append(t)
                seen[t.topic_id] = t.num_partitions
        if stale and key not in self._refresh_at:
            first = self._started_at.get(key, 0)
            now = self.sim.now
            at = first if now < first else first + ((now - first) // age + 1) * age
            self._refresh_at[key] = at
            self.sim.at(at, self._refresh, (p, p.gen))
        return out

    def _refresh(self, arg: tuple[Proc, int]) -> None:
        p, gen = arg
        sim = self.sim
        key = (p.name, gen)
        if p.gen != gen or not p.alive or self._refresh_at.get(key) != sim.now:
            return
        del self._refresh_at[key]
        self._seen[key] = {t.topic_id: t.num_partitions for t in sim.image.by_name.values()}
        sim.trace("md-refresh", p.name, "", "metadata.max.age.ms")
        m: Any = p.member
        m.update_metadata(sim.image.by_name.values(), sim.now)
        sim._drive(p)

    # ---------------------------------------------------------------- metrics

    def _lag(self, lag: float) -> None:
        initial = False
        for w in self.sim._open:
            if lag > w.lag_peak:
                w.lag_peak = lag
            initial = initial or w.label == "initial-join"
        if not initial and lag > self.run_lag_peak and self.sim.windows:
            self.run_lag_peak = lag

    def _runs_tasks(self, p: Proc) -> bool:
        """Whether any task of the Connect worker ``p`` is running (processing)."""
        procs = self.model.processors
        return any(proc is not None and proc.active
                   for proc in (procs.get(n) for n in self._task_procs.get(self._key(p), ())))

    def _worker_stall(self, ms: float) -> None:
        """A Connect worker's stall (from the revocation that stopped all its tasks until the
        tasks of its next assignment run: the stop, the rebalance's barrier wait for the other
        workers, the start) counts in every open window not yet cut by the next one."""
        for w in self.sim._open:
            if w.cut_ms is None:
                w.worker_stalls.append(ms)

    def _late(self, ms: float) -> None:
        """A member's lateness counts in every open window not yet cut by the next one."""
        for w in self.sim._open:
            if w.cut_ms is None:
                w.lateness.append(ms)

    def _changed(self) -> None:
        self.sim.dirty = True  # the run may end once the applications recovered

    def may_end(self) -> bool:
        """Whether a converged run may end: once the applications caught up (what a
        rebalance costs them outlasts the group's convergence: a warm-up, a catch-up), or
        :data:`RECOVERY_WAIT_MS` after the group first converged without them (members that
        cannot keep up never catch up)."""
        if not self.on or self.model.recovered():
            return True
        sim = self.sim
        if self._waiting_since is None:
            self._waiting_since = sim.now
        if sim.now >= self._waiting_since + RECOVERY_WAIT_MS:
            return True
        if self._recheck_at is None or self._recheck_at <= sim.now:  # look again in a while
            self._recheck_at = sim.now + RECOVERY_RECHECK_MS
            sim.at(self._recheck_at, self._recheck, self._recheck_at)
        return False

    def _recheck(self, at: int) -> None:
        if at != self._recheck_at:
            self._stale()
            return
        self._changed()

    def totals(self) -> dict[str, float] | None:
        return self.model.totals() if self.on else None


    def startup_ms(self) -> int:
        """How long a new process takes before its first request: drawn per process from
        the run's seed, uniformly within half to one and a half times ``startup_ms`` (three
        processes started together do not come up together: each then joins on its own and
        the group rebalances for each, as on the wire)."""
        if not self.on or self.workload.startup_ms <= 0:
            return 0
        su = self.workload.startup_ms
        return su // 2 + self._startup_rng.randrange(su)

    def reaction_bound_ms(self) -> int:
        """How much later than an idle member a working one may answer a rebalance, per
        round: its batch (at most ``max.poll.interval.ms``, when it leaves the group), the
        revocation's commit, a Connect worker's stops (:meth:`stop_ms`: at most every item of
        the group on one worker) and starts."""
        if not self.on:
            return 0
        wl = self.workload
        stop = self.stop_ms(len(self.sim.universe)) if self.connect else wl.task_stop_ms
        return int(self.sim.scenario.rebalance_timeout_ms + wl.commit_latency_ms
                   + stop + wl.task_start_ms + wl.startup_ms)

    def summary(self) -> dict[str, Any]:
        if not self.on:
            return {"workload": "idle"}
        t = self.model.totals()
        out: dict[str, Any] = {"workload": self.workload.describe(),
                               "work": {k: round(v, 3) for k, v in t.items()}
                               | {"lag_now": round(self.model.lag_now, 3),
                                  "lag_peak_after_initial": round(self.run_lag_peak, 3),
                                  "poll_timeouts": self.model.poll_timeouts}
                               | self.model.poison_summary()}
        grown = self.growth()
        if grown:
            out["growth"] = grown
        return out

    def growth(self) -> list[dict[str, Any]]:
        """Each topic that grew during the run: its partition count and its production before
        and after (records/s a partition and the topic's), and the workload's
        ``growth_rate`` (``sim.workload``, "A topic's growth")."""
        out = []
        wl = self.workload
        for t in self.sim.image.by_name.values():
            n0 = self._base_counts.get(t.topic_id)
            if n0 is None or n0 == t.num_partitions:
                continue
            rate = wl.rate_of(t.name)
            after = rate * n0 / t.num_partitions if wl.growth_rate == "topic" else rate
            out.append({"topic": t.name, "partitions": [n0, t.num_partitions],
                        "records_per_s_partition": [rate, after],
                        "records_per_s_topic": [rate * n0, after * t.num_partitions],
                        "growth_rate": wl.growth_rate})
        return out
