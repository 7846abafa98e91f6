"""Test support: classic Connect workers (``ClassicConnectWorker``) and new-protocol workers
(``ConnectWorker``) of one group on one real in-process shard, driven deterministically - the
driver of the online migration tests.

:class:`MixedCluster` owns a :class:`~tests.test_classic_support.Harness` (shard, clock, tokens,
deferred completions, the record log for replay). :meth:`MixedCluster.pump` sends whatever any
worker has to send and hands each answer back until nothing moves; :meth:`MixedCluster.settle`
moves the clock deadline by deadline until the group is at rest. After every pump the workers'
side of I1 is checked over both kinds of worker: no connector or task runs on two workers, and
every listener agrees with its worker. Classic workers read the Connect config topic
(:class:`~tests.classic_connect_support.ConfigTopic`); new-protocol workers learn the
configuration from the coordinator.
"""

from __future__ import annotations

from typing import Any

from groupcoord.client.connect.classic_worker import ClassicConnectWorker, WorkerState
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.worker import ConnectWorker
from groupcoord.client.consumer import ClientMemberState
from groupcoord.coordinator.classic.model import ClassicGroup, ClassicGroupState
from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.modern.connect.model import ConnectGroup, assignment_of
from groupcoord.coordinator.modern.group import GroupState
from groupcoord.protocol.connect_protocol import ConnectorsAndTasks

from .classic_connect_support import ConfigReader, ConfigTopic, RecordingListener
from .test_classic_support import Call, Harness

GROUP = "connect-cluster"


def items(ct: ConnectorsAndTasks) -> dict[str, frozenset[int]]:
    return assignment_of([(c, -1) for c in ct.connectors] + [(t.connector, t.task) for t in ct.tasks])


class MixedCluster:
    def __init__(self, config: ConfigSnapshot, *, coordinator: CoordinatorConfig | None = None,
                 max_delay_ms: int = 0) -> None:
        self.h = Harness(coordinator)
        self.topic = ConfigTopic(config)
        self.max_delay_ms = max_delay_ms
        self.classic: dict[str, ClassicConnectWorker] = {}
        self.new: dict[str, ConnectWorker] = {}
        self.listeners: dict[str, RecordingListener] = {}
        self.pending: list[tuple[Call, ClassicConnectWorker]] = []
        self.checks = 0

    @property
    def now(self) -> int:
        return self.h.now

    @property
    def group(self) -> Any:
        return self.h.shard.groups.get(GROUP)

    def workers(self) -> dict[str, ClassicConnectWorker | ConnectWorker]:
        return {**self.classic, **self.new}

    # ---------------------------------------------------------------- membership

    def start_classic(self, name: str, protocol: str = "sessioned") -> None:
        self.listeners[name] = RecordingListener()
        w = ClassicConnectWorker(GROUP, f"http://{name}:8083/", ConfigReader(self.topic),
                                 protocol=protocol, listener=self.listeners[name], client_id=name,
                                 max_delay_ms=self.max_delay_ms)
        self.classic[name] = w
        w.start(self.now)
        self.pump()

    def start_new(self, name: str, protocol: str = "sessioned") -> None:
        self.listeners[name] = RecordingListener()
        w = ConnectWorker(GROUP, member_id=name, url=f"http://{name}:8083/", client_id=name,
                          listener=self.listeners[name], protocol=protocol,
                          max_delay_ms=self.max_delay_ms, rebalance_timeout_ms=60_000)
        self.new[name] = w
        w.join(self.now)
        self.pump()

    def stop(self, name: str) -> None:
        """A worker shuts down: stops its work and leaves the group."""
        w = self.workers()[name]
        w.leave(self.now)
        self.pump()
        if name in self.classic:
            assert self.classic[name].state is WorkerState.UNJOINED
            del self.classic[name]
        else:
            assert self.new[name].state in (ClientMemberState.UNJOINED, ClientMemberState.UNSUBSCRIBED), \
                self.new[name].state
            del self.new[name]
        assert not self.listeners[name].connectors and not self.listeners[name].tasks
        del self.listeners[name]

    # ---------------------------------------------------------------- driving

    def pump(self) -> None:
        for _ in range(10_000):
            moved = False
            still = []
            for call, w in self.pending:
                if call.done:
                    w.on_response(call.response, self.now)
                    moved = True
                else:
                    still.append((call, w))
            self.pending = still
            for cw in list(self.classic.values()):
                req = cw.poll_request(self.now)
                if req is not None:
                    self.pending.append((self.h.send(req), cw))
                    moved = True
            for nw in list(self.new.values()):
                req = nw.poll_request(self.now)
                while req is not None:
                    moved = True
                    call = self.h.send(req)
                    nw.on_response(call.r, self.now)
                    self.check()
                    req = nw.poll_request(self.now)
            self.check()
            if not moved:
                return
        raise AssertionError("the workers never went quiet")

    def next_deadline(self) -> int | None:
        ds = [d for w in self.workers().values() if (d := w.next_deadline()) is not None]
        if (shard := self.h.shard.next_deadline()) is not None:
            ds.append(shard)
        return min(ds) if ds else None

    def advance(self, ms: int) -> None:
        target = self.now + ms
        self.pump()
        while (d := self.next_deadline()) is not None and d <= target:
            self.h.advance(max(d - self.now, 0))
            self.pump()
        self.h.advance(target - self.now)
        self.pump()

    def settle(self, limit_ms: int = 180_000) -> None:
        """Advance deadline by deadline until the group is at rest (:meth:`at_rest`)."""
        start = self.now
        self.pump()
        while not self.at_rest():
            assert self.now - start <= limit_ms, f"no settlement: {self.describe()}"
            d = self.next_deadline()
            assert d is not None, f"stuck: {self.describe()}"
            self.h.advance(max(d - self.now, 0))
            self.pump()
            if d <= self.now and self.next_deadline() == d:
                raise AssertionError(f"deadline {d} does not move: {self.describe()}")

    # ---------------------------------------------------------------- views and checks

    def check(self) -> None:
        """I1 on the workers' side, over classic and new-protocol workers alike."""
        self.checks += 1
        seen: dict[object, str] = {}
        for n, w in self.workers().items():
            lst = self.listeners[n]
            run = w.running
            assert set(run.connectors) == lst.connectors and set(run.tasks) == lst.tasks, n
            for item in (*lst.connectors, *lst.tasks):
                assert item not in seen, f"I1: {item} runs on {seen[item]} and {n}"
                seen[item] = n

    def runs(self) -> dict[str, dict[str, frozenset[int]]]:
        return {n: items(w.running) for n, w in sorted(self.workers().items())}

    def everything_runs_once(self) -> bool:
        everything = items(self.topic.latest.all())
        got: dict[str, set[int]] = {}
        total = 0
        for w in self.workers().values():
            for c, ts in items(w.running).items():
                got.setdefault(c, set()).update(ts)
                total += len(ts)
        return {c: frozenset(ts) for c, ts in got.items()} == everything and \
            total == sum(len(ts) for ts in everything.values())

    def at_rest(self) -> bool:
        g = self.group
        if self.pending or not self.everything_runs_once():
            return False
        if any(w.state is not WorkerState.STABLE for w in self.classic.values()):
            return False
        if isinstance(g, ClassicGroup):
            return not self.new and g.state is ClassicGroupState.STABLE and \
                all(w.generation == g.generation_id for w in self.classic.values())
        if not isinstance(g, ConnectGroup) or g.state() is not GroupState.STABLE:
            return False
        if set(g.members) != {w.member_id for w in self.workers().values()}:
            return False
        for w in self.classic.values():
            m = g.members[w.member_id]
            if m.classic is None or w.generation != m.member_epoch or \
                    items(w.running) != dict(m.assigned):
                return False
        for nw in self.new.values():
            m = g.members[nw.member_id]
            if m.classic is not None or nw.member_epoch != m.member_epoch or \
                    items(nw.running) != dict(m.assigned):
                return False
        return True

    def describe(self) -> str:
        g = self.group
        return f"{type(g).__name__} {g.digest() if g is not None else None} runs={self.runs()}"
