"""Share groups (KIP-932) in the simulator: protocol ``share`` (variant ``simple``, the assignor).

Simulated share consumers against the real coordinator core's share group type (the
:class:`Shard`'s ShareGroupHeartbeat, its ``simple`` share assignor, its session timers and
replay) through the faulty network of ``sim.network``, and against the real share-partition
state machine (``sim.share_partitions``: the core's ``SharePartition`` driven with the simulated
clock). Everything protocol-independent (the loop, the scenario's timeline, network faults,
coordinator failovers, the I4 checkpoints, the windows) is :class:`Simulation`'s.

**A share consumer** (as librdkafka's and the Java ``KafkaShareConsumer`` behave, explicit
acknowledgement):

- **Membership**: it heartbeats ShareGroupHeartbeat with its subscribed topic names, a member id
  it generated (KIP-1082) and its epoch, one request at a time, every heartbeat interval the
  coordinator gives; a request unanswered after ``request_timeout_ms`` is given up and sent again.
  UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH make it rejoin at epoch 0 with the same member id;
  COORDINATOR_LOAD_IN_PROGRESS (a coordinator still loading) is retried after a backoff; any
  other error stops the process, restarted after ``restart_delay_ms`` (an orchestrator).
- **Fetching** (the partition leader, another endpoint of the same network: a member cut off
  reaches neither): with partitions assigned and no batch in hand, it sends a fetch for them,
  carrying the acknowledgements of its last batch; the broker applies them, then acquires up
  to ``max_poll_records`` records (partitions in turn, starting one further each fetch). A fetch
  that finds nothing waits at the broker (long poll) until it can acquire records, tried again
  at each record produced on one of its partitions (at least the workload's
  ``fetch_latency_ms`` apart: another member's fetch may take them first), and is answered
  empty after ``FETCH_MAX_WAIT_MS`` (Kafka's delayed share fetch).
- **Processing**: record by record, each taking a draw of the workload's processing time (plus
  a ``slow`` event's ``delay_ms`` per batch, a slow downstream); a *poison* record's processing
  fails and the member RELEASEs it (it is delivered again, to any member, and archived at
  ``share.delivery.count.limit``); the others are ACCEPTed. Poison as in the field (the
  workload's ``poison_attempt_ms``, ``sim.workload``): each delivery of a poison record costs
  its attempt instead of a processing draw (the same cost per record and attempt as the
  consumer groups' application pays), no back-off (a RELEASE makes it available at once); an
  attempt that outlasts the lock (a hanging call) lets the lock expire, the record is delivered
  to another member, and the first member's RELEASE is refused. The records behind it on its
  partition are acquired by the other members meanwhile (no head-of-line blocking); only the
  failing member's own batch waits for its acknowledgements. The lock duration and the
  delivery limit are the workload's ``share_lock_duration_ms`` and
  ``share_delivery_count_limit`` when it sets them (Kafka's 30 s and 5 otherwise). A record
  whose lock expired while the member was busy is refused at acknowledgement
  (INVALID_RECORD_STATE: another member may process it again).
- **Leaving** (leave, scale-in, a graceful bounce): the records of its batch in hand that it
  has processed are acknowledged (ACCEPT, or RELEASE for a poison record's failed attempt), sent
  with the close of its share session (the broker applies them, then releases what the member
  still holds: the batch's records not processed yet), then it heartbeats epoch -1. This is
  ``KafkaShareConsumer.close()`` in explicit acknowledgement mode, the mode these members and
  the lab's wire members (``lab.wire_share_member``) use: ``ShareConsumerImpl.close`` sends the
  pending acknowledgements (``ShareAcknowledgeOnCloseEvent``), which closes the share session,
  before it leaves the group (``sendAcknowledgementsAndLeaveGroup``), and the class's Javadoc
  says close "attempts to commit any pending acknowledgements and releases any remaining
  acquired records" (apache/kafka ``clients/.../KafkaShareConsumer.java`` and
  ``internals/ShareConsumerImpl.java``, read at a 4.2-era commit with ``share.acquire.mode``).
  In *implicit* mode Kafka's close does not acknowledge the last batch: ``poll``,
  ``commitSync`` and ``commitAsync`` accept the delivered records first
  (``acknowledgeBatchIfImplicitAcknowledgement``), close does not, and the Javadoc says close
  "releases any acquired records without acknowledgement"; an implicit-mode application that
  closes after its batch without ``commitSync`` has it delivered again. Not modelled: the
  record in hand at the leave counts as not processed (the wire member finishes it first).
  **Crashing** (a lost host, a hung process): nothing; its records stay acquired until their
  locks expire, its membership until the session timeout. Its connections stay open, so a
  ShareFetch it sent before it stopped is still served: one waiting at the broker for records
  (a long poll) acquires the partition's next records for it, and they too wait for their locks
  (Kafka's delayed share fetch completes on the partition's next records whatever the client
  is doing, ``DelayedShareFetch``). This is what makes a lost host pin its partition whether or
  not its application held a batch: librdkafka (2.15's source read) and the Java
  ``KafkaShareConsumer`` (4.0-4.1 source) keep a ShareFetch outstanding whenever the
  application holds nothing (one answered empty is sent again at once, without waiting for the
  next poll:
  ``rd_kafka_share_fetch_reply_op``, ``ShareConsumeRequestManager.fetchMoreRecords``), and on
  the wire a hung ShareConsumer (librdkafka 2.16) pinned its partition on 9 of 10 runs, its
  application holding no batch on 6 of them (docs/lab.md "Share groups against real share
  consumers"). **Killed** (``kill``: the process
  ends, its host closes its connections): the broker ends its share session with the
  connection and releases its acquired records at once; its membership stays until the
  session timeout (:meth:`ShareSimulation.kill`).

**Invariants checked every step** (docs/design.md): S1-S3 on every acquisition and
acknowledgement (``sim.share_partitions``), and in full at every checkpoint and at the end;
I3 on the share group's epochs after every step that wrote records (group epoch >= assignment
epoch >= every member epoch, none decreasing) and on every answer a member takes (never lower
than its epoch but for a rejoin at 0); I2 as share groups relax it, on every target installed
(every subscribed partition assigned at least once, only to members that exist and subscribe
to its topic); I4 as every protocol; I5 convergence (every live process a member at the
group epoch with its target, no other member) within :meth:`ShareSimulation.i5_bound` after
the faults stop; S4 at the end: every record produced before the faults stopped is
acknowledged or archived (the bound leaves the locks time to expire and the backlog time to
drain), checked while every live member can keep up with what it holds
(``ShareConvergence.over_capacity``: a member that cannot never drains, under any protocol).

**The I5 bound**: the session timeout S (a crashed member's expiry), the lock duration D (its
records' release), a restart delay R, request timeout Q, three heartbeat intervals H and twenty
one-way latencies L, the assignment interval A; S4 adds the backlog at the quiet time processed
by the live members (its mean processing time, twice over) and the poison records' deliveries
up to the limit (each a fetch round trip)::

    bound = S + D + R + Q + 3 * H + A + 20 * L + drain

**Metrics** with one definition for share and consumer groups (the lab's share comparison,
docs/lab.md): the time to converge runs until every live process is a member that heartbeated
its target assignment, no restart due (a bounced member counts from its leave until it is back
with its assignment, as ``sim.consumer_convergence``'s ``settled``); resources moved are
assignment changes, a partition given to a process that is not among its last holders (the
consumer groups' "started by a process other than its last owner"); resource downtime is the
partitions stopped, partition·s with records there and none that can be delivered: without a
live process that has them in the assignment it heartbeated, or held at the record-lock limit
(``SimSharePartitions.at_limit``: behind a crashed member's locks until they expire). The
application's (the lab's table where they fit, ``sim.workload``'s names): records processed
(successful processings, a record processed again counts again), lag (records produced and not
yet acknowledged or archived; its peak and integral), stall (records available and no live member
processing or holding a partition: ``sim.workload``'s definition, where a member that keeps up
and waits between batches is working), records processed twice (``records_reprocessed``: a record
handed to a member's application again after one had processed it, the definition the
consumer groups' model counts as a crashed or revoked member's uncommitted records processed
again: a redelivery after a lock expired of a record processed but not yet acknowledged; a
record handed out again that no application had processed, a batch released behind a poison
record, a leaving member's unprocessed rest or what a crashed member had not reached, counts
apart as :data:`UNPROCESSED`, a share group's own and not comparable; not a
poison record's redelivery after its failed attempt, the retry a consumer group's application
makes in place and does not count either: ``poison_attempts`` counts those); and
``protocol_summary``'s share figures: acquisitions, redeliveries, records archived, poison
attempts, acknowledgements refused, and ``share_lag_peaks``, the broker's share lag (the log end
offset minus the share-partition start offset, summed over the partitions: what Kafka reports
as a share group's lag) at its highest in each disturbance window, beside the lag above.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from groupcoord.coordinator.modern.share.messages import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.share_partitions.config import ShareConfig
from groupcoord.coordinator.share_partitions.partition import AckType
from groupcoord.protocol.errors import ErrorCode, error_name
from groupcoord.sim.application import RECOVERY_WAIT_MS
from groupcoord.sim.engine import Violation, Window
from groupcoord.sim.scenario import Event, pick_owner, start_offsets_ms
from groupcoord.sim.share_convergence import (
    FETCH_MAX_WAIT_MS,
    ShareConvergence,
    ShareSettings,
    _flatten,
    _ShareProc,
)
from groupcoord.sim.share_partitions import (
    Acquired,
    ShareInvariantError,
    SimSharePartitions,
    TopicIdPartition,
)
from groupcoord.sim.workload import WORK_METRICS, poison_attempt_cost

#: Records handed out again that no application had processed (a batch released behind a
#: poison record, a leaving member's unprocessed rest, a crashed member's records it had not
#: reached): a share group's own redeliveries, not comparable with a consumer group's records
#: processed twice, so counted apart from ``records_reprocessed``.
UNPROCESSED = "records_handed_unprocessed"

__all__ = ["FETCH_MAX_WAIT_MS", "UNPROCESSED", "ShareSettings", "ShareSimulation", "may_end"]

_E = ErrorCode
#: Retry backoff of a heartbeat answered with a retriable error.
RETRY_BACKOFF_MS = 100


class ShareSimulation(ShareConvergence):
    """KIP-932 share groups under faults (protocol ``share``)."""

    protocol = "share"
    waiting_since: int | None = None  # (:func:`may_end`)
    #: What a run without explicit settings uses (the lab sets its own per spec).
    settings = ShareSettings()

    def setup(self) -> None:
        sc = self.scenario
        wl = sc.workload
        # the lock duration and delivery limit a spec's workload sets (else the settings')
        self.settings = s = replace(
            self.settings, lock_duration_ms=wl.share_lock_duration_ms
            or self.settings.lock_duration_ms, delivery_count_limit=wl.share_delivery_count_limit
            or self.settings.delivery_count_limit)
        self.config = replace(
            self.config, share_session_timeout_ms=sc.session_timeout_ms,
            share_min_session_timeout_ms=min(sc.session_timeout_ms, 45_000),
            share_max_session_timeout_ms=max(sc.session_timeout_ms, 60_000),
            share_heartbeat_interval_ms=sc.heartbeat_interval_ms,
            share_min_heartbeat_interval_ms=min(sc.heartbeat_interval_ms, 5_000),
            share_max_heartbeat_interval_ms=max(sc.heartbeat_interval_ms, 15_000),
            share_record_lock_duration_ms=s.lock_duration_ms,
            share_min_record_lock_duration_ms=min(s.lock_duration_ms, 15_000),
            share_max_record_lock_duration_ms=max(s.lock_duration_ms, 60_000),
            share_delivery_count_limit=s.delivery_count_limit,
            share_min_delivery_count_limit=min(s.delivery_count_limit, 2),
            share_max_delivery_count_limit=max(s.delivery_count_limit, 10),
            share_assignment_interval_ms=sc.assignment_interval_ms)
        c = self.coord
        c.config = self.config
        c.shard = c.factory(self.config, self.image, c.member_ids)
        self.gid = sc.group_id
        # A paired control simulates every step: the share consumers' work is per record, not
        # rates a jump of the clock could extrapolate (``Simulation.finish_control``).
        self.fast_forward = False
        group_cfg = c.shard.share_group_config(self.gid)
        self.share_config = ShareConfig.of_group(group_cfg)
        self.topics = tuple(sc.topics_subscribed()) if sc.regex is None else None
        self.partitions = SimSharePartitions(self.share_config, self.seed, self.poison_rate())
        self.work_rng = random.Random(f"share-work:{self.seed}")
        self.procs: dict[str, _ShareProc] = {}
        #: Processes whose restart is scheduled (a bounce, a fatal error): the group is not
        #: converged before they are back and heartbeated their assignment, as in
        #: ``sim.consumer_convergence``'s ``settled``.
        self.pending_restarts: set[str] = set()
        #: Each partition's last holders (assignment changes: :meth:`_set_assignment`).
        self._holders: dict[TopicIdPartition, set[str]] = {}
        self._cid = 0
        self._sent_topics_of: dict[int, tuple[str, ...]] = {}
        self._lock_timer: int | None = None
        self.stats: dict[str, int] = {"heartbeats": 0, "fetches": 0, "timeouts": 0,
                                      "fenced": 0, "fatal_restarts": 0, "poison_attempts": 0}
        self._epochs = (0, 0)
        self._member_epochs: dict[str, int] = {}
        # Work metrics (cumulative): see the module docstring.
        self.work: dict[str, float] = dict.fromkeys(WORK_METRICS, 0.0)
        #: Every record once handed to a member's application (``records_reprocessed``).
        self._handed: set[tuple[TopicIdPartition, int]] = set()
        #: Every record an application finished processing (``records_reprocessed`` counts a
        #: redelivery of one of these; :data:`UNPROCESSED` a redelivery of any other).
        self._processed: set[tuple[TopicIdPartition, int]] = set()
        self.work[UNPROCESSED] = 0.0
        self._sample = (0, 0, False)  # (time, lag, stalled) at the last sample
        #: The broker's share lag (end offset - share-partition start offset) at its highest
        #: in each disturbance window, by (label, start): ``protocol_summary``'s
        #: ``share_lag_peaks``, the page's column beside the processed-based lag.
        self._share_lag_peaks: dict[tuple[str, int], int] = {}
        self.on_image_changed()
        for i, at in enumerate(start_offsets_ms(sc, self.seed)):
            self.at(at, self._spawn_event, f"c{i + 1}")
        self.arm_timer()

    # ================================================================== processes

    def _spawn_event(self, name: str) -> None:
        self.pending_restarts.discard(name)
        self.spawn(name)

    def spawn(self, name: str) -> None:
        p = self.procs.get(name)
        if p is None:
            p = self.procs[name] = _ShareProc(name, len(self.procs) + 1)
        elif p.alive:
            return
        if p.topics is None and p.regex is None:
            p.topics, p.regex = self.topics, self.scenario.regex
        p.sent_topics = None
        p.gen += 1
        p.alive = True
        p.member_id = self.new_member_id()
        p.epoch = 0
        p.assigned = frozenset()
        p.hb_cid = p.fetch_cid = 0
        p.fetching = False
        p.batch = []
        p.batch_ends = []
        p.acks = {}
        p.busy_since = None
        self.trace("start", name, 0, p.member_id[:8])
        self._heartbeat(p)
        self.on_image_changed()
        self.dirty = True

    def live_count(self) -> int:
        return len(self.live())

    def _stop(self, p: _ShareProc, why: str) -> None:
        self._sample_work()
        p.alive = False
        p.gen += 1  # answers to the old incarnation are dropped
        p.busy_since = None
        self.trace(why, p.name)
        self.dirty = True

    def crash(self, p: _ShareProc) -> None:
        if p.batch and p.busy_since is not None:  # processed before the crash, never acked
            elapsed = self.now - p.busy_since
            self._processed.update((a.tp, a.offset) for a, end in
                                   zip(p.batch, p.batch_ends, strict=True)
                                   if end <= elapsed and not a.poison)
        p.lost_gen = p.gen  # its connections stay open: a fetch it sent is still served
        self._stop(p, "crash")
        self._count_unowned(self.group())

    def kill(self, p: _ShareProc) -> None:
        """A process kill (sim.scenario's ``kill``): the process ends without a leave, as a
        crash, but its host closes its connections. The partition leader sees the connection
        close and ends the member's share session, which releases the records the member had
        acquired at once (Kafka's ``ShareSessionCache`` connection-disconnect listener calls
        ``ShareGroupListener.onMemberLeave``, whose ``SharePartitionManager`` implementation
        calls ``releaseSession`` and so ``SharePartition.releaseAcquiredRecords``; read in
        apache/kafka at a 4.1-era commit, the listener is absent from the 4.0 snapshot;
        groupcoord's server does the same, ``server/apis/share_data.py``'s
        ``connection_closed``). The acknowledgements it had not sent die with it: what it
        processed and had not acknowledged is delivered again. Its membership is not tied to
        the connection: it stays in the share group, its partitions in its assignment, until
        the session timeout (the coordinator is not told; KIP-932's heartbeat)."""
        closed = f"{p.name}#{p.gen}f>"  # the connection the kill closes
        self.crash(p)
        p.lost_gen = None  # its connections close: a fetch waiting at the broker ends
        p.acks = {}
        self.trace("kill", p.name, "", "connection closed: the share session ends")
        # the close reaches the partition leader one network delay later (not a request: no
        # message counted; a member cut off by a network partition reaches nobody). It travels
        # on the connection it closes (the incarnation's before the kill): a ShareFetch sent
        # on it before the kill reaches the broker first (TCP's order), so the records that
        # fetch acquires are released by the close too, not left to their lock as a lost host's
        msg: tuple[Any, ...] = (p, p.gen, self._next_cid(), p.member_id, (), {}, True)
        for t in self.network.route(self.now, closed, p.name, False):
            self.at(t, self._to_broker, (msg, self.now))

    def leave(self, p: _ShareProc) -> None:
        """Close gracefully: acknowledge what was processed, close the share session (the broker
        releases the rest), leave the group (epoch -1). Both go out before the process ends."""
        if p.batch:  # what it processed is acknowledged; the rest is released by the close
            elapsed = self.now - (p.busy_since if p.busy_since is not None else self.now)
            done = [a for a, end in zip(p.batch, p.batch_ends, strict=True) if end <= elapsed]
            self._sample_work()
            self._ack_done(p, done)
            p.batch = []
            p.batch_ends = []
        self._send_fetch(p, close=True)
        if p.epoch > 0 or p.hb_cid:
            self._send_heartbeat(p, ShareGroupHeartbeatRequest(self.gid, p.member_id, -1))
        self._stop(p, "leave")
        self._count_unowned(self.group())

    def _restart_later(self, name: str, delay: int) -> None:
        self.pending_restarts.add(name)
        self.at(self.now + delay, self._spawn_event, name)

    # ================================================================== scenario events

    def resolve_members(self, names: Iterable[str]) -> list[str]:
        out: list[str] = []
        for n in names:
            if n in ("@leader", "@follower"):  # no leader: the first started, the next
                procs = self.live()
                who = procs[0] if n == "@leader" and procs else (
                    procs[1] if n == "@follower" and len(procs) > 1 else None)
                if who is not None and who.name not in out:
                    out.append(who.name)
            elif n == "@owner":  # a member holding a partition now (sim.scenario)
                who_name = pick_owner((p.name for p in self.live()
                                       if p.assigned and p.name not in out), self.seed, self.now)
                if who_name is not None:
                    out.append(who_name)
            elif n in ("any", "*", "all"):
                names_live = [p.name for p in self.live() if p.name not in out]
                if n == "any":
                    if names_live:
                        out.append(self.choice_rng.choice(names_live))
                else:
                    out.extend(names_live)
            elif n not in out:
                out.append(n)
        return sorted(out)

    def _one(self, ev: Event) -> _ShareProc | None:
        names = self.resolve_members([ev["member"]])
        p = self.procs.get(names[0]) if names else None
        if p is None or not p.alive:
            self.noop(names[0] if names else "", f"{ev.kind} {ev['member']}: not running")
            return None
        live = self.live()
        self.event_targets.append({"at_ms": self.now, "kind": ev.kind, "member": p.name,
                                   "leader": live[0].name if live else None})
        return p

    def _new_name(self) -> str:
        i = len(self.procs) + 1
        while f"c{i}" in self.procs:
            i += 1
        return f"c{i}"

    def apply_member_event(self, ev: Event) -> None:
        k = ev.kind
        if k in ("join", "scale-out"):
            names = list(ev["members"]) if k == "join" and ev["members"] else [
                self._new_name() for _ in range(ev["count"])]
            for n in names:
                self.procs.setdefault(n, _ShareProc(n, len(self.procs) + 1))
                self.spawn(n)
        elif k == "scale-in":
            for p in sorted(self.live(), key=lambda p: -p.index)[:ev["count"]]:
                self.leave(p)
        elif k in ("leave", "crash", "kill", "bounce"):
            one = self._one(ev)
            if one is None:
                return
            if k == "leave":
                self.leave(one)
            elif k == "kill":
                self.kill(one)
            elif k == "crash" or ev["hard"]:
                self.crash(one)
            else:
                self.leave(one)
            if k == "bounce":
                self._restart_later(one.name, ev["down_ms"])
        elif k == "rolling-bounce":
            for i, p in enumerate(self.live()):
                self.at(self.now + i * ev["interval_ms"], self._bounce_event,
                        (p.name, ev["down_ms"], ev["hard"]))
        elif k == "subscribe":
            targets = self.live() if ev["member"] == "all" else \
                [p for p in [self._one(ev)] if p is not None]
            for p in targets:
                p.topics, p.regex = ev["topics"], ev["regex"]
                self.trace("subscribe", p.name, "", ",".join(ev["topics"]) if ev["topics"]
                           else f"/{ev['regex']}/")
                self._heartbeat(p)
            self.on_image_changed()
        elif k == "slow":
            targets = self.live() if ev["member"] == "all" else \
                [p for p in [self._one(ev)] if p is not None]
            for p in targets:
                p.slow_until = self.now + ev["duration_ms"]
                p.slow_delay = ev["delay_ms"]
                self.trace("slow", p.name, "", f"batches take {ev['delay_ms']} ms more for "
                           f"{ev['duration_ms']} ms")
        else:
            self.noop("", f"{k}: not modelled for share groups")

    def _bounce_event(self, arg: tuple[str, int, bool]) -> None:
        name, down, hard = arg
        p = self.procs[name]
        if not p.alive:
            return
        if hard:
            self.crash(p)
        else:
            self.leave(p)
        self._restart_later(name, down)

    # ================================================================== membership

    def _next_cid(self) -> int:
        self._cid += 1
        return self._cid

    def _heartbeat(self, p: _ShareProc) -> None:
        """Send the member's heartbeat if none is in flight (a join carries the topics)."""
        if not p.alive or p.hb_cid:
            return
        names = self.subscribed(p)
        send = p.epoch == 0 or names != p.sent_topics
        req = ShareGroupHeartbeatRequest(self.gid, p.member_id, p.epoch,
                                         subscribed_topic_names=names if send else None,
                                         client_id=p.name)
        self._send_heartbeat(p, req)

    def subscribed(self, p: _ShareProc) -> tuple[str, ...]:
        """The topic names the process subscribes to (a regex resolved on the topics that
        exist, as a client resolves it; sorted)."""
        if p.regex is None:
            return tuple(sorted(p.topics or ()))
        pattern = re.compile(p.regex)
        return tuple(sorted(n for n in self.image.by_name if pattern.fullmatch(n)))

    def _send_heartbeat(self, p: _ShareProc, req: ShareGroupHeartbeatRequest) -> None:
        cid = self._next_cid()
        self._sent_topics_of.clear()  # one heartbeat in flight per member: keep the last few
        if req.subscribed_topic_names is not None:
            self._sent_topics_of[cid] = req.subscribed_topic_names
        if req.member_epoch >= 0:
            p.hb_cid = cid
            p.hb_sent = self.now
            self.at(self.now + self.scenario.request_timeout_ms, self._hb_timeout,
                    (p, p.gen, cid))
        self.stats["heartbeats"] += 1
        self.counters["messages"] += 1
        self.trace("hb>", p.name, req.member_epoch, "join" if req.member_epoch == 0 else
                   ("leave" if req.member_epoch < 0 else ""))
        msg = (p, p.gen, cid, req, self.coord.generation)
        for t in self.network.route(self.now, f"{p.name}#{p.gen}>", p.name, False):
            self.at(t, self._to_coordinator, msg)

    def _hb_timeout(self, arg: tuple[_ShareProc, int, int]) -> None:
        p, gen, cid = arg
        if p.gen != gen or p.hb_cid != cid:
            self.step -= 1  # superseded: not an event
            return
        self.stats["timeouts"] += 1
        p.hb_cid = 0
        self.trace("hb-timeout", p.name, p.epoch)
        self._heartbeat(p)

    def _to_coordinator(self, msg: tuple[_ShareProc, int, int, Any, int]) -> None:
        p, gen, cid, req, coord_gen = msg
        c = self.coord
        if p.name in self.network.cut or coord_gen != c.generation:
            return
        if not c.up:
            resp = ShareGroupHeartbeatResponse(_E.coordinator_load_in_progress, "loading")
        else:
            res = c.shard.handle(req, self.now)
            self.coordinator_result(res)
            resp = res.response
        self.counters["messages"] += 1
        for t in self.network.route(self.now, f"{p.name}#{gen}<", p.name, True):
            self.at(t, self._to_member, (p, gen, cid, resp, coord_gen))

    def _to_member(self, msg: tuple[_ShareProc, int, int, ShareGroupHeartbeatResponse, int]) -> None:
        p, gen, cid, resp, coord_gen = msg
        if p.gen != gen or not p.alive or p.name in self.network.cut or cid != p.hb_cid \
                or coord_gen != self.coord.generation:
            return
        p.hb_cid = 0
        code = resp.error_code
        if code == 0:
            if resp.member_epoch > 0 and self._sent_topics_of.get(cid) is not None:
                p.sent_topics = self._sent_topics_of[cid]
            self._accept(p, resp)
        elif code in (_E.unknown_member_id, _E.fenced_member_epoch):
            self.stats["fenced"] += 1
            self.trace("fenced", p.name, p.epoch, error_name(code))
            p.epoch = 0
            self._set_assignment(p, frozenset())
            self._heartbeat(p)
            return
        elif code in (_E.coordinator_load_in_progress, _E.coordinator_not_available,
                      _E.not_coordinator):
            p.next_hb = self.now + RETRY_BACKOFF_MS
        else:
            self.trace("fatal", p.name, p.epoch, error_name(code))
            self.stats["fatal_restarts"] += 1
            self._stop(p, "exit")
            self._restart_later(p.name, self.scenario.restart_delay_ms)
            return
        self.at(p.next_hb, self._hb_due, (p, p.gen, p.next_hb))

    def _hb_due(self, arg: tuple[_ShareProc, int, int]) -> None:
        p, gen, at = arg
        if p.gen != gen or p.next_hb != at or p.hb_cid:
            self.step -= 1  # superseded: not an event
            return
        self._heartbeat(p)

    def _accept(self, p: _ShareProc, resp: ShareGroupHeartbeatResponse) -> None:
        """A successful heartbeat answer: I3 on the member side, then epoch and assignment."""
        if resp.member_epoch < p.epoch and resp.member_epoch != 0:
            raise Violation("I3", f"{p.name}: heartbeat answer lowers the member epoch from "
                                  f"{p.epoch} to {resp.member_epoch}")
        coord_epoch = self._member_epochs.get(p.member_id)
        if coord_epoch is not None and resp.member_epoch > coord_epoch:
            raise Violation("I3", f"{p.name}: answer at epoch {resp.member_epoch}, ahead of the "
                                  f"coordinator's {coord_epoch}")
        if resp.member_epoch != p.epoch:
            self.trace("hb<", p.name, resp.member_epoch)
        p.epoch = resp.member_epoch
        p.hb_interval = resp.heartbeat_interval_ms or self.scenario.heartbeat_interval_ms
        p.next_hb = self.now + p.hb_interval
        if resp.assignment is not None:
            self._set_assignment(p, _flatten(resp.assignment))
        self.dirty = True

    def _set_assignment(self, p: _ShareProc, parts: frozenset[TopicIdPartition]) -> None:
        if parts == p.assigned:
            return
        # Assignment changes, as the consumer groups' model counts a move (a partition
        # started by a process other than its last owner): a partition given to a process
        # that is not among its last holders (a process leaves them when it loses the
        # partition to another that holds it, not when it stops or is its last holder), so a
        # process, or its restarted incarnation, given back a partition nobody took in
        # between is no change.
        holders = self._holders
        for tp in p.assigned - parts:
            last = holders.get(tp)
            if last is not None and any(q.alive and q is not p and tp in q.assigned
                                        for q in self.procs.values()):
                last.discard(p.name)
        for tp in parts - p.assigned:
            last = holders.get(tp, set())
            if p.name not in last:
                self.counters["moved"] += 1
                holders[tp] = {q.name for q in self.procs.values()
                               if q.alive and tp in q.assigned} | {p.name}
        p.assigned = parts
        self._count_unowned(self.group())
        self.trace("assigned", p.name, p.epoch, parts)
        self._drive(p)

    # ================================================================== fetching

    def _drive(self, p: _ShareProc) -> None:
        """Fetch when the member has partitions (or acknowledgements) and no batch in hand."""
        if p.alive and not p.fetching and not p.batch and (p.assigned or p.acks):
            self._send_fetch(p)

    def _send_fetch(self, p: _ShareProc, close: bool = False) -> None:
        tps = sorted(p.assigned, key=lambda tp: (str(tp[0]), tp[1]))
        if tps:
            k = p.rotate % len(tps)
            tps = tps[k:] + tps[:k]
            p.rotate += 1
        acks, p.acks = p.acks, {}
        cid = self._next_cid()
        if not close:
            p.fetching = True
            p.fetch_cid = cid
            self.at(self.now + self.scenario.request_timeout_ms + FETCH_MAX_WAIT_MS,
                    self._fetch_timeout, (p, p.gen, cid))
        self.stats["fetches"] += 1
        self.counters["messages"] += 1
        msg = (p, p.gen, cid, p.member_id, tuple(tps), acks, close)
        for t in self.network.route(self.now, f"{p.name}#{p.gen}f>", p.name, False):
            self.at(t, self._to_broker, (msg, self.now + FETCH_MAX_WAIT_MS))

    def _fetch_timeout(self, arg: tuple[_ShareProc, int, int]) -> None:
        p, gen, cid = arg
        if p.gen != gen or p.fetch_cid != cid or not p.fetching:
            self.step -= 1  # superseded: not an event
            return
        self.stats["timeouts"] += 1
        p.fetching = False
        self._drive(p)

    def _to_broker(self, arg: tuple[tuple[Any, ...], int]) -> None:
        msg, wait_until = arg
        p, gen, cid, mid, tps, acks, close = msg
        if p.name in self.network.cut or (not acks and not close and p.gen != gen
                                          and gen != p.lost_gen):
            return  # a long poll of an incarnation that closed its connection (a leave, a
            # kill, a restart): dropped; a lost host's (``lost_gen``) is served
        parts = self.partitions
        try:
            for tp, tp_acks in sorted(acks.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
                if parts.acknowledge(mid, tp, tp_acks, self.now):
                    self.trace("ack-refused", p.name, "", f"{len(tp_acks)} records")
            if close:
                parts.release_member(mid, self.now)
                got: list[Acquired] = []
            else:
                got = parts.acquire(mid, tps, self._max_records(), self.now)
        except ShareInvariantError as e:
            raise Violation(e.invariant, e.message) from None
        self._sample_work()
        self._arm_locks()
        self._check_limit()
        if close:
            return
        if not got and self.now < wait_until:  # long poll: wait for a record
            nxt = min((parts.produced_time(tp, parts.log_end(tp, self.now)) for tp in tps
                       if tp in parts.producing and tp not in parts.gone), default=wait_until)
            at = min(wait_until, max(nxt, self.now + self.scenario.workload.fetch_latency_ms))
            # tried again at each record produced, until something is acquired or the wait is
            # over (Kafka's DelayedShareFetch: tryComplete until MaxWaitMs)
            self.at(at, self._to_broker, ((p, gen, cid, mid, tps, {}, False), wait_until))
            return
        self.counters["messages"] += 1
        for t in self.network.route(self.now, f"{p.name}#{gen}f<", p.name, True):
            self.at(t, self._fetched, (p, gen, cid, got))

    def _max_records(self) -> int:
        wl = self.scenario.workload
        return wl.max_poll_records if not wl.idle else 0

    def _fetched(self, arg: tuple[_ShareProc, int, int, list[Acquired]]) -> None:
        p, gen, cid, got = arg
        if p.gen != gen or not p.alive or p.name in self.network.cut or cid != p.fetch_cid \
                or not p.fetching:  # a duplicate or late answer: its records' locks expire
            return
        p.fetching = False
        if not got:
            self._drive(p)
            return
        now = self.now
        # S1 on the members' side: no other live process holds a live lock on a record got.
        # The live locks are indexed once per answer (the first holder in process order), so
        # the check is linear in the records held, not their product with the records got
        held: dict[tuple[TopicIdPartition, int], str] = {}
        for q in self.procs.values():
            if q is not p and q.alive:
                for b in q.batch:
                    if b.deadline_ms > now:
                        held.setdefault((b.tp, b.offset), q.name)
        if held:
            for a in got:
                holder = held.get((a.tp, a.offset))
                if holder is not None:
                    raise Violation("S1", f"{p.name} got {a.tp[1]}@{a.offset} while {holder} "
                                          f"processes it under a live lock")
        handed = self._handed  # records processed twice: handed to an application again
        for a in got:
            if a.poison:  # a failed attempt's retry, as a consumer group's application's own
                continue
            key = (a.tp, a.offset)
            if key in self._processed:  # processed once already: the comparable count
                self.work["records_reprocessed"] += 1
            elif key in handed:  # handed out before, never processed: not comparable
                self.work[UNPROCESSED] += 1
            else:
                handed.add(key)
        p.batch = got
        wl = self.scenario.workload
        cost = wl.poison_attempt_ms
        if cost is None:
            costs = [wl.processing_ms.draw(self.work_rng) for _ in got]
        else:  # poison as in the field: each delivery costs its attempt (sim.workload's)
            costs = [poison_attempt_cost(self.seed, a.tp, a.offset, a.delivery_count - 1, cost)
                     if a.poison else wl.processing_ms.draw(self.work_rng) for a in got]
        total = sum(costs)
        # each record's end (a slow downstream's delay spent before the batch's records)
        slow = p.slow_delay if now < p.slow_until else 0
        p.batch_ends = [slow + e for e in itertools.accumulate(costs)]
        total += slow
        self._sample_work()
        p.busy_since = now
        self.at(now + max(1, math.ceil(total)), self._batch_done, (p, p.gen, cid))

    def _batch_done(self, arg: tuple[_ShareProc, int, int]) -> None:
        p, gen, _ = arg
        if p.gen != gen or not p.alive:
            return
        self._sample_work()
        self._ack_done(p, p.batch)
        p.batch = []
        p.batch_ends = []
        p.busy_since = None
        self._drive(p)

    def _ack_done(self, p: _ShareProc, records: list[Acquired]) -> None:
        """Acknowledge records processed: ACCEPT, or RELEASE a poison record's failed attempt
        (sent with the member's next ShareFetch, or with its close)."""
        for a in records:
            if a.poison:
                self.stats["poison_attempts"] += 1
                kind = AckType.RELEASE
            else:
                self.work["records_processed"] += 1
                self._processed.add((a.tp, a.offset))
                p.processed += 1
                kind = AckType.ACCEPT
            p.acks.setdefault(a.tp, []).append((a.offset, int(kind)))

    def _arm_locks(self) -> None:
        d = self.partitions.next_deadline()
        if d is not None and (self._lock_timer is None or d < self._lock_timer
                              or self._lock_timer <= self.now):
            self._lock_timer = d
            self.at(d, self._locks_due, d)

    def _locks_due(self, d: int) -> None:
        if d != self._lock_timer:
            self.step -= 1  # superseded: not an event
            return
        self._lock_timer = None
        self.partitions.expire(self.now)
        self.dirty = True
        self._arm_locks()
        self._check_limit()

    # ================================================================== metrics

    def _sample_work(self) -> None:
        """Integrate the lag and the stall up to now (linear between samples)."""
        t0, lag0, stalled = self._sample
        now = self.now
        lag, available = self.partitions.backlog(now)
        if now > t0:
            self.work["lag_record_s"] += (lag0 + lag) / 2 * (now - t0) / 1000.0
            if stalled:
                self.work["stall_ms"] += now - t0
        # working: processing, or holding partitions (as the consumer groups' model counts it)
        working = any(p.busy_since is not None or p.assigned for p in self.procs.values()
                      if p.alive)
        self._sample = (now, lag, not working and available > self._backlog_slack())
        if lag > self.work["lag_peak"]:
            self.work["lag_peak"] = lag
        for w in self._open:  # each open window's peak (the engine reads it only at its ends)
            if lag > w.lag_peak:
                w.lag_peak = lag
        if self._open:  # the broker's share lag, each open window's peak (protocol_summary)
            share_lag = self.partitions.share_lag(now)
            peaks = self._share_lag_peaks
            for w in self._open:
                key = (w.label, w.start_ms)
                if share_lag > peaks.get(key, -1):
                    peaks[key] = share_lag

    def window_figures(self, w: Window) -> dict[str, Any]:
        """The engine's window figures, and :data:`UNPROCESSED` over the window."""
        out = super().window_figures(w)
        end = self.work_totals() if w.work0 is not None else None
        if w.work0 is not None and end is not None:
            out[UNPROCESSED] = round(end[UNPROCESSED] - w.work0.get(UNPROCESSED, 0.0))
        return out

    def work_totals(self) -> dict[str, float] | None:
        if self.scenario.workload.idle:
            return None
        self._sample_work()
        return dict(self.work)

    def work_lag(self) -> float:
        return float(self.partitions.lag(self.now))

    def work_recovered(self) -> bool:
        """No backlog beyond what the members hold or a fetch wait lets accumulate."""
        if self.scenario.workload.idle:
            return True
        return self.partitions.backlog(self.now)[1] <= self._backlog_slack()

    def _backlog_slack(self) -> float:
        """What a keeping-up group has available at any time: a fetch wait's production."""
        wl = self.scenario.workload
        n = self.partitions.live_count()
        return n * wl.records_per_s * (FETCH_MAX_WAIT_MS + wl.fetch_latency_ms) / 1000.0 + n

    # ================================================================== invariants

    def on_records(self, records: list[Any]) -> bool:
        self._group_records = True
        return True

    def on_image_changed(self) -> None:
        """Topics changed (or a subscription): the partitions consumed are those of the topics
        a live process subscribes to; a regex subscriber heartbeats its new topic names."""
        wl = self.scenario.workload
        names = {n for p in self.live() for n in self.subscribed(p)}
        rates = {} if wl.idle else {
            (t.topic_id, i): wl.rate_of(t.name) for name in sorted(names)
            if (t := self.image.topic(name)) is not None for i in range(t.num_partitions)}
        self.partitions.set_topics(rates, self.now)
        for p in self.live():
            if p.regex is not None and p.epoch > 0 and self.subscribed(p) != p.sent_topics:
                self._heartbeat(p)

    _group_records = False

    def after_step(self) -> None:
        if self.full_checks:  # ``--full-checks``: the whole share state after every step
            self.full_check()
        if self._group_records:
            self._group_records = False
            self._check_group()
        if self.dirty and (self._open or self.now >= self.quiet_at):
            self.dirty = False
            if self.converged():
                self.note_converged()
                if self.now >= max(self.quiet_at, self.scenario.end_ms or 0) and \
                        self.end_at is not None and may_end(self) and self._drained():
                    self.end_at = self.now
            else:
                self.note_unconverged()

    def protocol_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"members_live": self.live_count(), "processes": len(self.procs),
                               **self.stats, **{f"share_{k}": v for k, v in
                                                self.partitions.stats.items()}}
        if not self.scenario.workload.idle:
            out["share_lag_peaks"] = [{"disturbance": label, "at_ms": at, "peak": v}
                                      for (label, at), v in sorted(
                                          self._share_lag_peaks.items(), key=lambda kv: kv[0][1])]
            out["workload"] = self.scenario.workload.describe()
            out["work"] = {k: round(v, 3) for k, v in (self.work_totals() or {}).items()}
        return out


def may_end(sim: ShareSimulation) -> bool:
    """The consumer groups' rule for a converged run's end (``sim.application``'s
    ``may_end``), so that both protocols' disturbance windows run as long: once the
    applications caught up (the backlog is what the members hold or a fetch wait lets
    accumulate), or :data:`RECOVERY_WAIT_MS` after the group first converged without
    them (members that cannot keep up never catch up). Without it a share run ended once
    the records produced before the faults stopped were done, and its windows closed with
    a backlog that a consumer group's window went on counting."""
    if sim.work_recovered():
        return True
    if sim.waiting_since is None:
        sim.waiting_since = sim.now
        # the group converged (I5 holds): the run's deadline may wait for the catch-up
        # as long as a consumer group's would
        wait = sim.now + RECOVERY_WAIT_MS
        if sim.end_at is not None and sim.end_at < wait:
            sim.end_at = wait
            sim.at(wait, lambda _: None)  # wakes the loop at the deadline
    if sim.now >= sim.waiting_since + RECOVERY_WAIT_MS:
        return True
    sim._await_recovery()  # look again in a while (a catch-up is no event of its own)
    return False
