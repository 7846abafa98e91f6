"""The Connect embedded protocol (KIP-415): re-exported from :mod:`groupcoord.protocol.connect_protocol`.

The pure codec moved down to the protocol layer so that the coordinator can read and write the
Connect worker metadata and assignments of classic workers during an online migration (issue #4);
the workers keep importing it from here.
"""

from groupcoord.protocol.connect_protocol import (
    CONNECT_PROTOCOL_TYPE,
    CONNECT_PROTOCOL_V0,
    CONNECT_PROTOCOL_V1,
    CONNECT_PROTOCOL_V2,
    ConnectProtocolCompatibility,
    ConnectProtocolError,
    decode_assignment,
    decode_worker_metadata,
    encode_assignment,
    encode_worker_metadata,
    join_protocols,
)

__all__ = [
    "CONNECT_PROTOCOL_TYPE",
    "CONNECT_PROTOCOL_V0",
    "CONNECT_PROTOCOL_V1",
    "CONNECT_PROTOCOL_V2",
    "ConnectProtocolCompatibility",
    "ConnectProtocolError",
    "decode_assignment",
    "decode_worker_metadata",
    "encode_assignment",
    "encode_worker_metadata",
    "join_protocols",
]
