"""The members' lateness at the rebalances as a report prints it (``sim.workload``, "Natural
lateness"): per workload of a grid, how late the members met the group protocol, from the
``runs`` table's ``lateness_n``, ``lateness_p50_ms`` and ``lateness_max_ms``.

A run's ``lateness_max_ms`` is its latest member at any rebalance (a classic rejoin, a KIP-848
revocation: the time from the protocol's asking to the member's ``poll()``); its
``lateness_p50_ms`` the highest median of its windows. A line gives, over the runs of one
workload, the median and the range of each, so that the condition a grid's marks rest on is
read from the runs rather than from the workload's parameters.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def _ms(v: float) -> str:
    if v < 1000:
        return f"{v:,.0f} ms"
    return f"{v / 1000:,.1f} s"


def _spread(vals: Sequence[float]) -> str:
    med = statistics.median(vals)
    lo, hi = min(vals), max(vals)
    if lo == hi:
        return f"{_ms(med)} in every run"
    return f"median {_ms(med)} (range {_ms(lo)}-{_ms(hi)})"


def lateness_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per workload of ``runs`` (in their order of first appearance) whose runs
    measured the members' lateness, or one for all when no member was ever late; [] when none
    measured it (idle workloads, no rebalance met)."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in runs:
        if r.get("lateness_n") is None or r.get("lateness_max_ms") is None:
            continue
        by.setdefault(str(r.get("workload")), []).append(r)
    if by and all(float(r["lateness_max_ms"]) == 0 for rows in by.values() for r in rows):
        met = sum(int(r["lateness_n"]) for rows in by.values() for r in rows)
        n = sum(len(rows) for rows in by.values())
        return [f"The members' lateness at the rebalances: 0 ms in every run ({met:,} rejoins "
                f"and revocations in {n} runs: every member was in poll() when the protocol "
                "asked it)."]
    out = []
    for workload, rows in by.items():
        worst = [float(r["lateness_max_ms"]) for r in rows]
        median = [float(r["lateness_p50_ms"]) for r in rows]
        late = sum(1 for w in worst if w > 0)
        met = sum(int(r["lateness_n"]) for r in rows)
        out.append(
            f"{workload}: the members' lateness at the rebalances (from the protocol's asking "
            f"to the member's poll(), {met:,} rejoins and revocations in {len(rows)} runs): "
            f"the latest member of a run {_spread(worst)}, a member late in {late} of "
            f"{len(rows)} runs; the median member {_spread(median)}.")
    return out


def rebalance_lateness(scenarios: Sequence[str], protocols: Sequence[str],
                       runs: Sequence[Mapping[str, Any]]) -> str:
    """Per scenario (in ``scenarios``' order) and protocol, how late the latest member was at
    the rebalances of a run (the ``runs`` table's ``lateness_max_ms``: the start-up left out),
    the median and the maximum over that cell's runs, as one clause: the scenarios where no
    member of any run was late are named together. The barrier waits a poll's length shows
    here, not in the stall (members that process while the group waits are no stall); '' when
    no run measured it."""
    late: list[str] = []
    never: list[str] = []
    for scenario in scenarios:
        cells = []
        measured = False
        for p in protocols:
            vals = [float(r["lateness_max_ms"]) for r in runs
                    if r.get("scenario") == scenario and r.get("protocol") == p
                    and r.get("lateness_max_ms") is not None]
            if not vals:
                continue
            measured = True
            if max(vals) > 0:
                med = statistics.median(vals)
                cells.append(f"{p} {_ms(med)} (max {_ms(max(vals))}, late in "
                             f"{sum(1 for v in vals if v > 0)} of {len(vals)} runs)")
            else:
                cells.append(f"{p} 0 ms")
        if not measured:
            continue
        if all(c.endswith(" 0 ms") for c in cells):
            never.append(scenario)
        else:
            late.append(f"{scenario}: " + ", ".join(cells))
    if not late and not never:
        return ""
    out = ("how late the latest member was at a run's rebalances (from the protocol's asking "
           "to its poll(), the runs' lateness_max_ms, median over the runs): " + "; ".join(late)
           if late else "")
    if never:
        out += (("; " if out else "") + " and ".join(never)
                + (": no member late in any run" if late else
                   ": no member was late at a rebalance in any run"))
    return out


def grid_lateness_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`lateness_lines` for a grid whose workloads model natural lateness (a run's
    ``work`` sets ``pause_every_ms``); [] for the others: their lateness is the poll's only, and
    a grid that injects it (the ``slow`` event's late revocations) is not measured by it."""
    if not any("pause_every_ms" in str(r.get("work") or "") for r in runs):
        return []
    return lateness_lines(runs)


__all__ = ["grid_lateness_lines", "lateness_lines", "rebalance_lateness"]
