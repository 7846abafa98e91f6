"""I2's check of the inverted target (``sim/consumer_invariants.py``): the in-place reading
(``_index_inverts``) answers True only where the exact comparison holds
(``ix.consistent()`` and ``ix.inverse() == inversion(mappings)``), and True wherever the index
was built from the mappings and they are a valid target (so the fast path is the one taken)."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors.target_index import TargetIndex, inversion
from groupcoord.sim.consumer_invariants import _index_inverts

from .test_target_index import MAPPINGS, OPS

Assignment = Mapping[UUID, frozenset[int]]


def exact(ix: TargetIndex, mappings: Mapping[str, Assignment]) -> bool:
    expected = inversion(mappings)
    return ix.consistent() and expected is not None and ix.inverse() == expected


@settings(max_examples=400, deadline=None)
@given(OPS, st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), MAPPINGS),
                     max_size=3))
def test_in_place_reading_agrees_with_the_exact_comparison(
        ops: list[tuple[str, str, Assignment]],
        edits: list[tuple[str, Assignment]]) -> None:
    """Any sequence of target records (partitions claimed twice for a while, empty sets,
    ids out of range), checked against the mappings it was built from and against mappings
    that differ from them (a member's mapping replaced or added behind the index's back)."""
    ix = TargetIndex()
    mappings: dict[str, Assignment] = {}
    for op, mid, mapping in ops:
        if op == "remove":
            ix.remove(mid)
            mappings.pop(mid, None)
        else:
            if op == "same" and mid in mappings:
                mapping = mappings[mid]
            ix.put(mid, mapping)
            mappings[mid] = mapping
        assert _index_inverts(ix, mappings) == exact(ix, mappings)
    other = dict(mappings)
    for mid, mapping in edits:
        other[mid] = mapping
        fast = _index_inverts(ix, other)
        assert not fast or exact(ix, other)
        assert fast == exact(ix, other)
