"""Poison records in the simulator's workload (``sim/workload.py``, "Poison records"): the same
records poison for consumer groups and share groups (KIP-932) of one run; a consumer group's
application dead-letters one after ``poison_attempts`` attempts (the default) or retries it
forever (``poison_policy = "retry"``), blocking its partition."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.share import ShareSimulation
from groupcoord.sim.workload import (
    PoisonRecords,
    WorkloadError,
    is_poison,
    parse_workload,
)
from tests.sim_support import ok

BASE = {"records_per_s": 60, "processing_ms": {"dist": "exponential", "mean": 10},
        "max_poll_records": 100}


def _scenario(tmp_path: Path, members: int = 3, partitions: int = 3, end_ms: int = 60_000) -> str:
    path = tmp_path / "poison.toml"
    path.write_text(f'name = "poison"\nend_ms = {end_ms}\n[group]\nmembers = {members}\n'
                    f'topics = {{ foo = {partitions} }}\n')
    return str(path)


def _consumer(scenario: str, work: dict[str, object], seed: int = 1) -> ConsumerSimulation:
    sim = build_simulation(scenario, seed, "consumer:uniform",
                           workload=parse_workload("workload", work))
    assert isinstance(sim, ConsumerSimulation)
    ok(sim.run())
    return sim


def test_the_workload_reads_and_checks_its_poison_keys() -> None:
    wl = parse_workload("w", {**BASE, "poison_rate": 0.01, "poison_policy": "retry",
                              "poison_attempts": 3})
    assert (wl.poison_rate, wl.poison_policy, wl.poison_attempts) == (0.01, "retry", 3)
    assert "poison 1.00% (retry)" in wl.describe()
    assert parse_workload("w", wl.as_table()) == wl
    # no poison: the table and the description are what they were before poison existed
    plain = parse_workload("w", BASE)
    assert not any(k.startswith("poison") for k in plain.as_table())
    assert "poison" not in plain.describe()
    for bad, word in (({"poison_rate": 1.5}, "fraction"), ({"poison_rate": -1}, ">= 0"),
                      ({"poison_policy": "ignore"}, "dead-letter, retry"),
                      ({"poison_attempts": 0}, ">= 1")):
        with pytest.raises(WorkloadError, match=word):
            parse_workload("w", bad)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 1000), rate=st.sampled_from([0.01, 0.05, 0.3]),
       cuts=st.lists(st.floats(0, 400, allow_nan=False), max_size=12))
def test_consecutive_ranges_count_each_poison_record_once(seed: int, rate: float,
                                                          cuts: list[float]) -> None:
    key = (f"topic-{seed}", 2)
    poison = PoisonRecords(seed, rate, "dead-letter", 5)
    bounds = [0.0, *sorted(cuts), 400.0]
    counted = sum(poison.count(key, a, b) for a, b in itertools.pairwise(bounds))
    assert counted == sum(is_poison(seed, key, o, rate) for o in range(400))
    first = poison.first(key)
    assert first == next((float(o) for o in range(400) if is_poison(seed, key, o, rate)),
                         first)


def test_consumer_and_share_groups_meet_the_same_poison_records(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    wl = parse_workload("w", {**BASE, "poison_rate": 0.02})
    share = build_simulation(sc, 7, "share:simple", workload=wl)
    assert isinstance(share, ShareSimulation)
    ok(share.run())
    consumer = _consumer(sc, {**BASE, "poison_rate": 0.02}, seed=7)
    poison = consumer.app.model.poison
    assert poison is not None
    parts = share.partitions
    for tp, sh in parts.shadow.items():
        # the share group archived exactly the poison records it finished with ...
        archived = sorted(o for t, o in parts.archived if t == tp)
        assert archived == [o for o in range(sh.done_below) if parts.is_poison(tp, o)]
        # ... and they are the consumer group's poison records of the same partition
        assert archived == [o for o in poison.offsets_below(tp, sh.done_below)
                            if o < sh.done_below]
        assert len(archived) >= 5


def test_dead_letter_skips_each_poison_record_after_its_attempts(tmp_path: Path) -> None:
    # three members each at a load of 0.6 (60 rec/s x 10 ms): they keep up, and each poison
    # record is skipped; the group ends with its position past every one of them
    sc = _scenario(tmp_path)
    clean = _consumer(sc, BASE)
    sim = _consumer(sc, {**BASE, "poison_rate": 0.02})
    poison = sim.app.model.poison
    assert poison is not None
    w = sim.result().summary["work"]
    assert w["poison_skipped"] == sum(
        sum(1 for o in poison.offsets_below(r.key, math.ceil(r.hw)) if o < r.hw)
        for r in sim.app.model.resources.values())
    assert w["poison_skipped"] > 50
    # nothing blocks: the group processes what the clean run processes, give or take the
    # batches in flight at the end
    w0 = clean.result().summary["work"]
    assert w["records_processed"] == pytest.approx(w0["records_processed"], rel=0.02)
    assert w["lag_now"] < 100


def test_dead_lettered_attempts_cost_an_overloaded_member_time(tmp_path: Path) -> None:
    # one member at a load of 0.9 falls behind at the start and works in batches: each poison
    # record's four failed attempts lengthen its batches (10 % poison: +36 % load, over 1)
    sc = _scenario(tmp_path, members=1, partitions=1, end_ms=60_000)
    work = {"records_per_s": 90, "processing_ms": 10, "max_poll_records": 50, "warmup_ms": 3000}
    clean = _consumer(sc, work).result().summary["work"]
    poisoned = _consumer(sc, {**work, "poison_rate": 0.1}).result().summary["work"]
    assert poisoned["poison_skips_in_batches"] > 0
    assert poisoned["lag_record_s"] > 2 * clean["lag_record_s"]
    assert poisoned["lag_now"] > 10 * max(clean["lag_now"], 1.0)


def test_retry_forever_blocks_each_partition_at_its_first_poison_record(tmp_path: Path) -> None:
    sc = _scenario(tmp_path)
    sim = _consumer(sc, {**BASE, "poison_rate": 0.01, "poison_policy": "retry"})
    model = sim.app.model
    poison = model.poison
    assert poison is not None
    for r in model.resources.values():
        first = poison.first(r.key)
        assert r.cap == first
        # the position stands at the first poison record: never past it, for every owner
        assert r.hw == first
        assert r.committed <= first
        assert r.lag == pytest.approx(r.produced(sim.now) - first)
    w = sim.result().summary["work"]
    assert w["poison_blocked_partitions"] == len(model.resources) == 3
    assert w["records_processed"] == pytest.approx(sum(r.cap for r in model.resources.values()),
                                                   abs=1)


@pytest.mark.parametrize("policy", ["retry", "dead-letter"])
def test_the_lags_integral_is_the_sum_of_its_samples(tmp_path: Path, policy: str) -> None:
    # the closed-form integral of the lag (a blocked partition: its member keeps up until the
    # poison record, then stands) against a Riemann sum of the lag sampled every 10 ms
    sc = _scenario(tmp_path, members=2, partitions=3, end_ms=40_000)
    wl = parse_workload("w", {"records_per_s": 50, "processing_ms": 4, "poison_rate": 0.004,
                              "poison_policy": policy})
    first = build_simulation(sc, 3, "consumer:uniform", workload=wl)
    ok(first.run())
    end = first.now  # (sampling changes nothing: the run ends at the same time)
    sim = build_simulation(sc, 3, "consumer:uniform", workload=wl)
    assert isinstance(sim, ConsumerSimulation)
    samples: list[float] = []

    def sample(_: object) -> None:
        samples.append(sim.app.model.sample_lag())

    for t in range(0, end + 1, 10):
        sim.at(t, sample, None)
    ok(sim.run())
    assert sim.now == end
    model = sim.app.model
    if policy == "retry":
        assert sum(r.hw == r.cap for r in model.resources.values()) >= 2
    riemann = sum(samples[:-1]) * 10 / 1000.0  # left sums: the lag at most doubles in 10 ms
    total = model.totals()["lag_record_s"]
    assert total == pytest.approx(riemann, rel=0.02)


def test_a_random_poison_rate_keeps_every_invariant(tmp_path: Path) -> None:
    sc = _scenario(tmp_path, members=4, partitions=4)
    rng = random.Random(5)
    for policy in ("dead-letter", "retry"):
        for seed in range(3):
            work = {**BASE, "poison_rate": rng.choice([0.001, 0.01, 0.05]),
                    "poison_policy": policy}
            for protocol in ("consumer:uniform", "share:simple"):
                sim = build_simulation(sc, seed, protocol,
                                       workload=parse_workload("w", work))
                ok(sim.run())
