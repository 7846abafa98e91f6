"""Log-log plot of ``groupcoord bench scale --json`` output (docs/benchmarks.md "Scale").

    groupcoord bench scale --json > scale.json
    python benchmarks/_plot_scale.py scale.json docs/scale.png ["a title: machine, date"]

Three panels against the number of partitions, one line per member count (and topic layout):
the join storm's time to converge, the server CPU seconds it took, and the steady state's
share of one core. matplotlib (a ``dev`` / ``lab`` extra) draws it.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def series(results: list[dict[str, Any]], prefix: str,
           value: str = "value") -> dict[str, list[tuple[int, float]]]:
    """``{"members=M topics=T": [(partitions, y), ...]}`` for results named ``prefix...``."""
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in results:
        name = r["name"]
        if not name.startswith(prefix + ".members="):
            continue
        p = r["params"]
        y = r["value"] if value == "value" else p[value]
        out[f"{p['members']} members, {p['topics']} topic(s)"].append((p["partitions"], float(y)))
    return {k: sorted(v) for k, v in sorted(out.items())}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python benchmarks/_plot_scale.py SCALE.json OUT.png [TITLE]", file=sys.stderr)
        return 2
    try:
        results = json.loads(Path(argv[0]).read_text())
    except (OSError, ValueError) as e:
        print(f"cannot read {argv[0]}: {e}", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("scale.storm", "value", "join storm: time to converge (s)", 1e-3),
              ("scale.storm", "server_cpu_s", "join storm: server CPU (s)", 1.0),
              ("scale.steady.cpu_share", "value", "steady state: share of one core", 1.0)]
    fig, axes = plt.subplots(1, len(panels), figsize=(15, 4.5))
    for ax, (prefix, value, title, scale) in zip(axes, panels, strict=True):
        drawn = 0
        for label, points in series(results, prefix, value).items():
            points = [(x, y) for x, y in points if y > 0]  # nothing measured: no point
            xs = [x for x, _ in points]
            ys = [y * scale for _, y in points]
            ax.plot(xs, ys, marker="o", label=label)
            drawn += len(points)
        if drawn:  # a log axis with no positive value makes matplotlib's ticker fail
            ax.set_xscale("log")
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "nothing measured", ha="center", transform=ax.transAxes)
        ax.set_xlabel("partitions")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize="small")
    if len(argv) == 3:
        fig.suptitle(argv[2])
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
