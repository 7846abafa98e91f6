"""The order in which a sweep hands its runs out (``lab.sweep.task_chunks``): largest first,
so that on a few cores the longest runs start first and the short ones fill in at the end."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.lab.spec import expand, load_spec, parse_spec
from groupcoord.lab.sweep import expected_cost, task_chunks


def test_the_paper_spec_starts_with_its_largest_groups_and_ends_small() -> None:
    runs = expand(load_spec("paper"))
    chunks = task_chunks(runs, 100, 2)
    flat = [r for chunk in chunks for r in chunk]
    assert sorted(r.run_id for r in flat) == sorted(r.run_id for r in runs)  # each run once
    costs = [expected_cost(r) for r in flat]
    assert costs == sorted(costs, reverse=True)  # handed out largest first
    # the 300-member runs first: the first run handed out is one (the first task may go on to
    # 100-member runs once the spec's total cost makes tasks larger than the 300-member runs)
    assert expected_cost(chunks[0][0]) == 300
    budget = sum(costs) / 8
    assert all(len(c) == 1 or sum(map(expected_cost, c)) <= budget for c in chunks)
    assert max(costs[-20:]) <= 12  # the end: small runs that fill both cores


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.sampled_from([3, 8, 30, 100, 300, 1000]), min_size=1, max_size=4,
                      unique=True),
       seeds=st.integers(1, 3), per=st.integers(1, 50), cores=st.integers(1, 8))
def test_chunks_keep_every_run_once_in_cost_order_within_their_limits(
        sizes: list[int], seeds: int, per: int, cores: int) -> None:
    spec = parse_spec(tomllib.loads(
        f'name = "t"\nscenarios = ["crash", "bounce"]\nprotocols = ["consumer:uniform"]\n'
        f"sizes = {sizes}\nseeds = {seeds}\n"), "t.toml")
    runs = expand(spec)
    chunks = task_chunks(runs, per, cores)
    flat = [r for c in chunks for r in c]
    assert [r.run_id for r in flat] == [r.run_id for r in sorted(
        runs, key=lambda r: (-expected_cost(r), r.run_id))]
    assert all(0 < len(c) <= per for c in chunks)


def test_the_frame_has_one_partition_per_task_in_that_order(spark: Any) -> None:
    pytest.importorskip("pyspark")
    from groupcoord.lab.sweep import params_frame

    runs = expand(parse_spec(tomllib.loads(
        'name = "t"\nscenarios = ["crash"]\nprotocols = ["consumer:uniform"]\n'
        "sizes = [3, 30, 300]\nseeds = 3\n"), "t.toml"))
    chunks = task_chunks(runs, 2, 1)
    parts = params_frame(spark, runs, per_task=2).rdd.glom().collect()
    assert [[row["run_id"] for row in p] for p in parts] == \
        [[r.run_id for r in c] for c in chunks]
    assert parts[0][0]["size"] == 300
