"""The layers of docs/design.md hold in the code: no import circle, no import back up a layer,
no class over 700 lines; and the import graph these checks use is built right.

The import graph (``tests/import_graph.py``) comes from the AST of every module of
``src/groupcoord``: every ``import`` and ``from ... import``, including those inside functions
and under ``TYPE_CHECKING``. The layer order and the entry points (the composition root, which
may import every layer) are read from docs/design.md "Layer order", written there once.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from . import design_page
from .import_graph import (
    PACKAGE,
    cycles,
    import_graph,
    imports_of,
    layer_of,
    modules,
    parse,
    upward_imports,
)

#: The longest a class may be (lines from ``class`` to its last statement).
MAX_CLASS_LINES = 700
#: Folders whose classes may be longer (none: every class of the package is held to the limit).
CLASS_SIZE_EXEMPT: tuple[str, ...] = ()
#: Class names defined both in the coordinator and elsewhere, left to the same reshaping: the
#: connect group type's messages (``coordinator/modern/connect/messages.py``) and the KIP-415
#: wire values (``protocol/connect_protocol.py``).
COORDINATOR_DUPLICATES = ("ConnectorTaskId", "ConnectorsAndTasks")


def _entry_modules(page: str) -> set[str]:
    return {f"{PACKAGE}." + p.removesuffix(".py").replace("/", ".")
            for p in design_page.entry_points(page)}


def _layers(page: str) -> dict[str, int]:
    return {name: rank for rank, names in enumerate(design_page.layer_order(page))
            for name in names}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_part_of_the_package_has_a_layer_or_is_an_entry_point() -> None:
    page = design_page.text()
    layers = _layers(page)
    entries = _entry_modules(page)
    assert layers and entries, "docs/design.md has no layer order or no entry points"
    for module in entries:
        assert module in modules(), f"docs/design.md names an entry point that is not a module: {module}"
    unplaced = sorted(m for m in modules()
                      if m != PACKAGE and m not in entries and layer_of(m, layers) is None)
    assert unplaced == [], f"modules outside every layer of docs/design.md: {unplaced}"


def test_no_import_runs_back_up_a_layer(graph: dict[str, set[str]]) -> None:
    page = design_page.text()
    entries = _entry_modules(page)
    layered = {m: t for m, t in graph.items() if m not in entries}
    assert upward_imports(layered, _layers(page)) == []


def test_only_entry_points_import_entry_points(graph: dict[str, set[str]]) -> None:
    entries = _entry_modules(design_page.text())
    importers = sorted((m, t) for m, targets in graph.items() if m not in entries
                       for t in targets if t in entries)
    assert importers == []


def test_no_import_circle_but_those_design_md_lists(graph: dict[str, set[str]]) -> None:
    """No circle outside the coordinator; the coordinator's are exactly those docs/design.md
    lists under "Open ends" (none once it says so). ``tests/test_design_doc.py`` checks the
    list's type-only claims."""
    found = {frozenset(c) for c in cycles(graph)}
    listed = design_page.circles_left(design_page.text())
    assert listed is not None, "docs/design.md has no 'Import circles left' list"
    outside = sorted(sorted(c) for c in found
                     if not all(m.startswith(f"{PACKAGE}.coordinator.") for m in c))
    assert outside == []
    assert found == {c.modules for c in listed}


def test_no_class_over_700_lines() -> None:
    src = Path(design_page.PACKAGE_DIR)
    over = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_CLASS_LINES and not rel.startswith(CLASS_SIZE_EXEMPT):
                    over.append((rel, node.name, size))
    assert over == []


def test_no_class_name_is_defined_twice() -> None:
    """Two classes of one name are either one concept (then one definition, imported by both)
    or two (then names that say how they differ). :data:`COORDINATOR_DUPLICATES` are the pairs
    with a side in the coordinator, resolved with its reshaping; once that lands it is empty."""
    src = Path(design_page.PACKAGE_DIR)
    where: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(path.relative_to(src).as_posix())
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert sorted(twice) == sorted(COORDINATOR_DUPLICATES), twice
    for name in COORDINATOR_DUPLICATES:
        assert any(f.startswith("coordinator/") for f in twice[name]), (name, twice[name])


# ------------------------------------------------------------------ the graph code itself


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, body in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return root


def test_the_graph_counts_imports_in_functions_under_type_checking_and_relative(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "__init__.py": "from pkg.low import thing\n",
        "low.py": "thing = 1\n",
        "mid.py": "def f():\n    from pkg import low\n    return low\n",
        "top.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.mid import f\n"
                   "else:\n    import pkg.low.thing\n"),
        "sub/__init__.py": "from .. import top\nfrom . import leaf\n",
        "sub/leaf.py": "from ..mid import f\nimport json\n",
    })
    graph = import_graph(src, "pkg")
    assert graph == {
        "pkg": {"pkg.low"},
        "pkg.low": set(),
        "pkg.mid": {"pkg.low"},
        "pkg.top": {"pkg.mid", "pkg.low"},
        "pkg.sub": {"pkg.top", "pkg.sub.leaf"},
        "pkg.sub.leaf": {"pkg.mid"},
    }
    runtime = import_graph(src, "pkg", runtime_only=True)
    assert runtime["pkg.top"] == {"pkg.low"}  # the else branch of TYPE_CHECKING runs
    known = modules(src, "pkg")
    assert imports_of("pkg.sub.leaf", known["pkg.sub.leaf"], known) == {"pkg.mid"}


def test_cycles_are_the_strongly_connected_components() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"},
             "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_upward_imports_follow_the_layer_ranks() -> None:
    layers = {"lab": 0, "sim": 1, "protocol": 2, "storage": 2}
    graph = {"pkg.sim.x": {"pkg.lab.y", "pkg.protocol.z"}, "pkg.protocol.z": {"pkg.storage.w"},
             "pkg.lab.y": {"pkg.sim.x"}, "pkg.other": {"pkg.lab.y"}}
    assert upward_imports(graph, layers, "pkg") == [("pkg.sim.x", "pkg.lab.y")]
