"""Authorization of the transaction APIs (docs/acls.md): WRITE on the TRANSACTIONAL_ID for the
producer's requests, DESCRIBE for FindCoordinator and the admin APIs, WRITE on each TOPIC for
AddPartitionsToTxn, READ on the GROUP for AddOffsetsToTxn; a refused request writes nothing.

The server runs with ``super.users=User:admin`` and ``allow.everyone.if.no.acl.found=false``
(``acl_support``); ACLs are made with CreateAcls as the admin.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groupcoord.protocol.client import KafkaClient
from groupcoord.protocol.versions import ApiKey
from groupcoord.server.security.acls import AclOperation, PatternType, ResourceType

from .acl_support import ThreadServer, thread_server
from .test_server_acls import E, create_topic, grant

Op = AclOperation
RT = ResourceType


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    with thread_server(tmp_path_factory.mktemp("txn-acl-server") / "data") as s:
        yield s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def init(c: KafkaClient, tid: str) -> tuple[int, int, int]:
    r = c.call(ApiKey.INIT_PRODUCER_ID, 5, transactional_id=tid, transaction_timeout=60_000)
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def add(c: KafkaClient, tid: str, pid: int, epoch: int, topic: str) -> list[int]:
    r = c.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, v3_and_below_transactional_id=tid,
               v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
               v3_and_below_topics=[{"name": topic, "partitions": [0, 1]}])
    return [int(p.partition_error_code) for t in r.results_by_topic_v3_and_below
            for p in t.results_by_partition]


def test_transactional_id_acls_guard_every_transaction_api(srv: ThreadServer) -> None:
    tid = _name("app")
    topic = _name("out")
    group = _name("g")
    with srv.client("admin") as admin, srv.client("bob") as bob:
        create_topic(admin, topic)
        r = bob.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
        assert r.coordinators[0].error_code == E.transactional_id_authorization_failed
        assert init(bob, tid)[0] == E.transactional_id_authorization_failed
        r = bob.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[tid])
        assert r.transaction_states[0].error_code == E.transactional_id_authorization_failed
        # the admin starts one; bob, without ACLs, can neither touch nor see it
        code, pid, epoch = init(admin, tid)
        assert code == E.none
        assert add(bob, tid, pid, epoch, topic) == [E.transactional_id_authorization_failed] * 2
        r = bob.call(ApiKey.END_TXN, 3, transactional_id=tid, producer_id=pid,
                     producer_epoch=epoch, committed=True)
        assert r.error_code == E.transactional_id_authorization_failed
        r = bob.call(ApiKey.LIST_TRANSACTIONS, 0, state_filters=(), producer_id_filters=())
        assert tid not in {t.transactional_id for t in r.transaction_states}
        # WRITE on the id (which implies DESCRIBE), not yet on the topic nor READ on the group
        grant(admin, RT.TRANSACTIONAL_ID, "app-", "User:bob", Op.WRITE,
              pattern=PatternType.PREFIXED)
        r = bob.call(ApiKey.FIND_COORDINATOR, 4, key_type=1, coordinator_keys=[tid])
        assert r.coordinators[0].error_code == E.none
        code, pid, epoch = init(bob, tid)
        assert code == E.none
        assert add(bob, tid, pid, epoch, topic) == [E.topic_authorization_failed] * 2
        r = bob.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=tid, producer_id=pid,
                     producer_epoch=epoch, group_id=group)
        assert r.error_code == E.group_authorization_failed
        r = bob.call(ApiKey.LIST_TRANSACTIONS, 0, state_filters=(), producer_id_filters=())
        assert [t.transaction_state for t in r.transaction_states
                if t.transactional_id == tid] == ["Empty"]  # nothing was added
        grant(admin, RT.TOPIC, topic, "User:bob", Op.WRITE)
        grant(admin, RT.GROUP, group, "User:bob", Op.READ)
        assert add(bob, tid, pid, epoch, topic) == [E.none, E.none]
        r = bob.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id=tid, producer_id=pid,
                     producer_epoch=epoch, group_id=group)
        assert r.error_code == E.none
        r = bob.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, transactional_ids=[tid])
        (d,) = r.transaction_states
        assert (d.error_code, d.transaction_state, [t.topic for t in d.topics]) == (
            E.none, "Ongoing", [topic])
