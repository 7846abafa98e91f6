"""Connect workers over the wire (the Connect draft): ``AsyncConnectWorker`` + the plugin runtime + the
demo connector against a real ``groupcoord serve``, and the ``groupcoord connect worker`` CLI.

What the Connect draft ("Rebalance Process") and docs/design.md I1 ask
of the workers' side: connectors and tasks are the unit of assignment, every configured one runs
on exactly one worker once the group is stable, and a worker stops what is revoked before it
acknowledges, so no connector or task ever runs on two workers at once. The demo connector's
JSON-lines output (one shared file, written by every worker, in-process or not) is the record
of what ran where; :func:`~groupcoord.client.connect.demo.overlaps` finds any item two workers
ran at once.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.demo import (
    COUNTER,
    DEMO_REGISTRY,
    DemoEvent,
    current_owners,
    overlaps,
    read_events,
)
from groupcoord.client.connect.runtime import (
    Connector,
    ConnectorRegistry,
    ConnectRuntime,
    Task,
)
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.connect_protocol import ConnectorTaskId

from .conftest import GROUPCOORD, ServerProcess

TIMEOUT_S = 30.0
DELAY_MS = 500  # scheduled.rebalance.max.delay.ms of these workers


# ----------------------------------------------------------------------------- helpers


def _config(server: ServerProcess, group: str, *ops: tuple[int, str, int]) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.connect_group_config(group, [{"op": op, "connector": name, "task_count": n}
                                           for op, name, n in ops])
    assert int(r.error_code) == 0, r


def _labels(connectors: dict[str, int]) -> set[str]:
    return set(connectors) | {f"{c}-{i}" for c, n in connectors.items() for i in range(n)}


def _workers(server: ServerProcess, group: str, n: int, output: Path, *, protocol: str
             ) -> list[tuple[AsyncConnectWorker, ConnectRuntime]]:
    out = []
    for i in range(n):
        rt = ConnectRuntime(DEMO_REGISTRY, default_class=COUNTER,
                            default_config={"output": str(output), "interval.ms": "50"})
        w = AsyncConnectWorker(server.bootstrap, group, url=f"http://w{i}:8083",
                               protocol=protocol, listener=rt, member_id=f"w{i}-{group}",
                               max_delay_ms=DELAY_MS)
        out.append((w, rt))
    return out


async def _settled(fleet: list[tuple[AsyncConnectWorker, ConnectRuntime]],
                   expected: set[str]) -> None:
    """Until the group is stable (the coordinator's target is at the group epoch, no assigner
    chosen, every worker at that epoch and reconciled) and the runtimes run ``expected``, each
    item once."""
    async def check() -> None:
        while True:
            running = [rt.running() for _, rt in fleet]
            if (set().union(*running) == expected and sum(map(len, running)) == len(expected)
                    and all(w.reconciled() for w, _ in fleet)):
                (g,) = await fleet[0][0].describe()
                epochs = {int(m.member_epoch) for m in g.members}
                if (int(g.group_epoch) == int(g.assignment_epoch) and g.assigner is None
                        and epochs == {int(g.group_epoch)} and len(g.members) == len(fleet)):
                    return
            await asyncio.sleep(0.05)
    try:
        await asyncio.wait_for(check(), TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"not settled on {sorted(expected)}: "
                             f"{[(w.member_id, w.member.state, sorted(rt.running())) for w, rt in fleet]}"
                             ) from None


def _by_kind(running: set[str]) -> tuple[int, int]:
    """(connectors, tasks) among labels."""
    tasks = sum(1 for x in running if x.rsplit("-", 1)[-1].isdigit() and "-" in x)
    return len(running) - tasks, tasks


async def _describe(w: AsyncConnectWorker) -> dict[str, set[str]]:
    """Member id -> what the coordinator says it runs (ConnectGroupDescribe over the wire)."""
    (g,) = await w.describe()
    assert int(g.error_code) == 0
    return {m.member_id: set(m.assignment.connectors)
            | {f"{t.connector}-{int(t.task)}" for t in m.assignment.tasks} for m in g.members}


def _assert_exclusive(output: Path) -> list[DemoEvent]:
    events = read_events(output)
    assert events, "the demo connector wrote nothing"
    assert overlaps(events) == [], overlaps(events)
    return events


# ----------------------------------------------------------------------------- over the wire


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_workers_share_connectors_and_take_over(gc_server: ServerProcess, tmp_path: Path,
                                                protocol: str) -> None:
    group = f"cg-{protocol}-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    connectors = {"a": 3, "b": 2, "c": 1}
    _config(gc_server, group, *((0, c, n) for c, n in connectors.items()))

    async def scenario() -> None:
        fleet = _workers(gc_server, group, 3, output, protocol=protocol)
        try:
            for w, _ in fleet:
                await w.start()
            await _settled(fleet, _labels(connectors))
            # Every worker has work, balanced per kind (3 connectors and 6 tasks over 3).
            for _, rt in fleet:
                assert _by_kind(rt.running()) == (1, 2), [sorted(r.running()) for _, r in fleet]
            # The coordinator's view is the runtimes' view.
            assert await _describe(fleet[0][0]) == {w.member_id: rt.running() for w, rt in fleet}
            # Tasks really run: each one has beaten.
            await asyncio.sleep(0.3)
            beats = Counter(e.item for e in read_events(output) if e.event == "beat")
            assert {f"{c}-{i}" for c, n in connectors.items() for i in range(n)} <= set(beats)

            # A connector created while the workers run reaches them; a deleted one stops.
            _config(gc_server, group, (0, "d", 2), (2, "b", 0))
            connectors.pop("b")
            connectors["d"] = 2
            await _settled(fleet, _labels(connectors))

            # One worker leaves: it stops its work first, the others take it over.
            leaving, left_rt = fleet[0]
            had = left_rt.running()
            assert had
            await leaving.close()
            assert left_rt.running() == set()
            rest = fleet[1:]
            await _settled(rest, _labels(connectors))
            assert had <= set().union(*(rt.running() for _, rt in rest))
            assert set(await _describe(rest[0][0])) == {w.member_id for w, _ in rest}
        finally:
            for w, _ in fleet:
                await w.close()

    asyncio.run(scenario())
    events = _assert_exclusive(output)
    assert current_owners(events) == {}  # every worker stopped everything when it left
    assert {e.worker for e in events} == {f"w{i}-{group}" for i in range(3)}


def test_cli_worker_joins_then_leaves_on_sigint(gc_server: ServerProcess, tmp_path: Path) -> None:
    group = f"cg-cli-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    connectors = {"src": 4}
    _config(gc_server, group, (0, "src", 4))
    stdout = tmp_path / "worker.out"
    stderr = tmp_path / "worker.err"
    cli_id = f"cli-{group}"

    async def scenario() -> None:
        ((w, rt),) = _workers(gc_server, group, 1, output, protocol="sessioned")
        await w.start()
        await _settled([(w, rt)], _labels(connectors))
        with open(stdout, "w") as out, open(stderr, "w") as err:
            proc = subprocess.Popen(
                [*GROUPCOORD, "connect", "worker", "--bootstrap-server", gc_server.bootstrap,
                 "--group", group, "--url", "http://cli:8083", "--member-id", cli_id,
                 "--scheduled-rebalance-max-delay-ms", str(DELAY_MS),
                 "--config", "interval.ms=50", "--output", str(output)],
                stdout=out, stderr=err)
        try:
            # The CLI worker joins and gets work (half of it: 1 connector + 4 tasks over 2).
            async def cli_runs() -> dict[str, set[str]]:
                while True:
                    views = await _describe(w)
                    if views.get(cli_id) and w.reconciled() and \
                            views[w.member_id] == rt.running():
                        return views
                    await asyncio.sleep(0.05)
            views = await asyncio.wait_for(cli_runs(), TIMEOUT_S)
            assert views[cli_id] | views[w.member_id] == _labels(connectors)
            assert not views[cli_id] & views[w.member_id]
            # ... and runs it: the demo record shows its starts.
            async def cli_started() -> None:
                while not {e.item for e in read_events(output)
                           if e.worker == cli_id and e.event == "start"} >= views[cli_id]:
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(cli_started(), TIMEOUT_S)

            proc.send_signal(signal.SIGINT)
            code = await asyncio.get_running_loop().run_in_executor(None, proc.wait, 20)
            assert code == 0, stderr.read_text()
            # It left the group: the in-process worker takes everything over.
            await _settled([(w, rt)], _labels(connectors))
            assert set(await _describe(w)) == {w.member_id}
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            await w.close()

    asyncio.run(scenario())
    text = stdout.read_text()
    assert f"worker {cli_id}" in text and "assigned: " in text, text
    assert f"worker {cli_id} left connect group {group}" in text, text
    events = _assert_exclusive(output)
    assert current_owners(events) == {}


def test_cli_rejects_contradicting_protocol_and_assignor() -> None:
    r = subprocess.run([*GROUPCOORD, "connect", "worker", "--group", "g", "--protocol", "eager",
                        "--assignor", "incremental-cooperative"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "contradicts" in r.stderr


# ----------------------------------------------------------------------------- the runtime alone


class _Probe:
    """What the probe connector's instances did, in order."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.polls: Counter[str] = Counter()


PROBE = _Probe()


class _ProbeTask(Task):
    def start(self, config: Any) -> None:
        self.config = dict(config)
        PROBE.log.append(("task-start", f"{self.context.label}:{config['task.number']}"))

    async def poll(self) -> None:
        PROBE.polls[self.context.label] += 1
        await asyncio.sleep(0.01)

    async def stop(self) -> None:
        await asyncio.sleep(0.02)  # a slow stop: the revocation waits for it
        PROBE.log.append(("task-stop", self.context.label))


class _ProbeConnector(Connector):
    task_class = _ProbeTask

    def start(self, config: Any) -> None:
        PROBE.log.append(("connector-start", f"{config['name']}:{config['flavour']}"))

    def stop(self) -> None:
        PROBE.log.append(("connector-stop", self.context.connector))


def test_runtime_starts_assigned_and_stops_revoked_before_returning() -> None:
    PROBE.reset()
    registry = ConnectorRegistry({"probe": _ProbeConnector})
    rt = ConnectRuntime(registry, connector_classes={"x": "probe"},
                        connector_configs={"x": {"flavour": "sour"}},
                        default_config={"flavour": "plain"}, worker_id="w1")

    async def scenario() -> None:
        await rt.on_assigned(("x",), (ConnectorTaskId("x", 0), ConnectorTaskId("x", 1)))
        assert rt.running() == {"x", "x-0", "x-1"}
        await asyncio.sleep(0.05)
        assert PROBE.polls["x-0"] > 0 and PROBE.polls["x-1"] > 0
        await rt.on_revoked(("x",), (ConnectorTaskId("x", 1),))
        # Stopped (its slow stop finished) by the time the revocation returns.
        assert rt.running() == {"x-0"}
        assert PROBE.log[-2:] == [("task-stop", "x-1"), ("connector-stop", "x")]
        polls = PROBE.polls["x-1"]
        await asyncio.sleep(0.05)
        assert PROBE.polls["x-1"] == polls  # no poll after the stop
        await rt.stop_all()
        assert rt.running() == set()

    asyncio.run(scenario())
    assert PROBE.log[:3] == [("connector-start", "x:sour"), ("task-start", "x-0:0"),
                             ("task-start", "x-1:1")]
    assert [(e.event, e.label) for e in rt.events] == [
        ("started", "x"), ("started", "x-0"), ("started", "x-1"),
        ("stopped", "x-1"), ("stopped", "x"), ("stopped", "x-0")]
    assert {e.worker for e in rt.events} == {"w1"}


def test_runtime_runs_callbacks_in_order_and_records_failures() -> None:
    registry = ConnectorRegistry({"probe": _ProbeConnector})
    rt = ConnectRuntime(registry, connector_classes={"x": "probe"}, worker_id="w2")

    async def scenario() -> None:
        tid = ConnectorTaskId("x", 0)
        # Assign, revoke, assign again, as three callbacks fired back to back: the runtime
        # applies them in order although each one awaits.
        steps = [asyncio.ensure_future(rt.on_assigned((), (tid,))),
                 asyncio.ensure_future(rt.on_revoked((), (tid,))),
                 asyncio.ensure_future(rt.on_assigned((), (tid,)))]
        await asyncio.gather(*steps)
        assert rt.running() == {"x-0"}
        # A connector without a class fails to start; it is recorded, not running.
        await rt.on_assigned(("nope",), ())
        assert "nope" not in rt.running()
        await rt.stop_all()

    asyncio.run(scenario())
    assert [(e.event, e.label) for e in rt.events] == [
        ("started", "x-0"), ("stopped", "x-0"), ("started", "x-0"), ("failed", "nope"),
        ("stopped", "x-0")]


def test_overlaps_finds_an_item_run_twice_at_once() -> None:
    ev = [DemoEvent(1.0, "w1", "start", "a-0"), DemoEvent(2.0, "w1", "stop", "a-0"),
          DemoEvent(2.5, "w2", "start", "a-0"), DemoEvent(3.0, "w3", "start", "a-0"),
          DemoEvent(4.0, "w2", "stop", "a-0")]
    assert overlaps(ev) == [("a-0", "w2", "w3")]
    assert current_owners(ev) == {"a-0": {"w3"}}
    assert overlaps(ev[:3]) == []


def test_registry_refuses_non_connectors_and_name_clashes() -> None:
    reg = ConnectorRegistry({"probe": _ProbeConnector})
    with pytest.raises(TypeError):
        reg.register("x", int)
    with pytest.raises(ValueError):
        reg.register("probe", Connector)
    with pytest.raises(KeyError, match="unknown connector class"):
        reg.get("missing")
