"""Share sessions (``server/share_sessions.py``, KIP-932; Kafka's ShareSessionCache): epochs,
full and incremental requests, the final epoch, per-broker sessions, the bounded cache (no
eviction), sessions closed with their connection."""

from __future__ import annotations

from uuid import UUID

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.share_sessions import (
    FINAL_EPOCH,
    ShareSessionCache,
    ShareSessionError,
    next_epoch,
)

T = UUID(int=1)


def test_epochs_advance_and_a_wrong_one_changes_nothing() -> None:
    cache = ShareSessionCache()
    s, gone = cache.open("g", "m", [(T, 0)], now_ms=0)
    assert (s.epoch, gone, list(s.partitions)) == (1, [], [(T, 0)])
    assert cache.use("g", "m", 1, now_ms=1) is s and s.epoch == 2
    with pytest.raises(ShareSessionError) as e:
        cache.use("g", "m", 5, now_ms=2)
    assert e.value.code == ErrorCode.invalid_share_session_epoch and e.value.dropped is None
    # the session is kept with its epoch: the right epoch carries on
    assert cache.of_member("g", "m") is s and s.epoch == 2 and s.last_used_ms == 1
    assert cache.use("g", "m", 2, now_ms=3) is s and s.epoch == 3
    with pytest.raises(ShareSessionError) as e:
        cache.use("g", "x", 3, now_ms=3)
    assert e.value.code == ErrorCode.share_session_not_found
    assert next_epoch(2**31 - 1) == 1


def test_the_final_epoch_does_not_advance_and_reopening_replaces() -> None:
    cache = ShareSessionCache()
    s, _ = cache.open("g", "m", [], now_ms=0)
    assert cache.use("g", "m", FINAL_EPOCH, now_ms=1) is s and s.epoch == 1
    again, gone = cache.open("g", "m", [(T, 1)], now_ms=2)
    assert gone == [s] and again is not s and len(cache) == 1


def test_sessions_are_per_broker_and_close_with_their_connection() -> None:
    cache = ShareSessionCache()
    a, _ = cache.open("g", "m", [(T, 0)], 0, connection=7, broker=0)
    b, _ = cache.open("g", "m", [(T, 1)], 0, connection=8, broker=1)
    assert cache.use("g", "m", 1, 1, connection=7, broker=0) is a
    assert cache.use("g", "m", 1, 1, connection=8, broker=1) is b  # its own epoch
    assert cache.connection_closed(7) == [a] and cache.of_member("g", "m", 1) is b
    assert cache.close_member("g", "m") == [b] and len(cache) == 0


def test_a_full_cache_refuses_a_new_session_however_idle_the_others() -> None:
    cache = ShareSessionCache(max_sessions=2)
    cache.open("g", "a", [], now_ms=0)
    cache.open("g", "b", [], now_ms=10)
    for now in (11, 10 * 60_000):  # Kafka 4.1+: no idle eviction
        with pytest.raises(ShareSessionError) as e:
            cache.open("g", "c", [], now_ms=now)
        assert e.value.code == ErrorCode.share_session_limit_reached and len(cache) == 2
    assert cache.of_member("g", "a") is not None and cache.of_member("g", "c") is None
    # reopening an existing session never counts against the limit
    again, gone = cache.open("g", "a", [], now_ms=10 * 60_000)
    assert len(gone) == 1 and cache.of_member("g", "a") is again and len(cache) == 2
    # a closed session frees its place
    cache.close("g", "b")
    cache.open("g", "c", [], now_ms=10 * 60_000 + 1)
    assert len(cache) == 2
