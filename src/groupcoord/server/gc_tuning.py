"""The garbage collector settings of the ``groupcoord serve`` process (docs/benchmarks.md,
"One big group over the wire").

CPython frees objects by reference counting; its cyclic collector additionally walks the
tracked objects of a generation when enough were allocated, and the whole heap (every member,
assignment mapping and partition set of every group) when the old generation grew by a
quarter. With the default thresholds ``(700, 10, 10)`` a join storm of 10,000 members on 100
topics of 1,000 partitions, whose state grows by millions of objects in seconds, ran 1,196
young, 109 middle and 8 full collections: about 1 s of the storm's 7 s of CPU in process
(measured with ``gc.callbacks``). With a young generation of 10,000 it ran 78, 8 and none,
0.3 s. The coordinator's state is acyclic (reference counting frees it); the collector is
there for the occasional cycle of asyncio and exceptions, so collecting less often keeps little
garbage longer. The embedded server (``groupcoord.testing``) leaves its host's settings alone:
only the server's own process is tuned. No library is involved: the standard ``gc`` module is
the interface.
"""

from __future__ import annotations

import gc

#: ``gc.set_threshold`` arguments for the server process.
SERVER_THRESHOLDS = (10_000, 10, 10)


def tune_for_server() -> None:
    """Set the collector's thresholds for a long-running server holding large group state."""
    gc.set_threshold(*SERVER_THRESHOLDS)
