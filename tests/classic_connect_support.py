"""Test support: Connect workers (``client/connect/classic_worker.py``) in a classic group on a
real in-process shard, driven deterministically.

:class:`ConnectCluster` owns a :class:`~tests.test_classic_support.Harness` (the shard, its clock,
tokens and deferred completions) and a set of named workers. :meth:`ConnectCluster.pump` sends
whatever the workers have to send and hands every answered request back to its worker until
nothing moves; :meth:`ConnectCluster.advance` moves the clock from deadline to deadline (worker
deadlines and shard timers alike), pumping at each. After every pump the workers' client view is
checked: no connector or task runs on two workers (I1), and each worker's listener agrees with
what the worker says it runs. Every round a leader computes is recorded in
:attr:`ConnectCluster.rounds`.

The config topic is a shared snapshot the test controls (:class:`ConfigTopic`); each worker reads
it through a :class:`ConfigReader`, which can be made to lag behind (for CONFIG_MISMATCH).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from groupcoord.client.connect.classic_worker import ClassicConnectWorker, LeaderRound, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.listener import DEFER, Connectors, ConnectRebalanceListener, Tasks
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupState
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.protocol.connect_protocol import ConnectorsAndTasks

from .test_classic_support import Call, Harness
from .test_connect_assignors import kip


class ConfigTopic:
    """The Connect config topic: the latest snapshot, published by the test."""

    def __init__(self, snapshot: ConfigSnapshot) -> None:
        self.latest = snapshot

    def publish(self, snapshot: ConfigSnapshot) -> None:
        assert snapshot.offset > self.latest.offset
        self.latest = snapshot


class ConfigReader:
    """One worker's view of the topic; a lagging reader sees new snapshots only when it reads
    to the end."""

    def __init__(self, topic: ConfigTopic, *, lagging: bool = False) -> None:
        self.topic = topic
        self.view = topic.latest
        self.lagging = lagging
        self.reads_to_end = 0

    def snapshot(self) -> ConfigSnapshot:
        if not self.lagging:
            self.view = self.topic.latest
        return self.view

    def read_to_end(self) -> ConfigSnapshot:
        self.reads_to_end += 1
        self.view = self.topic.latest
        return self.view


@dataclass
class RecordingListener(ConnectRebalanceListener):
    """Keeps what the application runs, from the callbacks alone, and the callbacks' log."""

    connectors: set[str] = field(default_factory=set)
    tasks: set[object] = field(default_factory=set)
    events: list[tuple[str, tuple[str, ...], tuple[object, ...]]] = field(default_factory=list)
    #: Stop revoked work later (``DEFER``); :meth:`finish_revocation` completes it.
    defer: bool = False
    stopping: tuple[Connectors, Tasks] | None = None

    def on_revoked(self, connectors: Connectors, tasks: Tasks) -> object:
        assert set(connectors) <= self.connectors and set(tasks) <= self.tasks, "revoking idle work"
        self.events.append(("revoked", connectors, tasks))
        if self.defer:
            self.stopping = (connectors, tasks)
            return DEFER
        self.connectors -= set(connectors)
        self.tasks -= set(tasks)
        return None

    def finish_revocation(self) -> None:
        assert self.stopping is not None
        connectors, tasks = self.stopping
        self.stopping = None
        self.connectors -= set(connectors)
        self.tasks -= set(tasks)

    def on_assigned(self, connectors: Connectors, tasks: Tasks) -> None:
        assert not (set(connectors) & self.connectors) and not (set(tasks) & self.tasks), \
            "starting work that already runs"
        self.connectors |= set(connectors)
        self.tasks |= set(tasks)
        self.events.append(("assigned", connectors, tasks))

    def on_lost(self, connectors: Connectors, tasks: Tasks) -> None:
        self.connectors -= set(connectors)
        self.tasks -= set(tasks)
        self.events.append(("lost", connectors, tasks))


def name_of(member_id: str) -> str:
    """Member ids are ``{client_id}-{n}``; the client id is the worker's name."""
    return member_id.split("-", 1)[0]


def table(rnd: LeaderRound) -> dict[str, tuple[int, set[str], set[str]]]:
    """A leader's round as the KIP prints it: worker -> (delay, assigned, revoked), where
    "assigned" is what the worker runs once it has applied the round."""
    r = rnd.result
    return {name_of(mid): (a.delay, kip(r.allocations[mid]), kip(a.revoked))
            for mid, a in sorted(r.assignments.items())}


class ConnectCluster:
    def __init__(self, config: ConfigSnapshot, *, protocol: str = "sessioned",
                 coordinator: CoordinatorConfig | None = None, **worker_kw: object) -> None:
        self.h = Harness(coordinator)
        self.topic = ConfigTopic(config)
        self.protocol = protocol
        self.worker_kw = worker_kw
        self.workers: dict[str, ClassicConnectWorker] = {}
        self.listeners: dict[str, RecordingListener] = {}
        self.readers: dict[str, ConfigReader] = {}
        self.pending: list[tuple[Call, ClassicConnectWorker]] = []
        self.rounds: list[LeaderRound] = []
        self._seen: set[int] = set()
        #: Workers that do nothing (a long pause): not polled, their answers held back.
        self.paused: set[str] = set()
        #: Workers cut off from the coordinator: every request they send fails.
        self.cut: set[str] = set()
        #: The most items a zombie (:meth:`check`) ran at once that another worker ran too.
        self.zombie_overlaps = 0

    @property
    def now(self) -> int:
        return self.h.now

    # ---------------------------------------------------------------- membership

    def start(self, *names: str, protocol: str | None = None, lagging: bool = False,
              **kw: object) -> None:
        """Start workers (a restarted worker is a new process: new member, nothing running)."""
        for n in names:
            self.listeners[n] = RecordingListener()
            self.readers[n] = ConfigReader(self.topic, lagging=lagging)
            w = ClassicConnectWorker("connect-cluster", f"http://{n}:8083/", self.readers[n],
                                     protocol=protocol or self.protocol, listener=self.listeners[n],
                                     client_id=n, **{**self.worker_kw, **kw})  # type: ignore[arg-type]
            self.workers[n] = w
            w.start(self.now)
        self.pump()

    def stop(self, *names: str) -> None:
        """Workers shut down: stop their work, leave the group."""
        for n in names:
            self.workers[n].leave(self.now)
        self.pump()
        for n in names:
            assert self.workers[n].state is WorkerState.UNJOINED
            del self.workers[n]

    def crash(self, *names: str) -> None:
        """Workers die without a word (the coordinator finds out by the session timeout)."""
        for n in names:
            del self.workers[n]
        self.pending = [(c, w) for c, w in self.pending if w in self.workers.values()]

    # ---------------------------------------------------------------- driving

    def pump(self) -> None:
        for _ in range(10_000):
            moved = False
            still = []
            asleep = {id(self.workers[n]) for n in self.paused}
            for call, w in self.pending:
                if call.done and id(w) not in asleep:
                    if call.response is not None:
                        w.on_response(call.response, self.now)
                    else:
                        w.on_request_failed(self.now)
                    moved = True
                else:
                    still.append((call, w))
            self.pending = still
            for n, w in list(self.workers.items()):
                if n in self.paused:
                    continue
                req = w.poll_request(self.now)
                if req is not None and n in self.cut:
                    w.on_request_failed(self.now)
                elif req is not None:
                    self.pending.append((self.h.send(req), w))
                    moved = True
            self._collect_rounds()
            self.check()
            if not moved:
                return
        raise AssertionError("the workers never went quiet")

    def next_deadline(self) -> int | None:
        ds = [d for n, w in self.workers.items()
              if n not in self.paused and (d := w.next_deadline()) is not None]
        shard = self.h.shard.next_deadline()
        if shard is not None:
            ds.append(shard)
        return min(ds) if ds else None

    def advance(self, ms: int) -> None:
        """Move the clock ``ms`` on, acting at every deadline on the way."""
        target = self.now + ms
        self.pump()
        while True:
            d = self.next_deadline()
            if d is None or d > target:
                break
            self.h.advance(max(d - self.now, 0))
            self.pump()
            if d <= self.now and self.next_deadline() == d:
                raise AssertionError(f"deadline {d} does not move: {self.workers}")
        self.h.advance(target - self.now)
        self.pump()

    def settled(self) -> bool:
        return not self.pending and all(w.state is WorkerState.STABLE and
                                        (d := w.next_deadline()) is not None and d > self.now
                                        for w in self.workers.values())

    def settle(self, limit_ms: int = 120_000) -> None:
        """Advance deadline by deadline until every worker is Stable in the group's generation
        and nothing is in flight."""
        start = self.now
        self.pump()
        while not (self.settled() and self._one_generation()):
            assert self.now - start <= limit_ms, f"no settlement: {self.workers}"
            d = self.next_deadline()
            assert d is not None, f"stuck: {self.workers}"
            self.h.advance(max(d - self.now, 0))
            self.pump()

    def _one_generation(self) -> bool:
        g = self.h.shard.groups.get("connect-cluster")
        gens = {w.generation for w in self.workers.values()}
        return isinstance(g, ClassicGroup) and g.state is ClassicGroupState.STABLE and \
            gens == {g.generation_id}

    def _collect_rounds(self) -> None:
        for w in self.workers.values():
            rnd = w.last_leader_round
            if rnd is not None and id(rnd) not in self._seen:
                self._seen.add(id(rnd))
                self.rounds.append(rnd)

    # ---------------------------------------------------------------- views and checks

    def check(self) -> None:
        """I1 on the workers' side (what the applications run, from their callbacks), and every
        listener agrees with its worker. A worker the coordinator no longer counts as a member
        (removed while it still stops its work) or that left the group on a poll timeout and
        runs what it kept through the leave (until an assignment confirms it) is a zombie, as
        the simulator's I1 counts it (``ClassicConnectSimulation.is_fenced``): its work is not
        compared (:attr:`zombie_overlaps` counts what it shares with the others)."""
        seen: dict[object, str] = {}
        g = self.h.shard.groups.get("connect-cluster")
        members = g.members if isinstance(g, ClassicGroup) else {}
        zombies = {n for n, w in self.workers.items()
                   if w.kept_after_poll_timeout or (w.member_id not in members
                                                    and not w.running.is_empty())}
        for n, w in self.workers.items():
            lst = self.listeners[n]
            assert set(w.running.connectors) == lst.connectors and set(w.running.tasks) == lst.tasks, n
            if n in zombies:
                continue
            for item in (*lst.connectors, *lst.tasks):
                assert item not in seen, f"{item} runs on {seen[item]} and {n}"
                seen[item] = n
        for n in sorted(zombies):
            lst = self.listeners[n]
            self.zombie_overlaps = max(self.zombie_overlaps, len(
                (lst.connectors | lst.tasks) & set(seen)))

    def runs(self) -> dict[str, set[str]]:
        return {n: kip(w.running) for n, w in sorted(self.workers.items())}

    def complete(self) -> None:
        """I2 on the workers' side: every configured item runs exactly once."""
        everything = self.topic.latest.all()
        running = ConnectorsAndTasks.of(
            [c for w in self.workers.values() for c in w.running.connectors],
            [t for w in self.workers.values() for t in w.running.tasks])
        assert running == everything
        assert sum(w.running.size() for w in self.workers.values()) == everything.size()

    def finish_revocation(self, name: str) -> None:
        """The application of worker ``name`` finished stopping what it deferred."""
        self.listeners[name].finish_revocation()
        self.workers[name].complete_revocation(self.now)
        self.pump()

    def leader(self) -> str:
        leaders = {name_of(w.leader_id) for w in self.workers.values()}
        assert len(leaders) == 1, leaders
        return leaders.pop()


def names(rounds: Iterable[LeaderRound]) -> list[str]:
    return [name_of(r.result.leader) for r in rounds]
