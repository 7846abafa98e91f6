"""KIP-1251 assignment epochs: ``carried_epochs``, ``commit_check`` and ``held_epochs`` (which
read a member's maps once per topic) give exactly what :func:`held_since`, asked partition by
partition, says."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any
from uuid import UUID

from groupcoord.coordinator.modern.consumer.assignment_epochs import (
    carried_epochs,
    commit_check,
    held_epochs,
    held_since,
)

TOPICS = [UUID(int=i + 1) for i in range(4)]


def _member(rng: random.Random, epoch: int) -> Any:
    assigned: dict[UUID, frozenset[int]] = {}
    pending: dict[UUID, frozenset[int]] = {}
    epochs: dict[UUID, dict[int, int]] = {}
    for t in TOPICS:
        ps = [p for p in range(12) if rng.random() < 0.4]
        a = frozenset(p for p in ps if rng.random() < 0.7)
        b = frozenset(p for p in ps if p not in a)
        if a or rng.random() < 0.2:
            assigned[t] = a
        if b:
            pending[t] = b
        listed = {p: rng.randrange(1, epoch + 1) for p in ps if rng.random() < 0.5}
        if listed:
            epochs[t] = listed
    return SimpleNamespace(member_epoch=epoch, assigned_partitions=assigned,
                           partitions_pending_revocation=pending, assignment_epochs=epochs)


def _carried_by_definition(old: Any, new: Any) -> dict[UUID, dict[int, int]]:
    out: dict[UUID, dict[int, int]] = {}
    for source in (new.assigned_partitions, new.partitions_pending_revocation):
        for t, ps in source.items():
            for p in ps:
                e = held_since(old, t, p)
                if e is not None and e != new.member_epoch:
                    out.setdefault(t, {})[p] = e
    return out


def test_carried_epochs_are_held_since_per_partition() -> None:
    """Equal to the per-partition definition (the order of the mappings is not kept: the
    current-assignment record writes them sorted)."""
    rng = random.Random(7)
    for _ in range(300):
        old = _member(rng, rng.randrange(1, 9))
        new = _member(rng, old.member_epoch + rng.randrange(0, 3))
        got = carried_epochs(old, new)
        want = _carried_by_definition(old, new)
        assert got == want
    assert carried_epochs(None, _member(rng, 3)) == {}


def test_commit_check_is_held_since_at_or_before_the_commit_epoch() -> None:
    rng = random.Random(11)
    for _ in range(300):
        m = _member(rng, rng.randrange(2, 9))
        commit_epoch = rng.randrange(0, m.member_epoch)
        check = commit_check(m, commit_epoch)
        asked = [(rng.choice(TOPICS), rng.randrange(14)) for _ in range(40)]
        asked.sort(key=lambda tp: TOPICS.index(tp[0]))  # a commit asks topic by topic ...
        asked += [(rng.choice(TOPICS), rng.randrange(14)) for _ in range(10)]  # ... or not
        for t, p in asked:
            e = held_since(m, t, p)
            assert check(t, p) == (e is not None and e <= commit_epoch), (t, p)
            assert check(UUID(int=t.int), p) == check(t, p)  # an equal id, another object
        assert check(None, 0) is False


def test_held_epochs_is_held_since_of_every_partition_of_the_topic() -> None:
    """The map of a whole topic: a partition the member holds (assigned or pending revocation)
    maps to ``held_since``, one it does not hold is absent."""
    rng = random.Random(13)
    for _ in range(300):
        m = _member(rng, rng.randrange(1, 9))
        for t in [*TOPICS, UUID(int=99)]:
            want = {p: e for p in range(14) if (e := held_since(m, t, p)) is not None}
            assert held_epochs(m, t) == want
