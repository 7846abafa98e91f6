"""Malformed bodies never take the process down (``protocol/bounds.py``).

kio's native decoder reserves memory for an array's claimed length before reading it: a body
``ff ff ff ff 0f`` (a compact-array length of ~2^32) aborted the whole broker. Here:

- every advertised request (and its response, which the client decodes) round-trips through the
  bounds check: valid encodings pass and the check ends exactly where the body ends;
- a fuzz test over every advertised API key and version sends random and adversarial bodies
  (huge varints, negative and huge int32 / int16 lengths, valid bodies with a length patched
  in) to a decoding child process: the child must answer every one (``ok`` or ``error``); an
  abort is a dead child, so a failure here, not a dead test runner;
- over the wire: the reviewer's three bodies (ShareGroupDescribe v1, DescribeShareGroupOffsets
  v1, Metadata v12) each get the connection closed, and the server answers the next one.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from groupcoord.protocol import bounds
from groupcoord.protocol.codec import (
    decode_request_body,
    encode_entity,
    request_class,
    response_class,
)
from groupcoord.protocol.versions import API_VERSIONS

from .conftest import GROUPCOORD

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

WORKER = Path(__file__).with_name("decode_worker.py")
ADVERTISED = [(int(k), v) for k, (lo, hi) in API_VERSIONS.items() for v in range(lo, hi + 1)
              if request_class(int(k), v) is not None]
REVIEWER_BODY = bytes.fromhex("ffffffff0f")
REVIEWER_CASES = [(77, 1), (90, 1), (3, 12)]

HOSTILE = [
    bytes.fromhex("ffffffff0f"), bytes.fromhex("feffffff07"), bytes.fromhex("8080808008"),
    bytes.fromhex("ffffffffff"), bytes.fromhex("7fffffff"), bytes.fromhex("80000000"),
    bytes.fromhex("fffffffe"), bytes.fromhex("7fff"), bytes.fromhex("8000"), bytes.fromhex("fffe"),
    bytes.fromhex("00000000"), bytes.fromhex("01"), bytes.fromhex("00"),
]


def test_the_reviewer_bodies_are_refused_by_the_check() -> None:
    for key, version in REVIEWER_CASES:
        cls = request_class(key, version)
        with pytest.raises(bounds.BoundsError, match="array of 4294967294 elements"):
            bounds.check_body(cls, REVIEWER_BODY, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_valid_bodies_pass_and_the_check_ends_where_they_end(data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(ADVERTISED))
    for cls in (request_class(key, version), response_class(key, version)):
        if cls is None:
            continue
        entity = data.draw(st.from_type(cls))
        try:
            body = encode_entity(entity)
        except (struct.error, ValueError, TypeError):  # plain ints out of the field's range
            continue
        assert bounds.check_body(cls, body, 0) == len(body)
        if cls is request_class(key, version):
            assert decode_request_body(cls, body, 0) == entity


class Decoder:
    """The decoding child (tests/decode_worker.py); restarted after it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def decode(self, side: str, key: int, version: int, body: bytes) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(f"{side} {key} {version} {body.hex() or '-'}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self.proc.stdout.readline().strip()
        if not answer:
            self.proc.wait(30)
            err = self.proc.stderr.read()[-400:] if self.proc.stderr else ""
            self.proc = None
            return f"died: {err}"
        return answer

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def decoder() -> Iterator[Decoder]:
    d = Decoder()
    yield d
    d.close()


def _patched_valid(data: st.DataObject, cls: Any) -> bytes:
    """A valid encoding of ``cls`` with a hostile length written over some position."""
    try:
        body = encode_entity(data.draw(st.from_type(cls)))
    except (struct.error, ValueError, TypeError):  # plain ints out of the field's range
        body = b""
    at = data.draw(st.integers(0, len(body)))
    hostile = data.draw(st.sampled_from(HOSTILE))
    return body[:at] + hostile + body[at + data.draw(st.integers(0, len(hostile))):]


@st.composite
def adversarial(draw: Any) -> bytes:
    parts = draw(st.lists(st.one_of(st.sampled_from(HOSTILE), st.binary(max_size=12)),
                          max_size=6))
    return b"".join(parts)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_body_kills_the_decoder(decoder: Decoder, data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(ADVERTISED))
    side = data.draw(st.sampled_from(["req", "req", "resp"]))
    cls = (request_class if side == "req" else response_class)(key, version)
    if cls is None:
        return
    body = _patched_valid(data, cls) if data.draw(st.booleans()) else data.draw(adversarial())
    answer = decoder.decode(side, key, version, body)
    assert answer in ("ok", "error"), (side, key, version, body.hex(), answer)


# ------------------------------------------------------------------------------ over the wire


def _serve(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([*GROUPCOORD, "serve", "--host", "127.0.0.1", "--port", "0",
                             "--storage", "memory", "--data-dir", str(data_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(
        proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(120)
    if not line or not line[0].startswith("listening on "):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, int(line[0].split()[-1].rsplit(":", 1)[1])


def _frame(key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", key, version, 1, 3) + b"abc" + b"\x00"  # request header v2
    return struct.pack(">i", len(header) + len(body)) + header + body


def _api_versions_answered(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        header = struct.pack(">hhih", 18, 0, 9, 1) + b"t"  # ApiVersions v0, header v1
        s.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        reply = s.recv(size, socket.MSG_WAITALL)
        return struct.unpack(">i", reply[:4])[0] == 9


def test_the_reviewer_requests_close_the_connection_and_the_server_stays_up(
        tmp_path: Path) -> None:
    proc, port = _serve(tmp_path)
    try:
        for key, version in REVIEWER_CASES:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(_frame(key, version, REVIEWER_BODY))
                assert s.recv(100) == b""  # closed, no answer (Kafka: InvalidRequestException)
            assert proc.poll() is None
            assert _api_versions_answered(port)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    for name in ("SHARE_GROUP_DESCRIBE v1", "DESCRIBE_SHARE_GROUP_OFFSETS v1", "METADATA v12"):
        assert err.count(f"malformed {name} request") == 1, err[-2000:]  # one line each
    assert "Traceback" not in err
