"""The lab's entry point for ``spark-submit`` (``docs/lab.md`` "On a cluster").

``spark-submit [options] path/to/groupcoord/lab/submit.py run --spec paper --out DIR`` runs
``groupcoord lab run --spec paper --out DIR`` in the driver that spark-submit started, on the
master and with the memory, ``--py-files`` and ``--archives`` given to spark-submit. Print this
file's path with ``python -c "import groupcoord.lab.submit as m; print(m.__file__)"``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from groupcoord.cli import main as cli_main

    return cli_main(["lab", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
