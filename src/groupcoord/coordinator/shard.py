"""A coordinator shard: one coordinator partition's groups, as a pure state machine.

docs/design.md "The core contract": ``handle(request, now_ms) -> Result``; state changes only through
``replay(record)`` (handlers apply each record as they produce it, through ``append``); time is
an argument and timers are data (``expire_timers``); member ids come from an injected source.
A shard rebuilt by replaying its log equals the live shard (``state_digest``).

The shard is the frame; each group type is a manager (``modern/consumer/handlers.py``'s
``ConsumerGroupManager``, ``modern/connect/handlers.py``'s ``ConnectGroupManager``,
``classic/handlers.py``'s ``ClassicGroupManager``, ``modern/share/handlers.py``'s
``ShareGroupManager`` for KIP-932 share groups) that registers its request handlers, the
record types it replays and its timer kinds. The shard itself handles what all group types
share: offsets, ListGroups, DeleteGroups and the dynamic group configurations. All group types
share one group id space (``groups``); the shard reaches a group's manager by its
``group_type`` (``group_types``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from functools import partial
from operator import itemgetter
from typing import Any

from groupcoord.coordinator import offsets as offsets_mod
from groupcoord.coordinator import transactional_offsets
from groupcoord.coordinator.assignors import ASSIGNORS
from groupcoord.coordinator.assignors.base import PartitionAssignor, PartitionAssignorError
from groupcoord.coordinator.classic.handlers import ClassicGroupManager
from groupcoord.coordinator.config import (
    GROUP_CONFIG_ALIASES,
    SHARE_GROUP_CONFIGS,
    CoordinatorConfig,
    GroupConfig,
    ShareGroupConfig,
    canonical_group_config_name,
    effective_group_config,
    effective_share_group_config,
    validate_group_configs,
)
from groupcoord.coordinator.context import GroupType, Handler, Replayer, TimerHandler
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.ids import MemberIdSource, counter_member_ids
from groupcoord.coordinator.messages import (
    AlterGroupConfigsRequest,
    AlterGroupConfigsResponse,
    CompleteTransactionRequest,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupConfigsRequest,
    DescribeGroupConfigsResponse,
    GroupConfigEntry,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from groupcoord.coordinator.modern.connect.handlers import ConnectGroupManager
from groupcoord.coordinator.modern.consumer.handlers import REBALANCE, SESSION, ConsumerGroupManager
from groupcoord.coordinator.modern.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.modern.share.handlers import ShareGroupManager
from groupcoord.coordinator.offsets_retention import OffsetsRetention
from groupcoord.coordinator.pending_offsets import PendingOffsets
from groupcoord.coordinator.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    RecordType,
    group_configuration_record,
)
from groupcoord.coordinator.result import Result
from groupcoord.coordinator.timers import TimerChange, TimerKey, Timers
from groupcoord.coordinator.topics import EMPTY_IMAGE, MetadataImage
from groupcoord.protocol.errors import CoordinatorError, ErrorCode, error_name

log = logging.getLogger(__name__)

_E = ErrorCode


_first = itemgetter(0)
_second = itemgetter(1)

#: How often one expire_timers call fires the same timer (rescheduled at the same instant).
_MAX_FIRINGS_PER_TIMER = 100


class Shard:
    """One coordinator shard. Not thread-safe: drivers serialise calls (an event loop)."""

    def __init__(
        self,
        shard_id: int = 0,
        config: CoordinatorConfig | None = None,
        metadata: MetadataImage = EMPTY_IMAGE,
        member_ids: MemberIdSource | None = None,
        assignors: Mapping[str, PartitionAssignor] | None = None,
    ) -> None:
        self.shard_id = shard_id
        self.config = config or CoordinatorConfig()
        self.metadata = metadata
        self._member_ids = member_ids or counter_member_ids(f"shard{shard_id}-member-")
        self.assignors: Mapping[str, PartitionAssignor] = assignors or ASSIGNORS
        for name in self.config.consumer_assignors:
            if name not in self.assignors:
                raise CoordinatorError(_E.invalid_config,
                                       f"group.consumer.assignors names unknown assignor {name!r}")
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[tuple[str, int], OffsetCommitValue]] = {}
        #: Pending transactional offsets and transactional producers (KIP-98, KIP-447).
        self.txn_offsets = PendingOffsets()
        self.group_configs: dict[str, dict[str, str]] = {}
        self._group_config_cache: dict[str, GroupConfig] = {}
        self._share_config_cache: dict[str, ShareGroupConfig] = {}
        self.timers = Timers()
        #: Groups whose rebalance the driver holds (a test double's control plane,
        #: ``server/control.py``): their heartbeats are answered as usual but no new target
        #: assignment is computed until the hold is released. Driver configuration, like
        #: ``metadata``: not a record, not replayed (a reloaded shard starts without holds; the
        #: driver sets them again); the records written while held are ordinary ones, so a
        #: rebuild from the log gives the same state.
        self.held_groups: frozenset[str] = frozenset()
        #: The time of the request being handled (deadlines are set deep inside handlers).
        self.now = 0
        #: The driver's clock (milliseconds, the clock ``now`` comes from), read only through
        #: :meth:`finished_at` to stamp the end of a target assignment computation: Kafka's
        #: ``TargetAssignmentBuilder`` records the time the assignor finished, and assignment
        #: batching counts ``group.consumer.assignment.interval.ms`` from there. Driver
        #: configuration, like ``metadata``: None (the simulator, tests) means computing takes
        #: no time, the end is the event's time. The stamp is written in the record, so replay
        #: never reads it.
        self.finish_clock: Callable[[], int] | None = None
        self._records: list[Record] = []
        self._timer_changes: list[TimerChange] = []
        self._completions: list[tuple[Hashable, Any]] = []
        self._token: Hashable | None = None
        self._handlers: dict[type, Handler] = {}
        self._replayers: dict[RecordType, Replayer] = {}
        self._timer_handlers: dict[str, TimerHandler] = {}
        self._error_responses: dict[type, Callable[[Any, CoordinatorError], Any]] = {}

        self.register_handler(ListGroupsRequest, self._list_groups)
        self.register_handler(DeleteGroupsRequest, self._delete_groups)
        # ``partial`` (C) binds the shard: no Python-level wrapper call per request.
        self.register_handler(OffsetCommitRequest, partial(offsets_mod.commit, self))
        self.register_handler(OffsetFetchRequest, partial(offsets_mod.fetch, self))
        self.register_handler(OffsetDeleteRequest, partial(offsets_mod.delete, self))
        self.register_handler(TxnOffsetCommitRequest, partial(transactional_offsets.commit, self))
        self.register_handler(CompleteTransactionRequest,
                              partial(transactional_offsets.complete, self))
        self.register_handler(DescribeGroupConfigsRequest, self._describe_group_configs)
        self.register_handler(AlterGroupConfigsRequest, self._alter_group_configs)
        # ``partial`` (C) binds the shard: one Python call per offset record replayed (most
        # of a log), not two.
        self.register_replayer(RecordType.OFFSET_COMMIT, partial(offsets_mod.replay, self))
        self.register_replayer(RecordType.GROUP_CONFIGURATION, self._replay_group_configuration)
        self.register_replayer(RecordType.TXN_OFFSET_COMMIT,
                               partial(transactional_offsets.replay_offset, self))
        self.register_replayer(RecordType.TXN_PRODUCER,
                               partial(transactional_offsets.replay_producer, self))
        self.register_error_response(
            ConsumerGroupHeartbeatRequest,
            lambda r, e: ConsumerGroupHeartbeatResponse(error_code=e.code, error_message=e.message))
        self.consumer = ConsumerGroupManager(self)
        self.connect = ConnectGroupManager(self)  # the connect group type (the Connect draft)
        self.classic = ClassicGroupManager(self)
        self.share = ShareGroupManager(self)  # share groups (KIP-932)
        #: Every group type's manager by ``Group.group_type`` (what the shard asks of a group
        #: whatever its type: ``delete_group``).
        self.group_types: dict[str, GroupType] = {
            "consumer": self.consumer, "connect": self.connect, "classic": self.classic,
            "share": self.share}
        self.retention = OffsetsRetention(self)  # Kafka's offsets.retention.minutes

    # ================================================================== registration

    def register_handler(self, request_type: type, handler: Handler) -> None:
        self._handlers[request_type] = handler

    def register_replayer(self, record_type: RecordType, replayer: Replayer) -> None:
        self._replayers[record_type] = replayer

    def register_timer(self, kind: str, handler: TimerHandler) -> None:
        """Timer keys are tuples whose first element is ``kind``."""
        self._timer_handlers[kind] = handler

    def register_error_response(self, request_type: type,
                                make: Callable[[Any, CoordinatorError], Any]) -> None:
        self._error_responses[request_type] = make

    # ================================================================== driver API

    def handle(self, request: Any, now_ms: int, token: Hashable | None = None) -> Result[Any]:
        """Handle one request at ``now_ms``; errors become error responses.

        ``token`` identifies the request to the driver (connection and correlation id, say):
        a handler that answers later (``DEFERRED``) hands it back in ``Result.completions``.
        """
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"no handler for {type(request).__name__}")
        self._begin(now_ms)
        self._token = token
        try:
            response = handler(request, now_ms)
        except CoordinatorError as e:
            _log_refusal(request, e)
            response = self._error_response(request, e)
        except PartitionAssignorError as e:
            log.error("assignor failed: %s", e)
            response = self._error_response(request, CoordinatorError(
                _E.unknown_server_error, f"Failed to compute a new target assignment: {e}"))
        return self._result(response)

    def replay(self, record: Record) -> None:
        """Apply one record: the only place state changes."""
        replayer = self._replayers.get(record.key.type)
        if replayer is None:
            raise ValueError(f"no replayer for record type {record.key.type!r}")
        replayer(record)

    def replay_all(self, records: Iterable[Record]) -> None:
        """Apply records in order, :meth:`replay` on each (a rebuild from a log)."""
        for record in records:
            self.replay(record)

    def expire_timers(self, now_ms: int) -> list[Result[None]]:
        """Fire every timer due at ``now_ms`` (session expiry, rebalance timeouts, ...),
        including timers that the fired ones schedule at or before ``now_ms`` (a zero
        timeout): when this returns, nothing is due at ``now_ms``. One at a time, in deadline
        order: a timer that an earlier one rescheduled or cancelled is no longer due and does
        not fire (as upstream's coordinator timer drops an overridden task; sim seed 17516 of
        classic-connect: a join phase completed by one member's expiry renewed the sessions
        of the others, and a renewed session due at the same instant still expired)."""
        results: list[Result[None]] = []
        fired: dict[TimerKey, int] = {}
        while (nxt := self.timers.pop_next_due(now_ms)) is not None:
            key, payload = nxt
            fired[key] = fired.get(key, 0) + 1
            if fired[key] > _MAX_FIRINGS_PER_TIMER:  # a handler rescheduling itself at now: a bug
                log.error("timer %r keeps rescheduling itself at %d ms", key, now_ms)
                self.timers.schedule(key, now_ms, payload)
                break
            self._begin(now_ms)
            self._timer_changes.append(TimerChange(key, None))
            handler = self._timer_handlers.get(key[0])
            if handler is None:
                log.warning("no handler for timer %r", key)
                continue
            handler(key, payload)
            if self._records or self._completions or len(self._timer_changes) > 1:
                results.append(self._result(None))
        return results

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def update_metadata(self, image: MetadataImage, now_ms: int) -> Result[None]:
        """A new topic image: bump the epoch of every group whose subscribed topics changed."""
        self._begin(now_ms)
        self.metadata = image
        self.consumer.on_metadata_update()
        self.connect.on_metadata_update()
        self.share.on_metadata_update()
        return self._result(None)

    def on_loaded(self, now_ms: int) -> Result[None]:
        """The spec's load duties ("Fail Over") after a shard was rebuilt from its log."""
        self._begin(now_ms)
        self.consumer.on_loaded()
        self.connect.on_loaded()
        self.classic.on_loaded()
        self.share.on_loaded()
        self.retention.on_loaded()
        return self._result(None)

    def group_config(self, group_id: str) -> GroupConfig:
        cfg = self._group_config_cache.get(group_id)
        if cfg is None:
            cfg = effective_group_config(self.config, self.group_configs.get(group_id, {}))
            self._group_config_cache[group_id] = cfg
        return cfg

    def share_group_config(self, group_id: str) -> ShareGroupConfig:
        """The share settings of ``group_id`` (KIP-932 "Configuration"): its group configs, else
        the broker's. What share partitions read per group (lock duration, delivery count
        limit, auto offset reset, isolation level); the share group type reads its session
        timeout, heartbeat and assignment intervals here."""
        cfg = self._share_config_cache.get(group_id)
        if cfg is None:
            cfg = effective_share_group_config(self.config, self.group_configs.get(group_id, {}))
            self._share_config_cache[group_id] = cfg
        return cfg

    def new_member_id(self) -> str:
        return self._member_ids()

    # ================================================================== handler plumbing

    def append(self, record: Record) -> None:
        """Apply a record now and hand it to the driver with the result."""
        self.replay(record)
        self._records.append(record)

    def append_batch(self, records: list[Record], apply: Callable[[list[Record]], None]) -> None:
        """Apply ``records`` with ``apply`` and hand them to the driver, as ``append`` on each
        in order would: ``apply`` must have the effect of replaying each record in order (a
        group type's replay of many records of one type at once: one dispatch, not one per
        record). A rebuild replays them one by one; I4 compares the two."""
        apply(records)
        self._records.extend(records)

    def schedule(self, key: TimerKey, deadline: int, payload: Any = None) -> None:
        self.timers.schedule(key, deadline, payload)
        self._timer_changes.append(TimerChange(key, deadline))

    def cancel(self, key: TimerKey) -> None:
        if self.timers.cancel(key):
            self._timer_changes.append(TimerChange(key, None))

    def complete(self, token: Hashable, response: Any) -> None:
        """Answer an earlier deferred request (its response goes out with this result)."""
        self._completions.append((token, response))

    @property
    def token(self) -> Hashable | None:
        """The driver's token of the request being handled."""
        return self._token

    def finished_at(self) -> int:
        """The time at which work of the current event finishes (:attr:`finish_clock`; never
        before the event's time)."""
        clock = self.finish_clock
        return self.now if clock is None else max(self.now, clock())

    def _begin(self, now_ms: int) -> None:
        self._records = []
        self._timer_changes = []
        self._completions = []
        self._token = None
        self.now = now_ms

    def _result(self, response: Any) -> Result[Any]:
        return Result(response, self._records, self._timer_changes, self._completions)

    def _error_response(self, request: Any, e: CoordinatorError) -> Any:
        """The request's error response (its registered maker, else the offsets module's)."""
        make = self._error_responses.get(type(request))
        if make is not None:
            return make(request, e)
        return offsets_mod.error_response(request, e)

    # ================================================================== shared replay

    def _replay_group_configuration(self, record: Record) -> None:
        gid = record.key.group_id
        self._group_config_cache.pop(gid, None)
        self._share_config_cache.pop(gid, None)
        if record.value is None:
            self.group_configs.pop(gid, None)
        else:
            self.group_configs[gid] = dict(record.value.configs)  # type: ignore[union-attr]

    # ================================================================== list / delete

    def _list_groups(self, r: ListGroupsRequest, now: int) -> ListGroupsResponse:
        states = {s.lower() for s in r.states_filter}
        types = {t.lower() for t in r.types_filter}
        out = []
        for gid in sorted(set(self.groups) | set(self.offsets) | set(self.txn_offsets.pending)):
            group = self.groups.get(gid)
            if group is not None:
                listed = ListedGroup(gid, group.protocol_type, group.state_name(),
                                     group.group_type)
            else:  # offsets only (or pending ones): an empty classic group, as Kafka lists it
                listed = ListedGroup(gid, "", "Empty", "classic")
            if states and listed.group_state.lower() not in states:
                continue
            if types and listed.group_type.lower() not in types:
                continue
            out.append(listed)
        return ListGroupsResponse(tuple(out))

    def _delete_groups(self, r: DeleteGroupsRequest, now: int) -> DeleteGroupsResponse:
        results = []
        for gid in r.group_ids:
            group = self.groups.get(gid)
            if group is None and gid not in self.offsets and gid not in self.txn_offsets.pending:
                results.append(DeletableGroupResult(gid, _E.group_id_not_found,
                                                    f"Group {gid} not found."))
                continue
            if group is not None and not group.is_empty():
                results.append(DeletableGroupResult(gid, _E.non_empty_group,
                                                    f"Group {gid} is not empty."))
                continue
            self.delete_group(gid)
            results.append(DeletableGroupResult(gid))
        return DeleteGroupsResponse(tuple(results))

    def delete_group(self, gid: str) -> None:
        """Tombstones for an empty group and all its offsets (configs are kept, as the spec says)."""
        for (topic, partition) in sorted(self.offsets.get(gid, {})):
            self.append(Record(OffsetCommitKey(gid, topic, partition), None))
        transactional_offsets.drop_group(self, gid)
        group = self.groups.get(gid)
        manager = None if group is None else self.group_types.get(group.group_type)
        if manager is not None:
            manager.delete_group(group)

    # ================================================================== group configs

    def _describe_group_configs(self, r: DescribeGroupConfigsRequest,
                                now: int) -> DescribeGroupConfigsResponse:
        overrides = self.group_configs.get(r.group_id, {})
        eff = self.group_config(r.group_id)
        share = self.share_group_config(r.group_id)
        values = {"group.consumer.session.timeout.ms": str(eff.session_timeout_ms),
                  "group.consumer.heartbeat.interval.ms": str(eff.heartbeat_interval_ms),
                  "group.consumer.assignment.interval.ms": str(eff.assignment_interval_ms),
                  **dict(zip(SHARE_GROUP_CONFIGS, (
                      str(share.session_timeout_ms), str(share.heartbeat_interval_ms),
                      str(share.record_lock_duration_ms), str(share.delivery_count_limit),
                      share.auto_offset_reset, share.isolation_level,
                      str(share.assignment_interval_ms)), strict=True))}
        if r.names is None:
            wanted = [(n, n) for n in sorted(values)]
        else:
            # Answered under the name asked for (Kafka 4.x spelling or the spec's); names the
            # coordinator does not know are left out, as Kafka's DescribeConfigs does.
            wanted = [(n, GROUP_CONFIG_ALIASES[n]) for n in r.names if n in GROUP_CONFIG_ALIASES]
        return DescribeGroupConfigsResponse(r.group_id, tuple(
            GroupConfigEntry(asked, values[canonical], canonical not in overrides)
            for asked, canonical in wanted))

    def _alter_group_configs(self, r: AlterGroupConfigsRequest,
                             now: int) -> AlterGroupConfigsResponse:
        if not r.group_id:
            raise CoordinatorError(_E.invalid_request, "The group id can't be empty.")
        configs = dict(self.group_configs.get(r.group_id, {}))
        for op in r.ops:
            name = canonical_group_config_name(op.name)
            if op.op == "set":
                if op.value is None:
                    raise CoordinatorError(_E.invalid_config, f"{name}: SET needs a value")
                configs[name] = op.value
            elif op.op == "delete":
                configs.pop(name, None)
            else:
                raise CoordinatorError(_E.invalid_request,
                                       f"Unsupported config operation {op.op!r} for {name}")
        configs = validate_group_configs(self.config, configs)
        if not r.validate_only and configs != self.group_configs.get(r.group_id, {}):
            self.append(group_configuration_record(r.group_id, configs or None))
        return AlterGroupConfigsResponse(r.group_id)

    # ================================================================== equality (I4)

    def state_digest(self) -> dict[str, Any]:
        """A canonical, comparable view of all state (timers excluded): equal for a live shard
        and the same shard rebuilt from its log."""
        return {
            "groups": {gid: g.digest() for gid, g in sorted(self.groups.items())},
            "offsets": {gid: [(k, v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                               v.expire_timestamp) for k in _sorted_offset_keys(offs)
                              for v in (offs[k],)]
                        for gid, offs in sorted(self.offsets.items())},
            "configs": dict(sorted(self.group_configs.items())),
            "transactions": self.txn_offsets.digest(),
        }


def _sorted_offset_keys(offs: Mapping[tuple[str, int], Any]) -> list[tuple[str, int]]:
    """``sorted(offs)``, as a sort by partition and then a stable sort by topic: the same order
    (topics are str, partitions int), in about half the cost of one sort comparing tuples
    (every I4 checkpoint digests ~1,000 offsets twice). Keys are unique, so their
    order is the order of the digest's tuples (tests/test_coordinator_hot_paths.py)."""
    keys = sorted(offs, key=_second)
    keys.sort(key=_first)
    return keys


__all__ = ["REBALANCE", "SESSION", "Result", "Shard"]


def _log_refusal(request: Any, e: CoordinatorError) -> None:
    """A refused request, at DEBUG: the group, the member, the API and the error (a refusal is
    the client's business, not the operator's; DEBUG lets one follow a client that misbehaves)."""
    if log.isEnabledFor(logging.DEBUG):
        log.debug("[%s] %s from member %r refused: %s (%d) %s",
                  getattr(request, "group_id", None), type(request).__name__,
                  getattr(request, "member_id", None), error_name(e.code), e.code, e.message)
