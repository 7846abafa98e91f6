"""Share sessions (KIP-932 "Share sessions"; Kafka's ``ShareSessionCache``).

A share session is the set of partitions a member fetches from one broker, keyed by (group id,
member id, broker node id) (a client keeps one session per broker it fetches from, each with its
own epoch; with ``--brokers N`` the brokers of this process share one cache), with an epoch:

- ShareSessionEpoch 0 opens a session with the request's partitions (a full request). A
  session the member already had is replaced, and what it had acquired through it is released
  (librdkafka's mock broker does the same; a member re-opens after an error).
- An epoch > 0 must be the session's next epoch (each request increments it, wrapping from
  2^31 - 1 to 1); the request's partitions are added to the session and ``ForgottenTopicsData``
  removed from it (an incremental request). No session: SHARE_SESSION_NOT_FOUND; another epoch:
  INVALID_SHARE_SESSION_EPOCH, and nothing changes: the session, its epoch and the member's
  acquisition locks stay, as in Kafka 4.x (``SharePartitionManager.newContext`` rejects the
  request before touching the session), so a stray or replayed request cannot release what
  the member holds; the member's next request with the right epoch carries on.
- ShareSessionEpoch -1 is the final request: its acknowledgements are applied, nothing is
  fetched, and the session closes, releasing what the member still holds on its partitions.
- The connection of a session's latest request closes (a client killed, a network failure):
  the session closes and its records are released, as Kafka 4.1+ does through its
  connection-disconnect listener on the share session cache; a client that reconnects gets
  SHARE_SESSION_NOT_FOUND and opens a new session. (Kafka 4.0 kept such records until their
  acquisition locks expired.)

The cache holds at most ``group.share.max.share.sessions`` sessions (Kafka's default 2000); a
new session beyond that gets SHARE_SESSION_LIMIT_REACHED, however long the open ones have been
idle. Kafka 4.1+'s ``ShareSessionCache.maybeCreateSession`` evicts nothing (sessions end with
their connection, their final request or their member's removal); Kafka 4.0 evicted the least
recently used session idle for over a minute, which let a broker hold more live sessions than
the cap: the idle session's client kept its connection and found its session gone. The group membership is not
checked here: Kafka's share-partition leader does not either (the group coordinator fences
members through the heartbeat).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from uuid import UUID

from groupcoord.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
DEFAULT_MAX_SESSIONS = 2000

TopicPartition = tuple[UUID, int]


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    #: The epoch the next request must carry.
    epoch: int
    partitions: dict[TopicPartition, None] = field(default_factory=dict)
    last_used_ms: int = 0
    #: The connection of its latest request (:meth:`ShareSessionCache.connection_closed`).
    connection: int = 0
    broker: int = 0


class ShareSessionError(Exception):
    def __init__(self, code: int, message: str, dropped: ShareSession | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        #: A session the error dropped (its locks are to be released).
        self.dropped = dropped


class ShareSessionCache:
    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self.sessions: OrderedDict[tuple[str, str, int], ShareSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self.sessions)

    def open(self, group_id: str, member_id: str, partitions: list[TopicPartition],
             now_ms: int, connection: int = 0,
             broker: int = 0) -> tuple[ShareSession, list[ShareSession]]:
        """Epoch 0: a new session; (the session, the session it replaced, if any)."""
        key = (group_id, member_id, broker)
        gone: list[ShareSession] = []
        old = self.sessions.pop(key, None)
        if old is not None:
            gone.append(old)
        if len(self.sessions) >= self.max_sessions:
            if old is not None:
                self.sessions[key] = old
            raise ShareSessionError(ErrorCode.share_session_limit_reached,
                                    f"{self.max_sessions} share sessions are open")
        session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH),
                               dict.fromkeys(partitions), now_ms, connection, broker)
        self.sessions[key] = session
        return session, gone

    def use(self, group_id: str, member_id: str, epoch: int, now_ms: int,
            connection: int = 0, broker: int = 0) -> ShareSession:
        """An epoch > 0 or the final epoch: the session, its epoch checked and advanced."""
        key = (group_id, member_id, broker)
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.share_session_not_found,
                                    f"no share session for member {member_id}")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            # rejected, the session untouched (Kafka: InvalidShareSessionEpochException)
            raise ShareSessionError(ErrorCode.invalid_share_session_epoch,
                                    f"share session epoch {epoch}, expected {session.epoch}")
        self.sessions.move_to_end(key)
        session.last_used_ms = now_ms
        session.connection = connection
        if epoch != FINAL_EPOCH:
            session.epoch = next_epoch(session.epoch)
        return session

    def connection_closed(self, connection: int) -> list[ShareSession]:
        """The sessions whose latest request came on ``connection``, closed."""
        gone = [k for k, s in self.sessions.items() if s.connection == connection]
        return [self.sessions.pop(k) for k in gone]

    def close(self, group_id: str, member_id: str, broker: int = 0) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id, broker), None)

    def close_member(self, group_id: str, member_id: str) -> list[ShareSession]:
        """Every broker's session of the member, closed."""
        keys = [k for k in self.sessions if k[0] == group_id and k[1] == member_id]
        return [self.sessions.pop(k) for k in keys]

    def of_member(self, group_id: str, member_id: str, broker: int = 0) -> ShareSession | None:
        return self.sessions.get((group_id, member_id, broker))
