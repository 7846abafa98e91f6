"""``python -m groupcoord``: the ``groupcoord`` command line (:mod:`groupcoord.cli`)."""

import sys

from groupcoord.cli import main

sys.exit(main())
