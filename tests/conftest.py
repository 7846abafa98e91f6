"""Shared fixtures: a real ``groupcoord serve`` subprocess (the wire tests run against one).

``gc_server`` is session-scoped: one server on port 0 with a temporary data directory, started
once, read until its ``listening on HOST:PORT`` line, and terminated at the end of the session.
Broker configs make client-visible timings short (heartbeat interval 500 ms) so tests with real
clients stay fast. ``start_server`` starts another one (tests of restarts own theirs).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis's per-example deadline (200 ms) off for every property test: an example's time
# measures the machine (a first call that loads a data file, a loaded CI runner, 4 s once),
# not the property, and a deadline failure is then a flaky one. A test that wants a deadline
# sets its own.
settings.register_profile("groupcoord", deadline=None)
settings.load_profile("groupcoord")

# The plugin of groupcoord.testing (also an entry point, pytest11; listed here for a venv whose
# install predates it). Its module name is its entry point name, so it is loaded once.
pytest_plugins = ["groupcoord.testing.plugin"]

#: ``groupcoord`` as the console script runs it (its entry point, ``groupcoord.cli:main``).
GROUPCOORD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]

FAST_GROUP_CONFIGS = [
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=500",
    "group.consumer.min.session.timeout.ms=2000",
    "group.consumer.session.timeout.ms=10000",
    # Kafka 4.3's default assignment interval is 1000 ms (KIP-1263): a group's second target
    # waits for it, and a client cannot tell a group waiting for it from a settled one. The
    # wire tests want every join in the next target; the unit tests and `make conformance`
    # exercise the default.
    "group.consumer.assignment.interval.ms=0",
    # Share groups (KIP-932): the same, for ShareGroupHeartbeat.
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
    "group.share.min.session.timeout.ms=2000",
    "group.share.session.timeout.ms=10000",
    "group.share.assignment.interval.ms=0",
]


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    host: str
    port: int
    data_dir: Path
    stderr_path: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return self.proc.returncode

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def start_server(data_dir: Path, *extra: str, timeout: float = 60.0) -> ServerProcess:
    """Start ``groupcoord serve --port 0`` on ``data_dir``; return once it listens (within
    ``timeout``: generous, a start-up on a loaded 2-core machine takes many seconds)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
    err = open(stderr_path, "a")  # noqa: SIM115 - owned by the child for its lifetime
    cmd = [*GROUPCOORD, "-v", "serve", "--host", "127.0.0.1",
           "--port", "0", "--data-dir", str(data_dir)]
    for c in FAST_GROUP_CONFIGS:
        cmd += ["--config", c]
    cmd += list(extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    err.close()
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""),
                              daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or not line[0].startswith("listening on "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {line!r}\n{stderr_path.read_text()}")
    host, _, port = line[0].split()[-1].rpartition(":")
    return ServerProcess(proc, host, int(port), data_dir, stderr_path)


@pytest.fixture(scope="session")
def gc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(tmp_path_factory.mktemp("gc-server") / "data")
    try:
        yield server
    finally:
        code = server.stop()
        if code not in (0, -15):
            print(server.stderr()[-5000:], file=sys.stderr)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] Spark session for every lab test (shared NOTES "PySpark on this machine");
    skipped where pyspark is not installed."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17: no java on PATH and no JAVA_HOME")
    from groupcoord.lab.session import TEST_CONF, make_session

    session = make_session("local[2]", app_name="groupcoord-lab-tests", conf=TEST_CONF)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def saved_figures(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every matplotlib figure the test saves, in order (``Figure.savefig`` still writes its
    file): the lab report's chart tests read the axes the page's pictures were drawn from."""
    from matplotlib.figure import Figure

    saved: list[object] = []
    real = Figure.savefig

    def keep(fig: Figure, *args: object, **kw: object) -> None:
        saved.append(fig)
        real(fig, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "savefig", keep)
    return saved
