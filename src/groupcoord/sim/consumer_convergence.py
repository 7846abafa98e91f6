"""Convergence of the consumer-group simulation (``sim.consumer``, whose docstring states I5 and
its bound): the universe of subscribed partitions, whether nothing is pending and every live
process reached the target, the I5 bound, and what an I5 violation says keeps the group from it.
"""

from __future__ import annotations

from typing import Any

from groupcoord.client.consumer import ClientMemberState
from groupcoord.coordinator.modern.subscription import regex_matches
from groupcoord.sim.consumer_invariants import ConsumerInvariants
from groupcoord.sim.engine import Violation
from groupcoord.sim.network import REORDER_SPIKE
from groupcoord.sim.process import _LEFT, _RETRY_BACKOFF_MAX_MS, CLIENT_VARIANT, Proc


class ConsumerConvergence(ConsumerInvariants):
    """Convergence (I5) of :class:`groupcoord.sim.consumer.ConsumerSimulation`."""

    #: The I5 deadline the faults' stop set (``end_at`` comes earlier once the group converged
    #: and the applications caught up; a step that unconverges the group puts it back).
    _deadline_at: int | None = None

    def after_step(self) -> None:
        """The incremental checks of one step (I1 and I6 ran inside it): I3 on the group's
        epochs and I2 on a newly installed target when the step wrote group records; then
        convergence, when something changed, for the open disturbance windows and I5. A run
        that was to end at this instant, converged and caught up, but was disturbed again by
        another event of the same millisecond (a classic member's metadata refresh
        rejoining), goes on to its I5 deadline: its end was decided on a convergence that no
        longer holds."""
        if not (self.dirty or self._group_records or self._universe_dirty):
            return
        if self._universe_dirty:
            self._recompute_universe()
            self.app.universe_changed()
        if self._group_records:
            self._group_records = False
            self._check_group()
        if self.dirty and (self._open or self.now >= self.quiet_at):
            self.dirty = False
            if self._deadline_at is None and self.end_at is not None:
                self._deadline_at = self.end_at  # (the faults' stop set it, this step)
            if self.converged():
                self.note_converged()
                if self.now >= self.quiet_at and self.end_at is not None and \
                        self.now >= (self.scenario.end_ms or 0) and self.app.may_end():
                    # converged after the faults stopped, the applications caught up: done
                    self.end_at = self.now
            else:
                self.note_unconverged()
                if self.end_at is not None and self.end_at < (self._deadline_at or 0):
                    self.end_at = self._deadline_at


    # ================================================================== universe, convergence

    def on_image_changed(self) -> None:
        self._universe_dirty = True

    def _recompute_universe(self) -> None:
        self._universe_dirty = False
        image = self.image
        subs = sorted({(p.topics, p.regex) for p in self.procs.values()
                       if p.alive and p.member is not None and p.member.state not in _LEFT},
                      key=repr)
        key = (id(image), tuple(subs))
        if key == self._universe_key:
            return
        self._universe_key = key
        names: set[str] = set()
        for topics, regex in subs:
            if topics:
                names.update(t for t in topics if t in image.by_name)
            if regex:
                names.update(regex_matches(regex, sorted(image.by_name)))
        u = frozenset((image.by_name[n].topic_id, i) for n in names
                      for i in range(image.by_name[n].num_partitions))
        self.universe = u
        self.set_unowned(sum(1 for tp in u if tp not in self.legit))

    def _proc_converged(self, p: Proc, members: dict[str, Any], epoch: int) -> bool:
        m = p.member
        if m.state is not ClientMemberState.STABLE or m.member_epoch != epoch:
            return False
        cm = members.get(m.member_id)
        if cm is None or not cm.is_reconciled_to(epoch) or cm.partitions_pending_revocation:
            return False
        # ... and no subscription change the coordinator has not seen yet
        return cm.subscribed_topic_regex == m.subscribed_regex and (
            m.subscribed_topics is None or cm.subscribed_topic_names == m.subscribed_topics)

    def _regexes_resolved(self, g: Any) -> bool:
        """No regex resolution is pending: every subscribed regex's recorded resolution holds
        every topic of the image it matches (the simulation has no authorizer). A topic created
        since the last resolution is resolved by a member's next heartbeat (as Kafka's regex
        refresh), which the group is still waiting for."""
        names = self.image.by_name
        for rx in g.subscribed_regexes:
            resolved = g.resolved_regexes.get(rx)
            if resolved is None or any(n not in resolved for n in regex_matches(rx, names)):
                return False
        return True

    def settled(self) -> bool:
        """Nothing is pending that will still change the group by itself: the coordinator is
        up, nobody is cut off, no restart is due, and no request of a dead incarnation (a
        process that crashed or exited since it sent it) is still on its way to the
        coordinator. Such a request still arrives and is handled (the bytes were sent): a
        join of a crashed process makes the coordinator add a member nobody runs, which only
        its session timeout removes. Requests of live processes need no test: what they may
        still change shows in their member's state (joining, leaving, an ack pending)."""
        if not self.coord.up or self.network.cut or self.pending_restarts:
            return False
        return not self._dead_in_flight  # (kept by ``sim.consumer`` as requests come and go)

    def converged(self) -> bool:
        """Every live process is a member at the group epoch owning exactly its target, the
        coordinator has no other member, nothing is pending (:meth:`settled`). Cheap tests
        first; the process that failed the last check is tested first (it usually still
        blocks)."""
        if not self.settled():
            return False
        g = self._group()
        if g is None or not g.members:  # an empty group converged once nobody is running
            return not any(p.member.state not in _LEFT for p in self.live())
        members = g.members
        epoch = g.group_epoch
        if epoch != g.assignment_epoch:
            return False
        left = _LEFT
        b = self._blocker
        if b is not None and b.alive and b.member.state not in left \
                and not self._proc_converged(b, members, epoch):
            return False
        n = 0
        for p in self.live():
            if p.member.state in left:
                continue
            n += 1
            if not self._proc_converged(p, members, epoch):
                self._blocker = p
                return False
        self._blocker = None
        if n != len(members):
            return False
        if g.subscribed_regexes and not self._regexes_resolved(g):
            return False
        for p in self.live():
            m = p.member
            if m.state in left:
                continue
            if self.is_fenced(p):
                return False
            target = g.target_of(m.member_id)
            if sum(len(ps) for ps in target.values()) != len(m.owned):
                return False
            if self.coord_held.get(m.member_id, frozenset()) != m.owned:
                return False
        return True

    def check_convergence(self, final: bool) -> None:
        if not final:
            return
        if self.end_at is not None and self.now >= self.end_at and not self.converged():
            raise Violation("I5", f"not converged {self.now - self.quiet_at} ms after the faults "
                                  f"stopped (bound {self.i5_bound()} ms): "
                                  f"{self._convergence_gap()}")

    def _convergence_gap(self) -> str:
        return self.describe_gap(self._group())

    def describe_gap(self, g: Any) -> str:
        """What keeps group ``g`` from convergence, for an I5 violation: the group
        (:meth:`gap_group`), then the members (:meth:`gap_members`)."""
        if not self.coord.up:
            return "coordinator down"
        if g is None:
            return "no group"
        return "; ".join([self.gap_group(g), *self.gap_members(g)])

    def gap_group(self, g: Any) -> str:
        return (f"group epoch {g.group_epoch}, assignment epoch {g.assignment_epoch}, "
                f"state {g.state().value}")

    def gap_members(self, g: Any) -> list[str]:
        """Each member of the coordinator or live process: its epoch on either side."""
        parts = []
        live = {p.member.member_id: p for p in self.live() if p.member.state not in _LEFT}
        for mid in sorted(set(g.members) | set(live)):
            cm = g.members.get(mid)
            p = live.get(mid)
            mine = "-" if p is None else f"e={p.member.member_epoch} {p.member.state.value}"
            parts.append(f"{p.name if p else '(no process)'}/{mid}: coordinator "
                         f"{'-' if cm is None else f'e={cm.member_epoch} {cm.state.name}'}, "
                         f"{self.member_word} {mine}")
        return parts

    def i5_bound(self) -> int:
        """The I5 bound of the module docstring (L includes the reorder spike)."""
        sc = self.scenario
        lat = self.scenario.latency.max_ms * (1 + REORDER_SPIKE)
        bound = (sc.session_timeout_ms + sc.restart_delay_ms + sc.request_timeout_ms
                 + _RETRY_BACKOFF_MAX_MS + 3 * sc.heartbeat_interval_ms + 20 * lat
                 + sc.assignment_interval_ms + sc.heartbeat_spread_ms)
        if self.variant == CLIENT_VARIANT:
            bound += (sc.rebalance_timeout_ms + sc.request_timeout_ms + _RETRY_BACKOFF_MAX_MS
                      + 2 * sc.heartbeat_interval_ms + 10 * lat)
        # a working member answers a rebalance when its application next polls
        # (``sim.application``): a revocation, its acknowledgement, the next owner's start
        bound += 3 * self.app.reaction_bound_ms()
        return int(bound)
