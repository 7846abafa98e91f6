"""``groupcoord connect worker`` processes when their coordinator fails (as a user runs them).

- The coordinator process is killed (SIGKILL) or paused (SIGSTOP), then the worker is told to
  stop (SIGTERM, as process managers send it, or SIGINT, Ctrl-C): it stops its tasks and exits 0
  within its close timeout. Before, a worker whose coordinator was killed revoked its tasks and
  then never exited.
- The coordinator is restarted on the same port and data: the worker carries on with it (a
  connector created afterwards reaches it).

An asyncio application with an ``AsyncConsumer``, interrupted with Ctrl-C (SIGINT) after its
coordinator was killed, exits within the close timeout too. In process, for all three members:
``test_member_faults.py``.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey

from .conftest import GROUPCOORD, ServerProcess, start_server

TIMEOUT_S = 30.0
CLOSE_TIMEOUT_MS = 1_000


class Worker:
    """A ``groupcoord connect worker`` process whose stdout lines are collected by a thread."""

    def __init__(self, bootstrap: str, group: str, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [*GROUPCOORD, "connect", "worker", "--bootstrap-server", bootstrap, "--group", group,
             "--close-timeout-ms", str(CLOSE_TIMEOUT_MS), "--scheduled-rebalance-max-delay-ms",
             "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines: list[str] = []
        self._q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line.rstrip("\n"))

    def wait_line(self, pred: Callable[[str], bool], timeout: float = TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no such line in {timeout} s; got {self.lines}")
            try:
                line = self._q.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            self.lines.append(line)
            if pred(line):
                return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def cleanup() -> Iterator[list[Callable[[], None]]]:
    todo: list[Callable[[], None]] = []
    yield todo
    for fn in reversed(todo):
        fn()


def _server(tmp_path: Path, cleanup: list[Callable[[], None]], *extra: str) -> ServerProcess:
    server = start_server(tmp_path / "data", *extra)

    def stop() -> None:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGCONT)
        server.stop(sig=signal.SIGKILL)

    cleanup.append(stop)
    return server


def _connectors(server: ServerProcess, group: str) -> None:
    with KafkaClient(server.bootstrap) as c:
        r = c.connect_group_config(group, [{"op": 0, "connector": "c", "task_count": 2}])
    assert int(r.error_code) == 0, r


def _assigned_everything(line: str) -> bool:
    return line.startswith("assigned:") and set(line.split(":", 1)[1].replace(" ", "").split(
        ",")) == {"c", "c-0", "c-1"}


@pytest.mark.parametrize(("protocol", "fault", "stop_signal"), [
    ("connect", "kill", signal.SIGTERM),
    ("connect", "pause", signal.SIGTERM),
    ("sessioned", "kill", signal.SIGINT),
])
def test_worker_exits_within_its_close_timeout_when_the_coordinator_is_gone(
        tmp_path: Path, cleanup: list[Callable[[], None]], protocol: str, fault: str,
        stop_signal: int) -> None:
    group = f"w-{uuid.uuid4().hex[:8]}"
    server = _server(tmp_path, cleanup)
    _connectors(server, group if protocol == "connect" else f"{group}-configs")
    w = Worker(server.bootstrap, group, "--protocol", protocol)
    cleanup.append(w.kill)
    w.wait_line(_assigned_everything)

    server.proc.send_signal(signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    w.proc.send_signal(stop_signal)
    try:
        code = w.proc.wait(TIMEOUT_S)  # a broken worker never exits
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the worker did not exit; output {w.lines}") from None
    assert code == 0, w.proc.stderr.read() if w.proc.stderr else code
    # Its leave could not be delivered (coordinator killed, or paused past the close timeout).
    w.wait_line(lambda line: line.startswith("worker ") and "was not delivered" in line)
    assert any(line.startswith("revoked:") for line in w.lines), w.lines


def test_worker_runs_its_tasks_again_when_the_coordinator_restarts(
        tmp_path: Path, cleanup: list[Callable[[], None]]) -> None:
    group = f"w-{uuid.uuid4().hex[:8]}"
    server = _server(tmp_path, cleanup)
    _connectors(server, group)
    w = Worker(server.bootstrap, group)
    cleanup.append(w.kill)
    w.wait_line(_assigned_everything)

    server.stop(sig=signal.SIGKILL)
    time.sleep(1.0)  # down for a few failed heartbeats and reconnections
    back = _server(tmp_path, cleanup, "--port", str(server.port))
    # The worker kept its tasks (its session outlived the outage) or was fenced and got them
    # again; either way it talks to the restarted coordinator: a new connector reaches it.
    with KafkaClient(back.bootstrap) as c:
        r = c.connect_group_config(group, [{"op": 0, "connector": "d", "task_count": 1}])
    assert int(r.error_code) == 0, r
    w.wait_line(lambda line: line.startswith("assigned:") and "d-0" in line)
    w.proc.send_signal(signal.SIGTERM)
    assert w.proc.wait(TIMEOUT_S) == 0


_CONSUMER_APP = """
import asyncio, sys
from groupcoord.client.driver import AsyncConsumer

async def main() -> None:
    async with AsyncConsumer(sys.argv[1], sys.argv[2], close_timeout_ms=1000) as c:
        c.subscribe([sys.argv[3]])
        print("assigned:", sorted(await c.wait_for_assignment(30)), flush=True)
        await asyncio.Event().wait()  # runs until Ctrl-C

try:
    asyncio.run(main())
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_async_consumer_application_stops_on_ctrl_c_while_the_coordinator_is_gone(
        tmp_path: Path, cleanup: list[Callable[[], None]]) -> None:
    """A user's asyncio application with an AsyncConsumer, interrupted (SIGINT: asyncio.run
    cancels the main task, ``async with`` closes the consumer) after its coordinator was
    killed: it exits within its close timeout."""
    server = _server(tmp_path, cleanup)
    topic = f"t-{uuid.uuid4().hex[:8]}"
    with KafkaClient(server.bootstrap) as c:
        r = c.call(ApiKey.CREATE_TOPICS, 7, topics=[{"name": topic, "num_partitions": 2,
                                                    "replication_factor": -1}], timeout=10_000)
    assert int(r.topics[0].error_code) == 0
    app = Worker.__new__(Worker)  # the same stdout collector around another process
    app.proc = subprocess.Popen([sys.executable, "-c", _CONSUMER_APP, server.bootstrap,
                                 f"g-{topic}", topic], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                # Ctrl-C as a terminal delivers it: a runner started as a
                                # shell's background job ignores SIGINT, and a child inherits
                                # that (Python then installs no KeyboardInterrupt handler)
                                preexec_fn=_default_sigint)
    app.lines, app._q = [], queue.Queue()
    threading.Thread(target=app._read, daemon=True).start()
    cleanup.append(app.kill)
    app.wait_line(lambda line: line.startswith("assigned:"))
    server.proc.send_signal(signal.SIGKILL)
    app.proc.send_signal(signal.SIGINT)
    try:
        code = app.proc.wait(TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the application did not exit; output {app.lines}") from None
    assert code == 0, app.proc.stderr.read() if app.proc.stderr else code
    app.wait_line(lambda line: line == "stopped")
