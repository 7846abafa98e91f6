"""The deterministic simulator (issue #7): the real coordinator core and real sans-IO members
under a seeded fault schedule, with invariants I1-I6 of DESIGN.md checked after every step.

- ``engine``: the seeded event loop, trace, metrics per disturbance, I4 checkpoints;
- ``network``: latency, loss, lost responses, duplication, reordering, partitions;
- ``coordinator``: the shard with its record log, failover = rebuild from the log;
- ``scenario``: scenarios as TOML data, the named built-ins and ``random``;
- ``consumer``: KIP-848 consumer groups (processes running ``client.consumer.ConsumerMember``)
  and their invariants;
- ``protocols``: the registry behind ``--protocol`` (connect and classic come later);
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
