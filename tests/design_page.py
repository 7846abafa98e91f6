"""What the architecture tests read from ``docs/design.md``: the layer order, the entry points,
the trees of packages and modules, the paths the page names, and its list of import circles.

The page's conventions, which these functions rely on (the page says them too):

- "### Layer order": a numbered list, one layer per item, each a backticked folder (``lab/``) or
  module (``commands.py``) of ``src/groupcoord``; the paragraph after it names the entry points
  as "The entry points ... : `cli.py`, ..." up to the end of that paragraph.
- A tree is a fenced block whose first line is a folder (``name/``) at column 0; each entry is
  ``name/`` or ``name.py`` indented two spaces per level, then its description; a line that
  does not start with such an entry continues the description above it.
- "Import circles left": a list of circles, each a line ``- `a.py` ↔ `b.py` ...`` with
  "(type-only)" when no import of it runs, or the words "Import circles left: none.".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
PACKAGE_DIR = ROOT / "src" / "groupcoord"

_TICKED = re.compile(r"`([^`]+)`")
_ENTRY = re.compile(r"^( *)([A-Za-z0-9_][A-Za-z0-9_./]*(?:/|\.py))(?:\s+(.*))?$")


def text() -> str:
    return DESIGN.read_text(encoding="utf-8")


def _section(page: str, heading: str) -> str:
    """The text under ``heading`` (a line), up to the next heading of any level."""
    start = page.index(heading + "\n") + len(heading) + 1
    nxt = re.search(r"^#{1,6} ", page[start:], re.M)
    return page[start:start + nxt.start()] if nxt else page[start:]


def layer_order(page: str) -> list[list[str]]:
    """The layers, top first, each the first names under the package (``lab``, ``commands``)."""
    layers = []
    for line in _section(page, "### Layer order").splitlines():
        if re.match(r"^\d+\. ", line):
            names = [n.rstrip("/").removesuffix(".py") for n in _TICKED.findall(line)]
            layers.append(names)
    return layers


def entry_points(page: str) -> list[str]:
    """The modules of the composition root, as paths under ``src/groupcoord`` (``cli.py``)."""
    section = _section(page, "### Layer order")
    start = section.index("The entry points")
    paragraph = section[start:].split("\n\n")[0]
    names = paragraph.split(":", 1)[1]
    return list(dict.fromkeys(n for n in _TICKED.findall(names) if n.endswith(".py")))


@dataclass
class TreeEntry:
    path: str  # as written from the tree's root, "coordinator/assignors/base.py"
    description: str = ""
    children: list[str] = field(default_factory=list)


def trees(page: str) -> list[dict[str, TreeEntry]]:
    """Every tree of the page: path -> entry (folders end with "/")."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", page, re.M | re.S):
        lines = block.splitlines()
        first = _ENTRY.match(lines[0]) if lines else None
        if first is None or first.group(1) or not first.group(2).endswith("/"):
            continue
        tree: dict[str, TreeEntry] = {}
        stack: list[str] = []  # the folders above the current line, by depth
        last: TreeEntry | None = None
        for line in lines:
            m = _ENTRY.match(line)
            indent = len(line) - len(line.lstrip(" "))
            if m is None or indent % 2 or indent // 2 > len(stack):
                if last is not None:  # a continuation of the description above
                    last.description += " " + line.strip()
                continue
            depth = indent // 2
            del stack[depth:]
            name = m.group(2)
            path = "".join(stack) + name
            last = tree[path] = TreeEntry(path, m.group(3) or "")
            if stack:
                tree["".join(stack)].children.append(name)
            if name.endswith("/"):
                stack.append(name)
        out.append(tree)
    return out


def named_paths(page: str) -> list[str]:
    """Every backticked module or folder path of the page (``coordinator/shard.py``,
    ``server/apis/``, ``shard.py``), outside "Models worth reading" (which names upstream's)."""
    ours = re.sub(r"^```.*?^```", "", page.split("## Models worth reading")[0], flags=re.M | re.S)
    out = []
    for name in _TICKED.findall(ours):
        if re.fullmatch(r"[A-Za-z0-9_./]+(?:/|\.py)", name) and not name.startswith("."):
            out.append(name)
    return out


def resolve(path: str) -> Path | None:
    """The file or folder a path of the page names: from the repository root, from
    ``src/groupcoord`` or from ``src/groupcoord/coordinator`` (the coordinator's tree and
    table name its modules from there); a bare ``name.py``: any module of that name."""
    for base in (ROOT, PACKAGE_DIR, PACKAGE_DIR / "coordinator"):
        candidate = base / path
        if candidate.exists():
            return candidate
    if "/" not in path:
        return next(iter(sorted(PACKAGE_DIR.rglob(path))), None)
    return None


@dataclass(frozen=True)
class Circle:
    modules: frozenset[str]  # dotted names
    type_only: bool


def circles_left(page: str) -> list[Circle] | None:
    """The page's list of import circles ([] for "none"); None if the page has no such list."""
    at = page.find("Import circles left")
    if at < 0:
        return None
    rest = page[at:]
    if rest.startswith("Import circles left: none."):
        return []
    items: list[str] = []
    for line in rest.splitlines()[1:]:
        stripped = line.strip()
        if not stripped:
            break
        if stripped.startswith("- "):
            items.append(stripped[2:])
        elif items:
            items[-1] += " " + stripped
    out = []
    for item in items:
        m = re.match(r"((?:`[^`]+`\s*↔\s*)+`[^`]+`)\s*(\(type-only\))?", item)
        if m is None:
            raise ValueError(f"docs/design.md: not a circle of modules: {item!r}")
        names = frozenset("groupcoord." + p.removesuffix(".py").replace("/", ".")
                          for p in _TICKED.findall(m.group(1)))
        out.append(Circle(names, m.group(2) is not None))
    return out
