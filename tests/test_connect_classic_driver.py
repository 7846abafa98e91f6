"""Classic-protocol Connect workers over the wire (``groupcoord connect worker --protocol
eager|compatible|sessioned``): ``AsyncClassicConnectWorker`` + the plugin runtime + the demo connector
against a real ``groupcoord serve``, the online upgrade to the ``connect`` group type with new-protocol
workers, and ``groupcoord connect worker --protocol sessioned`` as a process.

What KIP-415 and docs/design.md I1 ask of the workers' side: every
configured connector and task runs on exactly one worker once the group is stable; a worker that
leaves has its work reassigned once ``scheduled.rebalance.max.delay.ms`` has passed (sessioned /
compatible), or at once (eager, which stops everything and starts the round over); nothing ever
runs on two workers at once. The Connect draft's "Migration To the New Protocol" (``000``/``003``):
new-protocol workers joining a classic Connect group convert it to a ``connect`` group, and the
classic workers can then leave one by one. The demo connector's JSON-lines output (one file
shared by every worker, in-process or not) is the record of what ran where; ``overlaps`` finds
any item two workers ran at once.

The classic workers read the connectors configuration from the coordinator (ConnectGroupConfig
on the group's config group, ``{group}-configs``), as ``async_classic_worker.py`` documents.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from groupcoord.client.connect.async_classic_worker import (
    AsyncClassicConnectWorker,
    classic_request_values,
    classic_response_from_wire,
    default_config_group,
)
from groupcoord.client.connect.async_worker import AsyncConnectWorker
from groupcoord.client.connect.classic_worker import LeaderRound
from groupcoord.client.connect.cli import resolve_protocol
from groupcoord.client.connect.demo import (
    COUNTER,
    DEMO_REGISTRY,
    current_owners,
    read_events,
)
from groupcoord.client.connect.runtime import ConnectRuntime
from groupcoord.coordinator.classic import messages as cm
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, request_class, to_ms
from groupcoord.protocol.versions import ApiKey

from .conftest import GROUPCOORD, ServerProcess, start_server
from .test_connect_driver import _assert_exclusive, _by_kind, _labels

TIMEOUT_S = 60.0  # generous: the whole suite runs beside it on 2 cores
DELAY_MS = 1_000  # scheduled.rebalance.max.delay.ms of these workers
CONNECTORS = {"a": 3, "b": 2, "c": 1}  # 3 connectors + 6 tasks = 9 items

Fleet = list[tuple[Any, ConnectRuntime]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of our own: no initial rebalance delay for a new classic group (3 s by default)."""
    s = start_server(tmp_path_factory.mktemp("classic-connect") / "data",
                     "--config", "group.initial.rebalance.delay.ms=0")
    try:
        yield s
    finally:
        s.stop()


# ----------------------------------------------------------------------------- helpers


def _configure(server: ServerProcess, group: str, connectors: dict[str, int]) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.connect_group_config(group, [{"op": 0, "connector": n, "task_count": k}
                                           for n, k in connectors.items()])
    assert int(r.error_code) == 0, r


def _cli(server: ServerProcess, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``groupcoord ARGS --bootstrap-server ...`` (the server's). Blocks until the command ends
    (seconds under load): from a coroutine use :func:`_acli`."""
    p = subprocess.run([*GROUPCOORD, *args, "--bootstrap-server", server.bootstrap],
                       capture_output=True, text=True, timeout=60)
    if ok:
        assert p.returncode == 0, (p.stdout, p.stderr)
    return p


async def _acli(server: ServerProcess, *args: str,
                ok: bool = True) -> subprocess.CompletedProcess[str]:
    """:func:`_cli` off the event loop. The in-process workers, their tasks and their heartbeats
    run on that loop: a CLI run blocking it (an interpreter start, ~3 s of CPU, far more under
    load) starves their heartbeats past the session timeout, and the coordinator then gives
    their work away while they still run it."""
    return await asyncio.to_thread(_cli, server, *args, ok=ok)


def _runtime(output: Path, worker_id: str) -> ConnectRuntime:
    return ConnectRuntime(DEMO_REGISTRY, default_class=COUNTER, worker_id=worker_id,
                          default_config={"output": str(output), "interval.ms": "50"})


def _classic(server: ServerProcess, group: str, names: Sequence[str], output: Path, *,
             protocol: str = "sessioned") -> Fleet:
    out: Fleet = []
    for n in names:
        rt = _runtime(output, n)
        w = AsyncClassicConnectWorker(server.bootstrap, group, url=f"http://{n}:8083",
                                      protocol=protocol, listener=rt, client_id=n,
                                      max_delay_ms=DELAY_MS, heartbeat_interval_ms=300,
                                      session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                      request_timeout_ms=10_000, config_poll_ms=200)
        out.append((w, rt))
    return out


def _group_kind(server: ServerProcess, group: str) -> tuple[str, str]:
    """(type, state) of ``group`` in ListGroups."""
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.LIST_GROUPS, 5, states_filter=(), types_filter=())
    kinds = {g.group_id: (g.group_type, g.group_state) for g in r.groups}
    return kinds.get(group, ("", ""))


def _classic_generation(server: ServerProcess, group: str) -> tuple[str, int]:
    """(state, member count) of a classic group (DescribeGroups)."""
    with KafkaClient(server.bootstrap) as c:
        d = c.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group],
                   include_authorized_operations=False).groups[0]
    return d.group_state, len(d.members)


async def _settled(fleet: Fleet, expected: set[str], *, timeout_s: float = TIMEOUT_S) -> float:
    """Wait until the runtimes run ``expected``, each item on one worker, every worker in its
    generation; the seconds it took."""
    t0 = time.monotonic()

    def done() -> bool:
        running = [rt.running() for _, rt in fleet]
        stable = all(w.stable() if isinstance(w, AsyncClassicConnectWorker) else w.reconciled()
                     for w, _ in fleet)
        return (stable and set().union(*running) == expected
                and sum(map(len, running)) == len(expected))

    async def wait() -> None:
        while not done():
            await asyncio.sleep(0.02)
    try:
        await asyncio.wait_for(wait(), timeout_s)
    except TimeoutError:
        raise AssertionError(
            f"not settled on {sorted(expected)}: "
            f"{[(w.member_id, w.member.state, sorted(rt.running())) for w, rt in fleet]}"
        ) from None
    return time.monotonic() - t0


async def _close(fleet: Fleet) -> None:
    for w, rt in fleet:
        await w.close()
        await rt.stop_all()


# ----------------------------------------------------------------------------- classic workers


def test_sessioned_workers_share_the_work_and_take_over_after_the_delay(
        server: ServerProcess, tmp_path: Path) -> None:
    group = f"ccg-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    _configure(server, default_config_group(group), CONNECTORS)
    expected = _labels(CONNECTORS)

    seen: list[LeaderRound] = []

    def _collect(fleet: Fleet) -> None:
        for w, _ in fleet:
            r = w.member.last_leader_round
            if r is not None and all(r is not s for s in seen):
                seen.append(r)

    async def _leader_rounds(fleet: Fleet) -> None:
        """Collect every round a worker of ``fleet`` computes as leader, in order."""
        while True:
            _collect(fleet)
            await asyncio.sleep(0.005)

    async def scenario() -> None:
        fleet = _classic(server, group, ["w0", "w1", "w2"], output)
        try:
            for w, _ in fleet:
                await w.start()
            await _settled(fleet, expected)
            # KIP-415's balance: 3 connectors and 6 tasks over 3 workers, 1 + 2 each.
            assert sorted(_by_kind(rt.running()) for _, rt in fleet) == [(1, 2)] * 3
            assert _classic_generation(server, group) == ("Stable", 3)
            assert {w.member.current_protocol.protocol for w, _ in fleet} == {"sessioned"}
            # The configuration came from the coordinator, at its offset.
            assert {w.config.source for w, _ in fleet} == {default_config_group(group)}
            assert {w.config.snapshot().offset for w, _ in fleet} == {1}

            # A connector created while they run reaches them through the config poll.
            _configure(server, default_config_group(group), {"d": 3})
            expected2 = expected | _labels({"d": 3})
            await _settled(fleet, expected2)

            # A worker other than the leader leaves (KIP-415: "If a Leader leaves first,
            # rebalancing is triggered with no delay set"): it stops its work first; the leader
            # holds that work back for scheduled.rebalance.max.delay.ms, then the others take it.
            k = next(i for i, (w, _) in enumerate(fleet) if not w.member.is_leader)
            leaving, left_rt = fleet[k]
            had = left_rt.running()
            assert had
            rest = fleet[:k] + fleet[k + 1:]
            seen.extend(r for w, _ in rest if (r := w.member.last_leader_round) is not None)
            before = len(seen)  # the rounds computed before the departure
            rounds = asyncio.ensure_future(_leader_rounds(rest))
            t0 = time.monotonic()
            await leaving.close()
            assert left_rt.running() == set()
            await _settled(rest, expected2)
            took = time.monotonic() - t0
            rounds.cancel()
            # The round that handed the work out may have settled the workers before the poller
            # ran again (a loaded machine): collect once more, now that they are settled.
            _collect(rest)
            assert took >= 0.8 * DELAY_MS / 1000, f"reassigned after {took:.2f}s only"
            assert had <= set().union(*(rt.running() for _, rt in rest))
            # The leader's rounds: first the departed worker's work is held back with a delay
            # (nobody gets it), then, the delay expired, it is handed out.
            delays = [max(a.delay for a in r.result.assignments.values())
                      for r in seen[before:]]
            assert delays[0] > 0 and delays[-1] == 0, delays
            assert _classic_generation(server, group) == ("Stable", 2)
        finally:
            await _close(fleet)

    asyncio.run(scenario())
    _assert_exclusive(output)
    assert current_owners(read_events(output)) == {}


def test_eager_workers_revoke_everything_and_reassign_at_once(server: ServerProcess,
                                                             tmp_path: Path) -> None:
    group = f"ccg-eager-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    _configure(server, default_config_group(group), CONNECTORS)
    expected = _labels(CONNECTORS)

    async def scenario() -> None:
        fleet = _classic(server, group, ["e0", "e1", "e2"], output, protocol="eager")
        try:
            for w, _ in fleet:
                await w.start()
            await _settled(fleet, expected)
            assert {w.member.current_protocol.protocol for w, _ in fleet} == {"default"}
            assert sorted(_by_kind(rt.running()) for _, rt in fleet) == [(1, 2)] * 3
            rest = fleet[1:]
            revoked_before = sum(w.member.stats["revoked"] for w, _ in rest)
            ran_before = sum(len(rt.running()) for _, rt in rest)

            await fleet[0][0].close()
            await _settled(rest, expected)
            # Eager: the survivors stopped everything they ran before rejoining (no delay).
            assert sum(w.member.stats["revoked"] for w, _ in rest) == revoked_before + ran_before
            assert all(r is None or all(a.delay == 0 for a in r.result.assignments.values())
                       for r in (w.member.last_leader_round for w, _ in rest))
            assert sorted(len(rt.running()) for _, rt in rest) == [4, 5]
        finally:
            await _close(fleet)

    asyncio.run(scenario())
    _assert_exclusive(output)
    assert current_owners(read_events(output)) == {}


# ----------------------------------------------------------------------------- rolling upgrade


def test_rolling_upgrade_to_the_connect_group_type_over_the_wire(server: ServerProcess,
                                                                tmp_path: Path) -> None:
    group = f"ccg-up-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    _configure(server, default_config_group(group), CONNECTORS)
    expected = _labels(CONNECTORS)

    async def scenario() -> None:
        classic = _classic(server, group, ["c0", "c1", "c2"], output)
        new: Fleet = []
        for i in range(3):
            rt = _runtime(output, f"n{i}")
            new.append((AsyncConnectWorker(server.bootstrap, group, url=f"http://n{i}:8083",
                                           protocol="sessioned", listener=rt,
                                           member_id=f"n{i}-{group}", max_delay_ms=DELAY_MS),
                        rt))
        try:
            for w, _ in classic:
                await w.start()
            await _settled(classic, expected)
            assert _group_kind(server, group)[0] == "classic"

            # The first new-protocol worker converts the group; the others join it.
            for k, (w, _) in enumerate(new):
                await w.start()
                if k == 0:
                    await w.wait_until(lambda m: m.member_epoch > 0, TIMEOUT_S)
                    assert _group_kind(server, group)[0] == "connect"
                await _settled(classic + new[:k + 1], expected)
            (g,) = await new[0][0].describe()
            assert dict((c.name, int(c.task_count)) for c in g.connectors) == CONNECTORS
            assert len(g.members) == 6
            # The classic workers now read the converted group's configuration (next poll),
            # at the same offset: the conversion kept the offset they reported.
            for w, _ in classic:
                await asyncio.wait_for(w.refresh_config(), TIMEOUT_S)
            assert {w.config.source for w, _ in classic} == {group}
            assert {w.config.snapshot().offset for w, _ in classic} == {int(g.config_offset)}

            # The classic workers leave one by one; the new ones end up with everything.
            for k in range(len(classic)):
                await classic[k][0].close()
                assert classic[k][1].running() == set()
                await _settled(classic[k + 1:] + new, expected)
            (g,) = await new[0][0].describe()
            assert {m.member_id for m in g.members} == {w.member_id for w, _ in new}
            assert _group_kind(server, group)[0] == "connect"
            assert all(rt.running() for _, rt in new)
        finally:
            await _close(classic + new)

    asyncio.run(scenario())
    _assert_exclusive(output)
    events = read_events(output)
    assert current_owners(events) == {}
    assert {e.worker for e in events} >= {"c0", "c1", "c2", "n0", "n1", "n2"}


# ----------------------------------------------------------------------------- the CLI


def test_cli_classic_worker_joins_then_leaves_on_sigint(server: ServerProcess,
                                                       tmp_path: Path) -> None:
    group = f"ccg-cli-{uuid.uuid4().hex[:6]}"
    output = tmp_path / "demo.jsonl"
    connectors = {"src": 4}
    _configure(server, default_config_group(group), connectors)
    expected = _labels(connectors)
    stdout, stderr = tmp_path / "worker.out", tmp_path / "worker.err"

    async def scenario() -> None:
        ((w, rt),) = fleet = _classic(server, group, ["inproc"], output)
        await w.start()
        await _settled(fleet, expected)
        with open(stdout, "w") as out, open(stderr, "w") as err:
            proc = subprocess.Popen(
                [*GROUPCOORD, "connect", "worker", "--bootstrap-server", server.bootstrap,
                 "--group", group, "--protocol", "sessioned", "--client-id", "cli",
                 "--url", "http://cli:8083", "--heartbeat-interval-ms", "300",
                 "--scheduled-rebalance-max-delay-ms", str(DELAY_MS),
                 "--config", "interval.ms=50", "--output", str(output)],
                stdout=out, stderr=err)
        try:
            # The CLI worker joins and is given half of the work (KIP-415 balances 5 over 2).
            async def cli_runs() -> set[str]:
                while True:
                    cli = {e for e, owners in current_owners(read_events(output)).items()
                           if "cli" in owners} if output.exists() else set()
                    if cli and w.stable() and cli | rt.running() == expected \
                            and not cli & rt.running():
                        return cli
                    assert proc.poll() is None, stderr.read_text()
                    await asyncio.sleep(0.05)
            cli = await asyncio.wait_for(cli_runs(), TIMEOUT_S)
            assert sorted([len(cli), len(rt.running())]) == [2, 3]
            assert _classic_generation(server, group) == ("Stable", 2)

            # `groups describe` shows which classic worker runs what.
            described = json.loads((await _acli(server, "groups", "describe", group,
                                               "--json")).stdout)
            runs = {mb["client_id"]: set(mb["connect"]["connectors"] + mb["connect"]["tasks"])
                    for mb in described[0]["members"]}
            assert runs == {"cli": cli, "inproc": rt.running()}
            text = (await _acli(server, "groups", "describe", group)).stdout
            assert text.splitlines()[1].split() == ["WORKER", "URL", "CONNECTORS", "TASKS"]

            # `groupcoord connect connectors create`: aimed at the classic group itself it fails
            # and names the config group; on the config group, both workers pick it up.
            p = await _acli(server, "connect", "connectors", "create", "x", "--tasks", "1",
                           "--group", group, ok=False)
            assert p.returncode == 1 and default_config_group(group) in p.stderr, p.stderr
            await _acli(server, "connect", "connectors", "create", "d", "--tasks", "1",
                        "--group", default_config_group(group))
            expected.update({"d", "d-0"})

            async def both_run_d() -> None:
                while True:
                    owners = current_owners(read_events(output))
                    if {"d", "d-0"} <= set(owners) and w.stable() and \
                            set(owners) == expected and all(len(o) == 1 for o in owners.values()):
                        return
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(both_run_d(), TIMEOUT_S)

            proc.send_signal(signal.SIGINT)
            code = await asyncio.get_running_loop().run_in_executor(None, proc.wait, 20)
            assert code == 0, stderr.read_text()
            # It left the group: the in-process worker takes everything over after the delay.
            await _settled(fleet, expected)
            assert _classic_generation(server, group) == ("Stable", 1)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            await _close(fleet)

    asyncio.run(scenario())
    text = stdout.read_text()
    assert "protocol sessioned" in text and "assigned: " in text, text
    assert f"left classic connect group {group}" in text, text
    _assert_exclusive(output)
    assert current_owners(read_events(output)) == {}


def test_connect_connectors_is_the_connectors_command(server: ServerProcess) -> None:
    group = f"ccg-alias-{uuid.uuid4().hex[:6]}"
    created = json.loads(_cli(server, "connect", "connectors", "create", "s", "--tasks", "2",
                              "--group", group, "--json").stdout)
    assert (created["connector"], created["tasks"], created["config_offset"]) == ("s", 2, 1)
    _cli(server, "connectors", "update", "s", "--tasks", "3", "--group", group)
    listed = [json.loads(_cli(server, *cmd, "list", "--group", group, "--json").stdout)
              for cmd in (("connect", "connectors"), ("connectors",))]
    assert listed[0] == listed[1] == [
        {"name": "s", "tasks": 3, "worker": None,
         "task_workers": {"0": None, "1": None, "2": None}}]
    _cli(server, "connect", "connectors", "delete", "s", "--group", group)
    assert _cli(server, "connectors", "list", "--group", group).stdout.strip() == "(no connectors)"


@pytest.mark.parametrize(("protocol", "assignor", "expected"), [
    (None, None, (False, "sessioned")),
    ("connect", "eager", (False, "eager")),
    ("connect", "cooperative", (False, "sessioned")),
    ("connect", "incremental-cooperative", (False, "sessioned")),
    ("sessioned", None, (True, "sessioned")),
    ("compatible", "cooperative", (True, "compatible")),
    ("eager", "eager", (True, "eager")),
    ("eager", "cooperative", None),
    ("sessioned", "eager", None),
])
def test_protocol_and_assignor_options(protocol: str | None, assignor: str | None,
                                       expected: tuple[bool, str] | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="contradicts"):
            resolve_protocol(protocol, assignor)
    else:
        assert resolve_protocol(protocol, assignor) == expected


def test_classic_requests_map_to_the_wire_and_back() -> None:
    """Each classic request becomes the kio entity of the version it asks for, with its
    values; the answers map back to the worker's dataclasses."""
    join = cm.JoinGroupRequest("g", 10_000, "m-1", "connect",
                               (cm.JoinGroupProtocol("sessioned", b"\x00\x02"),), 60_000,
                               None, "why")
    sync = cm.SyncGroupRequest("g", 3, "m-1", None, "connect", "sessioned",
                               (cm.SyncGroupAssignment("m-1", b"abc"),))
    heartbeat = cm.HeartbeatRequest("g", 3, "m-1")
    leave = cm.LeaveGroupRequest("g", (cm.LeaveGroupMember("m-1", None, "bye"),))
    for req, key, version in ((join, ApiKey.JOIN_GROUP, 9), (sync, ApiKey.SYNC_GROUP, 5),
                              (heartbeat, ApiKey.HEARTBEAT, 4), (leave, ApiKey.LEAVE_GROUP, 5)):
        k, v, values = classic_request_values(req)
        assert (k, v) == (key, version)
        cls = request_class(k, v)
        assert cls is not None
        entity = build(cls, values)
        assert entity.group_id == "g"
    assert to_ms(build(request_class(ApiKey.JOIN_GROUP, 9), classic_request_values(join)[2])
                 .rebalance_timeout) == 60_000

    class W:  # a decoded JoinGroup v9 answer, as the codec gives it
        error_code, generation_id, protocol_type, protocol_name = 0, 4, "connect", "sessioned"
        leader, skip_assignment, member_id = "m-1", False, "m-1"
        members = [type("M", (), {"member_id": "m-1", "group_instance_id": None,
                                  "metadata": b"meta"})()]
    r = classic_response_from_wire(join, W())
    assert r == cm.JoinGroupResponse(0, 4, "connect", "sessioned", "m-1", False, "m-1",
                                     (cm.JoinGroupResponseMember("m-1", None, b"meta"),))
    with pytest.raises(TypeError):
        classic_request_values(object())
