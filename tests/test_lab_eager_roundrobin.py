"""Eager with a balanced assignor (``classic:eager-roundrobin``): the Java client's
``roundrobin`` deal across topics, so that the lab's eager columns are not charged for
``range``'s cross-topic imbalance (range assigns each topic on its own, its first members one
partition more of every topic)."""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.client.classic_consumer import (
    eager_range_assignment,
    eager_roundrobin_assignment,
)
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.lab.mechanism import busiest_partitions, is_eager, mechanisms
from groupcoord.lab.runs import build_scenario, run_one
from groupcoord.lab.spec import expand, load_spec, restrict
from groupcoord.protocol.consumer_protocol import decode_subscription, encode_subscription
from groupcoord.sim.runner import build_simulation


def _topics(counts: list[int]) -> dict[str, TopicMetadata]:
    return {f"t{i}": TopicMetadata(UUID(int=i + 1), f"t{i}", n) for i, n in enumerate(counts)}


def _subs(members: int, topics: list[str]) -> dict[str, object]:
    return {f"m{i:03d}": decode_subscription(encode_subscription(tuple(topics)))
            for i in range(members)}


@given(st.lists(st.integers(1, 60), min_size=1, max_size=5), st.integers(1, 40))
def test_roundrobin_deals_every_partition_once_and_balances_across_topics(
        counts: list[int], members: int) -> None:
    topics = _topics(counts)
    subs = _subs(members, sorted(topics))
    out = eager_roundrobin_assignment(subs, topics)
    dealt = sorted((t, p) for a in out.values() for t, ps in a.items() for p in ps)
    assert dealt == sorted((t, p) for t, m in topics.items() for p in range(m.num_partitions))
    sizes = [sum(len(ps) for ps in a.values()) for a in out.values()]
    assert max(sizes) - min(sizes) <= 1
    assert max(sizes) == busiest_partitions(1, sum(counts), members, "roundrobin")
    ranged = eager_range_assignment(subs, topics)
    assert max(sum(len(ps) for ps in a.values()) for a in ranged.values()) >= max(sizes)


def test_roundrobin_skips_members_not_subscribed_to_a_topic() -> None:
    topics = _topics([4, 2])
    subs = {"a": decode_subscription(encode_subscription(("t0",))),
            "b": decode_subscription(encode_subscription(("t0", "t1")))}
    # t0: a, b, a, b; t1: only b subscribes
    assert eager_roundrobin_assignment(subs, topics) == {"a": {"t0": [0, 2]},
                                                         "b": {"t0": [1, 3], "t1": [0, 1]}}


def test_the_variant_is_eager_and_named_in_the_grids_that_compare_eager() -> None:
    assert is_eager("classic:eager-roundrobin") and is_eager("classic:eager")
    assert not is_eager("classic:cooperative") and not is_eager("consumer:uniform")
    grids = {g.name: g for g in load_spec("paper").grids}
    for name in ("consumers", "consumers-300", "rolling"):
        assert "classic:eager-roundrobin" in grids[name].protocols, name
        (wl,) = grids[name].workloads
        assert (wl.topics or 0) > 1  # range is unbalanced only across several topics


def _owned_after(protocol: str, size: int) -> list[int]:
    spec = restrict(load_spec("paper"), scenarios=["scale-out"], sizes=[size],
                    protocols=[protocol], workloads=["4x250"])
    params = next(r for r in expand(spec) if r.workload == "4x250" and r.replicate == 0)
    sim = build_simulation(build_scenario(params), params.seed, protocol)
    res = sim.run()
    assert res.ok, res.violation
    return sorted(len(p.member.owned) for p in sim.procs.values() if p.alive)


def test_in_a_small_cell_roundrobin_balances_what_range_does_not() -> None:
    """30 members and those the scale-out adds, on 4 x 250 partitions: range gives its first
    members one partition more of every topic, roundrobin deals one partition more at most."""
    ranged = _owned_after("classic:eager", 30)
    dealt = _owned_after("classic:eager-roundrobin", 30)
    n = len(ranged)
    assert n > 30 and len(dealt) == n and sum(ranged) == sum(dealt) == 1000
    assert max(ranged) == busiest_partitions(4, 250, n, "range")
    assert max(ranged) - min(ranged) == 4
    assert max(dealt) == busiest_partitions(4, 250, n, "roundrobin")
    assert max(dealt) - min(dealt) <= 1


def test_the_variant_runs_the_consumers_grid_cells_with_its_control() -> None:
    spec = restrict(load_spec("paper"), scenarios=["crash", "bounce", "scale-out"], sizes=[10],
                    protocols=["classic:eager-roundrobin"], workloads=["4x250"])
    for params in (r for r in expand(spec) if r.replicate == 0 and r.workload == "4x250"):
        row = run_one(params)
        assert row["ok"] and row["caught_up"] and row["noop_events"] == 0, params.scenario
        assert row["resources_moved"] > 0 and row["control_lag_record_s"] is not None


def test_the_page_names_the_variant_only_where_a_table_has_it() -> None:
    from groupcoord.lab.report import protocol_text
    from groupcoord.lab.verdict import grid_verdicts

    def run(protocol: str, seed: int) -> dict[str, object]:
        return {"protocol": protocol, "scenario": "crash", "size": 10, "members": 10,
                "workload": "4x250", "fault_rate": 0.0, "seed": seed, "ok": True,
                "caught_up": True, "noop_events": 0, "lag_record_s": 100.0 + seed}

    def grid(protocols: list[str]) -> dict[str, object]:
        return {"grids": [{"name": "g", "protocols": protocols, "scenarios": ["crash"],
                           "sizes": [10], "workloads": ["4x250"], "metrics": ["lag_record_s"],
                           "question": "q", "description": "d"}]}

    both = ["classic:eager", "classic:eager-roundrobin"]
    with_it = protocol_text(grid_verdicts(grid(both), [run(p, s) for p in both
                                                       for s in range(5)]))
    without = protocol_text(grid_verdicts(grid(both[:1]), [run(both[0], s) for s in range(5)]))
    assert "classic:eager-roundrobin is eager with roundrobin" in with_it
    assert "roundrobin" not in without


def test_an_eager_downtime_near_a_heartbeat_is_not_called_one() -> None:
    """In a crash an eager group's moves include the crashed member's partitions, which waited
    the session: spread over many moves the figure can land near a heartbeat by chance."""
    settings = {p: {"heartbeat.interval.ms": 3000, "session.timeout.ms": 45000}
                for p in ("classic:eager-roundrobin", "classic:cooperative")}
    runs = [{"protocol": p, "scenario": "crash", "size": 10, "members": 10, "ok": True,
             "resources_moved": moved, "resource_downtime_ms": moved * per}
            for p, moved, per in (("classic:eager-roundrobin", 899, 3_200),
                                  ("classic:cooperative", 100, 44_100)) for _ in range(3)]
    (line,) = [ln for ln in mechanisms(list(settings), settings, runs)
               if ln.startswith("crash:")]
    assert "classic:eager-roundrobin 3.2 s," in line and "heartbeat" not in line
    assert "about the 45 s session timeout" in line
