"""The field's client settings: each protocol's members at the defaults of the shipped clients.

The simulator's own scenario defaults (``sim.scenario``: heartbeat 5 s, rebalance timeout
30 s, ``scheduled.rebalance.max.delay.ms`` 30 s) are timings its tests were written against;
a comparison of protocols needs each protocol at the settings its users run. Per protocol
family (Kafka config names; the Java clients, librdkafka and Kafka 4.3's broker agree):

- classic consumers (``ConsumerConfig``): ``heartbeat.interval.ms`` 3 s,
  ``session.timeout.ms`` 45 s, ``max.poll.interval.ms`` 5 min (sent as the rebalance timeout),
  ``metadata.max.age.ms`` 5 min;
- KIP-848 consumers: the broker's ``group.consumer.heartbeat.interval.ms`` 5 s and
  ``group.consumer.session.timeout.ms`` 45 s, ``group.consumer.assignment.interval.ms`` 1 s
  (Kafka 4.3's assignment batching), ``max.poll.interval.ms`` 5 min;
- share groups (KIP-932): the broker's ``group.share.heartbeat.interval.ms`` and
  ``group.share.session.timeout.ms`` (as KIP-848's), ``group.share.assignment.interval.ms``,
  and the record lock duration and delivery count limit the share simulation runs with
  (``sim.share.ShareSettings``: Kafka's 30 s and 5);
- Connect workers (``DistributedConfig``; the same on the Connect draft's group type):
  ``heartbeat.interval.ms`` 3 s, ``session.timeout.ms`` 10 s, ``rebalance.timeout.ms`` 60 s,
  ``scheduled.rebalance.max.delay.ms`` 5 min (KIP-415); a worker stops the connectors and
  tasks of a revocation 8 at a time (``DistributedHerder``'s ``START_STOP_THREAD_POOL_SIZE``,
  a constant, not a config: the workload's ``start_stop_threads``, named
  ``start.stop.threads`` in the settings list; see ``sim.application``).

:func:`with_field_settings` puts a scenario's group at these settings (the lab does so for
every run unless the scenario sets them itself); :func:`effective_settings` names what a
scenario's run used, under the Kafka names, for the lab's ``settings_json`` column.

**Timing variants.** A protocol label may name one of its timings after ``@``:
``consumer:uniform@hb3s`` is KIP-848 with the uniform assignor and a 3 s heartbeat instead of
the broker's 5 s default, so that a comparison can tell the protocol from its client defaults
(:func:`split_timing`; keys in :data:`TIMING_KEYS`, values in ``ms`` or ``s``, several joined
by ``+``). The variant's timing wins over the field's default and over the scenario's own.
``consumer:uniform@commit100ms`` auto-commits every 100 ms instead of the client's 5 s
(``auto.commit.interval.ms``; a workload's own ``auto_commit_interval_ms`` still wins): the
commit cadence of an application that commits each batch, beside the default.
``classic:eager@hbspread1s`` spreads the members' heartbeat phases by up to 1 s at each join
(``Scenario.heartbeat_spread_ms``; not a client config: the field's spread, see
``sim.consumer``); Connect workers draw theirs the same way (``classic-connect:eager@hbspread3s``
at each SyncGroup answer, ``connect:eager@hbspread3s`` at each join of the Connect draft's
group type).
``consumer:uniform@static`` runs the members static (KIP-345's ``group.instance.id``, the
member's name; KIP-848 keeps it: ``Scenario.static``), at the same timings and seeds as the
dynamic label: a member back within its session gets its own partitions with no rebalance.
Not a timing, but a setting of the same group on the same seeds, so it rides the same ``@``
(:data:`STATIC_VARIANT`; a share group has none, KIP-932, nor a Connect worker, KIP-814).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from groupcoord.sim.scenario import Scenario, with_delay_timings

#: Scenario fields (``sim.scenario.Scenario``, ``workload.metadata_max_age_ms``) per protocol
#: family at the field's defaults.
FIELD_SETTINGS: dict[str, dict[str, int]] = {
    "classic": {"heartbeat_interval_ms": 3_000, "session_timeout_ms": 45_000,
                "rebalance_timeout_ms": 300_000, "metadata_max_age_ms": 300_000},
    "consumer": {"heartbeat_interval_ms": 5_000, "session_timeout_ms": 45_000,
                 "rebalance_timeout_ms": 300_000, "assignment_interval_ms": 1_000,
                 "metadata_max_age_ms": 300_000},
    "connect": {"heartbeat_interval_ms": 3_000, "session_timeout_ms": 10_000,
                "rebalance_timeout_ms": 60_000, "max_delay_ms": 300_000},
}


#: The timings a protocol label's ``@`` variant may set: its key -> the Scenario field.
TIMING_KEYS: dict[str, str] = {"hb": "heartbeat_interval_ms", "session": "session_timeout_ms",
                               "commit": "commit_interval_ms", "hbspread": "heartbeat_spread_ms"}
#: The ``@`` variant that runs a consumer group's members static (``Scenario.static``).
STATIC_VARIANT = "static"
_TIMING = re.compile(r"^(?P<key>[a-z]+)(?P<n>\d+)(?P<unit>ms|s)$")


def split_timing(label: str) -> tuple[str, dict[str, int]]:
    """``consumer:uniform@hb3s`` -> (``consumer:uniform``, {``heartbeat_interval_ms``: 3000});
    a label without ``@`` -> (label, {}). ValueError names a timing it does not know."""
    base, sep, rest = label.partition("@")
    if not sep:
        return label, {}
    out: dict[str, int] = {}
    for part in rest.split("+"):
        if part == STATIC_VARIANT:
            if base.partition(":")[0] not in ("consumer", "classic"):
                raise ValueError(f"protocol {label}: only a consumer group has static members "
                                 "(KIP-345; a share group has none, KIP-932, nor a Connect "
                                 "worker, KIP-814)")
            out["static"] = 1
            continue
        m = _TIMING.match(part)
        if m is None or m["key"] not in TIMING_KEYS:
            raise ValueError(f"protocol {label}: unknown timing {part!r}; a timing is a key "
                             f"({', '.join(TIMING_KEYS)}) and a value in ms or s, e.g. hb3s")
        out[TIMING_KEYS[m["key"]]] = int(m["n"]) * (1000 if m["unit"] == "s" else 1)
    return base, out


def base_protocol(label: str) -> str:
    """The protocol a label runs, without its timing variant (``consumer:uniform@hb3s`` ->
    ``consumer:uniform``)."""
    return label.partition("@")[0]


def family(protocol: str) -> str:
    """``classic``, ``consumer`` or ``connect`` (Connect workers on either group type)."""
    name = protocol.partition(":")[0]
    if "connect" in name:
        return "connect"
    return "classic" if name == "classic" else "consumer"


def with_field_settings(sc: Scenario, protocol: str, keep: Collection[str] = ()) -> Scenario:
    """The scenario with its group at the field's settings for ``protocol``; the fields in
    ``keep`` (set by the scenario itself, or swept by a grid) stay as they are."""
    changes: dict[str, Any] = {}
    wl_changes: dict[str, Any] = {}
    for name, value in FIELD_SETTINGS[family(protocol)].items():
        if name in keep:
            continue
        if name == "metadata_max_age_ms":
            if not sc.workload.idle:
                wl_changes[name] = value
        else:
            changes[name] = value
    if wl_changes:
        changes["workload"] = replace(sc.workload, **wl_changes)
    timings = split_timing(protocol)[1]
    changes.update({k: bool(v) if k == "static" else v for k, v in timings.items()})
    # a bounce timed after KIP-415's delay follows the delay (``sim.scenario``)
    return with_delay_timings(replace(sc, **changes)) if changes else sc


#: KIP-415's delay: only an incremental cooperative Connect worker reads it (it holds a departed
#: worker's tasks that long); an eager one revokes everything at each rebalance and has none.
DELAY_SETTING = "scheduled.rebalance.max.delay.ms"


def reads_setting(protocol: str, key: str) -> bool:
    """Whether a protocol's members read ``key``: every setting a run records is read, except
    KIP-415's ``scheduled.rebalance.max.delay.ms`` under an eager Connect protocol (with or
    without a timing variant: ``classic-connect:eager@hb1s``)."""
    base = base_protocol(protocol)
    return not (key == DELAY_SETTING and family(base) == "connect" and base.endswith(":eager"))


def settings_read(protocol: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` less what ``protocol`` does not read (:func:`reads_setting`): runs recorded
    before eager Connect stopped listing KIP-415's delay are read the same way."""
    return {k: v for k, v in settings.items() if reads_setting(protocol, k)}


def effective_settings(sc: Scenario, protocol: str) -> dict[str, int]:
    """The settings a run of ``sc`` under ``protocol`` uses, under Kafka's config names."""
    wl = sc.workload
    fam = family(protocol)
    out: dict[str, int]
    if protocol.partition(":")[0] == "share":
        from groupcoord.sim.share import ShareSimulation

        share = ShareSimulation.settings  # what a share run uses (the lab sets no other)
        out = {"group.share.heartbeat.interval.ms": sc.heartbeat_interval_ms,
               "group.share.session.timeout.ms": sc.session_timeout_ms,
               "group.share.assignment.interval.ms": sc.assignment_interval_ms,
               "group.share.record.lock.duration.ms": wl.share_lock_duration_ms
               or share.lock_duration_ms,
               "group.share.delivery.count.limit": wl.share_delivery_count_limit
               or share.delivery_count_limit}
        if not wl.idle:
            out["max.poll.records"] = wl.max_poll_records
    elif fam == "connect":
        out = {"heartbeat.interval.ms": sc.heartbeat_interval_ms,
               "session.timeout.ms": sc.session_timeout_ms,
               "rebalance.timeout.ms": sc.rebalance_timeout_ms,
               "scheduled.rebalance.max.delay.ms": sc.max_delay_ms,
               "offset.flush.interval.ms": (wl.auto_commit_interval_ms
                                            if wl.auto_commit_interval_ms is not None
                                            else sc.commit_interval_ms)}
        if sc.heartbeat_spread_ms:  # the model's spread of heartbeat phases (no client config)
            out["heartbeat.spread.ms"] = sc.heartbeat_spread_ms
        if not wl.idle:  # the herder's start/stop pool (a constant in Kafka, no config)
            out["start.stop.threads"] = wl.start_stop_threads
    else:
        out = {"heartbeat.interval.ms" if fam == "classic"
               else "group.consumer.heartbeat.interval.ms": sc.heartbeat_interval_ms,
               "session.timeout.ms" if fam == "classic"
               else "group.consumer.session.timeout.ms": sc.session_timeout_ms,
               "max.poll.interval.ms": sc.rebalance_timeout_ms,
               "auto.commit.interval.ms": (wl.auto_commit_interval_ms
                                           if wl.auto_commit_interval_ms is not None
                                           else sc.commit_interval_ms)}
        if fam == "classic":
            out["metadata.max.age.ms"] = wl.metadata_max_age_ms
        else:
            out["group.consumer.assignment.interval.ms"] = sc.assignment_interval_ms
        if not wl.idle:
            out["max.poll.records"] = wl.max_poll_records
        if sc.heartbeat_spread_ms:  # the model's spread of heartbeat phases (no client config)
            out["heartbeat.spread.ms"] = sc.heartbeat_spread_ms
    out["request.timeout.ms"] = sc.request_timeout_ms
    return dict(sorted(settings_read(protocol, out).items()))


__all__ = ["FIELD_SETTINGS", "STATIC_VARIANT", "TIMING_KEYS", "base_protocol", "effective_settings", "family",
           "split_timing", "with_field_settings"]
