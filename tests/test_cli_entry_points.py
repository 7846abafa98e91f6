"""Every way of starting the command line sees every sub-command: the ``groupcoord`` script's
entry point, ``python -m groupcoord`` and ``python -m groupcoord.cli`` (which runs ``cli.py`` as
``__main__``, a second copy of the module: the sub-commands must still be found)."""

from __future__ import annotations

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
