"""The coordinator's target computation (KIP-848 "Target Assignment") reusing its assignor input
between computations gives the same input, the same target and the same records as building it
from scratch, over random sequences of group changes."""

from __future__ import annotations

import random
from dataclasses import replace
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.assignors import RangeAssignor, UniformAssignor
from groupcoord.coordinator.modern.consumer.model import ConsumerGroup, ConsumerGroupMember
from groupcoord.coordinator.modern.consumer.target_assignment import (
    AssignorInput,
    group_spec,
    preferred_server_assignor,
    target_assignment_records,
)
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.topics import TopicMetadata

TOPICS = {name: UUID(int=k + 1) for k, name in enumerate(["foo", "bar", "baz"])}
SUBSCRIPTIONS = [("foo",), ("foo", "bar"), ("bar", "baz"), ("foo", "bar", "baz"), ()]

OPS = st.lists(st.tuples(
    st.sampled_from(["join", "leave", "resubscribe", "regex", "copy_member", "reconcile", "rack", "grow",
                     "add_topic", "compute", "reset_target", "copy_target", "copy_metadata"]),
    st.integers(0, 1000)), min_size=1, max_size=25)


def _apply(group: ConsumerGroup, records: list[Record]) -> None:
    for rec in records:
        mid = getattr(rec.key, "member_id", None)
        if mid is None:
            group.assignment_epoch = rec.value.assignment_epoch  # type: ignore[union-attr]
        elif rec.value is None:
            group.remove_target(mid)
        else:
            group.set_target(mid, rec.value.partitions)  # type: ignore[union-attr]


def _same_spec(group: ConsumerGroup, reuse: AssignorInput) -> None:
    members, targets = dict(group.members), dict(group.target_assignment)
    got = group_spec(members, targets, group.subscription_metadata, reuse=reuse)
    want = group_spec(members, targets, group.subscription_metadata)
    assert got.members == want.members  # held_since is left out of the comparison: below
    assert got.topics == want.topics
    for mid, m in got.members.items():
        assert m.held_since is not None and want.members[mid].held_since is not None
        for tid, ps in m.assigned_partitions.items():
            for p in ps:
                assert m.held_since(tid, p) == want.members[mid].held_since(tid, p)


@settings(max_examples=150, deadline=None)
@given(OPS, st.sampled_from(["uniform", "range"]))
def test_reused_input_equals_input_built_from_scratch(ops: list[tuple[str, int]],
                                                      assignor_name: str) -> None:
    assignor = UniformAssignor() if assignor_name == "uniform" else RangeAssignor()
    group = ConsumerGroup("g")
    sizes = {"foo": 3, "bar": 2}
    group.subscription_metadata = {n: TopicMetadata(TOPICS[n], n, k) for n, k in sizes.items()}
    counter = 0
    epoch = 0
    for op, k in ops:
        mids = sorted(group.members)
        mid = mids[k % len(mids)] if mids else None
        if op == "join" or mid is None:
            group.put_member(ConsumerGroupMember(
                f"m{counter}", subscribed_topic_names=SUBSCRIPTIONS[k % len(SUBSCRIPTIONS)]))
            counter += 1
        elif op == "leave":
            group.remove_member(mid)
        elif op == "resubscribe":
            group.put_member(replace(group.members[mid],
                                     subscribed_topic_names=SUBSCRIPTIONS[k % len(SUBSCRIPTIONS)]))
        elif op == "regex":
            group.put_member(replace(group.members[mid], subscribed_topic_regex="ba.*"))
        elif op == "copy_member":  # an equal member, another object
            group.put_member(replace(group.members[mid]))
        elif op == "reconcile":  # another member object: its current assignment and epoch
            m = group.members[mid]
            group.put_member(replace(m, member_epoch=m.member_epoch + 1 + k % 3,
                                     assigned_partitions=group.target_assignment.get(mid, {}),
                                     assignment_epochs={}))
        elif op == "rack":
            group.put_member(replace(group.members[mid], rack_id=f"r{k % 3}"))
        elif op == "grow":
            name = sorted(group.subscription_metadata)[k % len(group.subscription_metadata)]
            t = group.subscription_metadata[name]
            group.subscription_metadata = {**group.subscription_metadata,
                                           name: replace(t, num_partitions=t.num_partitions + 1)}
        elif op == "add_topic":
            group.subscription_metadata = {**group.subscription_metadata,
                                           "baz": TopicMetadata(TOPICS["baz"], "baz", 1 + k % 4)}
        elif op == "copy_metadata":  # equal metadata, other objects
            group.subscription_metadata = {n: replace(t)
                                           for n, t in group.subscription_metadata.items()}
        elif op == "reset_target":
            group.target_assignment.pop(mid, None)
        elif op == "copy_target" and mid in group.target_assignment:
            group.target_assignment[mid] = {UUID(bytes=t.bytes): frozenset(ps)
                                            for t, ps in group.target_assignment[mid].items()}
        reuse = group.assignor_input
        if isinstance(reuse, AssignorInput):
            _same_spec(group, reuse)
        if op == "compute" or k % 3 == 0:
            epoch += 1
            scratch = ConsumerGroup("g")
            scratch.subscription_metadata = group.subscription_metadata
            scratch.target_assignment = dict(group.target_assignment)
            _, want = target_assignment_records(scratch, dict(group.members),
                                                dict(group.target_assignment), epoch,
                                                type(assignor)())
            _, got = target_assignment_records(group, dict(group.members),
                                               dict(group.target_assignment), epoch, assignor)
            assert got == want
            _apply(group, got)
            # every member has a target, and only members (leavers' targets are tombstoned)
            assert group.target_assignment.keys() == group.members.keys()


def test_preferred_server_assignor_counts_named_assignors_only() -> None:
    ms = [ConsumerGroupMember("a", server_assignor="range"),
          ConsumerGroupMember("b", server_assignor="uniform"),
          ConsumerGroupMember("c", server_assignor="range"),
          ConsumerGroupMember("d", server_assignor=""),
          ConsumerGroupMember("e")]
    assert preferred_server_assignor(ms, "uniform") == "range"
    assert preferred_server_assignor(ms[1:2] + ms[3:], "range") == "uniform"
    assert preferred_server_assignor(ms[3:], "uniform") == "uniform"  # none named: the default
    assert preferred_server_assignor([ms[0], ms[1]], "x") == "range"  # a tie: by name


@settings(max_examples=25, deadline=None)
@given(st.integers(70, 130), st.lists(st.sampled_from(["rotate", "join", "leave", "touch", "none"]),
                                      min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_reused_input_in_another_member_order(n: int, ops: list[str], rnd: random.Random) -> None:
    """Many members listed in another order than last time (the by-member-id branch)."""
    group = ConsumerGroup("g")
    group.subscription_metadata = {"foo": TopicMetadata(TOPICS["foo"], "foo", 300)}
    for i in range(n):
        group.put_member(ConsumerGroupMember(f"m{i}", subscribed_topic_names=("foo",)))
    assignor = UniformAssignor()
    _, records = target_assignment_records(group, dict(group.members), {}, 1, assignor)
    _apply(group, records)
    for epoch, op in enumerate(ops, start=2):
        mids = list(group.members)
        if op == "rotate":  # the group's dict in another order
            group.members = {mid: group.members[mid] for mid in mids[1:] + mids[:1]}
        elif op == "join":
            group.put_member(ConsumerGroupMember(f"j{epoch}", subscribed_topic_names=("foo",)))
        elif op == "leave":
            group.remove_member(rnd.choice(mids))
        elif op == "touch":  # new member objects, equal content
            for mid in rnd.sample(mids, min(len(mids), 20)):
                group.put_member(replace(group.members[mid]))
        reuse = group.assignor_input
        assert isinstance(reuse, AssignorInput)
        _same_spec(group, reuse)
        scratch = ConsumerGroup("g")
        scratch.subscription_metadata = group.subscription_metadata
        scratch.target_assignment = dict(group.target_assignment)
        _, want = target_assignment_records(scratch, dict(group.members),
                                            dict(group.target_assignment), epoch, UniformAssignor())
        _, got = target_assignment_records(group, dict(group.members),
                                           dict(group.target_assignment), epoch, assignor)
        assert got == want
        _apply(group, got)
