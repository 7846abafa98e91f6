"""Answers the simulator keeps instead of recomputing equal the recomputed ones
(docs/benchmarks.md, the simulator's section).

- Connect convergence: the configuration's items and each worker's assigned items are kept by
  their objects (frozen, replaced on every change), the balance test (KIP-415's time until
  balanced) while the owners, the resources and the live processes stay the same
  (``legit_version``). At every look the kept answer equals the one computed afresh, and a run
  with nothing kept gives the same trace, summary and windows.
- The work model activates the partitions given to a member that processes nothing yet
  together (``Processor._activate_all``): the same run as activating them one by one.
- The classic simulation's checks decode a subscription or an assignment once per bytes (a
  consumer's, a Connect worker's): what they get is what decoding those bytes gives, whatever
  was decoded before (malformed bytes included), and a classic run is the same with nothing
  kept.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.lab.runs import build_scenario
from groupcoord.lab.spec import RunParams, expand, load_spec
from groupcoord.protocol.connect_protocol import ConnectProtocolError, decode_worker_metadata
from groupcoord.protocol.connect_protocol import decode_assignment as connect_decode_assignment
from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.sim import classic, classic_connect
from groupcoord.sim.connect import ConnectSimulation
from groupcoord.sim.consumer import ConsumerSimulation
from groupcoord.sim.engine import SimResult
from groupcoord.sim.runner import build_simulation
from groupcoord.sim.workload import Processor

CONNECT = ("connect:eager", "connect:cooperative", "classic-connect:eager",
           "classic-connect:sessioned")


def _paper_run(scenario: str, protocol: str, size: int, workload: str) -> RunParams:
    spec = load_spec("paper")
    for r in expand(spec):
        if (r.scenario, r.protocol, r.size, r.workload, r.replicate) == (
                scenario, protocol, size, workload, 0):
            return r
    raise AssertionError(f"no paper run {scenario}/{protocol}/{size}/{workload}")


def _run(params: RunParams) -> tuple[SimResult, Any]:
    """The run and its work model's raw state at the end (every float unrounded, resources
    and each member's active list in their order): the rows round what the model sums."""
    sim: Any = build_simulation(build_scenario(params), params.seed, params.protocol,
                                record_trace=True)
    res = sim.run()
    model = sim.app.model
    raw = (model.totals(), model.processed, model.reprocessed,
           [(repr(k), r.lag_int, r.hw, r.committed, r.t) for k, r in model.resources.items()],
           {name: [repr(k) for k in p.active] for name, p in model.processors.items()})
    return res, raw


def _same(a: tuple[SimResult, Any], b: tuple[SimResult, Any]) -> None:
    (ra, rawa), (rb, rawb) = a, b
    assert ra.ok and rb.ok, (ra.violation, rb.violation)
    assert ra.trace == rb.trace
    assert ra.summary == rb.summary
    assert ra.disturbances == rb.disturbances
    assert rawa == rawb


def _fresh_balance(sim: ConsumerSimulation) -> bool:
    if sim._unowned:
        return False
    live = sim.live()
    return True if not live else sim._balanced(live, sim.universe)


@pytest.mark.parametrize("protocol", CONNECT)
@pytest.mark.parametrize("scenario", ["kip415-worker-joins", "worker-bounce-d30s",
                                      "kip415-connector-removed"])
def test_connect_kept_answers_equal_the_computed_ones(
        monkeypatch: pytest.MonkeyPatch, protocol: str, scenario: str) -> None:
    params = _paper_run(scenario, protocol, 6, "16x8c")
    looks = {"balance": 0, "converged": 0}
    kept_balance = ConsumerSimulation.assignment_balanced
    kept_converged = ConnectSimulation.converged

    def checked_balance(self: ConsumerSimulation) -> bool:
        got = kept_balance(self)
        assert got == _fresh_balance(self)
        looks["balance"] += 1
        return got

    def checked_converged(self: Any) -> bool:
        got = kept_converged(self)
        config, assigned = self._config_items, self._assigned_items
        self._config_items, self._assigned_items = None, {}  # computed afresh
        assert kept_converged(self) == got
        self._config_items, self._assigned_items = config, assigned
        looks["converged"] += 1
        return got

    monkeypatch.setattr(ConsumerSimulation, "assignment_balanced", checked_balance)
    if protocol.startswith("connect:"):
        monkeypatch.setattr(ConnectSimulation, "converged", checked_converged)
    kept = _run(params)
    assert looks["balance"] > 10
    assert looks["converged"] > 10 or not protocol.startswith("connect:")

    def nothing_kept_balance(self: ConsumerSimulation) -> bool:
        return _fresh_balance(self)

    def nothing_kept_converged(self: Any) -> bool:
        self._config_items, self._assigned_items = None, {}
        return bool(kept_converged(self))

    monkeypatch.setattr(ConsumerSimulation, "assignment_balanced", nothing_kept_balance)
    monkeypatch.setattr(ConnectSimulation, "converged", nothing_kept_converged)
    _same(kept, _run(params))


@pytest.mark.parametrize("protocol", ["classic:eager", "classic:cooperative",
                                      "consumer:uniform"])
@pytest.mark.parametrize("scenario,size,workload", [
    ("rolling-bounce", 8, "1x32-p10ms-40pct"), ("scale-out", 8, "1x32-p20ms-20pct")])
def test_activating_together_is_activating_one_by_one(
        monkeypatch: pytest.MonkeyPatch, protocol: str, scenario: str, size: int,
        workload: str) -> None:
    params = _paper_run(scenario, protocol, size, workload)
    together = {"calls": 0}
    kept = Processor._activate_all

    def counted(self: Processor, keys: list[Any]) -> None:
        together["calls"] += 1
        kept(self, keys)

    monkeypatch.setattr(Processor, "_activate_all", counted)
    batched = _run(params)
    assert together["calls"] > 0

    def one_by_one(self: Processor, keys: list[Any]) -> None:
        for k in keys:
            self._activate(k)

    monkeypatch.setattr(Processor, "_activate_all", one_by_one)
    _same(batched, _run(params))


_PARTITIONS = st.dictionaries(st.sampled_from(["a", "b", "c"]),
                              st.lists(st.integers(0, 40), max_size=6, unique=True), max_size=3)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_PARTITIONS, _PARTITIONS, st.integers(-1, 9), st.booleans()),
                min_size=1, max_size=12))
def test_kept_decodes_are_the_decodes_of_the_bytes(
        cases: list[tuple[dict[str, list[int]], dict[str, list[int]], int, bool]]) -> None:
    for assigned, owned, generation, broken in cases:
        sub = encode_subscription(sorted(owned), owned_partitions=owned, generation_id=generation)
        asg = encode_assignment(assigned)
        if broken:  # cut short: the checks read nothing from it
            sub, asg = sub[:3], asg[:3]
        for _ in range(2):  # decoded, then kept
            try:
                s = decode_subscription(sub)
                want = (frozenset(s.topics), s.owned_partitions, s.generation_id)
            except ConsumerProtocolError:
                want = (frozenset(), {}, -1)
            assert classic._claims(sub) == want
            try:
                parts = decode_assignment(asg).partitions
            except ConsumerProtocolError:
                parts = {}
            assert classic._assigned(asg) == parts


def test_a_classic_run_is_the_same_with_nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    params = _paper_run("rolling-bounce", "classic:cooperative", 8, "1x32-p10ms-40pct")
    kept = _run(params)
    assert classic._ASSIGNED and classic._CLAIMS

    def claims(metadata: bytes | None) -> tuple[frozenset[str], dict[str, list[int]], int]:
        try:
            s = decode_subscription(metadata or b"")
        except ConsumerProtocolError:
            return frozenset(), {}, -1
        return frozenset(s.topics), s.owned_partitions, s.generation_id

    def assigned(raw: bytes) -> dict[str, list[int]]:
        try:
            return decode_assignment(raw).partitions if raw else {}
        except ConsumerProtocolError:
            return {}

    monkeypatch.setattr(classic, "_claims", claims)  # decoded at every look
    monkeypatch.setattr(classic, "_assigned", assigned)
    _same(kept, _run(params))


def test_a_classic_connect_run_is_the_same_with_nothing_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    params = _paper_run("worker-bounce-d30s", "classic-connect:sessioned", 6, "16x8c")
    kept = _run(params)
    assert classic_connect._REPORTED and classic_connect._ASSIGNMENTS
    for raw in (b"", b"\x00\x01", next(iter(classic_connect._REPORTED))):
        first = classic_connect._metadata_items(raw)
        assert classic_connect._metadata_items(raw) == first  # kept: the same answer
    for raw in (b"\x00", next(iter(classic_connect._ASSIGNMENTS))):
        first_a = classic_connect._assignment(raw)
        assert classic_connect._assignment(raw) == first_a

    def reported(raw: bytes | None) -> Any:
        try:
            return classic_connect.items(decode_worker_metadata(raw or b"").current)
        except (ConnectProtocolError, ValueError):
            return frozenset()

    def assignment(raw: bytes) -> Any:
        try:
            return connect_decode_assignment(raw) if raw else None
        except (ConnectProtocolError, ValueError):
            return None

    monkeypatch.setattr(classic_connect, "_metadata_items", reported)  # decoded at every look
    monkeypatch.setattr(classic_connect, "_assignment", assignment)
    _same(kept, _run(params))
