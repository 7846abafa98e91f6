"""The share-partition state machine (KIP-932 in-flight records, acquisition locks, delivery
counts) and its durable record: unit tests and hypothesis properties."""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.share_partitions.config import ShareConfig
from groupcoord.coordinator.share_partitions.partition import (
    Acknowledgement,
    AckType,
    AcquiredRange,
    RecordState,
    SharePartition,
)
from groupcoord.coordinator.share_partitions.records import (
    ShareStateDecodeError,
    ShareStateKey,
    ShareStateValue,
    StateBatch,
)
from groupcoord.protocol.errors import CoordinatorError, ErrorCode

CFG = ShareConfig(lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=50)


def ack(first: int, last: int, *types: AckType) -> Acknowledgement:
    return Acknowledgement(first, last, tuple(int(t) for t in types))


def test_acquire_new_records_then_nothing_until_released() -> None:
    sp = SharePartition(CFG, 0)
    got = sp.acquire("a", [(0, 4), (5, 9)], 500, now_ms=0)
    assert got == [AcquiredRange(0, 9, 1)]
    assert sp.acquired("a") == 10 and sp.next_offset == 10
    assert sp.fetch_offset() == 10  # nothing available below the end
    assert sp.acquire("b", [(0, 4), (5, 9)], 500, now_ms=1) == []


def test_accept_moves_the_start_offset_and_release_redelivers_with_a_higher_count() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 4)], 500, now_ms=0)
    assert sp.acknowledge("a", [ack(0, 1, AckType.ACCEPT), ack(2, 2, AckType.RELEASE),
                                ack(3, 4, AckType.REJECT)], now_ms=1) == 0
    assert sp.start_offset == 2
    assert sp.records[2].state is RecordState.AVAILABLE
    assert sp.fetch_offset() == 2
    assert sp.acquire("b", [(0, 4)], 500, now_ms=2) == [AcquiredRange(2, 2, 2)]


def test_acknowledgement_of_records_held_by_another_member_is_refused_whole() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 1)], 500, now_ms=0)
    sp.acquire("b", [(2, 3)], 500, now_ms=0)
    code = sp.acknowledge("a", [ack(0, 1, AckType.ACCEPT), ack(2, 2, AckType.ACCEPT)], now_ms=1)
    assert code == ErrorCode.invalid_record_state
    assert sp.start_offset == 0 and sp.records[0].state is RecordState.ACQUIRED
    assert sp.acknowledge("a", [ack(5, 6, AckType.ACCEPT)], 1) == ErrorCode.invalid_record_state
    assert sp.acknowledge("a", [ack(1, 0, AckType.ACCEPT)], 1) == ErrorCode.invalid_request
    assert sp.acknowledge("a", [ack(0, 1, AckType.ACCEPT, AckType.ACCEPT, AckType.ACCEPT)],
                          1) == ErrorCode.invalid_request
    assert sp.acknowledge("a", [Acknowledgement(0, 1, (9,))], 1) == ErrorCode.invalid_request
    # overlapping or descending batches are refused whole, before any is applied
    assert sp.acknowledge("a", [ack(0, 1, AckType.ACCEPT), ack(1, 1, AckType.ACCEPT)],
                          1) == ErrorCode.invalid_request
    assert sp.acknowledge("a", [ack(1, 1, AckType.ACCEPT), ack(0, 0, AckType.ACCEPT)],
                          1) == ErrorCode.invalid_request
    assert sp.records[0].state is sp.records[1].state is RecordState.ACQUIRED


def test_per_offset_types_and_gaps() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 3)], 500, now_ms=0)
    assert sp.acknowledge("a", [ack(0, 3, AckType.ACCEPT, AckType.GAP, AckType.RELEASE,
                                    AckType.ACCEPT)], now_ms=1) == 0
    assert sp.start_offset == 2
    assert [sp.records[o].state for o in (2, 3)] == [RecordState.AVAILABLE,
                                                     RecordState.ACKNOWLEDGED]


def test_lock_expiry_releases_and_the_delivery_limit_archives() -> None:
    sp = SharePartition(CFG, 0)
    for attempt in range(1, 4):
        now = attempt * 10_000
        assert sp.acquire("a", [(0, 0)], 500, now_ms=now) == [AcquiredRange(0, 0, attempt)]
        assert sp.next_deadline() == now + 1000
        assert not sp.expire(now + 999)
        assert sp.expire(now + 1000)
    assert sp.start_offset == 1  # archived at the limit of 3 deliveries
    assert sp.acquire("a", [(0, 0)], 500, now_ms=99_000) == []


def test_release_member_and_renew() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 1)], 500, now_ms=0)
    sp.acquire("b", [(2, 3)], 500, now_ms=0)
    assert sp.acknowledge("b", [ack(2, 3, AckType.RENEW)], now_ms=500) == 0
    assert sp.records[2].deadline_ms == 1500
    assert sp.release_member("a") and not sp.release_member("a")
    assert sp.acquired("a") == 0 and sp.acquired("b") == 2
    assert sp.records[0].state is RecordState.AVAILABLE


def test_max_records_stops_at_a_batch_boundary_and_the_window_is_bounded() -> None:
    sp = SharePartition(CFG, 0)
    got = sp.acquire("a", [(0, 9), (10, 19), (20, 29)], 15, now_ms=0)
    assert got == [AcquiredRange(0, 19, 1)]  # the second batch is taken whole
    got = sp.acquire("b", [(20, 29), (30, 39), (40, 49), (50, 59)], 500, now_ms=0)
    assert got == [AcquiredRange(20, 49, 1)]  # max.record.locks=50 from the start offset
    assert sp.fetch_offset() is None


def test_record_limit_mode_stops_inside_a_batch() -> None:
    sp = SharePartition(CFG, 0)
    got = sp.acquire("a", [(0, 9), (10, 19)], 15, now_ms=0, record_limit=True)
    assert got == [AcquiredRange(0, 14, 1)] and sp.next_offset == 15
    assert sp.acquire("b", [(10, 19)], 3, now_ms=0, record_limit=True) == [
        AcquiredRange(15, 17, 1)]


def test_undeliverable_batches_are_archived_never_acquired() -> None:
    sp = SharePartition(CFG, 0)
    got = sp.acquire("a", [(0, 1), (2, 2), (3, 5)], 500, now_ms=0, undeliverable={2})
    assert got == [AcquiredRange(0, 1, 1), AcquiredRange(3, 5, 1)]
    assert sp.records[2].state is RecordState.ARCHIVED
    assert sp.acknowledge("a", [ack(0, 1, AckType.ACCEPT)], now_ms=1) == 0
    assert sp.start_offset == 3
    # an aborted transaction's batch after a release: archived, not delivered again
    sp.acknowledge("a", [ack(3, 5, AckType.RELEASE)], now_ms=2)
    assert sp.acquire("b", [(3, 5)], 500, now_ms=3, undeliverable={3}) == []
    assert sp.start_offset == 6


def test_holes_in_the_log_are_archived() -> None:
    sp = SharePartition(CFG, 0)
    assert sp.acquire("a", [(3, 4)], 500, now_ms=0) == [AcquiredRange(3, 4, 1)]
    assert sp.start_offset == 3


def test_a_lowered_limit_archives_an_available_record_at_it() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 0)], 500, now_ms=0)
    sp.expire(10_000)
    sp.acquire("a", [(0, 0)], 500, now_ms=20_000)
    sp.expire(30_000)
    sp.config = ShareConfig(lock_duration_ms=1000, delivery_count_limit=2)
    assert sp.acquire("a", [(0, 0)], 500, now_ms=40_000) == []
    assert sp.start_offset == 1


def test_recovery_makes_acquired_records_available_with_their_count() -> None:
    sp = SharePartition(CFG, 5)
    sp.acquire("a", [(5, 9)], 500, now_ms=0)
    sp.acknowledge("a", [ack(6, 6, AckType.ACCEPT)], now_ms=1)
    value = ShareStateValue.decode(sp.value().encode())
    back = SharePartition.from_value(CFG, value)
    assert back.start_offset == 5 and back.next_offset == 10
    assert back.acquired() == 0
    assert [(back.records[o].state, back.records[o].delivery_count) for o in range(5, 10)] == [
        (RecordState.AVAILABLE, 1), (RecordState.ACKNOWLEDGED, 1), (RecordState.AVAILABLE, 1),
        (RecordState.AVAILABLE, 1), (RecordState.AVAILABLE, 1)]
    assert back.acquire("b", [(5, 9)], 500, now_ms=2) == [AcquiredRange(5, 5, 2),
                                                          AcquiredRange(7, 9, 2)]


def test_reset_starts_again_with_a_new_state_epoch() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire("a", [(0, 3)], 500, now_ms=0)
    sp.reset(2)
    assert (sp.start_offset, sp.next_offset, sp.state_epoch, sp.records) == (2, 2, 1, {})


def test_record_encoding_round_trip_and_bad_bytes() -> None:
    key = ShareStateKey("g", UUID(int=7), 3)
    assert ShareStateKey.decode(key.encode()) == key
    value = ShareStateValue(2, 10, (StateBatch(10, 12, 2, 1), StateBatch(13, 13, 0, 4)))
    assert ShareStateValue.decode(value.encode()) == value
    for bad in (b"", b"\x00\x07" + value.encode()[2:], value.encode()[:-1]):
        with pytest.raises(ShareStateDecodeError):
            ShareStateValue.decode(bad)
    with pytest.raises(ShareStateDecodeError):
        ShareStateKey.decode(b"\x00\x01\x00\x00")


def test_config_from_properties() -> None:
    cfg = ShareConfig.from_properties({"share.record.lock.duration.ms": "15000",
                                       "share.auto.offset.reset": "EARLIEST"})
    assert (cfg.lock_duration_ms, cfg.auto_offset_reset, cfg.delivery_count_limit) == (
        15000, "earliest", 5)
    with pytest.raises(CoordinatorError):
        ShareConfig.from_properties({"share.delivery.count.limit": "x"})
    with pytest.raises(CoordinatorError):
        ShareConfig.from_properties({"share.isolation.level": "serializable"})


# ---------------------------------------------------------------------- properties

MEMBERS = ("a", "b", "c")

operation = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 12), st.booleans()),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 40), st.integers(0, 6),
              st.sampled_from(list(AckType))),
    st.tuples(st.just("ack_own"), st.sampled_from(MEMBERS), st.sampled_from(list(AckType))),
    st.tuples(st.just("tick"), st.integers(0, 1500)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("restart")),
)


def _log_batches(start: int, end: int, size: int = 4) -> list[tuple[int, int]]:
    return [(b, min(b + size - 1, end - 1)) for b in range(start - start % size, end, size)]


def _durable(sp: SharePartition) -> dict[int, tuple[RecordState, int]]:
    return {o: (RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state,
                r.delivery_count) for o, r in sp.records.items()}


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=60), st.integers(0, 3))
def test_invariants_on_random_operations(ops: list[tuple], limit_minus_one: int) -> None:
    cfg = ShareConfig(lock_duration_ms=1000, delivery_count_limit=limit_minus_one + 1,
                      max_record_locks=20)
    log_end = 40
    sp = SharePartition(cfg, 0)
    now = 0
    for op in ops:
        if op[0] == "fetch":
            offset = sp.fetch_offset()
            if offset is not None:
                held = {o for o, r in sp.records.items() if r.state is RecordState.ACQUIRED}
                # batches at 8k+4 stand for control batches / aborted transactions
                skip = {b for b in range(4, log_end, 8)} if op[3] else set()
                got = sp.acquire(op[1], _log_batches(offset, log_end), op[2], now,
                                 undeliverable=skip)
                for r in got:
                    # never a record another member (or the same one) still holds, nor one
                    # of a batch no client may see
                    assert not held & set(range(r.first_offset, r.last_offset + 1))
                    assert not any(r.first_offset <= b + k <= r.last_offset
                                   for b in skip for k in range(4))
                    assert all(sp.records[o].member == op[1] for o in range(r.first_offset,
                                                                            r.last_offset + 1))
        elif op[0] == "ack":
            last = min(op[2] + op[3], log_end - 1)
            if op[2] <= last:
                sp.acknowledge(op[1], [ack(op[2], last, op[4])], now)
        elif op[0] == "ack_own":
            mine = sorted(o for o, r in sp.records.items() if r.member == op[1])
            if mine:
                assert sp.acknowledge(op[1], [Acknowledgement(o, o, (int(op[2]),))
                                              for o in mine], now) == 0
                assert sp.acquired(op[1]) == (len(mine) if op[2] == AckType.RENEW else 0)
        elif op[0] == "tick":
            now += op[1]
            sp.expire(now)
        elif op[0] == "leave":
            sp.release_member(op[1])
            assert sp.acquired(op[1]) == 0
        else:  # a restart: replay the durable record
            before = _durable(sp)
            sp = SharePartition.from_value(cfg, ShareStateValue.decode(sp.value().encode()))
            assert _durable(sp) == before  # I4: replay equals the live durable state
        # the window is exactly [start, next) and bounded
        assert set(sp.records) == set(range(sp.start_offset, sp.next_offset))
        assert sp.next_offset - sp.start_offset <= cfg.max_record_locks
        assert sp.start_offset == sp.next_offset or sp.records[sp.start_offset].state not in (
            RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        for r in sp.records.values():
            # delivery count never above the limit; one holder per acquired record
            assert 0 <= r.delivery_count <= cfg.delivery_count_limit
            assert (r.member is not None) == (r.state is RecordState.ACQUIRED)
        # replay of the state record equals the live state
        replayed = SharePartition.from_value(cfg, sp.value())
        assert _durable(replayed) == _durable(sp)
        assert (replayed.start_offset, replayed.next_offset) == (sp.start_offset, sp.next_offset)
    # acquisitions stop and the locks expire: nothing is left acquired
    sp.expire(now + cfg.lock_duration_ms)
    assert sp.acquired() == 0
    assert all(r.state in (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
               for r in sp.records.values())
