"""KIP-848 "Case Studies", step by step, asserting the spec's group / target / member tables.

The spec prints intermediate tables (group epoch bumped, target not yet computed) that happen
inside one heartbeat in this coordinator; we assert every table a client or an operator can
observe between two requests.
"""

from __future__ import annotations

from groupcoord.coordinator.shard import Shard

from .support import Client, image, names, seed_group, tables


def test_member_joins_then_c_joins() -> None:
    shard = Shard(metadata=image(foo=3))
    c = Client(shard)

    # A joins: the group is created at epoch 1, the target assignment computed and A, with
    # nothing to revoke, goes straight to epoch 1 with all the partitions.
    r = c.heartbeat("A", 0)
    assert r.error_code == 0 and r.member_epoch == 1
    assert names({t.topic_id: frozenset(t.partitions) for t in r.assignment.topic_partitions},
                 shard.metadata) == ["foo-0", "foo-1", "foo-2"]
    assert tables(shard) == {
        "group": (1, ["A"]),
        "target": (1, {"A": ["foo-0", "foo-1", "foo-2"]}),
        "members": {"A": (1, ["foo-0", "foo-1", "foo-2"], [])},
    }

    # B joins: epoch 2, new target; B moves to epoch 2 but cannot get foo-2 until A revokes it.
    r = c.heartbeat("B", 0)
    assert r.member_epoch == 2 and r.assignment.topic_partitions == ()
    assert [tp.partitions for tp in r.assignment.pending_topic_partitions] == [(2,)]
    assert tables(shard) == {
        "group": (2, ["A", "B"]),
        "target": (2, {"A": ["foo-0", "foo-1"], "B": ["foo-2"]}),
        "members": {"A": (1, ["foo-0", "foo-1", "foo-2"], []),
                    "B": (2, [], ["foo-2"])},
    }

    # A heartbeats: it is told to revoke foo-2 (its assignment no longer lists it), epoch 1.
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.member_epoch == 1
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(0, 1)]

    # A heartbeats again and acknowledges: epoch 2, foo-2 released.
    r = c.heartbeat("A", 1, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 2
    assert tables(shard) == {
        "group": (2, ["A", "B"]),
        "target": (2, {"A": ["foo-0", "foo-1"], "B": ["foo-2"]}),
        "members": {"A": (2, ["foo-0", "foo-1"], []),
                    "B": (2, [], ["foo-2"])},
    }

    # B heartbeats and gets foo-2.
    r = c.heartbeat("B", 2, owned_tps=[])
    assert r.member_epoch == 2
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(2,)]
    assert tables(shard) == {
        "group": (2, ["A", "B"]),
        "target": (2, {"A": ["foo-0", "foo-1"], "B": ["foo-2"]}),
        "members": {"A": (2, ["foo-0", "foo-1"], []), "B": (2, ["foo-2"], [])},
    }

    # C joins: epoch 3 and the target A=[foo-0], B=[foo-2], C=[foo-1]; C at epoch 3 waits
    # for foo-1.
    r = c.heartbeat("C", 0)
    assert r.member_epoch == 3
    assert tables(shard)["target"] == (3, {"A": ["foo-0"], "B": ["foo-2"], "C": ["foo-1"]})
    assert tables(shard)["members"]["C"] == (3, [], ["foo-1"])

    # B heartbeats: nothing to revoke, epoch 3.
    r = c.heartbeat("B", 2)
    assert r.member_epoch == 3
    assert tables(shard) == {
        "group": (3, ["A", "B", "C"]),
        "target": (3, {"A": ["foo-0"], "B": ["foo-2"], "C": ["foo-1"]}),
        "members": {"A": (2, ["foo-0", "foo-1"], []),
                    "B": (3, ["foo-2"], []),
                    "C": (3, [], ["foo-1"])},
    }

    # A is told to revoke foo-1, acknowledges, moves to epoch 3 and releases foo-1.
    r = c.heartbeat("A", 2, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 2 and [tp.partitions for tp in r.assignment.topic_partitions] == [(0,)]
    r = c.heartbeat("A", 2, owned_tps=["foo-0"])
    assert r.member_epoch == 3
    r = c.heartbeat("C", 3)
    assert r.member_epoch == 3
    assert tables(shard) == {
        "group": (3, ["A", "B", "C"]),
        "target": (3, {"A": ["foo-0"], "B": ["foo-2"], "C": ["foo-1"]}),
        "members": {"A": (3, ["foo-0"], []), "B": (3, ["foo-2"], []), "C": (3, ["foo-1"], [])},
    }


def test_c_joins_a_group_of_two_at_epoch_21() -> None:
    shard = Shard(metadata=image(foo=6))
    seed_group(shard, "g", 21, {"A": ["foo-0", "foo-1", "foo-2"], "B": ["foo-3", "foo-4", "foo-5"]})
    c = Client(shard)
    assert tables(shard) == {
        "group": (21, ["A", "B"]),
        "target": (21, {"A": ["foo-0", "foo-1", "foo-2"], "B": ["foo-3", "foo-4", "foo-5"]}),
        "members": {"A": (21, ["foo-0", "foo-1", "foo-2"], []),
                    "B": (21, ["foo-3", "foo-4", "foo-5"], [])},
    }

    # C joins; the coordinator bumps the epoch and computes the target. C moves to epoch 22
    # without partitions: they are not revoked yet.
    r = c.heartbeat("C", 0)
    assert r.member_epoch == 22
    assert tables(shard) == {
        "group": (22, ["A", "B", "C"]),
        "target": (22, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (21, ["foo-0", "foo-1", "foo-2"], []),
                    "B": (21, ["foo-3", "foo-4", "foo-5"], []),
                    "C": (22, [], ["foo-2", "foo-5"])},
    }

    # A is told to revoke foo-2, B to revoke foo-5; C: no change.
    r = c.heartbeat("A", 21, owned_tps=["foo-0", "foo-1", "foo-2"])
    assert r.member_epoch == 21
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(0, 1)]
    r = c.heartbeat("B", 21, owned_tps=["foo-3", "foo-4", "foo-5"])
    assert r.member_epoch == 21
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(3, 4)]
    r = c.heartbeat("C", 22)
    assert r.member_epoch == 22 and r.assignment is None

    # A acknowledges: epoch 22, foo-2 released. C then gets foo-2 but not yet foo-5.
    r = c.heartbeat("A", 21, owned_tps=["foo-0", "foo-1"])
    assert r.member_epoch == 22
    r = c.heartbeat("C", 22)
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(2,)]
    assert tables(shard) == {
        "group": (22, ["A", "B", "C"]),
        "target": (22, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (22, ["foo-0", "foo-1"], []),
                    "B": (21, ["foo-3", "foo-4", "foo-5"], []),
                    "C": (22, ["foo-2"], ["foo-5"])},
    }

    # B acknowledges: epoch 22, foo-5 released; C gets foo-2 and foo-5.
    r = c.heartbeat("B", 21, owned_tps=["foo-3", "foo-4"])
    assert r.member_epoch == 22
    r = c.heartbeat("C", 22)
    assert [tp.partitions for tp in r.assignment.topic_partitions] == [(2, 5)]
    assert tables(shard) == {
        "group": (22, ["A", "B", "C"]),
        "target": (22, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                        "C": ["foo-2", "foo-5"]}),
        "members": {"A": (22, ["foo-0", "foo-1"], []),
                    "B": (22, ["foo-3", "foo-4"], []),
                    "C": (22, ["foo-2", "foo-5"], [])},
    }


def test_member_failure() -> None:
    shard = Shard(metadata=image(foo=6))
    seed_group(shard, "g", 22, {"A": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"],
                                "C": ["foo-2", "foo-5"]})
    c = Client(shard)
    shard.on_loaded(c.now)  # arms every member's session timeout (45 s by default)

    # B and C keep heartbeating; A does not.
    c.advance(40_000)
    c.heartbeat("B", 22)
    c.heartbeat("C", 22)
    c.advance(6_000)  # A's session expires at 45 s

    # A is removed and the group epoch bumped; the target is still the one of epoch 22.
    t = tables(shard)
    assert t["group"] == (23, ["B", "C"])
    assert t["target"] == (22, {"B": ["foo-3", "foo-4"], "C": ["foo-2", "foo-5"]})
    assert t["members"] == {"B": (22, ["foo-3", "foo-4"], []), "C": (22, ["foo-2", "foo-5"], [])}

    # The next heartbeat computes the new target; B and C transition to epoch 23.
    r = c.heartbeat("B", 22)
    assert r.member_epoch == 23
    assert tables(shard)["target"] == (23, {"B": ["foo-0", "foo-3", "foo-4"],
                                            "C": ["foo-1", "foo-2", "foo-5"]})
    r = c.heartbeat("C", 22)
    assert r.member_epoch == 23
    assert tables(shard) == {
        "group": (23, ["B", "C"]),
        "target": (23, {"B": ["foo-0", "foo-3", "foo-4"], "C": ["foo-1", "foo-2", "foo-5"]}),
        "members": {"B": (23, ["foo-0", "foo-3", "foo-4"], []),
                    "C": (23, ["foo-1", "foo-2", "foo-5"], [])},
    }


def test_partition_added() -> None:
    shard = Shard(metadata=image(foo=1))
    seed_group(shard, "g", 22, {"A": ["foo-0"], "B": []})
    c = Client(shard)
    assert tables(shard) == {
        "group": (22, ["A", "B"]),
        "target": (22, {"A": ["foo-0"], "B": []}),
        "members": {"A": (22, ["foo-0"], []), "B": (22, [], [])},
    }

    # foo-1 is created: the coordinator detects it and bumps the group epoch.
    res = shard.update_metadata(image(foo=2), c.now)
    assert res.records
    t = tables(shard)
    assert t["group"] == (23, ["A", "B"])
    assert t["target"] == (22, {"A": ["foo-0"], "B": []})

    # A new target; A and B heartbeat and transition to epoch 23.
    r = c.heartbeat("A", 22)
    assert r.member_epoch == 23
    assert tables(shard)["target"] == (23, {"A": ["foo-0"], "B": ["foo-1"]})
    r = c.heartbeat("B", 22)
    assert r.member_epoch == 23
    assert tables(shard) == {
        "group": (23, ["A", "B"]),
        "target": (23, {"A": ["foo-0"], "B": ["foo-1"]}),
        "members": {"A": (23, ["foo-0"], []), "B": (23, ["foo-1"], [])},
    }


def test_static_member_bounce_keeps_assignment_without_rebalance() -> None:
    shard = Shard(metadata=image(foo=4))
    c = Client(shard)
    c.heartbeat("A1", 0, instance_id="a")
    c.heartbeat("B", 0)
    assert c.heartbeat("A1", 1, owned_tps=["foo-0", "foo-1", "foo-2", "foo-3"]).member_epoch == 1
    assert c.heartbeat("A1", 1, owned_tps=["foo-0", "foo-1"]).member_epoch == 2
    c.heartbeat("B", 2)
    before = tables(shard)
    assert before["group"][0] == 2
    a_parts = before["members"]["A1"][1]
    assert len(a_parts) == 2

    # A leaves temporarily (epoch -2): it keeps its assignment; no epoch bump.
    r = c.heartbeat("A1", -2, instance_id="a")
    assert r.error_code == 0 and r.member_epoch == -2
    assert tables(shard)["group"] == (2, ["A1", "B"])
    assert shard.groups["g"].members["A1"].member_epoch == -2

    # The restarted instance rejoins under a new member id: it replaces A1 with the same
    # partitions, at the same group epoch. B sees no rebalance.
    r = c.heartbeat("A2", 0, instance_id="a")
    assert r.error_code == 0 and r.member_epoch == 2
    got = sorted(f"foo-{p}" for tp in r.assignment.topic_partitions for p in tp.partitions)
    assert got == a_parts
    after = tables(shard)
    assert after["group"] == (2, ["A2", "B"])
    assert after["members"]["A2"] == (2, a_parts, [])
    assert after["members"]["B"] == before["members"]["B"]
    r = c.heartbeat("B", 2)
    assert r.member_epoch == 2 and r.assignment is None
