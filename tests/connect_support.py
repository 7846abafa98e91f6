"""Test support: Connect workers (``ConnectWorker``) driven against an in-process ``Shard``.

:class:`Cluster` is a tiny deterministic driver: instant delivery, every worker polled until it
has nothing to send, then time jumps to the next deadline of a live worker or of the shard's
timers. Each worker's listener keeps what the worker runs; starting an item some other live
worker runs fails the test at once (I1 on the workers' side), and :meth:`Cluster.check` asserts
it again after every request. Items are written in the Connect draft's notation (``AC0`` is
connector A, ``AT1`` its task number 0), the notation of the KIP-415 tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.client.connect.listener import DEFER, ConnectRebalanceListener
from groupcoord.client.connect.worker import ConnectWorker
from groupcoord.coordinator.modern.connect.messages import (
    ConnectGroupConfigRequest,
    ConnectGroupConfigResponse,
    ConnectGroupDescribeRequest,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupPrepareAssignmentRequest,
    ConnectorConfigOp,
    DescribedConnectGroup,
)
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.connect_protocol import CONNECTOR_TASK, ConnectorTaskId

from .test_connect_group import draft

GROUP = "g"
DELAY = 30_000  # scheduled.rebalance.max.delay.ms of these tests (the KIP's "d")

Item = tuple[str, int]


def label(connector: str, task: int = CONNECTOR_TASK) -> str:
    return draft((connector, task))


def sort_key(name: str) -> tuple[str, int]:
    kind = name.rstrip("0123456789")
    return kind[:-1], -1 if kind.endswith("C") else int(name[len(kind):])


class Runner(ConnectRebalanceListener):
    """A worker's connectors and tasks as its process runs them; checks I1 on every start."""

    def __init__(self, cluster: Cluster, wid: str) -> None:
        self.cluster = cluster
        self.wid = wid
        self.running: set[Item] = set()
        self.events: list[tuple[str, list[str]]] = []
        #: When set, revocations are deferred (a slow application) until :meth:`complete`.
        self.defer = False
        self.stopping: set[Item] = set()

    def _items(self, connectors: tuple[str, ...], tasks: tuple[ConnectorTaskId, ...]) -> set[Item]:
        return {(c, CONNECTOR_TASK) for c in connectors} | {(t.connector, t.task) for t in tasks}

    def on_revoked(self, connectors: tuple[str, ...], tasks: tuple[ConnectorTaskId, ...]) -> object:
        items = self._items(connectors, tasks)
        assert items and items <= self.running, (self.wid, items, self.running)
        self.events.append(("revoked", sorted((draft(i) for i in items), key=sort_key)))
        if self.defer:
            self.stopping = items
            return DEFER
        self.running -= items
        return None

    def complete(self) -> None:
        """The deferred revocation finished: the items are stopped; tell the worker."""
        self.running -= self.stopping
        self.stopping = set()
        self.cluster.workers[self.wid].complete_revocation(self.cluster.now)

    def on_assigned(self, connectors: tuple[str, ...], tasks: tuple[ConnectorTaskId, ...]) -> None:
        items = self._items(connectors, tasks)
        assert items and not items & self.running, (self.wid, items)
        for other, runner in self.cluster.runners.items():
            if other != self.wid and other not in self.cluster.down:
                both = items & runner.running
                assert not both, f"I1: {self.wid} starts {both} which {other} runs"
        self.running |= items
        self.events.append(("assigned", sorted((draft(i) for i in items), key=sort_key)))

    def on_lost(self, connectors: tuple[str, ...], tasks: tuple[ConnectorTaskId, ...]) -> None:
        items = self._items(connectors, tasks)
        self.running -= items
        self.events.append(("lost", sorted((draft(i) for i in items), key=sort_key)))


class Cluster:
    """Workers of one connect group on one shard, with a clock in ms."""

    def __init__(self, *, shard: Shard | None = None, group_id: str = GROUP, now: int = 0,
                 max_delay_ms: int = DELAY, protocol: str = "sessioned") -> None:
        self.shard = shard or Shard()
        self.group_id = group_id
        self.now = now
        self.max_delay_ms = max_delay_ms
        self.protocol = protocol
        self.workers: dict[str, ConnectWorker] = {}
        self.runners: dict[str, Runner] = {}
        #: Crashed workers: not driven any more (their process, and what it ran, is gone).
        self.down: set[str] = set()
        #: Workers whose Prepare/Install requests are lost (an assigner that never installs).
        self.mute_assigner: set[str] = set()
        #: Workers whose Install reaches the coordinator but whose answer is lost.
        self.lose_install_answer: set[str] = set()
        self.requests: list[tuple[int, str, Any]] = []
        self.checks = 0

    # ------------------------------------------------------------------ workers and admin

    def start(self, wid: str, **kw: Any) -> ConnectWorker:
        """A worker process (member id ``wid``) starts and joins."""
        kw.setdefault("protocol", self.protocol)
        kw.setdefault("max_delay_ms", self.max_delay_ms)
        kw.setdefault("rebalance_timeout_ms", 30_000)
        runner = Runner(self, wid)
        w = ConnectWorker(self.group_id, member_id=wid, url=f"http://{wid.lower()}:8083",
                          listener=runner, **kw)
        self.workers[wid] = w
        self.runners[wid] = runner
        self.down.discard(wid)
        w.join(self.now)
        return w

    def crash(self, wid: str) -> None:
        """The worker's process dies: it sends nothing more; its work stops with it."""
        self.down.add(wid)
        self.runners[wid].running.clear()

    def configure(self, *ops: tuple[str, str, int] | tuple[str, str]) -> ConnectGroupConfigResponse:
        res = self.shard.handle(ConnectGroupConfigRequest(
            self.group_id, tuple(ConnectorConfigOp(*op) for op in ops)), self.now)
        assert isinstance(res.response, ConnectGroupConfigResponse)
        assert res.response.error_code == 0, res.response
        return res.response

    def describe(self) -> DescribedConnectGroup:
        (g,) = self.shard.handle(ConnectGroupDescribeRequest((self.group_id,)),
                                 self.now).response.groups
        assert isinstance(g, DescribedConnectGroup)
        return g

    # ------------------------------------------------------------------ driving

    def live(self) -> list[tuple[str, ConnectWorker]]:
        return [(wid, w) for wid, w in sorted(self.workers.items()) if wid not in self.down]

    def pump(self) -> None:
        """Send every request due now, deliver the answers, until no worker has one."""
        for _ in range(10_000):
            sent = False
            for wid, w in self.live():
                req = w.poll_request(self.now)
                while req is not None:
                    sent = True
                    self.requests.append((self.now, wid, req))
                    if wid in self.mute_assigner and isinstance(
                            req, ConnectGroupPrepareAssignmentRequest | ConnectGroupInstallAssignmentRequest):
                        pass  # lost: the worker times the request out
                    elif wid in self.lose_install_answer and isinstance(
                            req, ConnectGroupInstallAssignmentRequest):
                        self.shard.handle(req, self.now)  # applied; the answer is lost
                    else:
                        w.on_response(self.shard.handle(req, self.now).response, self.now)
                    self.check()
                    req = w.poll_request(self.now)
            if not sent:
                return
        raise AssertionError("the workers never went quiet")

    def run_until(self, t: int) -> None:
        """Drive the group until time ``t`` (timers fire, heartbeats flow)."""
        while True:
            self.shard.expire_timers(self.now)
            self.pump()
            deadlines = [d for _, w in self.live() if (d := w.next_deadline()) is not None]
            if (sd := self.shard.next_deadline()) is not None:
                deadlines.append(sd)
            nxt = max(min(deadlines, default=t + 1), self.now + 1)
            if nxt > t:
                self.now = t
                return
            self.now = nxt

    def advance(self, ms: int) -> None:
        self.run_until(self.now + ms)

    def settle_until(self, done: Callable[[], bool], limit_ms: int = 120_000) -> None:
        """Drive until ``done()`` holds (checked every heartbeat interval), at most ``limit_ms``."""
        end = self.now + limit_ms
        while not done():
            assert self.now < end, "did not settle"
            self.run_until(min(self.now + 1_000, end))

    # ------------------------------------------------------------------ observations

    def check(self) -> None:
        """I1 on the workers' side: no item is run by two live workers."""
        self.checks += 1
        seen: dict[Item, str] = {}
        for wid, _ in self.live():
            for it in self.runners[wid].running:
                assert it not in seen, f"I1: {draft(it)} run by {seen[it]} and {wid}"
                seen[it] = wid

    def running(self) -> dict[str, list[str]]:
        """What each live worker runs, in draft notation."""
        return {wid: sorted((draft(i) for i in self.runners[wid].running), key=sort_key)
                for wid, _ in self.live()}

    def stable(self) -> bool:
        """The target of the group epoch is installed, every member holds exactly its target,
        and every live worker runs exactly what the coordinator says it holds."""
        g = self.describe()
        members = {m.member_id: m for m in g.members}
        if g.assigner is not None or g.assignment_epoch != g.group_epoch:
            return False
        if any(m.member_epoch != g.group_epoch or m.assignment != m.target_assignment
               or m.pending_revocation.connectors or m.pending_revocation.tasks
               for m in g.members):
            return False
        for wid, w in self.live():
            if w.member_epoch < 0:
                continue
            m = members.get(wid)
            if m is None or w.member_epoch != g.group_epoch:
                return False
            held = {(c, CONNECTOR_TASK) for c in m.assignment.connectors} | {
                (t.connector, t.task) for t in m.assignment.tasks}
            if held != self.runners[wid].running:
                return False
        return True
