"""The transaction coordinator's core (``transactions/``): KIP-98 states and epochs, KIP-360 /
KIP-588 recovery, timeouts and expiration as data, records and replay.

Properties (hypothesis) on random operation sequences of several producers sharing ids: replay
of the records equals the live state (I4 for transactions); a producer epoch never decreases
for a producer id; no transaction is both committed and aborted (a marker job carries the
decision of the Prepare state it was made in, and completing it writes that decision); every
state change is one of Kafka's transitions.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.runtime import partition_for as group_partition_for
from groupcoord.transactions.config import TransactionConfig
from groupcoord.transactions.coordinator import (
    MarkerJob,
    TransactionCoordinator,
    TxnResult,
    partition_for,
)
from groupcoord.transactions.records import (
    CoordinatorEpochRecord,
    TransactionRecord,
    decode,
    encode,
)
from groupcoord.transactions.state import (
    MAX_PRODUCER_EPOCH,
    VALID_PREVIOUS,
    TransactionMetadata,
    TransactionState,
)

S = TransactionState
CONFIG = TransactionConfig(max_timeout_ms=60_000, id_expiration_ms=100_000, partitions=5)


class Harness:
    """A coordinator and its log (encoded records), markers completed on request."""

    def __init__(self, config: TransactionConfig = CONFIG) -> None:
        self.ids = itertools.count(1000)
        self.config = config
        self.c = TransactionCoordinator(config, lambda: next(self.ids))
        self.log: list[tuple[bytes, bytes | None]] = []
        self.jobs: list[MarkerJob] = []

    def run(self, result: TxnResult, now: int = 0, complete: bool = True) -> TxnResult:
        self.log.extend(encode(r) for r in result.records)
        self.jobs.extend(result.markers)
        if complete:
            for job in result.markers:
                done = self.c.markers_written(job, now)
                self.log.extend(encode(r) for r in done.records)
        return result

    def init(self, tid: str = "t", now: int = 0, pid: int = -1, epoch: int = -1,
             timeout: int = 10_000) -> TxnResult:
        r = self.run(self.c.init_producer_id(tid, timeout, now, pid, epoch), now)
        if r.retry_after_markers:
            r = self.run(self.c.init_producer_id(tid, timeout, now, pid, epoch), now)
        return r

    def replayed(self) -> TransactionCoordinator:
        other = TransactionCoordinator(self.config, lambda: -99)
        for k, v in self.log:
            other.replay(decode(k, v))
        return other


def test_init_gives_a_producer_id_at_epoch_zero_then_bumps_the_epoch() -> None:
    h = Harness()
    first = h.init()
    assert (first.error, first.producer_id, first.producer_epoch) == (0, 1000, 0)
    second = h.init()
    assert (second.producer_id, second.producer_epoch) == (1000, 1)
    assert h.c.txns["t"].state is S.EMPTY


def test_init_checks_the_id_and_timeout() -> None:
    h = Harness()
    assert h.c.init_producer_id("", 1000, 0).error == E.invalid_request
    assert h.c.init_producer_id("t", 0, 0).error == E.invalid_transaction_timeout
    assert h.c.init_producer_id("t", 60_001, 0).error == E.invalid_transaction_timeout
    assert h.c.txns == {}


def test_a_transaction_commits_through_prepare_and_complete() -> None:
    h = Harness()
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    h.run(h.c.add_partitions("t", pid, epoch, [("a", 1), ("a", 0)], 5))
    h.run(h.c.add_offsets("t", pid, epoch, "g", 6))
    m = h.c.txns["t"]
    assert (m.state, m.partitions, m.groups, m.start_ms) == (S.ONGOING, (("a", 0), ("a", 1)),
                                                              ("g",), 5)
    end = h.run(h.c.end_txn("t", pid, epoch, True, 7), 7, complete=False)
    assert end.error == 0 and h.c.txns["t"].state is S.PREPARE_COMMIT
    (job,) = end.markers
    assert (job.commit, job.partitions, job.groups, job.producer_epoch) == (
        True, (("a", 0), ("a", 1)), ("g",), epoch)
    # requests meanwhile: the transaction is completing
    assert h.c.add_partitions("t", pid, epoch, [("b", 0)], 8).error == E.concurrent_transactions
    assert h.c.end_txn("t", pid, epoch, True, 8).error == E.concurrent_transactions
    assert h.c.end_txn("t", pid, epoch, False, 8).error == E.invalid_txn_state
    h.run(h.c.markers_written(job, 9))
    m = h.c.txns["t"]
    assert (m.state, m.partitions, m.groups) == (S.COMPLETE_COMMIT, (), ())
    assert h.c.end_txn("t", pid, epoch, True, 10).error == 0  # a retry
    assert h.c.end_txn("t", pid, epoch, False, 10).error == E.invalid_txn_state
    assert h.c.markers_written(job, 11).records == []  # written twice: nothing more


def test_end_without_a_transaction_and_wrong_producers_are_refused() -> None:
    h = Harness()
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    assert h.c.end_txn("t", pid, epoch, True, 1).error == E.invalid_txn_state
    assert h.c.end_txn("nobody", pid, epoch, True, 1).error == E.invalid_producer_id_mapping
    assert h.c.add_partitions("t", pid + 1, epoch, [("a", 0)], 1).error == (
        E.invalid_producer_id_mapping)
    assert h.c.add_partitions("t", pid, epoch + 1, [("a", 0)], 1).error == E.producer_fenced


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction() -> None:
    h = Harness()
    old = h.init()
    h.run(h.c.add_partitions("t", old.producer_id, 0, [("a", 0)], 1))
    first = h.c.init_producer_id("t", 10_000, 2)
    assert first.retry_after_markers
    (job,) = first.markers
    assert (job.commit, job.producer_epoch, job.partitions) == (False, 1, (("a", 0),))
    h.run(first, 2)
    new = h.run(h.c.init_producer_id("t", 10_000, 3), 3)
    assert (new.error, new.producer_id, new.producer_epoch) == (0, old.producer_id, 2)
    assert h.c.txns["t"].state is S.EMPTY
    # the zombie: fenced everywhere, and cannot recover with its old epoch
    assert h.c.add_partitions("t", old.producer_id, 0, [("a", 0)], 4).error == E.producer_fenced
    assert h.c.end_txn("t", old.producer_id, 0, True, 4).error == E.producer_fenced
    assert h.c.init_producer_id("t", 10_000, 4, old.producer_id, 0).error == E.producer_fenced


def test_kip_588_a_producer_recovers_after_its_transaction_timed_out() -> None:
    h = Harness()
    r = h.init(timeout=1000)
    pid = r.producer_id
    h.run(h.c.add_partitions("t", pid, 0, [("a", 0)], 100))
    assert h.c.next_deadline() == 100 + 1000 + 1
    assert h.run(h.c.expire(1100), 1100).markers == []  # not yet: Kafka aborts after start + timeout
    expired = h.run(h.c.expire(1101), 1101)
    (job,) = expired.markers
    assert (job.commit, job.producer_epoch) == (False, 1)
    assert h.c.txns["t"].state is S.COMPLETE_ABORT
    assert h.c.end_txn("t", pid, 0, True, 1200).error == E.producer_fenced
    again = h.init(pid=pid, epoch=0, now=1300)  # the old epoch is the last epoch: no second bump
    assert (again.error, again.producer_id, again.producer_epoch) == (0, pid, 1)
    retry = h.init(pid=pid, epoch=0, now=1301)  # the same request retried: the same answer
    assert (retry.error, retry.producer_epoch) == (0, 1)
    bump = h.init(pid=pid, epoch=1, now=1302)  # KIP-360: a bump from the current epoch
    assert (bump.error, bump.producer_epoch) == (0, 2)


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    h = Harness()
    h.init()
    meta = h.c.txns["t"]
    from dataclasses import replace
    h.c.replay(TransactionRecord("t", replace(meta, producer_epoch=MAX_PRODUCER_EPOCH - 1)))
    r = h.init(now=5)
    assert (r.producer_epoch, h.c.txns["t"].previous_producer_id) == (0, meta.producer_id)
    assert r.producer_id != meta.producer_id


def test_an_idle_transactional_id_expires_with_a_tombstone() -> None:
    h = Harness()
    h.init(now=10)
    assert h.c.next_deadline() == 10 + CONFIG.id_expiration_ms
    r = h.run(h.c.expire(10 + CONFIG.id_expiration_ms))
    assert r.records == [TransactionRecord("t", None)]
    assert h.c.txns == {} and h.replayed().txns == {}


def test_load_bumps_the_coordinator_epoch_and_finds_prepared_transactions() -> None:
    h = Harness()
    r = h.init()
    h.run(h.c.add_partitions("t", r.producer_id, 0, [("a", 0)], 1))
    h.run(h.c.end_txn("t", r.producer_id, 0, False, 2), complete=False)
    other = h.replayed()
    loaded = other.load(range(CONFIG.partitions))
    assert [rec for rec in loaded.records if isinstance(rec, CoordinatorEpochRecord)] == [
        CoordinatorEpochRecord(p, 1) for p in range(CONFIG.partitions)]
    (job,) = loaded.markers
    assert (job.transactional_id, job.commit, job.coordinator_epoch) == ("t", False, 1)
    assert other.load([partition_for("t", CONFIG.partitions)]).markers[0].coordinator_epoch == 2


def test_list_filters_by_state_producer_duration_and_pattern() -> None:
    h = Harness()
    a = h.init("app-1")
    h.init("app-2")
    h.init("other")
    h.run(h.c.add_partitions("app-1", a.producer_id, 0, [("x", 0)], 100))
    ids = lambda found: [m.transactional_id for m in found[0]]  # noqa: E731
    assert ids(h.c.list()) == ["app-1", "app-2", "other"]
    assert ids(h.c.list(states=["Ongoing"])) == ["app-1"]
    assert h.c.list(states=["Nope", "Empty"])[1] == ["Nope"]
    assert ids(h.c.list(producer_ids=[a.producer_id])) == ["app-1"]
    assert ids(h.c.list(min_duration_ms=50, now_ms=200)) == ["app-1"]
    assert ids(h.c.list(min_duration_ms=500, now_ms=200)) == []
    assert ids(h.c.list(pattern="app-.*")) == ["app-1", "app-2"]


@given(tid=st.text(max_size=20), ints=st.lists(st.integers(-1, 2**62), min_size=7, max_size=7),
       state=st.sampled_from(list(TransactionState)),
       partitions=st.lists(st.tuples(st.text(max_size=30), st.integers(0, 2**31 - 1)),
                           max_size=4),
       groups=st.lists(st.text(max_size=30), max_size=3))
@settings(max_examples=150, deadline=None)
def test_metadata_values_are_json_dumps_bytes(tid: str, ints: list[int],
                                              state: TransactionState,
                                              partitions: list[tuple[str, int]],
                                              groups: list[str]) -> None:
    """The value is written by hand: the bytes ``json.dumps`` with sorted keys and compact
    separators writes (quotes, backslashes, control and non-ASCII characters escaped alike)."""
    pid, epoch, last, previous, timeout, start, updated = ints
    meta = TransactionMetadata(tid, pid, epoch, last, previous, timeout, state,
                               tuple(partitions), tuple(groups), start, updated)
    _, value = encode(TransactionRecord(tid, meta))
    assert value is not None
    assert value[2:] == json.dumps({
        "producer_id": pid, "producer_epoch": epoch, "last_producer_epoch": last,
        "previous_producer_id": previous, "timeout_ms": timeout, "state": state.id,
        "partitions": [[t, p] for t, p in partitions], "groups": groups, "start_ms": start,
        "last_update_ms": updated}, sort_keys=True, separators=(",", ":")).encode()
    assert decode(*encode(TransactionRecord(tid, meta))) == TransactionRecord(tid, meta)


def test_records_round_trip_and_refuse_other_versions() -> None:
    h = Harness()
    h.init()
    rec = TransactionRecord("t", h.c.txns["t"])
    assert decode(*encode(rec)) == rec
    assert decode(*encode(CoordinatorEpochRecord(3, 7))) == CoordinatorEpochRecord(3, 7)
    key, value = encode(rec)
    with pytest.raises(ValueError):
        decode(key[:2] + b"\x00\x09" + key[4:], value)
    with pytest.raises(ValueError):
        decode(key, b"\x00\x05{}")


@settings(deadline=None)
@given(st.text(max_size=20), st.integers(min_value=1, max_value=100))
def test_partition_for_is_kafkas_and_the_group_coordinators(key: str, n: int) -> None:
    # Java's String.hashCode by its definition: s[0]*31^(n-1) + ... over UTF-16 code units
    units = [int.from_bytes(key.encode("utf-16-be")[i:i + 2], "big")
             for i in range(0, len(key.encode("utf-16-be")), 2)]
    h = sum(u * 31 ** (len(units) - 1 - i) for i, u in enumerate(units)) % 2**32
    h = h - 2**32 if h >= 2**31 else h
    assert partition_for(key, n) == (0 if h == -2**31 else abs(h)) % n
    assert partition_for(key, n) == group_partition_for(key, n)


# ------------------------------------------------------------------ properties

OPS = st.lists(st.tuples(
    st.sampled_from(["init", "init_expected", "add", "offsets", "commit", "abort", "complete",
                     "tick"]),
    st.sampled_from(["t1", "t2"]),
    st.integers(min_value=0, max_value=2),  # which producer handle of the id acts
    st.integers(min_value=0, max_value=3000),  # time passing
), max_size=60)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_properties_of_random_transaction_histories(ops: list[tuple[str, str, int, int]]) -> None:
    h = Harness(TransactionConfig(max_timeout_ms=60_000, id_expiration_ms=20_000, partitions=3))
    now = 0
    handles: dict[tuple[str, int], tuple[int, int]] = {}  # (id, handle) -> (pid, epoch) it holds
    pending: list[MarkerJob] = []
    seen_epochs: dict[int, int] = {}
    states: dict[str, TransactionState] = {}

    def apply(result: TxnResult) -> None:
        for rec in result.records:
            if isinstance(rec, TransactionRecord):  # every change is one of Kafka's transitions
                if rec.metadata is None:
                    states.pop(rec.transactional_id, None)
                else:
                    old = states.get(rec.transactional_id)
                    assert old is None or old in VALID_PREVIOUS[rec.metadata.state]
                    states[rec.transactional_id] = rec.metadata.state
            if isinstance(rec, TransactionRecord) and rec.metadata is not None:
                m = rec.metadata
                assert m.producer_epoch >= seen_epochs.get(m.producer_id, -1)  # epochs only grow
                seen_epochs[m.producer_id] = m.producer_epoch
            if isinstance(rec, TransactionRecord) and rec.metadata is not None and (
                    rec.metadata.state.completed):
                # a transaction completes as it was prepared: never both committed and aborted
                assert h.c.txns[rec.transactional_id].state is rec.metadata.state
        h.log.extend(encode(r) for r in result.records)
        for job in result.markers:
            # the job's decision is the prepared state's, at the transaction's epoch
            meta = h.c.txns[job.transactional_id]
            assert meta.state is (S.PREPARE_COMMIT if job.commit else S.PREPARE_ABORT)
            assert (meta.producer_id, meta.producer_epoch) == (job.producer_id, job.producer_epoch)
            h.jobs.append(job)
            pending.append(job)

    for op, tid, who, dt in ops:
        now += dt
        held = handles.get((tid, who))
        pid, epoch = held if held is not None else (-1, -1)
        if op in ("init", "init_expected"):
            args = (pid, epoch) if op == "init_expected" else (-1, -1)
            r = h.c.init_producer_id(tid, 5000, now, *args)
            apply(r)
            if r.retry_after_markers:
                for job in list(pending):
                    apply(h.c.markers_written(job, now))
                    pending.remove(job)
                r = h.c.init_producer_id(tid, 5000, now, *args)
                apply(r)
            if r.error == 0:
                handles[(tid, who)] = (r.producer_id, r.producer_epoch)
        elif op == "add":
            apply(h.c.add_partitions(tid, pid, epoch, [("a", who)], now))
        elif op == "offsets":
            apply(h.c.add_offsets(tid, pid, epoch, "g", now))
        elif op in ("commit", "abort"):
            apply(h.c.end_txn(tid, pid, epoch, op == "commit", now))
        elif op == "complete" and pending:
            job = pending.pop(0)
            prepared = h.c.txns.get(job.transactional_id)
            done = h.c.markers_written(job, now)
            apply(done)
            if done.records:  # completed: the outcome the job carried
                assert prepared is not None and prepared.state is (
                    S.PREPARE_COMMIT if job.commit else S.PREPARE_ABORT)
                assert h.c.txns[job.transactional_id].state is (
                    S.COMPLETE_COMMIT if job.commit else S.COMPLETE_ABORT)
        else:
            apply(h.c.expire(now))
        assert h.replayed().txns == h.c.txns  # replay equals live state
