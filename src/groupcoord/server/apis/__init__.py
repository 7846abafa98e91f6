"""The Kafka API edge, one module per API family (``dispatcher.py`` lists them): kio entities
in, kio entities out. :class:`KafkaApis` is the dispatcher the server calls."""

from groupcoord.server.apis.dispatcher import FAMILIES, KafkaApis
from groupcoord.server.apis.family import ApiFamily, BrokerState, Handler, RequestContext
from groupcoord.server.apis.groups import GROUP_API_ACLS
from groupcoord.server.apis.versions import (
    api_version_entries,
    error_response_entity,
    unsupported_version_response,
)

__all__ = [
    "FAMILIES",
    "GROUP_API_ACLS",
    "ApiFamily",
    "BrokerState",
    "Handler",
    "KafkaApis",
    "RequestContext",
    "api_version_entries",
    "error_response_entity",
    "unsupported_version_response",
]
