"""``groupcoord serve`` tunes its process's garbage collector (``server/gc_tuning.py``)."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

import pytest

from groupcoord.server import gc_tuning
from groupcoord.server.cli import _run_serve


@pytest.fixture
def restore_gc() -> object:
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)


def test_tune_for_server_sets_the_thresholds(restore_gc: object) -> None:
    gc.set_threshold(700, 10, 10)
    gc_tuning.tune_for_server()
    assert gc.get_threshold() == gc_tuning.SERVER_THRESHOLDS
    assert gc_tuning.SERVER_THRESHOLDS[0] > 700  # a larger young generation than CPython's


def test_serve_tunes_before_anything_else(tmp_path: Path, restore_gc: object,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Even a serve that refuses its arguments has tuned the process first (the data dir is
    a file: the command answers with its one-line error and exit code 2)."""
    gc.set_threshold(700, 10, 10)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    ns = argparse.Namespace(data_dir=str(not_a_dir), listener=None, port=None)
    assert _run_serve(ns) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert gc.get_threshold() == gc_tuning.SERVER_THRESHOLDS
