"""Every way of starting the command line sees every sub-command: the ``groupcoord`` script's
entry point, ``python -m groupcoord`` and ``python -m groupcoord.cli`` (which runs ``cli.py`` as
``__main__``, a second copy of the module: the sub-commands must still be found)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
SUBCOMMANDS = ("serve", "groups", "topics", "simulate", "connect", "demo", "bench")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.parametrize("start", [
    ["-m", "groupcoord"],
    ["-m", "groupcoord.cli"],
    ["-c", "import sys; from groupcoord.cli import main; sys.exit(main())"],
], ids=["python -m groupcoord", "python -m groupcoord.cli", "entry point"])
def test_every_start_lists_every_subcommand(start: list[str]) -> None:
    p = _run(*start, "--help")
    assert p.returncode == 0, p.stderr
    for name in SUBCOMMANDS:
        assert name in p.stdout, (name, p.stdout)


@pytest.mark.parametrize("module", ["groupcoord", "groupcoord.cli"])
def test_serve_parses_when_started_as_a_module(module: str) -> None:
    """``python -m groupcoord.cli serve`` once failed with "invalid choice: 'serve'"."""
    p = _run("-m", module, "serve", "--help")
    assert p.returncode == 0, p.stderr
    assert "--port" in p.stdout and "invalid choice" not in p.stderr


def test_an_unknown_subcommand_is_one_line_naming_it() -> None:
    p = _run("-m", "groupcoord", "no-such-command")
    assert p.returncode == 2
    assert "invalid choice: 'no-such-command'" in p.stderr and "Traceback" not in p.stderr


def test_the_table_of_subcommands_is_what_the_modules_register() -> None:
    """``groupcoord`` lists its subcommands from ``cli.SUBCOMMANDS`` without importing their
    modules: the table names every command a module registers, with that module and help."""
    from groupcoord.cli import SUBCOMMANDS, build_parser
    from groupcoord.commands import COMMANDS

    build_parser()  # imports every module of the table
    assert set(COMMANDS) == set(SUBCOMMANDS)
    for name, (add_args, _, help_text) in COMMANDS.items():
        module, listed_help = SUBCOMMANDS[name]
        assert listed_help == help_text, name
        assert add_args.__module__ == (module or "groupcoord.cli") or (
            module is None and add_args.__module__ == "__main__"), (name, add_args.__module__)


def test_help_is_the_same_with_and_without_the_command_modules() -> None:
    from groupcoord.cli import SUBCOMMANDS, build_parser

    full = build_parser()
    assert build_parser(()).format_help() == full.format_help()
    subs = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    for name in SUBCOMMANDS:
        lazy = build_parser([name])
        lazy_subs = next(a for a in lazy._actions if isinstance(a, argparse._SubParsersAction))
        assert lazy_subs.choices[name].format_help() == subs.choices[name].format_help(), name


#: Modules only some subcommands need (hypothesis: what kio imports when it can, for tests).
HEAVY = ("groupcoord.server.app", "groupcoord.sim.engine", "groupcoord.lab.spec",
         "groupcoord.client.connect.async_worker", "groupcoord.coordinator.shard", "hypothesis",
         "kio")


def _imported_by(*argv: str) -> set[str]:
    code = ("import sys; from groupcoord.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    p = _run("-c", code, *argv)
    return set(p.stderr.splitlines()[-1].split())


def test_help_and_a_bad_option_import_only_what_their_command_needs() -> None:
    """``groupcoord --help`` imports none of the command modules; ``groupcoord serve
    --help`` and a bad serve option only the server's CLI (and kio); none imports hypothesis
    (kio imports it to register test strategies when it is installed)."""
    assert _imported_by("--help") == set()
    assert _imported_by() == set()
    assert _imported_by("serve", "--help") == {"kio"}
    assert _imported_by("serve", "--port", "70000") == {"kio"}
    assert _imported_by("simulate", "--help") >= {"groupcoord.sim.engine"}
    assert "hypothesis" not in _imported_by("simulate", "--help")
    assert "groupcoord.sim.engine" not in _imported_by("topics", "list", "--help")
