"""``Shard.expire_timers``: timers a firing timer schedules for the same instant fire in the
same call (found by the simulator: a classic group whose last member expired scheduled its
rebalance timeout, 0 ms with no members, at the current time, and it never fired)."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.shard import Shard

from .support import image


def test_timers_scheduled_at_now_by_a_timer_fire_in_the_same_call() -> None:
    shard = Shard(metadata=image(foo=1))
    fired: list[tuple[str, int]] = []

    def first(key: Any, payload: Any) -> None:
        fired.append(("first", shard.now))
        shard.schedule(("second", "g"), shard.now)        # zero delay
        shard.schedule(("third", "g"), shard.now + 10)    # later: not now

    def second(key: Any, payload: Any) -> None:
        fired.append(("second", shard.now))

    def third(key: Any, payload: Any) -> None:
        fired.append(("third", shard.now))

    shard.register_timer("first", first)
    shard.register_timer("second", second)
    shard.register_timer("third", third)
    shard.timers.schedule(("first", "g"), 100)
    shard.expire_timers(100)
    assert fired == [("first", 100), ("second", 100)]
    assert shard.next_deadline() == 110
    shard.expire_timers(110)
    assert fired[-1] == ("third", 110) and shard.next_deadline() is None


def test_a_timer_rescheduled_or_cancelled_by_an_earlier_one_due_at_the_same_instant_does_not_fire(
) -> None:
    shard = Shard(metadata=image(foo=1))
    fired: list[str] = []

    def first(key: Any, payload: Any) -> None:
        fired.append("first")
        shard.schedule(("renewed", "g"), shard.now + 10)
        shard.cancel(("cancelled", "g"))

    shard.register_timer("first", first)
    shard.register_timer("renewed", lambda key, payload: fired.append("renewed"))
    shard.register_timer("cancelled", lambda key, payload: fired.append("cancelled"))
    for kind in ("first", "renewed", "cancelled"):
        shard.timers.schedule((kind, "g"), 100)
    shard.expire_timers(100)
    assert fired == ["first"]
    assert shard.next_deadline() == 110
    shard.expire_timers(110)
    assert fired == ["first", "renewed"] and shard.next_deadline() is None
