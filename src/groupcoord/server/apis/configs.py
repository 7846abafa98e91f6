"""DescribeConfigs and IncrementalAlterConfigs of GROUP (the coordinator's group configs,
KIP-848 "Group Configurations"), TOPIC (the :class:`TopicRegistry`) and BROKER (the static
broker configs) resources.

Resource type GROUP is 16 in the KIP-848 text and 32 in Apache Kafka's ``ConfigResource.Type``
(16 is CLIENT_METRICS there); both are served as GROUP and answered with the type the client
sent.
"""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator import messages as m
from groupcoord.coordinator.config import STRING_GROUP_CONFIGS
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.apis.family import NODE_ID, RT, ApiFamily, BrokerState, E, Op, RequestContext
from groupcoord.server.security.acls import CLUSTER_NAME, AclOperation

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP_SPEC = 16
RESOURCE_GROUP_UPSTREAM = 32
GROUP_RESOURCE_TYPES = (RESOURCE_GROUP_SPEC, RESOURCE_GROUP_UPSTREAM)

# ConfigSource (DescribeConfigs v1+) and ConfigType (v3+) values of upstream's ConfigResource.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_GROUP = 8
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5

TOPIC_DEFAULTS: dict[str, tuple[str, int]] = {
    "cleanup.policy": ("delete", TYPE_STRING),
    "compression.type": ("producer", TYPE_STRING),
    "message.timestamp.type": ("CreateTime", TYPE_STRING),
    "retention.ms": ("-1", TYPE_LONG),
    "max.message.bytes": ("1048588", TYPE_INT),
}


class ConfigApis(ApiFamily):
    """DescribeConfigs, IncrementalAlterConfigs."""

    def __init__(self, broker: BrokerState) -> None:
        super().__init__(broker)
        self.broker_configs = broker.broker_configs
        self.handlers = {
            ApiKey.DESCRIBE_CONFIGS: self.describe_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
        }

    def _config_refusal(self, ctx: RequestContext, rtype: int, name: str,
                        op: AclOperation) -> dict[str, Any] | None:
        """The error of a config resource the principal may not describe / alter (``op`` on
        the GROUP, TOPIC, or the CLUSTER for a BROKER), or None."""
        if rtype in GROUP_RESOURCE_TYPES:
            target, code = (RT.GROUP, name), E.group_authorization_failed
        elif rtype == RESOURCE_TOPIC:
            target, code = (RT.TOPIC, name), E.topic_authorization_failed
        elif rtype == RESOURCE_BROKER:
            target, code = (RT.CLUSTER, CLUSTER_NAME), E.cluster_authorization_failed
        else:
            return None
        if self._allowed(ctx, op, *target):
            return None
        return {"error_code": code, "error_message": f"Not authorized: {op.name} is required on "
                                                     f"the {target[0].name}."}

    def describe_configs(self, body: Any, ctx: RequestContext) -> Any:
        results = []
        for res in body.resources:
            rtype = int(res.resource_type)
            name = res.resource_name
            keys = None if res.configuration_keys is None else list(res.configuration_keys)
            out: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                                   "resource_name": name, "configs": ()}
            refused = self._config_refusal(ctx, rtype, name, Op.DESCRIBE_CONFIGS)
            if refused is not None:
                out.update(refused)
            elif rtype in GROUP_RESOURCE_TYPES:
                r: m.DescribeGroupConfigsResponse = self.runtime.handle_group(
                    name, m.DescribeGroupConfigsRequest(name, tuple(keys) if keys else None))
                out.update(error_code=r.error_code, error_message=r.error_message, configs=[
                    _config_entry(c.name, c.value, SOURCE_DEFAULT if c.is_default else SOURCE_GROUP,
                                  c.is_default,
                                  TYPE_STRING if c.name in STRING_GROUP_CONFIGS else TYPE_INT)
                    for c in r.configs])
            elif rtype == RESOURCE_TOPIC:
                topic = self.registry.get(name)
                if topic is None:
                    out.update(error_code=E.unknown_topic_or_partition,
                               error_message=f"Topic '{name}' does not exist.")
                else:
                    entries = {k: _config_entry(k, val, SOURCE_DEFAULT, True, typ)
                               for k, (val, typ) in TOPIC_DEFAULTS.items()}
                    for k, val in topic.configs.items():
                        entries[k] = _config_entry(k, val, SOURCE_DYNAMIC_TOPIC, False, TYPE_STRING)
                    out["configs"] = [entries[k] for k in sorted(entries) if not keys or k in keys]
            elif rtype == RESOURCE_BROKER:
                if name not in ("", str(NODE_ID)):
                    out.update(error_code=E.invalid_request,
                               error_message=f"Unexpected broker id {name!r}: this is broker 0.")
                else:
                    out["configs"] = [
                        _config_entry(k, val, SOURCE_STATIC_BROKER, False, TYPE_STRING)
                        for k, val in sorted(self.broker_configs.items()) if not keys or k in keys]
            else:
                out.update(error_code=E.invalid_request,
                           error_message=f"Unsupported resource type {rtype}.")
            results.append(out)
        return self._resp(ctx, throttle_time=0, results=results)

    def incremental_alter_configs(self, body: Any, ctx: RequestContext) -> Any:
        ops = {0: "set", 1: "delete", 2: "append", 3: "subtract"}
        responses = []
        for res in body.resources:
            rtype = int(res.resource_type)
            name = res.resource_name
            out: dict[str, Any] = {"error_code": 0, "error_message": None, "resource_type": rtype,
                                   "resource_name": name}
            refused = self._config_refusal(ctx, rtype, name, Op.ALTER_CONFIGS)
            if refused is not None:
                out.update(refused)
            elif rtype in GROUP_RESOURCE_TYPES:
                req = m.AlterGroupConfigsRequest(name, tuple(
                    m.AlterGroupConfigOp(c.name, ops.get(int(c.config_operation), "?"), c.value)
                    for c in res.configs), bool(body.validate_only))
                r: m.AlterGroupConfigsResponse = self.runtime.handle_group(name, req)
                out.update(error_code=r.error_code, error_message=r.error_message)
            elif rtype == RESOURCE_TOPIC:
                topic = self.registry.get(name)
                if topic is None:
                    out.update(error_code=E.unknown_topic_or_partition,
                               error_message=f"Topic '{name}' does not exist.")
                else:
                    bad = [c.name for c in res.configs if int(c.config_operation) not in (0, 1)]
                    if bad:
                        out.update(error_code=E.invalid_request,
                                   error_message=f"Only SET and DELETE are supported: {bad}")
                    elif not body.validate_only:
                        for c in res.configs:
                            if int(c.config_operation) == 0 and c.value is not None:
                                topic.configs[c.name] = c.value
                            else:
                                topic.configs.pop(c.name, None)
                        self.registry.save()
            else:
                out.update(error_code=E.invalid_request,
                           error_message=f"Altering resource type {rtype} is not supported.")
            responses.append(out)
        return self._resp(ctx, throttle_time=0, responses=responses)


def created_topic_configs(configs: dict[str, str]) -> list[dict[str, Any]]:
    """The configs of a new topic in CreateTopics' response (v5+): the defaults, overridden
    by the request's (``DescribeConfigs``' sources), sorted by name."""
    entries = {k: (val, SOURCE_DEFAULT) for k, (val, _typ) in TOPIC_DEFAULTS.items()}
    entries.update((k, (val, SOURCE_DYNAMIC_TOPIC)) for k, val in configs.items())
    return [{"name": k, "value": entries[k][0], "read_only": False,
             "config_source": entries[k][1], "is_sensitive": False} for k in sorted(entries)]


def _config_entry(name: str, value: str | None, source: int, is_default: bool,
                  config_type: int) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": False, "config_source": source,
            "is_default": is_default, "is_sensitive": False, "synonyms": (),
            "config_type": config_type, "documentation": None}
