"""The Connect draft's "Case Studies", step by step, asserting its Group / Target Assignment /
Member Assignment tables (the Connect draft; ``tables`` renders them).

The configuration holds AC0, AT1, AT2, BC0, BT1 (connector A with two tasks, B with one; the
draft's "T1" is task number 0). The test plays the worker chosen to run the client-side assignor:
the assignments the draft prints are what that worker installs (the draft uses KIP-415's
Incremental Cooperative assignor; its output is written here as given).

Where the draft and an observable table differ, the comment says why:

- The draft prints some tables from inside one request (after the group epoch bump, before the
  worker is reconciled); we assert every table observable between two requests, as the KIP-848
  case studies (test_case_studies.py) do. E.g. W2 joins a group whose target is at epoch 1 and
  has nothing for it, so within its join heartbeat it moves to epoch 1 with nothing; the draft
  shows W2 at epoch 0 first, then at epoch 1.
- The draft does not say why W3 (not W1) is chosen in the last two studies. Here W3's worker
  supports assignor versions [0-2] and W1's and W2's [0-1] (EAGER..COMPATIBLE vs ..SESSIONED), so
  W3 is the only worker whose range covers every other's (worker selection by version range).
- Typos of the draft: after W2 is kicked out, "Group W1 W2" is W1 W3 and, in the leaving study,
  "W2 epoch=36 [AT2]" is W3; "BC1" is BT1 (there is no connector C; B has one task); in the
  bounce study "M3" is W3.
- The deferred resolution: W3's target at epoch 36 leaves W2's BC0 and BT1 unassigned, so W3
  installs it with ``scheduled_rebalance_delay_ms`` > 0 (our extension); when the delay expires
  W3 heartbeats a new assignor reason and the group moves to epoch 37.
- A bouncing W2 that heartbeats "with the last known epoch 35" was removed by its session
  timeout: it gets UNKNOWN_MEMBER_ID and rejoins at epoch 0 (the draft allows either). The group
  epoch moves to 37 in that join (the draft's table still shows 36 with W2 in it).
"""

from __future__ import annotations

from groupcoord.coordinator.messages import ListGroupsRequest
from groupcoord.coordinator.modern.connect.messages import ConnectorConfig
from groupcoord.coordinator.shard import Shard
from groupcoord.protocol.errors import INVALID_ASSIGNMENT, ErrorCode

from .test_connect_group import (
    ASSIGNOR,
    Connect,
    assert_replay_equivalent,
    assignors,
    names,
    seed_connect_group,
    tables,
)

_E = ErrorCode

ALL = ["AC0", "AT1", "AT2", "BC0", "BT1"]
DELAY = 30_000  # scheduled.rebalance.max.delay.ms of the case studies (the draft's "d")


# ============================================================================ W1 and W2 join


def _empty_group() -> Connect:
    c = Connect(Shard())
    r = c.configure(("create", "A", 2), ("create", "B", 1))
    assert (r.error_code, r.group_epoch, r.config_offset) == (0, 0, 1)
    return c


def test_empty_group() -> None:
    c = _empty_group()
    # Group (epoch=0) Empty; Target Assignment (epoch=0) Empty; Member Assignment Empty.
    assert tables(c.shard) == {"group": (0, []), "target": (0, {}), "members": {}}
    (listed,) = c.handle(ListGroupsRequest()).groups
    assert (listed.group_type, listed.group_state) == ("connect", "Empty")


def _w1_joined() -> Connect:
    c = _empty_group()

    # "The coordinator bumps the group epoch to 1, adds W1 to the group, and creates an empty
    # member assignment."
    r = c.heartbeat("W1", 0)
    assert r.error_code == 0 and r.member_epoch == 0
    assert r.assignment is not None and names(r.assignment.connectors_and_tasks) == []
    assert r.should_compute_assignment  # "W1 is selected as the member to run the client assignor"
    assert tables(c.shard) == {
        "group": (1, ["W1"]),
        "target": (0, {}),
        "members": {"W1": (0, [])},
    }

    # W1 asks for the group state and installs all connectors and tasks for itself.
    p = c.prepare("W1", 0)
    assert (p.error_code, p.group_epoch, p.assignment_epoch, p.assignor_name) == (0, 1, 0, ASSIGNOR)
    assert [(m.member_id, m.member_epoch, names(m.connectors_and_tasks)) for m in p.members] == [
        ("W1", 0, [])]
    assert p.connectors == (ConnectorConfig("A", 2), ConnectorConfig("B", 1))
    assert p.config_offset == 1 and p.departed_members == ()
    assert c.install("W1", 0, 1, {"W1": ALL}).error_code == 0
    assert tables(c.shard) == {
        "group": (1, ["W1"]),
        "target": (1, {"W1": ALL}),
        "members": {"W1": (0, [])},
    }

    # "When W1 heartbeats, the group coordinator transitions it to its target epoch/assignment
    # because it does not have any connectors/tasks to revoke."
    r = c.heartbeat("W1", 0, owned=[])
    assert r.member_epoch == 1 and names(r.assignment.connectors_and_tasks) == ALL
    assert not r.should_compute_assignment
    assert tables(c.shard) == {
        "group": (1, ["W1"]),
        "target": (1, {"W1": ALL}),
        "members": {"W1": (1, ALL)},
    }
    return c


def test_w1_joins_the_group() -> None:
    c = _w1_joined()
    assert c.shard.groups["g"].state_name() == "Stable"
    assert_replay_equivalent(c)


def test_w2_joins_the_group() -> None:
    c = _w1_joined()

    # "The coordinator adds the member to the group and bumps the group epoch to 2." Within its
    # join W2 reconciles at once to the target epoch 1 (nothing for it: nothing to wait for).
    r = c.heartbeat("W2", 0)
    assert r.error_code == 0 and r.member_epoch == 1 and not r.should_compute_assignment
    assert tables(c.shard) == {
        "group": (2, ["W1", "W2"]),
        "target": (1, {"W1": ALL}),
        "members": {"W1": (1, ALL), "W2": (1, [])},
    }

    # "W1 is chosen as the member to run the client side assignor. It computes and sends the
    # assignments to coordinator which would install it."
    r = c.heartbeat("W1", 1)
    assert r.member_epoch == 1 and r.should_compute_assignment
    p = c.prepare("W1", 1)
    assert p.group_epoch == 2
    assert [(m.member_id, m.member_epoch, names(m.connectors_and_tasks)) for m in p.members] == [
        ("W1", 1, ALL), ("W2", 1, [])]
    assert c.install("W1", 1, 2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}).error_code == 0
    assert tables(c.shard) == {
        "group": (2, ["W1", "W2"]),
        "target": (2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}),
        "members": {"W1": (1, ALL), "W2": (1, [])},
    }

    # "When W1 heartbeats the next time, it would be asked to revoke them. When it acknowledges
    # the revocation, the coordinator would transition it to epoch 2."
    r = c.heartbeat("W1", 1, owned=ALL)
    assert r.member_epoch == 1 and names(r.assignment.connectors_and_tasks) == ["AC0", "AT1", "AT2"]
    assert tables(c.shard)["members"]["W1"] == (1, ALL)  # BC0, BT1 pending revocation
    r = c.heartbeat("W1", 1, owned=["AC0", "AT1", "AT2"])
    assert r.member_epoch == 2 and names(r.assignment.connectors_and_tasks) == ["AC0", "AT1", "AT2"]
    assert tables(c.shard) == {
        "group": (2, ["W1", "W2"]),
        "target": (2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}),
        "members": {"W1": (2, ["AC0", "AT1", "AT2"]), "W2": (1, [])},
    }

    # "When W2 heartbeats, it would get its assignments and be bumped to epoch 2."
    r = c.heartbeat("W2", 1, owned=[])
    assert r.member_epoch == 2 and names(r.assignment.connectors_and_tasks) == ["BC0", "BT1"]
    assert tables(c.shard) == {
        "group": (2, ["W1", "W2"]),
        "target": (2, {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]}),
        "members": {"W1": (2, ["AC0", "AT1", "AT2"]), "W2": (2, ["BC0", "BT1"])},
    }
    assert c.shard.groups["g"].state_name() == "Stable"
    assert_replay_equivalent(c)


# ============================================================================ W2 leaves / bounces

OLD = assignors(0, 1)  # W1 and W2: versions EAGER..COMPATIBLE
NEW = assignors(0, 2)  # W3: up to SESSIONED - the only range covering every other's


def _at_35_then_w2_kicked_out() -> Connect:
    """The initial state at epoch 35, then W2 stops heartbeating and is kicked out."""
    shard = Shard()
    seed_connect_group(shard, "g", 35, {"A": 2, "B": 1},
                       {"W1": ["AC0", "AT1"], "W2": ["BC0", "BT1"], "W3": ["AT2"]},
                       {"W1": OLD, "W2": OLD, "W3": NEW})
    c = Connect(shard)
    shard.on_loaded(0)
    assert tables(shard) == {
        "group": (35, ["W1", "W2", "W3"]),
        "target": (35, {"W1": ["AC0", "AT1"], "W2": ["BC0", "BT1"], "W3": ["AT2"]}),
        "members": {"W1": (35, ["AC0", "AT1"]), "W2": (35, ["BC0", "BT1"]), "W3": (35, ["AT2"])},
    }

    # "Let's say W2 fails to heartbeat and the group coordinator kicks it out after the session
    # timeout expires and bump the group epoch."
    c.advance(20_000)
    assert not c.heartbeat("W1", 35).should_compute_assignment
    assert not c.heartbeat("W3", 35).should_compute_assignment
    c.advance(26_000)  # W2's session (45 s) expires
    assert tables(shard) == {
        "group": (36, ["W1", "W3"]),  # the draft prints "W1 W2": a typo for W1 W3
        "target": (35, {"W1": ["AC0", "AT1"], "W2": ["BC0", "BT1"], "W3": ["AT2"]}),
        "members": {"W1": (35, ["AC0", "AT1"]), "W3": (35, ["AT2"])},
    }

    # "W3 is chosen to run the client side assignor. However, this time it won't change any
    # assignments to give the failing worker a chance to come back."
    r = c.heartbeat("W1", 35)
    assert r.member_epoch == 35 and not r.should_compute_assignment
    r = c.heartbeat("W3", 35)
    assert r.member_epoch == 35 and r.should_compute_assignment
    p = c.prepare("W3", 35)
    assert p.group_epoch == 36
    assert [(m.member_id, names(m.connectors_and_tasks)) for m in p.members] == [
        ("W1", ["AC0", "AT1"]), ("W3", ["AT2"])]
    # W2's work shows as lost: the departed worker's target entry.
    assert [(d.member_id, names(d.connectors_and_tasks)) for d in p.departed_members] == [
        ("W2", ["BC0", "BT1"])]
    # BC0 and BT1 stay unassigned during the delay: all-assigned does not apply (delay > 0).
    targets = {"W1": ["AC0", "AT1"], "W3": ["AT2"]}
    r2 = c.install("W3", 35, 36, targets)  # without the delay: not all assigned
    assert r2.error_code == INVALID_ASSIGNMENT
    assert "connector B, task B-0" in (r2.error_message or "")
    assert c.install("W3", 35, 36, targets, delay=DELAY).error_code == 0
    assert tables(shard) == {
        "group": (36, ["W1", "W3"]),
        "target": (36, {"W1": ["AC0", "AT1"], "W3": ["AT2"]}),
        "members": {"W1": (35, ["AC0", "AT1"]), "W3": (35, ["AT2"])},
    }

    # "When W1 and W3 heartbeat, they would transition to epoch 36 and get their new
    # assignments (which would be the same)."
    r = c.heartbeat("W1", 35)
    assert r.member_epoch == 36 and names(r.assignment.connectors_and_tasks) == ["AC0", "AT1"]
    r = c.heartbeat("W3", 35)
    assert r.member_epoch == 36 and names(r.assignment.connectors_and_tasks) == ["AT2"]
    assert not r.should_compute_assignment
    assert tables(shard) == {
        "group": (36, ["W1", "W3"]),
        "target": (36, {"W1": ["AC0", "AT1"], "W3": ["AT2"]}),
        "members": {"W1": (36, ["AC0", "AT1"]), "W3": (36, ["AT2"])},
    }
    assert shard.groups["g"].scheduled_rebalance_delay_ms == DELAY
    return c


def test_worker_leaving_the_group() -> None:
    c = _at_35_then_w2_kicked_out()
    shard = c.shard

    # "At this point, there are unassigned connectors. The chosen member would trigger another
    # rebalance after delay d ... by updating the reason field."
    c.advance(DELAY)
    c.heartbeat("W1", 36)
    r = c.heartbeat("W3", 36, client_assignors=assignors(0, 2, reason=1))
    assert r.error_code == 0 and r.member_epoch == 36
    assert tables(shard) == {
        "group": (37, ["W1", "W3"]),
        "target": (36, {"W1": ["AC0", "AT1"], "W3": ["AT2"]}),
        "members": {"W1": (36, ["AC0", "AT1"]), "W3": (36, ["AT2"])},  # draft: "W2" for W3
    }

    # "W3 is chosen to run the client side assignor. It would recompute the assignments and
    # send them to the Group Coordinator."
    assert r.should_compute_assignment
    p = c.prepare("W3", 36)
    assert p.group_epoch == 37 and p.departed_members == ()
    assert [m.assignor.reason for m in p.members] == [0, 1]
    new = {"W1": ["AC0", "AT1", "BC0"], "W3": ["BT1", "AT2"]}  # the draft's "BC1" is BT1
    assert c.install("W3", 36, 37, new).error_code == 0
    assert tables(shard) == {
        "group": (37, ["W1", "W3"]),
        "target": (37, {"W1": ["AC0", "AT1", "BC0"], "W3": ["AT2", "BT1"]}),
        "members": {"W1": (36, ["AC0", "AT1"]), "W3": (36, ["AT2"])},
    }
    assert shard.groups["g"].scheduled_rebalance_delay_ms == 0

    # "When W1 and W3 would heartbeat, they would receive their assignments, thereby marking the
    # rebalance as done."
    r = c.heartbeat("W1", 36)
    assert r.member_epoch == 37 and names(r.assignment.connectors_and_tasks) == ["AC0", "AT1", "BC0"]
    r = c.heartbeat("W3", 36)
    assert r.member_epoch == 37 and names(r.assignment.connectors_and_tasks) == ["AT2", "BT1"]
    assert tables(shard) == {
        "group": (37, ["W1", "W3"]),
        "target": (37, {"W1": ["AC0", "AT1", "BC0"], "W3": ["AT2", "BT1"]}),
        "members": {"W1": (37, ["AC0", "AT1", "BC0"]), "W3": (37, ["AT2", "BT1"])},
    }
    assert shard.groups["g"].state_name() == "Stable"


def test_worker_bounces() -> None:
    c = _at_35_then_w2_kicked_out()
    shard = c.shard

    # "Since W3 would wait for d delay before triggering another rebalance, but let's say before
    # that W2 joins back. ... Let's say it joins with epoch 35." W2 was removed: it rejoins at 0.
    c.advance(DELAY // 2)
    r = c.heartbeat("W2", 35, owned=[])
    assert r.error_code == _E.unknown_member_id
    r = c.heartbeat("W2", 0, client_assignors=OLD)
    assert r.error_code == 0 and r.member_epoch == 36 and not r.should_compute_assignment
    # "The Group coordinator would notice this, trigger a rebalance and update the group epoch
    # to 37."
    assert tables(shard) == {
        "group": (37, ["W1", "W2", "W3"]),
        "target": (36, {"W1": ["AC0", "AT1"], "W3": ["AT2"]}),
        "members": {"W1": (36, ["AC0", "AT1"]), "W2": (36, []), "W3": (36, ["AT2"])},
    }

    # "W3 if chosen would be asked to re-assign. W3 would notice that there is a rebalance delay
    # in process so it would go ahead and re-assign the same assignments."
    assert not c.heartbeat("W1", 36).should_compute_assignment
    assert c.heartbeat("W3", 36).should_compute_assignment
    p = c.prepare("W3", 36)
    assert p.group_epoch == 37 and [m.member_id for m in p.members] == ["W1", "W2", "W3"]
    original = {"W1": ["AC0", "AT1"], "W2": ["BC0", "BT1"], "W3": ["AT2"]}
    assert c.install("W3", 36, 37, original).error_code == 0

    # "After this, the group would finally transition to epoch 37 with original assignments."
    for mid in ("W1", "W2", "W3"):
        assert c.heartbeat(mid, 36).member_epoch == 37
    assert tables(shard) == {
        "group": (37, ["W1", "W2", "W3"]),
        "target": (37, {"W1": ["AC0", "AT1"], "W2": ["BC0", "BT1"], "W3": ["AT2"]}),
        "members": {"W1": (37, ["AC0", "AT1"]), "W2": (37, ["BC0", "BT1"]), "W3": (37, ["AT2"])},
    }
    assert shard.groups["g"].state_name() == "Stable"
