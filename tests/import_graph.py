"""The import graph of ``src/groupcoord`` from the AST, for the architecture tests
(``tests/test_architecture.py``, ``tests/test_design_doc.py``).

Every ``import`` and ``from ... import`` counts, wherever it stands: at module level, inside a
function, under ``if TYPE_CHECKING:``. ``from a.b import c`` is an edge to ``a.b.c`` when that is
a module, else to ``a.b``. Importing ``a.b.c`` also runs the package ``a.b``'s ``__init__``;
that implicit step is not an edge (as import-linter and grimp count), so a package's
``__init__`` may re-export what its modules define.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "groupcoord"
SRC = Path(__file__).resolve().parent.parent / "src"


def modules(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (a package by its
    ``__init__.py``)."""
    out: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package (``import a.b.c`` names
    ``a.b.c``; a name of a function or class inside a module resolves to that module)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


@functools.cache
def parse(path: Path) -> ast.Module:
    """The AST of a source file (parsed once per test session)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _import_nodes(tree: ast.AST, runtime_only: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``; with ``runtime_only``, not those under
    ``if TYPE_CHECKING:`` (their ``else`` branch runs and counts)."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        if runtime_only and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def imports_of(module: str, path: Path, known: Mapping[str, Path],
               runtime_only: bool = False) -> set[str]:
    """The modules of the package ``module`` imports (itself excluded); with ``runtime_only``,
    without the imports made for type checking only."""
    tree = parse(path)
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in _import_nodes(tree, runtime_only):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                if target is not None:
                    out.add(target)
            continue
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[:len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            target = _resolve(f"{base}.{alias.name}", known)
            if target is not None:
                out.add(target)
    out.discard(module)
    return out


def import_graph(src: Path = SRC, package: str = PACKAGE,
                 runtime_only: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (``runtime_only``: at run time)."""
    known = modules(src, package)
    return {name: imports_of(name, path, known, runtime_only) for name, path in known.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import circles: every strongly connected component of more than one module
    (Tarjan's algorithm, iterative), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layer_of(module: str, layers: Mapping[str, int], package: str = PACKAGE) -> int | None:
    """The rank of ``module``'s layer (0 = the top) from ``layers`` (first name under the
    package -> rank), or None for a module outside every layer."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != package:
        return None
    return layers.get(parts[1])


def upward_imports(graph: Mapping[str, Iterable[str]], layers: Mapping[str, int],
                   package: str = PACKAGE) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module's layer is above the importer's."""
    out = []
    for importer, targets in graph.items():
        lo = layer_of(importer, layers, package)
        if lo is None:
            continue
        for target in targets:
            hi = layer_of(target, layers, package)
            if hi is not None and hi < lo:
                out.append((importer, target))
    return sorted(out)
