"""Kafka clients of the field against ``groupcoord serve``, as real processes: kafkajs 2.2.4
(classic groups), @platformatic/kafka (its KIP-848 consumer ``groupProtocol: 'consumer'``, its
classic consumer, its admin) and kcat (librdkafka's CLI, classic ``-G`` groups).

For each client:

- **stream**: a group of three on six partitions loses a member mid-stream (it closes), the
  server is killed (SIGKILL) and restarted on the same port and data directory while the two
  others consume; every produced message is consumed (at least once) and the committed offsets
  reach the log end of every partition.
- **leave**: of two members, one closes; the other holds every partition well before the
  session timeout (60 s, half of it allowed).
- **static**: a static member (instance id) closes and a new process with the same instance id
  gets the partitions back well before the session timeout (not kafkajs: it has no static
  membership).
- **admin**: list (with the group type), describe, fetch offsets, alter offsets (refused while
  the group has a member, then accepted), delete (NON_EMPTY_GROUP while active, then deleted,
  then GROUP_ID_NOT_FOUND), remove members (platformatic's classic admin); answered as Kafka
  answers them (not kcat: it has no group admin).

The Node.js clients run ``tests/clients/node/matrix.mjs`` (several checks per process, one JSON
line each); their packages come from ``tests/clients/node/package-lock.json`` (``npm ci``, which
``.ci/run`` does). kcat is Debian's package (``apt-get install -y kcat``, in ``.ci/run``). A test
is skipped, saying why, only when the tool is missing on a developer's machine.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess, start_server

NODE_DIR = Path(__file__).parent / "clients" / "node"
NODE = shutil.which("node")
KCAT = shutil.which("kcat") or shutil.which("kafkacat")
PROCESS_TIMEOUT_S = 300.0

needs_node = pytest.mark.skipif(
    NODE is None or not (NODE_DIR / "node_modules" / "kafkajs").is_dir()
    or not (NODE_DIR / "node_modules" / "@platformatic" / "kafka").is_dir(),
    reason="Node.js clients not installed: run `npm ci` in tests/clients/node (.ci/run does)")
needs_kcat = pytest.mark.skipif(
    KCAT is None, reason="kcat not installed: `apt-get install -y kcat` (.ci/run does)")

NODE_CLIENTS = ["kafkajs", "plt-consumer", "plt-classic"]
STREAM_CHECKS = {"three-members-share-the-partitions", "two-members-take-over",
                 "nothing-lost-across-member-loss-and-restart", "committed-offsets-at-log-end"}
ADMIN_CHECKS = {"admin-fetch-offsets", "admin-list-groups", "admin-describe-group",
                "admin-alter-offsets-refused-while-active",
                "admin-delete-group-refused-while-active", "admin-alter-offsets",
                "admin-delete-group"}
GROUP_CHECKS = {
    "kafkajs": {"leave-frees-partitions-before-session-timeout", *ADMIN_CHECKS},
    "plt-consumer": {"leave-frees-partitions-before-session-timeout",
                     "static-member-restarts-with-its-instance-id",
                     "admin-list-groups-type-filter", *ADMIN_CHECKS},
    "plt-classic": {"leave-frees-partitions-before-session-timeout",
                    "static-member-restarts-with-its-instance-id", "admin-remove-members",
                    *ADMIN_CHECKS},
}


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """A server of the test's own (restarted by it); the list holds the current process."""
    servers = [start_server(tmp_path / "data")]
    try:
        yield servers
    finally:
        servers[-1].stop(sig=signal.SIGKILL)


def _restart(servers: list[ServerProcess]) -> None:
    """SIGKILL the server and start it again on the same port and data directory."""
    old = servers[-1]
    old.stop(sig=signal.SIGKILL)
    servers.append(start_server(old.data_dir, "--port", str(old.port)))


def run_node(client: str, suite: str, servers: list[ServerProcess]) -> dict[str, dict[str, Any]]:
    """Run matrix.mjs; restart the server when it asks; its checks by name."""
    assert NODE is not None
    proc = subprocess.Popen([NODE, "matrix.mjs", client, suite, servers[-1].bootstrap],
                            cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    checks: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    done = False
    try:
        while not done:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            except queue.Empty:
                break
            if line is None:
                break
            msg = json.loads(line)
            if msg.get("event") == "restart":
                _restart(servers)
                assert proc.stdin is not None
                proc.stdin.write("restarted\n")
                proc.stdin.flush()
            elif msg.get("event") == "done":
                done = True
            elif "check" in msg:
                checks[msg["check"]] = msg
    finally:
        if proc.poll() is None and not done:
            proc.kill()
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert done, f"{client} {suite} did not finish; checks so far: {checks}\nstderr: {err[-3000:]}"
    return checks


def assert_checks(checks: dict[str, dict[str, Any]], expected: set[str]) -> None:
    failed = {name: c.get("detail") for name, c in checks.items() if not c["ok"]}
    assert not failed, failed
    assert expected <= set(checks), f"missing checks: {sorted(expected - set(checks))}"


@needs_node
@pytest.mark.parametrize("client", NODE_CLIENTS)
def test_node_client_stream_with_member_loss_and_server_restart(
        client: str, own_server: list[ServerProcess]) -> None:
    checks = run_node(client, "stream", own_server)
    assert_checks(checks, STREAM_CHECKS)
    assert len(own_server) == 2  # the server was restarted mid-stream


@needs_node
@pytest.mark.parametrize("client", NODE_CLIENTS)
def test_node_client_leave_static_member_and_admin(client: str, gc_server: ServerProcess) -> None:
    checks = run_node(client, "group", [gc_server])
    assert_checks(checks, GROUP_CHECKS[client])


# ============================================================================ kcat


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": name, "num_partitions": partitions,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0, r


def _produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    """Produce with kcat (-P), each value to partition ``i % partitions``."""
    assert KCAT is not None
    for p in range(partitions):
        data = "".join(v + "\n" for i, v in enumerate(values) if i % partitions == p)
        subprocess.run([KCAT, "-P", "-b", bootstrap, "-t", topic, "-p", str(p)],
                       input=data, text=True, check=True, timeout=60, capture_output=True)


class KcatMember:
    """``kcat -G group topic``: a balanced (classic) consumer; its output read in a thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, *extra: str,
                 session_ms: int = 60_000) -> None:
        assert KCAT is not None
        self.args = (bootstrap, group, topic, *extra)
        self.session_ms = session_ms
        self.values: list[str] = []
        self.assigned: set[int] = set()
        self.errors: list[str] = []
        self.proc = subprocess.Popen(
            [KCAT, "-b", bootstrap, "-G", group, "-f", "%p %s\\n", "-u",
             "-X", "auto.offset.reset=earliest",
             "-X", f"session.timeout.ms={session_ms}", "-X", f"max.poll.interval.ms={session_ms}",
             "-X", "heartbeat.interval.ms=500", "-X", "auto.commit.interval.ms=200",
             "-X", "reconnect.backoff.max.ms=500", "-X", "topic.metadata.refresh.interval.ms=1000",
             "-X", "fetch.wait.max.ms=100", *extra, topic],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            _, _, v = line.rstrip("\n").partition(" ")
            if v:
                self.values.append(v)

    def _read_err(self) -> None:
        # kcat prints "% Group ... rebalanced (memberid ...): assigned: topic [0], topic [3]"
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "rebalanced" in line and "assigned:" in line:
                parts = line.split("assigned:", 1)[1]
                self.assigned = {int(x.split("]")[0]) for x in parts.split("[")[1:]}
            elif "rebalanced" in line and "revoked" in line:
                self.assigned = set()
            elif "ERROR" in line or "FAIL" in line:
                self.errors.append(line.strip())

    def restarted(self) -> KcatMember:
        """The same command run again (a supervisor's restart), keeping what was consumed."""
        again = KcatMember(*self.args, session_ms=self.session_ms)
        again.values = self.values
        return again

    def leave(self) -> None:
        """A graceful stop (SIGTERM): kcat commits and leaves the group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _wait(what: str, cond: Any, timeout: float = 60.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if cond():
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": [
            {"name": topic, "partition_indexes": list(range(partitions))}]}])
    return {int(p.partition_index): int(p.committed_offset) for p in r.groups[0].topics[0].partitions}


def _log_end(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    with KafkaClient(bootstrap) as c:
        r = c.call(ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": p, "timestamp": -1,
                                            "current_leader_epoch": -1}
                                           for p in range(partitions)]}])
    return {int(p.partition_index): int(p.offset) for p in r.topics[0].partitions}


@needs_kcat
def test_kcat_stream_with_member_loss_and_server_restart(own_server: list[ServerProcess]) -> None:
    """As the Node.js stream suite. kcat exits when every broker of its cluster is down ("All
    broker connections are down: terminating"), as it does against a one-broker Kafka, so the
    test restarts the members that exited, as a supervisor would: they rejoin the group the
    restarted coordinator loaded and resume from the committed offsets. The session timeout is
    10 s here: the restarted processes are new members, the group waits for the old ones'
    sessions before it rebalances, as Kafka does."""
    topic, group, n = _name("kc"), _name("g-kc"), 6
    bootstrap = own_server[-1].bootstrap
    _create_topic(bootstrap, topic, n)
    first = [f"m{i}" for i in range(300)]
    second = [f"m{300 + i}" for i in range(300)]
    _produce(bootstrap, topic, first, n)
    members = [KcatMember(bootstrap, group, topic, session_ms=10_000) for _ in range(3)]
    everyone = list(members)
    try:
        _wait("three members sharing six partitions", lambda: all(m.assigned for m in members)
              and set().union(*(m.assigned for m in members)) == set(range(n)))
        _wait("some messages consumed", lambda: sum(len(m.values) for m in members) >= 60)
        members[2].leave()  # a member lost mid-stream
        rest = members[:2]
        _wait("two members taking over", lambda: set().union(*(m.assigned for m in rest))
              == set(range(n)))
        _restart(own_server)
        _produce(bootstrap, topic, second, n)
        produced = set(first) | set(second)

        def consumed_all() -> bool:
            for i, m in enumerate(rest):
                if m.proc.poll() is not None:  # kcat gave up while the broker was down
                    rest[i] = m.restarted()
                    everyone.append(rest[i])
            return produced <= {v for m in everyone for v in m.values}

        _wait("every message consumed", consumed_all, timeout=120)
        end = _log_end(bootstrap, topic, n)
        assert end == {p: 100 for p in range(n)}
        _wait("committed offsets at the log end",
              lambda: _committed(bootstrap, group, topic, n) == end, timeout=60)
    finally:
        for m in everyone:
            m.leave()


@needs_kcat
def test_kcat_leave_and_static_member(gc_server: ServerProcess) -> None:
    bootstrap = gc_server.bootstrap
    topic, group = _name("kcl"), _name("g-kcl")
    _create_topic(bootstrap, topic, 4)
    x, y = KcatMember(bootstrap, group, topic), KcatMember(bootstrap, group, topic)
    try:
        _wait("two members sharing four partitions",
              lambda: len(x.assigned) == 2 and len(y.assigned) == 2)
        x.leave()
        took = _wait("the other member holding every partition", lambda: len(y.assigned) == 4)
        assert took < 30.0, f"the leave freed the partitions after {took:.1f} s (session 60 s)"
    finally:
        x.leave()
        y.leave()

    # A static member (group.instance.id) restarts under its instance id.
    topic, group = _name("kcs"), _name("g-kcs")
    _create_topic(bootstrap, topic, 2)
    static = ("-X", "group.instance.id=kcat-1")
    first = KcatMember(bootstrap, group, topic, *static)
    try:
        _wait("the static member assigned", lambda: first.assigned == {0, 1})
    finally:
        first.leave()
    again = KcatMember(bootstrap, group, topic, *static)
    try:
        took = _wait("the restarted static member assigned", lambda: again.assigned == {0, 1})
        assert took < 30.0, f"the static member got its partitions after {took:.1f} s"
        assert not any("UNRELEASED" in e or "FENCED" in e for e in again.errors), again.errors
    finally:
        again.leave()


def test_node_package_lock_pins_the_tested_versions() -> None:
    """The versions docs/clients.md reports are the ones the lock file installs."""
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    packages = lock["packages"]
    assert packages["node_modules/kafkajs"]["version"] == "2.2.4"
    assert packages["node_modules/@platformatic/kafka"]["version"] == "1.35.0"
    assert os.path.exists(NODE_DIR / "matrix.mjs")
