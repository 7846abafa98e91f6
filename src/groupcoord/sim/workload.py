"""Members that do work: the application model of the lab (poll loop, processing, commits).

The simulator's members are the real sans-IO clients; this module adds what an application
does between two calls into them, so that a rebalance costs what it costs a real application:
records arrive on every partition (or Connect task) at a rate, the application polls a batch
of at most ``max_poll_records``, processes it record by record, and polls again. The group
protocol sees the application only through ``poll()``, as the Java clients do:

- **classic consumers** (``ConsumerCoordinator``): the rebalance is joined from ``poll()``. A
  member in the middle of a batch joins when the batch is done, so it holds the whole group's
  JoinGroup barrier; eager members revoke everything in ``onJoinPrepare`` (auto-commit first,
  synchronously) before the JoinGroup; cooperative ones keep processing what they own,
  revoke only what moves once SyncGroup answered (at the next ``poll()``) and rejoin. The
  heartbeat thread keeps heartbeating meanwhile. A batch that outlasts
  ``max.poll.interval.ms`` makes the heartbeat thread leave the group ("consumer poll timeout
  has expired"); the member rejoins at its next ``poll()``. Classic members learn of new
  partitions at their metadata refresh (``metadata.max.age.ms``);
- **KIP-848 consumers** (``AsyncKafkaConsumer``): a background thread heartbeats; the
  revocation callback runs in the application's ``poll()``, and the acknowledging heartbeat
  goes out right after it; newly assigned partitions are fetched from the next ``poll()``;
- **Connect workers** (``DistributedHerder``): the herder's thread runs the group protocol,
  tasks run on their own threads; stopping a task takes ``task_stop_ms`` (eager workers stop
  every task before rejoining, KIP-415 workers only the revoked ones; a rebalance's stops go
  ``start_stop_threads`` at a time, the herder's pool of 8, and a task queued behind the pool
  runs until its own stop begins), starting one ``task_start_ms``.

Commits: an auto-commit every ``auto_commit_interval_ms`` commits what was polled before the
batch in progress; a revocation commits synchronously (``commit_latency_ms``) what was
processed. What was processed but not committed when a resource moves is processed again by
its next owner (it starts from the committed position). Connect tasks commit their offsets
every ``auto_commit_interval_ms`` (``offset.flush.interval.ms``) and when they stop.

**Rates between state changes.** No simulator event per record, nor per poll of a member
that keeps up: a processor's progress over an interval is computed when something changes
(an assignment, a revocation, a commit, a metric sample). A member whose backlog is below one
record and whose load ``rate x processing time`` is below 1 keeps up: it is in ``poll()``
almost all the time (it reacts at once) and its positions follow the production. A member
with a backlog processes batches back to back, computed batch by batch when the processor is
asked about a time (no simulator event); a batch's end becomes an event only when something
waits for that ``poll()`` (a revocation, a rejoin, new partitions), or for every batch when
one could outlast ``max.poll.interval.ms``. A run costs events in proportion to the group's
changes, not to the records. Within a batch records are taken from
the partitions in proportion to their backlog (the fetcher's round robin over partitions with
data, in the fluid limit). The processing time of a record is drawn once per batch from the
workload's distribution (the run's seed): what slows one record of a batch (a slow
downstream, a pause) usually slows its neighbours.

Metrics (:class:`WorkModel`): records processed (a reprocessed record counts again); lag =
produced - highest position processed, summed over resources (its peak, and its integral
in record-seconds in closed form: a resource's lag is piecewise linear between two changes
and :func:`lag_area` integrates it exactly per piece, wherever the samples fall); stall time (no
processor had anything to process while lag existed); paused resource-seconds (owned but
not processing: waiting for the next poll, warm-up or task start, a revocation's commit or a
task's stop); records processed twice; Connect task restarts. The contract of names is
``/work/tools/METRICS.md`` and ``docs/lab.md``.

**Records in flight** (``fetch_latency_ms``, default 50 ms): a record can be polled only
that long after it was produced (the producer's linger and send, the leader's append, the
consumer's fetch round trip), so a member that keeps up holds ``rate x fetch_latency_ms``
records per partition in flight, as real clients do (in the calibration runs, consumers
polling as the Java client does, returning what is fetched at once, held 5-9 records at
120 records/s: 40-75 ms of production, their own processing included; 100 ms until then
came from a harness whose poll waited its 100 ms timeout to fill a batch); a ``poll()`` at
``t`` returns what was produced up to ``t - fetch_latency_ms``. A member that keeps up
still reacts to a rebalance at once (its ``poll()`` returns within the latency; that
difference is below the model's resolution).

**A topic's growth** (``growth_rate``): Kafka's default partitioner spreads a producer's
keyless records over the partitions it knows of, so a producer at a fixed rate that learns of
a topic's new partitions writes the same records per second, spread over more partitions.
The default, ``topic``, models that producer: a topic keeps its production rate (the
workload's rate a partition times its partition count when the work model first saw it) and,
once partitions are added, spreads it evenly over all of them, the old ones slowing down at
the growth (:meth:`WorkModel.set_rates`). A producer learns of new partitions at its own
metadata refresh (``metadata.max.age.ms``): the model leaves that out, it writes to the new
partitions from the growth on. ``partition``: every partition keeps producing at the
workload's rate, new ones too (a workload whose producers scale with the partitions; the
calibration's wire producer, ``lab.wire``, does that), so the topic's input grows with its
partition count.

**A classic member's metadata refresh** (``metadata_phase``): a classic member sees a topic's
new partitions at its next refresh, every ``metadata.max.age.ms``. The default, ``drawn``, puts
the first refresh of each incarnation at a phase drawn uniformly within the period (anything
may have refreshed a long-running client's metadata: a leader change, a produce error), so
where the period falls relative to a growth is uniform. ``start``: the first refresh at the
incarnation's start, as a client started for the run does (its first poll fetches the
topic's metadata, and nothing else refreshes it in a quiet run); the calibration's simulated
side runs it (``lab.calibrate``), so that a paired seed and wire repeat meet the growth at the
same point of the period.

**Poison records** (``poison_rate``): records whose processing always fails, the same records
in every protocol of a run (:func:`is_poison`: a digest of the seed, the topic partition and the
offset; the share groups of ``sim.share`` take theirs from it, and archive them at the delivery
limit). What a consumer group's application does with one is ``poison_policy``:

- ``dead-letter`` (the default): it tries the record ``poison_attempts`` times (5 by default, the
  share groups' ``share.delivery.count.limit``, so both protocols try a poison record as often),
  then skips it (a dead-letter topic, or a log line) and goes on. It is what the field's
  frameworks do by default: Spring Kafka's ``DefaultErrorHandler`` retries a failed record
  (9 times, no back-off) and then hands it to its recoverer, which logs it and moves on; Kafka
  Connect with ``errors.tolerance=all`` sends it to ``errors.deadletterqueue.topic.name``. Each
  attempt takes the batch's processing time per record, so a batch with ``k`` poison records
  lasts ``k * (poison_attempts - 1)`` records longer; a member that keeps up (the fluid model's
  stream, in ``poll()`` whenever a record comes) absorbs that below the model's resolution, and
  its load counts it (``record_ms``). A skipped record counts as processed.

  **As in the field** (``poison_attempt_ms`` set; off by default, every attempt then costs the
  batch's processing time per record, as above): a poison record costs seconds an attempt (a
  call that times out, a deserialisation that throws after its own retry), each attempt a draw
  of ``poison_attempt_ms`` (per record and attempt from the seed, :func:`poison_attempt_cost`:
  the same costs in every protocol of a run, the share groups' deliveries included), and the
  application waits ``poison_backoff_ms`` between two attempts: Spring Kafka's
  ``DefaultErrorHandler`` with a ``FixedBackOff(poison_backoff_ms, poison_attempts - 1)``, then
  its dead-letter recoverer (Connect's ``errors.retry.timeout`` retries with a growing
  back-off instead; a fixed one is what Spring's default handler configures). The record is
  retried in place: its partition's position stands at it, and since one thread processes the
  batch, every record of the member behind it waits too (head-of-line blocking), for
  ``poison_attempts`` attempts plus ``poison_attempts - 1`` back-offs. A batch holding one
  lasts that much longer; a member that keeps up (the stream) polls the poison record when it
  can be fetched (an event then: :meth:`Processor.poison_due`) and stands for its cost, a
  batch of that one record, then catches up on what came meanwhile in batches. A stream
  member's blocks, like its pauses, are its steady state (``Processor.pause_backlog``), so
  the paired control simulates every step (``sim.application``).
- ``retry``: it retries the record forever (a poll loop that rethrows, a container whose
  back-off never gives up): the partition's position stands at its first poison record, for
  this member and for every later owner, and its lag grows at the production rate; the member
  goes on with its other partitions (the failed attempts' time is not charged to them).

**Natural lateness** (``pause_every_ms``, ``pause_ms``; off by default): each member's poll
loop pauses now and then (a garbage collection, an IO stall, a slow downstream call), on
average every ``pause_every_ms`` (exponential gaps, from the member's own stream of the seed, so
the same member pauses at the same times under every protocol of a run), each pause lasting a
draw of ``pause_ms``. A pause is a batch of no records: nothing is processed, and ``poll()``
comes only at its end; a pause that falls inside a batch comes at the batch's end, before the
next ``poll()``. The backlog built meanwhile is then polled in batches of up to
``max_poll_records`` whose processing time per record is drawn per batch, from a stream per
member and second (a heavy-tailed ``processing_ms``, e.g. lognormal, gives a heavy-tailed poll
length). Every draw is keyed by the member and the time, never by
the order of the calls (:data:`SPEED_SLOT_MS`; a restarted member goes on with its pause
schedule), so that the paired control draws what the run draws for the same member at the same
time and cancels the pauses and the slow seconds (without it the control's draws went their
own way once the disturbance had changed any batch, and excess lag came out negative). A
member that keeps up
with no pause is in ``poll()`` whenever a rebalance comes (its lateness 0); lateness follows
from the work: the pauses, and the backlog they leave. Where the protocol waits for the poll
is the clients' own: a classic member rejoins from ``poll()`` (Java's
``ConsumerCoordinator.poll`` runs ``onJoinPrepare``, the eager revocation with its synchronous
commit, and sends the JoinGroup; the heartbeat thread only marks the rejoin as needed), and a
KIP-848 member's revocation callback runs in the application's ``poll()`` (the
``AsyncKafkaConsumer``'s background thread hands the revocation to the application thread as
a background event and completes the reconciliation, so acknowledges in its next heartbeat,
only once ``poll()`` ran the callback; every member here has a committing listener). The
member's lateness (:meth:`WorkModel.late`) is the time from the protocol's
asking (the heartbeat thread's request to rejoin; the revocation reaching the member) to that
``poll()``: one value per classic rejoin and per KIP-848 revocation, 0 for a member in
``poll()``; a window reports their count, median and maximum (:func:`lateness_figures`). A
pausing member's pauses and the backlog they leave are its steady state: the applications
count as caught up without waiting for them (a window closes, a run's first event finds the
group caught up), unless what the member owns changed since it last kept up; and the paired
control of such a run simulates every step (its members go on pausing: no jump of its clock
past its fixed point, ``sim.engine``'s ``finish_control``). The
pauses stop the application thread only: the heartbeat thread goes on (an IO stall or a slow
call; a stop-the-world collection longer than ``session.timeout.ms`` is not modelled).

Not modelled: per-partition ``max.partition.fetch.bytes``, pause()/resume(), producers' batching (production
is a constant rate per resource), state stores' restore volume (``warmup_ms`` is a fixed time
per newly assigned partition; a process keeps the state of every partition it processed
during its life).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import math
import random
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

Key = Hashable
#: An empty mapping of partitions (``WorkModel.partition_resources`` of an unknown topic).
_NO_RESOURCES: Mapping[int, Any] = MappingProxyType({})
_NO_GROUP: frozenset[Any] = frozenset()
Scheduler = Callable[[int, Callable[[Any], None], Any], None]


@functools.lru_cache(maxsize=1 << 16)
def order_key(key: Hashable) -> str:
    """A resource's place in every ordering the model makes: its repr, the same in every
    process (sets of resources must not leak their hash order into events or float sums).
    Cached: a topic partition's repr formats its topic id, and the model orders resources
    at every activation."""
    return repr(key)


class WorkloadError(ValueError):
    """A workload that cannot be run; the message names the field."""


# ============================================================================ parameters


@dataclass(slots=True, frozen=True)
class Dist:
    """A processing time per record (ms): ``fixed``, ``exponential`` (mean), ``uniform``
    (min, max) or ``lognormal`` (mean, sigma of the underlying normal)."""

    kind: str = "fixed"
    mean: float = 0.5
    low: float = 0.0
    high: float = 0.0
    sigma: float = 1.0

    def draw(self, rng: random.Random) -> float:
        k = self.kind
        if k == "fixed":
            return self.mean
        if k == "exponential":
            return rng.expovariate(1.0 / self.mean) if self.mean > 0 else 0.0
        if k == "uniform":
            return rng.uniform(self.low, self.high)
        # lognormal with the given mean: mu = ln(mean) - sigma^2 / 2
        if self.mean <= 0:
            return 0.0
        return rng.lognormvariate(math.log(self.mean) - self.sigma ** 2 / 2, self.sigma)

    @property
    def average(self) -> float:
        return (self.low + self.high) / 2 if self.kind == "uniform" else self.mean

    @property
    def bounded_max(self) -> float | None:
        """The largest value a draw can take (None: unbounded)."""
        if self.kind == "fixed":
            return self.mean
        if self.kind == "uniform":
            return self.high
        return None

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.mean:g}"
        if self.kind == "uniform":
            return f"uniform:{self.low:g}-{self.high:g}"
        if self.kind == "lognormal":
            return f"lognormal:{self.mean:g}:{self.sigma:g}"
        return f"exponential:{self.mean:g}"


@dataclass(slots=True, frozen=True)
class Workload:
    """What the application does (names follow the Java clients' configs where one exists).

    ``max_poll_interval_ms`` None: the scenario's rebalance timeout (the Java consumer sends
    ``max.poll.interval.ms`` as its rebalance timeout, so the two are one setting);
    ``auto_commit_interval_ms`` None: the scenario's ``commit_interval_ms``."""

    idle: bool = False
    records_per_s: float = 50.0
    topic_rates: tuple[tuple[str, float], ...] = ()
    task_records_per_s: float = 50.0
    max_poll_records: int = 500
    max_poll_interval_ms: int | None = None
    processing_ms: Dist = field(default_factory=Dist)
    auto_commit_interval_ms: int | None = None
    commit_latency_ms: int = 5
    warmup_ms: int = 0
    task_start_ms: int = 1_000
    task_stop_ms: int = 1_000
    #: A Connect worker's start/stop pool (Kafka's ``DistributedHerder``
    #: ``START_STOP_THREAD_POOL_SIZE``, 8, a constant there): a revocation stops its
    #: connectors and tasks this many at a time (``sim.application``); 0, all at once.
    start_stop_threads: int = 8
    metadata_max_age_ms: int = 300_000
    fetch_latency_ms: int = 50
    #: What production does when a topic grows (the module docstring, "A topic's growth"):
    #: ``topic``, the topic keeps its rate, spread over every partition; ``partition``, every
    #: partition keeps the per-partition rate (the topic's input grows with its count).
    growth_rate: str = "topic"
    #: Where a classic incarnation's metadata refreshes fall (the module docstring, "A
    #: classic member's metadata refresh"): ``drawn`` uniformly within the period, or from its
    #: ``start``.
    metadata_phase: str = "drawn"
    #: From a process's start to its first request to the coordinator (a JVM starting, a
    #: Connect worker reading its config topic), drawn per process uniformly within half to
    #: one and a half times this: 0, the process is up at once.
    startup_ms: int = 0
    #: The fraction of records that are poison, and what a consumer group's application does
    #: with one: ``dead-letter`` after ``poison_attempts`` attempts, or ``retry`` forever (see
    #: the module docstring, "Poison records").
    poison_rate: float = 0.0
    poison_policy: str = "dead-letter"
    poison_attempts: int = 5
    #: A poison record's cost per attempt and the back-off between two attempts (see the
    #: module docstring, "As in the field"): None, an attempt costs a record's processing.
    poison_attempt_ms: Dist | None = None
    poison_backoff_ms: int = 0
    #: The share group's ``share.record.lock.duration.ms`` and ``share.delivery.count.limit``
    #: (``sim.share``; None: Kafka's defaults, 30 s and 5).
    share_lock_duration_ms: int | None = None
    share_delivery_count_limit: int | None = None
    #: Pauses of each member's poll loop (a garbage collection, an IO stall, a slow
    #: downstream call): on average every ``pause_every_ms`` per member (exponential gaps; 0:
    #: none), each lasting a draw of ``pause_ms`` (see the module docstring, "Natural
    #: lateness").
    pause_every_ms: int = 0
    pause_ms: Dist = field(default_factory=lambda: Dist("fixed", 0.0))

    def rate_of(self, topic: str) -> float:
        for t, r in self.topic_rates:
            if t == topic:
                return r
        return self.records_per_s

    def describe(self) -> str:
        if self.idle:
            return "idle"
        out = (f"{self.records_per_s:g} rec/s, {self.processing_ms.describe()} ms/rec, "
               f"max.poll.records {self.max_poll_records}")
        if self.poison_rate > 0:
            out += f", poison {self.poison_rate:.2%} ({self.poison_policy}" + (
                f" after {self.poison_attempts})" if self.poison_policy == "dead-letter" else ")")
            if self.poison_attempt_ms is not None:
                out += (f", {self.poison_attempt_ms.describe()} ms an attempt, back-off "
                        f"{self.poison_backoff_ms} ms")
        if self.pause_every_ms > 0:
            out += f", pauses {self.pause_ms.describe()} ms every {self.pause_every_ms:g} ms"
        if self.growth_rate != "topic":
            out += f", growth keeps the rate a {self.growth_rate}"
        if self.metadata_phase != "drawn":
            out += f", metadata refreshes from the member's {self.metadata_phase}"
        return out

    def stop_ms(self, items: int) -> int:
        """How long a Connect worker takes to stop ``items`` connectors and tasks:
        ``ceil(items / start_stop_threads) * task_stop_ms``, one ``task_stop_ms`` when the pool
        is 0 or there is nothing to stop (Kafka's herder pool:
        ``sim.application.Application.stop_ms``)."""
        n = self.start_stop_threads
        rounds = 1 if n <= 0 or items <= 0 else -(-items // n)
        return rounds * self.task_stop_ms

    def as_table(self) -> dict[str, Any]:
        """The workload as a TOML-like table (what :func:`parse_workload` reads back)."""
        if self.idle:
            return {"idle": True}
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "idle" or v is None or (f.name.startswith("poison_")
                                                 and v == f.default):
                continue
            if f.name in ("start_stop_threads", "growth_rate", "metadata_phase") \
                    and v == f.default:
                continue  # (the default: the table as before the option)
            if f.name.startswith("pause_") and self.pause_every_ms <= 0:
                continue  # (no pauses: the table as before the option)
            if f.name == "topic_rates":
                if v:
                    out[f.name] = dict(v)
            elif f.name in ("processing_ms", "pause_ms", "poison_attempt_ms"):
                d: Dist = v
                out[f.name] = d.mean if d.kind == "fixed" else {
                    k: x for k, x in (("dist", d.kind), ("mean", d.mean), ("min", d.low),
                                      ("max", d.high), ("sigma", d.sigma))
                    if k == "dist" or ((k in ("min", "max")) == (d.kind == "uniform")
                                       and (k != "sigma" or d.kind == "lognormal"))}
            else:
                out[f.name] = v
        return out


IDLE = Workload(idle=True)
DEFAULT_WORKLOAD = Workload()

_KEYS = {f.name for f in fields(Workload)}
_INTS = {"max_poll_records": 1, "max_poll_interval_ms": 1, "auto_commit_interval_ms": 0,
         "commit_latency_ms": 0, "warmup_ms": 0, "task_start_ms": 0, "task_stop_ms": 0,
         "start_stop_threads": 0, "metadata_max_age_ms": 0, "fetch_latency_ms": 0,
         "startup_ms": 0, "poison_attempts": 1, "pause_every_ms": 0, "poison_backoff_ms": 0,
         "share_lock_duration_ms": 1, "share_delivery_count_limit": 2}
_DISTS = ("fixed", "exponential", "uniform", "lognormal")
#: What a consumer group's application does with a poison record (the module docstring).
POISON_POLICIES = ("dead-letter", "retry")
#: What production does when a topic grows (the module docstring, "A topic's growth").
GROWTH_RATES = ("topic", "partition")
#: Where a classic member's metadata refreshes fall (the module docstring).
METADATA_PHASES = ("drawn", "start")


def _number(where: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != v \
            or v == float("inf"):
        raise WorkloadError(f"{where}: expected a number >= 0, got {v!r}")
    return float(v)


def _dist(where: str, v: Any) -> Dist:
    if not isinstance(v, Mapping):
        return Dist("fixed", _number(where, v))
    unknown = sorted(set(v) - {"dist", "mean", "min", "max", "sigma"})
    if unknown:
        raise WorkloadError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: dist, "
                            f"mean, min, max, sigma")
    kind = v.get("dist", "fixed")
    if kind not in _DISTS:
        raise WorkloadError(f"{where}.dist: expected one of {', '.join(_DISTS)}, got {kind!r}")
    if kind == "uniform":
        if "min" not in v or "max" not in v:
            raise WorkloadError(f"{where}: a uniform distribution needs min and max")
        lo, hi = _number(f"{where}.min", v["min"]), _number(f"{where}.max", v["max"])
        if hi < lo:
            raise WorkloadError(f"{where}.max: must be >= min ({lo:g}), got {hi:g}")
        return Dist("uniform", (lo + hi) / 2, lo, hi)
    if "mean" not in v:
        raise WorkloadError(f"{where}: a {kind} distribution needs mean")
    sigma = _number(f"{where}.sigma", v.get("sigma", 1.0))
    return Dist(kind, _number(f"{where}.mean", v["mean"]), sigma=sigma)


def parse_workload(where: str, raw: Any, base: Workload = DEFAULT_WORKLOAD) -> Workload:
    """A ``[workload]`` table over ``base`` (a sweep's overrides go over the scenario's);
    :class:`WorkloadError` names the field. ``idle = true`` alone means no work at all;
    ``idle = false`` with other keys starts from the default working workload."""
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where}: expected a table")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise WorkloadError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sorted(_KEYS))}")
    if "idle" in raw:
        if not isinstance(raw["idle"], bool):
            raise WorkloadError(f"{where}.idle: expected true or false, got {raw['idle']!r}")
        if raw["idle"]:
            if len(raw) > 1:
                raise WorkloadError(f"{where}.idle: an idle workload takes no other key, got "
                                    f"{', '.join(sorted(set(raw) - {'idle'}))}")
            return IDLE
    if base.idle:
        base = DEFAULT_WORKLOAD
    changes: dict[str, Any] = {}
    for key, v in raw.items():
        at = f"{where}.{key}"
        if key == "idle":
            continue
        if key in _INTS:
            if isinstance(v, bool) or not isinstance(v, int) or v < _INTS[key]:
                raise WorkloadError(f"{at}: expected an integer >= {_INTS[key]}, got {v!r}")
            changes[key] = v
        elif key in ("records_per_s", "task_records_per_s"):
            changes[key] = _number(at, v)
        elif key == "topic_rates":
            if not isinstance(v, Mapping):
                raise WorkloadError(f"{at}: expected a table of topic = records/s")
            changes[key] = tuple(sorted((str(t), _number(f"{at}.{t}", r)) for t, r in v.items()))
        elif key in ("processing_ms", "pause_ms", "poison_attempt_ms"):
            changes[key] = _dist(at, v)
        elif key == "poison_rate":
            rate = _number(at, v)
            if rate > 1:
                raise WorkloadError(f"{at}: expected a fraction between 0 and 1, got {v!r}")
            changes[key] = rate
        elif key == "poison_policy":
            if v not in POISON_POLICIES:
                raise WorkloadError(f"{at}: expected one of {', '.join(POISON_POLICIES)}, "
                                    f"got {v!r}")
            changes[key] = v
        elif key == "growth_rate":
            if v not in GROWTH_RATES:
                raise WorkloadError(f"{at}: expected one of {', '.join(GROWTH_RATES)}, "
                                    f"got {v!r}")
            changes[key] = v
        elif key == "metadata_phase":
            if v not in METADATA_PHASES:
                raise WorkloadError(f"{at}: expected one of {', '.join(METADATA_PHASES)}, "
                                    f"got {v!r}")
            changes[key] = v
    return replace(base, **changes)


# ============================================================================ poison records


def is_poison(seed: int, key: Key, offset: int, rate: float) -> bool:
    """Whether record ``offset`` of topic partition ``key`` (topic id, partition) is poison in
    a run of ``seed``: a digest of the three below ``rate``, so every protocol of the run meets
    the same poison records (consumer groups here, share groups in ``sim.share_partitions``)."""
    if rate <= 0:
        return False
    k: Any = key
    h = hashlib.blake2b(f"{seed}/{k[0]}/{k[1]}/{offset}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64 < rate


def poison_attempt_cost(seed: int, key: Key, offset: int, attempt: int, cost: Dist) -> float:
    """What attempt ``attempt`` (0: the first) at poison record ``offset`` of ``key`` costs in a
    run of ``seed`` (ms; "As in the field" in the module docstring): a draw of ``cost`` from its
    own stream, so every protocol of the run, and a run and its control, pay the same."""
    k: Any = key
    if cost.kind == "fixed":
        return cost.mean
    return max(0.0, cost.draw(random.Random(f"poison-attempt:{seed}/{k[0]}/{k[1]}/{offset}/"
                                            f"{attempt}")))


class PoisonRecords:
    """The poison records of one run's consumer group (see the module docstring): their offsets
    per resource, found lazily in offset order."""

    __slots__ = ("_costs", "_found", "_scanned", "attempt_ms", "attempts", "backoff_ms",
                 "policy", "rate", "seed")

    def __init__(self, seed: int, rate: float, policy: str, attempts: int,
                 attempt_ms: Dist | None = None, backoff_ms: int = 0) -> None:
        self.seed = seed
        self.rate = rate
        self.policy = policy
        self.attempts = attempts
        #: The field's cost per attempt and back-off (None: an attempt costs a record's
        #: processing; see the module docstring, "As in the field").
        self.attempt_ms = attempt_ms
        self.backoff_ms = backoff_ms
        self._found: dict[Key, list[int]] = {}
        self._scanned: dict[Key, int] = {}
        self._costs: dict[tuple[Key, int], float] = {}

    def cost(self, key: Key, offset: int) -> float:
        """The time the application spends on poison record ``offset`` of ``key`` before it
        dead-letters it: its ``attempts`` attempts and the back-offs between them (ms)."""
        c = self._costs.get((key, offset))
        if c is None:
            assert self.attempt_ms is not None
            c = sum(poison_attempt_cost(self.seed, key, offset, i, self.attempt_ms)
                    for i in range(self.attempts)) + (self.attempts - 1) * self.backoff_ms
            self._costs[(key, offset)] = c
        return c

    def between(self, key: Key, a: float, b: float) -> list[int]:
        """The poison offsets of ``key`` in ``[a, b)`` (as :meth:`count` counts them)."""
        if b <= a:
            return []
        found = self.offsets_below(key, math.ceil(b))
        return found[bisect.bisect_left(found, a):bisect.bisect_left(found, b)]

    def next_from(self, key: Key, a: float) -> int | None:
        """The first poison offset of ``key`` at or after ``a`` (None: none within twenty
        times the mean gap, probability e^-20)."""
        end = math.ceil(a) + 1000 + math.ceil(20 / self.rate)
        o = max(math.ceil(a), 1000)
        while True:
            found = self.offsets_below(key, o)
            i = bisect.bisect_left(found, a)
            if i < len(found):
                return found[i]
            if o >= end:
                return None
            o = min(end, o + 1000)

    def offsets_below(self, key: Key, end: int) -> list[int]:
        """The poison offsets of ``key`` (sorted), known at least up to ``end``."""
        found = self._found.setdefault(key, [])
        o = self._scanned.get(key, 0)
        if o < end:
            seed, rate = self.seed, self.rate
            while o < end:
                if is_poison(seed, key, o, rate):
                    found.append(o)
                o += 1
            self._scanned[key] = o
        return found

    def count(self, key: Key, a: float, b: float) -> int:
        """Poison records of ``key`` a position going from ``a`` to ``b`` passes (offsets in
        ``[a, b)``: consecutive ranges count each record once)."""
        if b <= a:
            return 0
        found = self.offsets_below(key, math.ceil(b))
        return bisect.bisect_left(found, b) - bisect.bisect_left(found, a)

    def first(self, key: Key) -> float:
        """The first poison offset of ``key`` (``retry``: where its position stands for good);
        infinity when none within twenty times the mean gap (probability e^-20)."""
        end = 1000 + math.ceil(20 / self.rate)
        o = self._scanned.get(key, 0)
        found = self._found.setdefault(key, [])
        while not found and o < end:
            step = min(end, o + 1000)
            self.offsets_below(key, step)
            o = step
        return float(found[0]) if found else math.inf


def _blocked_stream(r: Resource, old: float, since: float, t: float, fl: float) -> float:
    """A resource whose member keeps up from ``since`` to ``t`` while its position cannot pass
    ``r.cap`` (``retry``): it follows what can be fetched until it reaches its poison record
    at ``tc``, then stands; the lag's integral in closed form over both pieces. Returns the new
    position."""
    rate, t0, cap = r.rate, r.t0, r.cap
    hw = r.hw
    rt = r.t
    if rt < since:
        r.lag_int += lag_area(rate, t0, hw, rt, since, hw, hw)
        rt = since
    new = old if old > cap else cap
    if t > rt:
        tc = t0 + fl + cap / rate
        if tc > rt:
            mid = tc if tc < t else t
            r.lag_int += stream_lag_area(rate, t0, hw, rt, mid, fl)
            fm = mid - fl
            q = rate * (fm - t0) if fm > t0 else 0.0
            if q > hw:
                hw = q
            rt = mid
        if t > rt:
            if new > hw:
                hw = new
            r.lag_int += lag_area(rate, t0, hw, rt, t, hw, hw)
        r.t = t
    if new > hw:
        hw = new
    r.hw = hw
    lag = (rate * (t - t0) if t > t0 else 0.0) - hw
    r.lag = lag if lag > 0 else 0.0
    return new


# ============================================================================ the lag's integral


def lag_area(rate: float, t0: float, hw: float, a: float, b: float, qa: float,
             qb: float) -> float:
    """The integral over ``[a, b]`` (record-ms) of one resource's lag
    ``max(0, P(u) - max(hw, q(u)))``: production ``P(u) = rate * max(0, u - t0)``, the highest
    position processed before ``a`` ``hw``, and a consumer position ``q`` going linearly from
    ``qa`` at ``a`` to ``qb`` at ``b`` (nondecreasing). The lag is piecewise linear: the
    integral is exact (up to float rounding), the segment split where production starts, where
    the consumer passes ``hw`` (a new owner reprocessing from the committed position) and where
    the lag reaches 0; without such a kink it is one trapezoid (the same operations as the
    trapezoid rule, so the same bits)."""
    if b <= a:
        return 0.0
    if a < t0 < b:  # production starts inside
        qm = qa + (qb - qa) * ((t0 - a) / (b - a))
        return lag_area(rate, t0, hw, a, t0, qa, qm) + lag_area(rate, t0, hw, t0, b, qm, qb)
    if qa < hw < qb:  # the consumer passes the highest position processed
        tm = a + (b - a) * ((hw - qa) / (qb - qa))
        if a < tm < b:
            return lag_area(rate, t0, hw, a, tm, qa, hw) + lag_area(rate, t0, hw, tm, b, hw, qb)
    da = (rate * (a - t0) if a > t0 else 0.0) - (qa if qa > hw else hw)
    db = (rate * (b - t0) if b > t0 else 0.0) - (qb if qb > hw else hw)
    if da >= 0:
        if db >= 0:
            return (da + db) * (b - a) / 2
        return da * (da / (da - db)) * (b - a) / 2  # the lag reaches 0 inside
    if db <= 0:
        return 0.0
    return db * (db / (db - da)) * (b - a) / 2  # the lag starts inside


def stream_lag_area(rate: float, t0: float, hw: float, a: float, b: float,
                    fetch_latency: float) -> float:
    """:func:`lag_area` of a resource whose consumer keeps up over ``(a, b]``: its position
    follows what can be fetched, ``P(u - fetch_latency)`` (the kink where the first records
    reach the fetch horizon split out)."""
    if b <= a:
        return 0.0
    h = t0 + fetch_latency
    if a < h < b:
        return stream_lag_area(rate, t0, hw, a, h, fetch_latency) \
            + stream_lag_area(rate, t0, hw, h, b, fetch_latency)
    fa = a - fetch_latency
    fb = b - fetch_latency
    return lag_area(rate, t0, hw, a, b, rate * (fa - t0) if fa > t0 else 0.0,
                    rate * (fb - t0) if fb > t0 else 0.0)


# ============================================================================ state


class Resource:
    """One partition or Connect task: production, the highest position processed, the
    committed position, and the integral of its lag."""

    __slots__ = ("cap", "committed", "hw", "key", "lag", "lag_int", "rate", "t", "t0")

    def __init__(self, key: Key, rate_per_s: float, t0: int) -> None:
        self.key = key
        self.rate = rate_per_s / 1000.0  # records per ms
        self.t0: float = t0
        self.hw = 0.0
        self.committed = 0.0
        self.t = float(t0)
        self.lag = 0.0
        self.lag_int = 0.0  # record-ms
        #: The position it cannot pass: its first poison record under ``retry``, else infinity.
        self.cap = math.inf

    def produced(self, t: float) -> float:
        return self.rate * (t - self.t0) if t > self.t0 else 0.0

    def set_rate(self, rate_per_s: float) -> None:
        """Production goes on at ``rate_per_s`` from ``self.t`` (the resource brought to then:
        :meth:`WorkModel.set_rates`): what was produced by then stays, the line of production
        is moved so that it passes through it (``t0`` is where the new line is 0), so every
        closed form after ``self.t`` is the same as for a resource produced at that rate."""
        rate = rate_per_s / 1000.0
        if rate <= 0 or rate == self.rate:
            return
        t = self.t
        self.t0 = t - self.produced(t) / rate
        self.rate = rate

    def progress(self, t: float, pos: float) -> None:
        """The resource at time ``t`` with a consumer at ``pos`` (lag integral up to t)."""
        if t > self.t:  # (not processed since self.t: hw constant)
            self.lag_int += lag_area(self.rate, self.t0, self.hw, self.t, t, self.hw, self.hw)
            self.t = t
        if pos > self.hw:
            self.hw = pos
        lag = self.produced(t) - self.hw
        self.lag = lag if lag > 0 else 0.0


#: Natural lateness (``WorkModel.keyed_draws``): a member's batches draw their time per record
#: from one stream per member and slot of this many ms, in turn (``WorkModel.speed_rng``), so
#: that a run and its paired control, whose batches start at other times once the disturbance
#: moved them, still draw the same for the same member in the same second, and each batch keeps
#: its own draw.
SPEED_SLOT_MS = 1_000


def member_of(name: str) -> str:
    """The member a poll loop belongs to, whatever its incarnation (``c1`` of ``c1#2``)."""
    return name.partition("#")[0]


def pause_gap(rng: random.Random, w: Workload) -> int:
    """The gap to a member's next pause: exponential, ``pause_every_ms`` on average."""
    return max(1, round(rng.expovariate(1.0 / w.pause_every_ms)))


class Processor:
    """One application thread: a consumer's poll loop, or a Connect task's.

    ``owned``: what the group gave it (paused until active); ``active``: what it fetches from,
    with its position per resource. ``at_poll`` actions run at its next ``poll()``."""

    __slots__ = ("_ares", "_bitems", "_commit_memo", "_grp", "_p", "_p_version", "_steady",
                 "active",
                 "batch", "batch_end", "batch_id", "batch_start", "boundary_for", "flush_at",
                 "lazy", "model", "name", "owned", "pause_backlog", "pause_due", "pause_rng",
                 "poison_next", "poll_actions", "recent", "stream", "stream_lag", "t", "warming")

    def __init__(self, model: WorkModel, name: str) -> None:
        self.model = model
        self.name = name
        self.owned: set[Key] = set()
        self.active: list[Key] = []
        #: The Resource of each key of ``active``, in the same order, and the batch in
        #: progress as [key, resource, position at its start, records taken]: the loops that
        #: run per batch and per advance read these, not dicts keyed by topic partitions
        #: (whose topic-id hashes cost more than the arithmetic).
        self._ares: list[Resource] = []
        self._bitems: list[tuple[Key, Resource, float, float]] = []
        #: Its position per active resource, keyed by the Resource (see ``pos``), a count of
        #: the changes of its keys, and the last commit's selection of them
        #: (:meth:`commit_positions`).
        self._p: dict[Resource, float] = {}
        self._p_version = 0
        self._commit_memo: tuple[Container[Key], int, list[Resource]] | None = None
        self.warming: dict[Key, int] = {}
        #: Resources whose state this process holds (no warm-up when one comes back).
        self.recent: set[Key] = set()
        self.t = float(model.now())
        #: The batch in progress (None: in ``poll()``): its ``_bitems``, the same list (no
        #: dicts keyed by topic partitions per batch: their topic-id hashes cost more than
        #: the batch's arithmetic when a member at saturation runs small batches).
        self.batch: list[tuple[Key, Resource, float, float]] | None = None
        self.batch_start = 0.0
        self.batch_end = 0.0
        self.batch_id = 0
        self.stream = False
        #: While it keeps up past every resource's fetch horizon: (``_p_version``, its
        #: constant lag) (see :meth:`WorkModel.sample_lag`).
        self.stream_lag: tuple[int, float] | None = None
        #: Overloaded: batches follow each other without simulator events (see advance).
        self.lazy = False
        #: Keeping up with every resource in one state (:class:`InStep`), or None.
        self._steady: InStep | None = None
        #: The step inside a catch-up: active resources known to be in one state (the same
        #: rate, start of production, time, position, highest position processed, lag and
        #: part of the batch in progress; their lag integrals apart), or None. A member in
        #: step given a partition catches up in batches over all its resources; those it kept
        #: up with have the same backlog, so the same share of every batch, and every loop
        #: treats them alike, so they stay in one state: :func:`_backlog`, the batch and
        #: stream loops of :meth:`advance` and the lag samples compute the first of them and
        #: give the others its results (the same floats, added in the same order). Taken
        #: when the step is left (:meth:`_unsteady`) and at each activation
        #: (:func:`_one_state`); left when another processor writes one of them
        #: (:meth:`WorkModel.hold`).
        self._grp: set[Resource] | None = None
        self.boundary_for = -1
        self.poll_actions: list[Callable[[], None]] = []
        self.flush_at: float | None = None
        #: Pauses (``pause_every_ms``): the pause due at the end of the batch in progress
        #: (ms), and this poll loop's own stream of the seed (the same member pauses at the
        #: same times under every protocol of a run).
        self.pause_due = 0.0
        self.pause_rng: random.Random | None = None
        #: Whether what it has to catch up on came from its own pauses only (it had caught
        #: up when one began, and what it owns has not changed since): the steady state of
        #: a pausing member, which :meth:`WorkModel.recovered` does not wait for.
        self.pause_backlog = False
        #: Poison records as in the field, while it keeps up: the next one it will poll
        #: (when it can be fetched, its resource, its offset), an event then (``poison_due``).
        self.poison_next: tuple[float, Resource, int] | None = None

    # ---------------------------------------------------------------- progress

    @property
    def busy(self) -> bool:
        """In the middle of a batch (not in ``poll()``)."""
        return self.batch is not None

    def next_poll(self) -> int:
        """When the application next calls ``poll()`` (now when it is in it; after the batch
        in progress and a pause due at its end)."""
        now = self.model.now()
        self.advance(now)
        return math.ceil(self.batch_end + self.pause_due) if self.batch is not None else now

    def advance(self, t: float) -> None:
        if t <= self.t and (self.batch is None or self.batch_end > t):
            return  # (a batch that takes no time ends at once)
        m = self.model
        while True:
            if self.batch is None:
                # an overloaded member goes from one full batch to the next without events
                # (``lazy``) until something waits for its next poll()
                if not (self.lazy and self.active and not self.poll_actions and t > self.t):
                    break
                if not self._start_lazy(self.t, t):
                    break
            assert self.batch is not None
            span = self.batch_end - self.batch_start
            end = min(t, self.batch_end)
            frac = 1.0 if span <= 0 else (end - self.batch_start) / span
            pos = self._p
            processed = m.processed
            bs = self.batch_start
            # the step inside a catch-up (``_grp``): its first resource computed, the others
            # given its results (``g*``: the same floats, written and summed in order)
            grp = self._grp or _NO_GROUP
            gd = gnew = glag = 0.0
            gpiece: float | None = None
            gset = ghw = False
            for _, r, start, take in self._bitems:
                ing = r in grp
                if ing and gset:
                    processed += gd
                    pos[r] = gnew
                    if gpiece is not None:
                        r.lag_int += gpiece
                        r.t = end
                    if ghw:
                        r.hw = gnew
                    r.lag = glag
                    continue
                new = start + take * frac
                old = pos[r]
                d = new - old
                processed += d
                pos[r] = new
                # the lag's integral up to ``end`` in closed form (see lag_area): the position
                # stood at ``start`` until the batch started, then went linearly to ``new``;
                # the common case (touched at or after the batch's start, no kink: one
                # trapezoid) inlined: at saturation a member runs thousands of small batches
                # over every partition
                rt = r.t
                hw = r.hw
                rate = r.rate
                t0 = r.t0
                # (production at ``end``, the one product both the trapezoid and the lag
                # below take: the same float either way)
                pe = rate * (end - t0) if end > t0 else 0.0
                piece: float | None = None
                if end > rt:
                    if rt < bs:
                        piece = lag_area(rate, t0, hw, rt, bs, start, start) \
                            + lag_area(rate, t0, hw, bs, end, start, new)
                    elif old >= hw and rt >= t0:
                        da = rate * (rt - t0) - old
                        db = pe - new  # (end > rt >= t0)
                        if da >= 0 and db >= 0:
                            piece = (da + db) * (end - rt) / 2
                        else:
                            piece = lag_area(rate, t0, hw, rt, end, old, new)
                    else:
                        piece = lag_area(rate, t0, hw, rt, end, old, new)
                    r.lag_int += piece
                    r.t = end
                raised = new > hw
                if raised:
                    r.hw = hw = new
                lag = pe - hw
                lag = lag if lag > 0 else 0.0
                r.lag = lag
                if ing:
                    gset = True
                    gd, gnew, gpiece, ghw, glag = d, new, piece, raised, lag
            m.processed = processed
            self.t = end
            if end < self.batch_end:
                return
            self.batch = None  # done: in poll()
            if t <= end:
                return
        if self.stream:
            if self._steady is not None:
                if self._steady.advance(self, t):
                    return
                self._unsteady()
            _stream_loop(self, t)
            return
        self.t = t
        if self.flush_at is not None and t >= self.flush_at:
            self._flush_until(t)

    def _sync(self) -> None:
        """Write a processor in step into its resources (:meth:`InStep.sync`)."""
        if self._steady is not None:
            self._steady.sync(self)

    def _unsteady(self) -> None:
        """Leave the step (its resources written): something changes them or what it owns.
        Its resources are then in one state: the step inside what follows (``_grp``)."""
        if self._steady is not None:
            self._steady.sync(self)
            self._steady = None
            if self.model.group_ok:
                self._grp = set(self._ares)

    def _start_lazy(self, t0: float, t: float) -> bool:
        """The next batch at the poll() at ``t0`` when it starts before ``t`` (False: none:
        the member caught up and keeps up from ``t0``, or waits for a record beyond ``t``)."""
        backlog, total, rate = _backlog(self, t0)
        if total < 1.0 and (rate <= 0 or rate * self.model.record_ms < 1.0):
            self.lazy, self.stream, self.stream_lag = False, True, None  # keeps up from t0
            if self.model.poison_field:
                self._arm_poison()
            self.model.changed()
            return False
        while total < 1.0 - 1e-9:  # overloaded: the next whole record (see _wait)
            t0 += _wait(self, t0, total)
            if t0 >= t:
                return False
            backlog, total, rate = _backlog(self, t0)
        self._start_batch(t0, backlog, total, schedule=False)
        return True

    def committable(self) -> dict[Key, float]:
        """Positions an auto-commit commits now: what was polled before the batch in progress."""
        self.advance(self.model.now())
        out = self.pos
        if self.batch is not None:
            for k, _, start, _ in self.batch:
                out[k] = start
        return out

    def commit_positions(self, keys: Container[Key], polled: bool) -> dict[Resource, float]:
        """What a commit of ``keys`` carries, per active resource among them: what was polled
        before the batch in progress (``polled``: an auto-commit, as :meth:`committable`) or
        what was processed (a revocation's, as :meth:`positions`). Keyed by the resource, and
        which active resources ``keys`` selects is kept while neither changes (an auto-commit
        names the same owned set every interval): topic partitions hash their topic id in
        Python, and lookups per partition per commit were a large part of a working run.
        An auto-commit inside a batch reads the batch's starts and the positions of the
        others, which the batch does not move: it does not bring the member to now (the
        lag's integral over the batch then taken in one piece, see :func:`_batch_lag`)."""
        m = self.model
        now = m.now()
        if not (polled and self.batch is not None and now < self.batch_end and not m.shared
                and self.flush_at is None):
            self.advance(now)
        memo = self._commit_memo
        if memo is not None and memo[0] is keys and memo[1] == self._p_version:
            chosen = memo[2]
        else:
            chosen = [r for r in self._p if r.key in keys]
            if isinstance(keys, frozenset):  # (kept only for a set that cannot change)
                self._commit_memo = (keys, self._p_version, chosen)
        pos = self._p
        st = self._steady
        if st is not None:  # (in step: every position is the same, its resources not written)
            return dict.fromkeys(pos if len(chosen) == len(pos) else chosen, st.hw)
        if polled and self.batch is not None:
            starts = {r: start for _, r, start, _ in self.batch}
            return {r: starts.get(r, pos[r]) for r in chosen}
        if len(chosen) == len(pos):  # (every active resource, in the same order: a copy)
            return pos.copy()
        return {r: pos[r] for r in chosen}

    def _flush_until(self, t: float) -> None:
        """A Connect task's offset flushes (``offset.flush.interval.ms``) up to ``t``: the
        last one commits what was processed then (exact while it keeps up; at ``t`` in a
        batch)."""
        flush_at = self.flush_at
        interval = self.model.workload_commit_interval
        if flush_at is None or not interval:
            return
        self._sync()
        last = flush_at + ((t - flush_at) // interval) * interval
        for r in self._ares:
            pos = min(self._p[r], r.produced(last - self.model.fetch_latency_ms)) \
                if self.stream else self._p[r]
            if pos > r.committed:
                r.committed = pos
        self.flush_at = last + interval

    # ---------------------------------------------------------------- poll()

    def poll(self) -> None:
        """The application calls ``poll()``: pending actions first (revocations, joins,
        new partitions), then the next batch, or it waits for records."""
        m = self.model
        now = m.now()
        self.advance(now)
        if self.batch is not None:
            return  # still busy: the boundary event calls poll() again
        if self.pause_due > 0:  # a pause between the batch and the poll(): it waits too
            d, self.pause_due = self.pause_due, 0.0
            self._start_pause(now, d)
            return
        actions, self.poll_actions = self.poll_actions, []
        for act in actions:
            act()
        self._next_batch(now)

    def _next_batch(self, now: int) -> None:
        m = self.model
        self._unsteady()
        self.stream = False
        self.lazy = False
        m.changed()
        if not self.active:
            m.set_working(self, False)
            return
        backlog, total, rate = _backlog(self, now)
        mean = m.record_ms
        m.set_working(self, rate > 0 or total > 0)
        if total < 1.0:
            if rate <= 0:
                self.stream, self.stream_lag = True, None  # nothing will come: it keeps up
                return
            if rate * mean < 1.0:
                self.stream, self.stream_lag = True, None  # keeps up: in poll() whenever a record comes
                if m.poison_field:
                    self._arm_poison()
                return
        # batches follow each other without events, computed when needed (``lazy``), unless
        # one could outlast max.poll.interval.ms: then each batch's end is an event
        self.lazy = not m.overrun_possible
        if total < 1.0:
            if not self.lazy:
                self.batch_id += 1
                m.at(now + max(1, math.ceil(_wait(self, now, total))), self._boundary,
                     self.batch_id)
            return
        self._start_batch(float(now), backlog, total, schedule=not self.lazy)

    def _start_batch(self, t0: float, backlog: list[tuple[Key, Resource, float]], total: float,
                     schedule: bool) -> None:
        m = self.model
        n = min(float(m.workload.max_poll_records), total)
        s = m.workload.processing_ms.draw(m.rng if not m.keyed_draws else m.speed_rng(self.name, t0))
        pos = self._p
        items = [(k, r, pos[r], n * b / total) for k, r, b in backlog]
        self._bitems = self.batch = items
        self.batch_start = t0
        poison = m.poison
        extra = 0.0
        if poison is not None and poison.policy == "dead-letter":
            if m.poison_field:  # each poison record in the batch: its attempts and back-offs
                for key, _, start, take in items:
                    for o in poison.between(key, start, start + take):
                        m.poison_skips += 1
                        extra += poison.cost(key, o) - s
            else:  # each poison record in the batch: its failed attempts before it is skipped
                k = sum(poison.count(key, start, start + take) for key, _, start, take in items)
                if k:
                    m.poison_skips += k
                    n += k * (poison.attempts - 1)
        self.batch_end = t0 + n * s + extra
        self.batch_id += 1
        now = m.now()
        if extra and not schedule and self.batch_end >= now:
            # a poison record's block still to come: its end is an event, where the lag
            # peaks (``_boundary`` samples it); a lazy batch already over is left as it was
            schedule = True
            self.lazy = False
        if schedule:
            m.at(max(math.ceil(self.batch_end), now), self._boundary, self.batch_id)
        limit = m.max_poll_interval_ms
        if m.on_poll_timeout is not None and self.batch_end - t0 > limit:
            m.at(max(math.ceil(t0 + limit), now), self._overrun, self.batch_id)

    # ---------------------------------------------------------------- poison in the stream

    def _arm_poison(self) -> None:
        """Keeping up with poison records as in the field: an event when the next one on its
        active resources can be fetched (the module docstring, "As in the field")."""
        m = self.model
        poison = m.poison
        assert poison is not None
        self._sync()
        fl = m.fetch_latency_ms
        best: tuple[float, Resource, int] | None = None
        for k, r in zip(self.active, self._ares, strict=True):
            if r.rate <= 0:
                continue
            o = poison.next_from(k, self._p[r])
            if o is None:
                continue
            t = r.t0 + fl + o / r.rate
            if best is None or t < best[0]:
                best = (t, r, o)
        if best is None or best == self.poison_next:
            return
        self.poison_next = best
        m.at(max(math.ceil(best[0]), m.now()), self.poison_due, best)

    def poison_due(self, due: tuple[float, Resource, int]) -> None:
        """A member that keeps up polls a poison record: it stands for the record's attempts
        and back-offs (a batch of that one record), then polls what came meanwhile."""
        m = self.model
        if due is not self.poison_next:
            m.stale()  # superseded
            return
        self.poison_next = None
        if m.processors.get(self.name) is not self or not self.stream \
                or self.batch is not None or m.poison is None:
            m.stale()  # (it left the stream: re-armed when it keeps up again)
            return
        _, r, o = due
        if m.active_in.get(r) is not self:
            m.stale()
            self._arm_poison()
            return
        now = m.now()
        self.advance(now)
        self._unsteady()
        start = self._p[r]
        self.stream = False
        self.lazy = False
        self.pause_backlog = True  # (its steady state, as its pauses: not waited for)
        m.poison_skips += 1
        self._bitems = self.batch = [(r.key, r, start, max(0.0, o + 1 - start))]
        self.batch_start = float(now)
        self.batch_end = now + m.poison.cost(r.key, o)
        self.batch_id += 1
        self.boundary_for = self.batch_id
        m.set_working(self, True)
        m.at(max(math.ceil(self.batch_end), now), self._boundary, self.batch_id)
        if m.on_poll_timeout is not None and self.batch_end - now > m.max_poll_interval_ms:
            m.at(math.ceil(now + m.max_poll_interval_ms), self._overrun, self.batch_id)
        m.changed()

    # ---------------------------------------------------------------- pauses

    def start_pauses(self, seed: int) -> None:
        """Pause this poll loop now and then (``pause_every_ms``; see the module docstring,
        "Natural lateness"), on its member's schedule (:meth:`WorkModel.pause_schedule`)."""
        self.pause_rng, t = self.model.pause_schedule(self.name, seed)
        self.model.at(t, self._pause, None)

    def _pause(self, _: Any) -> None:
        """A pause starts: now when the application is in ``poll()``; at the end of the
        batch in progress otherwise (the pause then delays the next ``poll()``)."""
        m = self.model
        if m.processors.get(self.name) is not self or self.pause_rng is None:
            m.stale()
            return
        w = m.workload
        now = m.now()
        d = max(0.0, w.pause_ms.draw(self.pause_rng))
        t = m.pause_next[member_of(self.name)] = now + pause_gap(self.pause_rng, w)
        m.at(t, self._pause, None)
        self.advance(now)
        if d <= 0:
            return
        if self.stream or not self.active:  # (caught up: its backlog will be the pause's)
            self.pause_backlog = True
        if self.batch is not None:
            self.pause_due += d
            if self.lazy:  # (its end is now awaited: no lazy batch after it)
                self.lazy = False
                if self.boundary_for != self.batch_id:
                    self.boundary_for = self.batch_id
                    m.at(max(math.ceil(self.batch_end), now), self._boundary, self.batch_id)
            return
        self._start_pause(float(now), d)

    def _start_pause(self, t0: float, d: float) -> None:
        """The poll loop stands from ``t0`` for ``d`` ms: a batch of no records (nothing
        processed, every owned partition waiting), then ``poll()`` (actions waiting for it
        run then, and the backlog built meanwhile is polled in batches)."""
        m = self.model
        self._unsteady()
        self.stream = False
        self.lazy = False
        self._bitems = self.batch = []
        self.batch_start = t0
        self.batch_end = t0 + d
        self.batch_id += 1
        self.boundary_for = self.batch_id
        m.set_working(self, False)
        m.at(max(math.ceil(self.batch_end), m.now()), self._boundary, self.batch_id)
        m.changed()

    def _boundary(self, batch_id: int) -> None:
        if batch_id != self.batch_id or self.model.processors.get(self.name) is not self:
            self.model.stale()
            return
        self.advance(self.model.now())
        if self.model.poison_field:  # (a poison record's block ends here: the lag's peak)
            self.model.sample_lag()
        self.batch = None
        self.poll()

    def _overrun(self, batch_id: int) -> None:
        m = self.model
        if batch_id != self.batch_id or self.batch is None or m.processors.get(self.name) \
                is not self or m.on_poll_timeout is None:
            m.stale()
            return
        m.poll_timeouts += 1
        m.on_poll_timeout(self, math.ceil(self.batch_end))

    def at_poll(self, action: Callable[[], None]) -> None:
        """Run ``action`` at the next ``poll()`` (now when the application is in it)."""
        m = self.model
        self.advance(m.now())
        if self.batch is None:
            action()
            self._next_batch(m.now())
            return
        self.poll_actions.append(action)
        if self.lazy and self.boundary_for != self.batch_id:  # its poll() is now awaited
            self.boundary_for = self.batch_id
            m.at(max(math.ceil(self.batch_end), m.now()), self._boundary, self.batch_id)

    # ---------------------------------------------------------------- ownership

    def assign(self, keys: Iterable[Key], delay_ms: int = 0) -> None:
        """The group gave it ``keys``: it processes them from its next ``poll()``, after
        ``delay_ms`` (a Connect task's start) or the workload's warm-up for a resource it
        never held."""
        keys = [k for k in keys if k not in self.owned]
        if not keys:
            return
        self.pause_backlog = False  # (what it owns changed: it catches up on that first)
        m = self.model
        m.account()
        for k in keys:
            self.owned.add(k)
        m.recount(self)

        def start() -> None:
            now = m.now()
            resources = m.resources
            active = self._p  # (k is active when its resource is: no scan of the key list)
            batch: list[Key] = []
            for k in keys:
                if k not in self.owned or resources.get(k) in active or k in self.warming:
                    continue
                wait = delay_ms or (0 if k in self.recent else m.workload.warmup_ms)
                if wait > 0:
                    if batch:  # activated before this key's wake-up is scheduled, as before
                        self._activate_all(batch)
                        batch = []
                    self.warming[k] = now + wait
                    m.at(now + wait, self._warm, k)
                elif self.active:
                    self._activate(k)
                else:  # nothing processed yet: activated together (:meth:`_activate_all`)
                    batch.append(k)
            if batch:
                self._activate_all(batch)

        self.at_poll(start)

    def _warm(self, k: Key) -> None:
        if self.warming.get(k) != self.model.now() or \
                self.model.processors.get(self.name) is not self:
            self.model.stale()
            return
        del self.warming[k]
        if k in self.owned:
            self._activate(k)
            if self.batch is None:
                self._next_batch(self.model.now())

    def _activate(self, k: Key) -> None:
        m = self.model
        r = m.resources.get(k)
        if r is None:
            return
        m.account()
        m.sample_lag()
        self.advance(m.now())
        if self._steady is not None:
            self._unsteady()  # (its resources in one state: ``_grp``)
        else:
            self._grp = _one_state(self)
        m.hold(r)
        self._p[r] = r.committed
        self._p_version += 1
        m.active_in[r] = self
        m.idle.pop(r, None)
        if r.hw > r.committed:
            m.reprocessed += r.hw - r.committed
        r.progress(m.now(), r.committed)
        i = bisect.bisect(self.active, order_key(k), key=order_key)
        self.active.insert(i, k)
        self._ares.insert(i, r)
        self.recent.add(k)
        m.started(k)
        m.recount(self)
        if self.flush_at is None and m.connect and m.workload_commit_interval:
            self.flush_at = m.now() + m.workload_commit_interval

    def _activate_all(self, keys: list[Key]) -> None:
        """:meth:`_activate` of each of ``keys`` in order, at one instant, into a processor
        that processes nothing yet (the common case: an eager member given its partitions
        back): the same state, float sums in the same order. What each activation repeats
        is done once: the model's accounting, the lag sample and the advance to now (at one
        instant the second of each changes nothing), the count of paused resources (read by
        nothing in between), and the ordered insertion (into an empty list: the keys
        sorted)."""
        m = self.model
        resources = m.resources
        now = m.now()
        first = True
        pos = self._p
        active_in = m.active_in
        idle = m.idle
        added: list[tuple[Key, Resource]] = []
        for k in keys:
            r = resources.get(k)
            if r is None:
                continue
            if first:
                first = False
                m.account()
                m.sample_lag()
                self.advance(now)
                self._unsteady()
            m.hold(r)
            pos[r] = r.committed
            self._p_version += 1
            active_in[r] = self
            idle.pop(r, None)
            if r.hw > r.committed:
                m.reprocessed += r.hw - r.committed
            r.progress(now, r.committed)
            added.append((k, r))
            self.recent.add(k)
            m.started(k)
        if not added:
            return
        added.sort(key=lambda kr: order_key(kr[0]))
        self.active[:0] = [k for k, _ in added]
        self._ares[:0] = [r for _, r in added]
        self._grp = _one_state(self)
        m.recount(self)
        if self.flush_at is None and m.connect and m.workload_commit_interval:
            self.flush_at = now + m.workload_commit_interval

    def release(self, keys: Iterable[Key], commit: bool) -> None:
        """The group took ``keys`` back (revoked: ``commit`` what was processed; lost or
        crashed: nothing more is committed)."""
        keys = list(keys)
        for k in keys:
            self.owned.discard(k)
            self.warming.pop(k, None)
        self.deactivate(keys, commit)

    def deactivate(self, keys: Iterable[Key], commit: bool) -> None:
        """Stop processing ``keys`` (still owned until :meth:`release`: paused)."""
        self.pause_backlog = False
        m = self.model
        m.account()
        self.advance(m.now())
        self._unsteady()
        gone: set[Resource] = set()
        resources = m.resources
        for k in keys:
            # ``active`` and ``_ares`` are parallel: find the resource by identity (a key's
            # topic id compares in Python); a key whose resource the model no longer has is
            # looked for in the key list
            r0 = resources.get(k)
            if r0 is not None and r0 in self._p:
                i = self._ares.index(r0)
            elif k in self.active:
                i = self.active.index(k)
            else:
                continue
            del self.active[i]
            r = self._ares.pop(i)
            gone.add(r)
            pos = self._p.pop(r)
            m.unhold(r)
            self._p_version += 1
            if m.active_in.get(r) is self:
                del m.active_in[r]
                if r0 is r:
                    m.idle[r] = None
            if r0 is r:  # (the model's resource of k)
                r.progress(m.now(), pos)
                if commit:
                    r.committed = max(r.committed, pos)
        if gone and self._grp:
            self._grp -= gone
        if gone and self.batch is not None:  # (out of the batch in progress too)
            self._bitems = self.batch = [it for it in self.batch if it[1] not in gone]
        m.recount(self)
        if not self.active:
            self.stream = False
            m.set_working(self, False)

    @property
    def pos(self) -> dict[Key, float]:
        """Its position per active resource (as of its last advance)."""
        self._sync()
        return {r.key: v for r, v in self._p.items()}

    def positions(self) -> dict[Key, float]:
        """What it processed so far, per resource."""
        self.advance(self.model.now())
        return self.pos


def _stream_loop(p: Processor, t: float) -> None:
    """The stream loop of :meth:`Processor.advance`: ``p`` keeps up (not in step) from
    its last advance to ``t``, each active resource brought to ``t`` in closed form."""
    m = p.model
    fl = m.fetch_latency_ms
    fetched = t - fl
    since = p.t  # (it keeps up since its last advance at the latest)
    pos = p._p
    processed = m.processed
    # the resources in one state (``_grp``): the first computed, the others given
    # its floats (``g*``), written and summed in the same order
    grp = p._grp or _NO_GROUP
    gd = gold = glag = 0.0
    gp1: float | None = None
    gp2: float | None = None
    gt: float | None = None
    gset = gmoved = ghw = False
    for r in p._ares:
        ing = r in grp
        if ing and gset:
            if gmoved:
                processed += gd
                pos[r] = gold
            if gp1 is not None:
                r.lag_int += gp1
            if gp2 is not None:
                r.lag_int += gp2
            if gt is not None:
                r.t = gt
            if ghw:
                r.hw = gold
            r.lag = glag
            continue
        rate = r.rate
        t0 = r.t0
        new = rate * (fetched - t0) if fetched > t0 else 0.0  # r.produced
        old = pos[r]
        if new > r.cap:  # (``retry``: its position stands at a poison record)
            new = _blocked_stream(r, old, since, t, fl)
            processed += new - old
            pos[r] = new
            continue
        moved = new > old
        if moved:
            d = new - old
            processed += d
            pos[r] = old = new
        # the lag's integral up to t in closed form (stream_lag_area; its common
        # case inlined: past the fetch horizon since r.t and caught up at r.t, the
        # lag is constant, one trapezoid)
        hw = r.hw
        rt = r.t
        pt = rate * (t - t0) if t > t0 else 0.0  # (production at t: one product)
        p1: float | None = None
        p2: float | None = None
        wt: float | None = None
        if rt < since:  # (not in the last batch before it caught up: unprocessed)
            p1 = lag_area(rate, t0, hw, rt, since, hw, hw)
            r.lag_int += p1
            r.t = rt = wt = since
        if t > rt:  # (dt > 0: two distinct floats never subtract to 0)
            if rt >= t0 + fl and hw == rate * (rt - fl - t0):  # (then t > t0)
                p2 = ((rate * (rt - t0) - hw) + (pt - old)) \
                    * (t - rt) / 2 if old >= hw else \
                    stream_lag_area(rate, t0, hw, rt, t, fl)
            else:
                p2 = stream_lag_area(rate, t0, hw, rt, t, fl)
            r.lag_int += p2
            r.t = wt = t
        raised = old > hw
        if raised:
            r.hw = hw = old
        lag = pt - hw
        lag = lag if lag > 0 else 0.0
        r.lag = lag
        if ing:
            gset = True
            gmoved, gold, gp1, gp2, gt, ghw, glag = moved, old, p1, p2, wt, raised, lag
            if moved:
                gd = d
    m.processed = processed
    p.t = t
    if p.flush_at is not None:
        if t >= p.flush_at:
            p._flush_until(t)
    elif m.steady_ok:
        p._steady = InStep.enter(p, t)


# ============================================================================ keeping up in step


class InStep:
    """A processor that keeps up with every active resource in one state: the same rate and
    start of production, brought to the same time, its position and highest position
    processed equal and on the fetch horizon, no other processor on it, no poison record in
    its way. Each next advance of the stream loop (:meth:`Processor.advance`) is then the same
    float operations for every resource: :meth:`advance` does them once. The lag of each
    resource is then constant (its production during ``fetch_latency_ms``), one linear
    segment: :meth:`sync` adds its integral since the resources were last written as one
    trapezoid (the closed form of :func:`lag_area`, the same quantity as the stream loop's
    pieces, other last bits) when something reads or changes the resources; an auto-commit of
    a member that keeps up costs one set of operations instead of one per partition."""

    __slots__ = ("hw", "lag", "rate", "t", "t0", "ws", "wt")

    def __init__(self, rate: float, t0: float, t: float, hw: float, lag: float) -> None:
        self.rate = rate
        self.t0 = t0
        #: The time of the last advance; the position and highest position processed, and
        #: the lag, of every resource then.
        self.t = t
        self.hw = hw
        self.lag = lag
        #: When the resources were last written, and their highest position processed then
        #: (the segment's start).
        self.wt = t
        self.ws = hw

    @staticmethod
    def enter(p: Processor, t: float) -> InStep | None:
        """After a stream advance of ``p`` to ``t``: its step, if its resources are in one
        state (see the class docstring)."""
        ares = p._ares
        if not ares:
            return None
        r0 = ares[0]
        rate = r0.rate
        t0 = r0.t0
        v = r0.hw
        lag = r0.lag
        fl = p.model.fetch_latency_ms
        # the inlined closed form's condition at the next advance (the stream loop's)
        if not (t >= t0 + fl and v == rate * (t - fl - t0)):
            return None
        pos = p._p
        holders = p.model.holders
        inf = math.inf
        for r in ares:
            if r.rate != rate or r.t0 != t0 or r.t != t or r.hw != v or pos[r] != v \
                    or r.lag != lag or r.cap != inf or holders[r] != 1:
                return None
        return InStep(rate, t0, t, v, lag)

    @property
    def pending(self) -> bool:
        """Whether it advanced since its resources were last written."""
        return self.t != self.wt

    def advance(self, p: Processor, t: float) -> bool:
        """The stream loop of :meth:`Processor.advance` from ``self.t`` to ``t``, once for
        every resource. False: the closed form's condition no longer holds (the caller
        writes the resources and runs the stream loop)."""
        rate, t0, rt, hw = self.rate, self.t0, self.t, self.hw
        m = p.model
        fl = m.fetch_latency_ms
        if not (rt >= t0 + fl and hw == rate * (rt - fl - t0)):
            return False
        fetched = t - fl
        new = rate * (fetched - t0) if fetched > t0 else 0.0
        if new > hw:  # (every resource's position is ``hw``)
            m.processed += (new - hw) * len(p._ares)
            hw = new
        lag = (rate * (t - t0) if t > t0 else 0.0) - hw
        self.t = t
        self.hw = hw
        self.lag = lag if lag > 0 else 0.0
        p.t = t
        return True

    def sync(self, p: Processor) -> None:
        """Write the step into ``p``'s resources: their lag integrals take the segment since
        they were last written, one trapezoid (both ends past the fetch horizon and caught
        up: the lag is linear, in fact constant, in between)."""
        t, ts = self.t, self.wt
        if t == ts:
            return
        rate, t0, v, lag = self.rate, self.t0, self.hw, self.lag
        piece = ((rate * (ts - t0) - self.ws) + (rate * (t - t0) - v)) * (t - ts) / 2
        pos = p._p
        for r in p._ares:
            r.lag_int += piece
            r.t = t
            r.hw = v
            r.lag = lag
            pos[r] = v
        self.wt = t
        self.ws = v


# ============================================================================ the backlog


def _batch_lag(p: Processor, t: float) -> float | None:
    """The lag of ``p``'s active resources at ``t``, inside its batch in progress
    (``batch_start <= t < batch_end``), read without bringing it to ``t``: each resource
    of the batch at the position :meth:`Processor.advance` would give it then, the others
    where they are. Its resources are left as they were, so the next advance takes the lag's
    integral over the batch's linear segment in one piece (the closed form of
    :func:`lag_area`) instead of split at every sample: the same quantity, other last
    bits. None when the batch is not a subsequence of its active resources (the caller
    advances)."""
    span = p.batch_end - p.batch_start
    frac = 1.0 if span <= 0 else (t - p.batch_start) / span
    items = p._bitems
    nb = len(items)
    j = 0
    nxt = items[0][1] if nb else None
    active_in = p.model.active_in
    lag = 0.0
    grp = p._grp or _NO_GROUP  # (resources in one state: the first's lag is the others')
    grl: float | None = None
    for r in p._ares:
        ing = r in grp
        if ing and grl is not None:
            if r is nxt:
                j += 1
                nxt = items[j][1] if j < nb else None
            if active_in.get(r) is p and grl > 0:
                lag += grl
            continue
        hw = r.hw
        if r is nxt:
            it = items[j]
            new = it[2] + it[3] * frac
            if new > hw:
                hw = new
            j += 1
            nxt = items[j][1] if j < nb else None
        if active_in.get(r) is p:
            t0 = r.t0
            rl = (r.rate * (t - t0) if t > t0 else 0.0) - hw
            if rl > 0:
                lag += rl
            if ing:
                grl = rl
    return lag if j == nb else None


def _one_state(p: Processor) -> set[Resource] | None:
    """The step inside a catch-up (``Processor._grp``): the largest set of ``p``'s active
    resources in one state (rate, start of production, time, position, highest position
    processed, lag, and their part of the batch in progress: a resource activated while the
    batch of another is in progress may be where that one is, until the batch moves it),
    none with a poison record in its way or another processor on it; None without two
    such."""
    m = p.model
    if not (m.group_ok and m.steady_ok):
        return None
    holders = m.holders
    pos = p._p
    inf = math.inf
    part: dict[Resource, tuple[float, float]] = {}
    if p.batch:
        part = {r: (start, take) for _, r, start, take in p.batch}
    classes: dict[tuple[Any, ...], list[Resource]] = {}
    for r in p._ares:
        if r.cap != inf or holders.get(r) != 1:
            continue
        key = (r.rate, r.t0, r.t, r.hw, pos[r], r.lag, part.get(r))
        c = classes.get(key)
        if c is None:
            classes[key] = [r]
        else:
            c.append(r)
    best = max(classes.values(), key=len, default=None)
    return set(best) if best is not None and len(best) > 1 else None


def _wait(p: Processor, t: float, total: float) -> float:
    """How long from ``t`` until a whole record can be polled, given ``total`` < 1 now:
    the resources already past the fetch horizon fill the gap at their rate; one whose
    first record is not fetchable yet starts to count ``fetch_latency_ms`` after its
    production started (then the caller looks again). Never more than needed, so no
    record waits; never a step smaller than the time to the next such change, so a member
    that has just been given partitions does not spin. The caller asks again after each
    such wait until a whole record can be polled: a batch of a fraction of a record is not a
    poll the application sees, and where it began depended on when the member was asked."""
    fetched = t - p.model.fetch_latency_ms
    flowing = 0.0
    wait = math.inf
    for r in p._ares:
        if r.rate <= 0:
            continue
        if fetched >= r.t0:  # (fetchable from this instant: it flows now, no wait of 0)
            if r.rate * (fetched - r.t0) < r.cap:  # (``retry``: not standing at poison)
                flowing += r.rate
        else:
            wait = min(wait, r.t0 - fetched)
    if flowing > 0:
        wait = min(wait, (1.0 - total) / flowing)
    return wait if wait > 0 else 1.0


def _backlog(p: Processor, t: float) -> tuple[list[tuple[Key, Resource, float]], float,
                                             float]:
    """(key, resource, records to process) of the active resources with a backlog at
    ``t``, their total, and the active resources' production rate."""
    rate = 0.0
    backlog: list[tuple[Key, Resource, float]] = []
    total = 0.0
    fetched = t - p.model.fetch_latency_ms  # what a poll() at t can return
    pos = p._p
    grp = p._grp
    if grp:  # the step inside a catch-up: its first resource's backlog is the others'
        gb = grr = 0.0
        gset = gflow = False
        for k, r in zip(p.active, p._ares, strict=True):
            ing = r in grp
            if ing and gset:
                if gflow:
                    rate += grr
                if gb > 0:
                    backlog.append((k, r, gb))
                    total += gb
                continue
            rr = r.rate
            q = rr * (fetched - r.t0) if fetched > r.t0 else 0.0  # r.produced
            flow = q < r.cap
            if flow:
                rate += rr
            else:  # ``retry``: it cannot pass its poison record (nothing flows)
                q = r.cap
            b = q - pos[r]
            if b > 0:
                backlog.append((k, r, b))
                total += b
            if ing:
                gset, gb, grr, gflow = True, b, rr, flow
        return backlog, total, rate
    for k, r in zip(p.active, p._ares, strict=True):
        rr = r.rate
        q = rr * (fetched - r.t0) if fetched > r.t0 else 0.0  # r.produced
        if q >= r.cap:  # ``retry``: it cannot pass its poison record (nothing flows)
            q = r.cap
        else:
            rate += rr
        b = q - pos[r]
        if b > 0:
            backlog.append((k, r, b))
            total += b
    return backlog, total, rate


# ============================================================================ the model


class WorkModel:
    """The work of one simulation: resources, processors (one per process incarnation, or
    per Connect task) and the metrics (see the module docstring)."""

    def __init__(self, workload: Workload, seed: int, now: Callable[[], int], at: Scheduler,
                 stale: Callable[[], None], *, max_poll_interval_ms: int,
                 commit_interval_ms: int, connect: bool = False) -> None:
        self.workload = workload
        self.seed = seed
        self.rng = random.Random(f"work:{seed}")
        #: Natural lateness (``pause_every_ms`` > 0) keys its draws by member and time, not
        #: by the order of the calls: a batch's time per record by the member and the second
        #: its batch starts in (:data:`SPEED_SLOT_MS`), each member's pauses from its own
        #: stream on one schedule across its incarnations (``pause_streams``, ``pause_next``:
        #: the next pause's time, by member name without its incarnation), so that a run and
        #: its paired control draw the same for the same member at the same time (other
        #: workloads draw in call order from ``rng``, as before).
        self.keyed_draws = workload.pause_every_ms > 0
        self.pause_streams: dict[str, random.Random] = {}
        self.pause_next: dict[str, int] = {}
        self._speed: dict[str, tuple[int, random.Random]] = {}
        self.now = now
        self._at = at
        self.stale = stale
        self.connect = connect
        self.max_poll_interval_ms = max_poll_interval_ms
        d = workload.processing_ms
        longest = d.bounded_max if d.bounded_max is not None else 20 * d.average
        #: Whether a batch may outlast max.poll.interval.ms (an unbounded distribution: 20
        #: times its mean, e^-20 for an exponential; dead-lettered poison records: every
        #: record of the batch tried ``poison_attempts`` times, at worst).
        dead_letter = workload.poison_rate > 0 and workload.poison_policy == "dead-letter" \
            and not connect
        #: Poison records as in the field (the module docstring, "As in the field").
        self.poison_field = dead_letter and workload.poison_attempt_ms is not None
        attempts = workload.poison_attempts if dead_letter else 1
        if self.poison_field:  # (a batch with one poison record, at the longest)
            a = workload.poison_attempt_ms
            assert a is not None
            n = workload.poison_attempts
            one = n * (a.bounded_max if a.bounded_max is not None else 20 * a.average) \
                + (n - 1) * workload.poison_backoff_ms
            self.overrun_possible = workload.max_poll_records * longest + one \
                > max_poll_interval_ms
        else:
            self.overrun_possible = workload.max_poll_records * longest * attempts \
                > max_poll_interval_ms
        self.workload_commit_interval = commit_interval_ms
        #: How long after its production a record can be polled (see the module docstring).
        self.fetch_latency_ms = float(workload.fetch_latency_ms)
        #: Poison records (None: none; Connect tasks have none) and the mean time a record
        #: costs, the failed attempts of dead-lettered ones included (whether a member keeps
        #: up); poison records skipped in batches (the stream's are not counted).
        self.poison = PoisonRecords(seed, workload.poison_rate, workload.poison_policy,
                                    workload.poison_attempts, workload.poison_attempt_ms,
                                    workload.poison_backoff_ms) \
            if workload.poison_rate > 0 and not connect else None
        if self.poison_field:
            a = workload.poison_attempt_ms
            assert a is not None
            n = workload.poison_attempts
            self.record_ms = d.average + workload.poison_rate * (
                n * a.average + (n - 1) * workload.poison_backoff_ms - d.average)
        else:
            self.record_ms = d.average * (
                1 + workload.poison_rate * (workload.poison_attempts - 1)
                if self.poison is not None and workload.poison_policy == "dead-letter" else 1)
        self.poison_skips = 0
        #: Whether processors may keep up in step (:class:`InStep`): not with
        #: poison records (a stream member arms an event for the next one) nor for Connect
        #: tasks (their offset flushes read the positions).
        self.steady_ok = self.poison is None and not connect
        #: Whether a member in step given a partition keeps the resources it kept up with
        #: as one step inside the catch-up (``Processor._grp``; off: each computed alone,
        #: the same floats).
        self.group_ok = True
        #: How many processors process each resource (more than one: a fenced member still
        #: processing what its successor took over; none of them is then in step).
        self.holders: dict[Resource, int] = {}
        #: How many resources have more than one holder: while none has, a processor's
        #: resources are written by it alone, and a lag sample or an auto-commit may read a
        #: member in a batch without bringing it to now (:func:`_batch_lag`).
        self.shared = 0
        #: Called when a batch outlasts ``max.poll.interval.ms``: (processor, its batch end).
        self.on_poll_timeout: Callable[[Processor, int], None] | None = None
        self.resources: dict[Key, Resource] = {}
        #: ``resources`` of the keys that are topic partitions, by topic then partition
        #: (:meth:`partition_resources`): a lookup per partition of a commit answer hashes an
        #: int, not a tuple whose topic id (a UUID) hashes in Python.
        self._by_topic: dict[Any, dict[int, Resource]] = {}
        self.processors: dict[str, Processor] = {}
        #: The processor each active resource is processed by (a lag sample reads a
        #: resource's lag without bringing a member that keeps up to now).
        self.active_in: dict[Resource, Processor] = {}
        #: The resources no processor processes (owned but paused, or not owned).
        self.idle: dict[Resource, None] = {}
        self.processed = 0.0
        self.reprocessed = 0.0
        self.task_restarts = 0
        self.poll_timeouts = 0
        self._started: set[Key] = set()
        #: When each Connect task last started (its processor activated it), ms.
        self.started_at: dict[Key, int] = {}
        self._working: set[str] = set()
        self._paused = 0
        self._paused_of: dict[str, int] = {}
        self._paused_int = 0.0  # resource-ms
        self._stall_int = 0.0
        self._t = float(now())
        self._gone_lag_int = 0.0  # record-s of resources that no longer exist
        self.lag_now = 0.0
        self._sampled_at: int | None = None
        #: Called with the total lag whenever it is sampled (the windows' peaks).
        self.on_lag: Callable[[float], None] | None = None
        #: Called when a processor reaches ``poll()`` (it may have recovered).
        self.on_change: Callable[[], None] | None = None
        #: Called with a member's lateness (ms) when it meets the group protocol (:meth:`late`).
        self.on_late: Callable[[float], None] | None = None

    def at(self, t: int, fn: Callable[[Any], None], arg: Any) -> None:
        self._at(t, fn, arg)

    # ---------------------------------------------------------------- resources

    def add_resource(self, key: Key, rate_per_s: float) -> None:
        if key not in self.resources:
            r = self.resources[key] = Resource(key, rate_per_s, self.now())
            if isinstance(key, tuple) and len(key) == 2:
                self._by_topic.setdefault(key[0], {})[key[1]] = r
            self.idle[r] = None
            if self.poison is not None and self.poison.policy == "retry":
                r.cap = self.poison.first(key)

    def sync_resources(self, wanted: Mapping[Key, float]) -> None:
        """The resources that exist now (with their rates): new ones start producing now;
        gone ones stop counting."""
        for k, rate in wanted.items():
            self.add_resource(k, rate)
        gone = [k for k in self.resources if k not in wanted]
        if not gone:
            return
        for p in self.processors.values():  # (a deleted topic: nobody processes it any more)
            active = set(p.active)
            held = [k for k in gone if k in p.owned or k in active]
            if held:
                p.release(held, commit=False)
        for k in gone:
            r = self.resources.pop(k)
            if isinstance(k, tuple) and len(k) == 2:
                of_topic = self._by_topic[k[0]]
                del of_topic[k[1]]
                if not of_topic:
                    del self._by_topic[k[0]]
            self.idle.pop(r, None)
            r.progress(self.now(), r.hw)
            self._gone_lag_int += r.lag_int / 1000.0

    def set_rates(self, rates: Mapping[Key, float]) -> None:
        """Existing resources produce at new rates (records/s) from now (a topic's growth under
        ``growth_rate = "topic"``). Everything is brought to now first (:meth:`settle`: the
        lag's integral so far at the old rates), then each resource's line of production is
        moved (:meth:`Resource.set_rate`) and every processor leaves its step (its cached
        rate). What can be fetched changes at once: within ``fetch_latency_ms`` after the
        change a member may fetch up to ``(old - new rate) x fetch_latency_ms`` records more
        than were produced that long before (under 0.1 record a partition for the paper's
        grids); production itself is continuous."""
        changed = [(self.resources[k], v) for k, v in rates.items()
                   if k in self.resources and self.resources[k].rate != v / 1000.0]
        if not changed:
            return
        self.settle()
        for p in self.processors.values():
            p._unsteady()
            p._grp = None  # (the step inside a catch-up too: some of its rates change)
            p.stream_lag = None
        for r, v in changed:
            r.set_rate(v)
        if self.poison_field:
            for p in self.processors.values():
                if p.stream:
                    p._arm_poison()

    def partition_resources(self, topic_id: Any) -> Mapping[int, Resource]:
        """``{i: resources[(topic_id, i)]}`` for every such key (empty if none)."""
        return self._by_topic.get(topic_id, _NO_RESOURCES)

    # ---------------------------------------------------------------- processors

    def hold(self, r: Resource) -> None:
        """A processor starts processing ``r``: any other processing it leaves the step
        (:class:`InStep`), since both now write it."""
        n = self.holders[r] = self.holders.get(r, 0) + 1
        if n > 1:
            if n == 2:
                self.shared += 1
            for p in self.processors.values():
                if r in p._p:
                    p._unsteady()
                    p._grp = None

    def unhold(self, r: Resource) -> None:
        """A processor stops processing ``r`` (:meth:`hold`)."""
        n = self.holders[r] - 1
        if n == 1:
            self.shared -= 1
        if n:
            self.holders[r] = n
        else:
            del self.holders[r]

    def processor(self, name: str) -> Processor:
        p = self.processors.get(name)
        if p is None:
            p = self.processors[name] = Processor(self, name)
            if self.workload.pause_every_ms > 0 and not self.connect:
                p.start_pauses(self.seed)
        return p

    def speed_rng(self, name: str, t0: float) -> random.Random:
        """The stream a batch of poll loop ``name`` starting at ``t0`` draws its time per record
        from: one per member and second (:data:`SPEED_SLOT_MS`), drawn in turn by the batches
        that start in that second (each batch its own draw, as before)."""
        member = member_of(name)
        slot = int(t0) // SPEED_SLOT_MS
        got = self._speed.get(member)
        if got is None or got[0] != slot:
            got = self._speed[member] = (slot, random.Random(f"batch:{self.seed}:{member}:{slot}"))
        return got[1]

    def pause_schedule(self, name: str, seed: int) -> tuple[random.Random, int]:
        """The pause stream of poll loop ``name`` and the time of its first pause: for the
        member's first poll loop, an exponential gap from now; a later incarnation (a bounce's
        restart) goes on with the member's stream from the first pause due after now (those
        that fell while it was down skipped), so a member pauses at the same times in a run
        and in its paired control, whether or not the run restarted it."""
        w = self.workload
        now = self.now()
        member = member_of(name)
        rng = self.pause_streams.get(member)
        if rng is None:  # (seeded by the first incarnation's name, as before)
            rng = self.pause_streams[member] = random.Random(f"pause:{seed}:{name}")
            t = now + pause_gap(rng, w)
        else:
            t = self.pause_next[member]
            while t < now:  # its pauses while it was down: their durations, the gaps after
                w.pause_ms.draw(rng)
                t += pause_gap(rng, w)
        self.pause_next[member] = t
        return rng, t

    def late(self, asked_at: int) -> None:
        """A member met the group protocol now that asked it at ``asked_at`` (a classic
        member's rejoin, a KIP-848 member's revocation callback): its lateness, the time it
        took to reach ``poll()`` (0: it was in it)."""
        if self.on_late is not None:
            self.on_late(float(self.now() - asked_at))

    def drop(self, name: str, commit: bool) -> None:
        """The processor is gone (crash, exit, a task stopped)."""
        p = self.processors.get(name)
        if p is None:
            return
        p.release(sorted(p.owned, key=order_key), commit)
        p.poll_actions = []
        self.account()
        self._paused -= self._paused_of.pop(name, 0)
        self._working.discard(name)
        del self.processors[name]

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def recovered(self) -> bool:
        """Every processor processes all it owns and keeps up (no backlog, no batch; a
        pausing member's own pauses and their backlog are its steady state, not waited for:
        ``Processor.pause_backlog``)."""
        if self._paused:
            return False
        now = self.now()
        for p in self.processors.values():
            if p.stream or p.pause_backlog:  # (keeps up: bringing it to now changes neither)
                continue
            p.advance(now)  # (a member catching up may keep up from then on)
            if p.batch is not None or not (p.stream or not p.active):
                return False
        return True

    def started(self, key: Key) -> None:
        """A Connect task (task id >= 0) started: a restart if it ran before."""
        if not self.connect or not isinstance(key, tuple) or len(key) != 2 or key[1] < 0:
            return
        if key in self._started:
            self.task_restarts += 1
        self._started.add(key)
        self.started_at[key] = self.now()

    # ---------------------------------------------------------------- accounting

    def account(self) -> None:
        """Integrate paused resources and stall time up to now."""
        now = float(self.now())
        dt = now - self._t
        if dt > 0:
            self._paused_int += self._paused * dt
            if not self._working and any(r.rate > 0 for r in self.resources.values()):
                self._stall_int += dt
            self._t = now

    def recount(self, p: Processor) -> None:
        n = len(p.owned) - len(p.active)
        old = self._paused_of.get(p.name, 0)
        if n != old:
            self._paused += n - old
            self._paused_of[p.name] = n

    def set_working(self, p: Processor, working: bool) -> None:
        if working == (p.name in self._working):
            return
        self.account()
        if working:
            self._working.add(p.name)
        else:
            self._working.discard(p.name)

    def settle(self) -> float:
        """Every processor and resource brought to now; the total lag now."""
        now = self.now()
        for p in self.processors.values():
            p.advance(now)
            p._sync()
        lag = 0.0
        for r in self.resources.values():
            rt = r.t
            if rt < now:
                # r.progress(now, r.hw), inlined: not processed since r.t (its processor,
                # brought to now above, did not take it in its batch)
                t0 = r.t0
                hw = r.hw
                rl = (r.rate * (now - t0) if now > t0 else 0.0) - hw
                if rl < 0:
                    rl = 0.0
                r.lag_int += lag_area(r.rate, t0, hw, rt, now, hw, hw)
                r.t = now
                r.lag = rl
                lag += rl
            else:
                lag += r.lag
        self.account()
        self.lag_now = lag
        if self.on_lag is not None:
            self.on_lag(lag)
        return lag

    def sample_lag(self) -> float:
        """The lag now, for its peak (sampled where it may stop growing). At one instant the
        lag can only fall (processing), never rise, so one sample per instant is enough: an
        assignment of many partitions samples once, not once per partition."""
        now = self.now()
        if self._sampled_at == now:
            return self.lag_now
        self._sampled_at = now
        # The lag of every resource now, read without bringing members that keep up to now
        # (their positions and integrals follow in closed form at their next advance: the
        # integral does not depend on where samples fall): a member that keeps up past the
        # fetch horizon of all its resources has a constant lag (its production during
        # ``fetch_latency_ms``), kept until its resources change; members in a batch are
        # advanced and their resources read; then the resources nobody processes.
        fetched = now - self.fetch_latency_ms
        active_in = self.active_in
        lag = 0.0
        for p in self.processors.values():
            if p.stream:
                c = p.stream_lag
                if c is not None and c[0] == p._p_version:
                    lag += c[1]
                    continue
                p._sync()
                v = 0.0
                steady = True
                grp = p._grp or _NO_GROUP  # (in one state: the first's lag is the others')
                grl: float | None = None
                for r in p._ares:
                    if active_in.get(r) is not p:
                        continue
                    ing = r in grp
                    if ing and grl is not None:
                        if grl > 0:
                            v += grl
                        continue
                    t0 = r.t0
                    hw = r.hw
                    rate = r.rate
                    if fetched > t0:
                        q = rate * (fetched - t0)
                        if q > r.cap:  # (``retry``: standing at a poison record)
                            q = r.cap
                            steady = False
                        if q >= hw:
                            hw = q
                        else:
                            steady = False
                    else:
                        steady = False
                    rl = (rate * (now - t0) if now > t0 else 0.0) - hw
                    if rl > 0:
                        v += rl
                    if ing:
                        grl = rl
                if steady:
                    p.stream_lag = (p._p_version, v)
                lag += v
            else:
                if not self.shared and p.batch is not None and now < p.batch_end:
                    got = _batch_lag(p, now)
                    if got is not None:
                        lag += got
                        continue
                p.advance(now)
                grp = p._grp or _NO_GROUP
                grl = None
                for r in p._ares:
                    if active_in.get(r) is p:
                        ing = r in grp
                        if ing and grl is not None:
                            if grl > 0:
                                lag += grl
                            continue
                        t0 = r.t0
                        rl = (r.rate * (now - t0) if now > t0 else 0.0) - r.hw
                        if rl > 0:
                            lag += rl
                        if ing:
                            grl = rl
        for r in self.idle:
            t0 = r.t0
            rl = (r.rate * (now - t0) if now > t0 else 0.0) - r.hw
            if rl > 0:
                lag += rl
        self.account()
        self.lag_now = lag
        if self.on_lag is not None:
            self.on_lag(lag)
        return lag

    def poison_summary(self) -> dict[str, int]:
        """What the poison records did (empty without any): ``dead-letter``, the distinct poison
        records skipped (below each resource's highest position) and the skips in batches (a
        record skipped again after a rebalance counts again; a member that keeps up skips
        uncounted); ``retry``, the partitions standing at a poison record."""
        poison = self.poison
        if poison is None:
            return {}
        if poison.policy == "retry":
            return {"poison_blocked_partitions": sum(
                1 for r in self.resources.values() if r.hw >= r.cap)}
        return {"poison_skipped": sum(poison.count(r.key, 0.0, r.hw)
                                      for r in self.resources.values()),
                "poison_skips_in_batches": self.poison_skips}

    def totals(self) -> dict[str, float]:
        """Cumulative metrics now (windows subtract the values at their start)."""
        self.settle()
        return {"records_processed": self.processed,
                "lag_record_s": sum(r.lag_int for r in self.resources.values()) / 1000.0
                + self._gone_lag_int,
                "stall_ms": self._stall_int,
                "paused_partition_s": self._paused_int / 1000.0,
                "records_reprocessed": self.reprocessed,
                "task_restarts": float(self.task_restarts)}


#: The members' lateness in a disturbance window (``lab.runs``'s columns; see
#: :func:`lateness_figures`).
LATENESS_METRICS: tuple[str, ...] = ("lateness_n", "lateness_p50_ms", "lateness_max_ms")


def lateness_figures(samples: Iterable[float]) -> dict[str, float]:
    """A window's lateness (:meth:`WorkModel.late`, ms): how many times a member met the group
    protocol, the median (the mean of the two middle values for an even count) and the maximum;
    empty without any."""
    vals = sorted(samples)
    n = len(vals)
    if not n:
        return {}
    p50 = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return {"lateness_n": float(n), "lateness_p50_ms": p50, "lateness_max_ms": vals[-1]}

#: The work metrics of a disturbance window and a run (``lab.runs``'s columns).
WORK_METRICS: tuple[str, ...] = ("records_processed", "lag_peak", "lag_record_s", "stall_ms",
                                 "paused_partition_s", "records_reprocessed", "task_restarts")


def window_metrics(start: Mapping[str, float], end: Mapping[str, float],
                   lag_peak: float) -> dict[str, int | float]:
    """What a window reports: the difference of the cumulative metrics, and its lag peak."""
    out: dict[str, int | float] = {}
    for k in WORK_METRICS:
        if k == "lag_peak":
            out[k] = round(lag_peak)
        elif k in ("lag_record_s", "paused_partition_s"):
            out[k] = round(end[k] - start[k], 3)
        else:
            out[k] = round(end[k] - start[k])
    return out


__all__ = ["DEFAULT_WORKLOAD", "IDLE", "LATENESS_METRICS", "POISON_POLICIES", "WORK_METRICS", "Dist",
           "PoisonRecords", "Processor", "Resource", "WorkModel", "Workload", "WorkloadError",
           "is_poison", "lateness_figures", "parse_workload", "window_metrics"]
