"""Kafka error codes and the exception the core raises to answer a request with one.

Error codes come from upstream's list (``kio.schema.errors.ErrorCode``). The core raises
:class:`CoordinatorError` carrying a code and a message; the wire edge turns it into a response.
The protocol's own client (``protocol/client.py``, ``protocol/sasl_client.py``) raises
:class:`KafkaClientError`.
Extension codes for APIs that upstream never shipped (the specs' client-side assignment flow)
live above upstream's range, in :data:`EXTENSION_CODES`.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["INVALID_ASSIGNMENT", "CoordinatorError", "ErrorCode", "KafkaClientError", "error_name"]

#: InstallAssignment was given an assignment that is not valid for the metadata it was computed
#: from (KIP-848 "ConsumerGroupInstallAssignment API"). Not an upstream code: upstream never
#: shipped client-side assignment on the new protocol.
INVALID_ASSIGNMENT = 1001

EXTENSION_CODES: dict[int, str] = {INVALID_ASSIGNMENT: "INVALID_ASSIGNMENT"}


def error_name(code: int) -> str:
    """Upper-case Kafka name of an error code (``FENCED_MEMBER_EPOCH``)."""
    if code in EXTENSION_CODES:
        return EXTENSION_CODES[code]
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_{code}"


class CoordinatorError(Exception):
    """A request failed with a Kafka error code; ``message`` goes into ErrorMessage."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(f"{error_name(code)}: {message}" if message else error_name(code))
        self.code = int(code)
        self.message = message

    @property
    def name(self) -> str:
        return error_name(self.code)


class KafkaClientError(Exception):
    """A request of the protocol's client failed: no connection, a broken or unexpected
    response, a refused authentication."""
