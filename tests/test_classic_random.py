"""Randomised runs of classic groups: clients (dynamic and static, several JoinGroup versions)
join, sync, heartbeat, leave, restart and go quiet in random order, with time passing and
failovers. After every step the live view's bookkeeping is consistent (checked by the harness),
every request is answered at most once, and a shard rebuilt from the log digests equal to the
live one (I4). Once the clients stop, every pending request is answered (no request hangs).
Reproduce a failure with its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from groupcoord.coordinator.config import CoordinatorConfig

from .test_classic_support import SESSION_MS, Call, Harness, protocols


@dataclass
class FakeClient:
    name: str
    instance: str | None
    version: int
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    members: tuple[str, ...] = ()
    join: Call | None = None
    sync: Call | None = None
    zombie: str = ""  # the member id of the previous incarnation


def step(h: Harness, rng: random.Random, clients: list[FakeClient]) -> None:
    c = rng.choice(clients)
    # absorb answers
    if c.join is not None and c.join.done and c.join.response is not None:
        r = c.join.r
        if r.error_code == 0:
            c.member_id, c.generation, c.leader = r.member_id, r.generation_id, r.leader
            c.members = tuple(m.member_id for m in r.members)
        elif r.member_id:
            c.member_id = r.member_id
        else:
            c.member_id = "" if rng.random() < 0.7 else c.member_id
        c.join = None
    if c.sync is not None and c.sync.done:
        c.sync = None
    action = rng.choice(["join", "join", "sync", "heartbeat", "heartbeat", "leave", "restart",
                         "advance", "advance", "failover", "protocols", "zombie"])
    if action in ("join", "protocols") and c.join is None:
        names = ("range",) if action == "join" else rng.choice([("range", "sticky"), ("sticky",)])
        c.join = h.join(c.member_id, instance=c.instance, client_id=c.name, version=c.version,
                        protos=protocols(*names), rebalance_ms=rng.choice([5_000, 20_000]))
    elif action == "sync" and c.sync is None and c.member_id:
        assignments = {m: f"{m}@{c.generation}".encode() for m in c.members} \
            if c.leader == c.member_id else {}
        c.sync = h.sync(c.member_id, c.generation, assignments, instance=c.instance,
                        protocol_name=None, protocol_type=None, version=4)
    elif action == "heartbeat" and c.member_id:
        h.heartbeat(c.member_id, c.generation, instance=c.instance)
    elif action == "leave" and c.member_id:
        h.leave((c.member_id, c.instance))
        c.member_id = ""
    elif action == "restart":
        c.zombie, c.member_id, c.generation = c.member_id, "", -1
    elif action == "zombie" and c.zombie:
        h.heartbeat(c.zombie, c.generation, instance=c.instance)
    elif action == "advance":
        h.advance(rng.choice([100, 1_000, 3_000, SESSION_MS // 2, SESSION_MS]))
    elif action == "failover" and rng.random() < 0.2:
        h.fail_over()
        for other in clients:
            if other.join is not None and other.join.response is None:
                other.join = None
            if other.sync is not None and other.sync.response is None:
                other.sync = None


@pytest.mark.parametrize("seed", range(40))
def test_random_classic_runs(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(CoordinatorConfig(classic_max_size=rng.choice([3, 100]),
                                  classic_initial_rebalance_delay_ms=rng.choice([0, 3_000])))
    clients = [FakeClient(f"c{i}", f"i{i}" if rng.random() < 0.4 else None,
                          rng.choice([3, 4, 5, 8, 9])) for i in range(rng.randint(1, 5))]
    seen: dict[str, tuple[object, int, list[str]]] = {}
    for i in range(250):
        step(h, rng, clients)
        assert h.rebuild().state_digest() == h.shard.state_digest(), f"seed={seed} step={i}"
        for gid, g in h.shard.groups.items():  # members_version moves with every change
            before = seen.get(gid)
            ids = list(g.members)
            if before is not None and before[0] is g and before[1] == g.members_version:
                assert ids == before[2], f"seed={seed} step={i}: members changed, same version"
            seen[gid] = (g, g.members_version, ids)
    h.advance(15 * 60 * 1000)  # everyone goes quiet
    pending = [c.request for c in h.calls.values() if not c.done]
    assert pending == [], f"seed={seed}: requests never answered"
    for g in h.shard.groups.values():
        assert g.is_empty(), f"seed={seed}: members outlived their sessions"
