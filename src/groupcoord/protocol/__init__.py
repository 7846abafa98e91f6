"""The Kafka wire edge (docs/design.md "Layers"): framing, headers, the kio codec, the API version
table, error codes, the extension APIs' JSON schemas and their kio-shaped entities
(``extensions.py``, ``schemas/``, ``docs/wire.md``), a hand-written encoder for the hot heartbeat
response, and a small blocking client. Imports nothing of groupcoord's but itself."""
