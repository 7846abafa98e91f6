"""The built-in demo connector: a counter source whose running is observable from outside.

:class:`CounterSourceConnector` (registered as ``counter`` in :data:`DEMO_REGISTRY`) has tasks
(:class:`CounterSourceTask`) that count: every ``interval.ms`` (default 200) a task increments
its counter and writes a ``beat`` line. The connector and each task also write a ``start`` line
when they start and a ``stop`` line once stopped. Lines go to the JSON-lines file named by the
``output`` config (appended with one ``write`` per line, so several worker processes can share
one file) and to the log at INFO; each line is ``{"t": wall-clock seconds, "worker": member id,
"event": start|beat|record|stop, "item": "name" or "name-N", "count": N}``.

:func:`read_events` reads such a file back; :func:`run_intervals` turns events into the time
intervals during which each worker ran each item, and :func:`overlaps` lists the items two
workers ran at the same time (what docs/design.md's I1 forbids): enough for a test, or an operator,
to see which worker ran what and that nothing ran twice at once.

**Work mode** (what the lab's calibration runs, ``groupcoord lab calibrate``): with
``records.per.s`` set, a task stands for a source that produces that many records per second
from wall-clock time ``source.start`` (seconds; default: when the task first starts), and the
task processes them in order, ``processing.ms`` each (an ``asyncio`` sleep, so the worker's
heartbeats go on), writing a ``record`` line per record (``count`` = the record's offset).
Like Kafka Connect's standalone worker (``offset.storage.file.filename``), the task's position
is kept in a file, ``<offsets.dir>/<task>``, written every ``offset.flush.interval.ms``
(default 60000, upstream's default) and when the task stops: a task that crashes is restarted
from the last flushed position and processes the rest again. ``task.start.ms`` and
``task.stop.ms`` make starting and stopping a task take that long (a real connector's restore
and flush).

Not here: any real data (no topics; the records are counted, not stored).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupcoord.client.connect.runtime import (
    Config,
    Connector,
    ConnectorRegistry,
    Task,
)

__all__ = [
    "COUNTER",
    "DEMO_REGISTRY",
    "CounterSourceConnector",
    "CounterSourceTask",
    "DemoEvent",
    "current_owners",
    "overlaps",
    "read_events",
    "run_intervals",
]

log = logging.getLogger(__name__)

#: The registry name of the counter source.
COUNTER = "counter"

DEFAULT_INTERVAL_MS = 200


@dataclass(slots=True, frozen=True)
class DemoEvent:
    t: float
    worker: str
    event: str
    item: str
    count: int = 0


def _emit(config: Config, worker: str, event: str, item: str, count: int = 0) -> None:
    line = {"t": time.time(), "worker": worker, "event": event, "item": item, "count": count}
    log.log(logging.DEBUG if event == "record" else logging.INFO,  # a line per record: debug
            "demo: worker %s %s %s (count %d)", worker, event, item, count)
    path = config.get("output")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


#: Kafka Connect's default ``offset.flush.interval.ms``.
DEFAULT_OFFSET_FLUSH_MS = 60_000


def _number(config: Config, key: str, default: float) -> float:
    raw = config.get(key)
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if v < 0:
        raise ValueError(f"{key} must be at least 0, got {raw!r}")
    return v


class CounterSourceTask(Task):
    """Counts; one ``beat`` line per ``interval.ms`` (or, with ``records.per.s``, processes a
    source's records: the module doc's work mode)."""

    def __init__(self) -> None:
        self.config: dict[str, str] = {}
        self.count = 0
        self.interval_s = DEFAULT_INTERVAL_MS / 1000
        self.rate = 0.0
        self.processing_s = 0.0
        self.source_start = 0.0
        self.flush_s = DEFAULT_OFFSET_FLUSH_MS / 1000
        self.flushed_at = 0.0

    async def start(self, config: Config) -> None:
        self.config = dict(config)
        self.interval_s = int(config.get("interval.ms", DEFAULT_INTERVAL_MS)) / 1000
        self.rate = _number(config, "records.per.s", 0.0)
        self.processing_s = _number(config, "processing.ms", 0.0) / 1000
        self.flush_s = _number(config, "offset.flush.interval.ms", DEFAULT_OFFSET_FLUSH_MS) / 1000
        self.source_start = _number(config, "source.start", time.time())
        start_s = _number(config, "task.start.ms", 0.0) / 1000
        if self.rate > 0:
            self.count = self._read_offset()
        if start_s:
            await asyncio.sleep(start_s)
        self.flushed_at = time.monotonic()
        _emit(self.config, self.context.worker_id, "start", self.context.label, self.count)

    def _offset_path(self) -> Path | None:
        d = self.config.get("offsets.dir")
        return Path(d) / self.context.label if d else None

    def _read_offset(self) -> int:
        path = self._offset_path()
        try:
            return int(path.read_text()) if path is not None else 0
        except (OSError, ValueError):
            return 0

    def _flush(self) -> None:
        path = self._offset_path()
        if path is not None:
            tmp = path.with_name(f"{path.name}.{id(self)}.tmp")
            tmp.write_text(str(self.count))
            tmp.replace(path)  # atomic: a crash leaves the old or the new position
        self.flushed_at = time.monotonic()

    async def poll(self) -> None:
        if self.rate <= 0:
            await asyncio.sleep(self.interval_s)
            self.count += 1
            _emit(self.config, self.context.worker_id, "beat", self.context.label, self.count)
            return
        due = int((time.time() - self.source_start) * self.rate)
        if self.count >= due:  # caught up: wait for the next record of the source
            await asyncio.sleep(max((self.count + 1) / self.rate + self.source_start
                                    - time.time(), 0.001))
            return
        if self.processing_s:
            await asyncio.sleep(self.processing_s)
        _emit(self.config, self.context.worker_id, "record", self.context.label, self.count)
        self.count += 1
        if time.monotonic() - self.flushed_at >= self.flush_s:
            self._flush()

    async def stop(self) -> None:
        stop_s = _number(self.config, "task.stop.ms", 0.0) / 1000
        if stop_s:
            await asyncio.sleep(stop_s)
        if self.rate > 0:
            self._flush()
        _emit(self.config, self.context.worker_id, "stop", self.context.label, self.count)


class CounterSourceConnector(Connector):
    """The counter source's connector: nothing to do but say it runs."""

    task_class = CounterSourceTask

    def start(self, config: Config) -> None:
        _emit(config, self.context.worker_id, "start", self.context.connector)

    def stop(self) -> None:
        _emit(self.config, self.context.worker_id, "stop", self.context.connector)


#: The built-in connector classes.
DEMO_REGISTRY = ConnectorRegistry({COUNTER: CounterSourceConnector})


# ----------------------------------------------------------------------------- reading it back


def read_events(path: str | Path) -> list[DemoEvent]:
    """The events of a demo output file, in file order (a torn last line is skipped)."""
    out: list[DemoEvent] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            d: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append(DemoEvent(float(d["t"]), str(d["worker"]), str(d["event"]), str(d["item"]),
                             int(d.get("count", 0))))
    return out


def run_intervals(events: Iterable[DemoEvent], *, now: float | None = None
                  ) -> dict[str, list[tuple[str, float, float]]]:
    """Item -> [(worker, start, stop)], sorted by start; an item still running ends at ``now``
    (default: the time of the last event)."""
    events = sorted(events, key=lambda e: e.t)
    end = now if now is not None else (events[-1].t if events else 0.0)
    open_: dict[tuple[str, str], float] = {}
    out: dict[str, list[tuple[str, float, float]]] = {}
    for e in events:
        key = (e.item, e.worker)
        if e.event == "start":
            open_[key] = e.t
        elif e.event == "stop" and key in open_:
            out.setdefault(e.item, []).append((e.worker, open_.pop(key), e.t))
    for (item, worker), t0 in open_.items():
        out.setdefault(item, []).append((worker, t0, end))
    for runs in out.values():
        runs.sort(key=lambda r: r[1])
    return out


def overlaps(events: Iterable[DemoEvent]) -> list[tuple[str, str, str]]:
    """(item, worker, other worker) for every item two workers ran at the same time."""
    found = []
    for item, runs in run_intervals(events).items():
        for i, (w1, _s1, e1) in enumerate(runs):
            for w2, s2, _e2 in runs[i + 1:]:
                if w2 != w1 and s2 < e1:
                    found.append((item, w1, w2))
    return found


def current_owners(events: Iterable[DemoEvent]) -> dict[str, set[str]]:
    """Item -> the workers running it after the last event (a start without a stop)."""
    owners: dict[str, set[str]] = {}
    for e in sorted(events, key=lambda e: e.t):
        if e.event == "start":
            owners.setdefault(e.item, set()).add(e.worker)
        elif e.event == "stop":
            owners.get(e.item, set()).discard(e.worker)
    return {k: v for k, v in owners.items() if v}

