"""The simulator's protocol registry: ``--protocol NAME[:VARIANT]``.

A protocol is a :class:`groupcoord.sim.engine.Simulation` subclass with its members and its
invariants, plus the variants it accepts (for consumer groups: the server-side assignor).
Registered today: ``consumer`` (KIP-848; variants ``uniform``, ``range``: the server-side
assignor; ``client``: a client-side assignor run by a member), ``classic``
(classic consumers: eager, eager-roundrobin, cooperative), ``connect`` (Connect workers on
connect groups: eager, cooperative), ``classic-connect`` (Connect workers in classic groups: eager,
compatible, sessioned) and ``share`` (KIP-932 share groups: ``simple``, the share assignor);
each registers itself here with :func:`register_protocol`.
``ProtocolSpec.resource`` says what the members share (partitions, or tasks for Connect).
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.engine import Simulation


@dataclass(slots=True, frozen=True)
class ProtocolSpec:
    name: str
    simulation: type[Simulation]
    variants: tuple[str, ...]
    default_variant: str
    description: str = ""
    #: What the group shares: ``partitions`` (consumers) or ``tasks`` (Connect workers:
    #: connectors and their tasks).
    resource: str = "partitions"
    #: Whether ``all`` (the lab's specs, the identity benchmark) includes it: the rebalance
    #: protocols do; ``share`` runs by name (its consumers work record by record, tens of times
    #: the cost of a consumer-group run, and its questions are its own spec's).
    in_all: bool = True


PROTOCOLS: dict[str, ProtocolSpec] = {}


def register_protocol(spec: ProtocolSpec) -> None:
    if spec.default_variant and spec.default_variant not in spec.variants:
        raise ValueError(f"{spec.name}: default variant {spec.default_variant!r} not in "
                         f"{spec.variants}")
    PROTOCOLS[spec.name] = spec


def resolve_protocol(label: str) -> tuple[ProtocolSpec, str]:
    """``consumer`` or ``consumer:range`` -> (spec, variant); ValueError names the choices."""
    name, _, variant = label.partition(":")
    spec = PROTOCOLS.get(name)
    if spec is None:
        raise ValueError(f"unknown protocol {name!r}; available: "
                         f"{', '.join(protocol_labels(every=True))}")
    variant = variant or spec.default_variant
    if spec.variants and variant not in spec.variants:
        raise ValueError(f"protocol {name} has no variant {variant!r}; available: "
                         f"{', '.join(spec.variants)}")
    return spec, variant


def protocol_labels(every: bool = False) -> list[str]:
    """The labels ``all`` stands for; with ``every``, also the protocols it leaves out."""
    return [f"{s.name}:{v}" for s in sorted(PROTOCOLS.values(), key=lambda s: s.name)
            if every or s.in_all for v in s.variants] or sorted(PROTOCOLS)


register_protocol(ProtocolSpec(
    "consumer", ConsumerSimulation, ("uniform", "range", "client"), "uniform",
    "KIP-848 consumer groups: ConsumerMember processes against the coordinator shard; the "
    "variant is the server-side assignor the members ask for, or client: the members advertise "
    "a local uniform assignor and the chosen one computes the assignment (Prepare/Install)"))


def _register_classic() -> None:
    from groupcoord.sim.classic import ClassicConsumerSimulation

    register_protocol(ProtocolSpec(
        "classic", ClassicConsumerSimulation, ("eager", "eager-roundrobin", "cooperative"),
        "eager",
        "classic consumer groups: ClassicConsumerMember processes (JoinGroup/SyncGroup, the "
        "leader assigns) against the coordinator's classic groups; the variant is the "
        "rebalance protocol (eager: range, revoke all; eager-roundrobin: the same with "
        "roundrobin, balanced across topics; cooperative: KIP-429 sticky)"))


_register_classic()


def _register_connect() -> None:
    from groupcoord.sim.connect import ConnectSimulation

    register_protocol(ProtocolSpec(
        "connect", ConnectSimulation, ("eager", "cooperative"), "cooperative",
        "Connect workers (ConnectWorker) on the coordinator's connect groups: heartbeats, the "
        "chosen worker runs the assignor (Prepare/Install); the variant is the assignor (eager, "
        "or KIP-415 incremental cooperative with deferred resolution)", resource="tasks"))


_register_connect()


def _register_classic_connect() -> None:
    from groupcoord.sim.classic_connect import ClassicConnectSimulation

    register_protocol(ProtocolSpec(
        "classic-connect", ClassicConnectSimulation, ("eager", "compatible", "sessioned"),
        "sessioned",
        "Connect workers in classic groups (ClassicConnectWorker: JoinGroup/SyncGroup, the "
        "leader runs the Connect assignor); the variant is connect.protocol (eager; compatible "
        "and sessioned: KIP-415 incremental cooperative with the scheduled delay)",
        resource="tasks"))


_register_classic_connect()


def _register_share() -> None:
    from groupcoord.sim.share import ShareSimulation

    register_protocol(ProtocolSpec(
        "share", ShareSimulation, ("simple",), "simple",
        "KIP-932 share groups: share consumers (ShareGroupHeartbeat against the coordinator's "
        "share groups; fetch, process, acknowledge against the core's share partitions, with "
        "acquisition locks and delivery counts); the variant is the share assignor",
        in_all=False))


_register_share()
