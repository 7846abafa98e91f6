"""The Kafka wire edge (DESIGN.md "Layers"): framing, headers, the kio codec, the API version
table, error codes, a hand-written encoder for the hot heartbeat response, and a small blocking
client. Imports nothing of groupcoord's but itself."""
