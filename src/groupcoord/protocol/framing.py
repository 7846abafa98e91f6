"""Kafka wire framing: every request and response is an int32 big-endian size, then that many bytes.

Kafka's ``NetworkReceive`` reads the 4-byte size, rejects a negative size and one above
``socket.request.max.bytes`` (``InvalidReceiveException``), and closes the connection. We do the
same with :data:`MAX_FRAME_SIZE` (100 MiB, Kafka's default) or the server's
``socket.request.max.bytes``. The decoder is sans-IO: feed it bytes, take out complete frames.

Memory: nothing is allocated by announced size. The buffer holds the bytes that arrived and
not yet complete frames (:attr:`FrameDecoder.buffered`), so a peer that announces a large frame
and sends it slowly makes us hold only what it sent (``server/limits.py`` bounds the total over
all connections); a completed frame is copied out once and the buffer is released when empty.
"""

from __future__ import annotations

import struct

__all__ = ["MAX_FRAME_SIZE", "FrameDecoder", "FrameError", "frame"]

#: The largest frame a peer may send (socket.request.max.bytes = 100 MiB as upstream's default).
MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The byte stream is not valid Kafka framing; the connection must be closed."""


def frame(payload: bytes) -> bytes:
    """``payload`` with its int32 size prefix."""
    return _SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Incremental frame splitter: ``feed(data)`` returns every frame completed by ``data``."""

    __slots__ = ("_buf", "_max", "_need")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._max = max_frame_size
        self._need = -1  # size of the frame being read; -1 while the size prefix is incomplete

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def limit(self, max_frame_size: int) -> None:
        """The largest frame from now on (a SASL listener's smaller limit until the client has
        authenticated, ``server/security/sasl.py``); a frame whose size was already read is
        checked against it when the next size is read."""
        self._max = max_frame_size

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        need = self._need
        while True:
            if need < 0:
                if end - pos < 4:
                    break
                (need,) = _SIZE.unpack_from(buf, pos)
                if need < 0:
                    raise FrameError(f"negative frame size {need}")
                if need > self._max:
                    raise FrameError(f"frame size {need} exceeds the maximum {self._max}")
                pos += 4
            if end - pos < need:
                break
            with memoryview(buf) as view:  # one copy of the frame, not two
                frames.append(bytes(view[pos:pos + need]))
            pos += need
            need = -1
        if pos == end:
            self._buf = bytearray()  # give a large frame's buffer back at once
        elif pos:
            del buf[:pos]
        self._need = need
        return frames
