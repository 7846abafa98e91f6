"""Transactional offsets in the coordinator core (``coordinator/transactional_offsets.py``,
``pending_offsets.py``; KIP-98 TxnOffsetCommit, KIP-447 fencing, Kafka's
``OffsetMetadataManager``): pending per (group, producer), committed or dropped by the end
marker, OffsetFetch RequireStable, deletion and retention, and replay equivalence (I4), also
after the log is compacted."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.config import CoordinatorConfig
from groupcoord.coordinator.messages import (
    CompleteTransactionRequest,
    DeleteGroupsRequest,
    OffsetCommitPartition,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchTopic,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from groupcoord.coordinator.records import Record, RecordType
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import ErrorCode

from .support import Client, image

E = ErrorCode


def txn_commit(group: str = "g", pid: int = 7, epoch: int = 0, member: str = "",
               generation: int = -1, instance: str | None = None,
               **topics: dict[int, int]) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        group_id=group, transactional_id=f"tx-{pid}", producer_id=pid, producer_epoch=epoch,
        topics=tuple(OffsetCommitTopic(name, tuple(OffsetCommitPartition(p, o)
                                                   for p, o in sorted(ps.items())))
                     for name, ps in topics.items()),
        generation_id=generation, member_id=member, group_instance_id=instance)


def end(group: str = "g", pid: int = 7, epoch: int = 0, commit: bool = True,
        coordinator_epoch: int = -1) -> CompleteTransactionRequest:
    return CompleteTransactionRequest(group, pid, epoch, commit, coordinator_epoch)


def codes(r: TxnOffsetCommitResponse) -> dict[str, list[tuple[int, int]]]:
    return {t.name: [(p.partition_index, p.error_code) for p in t.partitions] for t in r.topics}


def offsets_of(shard: Shard, group: str = "g") -> dict[tuple[str, int], int]:
    return {k: v.offset for k, v in shard.offsets.get(group, {}).items()}


def fetch_stable(c: Client, group: str = "g", topics: Any = None) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (offset, error) of an OffsetFetch with RequireStable."""
    r = c.handle(OffsetFetchRequest(group, topics, require_stable=True))
    assert r.error_code == 0
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in r.topics for p in t.partitions}


def rebuilt(shard: Shard, records: list[Record]) -> Shard:
    other = Shard(metadata=shard.metadata)
    for rec in records:
        other.replay(Record.decode(*rec.encode()))
    return other


def compacted(records: list[Record]) -> list[Record]:
    """The log after a compaction that keeps the newest record of each key, in log order, and
    drops tombstones (the storage's compaction, its retention of tombstones run out)."""
    newest = {rec.encode()[0]: i for i, rec in enumerate(records)}
    return [rec for i, rec in enumerate(records)
            if newest[rec.encode()[0]] == i and rec.value is not None]


def new_shard() -> tuple[Shard, Client]:
    shard = Shard(metadata=image(foo=2, bar=1))
    return shard, Client(shard)


# ----------------------------------------------------------------------------- commit / abort


def test_pending_offsets_are_invisible_until_the_commit_marker() -> None:
    shard, c = new_shard()
    r = c.handle(txn_commit(foo={0: 10, 1: 20}))
    assert codes(r) == {"foo": [(0, 0), (1, 0)]}
    assert [rec.key.type for rec in c.records] == [RecordType.TXN_OFFSET_COMMIT] * 2
    assert offsets_of(shard) == {}
    assert fetch_stable(c, topics=(OffsetFetchTopic("foo", (0, 1)),)) == {
        ("foo", 0): (-1, E.unstable_offset_commit), ("foo", 1): (-1, E.unstable_offset_commit)}
    # Without RequireStable the committed offset (none) is answered.
    plain = c.handle(OffsetFetchRequest("g", (OffsetFetchTopic("foo", (0,)),)))
    assert [(p.committed_offset, p.error_code) for p in plain.topics[0].partitions] == [(-1, 0)]
    assert c.handle(end(commit=True)).error_code == 0
    assert offsets_of(shard) == {("foo", 0): 10, ("foo", 1): 20}
    assert fetch_stable(c) == {("foo", 0): (10, 0), ("foo", 1): (20, 0)}
    assert shard.txn_offsets.pending == {}
    assert rebuilt(shard, c.records).state_digest() == shard.state_digest()


def test_abort_drops_the_pending_offsets_and_keeps_the_committed_ones() -> None:
    shard, c = new_shard()
    c.handle(txn_commit(foo={0: 5}))
    c.handle(end(commit=True))
    c.handle(txn_commit(foo={0: 9}, bar={0: 3}))
    assert fetch_stable(c)[("foo", 0)] == (-1, E.unstable_offset_commit)
    assert fetch_stable(c)[("bar", 0)] == (-1, E.unstable_offset_commit)
    assert c.handle(end(commit=False)).error_code == 0
    assert offsets_of(shard) == {("foo", 0): 5}
    assert fetch_stable(c) == {("foo", 0): (5, 0)}
    assert rebuilt(shard, c.records).state_digest() == shard.state_digest()


def test_a_regular_commit_after_the_pending_offset_wins() -> None:
    """Kafka keeps the most recent of a transactional and a regular commit."""
    shard, c = new_shard()
    c.handle(txn_commit(foo={0: 10, 1: 10}))
    assert c.handle(OffsetFetchRequest("g")).error_code == 0
    from .test_offsets import commit_req
    assert c.handle(commit_req("g", foo={1: 99})).error_code == 0
    c.handle(end(commit=True))
    assert offsets_of(shard) == {("foo", 0): 10, ("foo", 1): 99}
    assert rebuilt(shard, c.records).state_digest() == shard.state_digest()


def test_a_later_pending_offset_of_another_producer_stays_newer() -> None:
    shard, c = new_shard()
    c.handle(txn_commit(pid=1, foo={0: 10}))
    c.handle(txn_commit(pid=2, foo={0: 20}))
    c.handle(end(pid=1, commit=True))
    assert offsets_of(shard) == {("foo", 0): 10}
    c.handle(end(pid=2, commit=True))
    assert offsets_of(shard) == {("foo", 0): 20}
    # The other order: the older pending offset commits last and loses.
    shard, c = new_shard()
    c.handle(txn_commit(pid=1, foo={0: 10}))
    c.handle(txn_commit(pid=2, foo={0: 20}))
    c.handle(end(pid=2, commit=True))
    c.handle(end(pid=1, commit=True))
    assert offsets_of(shard) == {("foo", 0): 20}
    assert rebuilt(shard, c.records).state_digest() == shard.state_digest()


def test_a_repeated_marker_changes_nothing() -> None:
    shard, c = new_shard()
    c.handle(txn_commit(foo={0: 10}))
    c.handle(end(commit=True))
    before, n = shard.state_digest(), len(c.records)
    assert c.handle(end(commit=True)).error_code == 0
    assert c.handle(end(commit=False)).error_code == 0
    assert shard.state_digest() == before and len(c.records) == n


# ----------------------------------------------------------------------------- producer epochs


def test_a_fenced_producer_is_refused_after_the_new_epoch_aborted_its_transaction() -> None:
    shard, c = new_shard()
    c.handle(txn_commit(epoch=0, foo={0: 10}))
    # The new instance's InitProducerId bumps the epoch; the coordinator aborts with it.
    assert c.handle(end(epoch=1, commit=False, coordinator_epoch=3)).error_code == 0
    assert offsets_of(shard) == {} and shard.txn_offsets.pending == {}
    n = len(c.records)
    zombie = c.handle(txn_commit(epoch=0, foo={0: 11}))
    assert zombie.error_code == E.invalid_producer_epoch
    assert codes(zombie) == {"foo": [(0, E.invalid_producer_epoch)]}
    assert c.handle(end(epoch=0, commit=True)).error_code == E.invalid_producer_epoch
    assert c.handle(end(epoch=1, commit=True, coordinator_epoch=2)).error_code == \
        E.transaction_coordinator_fenced
    assert len(c.records) == n
    # The new epoch goes on, and survives a rebuild.
    assert codes(c.handle(txn_commit(epoch=1, foo={0: 12}))) == {"foo": [(0, 0)]}
    other = rebuilt(shard, c.records)
    assert other.state_digest() == shard.state_digest()
    assert Client(other).handle(txn_commit(epoch=0, foo={0: 1})).error_code == \
        E.invalid_producer_epoch


def test_bad_requests_get_their_codes() -> None:
    _, c = new_shard()
    assert c.handle(txn_commit(group="", foo={0: 1})).error_code == E.invalid_group_id
    assert c.handle(txn_commit(pid=-1, foo={0: 1})).error_code == E.invalid_producer_id_mapping
    r = c.handle(txn_commit(foo={5: 1}, nope={0: 1}))
    assert codes(r) == {"foo": [(5, E.unknown_topic_or_partition)],
                        "nope": [(0, E.unknown_topic_or_partition)]}
    big = TxnOffsetCommitRequest("g", "t", 7, 0, (OffsetCommitTopic("foo", (
        OffsetCommitPartition(0, 1, committed_metadata="x" * 5000),)),))
    assert codes(c.handle(big)) == {"foo": [(0, E.offset_metadata_too_large)]}
    # A group that does not exist: only a request without group metadata.
    assert c.handle(txn_commit(group="none", generation=3, member="m", foo={0: 1})).error_code \
        == E.illegal_generation
    assert c.handle(txn_commit(group="none", foo={0: 1})).error_code == 0


# ----------------------------------------------------------------------------- KIP-447 fencing


def test_kip447_consumer_group_member_epoch() -> None:
    shard = Shard(metadata=image(foo=2, bar=1))
    c = Client(shard)
    assert c.heartbeat("A", 0).member_epoch == 1
    assert codes(c.handle(txn_commit(member="A", generation=1, foo={0: 1}))) == {"foo": [(0, 0)]}
    assert c.handle(txn_commit(member="A", generation=0, foo={0: 1})).error_code == \
        E.illegal_generation  # a stale member epoch
    assert c.handle(txn_commit(member="A", generation=2, foo={0: 1})).error_code == \
        E.illegal_generation
    assert c.handle(txn_commit(member="Z", generation=1, foo={0: 1})).error_code == \
        E.unknown_member_id
    # No group metadata at all (TxnOffsetCommit v0-v2): accepted.
    assert c.handle(txn_commit(foo={1: 1})).error_code == 0


def test_kip447_classic_group_generation_and_instance_id() -> None:
    from .test_classic_support import Harness

    h = Harness(metadata=image(foo=2))
    joins = [h.join(instance="i0", client_id="c0"), h.join(instance="i1", client_id="c1")]
    h.advance_until(lambda: all(j.done for j in joins))
    member, gen = joins[0].r.member_id, joins[0].r.generation_id
    c = Client(h.shard, now=h.now)
    # Completing the rebalance: a transaction may still commit (no REBALANCE_IN_PROGRESS).
    assert h.shard.groups["g"].state_name() == "CompletingRebalance"
    ok = c.handle(txn_commit(member=member, generation=gen, instance="i0", foo={0: 5}))
    assert ok.error_code == 0, ok
    assert c.handle(txn_commit(member=member, generation=gen + 1, instance="i0",
                               foo={0: 5})).error_code == E.illegal_generation
    assert c.handle(txn_commit(member="other", generation=gen, instance="i0",
                               foo={0: 5})).error_code == E.fenced_instance_id
    assert c.handle(txn_commit(member="other", generation=gen,
                               foo={0: 5})).error_code == E.unknown_member_id
    # Without group metadata (v0-v2) the group is not asked.
    assert c.handle(txn_commit(foo={1: 5})).error_code == 0


# ----------------------------------------------------------------------------- deletion, retention


def test_offset_delete_and_group_deletion_drop_pending_offsets() -> None:
    shard, c = new_shard()
    c.handle(txn_commit(group="s", foo={0: 1, 1: 2}))
    r = c.handle(OffsetDeleteRequest("s", (OffsetFetchTopic("foo", (0,)),)))
    assert r.error_code == 0
    assert fetch_stable(c, "s") == {("foo", 1): (-1, E.unstable_offset_commit)}
    assert c.handle(end(group="s", commit=True)).error_code == 0
    assert offsets_of(shard, "s") == {("foo", 1): 2}
    c.handle(txn_commit(group="s", pid=8, foo={0: 3}))
    assert c.handle(DeleteGroupsRequest(("s",))).results[0].error_code == 0
    assert "s" not in shard.txn_offsets.pending and "s" not in shard.txn_offsets.producers
    assert "s" not in shard.offsets
    assert rebuilt(shard, c.records).state_digest() == shard.state_digest()


def test_a_group_with_only_pending_offsets_is_listed_and_deletable() -> None:
    """Kafka creates a simple (empty classic) group when a pending offset is replayed."""
    from groupcoord.coordinator.messages import ListGroupsRequest

    shard, c = new_shard()
    c.handle(txn_commit(group="p", foo={0: 1}))
    listed = c.handle(ListGroupsRequest())
    assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [
        ("p", "Empty", "classic")]
    assert c.handle(DeleteGroupsRequest(("p",))).results[0].error_code == 0
    assert shard.txn_offsets.pending == {} and c.handle(ListGroupsRequest()).groups == ()


def test_retention_keeps_offsets_with_pending_transactions() -> None:
    """Kafka's ``cleanupExpiredOffsets``: an offset with a pending transactional offset does
    not expire, and a group with an open transaction is not deleted."""
    from .test_classic_support import Harness
    from .test_offsets import commit_req

    config = CoordinatorConfig(offsets_retention_ms=1_000,
                               offsets_retention_check_interval_ms=1_000)
    h = Harness(config=config, metadata=image(foo=2))
    h.shard.on_loaded(h.now)
    h.send(commit_req("s", foo={0: 1, 1: 1}))
    h.send(txn_commit(group="s", foo={0: 5}))
    h.send(txn_commit(group="only-pending", foo={0: 6}))
    h.advance(5_000)
    assert offsets_of(h.shard, "s") == {("foo", 0): 1}
    assert h.shard.txn_offsets.has_pending("only-pending", "foo", 0)
    h.send(end(group="s", commit=True))
    assert offsets_of(h.shard, "s") == {("foo", 0): 5}
    h.advance(5_000)
    assert offsets_of(h.shard, "s") == {}


# ----------------------------------------------------------------------------- replay (I4)

OPS = st.lists(st.tuples(
    st.sampled_from(["txn", "txn", "commit", "end", "end", "delete"]),
    st.integers(1, 3),  # producer
    st.integers(0, 2),  # epoch
    st.integers(0, 1),  # partition
    st.booleans()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_replay_and_compacted_replay_equal_live_state(ops: list[tuple[str, int, int, int, bool]]) -> None:
    from .test_offsets import commit_req

    shard, c = new_shard()
    for i, (op, pid, epoch, partition, flag) in enumerate(ops):
        c.now = i
        if op == "txn":
            c.handle(txn_commit(pid=pid, epoch=epoch, foo={partition: i}))
        elif op == "commit":
            c.handle(commit_req("g", foo={partition: 1000 + i}))
        elif op == "end":
            c.handle(end(pid=pid, epoch=epoch, commit=flag))
        else:
            c.handle(OffsetDeleteRequest("g", (OffsetFetchTopic("foo", (partition,)),)))
        stable = fetch_stable(c, topics=(OffsetFetchTopic("foo", (0, 1)),))
        for p in (0, 1):
            pending = shard.txn_offsets.has_pending("g", "foo", p)
            assert (stable[("foo", p)][1] == E.unstable_offset_commit) == pending
    digest = shard.state_digest()
    assert rebuilt(shard, c.records).state_digest() == digest
    assert rebuilt(shard, compacted(c.records)).state_digest() == digest


# ----------------------------------------------------------------------------- the runtime's seam


def test_runtime_complete_transaction_is_durable_and_survives_a_restart() -> None:
    """``CoordinatorRuntime.complete_transaction``, what the transaction coordinator calls:
    records durable when it returns, state rebuilt from the log by a new runtime, errors as
    codes (a stale epoch, a failed append: retriable)."""
    import asyncio
    import uuid

    from groupcoord.server.runtime import CoordinatorRuntime
    from groupcoord.storage.memory import MemoryLog

    from .test_server_runtime import FlakyLog

    img = image(foo=2)

    async def main() -> None:
        log = FlakyLog()
        rt = CoordinatorRuntime(log, 3, CoordinatorConfig(), img, lambda: str(uuid.uuid4()))
        rt.start(asyncio.get_running_loop())
        try:
            assert rt.handle_group("g", txn_commit(pid=5, epoch=1, foo={0: 10, 1: 11})) \
                .error_code == 0
            assert rt.handle_group("g", txn_commit(group="h", pid=5, epoch=1, foo={0: 7})) \
                .error_code == 0
            log.fail_next = 1
            assert rt.complete_transaction("g", 5, 1, True) == E.coordinator_not_available
            assert rt.complete_transaction("g", 5, 1, True) == 0
            assert rt.complete_transaction("g", 5, 1, True) == 0  # repeated: harmless
            assert rt.complete_transaction("g", 5, 0, False) == E.invalid_producer_epoch
            assert rt.complete_transaction("h", 5, 2, False, coordinator_epoch=1) == 0
        finally:
            rt.stop()
        again = CoordinatorRuntime(log, 3, CoordinatorConfig(), img, lambda: str(uuid.uuid4()))
        again.start(asyncio.get_running_loop())
        try:
            r = again.handle_group("g", OffsetFetchRequest("g", require_stable=True))
            assert {(t.name, p.partition_index): p.committed_offset
                    for t in r.topics for p in t.partitions} == {("foo", 0): 10, ("foo", 1): 11}
            r = again.handle_group("h", OffsetFetchRequest("h", require_stable=True))
            assert r.topics == ()
            assert again.complete_transaction("h", 5, 1, True) == E.invalid_producer_epoch
            assert again.complete_transaction("h", 5, 2, True, coordinator_epoch=0) == \
                E.transaction_coordinator_fenced
        finally:
            again.stop()
        assert isinstance(log, MemoryLog)

    asyncio.run(main())
