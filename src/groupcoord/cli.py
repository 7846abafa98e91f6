"""The ``groupcoord`` command line (docs/design.md "Layers": cli on top of everything).

Run as ``groupcoord``, ``python -m groupcoord`` or ``python -m groupcoord.cli``: the sub-commands
register in :mod:`groupcoord.commands`, one registry whichever way this module was loaded (run
as ``__main__``, it is a second copy of ``groupcoord.cli``, which the layers' CLI modules never
import).

Subcommands:
- ``demo``: run a coordinator shard in-process with members joining, reconciling and leaving,
  printing the group's tables as KIP-848's case studies do.
- ``bench NAME [--json] [--quick] [--set KEY=VALUE ...]``: run ``benchmarks/NAME.py`` from the source tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groupcoord.commands import COMMANDS, command

log = logging.getLogger("groupcoord")


# ------------------------------------------------------------------------------ bench


def _benchmarks_dir() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "benchmarks"
        if (candidate / "_harness.py").exists():
            return candidate
    cwd = Path.cwd() / "benchmarks"
    if (cwd / "_harness.py").exists():
        return cwd
    raise SystemExit("benchmarks/ not found: run from a source checkout of groupcoord")


def _run_bench(ns: argparse.Namespace) -> int:
    bdir = _benchmarks_dir()
    path = bdir / f"{ns.name}.py"
    if not path.exists():
        names = sorted(p.stem for p in bdir.glob("*.py") if not p.stem.startswith("_"))
        print(f"unknown benchmark {ns.name!r}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(bdir.parent))
    spec = importlib.util.spec_from_file_location(f"benchmarks.{ns.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    sizes: dict[str, str] = {}
    for item in ns.set or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"--set expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        sizes[key] = value
    if sizes and "sizes" not in module.run.__code__.co_varnames:
        print(f"benchmark {ns.name!r} takes no --set options", file=sys.stderr)
        return 2
    results = module.run(quick=ns.quick, **sizes)
    if ns.json:
        print(json.dumps([r.as_json() for r in results], indent=2))
    else:
        for r in results:
            print(f"{r.name:<70} {r.value:>14.3f} {r.unit}")
    return 0


@command("bench", "run a benchmark family from benchmarks/ (assignors, heartbeats, ...)")
def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="benchmark family: the name of a file in benchmarks/")
    p.add_argument("--json", action="store_true", help="print docs/design.md's JSON array")
    p.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a size for benchmarks that take them (bench scale: members=1000,10000)")
    p.set_defaults(func=_run_bench)


# ------------------------------------------------------------------------------ demo


def _run_demo(ns: argparse.Namespace) -> int:
    from groupcoord.demo import run_demo

    run_demo(members=ns.members, partitions=ns.partitions, assignor=ns.assignor)
    return 0


@command("demo", "run a coordinator in-process: members join, reconcile, leave")
def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--assignor", default="uniform", choices=["uniform", "range"])
    p.set_defaults(func=_run_demo)


# ------------------------------------------------------------------------------ main


def _load_optional_commands() -> None:
    """Subcommands living with their layer register themselves on import."""
    for module in ("groupcoord.server.cli", "groupcoord.sim.cli", "groupcoord.lab.cli",
                   "groupcoord.client.connect.cli", "groupcoord.testing.cli",
                   "groupcoord.server.partition_cli"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise


def build_parser() -> argparse.ArgumentParser:
    _load_optional_commands()
    parser = argparse.ArgumentParser(prog="groupcoord",
                                     description="A Kafka-compatible group coordinator.")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add_args, _, help_text) in sorted(COMMANDS.items()):
        add_args(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns: Any = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING - 10 * min(ns.verbose, 2),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[ns.command][1](ns)
    except BrokenPipeError:  # output piped into a reader that stopped (``| head``): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return 0


if __name__ == "__main__":
    sys.exit(main())
