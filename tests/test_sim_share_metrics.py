"""The share comparison's metrics with one definition for share groups (KIP-932) and consumer
groups (KIP-848), on small deterministic cases (``sim/share.py``'s module docstring):

- time to converge: until every live member heartbeated its target assignment, a bounced
  member's restart included (KIP-848 "Reconciliation", the consumer groups' rule);
- assignment changes: a partition started by a process that is not among its last holders;
- partitions stopped (downtime): partition·s without any live member that fetches them;
- records processed twice: a record handed to an application again after it was once handed
  to one (a lock-expiry or RELEASE redelivery; a consumer group's uncommitted records processed
  again after a crash).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.sim.runner import build_simulation
from groupcoord.sim.share import UNPROCESSED, ShareSettings, ShareSimulation
from tests.sim_support import ok

SHARE, KIP848 = "share:simple", "consumer:uniform"


def _scenario(tmp_path: Path, name: str, members: int, partitions: int, event: str,
              rate: int = 20, processing: float = 5.0) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[group]\nmembers = {members}\n'
                    f'topics = {{ foo = {partitions} }}\n'
                    f'[workload]\nrecords_per_s = {rate}\nprocessing_ms = {processing}\n'
                    f'[[events]]\nat_ms = 20000\n{event}\n')
    return str(path)


def _window(protocol: str, scenario: str, seed: int = 1,
            share: ShareSettings | None = None) -> dict[str, Any]:
    sim = build_simulation(scenario, seed, protocol)
    if share is not None:
        assert isinstance(sim, ShareSimulation)
        sim.settings = share
    r = ok(sim.run())
    return next(d for d in r.disturbances if d["disturbance"] != "initial-join")


BOUNCE = 'kind = "bounce"\nmember = "c2"\ndown_ms = 10000'


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), members=st.sampled_from([4, 12]))
def test_a_bounce_converges_once_the_restarted_member_heartbeats_its_assignment(
        tmp_path_factory: Any, seed: int, members: int) -> None:
    """Counted from the leave: the restart delay (10 s), then the join and the heartbeats that
    carry the new target to every member; no longer converged the instant the others had
    their assignment without the bounced member (the window said 10 s, the restart delay)."""
    path = _scenario(tmp_path_factory.mktemp("b"), "bounce", members, 4, BOUNCE)
    share = _window(SHARE, path, seed)
    assert share["converged"]
    assert share["time_to_converge_ms"] > 10_000  # the restart and its join are inside it
    assert share["time_to_converge_ms"] <= 10_000 + 2 * 5_000 + 1_000  # and a heartbeat round
    assert share["group_epoch_bumps"] == 2  # the leave and the join: both in the window
    kip848 = _window(KIP848, path, seed)
    # the same rule: within one heartbeat interval of the consumer group's
    assert abs(share["time_to_converge_ms"] - kip848["time_to_converge_ms"]) <= 5_000


def test_a_bounce_at_one_member_per_partition_changes_two_assignments_in_both(
        tmp_path: Path) -> None:
    """c2's partition goes to another member (one change), then back to the restarted c2
    (a second: another process had started it in between); the same count in both groups,
    and in both the partition is stopped between c2's leave and the next member's start."""
    path = _scenario(tmp_path, "bounce4", 4, 4, BOUNCE)
    share, kip848 = _window(SHARE, path), _window(KIP848, path)
    assert share["resources_moved"] == kip848["resources_moved"] == 2
    assert 0 < share["resource_downtime_ms"] < 10_000
    assert 0 < kip848["resource_downtime_ms"] < 10_000


def test_a_share_member_that_leaves_stops_no_partition_its_co_members_fetch(
        tmp_path: Path) -> None:
    """Three members per partition: the other two go on fetching c2's partition, so it is never
    stopped; giving it back to the restarted c2, its last holder, is no change either way."""
    path = _scenario(tmp_path, "bounce12", 12, 4, BOUNCE)
    share = _window(SHARE, path)
    assert share["resource_downtime_ms"] == 0 and share["peak_unowned"] == 0
    assert share["resources_moved"] <= 2


def test_a_crashed_share_members_records_are_processed_twice_after_their_lock(
        tmp_path: Path) -> None:
    """A busy member crashes with a batch in hand: its records are delivered to another
    member once their lock expires, each counted once as processed twice (never more than the
    redeliveries); without the crash, none is."""
    crash = _scenario(tmp_path, "crash", 3, 3, 'kind = "crash"\nmember = "c2"',
                      rate=40, processing=20.0)
    sim = build_simulation(crash, 1, SHARE)
    assert isinstance(sim, ShareSimulation)
    sim.settings = ShareSettings(lock_duration_ms=15_000)
    s = ok(sim.run()).summary
    twice, unprocessed = s["work"]["records_reprocessed"], s["work"][UNPROCESSED]
    assert s["share_locks_expired"] > 0
    assert 0 < twice + unprocessed <= s["share_redelivered"]
    clean = _scenario(tmp_path, "slow", 3, 3, 'kind = "slow"\nmember = "c2"\ndelay_ms = 0\n'
                      'duration_ms = 1', rate=40, processing=20.0)
    assert _window(SHARE, clean)["records_reprocessed"] == 0


def test_twelve_partitions_at_twelve_members_give_each_partition_one_share_member(
        tmp_path: Path) -> None:
    """The equal-capacity cell (``lab/data/share.toml``'s ``1x12-busy``): at 12 members on 12
    partitions the share assignor gives each partition one member, as a consumer group does, so
    the protocols compare at one member working each partition."""
    path = _scenario(tmp_path, "equal", 12, 12, BOUNCE)
    sim = build_simulation(path, 3, SHARE)
    assert isinstance(sim, ShareSimulation)
    ok(sim.run())
    holders: dict[Any, int] = {}
    for p in sim.live():
        for tp in p.assigned:
            holders[tp] = holders.get(tp, 0) + 1
    assert len(holders) == 12 and set(holders.values()) == {1}


def test_a_poison_records_retries_are_not_records_processed_twice(tmp_path: Path) -> None:
    """A poison record RELEASEd after each failed attempt is redelivered up to the delivery
    limit: retries, as a consumer group's application's in place, not a record processed
    twice; a crash still counts the records its member had been handed."""
    crash = _scenario(tmp_path, "crash", 3, 3, 'kind = "crash"\nmember = "c2"',
                      rate=40, processing=20.0)
    poison = ShareSettings(lock_duration_ms=15_000, poison_rate=0.02)
    clean = ShareSettings(lock_duration_ms=15_000)
    runs = {}
    for name, settings_ in (("poison", poison), ("clean", clean)):
        sim = build_simulation(crash, 1, SHARE)
        assert isinstance(sim, ShareSimulation)
        sim.settings = settings_
        runs[name] = ok(sim.run()).summary
    assert runs["poison"]["share_redelivered"] > runs["clean"]["share_redelivered"]
    assert runs["poison"]["poison_attempts"] > 0
    twice = runs["poison"]["work"]["records_reprocessed"]
    unprocessed = runs["poison"]["work"][UNPROCESSED]
    assert twice + unprocessed > 0
    assert twice + unprocessed <= (runs["poison"]["share_redelivered"]
                                   - runs["poison"]["share_archived"])


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), scenario=st.sampled_from(["crash", "bounce", "scale-in"]),
       poison=st.sampled_from([0.0, 0.02]))
def test_records_processed_twice_are_redeliveries_of_records_once_handed(
        seed: int, scenario: str, poison: float) -> None:
    """Over seeds and built-in scenarios: every record processed twice is a redelivery (never
    more of them than redeliveries that are not a poison record's), and a partition stopped is
    never more than the partitions over the run's time."""
    sim = build_simulation(scenario, seed, SHARE)
    assert isinstance(sim, ShareSimulation)
    sim.settings = ShareSettings(lock_duration_ms=15_000, poison_rate=poison)
    r = ok(sim.run())
    s = r.summary
    parts = sim.partitions
    poison_redeliveries = sum(1 for tp, o in parts.archived if parts.is_poison(tp, o)) * (
        sim.settings.delivery_count_limit - 1)
    twice = s["work"]["records_reprocessed"]
    unprocessed = s["work"][UNPROCESSED]
    assert twice >= 0 and unprocessed >= 0
    assert twice + unprocessed <= max(0, s["share_redelivered"] - poison_redeliveries)
    # each window's split adds up to no more than the run's
    windows = [d for d in r.disturbances if UNPROCESSED in d]
    assert sum(int(d[UNPROCESSED]) for d in windows) <= unprocessed
    assert 0 <= s["resource_downtime_ms"] <= len(parts.producing) * s["sim_time_ms"]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), fraction=st.floats(0.1, 0.9))
def test_a_graceful_leave_acknowledges_the_records_its_member_processed(
        tmp_path_factory: Any, seed: int, fraction: float) -> None:
    """``KafkaShareConsumer.close()`` in explicit mode commits the pending acknowledgements
    before it closes the share session: a member that leaves in the middle of a batch has the
    records it processed accepted, and only the rest released and delivered again (before, the
    whole batch was released: up to ``max.poll.records`` records processed twice)."""
    path = _scenario(tmp_path_factory.mktemp("l"), "leave", 2, 1,
                     'kind = "slow"\nmember = "c1"\ndelay_ms = 0\nduration_ms = 1', rate=400,
                     processing=4.0)
    sim = build_simulation(path, seed, SHARE)
    assert isinstance(sim, ShareSimulation)
    left: dict[str, Any] = {}
    fetched = sim._fetched

    def hook(arg: Any) -> None:
        p, got = arg[0], arg[3]
        if left.get("at") is not None and sim.now >= left["at"]:
            again.update((a.tp, a.offset) for a in got)
        fetched(arg)
        if not left and len(p.batch) >= 20:  # the start-up backlog: a large batch in hand
            k = max(1, int(len(p.batch) * fraction))
            assert p.busy_since is not None
            at = p.busy_since + math.floor(p.batch_ends[k - 1])
            if k < len(p.batch) and p.busy_since + p.batch_ends[k] <= at + 1:
                return  # the next record ends within the same millisecond: take a later batch
            left.update(at=at, done={(a.tp, a.offset) for a in p.batch[:k]},
                        rest={(a.tp, a.offset) for a in p.batch[k:]})
            sim.at(max(at, sim.now), lambda _: sim.leave(p) if p.alive else None)

    again: set[tuple[Any, int]] = set()
    sim._fetched = hook  # type: ignore[method-assign]
    r = ok(sim.run())
    assert left, "no batch of 20 records or more in hand"
    # the processed records were accepted with the close, never delivered again; the rest were
    assert not again & left["done"]
    assert left["rest"] <= again
    # the rest was handed out and never processed: not processed twice, counted apart
    assert r.summary["work"]["records_reprocessed"] == 0
    assert r.summary["work"][UNPROCESSED] == len(left["rest"])


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), event=st.sampled_from(['kind = "crash"\nmember = "c2"',
                                                          BOUNCE]))
def test_the_brokers_share_lag_is_never_below_the_processed_lag(
        tmp_path_factory: Any, seed: int, event: str) -> None:
    """The broker's share lag (end offset - share-partition start offset, KIP-932) counts the
    records in flight and those acknowledged above the start offset too: in every window its
    peak is at least the processed-based lag's, and a crash that leaves records locked raises
    it above."""
    path = _scenario(tmp_path_factory.mktemp("s"), "lag", 2, 2, event, rate=40,
                     processing=10.0)
    r = ok(build_simulation(path, seed, SHARE).run())
    peaks = {(w["disturbance"], w["at_ms"]): w["peak"] for w in r.summary["share_lag_peaks"]}
    for d in r.disturbances:
        got = peaks.get((d["disturbance"], d["at_ms"]))
        assert got is not None, d["disturbance"]
        assert got >= d["lag_peak"]
