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

#: The stored measurement (``--save CLIENT``): ``{"rows": [{client, rebalances, runs,
#: median_s, largest_s, measured, command}, ...]}``.
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


def load_spread(path: Path | None = None) -> list[dict[str, Any]]:
    """The stored rows (empty when the file is missing or unreadable)."""
    try:
        data = json.loads((path or SPREAD_FILE).read_text())
    except (OSError, ValueError):
        return []
    rows = data.get("rows") if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


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
    p.write_text(json.dumps({"rows": sorted(rows, key=lambda r: str(r.get("client")))},
                            indent=1) + "\n")
    return row


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    client = ""
    if args[:1] == ["--save"]:
        client, args = (args[1], args[2:]) if len(args) > 1 else ("", [])
    dirs = [Path(a) for a in args]
    if not dirs or any(not d.is_dir() for d in dirs):
        print("usage: python -m groupcoord.lab.wire_spread [--save CLIENT] LOG_DIR ... "
              "(existing directories)", file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
