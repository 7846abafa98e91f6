"""``make conformance``: librdkafka's own test suite against ``groupcoord serve``.

librdkafka's source, its C test suite included, ships inside the npm package
``@confluentinc/kafka-javascript`` (``package/deps/librdkafka/``). This script

1. installs the build's Debian packages when a header is missing (as root, ``apt-get``),
2. fetches the package with ``npm pack`` and builds librdkafka and its test runner once, cached
   outside the work tree (``~/.cache/groupcoord/conformance/kafka-javascript-VERSION-KEY/``, or
   under ``$GROUPCOORD_CONFORMANCE_CACHE``; KEY changes with the configure flags, so a build
   made with other flags is never reused), under ``nice``,
3. runs each test of the curated list (``suite.py``) against a fresh ``groupcoord serve --port 0
   --storage memory --config num.partitions=4`` per test, protocol and security (plaintext, and
   SASL_SSL with SCRAM-SHA-512 for the security subset), with ``TEST_KAFKA_VERSION=4.0.0`` (a
   case's own version when it has one: 4.2.0 for the share consumer tests, which run once, in
   the protocol column ``share``) and, for KIP-848, ``TEST_CONSUMER_GROUP_PROTOCOL=consumer``;
   cluster tests only, no sockem (``-L -E``; never ``-Q``, which skips most of some tests),
4. prints a table (test, protocol, security, result, seconds) and, with ``--markdown FILE``,
   writes it as Markdown with the reason of every failure and skip.

Exit status 0 when every result is a pass, a skip or a known failure (``suite.KNOWN_FAILURES``);
1 otherwise; 2 when the suite cannot be fetched or built. Each run's logs (test runner and
server) go to a directory of their own, printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python tests/conformance/librdkafka.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conformance.suite import (
    KNOWN_FAILURES,
    LIBRDKAFKA_VERSION,
    PACKAGE,
    PACKAGE_VERSION,
    PROTOCOLS,
    SECURITIES,
    Case,
    select,
)

BUILD_DEPS = {"build-essential": "/usr/bin/make", "zlib1g-dev": "/usr/include/zlib.h",
              "libssl-dev": "/usr/include/openssl/ssl.h",
              "libsasl2-dev": "/usr/include/sasl/sasl.h",
              "libzstd-dev": "/usr/include/zstd.h"}
#: librdkafka's configure flags: zstd required (0171 produces and consumes every codec), the
#: rest of what the suite does not need left out. Part of the cache's key (:func:`cache_dir`).
CONFIGURE = ["./configure", "--enable-zstd", "--disable-gssapi", "--disable-curl",
             "--disable-lz4-ext"]
#: What groupcoord's server needs for librdkafka's tests: auto-created topics of 4 partitions;
#: for the share consumer tests, written against Kafka 4.2: record locks down to 1 s (librdkafka's
#: own test clusters of Kafka 4.2+ set it: its tests give their groups 3 s locks), and a share
#: group's assignment computed at once, as Kafka 4.2 does (no assignment batching: a consumer
#: that joins a moment after another would otherwise find every record taken). Likewise a
#: consumer group's target is computed at once, as in the Kafka 4.0 the suite is told it talks to
#: (``TEST_KAFKA_VERSION``): assignment batching (KIP-1263, ``group.consumer.assignment.
#: interval.ms`` 1000 by default) came with Kafka 4.3, and 0118 ``commit_rebalance`` assumes a
#: second consumer's share is assigned before the first has consumed from it (with batching the
#: first learns of the revocation a heartbeat later, so its commit in the revoke callback
#: succeeds where the test expects it to fail). The 4.3 default itself is tested in
#: tests/test_assignment_batching.py.
SERVER_CONFIGS = ["num.partitions=4", "auto.create.topics.enable=true",
                  "group.share.min.record.lock.duration.ms=1000",
                  "group.share.assignment.interval.ms=0",
                  "group.consumer.assignment.interval.ms=0"]
SCRAM_USER, SCRAM_PASSWORD = "conformance", "conformance-secret"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: The runner's summary rows: ``| 0030_offset_commit | PASSED | 12.345s |`` (colours removed).
SUMMARY = re.compile(r"^\|\s*(\d{4}_\w+)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING|DNS)\s*\|"
                     r"\s*([\d.]+)s\s*\|\s*(.*)$")
#: A sub-test starts: ``[ function:line ]`` or ``[ function:line: description ]``.
SUBTEST_START = re.compile(r"\[ (\w+:\d+(?:: .*?)?) \]$")
SUBTEST_PASS = re.compile(r"\[ (.+): PASS \([\d.]+s\) \]$")
SKIP_REASON = re.compile(r"(?:SKIPPING|SKIP:)\s*(.*)")


class SetupError(Exception):
    """The suite cannot be fetched or built: one line for the user."""


@dataclass
class Row:
    test: str
    protocol: str
    security: str
    result: str  # passed, failed, skipped, known failure, known failure passed, error
    seconds: float
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.result in ("passed", "skipped", "known failure", "known failure passed")


# ----------------------------------------------------------------------------- fetch and build


def build_key(configure: Sequence[str] | None = None) -> str:
    """A short digest of the configure flags (:data:`CONFIGURE` unless given): a build made
    with other flags (an older cache built without zstd) lives in another directory and is
    never taken for this one."""
    flags = CONFIGURE if configure is None else configure
    return hashlib.sha256("\0".join(flags).encode()).hexdigest()[:12]


def cache_dir() -> Path:
    """The build's directory: one per package version and configure flags."""
    base = os.environ.get("GROUPCOORD_CONFORMANCE_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "groupcoord" / "conformance"
    return root / f"kafka-javascript-{PACKAGE_VERSION}-{build_key()}"


def _run(cmd: list[str], cwd: Path, log: Path, nice: bool = True) -> None:
    full = (["nice", "-n", "5"] if nice and shutil.which("nice") else []) + cmd
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
        out.flush()
        done = subprocess.run(full, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise SetupError(f"{' '.join(cmd)} failed with status {done.returncode}; see {log}")


def ensure_build_deps(log: Path) -> None:
    missing = [pkg for pkg, path in BUILD_DEPS.items() if not Path(path).exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        raise SetupError(f"missing build packages {' '.join(missing)}: "
                         f"apt-get install {' '.join(BUILD_DEPS)}")
    print(f"installing {' '.join(missing)} (apt-get)", flush=True)
    _run(["apt-get", "update", "-qq"], Path("/"), log, nice=False)
    env_cmd = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq",
               *BUILD_DEPS]
    _run(env_cmd, Path("/"), log, nice=False)


def ensure_built(jobs: int) -> Path:
    """librdkafka's ``tests/`` directory with a built ``test-runner`` (fetched and built once
    per package version; concurrent runs wait on a lock)."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    src = root / "package" / "deps" / "librdkafka"
    stamp = root / ".built"
    log = root / "build.log"
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and (src / "tests" / "test-runner").exists():
            return src / "tests"
        ensure_build_deps(log)
        # the package itself does not depend on the flags: one download per version
        tgz = root.parent / f"confluentinc-kafka-javascript-{PACKAGE_VERSION}.tgz"
        if not tgz.exists():
            if shutil.which("npm") is None:
                raise SetupError("npm is needed to fetch librdkafka's source "
                                 f"({PACKAGE}@{PACKAGE_VERSION})")
            print(f"fetching {PACKAGE}@{PACKAGE_VERSION} (npm pack)", flush=True)
            _run(["npm", "pack", f"{PACKAGE}@{PACKAGE_VERSION}", "--loglevel=error"], root.parent,
                 log, nice=False)
        if not (src / "configure").exists():
            with tarfile.open(tgz) as tar:
                members = [m for m in tar.getmembers()
                           if m.name.startswith("package/deps/librdkafka/")]
                tar.extractall(root, members=members, filter="data")
        print(f"building librdkafka {LIBRDKAFKA_VERSION} and its test runner "
              f"(minutes; log: {log})", flush=True)
        started = time.monotonic()
        _run(CONFIGURE, src, log)
        _run(["make", f"-j{jobs}", "libs"], src, log)
        _run(["make", f"-j{jobs}", "-C", "tests", "build"], src, log)
        stamp.write_text(f"librdkafka {LIBRDKAFKA_VERSION}\n")
        print(f"built in {time.monotonic() - started:.0f} s", flush=True)
    return src / "tests"


# ----------------------------------------------------------------------------- the server


@dataclass
class Server:
    proc: subprocess.Popen[str]
    bootstrap: str

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)


def _security_args(security: str, certs_dir: Path, data_dir: Path) -> list[str]:
    if security == "plaintext":
        return ["--host", "127.0.0.1", "--port", "0"]
    from groupcoord.server.security.credentials import CredentialStore
    from groupcoord.testing.certs import make_certs

    server_pem = certs_dir / "server.pem"
    if not server_pem.exists():
        make_certs(certs_dir)
    CredentialStore(data_dir).add(SCRAM_USER, "SCRAM-SHA-512", SCRAM_PASSWORD)
    return ["--listener", "SASL_SSL://127.0.0.1:0",
            "--config", f"ssl.keystore.location={server_pem}",
            "--config", "sasl.enabled.mechanisms=SCRAM-SHA-512",
            "--config", "allow.everyone.if.no.acl.found=true"]


@contextlib.contextmanager
def serve(security: str, work: Path, certs_dir: Path, log: Path,
          auto_create: bool = True, extra_configs: Sequence[str] = (),
          brokers: int = 1) -> Iterator[Server]:
    """A fresh ``groupcoord serve`` (memory storage) for one test, with ``extra_configs``
    (``KEY=VALUE``) after :data:`SERVER_CONFIGS`; stopped on exit."""
    data_dir = work / "data"
    data_dir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "groupcoord", "-v", "serve", "--storage", "memory",
           "--data-dir", str(data_dir), *_security_args(security, certs_dir, data_dir)]
    if brokers > 1:
        cmd += ["--brokers", str(brokers)]
    for c in SERVER_CONFIGS:
        if c.startswith("auto.create.topics.enable=") and not auto_create:
            c = "auto.create.topics.enable=false"
        cmd += ["--config", c]
    for c in extra_configs:
        cmd += ["--config", c]
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line: list[str] = []
    reader = threading.Thread(
        target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(60)
    server = Server(proc, "")
    try:
        if not line or not line[0].startswith("listening on "):
            raise RuntimeError(f"groupcoord did not start: {line!r}; see {log}")
        server.bootstrap = line[0].split()[-1].rpartition("://")[2]
        yield server
    finally:
        server.stop()


# ----------------------------------------------------------------------------- one test


def client_conf(bootstrap: str, security: str, certs_dir: Path) -> str:
    lines = [f"bootstrap.servers={bootstrap}", "test.timeout.multiplier=3"]
    if security == "sasl_ssl":
        lines += ["security.protocol=SASL_SSL", "sasl.mechanisms=SCRAM-SHA-512",
                  f"sasl.username={SCRAM_USER}", f"sasl.password={SCRAM_PASSWORD}",
                  f"ssl.ca.location={certs_dir / 'ca.pem'}"]
    return "\n".join(lines) + "\n"


def parse_output(text: str) -> tuple[dict[str, tuple[str, float, str]], dict[str, str]]:
    """From the test runner's output: ``{test name: (state, seconds, fail text)}`` of its
    summary, and ``{test name: sub-test}`` for a test whose last started sub-test did not pass
    (where a failing test stopped)."""
    results: dict[str, tuple[str, float, str]] = {}
    # A failing test makes the runner abort (SIGABRT) before its summary: its own lines say
    # how each test ended (``Test NAME PASSED`` or ``TEST FAILURE`` and the ``### Test`` text).
    ended: dict[str, tuple[str, float, str]] = {}
    open_subtest: dict[str, str] = {}
    lines = [ANSI.sub("", raw).rstrip() for raw in text.splitlines()]
    for i, line in enumerate(lines):
        m = SUMMARY.match(line)
        if m:
            results[m.group(1)] = (m.group(2), float(m.group(3)), m.group(4).strip(" |"))
            continue
        end = re.match(r"^\[(\d{4}_\w+)\s*/\s*([\d.]+)s\]\s*(?:=+ Test \S+ (PASSED) =+|"
                       r"(TEST FAILURE))$", line)
        if end:
            message = ""
            for follow in lines[i + 1:i + 6]:
                if follow.startswith(f'### Test "{end.group(1)}'):
                    j = lines.index(follow, i + 1)
                    message = lines[j + 1] if j + 1 < len(lines) else ""
                    break
            ended[end.group(1)] = ("PASSED" if end.group(3) else "FAILED",
                                   float(end.group(2)), message)
        test = re.match(r"^\[(\d{4}_\w+)\s*/\s*[\d.]+s\]\s*(.*)$", line)
        if not test:
            continue
        name, rest = test.group(1), test.group(2)
        passed = SUBTEST_PASS.search(rest)
        if passed:
            if open_subtest.get(name) == passed.group(1):
                del open_subtest[name]
            continue
        started = SUBTEST_START.search(rest)
        if started and ": SKIP: " not in started.group(1):
            open_subtest[name] = started.group(1)
    for name, outcome in ended.items():
        results.setdefault(name, outcome)
    return results, open_subtest


def ran(text: str, name: str) -> bool:
    """Whether the runner started ``name`` (it prints the test's own lines, ``[name / Ns]``),
    as opposed to skipping it silently (another scenario)."""
    return re.search(rf"^\[{re.escape(name)}\s*/", ANSI.sub("", text), re.MULTILINE) is not None


def skip_reason(text: str, name: str) -> str:
    for raw in text.splitlines():
        line = ANSI.sub("", raw)
        if name in line:
            m = SKIP_REASON.search(line)
            if m and m.group(1).strip():
                return m.group(1).strip()
    return ""


def classify(name: str, state: str, fail: str, subtest: str | None) -> tuple[str, str]:
    """(result, reason) of one reported test name, known failures applied."""
    known = KNOWN_FAILURES.get(name)
    if state == "PASSED":
        return ("known failure passed", "listed as a known failure: "
                "remove it from suite.KNOWN_FAILURES") if known else ("passed", "")
    if state == "SKIPPED":
        return "skipped", fail
    where = f"in sub-test {subtest}: " if subtest else ""
    if known is not None:
        pattern, why = known
        if subtest is not None and pattern in subtest:
            return "known failure", f"{why} ({where.rstrip(': ')})"
    return "failed", f"{where}{fail}"


def is_local(name: str) -> bool:
    """A test of librdkafka's mock cluster or a local one (``-L`` leaves it out: it talks to no
    server); librdkafka names them ``..._mock`` and ``..._local``."""
    return name.endswith(("_mock", "_local")) or "_mock_" in name


def rows_of(text: str, protocol: str, security: str) -> list[Row]:
    """The table's rows for one run's output: every test the runner reports, except the local
    ones (``-L``) and those of another scenario (skipped silently, never started)."""
    results, open_subtest = parse_output(text)
    rows = []
    for name, (state, seconds, fail) in sorted(results.items()):
        if state == "SKIPPED" and (is_local(name) or (not fail and not ran(text, name))):
            continue
        result, reason = classify(name, state, fail, open_subtest.get(name))
        if result == "skipped" and not reason:
            reason = skip_reason(text, name)
        rows.append(Row(name, protocol, security, result, seconds, reason))
    return rows


def run_case(case: Case, protocol: str, security: str, tests_dir: Path, out_dir: Path,
             certs_dir: Path, timeout: float, scenario: str = "default",
             extra_configs: Sequence[str] = ()) -> list[Row]:
    """The rows of one run of the test runner on ``case`` (its tests of ``scenario``: those of
    another scenario and the local ones are skipped by the runner and left out here)."""
    work = out_dir / f"{case.number}-{protocol}-{security}-{scenario}"
    work.mkdir(parents=True)
    started = time.monotonic()
    try:
        with serve(security, work, certs_dir, work / "server.log",
                   auto_create=scenario != "noautocreate", extra_configs=extra_configs,
                   brokers=case.brokers) as server:
            conf = work / "test.conf"
            conf.write_text(client_conf(server.bootstrap, security, certs_dir))
            libs = [str(tests_dir.parent / "src"), str(tests_dir.parent / "src-cpp")]
            if os.environ.get("LD_LIBRARY_PATH"):
                libs.append(os.environ["LD_LIBRARY_PATH"])
            env = {**os.environ, "TESTS": case.number, "RDKAFKA_TEST_CONF": str(conf),
                   "TEST_KAFKA_VERSION": case.kafka_version,
                   "LD_LIBRARY_PATH": ":".join(libs)}
            env.pop("TEST_CONSUMER_GROUP_PROTOCOL", None)
            env.pop("CI", None)  # the runner's CI mode changes timeouts and output
            if protocol == "consumer":
                env["TEST_CONSUMER_GROUP_PROTOCOL"] = "consumer"
            log = work / "test-runner.log"
            try:
                with log.open("w") as out:
                    done = subprocess.run([str(tests_dir / "test-runner"), "-L", "-E",
                                           "-s", scenario],
                                          cwd=work, env=env, stdout=out,
                                          stderr=subprocess.STDOUT, timeout=timeout,
                                          check=False)
                status = done.returncode
            except subprocess.TimeoutExpired:
                status = None
    except RuntimeError as e:
        return [Row(case.number, protocol, security, "error", time.monotonic() - started,
                    str(e))]
    text = log.read_text(errors="replace")
    results, _ = parse_output(text)
    elapsed = time.monotonic() - started
    if not results:
        why = (f"timed out after {timeout:.0f} s" if status is None
               else f"no summary (exit status {status})")
        return [Row(case.number, protocol, security, "error", elapsed, f"{why}; see {log}")]
    rows = rows_of(text, protocol, security)
    if status is None:
        rows.append(Row(case.number, protocol, security, "error", elapsed,
                        f"timed out after {timeout:.0f} s; see {log}"))
    return rows


# ----------------------------------------------------------------------------- the table


def table(rows: list[Row]) -> str:
    head = ("test", "protocol", "security", "result", "seconds")
    body = [(r.test, r.protocol, r.security, r.result, f"{r.seconds:.1f}") for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*b) for b in body]
    for r in rows:
        if r.reason and r.result != "passed":
            lines.append(f"  {r.test} ({r.protocol}, {r.security}): {r.result}: {r.reason}")
    return "\n".join(lines)


def markdown(rows: list[Row]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| test | protocol | security | result | seconds | reason |",
             "| --- | --- | --- | --- | ---: | --- |"]
    lines += [f"| {r.test} | {r.protocol} | {r.security} | {r.result} | {r.seconds:.1f} | "
              f"{cell(r.reason)} |" for r in rows]
    return "\n".join(lines) + "\n"


def summary_line(rows: list[Row]) -> str:
    """``N passed, N failed, N skipped``: the plain closing line; the known failures are
    counted as skipped (expected, not run to success), and listed by :func:`table`."""
    passed = sum(r.result in ("passed", "known failure passed") for r in rows)
    failed = sum(r.result in ("failed", "error") for r in rows)
    skipped = sum(r.result in ("skipped", "known failure") for r in rows)
    return f"{passed} passed, {failed} failed, {skipped} skipped"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n\n")[0])
    p.add_argument("--subset", choices=["ci", "full"], default="full")
    p.add_argument("--tests", help="comma-separated test numbers of the list (e.g. 0030,0045)")
    p.add_argument("--protocol", choices=[*PROTOCOLS, "both"], default="both")
    p.add_argument("--security", choices=[*SECURITIES, "both"], default="both",
                   help="sasl_ssl runs only the cases marked for it")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per test run")
    p.add_argument("--markdown", type=Path, help="also write the table as Markdown here")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build parallelism")
    p.add_argument("--server-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker config for every server of the run (repeatable), e.g. "
                        "group.consumer.assignment.interval.ms=0")
    ns = p.parse_args(argv)
    try:
        cases = select(ns.subset, ns.tests.split(",") if ns.tests else None)
    except ValueError as e:
        p.error(str(e))
    protocols = PROTOCOLS if ns.protocol == "both" else (ns.protocol,)
    securities = SECURITIES if ns.security == "both" else (ns.security,)
    try:
        tests_dir = ensure_built(ns.jobs)
    except SetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out_dir = Path(tempfile.mkdtemp(prefix="groupcoord-conformance-"))
    certs_dir = out_dir / "certs"
    rows: list[Row] = []
    for case in cases:
        for security in securities:
            if security == "sasl_ssl" and not case.sasl_ssl:
                continue
            for protocol in (("share",) if case.share else protocols):
                got = run_case(case, protocol, security, tests_dir, out_dir, certs_dir,
                               ns.timeout, extra_configs=ns.server_config)
                for r in got:
                    print(f"{r.test:<45} {r.protocol:<9} {r.security:<9} {r.result} "
                          f"({r.seconds:.1f} s)", flush=True)
                rows += got
    print()
    print(table(rows))
    if ns.markdown:
        ns.markdown.write_text(markdown(rows))
    print(f"logs: {out_dir}")
    print(summary_line(rows))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
