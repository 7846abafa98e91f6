"""The Connect draft's ``ConnectAssignor`` interface (name, assign, onAssignment) and the
registry of assignors by name (``client/connect/assignors.py``): the worker's assignors are
pluggable. A custom assignor registered by name and plugged into sans-IO workers
(``connect_support.Cluster``, a real in-process shard) computes the group's target, and every
worker's ``on_assignment`` sees what it is given before its listener starts it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from groupcoord.client.connect.assignors import (
    EAGER,
    INCREMENTAL_COOPERATIVE,
    ConnectAssignor,
    ConnectGroupAssignment,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    assignor_names,
    create_assignor,
    register_assignor,
)
from groupcoord.client.connect.async_classic_worker import (
    AsyncClassicConnectWorker,
    default_config_group,
)
from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.classic_worker import ClassicConnectWorker
from groupcoord.client.connect.config_snapshot import ConfigSnapshot
from groupcoord.client.connect.demo import COUNTER, DEMO_REGISTRY
from groupcoord.client.connect.runtime import ConnectRuntime
from groupcoord.client.connect.worker import ConnectWorker
from groupcoord.coordinator.classic.messages import JoinGroupRequest
from groupcoord.protocol.connect_protocol import (
    CONNECT_PROTOCOL_V1,
    CONNECT_PROTOCOL_V2,
    NO_ERROR,
    ConnectAssignment,
    ConnectorsAndTasks,
    WorkerMetadata,
)

from .classic_connect_support import ConfigReader, ConfigTopic
from .conftest import ServerProcess
from .connect_support import Cluster
from .test_connect_driver import _config, _labels, _settled

PACK = "pack-on-smallest-id"


class PackAssignor:
    """A custom assignor: every connector and task on the worker with the smallest member id
    (a declarative target: each worker's complete set). It records what it computed and what
    its worker was given."""

    name = PACK
    minimum_version = CONNECT_PROTOCOL_V1
    maximum_version = CONNECT_PROTOCOL_V2

    def __init__(self, max_delay_ms: int = 0) -> None:
        self.rounds: list[tuple[str, int]] = []
        self.received: list[tuple[ConnectAssignment, int]] = []

    def assign(self, leader_id: str, members: Mapping[str, WorkerMetadata],
               config: ConfigSnapshot, *, now_ms: int, generation: int,
               last_completed_generation: int | None = None,
               protocol_version: int = CONNECT_PROTOCOL_V2) -> ConnectGroupAssignment:
        self.rounds.append((leader_id, generation))
        ids = sorted(members)
        url = members[leader_id].url
        everything = ConnectorsAndTasks.of(sorted(config.connectors), sorted(config.task_ids()))
        allocations = {mid: everything if mid == ids[0] else ConnectorsAndTasks.of((), ())
                       for mid in ids}
        assignments = {mid: ConnectAssignment(protocol_version, NO_ERROR, leader_id, url,
                                              config.offset, a.connectors, a.tasks)
                       for mid, a in allocations.items()}
        return ConnectGroupAssignment(leader_id, url, config.offset, NO_ERROR, 0, assignments,
                                      allocations)

    def on_assignment(self, assignment: ConnectAssignment, generation: int) -> None:
        self.received.append((assignment, generation))


if PACK not in assignor_names():
    register_assignor(PACK, PackAssignor)


def test_the_built_in_assignors_are_connect_assignors_registered_by_name() -> None:
    assert {EAGER, INCREMENTAL_COOPERATIVE} <= set(assignor_names())
    eager, coop = create_assignor(EAGER), create_assignor(INCREMENTAL_COOPERATIVE, 5_000)
    assert isinstance(eager, EagerAssignor) and isinstance(eager, ConnectAssignor)
    assert isinstance(coop, IncrementalCooperativeAssignor) and coop.max_delay_ms == 5_000
    assert (eager.minimum_version, eager.maximum_version) == (0, 0)
    assert (coop.minimum_version, coop.maximum_version) == (1, 2)


def test_registry_refuses_unknown_duplicate_and_empty_names() -> None:
    with pytest.raises(ValueError, match="unknown Connect assignor 'nope'"):
        create_assignor("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_assignor(EAGER, lambda max_delay_ms: EagerAssignor())
    with pytest.raises(ValueError, match="non-empty name"):
        register_assignor("", PackAssignor)


def test_worker_advertises_its_assignors_in_order_with_their_versions() -> None:
    def advertised(w: ConnectWorker) -> list[tuple[str, int, int]]:
        return [(a.name, a.minimum_version, a.maximum_version) for a in w.client_assignors()]

    assert advertised(ConnectWorker("g", url="u", protocol="compatible")) == [
        (INCREMENTAL_COOPERATIVE, 1, 1), (EAGER, 0, 0)]
    assert advertised(ConnectWorker("g", url="u")) == [(INCREMENTAL_COOPERATIVE, 1, 2), (EAGER, 0, 0)]
    assert advertised(ConnectWorker("g", url="u", assignors=[PACK, EAGER])) == [
        (PACK, 1, 2), (EAGER, 0, 0)]
    with pytest.raises(ValueError, match="unique"):
        ConnectWorker("g", url="u", assignors=[EAGER, EAGER])
    with pytest.raises(ValueError, match="not a ConnectAssignor"):
        ConnectWorker("g", url="u", assignors=[object()])  # type: ignore[list-item]


def test_a_custom_assignor_plugged_into_workers_computes_the_groups_target() -> None:
    c = Cluster()
    c.configure(("create", "A", 2), ("create", "B", 1))
    c.start("W2", assignors=[PACK])
    c.advance(10_000)
    c.start("W1", assignors=[PACK])
    c.advance(20_000)
    assert c.describe().assignor_name == PACK
    # the whole configuration on the smallest id, nothing on the other
    assert c.running() == {"W1": ["AC0", "AT1", "AT2", "BC0", "BT1"], "W2": []}
    assert c.stable()
    pack = {wid: w.assignor(PACK) for wid, w in c.workers.items()}
    assert all(isinstance(a, PackAssignor) for a in pack.values())
    rounds = [r for a in pack.values() if isinstance(a, PackAssignor) for r in a.rounds]
    assert rounds, "the custom assignor computed no round"
    # on_assignment saw, on W1, the work W1 then started; W2 first ran everything alone
    w1 = pack["W1"]
    assert isinstance(w1, PackAssignor)
    got = {n for a, _ in w1.received for n in [*a.connectors, *(f"{t.connector}T{t.task}"
                                                                for t in a.tasks)]}
    assert got == {"A", "B", "AT0", "AT1", "BT0"}
    assert all(gen > 0 for _, gen in w1.received)


def test_workers_without_a_common_assignor_fall_back_to_one_they_share() -> None:
    """A worker with the custom assignor first and eager second, and an eager-only worker: the
    group uses eager, the assignor every worker supports."""
    c = Cluster()
    c.configure(("create", "A", 1))
    c.start("W1", assignors=[PACK, EAGER])
    c.start("W2", protocol="eager")
    c.advance(20_000)
    assert c.describe().assignor_name == EAGER
    assert sorted(n for items in c.running().values() for n in items) == ["AC0", "AT1"]
    assert c.stable()


def test_a_custom_assignor_over_the_wire(gc_server: ServerProcess, tmp_path: Path) -> None:
    """Two ``AsyncConnectWorker``s against ``groupcoord serve``, each with the custom assignor
    by name: the coordinator selects it and the whole configuration runs on the smallest id."""
    group = f"cg-pack-{uuid.uuid4().hex[:6]}"
    connectors = {"a": 2, "b": 1}
    _config(gc_server, group, *((0, c, n) for c, n in connectors.items()))

    async def scenario() -> None:
        fleet = []
        for i in (2, 1):
            rt = ConnectRuntime(DEMO_REGISTRY, default_class=COUNTER,
                                default_config={"output": str(tmp_path / "demo.jsonl"),
                                                "interval.ms": "50"})
            fleet.append((AsyncConnectWorker(gc_server.bootstrap, group, url=f"http://w{i}:8083",
                                             listener=rt, member_id=f"w{i}-{group}",
                                             assignors=[PACK]), rt))
        try:
            for w, _ in fleet:
                await w.start()
            await _settled(fleet, _labels(connectors))
            (g,) = await fleet[0][0].describe()
            assert g.assignor_name == PACK
            assert {w.member_id: rt.running() for w, rt in fleet} == {
                f"w1-{group}": _labels(connectors), f"w2-{group}": set()}
        finally:
            for w, _ in fleet:
                await w.close()

    asyncio.run(scenario())



class AnyVersionPackAssignor(PackAssignor):
    """:class:`PackAssignor` for every Connect protocol version, eager (0) included."""

    name = "pack-on-smallest-id-any-version"
    minimum_version = 0


if AnyVersionPackAssignor.name not in assignor_names():
    register_assignor(AnyVersionPackAssignor.name, AnyVersionPackAssignor)


def _offered(w: ClassicConnectWorker) -> list[str]:
    """The protocol names of the worker's first JoinGroup."""
    w.start(0)
    request = w.poll_request(0)
    assert isinstance(request, JoinGroupRequest), request
    return [p.name for p in request.protocols]


def test_classic_worker_takes_its_assignors_from_the_registry() -> None:
    """The classic worker's assignors come from the same registry; it offers only the Connect
    protocols (``default`` 0, ``compatible`` 1, ``sessioned`` 2) one of them holds, and the
    round of a protocol runs the first assignor whose range holds its version."""
    def config() -> ConfigReader:
        return ConfigReader(ConfigTopic(ConfigSnapshot(0)))

    default = ClassicConnectWorker("g", "u", config())
    assert [a.name for a in default.assignors] == [INCREMENTAL_COOPERATIVE, EAGER]
    assert _offered(default) == ["sessioned", "compatible", "default"]
    pack = ClassicConnectWorker("g", "u", config(), assignors=[PACK])
    assert isinstance(pack.assignor_for(2), PackAssignor) and pack.assignor_for(0) is None
    assert _offered(pack) == ["sessioned", "compatible"]
    both = ClassicConnectWorker("g", "u", config(), protocol="compatible", assignors=[PACK, EAGER])
    assert _offered(both) == ["compatible", "default"]
    assert isinstance(both.assignor_for(0), EagerAssignor)
    with pytest.raises(ValueError, match="no assignor of"):
        ClassicConnectWorker("g", "u", config(), protocol="eager", assignors=[PACK])
    with pytest.raises(ValueError, match="unknown Connect assignor"):
        ClassicConnectWorker("g", "u", config(), assignors=["nope"])


@pytest.mark.parametrize("protocol", ["sessioned", "eager"])
def test_a_custom_assignor_registered_by_name_runs_in_both_workers_over_the_wire(
        gc_server: ServerProcess, tmp_path: Path, protocol: str) -> None:
    """One name from the registry, given to a connect group's workers (``AsyncConnectWorker``)
    and to a classic Connect group's workers (``AsyncClassicConnectWorker``, under
    ``connect.protocol`` = ``protocol``; eager is Connect protocol version 0), against
    ``groupcoord serve``: in both groups the whole configuration runs on one worker, as the
    custom assignor decides; the classic leader's rounds are that assignor's, and every worker's
    instance saw what it was given (``on_assignment``)."""
    name = AnyVersionPackAssignor.name
    connectors = {"a": 2, "b": 1}
    expected = _labels(connectors)
    group, classic_group = (f"cg-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("new", "classic"))
    _config(gc_server, group, *((0, c, n) for c, n in connectors.items()))
    _config(gc_server, default_config_group(classic_group),
            *((0, c, n) for c, n in connectors.items()))

    def runtime() -> ConnectRuntime:
        return ConnectRuntime(DEMO_REGISTRY, default_class=COUNTER,
                              default_config={"output": str(tmp_path / "demo.jsonl"),
                                              "interval.ms": "50"})

    def one_runs_everything(runtimes: list[ConnectRuntime]) -> bool:
        running = [rt.running() for rt in runtimes]
        return sorted(map(len, running)) == [0, len(expected)] and set().union(*running) == expected

    async def scenario() -> None:
        new = [(AsyncConnectWorker(gc_server.bootstrap, group, url=f"http://w{i}:8083",
                                   listener=rt, member_id=f"w{i}-{group}", assignors=[name]), rt)
               for i, rt in ((2, runtime()), (1, runtime()))]
        classic = [(AsyncClassicConnectWorker(gc_server.bootstrap, classic_group,
                                              url=f"http://c{i}:8083", protocol=protocol,
                                              listener=rt, client_id=f"c{i}", assignors=[name],
                                              heartbeat_interval_ms=300, config_poll_ms=200), rt)
                   for i, rt in ((1, runtime()), (2, runtime()))]
        try:
            for w, _ in new:
                await w.start()
            for c, _ in classic:
                await c.start()

            async def settled() -> None:
                while not (one_runs_everything([rt for _, rt in new])
                           and one_runs_everything([rt for _, rt in classic])
                           and all(c.stable() for c, _ in classic)):
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(settled(), 60)
            (g,) = await new[0][0].describe()
            assert g.assignor_name == name
            assert {w.member_id: rt.running() for w, rt in new} == {
                f"w1-{group}": expected, f"w2-{group}": set()}
            rounds = [r for c, _ in classic if (r := c.member.last_leader_round) is not None]
            assert rounds and rounds[-1].protocol == ("default" if protocol == "eager"
                                                      else "sessioned")
            mine = [c.member.assignor(name) for c, _ in classic]
            assert all(isinstance(a, AnyVersionPackAssignor) and a.received for a in mine)
            assert any(isinstance(a, AnyVersionPackAssignor) and a.rounds for a in mine)
            # the classic leader's assignor put everything on the smallest member id
            smallest = min(c.member_id for c, _ in classic)
            assert {c.member_id: rt.running() for c, rt in classic}[smallest] == expected
            assert all(isinstance(w.member.assignor(name), AnyVersionPackAssignor)
                       for w, _ in new)
        finally:
            for w, rt in new:
                await w.close()
                await rt.stop_all()
            for c, rt in classic:
                await c.close()
                await rt.stop_all()

    asyncio.run(scenario())
