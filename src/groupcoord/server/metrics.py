"""Broker metrics in Prometheus text format (KIP-848 "Broker Metrics"; docs/durability-and-metrics.md).

Served on ``groupcoord serve --metrics-port PORT`` at ``/metrics`` (any path answers) by a tiny
HTTP/1.0 server on the broker's own event loop, so a scrape reads the shards consistently
between two requests. The exposition is the Prometheus text format 0.0.4, written by hand (a
dozen gauges and counters computed at scrape time do not need ``prometheus_client``).

Names follow Kafka's ``kafka.server:type=group-coordinator-metrics,name=...`` MBeans as the
Prometheus JMX exporter spells them (``kafka_server_group_coordinator_metrics_<name>``, dashes
as underscores, tags as labels), so dashboards made for Kafka's new coordinator read them:

=====================================================  =========================================
``..._group_count{protocol}``                          groups by type (consumer, classic, connect,
                                                       share)
``..._consumer_group_count{state}``                    consumer groups by state (empty, assigning,
                                                       reconciling, stable, dead)
``..._classic_group_count{state}``                     classic groups by state (offsets without a
                                                       group count as an empty classic group, as
                                                       ListGroups shows them)
``..._consumer_group_rebalance_count``                 consumer group epoch bumps since start
``..._consumer_group_rebalance_rate``                  the same per second, last 30 s
``..._share_group_count{state}``                       share groups by state (KIP-932: empty,
                                                       stable, dead)
``..._share_group_rebalance_count`` / ``_rate``        share group epoch bumps since start; per
                                                       second, last 30 s
``kafka_server_sharegroupmetrics_``                    records acknowledged by type (KIP-932:
``recordacknowledgementspersec_count{acktype}``        Accept, Release, Reject, Renew) since start
``kafka_server_sharepartitionmetrics_``                acquisition locks that expired since start
``acquisitionlocktimeoutpersec_count``                 (Kafka tags it by share partition; ours is
                                                       the broker's total)
``kafka_server_sharepartitionmetrics_``                records in a share partition's in-flight
``inflightmessagecount{group,topic,partition}``        window (from its start offset to its end
                                                       offset, acknowledged ones not yet passed
                                                       included, as Kafka's in-flight batches)
``kafka_server_sharesessioncache_sharesessionscount``  open share sessions
``kafka_server_sharesessioncache_``                    share partitions in the open share
``sharepartitionscount``                               sessions
``..._partition_count{state}``                         shards (coordinator partitions) loading,
                                                       active, failed
``..._partition_load_time_avg`` / ``_max``             shard load time in ms (replay + load
                                                       duties), over every load since start
``..._event_queue_size``                               requests received and waiting to be
                                                       handled (pipelined frames queued on the
                                                       connections)
``..._thread_idle_ratio_avg`` / ``_min``               share of time the event loop thread waits
                                                       for I/O (idle) rather than runs handlers,
                                                       over the last 30 one-second windows
                                                       (average; lowest window)
=====================================================  =========================================

The share partitions' metrics are Kafka's ``kafka.server:type=ShareGroupMetrics``,
``SharePartitionMetrics`` and ``ShareSessionCache`` MBeans (KIP-932 "Metrics", KIP-1103; Kafka's
``ShareGroupMetricsRegistry``), type and name lowercased as the JMX exporter's lowercase rules
write them, a meter's ``Count`` as ``_count``. Kafka's per-topic request meters
(``BrokerTopicMetrics`` ``TotalShareFetchRequestsPerSec`` and the like) are not produced.

Extensions of ours carry the ``groupcoord_`` prefix: share records acquired (deliveries),
acquired again (redeliveries), released because their member left, archived (rejected or at
``share.delivery.count.limit``) and acquired now (``coordinator/share_partitions``'
counters); connect groups by state, connect group
rebalances, consumer group target assignments computed (one target assignment metadata record
each; ``bench scale`` reads it), deferred requests (classic JoinGroup / SyncGroup waiting),
log compaction runs, entries removed and the duration of the last run; the memory the
connections hold: ``groupcoord_connection_request_bytes`` (requests received and not yet
handled, which ``queued.max.request.bytes`` bounds) and ``groupcoord_connection_response_bytes``
(responses written and not yet taken by their clients: per connection at most one response past
the transport's high-water mark, docs/configuration.md "Connections and memory").

The idle ratio is measured by wrapping the selector's ``select`` of the running loop (the only
place an asyncio loop blocks): time inside ``select`` is idle, the rest busy. A loop without a
Python selector (uvloop) reports no idle ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any, Protocol

from groupcoord.coordinator.classic.model import ClassicGroupState
from groupcoord.coordinator.modern.group import GroupState
from groupcoord.coordinator.records import Record, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.storage.log import CompactionResult

log = logging.getLogger(__name__)

KAFKA = "kafka_server_group_coordinator_metrics_"
OURS = "groupcoord_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class WindowedRate:
    """Events per second over a sliding window of one-second buckets (Kafka's ``Rate``)."""

    def __init__(self, window_s: int = 30, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._clock = clock
        self._start = clock()
        self._buckets: deque[tuple[int, int]] = deque()  # (second, count)

    def record(self, n: int = 1) -> None:
        sec = int(self._clock())
        if self._buckets and self._buckets[-1][0] == sec:
            self._buckets[-1] = (sec, self._buckets[-1][1] + n)
        else:
            self._buckets.append((sec, n))
        self._trim(sec)

    def _trim(self, sec: int) -> None:
        while self._buckets and self._buckets[0][0] <= sec - self.window_s:
            self._buckets.popleft()

    def rate(self) -> float:
        now = self._clock()
        self._trim(int(now))
        span = min(float(self.window_s), max(now - self._start, 1.0))
        return sum(n for _, n in self._buckets) / span


class CoordinatorMetrics:
    """The sensors the runtime records into (the other metrics are read at scrape time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.consumer_rebalances = 0
        self.connect_rebalances = 0
        self.consumer_targets = 0
        self.consumer_rebalance_rate = WindowedRate(clock=clock)
        self.share_rebalances = 0
        self.share_rebalance_rate = WindowedRate(clock=clock)
        self.loads = 0
        self.load_time_sum_ms = 0.0
        self.load_time_max_ms = 0.0
        self.compactions = 0
        self.compaction_removed = 0
        self.compaction_last_ms = 0.0

    def appended(self, records: Iterable[Record]) -> None:
        """Records just made durable: a consumer (connect) group epoch record with a value is a
        rebalance (Kafka records its rebalance sensor where it bumps the group epoch)."""
        for r in records:
            t = r.key.type
            if r.value is None:
                continue
            if t is RecordType.CONSUMER_GROUP_METADATA:
                self.consumer_rebalances += 1
                self.consumer_rebalance_rate.record()
            elif t is RecordType.CONNECT_GROUP_METADATA:
                self.connect_rebalances += 1
            elif t is RecordType.SHARE_GROUP_METADATA:
                self.share_rebalances += 1
                self.share_rebalance_rate.record()
            elif t is RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
                self.consumer_targets += 1

    def loaded(self, ms: float) -> None:
        self.loads += 1
        self.load_time_sum_ms += ms
        self.load_time_max_ms = max(self.load_time_max_ms, ms)

    def compacted(self, results: Sequence[CompactionResult], ms: float) -> None:
        self.compactions += 1
        self.compaction_removed += sum(r.removed for r in results)
        self.compaction_last_ms = ms

    @property
    def load_time_avg_ms(self) -> float:
        return self.load_time_sum_ms / self.loads if self.loads else 0.0


class LoopIdleMonitor:
    """Idle (waiting in ``select``) versus busy time of an asyncio loop, in windows."""

    def __init__(self, window_s: float = 1.0, windows: int = 30,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.window_s = window_s
        self._clock = clock
        self._ratios: deque[float] = deque(maxlen=windows)
        self._window_start = clock()
        self._window_idle = 0.0
        self._selector: Any = None

    def install(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Wrap ``loop``'s selector; False when the loop has none we can wrap."""
        sel = getattr(loop, "_selector", None)
        select = getattr(sel, "select", None)
        if sel is None or select is None:
            log.info("thread idle ratio unavailable: the event loop has no Python selector")
            return False
        clock = self._clock

        def timed_select(timeout: float | None = None) -> Any:
            t0 = clock()
            try:
                return select(timeout)
            finally:
                self._idle(t0, clock())

        sel.select = timed_select
        self._selector = sel
        self._window_start = clock()
        return True

    def uninstall(self) -> None:
        if self._selector is not None:
            with contextlib.suppress(AttributeError):
                del self._selector.select  # the class's own method again
            self._selector = None

    @property
    def installed(self) -> bool:
        return self._selector is not None

    def _idle(self, t0: float, t1: float) -> None:
        """Credit the idle interval ``[t0, t1]`` to the windows it spans."""
        self._roll(t0)
        while t1 - self._window_start >= self.window_s:
            end = self._window_start + self.window_s
            self._window_idle += end - max(t0, self._window_start)
            self._close_window()
            t0 = end
            self._skip(t1, idle=True)
        self._window_idle += t1 - max(t0, self._window_start)

    def _roll(self, now: float) -> None:
        """Close every window that ended before ``now`` (busy time, but for what was credited)."""
        while now - self._window_start >= self.window_s:
            self._close_window()
            self._skip(now, idle=False)

    def _skip(self, now: float, idle: bool) -> None:
        """Jump over whole windows past the kept history at once (a long idle or busy gap)."""
        maxlen = self._ratios.maxlen or 1
        gap = int((now - self._window_start) // self.window_s)
        if gap > maxlen:
            self._ratios.extend([1.0 if idle else 0.0] * maxlen)
            self._window_start += (gap - 1) * self.window_s

    def _close_window(self) -> None:
        self._ratios.append(min(1.0, self._window_idle / self.window_s))
        self._window_idle = 0.0
        self._window_start += self.window_s

    def ratios(self) -> tuple[float, float] | None:
        """``(avg, min)`` over the closed windows and the current one; None if not installed."""
        if self._selector is None:
            return None
        now = self._clock()
        self._roll(now)
        ratios = list(self._ratios)
        elapsed = now - self._window_start
        if elapsed > 0.05 or not ratios:
            ratios.append(min(1.0, self._window_idle / elapsed) if elapsed > 0 else 1.0)
        return sum(ratios) / len(ratios), min(ratios)


# ------------------------------------------------------------------------------ exposition


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return repr(float(v))


class Exposition:
    """Builds the Prometheus text: one HELP and TYPE line per metric, then its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def metric(self, name: str, kind: str, help_: str,
               samples: Iterable[tuple[dict[str, str], float]] | float) -> None:
        self.lines.append(f"# HELP {name} {help_}")
        self.lines.append(f"# TYPE {name} {kind}")
        if isinstance(samples, int | float):
            samples = [({}, samples)]
        for labels, value in samples:
            if labels:
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                self.lines.append(f"{name}{{{text}}} {_fmt(value)}")
            else:
                self.lines.append(f"{name} {_fmt(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _states(enum_values: Iterable[str], counts: dict[str, int]) -> Iterator[tuple[dict[str, str], float]]:
    for s in enum_values:
        yield {"state": s}, counts.get(s, 0)


class _Runtime(Protocol):
    """What :func:`render` reads of the coordinator runtime (``server/runtime.py``)."""

    @property
    def metrics(self) -> CoordinatorMetrics: ...
    @property
    def shards(self) -> Sequence[Shard | None]: ...
    @property
    def pending_deferred(self) -> int: ...
    def is_loading(self, i: int) -> bool: ...


class _Connection(Protocol):
    @property
    def pending(self) -> Sized: ...
    @property
    def held(self) -> int: ...
    def write_buffered(self) -> int: ...


class MetricsSource(Protocol):
    """What :func:`render` reads of the broker (``server/app.py``'s ``KafkaServer``), named here so
    that the metrics do not import the module that serves them. Read when present (a broker
    without share partitions has none): ``share_partitions`` (``SharePartitionManager``),
    ``share_sessions`` (``ShareSessionCache``) and ``registry`` (topic names)."""

    @property
    def runtime(self) -> _Runtime | None: ...
    @property
    def connections(self) -> Iterable[_Connection]: ...
    @property
    def idle_monitor(self) -> LoopIdleMonitor | None: ...


def render(server: MetricsSource) -> str:
    """The metrics of ``server`` now, in Prometheus text format."""
    rt = server.runtime
    metrics = rt.metrics if rt is not None else CoordinatorMetrics()
    by_type = {"consumer": 0, "classic": 0, "connect": 0, "share": 0}
    consumer: dict[str, int] = {}
    classic: dict[str, int] = {}
    connect: dict[str, int] = {}
    share: dict[str, int] = {}
    by_state = {"consumer": consumer, "classic": classic, "connect": connect, "share": share}
    partitions = {"loading": 0, "active": 0, "failed": 0}
    if rt is not None:
        for i, shard in enumerate(rt.shards):
            if rt.is_loading(i):
                partitions["loading"] += 1
            elif shard is None:
                partitions["failed"] += 1
            else:
                partitions["active"] += 1
            if shard is None:
                continue
            for group in shard.groups.values():
                by_type[group.group_type] = by_type.get(group.group_type, 0) + 1
                states = by_state.get(group.group_type)
                if states is not None:
                    s = group.state_name().lower()
                    states[s] = states.get(s, 0) + 1
            bare = sum(1 for gid in shard.offsets if gid not in shard.groups)
            by_type["classic"] += bare
            classic["empty"] = classic.get("empty", 0) + bare
    connections = list(server.connections)
    queued = sum(len(c.pending) for c in connections)
    request_bytes = sum(c.held for c in connections)
    response_bytes = sum(c.write_buffered() for c in connections)
    e = Exposition()
    e.metric(KAFKA + "group_count", "gauge", "Number of groups by type (protocol).",
             [({"protocol": p}, n) for p, n in sorted(by_type.items())])
    e.metric(KAFKA + "consumer_group_count", "gauge", "Number of consumer groups by state.",
             _states((s.value.lower() for s in GroupState), consumer))
    e.metric(KAFKA + "classic_group_count", "gauge", "Number of classic groups by state.",
             _states((s.value.lower() for s in ClassicGroupState), classic))
    e.metric(KAFKA + "consumer_group_rebalance_count", "counter",
             "Consumer group rebalances (group epoch bumps) since start.",
             metrics.consumer_rebalances)
    e.metric(KAFKA + "consumer_group_rebalance_rate", "gauge",
             "Consumer group rebalances per second over the last 30 s.",
             metrics.consumer_rebalance_rate.rate())
    e.metric(KAFKA + "share_group_count", "gauge", "Number of share groups by state.",
             _states(("empty", "stable", "dead"), share))
    e.metric(KAFKA + "share_group_rebalance_count", "counter",
             "Share group rebalances (group epoch bumps) since start.",
             metrics.share_rebalances)
    e.metric(KAFKA + "share_group_rebalance_rate", "gauge",
             "Share group rebalances per second over the last 30 s.",
             metrics.share_rebalance_rate.rate())
    _share_partitions(e, server)
    e.metric(KAFKA + "partition_count", "gauge",
             "Coordinator shards (__consumer_offsets partitions) by state.",
             [({"state": s}, n) for s, n in partitions.items()])
    e.metric(KAFKA + "partition_load_time_avg", "gauge",
             "Average shard load time in ms (log replay and load duties).",
             metrics.load_time_avg_ms)
    e.metric(KAFKA + "partition_load_time_max", "gauge", "Maximum shard load time in ms.",
             metrics.load_time_max_ms)
    e.metric(KAFKA + "event_queue_size", "gauge",
             "Requests received and waiting to be handled.", queued)
    idle = server.idle_monitor.ratios() if server.idle_monitor is not None else None
    if idle is not None:
        e.metric(KAFKA + "thread_idle_ratio_avg", "gauge",
                 "Average share of time the event loop thread is idle (last 30 s).", idle[0])
        e.metric(KAFKA + "thread_idle_ratio_min", "gauge",
                 "Lowest share of time the event loop thread was idle in a 1 s window "
                 "(last 30 s).", idle[1])
    e.metric(OURS + "connect_group_count", "gauge", "Number of connect groups by state.",
             _states((s.value.lower() for s in GroupState), connect))
    e.metric(OURS + "connect_group_rebalance_count", "counter",
             "Connect group rebalances (group epoch bumps) since start.",
             metrics.connect_rebalances)
    e.metric(OURS + "consumer_group_target_assignment_count", "counter",
             "Consumer group target assignments computed since start.",
             metrics.consumer_targets)
    e.metric(OURS + "deferred_requests", "gauge",
             "Requests answered later (classic JoinGroup / SyncGroup) still waiting.",
             rt.pending_deferred if rt is not None else 0)
    e.metric(OURS + "log_compaction_count", "counter", "Background log compactions run.",
             metrics.compactions)
    e.metric(OURS + "log_compaction_removed_count", "counter",
             "Log entries removed by compaction (superseded entries and expired tombstones).",
             metrics.compaction_removed)
    e.metric(OURS + "log_compaction_last_time_ms", "gauge",
             "Duration of the last background compaction (all shards) in ms.",
             metrics.compaction_last_ms)
    e.metric(OURS + "connection_request_bytes", "gauge",
             "Bytes of requests received and not yet handled, over all connections.",
             request_bytes)
    e.metric(OURS + "connection_response_bytes", "gauge",
             "Bytes of responses written and not yet taken by their clients, over all "
             "connections.", response_bytes)
    return e.text()


SHARE_GROUP = "kafka_server_sharegroupmetrics_"
SHARE_PARTITION = "kafka_server_sharepartitionmetrics_"
SHARE_SESSIONS = "kafka_server_sharesessioncache_"


def _share_partitions(e: Exposition, server: Any) -> None:
    """The share partitions' and share sessions' metrics (see the module doc)."""
    from groupcoord.coordinator.share_partitions.partition import ShareCounters

    manager = getattr(server, "share_partitions", None)
    sessions = getattr(server, "share_sessions", None)
    registry = getattr(server, "registry", None)
    counters = getattr(manager, "counters", None) or ShareCounters()
    e.metric(SHARE_GROUP + "recordacknowledgementspersec_count", "counter",
             "Records acknowledged per acknowledgement type since start.",
             [({"acktype": "Accept"}, counters.accepted),
              ({"acktype": "Release"}, counters.released),
              ({"acktype": "Reject"}, counters.rejected),
              ({"acktype": "Renew"}, counters.renewed)])
    e.metric(SHARE_PARTITION + "acquisitionlocktimeoutpersec_count", "counter",
             "Acquisition locks of records not acknowledged within the lock duration, since "
             "start (all share partitions).", counters.lock_expired)
    in_flight = []
    acquired_now = 0
    partitions = dict(getattr(manager, "partitions", None) or {})
    by_id = getattr(registry, "by_id", {}) if registry is not None else {}
    for key in sorted(partitions, key=lambda k: (k.group_id, str(k.topic_id), k.partition)):
        sp = partitions[key]
        topic = by_id.get(key.topic_id)
        in_flight.append(({"group": key.group_id,
                           "topic": topic.name if topic is not None else str(key.topic_id),
                           "partition": str(key.partition)}, sp.next_offset - sp.start_offset))
        acquired_now += sp.acquired()
    e.metric(SHARE_PARTITION + "inflightmessagecount", "gauge",
             "Records in the share partition's in-flight window.", in_flight)
    open_sessions = list(getattr(sessions, "sessions", {}).values()) if sessions is not None \
        else []
    e.metric(SHARE_SESSIONS + "sharesessionscount", "gauge", "Open share sessions.",
             len(open_sessions))
    e.metric(SHARE_SESSIONS + "sharepartitionscount", "gauge",
             "Share partitions in the open share sessions.",
             sum(len(s.partitions) for s in open_sessions))
    e.metric(OURS + "share_records_acquired_count", "counter",
             "Record deliveries (acquisitions) since start.", counters.acquired)
    e.metric(OURS + "share_records_redelivered_count", "counter",
             "Record deliveries with a delivery count above 1 since start.",
             counters.redelivered)
    e.metric(OURS + "share_records_released_on_leave_count", "counter",
             "Records released because their member left or closed its share session, since "
             "start.", counters.member_released)
    e.metric(OURS + "share_records_archived_count", "counter",
             "Records archived (rejected, or at the delivery count limit) since start.",
             counters.archived)
    e.metric(OURS + "share_records_acquired", "gauge",
             "Records acquired by a share consumer now (all share partitions).", acquired_now)


# ------------------------------------------------------------------------------ HTTP


class MetricsServer:
    """``GET /metrics`` over HTTP/1.0 on the broker's event loop (any path answers)."""

    def __init__(self, server: MetricsSource, host: str, port: int) -> None:
        self.server = server
        self.host = host
        self.port = port
        self._srv: asyncio.Server | None = None
        #: The scrapes being served (one task each): cancelled at :meth:`stop`, which closing
        #: the listening server does not do; a client that sends nothing would otherwise hold
        #: one past the stop, pending when the loop closes.
        self._serving: set[asyncio.Task[Any]] = set()

    async def start(self) -> tuple[str, int]:
        self._srv = await asyncio.start_server(self._serve, self.host, self.port,
                                               reuse_address=True)
        self.port = self._srv.sockets[0].getsockname()[1]
        log.info("metrics on http://%s:%d/metrics", self.host, self.port)
        return self.host, self.port

    async def stop(self) -> None:
        if self._srv is not None:
            self._srv.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._srv.wait_closed(), 2.0)
            self._srv = None
        serving, self._serving = self._serving, set()
        for task in serving:
            task.cancel()
        if serving:
            await asyncio.wait(serving, timeout=2.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._serving.add(task)
        try:
            request = await asyncio.wait_for(reader.readline(), 10.0)
            while True:  # the headers, ignored
                line = await asyncio.wait_for(reader.readline(), 10.0)
                if line in (b"\r\n", b"\n", b""):
                    break
            method = request.split(b" ", 1)[0].upper()
            if method not in (b"GET", b"HEAD"):
                status, body = "405 Method Not Allowed", b"only GET\n"
            else:
                status, body = "200 OK", render(self.server).encode()
            head = (f"HTTP/1.0 {status}\r\nContent-Type: {CONTENT_TYPE}\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
            writer.write(head if method == b"HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError) as e:
            log.debug("metrics request failed: %s", e)
        except Exception:
            log.exception("metrics request failed")
        finally:
            if task is not None:
                self._serving.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


__all__ = ["CoordinatorMetrics", "LoopIdleMonitor", "MetricsServer", "MetricsSource", "WindowedRate",
           "render"]
