"""What a lab scenario on the wire logged (``lab/wire.py`` runs it, ``lab/wire_metrics.py``
measures it): the disturbance windows, per member the events its clients logged, per resource
what was produced when, the members' process lifetimes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["WireRun", "WireWindow", "iter_records"]


@dataclass(slots=True)
class WireWindow:
    """A disturbance on the wire: its label, start and the end of its duration (seconds since
    the run's start)."""

    label: str
    at_s: float
    settle_s: float


@dataclass(slots=True)
class WireRun:
    protocol: str
    kind: str  # consumer | connect
    t0: float  # wall-clock start of the scenario
    end: float  # wall-clock end of the run (before members closed)
    windows: list[WireWindow]
    #: resource -> [(t, cumulative produced)] (consumers: "topic-p"; Connect: task labels)
    produced: dict[str, list[tuple[float, int]]]
    #: member name -> its log events (dicts with "t", "e", ...), in time order
    logs: dict[str, list[dict[str, Any]]]
    #: member name -> [(start, stop)] wall-clock lifetimes of its processes
    lifetimes: dict[str, list[tuple[float, float | None]]]
    #: what carries records: partitions ("topic-p") or Connect tasks ("connector-n")
    resources: list[str]
    #: what the group assigns, by kind (topics; Connect: connectors, tasks): convergence asks
    #: every live member for at least the sum of the floors of its share of each kind
    item_groups: list[list[str]]
    #: records per second per resource; Connect: the sources' start (wall clock)
    rate: float
    source_start: float
    processing_ms: float
    server_config: dict[str, str] = field(default_factory=dict)
    workdir: str = ""
    #: resource -> when it came into being (wall clock; a partition added during the run):
    #: convergence asks for owners of the resources that exist at the time only
    since: dict[str, float] = field(default_factory=dict)
    #: resource -> when it ceased to be (a Connect connector deleted during the run, with its
    #: tasks): from then on it needs no owner and has no lag
    until: dict[str, float] = field(default_factory=dict)
    #: KIP-848 consumer groups: (t, every member at the group's epoch, client ids of the
    #: members) from ConsumerGroupDescribe where it changed (``lab.wire_idle``); empty: not read
    described: list[tuple[float, bool, tuple[str, ...]]] = field(default_factory=list)

    def exists(self, resource: str, t: float) -> bool:
        """Whether ``resource`` exists at ``t`` (every resource neither added nor removed
        during the run does)."""
        began = self.since.get(resource)
        ended = self.until.get(resource)
        return (began is None or t >= began) and (ended is None or t < ended)


def iter_records(run: WireRun) -> Iterator[tuple[float, str, str, int]]:
    """(t, member, resource, offset) of every record processed."""
    for name, events in run.logs.items():
        for d in events:
            if d["e"] == "rec":
                tp = d["tp"] if "p" not in d else f"{d['tp']}-{d['p']}"
                yield float(d["t"]), name, tp, int(d["o"])
