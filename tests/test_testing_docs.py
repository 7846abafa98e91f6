"""Every ``python`` example in docs/testing.md runs as written: a newcomer copies them.

Each block is extracted; a block starting with ``# continues the example above`` is appended to
the one before it. A block defining ``test_`` functions is run with pytest in a subprocess (the
groupcoord plugin loads from its entry point, as in a user's suite); any other block is run as a
script. Both in a fresh directory, so nothing of this repository's test set-up helps them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "testing.md"
CONTINUES = "# continues the example above"


def examples() -> list[tuple[int, str]]:
    """(line of the first block, code) of each example, continuations joined."""
    text = DOC.read_text()
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M):
        code = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        if code.startswith(CONTINUES):
            assert out, f"docs/testing.md:{line}: continues nothing"
            first, before = out[-1]
            out[-1] = (first, before + "\n\n" + code)
        else:
            out.append((line, code))
    return out


EXAMPLES = examples()


def test_the_page_has_examples_and_none_elides_code() -> None:
    assert len(EXAMPLES) >= 4
    for line, code in EXAMPLES:
        compile(code, f"docs/testing.md:{line}", "exec")
        assert "..." not in code.replace('"..."', ""), f"docs/testing.md:{line} elides code"


@pytest.mark.parametrize("line, code", EXAMPLES, ids=[f"line{ln}" for ln, _ in EXAMPLES])
def test_example_runs_as_written(tmp_path: Path, line: int, code: str) -> None:
    pytest.importorskip("confluent_kafka")
    pytest.importorskip("aiokafka")
    is_test = re.search(r"^def test_", code, re.M) is not None
    path = tmp_path / ("test_example.py" if is_test else "example.py")
    path.write_text(code)
    cmd = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
           if is_test else [sys.executable, str(path)])
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"docs/testing.md:{line}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    if is_test:
        n = len(re.findall(r"^def test_", code, re.M))
        assert f"{n} passed" in p.stdout, p.stdout[-2000:]
