"""The ``groupcoord`` command line (docs/design.md "Layers": cli on top of everything).

Run as ``groupcoord``, ``python -m groupcoord`` or ``python -m groupcoord.cli``: the sub-commands
register in :mod:`groupcoord.commands`, one registry whichever way this module was loaded (run
as ``__main__``, it is a second copy of ``groupcoord.cli``, which the layers' CLI modules never
import). Start-up imports only what the command run needs: :data:`SUBCOMMANDS` lists every
subcommand with its module and help line, so ``groupcoord --help`` imports no command module
and ``groupcoord serve ...`` only the server's (not the simulator, the lab or the Connect
worker); kio is loaded without the hypothesis strategies it registers when hypothesis is
installed (:func:`_hide_hypothesis_from_kio`).

Subcommands:
- ``demo``: run a coordinator shard in-process with members joining, reconciling and leaving,
  printing the group's tables as KIP-848's case studies do.
- ``bench NAME [--json] [--quick] [--set KEY=VALUE ...] [--security S]``: run
  ``benchmarks/NAME.py`` from the source tree.

Errors (every subcommand): one line on stderr, never a traceback. Exit status **2** for bad
usage (an unknown option or value, found by argparse or later: ``UsageError``, a bad
``--config`` key), **1** for a failure at run time (a server not reachable, a port in use, bad
data on disk, a Kafka error code), 0 for success. argparse's own errors are one line too
(:class:`OneLineParser`, with a pointer to ``--help`` instead of the usage text). An exception
no command expected is reported as ``error: internal error: ...`` with status 1; ``-vv`` logs
its traceback. A module of an optional extra that is not installed (``lab run`` without
pyspark) is one line naming the extra to install (:data:`EXTRA_MODULES`), status 1.
``groupcoord --version`` prints the installed version.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import logging
import os
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, NoReturn

from groupcoord.commands import COMMANDS, UsageError, command, int_between

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
    raise SystemExit("error: the benchmarks are not installed with the package: run groupcoord "
                     "bench from a source checkout (benchmarks/ next to src/)")


def _run_bench(ns: argparse.Namespace) -> int:
    bdir = _benchmarks_dir()
    path = bdir / f"{ns.name}.py"
    if not path.exists():
        names = sorted(p.stem for p in bdir.glob("*.py") if not p.stem.startswith("_"))
        print(f"error: unknown benchmark {ns.name!r}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(bdir.parent))
    spec = importlib.util.spec_from_file_location(f"benchmarks.{ns.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    kw = {}
    if ns.security is not None:  # only benchmarks that take it (``bench server``)
        if "security" not in inspect.signature(module.run).parameters:
            print(f"error: benchmark {ns.name} has no --security option", file=sys.stderr)
            return 2
        choices = getattr(module, "SECURITY", ())
        if ns.security not in choices:
            print(f"error: --security must be one of {', '.join(choices)}, got {ns.security!r}",
                  file=sys.stderr)
            return 2
        kw["security"] = ns.security
    sizes: dict[str, str] = {}
    for item in ns.set or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"error: --set expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        sizes[key] = value
    if sizes and "sizes" not in module.run.__code__.co_varnames:
        print(f"error: benchmark {ns.name!r} takes no --set options", file=sys.stderr)
        return 2
    results = module.run(quick=ns.quick, **kw, **sizes)
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
    p.add_argument("--security", default=None,
                   help="bench server: plaintext (default), tls-scram (SASL_SSL, SCRAM-SHA-512) "
                        "or both")
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
    p.add_argument("--members", type=int_between(1, 1000), default=3)
    p.add_argument("--partitions", type=int_between(1, 100_000), default=6)
    p.add_argument("--assignor", default="uniform", choices=["uniform", "range"])
    p.set_defaults(func=_run_demo)


# ------------------------------------------------------------------------------ main


#: Every subcommand: the module whose import registers it (None: this module) and its help
#: line, so that ``groupcoord --help`` imports no command module and a command imports only
#: its own (:func:`main`). tests/test_cli_entry_points.py checks it against what the modules
#: register.
SUBCOMMANDS: dict[str, tuple[str | None, str]] = {
    "acls": ("groupcoord.server.security.acls_cli",
             "add, list and remove ACLs (like kafka-acls), online or in a data directory"),
    "bench": (None, "run a benchmark family from benchmarks/ (assignors, heartbeats, ...)"),
    "connect": ("groupcoord.client.connect.cli",
                "Kafka Connect: run a worker (new or classic protocol), manage connectors"),
    "connectors": ("groupcoord.server.cli",
                   "create, update, delete and list the connectors of a connect group"),
    "control": ("groupcoord.testing.cli",
                "the control plane of a running server, for tests (faults, sessions)"),
    "demo": (None, "run a coordinator in-process: members join, reconcile, leave"),
    "groups": ("groupcoord.server.cli",
               "list and describe groups: consumer, classic, connect, share (like kafka-consumer-groups)"),
    "lab": ("groupcoord.lab.cli",
            "the PySpark lab: sweeps of simulations, Parquet tables, report, log audit"),
    "recover-partitions": ("groupcoord.server.partition_cli",
                           "cut damaged partition files at the damage (serve stopped)"),
    "serve": ("groupcoord.server.cli", "run the Kafka-protocol broker with the group coordinator"),
    "simulate": ("groupcoord.sim.cli",
                 "run the deterministic simulator: real coordinator, real members, faults"),
    "topics": ("groupcoord.server.cli",
               "create, list, delete topics and add partitions (like kafka-topics)"),
    "transactions": ("groupcoord.server.transactions_cli",
                     "list, describe, find hanging and abort transactions"),
    "users": ("groupcoord.server.security.users_cli",
              "add, list, remove SCRAM users of a data directory (offline)"),
}


def _load_optional_commands(names: Collection[str] | None = None) -> None:
    """Subcommands living with their layer register themselves on import: the modules of
    ``names`` (None: of every subcommand)."""
    modules = {SUBCOMMANDS[n][0] for n in (SUBCOMMANDS if names is None else names)}
    for module in sorted(m for m in modules if m is not None):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise


def _hide_hypothesis_from_kio() -> None:
    """Import kio's phantom types with hypothesis hidden. When hypothesis is importable (a
    development install), kio imports ``hypothesis.strategies`` as it loads to register
    strategies for its types (``kio.static._phantom``): more than a third of a second of
    every command's start-up, for strategies the command line never draws from. Nothing if
    either is loaded already (a test process keeps kio's strategies)."""
    if "kio.static._phantom" in sys.modules or "hypothesis" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import hypothesis fails
    try:
        importlib.import_module("kio.static._phantom")
    except ImportError:
        pass
    finally:
        del sys.modules["hypothesis"]


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the options before
    the subcommand, ``-v`` and ``-h``, take no value); None if none is named."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``groupcoord serve: error: ... (see groupcoord serve
    --help)``, exit status 2. Subparsers are of this class too (argparse gives them their
    parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    """The installed distribution's version (the package metadata; a source tree run without
    installing has none)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groupcoord")
    except PackageNotFoundError:
        return "(not installed)"


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser with every subcommand and its arguments; with ``commands``
    (names from :data:`SUBCOMMANDS`), only those with their arguments, every other listed by
    name and help (as ``groupcoord --help`` shows them) without importing its module."""
    if commands is None or commands:
        _hide_hypothesis_from_kio()
        _load_optional_commands(commands)
    parser = OneLineParser(prog="groupcoord",
                                     description="A Kafka-compatible group coordinator.")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("--version", action="version", version=f"groupcoord {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    names = SUBCOMMANDS.keys() | COMMANDS.keys() if commands is None else SUBCOMMANDS.keys()
    for name in sorted(names):
        if commands is None or name in commands:
            add_args, _, help_text = COMMANDS[name]
            add_args(sub.add_parser(name, help=help_text, description=help_text))
        else:
            help_text = SUBCOMMANDS[name][1]
            sub.add_parser(name, help=help_text, description=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    # Only the named subcommand's module is imported (none for ``--help``); a name that is
    # not in SUBCOMMANDS gets the whole parser (its "invalid choice" lists every command).
    named = _command_named(args)
    parser = build_parser(() if named is None else [named] if named in SUBCOMMANDS else None)
    ns: Any = parser.parse_args(args)
    logging.basicConfig(level=logging.WARNING - 10 * min(ns.verbose, 2),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[ns.command][1](ns)
    except BrokenPipeError:  # output piped into a reader that stopped (``| head``): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return 0
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as e:
        hint = _missing_extra(e)
        if hint is None:
            return _internal_error(e)
        print(f"error: {hint}", file=sys.stderr)
        return 1
    except Exception as e:  # the last resort: one line, the traceback only with -vv
        return _internal_error(e)


def _internal_error(e: BaseException) -> int:
    log.debug("internal error", exc_info=True)
    first = str(e).splitlines()[0] if str(e) else ""
    print(f"error: internal error: {type(e).__name__}: {first} (run with -vv for the "
          f"traceback)", file=sys.stderr)
    return 1


#: Modules of the optional extras (pyproject.toml): the extra that installs each.
EXTRA_MODULES = {"pyspark": "lab", "pyarrow": "lab", "pandas": "lab", "matplotlib": "lab",
                 "venv_pack": "lab", "confluent_kafka": "lab"}


def _missing_extra(e: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install when ``e`` is a module of one, else None."""
    module = (e.name or "").split(".")[0]
    extra = EXTRA_MODULES.get(module)
    if extra is None:
        return None
    return (f"this command needs {module}, which comes with the '{extra}' extra: "
            f"pip install 'groupcoord[{extra}]'")


if __name__ == "__main__":
    sys.exit(main())
