"""The heartbeat interval swept in the paper spec (docs/lab.md, "Round 12"): an ``@hb1s`` label
runs the members' heartbeat every second (classic consumers, Connect workers on either group
type, KIP-848 consumers), the task-times and crossover grids carry the 1 s columns, and the
report's heartbeat condition reads what the 1 s interval does to the eager-versus-cooperative
gap from those columns; the 3-worker stop-time edge has its own grid."""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import replace

import pytest

from groupcoord.lab.runs import build_scenario, simulate_run
from groupcoord.lab.spec import expand, load_spec, restrict

_HB = re.compile(r"^\s*(?P<t>\d+)\s+\d+\s+hb>\s+(?P<member>\S+)")

#: A cell of the paper spec per family whose grid now carries the ``@hb1s`` column, and the
#: family's default interval (``sim.settings.FIELD_SETTINGS``).
CELLS = [
    ("crossover-10ms", "classic:cooperative", "scale-out", "1x32-p10ms-30pct", 8, 3000),
    ("crossover-10ms", "consumer:uniform", "scale-out", "1x32-p10ms-30pct", 8, 5000),
    ("kip415-task-times", "classic-connect:sessioned", "kip415-worker-joins", "16x8c-task10ms",
     12, 3000),
    ("kip415-task-times", "connect:cooperative", "kip415-worker-joins", "16x8c-task10ms", 12,
     3000),
]


def _beat_gaps(trace: list[str]) -> list[int]:
    """The time between a member's consecutive heartbeat requests, over every member."""
    last: dict[str, int] = {}
    gaps: list[int] = []
    for line in trace:
        m = _HB.match(line)
        if m is None:
            continue
        t, who = int(m["t"]), m["member"]
        if who in last:
            gaps.append(t - last[who])
        last[who] = t
    return gaps


@pytest.mark.parametrize(("grid", "protocol", "scenario", "workload", "size", "default"), CELLS)
def test_an_hb1s_label_beats_every_second_in_the_simulator(
        grid: str, protocol: str, scenario: str, workload: str, size: int, default: int) -> None:
    spec = load_spec("paper")
    g = next(x for x in spec.grids if x.name == grid)
    assert protocol in g.protocols and f"{protocol}@hb1s" in g.protocols
    run = next(r for r in expand(restrict(spec, scenarios=[scenario], sizes=[size],
                                          workloads=[workload], protocols=[protocol]))
               if r.replicate == 0)
    medians = {}
    for label in (protocol, f"{protocol}@hb1s"):
        params = replace(run, protocol=label, events=True)
        sc = build_scenario(params)
        res = simulate_run(params, sc)
        assert res.ok, res.violation
        gaps = _beat_gaps(res.trace)
        assert len(gaps) > 20, label
        medians[label] = statistics.median(gaps)
    # the members' own timers, not only the setting: the usual gap between two beats of a
    # member is the interval (a rebalance's responses restart a timer, so some are shorter)
    assert medians[protocol] == pytest.approx(default, abs=100)
    assert medians[f"{protocol}@hb1s"] == pytest.approx(1000, abs=100)


def test_the_paper_spec_sweeps_the_interval_where_the_gaps_are() -> None:
    spec = load_spec("paper")
    grids = {g.name: g for g in spec.grids}
    tt = grids["kip415-task-times"].protocols
    for p in ("classic-connect:eager", "classic-connect:sessioned", "connect:eager",
              "connect:cooperative"):
        assert p in tt and f"{p}@hb1s" in tt
    xo = grids["crossover-10ms"].protocols
    for p in ("classic:eager", "classic:cooperative", "consumer:uniform"):
        assert p in xo and f"{p}@hb1s" in xo
    edge = grids["kip415-stop-edge"]
    assert edge.sizes == (3,) and edge.scenarios == ("kip415-worker-joins",)
    assert set(edge.protocols) == {"classic-connect:eager", "classic-connect:sessioned"}
    assert edge.seeds == 5 and edge.confirm_seeds == 5
    stops = defaultdict(set)
    for wl in edge.workloads:
        assert wl.work is not None
        stops[wl.name].add(re.search(r'"task_stop_ms":\s*(\d+)', wl.work).group(1))  # type: ignore[union-attr]
    assert sorted(int(next(iter(v))) for v in stops.values()) == [700, 900, 1000, 1100, 1300]
