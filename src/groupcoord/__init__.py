"""groupcoord: a Kafka-compatible group coordinator (KIP-848, connect groups, classic groups)."""

__version__ = "0.1.0"
