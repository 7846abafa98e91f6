"""Connect assignor benchmarks (target: <= 50 ms for the Incremental Cooperative
round computed when one worker joins a balanced group of 100 workers, 1,000 connectors x 10 tasks).

Every figure is the median wall time of one leader round on prepared inputs (untimed: building the
members' metadata, restoring the leader's state before each run). Worker ids are Connect-style
(``connect-N-<uuid>``, seeded), so id order differs from creation order. Scenarios:

- ``cooperative.join``: ``workers - 1`` workers balanced by the assignor itself (two rounds), one
  more joins with nothing; the leader computes the round that revokes the new worker's share
  (params: ``revoked``). This is the target;
- ``cooperative.followup``: the round after it, where the revoked items go to the new worker
  (params: ``assigned``);
- ``cooperative.full``: every worker joins empty, everything is new;
- ``cooperative.join_wire``: the join round as a leader runs it end to end, decoding every
  member's JoinGroup metadata and encoding every SyncGroup assignment;
- ``eager.join``: the eager assignor on the same group (it ignores current assignments).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from benchmarks._harness import Result, median_ms
from groupcoord.client.connect import (
    ConfigSnapshot,
    ConnectAssignment,
    ConnectGroupAssignment,
    CooperativeLeaderState,
    EagerAssignor,
    IncrementalCooperativeAssignor,
    WorkerMetadata,
    apply_assignment,
    decode_members,
    encode_worker_metadata,
)


@dataclass(slots=True, frozen=True)
class Scenario:
    workers: int
    connectors: int
    tasks: int

    @property
    def suffix(self) -> str:
        return f"workers={self.workers}.connectors={self.connectors}.tasks={self.tasks}"

    def params(self, **extra: Any) -> dict[str, Any]:
        return {"workers": self.workers, "connectors": self.connectors, "tasks": self.tasks, **extra}


def worker_ids(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [f"connect-{i + 1}-{UUID(int=rng.getrandbits(128))}" for i in range(count)]


def config(sc: Scenario) -> ConfigSnapshot:
    return ConfigSnapshot(100, {f"connector-{i:05d}": sc.tasks for i in range(sc.connectors)})


def metadata(wid: str, offset: int, last: ConnectAssignment | None, runs: Any) -> WorkerMetadata:
    """A cooperative worker's metadata: its last assignment carrying everything it runs."""
    if last is None:
        return WorkerMetadata(2, f"http://{wid}:8083/", offset)
    allocation = ConnectAssignment(2, last.error, last.leader, last.leader_url, last.config_offset,
                                   runs.connectors, runs.tasks, last.revoked_connectors,
                                   last.revoked_tasks, last.delay)
    return WorkerMetadata(2, f"http://{wid}:8083/", offset, allocation)


@dataclass(slots=True)
class Prepared:
    """A leader about to compute a round: its assignor (state saved), the members, the round."""

    assignor: IncrementalCooperativeAssignor
    saved: CooperativeLeaderState
    leader: str
    members: dict[str, WorkerMetadata]
    config: ConfigSnapshot
    generation: int

    def run(self) -> ConnectGroupAssignment:
        return self.assignor.assign(self.leader, self.members, self.config, now_ms=1_000_000,
                                    generation=self.generation)

    def restore(self) -> None:
        self.assignor.state = self.saved.copy()


def group_rounds(sc: Scenario) -> tuple[Prepared, Prepared]:
    """The join round and its follow-up, each ready to be run repeatedly."""
    cfg = config(sc)
    ids = worker_ids(sc.workers)
    old, new = ids[:-1], ids[-1]
    leader = min(old)
    assignor = IncrementalCooperativeAssignor()
    last: dict[str, ConnectAssignment | None] = dict.fromkeys(ids)
    runs: dict[str, Any] = {}
    generation = 0

    def round_(members_ids: list[str]) -> tuple[Prepared, ConnectGroupAssignment]:
        nonlocal generation
        generation += 1
        members = {w: metadata(w, cfg.offset, last[w], runs.get(w)) for w in members_ids}
        prepared = Prepared(assignor, assignor.state.copy(), leader, members, cfg, generation)
        result = prepared.run()
        for w in members_ids:
            a = result.assignments[w]
            runs[w] = apply_assignment(members[w].current, a)
            last[w] = a
        return prepared, result

    round_(old)  # everything new
    round_(old)  # balanced and quiet
    join, _ = round_([*old, new])
    followup, _ = round_([*old, new])
    return join, followup


def _time(prepared: Prepared, repeat: int) -> tuple[float, ConnectGroupAssignment]:
    out: list[ConnectGroupAssignment] = []
    prepared.restore()
    prepared.run()  # warm-up

    def setup() -> None:
        out.clear()
        prepared.restore()

    ms = median_ms(lambda: out.append(prepared.run()), repeat=repeat, setup=setup)
    prepared.restore()
    return ms, out[-1]


def _moved(result: ConnectGroupAssignment) -> tuple[int, int]:
    revoked = sum(len(a.revoked_connectors) + len(a.revoked_tasks) for a in result.assignments.values())
    assigned = sum(len(a.connectors) + len(a.tasks) for a in result.assignments.values())
    return revoked, assigned


def run(quick: bool = False) -> list[Result]:
    """The Connect assignor benchmarks; ``quick`` uses small sizes (well under a second)."""
    sc = Scenario(10, 50, 4) if quick else Scenario(100, 1000, 10)
    repeat = 3 if quick else 9
    results: list[Result] = []

    join, followup = group_rounds(sc)
    ms, out = _time(join, repeat)
    revoked, _ = _moved(out)
    results.append(Result(f"connect.cooperative.join.{sc.suffix}", ms, "ms",
                          sc.params(scenario="join", revoked=revoked, delay=out.delay)))
    ms, out = _time(followup, repeat)
    _, assigned = _moved(out)
    results.append(Result(f"connect.cooperative.followup.{sc.suffix}", ms, "ms",
                          sc.params(scenario="followup", assigned=assigned)))

    ids = worker_ids(sc.workers)
    cfg = config(sc)
    full = Prepared(IncrementalCooperativeAssignor(), CooperativeLeaderState(), min(ids),
                    {w: WorkerMetadata(2, f"http://{w}:8083/", cfg.offset) for w in ids}, cfg, 1)
    ms, out = _time(full, repeat)
    results.append(Result(f"connect.cooperative.full.{sc.suffix}", ms, "ms",
                          sc.params(scenario="full", assigned=_moved(out)[1])))

    raw = {w: encode_worker_metadata(m) for w, m in join.members.items()}

    def wire() -> dict[str, bytes]:
        members = decode_members(raw)
        return join.assignor.assign(join.leader, members, join.config, now_ms=1_000_000,
                                    generation=join.generation).encoded()

    wire_out: list[dict[str, bytes]] = []
    join.restore()
    wire()

    def wire_setup() -> None:
        wire_out.clear()
        join.restore()

    ms = median_ms(lambda: wire_out.append(wire()), repeat=repeat, setup=wire_setup)
    results.append(Result(f"connect.cooperative.join_wire.{sc.suffix}", ms, "ms",
                          sc.params(scenario="join_wire",
                                    metadata_bytes=sum(len(b) for b in raw.values()),
                                    assignment_bytes=sum(len(b) for b in wire_out[-1].values()))))

    eager = EagerAssignor()
    eager_call: Callable[[], ConnectGroupAssignment] = lambda: eager.assign(  # noqa: E731
        join.leader, join.members, join.config)
    eager_call()
    ms = median_ms(eager_call, repeat=repeat)
    results.append(Result(f"connect.eager.join.{sc.suffix}", ms, "ms", sc.params(scenario="join")))
    return results


if __name__ == "__main__":  # pragma: no cover - manual runs: python -m benchmarks.connect
    import json
    import sys

    json.dump([r.as_json() for r in run(quick="--quick" in sys.argv)], sys.stdout, indent=1)
    sys.stdout.write("\n")
