"""Bounded resources of ``groupcoord serve`` (``server/limits.py``, docs/configuration.md):
connection limits in total and per client address, idle connections closed, frames above
``socket.request.max.bytes`` refused, and the memory of partially received requests bounded by
``queued.max.request.bytes`` while a group member keeps heartbeating in its epoch."""

from __future__ import annotations

import contextlib
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.versions import ApiKey

from .conftest import ServerProcess, start_server

TIMEOUT_S = 30.0


@contextlib.contextmanager
def server(tmp_path: Path, *configs: str) -> Iterator[ServerProcess]:
    args: list[str] = []
    for c in configs:
        args += ["--config", c]
    srv = start_server(tmp_path / "data", *args)
    try:
        yield srv
    finally:
        srv.stop()


def _api_versions_frame(corr: int) -> bytes:
    cls = request_class(ApiKey.API_VERSIONS, 0)
    assert cls is not None
    return encode_request(build(cls), corr)


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the server")
        buf += chunk
    return buf


def _answers(s: socket.socket, corr: int = 1) -> bool:
    """True if ``s`` answers an ApiVersions request, False if the server closed it."""
    try:
        s.sendall(_api_versions_frame(corr))
        (size,) = struct.unpack(">i", _recv_exactly(s, 4))
        got, r = decode_response(ApiKey.API_VERSIONS, 0, _recv_exactly(s, size))
        return got == corr and int(r.error_code) == 0
    except (ConnectionError, OSError):
        return False


def _closed_by_server(s: socket.socket, timeout: float = TIMEOUT_S) -> bool:
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _connect(srv: ServerProcess, source: str | None = None) -> socket.socket:
    s = socket.create_connection((srv.host, srv.port), timeout=TIMEOUT_S,
                                 source_address=None if source is None else (source, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Member:
    """A KIP-848 consumer group member speaking ConsumerGroupHeartbeat over one connection."""

    def __init__(self, srv: ServerProcess, topic: str) -> None:
        self.client = KafkaClient(srv.bootstrap, client_id="bounds-member")
        self.group = f"g-{uuid.uuid4().hex[:8]}"
        r = self.client.call(ApiKey.CREATE_TOPICS, 7, topics=[{
            "name": topic, "num_partitions": 2, "replication_factor": -1}], timeout=10_000)
        assert int(r.topics[0].error_code) == 0, r
        hb = self._hb("", 0, [topic])
        self.member_id, self.epoch = hb.member_id, int(hb.member_epoch)
        assert self.epoch >= 1

    def _hb(self, member_id: str, epoch: int, topics: list[str] | None = None) -> object:
        hb = self.client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=self.group,
                              member_id=member_id, member_epoch=epoch, rebalance_timeout=30_000,
                              subscribed_topic_names=topics, topic_partitions=None if topics is None
                              else [])
        assert int(hb.error_code) == 0, hb
        return hb

    def heartbeat(self) -> int:
        hb = self._hb(self.member_id, self.epoch)
        return int(hb.member_epoch)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.client.close()


class ClassicMember:
    """A classic group member (JoinGroup, SyncGroup, Heartbeat v4+) over one connection: the
    group's only member, so its leader; it keeps its generation while nothing changes."""

    def __init__(self, srv: ServerProcess, topic: str) -> None:
        self.client = KafkaClient(srv.bootstrap, client_id="bounds-classic")
        self.group = f"cg-{uuid.uuid4().hex[:8]}"
        meta = struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", -1)
        member_id = ""
        for _ in range(2):  # v4+: the first join answers MEMBER_ID_REQUIRED with the id
            r = self.client.send(self._req(ApiKey.JOIN_GROUP, 9, group_id=self.group,
                                           session_timeout=10_000, rebalance_timeout=10_000,
                                           member_id=member_id, group_instance_id=None,
                                           protocol_type="consumer", protocols=[
                                               {"name": "range", "metadata": meta}]))
            member_id = r.member_id
            if int(r.error_code) == 0:
                break
        assert int(r.error_code) == 0 and r.leader == member_id, r
        self.member_id, self.generation = member_id, int(r.generation_id)
        s = self.client.send(self._req(ApiKey.SYNC_GROUP, 5, group_id=self.group,
                                       generation_id=self.generation, member_id=member_id,
                                       group_instance_id=None, protocol_type="consumer",
                                       protocol_name="range", assignments=[
                                           {"member_id": member_id, "assignment": b"a"}]))
        assert int(s.error_code) == 0, s

    @staticmethod
    def _req(key: int, version: int, **kw: object) -> object:
        cls = request_class(key, version)
        assert cls is not None
        return build(cls, **kw)

    def heartbeat(self) -> int:
        """The heartbeat's error code (0: still a member of its generation)."""
        hb = self.client.send(self._req(ApiKey.HEARTBEAT, 4, group_id=self.group,
                                        generation_id=self.generation, member_id=self.member_id,
                                        group_instance_id=None))
        return int(hb.error_code)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.client.close()


def _rss_peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_connections_past_max_connections_are_closed_while_a_member_keeps_its_epoch(
        tmp_path: Path) -> None:
    limit, flood = 6, 40
    with server(tmp_path, f"max.connections={limit}", "group.initial.rebalance.delay.ms=0") as srv:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        member = Member(srv, topic)
        classic = ClassicMember(srv, topic)
        try:
            epoch = member.epoch
            sockets = []
            answered = refused = 0
            for i in range(flood):
                s = _connect(srv)
                sockets.append(s)
                if _answers(s, i):
                    answered += 1
                else:
                    refused += 1
                if i % 5 == 0:  # the members heartbeat through the flood, in their generation
                    assert member.heartbeat() == epoch
                    assert classic.heartbeat() == 0
            # the members' connections count: at most limit - 2 of the flood got in
            assert answered <= limit - 2
            assert refused >= flood - (limit - 2)
            assert member.heartbeat() == epoch
            assert classic.heartbeat() == 0
            for s in sockets:
                s.close()
            # the slots come back once the flood is gone
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                with _connect(srv) as s:
                    if _answers(s):
                        break
                assert time.monotonic() < deadline, "no connection accepted after the flood"
                time.sleep(0.1)
            assert member.heartbeat() == epoch
            assert classic.heartbeat() == 0
        finally:
            member.close()
            classic.close()
        assert f"max.connections={limit} reached" in srv.stderr()


def test_max_connections_per_ip_and_its_overrides(tmp_path: Path) -> None:
    with server(tmp_path, "max.connections.per.ip=2",
                "max.connections.per.ip.overrides=127.0.0.2:4") as srv:
        ones = [_connect(srv) for _ in range(2)]
        assert all(_answers(s) for s in ones)
        extra = _connect(srv)
        assert not _answers(extra)
        twos = [_connect(srv, source="127.0.0.2") for _ in range(4)]
        assert all(_answers(s) for s in twos)
        fifth = _connect(srv, source="127.0.0.2")
        assert not _answers(fifth)
        for s in [*ones, extra, *twos, fifth]:
            s.close()
        assert "max.connections.per.ip=2 reached for 127.0.0.1" in srv.stderr()
        assert "max.connections.per.ip=4 reached for 127.0.0.2" in srv.stderr()


def test_idle_connections_are_closed_active_ones_stay(tmp_path: Path) -> None:
    with server(tmp_path, "connections.max.idle.ms=400") as srv:
        idle, active = _connect(srv), _connect(srv)
        assert _answers(idle) and _answers(active)
        idle.settimeout(0.1)
        deadline = time.monotonic() + TIMEOUT_S
        corr = 2
        while True:
            try:
                if idle.recv(1) == b"":
                    break
            except TimeoutError:
                pass
            except ConnectionResetError:
                break
            assert _answers(active, corr), "an active connection was closed"
            corr += 1
            assert time.monotonic() < deadline, "the idle connection was not closed"
        assert _answers(active, corr)
        active.close()
        idle.close()


def test_a_frame_above_socket_request_max_bytes_closes_the_connection(tmp_path: Path) -> None:
    with server(tmp_path, "socket.request.max.bytes=4096") as srv:
        with _connect(srv) as s:
            assert _answers(s)  # a request within the limit
            s.sendall(struct.pack(">i", 4097) + b"x" * 64)
            assert _closed_by_server(s)
        with _connect(srv) as s:
            assert _answers(s)
        assert "frame size 4097 exceeds the maximum 4096" in srv.stderr()


def test_slow_senders_of_huge_frames_hold_at_most_queued_max_request_bytes(tmp_path: Path) -> None:
    """Four clients each announce a frame just under ``socket.request.max.bytes`` (100 MiB) and
    send 32 MiB of it: 128 MiB in flight. With ``queued.max.request.bytes`` = 16 MiB the
    server's peak memory grows by far less than that, each of them is closed, and a member
    keeps heartbeating in its epoch."""
    bound = 16 * 1024 * 1024
    with server(tmp_path, f"queued.max.request.bytes={bound}") as srv:
        member = Member(srv, f"t-{uuid.uuid4().hex[:8]}")
        try:
            epoch = member.epoch
            before = _rss_peak_kib(srv.proc.pid)
            senders = [_connect(srv) for _ in range(4)]
            for s in senders:
                s.sendall(struct.pack(">i", 100 * 1024 * 1024 - 1))
            chunk = b"\x00" * (256 * 1024)
            open_ = set(range(len(senders)))
            for step in range(128):  # 128 x 256 KiB = 32 MiB each, in turns
                for i in sorted(open_):
                    try:
                        senders[i].sendall(chunk)
                    except OSError:  # closed by the server
                        open_.discard(i)
                if step % 16 == 0:
                    assert member.heartbeat() == epoch
            grown_mib = (_rss_peak_kib(srv.proc.pid) - before) / 1024
            assert grown_mib < 56, f"the server's peak memory grew by {grown_mib:.0f} MiB"
            for s in senders:
                assert _closed_by_server(s)
                s.close()
            assert member.heartbeat() == epoch
        finally:
            member.close()
        assert f"over queued.max.request.bytes={bound}" in srv.stderr()
