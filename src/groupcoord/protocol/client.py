"""A small blocking Kafka protocol client over our own codec (for the CLI, tests and benchmarks).

It speaks to one broker: connect, ApiVersions (v3, falling back to v0 on UNSUPPORTED_VERSION as
librdkafka does), then requests whose version is negotiated per API as
``min(wanted, broker max)`` (the rule of KIP-35). Not a full client: no retries, no
reconnection, one request in flight (``send_many`` pipelines several; ``send_request`` /
``read_response`` split a request from its response, for the classic JoinGroup and SyncGroup
that the broker answers only once other members have joined).

The extension APIs of the specs (``docs/wire.md``: client-side assignment, the connect group
type, the connect config admin request) and InitProducerId have one method each, taking plain
values (nested structs as dicts, as :func:`~groupcoord.protocol.codec.build` accepts) and
returning the response entity.
"""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.protocol.codec import build, decode_response, encode_request, request_class
from groupcoord.protocol.describe_transactions import DescribedTransaction, read_describe_transactions
from groupcoord.protocol.errors import KafkaClientError
from groupcoord.protocol.sasl_client import authenticate
from groupcoord.protocol.versions import ApiKey

__all__ = ["KafkaClient", "KafkaClientError", "parse_bootstrap"]


def parse_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise KafkaClientError(f"bootstrap server must be HOST:PORT, got {bootstrap!r}")
    return host.strip("[]"), int(port)


class KafkaClient:
    def __init__(self, bootstrap: str, client_id: str = "groupcoord-cli",
                 timeout: float = 10.0, ssl_context: ssl.SSLContext | None = None,
                 sasl: tuple[str, str, str] | None = None) -> None:
        """``ssl_context``: connect with TLS (SSL, SASL_SSL listeners); ``sasl``: (mechanism,
        user, password) to authenticate with first (SaslHandshake v1 + SaslAuthenticate)."""
        host, port = parse_bootstrap(bootstrap)
        self.client_id = client_id
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ssl_context is not None:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
        except OSError as e:
            raise KafkaClientError(f"cannot connect to {host}:{port}: {e}") from None
        self._sock = sock
        self._corr = 0
        self._versions: dict[int, tuple[int, int]] | None = None
        if sasl is not None:
            try:
                authenticate(self, *sasl)
            except BaseException:
                self._sock.close()
                raise

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    # ---------------------------------------------------------------- raw I/O

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self._sock.recv(min(n, 1 << 20))
            if not chunk:
                raise KafkaClientError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exactly(4))
        return self._recv_exactly(size)

    def send_many(self, bodies: Sequence[Any]) -> list[Any]:
        """Pipeline ``bodies`` (kio request entities); the responses, in order."""
        sent = []
        data = bytearray()
        for body in bodies:
            self._corr += 1
            sent.append((self._corr, int(body.__api_key__), int(body.__version__)))
            data += encode_request(body, self._corr, self.client_id)
        self._sock.sendall(data)
        out = []
        for corr, key, version in sent:
            got, response = decode_response(key, version, self.recv_frame())
            if got != corr:
                raise KafkaClientError(f"correlation id {got} != {corr}")
            out.append(response)
        return out

    def send(self, body: Any) -> Any:
        return self.send_many([body])[0]

    def send_request(self, body: Any) -> tuple[int, int, int]:
        """Send one request without waiting: the handle to give :meth:`read_response`."""
        self._corr += 1
        self._sock.sendall(encode_request(body, self._corr, self.client_id))
        return self._corr, int(body.__api_key__), int(body.__version__)

    def read_response(self, handle: tuple[int, int, int]) -> Any:
        """The response to the request of ``handle`` (the next frame on the connection)."""
        corr, key, version = handle
        got, response = decode_response(key, version, self.recv_frame())
        if got != corr:
            raise KafkaClientError(f"correlation id {got} != {corr}")
        return response

    # ---------------------------------------------------------------- negotiated requests

    def api_versions(self) -> dict[int, tuple[int, int]]:
        if self._versions is None:
            cls = request_class(18, 3)
            assert cls is not None
            resp = self.send(build(cls, client_software_name="groupcoord",
                                   client_software_version="0.1.0"))
            if resp.error_code == ErrorCode.unsupported_version:
                v0 = request_class(18, 0)
                assert v0 is not None
                resp = self.send(build(v0))
            self._versions = {int(k.api_key): (int(k.min_version), int(k.max_version))
                              for k in resp.api_keys}
        return self._versions

    def version_for(self, api_key: int, wanted_max: int, wanted_min: int = 0) -> int:
        rng = self.api_versions().get(api_key)
        if rng is None or rng[1] < wanted_min or rng[0] > wanted_max:
            raise KafkaClientError(f"the broker does not support API {api_key} "
                                   f"v{wanted_min}..v{wanted_max} (it offers {rng})")
        return min(wanted_max, rng[1])

    def call(self, api_key: int, wanted_max: int, values: Mapping[str, Any] | None = None,
             wanted_min: int = 0, **kw: Any) -> Any:
        """Send API ``api_key`` at the best common version, built from plain values."""
        version = self.version_for(api_key, wanted_max, wanted_min)
        cls = request_class(api_key, version)
        if cls is None:
            raise KafkaClientError(f"no schema for API {api_key} v{version}")
        return self.send(build(cls, values, **kw))

    # ---------------------------------------------------------------- extension APIs

    def consumer_group_prepare_assignment(self, group_id: str, member_id: str,
                                          member_epoch: int) -> Any:
        return self.call(ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, group_id=group_id,
                         member_id=member_id, member_epoch=member_epoch)

    def consumer_group_install_assignment(self, group_id: str, member_id: str, member_epoch: int,
                                          group_epoch: int, members: Sequence[Mapping[str, Any]],
                                          error: int = 0) -> Any:
        """``members``: ``{"member_id", "topic_partitions": [{"topic_id", "partitions"}],
        "metadata_version", "metadata_bytes"}``."""
        return self.call(ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, 0, group_id=group_id,
                         member_id=member_id, member_epoch=member_epoch, group_epoch=group_epoch,
                         error=error, members=members)

    def connect_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                                **fields: Any) -> Any:
        """Other fields: instance_id, rebalance_timeout_ms (default -1), server_assignor,
        client_assignors (list of dicts), connectors_and_tasks (``{"connectors", "tasks":
        [{"connector", "task"}]}``), url; omitted ones are null ("unchanged")."""
        fields.setdefault("rebalance_timeout_ms", -1)
        return self.call(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, group_id=group_id,
                         member_id=member_id, member_epoch=member_epoch, **fields)

    def connect_group_prepare_assignment(self, group_id: str, member_id: str,
                                         member_epoch: int) -> Any:
        return self.call(ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT, 0, group_id=group_id,
                         member_id=member_id, member_epoch=member_epoch)

    def connect_group_install_assignment(self, group_id: str, member_id: str, member_epoch: int,
                                         group_epoch: int, members: Sequence[Mapping[str, Any]],
                                         error: int = 0,
                                         scheduled_rebalance_delay_ms: int = 0) -> Any:
        """``members``: ``{"member_id", "connectors_and_tasks", "error", "metadata_version",
        "metadata_bytes"}``."""
        return self.call(ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT, 0, group_id=group_id,
                         member_id=member_id, member_epoch=member_epoch, group_epoch=group_epoch,
                         error=error, members=members,
                         scheduled_rebalance_delay_ms=scheduled_rebalance_delay_ms)

    def connect_group_config(self, group_id: str, ops: Sequence[Mapping[str, Any]]) -> Any:
        """``ops``: ``{"op": 0 create | 1 update | 2 delete, "connector", "task_count"}``."""
        return self.call(ApiKey.CONNECT_GROUP_CONFIG, 0, group_id=group_id, ops=ops)

    def connect_group_describe(self, group_ids: Sequence[str]) -> Any:
        return self.call(ApiKey.CONNECT_GROUP_DESCRIBE, 0, group_ids=tuple(group_ids))

    def describe_transactions(self, transactional_ids: Sequence[str]) -> list[DescribedTransaction]:
        """DescribeTransactions v0 (KIP-664), read by ``protocol/describe_transactions.py``
        (kio cannot read the -1 start time of an id with no transaction)."""
        cls = request_class(ApiKey.DESCRIBE_TRANSACTIONS, 0)
        assert cls is not None
        corr, _, _ = self.send_request(build(cls, transactional_ids=tuple(transactional_ids)))
        try:
            got, found = read_describe_transactions(self.recv_frame())
        except ValueError as e:
            raise KafkaClientError(str(e)) from None
        if got != corr:
            raise KafkaClientError(f"correlation id {got} != {corr}")
        return found

    def init_producer_id(self, transactional_id: str | None = None) -> Any:
        return self.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id=transactional_id,
                         transaction_timeout=60_000)
