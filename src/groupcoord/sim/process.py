"""A simulated process and the messages it exchanges with the coordinator, shared by every
protocol's simulation (``sim.consumer``, ``sim.classic``, ``sim.connect``, ``sim.classic_connect``).
"""

from __future__ import annotations

from typing import Any

from groupcoord.client.consumer import ClientMemberState, ConsumerMember, Partitions

_LEFT = (ClientMemberState.UNJOINED, ClientMemberState.UNSUBSCRIBED, ClientMemberState.FATAL)
_RETRY_BACKOFF_MAX_MS = 1_000
#: The variant whose members compute the assignment themselves (a local uniform assignor).
CLIENT_VARIANT = "client"


class Proc:
    """A simulated consumer process (one name, successive incarnations)."""

    __slots__ = ("alive", "consuming", "gen", "in_ch", "inc_seen", "index", "instance_id",
                 "leaving", "member", "name", "next_commit_at", "out_ch", "ready_at", "regex",
                 "slow_delay", "slow_until", "tick_at", "topics")

    def __init__(self, name: str, index: int, member: ConsumerMember) -> None:
        self.name = name
        self.index = index
        self.gen = 0
        self.member = member
        self.alive = False
        self.instance_id: str | None = None
        self.topics: tuple[str, ...] | None = None
        self.regex: str | None = None
        self.tick_at: int | None = None
        self.next_commit_at: int | None = None
        #: The coordinator's incarnation of this member as of the last accepted success (-1:
        #: none); the process is fenced when the coordinator's differs.
        self.inc_seen = -1
        #: What the process consumes, as the invariant checker last saw it.
        self.consuming: Partitions = frozenset()
        self.slow_until = 0
        self.slow_delay = 0
        self.leaving = False
        self.out_ch = self.in_ch = ""  # network channel names of the current incarnation
        #: Before this time the incarnation is still starting (the workload's ``startup_ms``):
        #: it sends nothing.
        self.ready_at = 0


class _Msg:
    __slots__ = ("body", "cid", "codes", "coord_gen", "gen", "inc", "proc")

    def __init__(self, proc: Proc, gen: int, cid: int, body: Any, coord_gen: int,
                 inc: int = -1, codes: set[int] | None = None) -> None:
        self.proc = proc
        self.gen = gen
        self.cid = cid
        self.body = body
        self.coord_gen = coord_gen
        self.inc = inc
        #: A commit answer's error codes (:func:`_commit_codes`), when the simulator read them
        #: already (I6, :meth:`ConsumerSimulation._check_commit`).
        self.codes = codes

