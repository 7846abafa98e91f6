"""``groupcoord recover-partitions --data-dir DIR``: what to run when ``serve`` refuses to start
on a damaged partition file (``partition_log.py``, docs/durability-and-metrics.md "Partition
data").

``serve`` checks every partition file at start-up after an unclean stop (Kafka's log
recovery: headers, offsets, CRC-32C; after a clean shutdown each file on first use instead): a
torn tail is cut with a warning, but a damaged batch with valid batches after it stops the
server with one line naming the file, the byte and the offset (found on first use: that
partition answers KAFKA_STORAGE_ERROR), because cutting there would drop acknowledged records.
This command reads every file whatever the clean-shutdown marker says, and leaves the marker as
it is. This command, run with the server stopped, makes that choice
explicit: each damaged file is cut at its first damaged batch, the bytes from there on are first
copied to ``<file>.damaged-<byte>`` (nothing is deleted; Kafka's operators would move the bad
segment aside the same way), and each cut is printed on a line. Exit status 0; 2 with a one-line
error if the directory holds no ``topics.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from groupcoord.commands import command


def _run(ns: argparse.Namespace) -> int:
    from groupcoord.server.topic_registry import TopicRegistry

    data_dir = Path(ns.data_dir)
    if not (data_dir / "topics.json").is_file():
        print(f"error: {data_dir}: no topics.json (not a groupcoord data directory)",
              file=sys.stderr)
        return 2
    try:
        registry = TopicRegistry(data_dir, recover=False, max_open_files=16)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cuts: list[str] = []

    def report(path: Path, byte: int, problem: str) -> None:
        cuts.append(f"{path}: cut at byte {byte}: {problem}")
        print(cuts[-1], flush=True)

    try:
        checked = registry.recover(cut_damage=True, report=report)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        registry.close()
    print(f"{checked} partition files checked, {len(cuts)} cut")
    return 0


@command("recover-partitions", "cut damaged partition files at the damage (serve stopped)")
def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default="./groupcoord-data")
    p.set_defaults(func=_run)
