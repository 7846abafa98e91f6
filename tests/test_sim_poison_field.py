"""Poison records as in the field (``sim/workload.py``, "As in the field"): each attempt at a poison
record costs seconds (``poison_attempt_ms``) and a consumer group's application backs off
(``poison_backoff_ms``) between its attempts, retrying in place: its partitions wait behind it
(head-of-line blocking). A share group's (KIP-932) member RELEASEs it after each attempt, so the
other records of its partition keep flowing, and it is archived at the delivery limit; an attempt
that outlasts the lock lets the lock expire instead."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.share import ShareSimulation
from groupcoord.sim.workload import (
    Dist,
    PoisonRecords,
    Workload,
    WorkloadError,
    parse_workload,
    poison_attempt_cost,
)
from tests.sim_support import ok
from tests.test_sim_workload import Loop

KEY = ("t", 0)
OTHER = ("t", 1)


def _field(rate: float, attempt_ms: float, backoff_ms: int, attempts: int = 5,
           **kw: Any) -> Workload:
    kw.setdefault("fetch_latency_ms", 0)
    kw.setdefault("processing_ms", Dist("fixed", 1.0))
    return Workload(records_per_s=100.0, poison_rate=rate, poison_attempts=attempts,
                    poison_attempt_ms=Dist("fixed", attempt_ms), poison_backoff_ms=backoff_ms,
                    **kw)


def test_the_workload_reads_its_field_poison_keys_and_leaves_old_tables_alone() -> None:
    raw = {"records_per_s": 60, "poison_rate": 0.001, "poison_attempt_ms": 2000,
           "poison_backoff_ms": 1000, "share_lock_duration_ms": 1500,
           "share_delivery_count_limit": 3}
    wl = parse_workload("w", raw)
    assert wl.poison_attempt_ms == Dist("fixed", 2000.0) and wl.poison_backoff_ms == 1000
    assert (wl.share_lock_duration_ms, wl.share_delivery_count_limit) == (1500, 3)
    assert "2000 ms an attempt, back-off 1000 ms" in wl.describe()
    assert parse_workload("w", wl.as_table()) == wl
    # without them the table is what it was (the lab's run identities do not move)
    plain = parse_workload("w", {"records_per_s": 60, "poison_rate": 0.001})
    assert set(plain.as_table()) == {"records_per_s", "poison_rate", "max_poll_records",
                                     "processing_ms", "commit_latency_ms", "warmup_ms",
                                     "task_start_ms", "task_stop_ms", "metadata_max_age_ms",
                                     "fetch_latency_ms", "startup_ms", "task_records_per_s"}
    for bad, word in (({"poison_backoff_ms": -1}, ">= 0"),
                      ({"share_delivery_count_limit": 1}, ">= 2"),
                      ({"share_lock_duration_ms": 0}, ">= 1"),
                      ({"poison_attempt_ms": {"dist": "pareto"}}, "fixed, exponential")):
        with pytest.raises(WorkloadError, match=word):
            parse_workload("w", {**raw, **bad})


def test_attempt_costs_are_the_seeds_the_same_for_every_caller() -> None:
    d = Dist("exponential", 2000.0)
    a = [poison_attempt_cost(3, KEY, 17, i, d) for i in range(5)]
    assert a == [poison_attempt_cost(3, KEY, 17, i, d) for i in range(5)]
    assert len(set(a)) == 5 and all(x >= 0 for x in a)
    assert a != [poison_attempt_cost(4, KEY, 17, i, d) for i in range(5)]
    records = PoisonRecords(3, 0.5, "dead-letter", 5, d, 700)
    assert records.cost(KEY, 17) == pytest.approx(sum(a) + 4 * 700)


def _first_poison(rate: float) -> tuple[int, tuple[str, int], tuple[str, int]]:
    """The first poison record over KEY and OTHER: its offset, its partition, the other."""
    records = PoisonRecords(7, rate, "dead-letter", 5)
    a, b = records.next_from(KEY, 0), records.next_from(OTHER, 0)
    assert a is not None and b is not None
    return (a, KEY, OTHER) if a <= b else (b, OTHER, KEY)


@settings(max_examples=15, deadline=None)
@given(attempt_ms=st.integers(100, 600), backoff_ms=st.integers(0, 400),
       attempts=st.integers(1, 4))
def test_a_poison_record_blocks_its_member_for_its_attempts_and_back_offs(
        attempt_ms: int, backoff_ms: int, attempts: int) -> None:
    """A member that keeps up (100 records/s on each of two partitions, 1 ms a record) meets a
    poison record: it stands ``attempts x attempt + (attempts - 1) x back-off``, both its
    partitions waiting (one thread processes the batch), then catches up."""
    rate = 0.0002  # (seed 7: the first at 558 of OTHER, the next at 1048 of KEY, past the
    o, key, other = _first_poison(rate)  # block and its catch-up: load below 1 throughout)
    loop = Loop()
    m = loop.model(_field(rate, attempt_ms, backoff_ms, attempts))
    m.add_resource(KEY, 100)
    m.add_resource(OTHER, 100)
    peaks: list[float] = []
    m.on_lag = peaks.append
    p = m.processor("c1")
    p.assign([KEY, OTHER])
    due = math.ceil(o * 10)  # record o can be fetched at o / (0.1 record/ms)
    assert due > 0
    loop.run_until(due - 1)
    assert p.stream and not p.busy
    cost = attempts * attempt_ms + (attempts - 1) * backoff_ms
    loop.run_until(due)
    assert p.busy and p.next_poll() == due + cost
    other_at = p.positions()[other]
    loop.run_until(due + cost - 1)
    pos = p.positions()
    assert pos[key] < o + 1 and pos[other] == other_at  # head-of-line: both stand
    m.settle()
    assert m.lag_now == pytest.approx(2 * 0.1 * (cost - 1), abs=2)
    loop.run_until(due + cost)
    assert p.positions()[key] == pytest.approx(o + 1)
    # the block's end is an event that samples the lag: the peak is the block's production
    assert max(peaks) == pytest.approx(2 * 0.1 * cost, abs=2)
    # then it catches up (0.2 records/ms come, 1 a ms processed: cost / 4 ms) and keeps up
    loop.run_until(due + cost + math.ceil(cost / 4) + 50)
    m.settle()
    assert m.lag_now < 1 and m.poison_skips >= 1


def test_a_batch_holding_poison_records_lasts_their_attempts_longer() -> None:
    rate = 0.01
    loop = Loop()
    m = loop.model(_field(rate, 2000, 1000, max_poll_records=500,
                          processing_ms=Dist("fixed", 2.0)))
    m.add_resource(KEY, 100)
    loop.run_until(20_000)  # 2,000 records wait: the first batch is offsets 0-499
    p = m.processor("c1")
    p.assign([KEY])
    k = len(PoisonRecords(7, rate, "dead-letter", 5).between(KEY, 0, 500))
    assert k > 0
    end = 20_000 + 500 * 2 + k * (5 * 2000 + 4 * 1000 - 2)
    assert p.busy and p.next_poll() == end
    assert m.poison_skips == k
    # the batch's end is an event (where the lag peaks), not computed lazily
    assert any(t == end for t, *_ in loop.heap)


def test_the_default_attempt_cost_keeps_the_old_arithmetic() -> None:
    """Without ``poison_attempt_ms`` a poison record's attempts cost the batch's processing
    time per record, as before the field's costs (every existing row stays the same)."""
    rate = 0.01
    loop = Loop()
    wl = Workload(records_per_s=100.0, poison_rate=rate, fetch_latency_ms=0,
                  processing_ms=Dist("fixed", 2.0), max_poll_records=500)
    m = loop.model(wl)
    m.add_resource(KEY, 100)
    loop.run_until(20_000)
    p = m.processor("c1")
    p.assign([KEY])
    k = len(PoisonRecords(7, rate, "dead-letter", 5).between(KEY, 0, 500))
    assert p.next_poll() == 20_000 + (500 + k * 4) * 2
    assert not m.poison_field


WORK = {"records_per_s": 60, "processing_ms": {"dist": "fixed", "mean": 5},
        "max_poll_records": 100, "poison_rate": 0.0005, "poison_attempt_ms": 2000,
        "poison_backoff_ms": 1000}


def _scenario(tmp_path: Path, members: int, partitions: int = 1, end_ms: int = 120_000) -> str:
    path = tmp_path / "poison.toml"
    path.write_text(f'name = "poison"\nend_ms = {end_ms}\n[group]\nmembers = {members}\n'
                    f'topics = {{ foo = {partitions} }}\n')
    return str(path)


def _run(scenario: str, protocol: str, work: dict[str, Any]) -> Any:
    sim = build_simulation(scenario, 1, protocol, workload=parse_workload("workload", work))
    res = ok(sim.run())
    return sim, res


def test_a_share_group_keeps_the_partition_flowing_where_a_consumer_group_blocks(
        tmp_path: Path) -> None:
    """One partition, three members, the same poison records and attempt costs: the consumer
    group's one working member stands 14 s per poison record (the partition's lag grows by 14 s
    of production); the share group's other members go on acquiring what follows it, so its
    lag stays far below; the share group archives every poison record at the delivery limit
    after as many attempts as the consumer group's application makes."""
    sc = _scenario(tmp_path, 3)
    csim, cres = _run(sc, "consumer:uniform", WORK)
    ssim, sres = _run(sc, "share:simple", WORK)
    assert isinstance(csim, ConsumerSimulation) and isinstance(ssim, ShareSimulation)
    c = json.loads(json.dumps(cres.summary))
    s = json.loads(json.dumps(sres.summary))
    assert c["work"]["poison_skipped"] > 0 and s["share_archived"] > 0
    # each archived record was tried at each of its 5 deliveries (others may be under way)
    assert s["poison_attempts"] >= 5 * s["share_archived"]
    assert s["share_locks_expired"] == 0 and s["share_acks_refused"] == 0
    # the lag's peak over the run (the consumer groups' after the initial join, when every
    # member works: a poison record comes later)
    c_peak, s_peak = c["work"]["lag_peak_after_initial"], s["work"]["lag_peak"]
    assert c_peak >= 0.9 * 14 * 60  # 14 s of production behind one record
    assert s_peak < c_peak / 3


def test_an_attempt_that_outlasts_the_lock_lets_it_expire(tmp_path: Path) -> None:
    """The same poison records with the lock (1.5 s) below the attempt (2 s): each delivery
    ends by the lock's expiry, not a RELEASE; the first member's acknowledgement is refused;
    the record is still archived at the delivery limit."""
    sc = _scenario(tmp_path, 3)
    _, res = _run(sc, "share:simple", {**WORK, "share_lock_duration_ms": 1500})
    s = res.summary
    assert s["share_archived"] > 0 and s["share_locks_expired"] > 0
    assert s["share_acks_refused"] > 0 and s["share_released"] == 0  # no attempt ended in time
    _, res30 = _run(sc, "share:simple", WORK)
    assert res30.summary["share_locks_expired"] == 0
