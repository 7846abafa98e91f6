"""The client side of SASL for :class:`~groupcoord.protocol.client.KafkaClient` (tests,
benchmarks, CLI): SaslHandshake v1 then SaslAuthenticate, mechanisms PLAIN and SCRAM-SHA-256 /
SCRAM-SHA-512 (``scramp``'s ``ScramClient``, RFC 5802 / RFC 7677, which also checks the
server's signature)."""

from __future__ import annotations

from typing import Any, Protocol

from groupcoord.protocol.errors import KafkaClientError, error_name
from groupcoord.protocol.versions import ApiKey

__all__ = ["RequestCaller", "authenticate"]


class RequestCaller(Protocol):
    """What authentication needs of a client: one request at the best common version, built
    from plain values (:meth:`KafkaClient.call <groupcoord.protocol.client.KafkaClient.call>`)."""

    def call(self, api_key: int, wanted_max: int, values: Any = None, wanted_min: int = 0,
             **kw: Any) -> Any: ...


def _step(client: RequestCaller, token: bytes) -> bytes:
    r = client.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=token)
    if int(r.error_code):
        raise KafkaClientError(f"authentication failed: {error_name(int(r.error_code))}: "
                               f"{r.error_message or ''}")
    return bytes(r.auth_bytes)


def authenticate(client: RequestCaller, mechanism: str, user: str, password: str) -> None:
    """Authenticate ``client``'s connection; KafkaClientError if the broker refuses."""
    mechanism = mechanism.upper()
    r = client.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism)
    if int(r.error_code):
        raise KafkaClientError(f"SASL handshake failed: {error_name(int(r.error_code))} "
                               f"(the broker offers {', '.join(r.mechanisms) or 'nothing'})")
    if mechanism == "PLAIN":
        _step(client, b"\x00" + user.encode() + b"\x00" + password.encode())
        return
    import scramp

    c = scramp.ScramClient([mechanism], user, password)
    server_first = _step(client, c.get_client_first().encode())
    try:
        c.set_server_first(server_first.decode())
        server_final = _step(client, c.get_client_final().encode())
        c.set_server_final(server_final.decode())
    except scramp.ScramException as e:
        raise KafkaClientError(f"SCRAM: {e}") from None
