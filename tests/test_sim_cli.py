"""``groupcoord simulate`` (sim/cli.py): one run, many seeds, traces, JSON, exit codes."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from groupcoord.cli import build_parser, main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(["simulate", *argv])
    return rc, out.getvalue(), err.getvalue()


def test_simulate_is_a_registered_subcommand() -> None:
    assert "simulate" in build_parser().format_help()


def test_one_run_prints_the_summary_with_metrics_per_disturbance() -> None:
    rc, out, _ = run("--scenario", "crash", "--protocol", "consumer:range", "--seed", "4")
    assert rc == 0
    assert out.startswith("scenario crash  protocol consumer:range  seed 4: OK")
    assert "disturbance" in out and "initial-join" in out and "\n  crash " in out


def test_json_output_is_deterministic() -> None:
    rc, out, _ = run("--scenario", "random", "--seed", "9", "--json")
    assert rc == 0
    a = json.loads(out)
    b = json.loads(run("--scenario", "random", "--seed", "9", "--json")[1])
    a.pop("perf"), b.pop("perf")
    assert a == b and a["ok"] is True and a["violation"] is None
    assert a["protocol"] == "consumer:uniform" and a["disturbances"]


def test_trace_file_is_written(tmp_path: Path) -> None:
    path = tmp_path / "trace.txt"
    rc, _, _ = run("--scenario", "join", "--seed", "1", "--trace", str(path))
    assert rc == 0
    lines = path.read_text().splitlines()
    assert lines and any(" assigned " in line for line in lines)
    again = tmp_path / "again.txt"
    run("--scenario", "join", "--seed", "1", "--trace", str(again))
    assert again.read_bytes() == path.read_bytes()


def test_many_seeds_report_how_many_passed() -> None:
    rc, out, _ = run("--scenario", "random", "--seeds", "0-9", "--protocol", "consumer:range")
    assert rc == 0
    assert out.strip().splitlines()[-1] == "10/10 seeds passed (random, consumer:range)"
    rc, out, _ = run("--scenario", "random", "--seeds", "0-3", "--json")
    assert rc == 0 and json.loads(out)["passed"] == 4


def test_a_violation_exits_non_zero_with_the_seed_and_the_command() -> None:
    rc, out, _ = run("--scenario", "random", "--seeds", "0-4",
                     "--shard-factory", "tests.test_sim_invariants:EagerShard")
    assert rc == 1
    assert "reproduce with: groupcoord simulate --scenario random --protocol consumer:uniform " \
           "--seed " in out
    assert "seeds passed" in out.splitlines()[-1]


def test_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[group]\nmembers = 2\ntopics = { a = 3 }\n'
                    '[[events]]\nat_ms = 20000\nkind = "crash"\nmember = "c1"\n')
    rc, out, _ = run("--scenario", str(path), "--seed", "2")
    assert rc == 0 and "scenario mine " in out


@pytest.mark.parametrize("argv", [
    ("--scenario", "nope"),
    ("--scenario", "join", "--protocol", "connect:sticky"),
    ("--scenario", "join", "--protocol", "consumer:sticky"),
    ("--scenario", "random", "--seeds", "9-1"),
    ("--scenario", "random", "--seeds", "1-3", "--trace", "x"),
    (),
])
def test_bad_arguments_exit_2_with_a_message(argv: tuple[str, ...]) -> None:
    rc, _, err = run(*argv)
    assert rc == 2 and err.startswith("error: ")


def test_list() -> None:
    rc, out, _ = run("--list")
    assert rc == 0 and "rolling-bounce" in out and "consumer[:uniform|range|client]" in out
