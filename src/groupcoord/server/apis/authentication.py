"""Handlers of the security APIs once a connection is served: SaslHandshake and
SaslAuthenticate (ILLEGAL_SASL_STATE: on a listener without SASL, or after authentication, as
Kafka's ``KafkaApis`` answers them), DescribeUserScramCredentials and AlterUserScramCredentials
(KIP-554), over the :class:`CredentialStore`.

Kafka's rules for the SCRAM APIs:

- Describe: users null or empty describes every user with credentials; a user without any is
  RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE; each credential is (mechanism type,
  iterations), never the salt or keys.
- Alter: one result per user named. An empty user name is UNACCEPTABLE_CREDENTIAL; a mechanism
  other than SCRAM-SHA-256 (1) / SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM; iterations outside
  4096..16384 UNACCEPTABLE_CREDENTIAL; the same (user, mechanism) twice in one request
  DUPLICATE_RESOURCE; deleting a credential that does not exist RESOURCE_NOT_FOUND. A user with
  any error has none of its alterations applied; the others are applied together (one write).
  An upsertion carries the salted password; the server keeps StoredKey and ServerKey only.

Which principals may call them: DESCRIBE / ALTER on the CLUSTER, as Kafka's ``KafkaApis``.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import ApiFamily, BrokerState, Op, RequestContext
from groupcoord.server.security.credentials import (
    MECHANISM_BY_TYPE,
    MECHANISMS,
    CredentialError,
    CredentialStore,
    ScramCredential,
    check_iterations,
    credential_from_salted_password,
)

__all__ = ["AuthenticationApis"]

E = ErrorCode


class AuthenticationApis(ApiFamily):
    """SaslHandshake, SaslAuthenticate (after authentication), the SCRAM credential APIs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.store: CredentialStore = broker.credentials
        self.handlers = {
            ApiKey.SASL_HANDSHAKE: self.sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.sasl_authenticate,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self._describe_scram,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self._alter_scram,
        }

    def _describe_scram(self, body: Any, ctx: RequestContext) -> Any:
        """DescribeUserScramCredentials needs DESCRIBE on the CLUSTER (Kafka's ``KafkaApis``)."""
        if not self._cluster_allowed(ctx, Op.DESCRIBE):
            return self._resp(ctx, throttle_time=0, error_code=E.cluster_authorization_failed,
                              error_message="Not authorized to describe SCRAM credentials "
                                            "(DESCRIBE on the CLUSTER).", results=())
        return self.describe_user_scram_credentials(body, ctx)

    def _alter_scram(self, body: Any, ctx: RequestContext) -> Any:
        """AlterUserScramCredentials needs ALTER on the CLUSTER (Kafka's ``KafkaApis``); refused,
        every user named gets CLUSTER_AUTHORIZATION_FAILED and nothing changes."""
        if not self._cluster_allowed(ctx, Op.ALTER):
            users = dict.fromkeys(str(x.name) for x in (*body.deletions, *body.upsertions))
            return self._resp(ctx, throttle_time=0, results=[
                {"user": u, "error_code": E.cluster_authorization_failed,
                 "error_message": "Not authorized to alter SCRAM credentials (ALTER on the "
                                  "CLUSTER)."} for u in users])
        return self.alter_user_scram_credentials(body, ctx)

    def sasl_handshake(self, body: Any, ctx: Any) -> Any:
        return self._resp(ctx, error_code=E.illegal_sasl_state, mechanisms=())

    def sasl_authenticate(self, body: Any, ctx: Any) -> Any:
        return self._resp(ctx, error_code=E.illegal_sasl_state,
                          error_message="SaslAuthenticate request received after successful "
                                        "authentication", auth_bytes=b"")

    def describe_user_scram_credentials(self, body: Any, ctx: Any) -> Any:
        try:
            known = self.store.users()
        except CredentialError as e:  # the file was damaged under a running server
            return self._resp(ctx, throttle_time=0, error_code=E.unknown_server_error,
                              error_message=str(e), results=())
        names = [u.name for u in body.users] if body.users else list(known)
        results = []
        for name in dict.fromkeys(names):
            if names.count(name) > 1:
                results.append({"user": name, "error_code": E.duplicate_resource,
                                "error_message": "Cannot describe SCRAM credentials for the same "
                                                 "user twice in a single request",
                                "credential_infos": ()})
            elif name not in known:
                results.append({"user": name, "error_code": E.resource_not_found,
                                "error_message": "Attempt to describe a user credential that "
                                                 "does not exist", "credential_infos": ()})
            else:
                results.append({"user": name, "error_code": 0, "error_message": None,
                                "credential_infos": [{"mechanism": MECHANISMS[m][1], "iterations": i}
                                                     for m, i in known[name].items()]})
        return self._resp(ctx, throttle_time=0, error_code=0, error_message=None, results=results)

    def alter_user_scram_credentials(self, body: Any, ctx: Any) -> Any:
        try:
            known = self.store.users()
        except CredentialError as e:  # the file was damaged under a running server
            users = dict.fromkeys(str(x.name) for x in (*body.deletions, *body.upsertions))
            return self._resp(ctx, throttle_time=0, results=[
                {"user": u, "error_code": E.unknown_server_error, "error_message": str(e)}
                for u in users])
        errors: dict[str, tuple[ErrorCode, str]] = {}
        order: list[str] = []
        seen: set[tuple[str, int]] = set()
        upserts: list[tuple[str, str, ScramCredential]] = []
        deletes: list[tuple[str, str]] = []

        def fail(user: str, code: ErrorCode, msg: str) -> None:
            errors.setdefault(user, (code, msg))

        items = [(d, False) for d in body.deletions] + [(u, True) for u in body.upsertions]
        for item, upsert in items:
            user, mtype = str(item.name), int(item.mechanism)
            if user not in order:
                order.append(user)
            if not user:
                fail(user, E.unacceptable_credential, "Username must not be empty")
                continue
            mech = MECHANISM_BY_TYPE.get(mtype)
            if mech is None:
                fail(user, E.unsupported_sasl_mechanism, f"Unknown SCRAM mechanism {mtype}")
                continue
            if (user, mtype) in seen:
                fail(user, E.duplicate_resource,
                     "A user credential cannot be altered twice in the same request")
                continue
            seen.add((user, mtype))
            if not upsert:
                if mech not in known.get(user, {}):
                    fail(user, E.resource_not_found,
                         "Attempt to delete a user credential that does not exist")
                else:
                    deletes.append((user, mech))
                continue
            try:
                check_iterations(int(item.iterations))
                cred = credential_from_salted_password(mech, bytes(item.salt),
                                                       bytes(item.salted_password),
                                                       int(item.iterations))
            except CredentialError as e:
                fail(user, E.unacceptable_credential, str(e)[:1].upper() + str(e)[1:])
                continue
            upserts.append((user, mech, cred))
        upserts = [u for u in upserts if u[0] not in errors]
        deletes = [d for d in deletes if d[0] not in errors]
        if upserts or deletes:
            try:
                self.store.apply(upserts, deletes)
            except (CredentialError, OSError) as e:
                for user in {u[0] for u in upserts} | {d[0] for d in deletes}:
                    fail(user, E.unknown_server_error, f"cannot store the credentials: {e}")
        results = [{"user": u, "error_code": errors[u][0] if u in errors else 0,
                    "error_message": errors[u][1] if u in errors else None} for u in order]
        return self._resp(ctx, throttle_time=0, results=results)
