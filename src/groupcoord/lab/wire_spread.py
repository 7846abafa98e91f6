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
and spread, and the runs' median and largest spread.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

#: Revocations further apart than this start a new rebalance (well under a bounce interval).
GAP_S = 1.5


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


def main(argv: list[str] | None = None) -> int:
    dirs = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not dirs or any(not d.is_dir() for d in dirs):
        print("usage: python -m groupcoord.lab.wire_spread LOG_DIR ... (existing directories)",
              file=sys.stderr)
        return 2
    spreads = []
    for d in dirs:
        rs = [r for r in rounds(d) if r.members > 1]
        spreads += [r.spread_s for r in rs]
        print(f"{d}: " + ", ".join(f"{r.members} members {r.spread_s:.3f} s" for r in rs))
    if spreads:
        print(f"{len(spreads)} rebalances: spread median {statistics.median(spreads):.3f} s, "
              f"largest {max(spreads):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
