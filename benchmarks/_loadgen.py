"""A load generator for many KIP-848 consumer members over a few connections (docs/benchmarks.md).

One thread, one ``selectors`` loop, ``connections`` sockets; each member is a small state machine
that behaves as the consumer protocol's clients do ("ConsumerGroupHeartbeat API" of KIP-848):

- it joins with epoch 0, its subscription and a rebalance timeout;
- it heartbeats every ``heartbeat_interval_ms`` the coordinator returns, with only group id,
  member id and epoch set (every other field null, as librdkafka and the Java client send them);
- when a response carries an assignment different from what it owns, it takes it at once (the
  members do no work, so revoking and assigning are instant) and acknowledges with a heartbeat
  right away that reports what it now owns (``TopicPartitions``), as the clients do;
- UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: it drops its partitions and joins again at epoch 0
  (counted: in a healthy run these are zero);
- with ``eager`` set, it heartbeats again as soon as its response arrives (the join storm's
  "as fast as they can"; the server benchmark's join loop did the same);
- ``restart(i)``: the member leaves (epoch -1) and a fresh member (new id) joins in its place.

Requests are encoded by hand (the ConsumerGroupHeartbeat v1 request layout of the upstream
schema; a test checks them against kio's decoder) and responses parsed by hand, so the client
costs a few microseconds a heartbeat and the server stays the thing being measured. kio's
generic codec costs ~10-20 µs a message, which for 10,000 members at once would make the load
generator, not the server, the bottleneck on a 2-core machine: that is why this is written by
hand rather than on :class:`groupcoord.protocol.client.KafkaClient`.

Latency is measured per request from the moment its bytes are handed to the socket to the
moment its response is parsed.
"""

from __future__ import annotations

import heapq
import selectors
import socket
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from groupcoord.protocol.fast import compact_nullable_string, uvarint

HB_API_KEY = 68
HB_VERSION = 1
UNKNOWN_MEMBER_ID = 25
FENCED_MEMBER_EPOCH = 110

_HDR = struct.Struct(">hhi")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_RESP_HEAD = struct.Struct(">iih")  # correlation id, (tagged fields byte skipped), throttle, error


def _read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


Owned = dict[uuid.UUID, tuple[int, ...]]


def encode_heartbeat(group: str, member_id: str, epoch: int, *, client_id: str = "loadgen",
                     rebalance_timeout_ms: int = -1, topics: Sequence[str] | None = None,
                     owned: Owned | None = None) -> bytearray:
    """A whole ConsumerGroupHeartbeat v1 request frame (size prefix included), correlation id 0
    (patched in place at offset 8 before sending)."""
    cid = client_id.encode()
    parts = [_HDR.pack(HB_API_KEY, HB_VERSION, 0), _I16.pack(len(cid)), cid, b"\x00",
             compact_nullable_string(group), compact_nullable_string(member_id), _I32.pack(epoch),
             b"\x00", b"\x00",  # instance id, rack id: null
             _I32.pack(rebalance_timeout_ms)]
    if topics is None:
        parts.append(b"\x00")
    else:
        parts.append(uvarint(len(topics) + 1))
        parts.extend(compact_nullable_string(t) for t in topics)
    parts.append(b"\x00")  # subscribed topic regex: null
    parts.append(b"\x00")  # server assignor: null
    if owned is None:
        parts.append(b"\x00")
    else:
        parts.append(uvarint(len(owned) + 1))
        for tid in sorted(owned):
            ps = owned[tid]
            parts.append(tid.bytes)
            parts.append(uvarint(len(ps) + 1))
            if ps:
                parts.append(struct.pack(f">{len(ps)}i", *ps))
            parts.append(b"\x00")
    parts.append(b"\x00")  # tagged fields
    body = b"".join(parts)
    return bytearray(_I32.pack(len(body)) + body)


@dataclass(slots=True)
class HeartbeatResponse:
    correlation_id: int
    error_code: int
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Owned | None


def parse_heartbeat_response(frame: bytes | bytearray | memoryview, pos: int = 0) -> HeartbeatResponse:
    """Parse a ConsumerGroupHeartbeat v1 response frame starting at ``pos`` (after its size)."""
    (corr,) = _I32.unpack_from(frame, pos)
    pos += 5  # correlation id, header tagged fields (none)
    pos += 4  # throttle
    (err,) = _I16.unpack_from(frame, pos)
    pos += 2
    n, pos = _read_uvarint(frame, pos)  # error message
    pos += max(n - 1, 0)
    n, pos = _read_uvarint(frame, pos)  # member id
    pos += max(n - 1, 0)
    epoch, interval = struct.unpack_from(">ii", frame, pos)
    pos += 8
    assignment: Owned | None = None
    if frame[pos] == 1:
        pos += 1
        n, pos = _read_uvarint(frame, pos)
        assignment = {}
        for _ in range(n - 1):
            tid = uuid.UUID(bytes=bytes(frame[pos:pos + 16]))
            pos += 16
            k, pos = _read_uvarint(frame, pos)
            k -= 1
            ps = struct.unpack_from(f">{k}i", frame, pos) if k > 0 else ()
            pos += 4 * max(k, 0)
            pos += 1  # tagged fields of the topic
            if ps:
                assignment[tid] = tuple(sorted(ps))
    return HeartbeatResponse(corr, err, epoch, interval, assignment)


@dataclass(slots=True)
class Member:
    index: int
    group: str
    topics: tuple[str, ...]
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: Owned = field(default_factory=dict)
    inflight: bool = False
    ack: bool = False  # the next heartbeat reports what it owns
    leaving: bool = False
    due: float = 0.0
    interval_s: float = 5.0
    steady_frame: bytearray | None = None


@dataclass(slots=True)
class _Conn:
    sock: socket.socket
    out: bytearray = field(default_factory=bytearray)
    inbuf: bytearray = field(default_factory=bytearray)
    #: correlation id -> (member index, sent at, whether it is a leave)
    pending: dict[int, tuple[int, float, bool]] = field(default_factory=dict)
    corr: int = 0
    writing: bool = False


@dataclass(slots=True)
class Stats:
    heartbeats: int = 0
    errors: dict[int, int] = field(default_factory=dict)
    rejoins: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, when recording


class LoadGenerator:
    """``members`` consumer members of ``group`` subscribed to ``topics``, spread round-robin
    over ``connections`` connections to ``host:port``."""

    def __init__(self, host: str, port: int, group: str, topics: Sequence[str], members: int,
                 connections: int = 4, rebalance_timeout_ms: int = 300_000,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.group = group
        self.topics = tuple(topics)
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.clock = clock
        self.members = [Member(i, group, self.topics) for i in range(members)]
        self.sel = selectors.DefaultSelector()
        self.conns: list[_Conn] = []
        for _ in range(max(1, connections)):
            s = socket.create_connection((host, port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            c = _Conn(s)
            self.conns.append(c)
            self.sel.register(s, selectors.EVENT_READ, c)
        self._heap: list[tuple[float, int, int]] = []  # (due, seq, member index)
        self._seq = 0
        self.stats = Stats()
        self.recording = False
        self.recording_since = 0.0  # latencies of requests sent from then on
        #: Members heartbeat again as soon as a response arrives (one request in flight per
        #: member) instead of at the interval: a join storm "as fast as they can".
        self.eager = False
        #: Called with (member, now) whenever a member's owned assignment or epoch changes.
        self.on_change: Callable[[Member, float], None] | None = None

    # ------------------------------------------------------------------ scheduling

    def schedule(self, m: Member, due: float) -> None:
        m.due = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, m.index))

    def start(self, stagger_s: float = 0.0) -> None:
        """Every member joins now (or spread evenly over ``stagger_s`` seconds)."""
        now = self.clock()
        n = len(self.members)
        for m in self.members:
            self.schedule(m, now + (stagger_s * m.index / n if stagger_s else 0.0))

    def restart(self, index: int) -> None:
        """The member leaves the group (epoch -1); a new member joins in its place once the
        leave is answered."""
        m = self.members[index]
        m.leaving = True
        self.schedule(m, self.clock())

    # ------------------------------------------------------------------ requests

    def _frame(self, m: Member) -> bytearray:
        if m.leaving:
            return encode_heartbeat(m.group, m.member_id, -1)
        if m.epoch == 0:
            return encode_heartbeat(m.group, m.member_id, 0, topics=m.topics, owned={},
                                    rebalance_timeout_ms=self.rebalance_timeout_ms)
        if m.ack:
            m.ack = False
            return encode_heartbeat(m.group, m.member_id, m.epoch, owned=m.owned)
        f = m.steady_frame
        if f is None:
            f = m.steady_frame = encode_heartbeat(m.group, m.member_id, m.epoch)
        return f

    def _send_due(self, now: float) -> None:
        heap = self._heap
        members = self.members
        conns = self.conns
        nconn = len(conns)
        pack = _I32.pack_into
        while heap and heap[0][0] <= now:
            due, _, i = heapq.heappop(heap)
            m = members[i]
            if m.inflight or due != m.due:
                continue  # superseded entry
            c = conns[i % nconn]
            f = self._frame(m)
            c.corr += 1
            pack(f, 8, c.corr)
            c.out += f
            c.pending[c.corr] = (i, now, m.leaving)
            m.inflight = True
        for c in conns:
            if c.out:
                self._flush(c)

    def _flush(self, c: _Conn) -> None:
        try:
            n = c.sock.send(c.out)
        except BlockingIOError:
            n = 0
        del c.out[:n]
        want = bool(c.out)
        if want != c.writing:
            c.writing = want
            self.sel.modify(c.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0), c)

    # ------------------------------------------------------------------ responses

    def _on_response(self, c: _Conn, r: HeartbeatResponse, now: float) -> None:
        i, sent, left = c.pending.pop(r.correlation_id)
        m = self.members[i]
        m.inflight = False
        st = self.stats
        st.heartbeats += 1
        if self.recording and sent >= self.recording_since:
            st.latencies.append(now - sent)
        if m.leaving and not left:  # restarted while a heartbeat was in flight: leave now
            self.schedule(m, now)
            return
        if left:
            m.leaving = False
            m.member_id = str(uuid.uuid4())
            m.epoch = 0
            m.owned = {}
            m.steady_frame = None
            if self.on_change:
                self.on_change(m, now)
            self.schedule(m, now)
            return
        if r.error_code != 0:
            st.errors[r.error_code] = st.errors.get(r.error_code, 0) + 1
            if r.error_code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
                st.rejoins += 1
                m.epoch = 0
                m.owned = {}
                m.steady_frame = None
                if self.on_change:
                    self.on_change(m, now)
            self.schedule(m, now + m.interval_s)
            return
        m.interval_s = r.heartbeat_interval_ms / 1000.0
        changed = False
        if r.member_epoch != m.epoch:
            m.epoch = r.member_epoch
            m.steady_frame = None
            changed = True
        if r.assignment is not None and r.assignment != m.owned:
            m.owned = r.assignment
            m.ack = True
            changed = True
        if changed and self.on_change:
            self.on_change(m, now)
        self.schedule(m, now if (m.ack or self.eager) else now + m.interval_s)

    def _read(self, c: _Conn, now: float) -> None:
        try:
            data = c.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not data:
            raise ConnectionError("the server closed a load generator connection")
        buf = c.inbuf
        buf += data
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            (size,) = _I32.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            self._on_response(c, parse_heartbeat_response(buf, pos + 4), now)
            pos += 4 + size
        del buf[:pos]

    # ------------------------------------------------------------------ loop

    def run_until(self, done: Callable[[float], bool], timeout_s: float) -> bool:
        """Drive the members until ``done(now)`` (checked after every batch of responses) or
        ``timeout_s`` passes; whether ``done`` became true."""
        deadline = self.clock() + timeout_s
        while True:
            now = self.clock()
            self._send_due(now)
            if done(now):
                return True
            if now >= deadline:
                return False
            wait = min(deadline - now, 0.05)
            if self._heap:
                wait = max(0.0, min(wait, self._heap[0][0] - now))
            for key, ev in self.sel.select(wait):
                c = key.data
                if ev & selectors.EVENT_WRITE:
                    self._flush(c)
                if ev & selectors.EVENT_READ:
                    self._read(c, self.clock())

    def run_for(self, seconds: float) -> None:
        self.run_until(lambda now: False, seconds)

    def close(self) -> None:
        for c in self.conns:
            self.sel.unregister(c.sock)
            c.sock.close()
        self.conns = []
        self.sel.close()

    # ------------------------------------------------------------------ views

    def in_flight(self) -> int:
        return sum(len(c.pending) for c in self.conns)


# ---------------------------------------------------------------------- ConsumerGroupDescribe


@dataclass(slots=True)
class DescribedMemberView:
    member_id: str
    member_epoch: int
    assignment: frozenset[tuple[uuid.UUID, int]]
    target: frozenset[tuple[uuid.UUID, int]]


@dataclass(slots=True)
class DescribedGroupView:
    error_code: int
    group_id: str
    group_epoch: int
    assignment_epoch: int
    members: list[DescribedMemberView]


def _string(buf: bytes, pos: int) -> tuple[str | None, int]:
    n, pos = _read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    return buf[pos:pos + n - 1].decode(), pos + n - 1


def _skip_string(buf: bytes, pos: int) -> int:
    n, pos = _read_uvarint(buf, pos)
    return pos + max(n - 1, 0)


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
    return pos


def _described_partitions(buf: bytes, pos: int) -> tuple[frozenset[tuple[uuid.UUID, int]], int]:
    out: set[tuple[uuid.UUID, int]] = set()
    n, pos = _read_uvarint(buf, pos)
    for _ in range(n - 1):
        tid = uuid.UUID(bytes=buf[pos:pos + 16])
        pos = _skip_string(buf, pos + 16)  # topic name
        k, pos = _read_uvarint(buf, pos)
        k -= 1
        if k > 0:
            out.update((tid, p) for p in struct.unpack_from(f">{k}i", buf, pos))
            pos += 4 * k
        pos = _skip_tags(buf, pos)
    return frozenset(out), _skip_tags(buf, pos)


def parse_describe_response(frame: bytes, version: int) -> tuple[int, list[DescribedGroupView]]:
    """A ConsumerGroupDescribe v0/v1 response frame (after its size): the correlation id and, per
    group, what ``bench scale``'s convergence check reads (epochs, each member's epoch,
    assignment and target as sets of (topic id, partition)).

    Read by hand, as the heartbeat responses are: kio's generic decoder took seconds for a group
    of 10,000 members, during which the members the load generator drives do not heartbeat."""
    buf = bytes(frame)
    (corr,) = _I32.unpack_from(buf, 0)
    pos = _skip_tags(buf, 4) + 4  # header tagged fields, throttle
    groups = []
    n, pos = _read_uvarint(buf, pos)
    for _ in range(n - 1):
        (err,) = _I16.unpack_from(buf, pos)
        pos = _skip_string(buf, pos + 2)  # error message
        gid, pos = _string(buf, pos)
        pos = _skip_string(buf, pos)  # state
        group_epoch, assignment_epoch = struct.unpack_from(">ii", buf, pos)
        pos = _skip_string(buf, pos + 8)  # assignor
        members = []
        k, pos = _read_uvarint(buf, pos)
        for _ in range(k - 1):
            mid, pos = _string(buf, pos)
            pos = _skip_string(buf, pos)  # instance id
            pos = _skip_string(buf, pos)  # rack id
            (epoch,) = _I32.unpack_from(buf, pos)
            pos = _skip_string(buf, pos + 4)  # client id
            pos = _skip_string(buf, pos)  # client host
            t, pos = _read_uvarint(buf, pos)
            for _ in range(t - 1):
                pos = _skip_string(buf, pos)
            pos = _skip_string(buf, pos)  # regex
            assignment, pos = _described_partitions(buf, pos)
            target, pos = _described_partitions(buf, pos)
            if version >= 1:
                pos += 1  # member type
            pos = _skip_tags(buf, pos)
            members.append(DescribedMemberView(mid or "", epoch, assignment, target))
        pos = _skip_tags(buf, pos + 4)  # authorized operations
        groups.append(DescribedGroupView(err, gid or "", group_epoch, assignment_epoch, members))
    return corr, groups
