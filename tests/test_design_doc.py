"""docs/design.md, the map of the code, against the tree it maps: every path it names exists,
every package of ``src/groupcoord`` is in one of its trees, its coordinator tree names every
module of the coordinator, and its list of import circles is what the code has.

The page's conventions are ``tests/design_page.py``'s docstring. A module moved or added shows
up here as a line of the page to update.
"""

from __future__ import annotations

import re

from . import design_page
from .import_graph import PACKAGE, cycles, import_graph

PAGE = design_page.text()
TREES = design_page.trees(PAGE)


def test_the_page_has_its_trees_and_lists() -> None:
    roots = {next(iter(t)) for t in TREES}
    assert {"src/groupcoord/", "coordinator/"} <= roots
    assert design_page.layer_order(PAGE)
    assert design_page.circles_left(PAGE) is not None


def test_every_path_the_page_names_exists() -> None:
    named = design_page.named_paths(PAGE) + [p for t in TREES for p in t]
    missing = sorted({p for p in named if design_page.resolve(p) is None})
    assert missing == []


def test_every_package_is_in_a_tree() -> None:
    in_trees = {design_page.resolve(p) for t in TREES for p in t if p.endswith("/")}
    packages = {init.parent for init in design_page.PACKAGE_DIR.rglob("__init__.py")}
    absent = sorted(p.relative_to(design_page.PACKAGE_DIR.parent).as_posix()
                    for p in packages - in_trees)
    assert absent == []


def test_the_coordinator_tree_names_every_module_of_the_coordinator() -> None:
    """A module is named by its own entry, or by its name (without ``.py``) in the description
    of its folder's entry ("assignors/  server-side assignors: base (interface), uniform, ...")."""
    tree = next(t for t in TREES if "coordinator/" in t)
    coordinator = design_page.PACKAGE_DIR / "coordinator"
    unnamed = []
    for path in sorted(coordinator.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        rel = "coordinator/" + path.relative_to(coordinator).as_posix()
        folder = rel.rsplit("/", 1)[0] + "/"
        described = tree[folder].description if folder in tree else ""
        if rel not in tree and not re.search(rf"\b{re.escape(path.stem)}\b", described):
            unnamed.append(rel)
    assert unnamed == []


def test_the_circle_list_is_what_the_code_has() -> None:
    """Every circle of the import graph is listed, nothing else is, and "type-only" is said of
    exactly the circles that no import at run time closes."""
    listed = design_page.circles_left(PAGE)
    assert listed is not None
    found = {frozenset(c) for c in cycles(import_graph())}
    at_run_time = {frozenset(c) for c in cycles(import_graph(runtime_only=True))}
    assert {c.modules for c in listed} == found
    for c in listed:
        closed_at_run_time = any(c.modules >= r for r in at_run_time)
        assert c.type_only == (not closed_at_run_time), sorted(c.modules)
    assert all(m.startswith(f"{PACKAGE}.") for c in listed for m in c.modules)
