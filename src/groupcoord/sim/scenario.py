"""Scenarios: a group, its topics, timings, network and a timeline of disturbances, as data.

A scenario is TOML (read with ``tomllib``); the named built-ins are TOML files of the
package (``sim/scenarios/NAME.toml``, :data:`BUILTINS`), and
``random`` draws a scenario from the seed (:func:`random_scenario`). Layout (every table and
key optional except where noted)::

    name = "my-scenario"
    description = "what it shows"
    end_ms = 300000              # run at least until then (default: until converged)

    [group]
    id = "g"
    members = 3                  # initial members c1..cN, joining from t=0
    join_stagger_ms = 0          # c(i) joins at (i-1) * stagger
    start_spread_ms = 0          # ... plus an offset drawn from [0, spread) with the seed
                                 # (the lab and lab calibrate: the heartbeat interval)
    static = false               # static membership (instance id = member name)
    topics = { foo = 6 }         # topic name -> partitions (the metadata image)
    subscription = ["foo"]       # default: every initial topic; or
    regex = "foo|bar"            # an RE2 regex subscription
    connectors = { a = 2 }       # Connect protocols: connector name -> task count (the
                                 # members are workers; topics are then not used)

    [coordinator]
    session_timeout_ms = 45000
    heartbeat_interval_ms = 5000
    assignment_interval_ms = 1000  # group.consumer.assignment.interval.ms (KIP-848 groups;
                                 # Kafka 4.3's default, KIP-1263; 0: a target at once)

    [member]
    rebalance_timeout_ms = 30000
    request_timeout_ms = 5000
    commit_interval_ms = 5000    # auto-commit of owned positions; 0 disables commits
    restart_delay_ms = 1000      # a process stopped by a fatal error restarts after this
    scheduled_rebalance_max_delay_ms = 30000  # Connect workers (KIP-415's delay "d")
    heartbeat_spread_ms = 0      # each join shifts a consumer's heartbeat phase by [0, spread)

    [network]
    latency = "uniform:1-10"     # fixed:MS | uniform:MIN-MAX | exponential:MEAN:MIN-MAX
    loss = 0.0                   # per-message probabilities, active until the faults stop
    response_loss = 0.0
    duplicate = 0.0
    reorder = 0.0
    ordered = true               # FIFO channels (TCP); false lets reorder break FIFO

    [workload]                   # what the members' applications do (sim/workload.py);
    records_per_s = 50           # default: this working workload; idle = true: no work
    processing_ms = 0.5          # or { dist = "exponential", mean = 0.5 } (the run's seed)
    max_poll_records = 500       # also: topic_rates, task_records_per_s, max_poll_interval_ms
                                 # (= the rebalance timeout), auto_commit_interval_ms,
                                 # commit_latency_ms, warmup_ms, task_start_ms, task_stop_ms,
                                 # metadata_max_age_ms

    [[events]]
    at_ms = 30000
    kind = "crash"               # see EVENT_KINDS
    member = "c2"                # a name, "any" (drawn from the live members), "@leader"
                                 # (the group's leader at the event's time), "@follower" or
                                 # "@owner" (a member holding a partition then, drawn from
                                 # the seed: :func:`pick_owner`)

Event kinds (:data:`EVENT_KINDS`, parameters and defaults): ``join`` (members or count),
``leave`` (member; a permanent leave, epoch -1), ``crash`` (member: no leave; a lost host or
a hung process, nothing closes), ``kill`` (member: a process kill, no leave, but its host
closes its connections: what the broker ties to a connection ends with it, for a share
consumer its share session and the records it had acquired; see :data:`EVENT_KINDS`), ``bounce``
(member, down_ms; a graceful close, epoch -2 for a static member, then a new process with a new
member id and the same instance id; ``hard = true`` crashes instead; ``after_delay_ms``: down
for the group's ``scheduled.rebalance.max.delay.ms`` plus this margin instead of ``down_ms``),
``rolling-bounce`` (interval_ms, down_ms, hard; every live member in name order), ``scale-out``
(count), ``scale-in`` (count: the newest members leave), ``slow`` (member or "all", delay_ms,
duration_ms: revocations started in the window take ``delay_ms``), ``subscribe`` (member or
"all"; topics or regex), ``add-partitions`` (topic, partitions = the new count),
``create-topic`` (topic, partitions; a deleted topic comes back under a new topic id),
``delete-topic`` (topic), ``network-partition`` (members, duration_ms: cut off),
``network-faults`` (loss, response_loss, duplicate, reorder, duration_ms), and
``coordinator-failover`` (load_ms: the shard is dropped, rebuilt from its log, and serves again
after ``load_ms``).

Connect protocols (:data:`CONNECT_EVENT_KINDS`) add ``add-connector`` (connector, tasks),
``remove-connector`` (connector) and ``update-tasks`` (connector, tasks = the new count); the
member events above apply to workers. The built-ins ``kip415-*`` are KIP-415's scenarios
("Deferred Resolution of Imbalance under Different Rebalancing Scenarios").

``[draw]`` (``down_ms = [low, high]``, ``interval_ms = [low, high]``): the bounces' downtime
and a rolling bounce's spacing drawn per seed, uniform in whole ms (:func:`with_draws`; the
lab draws them for each run, ``lab.runs``), instead of the events' written values.

"Faults stop" (invariant I5) at the scenario's *quiet time*: the end of the last disturbance
(an event's time plus its duration). The ``[network]`` fault probabilities apply until then.
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from groupcoord.sim.network import NO_FAULTS, Latency, NetworkFaults
from groupcoord.sim.workload import (
    DEFAULT_WORKLOAD,
    IDLE,
    Dist,
    Workload,
    WorkloadError,
    parse_workload,
)

DEFAULT_LATENCY = Latency()

# --------------------------------------------------------------------------- model

#: kind -> {parameter: default}; ``...`` marks a required parameter.
EVENT_KINDS: dict[str, dict[str, Any]] = {
    "join": {"members": None, "count": 1},
    "leave": {"member": ...},
    "crash": {"member": ...},
    # A process kill (SIGKILL, an OOM kill, a container stopped): no leave, as a crash, but the
    # host's kernel closes the process's connections, so the broker sees them close. Group
    # membership (KIP-848 consumer groups, classic groups, share groups) is not tied to a
    # connection: it waits for the session timeout as after a crash. A share consumer's share
    # session is (KIP-932; Kafka 4.1+'s ShareSessionCache connection-disconnect listener: the
    # session is removed and the member's acquired records released at once).
    "kill": {"member": ...},
    "bounce": {"member": ..., "down_ms": 5_000, "hard": False, "after_delay_ms": None},
    "rolling-bounce": {"interval_ms": 10_000, "down_ms": 3_000, "hard": False},
    "scale-out": {"count": 1},
    "scale-in": {"count": 1},
    "slow": {"member": ..., "delay_ms": 40_000, "duration_ms": 60_000},  # member may be "all"
    "subscribe": {"member": ..., "topics": None, "regex": None},
    "add-partitions": {"topic": ..., "partitions": ...},
    "create-topic": {"topic": ..., "partitions": ...},
    "delete-topic": {"topic": ...},
    "network-partition": {"members": ..., "duration_ms": 10_000},
    "network-faults": {"loss": 0.0, "response_loss": 0.0, "duplicate": 0.0, "reorder": 0.0,
                       "duration_ms": 30_000},
    "coordinator-failover": {"load_ms": 1_000},
}

#: The events of groups of Connect workers (a scenario with ``connectors``).
CONNECT_EVENT_KINDS: dict[str, dict[str, Any]] = {
    "add-connector": {"connector": ..., "tasks": 1},
    "remove-connector": {"connector": ...},
    "update-tasks": {"connector": ..., "tasks": ...},
}

#: Every kind a scenario may use.
ALL_EVENT_KINDS: dict[str, dict[str, Any]] = {**EVENT_KINDS, **CONNECT_EVENT_KINDS}

#: KIP-415's default ``scheduled.rebalance.max.delay.ms`` is 5 minutes; scenarios use less.
DEFAULT_MAX_DELAY_MS = 30_000


class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the file and the field."""


@dataclass(slots=True, frozen=True)
class Event:
    at_ms: int
    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.params[name]

    def duration_ms(self, members: int) -> int:
        """How long the disturbance lasts after ``at_ms`` (for the quiet time)."""
        p = self.params
        k = self.kind
        if k == "bounce":
            return int(p["down_ms"])
        if k == "rolling-bounce":
            return max(members - 1, 0) * int(p["interval_ms"]) + int(p["down_ms"])
        if k == "slow":
            return int(p["duration_ms"]) + int(p["delay_ms"])
        if k in ("network-partition", "network-faults"):
            return int(p["duration_ms"])
        if k == "coordinator-failover":
            return int(p["load_ms"])
        return 0

    def settle_ms(self, members: int) -> int:
        """When the disturbance is over for its metrics window: a ``slow`` window only slows
        revocations that happen in it, so it is over at once; the others last their duration."""
        return 0 if self.kind == "slow" else self.duration_ms(members)


@dataclass(slots=True, frozen=True)
class Scenario:
    name: str
    description: str = ""
    group_id: str = "g"
    members: int = 3
    join_stagger_ms: int = 0
    #: Initial members start at their stagger plus an offset drawn uniformly from
    #: ``[0, start_spread_ms)`` with the run's seed (:func:`start_offsets_ms`), so the
    #: members' heartbeat and metadata-refresh phases differ from run to run as real
    #: processes' do. None: 0 for ``groupcoord simulate``; the lab and ``lab calibrate``
    #: use the heartbeat interval (``lab.runs.build_scenario``).
    start_spread_ms: int | None = None
    static: bool = False
    topics: tuple[tuple[str, int], ...] = (("foo", 6),)
    subscription: tuple[str, ...] | None = None
    regex: str | None = None
    #: Connect protocols: connector name -> task count (empty: a group of consumers).
    connectors: tuple[tuple[str, int], ...] = ()
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    #: ``group.consumer.assignment.interval.ms`` of the coordinator (KIP-848 groups): Kafka
    #: 4.3's default, 1000 (KIP-1263), as the server's and the lab's field settings
    #: (``sim.settings``); 0 computes a new target assignment at once.
    assignment_interval_ms: int = 1_000
    rebalance_timeout_ms: int = 30_000
    request_timeout_ms: int = 5_000
    commit_interval_ms: int = 5_000
    restart_delay_ms: int = 1_000
    #: Connect workers' ``scheduled.rebalance.max.delay.ms`` (KIP-415).
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS
    #: How far the members' heartbeat phases spread (consumer groups, classic and KIP-848, and
    #: Connect workers on either group type):
    #: at each join a member's heartbeat timer is pushed later by an offset drawn uniformly
    #: from ``[0, heartbeat_spread_ms)`` per member and join (``sim.consumer``'s
    #: ``heartbeat_phase_ms``). 0 (the default): the Java client's ideal, every classic member
    #: restarts its timer when the JoinGroup/SyncGroup answers of one round reach it together.
    heartbeat_spread_ms: int = 0
    latency: Latency = DEFAULT_LATENCY
    faults: NetworkFaults = NO_FAULTS
    ordered: bool = True
    events: tuple[Event, ...] = ()
    end_ms: int | None = None
    #: What the members' applications do (``sim.workload``): real work unless ``idle``.
    workload: Workload = DEFAULT_WORKLOAD
    #: Where it came from: a built-in name, "random", or a file path (for the repro command).
    source: str = ""
    #: Event timings drawn per seed (the scenario's ``[draw]`` table, :func:`with_draws`):
    #: ``(parameter, low, high)``, whole ms, uniform; the events' written values stand until
    #: drawn.
    draws: tuple[tuple[str, int, int], ...] = ()
    #: What :func:`with_draws` drew: ``(parameter, value)``.
    drawn: tuple[tuple[str, int], ...] = ()

    def topics_subscribed(self) -> tuple[str, ...]:
        return self.subscription if self.subscription is not None else tuple(
            n for n, _ in self.topics)

    @property
    def resource(self) -> str:
        """What the group shares: ``tasks`` (connectors and their tasks) or ``partitions``."""
        return "tasks" if self.connectors else "partitions"

    def quiet_at_estimate(self) -> int:
        """The end of the last disturbance as planned (the initial joins included)."""
        members = self.members
        end = max(self.members - 1, 0) * self.join_stagger_ms + (self.start_spread_ms or 0)
        for e in sorted(self.events, key=lambda e: e.at_ms):
            if e.kind == "scale-out":
                members += int(e["count"])
            elif e.kind == "join":
                members += len(e["members"]) if e["members"] else int(e["count"])
            elif e.kind == "scale-in":
                members = max(members - int(e["count"]), 0)
            end = max(end, e.at_ms + e.duration_ms(members))
        return end


# --------------------------------------------------------------------------- parsing

_TOP = {"name", "description", "end_ms", "group", "coordinator", "member", "network", "events",
        "workload", "draw"}
#: The event parameters a ``[draw]`` table may draw per seed (bounce and rolling-bounce).
DRAWABLE = ("down_ms", "interval_ms")
_GROUP = {"id", "members", "join_stagger_ms", "start_spread_ms", "static", "topics", "subscription", "regex",
          "connectors"}
_COORD = {"session_timeout_ms", "heartbeat_interval_ms", "assignment_interval_ms"}
_MEMBER = {"rebalance_timeout_ms", "request_timeout_ms", "commit_interval_ms", "restart_delay_ms",
           "scheduled_rebalance_max_delay_ms", "heartbeat_spread_ms"}
_NET = {"latency", "loss", "response_loss", "duplicate", "reorder", "ordered"}


def _check_keys(where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sorted(allowed))}")


def _int(where: str, v: Any, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ScenarioError(f"{where}: expected an integer >= {minimum}, got {v!r}")
    return v


def _table(where: str, v: Any) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise ScenarioError(f"{where}: expected a table")
    return v


def parse_event(where: str, raw: Mapping[str, Any]) -> Event:
    raw = _table(where, raw)
    kind = raw.get("kind")
    if kind not in ALL_EVENT_KINDS:
        raise ScenarioError(f"{where}: kind must be one of {', '.join(sorted(ALL_EVENT_KINDS))}, "
                            f"got {kind!r}")
    at = _int(f"{where}.at_ms", raw.get("at_ms", 0))
    spec = ALL_EVENT_KINDS[kind]
    _check_keys(f"{where} ({kind})", raw, set(spec) | {"kind", "at_ms"})
    params: dict[str, Any] = {}
    for name, default in spec.items():
        if name in raw:
            params[name] = raw[name]
        elif default is ...:
            raise ScenarioError(f"{where} ({kind}): missing {name}")
        else:
            params[name] = default
    for name, v in params.items():
        if name == "after_delay_ms" and v is None:
            continue
        if name.endswith("_ms") or name in ("count", "partitions"):
            params[name] = _int(f"{where}.{name}", v, 1 if name in ("count", "partitions") else 0)
        elif name == "tasks":
            params[name] = _int(f"{where}.{name}", v, 0)
        elif name in ("loss", "response_loss", "duplicate", "reorder"):
            if not isinstance(v, int | float) or not 0 <= v <= 1:
                raise ScenarioError(f"{where}.{name}: expected a probability, got {v!r}")
            params[name] = float(v)
        elif name == "members" and v is not None:
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ScenarioError(f"{where}.members: expected a list of member names")
            params[name] = tuple(v)
        elif name == "topics" and v is not None:
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ScenarioError(f"{where}.topics: expected a list of topic names")
            params[name] = tuple(v)
        elif name in ("member", "topic", "regex", "connector") and v is not None \
                and not isinstance(v, str):
            raise ScenarioError(f"{where}.{name}: expected a string, got {v!r}")
    if kind == "subscribe" and (params["topics"] is None) == (params["regex"] is None):
        raise ScenarioError(f"{where} (subscribe): give topics or regex (exactly one)")
    if kind == "network-partition" and not params["members"]:
        raise ScenarioError(f"{where} (network-partition): members must name at least one")
    return Event(at, kind, params)


def parse_scenario(data: Mapping[str, Any], source: str = "") -> Scenario:
    where = source or "scenario"
    _check_keys(where, data, _TOP)
    name = data.get("name", Path(source).stem if source else "scenario")
    g = _table(f"{where}: [group]", data.get("group", {}))
    _check_keys(f"{where}: [group]", g, _GROUP)
    c = _table(f"{where}: [coordinator]", data.get("coordinator", {}))
    _check_keys(f"{where}: [coordinator]", c, _COORD)
    m = _table(f"{where}: [member]", data.get("member", {}))
    _check_keys(f"{where}: [member]", m, _MEMBER)
    n = _table(f"{where}: [network]", data.get("network", {}))
    _check_keys(f"{where}: [network]", n, _NET)

    kw: dict[str, Any] = {"name": str(name), "description": str(data.get("description", "")),
                          "source": source}
    if "end_ms" in data:
        kw["end_ms"] = _int(f"{where}: end_ms", data["end_ms"])
    if "id" in g:
        kw["group_id"] = str(g["id"])
    if "members" in g:
        kw["members"] = _int(f"{where}: group.members", g["members"])
    if "join_stagger_ms" in g:
        kw["join_stagger_ms"] = _int(f"{where}: group.join_stagger_ms", g["join_stagger_ms"])
    if "start_spread_ms" in g:
        kw["start_spread_ms"] = _int(f"{where}: group.start_spread_ms", g["start_spread_ms"])
    if "static" in g:
        kw["static"] = bool(g["static"])
    if "topics" in g:
        topics = _table(f"{where}: group.topics", g["topics"])
        kw["topics"] = tuple((str(t), _int(f"{where}: group.topics.{t}", p, 1))
                             for t, p in topics.items())
    if "subscription" in g:
        kw["subscription"] = tuple(str(t) for t in g["subscription"])
    if "regex" in g:
        kw["regex"] = str(g["regex"])
    if "connectors" in g:
        connectors = _table(f"{where}: group.connectors", g["connectors"])
        kw["connectors"] = tuple((str(c), _int(f"{where}: group.connectors.{c}", n, 0))
                                 for c, n in connectors.items())
    if "subscription" in g and "regex" in g:
        raise ScenarioError(f"{where}: [group] takes subscription or regex, not both")
    for key in _COORD:
        if key in c:
            kw[key] = _int(f"{where}: coordinator.{key}", c[key],
                           0 if key == "assignment_interval_ms" else 1)
    for key in _MEMBER:
        if key in m:
            field_name = "max_delay_ms" if key == "scheduled_rebalance_max_delay_ms" else key
            kw[field_name] = _int(f"{where}: member.{key}", m[key], 0)
    if "latency" in n:
        lat = n["latency"]
        try:
            if isinstance(lat, str):
                kw["latency"] = Latency.parse(lat)
            else:
                lat = _table(f"{where}: network.latency", lat)
                kw["latency"] = Latency(str(lat.get("dist", "uniform")), int(lat.get("min_ms", 1)),
                                        int(lat.get("max_ms", 10)), int(lat.get("mean_ms", 5)))
        except ValueError as e:
            raise ScenarioError(f"{where}: network.latency: {e}") from None
    try:
        kw["faults"] = NetworkFaults(**{k: float(n[k]) for k in
                                        ("loss", "response_loss", "duplicate", "reorder") if k in n})
    except ValueError as e:
        raise ScenarioError(f"{where}: [network]: {e}") from None
    if "ordered" in n:
        kw["ordered"] = bool(n["ordered"])
    raw_events = data.get("events", [])
    if not isinstance(raw_events, list):
        raise ScenarioError(f"{where}: events must be an array of tables ([[events]])")
    kw["events"] = tuple(sorted((parse_event(f"{where}: events[{i}]", e)
                                 for i, e in enumerate(raw_events)), key=lambda e: e.at_ms))
    draw = _table(f"{where}: [draw]", data.get("draw", {}))
    draws = []
    for key, rng in draw.items():
        if key not in DRAWABLE:
            raise ScenarioError(f"{where}: [draw] draws {', '.join(DRAWABLE)}, got {key!r}")
        if not (isinstance(rng, list) and len(rng) == 2):
            raise ScenarioError(f"{where}: draw.{key}: expected [low, high] in ms, got {rng!r}")
        lo, hi = (_int(f"{where}: draw.{key}", v) for v in rng)
        if lo > hi:
            raise ScenarioError(f"{where}: draw.{key}: low {lo} is above high {hi}")
        draws.append((str(key), lo, hi))
    kw["draws"] = tuple(draws)
    sc = Scenario(**kw)
    if "workload" in data:
        try:
            sc = with_workload(sc, parse_workload(f"{where}: workload", data["workload"]))
        except WorkloadError as e:
            raise ScenarioError(str(e)) from None
    if sc.heartbeat_interval_ms >= sc.session_timeout_ms:
        raise ScenarioError(f"{where}: heartbeat_interval_ms must be < session_timeout_ms")
    return with_delay_timings(sc)


def with_delay_timings(sc: Scenario) -> Scenario:
    """The scenario with every ``bounce`` that gives ``after_delay_ms`` down for the group's
    ``scheduled.rebalance.max.delay.ms`` (KIP-415's delay) plus that margin: a worker that
    returns after the delay expired does so whatever the delay is. Called again whenever the
    delay changes (``sim.settings.with_field_settings``)."""
    if not any(e.kind == "bounce" and e.params.get("after_delay_ms") is not None
               for e in sc.events):
        return sc
    events = tuple(
        replace(e, params={**e.params, "down_ms": sc.max_delay_ms + int(e["after_delay_ms"])})
        if e.kind == "bounce" and e.params.get("after_delay_ms") is not None else e
        for e in sc.events)
    return replace(sc, events=events)


def with_draws(sc: Scenario, seed: int) -> Scenario:
    """The scenario with its ``[draw]`` parameters drawn from the seed: each drawn parameter
    (``down_ms``, ``interval_ms``) one whole-ms value uniform in its range per run, set on
    every bounce and rolling-bounce event that has it, so that a disturbance's timing is no
    fixed multiple of the heartbeat across the seeds (a run and its paired control share the
    scenario, hence the draw). ``drawn`` keeps the values (the lab's runs table prints them)."""
    if not sc.draws:
        return sc
    drawn = tuple((key, random.Random(f"event-draw/{seed}/{key}").randint(lo, hi))
                  for key, lo, hi in sc.draws)
    values = dict(drawn)
    events = tuple(replace(e, params={**e.params, **{k: v for k, v in values.items()
                                                      if k in e.params}})
                   if e.kind in ("bounce", "rolling-bounce") else e for e in sc.events)
    return replace(sc, events=events, drawn=drawn)


def pick_owner(owners: Iterable[str], seed: int, at_ms: int) -> str | None:
    """The member an ``@owner`` event names: one of ``owners`` (the live members holding a
    partition at the event's time), drawn from the seed and the event's time on its own
    stream, so that every protocol of a run picks the same way from the same owners and the
    draw does not depend on what else the run drew before. None when nobody holds one."""
    names = sorted(set(owners))
    if not names:
        return None
    return random.Random(f"owner:{seed}:{at_ms}").choice(names)


def start_offsets_ms(sc: Scenario, seed: int) -> list[int]:
    """When each initial member starts (ms): ``c(i)`` at ``(i-1) * join_stagger_ms`` plus an
    offset drawn uniformly from ``[0, start_spread_ms)`` (its own stream of the seed: the
    simulator and the wire harness draw the same offsets for the same seed).

    Real processes never start in the same millisecond: where they start sets the phase of
    their heartbeats (and of a classic member's metadata refresh), and a disturbance lands
    between them wherever it does. With every member at 0 the simulator would put every
    heartbeat of every run in the same place relative to the scenario's events and take one
    branch of each race deterministically; drawn offsets make runs over several seeds a
    distribution to compare with repeated real runs."""
    spread = sc.start_spread_ms or 0
    rng = random.Random(f"start:{seed}")
    return [i * sc.join_stagger_ms + (rng.randrange(spread) if spread > 0 else 0)
            for i in range(sc.members)]


def load_scenario(name_or_path: str, seed: int = 0) -> Scenario:
    """A built-in by name, ``random`` (drawn from ``seed``), or a TOML file."""
    if name_or_path == "random":
        return random_scenario(seed)
    if name_or_path in BUILTINS:
        return parse_scenario(tomllib.loads(BUILTINS[name_or_path]), source=name_or_path)
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            text = path.read_text()
        except OSError as e:
            raise ScenarioError(f"cannot read scenario {name_or_path}: {e.strerror}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{name_or_path}: not valid TOML: {e}") from None
        return parse_scenario(data, source=str(path))
    raise ScenarioError(f"unknown scenario {name_or_path!r}: use a file.toml, 'random' or one of "
                        f"{', '.join(sorted(BUILTINS))}")


# --------------------------------------------------------------------------- built-ins


def _load_builtins() -> dict[str, str]:
    """The built-in scenarios, name -> TOML text: one file each in this package's
    ``scenarios/`` folder (package data, so a wheel carries them), in name order."""
    folder = resources.files("groupcoord.sim") / "scenarios"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)
    return {f.name.removesuffix(".toml"): f.read_text(encoding="utf-8") for f in files}


#: The built-in scenarios (``sim/scenarios/NAME.toml``), name -> TOML text.
BUILTINS: dict[str, str] = _load_builtins()

CASE_STUDIES = tuple(sorted(n for n in BUILTINS if n.startswith("case-study-")))
KIP415_SCENARIOS = tuple(sorted(n for n in BUILTINS if n.startswith("kip415-")))


def builtins_for(resource: str) -> tuple[str, ...]:
    """The built-in scenarios a protocol sharing ``resource`` runs as written: every one for
    Connect workers (``tasks``: a scenario with topics gets a connector per topic); for
    consumers (``partitions``) those without connectors or connector events (the others run
    through :func:`connectors_as_topics`)."""
    if resource == "tasks":
        return tuple(sorted(BUILTINS))
    out = []
    for name in sorted(BUILTINS):
        sc = load_scenario(name)
        if not sc.connectors and all(e.kind in EVENT_KINDS for e in sc.events):
            out.append(name)
    return tuple(out)


def connectors_as_topics(sc: Scenario) -> Scenario:
    """A Connect scenario for consumer protocols, so that every protocol runs every scenario
    (the lab compares them on the same disturbances): a connector with ``n`` tasks becomes a
    topic of ``n + 1`` partitions (the connector is a unit of work too, so both kinds of group
    share as many resources), subscribed by every member; ``add-connector`` creates the topic,
    ``remove-connector`` deletes it and ``update-tasks`` adds partitions (a topic cannot
    shrink: fewer tasks change nothing). A scenario without connectors is returned as is."""
    if not sc.connectors and not any(e.kind in CONNECT_EVENT_KINDS for e in sc.events):
        return sc
    sizes = {c: n + 1 for c, n in sc.connectors}
    names = list(sizes)
    events: list[Event] = []
    for e in sc.events:
        if e.kind == "add-connector":
            c, n = str(e["connector"]), int(e["tasks"]) + 1
            events.append(Event(e.at_ms, "create-topic", {"topic": c, "partitions": n}))
            sizes[c] = n
            names.append(c)
        elif e.kind == "remove-connector":
            events.append(Event(e.at_ms, "delete-topic", {"topic": str(e["connector"])}))
        elif e.kind == "update-tasks":
            c, n = str(e["connector"]), int(e["tasks"]) + 1
            if n > sizes.get(c, 0):
                events.append(Event(e.at_ms, "add-partitions", {"topic": c, "partitions": n}))
                sizes[c] = n
        else:
            events.append(e)
    topics = tuple((c, n + 1) for c, n in sc.connectors)
    return replace(sc, topics=topics or sc.topics, connectors=(), regex=None,
                   subscription=tuple(dict.fromkeys(names)) if names else sc.subscription,
                   events=tuple(events))


# --------------------------------------------------------------------------- random

#: Disturbance kinds a random scenario draws from, with weights.
RANDOM_KINDS: tuple[tuple[str, int], ...] = (
    ("crash", 2), ("leave", 2), ("bounce", 3), ("rolling-bounce", 1), ("scale-out", 2),
    ("scale-in", 1), ("slow", 2), ("subscribe", 1), ("add-partitions", 2), ("create-topic", 1),
    ("network-partition", 2), ("network-faults", 2), ("coordinator-failover", 2), ("join", 1),
    ("delete-topic", 1),
)


#: What a random scenario of Connect workers draws instead of the topic events.
RANDOM_CONNECT_KINDS: tuple[tuple[str, int], ...] = (
    ("crash", 2), ("leave", 2), ("bounce", 4), ("rolling-bounce", 1), ("scale-out", 2),
    ("scale-in", 1), ("slow", 2), ("network-partition", 2), ("network-faults", 2),
    ("coordinator-failover", 2), ("join", 1), ("add-connector", 2), ("remove-connector", 1),
    ("update-tasks", 2),
)


def random_scenario(seed: int, *, max_members: int = 7, max_events: int = 5,
                    horizon_ms: int = 120_000, resource: str = "partitions") -> Scenario:
    """A random group and fault schedule drawn from ``seed`` (its own stream of it).

    ``resource = "tasks"`` draws a group of Connect workers: connectors instead of topics and
    connector events instead of topic and subscription events (its own stream of the seed)."""
    if resource not in ("partitions", "tasks"):
        raise ValueError(f"resource must be partitions or tasks, got {resource!r}")
    connect = resource == "tasks"
    rng = random.Random(f"scenario:{seed}" if not connect else f"scenario:{seed}:tasks")
    members = rng.randint(1, max_members)
    ntopics = rng.randint(1, 3)
    topics = tuple((f"t{i}", rng.randint(1, 12)) for i in range(ntopics))
    static = rng.random() < 0.3
    regex = "t.*" if rng.random() < 0.25 else None
    latency = Latency("uniform", 1, rng.choice((5, 10, 20, 50)))
    if rng.random() < 0.5:
        faults = NetworkFaults(loss=rng.choice((0.0, 0.01, 0.03)),
                               response_loss=rng.choice((0.0, 0.02, 0.05)),
                               duplicate=rng.choice((0.0, 0.02, 0.05)),
                               reorder=rng.choice((0.0, 0.02, 0.05)))
    else:
        faults = NetworkFaults()
    names = [f"c{i}" for i in range(1, members + 1)]
    next_topic = ntopics
    deleted: list[str] = []
    next_member = members + 1
    events: list[Event] = []
    connectors: dict[str, int] = {}
    max_delay = DEFAULT_MAX_DELAY_MS
    if connect:
        connectors = {f"k{i}": rng.randint(0, 6) for i in range(rng.randint(1, 3))}
        max_delay = rng.choice((0, 5_000, 30_000))
        regex = None
        static = False  # Connect has no static membership (KIP-814, NOTES.md)
    next_connector = len(connectors)
    kinds = [k for k, w in (RANDOM_CONNECT_KINDS if connect else RANDOM_KINDS)
             for _ in range(w)]
    t = rng.randint(5_000, 30_000)
    for _ in range(rng.randint(1, max_events)):
        kind = rng.choice(kinds)
        live = names or ["c1"]
        p: dict[str, Any]
        if kind in ("crash", "leave"):
            p = {"member": rng.choice([*live, "any"])}
            # half the crashes are process kills (the connection closes), drawn on a stream
            # of their own so that every other draw of the seed stays what it was
            if kind == "crash" and random.Random(f"kill:{seed}:{len(events)}").random() < 0.5:
                kind = "kill"
        elif kind == "bounce":
            p = {"member": rng.choice([*live, "any"]), "down_ms": rng.randint(100, 20_000),
                 "hard": rng.random() < 0.3}
        elif kind == "rolling-bounce":
            p = {"interval_ms": rng.randint(2_000, 15_000), "down_ms": rng.randint(100, 5_000),
                 "hard": rng.random() < 0.2}
        elif kind == "scale-out":
            k = rng.randint(1, 3)
            p = {"count": k}
            names += [f"c{i}" for i in range(next_member, next_member + k)]
            next_member += k
        elif kind == "join":
            p = {"members": (f"c{next_member}",), "count": 1}
            names.append(f"c{next_member}")
            next_member += 1
        elif kind == "scale-in":
            p = {"count": rng.randint(1, 2)}
        elif kind == "slow":
            p = {"member": rng.choice([*live, "any"]), "delay_ms": rng.choice((5_000, 40_000)),
                 "duration_ms": rng.randint(5_000, 40_000)}
        elif kind == "subscribe":
            if rng.random() < 0.5:
                chosen = sorted({f"t{rng.randrange(next_topic)}" for _ in range(2)})
                p = {"member": rng.choice([*live, "all"]), "topics": tuple(chosen), "regex": None}
            else:
                p = {"member": rng.choice([*live, "all"]), "topics": None, "regex": "t.*"}
        elif kind == "add-partitions":
            i = rng.randrange(next_topic)
            p = {"topic": f"t{i}", "partitions": rng.randint(2, 16)}
        elif kind == "create-topic":
            if deleted and rng.random() < 0.5:  # recreate a deleted topic: a new topic id
                p = {"topic": deleted.pop(rng.randrange(len(deleted))),
                     "partitions": rng.randint(1, 8)}
            else:
                p = {"topic": f"t{next_topic}", "partitions": rng.randint(1, 8)}
                next_topic += 1
        elif kind == "delete-topic":
            name = f"t{rng.randrange(next_topic)}"
            p = {"topic": name}
            if name not in deleted:
                deleted.append(name)
        elif kind == "network-partition":
            k = rng.randint(1, max(1, len(live) // 2))
            p = {"members": tuple(sorted(rng.sample(live, min(k, len(live))))),
                 "duration_ms": rng.choice((3_000, 10_000, 60_000))}
        elif kind == "network-faults":
            p = {"loss": rng.choice((0.0, 0.05, 0.1)), "response_loss": rng.choice((0.0, 0.1)),
                 "duplicate": rng.choice((0.0, 0.05)), "reorder": rng.choice((0.0, 0.05)),
                 "duration_ms": rng.randint(5_000, 40_000)}
        elif kind == "add-connector":
            p = {"connector": f"k{next_connector}", "tasks": rng.randint(0, 8)}
            next_connector += 1
        elif kind in ("remove-connector", "update-tasks"):
            p = {"connector": f"k{rng.randrange(next_connector)}", "tasks": rng.randint(0, 8)}
        else:  # coordinator-failover
            p = {"load_ms": rng.choice((100, 1_000, 3_000))}
        spec = ALL_EVENT_KINDS[kind]
        params = {k: p.get(k, v) for k, v in spec.items()}
        events.append(Event(t, kind, params))
        t += rng.randint(0, horizon_ms // max_events)
    return Scenario(
        name="random", description=f"random scenario of seed {seed}",
        members=members, join_stagger_ms=rng.choice((0, 0, 500, 3_000)), static=static,
        topics=topics, regex=regex, latency=latency, faults=faults,
        commit_interval_ms=rng.choice((0, 5_000)), events=tuple(events), source="random",
        connectors=tuple(connectors.items()), max_delay_ms=max_delay,
        workload=random_workload(seed))


def with_overrides(sc: Scenario, **changes: Any) -> Scenario:
    return replace(sc, **changes)


def with_workload(sc: Scenario, wl: Workload) -> Scenario:
    """The scenario with another workload; a workload's ``max_poll_interval_ms`` is the
    members' rebalance timeout (the Java consumer sends ``max.poll.interval.ms`` as it)."""
    changes: dict[str, Any] = {"workload": wl}
    if wl.max_poll_interval_ms is not None:
        changes["rebalance_timeout_ms"] = wl.max_poll_interval_ms
    if wl.auto_commit_interval_ms is not None:
        changes["commit_interval_ms"] = wl.auto_commit_interval_ms
    return replace(sc, **changes)


def random_workload(seed: int) -> Workload:
    """A workload drawn from ``seed`` (its own stream): idle a quarter of the time, else
    rates, processing times, batch sizes, commit latencies, warm-ups, task start and stop
    times and metadata refreshes that keep a batch well within the rebalance timeout."""
    rng = random.Random(f"workload:{seed}")
    if rng.random() < 0.25:
        return IDLE
    mean = rng.choice((0.0, 0.1, 0.5, 2.0))
    kind = rng.choice(("fixed", "exponential", "uniform"))
    dist = Dist("uniform", mean, 0.0, 2 * mean) if kind == "uniform" else Dist(kind, mean)
    return Workload(records_per_s=rng.choice((0.0, 10.0, 50.0, 200.0)),
                    task_records_per_s=rng.choice((0.0, 10.0, 100.0)),
                    max_poll_records=rng.choice((50, 100, 500)), processing_ms=dist,
                    commit_latency_ms=rng.choice((0, 5, 50)),
                    warmup_ms=rng.choice((0, 0, 2_000)),
                    task_start_ms=rng.choice((0, 500, 2_000)),
                    task_stop_ms=rng.choice((0, 500, 2_000)),
                    metadata_max_age_ms=rng.choice((0, 10_000, 60_000)))
