"""A sans-IO classic-protocol consumer member: JoinGroup / SyncGroup / Heartbeat / LeaveGroup.

The classic (pre-KIP-848) consumer group protocol as the Java consumer's ``ConsumerCoordinator``
runs it, protocol type ``consumer``, in the style of :mod:`groupcoord.client.consumer`: no IO,
no clock, no randomness of its own. A driver passes ``now_ms`` into every call, sends what
:meth:`ClassicConsumerMember.poll_request` returns, delivers answers to
:meth:`ClassicConsumerMember.on_response` (or reports a lost one with
:meth:`ClassicConsumerMember.on_request_failed`) and wakes the member at
:meth:`ClassicConsumerMember.next_deadline`. One group request is in flight at a time (the Java
client does not heartbeat while a JoinGroup or SyncGroup is pending either); offset commits are
built with :meth:`ClassicConsumerMember.commit_request` and sent on the side.

What is implemented:

- **Joining**: JoinGroup v9 with one protocol (the assignor: ``range`` for the eager variant,
  or ``roundrobin`` when asked for, ``cooperative-sticky`` for the cooperative one) whose
  metadata is a ConsumerProtocolSubscription v3 (``protocol/consumer_protocol.py``): topics,
  owned partitions and the member's generation (KIP-792, as the Java consumer sends it),
  encoded by topic name. A dynamic member's first
  JoinGroup carries no member id and is answered MEMBER_ID_REQUIRED with one; the member
  rejoins with it at once. A static
  member (``group.instance.id``) joins with its instance id and gets its member id directly.
- **Leader**: the JoinGroup response of the leader lists every member's metadata; the leader
  computes the assignment and sends it with its SyncGroup. Eager: the ``range`` assignor of
  ``coordinator/assignors/range.py`` over the subscriptions, or ``roundrobin`` (one deal across
  every topic). Cooperative (KIP-429): the owned
  partitions claimed in the subscriptions are validated (the claim of the highest generation
  wins, KIP-792; equal claims of one generation void each other), the sticky target is computed
  by ``coordinator/assignors/uniform.py`` from the valid claims, and a partition that the target
  moves away from its current owner is *withheld* from its new owner in this round; the owner
  revokes it and rejoins. Should no rebalance start within a heartbeat interval (a static
  owner restarted meanwhile and claims nothing), the leader rejoins itself; if that follow-up
  round withholds partitions again, the next one waits a rebalance timeout more, so that the
  coordinator can first remove an owner that is gone (a crashed static member never syncs;
  rebalances in quick succession would keep it a member). KIP-814: a
  static leader told ``skip_assignment`` computes nothing, but (unlike the Java consumer) asks
  for one more rebalance a heartbeat interval later: it cannot know what changed while it was
  away, and nobody else would notice (metadata changes are the leader's to act on). The
  leader reads the topics of the group from the metadata the driver gives it
  (:meth:`ClassicConsumerMember.update_metadata`).
- **Rebalance protocols**: *eager* revokes everything (listener ``on_partitions_revoked``)
  before each JoinGroup and gets its whole assignment in SyncGroup; *cooperative* keeps its
  partitions while rejoining, revokes after SyncGroup only what the new assignment lacks, and
  then rejoins at once so the second round hands the revoked partitions to their new owners.
- **Missed generations**: a cooperative member whose JoinGroup answers a generation more than
  one past its own treats its partitions as lost before joining it: the leader of the
  generation it missed did not see them as owned and may have given them away. A generation
  joined but never synced (no assignment received) is dropped for the one of the last
  assignment when the coordinator may have changed meanwhile (a JoinGroup or SyncGroup
  unanswered or answered with a coordinator error): the coordinator persists a generation
  only with the leader's assignment, so one that took over may give the same number to a
  generation formed without this member (unlike the Java consumer, which keeps it).
- **Assignments of other topics**: an assignment naming a topic the member does not
  subscribe to (a static member back with a new subscription) is not installed; the member
  rejoins, as the Java consumer's ``checkAssignmentMatchedSubscription``.
- **Heartbeat**: every ``heartbeat_interval_ms`` when stable; REBALANCE_IN_PROGRESS -> rejoin;
  ILLEGAL_GENERATION -> partitions lost (``on_partitions_lost``), generation reset, rejoin with
  the same member id; UNKNOWN_MEMBER_ID -> lost, member id and generation reset, rejoin;
  FENCED_INSTANCE_ID and the other non-retriable errors stop the member (state FATAL), as the
  Java consumer fails. Coordinator errors (loading, not coordinator, not available) and lost
  requests retry after an exponential backoff; a lost JoinGroup / SyncGroup restarts the join
  (``request_timeout_ms`` plus the rebalance timeout for those two, as the Java client waits).
- **Rejoin triggers**: a subscription change; a metadata change the member must react to (a
  regex subscription now matching other topics; for the leader, a change in the partition
  counts of the topics the group subscribes to, as the Java leader's metadata snapshot).
- **Leaving**: :meth:`ClassicConsumerMember.leave` revokes everything (the listener runs, and may
  defer as in ``client/consumer.py``), then a dynamic member sends LeaveGroup v5; a static
  member just stops (its membership stays until its session expires or it restarts under the
  same instance id), unless ``permanent`` (then LeaveGroup names its instance id, as KIP-1092's
  close with LEAVE_GROUP does).
- **Offset commits** carry the member id, the generation id and the instance id (the builders
  are :class:`groupcoord.client.offset_commits.OffsetCommits`, shared with the KIP-848 member).

The request plumbing (settings, the one request in flight with its correlation id, the four
requests) is :class:`groupcoord.client.classic_member.ClassicMember`, shared with the classic
Connect worker.

Not here: the asyncio driver over the wire (``client/driver.py`` drives the KIP-848 member),
``max.poll.interval.ms``, OffsetFetch, rack-aware assignment, user data of the Java sticky
assignors (their wire format is not reproduced: the generation of KIP-792 carries what the
cooperative leader needs), protocols other than the two above in one JoinGroup.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from uuid import UUID

from groupcoord.client.classic_member import NO_GENERATION, ClassicMember, ClassicRequest
from groupcoord.client.consumer import (
    DEFER,
    EMPTY,
    RETRIABLE_ERRORS,
    ClientMemberState,
    Partitions,
    RebalanceListener,
)
from groupcoord.client.offset_commits import OffsetCommits
from groupcoord.coordinator.assignors.base import GroupSpec, MemberSubscription
from groupcoord.coordinator.assignors.range import RangeAssignor
from groupcoord.coordinator.assignors.uniform import UniformAssignor
from groupcoord.coordinator.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.classic.model import CONSUMER_PROTOCOL_TYPE
from groupcoord.coordinator.modern.subscription import regex_matches
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import ErrorCode

_E = ErrorCode

EAGER = "eager"
COOPERATIVE = "cooperative"
#: The assignor (JoinGroup protocol name) of each rebalance protocol.
ASSIGNOR_OF = {EAGER: "range", COOPERATIVE: "cooperative-sticky"}

#: ``{topic name: partition ids}``: the assignment the leader hands each member.
NamedAssignment = dict[str, list[int]]
#: A leader-side assignor: (members' decoded subscriptions, topics by name) -> assignments.
LeaderAssignor = Callable[[Mapping[str, Any], Mapping[str, TopicMetadata]],
                          dict[str, NamedAssignment]]


class Phase(enum.Enum):
    """What the member does next while it is in a rebalance (state JOINING)."""

    JOIN = "join"
    SYNC = "sync"


# ----------------------------------------------------------------------------- leader assignors


def _topic_ids(topics: Mapping[str, TopicMetadata], names: Iterable[str]) -> frozenset[UUID]:
    return frozenset(topics[n].topic_id for n in names if n in topics)


def _named(assignment: Mapping[UUID, frozenset[int]],
           by_id: Mapping[UUID, TopicMetadata]) -> NamedAssignment:
    return {by_id[t].name: sorted(ps) for t, ps in assignment.items() if ps and t in by_id}


def eager_range_assignment(subscriptions: Mapping[str, Any],
                           topics: Mapping[str, TopicMetadata]) -> dict[str, NamedAssignment]:
    """The eager leader: ``range`` over the subscribed topics (owned partitions ignored)."""
    spec = GroupSpec({mid: MemberSubscription(mid, _topic_ids(topics, s.topics))
                      for mid, s in subscriptions.items()},
                     {t.topic_id: t for t in topics.values()})
    by_id = {t.topic_id: t for t in topics.values()}
    out = RangeAssignor().assign(spec)
    return {mid: _named(out.get(mid, {}), by_id) for mid in subscriptions}


def eager_roundrobin_assignment(subscriptions: Mapping[str, Any],
                                topics: Mapping[str, TopicMetadata]) -> dict[str, NamedAssignment]:
    """The eager leader with ``roundrobin`` (the Java client's ``RoundRobinAssignor``, its
    behaviour as in Kafka's sources): every subscribed partition, topics in name order and each
    topic's partitions in order, dealt in turn to the members in member-id order, each partition
    to the next member that subscribes to its topic; owned partitions ignored. Unlike ``range``,
    which assigns each topic on its own (its first members get one partition more of every
    topic), the deal runs across topics, so members with the same subscription differ by one
    partition at most. (The Java assignor orders static members by ``group.instance.id``; the
    leader here sees member ids only, as for ``range``.)"""
    members = sorted(subscriptions)
    out: dict[str, NamedAssignment] = {m: {} for m in members}
    subscribed = {m: frozenset(subscriptions[m].topics) for m in members}
    turn = 0
    for name in sorted(frozenset().union(*subscribed.values())):
        meta = topics.get(name)
        if meta is None:
            continue
        for p in range(meta.num_partitions):
            while name not in subscribed[members[turn % len(members)]]:
                turn += 1
            out[members[turn % len(members)]].setdefault(name, []).append(p)
            turn += 1
    return out


#: The eager leader's assignors by JoinGroup protocol name (``partition.assignment.strategy``).
EAGER_ASSIGNORS: dict[str, LeaderAssignor] = {"range": eager_range_assignment,
                                              "roundrobin": eager_roundrobin_assignment}


def valid_claims(subscriptions: Mapping[str, Any],
                 topics: Mapping[str, TopicMetadata]) -> dict[tuple[str, int], str]:
    """The owner of each partition claimed in the subscriptions (KIP-792): the claim with the
    highest generation wins; two claims of the winning generation void each other; claims of
    topics the member does not subscribe to or of partitions that do not exist are dropped."""
    best: dict[tuple[str, int], tuple[int, str | None]] = {}
    for mid in sorted(subscriptions):
        s = subscriptions[mid]
        subscribed = set(s.topics)
        for topic, parts in s.owned_partitions.items():
            meta = topics.get(topic)
            if meta is None or topic not in subscribed:
                continue
            for p in parts:
                if not 0 <= p < meta.num_partitions:
                    continue
                key = (topic, p)
                prev = best.get(key)
                if prev is None or s.generation_id > prev[0]:
                    best[key] = (s.generation_id, mid)
                elif s.generation_id == prev[0]:
                    best[key] = (prev[0], None)  # a conflict: nobody's claim is valid
    return {k: mid for k, (_, mid) in best.items() if mid is not None}


def cooperative_sticky_assignment(subscriptions: Mapping[str, Any],
                                  topics: Mapping[str, TopicMetadata], *,
                                  withhold: bool = True) -> dict[str, NamedAssignment]:
    """The cooperative leader (KIP-429): the sticky target of ``uniform`` from the valid claims,
    minus the partitions that move from a current owner (withheld for the next round).
    ``withhold=False`` is the deliberately broken assignor of the tests."""
    by_id = {t.topic_id: t for t in topics.values()}
    owner = valid_claims(subscriptions, topics)
    kept: dict[str, dict[UUID, set[int]]] = {}
    for (topic, p), mid in owner.items():
        kept.setdefault(mid, {}).setdefault(topics[topic].topic_id, set()).add(p)
    spec = GroupSpec({mid: MemberSubscription(
        mid, _topic_ids(topics, s.topics),
        {t: frozenset(ps) for t, ps in kept.get(mid, {}).items()})
        for mid, s in subscriptions.items()}, by_id)
    target = UniformAssignor(memo_members=0).assign(spec)
    out: dict[str, NamedAssignment] = {}
    for mid in subscriptions:
        named = _named(target.get(mid, {}), by_id)
        if withhold:
            named = {t: [p for p in ps if owner.get((t, p), mid) == mid] for t, ps in named.items()}
        out[mid] = {t: ps for t, ps in named.items() if ps}
    return out


# ----------------------------------------------------------------------------- the member


class ClassicConsumerMember(ClassicMember, OffsetCommits):
    """One classic-protocol consumer as a sans-IO state machine (see the module docstring).

    ``state`` reuses :class:`MemberState` of the KIP-848 member: UNSUBSCRIBED, JOINING (in a
    rebalance: ``phase`` says whether JoinGroup or SyncGroup is next), STABLE, RECONCILING (a
    revocation deferred by the listener), LEAVING, UNJOINED, FATAL. ``member_epoch`` is the
    generation id (a driver written for the KIP-848 member can trace either)."""

    protocol_type = CONSUMER_PROTOCOL_TYPE

    def __init__(
        self,
        group_id: str,
        *,
        protocol: str = EAGER,
        instance_id: str | None = None,
        client_id: str = "groupcoord-classic-consumer",
        client_host: str = "",
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        heartbeat_interval_ms: int = 3_000,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        listener: RebalanceListener | None = None,
        leader_assignor: LeaderAssignor | None = None,
        assignor: str | None = None,
    ) -> None:
        if protocol not in ASSIGNOR_OF:
            raise ValueError(f"protocol must be one of {sorted(ASSIGNOR_OF)}, not {protocol!r}")
        if assignor is not None and (protocol != EAGER or assignor not in EAGER_ASSIGNORS):
            raise ValueError(f"assignor {assignor!r}: an eager member takes one of "
                             f"{sorted(EAGER_ASSIGNORS)}; a cooperative one cooperative-sticky")
        super().__init__(group_id, client_id=client_id, client_host=client_host,
                         session_timeout_ms=session_timeout_ms,
                         rebalance_timeout_ms=rebalance_timeout_ms,
                         heartbeat_interval_ms=heartbeat_interval_ms,
                         request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                         instance_id=instance_id)
        self.protocol = protocol
        self.assignor_name = assignor or ASSIGNOR_OF[protocol]
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.listener = listener or RebalanceListener()
        self.leader_assignor = leader_assignor or (
            EAGER_ASSIGNORS[self.assignor_name] if protocol == EAGER
            else cooperative_sticky_assignment)

        self.state = ClientMemberState.UNSUBSCRIBED
        self.phase = Phase.JOIN
        self.leader_id = ""
        self.owned: Partitions = EMPTY
        self.subscribed_topics: tuple[str, ...] | None = None
        self.subscribed_regex: str | None = None
        self.fatal_error: tuple[int, str | None] | None = None
        self.stats: dict[str, int] = {"joins": 0, "syncs": 0, "heartbeats": 0, "timeouts": 0,
                                      "retries": 0, "revoked": 0, "assigned": 0, "lost": 0,
                                      "rebalances": 0, "ignored_responses": 0}

        #: Topic name -> (id, partitions), as the driver last gave it.
        self._topics: dict[str, TopicMetadata] = {}
        self._names: dict[UUID, str] = {}  # topic id -> name (also of deleted topics)
        self._group_topics: frozenset[str] = frozenset()  # the leader's view of the group's
        #: (id, partitions) per group topic at the leader's last assignment.
        self._snapshot: dict[str, tuple[UUID, int]] = {}
        self._next_heartbeat_ms = 0
        self._retry_at_ms = 0
        self._attempts = 0
        self._join_response: JoinGroupResponse | None = None
        self._rejoin_needed = False
        self._revoking: Partitions | None = None
        self._after_revoke: str | None = None  # "join" | "rejoin" | "stable" | "leave"
        self._lost_pending = False
        self._leave_permanent = False
        #: The leader withheld partitions in its last assignment; it rejoins at this time
        #: unless a rebalance came first (the follow-up round of KIP-429).
        self._withheld = False
        self._follow_up_at: int | None = None
        #: The rebalance in progress is the leader's follow-up (until its SyncGroup answer).
        self._following_up = False
        #: The generation of the last assignment installed (SyncGroup answered): the one the
        #: owned partitions belong to, known to be persisted by the coordinator.
        self._synced_generation = NO_GENERATION

    # ------------------------------------------------------------------ properties

    @property
    def rejoin_pending(self) -> bool:
        """A rejoin was asked for during the rebalance in progress (done after it)."""
        return self._rejoin_needed

    def topics(self) -> tuple[str, ...]:
        """The topic names the member subscribes to now (a regex matched on the metadata)."""
        if self.subscribed_regex is not None:
            return tuple(sorted(regex_matches(self.subscribed_regex, sorted(self._topics))))
        return self.subscribed_topics or ()

    # ------------------------------------------------------------------ application API

    def subscribe(self, topics: Iterable[str] | None = None, *, regex: str | None = None,
                  now_ms: int | None = None) -> None:
        """Subscribe to topic names or one RE2 regex (matched on the metadata, as the Java
        consumer's ``subscribe(Pattern)``); joins, or rejoins when the topics change."""
        if (topics is None) == (regex is None):
            raise ValueError("subscribe to topic names or to a regex (exactly one)")
        if now_ms is not None:
            self._now = now_ms
        before = self.topics()
        self.subscribed_topics = None if topics is None else tuple(sorted(set(topics)))
        self.subscribed_regex = regex
        if self.state in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED):
            self._start_join()
            self._retry_at_ms = 0
        elif self.state is not ClientMemberState.FATAL and self.topics() != before:
            self.request_rejoin()

    def update_metadata(self, topics: Iterable[TopicMetadata], now_ms: int) -> None:
        """The cluster's topics changed (the driver's metadata refresh). Rejoin when the topics
        the member subscribes to changed (a regex matching others; one of them created,
        deleted, recreated or grown), or, for the leader, when the group's topics did since
        its last assignment (the Java leader's metadata snapshot). Unlike the Java consumer,
        a follower also reacts to its own topics: a static leader that restarted and was
        told to skip the assignment (KIP-814) cannot have seen what changed meanwhile."""
        self._now = now_ms
        before = self.topics()
        own_before = self._partition_counts(before)
        self._topics = {t.name: t for t in topics}
        for t in self._topics.values():
            self._names[t.topic_id] = t.name
        if self.state in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED, ClientMemberState.FATAL,
                          ClientMemberState.LEAVING):
            return
        leader = self.generation >= 0 and self.leader_id == self.member_id
        after = self.topics()
        if after != before or self._partition_counts(after) != own_before or (
                leader and self._partition_counts(self._group_topics) != self._snapshot):
            self.request_rejoin()

    def delay_heartbeat(self, delay_ms: int) -> None:
        """Push the next heartbeat ``delay_ms`` later: its phase against the other members'
        (a driver that models the field's spread of heartbeat phases: the JoinGroup response
        reaching each member over a network round, the heartbeat thread waking only every
        ``retry.backoff.ms``, a GC pause; the timer then keeps the new phase)."""
        self._next_heartbeat_ms += delay_ms

    def request_rejoin(self) -> None:
        """Rebalance: rejoin now, or after the rebalance in progress."""
        if self.state in (ClientMemberState.JOINING, ClientMemberState.RECONCILING):
            self._rejoin_needed = True
        elif self.state is ClientMemberState.STABLE:
            self._begin_rebalance()

    def leave(self, now_ms: int, *, permanent: bool = False) -> None:
        """Close: revoke everything, then LeaveGroup (a dynamic member, or ``permanent``)."""
        self._now = now_ms
        if self.state in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED, ClientMemberState.FATAL,
                          ClientMemberState.LEAVING):
            return
        self._leave_permanent = permanent
        self.state = ClientMemberState.LEAVING
        if self._revoking is not None:
            self._after_revoke = "leave"
            return
        if self._lost_pending or self.generation < 0:
            self._lost_pending = False
            self._lose_all()
            return
        if self.owned:
            self._revoke(self.owned, "leave")

    def complete_revocation(self, now_ms: int) -> None:
        """The application finished a revocation it deferred (see ``DEFER``)."""
        self._now = now_ms
        revoking = self._revoking
        if revoking is not None:
            self._revoking = None
            self._finish_revocation(revoking)

    def _may_commit(self) -> bool:
        """Commits carry the member id and the generation: none before the first JoinGroup."""
        return self.generation >= 0 and bool(self.member_id) and self.state not in (
            ClientMemberState.UNSUBSCRIBED, ClientMemberState.FATAL, ClientMemberState.UNJOINED)

    def _commit_epoch(self) -> int:
        return self.generation

    def _commit_topic_names(self, topic_names: Mapping[UUID, str] | None) -> Mapping[UUID, str]:
        return topic_names or self._names

    # ------------------------------------------------------------------ driver API

    def next_deadline(self) -> int | None:
        """When :meth:`poll_request` next has something to do (None: nothing until a call)."""
        s = self.state
        if s in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED, ClientMemberState.FATAL):
            return None
        if s is ClientMemberState.LEAVING:
            return None if self._revoking is not None else self._now
        if self.inflight is not None:
            return self.inflight.sent_ms + self._timeout_of(self.inflight.request)
        if s is ClientMemberState.JOINING:
            return max(self._retry_at_ms, self._now)
        if self.generation < 0 or not self.member_id:
            return None  # revoking before a join: nothing to send until it completes
        due = max(self._next_heartbeat_ms, self._retry_at_ms)
        if self._follow_up_at is not None and s is ClientMemberState.STABLE:
            due = min(due, self._follow_up_at)
        return due

    def poll_request(self, now_ms: int) -> ClassicRequest | None:
        """The request to send now, if one is due (it becomes the request in flight)."""
        self._now = now_ms
        s = self.state
        if s is ClientMemberState.LEAVING:  # the request in flight, if any, is abandoned
            return None if self._revoking is not None else self._send_leave(now_ms)
        timed_out = self._timed_out(now_ms)
        if timed_out is not None:
            self.stats["timeouts"] += 1
            self._failed(timed_out.request)
        if self.inflight is not None:
            return None
        s = self.state
        if s in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.UNJOINED, ClientMemberState.FATAL) \
                or now_ms < self._retry_at_ms:
            return None
        if s is ClientMemberState.JOINING:
            if self.phase is Phase.JOIN:
                gone = self._unsubscribed_owned()
                if gone:  # the subscription changed during the rebalance
                    self._revoke(gone, "join")
                    return self.poll_request(now_ms)
                return self._send(self._join_request(), now_ms)
            return self._send(self._sync_request(), now_ms)
        follow_up = self._follow_up_at
        if follow_up is not None and now_ms >= follow_up and s is ClientMemberState.STABLE:
            self._following_up = True
            self._begin_rebalance()  # clears the follow-up
            return self.poll_request(now_ms)
        if self.generation < 0 or not self.member_id or now_ms < self._next_heartbeat_ms:
            return None
        self.stats["heartbeats"] += 1
        return self._send(self._heartbeat(), now_ms)

    def on_response(self, resp: Any, now_ms: int, correlation_id: int | None = None) -> bool:
        """Handle the answer to the request in flight; False for any other (a duplicate, an
        answer to a request given up on)."""
        self._now = now_ms
        inflight = self._take_inflight(correlation_id)
        if inflight is None:
            self.stats["ignored_responses"] += 1
            return False
        req = inflight.request
        if isinstance(req, LeaveGroupRequest) or self.state in (
                ClientMemberState.UNJOINED, ClientMemberState.FATAL, ClientMemberState.UNSUBSCRIBED,
                ClientMemberState.LEAVING):
            return True
        if isinstance(req, JoinGroupRequest):
            assert isinstance(resp, JoinGroupResponse)
            self._on_join(resp)
        elif isinstance(req, SyncGroupRequest):
            assert isinstance(resp, SyncGroupResponse)
            self._on_sync(resp)
        else:
            assert isinstance(resp, HeartbeatResponse)
            self._on_heartbeat(req, resp)
        return True

    def on_request_failed(self, now_ms: int, correlation_id: int | None = None) -> bool:
        """The request in flight failed without an answer (connection lost): retry later."""
        self._now = now_ms
        inflight = self._take_inflight(correlation_id)
        if inflight is None:
            return False
        self._failed(inflight.request)
        return True

    # ------------------------------------------------------------------ requests

    def _timeout_of(self, req: ClassicRequest) -> int:
        if isinstance(req, JoinGroupRequest | SyncGroupRequest):
            return self.request_timeout_ms + self.rebalance_timeout_ms
        return self.request_timeout_ms

    def _subscription(self) -> bytes:
        owned: dict[str, list[int]] = {}
        if self.protocol == COOPERATIVE:
            for t, p in self.owned:
                name = self._names.get(t)
                if name is not None:
                    owned.setdefault(name, []).append(p)
        return encode_subscription(self.topics(), owned_partitions=owned,
                                   generation_id=self.generation if owned else NO_GENERATION)

    def _join_request(self) -> JoinGroupRequest:
        self.stats["joins"] += 1
        return self._join_group((JoinGroupProtocol(self.assignor_name, self._subscription()),))

    def _sync_request(self) -> SyncGroupRequest:
        self.stats["syncs"] += 1
        jr = self._join_response
        assert jr is not None
        assignments: tuple[SyncGroupAssignment, ...] = ()
        if jr.leader == self.member_id and not jr.skip_assignment and jr.members:
            assignments = self._assign(jr.members)
        return self._sync_group(jr.protocol_name or self.assignor_name, assignments)

    def _assign(self, members: tuple[JoinGroupResponseMember, ...]) -> tuple[SyncGroupAssignment, ...]:
        subs: dict[str, Any] = {}
        for m in members:
            try:
                subs[m.member_id] = decode_subscription(m.metadata)
            except ConsumerProtocolError:
                subs[m.member_id] = decode_subscription(encode_subscription(()))
        self._group_topics = frozenset(t for s in subs.values() for t in s.topics)
        self._snapshot = self._partition_counts(self._group_topics)
        topics = {n: self._topics[n] for n in sorted(self._group_topics) if n in self._topics}
        out = self.leader_assignor(subs, topics)
        given = sum(len(ps) for a in out.values() for ps in a.values())
        self._withheld = given < sum(t.num_partitions for t in topics.values())
        return tuple(SyncGroupAssignment(m.member_id, encode_assignment(out.get(m.member_id, {})))
                     for m in members)

    def _partition_counts(self, names: Iterable[str]) -> dict[str, tuple[UUID, int]]:
        """(topic id, partitions) of the named topics that exist."""
        return {n: (self._topics[n].topic_id, self._topics[n].num_partitions)
                for n in sorted(names) if n in self._topics}

    def _send_leave(self, now_ms: int) -> LeaveGroupRequest | None:
        req: LeaveGroupRequest | None = None
        if self.member_id and (self.instance_id is None or self._leave_permanent):
            req = self._leave_group("the consumer is being closed")
            self._send(req, now_ms)
        else:
            self.inflight = None
        self.state = ClientMemberState.UNJOINED
        self._reset(member_id=True)
        return req

    # ------------------------------------------------------------------ responses

    def _on_join(self, resp: JoinGroupResponse) -> None:
        code = resp.error_code
        if code == _E.none:
            self._attempts = 0
            if self.owned and resp.generation_id > self.generation + 1:
                # A generation went by without this member (a static member cut off, say):
                # the leader of that generation could not see what it owns, so it may have
                # given its partitions away. They are lost before the new generation begins.
                self._lose_all()
            self.member_id = resp.member_id
            self.generation = resp.generation_id
            self.leader_id = resp.leader
            self._join_response = resp
            self.phase = Phase.SYNC
            if resp.skip_assignment:
                # A static leader back under KIP-814 cannot know what changed while it was
                # away (partitions added, a round that withheld partitions its former
                # incarnation claimed): it asks for a follow-up round itself (see _install).
                self._withheld = True
        elif code == _E.member_id_required:
            self.member_id = resp.member_id
            self.phase = Phase.JOIN
        elif code == _E.unknown_member_id:
            self._lose_and_reset(member_id=True)
        elif code in (_E.rebalance_in_progress, _E.illegal_generation):
            self.phase = Phase.JOIN  # superseded: join again
        elif code in RETRIABLE_ERRORS:
            self._unsynced_generation_lost()
            self._back_off()
        else:
            self._fatal(code)

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        code = resp.error_code
        if code == _E.none:
            self._attempts = 0
            self._retry_at_ms = 0
            self.stats["rebalances"] += 1
            self._install(resp.assignment)
        elif code == _E.rebalance_in_progress:
            self.phase = Phase.JOIN
        elif code == _E.illegal_generation:
            self._lose_and_reset(member_id=False)
        elif code == _E.unknown_member_id:
            self._lose_and_reset(member_id=True)
        elif code in RETRIABLE_ERRORS:
            self.phase = Phase.JOIN
            self._unsynced_generation_lost()
            self._back_off()
        else:
            self._fatal(code)

    def _on_heartbeat(self, req: HeartbeatRequest, resp: HeartbeatResponse) -> None:
        code = resp.error_code
        self._next_heartbeat_ms = self._now + self.heartbeat_interval_ms
        if req.generation_id != self.generation or req.member_id != self.member_id:
            return  # answers a generation the member already left behind
        if code == _E.none:
            self._attempts = 0
            self._retry_at_ms = 0
        elif code == _E.rebalance_in_progress:
            self.request_rejoin()
        elif code == _E.illegal_generation:
            self._lose_and_reset(member_id=False)
        elif code == _E.unknown_member_id:
            self._lose_and_reset(member_id=True)
        elif code in RETRIABLE_ERRORS:
            self._back_off()
        else:
            self._fatal(code)

    def _failed(self, req: ClassicRequest) -> None:
        """A lost answer or a timeout: back off; a join or sync starts the join again."""
        self.stats["retries"] += 1
        if isinstance(req, JoinGroupRequest | SyncGroupRequest) and \
                self.state is ClientMemberState.JOINING:
            self.phase = Phase.JOIN
            self._unsynced_generation_lost()
        self._back_off()

    # ------------------------------------------------------------------ rebalance

    def _start_join(self) -> None:
        self.state = ClientMemberState.JOINING
        self.phase = Phase.JOIN
        self._rejoin_needed = False
        self._follow_up_at = None

    def _begin_rebalance(self) -> None:
        """Eager: revoke everything first (the revocation may be deferred); cooperative: keep
        the partitions and join."""
        if self.protocol == EAGER and self.owned:
            self._revoke(self.owned, "join")
            return
        gone = self._unsubscribed_owned()
        if gone:
            self._revoke(gone, "join")
        else:
            self._start_join()

    def _unsubscribed_owned(self) -> Partitions:
        """Owned partitions of topics the member no longer subscribes to (or that no longer
        exist): a cooperative member revokes them before it joins, as the Java consumer's
        onJoinPrepare does, since the leader will not count them as owned."""
        topics = set(self.topics())
        known = self._topics
        return frozenset(tp for tp in self.owned
                         if (name := self._names.get(tp[0])) is None or name not in topics
                         or name not in known or known[name].topic_id != tp[0])

    def _install(self, raw: bytes) -> None:
        try:
            named = decode_assignment(raw).partitions if raw else {}
        except ConsumerProtocolError:
            named = {}
        if not self._matches_subscription(named):
            # The subscription changed since the member joined (a static member back with new
            # topics gets its former incarnation's assignment without a rebalance): install
            # nothing and rejoin with the current subscription, as the Java consumer does.
            self.state = ClientMemberState.STABLE
            self._next_heartbeat_ms = self._now + self.heartbeat_interval_ms
            self._withheld = False
            self._following_up = False
            self._begin_rebalance()
            return
        assigned = frozenset((self._topics[t].topic_id, p) for t, ps in named.items()
                             if t in self._topics for p in ps)
        revoked = self.owned - assigned
        added = assigned - self.owned
        self.state = ClientMemberState.STABLE
        self._synced_generation = self.generation
        self._next_heartbeat_ms = self._now + self.heartbeat_interval_ms
        if added:
            self.owned = self.owned | added
            self.stats["assigned"] += len(added)
            self.listener.on_partitions_assigned(frozenset(added))
        if self._withheld and self.leader_id == self.member_id:
            # Partitions were withheld: their owners revoke and rejoin; should none do so (a
            # static owner that restarted meanwhile claims nothing), the leader rejoins. If
            # this round was already such a follow-up, the owner neither revoked nor came back
            # under a new member id: it is a static member that is gone (crashed, cut off),
            # still a member with its old claims. Asking again a heartbeat interval later
            # would start the next join phase before the coordinator removes it (the end of
            # each join phase renews its session, the new rebalance drops the expiry of its
            # pending SyncGroup) and withhold its partitions again, round after round: wait a
            # rebalance timeout, the time the coordinator gives a member to sync (the members
            # of a group are assumed to share it), and a heartbeat interval to hear of the
            # rebalance that the removal starts.
            delay = self.heartbeat_interval_ms
            if self._following_up:
                delay += self.rebalance_timeout_ms
            self._follow_up_at = self._now + delay
        self._withheld = False
        self._following_up = False
        if revoked:
            # Cooperative: give the partitions up, then rejoin so they can move.
            self._revoke(revoked, "rejoin")
        elif self._rejoin_needed:
            self._rejoin_needed = False
            self._begin_rebalance()

    def _matches_subscription(self, named: Mapping[str, Iterable[int]]) -> bool:
        """Whether every topic of an assignment is one the member subscribes to now (the Java
        consumer's ``checkAssignmentMatchedSubscription``: a regex is matched on the name)."""
        topics = [t for t, ps in named.items() if ps]
        if self.subscribed_regex is not None:
            return len(regex_matches(self.subscribed_regex, topics)) == len(topics)
        subscribed = set(self.topics())
        return all(t in subscribed for t in topics)

    def _revoke(self, parts: Partitions, then: str) -> None:
        if self.state is not ClientMemberState.LEAVING:
            self.state = ClientMemberState.RECONCILING
        self._after_revoke = then
        self._revoking = parts
        if self.listener.on_partitions_revoked(frozenset(parts)) is DEFER:
            return
        self._revoking = None
        self._finish_revocation(parts)

    def _finish_revocation(self, parts: Partitions) -> None:
        self.owned = self.owned - parts
        self.stats["revoked"] += len(parts)
        then, self._after_revoke = self._after_revoke, None
        if self.state is ClientMemberState.LEAVING:
            if self._lost_pending:
                self._lost_pending = False
                self._lose_all()
            elif self.owned:
                self._revoke(self.owned, "leave")
            return
        if self._lost_pending:
            self._lost_pending = False
            self._lose_all()
            self._start_join()
            return
        if then in ("join", "rejoin") or self._rejoin_needed:
            self.state = ClientMemberState.STABLE
            self._begin_rebalance()
        else:
            self.state = ClientMemberState.STABLE

    def _lose_and_reset(self, member_id: bool) -> None:
        """ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: the partitions are lost; rejoin."""
        self._reset(member_id)
        if self._revoking is not None:
            self._lost_pending = True  # once the application finished the revocation
            return
        self._lose_all()
        self._start_join()

    def _unsynced_generation_lost(self) -> None:
        """The coordinator may have changed (an unanswered request, a coordinator error) while
        the member holds a generation it got no assignment for: that generation is in no
        record (the coordinator persists a generation with the leader's assignment), so a
        coordinator that took over may give its number to a generation formed without this
        member, whose leader saw a stale subscription (a static member is kept without
        rejoining) and gave its partitions away. Fall back to the generation of its last
        assignment: commits and claims carry it (older than any such generation), and a
        JoinGroup answering a generation more than one past it loses the partitions."""
        self.generation = self._synced_generation

    def _reset(self, member_id: bool) -> None:
        self.generation = NO_GENERATION
        self._synced_generation = NO_GENERATION
        self.leader_id = ""
        self._join_response = None
        if member_id:
            self.member_id = ""

    def _lose_all(self) -> None:
        lost = self.owned
        self.owned = EMPTY
        if lost:
            self.stats["lost"] += len(lost)
            self.listener.on_partitions_lost(lost)

    def _back_off(self) -> None:
        delay = min(self.retry_backoff_ms * (1 << min(self._attempts, 20)),
                    self.retry_backoff_max_ms)
        self._attempts += 1
        self._retry_at_ms = self._now + delay

    def _fatal(self, code: int) -> None:
        self.fatal_error = (int(code), None)
        self._revoking = None
        self._lost_pending = False
        self._lose_all()
        self.state = ClientMemberState.FATAL


__all__ = [
    "ASSIGNOR_OF",
    "COOPERATIVE",
    "EAGER",
    "EAGER_ASSIGNORS",
    "ClassicConsumerMember",
    "Phase",
    "cooperative_sticky_assignment",
    "eager_range_assignment",
    "eager_roundrobin_assignment",
    "valid_claims",
]
