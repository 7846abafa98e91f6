"""The API versions groupcoord serves: the table ApiVersions advertises (KIP-35, KIP-511).

Exactly the APIs and versions the server implements, nothing more: a client picks
``min(its max, our max)`` per API, so advertising a version we do not handle breaks it. Every
version listed here has a kio schema, or for the extension APIs a schema file of ours (kio
0.6.5 carries upstream's 4.x message set, which starts Produce at v3, OffsetCommit at v2,
OffsetFetch/ListOffsets at v1, CreateTopics at v2, DeleteTopics and DescribeConfigs at v1: older
versions cannot be decoded and are not offered).

Ranges and why (docs/wire.md; NOTES.md "What real clients need from a broker"):

- ApiVersions 0-3: librdkafka sends v3 and falls back to v0 on UNSUPPORTED_VERSION.
- Metadata 0-13 (topic ids from v10; lookups by topic id from v12 for librdkafka's consumer).
- FindCoordinator 0-6 (batched keys from v4).
- Produce 3-12, Fetch 4-16 (topic ids from v13), ListOffsets 1-7: what librdkafka, kafka-python
  and aiokafka use to really consume. OffsetForLeaderEpoch 2-4: the position check clients make
  after a leader change (kafka-python stops without it once leader epochs move, which they do
  with several brokers).
- ConsumerGroupHeartbeat 0-1 and ConsumerGroupDescribe 0-1 (KIP-848; librdkafka needs v1).
- TxnOffsetCommit 0-4 (KIP-447's group metadata from v3; v5 is the transaction version 2
  flow of KIP-890, not offered).
- ShareGroupHeartbeat 1 and ShareGroupDescribe 1 (KIP-932, ``server/apis/share_groups.py``):
  v1 is what Kafka 4.1+ serves (v0 was 4.0's early access) and the only version librdkafka's
  share consumer sends (it fails with _UNSUPPORTED_FEATURE without it); kio has v1 only.
- OffsetCommit 2-10, OffsetFetch 1-10 (v8+ batched groups, v9 member id/epoch, v10 topics by
  id: Kafka 4.1+), OffsetDelete 0, ListGroups 0-5 (v5: group types, KIP-848), DeleteGroups 0-2.
  These are Kafka 4.3's versions of the group APIs (with JoinGroup 9, SyncGroup 5,
  DescribeGroups 6, ConsumerGroupHeartbeat 1, ConsumerGroupDescribe 1).
- DescribeConfigs 1-4 and IncrementalAlterConfigs 0-1 for the GROUP resource (and TOPIC / BROKER
  answered with defaults).
- CreateTopics 2-7, DeleteTopics 1-6, CreatePartitions 0-3, DeleteRecords 0-2 (Kafka 4.x's
  range; confluent-kafka's and kafka-python's admin clients, librdkafka's share consumer tests).
- Share partitions (KIP-932, ``server/apis/share_data.py``): ShareFetch and ShareAcknowledge 1-2
  (librdkafka 2.16 sends v1; v0 was the early-access version Kafka 4.1 removed),
  DescribeShareGroupOffsets 0-1, AlterShareGroupOffsets 0, DeleteShareGroupOffsets 0.
- DescribeAcls, CreateAcls, DeleteAcls 1-3 (``server/apis/acls.py``; kio has no v0,
  which only pre-2.0 clients send: librdkafka and kafka-python pick v1).

- Classic groups: JoinGroup 0-9 (MEMBER_ID_REQUIRED from v4, static membership
  from v5, KIP-814 SkipAssignment from v9), SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5 (batch
  from v3), DescribeGroups 0-5. Clients cap themselves below: librdkafka JoinGroup 5 / SyncGroup
  3 / Heartbeat 3 / LeaveGroup 1; kafka-python JoinGroup 7 / SyncGroup 5 / Heartbeat 4 /
  LeaveGroup 5; aiokafka picks among JoinGroup 0/1/2/5, SyncGroup 0/1/3, Heartbeat and
  LeaveGroup 0/1. DescribeGroups 0-6 (v6, KIP-1043: GROUP_ID_NOT_FOUND with a message for a
  group that does not exist or is not a classic group; below v6 such a group is "Dead").
- InitProducerId 0-5: kafka-python 3 and librdkafka make producers idempotent by default and
  ask for a producer id first; with a transactional id, the transaction coordinator's producer id
  and epoch (KIP-98, KIP-360, KIP-588). v6 (KIP-939 two-phase commit) is not offered.
- Transactions (``server/apis/transactions.py``), the transaction version 1 flow every client
  here uses: AddPartitionsToTxn 0-3 (v4+ is the brokers' verify-only form), AddOffsetsToTxn 0-3,
  EndTxn 0-3 (v4 adds TRANSACTION_ABORTABLE, v5 the epoch bump of transaction version 2),
  DescribeTransactions 0 and ListTransactions 0-2 (KIP-664, KIP-994).

- Security (``server/security/``): SaslHandshake 0-1 (v0: the tokens follow as bare frames),
  SaslAuthenticate 0-2 (every version kio has), DescribeUserScramCredentials 0 and
  AlterUserScramCredentials 0 (KIP-554).

- Extension APIs (ours), API keys 1000-1099, schemas in ``protocol/schemas/*.json``
  (``protocol/extensions.py``; ``docs/wire.md``): ConsumerGroupPrepareAssignment 1000,
  ConsumerGroupInstallAssignment 1001, ConnectGroupHeartbeat 1002, ConnectGroupPrepareAssignment
  1003, ConnectGroupInstallAssignment 1004, ConnectGroupConfig 1005, ConnectGroupDescribe 1006,
  each v0 (the specs define v0 only); and GroupcoordControl 1010, ours: the control plane for
  tests (``server/control.py``, ``docs/testing.md``). Their versions here must equal the schema files'
  ``validVersions`` (tested).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["API_VERSIONS", "FEATURES", "ApiKey", "is_supported"]


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    OFFSET_FOR_LEADER_EPOCH = 23
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    WRITE_TXN_MARKERS = 27
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92
    # security (server/security/)
    SASL_HANDSHAKE = 17
    SASL_AUTHENTICATE = 36
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    # extension APIs of the specs (protocol/schemas/*.json)
    CONSUMER_GROUP_PREPARE_ASSIGNMENT = 1000
    CONSUMER_GROUP_INSTALL_ASSIGNMENT = 1001
    CONNECT_GROUP_HEARTBEAT = 1002
    CONNECT_GROUP_PREPARE_ASSIGNMENT = 1003
    CONNECT_GROUP_INSTALL_ASSIGNMENT = 1004
    CONNECT_GROUP_CONFIG = 1005
    CONNECT_GROUP_DESCRIBE = 1006
    # the control plane for tests (docs/testing.md)
    GROUPCOORD_CONTROL = 1010


#: api key -> (min version, max version), inclusive.
API_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 12),
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.METADATA: (0, 13),
    ApiKey.OFFSET_COMMIT: (2, 10),
    ApiKey.OFFSET_FETCH: (1, 10),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.WRITE_TXN_MARKERS: (1, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT: (0, 0),
    ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT: (0, 0),
    ApiKey.CONNECT_GROUP_HEARTBEAT: (0, 0),
    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: (0, 0),
    ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: (0, 0),
    ApiKey.CONNECT_GROUP_CONFIG: (0, 0),
    ApiKey.CONNECT_GROUP_DESCRIBE: (0, 0),
    ApiKey.GROUPCOORD_CONTROL: (0, 0),
}


#: Features ApiVersions (v3+) advertises, name -> (min, max) supported level; each is finalized
#: at its max. ``transaction.version`` (KIP-890): level 1 is the transaction protocol of KIP-98
#: with the clients' AddPartitionsToTxn and EndTxn keeping the epoch (level 1 differs from 0
#: only in Kafka's own log format, nothing a client sees); level 2, an epoch bump per transaction
#: with partitions added by Produce, is not served, so a Java producer (which uses it only when
#: the finalized level is at least 2) keeps the flow librdkafka, kafka-python and aiokafka use.
#: The minimum is 1, not 0: clients before Kafka 3.9 refuse a supported range starting at 0
#: (KIP-1022).
FEATURES: dict[str, tuple[int, int]] = {
    "transaction.version": (1, 1),
}


def is_supported(api_key: int, api_version: int) -> bool:
    r = API_VERSIONS.get(api_key)
    return r is not None and r[0] <= api_version <= r[1]


def api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API_{api_key}"
