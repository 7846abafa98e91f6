"""The inverted target assignment (``assignors/target_index.py``): kept record by record, it
always equals the inversion of the target it was given, and the uniform assignor's result with
it is the result of reading every member's target."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors import GroupSpec, MemberSubscription, UniformAssignor
from groupcoord.coordinator.assignors.target_index import (
    MAX_INDEXED_PARTITION,
    TargetIndex,
    inversion,
)
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.consumer.target_assignment import target_assignment_records
from groupcoord.coordinator.records import decode_assignment, encode_assignment
from groupcoord.coordinator.topics import TopicMetadata

from .test_assignor_uniform import (
    BAR,
    BAZ,
    EVENTS,
    FOO,
    TOPIC_POOL,
    apply_event,
    check_legal,
    normal,
    oracle,
)

Assignment = Mapping[UUID, frozenset[int]]

PARTITIONS = st.sampled_from([0, 1, 2, 3, 4, 5, -1, MAX_INDEXED_PARTITION])
MAPPINGS = st.dictionaries(st.sampled_from([FOO, BAR]), st.frozensets(PARTITIONS, max_size=4),
                           max_size=2)
OPS = st.lists(st.tuples(st.sampled_from(["set", "set", "remove", "same"]),
                         st.sampled_from(["a", "b", "c", "d"]), MAPPINGS), max_size=30)


def check_index(ix: TargetIndex, mappings: dict[str, Assignment]) -> None:
    """``ix`` describes ``mappings``: the same objects and counts, and the exact inversion
    whenever there is one (no partition twice, no empty set, nothing out of its range)."""
    assert ix.mappings.keys() == mappings.keys()
    assert all(ix.mappings[m] is a for m, a in mappings.items())
    assert ix.counts == {m: sum(map(len, a.values())) for m, a in mappings.items()}
    assert ix.pairs == sum(ix.counts.values())
    inverse = ix.inverse()
    assert ix.entries == sum(map(len, inverse.values()))
    assert {ix.topic_ids[k]: n for k, n in ix.owned.items()} == {
        t: len(row) for t, row in inverse.items()}
    assert all(row and row[-1] is not None for row in ix.owners.values())  # no trailing None
    for t, row in inverse.items():  # every entry is true, even when the target is not valid
        for p, m in row.items():
            assert p in mappings[m][t]
    expected = inversion(mappings)
    assert ix.consistent() == (expected is not None)
    if expected is not None:
        assert inverse == expected


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_index_is_the_inversion_after_any_sequence(ops: list[tuple[str, str, Assignment]]) -> None:
    """Any sequence of target-member records and tombstones, including partitions claimed by
    two members for a while (a record giving p to B before A's drops it), empty sets and ids
    out of the indexed range; then the same records replayed into a fresh index (a reload)."""
    ix = TargetIndex()
    mappings: dict[str, Assignment] = {}
    log: list[tuple[str, Assignment | None]] = []
    for op, mid, mapping in ops:
        if op == "remove":
            ix.remove(mid)
            mappings.pop(mid, None)
            log.append((mid, None))
        else:
            if op == "same" and mid in mappings:
                mapping = mappings[mid]
            ix.put(mid, mapping)
            mappings[mid] = mapping
            log.append((mid, mapping))
        check_index(ix, mappings)
    reloaded = TargetIndex()
    for mid, a in log:
        if a is None:
            reloaded.remove(mid)
        else:
            reloaded.put(mid, a)
    check_index(reloaded, mappings)
    if reloaded.consistent():
        assert reloaded.inverse() == ix.inverse()


def test_a_partition_moved_before_its_old_owner_drops_it() -> None:
    """Records are written member by member: B's record takes foo-1 before A's gives it up."""
    ix = TargetIndex()
    a0 = {FOO: frozenset({0, 1})}
    ix.put("A", a0)
    ix.put("B", {FOO: frozenset({1, 2})})
    assert not ix.consistent()  # foo-1 claimed twice, for now
    assert ix.inverse() == {FOO: {0: "A", 1: "B", 2: "B"}}
    ix.put("A", {FOO: frozenset({0})})
    assert ix.consistent()
    assert ix.inverse() == {FOO: {0: "A", 1: "B", 2: "B"}}
    ix.remove("B")
    assert ix.inverse() == {FOO: {0: "A"}}
    assert ix.owners == {FOO.int: ["A"]}  # trailing partitions nobody holds are trimmed


# ---------------------------------------------------------------------------------------------
# The uniform assignor with the index: the same result as reading every mapping
# ---------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.integers(1, 5), st.integers(0, 12), st.booleans())
def test_index_path_equals_full_read(events: list[tuple[str, int]], nmembers: int,
                                     nparts: int, rebuilt: bool) -> None:
    """The events of the memo's property test (members join, leave, are reset, topics grow,
    shrink, appear and go); the index follows the target as replay does; the assignor has no
    memo, so it takes the index whenever it can. ``rebuilt``: every mapping copied and the
    index built again each time (a reload)."""
    indexed = UniformAssignor(memo_members=0)
    names = dict(TOPIC_POOL)
    sizes = {FOO: nparts, BAR: 3}
    mids = [f"m{i}" for i in range(nmembers)]
    current: dict[str, Mapping[UUID, frozenset[int]]] = {mid: {} for mid in mids}
    ix = TargetIndex()
    counter = nmembers
    for event, k in events:
        counter = apply_event(event, k, current, sizes, counter)  # a leaver's target stays
        if rebuilt:
            current = {mid: decode_assignment(encode_assignment(a)) for mid, a in current.items()}
            ix = TargetIndex()
            for mid, a in current.items():
                ix.put(mid, a)
        subs = frozenset(sizes)
        topics = {t: TopicMetadata(t, names[t], n) for t, n in sizes.items()}
        spec = GroupSpec({mid: MemberSubscription(mid, subs, current[mid]) for mid in current},
                         topics, ix)
        copied = GroupSpec(
            {mid: MemberSubscription(mid, subs, copy.deepcopy(dict(current[mid])))
             for mid in current}, topics,
        )
        result = indexed.assign(spec)
        check_legal(spec, result)
        assert normal(result) == normal(UniformAssignor(memo_members=0).assign(copied))
        assert normal(result) == oracle(spec)
        for mid in list(ix.mappings):  # the new target's records, as replay applies them
            if mid not in result:
                ix.remove(mid)
        for mid in sorted(result):
            ix.put(mid, result[mid])
        current = dict(result)


def test_index_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rebuilt mappings (a reload) with their index: nobody's mapping is read but those of the
    members that give partitions up, and the result is the full read's."""
    import groupcoord.coordinator.assignors.uniform as uniform_module

    topics = {FOO: TopicMetadata(FOO, "foo", 12), BAR: TopicMetadata(BAR, "bar", 5)}
    subs = frozenset(topics)
    first = UniformAssignor().assign(GroupSpec(
        {m: MemberSubscription(m, subs) for m in "ABCD"}, topics))
    rebuilt = {m: decode_assignment(encode_assignment(a)) for m, a in first.items()}
    ix = TargetIndex()
    for m, a in rebuilt.items():
        ix.put(m, a)
    members = {m: MemberSubscription(m, subs, rebuilt[m]) for m in "ABC"}  # D left
    members["E"] = MemberSubscription("E", subs)
    members["F"] = MemberSubscription("F", subs)
    expected = UniformAssignor(memo_members=0).assign(GroupSpec(members, topics))

    def no_full_read(*args: object, **kwargs: object) -> object:
        raise AssertionError("full read taken")

    monkeypatch.setattr(uniform_module, "_read_all", no_full_read)
    got = UniformAssignor().assign(GroupSpec(members, topics, ix))
    assert normal(got) == normal(expected)
    assert got["A"] is not rebuilt["A"] or sum(map(len, rebuilt["A"].values())) <= 3


def test_inconsistent_index_is_not_used() -> None:
    """A partition claimed twice (invalid input): the assignor reads every mapping, which
    resolves it (the smallest member id keeps it)."""
    topics = {FOO: TopicMetadata(FOO, "foo", 4)}
    subs = frozenset(topics)
    a, b = {FOO: frozenset({0, 1})}, {FOO: frozenset({1, 2, 3})}
    ix = TargetIndex()
    ix.put("A", a)
    ix.put("B", b)
    assert not ix.consistent()
    spec = GroupSpec({"A": MemberSubscription("A", subs, a), "B": MemberSubscription("B", subs, b)},
                     topics, ix)
    assert normal(UniformAssignor().assign(spec)) == {"A": {FOO: frozenset({0, 1})},
                                                      "B": {FOO: frozenset({2, 3})}}


def test_group_replay_keeps_the_index_and_a_loaded_group_uses_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator's target computation on a group whose target came from records (the
    group's ``set_target``, as replay applies them) hands the index to the assignor: after a
    reload (mappings decoded again, a new assignor) the first computation reads no member's
    target but those of the members giving partitions up."""
    import groupcoord.coordinator.assignors.uniform as uniform_module

    group = ConsumerGroup("g")
    group.subscription_metadata = {"foo": TopicMetadata(FOO, "foo", 40)}
    for i in range(9):
        group.put_member(ConsumerGroupMember(f"m{i}", subscribed_topic_names=("foo",)))
    _, records = target_assignment_records(group, dict(group.members), {}, 1, UniformAssignor())
    loaded = ConsumerGroup("g")
    loaded.subscription_metadata = dict(group.subscription_metadata)
    for m in group.members.values():
        loaded.put_member(m)
    for rec in records:
        if getattr(rec.key, "member_id", None) is not None:
            loaded.set_target(rec.key.member_id,  # type: ignore[union-attr]
                              decode_assignment(encode_assignment(rec.value.partitions)))  # type: ignore[union-attr]
    assert loaded.target_index.inverse() == inversion(loaded.target_assignment)
    loaded.put_member(ConsumerGroupMember("new", subscribed_topic_names=("foo",)))
    want = UniformAssignor(memo_members=0).assign(GroupSpec(
        {mid: MemberSubscription(mid, frozenset({FOO}), loaded.target_of(mid))
         for mid in loaded.members}, {FOO: TopicMetadata(FOO, "foo", 40)}))
    monkeypatch.setattr(uniform_module, "_read_all", lambda *a, **k: pytest.fail("full read"))
    got, _ = target_assignment_records(loaded, dict(loaded.members),
                                       dict(loaded.target_assignment), 2, UniformAssignor())
    assert normal(got) == normal(want)
    loaded.remove_target("m0")
    assert "m0" not in loaded.target_index.mappings
    assert loaded.target_index.inverse() == inversion(loaded.target_assignment)


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.integers(1, 6), st.integers(0, 14))
def test_reused_member_objects_equal_full_read(events: list[tuple[str, int]], nmembers: int,
                                               nparts: int) -> None:
    """Members handed back as the same ``MemberSubscription`` objects while their target and
    subscription are unchanged (what the coordinator's assignor input does): the assignor reads
    only the others, and the result is the full read's."""
    memo = UniformAssignor()
    names = dict(TOPIC_POOL)
    sizes = {FOO: nparts, BAR: 3}
    subs = frozenset(sizes)
    objs: dict[str, MemberSubscription] = {f"m{i}": MemberSubscription(f"m{i}", subs)
                                           for i in range(nmembers)}
    counter = nmembers
    for event, k in events:
        mids = sorted(objs)
        mid = mids[k % len(mids)]
        if event == "join":
            objs[f"m{counter}"] = MemberSubscription(f"m{counter}", subs)
            counter += 1
        elif event == "leave" and len(objs) > 1:
            del objs[mid]
        elif event == "grow":
            sizes[[FOO, BAR][k % 2]] += 1 + k % 3
        elif event == "reset":
            objs[mid] = MemberSubscription(mid, subs)
        elif event == "copy":  # the same member, its target copied
            objs[mid] = MemberSubscription(mid, subs, dict(objs[mid].assigned_partitions))
        elif event == "add_topic":
            sizes.setdefault(BAZ, 1 + k % 5)
        if frozenset(sizes) != subs:  # a new subscription: every member gets a new object
            subs = frozenset(sizes)
            objs = {m: MemberSubscription(m, subs, o.assigned_partitions) for m, o in objs.items()}
        topics = {t: TopicMetadata(t, names[t], n) for t, n in sizes.items()}
        spec = GroupSpec(dict(objs), topics)
        copied = GroupSpec({m: MemberSubscription(m, subs, copy.deepcopy(dict(o.assigned_partitions)))
                            for m, o in objs.items()}, topics)
        result = memo.assign(spec)
        check_legal(spec, result)
        assert normal(result) == normal(UniformAssignor(memo_members=0).assign(copied))
        for m, a in result.items():  # new objects only for members whose target changed
            if a is not objs[m].assigned_partitions:
                objs[m] = MemberSubscription(m, subs, a)


def test_no_second_generation_of_targets_kept() -> None:
    """After a computation whose records were applied, neither the coordinator's assignor input
    nor the uniform assignor's memo holds a target mapping the group no longer has (the
    previous generation of target sets)."""
    from groupcoord.coordinator.modern.consumer.target_assignment import AssignorInput

    group = ConsumerGroup("g")
    group.subscription_metadata = {"foo": TopicMetadata(FOO, "foo", 60)}
    assignor = UniformAssignor()

    def compute(epoch: int) -> None:
        _, records = target_assignment_records(group, dict(group.members),
                                               dict(group.target_assignment), epoch, assignor)
        for rec in records:
            mid = getattr(rec.key, "member_id", None)
            if mid is not None:
                if rec.value is None:
                    group.remove_target(mid)
                else:
                    group.set_target(mid, rec.value.partitions)  # type: ignore[union-attr]

    for i in range(4):
        group.put_member(ConsumerGroupMember(f"m{i}", subscribed_topic_names=("foo",)))
    compute(1)
    for epoch in range(2, 6):  # members join: every earlier member gives partitions up
        group.put_member(ConsumerGroupMember(f"j{epoch}", subscribed_topic_names=("foo",)))
        compute(epoch)
        live = {id(a) for a in group.target_assignment.values()}
        reuse = group.assignor_input
        assert isinstance(reuse, AssignorInput)
        kept = {id(a) for a in reuse.targets if a}
        kept |= {id(s.assigned_partitions) for s in reuse.subscriptions if s.assigned_partitions}
        kept |= {id(a) for r in assignor._records for a in r.mappings.values() if a}
        kept |= {id(a) for r in assignor._records for a in r.assigned if a}
        assert kept <= live


def test_one_partition_sets_are_shared() -> None:
    """Members holding one partition of each of several topics share one set per partition id
    (memory: 100 topics x 1,000 partitions over 10,000 members is 100,000 such sets)."""
    topics = {FOO: TopicMetadata(FOO, "foo", 2), BAR: TopicMetadata(BAR, "bar", 2)}
    subs = frozenset(topics)
    result = UniformAssignor().assign(GroupSpec(
        {m: MemberSubscription(m, subs) for m in ("A", "B")}, topics))
    assert normal(result) == {"A": {BAR: frozenset({0}), FOO: frozenset({0})},
                              "B": {BAR: frozenset({1}), FOO: frozenset({1})}}
    assert result["A"][FOO] is result["A"][BAR]
    assert result["B"][FOO] is result["B"][BAR]
