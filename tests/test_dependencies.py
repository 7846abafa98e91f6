"""Every third-party module the broker and the core import is a declared dependency of the
package (``[project] dependencies`` in pyproject.toml): ``pip install groupcoord`` then
``groupcoord serve`` must not fail on an import (``crc32c``, used by the partition log's CRC
checks, once was imported but undeclared). The lab and the pytest plugin have their own extras
and are not checked here."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ("server", "protocol", "storage", "coordinator", "client", "sim")


def _imported(package_dir: Path) -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere under ``package_dir`` -> files."""
    found: dict[str, set[str]] = {}
    for f in package_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "groupcoord":
                    found.setdefault(top, set()).add(str(f.relative_to(ROOT)))
    return found


def _declared() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_the_core_imports_only_declared_dependencies() -> None:
    dists = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = {}
    for sub in CORE:
        for module, files in _imported(ROOT / "src" / "groupcoord" / sub).items():
            names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
            if not names & declared:
                missing[module] = sorted(files)
    assert missing == {}, f"imported but not in [project] dependencies: {missing}"
    assert "crc32c" in declared
