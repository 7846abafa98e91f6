"""Idle members of a KIP-848 consumer group on the wire, as the coordinator describes them.

With more consumers than partitions some members own nothing. KIP-848 ("Reconciliation"): a
member has reconciled when its member epoch reaches the group's target assignment epoch, and a
member whose target assignment is empty is then converged owning nothing. A real client says
nothing of it: librdkafka 2.16 (``group.protocol=consumer``) calls no rebalance callback for an
empty first assignment, so a wire member that owns nothing never logs an ``assign`` line, and
``lab.wire_metrics``' convergence (every live member has had its first assignment) never held
at 12 consumers on 4 partitions: each run waited out its convergence timeout.

:class:`IdleWatch` polls ConsumerGroupDescribe every ``DESCRIBE_EVERY_S`` in a thread and notes
when each member (by member id) is first seen at the target assignment epoch, with that target
up to date with the group's epoch, with an empty assignment and an empty target;
:func:`idle_events` turns those into the member's ``idle`` log lines (its client id is its wire
name), which ``lab.wire_metrics`` reads as that member having joined owning nothing. A sighting
belongs to the member's process only if the coordinator first saw that member id after the
process started (a restarted process is a new member id; the previous one may still be
described until its session expires). It also keeps, per answer, whether every member is at
the group's epoch (the target up to date with it) and which client ids are members:
``lab.wire_metrics`` asks of a converged KIP-848 group, as the simulator does and as the share
wire asks of a share group, that the coordinator's members be the live processes, all at the
group's epoch (a lost host that owned nothing leaves the group at its session timeout: until
then the group has not converged, though no partition moved).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

#: How often the coordinator is asked (a member's heartbeat is seconds; this is well under it).
DESCRIBE_EVERY_S = 0.2


class IdleWatch:
    """Polls ConsumerGroupDescribe for ``group`` in a thread (see the module doc)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        #: member id -> (client id, first seen, first seen idle at the target epoch or None)
        self.members: dict[str, tuple[str, float, float | None]] = {}
        #: (t, every member at the group's epoch, client ids of the members) per answer
        self.described: list[tuple[float, bool, tuple[str, ...]]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="consumer-describe", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)

    def _run(self) -> None:
        from groupcoord.protocol.client import KafkaClient
        from groupcoord.protocol.versions import ApiKey

        with KafkaClient(self.bootstrap) as c:
            while not self.stop.is_set():
                with contextlib.suppress(OSError, ValueError):
                    r = c.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[self.group],
                               include_authorized_operations=False)
                    self.note(time.time(), r.groups[0])
                self.stop.wait(DESCRIBE_EVERY_S)

    def note(self, t: float, g: Any) -> None:
        """Record one ConsumerGroupDescribe group entry seen at ``t``."""
        if int(g.error_code) != 0:
            with self.lock:
                self.described.append((t, False, ()))
            return
        # the target covers the group's membership (a member that joined since gets an empty
        # assignment at the previous target's epoch until the assignor has run)
        target = int(g.assignment_epoch) == int(g.group_epoch)
        settled = target and all(int(m.member_epoch) == int(g.group_epoch) for m in g.members)
        with self.lock:
            self.described.append((t, settled, tuple(m.client_id for m in g.members)))
            for m in g.members:
                client, first, idle = self.members.get(m.member_id, (m.client_id, t, None))
                if idle is None and target and int(m.member_epoch) == int(
                        g.assignment_epoch) and not any(
                        tp.partitions for tp in m.assignment.topic_partitions) and not any(
                        tp.partitions for tp in m.target_assignment.topic_partitions):
                    idle = t
                self.members[m.member_id] = (client, first, idle)

    def answers(self) -> list[tuple[float, bool, tuple[str, ...]]]:
        """(t, settled, client ids) of every answer so far, only where it changed."""
        with self.lock:
            return [d for i, d in enumerate(self.described)
                    if i == 0 or d[1:] != self.described[i - 1][1:]]

    def seen(self) -> list[tuple[str, float, float]]:
        """(client id, first seen, first seen idle) of every member seen idle so far."""
        with self.lock:
            return [(c, f, i) for c, f, i in self.members.values() if i is not None]


def idle_events(seen: list[tuple[str, float, float]],
                lifetimes: dict[str, list[tuple[float, float | None]]]
                ) -> dict[str, list[dict[str, Any]]]:
    """Per member name, its ``idle`` log lines: a member id first seen idle at ``t``, whose
    client id is the name, belongs to the name's process that started before the coordinator
    first saw that member id (the latest such) and was still running at ``t``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for client, first, t in seen:
        starts = [(s, e) for s, e in lifetimes.get(client, ()) if s <= first]
        if not starts:
            continue
        _, ended = max(starts, key=lambda span: span[0])
        if ended is None or t < ended:
            out.setdefault(client, []).append({"t": t, "e": "idle"})
    return out


__all__ = ["DESCRIBE_EVERY_S", "IdleWatch", "idle_events"]
