"""The asyncio Kafka wire server (docs/design.md "Layers": server/ drives the coordinator core).

- ``app``: TCP server, connections, per-connection request pipeline, dispatch, bad input;
- ``apis``: the Kafka API edge, one module per API family (kio entities in and out);
- ``runtime``: the coordinator shards on one event loop, write-before-respond, timers;
- ``topic_registry`` / ``partition_log``: the single node's topics and partition data;
- ``cli``: ``groupcoord serve``, ``groupcoord topics ...``, ``groupcoord groups ...``.
"""
