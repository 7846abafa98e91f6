"""The work model's parts one by one (``sim/workload.py``), on a bare event loop."""

from __future__ import annotations

import heapq
import itertools
import math
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.sim.workload import (
    DEFAULT_WORKLOAD,
    IDLE,
    Dist,
    Workload,
    WorkloadError,
    WorkModel,
    lag_area,
    parse_workload,
)


class Loop:
    """A minimal event loop: what the simulator gives the work model."""

    def __init__(self) -> None:
        self.now = 0
        self.heap: list[tuple[int, int, Callable[[Any], None], Any]] = []
        self.seq = 0
        self.stale = 0

    def at(self, t: int, fn: Callable[[Any], None], arg: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, arg))

    def run_until(self, t: int) -> None:
        while self.heap and self.heap[0][0] <= t:
            when, _, fn, arg = heapq.heappop(self.heap)
            self.now = when
            fn(arg)
        self.now = t

    def model(self, wl: Workload, **kw: Any) -> WorkModel:
        def stale() -> None:
            self.stale += 1
        kw.setdefault("max_poll_interval_ms", 300_000)
        kw.setdefault("commit_interval_ms", 5_000)
        return WorkModel(wl, 7, lambda: self.now, self.at, stale, **kw)


def fixed(records_per_s: float = 100.0, ms: float = 1.0, **kw: Any) -> Workload:
    """A fixed processing time; records pollable as soon as produced unless the test says
    otherwise (the other parts' arithmetic stays exact)."""
    kw.setdefault("fetch_latency_ms", 0)
    return Workload(records_per_s=records_per_s, processing_ms=Dist("fixed", ms), **kw)


# ----------------------------------------------------------------------------- parameters


def test_parse_defaults_idle_and_overrides() -> None:
    assert parse_workload("w", {}) == DEFAULT_WORKLOAD
    assert parse_workload("w", {"idle": True}) is IDLE
    wl = parse_workload("w", {"records_per_s": 10, "processing_ms": {"dist": "exponential",
                                                                     "mean": 2},
                              "topic_rates": {"foo": 5}, "max_poll_records": 50})
    assert wl.records_per_s == 10 and wl.processing_ms == Dist("exponential", 2.0)
    assert wl.rate_of("foo") == 5 and wl.rate_of("bar") == 10 and wl.max_poll_records == 50
    # a sweep's override goes over the scenario's workload; over idle it starts from default
    assert parse_workload("s", {"warmup_ms": 7}, base=wl).records_per_s == 10
    assert parse_workload("s", {"warmup_ms": 7}, base=IDLE).records_per_s == 50
    assert parse_workload("w", wl.as_table()) == wl
    assert parse_workload("w", IDLE.as_table()) is IDLE


@pytest.mark.parametrize(("raw", "field"), [
    ({"records_per_s": -1}, "w.records_per_s"),
    ({"records_per_s": "fast"}, "w.records_per_s"),
    ({"max_poll_records": 0}, "w.max_poll_records"),
    ({"max_poll_interval_ms": 1.5}, "w.max_poll_interval_ms"),
    ({"processing_ms": {"dist": "zipf", "mean": 1}}, "w.processing_ms.dist"),
    ({"processing_ms": {"dist": "exponential"}}, "w.processing_ms"),
    ({"processing_ms": {"dist": "uniform", "min": 3, "max": 1}}, "w.processing_ms.max"),
    ({"topic_rates": {"foo": -2}}, "w.topic_rates.foo"),
    ({"idle": "yes"}, "w.idle"),
    ({"idle": True, "warmup_ms": 5}, "w.idle"),
    ({"warm_up_ms": 5}, "unknown key(s) warm_up_ms"),
])
def test_bad_parameters_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(WorkloadError, match=None) as e:
        parse_workload("w", raw)
    assert field in str(e.value)
    assert "\n" not in str(e.value)


def test_distributions_draw_from_the_seed() -> None:
    import random
    for d in (Dist("exponential", 2.0), Dist("uniform", 2.0, 1.0, 3.0),
              Dist("lognormal", 2.0, sigma=0.5)):
        a = [d.draw(random.Random(1)) for _ in range(3)]
        b = [d.draw(random.Random(1)) for _ in range(3)]
        assert a == b
        xs = [d.draw(random.Random(i)) for i in range(4000)]
        assert abs(sum(xs) / len(xs) - 2.0) < 0.15  # the mean is the parameter
    assert Dist("uniform", 2.0, 1.0, 3.0).bounded_max == 3.0
    assert Dist("exponential", 2.0).bounded_max is None


# ----------------------------------------------------------------------------- processing


def test_a_member_that_keeps_up_is_in_poll_and_follows_production() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 1.0))  # load 0.1
    m.add_resource("p0", 100)
    p = m.processor("c1")
    p.assign(["p0"])
    loop.run_until(10_000)
    assert p.next_poll() == 10_000  # reacts at once
    m.settle()
    assert m.processed == pytest.approx(1000)  # 100 rec/s for 10 s
    assert m.lag_now == pytest.approx(0)
    assert not loop.heap  # no event per record, nor per poll


def test_a_busy_member_reacts_at_the_end_of_its_batch() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 2.0, max_poll_records=500))
    m.add_resource("p0", 100)
    loop.run_until(20_000)  # 2,000 records wait before anyone processes
    p = m.processor("c1")
    p.assign(["p0"])  # a full batch of 500 records at 2 ms: busy until 21,000
    loop.run_until(20_400)
    assert p.busy and p.next_poll() == 21_000
    ran: list[int] = []
    p.at_poll(lambda: ran.append(loop.now))
    loop.run_until(21_500)
    assert ran == [21_000]


def test_catch_up_is_computed_when_asked_without_events() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 1.0))
    m.add_resource("p0", 100)
    loop.run_until(10_000)  # 1,000 behind
    p = m.processor("c1")
    p.assign(["p0"])
    assert p.busy and not loop.heap  # batches of 500, 500, 100, 10, 1: no event for them
    loop.run_until(12_000)
    m.settle()
    assert p.stream and not p.busy  # caught up: it keeps up from then on
    assert m.lag_now == pytest.approx(0) and m.processed == pytest.approx(1200)
    loop.run_until(60_000)
    m.settle()
    assert m.lag_now == pytest.approx(0) and m.processed == pytest.approx(6000)


def test_an_overloaded_member_works_through_full_batches_lazily() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 20.0))  # load 2: it never catches up
    m.add_resource("p0", 100)
    p = m.processor("c1")
    p.assign(["p0"])
    loop.run_until(100_000)
    m.settle()
    assert not loop.heap and not p.stream
    # it processes 50 records/s from the first record on, the lag grows by 50/s
    assert m.processed == pytest.approx(5000, abs=20)
    assert m.lag_now == pytest.approx(5000, abs=20)
    assert p.busy and p.batch_end - p.batch_start == pytest.approx(10_000)  # 500 x 20 ms
    end = math.ceil(p.batch_end)
    ran: list[int] = []
    p.at_poll(lambda: ran.append(loop.now))  # now its poll() is awaited: one event
    assert len(loop.heap) == 1
    loop.run_until(120_000)
    assert ran == [end]


def test_records_processed_twice_are_processed_minus_committed_at_a_move() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 1.0))
    m.add_resource("p0", 100)
    a = m.processor("a")
    a.assign(["p0"])
    loop.run_until(3_000)
    r = m.resources["p0"]
    r.committed = a.committable()["p0"]  # an auto-commit accepted at 3 s: 300
    loop.run_until(7_000)
    processed = a.committable()["p0"]  # 700
    m.drop("a", commit=False)  # a crash: nothing more committed
    b = m.processor("b")
    b.assign(["p0"])
    assert m.reprocessed == pytest.approx(processed - 300)
    assert b.pos["p0"] == pytest.approx(300)
    # a graceful move (revocation commit) reprocesses nothing
    loop.run_until(9_000)
    b.release(["p0"], commit=True)
    c = m.processor("c")
    before = m.reprocessed
    c.assign(["p0"])
    assert m.reprocessed == before


def test_warm_up_delays_processing_not_ownership() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 1.0, warmup_ms=4_000))
    m.add_resource("p0", 100)
    p = m.processor("c1")
    p.assign(["p0"])
    assert p.owned == {"p0"} and not p.active  # owned at once, paused
    loop.run_until(3_999)
    m.settle()
    assert m.processed == 0
    loop.run_until(30_000)
    t = m.totals()
    assert m.lag_now == pytest.approx(0) and t["records_processed"] == pytest.approx(3000)
    assert t["paused_partition_s"] == pytest.approx(4.0)
    # back on the same process: its state is local, no warm-up
    p.release(["p0"], commit=True)
    p.assign(["p0"])
    assert p.active == ["p0"]


def test_lag_stall_and_paused_integrals() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 0.0))
    m.add_resource("p0", 100)
    loop.run_until(10_000)  # nobody processes: stall 10 s, lag 1,000, 5,000 record-s
    t = m.totals()
    assert t["stall_ms"] == pytest.approx(10_000)
    assert t["lag_record_s"] == pytest.approx(5_000)
    assert m.lag_now == pytest.approx(1_000)
    p = m.processor("c1")
    p.assign(["p0"])  # instant processing: the backlog is gone at once
    loop.run_until(20_000)
    t = m.totals()
    assert t["stall_ms"] == pytest.approx(10_000) and t["lag_record_s"] == pytest.approx(5_000)
    assert t["paused_partition_s"] == 0


def test_a_batch_longer_than_max_poll_interval_times_out() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 10.0, max_poll_records=500), max_poll_interval_ms=3_000)
    seen: list[tuple[int, int]] = []
    m.on_poll_timeout = lambda p, end: seen.append((loop.now, end))
    m.add_resource("p0", 100)
    loop.run_until(10_000)
    p = m.processor("c1")
    p.assign(["p0"])  # 500 records x 10 ms = 5 s > 3 s
    loop.run_until(16_000)
    assert seen == [(13_000, 15_000)] and m.poll_timeouts == 1


def test_connect_task_restarts_and_flushes() -> None:
    loop = Loop()
    m = loop.model(fixed(100, 0.0), connect=True, commit_interval_ms=1_000)
    m.add_resource(("k", 0), 100)
    a = m.processor("w1/k/0")
    a.assign([("k", 0)], delay_ms=500)  # task start
    loop.run_until(2_600)
    m.settle()
    assert m.resources[("k", 0)].committed == pytest.approx(250)  # flushed at 1.5 s, 2.5 s
    m.drop("w1/k/0", commit=True)  # stopped: offsets committed
    b = m.processor("w2/k/0")
    b.assign([("k", 0)], delay_ms=500)
    loop.run_until(4_000)
    assert m.task_restarts == 1 and m.reprocessed == 0


def test_same_seed_same_draws() -> None:
    def run() -> list[float]:
        loop = Loop()
        m = loop.model(Workload(records_per_s=100, processing_ms=Dist("exponential", 3.0)))
        m.add_resource("p0", 100)
        loop.run_until(20_000)
        p = m.processor("c1")
        p.assign(["p0"])
        ends = []
        while loop.heap and len(ends) < 20:
            loop.run_until(loop.heap[0][0])
            ends.append(p.batch_end)
        return ends
    assert run() == run()


def test_records_in_flight_fetch_latency() -> None:
    """A member that keeps up holds ``rate x fetch_latency_ms`` records per partition: a poll
    at t returns what was produced up to t - fetch_latency_ms (no lag at all without it)."""
    lags = {}
    for latency in (0, 200):
        loop = Loop()
        m = loop.model(fixed(100, 1.0, fetch_latency_ms=latency))
        for k in ("a", "b"):
            m.add_resource(k, 100)
        m.processor("p").assign(["a", "b"])
        loop.run_until(10_000)
        lags[latency] = m.settle()
        assert m.processors["p"].stream  # keeps up: no event per record
        assert m.processed == pytest.approx(2 * 100 * (10_000 - latency) / 1000)
    assert lags[0] == pytest.approx(0.0)
    assert lags[200] == pytest.approx(2 * 100 * 0.2)  # 20 records per partition in flight


def test_the_default_records_in_flight_are_the_calibrated_java_poll_loops() -> None:
    """By default a member that keeps up holds what ``lab calibrate``'s consumers held when
    polling as the Java client does (returning what is fetched at once): 5-9 records at 120
    records/s over 12 partitions, i.e. well under the 12 that a 100 ms latency gives (100 ms
    came from a harness whose poll waited its whole timeout to fill a batch)."""
    loop = Loop()
    wl = Workload(records_per_s=10.0, processing_ms=Dist("fixed", 0.0))
    m = loop.model(wl)
    keys = [f"p{i}" for i in range(12)]
    for k in keys:
        m.add_resource(k, 10.0)
    m.processor("p").assign(keys)
    loop.run_until(10_000)
    assert 5 <= m.settle() <= 9


def test_an_overloaded_member_waits_for_its_first_fetchable_record_without_spinning() -> None:
    """Records become pollable ``fetch_latency_ms`` after production starts: an overloaded
    member given partitions waits for that in one step (it stepped 1/rate at a time, an
    empty batch each, thousands of them per partition set)."""
    loop = Loop()
    m = loop.model(fixed(1_000, 1.0, fetch_latency_ms=100))  # 10 partitions: 10x overloaded
    keys = [f"p{i}" for i in range(10)]
    for k in keys:
        m.add_resource(k, 1_000)
    p = m.processor("p")
    p.assign(keys)
    loop.run_until(150)
    p.positions()
    assert p.batch_id <= 3
    assert m.processed > 0  # it started on the first records once they were fetchable


@given(steps=st.lists(st.dictionaries(
    st.tuples(st.sampled_from([uuid.UUID(int=1), uuid.UUID(int=2), "connector"]),
              st.integers(0, 4) | st.just("task")) | st.sampled_from(["c1", "c1-0"]),
    st.floats(0, 100), max_size=8), max_size=6))
def test_partition_resources_follow_the_resources(steps: list[dict[Any, float]]) -> None:
    """``partition_resources(topic)`` is the model's resource of every ``(topic, partition)``
    key through any sequence of resources appearing and going (a commit's answer reads the
    resources through it)."""
    m = Loop().model(fixed())
    for wanted in steps:
        m.sync_resources(wanted)
        for t in (uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3), "connector", None):
            got = dict(m.partition_resources(t))
            assert got == {k[1]: r for k, r in m.resources.items()
                           if isinstance(k, tuple) and k[0] == t}
            assert all(got[i] is m.resources[(t, i)] for i in got)


@given(n=st.integers(1, 6), chosen=st.sets(st.integers(0, 5)), busy=st.booleans(),
       first=st.integers(1, 9_000), second=st.integers(1, 9_000))
def test_a_commits_positions_are_a_snapshot_of_the_selected_resources(
        n: int, chosen: set[int], busy: bool, first: int, second: int) -> None:
    """What a commit carries is the position of each selected active resource when it was
    sent (every one of them selected: the map copied whole), and it stays so while the member
    goes on processing (the commit's answer applies what was sent, not what was processed
    since)."""
    loop = Loop()
    m = loop.model(fixed(100, 3.0 if busy else 1.0))  # load 0.3 per partition
    keys = [f"p{i}" for i in range(n)]
    for k in keys:
        m.add_resource(k, 100)
    loop.run_until(2_000 if busy else 0)  # busy: a backlog to work through in batches
    p = m.processor("c1")
    p.assign(keys)
    loop.run_until(2_000 + first)
    selected = frozenset(k for i, k in enumerate(keys) if i in chosen)
    for polled in (False, True):
        sent = p.commit_positions(selected, polled=polled)
        pos = p.positions()
        if polled and p.batch is not None:
            pos.update({k: start for k, _, start, _ in p.batch})
        assert {r.key: v for r, v in sent.items()} == {k: pos[k] for k in keys
                                                        if k in selected}
        before = dict(sent)
        loop.run_until(loop.now + second)
        p.positions()  # the member goes on: the sent map does not move with it
        assert sent == before


def _state(m: WorkModel) -> list[Any]:
    """Everything the work model's figures come from: its totals first (which bring every
    processor and resource to now)."""
    out: list[Any] = [m.totals(), m.processed, m.lag_now]
    for p in m.processors.values():
        out.append((p.name, p.t, sorted(p.pos.items())))
    for k, r in m.resources.items():
        out.append((k, r.t, r.hw, r.lag, r.lag_int, r.committed))
    return out


def _close(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """``a`` and ``b`` equal but for the last bits of their floats (``rel``, relative; below
    1e-6 absolute), through dicts, lists and tuples."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rel) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)
    return bool(a == b)


@given(ops=st.lists(st.tuples(st.sampled_from(["wait", "commit", "sample", "revoke", "assign",
                                               "settle"]),
                              st.integers(1, 7_000), st.integers(0, 5)), max_size=25),
       latency=st.sampled_from([0, 50]), mixed=st.booleans())
def test_keeping_up_in_step_is_the_stream_loop_but_for_the_last_bits(
        ops: list[tuple[str, int, int]], latency: int, mixed: bool) -> None:
    """A member that keeps up with resources in one state advances them all with one set of
    float operations (:class:`InStep`) and writes them, the lag's integral over the step as
    one trapezoid, when something reads them: every figure, position and lag integral is the
    stream loop's to 1e-9 (relative), through commits, lag samples, revocations, new
    partitions and totals (``mixed``: two rates, so the stream loop runs)."""
    runs = []
    for in_step in (True, False):
        loop = Loop()
        m = loop.model(fixed(100, 1.0, fetch_latency_ms=latency))  # load 0.1 per partition
        m.steady_ok = in_step
        keys = [f"p{i}" for i in range(6)]
        for i, k in enumerate(keys):
            m.add_resource(k, 70 if mixed and i == 2 else 100)
        p = m.processor("c1")
        p.assign(keys[:4])
        loop.run_until(3_000)
        stepped = 0
        states: list[Any] = []
        for op, dt, i in ops:
            loop.run_until(loop.now + dt)
            k = keys[i]
            if op == "commit":
                sent = p.commit_positions(frozenset(keys[:i + 1]), polled=True)
                states.append([(r.key, v) for r, v in sent.items()])
                for r, v in sent.items():
                    r.committed = max(r.committed, v)
            elif op == "sample":
                states.append(m.sample_lag())
            elif op == "revoke":
                p.release([k], commit=True)
            elif op == "assign":
                p.assign([k])
            elif op == "settle":
                states.append(_state(m))
            stepped += p._steady is not None
        states.append(_state(m))
        runs.append((states, stepped))
    (a, _), (b, never) = runs
    assert _close(a, b)
    assert never == 0


@given(rate=st.floats(0.001, 10.0), t0=st.floats(0.0, 1_000.0), hw=st.floats(0.0, 5_000.0),
       a=st.floats(0.0, 5_000.0), length=st.floats(0.5, 5_000.0),
       qa=st.floats(0.0, 6_000.0), rise=st.floats(0.0, 6_000.0),
       cuts=st.lists(st.floats(0.0, 1.0), max_size=12))
def test_the_lag_integral_of_a_linear_segment_in_one_piece_is_the_sum_of_its_trapezoids(
        rate: float, t0: float, hw: float, a: float, length: float, qa: float, rise: float,
        cuts: list[float]) -> None:
    """The closed form of one linear segment (the consumer's position going linearly from
    ``qa`` to ``qb``: a batch, or a member keeping up) equals the sum of the pieces it is
    split into when something brings the resource to now inside it (each piece from the
    position reached at its start, as :meth:`Processor.advance` leaves it), to 1e-9 relative:
    the lag sample and the auto-commit that no longer split it change last bits only."""
    b = a + length
    qb = qa + rise
    whole = lag_area(rate, t0, hw, a, b, qa, qb)
    points = [a, *sorted(a + (b - a) * c for c in cuts), b]
    pieces = 0.0
    high = hw
    for u, v in itertools.pairwise(points):
        qu = qa + (qb - qa) * ((u - a) / (b - a))
        qv = qa + (qb - qa) * ((v - a) / (b - a))
        pieces += lag_area(rate, t0, high, u, v, qu, qv)
        high = max(high, qv)  # (the highest position processed, as the advance keeps it)
    assert math.isclose(whole, pieces, rel_tol=1e-9, abs_tol=1e-6 * max(1.0, rate * length))


def test_a_lag_sample_reads_a_member_in_a_batch_without_bringing_it_to_now() -> None:
    """A lag sample inside a batch reads the lag each resource of the batch has then (the
    value :meth:`Processor.advance` would give it) and leaves the member and its resources
    where they were: the next advance takes the batch's segment in one piece. The same lag
    as a member brought to now; the same totals to the last bits."""
    samples = []
    finals = []
    for read in (True, False):
        loop = Loop()
        m = loop.model(fixed(100, 2.0, max_poll_records=500))
        for k in ("p0", "p1"):
            m.add_resource(k, 100)
        loop.run_until(20_000)  # 2,000 records each behind
        p = m.processor("c1")
        p.assign(["p0", "p1"])  # a full batch: 500 records at 2 ms, until 21,000
        r0 = m.resources["p0"]
        at = (p.t, r0.t, r0.lag_int)
        got = []
        for t in (20_200, 20_450, 20_900):
            loop.run_until(t)
            m._sampled_at = None
            if read:
                got.append(m.sample_lag())
                assert p.busy and (p.t, r0.t, r0.lag_int) == at  # not brought to now
            else:
                p.advance(t)  # (as the sample did before: the batch split at each one)
                lag = 0.0
                for r in m.resources.values():
                    lag += max(0.0, r.produced(t) - r.hw)
                got.append(lag)
        loop.run_until(40_000)
        samples.append(got)
        finals.append(m.totals())
    assert samples[0] == samples[1]
    assert _close(finals[0], finals[1])


def test_a_member_keeping_up_with_one_rate_goes_in_step_until_its_partitions_change() -> None:
    """The step is taken where it pays (every auto-commit of a member that keeps up advances
    it) and left where the resources change: a new partition, a revocation, a second member
    processing the same partition (a fenced member's successor)."""
    loop = Loop()
    m = loop.model(fixed(100, 1.0, fetch_latency_ms=50))
    keys = [f"p{i}" for i in range(4)]
    for k in keys:
        m.add_resource(k, 100)
    p = m.processor("c1")
    p.assign(keys[:3])
    loop.run_until(3_000)
    p.commit_positions(frozenset(keys), polled=True)
    assert p.stream and p._steady is not None  # one advance of the stream loop, then in step
    loop.run_until(8_000)
    sent = p.commit_positions(frozenset(keys), polled=True)
    assert p._steady is not None and p._steady.pending  # (its resources not written)
    assert set(sent.values()) == {100 * (8_000 - 50) / 1000}  # on the fetch horizon
    p.assign([keys[3]])
    assert p._steady is None and not p.stream  # a new partition: catching up in batches
    loop.run_until(20_000)
    p.commit_positions(frozenset(keys), polled=True)
    assert p.stream and p._steady is not None
    q = m.processor("c2")  # takes p2 over while c1 still processes it
    q.assign([keys[2]])
    assert p._steady is None and m.holders[m.resources[keys[2]]] == 2
    loop.run_until(25_000)
    p.commit_positions(frozenset(keys), polled=True)
    assert p._steady is None  # not while another processor writes one of its resources
    p.release([keys[2]], commit=False)
    loop.run_until(30_000)
    p.commit_positions(frozenset(keys), polled=True)
    loop.run_until(35_000)
    p.commit_positions(frozenset(keys), polled=True)
    assert p._steady is not None


@settings(deadline=None)  # (a case runs the model twice: ~0.2 s on a loaded machine)
@given(ops=st.lists(st.tuples(st.sampled_from(["wait", "commit", "sample", "revoke", "assign",
                                               "take", "settle"]),
                              st.integers(1, 4_000), st.integers(0, 7)), max_size=25),
       latency=st.sampled_from([0, 50]), mixed=st.booleans(), ms=st.sampled_from([0.5, 1.0, 3.0]),
       dist=st.sampled_from(["fixed", "exponential"]))
def test_the_step_inside_a_catch_up_is_the_batch_loop_to_the_last_bit(
        ops: list[tuple[str, int, int]], latency: int, mixed: bool, ms: float,
        dist: str) -> None:
    """A member given a partition catches up in batches over all its resources; those it
    kept up with in one state (``Processor._grp``) are computed once per batch and the
    others given the same floats, summed in the same order: every figure, position and lag
    integral is bit for bit the loop's that computes each resource alone, through commits,
    lag samples, revocations, new partitions, a second member taking a partition the first
    still processes (``take``), and totals."""
    runs = []
    for grouped in (True, False):
        loop = Loop()
        wl = Workload(records_per_s=100, processing_ms=Dist(dist, ms), max_poll_records=40,
                      fetch_latency_ms=latency)
        m = loop.model(wl)
        m.group_ok = grouped
        keys = [f"p{i}" for i in range(8)]
        for i, k in enumerate(keys):
            m.add_resource(k, 70 if mixed and i == 2 else 100)
        p = m.processor("c1")
        q = m.processor("c2")
        p.assign(keys[:5])
        loop.run_until(3_000)
        grouped_batches = 0
        states: list[Any] = []
        for op, dt, i in ops:
            loop.run_until(loop.now + dt)
            k = keys[i]
            if op == "commit":
                for c in (p, q):
                    sent = c.commit_positions(frozenset(keys), polled=True)
                    states.append([(r.key, v) for r, v in sent.items()])
                    for r, v in sent.items():
                        r.committed = max(r.committed, v)
            elif op == "sample":
                states.append(m.sample_lag())
            elif op == "revoke":
                p.release([k], commit=True)
            elif op == "assign":
                p.assign([k])
            elif op == "take":
                q.assign([k])
            elif op == "settle":
                states.append(_state(m))
            grouped_batches += bool(p._grp and p.batch)
        loop.run_until(loop.now + 20_000)
        states.append(_state(m))
        runs.append((repr(states), grouped_batches))
    (a, _), (b, never) = runs
    assert a == b
    assert never == 0


def test_a_member_in_step_given_a_partition_catches_up_with_its_others_as_one_step() -> None:
    """The resources a member kept up with in step share one state through the catch-up
    (its batches take the same share of each): found when the partition is activated, kept
    through the batches, and left when another processor takes one of them."""
    loop = Loop()
    m = loop.model(fixed(100, 1.0, fetch_latency_ms=50, max_poll_records=50))
    keys = [f"p{i}" for i in range(5)]
    for k in keys:
        m.add_resource(k, 100)
    p = m.processor("c1")
    p.assign(keys[:4])
    loop.run_until(3_000)
    p.commit_positions(frozenset(keys), polled=True)
    assert p._steady is not None
    loop.run_until(10_000)  # p4 behind by 1,000 records
    p.assign([keys[4]])
    loop.run_until(10_000)
    kept = {m.resources[k] for k in keys[:4]}
    assert p._grp == kept and not p.stream
    shared = 0
    for t in range(10_010, 11_000, 10):
        loop.run_until(t)
        p.advance(t)
        assert p._grp == kept
        assert len({(r.t, r.hw, r.lag, p._p[r]) for r in kept}) == 1  # still one state
        if p.batch:
            shared += sum(r in kept for _, r, _, _ in p.batch)  # its others in the batch too
    assert shared
    q = m.processor("c2")
    q.assign([keys[1]])
    loop.run_until(11_000)
    assert p._grp is None  # another processor writes one of them


@pytest.mark.parametrize("at", [9_000, 10_000, 10_300, 12_000])
def test_a_rate_change_of_some_resources_leaves_the_step_inside_a_catch_up(at: int) -> None:
    """A topic's growth moves the production of some resources of a member (its old
    partitions of that topic) and not the others: the resources it kept up with in one state
    are no longer one state (before, in and after its catch-up), the same run as computing
    each resource alone."""
    runs = []
    for grouped in (True, False):
        loop = Loop()
        m = loop.model(fixed(100, 1.0, fetch_latency_ms=50, max_poll_records=50))
        m.group_ok = grouped
        keys = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
        for k in keys:
            m.add_resource(k, 100)
        p = m.processor("c1")
        p.assign(keys[:4])
        loop.run_until(3_000)
        p.commit_positions(frozenset(keys), polled=True)  # (in step)
        loop.run_until(10_000)
        p.assign([keys[4]])  # a catch-up over all five
        loop.run_until(at)
        m.set_rates({("a", 0): 40, ("a", 1): 40})
        loop.run_until(at + 200)
        m._sampled_at = None
        sample = m.sample_lag()
        loop.run_until(20_000)
        runs.append(repr((sample, _state(m))))
    assert runs[0] == runs[1]
