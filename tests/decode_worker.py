"""A child process for tests/test_decode_bounds.py: decodes the request or response bodies it is
sent, one per line (``req|resp KEY VERSION HEX``), with the codec the server and client use, and
answers ``ok`` or ``error`` per line. A body that aborts the decoder (kio's native allocation
failure) kills this process, not the test runner; the test sees the dead child as the failure."""

from __future__ import annotations

import sys

from groupcoord.protocol.codec import (
    DecodeError,
    decode_request_body,
    decode_response,
    request_class,
    response_header_version,
)


def main() -> None:
    for line in sys.stdin:
        side, key_s, version_s, body_hex = line.split()
        key, version, body = int(key_s), int(version_s), bytes.fromhex(body_hex.strip("-"))
        try:
            if side == "req":
                cls = request_class(key, version)
                assert cls is not None
                decode_request_body(cls, body, 0)
            else:
                header = b"\x00\x00\x00\x07"
                if response_header_version(key, version) == 1:
                    header += b"\x00"
                decode_response(key, version, header + body)
            print("ok", flush=True)
        except DecodeError:
            print("error", flush=True)


if __name__ == "__main__":
    main()
