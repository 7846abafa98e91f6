"""One big consumer group over the wire (docs/benchmarks.md "Scale").

For every case (``members`` consumer-protocol members, ``topics`` topics of ``partitions /
topics`` partitions each) a fresh ``groupcoord serve`` process is started (memory record log,
one shard, Kafka's default session timeout and heartbeat interval unless ``interval_ms`` says
otherwise, and Kafka 4.3's default assignment batching, ``group.consumer.assignment.interval.ms``
= 1000, unless ``assignment_interval_ms`` says otherwise: 0 computes a target at every join)
and driven by ``benchmarks/_loadgen.py`` (one process, a few connections):

- **storm** (``converged`` false in its params, and no steady or churn figures, when the
  group did not converge within ``timeout_s``; the value is then the time given up at): every
  member joins at once and heartbeats as fast as it can (again as soon as
  its response arrives: the server's throughput, not the heartbeat interval, sets the pace;
  the server benchmark's join loop measured the same). The figure is the time from the first
  join until every member is at the group epoch with its
  assignment equal to its target (checked with ConsumerGroupDescribe: group epoch = assignment
  epoch = every member's epoch, every member's assignment = its target). Also: target
  assignments computed (the server's ``groupcoord_consumer_group_target_assignment_count``
  metric), members that had to rejoin (UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: their session
  expired while the group converged; 0 when healthy), server CPU seconds (``/proc``), the
  server's peak RSS (``VmHWM``) and the RSS it grew by during the storm (``rss_delta``: the
  members' and assignments' share, the topics being created before; ``rss_growth_vs_budget``
  against the budget of 2 KB per member + 200 bytes per assigned partition: the whole process,
  the memory record log holding every record written, the interpreter and the allocator's high
  water included; the coordinator's own state against the same budget is ``scale.memory``);
- **steady**: the converged group heartbeats for ``steady_s`` seconds (at least two
  intervals): server CPU seconds per second of wall time (``cpu_share``, 1.0 = one core
  busy) and p99 heartbeat latency;
- **churn**: ``waves`` times, 1% of the members (at least one) restart (leave, then join as new
  members) at once, one wave per heartbeat interval, every member heartbeating as the clients
  do (at the interval the coordinator returns, at once to acknowledge a new assignment, so
  convergence takes a few heartbeat intervals whatever the server's speed): the median time
  until converged again and the median number of partitions whose owner changed.

Sizes: ``groupcoord bench scale --set members=1000,10000 --set partitions=1000,100000 --set
topics=1`` (every combination runs; ``topics`` may be a list too; ``--quick`` is a few seconds).
The server's fd limit is raised for its partition files when the process may do so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._harness import Result
from benchmarks._loadgen import LoadGenerator, parse_describe_response
from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, request_class
from groupcoord.protocol.versions import ApiKey

_CMD = [sys.executable, "-c", "import sys; from groupcoord.cli import main; sys.exit(main())"]


# ------------------------------------------------------------------------------ server process


def _raise_fd_limit() -> None:  # runs in the child before exec
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (1_100_000, 400_000, hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
            return


@dataclass
class _Server:
    proc: subprocess.Popen[str]
    host: str
    port: int
    metrics_url: str

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status_kb(self, key: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(self.metrics_url, timeout=30) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise KeyError(name)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def _server(*config: str) -> Iterator[_Server]:
    with tempfile.TemporaryDirectory(prefix="gc-scale-") as tmp:
        cmd = [*_CMD, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", tmp,
               "--storage", "memory", "--shards", "1", "--metrics-port", "0"]
        for c in config:
            cmd += ["--config", c]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, preexec_fn=_raise_fd_limit)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            proc.kill()
            raise RuntimeError(f"server did not start: {line!r}")
        host, _, port = line.split()[-1].rpartition(":")
        metrics = proc.stdout.readline().split()[-1]
        server = _Server(proc, host, int(port), metrics)
        try:
            yield server
        finally:
            server.stop()


# ------------------------------------------------------------------------------ convergence


def _client_converged(lg: LoadGenerator, total_partitions: int) -> int | None:
    """The common epoch when every member is at one epoch and the members own every partition
    exactly once (the client's view; the coordinator's is checked by :func:`_describe_ok`)."""
    epoch = None
    owned = 0
    for m in lg.members:
        if m.leaving or m.epoch <= 0 or (epoch is not None and m.epoch != epoch):
            return None
        epoch = m.epoch
        for ps in m.owned.values():
            owned += len(ps)
    if owned != total_partitions:
        return None
    seen = set()
    for m in lg.members:
        for tid, ps in m.owned.items():
            for p in ps:
                seen.add((tid, p))
    return epoch if len(seen) == total_partitions else None


def _describe_ok(bootstrap: str, group: str, epoch: int) -> bool:
    """The coordinator's view: group epoch = assignment epoch = ``epoch`` = every member's, and
    every member's assignment is its target (the response read by hand,
    ``_loadgen.parse_describe_response``)."""
    with KafkaClient(bootstrap, client_id="scale-describe", timeout=120) as c:
        version = c.version_for(ApiKey.CONSUMER_GROUP_DESCRIBE, 1)
        cls = request_class(ApiKey.CONSUMER_GROUP_DESCRIBE, version)
        assert cls is not None
        handle = c.send_request(build(cls, group_ids=[group], include_authorized_operations=False))
        corr, groups = parse_describe_response(c.recv_frame(), version)
    if corr != handle[0]:
        raise RuntimeError(f"describe: correlation id {corr} != {handle[0]}")
    g = groups[0]
    if g.error_code != 0 or g.group_epoch != epoch or g.assignment_epoch != epoch:
        return False
    return all(m.member_epoch == epoch and m.assignment == m.target for m in g.members)


def _converge(lg: LoadGenerator, bootstrap: str, group: str, total: int,
              timeout_s: float, checks: list[float] | None = None) -> float | None:
    """Drive the members until converged; the time (perf_counter) the members' view became
    the converged one, or None on timeout. ``checks`` gets the seconds each describe took
    (the members wait meanwhile)."""
    start = time.perf_counter()
    state: dict[str, Any] = {"next_check": 0.0, "refused": None, "at": None}

    def done(now: float) -> bool:
        if now < state["next_check"]:
            return False
        epoch = _client_converged(lg, total)
        # The check reads every member: at most a tenth of the load generator's time.
        state["next_check"] = now + max(0.02, 10 * (time.perf_counter() - now))
        if epoch is None or epoch == state["refused"]:
            return False
        at = now
        ok = _describe_ok(bootstrap, group, epoch)
        if checks is not None:
            checks.append(time.perf_counter() - at)
        if ok:
            state["at"] = at
            return True
        state["refused"] = epoch
        return False

    ok = lg.run_until(done, timeout_s - (time.perf_counter() - start))
    return state["at"] if ok else None


def _owners(lg: LoadGenerator) -> dict[tuple[Any, int], str]:
    return {(tid, p): m.member_id for m in lg.members for tid, ps in m.owned.items() for p in ps}


def _p(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


# ------------------------------------------------------------------------------ one case


def bench_case(members: int, partitions: int, topics: int, *, interval_ms: int = 5000,
               assignment_interval_ms: int = 1000,
               steady_s: float = 10.0, waves: int = 3, connections: int = 4,
               timeout_s: float = 300.0) -> list[Result]:
    steady_s = max(steady_s, 2 * interval_ms / 1000)  # every member heartbeats in it
    config = [f"group.consumer.assignment.interval.ms={assignment_interval_ms}",
              f"group.consumer.heartbeat.interval.ms={interval_ms}",
              f"group.consumer.min.heartbeat.interval.ms={min(interval_ms, 5000)}"]
    per_topic = partitions // topics
    total = per_topic * topics
    names = [f"scale-{k}" for k in range(topics)]
    group = "scale-group"
    suffix = f"members={members}.partitions={total}.topics={topics}"
    params: dict[str, Any] = {"members": members, "partitions": total, "topics": topics,
                              "interval_ms": interval_ms, "connections": connections,
                              "assignment_interval_ms": assignment_interval_ms,
                              "cpus": os.cpu_count()}
    results: list[Result] = []
    with _server(*config) as server:
        with KafkaClient(server.bootstrap, timeout=600) as c:
            for i in range(0, topics, 50):
                c.call(ApiKey.CREATE_TOPICS, 7, topics=[
                    {"name": n, "num_partitions": per_topic, "replication_factor": 1}
                    for n in names[i:i + 50]], timeout_ms=600_000)
        targets0 = server.metric("groupcoord_consumer_group_target_assignment_count")
        rss0 = server.status_kb("VmRSS")
        cpu0 = server.cpu_seconds()
        lg = LoadGenerator(server.host, server.port, group, names, members, connections)
        try:
            # ---- storm
            t0 = time.perf_counter()
            lg.eager = True
            lg.start()
            checks: list[float] = []
            at = _converge(lg, server.bootstrap, group, total, timeout_s, checks)
            lg.eager = False
            converged = at is not None
            storm_ms = ((at if at is not None else time.perf_counter()) - t0) * 1000
            cpu1 = server.cpu_seconds()
            rss1 = server.status_kb("VmRSS")
            targets = server.metric("groupcoord_consumer_group_target_assignment_count") - targets0
            budget = 2048 * members + 200 * total
            storm = {**params, "converged": converged,
                     "target_assignments": int(targets), "rejoins": lg.stats.rejoins,
                     "errors": {str(k): v for k, v in lg.stats.errors.items()},
                     "server_cpu_s": round(cpu1 - cpu0, 3),
                     "peak_rss_mb": round(server.status_kb("VmHWM") / 1024, 1),
                     "rss_delta_mb": round((rss1 - rss0) / 1024, 1),
                     "describes": len(checks), "describe_s": round(sum(checks), 3),
                     "memory_budget_mb": round(budget / 2**20, 1)}
            results.append(Result(f"scale.storm.{suffix}", storm_ms, "ms", storm))
            results.append(Result(f"scale.storm.rss_growth_vs_budget.{suffix}",
                                  (rss1 - rss0) * 1024 / budget, "ratio", storm))
            if not converged:  # the storm's figures say why (rejoins, targets, CPU)
                print(f"bench scale: {suffix} did not converge in {timeout_s}s "
                      f"({lg.stats.rejoins} rejoins, errors {lg.stats.errors})", file=sys.stderr)
                return results

            # ---- steady state
            lg.stats.latencies.clear()
            lg.recording = True
            lg.recording_since = time.perf_counter()
            rejoins = lg.stats.rejoins
            c0, w0 = server.cpu_seconds(), time.perf_counter()
            lg.run_for(steady_s)
            share = (server.cpu_seconds() - c0) / (time.perf_counter() - w0)
            lat = sorted(lg.stats.latencies)
            lg.recording = False
            steady = {**params, "seconds": steady_s, "heartbeats": len(lat),
                      "rejoins": lg.stats.rejoins - rejoins}
            results.append(Result(f"scale.steady.cpu_share.{suffix}", share, "ratio", steady))
            if lat:
                results.append(Result(f"scale.steady.p99.{suffix}", _p(lat, 0.99) * 1000, "ms",
                                      steady))

            # ---- churn
            k = max(1, members // 100)
            times, moved = [], []
            for w in range(waves):
                before = _owners(lg)
                wave_start = time.perf_counter()
                for i in range(w * k, (w + 1) * k):
                    lg.restart(i % members)
                at = _converge(lg, server.bootstrap, group, total, timeout_s)
                if at is None:
                    raise RuntimeError(f"{suffix}: churn wave {w} did not converge")
                times.append((at - wave_start) * 1000)
                after = _owners(lg)
                moved.append(sum(1 for tp, o in after.items() if before.get(tp) != o))
                rest = interval_ms / 1000 - (time.perf_counter() - wave_start)
                if rest > 0:
                    lg.run_for(rest)
            churn = {**params, "waves": waves, "restarted_per_wave": k,
                     "samples_ms": [round(t) for t in times], "moved": moved}
            results.append(Result(f"scale.churn.converge.{suffix}", statistics.median(times),
                                  "ms", churn))
            results.append(Result(f"scale.churn.moved.{suffix}", statistics.median(moved),
                                  "partitions", churn))
        finally:
            lg.close()
    return results


# ------------------------------------------------------------------------------ memory


def coordinator_memory(members: int, partitions: int, topics: int,
                       assignment_interval_ms: int = 1000,
                       sites: list[tuple[str, int, int]] | None = None) -> tuple[int, int]:
    """Bytes (tracemalloc) the coordinator's state takes for a converged group, in process:
    a shard (no record log kept: the driver drops the records) before the group and after
    every member joined and reconciled; (bytes, target bytes = 2 KB per member + 200 B per
    partition). The coordinator's own state, unlike the server's RSS, which also holds the
    memory record log, the topics and the allocator's high water.

    Counted: everything the shard allocates and still holds for the group (members, targets,
    the partition owners, timers, the assignor's remembered output and input, caches). The
    requests are built as the wire would decode them: every string in a request (member id,
    topic names, client id and host) a fresh object, so what the coordinator keeps of a
    request is counted as the server would pay for it. Not counted: the topic metadata image
    (the broker's, built before), the record log, the interpreter's free lists.

    ``sites``: when a list, filled with where the counted bytes were allocated (file, line,
    bytes), largest first: the profile of what holds the memory."""
    import gc
    import tracemalloc
    import uuid as _uuid

    from groupcoord.coordinator.config import CoordinatorConfig
    from groupcoord.coordinator.modern.consumer.messages import (
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
        TopicPartitions,
    )
    from groupcoord.coordinator.modern.consumer.model import ConsumerGroup
    from groupcoord.coordinator.modern.group import GroupState
    from groupcoord.coordinator.shard import Shard
    from groupcoord.coordinator.topics import MetadataImage, TopicMetadata

    per = partitions // topics
    names = tuple(f"mem-{k}" for k in range(topics))
    image = MetadataImage.of(TopicMetadata(_uuid.UUID(int=k + 1), n, per)
                             for k, n in enumerate(names))
    shard = Shard(config=CoordinatorConfig(consumer_assignment_interval_ms=assignment_interval_ms),
                  metadata=image)
    def fresh(text: str) -> str:
        """A new ``str`` equal to ``text``, as a decoded request holds."""
        return text.encode().decode()

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ids = [str(_uuid.UUID(int=(1 << 100) + i)) for i in range(members)]
        client_ids = {mid: f"consumer-mem-g-{i + 1}" for i, mid in enumerate(ids)}
        now = 1_000_000
        epochs = dict.fromkeys(ids, 0)
        owned: dict[str, tuple[TopicPartitions, ...]] = dict.fromkeys(ids, ())

        def take(mid: str, r: ConsumerGroupHeartbeatResponse) -> bool:
            """The member takes its response (epoch, assignment); whether anything changed."""
            if r.error_code:
                raise RuntimeError(f"coordinator_memory: member {mid}: error {r.error_code} "
                                   f"({r.error_message})")
            changed = r.member_epoch != epochs[mid]
            epochs[mid] = r.member_epoch
            if r.assignment is not None:
                tps = tuple(TopicPartitions(t.topic_id, tuple(t.partitions))
                            for t in r.assignment.topic_partitions)
                if tps != owned[mid]:
                    owned[mid] = tps
                    changed = True
            return changed

        for mid in ids:
            take(mid, shard.handle(ConsumerGroupHeartbeatRequest(
                fresh("mem-g"), fresh(mid), 0, rebalance_timeout_ms=300_000,
                subscribed_topic_names=tuple(map(fresh, names)), topic_partitions=(),
                client_id=fresh(client_ids[mid]), client_host=fresh("/127.0.0.1")), now).response)
        for _ in range(50):  # heartbeat rounds (one interval apart) until the group is stable
            now += max(assignment_interval_ms, 1)
            changed = False
            for mid in ids:
                r = shard.handle(ConsumerGroupHeartbeatRequest(
                    fresh("mem-g"), fresh(mid), epochs[mid], topic_partitions=owned[mid],
                    client_id=fresh(client_ids[mid]), client_host=fresh("/127.0.0.1")),
                    now).response
                changed = take(mid, r) or changed
            group = shard.groups["mem-g"]
            if not changed and isinstance(group, ConsumerGroup) \
                    and group.state() is GroupState.STABLE:
                break
        else:
            raise RuntimeError("coordinator_memory: the group did not converge")
        owned.clear()  # the simulated clients' state is not the coordinator's
        epochs.clear()
        client_ids.clear()
        del ids
        del r, group
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - base
        if sites is not None:
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)])
            sites.extend((st.traceback[0].filename, st.traceback[0].lineno, st.size)
                         for st in snapshot.statistics("lineno"))
    finally:
        tracemalloc.stop()
    return used, 2048 * members + 200 * per * topics


# ------------------------------------------------------------------------------ entry point


def _ints(v: Any) -> list[int]:
    if isinstance(v, int):
        return [v]
    return [int(x) for x in str(v).split(",") if x]


def run(quick: bool = False, **sizes: Any) -> list[Result]:
    """Every combination of ``members``, ``partitions`` and ``topics`` (lists: ``1000,10000``);
    ``interval_ms``, ``steady_s``, ``waves``, ``connections``, ``timeout_s`` apply to all."""
    if quick:
        defaults: dict[str, Any] = {"members": "40", "partitions": "200", "topics": "1",
                                    "interval_ms": 500, "steady_s": 1.0, "waves": 2}
    else:
        defaults = {"members": "1000,10000", "partitions": "1000,100000", "topics": "1,100",
                    "interval_ms": 5000, "steady_s": 10.0, "waves": 3}
    opts = {**defaults, **sizes}
    unknown = set(opts) - {"members", "partitions", "topics", "interval_ms", "steady_s", "waves",
                           "connections", "timeout_s", "assignment_interval_ms"}
    if unknown:
        raise SystemExit(f"bench scale: unknown size {', '.join(sorted(unknown))}")
    common = {"interval_ms": int(opts["interval_ms"]), "steady_s": float(opts["steady_s"]),
              "waves": int(opts["waves"]), "connections": int(opts.get("connections", 4)),
              "timeout_s": float(opts.get("timeout_s", 300.0)),
              "assignment_interval_ms": int(opts.get("assignment_interval_ms", 1000))}
    results: list[Result] = []
    for members, partitions, topics in itertools.product(
            _ints(opts["members"]), _ints(opts["partitions"]), _ints(opts["topics"])):
        if partitions % topics or partitions < topics:
            continue
        results += bench_case(members, partitions, topics, **common)  # type: ignore[arg-type]
        sites: list[tuple[str, int, int]] = []
        used, budget = coordinator_memory(members, partitions, topics,
                                          common["assignment_interval_ms"],  # type: ignore[arg-type]
                                          sites=sites)
        results.append(Result(
            f"scale.memory.{f'members={members}.partitions={partitions}.topics={topics}'}",
            used / budget, "ratio",
            {"members": members, "partitions": partitions, "topics": topics,
             "coordinator_mb": round(used / 2**20, 2), "budget_mb": round(budget / 2**20, 2),
             "bytes_per_member": round(used / members),
             # where the bytes were allocated: the largest sites (path from the package down)
             "top_sites_mb": [(f"{f.rpartition('/src/')[2] or f}:{line}", round(size / 2**20, 2))
                              for f, line, size in sites[:8]]}))
    return results
