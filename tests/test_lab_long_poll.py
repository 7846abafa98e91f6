"""The long-poll grid of the paper spec: a rebalance that starts while a member is inside a long
poll, by construction (a static member's restart leaves it a backlog; a member joins inside its
first, full poll), against the same join once it caught up. Checked on the lab's own rows (the
``runs`` and ``disturbances`` rows of ``lab.runs.run_one``) and on the run's trace: the classic
eager group's JoinGroup barrier waits for the busy member's batch (KIP-429's motivation), the
cooperative group keeps processing, KIP-848 members wait for no other member; and the group's
stall does not show the wait (the busy member is processing)."""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from functools import cache
from typing import Any

from groupcoord.lab.mechanism import attach_moving_downtime, downtime_per_move, mechanisms
from groupcoord.lab.runs import build_scenario, run_one
from groupcoord.lab.spec import RunParams, expand, load_spec, restrict

PROTOCOLS = ("classic:eager", "classic:cooperative", "consumer:uniform")
SCENARIOS = ("join-in-long-poll", "join-after-catch-up")
SEEDS = 3
_WAIT = re.compile(r"rejoin at poll, (\d+) ms")


def _cells() -> list[RunParams]:
    spec = restrict(load_spec("paper"), scenarios=list(SCENARIOS), sizes=[10],
                    workloads=["long-poll"], protocols=list(PROTOCOLS))
    (grid,) = [g for g in spec.grids if g.name == "long-poll"]
    assert set(grid.scenarios) == set(SCENARIOS) and set(grid.protocols) == set(PROTOCOLS)
    return [replace(r, events=True) for r in expand(spec)
            if r.replicate < SEEDS and r.workload == "long-poll"]


@cache
def _rows() -> dict[tuple[str, str, int], dict[str, Any]]:
    out = {}
    for p in _cells():
        row = run_one(p)
        assert row["ok"], row["violation_row"]
        assert row["noop_events"] == 0 and row["caught_up"]
        out[(p.protocol, p.scenario, p.replicate)] = row
    return out


def _window(row: dict[str, Any], kind: str) -> dict[str, Any]:
    (w,) = [d for d in row["disturbance_rows"] if d["disturbance"].startswith(kind)]
    return w


def _per_move(w: dict[str, Any]) -> float:
    return float(w["resource_downtime_ms"]) / float(w["resources_moved"])


def test_the_join_comes_inside_the_restarted_members_first_full_poll() -> None:
    """By construction: c3's backlog after 30 s down fills a poll (max.poll.records), and the
    join comes 2 s after its return, before that poll (500 records x 20 ms = 10 s) is done."""
    p = next(c for c in _cells() if c.scenario == "join-in-long-poll")
    sc = build_scenario(p)
    bounce, join = sorted(sc.events, key=lambda e: e.at_ms)
    assert (bounce.kind, bounce["member"], join.kind) == ("bounce", "c3", "scale-out")
    assert sc.static and bounce["down_ms"] < sc.session_timeout_ms
    per_member = sum(n * sc.workload.rate_of(t) for t, n in sc.topics) / sc.members
    backlog = per_member * bounce["down_ms"] / 1000.0
    full_poll_ms = sc.workload.max_poll_records * sc.workload.processing_ms.average
    assert backlog >= sc.workload.max_poll_records
    returned = bounce.at_ms + bounce["down_ms"]
    assert returned < join.at_ms < returned + full_poll_ms - 2 * sc.heartbeat_interval_ms


def test_the_restart_moves_nothing_under_any_protocol() -> None:
    """Static membership: c3 comes back within its session and keeps its partitions, so the
    restart's window is the same backlog under every protocol (no rebalance)."""
    for (proto, _, _), row in _rows().items():
        w = _window(row, "bounce")
        assert w["resources_moved"] == 0, proto
        assert w["resource_downtime_ms"] > 0


def test_eagers_barrier_waits_for_the_busy_member_and_the_others_do_not() -> None:
    rows = _rows()
    for seed in range(SEEDS):
        eager = rows[("classic:eager", "join-in-long-poll", seed)]
        # the trace: the restarted member's rejoin waited for its poll, more than a heartbeat
        waits = [(e["detail"].split()[0], int(m.group(1))) for e in eager["event_rows"]
                 if e["event"] == "busy" for m in (_WAIT.search(e["detail"]),) if m]
        assert waits and all(who == "c3" for who, _ in waits), waits
        assert max(ms for _, ms in waits) > 3_000  # the classic heartbeat
        join = {p: _window(rows[(p, "join-in-long-poll", seed)], "scale-out") for p in PROTOCOLS}
        calm = {p: _window(rows[(p, "join-after-catch-up", seed)], "scale-out")
                for p in PROTOCOLS}
        # eager's partitions wait for the batch (seconds each), not for one round
        assert _per_move(join["classic:eager"]) > 2 * 3_000
        assert _per_move(calm["classic:eager"]) < 3_000
        for p in ("classic:cooperative", "consumer:uniform"):
            assert join["classic:eager"]["resource_downtime_ms"] > \
                3 * join[p]["resource_downtime_ms"], p
        # what the long poll costs: a run's excess lag (restart and join) over the same run
        # with the join once c3 caught up (the join window alone also holds the rest of c3's
        # backlog, which the calm run's restart window holds)
        extra = {p: rows[(p, "join-in-long-poll", seed)]["lag_record_s"]
                 - rows[(p, "join-after-catch-up", seed)]["lag_record_s"] for p in PROTOCOLS}
        assert extra["classic:eager"] > 2 * max(extra["classic:cooperative"],
                                                extra["consumer:uniform"], 100.0), extra
        # the group's stall does not show the wait: c3 processes its batch meanwhile
        for p in PROTOCOLS:
            assert join[p]["stall_ms"] < 250, (p, join[p]["stall_ms"])


def test_cooperative_waits_for_the_poll_twice_but_keeps_processing() -> None:
    """Classic cooperative members also rejoin only from poll(): the first round waits for
    c3's batch and its revocation for c3's next one, so the join converges later than eager's;
    but only the partitions that move wait (the new member's), not the group."""
    rows = _rows()
    for seed in range(SEEDS):
        coop = rows[("classic:cooperative", "join-in-long-poll", seed)]
        eager = rows[("classic:eager", "join-in-long-poll", seed)]
        details = [e["detail"] for e in coop["event_rows"] if e["event"] == "busy"
                   and e["detail"].startswith("c3")]
        assert any("rejoin at poll" in d for d in details)
        assert any("revocation at poll" in d for d in details)
        cj, ej = _window(coop, "scale-out"), _window(eager, "scale-out")
        assert cj["time_to_converge_ms"] > ej["time_to_converge_ms"]
        assert cj["resources_moved"] < ej["resources_moved"]


def test_the_why_line_reads_the_moving_windows_and_names_the_barrier() -> None:
    rows = _rows()
    runs = [{k: v for k, v in r.items() if not k.endswith("_rows")} for r in rows.values()]
    windows = [{**w, "run_id": r["run_id"]} for r in rows.values()
               for w in r["disturbance_rows"]]
    in_poll = [r for r in runs if r["scenario"] == "join-in-long-poll"]
    # the run's sums charge the restart's downtime (no move) to the join's few moves
    naive = downtime_per_move(in_poll)
    attach_moving_downtime(runs, windows)
    per = downtime_per_move(in_poll)
    assert per["classic:cooperative"] < naive["classic:cooperative"] / 2
    assert per["classic:eager"] > 2 * 3_000 and per["classic:eager"] > per["consumer:uniform"]
    joins = [statistics.median(_per_move(_window(rows[(p, "join-in-long-poll", s)],
                                                 "scale-out")) for s in range(SEEDS))
             for p in PROTOCOLS]
    assert [round(per[p]) for p in PROTOCOLS] == [round(x) for x in joins]
    settings = {p: __import__("json").loads(rows[(p, SCENARIOS[0], 0)]["settings_json"])
                for p in PROTOCOLS}
    lines = mechanisms(list(PROTOCOLS), settings, runs)
    line = next(ln for ln in lines if ln.startswith("join-in-long-poll: downtime per moved"))
    assert "barrier waited for a member inside a long poll" in line
    calm = next(ln for ln in lines if ln.startswith("join-after-catch-up: downtime per moved"))
    assert "long poll" not in calm
    # the lag split by window: the restart's window the same under every protocol, the
    # join's where they differ
    split = next(ln for ln in lines if ln.startswith("join-in-long-poll: excess lag by"))
    assert "; scale-out: classic:eager " in split and split.count("bounce: ") == 1
