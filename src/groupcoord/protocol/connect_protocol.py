"""The Connect embedded protocol: worker metadata and assignments as values and bytes (KIP-415).

Pure and shared by both sides: the Connect workers (``client/connect/``) and the coordinator,
which reads and writes Connect worker metadata and assignments of classic workers during an
online migration between classic Connect groups and connect groups (the Connect draft "Migration
To the New Protocol", ``coordinator/modern/connect/migration.py``). The values (``ConnectorTaskId``,
``ConnectorsAndTasks``, ``ConnectAssignment``, ``WorkerMetadata``) are the nouns of KIP-415
"Connect protocol's format"; the configuration a leader assigns from is
``client/connect/config_snapshot.py``.

- ``ConnectorTaskId`` is a ``NamedTuple`` rather than a dataclass: the assignors hash and compare
  tens of thousands of them per round, and tuple hashing/ordering run in C. Its order is
  upstream's ``ConnectorTaskId.compareTo`` (connector name, then task number).
- A task id of ``-1`` on the wire denotes the connector itself (upstream ``CONNECTOR_TASK``); in
  these values connectors and tasks are kept apart, as upstream's ``Assignment`` keeps them.

Implements KIP-415 "Public Interfaces / Connect protocol's format"
with the upstream facts of ``specs/README.md`` and the schemas of upstream's
``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``, byte for byte:

- protocol type ``connect``; protocol names ``default`` (v0, eager), ``compatible`` (v1) and
  ``sessioned`` (v2, the v1 layout; KIP-507 added it for session keys);
- Kafka primitives, big-endian: int16/int32/int64; STRING = int16 length + UTF-8;
  NULLABLE_BYTES = int32 length, -1 = null; ARRAY = int32 count (nullable arrays: -1 = null);
- worker metadata: ``version:int16 url:STRING config_offset:int64`` and from v1
  ``allocation:NULLABLE_BYTES`` (a serialized assignment, the worker's current allocation);
- assignment: ``version:int16 error:int16 leader:STRING leader_url:STRING config_offset:int64
  assignment:[connector:STRING tasks:[int32]]`` and from v1 ``revoked:[same]`` (nullable) and
  ``delay:int32``; task id -1 denotes the connector itself.

Version handling follows upstream's readers: a negative version is rejected; any version >= 0 is
read by the fields this module knows, trailing bytes (fields of a newer version) are ignored. The
v1 layout tolerates missing optional fields, as upstream's ``TOLERATE_MISSING_FIELDS_WITH_DEFAULTS``
schemas do: when the input ends exactly before ``allocation`` / ``assignment`` / ``revoked`` /
``delay`` they read as null / null / null / 0; a field cut in the middle is an error.

Choices:

- Which layout a payload is read with follows its own version field (0: the v0 fields only; >= 1:
  the v1 fields). Upstream picks the reader from the negotiated protocol instead; the two agree on
  every payload an upstream worker or leader writes.
- Entries are written in canonical order: one entry per connector name, sorted, holding -1 first
  (when the connector itself is assigned; connectors are de-duplicated, as upstream does) and then
  the connector's task numbers, sorted. Upstream iterates a ``HashSet`` of connectors, so its entry
  order is unspecified; ours makes equal assignments equal bytes. Decoding keeps the wire order, so
  the sorted tuples the assignors produce survive a round trip unchanged.
- Stricter than upstream in one place: invalid UTF-8 in a string is an error (Java substitutes
  U+FFFD). As upstream: a negative string length or a negative count of a non-nullable array is an
  error; any negative length of nullable bytes or a nullable array reads as null; a count larger
  than the bytes left is an error before anything is allocated.
- Every malformed input raises :class:`ConnectProtocolError` (a ``ValueError``) with a message
  naming the field; encoding out-of-range values raises it too.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

__all__ = [
    "CONFIG_MISMATCH",
    "CONNECTOR_TASK",
    "CONNECT_PROTOCOL_TYPE",
    "CONNECT_PROTOCOL_V0",
    "CONNECT_PROTOCOL_V1",
    "CONNECT_PROTOCOL_V2",
    "NO_ERROR",
    "ConnectAssignment",
    "ConnectProtocolCompatibility",
    "ConnectProtocolError",
    "ConnectorTaskId",
    "ConnectorsAndTasks",
    "WorkerMetadata",
    "decode_assignment",
    "decode_worker_metadata",
    "default_config_group",
    "encode_assignment",
    "encode_worker_metadata",
    "join_protocols",
]

#: Assignment error codes (upstream ``ConnectProtocol.Assignment``): no error, and the leader's
#: configuration is behind the highest config offset a member reported (members read the config
#: topic to the end and rejoin).
NO_ERROR = 0
CONFIG_MISMATCH = 1

#: The task number that denotes "the connector itself" in a wire assignment.
CONNECTOR_TASK = -1


def default_config_group(group_id: str) -> str:
    """The connect group holding the connectors configuration of classic group ``group_id``
    (groupcoord's convention, after Connect's ``config.storage.topic``; not part of KIP-415's
    format): the classic Connect workers read it (``client/connect/async_classic_worker.py``)
    and ``groupcoord connectors`` names it in its hint (``server/cli.py``)."""
    return f"{group_id}-configs"


class ConnectorTaskId(NamedTuple):
    """One task of one connector (upstream ``ConnectorTaskId``); ordered by connector, then task."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(slots=True, frozen=True)
class ConnectorsAndTasks:
    """A set of connectors and tasks, e.g. what one worker runs. Kept sorted and without duplicates
    when built through :meth:`of`."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()) -> ConnectorsAndTasks:
        """Sorted, de-duplicated connectors and tasks."""
        return cls(tuple(sorted(set(connectors))), tuple(sorted(set(tasks))))

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def size(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __str__(self) -> str:
        items = [*self.connectors, *(str(t) for t in self.tasks)]
        return "[" + ", ".join(items) + "]"


EMPTY = ConnectorsAndTasks()


@dataclass(slots=True, frozen=True)
class ConnectAssignment:
    """What the leader sends one worker in SyncGroup (KIP-415 "Assignment", upstream
    ``ExtendedAssignment``; with ``version`` 0 the eager ``ConnectProtocol.Assignment``).

    Under the cooperative protocols (version >= 1) ``connectors``/``tasks`` are the items *newly*
    assigned in this round, ``revoked_*`` the items to stop, and ``delay`` the milliseconds after
    which the worker rejoins (0: no scheduled rebalance). Under the eager protocol the assignment is
    the worker's complete set and there is no revocation or delay. In a worker's metadata the same
    structure describes its complete current allocation (the last assignment it received, with
    ``connectors``/``tasks`` replaced by everything it runs).
    """

    version: int
    error: int
    leader: str
    leader_url: str
    config_offset: int
    connectors: tuple[str, ...] = ()
    tasks: tuple[ConnectorTaskId, ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[ConnectorTaskId, ...] = ()
    delay: int = 0

    @property
    def failed(self) -> bool:
        return self.error != NO_ERROR

    @property
    def assigned(self) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors, self.tasks)

    @property
    def revoked(self) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.revoked_connectors, self.revoked_tasks)


@dataclass(slots=True, frozen=True)
class WorkerMetadata:
    """A worker's JoinGroup metadata (KIP-415 "Subscription", upstream ``ExtendedWorkerState``):
    protocol version, REST url, the config-topic offset it has read to, and from v1 its current
    allocation (None: it has never received an assignment)."""

    version: int
    url: str
    config_offset: int
    allocation: ConnectAssignment | None = None

    @property
    def current(self) -> ConnectorsAndTasks:
        """The connectors and tasks the worker reports as running (empty without an allocation)."""
        if self.allocation is None:
            return EMPTY
        return ConnectorsAndTasks(self.allocation.connectors, self.allocation.tasks)


#: JoinGroup protocol type of Connect workers.
CONNECT_PROTOCOL_TYPE = "connect"

CONNECT_PROTOCOL_V0 = 0
CONNECT_PROTOCOL_V1 = 1
CONNECT_PROTOCOL_V2 = 2


class ConnectProtocolCompatibility(Enum):
    """The ``connect.protocol`` modes (upstream ``ConnectProtocolCompatibility``): the JoinGroup
    protocol name and the Connect protocol version each one stands for."""

    EAGER = ("eager", "default", CONNECT_PROTOCOL_V0)
    COMPATIBLE = ("compatible", "compatible", CONNECT_PROTOCOL_V1)
    SESSIONED = ("sessioned", "sessioned", CONNECT_PROTOCOL_V2)

    def __init__(self, config: str, protocol: str, version: int) -> None:
        self.config = config
        self.protocol = protocol
        self.version = version

    @classmethod
    def from_config(cls, value: str) -> ConnectProtocolCompatibility:
        """The mode named by a ``connect.protocol`` value (case-insensitive)."""
        for mode in cls:
            if mode.config == value.strip().lower():
                return mode
        raise ValueError(f"unknown connect.protocol {value!r} (eager, compatible or sessioned)")

    @classmethod
    def from_protocol(cls, name: str) -> ConnectProtocolCompatibility:
        """The mode of a JoinGroup protocol name (``default``, ``compatible``, ``sessioned``)."""
        for mode in cls:
            if mode.protocol == name:
                return mode
        raise ValueError(f"unknown Connect protocol name {name!r}")

    @classmethod
    def from_version(cls, version: int) -> ConnectProtocolCompatibility:
        for mode in cls:
            if mode.version == version:
                return mode
        raise ValueError(f"unknown Connect protocol version {version}")


class ConnectProtocolError(ValueError):
    """Bytes that are not a valid Connect metadata/assignment, or a value that cannot be encoded."""


# ---------------------------------------------------------------------------------------------
# primitives
# ---------------------------------------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

_I32_ARRAYS: dict[int, struct.Struct] = {}

_INT16_MIN, _INT16_MAX = -(1 << 15), (1 << 15) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class _Reader:
    """Reads Kafka primitives from ``data``; every shortfall is a :class:`ConnectProtocolError`."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.pos = 0
        self.what = what

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _need(self, n: int, field: str) -> None:
        if self.remaining() < n:
            raise ConnectProtocolError(
                f"{self.what}: truncated reading {field}: need {n} bytes at offset {self.pos}, "
                f"{self.remaining()} left"
            )

    def int16(self, field: str) -> int:
        self._need(2, field)
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(v)

    def int32(self, field: str) -> int:
        self._need(4, field)
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(v)

    def int64(self, field: str) -> int:
        self._need(8, field)
        (v,) = _I64.unpack_from(self.data, self.pos)
        self.pos += 8
        return int(v)

    def int32s(self, n: int) -> tuple[int, ...]:
        """``n`` int32 values (the caller has checked that ``4 * n`` bytes remain)."""
        fmt = _I32_ARRAYS.get(n)
        if fmt is None:
            fmt = struct.Struct(f">{n}i")
            if n <= 64:
                _I32_ARRAYS[n] = fmt
        values: tuple[int, ...] = fmt.unpack_from(self.data, self.pos)
        self.pos += 4 * n
        return values

    def string(self, field: str) -> str:
        n = self.int16(field + " length")
        if n < 0:
            raise ConnectProtocolError(f"{self.what}: {field} has negative length {n}")
        self._need(n, field)
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConnectProtocolError(f"{self.what}: {field} is not valid UTF-8 ({e.reason})") from None

    def nullable_bytes(self, field: str) -> bytes | None:
        n = self.int32(field + " length")
        if n < 0:
            return None
        self._need(n, field)
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return raw

    def array_count(self, field: str, *, nullable: bool, min_item_size: int) -> int | None:
        n = self.int32(field + " count")
        if n < 0:
            if nullable:
                return None
            raise ConnectProtocolError(f"{self.what}: {field} has negative count {n}")
        # Upstream's check (size > remaining); with the element size it also bounds the work.
        if n * min_item_size > self.remaining():
            raise ConnectProtocolError(
                f"{self.what}: {field} claims {n} elements, only {self.remaining()} bytes left"
            )
        return n


def _check(value: int, lo: int, hi: int, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ConnectProtocolError(f"{field} {value!r} out of range [{lo}, {hi}]")
    return value


def _put_string(out: bytearray, value: str, field: str) -> None:
    if not isinstance(value, str):
        raise ConnectProtocolError(f"{field} must be a string, not {type(value).__name__}")
    raw = value.encode("utf-8")
    if len(raw) > _INT16_MAX:
        raise ConnectProtocolError(f"{field} is {len(raw)} bytes long, more than {_INT16_MAX}")
    out += _I16.pack(len(raw))
    out += raw


# ---------------------------------------------------------------------------------------------
# connector assignments: [connector:STRING tasks:[int32]]
# ---------------------------------------------------------------------------------------------


def _group(connectors: Iterable[str], tasks: Iterable[ConnectorTaskId]) -> dict[str, list[int]]:
    """Connector -> task numbers, -1 for the connector itself; canonical order (module docstring)."""
    entries: dict[str, list[int]] = {c: [] for c in connectors}
    for t in tasks:
        entries.setdefault(t.connector, []).append(t.task)
    own = set(connectors)
    return {c: ([CONNECTOR_TASK] if c in own else []) + sorted(entries[c]) for c in sorted(entries)}


def _put_connector_assignments(out: bytearray, entries: dict[str, list[int]], field: str) -> None:
    out += _I32.pack(len(entries))
    for connector, task_ids in entries.items():
        _put_string(out, connector, f"{field} connector")
        out += _I32.pack(len(task_ids))
        for task in task_ids:
            out += _I32.pack(_check(task, _INT32_MIN, _INT32_MAX, f"{field} task id"))


def _read_connector_assignments(
    r: _Reader, field: str, *, nullable: bool
) -> tuple[list[str], list[ConnectorTaskId]] | None:
    """The entries of an assignment. The loop is written out with local variables: a worker's
    allocation holds one entry per connector it runs tasks of, often hundreds."""
    count = r.array_count(field, nullable=nullable, min_item_size=6)
    if count is None:
        return None
    connectors: list[str] = []
    tasks: list[ConnectorTaskId] = []
    data, pos, end = r.data, r.pos, len(r.data)
    names: dict[bytes, str] = {}  # equal names decoded once, one str object each
    unpack16, unpack32 = _I16.unpack_from, _I32.unpack_from
    task_id = ConnectorTaskId
    for _ in range(count):
        r.pos = pos
        if end - pos < 2:
            r._need(2, f"{field} connector length")
        (n,) = unpack16(data, pos)
        pos += 2
        if n < 0:
            raise ConnectProtocolError(f"{r.what}: {field} connector has negative length {n}")
        if end - pos < n + 4:
            r.pos = pos
            r._need(n, f"{field} connector")
            r.pos = pos + n
            r._need(4, f"{field} tasks count")
        raw = bytes(data[pos:pos + n])
        pos += n
        connector = names.get(raw)
        if connector is None:
            try:
                connector = names[raw] = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConnectProtocolError(
                    f"{r.what}: {field} connector is not valid UTF-8 ({e.reason})") from None
        (k,) = unpack32(data, pos)
        pos += 4
        if k < 0:
            raise ConnectProtocolError(f"{r.what}: {field} tasks of {connector!r} has negative count {k}")
        if 4 * k > end - pos:
            raise ConnectProtocolError(
                f"{r.what}: {field} tasks of {connector!r} claims {k} elements, only {end - pos} bytes left")
        if k == 1:
            values: tuple[int, ...] = unpack32(data, pos)
        else:
            r.pos = pos
            values = r.int32s(k)
        pos += 4 * k
        for task in values:
            if task == CONNECTOR_TASK:
                connectors.append(connector)
            else:
                tasks.append(task_id(connector, task))
    r.pos = pos
    return connectors, tasks


# ---------------------------------------------------------------------------------------------
# assignments
# ---------------------------------------------------------------------------------------------


def encode_assignment(assignment: ConnectAssignment) -> bytes:
    """The bytes of ``assignment`` in the layout of its ``version`` (0: no revoked, no delay)."""
    a = assignment
    version = _check(a.version, 0, _INT16_MAX, "assignment version")
    out = bytearray()
    out += _I16.pack(version)
    out += _I16.pack(_check(a.error, _INT16_MIN, _INT16_MAX, "assignment error"))
    _put_string(out, a.leader, "assignment leader")
    _put_string(out, a.leader_url, "assignment leader url")
    out += _I64.pack(_check(a.config_offset, _INT64_MIN, _INT64_MAX, "assignment config offset"))
    _put_connector_assignments(out, _group(a.connectors, a.tasks), "assignment")
    if version >= CONNECT_PROTOCOL_V1:
        _put_connector_assignments(out, _group(a.revoked_connectors, a.revoked_tasks), "revoked")
        out += _I32.pack(_check(a.delay, _INT32_MIN, _INT32_MAX, "assignment delay"))
    elif a.revoked_connectors or a.revoked_tasks or a.delay:
        raise ConnectProtocolError("a version 0 assignment cannot carry revocations or a delay")
    return bytes(out)


def decode_assignment(data: bytes | bytearray | memoryview) -> ConnectAssignment:
    """Parse an assignment (SyncGroup member assignment, or a worker's embedded allocation)."""
    r = _Reader(data, "connect assignment")
    version = r.int16("version")
    if version < 0:
        raise ConnectProtocolError(f"connect assignment: unsupported version {version}")
    error = r.int16("error")
    leader = r.string("leader")
    leader_url = r.string("leader url")
    offset = r.int64("config offset")
    revoked: tuple[list[str], list[ConnectorTaskId]] | None = None
    delay = 0
    if version == CONNECT_PROTOCOL_V0:
        assigned = _read_connector_assignments(r, "assignment", nullable=False)
    else:
        assigned = _read_connector_assignments(r, "assignment", nullable=True) if r.remaining() else None
        if r.remaining():
            revoked = _read_connector_assignments(r, "revoked", nullable=True)
        if r.remaining():
            delay = r.int32("delay")
    connectors, tasks = assigned if assigned is not None else ([], [])
    revoked_connectors, revoked_tasks = revoked if revoked is not None else ([], [])
    return ConnectAssignment(
        version=version,
        error=error,
        leader=leader,
        leader_url=leader_url,
        config_offset=offset,
        connectors=tuple(connectors),
        tasks=tuple(tasks),
        revoked_connectors=tuple(revoked_connectors),
        revoked_tasks=tuple(revoked_tasks),
        delay=delay,
    )


# ---------------------------------------------------------------------------------------------
# worker metadata
# ---------------------------------------------------------------------------------------------


def encode_worker_metadata(metadata: WorkerMetadata) -> bytes:
    """The JoinGroup metadata bytes of a worker, in the layout of ``metadata.version``.

    From v1 the allocation is written as nullable bytes (null when ``allocation`` is None); the
    embedded assignment carries its own version (upstream writes the metadata's version there).
    """
    version = _check(metadata.version, 0, _INT16_MAX, "metadata version")
    out = bytearray()
    out += _I16.pack(version)
    _put_string(out, metadata.url, "metadata url")
    out += _I64.pack(_check(metadata.config_offset, _INT64_MIN, _INT64_MAX, "metadata config offset"))
    if version >= CONNECT_PROTOCOL_V1:
        if metadata.allocation is None:
            out += _I32.pack(-1)
        else:
            raw = encode_assignment(metadata.allocation)
            out += _I32.pack(len(raw))
            out += raw
    return bytes(out)


def decode_worker_metadata(data: bytes | bytearray | memoryview) -> WorkerMetadata:
    """Parse a worker's JoinGroup metadata (any version >= 0)."""
    r = _Reader(data, "connect worker metadata")
    version = r.int16("version")
    if version < 0:
        raise ConnectProtocolError(f"connect worker metadata: unsupported version {version}")
    url = r.string("url")
    offset = r.int64("config offset")
    allocation: ConnectAssignment | None = None
    if version >= CONNECT_PROTOCOL_V1 and r.remaining():
        raw = r.nullable_bytes("allocation")
        if raw is not None:
            try:
                allocation = decode_assignment(raw)
            except ConnectProtocolError as e:
                raise ConnectProtocolError(f"connect worker metadata: allocation: {e}") from None
    return WorkerMetadata(version=version, url=url, config_offset=offset, allocation=allocation)


def join_protocols(
    url: str,
    config_offset: int,
    allocation: ConnectAssignment | None,
    mode: ConnectProtocolCompatibility,
) -> list[tuple[str, bytes]]:
    """The (protocol name, metadata) pairs a worker offers in JoinGroup, most preferred first
    (upstream ``metadataRequest``): sessioned -> [sessioned, compatible, default]; compatible ->
    [compatible, default]; eager -> [default]. The allocation is embedded with the version of the
    protocol it is offered under."""
    offered: Sequence[ConnectProtocolCompatibility] = {
        ConnectProtocolCompatibility.SESSIONED: (
            ConnectProtocolCompatibility.SESSIONED,
            ConnectProtocolCompatibility.COMPATIBLE,
            ConnectProtocolCompatibility.EAGER,
        ),
        ConnectProtocolCompatibility.COMPATIBLE: (
            ConnectProtocolCompatibility.COMPATIBLE,
            ConnectProtocolCompatibility.EAGER,
        ),
        ConnectProtocolCompatibility.EAGER: (ConnectProtocolCompatibility.EAGER,),
    }[mode]
    result = []
    for m in offered:
        embedded = None
        if allocation is not None and m.version >= CONNECT_PROTOCOL_V1:
            embedded = _with_version(allocation, m.version)
        meta = WorkerMetadata(m.version, url, config_offset, embedded)
        result.append((m.protocol, encode_worker_metadata(meta)))
    return result


def _with_version(a: ConnectAssignment, version: int) -> ConnectAssignment:
    return ConnectAssignment(
        version, a.error, a.leader, a.leader_url, a.config_offset, a.connectors, a.tasks,
        a.revoked_connectors, a.revoked_tasks, a.delay,
    )
