"""How far apart the members of a classic eager group learn of a rebalance, measured on the
wire from a kept calibration run (``lab calibrate --keep DIR``: ``DIR/<protocol>/<run>/logs``).

Under the classic protocol's eager assignment a member revokes everything the moment it
learns of a rebalance (the Java client in ``onJoinPrepare``, librdkafka before it rejoins),
and a member learns at its next heartbeat: the spread of the members' revocation callbacks in
one rebalance is the spread of their heartbeat phases. A member that is itself closing (a
``closing`` line just before its revocation) is left out: it did not learn from a heartbeat.
Revocations closer than ``GAP_S`` to the previous one belong to the same rebalance.
(Cooperative members revoke only what moves, after the first round: their callbacks do not
say when they learned, so this measures eager groups only.)

``python -m groupcoord.lab.wire_spread LOG_DIR ...`` prints per run each rebalance's members
and spread, and the runs' median and largest spread; with ``--save CLIENT`` it also stores
that client's result in :data:`SPREAD_FILE` (one row per client, replaced on each save), which
the report reads (:func:`load_spread`, :func:`spread_text`) to say how far apart real members
learned of a rebalance, as the calibration rows are stored and read.

A rolling bounce restarts every member's heartbeat timer at each rebalance, so its members are
aligned by construction; a scale-out usually comes to a group that has been stable for a long
time, whose heartbeat timers ran on their own since the last rebalance. ``--stable`` reads a
run where a member joins a group that has been stable for a while (the scenario
``lab/data/stable-scale-out.toml``: six members, one joins after 5 min, one after 5 min more,
one after 10 min more; ``stable-scale-out-35min.toml``: one joins after 35 min;
:func:`stable_rounds`): for each join, how far apart the members already
there learned of it (their first revocation after the joiner's start, within ``LEARN_S``), and
how long the group had been stable (since the last assignment before the join). With ``--save
CLIENT`` those rows go under the file's ``stable`` key (one row per client and stable
duration rounded to minutes, replaced per client), which the eager condition cites
(:func:`load_stable`, :func:`stable_text`).
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Revocations further apart than this start a new rebalance (well under a bounce interval).
GAP_S = 1.5

#: A member already in the group that has not revoked this long after a joiner started did not
#: learn of that join from a heartbeat (the classic heartbeat interval is 3 s).
LEARN_S = 30.0

#: The stored measurement (``--save CLIENT``): ``{"rows": [{client, rebalances, runs,
#: median_s, largest_s, measured, command}, ...], "stable": [{client, stable_min, runs,
#: rebalances, members, median_s, largest_s, measured, command}, ...]}``.
SPREAD_FILE = Path(__file__).with_name("data") / "wire_spread.json"


@dataclass(frozen=True)
class Round:
    """One rebalance: when the first member learned of it and how far apart they learned."""

    first: float
    members: int
    spread_s: float


def _events(log_dir: Path) -> list[tuple[float, str, str]]:
    out = []
    for log in sorted(log_dir.glob("*.jsonl")):
        for line in log.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("e") in ("revoke", "closing"):
                out.append((float(e["t"]), log.stem, str(e["e"])))
    return sorted(out)


def rounds(log_dir: Path) -> list[Round]:
    """The rebalances of one run (its members' logs in ``log_dir``), in time order."""
    closing_at: dict[str, float] = {}
    learned: list[tuple[float, str]] = []
    for t, name, what in _events(log_dir):
        if what == "closing":
            closing_at[name] = t
        elif t - closing_at.get(name, float("-inf")) > GAP_S:  # not its own close
            learned.append((t, name))
    out: list[Round] = []
    group: list[tuple[float, str]] = []
    for t, name in learned:
        if group and t - group[-1][0] > GAP_S:
            out.append(_round(group))
            group = []
        group.append((t, name))
    if group:
        out.append(_round(group))
    return out


def _round(group: list[tuple[float, str]]) -> Round:
    times = [t for t, _ in group]
    return Round(min(times), len({n for _, n in group}), round(max(times) - min(times), 3))


@dataclass(frozen=True)
class Learned:
    """One join into a stable group: when the joiner started, how long the group had been
    stable then, how many members already there learned of it, how long after the start the
    first one did, and how far apart they learned."""

    joined: float
    stable_s: float
    members: int
    first_s: float
    spread_s: float


def _all_events(log_dir: Path) -> dict[str, list[tuple[float, str]]]:
    out: dict[str, list[tuple[float, str]]] = {}
    for log in sorted(log_dir.glob("*.jsonl")):
        events = out.setdefault(log.stem, [])
        for line in log.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and e.get("e") in ("start", "assign", "revoke", "closing"):
                events.append((float(e["t"]), str(e["e"])))
        events.sort()
    return out


def stable_rounds(log_dir: Path) -> list[Learned]:
    """Each join into the group of one run (a ``start`` after the group's first assignment),
    in time order: the members already there (started before it, assigned, not closing) and
    their first revocation after it, within ``LEARN_S``; a join that no two of them learned
    of is left out."""
    events = _all_events(log_dir)
    assigns = [t for evs in events.values() for t, what in evs if what == "assign"]
    if not assigns:
        return []
    formed = min(assigns)
    joins = sorted((t, name) for name, evs in events.items() for t, what in evs
                   if what == "start" and t > formed)
    out: list[Learned] = []
    for joined, joiner in joins:
        learned = []
        settled = []
        for name, evs in events.items():
            before = [(t, what) for t, what in evs if t < joined]
            if name == joiner or not before or before[-1][1] == "closing" or not any(
                    what == "assign" for _, what in before):
                continue
            settled.append(max(t for t, what in before if what == "assign"))
            first = next((t for t, what in evs
                          if what == "revoke" and joined < t <= joined + LEARN_S), None)
            if first is not None:
                learned.append(first)
        if len(learned) > 1:
            out.append(Learned(joined, round(joined - max(settled), 1), len(learned),
                               round(min(learned) - joined, 3),
                               round(max(learned) - min(learned), 3)))
    return out


def _load(path: Path | None) -> dict[str, Any]:
    try:
        data = json.loads((path or SPREAD_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _rows(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    rows = data.get(key)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def load_spread(path: Path | None = None) -> list[dict[str, Any]]:
    """The stored rolling-bounce rows (empty when the file is missing or unreadable)."""
    return _rows(_load(path), "rows")


def load_stable(path: Path | None = None) -> list[dict[str, Any]]:
    """The stored stable-group rows (``--stable --save``; empty when there are none)."""
    return _rows(_load(path), "stable")


def _minutes(rows: Sequence[Mapping[str, Any]]) -> str:
    mins = sorted({int(r["stable_min"]) for r in rows})
    return (f"{mins[0]}" if len(mins) == 1 else f"{mins[0]} to {mins[-1]}") + " min"


def stable_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The stable-group measurement in words for the page: "after 5 to 10 min stable, real
    classic members learned of a member's join within 1.234 s of one another (librdkafka:
    median 0.800 s, 4 joins after 5 min, 1.100 s, 2 after 10 min; ...)"; empty without
    rows."""
    rows = [r for r in rows if r.get("rebalances") and r.get("largest_s") is not None
            and r.get("stable_min") is not None]
    if not rows:
        return ""
    top = max(float(r["largest_s"]) for r in rows)
    clients: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        clients.setdefault(str(r.get("client")), []).append(r)
    each = "; ".join(f"{client}: " + ", ".join(
        f"median {float(r['median_s']):.3f} s, {int(r['rebalances'])} "
        f"join{'s' if int(r['rebalances']) != 1 else ''} after {int(r['stable_min'])} min"
        for r in sorted(rs, key=lambda r: int(r["stable_min"])))
        for client, rs in sorted(clients.items()))
    return (f"after {_minutes(rows)} stable, real classic members learned of a member's join "
            f"within {top:.3f} s of one another ({each})")


def alignment_text(wire: Sequence[Mapping[str, Any]],
                   stable: Sequence[Mapping[str, Any]]) -> str:
    """Which alignment the wire measured and when, in one clause for the page's heartbeat
    condition and "What the model leaves out": aligned through an eager rolling bounce
    (``wire``, each rebalance restarting every member's heartbeat timer), apart at the first
    rebalance after a stable period (``stable``); empty without rows."""
    def span(rows: Sequence[Mapping[str, Any]]) -> str:
        by: dict[str, list[float]] = {}
        for r in rows:
            by.setdefault(str(r.get("client")), []).append(float(r["median_s"]))
        return ", ".join(f"{c} {min(v):.3f} s" if len(v) == 1 or min(v) == max(v)
                         else f"{c} {min(v):.3f}\u2013{max(v):.3f} s"
                         for c, v in sorted(by.items()))

    wire = [r for r in wire if r.get("rebalances") and r.get("largest_s") is not None]
    stable = [r for r in stable if r.get("rebalances") and r.get("largest_s") is not None
              and r.get("stable_min") is not None]
    parts = []
    if wire:
        top = max(float(r["largest_s"]) for r in wire)
        parts.append(f"real classic members' heartbeats stayed aligned through an eager rolling "
                     f"bounce, within {top:.3f} s of one another (medians: {span(wire)})")
    if stable:
        top = max(float(r["largest_s"]) for r in stable)
        parts.append(f"at the first rebalance after {_minutes(stable)} stable they learned of "
                     f"a join up to {top:.3f} s apart (medians: {span(stable)})")
    return "; ".join(parts)


def spread_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The measurement in words for the page: "real classic members, measured on the wire:
    within 0.094 s of one another (median 0.022 s, Java, 24 rebalances; ...)"; empty without
    rows."""
    rows = [r for r in rows if r.get("rebalances") and r.get("largest_s") is not None]
    if not rows:
        return ""
    top = max(float(r["largest_s"]) for r in rows)
    each = "; ".join(f"median {float(r['median_s']):.3f} s, {r['client']}, "
                     f"{int(r['rebalances'])} rebalances" for r in rows)
    return (f"real classic members, measured on the wire (eager rolling bounce): within "
            f"{top:.3f} s of one another ({each})")


def save(client: str, spreads: Sequence[float], runs: int, command: str,
         path: Path | None = None) -> dict[str, Any]:
    """Store ``client``'s result (its row replaced, the others kept); the row stored."""
    p = path or SPREAD_FILE
    row = {"client": client, "protocol": "classic:eager", "runs": runs,
           "rebalances": len(spreads), "median_s": round(statistics.median(spreads), 3),
           "largest_s": round(max(spreads), 3),
           "measured": datetime.date.today().isoformat(), "command": command}
    rows = [r for r in load_spread(p) if r.get("client") != client] + [row]
    _write(p, {**_load(p), "rows": sorted(rows, key=lambda r: str(r.get("client")))})
    return row


def _write(p: Path, data: Mapping[str, Any]) -> None:
    p.write_text(json.dumps({k: data[k] for k in ("rows", "stable") if k in data}, indent=1)
                 + "\n")


def save_stable(client: str, per_run: Sequence[Sequence[Learned]], command: str,
                path: Path | None = None) -> list[dict[str, Any]]:
    """Store ``client``'s stable-group result (``per_run``: each run's joins), one row per
    stable duration rounded to minutes, with the number of runs it comes from (its earlier
    rows replaced, the other clients' kept, ordered by client and duration); the rows
    stored."""
    p = path or SPREAD_FILE
    by_min: dict[int, list[Learned]] = {}
    runs: dict[int, int] = {}
    for learned in per_run:
        for m in {round(x.stable_s / 60) for x in learned}:
            runs[m] = runs.get(m, 0) + 1
        for x in learned:
            by_min.setdefault(round(x.stable_s / 60), []).append(x)
    new = [{"client": client, "protocol": "classic:eager", "stable_min": m, "runs": runs[m],
            "rebalances": len(xs), "members": sorted({x.members for x in xs}),
            "median_s": round(statistics.median(x.spread_s for x in xs), 3),
            "largest_s": round(max(x.spread_s for x in xs), 3),
            "first_median_s": round(statistics.median(x.first_s for x in xs), 3),
            "measured": datetime.date.today().isoformat(), "command": command}
           for m, xs in sorted(by_min.items())]
    rows = [r for r in load_stable(p) if r.get("client") != client] + new
    _write(p, {**_load(p), "stable": sorted(rows, key=lambda r: (
        str(r.get("client")), int(r.get("stable_min") or 0)))})
    return new


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    client = ""
    stable = args[:1] == ["--stable"]
    if stable:
        args = args[1:]
    if args[:1] == ["--save"]:
        client, args = (args[1], args[2:]) if len(args) > 1 else ("", [])
    dirs = [Path(a) for a in args]
    if not dirs or any(not d.is_dir() for d in dirs):
        print("usage: python -m groupcoord.lab.wire_spread [--stable] [--save CLIENT] "
              "LOG_DIR ... (existing directories)", file=sys.stderr)
        return 2
    if stable:
        return _main_stable(dirs, client)
    spreads = []
    for d in dirs:
        rs = [r for r in rounds(d) if r.members > 1]
        spreads += [r.spread_s for r in rs]
        print(f"{d}: " + ", ".join(f"{r.members} members {r.spread_s:.3f} s" for r in rs))
    if spreads:
        print(f"{len(spreads)} rebalances: spread median {statistics.median(spreads):.3f} s, "
              f"largest {max(spreads):.3f} s")
    if client:
        if not spreads:
            print("no rebalance with two members or more: nothing saved", file=sys.stderr)
            return 1
        save(client, spreads, len(dirs),
             f"python -m groupcoord.lab.wire_spread {' '.join(str(d) for d in dirs)}")
        print(f"saved {client} to {SPREAD_FILE}")
    return 0


def _main_stable(dirs: Sequence[Path], client: str) -> int:
    learned: list[Learned] = []
    per_run: list[list[Learned]] = []
    for d in dirs:
        ls = stable_rounds(d)
        learned += ls
        per_run.append(ls)
        print(f"{d}: " + ", ".join(f"after {x.stable_s:.0f} s stable {x.members} members "
                                   f"learned {x.first_s:.3f} s after the join, "
                                   f"{x.spread_s:.3f} s apart" for x in ls))
    if learned:
        print(f"{len(learned)} joins: spread median "
              f"{statistics.median(x.spread_s for x in learned):.3f} s, largest "
              f"{max(x.spread_s for x in learned):.3f} s")
    if client:
        if not learned:
            print("no join that two members or more learned of: nothing saved",
                  file=sys.stderr)
            return 1
        save_stable(client, per_run, "python -m groupcoord.lab.wire_spread "
                    f"--stable {' '.join(str(d) for d in dirs)}")
        print(f"saved {client}'s stable-group rows to {SPREAD_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
