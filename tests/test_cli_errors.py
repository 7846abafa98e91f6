"""Every ``groupcoord`` error is one line on stderr, never a traceback; exit status 2 for bad
usage, 1 for a failure at run time (``cli.py``'s convention).

The named cases of ``serve`` run the real command (a subprocess); the sweep over every
subcommand runs ``main`` in-process with missing and garbage arguments and an unreachable
bootstrap server (fast: nothing there starts a server)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.cli import build_parser, main

from .conftest import GROUPCOORD


def serve(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GROUPCOORD, "serve", "--port", "0", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=tmp_path)


def one_line(p: subprocess.CompletedProcess[str], status: int, *needles: str) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == status, (p.returncode, p.stderr)
    assert len(lines) == 1, p.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_port_out_of_range(tmp_path: Path) -> None:
    p = subprocess.run([*GROUPCOORD, "serve", "--port", "70000", "--data-dir", "d"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    one_line(p, 2, "--port", "65535", "70000")


def test_topics_json_without_cluster_id(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "topics.json").write_text(json.dumps({"topics": []}))
    one_line(serve(tmp_path, "--data-dir", "d"), 1, "topics.json", "cluster_id")


@pytest.mark.parametrize("content", ["{garbage", "[]", '{"cluster_id": "x", "topics": [{}]}',
                                     '{"cluster_id": "x", "topics": [{"name": "t", "id": "no"}]}'])
def test_corrupt_topics_json_names_the_file(tmp_path: Path, content: str) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "topics.json").write_text(content)
    one_line(serve(tmp_path, "--data-dir", "d"), 1, str(Path("d") / "topics.json"))


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    one_line(serve(tmp_path, "--data-dir", "f"), 2, "--data-dir f is not a directory")
    one_line(serve(tmp_path, "--data-dir", "f/sub"), 1, "--data-dir f/sub", "Not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_data_dir_not_writable(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        one_line(serve(tmp_path, "--data-dir", "ro"), 1, "--data-dir ro", "not writable")
    finally:
        ro.chmod(0o755)


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        p = subprocess.run([*GROUPCOORD, "serve", "--port", str(port), "--data-dir", "d"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    one_line(p, 1, f"127.0.0.1:{port} is in use")


def test_a_listener_port_in_use_names_the_listener(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        p = subprocess.run([*GROUPCOORD, "serve", "--storage", "memory",
                            "--listener", "PLAINTEXT://127.0.0.1:0",
                            "--listener", f"SASL_PLAINTEXT://127.0.0.1:{port}"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    one_line(p, 1, f"cannot start: SASL_PLAINTEXT://127.0.0.1:{port} is in use")


def test_storage_memory_makes_no_data_directory(tmp_path: Path) -> None:
    """``--storage memory`` writes nothing: not even the default ./groupcoord-data."""
    proc = subprocess.Popen([*GROUPCOORD, "serve", "--port", "0", "--storage", "memory"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("listening on ")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, needle", [
    (["--racks", "a,b"], "--racks names 2 racks for 1 brokers"),
    (["--brokers", "2", "--racks", "a,,"], "--racks"),
    (["--brokers", "0"], "--brokers: must be at least 1"),
    (["--brokers", "x"], "--brokers: expected an integer"),
    (["--shards", "-1"], "--shards: must be at least 1"),
    (["--config", "foo"], "--config expects key=value"),
    (["--config", "max.conections=5"], "did you mean 'max.connections'"),
    (["--config", "max.connections=many"], "max.connections must be an integer, got 'many'"),
    (["--storage", "memory", "--durability", "full"], "--durability"),
    (["--durability", "fast"], "--durability: invalid choice"),
    (["--metrics-port", "99999"], "--metrics-port: must be within 0..65535"),
    # as Kafka refuses to start: a principal needs its type
    (["--config", "super.users=User:admin;bob"], "super.users: 'bob' is not a principal"),
    (["--config", "group.consumer.assignors=bogus"], "unknown assignor 'bogus'"),
])
def test_bad_serve_usage(tmp_path: Path, args: list[str], needle: str) -> None:
    one_line(serve(tmp_path, "--data-dir", "d", *args), 2, needle)


# ------------------------------------------------------------------ every subcommand

#: Commands that run a service or a sweep (they start servers, Spark or benchmarks); their bad
#: input is covered by the tests above and their own tests.
LONG_RUNNING = {("serve",), ("connect", "worker"), ("lab", "run"), ("lab", "calibrate"),
                ("lab", "pack"), ("bench",), ("simulate",), ("demo",)}


def _leaves(parser: argparse.ArgumentParser, path: list[str]
            ) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, sub in subs[0].choices.items():
        yield from _leaves(sub, [*path, name])


def _value(a: argparse.Action) -> str:
    if a.choices:
        return str(next(iter(a.choices)))
    return "1" if a.type is int or getattr(a.type, "__name__", "") == "parse" else "x"


def _cases() -> list[list[str]]:
    cases: list[list[str]] = [[], ["nosuch"]]
    for path, parser in _leaves(build_parser(), []):
        if tuple(path) in LONG_RUNNING:
            continue
        required: list[str] = []
        optional: list[argparse.Action] = []
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            if not a.option_strings:
                required += [_value(a)] if a.nargs in (None, 1, "+") else []
            elif a.required:
                required += [a.option_strings[0]] + ([_value(a)] if a.nargs != 0 else [])
            elif a.nargs != 0:
                optional.append(a)
        dead = (["--bootstrap-server", "127.0.0.1:1"]
                if any("--bootstrap-server" in a.option_strings for a in optional) else [])
        cases += [path, [*path, *required, *dead], [*path, "@@", *required, *dead]]
        for a in optional:
            flag = a.option_strings[0]
            if flag == "--bootstrap-server":
                cases += [[*path, *required, flag, b] for b in ("garbage", "h:x", "h:99999", "")]
            else:
                cases += [[*path, *required, *dead, flag, v] for v in ("@@", "-5", "")]
    return cases


def _run_main(argv: list[str]) -> tuple[object, str]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            status: object = main(argv)
    except SystemExit as e:
        status = e.code
    finally:
        logging.getLogger().handlers.clear()  # main's basicConfig wrote to the captured stderr
    return status, err.getvalue()


def test_every_subcommand_with_bad_input_fails_in_one_line(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bad = []
    cases = _cases()
    assert len(cases) > 100
    for argv in cases:
        status, err = _run_main(argv)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if "Traceback" in err or len(lines) > 1 or status not in (0, 1, 2) or (
                status != 0 and not lines):
            bad.append(f"{argv}: status {status}: {err[-500:]}")
    assert not bad, "\n".join(bad)


def test_usage_errors_are_status_2_and_failures_status_1() -> None:
    status, err = _run_main(["topics", "list", "--bootstrap-server", "nonsense"])
    assert status == 2 and "--bootstrap-server" in err
    status, err = _run_main(["topics", "list", "--bootstrap-server", "127.0.0.1:1"])
    assert status == 1 and err.startswith("error: ")
    status, err = _run_main(["demo", "--partitions", "99999999999"])
    assert status == 2 and "at most" in err


# ------------------------------------------------------------------ a newcomer's first commands


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"groupcoord {version('groupcoord')}"


def test_a_missing_extra_is_named_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``lab run`` without pyspark installed: which extra to install, not an internal error."""
    import sys

    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark fails as if missing
    for name in [m for m in sys.modules if m.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["lab", "run", "--spec", "quick", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err == ("error: this command needs pyspark, which comes with the 'lab' extra: "
                   "pip install 'groupcoord[lab]'\n")


def test_an_unknown_config_key_is_explained_without_pointing_at_docs(tmp_path: Path) -> None:
    line = one_line(serve(tmp_path, "--data-dir", "d", "--config", "bogus.key=1"), 2,
                    "unknown config 'bogus.key'", "Kafka's broker config names")
    assert "docs/" not in line


def test_bench_without_the_source_tree_says_so(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """From an installed wheel (no benchmarks/ beside the package): one line, status 1."""
    import groupcoord.cli as cli

    monkeypatch.setattr(cli, "__file__", str(tmp_path / "site-packages" / "groupcoord" /
                                                "cli.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["bench", "testing"])
    assert "benchmarks are not installed with the package" in str(exc.value.code)
