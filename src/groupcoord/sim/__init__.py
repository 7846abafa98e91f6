"""The deterministic simulator (docs/simulator.md): the real coordinator core and real sans-IO members
under a seeded fault schedule, with invariants I1-I6 of docs/design.md checked after every step.

- ``engine``: the seeded event loop, trace, metrics per disturbance, I4 checkpoints;
- ``network``: latency, loss, lost responses, duplication, reordering, partitions;
- ``coordinator``: the shard with its record log, failover = rebuild from the log;
- ``scenario``: scenarios as TOML data, the named built-ins and ``random``;
- ``consumer``: KIP-848 consumer groups (processes running ``client.consumer.ConsumerMember``)
  and their invariants; its process machinery (spawning, events, the network plumbing, driving
  members, the members' side of I1) serves every protocol below through hooks;
- ``members``: how each member type's requests and responses are traced and answered by a
  loading coordinator (one table per question, keyed by message type);
- ``classic``, ``connect``, ``classic_connect``: classic consumer groups, Connect workers on
  connect groups and in classic groups (subclasses of the consumer simulation);
- ``protocols``: the registry behind ``--protocol``;
- ``runner`` / ``cli``: ``simulate()`` and ``groupcoord simulate``.

Usage: ``simulate("rolling-bounce", seed=7, protocol="consumer:range")`` returns a
:class:`SimResult` (``ok``, ``violation`` with the reproduce command, ``trace``, ``summary``,
``disturbances``).
"""

from groupcoord.sim.engine import SimResult, Simulation, Violation, ViolationReport
from groupcoord.sim.runner import simulate
from groupcoord.sim.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["Scenario", "SimResult", "Simulation", "Violation", "ViolationReport",
           "load_scenario", "parse_scenario", "simulate"]
