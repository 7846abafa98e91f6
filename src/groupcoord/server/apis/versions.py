"""ApiVersions: the table of ``protocol/versions.py`` (ApiVersions responses use header v0) with
its features (v3+: ``transaction.version``, KIP-584 / KIP-890), and the error responses the
connection answers for a version or key it cannot serve."""

from __future__ import annotations

from typing import Any

from groupcoord.protocol.codec import build, response_class
from groupcoord.protocol.versions import API_VERSIONS, FEATURES, ApiKey
from groupcoord.server.apis.family import ApiFamily, BrokerState, E, RequestContext

#: The epoch of the finalized features (KIP-584): they never change while a server runs.
FINALIZED_FEATURES_EPOCH = 1


class VersionsApis(ApiFamily):
    """ApiVersions."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.handlers = {ApiKey.API_VERSIONS: self.api_versions}

    def api_versions(self, body: Any, ctx: RequestContext) -> Any:
        return self._resp(ctx, error_code=0, api_keys=api_version_entries(), throttle_time=0,
                          supported_features=[
                              {"name": n, "min_version": lo, "max_version": hi}
                              for n, (lo, hi) in sorted(FEATURES.items())],
                          finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
                          finalized_features=[
                              {"name": n, "min_version_level": hi, "max_version_level": hi}
                              for n, (_, hi) in sorted(FEATURES.items())])


def api_version_entries() -> list[dict[str, int]]:
    return [{"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted(API_VERSIONS.items())]


def unsupported_version_response(api_key: int, version: int) -> Any | None:
    """A response of (key, version) saying UNSUPPORTED_VERSION, if its schema is known and has a
    top-level error code; None otherwise."""
    return error_response_entity(api_key, version, E.unsupported_version)


def error_response_entity(api_key: int, version: int, code: int) -> Any | None:
    cls = response_class(api_key, version)
    if cls is None or "error_code" not in cls.__dataclass_fields__:
        return None
    values: dict[str, Any] = {"error_code": code}
    if api_key == ApiKey.API_VERSIONS:
        values["api_keys"] = api_version_entries()
    return build(cls, values)
