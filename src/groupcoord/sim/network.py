"""The simulated network between members and the coordinator (docs/simulator.md).

Every message gets a one-way latency drawn from a :class:`Latency` distribution. Faults:

- **loss**: a message (request or response) disappears; ``response_loss`` adds a probability
  for responses only (the request was handled, its answer never arrives);
- **duplicate**: the message is delivered twice: on an ordered network the copy arrives right
  behind the original; on an unordered one with its own latency;
- **reorder**: the message gets an extra delay of up to ``4 x max latency`` (a retransmission),
  so messages of other channels overtake it; on an unordered network (``ordered=False``) later
  messages of its own channel overtake it too;
- **partitions**: endpoints in :attr:`Network.cut` neither send nor receive (checked when a
  message is sent and again when it would be delivered).

Channels are FIFO by default, as Kafka's requests and responses travel over one TCP connection
per client and broker: a message is never delivered before one sent earlier on the same
channel, unless it was picked for reordering. Duplicates follow the same rule. A message lost
on a FIFO channel takes the ones sent right behind it (at the same instant, on the same channel)
with it: TCP never delivers past a gap, and a member tells a lost answer from a late one only by
its correlation id, so a gap it could see is one TCP cannot make. The case it rules out: the two
answers to a duplicated request travel together; were the first lost and the second delivered,
the member would take the second (same correlation id) as the answer, while only the first
carried what the request changed (a KIP-848 heartbeat gets its assignment only when it changes:
the member would never learn of partitions the coordinator considers it owns). (KIP-848 relies
on that order: a member keeps one heartbeat in flight, and a heartbeat's owned partitions are
only meaningful after the previous ones. Reordering a member's own heartbeats behind its later
ones can make the coordinator take stale owned partitions as a revocation acknowledgement, so
``ordered=False`` models a transport Kafka does not run on; it exists to show that.)

All draws come from the ``random.Random`` the simulation hands in; no draw happens for a fault
whose probability is zero, so adding a fault kind does not shift the draws of a run without it.
A network without faults (the common case) routes on a fast path that makes exactly the draws
and the FIFO decisions of the general one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: Extra delay factor (times the latency's maximum) of a reordered message.
REORDER_SPIKE = 4


@dataclass(slots=True, frozen=True)
class Latency:
    """One-way latency in ms: ``fixed`` (min), ``uniform`` in [min, max], or ``exponential``
    with mean ``mean_ms`` shifted by min and capped at max."""

    dist: str = "uniform"
    min_ms: int = 1
    max_ms: int = 10
    mean_ms: int = 5

    def __post_init__(self) -> None:
        if self.dist not in ("fixed", "uniform", "exponential"):
            raise ValueError(f"latency distribution must be fixed, uniform or exponential, "
                             f"not {self.dist!r}")
        if self.min_ms < 0 or self.max_ms < self.min_ms:
            raise ValueError(f"latency needs 0 <= min_ms <= max_ms (got {self.min_ms}, "
                             f"{self.max_ms})")
        if self.mean_ms <= 0:
            raise ValueError("latency mean_ms must be > 0")

    @classmethod
    def parse(cls, spec: str) -> Latency:
        """``"uniform:1-10"``, ``"fixed:5"``, ``"exponential:5:1-100"`` (mean:min-max)."""
        dist, _, rest = spec.partition(":")
        try:
            if dist == "fixed":
                v = int(rest)
                return cls("fixed", v, v, max(v, 1))
            if dist == "uniform":
                lo, _, hi = rest.partition("-")
                return cls("uniform", int(lo), int(hi), max((int(lo) + int(hi)) // 2, 1))
            if dist == "exponential":
                mean, _, rng = rest.partition(":")
                lo, _, hi = rng.partition("-")
                return cls("exponential", int(lo), int(hi), int(mean))
        except ValueError:
            pass
        raise ValueError(f"bad latency {spec!r}: use fixed:MS, uniform:MIN-MAX or "
                         f"exponential:MEAN:MIN-MAX")

    def describe(self) -> str:
        if self.dist == "fixed":
            return f"fixed:{self.min_ms}"
        if self.dist == "uniform":
            return f"uniform:{self.min_ms}-{self.max_ms}"
        return f"exponential:{self.mean_ms}:{self.min_ms}-{self.max_ms}"


@dataclass(slots=True, frozen=True)
class NetworkFaults:
    """Fault probabilities per message (0 disables a fault)."""

    loss: float = 0.0
    response_loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __post_init__(self) -> None:
        for name in ("loss", "response_loss", "duplicate", "reorder"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"network {name} must be a probability in [0, 1], got {v}")

    @property
    def any(self) -> bool:
        return bool(self.loss or self.response_loss or self.duplicate or self.reorder)


NO_FAULTS = NetworkFaults()


class Network:
    """Delivery times of messages on named channels, with faults."""

    __slots__ = ("_clean", "_faults", "_gap", "_last", "_lo", "_span", "cut", "latency", "ordered",
                 "rng", "stats")

    def __init__(self, rng: random.Random, latency: Latency, faults: NetworkFaults = NO_FAULTS,
                 ordered: bool = True) -> None:
        self.rng = rng
        self.latency = latency
        self.faults = faults
        #: FIFO channels (TCP). When False, ``reorder`` may reorder any message.
        self.ordered = ordered
        self.cut: set[str] = set()
        self._last: dict[str, int] = {}
        #: Per FIFO channel, the instant a message was last lost on it (see the module docstring).
        self._gap: dict[str, int] = {}
        self._lo = latency.min_ms
        self._span = latency.max_ms - latency.min_ms + 1
        self.stats = {"sent": 0, "delivered": 0, "lost": 0, "cut": 0, "duplicated": 0,
                      "reordered": 0}

    @property
    def faults(self) -> NetworkFaults:
        return self._faults

    @faults.setter
    def faults(self, faults: NetworkFaults) -> None:
        self._faults = faults
        self._clean = not faults.any  # no fault: route's fast path (no fault draws anyway)

    @property
    def max_latency_ms(self) -> int:
        return self.latency.max_ms * (1 + REORDER_SPIKE) if self.faults.reorder else \
            self.latency.max_ms

    def draw(self) -> int:
        lat = self.latency
        if lat.dist == "uniform":
            return self._lo + int(self.rng.random() * self._span)
        if lat.dist == "fixed":
            return lat.min_ms
        v = lat.min_ms + int(self.rng.expovariate(1.0 / lat.mean_ms))
        return v if v < lat.max_ms else lat.max_ms

    def route(self, now: int, channel: str, endpoint: str, response: bool) -> tuple[int, ...]:
        """Delivery times of one message sent at ``now`` on ``channel`` by or to ``endpoint``
        (a member's name): () when it is lost or the endpoint is cut off, two times when
        duplicated."""
        stats = self.stats
        stats["sent"] += 1
        if endpoint in self.cut:
            stats["cut"] += 1
            return ()
        if self._clean:  # the common case, inlined: one latency draw, the FIFO rule
            lat = self.latency
            if lat.dist == "uniform":
                t = now + self._lo + int(self.rng.random() * self._span)
            else:
                t = now + self.draw()
            last = self._last.get(channel, 0)
            if t < last:
                t = last
            self._last[channel] = t
            stats["delivered"] += 1
            return (t,)
        f = self._faults
        rng = self.rng
        if (f.loss and rng.random() < f.loss) or \
                (response and f.response_loss and rng.random() < f.response_loss) or \
                self._gap.get(channel) == now:  # behind a message just lost (FIFO only)
            stats["lost"] += 1
            if self.ordered:
                self._gap[channel] = now
            return ()
        t = self._deliver_at(now, channel)
        if f.duplicate and rng.random() < f.duplicate:
            stats["duplicated"] += 1
            stats["delivered"] += 2
            # In order, a copy arrives right behind the original (a retransmitted segment, a
            # request handed over twice): nothing the receiver did in between can be stale.
            return t, (t if self.ordered else self._deliver_at(now, channel))
        stats["delivered"] += 1
        return (t,)

    def _deliver_at(self, now: int, channel: str) -> int:
        t = now + self.draw()
        reorder = self._faults.reorder
        if reorder and self.rng.random() < reorder:
            self.stats["reordered"] += 1
            t += int(self.rng.random() * self.latency.max_ms * REORDER_SPIKE)
            if not self.ordered:
                return t  # later messages of the channel may overtake it
        last = self._last.get(channel, 0)
        if t < last:
            t = last
        self._last[channel] = t
        return t

    def forget(self, channel: str) -> None:
        """A channel closed (its process died): drop its FIFO state."""
        self._last.pop(channel, None)
        self._gap.pop(channel, None)
